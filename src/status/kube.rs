//! Kubernetes names carried by a cgroup path: the pod UID, its QoS class
//! and the container ID, as the kubelet lays out its cgroups with either
//! cgroup driver, on cgroup v1 and v2 alike (the layout is the same on both):
//!
//! - cgroupfs: `/kubepods/burstable/pod<uid>/<container-id>`, guaranteed
//!   pods directly under `/kubepods/pod<uid>/`;
//! - systemd: `/kubepods.slice/kubepods-besteffort.slice/
//!   kubepods-besteffort-pod<uid with _ for ->.slice/cri-containerd-<id>.scope`
//!   (or `crio-<id>.scope`, `docker-<id>.scope`), guaranteed pods as
//!   `kubepods-pod<uid>.slice`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KubeNames {
    /// `guaranteed`, `burstable` or `besteffort`; `None` for `kubepods` itself.
    pub qos: Option<String>,
    pub pod_uid: Option<String>,
    pub container_id: Option<String>,
}

const RUNTIME_PREFIXES: [&str; 4] = ["cri-containerd-", "crio-", "docker-", "containerd-"];

/// The names in `path` (a cgroup path relative to the hierarchy's root), or
/// `None` when it is not under `kubepods`.
pub(crate) fn names(path: &str) -> Option<KubeNames> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let start = parts.iter().position(|p| *p == "kubepods" || *p == "kubepods.slice")?;
    let mut k = KubeNames::default();
    let mut pod_seen = false;
    for p in &parts[start + 1..] {
        let name = p.strip_suffix(".slice").or_else(|| p.strip_suffix(".scope")).unwrap_or(p);
        // systemd: kubepods-burstable, kubepods-burstable-pod<uid>, kubepods-pod<uid>.
        let name = name.strip_prefix("kubepods-").unwrap_or(name);
        let (qos, rest) = match name.split_once('-') {
            Some((q @ ("burstable" | "besteffort"), rest)) => (Some(q), Some(rest)),
            _ if name == "burstable" || name == "besteffort" => (Some(name), None),
            _ => (None, Some(name)),
        };
        if let Some(q) = qos {
            k.qos = Some(q.to_string());
        }
        let Some(rest) = rest else { continue };
        if !pod_seen && let Some(uid) = rest.strip_prefix("pod") {
            k.pod_uid = Some(uid.replace('_', "-"));
            pod_seen = true;
            continue;
        }
        if pod_seen && k.container_id.is_none() {
            let id = RUNTIME_PREFIXES.iter().find_map(|pre| rest.strip_prefix(pre)).unwrap_or(rest);
            if id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                k.container_id = Some(id.to_string());
            }
        }
    }
    if k.pod_uid.is_some() && k.qos.is_none() {
        k.qos = Some("guaranteed".into());
    }
    Some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f3b5d2a-8c1e-4b7f-9a6d-2e4c8b1a7f90";
    const CID: &str = "4a1d6e8f2b3c5d7e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a6";

    fn k(qos: &str, uid: Option<&str>, cid: Option<&str>) -> Option<KubeNames> {
        Some(KubeNames {
            qos: (!qos.is_empty()).then(|| qos.to_string()),
            pod_uid: uid.map(str::to_string),
            container_id: cid.map(str::to_string),
        })
    }

    #[test]
    fn cgroupfs_driver() {
        assert_eq!(names(&format!("/kubepods/burstable/pod{UID}/{CID}")), k("burstable", Some(UID), Some(CID)));
        assert_eq!(names(&format!("/kubepods/pod{UID}/{CID}")), k("guaranteed", Some(UID), Some(CID)));
        assert_eq!(names(&format!("/kubepods/besteffort/pod{UID}")), k("besteffort", Some(UID), None));
        assert_eq!(names("/kubepods/besteffort"), k("besteffort", None, None));
        assert_eq!(names("/kubepods"), k("", None, None));
    }

    #[test]
    fn systemd_driver() {
        let u = UID.replace('-', "_");
        assert_eq!(
            names(&format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice/cri-containerd-{CID}.scope"
            )),
            k("burstable", Some(UID), Some(CID))
        );
        assert_eq!(
            names(&format!("/kubepods.slice/kubepods-pod{u}.slice/crio-{CID}.scope")),
            k("guaranteed", Some(UID), Some(CID))
        );
        assert_eq!(
            names(&format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice")),
            k("besteffort", Some(UID), None)
        );
        // The pause container and conmon scopes are not container IDs.
        assert_eq!(
            names(&format!("/kubepods.slice/kubepods-pod{u}.slice/crio-conmon-{CID}.scope")),
            k("guaranteed", Some(UID), None)
        );
    }

    #[test]
    fn not_kubernetes() {
        assert_eq!(names("/system.slice/sshd.service"), None);
        assert_eq!(names("/"), None);
    }
}
