//! A picture whose planes live in a GPU lane's memory: what the import
//! layer hands the scoring context for device frames (CUDA / HIP pointers,
//! planarised on the device where the producer's layout was semi-planar).
//! Plain data: the rooms that make device frames (import, avfilter) and the
//! one that reads them (engine, device) all point here, and this points at
//! nothing but the pixel formats beside it.

use super::PixelFormat;

/// The lanes vmafx can compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cpu,
    Cuda,
    Hip,
}

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

/// A plane in device memory (a `CUdeviceptr`, a HIP pointer), read in
/// place: `pitch` bytes from one row to the next, `width` samples of
/// `bytes_per_sample` bytes each per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPlane {
    pub ptr: u64,
    pub pitch: usize,
    pub width: usize,
    pub height: usize,
    pub bytes_per_sample: usize,
}

impl DevPlane {
    /// Bytes the plane spans: up to the end of its last row.
    pub fn span(&self) -> usize {
        (self.height.max(1) - 1) * self.pitch + self.width * self.bytes_per_sample
    }
}

impl DeviceFrame {
    pub fn luma(&self) -> DevPlane {
        self.planes[0]
    }
}
