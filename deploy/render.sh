#!/usr/bin/env bash
# Renders deploy/ from the Helm chart deploy/helm/dentrylab, so that
# `kubectl apply -f deploy/` and `helm install` deploy the same objects:
#
#   deploy/daemonset.yaml                    the Namespace, DaemonSet and Service
#                                            (default values, namespace.create=true)
#   deploy/calibration/calibration-job.yaml  the calibration Job (calibration.enabled=true)
#   deploy/prometheus/alerts.yaml            the chart's files/alerts.yaml
#   deploy/grafana/dashboard.json            the chart's files/dashboard.json
#   deploy/node-problem-detector/dcache-monitor.json   the chart's files/dcache-monitor.json
#
#   deploy/render.sh            # rewrites deploy/
#   deploy/render.sh DIR        # writes them under DIR instead (tests/chart.rs diffs it)
#
# helm comes from $HELM, else the PATH, else deploy/tools/install.sh helm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
chart=$here/helm/dentrylab
helm=${HELM:-$(command -v helm || "$here/tools/install.sh" helm | tail -n 1)}

t() { "$helm" template dentrylab "$chart" --namespace dentrylab "$@"; }
mkdir -p "$out/calibration" "$out/prometheus" "$out/grafana" "$out/node-problem-detector"
t --set namespace.create=true --show-only templates/namespace.yaml \
    --show-only templates/daemonset.yaml --show-only templates/service.yaml >"$out/daemonset.yaml.tmp"
mv "$out/daemonset.yaml.tmp" "$out/daemonset.yaml"
t --set calibration.enabled=true --show-only templates/calibration-job.yaml >"$out/calibration/calibration-job.yaml.tmp"
mv "$out/calibration/calibration-job.yaml.tmp" "$out/calibration/calibration-job.yaml"
cp "$chart/files/alerts.yaml" "$out/prometheus/alerts.yaml"
cp "$chart/files/dashboard.json" "$out/grafana/dashboard.json"
cp "$chart/files/dcache-monitor.json" "$out/node-problem-detector/dcache-monitor.json"
