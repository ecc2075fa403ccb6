//! A reclaim path for unit tests: it stages nothing and its "reclaim" does
//! nothing but report a time proportional to the dentries it was given, so
//! the run's analysis (summaries, fits) can be exercised without a kernel.
//! It is not in [`super::PATHS`]: `--method` never names it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use super::{About, Method, ReclaimPath, Reclaimed, StageSpec, Staging};
use crate::procfs::ProcRoot;
use crate::sandbox::Sandbox;
use crate::sandbox::overlay::Layers;
use crate::workload::CreateOutcome;

/// A path that "reclaims" at `ns` nanoseconds per dentry.
pub(crate) struct Mock {
    pub ns: f64,
    pub frees: bool,
}

/// Frees what it is given, at 250 ns per dentry.
pub(crate) static FREES: Mock = Mock { ns: 250.0, frees: true };
/// Walks what it is given and frees none, at 40 ns per dentry.
pub(crate) static WALKS: Mock = Mock { ns: 40.0, frees: false };

impl Mock {
    pub(crate) fn method(&'static self) -> Method {
        Method(self)
    }

    /// `count` dentries, staged with nothing made: the reclaim takes
    /// `count` × ns × `scale`.
    pub(crate) fn staged(&self, count: u64, scale: f64) -> Box<dyn Staging> {
        Box::new(Nothing { count, ns: self.ns * scale, reclaimed: false })
    }
}

impl ReclaimPath for Mock {
    fn about(&self) -> About {
        About {
            name: if self.frees { "mock" } else { "mock-walk" },
            words: "a mock reclaim",
            help: "for unit tests",
            in_all: false,
            frees: self.frees,
            lru_only: false,
            leaves_mounted: false,
            takes_overlay: false,
            uses_memcg: false,
        }
    }

    fn stage(
        &self,
        s: &StageSpec<'_>,
        _layers: Option<&Layers>,
        _sandbox: &mut Sandbox,
    ) -> Result<(Box<dyn Staging>, CreateOutcome)> {
        let created = CreateOutcome {
            entries: s.create.count,
            seconds: 0.0,
            rate_per_second: 0.0,
            cpu_seconds: 0.0,
            threads: 1,
            dirs: 1,
        };
        Ok((self.staged(s.create.count, 1.0), created))
    }
}

struct Nothing {
    count: u64,
    ns: f64,
    reclaimed: bool,
}

impl Staging for Nothing {
    fn lookup_root(&self) -> PathBuf {
        PathBuf::new()
    }

    fn reclaiming_tid(&self) -> Option<u32> {
        None
    }

    fn reclaim(&mut self, _proc: &ProcRoot) -> Result<Reclaimed> {
        anyhow::ensure!(!self.reclaimed, "internal error: reclaimed twice");
        self.reclaimed = true;
        let took = Duration::from_secs_f64(self.count as f64 * self.ns / 1e9);
        Ok(Reclaimed { took, sys: took, memcg: None, watch: None })
    }

    fn finish(self: Box<Self>) -> Result<bool> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::reclaim::analyse::{fit_runs, summarise};
    use crate::bench::reclaim::{ReclaimResult, Run, fit_count};

    fn fixture() -> ReclaimResult {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/reclaim-small.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// Three sizes × three repetitions of `path`, each staged, reclaimed
    /// and finished through the path's own [`Staging`], on the fixture's
    /// run as a template (its counters and probe are the fixture's).
    fn sweep(path: &'static Mock) -> Vec<Run> {
        let template = fixture().runs[0].clone();
        let proc = ProcRoot::new("/proc");
        let mut runs = Vec::new();
        for target in [20_000u64, 40_000, 80_000] {
            for rep in 0..3u32 {
                let mut staged = path.staged(target, 1.0 + 0.01 * f64::from(rep));
                let done = staged.reclaim(&proc).unwrap();
                assert!(staged.reclaim(&proc).is_err(), "a second reclaim must be refused");
                assert!(!staged.finish().unwrap());
                let method = path.method();
                let freed = if method.frees() { target as i64 } else { 0 };
                let mut r = template.clone();
                r.target = target;
                r.rep = rep;
                r.method = method;
                r.freed = freed;
                r.freed_fraction = freed as f64 / target as f64;
                r.reclaim_seconds = done.took.as_secs_f64();
                r.reclaim_sys_seconds = done.sys.as_secs_f64();
                r.ns_per_dentry = r.reclaim_seconds * 1e9 / fit_count(method, freed, target);
                r.probe.max_gap_seconds = r.reclaim_seconds;
                r.create.entries = target;
                runs.push(r);
            }
        }
        runs
    }

    #[test]
    fn the_analysis_fits_what_the_path_took() {
        let runs = sweep(&FREES);
        let mut opts = fixture().options;
        opts.methods = vec![FREES.method()];
        let sizes = summarise(&runs, &[], &[], &opts);
        assert_eq!(sizes.len(), 3);
        for s in &sizes {
            assert_eq!(s.method, FREES.method());
            assert_eq!(s.reps, 3);
            // The middle repetition's scale is 1.01.
            assert!((s.ns_per_dentry.median - 250.0 * 1.01).abs() < 0.01, "{}", s.ns_per_dentry.median);
            assert!((s.freed_fraction - 1.0).abs() < 1e-12);
        }
        let fits = fit_runs(&runs, &[]);
        let lin = fits.time_linear.expect("a linear time fit");
        assert!((lin.slope * 1e9 - 250.0 * 1.01).abs() < 1.0, "slope {} ns/dentry", lin.slope * 1e9);
        let pow = fits.time_power.expect("a power time fit");
        assert!((pow.exponent - 1.0).abs() < 0.01, "exponent {}", pow.exponent);
        assert!(!fits.time_unobserved);
    }

    #[test]
    fn a_walk_is_counted_at_its_target() {
        let runs = sweep(&WALKS);
        assert!(runs.iter().all(|r| r.freed == 0 && r.fit_count() == r.target as f64));
        let mut opts = fixture().options;
        opts.methods = vec![WALKS.method()];
        let sizes = summarise(&runs, &[], &[], &opts);
        assert!(sizes.iter().all(|s| (s.ns_per_dentry.median - 40.0 * 1.01).abs() < 0.01));
        let lin = fit_runs(&runs, &[]).time_linear.expect("a linear time fit");
        assert!((lin.slope * 1e9 - 40.0 * 1.01).abs() < 1.0, "slope {} ns/dentry", lin.slope * 1e9);
    }

    #[test]
    fn a_path_outside_the_registry_is_no_method() {
        assert!("mock".parse::<Method>().is_err());
        assert_eq!(serde_json::to_string(&FREES.method()).unwrap(), "\"mock\"");
        assert!(serde_json::from_str::<Method>("\"mock\"").is_err());
        assert_ne!(FREES.method(), WALKS.method());
    }
}
