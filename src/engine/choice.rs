//! Where a context computes: the CPU, a GPU of vmafx's own, or a caller's
//! CUDA or HIP stream; and opening one lane for that choice.

use crate::device::gpu::GpuDevice;
use crate::device::DeviceKind;
use crate::{Error, Result};

/// Where a context computes its features. On a GPU every extractor runs
/// its device twin (identical values); host pictures are copied to the
/// device once per frame, device pictures ([`PictureSource::device_frame`])
/// are read in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    #[default]
    Cpu,
    /// Device `index` of `vendor`, on streams of vmafx's own.
    Gpu { vendor: GpuVendor, index: usize },
    /// The caller's CUDA context and stream (FFmpeg's
    /// `AVCUDADeviceContext`); each frame's work runs after what the caller
    /// queued there before the frame was scored. Made with the unsafe
    /// [`CallerStream::new`].
    ///
    /// Every lane (one per worker thread) has a non-blocking stream of its
    /// own in the caller's context; per frame it records an event on the
    /// caller's stream and waits for it (no host wait). So a decoder's next
    /// copies on the caller's stream do not queue behind our kernels, and
    /// our read-backs wait for our stream only.
    CudaStream(CallerStream),
    /// The caller's HIP device and stream (`hipStream_t`), as
    /// [`DeviceChoice::CudaStream`] for CUDA: lanes on non-blocking streams
    /// of their own that wait for the caller's stream by event per frame.
    /// Made with the unsafe [`HipCallerStream::new`].
    HipStream(HipCallerStream),
}

/// The GPU runtimes a [`DeviceChoice::Gpu`] opens: a GPU only, so a
/// choice of "the GPU kind CPU" cannot be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuVendor {
    Cuda,
    Hip,
}

impl From<GpuVendor> for DeviceKind {
    fn from(vendor: GpuVendor) -> DeviceKind {
        match vendor {
            GpuVendor::Cuda => DeviceKind::Cuda,
            GpuVendor::Hip => DeviceKind::Hip,
        }
    }
}

/// A caller's `CUcontext` and `CUstream`, as integers. Only
/// [`CallerStream::new`] makes one, and it is unsafe: the driver
/// dereferences these handles, so a safe caller must not be able to invent
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallerStream {
    context: u64,
    stream: u64,
}

impl CallerStream {
    /// # Safety
    /// `context` is a live `CUcontext` and `stream` a stream in it (or 0,
    /// its default stream); both outlive every [`Context`](super::Context) made with them.
    pub unsafe fn new(context: u64, stream: u64) -> Self {
        CallerStream { context, stream }
    }
    pub fn context(&self) -> u64 {
        self.context
    }
    pub fn stream(&self) -> u64 {
        self.stream
    }
}

/// A caller's HIP device ordinal and `hipStream_t` (as an integer). Only
/// [`HipCallerStream::new`] makes one, and it is unsafe, as
/// [`CallerStream::new`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipCallerStream {
    device: usize,
    stream: u64,
}

impl HipCallerStream {
    /// # Safety
    /// `stream` is a live stream of HIP device `device` (or 0, its null
    /// stream) that outlives every [`Context`](super::Context) made with it.
    pub unsafe fn new(device: usize, stream: u64) -> Self {
        HipCallerStream { device, stream }
    }
    pub fn device(&self) -> usize {
        self.device
    }
    pub fn stream(&self) -> u64 {
        self.stream
    }
}

impl DeviceChoice {
    /// Opens one lane for this GPU choice.
    pub(super) fn open_lane(self) -> Result<GpuDevice> {
        Ok(match self {
            DeviceChoice::Cpu => return Err(Error::Internal("a GPU lane for the CPU".into())),
            DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index } => GpuDevice::cuda(index)?,
            DeviceChoice::Gpu { vendor: GpuVendor::Hip, index } => GpuDevice::hip(index)?,
            // SAFETY: CallerStream::new's contract: a live context and a
            // stream in it (or 0, its default stream), outliving the context.
            DeviceChoice::CudaStream(caller) => unsafe {
                GpuDevice::cuda_from_stream(caller.context as usize as _, caller.stream as usize as _)?
            },
            // SAFETY: HipCallerStream::new's contract: a live stream of that
            // device (or 0, its null stream), outliving the context.
            DeviceChoice::HipStream(caller) => unsafe {
                GpuDevice::hip_from_stream(caller.device, caller.stream as usize as _)?
            },
        })
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Cpu => write!(f, "the CPU"),
            DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index } => write!(f, "CUDA device {index}"),
            DeviceChoice::Gpu { vendor: GpuVendor::Hip, index } => write!(f, "HIP device {index}"),
            DeviceChoice::CudaStream(CallerStream { context, stream }) => {
                write!(f, "CUDA context {context:#x}, stream {stream:#x}")
            }
            DeviceChoice::HipStream(HipCallerStream { device, stream }) => {
                write!(f, "HIP device {device}, stream {stream:#x}")
            }
        }
    }
}

