//! Scores after extraction: the collector, pooling, and logs in libvmaf's
//! formats.

pub mod collector;
pub mod log;
pub mod pool;

pub use collector::FeatureCollector;
pub use pool::PoolMethod;
