//! The house itself: the map in docs/ true to src/, and the crate's build
//! surfaces (the C header generated from the code, the staticlib without the
//! CLI's dependencies).
//!
//! - `architecture` (was tests/architecture.rs)

mod architecture;
