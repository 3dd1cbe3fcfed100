//! checkasm for CAMBI's c-value pass: every SIMD level's pass (its
//! histogram updates and its row kernel) against the scalar one, as bits,
//! on random and edge pictures and masks: every contrast step count the
//! options allow (max_log_contrast 0..=5), both EOTFs, thresholds that
//! make the band wide, narrow or cut at code 0, windows from 1 to the
//! largest libvmaf's table takes (65), odd widths and heights down to the
//! window's half, strides wider than the picture; and the integer picture
//! passes before it (anti-dithering, spatial mask, decimation, mode
//! filter) at every level. The seed is printed on failure.

use crate::support::synth::Rng;
use vmafx::internals::feature::cambi::luminance::{self, Eotf, LumaRange};
use vmafx::internals::feature::cambi::scalar::{self, CValueScratch, ContrastTables, Plane16, HISTOGRAM_PAD};
use crate::support;
use vmafx::CpuLevel;
use vmafx::internals::feature::cambi::{c_value_row_fn, c_values_fn, picture_passes, PicturePasses, CONTRAST_WEIGHTS};

/// The tables `cambi::create` makes, owned; `None` where it refuses the
/// options (an inverted band) or the band is empty (no c-value at all).
struct Tables {
    num_diffs: usize,
    tvi_for_diff: Vec<u16>,
    vlt_luma: u16,
    diff_weights: Vec<i32>,
    band_base: u16,
    band_size: u16,
}

impl Tables {
    fn new(max_log_contrast: u32, eotf: Eotf, tvi_threshold: f64, vis_lum: f64) -> Option<Tables> {
        let num_diffs = 1usize << max_log_contrast;
        let range = LumaRange::LIMITED_10BIT;
        let tvi_for_diff: Vec<u16> = (0..num_diffs)
            .map(|d| (luminance::tvi_for_diff(d as i32 + 1, tvi_threshold, range, eotf) + num_diffs as i32) as u16)
            .collect();
        let vlt_luma = luminance::vlt_luma(vis_lum, range, eotf).ok()?;
        let band_base = (vlt_luma as i32 - 3 * num_diffs as i32 + 1).max(0) as u16;
        let band_size = tvi_for_diff[num_diffs - 1] as i32 + 1 - band_base as i32;
        if band_size <= 0 || tvi_for_diff.windows(2).any(|p| p[1] < p[0]) {
            return None;
        }
        Some(Tables {
            num_diffs,
            tvi_for_diff,
            vlt_luma,
            diff_weights: CONTRAST_WEIGHTS[..num_diffs].to_vec(),
            band_base,
            band_size: band_size as u16,
        })
    }

    fn view(&self) -> ContrastTables<'_> {
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

/// Every table the options can make that is worth a distinct test.
fn all_tables() -> Vec<(String, Tables)> {
    let mut out = Vec::new();
    for mlc in 0..=5u32 {
        for (eotf_name, eotf) in [("bt1886", Eotf::from_name("bt1886").unwrap()), ("pq", Eotf::from_name("pq").unwrap())] {
            for tvi in [0.019, 0.0001, 0.3, 1.0] {
                for vis in [0.0, 2.0, 300.0] {
                    if let Some(t) = Tables::new(mlc, eotf, tvi, vis) {
                        out.push((format!("mlc={mlc} eotf={eotf_name} tvi={tvi} vis={vis}"), t));
                    }
                }
            }
        }
    }
    assert!(out.len() > 40, "most option sets make a band: {}", out.len());
    out
}

#[derive(Clone, Copy, Debug)]
enum Content {
    /// Codes around the band, a few steps apart: many non-zero c-values.
    Band,
    /// Any 10-bit code.
    Noise,
    /// Smooth ramp with steps (banding-like).
    Ramp,
    /// One code everywhere.
    Flat,
    /// Codes 0 and the largest 10-bit one, and the 16-bit extremes.
    Extremes,
}

const CONTENTS: [Content; 5] = [Content::Band, Content::Noise, Content::Ramp, Content::Flat, Content::Extremes];

#[derive(Clone, Copy, Debug)]
enum MaskKind {
    Random,
    All,
    None,
    /// Non-zero values other than 1 (the kernels test != 0).
    Wide,
}

const MASKS: [MaskKind; 4] = [MaskKind::Random, MaskKind::All, MaskKind::None, MaskKind::Wide];

fn picture(content: Content, t: &Tables, w: usize, h: usize, stride: usize, rng: &mut Rng) -> Plane16 {
    let mut p = Plane16 { data: vec![0; stride * h], stride };
    let lo = t.band_base as i64 - 2 * t.num_diffs as i64;
    let span = t.band_size as i64 + 4 * t.num_diffs as i64;
    let flat = rng.below(1024) as u16;
    for y in 0..h {
        for x in 0..stride {
            p.data[y * stride + x] = if x >= w {
                // Past the width: garbage a kernel must not read.
                rng.below(65536) as u16
            } else {
                match content {
                    Content::Band => {
                        let base = lo + (rng.below(8) as i64) * (span / 8).max(1);
                        (base + rng.below(3 * t.num_diffs as u64 + 1) as i64).clamp(0, 1023) as u16
                    }
                    Content::Noise => rng.below(1024) as u16,
                    Content::Ramp => ((lo + ((x + 3 * y) as i64 * span / (w + 3 * h) as i64)).clamp(0, 1023)) as u16,
                    Content::Flat => flat,
                    Content::Extremes => [0u16, 1023, 1024, 65535][rng.below(4) as usize],
                }
            };
        }
    }
    p
}

fn mask(kind: MaskKind, w: usize, h: usize, stride: usize, rng: &mut Rng) -> Plane16 {
    let mut m = Plane16 { data: vec![0; stride * h], stride };
    for (i, v) in m.data.iter_mut().enumerate() {
        *v = if i % stride >= w {
            rng.below(65536) as u16
        } else {
            match kind {
                MaskKind::Random => (rng.below(5) != 0) as u16,
                MaskKind::All => 1,
                MaskKind::None => 0,
                MaskKind::Wide => [0u16, 1, 2, 0x8000, 0xffff][rng.below(5) as usize],
            }
        };
    }
    m
}

/// The levels above scalar this CPU runs (capped by VMAFX_CPU_LEVEL).
fn simd_levels() -> Vec<CpuLevel> {
    support::cpu::simd_levels("cambi")
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// One case at every level: the pass's c-values must equal the scalar
/// pass's as bits. Returns how many c-values are not 0.
#[allow(clippy::too_many_arguments)]
fn check(name: &str, t: &Tables, content: Content, kind: MaskKind, w: usize, h: usize, window: usize, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let stride = w + rng.below(20) as usize;
    let image = picture(content, t, w, h, stride, &mut rng);
    let msk = mask(kind, w, h, stride, &mut rng);
    let tables = t.view();
    let mut want = vec![0.0f32; w * h];
    scalar::c_values(&image, &msk, &mut want, &mut CValueScratch::default(), window, &tables, w, h);
    for level in simd_levels() {
        // Garbage in the output buffer: the pass must overwrite all of it.
        let mut got = vec![f32::from_bits(0x7fc0_0001); w * h];
        c_values_fn(level)(&image, &msk, &mut got, &mut CValueScratch::default(), window, &tables, w, h);
        if bits(&got) != bits(&want) {
            let i = (0..w * h).find(|&i| got[i].to_bits() != want[i].to_bits()).unwrap();
            panic!(
                "cambi c_values {} ({name}, {content:?}, mask {kind:?}, {w}x{h} stride {stride}, window {window}, \
                 seed {seed}): pixel ({}, {}) {} != scalar {}",
                level.name(),
                i % w,
                i / w,
                got[i],
                want[i]
            );
        }
    }
    want.iter().filter(|v| **v != 0.0).count()
}

#[test]
fn c_values_every_table_content_and_mask() {
    let tables = all_tables();
    let mut seed = 0x00ca_3b10u64;
    let (mut nonzero, mut cases) = (0, 0);
    for (name, t) in &tables {
        for content in CONTENTS {
            for kind in MASKS {
                seed += 1;
                let mut rng = Rng::new(seed);
                let window = [1, 3, 9, 17][rng.below(4) as usize];
                let w = window / 2 + 1 + rng.below(45) as usize;
                let h = window / 2 + rng.below(12) as usize + 1;
                cases += 1;
                nonzero += (check(name, t, content, kind, w, h, window, seed) > 0) as usize;
            }
        }
    }
    // The cases must exercise the kernels: a quarter of them are unmasked
    // or flat and give none; most others give some c-value.
    assert!(nonzero * 4 > cases, "only {nonzero} of {cases} cases have a non-zero c-value");
}

#[test]
fn c_values_every_window_and_odd_sizes() {
    let tables = all_tables();
    let mut seed = 0x0077_1d00u64;
    // Windows the extractor makes (odd) and even ones (pad = window / 2),
    // up to 65, the largest whose square fits libvmaf's table.
    for window in (1..=65).step_by(4).chain([2, 64, 65]) {
        let pad = window / 2;
        for (w, h) in [(pad.max(1), pad.max(1)), (pad + 1, pad + 2), (2 * pad + 17, pad + 3), (2 * pad + 33, 2 * pad + 1)] {
            seed += 1;
            let mut rng = Rng::new(seed);
            let (name, t) = &tables[rng.below(tables.len() as u64) as usize];
            let content = CONTENTS[rng.below(CONTENTS.len() as u64) as usize];
            check(name, t, content, MaskKind::Random, w, h, window, seed);
        }
    }
    // Widths across the vector lengths (8 and 16) and their tails.
    for w in (1..=70).chain([127, 128, 129, 250]) {
        seed += 1;
        let (name, t) = &tables[seed as usize % tables.len()];
        check(name, t, Content::Band, MaskKind::Random, w, 9, 5, seed);
    }
}

/// The row kernels alone on histograms the pass never builds (counts up
/// to a window's worth in every row): same bits as the scalar row, and
/// masked pixels keep what the output held.
#[test]
fn c_value_row_random_histograms() {
    let tables = all_tables();
    let mut seed = 0x00bb_0001u64;
    for (name, t) in &tables {
        for w in [1usize, 7, 8, 9, 15, 16, 17, 33, 100] {
            seed += 1;
            let mut rng = Rng::new(seed);
            // Counts of one window (of at most 65x65 pixels) split over codes.
            let total = 1 + rng.below(65 * 65 / 4) as u16;
            let hist: Vec<u16> =
                (0..w * t.band_size as usize + HISTOGRAM_PAD).map(|_| rng.below(total as u64 + 1) as u16).collect();
            let stride = w + 3;
            let image = picture(Content::Band, t, w, 1, stride, &mut rng);
            let msk = mask(MaskKind::Random, w, 1, stride, &mut rng);
            let before: Vec<f32> = (0..w).map(|i| i as f32 + 0.5).collect();
            let tables = t.view();
            let mut want = before.clone();
            scalar::c_value_row(&hist, &image.data[..w], &msk.data[..w], &mut want, &tables, w);
            for level in simd_levels() {
                let mut got = before.clone();
                c_value_row_fn(level)(&hist, &image.data[..w], &msk.data[..w], &mut got, &tables, w);
                assert_eq!(bits(&got), bits(&want), "cambi c_value_row {} ({name}, width {w}, seed {seed})", level.name());
            }
        }
    }
}

/// A picture of codes from a small alphabet (long flat runs, as CAMBI's
/// pictures have) or any 10-bit code, garbage past the width.
fn coded_picture(w: usize, h: usize, stride: usize, alphabet: u64, rng: &mut Rng) -> Plane16 {
    let mut p = Plane16 { data: vec![0; stride * h], stride };
    let mut run = 0u16;
    for (i, v) in p.data.iter_mut().enumerate() {
        if rng.below(4) == 0 {
            run = rng.below(alphabet) as u16;
        }
        *v = if i % stride >= w { rng.below(65536) as u16 } else { run };
    }
    p
}

/// The integer picture passes at every level against the scalar ones, as
/// samples, on the whole buffer (what lies past the width must stay).
#[test]
fn picture_passes_every_level() {
    let levels = simd_levels();
    let scalar_passes = PicturePasses::SCALAR;
    let mut seed = 0x00d1_7e00u64;
    for (w, h) in (1..=70).map(|w| (w, 1 + w % 13)).chain([(129, 33), (250, 7), (1920 / 4, 1080 / 4)]) {
        for alphabet in [2u64, 5, 1024] {
            seed += 1;
            let mut rng = Rng::new(seed);
            let stride = 2 * w + rng.below(9) as usize;
            // Twice the size, for the decimation (it reads rows 2i, columns 2j).
            let image = coded_picture(w, 2 * h, stride, alphabet, &mut rng);
            for level in &levels {
                let passes = picture_passes(*level);
                let what = format!("{} {w}x{h} alphabet {alphabet} seed {seed}", level.name());

                let (mut want, mut got) = (image.data.clone(), image.data.clone());
                let mut a = Plane16 { data: std::mem::take(&mut want), stride };
                let mut b = Plane16 { data: std::mem::take(&mut got), stride };
                (scalar_passes.anti_dither)(&mut a, w, h);
                (passes.anti_dither)(&mut b, w, h);
                assert!(a.data == b.data, "cambi anti_dither {what}");

                let mut ma = Plane16 { data: image.data.clone(), stride };
                let mut mb = Plane16 { data: image.data.clone(), stride };
                (scalar_passes.spatial_mask)(&image, &mut ma, w, h, &mut Default::default());
                (passes.spatial_mask)(&image, &mut mb, w, h, &mut Default::default());
                assert!(ma.data == mb.data, "cambi spatial_mask {what}");

                let mut da = Plane16 { data: image.data.clone(), stride };
                let mut db = Plane16 { data: image.data.clone(), stride };
                (scalar_passes.decimate)(&mut da, w, h);
                (passes.decimate)(&mut db, w, h);
                assert!(da.data == db.data, "cambi decimate {what}");

                let mut fa = Plane16 { data: image.data.clone(), stride };
                let mut fb = Plane16 { data: image.data.clone(), stride };
                (scalar_passes.filter_mode)(&mut fa, w, 2 * h, &mut Vec::new());
                (passes.filter_mode)(&mut fb, w, 2 * h, &mut Vec::new());
                assert!(fa.data == fb.data, "cambi filter_mode {what}");
            }
        }
    }
}
