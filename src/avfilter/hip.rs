//! DRM_PRIME frames scored on a HIP device (`vmafx=device=hip[:N]`): the
//! filter's side of the library's dma-buf import (src/import/external.rs,
//! src/import/gpu.rs), the way AMD's rocDecode reads VAAPI surfaces.
//!
//! One [`HipDrm`] per filter instance: its importer caches each dma-buf
//! object it has imported (by identity), so a decoder's surface pool is
//! imported once per surface for as long as the filter lives, and the
//! imports go with the filter. Each frame's fences are waited for on the
//! host under `fence_timeout` (ROCm has no sync_file semaphore), exactly as
//! on the CPU path, and the AVFrame stays referenced until the last read of
//! it on the device is done: only then may the decoder reuse the surface.

use std::sync::Arc;
use std::time::Duration;

use super::frame::FrameHandle;
use crate::device::gpu::lane::GpuLane;
use crate::device::DeviceKind;
use crate::engine::{DeviceChoice, PictureSource};
use crate::import::gpu::{GpuImporter, ReleaseCallback};
use crate::import::FrameDescriptor;
use crate::{Error, Result};

/// The dma-buf importer of HIP device `index`.
pub struct HipDrm {
    importer: GpuImporter<GpuLane>,
    index: usize,
}

impl HipDrm {
    /// Opens HIP device `index` (loading the HIP runtime): a clear error
    /// naming the option when there is no usable runtime or device.
    pub fn open(index: usize, read_chroma: bool) -> Result<HipDrm> {
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
    pub fn index(&self) -> usize {
        self.index
    }

    /// Where the scoring context runs: the same device.
    pub fn scoring_device(&self) -> DeviceChoice {
        DeviceChoice::Gpu { kind: DeviceKind::Hip, index: self.index }
    }

    /// Imports one DRM_PRIME frame, waiting up to `timeout` for its fences;
    /// `frame` (the AVFrame) is released once the device is past its last
    /// read, or at once when the import is refused.
    pub fn import(&self, frame: FrameHandle, desc: FrameDescriptor, timeout: Duration) -> Result<Arc<dyn PictureSource>> {
        let release: ReleaseCallback = Box::new(move || drop(frame));
        let imported = self.importer.wait_and_import(desc, timeout, Some(release))?;
        Ok(imported)
    }

    /// dma-buf objects imported so far (each once) and held now.
    pub fn dma_buf_imports(&self) -> (u64, usize) {
        self.importer.dma_buf_imports()
    }
}
