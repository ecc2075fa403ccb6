//! Compiles the census's BPF program (`src/bpf/census.bpf.c`) with clang
//! into `$OUT_DIR/census.bpf.o`, which `probe::census_bpf` embeds. The
//! headers (`bpf/bpf_helpers.h`, `bpf/bpf_core_read.h`) are those of the
//! libbpf that libbpf-sys builds (`DEP_BPF_INCLUDE`); `linux/bpf.h` is the
//! system's (linux-libc-dev). `CLANG` names another clang. Only with the `bpf` feature (the default).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
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
