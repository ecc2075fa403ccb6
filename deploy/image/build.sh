#!/usr/bin/env bash
# Builds dentrylab's static binaries for amd64 and arm64 with the pinned
# Debian toolchain (deploy/tools/rust-cross.sh) and writes one multi-arch
# OCI image of them (deploy/image/oci.sh). From the repository root:
#
#   deploy/image/build.sh [OUT]      # OUT: target/image by default
#
# Writes OUT/dentrylab-linux-amd64 and OUT/dentrylab-linux-arm64 (stripped,
# statically linked: glibc with crt-static), OUT/oci (the OCI layout) and
# OUT/oci.tar, named $DENTRYLAB_IMAGE (default
# ghcr.io/dentrylab/dentrylab:VERSION, VERSION from Cargo.toml). Both are
# built --no-default-features, like deploy/Dockerfile: without the census's
# BPF backend, which would need libbpf, libelf and zlib built for each
# architecture; the census walks by /proc/kcore in the image. The cargo
# target directory is $DENTRYLAB_STATIC_TARGET (default
# $HOME/.cache/dentrylab/static-target): another compiler than the one the
# tests build with, kept apart so neither rebuilds the other's, and outside
# the clone so that CI's fresh clone rebuilds only dentrylab itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/image}
mkdir -p "$out"
out=$(cd "$out" && pwd)

sysroot=$(deploy/tools/rust-cross.sh | tail -n 1)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=${DENTRYLAB_IMAGE:-ghcr.io/dentrylab/dentrylab:$version}

export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_DIR=${DENTRYLAB_STATIC_TARGET:-$HOME/.cache/dentrylab/static-target}
# Target flags only: with --target, cargo gives build scripts and proc
# macros (built for the host) none of these.
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="--sysroot $sysroot -C target-feature=+crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar

for arch in amd64 arm64; do
    case $arch in
    amd64) target=x86_64-unknown-linux-gnu strip=strip ;;
    arm64) target=aarch64-unknown-linux-gnu strip=aarch64-linux-gnu-strip ;;
    esac
    start=$(date +%s)
    /usr/bin/cargo build --release --locked --quiet --no-default-features --target "$target"
    bin=$CARGO_TARGET_DIR/$target/release/dentrylab
    # Static: no program interpreter, no shared library needed.
    if readelf -lW "$bin" | grep -q 'INTERP' || readelf -dW "$bin" | grep -q '(NEEDED)'; then
        echo "$bin is dynamically linked: it cannot run in an image with nothing else in it" >&2
        exit 1
    fi
    "$strip" -o "$out/dentrylab-linux-$arch" "$bin"
    echo "$arch: $target in $(($(date +%s) - start)) s, $(stat -c %s "$out/dentrylab-linux-$arch") bytes stripped" >&2
done
deploy/image/oci.sh "$out/oci" "$name" amd64="$out/dentrylab-linux-amd64" arm64="$out/dentrylab-linux-arm64"
