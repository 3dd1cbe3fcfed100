//! The kernels built ahead (build.rs, src/device/gpu/embedded.rs) against
//! the compilers that built them: the embedded set covers every target of
//! src/device/gpu/kernel_key.rs the build's NVRTC supports (cubins, the
//! newest PTX) and every AMD target, and an entry equals a run-time compile
//! of the same kernel for the same target, byte for byte (NVRTC and hiprtc
//! are deterministic, so a key over the inputs is sound). A build without a
//! compiler skips, or fails with VMAFX_REQUIRE_GPU_COMPILERS=1 (CI, after
//! scripts/gpu-ci-deps, whose VMAFX_NVRTC_LIB the build reads too).

use crate::kernels_compile::{required, setup};
use vmafx::internals::device::gpu::embedded::{self, EmbeddedKernel};
use vmafx::internals::device::gpu::{hip, kernel_key, kernels, nvrtc};

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
            let entry = embedded::pick_hip(embedded::EMBEDDED, kernel, "gfx90a:sramecc+:xnack-", amd[0].version.0).unwrap();
            let now = c.compile(kernel.name, kernel.source, &headers, "gfx90a").unwrap();
            assert!(now == entry.code, "{} gfx90a: the embedded code differs from a run-time compile", kernel.name);
        }
    }
}
