//! What the `pod-start` victim does to namespaces, mounts and cgroups: a
//! pod's sandbox (pause) container and one app container started as
//! containerd's CRI plugin and runc start them, after the previous pod is
//! torn down as they tear it down, every step timed. The sequence and its
//! system calls are those a trace of the real runtime shows (docs/victims.md
//! gives the trace and its command); what the victim leaves out (the
//! containers' processes, CNI's veth, the image pull) is said there too.
//!
//! Everything happens in the calling thread's own namespaces: its mount
//! namespace (made by [`super::victim::own_mount_namespace`] before the
//! run's filesystem is mounted) plays the node's, where containerd's shim
//! mounts each container's overlay rootfs; each container's init gets a
//! copy of it, mounts what runc mounts, pivots into its rootfs and
//! detaches the old root. A container's "process" is an open file of its
//! namespaces, so its exit (the last reference dropped) tears the
//! namespace down as an exiting container's does. When dentrylab dies,
//! those files close and the namespaces go with the thread's; the cgroups
//! are named for the cgroup guardian, which removes them.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, setns, unshare};

use crate::sys;

/// One step of a pod start and how long it took.
pub(crate) type Step = (&'static str, u64);

/// The steps of one call, in order (the teardown's only from the second
/// call on: the first has no previous pod).
pub(crate) const STEPS: &[&str] = &[
    "app exit",
    "app rootfs umount",
    "sandbox exit",
    "sandbox rootfs umount",
    "volume umount",
    "shm umount",
    "netns removal",
    "cgroup rmdir",
    "cgroup mkdir",
    "netns",
    "shm mount",
    "volume mount",
    "sandbox rootfs mount",
    "sandbox runc exe bind",
    "sandbox namespaces",
    "sandbox mounts",
    "sandbox pivot_root",
    "sandbox old root umount",
    "sandbox masks",
    "app rootfs mount",
    "app runc exe bind",
    "app namespaces",
    "app mounts",
    "app pivot_root",
    "app old root umount",
    "app masks",
];

/// The mounts runc makes in a container's rootfs before it pivots, as the
/// OCI spec containerd's CRI plugin writes lists them: (source, target,
/// type, flags, data). `cgroup2` is mounted only on a cgroup v2 node.
const RUNTIME_MOUNTS: &[(&str, &str, &str, u64, &str)] = &[
    ("proc", "proc", "proc", NOSUID | NOEXEC | NODEV, ""),
    ("tmpfs", "dev", "tmpfs", NOSUID | STRICTATIME, "mode=755,size=65536k"),
    ("devpts", "dev/pts", "devpts", NOSUID | NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5"),
    ("mqueue", "dev/mqueue", "mqueue", NOSUID | NOEXEC | NODEV, ""),
    ("sysfs", "sys", "sysfs", NOSUID | NOEXEC | NODEV | RDONLY, ""),
    ("cgroup", "sys/fs/cgroup", "cgroup2", NOSUID | NOEXEC | NODEV | RDONLY, ""),
];
const NOSUID: u64 = MsFlags::MS_NOSUID.bits();
const NOEXEC: u64 = MsFlags::MS_NOEXEC.bits();
const NODEV: u64 = MsFlags::MS_NODEV.bits();
const STRICTATIME: u64 = MsFlags::MS_STRICTATIME.bits();
const RDONLY: u64 = MsFlags::MS_RDONLY.bits();

/// The app container's bind mounts (the kubelet's and containerd's files
/// for it), from the pod's directory: (source in the pod, target).
const APP_BINDS: &[(&str, &str)] = &[
    ("etc-hosts", "etc/hosts"),
    ("hostname", "etc/hostname"),
    ("resolv.conf", "etc/resolv.conf"),
    ("shm", "dev/shm"),
    ("termination-log", "dev/termination-log"),
    ("volume", "var/run/secrets/kubernetes.io/serviceaccount"),
];
/// The sandbox's: its shm and its resolv.conf.
const SANDBOX_BINDS: &[(&str, &str)] = &[("shm", "dev/shm"), ("resolv.conf", "etc/resolv.conf")];

/// Paths runc hides (a file under /dev/null, a directory under a read-only
/// tmpfs) and paths it makes read-only, as the runtime's default spec
/// lists them; those absent on this kernel are skipped, as runc does.
const MASKED: &[&str] = &[
    "proc/acpi",
    "proc/asound",
    "proc/kcore",
    "proc/keys",
    "proc/latency_stats",
    "proc/timer_list",
    "proc/timer_stats",
    "proc/sched_debug",
    "proc/scsi",
    "sys/firmware",
    "sys/devices/virtual/powercap",
];
const READONLY: &[&str] = &["proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger"];

/// The directories of the image (one unpacked layer), made once.
const IMAGE_DIRS: &[&str] =
    &["proc", "dev", "sys", "etc", "run", "tmp", "var/run/secrets/kubernetes.io/serviceaccount"];
const IMAGE_FILES: &[&str] = &["etc/hosts", "etc/hostname", "etc/resolv.conf"];

/// The namespaces of the victim's thread, to come back to after each
/// container's init.
struct Base {
    mnt: OwnedFd,
    net: OwnedFd,
    uts: OwnedFd,
    ipc: OwnedFd,
    pid: OwnedFd,
}

/// A started container: its rootfs (mounted on the node) and the files
/// that hold its namespaces (its "process").
struct Container {
    rootfs: PathBuf,
    held: Vec<OwnedFd>,
}

/// A started pod.
struct Pod {
    dir: PathBuf,
    sandbox: Container,
    app: Container,
    cgroups: Vec<PathBuf>,
}

/// The `pod-start` victim's state: its directories, the node's namespaces
/// and the pod the next call tears down.
pub(crate) struct PodStart {
    dir: PathBuf,
    image: PathBuf,
    cgroup: Option<PathBuf>,
    cgroup2: bool,
    base: Base,
    /// The binary runc's exe bind binds: this one, or where the sandbox
    /// covers its path (a binary under /tmp), a file of the image.
    exe: PathBuf,
    prev: Option<Pod>,
    n: u64,
}

fn ns(kind: &str) -> Result<OwnedFd> {
    let p = format!("/proc/thread-self/ns/{kind}");
    Ok(File::open(&p).with_context(|| format!("pod-start: cannot open {p}"))?.into())
}

fn mkdirs(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).with_context(|| format!("pod-start: cannot make {}", p.display()))
}

fn write(p: &Path, what: &str) -> Result<()> {
    std::fs::write(p, what).with_context(|| format!("pod-start: cannot write {}", p.display()))
}

fn mnt(src: &str, target: &Path, fstype: Option<&str>, flags: MsFlags, data: Option<&str>) -> Result<()> {
    mount(Some(src), target, fstype, flags, data)
        .with_context(|| format!("pod-start: mount {src} on {} ({})", target.display(), fstype.unwrap_or("bind")))
}

fn umnt(target: &Path, flags: MntFlags) -> Result<()> {
    umount2(target, flags).with_context(|| format!("pod-start: umount {}", target.display()))
}

/// Times `f` as step `name`.
fn step<T>(steps: &mut Vec<Step>, name: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let t0 = sys::monotonic_ns();
    let r = f().with_context(|| format!("pod-start step '{name}'"));
    steps.push((name, sys::monotonic_ns().saturating_sub(t0)));
    r
}

/// Which container of the pod.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sandbox,
    App,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sandbox => "sandbox",
            Kind::App => "app",
        }
    }

    /// Its steps: rootfs mount, runc exe bind, namespaces, mounts,
    /// pivot_root, old root umount, masks.
    fn steps(self) -> &'static [&'static str] {
        let at = match self {
            Kind::Sandbox => STEPS.iter().position(|s| *s == "sandbox rootfs mount"),
            Kind::App => STEPS.iter().position(|s| *s == "app rootfs mount"),
        };
        &STEPS[at.unwrap_or(0)..at.unwrap_or(0) + 7]
    }

    fn binds(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Sandbox => SANDBOX_BINDS,
            Kind::App => APP_BINDS,
        }
    }
}

impl PodStart {
    /// Makes the image and takes the thread's namespaces; `dir` is the
    /// thread's own directory on the sandbox's scratch tmpfs, `cgroup` a
    /// cgroup path named for the guardian (the pod's; its containers' are
    /// beside it, `-sandbox` and `-app`), `None` where the guardian could
    /// not start (the cgroup steps are then left out, and the steps say
    /// so). Call it in the victim's thread, after
    /// [`super::victim::own_mount_namespace`].
    pub(crate) fn prepare(dir: PathBuf, cgroup: Option<PathBuf>) -> Result<PodStart> {
        let image = dir.join("image");
        for d in IMAGE_DIRS {
            mkdirs(&image.join(d))?;
        }
        for f in IMAGE_FILES {
            write(&image.join(f), "")?;
        }
        let cgroup2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        let base = Base { mnt: ns("mnt")?, net: ns("net")?, uts: ns("uts")?, ipc: ns("ipc")?, pid: ns("pid")? };
        let me = std::env::current_exe().context("the path of this binary")?;
        let exe = if me.exists() {
            me
        } else {
            // What is bound does not change what the mount waits for.
            let stand_in = image.join("runc");
            write(&stand_in, "runc")?;
            stand_in
        };
        Ok(PodStart { dir, image, cgroup, cgroup2, base, exe, prev: None, n: 0 })
    }

    /// Tears the previous pod down and starts the next, each step timed
    /// into `steps`.
    pub(crate) fn call(&mut self, steps: &mut Vec<Step>) -> Result<()> {
        if let Some(p) = self.prev.take() {
            teardown(p, steps)?;
        }
        self.n += 1;
        let pod = self.start(steps)?;
        self.prev = Some(pod);
        Ok(())
    }

    fn start(&mut self, steps: &mut Vec<Step>) -> Result<Pod> {
        let dir = self.dir.join(format!("pod-{}", self.n));
        mkdirs(&dir)?;
        let pod_cg = self.cgroup.clone();
        let cg = |s: &str| pod_cg.as_ref().map(|p| PathBuf::from(format!("{}-{s}", p.display())));
        let cgroups: Vec<PathBuf> = [cg("app"), cg("sandbox"), pod_cg.clone()].into_iter().flatten().collect();
        // A call that failed after its mkdir left its cgroups (empty: no
        // task joins them): the same names are made again below.
        for c in &cgroups {
            match std::fs::remove_dir(c) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("rmdir {} (left by a failed call)", c.display()));
                }
                _ => {}
            }
        }
        if let Some(pod_cg) = &pod_cg {
            step(steps, "cgroup mkdir", || {
                std::fs::create_dir(pod_cg).with_context(|| format!("mkdir {}", pod_cg.display()))
            })?;
        }
        // containerd pins the pod's network namespace on a file (a bind
        // mount of it) before the sandbox starts.
        let pin = dir.join("netns");
        step(steps, "netns", || {
            write(&pin, "")?;
            unshare(CloneFlags::CLONE_NEWNET).context("unshare(CLONE_NEWNET)")?;
            let r = mnt("/proc/thread-self/ns/net", &pin, None, MsFlags::MS_BIND, None);
            setns(&self.base.net, CloneFlags::CLONE_NEWNET).context("setns back to the node's network")?;
            r
        })?;
        step(steps, "shm mount", || {
            let shm = dir.join("shm");
            mkdirs(&shm)?;
            let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
            mnt("shm", &shm, Some("tmpfs"), flags, Some("mode=1777,size=65536k"))
        })?;
        // The kubelet's projected service-account volume: a tmpfs of the
        // pod's, its token files written in.
        step(steps, "volume mount", || {
            let v = dir.join("volume");
            mkdirs(&v)?;
            mnt("tmpfs", &v, Some("tmpfs"), MsFlags::empty(), Some("size=1m"))?;
            for f in ["token", "ca.crt", "namespace"] {
                write(&v.join(f), "dentrylab")?;
            }
            Ok(())
        })?;
        for (f, what) in [("etc-hosts", "127.0.0.1 localhost\n"), ("hostname", "pod\n"), ("resolv.conf", "")] {
            write(&dir.join(f), what)?;
        }
        write(&dir.join("termination-log"), "")?;
        let sandbox = self.container(Kind::Sandbox, &dir, &pin, cg("sandbox").as_deref(), None, steps)?;
        let app = self.container(Kind::App, &dir, &pin, cg("app").as_deref(), Some(&sandbox), steps)?;
        Ok(Pod { dir, sandbox, app, cgroups })
    }

    fn container(
        &self,
        kind: Kind,
        pod: &Path,
        pin: &Path,
        cgroup: Option<&Path>,
        sandbox: Option<&Container>,
        steps: &mut Vec<Step>,
    ) -> Result<Container> {
        let names = kind.steps();
        let c = pod.join(kind.name());
        let rootfs = c.join("rootfs");
        step(steps, names[0], || {
            let (upper, work) = (c.join("upper"), c.join("work"));
            for d in [&upper, &work, &rootfs] {
                mkdirs(d)?;
            }
            let layers = super::overlay::Layers { lower: self.image.clone(), upper, work };
            let options = super::overlay::options(&layers)?;
            mnt("overlay", &rootfs, Some("overlay"), MsFlags::empty(), Some(options.as_str()))
        })?;
        // runc (1.1) runs its init from a read-only bind of its own binary
        // (`/proc/self/exe`), detached once the init has it open. Here the
        // binary's path (or its stand-in): the magic link resolves to a mount of the
        // namespace dentrylab was started in, which a bind from this
        // thread's own namespace may not take (EINVAL).
        step(steps, names[1], || {
            let exe = c.join("runc.exe");
            write(&exe, "")?;
            mnt(path_str(&self.exe)?, &exe, None, MsFlags::MS_BIND, None)?;
            let ro = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
            mnt("", &exe, None, ro, None)?;
            umnt(&exe, MntFlags::MNT_DETACH)
        })?;
        // runc's init: the pod's network (and for the app, the sandbox's
        // uts and ipc), new mount and pid namespaces, its cgroup.
        step(steps, names[2], || {
            if let Some(cgroup) = cgroup {
                std::fs::create_dir(cgroup).with_context(|| format!("mkdir {}", cgroup.display()))?;
            }
            let pinned = File::open(pin).with_context(|| format!("cannot open {}", pin.display()))?;
            setns(&pinned, CloneFlags::CLONE_NEWNET).context("setns(CLONE_NEWNET) into the pod's network")?;
            match sandbox {
                None => unshare(
                    CloneFlags::CLONE_NEWNS
                        | CloneFlags::CLONE_NEWUTS
                        | CloneFlags::CLONE_NEWIPC
                        | CloneFlags::CLONE_NEWPID,
                )
                .context("unshare(CLONE_NEWNS|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWPID)"),
                Some(s) => {
                    setns(&s.held[1], CloneFlags::CLONE_NEWUTS).context("setns(CLONE_NEWUTS) into the sandbox's")?;
                    setns(&s.held[2], CloneFlags::CLONE_NEWIPC).context("setns(CLONE_NEWIPC) into the sandbox's")?;
                    unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
                        .context("unshare(CLONE_NEWNS|CLONE_NEWPID)")
                }
            }
        })?;
        let r = self.init(kind, &rootfs, pod, steps);
        // Back to the node's namespaces whatever happened (the container's
        // stay held by its files).
        let held = r.and_then(|()| Ok(vec![ns("mnt")?, ns("uts")?, ns("ipc")?]));
        let back = self.back();
        let held = held?;
        back?;
        Ok(Container { rootfs, held })
    }

    /// runc's init in the container's mount namespace: its mounts, the
    /// pivot into the rootfs, the old root's detach, its masks.
    fn init(&self, kind: Kind, rootfs: &Path, pod: &Path, steps: &mut Vec<Step>) -> Result<()> {
        let names = kind.steps();
        step(steps, names[3], || {
            mnt("", Path::new("/"), None, MsFlags::MS_SLAVE | MsFlags::MS_REC, None)?;
            mnt(path_str(rootfs)?, rootfs, None, MsFlags::MS_BIND | MsFlags::MS_REC, None)?;
            for &(src, target, fstype, flags, data) in RUNTIME_MOUNTS {
                if fstype == "cgroup2" && !self.cgroup2 {
                    continue;
                }
                let t = rootfs.join(target);
                mkdirs(&t)?;
                let data = (!data.is_empty()).then_some(data);
                mnt(src, &t, Some(fstype), MsFlags::from_bits_truncate(flags), data)?;
            }
            for &(src, target) in kind.binds() {
                let (s, t) = (pod.join(src), rootfs.join(target));
                if s.is_dir() {
                    mkdirs(&t)?;
                } else if !t.exists() {
                    write(&t, "")?;
                }
                mnt(path_str(&s)?, &t, None, MsFlags::MS_BIND | MsFlags::MS_REC, None)?;
            }
            devices(&rootfs.join("dev"))
        })?;
        step(steps, names[4], || {
            let old = File::open("/").context("cannot open /")?;
            nix::unistd::chdir(rootfs).with_context(|| format!("chdir {}", rootfs.display()))?;
            nix::unistd::pivot_root(".", ".").context("pivot_root(., .)")?;
            nix::unistd::fchdir(&old).context("fchdir to the old root")
        })?;
        step(steps, names[5], || {
            mnt("", Path::new("."), None, MsFlags::MS_SLAVE | MsFlags::MS_REC, None)?;
            umnt(Path::new("."), MntFlags::MNT_DETACH)?;
            nix::unistd::chdir("/").context("chdir /")
        })?;
        step(steps, names[6], masks)
    }

    /// The victim's thread back in the node's namespaces.
    fn back(&self) -> Result<()> {
        let b = &self.base;
        setns(&b.mnt, CloneFlags::CLONE_NEWNS).context("pod-start: setns back to the node's mount namespace")?;
        for (fd, f) in [
            (&b.net, CloneFlags::CLONE_NEWNET),
            (&b.uts, CloneFlags::CLONE_NEWUTS),
            (&b.ipc, CloneFlags::CLONE_NEWIPC),
            (&b.pid, CloneFlags::CLONE_NEWPID),
        ] {
            setns(fd, f).with_context(|| format!("pod-start: setns back to the node's namespace ({f:?})"))?;
        }
        Ok(())
    }
}

impl Drop for PodStart {
    /// The last pod goes with the victim (its cgroups too, which would
    /// otherwise stand in the next repetition's way).
    fn drop(&mut self) {
        if let Some(p) = self.prev.take() {
            let _ = teardown(p, &mut Vec::new());
        }
    }
}

fn path_str(p: &Path) -> Result<&str> {
    p.to_str().with_context(|| format!("{} is not UTF-8", p.display()))
}

/// The device nodes and links runc makes in a container's /dev.
fn devices(dev: &Path) -> Result<()> {
    use nix::sys::stat::{Mode, SFlag, makedev, mknod};
    for (name, major, minor) in
        [("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9), ("tty", 5, 0)]
    {
        let p = dev.join(name);
        mknod(&p, SFlag::S_IFCHR, Mode::from_bits_truncate(0o666), makedev(major, minor))
            .with_context(|| format!("mknod {}", p.display()))?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
        ("core", "/proc/kcore"),
    ] {
        let p = dev.join(link);
        std::os::unix::fs::symlink(to, &p).with_context(|| format!("symlink {}", p.display()))?;
    }
    Ok(())
}

/// runc's masked and read-only paths, in the pivoted root.
fn masks() -> Result<()> {
    for p in MASKED.iter().map(|p| Path::new("/").join(p)) {
        match std::fs::metadata(&p) {
            Err(_) => continue,
            Ok(m) if m.is_dir() => mnt("tmpfs", &p, Some("tmpfs"), MsFlags::MS_RDONLY, None)?,
            Ok(_) => mnt("/dev/null", &p, None, MsFlags::MS_BIND, None)?,
        }
    }
    for p in READONLY.iter().map(|p| Path::new("/").join(p)) {
        if !p.exists() {
            continue;
        }
        let s = path_str(&p)?;
        mnt(s, &p, None, MsFlags::MS_BIND | MsFlags::MS_REC, None)?;
        let ro = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_REC;
        mnt(s, &p, None, ro, None)?;
    }
    Ok(())
}

/// The previous pod's teardown, as the kubelet and containerd do it when
/// a pod is deleted: each container's process exits (its mount namespace
/// goes), the shim unmounts its rootfs; the sandbox likewise; the kubelet
/// unmounts the pod's volume, containerd its shm and pinned network
/// namespace; the cgroups go.
fn teardown(p: Pod, steps: &mut Vec<Step>) -> Result<()> {
    let Pod { dir, sandbox, app, cgroups } = p;
    step(steps, "app exit", || {
        drop(app.held);
        Ok(())
    })?;
    step(steps, "app rootfs umount", || umnt(&app.rootfs, MntFlags::empty()))?;
    step(steps, "sandbox exit", || {
        drop(sandbox.held);
        Ok(())
    })?;
    step(steps, "sandbox rootfs umount", || umnt(&sandbox.rootfs, MntFlags::empty()))?;
    step(steps, "volume umount", || umnt(&dir.join("volume"), MntFlags::empty()))?;
    step(steps, "shm umount", || umnt(&dir.join("shm"), MntFlags::empty()))?;
    step(steps, "netns removal", || umnt(&dir.join("netns"), MntFlags::MNT_DETACH))?;
    if !cgroups.is_empty() {
        step(steps, "cgroup rmdir", || {
            for c in &cgroups {
                std::fs::remove_dir(c).with_context(|| format!("rmdir {}", c.display()))?;
            }
            Ok(())
        })?;
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("pod-start: cannot remove {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_container_has_its_six_steps_and_every_step_one_name() {
        for (k, name) in [(Kind::Sandbox, "sandbox"), (Kind::App, "app")] {
            let s = k.steps();
            assert_eq!(s.len(), 7);
            assert!(s.iter().all(|n| n.starts_with(name)), "{s:?}");
            assert!(s[4].ends_with("pivot_root") && s[5].ends_with("old root umount"), "{s:?}");
        }
        let mut names = STEPS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STEPS.len());
    }
}
