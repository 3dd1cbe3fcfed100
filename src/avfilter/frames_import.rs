//! The converter of device frames that cannot be read in place (p010's
//! MSB-aligned samples; semi-planar chroma when an extractor reads it), for
//! CUDA frames (`AV_PIX_FMT_CUDA`) and HIP frames (`AV_PIX_FMT_HIP`) alike:
//! a [`GpuImporter`] on a library stream of vmafx's own on the frames'
//! device, which first waits for an event recorded after everything FFmpeg
//! queued on the input's stream (the decoder's or `hwupload`'s copies into
//! the frame). The scoring lanes wait for the frame's `ready` event; the
//! AVFrame is released by the importer's release callback, once the library
//! stream is past every read of the frame.
//!
//! What differs between the vendors is [`FramesDevice`] only: how the
//! library stream is made and how an input's stream is reached. CUDA wraps
//! FFmpeg's stream as a lane and records the event there; HIP has no way
//! to wrap a caller's stream as a lane, so a lane of ours beside it follows
//! it by event (`wait_for_caller_stream`) and records the event after that wait:
//! one hop on the device, never the host.

use std::sync::Arc;

use super::cuda::descriptor;
use super::frame::{FrameHandle, HostFormat, RawPlanes};
use crate::device::gpu::backend::{Backend, DeviceEvent, EventRef};
use crate::device::gpu::lane::{Event, GpuLane};
use crate::device::DeviceKind;
use crate::picture::PictureSource;
use crate::import::gpu::{GpuImportStats, GpuImporter, ReleaseCallback};
use crate::import::AcquireFence;
use crate::{Error, Result};

/// The device an input's frames are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FramesDevice {
    /// CUDA frames: the `AVCUDADeviceContext`'s `CUcontext`.
    Cuda { context: u64 },
    /// HIP frames: the `AVHIPDeviceContext`'s device ordinal.
    Hip { device: usize },
}

impl FramesDevice {
    /// The frames' hardware pixel format, as FFmpeg names it.
    fn hw_format(self) -> &'static str {
        match self {
            FramesDevice::Cuda { .. } => "cuda",
            FramesDevice::Hip { .. } => "hip",
        }
    }

    fn describe(self) -> String {
        match self {
            FramesDevice::Cuda { context } => format!("on the device (CUDA context {context:#x})"),
            FramesDevice::Hip { device } => format!("on HIP device {device}"),
        }
    }

    /// The importer, on a library stream of ours on this device.
    ///
    /// # Safety
    /// A CUDA context is live and outlives the importer.
    unsafe fn importer(self, read_chroma: bool) -> Result<GpuImporter<GpuLane>> {
        let lane = match self {
            // SAFETY: forwarded contract.
            FramesDevice::Cuda { context } => unsafe { GpuLane::own_stream_in(context as usize as _) }?,
            FramesDevice::Hip { device } => GpuLane::open(DeviceKind::Hip, device)?,
        };
        GpuImporter::new(lane, read_chroma)
    }

    /// A lane on which an event recorded after [`GpuLane::wait_for_caller_stream`]
    /// comes after everything queued on `stream` so far.
    ///
    /// # Safety
    /// `stream` is a live stream of this device (0: its default or null
    /// stream) that outlives the lane.
    unsafe fn follower(self, stream: u64) -> Result<GpuLane> {
        let stream = stream as usize as _;
        match self {
            // SAFETY: forwarded contract.
            FramesDevice::Cuda { context } => unsafe { GpuLane::on_caller_stream(context as usize as _, stream) },
            // SAFETY: forwarded contract.
            FramesDevice::Hip { device } => unsafe { GpuLane::beside_stream_of_device(DeviceKind::Hip, device, stream) },
        }
    }
}

/// An input's stream, followed to record each frame's acquire event, which
/// the importer's library stream waits for.
struct InputStream {
    lane: GpuLane,
    event: Event,
}

/// The device inputs' converter: a [`GpuImporter`] on vmafx's library
/// stream of the frames' device, and each device input's stream for the
/// acquire events.
pub(crate) struct FramesImport {
    device: FramesDevice,
    importer: GpuImporter<GpuLane>,
    inputs: [Option<InputStream>; 2],
}

impl FramesImport {
    /// A converter on `device` for the inputs whose frames FFmpeg writes on
    /// `streams` (main, reference; None: not a device input), reading
    /// chroma when `read_chroma`.
    ///
    /// # Safety
    /// A CUDA context is live; each stream is a live stream of `device` (or
    /// 0, its default / null stream); all outlive the returned value (they
    /// are the hw device context's, referenced by the filter's links).
    pub(crate) unsafe fn new(device: FramesDevice, streams: [Option<u64>; 2], format: &HostFormat, read_chroma: bool) -> Result<FramesImport> {
        // SAFETY: forwarded contract.
        unsafe { Self::open(device, streams, read_chroma) }.map_err(|e| {
            let detail = match e {
                Error::Device(m) => m,
                other => other.to_string(),
            };
            Error::Device(format!("converting {} {} frames {}: {detail}", device.hw_format(), format.name, device.describe()))
        })
    }

    /// [`FramesImport::new`] without the error's context.
    ///
    /// # Safety
    /// As [`FramesImport::new`].
    unsafe fn open(device: FramesDevice, streams: [Option<u64>; 2], read_chroma: bool) -> Result<FramesImport> {
        // SAFETY: forwarded contract.
        let importer = unsafe { device.importer(read_chroma) }?;
        let mut inputs = [None, None];
        for (slot, stream) in inputs.iter_mut().zip(streams) {
            if let Some(stream) = stream {
                // SAFETY: forwarded contract (the filter refuses inputs on
                // two devices, so the stream is of `device`).
                let mut lane = unsafe { device.follower(stream) }?;
                let event = lane.create_event()?;
                *slot = Some(InputStream { lane, event });
            }
        }
        Ok(FramesImport { device, importer, inputs })
    }

    /// The importer's counters (converted planes, releases).
    pub(crate) fn stats(&self) -> &Arc<GpuImportStats> {
        self.importer.stats()
    }

    /// Imports one device frame of input `input` (0 main, 1 reference):
    /// the library stream waits for the input's stream, then shifts /
    /// splits what needs it into buffers the frame owns; the AVFrame
    /// (`handle`) is released once the library stream is past every read
    /// of it.
    pub(crate) fn import(
        &mut self,
        input: usize,
        handle: FrameHandle,
        raw: &RawPlanes,
        format: &HostFormat,
        label: &str,
    ) -> Result<Arc<dyn PictureSource>> {
        let mut desc = descriptor(raw, format, label)?;
        let Some(stream) = self.inputs.get_mut(input).and_then(Option::as_mut) else {
            return Err(Error::Internal(format!("{label}: input {input} has no {} stream", self.device.hw_format())));
        };
        // After everything FFmpeg queued on the input's stream so far.
        stream.lane.wait_for_caller_stream()?;
        stream.lane.record_event(EventRef::of(&stream.event))?;
        desc.acquire.push(AcquireFence::DeviceEvent(stream.event.handle()));
        let release: ReleaseCallback = Box::new(move || drop(handle));
        // A refusal hands the callback back; dropping it releases the frame.
        let frame = self.importer.import_with(desc, Some(release)).map_err(|(refusal, _)| Error::from(refusal))?;
        Ok(frame)
    }
}
