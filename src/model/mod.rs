//! libvmaf models (libvmaf 3.2.0 `model.c`, `read_json_model.c`,
//! `predict.c`, `svm.cpp`): JSON model files, the built-in models, libsvm
//! prediction, normalisation, score transform and clipping, bit for bit.
//!
//! Two layers:
//! - [`ModelDefinition`] is the model file as libvmaf reads it: libvmaf
//!   feature names with their option dictionaries, and
//!   [`ModelDefinition::score`], which gives libvmaf's double for the same
//!   feature values.
//! - [`Model`] ties each feature to the vmafx extractor that provides it
//!   (as libvmaf's `vmaf_get_feature_extractor_by_feature_name`) and to the
//!   name its values have in the collector (`vmaf_feature_name_from_options`,
//!   e.g. "integer_adm2_egl_1" for `adm_enhn_gain_limit: 1.0`).
//!
//! A model collection (a bootstrap model such as `vmaf_b_v0.6.3`: members
//! "0", "1", ...) is one [`Model`] too: member 0 scores under the model's
//! name, and [`Model::bootstrap_names`] lists what the others add
//! (`bootstrap.rs`).

mod bootstrap;
mod builtin;
pub(crate) mod definition;
pub(crate) mod json;
pub(crate) mod svm;

pub(crate) use definition::{LoadFlags, ModelDefinition};

use crate::feature::{ExtractorDescriptor, FeatureOptions};
use crate::{Error, Result};

/// Name of a model's scores when the configuration gives none, as libvmaf
/// (`vmaf_model_generate_name`), its `vmaf` tool and FFmpeg name them.
pub(crate) const DEFAULT_MODEL_NAME: &str = "vmaf";

/// One feature a model reads.
#[derive(Clone)]
pub struct ModelFeature {
    pub extractor: &'static ExtractorDescriptor,
    pub options: FeatureOptions,
    /// Name of the feature in the collector.
    pub feature: String,
}

impl std::fmt::Debug for ModelFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelFeature")
            .field("extractor", &self.extractor.name)
            .field("options", &self.options)
            .field("feature", &self.feature)
            .finish()
    }
}

/// How to load a model (libvmaf's `VmafModelConfig`, its flags, and the
/// feature overloads its tool and FFmpeg's filter apply after loading).
#[derive(Clone, Debug, Default)]
pub struct ModelConfig {
    /// Name its scores get in the collector and logs; default "vmaf".
    pub name: Option<String>,
    /// Apply the model's score_transform (libvmaf VMAF_MODEL_FLAG_ENABLE_TRANSFORM).
    pub enable_transform: bool,
    /// Skip score_clip (libvmaf VMAF_MODEL_FLAG_DISABLE_CLIP).
    pub disable_clip: bool,
    /// `<extractor>.<option>=value` overloads, applied in order to every
    /// feature the model (each member of a collection) reads from that
    /// extractor.
    pub overloads: Vec<FeatureOverload>,
}

/// One `<extractor>.<option>=value` of a model option string
/// (`--model version=vmaf_v0.6.1:vif.vif_enhn_gain_limit=1.0`): libvmaf's
/// `vmaf_model_feature_overload` with a dictionary of one entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureOverload {
    /// libvmaf's extractor name ("vif", "float_adm"), not a feature name.
    pub extractor: String,
    /// The option's full name ("vif_enhn_gain_limit"): libvmaf matches a
    /// model's options by name, never by alias.
    pub option: String,
    /// The value as given; stored as libvmaf stores it (numbers through
    /// `strtof` and `%g`) when applied.
    pub value: String,
}

impl FeatureOverload {
    /// `key` ("vif.vif_enhn_gain_limit") and its value. A key with no '.'
    /// is no overload: an error that names it.
    pub fn parse(key: &str, value: &str) -> Result<FeatureOverload> {
        match key.split_once('.') {
            Some((extractor, option)) if !extractor.is_empty() && !option.is_empty() && !option.contains('.') => {
                Ok(FeatureOverload { extractor: extractor.to_owned(), option: option.to_owned(), value: value.to_owned() })
            }
            _ => Err(Error::invalid(format!(
                "\"{key}\" is no feature overload (expected <extractor>.<option>=value, e.g. vif.vif_enhn_gain_limit=1.0)"
            ))),
        }
    }
}

impl std::fmt::Display for FeatureOverload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}={}", self.extractor, self.option, self.value)
    }
}

impl ModelConfig {
    fn flags(&self) -> LoadFlags {
        LoadFlags { enable_transform: self.enable_transform, disable_clip: self.disable_clip }
    }
}

/// A model ready to score: its definition and the extractors it needs.
#[derive(Clone, Debug)]
pub struct Model {
    name: String,
    features: Vec<ModelFeature>,
    definition: ModelDefinition,
    /// Members 1.. of a model collection (`None` for a single model).
    bootstrap: Option<bootstrap::Bootstrap>,
}

impl ModelDefinition {
    /// A built-in model by version (`vmaf_model_load`).
    pub fn builtin(version: &str, flags: LoadFlags) -> Result<ModelDefinition> {
        let text = builtin::find(version).ok_or_else(|| {
            Error::Model(format!(
                "no such built-in model: \"{version}\" (built-in: {})",
                builtin::BUILTIN_VERSIONS.join(", ")
            ))
        })?;
        ModelDefinition::from_json(text, flags)
    }

    /// A model from a JSON file (`vmaf_model_load_from_path`).
    pub fn from_path(path: &std::path::Path, flags: LoadFlags) -> Result<ModelDefinition> {
        if path.extension().is_some_and(|e| e == "pkl") {
            return Err(Error::NotSupported(format!(
                "{}: pkl model files (libvmaf dropped them too); use the json model",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ModelDefinition::from_json(&text, flags).map_err(|e| match e {
            Error::Model(m) => Error::Model(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}

impl Model {
    /// Built-in model by version ("vmaf_v0.6.1", "vmaf_4k_v0.6.1neg", ...: `builtin_versions`).
    pub fn builtin(version: &str, cfg: &ModelConfig) -> Result<Model> {
        if let Some(model) = builtin::find(version).map(|text| Model::collection(text, cfg)).transpose()?.flatten() {
            return Ok(model);
        }
        Model::from_definition(ModelDefinition::builtin(version, cfg.flags())?, cfg)
    }

    /// Model from a libvmaf JSON model file (a model collection too).
    pub fn from_path(path: &std::path::Path, cfg: &ModelConfig) -> Result<Model> {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Some(model) = Model::collection(&text, cfg)
                .map_err(|e| match e {
                    Error::Model(m) => Error::Model(format!("{}: {m}", path.display())),
                    other => other,
                })?
            {
                return Ok(model);
            }
        }
        Model::from_definition(ModelDefinition::from_path(path, cfg.flags())?, cfg)
    }

    /// Model from the text of a libvmaf JSON model (a model collection too).
    pub fn from_json(text: &str, cfg: &ModelConfig) -> Result<Model> {
        if let Some(model) = Model::collection(text, cfg)? {
            return Ok(model);
        }
        Model::from_definition(ModelDefinition::from_json(text, cfg.flags())?, cfg)
    }

    /// `text` as a model collection, `None` when it is a single model.
    fn collection(text: &str, cfg: &ModelConfig) -> Result<Option<Model>> {
        let name = cfg.name.as_deref().unwrap_or(DEFAULT_MODEL_NAME);
        let Some((model0, bootstrap)) = bootstrap::parse_text(text, name, cfg.flags())? else {
            return Ok(None);
        };
        let mut model = Model::tie(model0, cfg)?;
        // vmafx extracts member 0's features once for every member; libvmaf
        // lets members read other features, which no collection it ships does.
        for (member, def) in &bootstrap.members {
            let features = resolve_features(def, crate::feature::find_provider)?;
            let same = features.len() == model.features.len()
                && features.iter().zip(&model.features).all(|(a, b)| a.feature == b.feature);
            if !same {
                return Err(Error::NotSupported(format!(
                    "model collection member {member} reads other features than member 0"
                )));
            }
        }
        model.bootstrap = Some(bootstrap);
        // As libvmaf's tool: the overloads reach every member (all read
        // member 0's features, checked above, so member 0's stand for all).
        model.overload_all(&cfg.overloads)?;
        Ok(Some(model))
    }

    /// Ties a parsed model to vmafx's extractors and applies `cfg`'s
    /// overloads. `cfg`'s flags must be the ones the definition was loaded
    /// with (they act at load time).
    pub fn from_definition(definition: ModelDefinition, cfg: &ModelConfig) -> Result<Model> {
        let mut model = Model::tie(definition, cfg)?;
        model.overload_all(&cfg.overloads)?;
        Ok(model)
    }

    fn tie(definition: ModelDefinition, cfg: &ModelConfig) -> Result<Model> {
        let features = resolve_features(&definition, crate::feature::find_provider)?;
        let name = cfg.name.clone().unwrap_or_else(|| DEFAULT_MODEL_NAME.to_owned());
        if name.is_empty() {
            return Err(Error::invalid("model name is empty"));
        }
        Ok(Model { name, features, definition, bootstrap: None })
    }

    fn overload_all(&mut self, overloads: &[FeatureOverload]) -> Result<()> {
        overloads.iter().try_for_each(|o| self.overload(o))
    }

    /// Sets one option of every feature this model reads from
    /// `o.extractor` (libvmaf's `vmaf_model_feature_overload`): the
    /// extractor then runs with it, and the feature's name follows
    /// ("integer_adm2_egl_1"), so the model reads what that run writes.
    ///
    /// Where libvmaf silently does nothing (an extractor the model does
    /// not read, an option the extractor lacks, an option's alias), this
    /// refuses, naming what it did not find.
    pub fn overload(&mut self, o: &FeatureOverload) -> Result<()> {
        let bad = |why: String| Error::invalid(format!("feature overload {o}: {why}"));
        let mut read: Vec<&str> = self.features.iter().map(|f| f.extractor.name).collect();
        read.dedup();
        let Some(extractor) = self.features.iter().map(|f| f.extractor).find(|x| x.name == o.extractor) else {
            let why = if crate::feature::find_extractor(&o.extractor).is_ok() {
                "the model reads no feature of that extractor"
            } else {
                "no such feature extractor"
            };
            return Err(bad(format!("{why} (the model's extractors: {})", read.join(", "))));
        };
        let Some(spec) = extractor.options.iter().find(|s| s.name == o.option) else {
            let known: Vec<&str> = extractor.options.iter().map(|s| s.name).collect();
            let alias_of = extractor.options.iter().find(|s| s.alias == Some(o.option.as_str()));
            let hint = alias_of.map(|s| format!("; '{}' is the alias of {}, and libvmaf matches full names only", o.option, s.name));
            return Err(bad(format!(
                "{} has no option '{}' (its options: {}){}",
                extractor.name,
                o.option,
                known.join(", "),
                hint.unwrap_or_default()
            )));
        };
        let text = crate::feature::options::feature_dictionary_value(&o.value);
        for (feature, defined) in self.features.iter_mut().zip(&self.definition.features) {
            if feature.extractor.name == o.extractor {
                feature.options.set_text(extractor.options, spec.name, &text).map_err(|e| bad(e.to_string()))?;
                feature.feature = extractor.feature_name(&defined.name, &feature.options);
            }
        }
        Ok(())
    }

    /// Versions of the built-in models.
    pub fn builtin_versions() -> &'static [&'static str] {
        builtin::BUILTIN_VERSIONS
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn features(&self) -> &[ModelFeature] {
        &self.features
    }

    pub fn definition(&self) -> &ModelDefinition {
        &self.definition
    }

    /// The model's score for one frame, from the values of `features()` in
    /// order: libvmaf's `vmaf_score_at_index` for the same values.
    pub fn score(&self, values: &[f64]) -> Result<f64> {
        self.definition.score(values)
    }

    /// What a model collection writes per frame besides [`Model::name`], in
    /// libvmaf's order: each member's score ("vmaf_0001", ...), then
    /// "vmaf_bagging", "vmaf_stddev", "vmaf_ci_p95_lo", "vmaf_ci_p95_hi".
    /// Empty for a single model.
    pub fn bootstrap_names(&self) -> impl Iterator<Item = &str> {
        self.bootstrap.iter().flat_map(|b| b.names())
    }

    /// The values named by [`Model::bootstrap_names`] for one frame (from
    /// the values of `features()`), appended to `out`: libvmaf's
    /// `vmaf_bootstrap_predict_score_at_index`.
    pub fn bootstrap_scores(&self, values: &[f64], out: &mut Vec<f64>) -> Result<()> {
        match &self.bootstrap {
            Some(b) => b.score(values, out),
            None => Ok(()),
        }
    }
}

/// For each model feature: the extractor that provides it, its options
/// from the model's dictionary, and its name in the collector.
///
/// As libvmaf's `vmaf_fex_ctx_parse_options`, dictionary keys are matched
/// against option names only; keys the extractor has no option for are
/// ignored. Values are parsed as the option's type; a bad value is an error.
fn resolve_features(
    definition: &ModelDefinition,
    lookup: impl Fn(&str) -> Result<&'static ExtractorDescriptor>,
) -> Result<Vec<ModelFeature>> {
    definition
        .features
        .iter()
        .map(|f| {
            let extractor = lookup(&f.name).map_err(|e| match e {
                Error::NotSupported(m) => Error::NotSupported(format!("model feature: {m}")),
                other => other,
            })?;
            let mut options = FeatureOptions::new();
            for (key, text) in &f.options {
                if extractor.options.iter().any(|s| s.name == key) {
                    options.set_text(extractor.options, key, text).map_err(|e| {
                        Error::Model(format!("feature {} ({}): {e}", f.name, extractor.name))
                    })?;
                }
            }
            let feature = extractor.feature_name(&f.name, &options);
            Ok(ModelFeature { extractor, options, feature })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature::options::OptionKind;
    use crate::feature::{Extractor, ExtractorConfig, OptionSpec};
    use crate::model::definition::ModelType;

    fn no_create(_: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
        Err(Error::NotSupported("test descriptor".into()))
    }

    // Stand-ins with libvmaf's option specs for the "enhancement gain
    // limit" options the neg model sets (the real extractors live in
    // their own modules).
    static VIF_OPTIONS: [OptionSpec; 1] = [OptionSpec {
        name: "vif_enhn_gain_limit",
        alias: Some("egl"),
        help: "",
        kind: OptionKind::Double { default: 100.0, min: 1.0, max: 100.0 },
        feature_param: true,
    }];
    static ADM_OPTIONS: [OptionSpec; 1] = [OptionSpec {
        name: "adm_enhn_gain_limit",
        alias: Some("egl"),
        help: "",
        kind: OptionKind::Double { default: 100.0, min: 1.0, max: 100.0 },
        feature_param: true,
    }];
    static VIF: ExtractorDescriptor = ExtractorDescriptor {
        name: "vif",
        provided_features: &[
            "VMAF_integer_feature_vif_scale0_score",
            "VMAF_integer_feature_vif_scale1_score",
            "VMAF_integer_feature_vif_scale2_score",
            "VMAF_integer_feature_vif_scale3_score",
        ],
        options: &VIF_OPTIONS,
        needs_prev_reference: false,
        needs_prev_distorted: false,
        needs_two_back: crate::feature::never_two_back,
        every_frame: false,
        reads_chroma: false,
        create: no_create,
    };
    static ADM: ExtractorDescriptor = ExtractorDescriptor {
        name: "adm",
        provided_features: &["VMAF_integer_feature_adm2_score"],
        options: &ADM_OPTIONS,
        needs_prev_reference: false,
        needs_prev_distorted: false,
        needs_two_back: crate::feature::never_two_back,
        every_frame: false,
        reads_chroma: false,
        create: no_create,
    };

    fn lookup(name: &str) -> Result<&'static ExtractorDescriptor> {
        for d in [&VIF, &ADM, &crate::feature::motion::DESCRIPTOR] {
            if d.provides(name) {
                return Ok(d);
            }
        }
        Err(Error::NotSupported(name.into()))
    }

    fn names(version: &str) -> Vec<String> {
        let def = ModelDefinition::builtin(version, LoadFlags::default()).unwrap();
        resolve_features(&def, lookup).unwrap().into_iter().map(|f| f.feature).collect()
    }

    #[test]
    fn feature_names_as_libvmaf() {
        assert_eq!(
            names("vmaf_v0.6.1"),
            [
                "VMAF_integer_feature_adm2_score",
                "VMAF_integer_feature_motion2_score",
                "VMAF_integer_feature_vif_scale0_score",
                "VMAF_integer_feature_vif_scale1_score",
                "VMAF_integer_feature_vif_scale2_score",
                "VMAF_integer_feature_vif_scale3_score",
            ]
        );
        assert_eq!(
            names("vmaf_v0.6.1neg"),
            [
                "integer_adm2_egl_1",
                "VMAF_integer_feature_motion2_score",
                "integer_vif_scale0_egl_1",
                "integer_vif_scale1_egl_1",
                "integer_vif_scale2_egl_1",
                "integer_vif_scale3_egl_1",
            ]
        );
        assert_eq!(names("vmaf_4k_v0.6.1"), names("vmaf_v0.6.1"));
    }

    #[test]
    fn builtins_load() {
        for v in Model::builtin_versions().iter().filter(|v| !v.contains("_b_v0.6.3")) {
            let def = ModelDefinition::builtin(v, LoadFlags::default()).unwrap();
            // v1.0.16: cambi, speed_chroma_uv, adm3, motion3.
            let features = if v.starts_with("vmaf_v1.0.16") { 4 } else { 6 };
            assert_eq!(def.features.len(), features, "{v}");
            assert_eq!(def.chroma_correction.is_some(), features == 4, "{v}");
            // libvmaf's 3d0h_2160 models clip at 110.
            let top = if v.ends_with("3d0h_2160") { 110.0 } else { 100.0 };
            assert_eq!(def.score_clip, Some((0.0, top)), "{v}");
            assert_eq!(def.model_type, ModelType::SvmNuSvr);
        }
        assert!(ModelDefinition::builtin("vmaf_v9", LoadFlags::default()).is_err());
        let t = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags { enable_transform: true, disable_clip: true }).unwrap();
        assert!(t.transform.enabled && t.transform.out_gte_in && t.score_clip.is_none());
        let t = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags::default()).unwrap();
        assert!(!t.transform.enabled);
    }

    #[test]
    fn refuses_collections_and_bad_options() {
        let r = ModelDefinition::from_json(r#"{"0": {"model_dict": {}}, "1": {}}"#, LoadFlags::default());
        assert!(matches!(r, Err(Error::NotSupported(_))));
        let neg = builtin::find("vmaf_v0.6.1neg").unwrap().replace("\"adm_enhn_gain_limit\": 1.0", "\"adm_enhn_gain_limit\": 0.5");
        let def = ModelDefinition::from_json(&neg, LoadFlags::default()).unwrap();
        assert!(resolve_features(&def, lookup).is_err(), "0.5 is below the option's minimum");
    }
}
