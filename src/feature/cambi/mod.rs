//! CAMBI, Netflix's banding detector (libvmaf 3.2.0 `feature/cambi.c`,
//! extractor "cambi"): a no-reference score of the distorted luma, or with
//! `full_ref` also of the reference and their difference.
//!
//! Written per frame: `Cambi_feature_cambi_score` (printed "cambi", or
//! "cambi_<alias>_<value>..." for non-default feature parameters), and
//! with `full_ref` `cambi_source` and `cambi_full_reference` (names that
//! never change), each clipped at `cambi_max_val`.
//!
//! Everything that depends only on the geometry and the options (encode
//! and source sizes, windows, EOTF thresholds) is settled in `create`,
//! where libvmaf's `init` settles it; so are the refusals: libvmaf's own
//! (both sides under 216 pixels, a window too large for its reciprocal
//! table, an unknown EOTF) and sizes where libvmaf would read outside a
//! scale's picture (docs/correctness.md). `scalar.rs` does the per-frame
//! work; the c-value pass, most of it, has AVX2 and AVX-512 twins
//! (`avx2.rs`, `avx512.rs`, chosen per CPU level, tests/checkasm/cambi.rs),
//! and the integer picture passes are compiled for each level there too.

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
pub(crate) mod gpu;
pub mod luminance;
pub mod scalar;

use super::options::{OptionKind, OptionSpec};
use super::{DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores};
use crate::device::gpu::backend::DevPlane;
use crate::device::gpu::ErasedRunner;
use crate::picture::PlaneView;
use crate::simd::CpuLevel;
use crate::{Error, Result};
use luminance::{Eotf, LumaRange};
use scalar::{CValueRowFn, CValueScratch, ContrastTables, MaskScratch, Plane16};

/// The one feature libvmaf declares; `cambi_source` and
/// `cambi_full_reference` are written beside it under fixed names.
const CAMBI_NAME: &str = "Cambi_feature_cambi_score";
const SOURCE_NAME: &str = "cambi_source";
const FULL_REFERENCE_NAME: &str = "cambi_full_reference";

const DEFAULT_TOPK: f64 = 0.6;
const DEFAULT_EOTF: &str = "bt1886";
/// Below this on both sides libvmaf refuses the picture.
pub(crate) const MIN_WIDTH_OR_HEIGHT: usize = 216;
const NUM_SCALES: usize = 5;
const SCALE_WEIGHTS: [i32; NUM_SCALES] = [16, 8, 4, 2, 1];
/// Suprathreshold contrast response: the weight of a step of d+1 codes.
pub const CONTRAST_WEIGHTS: [i32; 32] =
    [1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9];

const fn param(
    name: &'static str,
    alias: Option<&'static str>,
    help: &'static str,
    kind: OptionKind,
) -> OptionSpec {
    OptionSpec { name, alias, help, kind, feature_param: true }
}

/// libvmaf's option table, in its order, with its names, aliases,
/// defaults, ranges and feature-parameter flags.
static OPTIONS: [OptionSpec; 17] = [
    param(
        "cambi_max_val",
        Some("cmxv"),
        "maximum value allowed; larger values will be clipped to this value",
        OptionKind::Double { default: 1000.0, min: 0.0, max: 1000.0 },
    ),
    param("enc_width", Some("encw"), "Encoding width", OptionKind::Int { default: 0, min: 180, max: 7680 }),
    param("enc_height", Some("ench"), "Encoding height", OptionKind::Int { default: 0, min: 150, max: 7680 }),
    param("enc_bitdepth", Some("encbd"), "Encoding bitdepth", OptionKind::Int { default: 0, min: 6, max: 16 }),
    param(
        "src_width",
        Some("srcw"),
        "Source width. Only used when full_ref=true.",
        OptionKind::Int { default: 0, min: 320, max: 7680 },
    ),
    param(
        "src_height",
        Some("srch"),
        "Source height. Only used when full_ref=true.",
        OptionKind::Int { default: 0, min: 200, max: 4320 },
    ),
    param(
        "window_size",
        Some("ws"),
        "Window size to compute CAMBI: 65 corresponds to ~1 degree at 4k",
        OptionKind::Int { default: 65, min: 15, max: 127 },
    ),
    param(
        "topk",
        None,
        "Ratio of pixels for the spatial pooling computation, must be 0 < topk <= 1.0",
        OptionKind::Double { default: DEFAULT_TOPK, min: 0.0001, max: 1.0 },
    ),
    param(
        "cambi_topk",
        Some("ctpk"),
        "Ratio of pixels for the spatial pooling computation, must be 0 < cambi_topk <= 1.0",
        OptionKind::Double { default: DEFAULT_TOPK, min: 0.0001, max: 1.0 },
    ),
    param(
        "tvi_threshold",
        Some("tvit"),
        "Visibilty threshold for luminance ΔL < tvi_threshold*L_mean",
        OptionKind::Double { default: 0.019, min: 0.0001, max: 1.0 },
    ),
    param(
        "cambi_vis_lum_threshold",
        Some("vlt"),
        "Luminance value below which we assume any banding is not visible",
        OptionKind::Double { default: 0.0, min: 0.0, max: 300.0 },
    ),
    param(
        "max_log_contrast",
        Some("mlc"),
        "Maximum contrast in log luma level (2^max_log_contrast) at 10-bits, e.g., 2 is equivalent to 4 \
         luma levels at 10-bit and 1 luma level at 8-bit. From 0 to 5: default 2 is recommended for \
         banding from compression.",
        OptionKind::Int { default: 2, min: 0, max: 5 },
    ),
    OptionSpec {
        name: "heatmaps_path",
        alias: None,
        help: "Path where heatmaps will be dumped (vmafx refuses it: it writes no heatmaps).",
        kind: OptionKind::Str { default: None },
        feature_param: false,
    },
    OptionSpec {
        name: "full_ref",
        alias: None,
        help: "If true, CAMBI will be run in full-reference mode and will be computed on both the \
               reference and distorted inputs",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    param(
        "eotf",
        None,
        "Determines the EOTF used to compute the visibility thresholds. Possible values: ['bt1886', \
         'pq']. Default: 'bt1886'",
        OptionKind::Str { default: Some(DEFAULT_EOTF) },
    ),
    param(
        "cambi_eotf",
        Some("ceot"),
        "Determines the EOTF used to compute the visibility thresholds. Possible values: ['bt1886', \
         'pq']. Default: 'bt1886'. If both eotf and cambi_eotf are set, cambi_eotf takes precedence.",
        OptionKind::Str { default: Some(DEFAULT_EOTF) },
    ),
    param(
        "cambi_high_res_speedup",
        Some("hrs"),
        "Speed up the processing by downsampling post spatial mask for resolutions >= 1080p. Min \
         speed-up resolution possible values: [1080, 1440, 2160, 0]. Default: 0 (not applied)Note some \
         loss of accuracy is expected with this speedup.",
        OptionKind::Int { default: 0, min: 0, max: 2160 },
    ),
];

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "cambi",
    provided_features: &[CAMBI_NAME],
    options: &OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    // libvmaf flags cambi neither TEMPORAL nor PREV_REF: a subsample rate
    // skips it.
    every_frame: false,
    reads_chroma: false,
    create,
};

/// One picture CAMBI scores (the distorted one at the encode size, or with
/// `full_ref` the reference at the source size).
struct Side {
    width: usize,
    height: usize,
    window: usize,
    /// Source columns and rows of a nearest-neighbour resize (`None`: the
    /// picture's own size).
    resize: Option<(Vec<usize>, Vec<usize>)>,
}

/// Signature of the c-value pass of one scale ([`scalar::c_values`]).
pub(crate) type CValuesFn =
    fn(&Plane16, &Plane16, &mut [f32], &mut CValueScratch, usize, &ContrastTables<'_>, usize, usize);

/// The c-value pass for `cpu` (the best at or below it).
pub fn c_values_fn(cpu: CpuLevel) -> CValuesFn {
    #[cfg(target_arch = "x86_64")]
    {
        if cpu >= CpuLevel::Avx512 {
            return avx512::c_values;
        }
        if cpu >= CpuLevel::Avx2 {
            return avx2::c_values;
        }
    }
    let _ = cpu;
    scalar::c_values
}

/// CAMBI's integer passes over a scale's picture before the c-values.
#[derive(Clone, Copy)]
pub struct PicturePasses {
    pub anti_dither: fn(&mut Plane16, usize, usize),
    pub spatial_mask: fn(&Plane16, &mut Plane16, usize, usize, &mut MaskScratch),
    pub decimate: fn(&mut Plane16, usize, usize),
    pub filter_mode: fn(&mut Plane16, usize, usize, &mut Vec<u16>),
}

impl PicturePasses {
    pub const SCALAR: PicturePasses = PicturePasses {
        anti_dither: scalar::anti_dither,
        spatial_mask: scalar::spatial_mask,
        decimate: scalar::decimate,
        filter_mode: scalar::filter_mode,
    };
}

/// The picture passes for `cpu` (the best at or below it).
pub fn picture_passes(cpu: CpuLevel) -> PicturePasses {
    #[cfg(target_arch = "x86_64")]
    {
        if cpu >= CpuLevel::Avx512 {
            return avx512::picture_passes();
        }
        if cpu >= CpuLevel::Avx2 {
            return avx2::picture_passes();
        }
    }
    let _ = cpu;
    PicturePasses::SCALAR
}

/// The c-value row kernel for `cpu`, alone (for checkasm).
pub fn c_value_row_fn(cpu: CpuLevel) -> CValueRowFn {
    #[cfg(target_arch = "x86_64")]
    {
        if cpu >= CpuLevel::Avx512 {
            return avx512::c_value_row;
        }
        if cpu >= CpuLevel::Avx2 {
            return avx2::c_value_row;
        }
    }
    let _ = cpu;
    scalar::c_value_row
}

/// The contrast steps and their visibility thresholds, fixed per
/// extractor; the c-value passes read them as [`ContrastTables`].
struct Contrast {
    num_diffs: usize,
    tvi_for_diff: Vec<u16>,
    diff_weights: Vec<i32>,
    vlt_luma: u16,
    band_base: u16,
    band_size: u16,
}

impl Contrast {
    fn tables(&self) -> ContrastTables<'_> {
        ContrastTables {
            num_diffs: self.num_diffs,
            tvi_for_diff: &self.tvi_for_diff,
            vlt_luma: self.vlt_luma,
            diff_weights: &self.diff_weights,
            band_base: self.band_base,
            band_size: self.band_size,
        }
    }
}

struct Cambi {
    bits: u32,
    enc_bitdepth: u32,
    dist: Side,
    /// With `full_ref`.
    src: Option<Side>,
    high_res_speedup: bool,
    topk: f64,
    max_val: f64,
    name: String,
    contrast: Contrast,
    /// No pixel can have a c-value (the visible band is empty): every
    /// c-value is 0.
    band_empty: bool,
    image: Plane16,
    mask: Plane16,
    c_values: Vec<f32>,
    mask_scratch: MaskScratch,
    c_scratch: CValueScratch,
    mode_lines: Vec<u16>,
    c_values_fn: CValuesFn,
    passes: PicturePasses,
}

/// libvmaf's `adjust_window_size`: the window scales with width + height
/// (65 at 4K), halves with the high-resolution speed-up, and is odd.
fn adjust_window_size(window: usize, width: usize, height: usize, speedup: bool) -> usize {
    // libvmaf keeps the window in a uint16_t.
    let mut w = (((window * (width + height)) / 375) >> 4) as u16;
    if speedup {
        w = (w + 1) >> 1;
    }
    (w | 1) as usize
}

/// Scales of device pictures whose pooling fell back to the host (their
/// c-values read back, gpu.rs) since the process started; for the tests.
#[doc(hidden)]
pub fn scales_pooled_on_host() -> u64 {
    gpu::scales_pooled_on_host()
}

/// Sizes of the five scales (the first halved too with the speed-up).
fn scale_sizes(width: usize, height: usize, speedup: bool) -> [(usize, usize); NUM_SCALES] {
    let mut out = [(0, 0); NUM_SCALES];
    let (mut w, mut h) = (width, height);
    for (scale, o) in out.iter_mut().enumerate() {
        if scale > 0 || speedup {
            w = (w + 1) >> 1;
            h = (h + 1) >> 1;
        }
        *o = (w, h);
    }
    out
}

/// Refuses a side whose window reaches past a scale's picture: libvmaf's
/// histogram loops then read rows and columns outside the scale (stale
/// samples of the larger scale before it, or past its buffer).
fn check_window_fits(side: &Side, speedup: bool, what: &str) -> Result<()> {
    let pad = side.window >> 1;
    for (scale, (w, h)) in scale_sizes(side.width, side.height, speedup).into_iter().enumerate() {
        // At a full-size first scale a window as tall as the picture also
        // writes a row of c-values past libvmaf's buffer.
        let full_size = scale == 0 && !speedup;
        if pad > w || pad > h || (full_size && pad >= h) {
            return Err(Error::NotSupported(format!(
                "cambi: {what} {}x{} with a {win}x{win} window: at scale {scale} ({w}x{h}) the window \
                 reaches outside the picture, where libvmaf reads samples that are not part of it",
                side.width,
                side.height,
                win = side.window
            )));
        }
    }
    Ok(())
}

/// Samples per row of a libvmaf picture `width` wide (`DATA_ALIGN` 32).
fn stride_of(width: usize) -> usize {
    width.div_ceil(32) * 32
}

fn make_side(pic_w: usize, pic_h: usize, width: usize, height: usize, window: usize, what: &str) -> Result<Side> {
    let resize = if (width, height) == (pic_w, pic_h) {
        None
    } else {
        let xs = scalar::resize_coords(pic_w, width);
        let ys = scalar::resize_coords(pic_h, height);
        match (xs, ys) {
            (Some(xs), Some(ys)) => Some((xs, ys)),
            _ => {
                return Err(Error::NotSupported(format!(
                    "cambi: resizing {pic_w}x{pic_h} to the {what} size {width}x{height} reads outside the \
                     picture in libvmaf"
                )))
            }
        }
    };
    Ok(Side { width, height, window, resize })
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o: &FeatureOptions = &cfg.options;
    let int = |name| o.get_int(&OPTIONS, name);
    let (w, h) = (cfg.width, cfg.height);
    let bits = cfg.format.bits as u32;

    if let Some(path) = o.get_str(&OPTIONS, "heatmaps_path") {
        return Err(Error::NotSupported(format!(
            "cambi heatmaps_path={path}: vmafx writes no heatmaps (leave the option out)"
        )));
    }

    // Encode and source sizes: both given or the picture's; an encode
    // larger than the picture is the picture.
    let enc_bitdepth = match int("enc_bitdepth") {
        0 => bits,
        b => b as u32,
    };
    let (mut enc_w, mut enc_h) = match (int("enc_width"), int("enc_height")) {
        (0, _) | (_, 0) => (w, h),
        (ew, eh) => (ew as usize, eh as usize),
    };
    let (src_w, src_h) = match (int("src_width"), int("src_height")) {
        (0, _) | (_, 0) => (w, h),
        (sw, sh) => (sw as usize, sh as usize),
    };
    if enc_h > h || enc_w > w {
        (enc_w, enc_h) = (w, h);
    }
    if enc_w < MIN_WIDTH_OR_HEIGHT && enc_h < MIN_WIDTH_OR_HEIGHT {
        return Err(Error::NotSupported(format!(
            "cambi: {enc_w}x{enc_h}: libvmaf's cambi needs a width or a height of at least \
             {MIN_WIDTH_OR_HEIGHT} (it refuses the picture)"
        )));
    }
    if src_w < MIN_WIDTH_OR_HEIGHT && src_h < MIN_WIDTH_OR_HEIGHT {
        return Err(Error::NotSupported(format!(
            "cambi: source {src_w}x{src_h}: libvmaf's cambi needs a width or a height of at least \
             {MIN_WIDTH_OR_HEIGHT}"
        )));
    }
    if (src_w > enc_w && src_h < enc_h) || (src_w < enc_w && src_h > enc_h) {
        return Err(Error::invalid(format!(
            "cambi: source {src_w}x{src_h} and encode {enc_w}x{enc_h}: one must not be wider and \
             shorter than the other (libvmaf refuses it)"
        )));
    }

    let enc_pixels = enc_w * enc_h;
    let speedup = match int("cambi_high_res_speedup") {
        1080 => enc_pixels >= 1920 * 1080,
        1440 => enc_pixels >= 2560 * 1440,
        2160 => enc_pixels >= 3840 * 2160,
        _ => false,
    };

    // Contrast steps and their visibility thresholds (10-bit codes).
    let num_diffs = 1usize << int("max_log_contrast");
    let diff_weights = CONTRAST_WEIGHTS[..num_diffs].to_vec();
    let range = LumaRange::LIMITED_10BIT;
    let cambi_eotf = o.get_str(&OPTIONS, "cambi_eotf").unwrap_or_default();
    let eotf_name =
        if cambi_eotf != DEFAULT_EOTF { cambi_eotf } else { o.get_str(&OPTIONS, "eotf").unwrap_or_default() };
    let eotf = Eotf::from_name(&eotf_name)?;
    let tvi_threshold = o.get_double(&OPTIONS, "tvi_threshold");
    let tvi_for_diff: Vec<u16> = (0..num_diffs)
        .map(|d| (luminance::tvi_for_diff(d as i32 + 1, tvi_threshold, range, eotf) + num_diffs as i32) as u16)
        .collect();
    let vlt_luma = luminance::vlt_luma(o.get_double(&OPTIONS, "cambi_vis_lum_threshold"), range, eotf)?;

    let window = int("window_size") as usize;
    let enc_window = adjust_window_size(window, enc_w, enc_h, speedup);
    let src_window = adjust_window_size(window, src_w, src_h, speedup);
    let max_window = enc_window.max(src_window);
    if max_window * max_window >= scalar::RECIPROCAL_LUT_SIZE {
        return Err(Error::NotSupported(format!(
            "cambi: window_size {window} scales to {max_window} at this size, too large for libvmaf's \
             reciprocal table (it refuses it)"
        )));
    }

    // The band of codes that can have a c-value. libvmaf keeps its size
    // in a uint16_t; when the band is empty it wraps.
    let v_lo = vlt_luma as i32 - 3 * num_diffs as i32 + 1;
    let band_base = v_lo.max(0) as u16;
    let band_size_signed = tvi_for_diff[num_diffs - 1] as i32 + 1 - band_base as i32;
    let band_size = band_size_signed as u16;
    // The c-value histograms read codes up to a pixel's code plus its
    // step, which stays in the band only if a larger step's threshold is
    // never lower (true of both EOTFs; checked, not assumed).
    if tvi_for_diff.windows(2).any(|p| p[1] < p[0]) {
        return Err(Error::Internal(format!("cambi: visibility thresholds not monotonic: {tvi_for_diff:?}")));
    }
    if band_size_signed < 0 {
        // libvmaf's band size wraps around (a uint16_t), and its sliding
        // histogram update indexes rows with the unwrapped, negative code
        // difference: it writes before its histogram buffer (and crashes).
        return Err(Error::NotSupported(format!(
            "cambi: cambi_vis_lum_threshold={} hides every contrast step that tvi_threshold={tvi_threshold} \
             and max_log_contrast={} leave visible (no code can show banding); libvmaf 3.2.0 writes \
             outside its histograms here",
            o.get_double(&OPTIONS, "cambi_vis_lum_threshold"),
            int("max_log_contrast")
        )));
    }
    // An empty band: no pixel has a c-value (libvmaf's histograms hold
    // no row).
    let band_empty = band_size_signed == 0;

    let full_ref = o.get_bool(&OPTIONS, "full_ref");
    let dist = make_side(w, h, enc_w, enc_h, enc_window, "encode")?;
    check_window_fits(&dist, speedup, "encode size")?;
    let src = if full_ref {
        let side = make_side(w, h, src_w, src_h, src_window, "source")?;
        check_window_fits(&side, speedup, "source size")?;
        Some(side)
    } else {
        None
    };
    let (alloc_w, alloc_h) = if full_ref { (src_w.max(enc_w), src_h.max(enc_h)) } else { (enc_w, enc_h) };
    // libvmaf copies a 10-bit picture it does not resize with one memcpy
    // of its rows, as if its working picture (as wide as the larger
    // source) had the same stride (rows of 32-sample multiples): the rows
    // shift and the bottom ones keep the previous frame's source samples.
    if bits == 10 && full_ref && (enc_w, enc_h) == (w, h) && stride_of(alloc_w) != stride_of(w) {
        return Err(Error::NotSupported(format!(
            "cambi: full_ref with a source of {src_w}x{src_h} wider than the 10-bit {w}x{h} picture: \
             libvmaf 3.2.0 misreads the picture here (its rows shift and mix in the previous frame)"
        )));
    }

    // `topk` wins when set to anything but its default.
    let topk = match o.get_double(&OPTIONS, "topk") {
        t if t != DEFAULT_TOPK => t,
        _ => o.get_double(&OPTIONS, "cambi_topk"),
    };

    Ok(Box::new(Cambi {
        bits,
        enc_bitdepth,
        dist,
        src,
        high_res_speedup: speedup,
        topk,
        max_val: o.get_double(&OPTIONS, "cambi_max_val"),
        name: DESCRIPTOR.feature_name(CAMBI_NAME, o),
        contrast: Contrast { num_diffs, tvi_for_diff, diff_weights, vlt_luma, band_base, band_size },
        band_empty,
        image: Plane16::new(alloc_w, alloc_h),
        mask: Plane16::new(alloc_w, alloc_h),
        c_values: vec![0.0; alloc_w * alloc_h],
        mask_scratch: MaskScratch::default(),
        c_scratch: CValueScratch::default(),
        mode_lines: Vec::new(),
        c_values_fn: c_values_fn(cfg.cpu),
        passes: picture_passes(cfg.cpu),
    }))
}

#[inline]
fn c_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

impl Cambi {
    /// The CAMBI score of one luma plane, before clipping.
    fn score(&mut self, plane: &PlaneView<'_>, src: bool) -> Result<f64> {
        let side = if src { self.src.as_ref().expect("full_ref has a source side") } else { &self.dist };
        let plane = *plane;
        if let Some((x, y, v)) = scalar::first_out_of_range(&plane, self.bits) {
            return Err(Error::invalid(format!(
                "cambi: luma sample ({x},{y}) = {v} exceeds the maximum {} of a {}-bit picture",
                (1u32 << self.bits) - 1,
                self.bits
            )));
        }
        let (w, h) = (side.width, side.height);
        let resize = side.resize.as_ref().map(|(xs, ys)| (xs.as_slice(), ys.as_slice()));
        scalar::to_10bit(&plane, self.bits, &mut self.image, resize);
        if self.enc_bitdepth < 10 {
            (self.passes.anti_dither)(&mut self.image, w, h);
        }
        (self.passes.spatial_mask)(&self.image, &mut self.mask, w, h, &mut self.mask_scratch);

        let mut per_scale = [0.0f64; NUM_SCALES];
        for (scale, (sw, sh)) in scale_sizes(w, h, self.high_res_speedup).into_iter().enumerate() {
            if scale > 0 || self.high_res_speedup {
                (self.passes.decimate)(&mut self.image, sw, sh);
                (self.passes.decimate)(&mut self.mask, sw, sh);
            }
            (self.passes.filter_mode)(&mut self.image, sw, sh, &mut self.mode_lines);
            let c_values = &mut self.c_values[..sw * sh];
            if self.band_empty {
                c_values.fill(0.0);
            } else {
                (self.c_values_fn)(
                    &self.image,
                    &self.mask,
                    c_values,
                    &mut self.c_scratch,
                    side.window,
                    &self.contrast.tables(),
                    sw,
                    sh,
                );
            }
            per_scale[scale] = scalar::spatial_pooling(c_values, self.topk);
        }
        Ok(weighted(&per_scale, side.window))
    }

    /// The CAMBI score of one device luma plane, before clipping: every
    /// pass on the device, the pooled values read back (gpu.rs).
    fn score_device(&self, plane: DevPlane, src: bool, lane: &mut ErasedRunner) -> Result<f64> {
        let side = if src { self.src.as_ref().expect("full_ref has a source side") } else { &self.dist };
        let job = gpu::SideJob {
            plane,
            bits: self.bits,
            width: side.width,
            height: side.height,
            resize: side.resize.as_ref().map(|(xs, ys)| (xs.as_slice(), ys.as_slice())),
            window: side.window,
            anti_dither: self.enc_bitdepth < 10,
            scales: scale_sizes(side.width, side.height, self.high_res_speedup),
            decimate_first: self.high_res_speedup,
            topk: self.topk,
            band_empty: self.band_empty,
        };
        let per_scale = gpu::score_dev(lane, &job, &self.contrast.tables())?;
        Ok(weighted(&per_scale, side.window))
    }
}

/// The per-scale pooled values weighted by scale, over the window's pixel
/// count (a uint16_t).
fn weighted(per_scale: &[f64; NUM_SCALES], window: usize) -> f64 {
    let odd = 2 * (window >> 1) + 1;
    let pixels_in_window = (odd * odd) as u16;
    let mut score = 0.0f64;
    for (s, wgt) in per_scale.iter().zip(SCALE_WEIGHTS) {
        score += s * wgt as f64;
    }
    score / pixels_in_window as f64
}

impl Extractor for Cambi {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let dist_score = self.score(&frame.distorted.plane(0), false)?;
        let src_score = match self.src {
            Some(_) => Some(self.score(&frame.reference.plane(0), true)?),
            None => None,
        };
        self.write(dist_score, src_score, out);
        Ok(())
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    /// Every pass on the device from the device luma, one small read-back
    /// per side (gpu.rs): no plane and no c-values come back.
    fn extract_device(&mut self, frame: &DeviceFrameInput<'_>, lane: &mut ErasedRunner, out: &mut FrameScores) -> Result<()> {
        let dist_score = self.score_device(frame.distorted.planes[0], false, lane)?;
        let src_score = match self.src {
            Some(_) => Some(self.score_device(frame.reference.planes[0], true, lane)?),
            None => None,
        };
        self.write(dist_score, src_score, out);
        Ok(())
    }
}

impl Cambi {
    /// The features of one frame from its scores (the source's with
    /// `full_ref`), each clipped at `cambi_max_val`.
    fn write(&self, dist_score: f64, src_score: Option<f64>, out: &mut FrameScores) {
        out.push(&self.name, c_min(dist_score, self.max_val));
        if let Some(src_score) = src_score {
            out.push(SOURCE_NAME, c_min(src_score, self.max_val));
            // libvmaf's MAX(0, dist - src).
            let diff = dist_score - src_score;
            let combined = if 0.0 > diff { 0.0 } else { diff };
            out.push(FULL_REFERENCE_NAME, c_min(combined, self.max_val));
        }
    }
}
