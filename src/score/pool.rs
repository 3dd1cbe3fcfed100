//! Pooling per-frame scores into one number, as libvmaf 3.2.0 does it
//! (`libvmaf.c`: `vmaf_feature_score_pooled`, which `vmaf_score_pooled`
//! and the log writers call).
//!
//! libvmaf runs one loop that accumulates everything at once, in frame
//! order: `sum += s`, `i_sum += 1. / (s + 1.)`, and min/max by strict
//! comparison, seeded by the frame at `index_low`. The results are
//! mean = sum / n, harmonic mean = n / i_sum - 1.0, min, max.

use crate::{Error, Result};

/// libvmaf's `VmafPoolingMethod` (without UNKNOWN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMethod {
    Mean,
    HarmonicMean,
    Min,
    Max,
}

impl PoolMethod {
    /// In libvmaf's enum order (MIN, MAX, MEAN, HARMONIC_MEAN), the order the
    /// logs list pooled values in.
    pub const ALL: [PoolMethod; 4] =
        [PoolMethod::Min, PoolMethod::Max, PoolMethod::Mean, PoolMethod::HarmonicMean];

    /// libvmaf's name ("min", "max", "mean", "harmonic_mean").
    pub fn name(self) -> &'static str {
        match self {
            PoolMethod::Min => "min",
            PoolMethod::Max => "max",
            PoolMethod::Mean => "mean",
            PoolMethod::HarmonicMean => "harmonic_mean",
        }
    }

    /// Parses libvmaf's names (the vmaf tool's and FFmpeg's `pool` values).
    pub fn parse(s: &str) -> Option<PoolMethod> {
        PoolMethod::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// libvmaf's accumulators over the frames pooled.
#[derive(Clone, Copy, Debug)]
struct Accumulator {
    count: u32,
    sum: f64,
    inverse_sum: f64,
    min: f64,
    max: f64,
}

impl Accumulator {
    fn new() -> Self {
        Accumulator { count: 0, sum: 0.0, inverse_sum: 0.0, min: 0.0, max: 0.0 }
    }

    /// One frame; `seed` is libvmaf's `i == index_low`.
    fn add(&mut self, s: f64, seed: bool) {
        self.count += 1;
        // Operand order as gcc compiles libvmaf's `sum += s` (sum + s) and
        // `i_sum += 1. / (s + 1.)` ((1 / (s + 1)) + i_sum): it decides which
        // NaN survives when NaNs of both signs meet.
        self.sum = add_first_nan_wins(self.sum, s);
        self.inverse_sum = add_first_nan_wins(1.0 / (s + 1.0), self.inverse_sum);
        if seed || s < self.min {
            self.min = s;
        }
        if seed || s > self.max {
            self.max = s;
        }
    }

    fn result(&self, method: PoolMethod) -> f64 {
        match method {
            PoolMethod::Mean => self.sum / self.count as f64,
            PoolMethod::Min => self.min,
            PoolMethod::Max => self.max,
            PoolMethod::HarmonicMean => self.count as f64 / self.inverse_sum - 1.0,
        }
    }
}

/// `a + b` as x86's `addsd a, b` computes it: when both are NaN, the first
/// one's NaN (quieted). Written out because the compiler may commute the
/// operands of a plain `+`.
fn add_first_nan_wins(a: f64, b: f64) -> f64 {
    const QUIET: u64 = 0x0008_0000_0000_0000;
    if a.is_nan() {
        f64::from_bits(a.to_bits() | QUIET)
    } else if b.is_nan() {
        f64::from_bits(b.to_bits() | QUIET)
    } else {
        a + b
    }
}

/// Pools `values` (every frame that counts, in frame order) with `method`,
/// as libvmaf does when the first frame of the range is scored.
pub fn pool(values: &[f64], method: PoolMethod) -> Result<f64> {
    if values.is_empty() {
        return Err(Error::invalid("nothing to pool: no values"));
    }
    if values.len() > u32::MAX as usize {
        return Err(Error::invalid("too many values to pool"));
    }
    let mut acc = Accumulator::new();
    for (i, &s) in values.iter().enumerate() {
        acc.add(s, i == 0);
    }
    Ok(acc.result(method))
}

/// libvmaf's `vmaf_feature_score_pooled` over frames `first..=last`:
/// frames the subsample rate skips (`i % subsample != 0`) do not count,
/// `value_at(i)` gives frame i's value, and a scored frame without a value
/// is an error (libvmaf's -EINVAL).
///
/// Its quirks are kept: min and max are seeded only by the frame at
/// `first`, so when `first` is skipped by subsampling they start from 0;
/// a range with no scored frame gives mean and harmonic mean NaN (0/0) and
/// min and max 0.
pub fn pool_frames(
    value_at: impl Fn(u32) -> Option<f64>,
    method: PoolMethod,
    first: u32,
    last: u32,
    subsample: u32,
) -> Result<f64> {
    if first > last {
        return Err(Error::invalid(format!("pooling range {first}..={last} is empty")));
    }
    let mut acc = Accumulator::new();
    for i in first..=last {
        if subsample > 1 && i % subsample != 0 {
            continue;
        }
        let s = value_at(i).ok_or_else(|| Error::invalid(format!("no value at frame {i}")))?;
        acc.add(s, i == first);
    }
    Ok(acc.result(method))
}

/// libvmaf's pooling of every feature over frames `0..n`, kept as the
/// frames become final, so that per-frame values need not be kept: the
/// same accumulators, fed in the same frame order, as [`pool_frames`]
/// with `first = 0` (min and max seeded by frame 0).
#[derive(Clone, Debug)]
pub struct RunningPools {
    subsample: u32,
    /// Frames fed so far (libvmaf's `pic_cnt`).
    frames: u32,
    /// Whether a frame the subsample rate scores has been fed.
    scored_any: bool,
    /// By feature name, in the order first seen.
    columns: Vec<(String, RunningColumn)>,
}

#[derive(Clone, Copy, Debug)]
struct RunningColumn {
    acc: Accumulator,
    /// A scored frame had no value: libvmaf's pooling fails for it.
    missing: bool,
}

impl RunningPools {
    pub fn new(subsample: u32) -> Self {
        RunningPools { subsample: subsample.max(1), frames: 0, scored_any: false, columns: Vec::new() }
    }

    /// Frames fed so far.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// Feeds the next frame (number `self.frames()`): `names` are every
    /// feature known so far, `value_of` gives this frame's value of one.
    pub fn feed<'a>(&mut self, names: impl IntoIterator<Item = &'a str>, value_of: impl Fn(&str) -> Option<f64>) {
        let i = self.frames;
        self.frames += 1;
        if self.subsample > 1 && i % self.subsample != 0 {
            return;
        }
        for name in names {
            let value = value_of(name);
            let column = match self.columns.iter().position(|(n, _)| n == name) {
                Some(j) => &mut self.columns[j].1,
                None => {
                    // Earlier scored frames had no value of a feature
                    // first seen now.
                    let missing = self.scored_any;
                    self.columns.push((name.to_owned(), RunningColumn { acc: Accumulator::new(), missing }));
                    &mut self.columns.last_mut().expect("just pushed").1
                }
            };
            match value {
                Some(s) => column.acc.add(s, i == 0),
                None => column.missing = true,
            }
        }
        // A feature never seen at this scored frame has no value here.
        for (name, column) in &mut self.columns {
            if value_of(name).is_none() {
                column.missing = true;
            }
        }
        self.scored_any = true;
    }

    /// `name` pooled with `method` over every frame fed, as
    /// `pool_frames(.., method, 0, frames - 1, subsample)` gives it.
    pub fn pooled(&self, name: &str, method: PoolMethod) -> Result<f64> {
        if self.frames == 0 {
            return Err(Error::invalid("nothing to pool: no frames"));
        }
        let column = self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c);
        match column {
            Some(c) if !c.missing => Ok(c.acc.result(method)),
            _ => Err(Error::invalid(format!("{name}: no value at some scored frame"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods() {
        let v = [1.0, 3.0, 0.5];
        assert_eq!(pool(&v, PoolMethod::Mean).unwrap(), (1.0 + 3.0 + 0.5) / 3.0);
        assert_eq!(pool(&v, PoolMethod::Min).unwrap(), 0.5);
        assert_eq!(pool(&v, PoolMethod::Max).unwrap(), 3.0);
        let i_sum = 0.0 + 1.0 / 2.0 + 1.0 / 4.0 + 1.0 / 1.5;
        assert_eq!(pool(&v, PoolMethod::HarmonicMean).unwrap(), 3.0 / i_sum - 1.0);
        assert!(pool(&[], PoolMethod::Mean).is_err());
    }

    #[test]
    fn frames_and_subsample_quirks() {
        let col = [5.0, 7.0, 6.0, 9.0, 8.0];
        let at = |i: u32| col.get(i as usize).copied();
        assert_eq!(pool_frames(at, PoolMethod::Min, 0, 4, 2).unwrap(), 5.0);
        // first = 1 is skipped at subsample 2: min starts from 0.
        assert_eq!(pool_frames(at, PoolMethod::Min, 1, 4, 2).unwrap(), 0.0);
        assert_eq!(pool_frames(at, PoolMethod::Max, 1, 4, 2).unwrap(), 8.0);
        assert_eq!(pool_frames(at, PoolMethod::Mean, 1, 4, 2).unwrap(), (6.0 + 8.0) / 2.0);
        assert!(pool_frames(at, PoolMethod::Mean, 0, 5, 1).is_err());
        assert!(pool_frames(at, PoolMethod::Mean, 1, 1, 2).unwrap().is_nan());
        for m in PoolMethod::ALL {
            assert_eq!(PoolMethod::parse(m.name()), Some(m));
        }
    }

    /// Fed frame by frame, the running pools give `pool_frames`'s bits,
    /// NaNs of both signs, gaps and late features included.
    #[test]
    fn running_pools_equal_pool_frames() {
        let nan_neg = f64::from_bits(0xfff8_0000_0000_0001);
        let a = [3.0, 1.5, f64::NAN, 7.25, nan_neg, 0.1, 1e-300, -2.0, 9.0];
        let b = [None, Some(1.0), Some(2.0), Some(0.5), Some(0.25), Some(4.0), Some(3.0), Some(1.0), Some(2.5)];
        let c = [Some(1.0), Some(2.0), None, Some(4.0), Some(5.0), Some(6.0), Some(7.0), Some(8.0), Some(9.0)];
        for subsample in [1, 2, 3] {
            let mut pools = RunningPools::new(subsample);
            for i in 0..a.len() {
                let value_of = |n: &str| match n {
                    "a" => Some(a[i]),
                    "b" => b[i],
                    _ => c[i],
                };
                // "b" first appears at frame 1 (as a feature the collector
                // learns of late would).
                let names: &[&str] = if i == 0 { &["a", "c"] } else { &["a", "b", "c"] };
                pools.feed(names.iter().copied(), value_of);
                let last = i as u32;
                for m in PoolMethod::ALL {
                    for (name, at) in [
                        ("a", Box::new(|j: u32| Some(a[j as usize])) as Box<dyn Fn(u32) -> Option<f64>>),
                        ("b", Box::new(|j: u32| b[j as usize])),
                        ("c", Box::new(|j: u32| c[j as usize])),
                    ] {
                        let want = pool_frames(&at, m, 0, last, subsample).ok().map(f64::to_bits);
                        let got = pools.pooled(name, m).ok().map(f64::to_bits);
                        assert_eq!(got, want, "{name} {m:?} frames 0..={last} subsample {subsample}");
                    }
                }
            }
        }
    }
}
