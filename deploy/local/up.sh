#!/usr/bin/env bash
# A one-node Kubernetes cluster on this machine, from well-kept parts, to run
# deploy/ as a user would: etcd (Debian's etcd-server), kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kubectl built from
# k8s.io/kubernetes at a pinned version (deploy/local/build.sh), containerd
# and runc from Debian, the bridge CNI plugin from Debian's
# containernetworking-plugins, certificates made here with openssl. The pause
# image and the dentrylab image are built here (deploy/local/image.sh: OCI
# tarballs of static binaries) and imported into containerd; no registry is
# used. Needs root. Prints `export KUBECONFIG=...` on its last line.
#
#   deploy/local/up.sh        # a Ready node named dentrylab-node
#   deploy/local/down.sh      # stops everything, restores what up.sh changed
#
# Where things are (DENTRYLAB_K8S_DIR, default ~/.cache/dentrylab/k8s):
#   bin/, gomod/, gocache/, build/   the Kubernetes build (kept)
#   images/                          the two image tarballs (kept)
#   run/                             the cluster: etcd data, certificates,
#                                    containerd's root and state, the
#                                    kubelet's root, logs (log/*.log), pids;
#                                    down.sh removes it
#
# What it touches outside run/, all undone by down.sh: a private mount
# namespace holds every mount containerd and the kubelet make (they run in
# it, so nothing they mount is seen by, or outlives them in, the host's); a
# bridge dlk8s-br0 for the pods (10.215.0.0/24) whose gateway 10.215.0.1 is
# also the node's address (one the host and the pods both reach), their
# veths; the kubelet's cgroups (kubepods/ under each v1 controller or the v2
# root); the sysctls the kubelet sets at start (vm.overcommit_memory,
# vm.panic_on_oom, kernel.panic, kernel.panic_on_oops,
# kernel.keys.root_max*) and net.ipv4.ip_forward (the bridge plugin's
# gateway), saved here and restored; the host directories listed in
# run/created-dirs. Everything listens on 127.0.0.1 except the kubelet and
# the pods (on the bridge): no address leaves the machine. Ports: etcd
# 23790/23800/23810, API server 6443, kubelet 10250/10248,
# controller-manager 10257, scheduler 10259.
#
# If any step fails, up.sh runs down.sh before it exits.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
K8S=${DENTRYLAB_K8S_DIR:-$HOME/.cache/dentrylab/k8s}
mkdir -p "$K8S"
K8S=$(cd "$K8S" && pwd)
RUN=$K8S/run
NODE=dentrylab-node
NODE_IP=10.215.0.1
SERVICE_CIDR=10.214.0.0/24
POD_CIDR=10.215.0.0/24
BRIDGE=dlk8s-br0
PAUSE_IMAGE=localhost/dentrylab/pause:1
DENTRYLAB_IMAGE=${DENTRYLAB_IMAGE:-ghcr.io/dentrylab/dentrylab:0.1.0}
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)

die() { echo "up.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (containerd and the kubelet are system services)"
if [ -d "$RUN/pids" ] && [ -n "$(ls -A "$RUN/pids" 2>/dev/null)" ]; then
    die "a cluster is already up (or was not taken down) in $RUN: run deploy/local/down.sh first"
fi
for c in containerd containerd-shim-runc-v2 runc etcd openssl unshare nsenter ip curl strip file; do
    command -v "$c" >/dev/null 2>&1 && continue
    die "$c not found: apt-get install containerd runc etcd-server containernetworking-plugins openssl util-linux iproute2 curl binutils file"
done
[ -x /usr/lib/cni/bridge ] || die "/usr/lib/cni/bridge not found: apt-get install containernetworking-plugins"
for port in 23790 23800 23810 6443 10250 10248 10257 10259; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        die "port $port on 127.0.0.1 is in use: stop what listens there"
    fi
done

started=$(date +%s)
cleanup_on_error() {
    local rc=$?
    [ $rc = 0 ] && return
    echo "up.sh failed (exit $rc); logs in $RUN/log; taking everything down" >&2
    for f in "$RUN"/log/*.log; do
        [ -f "$f" ] || continue
        echo "--- last lines of $f" >&2
        tail -n 5 "$f" >&2
    done
    "$here/down.sh" >&2 || true
    exit $rc
}
trap cleanup_on_error EXIT
trap 'exit 130' INT TERM

# 1. Binaries and images (cached).
BIN=$("$here/build.sh" | tail -n 1)
mkdir -p "$K8S/images"
# A static dentrylab (glibc, crt-static): the image has nothing but the binary.
# DENTRYLAB_BINARY instead names one already built (a host `cargo build
# --release`, say, on a machine where a second, static build costs too much):
# dynamically linked, its libraries (as ldd lists them) go into the image
# beside it.
dl_libs=
if [ -n "${DENTRYLAB_BINARY:-}" ]; then
    dl_bin=$(realpath "$DENTRYLAB_BINARY")
    [ -x "$dl_bin" ] || die "DENTRYLAB_BINARY=$DENTRYLAB_BINARY is not an executable"
    if file "$dl_bin" 2>/dev/null | grep -q 'dynamically linked'; then
        dl_libs=$(ldd "$dl_bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | tr '\n' ' ')
    fi
else
    (cd "$repo" && RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --quiet --target x86_64-unknown-linux-gnu)
    dl_bin=$repo/target/x86_64-unknown-linux-gnu/release/dentrylab
    if file "$dl_bin" 2>/dev/null | grep -q 'dynamically linked'; then
        die "$dl_bin is dynamically linked: it cannot run in an image with nothing else in it"
    fi
fi
dl_sum=$(cat "$dl_bin" $dl_libs | sha256sum | cut -c1-16)
if [ "$(cat "$K8S/images/dentrylab.sum" 2>/dev/null)" != "$dl_sum $DENTRYLAB_IMAGE" ]; then
    # Stripped, as deploy/Dockerfile does (12.7 MB -> 10.1 MB; a 4 MB image).
    strip -o "$K8S/images/dentrylab" "$dl_bin"
    IMAGE_FILES=$dl_libs "$here/image.sh" "$K8S/images/dentrylab.tar" "$DENTRYLAB_IMAGE" "$K8S/images/dentrylab" \
        /dentrylab 65534:65534 /dentrylab exporter --listen 0.0.0.0:10366 >/dev/null
    echo "$dl_sum $DENTRYLAB_IMAGE" >"$K8S/images/dentrylab.sum"
fi
pause_sum=$(sha256sum "$BIN/pause" | cut -c1-16)
if [ "$(cat "$K8S/images/pause.sum" 2>/dev/null)" != "$pause_sum" ]; then
    "$here/image.sh" "$K8S/images/pause.tar" "$PAUSE_IMAGE" "$BIN/pause" /pause 65535:65535 /pause >/dev/null
    echo "$pause_sum" >"$K8S/images/pause.sum"
fi

# 2. The run directory, the saved sysctls, the node's address.
rm -rf "$RUN"
mkdir -p "$RUN"/{pids,log,pki,etcd,containerd,kubelet,cni/net.d,cni/ipam,manifests}
for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$RUN/sysctl.saved"
# Host directories some parts use whatever they are told (containerd 1.6's
# shim sockets in /run/containerd/s, libcni's cache in /var/lib/cni, the
# kubelet's device-plugin socket in /var/lib/kubelet, the pods' netns files,
# the kubelet's log links): those that do not exist yet are down.sh's to
# remove.
for d in /run/containerd /var/lib/cni /var/lib/kubelet /run/netns /var/log/containers /var/log/pods; do
    [ -e "$d" ] || echo "$d"
done >"$RUN/created-dirs"
# The node's address is the pods' gateway on their bridge, made before the
# bridge plugin finds it (the plugin wants its gateway, the subnet's first
# address, and no other; a dummy interface would need a module not every
# kernel has).
ip link add "$BRIDGE" type bridge
ip addr add "$NODE_IP/${POD_CIDR#*/}" dev "$BRIDGE"
ip link set "$BRIDGE" up

# start NAME CMD...: runs it in the background, its output in log/NAME.log.
start() {
    local name=$1
    shift
    setsid "$@" >"$RUN/log/$name.log" 2>&1 </dev/null &
    echo $! >"$RUN/pids/$name.pid"
}
# in_ns NAME CMD...: the same, inside the cluster's private mount namespace.
in_ns() {
    local name=$1
    shift
    start "$name" nsenter -t "$(cat "$RUN/pids/mntns.pid")" -m -- "$@"
}
wait_for() { # WHAT SECONDS CMD...: polls CMD until it succeeds
    local what=$1 secs=$2 i
    shift 2
    for ((i = 0; i < secs * 2; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "$what not ready after ${secs}s (see $RUN/log)"
}

# 3. Certificates: one CA; a serving certificate for the API server and the
#    kubelet; a client certificate per identity (the group in O).
pki=$RUN/pki
openssl_q() { openssl "$@" 2>/dev/null; }
openssl_q genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/ca.key"
openssl_q req -x509 -new -key "$pki/ca.key" -subj /CN=dentrylab-local-ca -days 7 -out "$pki/ca.crt"
cert() { # NAME CN O EXTENDED-USAGE [SANS]
    local name=$1 cn=$2 o=$3 usage=$4 sans=${5:-}
    local subj="/CN=$cn"
    [ -z "$o" ] || subj="$subj/O=$o"
    openssl_q genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/$name.key"
    openssl_q req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr"
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [ -z "$sans" ] || echo "subjectAltName=$sans"
    } >"$pki/$name.ext"
    openssl_q x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 7 -extfile "$pki/$name.ext" -out "$pki/$name.crt"
}
cert apiserver kube-apiserver "" serverAuth \
    "IP:127.0.0.1,IP:$NODE_IP,IP:10.214.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
cert admin admin system:masters clientAuth
cert controller-manager system:kube-controller-manager "" clientAuth
cert scheduler system:kube-scheduler "" clientAuth
cert kubelet "system:node:$NODE" system:nodes clientAuth
cert kubelet-serving "system:node:$NODE" system:nodes serverAuth "IP:$NODE_IP,DNS:$NODE"
openssl_q genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key"
openssl_q pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
kubeconfig() { # NAME: kubeconfig for the client certificate NAME
    cat >"$RUN/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
  - name: dentrylab-local
    cluster:
      server: https://127.0.0.1:6443
      certificate-authority: $pki/ca.crt
users:
  - name: $1
    user:
      client-certificate: $pki/$1.crt
      client-key: $pki/$1.key
contexts:
  - name: dentrylab-local
    context: {cluster: dentrylab-local, user: $1}
current-context: dentrylab-local
KC
}
for k in admin controller-manager scheduler kubelet; do kubeconfig "$k"; done
export KUBECONFIG=$RUN/admin.kubeconfig
KUBECTL=$BIN/kubectl

# 4. The private mount namespace: a process that only holds it.
setsid unshare --mount --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
echo $! >"$RUN/pids/mntns.pid"
ns_ready() { [ "$(readlink "/proc/$(cat "$RUN/pids/mntns.pid")/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]; }
wait_for "the mount namespace" 5 ns_ready

# 5. etcd, then the control plane.
start etcd etcd --name "$NODE" --data-dir "$RUN/etcd" \
    --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
    --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
    --initial-cluster "$NODE=http://127.0.0.1:23800" --listen-metrics-urls http://127.0.0.1:23810
wait_for etcd 30 curl -sf http://127.0.0.1:23790/health

start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:23790 \
    --bind-address=127.0.0.1 --secure-port=6443 --advertise-address="$NODE_IP" \
    --endpoint-reconciler-type=none \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$pki/ca.crt" \
    --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --authorization-mode=Node,RBAC --allow-privileged=true --profiling=false
wait_for kube-apiserver 120 curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
    --key "$pki/admin.key" https://127.0.0.1:6443/readyz

start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig="$RUN/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$RUN/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$RUN/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key"
start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig="$RUN/scheduler.kubeconfig" \
    --authentication-kubeconfig="$RUN/scheduler.kubeconfig" \
    --authorization-kubeconfig="$RUN/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false

# 6. containerd (in the mount namespace), with the images imported.
CTRD=$RUN/containerd
# The kubelet asks for oom_score_adj -998 for every pod sandbox; lowering it
# needs CAP_SYS_RESOURCE, which some machines (this project's VMs) take out
# of every process's bounding set: runc's init then fails with "failed to
# update /proc/self/oom_score_adj: Permission denied". containerd's
# restrict_oom_score_adj raises such requests to its own score instead.
restrict_oom=false
cap_bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
(((0x$cap_bnd >> 24) & 1)) || restrict_oom=true
cat >"$CTRD/config.toml" <<TOML
version = 2
root = "$CTRD/root"
state = "$CTRD/state"
plugin_dir = ""
[grpc]
  address = "$CTRD/containerd.sock"
[ttrpc]
  address = "$CTRD/containerd.sock.ttrpc"
[debug]
  address = "$CTRD/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  disable_apparmor = true
  restrict_oom_score_adj = $restrict_oom
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$CTRD/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$RUN/cni/net.d"
TOML
cat >"$RUN/cni/net.d/10-dentrylab.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "dentrylab",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$RUN/cni/ipam"
      }
    }
  ]
}
CNI
in_ns containerd containerd --config "$CTRD/config.toml"
CTR=(ctr --address "$CTRD/containerd.sock" --namespace k8s.io)
wait_for containerd 30 "${CTR[@]}" version
"${CTR[@]}" images import "$K8S/images/pause.tar" >/dev/null
"${CTR[@]}" images import "$K8S/images/dentrylab.tar" >/dev/null
"${CTR[@]}" images ls -q | grep -x "$PAUSE_IMAGE" >/dev/null || die "$PAUSE_IMAGE not in containerd after import"
"${CTR[@]}" images ls -q | grep -x "$DENTRYLAB_IMAGE" >/dev/null || die "$DENTRYLAB_IMAGE not in containerd after import"

# 7. The kubelet (in the mount namespace).
cat >"$RUN/kubelet/config.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://$CTRD/containerd.sock
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
makeIPTablesUtilChains: false
podLogsDir: $RUN/log/pods
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# A deep kubelet-victim.py repetition creates a pod every 0.5 s through a
# 45 s umount (32M dentries): over the default 110 pods. 200 stays inside
# the pods' /24.
maxPods: 200
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 200Mi
  nodefs.available: 2%
  imagefs.available: 2%
KCFG
in_ns kubelet "$BIN/kubelet" --config="$RUN/kubelet/config.yaml" \
    --kubeconfig="$RUN/kubelet.kubeconfig" --root-dir="$RUN/kubelet/root" \
    --cert-dir="$RUN/kubelet/pki" --node-ip="$NODE_IP" --hostname-override="$NODE" --v=1
wait_for "the node's registration" 120 "$KUBECTL" get node "$NODE"
"$KUBECTL" wait --for=condition=Ready "node/$NODE" --timeout=120s >/dev/null \
    || die "node $NODE registered but not Ready in 120 s: $("$KUBECTL" get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"

trap - EXIT
echo "node $NODE Ready in $(($(date +%s) - started)) s (kubernetes $(cat "$BIN/version"), images $PAUSE_IMAGE, $DENTRYLAB_IMAGE)" >&2
echo "kubectl: $KUBECTL; take it down with deploy/local/down.sh" >&2
echo "export KUBECONFIG=$RUN/admin.kubeconfig PATH=$BIN:\$PATH"
