//! A test binary running its own tests again (in a child process with a
//! fake library on its path, or inside the dma-buf VM) names them by path:
//! a chapter's tests are `MODULE::name`, so the filter carries the module.

/// The filter for the tests of the module at `module_path` (what
/// `module_path!()` gives there: the chapter, then the module) whose names
/// start with `prefix`: `dmabuf_hip::child_` for ("import::dmabuf_hip", "child_").
pub fn filter(module_path: &str, prefix: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, m)| m);
    assert!(!module.is_empty(), "{module_path} is a chapter's root, not one of its modules");
    format!("{module}::{prefix}")
}
