//! Kernels built here from source (`vm --kernel-source`): Debian's
//! `linux-source-X` package (fetched with the same private apt lists as
//! the kernel packages, [`super::kernel::Cache`]), a source tarball or a
//! source directory; `--patch` files applied in order with `patch -p1`;
//! configured from `make allnoconfig` plus the project's fragment
//! (`bench/kernel-patches/guest.config`, built into the binary) and any
//! `--kernel-config` fragments, then `make olddefconfig`; `make bzImage`.
//! Each build is cached under `STATE/vm/built/KEY`, KEY a hash of the
//! source's identity, the patches' contents and the configuration lines;
//! the tree is built in the run's partial directory, which the guardian
//! removes however dentrylab ends, and every tool runs in a process group
//! of its own that the guardian kills ([`crate::sys::group`]): a killed
//! run leaves no sub-make or compiler behind. The baseline of an A/B is the
//! same source and configuration without the patches: both are built, the
//! baseline in the patched kernel's tree with the patches reversed (make
//! rebuilds only what they touched). Where the source comes from and
//! its identity: [`tree`]; the configuration: [`config`]; the tools
//! (`patch`, `make`): [`tools`]; the selftests: [`selftests`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::kernel::{BuildTag, BuiltKernel, Cache, Kernel, Spec};
use crate::error::UsageError;
use crate::sys::guardian::Guardian;
use config::Setting;
use tools::{apply, make, release, reverse};
use tree::{Tree, source_tree};

mod config;
mod diagnose;
mod selftests;
mod tools;
mod tree;

pub(crate) use selftests::check_target as check_selftest_target;

/// The project's guest configuration fragment.
pub(crate) const GUEST_CONFIG: &str = include_str!("../../../../bench/kernel-patches/guest.config");
const GUEST_CONFIG_NAME: &str = "bench/kernel-patches/guest.config";
/// The `make` target the fragments are merged onto: every option with a
/// prompt off, so that the fragment is the whole list of what the guest has.
const BASE_TARGET: &str = "allnoconfig";
/// What a build leaves in the cache beside `boot/`.
const BUILD_FILE: &str = "build.json";
const BUILD_SCHEMA: &str = "dentrylab.vm-build/1";
/// `vm --build-only --json`'s schema: the kernels built.
pub(crate) const BUILT_SCHEMA: &str = "dentrylab.vm-built/1";
/// Where `make bzImage` leaves the image (x86).
const IMAGE: &str = "arch/x86/boot/bzImage";

/// One `--kernel-source` value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// A Debian package, `linux-source-X`.
    Package(String),
    /// A source tarball (`.tar`, `.tar.xz`, `.tar.gz`, `.tar.bz2`, `.tgz`).
    Tarball(PathBuf),
    /// A source tree on disk: copied, never changed.
    Dir(PathBuf),
}

impl Source {
    pub(crate) fn parse(s: &str) -> Result<Source, String> {
        let s = s.trim();
        if s.contains('/') {
            let tar = [".tar", ".tar.xz", ".tar.gz", ".tar.bz2", ".tgz"].iter().any(|e| s.ends_with(e));
            return Ok(if tar { Source::Tarball(s.into()) } else { Source::Dir(s.into()) });
        }
        if s.starts_with("linux-source-") && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.~_".contains(c)) {
            return Ok(Source::Package(s.to_string()));
        }
        Err(format!(
            "`{s}` is neither a Debian source package (linux-source-X, e.g. linux-source-7.3), a source tarball \
             nor a source directory (a path, with a /)"
        ))
    }
}

/// What to build: the source, the patches of the patched kernel, extra
/// configuration fragments.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub source: Source,
    pub patches: Vec<PathBuf>,
    pub fragments: Vec<PathBuf>,
    pub jobs: u32,
    /// Keep each build's log here (`build-KEY.log`), failed builds' too.
    pub logs: Option<PathBuf>,
    /// Kernel selftest targets (`tools/testing/selftests/TARGET`) to build
    /// from the same source, patches applied, and run in every guest.
    pub selftests: Vec<String>,
}

/// What [`prepare`] made ready: the kernels, `[unpatched, patched]`, and
/// the selftests' install when the request names targets.
pub(crate) struct Prepared {
    pub kernels: Vec<Built>,
    pub selftests: Option<PathBuf>,
}

/// A built kernel, ready to boot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Built {
    pub label: String,
    /// The source's identity (what the key hashes).
    pub source: String,
    pub key: String,
    pub dir: PathBuf,
    pub release: String,
    pub image: PathBuf,
    pub patches: Vec<PatchInfo>,
    /// Found in the cache: not built by this run.
    pub cached: bool,
    pub build_seconds: f64,
    /// Built in the tree of this build (its key) with its patches
    /// reversed: `build_seconds` is the rebuild's.
    pub rebuilt_from: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct PatchInfo {
    pub name: String,
    pub sha256: String,
}

/// The record a build leaves beside its image.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    schema: String,
    label: String,
    source: String,
    patches: Vec<PatchInfo>,
    config_sha256: String,
    release: String,
    jobs: u32,
    build_seconds: f64,
    built_at: String,
    #[serde(default)]
    rebuilt_from: Option<String>,
}

struct Patch {
    path: PathBuf,
    info: PatchInfo,
}

/// Builds (or finds in the cache) the unpatched kernel and, when there
/// are patches, the patched one: `[unpatched, patched]`. The patched one
/// is built first, so that a patch that does not apply stops the run
/// before the baseline's build; the baseline is then built in its tree.
/// `guard` kills the builds' process groups if dentrylab ends.
pub(crate) fn prepare(cache: &Cache, r: &Request, guard: &Guardian, announce: &dyn Fn(&str)) -> Result<Prepared> {
    let patches = read_patches(&r.patches)?;
    let mut config = format!("# {GUEST_CONFIG_NAME}\n{GUEST_CONFIG}");
    let mut settings = config::parse_fragment(GUEST_CONFIG).map_err(|e| anyhow!("{GUEST_CONFIG_NAME}: {e}"))?;
    for f in &r.fragments {
        let bad = |e: String| UsageError(format!("--kernel-config {}: {e}", f.display()));
        let text = std::fs::read_to_string(f).map_err(|e| bad(format!("cannot read it: {e}")))?;
        config += &format!("\n# {}\n{text}", f.display());
        config::overlay(&mut settings, config::parse_fragment(&text).map_err(bad)?);
    }
    require_tools(!patches.is_empty())?;
    let tree = source_tree(cache, &r.source, guard, announce)?;
    let job = Job { tree: &tree, patches: &patches, config: &config, settings: &settings, request: r, guard, announce };
    let mut kept = None;
    let built = both(cache, job, &mut kept);
    if let Some(k) = kept {
        let _ = std::fs::remove_dir_all(k.work);
    }
    let kernels = built?;
    let selftests = match r.selftests.is_empty() {
        true => None,
        false => Some(selftests::build(cache, &tree, &patches, r, guard, announce)?),
    };
    Ok(Prepared { kernels, selftests })
}

/// The patched kernel (if any) and then the baseline, which reuses the
/// patched one's tree when that was built now (`kept`).
fn both<'a>(cache: &Cache, mut job: Job<'a>, kept: &mut Option<Kept<'a>>) -> Result<Vec<Built>> {
    let mut built = Vec::new();
    if !job.patches.is_empty() {
        built.push(job.run(cache, kept)?);
    }
    job.patches = &[];
    built.insert(0, job.run(cache, kept)?);
    Ok(built)
}

/// A tree this run has built, kept for the next build: its directory, the
/// patches applied in it and its build's key.
struct Kept<'a> {
    work: PathBuf,
    applied: &'a [Patch],
    key: String,
}

impl Built {
    /// The build as a kernel to boot, with what a matrix row says of it.
    pub(crate) fn spec(&self) -> Spec {
        let tag = BuildTag {
            source: self.source.clone(),
            key: self.key.clone(),
            patches: self.patches.iter().map(|p| p.name.clone()).collect(),
        };
        Spec::Built(Box::new(BuiltKernel { label: self.label.clone(), kernel: kernel_of(self), tag }))
    }
}

/// The kernel of a cached build.
fn kernel_of(b: &Built) -> Kernel {
    let config = std::fs::read_to_string(b.dir.join("boot").join(format!("config-{}", b.release))).ok();
    Kernel { image: b.image.clone(), modules: None, release: Some(b.release.clone()), config }
}

fn read_patches(paths: &[PathBuf]) -> Result<Vec<Patch>> {
    paths
        .iter()
        .map(|p| {
            let text =
                std::fs::read(p).map_err(|e| UsageError(format!("--patch {}: cannot read it: {e}", p.display())))?;
            let s = String::from_utf8_lossy(&text);
            if !s.lines().any(|l| l.starts_with("+++ ")) || !s.lines().any(|l| l.starts_with("@@ ")) {
                return Err(UsageError(format!(
                    "--patch {}: not a unified diff (no `+++` file line or no `@@` hunk)",
                    p.display()
                ))
                .into());
            }
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(Patch { path: p.clone(), info: PatchInfo { name, sha256: hex(&Sha256::digest(&text)) } })
        })
        .collect()
}

/// The tools every build needs, checked before anything is fetched.
fn require_tools(patching: bool) -> Result<()> {
    let mut need = vec![("make", "make"), ("tar", "tar")];
    if patching {
        need.push(("patch", "patch"));
    }
    for (tool, package) in need {
        if crate::sys::which_or(tool, &[]).is_none() {
            bail!("building a kernel needs {tool} on the PATH (Debian: apt-get install {package})");
        }
    }
    Ok(())
}

/// The cache key: the source, the base target, the configuration lines
/// (after merging: comments do not count) and the patches' contents.
pub(crate) fn key(identity: &str, settings: &[Setting], patches: &[PatchInfo]) -> String {
    let mut h = Sha256::new();
    h.update(format!("{BUILD_SCHEMA}\nsource {identity}\nbase {BASE_TARGET}\n"));
    for s in settings {
        h.update(s.line() + "\n");
    }
    for p in patches {
        h.update(format!("patch {}\n", p.sha256));
    }
    hex(&h.finalize())[..16].to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One kernel to build: the source, its patches (none: the baseline),
/// the configuration, and where to say what happens.
struct Job<'a> {
    tree: &'a Tree,
    patches: &'a [Patch],
    config: &'a str,
    settings: &'a [Setting],
    request: &'a Request,
    guard: &'a Guardian,
    announce: &'a dyn Fn(&str),
}

impl<'a> Job<'a> {
    fn infos(&self) -> Vec<PatchInfo> {
        self.patches.iter().map(|p| p.info.clone()).collect()
    }

    fn label(&self, key: &str) -> String {
        let names: Vec<&str> = self.patches.iter().map(|p| p.info.name.as_str()).collect();
        match names.len() {
            0 => format!("{}, unpatched [{key}]", self.tree.label),
            _ => format!("{} + {} [{key}]", self.tree.label, names.join(" + ")),
        }
    }

    /// The build from the cache, or built now in the partial directory
    /// (in `kept`'s tree when there is one) and moved into the cache in one
    /// rename; its tree is then kept for the next build. On failure
    /// nothing stays (the log, with `--logs`, excepted).
    fn run(&self, cache: &Cache, kept: &mut Option<Kept<'a>>) -> Result<Built> {
        let key = key(&self.tree.identity, self.settings, &self.infos());
        let label = self.label(&key);
        let dir = cache.dir.join("built").join(&key);
        if let Some(b) = cached(&dir, &key)? {
            (self.announce)(&format!("{label}: built before, from the cache ({})", dir.display()));
            return Ok(b);
        }
        let reuse = kept.take();
        let work = match &reuse {
            Some(k) => k.work.clone(),
            None => {
                let work = cache.partial_dir().join(format!("build-{key}"));
                let _ = std::fs::remove_dir_all(&work);
                work
            }
        };
        let src = work.join("src");
        std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
        let log = work.join(format!("build-{key}.log"));
        let rebuilt_from = reuse.as_ref().map(|k| k.key.clone());
        let result = self.build_in(&src, &log, &key, &label, reuse.as_ref()).and_then(|(release, seconds)| {
            self.stage(
                &src,
                &work.join(format!("out-{key}")),
                &dir,
                Record {
                    schema: BUILD_SCHEMA.into(),
                    label: label.clone(),
                    source: self.tree.identity.clone(),
                    patches: self.infos(),
                    config_sha256: hex(&Sha256::digest(self.config.as_bytes())),
                    release,
                    jobs: self.request.jobs,
                    build_seconds: seconds,
                    built_at: crate::result::now_utc(),
                    rebuilt_from,
                },
            )
        });
        keep_log(&self.request.logs, &log)?;
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&work);
        }
        result?;
        *kept = Some(Kept { work, applied: self.patches, key: key.clone() });
        let mut b = cached(&dir, &key)?.with_context(|| format!("the build in {} is not whole", dir.display()))?;
        b.cached = false;
        Ok(b)
    }

    /// The image, its `.config` and System.map under `staged/boot`, the
    /// record beside them, and `staged` renamed to `dir`.
    fn stage(&self, src: &Path, staged: &Path, dir: &Path, rec: Record) -> Result<()> {
        let boot = staged.join("boot");
        std::fs::create_dir_all(&boot)?;
        let r = &rec.release;
        std::fs::copy(src.join(IMAGE), boot.join(format!("vmlinuz-{r}")))?;
        std::fs::copy(src.join(".config"), boot.join(format!("config-{r}")))?;
        if src.join("System.map").is_file() {
            std::fs::copy(src.join("System.map"), boot.join(format!("System.map-{r}")))?;
        }
        std::fs::write(staged.join(BUILD_FILE), serde_json::to_string_pretty(&rec)?)?;
        std::fs::create_dir_all(dir.parent().context("built dir")?)?;
        // Another dentrylab may have built the same meanwhile: use its copy.
        if std::fs::rename(staged, dir).is_err() && !dir.join(BUILD_FILE).is_file() {
            bail!("cannot move the build into {}", dir.display());
        }
        Ok(())
    }

    /// Unpacks (or takes `reuse`'s tree and reverses its patches),
    /// patches, configures and builds in `src`: the release and the seconds
    /// configuring and building took.
    fn build_in(
        &self,
        src: &Path,
        log: &Path,
        key: &str,
        label: &str,
        reuse: Option<&Kept<'_>>,
    ) -> Result<(String, f64)> {
        let g = self.guard;
        match reuse {
            Some(k) => {
                (self.announce)(&format!("{label}: in the tree of [{}], its patches reversed", k.key));
                for p in k.applied.iter().rev() {
                    reverse(src, p)?;
                }
            }
            None => {
                (self.announce)(&format!("{label}: unpacking the source"));
                self.tree.unpack(src, g)?;
            }
        }
        for p in self.patches {
            apply(src, p)?;
        }
        let started = Instant::now();
        (self.announce)(&format!("{label}: configuring (make {BASE_TARGET}, the fragments, make olddefconfig)"));
        self.configure(src, log, key)?;
        let jobs = format!("-j{}", self.request.jobs);
        (self.announce)(&format!("{label}: building (make {jobs} bzImage; its log: {})", log.display()));
        make(g, src, log, &[&jobs, "bzImage"], "make bzImage")?;
        if !src.join(IMAGE).is_file() {
            bail!("make bzImage succeeded but left no {IMAGE}");
        }
        let release = release(src)?;
        let seconds = started.elapsed().as_secs_f64();
        (self.announce)(&format!("{label}: built {release} in {seconds:.0} s"));
        Ok((release, seconds))
    }

    /// `make defconfig`, the settings (and a local version naming the
    /// key, so that `uname -r` tells the builds apart), `make
    /// olddefconfig`, and the check that every setting survived it.
    fn configure(&self, src: &Path, log: &Path, key: &str) -> Result<()> {
        make(self.guard, src, log, &[BASE_TARGET], &format!("make {BASE_TARGET}"))?;
        let base = std::fs::read_to_string(src.join(".config"))
            .with_context(|| format!("make {BASE_TARGET} wrote no .config"))?;
        let mut all = self.settings.to_vec();
        all.push(Setting { name: "CONFIG_LOCALVERSION".into(), value: Some(format!("\"-dentrylab-{}\"", &key[..8])) });
        all.push(Setting { name: "CONFIG_LOCALVERSION_AUTO".into(), value: None });
        std::fs::write(src.join(".config"), config::merge(&base, &all))?;
        make(self.guard, src, log, &["olddefconfig"], "make olddefconfig")?;
        let done = std::fs::read_to_string(src.join(".config")).context("make olddefconfig left no .config")?;
        let lost = config::dropped(&done, &all);
        if let Some(first) = lost.first() {
            let more = if lost.len() > 1 { format!(" (and {} more)", lost.len() - 1) } else { String::new() };
            bail!(
                "kernel configuration: `make olddefconfig` did not keep `{}`{more}: {}; change the fragment ({})",
                first.line(),
                config::hint(&first.name),
                self.fragment_names()
            );
        }
        Ok(())
    }

    fn fragment_names(&self) -> String {
        let mut names = vec![GUEST_CONFIG_NAME.to_string()];
        names.extend(self.request.fragments.iter().map(|f| format!("--kernel-config {}", f.display())));
        names.join(", ")
    }
}

/// A build's log copied into `--logs DIR`, under its own name, when
/// asked for (failed builds' too).
fn keep_log(logs: &Option<PathBuf>, log: &Path) -> Result<()> {
    if let Some(logs) = logs {
        std::fs::create_dir_all(logs).with_context(|| format!("cannot create {}", logs.display()))?;
        let _ = std::fs::copy(log, logs.join(log.file_name().unwrap_or_default()));
    }
    Ok(())
}

/// The build in `dir`, if it is whole.
fn cached(dir: &Path, key: &str) -> Result<Option<Built>> {
    let Ok(text) = std::fs::read_to_string(dir.join(BUILD_FILE)) else { return Ok(None) };
    let rec: Record = serde_json::from_str(&text)
        .with_context(|| format!("the cached build {} is damaged: remove it and run again", dir.display()))?;
    let image = dir.join("boot").join(format!("vmlinuz-{}", rec.release));
    if !image.is_file() {
        bail!("the cached build {} has no image: remove it and run again", dir.display());
    }
    Ok(Some(Built {
        label: rec.label,
        source: rec.source,
        key: key.to_string(),
        dir: dir.to_path_buf(),
        release: rec.release,
        image,
        patches: rec.patches,
        cached: true,
        build_seconds: rec.build_seconds,
        rebuilt_from: rec.rebuilt_from,
    }))
}
