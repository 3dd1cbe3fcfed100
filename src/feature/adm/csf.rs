//! Contrast sensitivity factors of libvmaf 3.2.0's integer ADM: the per-scale
//! weights of the h/v and diagonal bands (`dwt_quant_step` in
//! `feature/integer_adm.c`, `barten_csf` and the blended tables in
//! `feature/barten_csf_tools.h`), with C's float/double mixing kept
//! operation for operation.

use std::f64::consts::PI;

/// `enum ADM_CSF_MODE` of `integer_adm.h`.
pub(crate) const CSF_MODE_WATSON97: i32 = 0;
pub(crate) const CSF_MODE_BARTEN: i32 = 1;
pub(crate) const CSF_MODE_BARTEN_WATSON_BLEND: i32 = 2;
pub(crate) const CSF_MODE_BARTEN_WATSON_BLEND_MAE: i32 = 3;

/// DEFAULT_ADM_CSF_LUM (cd/m2).
pub(crate) const DEFAULT_CSF_LUM: f64 = 100.0;

/// Watson's 7-9 wavelet threshold model for luma (`dwt_7_9_YCbCr_threshold[0]`).
struct DwtModel {
    a: f32,
    k: f32,
    f0: f32,
    g: [f32; 4],
}
const DWT_7_9_Y: DwtModel = DwtModel { a: 0.495, k: 0.466, f0: 0.401, g: [1.501, 1.0, 0.534, 1.0] };

/// `dwt_7_9_basis_function_amplitudes[lambda][theta]`.
const BASIS_AMPLITUDES: [[f32; 4]; 6] = [
    [0.62171, 0.67234, 0.72709, 0.67234],
    [0.34537, 0.41317, 0.49428, 0.41317],
    [0.18004, 0.22727, 0.28688, 0.22727],
    [0.091401, 0.11792, 0.15214, 0.11792],
    [0.045943, 0.059758, 0.077727, 0.059758],
    [0.023013, 0.030018, 0.039156, 0.030018],
];

/// The options that shape the CSF.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CsfOptions {
    pub mode: i32,
    pub norm_view_dist: f64,
    pub ref_display_height: i32,
    pub csf_scale: f64,
    pub csf_diag_scale: f64,
}

/// Display visual resolution in pixels per degree, as a float (C: `float r`).
fn display_resolution(nvd: f64, rdh: i32) -> f32 {
    (nvd * rdh as f64 * PI / 180.0) as f32
}

/// `dwt_quant_step`: Watson's quantisation step of band `theta` at `lambda`.
pub(crate) fn dwt_quant_step(lambda: usize, theta: usize, nvd: f64, rdh: i32) -> f32 {
    let p = &DWT_7_9_Y;
    let r = display_resolution(nvd, rdh);
    let temp = (2f64.powf((lambda + 1) as f64) * p.f0 as f64 * p.g[theta] as f64 / r as f64).log10() as f32;
    (2.0 * p.a as f64 * 10f64.powf((p.k * temp * temp) as f64) / BASIS_AMPLITUDES[lambda][theta] as f64) as f32
}

const BARTEN_ANCHORS: [f32; 6] = [0.002, 0.02, 0.2, 2.0, 20.0, 150.0];
const BARTEN_PARAMS: [[f32; 5]; 6] = [
    [0.0160737, 0.991265, 3.74038, 0.50722, 4.46044],
    [0.383873, 0.800889, 3.54104, 0.682505, 4.94958],
    [0.929301, 0.476505, 4.37453, 0.750315, 5.28678],
    [1.29776, 0.405782, 4.40602, 0.935314, 5.61425],
    [1.49222, 0.334278, 3.79542, 1.07327, 6.4635],
    [1.46213, 0.394533, 2.7755, 1.16577, 7.45665],
];
const BARTEN_SA: [f32; 4] = [30.162, 4.0627, 1.6596, 0.2712];
#[allow(clippy::excessive_precision)] // libvmaf's literals, rounded to float as C does
const BARTEN_MTF_A: [f32; 4] = [0.424838596301290, 0.572435103936480, 0.000167576239164937, 0.00255872352306433];
const BARTEN_MTF_B: [f32; 4] = [0.028, 0.37, 37.0, 360.0];

fn linear_interpolate(left_pos: f32, left_val: f32, right_pos: f32, right_val: f32, pos: f32) -> f32 {
    left_val + ((right_val - left_val) / (right_pos - left_pos)) * (pos - left_pos)
}

fn barten_rod_cone_sens(lum: f32) -> f32 {
    let sens_drop = BARTEN_SA[1];
    let trans_slope = BARTEN_SA[2];
    let low_slope = BARTEN_SA[3];
    (BARTEN_SA[0] as f64
        * (((sens_drop / lum) as f64).powf(trans_slope as f64) + 1.0).powf(-low_slope as f64)) as f32
}

fn barten_mtf(sf: f32) -> f32 {
    let mut mtf = 0.0f32;
    for i in 0..4 {
        mtf = (mtf as f64 + BARTEN_MTF_A[i] as f64 * ((-BARTEN_MTF_B[i] * sf) as f64).exp()) as f32;
    }
    mtf
}

/// `barten_csf` of `barten_csf_tools.h`.
pub(crate) fn barten_csf(lambda: usize, nvd: f64, rdh: i32, lum: f64, csf_scale: f64) -> f32 {
    let r = display_resolution(nvd, rdh);
    let sf = (r as f64 / 2f64.powf((lambda + 1) as f64)) as f32;
    let (lo, hi) = (BARTEN_ANCHORS[0] as f64, BARTEN_ANCHORS[5] as f64);
    let clamped = if lum > hi {
        hi
    } else if lum < lo {
        lo
    } else {
        lum
    };
    let (mut left, mut right) = (0usize, 0usize);
    for i in 0..5 {
        if clamped >= BARTEN_ANCHORS[i] as f64 && clamped <= BARTEN_ANCHORS[i + 1] as f64 {
            left = i;
            right = i + 1;
            break;
        }
    }
    let left_pos = (BARTEN_ANCHORS[left] as f64).log10() as f32;
    let right_pos = (BARTEN_ANCHORS[right] as f64).log10() as f32;
    let pos = clamped.log10() as f32;
    let p = |k: usize| {
        linear_interpolate(left_pos, BARTEN_PARAMS[left][k], right_pos, BARTEN_PARAMS[right][k], pos)
    };
    let (p0, p1, p2, p3) = (p(1), p(2), p(3), p(4));
    let a = (1.0f64 + ((p0 * sf) as f64).powf(p1 as f64)) as f32;
    let b = (1.0f64 / (1.0 - (-((sf / 7.0) as f64).powf(2.0)).exp()).powf(p2 as f64)) as f32;
    let csf = (p3 as f64 / ((a * b) as f64).powf(0.5)) as f32;
    ((csf * barten_mtf(sf) * barten_rod_cone_sens(lum as f32)) as f64 * csf_scale) as f32
}

type BlendTable = [[f32; 4]; 2];
const BLEND_1080_3H: BlendTable = [[0.01183, 0.025026, 0.04295, 0.058621], [0.004302, 0.011778, 0.023918, 0.035901]];
const BLEND_1080_5H: BlendTable = [[0.004212, 0.014809, 0.029642, 0.047464], [0.000984, 0.005852, 0.0146, 0.027574]];
const BLEND_2160_3H: BlendTable = [[0.00226, 0.01183, 0.025026, 0.04295], [0.000479, 0.004302, 0.011778, 0.023918]];
const BLEND_2160_5H: BlendTable = [[0.000092, 0.004212, 0.014809, 0.029642], [0.000050, 0.000984, 0.005852, 0.0146]];
const BLEND_720_3H: BlendTable = [[0.018715, 0.035637, 0.052798, 0.061509], [0.007999, 0.018396, 0.031851, 0.037718]];
const BLEND_720_5H: BlendTable = [[0.010144, 0.022561, 0.040309, 0.05672], [0.003463, 0.010282, 0.021839, 0.034641]];
const BLEND_480_3H: BlendTable = [[0.027961, 0.045875, 0.060275, 0.056234], [0.013572, 0.026277, 0.036959, 0.034511]];
const BLEND_480_5H: BlendTable = [[0.016781, 0.032822, 0.05032, 0.061594], [0.00691, 0.016545, 0.029917, 0.037777]];

const MAE_1080_3H: BlendTable = [[0.011249, 0.022606, 0.035930, 0.045673], [0.004097, 0.010921, 0.021430, 0.031313]];
const MAE_1080_5H: BlendTable = [[0.004052, 0.013939, 0.026298, 0.038833], [0.000927, 0.005544, 0.013415, 0.024515]];
const MAE_2160_3H: BlendTable = [[0.002166, 0.011249, 0.022606, 0.035930], [0.000447, 0.004097, 0.010921, 0.021430]];
const MAE_2160_5H: BlendTable = [[0.000077, 0.004052, 0.013939, 0.026298], [0.000045, 0.000927, 0.005544, 0.013415]];
const MAE_720_3H: BlendTable = [[0.017329, 0.030870, 0.042134, 0.047410], [0.007509, 0.016707, 0.028072, 0.032722]];
const MAE_720_5H: BlendTable = [[0.009689, 0.020577, 0.034162, 0.044523], [0.003302, 0.009579, 0.019661, 0.030318]];
const MAE_480_3H: BlendTable = [[0.024969, 0.037825, 0.046676, 0.043974], [0.012511, 0.023424, 0.032139, 0.030166]];
const MAE_480_5H: BlendTable = [[0.015665, 0.028766, 0.040612, 0.047483], [0.006514, 0.015107, 0.026476, 0.032776]];

/// `barten_watson_blend_csf` / `_mae`: a table lookup; -EINVAL (as a float)
/// for an untabulated display, as libvmaf returns it.
#[allow(clippy::redundant_guards)]
fn blend_csf(mae: bool, scale: usize, theta: usize, nvd: f64, rdh: i32) -> f32 {
    let pick = |legacy: &'static BlendTable, fixed: &'static BlendTable| if mae { fixed } else { legacy };
    let table = match (rdh, nvd) {
        (1080, d) if d == 3.0 => pick(&BLEND_1080_3H, &MAE_1080_3H),
        (1080, d) if d == 5.0 => pick(&BLEND_1080_5H, &MAE_1080_5H),
        (2160, d) if d == 1.5 => pick(&BLEND_1080_3H, &MAE_1080_3H),
        (2160, d) if d == 3.0 => pick(&BLEND_2160_3H, &MAE_2160_3H),
        (2160, d) if d == 5.0 => pick(&BLEND_2160_5H, &MAE_2160_5H),
        (720, d) if d == 3.0 => pick(&BLEND_720_3H, &MAE_720_3H),
        (720, d) if d == 5.0 => pick(&BLEND_720_5H, &MAE_720_5H),
        (480, d) if d == 3.0 => pick(&BLEND_480_3H, &MAE_480_3H),
        (480, d) if d == 5.0 => pick(&BLEND_480_5H, &MAE_480_5H),
        _ => return -22.0, // -EINVAL
    };
    table[theta][scale]
}

/// `rfactor[3]` of scale `scale` (0 = finest): the weights of the h, v and
/// d bands.
pub(crate) fn rfactors(o: &CsfOptions, scale: usize) -> [f32; 3] {
    let (nvd, rdh) = (o.norm_view_dist, o.ref_display_height);
    let (f1, f2) = match o.mode {
        CSF_MODE_BARTEN => (
            barten_csf(scale, nvd, rdh, DEFAULT_CSF_LUM, o.csf_scale),
            barten_csf(scale, nvd, rdh, DEFAULT_CSF_LUM, o.csf_diag_scale),
        ),
        CSF_MODE_BARTEN_WATSON_BLEND => (blend_csf(false, scale, 0, nvd, rdh), blend_csf(false, scale, 1, nvd, rdh)),
        CSF_MODE_BARTEN_WATSON_BLEND_MAE => (blend_csf(true, scale, 0, nvd, rdh), blend_csf(true, scale, 1, nvd, rdh)),
        _ => (1.0f32 / dwt_quant_step(scale, 1, nvd, rdh), 1.0f32 / dwt_quant_step(scale, 2, nvd, rdh)),
    };
    [f1, f1, f2]
}

/// C's double → unsigned conversion as x86-64 compilers emit it
/// (`cvttsd2si` into a 64-bit register, low bits kept): out-of-range and
/// NaN become 0x8000_0000_0000_0000 before truncation.
#[inline]
pub(crate) fn c_f64_to_i64(x: f64) -> i64 {
    if x.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// `(uint32_t)x` for a double, as compiled C does it on x86-64.
#[inline]
pub(crate) fn c_f64_to_u32(x: f64) -> u32 {
    c_f64_to_i64(x) as u32
}

/// `(uint16_t)x` for a double: `cvttsd2si` into a 32-bit register, low 16
/// bits kept.
#[inline]
pub(crate) fn c_f64_to_u16(x: f64) -> u16 {
    let v = if x.is_nan() || !(-2147483649.0..2147483648.0).contains(&x) || x == -2147483649.0 { i32::MIN } else { x as i32 };
    v as u16
}

/// Fixed-point weights of scale 0 (Q21 for h/v, Q23 for d), with the
/// constants libvmaf hard-codes for the default 1080p / 3H Watson CSF.
pub(crate) fn i_rfactors_scale0(o: &CsfOptions) -> [u16; 3] {
    let default_view = 3.0 * 1080.0;
    if (o.norm_view_dist * o.ref_display_height as f64 - default_view).abs() < 1.0e-8 && o.mode == CSF_MODE_WATSON97 {
        return [36453, 36453, 49417];
    }
    let rf = rfactors(o, 0);
    let (p21, p23) = (2f64.powf(21.0), 2f64.powf(23.0));
    [c_f64_to_u16(rf[0] as f64 * p21), c_f64_to_u16(rf[1] as f64 * p21), c_f64_to_u16(rf[2] as f64 * p23)]
}

/// Q32 weights of scales 1 to 3.
pub(crate) fn i_rfactors_s123(o: &CsfOptions, scale: usize) -> [u32; 3] {
    let rf = rfactors(o, scale);
    let p32 = 2f64.powf(32.0);
    [c_f64_to_u32(rf[0] as f64 * p32), c_f64_to_u32(rf[1] as f64 * p32), c_f64_to_u32(rf[2] as f64 * p32)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scale0_factors_are_libvmafs_constants() {
        let mut o = CsfOptions {
            mode: CSF_MODE_WATSON97,
            norm_view_dist: 3.0,
            ref_display_height: 1080,
            csf_scale: 1.0,
            csf_diag_scale: 1.0,
        };
        assert_eq!(i_rfactors_scale0(&o), [36453, 36453, 49417]);
        // Same viewing angle, other display: still the constants.
        o.norm_view_dist = 1.5;
        o.ref_display_height = 2160;
        assert_eq!(i_rfactors_scale0(&o), [36453, 36453, 49417]);
        // Elsewhere computed from Watson's model (the constants are its
        // 1080p / 3H values): a display of 1081 rows comes close.
        o.norm_view_dist = 3.0;
        o.ref_display_height = 1081;
        let rf = rfactors(&o, 0);
        let i_rf = i_rfactors_scale0(&o);
        assert_eq!(i_rf[0], (rf[0] as f64 * 2f64.powi(21)) as u16);
        assert!((36300..36453).contains(&i_rf[0]) && (49200..49417).contains(&i_rf[2]), "{i_rf:?}");
    }
}
