//! `float_ssim` and `float_ms_ssim` against libvmaf 3.2.0: every per-frame
//! value and every pooled value as bits, and the names libvmaf logs, at 8,
//! 10, 12 and 16 bits, 4:2:0 to 4:4:4, odd sizes, a scene cut (the golden
//! clips and CAMBI's banded clips), each option (`enable_lcs`, `enable_db`,
//! `clip_db`, every `scale`), on the caller's thread and on workers; and
//! what vmafx refuses where libvmaf would divide by nothing.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::{clips, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::find_extractor;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, feature: &str, opts: &[(&str, &str)], threads: usize) -> vmafx::Result<Context> {
    let cfg = ContextConfig { threads, cpu: CpuLevel::detect_host(), ..Default::default() };
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

/// Scores `frames` both ways, compares every value as bits; returns the
/// smallest main score (to show the content moves it).
fn check(frames: &Clip, feature: &str, opts: &[(&str, &str)], what: &str, threads: usize) -> f64 {
    let ctx = ours(frames, feature, opts, threads).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    let spec = reference::RefSpec {
        features: vec![(feature.into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        path: LibvmafPath::C,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what);
    (0..frames.len() as u32).filter_map(|i| ctx.score_at(feature, i)).fold(f64::INFINITY, f64::min)
}

#[test]
fn float_ssim_matches_libvmaf_across_depths_layouts_and_sizes() {
    let cases = [
        (Chroma::Yuv420, 96, 64),
        (Chroma::Yuv420, 333, 181),
        (Chroma::Yuv422, 167, 97),
        (Chroma::Yuv444, 47, 29),
        (Chroma::Yuv400, 11, 11),
        // Automatic scale 2 (min side 384 or more) and 3 (640).
        (Chroma::Yuv420, 401, 385),
        (Chroma::Yuv420, 700, 641),
    ];
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 3, 90 + k);
            let what = format!("float_ssim {bits}-bit {w}x{h} {chroma:?}");
            let low = check(&frames, "float_ssim", &[], &what, 0);
            assert!(low < 0.999, "{what}: the distortion moves no SSIM ({low})");
            check(&frames, "float_ssim", &[("enable_lcs", "true")], &format!("{what} lcs"), 0);
        }
    }
}

#[test]
fn float_ssim_options_match_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 10, 480, 270, 3, 7);
    let mut cases: Vec<Vec<(&str, &str)>> = vec![
        vec![("enable_db", "true")],
        vec![("enable_db", "true"), ("clip_db", "true")],
        vec![("clip_db", "true")],
        vec![("enable_lcs", "true"), ("enable_db", "true"), ("scale", "2")],
    ];
    let scales = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"];
    for s in &scales {
        cases.push(vec![("scale", s)]);
    }
    for opts in &cases {
        check(&frames, "float_ssim", opts, &format!("float_ssim 10-bit 480x270 {opts:?}"), 0);
    }
    // Identical pictures: SSIM 1, so dB is infinite, or clipped.
    let same: Clip = frames.iter().map(|(r, _)| (r.clone(), r.clone())).collect();
    for opts in [&[("enable_db", "true")][..], &[("enable_db", "true"), ("clip_db", "true")]] {
        check(&same, "float_ssim", opts, &format!("float_ssim identical {opts:?}"), 0);
        check(&same, "float_ms_ssim", opts, &format!("float_ms_ssim identical {opts:?}"), 0);
    }
}

#[test]
fn float_ms_ssim_matches_libvmaf_across_depths_layouts_and_sizes() {
    let cases = [(Chroma::Yuv420, 176, 176), (Chroma::Yuv420, 333, 181), (Chroma::Yuv422, 255, 197), (Chroma::Yuv444, 190, 177)];
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 3, 190 + k);
            let what = format!("float_ms_ssim {bits}-bit {w}x{h} {chroma:?}");
            let low = check(&frames, "float_ms_ssim", &[], &what, 0);
            assert!(low < 0.999, "{what}: the distortion moves no MS-SSIM ({low})");
        }
    }
    let frames = synth::clip(Chroma::Yuv420, 8, 320, 240, 3, 5);
    for opts in [
        &[("enable_lcs", "true")][..],
        &[("enable_db", "true")],
        &[("enable_db", "true"), ("clip_db", "true"), ("enable_lcs", "true")],
    ] {
        check(&frames, "float_ms_ssim", opts, &format!("float_ms_ssim 8-bit 320x240 {opts:?}"), 0);
    }
}

/// Real content: the golden clips (x264/x265 at many CRFs, every depth and
/// layout, odd sizes) and a banded clip with a scene cut, on workers.
#[test]
fn ssim_on_the_golden_clips_and_a_scene_cut() {
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        check(&frames, "float_ssim", &[("enable_lcs", "true")], &format!("{} float_ssim", clip.name), 2);
        if frames[0].0.width() >= 176 && frames[0].0.height() >= 176 {
            check(&frames, "float_ms_ssim", &[("enable_lcs", "true")], &format!("{} float_ms_ssim", clip.name), 2);
        }
    }
    let cut = synth::banded_clip(Chroma::Yuv420, 10, 256, 216, 6, 3);
    check(&cut, "float_ssim", &[], "banded scene cut float_ssim", 3);
    check(&cut, "float_ms_ssim", &[], "banded scene cut float_ms_ssim", 3);
}

/// Where libvmaf would divide by a size of zero or less (SSIM's window
/// needs 11 pixels, MS-SSIM's five scales 176), vmafx refuses, saying so;
/// MS-SSIM under 176 fails in libvmaf too.
#[test]
fn too_small_pictures_are_refused() {
    let small = synth::clip(Chroma::Yuv420, 8, 10, 40, 1, 1);
    let e = ours(&small, "float_ssim", &[], 0).err().expect("float_ssim on 10x40").to_string();
    assert!(e.contains("float_ssim") && e.contains("11"), "{e}");
    let e = ours(&synth::clip(Chroma::Yuv420, 8, 30, 30, 1, 1), "float_ssim", &[("scale", "3")], 0).err().unwrap().to_string();
    assert!(e.contains("decimated by 3"), "{e}");
    let narrow = synth::clip(Chroma::Yuv420, 8, 175, 300, 1, 1);
    let e = ours(&narrow, "float_ms_ssim", &[], 0).err().expect("float_ms_ssim on 175x300").to_string();
    assert!(e.contains("float_ms_ssim") && e.contains("176"), "{e}");
    let spec = reference::RefSpec { features: vec![("float_ms_ssim".into(), vec![])], ..Default::default() };
    assert!(reference::try_run(&narrow, &spec, &[]).is_err(), "libvmaf scored MS-SSIM at 175x300");
    let bits9 = synth::clip(Chroma::Yuv420, 9, 64, 64, 1, 1);
    assert!(ours(&bits9, "float_ssim", &[], 0).is_err());
}
