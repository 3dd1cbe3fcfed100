//! The eight built-in v1.0.16 models (`vmaf_v1.0.16_{3d0h,3d0h_2160,5d0h,
//! 1d5h_2160}` and their `_hfr` twins) against libvmaf 3.2.0's C code on
//! every clip of `tests/support/clips.rs`: every per-frame feature and
//! score and every pooled value as bits, and the JSON log itself (names,
//! order, values) byte for byte but for its version and fps lines.
//!
//! Where libvmaf cannot score a clip vmafx refuses it, saying why: under
//! 216 pixels on both sides cambi refuses it in both (libvmaf's tool then
//! says only "problem flushing context"); where a prescaled chroma plane
//! holds no 5x5 SpEED block libvmaf would read outside its buffers, so
//! only vmafx runs.


use std::sync::Arc;

use crate::support::{clips, reference};
use vmafx::{Context, ContextConfig, CpuLevel, LogFormat, Model, ModelConfig, OwnedPicture, PoolMethod};
use vmafx::internals::score::log::{render_log, LogInput};

const POOLS: [PoolMethod; 4] = [PoolMethod::Mean, PoolMethod::HarmonicMean, PoolMethod::Min, PoolMethod::Max];

/// The models, grouped by their SpEED prescale (a group shares one run:
/// a clip too small for one model's prescale is too small for its group).
const FAMILIES: [&[&str]; 3] = [
    &["vmaf_v1.0.16_3d0h", "vmaf_v1.0.16_1d5h_2160", "vmaf_v1.0.16_hfr_3d0h", "vmaf_v1.0.16_hfr_1d5h_2160"],
    &["vmaf_v1.0.16_3d0h_2160", "vmaf_v1.0.16_hfr_3d0h_2160"],
    &["vmaf_v1.0.16_5d0h", "vmaf_v1.0.16_hfr_5d0h"],
];

fn ours(frames: &[(OwnedPicture, OwnedPicture)], models: &[&str], threads: usize) -> vmafx::Result<Context> {
    let cfg = ContextConfig { threads, cpu: CpuLevel::detect_host(), ..Default::default() };
    let mut ctx = Context::new(cfg)?;
    for version in models {
        let mcfg = ModelConfig { name: Some((*version).into()), ..Default::default() };
        ctx.use_model(Model::builtin(version, &mcfg)?)?;
    }
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

fn spec(models: &[&str]) -> reference::RefSpec {
    reference::RefSpec {
        models: models.iter().map(|v| (v.to_string(), v.to_string())).collect(),
        path: reference::LibvmafPath::C,
        ..Default::default()
    }
}

fn compare(label: &str, ctx: &Context, frames: &[(OwnedPicture, OwnedPicture)], models: &[&str]) -> f64 {
    let names = ctx.collector().names().to_vec();
    let theirs = reference::run(frames, &spec(models), &names);
    let n = frames.len() as u32;
    for name in &names {
        for i in 0..n {
            let (x, y) = (ctx.score_at(name, i), theirs.values[name][i as usize]);
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{label}: {name} frame {i}: ours {x:?}, libvmaf {y:?}");
        }
        for (k, method) in POOLS.iter().enumerate() {
            let x = ctx.pooled(name, *method, 0, n - 1).ok();
            let y = theirs.pooled[name][k];
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{label}: {name} pooled {method:?}: ours {x:?}, libvmaf {y:?}");
        }
    }
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let input = LogInput {
        collector: ctx.collector(),
        frames: n,
        subsample: 1,
        width: w,
        height: h,
        fps: None,
        incomplete: None,
    };
    let log = render_log(LogFormat::Json, &input);
    reference::assert_json_logs_equal(label, &log, &theirs.log_json);
    theirs.pooled[models[0]][0].unwrap_or(f64::NAN)
}

#[test]
fn v1016_models_match_libvmaf_on_the_golden_clips() {
    let mut table = String::new();
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        let (w, h) = (frames[0].0.width(), frames[0].0.height());
        for models in FAMILIES {
            let label = format!("{} ({w}x{h}) {models:?}", clip.name);
            match ours(&frames, models, 0) {
                Ok(ctx) => {
                    let mean = compare(&label, &ctx, &frames, models);
                    table.push_str(&format!("{:<40} {:<26} {mean:.3}\n", clip.name, models[0]));
                }
                Err(e) if w < 216 && h < 216 => {
                    let msg = e.to_string();
                    assert!(msg.contains("cambi") && msg.contains("216"), "{label}: {msg}");
                    assert!(reference::try_run(&frames, &spec(models), &[]).is_err(), "{label}: libvmaf scored it");
                    table.push_str(&format!("{:<40} {:<26} refused (cambi)\n", clip.name, models[0]));
                }
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.contains("speed_chroma") && msg.contains("5x5 block"), "{label}: {msg}");
                    table.push_str(&format!("{:<40} {:<26} refused (speed_chroma)\n", clip.name, models[0]));
                }
            }
        }
    }
    eprintln!("{table}");
}

/// Workers: the same bits as the caller's thread (two clips, the models
/// with and without the prescale).
#[test]
fn v1016_models_on_workers_match_libvmaf() {
    let all = clips::all();
    for clip in all.iter().filter(|c| c.name == "organic_10bit_crf28" || c.name == "fractal_444_crf30") {
        let frames = clips::read_pairs(clip);
        for models in [FAMILIES[0], FAMILIES[2]] {
            let ctx = ours(&frames, models, 3).unwrap_or_else(|e| panic!("{}: {e}", clip.name));
            compare(&format!("{} {models:?} on 3 workers", clip.name), &ctx, &frames, models);
        }
    }
}
