//! Captures what `dentrylab --version` and `dentrylab_build_info` say of
//! the build: the git revision (`DENTRYLAB_REVISION` when set, as an image
//! build passes it; else `git rev-parse`; else `unknown` outside git) and
//! the compiler's version. Never fails a build.
//!
//! It also compiles the census's BPF program (`src/bpf/census.bpf.c`) with clang
//! into `$OUT_DIR/census.bpf.o`, which `probe::census_bpf` embeds. The
//! headers (`bpf/bpf_helpers.h`, `bpf/bpf_core_read.h`) are those of the
//! libbpf that libbpf-sys builds (`DEP_BPF_INCLUDE`); `linux/bpf.h` is the
//! system's (linux-libc-dev). `CLANG` names another clang. Only with the `bpf` feature (the default).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn build_info() {
    println!("cargo:rerun-if-env-changed=DENTRYLAB_REVISION");
    println!("cargo:rerun-if-changed=build.rs");
    let revision = match std::env::var("DENTRYLAB_REVISION").ok().filter(|r| !r.is_empty()) {
        Some(r) => r,
        None => {
            // Rebuild when the commit moves: HEAD, and the branch it names
            // (a file that does not exist would rebuild every time).
            let branch = output("git", &["symbolic-ref", "-q", "HEAD"]);
            for p in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
                if let Some(path) = output("git", &["rev-parse", "--git-path", p])
                    && std::path::Path::new(&path).exists()
                {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
            output("git", &["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    // "rustc 1.91.0 (f8297e351 2025-10-28)": the version.
    let version = output(&rustc, &["--version"])
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DENTRYLAB_REVISION={revision}");
    println!("cargo:rustc-env=DENTRYLAB_RUSTC={version}");
}

fn main() {
    build_info();
    bpf_program();
}

/// The census's BPF program, with the `bpf` feature.
fn bpf_program() {
    let src = "src/bpf/census.bpf.c";
    println!("cargo:rerun-if-changed={src}");
    if env::var_os("CARGO_FEATURE_BPF").is_none() {
        return; // built without the census's BPF backend
    }
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("census.bpf.o");
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".into());
    let target_arch = match arch.as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => other,
    };
    let mut cmd = Command::new(&clang);
    cmd.args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-D__TARGET_ARCH_{target_arch}"))
        .arg(format!("-I/usr/include/{arch}-linux-gnu"));
    if let Ok(inc) = env::var("DEP_BPF_INCLUDE") {
        cmd.arg(format!("-I{inc}"));
    }
    cmd.args(["-c", src, "-o"]).arg(&out);
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed to compile {src} ({s})"),
        Err(e) => panic!(
            "cannot run {clang} to compile {src} ({e}): the census's BPF program needs clang \
             (Debian: apt-get install clang linux-libc-dev libelf-dev zlib1g-dev pkg-config make)"
        ),
    }
}
