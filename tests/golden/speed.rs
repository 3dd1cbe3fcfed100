//! SpEED (`speed_chroma`, `speed_temporal`) against libvmaf 3.2.0's C code
//! (its SIMD masked off): every per-frame value and every pooled value as
//! bits, the names libvmaf logs, at 8, 10, 12 and 16 bits, 4:2:0 to 4:4:4,
//! odd sizes, every option (the v1.0.16 models' settings among them), on
//! the caller's thread and on workers; and what both refuse.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::find_extractor;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

/// The v1.0.16 models' speed_chroma options (vmaf_v1.0.16_3d0h.json).
const MODEL_CHROMA: &[(&str, &str)] =
    &[("speed_nn_floor", "0.1"), ("speed_sigma_nn", "0.19"), ("speed_weight_var_mode", "5"), ("speed_max_val", "45")];

fn ours(frames: &Clip, feature: &str, opts: &[(&str, &str)], threads: usize, subsample: u32) -> vmafx::Result<Context> {
    let cfg = ContextConfig { threads, subsample, cpu: CpuLevel::detect_host(), ..Default::default() };
    let mut ctx = Context::new(cfg)?;
    let specs = find_extractor(feature)?.options;
    let mut o = FeatureOptions::new();
    for (k, v) in opts {
        o.set_text(specs, k, v)?;
    }
    ctx.use_feature(feature, o)?;
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

fn spec(feature: &str, opts: &[(&str, &str)], subsample: u32) -> reference::RefSpec {
    reference::RefSpec {
        features: vec![(feature.into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        subsample,
        path: LibvmafPath::C,
        ..Default::default()
    }
}

/// Scores `frames` both ways and compares every value as bits; returns
/// the largest value written (to show the content moves the score).
fn check(frames: &Clip, feature: &str, opts: &[(&str, &str)], what: &str, threads: usize, subsample: u32) -> f64 {
    let ctx = ours(frames, feature, opts, threads, subsample).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert!(!names.is_empty(), "{what}: nothing written");
    let theirs = reference::run(frames, &spec(feature, opts, subsample), &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what)
}

/// Each depth libvmaf's SpEED reads, each layout with chroma, odd and
/// lopsided sizes (a chroma plane of 80 or more on each side), defaults
/// and the models' options.
#[test]
fn speed_chroma_matches_libvmaf_across_depths_layouts_and_sizes() {
    let cases = [
        (Chroma::Yuv420, 640, 480),
        (Chroma::Yuv420, 333, 181),
        (Chroma::Yuv422, 167, 97),
        (Chroma::Yuv444, 97, 85),
        (Chroma::Yuv444, 250, 131),
        (Chroma::Yuv420, 161, 175),
    ];
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 4, 30 + k);
            let what = format!("{bits}-bit {w}x{h} {chroma:?}");
            let largest = check(&frames, "speed_chroma", &[], &what, 0, 1);
            if (w, h) == (640, 480) {
                assert!(largest > 0.5, "{what}: the content moves no SpEED score ({largest})");
            }
            check(&frames, "speed_chroma", MODEL_CHROMA, &format!("{what}, models' options"), 0, 1);
        }
    }
}

/// Every option: the prescale with each method (down, up, and off 1 by
/// more than libvmaf's 1e-3 yet rounding to the same size), kernel scales,
/// each variance weighting, noise, floor and clipping.
#[test]
fn speed_chroma_options_match_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 10, 640, 480, 3, 71);
    let frames8 = synth::clip(Chroma::Yuv444, 8, 211, 173, 3, 72);
    let cases: &[&[(&str, &str)]] = &[
        // vmaf_v1.0.16_3d0h_2160 and _5d0h: the models' prescales.
        &[("speed_prescale", "0.5"), ("speed_prescale_method", "bilinear")],
        &[("speed_prescale", "0.6"), ("speed_prescale_method", "bilinear")],
        &[("speed_prescale", "0.6"), ("speed_prescale_method", "nearest")],
        &[("speed_prescale", "0.7"), ("speed_prescale_method", "bicubic")],
        &[("speed_prescale", "0.8"), ("speed_prescale_method", "lanczos4")],
        &[("speed_prescale", "1.5"), ("speed_prescale_method", "bilinear")],
        &[("speed_prescale", "1.3"), ("speed_prescale_method", "bicubic")],
        &[("speed_prescale", "1.2"), ("speed_prescale_method", "lanczos4")],
        &[("speed_prescale", "1.7")],
        &[("speed_prescale", "1.0015"), ("speed_prescale_method", "bilinear")],
        &[("speed_prescale", "1.0005"), ("speed_prescale_method", "bilinear")],
        &[("speed_kernelscale", "0.5")],
        &[("speed_kernelscale", "1.5")],
        &[("speed_kernelscale", "2")],
        &[("speed_kernelscale", "0.711111")],
        &[("speed_weight_var_mode", "1")],
        &[("speed_weight_var_mode", "2")],
        &[("speed_weight_var_mode", "3")],
        &[("speed_weight_var_mode", "4")],
        &[("speed_weight_var_mode", "6")],
        &[("speed_sigma_nn", "1.7"), ("speed_nn_floor", "0.6")],
        &[("speed_max_val", "0.5")],
        &[("speed_max_val", "0")],
    ];
    for opts in cases {
        check(&frames, "speed_chroma", opts, &format!("10-bit {opts:?}"), 0, 1);
        check(&frames8, "speed_chroma", opts, &format!("8-bit 4:4:4 {opts:?}"), 0, 1);
    }
}

/// A flat chroma plane has a singular covariance matrix: libvmaf scores
/// the pair 0 where only one side is singular, and takes the other plane's
/// score for `uv` where one plane is.
#[test]
fn speed_chroma_flat_planes_match_libvmaf() {
    // From frame 1: frame 0 of a synthetic clip is undistorted (every
    // score 0, whichever plane stood in).
    let mut frames: Clip = synth::clip(Chroma::Yuv420, 8, 640, 480, 4, 81).into_iter().skip(1).collect();
    // Frame 0: a flat V plane on both sides; frame 1: flat on the
    // distorted side only; frame 2: both planes flat on both sides.
    let flatten = |p: &mut OwnedPicture, plane: usize| {
        for b in p.plane_bytes_mut(plane).iter_mut() {
            *b = 100;
        }
    };
    flatten(&mut frames[0].0, 2);
    flatten(&mut frames[0].1, 2);
    flatten(&mut frames[1].1, 1);
    for plane in [1, 2] {
        flatten(&mut frames[2].0, plane);
        flatten(&mut frames[2].1, plane);
    }
    check(&frames, "speed_chroma", &[], "flat planes", 0, 1);
    // The imputation shows: uv is the U score, U and V differ.
    let ctx = ours(&frames, "speed_chroma", &[], 0, 1).unwrap();
    let at = |n: &str| ctx.score_at(&format!("Speed_chroma_feature_speed_chroma_{n}_score"), 0).unwrap();
    assert!(at("u") > 0.1 && at("uv") == at("u") && at("v") != at("u"), "u {} v {} uv {}", at("u"), at("v"), at("uv"));
}

/// Noise whose amplitude grows across the picture from none to a few
/// codes (the distorted side with other noise): block entropies span the
/// noise floor, so where the floor lies (`speed_nn_floor`,
/// `speed_sigma_nn`) decides which blocks count.
fn noise_ramp_clip(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, seed: u64) -> Clip {
    use vmafx::PixelFormat;
    let fmt = PixelFormat::new(chroma, bits).unwrap();
    let mut rng = synth::Rng::new(seed);
    let scale = 1u32 << (bits - 8);
    let mut make = |t: usize, strength: f64| {
        let mut p = OwnedPicture::new(fmt, w, h).unwrap();
        for i in 0..chroma.plane_count() {
            let (pw, ph) = fmt.plane_size(i, w, h);
            for y in 0..ph {
                for x in 0..pw {
                    let amp = strength * 6.0 * x as f64 / pw as f64 * (1.0 + 0.2 * t as f64);
                    let noise = (rng.below(1001) as f64 / 500.0 - 1.0) * amp;
                    let v = ((128.0 + 10.0 * y as f64 / ph as f64 + noise) * scale as f64).round();
                    p.set(i, x, y, v.clamp(0.0, ((1u32 << bits) - 1) as f64) as u16);
                }
            }
        }
        p
    };
    (0..n).map(|t| (make(t, 1.0), make(t, 0.7))).collect()
}

#[test]
fn speed_noise_floor_matches_libvmaf() {
    let chroma_clip = noise_ramp_clip(Chroma::Yuv444, 8, 320, 240, 3, 5);
    let luma_clip = noise_ramp_clip(Chroma::Yuv400, 10, 320, 240, 3, 6);
    for opts in [
        &[("speed_nn_floor", "0.1")][..],
        &[("speed_nn_floor", "0.5"), ("speed_sigma_nn", "0.5")],
        &[("speed_nn_floor", "1")],
        MODEL_CHROMA,
    ] {
        check(&chroma_clip, "speed_chroma", opts, &format!("noise ramp {opts:?}"), 0, 1);
    }
    for opts in [&[("speed_nn_floor", "0.1")][..], &[("speed_nn_floor", "1"), ("speed_sigma_nn", "1.5")]] {
        check(&luma_clip, "speed_temporal", opts, &format!("noise ramp {opts:?}"), 0, 1);
    }
}

#[test]
fn speed_temporal_matches_libvmaf_across_depths_and_sizes() {
    let cases = [
        (Chroma::Yuv420, 320, 240),
        (Chroma::Yuv422, 97, 83),
        (Chroma::Yuv444, 131, 250),
        (Chroma::Yuv400, 181, 101),
    ];
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 4, 50 + k);
            let what = format!("{bits}-bit {w}x{h} {chroma:?}");
            let largest = check(&frames, "speed_temporal", &[], &what, 0, 1);
            if (w, h) == (320, 240) {
                assert!(largest > 0.5, "{what}: the content moves no temporal score ({largest})");
            }
        }
    }
}

#[test]
fn speed_temporal_options_match_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 10, 352, 288, 4, 91);
    let cases: &[&[(&str, &str)]] = &[
        &[("speed_use_ref_diff", "true")],
        &[("speed_prescale", "0.5"), ("speed_prescale_method", "bilinear")],
        &[("speed_prescale", "0.75"), ("speed_prescale_method", "lanczos4")],
        &[("speed_kernelscale", "2")],
        &[("speed_sigma_nn", "0.19"), ("speed_nn_floor", "0.1")],
        // Names the feature, clips nothing.
        &[("speed_max_val", "0.001")],
    ];
    for opts in cases {
        check(&frames, "speed_temporal", opts, &format!("{opts:?}"), 0, 1);
    }
}

/// Worker threads and a subsample rate: speed_chroma skips the frames
/// libvmaf skips, speed_temporal (TEMPORAL in libvmaf) scores every one.
#[test]
fn speed_threads_and_subsampling_match_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 320, 180, 7, 101);
    for (threads, subsample) in [(2, 1), (3, 2), (0, 3)] {
        let what = format!("{threads} threads, subsample {subsample}");
        check(&frames, "speed_chroma", MODEL_CHROMA, &what, threads, subsample);
        check(&frames, "speed_temporal", &[], &what, threads, subsample);
    }
}

fn refusal(frames: &Clip, feature: &str, opts: &[(&str, &str)]) -> String {
    match ours(frames, feature, opts, 0, 1) {
        Ok(_) => panic!("{feature} {opts:?}: vmafx scored what it must refuse"),
        Err(e) => e.to_string(),
    }
}

/// libvmaf's own refusal (4:0:0 has no chroma) and vmafx's where libvmaf
/// ignores its init's error and reads outside its buffers (no whole 5x5
/// block after decimation), reads 16-bit samples as bytes (9, 11, 13-15
/// bits), or writes past its frame buffers (speed_temporal enlarged).
#[test]
fn speed_refuses_what_libvmaf_cannot_score() {
    let gray = synth::clip(Chroma::Yuv400, 8, 320, 240, 2, 1);
    let msg = refusal(&gray, "speed_chroma", &[]);
    assert!(msg.contains("4:0:0"), "{msg}");
    assert!(reference::try_run(&gray, &spec("speed_chroma", &[], 1), &[]).is_err(), "libvmaf scored 4:0:0 chroma");

    // 216x144 4:2:0: the 108x72 chroma decimates to 6x4, under one block
    // (libvmaf crashes here, threaded, with the v1.0.16 models).
    let small = synth::clip(Chroma::Yuv420, 8, 216, 144, 2, 2);
    let msg = refusal(&small, "speed_chroma", &[]);
    assert!(msg.contains("108x72") && msg.contains("5x5"), "{msg}");
    // A prescale can make a picture too small too, and one too small
    // large enough.
    let msg = refusal(&synth::clip(Chroma::Yuv420, 8, 320, 240, 2, 3), "speed_chroma", &[("speed_prescale", "0.4")]);
    assert!(msg.contains("prescaled by 0.4"), "{msg}");
    check(&small, "speed_chroma", &[("speed_prescale", "1.2")], "216x144 enlarged", 0, 1);
    let msg = refusal(&synth::clip(Chroma::Yuv400, 8, 79, 300, 2, 4), "speed_temporal", &[]);
    assert!(msg.contains("79x300"), "{msg}");

    for bits in [9u8, 11, 14] {
        let clip = synth::clip(Chroma::Yuv420, bits, 320, 240, 2, 5);
        for feature in ["speed_chroma", "speed_temporal"] {
            let msg = refusal(&clip, feature, &[]);
            assert!(msg.contains(&format!("{bits}-bit")), "{msg}");
        }
    }

    let frames = synth::clip(Chroma::Yuv420, 8, 320, 240, 2, 6);
    let msg = refusal(&frames, "speed_temporal", &[("speed_prescale", "1.5")]);
    assert!(msg.contains("writes past"), "{msg}");
    for feature in ["speed_chroma", "speed_temporal"] {
        let msg = refusal(&frames, feature, &[("speed_kernelscale", "0.9")]);
        assert!(msg.contains("speed_kernelscale=0.9"), "{msg}");
        let msg = refusal(&frames, feature, &[("speed_prescale_method", "area")]);
        assert!(msg.contains("speed_prescale_method=area"), "{msg}");
    }
}

/// Not a test: time per frame of vmafx's SpEED and libvmaf's on one
/// 1920x1080 4:2:0 8-bit clip (the v1.0.16 models' speed_chroma options,
/// and speed_temporal), both on the calling thread, libvmaf on its C code
/// and on its best SIMD; prints the ratios.
/// `cargo test --test golden -- --ignored --nocapture speed::speed_time_ratio`
#[test]
#[ignore]
fn speed_time_ratio() {
    use std::time::Instant;
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 6, 3);
    let n = frames.len() as f64;
    for (feature, opts) in [("speed_chroma", MODEL_CHROMA), ("speed_temporal", &[][..])] {
        let best = |f: &dyn Fn() -> f64| (0..3).map(|_| f()).fold(f64::INFINITY, f64::min);
        let vmafx_s = best(&|| {
            let t = Instant::now();
            ours(&frames, feature, opts, 0, 1).unwrap();
            t.elapsed().as_secs_f64()
        });
        for path in [LibvmafPath::C, LibvmafPath::Avx2, LibvmafPath::Avx512] {
            if !path.runs_here() {
                continue;
            }
            let s = reference::RefSpec { path, ..spec(feature, opts, 1) };
            let libvmaf_s = best(&|| {
                let t = Instant::now();
                reference::run(&frames, &s, &[]);
                t.elapsed().as_secs_f64()
            });
            eprintln!(
                "{feature}: vmafx {:.1} ms/frame, libvmaf {} {:.1} ms/frame: libvmaf/vmafx time = {:.2}",
                vmafx_s * 1e3 / n,
                path.name(),
                libvmaf_s * 1e3 / n,
                libvmaf_s / vmafx_s
            );
        }
    }
}
