#!/usr/bin/env bash
# Captures the OpenAPI v3 documents of the API groups deploy/'s manifests
# use from the API server deploy/local/up.sh runs, into
# tests/fixtures/k8s-openapi/<version>/, where tests/deploy.rs validates
# every manifest against them offline. Only the descriptions (prose) are
# removed, to keep the fixture small; every schema, type, enum, required
# list and x-kubernetes-* extension is kept as the server sent it.
#
#   eval "$(deploy/local/up.sh | tail -n 1)"
#   deploy/local/openapi.sh
#   deploy/local/down.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v jq >/dev/null || { echo "jq not found: apt-get install jq" >&2; exit 1; }
KUBECTL=${KUBECTL:-kubectl}
version=$("$KUBECTL" version -o json | jq -r .serverVersion.gitVersion)
[ -n "$version" ] && [ "$version" != null ] || { echo "no API server answers (KUBECONFIG?)" >&2; exit 1; }
out=tests/fixtures/k8s-openapi/$version
mkdir -p "$out"
# The group-versions of the kinds in deploy/*.yaml and deploy/calibration/.
for gv in api/v1 apis/apps/v1 apis/batch/v1; do
    f=$out/$(echo "$gv" | tr / _).json
    "$KUBECTL" get --raw "/openapi/v3/$gv" \
        | jq -S -c 'walk(if type == "object" and (.description | type) == "string" then del(.description) else . end)' >"$f"
    echo "$f: $(jq '.components.schemas | length' "$f") schemas" >&2
done
