//! Placeholder interface: being written (libvmaf JSON models, SVM, transform).
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

pub struct Model {
    name: String,
    features: Vec<ModelFeature>,
}

impl Model {
    pub fn name(&self) -> &str { &self.name }
    pub fn features(&self) -> &[ModelFeature] { &self.features }
    pub fn score(&self, _values: &[f64]) -> Result<f64> { Err(Error::Model("not yet".into())) }
}
