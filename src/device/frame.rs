//! A picture whose planes live in a GPU lane's memory: what the import
//! layer hands the scoring context for device frames (CUDA / HIP pointers,
//! planarised on the device where the producer's layout was semi-planar).

use super::gpu::engine::DevPlane;
use super::DeviceKind;
use crate::picture::PixelFormat;

/// Which device memory the plane pointers are valid in: the vendor and the
/// context (a `CUcontext`; for HIP the device ordinal), compared by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceMemoryId {
    pub kind: DeviceKind,
    pub context: u64,
}

/// Planar (Y, Cb, Cr; luma only for a gray format) planes in device memory,
/// read in place at their pitches, and the work that must finish before they
/// are read.
#[derive(Clone, Debug)]
pub struct DeviceFrame {
    pub memory: DeviceMemoryId,
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    /// One per plane of `format` (chroma planes of odd sizes are ceil(w/2)
    /// wide, as [`PixelFormat::plane_size`] says).
    pub planes: Vec<DevPlane>,
    /// An event (`CUevent` / `hipEvent_t`) recorded after the writes of
    /// these planes; a reader's stream waits on it before its first read.
    /// `None`: the planes are ready now.
    pub ready: Option<u64>,
}

impl DeviceFrame {
    pub fn luma(&self) -> DevPlane {
        self.planes[0]
    }
}
