//! The crate's outer edges: what the staticlib FFmpeg links depends on
//! (Cargo.toml's `cli` and `capi` features), and `include/vmafx.h`, which
//! cbindgen writes from src/avfilter/ffi.rs (cbindgen.toml).

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The crate names (`name vX.Y.Z` lines) of `cargo tree -e normal` with
/// these feature arguments.
fn normal_dependencies(features: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--locked", "-e", "normal", "--prefix", "none", "--manifest-path"])
        .arg(Path::new(ROOT).join("Cargo.toml"))
        .args(features)
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree {features:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// The staticlib is built `--no-default-features --features capi`
/// (scripts/install): the C interface without the CLI's clap.
#[test]
fn capi_build_has_no_clap() {
    let capi = normal_dependencies(&["--no-default-features", "--features", "capi"]);
    assert!(capi.iter().any(|c| c == "serde_json"), "cargo tree listed no dependencies: {capi:?}");
    let cli_only: Vec<_> = capi.iter().filter(|c| c.starts_with("clap") || *c == "signal-hook").collect();
    assert!(cli_only.is_empty(), "the capi build (the staticlib FFmpeg links) depends on {cli_only:?}: keep them behind feature `cli`");
    // The same query sees clap where it belongs.
    let default = normal_dependencies(&[]);
    assert!(default.iter().any(|c| c == "clap"), "the default build (the CLI) lost clap: {default:?}");
}
