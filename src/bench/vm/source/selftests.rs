//! The kernel's selftests built from the source the kernels are built
//! from (`vm --kernel-source … --selftests TARGET,…`), the patches applied,
//! so that a patch's own new tests run against its baseline too: `make
//! headers` (the selftests include the tree's `usr/include`), then `make -C
//! tools/testing/selftests TARGETS=… install`, which compiles the targets
//! with the host's compiler and puts each target's programs and scripts
//! under its collection, with `kselftest-list.txt` naming them. Cached
//! under `STATE/vm/selftests/KEY`, KEY a hash of the source's identity, the
//! patches' contents and the targets, built in the run's partial directory
//! like a kernel ([`super`]).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use super::diagnose::first_error;
use super::tools::{apply, make};
use super::{Patch, Request, Tree, hex, keep_log};
use crate::bench::vm::kernel::Cache;
use crate::bench::vm::selftests::{LIST, listed};
use crate::error::UsageError;
use crate::sys::guardian::Guardian;

const SCHEMA: &str = "dentrylab.vm-selftests/1";

/// A target as `--selftests` takes it: a directory under
/// `tools/testing/selftests` (`mount_setattr`, `filesystems/statmount`).
pub(crate) fn check_target(t: &str) -> Result<String, String> {
    let ok = !t.is_empty()
        && t.chars().all(|c| c.is_ascii_alphanumeric() || "_-/".contains(c))
        && !t.starts_with('/')
        && !t.split('/').any(|p| p.is_empty() || p == "..");
    if ok {
        Ok(t.to_string())
    } else {
        Err(format!(
            "`{t}` is not a selftest target: name a directory under tools/testing/selftests, e.g. mount_setattr or \
             filesystems/statmount"
        ))
    }
}

/// The cache key of one source, its patches and the targets.
fn key(tree: &Tree, patches: &[Patch], targets: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(format!("{SCHEMA}\nsource {}\n", tree.identity));
    for p in patches {
        h.update(format!("patch {}\n", p.info.sha256));
    }
    for t in targets {
        h.update(format!("target {t}\n"));
    }
    hex(&h.finalize())[..16].to_string()
}

/// The install of `r.selftests` (from the cache, or built now): its
/// directory, with [`LIST`] in it.
pub(super) fn build(
    cache: &Cache,
    tree: &Tree,
    patches: &[Patch],
    r: &Request,
    guard: &Guardian,
    announce: &dyn Fn(&str),
) -> Result<PathBuf> {
    let key = key(tree, patches, &r.selftests);
    let dir = cache.dir.join("selftests").join(&key);
    let names = r.selftests.join(" ");
    if dir.join(LIST).is_file() {
        announce(&format!("selftests {names}: built before, from the cache ({})", dir.display()));
        return Ok(dir);
    }
    let work = cache.partial_dir().join(format!("selftests-{key}"));
    let _ = std::fs::remove_dir_all(&work);
    let src = work.join("src");
    let out = work.join("out");
    std::fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    let log = work.join(format!("selftests-{key}.log"));
    announce(&format!("selftests {names}: unpacking {} to build them", tree.label));
    let result = (|| -> Result<()> {
        tree.unpack(&src, guard)?;
        for p in patches {
            apply(&src, p)?;
        }
        if let Some(t) = r.selftests.iter().find(|t| !src.join("tools/testing/selftests").join(t).is_dir()) {
            return Err(UsageError(format!(
                "--selftests {t}: this source has no such directory under tools/testing/selftests"
            ))
            .into());
        }
        make(guard, &src, &log, &["headers"], "make headers")?;
        let targets = format!("TARGETS={names}");
        let install = format!("INSTALL_PATH={}", out.display());
        let jobs = format!("-j{}", r.jobs);
        announce(&format!("selftests {names}: make -C tools/testing/selftests install (its log: {})", log.display()));
        make(
            guard,
            &src,
            &log,
            &["-C", "tools/testing/selftests", &jobs, &targets, &install, "install"],
            "make -C tools/testing/selftests install",
        )?;
        let mut list = std::fs::read_to_string(out.join(LIST)).unwrap_or_default();
        let mut tests = listed(&list);
        let has = |tests: &[String], t: &str| tests.iter().any(|e| e.split_once(':').is_some_and(|(c, _)| c == t));
        for t in &r.selftests {
            if !has(&tests, t) {
                // A target whose programs are TEST_GEN_FILES only
                // (move_mount_set_group) installs them unlisted: run them.
                for e in unlisted_programs(&out, t) {
                    list += &format!("{e}\n");
                    tests.push(e);
                }
            }
            if !has(&tests, t) {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                bail!("--selftests {t}: no test of it was installed (its build: {})", first_error(&text));
            }
        }
        std::fs::write(out.join(LIST), list)?;
        std::fs::create_dir_all(dir.parent().context("selftests dir")?)?;
        if std::fs::rename(&out, &dir).is_err() && !dir.join(LIST).is_file() {
            bail!("cannot move the selftests into {}", dir.display());
        }
        Ok(())
    })();
    keep_log(&r.logs, &log)?;
    let _ = std::fs::remove_dir_all(&work);
    result.map(|()| dir)
}

/// The executable files `make install` put in a target's collection,
/// `collection:file`, sorted.
fn unlisted_programs(out: &std::path::Path, target: &str) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut found: Vec<String> = std::fs::read_dir(out.join(target))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .map(|e| format!("{target}:{}", e.file_name().to_string_lossy()))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_a_directory_under_the_selftests() {
        assert_eq!(check_target("mount_setattr"), Ok("mount_setattr".into()));
        assert_eq!(check_target("filesystems/statmount"), Ok("filesystems/statmount".into()));
        for bad in ["", "../x", "/abs", "a//b", "a b", "a/../b"] {
            assert!(check_target(bad).is_err(), "{bad:?}");
        }
    }
}
