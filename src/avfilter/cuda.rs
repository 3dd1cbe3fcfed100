//! CUDA frames (`AV_PIX_FMT_CUDA`: NVDEC output, CUDA filters) for the
//! filter: the planes stay in device memory and go to the scoring context
//! as a [`DeviceFrame`] in the frame's own `CUcontext`; the context scores
//! on that device, queued on the `AVCUDADeviceContext`'s stream, so it reads
//! after the decoder's copies into the frame without any host wait.
//!
//! What is read in place: every plane of a planar sw_format (yuv420p,
//! yuv444p16, gray, ...), and the luma of nv12 / p016 when no extractor
//! reads chroma (the VMAF models read only luma; the picture is then 4:0:0,
//! as for software nv12). What needs work on the device first — p010's
//! MSB-aligned luma (shifted down) and semi-planar chroma (deinterleaved) —
//! is refused by name until the device-side conversion (src/import/device.rs)
//! lands; `hwdownload` reads those formats on the CPU meanwhile.

use super::frame::{FrameHandle, HostFormat, Layout, RawPlanes};
use crate::device::gpu::engine::DevPlane;
use crate::device::{DeviceFrame, DeviceKind, DeviceMemoryId};
use crate::engine::PictureSource;
use crate::picture::{Chroma, Picture};
use crate::{Error, Result};

/// An input's CUDA device: `AVCUDADeviceContext`'s `cuda_ctx` and `stream`
/// as integers (`CUcontext`, `CUstream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaInput {
    pub context: u64,
    pub stream: u64,
}

/// A CUDA frame wrapped for the engine: its planes in device memory and the
/// AVFrame that owns them, released when the engine drops the picture (the
/// context drops it only once its reads on the device are done).
pub struct CudaPicture {
    frame: DeviceFrame,
    _handle: FrameHandle,
}

impl PictureSource for CudaPicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

impl CudaPicture {
    /// Wraps a CUDA frame whose planes `raw` (device pointers and pitches,
    /// as in the AVFrame) have the layout `format` (the frames context's
    /// sw_format), in `context`. `label` names the frame in errors
    /// ("main frame 3 (cuda nv12)").
    ///
    /// Safe: nothing is dereferenced here; the pointers are checked for
    /// presence and the pitches for length, and are read later by the GPU
    /// context in `context`, where an invalid one is a device error.
    pub fn wrap(
        handle: FrameHandle,
        raw: &RawPlanes,
        format: &HostFormat,
        read_chroma: bool,
        context: u64,
        label: &str,
    ) -> Result<CudaPicture> {
        let (width, height) = (raw.width, raw.height);
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("{label}: empty frame {width}x{height}")));
        }
        check_layout(format, read_chroma, label)?;
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
                    "{label}: plane {i} is bottom-up (line size {pitch}); CUDA frames are read in place, top-down"
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
        Ok(CudaPicture {
            frame: DeviceFrame {
                memory: DeviceMemoryId { kind: DeviceKind::Cuda, context },
                format: core,
                width,
                height,
                planes,
                // The context queues its work on the frames' own stream
                // (CudaInput::stream), behind the decoder's copies.
                ready: None,
            },
            _handle: handle,
        })
    }
}

/// Refuses, by name, the CUDA layouts that need work on the device before
/// the core can read them (checked at configure, and again per frame).
pub fn check_layout(format: &HostFormat, read_chroma: bool, label: &str) -> Result<()> {
    if format.msb_aligned {
        return Err(Error::NotSupported(format!(
            "{label}: {} keeps its {}-bit samples in the top bits, which must be shifted down on the \
             device before scoring; that conversion is not in this build yet (hwdownload,format={} \
             scores it on the CPU)",
            format.name, format.bits, format.name
        )));
    }
    if format.layout == Layout::SemiPlanar && read_chroma {
        return Err(Error::NotSupported(format!(
            "{label}: an extractor reads chroma, and {}'s interleaved chroma must be split into planes \
             on the device first; that is not in this build yet (luma-only features such as the VMAF \
             models read it in place; hwdownload,format={} scores chroma on the CPU)",
            format.name, format.name
        )));
    }
    Ok(())
}

/// Checks that CUDA can be used at all: the driver library loads and
/// `cuInit` succeeds. A clear error otherwise, naming the input.
pub fn check_driver(which: &str, format: &str) -> Result<()> {
    crate::device::gpu::cuda::driver().map(|_| ()).map_err(|e| {
        Error::Device(format!(
            "the {which} input is CUDA frames ({format}), but the CUDA driver is not usable here: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static FREED: AtomicUsize = AtomicUsize::new(0);
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

    fn wrap(r: &RawPlanes, fmt: &str, read_chroma: bool) -> Result<CudaPicture> {
        let handle = unsafe { FrameHandle::new(8 as *mut c_void, count_free) };
        CudaPicture::wrap(handle, r, HostFormat::by_name(fmt).unwrap(), read_chroma, 0xc0, "main frame 0 (cuda test)")
    }

    #[test]
    fn planar_frames_are_read_in_place() {
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
        for (fmt, bits) in [("nv12", 8), ("p016le", 16)] {
            let r = raw([0x2000, 0x8000, 0, 0], [4096, 4096, 0, 0], 1920, 1080);
            let pic = wrap(&r, fmt, false).unwrap();
            let f = pic.device_frame().unwrap();
            assert_eq!((f.format.chroma, f.format.bits, f.planes.len()), (Chroma::Yuv400, bits, 1));
            assert_eq!((f.planes[0].ptr, f.planes[0].pitch), (0x2000, 4096));
            let err = wrap(&r, fmt, true).err().unwrap().to_string();
            assert!(err.contains("main frame 0 (cuda test): an extractor reads chroma"), "{err}");
            assert!(err.contains(&format!("hwdownload,format={fmt}")), "{err}");
        }
    }

    #[test]
    fn what_needs_device_work_is_refused_by_name() {
        let r = raw([0x2000, 0x8000, 0, 0], [4096, 4096, 0, 0], 64, 64);
        let err = wrap(&r, "p010le", false).err().unwrap().to_string();
        assert!(err.starts_with("not supported: main frame 0 (cuda test): p010le keeps its 10-bit samples in the top bits"), "{err}");
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
