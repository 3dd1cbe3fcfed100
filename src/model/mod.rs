//! libvmaf models: JSON model files, built-in models, SVM prediction,
//! normalisation, score transform and clipping.
//! Placeholder API: being written.
use crate::feature::{ExtractorDescriptor, FeatureOptions};
use crate::{Error, Result};

/// One feature a model reads.
#[derive(Clone)]
pub struct ModelFeature {
    pub extractor: &'static ExtractorDescriptor,
    pub options: FeatureOptions,
    /// Name of the feature in the collector.
    pub feature: String,
}

/// How to load a model (libvmaf's `VmafModelConfig` plus `enable_transform`).
#[derive(Clone, Debug, Default)]
pub struct ModelConfig {
    /// Name its scores get in the collector and logs; default "vmaf".
    pub name: Option<String>,
    /// Apply the model's score_transform (libvmaf VMAF_MODEL_FLAG_ENABLE_TRANSFORM).
    pub enable_transform: bool,
    /// Skip score_clip (libvmaf VMAF_MODEL_FLAG_DISABLE_CLIP).
    pub disable_clip: bool,
}

pub struct Model {
    name: String,
    features: Vec<ModelFeature>,
}

impl Model {
    /// Built-in model by version ("vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1").
    pub fn builtin(_version: &str, _cfg: &ModelConfig) -> Result<Model> {
        Err(Error::Model("not yet".into()))
    }
    /// Model from a libvmaf JSON model file.
    pub fn from_path(_path: &std::path::Path, _cfg: &ModelConfig) -> Result<Model> {
        Err(Error::Model("not yet".into()))
    }
    /// Versions of the built-in models.
    pub fn builtin_versions() -> &'static [&'static str] {
        &[]
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn features(&self) -> &[ModelFeature] {
        &self.features
    }
    /// The model's score for one frame, from the values of `features()` in order.
    pub fn score(&self, _values: &[f64]) -> Result<f64> {
        Err(Error::Model("not yet".into()))
    }
}
