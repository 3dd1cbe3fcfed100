//! Shared test support: the libvmaf reference and synthetic clips.
#![allow(dead_code)]
pub mod clips;
pub mod cpu;
pub mod partial_log;
pub mod device_support;
pub mod reference;
pub mod synth;
