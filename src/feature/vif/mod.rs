//! Integer VIF (libvmaf 3.2.0 `feature/integer_vif.c`, `integer_vif.h`).
//!
//! Four scales of the luma plane. At each scale a separable filter (17, 9, 5
//! and 3 taps, Q16, mirrored edges) gives local means, variances and the
//! covariance of reference and distorted; per pixel these become a
//! fixed-point log-ratio (`vif_statistic_8` / `vif_statistic_16`), summed into
//! four integers per scale. Between scales the next filter low-passes and
//! decimates by two (`subsample_rd_8` / `subsample_rd_16`). Per frame:
//! `VMAF_integer_feature_vif_scale0..3_score` = num / den (as floats), plus
//! the debug sums when `debug=true`.
//!
//! Kernels: [`scalar`] mirrors libvmaf's C loops; `avx2.rs` and `avx512.rs`
//! are its twins, bit for bit, chosen by [`kernels`] when the CPU level
//! allows (libvmaf's own AVX2/AVX-512 code gives the C results, which the
//! golden tests check).
//!
//! Edges: libvmaf mirrors rows and columns in its buffers; [`reflect`] gives
//! the same indices while every scale is at least 2x2. Below 16x16 luma
//! scale 3 is a single row or column and libvmaf reads stale buffer
//! contents, so vmafx refuses such pictures ([`MIN_SIZE`]).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub(crate) mod gpu;
pub(crate) mod scalar;

use std::sync::OnceLock;

use super::options::{OptionKind, OptionSpec, DEBUG_OPTION};
use super::{
    DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput,
    FrameScores,
};
use crate::device::gpu::ErasedRunner;
use crate::picture::PlaneView;
use crate::simd::CpuLevel;
use crate::{Error, Result};

const SCALE_SCORE: [&str; 4] = [
    "VMAF_integer_feature_vif_scale0_score",
    "VMAF_integer_feature_vif_scale1_score",
    "VMAF_integer_feature_vif_scale2_score",
    "VMAF_integer_feature_vif_scale3_score",
];
const DEBUG_VIF: &str = "integer_vif";
const DEBUG_NUM: &str = "integer_vif_num";
const DEBUG_DEN: &str = "integer_vif_den";
const DEBUG_NUM_SCALE: [&str; 4] =
    ["integer_vif_num_scale0", "integer_vif_num_scale1", "integer_vif_num_scale2", "integer_vif_num_scale3"];
const DEBUG_DEN_SCALE: [&str; 4] =
    ["integer_vif_den_scale0", "integer_vif_den_scale1", "integer_vif_den_scale2", "integer_vif_den_scale3"];

/// libvmaf's `DEFAULT_VIF_ENHN_GAIN_LIMIT`.
pub(crate) const DEFAULT_ENHN_GAIN_LIMIT: f64 = 100.0;

static OPTIONS: [OptionSpec; 3] = [
    DEBUG_OPTION,
    OptionSpec {
        name: "vif_enhn_gain_limit",
        alias: Some("egl"),
        help:
            "enhancement gain imposed on vif, must be >= 1.0, where 1.0 means the gain is completely disabled",
        kind: OptionKind::Double { default: DEFAULT_ENHN_GAIN_LIMIT, min: 1.0, max: DEFAULT_ENHN_GAIN_LIMIT },
        feature_param: true,
    },
    OptionSpec {
        name: "vif_skip_scale0",
        alias: Some("ssclz"),
        help: "when set, skip scale 0 calculations",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
];

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "vif",
    provided_features: &[
        SCALE_SCORE[0],
        SCALE_SCORE[1],
        SCALE_SCORE[2],
        SCALE_SCORE[3],
        DEBUG_VIF,
        DEBUG_NUM,
        DEBUG_DEN,
        DEBUG_NUM_SCALE[0],
        DEBUG_DEN_SCALE[0],
        DEBUG_NUM_SCALE[1],
        DEBUG_DEN_SCALE[1],
        DEBUG_NUM_SCALE[2],
        DEBUG_DEN_SCALE[2],
        DEBUG_NUM_SCALE[3],
        DEBUG_DEN_SCALE[3],
    ],
    options: &OPTIONS,
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

/// The four 1-D filters (`vif_filter1d_table`), Q16: each sums to 65536.
pub const FILTERS: [&[u16]; 4] = [
    &[489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935, 489],
    &[1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244],
    &[3571, 16004, 26386, 16004, 3571],
    &[10904, 43728, 10904],
];

/// Widest half filter: the padding the row buffers keep on each side.
pub(crate) const MAX_HALF: usize = 8;

/// Smallest luma libvmaf scores from the picture alone: below 16 pixels
/// (wide or high) scale 3 is a single row or column, and libvmaf's mirror
/// then reads rows and columns of its buffers that the current scale never
/// wrote (left over from the previous scale or frame).
pub(crate) const MIN_SIZE: usize = 16;

/// `sigma_nsq`: the noise variance, 2.0 in Q16.
pub const SIGMA_NSQ: i32 = 65536 << 1;

/// libvmaf's `log2_table` (`log_generate`): round(log2f(i) * 2048) for
/// i in 32767..65536, zero elsewhere; 65537 entries.
pub fn log2_table() -> &'static [u16; 65537] {
    static TABLE: OnceLock<Box<[u16; 65537]>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u16; 65537]);
        for i in 32767..65536u32 {
            // log2f in float, times 2048 in float, then C's round().
            t[i as usize] = ((i as f32).log2() * 2048.0f32).round() as u16;
        }
        t
    })
}

/// One plane of samples: `height` rows of `width`, row `y` starting at
/// element `y * stride` of `data`.
#[derive(Clone, Copy, Debug)]
pub struct Plane<'a, T> {
    pub data: &'a [T],
    pub stride: usize,
    pub width: usize,
    pub height: usize,
}

impl<'a, T> Plane<'a, T> {
    /// Checks that `data` holds every row.
    pub fn new(data: &'a [T], stride: usize, width: usize, height: usize) -> Result<Self> {
        if stride < width || (height > 0 && data.len() < (height - 1) * stride + width) {
            return Err(Error::invalid(format!(
                "vif plane {width}x{height}, stride {stride}: buffer of {} samples is too short",
                data.len()
            )));
        }
        Ok(Plane { data, stride, width, height })
    }

    #[inline]
    pub fn row(&self, y: usize) -> &'a [T] {
        &self.data[y * self.stride..y * self.stride + self.width]
    }
}

/// A sample type the kernels read: u8 (8-bit input) or u16.
pub(crate) trait Sample: Copy + Send + Sync + 'static {
    fn widen(self) -> u32;
}
impl Sample for u8 {
    #[inline(always)]
    fn widen(self) -> u32 {
        self as u32
    }
}
impl Sample for u16 {
    #[inline(always)]
    fn widen(self) -> u32 {
        self as u32
    }
}

/// What one scale's statistic sums to (libvmaf's `VifResiduals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VifSums {
    pub num_log: i64,
    pub den_log: i64,
    pub num_non_log: i64,
    pub den_non_log: i64,
}

impl VifSums {
    pub fn add(&mut self, o: &VifSums) {
        self.num_log = self.num_log.wrapping_add(o.num_log);
        self.den_log = self.den_log.wrapping_add(o.den_log);
        self.num_non_log = self.num_non_log.wrapping_add(o.num_non_log);
        self.den_non_log = self.den_non_log.wrapping_add(o.den_non_log);
    }

    /// libvmaf's final `num[0]`, `den[0]` (computed in double, stored as float).
    pub fn num_den(&self) -> (f32, f32) {
        let num = self.num_log as f64 / 2048.0
            + (self.den_non_log as f64 - (self.num_non_log as f64 / 16384.0) / 65025.0);
        let den = self.den_log as f64 / 2048.0 + self.den_non_log as f64;
        (num as f32, den as f32)
    }
}

/// Rounding and shifts of one vertical pass, `(x + round) >> shift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift {
    pub shift: u32,
    pub round: u32,
}

impl Shift {
    pub const fn new(shift: u32) -> Self {
        Shift { shift, round: if shift == 0 { 0 } else { 1 << (shift - 1) } }
    }
}

/// Parameters of the statistic at one scale.
#[derive(Clone, Copy, Debug)]
pub struct StatParams {
    /// 0..=3: picks the filter.
    pub scale: usize,
    /// Vertical pass of the means (`shift_VP`).
    pub mu: Shift,
    /// Vertical pass of the squares and product (`shift_VP_sq`).
    pub sq: Shift,
    pub enhn_gain_limit: f64,
}

impl StatParams {
    /// As `vif_statistic_8` (bpc 8, scale 0) and `vif_statistic_16` set them.
    pub fn new(scale: usize, bpc: u32, enhn_gain_limit: f64) -> Self {
        let (mu, sq) = if scale == 0 {
            (Shift::new(bpc), Shift::new(2 * (bpc - 8)))
        } else {
            (Shift::new(16), Shift::new(16))
        };
        StatParams { scale, mu, sq, enhn_gain_limit }
    }
}

/// Parameters of one subsampling step, from `scale` to `scale + 1`.
#[derive(Clone, Copy, Debug)]
pub struct SubsampleParams {
    /// 0..=2: the filter is `FILTERS[scale + 1]`.
    pub scale: usize,
    /// Vertical pass (`shift_VP`); the horizontal one is always 16.
    pub mu: Shift,
}

impl SubsampleParams {
    pub fn new(scale: usize, bpc: u32) -> Self {
        SubsampleParams { scale, mu: if scale == 0 { Shift::new(bpc) } else { Shift::new(16) } }
    }
}

/// Per-instance scratch rows the kernels reuse.
#[derive(Default, Debug)]
pub struct Scratch {
    pub(crate) u32s: Vec<u32>,
    pub(crate) u64s: Vec<u64>,
    pub(crate) i32s: Vec<i32>,
    pub(crate) i16s: Vec<i16>,
    /// A row's sigmas between the AVX2 horizontal pass and its statistic.
    pub(crate) sigmas: Vec<i32>,
}

/// `len` i32s of `buf` (grown as needed) that start on a 64-byte cache line:
/// the SIMD statistics' ring of pair blocks. A Vec that size comes from mmap
/// at 16 bytes past a page, and then every 64-byte load of it (and every
/// other 32-byte one) would span two lines.
pub(crate) fn on_cache_line(buf: &mut Vec<i32>, len: usize) -> &mut [i32] {
    buf.resize(len + 16, 0);
    let line = buf.as_ptr().align_offset(64).min(16);
    &mut buf[line..line + len]
}

/// libvmaf's edge rule, seen from a reader: the row (or column) that index
/// `i` of a `n`-long line holds once `pad_top_and_bottom` /
/// `PADDING_SQ_DATA` have mirrored it (-1 → 1, n → n - 2, repeated).
#[inline]
pub fn reflect(i: isize, n: usize) -> usize {
    if i >= 0 && (i as usize) < n {
        return i as usize;
    }
    if n < 2 {
        return 0;
    }
    let period = 2 * (n as isize - 1);
    let m = i.rem_euclid(period) as usize;
    if m >= n {
        period as usize - m
    } else {
        m
    }
}

/// `log2_32`: log2 of `temp` (>= 2^17), Q11, from the table.
#[inline]
pub fn log2_32(table: &[u16; 65537], temp: u32) -> i32 {
    let k = 16 - temp.leading_zeros() as i32;
    let m = temp.wrapping_shr(k as u32);
    table[(m & 0xffff) as usize] as i32 + 2048 * k
}

/// `log2_64`: log2 of `temp` (>= 2^17), Q11, from the table.
#[inline]
pub fn log2_64(table: &[u16; 65537], temp: u64) -> i32 {
    let k = 48 - temp.leading_zeros() as i32;
    let m = temp.wrapping_shr(k as u32);
    table[(m & 0xffff) as usize] as i32 + 2048 * k
}

/// The per-pixel part of `vif_statistic_*`: one (sigma1², sigma2², sigma12)
/// triple (sigma2² not yet clamped) into the sums.
#[inline]
pub fn accumulate(
    sums: &mut VifSums,
    sigma1_sq: i32,
    sigma2_sq: i32,
    sigma12: i32,
    enhn_gain_limit: f64,
    table: &[u16; 65537],
) {
    let sigma2_sq = sigma2_sq.max(0);
    if sigma1_sq >= SIGMA_NSQ {
        let den = log2_32(table, SIGMA_NSQ.wrapping_add(sigma1_sq) as u32) - 2048 * 17;
        sums.den_log = sums.den_log.wrapping_add(den as i64);
        if sigma12 > 0 && sigma2_sq > 0 {
            const EPS: f64 = 65536.0 * 1.0e-10;
            let g = sigma12 as f64 / (sigma1_sq as f64 + EPS);
            let sv_sq = (sigma2_sq as f64 - g * sigma12 as f64) as i32;
            let sv_sq = sv_sq.max(0);
            // C's MIN(g, limit): g < limit ? g : limit.
            let g = if g < enhn_gain_limit { g } else { enhn_gain_limit };
            let numer1 = (sv_sq as u32).wrapping_add(SIGMA_NSQ as u32);
            let numer1_tmp = ((g * g * sigma1_sq as f64) as i64).wrapping_add(numer1 as i64);
            let num = log2_64(table, numer1_tmp as u64) - log2_64(table, numer1 as u64);
            sums.num_log = sums.num_log.wrapping_add(num as i64);
        }
    } else {
        sums.num_non_log = sums.num_non_log.wrapping_add(sigma2_sq as i64);
        sums.den_non_log += 1;
    }
}

/// The statistic of one scale over 8-bit samples.
pub(crate) type StatU8Fn = fn(&Plane<u8>, &Plane<u8>, &StatParams, &mut Scratch) -> VifSums;
/// The statistic of one scale over 16-bit samples.
pub(crate) type StatU16Fn = fn(&Plane<u16>, &Plane<u16>, &StatParams, &mut Scratch) -> VifSums;
/// Filter and decimate 8-bit planes into (w/2) x (h/2) u16 planes, rows
/// packed (stride w/2).
pub(crate) type SubsampleU8Fn = fn(&Plane<u8>, &Plane<u8>, &SubsampleParams, &mut Scratch, &mut [u16], &mut [u16]);
/// Filter and decimate 16-bit planes.
pub(crate) type SubsampleU16Fn =
    fn(&Plane<u16>, &Plane<u16>, &SubsampleParams, &mut Scratch, &mut [u16], &mut [u16]);

/// The per-pixel statistic alone over (sigma1², sigma2², sigma12) triples
/// (equal lengths), with an enhancement gain limit.
pub(crate) type StatisticFn = fn(&[i32], &[i32], &[i32], f64) -> VifSums;

/// The kernels of one CPU level.
#[derive(Clone, Copy)]
pub struct Kernels {
    pub stat_u8: StatU8Fn,
    pub stat_u16: StatU16Fn,
    pub subsample_u8: SubsampleU8Fn,
    pub subsample_u16: SubsampleU16Fn,
    pub statistic: StatisticFn,
}

/// The kernels for `cpu` (the best at or below it), with the log2 lookups
/// as gathers where this CPU's gathers are fast (`simd::fast_gathers`).
pub fn kernels(cpu: CpuLevel) -> Kernels {
    kernels_for(cpu, crate::simd::fast_gathers())
}

/// The kernels for `cpu`, the SIMD statistics' log2 lookups as vector
/// gathers or as scalar loads (both exact; which is faster depends on the
/// core). The scalar level has no lookups to choose.
pub fn kernels_for(cpu: CpuLevel, gathers: bool) -> Kernels {
    #[cfg(target_arch = "x86_64")]
    {
        let host = CpuLevel::detect_host();
        let pick = |with: Kernels, without: Kernels| if gathers { with } else { without };
        if cpu >= CpuLevel::Avx512Vnni && host >= CpuLevel::Avx512Vnni {
            return pick(avx512::KERNELS_VNNI_GATHER, avx512::KERNELS_VNNI);
        }
        if cpu >= CpuLevel::Avx512 && host >= CpuLevel::Avx512 {
            return pick(avx512::KERNELS_GATHER, avx512::KERNELS);
        }
        if cpu >= CpuLevel::Avx2 && host >= CpuLevel::Avx2 {
            return pick(avx2::KERNELS_GATHER, avx2::KERNELS);
        }
    }
    let _ = (cpu, gathers);
    scalar::KERNELS
}

/// Per-scale num and den of one frame (libvmaf's `VifScore`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VifScore {
    pub num: [f32; 4],
    pub den: [f32; 4],
}

/// Everything one frame needs besides its pictures: kernels, scratch and
/// the decimated planes of scales 1..=3.
pub struct VifComputer {
    kernels: Kernels,
    enhn_gain_limit: f64,
    skip_scale0: bool,
    scratch: Scratch,
    scales: [(Vec<u16>, Vec<u16>); 3],
}

impl VifComputer {
    pub fn new(kernels: Kernels, enhn_gain_limit: f64, skip_scale0: bool) -> Self {
        VifComputer {
            kernels,
            enhn_gain_limit,
            skip_scale0,
            scratch: Scratch::default(),
            scales: Default::default(),
        }
    }

    /// libvmaf's `extract`, without the writing: scores one luma pair.
    /// With `skip_scale0`, scale 0 stays zero.
    pub fn compute(&mut self, reference: &PlaneView, distorted: &PlaneView, bpc: u32) -> Result<VifScore> {
        let sums = self.sums(reference, distorted, bpc)?;
        Ok(self.score(&sums))
    }

    /// The score of a frame's sums (from [`VifComputer::sums`] or a device).
    pub fn score(&self, sums: &[VifSums; 4]) -> VifScore {
        let mut score = VifScore::default();
        let start = if self.skip_scale0 { 1 } else { 0 };
        for (scale, s) in sums.iter().enumerate().skip(start) {
            (score.num[scale], score.den[scale]) = s.num_den();
        }
        score
    }

    pub fn enhn_gain_limit(&self) -> f64 {
        self.enhn_gain_limit
    }

    /// The integer sums of the four scales of one luma pair (what a GPU
    /// computes too; [`VifSums::num_den`] turns them into the score). With
    /// `skip_scale0`, scale 0's sums stay zero.
    pub fn sums(&mut self, reference: &PlaneView, distorted: &PlaneView, bpc: u32) -> Result<[VifSums; 4]> {
        let (w, h) = (reference.width(), distorted.height());
        if distorted.width() != w || reference.height() != h {
            return Err(Error::Mismatch("vif: reference and distorted luma differ in size".into()));
        }
        check_size(w, h)?;
        let k = self.kernels;
        let egl = self.enhn_gain_limit;
        let mut out = [VifSums::default(); 4];
        let start = if self.skip_scale0 { 1 } else { 0 };
        let (mut sw, mut sh) = (w, h);
        for scale in 0..4 {
            if scale > 0 {
                let sub = SubsampleParams::new(scale - 1, bpc);
                let (nw, nh) = (sw / 2, sh / 2);
                let (done, rest) = self.scales.split_at_mut(scale - 1);
                let (out_r, out_d) = &mut rest[0];
                out_r.resize(nw * nh, 0);
                out_d.resize(nw * nh, 0);
                if scale == 1 {
                    if bpc == 8 {
                        let (r, d) = (plane_u8(reference)?, plane_u8(distorted)?);
                        (k.subsample_u8)(&r, &d, &sub, &mut self.scratch, out_r, out_d);
                    } else {
                        let (r, d) = (plane_u16(reference)?, plane_u16(distorted)?);
                        (k.subsample_u16)(&r, &d, &sub, &mut self.scratch, out_r, out_d);
                    }
                } else {
                    let (in_r, in_d) = &done[scale - 2];
                    let r = Plane::new(in_r, sw, sw, sh)?;
                    let d = Plane::new(in_d, sw, sw, sh)?;
                    (k.subsample_u16)(&r, &d, &sub, &mut self.scratch, out_r, out_d);
                }
                sw = nw;
                sh = nh;
            }
            if scale < start {
                continue;
            }
            let p = StatParams::new(scale, bpc, egl);
            let sums = if scale == 0 {
                if bpc == 8 {
                    (k.stat_u8)(&plane_u8(reference)?, &plane_u8(distorted)?, &p, &mut self.scratch)
                } else {
                    (k.stat_u16)(&plane_u16(reference)?, &plane_u16(distorted)?, &p, &mut self.scratch)
                }
            } else {
                let (in_r, in_d) = &self.scales[scale - 1];
                let r = Plane::new(in_r, sw, sw, sh)?;
                let d = Plane::new(in_d, sw, sw, sh)?;
                (k.stat_u16)(&r, &d, &p, &mut self.scratch)
            };
            out[scale] = sums;
        }
        Ok(out)
    }
}

/// [`VifComputer::sums`] with the scalar kernels: the CPU reference the
/// device kernels are compared with.
pub fn sums_scalar(
    reference: &PlaneView,
    distorted: &PlaneView,
    bpc: u32,
    enhn_gain_limit: f64,
    skip_scale0: bool,
) -> Result<[VifSums; 4]> {
    VifComputer::new(scalar::KERNELS, enhn_gain_limit, skip_scale0).sums(reference, distorted, bpc)
}

/// Refuses luma below [`MIN_SIZE`] (see there).
pub(crate) fn check_size(w: usize, h: usize) -> Result<()> {
    if w < MIN_SIZE || h < MIN_SIZE {
        return Err(Error::NotSupported(format!(
            "vif on {w}x{h} luma: below {MIN_SIZE}x{MIN_SIZE}, libvmaf's result depends on stale buffer contents"
        )));
    }
    Ok(())
}

fn plane_u8<'a>(v: &PlaneView<'a>) -> Result<Plane<'a, u8>> {
    if v.bytes_per_sample() != 1 {
        return Err(Error::Internal("vif: 8-bit plane expected".into()));
    }
    let len = (v.height() - 1) * v.stride() + v.width();
    Plane::new(&v.data()[..len], v.stride(), v.width(), v.height())
}

fn plane_u16<'a>(v: &PlaneView<'a>) -> Result<Plane<'a, u16>> {
    if v.bytes_per_sample() != 2 {
        return Err(Error::Internal("vif: 16-bit plane expected".into()));
    }
    let bytes = v.data();
    let len = (v.height() - 1) * (v.stride() / 2) + v.width();
    if bytes.as_ptr() as usize % 2 != 0 || v.stride() % 2 != 0 || bytes.len() < 2 * len {
        return Err(Error::Internal("vif: 16-bit plane not aligned".into()));
    }
    // SAFETY: the pointer is 2-byte aligned and `bytes` holds at least
    // 2 * len bytes (checked above); u16 has no invalid bit patterns.
    let data = unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const u16, len) };
    Plane::new(data, v.stride() / 2, v.width(), v.height())
}

struct Vif {
    computer: VifComputer,
    debug: bool,
    skip_scale0: bool,
    bits: u32,
    scale_names: [String; 4],
    debug_names: Option<DebugNames>,
}

struct DebugNames {
    vif: String,
    num: String,
    den: String,
    num_scale: [String; 4],
    den_scale: [String; 4],
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o: &FeatureOptions = &cfg.options;
    let name = |f: &str| DESCRIPTOR.feature_name(f, o);
    let debug = o.get_bool(&OPTIONS, "debug");
    let skip_scale0 = o.get_bool(&OPTIONS, "vif_skip_scale0");
    let egl = o.get_double(&OPTIONS, "vif_enhn_gain_limit");
    check_size(cfg.width, cfg.height)?;
    Ok(Box::new(Vif {
        computer: VifComputer::new(kernels(cfg.cpu), egl, skip_scale0),
        debug,
        skip_scale0,
        bits: cfg.format.bits as u32,
        scale_names: SCALE_SCORE.map(name),
        debug_names: debug.then(|| DebugNames {
            vif: name(DEBUG_VIF),
            num: name(DEBUG_NUM),
            den: name(DEBUG_DEN),
            num_scale: DEBUG_NUM_SCALE.map(name),
            den_scale: DEBUG_DEN_SCALE.map(name),
        }),
    }))
}

impl Extractor for Vif {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let s = self.computer.compute(&frame.reference.luma(), &frame.distorted.luma(), self.bits)?;
        self.write(&s, out)
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
        check_size(r.width, r.height)?;
        let egl = self.computer.enhn_gain_limit();
        let sums = gpu::sums_dev(lane, r, d, self.bits, egl, self.skip_scale0)?;
        let s = self.computer.score(&sums);
        self.write(&s, out)
    }
}

impl Vif {
    /// libvmaf's write_scores (and the debug values), shared by the CPU and
    /// device paths.
    fn write(&self, s: &VifScore, out: &mut FrameScores) -> Result<()> {
        // write_scores: float num / float den, widened.
        let ratio = |i: usize| (s.num[i] / s.den[i]) as f64;
        out.push(&self.scale_names[0], if self.skip_scale0 { 0.0 } else { ratio(0) });
        for i in 1..4 {
            out.push(&self.scale_names[i], ratio(i));
        }
        if !self.debug {
            return Ok(());
        }
        let n = self.debug_names.as_ref().expect("debug names exist when debug is set");
        let first = if self.skip_scale0 { 1 } else { 0 };
        let mut score_num = s.num[first] as f64;
        let mut score_den = s.den[first] as f64;
        for i in first + 1..4 {
            score_num += s.num[i] as f64;
            score_den += s.den[i] as f64;
        }
        let score = if score_den == 0.0 { 1.0 } else { score_num / score_den };
        out.push(&n.vif, score);
        out.push(&n.num, score_num);
        out.push(&n.den, score_den);
        if self.skip_scale0 {
            out.push(&n.num_scale[0], 0.0);
            out.push(&n.den_scale[0], -1.0);
        } else {
            out.push(&n.num_scale[0], s.num[0] as f64);
            out.push(&n.den_scale[0], s.den[0] as f64);
        }
        for i in 1..4 {
            out.push(&n.num_scale[i], s.num[i] as f64);
            out.push(&n.den_scale[i], s.den[i] as f64);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_matches_iterated_mirror() {
        // Emulate pad_top_and_bottom on an index line and compare.
        for n in 2..12usize {
            for pad in 1..=8usize {
                let mut line: Vec<isize> = vec![-999; n + 2 * pad];
                for i in 0..n {
                    line[pad + i] = i as isize;
                }
                for i in 1..=pad {
                    line[pad - i] = line[pad + i];
                    line[pad + n - 1 + i] = line[pad + n - 1 - i];
                }
                for (k, v) in line.iter().enumerate() {
                    let i = k as isize - pad as isize;
                    assert_eq!(reflect(i, n) as isize, *v, "n={n} pad={pad} i={i}");
                }
            }
        }
    }

    #[test]
    fn filters_sum_to_one() {
        for f in FILTERS {
            assert_eq!(f.iter().map(|&c| c as u32).sum::<u32>(), 65536);
        }
    }
}
