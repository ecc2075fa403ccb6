#!/usr/bin/env bash
# Negative-dentry creation rate, side by side in one run, on ext4 on a loop
# device, for both kinds that make negative dentries:
#   negative:  fstatat() of missing short names relative to a directory fd
#   unlinked:  mknodat() + unlinkat()
# Each round runs, one after the other on a fresh filesystem each:
#   loop 1     the one-thread C loop of bench/negative-loop.c: the unit of
#              the machine's limit (every ratio is against it)
#   loop N     N copies of that loop at once (N = CPUs), each in a directory
#              of its own: what the machine gives N threads that share
#              nothing but the filesystem and the dentry cache (the ceiling)
#   flat       dentrylab create, N threads, all in one directory (--layout flat)
#   dirs=N     dentrylab create, N threads, one directory each (--layout dirs=N)
# Per run: entries per second, the ratio to loop 1, and CPU time per entry
# (user + system; the C loop's from getrusage, dentrylab's from its threads'
# clocks). "if alone" is the ratio the run would reach if each of its threads
# had a CPU to itself all the time: N x (loop 1's CPU per entry) / (the run's
# CPU per entry). On a loaded machine the rates only say how much CPU each
# run got; CPU per entry still says what an entry cost, contention included
# (spinning on a lock or a bouncing cache line costs CPU; only sleeping on a
# lock does not, which makes "if alone" an upper bound).
# The C loops run in a private mount namespace with a tmpfs over /tmp that
# holds the sparse backing file, so nothing stays behind. Needs root.
#
#   bench/negative-rate.sh [COUNT] [ROUNDS]     (default 4M, 3 rounds)
#   KINDS=negative bench/negative-rate.sh ...    (only one kind)
set -euo pipefail
cd "$(dirname "$0")/.."
count_h=${1:-4M}
rounds=${2:-3}
count=$(python3 -c "import sys;s=sys.argv[1];m={'k':1e3,'M':1e6,'G':1e9};print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$count_h")
cpus=$(nproc)

cargo build --release --quiet
mkdir -p target/bench
cc -O2 -pthread -o target/bench/negative-loop bench/negative-loop.c
bin=target/release/dentrylab

# loop_run MODE THREADS: prints "<rate> <cpu seconds per entry>"; MODE is stat or unlinked.
loop_run() {
    unshare -m --propagation private sh -c "
        set -e
        mount -t tmpfs bench /tmp
        truncate -s 16G /tmp/fs.img
        mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 /tmp/fs.img
        mkdir /tmp/mnt
        mount -o loop /tmp/fs.img /tmp/mnt
        mkdir /tmp/mnt/d
        target/bench/negative-loop /tmp/mnt/d $count $1 $2
        umount /tmp/mnt" |
        awk '{printf "%.0f %.9f\n", $1 / $2, $3 / $1}'
}

# lab_run KIND LAYOUT: prints "<rate> <cpu seconds per entry>".
lab_run() {
    $bin create --kind "$1" --fs ext4 --layout "$2" --count "$count" --threads "$cpus" --hold 0 --json - 2>/dev/null |
        python3 -c "
import json, sys
c = json.load(sys.stdin)['create']
assert c['entries'] == $count, f\"made {c['entries']} of $count\"
print(round(c['rate_per_second']), c['cpu_seconds'] / c['entries'])"
}

echo "$count negative dentries on ext4, $rounds rounds, $cpus CPUs ($(uname -r)), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in ${KINDS:-negative unlinked}; do
    case $kind in negative | unlinked) ;; *) echo "KINDS: unknown kind $kind (use negative, unlinked or both)" >&2; exit 2 ;; esac
    mode=stat; [ "$kind" = unlinked ] && mode=unlinked
    runs=("loop 1" "loop $cpus" "flat" "dirs=$cpus")
    : > "target/bench/negative-rate-$kind.txt"
    for r in $(seq 1 "$rounds"); do
        for run in "${runs[@]}"; do
            case $run in
                "loop 1") out=$(loop_run "$mode" 1) ;;
                loop*) out=$(loop_run "$mode" "$cpus") ;;
                *) out=$(lab_run "$kind" "$run") ;;
            esac
            echo "$r|$run|$out" >> "target/bench/negative-rate-$kind.txt"
        done
    done
    python3 - "$kind" "$cpus" "target/bench/negative-rate-$kind.txt" <<'PY'
import statistics, sys
kind, cpus, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [l.rstrip("\n").split("|") for l in open(path)]
runs = list(dict.fromkeys(r[1] for r in rows))
nthreads = {run: 1 if run == "loop 1" else cpus for run in runs}
data = {}  # (round, run) -> (rate, cpu per entry)
for rnd, run, out in rows:
    rate, cpu = out.split()
    data[(rnd, run)] = (float(rate), float(cpu))
rounds = list(dict.fromkeys(r[0] for r in rows))
print()
print(f"{kind:<9} {'run':<8} {'entries/s':>10} {'vs loop 1':>10} {'CPU/entry':>10} {'if alone':>9}")
def line(label, run, rate, cpu, unit_rate, unit_cpu):
    alone = nthreads[run] * unit_cpu / cpu
    print(f"{label:<9} {run:<8} {rate:>10.0f} {rate / unit_rate:>9.2f}x {cpu * 1e9:>8.0f}ns {alone:>8.2f}x")
for rnd in rounds:
    unit_rate, unit_cpu = data[(rnd, "loop 1")]
    for run in runs:
        line(f"round {rnd}", run, *data[(rnd, run)], unit_rate, unit_cpu)
# Medians of the per-round ratios (each ratio is taken within its round).
print(f"{'median':<9} {'run':<8} {'':>10} {'vs loop 1':>10} {'CPU/entry':>10} {'if alone':>9}")
for run in runs:
    ratios = [data[(r, run)][0] / data[(r, "loop 1")][0] for r in rounds]
    alone = [nthreads[run] * data[(r, "loop 1")][1] / data[(r, run)][1] for r in rounds]
    cpu = statistics.median(data[(r, run)][1] for r in rounds)
    print(f"{'median':<9} {run:<8} {'':>10} {statistics.median(ratios):>9.2f}x {cpu * 1e9:>8.0f}ns {statistics.median(alone):>8.2f}x")
PY
done
