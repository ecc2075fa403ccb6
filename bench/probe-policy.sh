#!/usr/bin/env bash
# Does the probe's scheduling policy change what it measures? Runs
# `dentrylab reclaim --probe-policy fifo` and `--probe-policy other` side by
# side at each size, one probed and one unobserved repetition per run,
# ROUNDS rounds with the order of the two policies swapped every round (so
# that drift hits both alike), and reports per size and policy: the longest
# stretch (median, min-max), the probed reclaim time, and the probe's
# overhead (probed / unobserved time of the same run); then, round by round,
# fifo / other of the longest stretch and of the probed reclaim time
# (median, min-max). Needs root (SCHED_FIFO); nothing is left mounted.
#
#   bench/probe-policy.sh [ROUNDS] [SIZE...]      (default 3 rounds, 1M 5M)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shift || true
sizes=("$@")
(( ${#sizes[@]} )) || sizes=(1M 5M)

# DENTRYLAB=path runs that binary instead of building this checkout.
if [[ -z ${DENTRYLAB:-} ]]; then cargo build --release --quiet; fi
bin=${DENTRYLAB:-target/release/dentrylab}
out=$(mktemp -d /tmp/dentrylab-policy.XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "umount of hard links on tmpfs, policies fifo and other, $rounds interleaved rounds, kernel $(uname -r), $(nproc) CPUs"
for r in $(seq 1 "$rounds"); do
    for size in "${sizes[@]}"; do
        if (( r % 2 )); then order=(fifo other); else order=(other fifo); fi
        for p in "${order[@]}"; do
            $bin reclaim --sizes "$size" --reps 1 --unobserved-reps 1 --probe-policy "$p" --no-save \
                --json "$out/$size-$p-$r.json" >/dev/null 2>"$out/$size-$p-$r.err" ||
                { echo "round $r $size $p failed: $(tail -1 "$out/$size-$p-$r.err")" >&2; exit 1; }
        done
    done
done
python3 - "$out" "$rounds" "${sizes[@]}" <<'PY'
import json, statistics, sys
out, rounds, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(size, p, r):
    j = json.load(open(f"{out}/{size}-{p}-{r}.json"))
    run, quiet = j["runs"][0], j["unobserved"][0]
    assert j["options"]["probe_policy"] == p, j["options"]["probe_policy"]
    return run["probe"]["max_gap_seconds"], run["reclaim_seconds"], run["reclaim_seconds"] / quiet["reclaim_seconds"]
def spread(v, f="{:.3f}"):
    return f"{f.format(statistics.median(v))} ({f.format(min(v))}-{f.format(max(v))})"
print(f"{'size':>5} {'policy':>6} {'longest stretch s':>26} {'probed reclaim s':>26} {'overhead probed/unobs':>26}")
for size in sizes:
    got = {p: [load(size, p, r) for r in range(1, rounds + 1)] for p in ("fifo", "other")}
    for p, v in got.items():
        print(f"{size:>5} {p:>6} {spread([x[0] for x in v]):>26} {spread([x[1] for x in v]):>26} {spread([x[2] for x in v]):>26}")
    gap = [f[0] / o[0] for f, o in zip(got["fifo"], got["other"])]
    tim = [f[1] / o[1] for f, o in zip(got["fifo"], got["other"])]
    print(f"{size:>5} fifo/other: longest stretch {spread(gap)}x, probed reclaim time {spread(tim)}x")
PY
