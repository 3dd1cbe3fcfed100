//! Placeholder: being written.
use crate::Result;
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMethod { Mean, HarmonicMean, Min, Max }
pub fn pool(values: &[f64], _m: PoolMethod) -> Result<f64> { Ok(values.iter().sum::<f64>() / values.len() as f64) }
