//! The Helm chart `deploy/helm/dentrylab` (issue 39): `deploy/` is its
//! rendered output, `helm lint` is clean, its options render the fleet
//! objects, and every alert has its runbook in the docs.

mod common;
mod metrics;
mod yaml;

use std::collections::BTreeSet;

use yaml::{deploy, list, of_kind, openapi, s, yaml_to_json};
use yaml_rust2::{Yaml, YamlLoader};

/// helm, as `.ci/run` installs it (`deploy/tools/install.sh helm`).
fn helm() -> Option<std::path::PathBuf> {
    dentrylab::sys::which("helm")
}

fn helm_run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(helm().unwrap()).args(args).current_dir(metrics::repo()).output().unwrap()
}

const CHART: &str = "deploy/helm/dentrylab";

/// Issue 39: `kubectl apply -f deploy/` and the chart deploy the same
/// objects: deploy/ is `deploy/render.sh`'s output, byte for byte.
#[test]
fn deploy_is_the_chart_rendered() {
    require!(helm().is_some(), "needs helm (deploy/tools/install.sh helm; .ci/run puts it on the PATH)");
    let out = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("bash")
        .arg(metrics::repo().join("deploy/render.sh"))
        .arg(out.path())
        .output()
        .unwrap();
    assert!(st.status.success(), "render.sh: {}", String::from_utf8_lossy(&st.stderr));
    let files = [
        "daemonset.yaml",
        "calibration/calibration-job.yaml",
        "prometheus/alerts.yaml",
        "grafana/dashboard.json",
        "node-problem-detector/dcache-monitor.json",
    ];
    for f in files {
        let want = std::fs::read_to_string(out.path().join(f)).unwrap();
        let got = deploy(f);
        for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
            assert_eq!(w, g, "deploy/{f} line {} is not what the chart renders: run deploy/render.sh", i + 1);
        }
        assert_eq!(want, got, "deploy/{f} is not what the chart renders: run deploy/render.sh");
    }
}

/// `helm lint` is clean, with the defaults and with every option on.
#[test]
fn helm_lint_is_clean() {
    require!(helm().is_some(), "needs helm (deploy/tools/install.sh helm; .ci/run puts it on the PATH)");
    for set in [None, Some(ALL_ON)] {
        let mut args = vec!["lint", "--strict", CHART];
        if let Some(s) = set {
            args.extend(["--set", s]);
        }
        let o = helm_run(&args);
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success() && text.contains("0 chart(s) failed"), "helm {args:?}:\n{text}");
    }
}

const ALL_ON: &str = "namespace.create=true,serviceMonitor.enabled=true,prometheusRule.enabled=true,\
dashboard.enabled=true,networkPolicy.enabled=true,nodeProblemDetector.enabled=true,calibration.enabled=true,\
kernelLog.enabled=true,census.enabled=true";

fn rendered(set: &str) -> Vec<Yaml> {
    let o = helm_run(&["template", "dentrylab", CHART, "--namespace", "dentrylab", "--set", set]);
    assert!(o.status.success(), "helm template: {}", String::from_utf8_lossy(&o.stderr));
    YamlLoader::load_from_str(&String::from_utf8_lossy(&o.stdout))
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

/// What every option renders: the prometheus-operator objects with the
/// node's name as instance and node (and no pod label, which a rollout
/// changes), the rules and dashboard as shipped, the NetworkPolicy on the
/// metrics port, the node-problem-detector config, the kernel log read as
/// root with CAP_SYSLOG alone; the defaults' nodeSelector and priority.
#[test]
fn chart_options_render_the_fleet_objects() {
    require!(helm().is_some(), "needs helm (deploy/tools/install.sh helm; .ci/run puts it on the PATH)");
    let docs = rendered(ALL_ON);
    let sm = of_kind(&docs, "ServiceMonitor");
    let ep = &list(&sm["spec"]["endpoints"], "endpoints")[0];
    assert_eq!(s(&ep["port"], "port"), "metrics");
    let relabel = list(&ep["relabelings"], "relabelings");
    for target in ["instance", "node"] {
        assert!(
            relabel.iter().any(|r| r["targetLabel"].as_str() == Some(target)
                && r["sourceLabels"][0].as_str() == Some("__meta_kubernetes_pod_node_name")),
            "{target} from the node's name: {relabel:?}"
        );
    }
    assert!(
        relabel.iter().any(|r| r["action"].as_str() == Some("labeldrop") && s(&r["regex"], "regex").contains("pod")),
        "the pod label (new on every rollout) is dropped"
    );
    let rule = of_kind(&docs, "PrometheusRule");
    let shipped = YamlLoader::load_from_str(&deploy("prometheus/alerts.yaml")).unwrap();
    assert_eq!(rule["spec"]["groups"], shipped[0]["groups"], "the PrometheusRule holds deploy/prometheus/alerts.yaml");
    let cms: Vec<&Yaml> = docs.iter().filter(|d| d["kind"].as_str() == Some("ConfigMap")).collect();
    let dash =
        cms.iter().find(|c| c["metadata"]["labels"]["grafana_dashboard"].as_str() == Some("1")).expect("dashboard");
    let json: serde_json::Value = serde_json::from_str(s(&dash["data"]["dentrylab.json"], "dashboard")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&deploy("grafana/dashboard.json")).unwrap();
    assert_eq!(json, file);
    let npd = cms.iter().find(|c| !c["data"]["dcache-monitor.json"].is_badvalue()).expect("npd config");
    let npd: serde_json::Value = serde_json::from_str(s(&npd["data"]["dcache-monitor.json"], "npd")).unwrap();
    assert_eq!(npd["conditions"][0]["type"], "DentryCacheLockup");
    let np = of_kind(&docs, "NetworkPolicy");
    assert_eq!(s(&np["spec"]["ingress"][0]["ports"][0]["port"], "port"), "metrics");
    of_kind(&docs, "Job");

    let ds = of_kind(&docs, "DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    let c = &list(&pod["containers"], "containers")[0];
    let args: Vec<&str> = list(&c["args"], "args").iter().map(|a| s(a, "arg")).collect();
    assert!(args.windows(2).any(|w| w == ["--kernel-log", "/dev/kmsg"]), "{args:?}");
    assert!(args.contains(&"--census-interval"), "{args:?}");
    assert_eq!(pod["securityContext"]["runAsUser"].as_i64(), Some(0), "CAP_SYSLOG needs root in a container");
    assert_eq!(list(&c["securityContext"]["capabilities"]["add"], "add")[0].as_str(), Some("SYSLOG"));
    assert_eq!(list(&c["securityContext"]["capabilities"]["drop"], "drop")[0].as_str(), Some("ALL"));
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_dentrylab")).args(["exporter", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for f in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(f), "{f} is not an exporter flag");
    }
    // The API server would take every object of the core groups.
    let api = openapi();
    for d in &docs {
        let obj = yaml_to_json(d);
        if let Ok(v) = api.violations(&obj) {
            assert!(v.is_empty(), "{} {}: {v:?}", obj["kind"], obj["metadata"]["name"]);
        }
    }

    // The defaults: Linux nodes, node-critical priority, no operator objects.
    let docs = rendered("namespace.create=false");
    let pod = &of_kind(&docs, "DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(s(&pod["nodeSelector"]["kubernetes.io/os"], "nodeSelector"), "linux");
    assert_eq!(s(&pod["priorityClassName"], "priorityClassName"), "system-node-critical");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["Service", "DaemonSet"], "{kinds:?}");
}

/// Every alert has a runbook_url, and it points at a section of
/// docs/deploy.md that exists.
#[test]
fn every_alert_has_a_runbook_in_the_docs() {
    let doc = std::fs::read_to_string(metrics::repo().join("docs/deploy.md")).unwrap();
    let anchors: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("### ").or_else(|| l.strip_prefix("## ")))
        .map(|h| {
            h.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect();
    let rules = YamlLoader::load_from_str(&deploy("prometheus/alerts.yaml")).unwrap();
    let all = list(&rules[0]["groups"][0]["rules"], "rules");
    assert!(all.len() >= 12);
    for r in all {
        let name = s(&r["alert"], "alert");
        let url = s(&r["annotations"]["runbook_url"], "runbook_url");
        let (page, anchor) = url.split_once('#').unwrap_or_else(|| panic!("{name}: {url} has no anchor"));
        assert!(page.ends_with("/docs/deploy.md"), "{name}: {url}");
        assert!(anchors.contains(anchor), "{name}: #{anchor} is not a heading of docs/deploy.md");
        assert!(!s(&r["expr"], "expr").contains("job=\""), "{name}: no job name in the rule");
    }
}

/// `webConfig.secretName`: the Secret mounted read-only, the exporter
/// pointed at its file, probes that only open the port (HTTP would get 401
/// or speak plain HTTP to TLS), the ServiceMonitor's scheme as given.
#[test]
fn web_config_mounts_its_secret() {
    require!(helm().is_some(), "needs helm (deploy/tools/install.sh helm; .ci/run puts it on the PATH)");
    let docs = rendered("webConfig.secretName=dentrylab-web,serviceMonitor.enabled=true,serviceMonitor.scheme=https");
    let pod = &of_kind(&docs, "DaemonSet")["spec"]["template"]["spec"];
    let c = &list(&pod["containers"], "containers")[0];
    let args: Vec<&str> = list(&c["args"], "args").iter().map(|a| s(a, "arg")).collect();
    assert!(args.windows(2).any(|w| w == ["--web-config-file", "/etc/dentrylab/web/web-config.yml"]), "{args:?}");
    let vol = list(&pod["volumes"], "volumes").iter().find(|v| v["name"].as_str() == Some("web-config")).unwrap();
    assert_eq!(s(&vol["secret"]["secretName"], "secretName"), "dentrylab-web");
    let mount = list(&c["volumeMounts"], "volumeMounts").iter().find(|m| m["name"].as_str() == Some("web-config"));
    assert_eq!(mount.unwrap()["readOnly"].as_bool(), Some(true));
    for probe in ["readinessProbe", "livenessProbe"] {
        assert_eq!(s(&c[probe]["tcpSocket"]["port"], probe), "metrics");
    }
    let ep = &list(&of_kind(&docs, "ServiceMonitor")["spec"]["endpoints"], "endpoints")[0];
    assert_eq!(s(&ep["scheme"], "scheme"), "https");
    let api = openapi();
    let ds = yaml_to_json(of_kind(&docs, "DaemonSet"));
    let v = api.violations(&ds).unwrap();
    assert!(v.is_empty(), "the DaemonSet with webConfig: {v:?}");
}
