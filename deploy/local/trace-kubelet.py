#!/usr/bin/env python3
"""Where a real pod start waits during a dentry reclaim, on the one-node
cluster of deploy/local/up.sh (which it brings up, and takes down with
down.sh however it ends). Needs root, strace. Python 3 standard library;
the cluster and pod helpers are deploy/local/kubelet-victim.py's.

    sudo deploy/local/trace-kubelet.py --size 8M --reps 2 --json /tmp/trace-kubelet.json

For each repetition, as kubelet-victim.py does one: `dentrylab create
--count N --kind hardlink` pinned to CPU 0 holds N hard links; a pause pod
is created every --every seconds from --control seconds before the
SIGTERM (the control) until `create` has unmounted its tmpfs and --tail
seconds more. Meanwhile, from the control's start to the last pod Running:

  - strace -f -T on containerd, so every shim, runc, runc init and CNI
    plugin of a pod start is followed: mount, umount2, unshare, setns,
    pivot_root, clone, clone3, execve, mkdir(at), rmdir, unlinkat, each with
    its duration and the program it ran in (the last execve of its process).
    strace stops containerd at each of its system calls (an attached
    process gets no seccomp filter), which slows it in the control as in
    the reclaim;
  - every 20 ms, the state of each thread of the kubelet, containerd, the
    shims, runc and the CNI plugins, and the kernel stack of those in D
    (uninterruptible sleep, where a grace-period wait sleeps);
  - /proc/PID/task/TID/schedstat of the kubelet's, containerd's and the
    control plane's threads at the control's start, the SIGTERM and
    create's exit: time spent runnable but waiting for a CPU, per window.

What it prints: per repetition, the calls of 100 ms or more (--long) that
overlap the reclaim, by program and call, and how many pods started
meanwhile; the same outside it; the D-state samples by program and stack;
the run-queue waits. --json keeps every long call, the samples and the
pods.
"""
import argparse
import collections
import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_kubelet_victim():
    path = os.path.join(HERE, "kubelet-victim.py")
    loader = importlib.machinery.SourceFileLoader("kubelet_victim", path)
    spec = importlib.util.spec_from_loader("kubelet_victim", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


kv = load_kubelet_victim()
TRACED = "mount,umount2,unshare,setns,pivot_root,clone,clone3,execve,mkdir,mkdirat,rmdir,unlinkat"
# Programs whose threads the sampler reads (comm, as /proc/PID/comm has it).
SAMPLED = {"kubelet", "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "runc:[0:PARENT]",
           "runc:[1:CHILD]", "runc:[2:INIT]", "bridge", "host-local", "loopback", "portmap", "mount", "umount"}
SCHED = SAMPLED | {"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager"}


def pids_by_comm(names):
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                c = f.read().strip()
        except OSError:
            continue
        if c in names or c.startswith("runc:") or c.startswith("containerd-shim"):
            out[int(d)] = c
    return out


def group(comm):
    if comm.startswith("runc"):
        return "runc"
    if comm.startswith("containerd-shim"):
        return "containerd-shim"
    return comm


def schedstat(names):
    """{group: (run ns, run-queue wait ns)} summed over every thread now."""
    out = collections.defaultdict(lambda: [0, 0])
    for pid, comm in pids_by_comm(names).items():
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for t in tids:
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    run, wait, _ = (int(x) for x in f.read().split())
            except (OSError, ValueError):
                continue
            out[group(comm)][0] += run
            out[group(comm)][1] += wait
    return {k: tuple(v) for k, v in out.items()}


class Sampler(threading.Thread):
    """Every `period` s: each sampled thread's state; the stack of those in D."""

    def __init__(self, period=0.02):
        super().__init__(daemon=True)
        self.period, self.stop, self.samples, self.ticks = period, threading.Event(), [], 0

    def run(self):
        pids, refreshed = {}, 0.0
        while not self.stop.is_set():
            now = time.time()
            if now - refreshed > 0.2:
                pids, refreshed = pids_by_comm(SAMPLED), now
            self.ticks += 1
            for pid, comm in pids.items():
                try:
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                for t in tids:
                    try:
                        with open(f"/proc/{pid}/task/{t}/stat") as f:
                            st = f.read()
                        state = st[st.rindex(")") + 2]
                        if state != "D":
                            continue
                        with open(f"/proc/{pid}/task/{t}/stack") as f:
                            frames = [ln.split()[1].split("+")[0] for ln in f if len(ln.split()) > 1]
                    except (OSError, ValueError, IndexError):
                        continue
                    self.samples.append((now, group(comm), int(t), frames[:6]))
            self.stop.wait(max(0.0, self.period - (time.time() - now)))


CALL = re.compile(r"^(\d+) +(\d+\.\d+) (\w+)\((.*)$")
RESUMED = re.compile(r"^(\d+) +(\d+\.\d+) <\.\.\. (\w+) resumed>(.*)$")
DUR = re.compile(r"<(\d+\.\d+)>$")


def parse_strace(path, roots):
    """Every traced call: pid, program, owner, call, arguments, start,
    seconds, result. A process's program is its last execve's argv[0] (and,
    for runc, its subcommand), else its parent's; its owner the `-id` of the
    containerd shim it descends from (the pod's sandbox), if any; `roots`
    names the attached pids."""
    prog, calls, pending = dict(roots), [], {}
    prog["owner"] = {}
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = CALL.match(line)
        if m and not m.group(4).endswith("<unfinished ...>"):
            pid, ts, call, rest = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
            d = DUR.search(rest)
            record(prog, calls, pid, ts, call, rest, float(d.group(1)) if d else 0.0)
            continue
        if m:
            pending[(int(m.group(1)), m.group(3))] = (float(m.group(2)), m.group(4))
            continue
        m = RESUMED.match(line)
        if m:
            pid, call = int(m.group(1)), m.group(3)
            ts, rest = pending.pop((pid, call), (float(m.group(2)), ""))
            d = DUR.search(m.group(4))
            record(prog, calls, pid, ts, call, rest + m.group(4), float(d.group(1)) if d else 0.0)
    return calls


def record(prog, calls, pid, ts, call, rest, dur):
    result = rest.rsplit(" = ", 1)[-1].split(" ")[0] if " = " in rest else "?"
    owner = prog["owner"]
    if call in ("clone", "clone3") and result.isdigit():
        prog.setdefault(int(result), prog.get(pid, "?"))
        if pid in owner:
            owner.setdefault(int(result), owner[pid])
    if call == "execve" and result == "0":
        argv = re.findall(r'"((?:[^"\\]|\\.)*)"', rest.split("], ")[0])[1:]
        name = os.path.basename(argv[0]) if argv else "?"
        if name.startswith("containerd-shim") and "-id" in argv[:-1]:
            owner[pid] = argv[argv.index("-id") + 1]
        if name == "runc" or (name == "exe" and "init" in argv):
            sub = next((a for a in argv[1:] if a in ("create", "start", "delete", "kill", "state", "init",
                                                     "exec", "features")), "")
            name = f"runc {sub}".strip()
        prog[pid] = name
    args = rest.rsplit(") = ", 1)[0] if ") = " in rest else rest
    calls.append({"pid": pid, "program": prog.get(pid, "?"), "owner": owner.get(pid), "call": call,
                  "arg": args[:100], "start": ts, "seconds": dur, "result": result})


def one_rep(api, rec, size, rep, a, out_dir):
    label = f"t{size}-r{rep}"
    out_json = os.path.join(kv.RUN, f"trace-create-{label}.json")
    create = subprocess.Popen(["taskset", "-c", "0", kv.DENTRYLAB, "create", "--count", str(size), "--kind",
                               "hardlink", "--json", out_json], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    kv.CHILDREN.append(create)
    for line in create.stdout:
        if line.startswith("created "):
            break
    else:
        create.wait()
        kv.die(f"dentrylab create --count {size} exited {create.returncode}: {create.stderr.read().strip()}")
    threading.Thread(target=create.stdout.read, daemon=True).start()
    time.sleep(1.0)
    # containerd only: every shim, runc and CNI plugin of a pod start is its
    # descendant (the kubelet's own mounts are the volumes', at teardown).
    roots = {p: c for p, c in pids_by_comm({"containerd"}).items() if c == "containerd"}
    trace = os.path.join(out_dir, f"strace-{label}")
    tracer = subprocess.Popen(["strace", "-f", "-T", "-ttt", "-qq", "-s", "64", "-e", f"trace={TRACED}",
                               "-o", trace] + [x for p in roots for x in ("-p", str(p))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    sampler = Sampler()
    sampler.start()
    s0, t_ctrl = schedstat(SCHED), time.time()
    stream = kv.Stream(api, f"v-{label}", {"dentrylab-victim": label}, a.every)
    stream.start()
    time.sleep(a.control)
    s1, t_sig = schedstat(SCHED), time.time()
    create.send_signal(signal.SIGTERM)
    create.wait(timeout=600)
    s2, t_exit = schedstat(SCHED), time.time()
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
    sampler.stop.set()
    sampler.join()
    # strace detaches on SIGINT once each tracee stops; a loaded node may
    # take longer than that: killed, it detaches them all (ptrace does).
    tracer.send_signal(signal.SIGINT)
    try:
        tracer.wait(timeout=20)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()
    result = json.load(open(out_json))
    os.unlink(out_json)
    pods = []
    with rec.lock:
        for name, _, answered in stream.pods:
            at = rec.running.get(name, (None, None))[0]
            pods.append({"name": name, "created": answered, "running": at})
    sandboxes = sandbox_pods()
    sel = f"dentrylab-victim%3D{label}"
    api.call("DELETE", f"/api/v1/namespaces/{kv.NS}/pods?labelSelector={sel}&gracePeriodSeconds=1")
    kv.wait_gone(api, sel)
    time.sleep(2.0)
    calls = parse_strace(trace, {p: c for p, c in roots.items()})
    for c in calls:
        c["pod"] = sandboxes.get(c["owner"])
    return analyse(size, rep, result, pods, calls, sampler, (s0, s1, s2), (t_ctrl, t_sig, t_exit), a)


def sandbox_pods():
    """{container id: pod name} of every container containerd holds (its
    CRI labels), so a shim's -id names its pod."""
    ctr = ["ctr", "--address", os.path.join(kv.RUN, "containerd/containerd.sock"), "--namespace", "k8s.io"]
    ids = subprocess.run(ctr + ["containers", "ls", "-q"], capture_output=True, text=True).stdout.split()
    out = {}
    for i in ids:
        info = subprocess.run(ctr + ["containers", "info", i], capture_output=True, text=True).stdout
        try:
            out[i] = json.loads(info).get("Labels", {}).get("io.kubernetes.pod.name")
        except ValueError:
            pass
    return out


def analyse(size, rep, result, pods, calls, sampler, sched, times, a):
    t_ctrl, t_sig, t_exit = times
    during = [p for p in pods if p["running"] and p["created"] <= t_exit and p["running"] >= t_sig]
    control = [p for p in pods if p["running"] and p["running"] < t_sig]

    def overlaps(c, lo, hi):
        return c["start"] <= hi and c["start"] + c["seconds"] >= lo

    long_during = [c for c in calls if c["seconds"] >= a.long and overlaps(c, t_sig, t_exit)]
    long_control = [c for c in calls if c["seconds"] >= a.long and overlaps(c, t_ctrl, t_sig)]
    by = collections.Counter((c["program"], c["call"]) for c in long_during)
    # Per pod started during the reclaim: the long calls inside its start.
    per_pod = []
    for p in during:
        mine = [c for c in long_during if c.get("pod") == p["name"]]
        per_pod.append({"pod": p["name"], "start_seconds": p["running"] - p["created"],
                        "long_calls": [f"{c['program']} {c['call']} {c['seconds']:.3f}" for c in mine],
                        "waited_seconds": sum(c["seconds"] for c in mine)})
    samples = collections.Counter()
    for t, g, _, frames in sampler.samples:
        if t_sig <= t <= t_exit:
            samples[(g, " <- ".join(frames[:3]))] += 1

    def rq(i, j):
        return {g: round((sched[j].get(g, (0, 0))[1] - sched[i].get(g, (0, 0))[1]) / 1e6, 1)
                for g in sorted(set(sched[i]) | set(sched[j]))}

    rc = result.get("reclaim") or {}
    return {
        "size": size, "rep": rep, "umount_seconds": rc.get("umount_seconds"), "t_sigterm": t_sig,
        "control_seconds": t_sig - t_ctrl, "reclaim_seconds": t_exit - t_sig,
        "pods_control": len(control), "pods_during": len(during),
        "long_calls_during": sorted(long_during, key=lambda c: c["start"]),
        "long_calls_control": sorted(long_control, key=lambda c: c["start"]),
        "long_calls_during_by_program": [{"program": k[0], "call": k[1], "count": n} for k, n in by.most_common()],
        "per_pod": per_pod,
        "d_state_samples_during": [{"program": k[0], "stack": k[1], "samples": n} for k, n in samples.most_common(25)],
        "sample_period_seconds": sampler.period,
        "runqueue_wait_ms": {"control": rq(0, 1), "during": rq(1, 2)},
        "calls_traced": len(calls),
    }


def show(r, a):
    print(f"== {r['size']:,} rep {r['rep']}: umount {r['umount_seconds']:.2f} s; control {r['control_seconds']:.1f} s "
          f"({r['pods_control']} pods), reclaim {r['reclaim_seconds']:.1f} s ({r['pods_during']} pods started "
          f"across it); {r['calls_traced']} calls traced")
    print(f"calls of {a.long * 1000:.0f} ms or more overlapping the reclaim (control: "
          f"{len(r['long_calls_control'])}):")
    for x in r["long_calls_during_by_program"]:
        print(f"  {x['count']:3d}  {x['program']:<16} {x['call']}")
    for c in r["long_calls_during"]:
        print(f"    {c['start'] - r['t_sigterm']:7.3f} s  {c['seconds']:.3f} s  "
              f"{c['program']:<14} {c.get('pod') or '-':<14} {c['call']}({c['arg']}) = {c['result']}")
    print("each pod started across the reclaim: its start, and its shim's long calls (runc, mounts)")
    for p in sorted(r["per_pod"], key=lambda p: -p["start_seconds"]):
        print(f"  {p['start_seconds']:.2f} s  {p['pod']:<14} {len(p['long_calls'])} long: {', '.join(p['long_calls'])}")
    print("D-state samples during the reclaim (program, stack):")
    for s in r["d_state_samples_during"][:12]:
        print(f"  {s['samples']:4d}  {s['program']:<16} {s['stack']}")
    print(f"run-queue wait (ms) control {r['runqueue_wait_ms']['control']}")
    print(f"run-queue wait (ms) during  {r['runqueue_wait_ms']['during']}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=kv.count_arg, default=kv.count_arg("8M"), help="hard links (default 8M)")
    p.add_argument("--reps", type=int, default=2, help="repetitions (default 2)")
    p.add_argument("--control", type=float, default=4.0, help="seconds of pods before the reclaim (default 4)")
    p.add_argument("--every", type=float, default=0.5, help="seconds between pod creations (default 0.5)")
    p.add_argument("--tail", type=float, default=1.0, help="seconds of pods after the reclaim (default 1)")
    p.add_argument("--long", type=float, default=0.1, help="a long call, in seconds (default 0.1)")
    p.add_argument("--out", default="/tmp/trace-kubelet", help="directory for the strace logs")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    if os.geteuid() != 0:
        kv.die("needs root (it runs deploy/local/up.sh and dentrylab create)")
    os.makedirs(a.out, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    up = subprocess.run([os.path.join(HERE, "up.sh")], stdout=subprocess.PIPE, text=True)
    if up.returncode != 0:
        kv.die(f"up.sh failed (exit {up.returncode})")
    try:
        api = kv.Api()
        api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": kv.NS}})
        for _ in range(120):
            if api.call("GET", f"/api/v1/namespaces/{kv.NS}/serviceaccounts/default", ok=(200, 404)).get("kind") \
                    == "ServiceAccount":
                break
            time.sleep(0.5)
        rec = kv.Recorder(api)
        warm = kv.Stream(api, "warm", {"dentrylab-victim": "warm"}, a.every)
        warm.start()
        time.sleep(4 * a.every)
        warm.stop.set()
        warm.join()
        time.sleep(5.0)
        api.call("DELETE", f"/api/v1/namespaces/{kv.NS}/pods?labelSelector=dentrylab-victim%3Dwarm&gracePeriodSeconds=1")
        kv.wait_gone(api, "dentrylab-victim%3Dwarm")
        reps = []
        for rep in range(1, a.reps + 1):
            r = one_rep(api, rec, a.size, rep, a, a.out)
            show(r, a)
            reps.append(r)
        rec.stop.set()
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"benchmark": "trace-kubelet", "command": "deploy/local/trace-kubelet.py " +
                           " ".join(sys.argv[1:]), "kernel": os.uname().release, "options": vars(a), "reps": reps},
                          f, indent=1)
                f.write("\n")
        return 0
    finally:
        for c in kv.CHILDREN:
            if c.poll() is None:
                c.send_signal(signal.SIGTERM)
                c.wait()
        subprocess.run([os.path.join(HERE, "down.sh")])


if __name__ == "__main__":
    sys.exit(main())
