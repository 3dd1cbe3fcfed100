//! libvmaf 3.2.0's float features (`float_psnr`, `float_ansnr`,
//! `float_moment`, ...) against its own C code, built with
//! `-Denable_float=true` (the `float` feature of `vmaf-head-sys`): every
//! per-frame value and every pooled value as bits, the names libvmaf logs,
//! at 8, 10, 12 and 16 bits, 4:2:0/4:2:2/4:4:4, odd sizes, a scene cut,
//! each option, on the caller's thread and on workers; and what vmafx
//! refuses.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::find_extractor;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, feature: &str, opts: &[(&str, &str)], threads: usize) -> vmafx::Result<Context> {
    ours_subsampled(frames, feature, opts, threads, 1)
}

fn ours_subsampled(
    frames: &Clip,
    feature: &str,
    opts: &[(&str, &str)],
    threads: usize,
    subsample: u32,
) -> vmafx::Result<Context> {
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

/// Scores `frames` with vmafx and libvmaf's C code and compares every
/// value as bits; returns the largest value written.
fn check(frames: &Clip, feature: &str, opts: &[(&str, &str)], what: &str, threads: usize) -> f64 {
    check_subsampled(frames, feature, opts, what, threads, 1)
}

/// `check` with libvmaf's frame subsampling (`n_subsample`).
fn check_subsampled(frames: &Clip, feature: &str, opts: &[(&str, &str)], what: &str, threads: usize, subsample: u32) -> f64 {
    let ctx =
        ours_subsampled(frames, feature, opts, threads, subsample).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert!(!names.is_empty(), "{what}: nothing written");
    let spec = reference::RefSpec {
        features: vec![(feature.into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        subsample,
        path: LibvmafPath::C,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what)
}

/// Two scenes: `n` frames of one content, then `n` of another.
fn scene_cut(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, seed: u64) -> Clip {
    let mut frames = synth::clip(chroma, bits, w, h, n, seed);
    frames.extend(synth::clip(chroma, bits, w, h, n, seed + 1000));
    frames
}

/// The sizes and layouts every extractor is tried at.
const CASES: [(Chroma, usize, usize); 5] = [
    (Chroma::Yuv420, 176, 144),
    (Chroma::Yuv420, 77, 45),
    (Chroma::Yuv422, 64, 51),
    (Chroma::Yuv444, 41, 37),
    (Chroma::Yuv400, 50, 33),
];

fn check_everywhere(feature: &str, opts: &[(&str, &str)], min_largest: f64) {
    check_everywhere_from(feature, opts, min_largest, 0);
}

/// `check_everywhere` on the cases at least `min_side` on each side.
fn check_everywhere_from(feature: &str, opts: &[(&str, &str)], min_largest: f64, min_side: usize) {
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in CASES {
            k += 1;
            if w.min(h) < min_side {
                continue;
            }
            let frames = scene_cut(chroma, bits, w, h, 3, 70 + k);
            let what = format!("{feature} {opts:?} {bits}-bit {w}x{h} {chroma:?}");
            let largest = check(&frames, feature, opts, &what, 0);
            assert!(largest > min_largest, "{what}: the content moves nothing ({largest})");
        }
    }
    // Workers score frames out of order; the values stay the same.
    let frames = scene_cut(Chroma::Yuv420, 10, 96, 64, 4, 5);
    check(&frames, feature, opts, &format!("{feature} {opts:?} 3 threads"), 3);
}

#[test]
fn float_psnr_matches_libvmaf() {
    check_everywhere("float_psnr", &[], 20.0);
}

#[test]
fn float_ansnr_matches_libvmaf() {
    check_everywhere("float_ansnr", &[], 10.0);
}

#[test]
fn float_moment_matches_libvmaf() {
    check_everywhere("float_moment", &[], 100.0);
}

/// Identical pictures: PSNR and ANPSNR at their caps, ANSNR's zero noise.
#[test]
fn identical_pictures_hit_the_caps_as_libvmaf() {
    for bits in [8u8, 16] {
        let frames: Clip = synth::clip(Chroma::Yuv420, bits, 48, 40, 2, 9)
            .into_iter()
            .map(|(r, _)| (r.clone(), r))
            .collect();
        for feature in ["float_psnr", "float_ansnr"] {
            check(&frames, feature, &[], &format!("{feature} identical {bits}-bit"), 0);
        }
    }
}

/// The smallest sizes each takes, and what vmafx refuses where libvmaf
/// would read outside its buffers or misread samples.
#[test]
fn refusals_name_the_reason() {
    let tiny = synth::clip(Chroma::Yuv420, 8, 3, 3, 2, 1);
    check(&tiny, "float_ansnr", &[], "float_ansnr 3x3", 0);
    check(&synth::clip(Chroma::Yuv444, 8, 1, 1, 2, 1), "float_psnr", &[], "float_psnr 1x1", 0);
    let e = ours(&synth::clip(Chroma::Yuv420, 8, 2, 8, 1, 1), "float_ansnr", &[], 0).err().unwrap();
    assert!(e.to_string().contains("2x8"), "{e}");
    for feature in ["float_psnr", "float_ansnr", "float_moment"] {
        let e = ours(&synth::clip(Chroma::Yuv420, 9, 16, 16, 1, 1), feature, &[], 0).err().unwrap();
        assert!(e.to_string().contains("9 bits"), "{feature}: {e}");
    }
}

#[test]
fn float_motion_matches_libvmaf() {
    check_everywhere("float_motion", &[], 0.5);
}

/// One frame, two frames (libvmaf's flush and its index-1 branch), and
/// every option.
#[test]
fn float_motion_options_and_short_clips() {
    for n in 1..=3 {
        let frames = synth::clip(Chroma::Yuv420, 8, 64, 48, n, 3);
        check(&frames, "float_motion", &[], &format!("float_motion {n} frames"), 0);
    }
    let frames = scene_cut(Chroma::Yuv420, 10, 81, 47, 3, 11);
    let cases: &[&[(&str, &str)]] = &[
        &[("debug", "false")],
        &[("motion_force_zero", "true")],
        &[("motion_fps_weight", "2.5")],
        &[("motion_blend_factor", "0.4"), ("motion_blend_offset", "2")],
        &[("motion_add_scale1", "true")],
        &[("motion_filter_size", "1")],
        &[("motion_filter_size", "3")],
        &[("motion_add_uv", "true")],
        &[("motion_max_val", "3")],
    ];
    for opts in cases {
        check(&frames, "float_motion", opts, &format!("float_motion {opts:?}"), 0);
    }
    // Chroma halved for scale 1: libvmaf reads it right where chroma and
    // luma rows pad to one stride (4:4:4), and vmafx refuses the rest.
    let uv_scale1 = [("motion_add_uv", "true"), ("motion_add_scale1", "true"), ("motion_filter_size", "3")];
    let frames444 = scene_cut(Chroma::Yuv444, 8, 81, 47, 2, 14);
    check(&frames444, "float_motion", &uv_scale1, "float_motion uv scale1 4:4:4", 0);
    let e = ours(&frames, "float_motion", &uv_scale1, 0).err().unwrap();
    assert!(e.to_string().contains("wrong stride"), "{e}");
    let frames = scene_cut(Chroma::Yuv422, 16, 33, 21, 2, 12);
    check(&frames, "float_motion", &[("motion_add_uv", "true")], "float_motion uv 4:2:2 16-bit", 2);
    let frames = scene_cut(Chroma::Yuv444, 12, 5, 4, 2, 13);
    check(&frames, "float_motion", &[("motion_add_uv", "true")], "float_motion uv 4:4:4 5x4", 0);
}

#[test]
fn float_vif_matches_libvmaf() {
    check_everywhere("float_vif", &[], 0.5);
}

#[test]
fn float_vif_options() {
    let frames = scene_cut(Chroma::Yuv420, 8, 96, 72, 2, 21);
    let cases: &[&[(&str, &str)]] = &[
        &[("debug", "true")],
        &[("vif_enhn_gain_limit", "1.0")],
        &[("vif_kernelscale", "0.5")],
        &[("vif_kernelscale", "1.5"), ("debug", "true")],
        &[("vif_prescale", "0.5")],
        &[("vif_prescale", "1.5"), ("vif_prescale_method", "bilinear")],
        &[("vif_prescale", "0.75"), ("vif_prescale_method", "bicubic")],
        &[("vif_prescale", "1.25"), ("vif_prescale_method", "lanczos4")],
        &[("vif_prescale", "1.0004")],
        &[("vif_scale1_min_val", "0.99"), ("vif_scale2_min_val", "0.5"), ("vif_scale3_min_val", "1")],
        &[("vif_sigma_nsq", "0.5")],
        &[("vif_skip_scale0", "true"), ("debug", "true")],
    ];
    for opts in cases {
        check(&frames, "float_vif", opts, &format!("float_vif {opts:?}"), 0);
    }
    // The smallest picture at the default kernel scale.
    check(&synth::clip(Chroma::Yuv420, 8, 16, 16, 2, 4), "float_vif", &[], "float_vif 16x16", 0);
    let e = ours(&synth::clip(Chroma::Yuv420, 8, 15, 40, 1, 1), "float_vif", &[], 0).err().unwrap();
    assert!(e.to_string().contains("15x40"), "{e}");
    let e = ours(&frames, "float_vif", &[("vif_kernelscale", "0.7")], 0).err().unwrap();
    assert!(e.to_string().contains("vif_kernelscale"), "{e}");
    let e = ours(&frames, "float_vif", &[("vif_prescale_method", "area")], 0).err().unwrap();
    assert!(e.to_string().contains("area"), "{e}");
}

#[test]
fn float_adm_matches_libvmaf() {
    check_everywhere_from("float_adm", &[], 0.5, 33);
}

#[test]
fn float_adm_options() {
    let frames = scene_cut(Chroma::Yuv420, 8, 96, 72, 2, 31);
    let cases: &[&[(&str, &str)]] = &[
        &[("debug", "true")],
        &[("adm_enhn_gain_limit", "1.0")],
        &[("adm_enhn_gain_limit", "1.2")],
        &[("adm_norm_view_dist", "1.5"), ("adm_ref_display_height", "2160")],
        &[("adm_noise_weight", "0.5")],
        &[("adm_csf_mode", "1"), ("adm_csf_scale", "2"), ("adm_csf_diag_scale", "0.5")],
        &[("adm_csf_mode", "2")],
        &[("adm_csf_mode", "7")],
        &[("adm_bypass_cm", "1")],
        &[("adm_adm3_apply_hm", "true")],
        &[("adm_p_norm", "2.5"), ("debug", "true")],
        &[("adm_dlm_weight", "0.8")],
        &[("adm_min_val", "0.9")],
        &[("adm_f1s0", "0.1"), ("adm_f1s2", "2"), ("adm_f2s1", "0"), ("adm_f2s3", "5")],
        &[("adm_skip_aim_scale", "0")],
        &[("adm_skip_scale0", "true"), ("debug", "true")],
    ];
    for opts in cases {
        check(&frames, "float_adm", opts, &format!("float_adm {opts:?}"), 0);
    }
    check(&synth::clip(Chroma::Yuv420, 8, 33, 33, 2, 4), "float_adm", &[], "float_adm 33x33", 0);
    let e = ours(&synth::clip(Chroma::Yuv420, 8, 32, 40, 1, 1), "float_adm", &[], 0).err().unwrap();
    assert!(e.to_string().contains("32x40"), "{e}");
}

/// Subsampling: the spatial extractors score every third frame only;
/// float_motion (temporal in libvmaf) every frame.
#[test]
fn subsampled_as_libvmaf() {
    let frames = scene_cut(Chroma::Yuv420, 8, 64, 48, 4, 51);
    for feature in ["float_psnr", "float_ansnr", "float_moment", "float_motion", "float_vif", "float_adm"] {
        for threads in [0, 2] {
            check_subsampled(&frames, feature, &[], &format!("{feature} subsample 3, {threads} threads"), threads, 3);
        }
    }
}

/// Whether libvmaf's own SIMD (its AVX float convolutions, used by
/// float_vif and float_motion on CPUs with AVX2) gives its C code's bits,
/// surveyed on this CPU; prints the departures, asserts nothing about
/// them: `cargo test --test golden -- --ignored --nocapture float::survey`.
#[test]
#[ignore]
fn survey_libvmaf_float_simd_against_its_c() {
    let paths: Vec<LibvmafPath> = LibvmafPath::ALL.into_iter().filter(|p| p.runs_here()).collect();
    for feature in ["float_vif", "float_motion", "float_adm", "float_ansnr"] {
        let mut departs: Vec<String> = Vec::new();
        for (w, h) in [(33, 33), (64, 48), (77, 45), (176, 144), (352, 288)] {
            let frames = synth::clip(Chroma::Yuv420, 8, w, h, 3, w as u64);
            let ctx = ours(&frames, feature, &[], 0).unwrap();
            let names: Vec<String> = ctx.collector().names().to_vec();
            let run = |path| {
                let spec = reference::RefSpec {
                    features: vec![(feature.into(), vec![])],
                    path,
                    ..Default::default()
                };
                reference::run(&frames, &spec, &names).values
            };
            let c = run(LibvmafPath::C);
            for &p in &paths[1..] {
                if run(p) != c {
                    departs.push(format!("{} at {w}x{h}", p.name()));
                }
            }
        }
        eprintln!("libvmaf {feature}: SIMD departs from C: {departs:?} (paths run here: {paths:?})");
    }
}
