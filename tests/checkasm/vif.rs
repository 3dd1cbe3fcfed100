//! checkasm for VIF: every SIMD kernel against the scalar one, as bits, on
//! random and extreme planes (all max, all zero, alternating, noise), odd
//! widths 1..=70 and some large ones, several strides, every bit depth and
//! scale. The seed is printed on failure. `vif_timing` (ignored; run with
//! `--ignored --nocapture`) times ours and libvmaf's at 1920x1080.

use crate::support;
use crate::timing;

use crate::support::synth::Rng;
use vmafx::internals::feature::vif::{
    kernels, kernels_for, Kernels, Plane, Scratch, StatParams, SubsampleParams, VifComputer, VifSums, FILTERS,
};
use vmafx::{Chroma, CpuLevel, OwnedPicture};

#[derive(Clone, Copy, Debug)]
enum Content {
    Random,
    AllMax,
    AllZero,
    Alternating,
    /// Smooth gradient plus small noise (realistic variances).
    Smooth,
    /// Reference random, distorted all max (or zero).
    Opposite,
}

const CONTENTS: [Content; 6] = [
    Content::Random,
    Content::AllMax,
    Content::AllZero,
    Content::Alternating,
    Content::Smooth,
    Content::Opposite,
];

/// Fills `n` samples (of rows `stride` apart) with `content`; padding
/// beyond the width gets garbage so kernels that read it are caught.
fn fill(
    content: Content,
    max: u32,
    w: usize,
    h: usize,
    stride: usize,
    rng: &mut Rng,
    second: bool,
) -> Vec<u32> {
    let mut v = vec![0u32; stride * h + 64];
    for (i, s) in v.iter_mut().enumerate() {
        let (x, y) = (i % stride, i / stride);
        *s = if x >= w || y >= h {
            rng.below(max as u64 + 1) as u32
        } else {
            match content {
                Content::Random => rng.below(max as u64 + 1) as u32,
                Content::AllMax => max,
                Content::AllZero => 0,
                Content::Alternating => {
                    if (x + y + second as usize) % 2 == 0 {
                        max
                    } else {
                        0
                    }
                }
                Content::Smooth => {
                    let base = (x * 7 + y * 3) as u64 % (max as u64 + 1);
                    ((base + rng.below(5)).min(max as u64)) as u32
                }
                Content::Opposite => {
                    if second {
                        max
                    } else {
                        rng.below(max as u64 + 1) as u32
                    }
                }
            }
        };
    }
    v
}

fn bits_for(sample_bits: u32, rng: &mut Rng) -> u32 {
    if sample_bits == 8 {
        8
    } else {
        [10, 12, 16, 9, 14][rng.below(5) as usize]
    }
}

struct Case {
    seed: u64,
    content: Content,
    w: usize,
    h: usize,
    stride: usize,
    bits: u32,
}

fn cases(seed: u64, sample_bits: u32) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut widths: Vec<usize> = (1..=70).collect();
    widths.extend([127, 128, 129, 255, 333, 1000]);
    for (n, &w) in widths.iter().enumerate() {
        let content = CONTENTS[n % CONTENTS.len()];
        let h = 1 + rng.below(if w > 200 { 12 } else { 24 }) as usize;
        let stride = w + [0, 1, 7, 16, 33][rng.below(5) as usize];
        let bits = bits_for(sample_bits, &mut rng);
        out.push(Case { seed: seed.wrapping_add(n as u64), content, w, h, stride, bits });
    }
    out
}

/// One SIMD kernel table: its level, and whether its log2 lookups gather
/// or load (both are checked on every machine: which one `kernels` picks
/// depends on the CPU's gathers, `simd::fast_gathers`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Variant {
    level: CpuLevel,
    gathers: bool,
}

fn levels() -> Vec<(Variant, Kernels)> {
    // VMAFX_GATHERS=0 keeps the gather variants out here as it keeps them out
    // of the library: scripts/test sets it under qemu-user, whose AVX2
    // gathers give wrong values inside these kernels (a lone gather emulates
    // right; every native run checks the variants).
    let gathers: &[bool] = if std::env::var("VMAFX_GATHERS").as_deref() == Ok("0") {
        static SAID: std::sync::Once = std::sync::Once::new();
        // Straight to stderr, as support::cpu's line: the harness captures eprintln!.
        SAID.call_once(|| {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "checkasm vif: gather variants not run (VMAFX_GATHERS=0)");
        });
        &[false]
    } else {
        &[false, true]
    };
    support::cpu::simd_levels("vif")
        .into_iter()
        .flat_map(|level| gathers.iter().map(move |&g| (Variant { level, gathers: g }, kernels_for(level, g))))
        .collect()
}

fn check_stat<T: Copy + TryFrom<u32>>(
    stat_ref: impl Fn(&Plane<T>, &Plane<T>, &StatParams, &mut Scratch) -> VifSums,
    stat_simd: impl Fn(&Plane<T>, &Plane<T>, &StatParams, &mut Scratch) -> VifSums,
    level: Variant,
    sample_bits: u32,
    seed: u64,
) where
    <T as TryFrom<u32>>::Error: std::fmt::Debug,
{
    for c in cases(seed, sample_bits) {
        let mut rng = Rng::new(c.seed);
        let max = (1u32 << c.bits) - 1;
        let to_t = |v: Vec<u32>| v.into_iter().map(|x| T::try_from(x).unwrap()).collect::<Vec<T>>();
        let r = to_t(fill(c.content, max, c.w, c.h, c.stride, &mut rng, false));
        let d = to_t(fill(c.content, max, c.w, c.h, c.stride, &mut rng, true));
        let rp = Plane::new(&r, c.stride, c.w, c.h).unwrap();
        let dp = Plane::new(&d, c.stride, c.w, c.h).unwrap();
        let scales: &[usize] = if sample_bits == 8 { &[0] } else { &[0, 1, 2, 3] };
        for &scale in scales {
            for egl in [100.0, 1.0] {
                let p = StatParams::new(scale, c.bits, egl);
                let (mut s1, mut s2) = (Scratch::default(), Scratch::default());
                let a = stat_ref(&rp, &dp, &p, &mut s1);
                let b = stat_simd(&rp, &dp, &p, &mut s2);
                // Run twice: scratch reuse must not change anything.
                let b2 = stat_simd(&rp, &dp, &p, &mut s2);
                assert_eq!(
                    (a, a),
                    (b, b2),
                    "stat {level:?} u{sample_bits} seed {} {:?} {}x{} stride {} bits {} scale {scale} egl {egl}",
                    c.seed,
                    c.content,
                    c.w,
                    c.h,
                    c.stride,
                    c.bits
                );
            }
        }
    }
}

fn check_subsample<T: Copy + TryFrom<u32>>(
    sub_ref: impl Fn(&Plane<T>, &Plane<T>, &SubsampleParams, &mut Scratch, &mut [u16], &mut [u16]),
    sub_simd: impl Fn(&Plane<T>, &Plane<T>, &SubsampleParams, &mut Scratch, &mut [u16], &mut [u16]),
    level: Variant,
    sample_bits: u32,
    seed: u64,
) where
    <T as TryFrom<u32>>::Error: std::fmt::Debug,
{
    for c in cases(seed, sample_bits) {
        let mut rng = Rng::new(c.seed);
        let max = (1u32 << c.bits) - 1;
        let to_t = |v: Vec<u32>| v.into_iter().map(|x| T::try_from(x).unwrap()).collect::<Vec<T>>();
        let r = to_t(fill(c.content, max, c.w, c.h, c.stride, &mut rng, false));
        let d = to_t(fill(c.content, max, c.w, c.h, c.stride, &mut rng, true));
        let rp = Plane::new(&r, c.stride, c.w, c.h).unwrap();
        let dp = Plane::new(&d, c.stride, c.w, c.h).unwrap();
        let scales: &[usize] = if sample_bits == 8 { &[0] } else { &[0, 1, 2] };
        let n = (c.w / 2) * (c.h / 2);
        for &scale in scales {
            let p = SubsampleParams::new(scale, c.bits);
            let (mut s1, mut s2) = (Scratch::default(), Scratch::default());
            let (mut ar, mut ad) = (vec![0u16; n], vec![0u16; n]);
            let (mut br, mut bd) = (vec![7u16; n], vec![7u16; n]);
            sub_ref(&rp, &dp, &p, &mut s1, &mut ar, &mut ad);
            sub_simd(&rp, &dp, &p, &mut s2, &mut br, &mut bd);
            assert!(
                ar == br && ad == bd,
                "subsample {level:?} u{sample_bits} seed {} {:?} {}x{} stride {} bits {} scale {scale}",
                c.seed,
                c.content,
                c.w,
                c.h,
                c.stride,
                c.bits
            );
        }
    }
}

fn seeds() -> Vec<u64> {
    let base = std::env::var("VMAFX_CHECKASM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_0001);
    vec![base, base ^ 0xdead_beef]
}

/// Every level the CPU runs gets its own statistic kernel, so the checks
/// below compare each of them (AVX-512 too, where present) with scalar.
#[test]
fn checkasm_vif_levels_cover_host() {
    let levels = levels();
    assert_eq!(levels.last().map(|(v, _)| v.level).unwrap_or(CpuLevel::Scalar), CpuLevel::detect());
    let scalar = kernels(CpuLevel::Scalar).stat_u8 as usize;
    let mut seen = vec![scalar];
    for (variant, k) in &levels {
        let f = k.stat_u8 as usize;
        assert!(!seen.contains(&f), "{variant:?} has no stat kernel of its own");
        seen.push(f);
    }
    // `kernels` hands out one of the two tables of the host's level.
    let picked = kernels(CpuLevel::detect()).stat_u8 as usize;
    assert!(levels.iter().any(|(_, k)| k.stat_u8 as usize == picked) || levels.is_empty());
}

#[test]
fn checkasm_vif_stat_u8() {
    let s = kernels(CpuLevel::Scalar);
    for (level, k) in levels() {
        for seed in seeds() {
            check_stat::<u8>(s.stat_u8, k.stat_u8, level, 8, seed);
        }
    }
}

#[test]
fn checkasm_vif_stat_u16() {
    let s = kernels(CpuLevel::Scalar);
    for (level, k) in levels() {
        for seed in seeds() {
            check_stat::<u16>(s.stat_u16, k.stat_u16, level, 16, seed);
        }
    }
}

#[test]
fn checkasm_vif_subsample_u8() {
    let s = kernels(CpuLevel::Scalar);
    for (level, k) in levels() {
        for seed in seeds() {
            check_subsample::<u8>(s.subsample_u8, k.subsample_u8, level, 8, seed);
        }
    }
}

#[test]
fn checkasm_vif_subsample_u16() {
    let s = kernels(CpuLevel::Scalar);
    for (level, k) in levels() {
        for seed in seeds() {
            check_subsample::<u16>(s.subsample_u16, k.subsample_u16, level, 16, seed);
        }
    }
}

/// The per-pixel statistic: every table index (sigma1² sweeping 2^18
/// values), the thresholds, and random and extreme triples.
#[test]
fn checkasm_vif_statistic() {
    use vmafx::internals::feature::vif::SIGMA_NSQ;
    let s = kernels(CpuLevel::Scalar);
    // Every den index: x = sigma_nsq + sigma1² runs over [2^18, 2^19).
    let s1: Vec<i32> = (0..1 << 18).map(|i| (1 << 18) - SIGMA_NSQ + i).collect();
    let zeros = vec![0i32; s1.len()];
    type Triples = (Vec<i32>, Vec<i32>, Vec<i32>, String);
    let mut triples: Vec<Triples> = vec![(s1.clone(), zeros.clone(), zeros.clone(), "den sweep".into())];
    let mut rng = Rng::new(seeds()[0]);
    let edge = [
        i32::MIN,
        i32::MIN + 1,
        -SIGMA_NSQ,
        -1,
        0,
        1,
        2,
        SIGMA_NSQ - 1,
        SIGMA_NSQ,
        SIGMA_NSQ + 1,
        1 << 20,
        (1 << 30) + 7,
        i32::MAX - SIGMA_NSQ,
        i32::MAX - SIGMA_NSQ + 1,
        i32::MAX - 1,
        i32::MAX,
    ];
    for round in 0..4 {
        let n = 5000 + round;
        let mut a = Vec::new();
        let mut b = Vec::new();
        let mut c = Vec::new();
        for _ in 0..n {
            let pick = |rng: &mut Rng| match rng.below(4) {
                0 => edge[rng.below(edge.len() as u64) as usize],
                1 => rng.next_u64() as i32,
                2 => rng.below(1 << 24) as i32,
                _ => SIGMA_NSQ + rng.below(1 << 16) as i32 - (1 << 15),
            };
            let s1 = pick(&mut rng);
            // Physical triples: sigma12² <= sigma1² sigma2², mostly.
            let s2 = pick(&mut rng);
            let s12 = if rng.below(2) == 0 {
                let bound = ((s1.max(0) as f64) * (s2.max(0) as f64)).sqrt() as i64;
                (rng.below(bound as u64 + 1) as i64 - rng.below(2) as i64 * bound / 3) as i32
            } else {
                pick(&mut rng)
            };
            a.push(s1);
            b.push(s2);
            c.push(s12);
        }
        triples.push((a, b, c, format!("random round {round}")));
    }
    for (level, k) in levels() {
        for (a, b, c, what) in &triples {
            for egl in [100.0, 1.0, 1.5] {
                for len in [a.len(), a.len() - 3, 7, 1, 0] {
                    let (a, b, c) = (&a[..len], &b[..len], &c[..len]);
                    assert_eq!(
                        (s.statistic)(a, b, c, egl),
                        (k.statistic)(a, b, c, egl),
                        "statistic {level:?} {what} len {len} egl {egl} seed {}",
                        seeds()[0]
                    );
                }
            }
        }
    }
}

/// Large random planes, sums compared exactly: rounding boundaries that
/// hit one pixel in 65536 get hit.
#[test]
fn checkasm_vif_stat_large() {
    let s = kernels(CpuLevel::Scalar);
    let (w, h) = (517usize, 131usize);
    for (level, k) in levels() {
        for seed in seeds() {
            let mut rng = Rng::new(seed ^ 0x1a7e);
            let r8: Vec<u8> = (0..w * h).map(|_| rng.below(256) as u8).collect();
            let d8: Vec<u8> = r8.iter().map(|&x| x.wrapping_add(rng.below(9) as u8)).collect();
            let (rp, dp) = (Plane::new(&r8, w, w, h).unwrap(), Plane::new(&d8, w, w, h).unwrap());
            let p = StatParams::new(0, 8, 100.0);
            let (a, b) = (
                (s.stat_u8)(&rp, &dp, &p, &mut Scratch::default()),
                (k.stat_u8)(&rp, &dp, &p, &mut Scratch::default()),
            );
            assert_eq!(a, b, "stat_u8 large {level:?} seed {seed}");
            for bits in [10u32, 12, 16] {
                let max = (1u64 << bits) - 1;
                let r: Vec<u16> = (0..w * h).map(|_| rng.below(max + 1) as u16).collect();
                let d: Vec<u16> = r.iter().map(|&x| (x as u64 + rng.below(64)).min(max) as u16).collect();
                let (rp, dp) = (Plane::new(&r, w, w, h).unwrap(), Plane::new(&d, w, w, h).unwrap());
                for scale in 0..4 {
                    let p = StatParams::new(scale, bits, 100.0);
                    let a = (s.stat_u16)(&rp, &dp, &p, &mut Scratch::default());
                    let b = (k.stat_u16)(&rp, &dp, &p, &mut Scratch::default());
                    assert_eq!(a, b, "stat_u16 large {level:?} seed {seed} bits {bits} scale {scale}");
                }
            }
        }
    }
}

/// Whole frames through every scale, scalar against each level.
#[test]
fn checkasm_vif_frames() {
    for bits in [8u8, 10, 12, 16] {
        let frames = support::synth::clip(Chroma::Yuv420, bits, 203, 77, 3, bits as u64);
        for (r, d) in &frames {
            let (rv, dv) = (r.view(), d.view());
            let mut reference = VifComputer::new(kernels(CpuLevel::Scalar), 100.0, false);
            let a = reference.compute(&rv.luma(), &dv.luma(), bits as u32).unwrap();
            for (level, k) in levels() {
                let mut c = VifComputer::new(k, 100.0, false);
                let b = c.compute(&rv.luma(), &dv.luma(), bits as u32).unwrap();
                assert_eq!(a, b, "{level:?} {bits}-bit frame");
            }
        }
    }
    assert_eq!(FILTERS.len(), 4);
}

// ---- timing -------------------------------------------------------------

fn time_ours(k: Kernels, frame: &(OwnedPicture, OwnedPicture), bits: u8, reps: u32) -> f64 {
    let mut c = VifComputer::new(k, 100.0, false);
    let (rv, dv) = (frame.0.view(), frame.1.view());
    c.compute(&rv.luma(), &dv.luma(), bits as u32).unwrap();
    timing::median((0..reps).map(|_| time_one(&mut c, frame, bits)).collect())
}

fn time_one(c: &mut VifComputer, frame: &(OwnedPicture, OwnedPicture), bits: u8) -> f64 {
    let (rv, dv) = (frame.0.view(), frame.1.view());
    let t = timing::thread_cpu_ms();
    std::hint::black_box(c.compute(&rv.luma(), &dv.luma(), bits as u32).unwrap());
    timing::thread_cpu_ms() - t
}

/// Ours per level (loads and gathers) and libvmaf's VIF per path, per 1080p
/// frame, frames interleaved (`timing::interleaved`).
#[test]
#[ignore = "timing, not a check: cargo test --test checkasm -- --ignored --nocapture vif::"]
fn vif_timing() {
    let reps = std::env::var("VMAFX_PROFILE_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    for bits in [8u8, 10] {
        let frame = timing::hd_frame(bits);
        // Gathers only where a level has a vector path.
        let variants: Vec<timing::Variant> = CpuLevel::available()
            .flat_map(|level| {
                let gathered = (level > CpuLevel::Scalar).then_some(true);
                [Some(false), gathered].into_iter().flatten().map(move |g| (level, g))
            })
            .map(|(level, gathers)| {
                let label = format!("vmafx {}{}", level.name(), if gathers { " (gathers)" } else { "" });
                let mut c = VifComputer::new(kernels_for(level, gathers), 100.0, false);
                time_one(&mut c, &frame, bits);
                let frame = &frame;
                (label, Box::new(move || time_one(&mut c, frame, bits)) as Box<dyn FnMut() -> f64>)
            })
            .collect();
        let medians = timing::interleaved("vif", &frame, timing::Feed::SamePair, reps, variants);
        println!("1920x1080 {bits}-bit VIF, ms/frame (median thread CPU time, frames interleaved):{medians}");
    }
}

/// Our VIF alone at the host's best level, for a profiler: `VMAFX_PROFILE_BITS` (8) bits,
/// `VMAFX_PROFILE_REPS` (20) frames.
#[test]
#[ignore = "profiling loop"]
fn vif_profile() {
    let bits: u8 = std::env::var("VMAFX_PROFILE_BITS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let reps: u32 = std::env::var("VMAFX_PROFILE_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let frame = timing::hd_frame(bits);
    println!("{:.2} ms/frame", time_ours(kernels(CpuLevel::detect_host()), &frame, bits, reps));
}
