#!/usr/bin/env bash
# The BPF census's full-walk rate, two binaries alternately in the same
# conditions: for each plant size and round, `census --backend bpf --plant
# ext4:negative:SIZE:dirs=1000` by binary A, then by binary B (B first in
# even rounds, so neither always walks second). Each run plants its own
# directories in dentrylab's sandbox, walks, checks the counts and removes
# them. Prints one line a run (dentries walked, seconds, dentries/s, BPF
# runs, most steps in one, longest run, planted directories exact) and, per
# size, each binary's median rate and longest run and B's rate over A's.
# Needs root. The JSON of every run is kept in OUT.
#
#   bench/census-rate.sh A B [SIZES] [ROUNDS] [OUT]
#       A, B    dentrylab binaries (e.g. main's and this tree's target/release/dentrylab)
#       SIZES   plant sizes, comma-separated (default 1M,9650k: about 1M and 10M
#               dentries with the host's own; 49M for 50M, about 11 GiB)
#       ROUNDS  runs of each binary per size (default 3)
#       OUT     directory for the JSON (default target/bench/census-rate; its
#               earlier A-*.json and B-*.json are removed first)
#
# With CHURN=1 it runs the docs' churn command instead (100k creates and
# unlinks a second, 4 threads, beside a 1.35M plant; SIZES is then only a
# label) and adds the churn's rate during the walk and the kernel alerts
# (RCU stalls, soft lockups, hung tasks) to each line.
set -euo pipefail
a=${1:?usage: bench/census-rate.sh A B [SIZES] [ROUNDS] [OUT]}
b=${2:?usage: bench/census-rate.sh A B [SIZES] [ROUNDS] [OUT]}
sizes=${3:-1M,9650k}
rounds=${4:-3}
out=${5:-target/bench/census-rate}
mkdir -p "$out"
rm -f "$out"/[AB]-*.json
churn_plant=tmpfs:hardlink:1k+ext4:negative:300k+ext4:hardlink:50k+ext4:negative:1M:dirs=1000

one() { # binary label size round
    local f="$out/$2-$3-$4.json"
    if [ "${CHURN:-0}" = 1 ]; then
        "$1" census --backend bpf --top 3 --churn 100k --churn-threads 4 --plant "$churn_plant" --json "$f" \
            >/dev/null 2>&1 || true
    else
        "$1" census --backend bpf --top 3 --plant "ext4:negative:$3:dirs=1000" --json "$f" >/dev/null 2>&1 || true
    fi
    python3 - "$f" "$2" "$3" "$4" <<'EOF'
import json, sys
f, label, size, rnd = sys.argv[1:]
try:
    r = json.load(open(f))
except (OSError, ValueError) as e:
    print(f"{size:>7} {rnd:>5} {label:>3}  no result ({e})")
    sys.exit(0)
w, b = r["walk"], r["walk"].get("bpf") or {}
exact = sum(1 for p in r["planted"] if p["ok"])
line = (f"{size:>7} {rnd:>5} {label:>3} {w['dentries_walked']:>11,} {w['seconds']:>8.3f} "
        f"{w['dentries_per_second'] / 1e6:>7.3f}M {b.get('runs', 0):>5} {b.get('max_steps_per_run', 0):>8} "
        f"{b.get('longest_run_seconds', 0) * 1e3:>8.1f} {exact:>5}/{len(r['planted'])}")
if r.get("churn"):
    line += f"  churn {r['churn']['per_second_during_walk']:,.0f}/s alerts {len(r['kernel_alerts'])}"
print(line)
EOF
}

echo "census rate: A=$a B=$b sizes=$sizes rounds=$rounds ($(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf "%7s %5s %3s %11s %8s %8s %5s %8s %8s %s\n" plant round bin dentries "walk s" "/s" runs "steps" "run ms" exact
for size in ${sizes//,/ }; do
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
        for l in $order; do
            if [ "$l" = A ]; then one "$a" A "$size" "$r"; else one "$b" B "$size" "$r"; fi
        done
    done
done
python3 - "$out" "$sizes" <<'EOF'
import glob, json, statistics, sys
out, sizes = sys.argv[1], sys.argv[2].split(",")
print("\nmedians (dentries/s, longest run) and B/A:")
for size in sizes:
    m = {}
    for label in "AB":
        runs = []
        for f in sorted(glob.glob(f"{out}/{label}-{size}-*.json")):
            try:
                w = json.load(open(f))["walk"]
            except (OSError, ValueError):
                continue
            runs.append((w["dentries_per_second"], (w.get("bpf") or {}).get("longest_run_seconds", 0)))
        if runs:
            m[label] = (statistics.median(r for r, _ in runs), max(l for _, l in runs), len(runs))
    cells = [f"{l} {m[l][0] / 1e6:.3f}M/s ({m[l][2]} runs, longest run {m[l][1] * 1e3:.1f} ms)" for l in m]
    ratio = f"B/A {m['B'][0] / m['A'][0]:.2f}x" if len(m) == 2 else ""
    print(f"{size:>7}: " + "; ".join(cells) + f"; {ratio}")
EOF
