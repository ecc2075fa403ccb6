//! The tools a kernel build runs (`make`, `patch`, `tar`, `cp`,
//! `dpkg-deb`), each but `patch` in a process group the run's guardian
//! kills if dentrylab ends; a failure is one line from the tool's output.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};

use super::Patch;
use super::diagnose::{first_error, patch_failure};
use crate::sys::guardian::Guardian;

/// `make -s kernelrelease`: the release the build will report.
pub(super) fn release(src: &Path) -> Result<String> {
    let out = make_command(src)
        .args(["-s", "--no-print-directory", "kernelrelease"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run make kernelrelease")?;
    let release = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || release.is_empty() || release.contains(['/', ' ', '\n']) {
        bail!("make kernelrelease gave no release: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(release)
}

/// Takes a patch [`apply`] applied out again.
pub(super) fn reverse(src: &Path, p: &Patch) -> Result<()> {
    let out = Command::new("patch")
        .args(["-p1", "-R", "--batch", "--no-backup-if-mismatch", "-r", "-"])
        .arg("-d")
        .arg(src)
        .arg("-i")
        .arg(p.path.canonicalize().unwrap_or_else(|_| p.path.clone()))
        .stdin(Stdio::null())
        .output()
        .context("cannot run patch")?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        bail!("--patch {}: cannot reverse it for the baseline: {}", p.path.display(), patch_failure(&text));
    }
    Ok(())
}

/// Applies one patch: a dry run first, so that a patch that does not
/// apply changes nothing; its error names the first failing hunk.
pub(super) fn apply(src: &Path, p: &Patch) -> Result<()> {
    let run = |dry: bool| -> Result<(bool, String)> {
        let mut c = Command::new("patch");
        c.args(["-p1", "--batch", "--forward", "--no-backup-if-mismatch"]).arg("-d").arg(src).arg("-i");
        c.arg(p.path.canonicalize().unwrap_or_else(|_| p.path.clone()));
        if dry {
            c.arg("--dry-run");
        } else {
            c.args(["-r", "-"]);
        }
        let out = c.stdin(Stdio::null()).output().context("cannot run patch")?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        Ok((out.status.success(), text))
    };
    for dry in [true, false] {
        let (ok, text) = run(dry)?;
        if !ok {
            bail!("--patch {}: {} (nothing was built)", p.path.display(), patch_failure(&text));
        }
    }
    Ok(())
}

/// `make ARGS` in `src`, in a process group `guard` kills, its output
/// appended to `log`; a failure is the first error the log shows from
/// this call.
pub(super) fn make(guard: &Guardian, src: &Path, log: &Path, args: &[&str], what: &str) -> Result<()> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let start = out.metadata()?.len() as usize;
    let mut c = make_command(src);
    c.args(args).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    let mut group = guard.spawn_group(&mut c).with_context(|| format!("cannot run {what}"))?;
    let status = group.wait()?;
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text[start.min(text.len())..]).into_owned();
    Err(anyhow!("{what} failed ({status}): {}", first_error(&text)))
}

/// `make -C src`, without a make or cargo jobserver this process may
/// have inherited (the build's own `-jN` decides), through ccache when it
/// is installed ([`CCACHE_CC`]).
pub(super) fn make_command(src: &Path) -> Command {
    let mut c = Command::new("make");
    c.arg("-C").arg(src);
    if std::env::var_os("DENTRYLAB_NO_CCACHE").is_none() && crate::sys::which("ccache").is_some() {
        c.arg(CCACHE_CC).envs(CCACHE_ENV);
    }
    for v in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CARGO_MAKEFLAGS"] {
        c.env_remove(v);
    }
    c
}

/// `CC=ccache gcc` and the settings that let two builds share objects
/// (a compiler wrapper in `CC`, the kernel's own way, Documentation/kbuild).
/// Each build unpacks its tree into a directory of its own, and ccache
/// hashes the working directory into objects built with `-g` (the guest's
/// BTF needs debug info), so nothing would be shared without
/// `CCACHE_NOHASHDIR`: what it changes is the compile directory recorded
/// in the debug info (`DW_AT_comp_dir`), which neither BTF nor the kernel
/// reads. A tree just unpacked (and the headers the build generates) is
/// newer than the compiles, which turns ccache's direct mode off: every
/// file is preprocessed to be looked up (measured: a second patch on
/// linux-source-7.3 took 312 s against the first build's 696 s, loaded);
/// `include_file_mtime,include_file_ctime` keeps the direct mode, which
/// still hashes every header's contents. An A/B's two builds share only
/// what the patch did not touch. Not used without ccache on the PATH, or
/// with `DENTRYLAB_NO_CCACHE` set.
const CCACHE_CC: &str = "CC=ccache gcc";
const CCACHE_ENV: [(&str, &str); 2] =
    [("CCACHE_NOHASHDIR", "true"), ("CCACHE_SLOPPINESS", "include_file_mtime,include_file_ctime")];

/// A helper tool in a process group `guard` kills, its output discarded;
/// the error carries its last line of standard error.
pub(super) fn run_quiet(guard: &Guardian, cmd: &mut Command, what: &str) -> Result<()> {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut group = guard.spawn_group(cmd).with_context(|| format!("cannot run {what}"))?;
    let err = group.stderr();
    let status = group.wait()?;
    if !status.success() {
        bail!("{what} failed ({status}): {}", err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or(""));
    }
    Ok(())
}
