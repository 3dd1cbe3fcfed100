//! HIP for the filter, two ways in:
//!
//! - DRM_PRIME frames scored on a HIP device (`vmafx=device=hip[:N]`,
//!   [`HipDrm`]): the filter's side of the library's dma-buf import
//!   (src/import/external.rs, src/import/gpu.rs), the way AMD's rocDecode
//!   reads VAAPI surfaces.
//! - HIP frames (`AV_PIX_FMT_HIP`, the HIP hwcontext of the 7.1 and 9.0
//!   series: `hwupload` to HIP, HIP filters): handled as CUDA frames are
//!   (src/avfilter/cuda.rs). Planar formats, and nv12 / p016 luma when no
//!   extractor reads chroma, are read in place ([`DevicePicture`], in HIP
//!   device memory); the scoring context runs on that device beside the
//!   `AVHIPDeviceContext`'s stream (`DeviceChoice::HipStream`), its lanes
//!   ordered after that stream by event. p010, and semi-planar chroma when
//!   read, go through the GPU importer ([`super::frames_import`]) on
//!   vmafx's own library stream of the device, which first waits for an
//!   event recorded after FFmpeg's work on the input's stream.
//!
//! For DRM_PRIME:
//! One [`HipDrm`] per filter instance: its importer caches each dma-buf
//! object it has imported (by identity), so a decoder's surface pool is
//! imported once per surface for as long as the filter lives, and the
//! imports go with the filter. Each frame's fences are waited for on the
//! host under `fence_timeout` (ROCm has no sync_file semaphore), exactly as
//! on the CPU path, and the AVFrame stays referenced until the last read of
//! it on the device is done: only then may the decoder reuse the surface.

use std::sync::Arc;
use std::time::Duration;

use super::cuda::DevicePicture;
use super::frame::{FrameHandle, HostFormat, RawPlanes};
use crate::device::gpu::lane::GpuLane;
use crate::device::{DeviceKind, DeviceMemoryId};
use crate::engine::{DeviceChoice, GpuVendor};
use crate::picture::PictureSource;
use crate::import::gpu::{GpuImporter, ReleaseCallback};
use crate::import::FrameDescriptor;
use crate::{Error, Result};

/// The dma-buf importer of HIP device `index`.
pub(crate) struct HipDrm {
    importer: GpuImporter<GpuLane>,
    index: usize,
}

impl HipDrm {
    /// Opens HIP device `index` (loading the HIP runtime): a clear error
    /// naming the option when there is no usable runtime or device.
    pub(crate) fn open(index: usize, read_chroma: bool) -> Result<HipDrm> {
        let importer = GpuImporter::hip(index, read_chroma).map_err(|e| {
            let why = match e {
                Error::Device(why) => why,
                other => other.to_string(),
            };
            Error::Device(format!("device=hip:{index}: HIP device {index} cannot be used here: {why}"))
        })?;
        Ok(HipDrm { importer, index })
    }

    /// The HIP device's index.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Where the scoring context runs: the same device.
    pub(crate) fn scoring_device(&self) -> DeviceChoice {
        DeviceChoice::Gpu { vendor: GpuVendor::Hip, index: self.index }
    }

    /// Imports one DRM_PRIME frame, waiting up to `timeout` for its fences;
    /// `frame` (the AVFrame) is released once the device is past its last
    /// read, or at once when the import is refused.
    pub(crate) fn import(&self, frame: FrameHandle, desc: FrameDescriptor, timeout: Duration) -> Result<Arc<dyn PictureSource>> {
        let release: ReleaseCallback = Box::new(move || drop(frame));
        let imported = self.importer.wait_and_import(desc, timeout, Some(release))?;
        Ok(imported)
    }

    /// dma-buf objects imported so far (each once) and held now.
    pub(crate) fn dma_buf_imports(&self) -> (u64, usize) {
        self.importer.dma_buf_imports()
    }
}

/// An input's HIP device: `AVHIPDeviceContext`'s `device` (the ordinal) and
/// `stream` (a `hipStream_t` as an integer; 0 is the null stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipInput {
    pub device: usize,
    pub stream: u64,
}

/// The device memory HIP frames of device `device` live in, as the
/// scoring lanes on that device name it.
pub(crate) fn memory_of(device: usize) -> DeviceMemoryId {
    DeviceMemoryId { kind: DeviceKind::Hip, context: device as u64 }
}

/// Wraps a HIP frame read in place (planar; semi-planar luma only).
pub(crate) fn wrap_in_place(
    handle: FrameHandle,
    raw: &RawPlanes,
    format: &HostFormat,
    read_chroma: bool,
    device: usize,
    label: &str,
) -> Result<DevicePicture> {
    DevicePicture::wrap(handle, raw, format, read_chroma, memory_of(device), label)
}

/// Checks that the HIP runtime loads, naming the input when it does not.
pub(crate) fn check_runtime(which: &str, format: &str) -> Result<()> {
    crate::device::gpu::hip::runtime().map(|_| ()).map_err(|e| {
        Error::Device(format!("the {which} input is HIP frames ({format}), but the HIP runtime is not usable here: {e}"))
    })
}
