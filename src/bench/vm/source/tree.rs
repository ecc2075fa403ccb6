//! Where a kernel build's source comes from: a Debian `linux-source-*`
//! package (fetched once into the cache), a tarball or a directory,
//! each with the identity the cache key hashes, and how its files are
//! unpacked into a build's tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest, Sha256};

use super::super::kernel::Cache;
use super::tools::run_quiet;
use super::{Source, hex};
use crate::error::UsageError;
use crate::sys::guardian::Guardian;

/// A source ready to unpack: its identity (what the cache key hashes)
/// and where its files come from.
pub(super) struct Tree {
    pub(super) identity: String,
    pub(super) label: String,
    from: Unpack,
}

enum Unpack {
    Tarball(PathBuf),
    Copy(PathBuf),
}

impl Tree {
    /// The source's files into `src` (an empty directory).
    pub(super) fn unpack(&self, src: &Path, g: &Guardian) -> Result<()> {
        match &self.from {
            Unpack::Tarball(t) => run_quiet(
                g,
                Command::new("tar").arg("-xf").arg(t).arg("-C").arg(src).arg("--strip-components=1"),
                "tar -x",
            ),
            Unpack::Copy(d) => run_quiet(g, Command::new("cp").arg("-a").arg(d.join(".")).arg(src), "cp -a"),
        }
    }
}

pub(super) fn source_tree(cache: &Cache, s: &Source, guard: &Guardian, announce: &dyn Fn(&str)) -> Result<Tree> {
    match s {
        Source::Package(p) => package_tree(cache, p, guard, announce),
        Source::Tarball(t) => {
            let unreadable =
                |e: std::io::Error| UsageError(format!("--kernel-source {}: cannot read it: {e}", t.display()));
            let mut f = std::fs::File::open(t).map_err(unreadable)?;
            let mut h = Sha256::new();
            std::io::copy(&mut f, &mut h).map_err(unreadable)?;
            let label = t.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(Tree {
                identity: format!("tarball sha256:{}", hex(&h.finalize())),
                label,
                from: Unpack::Tarball(t.clone()),
            })
        }
        Source::Dir(d) => {
            let d = d.canonicalize().map_err(|e| UsageError(format!("--kernel-source {}: {e}", d.display())))?;
            if !d.join("Makefile").is_file() {
                return Err(
                    UsageError(format!("--kernel-source {}: no Makefile: not a kernel tree", d.display())).into()
                );
            }
            let mut h = Sha256::new();
            listing(&d, &d, &mut h)?;
            Ok(Tree {
                identity: format!("dir {} {}", d.display(), hex(&h.finalize())),
                label: d.display().to_string(),
                from: Unpack::Copy(d),
            })
        }
    }
}

/// Hashes every file's path, size and modification time under `dir`
/// (`.git` left out): a tree edited in place gets a new key.
fn listing(root: &Path, dir: &Path, h: &mut Sha256) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if e.file_name() == ".git" {
            continue;
        }
        let m = e.metadata()?;
        let rel = e.path().strip_prefix(root).unwrap_or(&e.path()).to_string_lossy().into_owned();
        h.update(format!("{rel} {} {} {}\n", m.len(), m.mtime(), m.mtime_nsec()));
        if m.is_dir() {
            listing(root, &e.path(), h)?;
        }
    }
    Ok(())
}

/// The package's tarball, fetched once into `STATE/vm/sources/PACKAGE`
/// (it stays at the version apt gave first, which the identity names).
fn package_tree(cache: &Cache, pkg: &str, guard: &Guardian, announce: &dyn Fn(&str)) -> Result<Tree> {
    let dir = cache.dir.join("sources").join(pkg);
    let done = dir.join("source.json");
    if !done.is_file() {
        let partial = cache.partial_dir().join(format!("source-{pkg}"));
        let _ = std::fs::remove_dir_all(&partial);
        announce(&format!("fetching {pkg} with apt"));
        let deb = cache.download(pkg, &partial.join("deb")).map_err(|e| {
            anyhow!("kernel source {pkg}: {e:#}; check the name (apt-cache search linux-source) and the network")
        })?;
        let version = super::super::kernel::dpkg_field(&deb, "Version")?;
        let root = partial.join("root");
        run_quiet(guard, Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root), "dpkg-deb -x")?;
        let src = root.join("usr/src");
        let tarball = std::fs::read_dir(&src)
            .with_context(|| format!("{pkg} has no usr/src"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.to_string_lossy().contains(".tar"))
            .with_context(|| format!("{pkg} holds no source tarball under usr/src"))?;
        let staged = partial.join("out");
        std::fs::create_dir_all(&staged)?;
        let name = tarball.file_name().context("tarball")?.to_owned();
        std::fs::rename(&tarball, staged.join(&name))?;
        let meta = serde_json::json!({"package": pkg, "version": version, "tarball": name.to_string_lossy()});
        std::fs::write(staged.join("source.json"), serde_json::to_string_pretty(&meta)?)?;
        std::fs::create_dir_all(dir.parent().context("sources dir")?)?;
        if std::fs::rename(&staged, &dir).is_err() && !done.is_file() {
            bail!("cannot move the source into {}", dir.display());
        }
        let _ = std::fs::remove_dir_all(&partial);
    }
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&done)?)
        .with_context(|| format!("{} is damaged: remove {} and run again", done.display(), dir.display()))?;
    let version = meta["version"].as_str().unwrap_or_default().to_string();
    let tarball = dir.join(meta["tarball"].as_str().unwrap_or_default());
    Ok(Tree {
        identity: format!("package {pkg} {version}"),
        label: format!("{pkg} {version}"),
        from: Unpack::Tarball(tarball),
    })
}
