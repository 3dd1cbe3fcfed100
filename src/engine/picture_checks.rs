//! What a pushed picture must be: its size and format as the context will
//! read it, and a device picture's planes covering that format.

use crate::device::{DeviceFrame, DeviceMemoryId};
use crate::picture::{PictureSource, PixelFormat};
use crate::{Error, Result};

use super::placement::placed_host;

/// The size and format every picture of a context shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PictureGeometry {
    pub(super) width: usize,
    pub(super) height: usize,
    pub(super) format: PixelFormat,
}


/// The size and format of a picture, as the context will read it: its host
/// planes on the CPU (`memory` None); on a GPU its device planes when they
/// are in the lanes' memory, else its host planes (copied).
pub(super) fn geometry_of(p: &dyn PictureSource, memory: Option<DeviceMemoryId>, index: u32, which: &str) -> Result<PictureGeometry> {
    let Some(memory) = memory else {
        return match (p.host(), p.device_frame()) {
            (Some(h), _) => Ok(PictureGeometry { width: h.width(), height: h.height(), format: h.format() }),
            (None, Some(DeviceFrame { memory, .. })) => Err(Error::NotSupported(format!(
                "frame {index}: the {which} picture is in {:?} device memory, and this context scores on the CPU",
                memory.kind
            ))),
            (None, None) => Err(Error::invalid(format!("frame {index}: the {which} picture has no planes"))),
        };
    };
    if let Some(f) = p.device_frame().filter(|f| f.memory == memory) {
        check_device_frame(f, index, which)?;
        return Ok(PictureGeometry { width: f.width, height: f.height, format: f.format });
    }
    let h = placed_host(p, memory, index, which)?;
    Ok(PictureGeometry { width: h.width(), height: h.height(), format: h.format() })
}

/// A device picture's planes cover its format's (the kernels read them
/// without bounds checks): as many as the format has (luma alone is
/// accepted; a context needing chroma refuses it when it reads it), each at
/// least its plane's size, a pitch holding a row.
fn check_device_frame(f: &DeviceFrame, index: u32, which: &str) -> Result<()> {
    let bps = f.format.bytes_per_sample();
    let count = f.format.chroma.plane_count();
    if f.planes.is_empty() || f.planes.len() > count {
        return Err(Error::invalid(format!(
            "frame {index}: the {which} device picture has {} planes; {} has {count}",
            f.planes.len(),
            f.format
        )));
    }
    for (i, plane) in f.planes.iter().enumerate() {
        let (w, h) = f.format.plane_size(i, f.width, f.height);
        if plane.width < w || plane.height < h || plane.bytes_per_sample != bps || plane.pitch < plane.width * bps
        {
            return Err(Error::invalid(format!(
                "frame {index}: the {which} device picture's plane {i} is {}x{} at {} bytes a sample, pitch {}; \
                 {} at {}x{} needs {w}x{h} at {bps}",
                plane.width, plane.height, plane.bytes_per_sample, plane.pitch, f.format, f.width, f.height
            )));
        }
        // The kernels read samples above 8 bits as u16.
        if bps == 2 && (plane.ptr % 2 != 0 || plane.pitch % 2 != 0) {
            return Err(Error::invalid(format!(
                "frame {index}: the {which} device picture's plane {i} is not 2-byte aligned (pointer {:#x}, pitch {})",
                plane.ptr, plane.pitch
            )));
        }
    }
    Ok(())
}

