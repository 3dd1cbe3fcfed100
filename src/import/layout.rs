//! The DRM layout both import lanes read (src/import/cpu.rs and
//! src/import/gpu.rs): each layer's fourcc gives its planes' shapes, bytes
//! per sample, bit depth and chroma subsampling; the layers flatten into
//! Y + UV or Y + U + V. The checks every lane makes the same way live here
//! too (plane counts, mixed 8/16-bit layers, object indices, bit depth,
//! modifiers, a plane's pitch and end); a [`ReaderFormats`] says which formats the
//! lane reads and names it in the refusals.

use super::{
    modifier_name, DrmFourcc, DrmModifier, FrameDescriptor, ImportError,
    ImportErrorKind as Kind, InvalidModifier, Object,
};
use crate::picture::{Chroma, PixelFormat};

/// How a layer's plane holds its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Samples {
    /// One component per sample (Y, or U, or V).
    Single,
    /// Two components interleaved (U then V, as NV12's UV plane and GR88).
    Interleaved,
}

/// One plane of the flattened layout: where it is and how it holds samples.
#[derive(Clone, Copy, Debug)]
pub(super) struct FlatPlane {
    pub object: usize,
    pub offset: u64,
    pub pitch: u64,
    pub samples: Samples,
}

/// The DRM formats a reader (the host importer, the GPU importer) takes,
/// and how its refusals name it.
pub(super) struct ReaderFormats {
    /// Subject and verb of the refusals: "the CPU device reads".
    pub reads: &'static str,
    /// The DRM formats the lane reads.
    pub formats: &'static [DrmFourcc],
    /// Those formats, for the refusal of any other.
    pub formats_text: &'static str,
}

/// The layers flattened: bytes per sample, bit depth, chroma subsampling
/// and the planes (Y + UV, or Y + U + V).
pub(super) struct Layout {
    pub bps: usize,
    pub bits: u8,
    pub chroma: Chroma,
    pub planes: Vec<FlatPlane>,
}

/// An import error (every lane's shorthand).
pub(super) fn err(kind: Kind, message: impl Into<String>) -> ImportError {
    ImportError::new(kind, message)
}

/// A format's plane shapes, bytes per sample, the bit depth it fixes (R16
/// layers leave it to the descriptor) and the chroma it fixes (one-plane
/// layers do not).
#[allow(clippy::type_complexity)]
fn format_layout(format: DrmFourcc) -> Option<(&'static [Samples], usize, Option<u8>, Option<Chroma>)> {
    use Samples::*;
    Some(match format {
        DrmFourcc::Nv12 => (&[Single, Interleaved], 1, Some(8), Some(Chroma::Yuv420)),
        DrmFourcc::Nv24 => (&[Single, Interleaved], 1, Some(8), Some(Chroma::Yuv444)),
        DrmFourcc::P010 => (&[Single, Interleaved], 2, Some(10), Some(Chroma::Yuv420)),
        DrmFourcc::P012 => (&[Single, Interleaved], 2, Some(12), Some(Chroma::Yuv420)),
        DrmFourcc::P016 => (&[Single, Interleaved], 2, Some(16), Some(Chroma::Yuv420)),
        DrmFourcc::Yuv420 => (&[Single, Single, Single], 1, Some(8), Some(Chroma::Yuv420)),
        DrmFourcc::Yuv444 => (&[Single, Single, Single], 1, Some(8), Some(Chroma::Yuv444)),
        DrmFourcc::R8 => (&[Single], 1, Some(8), None),
        DrmFourcc::Gr88 => (&[Interleaved], 1, Some(8), None),
        DrmFourcc::R16 => (&[Single], 2, None, None),
        DrmFourcc::Gr1616 => (&[Interleaved], 2, None, None),
        _ => return None,
    })
}

/// Flattens the layers into Y + UV or Y + U + V, refusing formats `lane`
/// does not read.
pub(super) fn flatten(desc: &FrameDescriptor, lane: &ReaderFormats) -> Result<Layout, ImportError> {
    use Samples::*;
    let label = &desc.label;
    let mut planes = Vec::new();
    let mut bps = None;
    let mut required_bits = None;
    let mut chroma = Chroma::Yuv420;
    for (li, layer) in desc.layers.iter().enumerate() {
        let known = format_layout(layer.format).filter(|_| lane.formats.contains(&layer.format));
        let Some((shape, b, bits, sub)) = known else {
            let other = layer.format;
            return Err(err(
                Kind::NotSupported,
                format!(
                    "{label}: layer {li} has DRM format {other} ({:#010x}); {} {}",
                    other as u32, lane.reads, lane.formats_text
                ),
            ));
        };
        if layer.planes.len() != shape.len() {
            return Err(err(
                Kind::Invalid,
                format!(
                    "{label}: layer {li} ({}) has {} planes, the format has {}",
                    layer.format,
                    layer.planes.len(),
                    shape.len()
                ),
            ));
        }
        if *bps.get_or_insert(b) != b {
            return Err(err(
                Kind::NotSupported,
                format!("{label}: layers mix 8-bit and 16-bit samples (layer {li} is {})", layer.format),
            ));
        }
        if let Some(bits) = bits {
            required_bits = Some(bits);
        }
        if let Some(sub) = sub {
            chroma = sub;
        }
        for (p, s) in layer.planes.iter().zip(shape) {
            if p.object >= desc.objects.len() {
                return Err(err(
                    Kind::Invalid,
                    format!("{label}: layer {li} names object {} of {}", p.object, desc.objects.len()),
                ));
            }
            planes.push(FlatPlane { object: p.object, offset: p.offset, pitch: p.pitch, samples: *s });
        }
    }
    let shapes: Vec<Samples> = planes.iter().map(|p| p.samples).collect();
    if shapes != [Single, Interleaved] && shapes != [Single, Single, Single] {
        return Err(err(
            Kind::NotSupported,
            format!("{label}: plane layout {shapes:?} (expected Y + interleaved UV, or Y + U + V)"),
        ));
    }
    let bps = bps.unwrap_or(1);
    let bits = desc.bits;
    let ok = match (bps, required_bits) {
        (1, _) => bits == 8,
        (_, Some(r)) if r > 8 => bits == r,
        _ => (9..=16).contains(&bits),
    };
    if !ok {
        return Err(err(
            Kind::Invalid,
            format!("{label}: bit depth {bits} does not fit the DRM formats given"),
        ));
    }
    Ok(Layout { bps, bits, chroma, planes })
}

impl Layout {
    /// Plane `pi`'s bytes per row and rows, as the frame's size says.
    pub(super) fn plane_rows(&self, pi: usize, width: usize, height: usize) -> (u64, usize) {
        let full = PixelFormat { chroma: self.chroma, bits: self.bits };
        let (w, h) = full.plane_size(pi.min(1), width, height);
        let samples = if self.planes[pi].samples == Samples::Interleaved { 2 } else { 1 };
        ((w * self.bps * samples) as u64, h)
    }
}

/// Refuses object `oi` unless its modifier is linear (or INVALID where the
/// descriptor says the implicit layout is linear).
pub(super) fn check_modifier(
    desc: &FrameDescriptor,
    oi: usize,
    object: &Object,
    lane: &ReaderFormats,
) -> Result<(), ImportError> {
    let label = &desc.label;
    match object.modifier {
        DrmModifier::Linear => Ok(()),
        DrmModifier::Invalid if desc.invalid_modifier == InvalidModifier::ImplicitLinear => Ok(()),
        DrmModifier::Invalid => Err(err(
            Kind::NotSupported,
            format!("{label}: object {oi} has DRM_FORMAT_MOD_INVALID (layout unknown); say InvalidModifier::ImplicitLinear if the producer's implicit layout is linear"),
        )),
        m => Err(err(
            Kind::NotSupported,
            format!("{label}: object {oi} has {}; {} only DRM_FORMAT_MOD_LINEAR (tiled or compressed layouts need the producer to detile)", modifier_name(m), lane.reads),
        )),
    }
}

/// Refuses plane `pi` if its pitch is shorter than its `row` bytes.
pub(super) fn check_pitch(label: &str, pi: usize, p: &FlatPlane, row: u64) -> Result<(), ImportError> {
    if p.pitch < row {
        return Err(err(
            Kind::Invalid,
            format!("{label}: plane {pi} pitch {} is shorter than a row ({row} bytes)", p.pitch),
        ));
    }
    Ok(())
}

/// Refuses plane `pi` (`h` rows of `row` bytes) if it ends past the `have`
/// bytes of its object, or if its end overflows; with `have` unknown, only
/// an overflow is refused.
pub(super) fn check_end(
    label: &str,
    pi: usize,
    p: &FlatPlane,
    row: u64,
    h: usize,
    have: Option<u64>,
) -> Result<(), ImportError> {
    let end = p
        .pitch
        .checked_mul(h as u64 - 1)
        .and_then(|v| v.checked_add(row))
        .and_then(|v| v.checked_add(p.offset));
    match (end, have) {
        (Some(end), Some(have)) if end <= have => Ok(()),
        (Some(_), None) => Ok(()),
        _ => Err(err(
            Kind::Range,
            format!(
                "{label}: plane {pi} (offset {}, pitch {}, {h} rows of {row} bytes) ends at {} past the end of object {} ({} bytes)",
                p.offset,
                p.pitch,
                end.map_or("overflow".to_string(), |e| e.to_string()),
                p.object,
                have.map_or("?".to_string(), |b| b.to_string())
            ),
        )),
    }
}
