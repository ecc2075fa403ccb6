//! What is watched while a reclaim runs: the latency probe on the
//! reclaiming CPU (and a control on another CPU), the kernel log, and the
//! dentry counters; and, for `scale`, perf. For `census`: read-only reads
//! of kernel memory (`kcore`, or a BPF program's: `memory`), the
//! structures' layouts from BTF (`btf`) and the walk of the dentry hash
//! table (`census` from user space, `census_bpf` in the kernel).
//!
//! In: a CPU to watch, a time window, the proc root. Out: gap statistics,
//! kernel messages attributed to a run, dentry counts, perf samples, the
//! hash table's counts. Imports `procfs`, `env`, `sys` and the utilities;
//! imported by `analysis` (plain types only), `bench`, `census` and `cli`.

pub(crate) mod bpf_prog;
pub(crate) mod btf;
pub(crate) mod census;
pub(crate) mod census_bpf;
pub(crate) mod counters;
pub(crate) mod gap;
pub mod kcore;
pub(crate) mod kmsg;
pub(crate) mod memory;
pub(crate) mod oom;
pub(crate) mod perf;
pub(crate) mod profile;
pub(crate) mod victims;

/// What a step does around its timed loop: profiling attaches here.
pub(crate) trait StepHook {
    /// All workers are ready (`pids`: the processes to watch); the loop starts after this returns.
    fn before_go(&mut self, pids: &[u32]) -> anyhow::Result<()>;
    /// All workers are done.
    fn after(&mut self) -> anyhow::Result<()>;
}
