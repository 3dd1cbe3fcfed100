//! The order of names in the logs, against libvmaf 3.2.0's own logs byte
//! for byte: with a thread pool libvmaf runs its TEMPORAL extractors
//! (psnr, speed_temporal) on the calling thread before the pool's job for
//! the frame, so their features come first; without one, everything
//! follows the order extractors were added (a model's first). FFmpeg's
//! libvmaf filter with `n_threads` and the `vmaf` tool with `--threads`
//! log so, and vmafx does the same at the same thread counts.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, LogFormat, Model, ModelConfig, OwnedPicture};
use vmafx::internals::score::log::{render_log, LogInput};

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn compare(frames: &Clip, features: &[&str], threads: u32, subsample: u32) -> Vec<String> {
    let cfg = ContextConfig { threads: threads as usize, subsample, ..Default::default() };
    let mut ctx = Context::new(cfg).unwrap();
    ctx.use_model(Model::builtin("vmaf_v0.6.1", &ModelConfig::default()).unwrap()).unwrap();
    for f in features {
        ctx.use_feature(f, FeatureOptions::new()).unwrap();
    }
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    let spec = reference::RefSpec {
        models: vec![("vmaf_v0.6.1".into(), "vmaf".into())],
        features: features.iter().map(|f| (f.to_string(), vec![])).collect(),
        threads,
        subsample,
        path: LibvmafPath::C,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &[]);
    let input = LogInput {
        collector: ctx.collector(),
        frames: frames.len() as u32,
        subsample,
        width: frames[0].0.width(),
        height: frames[0].0.height(),
        fps: None,
        incomplete: None,
    };
    let what = format!("{features:?} threads {threads} subsample {subsample}");
    reference::assert_json_logs_equal(&what, &render_log(LogFormat::Json, &input), &theirs.log_json);
    frame0_names(&theirs.log_json)
}

/// Metric names of frame 0 in the order the JSON log prints them.
fn frame0_names(log: &str) -> Vec<String> {
    log.lines()
        .skip_while(|l| !l.contains("\"metrics\": {"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('}'))
        .map(|l| l.trim().split('"').nth(1).unwrap_or("").to_owned())
        .collect()
}

#[test]
fn temporal_features_come_first_with_threads_as_in_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 64, 48, 4, 1);
    let features = ["float_ssim", "psnr"];
    let plain = compare(&frames, &features, 0, 1);
    assert_eq!(plain[0], "integer_adm2", "{plain:?}");
    for threads in [1, 2, 3] {
        let names = compare(&frames, &features, threads, 1);
        assert_eq!(names[..3], ["psnr_y", "psnr_cb", "psnr_cr"], "threads {threads}: {names:?}");
    }
    // (With a subsample rate and threads, libvmaf's threads race to write
    // motion's SAD first: no order to compare with.)
    compare(&frames, &features, 0, 2);
    let large = synth::clip(Chroma::Yuv420, 10, 256, 224, 3, 2);
    compare(&large, &["speed_temporal", "psnr"], 2, 1);
    compare(&large, &["speed_temporal", "psnr"], 0, 1);
}
