#!/usr/bin/env bash
# How far does one size's mean move between independent runs, beyond what
# its repetitions say? Reads the JSON of two or more `dentrylab reclaim`
# runs (for instance the ones `bench/edge-agreement.sh N DIR` keeps), takes
# every size all runs measured (for the longest gap: that every run's gap
# fit kept, clear of the noise floor), and prints, in ln units,
#
#   between-run variance of a size's mean  (pooled over sizes: (runs-1) dof each)
#   - the mean variance of a mean within a run (repetitions' variance / reps)
#   = run scatter sigma^2
#
# for the longest gap (probed repetitions) and the reclaim time (unobserved
# ones). `src/analysis/run_scatter.rs` widens every prediction's interval by
# it; its constants are the lines "gap run scatter:" and "time run scatter:"
# of docs/results/run-scatter-<kernel>.md, made by this script.
#
#   bench/run-scatter.sh RUN.json RUN.json [...]
set -euo pipefail
if (( $# < 2 )); then
    echo "usage: bench/run-scatter.sh RUN.json RUN.json [...]  (two or more dentrylab reclaim --json results)" >&2
    exit 2
fi
python3 - "$@" <<'PY'
import json, math, statistics as st, sys

def scatter(name, per_run):
    shared = sorted(set.intersection(*[set(r) for r in per_run]))
    shared = [s for s in shared if all(len(r[s]) >= 2 for r in per_run)]
    if not shared:
        print(f"{name}: no size that every run measured twice or more"); return
    ss = dof = 0; within = []
    print(f"{name}: size means per run (ms), in the order given")
    for s in shared:
        means = [st.mean(r[s]) for r in per_run]
        m = st.mean(means)
        ss += sum((x - m) ** 2 for x in means); dof += len(means) - 1
        within += [st.variance(r[s]) / len(r[s]) for r in per_run]
        print(f"  {s:>10}  " + "  ".join(f"{math.exp(x) * 1e3:8.1f}" for x in means) + f"   sd {st.stdev(means):.4f}")
    between, w = ss / dof, st.mean(within)
    sd = math.sqrt(max(0.0, between - w))
    print(f"  between-run sd of a mean {math.sqrt(between):.4f} ({dof} dof); within-run sd of a mean {math.sqrt(w):.4f}")
    print(f"{name} run scatter: sd {sd:.4f} dof {dof}")

gap, time = [], []
for p in sys.argv[1:]:
    d = json.load(open(p))
    left = {l["target"] for l in (d.get("fits") or {}).get("gap_left_out", [])}
    g, t = {}, {}
    for r in d["runs"]:
        if r.get("contenders", 0) == 0 and r["target"] not in left and r["probe"]["max_gap_seconds"] > 0:
            g.setdefault(r["target"], []).append(math.log(r["probe"]["max_gap_seconds"]))
    for u in d.get("unobserved") or []:
        if u["reclaim_seconds"] > 0:
            t.setdefault(u["target"], []).append(math.log(u["reclaim_seconds"]))
    gap.append(g); time.append(t)
print(f"{len(sys.argv) - 1} runs: " + " ".join(sys.argv[1:]))
scatter("gap", gap)
scatter("time", time)
PY
