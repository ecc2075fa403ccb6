#!/usr/bin/env bash
# Do independent sweeps agree on the lockup edge? Runs N quick sweeps
# (`dentrylab reclaim`, 500k-4M) and one `--sizes auto` sweep, one after
# another, none saved as the calibration, and prints each run's verdict line
# and its point and 90% interval; then whether every run's interval holds
# the auto run's point and whether all points lie within 1.5x of each other
# (the goal the sweep was written to check). Run it on an idle machine, as root.
#
#   bench/edge-agreement.sh [N] [OUTDIR]     (default 3 quick sweeps; JSON kept in OUTDIR if given)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-3}
out=${2:-$(mktemp -d /tmp/dentrylab-edges.XXXXXX)}
mkdir -p "$out"
# DENTRYLAB=path runs that binary instead of building this checkout.
if [[ -z ${DENTRYLAB:-} ]]; then cargo build --release --quiet; fi
bin=${DENTRYLAB:-target/release/dentrylab}

echo "kernel $(uname -r), $(nproc) CPUs; results in $out"
runs=()
for i in $(seq 1 "$n"); do
    $bin reclaim --no-save --json "$out/quick-$i.json" 2>/dev/null | grep "Predicted soft lockup" | sed "s/^/quick $i: /" || true
    runs+=("$out/quick-$i.json")
done
$bin reclaim --sizes auto --no-save --json "$out/auto.json" 2>/dev/null | grep -E "Predicted soft lockup|sizes auto ran" | sed "s/^/auto:    /" || true
python3 - "$out/auto.json" "${runs[@]}" <<'PY'
import json, sys
def edge(p):
    v = json.load(open(p))["verdict"] or {}
    return v.get("lockup_count"), v.get("lockup_count_low"), v.get("lockup_count_high")
auto = edge(sys.argv[1])
rows = [("auto", auto)] + [(f"quick {i+1}", edge(p)) for i, p in enumerate(sys.argv[2:])]
fmt = lambda x: "unbounded" if x is None else f"{x/1e6:.0f}M"
ok = True
for name, (pt, lo, hi) in rows:
    holds = pt is not None and auto[0] is not None and lo is not None and lo <= auto[0] <= (hi if hi is not None else float("inf"))
    ok &= holds
    print(f"{name:8} point {fmt(pt):>10}  interval {fmt(lo)}-{fmt(hi)}  holds the auto point: {'yes' if holds else 'NO'}")
pts = [r[1][0] for r in rows if r[1][0]]
spread = max(pts) / min(pts) if pts else float("nan")
print(f"points within {spread:.2f}x of each other ({'within' if spread <= 1.5 else 'NOT within'} 1.5x); every interval holds the auto point: {'yes' if ok else 'NO'}")
PY
