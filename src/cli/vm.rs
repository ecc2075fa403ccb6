//! `dentrylab vm`: its flags, and the handler that turns them into the
//! benchmark's options, runs it and prints the matrix.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, ValueEnum};

use crate::bench::vm::kernel::Spec;
use crate::bench::vm::qemu::Clock;
use crate::bench::vm::source::{Request, Source};
use crate::bench::vm::{AccelChoice, Options};
use crate::error::UsageError;

pub(super) const VM_ABOUT: &str = "Run any dentrylab command inside a virtual machine (QEMU) per kernel and preemption \
model, and gather the results into one matrix: one row per (kernel, model, accelerator/clock).\n\n\
--kernel takes Debian kernel packages (linux-image-…: fetched with apt into private lists under the state \
directory, the host's apt configuration untouched, unpacked and cached; the modules come from the same package), \
kernel image paths (IMAGE[:MODULES_DIR]) and `host` (the same command run natively, as the reference row). \
--kernel-source builds kernels here first: Debian's linux-source-X (fetched with apt), a tarball or a source \
directory, configured from `make allnoconfig` plus the project's guest.config (and --kernel-config fragments), \
built with `make bzImage` and cached by (source, patches, configuration). With --patch it builds two: the \
baseline (the same source and configuration without the patches: the first row, rebuilt in the patched \
kernel's tree with the patches reversed) and the patched kernel (the second). Every build tool runs in a \
process group of its own, killed whole if dentrylab ends. A patch that does not apply, a configuration line `make olddefconfig` drops, or a failing build is \
one line (the hunk, the line, the compiler's first error), exit 1, and nothing is left behind. --build-only \
builds and stops. --selftests builds the kernel's own selftests of those directories from the same source \
(tools/testing/selftests, patches applied), and each guest runs every test they install after the command: \
a grid per test and row gives its verdict and TAP counts, so a patched kernel's tests read beside its \
baseline's. \
The guest's init is this binary: it mounts /proc, /sys, /dev, debugfs and cgroup2 (the memory controller \
enabled for its children), loads the loop, ext4, xfs and overlay modules, checks the preemption model the \
kernel ended up with (and refuses a model it lacks), runs the command with --json, sends the JSON and the \
kernel log back on a second serial port, never the console, and powers off.\n\n\
`reclaim --victims` runs in each guest as on the host, its victims on the guest's CPUs besides the reclaiming \
one (so --cpus 2 or more; the initramfs carries /bin/true for fork-exec; the container victim cannot run in a \
guest), and the table gains a line per row and victim: whether it waits, its longest wait against the longest \
stretch, and the kernel function it waited in.\n\n\
--preempt boots each PREEMPT_DYNAMIC kernel once per model with preempt=MODEL; a kernel built with one model \
(PREEMPT_RT) gets one row with its own model. A model the kernel's build does not offer is refused before \
anything boots (exit 2).\n\n\
Under TCG every instruction is emulated and times depend on the host's load: compare rows of one run with each \
other, never with the host row. --clock icount:SHIFT makes the guest's clock count instructions (2^SHIFT ns \
each): a slow machine whose times do not depend on the host's load; see docs/vm.md for what is and is not \
faithful there.\n\n\
The guest's memory is checked against the host's available memory; QEMU dies with dentrylab and the temporary \
files go with it, however it ends. Nothing in the guest touches the host's sysctls (--allow-global in the \
command acts on the guest's kernel).";

#[derive(Debug, Args)]
pub(crate) struct VmArgs {
    /// Kernels, comma-separated: Debian packages (linux-image-cloud-amd64, linux-image-6.12.57+deb13-rt-amd64), IMAGE[:MODULES_DIR], host.
    #[arg(long, value_name = "SPEC,...", value_delimiter = ',', required_unless_present = "kernel_source", value_parser = Spec::parse)]
    pub kernel: Vec<Spec>,
    /// Build kernels from source first: a Debian package (linux-source-7.3, fetched with apt), a tarball or a source directory; the unpatched build is the baseline row, then the patched one.
    #[arg(long, value_name = "PACKAGE|TARBALL|DIR", value_parser = Source::parse)]
    pub kernel_source: Option<Source>,
    /// Patches (patch -p1) for the patched kernel, applied in order; the baseline is the same source and configuration without them.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "kernel_source")]
    pub patch: Vec<PathBuf>,
    /// Configuration fragments (CONFIG_X=y, # CONFIG_X is not set) merged after the project's guest.config, for both builds.
    #[arg(long, value_name = "FILE", requires = "kernel_source")]
    pub kernel_config: Vec<PathBuf>,
    /// Kernel selftests to build from the same source (patches applied) and run in each guest after the command: directories under tools/testing/selftests, e.g. mount,mount_setattr,move_mount_set_group.
    #[arg(long, value_name = "TARGET,...", value_delimiter = ',', requires = "kernel_source", value_parser = crate::bench::vm::source::check_selftest_target)]
    pub selftests: Vec<String>,
    /// make -jN for the kernel builds [default: the host's CPUs].
    #[arg(long, value_name = "N", requires = "kernel_source", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub build_jobs: Option<u32>,
    /// Build (or find in the cache) the --kernel-source kernels, print where they are, and boot nothing.
    #[arg(long, requires = "kernel_source")]
    pub build_only: bool,
    /// Preemption models to boot PREEMPT_DYNAMIC kernels with; `all`: each model the kernel's build offers [default: the kernel's own].
    #[arg(long, value_name = "MODEL,...", value_delimiter = ',')]
    pub preempt: Vec<Preempt>,
    /// auto: KVM when a short test boot under it works, else TCG (says which and why).
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    pub accel: AccelArg,
    /// host: the guest's clock runs in real time; icount:SHIFT: it counts instructions, 2^SHIFT ns each (TCG only).
    #[arg(long, default_value = "host", value_parser = Clock::parse)]
    pub clock: Clock,
    /// Guest memory: 2G, 10G (checked against the host's available memory).
    #[arg(long, default_value = "2G", value_parser = crate::bench::mitigate::knobs::parse_memory)]
    pub memory: u64,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: u32,
    /// Time limit of each boot (the guest's report included): 30s, 20m, 1h.
    #[arg(long, default_value = "1h", value_parser = parse_timeout)]
    pub timeout: std::time::Duration,
    /// Write the matrix as JSON to FILE ('-' for standard output).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Where kernels are cached (under vm/) [default: as for reclaim's calibration].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Keep each boot's console (console.log), result channel (channel.log) and QEMU messages under DIR/boot-K-M/.
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// QEMU's -cpu model for the guests, e.g. max,-cx16 [default: host under KVM, max under TCG].
    #[arg(long, value_name = "MODEL")]
    pub cpu_model: Option<String>,
    /// Run even when the guest's memory is over half of the host's available memory.
    #[arg(long)]
    pub force: bool,
    /// The dentrylab command to run in each guest, after `--` (without --json: vm adds it).
    #[arg(last = true, required_unless_present = "build_only", value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Preempt {
    None,
    Voluntary,
    Full,
    Lazy,
    /// Every model the kernel's build offers.
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    crate::bench::mitigate::knobs::parse_duration(s)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{s:?} is not a duration (write for example 30s, 20m or 1h)"))
}

impl VmArgs {
    /// The builds `--kernel-source` asks for.
    pub(crate) fn build_request(&self) -> Option<Request> {
        Some(Request {
            source: self.kernel_source.clone()?,
            patches: self.patch.clone(),
            fragments: self.kernel_config.clone(),
            jobs: self.build_jobs.unwrap_or_else(|| crate::env::cpus().max(1) as u32),
            logs: self.logs.clone(),
            selftests: self.selftests.clone(),
        })
    }

    pub(crate) fn options(self) -> Result<Options> {
        let build = self.build_request();
        let first = self.command.first().map(String::as_str).unwrap_or("");
        if first == "vm" || first.starts_with("__") {
            return Err(
                UsageError(format!("`{first}` cannot run inside a guest: give a benchmark such as reclaim")).into()
            );
        }
        if self.command.iter().any(|a| a == "--json" || a.starts_with("--json=")) {
            return Err(UsageError(
                "the command after -- takes no --json: vm adds its own and gathers the results (use vm's --json)"
                    .into(),
            )
            .into());
        }
        if self.accel == AccelArg::Kvm && self.clock != Clock::Host {
            return Err(UsageError(
                "--accel kvm with --clock icount: QEMU counts instructions only under TCG; use --accel tcg".into(),
            )
            .into());
        }
        if let Some(list) = crate::bench::vm::victims_list(&self.command) {
            if self.cpus < 2 {
                return Err(UsageError(format!(
                    "--cpus {}: the command's --victims run on a CPU besides the reclaiming one: use --cpus 2 or more",
                    self.cpus
                ))
                .into());
            }
            let asked = crate::probe::victims::parse_list(list).unwrap_or_default();
            if let Some((v, why)) =
                asked.iter().find_map(|&v| crate::bench::vm::victim_not_in_guest(v).map(|why| (v, why)))
            {
                return Err(UsageError(format!(
                    "--victims: the {} victim cannot run in a guest: {why}; list the victims without it",
                    v.name()
                ))
                .into());
            }
        }
        // The command must parse here as it will in the guest.
        let argv = std::iter::once("dentrylab".to_string()).chain(self.command.iter().cloned());
        if let Err(e) = super::Cli::try_parse_from(argv) {
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
            return Err(UsageError(format!("the command after --: {line}")).into());
        }
        Ok(Options {
            kernels: self.kernel,
            preempt: self
                .preempt
                .iter()
                .map(|p| p.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default())
                .collect(),
            accel: match self.accel {
                AccelArg::Auto => AccelChoice::Auto,
                AccelArg::Kvm => AccelChoice::Kvm,
                AccelArg::Tcg => AccelChoice::Tcg,
            },
            clock: self.clock,
            memory_bytes: self.memory,
            cpus: self.cpus,
            timeout: self.timeout,
            argv: self.command,
            state_dir: self.state_dir.unwrap_or_else(crate::state::default_dir),
            force: self.force,
            logs: self.logs,
            cpu_model: self.cpu_model,
            build,
        })
    }
}
