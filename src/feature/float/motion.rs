//! `float_motion` (libvmaf `feature/float_motion.c`, `motion.c`,
//! `common/convolution.c`): the mean absolute difference between the
//! blurred luma of consecutive reference frames, in float.
//!
//! libvmaf keeps the last three blurred frames and writes frame i-1's
//! `motion2` (the smaller of its two neighbours' differences) when frame i
//! arrives. vmafx computes each frame's difference with the previous frame
//! in `extract` (a pure function of the pair, so frames run on several
//! workers) and writes `motion2`/`motion3` in `settle` once the next
//! frame's difference is in; the values are libvmaf's:
//! - frame 0: motion2 0, motion3 the blended motion of frame 1 (0 alone);
//! - frame i inside: motion2 = min(d(i), d(i+1)) weighted and clipped;
//! - the last frame: its own d, weighted and clipped;
//!
//! with `debug` (on by default here) `VMAF_feature_motion_score` = d(i).

use super::{c_min, check_bits, FloatPlane};
use crate::feature::options::{OptionKind, OptionSpec};
use crate::feature::speed::filter::{Resize, ScaleMethod};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores};
use crate::picture::{Chroma, Picture};
use crate::score::collector::PRIVATE_PREFIX;
use crate::score::FeatureCollector;
use crate::{Error, Result};

const MOTION: &str = "VMAF_feature_motion_score";
const MOTION2: &str = "VMAF_feature_motion2_score";
const MOTION3: &str = "VMAF_feature_motion3_score";

/// libvmaf's `VIF_BILINEAR_MAX_WIDTH` (motion_add_scale1 scales bilinearly).
const BILINEAR_MAX_WIDTH: usize = 7680;

const fn param(name: &'static str, alias: &'static str, help: &'static str, kind: OptionKind) -> OptionSpec {
    OptionSpec { name, alias: Some(alias), help, kind, feature_param: true }
}

static OPTIONS: [OptionSpec; 9] = [
    // Unlike the integer extractors', float_motion's debug is on by default.
    OptionSpec {
        name: "debug",
        alias: None,
        help: "debug mode: enable additional output",
        kind: OptionKind::Bool { default: true },
        feature_param: false,
    },
    param("motion_force_zero", "force_0", "forcing motion score to zero", OptionKind::Bool { default: false }),
    param(
        "motion_fps_weight",
        "mfw",
        "fps-aware multiplicative weight/correction",
        OptionKind::Double { default: 1.0, min: 0.0, max: 5.0 },
    ),
    param(
        "motion_blend_factor",
        "mbf",
        "blend motion score given an offset",
        OptionKind::Double { default: 1.0, min: 0.0, max: 1.0 },
    ),
    param(
        "motion_blend_offset",
        "mbo",
        "blend motion score starting from this offset",
        OptionKind::Double { default: 40.0, min: 0.0, max: 1000.0 },
    ),
    param("motion_add_scale1", "mdc", "add motion score from scale1", OptionKind::Bool { default: false }),
    param("motion_filter_size", "mfs", "filtering size", OptionKind::Int { default: 5, min: 0, max: 9 }),
    param("motion_add_uv", "mau", "include U and V terms", OptionKind::Bool { default: false }),
    param(
        "motion_max_val",
        "mmxv",
        "maximum value allowed; larger values will be clipped to this value",
        OptionKind::Double { default: 10000.0, min: 0.0, max: 10000.0 },
    ),
];

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_motion",
    provided_features: &[MOTION, MOTION2, MOTION3],
    options: &OPTIONS,
    needs_prev_reference: true,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: true,
    reads_chroma: true,
    create,
};

/// libvmaf's `FILTER_5_s`, `FILTER_3_s` and `FILTER_5_NO_OP_s`: double
/// literals stored as floats.
fn taps(filter_size: i32) -> Vec<f32> {
    let t: &[f64] = match filter_size {
        1 => &[0.0, 0.0, 1.0, 0.0, 0.0],
        3 => &[0.166378498, 0.667243004, 0.166378498],
        _ => &[0.054488685, 0.244201342, 0.402619947, 0.244201342, 0.054488685],
    };
    t.iter().map(|&v| v as f32).collect()
}

/// One plane's size as libvmaf holds it (chroma rounded down).
#[derive(Clone, Copy, Debug)]
struct PlaneSize {
    w: usize,
    h: usize,
}

struct FloatMotion {
    bits: u32,
    force_zero: bool,
    debug: bool,
    add_scale1: bool,
    fps_weight: f64,
    blend_factor: f64,
    blend_offset: f64,
    max_val: f64,
    taps: Vec<f32>,
    planes: Vec<PlaneSize>,
    names: [String; 3],
    /// Frame i's raw difference with frame i-1, for `settle`.
    diff_name: String,
    settled: u32,
    // Scratch.
    copy: FloatPlane,
    tmp: FloatPlane,
    blurred: [FloatPlane; 2],
    scaled: [FloatPlane; 2],
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_motion", bits)?;
    let o: &FeatureOptions = &cfg.options;
    let add_uv = o.get_bool(&OPTIONS, "motion_add_uv");
    let add_scale1 = o.get_bool(&OPTIONS, "motion_add_scale1");
    let (w, h) = (cfg.width, cfg.height);
    if add_scale1 && (w as f64 * 0.5 + 0.5) as i32 as usize > BILINEAR_MAX_WIDTH {
        return Err(Error::NotSupported(format!(
            "float_motion: motion_add_scale1 on a {w}-wide picture (libvmaf's bilinear limit is \
             {BILINEAR_MAX_WIDTH} after halving)"
        )));
    }
    let mut planes = vec![PlaneSize { w, h }];
    if add_uv {
        if cfg.format.chroma == Chroma::Yuv400 {
            return Err(Error::NotSupported("float_motion: motion_add_uv on 4:0:0 (no chroma; libvmaf refuses it)".into()));
        }
        let (sx, sy) = cfg.format.chroma.shift();
        planes.extend([PlaneSize { w: w >> sx, h: h >> sy }; 2]);
        // libvmaf halves each chroma plane for scale 1 reading it at a
        // stride made from the chroma width, while its buffer has luma's
        // (both padded to 8 floats): where they differ it reads rows
        // shifted into padding it never wrote, and the value depends on
        // stale memory.
        let padded = |n: usize| n.div_ceil(8) * 8;
        if add_scale1 && padded(w >> sx) != padded(w) {
            return Err(Error::NotSupported(format!(
                "float_motion: motion_add_uv with motion_add_scale1 on {} chroma {} wide under a                  {w}-wide luma (libvmaf reads the chroma at the wrong stride, into memory it never                  wrote; 4:4:4 works)",
                cfg.format.chroma.name(),
                w >> sx
            )));
        }
    }
    let filter_size = o.get_int(&OPTIONS, "motion_filter_size");
    let taps = taps(filter_size);
    // The mirror reaches `half` samples in: libvmaf reads outside the plane
    // below half + 1 on a side.
    let half = taps.len() / 2;
    for (i, p) in planes.iter().enumerate() {
        if p.w <= half || p.h <= half {
            return Err(Error::NotSupported(format!(
                "float_motion on a {w}x{h} picture: plane {i} is {}x{}, under the {}x{} its {}-tap \
                 blur mirrors into (libvmaf reads outside the plane)",
                p.w,
                p.h,
                half + 1,
                half + 1,
                taps.len()
            )));
        }
    }
    let name = |f: &str| DESCRIPTOR.feature_name(f, o);
    let names = [name(MOTION), name(MOTION2), name(MOTION3)];
    let diff_name = format!("{PRIVATE_PREFIX}float_motion_diff:{}", names[1]);
    let plane = || FloatPlane::new(w, h);
    Ok(Box::new(FloatMotion {
        bits,
        force_zero: o.get_bool(&OPTIONS, "motion_force_zero"),
        debug: o.get_bool(&OPTIONS, "debug"),
        add_scale1,
        fps_weight: o.get_double(&OPTIONS, "motion_fps_weight"),
        blend_factor: o.get_double(&OPTIONS, "motion_blend_factor"),
        blend_offset: o.get_double(&OPTIONS, "motion_blend_offset"),
        max_val: o.get_double(&OPTIONS, "motion_max_val"),
        taps,
        planes,
        names,
        diff_name,
        settled: 0,
        copy: plane(),
        tmp: plane(),
        blurred: [plane(), plane()],
        scaled: [FloatPlane::default(), FloatPlane::default()],
    }))
}

/// libvmaf's edge mirror in `convolution_edge_s`: -1 reads 1, n reads n-2.
#[inline]
fn mirror(i: isize, n: isize) -> usize {
    (if i < 0 {
        -i
    } else if i >= n {
        n - (i - n + 2)
    } else {
        i
    }) as usize
}

/// libvmaf's `convolution_f32_c_s` (its C path): vertical into `tmp`, then
/// horizontal into `dst`, each tap's product summed in float in tap order.
/// The edge samples go through the mirror; inside, the same sums.
pub(crate) fn blur(taps: &[f32], src: &FloatPlane, tmp: &mut FloatPlane, dst: &mut FloatPlane) {
    let (w, h) = (src.width, src.height);
    let r = (taps.len() / 2) as isize;
    for i in 0..h {
        for j in 0..w {
            let mut accum = 0.0f32;
            for (k, &t) in taps.iter().enumerate() {
                accum += t * src.at(j, mirror(i as isize - r + k as isize, h as isize));
            }
            tmp.data[i * w + j] = accum;
        }
    }
    for i in 0..h {
        let row = tmp.row(i);
        for j in 0..w {
            let mut accum = 0.0f32;
            for (k, &t) in taps.iter().enumerate() {
                accum += t * row[mirror(j as isize - r + k as isize, w as isize)];
            }
            dst.data[i * w + j] = accum;
        }
    }
}

/// The sum of |a - b| over a plane: each row in float (the difference's
/// `fabs` in double, rounded back), then the rows; over the pixel count
/// as a float.
fn mean_abs_diff(a: &FloatPlane, b: &FloatPlane) -> f32 {
    let mut accum = 0.0f32;
    for y in 0..a.height {
        let mut line = 0.0f32;
        for (&x, &z) in a.row(y).iter().zip(b.row(y)) {
            line = (line as f64 + ((x - z) as f64).abs()) as f32;
        }
        accum += line;
    }
    accum / (a.width as i32).wrapping_mul(a.height as i32) as f32
}

/// libvmaf's `vmaf_image_sad_c`, `motion_add_scale1` included: the
/// pictures halved bilinearly, their difference added.
fn image_sad(a: &FloatPlane, b: &FloatPlane, add_scale1: bool, scaled: &mut [FloatPlane; 2]) -> f32 {
    let scale0 = mean_abs_diff(a, b);
    if !add_scale1 {
        return scale0;
    }
    let (w, h) = (a.width, a.height);
    let (sw, sh) = ((w as f64 * 0.5 + 0.5) as i32 as usize, (h as f64 * 0.5 + 0.5) as i32 as usize);
    let resize = Resize::new(ScaleMethod::Bilinear, w, h, sw, sh);
    for (src, dst) in [a, b].into_iter().zip(scaled.iter_mut()) {
        // The resizer works at one stride: the source's width.
        let mut out = vec![0.0f32; w * h.max(sh)];
        if (sw, sh) == (w, h) {
            out[..w * h].copy_from_slice(&src.data);
        }
        resize.run(&src.data, &mut out, w);
        *dst = FloatPlane::new(sw, sh);
        for y in 0..sh {
            dst.row_mut(y).copy_from_slice(&out[y * w..y * w + sw]);
        }
    }
    let scale1 = mean_abs_diff(&scaled[0], &scaled[1]);
    scale0 + scale1
}

fn blend(score: f64, factor: f64, offset: f64) -> f64 {
    score * factor + (1.0 - factor) * c_min(offset, score)
}

impl FloatMotion {
    /// Blurs plane `p` of `pic` (less 128) into `self.blurred[slot]`.
    fn blur_plane(&mut self, pic: &Picture<'_>, p: usize, slot: usize) {
        let PlaneSize { w, h } = self.planes[p];
        for b in [&mut self.copy, &mut self.tmp, &mut self.blurred[slot]] {
            b.width = w;
            b.height = h;
            b.data.resize(w * h, 0.0);
        }
        self.copy.copy_from(&pic.plane(p), -128, self.bits);
        blur(&self.taps, &self.copy, &mut self.tmp, &mut self.blurred[slot]);
    }

    fn weighted(&self, d: f64) -> f64 {
        c_min(d * self.fps_weight, self.max_val)
    }

    fn blended(&self, d: f64) -> f64 {
        c_min(blend(d * self.fps_weight, self.blend_factor, self.blend_offset), self.max_val)
    }
}

impl Extractor for FloatMotion {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        if self.force_zero {
            out.push(&self.names[1], 0.0);
            out.push(&self.names[2], 0.0);
            if self.debug {
                out.push(&self.names[0], 0.0);
            }
            return Ok(());
        }
        let Some(prev) = frame.prev_reference else {
            // libvmaf writes frame 0's motion2 (always 0) as it extracts
            // it, before motion: the order its logs list them in.
            out.push(&self.names[1], 0.0);
            out.push(&self.diff_name, 0.0);
            if self.debug {
                out.push(&self.names[0], 0.0);
            }
            return Ok(());
        };
        let mut d = 0.0f64;
        for p in 0..self.planes.len() {
            self.blur_plane(prev, p, 0);
            self.blur_plane(frame.reference, p, 1);
            let sad = image_sad(&self.blurred[0], &self.blurred[1], self.add_scale1, &mut self.scaled);
            // libvmaf adds the chroma planes' doubles to luma's.
            d += sad as f64;
        }
        out.push(&self.diff_name, d);
        if self.debug {
            out.push(&self.names[0], self.weighted(d));
        }
        Ok(())
    }

    fn settle(&mut self, c: &mut FeatureCollector, committed: u32, eof: bool) -> Result<u32> {
        if self.force_zero {
            return Ok(committed);
        }
        let limit = if eof { committed } else { committed.saturating_sub(1) };
        let mut rows = Vec::new();
        for i in self.settled..limit {
            let next = if i + 1 < committed { c.get(&self.diff_name, i + 1) } else { None };
            let (m2, m3) = if i == 0 {
                // motion2 of frame 0 is written by `extract`.
                (0.0, next.map_or(0.0, |d| self.blended(d)))
            } else {
                let d = c.get(&self.diff_name, i).unwrap_or(0.0);
                // libvmaf: score2 < score ? score2 : score, with score2 =
                // d(i) and score = d(i + 1).
                let m = match next {
                    Some(n) => c_min(d, n),
                    None => d,
                };
                (self.weighted(m), self.blended(m))
            };
            rows.push((i, m2, m3));
        }
        for (i, m2, m3) in rows {
            if i > 0 {
                c.append(&self.names[1], i, m2)?;
            }
            c.append(&self.names[2], i, m3)?;
            self.settled = i + 1;
        }
        Ok(self.settled)
    }
}
