//! A title scored in segments and merged (`Context::record_extracted`,
//! `Context::push_extracted`: what `vmafx.ray` does across machines)
//! equals one pass over it: the JSON, XML and CSV logs byte for byte, so
//! every per-frame value, pooled value and aggregate as bits, for segment
//! lengths 1, 2, 7 and the whole title, with models whose features look
//! back (motion, float_motion, speed_temporal, the five-frame window) and
//! ahead (motion2, motion3).

use std::sync::Arc;

use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, LogFormat, Model, ModelConfig, OwnedPicture};
use vmafx::internals::score::log::{render_log, LogInput};

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

struct Plan {
    models: &'static [&'static str],
    features: &'static [&'static str],
    threads: usize,
    subsample: u32,
}

fn context(plan: &Plan) -> Context {
    let cfg = ContextConfig { threads: plan.threads, subsample: plan.subsample, ..Default::default() };
    let mut ctx = Context::new(cfg).unwrap();
    for m in plan.models {
        ctx.use_model(Model::builtin(m, &ModelConfig::default()).unwrap()).unwrap();
    }
    for f in plan.features {
        let (name, options) = vmafx::internals::option_strings::parse_feature(f).unwrap();
        ctx.use_feature(&name, options).unwrap();
    }
    ctx
}

fn logs(ctx: &Context, frames: &Clip, plan: &Plan) -> Vec<String> {
    let input = LogInput {
        collector: ctx.collector(),
        frames: ctx.frames_in(),
        subsample: plan.subsample,
        width: frames[0].0.width(),
        height: frames[0].0.height(),
        fps: None,
        incomplete: None,
    };
    assert_eq!(ctx.frames_in() as usize, frames.len());
    [LogFormat::Json, LogFormat::Xml, LogFormat::Csv].iter().map(|&f| render_log(f, &input)).collect()
}

fn single_pass(frames: &Clip, plan: &Plan) -> Vec<String> {
    let mut ctx = context(plan);
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    logs(&ctx, frames, plan)
}

/// Each segment in a context of its own, as a Ray task scores it: from
/// `segment_push_from(first)` to its end, keeping its own frames' values.
fn segmented(frames: &Clip, plan: &Plan, length: usize) -> Vec<String> {
    let mut merged = context(plan);
    let (w, h, format) = (frames[0].0.width(), frames[0].0.height(), frames[0].0.format());
    for first in (0..frames.len()).step_by(length) {
        let end = (first + length).min(frames.len());
        let mut task = context(plan);
        task.record_extracted().unwrap();
        let from = task.segment_push_from(first as u32) as usize;
        for (r, d) in &frames[from..end] {
            task.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
        }
        task.flush().unwrap();
        let values = task.extracted();
        assert_eq!(values.len(), end - from);
        for v in &values[first - from..] {
            merged.push_extracted(w, h, format, v.clone()).unwrap();
        }
    }
    merged.flush().unwrap();
    logs(&merged, frames, plan)
}

fn check(frames: &Clip, plan: &Plan) {
    let whole = single_pass(frames, plan);
    for length in [1, 2, 7, frames.len()] {
        let parts = segmented(frames, plan, length);
        for (format, (a, b)) in ["json", "xml", "csv"].iter().zip(whole.iter().zip(&parts)) {
            if a != b {
                let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
                panic!(
                    "{:?} {:?} threads {} subsample {}: segments of {length} give another {format} log; \
                     first difference at line {line}:\n single: {:?}\n merged: {:?}",
                    plan.models,
                    plan.features,
                    plan.threads,
                    plan.subsample,
                    a.lines().nth(line),
                    b.lines().nth(line)
                );
            }
        }
    }
}

fn clip() -> Clip {
    synth::clip(Chroma::Yuv420, 8, 176, 144, 12, 3)
}

#[test]
fn vmaf_v061_and_psnr_in_segments_equal_one_pass() {
    let frames = clip();
    for threads in [0, 2] {
        check(&frames, &Plan { models: &["vmaf_v0.6.1"], features: &["psnr=enable_apsnr=true"], threads, subsample: 1 });
    }
}

#[test]
fn subsampled_segments_equal_one_pass() {
    let frames = clip();
    check(&frames, &Plan { models: &["vmaf_v0.6.1"], features: &["psnr"], threads: 0, subsample: 3 });
}

#[test]
fn motion_windows_in_segments_equal_one_pass() {
    // The five-frame window reads the reference two frames back; the
    // moving average carries motion3 from frame to frame.
    let frames = clip();
    let features = &["motion=motion_five_frame_window=true:motion_moving_average=true"];
    check(&frames, &Plan { models: &[], features, threads: 0, subsample: 1 });
}

#[test]
fn float_model_in_segments_equals_one_pass() {
    let frames = synth::clip(Chroma::Yuv420, 10, 96, 64, 10, 7);
    check(&frames, &Plan { models: &["vmaf_float_v0.6.1"], features: &[], threads: 0, subsample: 1 });
}

#[test]
fn v1016_model_in_segments_equals_one_pass() {
    // speed_temporal reads the previous reference and distorted pictures.
    let frames = synth::clip(Chroma::Yuv420, 8, 224, 160, 9, 11);
    check(&frames, &Plan { models: &["vmaf_v1.0.16_3d0h"], features: &[], threads: 0, subsample: 1 });
}
