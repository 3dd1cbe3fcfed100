//! `ciede` (feature `ciede2000`) against libvmaf 3.2.0: every per-frame
//! value and every pooled value as bits, and the names libvmaf logs, at 8,
//! 10, 12 and 16 bits, 4:2:0 and 4:4:4, odd sizes (4:4:4), the golden clips
//! and a scene cut, on workers; and what vmafx refuses where libvmaf fails
//! or reads outside its pictures.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::{clips, synth};
use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, OwnedPicture};

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, threads: usize) -> vmafx::Result<Context> {
    let mut ctx = Context::new(ContextConfig { threads, ..Default::default() })?;
    ctx.use_feature("ciede", FeatureOptions::new())?;
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

fn spec() -> reference::RefSpec {
    reference::RefSpec { features: vec![("ciede".into(), vec![])], path: LibvmafPath::C, ..Default::default() }
}

/// Compares every value as bits; returns the lowest score.
fn check(frames: &Clip, what: &str, threads: usize) -> f64 {
    let ctx = ours(frames, threads).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert_eq!(names, ["ciede2000"], "{what}");
    let theirs = reference::run(frames, &spec(), &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what);
    (0..frames.len() as u32).filter_map(|i| ctx.score_at("ciede2000", i)).fold(f64::INFINITY, f64::min)
}

#[test]
fn ciede_matches_libvmaf_across_depths_layouts_and_sizes() {
    let cases = [(Chroma::Yuv420, 96, 64), (Chroma::Yuv420, 210, 118), (Chroma::Yuv444, 47, 29), (Chroma::Yuv444, 131, 97)];
    let mut k = 0u64;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 3, 300 + k);
            let what = format!("ciede {bits}-bit {w}x{h} {chroma:?}");
            let low = check(&frames, &what, 0);
            assert!(low.is_finite() && low < 60.0, "{what}: the distortion moves no CIEDE score ({low})");
        }
    }
}

#[test]
fn ciede_on_the_golden_clips_and_a_scene_cut() {
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        let (w, h) = (frames[0].0.width(), frames[0].0.height());
        let chroma = frames[0].0.format().chroma;
        if chroma == Chroma::Yuv422 || (chroma == Chroma::Yuv420 && (w % 2 == 1 || h % 2 == 1)) {
            assert!(ours(&frames, 0).is_err(), "{}: not refused", clip.name);
            continue;
        }
        check(&frames, &format!("{} ciede", clip.name), 2);
    }
    check(&synth::banded_clip(Chroma::Yuv444, 10, 120, 90, 6, 3), "banded scene cut ciede", 3);
}

#[test]
fn ciede_refusals() {
    for (chroma, bits, w, h, says) in [
        (Chroma::Yuv400, 8, 64, 64, "4:0:0"),
        (Chroma::Yuv422, 8, 64, 64, "4:2:2"),
        (Chroma::Yuv420, 8, 65, 64, "odd"),
        (Chroma::Yuv420, 10, 64, 63, "odd"),
        (Chroma::Yuv444, 9, 64, 64, "9 bits"),
    ] {
        let frames = synth::clip(chroma, bits, w, h, 1, 1);
        let e = ours(&frames, 0).err().unwrap_or_else(|| panic!("{chroma:?} {bits} {w}x{h} not refused")).to_string();
        assert!(e.contains("ciede") && e.contains(says), "{e}");
    }
    // libvmaf refuses 4:0:0 too.
    let gray = synth::clip(Chroma::Yuv400, 8, 64, 64, 1, 1);
    let _libvmaf = std::panic::catch_unwind(|| reference::try_run(&gray, &spec(), &[]));
    assert!(!matches!(_libvmaf, Ok(Ok(_))), "libvmaf scored ciede on 4:0:0");
}
