#!/usr/bin/env bash
# Writes one multi-arch OCI image (an OCI image layout, as a directory and as
# a tarball) of dentrylab, without a registry or a container build daemon.
# Each platform is one manifest of one layer: the static binary at
# /dentrylab and an empty /tmp (`dentrylab reclaim`, the calibration Job,
# mounts its scratch tmpfs there), user 65534, the exporter as the command.
# The layout's index.json names one image index (the image's reference),
# which lists the platforms' manifests. Layers are tars with fixed owners
# and mtimes, so the same binaries give the same digests.
#
#   deploy/image/oci.sh OUT NAME ARCH=BINARY...
#   deploy/image/oci.sh target/image/oci ghcr.io/dentrylab/dentrylab:0.1.0 \
#       amd64=target/image/dentrylab-linux-amd64 arm64=target/image/dentrylab-linux-arm64
#
# OUT becomes the layout directory (replaced) and OUT.tar the same as a
# tarball (what `ctr images import` and `docker load` read); ARCH is an OCI
# architecture (amd64, arm64, ...). Prints NAME and the index's digest.
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 OUT NAME ARCH=BINARY..." >&2
    exit 2
fi
out=$1 name=$2
shift 2
tag=${name##*:}
[ "$tag" != "$name" ] || { echo "NAME must end in :TAG: $name" >&2; exit 2; }
for a in "$@"; do
    case "$a" in
    *=*) [ -f "${a#*=}" ] || { echo "no such binary: ${a#*=}" >&2; exit 1; } ;;
    *) echo "not ARCH=BINARY: $a" >&2; exit 2 ;;
    esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
blobs=$work/oci/blobs/sha256
mkdir -p "$blobs"

blob() { # FILE -> moves it to blobs/sha256/<digest>, prints "<digest> <size>"
    local d s
    d=$(sha256sum "$1" | cut -d' ' -f1)
    s=$(stat -c %s "$1")
    mv "$1" "$blobs/$d"
    echo "$d $s"
}

manifests=
for a in "$@"; do
    arch=${a%%=*} binary=${a#*=}
    root=$work/rootfs-$arch
    mkdir -p "$root"
    install -m 0755 "$binary" "$root/dentrylab"
    mkdir -m 1777 "$root/tmp"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$root" -cf "$work/layer.tar" .
    diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
    gzip -n -9 "$work/layer.tar"
    read -r layer_d layer_s < <(blob "$work/layer.tar.gz")
    variant=
    [ "$arch" != arm64 ] || variant=',"variant":"v8"'
    printf '{"architecture":"%s"%s,"os":"linux","config":{"User":"65534:65534","ExposedPorts":{"10366/tcp":{}},"Entrypoint":["/dentrylab"],"Cmd":["exporter","--listen","0.0.0.0:10366"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created":"1970-01-01T00:00:00Z","created_by":"deploy/image/oci.sh"}]}' \
        "$arch" "$variant" "$diff_id" >"$work/config.json"
    read -r config_d config_s < <(blob "$work/config.json")
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
        "$config_d" "$config_s" "$layer_d" "$layer_s" >"$work/manifest.json"
    read -r man_d man_s < <(blob "$work/manifest.json")
    manifests+="${manifests:+,}$(printf '{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"%s}}' \
        "$man_d" "$man_s" "$arch" "$variant")"
done

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[%s]}' "$manifests" >"$work/image-index.json"
read -r index_d index_s < <(blob "$work/image-index.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$index_d" "$index_s" "$name" "$tag" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/oci" -cf "$work/oci.tar" oci-layout index.json blobs
rm -rf "$out" "$out.tar"
mkdir -p "$(dirname "$out")"
mv "$work/oci.tar" "$out.tar"
mv "$work/oci" "$out"
echo "$name sha256:$index_d"
