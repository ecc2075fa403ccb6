//! Captures what `dentrylab --version` and `dentrylab_build_info` say of
//! the build: the git revision (`DENTRYLAB_REVISION` when set, as an image
//! build passes it; else `git rev-parse`; else `unknown` outside git) and
//! the compiler's version. Never fails a build.

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
}
