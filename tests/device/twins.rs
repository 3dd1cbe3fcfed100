//! GPU twins against the CPU reference on synthetic frames: motion SAD and
//! PSNR SSE at 8/10/12/16 bit, odd sizes, padded and odd strides, random and
//! extreme content (zeros, full scale against zero, max noise). Prints one
//! table row per case and fails on any differing value (they are integers:
//! 0 difference, not a tolerance).
//!
//! No GPU or no driver: each lane is skipped with a note, unless
//! VMAFX_REQUIRE_GPU=cuda (or hip, or cuda,hip) makes a missing lane fail.
//! Run on a GPU host (see docs/gpu.md):
//!   VMAFX_REQUIRE_GPU=cuda ./device_twins-<hash> --nocapture

use crate::support::device_planes;

use device_planes::{as_bytes, as_bytes_mut, gpu_required, plane_of, Rng};
use vmafx::PlaneView;
use vmafx::internals::device::gpu::GpuDevice;
use vmafx::internals::device::{self, DeviceInfo, DeviceKind};
use vmafx::internals::feature::adm::{AdmParams, AdmSums};
use vmafx::internals::feature::vif::VifSums;
use vmafx::internals::feature::{adm, motion, psnr, vif};

#[derive(Clone, Copy, Debug)]
enum Pattern {
    Random,
    Equal,
    FullScaleVsZero,
    SmoothPlusNoise,
}

/// A plane buffer with `pad` bytes after each row; returns (bytes, stride).
fn plane(
    w: usize,
    h: usize,
    bits: u32,
    pad: usize,
    pattern: Pattern,
    second: bool,
    seed: u64,
) -> (Vec<u16>, usize) {
    let max = (1u32 << bits) - 1;
    let mut rng = Rng(seed | 1);
    plane_of(w, h, bits, pad, |x, y| {
        let v = match pattern {
            Pattern::Random => (rng.next() % (max as u64 + 1)) as u32,
            Pattern::Equal => ((x * 7 + y * 3) as u32) & max,
            Pattern::FullScaleVsZero => {
                if second {
                    0
                } else {
                    max
                }
            }
            Pattern::SmoothPlusNoise => {
                let base = ((x + y) as u32 * max / (w + h) as u32).min(max);
                let n = if second { (rng.next() % 9) as u32 } else { 0 };
                (base + n).min(max)
            }
        };
        v as u64
    })
}

/// The CPU's scalar references, the values every twin must give.
struct Cpu;

impl Cpu {
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> vmafx::Result<u64> {
        Ok(motion::sad_scalar(prev, cur, bits, &mut Vec::new()))
    }
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> vmafx::Result<u64> {
        Ok(if r.bytes_per_sample() == 1 { psnr::sse_u8(r, d, w, h) } else { psnr::sse_u16(r, d, w, h) })
    }
    fn vif_sums(&mut self, r: &PlaneView, d: &PlaneView, bpc: u32, egl: f64, skip: bool) -> vmafx::Result<[VifSums; 4]> {
        vif::sums_scalar(r, d, bpc, egl, skip)
    }
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> vmafx::Result<AdmSums> {
        adm::sums_scalar(params, r, d)
    }
}

/// A lane as a scoring context opens it, its twins run on host planes.
struct Gpu(GpuDevice);

impl Gpu {
    fn info(&self) -> &DeviceInfo {
        self.0.info()
    }
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> vmafx::Result<u64> {
        motion::gpu::sad(self.0.twins(), prev, cur, bits)
    }
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> vmafx::Result<u64> {
        psnr::gpu::sse(self.0.twins(), r, d, w, h)
    }
    fn vif_sums(&mut self, r: &PlaneView, d: &PlaneView, bpc: u32, egl: f64, skip: bool) -> vmafx::Result<[VifSums; 4]> {
        vif::gpu::sums(self.0.twins(), r, d, bpc, egl, skip)
    }
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> vmafx::Result<AdmSums> {
        adm::gpu::sums(self.0.twins(), r, d, params)
    }
}

fn gpu_devices() -> Vec<Gpu> {
    let mut out = Vec::new();
    for (kind, label) in [(DeviceKind::Cuda, "cuda"), (DeviceKind::Hip, "hip")] {
        match device::count(kind) {
            Ok(0) => {
                assert!(
                    !gpu_required(label),
                    "VMAFX_REQUIRE_GPU={label} but no {label} device"
                );
                eprintln!("SKIP {label}: no device");
            }
            Ok(n) => {
                for i in 0..n {
                    let open = if kind == DeviceKind::Cuda { GpuDevice::cuda } else { GpuDevice::hip };
                    let d = open(i).unwrap_or_else(|e| panic!("opening {label} {i}: {e}"));
                    eprintln!("{}", d.info());
                    out.push(Gpu(d));
                }
            }
            Err(e) => {
                assert!(!gpu_required(label), "VMAFX_REQUIRE_GPU={label}: {e}");
                eprintln!("SKIP {label}: {e}");
            }
        }
    }
    out
}

#[test]
fn gpu_twins_equal_the_cpu() {
    let mut gpus = gpu_devices();
    if gpus.is_empty() {
        return;
    }
    let mut cpu = Cpu;
    let sizes = [
        (1920, 1080),
        (17, 9),
        (333, 127),
        (8, 8),
        (1023, 3),
        (4096, 2160),
    ];
    let patterns = [
        Pattern::Random,
        Pattern::Equal,
        Pattern::FullScaleVsZero,
        Pattern::SmoothPlusNoise,
    ];
    let mut failures = 0;
    let mut cases = 0;
    println!(
        "{:<14} {:>3} {:>10} {:>6} {:<16} {:<6} {:>22} {:>22}  result",
        "device", "bit", "size", "stride", "pattern", "kernel", "cpu", "gpu"
    );
    for (si, &(w, h)) in sizes.iter().enumerate() {
        for bits in [8u32, 10, 12, 16] {
            for (pi, &pattern) in patterns.iter().enumerate() {
                let bps = if bits == 8 { 1 } else { 2 };
                // Tight, padded by 64, and (8-bit only) an odd padding.
                for pad in [0usize, 64, if bps == 1 { 3 } else { 6 }] {
                    let seed = 0x9e37_79b9
                        ^ ((si as u64) << 32 | (bits as u64) << 16 | (pi as u64) << 8 | pad as u64);
                    let (a, stride) = plane(w, h, bits, pad, pattern, false, seed);
                    let (b, _) = plane(w, h, bits, pad, pattern, true, seed.wrapping_mul(31));
                    let va = PlaneView::new(as_bytes(&a), stride, w, h, bps).unwrap();
                    let vb = PlaneView::new(as_bytes(&b), stride, w, h, bps).unwrap();
                    let want_motion = cpu.motion_sad(&va, &vb, bits).unwrap();
                    let want_sse = cpu.psnr_sse(&va, &vb, w, h).unwrap();
                    for g in gpus.iter_mut() {
                        let name = format!("{:?}{}", g.info().kind, g.info().index);
                        for (kernel, want, got) in [
                            ("motion", want_motion, g.motion_sad(&va, &vb, bits)),
                            ("sse", want_sse, g.psnr_sse(&va, &vb, w, h)),
                        ] {
                            cases += 1;
                            let (got_text, ok) = match &got {
                                Ok(v) => (v.to_string(), *v == want),
                                Err(e) => (format!("error: {e}"), false),
                            };
                            if !ok {
                                failures += 1;
                            }
                            if !ok || (pad == 0 && pi == 0) {
                                println!(
                                    "{name:<14} {bits:>3} {:>10} {stride:>6} {:<16} {kernel:<6} {want:>22} {got_text:>22}  {} (seed {seed:#x})",
                                    format!("{w}x{h}"),
                                    format!("{pattern:?}"),
                                    if ok { "equal" } else { "DIFFERENT" }
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    println!("{cases} comparisons, {failures} different");
    assert_eq!(
        failures, 0,
        "{failures} of {cases} GPU values differ from the CPU"
    );
}

/// VIF's four scales on the GPU (kernels/vif.cu) against the CPU's scalar
/// sums: 8/10/12/16 bit up to 1920x1080, 8 and 10 bit at 3840x2160, odd
/// sizes down to VIF's minimum (16x16), odd strides, enhancement gain
/// limits 100, 1.0 and 2.5, scale 0 skipped. One row per case; any
/// differing sum fails.
#[test]
fn gpu_vif_equals_the_cpu() {
    let mut gpus = gpu_devices();
    if gpus.is_empty() {
        return;
    }
    let mut cpu = Cpu;
    let mut failures = 0;
    let mut cases = 0;
    println!(
        "{:<8} {:>3} {:>10} {:>6} {:<16} {:>5} {:<5} {:>9} {:>9}  result",
        "device", "bit", "size", "stride", "pattern", "egl", "skip0", "cpu ms", "gpu ms"
    );
    let sizes: [(usize, usize, &[u32]); 6] = [
        (3840, 2160, &[8, 10]),
        (1920, 1080, &[8, 10, 12, 16]),
        (333, 127, &[8, 10, 12, 16]),
        (67, 45, &[8, 10, 12, 16]),
        (1023, 17, &[8, 16]),
        (16, 16, &[8, 10, 12, 16]),
    ];
    for (si, &(w, h, depths)) in sizes.iter().enumerate() {
        let large = w * h > 1_000_000;
        for &bits in depths {
            let bps = if bits == 8 { 1 } else { 2 };
            let odd_pad = if bps == 1 { 3 } else { 6 };
            let mut runs: Vec<(Pattern, usize, f64, bool)> = vec![
                (Pattern::Random, 0, 100.0, false),
                (Pattern::SmoothPlusNoise, odd_pad, 100.0, false),
            ];
            if !large || bits == 10 {
                runs.push((Pattern::SmoothPlusNoise, 64, 1.0, false));
                runs.push((Pattern::Random, odd_pad, 2.5, true));
            }
            if !large {
                runs.push((Pattern::FullScaleVsZero, odd_pad, 100.0, false));
                runs.push((Pattern::Equal, 0, 100.0, false));
            }
            for (pi, (pattern, pad, egl, skip)) in runs.into_iter().enumerate() {
                let seed = 0x51f1_5eed ^ ((si as u64) << 32 | (bits as u64) << 16 | (pi as u64) << 8 | pad as u64);
                let (a, stride) = plane(w, h, bits, pad, pattern, false, seed);
                let (b, _) = plane(w, h, bits, pad, pattern, true, seed.wrapping_mul(31));
                let va = PlaneView::new(as_bytes(&a), stride, w, h, bps).unwrap();
                let vb = PlaneView::new(as_bytes(&b), stride, w, h, bps).unwrap();
                let t = std::time::Instant::now();
                let want = cpu.vif_sums(&va, &vb, bits, egl, skip).unwrap();
                let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
                for g in gpus.iter_mut() {
                    let name = format!("{:?}{}", g.info().kind, g.info().index);
                    let t = std::time::Instant::now();
                    let got = g.vif_sums(&va, &vb, bits, egl, skip);
                    let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
                    cases += 1;
                    let ok = matches!(&got, Ok(v) if *v == want);
                    if !ok {
                        failures += 1;
                    }
                    println!(
                        "{name:<8} {bits:>3} {:>10} {stride:>6} {:<16} {egl:>5} {skip:<5} {cpu_ms:>9.2} {gpu_ms:>9.2}  {} (seed {seed:#x})",
                        format!("{w}x{h}"),
                        format!("{pattern:?}"),
                        if ok { "equal" } else { "DIFFERENT" }
                    );
                    if !ok {
                        println!("    cpu {want:?}\n    gpu {got:?}");
                    }
                }
            }
        }
    }
    println!("vif: {cases} comparisons, {failures} different");
    assert_eq!(failures, 0, "{failures} of {cases} GPU VIF sums differ from the CPU");
}

/// Time of VIF on frames already in device memory (the pipeline a device
/// frame takes: no upload), 3840x2160 and 1920x1080, 8 and 10 bit: the
/// mean of 50 frames after a warm-up, each ending in its one download.
/// Informative (prints); the CUDA lane only.
#[test]
fn gpu_vif_speed() {
    use vmafx::internals::device::gpu::{backend::{KernelRunner, Scratch}, lane};
    match lane::device_count(DeviceKind::Cuda) {
        Ok(n) if n > 0 => {}
        other => {
            assert!(!gpu_required("cuda"), "VMAFX_REQUIRE_GPU=cuda: {other:?}");
            eprintln!("SKIP: no CUDA device ({other:?})");
            return;
        }
    }
    let mut engine = KernelRunner::new(lane::GpuLane::open(DeviceKind::Cuda, 0).unwrap()).unwrap();
    let (mut ref_buf, mut dis_buf) = (Scratch::default(), Scratch::default());
    for (w, h) in [(3840, 2160), (1920, 1080)] {
        for bits in [8u32, 10] {
            let bps = if bits == 8 { 1 } else { 2 };
            let (a, stride) = plane(w, h, bits, 0, Pattern::SmoothPlusNoise, false, 1);
            let (b, _) = plane(w, h, bits, 0, Pattern::SmoothPlusNoise, true, 2);
            let va = PlaneView::new(as_bytes(&a), stride, w, h, bps).unwrap();
            let vb = PlaneView::new(as_bytes(&b), stride, w, h, bps).unwrap();
            let r = engine.upload_plane(&mut ref_buf, &va).unwrap();
            let d = engine.upload_plane(&mut dis_buf, &vb).unwrap();
            let first = vif::gpu::sums_dev(&mut engine, r, d, bits, 100.0, false).unwrap();
            let frames = 50;
            let t = std::time::Instant::now();
            for _ in 0..frames {
                assert_eq!(vif::gpu::sums_dev(&mut engine, r, d, bits, 100.0, false).unwrap(), first);
            }
            let ms = t.elapsed().as_secs_f64() * 1e3 / frames as f64;
            println!("vif speed: {w}x{h} {bits}-bit: {ms:.3} ms/frame (device-resident, {frames} frames)");
        }
    }
}

/// ADM test content: (reference, distorted) planes, `pad` bytes after each
/// row. Random: independent noise; Enhanced: a textured reference and a
/// contrast-enhanced noisy copy (decouple's angle test and gain limit
/// bite); Flattened: a copy with the texture damped; MaxVsZero; Equal.
fn adm_planes(w: usize, h: usize, bits: u32, pad: usize, content: &str, seed: u64) -> [(Vec<u16>, usize); 2] {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let max = (1i64 << bits) - 1;
    let mid = 1i64 << (bits - 1);
    let scale = 1i64 << (bits - 8);
    let mut rng = Rng(seed | 1);
    let mut out = [
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
    ];
    for y in 0..h {
        for x in 0..w {
            let texture = (((x * 37 + y * 11) % 64) as i64 - 32) * scale
                + ((x as f64 * 0.3).sin() * (y as f64 * 0.2).cos() * 60.0) as i64 * scale;
            let base = mid / 2 + (x + y) as i64 * max / (2 * (w + h)) as i64;
            let mut noise = |amp: i64| (rng.next() % (2 * amp as u64 + 1)) as i64 - amp;
            let (r, d) = match content {
                "Random" => (noise(max) & max, noise(max) & max),
                "Enhanced" => (base + texture, base + texture * 5 / 4 + noise(2 * scale)),
                "Flattened" => (base + texture + noise(8 * scale), base + texture / 3 + noise(scale)),
                "MaxVsZero" => (max, 0),
                _ => (base + texture, base + texture),
            };
            for (p, v) in out.iter_mut().zip([r, d]) {
                let v = v.clamp(0, max) as u16;
                let at = y * stride + x * bps;
                let bytes = as_bytes_mut(&mut p.0);
                if bps == 1 {
                    bytes[at] = v as u8;
                } else {
                    bytes[at..at + 2].copy_from_slice(&v.to_ne_bytes());
                }
            }
        }
    }
    out
}

#[test]
fn gpu_adm_equals_the_cpu() {
    use vmafx::FeatureOptions;
    use vmafx::internals::feature::adm;
    let mut gpus = gpu_devices();
    if gpus.is_empty() {
        return;
    }
    let mut cpu = Cpu;
    let contents = ["Random", "Enhanced", "Flattened", "MaxVsZero", "Equal"];
    // (w, h, bits, content, pad, options)
    type Case<'a> = (usize, usize, u32, &'a str, usize, &'a [(&'a str, &'a str)]);
    let mut cases: Vec<Case> = Vec::new();
    for &(w, h) in &[(33, 33), (67, 45), (96, 54), (333, 127), (1023, 35), (97, 541)] {
        for bits in [8u32, 10, 12, 16] {
            for (ci, &content) in contents.iter().enumerate() {
                let pad = [0, if bits == 8 { 3 } else { 6 }, 64][(ci + w) % 3];
                cases.push((w, h, bits, content, pad, &[]));
            }
        }
    }
    for &(w, h) in &[(1920, 1080), (3840, 2160)] {
        for bits in [8u32, 10] {
            for (content, pad) in [("Enhanced", 0), ("Random", if bits == 8 { 3 } else { 6 })] {
                cases.push((w, h, bits, content, pad, &[]));
            }
        }
    }
    let option_sets: [&[(&str, &str)]; 7] = [
        &[("adm_enhn_gain_limit", "1.2")],
        &[("adm_enhn_gain_limit", "1.0")],
        &[("adm_csf_mode", "1")],
        &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")],
        &[("adm_ref_display_height", "2160")],
        &[("adm_skip_aim", "true")],
        &[("adm_skip_scale0", "true")],
    ];
    for opts in option_sets {
        cases.push((1920, 1080, 8, "Enhanced", 0, opts));
        cases.push((333, 127, 10, "Random", 6, opts));
        cases.push((67, 45, 12, "Enhanced", 64, opts));
    }
    println!(
        "{:<8} {:>3} {:>10} {:>6} {:<10} {:<44} {:>9} {:>9} {:>20}  result",
        "device", "bit", "size", "stride", "content", "options", "cpu ms", "gpu ms", "adm2"
    );
    let (mut failures, mut compared) = (0, 0);
    for (n, &(w, h, bits, content, pad, opts)) in cases.iter().enumerate() {
        let bps = if bits == 8 { 1 } else { 2 };
        let seed = 0x5eed_0000 ^ (n as u64) << 8 ^ (w * 31 + h) as u64;
        let [a, b] = adm_planes(w, h, bits, pad, content, seed);
        let va = PlaneView::new(as_bytes(&a.0), a.1, w, h, bps).unwrap();
        let vb = PlaneView::new(as_bytes(&b.0), b.1, w, h, bps).unwrap();
        let mut fo = FeatureOptions::new();
        for (k, v) in opts {
            fo.set_text(adm::DESCRIPTOR.options, k, v).unwrap();
        }
        let params = adm::AdmParams::new(w, h, bits, &fo).unwrap();
        let t = std::time::Instant::now();
        let want = cpu.adm_sums(&va, &vb, &params).unwrap();
        let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let want_scores = params.scores(&want);
        for g in gpus.iter_mut() {
            let name = format!("{:?}{}", g.info().kind, g.info().index);
            compared += 1;
            let got = g.adm_sums(&va, &vb, &params);
            // Time a few more frames (uploads included) once compiled and warm.
            let reps = if w * h >= 1920 * 1080 { 5 } else { 1 };
            let t = std::time::Instant::now();
            for _ in 0..reps {
                let _ = g.adm_sums(&va, &vb, &params);
            }
            let gpu_ms = t.elapsed().as_secs_f64() * 1e3 / reps as f64;
            let (ok, detail) = match &got {
                Ok(s) => {
                    let sc = params.scores(s);
                    let same_scores = [(sc.adm2, want_scores.adm2), (sc.aim, want_scores.aim), (sc.adm3, want_scores.adm3)]
                        .iter()
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                    let ok = *s == want && same_scores;
                    (ok, if ok { String::new() } else { format!("\n  cpu {want:?}\n  gpu {s:?}") })
                }
                Err(e) => (false, format!(" error: {e}")),
            };
            if !ok {
                failures += 1;
            }
            println!(
                "{name:<8} {bits:>3} {:>10} {:>6} {content:<10} {:<44} {cpu_ms:>9.2} {gpu_ms:>9.2} {:>20.17}  {}{detail}",
                format!("{w}x{h}"),
                a.1,
                format!("{opts:?}"),
                want_scores.adm2,
                if ok { "equal" } else { "DIFFERENT" }
            );
        }
    }
    println!("adm: {compared} comparisons, {failures} different");
    assert_eq!(failures, 0, "{failures} of {compared} GPU ADM sums differ from the CPU");
}

/// ADM on device-resident planes (uploaded once), as a pipeline with frames
/// on the GPU runs it: milliseconds per frame at 1080p and 4K, kernels and
/// the one download included. Checks the sums against the CPU once.
#[test]
fn gpu_adm_device_resident_timing() {
    use vmafx::internals::device::gpu::{backend::{KernelRunner, Scratch}, lane};
    use vmafx::FeatureOptions;
    use vmafx::internals::feature::adm;
    match lane::device_count(DeviceKind::Cuda) {
        Ok(n) if n > 0 => {}
        other => {
            assert!(!gpu_required("cuda"), "VMAFX_REQUIRE_GPU=cuda: {other:?}");
            eprintln!("SKIP cuda: {other:?}");
            return;
        }
    }
    let mut engine = KernelRunner::new(lane::GpuLane::open(DeviceKind::Cuda, 0).unwrap()).unwrap();
    let (mut ref_buf, mut dis_buf) = (Scratch::default(), Scratch::default());
    println!("{:>10} {:>3} {:>10} {:>8}", "size", "bit", "ms/frame", "fps");
    for &(w, h) in &[(1920, 1080), (3840, 2160)] {
        for bits in [8u32, 10] {
            let bps = if bits == 8 { 1 } else { 2 };
            let [a, b] = adm_planes(w, h, bits, 0, "Enhanced", 7);
            let va = PlaneView::new(as_bytes(&a.0), a.1, w, h, bps).unwrap();
            let vb = PlaneView::new(as_bytes(&b.0), b.1, w, h, bps).unwrap();
            let params = adm::AdmParams::new(w, h, bits, &FeatureOptions::new()).unwrap();
            let r = engine.upload_plane(&mut ref_buf, &va).unwrap();
            let d = engine.upload_plane(&mut dis_buf, &vb).unwrap();
            let got = adm::gpu::sums_dev(&mut engine, r, d, &params).unwrap();
            assert_eq!(got, adm::sums_scalar(&params, &va, &vb).unwrap(), "{w}x{h} {bits}-bit");
            let frames = 50;
            let t = std::time::Instant::now();
            for _ in 0..frames {
                adm::gpu::sums_dev(&mut engine, r, d, &params).unwrap();
            }
            let ms = t.elapsed().as_secs_f64() * 1e3 / frames as f64;
            println!("{:>10} {bits:>3} {ms:>10.3} {:>8.0}", format!("{w}x{h}"), 1e3 / ms);
        }
    }
}
