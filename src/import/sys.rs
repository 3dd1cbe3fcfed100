//! The only unsafe code of the import layer: read-only mappings of dma-bufs,
//! the dma-buf ioctls (DMA_BUF_IOCTL_SYNC, DMA_BUF_IOCTL_EXPORT_SYNC_FILE),
//! sync_file polling and status (SYNC_IOC_FILE_INFO) and the size of an
//! object (lseek to its end).
//!
//! Invariants kept here:
//! - A [`Mapping`] is created from a valid fd and a length equal to the
//!   object's real size (checked by the caller with [`object_size`]); it is
//!   `PROT_READ`, `MAP_SHARED`, never written through, and unmapped exactly
//!   once, on drop. Slices handed out by [`Mapping::bytes`] borrow the mapping,
//!   so they cannot outlive it.
//! - Every ioctl is given a pointer to a properly sized `#[repr(C)]` struct
//!   that lives on the stack for the duration of the call; the kernel reads or
//!   writes only that struct.
//! - File descriptors are borrowed (`BorrowedFd`) for every call; the one fd
//!   this module creates (the exported sync_file) is returned as an `OwnedFd`
//!   immediately, so it is closed on every path.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::libc;

/// `struct dma_buf_sync` (linux/dma-buf.h).
#[repr(C)]
struct DmaBufSync {
    flags: u64,
}

/// `struct dma_buf_export_sync_file` (linux/dma-buf.h).
#[repr(C)]
struct DmaBufExportSyncFile {
    flags: u32,
    fd: i32,
}

/// `_IOW('b', 0, struct dma_buf_sync)`.
const DMA_BUF_IOCTL_SYNC: libc::c_ulong = 0x4008_6200;
/// `_IOWR('b', 2, struct dma_buf_export_sync_file)`.
const DMA_BUF_IOCTL_EXPORT_SYNC_FILE: libc::c_ulong = 0xc008_6202;
pub(super) const DMA_BUF_SYNC_READ: u64 = 1 << 0;
pub(super) const DMA_BUF_SYNC_START: u64 = 0;
pub(super) const DMA_BUF_SYNC_END: u64 = 1 << 2;

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The real size of the object behind `fd`: `lseek(fd, 0, SEEK_END)`, which
/// dma-bufs answer with their size. The file offset is put back to 0.
pub(super) fn object_size(fd: BorrowedFd<'_>) -> std::io::Result<u64> {
    // SAFETY: lseek on a borrowed (open) fd; no memory is passed.
    let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
    if end < 0 {
        return Err(last_error());
    }
    // SAFETY: as above.
    unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
    Ok(end as u64)
}

/// `DMA_BUF_IOCTL_SYNC` with `flags` (START or END, with READ).
pub(super) fn dma_buf_sync(fd: BorrowedFd<'_>, flags: u64) -> std::io::Result<()> {
    let mut arg = DmaBufSync { flags };
    loop {
        // SAFETY: the ioctl reads one `struct dma_buf_sync` from `arg`, which
        // lives on the stack for the call.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), DMA_BUF_IOCTL_SYNC, &mut arg) };
        if rc == 0 {
            return Ok(());
        }
        let e = last_error();
        // The kernel restarts an interrupted wait; so do we.
        if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EAGAIN)) {
            return Err(e);
        }
    }
}

/// `DMA_BUF_IOCTL_EXPORT_SYNC_FILE` with `DMA_BUF_SYNC_READ`: a sync_file
/// holding the fences a reader must wait for (the writers' fences).
pub(super) fn export_read_sync_file(fd: BorrowedFd<'_>) -> std::io::Result<OwnedFd> {
    let mut arg = DmaBufExportSyncFile { flags: DMA_BUF_SYNC_READ as u32, fd: -1 };
    // SAFETY: the ioctl reads and writes one `struct dma_buf_export_sync_file`
    // in `arg`, on the stack for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &mut arg) };
    if rc != 0 {
        return Err(last_error());
    }
    // SAFETY: on success the kernel returned a new fd that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(arg.fd) })
}

/// `struct sync_file_info` (linux/sync_file.h).
#[repr(C)]
struct SyncFileInfo {
    name: [u8; 32],
    status: i32,
    flags: u32,
    num_fences: u32,
    pad: u32,
    sync_fence_info: u64,
}

/// `_IOWR('>', 4, struct sync_file_info)`.
const SYNC_IOC_FILE_INFO: libc::c_ulong = 0xc038_3e04;
// The ioctl number carries the struct's size (0x38).
const _: () = assert!(std::mem::size_of::<SyncFileInfo>() == 0x38);

/// Where a fence's fd stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FenceState {
    Pending,
    Signalled,
    /// Signalled with an error: the producer failed, the content is not
    /// to be read.
    Failed(FenceError),
}

/// How a signalled fence said it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FenceError {
    /// A sync_file's status (`SYNC_IOC_FILE_INFO`): the fence's errno.
    Status(i32),
    /// An fd that is no sync_file polled POLLERR (a sync_file never does).
    PollErr,
}

impl std::fmt::Display for FenceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            FenceError::Status(errno) => {
                let e = nix::errno::Errno::from_raw(errno);
                write!(f, "{e:?} ({})", e.desc())
            }
            FenceError::PollErr => f.write_str("POLLERR"),
        }
    }
}

/// Where the fence behind a sync_file (or any pollable fd) stands:
/// `poll(POLLIN)` with `timeout_ms` (0: do not wait), then, once readable,
/// the sync_file's status. A sync_file whose fence failed polls readable
/// like a good one (drivers/dma-buf/sync_file.c, `sync_file_poll`): only
/// `SYNC_IOC_FILE_INFO` tells them apart. An fd that is no sync_file keeps
/// the poll's answer.
pub(super) fn fence_state(fd: BorrowedFd<'_>, timeout_ms: i32) -> std::io::Result<FenceState> {
    match poll_readable(fd, timeout_ms)? {
        Readiness::Pending => return Ok(FenceState::Pending),
        Readiness::Error => return Ok(FenceState::Failed(FenceError::PollErr)),
        Readiness::Readable => {}
    }
    Ok(readable_state(sync_file_status(fd)?))
}

/// A readable fd's state from its sync_file status (None: no sync_file).
fn readable_state(status: Option<i32>) -> FenceState {
    match status {
        None | Some(1..) => FenceState::Signalled,
        // Readable yet active cannot happen (signalled is final); wait on.
        Some(0) => FenceState::Pending,
        Some(status) => FenceState::Failed(FenceError::Status(-status)),
    }
}

/// What `poll(POLLIN)` answered.
enum Readiness {
    Pending,
    Readable,
    /// POLLERR.
    Error,
}

/// `poll(POLLIN)` of one fd, restarted on EINTR; POLLNVAL is EBADF.
fn poll_readable(fd: BorrowedFd<'_>, timeout_ms: i32) -> std::io::Result<Readiness> {
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: one pollfd on the stack, count 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if rc < 0 {
            let e = last_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        }
        if pfd.revents & libc::POLLERR != 0 {
            return Ok(Readiness::Error);
        }
        return Ok(if rc > 0 && pfd.revents & libc::POLLIN != 0 { Readiness::Readable } else { Readiness::Pending });
    }
}

/// A sync_file's status (1 signalled, 0 active, < 0 the fence's error), or
/// None for an fd that is no sync_file (ENOTTY, or EINVAL from a driver
/// that reads the number as its own ioctl). Public for the VM tests, which
/// ask it of real sync_files (through `internals`).
pub fn sync_file_status(fd: BorrowedFd<'_>) -> std::io::Result<Option<i32>> {
    // num_fences 0: the kernel fills in the status and writes no fence array.
    let mut info = SyncFileInfo { name: [0; 32], status: 0, flags: 0, num_fences: 0, pad: 0, sync_fence_info: 0 };
    // SAFETY: the ioctl reads and writes one `struct sync_file_info` in
    // `info`, on the stack for the call; with num_fences 0 it follows no
    // pointer in it.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), SYNC_IOC_FILE_INFO, &mut info) };
    if rc == 0 {
        return Ok(Some(info.status));
    }
    let e = last_error();
    match e.raw_os_error() {
        Some(libc::ENOTTY) | Some(libc::EINVAL) => Ok(None),
        _ => Err(e),
    }
}

/// A read-only shared mapping of a whole object.
pub(super) struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and never changes after creation; sharing
// `&[u8]` views of it across threads is as safe as sharing any `&[u8]` (the
// producer does not write while the SYNC bracket is open: that is the
// dma-buf contract the import enforces with fences).
unsafe impl Send for Mapping {}
// SAFETY: as for Send: shared views of a read-only mapping that never changes.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from offset 0, read-only. `len` must not
    /// exceed the object's size (the caller checks it with [`object_size`]).
    pub(super) fn map_read_only(fd: BorrowedFd<'_>, len: usize) -> std::io::Result<Mapping> {
        if len == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a fresh mapping chosen by the kernel (addr null), PROT_READ,
        // of a valid fd; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(last_error());
        }
        Ok(Mapping { ptr, len })
    }

    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until drop; `&self` keeps
        // the mapping alive for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `map_read_only`, once;
        // no slice of it can outlive `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A new fd (close-on-exec) for the same open file as `fd`, a number the
/// caller holds but does not give us (FFmpeg's `AVDRMObjectDescriptor.fd`).
/// A closed or invalid number gives EBADF, never a borrow of a stranger's fd
/// beyond this one call.
pub(super) fn dup_raw_fd(fd: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) only reads the fd number; on success it
    // returns a new fd that nobody else owns.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if new < 0 {
        return Err(last_error());
    }
    // SAFETY: as above, a fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Which object an fd refers to: (device, inode) from `fstat`. Every
/// dma-buf has an inode of its own on the dma-buf filesystem, so two fds of
/// one buffer (a decoder's surface exported again each frame) give the same
/// pair, and a live buffer's pair is never another's.
pub(super) fn identity(fd: BorrowedFd<'_>) -> std::io::Result<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: fstat writes one `struct stat` into `st`, which lives on the
    // stack for the call; the fd is borrowed (open).
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(last_error());
    }
    // SAFETY: fstat succeeded, so it initialised the struct.
    let st = unsafe { st.assume_init() };
    Ok((st.st_dev, st.st_ino))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut ends = [0; 2];
        // SAFETY: two ints to write; both fds are new and ours.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        // SAFETY: as above.
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) }
    }

    /// Pipes and eventfds (what callers and tests hand over as fences) answer
    /// SYNC_IOC_FILE_INFO with ENOTTY: the poll's answer stands.
    #[test]
    fn an_fd_that_is_no_sync_file_keeps_the_poll_answer() {
        let (reader, writer) = pipe();
        assert_eq!(sync_file_status(reader.as_fd()).unwrap(), None);
        assert_eq!(fence_state(reader.as_fd(), 0).unwrap(), FenceState::Pending);
        // SAFETY: one byte from a live buffer to an open fd.
        assert_eq!(unsafe { libc::write(writer.as_raw_fd(), b"x".as_ptr().cast(), 1) }, 1);
        assert_eq!(fence_state(reader.as_fd(), 0).unwrap(), FenceState::Signalled);
        // SAFETY: a new fd, ours.
        let event = unsafe { OwnedFd::from_raw_fd(libc::eventfd(1, libc::EFD_CLOEXEC)) };
        assert_eq!(sync_file_status(event.as_fd()).unwrap(), None);
        assert_eq!(fence_state(event.as_fd(), 0).unwrap(), FenceState::Signalled);
        // A pipe's write end whose reader is gone polls POLLERR.
        drop(reader);
        assert_eq!(fence_state(writer.as_fd(), 0).unwrap(), FenceState::Failed(FenceError::PollErr));
    }

    /// A sync_file that polls readable is signalled only with status 1; a
    /// status below 0 is the fence's error (what the kernel's sw_sync sets,
    /// -ENOENT, when a timeline closes under a pending fence).
    #[test]
    fn a_negative_sync_file_status_is_the_fence_error() {
        assert_eq!(readable_state(Some(1)), FenceState::Signalled);
        assert_eq!(readable_state(Some(0)), FenceState::Pending);
        let failed = readable_state(Some(-libc::ENOENT));
        assert_eq!(failed, FenceState::Failed(FenceError::Status(libc::ENOENT)));
        let FenceState::Failed(why) = failed else { unreachable!() };
        assert_eq!(why.to_string(), "ENOENT (No such file or directory)");
        assert_eq!(FenceError::PollErr.to_string(), "POLLERR");
    }
}
