//! An image for every node (issue 39). The static arm64 binary that
//! `deploy/image/cross.sh cross-test arm64` builds with the pinned Debian
//! toolchain (`.ci/run` builds it before the tests, into
//! `target/qemu-test/dentrylab-linux-arm64`; `DENTRYLAB_ARM64_BIN` names
//! another) runs here under qemu-user (`qemu-aarch64-static`, Debian's
//! qemu-user-static) on the captured proc trees and must say what the
//! amd64 binary the tests built says. `deploy/image/oci.sh` makes a
//! multi-arch OCI image of those two binaries, read by hand (every blob's
//! digest and size) and by skopeo: the same script that
//! `deploy/image/build.sh` runs on the release binaries it ships.

mod common;
mod metrics;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use metrics::{calibration_dir, fixture, repo};
use serde_json::Value;

/// The arm64 binary, if it was built.
fn arm64() -> Option<PathBuf> {
    let p = std::env::var_os("DENTRYLAB_ARM64_BIN")
        .map_or_else(|| repo().join("target/qemu-test/dentrylab-linux-arm64"), PathBuf::from);
    p.is_file().then_some(p)
}

/// The amd64 binary: the one the tests built.
fn amd64() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dentrylab"))
}

macro_rules! require_arm64 {
    () => {
        $crate::require!(
            arm64().is_some(),
            "needs the arm64 binary (deploy/image/cross.sh cross-test arm64 target/qemu-test/dentrylab-linux-arm64; \
             .ci/run builds it)"
        );
    };
}

macro_rules! require_qemu {
    () => {
        require_arm64!();
        $crate::require!(
            common::has("qemu-aarch64-static"),
            "needs qemu-aarch64-static (qemu-user-static: deploy/tools/rust-cross.sh installs it)"
        );
    };
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// `dentrylab ARGS` for `arch`: natively for amd64, under qemu-user for
/// arm64; its standard output.
fn dentrylab(arch: &str, args: &[&str]) -> String {
    let mut cmd = if arch == "arm64" {
        let mut c = Command::new("qemu-aarch64-static");
        c.arg(arm64().unwrap());
        c
    } else {
        Command::new(amd64())
    };
    cmd.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    String::from_utf8(run(cmd).stdout).unwrap()
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
fn arm64_binary_is_static_for_its_machine() {
    require_arm64!();
    let (machine, dynamic) = elf(&arm64().unwrap());
    assert_eq!(machine, object::Architecture::Aarch64);
    assert!(!dynamic, "the arm64 binary needs an interpreter or a shared library");
    // The witness that the check can fail: the tests' own binary is dynamic.
    assert_eq!(elf(&amd64()), (object::Architecture::X86_64, true));
}

/// The compiler deploy/tools/rust-cross.sh pins (`RUST_DEB=1.96.0+dfsg...`).
fn pinned_rustc() -> String {
    let script = std::fs::read_to_string(repo().join("deploy/tools/rust-cross.sh")).unwrap();
    let line = script.lines().find_map(|l| l.strip_prefix("RUST_DEB=")).expect("RUST_DEB= in rust-cross.sh");
    line.split('+').next().unwrap().to_string()
}

/// `dentrylab 0.1.0 (revision R, rustc V)`: the line without `V`, and `V`.
fn version_parts(line: &str) -> (String, String) {
    let (head, rustc) = line.trim_end().rsplit_once(", rustc ").unwrap_or_else(|| panic!("{line:?}"));
    (head.to_string(), rustc.trim_end_matches(')').to_string())
}

#[test]
fn arm64_version_under_qemu_is_the_amd64_one() {
    require_qemu!();
    let arm = dentrylab("arm64", &["--version"]);
    let amd = dentrylab("amd64", &["--version"]);
    println!("arm64 under qemu: {arm}amd64 (the tests' build): {amd}");
    // The same version and revision; each names its own compiler: the
    // arm64 one the pinned Debian rustc, the tests' their own.
    let ((arm_head, arm_rustc), (amd_head, _)) = (version_parts(&arm), version_parts(&amd));
    assert_eq!(arm_head, amd_head);
    assert_eq!(arm_rustc, pinned_rustc(), "{arm}");
    assert!(arm_head.starts_with(&format!("dentrylab {} (revision ", env!("CARGO_PKG_VERSION"))), "{arm}");
}

#[test]
fn arm64_status_under_qemu_is_the_amd64_one() {
    require_qemu!();
    let state = calibration_dir();
    for kernel in ["6.18", "5.10"] {
        let root = fixture(kernel);
        for extra in [&[][..], &["--json", "-"][..]] {
            let mut args =
                vec!["status", "--proc-root", root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()];
            args.extend_from_slice(extra);
            let arm = dentrylab("arm64", &args);
            let amd = dentrylab("amd64", &args);
            assert!(arm.contains("dentr"), "status on {kernel} said: {arm}");
            if extra.is_empty() {
                assert_eq!(arm, amd, "status on {kernel}");
            } else {
                // The JSON also says when the run started and how long the
                // collection took (slower under qemu): all else is equal.
                let strip = |t: &str| {
                    let mut v: Value = serde_json::from_str(t).unwrap();
                    let o = v.as_object_mut().unwrap();
                    assert!(o.remove("started_at").is_some() && o.remove("collection_seconds").is_some(), "{t}");
                    v
                };
                assert_eq!(strip(&arm), strip(&amd), "status --json on {kernel}");
            }
        }
    }
    let root = fixture("6.18");
    let args = ["status", "--proc-root", root.to_str().unwrap(), "--state-dir", state.to_str().unwrap()];
    println!("arm64 under qemu, status on the 6.18 fixture:\n{}", dentrylab("arm64", &args));
}

/// `deploy/image/oci.sh` on the two binaries, in `dir`; the layout's path.
fn image(dir: &Path) -> PathBuf {
    let oci = dir.join("oci");
    let mut c = Command::new(repo().join("deploy/image/oci.sh"));
    c.arg(&oci).arg(format!("ghcr.io/dentrylab/dentrylab:{}", env!("CARGO_PKG_VERSION")));
    c.arg(format!("amd64={}", amd64().display())).arg(format!("arm64={}", arm64().unwrap().display()));
    let said = String::from_utf8(run(c).stdout).unwrap();
    assert!(said.starts_with("ghcr.io/dentrylab/dentrylab:") && said.contains(" sha256:"), "{said}");
    assert!(dir.join("oci.tar").is_file(), "oci.sh writes the layout as a tarball too");
    oci
}

/// The layout: its index names one image index by tag, which lists one
/// manifest per platform; every blob is named by its sha256 and has the
/// size its descriptor says; each platform's layer holds its binary at
/// /dentrylab (the same bytes) and an empty /tmp.
#[test]
fn oci_image_has_one_manifest_per_platform() {
    require_arm64!();
    let work = tempfile::tempdir().unwrap();
    let oci = image(work.path());
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
    assert_eq!(entries[0]["annotations"]["org.opencontainers.image.ref.name"], env!("CARGO_PKG_VERSION"));
    assert_eq!(entries[0]["mediaType"], "application/vnd.oci.image.index.v1+json");
    let index = json(&blob(&entries[0]));
    let manifests = index["manifests"].as_array().unwrap();
    let platforms: Vec<&str> = manifests.iter().map(|m| m["platform"]["architecture"].as_str().unwrap()).collect();
    assert_eq!(platforms, ["amd64", "arm64"]);
    for m in manifests {
        let arch = m["platform"]["architecture"].as_str().unwrap();
        assert_eq!(m["platform"]["os"], "linux");
        let manifest = json(&blob(m));
        let config = json(&blob(&manifest["config"]));
        assert_eq!(config["architecture"], arch);
        assert_eq!(config["config"]["User"], "65534:65534");
        let layers = manifest["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        let gz = work.path().join(format!("{arch}.tar.gz"));
        std::fs::write(&gz, blob(&layers[0])).unwrap();
        let dir = work.path().join(arch);
        std::fs::create_dir(&dir).unwrap();
        run({
            let mut c = Command::new("tar");
            c.arg("-xzf").arg(&gz).arg("-C").arg(&dir);
            c
        });
        let tar = run({
            let mut c = Command::new("gzip");
            c.arg("-dc").arg(&gz);
            c
        });
        let diff_id = format!("sha256:{}", sha256(&tar.stdout));
        assert_eq!(config["rootfs"]["diff_ids"][0], diff_id, "{arch}: the layer's diff_id");
        let binary = if arch == "arm64" { arm64().unwrap() } else { amd64() };
        assert!(read(&dir.join("dentrylab")) == read(&binary), "{arch}: /dentrylab is not {}", binary.display());
        assert!(dir.join("tmp").is_dir() && std::fs::read_dir(dir.join("tmp")).unwrap().next().is_none());
    }
}

/// skopeo (Debian's) reads the layout as a registry client would: each
/// platform resolves to its own config, and a copy of every platform
/// checks every blob's digest.
#[test]
fn skopeo_reads_both_platforms() {
    require_arm64!();
    require!(common::has("skopeo"), "needs skopeo (see .ci/run)");
    let work = tempfile::tempdir().unwrap();
    let reference = format!("oci:{}:{}", image(work.path()).display(), env!("CARGO_PKG_VERSION"));
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
    let to = format!("oci:{}:copy", work.path().join("copy").display());
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
