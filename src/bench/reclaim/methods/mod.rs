//! The reclaim paths (`--method`), one per way the kernel frees dentries
//! in production, each in a file of its own implementing [`ReclaimPath`]:
//! what it is ([`About`]: its name, label, help, what it frees), what it
//! refuses, how it stages the dentries, and, on what it staged
//! ([`Staging`]), the timed reclaim and the untimed clean-up.
//!
//! [`PATHS`] is the one list of them: `--method`'s values, its help, the
//! names a saved result may hold and `all` all come from it. Adding a path
//! is its file plus its line in the `paths!` list below
//! (docs/architecture.md, "Add a reclaim path").
//!
//! drop-caches and memcg free only dentries on the LRU (unused ones):
//! tmpfs pins its dentries, so they free none of those. After them, and
//! after inotify, the filesystem is unmounted, untimed, to count what they
//! left. `--fs overlay` (umount and ns-exit only) is handled here around
//! the path: the layers are mounted before it stages, counted around its
//! reclaim and unmounted in turn after it (`super::overlay`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::child::ChildSpec;
use crate::procfs::ProcRoot;
use crate::sandbox::overlay::{Layers, Stack, StackMounts};
use crate::sandbox::{Mount, Sandbox};
use crate::size::human;
use crate::sys;
use crate::workload::{self, CreateOutcome, CreateSpec, Progress};

#[cfg(test)]
pub(super) mod mock;

/// Declares each path's module and lists it in [`PATHS`], in the order
/// `--method` names them: one line per path.
macro_rules! paths {
    ($($file:ident :: $path:ident),* $(,)?) => {
        $(mod $file;)*
        /// Every reclaim path, in the order `--method`'s help and errors
        /// list them.
        pub(crate) static PATHS: &[&dyn ReclaimPath] = &[$(&$file::$path),*];
    };
}

paths! {
    umount::Umount,
    ns_exit::NsExit,
    drop_caches::DropCaches,
    memcg::Memcg,
    inotify::Inotify,
}

/// What a path is, said once: every field must be given, so a new path
/// cannot inherit another's answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct About {
    /// Its `--method` value and its name in saved results.
    pub name: &'static str,
    /// Its label in figure captions ("namespace exit").
    pub words: &'static str,
    /// Its part of `--method`'s help, the words in parentheses after its name.
    pub help: &'static str,
    /// Whether `--method all` runs it.
    pub in_all: bool,
    /// Whether it frees dentries at all (`inotify` only walks them).
    pub frees: bool,
    /// Whether it can only free unused dentries on the LRU.
    pub lru_only: bool,
    /// Whether the filesystem is still mounted after the reclaim, so an
    /// untimed umount afterwards counts what the reclaim left.
    pub leaves_mounted: bool,
    /// Whether it can take an overlay down (`--fs overlay`).
    pub takes_overlay: bool,
    /// Whether it charges the dentries to a memory cgroup of the run's (the
    /// caller starts the cgroup guardian).
    pub uses_memcg: bool,
}

/// What a path's refusals and note read of a run's options (the options,
/// which name their paths, sit above them: `Options::asked`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    pub kind: crate::workload::Kind,
    pub allow_global: bool,
}

/// One reclaim path.
pub(crate) trait ReclaimPath: Sync {
    fn about(&self) -> About;

    /// Mounts a fresh filesystem and creates the dentries the way this path
    /// needs them. `layers`: `--fs overlay`'s lower and upper layers,
    /// already mounted; given only to a path whose [`About::takes_overlay`]
    /// is true (the caller refuses the others).
    fn stage(
        &self,
        s: &StageSpec<'_>,
        layers: Option<&Layers>,
        sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)>;

    /// Flag combinations this path cannot measure (a usage error, exit 2).
    /// Checked for every chosen path before the overlay and permission
    /// checks. None by default.
    fn refuse_options(&self, _opts: &Asked) -> Result<()> {
        Ok(())
    }

    /// What this path needs permission for (`--allow-global`, root),
    /// checked after [`ReclaimPath::refuse_options`]. None by default.
    fn refuse_unpermitted(&self, _opts: &Asked) -> Result<()> {
        Ok(())
    }

    /// What the run's output says once up front about this path, besides
    /// the notes every LRU-only path gets on tmpfs. None by default.
    fn note(&self, _opts: &Asked) -> Option<String> {
        None
    }
}

/// Dentries a path created, ready for its reclaim.
pub(crate) trait Staging {
    /// Where contending lookups find the filesystem.
    fn lookup_root(&self) -> PathBuf;
    /// The task that runs the reclaim when it is not the calling thread
    /// (its pid is the one a soft-lockup message names).
    fn reclaiming_tid(&self) -> Option<u32>;
    /// The reclaim, timed, on the calling thread (pinned to the reclaiming
    /// CPU by the caller).
    fn reclaim(&mut self, proc: &ProcRoot) -> Result<Reclaimed>;
    /// Untimed clean-up: unmounts what the reclaim left mounted. Returns
    /// whether it unmounted something (so the caller counts what was left).
    fn finish(self: Box<Self>) -> Result<bool>;
}

/// The reclaim path of a run: a handle on one of [`PATHS`], saved as its
/// name ("umount", "ns-exit", …).
#[derive(Clone, Copy)]
pub(crate) struct Method(&'static dyn ReclaimPath);

impl Method {
    /// Every path's name, in [`PATHS`]' order.
    pub(crate) fn names() -> Vec<&'static str> {
        PATHS.iter().map(|p| p.about().name).collect()
    }

    /// What `--method all` runs: the reclaims (`inotify`, a walk that frees
    /// nothing and needs negative dentries, is named on its own).
    pub(crate) fn all() -> Vec<Method> {
        PATHS.iter().map(|&p| Method(p)).filter(|m| m.about().in_all).collect()
    }

    pub(crate) fn about(self) -> About {
        self.0.about()
    }

    pub(crate) fn path(self) -> &'static dyn ReclaimPath {
        self.0
    }

    pub(crate) fn name(self) -> &'static str {
        self.about().name
    }

    /// Its label in figure captions.
    pub(crate) fn words(self) -> &'static str {
        self.about().words
    }

    /// See [`About::leaves_mounted`].
    pub(crate) fn leaves_mounted(self) -> bool {
        self.about().leaves_mounted
    }

    /// See [`About::lru_only`].
    pub(crate) fn lru_only(self) -> bool {
        self.about().lru_only
    }

    /// See [`About::frees`].
    pub(crate) fn frees(self) -> bool {
        self.about().frees
    }
}

impl PartialEq for Method {
    fn eq(&self, other: &Method) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Method {}

impl std::fmt::Debug for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        PATHS.iter().find(|p| p.about().name == name).map(|&p| Method(p)).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown reclaim method {name:?}: this dentrylab knows {}",
                Method::names().join(", ")
            ))
        })
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PATHS.iter().find(|p| p.about().name == s).map(|&p| Method(p)).ok_or_else(|| {
            format!(
                "unknown reclaim method {s:?}: use one of {}, a comma-separated list, or all ({})",
                Method::names().join(", "),
                all_in_words(),
            )
        })
    }
}

/// "the first four" (what `all` runs, when those lead the list; else their
/// names).
fn all_in_words() -> String {
    let all = Method::all();
    let leading = PATHS.iter().take(all.len()).all(|p| p.about().in_all);
    if leading {
        format!("the first {}", number_word(all.len()))
    } else {
        all.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
    }
}

fn number_word(n: usize) -> String {
    const WORDS: [&str; 11] = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"];
    WORDS.get(n).map_or_else(|| n.to_string(), |w| (*w).to_string())
}

/// `--method`'s help, from the paths' own.
pub(crate) fn help() -> String {
    let each: Vec<String> = PATHS.iter().map(|p| format!("{} ({})", p.about().name, p.about().help)).collect();
    let left_out: Vec<&str> = PATHS.iter().map(|p| p.about()).filter(|a| !a.in_all).map(|a| a.name).collect();
    let all = match left_out.is_empty() {
        true => format!("the {} reclaims", number_word(Method::all().len())),
        false => format!("the {} reclaims, not {}", number_word(Method::all().len()), left_out.join(", ")),
    };
    format!(
        "How to reclaim: {}. A comma-separated list, or 'all' ({all}), runs each at every size and compares them",
        each.join(", ")
    )
}

/// Parses `--method`: one method, a comma-separated list, or `all`.
pub(crate) fn parse_list(s: &str) -> Result<Vec<Method>, String> {
    if s == "all" {
        return Ok(Method::all());
    }
    let mut out: Vec<Method> = Vec::new();
    for part in s.split(',') {
        let m: Method = part.trim().parse()?;
        if out.contains(&m) {
            return Err(format!("reclaim method {:?} is given twice", m.name()));
        }
        out.push(m);
    }
    Ok(out)
}

/// `--method a or b`: the paths that take an overlay down, and the other
/// reclaims ("c and d"), for `--fs overlay`'s refusal.
pub(crate) fn overlay_words() -> (String, String) {
    let join = |names: Vec<&str>, last: &str| match names.split_last() {
        Some((l, rest)) if !rest.is_empty() => format!("{} {last} {l}", rest.join(", ")),
        Some((l, _)) => (*l).to_string(),
        None => String::new(),
    };
    let abouts: Vec<About> = PATHS.iter().map(|p| p.about()).collect();
    let takes = abouts.iter().filter(|a| a.takes_overlay).map(|a| a.name).collect();
    let plain = abouts.iter().filter(|a| a.frees && !a.takes_overlay).map(|a| a.name).collect();
    (join(takes, "or"), join(plain, "and"))
}

/// What the memory cgroup saw, for `memcg`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MemcgOutcome {
    pub interface: String,
    pub usage_before_bytes: Option<u64>,
    pub usage_after_bytes: Option<u64>,
    /// False when the kernel said it could not reclaim all it was asked to.
    pub complete: bool,
}

/// What `inotify` did: the watches it added, and the kernel's own account
/// of them (the `inotify wd:` lines of the instance's /proc fdinfo, read
/// after the timed calls).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WatchOutcome {
    /// Directories watched (one per directory of the layout).
    pub directories: usize,
    /// The watch descriptors inotify_add_watch returned.
    pub watch_descriptors: Vec<i32>,
    /// Marks the kernel lists for the instance in /proc/self/fdinfo.
    pub marks_in_fdinfo: usize,
}

/// What the timed reclaim measured.
pub(crate) struct Reclaimed {
    pub took: Duration,
    pub sys: Duration,
    pub memcg: Option<MemcgOutcome>,
    pub watch: Option<WatchOutcome>,
    /// When the call returned before the kernel had freed the dentries
    /// (a teardown deferred past it): when it returned; `took` then runs
    /// until they were freed.
    pub returned_after: Option<Duration>,
}

impl Reclaimed {
    /// Runs `reclaim` (which returns the time it measured) and adds the
    /// system time the calling thread spent around it.
    fn on_this_thread(reclaim: impl FnOnce() -> Result<Duration>) -> Result<Reclaimed> {
        let (_, sys0) = sys::thread_cpu_times();
        let took = reclaim()?;
        let (_, sys1) = sys::thread_cpu_times();
        Ok(Reclaimed { took, sys: sys1.saturating_sub(sys0), memcg: None, watch: None, returned_after: None })
    }
}

/// Everything a method needs to stage one run.
pub(crate) struct StageSpec<'a> {
    pub method: Method,
    pub create: CreateSpec,
    pub fs: crate::sandbox::FsType,
    /// The CPU the reclaim is pinned to; None: not pinned.
    pub cpu: Option<usize>,
    pub label: &'a str,
    /// `--fs overlay`: create through an overlay over these filesystems.
    pub overlay: Option<Stack>,
}

impl StageSpec<'_> {
    /// The generator child that makes this stage's dentries under `path`,
    /// in a mount namespace of its own or not, through an overlay or not.
    fn child(&self, own_namespace: bool, path: PathBuf, overlay: Option<Layers>) -> ChildSpec {
        ChildSpec {
            own_namespace,
            path,
            fs: self.fs,
            capacity: self.create.capacity(),
            create: self.create,
            cpu: self.cpu,
            overlay,
        }
    }

    /// What the creation was, for its error.
    fn what(&self, overlay: bool) -> String {
        let through = if overlay { " through an overlay" } else { "" };
        format!("creating {} {} dentries{through}", human(self.create.count), self.create.kind.name())
    }

    /// Creates the dentries in `mount` from this thread, and syncs it.
    fn create_here(&self, mount: &Mount, overlay: bool) -> Result<CreateOutcome> {
        let progress = Arc::new(Progress::default());
        let created = workload::with_progress(self.create.count, self.label, &progress, || {
            workload::create(mount.path(), &self.create, &progress)
        })
        .with_context(|| self.what(overlay))?;
        mount.sync()?;
        Ok(created)
    }
}

/// Dentries created and ready to be reclaimed by one method.
pub(crate) struct Staged {
    path: Box<dyn Staging>,
    /// `--fs overlay`: the upper and lower filesystems, still mounted after
    /// the reclaim (which takes only the overlay) until
    /// [`Staged::unmount_layers`] counts them.
    stack: Option<StackMounts>,
    /// `--fs overlay`: what the reclaim freed, counted around it.
    top: Option<crate::bench::layers::Counted>,
}

/// Mounts a fresh filesystem (with `--fs overlay`, the layers first) and
/// creates the dentries, the way the method needs them.
pub(crate) fn stage(s: &StageSpec<'_>, sandbox: &mut Sandbox) -> Result<(Staged, CreateOutcome)> {
    let stack = match s.overlay {
        Some(_) if !s.method.about().takes_overlay => {
            bail!("internal error: --method {} with --fs overlay passed validation", s.method.name())
        }
        Some(stack) => Some(crate::bench::layers::mount_stack(sandbox, stack, &s.create)?),
        None => None,
    };
    let (path, created) = s.method.path().stage(s, stack.as_ref().map(|m| &m.layers), sandbox)?;
    Ok((Staged { path, stack, top: None }, created))
}

impl Staged {
    /// Where contending lookups find the filesystem: for `ns-exit`, through
    /// the child's root (`/proc/<pid>/root`), the only way into its
    /// namespace.
    pub(crate) fn lookup_root(&self) -> PathBuf {
        self.path.lookup_root()
    }

    /// The task that runs the reclaim when it is not the calling thread:
    /// for `ns-exit`, the child, whose exit tears its namespace down (its
    /// only thread, so its pid is its tid: the one a soft-lockup message
    /// names).
    pub(crate) fn reclaiming_tid(&self) -> Option<u32> {
        self.path.reclaiming_tid()
    }

    /// Runs the reclaim on the calling thread (pinned to the reclaiming CPU
    /// by the caller) and times it. With `--fs overlay`, dentry-state is
    /// also read in quiet windows around it (outside the timed call), so
    /// the overlay's row is counted like the other layers'.
    pub(crate) fn reclaim(&mut self, proc: &ProcRoot) -> Result<Reclaimed> {
        if self.stack.is_none() {
            return self.path.reclaim(proc);
        }
        let window = crate::bench::layers::Window::open(proc)?;
        let done = self.path.reclaim(proc)?;
        self.top = Some(window.close(proc)?);
        Ok(done)
    }

    /// What the overlay's reclaim freed (`--fs overlay`).
    pub(crate) fn overlay_counted(&self) -> Option<&crate::bench::layers::Counted> {
        self.top.as_ref()
    }

    /// Untimed clean-up: unmounts what the reclaim left mounted and removes
    /// the cgroup. Returns whether it unmounted something (so the caller
    /// counts what was left).
    pub(crate) fn finish(self) -> Result<bool> {
        self.path.finish()
    }

    /// `--fs overlay`, after the reclaim took the overlay: unmounts the
    /// upper and then the lower filesystem, each counted and probed on
    /// `cpu` (untimed as a reclaim). None without an overlay.
    pub(crate) fn unmount_layers(
        &mut self,
        proc: &ProcRoot,
        cpu: usize,
    ) -> Result<Option<Vec<crate::bench::layers::LayerUmount>>> {
        match self.stack.take() {
            Some(stack) => crate::bench::layers::unmount_in_turn(stack, proc, cpu).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> Method {
        name.parse().unwrap()
    }

    #[test]
    fn method_lists_parse() {
        assert_eq!(parse_list("umount").unwrap(), vec![m("umount")]);
        assert_eq!(parse_list("all").unwrap(), Method::all());
        assert_eq!(parse_list("memcg,ns-exit").unwrap(), vec![m("memcg"), m("ns-exit")]);
        assert!(parse_list("umount,umount").unwrap_err().contains("twice"));
        assert!(parse_list("shrink").unwrap_err().contains("ns-exit"));
        assert_eq!(parse_list("inotify").unwrap(), vec![m("inotify")]);
        assert!(!parse_list("all").unwrap().contains(&m("inotify")));
        let inotify = m("inotify");
        assert!(!inotify.frees() && inotify.leaves_mounted() && !inotify.lru_only());
        for p in PATHS {
            let name = p.about().name;
            assert_eq!(m(name).name(), name);
        }
    }

    /// Everything said of the paths comes from [`PATHS`], whatever it holds.
    #[test]
    fn names_help_and_all_follow_the_registry() {
        let names = Method::names();
        let set: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(set.len(), names.len(), "two paths share a name: {names:?}");
        let all: Vec<&str> = PATHS.iter().map(|p| p.about()).filter(|a| a.in_all).map(|a| a.name).collect();
        assert_eq!(Method::all().iter().map(|m| m.name()).collect::<Vec<_>>(), all);
        let error = parse_list("bogus").unwrap_err();
        let help = help();
        for p in PATHS {
            let a = p.about();
            assert!(error.contains(a.name), "{error}");
            assert!(help.contains(&format!("{} ({})", a.name, a.help)), "{help}");
            assert!(!a.lru_only || a.frees, "{}: LRU-only but frees nothing", a.name);
        }
        assert!(error.ends_with(&format!("or all ({})", all_in_words())), "{error}");
        assert!(help.contains(&format!("'all' (the {} reclaims", number_word(all.len()))), "{help}");
        let (takes, plain) = overlay_words();
        for a in PATHS.iter().map(|p| p.about()) {
            assert_eq!(takes.contains(a.name), a.takes_overlay, "{}: {takes}", a.name);
            assert_eq!(plain.contains(a.name), a.frees && !a.takes_overlay, "{}: {plain}", a.name);
        }
    }

    #[test]
    fn counts_are_spelled_out_to_ten() {
        assert_eq!(number_word(4), "four");
        assert_eq!(number_word(10), "ten");
        assert_eq!(number_word(12), "12");
    }

    #[test]
    fn a_method_is_saved_as_its_name() {
        for p in PATHS {
            let name = p.about().name;
            let json = serde_json::to_string(&m(name)).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Method>(&json).unwrap(), m(name));
        }
        let e = serde_json::from_str::<Method>("\"shrink\"").unwrap_err().to_string();
        assert!(e.contains("unknown reclaim method \"shrink\""), "{e}");
    }
}
