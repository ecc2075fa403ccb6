#!/usr/bin/env bash
# What a user sees of dentrylab without any benchmark running: every
# command's --help (the hidden __internal excluded), exit codes and the
# messages of bad input, as root and as nobody. Each case's exit code,
# standard output and standard error go into OUTDIR/root.txt and
# OUTDIR/nobody.txt, so two binaries' transcripts can be diffed:
#
#   bench/transcripts/run.sh OLD_BINARY /tmp/old
#   bench/transcripts/run.sh target/release/dentrylab /tmp/new
#   diff -u /tmp/old/root.txt /tmp/new/root.txt; diff -u /tmp/old/nobody.txt /tmp/new/nobody.txt
#
# Commands and their options come from the binary's own --help: for each
# command, --help, -h, `help C`, an unknown flag, and every option that
# takes a value given none; then the bad values listed below. Every case
# that could be valid carries `--json /nonexistent/x.json`, which fails
# before any work, so no case runs a benchmark. Cases run from a fixed
# scratch directory with an empty environment (PATH and HOME only), under
# `timeout 30`. Needs root (for setpriv and to run as root); the binary is
# copied into the scratch directory so that nobody can run it.
set -uo pipefail

if [ $# -ne 2 ]; then
    echo "usage: $0 BINARY OUTDIR" >&2
    exit 2
fi
bin=$1
out=$2
if [ "$(id -u)" != 0 ]; then
    echo "$0: run it as root: it runs every case as root and as nobody (setpriv)" >&2
    exit 2
fi
work=/tmp/dentrylab-transcripts
rm -rf "$work"
mkdir -p "$work/home" "$work/results" "$out"
trap 'rm -rf "$work"' EXIT
install -m 0755 "$bin" "$work/dentrylab"
chmod -R a+rwX "$work"
echo '{}' >"$work/results/empty.json"
echo '{"schema":2,"benchmark":"nosuch","command":"dentrylab nosuch","started_at":"2026-01-01T00:00:00Z"}' >"$work/results/unknown.json"
echo 'not json' >"$work/results/garbage.json"

J="--json /nonexistent/x.json"
# Bad values (one case a line, words split on blanks).
curated() {
    cat <<CASES
reclaim --sizes abc $J
reclaim --sizes 0 $J
reclaim --sizes 1000000000000000 $J
reclaim --method nosuch $J
reclaim --kind nosuch $J
reclaim --fs nosuch $J
reclaim --fs overlay --method drop-caches $J
reclaim --reps 0 $J
reclaim --cpu 99 $J
reclaim --watchdog-check $J
reclaim --watchdog-check --watchdog-thresh 1 $J
reclaim --probe-policy nosuch $J
reclaim --contend abc $J
reclaim --extrapolate abc $J
reclaim $J
create --count abc $J
create --count 0 $J
create --kind nosuch --count 1000 $J
create --hold abc --count 1000 $J
create --count 1000 $J
pollute --fs tmpfs $J
pollute --negatives abc $J
pollute --cpu 99 $J
pollute --reps 0 $J
pollute $J
churn --files abc $J
churn --workers 0 $J
churn --fs tmpfs $J
churn --interval abc $J
churn --dirs 0 $J
churn $J
scale --ops nosuch $J
scale --threads abc $J
scale --seconds abc $J
scale --fs nosuch $J
scale --sample-every 0 $J
scale $J
mitigate $J
mitigate --workload nosuch $J
mitigate --workload lookups --setting bogus=1 $J
mitigate --workload lookups --setting vm.vfs_cache_pressure=100 $J
mitigate --workload lookups --memory-limit abc $J
mitigate --workload lookups --duration abc $J
mitigate --workload lookups --cpu 99 $J
mitigate --workload mariadb --clients 0 $J
mitigate --workload lookups $J
containers --count 0 $J
containers --count 2 --workload nosuch $J
containers --count 2 --parallel 0 $J
containers --count 2 --fs tmpfs $J
containers --count 2 --rate abc $J
containers --count 2 --cpu 99 $J
containers --count 2 $J
gvisor --runsc /nonexistent $J
gvisor --workload nosuch $J
gvisor --dcache abc $J
gvisor --threads 0 $J
status --fail-on nosuch $J
status --watch abc $J
status --window abc $J
status --samples abc $J
status --proc-root /nonexistent $J
status $J
exporter --listen bogus
exporter --listen 127.0.0.1:99999
exporter --window abc
report
report $work/results/empty.json
report /nonexistent/x.json -o $work/out
report $work/results/empty.json -o $work/out
report $work/results/unknown.json -o $work/out
report $work/results/garbage.json -o $work/out
report $work/results/empty.json -o /proc/dentrylab/out
vm
vm --kernel /nonexistent/vmlinuz $J -- status
vm --kernel /nonexistent/vmlinuz --preempt nosuch $J -- status
vm --kernel /nonexistent/vmlinuz --memory abc $J -- status
vm --kernel /nonexistent/vmlinuz --accel nosuch $J -- status
vm --kernel /nonexistent/vmlinuz $J
census --sample 2 $J
census --top abc $J
census --kcore /nonexistent/kcore $J
CASES
}

# The commands --help lists (its "Commands:" block, `help` aside).
commands() {
    "$work/dentrylab" --help | awk '/^Commands:/ {on=1; next} on && /^[^ ]/ {on=0} on && NF {print $1}' | grep -v '^help$'
}

# Options of command $1 that take a value: `--name <VALUE>` in its --help.
value_options() {
    "$work/dentrylab" "$1" --help | grep -o -- '--[a-z0-9-]* <' | sed 's/ <$//' | sort -u
}

cases() {
    printf '%s\n' "" "--help" "-h" "--version" "help" "nosuch" "--bogus"
    for c in $(commands); do
        printf '%s\n' "$c --help" "$c -h" "help $c" "$c --bogus"
        for o in $(value_options "$c"); do
            printf '%s\n' "$c $o"
        done
    done
    curated
}

run_case() {
    local who=$1 line=$2
    local -a args pre=()
    read -r -a args <<<"$line"
    [ "$who" = nobody ] && pre=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
    (cd "$work" && timeout 30 "${pre[@]}" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work/home" \
        "$work/dentrylab" "${args[@]}" >"$work/stdout" 2>"$work/stderr")
    local rc=$?
    printf '$ dentrylab %s\n[exit %s]\n' "$line" "$rc"
    if [ -s "$work/stdout" ]; then
        echo '--- stdout'
        cat "$work/stdout"
    fi
    if [ -s "$work/stderr" ]; then
        echo '--- stderr'
        cat "$work/stderr"
    fi
    echo
}

mapfile -t all < <(cases)
for who in root nobody; do
    for line in "${all[@]}"; do
        run_case "$who" "$line"
    done >"$out/$who.txt"
    echo "$out/$who.txt: ${#all[@]} cases as $who"
done
