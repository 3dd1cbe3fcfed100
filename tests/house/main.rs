//! The house itself: the map in docs/ true to src/, and the crate's build
//! surfaces (the C header generated from the code, the staticlib without the
//! CLI's dependencies), the library's public API at the crate root.
//!
//! - `api_surface` (was tests/api_surface.rs)
//! - `architecture` (was tests/architecture.rs)
//! - `public_api`: the root lists exactly docs/architecture.md's API, every
//!   room private

mod api_surface;
mod architecture;
mod public_api;
