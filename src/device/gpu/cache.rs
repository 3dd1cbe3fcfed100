//! Disk cache of compiled kernels (PTX or AMD code objects), keyed by
//! (source and header hash, target architecture, compiler name and
//! version), so a process compiles each kernel once per machine.
//!
//! Location: `$VMAFX_KERNEL_CACHE`, else `$XDG_CACHE_HOME/vmafx/kernels`,
//! else `$HOME/.cache/vmafx/kernels`; `VMAFX_KERNEL_CACHE=off` disables it.
//! A cache that cannot be read or written is skipped, never an error.

use std::path::PathBuf;

pub(crate) fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("VMAFX_KERNEL_CACHE") {
        Some(v) if v == "off" => return None,
        Some(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join("vmafx/kernels"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/vmafx/kernels"))
}

/// The cache file name for one compile (kernel_key.rs, shared with build.rs).
pub use super::kernel_key::key;

/// Returns the cached binary for `key`, or compiles it and stores it, in
/// [`cache_dir`].
pub(crate) fn get_or_compile(
    key: &str,
    compile: impl FnOnce() -> crate::Result<Vec<u8>>,
) -> crate::Result<Vec<u8>> {
    get_or_compile_in(cache_dir().as_deref(), key, compile)
}

/// [`get_or_compile`] with an explicit directory (`None`: no cache).
pub fn get_or_compile_in(
    dir: Option<&std::path::Path>,
    key: &str,
    compile: impl FnOnce() -> crate::Result<Vec<u8>>,
) -> crate::Result<Vec<u8>> {
    let path = dir.map(|d| d.join(key));
    if let Some(p) = &path {
        if let Ok(bytes) = std::fs::read(p) {
            if !bytes.is_empty() {
                return Ok(bytes);
            }
        }
    }
    let bytes = compile()?;
    if let Some(p) = &path {
        // Write then rename, so a concurrent reader never sees half a file.
        let tmp = p.with_extension(format!("tmp{}", std::process::id()));
        let stored = p
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::write(&tmp, &bytes));
        if stored.is_ok() {
            let _ = std::fs::rename(&tmp, p);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    fn opts() -> Vec<String> {
        vec!["--fmad=false".into()]
    }

    #[test]
    fn key_changes_with_every_input() {
        let base = super::key(
            "src",
            &[("h", "x")],
            &opts(),
            "compute_90",
            "nvrtc",
            (13, 0),
        );
        assert_ne!(
            base,
            super::key(
                "src2",
                &[("h", "x")],
                &opts(),
                "compute_90",
                "nvrtc",
                (13, 0)
            )
        );
        assert_ne!(
            base,
            super::key(
                "src",
                &[("h", "y")],
                &opts(),
                "compute_90",
                "nvrtc",
                (13, 0)
            )
        );
        assert_ne!(
            base,
            super::key(
                "src",
                &[("h", "x")],
                &opts(),
                "compute_80",
                "nvrtc",
                (13, 0)
            )
        );
        assert_ne!(
            base,
            super::key(
                "src",
                &[("h", "x")],
                &opts(),
                "compute_90",
                "nvrtc",
                (12, 8)
            )
        );
        assert_ne!(
            base,
            super::key(
                "src",
                &[("h", "x")],
                &["--fmad=true".into()],
                "compute_90",
                "nvrtc",
                (13, 0)
            )
        );
        assert_eq!(
            base,
            super::key(
                "src",
                &[("h", "x")],
                &opts(),
                "compute_90",
                "nvrtc",
                (13, 0)
            )
        );
    }
}
