//! Where frames are computed: the CPU, or a GPU through [`gpu`] (CUDA or
//! HIP, loaded at run time). Each metric's device twin lives beside the
//! metric (`src/feature/<metric>/gpu.rs`), written against the lane's
//! device interface ([`gpu::twin::TwinLane`]); its integer sums match the
//! CPU's bit for bit and every floating-point step stays on the host, in
//! the CPU's code. See docs/gpu.md.

pub(crate) mod gpu;

/// The device frame types are picture data (src/picture/device_frame.rs):
/// the import layers and the engine meet there; `device` only reads them.
pub use crate::picture::{DeviceFrame, DeviceKind, DeviceMemoryId};

use crate::Result;

/// Where a picture's samples can live for a device to read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Host memory, copied to the device by the lane.
    Host,
    /// `CUdeviceptr` in the lane's context.
    CudaDevice,
    /// `hipMalloc` memory on the lane's device.
    HipDevice,
    /// An exportable fd (dma-buf / opaque fd) imported as external memory;
    /// listed when the runtime has the optional import symbols.
    ExternalFd,
}

/// How a producer can say a picture is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceKind {
    /// The picture is ready when handed over (CPU, synchronous callers).
    None,
    /// Work queued before it on the lane's (or the caller's) stream.
    Stream,
}

/// What a device is and what it accepts.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub kind: DeviceKind,
    pub index: usize,
    pub name: String,
    /// `compute_90`, `gfx90a:sramecc+:xnack-`, or the CPU level.
    pub arch: String,
    pub memory_bytes: usize,
    pub memory_kinds: Vec<MemoryKind>,
    pub fence_kinds: Vec<FenceKind>,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} {}: {} ({}, {} MiB), memory {:?}, fences {:?}",
            self.kind,
            self.index,
            self.name,
            self.arch,
            self.memory_bytes >> 20,
            self.memory_kinds,
            self.fence_kinds
        )
    }
}

/// How many devices of `kind` this machine has; a missing runtime is an
/// error naming it (not zero), so callers can tell the two apart.
pub fn count(kind: DeviceKind) -> Result<usize> {
    match kind {
        DeviceKind::Cpu => Ok(1),
        DeviceKind::Cuda | DeviceKind::Hip => gpu::lane::device_count(kind),
    }
}
