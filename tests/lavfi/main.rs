//! The filter through FFmpeg 9.0's libavfilter API (cargo feature `lavfi-api-tests`, with the 9.0
//! build's FFMPEG_DIR): the API, and DRM_PRIME frames through a graph in the dma-buf VM.
//!
//! Shared helpers: tests/support/ (one module, `crate::support`); the buffersink's
//! metadata reader both modules use: `sink`.
//!
//! - `api` (was tests/lavfi_api.rs)
//! - `dmabuf_graph` (was tests/dmabuf_graph.rs)

#[path = "../support/mod.rs"]
mod support;

mod api;
mod sink;
mod dmabuf_graph;
