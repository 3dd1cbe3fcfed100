//! libvmaf's float models (`vmaf_float_v0.6.1`, `vmaf_float_v0.6.1neg`,
//! `vmaf_float_4k_v0.6.1`, built in when libvmaf is built with
//! `-Denable_float=true`) against libvmaf 3.2.0's C code: on every clip of
//! `tests/support/clips.rs` and on synthetic clips at 8, 10, 12 and 16
//! bits, every per-frame feature and score and every pooled value as bits,
//! and the JSON log byte for byte but for its version and fps lines.


use std::sync::Arc;

use crate::support::{clips, reference, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, LogFormat, Model, ModelConfig, OwnedPicture};
use vmafx::internals::score::log::{render_log, LogInput};

const MODELS: [&str; 3] = ["vmaf_float_v0.6.1", "vmaf_float_v0.6.1neg", "vmaf_float_4k_v0.6.1"];

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, models: &[&str], threads: usize) -> vmafx::Result<Context> {
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

/// Scores `frames` with `models` both ways; compares every value, every
/// pooled value and the JSON log; returns the first model's mean.
fn check(label: &str, frames: &Clip, models: &[&str], threads: usize) -> f64 {
    let ctx = ours(frames, models, threads).unwrap_or_else(|e| panic!("{label}: vmafx: {e}"));
    let names = ctx.collector().names().to_vec();
    let spec = reference::RefSpec {
        models: models.iter().map(|v| (v.to_string(), v.to_string())).collect(),
        path: reference::LibvmafPath::C,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &names);
    let n = frames.len() as u32;
    for name in &names {
        for i in 0..n {
            let (x, y) = (ctx.score_at(name, i), theirs.values[name][i as usize]);
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{label}: {name} frame {i}: ours {x:?}, libvmaf {y:?}");
        }
        for (k, method) in reference::OUR_POOLS.iter().enumerate() {
            let x = ctx.pooled(name, *method, 0, n - 1).ok();
            let y = theirs.pooled[name][k];
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{label}: {name} pooled {method:?}: ours {x:?}, libvmaf {y:?}");
        }
    }
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let input =
        LogInput { collector: ctx.collector(), frames: n, subsample: 1, width: w, height: h, fps: None, incomplete: None };
    reference::assert_json_logs_equal(label, &render_log(LogFormat::Json, &input), &theirs.log_json);
    theirs.pooled[models[0]][0].unwrap_or(f64::NAN)
}

#[test]
fn float_models_match_libvmaf_on_the_golden_clips() {
    let mut table = String::new();
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        let (w, h) = (frames[0].0.width(), frames[0].0.height());
        let label = format!("{} ({w}x{h})", clip.name);
        let mean = check(&label, &frames, &MODELS, 0);
        table.push_str(&format!("{:<40} {mean:.3}\n", clip.name));
    }
    eprintln!("{table}");
}

/// Each model alone (its features' names as libvmaf gives them), at every
/// depth and layout, odd sizes, a scene cut, and on workers.
#[test]
fn float_models_match_libvmaf_on_synthetic_clips() {
    let cases = [(Chroma::Yuv420, 176, 144), (Chroma::Yuv422, 67, 45), (Chroma::Yuv444, 41, 37)];
    let mut k = 0;
    for bits in [8u8, 10, 12, 16] {
        for (chroma, w, h) in cases {
            k += 1;
            let mut frames = synth::clip(chroma, bits, w, h, 3, 40 + k);
            frames.extend(synth::clip(chroma, bits, w, h, 3, 140 + k));
            for model in MODELS {
                let label = format!("{model} {bits}-bit {w}x{h} {chroma:?}");
                let mean = check(&label, &frames, &[model], 0);
                assert!(mean > 1.0 && mean < 100.0, "{label}: mean {mean}");
            }
        }
    }
    let frames = synth::clip(Chroma::Yuv420, 10, 96, 64, 8, 7);
    check("float models, 3 threads", &frames, &MODELS, 3);
}

/// The speed of the float models against libvmaf's, in this process, as a
/// ratio (never asserted): `cargo test --test golden --
/// --ignored --nocapture float_models::speed`. Both on one thread; libvmaf on its C code
/// and on its best SIMD (its float convolutions have an AVX path).
#[test]
#[ignore]
fn speed_ratio_against_libvmaf() {
    use std::time::Instant;
    let clip = clips::all().into_iter().max_by_key(|c| c.width * c.height * c.frames).unwrap();
    let frames = clips::read_pairs(&clip);
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let model = ["vmaf_float_v0.6.1"];
    let spec = |path| reference::RefSpec {
        models: vec![(model[0].into(), model[0].into())],
        path,
        ..Default::default()
    };
    let mut times: [Vec<f64>; 3] = Default::default();
    for _ in 0..3 {
        let t = Instant::now();
        ours(&frames, &model, 0).unwrap();
        times[0].push(t.elapsed().as_secs_f64());
        for (k, path) in [(1, reference::LibvmafPath::C), (2, reference::LibvmafPath::Avx512)] {
            let t = Instant::now();
            reference::run(&frames, &spec(path), &[]);
            times[k].push(t.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [a, b, c] = times.map(|mut v| median(&mut v));
    eprintln!(
        "{} ({w}x{h}, {} frames), vmaf_float_v0.6.1, 1 thread: vmafx {a:.3}s, libvmaf C {b:.3}s ({:.2}x), \
         libvmaf best SIMD {c:.3}s ({:.2}x)",
        clip.name,
        frames.len(),
        b / a,
        c / a
    );
}
