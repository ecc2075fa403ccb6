#!/usr/bin/env bash
# Builds a Go tool the deploy tests need from the Go module proxy, at a
# pinned version, checks that it runs, and caches it outside the clone.
# Prints the binary's path on its last line; a second run with the binary
# in place returns at once.
#
#   deploy/tools/install.sh helm     # helm, for deploy/render.sh and `helm lint`
#   deploy/tools/install.sh npd      # node-problem-detector, for tests/npd.rs
#   deploy/tools/install.sh metrics-server  # for `kubectl top`, deploy/local/pod-memory.py
#
# Everything goes under $DENTRYLAB_TOOLS_DIR (default
# $HOME/.cache/dentrylab/tools): bin/NAME and bin/NAME.version (the binary
# and the version it was built at), gomod/ and gocache/ (Go's caches: keep
# them, a rebuild then downloads nothing). Static builds (CGO_ENABLED=0).
set -euo pipefail

ldflags=
case "${1:-}" in
helm)
    # helm v3: `go install` of its command at a release tag.
    pkg=helm.sh/helm/v3/cmd/helm
    VERSION=v3.22.0
    name=helm
    tags=
    check_args=(version --short)
    ;;
npd)
    # node-problem-detector without the journald watcher (that one needs
    # cgo and libsystemd): the kmsg and filelog watchers are what it uses here.
    pkg=k8s.io/node-problem-detector/cmd/nodeproblemdetector
    VERSION=v1.34.0
    name=node-problem-detector
    tags=
    check_args=(--version)
    ;;
metrics-server)
    # What `kubectl top` reads (the metrics.k8s.io API, from each kubelet's
    # /metrics/resource); its version stamped as its Makefile does.
    pkg=sigs.k8s.io/metrics-server/cmd/metrics-server
    VERSION=v0.8.0
    name=metrics-server
    tags=
    ldflags="-X k8s.io/client-go/pkg/version.gitVersion=$VERSION"
    check_args=(--version)
    ;;
*)
    echo "usage: deploy/tools/install.sh helm|npd|metrics-server" >&2
    exit 2
    ;;
esac
dir=${DENTRYLAB_TOOLS_DIR:-$HOME/.cache/dentrylab/tools}
mkdir -p "$dir/bin"
dir=$(cd "$dir" && pwd)
built=$dir/bin/${pkg##*/}
bin=$dir/bin/$name
stamp=$bin.version

if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg@$VERSION" ] && "$bin" "${check_args[@]}" >/dev/null 2>&1; then
    echo "$name $VERSION already built" >&2
    echo "$bin"
    exit 0
fi

GO=
for cand in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
    if [ -n "$cand" ] && [ -x "$cand" ]; then
        GO=$cand
        break
    fi
done
[ -n "$GO" ] || { echo "deploy/tools/install.sh: no go on the PATH or in /usr/local/go" >&2; exit 1; }

export GOMODCACHE=$dir/gomod GOCACHE=$dir/gocache GOBIN=$dir/bin
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=auto
echo "building $name ($pkg@$VERSION) with $("$GO" version)" >&2
start=$(date +%s)
if [ "$name" = helm ]; then
    # `go install pkg@version` builds outside any module: the pinned version and
    # its go.sum come from the proxy and are checked against the checksum database.
    (cd "$dir" && "$GO" install ${tags:+-tags "$tags"} "$pkg@$VERSION")
    [ "$built" = "$bin" ] || mv "$built" "$bin"
else
    # The proxy refuses node-problem-detector's version list, which `go
    # install pkg@version` reads for deprecations (403) (metrics-server is
    # built the same way, for its version stamp): download the pinned
    # version (checked against the checksum database) and build its command
    # in its own module, with its own go.sum.
    mod=${pkg%%/cmd/*}
    src=$(cd "$dir" && "$GO" mod download -json "$mod@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] || { echo "go mod download $mod@$VERSION gave no directory" >&2; exit 1; }
    (cd "$src" && GOFLAGS=-mod=readonly "$GO" build ${tags:+-tags "$tags"} ${ldflags:+-ldflags "$ldflags"} \
        -o "$bin" "./${pkg#"$mod"/}")
fi
echo "$pkg@$VERSION" >"$stamp"
if ! "$bin" "${check_args[@]}" >/dev/null 2>&1; then
    echo "$name built at $bin but \`$name ${check_args[*]}\` failed" >&2
    exit 1
fi
echo "built in $(($(date +%s) - start)) s: $("$bin" "${check_args[@]}" 2>&1 | head -1)" >&2
echo "$bin"
