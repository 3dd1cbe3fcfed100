//! Frame import: host memory, and DRM_PRIME dma-bufs in the qemu VM (scripts/dmabuf-vm) on the
//! CPU device and on a HIP device over the fake libamdhip64.
//!
//! Shared helpers: tests/support/ (one module, `crate::support`).
//!
//! - `host` (was tests/import_host.rs)
//! - `dmabuf_vm` (was tests/dmabuf_vm.rs)
//! - `dmabuf_hip` (was tests/dmabuf_hip.rs)

#[path = "../support/mod.rs"]
mod support;

mod host;
mod dmabuf_vm;
mod dmabuf_hip;
