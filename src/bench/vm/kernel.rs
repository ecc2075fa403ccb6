//! The kernels a `vm` run boots: a Debian package (fetched with apt into
//! a private package list under the state directory, the host's apt
//! configuration untouched, unpacked with dpkg-deb and cached), a kernel
//! image on disk (with an optional modules directory), or `host`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::error::UsageError;
use crate::sys;

/// One `--kernel` value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Spec {
    /// A Debian package name (`linux-image-…`), or a metapackage naming one.
    Package(String),
    /// `IMAGE[:MODULES_DIR]`.
    Path { image: PathBuf, modules: Option<PathBuf> },
    /// The same command, natively.
    Host,
    /// A kernel `vm --kernel-source` built (never parsed from `--kernel`).
    Built(Box<BuiltKernel>),
}

impl Spec {
    pub(crate) fn parse(s: &str) -> Result<Spec, String> {
        let s = s.trim();
        if s == "host" {
            return Ok(Spec::Host);
        }
        if s.contains('/') {
            let (image, modules) = match s.split_once(':') {
                Some((i, m)) => (PathBuf::from(i), Some(PathBuf::from(m))),
                None => (PathBuf::from(s), None),
            };
            return Ok(Spec::Path { image, modules });
        }
        if s.starts_with("linux-image-") && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.~_".contains(c)) {
            return Ok(Spec::Package(s.to_string()));
        }
        Err(format!(
            "`{s}` is neither a Debian kernel package (linux-image-…, e.g. linux-image-cloud-amd64), a path to a \
             kernel image (IMAGE[:MODULES_DIR], with a /), nor `host`"
        ))
    }

    /// As the matrix names it.
    pub(crate) fn label(&self) -> String {
        match self {
            Spec::Package(p) => p.clone(),
            Spec::Path { image, modules: Some(m) } => format!("{}:{}", image.display(), m.display()),
            Spec::Path { image, modules: None } => image.display().to_string(),
            Spec::Host => "host".into(),
            Spec::Built(b) => b.label.clone(),
        }
    }
}

/// A kernel built here (`vm --kernel-source`): how rows name it, the
/// kernel, and what it was built from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BuiltKernel {
    pub label: String,
    pub kernel: Kernel,
    pub tag: BuildTag,
}

/// What a row's kernel was built from (`vm --kernel-source`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct BuildTag {
    /// The source's identity (package and version, tarball hash, directory).
    pub source: String,
    /// The build's cache key.
    pub key: String,
    /// The patches' file names, in order; empty for the baseline.
    pub patches: Vec<String>,
}

/// A kernel ready to boot.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Kernel {
    pub image: PathBuf,
    /// `lib/modules/<release>` (with modules.dep), if any.
    pub modules: Option<PathBuf>,
    /// From the modules directory's name; the guest's `uname -r` wins.
    pub release: Option<String>,
    /// The build's `.config`, if it came with one.
    pub config: Option<String>,
}

/// The preemption models a kernel build offers, from its `.config`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Models {
    /// PREEMPT_DYNAMIC: chosen at boot with `preempt=`; `default` is the
    /// build's choice.
    Dynamic { offered: Vec<String>, default: String },
    /// Fixed at build time (PREEMPT_RT, or a build without PREEMPT_DYNAMIC).
    Fixed(String),
}

impl Models {
    /// From a `.config` (the names `preempt=` takes, kernel/sched/core.c
    /// `sched_dynamic_mode()`; `lazy` needs CONFIG_ARCH_HAS_PREEMPT_LAZY).
    pub(crate) fn of_config(config: &str) -> Option<Models> {
        let on = |k: &str| config.lines().any(|l| l.trim() == format!("{k}=y"));
        let default = [
            ("CONFIG_PREEMPT_RT", "rt"),
            ("CONFIG_PREEMPT_LAZY", "lazy"),
            ("CONFIG_PREEMPT_NONE", "none"),
            ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
            ("CONFIG_PREEMPT", "full"),
        ]
        .iter()
        .find(|(k, _)| on(k))
        .map(|(_, m)| m.to_string())?;
        if default == "rt" || !on("CONFIG_PREEMPT_DYNAMIC") {
            return Some(Models::Fixed(default));
        }
        // A model whose Kconfig choice is hidden (7.x on x86: PREEMPT_NONE
        // depends on ARCH_NO_PREEMPT, PREEMPT_VOLUNTARY on
        // !ARCH_HAS_PREEMPT_LAZY) is absent from the .config, and
        // `sched_dynamic_mode()` does not take it either.
        let shown =
            |k: &str| config.lines().any(|l| l.trim() == format!("{k}=y") || l.trim() == format!("# {k} is not set"));
        let mut offered: Vec<String> = [("CONFIG_PREEMPT_NONE", "none"), ("CONFIG_PREEMPT_VOLUNTARY", "voluntary")]
            .iter()
            .filter(|(k, _)| shown(k))
            .map(|(_, m)| m.to_string())
            .collect();
        offered.push("full".into());
        if on("CONFIG_ARCH_HAS_PREEMPT_LAZY") {
            offered.push("lazy".into());
        }
        Some(Models::Dynamic { offered, default })
    }
}

/// Where kernels and apt's private lists live: `<state>/vm`.
pub(crate) struct Cache {
    pub dir: PathBuf,
}

/// Debian releases whose kernels can be named (each with -updates,
/// -backports and -security), besides the host's own sources.
const SUITES: [&str; 2] = ["bookworm", "trixie"];
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

impl Cache {
    pub(crate) fn new(state_dir: &Path) -> Cache {
        Cache { dir: state_dir.join("vm") }
    }

    fn apt_dir(&self) -> PathBuf {
        self.dir.join("apt")
    }

    fn kernels_dir(&self) -> PathBuf {
        self.dir.join("kernels")
    }

    /// The partial directory this process unpacks into: removed by the
    /// guardian if dentrylab dies mid-way.
    pub(crate) fn partial_dir(&self) -> PathBuf {
        self.kernels_dir().join(format!(".partial-{}", std::process::id()))
    }

    /// The kernel for `spec`, fetched and unpacked on first use.
    pub(crate) fn resolve(&self, spec: &Spec, announce: &dyn Fn(&str)) -> Result<Kernel> {
        match spec {
            Spec::Host => anyhow::bail!("the host row boots no kernel"),
            Spec::Path { image, modules } => from_path(image, modules.as_deref()),
            Spec::Package(p) => self.package(p, announce),
            Spec::Built(b) => Ok(b.kernel.clone()),
        }
    }

    fn package(&self, name: &str, announce: &dyn Fn(&str)) -> Result<Kernel> {
        let dir = self.kernels_dir().join(name);
        if !dir.join("boot").is_dir() {
            self.fetch(name, &dir, announce)?;
        }
        unpacked(&dir)
            .with_context(|| format!("the cached kernel {} is damaged: remove it and run again", dir.display()))
    }

    /// Downloads `name` (following a metapackage to the image it depends
    /// on, and a split package to its binary and modules), unpacks it, makes modules.dep with depmod, and moves it into
    /// the cache in one rename.
    fn fetch(&self, name: &str, dir: &Path, announce: &dyn Fn(&str)) -> Result<()> {
        let fix = "check the package name (apt-cache search linux-image) and the network, or give a kernel image path";
        let partial = self.partial_dir();
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir_all(&partial).with_context(|| format!("cannot create {}", partial.display()))?;
        let mut pkg = name.to_string();
        let mut debs: Vec<PathBuf> = Vec::new();
        for _ in 0..3 {
            announce(&format!("fetching {pkg} with apt (private lists under {})", self.apt_dir().display()));
            let d = self.download(&pkg, &partial.join(&pkg)).with_context(|| format!("kernel {name}: {fix}"))?;
            let deps = dpkg_field(&d, "Depends")?;
            let deps: Vec<String> =
                deps.split([',', '|']).filter_map(|d| d.split_whitespace().next()).map(str::to_string).collect();
            if unpack_has_image(&d)? {
                debs.push(d);
                break;
            }
            // Debian's 7.x packages are split: linux-image-R depends on
            // linux-binary-R (usr/lib/modules/R/vmlinuz), linux-modules-R
            // (the modules) and linux-base-R (config, System.map).
            let split = ["linux-binary-", "linux-modules-", "linux-base-"];
            let parts: Vec<&String> = deps.iter().filter(|d| split.iter().any(|p| d.starts_with(p))).collect();
            if parts.iter().any(|p| p.starts_with("linux-binary-")) {
                for p in parts {
                    announce(&format!("fetching {p} with apt"));
                    match self.download(p, &partial.join(p)) {
                        Ok(d) => debs.push(d),
                        // 6.19.x to 7.1.x: the archive's index still has the
                        // signed image (linux-binary-R) but no longer the
                        // modules and base packages; the image boots alone.
                        Err(e) if !p.starts_with("linux-binary-") => announce(&format!(
                            "{p} cannot be fetched ({}): {name} boots without it (no modules beyond the \
                             built-in ones, no config: its preemption models are read in the guest)",
                            format!("{e:#}").lines().next().unwrap_or("")
                        )),
                        Err(e) => return Err(e).with_context(|| format!("kernel {name}: {fix}")),
                    }
                }
                break;
            }
            match deps.iter().find(|d| d.starts_with("linux-image-")) {
                Some(next) => pkg = next.clone(),
                None => break,
            }
        }
        let mut with_image = false;
        for d in &debs {
            with_image |= unpack_has_image(d)?;
        }
        if !with_image {
            anyhow::bail!("kernel {name}: no package with a kernel image found (last tried {pkg}); {fix}");
        }
        let root = partial.join("root");
        for deb in &debs {
            run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&root), "dpkg-deb -x")
                .with_context(|| format!("kernel {name}: cannot unpack {}", deb.display()))?;
        }
        // Debian 13 ships modules under usr/lib/modules (merged /usr).
        let usr = root.join("usr/lib/modules");
        if usr.is_dir() && !root.join("lib/modules").exists() {
            std::fs::create_dir_all(root.join("lib"))?;
            std::fs::rename(&usr, root.join("lib/modules"))?;
        }
        if let Some(rel) = only_entry(&root.join("lib/modules"))? {
            boot_from_split(&root, &rel)?;
            run(Command::new("depmod").arg("-b").arg(&root).arg(&rel), "depmod")
                .with_context(|| format!("kernel {name}: depmod (kmod) could not index its modules"))?;
        }
        std::fs::create_dir_all(dir.parent().context("cache dir")?)?;
        if let Err(e) = std::fs::rename(&root, dir) {
            // Another dentrylab fetched the same kernel meanwhile: use its copy.
            if !dir.join("boot").is_dir() {
                return Err(e).with_context(|| format!("cannot move the kernel into {}", dir.display()));
            }
        }
        let _ = std::fs::remove_dir_all(&partial);
        Ok(())
    }

    /// `apt-get download` with private lists; updates them once when the
    /// package is not known yet.
    pub(crate) fn download(&self, pkg: &str, into: &Path) -> Result<PathBuf> {
        std::fs::create_dir_all(into).with_context(|| format!("cannot create {}", into.display()))?;
        let opts = self.apt_options()?;
        let get = |what: &str| {
            let mut c = Command::new("apt-get");
            c.args(&opts).arg("-q").arg(what);
            c
        };
        let try_download = || -> Result<()> {
            let mut c = get("download");
            c.arg(pkg).current_dir(into);
            run(&mut c, "apt-get download")
        };
        if try_download().is_err() {
            run(&mut get("update"), "apt-get update")?;
            try_download()?;
        }
        std::fs::read_dir(into)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|e| e == "deb"))
            .with_context(|| format!("apt-get download {pkg} left no .deb"))
    }

    /// apt options pointing every list, cache and source at our directory.
    fn apt_options(&self) -> Result<Vec<String>> {
        let apt = self.apt_dir();
        for d in ["lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(apt.join(d)).with_context(|| format!("cannot create {}", apt.join(d).display()))?;
        }
        let sources = apt.join("sources.list");
        let (main, security) = host_mirrors()?;
        let mut text = String::new();
        for s in SUITES {
            text += &format!("deb [signed-by={KEYRING}] {main} {s} main\n");
            text += &format!("deb [signed-by={KEYRING}] {main} {s}-updates main\n");
            text += &format!("deb [signed-by={KEYRING}] {main} {s}-backports main\n");
            text += &format!("deb [signed-by={KEYRING}] {security} {s}-security main\n");
        }
        crate::output::write_atomic(&sources, &text)?;
        let o = |k: &str, v: &Path| format!("-o{k}={}", v.display());
        Ok(vec![
            o("Dir::Etc::SourceList", &sources),
            o("Dir::Etc::SourceParts", &apt.join("sources.list.d")),
            o("Dir::State::Lists", &apt.join("lists")),
            o("Dir::Cache", &apt.join("cache")),
            "-oDebug::NoLocking=1".into(),
            "-oAPT::Sandbox::User=root".into(),
        ])
    }
}

/// The Debian archive and security mirrors the host's apt uses (deb822
/// `.sources` or one-line `sources.list`).
fn host_mirrors() -> Result<(String, String)> {
    let mut uris = Vec::new();
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "sources" || e == "list")),
        );
    }
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        for l in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
            if let Some(u) = l.strip_prefix("URIs:") {
                uris.extend(u.split_whitespace().map(str::to_string));
            } else if l.starts_with("deb ") {
                uris.extend(l.split_whitespace().skip(1).find(|w| w.contains("://")).map(str::to_string));
            }
        }
    }
    let debian: Vec<&String> = uris.iter().filter(|u| u.contains("debian")).collect();
    let security = debian.iter().find(|u| u.contains("security")).map(|s| s.trim_end_matches('/').to_string());
    let main = debian.iter().find(|u| !u.contains("security")).map(|s| s.trim_end_matches('/').to_string());
    match (main, security) {
        (Some(m), Some(s)) => Ok((m, s)),
        _ => anyhow::bail!(
            "no Debian archive and security mirror found in /etc/apt's sources: Debian kernel packages can only be \
             fetched on a Debian host; give a kernel image path instead"
        ),
    }
}

pub(crate) fn dpkg_field(deb: &Path, field: &str) -> Result<String> {
    let out = Command::new("dpkg-deb").arg("-f").arg(deb).arg(field).output().context("cannot run dpkg-deb")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn unpack_has_image(deb: &Path) -> Result<bool> {
    let out = Command::new("dpkg-deb").arg("-c").arg(deb).output().context("cannot run dpkg-deb")?;
    let image = |l: &str| l.contains("/boot/vmlinuz-") || (l.contains("/lib/modules/") && l.ends_with("/vmlinuz"));
    Ok(String::from_utf8_lossy(&out.stdout).lines().any(image))
}

/// A split package keeps its image and config beside the modules
/// (lib/modules/R/vmlinuz, …/config): give them the classic places,
/// boot/vmlinuz-R and boot/config-R.
fn boot_from_split(root: &Path, release: &str) -> Result<()> {
    let dir = root.join("lib/modules").join(release);
    if !dir.join("vmlinuz").is_file() || root.join("boot").is_dir() {
        return Ok(());
    }
    let boot = root.join("boot");
    std::fs::create_dir_all(&boot)?;
    std::fs::rename(dir.join("vmlinuz"), boot.join(format!("vmlinuz-{release}")))?;
    if dir.join("config").is_file() {
        std::fs::copy(dir.join("config"), boot.join(format!("config-{release}")))?;
    }
    Ok(())
}

fn only_entry(dir: &Path) -> Result<Option<String>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut names: Vec<String> =
        std::fs::read_dir(dir)?.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    Ok(names.pop())
}

/// Runs a helper tool tied to this process; the error carries its stderr.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = sys::spawn_tied(cmd).with_context(|| format!("cannot run {what}"))?;
    let err = sys::child_stderr(&mut child);
    let status = child.wait()?;
    if !status.success() {
        let last = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        anyhow::bail!("{what} failed ({status}): {last}");
    }
    Ok(())
}

/// A cached, unpacked package.
fn unpacked(dir: &Path) -> Result<Kernel> {
    let boot = dir.join("boot");
    let image = std::fs::read_dir(&boot)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-")))
        .with_context(|| format!("no vmlinuz-* in {}", boot.display()))?;
    let release = only_entry(&dir.join("lib/modules"))?;
    let modules = release.as_ref().map(|r| dir.join("lib/modules").join(r));
    let config = release.as_ref().and_then(|r| std::fs::read_to_string(boot.join(format!("config-{r}"))).ok());
    Ok(Kernel { image, modules, release, config })
}

fn from_path(image: &Path, modules: Option<&Path>) -> Result<Kernel> {
    if !image.is_file() {
        return Err(UsageError(format!("--kernel {}: no such kernel image", image.display())).into());
    }
    if let Some(m) = modules
        && !m.join("modules.dep").is_file()
    {
        return Err(UsageError(format!(
            "--kernel {}:{}: the modules directory has no modules.dep (run depmod for it, or leave it out)",
            image.display(),
            m.display()
        ))
        .into());
    }
    let release = modules.and_then(|m| m.file_name()).map(|n| n.to_string_lossy().into_owned());
    // A build's config beside its image: /boot/vmlinuz-R and /boot/config-R.
    let config = image
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .and_then(|r| std::fs::read_to_string(image.with_file_name(format!("config-{r}"))).ok());
    Ok(Kernel { image: image.to_path_buf(), modules: modules.map(Path::to_path_buf), release, config })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_are_refused() {
        assert_eq!(Spec::parse("host"), Ok(Spec::Host));
        assert_eq!(Spec::parse("linux-image-cloud-amd64"), Ok(Spec::Package("linux-image-cloud-amd64".into())));
        assert_eq!(
            Spec::parse("/boot/vmlinuz-6.1:/lib/modules/6.1"),
            Ok(Spec::Path { image: "/boot/vmlinuz-6.1".into(), modules: Some("/lib/modules/6.1".into()) })
        );
        assert!(Spec::parse("6.12-rt").is_err());
        assert!(Spec::parse("linux-image-x;rm").is_err());
    }

    #[test]
    fn models_from_config() {
        // 6.12 (Debian): none and voluntary visible in the choice.
        let dynamic = "# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n\
                       # CONFIG_PREEMPT_RT is not set\n";
        assert_eq!(
            Models::of_config(dynamic),
            Some(Models::Dynamic {
                offered: vec!["none".into(), "voluntary".into(), "full".into()],
                default: "voluntary".into()
            })
        );
        let lazy = format!("{dynamic}CONFIG_ARCH_HAS_PREEMPT_LAZY=y\n");
        assert!(matches!(Models::of_config(&lazy), Some(Models::Dynamic { offered, .. }) if offered.len() == 4));
        assert_eq!(
            Models::of_config("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=y\n"),
            Some(Models::Fixed("rt".into()))
        );
        assert_eq!(Models::of_config("CONFIG_PREEMPT_NONE=y\n"), Some(Models::Fixed("none".into())));
        // 7.3 (Debian): only full and lazy in the choice; none and voluntary are not offered.
        let seven = "# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_LAZY=y\nCONFIG_ARCH_HAS_PREEMPT_LAZY=y\n\
                     CONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(
            Models::of_config(seven),
            Some(Models::Dynamic { offered: vec!["full".into(), "lazy".into()], default: "lazy".into() })
        );
        assert_eq!(Models::of_config(""), None);
    }
}
