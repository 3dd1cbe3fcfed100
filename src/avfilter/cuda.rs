//! CUDA frames (`AV_PIX_FMT_CUDA`: NVDEC output, CUDA filters) for the
//! filter: the planes stay in device memory and go to the scoring context
//! as a [`DeviceFrame`] in the frame's own `CUcontext`; the context scores
//! on that device, queued on the `AVCUDADeviceContext`'s stream, so it reads
//! after the decoder's copies into the frame without any host wait.
//!
//! Two paths, chosen per format at configure ([`needs_device_work`]):
//! - In place ([`DevicePicture`]): every plane of a planar sw_format
//!   (yuv420p, yuv420p10le, yuv444p16le, gray, ...), and the luma of nv12 /
//!   p016 when no extractor reads chroma (the VMAF models read only luma;
//!   the picture is then 4:0:0, as for software nv12). Nothing is queued.
//! - Through the GPU importer ([`super::frames_import`], src/import/gpu.rs): p010's
//!   MSB-aligned samples (shifted down to the LSBs the core expects) and
//!   semi-planar chroma when an extractor reads it (deinterleaved into U and
//!   V planes), by kernels/convert.cu on a library stream of the frames' own
//!   context. That stream first waits for an event recorded on the input's
//!   stream (the decoder's writes); the scoring lanes wait for the frame's
//!   `ready` event; nv12 / p016 luma is still read in place. The AVFrame is
//!   released by the importer's release callback, once the library stream
//!   is past every read of the frame.
//!
//! No frame data goes through host memory on either path.

use super::frame::{FrameHandle, HostFormat, Layout, RawPlanes};
use crate::device::gpu::backend::DevPlane;
use crate::device::{DeviceFrame, DeviceMemoryId};
use crate::picture::PictureSource;
use crate::import::{DrmFourcc, DrmModifier, FrameDescriptor, Layer, Memory, Object, PlaneRef};
use crate::picture::{Chroma, Picture};
use crate::{Error, Result};

/// An input's CUDA device: `AVCUDADeviceContext`'s `cuda_ctx` and `stream`
/// as integers (`CUcontext`, `CUstream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaInput {
    pub context: u64,
    pub stream: u64,
}

/// A device frame (CUDA, or HIP: src/avfilter/hip.rs) wrapped for the
/// engine: its planes in device memory and the AVFrame that owns them,
/// released when the engine drops the picture (the context drops it only
/// once its reads on the device are done).
pub(crate) struct DevicePicture {
    frame: DeviceFrame,
    _handle: FrameHandle,
}

impl PictureSource for DevicePicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

impl DevicePicture {
    /// Wraps a device frame whose planes `raw` (device pointers and
    /// pitches, as in the AVFrame) have the layout `format` (the frames
    /// context's sw_format), in device memory `memory` (a CUcontext, or a
    /// HIP device). `label` names the frame in errors ("main frame 3 (cuda
    /// nv12)").
    ///
    /// Safe: nothing is dereferenced here; the pointers are checked for
    /// presence and the pitches for length, and are read later by the GPU
    /// context on that memory, where an invalid one is a device error.
    pub(crate) fn wrap(
        handle: FrameHandle,
        raw: &RawPlanes,
        format: &HostFormat,
        read_chroma: bool,
        memory: DeviceMemoryId,
        label: &str,
    ) -> Result<DevicePicture> {
        let (width, height) = (raw.width, raw.height);
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("{label}: empty frame {width}x{height}")));
        }
        if needs_device_work(format, read_chroma) {
            return Err(Error::Internal(format!(
                "{label}: {} needs conversion on the device; it goes through the GPU importer",
                format.name
            )));
        }
        let core = format.core_format(read_chroma);
        let bytes_per_sample = if format.bits > 8 { 2 } else { 1 };
        let plane_count = match core.chroma {
            Chroma::Yuv400 => 1,
            _ => 3,
        };
        let mut planes = Vec::with_capacity(plane_count);
        for i in 0..plane_count {
            let (w, h) = core.plane_size(i, width, height);
            let (ptr, pitch) = (raw.data[i] as u64, raw.linesize[i]);
            if ptr == 0 {
                return Err(Error::invalid(format!("{label}: plane {i} has no device pointer")));
            }
            if pitch < 0 {
                return Err(Error::NotSupported(format!(
                    "{label}: plane {i} is bottom-up (line size {pitch}); device frames are read in place, top-down"
                )));
            }
            let pitch = pitch as usize;
            if pitch < w * bytes_per_sample {
                return Err(Error::invalid(format!(
                    "{label}: plane {i}: line size {pitch} is shorter than a row of {w} samples"
                )));
            }
            if bytes_per_sample == 2 && (ptr % 2 != 0 || pitch % 2 != 0) {
                return Err(Error::invalid(format!(
                    "{label}: plane {i}: 16-bit samples at an odd address or pitch"
                )));
            }
            planes.push(DevPlane { ptr, pitch, width: w, height: h, bytes_per_sample });
        }
        Ok(DevicePicture {
            frame: DeviceFrame {
                memory,
                format: core,
                width,
                height,
                planes,
                // The context's lanes follow the frames' own stream
                // (CudaInput::stream, HipInput::stream) by event, behind
                // the producer's copies.
                ready: None,
            },
            _handle: handle,
        })
    }
}

/// Whether frames of `format` need work on the device before the core can
/// read them: MSB-aligned samples (p010) always, semi-planar chroma when an
/// extractor reads it. Those go through [`super::frames_import`]; the others are read
/// in place ([`DevicePicture`]).
pub(crate) fn needs_device_work(format: &HostFormat, read_chroma: bool) -> bool {
    format.msb_aligned || (format.layout == Layout::SemiPlanar && read_chroma)
}

/// The import descriptor of a semi-planar CUDA or HIP frame (nv12, p010le,
/// p016le): two objects, the AVFrame's `data[0]` (Y) and `data[1]` (UV) at
/// their line sizes, no fences (the caller adds the acquire event). Public
/// for the emulator tests (tests/device/emu.rs), which import it as the
/// filter does.
pub fn descriptor(raw: &RawPlanes, format: &HostFormat, label: &str) -> Result<FrameDescriptor> {
        let (width, height) = (raw.width, raw.height);
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("{label}: empty frame {width}x{height}")));
        }
        let fourcc = match (format.layout, format.bits) {
            (Layout::SemiPlanar, 8) => DrmFourcc::Nv12,
            (Layout::SemiPlanar, 10) => DrmFourcc::P010,
            (Layout::SemiPlanar, 16) => DrmFourcc::P016,
            _ => {
                return Err(Error::Internal(format!(
                    "{label}: {} is read in place, not imported",
                    format.name
                )))
            }
        };
        let mut desc = FrameDescriptor::new(label, width, height, format.bits);
        let mut planes = Vec::with_capacity(2);
        for i in 0..2 {
            let (ptr, pitch) = (raw.data[i] as u64, raw.linesize[i]);
            if ptr == 0 {
                return Err(Error::invalid(format!("{label}: plane {i} has no device pointer")));
            }
            if pitch < 0 {
                return Err(Error::NotSupported(format!(
                    "{label}: plane {i} is bottom-up (line size {pitch}); device frames are read top-down"
                )));
            }
            // Object sizes unknown here: the importer asks the driver for
            // the allocations' extents (cuMemGetAddressRange,
            // hipMemGetAddressRange).
            desc.objects.push(Object { memory: Memory::DevicePointer(ptr), size: 0, modifier: DrmModifier::Linear });
            planes.push(PlaneRef { object: i, offset: 0, pitch: pitch as u64 });
        }
        desc.layers.push(Layer { format: fourcc, planes });
        desc.implicit_sync = false;
        Ok(desc)
}

/// Checks that CUDA can be used at all: the driver library loads and
/// `cuInit` succeeds. A clear error otherwise, naming the input.
pub(crate) fn check_driver(which: &str, format: &str) -> Result<()> {
    crate::device::gpu::cuda::driver().map(|_| ()).map_err(|e| {
        Error::Device(format!(
            "the {which} input is CUDA frames ({format}), but the CUDA driver is not usable here: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceKind;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static FREED: AtomicUsize = AtomicUsize::new(0);
    /// The tests count released frames in one counter: one test at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    unsafe extern "C" fn count_free(_: *mut c_void) {
        FREED.fetch_add(1, Ordering::SeqCst);
    }

    /// Fake device pointers: never dereferenced on the host.
    fn raw(data: [u64; 4], linesize: [i32; 4], width: usize, height: usize) -> RawPlanes {
        RawPlanes {
            data: data.map(|p| p as *const u8),
            linesize,
            width,
            height,
            memory: super::super::frame::FrameMemory::Cuda { context: 0xc0 },
        }
    }

    fn wrap(r: &RawPlanes, fmt: &str, read_chroma: bool) -> Result<DevicePicture> {
        // SAFETY: a fake frame: `count_free` only counts and never reads the
        // pointer, so any value is a frame released exactly once by it.
        let handle = unsafe { FrameHandle::new(8 as *mut c_void, count_free) };
        DevicePicture::wrap(handle, r, HostFormat::by_name(fmt).unwrap(), read_chroma, DeviceMemoryId { kind: DeviceKind::Cuda, context: 0xc0 }, "main frame 0 (cuda test)")
    }

    #[test]
    fn planar_frames_are_read_in_place() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let before = FREED.load(Ordering::SeqCst);
        // FFmpeg's yuv420p of odd width: chroma ceil(w/2).
        let r = raw([0x1000, 0x9000, 0xa000, 0], [2048, 1024, 1024, 0], 1919, 1081);
        let pic = wrap(&r, "yuv420p", false).unwrap();
        assert!(pic.host().is_none());
        let f = pic.device_frame().unwrap();
        assert_eq!(f.memory, DeviceMemoryId { kind: DeviceKind::Cuda, context: 0xc0 });
        assert_eq!((f.format.chroma, f.format.bits, f.width, f.height), (Chroma::Yuv420, 8, 1919, 1081));
        assert_eq!(f.planes.len(), 3);
        assert_eq!((f.planes[0].ptr, f.planes[0].pitch, f.planes[0].width, f.planes[0].height), (0x1000, 2048, 1919, 1081));
        assert_eq!((f.planes[2].ptr, f.planes[2].pitch, f.planes[2].width, f.planes[2].height), (0xa000, 1024, 960, 541));
        assert!(f.ready.is_none());
        drop(pic);
        assert_eq!(FREED.load(Ordering::SeqCst), before + 1, "the AVFrame is released with the picture");

        let r = raw([0x1000, 0x9000, 0xa000, 0], [4096, 4096, 4096, 0], 2000, 10);
        let f = wrap(&r, "yuv444p16le", true).unwrap();
        let f = f.device_frame().unwrap();
        assert_eq!((f.format.chroma, f.format.bits, f.planes[1].width, f.planes[1].bytes_per_sample), (Chroma::Yuv444, 16, 2000, 2));
        let r = raw([0x1000, 0, 0, 0], [64, 0, 0, 0], 33, 9);
        assert_eq!(wrap(&r, "gray", false).unwrap().device_frame().unwrap().planes.len(), 1);
    }

    #[test]
    fn semi_planar_luma_in_place_without_chroma_readers() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        for (fmt, bits) in [("nv12", 8), ("p016le", 16)] {
            let r = raw([0x2000, 0x8000, 0, 0], [4096, 4096, 0, 0], 1920, 1080);
            let pic = wrap(&r, fmt, false).unwrap();
            let f = pic.device_frame().unwrap();
            assert_eq!((f.format.chroma, f.format.bits, f.planes.len()), (Chroma::Yuv400, bits, 1));
            assert_eq!((f.planes[0].ptr, f.planes[0].pitch), (0x2000, 4096));
        }
    }

    #[test]
    fn what_needs_device_work_goes_through_the_importer() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let f = |name| HostFormat::by_name(name).unwrap();
        // p010 always (shift); semi-planar chroma when read (split).
        assert!(needs_device_work(f("p010le"), false));
        assert!(needs_device_work(f("p010le"), true));
        assert!(needs_device_work(f("nv12"), true));
        assert!(needs_device_work(f("p016le"), true));
        assert!(!needs_device_work(f("nv12"), false));
        assert!(!needs_device_work(f("p016le"), false));
        for planar in ["yuv420p", "yuv420p10le", "yuv444p16le", "gray12le"] {
            assert!(!needs_device_work(f(planar), true), "{planar}");
        }
        // In-place wrapping never takes them (the filter routes them).
        let r = raw([0x2000, 0x8000, 0, 0], [4096, 4096, 0, 0], 64, 64);
        assert!(matches!(wrap(&r, "p010le", false), Err(Error::Internal(_))));
        assert!(matches!(wrap(&r, "nv12", true), Err(Error::Internal(_))));
    }

    #[test]
    fn bad_planes_are_refused_by_name() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let r = raw([0x2000, 0, 0, 0], [-64, 0, 0, 0], 64, 64);
        assert!(wrap(&r, "gray", false).err().unwrap().to_string().contains("bottom-up"));
        let r = raw([0x2000, 0, 0, 0], [32, 0, 0, 0], 64, 64);
        assert!(wrap(&r, "gray", false).err().unwrap().to_string().contains("shorter than a row"));
        let r = raw([0x2000, 0, 0, 0], [127, 0, 0, 0], 63, 4);
        assert!(wrap(&r, "gray16le", false).err().unwrap().to_string().contains("odd address or pitch"));
        let r = raw([0x2000, 0, 0, 0], [64, 64, 64, 0], 64, 64);
        assert!(wrap(&r, "yuv420p", false).err().unwrap().to_string().contains("plane 1 has no device pointer"));
    }
}
