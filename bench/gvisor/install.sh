#!/usr/bin/env bash
# Builds runsc (gVisor's runtime) from the Go module proxy at a pinned
# version, checks that it runs, and caches it. Prints the binary's path on
# its last line. A second run with the binary in place takes well under a
# second; a rebuild with warm Go caches about a minute and a half; a cold one
# (module download + compile) about three minutes on a loaded 2-core VM
# (docs/gvisor.md).
#
#   bench/gvisor/install.sh            # -> target/gvisor/bin/runsc
#   DENTRYLAB_GVISOR_DIR=/opt/gv bench/gvisor/install.sh
#
# Everything goes under $DENTRYLAB_GVISOR_DIR (default target/gvisor):
#   bin/runsc, bin/runsc.version   the binary and the version it was built at
#   gomod/, gocache/               Go's module and build caches (keep them: a
#                                  rebuild then downloads nothing)
#   go/                            a Go toolchain, fetched from the Go module
#                                  proxy only when no go >= 1.21 is installed
#
# CGO_ENABLED=0 is required, not an optimisation: runsc's sandbox process
# pivots into an empty tmpfs (setUpChroot, runsc/cmd/sentry/sentrycmd/chroot.go)
# and then re-executes /proc/self/exe (ExecProcUmounter,
# runsc/cmd/sandboxsetup/process.go). A cgo build is dynamically linked, the
# kernel's load_elf_binary cannot open its ELF interpreter
# /lib64/ld-linux-x86-64.so.2 in that empty root, and execve fails with
# ENOENT: "error executing umounter: fork/exec /proc/self/exe: no such file
# or directory". A static build starts.
set -euo pipefail

# The `go` branch of gVisor (its Go-buildable mirror), 2026-09-05.
VERSION=v0.0.0-20260905035102-160fafc42237
# The toolchain gVisor's go.mod asks for at that version ("go 1.26.3").
GO_TOOLCHAIN=go1.26.3

cd "$(dirname "$0")/../.."
dir=${DENTRYLAB_GVISOR_DIR:-$PWD/target/gvisor}
mkdir -p "$dir/bin"
dir=$(cd "$dir" && pwd)
bin=$dir/bin/runsc
stamp=$dir/bin/runsc.version

check() {
    "$bin" --version >/dev/null 2>&1 || return 1
    # A dynamically linked runsc cannot start a sandbox (see above).
    if command -v file >/dev/null 2>&1 && file "$bin" | grep -q 'dynamically linked'; then
        return 1
    fi
}

if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$VERSION" ] && check; then
    echo "runsc $VERSION already built" >&2
    echo "$bin"
    exit 0
fi

# A go that can fetch or run $GO_TOOLCHAIN (GOTOOLCHAIN needs go >= 1.21).
go_ok() {
    local v
    v=$("$1" env GOVERSION 2>/dev/null) || return 1
    v=${v#go}
    local major=${v%%.*} rest=${v#*.}
    local minor=${rest%%.*}
    [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 21 ]; }
}
GO=
for cand in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$dir/go/bin/go"; do
    if [ -n "$cand" ] && [ -x "$cand" ] && go_ok "$cand"; then
        GO=$cand
        break
    fi
done
if [ -z "$GO" ]; then
    # The toolchain is itself a module on the Go module proxy.
    echo "no go >= 1.21 found: fetching $GO_TOOLCHAIN from the Go module proxy" >&2
    zip=$dir/toolchain.zip
    curl -sSfL -o "$zip" \
        "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-$GO_TOOLCHAIN.linux-amd64.zip"
    rm -rf "$dir/go" "$dir/toolchain"
    mkdir -p "$dir/toolchain"
    if command -v unzip >/dev/null 2>&1; then
        unzip -q "$zip" -d "$dir/toolchain"
    else
        python3 -m zipfile -e "$zip" "$dir/toolchain"
    fi
    mv "$dir/toolchain/golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-amd64" "$dir/go"
    rm -rf "$dir/toolchain" "$zip"
    chmod +x "$dir/go/bin/"* "$dir/go/pkg/tool/"*/* 2>/dev/null || true
    GO=$dir/go/bin/go
fi

export GOMODCACHE=$dir/gomod GOCACHE=$dir/gocache GOBIN=$dir/bin
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=$GO_TOOLCHAIN+auto
echo "building runsc $VERSION with $("$GO" version) (CGO_ENABLED=0)" >&2
start=$(date +%s)
# `go install pkg@version` builds outside any module: the pinned version and
# its go.sum come from the proxy and are checked against the checksum database.
(cd "$dir" && "$GO" install "gvisor.dev/gvisor/runsc@$VERSION")
echo "$VERSION" >"$stamp"
if ! check; then
    echo "runsc built at $bin but \`runsc --version\` failed or it is dynamically linked" >&2
    exit 1
fi
echo "built in $(($(date +%s) - start)) s: $("$bin" --version | head -1)" >&2
echo "$bin"
