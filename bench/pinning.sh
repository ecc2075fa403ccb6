#!/usr/bin/env bash
# Why a pinned umount is slower than an unpinned one: a plain umount(2) of N
# hard links (seed 000's one-thread link() loop, bench/seed-link-loop.c, into
# one directory of a fresh tmpfs), pinned to CPU 0, pinned to CPU 1, or free
# to run on any CPU, the three modes alternating round by round so that load
# on the machine hits them alike. Around each umount it reads:
#   - the umount's wall time and the calling thread's own CPU time
#     (RUSAGE_THREAD: user + system);
#   - per CPU: the RCU softirq count (/proc/softirqs) and the CPU time of
#     ksoftirqd/N (/proc/PID/stat utime + stime);
#   - the CPU the thread was on before and after and its migrations
#     (/proc/thread-self/stat field 39, /proc/thread-self/sched);
#   - the thread's time on a CPU and waiting on a run queue
#     (/proc/thread-self/schedstat: run_ns excludes steal time with
#     CONFIG_PARAVIRT_TIME_ACCOUNTING, and includes the softirqs that ran
#     on its CPU while it ran, without CONFIG_IRQ_TIME_ACCOUNTING);
#   - per CPU, the busy, idle, softirq and steal time (/proc/stat, ticks
#     converted to seconds);
#   - the dentry slab's active objects (/proc/slabinfo) before, right after
#     and 1 s after the umount (the dentries are freed by RCU callbacks,
#     __d_free, after the umount returned or during it).
# Prints one line per umount and the medians per mode. Needs root; nothing
# is left mounted (each round runs in a private mount namespace).
#
#   bench/pinning.sh [COUNT] [ROUNDS]        (default 1M links, 3 rounds)
#   PERF=1 bench/pinning.sh 1M 1             (also perf record -a -g each umount)
#
# With PERF=1, perf samples every CPU at 4 kHz (cpu-clock) from 1 s before
# each umount to 1 s after it, and the script counts, per mode, the samples
# of the umount's own work (stacks through cleanup_mnt, no rcu_do_batch) and
# of RCU callback processing (stacks through rcu_do_batch), by task and CPU:
# one sample is 0.25 ms of a CPU. RCU callbacks cannot be told apart by whose
# dentries they free: another process unmounting at the same time (listed as
# "another process umount work") makes the RCU count an upper bound.
set -euo pipefail
cd "$(dirname "$0")/.."
count_h=${1:-1M}
rounds=${2:-3}
count=$(python3 -c "import sys;s=sys.argv[1];m={'k':1e3,'M':1e6,'G':1e9};print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$count_h")
mkdir -p target/bench
cc -O2 -o target/bench/seed-link-loop bench/seed-link-loop.c
perf_dir=${PERF:+$(mktemp -d)}

one() {
    # $1: the mode (cpu0, cpu1, free). Prints one JSON line.
    unshare -m --propagation private python3 - "$count" "$1" "${perf_dir:-}" <<'PY'
import ctypes, json, os, re, resource, subprocess, sys, time
count, mode, perf_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
d = "/tmp/dentrylab-pinning"
os.makedirs(d, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "nr_inodes=0", "pinning", d], check=True)
subprocess.run(["target/bench/seed-link-loop", d, str(count)], check=True, capture_output=True, text=True)
cpus = sorted(os.sched_getaffinity(0))
if mode != "free":
    os.sched_setaffinity(0, {int(mode[3:])})
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(d, os.O_RDONLY)
libc.syncfs(fd)
os.close(fd)
ksoft = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            c = open(f"/proc/{p}/comm").read().strip()
        except OSError:
            continue
        m = re.fullmatch(r"ksoftirqd/(\d+)", c)
        if m:
            ksoft[int(m.group(1))] = int(p)
tick = os.sysconf("SC_CLK_TCK")
def ksoft_s():
    out = {}
    for c, p in ksoft.items():
        f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        out[c] = (int(f[11]) + int(f[12])) / tick
    return out
def rcu_softirqs():
    for l in open("/proc/softirqs"):
        if l.split(":")[0].strip() == "RCU":
            return [int(x) for x in l.split(":")[1].split()]
def slab():
    for l in open("/proc/slabinfo"):
        if l.startswith("dentry "):
            return int(l.split()[1])
def me():
    f = open("/proc/thread-self/stat").read().rsplit(")", 1)[1].split()
    mig = 0
    for l in open("/proc/thread-self/sched"):
        if l.startswith("se.nr_migrations"):
            mig = int(l.split(":")[1])
    return int(f[36]), mig
def schedstat():
    run, wait, _ = open("/proc/thread-self/schedstat").read().split()
    return int(run), int(wait)
def cpu_times():
    out = {}
    for l in open("/proc/stat"):
        f = l.split()
        if re.fullmatch(r"cpu\d+", f[0]):
            v = [int(x) / tick for x in f[1:]]
            # user nice system idle iowait irq softirq steal
            out[int(f[0][3:])] = {"busy": v[0] + v[1] + v[2] + v[5] + v[6], "idle": v[3] + v[4], "softirq": v[6], "steal": v[7]}
    return out
def thread_cpu():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime + r.ru_stime
time.sleep(0.02)
perf = None
if perf_dir:
    n = len([f for f in os.listdir(perf_dir) if f.startswith(mode + "-")])
    perf = subprocess.Popen(["perf", "record", "-a", "-g", "-q", "-o", f"{perf_dir}/{mode}-{n + 1}.data", "--", "sleep", "30"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
s0, k0, r0, (cpu0, m0), p0, c0, ss0 = slab(), ksoft_s(), rcu_softirqs(), me(), cpu_times(), thread_cpu(), schedstat()
t = time.monotonic()
if libc.umount2(d.encode(), 0) != 0:
    sys.exit(f"umount {d}: {os.strerror(ctypes.get_errno())}")
took = time.monotonic() - t
ss1, c1, p1, (cpu1, m1), r1, k1, s1 = schedstat(), thread_cpu(), cpu_times(), me(), rcu_softirqs(), ksoft_s(), slab()
time.sleep(1.0)
s2, k2, r2 = slab(), ksoft_s(), rcu_softirqs()
if perf:
    perf.send_signal(2)
    perf.wait()
os.rmdir(d)
print(json.dumps({
    "mode": mode, "ns_per_dentry": round(took * 1e9 / count), "umount_s": round(took, 4),
    "thread_cpu_s": round(c1 - c0, 3), "run_s": round((ss1[0] - ss0[0]) / 1e9, 3), "runqueue_wait_s": round((ss1[1] - ss0[1]) / 1e9, 3),
    "per_cpu": {c: {k: round(p1[c][k] - p0[c][k], 2) for k in p0[c]} for c in sorted(p0)},
    "cpu_before": cpu0, "cpu_after": cpu1, "migrations": m1 - m0,
    "rcu_softirqs": [b - a for a, b in zip(r0, r1)], "rcu_softirqs_1s": [b - a for a, b in zip(r1, r2)],
    "ksoftirqd_s": {c: round(k1[c] - k0[c], 2) for c in sorted(k0)},
    "ksoftirqd_s_1s": {c: round(k2[c] - k1[c], 2) for c in sorted(k0)},
    "slab_freed_at_return": round((s0 - s1) / count, 3), "slab_freed_after_1s": round((s0 - s2) / count, 3),
}))
PY
}

echo "umount of $count hard links on tmpfs, $rounds rounds of cpu0, cpu1, free (order rotated each round); $(uname -r), load: $(cut -d' ' -f1-3 /proc/loadavg)"
all=$(mktemp)
for r in $(seq 1 "$rounds"); do
    modes=(cpu0 cpu1 free)
    # Rotate the order each round.
    for i in 0 1 2; do
        m=${modes[$(( (i + r) % 3 ))]}
        line=$(one "$m")
        echo "$line" | tee -a "$all"
    done
done
python3 - "$all" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for mode in ("cpu0", "cpu1", "free"):
    rs = [r for r in runs if r["mode"] == mode]
    ns = sorted(r["ns_per_dentry"] for r in rs)
    med = lambda f: statistics.median(f(r) for r in rs)
    print(f"{mode:5} ns/dentry median {statistics.median(ns):.0f} ({ns[0]}–{ns[-1]}), thread CPU {med(lambda r: r['thread_cpu_s']):.3f} s, "
          f"run {med(lambda r: r['run_s']):.3f} s, run-queue wait {med(lambda r: r['runqueue_wait_s']):.3f} s, "
          f"steal on its CPU(s) {med(lambda r: sum(c['steal'] for c in r['per_cpu'].values()) if r['mode'] == 'free' else r['per_cpu'][str(r['mode'][3:])]['steal']):.2f} s, migrations {med(lambda r: r['migrations']):.0f}, "
          f"slab freed at return {statistics.median(r['slab_freed_at_return'] for r in rs):.3f}, after 1 s {statistics.median(r['slab_freed_after_1s'] for r in rs):.3f}")
PY
rm -f "$all"
[ -n "${perf_dir:-}" ] || exit 0
echo "perf samples (4 kHz, every CPU, 1 s before to 1 s after each umount): task [CPU] what"
for f in "$perf_dir"/*.data; do
    perf script -i "$f" -F comm,cpu,ip,sym 2>/dev/null | python3 -c '
import collections, sys
name = sys.argv[1]
c = collections.Counter()
cur, syms = None, []
def flush():
    if cur is None:
        return
    s = set(syms)
    if "rcu_do_batch" in s:
        where = "inside the umount" if "cleanup_mnt" in s else "interrupting another task"
        c[f"{cur[0]} {cur[1]} RCU callbacks (rcu_do_batch), {where}"] += 1
    elif "cleanup_mnt" in s:
        # Only the umount of this script (python3); other umounts on the machine
        # are counted apart.
        what = "umount work" if cur[0] == "python3" else "another process umount work"
        c[f"{cur[0]} {cur[1]} {what} (cleanup_mnt, no rcu_do_batch)"] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); cur, syms = None, []
    elif not line[0].isspace():
        parts = line.split()
        i = next(k for k, p in enumerate(parts) if p.startswith("[") and p.endswith("]"))
        cur, syms = (" ".join(parts[:i]), parts[i]), []
    else:
        p = line.split()
        if len(p) >= 2:
            syms.append(p[1].split("+")[0])
flush()
rcu = sum(v for k, v in c.items() if "RCU callbacks" in k)
own = sum(v for k, v in c.items() if " umount work (cleanup_mnt, no" in k and "another process" not in k)
print(f"{name}: umount work {own} samples ({own / 4000:.3f} s), RCU callbacks {rcu} samples ({rcu / 4000:.3f} s)")
for k, v in c.most_common(8):
    print(f"  {v:6d}  {k}")
' "$(basename "$f" .data)"
done
echo "perf data: $perf_dir"
