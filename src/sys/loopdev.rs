//! Loop devices: find a free one and bind a file to it with
//! `LO_FLAGS_AUTOCLEAR`, so the kernel detaches it by itself when its last
//! user (the mount) goes away, however dentrylab ends.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_SET_FD: libc::c_ulong = 0x4C00;
const LOOP_SET_STATUS64: libc::c_ulong = 0x4C04;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
/// How often to retry when another process takes the free device first.
const ATTACH_ATTEMPTS: u32 = 16;

/// `struct loop_info64` from `<linux/loop.h>`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config` from `<linux/loop.h>` (LOOP_CONFIGURE, Linux 5.8).
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

fn autoclear_info() -> LoopInfo64 {
    LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        lo_rdevice: 0,
        lo_offset: 0,
        lo_sizelimit: 0,
        lo_number: 0,
        lo_encrypt_type: 0,
        lo_encrypt_key_size: 0,
        lo_flags: LO_FLAGS_AUTOCLEAR,
        lo_file_name: [0; 64],
        lo_crypt_name: [0; 64],
        lo_encrypt_key: [0; 32],
        lo_init: [0; 2],
    }
}

/// A loop device bound to a backing file. Keep it open until the
/// filesystem on it is mounted: with autoclear, the last close of an
/// unmounted device detaches it.
#[derive(Debug)]
pub(crate) struct LoopDevice {
    /// Held open so the device stays bound until it is dropped.
    _open: File,
    pub number: u32,
}

impl LoopDevice {
    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(format!("/dev/loop{}", self.number))
    }
}

/// Binds `backing` to a free loop device with autoclear set.
pub(crate) fn attach(backing: &File) -> Result<LoopDevice> {
    let ctl = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .context("cannot open /dev/loop-control (is the loop module loaded? it needs root)")?;
    for _ in 0..ATTACH_ATTEMPTS {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a number.
        let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if n < 0 {
            return Err(std::io::Error::last_os_error()).context("ioctl LOOP_CTL_GET_FREE on /dev/loop-control");
        }
        let path = format!("/dev/loop{n}");
        let dev =
            OpenOptions::new().read(true).write(true).open(&path).with_context(|| format!("cannot open {path}"))?;
        match configure(&dev, backing) {
            Ok(()) => return Ok(LoopDevice { _open: dev, number: n as u32 }),
            // Another process bound it between GET_FREE and here: try again.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot bind the backing file to {path}")),
        }
    }
    bail!("no free loop device after {ATTACH_ATTEMPTS} attempts (other processes keep taking them)")
}

fn configure(dev: &File, backing: &File) -> std::io::Result<()> {
    let cfg = LoopConfig { fd: backing.as_raw_fd() as u32, block_size: 0, info: autoclear_info(), reserved: [0; 8] };
    // SAFETY: `cfg` is a valid `struct loop_config` that outlives the call.
    let r = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE, &cfg as *const LoopConfig) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EINVAL) && e.raw_os_error() != Some(libc::ENOTTY) {
        return Err(e);
    }
    // Kernels before 5.8: LOOP_SET_FD, then the flags.
    // SAFETY: LOOP_SET_FD takes a file descriptor by value.
    if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_FD, backing.as_raw_fd() as libc::c_ulong) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let info = autoclear_info();
    // SAFETY: `info` is a valid `struct loop_info64` that outlives the call.
    if unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_SET_STATUS64, &info as *const LoopInfo64) } != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: LOOP_CLR_FD takes no argument.
        unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD) };
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_match_the_kernel_abi() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }
}
