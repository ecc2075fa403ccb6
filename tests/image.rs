//! An image for every node (issue 39): the static amd64 and arm64 binaries
//! and the multi-arch OCI image that `deploy/image/build.sh` writes
//! (`.ci/run` runs it before the tests; `DENTRYLAB_IMAGE_DIR` names another
//! output directory than `target/image`). The arm64 binary runs here under
//! qemu-user (`qemu-aarch64-static`, Debian's qemu-user-static) on the
//! captured proc trees, and must say what the amd64 binary says; the image's
//! layout is read by hand (every blob's digest and size) and by skopeo.

mod common;
mod metrics;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use metrics::{calibration_dir, fixture, repo};
use serde_json::Value;

fn image_dir() -> PathBuf {
    std::env::var_os("DENTRYLAB_IMAGE_DIR").map_or_else(|| repo().join("target/image"), PathBuf::from)
}

/// The built binary for `arch`, if deploy/image/build.sh has run.
fn built(arch: &str) -> Option<PathBuf> {
    let p = image_dir().join(format!("dentrylab-linux-{arch}"));
    p.is_file().then_some(p)
}

macro_rules! require_built {
    () => {
        $crate::require!(
            built("amd64").is_some() && built("arm64").is_some(),
            "needs the static binaries in {} (deploy/image/build.sh; .ci/run runs it)",
            image_dir().display()
        );
    };
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// `dentrylab ARGS` for `arch`: natively for amd64, under qemu-user for arm64.
fn dentrylab(arch: &str, args: &[&str]) -> Output {
    let bin = built(arch).unwrap();
    let mut cmd = if arch == "arm64" {
        let mut c = Command::new("qemu-aarch64-static");
        c.arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    run(cmd)
}

/// The ELF machine and whether the file asks for a program interpreter or
/// a shared library (a static binary does neither).
fn elf(path: &Path) -> (object::Architecture, bool) {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let dynamic = file.section_by_name(".interp").is_some()
        || file.section_by_name(".dynamic").is_some_and(|s| {
            let needed = s.data().unwrap_or_default();
            // Elf64_Dyn entries: tag 1 is DT_NEEDED.
            needed.chunks_exact(16).any(|e| u64::from_le_bytes(e[..8].try_into().unwrap()) == 1)
        });
    (file.architecture(), dynamic)
}

#[test]
fn both_binaries_are_static_for_their_machine() {
    require_built!();
    for (arch, machine) in [("amd64", object::Architecture::X86_64), ("arm64", object::Architecture::Aarch64)] {
        let (got, dynamic) = elf(&built(arch).unwrap());
        assert_eq!(got, machine, "dentrylab-linux-{arch}");
        assert!(!dynamic, "dentrylab-linux-{arch} needs an interpreter or a shared library");
    }
}

#[test]
fn arm64_version_under_qemu_is_the_amd64_one() {
    require_built!();
    require!(common::has("qemu-aarch64-static"), "needs qemu-aarch64-static (qemu-user-static; see .ci/run)");
    let arm = String::from_utf8(dentrylab("arm64", &["--version"]).stdout).unwrap();
    let amd = String::from_utf8(dentrylab("amd64", &["--version"]).stdout).unwrap();
    println!("arm64 under qemu: {arm}");
    assert_eq!(arm, amd);
    // The same crate version as the binary the tests built (the compiler
    // differs: the image's is the pinned Debian one).
    let mut cmd = common::bin();
    cmd.arg("--version");
    let ours = String::from_utf8(run(cmd).stdout).unwrap();
    let word = |s: &str| s.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    assert_eq!(word(&arm), word(&ours), "arm64 {arm:?}, tests' {ours:?}");
}

#[test]
fn arm64_status_under_qemu_is_the_amd64_one() {
    require_built!();
    require!(common::has("qemu-aarch64-static"), "needs qemu-aarch64-static (qemu-user-static; see .ci/run)");
    let state = calibration_dir();
    for kernel in ["6.18", "5.10"] {
        let root = fixture(kernel);
        for extra in [&[][..], &["--json", "-"][..]] {
            let mut args =
                vec!["status", "--proc-root", root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()];
            args.extend_from_slice(extra);
            let arm = dentrylab("arm64", &args);
            let amd = dentrylab("amd64", &args);
            let text = String::from_utf8(arm.stdout).unwrap();
            assert!(text.contains("dentr"), "status on {kernel} said: {text}");
            let amd = String::from_utf8(amd.stdout).unwrap();
            if extra.is_empty() {
                assert_eq!(text, amd, "status on {kernel}");
            } else {
                // The JSON also says when the run started and how long the
                // collection took (slower under qemu): all else is equal.
                let strip = |t: &str| {
                    let mut v: Value = serde_json::from_str(t).unwrap();
                    let o = v.as_object_mut().unwrap();
                    assert!(o.remove("started_at").is_some() && o.remove("collection_seconds").is_some(), "{t}");
                    v
                };
                assert_eq!(strip(&text), strip(&amd), "status --json on {kernel}");
            }
        }
    }
    println!(
        "{}",
        String::from_utf8_lossy(
            &dentrylab("arm64", &["status", "--proc-root", fixture("6.18").to_str().unwrap()]).stdout
        )
    );
}

/// The layout: its index names one image index by tag, which lists one
/// manifest per platform; every blob is named by its sha256 and has the
/// size its descriptor says; each platform's layer holds its binary at
/// /dentrylab (the same bytes) and an empty /tmp.
#[test]
fn oci_image_has_one_manifest_per_platform() {
    require_built!();
    let oci = image_dir().join("oci");
    let read = |p: &Path| std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let blob = |d: &Value| -> Vec<u8> {
        let digest = d["digest"].as_str().unwrap();
        let data = read(&oci.join("blobs/sha256").join(digest.trim_start_matches("sha256:")));
        assert_eq!(format!("sha256:{}", sha256(&data)), digest, "blob's content and name");
        assert_eq!(data.len() as u64, d["size"].as_u64().unwrap(), "{digest}: size");
        data
    };
    let json = |b: &[u8]| -> Value { serde_json::from_slice(b).unwrap() };
    assert_eq!(json(&read(&oci.join("oci-layout")))["imageLayoutVersion"], "1.0.0");
    let top = json(&read(&oci.join("index.json")));
    let entries = top["manifests"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{top}");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(entries[0]["annotations"]["org.opencontainers.image.ref.name"], version);
    assert_eq!(entries[0]["mediaType"], "application/vnd.oci.image.index.v1+json");
    let index = json(&blob(&entries[0]));
    let platforms: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["platform"]["architecture"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["amd64", "arm64"]);
    let unpack = tempfile::tempdir().unwrap();
    for m in index["manifests"].as_array().unwrap() {
        let arch = m["platform"]["architecture"].as_str().unwrap();
        assert_eq!(m["platform"]["os"], "linux");
        let manifest = json(&blob(m));
        let config = json(&blob(&manifest["config"]));
        assert_eq!(config["architecture"], arch);
        assert_eq!(config["config"]["User"], "65534:65534");
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        let layer = blob(&layers[0]);
        let dir = unpack.path().join(arch);
        std::fs::create_dir(&dir).unwrap();
        let gz = unpack.path().join(format!("{arch}.tar.gz"));
        std::fs::write(&gz, &layer).unwrap();
        run({
            let mut c = Command::new("tar");
            c.arg("-xzf").arg(&gz).arg("-C").arg(&dir);
            c
        });
        let diff_id = sha256(
            &run({
                let mut c = Command::new("gzip");
                c.arg("-dc").arg(&gz);
                c
            })
            .stdout,
        );
        assert_eq!(config["rootfs"]["diff_ids"][0], format!("sha256:{diff_id}"), "{arch}: the layer's diff_id");
        assert_eq!(read(&dir.join("dentrylab")), read(&built(arch).unwrap()), "{arch}: /dentrylab");
        assert!(dir.join("tmp").is_dir() && std::fs::read_dir(dir.join("tmp")).unwrap().next().is_none());
    }
}

/// skopeo (Debian's) reads the layout as a registry client would: each
/// platform resolves to its own config, and a copy of every platform
/// checks every blob's digest.
#[test]
fn skopeo_reads_both_platforms() {
    require_built!();
    require!(common::has("skopeo"), "needs skopeo (see .ci/run)");
    let reference = format!("oci:{}:{}", image_dir().join("oci").display(), env!("CARGO_PKG_VERSION"));
    for arch in ["amd64", "arm64"] {
        let out = run({
            let mut c = Command::new("skopeo");
            c.args(["inspect", "--config", "--override-os", "linux", "--override-arch", arch, &reference]);
            c
        });
        let config: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(config["architecture"], arch);
        assert_eq!(config["config"]["Entrypoint"][0], "/dentrylab");
    }
    let copy = tempfile::tempdir().unwrap();
    let to = format!("oci:{}:copy", copy.path().join("oci").display());
    run({
        let mut c = Command::new("skopeo");
        c.args(["copy", "--all", "--quiet", &reference, &to]);
        c
    });
}

fn sha256(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}
