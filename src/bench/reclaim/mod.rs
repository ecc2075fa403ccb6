//! `dentrylab reclaim`: the node-lockup report's experiment, done right.
//!
//! For each size and repetition: mount a fresh filesystem in the sandbox,
//! create the dentries, count them, reclaim them while a probe pinned to the
//! reclaiming CPU records how long that CPU is monopolised (a second probe
//! on another CPU is the control) and /dev/kmsg is watched, count again.
//! Then fit cost against count, extrapolate, and decide at what count a
//! reclaim trips the soft-lockup watchdog.
//!
//! Several reclaim paths can run in one sweep (`--method all`): each size is
//! created afresh for each of them, and the verdict names the most
//! dangerous. With `--contend T`, every repetition also runs with T threads
//! doing path lookups in the same filesystem on the other CPUs.
//!
//! In: [`Options`] (from its [`command`], which the generic handler
//! runs), the sandbox, the proc root. Out: [`ReclaimResult`], which
//! `report` renders and whose fit `state` saves as the calibration.
//! [`run`] is the sweep, stage by stage (`sweep`, which drives the kernel
//! through an `Executor`); `measure` runs one repetition and `repetition`
//! holds what it records.
//!
//! This file only declares the children and re-exports what other
//! modules use; no child imports through it. Inside, one way, lowest
//! first: `options` (the sweep's options) and `methods` (the reclaim
//! paths, which read the options' `Asked`); `repetition` (one
//! repetition's record) with `placement`; `pinning`, `summary` (per size
//! and method), `victims`, `watchdog`, `auto`; `result`; then the stages
//! (`checks`, `overlay`, `measure`, `analyse`, `sweep`), `render` and
//! `command`. Imported by `cli` and `bench::vm` (what other benchmarks
//! share with it is in `bench::common`); the internal `__reclaim-child`
//! and `__fit-waits` commands run [`child`] and [`fit_waits`].

mod analyse;
mod args;
pub(crate) mod auto;
mod calibration;
mod checks;
mod deadline_keys;
#[cfg(test)]
mod coverage;
pub(crate) mod child;
pub(crate) mod command;
pub(crate) mod fit_waits;
pub(crate) mod lowered;
mod measure;
pub(crate) mod methods;
#[cfg(test)]
mod mock_sweep;
pub(crate) mod options;
pub(crate) mod overlay;
pub(crate) mod pinning;
pub(crate) mod placement;
pub(crate) mod profile;
pub(crate) mod render;
mod repetition;
pub(crate) mod result;
pub(crate) mod schedule;
pub(crate) mod summary;
mod sweep;
pub(crate) mod victim_db;
pub(crate) mod victims;
pub(crate) mod watchdog;

pub(crate) use command::Reclaim;
pub(crate) use methods::Method;
pub(crate) use repetition::Run;
pub(crate) use result::ReclaimResult;
