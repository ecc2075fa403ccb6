#!/usr/bin/env bash
# Fidelity of the reclaim time: `dentrylab reclaim --threads 1 --sizes N`
# (its unobserved repetitions, which the table reports) against a plain,
# unobserved umount of N hard links made by the node-lockup report's one-thread link()
# loop (bench/seed-link-loop.c) into one directory of a fresh tmpfs, the
# umount pinned to the same CPU. Rounds interleave the two so that drift
# hits both alike; prints each round, the medians and their ratio (the
# goal: dentrylab within ±10%). Needs root; nothing is left
# mounted (both run in private mount namespaces).
#
#   bench/fidelity.sh [COUNT] [ROUNDS] [CPU]     (default 1M links, 3 rounds, CPU 0)
set -euo pipefail
cd "$(dirname "$0")/.."
count_h=${1:-1M}
rounds=${2:-3}
cpu=${3:-0}
count=$(python3 -c "import sys;s=sys.argv[1];m={'k':1e3,'M':1e6,'G':1e9};print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$count_h")

cargo build --release --quiet
mkdir -p target/bench
cc -O2 -o target/bench/seed-link-loop bench/seed-link-loop.c
bin=target/release/dentrylab

plain_ns() {
    # The umount is timed around the umount(2) call by python's monotonic
    # clock (the fork/exec of umount(8) is outside: it runs in python).
    unshare -m --propagation private python3 - "$count" "$cpu" <<'PY'
import ctypes, os, subprocess, sys, time
count, cpu = int(sys.argv[1]), int(sys.argv[2])
d = "/tmp/dentrylab-fidelity"
os.makedirs(d, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "nr_inodes=0", "fidelity", d], check=True)
out = subprocess.run(["target/bench/seed-link-loop", d, str(count)], check=True, capture_output=True, text=True)
os.sched_setaffinity(0, {cpu})
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(d, os.O_RDONLY)
libc.syncfs(fd)
os.close(fd)
time.sleep(0.02)
t = time.monotonic()
if libc.umount2(d.encode(), 0) != 0:
    sys.exit(f"umount {d}: {os.strerror(ctypes.get_errno())}")
took = time.monotonic() - t
os.rmdir(d)
print(f"{took * 1e9 / count:.0f}")
PY
}

lab_ns() {
    $bin reclaim --threads 1 --sizes "$count" --reps 1 --unobserved-reps 1 --cpu "$cpu" --no-save --json - 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['sizes'][0]['ns_per_dentry']['median']))"
}

echo "umount of $count hard links (one directory, one generator thread), $rounds interleaved rounds, CPU $cpu ($(uname -r))"
printf "%-6s %26s %30s %8s\n" round "plain umount ns/dentry" "dentrylab reclaim ns/dentry" ratio
plains=(); labs=()
for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then p=$(plain_ns); l=$(lab_ns); else l=$(lab_ns); p=$(plain_ns); fi
    plains+=("$p"); labs+=("$l")
    printf "%-6s %26s %30s %8s\n" "$r" "$p" "$l" "$(python3 -c "print(f'{$l/$p:.3f}x')")"
done
python3 - "${plains[*]}" "${labs[*]}" <<'PY'
import statistics, sys
p = [float(x) for x in sys.argv[1].split()]
l = [float(x) for x in sys.argv[2].split()]
mp, ml = statistics.median(p), statistics.median(l)
print(f"median {mp:26.0f} {ml:30.0f} {ml/mp:7.3f}x  ({'within' if abs(ml/mp - 1) <= 0.10 else 'OUTSIDE'} ±10%)")
PY
