//! Model scores against libvmaf 3.2.0, bit for bit.
//!
//! libvmaf is fed feature values through its C API
//! (`vmaf_import_feature_score` under the names its predictor looks up,
//! then `vmaf_score_at_index`), and our `ModelDefinition::score` gets the
//! same values. Thousands of random and edge vectors per model: typical
//! ranges, zeros, ones, large motion, tiny and huge values, vectors that hit
//! the clip at 0 and 100, with the transform enabled and disabled and the
//! clip disabled. Custom model files exercise the parts the built-in models
//! do not use (knots, out_lte_in, norm_type none, other clips, the chroma
//! correction of the v1.0.16 models, sparse support vectors).

use crate::support;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr;

use crate::support::synth::Rng;
use vmaf_head_sys as sys;
use vmafx::{LoadFlags, Model, ModelConfig};
use vmafx::internals::model::ModelDefinition;

/// Names libvmaf's predictor reads for the v0.6.1 models (the provided
/// names, or `vmaf_feature_name_from_options` names for non-default options).
const V061: [&str; 6] = [
    "VMAF_integer_feature_adm2_score",
    "VMAF_integer_feature_motion2_score",
    "VMAF_integer_feature_vif_scale0_score",
    "VMAF_integer_feature_vif_scale1_score",
    "VMAF_integer_feature_vif_scale2_score",
    "VMAF_integer_feature_vif_scale3_score",
];
const V061NEG: [&str; 6] = [
    "integer_adm2_egl_1",
    "VMAF_integer_feature_motion2_score",
    "integer_vif_scale0_egl_1",
    "integer_vif_scale1_egl_1",
    "integer_vif_scale2_egl_1",
    "integer_vif_scale3_egl_1",
];

enum Source<'a> {
    Builtin(&'a str),
    Path(&'a Path),
}

/// libvmaf's scores for `vectors`, frame i getting vectors[i].
fn libvmaf_scores(source: &Source<'_>, flags: u64, names: &[&str], vectors: &[Vec<f64>]) -> Vec<f64> {
    let _libvmaf = support::reference::libvmaf_lock();
    // SAFETY: libvmaf's C API under its lock: every return code is
    // checked; names and paths are CStrings alive for the calls that read
    // them; pictures come from vmaf_picture_alloc and go to
    // vmaf_read_pictures, which takes them; model and context freed once.
    unsafe {
        let mut ctx = ptr::null_mut();
        let cfg = support::reference::config(0, 1, support::reference::LibvmafPath::C);
        assert_eq!(sys::vmaf_init(&mut ctx, cfg), 0);
        let model_name = CString::new("vmaf").unwrap();
        let mut mcfg = sys::VmafModelConfig { name: model_name.as_ptr(), flags };
        let mut model = ptr::null_mut();
        match source {
            Source::Builtin(v) => {
                let cv = CString::new(*v).unwrap();
                assert_eq!(sys::vmaf_model_load(&mut model, &mut mcfg, cv.as_ptr()), 0, "load {v}");
            }
            Source::Path(p) => {
                let cp = CString::new(p.to_str().unwrap()).unwrap();
                assert_eq!(sys::vmaf_model_load_from_path(&mut model, &mut mcfg, cp.as_ptr()), 0, "load {p:?}");
            }
        }
        let cnames: Vec<CString> = names.iter().map(|n| CString::new(*n).unwrap()).collect();
        let mut out = Vec::with_capacity(vectors.len());
        for (i, v) in vectors.iter().enumerate() {
            assert_eq!(v.len(), names.len());
            for (n, &x) in cnames.iter().zip(v) {
                assert_eq!(sys::vmaf_import_feature_score(ctx, n.as_ptr(), x, i as u32), 0);
            }
            let mut s = 0.0;
            assert_eq!(sys::vmaf_score_at_index(ctx, model, &mut s, i as u32), 0, "score at {i}");
            out.push(s);
        }
        sys::vmaf_model_destroy(model);
        sys::vmaf_close(ctx);
        out
    }
}

/// Random and edge feature vectors shaped like VMAF's elementary
/// features: `motion_at` is the motion column (None: no motion feature).
fn vectors(n_features: usize, motion_at: Option<usize>, count: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = Rng::new(seed);
    let unit = |rng: &mut Rng| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut out: Vec<Vec<f64>> = Vec::new();
    // Fixed edges: all zero, all one, one with motion 0, large motions,
    // tiny and huge values, negatives, denormals.
    for fill in [0.0, 1.0, 0.5, 1e-300, 5e-324, -0.0, 1e-7, 2.0, 1e10, -1.0] {
        out.push(vec![fill; n_features]);
    }
    for m in [0.0, 0.01, 4.0, 20.0, 25.5, 40.0, 100.0, 1000.0] {
        let mut v = vec![1.0; n_features];
        if let Some(i) = motion_at {
            v[i] = m;
        }
        out.push(v.clone());
        out.push(v.iter().map(|&x| x * 0.98).collect());
    }
    while out.len() < count {
        let kind = rng.below(6);
        let v: Vec<f64> = (0..n_features)
            .map(|f| {
                let is_motion = Some(f) == motion_at;
                match kind {
                    // Typical: quality features in [0, 1], motion in [0, 30].
                    0 | 1 => {
                        if is_motion {
                            unit(&mut rng) * 30.0
                        } else {
                            unit(&mut rng)
                        }
                    }
                    // High quality: near 1 (hits the clip at 100).
                    2 => {
                        if is_motion {
                            unit(&mut rng) * 5.0
                        } else {
                            1.0 - unit(&mut rng) * 0.02
                        }
                    }
                    // Low quality: near 0 (hits the clip at 0).
                    3 => {
                        if is_motion {
                            unit(&mut rng) * 50.0
                        } else {
                            unit(&mut rng) * 0.05
                        }
                    }
                    // Out of range: negative, above 1, large motion.
                    4 => (unit(&mut rng) - 0.3) * if is_motion { 200.0 } else { 3.0 },
                    // Any bits (finite).
                    _ => {
                        let x = f64::from_bits(rng.next_u64());
                        if x.is_finite() { x } else { 0.25 }
                    }
                }
            })
            .collect();
        out.push(v);
    }
    out
}

fn flags_of(cfg: &ModelConfig) -> u64 {
    let mut f = 0;
    if cfg.enable_transform {
        f |= sys::VmafModelFlags_VMAF_MODEL_FLAG_ENABLE_TRANSFORM as u64;
    }
    if cfg.disable_clip {
        f |= sys::VmafModelFlags_VMAF_MODEL_FLAG_DISABLE_CLIP as u64;
    }
    f
}

fn configs() -> Vec<ModelConfig> {
    let mut v = Vec::new();
    for enable_transform in [false, true] {
        for disable_clip in [false, true] {
            v.push(ModelConfig { name: None, enable_transform, disable_clip, ..Default::default() });
        }
    }
    v
}

fn load_flags(cfg: &ModelConfig) -> LoadFlags {
    LoadFlags { enable_transform: cfg.enable_transform, disable_clip: cfg.disable_clip }
}

/// Compares, bit for bit; returns our scores.
fn compare(label: &str, ours: &ModelDefinition, theirs: &[f64], vectors: &[Vec<f64>]) -> Vec<f64> {
    let mut scores = Vec::new();
    for (i, (v, &t)) in vectors.iter().zip(theirs).enumerate() {
        let s = ours.score(v).unwrap();
        assert_eq!(
            s.to_bits(),
            t.to_bits(),
            "{label}: vector {i} {v:?}: ours {s:e} libvmaf {t:e}"
        );
        scores.push(s);
    }
    scores
}

#[test]
fn builtin_models_match_libvmaf() {
    let models: [(&str, &[&str]); 4] = [
        ("vmaf_v0.6.1", &V061),
        ("vmaf_v0.6.1neg", &V061NEG),
        ("vmaf_4k_v0.6.1", &V061),
        ("vmaf_4k_v0.6.1neg", &V061NEG),
    ];
    for (seed, (version, names)) in models.iter().enumerate() {
        let vecs = vectors(6, Some(1), 3000, 1000 + seed as u64);
        for cfg in configs() {
            let theirs = libvmaf_scores(&Source::Builtin(version), flags_of(&cfg), names, &vecs);
            let ours = ModelDefinition::builtin(version, load_flags(&cfg)).unwrap();
            let label = format!("{version} transform={} noclip={}", cfg.enable_transform, cfg.disable_clip);
            let scores = compare(&label, &ours, &theirs, &vecs);
            // The vectors must reach what they are meant to test.
            if !cfg.disable_clip {
                assert!(scores.contains(&0.0), "{label}: no score clipped at 0");
                assert!(scores.contains(&100.0), "{label}: no score clipped at 100");
            } else {
                assert!(scores.iter().any(|&s| s < 0.0), "{label}: nothing below 0");
                assert!(scores.iter().any(|&s| s > 100.0), "{label}: nothing above 100");
            }
            assert!(scores.iter().any(|&s| s > 0.0 && s < 100.0), "{label}: no score inside");
        }
    }
}

#[test]
fn transform_changes_scores() {
    // Sanity that the transform path is really taken for v0.6.1 (and not
    // for the 4k model, which has none).
    let vecs = vectors(6, Some(1), 200, 7);
    let plain = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags::default()).unwrap();
    let trans = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags { enable_transform: true, disable_clip: false }).unwrap();
    assert!(vecs.iter().any(|v| plain.score(v).unwrap() != trans.score(v).unwrap()));
    let k = ModelDefinition::builtin("vmaf_4k_v0.6.1", LoadFlags::default()).unwrap();
    let kt = ModelDefinition::builtin("vmaf_4k_v0.6.1", LoadFlags { enable_transform: true, disable_clip: false }).unwrap();
    assert!(vecs.iter().all(|v| k.score(v).unwrap().to_bits() == kt.score(v).unwrap().to_bits()));
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmafx-model-golden-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The v0.6.1 model file with `model_dict` members replaced or added.
fn custom_model(changes: &[(&str, serde_json::Value)], remove: &[&str]) -> String {
    let text = include_str!("../../models/vmaf_v0.6.1.json");
    let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let dict = doc["model_dict"].as_object_mut().unwrap();
    for k in remove {
        dict.remove(*k);
    }
    for (k, v) in changes {
        dict.insert((*k).to_owned(), v.clone());
    }
    serde_json::to_string_pretty(&doc).unwrap()
}

#[test]
fn custom_models_match_libvmaf() {
    use serde_json::json;
    let dir = temp_dir("custom");
    let cases: Vec<(&str, String, Vec<&str>, Option<usize>)> = vec![
        (
            "knots_lte",
            custom_model(
                &[(
                    "score_transform",
                    json!({"enabled": true, "knots": [[0.0, 0.0], [20.0, 10.0], [60.0, 70.0], [100.0, 100.0]], "out_lte_in": "true"}),
                )],
                &[],
            ),
            V061.to_vec(),
            Some(1),
        ),
        (
            "poly_knots_flat",
            custom_model(
                &[
                    (
                        "score_transform",
                        json!({"enabled": true, "p0": -3.5, "p1": 1.1,
                               "knots": [[0, 5], [30.0, 5], [80.0, 90.0], [100.0, 100.0]], "out_gte_in": "false"}),
                    ),
                    ("score_clip", json!([10.0, 90.0])),
                ],
                &[],
            ),
            V061.to_vec(),
            Some(1),
        ),
        (
            "bad_knots_and_p1_only",
            custom_model(
                &[(
                    "score_transform",
                    json!({"enabled": true, "p1": 0.9, "knots": [[0.0, 0.0], [50.0, 60.0], [40.0, 70.0]]}),
                )],
                &[],
            ),
            V061.to_vec(),
            Some(1),
        ),
        (
            "norm_none_no_clip",
            custom_model(&[("norm_type", json!("none"))], &["score_clip", "score_transform"]),
            V061.to_vec(),
            Some(1),
        ),
        (
            // Three features against the six-dimensional support vectors:
            // the kernel adds the SVs' extra coordinates alone. Chroma
            // correction: speed_chroma 0 is replaced from adm3.
            "chroma_correction_sparse",
            custom_model(
                &[
                    (
                        "feature_names",
                        json!(["VMAF_integer_feature_adm3_score", "Speed_chroma_feature_speed_chroma_uv_score", "VMAF_integer_feature_motion2_score"]),
                    ),
                    ("slopes", json!([0.012020766332648465, 2.8098077502505414, 0.5, 0.06264407466686016])),
                    ("intercepts", json!([-0.3092981927591963, -1.7993968597186747, 0.25, -0.003017198086831897])),
                    ("chroma_correction_parameter", json!(120.0)),
                    ("score_transform", json!({"enabled": true, "p0": 5.0, "p1": 0.98, "p2": -0.00049})),
                    ("score_clip", json!([0, 110.0])),
                ],
                &[],
            ),
            vec!["VMAF_integer_feature_adm3_score", "Speed_chroma_feature_speed_chroma_uv_score", "VMAF_integer_feature_motion2_score"],
            Some(2),
        ),
        (
            "missing_slopes_zero_filled",
            custom_model(&[("slopes", json!([0.012020766332648465, 2.8098077502505414, 0.06264407466686016]))], &["score_transform"]),
            V061.to_vec(),
            Some(1),
        ),
    ];
    for (tag, text, names, motion_at) in cases {
        let path = dir.join(format!("{tag}.json"));
        std::fs::write(&path, &text).unwrap();
        let mut vecs = vectors(names.len(), motion_at, 2000, tag.len() as u64 * 31);
        if tag.starts_with("chroma") {
            // Many vectors with the chroma feature exactly 0.
            for (i, v) in vecs.iter_mut().enumerate() {
                if i % 2 == 0 {
                    v[1] = 0.0;
                }
            }
        }
        for cfg in configs() {
            let theirs = libvmaf_scores(&Source::Path(&path), flags_of(&cfg), &names, &vecs);
            let ours = ModelDefinition::from_path(&path, load_flags(&cfg)).unwrap();
            compare(&format!("{tag} {cfg:?}"), &ours, &theirs, &vecs);
            if tag.starts_with("chroma") {
                // The correction must really have acted.
                let mut plain = ours.clone();
                plain.chroma_correction = None;
                let changed = vecs.iter().filter(|v| plain.score(v).unwrap() != ours.score(v).unwrap()).count();
                assert!(changed > 100, "{tag}: chroma correction changed only {changed} scores");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn models_resolve_to_extractors() {
    // Until the vif and adm extractors are in this build, only check what
    // can be: the motion feature, and a clear refusal for the rest.
    let have_all = ["VMAF_integer_feature_vif_scale0_score", "VMAF_integer_feature_adm2_score"]
        .iter()
        .all(|n| vmafx::internals::feature::find_provider(n).is_ok());
    for (version, names) in [
        ("vmaf_v0.6.1", V061),
        ("vmaf_v0.6.1neg", V061NEG),
        ("vmaf_4k_v0.6.1", V061),
        ("vmaf_4k_v0.6.1neg", V061NEG),
    ] {
        let r = Model::builtin(version, &ModelConfig::default());
        if !have_all {
            assert!(matches!(r, Err(vmafx::Error::NotSupported(_))), "{version}: {:?}", r.err());
            eprintln!("vif/adm extractors not in this build: resolution of {version} checked later");
            continue;
        }
        let m = r.unwrap();
        assert_eq!(m.name(), "vmaf");
        let got: Vec<&str> = m.features().iter().map(|f| f.feature.as_str()).collect();
        assert_eq!(got, names, "{version}");
        let extractors: Vec<&str> = m.features().iter().map(|f| f.extractor.name).collect();
        assert_eq!(extractors, ["adm", "motion", "vif", "vif", "vif", "vif"]);
    }
    let named = ModelConfig { name: Some("vmaf_neg".into()), ..Default::default() };
    if have_all {
        assert_eq!(Model::builtin("vmaf_v0.6.1neg", &named).unwrap().name(), "vmaf_neg");
    }
}

/// libvmaf 3.2.0's built-in models, in its order (`model.c`,
/// `built_in_models[]`), after the float ones (`LIBVMAF_FLOAT_BUILTINS`).
const LIBVMAF_BUILTINS: [&str; 13] = [
    "vmaf_v0.6.1",
    "vmaf_b_v0.6.3",
    "vmaf_v0.6.1neg",
    "vmaf_4k_v0.6.1",
    "vmaf_4k_v0.6.1neg",
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_3d0h_2160",
    "vmaf_v1.0.16_5d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_hfr_3d0h_2160",
    "vmaf_v1.0.16_hfr_5d0h",
    "vmaf_v1.0.16_hfr_1d5h_2160",
];
/// The bootstrap collections among them and the float ones (each a
/// `Model`, not one `ModelDefinition`).
const LIBVMAF_COLLECTIONS: [&str; 2] = ["vmaf_b_v0.6.3", "vmaf_float_b_v0.6.3"];
/// The models libvmaf builds in first when built with its float features
/// (`-Denable_float=true`, the reference's `float` feature), in its order;
/// `vmaf_float_b_v0.6.3` is a bootstrap collection.
const LIBVMAF_FLOAT_BUILTINS: [&str; 4] =
    ["vmaf_float_v0.6.1", "vmaf_float_b_v0.6.3", "vmaf_float_v0.6.1neg", "vmaf_float_4k_v0.6.1"];

/// Every libvmaf built-in is one of ours, in libvmaf's order.
#[test]
fn builtin_list_is_libvmafs() {
    let _libvmaf = support::reference::libvmaf_lock();
    for version in LIBVMAF_FLOAT_BUILTINS.into_iter().chain(LIBVMAF_BUILTINS) {
        let cv = CString::new(version).unwrap();
        // SAFETY: cv and the config outlive the calls; each handle libvmaf
        // gives back is destroyed once.
        let loaded = unsafe {
            let mut mcfg = sys::VmafModelConfig { name: ptr::null(), flags: 0 };
            let mut model = ptr::null_mut();
            if version.contains("_b_v0.6.3") {
                let mut collection = ptr::null_mut();
                let rc = sys::vmaf_model_collection_load(&mut model, &mut collection, &mut mcfg, cv.as_ptr());
                if rc == 0 {
                    sys::vmaf_model_destroy(model);
                    sys::vmaf_model_collection_destroy(collection);
                }
                rc == 0
            } else {
                let rc = sys::vmaf_model_load(&mut model, &mut mcfg, cv.as_ptr());
                if rc == 0 {
                    sys::vmaf_model_destroy(model);
                }
                rc == 0
            }
        };
        assert!(loaded, "libvmaf has no built-in {version}");
    }
    // The check above can fail: a name libvmaf lacks.
    // SAFETY: cv and the config outlive the call; a failed load gives no handle.
    unsafe {
        let cv = CString::new("vmaf_float_v9").unwrap();
        let mut mcfg = sys::VmafModelConfig { name: ptr::null(), flags: 0 };
        let mut model = ptr::null_mut();
        assert_ne!(sys::vmaf_model_load(&mut model, &mut mcfg, cv.as_ptr()), 0, "libvmaf loaded vmaf_float_v9");
    }
    let want: Vec<&str> = LIBVMAF_FLOAT_BUILTINS.into_iter().chain(LIBVMAF_BUILTINS).collect();
    assert_eq!(Model::builtin_versions(), want.as_slice());
    for version in want {
        assert!(Model::builtin(version, &ModelConfig::default()).is_ok(), "{version}");
        let single = ModelDefinition::builtin(version, LoadFlags::default());
        assert_eq!(single.is_ok(), !LIBVMAF_COLLECTIONS.contains(&version), "{version}");
    }
}

#[test]
fn refusals() {
    let dir = temp_dir("refuse");
    let collection = dir.join("collection.json");
    std::fs::write(
        &collection,
        format!("{{\"0\": {t}, \"1\": {t}}}", t = include_str!("../../models/vmaf_v0.6.1.json")),
    )
    .unwrap();
    assert!(matches!(
        ModelDefinition::from_path(&collection, LoadFlags::default()),
        Err(vmafx::Error::NotSupported(_))
    ));
    assert!(matches!(
        ModelDefinition::from_path(&dir.join("vmaf_v0.6.1.pkl"), LoadFlags::default()),
        Err(vmafx::Error::NotSupported(_))
    ));
    assert!(matches!(
        ModelDefinition::from_path(&dir.join("missing.json"), LoadFlags::default()),
        Err(vmafx::Error::Io { .. })
    ));
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{\"model_dict\": {\"norm_type\": \"linear_rescale\", ").unwrap();
    assert!(matches!(ModelDefinition::from_path(&garbage, LoadFlags::default()), Err(vmafx::Error::Model(_))));
    // libvmaf refuses a null p0/p1/p2 or knots (its parser leaves the null
    // unread); so do we.
    for (tag, st) in [("null_p2", r#"{"p1": 1.0, "p2": null}"#), ("null_knots", r#"{"knots": null}"#)] {
        let path = dir.join(format!("{tag}.json"));
        let text = custom_model(&[("score_transform", serde_json::from_str(st).unwrap())], &[]);
        std::fs::write(&path, text).unwrap();
        assert!(ModelDefinition::from_path(&path, LoadFlags::default()).is_err(), "{tag}");
        // SAFETY: a NUL-terminated path and local out values; the load is
        // expected to fail, so there is no model to free.
        unsafe {
            let cp = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            let mut mcfg = sys::VmafModelConfig { name: ptr::null(), flags: 0 };
            let mut model = ptr::null_mut();
            assert_ne!(sys::vmaf_model_load_from_path(&mut model, &mut mcfg, cp.as_ptr()), 0, "libvmaf {tag}");
        }
    }
    assert!(Model::builtin("vmaf_v0.6.2", &ModelConfig::default()).is_err());
    let def = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags::default()).unwrap();
    assert!(def.score(&[1.0; 5]).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
