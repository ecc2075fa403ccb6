#!/usr/bin/env bash
# Loopback load test of `dentrylab exporter`: ROUNDS rounds of N
# scrapes of /metrics, C of them concurrent (default 1000 and 1000: every
# scrape at once), on 127.0.0.1 only, with ApacheBench (Debian package
# apache2-utils). Prints, per round, the latency percentiles ab measured
# (connect + wait + transfer, in ms), the failures, and the exporter's
# resident memory after the round; then its peak RSS and thread count.
#
# Slow-client mode (SLOW=K): K clients each trickle a request head that never
# ends, one byte a second, and reconnect whenever the exporter hangs up on
# them (its --header-timeout), for the whole run; the scrape rounds start
# once they are all connected. The hang-ups they saw are printed at the end.
#
#   bench/exporter-load.sh                 # 5 rounds of 1000 concurrent scrapes
#   ROUNDS=10 WORKERS=2 bench/exporter-load.sh
#   SLOW=64 N=100 C=100 MAX_REQUESTS=100 ROUNDS=5 bench/exporter-load.sh
#
# MAX_REQUESTS is the exporter's --max-requests (default 0 here: no bound,
# every scrape is collected; the exporter's own default, 40, answers the
# scrapes past 40 in flight with 503, counted as failed by ab).
# HEADER_TIMEOUT is its --header-timeout (default 3s).
# The exporter reads this machine's live /proc and the built-in calibration.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-1000}
C=${C:-1000}
ROUNDS=${ROUNDS:-5}
WORKERS=${WORKERS:-4}
SLOW=${SLOW:-0}
MAX_REQUESTS=${MAX_REQUESTS:-0}
HEADER_TIMEOUT=${HEADER_TIMEOUT:-3s}
# Seconds between rounds: in slow-client mode 2, so that the rounds span the
# slow clients' hang-ups and reconnections.
PAUSE=${PAUSE:-$([ "$SLOW" -gt 0 ] && echo 2 || echo 0)}

command -v ab >/dev/null || { echo "needs ab: apt-get install apache2-utils" >&2; exit 1; }
ulimit -n $((C + SLOW + 64))
cargo build --release -q
bin=target/release/dentrylab

log=$(mktemp)
out=$(mktemp)
state=$(mktemp -d)
"$bin" exporter --listen 127.0.0.1:0 --workers "$WORKERS" --max-requests "$MAX_REQUESTS" \
    --header-timeout "$HEADER_TIMEOUT" --state-dir "$state" 2>"$log" &
pid=$!
slow_pids=()
cleanup() {
    kill "$pid" 2>/dev/null
    for p in "${slow_pids[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$log" "$out" "$state"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q 'listening on' "$log" && break; sleep 0.05; done
addr=$(sed -n 's|.*listening on http://\([^/]*\)/metrics.*|\1|p' "$log")
[ -n "$addr" ] || { cat "$log" >&2; exit 1; }

kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
echo "dentrylab exporter pid $pid on $addr, $WORKERS workers, --max-requests $MAX_REQUESTS," \
    "--header-timeout $HEADER_TIMEOUT; $ROUNDS rounds of $N scrapes, $C concurrent; $SLOW slow clients"

# One slow client: connect, send "G" once a second until a write fails (the
# exporter hung up), note the hang-up in $state/hangups, reconnect.
slow_client() {
    trap '' PIPE
    local host=${addr%:*} port=${addr##*:}
    while :; do
        exec 3<>"/dev/tcp/$host/$port" || { sleep 0.1; continue; }
        echo connected >>"$state/connects"
        while printf G >&3 2>/dev/null; do sleep 1; done
        exec 3>&-
        echo hung-up >>"$state/hangups"
    done
}
if [ "$SLOW" -gt 0 ]; then
    for _ in $(seq "$SLOW"); do
        slow_client &
        slow_pids+=($!)
    done
    for _ in $(seq 100); do
        [ "$(wc -l <"$state/connects" 2>/dev/null || echo 0)" -ge "$SLOW" ] && break
        sleep 0.05
    done
    echo "slow clients connected: $(wc -l <"$state/connects")"
    sleep 1
fi
echo "RSS before: $(kb VmRSS) kB"
printf '%-6s %9s %7s %7s %7s %7s %8s %9s\n' round complete failed p50_ms p99_ms max_ms req/s rss_kB
for r in $(seq "$ROUNDS"); do
    [ "$r" -gt 1 ] && sleep "$PAUSE"
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
if [ "$SLOW" -gt 0 ]; then
    echo "slow clients: $(wc -l <"$state/connects") connections, $(cat "$state/hangups" 2>/dev/null | wc -l)" \
        "hung up on by the exporter"
fi
