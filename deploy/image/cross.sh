#!/usr/bin/env bash
# Builds one static dentrylab binary for ARCH (amd64 or arm64) with the
# pinned Debian toolchain (deploy/tools/rust-cross.sh) and the cargo
# profile PROFILE, and writes it, stripped, to OUT. From the repository
# root:
#
#   deploy/image/cross.sh PROFILE ARCH OUT
#   deploy/image/cross.sh release arm64 target/image/dentrylab-linux-arm64
#   deploy/image/cross.sh cross-test arm64 target/qemu-test/dentrylab-linux-arm64
#
# `release` is what the image ships (deploy/image/build.sh); `cross-test`
# (Cargo.toml: the dev profile without debug info) is what CI runs under
# qemu-user (tests/image.rs): it builds several times faster from cold,
# and CI builds it from cold on every new machine.
#
# Statically linked either way: glibc with crt-static, no program
# interpreter and no shared library (checked with readelf). Built
# --no-default-features, like deploy/Dockerfile: without the census's BPF
# backend, which would need libbpf, libelf and zlib built for each
# architecture; the census walks by /proc/kcore there. The cargo target
# directory is $DENTRYLAB_STATIC_TARGET (default
# $HOME/.cache/dentrylab/static-target): another compiler than the one the
# tests build with, kept apart so neither rebuilds the other's, and outside
# the clone so that CI's fresh clone rebuilds only dentrylab itself when
# the machine has built before. Prints one line on stderr: what was built,
# in how many seconds, and its size.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ne 3 ]; then
    echo "usage: $0 PROFILE ARCH OUT (PROFILE: release or cross-test; ARCH: amd64 or arm64)" >&2
    exit 2
fi
profile=$1 arch=$2 out=$3
case $arch in
amd64) target=x86_64-unknown-linux-gnu strip=strip ;;
arm64) target=aarch64-unknown-linux-gnu strip=aarch64-linux-gnu-strip ;;
*) echo "$0: ARCH $arch: give amd64 or arm64" >&2; exit 2 ;;
esac
# cargo's output directory of a profile: `dev` builds into debug/.
dir=$profile
[ "$profile" != dev ] || dir=debug

sysroot=$(deploy/tools/rust-cross.sh | tail -n 1)
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CARGO_TARGET_DIR=${DENTRYLAB_STATIC_TARGET:-$HOME/.cache/dentrylab/static-target}
# Target flags only: with --target, cargo gives build scripts and proc
# macros (built for the host) none of these.
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="--sysroot $sysroot -C target-feature=+crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar

start=$(date +%s)
/usr/bin/cargo build --profile "$profile" --locked --quiet --no-default-features --target "$target"
bin=$CARGO_TARGET_DIR/$target/$dir/dentrylab
# Static: no program interpreter, no shared library needed.
if readelf -lW "$bin" | grep -q 'INTERP' || readelf -dW "$bin" | grep -q '(NEEDED)'; then
    echo "$0: $bin is dynamically linked: it cannot run in an image with nothing else in it" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
"$strip" -o "$out" "$bin"
echo "$arch: $target ($profile) in $(($(date +%s) - start)) s, $(stat -c %s "$out") bytes stripped" >&2
