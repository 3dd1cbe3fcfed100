//! FFmpeg's DRM frame descriptor (`AVDRMFrameDescriptor`, libavutil/
//! hwcontext_drm.h, the same in FFmpeg 4 to 9) as `#[repr(C)]` mirrors, and
//! its conversion into a [`FrameDescriptor`]: the fds are duplicated, so the
//! descriptor owns its own and the `AVFrame` keeps its.

use super::sys;
use super::{
    DrmFourcc, DrmModifier, FrameDescriptor, ImportError, ImportErrorKind as Kind, Layer, Memory,
    Object, PlaneRef,
};

/// `AV_DRM_MAX_PLANES`.
pub(crate) const AV_DRM_MAX_PLANES: usize = 4;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AvDrmObjectDescriptor {
    pub fd: i32,
    pub size: usize,
    pub format_modifier: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AvDrmPlaneDescriptor {
    pub object_index: i32,
    pub offset: isize,
    pub pitch: isize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AvDrmLayerDescriptor {
    pub format: u32,
    pub nb_planes: i32,
    pub planes: [AvDrmPlaneDescriptor; AV_DRM_MAX_PLANES],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AvDrmFrameDescriptor {
    pub nb_objects: i32,
    pub objects: [AvDrmObjectDescriptor; AV_DRM_MAX_PLANES],
    pub nb_layers: i32,
    pub layers: [AvDrmLayerDescriptor; AV_DRM_MAX_PLANES],
}

fn err(kind: Kind, message: String) -> ImportError {
    ImportError::new(kind, message)
}

impl FrameDescriptor {
    /// A descriptor for an FFmpeg DRM_PRIME frame of `width` x `height` at
    /// `bits` (from the hw frames context's sw_format: 8 for NV12, 10 for
    /// P010). Implicit sync is on (FFmpeg's DRM frames carry no fences).
    /// Every fd is duplicated; a closed one is refused (INVALID).
    pub fn from_av_drm(
        av: &AvDrmFrameDescriptor,
        label: impl Into<String>,
        width: usize,
        height: usize,
        bits: u8,
    ) -> Result<FrameDescriptor, ImportError> {
        let label = label.into();
        let count = |n: i32, what: &str| -> Result<usize, ImportError> {
            if (1..=AV_DRM_MAX_PLANES as i32).contains(&n) {
                Ok(n as usize)
            } else {
                Err(err(Kind::Invalid, format!("{label}: {n} {what} (1 to {AV_DRM_MAX_PLANES})")))
            }
        };
        let nb_objects = count(av.nb_objects, "objects")?;
        let nb_layers = count(av.nb_layers, "layers")?;
        let mut d = FrameDescriptor::new(label.clone(), width, height, bits);
        for (i, o) in av.objects[..nb_objects].iter().enumerate() {
            let fd = sys::dup_raw_fd(o.fd).map_err(|e| {
                err(Kind::Invalid, format!("{label}: object {i}: fd {} cannot be duplicated ({e}); a closed fd?", o.fd))
            })?;
            d.objects.push(Object {
                memory: Memory::DmaBuf(fd),
                size: o.size as u64,
                modifier: DrmModifier::from(o.format_modifier),
            });
        }
        for (li, l) in av.layers[..nb_layers].iter().enumerate() {
            let format = DrmFourcc::try_from(l.format).map_err(|_| {
                let cc: String = l.format.to_le_bytes().iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '?' }).collect();
                err(Kind::NotSupported, format!("{label}: layer {li} has DRM format {cc} ({:#010x}), unknown", l.format))
            })?;
            let nb_planes = count(l.nb_planes, "planes")?;
            let mut planes = Vec::with_capacity(nb_planes);
            for (pi, p) in l.planes[..nb_planes].iter().enumerate() {
                if p.object_index < 0 || p.object_index as usize >= nb_objects {
                    return Err(err(Kind::Invalid, format!("{label}: layer {li} plane {pi} names object {} of {nb_objects}", p.object_index)));
                }
                if p.offset < 0 || p.pitch <= 0 {
                    return Err(err(
                        Kind::NotSupported,
                        format!("{label}: layer {li} plane {pi} has offset {} and pitch {} (negative pitches, bottom-up frames, are not read)", p.offset, p.pitch),
                    ));
                }
                planes.push(PlaneRef { object: p.object_index as usize, offset: p.offset as u64, pitch: p.pitch as u64 });
            }
            d.layers.push(Layer { format, planes });
        }
        Ok(d)
    }
}
