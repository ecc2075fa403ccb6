//! What is watched while a reclaim runs: the latency probe on the
//! reclaiming CPU (and a control on another CPU), the kernel log, and the
//! dentry counters; and, for `scale`, perf.

pub mod counters;
pub mod gap;
pub mod kmsg;
pub mod perf;
pub mod profile;
