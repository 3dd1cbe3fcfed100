//! Placeholder until the AVX2 twin lands.
pub const KERNELS: super::Kernels = super::scalar::KERNELS;
