//! SpEED (spatial efficient entropic differencing), libvmaf 3.2.0's
//! `feature/speed.c`: two extractors over one scoring core (`scalar.rs`).
//!
//! - `speed_chroma` scores the U and V planes of each frame pair and
//!   writes `Speed_chroma_feature_speed_chroma_{u,v,uv}_score` (printed
//!   `speed_chroma_u`, ...), each clipped at `speed_max_val`; the v1.0.16
//!   models read the `uv` one.
//! - `speed_temporal` scores the luma frame differences (previous minus
//!   current, of the reference and of the distorted stream) and writes
//!   `Speed_temporal_feature_speed_temporal_score` (0 on the first frame).
//!
//! Geometry and options are settled in `create`, as libvmaf's `init`
//! settles them. vmafx refuses what libvmaf cannot score: 4:0:0 for
//! `speed_chroma` (libvmaf's init refuses it), and where libvmaf ignores
//! its own init error and then reads or writes outside its buffers, or
//! reads 16-bit samples as bytes (docs/correctness.md, "SpEED").

pub mod filter;
pub(crate) mod gpu;
pub(crate) mod linalg;
pub(crate) mod scalar;

use super::options::{OptionKind, OptionSpec};
use super::{DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores};
use crate::device::gpu::ErasedRunner;
use crate::picture::{Chroma, PlaneView};
use crate::{Error, Result};
use filter::{Resize, ScaleMethod};
use gpu::SpeedInput;
use scalar::{Dimensions, SpeedParams, SpeedState};

const U_NAME: &str = "Speed_chroma_feature_speed_chroma_u_score";
const V_NAME: &str = "Speed_chroma_feature_speed_chroma_v_score";
const UV_NAME: &str = "Speed_chroma_feature_speed_chroma_uv_score";
const TEMPORAL_NAME: &str = "Speed_temporal_feature_speed_temporal_score";

/// libvmaf's `picture_copy` offset.
const COPY_OFFSET: f32 = -128.0;

const fn param(name: &'static str, alias: &'static str, help: &'static str, kind: OptionKind) -> OptionSpec {
    OptionSpec { name, alias: Some(alias), help, kind, feature_param: true }
}

const KERNELSCALE: OptionSpec = param(
    "speed_kernelscale",
    "ks",
    "scaling factor for the gaussian kernel (2.0 means multiplying the standard deviation by 2 and \
     enlarge the kernel size accordingly",
    OptionKind::Double { default: 1.0, min: 0.1, max: 4.0 },
);
const PRESCALE: OptionSpec = param(
    "speed_prescale",
    "ps",
    "scaling factor for the frame (2.0 means making the image twice as large on each dimension)",
    OptionKind::Double { default: 1.0, min: 0.1, max: 4.0 },
);
const PRESCALE_METHOD: OptionSpec = param(
    "speed_prescale_method",
    "psm",
    "scaling method for the frame, supported options: [nearest, bilinear, bicubic, lanczos4]",
    OptionKind::Str { default: Some("nearest") },
);
const SIGMA_NN: OptionSpec = param(
    "speed_sigma_nn",
    "snn",
    "standard deviation of neural noise",
    OptionKind::Double { default: 0.29, min: 0.1, max: 2.0 },
);
const NN_FLOOR: OptionSpec = param(
    "speed_nn_floor",
    "nnf",
    "neural noise floor, expressed in percentage of sigma_nn",
    OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
);
const MAX_VAL: OptionSpec = param(
    "speed_max_val",
    "mxv",
    "maximum value allowed; larger values will be clipped to this value",
    OptionKind::Double { default: 1000.0, min: 0.0, max: 1000.0 },
);

/// libvmaf's `options_chroma`, in its order.
static CHROMA_OPTIONS: [OptionSpec; 7] = [
    KERNELSCALE,
    PRESCALE,
    PRESCALE_METHOD,
    SIGMA_NN,
    NN_FLOOR,
    MAX_VAL,
    param(
        "speed_weight_var_mode",
        "wvm",
        "different approaches to perform variance-absed weighting",
        OptionKind::Int { default: 0, min: 0, max: 6 },
    ),
];

/// libvmaf's `options` of `speed_temporal`, in its order. Its
/// `speed_max_val` names the feature but clips nothing (as in libvmaf).
static TEMPORAL_OPTIONS: [OptionSpec; 7] = [
    KERNELSCALE,
    PRESCALE,
    PRESCALE_METHOD,
    SIGMA_NN,
    NN_FLOOR,
    MAX_VAL,
    OptionSpec {
        name: "speed_use_ref_diff",
        alias: Some("urd"),
        help: "debug mode: enable additional output",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
];

pub static CHROMA_DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "speed_chroma",
    provided_features: &[U_NAME, V_NAME, UV_NAME],
    options: &CHROMA_OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    // libvmaf flags speed_chroma neither TEMPORAL nor PREV_REF.
    every_frame: false,
    reads_chroma: true,
    create: create_chroma,
};

pub static TEMPORAL_DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "speed_temporal",
    provided_features: &[TEMPORAL_NAME],
    options: &TEMPORAL_OPTIONS,
    needs_prev_reference: true,
    needs_prev_distorted: true,
    needs_two_back: crate::feature::never_two_back,
    // TEMPORAL in libvmaf: every frame, whatever the subsample rate.
    every_frame: true,
    reads_chroma: false,
    create: create_temporal,
};

/// The options and sizes both extractors settle in `init`.
fn settle(
    what: &str,
    specs: &[OptionSpec],
    o: &FeatureOptions,
    bits: u32,
    width: usize,
    height: usize,
    plane: &str,
) -> Result<(SpeedParams, Dimensions)> {
    // libvmaf's picture_copy knows 8, 10, 12 and 16 bits; at any other
    // depth it reads the 16-bit samples as bytes.
    if ![8, 10, 12, 16].contains(&bits) {
        return Err(Error::NotSupported(format!(
            "{what}: {bits}-bit pictures: libvmaf 3.2.0's SpEED reads 8, 10, 12 and 16 bits only \
             (at other depths it reads the samples as bytes)"
        )));
    }
    let kernelscale = o.get_double(specs, "speed_kernelscale");
    if !filter::kernelscale_is_valid(kernelscale as f32) {
        return Err(Error::invalid(format!(
            "{what}: speed_kernelscale={kernelscale} is not one of libvmaf's kernel scales \
             (1, 0.5, 1.5, 2, 2/3, 2.4, 360/97, 4/3, 3.5/3, 3.75/3, 4.25/3, 5/3, 3, 1/2.25, 1.4746, \
             1.54, 1.6, 1.06667, 0.711111, 0.74074, 1.111111)"
        )));
    }
    let method_name = o.get_str(specs, "speed_prescale_method").unwrap_or_default();
    let method = ScaleMethod::parse(&method_name).ok_or_else(|| {
        Error::invalid(format!(
            "{what}: speed_prescale_method={method_name}: expected nearest, bilinear, bicubic or lanczos4"
        ))
    })?;
    let prescale = o.get_double(specs, "speed_prescale");
    let dim = Dimensions::new(width, height, prescale).ok_or_else(|| {
        Error::NotSupported(format!(
            "{what}: the {width}x{height} {plane}, prescaled by {prescale} and decimated by 16, holds no \
             whole 5x5 block (SpEED needs 80x80 after prescaling): libvmaf 3.2.0 reads outside its \
             buffers here"
        ))
    })?;
    let resize = ((prescale - 1.0).abs() >= 1e-3)
        .then(|| Resize::new(method, width, height, dim.scaled_width, dim.scaled_height));
    let params = SpeedParams {
        kernelscale: kernelscale as f32,
        resize,
        sigma_nn: o.get_double(specs, "speed_sigma_nn") as f32,
        nn_floor: o.get_double(specs, "speed_nn_floor") as f32,
        weight_var_mode: 0,
    };
    Ok((params, dim))
}

/// One sample of libvmaf's `picture_copy`: scaled to 8 bits (divided by
/// 4, 16 or 256 in float above 8 bits), minus 128. kernels/speed.cu's
/// `vx_speed_sample` is its device twin (tests/device/fns.rs).
#[doc(hidden)]
#[inline]
pub fn copy_sample(v: u16, bits: u32) -> f32 {
    match bits {
        8 => v as f32 + COPY_OFFSET,
        10 => v as f32 / 4.0f32 + COPY_OFFSET,
        12 => v as f32 / 16.0f32 + COPY_OFFSET,
        _ => v as f32 / 256.0f32 + COPY_OFFSET,
    }
}

/// libvmaf's `picture_copy` of the top-left `w` x `h` of `plane` into a
/// float buffer of `stride` samples a row ([`copy_sample`] each).
fn copy_plane(plane: &PlaneView<'_>, bits: u32, w: usize, h: usize, out: &mut [f32], stride: usize) {
    for y in 0..h {
        let out = &mut out[y * stride..y * stride + w];
        if bits == 8 {
            for (o, &v) in out.iter_mut().zip(plane.row_u8(y)) {
                *o = copy_sample(v as u16, 8);
            }
        } else {
            for (o, &v) in out.iter_mut().zip(plane.row_u16(y)) {
                *o = copy_sample(v, bits);
            }
        }
    }
}

/// libvmaf's `MIN(score, max_val)` on a float score and a double limit.
fn clip(score: f32, max_val: f64) -> f64 {
    if (score as f64) < max_val {
        score as f64
    } else {
        max_val
    }
}

/// The host tail of a device twin: the decimated reference and distorted
/// pictures (`pair`, `w / 16` floats a row, from [`gpu::downscale_dev`])
/// put where the CPU's downscale leaves them in `buffers`, then scored with
/// the CPU's code.
fn score_decimated(state: &mut SpeedState, params: &SpeedParams, buffers: [&mut Vec<f32>; 2], pair: &[Vec<f32>]) -> (f32, bool) {
    let stride = state.dim.stride;
    let ow = state.dim.width / 16;
    let [reference, distorted] = buffers;
    for (buffer, picture) in [(&mut *reference, &pair[0]), (&mut *distorted, &pair[1])] {
        for (y, row) in picture.chunks_exact(ow).enumerate() {
            buffer[y * stride..y * stride + ow].copy_from_slice(row);
        }
    }
    state.score_downscaled(params, reference, distorted)
}

struct SpeedChroma {
    bits: u32,
    /// Chroma plane size as libvmaf's pictures have it (rounded down).
    width: usize,
    height: usize,
    params: SpeedParams,
    state: SpeedState,
    max_val: f64,
    names: [String; 3],
    reference: Vec<f32>,
    distorted: Vec<f32>,
}

fn create_chroma(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let what = "speed_chroma";
    let (sx, sy) = match cfg.format.chroma {
        Chroma::Yuv400 => {
            return Err(Error::NotSupported(format!(
                "{what}: a 4:0:0 picture has no chroma to score (libvmaf 3.2.0 refuses it too)"
            )))
        }
        c => c.shift(),
    };
    let (w, h) = (cfg.width >> sx, cfg.height >> sy);
    let o = &cfg.options;
    let bits = cfg.format.bits as u32;
    let (mut params, dim) = settle(what, &CHROMA_OPTIONS, o, bits, w, h, "chroma planes")?;
    params.weight_var_mode = o.get_int(&CHROMA_OPTIONS, "speed_weight_var_mode");
    let names = [U_NAME, V_NAME, UV_NAME].map(|n| CHROMA_DESCRIPTOR.feature_name(n, o));
    Ok(Box::new(SpeedChroma {
        bits,
        width: w,
        height: h,
        state: SpeedState::new(dim, &params),
        params,
        max_val: o.get_double(&CHROMA_OPTIONS, "speed_max_val"),
        names,
        reference: vec![0.0; dim.frame_len()],
        distorted: vec![0.0; dim.frame_len()],
    }))
}

impl SpeedChroma {
    /// `extract_channel`: the score of plane `index` and whether a
    /// covariance matrix was singular.
    fn channel(&mut self, frame: &FrameInput<'_>, index: usize) -> (f32, bool) {
        let stride = self.state.dim.stride;
        copy_plane(&frame.reference.plane(index), self.bits, self.width, self.height, &mut self.reference, stride);
        copy_plane(&frame.distorted.plane(index), self.bits, self.width, self.height, &mut self.distorted, stride);
        self.state.score(&self.params, &mut self.reference, &mut self.distorted)
    }
}

impl Extractor for SpeedChroma {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let (u, u_singular) = self.channel(frame, 1);
        let (v, v_singular) = self.channel(frame, 2);
        self.write([(u, u_singular), (v, v_singular)], out);
        Ok(())
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    /// The blur and decimation of the four chroma planes on the device
    /// (speed/gpu.rs), the rest on the host with the CPU's code.
    fn extract_device(&mut self, frame: &DeviceFrameInput<'_>, lane: &mut ErasedRunner, out: &mut FrameScores) -> Result<()> {
        if self.params.resize.is_some() {
            return Err(Error::NotSupported(
                "speed_chroma with speed_prescale on a GPU lane: the prescaler has no device twin yet (score it in a CPU context)".into(),
            ));
        }
        let (r, d) = (frame.reference, frame.distorted);
        if r.planes.len() < 3 || d.planes.len() < 3 {
            return Err(Error::Mismatch("speed_chroma: the device pictures have no chroma planes".into()));
        }
        let whole = |plane| SpeedInput { plane, minus: None };
        let inputs = [r.planes[1], d.planes[1], r.planes[2], d.planes[2]].map(whole);
        let taps = self.state.antialias().to_vec();
        let dec = gpu::downscale_dev(lane, &inputs, self.bits, self.width, self.height, &taps)?;
        let mut scores = [(0.0f32, false); 2];
        for (c, pair) in dec.chunks_exact(2).enumerate() {
            scores[c] = score_decimated(&mut self.state, &self.params, [&mut self.reference, &mut self.distorted], pair);
        }
        self.write(scores, out);
        Ok(())
    }
}

impl SpeedChroma {
    /// The U, V and UV values from each plane's score and whether its
    /// covariance matrix was singular; shared by the CPU and device paths.
    fn write(&self, [(u, u_singular), (v, v_singular)]: [(f32, bool); 2], out: &mut FrameScores) {
        // A flat plane has a singular covariance: the other one stands in.
        let uv = match (u_singular, v_singular) {
            (true, false) => v,
            (false, true) => u,
            _ => ((u + v) as f64 / 2.0) as f32,
        };
        for (name, score) in self.names.iter().zip([u, v, uv]) {
            out.push(name, clip(score, self.max_val));
        }
    }
}

struct SpeedTemporal {
    bits: u32,
    params: SpeedParams,
    state: SpeedState,
    use_ref_diff: bool,
    name: String,
    reference: Vec<f32>,
    distorted: Vec<f32>,
    current: Vec<f32>,
}

fn create_temporal(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let what = "speed_temporal";
    let o = &cfg.options;
    let bits = cfg.format.bits as u32;
    let (params, dim) = settle(what, &TEMPORAL_OPTIONS, o, bits, cfg.width, cfg.height, "luma")?;
    // libvmaf sizes its frame buffers by the picture's height, not the
    // prescaled one, and the prescale writes past them.
    if dim.scaled_height > cfg.height {
        return Err(Error::NotSupported(format!(
            "{what}: speed_prescale={} enlarges the picture: libvmaf 3.2.0's speed_temporal writes \
             past its frame buffers there",
            o.get_double(&TEMPORAL_OPTIONS, "speed_prescale")
        )));
    }
    Ok(Box::new(SpeedTemporal {
        bits,
        state: SpeedState::new(dim, &params),
        params,
        use_ref_diff: o.get_bool(&TEMPORAL_OPTIONS, "speed_use_ref_diff"),
        name: TEMPORAL_DESCRIPTOR.feature_name(TEMPORAL_NAME, o),
        reference: vec![0.0; dim.frame_len()],
        distorted: vec![0.0; dim.frame_len()],
        current: vec![0.0; dim.frame_len()],
    }))
}

impl Extractor for SpeedTemporal {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let (Some(prev_ref), Some(prev_dis)) = (frame.prev_reference, frame.prev_distorted) else {
            out.push(&self.name, 0.0);
            return Ok(());
        };
        let d = self.state.dim;
        let (w, h, stride, bits) = (d.width, d.height, d.stride, self.bits);
        // Previous minus current, of each stream (or, with
        // speed_use_ref_diff, the previous distorted minus the current
        // reference).
        copy_plane(&frame.reference.luma(), bits, w, h, &mut self.current, stride);
        copy_plane(&prev_ref.luma(), bits, w, h, &mut self.reference, stride);
        scalar::subtract(&mut self.reference, &self.current, w, h, stride);
        copy_plane(&prev_dis.luma(), bits, w, h, &mut self.distorted, stride);
        if !self.use_ref_diff {
            copy_plane(&frame.distorted.luma(), bits, w, h, &mut self.current, stride);
        }
        scalar::subtract(&mut self.distorted, &self.current, w, h, stride);
        let (score, _) = self.state.score(&self.params, &mut self.reference, &mut self.distorted);
        out.push(&self.name, score as f64);
        Ok(())
    }
    fn has_device_twin(&self) -> bool {
        true
    }

    /// The two frame differences, their blur and decimation on the device
    /// (speed/gpu.rs), the rest on the host with the CPU's code.
    fn extract_device(&mut self, frame: &DeviceFrameInput<'_>, lane: &mut ErasedRunner, out: &mut FrameScores) -> Result<()> {
        let (Some(prev_ref), Some(prev_dis)) = (frame.prev_reference, frame.prev_distorted) else {
            out.push(&self.name, 0.0);
            return Ok(());
        };
        if self.params.resize.is_some() {
            return Err(Error::NotSupported(
                "speed_temporal with speed_prescale on a GPU lane: the prescaler has no device twin yet (score it in a CPU context)".into(),
            ));
        }
        let current_for_distorted = if self.use_ref_diff { frame.reference } else { frame.distorted };
        let inputs = [
            SpeedInput { plane: prev_ref.planes[0], minus: Some(frame.reference.planes[0]) },
            SpeedInput { plane: prev_dis.planes[0], minus: Some(current_for_distorted.planes[0]) },
        ];
        let d = self.state.dim;
        let taps = self.state.antialias().to_vec();
        let dec = gpu::downscale_dev(lane, &inputs, self.bits, d.width, d.height, &taps)?;
        let (score, _) = score_decimated(&mut self.state, &self.params, [&mut self.reference, &mut self.distorted], &dec);
        out.push(&self.name, score as f64);
        Ok(())
    }
}
