//! `psnr_hvs` (`psnr_hvs_y`, `_cb`, `_cr`, `psnr_hvs`) against libvmaf
//! 3.2.0: every per-frame value and every pooled value as bits, and the
//! names libvmaf logs, at 8 to 12 bits, 4:2:0 to 4:4:4, odd sizes, the
//! golden clips and a scene cut, on workers; and what both refuse.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::{clips, synth};
use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, OwnedPicture};

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, threads: usize) -> vmafx::Result<Context> {
    let mut ctx = Context::new(ContextConfig { threads, ..Default::default() })?;
    ctx.use_feature("psnr_hvs", FeatureOptions::new())?;
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

fn spec() -> reference::RefSpec {
    reference::RefSpec { features: vec![("psnr_hvs".into(), vec![])], path: LibvmafPath::C, ..Default::default() }
}

/// Compares every value as bits; returns the lowest psnr_hvs.
fn check(frames: &Clip, what: &str, threads: usize) -> f64 {
    let ctx = ours(frames, threads).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert_eq!(names.len(), 4, "{what}: {names:?}");
    let theirs = reference::run(frames, &spec(), &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what);
    (0..frames.len() as u32).filter_map(|i| ctx.score_at("psnr_hvs", i)).fold(f64::INFINITY, f64::min)
}

#[test]
fn psnr_hvs_matches_libvmaf_across_depths_layouts_and_sizes() {
    let cases = [(Chroma::Yuv420, 96, 64), (Chroma::Yuv420, 131, 77), (Chroma::Yuv422, 67, 45), (Chroma::Yuv444, 47, 29), (Chroma::Yuv444, 16, 16)];
    let mut k = 0u64;
    for bits in [8u8, 9, 10, 12] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 3, 500 + k);
            let what = format!("psnr_hvs {bits}-bit {w}x{h} {chroma:?}");
            let low = check(&frames, &what, 0);
            assert!(low.is_finite() && low < 80.0, "{what}: the distortion moves no PSNR-HVS ({low})");
        }
    }
}

/// A chroma plane under 8 pixels on a side holds no block: libvmaf divides
/// 0 by 0, and so does vmafx (NaN, bit for bit).
#[test]
fn psnr_hvs_without_a_chroma_block_is_nan_as_in_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 14, 30, 2, 9);
    let ctx = ours(&frames, 0).unwrap();
    assert!(ctx.score_at("psnr_hvs_cb", 0).unwrap().is_nan());
    check(&frames, "psnr_hvs 14x30 4:2:0", 0);
}

#[test]
fn psnr_hvs_on_the_golden_clips_and_a_scene_cut() {
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        if frames[0].0.format().bits > 12 {
            assert!(ours(&frames, 0).is_err(), "{}: not refused", clip.name);
            continue;
        }
        check(&frames, &format!("{} psnr_hvs", clip.name), 2);
    }
    check(&synth::banded_clip(Chroma::Yuv420, 10, 120, 90, 6, 3), "banded scene cut psnr_hvs", 3);
}

#[test]
fn psnr_hvs_refusals() {
    for (chroma, bits, says) in [(Chroma::Yuv400, 8, "4:0:0"), (Chroma::Yuv420, 16, "16 bits")] {
        let frames = synth::clip(chroma, bits, 64, 64, 1, 1);
        let e = ours(&frames, 0).err().unwrap_or_else(|| panic!("{chroma:?} {bits} not refused")).to_string();
        assert!(e.contains("psnr_hvs") && e.contains(says), "{e}");
        let theirs = std::panic::catch_unwind(|| reference::try_run(&frames, &spec(), &[]));
        assert!(!matches!(theirs, Ok(Ok(_))), "libvmaf scored psnr_hvs on {chroma:?} {bits}");
    }
}
