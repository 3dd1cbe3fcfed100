//! Integer motion (libvmaf 3.2.0 `feature/integer_motion.c`).
//!
//! Per frame: the sum of absolute differences between the blurred previous
//! and current reference luma (one fused pass, mirrored edges), written as
//! `VMAF_integer_feature_motion_sad_score`. libvmaf derives the rest at
//! flush from the whole column; we derive each frame's as soon as the next
//! frame's SAD is in (`settle`), with the same values:
//! motion2[i] = min(sad[i], sad[i+1]) (the last frame keeps its own), and
//! motion3, the blended and clipped motion2 (optionally averaged with the
//! previous frame's).

pub(crate) mod gpu;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use super::options::{OptionKind, OptionSpec, DEBUG_OPTION};
use super::{
    DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput,
    FrameScores,
};
use crate::device::gpu::ErasedRunner;
use crate::device::DeviceKind;
use crate::score::FeatureCollector;
use crate::simd::CpuLevel;
use crate::{Error, Result};

pub use scalar::sad as sad_scalar;

const SAD: &str = "VMAF_integer_feature_motion_sad_score";
const MOTION: &str = "VMAF_integer_feature_motion_score";
const MOTION2: &str = "VMAF_integer_feature_motion2_score";
const MOTION3: &str = "VMAF_integer_feature_motion3_score";

/// The 5-tap blur, Q16.
pub(crate) const FILTER: [i32; 5] = [3571, 16004, 26386, 16004, 3571];

static OPTIONS: [OptionSpec; 8] = [
    OptionSpec {
        name: "motion_force_zero",
        alias: Some("force_0"),
        help: "forcing motion score to zero",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_blend_factor",
        alias: Some("mbf"),
        help: "blend motion score given an offset",
        kind: OptionKind::Double { default: 1.0, min: 0.0, max: 1.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_blend_offset",
        alias: Some("mbo"),
        help: "blend motion score starting from this offset",
        kind: OptionKind::Double { default: 40.0, min: 0.0, max: 1000.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_fps_weight",
        alias: Some("mfw"),
        help: "fps-aware multiplicative weight/correction",
        kind: OptionKind::Double { default: 1.0, min: 0.0, max: 5.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_max_val",
        alias: Some("mmxv"),
        help: "maximum value allowed; larger values will be clipped to this value",
        kind: OptionKind::Double { default: 10000.0, min: 0.0, max: 10000.0 },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_five_frame_window",
        alias: Some("mffw"),
        help: "use five-frame temporal window",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
    OptionSpec {
        name: "motion_moving_average",
        alias: Some("mma"),
        help: "use moving average for motion scores after first frame",
        kind: OptionKind::Bool { default: false },
        feature_param: true,
    },
    DEBUG_OPTION,
];

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "motion",
    provided_features: &[SAD, MOTION, MOTION2, MOTION3],
    options: &OPTIONS,
    needs_prev_reference: true,
    needs_prev_distorted: false,
    needs_two_back: five_frame_window,
    every_frame: true,
    reads_chroma: false,
    create,
};

/// The five-frame window compares each frame with the one two back.
fn five_frame_window(o: &FeatureOptions) -> bool {
    o.get_bool(&OPTIONS, "motion_five_frame_window")
}

/// Signature of one SAD kernel: previous and current luma, a row of
/// scratch, returns the SAD of the blurred difference.
pub(crate) type SadFn = fn(&crate::picture::PlaneView, &crate::picture::PlaneView, u32, &mut Vec<i32>) -> u64;

/// The SAD kernel for `cpu` (the best at or below it).
pub fn sad_fn(cpu: CpuLevel) -> SadFn {
    #[cfg(target_arch = "x86_64")]
    {
        if cpu >= CpuLevel::Avx512 {
            return avx512::sad;
        }
        if cpu >= CpuLevel::Avx2 {
            return avx2::sad;
        }
    }
    let _ = cpu;
    scalar::sad
}

struct Motion {
    names: Names,
    force_zero: bool,
    blend_factor: f64,
    blend_offset: f64,
    fps_weight: f64,
    max_val: f64,
    five_frame_window: bool,
    moving_average: bool,
    debug: bool,
    bits: u32,
    sad: SadFn,
    y_row: Vec<i32>,
    /// Frames whose motion2/motion3 are written.
    settled: u32,
    /// motion3's look-back: the previous frame's blended motion2.
    prev_processed: f64,
}

struct Names {
    sad: String,
    motion: String,
    motion2: String,
    motion3: String,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    // The 5-tap mirror reaches two samples in; smaller pictures would read
    // outside the plane (libvmaf does not check, and reads out of bounds).
    if cfg.width < 3 || cfg.height < 3 {
        return Err(Error::NotSupported(format!(
            "motion on a {}x{} picture (at least 3x3)",
            cfg.width, cfg.height
        )));
    }
    let o: &FeatureOptions = &cfg.options;
    let name = |f| DESCRIPTOR.feature_name(f, o);
    Ok(Box::new(Motion {
        names: Names { sad: name(SAD), motion: name(MOTION), motion2: name(MOTION2), motion3: name(MOTION3) },
        force_zero: o.get_bool(&OPTIONS, "motion_force_zero"),
        blend_factor: o.get_double(&OPTIONS, "motion_blend_factor"),
        blend_offset: o.get_double(&OPTIONS, "motion_blend_offset"),
        fps_weight: o.get_double(&OPTIONS, "motion_fps_weight"),
        max_val: o.get_double(&OPTIONS, "motion_max_val"),
        five_frame_window: o.get_bool(&OPTIONS, "motion_five_frame_window"),
        moving_average: o.get_bool(&OPTIONS, "motion_moving_average"),
        debug: o.get_bool(&OPTIONS, "debug"),
        bits: cfg.format.bits as u32,
        sad: sad_fn(cfg.cpu),
        // The device twin blurs on the device: no CPU row.
        y_row: if cfg.device == DeviceKind::Cpu { vec![0; cfg.width] } else { Vec::new() },
        settled: 0,
        prev_processed: 0.0,
    }))
}

#[inline]
fn min(a: f64, b: f64) -> f64 {
    // C's MIN macro: a < b ? a : b.
    if a < b {
        a
    } else {
        b
    }
}

fn blend(score: f64, factor: f64, offset: f64) -> f64 {
    score * factor + (1.0 - factor) * min(offset, score)
}

impl Motion {
    fn min_index(&self) -> u32 {
        if self.five_frame_window {
            2
        } else {
            1
        }
    }
}

impl Motion {
    /// Whether frame `index` gets a SAD (else its score is 0).
    fn computes_sad(&self, index: u32) -> bool {
        !self.force_zero && index >= self.min_index()
    }

    /// Writes frame values from the SAD of a `w` x `h` luma plane (`None`:
    /// not computed, score 0). Shared by the CPU and device paths.
    fn write(&self, sad: Option<u64>, w: usize, h: usize, out: &mut FrameScores) {
        let mut score = 0.0;
        if let Some(sad) = sad {
            let wh = (w as u32).wrapping_mul(h as u32);
            score = min(sad as f64 / 256.0 / wh as f64 * self.fps_weight, self.max_val);
        }
        out.push(&self.names.sad, score);
        if self.debug {
            out.push(&self.names.motion, score);
        }
    }
}

fn no_prev(index: u32) -> Error {
    Error::Internal(format!("motion: frame {index} has no previous reference (or none two back)"))
}

impl Extractor for Motion {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let cur = frame.reference.luma();
        let mut sad = None;
        if self.computes_sad(frame.index) {
            // libvmaf's prev_prev_ref with the five-frame window.
            let back = if self.five_frame_window { frame.prev_prev_reference } else { frame.prev_reference };
            let prev = back.ok_or_else(|| no_prev(frame.index))?;
            sad = Some((self.sad)(&prev.luma(), &cur, self.bits, &mut self.y_row));
        }
        self.write(sad, cur.width(), cur.height(), out);
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
        let cur = frame.reference.luma();
        let mut sad = None;
        if self.computes_sad(frame.index) {
            // libvmaf's prev_prev_ref with the five-frame window.
            let back = if self.five_frame_window { frame.prev_prev_reference } else { frame.prev_reference };
            let prev = back.ok_or_else(|| no_prev(frame.index))?;
            sad = Some(gpu::sad_dev(lane, prev.luma(), cur, self.bits)?);
        }
        self.write(sad, cur.width, cur.height, out);
        Ok(())
    }

    fn settle(&mut self, c: &mut FeatureCollector, committed: u32, eof: bool) -> Result<u32> {
        let min_idx = self.min_index();
        let stride: u32 = if self.five_frame_window { 2 } else { 1 };
        // libvmaf's flush sees n frames; frame i is final once its next
        // frame's SAD is known, or at the end of the stream.
        let limit = if eof { committed } else { committed.saturating_sub(1) };
        // Frames before min_idx take the "stamp": the blended SAD of frame
        // min_idx, or 0 if the stream never reaches it.
        if self.settled < min_idx && !eof && committed <= min_idx {
            return Ok(self.settled);
        }
        let sad = |i: u32| c.get(&self.names.sad, i);
        let mut rows = Vec::new();
        for i in self.settled..limit {
            let sad_i = sad(i).unwrap_or(0.0);
            let motion2 = if i < min_idx {
                0.0
            } else {
                let lo_idx = i as i64 - (stride as i64 - 1);
                // At the end of the stream the last frame has no successor.
                let hi = if i + 1 < committed { sad(i + 1) } else { None };
                match hi {
                    None => sad_i,
                    Some(hi) if lo_idx >= min_idx as i64 => {
                        let lo = sad(lo_idx as u32).unwrap_or(0.0);
                        if lo < hi {
                            lo
                        } else {
                            hi
                        }
                    }
                    Some(hi) => hi,
                }
            };
            let motion3 = if i < min_idx {
                let stamp = match sad(min_idx) {
                    Some(s) if committed > min_idx => {
                        min(blend(s, self.blend_factor, self.blend_offset), self.max_val)
                    }
                    _ => 0.0,
                };
                self.prev_processed = stamp;
                stamp
            } else {
                let processed = min(blend(motion2, self.blend_factor, self.blend_offset), self.max_val);
                let m3 = if self.moving_average {
                    (processed + self.prev_processed) / 2.0
                } else {
                    processed
                };
                self.prev_processed = processed;
                m3
            };
            rows.push((i, motion2, motion3));
        }
        for (i, m2, m3) in rows {
            c.append(&self.names.motion2, i, m2)?;
            c.append(&self.names.motion3, i, m3)?;
            self.settled = i + 1;
        }
        Ok(self.settled)
    }
}
