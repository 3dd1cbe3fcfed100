//! The GPU lanes: CUDA and HIP runtimes and their run-time compilers, all
//! opened with `dlopen` when first used, so the crate builds and runs
//! without either toolkit. Layout follows cudarc (sys types and function
//! tables in [`cuda`] / [`hip`], the normalised table in [`api`], owning
//! handles and the one lane in [`lane`]) and FFmpeg's ffnvcodec loader
//! (exact SONAMEs, required vs optional symbols, errors instead of aborts).
//! See docs/gpu.md.

pub(crate) mod loader;

pub mod adm;
pub mod api;
pub mod cache;
pub mod compile;
pub mod cuda;
pub mod engine;
pub mod hip;
pub mod kernels;
pub mod lane;
pub mod nvrtc;
pub mod psnr;
pub mod rtc;
pub mod vif;

use super::{Device, DeviceInfo, DeviceKind, DeviceMemoryId, FenceKind, MemoryKind};
use crate::feature::vif::VifSums;
use crate::feature::adm::{AdmParams, AdmSums};
use crate::picture::PlaneView;
use crate::{Error, Result};
use engine::{ArrayExtent, ArrayRef, Backend, DevPlane, DeviceEvent, DeviceMemory, Engine, EventRef, Pitched, Scratch};
use kernels::KernelSource;
use std::ffi::c_void;

/// Any backend's buffers and events as one type each.
type DynBuffer = Box<dyn DeviceMemory>;
type DynEvent = Box<dyn DeviceEvent>;

/// Any backend as one type: its functions become indices into the loaded
/// ones and its buffers boxes, so a context can run on a backend this
/// module does not name (the kernel emulator of tests/device_emu.rs, a
/// future vendor). The indices stay inside [`Indexed`]: the engine takes
/// kernels by name ([`engine::Engine::kernels`]).
trait ErasedBackend: Backend<Function = u64, Buffer = DynBuffer, Event = DynEvent> + Send {}
impl<T: Backend<Function = u64, Buffer = DynBuffer, Event = DynEvent> + Send> ErasedBackend for T {}

/// Where a wrapper forwards the [`Backend`] calls that carry no function.
trait Forward {
    type To: Backend + ?Sized;
    fn to(&self) -> &Self::To;
    fn to_mut(&mut self) -> &mut Self::To;
}

/// Those calls, forwarded through [`Forward`].
macro_rules! forward_backend {
    () => {
        fn upload(&mut self, dst: u64, src: &[u8]) -> Result<()> {
            self.to_mut().upload(dst, src)
        }
        fn download(&mut self, dst: &mut [u8], src: u64) -> Result<()> {
            self.to_mut().download(dst, src)
        }
        fn synchronize(&mut self) -> Result<()> {
            self.to_mut().synchronize()
        }
        fn memory(&self) -> DeviceMemoryId {
            self.to().memory()
        }
        fn record_event(&mut self, event: EventRef<'_>) -> Result<()> {
            self.to_mut().record_event(event)
        }
        fn wait_event(&mut self, event: EventRef<'_>) -> Result<()> {
            self.to_mut().wait_event(event)
        }
        fn query_event(&mut self, event: EventRef<'_>) -> Result<bool> {
            self.to_mut().query_event(event)
        }
        fn synchronize_event(&mut self, event: EventRef<'_>) -> Result<()> {
            self.to_mut().synchronize_event(event)
        }
        fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize) -> Result<()> {
            self.to_mut().copy_2d(dst, src, row_bytes, rows)
        }
        fn copy_from_array(&mut self, dst: Pitched, array: ArrayRef, row_bytes: usize, rows: usize) -> Result<()> {
            self.to_mut().copy_from_array(dst, array, row_bytes, rows)
        }
        fn allocation_range(&mut self, ptr: u64) -> Result<Option<(u64, usize)>> {
            self.to_mut().allocation_range(ptr)
        }
        fn array_extent(&mut self, array: ArrayRef) -> Result<Option<ArrayExtent>> {
            self.to_mut().array_extent(array)
        }
    };
}

struct Indexed<B: Backend> {
    inner: B,
    functions: Vec<B::Function>,
}

// SAFETY: as for `Engine`: the functions are module handles valid in the
// backend's context from any thread, and the backend itself is Send.
unsafe impl<B: Backend + Send> Send for Indexed<B> {}

impl<B: Backend> Backend for Indexed<B> {
    type Function = u64;
    type Buffer = DynBuffer;
    type Event = DynEvent;
    fn alloc(&mut self, bytes: usize) -> Result<DynBuffer> {
        Ok(Box::new(self.inner.alloc(bytes)?))
    }
    fn create_event(&mut self) -> Result<DynEvent> {
        Ok(Box::new(self.inner.create_event()?))
    }
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<u64>> {
        let loaded = self.inner.load(kernel)?;
        let first = self.functions.len() as u64;
        self.functions.extend(loaded.iter().copied());
        Ok((first..first + loaded.len() as u64).collect())
    }
    unsafe fn launch(&mut self, f: u64, grid: (u32, u32), args: &mut [*mut c_void]) -> Result<()> {
        let f = *self
            .functions
            .get(f as usize)
            .ok_or_else(|| Error::Internal(format!("GPU function {f} was never loaded")))?;
        // SAFETY: forwarded contract.
        unsafe { self.inner.launch(f, grid, args) }
    }
    forward_backend!();
}

impl<B: Backend> Forward for Indexed<B> {
    type To = B;
    fn to(&self) -> &B {
        &self.inner
    }
    fn to_mut(&mut self) -> &mut B {
        &mut self.inner
    }
}

type DynBackend = Box<dyn ErasedBackend>;

impl Backend for DynBackend {
    type Function = u64;
    type Buffer = DynBuffer;
    type Event = DynEvent;
    fn alloc(&mut self, bytes: usize) -> Result<DynBuffer> {
        (**self).alloc(bytes)
    }
    fn create_event(&mut self) -> Result<DynEvent> {
        (**self).create_event()
    }
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<u64>> {
        (**self).load(kernel)
    }
    unsafe fn launch(&mut self, f: u64, grid: (u32, u32), args: &mut [*mut c_void]) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { (**self).launch(f, grid, args) }
    }
    forward_backend!();
}

impl Forward for DynBackend {
    type To = dyn ErasedBackend;
    fn to(&self) -> &Self::To {
        &**self
    }
    fn to_mut(&mut self) -> &mut Self::To {
        &mut **self
    }
}

/// Pictures per frame whose planes a lane holds uploaded at once.
pub const UPLOAD_PICTURES: usize = 3;

/// Where a host plane is uploaded: picture `picture` (below
/// [`UPLOAD_PICTURES`]), plane `plane` (0 to 2) of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadSlot {
    pub picture: usize,
    pub plane: usize,
}

/// An engine and the buffers host pictures are uploaded into.
struct OnLane<B: Backend> {
    engine: Engine<B>,
    uploads: [[Scratch<B::Buffer>; 3]; UPLOAD_PICTURES],
}

impl<B: Backend> OnLane<B> {
    fn new(engine: Engine<B>) -> Self {
        OnLane { uploads: Default::default(), engine }
    }

    fn upload_plane(&mut self, slot: UploadSlot, plane: &PlaneView) -> Result<DevPlane> {
        let buffer = self
            .uploads
            .get_mut(slot.picture)
            .and_then(|p| p.get_mut(slot.plane))
            .ok_or_else(|| Error::Internal(format!("no upload slot {slot:?}")))?;
        self.engine.upload_plane(buffer, plane)
    }
}

impl<B: Backend> std::ops::Deref for OnLane<B> {
    type Target = Engine<B>;
    fn deref(&self) -> &Engine<B> {
        &self.engine
    }
}

impl<B: Backend> std::ops::DerefMut for OnLane<B> {
    fn deref_mut(&mut self) -> &mut Engine<B> {
        &mut self.engine
    }
}

enum Lane {
    /// A CUDA or HIP device ([`lane::GpuLane`]).
    Native(OnLane<lane::GpuLane>),
    /// A backend given by the caller ([`GpuDevice::from_backend`]).
    Dyn(OnLane<DynBackend>),
}

/// Runs `$body` with `$e` bound to the lane's engine, whatever its kind:
/// a new twin is one line, `on_engine!(&mut self.lane, e => e.twin_dev(..))`.
macro_rules! on_engine {
    ($lane:expr, $e:ident => $body:expr) => {
        match $lane {
            Lane::Native($e) => $body,
            Lane::Dyn($e) => $body,
        }
    };
}

/// A CUDA or HIP device behind the [`Device`] trait, and a scoring
/// context's lane: one engine (one stream, its own scratch and uploads),
/// used by one thread at a time. The `*_dev` methods read planes already in
/// the lane's memory ([`GpuDevice::memory`]).
pub struct GpuDevice {
    info: DeviceInfo,
    memory: DeviceMemoryId,
    lane: Lane,
}

impl GpuDevice {
    /// CUDA device `index` on its primary context.
    pub fn cuda(index: usize) -> Result<Self> {
        Self::on_lane(index, lane::GpuLane::open(DeviceKind::Cuda, index)?, false)
    }

    /// HIP device `index`.
    pub fn hip(index: usize) -> Result<Self> {
        Self::on_lane(index, lane::GpuLane::open(DeviceKind::Hip, index)?, false)
    }

    /// A CUDA device for frames the caller writes on its context and
    /// stream (FFmpeg's `AVCUDADeviceContext`, an application's pipeline):
    /// work is queued on a non-blocking stream of the lane's own in `ctx`,
    /// which waits by event for what the caller queued on `stream` before
    /// each frame ([`GpuDevice::follow_producer`]).
    ///
    /// # Safety
    /// `ctx` is a live context and `stream` a stream in it (or NULL), both
    /// outliving the device.
    pub unsafe fn cuda_from_stream(ctx: cuda::sys::CUcontext, stream: cuda::sys::CUstream) -> Result<Self> {
        // SAFETY: forwarded contract.
        Self::on_lane(0, unsafe { lane::GpuLane::beside_stream(ctx, stream) }?, true)
    }

    /// A HIP device for pictures the caller writes on its `stream` of device
    /// `index` (NULL: the null stream): work is queued on a non-blocking
    /// stream of the lane's own, which waits by event for what the caller
    /// queued on `stream` before each frame ([`GpuDevice::follow_producer`]).
    ///
    /// # Safety
    /// `stream` is a live stream of device `index` (or NULL) that outlives
    /// the device.
    pub unsafe fn hip_from_stream(index: usize, stream: hip::sys::HipStream) -> Result<Self> {
        // SAFETY: forwarded contract.
        Self::on_lane(index, unsafe { lane::GpuLane::beside_stream_of_device(DeviceKind::Hip, index, stream) }?, true)
    }

    /// A device on `lane`. Beside a caller's stream, pictures are the
    /// caller's device memory, ready by stream order: no external memory,
    /// no "ready now" fence.
    fn on_lane(index: usize, lane: lane::GpuLane, beside_caller: bool) -> Result<Self> {
        let kind = lane.kind();
        let device_memory = match kind {
            DeviceKind::Hip => MemoryKind::HipDevice,
            _ => MemoryKind::CudaDevice,
        };
        let mut memory_kinds = vec![MemoryKind::Host, device_memory];
        if lane.api().external_memory && !beside_caller {
            memory_kinds.push(MemoryKind::ExternalFd);
        }
        let fence_kinds = if beside_caller { vec![FenceKind::Stream] } else { vec![FenceKind::None, FenceKind::Stream] };
        let info = DeviceInfo {
            kind,
            index,
            name: lane.name.clone(),
            arch: lane.arch.clone(),
            memory_bytes: lane.memory_bytes,
            memory_kinds,
            fence_kinds,
        };
        let memory = lane.memory();
        Ok(Self { info, memory, lane: Lane::Native(OnLane::new(Engine::new(lane)?)) })
    }

    /// A lane on any [`Backend`]: the kernel emulator in CI, so a whole
    /// scoring context runs the real engine and extractors without a GPU.
    /// Device pictures of another memory than `backend.memory()` are
    /// refused.
    pub fn from_backend<B: Backend + Send + 'static>(backend: B, info: DeviceInfo) -> Result<Self> {
        let memory = backend.memory();
        let erased: DynBackend = Box::new(Indexed { inner: backend, functions: Vec::new() });
        Ok(Self {
            info,
            memory,
            lane: Lane::Dyn(OnLane::new(Engine::new(erased)?)),
        })
    }

    /// The memory this lane's device pointers are valid in.
    pub fn memory(&self) -> DeviceMemoryId {
        self.memory
    }

    /// Copies a host plane into the lane's upload buffer `slot` (grown as
    /// needed, rows at the host stride); queued on the lane's stream.
    pub fn upload_plane(&mut self, slot: UploadSlot, plane: &PlaneView) -> Result<DevPlane> {
        on_engine!(&mut self.lane, e => e.upload_plane(slot, plane))
    }

    /// Makes the lane's later work wait for what its producer queued so
    /// far: the caller's stream of a [`GpuDevice::cuda_from_stream`] or
    /// [`GpuDevice::hip_from_stream`] lane; nothing for a lane of its own.
    pub fn follow_producer(&mut self) -> Result<()> {
        match &mut self.lane {
            Lane::Native(e) => e.backend_mut().follow_caller(),
            Lane::Dyn(_) => Ok(()),
        }
    }

    /// Makes the lane's later work wait for a producer's `event` (a
    /// [`super::DeviceFrame`]'s `ready`).
    pub fn wait_ready(&mut self, event: EventRef<'_>) -> Result<()> {
        on_engine!(&mut self.lane, e => e.backend_mut().wait_event(event))
    }

    /// [`Engine::motion_sad_dev`]: the SAD of two luma planes in the lane's memory.
    pub fn motion_sad_dev(&mut self, prev: DevPlane, cur: DevPlane, bits: u32) -> Result<u64> {
        on_engine!(&mut self.lane, e => e.motion_sad_dev(prev, cur, bits))
    }

    /// [`Engine::psnr_sse_dev`]: the SSE over the top-left `w` x `h` of two
    /// planes in the lane's memory.
    pub fn psnr_sse_dev(&mut self, r: DevPlane, d: DevPlane, w: usize, h: usize) -> Result<u64> {
        on_engine!(&mut self.lane, e => e.psnr_sse_dev(r, d, w, h))
    }

    /// [`Engine::vif_sums_dev`]: the integer sums of VIF's four scales of
    /// two luma planes in the lane's memory.
    pub fn vif_sums_dev(
        &mut self,
        r: DevPlane,
        d: DevPlane,
        bpc: u32,
        enhn_gain_limit: f64,
        skip_scale0: bool,
    ) -> Result<[VifSums; 4]> {
        on_engine!(&mut self.lane, e => e.vif_sums_dev(r, d, bpc, enhn_gain_limit, skip_scale0))
    }

    /// [`Engine::adm_sums_dev`]: ADM's integer sums of two luma planes in
    /// the lane's memory.
    pub fn adm_sums_dev(&mut self, r: DevPlane, d: DevPlane, params: &AdmParams) -> Result<AdmSums> {
        on_engine!(&mut self.lane, e => e.adm_sums_dev(r, d, params))
    }

    /// [`Engine::psnr_sse_regions_dev`]: the SSE of several regions, one
    /// download for all.
    pub fn psnr_sse_regions_dev(&mut self, regions: &[psnr::SseRegion]) -> Result<Vec<u64>> {
        on_engine!(&mut self.lane, e => e.psnr_sse_regions_dev(regions))
    }
}

impl Device for GpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
        on_engine!(&mut self.lane, e => e.motion_sad(prev, cur, bits))
    }
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
        on_engine!(&mut self.lane, e => e.psnr_sse(r, d, w, h))
    }
    fn vif_sums(
        &mut self,
        r: &PlaneView,
        d: &PlaneView,
        bpc: u32,
        enhn_gain_limit: f64,
        skip_scale0: bool,
    ) -> Result<[VifSums; 4]> {
        on_engine!(&mut self.lane, e => e.vif_sums(r, d, bpc, enhn_gain_limit, skip_scale0))
    }
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> Result<AdmSums> {
        on_engine!(&mut self.lane, e => e.adm_sums(r, d, params))
    }
}
