#!/usr/bin/env bash
# Builds dentrylab's static release binaries for amd64 and arm64 with the
# pinned Debian toolchain (deploy/image/cross.sh, deploy/tools/rust-cross.sh)
# and writes one multi-arch OCI image of them (deploy/image/oci.sh). From
# the repository root:
#
#   deploy/image/build.sh [OUT]      # OUT: target/image by default
#
# Writes OUT/dentrylab-linux-amd64 and OUT/dentrylab-linux-arm64 (stripped,
# statically linked), OUT/oci (the OCI layout) and OUT/oci.tar, named
# $DENTRYLAB_IMAGE (default ghcr.io/dentrylab/dentrylab:VERSION, VERSION
# from Cargo.toml). Two release builds: tens of minutes from cold on a
# 2-core machine, which is why CI does not run this script (it builds a
# fast arm64 binary for its qemu-user test instead, and tests/image.rs runs
# oci.sh on it).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/image}
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=${DENTRYLAB_IMAGE:-ghcr.io/dentrylab/dentrylab:$version}
for arch in amd64 arm64; do
    deploy/image/cross.sh release "$arch" "$out/dentrylab-linux-$arch"
done
deploy/image/oci.sh "$out/oci" "$name" amd64="$out/dentrylab-linux-amd64" arm64="$out/dentrylab-linux-arm64"
