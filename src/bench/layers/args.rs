//! The options `reclaim` and `create` share, as clap parses them: what
//! dentries to make and where (`--kind`, `--layout`, `--threads`, and
//! `--fs` with an overlay's `--lower-fs` and `--upper-fs`). Both commands
//! flatten [`WorkloadArgs`] into their options; [`WorkloadArgs::fs`] and
//! [`WorkloadArgs::threads`] resolve it for their `Options`.

use crate::error::UsageError;
use crate::sandbox::FsType;
use crate::sandbox::overlay::Stack;
use crate::workload::{Kind, Layout};

/// What to create and where.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkloadArgs {
    /// Kind of dentry to create: hardlink, file, negative (failed lookups of names that do not exist) or
    /// unlinked (create then unlink, as temporary tables do). negative and unlinked need --fs ext4 or xfs:
    /// tmpfs keeps no negative dentries.
    #[arg(long, default_value = "hardlink", value_parser = |s: &str| s.parse::<Kind>())]
    pub kind: Kind,
    /// 'flat' (all in one directory, as the node-lockup report) or 'dirs=K' (spread over K directories).
    #[arg(long, default_value = "flat", value_parser = |s: &str| s.parse::<Layout>())]
    pub layout: Layout,
    /// Generator threads (default: one per CPU; with fewer directories than threads, threads share directories).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Filesystem that holds the dentries: tmpfs, or ext4 / xfs made on a loop device over a sparse file in
    /// the sandbox (mkfs.ext4 / mkfs.xfs must be installed), or overlay: the dentries are made through an
    /// overlayfs mount whose lower layer is a directory on --lower-fs and whose upper and work directories
    /// are on --upper-fs, as a container's root; the result then says, per filesystem of the stack, what
    /// the reclaim freed and what stayed. The loop devices detach themselves when the run ends, however it
    /// ends.
    #[arg(long, default_value = "tmpfs", value_parser = parse_fs_choice)]
    pub fs: FsChoice,
    /// With --fs overlay: the filesystem of the lower layer (the image), ext4 or xfs.
    #[arg(long, value_name = "FS", value_parser = parse_lower_fs)]
    pub lower_fs: Option<FsType>,
    /// With --fs overlay: the filesystem of the upper and work directories, ext4, xfs or tmpfs [default: the
    /// lower's type, as the overlayfs snapshotter keeps them; a filesystem of its own, so each layer is counted].
    #[arg(long, value_name = "FS", value_parser = |s: &str| s.parse::<FsType>())]
    pub upper_fs: Option<FsType>,
}

/// `--fs` of reclaim and create: one filesystem, or an overlay stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FsChoice {
    Plain(FsType),
    Overlay,
}

impl WorkloadArgs {
    /// `--fs`, `--lower-fs` and `--upper-fs`: the filesystem the kinds are
    /// checked against (an overlay's lower) and the overlay stack, if any.
    /// A layer named without `--fs overlay` is a usage error.
    pub(crate) fn fs(&self) -> Result<(FsType, Option<Stack>), UsageError> {
        match self.fs {
            FsChoice::Overlay => {
                let stack = super::stack(self.lower_fs, self.upper_fs);
                Ok((stack.lower, Some(stack)))
            }
            FsChoice::Plain(fs) => {
                if let Some(flag) =
                    [("--lower-fs", self.lower_fs), ("--upper-fs", self.upper_fs)].iter().find(|f| f.1.is_some())
                {
                    return Err(UsageError(format!(
                        "{}: the layers of an overlay are chosen only with --fs overlay (this run uses --fs {fs}); \
                         add --fs overlay or drop {}",
                        flag.0, flag.0
                    )));
                }
                Ok((fs, None))
            }
        }
    }

    /// Generator threads: as asked, else one per CPU (`cpus`). Where the
    /// layout has fewer directories than threads, threads share a
    /// directory: they then serialise on its lock while linking, but the
    /// rest of each call (name formatting, lookup, allocation) still runs
    /// in parallel (2M hard links, one directory, 2 CPUs: 257k/s with one
    /// thread, 374k/s with two).
    pub(crate) fn threads(&self, cpus: usize) -> usize {
        self.threads.map_or(cpus, |t| t as usize)
    }
}

fn parse_fs_choice(s: &str) -> Result<FsChoice, String> {
    if s == "overlay" {
        return Ok(FsChoice::Overlay);
    }
    s.parse()
        .map(FsChoice::Plain)
        .map_err(|_| format!("unknown filesystem {s:?}: use one of {}, overlay", FsType::NAMES.join(", ")))
}

fn parse_lower_fs(s: &str) -> Result<FsType, String> {
    match s.parse::<FsType>()? {
        FsType::Tmpfs => Err("the lower layer (the image) lives on a disk filesystem: use ext4 or xfs".into()),
        fs => Ok(fs),
    }
}
