//! Scores after extraction: the collector, pooling, logs in libvmaf's
//! formats, and the SVG plot.

pub mod collector;
pub mod log;
pub mod plot;
pub mod pool;

pub use collector::FeatureCollector;
pub use pool::PoolMethod;
