//! What every lane does with a dma-buf before it reads one, the same way on
//! the CPU (src/import/cpu.rs) and on a GPU (src/import/gpu.rs): size the
//! object (refusing a closed fd, an empty object, a declared size past the
//! real one), and poll the frame's host-side acquire fences — the caller's
//! host fences and sync_files, then each dma-buf's implicit writer fences
//! (DMA_BUF_IOCTL_EXPORT_SYNC_FILE, READ) — answering BUSY, naming the
//! fence, while one is pending, and a final error (DEVICE) for one that
//! signalled with an error (a failed producer). Nothing waits here:
//! `wait_and_import` retries BUSY only (the BUSY / `fence_timeout` rule of
//! docs/drm-prime.md).

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use super::layout::err;
use super::sys::{self, FenceState};
use super::{AcquireFence, FrameDescriptor, ImportError, ImportErrorKind as Kind, Memory};

/// The real size of dma-buf object `oi` (`lseek` to its end), refused when
/// the fd cannot be sized, the object is empty, or `declared` is larger.
pub(super) fn object_size(label: &str, oi: usize, fd: &OwnedFd, declared: u64) -> Result<u64, ImportError> {
    let real = sys::object_size(fd.as_fd()).map_err(|e| {
        let why = if e.raw_os_error() == Some(nix::libc::EBADF) { "a closed fd?" } else { "not a dma-buf" };
        err(Kind::Invalid, format!("{label}: object {oi}: cannot size fd {} ({e}); {why}", fd.as_raw_fd()))
    })?;
    check_declared(label, oi, real, declared)?;
    Ok(real)
}

/// Refuses an empty object or a declared size past the real one.
pub(super) fn check_declared(label: &str, oi: usize, real: u64, declared: u64) -> Result<(), ImportError> {
    if real == 0 {
        return Err(err(Kind::Invalid, format!("{label}: object {oi} is empty")));
    }
    if declared > real {
        return Err(err(Kind::Range, format!("{label}: object {oi} declares {declared} bytes, it has {real}")));
    }
    Ok(())
}

/// Polls the frame's host-side acquire fences without waiting: each
/// dma-buf's implicit writer fences (exported first, when
/// `desc.implicit_sync`), the caller's host fences and sync_files. BUSY
/// names the first pending one. Device events and GL syncs are the lane's:
/// `device_fence(i, fence)` accepts (queueing a device wait) or refuses
/// each.
pub(super) fn poll_acquire(
    desc: &FrameDescriptor,
    mut device_fence: impl FnMut(usize, &AcquireFence) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let label = &desc.label;
    let mut implicit = Vec::new();
    if desc.implicit_sync {
        for (oi, o) in desc.objects.iter().enumerate() {
            if let Memory::DmaBuf(fd) = &o.memory {
                let sf = sys::export_read_sync_file(fd.as_fd()).map_err(|e| {
                    err(Kind::Device, format!("{label}: object {oi}: DMA_BUF_IOCTL_EXPORT_SYNC_FILE failed ({e}): not a dma-buf, or a kernel before 6.0"))
                })?;
                implicit.push((oi, sf));
            }
        }
    }
    for (i, f) in desc.acquire.iter().enumerate() {
        let pending = match f {
            AcquireFence::None => false,
            AcquireFence::Host(h) => !h.is_signalled(),
            AcquireFence::SyncFile(fd) => match sys::fence_state(fd.as_fd(), 0) {
                Ok(FenceState::Pending) => true,
                Ok(FenceState::Signalled) => false,
                // Final: the producer failed, so waiting longer cannot help.
                Ok(FenceState::Failed(why)) => {
                    return Err(err(Kind::Device, format!("{label}: acquire fence {i} ({}) signalled an error: {why}", f.describe())));
                }
                Err(e) => return Err(err(Kind::Invalid, format!("{label}: acquire fence {i} ({}): {e}", f.describe()))),
            },
            AcquireFence::DeviceEvent(_) | AcquireFence::GlSync(_) => {
                device_fence(i, f)?;
                false
            }
        };
        if pending {
            return Err(err(Kind::Busy, format!("{label}: acquire fence {i} ({}) has not signalled", f.describe())));
        }
    }
    // The fences an earlier poll found pending first (a fresh export no
    // longer shows one that has failed), then the fresh export. An object
    // whose held fence is still pending keeps that one: the writers the
    // fresh export adds are exported again once it has signalled.
    let mut held = desc.implicit_pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut pending = Vec::new();
    for (oi, sf) in std::mem::take(&mut *held) {
        if implicit_state(label, oi, &sf)? != FenceState::Signalled {
            pending.push((oi, sf));
        }
    }
    for (oi, sf) in implicit {
        if !pending.iter().any(|(held_oi, _)| *held_oi == oi) && implicit_state(label, oi, &sf)? != FenceState::Signalled {
            pending.push((oi, sf));
        }
    }
    let first_pending = pending.iter().map(|(oi, _)| *oi).min();
    *held = pending;
    match first_pending {
        Some(oi) => Err(err(Kind::Busy, format!("{} has not signalled", implicit_fence(label, oi)))),
        None => Ok(()),
    }
}

fn implicit_fence(label: &str, oi: usize) -> String {
    format!("{label}: the implicit write fence of object {oi} (dma-buf sync_file)")
}

/// Where one implicit fence stands; a failed one is a final error.
fn implicit_state(label: &str, oi: usize, sf: &OwnedFd) -> Result<FenceState, ImportError> {
    match sys::fence_state(sf.as_fd(), 0) {
        Ok(FenceState::Failed(why)) => Err(err(Kind::Device, format!("{} signalled an error: {why}", implicit_fence(label, oi)))),
        Ok(state) => Ok(state),
        Err(e) => Err(err(Kind::Device, format!("{}: {e}", implicit_fence(label, oi)))),
    }
}
