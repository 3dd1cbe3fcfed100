//! Every kernel in kernels/ compiles with NVRTC (compute_90 and compute_75)
//! and with hiprtc (gfx90a, gfx1030), with no GPU: the compilers run on the
//! host. A compile error fails. A missing compiler skips with a note, or
//! fails when VMAFX_REQUIRE_GPU_COMPILERS=1 (CI, after scripts/gpu-ci-deps).
//!
//! NVRTC is found through VMAFX_NVRTC_LIB, else under
//! build/gpu-deps/nvrtc (where scripts/gpu-ci-deps puts PyPI's wheel), else
//! by SONAME.

use std::path::Path;
use std::sync::Once;
use vmafx::internals::device::gpu::{cache, compile, hip, kernels, nvrtc};

const CUDA_ARCHS: &[&str] = &["compute_90", "compute_75"];
const HIP_ARCHS: &[&str] = &["gfx90a", "gfx1030"];

pub fn setup() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Compile for real in these tests; the cache has its own test.
        std::env::set_var("VMAFX_KERNEL_CACHE", "off");
        if std::env::var_os(nvrtc::ENV).is_none() {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/gpu-deps/nvrtc/nvidia");
            for sub in ["cu13/lib/libnvrtc.so.13", "cuda_nvrtc/lib/libnvrtc.so.12"] {
                if root.join(sub).exists() {
                    std::env::set_var(nvrtc::ENV, root.join(sub));
                    break;
                }
            }
        }
    });
}

pub fn required() -> bool {
    std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1")
}

fn compiler_missing(what: &str, e: &vmafx::Error) {
    assert!(
        !required(),
        "VMAFX_REQUIRE_GPU_COMPILERS=1 but {what} is missing: {e}"
    );
    eprintln!("SKIP: {what} not available: {e}");
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    setup();
    let compiler = match nvrtc::nvrtc() {
        Ok(c) => c,
        Err(e) => return compiler_missing("NVRTC", &e),
    };
    eprintln!(
        "NVRTC {:?} from {}",
        compiler.version().unwrap(),
        compiler.library
    );
    for kernel in kernels::ALL {
        for arch in CUDA_ARCHS {
            let ptx = compile::cuda_ptx(kernel, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
            let text = String::from_utf8_lossy(&ptx);
            for entry in kernel.entries {
                assert!(
                    text.contains(&format!(".entry {entry}(")),
                    "{} {arch}: no .entry {entry}",
                    kernel.name
                );
            }
        }
    }
}

#[test]
fn every_kernel_compiles_with_hiprtc() {
    setup();
    let compiler = match hip::hiprtc() {
        Ok(c) => c,
        Err(e) => return compiler_missing("hiprtc", &e),
    };
    eprintln!(
        "hiprtc {:?} from {}",
        compiler.version().unwrap(),
        compiler.library
    );
    for kernel in kernels::ALL {
        for arch in HIP_ARCHS {
            let code = compile::hip_code_object(kernel, arch)
                .unwrap_or_else(|e| panic!("{} for {arch}: {e}", kernel.name));
            assert!(code.len() > 64, "{} {arch}: empty code object", kernel.name);
            // A clang offload bundle or a bare ELF; either names each entry.
            for entry in kernel.entries {
                let found = code.windows(entry.len()).any(|w| w == entry.as_bytes());
                assert!(
                    found,
                    "{} {arch}: entry {entry} not in code object",
                    kernel.name
                );
            }
        }
    }
}

#[test]
fn a_compile_error_is_an_error_with_the_log() {
    setup();
    let broken = "#include \"vmafx_compat.h\"\nVMAFX_KERNEL void broken(int *p) { p[0] = undeclared_name; }\n";
    if let Ok(c) = nvrtc::nvrtc() {
        let e = c
            .compile_ptx("broken.cu", broken, &[kernels::COMPAT_HEADER], "compute_90")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("undeclared_name") && e.contains("broken.cu"),
            "{e}"
        );
    }
    if let Ok(c) = hip::hiprtc() {
        let e = c
            .compile("broken.cu", broken, &[kernels::COMPAT_HEADER], "gfx90a")
            .unwrap_err()
            .to_string();
        assert!(e.contains("undeclared_name"), "{e}");
    }
}

#[test]
fn hiprtc_refuses_targets_its_version_would_abort_on() {
    setup();
    let Ok(c) = hip::hiprtc() else { return };
    let version = c.version().unwrap();
    if version.0 <= 5 {
        let e = compile::hip_code_object(&kernels::MOTION, "gfx1100")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("gfx1100") && e.contains(&format!("{}.{}", version.0, version.1)),
            "{e}"
        );
    }
}

#[test]
fn compiled_kernels_are_cached_on_disk() {
    setup();
    let Ok(c) = nvrtc::nvrtc() else { return };
    let dir = std::env::temp_dir().join(format!("vmafx-kernel-cache-{}", std::process::id()));
    let headers = [kernels::COMPAT_HEADER];
    let key = cache::key(
        kernels::PSNR.source,
        &headers,
        &nvrtc::options("compute_90"),
        "compute_90",
        "nvrtc",
        c.version().unwrap(),
    );
    let mut compiles = 0;
    let mut build = || {
        compiles += 1;
        c.compile_ptx("psnr.cu", kernels::PSNR.source, &headers, "compute_90")
    };
    let first = cache::get_or_compile_in(Some(&dir), &key, &mut build).unwrap();
    let second = cache::get_or_compile_in(Some(&dir), &key, &mut build).unwrap();
    assert_eq!(compiles, 1, "the second call reads the cache");
    assert_eq!(first, second);
    assert!(dir.join(&key).is_file());
    // NVRTC is deterministic, so keying by inputs alone is sound.
    assert_eq!(
        first,
        c.compile_ptx("psnr.cu", kernels::PSNR.source, &headers, "compute_90")
            .unwrap()
    );
    std::fs::remove_dir_all(&dir).ok();
}

