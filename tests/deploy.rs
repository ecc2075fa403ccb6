//! `deploy/`: the alert rules pass promtool's check and unit
//! tests, `kubectl apply -f deploy/` reads nothing but Kubernetes objects,
//! the manifests parse as Kubernetes objects that agree with the
//! exporter's flags and validate against the pinned API server's OpenAPI
//! (offline, from a fixture), and the dashboard and alerts use only metrics
//! the exporter exports.

mod common;
mod metrics;
mod yaml;

use std::collections::BTreeSet;

use yaml::{OPENAPI_VERSION, deploy, list, of_kind, openapi, s, yaml_to_json};
use yaml_rust2::YamlLoader;

#[test]
fn alert_rules_pass_promtool() {
    let dir = metrics::repo().join("deploy/prometheus");
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
    // As deploy/render.sh renders this file.
    assert_eq!(kinds, ["Namespace", "DaemonSet", "Service"]);

    let ds = of_kind(&docs, "DaemonSet");
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
    let svc = of_kind(&docs, "Service");
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
    let golden = ["6.18-builtin", "6.18-extras", "6.18-victims", "6.18-cgroup-v2"]
        .iter()
        .map(|g| std::fs::read_to_string(metrics::golden_path(g)).unwrap())
        .collect::<String>();
    let exported: BTreeSet<String> = golden
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    let dashboard: serde_json::Value = serde_json::from_str(&deploy("grafana/dashboard.json")).unwrap();
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
    let rules = YamlLoader::load_from_str(&deploy("prometheus/alerts.yaml")).unwrap();
    for r in list(&rules[0]["groups"][0]["rules"], "rules") {
        exprs += s(&r["expr"], "expr");
        exprs.push('\n');
    }
    let used = metric_names(&exprs);
    assert!(used.contains("dentrylab_lockup_ratio") && used.contains("dentrylab_dentries"));
    for m in [
        "dentrylab_seconds_to_lockup",
        "dentrylab_dentries_growth_per_second",
        "dentrylab_kernel_lockups_total",
        "dentrylab_incident_ratio",
        "dentrylab_dentries_to_incident",
        "dentrylab_calibration_victims",
    ] {
        assert!(used.contains(m), "{m} is used by the dashboard or the alerts");
    }
    let unknown: Vec<_> = used.difference(&exported).collect();
    assert!(unknown.is_empty(), "not exported: {unknown:?}");
}

/// The label that chooses the node the calibration Job runs on.
const CALIBRATE_LABEL: &str = "dentrylab.io/calibrate";

/// The calibration Job: on the one node a label chooses, privileged, runs
/// once, writes the calibration into the host directory the DaemonSet reads,
/// with flags `reclaim` accepts, and says its risk.
#[test]
fn calibration_job_writes_where_the_daemonset_reads() {
    let text = deploy("calibration/calibration-job.yaml");
    assert!(text.contains("RISK:") && text.contains("dentries"), "the risk is documented");
    let docs = YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(docs.len(), 1);
    let job = &docs[0];
    assert_eq!(s(&job["apiVersion"], "apiVersion"), "batch/v1");
    assert_eq!(s(&job["kind"], "kind"), "Job");
    assert_eq!(s(&job["metadata"]["namespace"], "namespace"), "dentrylab");
    assert_eq!(job["spec"]["backoffLimit"].as_i64(), Some(0), "never retried on its own");
    let pod = &job["spec"]["template"]["spec"];
    // The node is chosen by a label the user sets (the comment says how),
    // not by a nodeName placeholder the API server rejects.
    assert!(pod["nodeName"].is_badvalue(), "no nodeName: {:?}", pod["nodeName"]);
    assert_eq!(s(&pod["nodeSelector"][CALIBRATE_LABEL], "nodeSelector"), "true");
    assert!(
        text.contains(&format!("kubectl label node NODE {CALIBRATE_LABEL}=true")),
        "the label command is documented"
    );
    assert!(text.contains(&format!("kubectl label node NODE {CALIBRATE_LABEL}-")), "and its removal");
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
    let ds_volumes = list(&of_kind(&ds, "DaemonSet")["spec"]["template"]["spec"]["volumes"], "volumes");
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

/// The folders a user applies: `kubectl apply -f deploy/` (the exporter)
/// and `kubectl apply -f deploy/calibration/` (one node at a time).
const APPLIED: [&str; 2] = ["deploy", "deploy/calibration"];

/// The documents `kubectl apply -f DIR` reads, with the file each came
/// from (relative to `deploy/`): as kubectl walks a directory without
/// `-R`, the files directly in it named `*.json`, `*.yaml` or `*.yml`
/// (others, like the Dockerfile, and subfolders are skipped); a JSON file
/// is one object, a YAML file one per non-empty document.
fn applied_documents(dir: &std::path::Path) -> Vec<(String, serde_json::Value)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| p.extension().is_some_and(|e| e == "json" || e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let deploy_dir = metrics::repo().join("deploy");
    let mut out = Vec::new();
    for f in files {
        let name = f.strip_prefix(&deploy_dir).unwrap_or(&f).display().to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        if f.extension().is_some_and(|e| e == "json") {
            let obj = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            out.push((name, obj));
            continue;
        }
        for d in YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}")) {
            if !d.is_null() {
                out.push((name.clone(), yaml_to_json(&d)));
            }
        }
    }
    out
}

/// Why `kubectl apply` would refuse a document: no apiVersion, kind or
/// metadata.name ("apiVersion not set", "kind not set"), or a pod pinned by
/// nodeName (a placeholder is rejected; a real name belongs to one cluster).
fn not_applicable(obj: &serde_json::Value) -> Option<String> {
    for (field, v) in
        [("apiVersion", &obj["apiVersion"]), ("kind", &obj["kind"]), ("metadata.name", &obj["metadata"]["name"])]
    {
        if v.as_str().is_none_or(str::is_empty) {
            return Some(format!("{field} not set: not a Kubernetes object"));
        }
    }
    let pod = &obj["spec"]["template"]["spec"];
    pod.get("nodeName").map(|n| format!("spec.template.spec.nodeName {n}: pinned to one node by name"))
}

/// Every Kubernetes object a user applies from deploy/, with its file.
fn manifests() -> Vec<(String, serde_json::Value)> {
    APPLIED.iter().flat_map(|d| applied_documents(&metrics::repo().join(d))).collect()
}

/// `kubectl apply -f deploy/` as the README tells a user: every file kubectl
/// reads there (and in deploy/calibration/) holds Kubernetes objects only;
/// the rule files, the dashboard and the node-problem-detector config live
/// in folders it skips. Shown failing on the layout that broke it: the
/// alert rules and the dashboard at the top of the folder.
#[test]
fn kubectl_apply_of_deploy_reads_only_kubernetes_objects() {
    for dir in APPLIED {
        let docs = applied_documents(&metrics::repo().join(dir));
        assert!(!docs.is_empty(), "{dir}: nothing to apply");
        let bad: Vec<String> =
            docs.iter().filter_map(|(f, o)| not_applicable(o).map(|why| format!("{f}: {why}"))).collect();
        assert!(bad.is_empty(), "kubectl apply -f {dir}/ would fail on:\n{}", bad.join("\n"));
    }
    // The same check on the old layout: what kubectl choked on.
    let old = tempfile::tempdir().unwrap();
    let repo = metrics::repo();
    for f in ["daemonset.yaml", "Dockerfile", "prometheus/alerts.yaml", "grafana/dashboard.json"] {
        let to = old.path().join(std::path::Path::new(f).file_name().unwrap());
        std::fs::copy(repo.join("deploy").join(f), to).unwrap();
    }
    let mut job = deploy("calibration/calibration-job.yaml");
    job = job.replace("      nodeSelector:\n", "      nodeName: REPLACE-WITH-NODE-NAME\n      nodeSelector:\n");
    std::fs::write(old.path().join("calibration-job.yaml"), job).unwrap();
    let docs = applied_documents(old.path());
    let bad: Vec<String> =
        docs.iter().filter_map(|(f, o)| not_applicable(o).map(|why| format!("{f}: {why}"))).collect();
    for want in [
        "alerts.yaml: apiVersion not set",
        "dashboard.json: apiVersion not set",
        "calibration-job.yaml: spec.template.spec.nodeName",
    ] {
        assert!(bad.iter().any(|b| b.contains(want)), "{want} in {bad:?}");
    }
    assert!(!docs.iter().any(|(f, _)| f.contains("Dockerfile")), "kubectl skips files of other extensions");
    assert_eq!(bad.len(), 3, "{bad:?}");
}

/// Every manifest in deploy/ is valid against the pinned API server's
/// OpenAPI, strictly (no unknown field): what `kubectl apply` would have the
/// server check, offline.
#[test]
fn manifests_validate_against_the_api_servers_openapi() {
    let api = openapi();
    let objs = manifests();
    let mut seen = Vec::new();
    let mut bad = Vec::new();
    for (file, obj) in &objs {
        let what = format!("{file}: {} {}", obj["kind"].as_str().unwrap_or("?"), obj["metadata"]["name"]);
        match api.violations(obj) {
            Ok(v) => bad.extend(v.into_iter().map(|e| format!("{what}: {e}"))),
            Err(e) => bad.push(format!("{what}: {e}")),
        }
        seen.push(format!("{file}:{}", obj["kind"].as_str().unwrap_or("?")));
    }
    assert!(bad.is_empty(), "rejected by {OPENAPI_VERSION}'s OpenAPI:\n{}", bad.join("\n"));
    for want in [
        "daemonset.yaml:Namespace",
        "daemonset.yaml:DaemonSet",
        "daemonset.yaml:Service",
        "calibration/calibration-job.yaml:Job",
    ] {
        assert!(seen.iter().any(|s| s == want), "{want} validated (saw {seen:?})");
    }
}

/// The validation fails on a wrong field, a wrong type and a missing
/// required field: synthetic mistakes in the real manifests.
#[test]
fn openapi_validation_rejects_a_wrong_field() {
    let api = openapi();
    let objs = manifests();
    let ds = objs.iter().map(|(_, o)| o).find(|o| o["kind"] == "DaemonSet").unwrap().clone();
    let job = objs.iter().map(|(_, o)| o).find(|o| o["kind"] == "Job").unwrap().clone();
    assert_eq!(api.violations(&ds).unwrap(), Vec::<String>::new());

    // A misspelt field (the server's strict validation: "unknown field").
    let mut typo = ds.clone();
    typo["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = true.into();
    let v = api.violations(&typo).unwrap();
    assert!(
        v.iter().any(|e| e.starts_with("/spec/template/spec/containers/0/securityContext:")
            && e.contains("readOnlyRootFileSystem")),
        "{v:?}"
    );
    // A field at the wrong level.
    let mut misplaced = ds.clone();
    misplaced["spec"]["tolerations"] = serde_json::json!([{ "operator": "Exists" }]);
    let v = api.violations(&misplaced).unwrap();
    assert!(v.iter().any(|e| e.starts_with("/spec:") && e.contains("tolerations")), "{v:?}");
    // A wrong type.
    let mut wrong_type = job.clone();
    wrong_type["spec"]["backoffLimit"] = "none".into();
    let v = api.violations(&wrong_type).unwrap();
    assert!(v.iter().any(|e| e.starts_with("/spec/backoffLimit:")), "{v:?}");
    // A required field missing (a container's name).
    let mut unnamed = job.clone();
    unnamed["spec"]["template"]["spec"]["containers"][0].as_object_mut().unwrap().remove("name");
    let v = api.violations(&unnamed).unwrap();
    assert!(v.iter().any(|e| e.starts_with("/spec/template/spec/containers/0:") && e.contains("name")), "{v:?}");
    // A kind the server does not serve.
    let mut unknown = ds;
    unknown["kind"] = "DaemonSets".into();
    assert!(api.violations(&unknown).is_err());
}

/// What `deploy/local/image.sh` wrote: its index, manifest and config, and
/// `tar -tvz` of its one layer.
struct Image {
    index: serde_json::Value,
    config: serde_json::Value,
    layer: String,
}

/// Runs `deploy/local/image.sh OUT NAME BIN ARGS...` (IMAGE_FILES from
/// `files`, when given) and unpacks what it wrote; Err(stderr) when it fails.
fn image_sh(dir: &std::path::Path, name: &str, args: &[&str], files: Option<&str>) -> Result<Image, String> {
    let out = dir.join(format!("{}.tar", name.replace([':', '/'], "_")));
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(metrics::repo().join("deploy/local/image.sh"))
        .args([out.to_str().unwrap(), name, env!("CARGO_BIN_EXE_dentrylab")])
        .args(args);
    if let Some(f) = files {
        cmd.env("IMAGE_FILES", f);
    }
    let st = cmd.output().unwrap();
    if !st.status.success() {
        return Err(String::from_utf8_lossy(&st.stderr).into_owned());
    }
    let unpack = out.with_extension("oci");
    std::fs::create_dir(&unpack).unwrap();
    let st = std::process::Command::new("tar").arg("-xf").arg(&out).arg("-C").arg(&unpack).status().unwrap();
    assert!(st.success());
    let json = |p: std::path::PathBuf| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let blob =
        |d: &serde_json::Value| unpack.join("blobs/sha256").join(d.as_str().unwrap().trim_start_matches("sha256:"));
    let index = json(unpack.join("index.json"));
    let manifest = json(blob(&index["manifests"][0]["digest"]));
    let list =
        std::process::Command::new("tar").arg("-tvzf").arg(blob(&manifest["layers"][0]["digest"])).output().unwrap();
    Ok(Image {
        config: json(blob(&manifest["config"]["digest"])),
        index,
        layer: String::from_utf8_lossy(&list.stdout).into_owned(),
    })
}

/// The images have an empty /tmp: the calibration Job's `reclaim` mounts its
/// scratch tmpfs there, and on an image without one it failed on a real node
/// with "cannot mount the sandbox's scratch tmpfs on /tmp: ENOENT".
#[test]
fn images_have_a_tmp_for_the_calibration() {
    let docker = deploy("Dockerfile");
    let last_stage = docker.rsplit("FROM scratch").next().unwrap();
    assert!(
        last_stage.lines().any(|l| l.starts_with("COPY") && l.trim_end().ends_with(" /tmp")),
        "the Dockerfile's final stage copies in a /tmp"
    );
    // deploy/local/image.sh, run for real on a small binary.
    let dir = tempfile::tempdir().unwrap();
    let img = image_sh(dir.path(), "example.org/t:1", &["/dentrylab", "65534:65534", "/dentrylab", "status"], None)
        .unwrap_or_else(|e| panic!("image.sh: {e}"));
    assert_eq!(img.index["manifests"][0]["annotations"]["io.containerd.image.name"], "example.org/t:1");
    let list = &img.layer;
    assert!(list.lines().any(|l| l.starts_with("drwxrwxrwt") && l.ends_with("./tmp/")), "{list}");
    assert!(list.lines().any(|l| l.starts_with("-rwxr-xr-x") && l.ends_with("./dentrylab")), "{list}");
    assert_eq!(img.config["config"]["User"], "65534:65534");
    assert_eq!(img.config["config"]["Entrypoint"], serde_json::json!(["/dentrylab"]));
    assert_eq!(img.config["config"]["Cmd"], serde_json::json!(["status"]));
}

/// IMAGE_FILES adds files at their own paths, symlinks followed: the shared
/// libraries of a dynamically linked dentrylab in the image
/// (deploy/local/up.sh's DENTRYLAB_BINARY). A missing one fails with one
/// line naming it, never an image without it.
#[test]
fn image_sh_adds_image_files_at_their_paths() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib/libfake.so.1");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    std::fs::write(&lib, "not a library").unwrap();
    let link = dir.path().join("libfake-link.so");
    std::os::unix::fs::symlink(&lib, &link).unwrap();
    let files = format!("{} {}", lib.display(), link.display());
    let args = ["/bin/t", "65534:65534", "/bin/t"];
    let img = image_sh(dir.path(), "example.org/t:2", &args, Some(&files)).unwrap_or_else(|e| panic!("image.sh: {e}"));
    for f in [&lib, &link] {
        let inside = format!(".{}", f.display());
        assert!(
            img.layer.lines().any(|l| l.starts_with('-') && l.ends_with(&inside)),
            "{inside} as a file in {}",
            img.layer
        );
    }
    assert!(img.layer.lines().any(|l| l.ends_with("./bin/t")), "{}", img.layer);
    let err =
        image_sh(dir.path(), "example.org/t:3", &args, Some("/nonexistent/libgone.so")).err().expect("image.sh failed");
    assert!(err.contains("IMAGE_FILES: no such file: /nonexistent/libgone.so"), "{err}");
}
