#!/usr/bin/env bash
# Creation rate, side by side in one run: the node-lockup report's single-threaded link()
# loop into one directory, against `dentrylab create` with one thread per CPU
# (one directory per thread). Both run on a fresh tmpfs in a private mount
# namespace; nothing is written outside it. Needs root.
#
#   bench/create-rate.sh [COUNT] [ROUNDS]     (default 2M links, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
count_h=${1:-2M}
rounds=${2:-3}
count=$(python3 -c "import sys;s=sys.argv[1];m={'k':1e3,'M':1e6,'G':1e9};print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$count_h")
cpus=$(nproc)

cargo build --release --quiet
mkdir -p target/bench
cc -O2 -o target/bench/seed-link-loop bench/seed-link-loop.c
bin=target/release/dentrylab

seed_rate() {
    # A private namespace with a tmpfs over /tmp, like dentrylab's sandbox.
    unshare -m --propagation private sh -c "
        mount -t tmpfs -o nr_inodes=0 bench /tmp &&
        target/bench/seed-link-loop /tmp $count" |
        awk '{printf "%.0f\n", $1 / $2}'
}

lab_rate() {
    $bin create --count "$count" --layout "dirs=$cpus" --threads "$cpus" --hold 0 --json - 2>/dev/null |
        python3 -c "import json,sys; print(round(json.load(sys.stdin)['create']['rate_per_second']))"
}

echo "creating $count hard links, $rounds rounds, $cpus CPUs ($(uname -r))"
printf "%-6s %22s %28s %8s\n" round "seed link() loop /s" "dentrylab $cpus threads /s" ratio
seeds=(); labs=()
for r in $(seq 1 "$rounds"); do
    s=$(seed_rate); l=$(lab_rate)
    seeds+=("$s"); labs+=("$l")
    printf "%-6s %22s %28s %8s\n" "$r" "$s" "$l" "$(python3 -c "print(f'{$l/$s:.2f}x')")"
done
python3 - "${seeds[*]}" "${labs[*]}" <<'PY'
import statistics, sys
s = [float(x) for x in sys.argv[1].split()]
l = [float(x) for x in sys.argv[2].split()]
ms, ml = statistics.median(s), statistics.median(l)
print(f"median  {ms:22.0f} {ml:28.0f} {ml/ms:7.2f}x")
PY
