//! Integer ADM (libvmaf 3.2.0 `feature/integer_adm.c`, extractor "adm").
//!
//! Per frame, on luma, four scales of an integer Daubechies-2 DWT of
//! reference and distorted; at each scale the distorted detail bands are
//! split into a restored part and an additive impairment ([`decouple`]),
//! CSF-weighted and contrast-masked ([`cm`]), and summed as cubes against
//! the reference's ([`den`]). Written: adm2 = sum(num) / sum(den), aim (the
//! additive impairment measure), adm3 (their blend), the per-scale ratios,
//! and with `debug` the raw sums. Bit-exact with libvmaf's C code, which its
//! AVX2 / AVX-512 twins match on common sizes (426x240 to 1920x1080 and
//! more) with the models' options. They depart from the C, and from each
//! other, on some small widths (67x45, 80x45, 100x60, 130x70, 144x81...),
//! in Barten CSF mode (Q32 weights above 2^31 multiplied as signed) and
//! with a fractional adm_enhn_gain_limit (rounding where the C truncates);
//! there the C is the reference.
//!
//! libvmaf reads outside its buffers for pictures narrower or shorter than
//! 33 samples (the DWT mirrors of the 3rd scale need 5 input rows and
//! columns), so such sizes are refused.

pub mod cm;
pub(crate) mod csf;
pub mod decouple;
pub(crate) mod den;
pub mod dwt;
pub(crate) mod gpu;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

use super::options::{OptionKind, OptionSpec, DEBUG_OPTION};
use crate::picture::PlaneView;
use super::{
    DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput,
    FrameScores,
};
use crate::device::gpu::ErasedRunner;
use crate::simd::CpuLevel;
use crate::{Error, Result};
use cm::{CmShiftsS0, CmShiftsS123};
use csf::{c_f64_to_u32, CsfOptions};
use decouple::{Hvd, HvdMut};
use den::DenShifts;
use dwt::{Bands, DwtGeometry};

const ADM2: &str = "VMAF_integer_feature_adm2_score";
const AIM: &str = "VMAF_integer_feature_aim_score";
const ADM3: &str = "VMAF_integer_feature_adm3_score";
const SCALE: [&str; 4] = ["integer_adm_scale0", "integer_adm_scale1", "integer_adm_scale2", "integer_adm_scale3"];
const DEBUG_ADM: &str = "integer_adm";
const DEBUG_NUM: &str = "integer_adm_num";
const DEBUG_DEN: &str = "integer_adm_den";
const NUM_SCALE: [&str; 4] =
    ["integer_adm_num_scale0", "integer_adm_num_scale1", "integer_adm_num_scale2", "integer_adm_num_scale3"];
const DEN_SCALE: [&str; 4] =
    ["integer_adm_den_scale0", "integer_adm_den_scale1", "integer_adm_den_scale2", "integer_adm_den_scale3"];

/// The smallest picture side libvmaf's ADM computes without reading
/// outside its buffers.
pub(crate) const MIN_SIDE: usize = 33;

static OPTIONS: [OptionSpec; 12] = [
    DEBUG_OPTION,
    OptionSpec {
        name: "adm_csf_scale",
        alias: Some("scf"),
        help: "scale coefficient for the horizontal & vertical direction terms of CSF",
        kind: OptionKind::Double { default: 1.0, min: 0.0, max: 50.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_csf_diag_scale",
        alias: Some("scfd"),
        help: "scale coefficient for the diagonal direction term of CSF",
        kind: OptionKind::Double { default: 1.0, min: 0.0, max: 50.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_dlm_weight",
        alias: Some("dlmw"),
        help: "linear weighting between DLM and AIM; 1 corresponds to DLM-only",
        kind: OptionKind::Double { default: 0.5, min: 0.0, max: 1.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_enhn_gain_limit",
        alias: Some("egl"),
        help: "enhancement gain imposed on adm, must be >= 1.0, where 1.0 means the gain is completely disabled",
        kind: OptionKind::Double { default: 100.0, min: 1.0, max: 100.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_norm_view_dist",
        alias: Some("nvd"),
        help: "normalized viewing distance = viewing distance / ref display's physical height",
        kind: OptionKind::Double { default: 3.0, min: 0.75, max: 24.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_ref_display_height",
        alias: Some("rdh"),
        help: "reference display height in pixels",
        kind: OptionKind::Int { default: 1080, min: 1, max: 4320 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_csf_mode",
        alias: Some("csf"),
        help: "contrast sensitivity function",
        kind: OptionKind::Int { default: 0, min: 0, max: 3 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_noise_weight",
        alias: Some("nw"),
        help: "noise weight",
        kind: OptionKind::Double { default: 0.03125, min: 0.0, max: 1500.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_skip_aim",
        alias: None,
        help: "skip the calculation of AIM",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    OptionSpec {
        name: "adm_skip_scale0",
        alias: Some("ssz"),
        help: "skip the calculation of scale 0",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
    OptionSpec {
        name: "adm_min_val",
        alias: Some("min"),
        help: "minimum value allowed; lower values will be clipped to this value",
        kind: OptionKind::Double { default: 0.0, min: 0.0, max: 1.0 },
        feature_param: true,
    },
];

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "adm",
    provided_features: &[
        ADM2,
        AIM,
        ADM3,
        SCALE[0],
        SCALE[1],
        SCALE[2],
        SCALE[3],
        DEBUG_ADM,
        DEBUG_NUM,
        DEBUG_DEN,
        NUM_SCALE[0],
        DEN_SCALE[0],
        NUM_SCALE[1],
        DEN_SCALE[1],
        NUM_SCALE[2],
        DEN_SCALE[2],
        NUM_SCALE[3],
        DEN_SCALE[3],
    ],
    options: &OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

/// A half-open rectangle of a band: rows top..bottom, columns left..right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub top: usize,
    pub bottom: usize,
    pub left: usize,
    pub right: usize,
}

impl Region {
    /// The score region: 10% of each side left out (`ADM_BORDER_FACTOR`),
    /// libvmaf's `left = w * 0.1 - 0.5` truncated.
    pub fn score(w: usize, h: usize) -> Region {
        let left = (w as f64 * 0.1 - 0.5) as i64;
        let top = (h as f64 * 0.1 - 0.5) as i64;
        Region {
            top: top as usize,
            bottom: (h as i64 - top) as usize,
            left: left as usize,
            right: (w as i64 - left) as usize,
        }
    }

    /// The score region grown by the 3x3 masking filter's reach, clipped to
    /// the band (the region decouple and CSF compute).
    pub fn taps(w: usize, h: usize) -> Region {
        let left = (w as f64 * 0.1 - 0.5 - 1.0) as i64;
        let top = (h as f64 * 0.1 - 0.5 - 1.0) as i64;
        let right = w as i64 - left + 2;
        let bottom = h as i64 - top + 2;
        Region {
            top: top.max(0) as usize,
            bottom: bottom.min(h as i64) as usize,
            left: left.max(0) as usize,
            right: right.min(w as i64) as usize,
        }
    }

    fn area(&self) -> usize {
        (self.bottom - self.top) * (self.right - self.left)
    }
}

/// The row kernels of one CPU level (scale 0, where the time goes).
#[derive(Clone, Copy)]
pub struct Kernels {
    pub dwt: dwt::DwtS0Kernels,
    pub decouple_s0: decouple::DecoupleS0Row,
    pub csf_s0: cm::CsfS0Row,
    pub thresholds: cm::ThresholdRow,
    pub cm_s0: cm::CmS0Row,
    pub cube_sum_s0: den::CubeSumS0Row,
    pub dwt_s123: dwt::DwtS123Kernels,
    pub decouple_s123: decouple::DecoupleS123Row,
    pub csf_s123: cm::CsfS123Row,
    pub cm_s123: cm::CmS123Row,
}

pub const SCALAR_KERNELS: Kernels = Kernels {
    dwt: dwt::SCALAR_S0,
    decouple_s0: decouple::decouple_s0_row,
    csf_s0: cm::csf_s0_row,
    thresholds: cm::thresholds_row,
    cm_s0: cm::cm_s0_row,
    cube_sum_s0: den::cube_sum_s0_row,
    dwt_s123: dwt::SCALAR_S123,
    decouple_s123: decouple::decouple_s123_row,
    csf_s123: cm::csf_s123_row,
    cm_s123: cm::cm_s123_row,
};

/// The kernels for `cpu` (the best at or below it).
pub fn kernels(cpu: CpuLevel) -> Kernels {
    #[cfg(target_arch = "x86_64")]
    {
        let host = CpuLevel::detect_host();
        if cpu >= CpuLevel::Avx512 && host >= CpuLevel::Avx512 {
            return avx512::KERNELS;
        }
        if cpu >= CpuLevel::Avx2 && host >= CpuLevel::Avx2 {
            return avx2::KERNELS;
        }
    }
    let _ = cpu;
    SCALAR_KERNELS
}

/// C's `(uint32_t)ceil(x)` and `(uint32_t)pow(2, s - 1)` pair: a shift and
/// its rounding term.
fn shift_and_round(x: f64) -> (u32, u32) {
    let s = c_f64_to_u32(x.ceil());
    (s, c_f64_to_u32(2f64.powf(s.wrapping_sub(1) as f64)))
}

/// Everything of one scale that depends only on sizes and options.
#[derive(Clone, Debug)]
pub struct ScaleParams {
    /// Size of the DWT input and of the output bands.
    pub in_w: usize,
    pub in_h: usize,
    pub w: usize,
    pub h: usize,
    /// The input rows of each output row (mirrored at the edges).
    pub rows: Vec<[usize; 4]>,
    /// Where decouple and CSF compute, and where the sums are taken.
    pub taps: Region,
    pub score: Region,
    pub rfactor: [f32; 3],
    pub den: DenShifts,
}

/// Scale-0 constants: Q21/Q23 band weights and the masking shifts.
#[derive(Clone, Copy, Debug)]
pub struct Scale0Consts {
    pub i_rfactor: [u16; 3],
    pub cm: CmShiftsS0,
}

/// Scale 1-3 constants: Q32 band weights and the masking shifts.
#[derive(Clone, Copy, Debug)]
pub struct S123Consts {
    pub i_rfactor: [u32; 3],
    pub cm: CmShiftsS123,
}

fn scale_params(in_w: usize, in_h: usize, scale: usize, csf: &CsfOptions) -> ScaleParams {
    let (w, h) = (in_w.div_ceil(2), in_h.div_ceil(2));
    let score = Region::score(w, h);
    let den = if scale == 0 {
        let s = ((score.area() as f64).log2() - 20.0).ceil() as i32;
        let s = s.max(0) as u32;
        DenShifts { cub: (0, 0), accum: (s, if s > 0 { 1 << (s - 1) } else { 0 }), to_float: 2f64.powf(18.0 - s as f64) }
    } else {
        let cub = shift_and_round(((score.right - score.left) as f64).log2());
        let accum = shift_and_round(((score.bottom - score.top) as f64).log2());
        let convert = [32u32, 27, 23][scale - 1];
        let e = convert.wrapping_sub(accum.0).wrapping_sub(cub.0);
        DenShifts { cub, accum, to_float: 2f64.powf(e as f64) }
    };
    ScaleParams {
        in_w,
        in_h,
        w,
        h,
        rows: dwt::src_indices(in_h),
        taps: Region::taps(w, h),
        score,
        rfactor: csf::rfactors(csf, scale),
        den,
    }
}

/// Scales 1-3 square shift of the den sums (`adm_csf_den_s123`).
pub(crate) const DEN_SQ_SHIFT: [u32; 3] = [31, 30, 31];

/// Everything of an ADM computation that depends only on the options and
/// the picture size (what libvmaf's `init` derives), shared by the CPU
/// extractor and the device kernels.
#[derive(Clone, Debug)]
pub struct AdmParams {
    pub width: usize,
    pub height: usize,
    pub bits: u32,
    pub dlm_weight: f64,
    pub enhn_gain_limit: f64,
    pub noise_weight: f64,
    pub min_val: f64,
    pub skip_aim: bool,
    pub skip_scale0: bool,
    /// libvmaf's 16-bit pipeline cannot go below 1080p at 3H.
    pub view_ok: bool,
    pub scales: Vec<ScaleParams>,
    pub s0: Scale0Consts,
    /// Scales 1, 2, 3.
    pub s123: Vec<S123Consts>,
}

impl AdmParams {
    /// The parameters of `adm` with options `o` (of [`DESCRIPTOR`]) on
    /// `width` x `height` luma of `bits` bits.
    pub fn new(width: usize, height: usize, bits: u32, o: &FeatureOptions) -> Result<Self> {
        if width < MIN_SIDE || height < MIN_SIDE {
            return Err(Error::NotSupported(format!(
                "adm on a {width}x{height} picture (libvmaf's integer ADM needs at least {MIN_SIDE}x{MIN_SIDE})"
            )));
        }
        if !(8..=16).contains(&bits) {
            return Err(Error::invalid(format!("adm: {bits}-bit samples")));
        }
        let csf = CsfOptions {
            mode: o.get_int(&OPTIONS, "adm_csf_mode"),
            norm_view_dist: o.get_double(&OPTIONS, "adm_norm_view_dist"),
            ref_display_height: o.get_int(&OPTIONS, "adm_ref_display_height"),
            csf_scale: o.get_double(&OPTIONS, "adm_csf_scale"),
            csf_diag_scale: o.get_double(&OPTIONS, "adm_csf_diag_scale"),
        };
        let mut scales = Vec::with_capacity(4);
        let (mut in_w, mut in_h) = (width, height);
        for scale in 0..4 {
            let p = scale_params(in_w, in_h, scale, &csf);
            (in_w, in_h) = (p.w, p.h);
            scales.push(p);
        }
        let p0 = &scales[0];
        let s0 = Scale0Consts {
            i_rfactor: csf::i_rfactors_scale0(&csf),
            cm: CmShiftsS0 {
                cub_hv: shift_and_round((p0.w as f64).log2() - 4.0),
                cub_d: shift_and_round((p0.w as f64).log2() - 3.0),
                inner: shift_and_round((p0.h as f64).log2()),
            },
        };
        let s123 = (1..4)
            .map(|scale| {
                let p = &scales[scale];
                let cub = shift_and_round((p.w as f64).log2());
                let inner = shift_and_round((p.h as f64).log2());
                let e = [45u32, 39, 36][scale - 1].wrapping_sub(cub.0).wrapping_sub(inner.0);
                S123Consts {
                    i_rfactor: csf::i_rfactors_s123(&csf, scale),
                    cm: CmShiftsS123 { cub, inner, final_shift: 2f64.powf(e as f64) as f32 },
                }
            })
            .collect();
        let nvd = csf.norm_view_dist;
        Ok(AdmParams {
            width,
            height,
            bits,
            dlm_weight: o.get_double(&OPTIONS, "adm_dlm_weight"),
            enhn_gain_limit: o.get_double(&OPTIONS, "adm_enhn_gain_limit"),
            noise_weight: o.get_double(&OPTIONS, "adm_noise_weight"),
            min_val: o.get_double(&OPTIONS, "adm_min_val"),
            skip_aim: o.get_bool(&OPTIONS, "adm_skip_aim"),
            skip_scale0: o.get_bool(&OPTIONS, "adm_skip_scale0"),
            view_ok: nvd * (csf.ref_display_height as f64) >= 3.0 * 1080.0,
            scales,
            s0,
            s123,
        })
    }

    /// The float terms of each scale from its integer sums.
    pub fn scale_scores(&self, sums: &AdmSums) -> [ScaleScores; 4] {
        std::array::from_fn(|scale| {
            let p = &self.scales[scale];
            let t = &sums.scales[scale];
            if scale == 0 && self.skip_scale0 {
                return ScaleScores { num: 0.0, den: 1e-10, aim: 0.0 };
            }
            let nw = self.noise_weight;
            let den = den::den_value(t.den, p.rfactor, p.den.to_float, p.score, nw);
            let (num, aim) = if scale == 0 {
                let sh = self.s0.cm;
                (cm::cm_s0_value(t.num, sh, p.score, nw), cm::cm_s0_value(t.aim, sh, p.score, 0.0))
            } else {
                let sh = self.s123[scale - 1].cm;
                (cm::cm_s123_value(t.num, sh, p.score, nw), cm::cm_s123_value(t.aim, sh, p.score, 0.0))
            };
            ScaleScores { num, den, aim: if self.skip_aim { 0.0 } else { aim } }
        })
    }

    /// Everything `adm` writes for a frame, from its integer sums.
    pub fn scores(&self, sums: &AdmSums) -> AdmScores {
        let s = self.scale_scores(sums);
        let (mut num, mut den, mut aim_num) = (0.0f64, 0.0f64, 0.0f64);
        for t in &s {
            num += t.num as f64;
            den += t.den as f64;
            aim_num += t.aim as f64;
        }
        let numden_limit = 1e-10 * (self.width * self.height) as i32 as f64 / (1920.0 * 1080.0);
        if num < numden_limit {
            num = 0.0;
        }
        if den < numden_limit {
            den = 0.0;
        }
        // libvmaf leaves aim uninitialised when den is 0; 0 stands in.
        let (score, score_aim) = if den == 0.0 { (1.0, 0.0) } else { (num / den, aim_num / den) };
        let adm3 = score * self.dlm_weight + (1.0 - score_aim) * (1.0 - self.dlm_weight);
        let adm3 = if adm3 > self.min_val { adm3 } else { self.min_val };
        AdmScores { scales: s, adm2: score, aim: score_aim, adm3, num, den }
    }
}

/// The integer accumulators of one scale (libvmaf's int64 sums before
/// they become floats): per band h, v, d.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmScaleSums {
    /// Cube sums of the reference bands (`adm_csf_den_scale` / `_s123`).
    pub den: [u64; 3],
    /// Masked cube sums of the restored bands (`adm_cm`, num).
    pub num: [i64; 3],
    /// Masked cube sums of the additive impairment (`adm_cm`, aim); 0 with
    /// `adm_skip_aim`.
    pub aim: [i64; 3],
}

/// The integer accumulators of a frame: all the CPU's and the devices'
/// integer work; [`AdmParams::scores`] finishes them on the host. Scale 0
/// holds zeros with `adm_skip_scale0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdmSums {
    pub scales: [AdmScaleSums; 4],
}

/// num, den and aim terms of one scale.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ScaleScores {
    pub num: f32,
    pub den: f32,
    pub aim: f32,
}

/// A frame's ADM values, as the extractor writes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmScores {
    pub scales: [ScaleScores; 4],
    pub adm2: f64,
    pub aim: f64,
    pub adm3: f64,
    /// Sums of the scales' num and den (after the small-value limit).
    pub num: f64,
    pub den: f64,
}

/// Per-frame working buffers.
struct Buffers {
    ref16: Bands<i16>,
    dis16: Bands<i16>,
    r16: [Vec<i16>; 3],
    a16: [Vec<i16>; 3],
    /// The previous scale's low bands (scale >= 1 input).
    ref_lo: Vec<i32>,
    dis_lo: Vec<i32>,
    ref32: Bands<i32>,
    dis32: Bands<i32>,
    r32: [Vec<i32>; 3],
    a32: [Vec<i32>; 3],
    fsum: Vec<i32>,
    csum: Vec<i32>,
    tmp16: Vec<i16>,
    tmp32: Vec<i32>,
    vsum: Vec<i32>,
    thr: Vec<i32>,
}

/// The CPU's integer ADM: the kernels of one CPU level and their buffers,
/// for one [`AdmParams`].
pub(crate) struct AdmCpu {
    kernels: Kernels,
    buf: Buffers,
}

impl AdmCpu {
    pub(crate) fn new(p: &AdmParams, cpu: CpuLevel) -> Self {
        let p0 = &p.scales[0];
        let n0 = p0.w * p0.h;
        let n1 = p.scales[1].w * p.scales[1].h;
        let buf = Buffers {
            ref16: Bands::hvd(n0),
            dis16: Bands::hvd(n0),
            r16: std::array::from_fn(|_| vec![0; n0]),
            a16: std::array::from_fn(|_| vec![0; n0]),
            ref_lo: vec![0; n0],
            dis_lo: vec![0; n0],
            ref32: Bands::new(n1),
            dis32: Bands::new(n1),
            r32: std::array::from_fn(|_| vec![0; n1]),
            a32: std::array::from_fn(|_| vec![0; n1]),
            fsum: vec![0; n0],
            csum: vec![0; n0],
            tmp16: vec![0; 2 * (p.width + 3)],
            tmp32: vec![0; 2 * (p0.w + 3 + dwt::EXT_PAD)],
            vsum: vec![0; p0.w],
            thr: vec![0; p0.w],
        };
        AdmCpu { kernels: kernels(cpu), buf }
    }

    /// The integer sums of one frame's luma planes (of `p`'s size; checked
    /// by the caller).
    pub(crate) fn sums(&mut self, p: &AdmParams, reference: &PlaneView, distorted: &PlaneView) -> AdmSums {
        let mut sums = AdmSums::default();
        sums.scales[0] = self.scale0(p, reference, distorted);
        for scale in 1..4 {
            sums.scales[scale] = self.scale123(p, scale);
        }
        sums
    }

    fn scale0(&mut self, prm: &AdmParams, reference: &PlaneView, distorted: &PlaneView) -> AdmScaleSums {
        let p = &prm.scales[0];
        let b = &mut self.buf;
        let g = DwtGeometry { w: p.in_w, h: p.in_h, rows: &p.rows, stride: p.w, out_w: p.w };
        let lo_only = prm.skip_scale0;
        // The low bands go straight to the next scale's input, widened.
        let k = &self.kernels.dwt;
        dwt::dwt_s0(k, reference, prm.bits, g, &mut b.ref_lo, &mut b.ref16, &mut b.tmp16, lo_only);
        dwt::dwt_s0(k, distorted, prm.bits, g, &mut b.dis_lo, &mut b.dis16, &mut b.tmp16, lo_only);
        if prm.skip_scale0 {
            return AdmScaleSums::default();
        }
        let stride = p.w;
        {
            let [rh, rv, rd] = &mut b.r16;
            let [ah, av, ad] = &mut b.a16;
            decouple::decouple_s0(
                self.kernels.decouple_s0,
                Hvd { h: &b.ref16.h, v: &b.ref16.v, d: &b.ref16.d },
                Hvd { h: &b.dis16.h, v: &b.dis16.v, d: &b.dis16.d },
                HvdMut { h: rh, v: rv, d: rd },
                HvdMut { h: ah, v: av, d: ad },
                stride,
                p.taps,
                prm.enhn_gain_limit,
            );
        }
        let den = den::den_sums_s0(self.kernels.cube_sum_s0, [&b.ref16.h, &b.ref16.v, &b.ref16.d], stride, p.score, p.den);
        let c = &prm.s0;
        let r = [&b.r16[0][..], &b.r16[1][..], &b.r16[2][..]];
        let a = [&b.a16[0][..], &b.a16[1][..], &b.a16[2][..]];
        let k = &self.kernels;
        cm::csf_s0(k.csf_s0, a, c.i_rfactor, &mut b.fsum, &mut b.csum, stride, p.taps);
        let num = cm::cm_s0(
            (k.thresholds, k.cm_s0),
            r, &b.fsum, &b.csum, c.i_rfactor, stride, p.w, p.h, p.score, c.cm, &mut b.vsum, &mut b.thr,
        );
        let mut aim = [0; 3];
        if !prm.skip_aim {
            cm::csf_s0(k.csf_s0, r, c.i_rfactor, &mut b.fsum, &mut b.csum, stride, p.taps);
            aim = cm::cm_s0(
                (k.thresholds, k.cm_s0),
                a, &b.fsum, &b.csum, c.i_rfactor, stride, p.w, p.h, p.score, c.cm, &mut b.vsum, &mut b.thr,
            );
        }
        AdmScaleSums { den, num, aim }
    }

    fn scale123(&mut self, prm: &AdmParams, scale: usize) -> AdmScaleSums {
        let p = &prm.scales[scale];
        let c = &prm.s123[scale - 1];
        let b = &mut self.buf;
        let g = DwtGeometry { w: p.in_w, h: p.in_h, rows: &p.rows, stride: p.w, out_w: p.w };
        dwt::dwt_s123(&self.kernels.dwt_s123, &b.ref_lo, g, scale, &mut b.ref32, &mut b.tmp32);
        dwt::dwt_s123(&self.kernels.dwt_s123, &b.dis_lo, g, scale, &mut b.dis32, &mut b.tmp32);
        let stride = p.w;
        {
            let [rh, rv, rd] = &mut b.r32;
            let [ah, av, ad] = &mut b.a32;
            decouple::decouple_s123(
                self.kernels.decouple_s123,
                Hvd { h: &b.ref32.h, v: &b.ref32.v, d: &b.ref32.d },
                Hvd { h: &b.dis32.h, v: &b.dis32.v, d: &b.dis32.d },
                HvdMut { h: rh, v: rv, d: rd },
                HvdMut { h: ah, v: av, d: ad },
                stride,
                p.taps,
                prm.enhn_gain_limit,
            );
        }
        let sq_shift = DEN_SQ_SHIFT[scale - 1];
        let den = den::den_sums_s123([&b.ref32.h, &b.ref32.v, &b.ref32.d], stride, p.score, sq_shift, p.den);
        let r = [&b.r32[0][..], &b.r32[1][..], &b.r32[2][..]];
        let a = [&b.a32[0][..], &b.a32[1][..], &b.a32[2][..]];
        let k = &self.kernels;
        cm::csf_s123(k.csf_s123, a, c.i_rfactor, &mut b.fsum, &mut b.csum, stride, p.taps);
        let num = cm::cm_s123(
            (k.thresholds, k.cm_s123),
            r, &b.fsum, &b.csum, c.i_rfactor, stride, p.w, p.h, p.score, c.cm, &mut b.vsum, &mut b.thr,
        );
        let mut aim = [0; 3];
        if !prm.skip_aim {
            cm::csf_s123(k.csf_s123, r, c.i_rfactor, &mut b.fsum, &mut b.csum, stride, p.taps);
            aim = cm::cm_s123(
                (k.thresholds, k.cm_s123),
                a, &b.fsum, &b.csum, c.i_rfactor, stride, p.w, p.h, p.score, c.cm, &mut b.vsum, &mut b.thr,
            );
        }
        // This scale's low bands feed the next one: swap the buffers (an even
        // number of swaps, at scales 1 and 2, leaves the full-size one in
        // ref_lo for the next frame's scale 0).
        if scale < 3 {
            std::mem::swap(&mut b.ref_lo, &mut b.ref32.a);
            std::mem::swap(&mut b.dis_lo, &mut b.dis32.a);
        }
        AdmScaleSums { den, num, aim }
    }
}

/// The CPU's scalar sums of one frame: the reference every device twin is
/// compared with (allocates its buffers per call).
pub fn sums_scalar(p: &AdmParams, reference: &PlaneView, distorted: &PlaneView) -> Result<AdmSums> {
    check_planes(p, reference, distorted)?;
    Ok(AdmCpu::new(p, CpuLevel::Scalar).sums(p, reference, distorted))
}

/// Whether two luma planes fit `p` (size and sample width).
pub(crate) fn check_planes(p: &AdmParams, reference: &PlaneView, distorted: &PlaneView) -> Result<()> {
    let bps = if p.bits == 8 { 1 } else { 2 };
    for v in [reference, distorted] {
        if v.width() != p.width || v.height() != p.height || v.bytes_per_sample() != bps {
            return Err(Error::invalid(format!(
                "adm: {}x{} picture of {} bytes per sample given to ADM made for {}x{} {}-bit",
                v.width(),
                v.height(),
                v.bytes_per_sample(),
                p.width,
                p.height,
                p.bits
            )));
        }
    }
    Ok(())
}

struct Names {
    adm2: String,
    aim: String,
    adm3: String,
    scale: [String; 4],
    debug_adm: String,
    num: String,
    den: String,
    num_scale: [String; 4],
    den_scale: [String; 4],
}

struct Adm {
    names: Names,
    debug: bool,
    params: AdmParams,
    cpu: AdmCpu,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o: &FeatureOptions = &cfg.options;
    let params = AdmParams::new(cfg.width, cfg.height, cfg.format.bits as u32, o)?;
    let name = |f| DESCRIPTOR.feature_name(f, o);
    let names = Names {
        adm2: name(ADM2),
        aim: name(AIM),
        adm3: name(ADM3),
        scale: SCALE.map(name),
        debug_adm: name(DEBUG_ADM),
        num: name(DEBUG_NUM),
        den: name(DEBUG_DEN),
        num_scale: NUM_SCALE.map(name),
        den_scale: DEN_SCALE.map(name),
    };
    let cpu = AdmCpu::new(&params, cfg.cpu);
    Ok(Box::new(Adm { names, debug: o.get_bool(&OPTIONS, "debug"), params, cpu }))
}

impl Adm {
    fn push(&self, s: &AdmScores, out: &mut FrameScores) {
        let n = &self.names;
        out.push(&n.adm2, s.adm2);
        out.push(&n.aim, s.aim);
        out.push(&n.adm3, s.adm3);
        for (name, t) in n.scale.iter().zip(&s.scales) {
            out.push(name, t.num as f64 / t.den as f64);
        }
        if self.debug {
            out.push(&n.debug_adm, s.adm2);
            out.push(&n.num, s.num);
            out.push(&n.den, s.den);
            for ((num, den), t) in n.num_scale.iter().zip(&n.den_scale).zip(&s.scales) {
                out.push(num, t.num as f64);
                out.push(den, t.den as f64);
            }
        }
    }
}

impl Adm {
    /// What both paths check before scoring a `w` x `h` luma pair.
    fn check(&self, w: usize, h: usize) -> Result<()> {
        let p = &self.params;
        if !p.view_ok {
            return Err(Error::invalid(
                "adm: adm_norm_view_dist * adm_ref_display_height below 3 * 1080 (libvmaf refuses it)",
            ));
        }
        if w != p.width || h != p.height {
            return Err(Error::invalid(format!(
                "adm: {w}x{h} picture given to an extractor made for {}x{}",
                p.width, p.height
            )));
        }
        Ok(())
    }
}

impl Extractor for Adm {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let luma = frame.reference.luma();
        self.check(luma.width(), luma.height())?;
        let p = &self.params;
        let sums = self.cpu.sums(p, &frame.reference.luma(), &frame.distorted.luma());
        let scores = p.scores(&sums);
        self.push(&scores, out);
        Ok(())
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    fn extract_device(
        &mut self,
        frame: &DeviceFrameInput<'_>,
        lane: &mut ErasedRunner,
        out: &mut FrameScores,
    ) -> Result<()> {
        let (r, d) = (frame.reference.luma(), frame.distorted.luma());
        self.check(r.width, r.height)?;
        let sums = gpu::sums_dev(lane, r, d, &self.params)?;
        let scores = self.params.scores(&sums);
        self.push(&scores, out);
        Ok(())
    }
}
