//! The guest's initramfs: a gzip-compressed newc cpio archive (the format
//! the kernel unpacks into its rootfs, init/initramfs.c) holding this
//! dentrylab binary as the init, its shared libraries (from `ldd`), the
//! mkfs tools a disk filesystem needs with theirs, `/bin/true` (what the
//! `fork-exec` victim execs) with its libraries, the kernel modules the
//! benchmarks use (with their dependencies, from modules.dep, in load
//! order) and the init's configuration, `/vm.json`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::init::{CONFIG_PATH, GuestConfig, INIT_PATH};

/// Modules loaded in the guest when the kernel has them as modules: the
/// filesystems and the loop device of `--fs` and overlay stacks, after
/// the crc32c implementations that libcrc32c (xfs) and ext4's checksums
/// ask the crypto API for at run time (a soft dependency: modules.dep
/// does not list it, and the guest has no modprobe to load it on demand,
/// so without it libcrc32c fails with ENOENT).
pub(crate) const MODULES: [&str; 6] = ["crc32c_generic", "crc32c-intel", "loop", "ext4", "xfs", "overlay"];

/// Host tools the disk filesystems need (src/sandbox/disk.rs), copied when
/// the host has them (and perf when the command asks for `--profile`).
const TOOLS: [&str; 2] = ["mkfs.ext4", "mkfs.xfs"];
const TOOL_FILES: [&str; 1] = ["/etc/mke2fs.conf"];
/// What the `fork-exec` victim of `reclaim --victims` execs
/// (`crate::probe::victims`): copied from the host with its libraries, so
/// that the guest's victim does what the host's does.
pub(crate) const FORK_EXEC_PROGRAM: &str = "/bin/true";

/// The shells a kernel selftest script may name in its `#!` line, copied
/// with their libraries when the guest runs selftests.
const SHELLS: [&str; 2] = ["/bin/sh", "/bin/bash"];
/// The programs a kernel selftest runs through `system()` besides the
/// shells (mount_setattr's idmapped cases: `mount -o loop …` of an ext4
/// image made with mkfs.ext4, one of [`TOOLS`]): util-linux's, from the
/// host, into `/bin` with their libraries.
const SELFTEST_PROGRAMS: [&str; 3] = ["mount", "umount", "losetup"];

/// Builds the archive at `out`; `modules_dir` is `lib/modules/<release>`;
/// `selftests` is a kernel selftest install ([`super::selftests`]).
pub(crate) fn build(
    out: &Path,
    argv: &[String],
    modules_dir: Option<&Path>,
    decompress_in_kernel: bool,
    selftests: Option<&Path>,
) -> Result<()> {
    let mut a = Archive::default();
    // /mnt: the kernel's selftests (mount_setattr) mount on it, as on any
    // distribution's root.
    for d in ["dev", "proc", "sys", "tmp", "bin", "sbin", "etc", "run", "var", "var/tmp", "root", "mnt"] {
        a.dir(d);
    }
    // Opened by the kernel as the init's stdin/out/err (init/main.c,
    // console_on_rootfs) before /dev is mounted.
    a.chardev("dev/console", 5, 1);
    let exe = std::fs::read_link(crate::sys::SELF_EXE).context("cannot find this executable")?;
    a.file_from(INIT_PATH.trim_start_matches('/'), &exe, 0o755)?;
    let mut libs = shared_libraries(&exe)?;
    for t in TOOLS {
        if let Some(p) = which(t) {
            a.file_from(&format!("sbin/{t}"), &p, 0o755)?;
            libs.extend(shared_libraries(&p)?);
        }
    }
    let program = Path::new(FORK_EXEC_PROGRAM);
    if program.is_file() {
        a.file_from(FORK_EXEC_PROGRAM.trim_start_matches('/'), program, 0o755)?;
        libs.extend(shared_libraries(program)?);
    }
    // `--profile` in the guest: perf (linux-perf), with its libraries.
    if argv.iter().any(|x| x == "--profile")
        && let Some(p) = which("perf")
    {
        a.file_from("sbin/perf", &p, 0o755)?;
        libs.extend(shared_libraries(&p)?);
    }
    let tests = match selftests {
        Some(dir) => add_selftests(&mut a, dir, &mut libs)?,
        None => Vec::new(),
    };
    for f in TOOL_FILES {
        if Path::new(f).is_file() {
            a.file_from(f.trim_start_matches('/'), Path::new(f), 0o644)?;
        }
    }
    for l in &libs {
        a.file_from(l.to_string_lossy().trim_start_matches('/'), l, 0o755)?;
    }
    let mut modules = Vec::new();
    if let Some(dir) = modules_dir {
        let dep = std::fs::read_to_string(dir.join("modules.dep"))
            .with_context(|| format!("cannot read {}", dir.join("modules.dep").display()))?;
        let release = dir.file_name().context("modules dir")?.to_string_lossy().into_owned();
        for rel in load_order(&dep, &MODULES) {
            let guest = format!("lib/modules/{release}/{rel}");
            let host = dir.join(&rel);
            if decompress_in_kernel || !rel.ends_with(".xz") {
                a.file_from(&guest, &host, 0o644)?;
                modules.push(format!("/{guest}"));
            } else {
                let bytes = xz_decompress(&host)?;
                let guest = guest.trim_end_matches(".xz").to_string();
                a.file_bytes(&guest, &bytes, 0o644);
                modules.push(format!("/{guest}"));
            }
        }
    }
    let cfg = GuestConfig { argv: argv.to_vec(), modules, compressed_modules: decompress_in_kernel, selftests: tests };
    a.file_bytes(CONFIG_PATH.trim_start_matches('/'), serde_json::to_string_pretty(&cfg)?.as_bytes(), 0o644);
    a.write(out)
}

/// Every file of a selftest install under [`super::selftests::GUEST_DIR`]
/// (modes kept), the shells, and the programs' libraries into `libs`:
/// the tests its list names.
fn add_selftests(a: &mut Archive, dir: &Path, libs: &mut BTreeSet<PathBuf>) -> Result<Vec<String>> {
    use std::os::unix::fs::PermissionsExt;
    let list = std::fs::read_to_string(dir.join(super::selftests::LIST))
        .with_context(|| format!("the selftests in {} have no {}", dir.display(), super::selftests::LIST))?;
    let guest = super::selftests::GUEST_DIR.trim_start_matches('/');
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
            let p = e?.path();
            let rel = p.strip_prefix(dir).unwrap_or(&p).to_string_lossy().into_owned();
            if p.is_dir() {
                a.dir(&format!("{guest}/{rel}"));
                stack.push(p);
            } else if p.is_file() {
                let mode = std::fs::metadata(&p)?.permissions().mode() & 0o777;
                a.file_from(&format!("{guest}/{rel}"), &p, mode)?;
                if mode & 0o111 != 0 {
                    libs.extend(shared_libraries(&p)?);
                }
            }
        }
    }
    for sh in SHELLS.iter().map(Path::new).filter(|p| p.is_file()) {
        a.file_from(sh.to_string_lossy().trim_start_matches('/'), sh, 0o755)?;
        libs.extend(shared_libraries(sh)?);
    }
    for (t, p) in SELFTEST_PROGRAMS.iter().filter_map(|t| which(t).map(|p| (t, p))) {
        a.file_from(&format!("bin/{t}"), &p, 0o755)?;
        libs.extend(shared_libraries(&p)?);
    }
    Ok(super::selftests::listed(&list))
}

/// The modules of `wanted` that modules.dep lists, each after its
/// dependencies (modules.dep lists a module's dependencies so that the
/// last is loaded first, as modprobe does), each once.
pub(crate) fn load_order(modules_dep: &str, wanted: &[&str]) -> Vec<String> {
    let mut deps = std::collections::HashMap::new();
    for l in modules_dep.lines() {
        if let Some((m, d)) = l.split_once(':') {
            deps.insert(m.trim().to_string(), d.split_whitespace().map(str::to_string).collect::<Vec<_>>());
        }
    }
    let base = |p: &str| {
        let f = p.rsplit('/').next().unwrap_or(p);
        f.split(".ko").next().unwrap_or(f).replace('-', "_")
    };
    let mut order: Vec<String> = Vec::new();
    let mut keys: Vec<&String> = deps.keys().collect();
    keys.sort();
    for w in wanted {
        let Some(m) = keys.iter().find(|k| base(k) == w.replace('-', "_")) else { continue };
        for d in deps[*m].iter().rev().chain(std::iter::once(*m)) {
            if !order.contains(d) {
                order.push(d.clone());
            }
        }
    }
    order
}

fn xz_decompress(p: &Path) -> Result<Vec<u8>> {
    let out = std::process::Command::new("xz")
        .arg("-dc")
        .arg(p)
        .output()
        .context("cannot run xz (install xz-utils) to decompress kernel modules")?;
    anyhow::ensure!(
        out.status.success(),
        "xz -dc {} failed: {}",
        p.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(out.stdout)
}

/// `tool` on the PATH, else in /usr/sbin or /sbin (depmod, for a user
/// whose PATH lacks them).
fn which(tool: &str) -> Option<PathBuf> {
    crate::sys::which_or(tool, &["/usr/sbin", "/sbin"])
}

/// The shared libraries `ldd` names for `exe`, the loader included.
fn shared_libraries(exe: &Path) -> Result<BTreeSet<PathBuf>> {
    let out = std::process::Command::new("ldd").arg(exe).output().context("cannot run ldd")?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(parse_ldd(&text))
}

pub(crate) fn parse_ldd(text: &str) -> BTreeSet<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let p = match l.split_once("=>") {
                Some((_, right)) => right.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            p.starts_with('/').then(|| PathBuf::from(p))
        })
        .collect()
}

/// The archive's entries, parents before children, written in one go.
#[derive(Default)]
struct Archive {
    entries: Vec<(String, Entry)>,
    dirs: BTreeSet<String>,
}

enum Entry {
    Dir,
    File { data: Data, mode: u32 },
    CharDev { major: u32, minor: u32 },
}

enum Data {
    Host(PathBuf),
    Bytes(Vec<u8>),
}

impl Archive {
    fn dir(&mut self, name: &str) {
        let mut path = String::new();
        for part in name.split('/').filter(|p| !p.is_empty()) {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            if self.dirs.insert(path.clone()) {
                self.entries.push((path.clone(), Entry::Dir));
            }
        }
    }

    fn parent(&mut self, name: &str) {
        if let Some((p, _)) = name.rsplit_once('/') {
            self.dir(p);
        }
    }

    fn file_from(&mut self, name: &str, host: &Path, mode: u32) -> Result<()> {
        anyhow::ensure!(host.is_file(), "{} is not a file", host.display());
        if self.entries.iter().any(|(n, _)| n == name) {
            return Ok(());
        }
        self.parent(name);
        self.entries.push((name.to_string(), Entry::File { data: Data::Host(host.to_path_buf()), mode }));
        Ok(())
    }

    fn file_bytes(&mut self, name: &str, bytes: &[u8], mode: u32) {
        self.parent(name);
        self.entries.push((name.to_string(), Entry::File { data: Data::Bytes(bytes.to_vec()), mode }));
    }

    fn chardev(&mut self, name: &str, major: u32, minor: u32) {
        self.parent(name);
        self.entries.push((name.to_string(), Entry::CharDev { major, minor }));
    }

    fn write(&self, out: &Path) -> Result<()> {
        use cpio::newc::Builder;
        let f = std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
        let mut w = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::fast());
        for (ino, (name, e)) in self.entries.iter().enumerate() {
            let b = Builder::new(name).ino(ino as u32 + 1).uid(0).gid(0);
            match e {
                Entry::Dir => {
                    b.mode(0o040755).nlink(2).write(&mut w, 0).finish()?;
                }
                Entry::CharDev { major, minor } => {
                    b.mode(0o020600).nlink(1).rdev_major(*major).rdev_minor(*minor).write(&mut w, 0).finish()?;
                }
                Entry::File { data, mode } => {
                    let bytes = match data {
                        Data::Host(p) => std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?,
                        Data::Bytes(b) => b.clone(),
                    };
                    let mut fw = b.mode(0o100000 | mode).nlink(1).write(&mut w, bytes.len() as u32);
                    fw.write_all(&bytes)?;
                    fw.finish()?;
                }
            }
        }
        let w = cpio::newc::trailer(w)?;
        w.finish()?.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_order_puts_dependencies_first_once() {
        let dep = "kernel/fs/xfs/xfs.ko.xz: kernel/lib/libcrc32c.ko.xz\n\
                   kernel/fs/overlayfs/overlay.ko.xz:\n\
                   kernel/fs/ext4/ext4.ko.xz: kernel/fs/mbcache.ko.xz kernel/fs/jbd2/jbd2.ko.xz kernel/lib/crc16.ko.xz\n\
                   kernel/lib/libcrc32c.ko.xz:\n";
        assert_eq!(
            load_order(dep, &["loop", "ext4", "xfs", "overlay"]),
            [
                "kernel/lib/crc16.ko.xz",
                "kernel/fs/jbd2/jbd2.ko.xz",
                "kernel/fs/mbcache.ko.xz",
                "kernel/fs/ext4/ext4.ko.xz",
                "kernel/lib/libcrc32c.ko.xz",
                "kernel/fs/xfs/xfs.ko.xz",
                "kernel/fs/overlayfs/overlay.ko.xz"
            ]
        );
    }

    /// A selftest install goes under /selftests with its list, and the
    /// guest gets the shells and util-linux's mount (mount_setattr's
    /// idmapped cases run `mount -o loop` through `system()`), with the
    /// libraries each links.
    #[test]
    fn selftests_bring_their_shells_and_mount() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("mount")).unwrap();
        let t = d.path().join("mount/run.sh");
        std::fs::write(&t, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(d.path().join(crate::bench::vm::selftests::LIST), "mount:run.sh\n").unwrap();
        let mut a = Archive::default();
        let mut libs = BTreeSet::new();
        assert_eq!(add_selftests(&mut a, d.path(), &mut libs).unwrap(), ["mount:run.sh"]);
        let names: Vec<&str> = a.entries.iter().map(|(n, _)| n.as_str()).collect();
        for want in ["selftests/mount/run.sh", "selftests/kselftest-list.txt", "bin/sh", "bin/mount", "bin/losetup"] {
            assert!(names.contains(&want), "no {want} in {names:?}");
        }
        let mount = which("mount").expect("util-linux's mount on the host (.ci/run installs it)");
        assert!(!libs.is_empty() && shared_libraries(&mount).unwrap().is_subset(&libs), "{libs:?}");
    }

    #[test]
    fn ldd_output_gives_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        let got: Vec<PathBuf> = parse_ldd(text).into_iter().collect();
        assert_eq!(
            got,
            [PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]
        );
    }
}
