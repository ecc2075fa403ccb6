#!/usr/bin/env bash
# Builds prometheus-operator and its config reloader from the Go module proxy
# at a pinned version, and the two images the operator's Prometheus pod runs
# on the one-node cluster of deploy/local/up.sh (no registry is reachable):
# the config reloader (static, from the same build) and Prometheus 3.5.0
# with Kubernetes discovery (static, `deploy/tools/install.sh prometheus`:
# also from the Go module proxy, pinned, without the web UI).
# Cached: a second run with everything in place returns at once. Prints, on
# its last line, the variables .ci/k8s evaluates:
#
#   eval "$(deploy/local/prometheus-operator.sh | tail -n 1)"
#   # -> OPERATOR_BIN=<dir> OPERATOR_CRDS=<dir> OPERATOR_VERSION=v0.85.0
#   #    PROMETHEUS_BIN=<file> PROMETHEUS_VERSION=v3.5.0
#   #    PROMETHEUS_IMAGE=... RELOADER_IMAGE=... OPERATOR_IMAGES="<tar> <tar>"
#
# How it builds: the operator's go.mod replaces its own two submodules
# (pkg/apis/monitoring, pkg/client) by ./pkg/..., directories the module's
# zip on the proxy does not hold (each is a module of its own), so neither
# `go install pkg@version` nor a build inside the downloaded module works.
# A build module of ours requires the operator and both submodules at the
# same pinned version, as published, and builds cmd/operator and
# cmd/prometheus-config-reloader in it (checked against the checksum
# database). The CRDs are the module's own example/prometheus-operator-crd/
# (the YAML the operator's release ships as bundle.yaml's CRDs).
#
# Everything goes under $DENTRYLAB_TOOLS_DIR (default
# $HOME/.cache/dentrylab/tools, shared with deploy/tools/install.sh):
# bin/prometheus-operator, bin/prometheus-config-reloader and
# bin/prometheus-operator.version, build/prometheus-operator/ (the build
# module), gomod/ and gocache/ (keep them: a rebuild downloads nothing); the
# image tarballs under $DENTRYLAB_K8S_DIR/images (default
# $HOME/.cache/dentrylab/k8s/images).
set -euo pipefail

# v0.85.0 (2025-08-21): the newest release the module proxy answers for here.
# Its compatibility matrix runs from Prometheus v2.45.0 to v3.5.0, its
# default; the Prometheus object names PROMETHEUS_VERSION, and the operator
# generates the configuration and flags that version takes (it gates each
# option on the version).
VERSION=v0.85.0
MOD=github.com/prometheus-operator/prometheus-operator
PROMETHEUS_VERSION=v3.5.0 # deploy/tools/install.sh prometheus builds it
PROMETHEUS_IMAGE=localhost/dentrylab/prometheus:$PROMETHEUS_VERSION
RELOADER_IMAGE=localhost/dentrylab/prometheus-config-reloader:$VERSION

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tools/go-env.sh"
dir=$TOOLS
k8s=${DENTRYLAB_K8S_DIR:-$HOME/.cache/dentrylab/k8s}
mkdir -p "$dir/build/prometheus-operator" "$k8s/images"
k8s=$(cd "$k8s" && pwd)
bin=$dir/bin
stamp=$bin/prometheus-operator.version

have_bins() {
    [ "$(cat "$stamp" 2>/dev/null)" = "$MOD@$VERSION" ] || return 1
    "$bin/prometheus-operator" --version 2>&1 | grep -q "${VERSION#v}" || return 1
    "$bin/prometheus-config-reloader" --version 2>&1 | grep -q "${VERSION#v}"
}
if ! have_bins; then
    need_go prometheus-operator.sh
    start=$(date +%s)
    cd "$dir/build/prometheus-operator"
    if ! [ -f go.mod ] || ! grep -q "$MOD $VERSION" go.mod; then
        rm -f go.mod go.sum
        cat >go.mod <<GOMOD
module dentrylab.local/prometheus-operator-build

go 1.24.0

require (
	$MOD $VERSION
	$MOD/pkg/apis/monitoring $VERSION
	$MOD/pkg/client $VERSION
)
GOMOD
    fi
    ld="-s -w"
    for kv in "Version=${VERSION#v}" "Revision=$VERSION" "Branch=release" "BuildUser=dentrylab" \
        "BuildDate=$(date -u +%Y%m%d-%H:%M:%S)"; do
        ld="$ld -X github.com/prometheus/common/version.$kv"
    done
    echo "building prometheus-operator and prometheus-config-reloader ($MOD@$VERSION) with $("$GO" version)" >&2
    "$GO" build -trimpath -ldflags "$ld" -o "$bin/prometheus-operator" "$MOD/cmd/operator"
    "$GO" build -trimpath -ldflags "$ld" -o "$bin/prometheus-config-reloader" "$MOD/cmd/prometheus-config-reloader"
    echo "$MOD@$VERSION" >"$stamp"
    have_bins || { echo "built in $bin but --version does not report ${VERSION#v}" >&2; exit 1; }
    echo "built in $(($(date +%s) - start)) s" >&2
fi

# The CRDs, from the module's source (downloaded by the build above).
crds=$GOMODCACHE/$MOD@$VERSION/example/prometheus-operator-crd
ls "$crds"/monitoring.coreos.com_*.yaml >/dev/null 2>&1 || { echo "no CRDs in $crds" >&2; exit 1; }

# The images (deploy/local/image.sh: one-layer OCI tarballs of static binaries).
prom=$("$here/../tools/install.sh" prometheus | tail -n 1)
"$prom" --version 2>&1 | grep -q "version ${PROMETHEUS_VERSION#v} " \
    || { echo "prometheus-operator.sh: $prom is not Prometheus $PROMETHEUS_VERSION" >&2; exit 1; }
sum=$(cat "$prom" "$bin/prometheus-config-reloader" | sha256sum | cut -c1-16)
if [ "$(cat "$k8s/images/prometheus-operator.sum" 2>/dev/null)" != "$sum $VERSION $PROMETHEUS_VERSION" ]; then
    "$here/image.sh" "$k8s/images/prometheus.tar" "$PROMETHEUS_IMAGE" "$prom" /bin/prometheus \
        65534:65534 /bin/prometheus >/dev/null
    "$here/image.sh" "$k8s/images/prometheus-config-reloader.tar" "$RELOADER_IMAGE" \
        "$bin/prometheus-config-reloader" /bin/prometheus-config-reloader 65534:65534 \
        /bin/prometheus-config-reloader >/dev/null
    echo "$sum $VERSION $PROMETHEUS_VERSION" >"$k8s/images/prometheus-operator.sum"
fi
echo "prometheus-operator $VERSION in $bin; CRDs in $crds; images $PROMETHEUS_IMAGE, $RELOADER_IMAGE" >&2
echo "OPERATOR_BIN=$bin OPERATOR_CRDS=$crds OPERATOR_VERSION=$VERSION PROMETHEUS_BIN=$prom" \
    "PROMETHEUS_VERSION=$PROMETHEUS_VERSION PROMETHEUS_IMAGE=$PROMETHEUS_IMAGE RELOADER_IMAGE=$RELOADER_IMAGE" \
    "OPERATOR_IMAGES=\"$k8s/images/prometheus.tar $k8s/images/prometheus-config-reloader.tar\""
