//! Scores after extraction: the collector, pooling, logs in libvmaf's
//! formats, and the SVG plot.

pub(crate) mod collector;
pub(crate) mod log;
pub(crate) mod plot;
pub(crate) mod pool;

pub use collector::FeatureCollector;
pub use pool::PoolMethod;
