//! `deploy/`: the alert rules pass promtool's check and unit
//! tests, the manifests parse as Kubernetes objects that agree with the
//! exporter's flags, and the dashboard and alerts use only metrics the
//! exporter exports.

mod common;
mod metrics;

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

fn deploy(file: &str) -> String {
    std::fs::read_to_string(metrics::repo().join("deploy").join(file)).unwrap()
}

fn s<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str().unwrap_or_else(|| panic!("{what}: expected a string, found {y:?}"))
}

fn list<'a>(y: &'a Yaml, what: &str) -> &'a Vec<Yaml> {
    y.as_vec().unwrap_or_else(|| panic!("{what}: expected a list, found {y:?}"))
}

#[test]
fn alert_rules_pass_promtool() {
    let dir = metrics::repo().join("deploy");
    metrics::assert_promtool_ok(&["check", "rules", "alerts.yaml"], None, &dir);
    metrics::assert_promtool_ok(&["test", "rules", "alerts_test.yaml"], None, &dir);
}

#[test]
fn manifests_are_kubernetes_objects_that_match_the_exporter() {
    let docs = YamlLoader::load_from_str(&deploy("daemonset.yaml")).unwrap();
    let mut kinds = Vec::new();
    for d in &docs {
        let kind = s(&d["kind"], "kind");
        let api = s(&d["apiVersion"], "apiVersion");
        s(&d["metadata"]["name"], "metadata.name");
        kinds.push(kind.to_string());
        let want_api = match kind {
            "Namespace" | "Service" => "v1",
            "DaemonSet" => "apps/v1",
            other => panic!("unexpected kind {other}"),
        };
        assert_eq!(api, want_api, "{kind}");
        if kind != "Namespace" {
            assert_eq!(s(&d["metadata"]["namespace"], "namespace"), "dentrylab", "{kind}");
        }
    }
    assert_eq!(kinds, ["Namespace", "DaemonSet", "Service"]);

    let ds = &docs[1];
    let spec = &ds["spec"];
    let selector = spec["selector"]["matchLabels"].as_hash().expect("spec.selector.matchLabels");
    let labels = spec["template"]["metadata"]["labels"].as_hash().expect("template labels");
    for (k, v) in selector {
        assert_eq!(labels.get(k), Some(v), "the selector must match the template's labels");
    }
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(pod["automountServiceAccountToken"].as_bool(), Some(false));
    assert!(pod["hostNetwork"].is_badvalue() && pod["hostPID"].is_badvalue(), "no host namespaces");
    let containers = list(&pod["containers"], "containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    s(&c["name"], "container name");
    s(&c["image"], "image");
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(list(&sc["capabilities"]["drop"], "drop")[0].as_str(), Some("ALL"));

    // The exporter's flags agree with the mounts, the port and the annotations.
    let args: Vec<&str> = list(&c["args"], "args").iter().map(|a| s(a, "arg")).collect();
    assert_eq!(args[0], "exporter");
    let flag = |f: &str| args.iter().position(|a| *a == f).map(|i| args[i + 1]).unwrap_or_else(|| panic!("no {f}"));
    let mounts = list(&c["volumeMounts"], "volumeMounts");
    let volumes = list(&pod["volumes"], "volumes");
    for (arg, host) in [("--proc-root", "/proc"), ("--state-dir", "/var/lib/dentrylab")] {
        let m = mounts.iter().find(|m| m["mountPath"].as_str() == Some(flag(arg))).expect("a mount for the flag");
        assert_eq!(m["readOnly"].as_bool(), Some(true), "{arg} is mounted read-only");
        let v = volumes.iter().find(|v| v["name"] == m["name"]).expect("the mount's volume");
        assert_eq!(s(&v["hostPath"]["path"], "hostPath"), host);
    }
    let port = flag("--listen").rsplit(':').next().unwrap();
    let cport = c["ports"][0]["containerPort"].as_i64().unwrap().to_string();
    assert_eq!(port, cport);
    let ann = &spec["template"]["metadata"]["annotations"];
    assert_eq!(s(&ann["prometheus.io/port"], "annotation"), port);
    assert_eq!(s(&ann["prometheus.io/path"], "annotation"), "/metrics");
    // Those flags are the exporter's own.
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_dentrylab")).args(["exporter", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for f in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(f), "{f} is not an exporter flag");
    }
    let svc = &docs[2];
    assert_eq!(svc["spec"]["selector"], spec["selector"]["matchLabels"]);
}

/// `dentrylab_*` names in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("dentrylab_") {
        let tail = &rest[i..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn dashboard_and_alerts_use_only_exported_metrics() {
    let golden = std::fs::read_to_string(metrics::golden_path("6.18-builtin")).unwrap()
        + &std::fs::read_to_string(metrics::golden_path("6.18-extras")).unwrap();
    let exported: BTreeSet<String> = golden
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    let dashboard: serde_json::Value = serde_json::from_str(&deploy("dashboard.json")).unwrap();
    let panels = dashboard["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    let mut exprs = String::new();
    for p in panels {
        assert!(p["title"].as_str().is_some_and(|t| !t.is_empty()));
        for t in p["targets"].as_array().unwrap() {
            exprs += t["expr"].as_str().unwrap();
            exprs.push('\n');
        }
    }
    let rules = YamlLoader::load_from_str(&deploy("alerts.yaml")).unwrap();
    for r in list(&rules[0]["groups"][0]["rules"], "rules") {
        exprs += s(&r["expr"], "expr");
        exprs.push('\n');
    }
    let used = metric_names(&exprs);
    assert!(used.contains("dentrylab_lockup_ratio") && used.contains("dentrylab_dentries"));
    for m in ["dentrylab_seconds_to_lockup", "dentrylab_dentries_growth_per_second", "dentrylab_kernel_lockups_total"] {
        assert!(used.contains(m), "{m} is used by the dashboard or the alerts");
    }
    let unknown: Vec<_> = used.difference(&exported).collect();
    assert!(unknown.is_empty(), "not exported: {unknown:?}");
}

/// The calibration Job: pinned to one node, privileged, runs
/// once, writes the calibration into the host directory the DaemonSet reads,
/// with flags `reclaim` accepts, and says its risk.
#[test]
fn calibration_job_writes_where_the_daemonset_reads() {
    let text = deploy("calibration-job.yaml");
    assert!(text.contains("RISK:") && text.contains("dentries"), "the risk is documented");
    let docs = YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(docs.len(), 1);
    let job = &docs[0];
    assert_eq!(s(&job["apiVersion"], "apiVersion"), "batch/v1");
    assert_eq!(s(&job["kind"], "kind"), "Job");
    assert_eq!(s(&job["metadata"]["namespace"], "namespace"), "dentrylab");
    assert_eq!(job["spec"]["backoffLimit"].as_i64(), Some(0), "never retried on its own");
    let pod = &job["spec"]["template"]["spec"];
    assert!(!s(&pod["nodeName"], "nodeName").is_empty(), "pinned to a node");
    assert_eq!(s(&pod["restartPolicy"], "restartPolicy"), "Never");
    let c = &list(&pod["containers"], "containers")[0];
    assert_eq!(c["securityContext"]["privileged"].as_bool(), Some(true));
    let args: Vec<&str> = list(&c["args"], "args").iter().map(|a| s(a, "arg")).collect();
    assert_eq!(args[0], "reclaim");
    let flag = |f: &str| args.iter().position(|a| *a == f).map(|i| args[i + 1]).unwrap_or_else(|| panic!("no {f}"));
    let m = list(&c["volumeMounts"], "volumeMounts")
        .iter()
        .find(|m| m["mountPath"].as_str() == Some(flag("--state-dir")))
        .expect("a mount for --state-dir");
    assert!(m["readOnly"].as_bool() != Some(true), "it writes the calibration");
    let v = list(&pod["volumes"], "volumes").iter().find(|v| v["name"] == m["name"]).expect("its volume");
    let host = s(&v["hostPath"]["path"], "hostPath");
    // The DaemonSet reads the same host directory.
    let ds = YamlLoader::load_from_str(&deploy("daemonset.yaml")).unwrap();
    let ds_volumes = list(&ds[1]["spec"]["template"]["spec"]["volumes"], "volumes");
    assert!(ds_volumes.iter().any(|v| v["hostPath"]["path"].as_str() == Some(host)), "the DaemonSet mounts {host}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dentrylab")).args(["reclaim", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for f in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(f), "{f} is not a reclaim flag");
    }
    // The sizes it asks for parse.
    let sizes = flag("--sizes");
    assert!(sizes == "quick" || sizes.starts_with("auto") || sizes.chars().next().unwrap().is_ascii_digit(), "{sizes}");
    // An auto sweep inside the pod stops at a cap that fits the pod's
    // memory limit (the sweep also plans with what the limit leaves; the
    // cap must not be what runs into it).
    if let Some(cap) = sizes.strip_prefix("auto:") {
        let cap: f64 = cap.trim_end_matches('M').parse::<f64>().unwrap() * 1e6;
        let limit = s(&c["resources"]["limits"]["memory"], "memory limit");
        let gib: f64 = limit.trim_end_matches("Gi").parse().unwrap();
        // 227 bytes per hard link measured on 6.18, twice for the process and slack.
        assert!(cap * 227.0 * 2.0 <= gib * (1u64 << 30) as f64, "auto:{cap} does not fit in {limit}");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dentrylab"))
        .args(["reclaim", "--sizes", sizes, "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "--sizes {sizes} parses: {}", String::from_utf8_lossy(&out.stderr));
}
