//! Placeholder: being written.
use super::{Extractor, ExtractorConfig, ExtractorDescriptor};
use crate::{Error, Result};

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "adm",
    provided_features: &[],
    options: &[],
    needs_prev_reference: false,
    create,
};

fn create(_: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    Err(Error::NotSupported("adm: not yet written".into()))
}
