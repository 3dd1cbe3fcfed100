//! Luminance of 10-bit limited-range luma codes under the BT.1886 or PQ
//! EOTF, and the thresholds CAMBI derives from it once per extractor:
//! the visibility threshold of each contrast step (`tvi`) and the lowest
//! visible luma code (`vlt`). libvmaf 3.2.0 `feature/luminance_tools.c`
//! and the helpers at the top of `feature/cambi.c`, in their operation
//! order (every value here is a double computed with libm's `pow`).

use crate::{Error, Result};

/// BT.1886 display: gamma 2.4, white 300 cd/m², black 0.01 cd/m².
const BT1886_GAMMA: f64 = 2.4;
const BT1886_LW: f64 = 300.0;
const BT1886_LB: f64 = 0.01;

/// The EOTFs libvmaf's `eotf` / `cambi_eotf` options name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eotf {
    Bt1886,
    Pq,
}

impl Eotf {
    /// libvmaf's `vmaf_luminance_init_eotf`: exactly "bt1886" or "pq".
    pub fn from_name(name: &str) -> Result<Eotf> {
        match name {
            "bt1886" => Ok(Eotf::Bt1886),
            "pq" => Ok(Eotf::Pq),
            other => Err(Error::invalid(format!("cambi: unknown EOTF '{other}' (known: bt1886, pq)"))),
        }
    }

    /// Luminance (cd/m²) of a normalised signal `v` in [0, 1].
    pub fn apply(self, v: f64) -> f64 {
        match self {
            Eotf::Bt1886 => bt1886_eotf(v),
            Eotf::Pq => pq_eotf(v),
        }
    }
}

#[inline]
fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

pub fn bt1886_eotf(v: f64) -> f64 {
    let lw = BT1886_LW.powf(1.0 / BT1886_GAMMA);
    let lb = BT1886_LB.powf(1.0 / BT1886_GAMMA);
    let a = (lw - lb).powf(BT1886_GAMMA);
    let b = lb / (lw - lb);
    a * c_max(v + b, 0.0).powf(BT1886_GAMMA)
}

pub fn pq_eotf(v: f64) -> f64 {
    const M1: f64 = 0.1593017578125;
    const M2: f64 = 78.84375;
    const C1: f64 = 0.8359375;
    const C2: f64 = 18.8515625;
    const C3: f64 = 18.6875;
    let num = v.powf(1.0 / M2) - C1;
    let num_clipped = c_max(num, 0.0);
    let den = C2 - C3 * v.powf(1.0 / M2);
    10000.0 * (num_clipped / den).powf(1.0 / M1)
}

/// Limited ("video") range of 10-bit luma: codes 64..=940.
#[derive(Clone, Copy, Debug)]
pub struct LumaRange {
    pub foot: i32,
    pub head: i32,
}

impl LumaRange {
    pub const LIMITED_10BIT: LumaRange = LumaRange { foot: 16 << 2, head: 235 << 2 };

    /// Luminance of luma code `sample` (clipped to the range).
    pub fn luminance(self, sample: i32, eotf: Eotf) -> f64 {
        let clipped = sample.clamp(self.foot, self.head);
        let normalized = (clipped - self.foot) as f64 / (self.head - self.foot) as f64;
        eotf.apply(normalized)
    }
}

/// Whether a step of `diff` codes above `sample` is visible: its luminance
/// change exceeds `tvi_threshold` times the luminance at `sample`.
fn tvi_condition(sample: i32, diff: i32, tvi_threshold: f64, range: LumaRange, eotf: Eotf) -> bool {
    let mean_luminance = range.luminance(sample, eotf);
    let diff_luminance = range.luminance(sample + diff, eotf);
    let delta_luminance = diff_luminance - mean_luminance;
    delta_luminance > tvi_threshold * mean_luminance
}

#[derive(PartialEq)]
enum Bisect {
    TooSmall,
    Correct,
    TooBig,
}

fn tvi_hard_threshold(sample: i32, diff: i32, tvi_threshold: f64, range: LumaRange, eotf: Eotf) -> Bisect {
    if !tvi_condition(sample, diff, tvi_threshold, range, eotf) {
        return Bisect::TooBig;
    }
    if tvi_condition(sample + 1, diff, tvi_threshold, range, eotf) {
        return Bisect::TooSmall;
    }
    Bisect::Correct
}

/// The highest 10-bit code at which a step of `diff` codes is still
/// visible (0 if none is, 1023 if every one is), found by bisection as
/// libvmaf's `get_tvi_for_diff` finds it.
pub fn tvi_for_diff(diff: i32, tvi_threshold: f64, range: LumaRange, eotf: Eotf) -> i32 {
    const MAX_VAL: i32 = (1 << 10) - 1;
    let mut foot = range.foot;
    let mut head = range.head - diff - 1;
    match tvi_hard_threshold(foot, diff, tvi_threshold, range, eotf) {
        Bisect::TooBig => return 0,
        Bisect::Correct => return foot,
        Bisect::TooSmall => {}
    }
    match tvi_hard_threshold(head, diff, tvi_threshold, range, eotf) {
        Bisect::TooSmall => return MAX_VAL,
        Bisect::Correct => return head,
        Bisect::TooBig => {}
    }
    loop {
        let mid = foot + (head - foot) / 2;
        match tvi_hard_threshold(mid, diff, tvi_threshold, range, eotf) {
            Bisect::TooBig => head = mid,
            Bisect::TooSmall => foot = mid,
            Bisect::Correct => return mid,
        }
    }
}

/// The smallest code whose luminance reaches `threshold` cd/m² (0 when
/// that is the foot itself), as libvmaf's `get_vlt_luma`. libvmaf loops
/// for ever when no code reaches it; no threshold its option allows (up to
/// 300) does that with either EOTF, but we stop and say so.
pub fn vlt_luma(threshold: f64, range: LumaRange, eotf: Eotf) -> Result<u16> {
    let mut sample = range.foot;
    while range.luminance(sample, eotf) < threshold {
        if sample > range.head {
            return Err(Error::invalid(format!(
                "cambi: no luma code reaches cambi_vis_lum_threshold={threshold} cd/m²"
            )));
        }
        sample += 1;
    }
    Ok(if sample == range.foot { 0 } else { sample as u16 })
}
