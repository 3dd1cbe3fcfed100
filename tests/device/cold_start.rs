//! Start-up on a GPU with the kernels built ahead (build.rs,
//! src/device/gpu/embedded.rs): a CUDA context scoring vmaf_v0.6.1 and PSNR
//! takes every kernel of its first frame from the embedded set (where the
//! set covers the device and `VMAFX_EMBEDDED_KERNELS` is not `off`) and
//! writes the CPU context's values as bits. The times of context creation,
//! the first frame (the kernels' loading) and the next frames are printed,
//! informative only (docs/benchmarks.md, "Start-up", has the measured
//! table). Skips without a GPU unless VMAFX_REQUIRE_GPU=cuda; with
//! VMAFX_REQUIRE_EMBEDDED=cuda a binary without embedded CUDA kernels fails.

use crate::support::contexts::{add_features, assert_same, use_models};
use crate::support::synth;
use std::sync::Arc;
use std::time::Instant;
use vmafx::{Chroma, Context, ContextConfig, DeviceChoice, GpuVendor};
use vmafx::internals::device::gpu::{embedded, kernels};
use vmafx::internals::device::{self, DeviceKind};

fn scored(device: DeviceChoice, clip: &crate::support::contexts::Clip) -> (Context, [f64; 3]) {
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let mut ctx = Context::new(ContextConfig { device, threads: 0, ..Default::default() }).unwrap();
    let created = ms(t);
    use_models(&mut ctx, &[("vmaf_v0.6.1", "vmaf")]);
    // PSNR beside the model (whose motion the model already asks for).
    add_features(&mut ctx, false).unwrap();
    let t = Instant::now();
    let mut first = 0.0;
    for (i, (r, d)) in clip.iter().enumerate() {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
        if i == 0 {
            // With no worker threads a push scores its frame: the kernels
            // are loaded and run by now.
            first = ms(t);
        }
    }
    ctx.flush().unwrap();
    (ctx, [created, first, ms(t) - first])
}

#[test]
fn gpu_first_frame_takes_embedded_kernels_and_scores_as_the_cpu() {
    let required = std::env::var("VMAFX_REQUIRE_GPU").is_ok_and(|v| v.split(',').any(|k| k == "cuda"));
    match device::count(DeviceKind::Cuda) {
        Ok(n) if n > 0 => {}
        other => {
            assert!(!required, "VMAFX_REQUIRE_GPU=cuda: {other:?}");
            eprintln!("SKIP cuda: {other:?}");
            return;
        }
    }
    let clip = synth::clip(Chroma::Yuv420, 8, 320, 240, 4, 13);
    let before = embedded::served();
    let (gpu, [created, first, rest]) = scored(DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index: 0 }, &clip);
    let served = embedded::served() - before;
    eprintln!(
        "CUDA context {created:.1} ms, first frame {first:.1} ms, 3 more frames {rest:.1} ms; \
         {served} kernel images from the embedded set ({:?})",
        embedded::BUILD_COMPILERS
    );
    let (cpu, _) = scored(DeviceChoice::Cpu, &clip);
    let values = assert_same(&cpu, &gpu, "vmaf_v0.6.1 + psnr, 320x240 8-bit");
    eprintln!("{values} values equal the CPU's");
    let off = std::env::var("VMAFX_EMBEDDED_KERNELS").is_ok_and(|v| v == "off");
    let covered = embedded::EMBEDDED.iter().any(|e| e.compiler == "nvrtc" && e.is_current(&kernels::VIF));
    // The GPU host's run (xtask twins run) asks for them: a binary built
    // without NVRTC would otherwise pass here on run-time compiles.
    let demanded = std::env::var("VMAFX_REQUIRE_EMBEDDED").is_ok_and(|v| v.split(',').any(|k| k == "cuda"));
    assert!(
        covered || !demanded,
        "VMAFX_REQUIRE_EMBEDDED=cuda: this binary embeds no CUDA kernels (built without NVRTC: {:?})",
        embedded::BUILD_COMPILERS
    );
    if covered && !off {
        // VIF, ADM, motion, PSNR: at least four sources, none compiled.
        assert!(served >= 4, "{served} embedded kernel images used on the first frame");
    }
}
