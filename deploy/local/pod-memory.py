#!/usr/bin/env python3
"""A pod's memory truth on the one-node cluster of deploy/local/up.sh: a pod
that makes 1M dentries, and, side by side for that pod, what the kubelet,
`kubectl top` and dentrylab say of its memory. Needs root. Python 3
standard library only.

    sudo deploy/local/pod-memory.py --json docs/results/memory-pod/kubelet-v1-6.18.json

It brings the cluster up (up.sh) and takes it down (down.sh) however it
ends; with --running it uses one already up and leaves it up. Then:
  1. An image with the host's dentrylab binary and mkfs.ext4 (each with the
     shared libraries ldd lists; deploy/local/image.sh), imported into the
     cluster's containerd. The dentrylab binary is --dentrylab (default
     target/release/dentrylab, `cargo build --release`); up.sh puts the
     same binary in the cluster's own image (DENTRYLAB_BINARY).
  2. metrics-server (deploy/tools/install.sh metrics-server: built from the
     Go module proxy at a pinned version) run on the host against the API
     server, registered as the metrics.k8s.io APIService: what `kubectl
     top` reads. Without kube-proxy a Service's ClusterIP routes nowhere, so
     the Service's fixed ClusterIP is added to the cluster's bridge and
     metrics-server listens on it (the API server dials it there); the
     API server has no front-proxy client certificate, so requests reach
     metrics-server as system:anonymous, which a ClusterRoleBinding lets
     read the metrics API (and --authorization-always-allow-paths its
     discovery). All of it lasts only as long as this script. When metrics-server cannot be built or does not become
     available, the JSON says why and the rest goes on.
  3. dentrylab's exporter on the host (`exporter --by-cgroup`, on a free
     loopback port).
  4. The pod: privileged, as root (a loop device and a mount in its own
     mount namespace), `dentrylab create --kind negative --fs ext4
     --threads 1 --count 1M --hold ...`: 1M negative dentries on an ext4
     loop mount, made by the pod's own process, so charged to the pod's
     memory cgroup. No memory limit: a BestEffort pod.
  5. Once `create` says it made them and metrics-server has scraped the
     kubelet since: the pod's container cgroup read directly (the witness:
     usage, inactive file, kernel memory, v2's slab_reclaimable), the
     kubelet's /metrics/cadvisor and /metrics/resource (through the API
     server's node proxy), `kubectl top pod --containers` and the
     metrics.k8s.io answer, `dentrylab status --by-cgroup --json`, and the
     exporter's dentrylab_cgroup_* series whose uid label is the pod's UID
     (the join kube-state-metrics' kube_pod_info makes by uid; this cluster
     runs no kube-state-metrics, so the UID comes from the API).
  6. The pod deleted (create reclaims its dentries), the exporter and
     metrics-server stopped, the APIService, Service and EndpointSlice
     deleted, the address removed.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
K8S = os.environ.get("DENTRYLAB_K8S_DIR", os.path.expanduser("~/.cache/dentrylab/k8s"))
RUN = os.path.join(K8S, "run")
PKI = os.path.join(RUN, "pki")
BIN = os.path.join(K8S, "bin")
NODE, NODE_IP, BRIDGE = "dentrylab-node", "10.215.0.1", "dlk8s-br0"
NS, POD, CONTAINER = "dentrylab-memory", "dentries", "create"
IMAGE = "localhost/dentrylab/dentrylab-mkfs:1"
# The metrics-server Service's ClusterIP (in up.sh's service range
# 10.214.0.0/24) and port, where metrics-server listens on the host.
MS_IP, MS_PORT = "10.214.0.50", 4443
MS_RESOLUTION_SECONDS = 15
CADVISOR_FAMILIES = ("container_memory_working_set_bytes", "container_memory_usage_bytes",
                     "container_memory_cache", "container_memory_rss", "container_memory_kernel_usage",
                     "container_memory_total_active_file_bytes", "container_memory_total_inactive_file_bytes")
RESOURCE_FAMILIES = ("container_memory_working_set_bytes", "pod_memory_working_set_bytes")
CHILDREN = []  # background processes (exporter, metrics-server): stopped however the script ends
CLEANUPS = []  # callables run in reverse order however the script ends


def die(msg):
    print(f"pod-memory: {msg}", file=sys.stderr)
    sys.exit(1)


def log(msg):
    print(f"pod-memory: {msg}", file=sys.stderr, flush=True)


def count_arg(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kM]?)", s)
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r} is not a count (like 500k or 1M)")
    return int(float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)])


def run(*cmd, check=True, input=None, env=None):
    r = subprocess.run(cmd, input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}...: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r


def kubectl(*args, check=True, input=None):
    env = dict(os.environ, KUBECONFIG=os.path.join(RUN, "admin.kubeconfig"))
    return run(os.path.join(BIN, "kubectl"), "--request-timeout=30s", *args, check=check, input=input, env=env)


def apply(obj):
    kubectl("apply", "-f", "-", input=json.dumps(obj))


def libraries(path):
    """The shared libraries `ldd` lists for a binary (none for a static one)."""
    r = run("ldd", path, check=False)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > parts.index("=>") + 1 and parts[parts.index("=>") + 1].startswith("/"):
            out.append(parts[parts.index("=>") + 1])
        elif parts and parts[0].startswith("/"):
            out.append(parts[0])
    return out


def build_image(dentrylab):
    """The host's dentrylab and mkfs.ext4 with their libraries, as one image in containerd."""
    mkfs = shutil.which("mkfs.ext4")
    if not mkfs:
        die("mkfs.ext4 not found: apt-get install e2fsprogs")
    # mkfs.ext4 at its own path (cp -L in image.sh: the file, under the name
    # mke2fs reads the filesystem type from), with both binaries' libraries.
    files = sorted(set([mkfs] + libraries(mkfs) + libraries(dentrylab)))
    files += [f for f in ("/etc/mke2fs.conf",) if os.path.isfile(f)]
    work = tempfile.mkdtemp(prefix="pod-memory-")
    CLEANUPS.append(lambda: shutil.rmtree(work, ignore_errors=True))
    tar = os.path.join(work, "image.tar")
    env = dict(os.environ, IMAGE_FILES=" ".join(files))
    run(os.path.join(HERE, "image.sh"), tar, IMAGE, dentrylab, "/dentrylab", "0:0", "/dentrylab", env=env)
    ctr = ["ctr", "--address", os.path.join(RUN, "containerd/containerd.sock"), "--namespace", "k8s.io"]
    run(*ctr, "images", "import", tar)
    return {"image": IMAGE, "files": files}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(name, cmd):
    logf = open(os.path.join(RUN, "log", f"pod-memory-{name}.log"), "w")
    p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    CHILDREN.append(p)
    return p


def metrics_server():
    """Builds and starts metrics-server and registers it; returns what happened."""
    r = run(os.path.join(REPO, "deploy/tools/install.sh"), "metrics-server", check=False)
    if r.returncode != 0:
        return {"available": False, "why": f"deploy/tools/install.sh metrics-server: exit {r.returncode}: "
                                          f"{r.stderr.strip().splitlines()[-1:]}"}
    binary = r.stdout.strip().splitlines()[-1]
    version = run(binary, "--version", check=False).stdout.strip()
    run("ip", "addr", "add", f"{MS_IP}/32", "dev", BRIDGE)
    CLEANUPS.append(lambda: run("ip", "addr", "del", f"{MS_IP}/32", "dev", BRIDGE, check=False))
    certs = tempfile.mkdtemp(prefix="metrics-server-")
    CLEANUPS.append(lambda: shutil.rmtree(certs, ignore_errors=True))
    kc = os.path.join(RUN, "admin.kubeconfig")
    start("metrics-server", [
        binary, f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
        f"--bind-address={MS_IP}", f"--secure-port={MS_PORT}", f"--cert-dir={certs}",
        f"--kubelet-certificate-authority={PKI}/ca.crt",
        f"--kubelet-client-certificate={PKI}/apiserver-kubelet-client.crt",
        f"--kubelet-client-key={PKI}/apiserver-kubelet-client.key",
        "--kubelet-preferred-address-types=InternalIP", f"--metric-resolution={MS_RESOLUTION_SECONDS}s",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/version,/apis,/apis/*,/openapi/*"])
    CLEANUPS.append(lambda: kubectl("delete", "apiservice", "v1beta1.metrics.k8s.io", "--ignore-not-found",
                                    check=False))
    CLEANUPS.append(lambda: kubectl("-n", "kube-system", "delete", "service,endpointslice", "-l",
                                    "app=dentrylab-metrics-server", "--ignore-not-found", check=False))
    labels = {"app": "dentrylab-metrics-server"}
    # The API server proxies without a front-proxy certificate, so each
    # request reaches metrics-server as system:anonymous: let that user read
    # the metrics API (resource requests; the paths above are the rest).
    CLEANUPS.append(lambda: kubectl("delete", "clusterrole,clusterrolebinding", "-l",
                                    "app=dentrylab-metrics-server", "--ignore-not-found", check=False))
    apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": "dentrylab-metrics-reader", "labels": labels},
           "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                      "verbs": ["get", "list", "watch"]}]})
    apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": "dentrylab-metrics-reader", "labels": labels},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                       "name": "dentrylab-metrics-reader"},
           "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]})
    apply({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "metrics-server", "namespace": "kube-system", "labels": labels},
           "spec": {"clusterIP": MS_IP, "ports": [{"name": "https", "port": MS_PORT, "protocol": "TCP"}]}})
    apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": "metrics-server-host", "namespace": "kube-system",
                        "labels": dict(labels, **{"kubernetes.io/service-name": "metrics-server"})},
           "addressType": "IPv4", "endpoints": [{"addresses": [MS_IP], "conditions": {"ready": True}}],
           "ports": [{"name": "https", "port": MS_PORT, "protocol": "TCP"}]})
    apply({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": labels},
           "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                    "versionPriority": 100, "insecureSkipTLSVerify": True,
                    "service": {"name": "metrics-server", "namespace": "kube-system", "port": MS_PORT}}})
    status = ""
    for _ in range(90):
        r = kubectl("get", "apiservice", "v1beta1.metrics.k8s.io", "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Available\")].status} "
                    "{.status.conditions[?(@.type==\"Available\")].message}", check=False)
        status = r.stdout.strip()
        if status.startswith("True"):
            return {"available": True, "version": version, "binary": binary}
        time.sleep(2)
    return {"available": False, "version": version, "why": f"APIService v1beta1.metrics.k8s.io not Available in "
                                                           f"180 s: {status}"}


def prom_series(text, families, want):
    """[{name, labels, value}] of `families` whose labels include every pair of `want`."""
    out = []
    pat = re.compile(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$')
    for line in text.splitlines():
        m = pat.match(line)
        if not m or (families and m.group(1) not in families):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(labels.get(k) == v for k, v in want.items()):
            out.append({"name": m.group(1), "labels": labels, "value": float(m.group(3))})
    return out


def memory_root():
    if os.path.exists("/sys/fs/cgroup/memory/memory.stat"):
        return "/sys/fs/cgroup/memory", 1
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "/sys/fs/cgroup", 2
    die("no memory cgroup hierarchy at /sys/fs/cgroup/memory (v1) or /sys/fs/cgroup (v2)")


def find_cgroup(root, uid, cid):
    """The container's cgroup directory under the kubelet's kubepods/ (cgroupfs driver)."""
    for dirpath, dirnames, _ in os.walk(os.path.join(root, "kubepods")):
        if os.path.basename(dirpath) == cid and f"pod{uid}" in dirpath:
            return dirpath
    return None


def witness(path, version):
    """The container cgroup's own files, read here: what cAdvisor reads."""
    def num(f):
        with open(os.path.join(path, f)) as fh:
            return int(fh.read().split()[0])
    stat = {}
    with open(os.path.join(path, "memory.stat")) as fh:
        for line in fh:
            k, v = line.split()
            stat[k] = int(v)
    if version == 1:
        usage, inactive = num("memory.usage_in_bytes"), stat["total_inactive_file"]
        kernel, slab = num("memory.kmem.usage_in_bytes"), None
    else:
        usage, inactive = num("memory.current"), stat["inactive_file"]
        kernel, slab = stat.get("kernel"), stat.get("slab_reclaimable")
    ws = max(usage - inactive, 0)
    return {"cgroup": path, "cgroup_version": version, "usage_bytes": usage, "inactive_file_bytes": inactive,
            "working_set_bytes": ws, "kernel_bytes": kernel, "slab_reclaimable_bytes": slab,
            "working_set_without_kernel_bytes": None if kernel is None else max(ws - kernel, 0),
            "working_set_without_reclaimable_slab_bytes": None if slab is None else max(ws - slab, 0)}


def quantity(q):
    """A Kubernetes memory quantity (195312Ki, 190Mi, 200000000) in bytes."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|M|G)?", q)
    mult = {None: 1, "Ki": 1024, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "M": 10**6, "G": 10**9}
    return int(m.group(1)) * mult[m.group(2)] if m else None


def wait_pod_created(timeout):
    for _ in range(timeout):
        logs = kubectl("-n", NS, "logs", POD, check=False).stdout
        line = next((l for l in logs.splitlines() if l.startswith("created ")), None)
        if line:
            return line
        phase = kubectl("-n", NS, "get", "pod", POD, "-o", "jsonpath={.status.phase}", check=False).stdout
        if phase in ("Failed", "Succeeded"):
            die(f"the pod ended ({phase}) before it made its dentries: {logs.strip()[-600:]}")
        time.sleep(1)
    die(f"the pod did not make its dentries in {timeout} s: kubectl -n {NS} describe pod {POD}")


def top_once():
    """`kubectl top pod --containers` and the metrics API's answer for the pod."""
    top = kubectl("top", "pod", "-n", NS, POD, "--containers", check=False)
    raw = kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/{POD}", check=False)
    api = json.loads(raw.stdout) if raw.returncode == 0 else None
    mem = None
    if api:
        c = next((c for c in api.get("containers", []) if c["name"] == CONTAINER), None)
        mem = quantity(c["usage"]["memory"]) if c else None
    return {"kubectl_top": (top.stdout or top.stderr).strip(), "exit": top.returncode,
            "metrics_api": api, "container_memory_bytes": mem}


def measure(a):
    dentrylab = os.path.realpath(a.dentrylab)
    if not os.access(dentrylab, os.X_OK):
        die(f"{dentrylab} not found: cargo build --release (or --dentrylab PATH)")
    root, version = memory_root()
    log(f"image {IMAGE} with {dentrylab} and mkfs.ext4")
    image = build_image(dentrylab)
    log("metrics-server")
    ms = metrics_server() if not a.no_metrics_server else {"available": False, "why": "--no-metrics-server"}
    log(f"metrics-server: {'available' if ms['available'] else ms['why']}")
    port = free_port()
    start("exporter", [dentrylab, "exporter", "--by-cgroup", "--top", "50", "--listen", f"127.0.0.1:{port}"])
    apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    CLEANUPS.append(lambda: kubectl("delete", "namespace", NS, "--wait=true", "--timeout=120s", check=False))
    for _ in range(120):
        if kubectl("-n", NS, "get", "serviceaccount", "default", check=False).returncode == 0:
            break
        time.sleep(0.5)
    create = ["/dentrylab", "create", "--kind", a.kind, "--fs", "ext4" if a.kind == "negative" else "tmpfs",
              "--threads", "1", "--count", str(a.count), "--hold", str(a.hold)]
    apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NS},
           "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 60, "enableServiceLinks": False,
                    "containers": [{"name": CONTAINER, "image": IMAGE, "imagePullPolicy": "Never",
                                    "command": create,
                                    "env": [{"name": "PATH", "value": "/usr/sbin:/usr/bin:/sbin:/bin"}],
                                    "securityContext": {"privileged": True, "runAsUser": 0, "runAsGroup": 0}}]}})
    CLEANUPS.append(lambda: kubectl("-n", NS, "delete", "pod", POD, "--wait=true", "--timeout=120s", check=False))
    created = wait_pod_created(300)
    made_at = time.time()
    log(created)
    pod = json.loads(kubectl("-n", NS, "get", "pod", POD, "-o", "json").stdout)
    uid = pod["metadata"]["uid"]
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://")[-1]
    cg = find_cgroup(root, uid, cid)
    if not cg:
        die(f"no cgroup of container {cid} of pod {uid} under {root}/kubepods")
    # The kubelet's cAdvisor housekeeping and metrics-server's scrape both run
    # every 10-15 s: wait until a scrape after the dentries were made has the
    # pod's memory at the witness's working set (within 10%).
    top = None
    if ms["available"]:
        for _ in range(60):
            top = top_once()
            w = witness(cg, version)["working_set_bytes"]
            if top["container_memory_bytes"] and abs(top["container_memory_bytes"] - w) <= 0.1 * w \
                    and time.time() - made_at > MS_RESOLUTION_SECONDS:
                break
            time.sleep(3)
    else:
        time.sleep(20)  # cAdvisor's housekeeping (10 s) after the dentries were made
    readings = {"witness_before": witness(cg, version)}
    cadvisor = kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics/cadvisor").stdout
    resource = kubectl("get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics/resource").stdout
    # The pod's cgroup and its containers', by the cgroup path in `id`
    # (cAdvisor labels a container's series with pod and container only
    # when it finds the container in its runtime: this cluster's containerd
    # socket is not where cAdvisor looks, so those carry `id` alone).
    readings["cadvisor"] = [x for x in prom_series(cadvisor, CADVISOR_FAMILIES, {})
                            if f"pod{uid}" in x["labels"].get("id", "")]
    readings["resource"] = prom_series(resource, RESOURCE_FAMILIES, {"namespace": NS, "pod": POD})
    readings["metrics_server"] = top_once() if ms["available"] else None
    st = run(dentrylab, "status", "--by-cgroup", "--top", "50", "--json", "-")
    status = json.loads(st.stdout)
    rows = [r for r in status["by_cgroup"]["top"] if uid in r["cgroup"] or (r.get("kubernetes") or {}).get(
        "pod_uid") == uid]
    readings["status_by_cgroup"] = {"command": "dentrylab status --by-cgroup --top 50 --json -",
                                    "figure": status["by_cgroup"]["figure"], "rows": rows}
    scrape = None
    for _ in range(30):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                scrape = r.read().decode()
            break
        except OSError:
            time.sleep(1)
    if scrape is None:
        die(f"the exporter on 127.0.0.1:{port} did not answer (log: {RUN}/log/pod-memory-exporter.log)")
    readings["exporter"] = {"command": f"dentrylab exporter --by-cgroup --top 50 --listen 127.0.0.1:{port}",
                            "series": [s for s in prom_series(scrape, None, {"uid": uid})
                                       if s["name"].startswith("dentrylab_cgroup_")]}
    readings["witness_after"] = witness(cg, version)
    return {"pod": {"namespace": NS, "name": POD, "uid": uid, "container": CONTAINER, "container_id": cid,
                    "qos": pod["status"].get("qosClass"), "command": create, "created": created},
            "image": image, "metrics_server": ms, "readings": readings}


def summary(out):
    """The side-by-side table: each source's figures for the pod's cgroup and
    for its container's (`create`), where the source has them."""
    r = out["readings"]
    uid, cid = out["pod"]["uid"], out["pod"]["container_id"]

    def one(series, name, **want):
        v = [x["value"] for x in series if x["name"] == name
             and all(x["labels"].get(k, "") == val for k, val in want.items())]
        return v[0] if v else None

    def cadvisor(name, level):
        v = [x["value"] for x in r["cadvisor"] if x["name"] == name and (
            x["labels"]["id"].endswith(cid) if level == "container" else x["labels"]["id"].endswith(f"pod{uid}"))]
        return v[0] if v else None

    def status_row(level):
        for x in r["status_by_cgroup"]["rows"]:
            if x["cgroup"].endswith(cid if level == "container" else f"pod{uid}"):
                return x.get("memory") or {}
        return {}

    ex = r["exporter"]["series"]
    out_ = {}
    for level in ("container", "pod"):
        st = status_row(level)
        ex_id = cid if level == "container" else ""
        out_[level] = {
            "cadvisor_working_set_bytes": cadvisor("container_memory_working_set_bytes", level),
            "cadvisor_usage_bytes": cadvisor("container_memory_usage_bytes", level),
            "cadvisor_kernel_usage_bytes": cadvisor("container_memory_kernel_usage", level),
            "resource_working_set_bytes": one(r["resource"], "container_memory_working_set_bytes",
                                              container=CONTAINER) if level == "container"
            else one(r["resource"], "pod_memory_working_set_bytes"),
            "kubectl_top_bytes": (r["metrics_server"] or {}).get("container_memory_bytes")
            if level == "container" else None,
            "status_working_set_bytes": st.get("working_set_bytes"),
            "status_kernel_bytes": st.get("kernel_bytes"),
            "status_slab_reclaimable_bytes": st.get("slab_reclaimable_bytes"),
            "status_dentries_estimated": st.get("dentries_estimated"),
            "status_working_set_without_kernel_bytes": st.get("working_set_without_kernel_bytes"),
            "status_working_set_without_reclaimable_slab_bytes": st.get(
                "working_set_without_reclaimable_slab_bytes"),
            "exporter_working_set_bytes": one(ex, "dentrylab_cgroup_working_set_bytes", container_id=ex_id),
            "exporter_kernel_memory_bytes": one(ex, "dentrylab_cgroup_kernel_memory_bytes", container_id=ex_id),
            "exporter_slab_reclaimable_bytes": one(ex, "dentrylab_cgroup_slab_reclaimable_bytes",
                                                   container_id=ex_id),
            "exporter_dentry_bytes_estimated": one(ex, "dentrylab_cgroup_dentry_bytes_estimated",
                                                   container_id=ex_id),
            "exporter_working_set_without_kernel_memory_bytes": one(
                ex, "dentrylab_cgroup_working_set_without_kernel_memory_bytes", container_id=ex_id),
            "exporter_working_set_without_reclaimable_slab_bytes": one(
                ex, "dentrylab_cgroup_working_set_without_reclaimable_slab_bytes", container_id=ex_id),
        }
    w = r["witness_before"]
    out_["container"].update({"witness_working_set_bytes": w["working_set_bytes"],
                              "witness_kernel_bytes": w["kernel_bytes"],
                              "witness_slab_reclaimable_bytes": w["slab_reclaimable_bytes"]})
    return out_


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--count", type=count_arg, default=1_000_000, help="dentries the pod makes (default 1M)")
    p.add_argument("--kind", choices=("negative", "hardlink"), default="negative",
                   help="negative (ext4 loop mount, default) or hardlink (tmpfs)")
    p.add_argument("--hold", type=int, default=900, help="seconds create holds them at most (default 900)")
    p.add_argument("--dentrylab", default=os.path.join(REPO, "target/release/dentrylab"),
                   help="the dentrylab binary, run on the host and in the pod (default target/release/dentrylab)")
    p.add_argument("--running", action="store_true", help="use a cluster already up, and leave it up")
    p.add_argument("--no-metrics-server", action="store_true", help="without metrics-server (no kubectl top)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    if a.count < 1 or a.hold < 60:
        print("pod-memory: --count must be at least 1 and --hold at least 60", file=sys.stderr)
        sys.exit(2)
    if os.geteuid() != 0:
        die("needs root (it runs deploy/local/up.sh, a privileged pod and dentrylab status --by-cgroup)")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not a.running:
        # The cluster's own image gets the same binary (no static build).
        env = dict(os.environ, DENTRYLAB_BINARY=os.environ.get("DENTRYLAB_BINARY", os.path.realpath(a.dentrylab)))
        up = subprocess.run([os.path.join(HERE, "up.sh")], stdout=subprocess.PIPE, text=True, env=env)
        if up.returncode != 0:
            die(f"up.sh failed (exit {up.returncode})")
    elif not os.path.exists(os.path.join(RUN, "admin.kubeconfig")):
        die(f"--running: no cluster in {RUN} (deploy/local/up.sh)")
    try:
        out = measure(a)
    finally:
        for f in reversed(CLEANUPS):
            try:
                f()
            except (OSError, RuntimeError) as e:
                log(f"cleanup: {e}")
        for c in CHILDREN:
            if c.poll() is None:
                c.send_signal(signal.SIGTERM)
                try:
                    c.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    c.kill()
        if not a.running:
            subprocess.run([os.path.join(HERE, "down.sh")])
    out = {"schema": 1, "benchmark": "pod-memory", "started": started,
           "command": "deploy/local/pod-memory.py " + " ".join(sys.argv[1:]),
           "environment": {"kernel": os.uname().release, "cpus": os.cpu_count(),
                           "kubernetes": open(os.path.join(BIN, "version")).read().strip(),
                           "load_average": open("/proc/loadavg").read().split()[:3]},
           **out}
    out["summary"] = summary(out)
    print(json.dumps(out["summary"], indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        log(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
