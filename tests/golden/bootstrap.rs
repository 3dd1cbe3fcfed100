//! The bootstrap model collections `vmaf_b_v0.6.3` and (its float
//! features' twin) `vmaf_float_b_v0.6.3` against libvmaf 3.2.0:
//! member 0's score ("vmaf"), the twenty members' ("vmaf_0001" ...),
//! "vmaf_bagging", "vmaf_stddev", "vmaf_ci_p95_lo" and "vmaf_ci_p95_hi",
//! per frame and pooled, as bits, and the logs in all four formats byte
//! for byte (but for the version and fps lines).
//!
//! Two sources of frames: thousands of random and edge feature vectors fed
//! to libvmaf's collection through `vmaf_import_feature_score` (with the
//! transform on and off, the clip on and off), and the golden clips scored
//! end to end (every bit depth, chroma layout and odd size they hold).


use std::ffi::CString;
use std::ptr;
use std::sync::Arc;

use crate::support::synth::Rng;
use crate::support::logs::assert_every_log_same;
use crate::support::{clips, reference};
use vmaf_head_sys as sys;
use vmafx::{Context, ContextConfig, CpuLevel, Model, ModelConfig, OwnedPicture};
use vmafx::internals::score::log::LogInput;

const COLLECTION: &str = "vmaf_b_v0.6.3";
const FLOAT_COLLECTION: &str = "vmaf_float_b_v0.6.3";

const V061: [&str; 6] = [
    "VMAF_integer_feature_adm2_score",
    "VMAF_integer_feature_motion2_score",
    "VMAF_integer_feature_vif_scale0_score",
    "VMAF_integer_feature_vif_scale1_score",
    "VMAF_integer_feature_vif_scale2_score",
    "VMAF_integer_feature_vif_scale3_score",
];
/// The same features from libvmaf's float extractors.
const FLOAT_V061: [&str; 6] = [
    "VMAF_feature_adm2_score",
    "VMAF_feature_motion2_score",
    "VMAF_feature_vif_scale0_score",
    "VMAF_feature_vif_scale1_score",
    "VMAF_feature_vif_scale2_score",
    "VMAF_feature_vif_scale3_score",
];

/// Every name the collection writes, in our order.
fn output_names(model: &Model) -> Vec<String> {
    std::iter::once(model.name()).chain(model.bootstrap_names()).map(str::to_owned).collect()
}

/// Feature vectors shaped like v0.6.1's: adm2, motion2, vif scales 0-3,
/// from plausible values to the edges (zeros, ones, past one, large motion).
fn vectors(count: usize, seed: u64) -> Vec<Vec<f64>> {
    fn unit(rng: &mut Rng) -> f64 {
        rng.below(1_000_001) as f64 / 1_000_000.0
    }
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| match i % 10 {
            0 => vec![0.0; 6],
            1 => vec![1.0, 0.0, 1.0, 1.0, 1.0, 1.0],
            2 => vec![1.2, 60.0, 1.1, 1.1, 1.1, 1.1],
            _ => {
                let q = unit(&mut rng);
                (0..6)
                    .map(|k| match k {
                        1 => unit(&mut rng) * 30.0,
                        // Correlated with a quality level, with noise.
                        _ => (q * 1.05 + (unit(&mut rng) - 0.5) * 0.2).max(0.0),
                    })
                    .collect()
            }
        })
        .collect()
}

/// libvmaf's value of each of `names` at each vector (the values of
/// `features`) for `collection`: member 0 through `vmaf_score_at_index`,
/// the collection through `vmaf_score_at_index_model_collection`.
fn libvmaf_values(collection_version: &str, features: &[&str], flags: u64, names: &[String], vectors: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let _libvmaf = reference::libvmaf_lock();
    // SAFETY: every pointer handed to libvmaf outlives the call; the
    // context, model and collection are destroyed once, at the end.
    unsafe {
        let mut ctx = ptr::null_mut();
        assert_eq!(sys::vmaf_init(&mut ctx, reference::config(0, 1, reference::LibvmafPath::C)), 0);
        let name = CString::new("vmaf").unwrap();
        let version = CString::new(collection_version).unwrap();
        let mut mcfg = sys::VmafModelConfig { name: name.as_ptr(), flags };
        let (mut model, mut collection) = (ptr::null_mut(), ptr::null_mut());
        assert_eq!(sys::vmaf_model_collection_load(&mut model, &mut collection, &mut mcfg, version.as_ptr()), 0);
        let features: Vec<CString> = features.iter().map(|n| CString::new(*n).unwrap()).collect();
        let cnames: Vec<CString> = names.iter().map(|n| CString::new(n.as_str()).unwrap()).collect();
        let mut out = Vec::new();
        for (i, v) in vectors.iter().enumerate() {
            let i = i as u32;
            for (f, &x) in features.iter().zip(v) {
                assert_eq!(sys::vmaf_import_feature_score(ctx, f.as_ptr(), x, i), 0);
            }
            let mut s = 0.0;
            assert_eq!(sys::vmaf_score_at_index(ctx, model, &mut s, i), 0);
            let mut score: sys::VmafModelCollectionScore = std::mem::zeroed();
            assert_eq!(sys::vmaf_score_at_index_model_collection(ctx, collection, &mut score, i), 0);
            let row = cnames
                .iter()
                .map(|n| {
                    let mut x = 0.0;
                    assert_eq!(sys::vmaf_feature_score_at_index(ctx, n.as_ptr(), &mut x, i), 0, "{n:?}");
                    x
                })
                .collect();
            out.push(row);
        }
        sys::vmaf_model_destroy(model);
        sys::vmaf_model_collection_destroy(collection);
        sys::vmaf_close(ctx);
        out
    }
}

#[test]
fn collection_matches_libvmaf_on_feature_vectors() {
    collection_on_feature_vectors(COLLECTION, &V061, 63);
}

#[test]
fn float_collection_matches_libvmaf_on_feature_vectors() {
    collection_on_feature_vectors(FLOAT_COLLECTION, &FLOAT_V061, 64);
}

fn collection_on_feature_vectors(collection: &str, features: &[&str], seed: u64) {
    let vecs = vectors(2000, seed);
    for (enable_transform, disable_clip) in [(false, false), (true, false), (false, true), (true, true)] {
        let cfg = ModelConfig { name: None, enable_transform, disable_clip, ..Default::default() };
        let model = Model::builtin(collection, &cfg).unwrap();
        let ours: Vec<&str> = model.features().iter().map(|f| f.feature.as_str()).collect();
        assert_eq!(ours, features, "{collection}: the features it reads");
        let names = output_names(&model);
        assert_eq!(names.len(), 1 + 20 + 4);
        assert_eq!(names[..2], ["vmaf", "vmaf_0001"]);
        assert_eq!(names[21..], ["vmaf_bagging", "vmaf_stddev", "vmaf_ci_p95_lo", "vmaf_ci_p95_hi"]);
        let mut flags = 0u64;
        if enable_transform {
            flags |= sys::VmafModelFlags_VMAF_MODEL_FLAG_ENABLE_TRANSFORM as u64;
        }
        if disable_clip {
            flags |= sys::VmafModelFlags_VMAF_MODEL_FLAG_DISABLE_CLIP as u64;
        }
        let theirs = libvmaf_values(collection, features, flags, &names, &vecs);
        let label = format!("{collection} transform={enable_transform} noclip={disable_clip}");
        let (mut clipped, mut spread) = (0, 0);
        for (i, (v, t)) in vecs.iter().zip(&theirs).enumerate() {
            let mut ours = vec![model.score(v).unwrap()];
            model.bootstrap_scores(v, &mut ours).unwrap();
            for ((n, a), b) in names.iter().zip(&ours).zip(t) {
                assert_eq!(a.to_bits(), b.to_bits(), "{label}: vector {i} {v:?}: {n}: ours {a:e}, libvmaf {b:e}");
            }
            clipped += usize::from(ours[21] == 100.0 || ours[21] == 0.0);
            spread += usize::from(ours[22] > 0.0 && ours[23] < ours[24]);
        }
        // The vectors reach what they test: clipped bagging scores (with
        // the clip on), and members that disagree.
        assert_eq!(clipped > 0, !disable_clip, "{label}: {clipped} clipped bagging scores");
        assert!(spread > vecs.len() / 4, "{label}: only {spread} frames with a spread");
    }
}

fn ours(frames: &[(OwnedPicture, OwnedPicture)], models: &[(&str, &str)], threads: usize) -> Context {
    let cfg = ContextConfig { threads, cpu: CpuLevel::detect_host(), ..Default::default() };
    let mut ctx = Context::new(cfg).unwrap();
    for (version, name) in models {
        let mcfg = ModelConfig { name: Some((*name).into()), ..Default::default() };
        ctx.use_model(Model::builtin(version, &mcfg).unwrap()).unwrap();
    }
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    ctx
}

/// Scores `frames` with `models` ((version, name); collections among
/// them) in vmafx and libvmaf and compares everything; returns libvmaf's
/// pooled mean of the first collection's bagging score.
fn compare(label: &str, frames: &[(OwnedPicture, OwnedPicture)], models: &[(&str, &str)], threads: usize) -> f64 {
    let ctx = ours(frames, models, threads);
    let names = ctx.collector().names().to_vec();
    let spec = reference::RefSpec {
        models: models.iter().map(|(v, n)| (v.to_string(), n.to_string())).collect(),
        path: reference::LibvmafPath::C,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &names);
    reference::assert_context_equals(&ctx, &theirs, &names, label);
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let input = LogInput {
        collector: ctx.collector(),
        frames: frames.len() as u32,
        subsample: 1,
        width: w,
        height: h,
        fps: None,
        incomplete: None,
    };
    assert_every_log_same(label, &input, &theirs.log_json, &theirs.log_others);
    let bagging = models.iter().find(|(v, _)| v.contains("_b_v0.6.3")).map(|(_, n)| format!("{n}_bagging")).unwrap();
    theirs.pooled[&bagging][0].unwrap()
}

#[test]
fn vmaf_b_matches_libvmaf_on_the_golden_clips() {
    let mut table = String::new();
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        let bagging = compare(&clip.name, &frames, &[(COLLECTION, "vmaf")], 0);
        table.push_str(&format!("{:<40} vmaf_bagging {bagging:.3}\n", clip.name));
    }
    eprintln!("{table}");
}

#[test]
fn vmaf_float_b_matches_libvmaf_on_the_golden_clips() {
    let mut table = String::new();
    for clip in clips::all() {
        let frames = clips::read_pairs(&clip);
        let bagging = compare(&clip.name, &frames, &[(FLOAT_COLLECTION, "vmaf")], 0);
        table.push_str(&format!("{:<40} vmaf_float_b bagging {bagging:.3}\n", clip.name));
    }
    eprintln!("{table}");
}

/// Both collections and the float model in one context, on workers: each
/// collection's names follow every plain model's, in the order given.
#[test]
fn float_collection_beside_the_integer_one_on_workers() {
    let all = clips::all();
    let clip = all.iter().find(|c| c.name == "organic_10bit_crf28").unwrap();
    let frames = clips::read_pairs(clip);
    compare(
        "float_b, b, float",
        &frames,
        &[(FLOAT_COLLECTION, "fb"), (COLLECTION, "b"), ("vmaf_float_v0.6.1", "f")],
        2,
    );
}

/// A collection beside plain models, in either order, named, on workers:
/// libvmaf's tool scores every model before any collection, which fixes
/// the order of names in its logs.
#[test]
fn collection_beside_models_on_workers() {
    let all = clips::all();
    let clip = all.iter().find(|c| c.name == "organic_10bit_crf28").unwrap();
    let frames = clips::read_pairs(clip);
    compare("collection first", &frames, &[(COLLECTION, "boot"), ("vmaf_v0.6.1", "plain")], 3);
    compare("collection last", &frames, &[("vmaf_v0.6.1neg", "neg"), (COLLECTION, "b")], 2);
}

#[test]
fn collection_refusals() {
    let plain = include_str!("../../models/vmaf_v0.6.1.json");
    // Members of a plain model type: libvmaf loads it but cannot score it.
    let text = format!("{{\"0\": {plain}, \"1\": {plain}}}");
    let e = Model::from_json(&text, &ModelConfig::default()).unwrap_err().to_string();
    assert!(e.contains("bootstrap"), "{e}");
    // Member 0 alone is no collection.
    let boot = include_str!("../../models/vmaf_b_v0.6.3.json");
    let doc: serde_json::Value = serde_json::from_str(boot).unwrap();
    let only0 = serde_json::json!({ "0": doc["0"] }).to_string();
    let e = Model::from_json(&only0, &ModelConfig::default()).unwrap_err().to_string();
    assert!(e.contains("\"1\""), "{e}");
    // Members must be numbered from 0 without gaps: "2" without "1" is skipped.
    let gap = serde_json::json!({ "0": doc["0"], "2": doc["2"] }).to_string();
    assert!(Model::from_json(&gap, &ModelConfig::default()).is_err());
    // A file path loads the same collection as the built-in.
    let dir = std::env::temp_dir().join(format!("vmafx-bootstrap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("b.json");
    std::fs::write(&path, boot).unwrap();
    let m = Model::from_path(&path, &ModelConfig::default()).unwrap();
    assert_eq!(m.bootstrap_names().count(), 24);
    let _ = std::fs::remove_dir_all(&dir);
}
