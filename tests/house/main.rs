//! The house itself: the map in docs/ true to src/, and the crate's build
//! surfaces (the C header generated from the code, the staticlib without the
//! CLI's dependencies).
//!
//! - `api_surface` (was tests/api_surface.rs)
//! - `architecture` (was tests/architecture.rs)

mod api_surface;
mod architecture;
