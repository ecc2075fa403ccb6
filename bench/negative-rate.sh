#!/usr/bin/env bash
# Negative-dentry creation rate, side by side in one run, on ext4 on a loop
# device: the one-thread C loop of bench/negative-loop.c (the unit of the
# machine's limit) against `dentrylab create` with one thread per CPU, for
# both kinds that make negative dentries:
#   negative:  fstatat() of missing short names relative to a directory fd
#   unlinked:  mknodat() + unlinkat()
# The C loop runs in a private mount namespace with a tmpfs over /tmp that
# holds the sparse backing file, so nothing stays behind. Needs root.
#
#   bench/negative-rate.sh [COUNT] [ROUNDS]     (default 4M, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
count_h=${1:-4M}
rounds=${2:-3}
count=$(python3 -c "import sys;s=sys.argv[1];m={'k':1e3,'M':1e6,'G':1e9};print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$count_h")
cpus=$(nproc)

cargo build --release --quiet
mkdir -p target/bench
cc -O2 -o target/bench/negative-loop bench/negative-loop.c
bin=target/release/dentrylab

# MODE is stat or unlinked.
loop_rate() {
    unshare -m --propagation private sh -c "
        set -e
        mount -t tmpfs bench /tmp
        truncate -s 16G /tmp/fs.img
        mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 /tmp/fs.img
        mkdir /tmp/mnt
        mount -o loop /tmp/fs.img /tmp/mnt
        mkdir /tmp/mnt/d
        target/bench/negative-loop /tmp/mnt/d $count $1
        umount /tmp/mnt" |
        awk '{printf "%.0f\n", $1 / $2}'
}

# KIND is negative or unlinked.
lab_rate() {
    $bin create --kind "$1" --fs ext4 --count "$count" --threads "$cpus" --hold 0 --json - 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['create']['rate_per_second']))"
}

echo "$count negative dentries on ext4, $rounds rounds, $cpus CPUs ($(uname -r))"
for kind in negative unlinked; do
    mode=stat; [ "$kind" = unlinked ] && mode=unlinked
    echo
    printf "%-6s %26s %30s %8s\n" "$kind" "C loop, 1 thread /s" "dentrylab $cpus threads /s" ratio
    loops=(); labs=()
    for r in $(seq 1 "$rounds"); do
        c=$(loop_rate "$mode"); l=$(lab_rate "$kind")
        loops+=("$c"); labs+=("$l")
        printf "%-6s %26s %30s %8s\n" "$r" "$c" "$l" "$(python3 -c "print(f'{$l/$c:.2f}x')")"
    done
    python3 - "${loops[*]}" "${labs[*]}" <<'PY'
import statistics, sys
c = [float(x) for x in sys.argv[1].split()]
l = [float(x) for x in sys.argv[2].split()]
mc, ml = statistics.median(c), statistics.median(l)
print(f"median {mc:26.0f} {ml:30.0f} {ml/mc:7.2f}x")
PY
done
