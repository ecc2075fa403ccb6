#!/usr/bin/env bash
# Writes a one-layer OCI image (an OCI image-layout tarball, what `ctr images
# import` and `docker load` read) holding one static binary, without a
# registry or a container build daemon: a layer tar with fixed owners and
# mtimes, its config, a manifest and an index, each blob named by its
# sha256. Deterministic: the same binary gives the same digests.
#
#   deploy/local/image.sh OUT.tar NAME BINARY PATH-IN-IMAGE USER ENTRYPOINT [CMD...]
#
# NAME is the image's full reference (io.containerd.image.name), e.g.
# ghcr.io/dentrylab/dentrylab:0.1.0; USER is uid:gid; ENTRYPOINT and CMD as
# in a Dockerfile's exec form (CMD may be empty). IMAGE_FILES (optional, a
# space-separated list of absolute host paths) adds those files at the same
# paths, symlinks followed: the shared libraries of a dynamically linked
# binary (up.sh's DENTRYLAB_BINARY: its libc and loader).
set -euo pipefail
if [ $# -lt 6 ]; then
    echo "usage: $0 OUT.tar NAME BINARY PATH-IN-IMAGE USER ENTRYPOINT [CMD...]" >&2
    exit 2
fi
out=$1 name=$2 binary=$3 inpath=$4 user=$5 entry=$6
shift 6
[ -f "$binary" ] || { echo "no such binary: $binary" >&2; exit 1; }

json_list() {
    local first=1 a
    printf '['
    for a in "$@"; do
        [ $first = 1 ] || printf ','
        first=0
        printf '"%s"' "$(printf '%s' "$a" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
    printf ']'
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rootfs$(dirname "$inpath")" "$work/oci/blobs/sha256"
install -m 0755 "$binary" "$work/rootfs$inpath"
# An empty /tmp, as every base image has: `dentrylab reclaim` mounts its
# scratch tmpfs there, and on an image without one it fails with ENOENT.
# Made before IMAGE_FILES, which may live under /tmp.
mkdir -m 1777 "$work/rootfs/tmp"
for f in ${IMAGE_FILES:-}; do
    [ -f "$f" ] || { echo "IMAGE_FILES: no such file: $f" >&2; exit 1; }
    mkdir -p "$work/rootfs$(dirname "$f")"
    cp -L "$f" "$work/rootfs$f"
done
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/rootfs" -cf "$work/layer.tar" .
diff_id=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
gzip -n -9 "$work/layer.tar"

blob() { # FILE -> moves it to blobs/sha256/<digest>, prints "<digest> <size>"
    local d s
    d=$(sha256sum "$1" | cut -d' ' -f1)
    s=$(stat -c %s "$1")
    mv "$1" "$work/oci/blobs/sha256/$d"
    echo "$d $s"
}
read -r layer_d layer_s < <(blob "$work/layer.tar.gz")

cmd_json=null
[ $# -eq 0 ] || cmd_json=$(json_list "$@")
printf '{"architecture":"amd64","os":"linux","config":{"User":"%s","Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"deploy/local/image.sh %s"}]}' \
    "$user" "$(json_list "$entry")" "$cmd_json" "$diff_id" "$inpath" >"$work/config.json"
read -r config_d config_s < <(blob "$work/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$config_d" "$config_s" "$layer_d" "$layer_s" >"$work/manifest.json"
read -r man_d man_s < <(blob "$work/manifest.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$man_d" "$man_s" "$name" "${name##*:}" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/oci" -cf "$out.tmp" oci-layout index.json blobs
mv "$out.tmp" "$out"
echo "$name sha256:$man_d"
