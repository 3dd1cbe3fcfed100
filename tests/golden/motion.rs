//! Motion against libvmaf 3.2.0, as f64 bits: bit depths, odd sizes, chroma
//! layouts, thread counts, subsampling and the feature options.

use std::sync::Arc;

use crate::support::{reference, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions};
use vmafx::internals::feature::find_extractor;

fn check(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, opts: &[(&str, &str)], threads: usize, subsample: u32, cpu: CpuLevel) {
    let frames = synth::clip(chroma, bits, w, h, n, 42 + bits as u64);
    let desc = find_extractor("motion").unwrap();
    let mut options = FeatureOptions::new();
    for (k, v) in opts {
        options.set_text(desc.options, k, v).unwrap();
    }
    let mut ctx = Context::new(ContextConfig { threads, subsample, cpu, ..Default::default() }).unwrap();
    ctx.use_feature("motion", options).unwrap();
    for (r, d) in &frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    assert_eq!(ctx.frames_final(), n as u32);
    let names: Vec<String> = ctx.collector().names().to_vec();
    let spec = reference::RefSpec {
        features: vec![("motion".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        threads: threads as u32,
        subsample,
        ..Default::default()
    };
    let r = reference::run(&frames, &spec, &names);
    let mut ours_log: Vec<String> = names.iter().map(|n| vmafx::internals::feature::naming::alias(n).to_owned()).collect();
    let mut theirs_log = r.log_names.clone();
    ours_log.sort();
    theirs_log.sort();
    assert_eq!(ours_log, theirs_log, "feature names");
    let case = format!("{chroma:?} {bits}-bit {w}x{h} opts={opts:?} threads={threads} subsample={subsample} {cpu:?}");
    for name in &names {
        for i in 0..n as u32 {
            let ours = ctx.score_at(name, i);
            let theirs = r.values[name][i as usize];
            assert_eq!(ours.map(f64::to_bits), theirs.map(f64::to_bits), "{case}: {name} frame {i}: {ours:?} vs {theirs:?}");
        }
    }
}

#[test]
fn motion_matches_libvmaf_across_depths_and_sizes() {
    for cpu in CpuLevel::available() {
        for (bits, w, h) in [(8u8, 67usize, 45usize), (8, 64, 48), (10, 64, 36), (12, 41, 30), (16, 33, 20)] {
            check(Chroma::Yuv420, bits, w, h, 6, &[], 0, 1, cpu);
        }
    }
    check(Chroma::Yuv444, 10, 70, 40, 5, &[], 2, 1, CpuLevel::detect());
    check(Chroma::Yuv422, 8, 70, 40, 5, &[], 2, 1, CpuLevel::detect());
}

#[test]
fn motion_options_and_subsampling_match_libvmaf() {
    check(Chroma::Yuv420, 8, 64, 48, 7, &[("motion_moving_average", "true")], 2, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 8, 64, 48, 7, &[("motion_blend_factor", "0.5"), ("motion_blend_offset", "2")], 0, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 10, 64, 48, 7, &[("motion_fps_weight", "2.5"), ("motion_max_val", "3")], 2, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 8, 64, 48, 7, &[("debug", "true")], 0, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 8, 64, 48, 7, &[("motion_force_zero", "true")], 0, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 8, 64, 48, 9, &[], 2, 3, CpuLevel::detect());
    // One and two frames: the stamp and the last-frame rule.
    check(Chroma::Yuv420, 8, 64, 48, 1, &[], 0, 1, CpuLevel::detect());
    check(Chroma::Yuv420, 8, 64, 48, 2, &[], 0, 1, CpuLevel::detect());
}

/// The five-frame window (the SAD against the reference two frames back,
/// as the _hfr v1.0.16 models set it), with and without the moving
/// average, on workers and subsampled; one to four frames for its stamp
/// and end rules.
#[test]
fn motion_five_frame_window_matches_libvmaf() {
    let five = ("motion_five_frame_window", "true");
    let hfr = [five, ("motion_moving_average", "true"), ("motion_max_val", "18")];
    check(Chroma::Yuv420, 8, 64, 48, 9, &[five], 0, 1, CpuLevel::Scalar);
    check(Chroma::Yuv420, 10, 67, 45, 9, &hfr, 3, 1, CpuLevel::detect());
    check(Chroma::Yuv444, 12, 40, 33, 8, &hfr, 2, 3, CpuLevel::detect());
    for n in 1..=4 {
        check(Chroma::Yuv420, 8, 64, 48, n, &hfr, 0, 1, CpuLevel::detect());
    }
}
