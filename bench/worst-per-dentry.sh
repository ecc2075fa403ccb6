#!/usr/bin/env bash
# The worst reclaim cost per dentry on this machine: the provenance of the
# built-in default `status` uses when no calibration was saved
# (src/status/calibration.rs, docs/results/worst-per-dentry-6.18.md).
#
# Runs `dentrylab reclaim --method umount` at one moderate size for every
# kind each filesystem can hold (tmpfs: hardlink, file; ext4 and xfs:
# hardlink, file, negative, unlinked), with unobserved repetitions (the
# table's ns/dentry come from them), and prints one line per combination
# with its median ns/dentry and its spread, then the worst median with the
# command that measured it, and the kernel. Needs root (and mkfs.ext4,
# mkfs.xfs); nothing is left mounted.
#
#   bench/worst-per-dentry.sh [SIZE] [REPS] [FS...]    (default 2M, 3 reps, tmpfs ext4 xfs)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-2M}
reps=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
fss=("$@")
(( ${#fss[@]} )) || fss=(tmpfs ext4 xfs)

# DENTRYLAB=path runs that binary instead of building this checkout.
if [[ -z ${DENTRYLAB:-} ]]; then cargo build --release --quiet; fi
bin=${DENTRYLAB:-target/release/dentrylab}
out=$(mktemp -d /tmp/dentrylab-worst.XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "umount of $size dentries, $reps unobserved (+ $reps probed) repetitions, kernel $(uname -r), $(nproc) CPUs"
printf "%-6s %-9s %16s %22s\n" fs kind "ns/dentry median" "min-max"
worst=0; worst_cmd=""; worst_what=""
for fs in "${fss[@]}"; do
    kinds=(hardlink file)
    [[ $fs != tmpfs ]] && kinds+=(negative unlinked)
    for kind in "${kinds[@]}"; do
        cmd="$bin reclaim --method umount --fs $fs --kind $kind --sizes $size --reps $reps --unobserved-reps $reps --no-save"
        if ! $cmd --json "$out/$fs-$kind.json" >/dev/null 2>"$out/$fs-$kind.err"; then
            printf "%-6s %-9s failed: %s\n" "$fs" "$kind" "$(tail -1 "$out/$fs-$kind.err")"
            continue
        fi
        read -r med lo hi < <(jq -r '.sizes[0].ns_per_dentry | "\(.median|round) \(.min|round) \(.max|round)"' "$out/$fs-$kind.json")
        printf "%-6s %-9s %16s %22s\n" "$fs" "$kind" "$med" "$lo-$hi"
        if (( med > worst )); then worst=$med; worst_cmd=$cmd; worst_what="$fs $kind"; fi
    done
done
echo "worst ns/dentry: $worst ($worst_what)"
echo "command: ${worst_cmd#"$bin "}"
echo "kernel: $(uname -r)"
