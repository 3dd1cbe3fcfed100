//! The GPU lanes: CUDA and HIP runtimes and their run-time compilers, all
//! opened with `dlopen` when first used, so the crate builds and runs
//! without either toolkit. Layout follows cudarc (sys types and function
//! tables in [`cuda`] / [`hip`], the normalised table in [`api`], owning
//! handles and the one lane in [`lane`]) and FFmpeg's ffnvcodec loader
//! (exact SONAMEs, required vs optional symbols, errors instead of aborts).
//! See docs/gpu.md.

pub(crate) mod loader;

pub(crate) mod api;
pub(crate) mod cache;
pub(crate) mod compile;
pub(crate) mod cuda;
pub(crate) mod embedded;
pub(crate) mod backend;
pub(crate) mod hip;
pub(crate) mod kernel_key;
pub(crate) mod kernels;
pub(crate) mod lane;
pub(crate) mod nvrtc;
pub(crate) mod rtc;
pub(crate) mod twin;

use super::{DeviceInfo, DeviceKind, DeviceMemoryId, FenceKind, MemoryKind};
use crate::picture::PlaneView;
use crate::{Error, Result};
use backend::{ArrayExtent, ArrayRef, Backend, DevPlane, DeviceEvent, DeviceMemory, KernelRunner, EventRef, Pitched, Scratch};
use kernels::KernelSource;
use std::ffi::c_void;

/// Any backend's buffers and events as one type each.
type DynBuffer = Box<dyn DeviceMemory>;
type DynEvent = Box<dyn DeviceEvent>;

/// Any backend as one type: its functions become indices into the loaded
/// ones and its buffers boxes, so a context's lane is one type whether it
/// runs on CUDA, HIP, or a backend this module does not name (the kernel
/// emulator of tests/device/emu.rs, a future vendor). The indices stay inside [`Indexed`]: the kernel runner takes
/// kernels by name ([`backend::KernelRunner::kernels`]).
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
        fn wait_for_caller_stream(&mut self) -> Result<()> {
            self.to_mut().wait_for_caller_stream()
        }
        fn imports_dma_bufs(&self) -> bool {
            self.to().imports_dma_bufs()
        }
        fn import_dma_buf(&mut self, fd: std::os::fd::OwnedFd, size: u64) -> Result<u64> {
            self.to_mut().import_dma_buf(fd, size)
        }
        fn destroy_external(&mut self, memory: u64) {
            self.to_mut().destroy_external(memory)
        }
    };
}

struct Indexed<B: Backend> {
    inner: B,
    functions: Vec<B::Function>,
}

// SAFETY: as for `KernelRunner`: the functions are module handles valid in the
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
    fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> Result<DynBuffer> {
        Ok(Box::new(self.inner.map_external(memory, offset, size)?))
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

/// A lane's backend with its type erased ([`Indexed`]).
pub struct DynBackend(Box<dyn ErasedBackend>);

impl Backend for DynBackend {
    type Function = u64;
    type Buffer = DynBuffer;
    type Event = DynEvent;
    fn alloc(&mut self, bytes: usize) -> Result<DynBuffer> {
        self.0.alloc(bytes)
    }
    fn create_event(&mut self) -> Result<DynEvent> {
        self.0.create_event()
    }
    fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> Result<DynBuffer> {
        self.0.map_external(memory, offset, size)
    }
    fn load(&mut self, kernel: &KernelSource) -> Result<Vec<u64>> {
        self.0.load(kernel)
    }
    unsafe fn launch(&mut self, f: u64, grid: (u32, u32), args: &mut [*mut c_void]) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.0.launch(f, grid, args) }
    }
    forward_backend!();
}

impl Forward for DynBackend {
    type To = dyn ErasedBackend;
    fn to(&self) -> &Self::To {
        &*self.0
    }
    fn to_mut(&mut self) -> &mut Self::To {
        &mut *self.0
    }
}

/// Pictures per frame whose planes a lane holds uploaded at once.
pub(crate) const UPLOAD_PICTURES: usize = 5;

/// Where a host plane is uploaded: picture `picture` (below
/// [`UPLOAD_PICTURES`]), plane `plane` (0 to 2) of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadSlot {
    pub picture: usize,
    pub plane: usize,
}

/// A context's lane as features see it: the kernel runner over the lane's
/// backend with its type erased, the device interface of their
/// twins ([`twin::TwinLane`]) over whatever backend the lane runs on.
pub(crate) type ErasedRunner = KernelRunner<DynBackend>;

/// A scoring context's lane on a CUDA or HIP device (or a backend the
/// caller gives): one kernel runner (one stream, its own scratch) and the buffers
/// host pictures are uploaded into, used by one thread at a time. Features
/// reach it only through [`GpuDevice::twins`].
pub struct GpuDevice {
    info: DeviceInfo,
    memory: DeviceMemoryId,
    uploads: [[Scratch<DynBuffer>; 3]; UPLOAD_PICTURES],
    /// Last, so the uploads are freed while the lane still holds its stream.
    runner: ErasedRunner,
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
    /// each frame ([`GpuDevice::wait_for_caller_stream`]).
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
    /// queued on `stream` before each frame ([`GpuDevice::wait_for_caller_stream`]).
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
        Self::from_backend(lane, info)
    }

    /// A lane on any [`Backend`]: the CUDA and HIP lanes, and the kernel
    /// emulator in CI, so a whole scoring context runs the real kernel runner and
    /// extractors without a GPU. Device pictures of another memory than
    /// `backend.memory()` are refused.
    pub fn from_backend<B: Backend + Send + 'static>(backend: B, info: DeviceInfo) -> Result<Self> {
        let memory = backend.memory();
        let erased = DynBackend(Box::new(Indexed { inner: backend, functions: Vec::new() }));
        Ok(Self { info, memory, uploads: Default::default(), runner: KernelRunner::new(erased)? })
    }

    /// What the lane is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The memory this lane's device pointers are valid in.
    pub fn memory(&self) -> DeviceMemoryId {
        self.memory
    }

    /// The lane's kernels, scratch, launches and read-backs, for the
    /// features' device twins (`src/feature/<metric>/gpu.rs`).
    pub fn twins(&mut self) -> &mut ErasedRunner {
        &mut self.runner
    }

    /// Copies a host plane into the lane's upload buffer `slot` (grown as
    /// needed, rows at the host stride); queued on the lane's stream.
    pub fn upload_plane(&mut self, slot: UploadSlot, plane: &PlaneView) -> Result<DevPlane> {
        let buffer = self
            .uploads
            .get_mut(slot.picture)
            .and_then(|p| p.get_mut(slot.plane))
            .ok_or_else(|| Error::Internal(format!("no upload slot {slot:?}")))?;
        self.runner.upload_plane(buffer, plane)
    }

    /// Makes the lane's later work wait for what its producer queued so
    /// far: the caller's stream of a [`GpuDevice::cuda_from_stream`] or
    /// [`GpuDevice::hip_from_stream`] lane; nothing for a lane of its own.
    pub fn wait_for_caller_stream(&mut self) -> Result<()> {
        self.runner.backend_mut().wait_for_caller_stream()
    }

    /// Makes the lane's later work wait for a producer's `event` (a
    /// [`super::DeviceFrame`]'s `ready`).
    pub fn wait_ready(&mut self, event: EventRef<'_>) -> Result<()> {
        self.runner.backend_mut().wait_event(event)
    }
}
