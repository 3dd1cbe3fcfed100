//! Where frames are computed: the CPU, or a GPU through [`gpu`] (CUDA or
//! HIP, loaded at run time). Device kernels are integer twins of the CPU
//! kernels (motion SAD of libvmaf's `integer_motion.c`, the SSE of
//! `integer_psnr.c`) and must match them bit for bit; every floating-point
//! step stays on the host, in the CPU's code. See docs/gpu.md.

pub mod cpu;
pub mod frame;
pub mod gpu;

pub use frame::{DeviceFrame, DeviceMemoryId};

use crate::feature::adm::{AdmParams, AdmSums};
use crate::picture::PlaneView;
use crate::{Error, Result};

/// The lanes vmafx can compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Cpu,
    Cuda,
    Hip,
}

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

/// The integer kernels a device runs; each equals the CPU function named.
pub trait Device: Send {
    fn info(&self) -> &DeviceInfo;
    /// [`crate::feature::motion::sad_scalar`] of two luma planes.
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64>;
    /// [`crate::feature::psnr::sse_u8`] / [`crate::feature::psnr::sse_u16`]
    /// over the top-left `w` x `h`.
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64>;
    /// [`crate::feature::vif::sums_scalar`] of two luma planes: the integer
    /// sums of VIF's four scales (scale 0 zero with `skip_scale0`).
    fn vif_sums(
        &mut self,
        r: &PlaneView,
        d: &PlaneView,
        bpc: u32,
        enhn_gain_limit: f64,
        skip_scale0: bool,
    ) -> Result<[crate::feature::vif::VifSums; 4]>;
    /// The integer ADM sums of two luma planes:
    /// [`crate::feature::adm::sums_scalar`]; finish them with
    /// [`crate::feature::adm::AdmParams::scores`].
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> Result<AdmSums>;
}

/// How many devices of `kind` this machine has; a missing runtime is an
/// error naming it (not zero), so callers can tell the two apart.
pub fn count(kind: DeviceKind) -> Result<usize> {
    match kind {
        DeviceKind::Cpu => Ok(1),
        DeviceKind::Cuda | DeviceKind::Hip => gpu::lane::device_count(kind),
    }
}

/// Opens device `index` of `kind`, compiling (or reading from the cache)
/// its kernels.
pub fn open(kind: DeviceKind, index: usize) -> Result<Box<dyn Device>> {
    match kind {
        DeviceKind::Cpu if index == 0 => Ok(Box::new(cpu::CpuDevice::new())),
        DeviceKind::Cpu => Err(Error::invalid(format!(
            "CPU device {index}: there is one, index 0"
        ))),
        DeviceKind::Cuda => Ok(Box::new(gpu::GpuDevice::cuda(index)?)),
        DeviceKind::Hip => Ok(Box::new(gpu::GpuDevice::hip(index)?)),
    }
}
