//! Model feature overloads (`--model version=vmaf_v0.6.1:vif.vif_enhn_gain_limit=1.0`,
//! the filter's `model=` the same) against libvmaf 3.2.0's
//! `vmaf_model_feature_overload` / `vmaf_model_collection_feature_overload`:
//! every per-frame feature and score, every pooled value as bits, the
//! feature names the overloaded options give, and the logs in all four
//! formats byte for byte (but for the version and fps lines). Then the
//! refusals: where libvmaf silently ignores an overload, vmafx names it.


use std::sync::Arc;

use crate::support::logs::assert_every_log_same;
use crate::support::{reference, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOverload, Model, ModelConfig, OwnedPicture};
use vmafx::internals::score::log::LogInput;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

/// (version, name, overloads as "extractor.option=value").
type Case<'a> = (&'a str, &'a str, &'a [&'a str]);

fn overloads(list: &[&str]) -> Vec<FeatureOverload> {
    list.iter()
        .map(|o| {
            let (key, value) = o.split_once('=').unwrap();
            FeatureOverload::parse(key, value).unwrap()
        })
        .collect()
}

fn model(version: &str, name: &str, list: &[&str]) -> vmafx::Result<Model> {
    let cfg = ModelConfig { name: Some(name.into()), overloads: overloads(list), ..Default::default() };
    Model::builtin(version, &cfg)
}

/// Scores `frames` with `models` in vmafx and libvmaf; compares every
/// value and every log. Returns the collector's feature names.
fn compare(label: &str, frames: &Clip, models: &[Case<'_>], threads: usize) -> Vec<String> {
    let cfg = ContextConfig { threads, cpu: CpuLevel::detect_host(), ..Default::default() };
    let mut ctx = Context::new(cfg).unwrap();
    for (version, name, list) in models {
        ctx.use_model(model(version, name, list).unwrap_or_else(|e| panic!("{label}: {e}"))).unwrap();
    }
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    let names = ctx.collector().names().to_vec();
    let spec = reference::RefSpec {
        models: models.iter().map(|(v, n, _)| (v.to_string(), n.to_string())).collect(),
        overloads: models
            .iter()
            .map(|(_, _, list)| {
                overloads(list).into_iter().map(|o| (o.extractor, o.option, o.value)).collect()
            })
            .collect(),
        path: reference::LibvmafPath::C,
        threads: threads as u32,
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
    names
}

fn has(names: &[String], want: &[&str]) {
    for w in want {
        assert!(names.iter().any(|n| n == w), "no feature {w} among {names:?}");
    }
}

/// v0.6.1 with the neg model's gain limits gives the neg model's feature
/// names; motion forced to zero; a value normalised as libvmaf stores it
/// (1.23456789 becomes 1.23457); the same model plain and overloaded side
/// by side (two instances of each extractor), on workers too.
#[test]
fn integer_models_with_overloads_match_libvmaf() {
    let mut frames = synth::clip(Chroma::Yuv420, 8, 176, 144, 4, 11);
    frames.extend(synth::clip(Chroma::Yuv420, 8, 176, 144, 3, 12));
    let egl: &[&str] = &["vif.vif_enhn_gain_limit=1.0", "adm.adm_enhn_gain_limit=1.0"];
    let names = compare("v0.6.1 egl", &frames, &[("vmaf_v0.6.1", "vmaf", egl)], 0);
    has(&names, &["integer_adm2_egl_1", "integer_vif_scale0_egl_1", "VMAF_integer_feature_motion2_score"]);
    let names = compare("v0.6.1 force_0", &frames, &[("vmaf_v0.6.1", "vmaf", &["motion.motion_force_zero=true"])], 0);
    has(&names, &["integer_motion2_force_0", "VMAF_integer_feature_adm2_score"]);
    let names = compare("neg normalised", &frames, &[("vmaf_v0.6.1neg", "neg", &["adm.adm_enhn_gain_limit=1.23456789"])], 0);
    has(&names, &["integer_adm2_egl_1.23457", "integer_vif_scale0_egl_1"]);
    let names = compare(
        "plain beside overloaded, 3 threads",
        &frames,
        &[
            ("vmaf_v0.6.1", "plain", &[]),
            ("vmaf_v0.6.1", "over", &["vif.vif_enhn_gain_limit=1.5", "motion.motion_force_zero=true", "vif.vif_enhn_gain_limit=1.2"]),
        ],
        3,
    );
    has(&names, &["VMAF_integer_feature_vif_scale0_score", "integer_vif_scale0_egl_1.2", "integer_motion2_force_0"]);
    assert!(!names.iter().any(|n| n.contains("egl_1.5")), "a later overload replaces an earlier one: {names:?}");
}

/// A collection: the overload reaches member 0 and every member.
#[test]
fn collection_with_overloads_matches_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 10, 96, 64, 5, 21);
    let names = compare("b egl", &frames, &[("vmaf_b_v0.6.3", "vmaf", &["adm.adm_enhn_gain_limit=1.1"])], 0);
    has(&names, &["integer_adm2_egl_1.1", "vmaf_bagging", "vmaf_0020"]);
}

/// The float model (its extractor is `float_adm`) and a v1.0.16 model
/// (CAMBI's options; ADM's on top of the model's own).
#[test]
fn float_and_v1016_models_with_overloads_match_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 64, 48, 3, 31);
    let names = compare("float egl", &frames, &[("vmaf_float_v0.6.1", "vmaf", &["float_adm.adm_enhn_gain_limit=1.0"])], 0);
    assert!(names.iter().any(|n| n.contains("adm2") && n.contains("egl_1")), "{names:?}");
    let frames = synth::clip(Chroma::Yuv420, 10, 256, 224, 3, 32);
    let names = compare(
        "v1.0.16",
        &frames,
        &[("vmaf_v1.0.16_3d0h", "vmaf", &["cambi.window_size=33", "adm.adm_enhn_gain_limit=1.0"])],
        0,
    );
    assert!(names.iter().any(|n| n.contains("cambi") && n.contains("ws_33")), "{names:?}");
}

#[test]
fn overloads_libvmaf_would_ignore_are_refused_by_name() {
    for (list, words) in [
        (&["vfi.vif_enhn_gain_limit=1.0"][..], &["vfi.vif_enhn_gain_limit=1.0", "no such feature extractor", "adm, motion, vif"][..]),
        (&["psnr.enable_chroma=false"], &["psnr.enable_chroma", "reads no feature of that extractor"]),
        (&["vif.vif_enhn_gain"], &["vif.vif_enhn_gain", "no option", "vif_enhn_gain_limit"]),
        (&["vif.egl=1.0"], &["alias of vif_enhn_gain_limit"]),
        (&["vif.vif_enhn_gain_limit=0.5"], &["vif_enhn_gain_limit", "outside [1, 100]"]),
        (&["motion.motion_force_zero=1"], &["motion_force_zero", "true or false"]),
    ] {
        // A value-less entry stands for one with an empty value.
        let list: Vec<String> = list.iter().map(|o| if o.contains('=') { o.to_string() } else { format!("{o}=1") }).collect();
        let list: Vec<&str> = list.iter().map(String::as_str).collect();
        let e = model("vmaf_v0.6.1", "vmaf", &list).unwrap_err().to_string();
        for w in words {
            assert!(e.contains(w), "{list:?}: {e}");
        }
    }
    assert!(FeatureOverload::parse("vif", "1").is_err());
    assert!(FeatureOverload::parse("vif.a.b", "1").is_err());
    assert!(FeatureOverload::parse(".x", "1").is_err());
}

/// The filter's `model=` takes the same overloads (FFmpeg's libvmaf filter
/// syntax, `|` between models, quoting as `av_get_token`): its models
/// read the overloaded features, and the same refusals reach its error.
#[test]
fn filter_model_option_takes_overloads() {
    use vmafx::internals::avfilter::Filter;
    use vmafx::internals::avfilter::options::RawOptions;
    let raw = |model| RawOptions { model: Some(model), n_subsample: 1, ..Default::default() };
    let f = Filter::new(&raw(
        "version=vmaf_v0.6.1:name=over:adm.adm_enhn_gain_limit='1.0':motion.motion_force_zero=true|version=vmaf_b_v0.6.3:vif.vif_enhn_gain_limit=1.23456789",
    ))
    .unwrap();
    let models = f.context().models();
    let features = |k: usize| -> Vec<&str> { models[k].features().iter().map(|f| f.feature.as_str()).collect() };
    let direct = model("vmaf_v0.6.1", "over", &["adm.adm_enhn_gain_limit=1.0", "motion.motion_force_zero=true"]).unwrap();
    let want: Vec<&str> = direct.features().iter().map(|f| f.feature.as_str()).collect();
    assert_eq!(features(0), want);
    assert_eq!(features(0)[..2], ["integer_adm2_egl_1", "integer_motion2_force_0"]);
    assert!(features(1).contains(&"integer_vif_scale3_egl_1.23457"), "{:?}", features(1));
    for (model, words) in [
        ("version=vmaf_v0.6.1:vfi.vif_enhn_gain_limit=1.0", &["vfi.vif_enhn_gain_limit=1.0", "no such feature extractor"][..]),
        ("version=vmaf_v0.6.1:float_vif.vif_enhn_gain_limit=1.0", &["reads no feature of that extractor"]),
        ("version=vmaf_v0.6.1:adm.egl=1.0", &["alias of adm_enhn_gain_limit"]),
        ("version=vmaf_v0.6.1:vif.=1.0", &["no feature overload"]),
    ] {
        let e = Filter::new(&raw(model)).err().unwrap_or_else(|| panic!("{model}: accepted")).to_string();
        for w in words {
            assert!(e.contains(w), "{model}: {e}");
        }
    }
}

/// `--feature` values (and the filter's `feature=`) go through the same
/// normalisation as libvmaf's `vmaf_feature_dictionary_set`: 1.23456789
/// acts as 1.23457, in the value and in the name.
#[test]
fn feature_option_values_are_stored_as_libvmaf_stores_them() {
    let frames = synth::clip(Chroma::Yuv420, 8, 176, 144, 4, 11);
    let (name, options) = vmafx::internals::option_strings::parse_feature("adm=adm_enhn_gain_limit=1.23456789").unwrap();
    let mut ctx = Context::new(ContextConfig { cpu: CpuLevel::detect_host(), ..Default::default() }).unwrap();
    ctx.use_feature(&name, options).unwrap();
    for (r, d) in &frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    let names = ctx.collector().names().to_vec();
    has(&names, &["integer_adm2_egl_1.23457", "integer_aim_egl_1.23457"]);
    let spec = reference::RefSpec {
        features: vec![("adm".into(), vec![("adm_enhn_gain_limit".into(), "1.23456789".into())])],
        ..Default::default()
    };
    let theirs = reference::run(&frames, &spec, &names);
    reference::assert_context_equals(&ctx, &theirs, &names, "adm egl 1.23456789");
}
