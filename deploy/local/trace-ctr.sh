#!/usr/bin/env bash
# The system calls a real container start makes, for the pod-start victim
# (docs/victims.md, "The pod-start victim"): Debian's containerd and runc
# run a one-file image built here (busybox, no registry), and strace -f
# follows containerd, the shim and runc it spawns while `ctr run --rm`
# starts and removes one container. Prints the mount, umount2, unshare,
# setns, clone and pivot_root calls, counted by call and by process, and
# keeps the whole trace in OUT (default /tmp/trace-ctr).
#
#   sudo deploy/local/trace-ctr.sh [OUT]
#
# containerd runs in a mount namespace of its own, its root, state and
# socket under OUT: every mount it and the shim make goes when it stops,
# which this script does however it ends (and removes its cgroups).
set -euo pipefail
out=${1:-/tmp/trace-ctr}
[ "$(id -u)" = 0 ] || { echo "trace-ctr.sh: needs root (containerd, mounts)" >&2; exit 1; }
need=()
for b in containerd ctr runc strace busybox; do command -v "$b" >/dev/null || need+=("$b"); done
if [ ${#need[@]} -gt 0 ]; then
    echo "trace-ctr.sh: missing ${need[*]}: apt-get install containerd runc strace busybox-static" >&2
    exit 1
fi
rm -rf "$out"
mkdir -p "$out/image/blobs/sha256" "$out/rootfs/bin" "$out/strace"
sock="$out/containerd.sock"
ctr=(ctr --address "$sock" --namespace dentrylab-trace)

# The image: one layer holding a static busybox as /bin/sh and /bin/true,
# in an OCI layout `ctr images import` takes.
cp "$(command -v busybox)" "$out/rootfs/bin/busybox"
ln -s busybox "$out/rootfs/bin/sh"
ln -s busybox "$out/rootfs/bin/true"
tar -C "$out/rootfs" -cf "$out/layer.tar" .
blob() { # file -> sha256 hex, the file stored as a blob
    local h
    h=$(sha256sum "$1" | cut -d' ' -f1)
    cp "$1" "$out/image/blobs/sha256/$h"
    echo "$h"
}
size() { stat -c %s "$1"; }
layer=$(blob "$out/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/true"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$layer" >"$out/config.json"
config=$(blob "$out/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config" "$(size "$out/config.json")" "$layer" "$(size "$out/layer.tar")" >"$out/manifest.json"
manifest=$(blob "$out/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"dentrylab/trace:1"}}]}' \
    "$manifest" "$(size "$out/manifest.json")" >"$out/image/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$out/image/oci-layout"
tar -C "$out/image" -cf "$out/image.tar" .

# The shim and runc keep their sockets and state under /run/containerd:
# made here, it goes at the end.
run_was_there=$([ -e /run/containerd ] && echo yes || echo no)
unshare --mount --propagation private \
    containerd --root "$out/root" --state "$out/state" --address "$sock" >"$out/containerd.log" 2>&1 &
daemon=$!
cleanup() {
    "${ctr[@]}" tasks kill -s KILL trace >/dev/null 2>&1 || true
    "${ctr[@]}" containers delete trace >/dev/null 2>&1 || true
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
    find /sys/fs/cgroup -depth -type d -name 'dentrylab-trace*' -exec rmdir {} \; 2>/dev/null || true
    if [ "$run_was_there" = no ]; then rm -rf /run/containerd; fi
}
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
"${ctr[@]}" images import "$out/image.tar" >/dev/null
# unshare execs containerd: $daemon is containerd itself.
strace -f -tt -qq -e trace=%file,mount,umount2,unshare,clone,clone3,setns,pivot_root \
    -o "$out/strace/trace" -p "$daemon" &
tracer=$!
sleep 1
"${ctr[@]}" run --rm dentrylab/trace:1 trace /bin/true
sleep 1
kill "$tracer"
wait "$tracer" 2>/dev/null || true

summary() {
    local t="$out/strace/trace"
    echo "== calls (all processes): count, call"
    grep -oE '^[0-9]+ +[0-9:.]+ (mount|umount2|unshare|setns|pivot_root|clone3?)\(' "$t" |
        sed -E 's/^[0-9]+ +[0-9:.]+ //; s/\($//' | sort | uniq -c | sort -rn
    echo "== every mount, umount2, unshare, setns, pivot_root, in order (pid, call)"
    grep -E '^[0-9]+ +[0-9:.]+ (mount|umount2|unshare|setns|pivot_root)\(' "$t" |
        sed -E 's/^([0-9]+) +[0-9:.]+ /\1 /; s/ = .*//'
}
summary | tee "$out/summary.txt"
