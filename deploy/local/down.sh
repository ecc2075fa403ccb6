#!/usr/bin/env bash
# Takes down the cluster deploy/local/up.sh made, whatever state it is in
# (up, half up, already down), and checks that nothing is left: no process
# of its own, no mount, no kubepods cgroup, no veth or bridge, no KUBE-* iptables chain; the sysctls the kubelet and the
# bridge plugin set are back to what up.sh saved. Exits 1 and lists what is
# left if anything is. Keeps the cache (binaries, images).
#
#   deploy/local/down.sh
#
# Order: the pods first, through the API (the kubelet stops their
# containers and the bridge plugin removes their veths), then the kubelet,
# every process left in the cluster's mount namespace (containerd, its
# shims, the containers), the namespace itself (its mounts go with it),
# then what lives outside it.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S=${DENTRYLAB_K8S_DIR:-$HOME/.cache/dentrylab/k8s}
RUN=$K8S/run
BIN=$K8S/bin
BRIDGE=dlk8s-br0
[ "$(id -u)" = 0 ] || { echo "down.sh: needs root" >&2; exit 1; }

pid_of() { cat "$RUN/pids/$1.pid" 2>/dev/null; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
stop() { # NAME [SECONDS]: SIGTERM, then SIGKILL after SECONDS
    local pid i
    pid=$(pid_of "$1") || return 0
    if alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < ${2:-10} * 5; i++)); do
            alive "$pid" || break
            sleep 0.2
        done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$RUN/pids/$1.pid"
}

# 1. The pods, through the API while the kubelet still runs.
if alive "$(pid_of kubelet)" && alive "$(pid_of kube-apiserver)" && [ -x "$BIN/kubectl" ]; then
    k=("$BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" --request-timeout=10s)
    "${k[@]}" delete daemonsets,jobs,deployments,replicasets,statefulsets --all -A \
        --wait=false >/dev/null 2>&1
    "${k[@]}" delete pods --all -A --grace-period=5 --timeout=60s >/dev/null 2>&1
    for ((i = 0; i < 60; i++)); do
        [ -z "$("${k[@]}" get pods -A -o name 2>/dev/null)" ] && break
        sleep 1
    done
fi

# kill_kubepods: SIGKILL to every process in the kubelet's cgroups.
kill_kubepods() {
    local f pid
    for f in /sys/fs/cgroup/kubepods/cgroup.procs /sys/fs/cgroup/*/kubepods/cgroup.procs; do
        [ -d "${f%/cgroup.procs}" ] || continue
        for pid in $(find "${f%/cgroup.procs}" -name cgroup.procs -exec cat {} + 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null
        done
    done
}

# 2. The kubelet, then everything in the mount namespace, then the namespace.
stop kubelet 20
ns_pid=$(pid_of mntns)
if alive "$ns_pid"; then
    ns=$(readlink "/proc/$ns_pid/ns/mnt")
    if [ "$ns" != "$(readlink /proc/self/ns/mnt)" ]; then
        # Containers run in mount namespaces of their own: kill them through
        # containerd, then whatever is still in the kubelet's cgroups.
        ctr=(ctr --address "$RUN/containerd/containerd.sock" --namespace k8s.io --timeout 10s)
        if "${ctr[@]}" version >/dev/null 2>&1; then
            for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
                "${ctr[@]}" tasks kill -a -s KILL "$t" >/dev/null 2>&1
            done
            sleep 1
            for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
                "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1
            done
        fi
        kill_kubepods
        stop containerd 10
        # What is left in it: containerd's shims and their containers.
        for sig in TERM KILL; do
            for p in /proc/[0-9]*; do
                pid=${p#/proc/}
                [ "$pid" = "$ns_pid" ] && continue
                [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] && kill "-$sig" "$pid" 2>/dev/null
            done
            sleep 2
        done
    fi
fi
stop mntns 5
kill_kubepods
stop containerd 5
for c in kube-scheduler kube-controller-manager kube-apiserver; do stop "$c" 10; done
stop etcd 10

# 3. What lives outside the namespace.
if ip link show "$BRIDGE" >/dev/null 2>&1; then
    for v in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
        ip link del "$v" 2>/dev/null
    done
    ip link del "$BRIDGE" 2>/dev/null
fi
# containerd's CRI names its pods' network namespaces /run/netns/cni-<uuid>;
# their bind mounts were in the cluster's mount namespace, the files remain.
for f in /run/netns/cni-*; do
    [ -e "$f" ] || continue
    mountpoint -q "$f" || rm -f "$f"
done
rmdir /run/netns 2>/dev/null
# The kubelet's cgroups (cgroupfs driver), deepest first.
for root in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$root/kubepods" ] || continue
    find "$root/kubepods" -depth -type d -exec rmdir {} + 2>/dev/null
done
# KUBE-* chains (the kubelet's canaries, with makeIPTablesUtilChains off).
for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null 2>&1 || continue
    for t in filter nat mangle; do
        for ch in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
            "$ipt" -t "$t" -F "$ch" 2>/dev/null
        done
        for ch in $("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
            "$ipt" -t "$t" -X "$ch" 2>/dev/null
        done
    done
done
# /var/log/containers: the kubelet's symlinks to its pod logs.
for l in /var/log/containers/*; do
    [ -L "$l" ] && case "$(readlink "$l")" in "$RUN"/*) rm -f "$l" ;; esac
done
rmdir /var/log/containers 2>/dev/null
if [ -f "$RUN/sysctl.saved" ]; then
    while IFS== read -r k v; do
        [ -n "$k" ] && sysctl -q -w "$k=$v" >/dev/null
    done <"$RUN/sysctl.saved"
fi

# Host directories up.sh found missing and the cluster made.
if [ -f "$RUN/created-dirs" ]; then
    while read -r d; do
        case "$d" in /run/* | /var/lib/* | /var/log/*) mountpoint -q "$d" || rm -rf "$d" ;; esac
    done <"$RUN/created-dirs"
fi

# 4. Check, then remove the run directory.
left=()
if [ -f "$RUN/created-dirs" ]; then
    while read -r d; do [ -e "$d" ] && left+=("directory $d"); done <"$RUN/created-dirs"
fi
for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null) || continue
    case "$exe" in
        "$BIN"/*) left+=("process ${p#/proc/} ($exe)") ;;
        */containerd | */containerd-shim-runc-v2 | */etcd)
            if grep -qF "$RUN" "$p/cmdline" 2>/dev/null; then left+=("process ${p#/proc/} ($exe)"); fi ;;
    esac
done
grep -qF "$RUN" /proc/self/mountinfo && left+=("mounts under $RUN")
for root in /sys/fs/cgroup /sys/fs/cgroup/*; do
    [ -d "$root/kubepods" ] && left+=("cgroup $root/kubepods")
done
for l in "$BRIDGE"; do ip link show "$l" >/dev/null 2>&1 && left+=("interface $l"); done
command -v iptables-save >/dev/null 2>&1 && iptables-save 2>/dev/null | grep '^:KUBE-' >/dev/null && left+=("iptables KUBE-* chains")
if [ -f "$RUN/sysctl.saved" ]; then
    while IFS== read -r k v; do
        [ -n "$k" ] && [ "$(sysctl -n "$k")" != "$v" ] && left+=("sysctl $k=$(sysctl -n "$k"), was $v")
    done <"$RUN/sysctl.saved"
fi
if [ ${#left[@]} -gt 0 ]; then
    echo "down.sh: left behind (run $0 again, or remove by hand):" >&2
    printf '  %s\n' "${left[@]}" >&2
    exit 1
fi
rm -rf "$RUN"
echo "down: no process, mount, cgroup, interface or iptables chain of the cluster left" >&2
