# Sourced (not run) by the scripts that build Go tools from the Go module
# proxy into the tools cache: deploy/tools/install.sh and
# deploy/local/prometheus-operator.sh. It sets, for the script that sources it:
#
#   TOOLS       the tools directory, absolute, with bin/ in it:
#               $DENTRYLAB_TOOLS_DIR, default $HOME/.cache/dentrylab/tools
#   GOMODCACHE  $TOOLS/gomod   (Go's module and build caches: keep them,
#   GOCACHE     $TOOLS/gocache  a rebuild then downloads nothing)
#   GOFLAGS     -mod=mod -buildvcs=false; CGO_ENABLED=0 (static builds);
#               GOTOOLCHAIN auto unless already set
#   GO          the go command (on the PATH, else /usr/local/go/bin/go), or
#               empty: need_go NAME then exits 1 with one line naming NAME.
TOOLS=${DENTRYLAB_TOOLS_DIR:-$HOME/.cache/dentrylab/tools}
mkdir -p "$TOOLS/bin"
TOOLS=$(cd "$TOOLS" && pwd)
export GOMODCACHE=$TOOLS/gomod GOCACHE=$TOOLS/gocache
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

GO=
for cand in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
    if [ -n "$cand" ] && [ -x "$cand" ]; then
        GO=$cand
        break
    fi
done

need_go() {
    [ -n "$GO" ] || { echo "$1: no go on the PATH or in /usr/local/go" >&2; exit 1; }
}
