//! The scoring context: which extractors run, frames in flight on a worker
//! pool, results in frame order, look-back pictures for temporal features,
//! and model scores once the stream ends.
//!
//! Like libvmaf's `VmafContext` with `n_threads`: with 0 threads every frame
//! is scored on the caller's thread; with N, frames go to N workers (each
//! with its own extractor instances) and at most `2 * N` are in flight.
//! Results are committed to the collector in frame order, so the log's
//! feature order never depends on scheduling.
//!
//! On a GPU ([`DeviceChoice::Gpu`], [`DeviceChoice::CudaStream`],
//! [`DeviceChoice::HipStream`],
//! [`Context::with_lanes`]) every worker (or the caller's thread, with 0
//! threads) owns one lane: a [`GpuDevice`] with its own stream and scratch.
//! Per frame the worker puts each picture on its lane once (a host picture
//! is copied into the lane's scratch, a device picture of the lane's memory
//! is read in place after its `ready` event) and every extractor's device
//! twin reads those planes. The twins compute integer sums on the device
//! and finish with the CPU code, so the values are the CPU context's.

//!
//! Its rooms, each in its own file:
//! - `context.rs`: the public [`Context`] and [`ContextConfig`]: frames in,
//!   results committed in order, settling, models, pools, the stream's end;
//! - `choice.rs`: [`DeviceChoice`] (where a context computes) and the
//!   caller's streams, and opening one lane for a choice;
//! - `workers.rs`: the worker pool and one frame's job on the CPU or a lane;
//! - `placement.rs`: a worker's GPU lane and each picture placed on it once;
//! - `picture_checks.rs`: what a pushed picture must be (geometry, device
//!   planes covering the format).

mod choice;
mod context;
mod picture_checks;
mod placement;
mod workers;

pub use choice::{CallerStream, DeviceChoice, GpuVendor, HipCallerStream};
pub use context::{Context, ContextConfig};

use crate::Error;

/// `e` with `prefix` before its message (what was being done when it
/// failed).
fn prefix_error(e: Error, prefix: &str) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{prefix}: {m}")),
        Error::NotSupported(m) => Error::NotSupported(format!("{prefix}: {m}")),
        Error::Internal(m) => Error::Internal(format!("{prefix}: {m}")),
        Error::Mismatch(m) => Error::Mismatch(format!("{prefix}: {m}")),
        Error::Device(m) => Error::Device(format!("{prefix}: {m}")),
        other => other,
    }
}

