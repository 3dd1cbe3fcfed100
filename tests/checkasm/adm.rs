//! checkasm-style test of the ADM row kernels: every SIMD kernel against
//! the scalar one on random and extreme input, odd widths and offsets (the
//! kernels take row slices, so an offset is a stride), all bit depths.
//! The seed is printed on failure; VMAFX_CHECKASM_SEED replays one.

use crate::support;
use crate::support::synth::Rng;
use vmafx::CpuLevel;
use vmafx::internals::feature::adm::cm::CmShiftsS0;
use vmafx::internals::feature::adm::{kernels, Kernels, SCALAR_KERNELS};

fn seed() -> u64 {
    std::env::var("VMAFX_CHECKASM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    })
}

/// The SIMD kernel tables this host can run, by level.
fn simd_levels() -> Vec<(CpuLevel, Kernels)> {
    support::cpu::simd_levels("adm").into_iter().map(|l| (l, kernels(l))).collect()
}

/// Widths: every small one, then some odd and even larger ones.
fn widths() -> Vec<usize> {
    let mut w: Vec<usize> = (1..=40).collect();
    w.extend([63, 64, 65, 127, 131, 255, 960, 961]);
    w
}

/// Random i16 of one of several kinds: full range, small, extremes.
fn i16s(rng: &mut Rng, n: usize, kind: u64) -> Vec<i16> {
    (0..n)
        .map(|_| match kind {
            0 => rng.next_u64() as i16,
            1 => (rng.below(2001) as i32 - 1000) as i16,
            2 => [i16::MIN, i16::MAX, 0, -1, 1][rng.below(5) as usize],
            _ => (rng.below(30001) as i32 - 15000) as i16,
        })
        .collect()
}

fn run(name: &str, f: impl Fn(&mut Rng)) {
    let s = seed();
    let mut rng = Rng::new(s);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut rng)));
    if let Err(e) = r {
        eprintln!("{name}: failed with VMAFX_CHECKASM_SEED={s}");
        std::panic::resume_unwind(e);
    }
}

#[test]
fn dwt_vertical() {
    run("dwt_vertical", |rng| {
        for (level, k) in simd_levels() {
            for w in widths() {
                for extreme in [false, true] {
                    let off = rng.below(7) as usize;
                    let rows8: Vec<Vec<u8>> = (0..4)
                        .map(|_| (0..w + off).map(|_| if extreme { [0u8, 255][rng.below(2) as usize] } else { rng.next_u64() as u8 }).collect())
                        .collect();
                    let r8 = [&rows8[0][off..], &rows8[1][off..], &rows8[2][off..], &rows8[3][off..]];
                    let (mut l0, mut h0, mut l1, mut h1) = (vec![0i16; w], vec![0i16; w], vec![0i16; w], vec![0i16; w]);
                    (SCALAR_KERNELS.dwt.vertical_u8)(r8, &mut l0, &mut h0);
                    (k.dwt.vertical_u8)(r8, &mut l1, &mut h1);
                    assert_eq!((&l0, &h0), (&l1, &h1), "{level:?} vertical_u8 w={w}");
                    for bits in 9..=16u32 {
                        let max = (1u32 << bits) - 1;
                        let rows: Vec<Vec<u16>> = (0..4)
                            .map(|_| {
                                (0..w + off)
                                    .map(|_| if extreme { [0, max][rng.below(2) as usize] as u16 } else { (rng.next_u64() as u32 & max) as u16 })
                                    .collect()
                            })
                            .collect();
                        let r = [&rows[0][off..], &rows[1][off..], &rows[2][off..], &rows[3][off..]];
                        (SCALAR_KERNELS.dwt.vertical_u16)(r, bits, &mut l0, &mut h0);
                        (k.dwt.vertical_u16)(r, bits, &mut l1, &mut h1);
                        assert_eq!((&l0, &h0), (&l1, &h1), "{level:?} vertical_u16 bits={bits} w={w}");
                    }
                }
            }
        }
    });
}

#[test]
fn dwt_horizontal() {
    run("dwt_horizontal", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..4 {
                    let lo = i16s(rng, 2 * n + 2, kind);
                    let hi = i16s(rng, 2 * n + 2, kind);
                    let mut o0: Vec<Vec<i16>> = vec![vec![0; n]; 3];
                    let mut o1 = o0.clone();
                    let (mut a0, mut a1) = (vec![0i32; n], vec![0i32; n]);
                    {
                        let [v, h, d] = &mut o0[..] else { unreachable!() };
                        (SCALAR_KERNELS.dwt.horizontal)(&lo, &hi, &mut a0, v, h, d);
                    }
                    {
                        let [v, h, d] = &mut o1[..] else { unreachable!() };
                        (k.dwt.horizontal)(&lo, &hi, &mut a1, v, h, d);
                    }
                    assert_eq!((&a0, &o0), (&a1, &o1), "{level:?} horizontal n={n} kind={kind}");
                }
            }
        }
    });
}

#[test]
fn decouple() {
    run("decouple", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..5 {
                    for egl in [1.0, 100.0, 37.0, 1.5] {
                        let o: Vec<Vec<i16>> = (0..3).map(|_| i16s(rng, n, kind.min(3))).collect();
                        // kind 4: distorted close to the reference, so the
                        // angle test and the gain limit fire.
                        let t: Vec<Vec<i16>> = if kind == 4 {
                            o.iter()
                                .map(|b| b.iter().map(|&x| (x as i32 * (80 + rng.below(60) as i32) / 100 + rng.below(5) as i32 - 2).clamp(-32768, 32767) as i16).collect())
                                .collect()
                        } else {
                            (0..3).map(|_| i16s(rng, n, kind)).collect()
                        };
                        let mut out0 = vec![vec![0i16; n]; 6];
                        let mut out1 = out0.clone();
                        for (kern, out) in [(SCALAR_KERNELS.decouple_s0, &mut out0), (k.decouple_s0, &mut out1)] {
                            let [rh, rv, rd, ah, av, ad] = &mut out[..] else { unreachable!() };
                            kern([&o[0], &o[1], &o[2]], [&t[0], &t[1], &t[2]], [rh, rv, rd], [ah, av, ad], egl);
                        }
                        assert_eq!(out0, out1, "{level:?} decouple n={n} kind={kind} egl={egl}");
                    }
                }
            }
        }
    });
}

#[test]
fn csf() {
    run("csf", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..4 {
                    let src: Vec<Vec<i16>> = (0..3).map(|_| i16s(rng, n, kind)).collect();
                    for rf in [[36453u16, 36453, 49417], [65535, 65535, 65535], [rng.next_u64() as u16, rng.next_u64() as u16, rng.next_u64() as u16]] {
                        let (mut f0, mut c0, mut f1, mut c1) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
                        (SCALAR_KERNELS.csf_s0)([&src[0], &src[1], &src[2]], rf, &mut f0, &mut c0);
                        (k.csf_s0)([&src[0], &src[1], &src[2]], rf, &mut f1, &mut c1);
                        assert_eq!((&f0, &c0), (&f1, &c1), "{level:?} csf n={n} kind={kind} rf={rf:?}");
                    }
                }
            }
        }
    });
}

#[test]
fn thresholds() {
    run("thresholds", |rng| {
        for (level, k) in simd_levels() {
            for w in widths().into_iter().filter(|&w| w >= 3) {
                for full in [false, true] {
                    let row = |rng: &mut Rng| -> Vec<i32> {
                        (0..w).map(|_| if full { rng.next_u64() as i32 } else { rng.below(200_001) as i32 - 100_000 }).collect()
                    };
                    let (up, mid, down, cs) = (row(rng), row(rng), row(rng), row(rng));
                    // Every region the score can have: 10% margins, or none.
                    let left = (w as f64 * 0.1 - 0.5) as usize;
                    for (l, r) in [(left, w - left), (0, w), (1, w - 1)] {
                        let (mut v0, mut v1) = (vec![0; w], vec![0; w]);
                        let (mut t0, mut t1) = (vec![0; r - l], vec![0; r - l]);
                        (SCALAR_KERNELS.thresholds)(&up, &mid, &down, &cs, l, &mut v0, &mut t0);
                        (k.thresholds)(&up, &mid, &down, &cs, l, &mut v1, &mut t1);
                        assert_eq!(t0, t1, "{level:?} thresholds w={w} {l}..{r}");
                    }
                }
            }
        }
    });
}

#[test]
fn masking_sums() {
    run("masking_sums", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..4 {
                    let src: Vec<Vec<i16>> = (0..3).map(|_| i16s(rng, n, kind)).collect();
                    let thr: Vec<i32> = (0..n)
                        .map(|_| match kind {
                            0 => rng.next_u64() as i32,
                            2 => [0, -1, 1, i32::MAX, i32::MIN][rng.below(5) as usize],
                            _ => rng.below(100_001) as i32 - 20_000,
                        })
                        .collect();
                    for band_w in [17usize, 34, 480, 960, 1920] {
                        let sr = |x: f64| {
                            let s = x.ceil() as u32;
                            (s, 2f64.powf(s as f64 - 1.0) as u32)
                        };
                        let sh = CmShiftsS0 {
                            cub_hv: sr((band_w as f64).log2() - 4.0),
                            cub_d: sr((band_w as f64).log2() - 3.0),
                            inner: sr((band_w as f64).log2()),
                        };
                        for rf in [[36453u16, 36453, 49417], [65535, 65535, 65535]] {
                            let a = (SCALAR_KERNELS.cm_s0)([&src[0], &src[1], &src[2]], &thr, rf, sh);
                            let b = (k.cm_s0)([&src[0], &src[1], &src[2]], &thr, rf, sh);
                            assert_eq!(a, b, "{level:?} cm n={n} kind={kind} band_w={band_w} rf={rf:?}");
                        }
                    }
                }
            }
        }
    });
}

/// Random i32 of one of several kinds: full range, band-like, extremes.
fn i32s(rng: &mut Rng, n: usize, kind: u64) -> Vec<i32> {
    (0..n)
        .map(|_| match kind {
            0 => rng.next_u64() as i32,
            1 => rng.below(2_000_001) as i32 - 1_000_000,
            2 => [i32::MIN, i32::MAX, 0, -1, 1][rng.below(5) as usize],
            // Every magnitude: the float roundings of the angle test.
            4 => (rng.next_u64() as i32) >> rng.below(32),
            _ => rng.below(60_001) as i32 - 30_000,
        })
        .collect()
}

#[test]
fn dwt_s123() {
    use vmafx::internals::feature::adm::dwt::S123_ROUNDING;
    run("dwt_s123", |rng| {
        for (level, k) in simd_levels() {
            for w in widths() {
                for kind in 0..4 {
                    for &(vadd, vshift, hadd, hshift) in &S123_ROUNDING {
                        let rows: Vec<Vec<i32>> = (0..4).map(|_| i32s(rng, w, kind)).collect();
                        let r = [&rows[0][..], &rows[1][..], &rows[2][..], &rows[3][..]];
                        let (mut l0, mut h0, mut l1, mut h1) = (vec![0; w], vec![0; w], vec![0; w], vec![0; w]);
                        (SCALAR_KERNELS.dwt_s123.vertical)(r, vadd, vshift, &mut l0, &mut h0);
                        (k.dwt_s123.vertical)(r, vadd, vshift, &mut l1, &mut h1);
                        assert_eq!((&l0, &h0), (&l1, &h1), "{level:?} vertical_s123 w={w} kind={kind}");

                        // Extended rows, exact or with the driver's padding.
                        let n = w;
                        let pad = if rng.below(2) == 0 { 0 } else { 8 };
                        let lo = i32s(rng, 2 * n + 2 + pad, kind);
                        let hi = i32s(rng, 2 * n + 2 + pad, kind);
                        let mut o0: Vec<Vec<i32>> = vec![vec![0; n]; 4];
                        let mut o1 = o0.clone();
                        for (kern, out) in [(SCALAR_KERNELS.dwt_s123.horizontal, &mut o0), (k.dwt_s123.horizontal, &mut o1)] {
                            let [a, v, h, d] = &mut out[..] else { unreachable!() };
                            kern(&lo, &hi, hadd, hshift, a, v, h, d);
                        }
                        assert_eq!(o0, o1, "{level:?} horizontal_s123 n={n} kind={kind} pad={pad}");
                    }
                }
            }
        }
    });
}

#[test]
fn csf_and_masking_s123() {
    use vmafx::internals::feature::adm::cm::CmShiftsS123;
    run("csf_and_masking_s123", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..4 {
                    let src: Vec<Vec<i32>> = (0..3).map(|_| i32s(rng, n, kind)).collect();
                    let s = [&src[0][..], &src[1][..], &src[2][..]];
                    let rfs = [
                        [0x0300_0000u32, 0x0300_0000, 0x0500_0000],
                        [0x7fff_ffff, 1, 0],
                        [0x9000_0000, 0x9000_0000, 0x9000_0000],
                        [rng.next_u64() as u32 >> 1, rng.next_u64() as u32 >> 1, rng.next_u64() as u32],
                    ];
                    for rf in rfs {
                        let (mut f0, mut c0, mut f1, mut c1) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
                        (SCALAR_KERNELS.csf_s123)(s, rf, &mut f0, &mut c0);
                        (k.csf_s123)(s, rf, &mut f1, &mut c1);
                        assert_eq!((&f0, &c0), (&f1, &c1), "{level:?} csf_s123 n={n} kind={kind} rf={rf:x?}");
                        let thr = i32s(rng, n, kind);
                        for band_w in [3usize, 9, 240, 480] {
                            let sr = |x: f64| {
                                let s = x.ceil() as u32;
                                (s, 2f64.powf(s as f64 - 1.0) as u32)
                            };
                            let sh = CmShiftsS123 { cub: sr((band_w as f64).log2()), inner: sr(7.0), final_shift: 1.0 };
                            let a = (SCALAR_KERNELS.cm_s123)(s, &thr, rf, sh);
                            let b = (k.cm_s123)(s, &thr, rf, sh);
                            assert_eq!(a, b, "{level:?} cm_s123 n={n} kind={kind} band_w={band_w} rf={rf:x?}");
                        }
                    }
                }
            }
        }
    });
}

#[test]
fn decouple_s123() {
    run("decouple_s123", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..6 {
                    for egl in [1.0, 100.0, 37.0, 1.5] {
                        let o: Vec<Vec<i32>> = (0..3).map(|_| i32s(rng, n, if kind == 5 { 4 } else { kind.min(4) })).collect();
                        let t: Vec<Vec<i32>> = if kind == 4 || kind == 5 {
                            o.iter()
                                .map(|b| b.iter().map(|&x| (x as i64 * (80 + rng.below(60) as i64) / 100 + rng.below(5) as i64 - 2) as i32).collect())
                                .collect()
                        } else {
                            (0..3).map(|_| i32s(rng, n, kind)).collect()
                        };
                        let mut out0 = vec![vec![0i32; n]; 6];
                        let mut out1 = out0.clone();
                        for (kern, out) in [(SCALAR_KERNELS.decouple_s123, &mut out0), (k.decouple_s123, &mut out1)] {
                            let [rh, rv, rd, ah, av, ad] = &mut out[..] else { unreachable!() };
                            kern([&o[0], &o[1], &o[2]], [&t[0], &t[1], &t[2]], [rh, rv, rd], [ah, av, ad], egl);
                        }
                        assert_eq!(out0, out1, "{level:?} decouple_s123 n={n} kind={kind} egl={egl}");
                    }
                }
            }
        }
    });
}

#[test]
fn cube_sums() {
    run("cube_sums", |rng| {
        for (level, k) in simd_levels() {
            for n in widths() {
                for kind in 0..4 {
                    let x = i16s(rng, n, kind);
                    assert_eq!((SCALAR_KERNELS.cube_sum_s0)(&x), (k.cube_sum_s0)(&x), "{level:?} cube_sum n={n} kind={kind}");
                }
            }
        }
    });
}

/// Our ADM (a context with only `adm`, scoring on this thread) per level and
/// libvmaf's adm extractor per path, per 1080p frame, frames interleaved
/// (`timing::interleaved`).
#[test]
#[ignore = "timing, not a check: cargo test --release --test checkasm -- --ignored --nocapture adm::"]
fn adm_timing() {
    use crate::timing;
    use std::sync::Arc;
    use vmafx::{Context, ContextConfig, FeatureOptions};
    let reps: u32 = std::env::var("VMAFX_PROFILE_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    for bits in [8u8, 10] {
        let frame = timing::hd_frame(bits);
        let (r, d) = (Arc::new(frame.0.clone()), Arc::new(frame.1.clone()));
        let variants: Vec<timing::Variant> = CpuLevel::available()
            .map(|level| {
                let mut ctx = Context::new(ContextConfig { threads: 0, cpu: level, ..Default::default() }).unwrap();
                ctx.use_feature("adm", FeatureOptions::new()).unwrap();
                let (r, d) = (r.clone(), d.clone());
                let mut time_one = move || {
                    let t = timing::thread_cpu_ms();
                    ctx.push(r.clone(), d.clone()).unwrap();
                    timing::thread_cpu_ms() - t
                };
                time_one();
                (format!("vmafx {}", level.name()), Box::new(time_one) as Box<dyn FnMut() -> f64>)
            })
            .collect();
        let medians = timing::interleaved("adm", &frame, timing::Feed::SamePair, reps, variants);
        println!("1920x1080 {bits}-bit ADM, ms/frame (median thread CPU time, frames interleaved):{medians}");
    }
}
