#!/usr/bin/env bash
# Loopback load test of `dentrylab exporter`: ROUNDS rounds of N
# scrapes of /metrics, C of them concurrent (default 1000 and 1000: every
# scrape at once), on 127.0.0.1 only, with ApacheBench (Debian package
# apache2-utils). Prints, per round, the latency percentiles ab measured
# (connect + wait + transfer, in ms), the failures, and the exporter's
# resident memory after the round; then its peak RSS and thread count.
#
#   bench/exporter-load.sh                 # 5 rounds of 1000 concurrent scrapes
#   ROUNDS=10 WORKERS=2 bench/exporter-load.sh
#
# The exporter reads this machine's live /proc and the built-in calibration.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000}
C=${C:-1000}
ROUNDS=${ROUNDS:-5}
WORKERS=${WORKERS:-4}

command -v ab >/dev/null || { echo "needs ab: apt-get install apache2-utils" >&2; exit 1; }
ulimit -n $((C + 64))
cargo build --release -q
bin=target/release/dentrylab

log=$(mktemp)
out=$(mktemp)
state=$(mktemp -d)
"$bin" exporter --listen 127.0.0.1:0 --workers "$WORKERS" --state-dir "$state" 2>"$log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; rm -rf "$log" "$out" "$state"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.05; done
addr=$(sed -n 's|.*listening on http://\([^/]*\)/metrics.*|\1|p' "$log")
[ -n "$addr" ] || { cat "$log" >&2; exit 1; }

kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
echo "dentrylab exporter pid $pid on $addr, $WORKERS workers; $ROUNDS rounds of $N scrapes, $C concurrent"
echo "RSS before: $(kb VmRSS) kB"
printf '%-6s %9s %7s %7s %7s %7s %8s %9s\n' round complete failed p50_ms p99_ms max_ms req/s rss_kB
for r in $(seq "$ROUNDS"); do
    # -l: the body length varies (counts, scrape duration); -r: do not stop on a socket error.
    ab -q -l -r -n "$N" -c "$C" "http://$addr/metrics" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
    field() { awk -v k="$1" 'index($0, k) == 1 { sub(k, ""); print $1; exit }' "$out"; }
    pct() { awk -v p="$1%" '$1 == p { print $2; exit }' "$out"; }
    non2xx=$(field "Non-2xx responses:")
    failed=$(( $(field "Failed requests:") + ${non2xx:-0} ))
    printf '%-6s %9s %7s %7s %7s %7s %8s %9s\n' "$r" "$(field "Complete requests:")" "$failed" \
        "$(pct 50)" "$(pct 99)" "$(pct 100)" "$(field "Requests per second:")" "$(kb VmRSS)"
done
echo "peak RSS (VmHWM): $(kb VmHWM) kB; threads: $(kb Threads)"
