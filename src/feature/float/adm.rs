//! `float_adm` (libvmaf `feature/float_adm.c`, `adm.c`, `adm_tools.c`):
//! the detail loss measure in float, on four scales of a Daubechies-2 DWT
//! of the luma (copied less 128).
//!
//! Per scale: the distorted detail bands are split into a restored part
//! and an additive impairment (`decouple`, with libvmaf's approximate
//! reciprocal, `adm_rcp`), weighted by the CSF (`csf`), contrast-masked by
//! each other (`cm`) and summed as p-th powers against the reference's
//! (`den_scale`). Written: `VMAF_feature_adm2_score`, `_aim_score`,
//! `_adm3_score`, `_adm_scale{0..3}_score`, and with `debug` `adm`,
//! `adm_num`, `adm_den` and each scale's num and den. The CSF weights
//! are the integer ADM's (`adm::csf`), plus libvmaf's float-only "ADM"
//! CSF (`adm_csf_mode=2`).

use std::f64::consts::PI;

use super::adm_rcp::divs;
use super::{c_max, c_min, check_bits, check_size, FloatPlane};
use crate::feature::adm::csf::{barten_csf, dwt_quant_step, DEFAULT_CSF_LUM};
use crate::feature::options::{OptionKind, OptionSpec, DEBUG_OPTION};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores};
use crate::Result;

const ADM2: &str = "VMAF_feature_adm2_score";
const AIM: &str = "VMAF_feature_aim_score";
const ADM3: &str = "VMAF_feature_adm3_score";
const SCALES: [&str; 4] = [
    "VMAF_feature_adm_scale0_score",
    "VMAF_feature_adm_scale1_score",
    "VMAF_feature_adm_scale2_score",
    "VMAF_feature_adm_scale3_score",
];
const DEBUG_NAMES: [&str; 11] = [
    "adm",
    "adm_num",
    "adm_den",
    "adm_num_scale0",
    "adm_den_scale0",
    "adm_num_scale1",
    "adm_den_scale1",
    "adm_num_scale2",
    "adm_den_scale2",
    "adm_num_scale3",
    "adm_den_scale3",
];

/// libvmaf's `ADM_BORDER_FACTOR`.
const BORDER_FACTOR: f64 = 0.1;
/// `FLOAT_ONE_BY_30`, `FLOAT_ONE_BY_15`: double literals in libvmaf.
const ONE_BY_30: f64 = 0.0333333351;
const ONE_BY_15: f64 = 0.0666666701;
/// The float ADM's CSF modes (`adm_options.h`); every other value is
/// Watson's.
const CSF_MODE_BARTEN: i32 = 1;
const CSF_MODE_ADM: i32 = 2;
/// The smallest side whose four DWT scales stay inside libvmaf's buffers
/// (as for the integer ADM).
const MIN_SIDE: usize = 33;

const fn param(name: &'static str, alias: &'static str, help: &'static str, kind: OptionKind) -> OptionSpec {
    OptionSpec { name, alias: Some(alias), help, kind, feature_param: true }
}
const fn factor(name: &'static str, alias: &'static str, help: &'static str) -> OptionSpec {
    param(name, alias, help, OptionKind::Double { default: -1.0, min: -1.0, max: 10.0 })
}

static OPTIONS: [OptionSpec; 23] = [
    DEBUG_OPTION,
    param(
        "adm_enhn_gain_limit",
        "egl",
        "enhancement gain imposed on adm, must be >= 1.0, where 1.0 means the gain is completely disabled",
        OptionKind::Double { default: 100.0, min: 1.0, max: 100.0 },
    ),
    param(
        "adm_norm_view_dist",
        "nvd",
        "normalized viewing distance = viewing distance / ref display's physical height",
        OptionKind::Double { default: 3.0, min: 0.75, max: 24.0 },
    ),
    param("adm_noise_weight", "nw", "noise weight", OptionKind::Double { default: 0.03125, min: 0.0, max: 1500.0 }),
    param("adm_csf_scale", "scf", "scale factor for the CSF", OptionKind::Double { default: 1.0, min: 0.0, max: 50.0 }),
    param(
        "adm_csf_diag_scale",
        "scfd",
        "scale factor for the CSF diag",
        OptionKind::Double { default: 1.0, min: 0.0, max: 50.0 },
    ),
    param(
        "adm_ref_display_height",
        "rdf",
        "reference display height in pixels",
        OptionKind::Int { default: 1080, min: 1, max: 4320 },
    ),
    param("adm_csf_mode", "csf", "contrast sensitivity function", OptionKind::Int { default: 0, min: 0, max: 9 }),
    param("adm_bypass_cm", "bcm", "bypass contrast masking (CM)", OptionKind::Int { default: 0, min: 0, max: 1 }),
    param(
        "adm_adm3_apply_hm",
        "aah",
        "apply harmonic mean to combine DLM and AIM",
        OptionKind::Bool { default: false },
    ),
    param("adm_p_norm", "apn", "p-norm for energy vector", OptionKind::Double { default: 3.0, min: 1.0, max: 20.0 }),
    param(
        "adm_dlm_weight",
        "dlmw",
        "linear weighting between DLM and AIM; 1 corresponds to DLM-only",
        OptionKind::Double { default: 0.5, min: 0.0, max: 1.0 },
    ),
    param(
        "adm_min_val",
        "min",
        "minimum value allowed; lower values will be clipped to this value",
        OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
    ),
    factor("adm_f1s0", "f1s0", "factor1 scale0"),
    factor("adm_f1s1", "f1s1", "factor1 scale1"),
    factor("adm_f1s2", "f1s2", "factor1 scale2"),
    factor("adm_f1s3", "f1s3", "factor1 scale3"),
    factor("adm_f2s0", "f2s0", "factor2 scale0"),
    factor("adm_f2s1", "f2s1", "factor2 scale1"),
    factor("adm_f2s2", "f2s2", "factor2 scale2"),
    factor("adm_f2s3", "f2s3", "factor2 scale3"),
    // libvmaf's default (-1) lies outside its own range: no scale skipped.
    param(
        "adm_skip_aim_scale",
        "sasc",
        "when set, skip AIM calculations for that scale",
        OptionKind::Int { default: -1, min: 0, max: 3 },
    ),
    param("adm_skip_scale0", "ssz", "skip the calculation of scale 0", OptionKind::Bool { default: false }),
];

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_adm",
    provided_features: &[
        ADM2, AIM, ADM3, SCALES[0], SCALES[1], SCALES[2], SCALES[3], "adm_num", "adm_den", "adm_scale0",
        "adm_num_scale0", "adm_den_scale0", "adm_num_scale1", "adm_den_scale1", "adm_num_scale2",
        "adm_den_scale2", "adm_num_scale3", "adm_den_scale3",
    ],
    options: &OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

/// The options `compute_adm` reads.
#[derive(Clone, Copy, Debug)]
struct AdmParams {
    enhn_gain_limit: f64,
    norm_view_dist: f64,
    ref_display_height: i32,
    csf_mode: i32,
    csf_scale: f64,
    csf_diag_scale: f64,
    noise_weight: f64,
    bypass_cm: bool,
    p_norm: f64,
    f1: [f64; 4],
    f2: [f64; 4],
    skip_aim_scale: i32,
    skip_scale0: bool,
}

/// libvmaf's `adm_native_csf` (`adm_csf_tools.h`), the "ADM" CSF mode.
fn native_csf(lambda: usize, nvd: f64, rdh: i32, diagonal: bool) -> f32 {
    let r = (nvd * rdh as f64 * PI / 180.0) as f32;
    let mut sf = (r as f64 / 2f64.powf((lambda + 1) as f64)) as f32;
    if diagonal {
        sf = (sf as f64 / 0.7) as f32;
    }
    ((0.31 + 0.69 * sf as f64) * (-0.29 * sf as f64).exp()) as f32
}

/// `rfactor[3]` of `scale`: the h, v and d bands' CSF weights, or the
/// `adm_f1s*` / `adm_f2s*` overrides.
fn rfactors(p: &AdmParams, scale: usize) -> [f32; 3] {
    let (nvd, rdh) = (p.norm_view_dist, p.ref_display_height);
    let (mut f1, mut f2) = match p.csf_mode {
        CSF_MODE_BARTEN => (
            barten_csf(scale, nvd, rdh, DEFAULT_CSF_LUM, p.csf_scale),
            barten_csf(scale, nvd, rdh, DEFAULT_CSF_LUM, p.csf_diag_scale),
        ),
        CSF_MODE_ADM => (native_csf(scale, nvd, rdh, false), native_csf(scale, nvd, rdh, true)),
        _ => (1.0f32 / dwt_quant_step(scale, 1, nvd, rdh), 1.0f32 / dwt_quant_step(scale, 2, nvd, rdh)),
    };
    if p.f1[scale] >= 0.0 {
        f1 = p.f1[scale] as f32;
    }
    if p.f2[scale] >= 0.0 {
        f2 = p.f2[scale] as f32;
    }
    [f1, f1, f2]
}

/// One scale's four DWT bands at the buffers' common stride.
#[derive(Default)]
struct Bands {
    a: Vec<f32>,
    /// h, v, d: the order of libvmaf's `theta` loops.
    hvd: [Vec<f32>; 3],
}

impl Bands {
    fn new(len: usize) -> Self {
        Bands { a: vec![0.0; len], hvd: [vec![0.0; len], vec![0.0; len], vec![0.0; len]] }
    }
}

type Hvd = [Vec<f32>; 3];

fn hvd(len: usize) -> Hvd {
    [vec![0.0; len], vec![0.0; len], vec![0.0; len]]
}

/// libvmaf's `dwt2_db2_coeffs_lo_s` / `_hi_s`: double literals as floats.
fn db2() -> ([f32; 4], [f32; 4]) {
    let lo = [0.482962913144690f64, 0.836516303737469, 0.224143868041857, -0.129409522550921];
    let hi = [-0.129409522550921f64, -0.224143868041857, 0.836516303737469, -0.482962913144690];
    (lo.map(|c| c as f32), hi.map(|c| c as f32))
}

/// `dwt2_src_indices_filt_s` for one direction of `n` samples: the four
/// taps of each output, mirrored (-1 reads 1; n reads n-1).
fn dwt_indices(n: usize) -> Vec<[usize; 4]> {
    let n = n as isize;
    let past = |i: isize| if i >= n { 2 * n - i - 1 } else { i };
    (0..(n + 1) / 2)
        .map(|i| {
            let i0 = 2 * i - 1;
            let i0 = if i0 < 0 { -i0 } else { past(i0) };
            [i0, past(2 * i), past(2 * i + 1), past(2 * i + 2)].map(|v| v as usize)
        })
        .collect()
}

#[inline]
fn taps4(f: &[f32; 4], s: [f32; 4]) -> f32 {
    let mut accum = 0.0f32;
    for k in 0..4 {
        accum += f[k] * s[k];
    }
    accum
}

/// `adm_dwt2_s` (all four bands) or, `lo_only`, `adm_dwt2_lo_s` (band a):
/// `w` x `h` of `src` at `src_stride` into `dst` at `stride`.
#[allow(clippy::too_many_arguments)]
fn dwt2(src: &[f32], src_stride: usize, w: usize, h: usize, dst: &mut Bands, stride: usize, lo_only: bool, tmp: &mut [Vec<f32>; 2]) {
    let (lo, hi) = db2();
    let (iy, ix) = (dwt_indices(h), dwt_indices(w));
    let [tmplo, tmphi] = tmp;
    tmplo.resize(w, 0.0);
    tmphi.resize(w, 0.0);
    for (i, rows) in iy.iter().enumerate() {
        for j in 0..w {
            let s = rows.map(|r| src[r * src_stride + j]);
            tmplo[j] = taps4(&lo, s);
            if !lo_only {
                tmphi[j] = taps4(&hi, s);
            }
        }
        for (j, cols) in ix.iter().enumerate() {
            let o = i * stride + j;
            let s = cols.map(|c| tmplo[c]);
            dst.a[o] = taps4(&lo, s);
            if lo_only {
                continue;
            }
            dst.hvd[1][o] = taps4(&hi, s);
            let s = cols.map(|c| tmphi[c]);
            dst.hvd[0][o] = taps4(&lo, s);
            dst.hvd[2][o] = taps4(&hi, s);
        }
    }
}

/// The region `adm_decouple_s` and `adm_csf_s` compute: the inner part
/// less `BORDER_FACTOR` of each side, widened by the filter's taps.
fn wide_region(w: usize, h: usize) -> (usize, usize, usize, usize) {
    let (w, h) = (w as i32, h as i32);
    let left = (w as f64 * BORDER_FACTOR - 0.5 - 1.0) as i32;
    let top = (h as f64 * BORDER_FACTOR - 0.5 - 1.0) as i32;
    let (right, bottom) = ((w - left + 2).min(w), (h - top + 2).min(h));
    (left.max(0) as usize, top.max(0) as usize, right as usize, bottom as usize)
}

/// The region the sums cover (`adm_cm_s`, `adm_csf_den_scale_s`).
fn inner_region(w: usize, h: usize) -> (usize, usize, usize, usize) {
    let left = (w as f64 * BORDER_FACTOR - 0.5) as i32;
    let top = (h as f64 * BORDER_FACTOR - 0.5) as i32;
    (left as usize, top as usize, (w as i32 - left) as usize, (h as i32 - top) as usize)
}

/// `adm_decouple_s`: the distorted bands split into the part restored
/// from the reference (`r`) and the additive impairment (`a`).
#[allow(clippy::too_many_arguments)]
fn decouple(reference: &Bands, distorted: &Bands, r: &mut Hvd, a: &mut Hvd, w: usize, h: usize, stride: usize, egl: f64) {
    let cos_1deg = (1.0 * PI / 180.0).cos();
    let cos_1deg_sq = (cos_1deg * cos_1deg) as f32;
    let eps = 1e-30f64 as f32;
    let (left, top, right, bottom) = wide_region(w, h);
    let [oh_, ov_, od_] = &reference.hvd;
    let [th_, tv_, td_] = &distorted.hvd;
    // C: rst > 0.0 ? MIN(rst * limit, t) in double, stored as float.
    let enhance = |rst: f32, t: f32, flag: bool| -> f32 {
        let mut rst = rst;
        if flag && (rst as f64) > 0.0 {
            rst = c_min(rst as f64 * egl, t as f64) as f32;
        }
        if flag && (rst as f64) < 0.0 {
            rst = c_max(rst as f64 * egl, t as f64) as f32;
        }
        rst
    };
    // C's comparisons, as written (a NaN passes through).
    #[allow(clippy::manual_clamp)]
    let clip = |k: f32| if k < 0.0 { 0.0 } else if k > 1.0 { 1.0 } else { k };
    for i in top..bottom {
        for o in i * stride + left..i * stride + right {
            let (oh, ov, od) = (oh_[o], ov_[o], od_[o]);
            let (th, tv, td) = (th_[o], tv_[o], td_[o]);
            let kh = clip(divs(th, oh + eps));
            let kv = clip(divs(tv, ov + eps));
            let kd = clip(divs(td, od + eps));
            let ot_dp = oh * th + ov * tv;
            let o_mag_sq = oh * oh + ov * ov;
            let t_mag_sq = th * th + tv * tv;
            let flag = ot_dp >= 0.0 && ot_dp * ot_dp >= cos_1deg_sq * o_mag_sq * t_mag_sq;
            let rst_h = enhance(kh * oh, th, flag);
            let rst_v = enhance(kv * ov, tv, flag);
            let rst_d = enhance(kd * od, td, flag);
            r[0][o] = rst_h;
            r[1][o] = rst_v;
            r[2][o] = rst_d;
            a[0][o] = th - rst_h;
            a[1][o] = tv - rst_v;
            a[2][o] = td - rst_d;
        }
    }
}

/// `adm_csf_s`: `dst` = the CSF-weighted bands, `flt` = a thirtieth of
/// their magnitude (the masking neighbours).
fn csf(src: &Hvd, dst: &mut Hvd, flt: &mut Hvd, rfactor: [f32; 3], w: usize, h: usize, stride: usize) {
    let (left, top, right, bottom) = wide_region(w, h);
    for theta in 0..3 {
        for i in top..bottom {
            for o in i * stride + left..i * stride + right {
                let v = rfactor[theta] * src[theta][o];
                dst[theta][o] = v;
                flt[theta][o] = (ONE_BY_30 * v.abs() as f64) as f32;
            }
        }
    }
}

/// `x^p` as libvmaf sums it: cubed in float for p = 3, else `powf`.
#[inline]
fn power(x: f32, p: f64) -> f32 {
    if p == 3.0 {
        x * x * x
    } else {
        x.powf(p as f32)
    }
}

/// `get_noise_constant`.
fn noise_constant(w: usize, h: usize, weight: f64, p: f64) -> f32 {
    (((w as i32 * h as i32) as f64 * weight) as f32).powf((1.0 / p) as f32)
}

/// `adm_csf_den_scale_s`: the reference's CSF-weighted p-norm per band
/// plus the noise constant, summed over the bands.
fn reference_energy(reference: &Bands, rfactor: [f32; 3], w: usize, h: usize, stride: usize, p: &AdmParams) -> f32 {
    let (left, top, right, bottom) = inner_region(w, h);
    let mut accum = [0.0f32; 3];
    for i in top..bottom {
        let mut inner = [0.0f32; 3];
        for o in i * stride + left..i * stride + right {
            for t in 0..3 {
                inner[t] += power((rfactor[t] * reference.hvd[t][o]).abs(), p.p_norm);
            }
        }
        for t in 0..3 {
            accum[t] += inner[t];
        }
    }
    let noise = noise_constant(right - left, bottom - top, p.noise_weight, p.p_norm);
    let norm = |a: f32| a.powf((1.0 / p.p_norm) as f32) + noise;
    norm(accum[0]) + norm(accum[1]) + norm(accum[2])
}

/// The masking threshold at (i, j) (libvmaf's `ADM_CM_THRESH_S_*`): per
/// band, the 3x3 neighbourhood of `flt` with the centre replaced by a
/// fifteenth of `|csf|` (added in double), mirrored at the picture's
/// edges (-1 reads 1; n reads n-1); the bands' sums added in float.
#[inline]
fn threshold(csf: &Hvd, flt: &Hvd, i: usize, j: usize, w: usize, h: usize, stride: usize) -> f32 {
    let up = if i == 0 { 1 } else { i - 1 };
    let down = if i + 1 == h { h - 1 } else { i + 1 };
    let lt = if j == 0 { 1 } else { j - 1 };
    let rt = if j + 1 == w { w - 1 } else { j + 1 };
    let mut thr = 0.0f32;
    for t in 0..3 {
        let f = &flt[t];
        let mut sum = 0.0f32;
        for (k, row) in [up, i, down].into_iter().enumerate() {
            let base = row * stride;
            sum += f[base + lt];
            if k == 1 {
                sum = (sum as f64 + ONE_BY_15 * csf[t][base + j].abs() as f64) as f32;
            } else {
                sum += f[base + j];
            }
            sum += f[base + rt];
        }
        thr += sum;
    }
    thr
}

/// `adm_cm_s`: the p-norm of `src`'s CSF-weighted bands less the masking
/// threshold of the masker (its `csf` and `flt`), plus the noise
/// constant, summed over the bands.
#[allow(clippy::too_many_arguments)]
fn cm(src: &Hvd, csf: &Hvd, flt: &Hvd, rfactor: [f32; 3], w: usize, h: usize, stride: usize, noise_weight: f64, p: &AdmParams) -> f32 {
    let (left, top, right, bottom) = inner_region(w, h);
    let mut accum = [0.0f32; 3];
    for i in top..bottom {
        let mut inner = [0.0f32; 3];
        for j in left..right {
            let o = i * stride + j;
            let thr = if p.bypass_cm { 0.0 } else { threshold(csf, flt, i, j, w, h, stride) };
            for t in 0..3 {
                let x = (src[t][o] * rfactor[t]).abs() - thr;
                let x = if x < 0.0 { 0.0 } else { x };
                inner[t] += power(x, p.p_norm);
            }
        }
        for t in 0..3 {
            accum[t] += inner[t];
        }
    }
    let noise = noise_constant(right - left, bottom - top, noise_weight, p.p_norm);
    let norm = |a: f32| a.powf((1.0 / p.p_norm) as f32) + noise;
    norm(accum[0]) + norm(accum[1]) + norm(accum[2])
}

/// Scratch for one frame pair.
struct AdmScratch {
    reference: Bands,
    distorted: Bands,
    /// The previous scale's band a (the next scale's input).
    ref_src: Vec<f32>,
    dis_src: Vec<f32>,
    r: Hvd,
    a: Hvd,
    csf: Hvd,
    flt: Hvd,
    tmp: [Vec<f32>; 2],
}

/// What `compute_adm` returns: adm (num / den), aim, num, den, and each
/// scale's (num, den) as floats.
struct AdmScores {
    score: f64,
    aim: f64,
    num: f64,
    den: f64,
    scales: [(f32, f32); 4],
}

/// libvmaf's `compute_adm` on a `w` x `h` pair.
#[allow(clippy::needless_range_loop)] // `scale` is libvmaf's scale index
fn compute(r: &FloatPlane, d: &FloatPlane, s: &mut AdmScratch, p: &AdmParams) -> AdmScores {
    let (mut w, mut h) = (r.width, r.height);
    let stride = w.div_ceil(2);
    let limit = 1e-10 * (w as i32 * h as i32) as f64 / (1920.0 * 1080.0);
    let (mut num, mut den, mut aim_num, mut aim_den) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut scales = [(0.0f32, 0.0f32); 4];
    for scale in 0..4 {
        let (num_scale, den_scale, aim_num_scale);
        let skip = scale == 0 && p.skip_scale0;
        {
            let (rs, ds, src_stride): (&[f32], &[f32], usize) =
                if scale == 0 { (&r.data, &d.data, r.width) } else { (&s.ref_src, &s.dis_src, stride) };
            dwt2(rs, src_stride, w, h, &mut s.reference, stride, skip, &mut s.tmp);
            dwt2(ds, src_stride, w, h, &mut s.distorted, stride, skip, &mut s.tmp);
        }
        w = w.div_ceil(2);
        h = h.div_ceil(2);
        if skip {
            // libvmaf's "avoid divide by zero".
            (num_scale, den_scale, aim_num_scale) = (0.0f32, 1e-10f64 as f32, 0.0f32);
        } else {
            let rf = rfactors(p, scale);
            decouple(&s.reference, &s.distorted, &mut s.r, &mut s.a, w, h, stride, p.enhn_gain_limit);
            den_scale = reference_energy(&s.reference, rf, w, h, stride, p);
            csf(&s.a, &mut s.csf, &mut s.flt, rf, w, h, stride);
            num_scale = cm(&s.r, &s.csf, &s.flt, rf, w, h, stride, p.noise_weight, p);
            csf(&s.r, &mut s.csf, &mut s.flt, rf, w, h, stride);
            aim_num_scale = cm(&s.a, &s.csf, &s.flt, rf, w, h, stride, 0.0, p);
        }
        num += num_scale as f64;
        den += den_scale as f64;
        if p.skip_aim_scale != scale as i32 {
            aim_den += den_scale as f64;
            aim_num += aim_num_scale as f64;
        }
        std::mem::swap(&mut s.ref_src, &mut s.reference.a);
        std::mem::swap(&mut s.dis_src, &mut s.distorted.a);
        scales[scale] = (num_scale, den_scale);
    }
    num = if num < limit { 0.0 } else { num };
    den = if den < limit { 0.0 } else { den };
    // With no reference energy libvmaf leaves aim unset (its value is
    // whatever its stack held); vmafx writes 0 there (docs/correctness.md).
    let (score, aim) = if den == 0.0 { (1.0, 0.0) } else { (num / den, c_min(aim_num / aim_den, 1.0)) };
    AdmScores { score, aim, num, den, scales }
}

struct FloatAdm {
    bits: u32,
    debug: bool,
    apply_hm: bool,
    dlm_weight: f64,
    min_val: f64,
    params: AdmParams,
    names: Vec<String>,
    debug_names: Vec<String>,
    reference: FloatPlane,
    distorted: FloatPlane,
    scratch: AdmScratch,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_adm", bits)?;
    check_size(
        "float_adm",
        cfg.width,
        cfg.height,
        MIN_SIDE,
        MIN_SIDE,
        "below, libvmaf's coarsest DWT scale reads outside its buffers",
    )?;
    let o: &FeatureOptions = &cfg.options;
    let d = |n: &str| o.get_double(&OPTIONS, n);
    let params = AdmParams {
        enhn_gain_limit: d("adm_enhn_gain_limit"),
        norm_view_dist: d("adm_norm_view_dist"),
        ref_display_height: o.get_int(&OPTIONS, "adm_ref_display_height"),
        csf_mode: o.get_int(&OPTIONS, "adm_csf_mode"),
        csf_scale: d("adm_csf_scale"),
        csf_diag_scale: d("adm_csf_diag_scale"),
        noise_weight: d("adm_noise_weight"),
        bypass_cm: o.get_int(&OPTIONS, "adm_bypass_cm") != 0,
        p_norm: d("adm_p_norm"),
        f1: [0, 1, 2, 3].map(|s| d(&format!("adm_f1s{s}"))),
        f2: [0, 1, 2, 3].map(|s| d(&format!("adm_f2s{s}"))),
        skip_aim_scale: o.get_int(&OPTIONS, "adm_skip_aim_scale"),
        skip_scale0: o.get_bool(&OPTIONS, "adm_skip_scale0"),
    };
    let name = |f: &str| DESCRIPTOR.feature_name(f, o);
    let (w, h) = (cfg.width, cfg.height);
    let len = w.div_ceil(2) * h.div_ceil(2);
    Ok(Box::new(FloatAdm {
        bits,
        debug: o.get_bool(&OPTIONS, "debug"),
        apply_hm: o.get_bool(&OPTIONS, "adm_adm3_apply_hm"),
        dlm_weight: d("adm_dlm_weight"),
        min_val: d("adm_min_val"),
        params,
        names: [ADM2, AIM, ADM3, SCALES[0], SCALES[1], SCALES[2], SCALES[3]].iter().map(|f| name(f)).collect(),
        // libvmaf names a value by the options only if it is among the
        // provided features: "adm" is not, and keeps its name.
        debug_names: DEBUG_NAMES.iter().map(|f| if DESCRIPTOR.provides(f) { name(f) } else { f.to_string() }).collect(),
        reference: FloatPlane::new(w, h),
        distorted: FloatPlane::new(w, h),
        scratch: AdmScratch {
            reference: Bands::new(len),
            distorted: Bands::new(len),
            ref_src: vec![0.0; len],
            dis_src: vec![0.0; len],
            r: hvd(len),
            a: hvd(len),
            csf: hvd(len),
            flt: hvd(len),
            tmp: [Vec::new(), Vec::new()],
        },
    }))
}

impl Extractor for FloatAdm {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        self.reference.copy_from(&frame.reference.luma(), -128, self.bits);
        self.distorted.copy_from(&frame.distorted.luma(), -128, self.bits);
        let s = compute(&self.reference, &self.distorted, &mut self.scratch, &self.params);
        let adm3 = if self.apply_hm {
            c_max(2.0 * s.score * s.aim / (s.score + s.aim), self.min_val)
        } else {
            c_max(s.score * self.dlm_weight + (1.0 - s.aim) * (1.0 - self.dlm_weight), self.min_val)
        };
        out.push(&self.names[0], s.score);
        out.push(&self.names[1], s.aim);
        out.push(&self.names[2], adm3);
        for (k, (n, d)) in s.scales.iter().enumerate() {
            out.push(&self.names[3 + k], *n as f64 / *d as f64);
        }
        if self.debug {
            out.push(&self.debug_names[0], s.score);
            out.push(&self.debug_names[1], s.num);
            out.push(&self.debug_names[2], s.den);
            for (k, (n, d)) in s.scales.iter().enumerate() {
                out.push(&self.debug_names[3 + 2 * k], *n as f64);
                out.push(&self.debug_names[4 + 2 * k], *d as f64);
            }
        }
        Ok(())
    }
}
