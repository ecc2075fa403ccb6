//! `dentrylab vm`: the same dentrylab command on other kernels and
//! preemption models, each in a virtual machine (QEMU) whose init is this
//! binary ([`init`]), gathered into one matrix: one row per (kernel,
//! preemption model, accelerator/clock), plus the host as reference.
//! The matrix renders itself ([`matrix`]: its table, the victims' table
//! of `matrix_victims` and the chart of `chart`), for `vm`'s output and
//! for `report`. Inside, one way: `chart` and `matrix_victims` below
//! `matrix`.

pub(crate) mod channel;
pub(crate) mod guidance;
pub(crate) mod init;
pub(crate) mod initramfs;
pub(crate) mod kernel;
pub(crate) mod matrix;
mod matrix_ab;
mod matrix_victims;
pub(crate) mod qemu;
mod rows;
pub(crate) mod selftests;
pub(crate) mod source;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::procfs::ProcRoot;
use kernel::{Cache, Models, Spec};
use qemu::{Accel, Clock, Machine};

pub(crate) const SCHEMA: &str = "dentrylab.vm-matrix/1";
/// The hidden subcommand of the guardian that removes a run's temporary
/// directories when dentrylab ends, however it ends.
pub(crate) const GUARD_COMMAND: &str = "__vm-guard";

/// `vm`'s internal commands (it is not a benchmark of the registry, so
/// `cli::registry` adds these to the benchmarks').
pub(crate) const INTERNAL: &[&dyn crate::sys::internal::InternalCommand] =
    &[&init::INIT_ENTRY, &GUARD_ENTRY, &guidance::GUIDANCE_ENTRY];

/// The arguments of [`GUARD_COMMAND`].
#[derive(Debug, clap::Args)]
pub(crate) struct GuardArgs {
    /// Directories to remove.
    pub paths: Vec<PathBuf>,
}

/// The guardian's internal command.
const GUARD_ENTRY: crate::sys::internal::Entry<GuardArgs> = crate::sys::internal::Entry {
    name: GUARD_COMMAND,
    about: "Removes a 'vm' run's temporary directories when dentrylab ends, however it ends",
    aliases: &[],
    run: |a| guard_main(&a.paths),
};
/// How long a KVM test boot may take before TCG is used instead.
const KVM_TEST_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccelChoice {
    Auto,
    Kvm,
    Tcg,
}

/// What `vm` is asked to do (from the command line, without clap).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub kernels: Vec<Spec>,
    /// `preempt=` values to boot PREEMPT_DYNAMIC kernels with; empty: the
    /// kernel's default.
    pub preempt: Vec<String>,
    pub accel: AccelChoice,
    pub clock: Clock,
    pub memory_bytes: u64,
    pub cpus: u32,
    pub timeout: Duration,
    /// The dentrylab command, without the program name and `--json`.
    pub argv: Vec<String>,
    pub state_dir: PathBuf,
    pub force: bool,
    /// Keep each boot's console and channel files in this directory.
    pub logs: Option<PathBuf>,
    /// QEMU's `-cpu` model for the guests (default: host under KVM, max under TCG).
    pub cpu_model: Option<String>,
    /// Kernels to build from source first (`--kernel-source`): their rows
    /// come first, the unpatched baseline before the patched kernel.
    pub build: Option<source::Request>,
}

/// A guest's result as it came back over the channel, byte for byte.
pub(crate) type RawResult = Box<serde_json::value::RawValue>;

/// The matrix file (schema `dentrylab.vm-matrix/1`). `R` is the rows'
/// result: kept verbatim ([`RawResult`]) when written, read back as the
/// command's own result type by `report`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Matrix<R = RawResult> {
    pub schema: String,
    pub started_at: String,
    pub host: HostInfo,
    /// The dentrylab command every row ran (without `dentrylab`).
    pub command: Vec<String>,
    /// Which accelerator the guests used and why.
    #[serde(default)]
    pub accel_reason: String,
    pub rows: Vec<Row<R>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HostInfo {
    pub kernel: String,
    pub cpus: usize,
    pub memory_bytes: u64,
}

/// One kernel, preemption model and accelerator/clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Row<R = RawResult> {
    pub kernel_spec: String,
    pub kernel_release: String,
    pub preempt: String,
    pub preempt_requested: Option<String>,
    /// `tcg`, `kvm` or `host`.
    pub accel: String,
    /// `host` or `icount:SHIFT`.
    pub clock: String,
    /// Every instruction emulated (TCG): times compare with other emulated
    /// rows of the same run, never with the host.
    pub emulated: bool,
    pub memory_bytes: u64,
    pub cpus: usize,
    pub wall_seconds: f64,
    /// Whether the row's kernel has `/proc/PID/stack` (where a waiting
    /// victim's stack is read); none when the guest never said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_stack: Option<bool>,
    /// The command's own `--json` output; none when the row failed.
    pub result: Option<R>,
    #[serde(default)]
    pub kernel_log: Vec<String>,
    pub error: Option<String>,
    /// The console's last lines when the guest failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub console_tail: Vec<String>,
    /// What the kernel was built from, when `--kernel-source` built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<kernel::BuildTag>,
    /// The kernel's own selftests run in the guest (`--selftests`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selftests: Vec<selftests::Outcome>,
}

impl Matrix {
    /// The matrix with every row's result read as `R` (the command's own
    /// result type), from the text the guest wrote, as `report` reads a
    /// saved matrix; an error when a row's result is not an `R`.
    pub(crate) fn read_results<R: serde::de::DeserializeOwned>(&self) -> serde_json::Result<Matrix<Box<R>>> {
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let result = row
                    .result
                    .as_ref()
                    .map(|raw| serde_json::from_str::<Option<Box<R>>>(raw.get()))
                    .transpose()?
                    .flatten();
                Ok(Row {
                    kernel_spec: row.kernel_spec.clone(),
                    kernel_release: row.kernel_release.clone(),
                    preempt: row.preempt.clone(),
                    preempt_requested: row.preempt_requested.clone(),
                    accel: row.accel.clone(),
                    clock: row.clock.clone(),
                    emulated: row.emulated,
                    memory_bytes: row.memory_bytes,
                    cpus: row.cpus,
                    wall_seconds: row.wall_seconds,
                    proc_stack: row.proc_stack,
                    result,
                    kernel_log: row.kernel_log.clone(),
                    error: row.error.clone(),
                    console_tail: row.console_tail.clone(),
                    build: row.build.clone(),
                    selftests: row.selftests.clone(),
                })
            })
            .collect::<serde_json::Result<Vec<_>>>()?;
        Ok(Matrix {
            schema: self.schema.clone(),
            started_at: self.started_at.clone(),
            host: self.host.clone(),
            command: self.command.clone(),
            accel_reason: self.accel_reason.clone(),
            rows,
        })
    }
}

impl<R> Row<R> {
    /// The row's name in legends: release, model, and the machine when it
    /// is not the host.
    pub(crate) fn label(&self) -> String {
        format!(
            "{} {}{}",
            self.kernel_release,
            self.preempt,
            if self.accel == "host" { String::new() } else { format!(", {}", self.machine()) }
        )
    }

    /// Accelerator and clock, and whether the times are emulated.
    pub(crate) fn machine(&self) -> String {
        let clock = if self.clock == "host" { String::new() } else { format!(" {}", self.clock) };
        format!("{}{clock}{}", self.accel, if self.emulated { " (emulated)" } else { "" })
    }
}

/// Runs the matrix. Progress goes to `announce`.
pub(crate) fn run(o: &Options, proc: &ProcRoot, announce: &dyn Fn(&str)) -> Result<Matrix> {
    let started_at = crate::result::now_utc();
    let host = HostInfo {
        kernel: nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default(),
        cpus: crate::env::cpus(),
        memory_bytes: proc.meminfo().map(|m| m.mem_total_bytes).unwrap_or(0),
    };
    let guests = o.build.is_some() || o.kernels.iter().any(|k| *k != Spec::Host);
    if guests {
        crate::bench::common::check_memory(
            "the virtual machine",
            o.memory_bytes,
            &format!(" (--memory {})", crate::size::bytes(o.memory_bytes)),
            "lower --memory",
            o.force,
            proc,
        )?;
    }
    let tmp = std::env::temp_dir().join(format!("dentrylab-vm-{}", std::process::id()));
    let cache = Cache::new(&o.state_dir);
    // Removes both when this process ends, SIGKILL included.
    let guardian = crate::sys::guardian::Guardian::spawn(
        [GUARD_COMMAND.as_ref(), tmp.as_os_str(), cache.partial_dir().as_os_str()],
        "temporary directory",
    )?;
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let result = run_in(o, &cache, &tmp, &guardian, host, started_at, announce);
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_dir_all(cache.partial_dir());
    guardian.finish();
    result
}

fn run_in(
    o: &Options,
    cache: &Cache,
    tmp: &std::path::Path,
    guard: &crate::sys::guardian::Guardian,
    host: HostInfo,
    started_at: String,
    announce: &dyn Fn(&str),
) -> Result<Matrix> {
    // Every kernel built, fetched and checked before anything boots.
    let mut kernels = Vec::new();
    let mut selftests = None;
    if let Some(r) = &o.build {
        let p = source::prepare(cache, r, guard, announce)?;
        kernels.extend(p.kernels.iter().map(source::Built::spec));
        selftests = p.selftests;
    }
    kernels.extend(o.kernels.iter().cloned());
    let mut prepared = Vec::new();
    for (i, spec) in kernels.iter().enumerate() {
        if *spec == Spec::Host {
            prepared.push(None);
            continue;
        }
        let k = cache.resolve(spec, announce)?;
        let models = k.config.as_deref().and_then(Models::of_config);
        check_models(spec, models.as_ref(), &o.preempt)?;
        let initrd = tmp.join(format!("initramfs-{i}.cpio.gz"));
        let in_kernel =
            k.config.as_deref().is_some_and(|c| c.lines().any(|l| l.trim() == "CONFIG_MODULE_DECOMPRESS=y"));
        initramfs::build(&initrd, &o.argv, k.modules.as_deref(), in_kernel, selftests.as_deref())
            .with_context(|| format!("kernel {}: cannot build the initramfs", spec.label()))?;
        prepared.push(Some((k, models, initrd)));
    }
    let first = prepared.iter().flatten().next();
    let (accel, accel_reason) = match first {
        Some((k, _, initrd)) => choose_accel(o, &k.image, initrd, tmp, announce)?,
        None => (Accel::Tcg, "no guest: host only".into()),
    };
    if first.is_some() {
        announce(&format!("accelerator: {} ({accel_reason})", accel.name()));
    }
    let machine =
        Machine { accel, clock: o.clock, memory_bytes: o.memory_bytes, cpus: o.cpus, cpu_model: o.cpu_model.clone() };
    let mut rows = Vec::new();
    for (i, (spec, p)) in kernels.iter().zip(&prepared).enumerate() {
        match p {
            None => {
                announce("host: running the command natively");
                rows.push(rows::host(o, tmp, &host)?);
            }
            Some((k, models, initrd)) => {
                for (j, preempt) in models_to_boot(models.as_ref(), &o.preempt).into_iter().enumerate() {
                    announce(&format!(
                        "{}: booting{} under {} ({})",
                        spec.label(),
                        preempt.as_deref().map(|p| format!(" with preempt={p}")).unwrap_or_default(),
                        accel.name(),
                        o.clock.label()
                    ));
                    let dir = tmp.join(format!("boot-{i}-{j}"));
                    let row = rows::guest(o, &machine, spec, k, initrd, preempt.as_deref(), dir)?;
                    if let Some(e) = &row.error {
                        announce(&format!("{}: {e}", spec.label()));
                    }
                    rows.push(row);
                }
            }
        }
    }
    Ok(Matrix { schema: SCHEMA.into(), started_at, host, command: o.argv.clone(), accel_reason, rows })
}

/// `vm --build-only`: the kernels of `r` built (or found in the cache),
/// nothing booted; a build being made is removed however dentrylab ends.
pub(crate) fn build_only(
    state_dir: &std::path::Path,
    r: &source::Request,
    announce: &dyn Fn(&str),
) -> Result<source::Prepared> {
    let cache = Cache::new(state_dir);
    let guardian = crate::sys::guardian::Guardian::spawn(
        [GUARD_COMMAND.as_ref(), cache.partial_dir().as_os_str()],
        "kernel build directory",
    )?;
    let result = source::prepare(&cache, r, &guardian, announce);
    let _ = std::fs::remove_dir_all(cache.partial_dir());
    guardian.finish();
    result
}

/// Whether the command runs `reclaim --victims`: its victims need a vCPU
/// besides the reclaiming one.
pub(crate) fn asks_victims(argv: &[String]) -> bool {
    victims_list(argv).is_some()
}

/// The value of the command's `--victims` (`--victims LIST` or
/// `--victims=LIST`; an empty list when it is the last word).
pub(crate) fn victims_list(argv: &[String]) -> Option<&str> {
    argv.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--victims") {
        Some("") => Some(argv.get(i + 1).map_or("", String::as_str)),
        Some(rest) => rest.strip_prefix('='),
        None => None,
    })
}

/// Victims that cannot run in a guest, and why: the initramfs carries no
/// container runtime (and the guest has no network to fetch one).
pub(crate) fn victim_not_in_guest(v: crate::probe::victims::Victim) -> Option<&'static str> {
    use crate::probe::victims::Victim;
    match v {
        Victim::Container => Some("the guest's initramfs carries no container runtime (runsc)"),
        Victim::Umount
        | Victim::Netns
        | Victim::ForkExec
        | Victim::Stat
        | Victim::Cgroup
        | Victim::Inotify
        | Victim::Mariadb
        | Victim::PodStart => None,
    }
}

/// `--preempt all`: each model the kernel's build offers.
pub(crate) const ALL_MODELS: &str = "all";

/// Refuses (bad input, exit 2) a `--preempt` value a PREEMPT_DYNAMIC
/// kernel does not offer. A kernel built with one model (PREEMPT_RT)
/// gets one row with its model whatever `--preempt` says.
fn check_models(spec: &Spec, models: Option<&Models>, asked: &[String]) -> Result<()> {
    if let Some(Models::Dynamic { offered, .. }) = models
        && let Some(bad) = asked.iter().find(|p| *p != ALL_MODELS && !offered.contains(p))
    {
        return Err(UsageError(format!(
            "--preempt {bad}: kernel {} does not offer it (its build offers {}); drop {bad} or choose another kernel",
            spec.label(),
            offered.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// The `preempt=` of each boot: each asked model on a PREEMPT_DYNAMIC
/// kernel (or an unknown build, where the guest checks), none otherwise.
fn models_to_boot(models: Option<&Models>, asked: &[String]) -> Vec<Option<String>> {
    let all = asked.iter().any(|p| p == ALL_MODELS);
    let each_asked = || match asked {
        [] => vec![None],
        _ => asked.iter().map(|p| Some(p.clone())).collect(),
    };
    match models {
        Some(Models::Fixed(_)) => vec![None],
        Some(Models::Dynamic { offered, .. }) if all => offered.iter().map(|p| Some(p.clone())).collect(),
        // An unknown build: only the guest can say what it offers.
        None if all => vec![None],
        Some(Models::Dynamic { .. }) | None => each_asked(),
    }
}

/// `--accel auto`: KVM when a test boot under it reports back, else TCG;
/// the reason either way.
fn choose_accel(
    o: &Options,
    image: &std::path::Path,
    initrd: &std::path::Path,
    tmp: &std::path::Path,
    announce: &dyn Fn(&str),
) -> Result<(Accel, String)> {
    match (o.accel, o.clock) {
        (AccelChoice::Kvm, Clock::Icount(_)) => {
            Err(UsageError("--accel kvm with --clock icount: QEMU counts instructions only under TCG".into()).into())
        }
        (AccelChoice::Kvm, _) => Ok((Accel::Kvm, "asked for (--accel kvm)".into())),
        (AccelChoice::Tcg, _) => Ok((Accel::Tcg, "asked for (--accel tcg)".into())),
        (AccelChoice::Auto, Clock::Icount(_)) => Ok((Accel::Tcg, "--clock icount runs only under TCG".into())),
        (AccelChoice::Auto, Clock::Host) => {
            if let Err(why) = qemu::kvm_device() {
                return Ok((Accel::Tcg, format!("KVM is not usable: {why}")));
            }
            announce("testing KVM with a short boot");
            let m =
                Machine { accel: Accel::Kvm, clock: Clock::Host, memory_bytes: 512 << 20, cpus: 1, cpu_model: None };
            let b = qemu::Boot {
                image,
                initramfs: initrd,
                preempt: None,
                probe_only: true,
                dir: tmp.join("kvm-test"),
                timeout: KVM_TEST_TIMEOUT,
            };
            let out = qemu::boot(&m, &b)?;
            if out.transcript.hello.is_some() && out.transcript.complete {
                return Ok((Accel::Kvm, "a test boot under KVM reported back".into()));
            }
            let why = out
                .qemu_stderr
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
                .or_else(|| out.timed_out.then(|| format!("no report within {} s", KVM_TEST_TIMEOUT.as_secs())))
                .unwrap_or_else(|| "the guest never reported back".into());
            Ok((Accel::Tcg, format!("a test boot under KVM failed: {why}")))
        }
    }
}

/// The guardian: waits for dentrylab to end, then removes `paths`.
pub(crate) fn guard_main(paths: &[PathBuf]) -> Result<()> {
    // The kernel builds' process groups first: nothing may still write
    // into the directories when they go.
    crate::sys::group::wait_for_parent_end_killing_groups()?;
    for p in paths {
        let _ = std::fs::remove_dir_all(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_victims_are_found_in_either_spelling() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(victims_list(&argv(&["reclaim", "--victims", "umount,stat", "--reps", "1"])), Some("umount,stat"));
        assert_eq!(victims_list(&argv(&["reclaim", "--victims=all"])), Some("all"));
        assert_eq!(victims_list(&argv(&["reclaim", "--victims"])), Some(""));
        assert_eq!(victims_list(&argv(&["reclaim", "--victimsx"])), None);
        assert!(!asks_victims(&argv(&["reclaim", "--sizes", "20k"])));
        assert!(victim_not_in_guest(crate::probe::victims::Victim::Container).is_some());
        assert!(victim_not_in_guest(crate::probe::victims::Victim::Umount).is_none());
    }

    #[test]
    fn a_fixed_model_kernel_boots_once_and_refuses_nothing() {
        let rt = Models::Fixed("rt".into());
        let asked = vec!["none".to_string(), "full".to_string()];
        assert_eq!(models_to_boot(Some(&rt), &asked), vec![None]);
        assert!(check_models(&Spec::Host, Some(&rt), &asked).is_ok());
        let dynamic = Models::Dynamic {
            offered: vec!["none".into(), "voluntary".into(), "full".into()],
            default: "voluntary".into(),
        };
        assert_eq!(models_to_boot(Some(&dynamic), &asked), vec![Some("none".into()), Some("full".into())]);
        assert_eq!(models_to_boot(Some(&dynamic), &[]), vec![None]);
        let all = vec![ALL_MODELS.to_string()];
        assert!(check_models(&Spec::Host, Some(&dynamic), &all).is_ok());
        let every = models_to_boot(Some(&dynamic), &all);
        assert_eq!(every, ["none", "voluntary", "full"].map(|p| Some(p.to_string())).to_vec());
        assert_eq!(models_to_boot(Some(&rt), &all), vec![None]);
        assert_eq!(models_to_boot(None, &all), vec![None]);
        let e = check_models(&Spec::Package("linux-image-x".into()), Some(&dynamic), &["lazy".into()]).unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some());
        assert!(e.to_string().contains("offers none, voluntary, full"), "{e}");
    }
}
