//! SSIM and MS-SSIM in float (libvmaf 3.2.0 `feature/float_ssim.c`,
//! `float_ms_ssim.c`, `ssim.c`, `ms_ssim.c`; extractors "float_ssim" and
//! "float_ms_ssim"), on luma only.
//!
//! Both copy luma to floats (`picture_copy`: 10, 12 and 16 bits divided by
//! 4, 16 and 256, so the constants of an 8-bit range apply) and run the
//! IQA core (`iqa.rs`): an 11x11 Gaussian window (separable), K1 0.01,
//! K2 0.03.
//! - `float_ssim` first box-filters and decimates by `scale` (0: automatic,
//!   round(min(w, h) / 256)), then writes `float_ssim`, and with
//!   `enable_lcs` the mean luminance, contrast and structure terms
//!   (`float_ssim_l`, `_c`, `_s`).
//! - `float_ms_ssim` runs five scales, each decimated by 2 through the 9/7
//!   wavelet low-pass, and multiplies l^alpha c^beta s^gamma per scale
//!   (Wang's weights); `enable_lcs` writes each scale's terms
//!   (`float_ms_ssim_l_scale0` ... `_s_scale4`).
//!
//! With `enable_db` the score is written as -10 log10(1 - score), clipped
//! with `clip_db` at ceil(10 log10(peak² / (0.5 / (w h)))).

pub(crate) mod gpu;
pub(crate) mod iqa;

#[doc(hidden)]
pub use iqa::{pixel_terms, symmetric, SsimConstants};

use super::options::{OptionKind, OptionSpec};
use super::{DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::device::gpu::ErasedRunner;
use crate::picture::Picture;
use crate::{Error, Result};
use iqa::{Image, SsimTerms, GAUSSIAN_LEN};

const LCS: OptionSpec = OptionSpec {
    name: "enable_lcs",
    alias: None,
    help: "enable luminance, contrast and structure intermediate output",
    kind: OptionKind::Bool { default: false },
    feature_param: false,
};
const CLIP_DB: OptionSpec = OptionSpec {
    name: "clip_db",
    alias: None,
    help: "clip dB scores",
    kind: OptionKind::Bool { default: false },
    feature_param: false,
};

static SSIM_OPTIONS: [OptionSpec; 4] = [
    LCS,
    OptionSpec {
        name: "enable_db",
        alias: None,
        help: "write SSIM values as dB",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    CLIP_DB,
    OptionSpec {
        name: "scale",
        alias: None,
        help: "decimation scale factor (0=auto, 1=no downscaling, 2-10=explicit)",
        kind: OptionKind::Int { default: 0, min: 0, max: 10 },
        feature_param: false,
    },
];

static MS_SSIM_OPTIONS: [OptionSpec; 3] = [
    LCS,
    OptionSpec {
        name: "enable_db",
        alias: None,
        help: "write MS-SSIM values as dB",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    CLIP_DB,
];

pub static SSIM_DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_ssim",
    provided_features: &["float_ssim"],
    options: &SSIM_OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create: create_ssim,
};

pub static MS_SSIM_DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_ms_ssim",
    provided_features: &["float_ms_ssim"],
    options: &MS_SSIM_OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create: create_ms_ssim,
};

/// `-10 log10(1 - score)` clipped at `max_db`, or the score itself.
#[derive(Clone, Copy, Debug)]
struct Db {
    enabled: bool,
    max_db: f64,
}

impl Db {
    /// `init`'s `max_db` for a `w` x `h` picture at `bits`.
    fn new(enabled: bool, clip: bool, bits: u32, w: usize, h: usize) -> Db {
        let max_db = if clip {
            let peak: u32 = (1u32 << bits) - 1;
            let mse = 0.5 / (w as u32).wrapping_mul(h as u32) as f64;
            (10. * (peak.wrapping_mul(peak) as f64 / mse).log10()).ceil()
        } else {
            f64::INFINITY
        };
        Db { enabled, max_db }
    }

    fn apply(self, score: f64) -> f64 {
        if !self.enabled {
            return score;
        }
        let db = -10. * (1. - score).log10();
        if db < self.max_db {
            db
        } else {
            self.max_db
        }
    }
}

/// `picture_copy` of luma: samples as floats, high bit depths scaled to 8 bits.
fn luma_to_float(p: &Picture<'_>) -> Image {
    let plane = p.luma();
    let (w, h) = (p.width(), p.height());
    let mut data = Vec::with_capacity(w * h);
    let scaler = match p.bits() {
        10 => 4.0f32,
        12 => 16.0,
        16 => 256.0,
        _ => 1.0,
    };
    for y in 0..h {
        if p.bits() == 8 {
            data.extend(plane.row_u8(y)[..w].iter().map(|&v| v as f32));
        } else {
            data.extend(plane.row_u16(y)[..w].iter().map(|&v| v as f32 / scaler));
        }
    }
    Image { data, width: w, height: h }
}

/// libvmaf's `picture_copy` reads 8, 10, 12 and 16 bits; other depths it
/// misreads as 8-bit samples.
fn check_bits(name: &str, bits: u32) -> Result<()> {
    if !matches!(bits, 8 | 10 | 12 | 16) {
        return Err(Error::NotSupported(format!("{name} at {bits} bits (libvmaf reads 8, 10, 12 and 16)")));
    }
    Ok(())
}

struct Ssim {
    bits: u32,
    lcs: bool,
    db: Db,
    /// The decimation factor (`scale`, or the automatic one).
    factor: usize,
}

fn create_ssim(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o = &cfg.options;
    let bits = cfg.format.bits as u32;
    check_bits("float_ssim", bits)?;
    let (w, h) = (cfg.width, cfg.height);
    let scale = o.get_int(&SSIM_OPTIONS, "scale");
    let factor = if scale > 0 { scale } else { 1.max(iqa::iqa_round(w.min(h) as i32 as f32 / 256.0f32)) } as usize;
    let (sw, sh) = if factor > 1 { iqa::decimated_size(w, h, factor) } else { (w, h) };
    if sw < GAUSSIAN_LEN || sh < GAUSSIAN_LEN {
        // libvmaf divides by a size of zero or less there (NaN or garbage).
        return Err(Error::NotSupported(format!(
            "float_ssim on {w}x{h} decimated by {factor} to {sw}x{sh}: the 11x11 window needs 11 pixels on each side"
        )));
    }
    Ok(Box::new(Ssim {
        bits,
        lcs: o.get_bool(&SSIM_OPTIONS, "enable_lcs"),
        db: Db::new(o.get_bool(&SSIM_OPTIONS, "enable_db"), o.get_bool(&SSIM_OPTIONS, "clip_db"), bits, w, h),
        factor,
    }))
}

impl Extractor for Ssim {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let mut reference = luma_to_float(frame.reference);
        let mut distorted = luma_to_float(frame.distorted);
        if self.factor > 1 {
            // A box filter of factor x factor taps, each 1 / factor².
            let k = self.factor;
            let kernel = vec![1.0f32 / (k * k) as i32 as f32; k * k];
            iqa::decimate_in_place(&mut reference, k, &kernel, k)?;
            iqa::decimate_in_place(&mut distorted, k, &kernel, k)?;
        }
        self.write(iqa::ssim(&reference, &distorted), out);
        Ok(())
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    fn extract_device(&mut self, frame: &DeviceFrameInput<'_>, lane: &mut ErasedRunner, out: &mut FrameScores) -> Result<()> {
        let plan = gpu::Plan::Single { factor: self.factor };
        let t = gpu::terms_dev(lane, frame.reference.luma(), frame.distorted.luma(), self.bits, plan)?;
        self.write(t[0], out);
        Ok(())
    }
}

impl Ssim {
    /// The values of one frame's terms, shared by the CPU and device paths.
    fn write(&self, t: SsimTerms, out: &mut FrameScores) {
        out.push("float_ssim", self.db.apply(t.ssim as f64));
        if self.lcs {
            out.push("float_ssim_l", t.l as f64);
            out.push("float_ssim_c", t.c as f64);
            out.push("float_ssim_s", t.s as f64);
        }
    }
}

/// `SCALES`.
const SCALES: usize = 5;
/// `LPF_LEN`.
const LPF_LEN: usize = 9;
/// `g_lpf`: the 9/7 biorthogonal wavelet low-pass, 2-D.
#[rustfmt::skip]
static LPF: [f32; LPF_LEN * LPF_LEN] = [
     0.000714, -0.000450, -0.002090,  0.007132,  0.016114,  0.007132, -0.002090, -0.000450,  0.000714,
    -0.000450,  0.000283,  0.001316, -0.004490, -0.010146, -0.004490,  0.001316,  0.000283, -0.000450,
    -0.002090,  0.001316,  0.006115, -0.020867, -0.047149, -0.020867,  0.006115,  0.001316, -0.002090,
     0.007132, -0.004490, -0.020867,  0.071207,  0.160885,  0.071207, -0.020867, -0.004490,  0.007132,
     0.016114, -0.010146, -0.047149,  0.160885,  0.363505,  0.160885, -0.047149, -0.010146,  0.016114,
     0.007132, -0.004490, -0.020867,  0.071207,  0.160885,  0.071207, -0.020867, -0.004490,  0.007132,
    -0.002090,  0.001316,  0.006115, -0.020867, -0.047149, -0.020867,  0.006115,  0.001316, -0.002090,
    -0.000450,  0.000283,  0.001316, -0.004490, -0.010146, -0.004490,  0.001316,  0.000283, -0.000450,
     0.000714, -0.000450, -0.002090,  0.007132,  0.016114,  0.007132, -0.002090, -0.000450,  0.000714,
];
/// `g_alphas`, `g_betas`, `g_gammas` (Wang's MS-SSIM weights).
const ALPHAS: [f32; SCALES] = [0.0000, 0.0000, 0.0000, 0.0000, 0.1333];
const BETAS: [f32; SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];
const GAMMAS: [f32; SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];

const MS_NAMES: [[&str; SCALES]; 3] = [
    ["float_ms_ssim_l_scale0", "float_ms_ssim_l_scale1", "float_ms_ssim_l_scale2", "float_ms_ssim_l_scale3", "float_ms_ssim_l_scale4"],
    ["float_ms_ssim_c_scale0", "float_ms_ssim_c_scale1", "float_ms_ssim_c_scale2", "float_ms_ssim_c_scale3", "float_ms_ssim_c_scale4"],
    ["float_ms_ssim_s_scale0", "float_ms_ssim_s_scale1", "float_ms_ssim_s_scale2", "float_ms_ssim_s_scale3", "float_ms_ssim_s_scale4"],
];

struct MsSsim {
    bits: u32,
    lcs: bool,
    db: Db,
}

fn create_ms_ssim(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o = &cfg.options;
    let bits = cfg.format.bits as u32;
    check_bits("float_ms_ssim", bits)?;
    let (w, h) = (cfg.width, cfg.height);
    // compute_ms_ssim's "scale below 1x1" check: halving four times must
    // leave 11 pixels on each side.
    let (mut cw, mut ch) = (w, h);
    for _ in 0..SCALES {
        if cw < GAUSSIAN_LEN || ch < GAUSSIAN_LEN {
            return Err(Error::NotSupported(format!(
                "float_ms_ssim on {w}x{h}: its five scales need 176 pixels on each side (libvmaf fails the frame)"
            )));
        }
        cw /= 2;
        ch /= 2;
    }
    Ok(Box::new(MsSsim {
        bits,
        lcs: o.get_bool(&MS_SSIM_OPTIONS, "enable_lcs"),
        db: Db::new(o.get_bool(&MS_SSIM_OPTIONS, "enable_db"), o.get_bool(&MS_SSIM_OPTIONS, "clip_db"), bits, w, h),
    }))
}

impl Extractor for MsSsim {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let mut reference = luma_to_float(frame.reference);
        let mut distorted = luma_to_float(frame.distorted);
        let mut scales = Vec::with_capacity(SCALES);
        for idx in 0..SCALES {
            if idx > 0 {
                reference = iqa::decimate(&reference, 2, &LPF, LPF_LEN)?;
                distorted = iqa::decimate(&distorted, 2, &LPF, LPF_LEN)?;
            }
            scales.push(iqa::ssim(&reference, &distorted));
        }
        self.write(&scales, out)
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    fn extract_device(&mut self, frame: &DeviceFrameInput<'_>, lane: &mut ErasedRunner, out: &mut FrameScores) -> Result<()> {
        let scales = gpu::terms_dev(lane, frame.reference.luma(), frame.distorted.luma(), self.bits, gpu::Plan::Multi)?;
        self.write(&scales, out)
    }
}

impl MsSsim {
    /// `compute_ms_ssim`'s product over the five scales' terms and the
    /// values written, shared by the CPU and device paths.
    fn write(&self, scales: &[SsimTerms], out: &mut FrameScores) -> Result<()> {
        let mut msssim = 1.0f64;
        let mut terms = [[0.0f64; SCALES]; 3];
        for (idx, t) in scales.iter().enumerate() {
            let (l, c, s) = (t.l as f64, t.c as f64, t.s as f64);
            msssim *= l.powf(ALPHAS[idx] as f64) * c.powf(BETAS[idx] as f64) * s.powf(GAMMAS[idx] as f64);
            terms[0][idx] = l;
            terms[1][idx] = c;
            terms[2][idx] = s;
            if msssim == f64::INFINITY {
                return Err(Error::Internal("float_ms_ssim: the score is infinite (libvmaf fails the frame)".into()));
            }
        }
        out.push("float_ms_ssim", self.db.apply(msssim));
        if self.lcs {
            for (names, values) in MS_NAMES.iter().zip(&terms) {
                for (name, &v) in names.iter().zip(values) {
                    out.push(name, v);
                }
            }
        }
        Ok(())
    }
}
