//! Every kernel in kernels/ compiles with NVRTC (compute_90 and compute_75)
//! and with hiprtc (gfx90a, gfx1030), with no GPU: the compilers run on the
//! host. A compile error fails. A missing compiler skips with a note, or
//! fails when VMAFX_REQUIRE_GPU_COMPILERS=1 (CI, after scripts/gpu-ci-deps).
//!
//! The kernels built ahead (build.rs, src/device/gpu/embedded.rs): the
//! embedded set covers every target the build's compilers support, each
//! entry equals a run-time compile of the same kernel for the same target
//! as bytes, and the lookup takes the device's exact cubin, else PTX it can
//! JIT, else nothing (a run-time compile), and never a stale entry.
//!
//! NVRTC is found through VMAFX_NVRTC_LIB, else under
//! build/gpu-deps/nvrtc (where scripts/gpu-ci-deps puts PyPI's wheel), else
//! by SONAME.

use std::path::Path;
use std::sync::Once;
use vmafx::device::gpu::embedded::{self, EmbeddedKernel};
use vmafx::device::gpu::{cache, compile, hip, kernel_key, kernels, nvrtc};

const CUDA_ARCHS: &[&str] = &["compute_90", "compute_75"];
const HIP_ARCHS: &[&str] = &["gfx90a", "gfx1030"];

fn setup() {
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

fn required() -> bool {
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

/// The embedded entries of `compiler`, or why there are none (the build's
/// note); fails where compilers are required.
fn embedded_of(compiler: &str) -> Option<Vec<&'static EmbeddedKernel>> {
    let list: Vec<_> = embedded::EMBEDDED.iter().filter(|e| e.compiler == compiler).collect();
    if list.is_empty() {
        assert!(
            !required(),
            "VMAFX_REQUIRE_GPU_COMPILERS=1 but the build embedded no {compiler} kernels: {:?}",
            embedded::BUILD_MISSING
        );
        eprintln!("SKIP: no {compiler} kernels built ahead: {:?}", embedded::BUILD_MISSING);
        return None;
    }
    Some(list)
}

#[test]
fn the_embedded_set_covers_every_target_the_build_compilers_support() {
    setup();
    eprintln!("built with {:?}, missing {:?}", embedded::BUILD_COMPILERS, embedded::BUILD_MISSING);
    if let Some(cuda) = embedded_of("nvrtc") {
        let version = cuda[0].version;
        let compiler = nvrtc::nvrtc().expect("the NVRTC the build used");
        assert_eq!(compiler.version().unwrap(), version, "run the test with the build's NVRTC ({:?})", embedded::BUILD_COMPILERS);
        let supported = compiler.supported_archs().unwrap();
        let supports = |t: &&str| supported.iter().any(|n| t.ends_with(&format!("_{n}")));
        let mut targets: Vec<&str> = kernel_key::CUDA_CUBIN_TARGETS.iter().copied().filter(supports).collect();
        targets.extend(kernel_key::CUDA_PTX_TARGETS.iter().copied().find(supports));
        assert!(targets.len() >= 2 && targets.iter().any(|t| t.starts_with("compute_")), "{supported:?}");
        for kernel in kernels::ALL {
            let have: Vec<&str> = cuda.iter().filter(|e| e.is_current(kernel)).map(|e| e.target).collect();
            assert_eq!(have, targets, "{}: embedded targets against NVRTC's {supported:?}", kernel.name);
        }
        assert_eq!(cuda.len(), kernels::ALL.len() * targets.len(), "nothing embedded but the current kernels");
    }
    if let Some(amd) = embedded_of("hiprtc") {
        for kernel in kernels::ALL {
            let have: Vec<&str> = amd.iter().filter(|e| e.is_current(kernel)).map(|e| e.target).collect();
            assert_eq!(have, kernel_key::HIP_TARGETS, "{}", kernel.name);
        }
        assert_eq!(amd.len(), kernels::ALL.len() * kernel_key::HIP_TARGETS.len());
    }
}

#[test]
fn an_embedded_kernel_is_a_run_time_compile_byte_for_byte() {
    setup();
    let headers = [kernels::COMPAT_HEADER];
    if let Some(cuda) = embedded_of("nvrtc") {
        let c = nvrtc::nvrtc().expect("the NVRTC the build used");
        assert_eq!(c.version().unwrap(), cuda[0].version);
        // One cubin target and the PTX, every kernel (all 64 would double
        // the chapter's compile time for no new path).
        let ptx = cuda.iter().find(|e| e.target.starts_with("compute_")).unwrap().target;
        for kernel in kernels::ALL {
            for target in ["sm_90", ptx] {
                let entry = cuda
                    .iter()
                    .find(|e| e.file == kernel.name && e.target == target)
                    .unwrap_or_else(|| panic!("{} {target}: no embedded entry", kernel.name));
                let now = if target.starts_with("sm_") {
                    c.compile_cubin(kernel.name, kernel.source, &headers, target)
                } else {
                    c.compile_ptx(kernel.name, kernel.source, &headers, target)
                }
                .unwrap();
                assert!(now == entry.code, "{} {target}: the embedded code differs from a run-time compile", kernel.name);
            }
        }
    }
    if let Some(amd) = embedded_of("hiprtc") {
        let c = hip::hiprtc().expect("the hiprtc the build used");
        assert_eq!(c.version().unwrap(), amd[0].version);
        for kernel in kernels::ALL {
            let entry = embedded::pick_hip(embedded::EMBEDDED, kernel, "gfx90a:sramecc+:xnack-").unwrap();
            let now = c.compile(kernel.name, kernel.source, &headers, "gfx90a").unwrap();
            assert!(now == entry.code, "{} gfx90a: the embedded code differs from a run-time compile", kernel.name);
        }
    }
}

/// An entry for `kernel` (keyed as the run-time path keys it now) whose
/// code names its target, so a test sees which one was picked.
fn entry(kernel: &kernels::KernelSource, target: &'static str, compiler: &'static str) -> EmbeddedKernel {
    let key = embedded::run_time_key(kernel, target, compiler, (13, 0));
    EmbeddedKernel { file: kernel.name, target, compiler, version: (13, 0), key: Box::leak(key.into_boxed_str()), code: target.as_bytes() }
}

/// `entry` for the source as it was before an edit (or with other options).
fn stale(kernel: &kernels::KernelSource, target: &'static str, compiler: &'static str) -> EmbeddedKernel {
    let edited = kernels::KernelSource { source: Box::leak(format!("{}\n// edited", kernel.source).into_boxed_str()), ..*kernel };
    EmbeddedKernel { code: b"stale", ..entry(&edited, target, compiler) }
}

fn picked(table: &[EmbeddedKernel], device: &str) -> Option<&'static [u8]> {
    let hip = device.starts_with("gfx");
    let found = if hip { embedded::pick_hip(table, &kernels::MOTION, device) } else { embedded::pick_cuda(table, &kernels::MOTION, device) };
    found.map(|e| e.code)
}

#[test]
fn the_lookup_takes_the_exact_cubin_then_ptx_the_device_runs_then_nothing() {
    let m = &kernels::MOTION;
    let table = [
        entry(&kernels::PSNR, "sm_90", "nvrtc"),
        entry(m, "sm_80", "nvrtc"),
        entry(m, "sm_90", "nvrtc"),
        entry(m, "compute_80", "nvrtc"),
        entry(m, "compute_100", "nvrtc"),
        entry(m, "gfx90a", "hiprtc"),
    ];
    assert_eq!(picked(&table, "compute_90"), Some(&b"sm_90"[..]));
    assert_eq!(picked(&table, "compute_80"), Some(&b"sm_80"[..]));
    // No cubin of its own: the newest PTX not newer than the device.
    assert_eq!(picked(&table, "compute_86"), Some(&b"compute_80"[..]));
    assert_eq!(picked(&table, "compute_120"), Some(&b"compute_100"[..]));
    // Older than every entry: compiled at run time.
    assert_eq!(picked(&table, "compute_75"), None);
    // AMD: by processor, whatever the feature suffixes.
    assert_eq!(picked(&table, "gfx90a:sramecc+:xnack-"), Some(&b"gfx90a"[..]));
    assert_eq!(picked(&table, "gfx90a"), Some(&b"gfx90a"[..]));
    assert_eq!(picked(&table, "gfx1030"), None);
    assert_eq!(picked(&[], "compute_90"), None);
}

#[test]
fn a_stale_embedded_kernel_is_never_used() {
    let m = &kernels::MOTION;
    // Built before the source was edited: refused, the current one taken.
    let table = [stale(m, "sm_90", "nvrtc"), entry(m, "sm_90", "nvrtc")];
    assert_eq!(picked(&table, "compute_90"), Some(&b"sm_90"[..]));
    for only_stale in [
        vec![stale(m, "sm_90", "nvrtc")],
        vec![stale(m, "compute_90", "nvrtc")],
        vec![stale(m, "gfx90a", "hiprtc")],
        // Another kernel's code under this kernel's name.
        vec![EmbeddedKernel { file: m.name, ..entry(&kernels::PSNR, "sm_90", "nvrtc") }],
    ] {
        for device in ["compute_90", "gfx90a"] {
            assert_eq!(picked(&only_stale, device), None, "{:?} on {device}", only_stale[0]);
        }
    }
    // The entry's key is the run-time path's cache key of the same compile.
    let e = entry(m, "sm_90", "nvrtc");
    assert_eq!(e.key, cache::key(m.source, &[kernels::COMPAT_HEADER], &nvrtc::options("sm_90"), "sm_90", "nvrtc", (13, 0)));
    assert!(e.is_current(m) && !stale(m, "sm_90", "nvrtc").is_current(m));
}
