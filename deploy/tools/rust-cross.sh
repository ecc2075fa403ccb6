#!/usr/bin/env bash
# Installs the pinned Rust toolchain that builds dentrylab's static binaries
# for amd64 and arm64 (deploy/image/build.sh), from Debian's packages only:
#
# - the compiler: Debian 12's rustc-web and cargo-web (bookworm-security),
#   installed at RUST_DEB, with the amd64 standard library
#   (libstd-rust-web-dev);
# - the arm64 standard library of the same build, libstd-rust-web-dev:arm64,
#   fetched with `apt-get download` through private arm64 lists (the host's
#   dpkg gets no foreign architecture) and unpacked into a sysroot of its own;
# - the linker and the static C library for arm64: gcc-aarch64-linux-gnu and
#   libc6-dev-arm64-cross (libc.a, libgcc_eh.a);
# - qemu-user-static, which runs the arm64 binary here (tests/image.rs).
#
#   deploy/tools/rust-cross.sh      # prints the arm64 sysroot on its last line
#
# Everything it fetches goes under $DENTRYLAB_CROSS_DIR (default
# $HOME/.cache/dentrylab/cross): apt/ (the private lists and the .debs) and
# sysroot-$RUST_DEB/lib/rustlib/aarch64-unknown-linux-gnu/lib (the arm64
# standard library, passed to rustc as --sysroot for that target only). A
# second run with everything in place returns at once.
set -euo pipefail

# The Debian version of rustc-web, cargo-web and both standard libraries:
# they must be the one build (rustc refuses a std from another).
RUST_DEB=1.96.0+dfsg1-1~deb12u2
RUST_VERSION=${RUST_DEB%%+*}
TARGET=aarch64-unknown-linux-gnu

dir=${DENTRYLAB_CROSS_DIR:-$HOME/.cache/dentrylab/cross}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
sysroot=$dir/sysroot-$RUST_DEB
libdir=$sysroot/lib/rustlib/$TARGET/lib
die() { echo "deploy/tools/rust-cross.sh: $*" >&2; exit 1; }

installed() { # PACKAGE VERSION: is it installed at that version?
    [ "$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$1" 2>/dev/null)" = "ii $2" ]
}
present() { # PACKAGE: installed at any version?
    dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | grep -q '^ii'
}

# 1. Host packages.
need=()
for p in rustc-web cargo-web libstd-rust-web-dev; do
    installed "$p" "$RUST_DEB" || need+=("$p=$RUST_DEB")
done
for p in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static binutils-aarch64-linux-gnu; do
    present "$p" || need+=("$p")
done
if [ "${#need[@]}" -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -qq "${need[@]}" >&2; then
        apt-get update -qq >&2
        apt-get install -y -qq "${need[@]}" >&2 ||
            die "apt-get install ${need[*]} failed: is $RUST_DEB still in the archive? (apt-cache policy rustc-web)"
    fi
fi
/usr/bin/rustc --version | grep -q "^rustc $RUST_VERSION " ||
    die "/usr/bin/rustc is $(/usr/bin/rustc --version), not $RUST_VERSION"

# 2. The arm64 standard library, through private lists.
if [ ! -e "$libdir/.complete" ]; then
    apt=$dir/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d" "$apt/debs"
    # The host's Debian sources (deb822 or one-line), for arm64 only.
    {
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -e "$f" ] || continue
            awk '
                function flush() {
                    if (uris != "" && suites != "" && key ~ /debian-archive-keyring/)
                        for (i = 1; i <= ns; i++) for (j = 1; j <= nu; j++)
                            printf "deb [arch=arm64 signed-by=%s] %s %s %s\n", key, u[j], s[i], comps
                    uris = suites = key = comps = ""
                }
                /^[[:space:]]*$/ { flush(); next }
                /^URIs:/ { uris = $0; sub(/^URIs:[[:space:]]*/, "", uris); nu = split(uris, u, /[[:space:]]+/) }
                /^Suites:/ { suites = $0; sub(/^Suites:[[:space:]]*/, "", suites); ns = split(suites, s, /[[:space:]]+/) }
                /^Components:/ { comps = $0; sub(/^Components:[[:space:]]*/, "", comps) }
                /^Signed-By:/ { key = $2 }
                END { flush() }
            ' "$f"
        done
        [ ! -e /etc/apt/sources.list ] ||
            sed -n 's|^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*/debian\(-security\)\{0,1\}/\{0,1\}\) |deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \2 |p' \
                /etc/apt/sources.list
    } >"$apt/sources.list"
    [ -s "$apt/sources.list" ] || die "no Debian source signed by debian-archive-keyring in /etc/apt"
    opts=(-q "-oDir::Etc::SourceList=$apt/sources.list" "-oDir::Etc::SourceParts=$apt/sources.list.d"
        "-oDir::State::Lists=$apt/lists" "-oDir::Cache=$apt/cache" -oAPT::Architecture=arm64
        -oAPT::Architectures::=arm64 -oDebug::NoLocking=1 -oAPT::Sandbox::User=root)
    pkg=libstd-rust-web-dev:arm64=$RUST_DEB
    rm -f "$apt/debs"/*.deb
    # The private lists: fetched the first time, and again when the
    # download fails on lists gone stale.
    compgen -G "$apt/lists/*_Packages*" >/dev/null || apt-get "${opts[@]}" update >&2
    if ! (cd "$apt/debs" && apt-get "${opts[@]}" download "$pkg" >&2); then
        apt-get "${opts[@]}" update >&2
        (cd "$apt/debs" && apt-get "${opts[@]}" download "$pkg" >&2) || die "apt-get download $pkg failed"
    fi
    deb=$(ls "$apt/debs"/*.deb)
    rm -rf "$sysroot.partial"
    mkdir -p "$sysroot.partial"
    dpkg-deb -x "$deb" "$sysroot.partial/deb"
    [ -d "$sysroot.partial/deb/usr/lib/rustlib/$TARGET/lib" ] ||
        die "$deb has no usr/lib/rustlib/$TARGET/lib"
    mkdir -p "$sysroot.partial/lib/rustlib/$TARGET"
    mv "$sysroot.partial/deb/usr/lib/rustlib/$TARGET/lib" "$sysroot.partial/lib/rustlib/$TARGET/lib"
    rm -rf "$sysroot.partial/deb" "$sysroot"
    touch "$sysroot.partial/lib/rustlib/$TARGET/lib/.complete"
    mv "$sysroot.partial" "$sysroot"
    echo "arm64 standard library of rustc $RUST_DEB in $libdir" >&2
fi
echo "$sysroot"
