#!/usr/bin/env python3
"""The kubelet as a victim of a dentry reclaim, on the one-node cluster of
deploy/local/up.sh (which it brings up, and takes down with down.sh however
it ends). Needs root. Python 3 standard library only.

    sudo deploy/local/kubelet-victim.py --sizes 1M,2M,4M,8M --reps 3 \\
        --json docs/results/kubelet-victim-6.18.json

For each size N and repetition, in order (sizes ascending within a
repetition):
  1. `dentrylab create --count N --kind hardlink`, pinned to CPU 0
     (`taskset -c 0`), makes N hard links on a tmpfs in its own mount
     namespace and holds them.
  2. The control: a pause pod created every --every seconds for --control
     seconds while the dentries are held (nothing reclaims).
  3. The reclaim: SIGTERM to `create`, which unmounts the tmpfs (a timed
     umount on CPU 0); pods keep being created every --every seconds until
     it exits and --tail seconds more.
  4. Every pod of the repetition Running, the kubelet's metrics read, the
     pods deleted and gone before the next one.
The dentrylab binary: the static one up.sh builds for the image, or
DENTRYLAB_BINARY (an absolute path), which up.sh then puts in the image.

What it records:
  - Each pod's created -> Running: from the POST's answer to the watch event
    that reports phase Running, both stamped by this script as the API
    server answers them (milliseconds); and the API's own timestamps
    (creationTimestamp, the Ready condition, the container's startedAt;
    whole seconds). "Control" pods ran before the SIGTERM; "during" pods'
    created -> Running overlaps [SIGTERM, create's exit].
  - The node Lease's renewTime (kube-node-lease/dentrylab-node,
    microseconds, stamped by the kubelet), polled every second: every gap
    between renewals, and those that overlap a reclaim.
  - The kubelet's /metrics before the control, at the SIGTERM and after the
    last pod ran: per histogram of KUBELET_HISTOGRAMS the observations in
    each window, their mean and the bucket bounds of the largest.

The fit is dentrylab's own, the one `reclaim --victims` fits its victims'
waits with (`dentrylab __internal fit-waits`, the binary above or
--dentrylab): the wait a reclaim adds to a pod start, `w = longest during -
median control` of the same repetition, against the size N (each size's
repetitions together), fitted as w = c.N unless the waits reject it (then
w = c.N^k), with a 90% band that carries the scatter between runs; the
count at which a deadline D is missed is where w reaches D - base, base the
median control start (also the longest), with its 90% interval. The same
for the Lease's longest renewal gap overlapping a reclaim, over the median
gap outside every reclaim, against the node-monitor grace period read from
kube-controller-manager --help. The fit is in log space: a wait of 0 or
less is left out (and listed). `--refit FILE` recomputes the fits of a
saved run (no cluster; then target/release/dentrylab if no static build).
A failed repetition leaves the ones before it in --json, marked partial.
"""
import argparse
import calendar
import http.client
import json
import math
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
K8S = os.environ.get("DENTRYLAB_K8S_DIR", os.path.expanduser("~/.cache/dentrylab/k8s"))
RUN = os.path.join(K8S, "run")
PKI = os.path.join(RUN, "pki")
NODE, NODE_IP, NS = "dentrylab-node", "10.215.0.1", "dentrylab-victim"
PAUSE_IMAGE = "localhost/dentrylab/pause:1"
# The static build up.sh makes for the image, or DENTRYLAB_BINARY (which
# up.sh then puts in the image too).
DENTRYLAB = os.environ.get("DENTRYLAB_BINARY") or os.path.join(REPO, "target/x86_64-unknown-linux-gnu/release/dentrylab")
DENTRYLAB_HOST = os.path.join(REPO, "target/release/dentrylab")  # for --refit without the static build
POD_START_SLO_SECONDS = 5.0  # Kubernetes' pod startup SLO (p99, stateless pods, no image pull)
KUBELET_HISTOGRAMS = [
    "kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_interval_seconds",
    "kubelet_runtime_operations_duration_seconds", "kubelet_pod_start_sli_duration_seconds",
    "kubelet_pod_worker_duration_seconds", "kubelet_run_podsandbox_duration_seconds",
]
CHILDREN = []  # dentrylab create processes: reclaimed (SIGTERM) however the script ends


def die(msg):
    print(f"kubelet-victim: {msg}", file=sys.stderr)
    sys.exit(1)


def count_arg(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kM]?)", s)
    if not m:
        raise argparse.ArgumentTypeError(f"{s!r} is not a count (like 500k or 2M)")
    return int(float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)])


class Api:
    """The API server (admin's client certificate) and the kubelet (the API
    server's kubelet-client certificate), one connection per call."""

    def __init__(self):
        self.ctx = self._ctx("admin")
        self.kubelet_ctx = self._ctx("apiserver-kubelet-client")

    @staticmethod
    def _ctx(cert):
        ctx = ssl.create_default_context(cafile=os.path.join(PKI, "ca.crt"))
        ctx.load_cert_chain(os.path.join(PKI, f"{cert}.crt"), os.path.join(PKI, f"{cert}.key"))
        return ctx

    def call(self, method, path, body=None, ok=(200, 201, 202), timeout=30):
        c = http.client.HTTPSConnection("127.0.0.1", 6443, context=self.ctx, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            c.request(method, path, body=data, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            text = r.read().decode()
            if r.status not in ok:
                raise RuntimeError(f"{method} {path}: HTTP {r.status}: {text[:300]}")
            return json.loads(text) if text else None
        finally:
            c.close()

    def watch(self, path):
        """Yields (arrival time, event) for a watch until the server ends it."""
        c = http.client.HTTPSConnection("127.0.0.1", 6443, context=self.ctx, timeout=600)
        c.request("GET", path)
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError(f"watch {path}: HTTP {r.status}")
        while True:
            line = r.readline()
            if not line:
                return
            yield time.time(), json.loads(line)

    def kubelet_metrics(self):
        c = http.client.HTTPSConnection(NODE_IP, 10250, context=self.kubelet_ctx, timeout=30)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            text = r.read().decode()
            if r.status != 200:
                raise RuntimeError(f"kubelet /metrics: HTTP {r.status}: {text[:200]}")
        finally:
            c.close()
        return parse_histograms(text)


def parse_histograms(text):
    """{family: {labels without le: {"buckets": {le: n}, "sum": x, "count": n}}}."""
    out = {}
    pat = re.compile(r'^(\w+?)_(bucket|sum|count)(?:\{(.*)\})? (\S+)$')
    for line in text.splitlines():
        m = pat.match(line)
        if not m or m.group(1) not in KUBELET_HISTOGRAMS:
            continue
        fam, part, labels, value = m.group(1), m.group(2), m.group(3) or "", float(m.group(4))
        pairs = re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)
        le = next((v for k, v in pairs if k == "le"), None)
        key = ",".join(f"{k}={v}" for k, v in pairs if k != "le")
        h = out.setdefault(fam, {}).setdefault(key, {"buckets": {}, "sum": 0.0, "count": 0.0})
        if part == "bucket":
            h["buckets"][le] = value
        else:
            h[part] = value
    return out


def histogram_delta(before, after):
    """Per family and label set, the observations between two scrapes: count,
    mean, and the bounds of the bucket holding the largest (lo, hi]."""
    out = {}
    for fam, series in after.items():
        for key, h in series.items():
            b = before.get(fam, {}).get(key, {"buckets": {}, "sum": 0.0, "count": 0.0})
            n = h["count"] - b["count"]
            if n <= 0:
                continue
            bounds = sorted(((float(le), h["buckets"][le] - b["buckets"].get(le, 0.0)) for le in h["buckets"]))
            hi = next((le for le, c in bounds if c >= n), math.inf)
            lo = max((le for le, c in bounds if c < n), default=0.0)
            out.setdefault(fam, {})[key or "-"] = {
                "count": int(n), "mean_seconds": (h["sum"] - b["sum"]) / n,
                "largest_above_seconds": lo, "largest_at_most_seconds": None if math.isinf(hi) else hi}
    return out


def api_time(s):
    """An API timestamp (RFC 3339, seconds or microseconds) as Unix time."""
    if not s:
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z", s)
    if not m:
        return None
    whole = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    return whole + (float(m.group(2)) if m.group(2) else 0.0)


class Recorder:
    """The pods' Running times from a watch, and the Lease's renewals."""

    def __init__(self, api):
        self.api, self.lock, self.stop = api, threading.Lock(), threading.Event()
        self.running, self.renewals = {}, []
        for target in (self._watch_pods, self._poll_lease):
            threading.Thread(target=target, daemon=True).start()

    def _watch_pods(self):
        rv = self.api.call("GET", f"/api/v1/namespaces/{NS}/pods")["metadata"]["resourceVersion"]
        while not self.stop.is_set():
            try:
                for at, ev in self.api.watch(f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={rv}"):
                    obj = ev["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if ev["type"] == "ERROR":
                        rv = self.api.call("GET", f"/api/v1/namespaces/{NS}/pods")["metadata"]["resourceVersion"]
                        break
                    name = obj["metadata"]["name"]
                    if obj.get("status", {}).get("phase") == "Running":
                        with self.lock:
                            self.running.setdefault(name, (at, obj))
            except (OSError, http.client.HTTPException, RuntimeError, ValueError):
                time.sleep(0.2)

    def _poll_lease(self):
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE}"
        while not self.stop.is_set():
            try:
                t = api_time(self.api.call("GET", path, timeout=5)["spec"]["renewTime"])
                with self.lock:
                    if t is not None and (not self.renewals or t != self.renewals[-1]):
                        self.renewals.append(t)
            except (OSError, http.client.HTTPException, RuntimeError, KeyError):
                pass
            time.sleep(1.0)


def pod_body(name, labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "pause", "image": PAUSE_IMAGE, "imagePullPolicy": "Never",
                                     "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}}}],
                     "restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "enableServiceLinks": False}}


class Stream(threading.Thread):
    """Creates a pod every `every` seconds until stopped: (name, POST sent,
    POST answered) for each."""

    def __init__(self, api, prefix, labels, every):
        super().__init__(daemon=True)
        self.api, self.prefix, self.labels, self.every = api, prefix, labels, every
        self.pods, self.stop, self.errors = [], threading.Event(), []

    def run(self):
        i, t0 = 0, time.time()
        while not self.stop.is_set():
            name = f"{self.prefix}-{i}"
            sent = time.time()
            try:
                self.api.call("POST", f"/api/v1/namespaces/{NS}/pods", pod_body(name, self.labels))
                self.pods.append((name, sent, time.time()))
            except (OSError, http.client.HTTPException, RuntimeError) as e:
                self.errors.append(f"{name}: {e}")
            i += 1
            self.stop.wait(max(0.0, t0 + i * self.every - time.time()))


def wait_gone(api, selector, timeout=180):
    end = time.time() + timeout
    while time.time() < end:
        if not api.call("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={selector}")["items"]:
            return
        time.sleep(0.5)
    die(f"pods {selector} still there {timeout} s after their deletion")


def one_rep(api, rec, size, rep, a):
    """One size, one repetition: returns its record."""
    label = f"s{size}-r{rep}"
    selector = f"dentrylab-victim%3D{label}"
    out_json = os.path.join(RUN, f"victim-create-{label}.json")
    create = subprocess.Popen(["taskset", "-c", "0", DENTRYLAB, "create", "--count", str(size), "--kind",
                               "hardlink", "--json", out_json], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    CHILDREN.append(create)
    said = []
    for line in create.stdout:
        if line.startswith("created "):
            break
        said.append(line.strip())
    else:
        create.wait()
        die(f"dentrylab create --count {size} exited {create.returncode}: "
            f"{' '.join(said)} {create.stderr.read().strip()}")
    threading.Thread(target=create.stdout.read, daemon=True).start()
    time.sleep(1.0)
    load = [open("/proc/loadavg").read().split()[0]]
    m0 = api.kubelet_metrics()
    stream = Stream(api, f"v-{label}", {"dentrylab-victim": label}, a.every)
    t_ctrl = time.time()
    stream.start()
    time.sleep(a.control)
    m1 = api.kubelet_metrics()
    t_sig = time.time()
    create.send_signal(signal.SIGTERM)
    create.wait(timeout=600)
    t_exit = time.time()
    time.sleep(a.tail)
    stream.stop.set()
    stream.join()
    names = [p[0] for p in stream.pods]
    end = time.time() + 180
    while time.time() < end:
        with rec.lock:
            if all(n in rec.running for n in names):
                break
        time.sleep(0.2)
    m2 = api.kubelet_metrics()
    load.append(open("/proc/loadavg").read().split()[0])
    result = json.load(open(out_json))
    os.unlink(out_json)
    pods = []
    with rec.lock:
        for name, sent, answered in stream.pods:
            at, obj = rec.running.get(name, (None, None))
            md, st = (obj or {}).get("metadata", {}), (obj or {}).get("status", {})
            ready = next((c.get("lastTransitionTime") for c in st.get("conditions", []) if c["type"] == "Ready"), None)
            started = next((c.get("state", {}).get("running", {}).get("startedAt")
                            for c in st.get("containerStatuses", [])), None)
            pods.append({"name": name, "post_sent": sent, "created": answered, "running": at,
                         "created_to_running_seconds": None if at is None else at - answered,
                         "api": {"creationTimestamp": md.get("creationTimestamp"), "startTime": st.get("startTime"),
                                 "ready": ready, "startedAt": started}})
    api.call("DELETE", f"/api/v1/namespaces/{NS}/pods?labelSelector={selector}&gracePeriodSeconds=1")
    wait_gone(api, selector)
    time.sleep(2.0)
    missing = [p["name"] for p in pods if p["running"] is None]
    if missing:
        die(f"{label}: pods never Running: {missing[:5]}")
    control = [p["created_to_running_seconds"] for p in pods if p["running"] < t_sig]
    during = [p for p in pods if p["created"] <= t_exit and p["running"] >= t_sig]
    longest = max(during, key=lambda p: p["created_to_running_seconds"]) if during else None
    rc = result.get("reclaim") or {}
    return {
        "size": size, "rep": rep, "created_dentries": result.get("created"),
        "reclaimed_dentries": rc.get("reclaimed"), "umount_seconds": rc.get("umount_seconds"),
        "t_control": t_ctrl, "t_sigterm": t_sig, "t_exit": t_exit, "loadavg_1min": load,
        "post_errors": stream.errors,
        "control": summary(control), "during": summary([p["created_to_running_seconds"] for p in during]),
        "longest_during_pod": longest and longest["name"],
        "pod_start_wait_seconds": (longest["created_to_running_seconds"] - statistics.median(control))
        if longest and control else None,
        "kubelet_metrics": {"control": histogram_delta(m0, m1), "during": histogram_delta(m1, m2)},
        "pods": pods,
    }


def summary(xs):
    xs = sorted(xs)
    if not xs:
        return {"pods": 0}
    return {"pods": len(xs), "median_seconds": statistics.median(xs), "longest_seconds": xs[-1],
            "shortest_seconds": xs[0]}


class FitError(Exception):
    pass


def fit_waits(binary, points, deadline):
    """`dentrylab __internal fit-waits`: the victims' model of (N, wait)
    points and the count at which it reaches `deadline` seconds."""
    p = subprocess.run([binary, "__internal", "fit-waits", "--deadline", repr(float(deadline))],
                       input=json.dumps(points), capture_output=True, text=True)
    if p.returncode != 0:
        raise FitError(f"{binary} __internal fit-waits exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def projection(binary, points, deadline, base):
    """The fit of the waits a reclaim added over `base`, and the count at
    which base + wait reaches the deadline (its interval's high end None:
    unbounded)."""
    pts = [[n, w] for n, w in points if w is not None]
    room = deadline - base
    if room <= 0:
        return None, {"count": None, "why": f"the control alone ({base:.3f} s) reaches the deadline",
                      "deadline_seconds": deadline, "base_seconds": base}
    fit = fit_waits(binary, pts, room)
    interval = fit["interval"] or {}
    proj = {"count": fit["count"], "low": interval.get("low"), "high": interval.get("high"),
            "model": fit["model"], "deadline_seconds": deadline, "base_seconds": base}
    if fit.get("why"):
        proj["why"] = fit["why"]
    return fit, proj


def lease_gaps(renewals, reps):
    gaps = [(a, b) for a, b in zip(renewals, renewals[1:])]
    def overlaps(g, r):
        return g[0] <= r["t_exit"] and g[1] >= r["t_sigterm"]
    for r in reps:
        mine = [b - a for a, b in gaps if overlaps((a, b), r)]
        r["lease_longest_gap_seconds"] = max(mine) if mine else None
    outside = [b - a for a, b in gaps if not any(overlaps((a, b), r) for r in reps)]
    return {"renewals": len(renewals), "outside": summary(outside),
            "gaps": [[a, b - a] for a, b in gaps]}


def flag_default(binary, flag):
    """A duration flag's default in seconds, from the binary's --help."""
    h = subprocess.run([os.path.join(K8S, "bin", binary), "--help"], capture_output=True, text=True).stdout
    i = h.find(f"--{flag} ")
    m = re.search(r"\(default (\d+)s\)", h[i:i + 800]) if i >= 0 else None
    if not m:
        die(f"{binary} --help gives no default for --{flag}")
    return float(m.group(1))


RENEW_SECONDS = 10.0  # the kubelet's Lease renew interval: a quarter of nodeLeaseDurationSeconds (40 s)


def refit(out, binary):
    """The fits and projections of a run's repetitions (also `--refit FILE`),
    by `binary`'s fit-waits. Two measures of the pod-start wait a reclaim
    adds, per repetition: the longest start overlapping it minus the
    control's median start (`pod_start_wait`), and minus the control's
    longest start (`pod_start_over_control_longest`: like against like).
    N is the repetition's size (its target), as `reclaim --victims` has it."""
    reps, grace = out["reps"], out["environment"]["node_monitor_grace_period_seconds"]
    lease_base = out["lease"]["outside"].get("median_seconds", RENEW_SECONDS)
    for r in reps:
        d, c = r["during"].get("longest_seconds"), r["control"].get("longest_seconds")
        r["pod_start_over_control_longest_seconds"] = d - c if d is not None and c is not None else None
    series = {
        "pod_start_wait": ([(r["size"], r["pod_start_wait_seconds"]) for r in reps], POD_START_SLO_SECONDS,
                           statistics.median(r["control"]["median_seconds"] for r in reps)),
        "pod_start_over_control_longest": (
            [(r["size"], r["pod_start_over_control_longest_seconds"]) for r in reps], POD_START_SLO_SECONDS,
            statistics.median(r["control"]["longest_seconds"] for r in reps)),
        # Over the median gap outside every reclaim (the Lease's own control).
        "lease_gap_excess": ([(r["size"], r["lease_longest_gap_seconds"] - lease_base)
                              for r in reps if r["lease_longest_gap_seconds"] is not None], grace, lease_base),
    }
    names = {"pod_start_wait": "pod_startup_slo",
             "pod_start_over_control_longest": "pod_startup_slo_over_control_longest",
             "lease_gap_excess": "node_monitor_grace_period"}
    fits, projections = {}, {}
    for key, (points, deadline, base) in series.items():
        fits[key], projections[names[key]] = projection(binary, points, deadline, base)
    out["schema"] = 2  # 2: the fits are dentrylab's (fit-waits); 1 fitted c.N by least squares here
    out["fits"], out["projections"] = fits, projections


def fit_binary(a):
    """The dentrylab whose fit-waits fits: --dentrylab, else the static
    build up.sh makes, else (for --refit) the host's release build."""
    for b in ([a.dentrylab] if a.dentrylab else [DENTRYLAB] + ([DENTRYLAB_HOST] if a.refit else [])):
        if os.access(b, os.X_OK):
            return b
    die(f"no dentrylab binary to fit with: {a.dentrylab or DENTRYLAB} is not there "
        f"(build it: cargo build --release, or pass --dentrylab PATH)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1M,2M,4M,8M", help="dentry counts (hard links), e.g. 1M,2M,4M,8M")
    p.add_argument("--reps", type=int, default=3, help="repetitions of every size (default 3)")
    p.add_argument("--control", type=float, default=6.0, help="seconds of pods before the reclaim (default 6)")
    p.add_argument("--every", type=float, default=0.5, help="seconds between pod creations (default 0.5)")
    p.add_argument("--tail", type=float, default=1.0, help="seconds of pods after the reclaim (default 1)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--refit", metavar="FILE", help="recompute the fits of a saved run (no cluster) and rewrite it")
    p.add_argument("--dentrylab", metavar="PATH", help="the dentrylab binary that fits (default: the static build "
                   "up.sh makes; with --refit, else target/release/dentrylab)")
    a = p.parse_args()
    if a.refit:
        try:
            out = json.load(open(a.refit))
        except (OSError, ValueError) as e:
            die(f"--refit {a.refit}: {e}")
        try:
            refit(out, fit_binary(a))
        except FitError as e:
            die(str(e))
        write_json(a.refit, out)
        print(json.dumps({k: out[k] for k in ("fits", "projections")}, indent=1))
        return 0
    try:
        sizes = [count_arg(s) for s in a.sizes.split(",")]
    except argparse.ArgumentTypeError as e:
        print(f"kubelet-victim: --sizes: {e}", file=sys.stderr)
        sys.exit(2)
    if a.reps < 1 or a.every <= 0 or a.control <= 0:
        print("kubelet-victim: --reps must be at least 1, --every and --control above 0", file=sys.stderr)
        sys.exit(2)
    if os.geteuid() != 0:
        die("needs root (it runs deploy/local/up.sh and dentrylab create)")
    if len(os.sched_getaffinity(0)) < 2:
        die("needs 2 CPUs at least (the reclaim holds CPU 0)")
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    up = subprocess.run([os.path.join(HERE, "up.sh")], stdout=subprocess.PIPE, text=True)
    if up.returncode != 0:
        die(f"up.sh failed (exit {up.returncode})")
    try:
        return measure(a, sizes, started)
    finally:
        for c in CHILDREN:
            if c.poll() is None:
                c.send_signal(signal.SIGTERM)
                c.wait()
        subprocess.run([os.path.join(HERE, "down.sh")])


def write_json(path, out):
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def measure(a, sizes, started):
    if not os.access(DENTRYLAB, os.X_OK):
        die(f"{DENTRYLAB} not found (up.sh builds it)")
    api = Api()
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    sa = f"/api/v1/namespaces/{NS}/serviceaccounts/default"
    for _ in range(120):
        if api.call("GET", sa, ok=(200, 404)).get("kind") == "ServiceAccount":
            break
        time.sleep(0.5)
    rec = Recorder(api)
    # A warm-up: the first pods on a node pay for caches no later one does.
    warm = Stream(api, "warm", {"dentrylab-victim": "warm"}, a.every)
    warm.start()
    time.sleep(4 * a.every)
    warm.stop.set()
    warm.join()
    for _ in range(240):
        with rec.lock:
            if all(n in rec.running for n, _, _ in warm.pods):
                break
        time.sleep(0.5)
    else:
        die("the warm-up pods did not run in 120 s: kubectl -n dentrylab-victim describe pods")
    api.call("DELETE", f"/api/v1/namespaces/{NS}/pods?labelSelector=dentrylab-victim%3Dwarm&gracePeriodSeconds=1")
    wait_gone(api, "dentrylab-victim%3Dwarm")
    reps = []
    head = {"schema": 2, "benchmark": "kubelet-victim", "started": started,
            "command": "deploy/local/kubelet-victim.py " + " ".join(sys.argv[1:])}
    try:
        for rep in range(1, a.reps + 1):
            for size in sizes:
                r = one_rep(api, rec, size, rep, a)
                reps.append(r)
                c, d = r["control"], r["during"]
                print(f"{size:>9,} rep {rep}: umount {r['umount_seconds']:.2f} s; pod start control median "
                      f"{c.get('median_seconds', math.nan):.3f} s, longest {c.get('longest_seconds', math.nan):.3f} s; during "
                      f"{d['pods']} pods, longest {d.get('longest_seconds', math.nan):.3f} s; "
                      f"load {'/'.join(r['loadavg_1min'])}", file=sys.stderr)
    except SystemExit:  # a repetition that failed keeps the ones before it
        if a.json and reps:
            write_json(a.json, {**head, "partial": True, "kernel": os.uname().release, "options": vars(a),
                                "reps": reps})
            print(f"kubelet-victim: the {len(reps)} repetitions before it are in {a.json} (partial)", file=sys.stderr)
        raise
    time.sleep(1.0)
    rec.stop.set()
    with rec.lock:
        lease = lease_gaps(list(rec.renewals), reps)
    grace = flag_default("kube-controller-manager", "node-monitor-grace-period")
    out = {
        **head,
        "environment": {"kernel": os.uname().release, "cpus": os.cpu_count(),
                        "kubernetes": open(os.path.join(K8S, "bin", "version")).read().strip(),
                        "node_monitor_grace_period_seconds": grace, "lease_renew_interval_seconds": RENEW_SECONDS},
        "options": vars(a), "reps": reps, "lease": lease,
    }
    try:
        refit(out, fit_binary(a))
    except FitError as e:
        # The measurements are kept whatever the fit does.
        if a.json:
            write_json(a.json, out)
        die(f"{e} (the repetitions are in {a.json or 'no file: no --json'}; --refit it)")
    print(json.dumps({k: out[k] for k in ("fits", "projections")}, indent=1))
    print(f"lease: {lease['renewals']} renewals; outside the reclaims {lease['outside']}; during: "
          f"{[r['lease_longest_gap_seconds'] for r in reps]}")
    if a.json:
        write_json(a.json, out)
        print(f"wrote {a.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
