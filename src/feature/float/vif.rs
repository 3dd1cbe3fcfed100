//! `float_vif` (libvmaf `feature/float_vif.c`, `vif.c`, `vif_tools.c`):
//! visual information fidelity on four scales of the luma, in float.
//!
//! The pictures (copied less 128, optionally prescaled) are blurred by a
//! Gaussian per scale and decimated by 2 between scales; per scale the
//! local statistics give a numerator and a denominator summed in float
//! (`vif_statistic_s`, libvmaf's "matching_matlab" mode with its
//! polynomial `log2f`). Written: `VMAF_feature_vif_scale{0..3}_score` and,
//! with `debug`, `vif`, `vif_num`, `vif_den` and each scale's num and den.
//! The blur and the prescalers are SpEED's ports of the same libvmaf
//! tools (`speed::filter`).

use super::{c_max, check_bits, FloatPlane};
use crate::feature::options::{OptionKind, OptionSpec, DEBUG_OPTION};
use crate::feature::speed::filter::{self, Resize, ScaleMethod};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores};
use crate::{Error, Result};

const SCALE_SCORES: [&str; 4] = [
    "VMAF_feature_vif_scale0_score",
    "VMAF_feature_vif_scale1_score",
    "VMAF_feature_vif_scale2_score",
    "VMAF_feature_vif_scale3_score",
];
const DEBUG_NAMES: [&str; 11] = [
    "vif",
    "vif_num",
    "vif_den",
    "vif_num_scale0",
    "vif_den_scale0",
    "vif_num_scale1",
    "vif_den_scale1",
    "vif_num_scale2",
    "vif_den_scale2",
    "vif_num_scale3",
    "vif_den_scale3",
];

/// libvmaf's `VIF_BILINEAR_MAX_WIDTH`: its bilinear column tables' size.
const BILINEAR_MAX_WIDTH: usize = 7680;

const fn param(name: &'static str, alias: &'static str, help: &'static str, kind: OptionKind) -> OptionSpec {
    OptionSpec { name, alias: Some(alias), help, kind, feature_param: true }
}

static OPTIONS: [OptionSpec; 10] = [
    DEBUG_OPTION,
    param(
        "vif_enhn_gain_limit",
        "egl",
        "enhancement gain imposed on vif, must be >= 1.0, where 1.0 means the gain is completely disabled",
        OptionKind::Double { default: 100.0, min: 1.0, max: 100.0 },
    ),
    param(
        "vif_kernelscale",
        "ks",
        "scaling factor for the gaussian kernel (2.0 means multiplying the standard deviation by 2 and \
         enlarge the kernel size accordingly",
        OptionKind::Double { default: 1.0, min: 0.1, max: 4.0 },
    ),
    param(
        "vif_prescale",
        "ps",
        "scaling factor for the frame (2.0 means making the image twice as large on each dimension)",
        OptionKind::Double { default: 1.0, min: 0.1, max: 4.0 },
    ),
    param(
        "vif_scale1_min_val",
        "s1miv",
        "minimum value allowed; smaller values will be set to this value",
        OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
    ),
    param(
        "vif_scale2_min_val",
        "s2miv",
        "minimum value allowed; smaller values will be set to this value",
        OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
    ),
    param(
        "vif_scale3_min_val",
        "s3miv",
        "minimum value allowed; smaller values will be set to this value",
        OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
    ),
    param(
        "vif_prescale_method",
        "pm",
        "scaling method for the frame, supported options: [nearest, bilinear, bicubic, lanczos4]",
        OptionKind::Str { default: Some("nearest") },
    ),
    param("vif_sigma_nsq", "snsq", "neural noise variance", OptionKind::Double { default: 2.0, min: 0.0, max: 5.0 }),
    param(
        "vif_skip_scale0",
        "ssclz",
        "when set, skip scale 0 calculations",
        OptionKind::Bool { default: false },
    ),
];

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_vif",
    provided_features: &[
        SCALE_SCORES[0],
        SCALE_SCORES[1],
        SCALE_SCORES[2],
        SCALE_SCORES[3],
        "vif",
        "vif_num",
        "vif_den",
        "vif_num_scale0",
        "vif_den_scale0",
        "vif_num_scale1",
        "vif_den_scale1",
        "vif_num_scale2",
        "vif_den_scale2",
        "vif_num_scale3",
        "vif_den_scale3",
    ],
    options: &OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

/// What `vif_statistic_s` needs besides the planes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VifParams {
    pub enhn_gain_limit: f64,
    pub sigma_nsq: f64,
}

/// Scratch for one picture pair at the (prescaled) size, all at one
/// stride.
#[derive(Default)]
pub(crate) struct VifScratch {
    pub ref_scale: Vec<f32>,
    pub dis_scale: Vec<f32>,
    mu1: Vec<f32>,
    mu2: Vec<f32>,
    ref_sq: Vec<f32>,
    dis_sq: Vec<f32>,
    ref_dis: Vec<f32>,
    products: Vec<f32>,
    row: Vec<f32>,
}

impl VifScratch {
    pub(crate) fn new(len: usize) -> Self {
        let v = || vec![0.0f32; len];
        VifScratch {
            ref_scale: v(),
            dis_scale: v(),
            mu1: v(),
            mu2: v(),
            ref_sq: v(),
            dis_sq: v(),
            ref_dis: v(),
            products: v(),
            row: Vec::new(),
        }
    }
}

struct FloatVif {
    bits: u32,
    debug: bool,
    skip_scale0: bool,
    kernelscale: f32,
    params: VifParams,
    min_val: [f64; 3],
    names: Vec<String>,
    debug_names: Vec<String>,
    resize: Resize,
    /// Prescaled size and the common stride of every buffer.
    scaled: (usize, usize),
    stride: usize,
    reference: FloatPlane,
    distorted: FloatPlane,
    scratch: VifScratch,
}

/// The smallest picture whose every scale holds its filter's mirror
/// (libvmaf reads outside its buffers below it): per scale, the window's
/// half must fit the plane it blurs (before and after decimation).
fn check_scales(w: usize, h: usize, kernelscale: f32, skip_scale0: bool) -> Result<()> {
    let (mut cw, mut ch) = (w, h);
    for scale in 0..4 {
        let half = filter::filter_size(scale, kernelscale) / 2;
        let fits = |a: usize, b: usize| a > half && b > half;
        let ok = if scale == 0 {
            skip_scale0 || fits(cw, ch)
        } else {
            let before = fits(cw, ch);
            cw /= 2;
            ch /= 2;
            before && fits(cw, ch)
        };
        if !ok {
            return Err(Error::NotSupported(format!(
                "float_vif on a {w}x{h} picture (after prescaling): scale {scale}'s {}-tap filter \
                 does not fit the plane (libvmaf reads outside its buffers; 16x16 is the smallest at \
                 the default kernel scale)",
                2 * half + 1
            )));
        }
    }
    Ok(())
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_vif", bits)?;
    let o: &FeatureOptions = &cfg.options;
    let kernelscale = o.get_double(&OPTIONS, "vif_kernelscale");
    // libvmaf's compute_vif fails every frame with any other.
    if !filter::kernelscale_is_valid(kernelscale as f32) {
        return Err(Error::invalid(format!(
            "float_vif: vif_kernelscale={kernelscale} is not one of libvmaf's kernel scales \
             (1, 0.5, 1.5, 2, 2/3, 2.4, 360/97, 4/3, 3.5/3, 3.75/3, 4.25/3, 5/3, 3, 1/2.25, 1.4746, \
             1.54, 1.6, 1.06667, 0.711111, 0.74074, 1.111111)"
        )));
    }
    let method_name = o.get_str(&OPTIONS, "vif_prescale_method").unwrap_or_default();
    let method = ScaleMethod::parse(&method_name).ok_or_else(|| {
        Error::invalid(format!(
            "float_vif: vif_prescale_method={method_name}: expected nearest, bilinear, bicubic or lanczos4"
        ))
    })?;
    let prescale = o.get_double(&OPTIONS, "vif_prescale");
    let (w, h) = (cfg.width, cfg.height);
    let scaled = ((w as f64 * prescale + 0.5) as i32 as usize, (h as f64 * prescale + 0.5) as i32 as usize);
    if method == ScaleMethod::Bilinear && scaled.0 > BILINEAR_MAX_WIDTH {
        return Err(Error::NotSupported(format!(
            "float_vif: bilinear prescaling to {} wide (libvmaf's limit is {BILINEAR_MAX_WIDTH})",
            scaled.0
        )));
    }
    let skip_scale0 = o.get_bool(&OPTIONS, "vif_skip_scale0");
    check_scales(scaled.0, scaled.1, kernelscale as f32, skip_scale0)?;
    let stride = w.max(scaled.0);
    let len = stride * h.max(scaled.1);
    let name = |f: &str| DESCRIPTOR.feature_name(f, o);
    Ok(Box::new(FloatVif {
        bits,
        debug: o.get_bool(&OPTIONS, "debug"),
        skip_scale0,
        kernelscale: kernelscale as f32,
        params: VifParams {
            enhn_gain_limit: o.get_double(&OPTIONS, "vif_enhn_gain_limit"),
            sigma_nsq: o.get_double(&OPTIONS, "vif_sigma_nsq"),
        },
        min_val: [1, 2, 3].map(|s| o.get_double(&OPTIONS, &format!("vif_scale{s}_min_val"))),
        names: SCALE_SCORES.iter().map(|f| name(f)).collect(),
        debug_names: DEBUG_NAMES.iter().map(|f| name(f)).collect(),
        resize: Resize::new(method, w, h, scaled.0, scaled.1),
        scaled,
        stride,
        reference: FloatPlane::new(w, h),
        distorted: FloatPlane::new(w, h),
        scratch: VifScratch::new(len),
    }))
}

const LOG2_POLY: [f64; 9] = [
    -0.012671635276421,
    0.064841182402670,
    -0.157048836463065,
    0.257167726303123,
    -0.353800560300520,
    0.480131410397451,
    -0.721314327952201,
    1.442694803896991,
    0.0,
];

/// libvmaf's `log2f_approx` (VIF_OPT_FAST_LOG2): the exponent plus a
/// degree-8 polynomial of the mantissa, Horner's rule in float.
pub(crate) fn log2f_approx(x: f32) -> f32 {
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x < 0.0 {
        return f32::NAN;
    }
    let u = x.to_bits();
    let exponent = (u & 0x7F80_0000) >> 23;
    let remain = f32::from_bits((u & 0x007F_FFFF) | 0x3F80_0000);
    let log_base = (exponent as i32 - 127) as f32;
    let t = remain - 1.0;
    let mut var = 0.0f32;
    for c in LOG2_POLY {
        var = var * t + c as f32;
    }
    log_base + var
}

/// libvmaf's `vif_statistic_s` over `w` x `h` at `stride`: per sample the
/// "matching_matlab" numerator and denominator, each row summed in float,
/// the rows in float.
#[allow(clippy::too_many_arguments)]
pub(crate) fn statistic(
    mu1: &[f32],
    mu2: &[f32],
    xx: &[f32],
    yy: &[f32],
    xy: &[f32],
    w: usize,
    h: usize,
    stride: usize,
    p: VifParams,
) -> (f32, f32) {
    let nsq = p.sigma_nsq;
    let sigma_max_inv = ((nsq as f32).powf(2.0) as f64 / (255.0 * 255.0)) as f32;
    let eps = 1.0e-10f32;
    let gain_limit = p.enhn_gain_limit as f32;
    let (mut accum_num, mut accum_den) = (0.0f32, 0.0f32);
    for i in 0..h {
        let (mut row_num, mut row_den) = (0.0f32, 0.0f32);
        for j in i * stride..i * stride + w {
            let (m1, m2) = (mu1[j], mu2[j]);
            let mut sigma1_sq = xx[j] - m1 * m1;
            let mut sigma2_sq = yy[j] - m2 * m2;
            let sigma12 = xy[j] - m1 * m2;
            sigma1_sq = if sigma1_sq > 0.0 { sigma1_sq } else { 0.0 };
            sigma2_sq = if sigma2_sq > 0.0 { sigma2_sq } else { 0.0 };
            let mut g = sigma12 / (sigma1_sq + eps);
            let mut sv_sq = sigma2_sq - g * sigma12;
            if sigma1_sq < eps {
                g = 0.0;
                sv_sq = sigma2_sq;
                sigma1_sq = 0.0;
            }
            if sigma2_sq < eps {
                g = 0.0;
                sv_sq = 0.0;
            }
            if g < 0.0 {
                sv_sq = sigma2_sq;
                g = 0.0;
            }
            sv_sq = if sv_sq > eps { sv_sq } else { eps };
            g = if g < gain_limit { g } else { gain_limit };
            // float over double (sv_sq + the double nsq), so in double; the
            // argument of log2f rounds to float.
            let mut num = log2f_approx((1.0 + (g * g * sigma1_sq) as f64 / (sv_sq as f64 + nsq)) as f32);
            let mut den = log2f_approx((1.0 + sigma1_sq as f64 / nsq) as f32);
            if sigma12 < 0.0 {
                num = 0.0;
            }
            if (sigma1_sq as f64) < nsq {
                num = 1.0 - sigma2_sq * sigma_max_inv;
                den = 1.0;
            }
            row_num += num;
            row_den += den;
        }
        accum_num += row_num;
        accum_den += row_den;
    }
    (accum_num, accum_den)
}

/// libvmaf's `compute_vif` on `s.ref_scale` / `s.dis_scale` (`w` x `h` at
/// `stride`, overwritten by the decimated scales): each scale's
/// (num, den) as the floats libvmaf stores in doubles; scale 0 is `None`
/// when skipped.
#[allow(clippy::needless_range_loop)] // `scale` is libvmaf's scale index
pub(crate) fn compute(
    s: &mut VifScratch,
    mut w: usize,
    mut h: usize,
    stride: usize,
    kernelscale: f32,
    skip_scale0: bool,
    p: VifParams,
) -> [Option<(f32, f32)>; 4] {
    let mut out = [None; 4];
    for scale in 0..4 {
        let taps = filter::vif_filter(scale as i32, kernelscale);
        if scale > 0 {
            filter::filter1d(&taps, &s.ref_scale, &mut s.mu1, &mut s.row, w, h, stride);
            filter::filter1d(&taps, &s.dis_scale, &mut s.mu2, &mut s.row, w, h, stride);
            decimate2(&s.mu1, &mut s.ref_scale, w, h, stride);
            decimate2(&s.mu2, &mut s.dis_scale, w, h, stride);
            w /= 2;
            h /= 2;
        }
        if scale == 0 && skip_scale0 {
            continue;
        }
        filter::filter1d(&taps, &s.ref_scale, &mut s.mu1, &mut s.row, w, h, stride);
        filter::filter1d(&taps, &s.dis_scale, &mut s.mu2, &mut s.row, w, h, stride);
        // vif_filter1d_sq_s / _xy_s square (multiply) each sample in float
        // before its tap: the same values as blurring the products.
        multiply(&s.ref_scale, &s.ref_scale, &mut s.products, w, h, stride);
        filter::filter1d(&taps, &s.products, &mut s.ref_sq, &mut s.row, w, h, stride);
        multiply(&s.dis_scale, &s.dis_scale, &mut s.products, w, h, stride);
        filter::filter1d(&taps, &s.products, &mut s.dis_sq, &mut s.row, w, h, stride);
        multiply(&s.ref_scale, &s.dis_scale, &mut s.products, w, h, stride);
        filter::filter1d(&taps, &s.products, &mut s.ref_dis, &mut s.row, w, h, stride);
        out[scale] = Some(statistic(&s.mu1, &s.mu2, &s.ref_sq, &s.dis_sq, &s.ref_dis, w, h, stride, p));
    }
    out
}

fn multiply(a: &[f32], b: &[f32], out: &mut [f32], w: usize, h: usize, stride: usize) {
    for y in 0..h {
        let r = y * stride..y * stride + w;
        for ((o, &x), &z) in out[r.clone()].iter_mut().zip(&a[r.clone()]).zip(&b[r]) {
            *o = x * z;
        }
    }
}

/// `vif_dec2_s`: every other sample of every other row.
fn decimate2(src: &[f32], dst: &mut [f32], w: usize, h: usize, stride: usize) {
    for i in 0..h / 2 {
        for j in 0..w / 2 {
            dst[i * stride + j] = src[i * 2 * stride + j * 2];
        }
    }
}

/// Copies a `FloatPlane` into a buffer of `stride` samples a row.
fn place(src: &FloatPlane, dst: &mut [f32], stride: usize) {
    for y in 0..src.height {
        dst[y * stride..y * stride + src.width].copy_from_slice(src.row(y));
    }
}

impl Extractor for FloatVif {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        self.reference.copy_from(&frame.reference.luma(), -128, self.bits);
        self.distorted.copy_from(&frame.distorted.luma(), -128, self.bits);
        let stride = self.stride;
        let s = &mut self.scratch;
        // The prescaler reads the copy and writes the scale-0 buffer; at
        // the same size it copies (Resize leaves `dst` as it is).
        place(&self.reference, &mut s.mu1, stride);
        place(&self.distorted, &mut s.mu2, stride);
        place(&self.reference, &mut s.ref_scale, stride);
        place(&self.distorted, &mut s.dis_scale, stride);
        self.resize.run(&s.mu1, &mut s.ref_scale, stride);
        self.resize.run(&s.mu2, &mut s.dis_scale, stride);
        let (w, h) = self.scaled;
        let scores = compute(s, w, h, stride, self.kernelscale, self.skip_scale0, self.params);
        let (mut num_total, mut den_total) = (0.0f64, 0.0f64);
        for (num, den) in scores.iter().flatten() {
            num_total += *num as f64;
            den_total += *den as f64;
        }
        let vif = if den_total == 0.0 { 1.0 } else { num_total / den_total };
        let ratio = |s: usize| scores[s].map_or(0.0, |(n, d)| n as f64 / d as f64);
        out.push(&self.names[0], if self.skip_scale0 { 0.0 } else { ratio(0) });
        for s in 1..4 {
            out.push(&self.names[s], c_max(ratio(s), self.min_val[s - 1]));
        }
        if self.debug {
            out.push(&self.debug_names[0], vif);
            out.push(&self.debug_names[1], num_total);
            out.push(&self.debug_names[2], den_total);
            for (s, score) in scores.iter().enumerate() {
                let (n, d) = match *score {
                    Some((n, d)) => (n as f64, d as f64),
                    None => (0.0, -1.0),
                };
                out.push(&self.debug_names[3 + 2 * s], n);
                out.push(&self.debug_names[4 + 2 * s], d);
            }
        }
        Ok(())
    }
}
