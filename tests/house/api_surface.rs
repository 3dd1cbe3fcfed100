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

/// python/Cargo.toml's dependency on vmafx: without the defaults, with
/// the features it names.
fn python_vmafx_features() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("python/Cargo.toml")).expect("python/Cargo.toml reads");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("vmafx = "))
        .expect("python/Cargo.toml depends on vmafx (a `vmafx = { .. }` line)");
    assert!(line.contains("default-features = false"), "the Python module takes vmafx's defaults (`cli`, `capi`): {line}");
    let list = line.split("features = [").nth(1).and_then(|r| r.split(']').next()).unwrap_or("");
    list.split(',').map(|f| f.trim().trim_matches('"').to_owned()).filter(|f| !f.is_empty()).collect()
}

/// The Python module shares the CLI's option strings (src/option_strings.rs,
/// no feature) but not the CLI: its build of vmafx has no clap, and no
/// `capi` symbols.
#[test]
fn python_build_has_no_clap() {
    let features = python_vmafx_features();
    assert!(features.iter().all(|f| f != "cli" && f != "capi"), "python/Cargo.toml asks vmafx for {features:?}: not `cli`, not `capi`");
    let mut args = vec!["--no-default-features".to_owned()];
    if !features.is_empty() {
        args.extend(["--features".to_owned(), features.join(",")]);
    }
    let deps = normal_dependencies(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(deps.iter().any(|c| c == "serde_json"), "cargo tree listed no dependencies: {deps:?}");
    let cli_only: Vec<_> = deps.iter().filter(|c| c.starts_with("clap") || *c == "signal-hook").collect();
    assert!(cli_only.is_empty(), "the Python module's vmafx (features {features:?}) depends on {cli_only:?}");
}

/// include/vmafx.h is what cbindgen writes from src/avfilter/ffi.rs with
/// cbindgen.toml: a change to the C interface changes the header in the
/// same commit (FFmpeg's glue compiles against it).
#[test]
fn header_is_generated() {
    let root = Path::new(ROOT);
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let generated = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src/avfilter/ffi.rs"))
        .generate()
        .expect("cbindgen reads src/avfilter/ffi.rs");
    let scratch = std::env::temp_dir().join(format!("vmafx-header-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let fresh = scratch.join("vmafx.h");
    generated.write_to_file(&fresh);
    let checked_in = root.join("include/vmafx.h");
    if std::env::var_os("VMAFX_BLESS_HEADER").is_some() {
        std::fs::copy(&fresh, &checked_in).expect("include/vmafx.h is writable");
    }
    let want = std::fs::read_to_string(&fresh).unwrap();
    let have = std::fs::read_to_string(&checked_in).expect("include/vmafx.h exists");
    std::fs::remove_dir_all(&scratch).ok();
    if want != have {
        panic!(
            "include/vmafx.h differs from what cbindgen writes from src/avfilter/ffi.rs \
             (refresh it with VMAFX_BLESS_HEADER=1 cargo test --test api_surface):\n{}",
            line_diff(&have, &want)
        );
    }
}

/// The lines that differ, `-` checked in and `+` generated, with their
/// line numbers (a plain walk from the first difference: enough to see it).
fn line_diff(have: &str, want: &str) -> String {
    let (h, w): (Vec<_>, Vec<_>) = (have.lines().collect(), want.lines().collect());
    let first = h.iter().zip(&w).take_while(|(a, b)| a == b).count();
    let (mut tail_h, mut tail_w) = (h.len(), w.len());
    while tail_h > first && tail_w > first && h[tail_h - 1] == w[tail_w - 1] {
        tail_h -= 1;
        tail_w -= 1;
    }
    let mut out = String::new();
    for (i, line) in h[first..tail_h].iter().enumerate() {
        out += &format!("-{:4}: {line}\n", first + i + 1);
    }
    for (i, line) in w[first..tail_w].iter().enumerate() {
        out += &format!("+{:4}: {line}\n", first + i + 1);
    }
    out
}
