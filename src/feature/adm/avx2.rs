//! AVX2 twins of the scale-0 row kernels (placeholder: scalar).
use super::Kernels;
pub const KERNELS: Kernels = super::SCALAR_KERNELS;
