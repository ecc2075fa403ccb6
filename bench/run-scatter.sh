#!/usr/bin/env bash
# What one run cannot see, measured on recorded runs: how far a whole run
# moves between runs, and how well the exponent is pinned past the sizes a
# quick sweep measures. `src/analysis/run_scatter.rs` carries both into every
# prediction; its constants are the lines "... run scatter:" and
# "... exponent:" this script prints (docs/results/run-scatter-<kernel>.md).
#
# Run scatter. Each run's point is its linear model's ln prefactor (ln of the
# edge, up to a constant), fitted as dentrylab fits it: the longest gap over
# the sizes clear of the noise floor (max of 10 ms and 5x the control CPU's
# median p99), the reclaim time over the unobserved repetitions, each size
# weighted by 1/var of its repetitions when every size has 3 or more (var at
# least 0.05^2), else alike. Runs are grouped by VM build (the environment's
# kernel release); a build's scatter is the standard deviation of its runs'
# points with runs - 1 degrees of freedom (the sizes of one run move
# together, so they are not independent). The largest build's is the one
# printed as the constant, with that build's degrees of freedom.
# Victims: the same for each victim's longest wait, over the runs that carry
# `victim_runs` (one point per run and victim that waited at every size).
#
# Exponent. `--deep FILE` (repeatable; a sweep of large sizes such as
# 8M,16M,32M,48M, or any recorded run reaching 8M and more): the longest
# gap's and the time's exponent k over sizes >= 8M by least squares in
# log-log space, common to every file, each file with its own prefactor (the
# machine's); printed as the drift k - 1 the linear model carries past its
# sizes (0 when k < 1: c.N is then the earlier, safe side) and its standard
# error sd with points - files - 1 degrees of freedom.
#
# `--deep-gap FILE` adds a run to the longest gap's exponent only: a run taken
# while the machine was loaded, whose wall times are not figures while its
# longest stretch is (what the watchdog sees is measured either way).
#
#   bench/run-scatter.sh [--deep DEEP.json]... [--deep-gap RUN.json]... RUN.json RUN.json [...]
set -euo pipefail
if (( $# < 2 )); then
    echo "usage: bench/run-scatter.sh [--deep DEEP.json]... [--deep-gap RUN.json]... RUN.json RUN.json [...]  (dentrylab reclaim --json results)" >&2
    exit 2
fi
python3 - "$@" <<'PY'
import json, math, statistics as st, sys

args = sys.argv[1:]
deep, gap_only = [], []
while args and args[0] in ("--deep", "--deep-gap"):
    (deep if args[0] == "--deep" else gap_only).append(args[1]); args = args[2:]

def fit_count(r):
    t = r["target"]; f = max(r.get("freed", t), 1)
    return t if abs(f - t) > 0.1 * t else f

def gap_sizes(d):
    sizes = {}
    for r in d["runs"]:
        if r.get("contenders", 0) != 0:
            continue
        s = sizes.setdefault(r["target"], {"n": [], "v": [], "p99": []})
        s["n"].append(fit_count(r)); s["v"].append(r["probe"]["max_gap_seconds"])
        if r.get("control"):
            s["p99"].append(r["control"]["p99_gap_seconds"])
    out = {}
    for t, s in sizes.items():
        floor = max(5 * st.median(s["p99"]), 0.010) if s["p99"] else 0.010
        if st.median(s["v"]) >= floor:
            out[t] = (st.median(s["n"]), [v for v in s["v"] if v > 0])
    return out

def time_sizes(d):
    src = d.get("unobserved") or [r for r in d["runs"] if r.get("contenders", 0) == 0]
    sizes = {}
    for u in src:
        s = sizes.setdefault(u["target"], {"n": [], "v": []})
        s["n"].append(fit_count(u)); s["v"].append(u["reclaim_seconds"])
    return {t: (st.median(s["n"]), [v for v in s["v"] if v > 0]) for t, s in sizes.items()}

def victim_sizes(d, victim):
    sizes = {}
    for r in d.get("victim_runs") or []:
        for o in r["victims"]:
            if o["victim"] == victim and o["during"]["calls"] > 0 and (o["during"]["longest_seconds"] or 0) > 0:
                sizes.setdefault(r["target"], (r["target"], []))[1].append(o["during"]["longest_seconds"])
    return sizes

def ln_c(sizes):
    logs = [(math.log(n), [math.log(v) for v in vs]) for n, vs in sizes.values() if vs]
    if not logs:
        return None
    weighted = all(len(v) >= 3 for _, v in logs)
    num = den = 0.0
    for x, v in logs:
        w = 1.0
        if weighted:
            m = st.mean(v); w = 1 / max(sum((y - m) ** 2 for y in v) / (len(v) - 1), 0.05 ** 2)
        for y in v:
            num += w * (y - x); den += w
    return num / den

def scatter(name, points):
    """points: [(build, file, ln c)]"""
    builds = {}
    for b, f, c in points:
        builds.setdefault(b, []).append((f, c))
    print(f"{name}: each run's edge at 20 s by the linear model, by VM build")
    worst = None
    for b, rs in builds.items():
        cells = "  ".join(f"{f}={math.exp(math.log(20.0) - c) / 1e6:.0f}M" for f, c in rs)
        if len(rs) < 2:
            print(f"  {b}: 1 run ({cells}): no scatter"); continue
        sd = st.stdev([c for _, c in rs])
        print(f"  {b}: {len(rs)} runs, sd {sd:.4f}, {len(rs) - 1} dof: {cells}")
        if worst is None or sd > worst[0]:
            worst = (sd, len(rs) - 1, b)
    if worst:
        print(f"{name} run scatter: sd {worst[0]:.4f} dof {worst[1]}")

def exponent(name, per_file):
    """per_file: [(label, sizes)]; a common exponent over every file's sizes
    >= 8M, each file with its own prefactor (the machine's), by least squares
    in log-log space: k, its standard error with N - files - 1 dof."""
    groups = []
    for label, sizes in per_file:
        pts = [(math.log(n), math.log(v)) for n, vs in sizes.values() if n >= 8e6 for v in vs]
        if len({round(x, 6) for x, _ in pts}) >= 2:
            groups.append((label, pts))
    if not groups:
        print(f"{name} exponent: no file with two sizes of 8M or more"); return
    sxx = sxy = 0.0
    for label, pts in groups:
        mx = st.mean(p[0] for p in pts); my = st.mean(p[1] for p in pts)
        gx = sum((x - mx) ** 2 for x, _ in pts); gy = sum((x - mx) * (y - my) for x, y in pts)
        sxx += gx; sxy += gy
        per = {}
        for x, y in pts:
            per.setdefault(round(math.exp(x)), []).append(math.exp(y - x) * 1e9)
        cells = "  ".join(f"{n / 1e6:.0f}M: " + "/".join(f"{v:.1f}" for v in vs) for n, vs in sorted(per.items()))
        print(f"  {name} per dentry (ns), {label}: {cells}  (own k {gy / gx:.3f})")
    k = sxy / sxx
    ssr = 0.0
    for label, pts in groups:
        mx = st.mean(p[0] for p in pts); my = st.mean(p[1] for p in pts)
        ssr += sum((y - my - k * (x - mx)) ** 2 for x, y in pts)
    n = sum(len(p) for _, p in groups)
    dof = n - len(groups) - 1
    se = math.sqrt(ssr / dof / sxx)
    print(f"  {name}: common k {k:.4f}, se {se:.4f}, {dof} dof ({n} points, {len(groups)} files), |k - 1| {abs(k - 1):.4f}")
    print(f"{name} exponent: drift {max(k - 1, 0.0):.4f} sd {se:.4f} dof {dof}")

gap, time, victims = [], [], {}
for p in args:
    d = json.load(open(p))
    b = d["environment"]["kernel"]
    short = "/".join(p.split("/")[-2:])
    if d.get("victim_runs"):
        for v in sorted({o["victim"] for r in d["victim_runs"] for o in r["victims"]}):
            s = victim_sizes(d, v)
            w = (d.get("victims") or {}).get("fits") or []
            if any(f["who"] == v for f in w) and s:
                victims.setdefault(v, []).append((b, short, ln_c(s)))
        continue
    gap.append((b, short, ln_c(gap_sizes(d))))
    time.append((b, short, ln_c(time_sizes(d))))
print(f"{len(args)} runs: " + " ".join(args))
scatter("gap", gap)
scatter("time", time)
for v, pts in victims.items():
    scatter(f"victim ({v})", pts)
if victims:
    worst = max(victims.items(), key=lambda kv: len(kv[1]))
    # The waiting victim measured in the most runs.
    b = {}
    for bb, f, c in worst[1]:
        b.setdefault(bb, []).append(c)
    best = max(b.values(), key=len)
    if len(best) >= 2:
        print(f"victim run scatter: sd {st.stdev(best):.4f} dof {len(best) - 1}")
def reclaims(o):
    """Every reclaim result in a file (a `--watchdog-check` or `vm` file holds several)."""
    if isinstance(o, dict):
        if isinstance(o.get("runs"), list) and "environment" in o:
            yield o
        else:
            for v in o.values():
                yield from reclaims(v)
    elif isinstance(o, list):
        for v in o:
            yield from reclaims(v)

def found(files):
    return [(f"{'/'.join(f.split('/')[-2:])} ({d['environment']['kernel']})", d)
            for f in files for d in reclaims(json.load(open(f)))]

if deep or gap_only:
    both, gaps = found(deep), found(gap_only)
    print(f"sizes of 8M or more: " + " ".join(deep) + (" and, for the gap only, " + " ".join(gap_only) if gap_only else ""))
    exponent("gap", [(l, gap_sizes(d)) for l, d in both + gaps])
    exponent("time", [(l, time_sizes(d)) for l, d in both])
PY
