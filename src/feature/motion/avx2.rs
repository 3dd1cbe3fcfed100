//! Placeholder until the AVX2 twin lands.
pub use super::scalar::sad;
