//! Device placement: a worker's GPU lane and how each picture of a frame
//! gets on it once (read in place, kept from the last frame, or copied into
//! a scratch slot), and the refusals of pictures it cannot reach.

use std::sync::Arc;

use crate::device::gpu::{GpuDevice, UploadSlot};
use crate::device::{DeviceFrame, DeviceKind, DeviceMemoryId};
use crate::picture::{DevPlane, HostCopies, HostCopy, Picture, PictureSource};
use crate::{Error, Result};

/// Pictures per frame whose planes a lane holds uploaded at once:
/// reference, distorted, previous reference, previous distorted, the
/// reference two frames back.
pub(super) const SLOTS: usize = crate::device::gpu::UPLOAD_PICTURES;

/// A worker's GPU lane and the pictures on it.
pub(super) struct LaneState {
    pub(super) device: GpuDevice,
    /// Planes each picture needs there (chroma only when an extractor of
    /// the context reads it).
    pub(super) planes: usize,
    /// Planes the previous reference needs (chroma only when a temporal
    /// extractor reads it).
    pub(super) prev_planes: usize,
    /// The last frame's reference copied here, with its planes and scratch
    /// slot: the next frame's previous reference when this lane scores that
    /// frame, so a run on one lane copies each picture once.
    pub(super) kept: Option<(Arc<dyn PictureSource>, DeviceFrame, usize)>,
    /// Host pictures copied to a device, context-wide.
    pub(super) uploads: HostCopies,
}

impl LaneState {
    /// `picture` on the lane: in place, kept from the last frame, or copied
    /// into a scratch slot not in `used` (returned in the second field).
    pub(super) fn place(
        &mut self,
        picture: &Arc<dyn PictureSource>,
        planes: usize,
        used: &mut [bool; SLOTS],
        index: u32,
        which: &str,
    ) -> Result<(DeviceFrame, Option<usize>)> {
        let memory = self.device.memory();
        if let Some(frame) = picture.device_frame().filter(|f| f.memory == memory) {
            if frame.planes.len() < planes {
                return Err(Error::invalid(format!(
                    "frame {index}: the {which} device picture has luma only; this context's extractors read chroma"
                )));
            }
            if let Some(event) = frame.ready {
                // SAFETY: a device frame's `ready` is an event of its
                // memory's device, live while the picture is (DeviceFrame).
                self.device.wait_ready(unsafe { crate::device::gpu::backend::EventRef::from_handle(event) })?;
            }
            return Ok((frame.clone(), None));
        }
        if let Some((kept, frame, slot)) = &self.kept {
            if same_picture(kept, picture) && frame.planes.len() >= planes {
                used[*slot] = true;
                return Ok((frame.clone(), Some(*slot)));
            }
        }
        let host = placed_host(picture.as_ref(), memory, index, which)?;
        let kept_slot = self.kept.as_ref().map(|k| k.2);
        let slot = (0..SLOTS)
            .filter(|&i| !used[i])
            .min_by_key(|&i| Some(i) == kept_slot)
            .ok_or_else(|| Error::Internal(format!("more than {SLOTS} pictures in one frame")))?;
        if Some(slot) == kept_slot {
            self.kept = None;
        }
        used[slot] = true;
        let planes = (0..planes)
            .map(|p| self.device.upload_plane(UploadSlot { picture: slot, plane: p }, &host.plane(p)))
            .collect::<Result<Vec<_>>>()?;
        self.uploads.count(HostCopy::ToDevice, planes.len(), planes.iter().map(DevPlane::span).sum());
        let frame = DeviceFrame {
            memory,
            format: host.format(),
            width: host.width(),
            height: host.height(),
            planes,
            ready: None,
        };
        Ok((frame, Some(slot)))
    }
}

pub(super) fn same_picture(a: &Arc<dyn PictureSource>, b: &Arc<dyn PictureSource>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The host planes of a picture a lane of `memory` must copy; a device
/// picture of another memory without host planes is refused, naming both.
pub(super) fn placed_host<'p>(
    p: &'p dyn PictureSource,
    memory: DeviceMemoryId,
    index: u32,
    which: &str,
) -> Result<Picture<'p>> {
    match (p.host(), p.device_frame()) {
        (Some(h), _) => Ok(h),
        (None, Some(f)) => Err(Error::Mismatch(format!(
            "frame {index}: the {which} picture is in {}, and this context scores in {}",
            describe_memory(f.memory),
            describe_memory(memory)
        ))),
        (None, None) => Err(Error::invalid(format!("frame {index}: the {which} picture has no planes"))),
    }
}

pub(super) fn describe_memory(m: DeviceMemoryId) -> String {
    match m.kind {
        DeviceKind::Cuda => format!("CUDA context {:#x}", m.context),
        DeviceKind::Hip => format!("HIP device {}", m.context),
        DeviceKind::Cpu => "host memory".into(),
    }
}

/// What a worker scores frames with: the CPU, or its own GPU lane.
pub(super) enum WorkerDevice {
    Cpu,
    Device(Box<LaneState>),
}

