//! The long help of the experiments that run a workload, `containers` and
//! `mitigate` (their commands are the benchmarks' own, in the registry).

pub(super) const CONTAINERS_ABOUT: &str = "A node's life in fast-forward. --count containers, --parallel at a time, each in a mount \
namespace of its own with an overlay of one shared image (the lower layer, on an ext4 or xfs loop filesystem of \
the sandbox) and a snapshot of its own (upper and work directories on the same filesystem, as containerd's \
overlayfs snapshotter keeps them). Each runs --workload for --ops operations, then dies as a container does (its \
last process exits and the overlay goes with its mount namespace), and its snapshot is removed.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink: an on-disk temporary table), lookups (stat of names that do \
not exist, over 8 directories), files (create and keep), mixed=temp-tables=60,lookups=30,files=10 (shares in \
percent, summing to 100).\n\n\
Per container: dentries created, freed at teardown and left on the host, teardown time and the longest stretch \
on the teardown CPU (the latency probe). At the end the run's own filesystem is unmounted (untimed): what that \
frees is exactly what the containers left, whatever else the node did. From that growth, at --rate containers \
an hour, the time until the host reaches the lockup count of the calibration 'status' uses. Runs whose memory \
estimate exceeds half of MemAvailable are refused unless --force. Needs root.\n\n\
--profile: perf samples the teardown CPU with call graphs during each teardown (at 4000 Hz, perf itself on the \
other CPUs, timestamps on the probe's clock); for the container with the longest teardown stretch the stacks \
inside that stretch (top 5 with their share, counted for the task of the phase it lies in: the exiting container \
or the harness removing the snapshot), over all teardowns the top stacks, and one line naming the path. The JSON \
carries the folded stacks; 'report' draws the flame graph. Where perf or kernel symbols are not available, one \
line says so and the run goes on without it. Starting and stopping perf around each teardown makes the run \
slower (the harness time is not comparable with a run without --profile).";

pub(super) const MITIGATE_ABOUT: &str = "Runs a workload that grows the dentry cache under every combination of the --setting \
values (the first values are the baseline), each combination in a fresh filesystem of the sandbox with the \
workload's processes in a fresh memory cgroup limited to --memory-limit, so the memory pressure is the run's own. \
Every second it samples dentry-state (total, unused, negative), the cgroup's kernel memory, the workload's \
operations (queries for mariadb) and the longest stretch the latency probe sees on the workload's CPU. Per \
combination: dentries at the end and at the peak, growth per minute and per 1,000 operations, the negative \
share, the longest stretch, the throughput relative to the baseline (with its spread over --reps), and where 30 \
days of that growth would put the node against its lockup edge. Then a verdict line per knob.\n\n\
Knobs: vm.vfs_cache_pressure=N, vm.vfs_cache_pressure_denom=N, fs.dentry-negative=0|1, and \
drop-caches-every=DURATION|off (dentrylab writes 2 to /proc/sys/vm/drop_caches on that period, from the \
probed CPU, so the drops' own stretch is measured; one value compares it with no drops). All of them act on the \
whole machine: --allow-global is required, and every sysctl's original value is written back when the run ends, \
however it ends (a guardian process does it even after SIGKILL); the output names what was changed and \
restored.\n\n\
Workloads: temp-tables (create, write 4 KiB, unlink uniquely named files, as MariaDB's on-disk temporary \
tables), lookups (stat names that do not exist), files (create files that stay), and mariadb: a real MariaDB \
server (mariadbd, started by dentrylab with --no-defaults in the sandbox, as the mysql user, datadir and tmpdir on \
the sandbox's filesystem, a unix socket, --skip-networking) driven by --clients connections with GROUP BY queries \
that need an on-disk temporary table, Aria and InnoDB temporary tables and INFORMATION_SCHEMA scans. \
--mariadb-option NAME=VALUE (repeatable) adds one more row: the baseline settings with those server options \
(for example tmp_table_size=256M and max_heap_table_size=256M). containers: the life of 'dentrylab containers' \
over and over, one container at a time, all of it in the cgroup: a container in a mount namespace of its own on \
an overlay of a shared image, --container-workload (temp-tables, lookups, files or \
mixed=temp-tables=60,lookups=30,files=10; default mixed) for --container-ops operations (default 1k), its exit \
(the overlay goes with the namespace), its snapshot removed; per combination also the containers torn down per \
minute, the dentries each left on the host (what the run's filesystem still held at the end, per container) and \
the longest stretch of the teardowns (a probe of their own on the same CPU, during each teardown only).\n\n\
A rep that the cgroup's OOM killer ends is named in the notes and the run goes on with the other \
combinations, whose results are kept; the run fails only when every combination was OOM-killed.\n\n\
Default --memory-limit: the cgroup's usage once the workload is set up (for mariadb: the server started and its \
tables loaded), plus a headroom for its own memory, plus twice the largest growth measured for the workload over \
--duration, at most half of MemAvailable (see --memory-limit; docs/mitigate.md): a default run does not reach its \
limit and runs to its duration. A limit that is reached may OOM-kill the workload rather than make the cgroup \
reclaim its dentries (docs/memory-limit.md): ask for one with --memory-limit, or compare several with --setting \
memory-limit=16M,64M. Keep runs that change sysctls short on shared machines.";
