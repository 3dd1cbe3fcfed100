//! The GPU lanes: CUDA and HIP runtimes and their run-time compilers, all
//! opened with `dlopen` when first used, so the crate builds and runs
//! without either toolkit. Layout follows cudarc (sys types and function
//! tables, result wrappers, safe guards) and FFmpeg's ffnvcodec loader
//! (exact SONAMEs, required vs optional symbols, errors instead of aborts).
//! See docs/gpu.md.

pub(crate) mod loader;

pub mod adm;
pub mod cache;
pub mod compile;
pub mod cuda;
pub mod cuda_lane;
pub mod engine;
pub mod hip;
pub mod hip_lane;
pub mod kernels;
pub mod nvrtc;
pub mod vif;

use super::{Device, DeviceInfo, DeviceKind, FenceKind, MemoryKind};
use crate::feature::vif::VifSums;
use crate::feature::adm::{AdmParams, AdmSums};
use crate::picture::PlaneView;
use crate::Result;

enum Lane {
    Cuda(engine::Engine<cuda_lane::CudaLane>),
    Hip(engine::Engine<hip_lane::HipLane>),
}

/// A CUDA or HIP device behind the [`Device`] trait.
pub struct GpuDevice {
    info: DeviceInfo,
    lane: Lane,
}

impl GpuDevice {
    pub fn cuda(index: usize) -> Result<Self> {
        let lane = cuda_lane::CudaLane::open(index)?;
        let api = cuda::driver()?;
        let mut memory_kinds = vec![MemoryKind::Host, MemoryKind::CudaDevice];
        if api.cuImportExternalMemory.is_some() && api.cuExternalMemoryGetMappedBuffer.is_some() {
            memory_kinds.push(MemoryKind::ExternalFd);
        }
        let info = DeviceInfo {
            kind: DeviceKind::Cuda,
            index,
            name: lane.name.clone(),
            arch: lane.arch.clone(),
            memory_bytes: lane.memory_bytes,
            memory_kinds,
            fence_kinds: vec![FenceKind::None, FenceKind::Stream],
        };
        Ok(Self {
            info,
            lane: Lane::Cuda(engine::Engine::new(lane)?),
        })
    }

    /// A CUDA device on the caller's context and stream (FFmpeg's
    /// `AVCUDADeviceContext`, an application's pipeline); work is queued on
    /// `stream`, after what the caller queued there.
    ///
    /// # Safety
    /// `ctx` is a live context and `stream` a stream in it (or NULL), both
    /// outliving the device.
    pub unsafe fn cuda_from_stream(
        ctx: cuda::sys::CUcontext,
        stream: cuda::sys::CUstream,
    ) -> Result<Self> {
        // SAFETY: forwarded contract.
        let lane = unsafe { cuda_lane::CudaLane::from_stream(ctx, stream) }?;
        let info = DeviceInfo {
            kind: DeviceKind::Cuda,
            index: 0,
            name: lane.name.clone(),
            arch: lane.arch.clone(),
            memory_bytes: lane.memory_bytes,
            memory_kinds: vec![MemoryKind::Host, MemoryKind::CudaDevice],
            fence_kinds: vec![FenceKind::Stream],
        };
        Ok(Self {
            info,
            lane: Lane::Cuda(engine::Engine::new(lane)?),
        })
    }

    pub fn hip(index: usize) -> Result<Self> {
        let lane = hip_lane::HipLane::open(index)?;
        let api = hip::runtime()?;
        let mut memory_kinds = vec![MemoryKind::Host, MemoryKind::HipDevice];
        if api.hipImportExternalMemory.is_some() && api.hipExternalMemoryGetMappedBuffer.is_some() {
            memory_kinds.push(MemoryKind::ExternalFd);
        }
        let info = DeviceInfo {
            kind: DeviceKind::Hip,
            index,
            name: lane.name.clone(),
            arch: lane.arch.clone(),
            memory_bytes: 0,
            memory_kinds,
            fence_kinds: vec![FenceKind::None, FenceKind::Stream],
        };
        Ok(Self {
            info,
            lane: Lane::Hip(engine::Engine::new(lane)?),
        })
    }
}

impl Device for GpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
        match &mut self.lane {
            Lane::Cuda(e) => e.motion_sad(prev, cur, bits),
            Lane::Hip(e) => e.motion_sad(prev, cur, bits),
        }
    }
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
        match &mut self.lane {
            Lane::Cuda(e) => e.psnr_sse(r, d, w, h),
            Lane::Hip(e) => e.psnr_sse(r, d, w, h),
        }
    }
    fn vif_sums(
        &mut self,
        r: &PlaneView,
        d: &PlaneView,
        bpc: u32,
        enhn_gain_limit: f64,
        skip_scale0: bool,
    ) -> Result<[VifSums; 4]> {
        match &mut self.lane {
            Lane::Cuda(e) => e.vif_sums(r, d, bpc, enhn_gain_limit, skip_scale0),
            Lane::Hip(e) => e.vif_sums(r, d, bpc, enhn_gain_limit, skip_scale0),
        }
    }
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> Result<AdmSums> {
        match &mut self.lane {
            Lane::Cuda(e) => e.adm_sums(r, d, params),
            Lane::Hip(e) => e.adm_sums(r, d, params),
        }
    }
}
