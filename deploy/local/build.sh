#!/usr/bin/env bash
# Builds the Kubernetes binaries the one-node cluster of deploy/local/up.sh
# runs (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kubectl) from the Go module proxy at a pinned version, and a static pause
# binary from deploy/local/pause. Cached: a second run with the binaries in
# place returns at once. Prints the bin directory on its last line.
#
#   deploy/local/build.sh              # -> ~/.cache/dentrylab/k8s/bin
#   DENTRYLAB_K8S_DIR=/opt/k8s deploy/local/build.sh
#
# How the staging modules resolve: k8s.io/kubernetes is published on the
# module proxy, but its go.mod requires each of its staging modules
# (k8s.io/api, k8s.io/client-go, k8s.io/kubelet, ... 29 at v1.34.2) at
# v0.0.0 and points them at ./staging/src/... with `replace` directives,
# which Go ignores in a dependency. Each staging module is published on its
# own at v0.<minor>.<patch> (k8s.io/api v0.34.2 for kubernetes v1.34.2), so
# the build module below requires k8s.io/kubernetes at $VERSION and
# replaces every k8s.io/* module that kubernetes' go.mod requires at exactly
# v0.0.0 by the same path at $STAGING. The list is read from that go.mod,
# not written here. Without -ldflags -X ...version.gitVersion the binaries
# report v0.0.0-master.
#
# Everything goes under $DENTRYLAB_K8S_DIR (default ~/.cache/dentrylab/k8s):
#   bin/                 the binaries, and bin/version (what they were built at)
#   build/               the build module (go.mod, go.sum)
#   gomod/, gocache/     Go's module and build caches (keep them: a rebuild
#                        then downloads nothing)
set -euo pipefail

# Kubernetes 1.34.2 (2025-11-11): the last minor whose kubelet still starts
# on cgroup v1 by default (1.35 sets failCgroupV1) and supports containerd
# 1.6 (Debian 12's).
VERSION=v1.34.2
STAGING=v0.34.2
CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

here=$(cd "$(dirname "$0")" && pwd)
dir=${DENTRYLAB_K8S_DIR:-$HOME/.cache/dentrylab/k8s}
mkdir -p "$dir/bin" "$dir/build"
dir=$(cd "$dir" && pwd)
bin=$dir/bin

have_all() {
    [ "$(cat "$bin/version" 2>/dev/null)" = "$VERSION" ] || return 1
    for c in "${CMDS[@]}" pause; do [ -x "$bin/$c" ] || return 1; done
    "$bin/kubectl" version --client 2>/dev/null | grep "$VERSION" >/dev/null
}
if have_all; then
    echo "kubernetes $VERSION already built in $bin" >&2
    echo "$bin"
    exit 0
fi

GO=$(command -v go || true)
[ -n "$GO" ] || GO=/usr/local/go/bin/go
if ! [ -x "$GO" ]; then
    echo "no go found: install Go >= 1.24 (kubernetes $VERSION's go.mod asks for go 1.24)" >&2
    exit 1
fi
export GOMODCACHE=$dir/gomod GOCACHE=$dir/gocache
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

start=$(date +%s)
cd "$dir/build"
if ! [ -f go.mod ] || ! grep -q "k8s.io/kubernetes $VERSION" go.mod; then
    rm -f go.mod go.sum
    cat >go.mod <<MOD
module dentrylab.local/k8s-build

go 1.24.0

require k8s.io/kubernetes $VERSION
MOD
    kmod=$("$GO" mod download -json "k8s.io/kubernetes@$VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
    [ -f "$kmod" ] || { echo "could not download k8s.io/kubernetes@$VERSION's go.mod" >&2; exit 1; }
    staging=$(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$kmod" | sort -u)
    n=0
    for m in $staging; do
        "$GO" mod edit -replace "$m=$m@$STAGING"
        n=$((n + 1))
    done
    echo "k8s.io/kubernetes $VERSION: $n staging modules replaced by their published $STAGING" >&2
fi

pkgs=()
for c in "${CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
date_now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    minor=${VERSION#v1.}
    minor=${minor%%.*}
    ld="$ld -X $p.gitVersion=$VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=$date_now"
done
echo "building ${CMDS[*]} at $VERSION with $("$GO" version) (CGO_ENABLED=0)" >&2
"$GO" build -trimpath -ldflags "$ld" -o "$bin/" "${pkgs[@]}"
# The pod sandbox's pause process (no registry is reachable for
# registry.k8s.io/pause): our own, static, from deploy/local/pause.
(cd "$here/pause" && "$GO" build -trimpath -ldflags "-s -w" -o "$bin/pause" .)
echo "$VERSION" >"$bin/version"
if ! have_all; then
    echo "built in $bin but \`kubectl version --client\` does not report $VERSION" >&2
    exit 1
fi
echo "built in $(($(date +%s) - start)) s" >&2
echo "$bin"
