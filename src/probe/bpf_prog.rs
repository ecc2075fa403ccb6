//! The census's BPF object: `src/bpf/census.bpf.c`, compiled by clang at
//! build time (`build.rs`) and embedded in the binary, loaded with
//! libbpf-rs, its programs run on demand (`BPF_PROG_TEST_RUN`) and its maps
//! read and written. Without the `bpf` cargo feature (a build without
//! clang, such as the static musl image) there is no object: loading it is
//! a one-line refusal saying so. The walk itself is `census_bpf`.

/// The program's `struct stats`, in its order.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stats {
    pub buckets: u64,
    pub walked: u64,
    pub bad_pointer: u64,
    pub unreadable: u64,
    pub chains_cut: u64,
    pub wrong_bucket: u64,
    pub unrecorded: u64,
    pub created: u64,
    pub runs: u64,
    pub max_steps: u64,
    /// Steps of every run, and batches of bucket heads read.
    pub steps: u64,
    pub batches: u64,
}

// The map's bytes: read and written by the BPF object only.
#[cfg(any(feature = "bpf", test))]
impl Stats {
    const LEN: usize = 12 * 8;

    pub(crate) fn of(b: &[u8]) -> Stats {
        let g = |i: usize| b.get(i * 8..i * 8 + 8).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()));
        Stats {
            buckets: g(0),
            walked: g(1),
            bad_pointer: g(2),
            unreadable: g(3),
            chains_cut: g(4),
            wrong_bucket: g(5),
            unrecorded: g(6),
            created: g(7),
            runs: g(8),
            max_steps: g(9),
            steps: g(10),
            batches: g(11),
        }
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        [
            self.buckets,
            self.walked,
            self.bad_pointer,
            self.unreadable,
            self.chains_cut,
            self.wrong_bucket,
            self.unrecorded,
            self.created,
            self.runs,
            self.max_steps,
            self.steps,
            self.batches,
        ]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
    }
}

#[cfg(feature = "bpf")]
mod object {
    use std::path::Path;

    use anyhow::{Context, Result, anyhow, bail};
    use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramInput};

    use super::Stats;
    use crate::probe::memory::{Memory, ReadError};

    const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/census.bpf.o"));
    /// Bytes one `dentrylab_read` run copies at most.
    const MEM_LEN: usize = 4096;
    /// Arguments every run is given (`dentrylab_walk` reads 7).
    const ARGS: usize = 8;

    /// The loaded object.
    pub(crate) struct Bpf {
        obj: Object,
    }

    /// One line for a load the kernel refused, with what it said.
    fn refusal(e: &libbpf_rs::Error) -> anyhow::Error {
        let why = format!("{e:#}").replace('\n', " ");
        let root = nix::unistd::geteuid().is_root();
        let unpriv = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        let hint = if root {
            String::from(
                "a kernel without CONFIG_BPF_SYSCALL, lockdown, or a BTF the program cannot be relocated against",
            )
        } else {
            format!(
                "loading a tracing program needs root (CAP_BPF and CAP_PERFMON); \
                 kernel.unprivileged_bpf_disabled is {unpriv}"
            )
        };
        anyhow!("the kernel refused the census's BPF program ({why}): {hint}")
    }

    impl Bpf {
        /// Opens and loads the embedded object, its offsets relocated against
        /// the BTF at `btf` (the kernel's own, by default).
        pub(crate) fn load(btf: &Path) -> Result<Bpf> {
            let _ = libbpf_rs::set_print(None);
            let mut b = ObjectBuilder::default();
            if btf != Path::new("/sys/kernel/btf/vmlinux") {
                b.btf_custom_path(btf).map_err(|e| anyhow!("{}: {e}", btf.display()))?;
            }
            let open = b.open_memory(OBJECT).map_err(|e| anyhow!("cannot open the census's BPF object: {e}"))?;
            let obj = open.load().map_err(|e| refusal(&e))?;
            Ok(Bpf { obj })
        }

        /// Runs program `name` once with `args` as its raw tracepoint
        /// arguments, the rest of [`ARGS`] zero: the kernel copies the
        /// context it is given, and a program may read every argument it knows.
        pub(crate) fn run(&self, name: &str, args: &[u64]) -> Result<u32> {
            if args.len() > ARGS {
                bail!("{name} given {} arguments, more than {ARGS}", args.len());
            }
            let prog = self
                .obj
                .progs_mut()
                .find(|p| p.name() == name)
                .with_context(|| format!("the census's BPF object has no program {name}"))?;
            let mut ctx: Vec<u8> =
                args.iter().chain(std::iter::repeat(&0)).take(ARGS).flat_map(|a| a.to_ne_bytes()).collect();
            let input = ProgramInput { context_in: Some(&mut ctx), ..ProgramInput::default() };
            let out = prog.test_run(input).map_err(|e| anyhow!("BPF_PROG_TEST_RUN of {name}: {e}"))?;
            Ok(out.return_value)
        }

        fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
            self.obj
                .maps()
                .find(|m| m.name() == name)
                .with_context(|| format!("the census's BPF object has no map {name}"))
        }

        pub(crate) fn stats(&self) -> Result<Stats> {
            let v = self.map("stats")?.lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?.unwrap_or_default();
            if v.len() < Stats::LEN {
                bail!("the census's stats map holds {} bytes, not {}", v.len(), Stats::LEN);
            }
            Ok(Stats::of(&v))
        }

        pub(crate) fn set_stats(&self, s: &Stats) -> Result<()> {
            self.map("stats")?.update(&0u32.to_ne_bytes(), &s.bytes(), MapFlags::ANY)?;
            Ok(())
        }

        /// The dentry of this process's descriptor `fd`: its address, its
        /// `d_hash.pprev` and its name hash.
        pub(crate) fn locate_fd(&self, fd: u64) -> Result<(u64, u64, u32)> {
            let rc = self.run("dentrylab_locate", &[fd])?;
            if rc != 0 {
                bail!("the census's BPF program cannot read descriptor {fd}'s dentry (error {})", rc as i32);
            }
            let v = self.map("mem")?.lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?.unwrap_or_default();
            let g = |i: usize| v.get(i * 8..i * 8 + 8).map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()));
            Ok((g(0), g(1), g(2) as u32))
        }

        /// Moves every entry of the `dirs` map to `each` ((superblock, parent),
        /// [positive, negative]); how many moved and whether any was left.
        pub(crate) fn drain_dirs(&self, each: &mut dyn FnMut((u64, u64), [u64; 2])) -> Result<(u64, bool)> {
            let dirs = self.map("dirs")?;
            let mut moved = 0u64;
            let g =
                |b: &[u8], i: usize| b.get(i * 8..i * 8 + 8).map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()));
            // A batch of a hash map may hold fewer entries than asked before
            // its end, where libbpf-rs's iterator stops: ask again until one
            // comes back empty (what was moved is deleted).
            loop {
                let before = moved;
                for (k, v) in dirs.lookup_and_delete_batch(4096, MapFlags::ANY, MapFlags::ANY)? {
                    each((g(&k, 0), g(&k, 1)), [g(&v, 0), g(&v, 1)]);
                    moved += 1;
                }
                if moved == before {
                    break;
                }
            }
            Ok((moved, dirs.keys().next().is_some()))
        }
    }

    impl Memory for Bpf {
        fn read(&self, vaddr: u64, buf: &mut [u8]) -> Result<(), ReadError> {
            for (i, chunk) in buf.chunks_mut(MEM_LEN).enumerate() {
                let a = vaddr.checked_add((i * MEM_LEN) as u64).ok_or(ReadError::Unmapped)?;
                let rc = self.run("dentrylab_read", &[a, chunk.len() as u64]).map_err(|_| ReadError::Failed)?;
                if rc != 0 {
                    return Err(ReadError::Failed);
                }
                let v = self
                    .map("mem")
                    .ok()
                    .and_then(|m| m.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok().flatten())
                    .ok_or(ReadError::Failed)?;
                chunk.copy_from_slice(v.get(..chunk.len()).ok_or(ReadError::Failed)?);
            }
            Ok(())
        }
    }
}

#[cfg(not(feature = "bpf"))]
mod object {
    use std::path::Path;

    use anyhow::{Result, bail};

    use super::Stats;
    use crate::probe::memory::{Memory, ReadError};

    /// Never made: this build has no BPF object.
    pub(crate) enum Bpf {}

    impl Bpf {
        pub(crate) fn load(_: &Path) -> Result<Bpf> {
            bail!(
                "this dentrylab was built without its BPF program (the bpf cargo feature, which needs clang): \
                 build it with default features, or use --backend kcore"
            )
        }
        pub(crate) fn run(&self, _: &str, _: &[u64]) -> Result<u32> {
            match *self {}
        }
        pub(crate) fn stats(&self) -> Result<Stats> {
            match *self {}
        }
        pub(crate) fn set_stats(&self, _: &Stats) -> Result<()> {
            match *self {}
        }
        pub(crate) fn drain_dirs(&self, _: &mut dyn FnMut((u64, u64), [u64; 2])) -> Result<(u64, bool)> {
            match *self {}
        }
        pub(crate) fn locate_fd(&self, _: u64) -> Result<(u64, u64, u32)> {
            match *self {}
        }
    }

    impl Memory for Bpf {
        fn read(&self, _: u64, _: &mut [u8]) -> Result<(), ReadError> {
            match *self {}
        }
    }
}

pub(crate) use object::Bpf;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_round_trip_in_the_programs_order() {
        let s = Stats { buckets: 1, walked: 2, wrong_bucket: 6, max_steps: 10, batches: 12, ..Stats::default() };
        let b = Stats::of(&s.bytes());
        assert_eq!((b.buckets, b.walked, b.wrong_bucket, b.max_steps, b.batches), (1, 2, 6, 10, 12));
        assert_eq!(s.bytes().len(), Stats::LEN);
    }
}
