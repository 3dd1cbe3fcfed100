//! Whole scoring contexts on an emulated GPU, checked against the CPU
//! context on a machine without a GPU: `GpuDevice::from_backend` puts the
//! kernel emulator (tests/device_emu/kernel_emu.cpp, the kernels of
//! kernels/ built as host C++) behind each lane, and a context on such
//! lanes (0 and 2 worker threads) must write every value, aggregate and
//! pooled score the CPU context writes, as the same bits: host pictures
//! (copied once per frame per picture), device pictures (read in place
//! after their ready events), mixed pairs; and refuse what it cannot read.
//!
//! Needs a C++20 compiler (`c++`, or $CXX); missing, it skips unless
//! VMAFX_REQUIRE_GPU_COMPILERS=1.

use crate::support::synth;
use crate::support::contexts;
use crate::support::emulator;

use contexts::{add_features, assert_same, host, score, use_models, use_speed_chroma, use_ssim, Clip};
use emulator::{build_emulator, World};
use std::sync::Arc;
use vmafx::{Chroma, Context, ContextConfig, DeviceKind, FeatureOptions, OwnedPicture, Picture, PictureSource};
use vmafx::internals::device::gpu::GpuDevice;
use vmafx::internals::device::gpu::backend::{Backend, DevPlane, DeviceEvent, EventRef};
use vmafx::internals::device::{DeviceFrame, DeviceInfo, DeviceMemoryId, FenceKind, MemoryKind};

/// The memory the emulator's lanes read in place (its "device pointers"
/// are host addresses, so an [`OwnedPicture`]'s planes serve as device
/// pictures).
const EMU_MEMORY: DeviceMemoryId = DeviceMemoryId {
    kind: DeviceKind::Cuda,
    context: 0xe1e1,
};

/// An emulated device; `None` (skip) without a C++ compiler.
fn emulated_world() -> Option<Arc<World>> {
    build_emulator().map(|e| Arc::clone(e.world()))
}

/// A lane on a new stream of `world`.
fn emulated_lane(world: &Arc<World>) -> vmafx::Result<GpuDevice> {
    let info = DeviceInfo {
        kind: DeviceKind::Cuda,
        index: 0,
        name: "kernel emulator".into(),
        arch: "host C++".into(),
        memory_bytes: 0,
        memory_kinds: vec![MemoryKind::Host, MemoryKind::CudaDevice],
        fence_kinds: vec![FenceKind::None, FenceKind::Stream],
    };
    GpuDevice::from_backend(world.stream(), info)
}

/// A picture with no host planes, only device ones (for the emulator,
/// the addresses of an [`OwnedPicture`]'s planes).
struct DevicePicture {
    _owner: OwnedPicture,
    frame: DeviceFrame,
}

impl PictureSource for DevicePicture {
    fn host(&self) -> Option<Picture<'_>> {
        None
    }
    fn device_frame(&self) -> Option<&DeviceFrame> {
        Some(&self.frame)
    }
}

fn on_device(p: &OwnedPicture, memory: DeviceMemoryId, ready: Option<u64>) -> Arc<dyn PictureSource> {
    let owner = p.clone();
    let view = owner.view();
    let planes = (0..view.plane_count())
        .map(|i| {
            let plane = view.plane(i);
            DevPlane {
                ptr: plane.data().as_ptr() as u64,
                pitch: plane.stride(),
                width: plane.width(),
                height: plane.height(),
                bytes_per_sample: plane.bytes_per_sample(),
            }
        })
        .collect();
    let frame = DeviceFrame {
        memory,
        format: view.format(),
        width: view.width(),
        height: view.height(),
        planes,
        ready,
    };
    // The planes are heap buffers: moving their owner keeps them in place.
    Arc::new(DevicePicture { _owner: owner, frame })
}

fn cpu_context(frames: &Clip, threads: usize, motion: bool) -> Context {
    let cfg = ContextConfig { threads, ..Default::default() };
    score(Context::new(cfg).unwrap(), frames, motion, host).unwrap()
}

fn emulated_context(threads: usize, world: &Arc<World>) -> Context {
    let cfg = ContextConfig { threads, ..Default::default() };
    Context::with_lanes(cfg, || emulated_lane(world)).unwrap()
}

#[test]
fn emulated_context_equals_the_cpu_context() {
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    let mut values = 0;
    // Odd sizes, every chroma layout, 8 to 16 bits; 1x2 4:2:0 has empty
    // chroma planes (PSNR alone: motion needs 3x3).
    // The emulator runs a block at ~10 ms on a busy machine: small frames,
    // and 2 threads on two of them.
    let cases = [
        (Chroma::Yuv420, 8, 21, 9, true, 2),
        (Chroma::Yuv422, 10, 19, 7, true, 0),
        (Chroma::Yuv444, 12, 17, 5, true, 0),
        (Chroma::Yuv420, 16, 23, 9, true, 2),
        (Chroma::Yuv400, 8, 16, 6, true, 0),
        (Chroma::Yuv420, 8, 1, 2, false, 0),
    ];
    for (chroma, bits, w, h, motion, max_threads) in cases {
        let frames = synth::clip(chroma, bits, w, h, 3, 0x5eed ^ w as u64);
        let thread_counts = if max_threads > 0 { vec![0, max_threads] } else { vec![0] };
        for threads in thread_counts {
            let what = format!("{w}x{h} {} {bits}-bit, {threads} threads", chroma.name());
            let cpu = cpu_context(&frames, threads, motion);
            let dev = score(emulated_context(threads, &world), &frames, motion, host).unwrap();
            assert_eq!(dev.device_memory(), Some(EMU_MEMORY));
            assert_eq!(cpu.device_memory(), None);
            values += assert_same(&cpu, &dev, &what);
            if threads == 0 {
                // One lane: each frame copies its reference and distorted
                // pictures; the previous reference is still on the lane.
                assert_eq!(dev.host_uploads(), 2 * frames.len() as u64, "{what}: host copies");
            }
        }
    }
    eprintln!("{values} values equal ({:.1} s)", started.elapsed().as_secs_f64());
}

#[test]
fn emulated_context_reads_device_pictures_in_place() {
    let Some(world) = emulated_world() else { return };
    let frames = synth::clip(Chroma::Yuv420, 10, 19, 7, 3, 0xd1ce);
    let cpu = cpu_context(&frames, 0, true);
    // Both pictures on the device, each ready after an event a producer
    // stream recorded: no copy.
    let mut producer = world.stream();
    for threads in [0, 2] {
        // Kept until the context is done with the pictures.
        let mut readies = Vec::new();
        let dev = score(emulated_context(threads, &world), &frames, true, |p, _, _| {
            let ready = producer.create_event().unwrap();
            producer.record_event(EventRef::of(&ready)).unwrap();
            let handle = ready.handle();
            readies.push(ready);
            on_device(p, EMU_MEMORY, Some(handle))
        })
        .unwrap();
        assert_same(&cpu, &dev, &format!("device pictures, {threads} threads"));
        assert_eq!(dev.host_uploads(), 0, "device pictures are read in place");
    }

    // A picture whose producer never finishes: the lane's stream waits on
    // its event, so the frame never completes (the emulator reports the
    // stuck stream) instead of reading unwritten planes.
    let stuck = world.blocked_event();
    let err = score(emulated_context(0, &world), &frames, true, |p, _, _| {
        on_device(p, EMU_MEMORY, Some(stuck))
    })
    .err()
    .expect("a frame behind an unsignalled event must not be scored")
    .to_string();
    assert!(err.contains("wait forever"), "{err}");

    // Mixed pairs: a host reference (copied) and a device distorted picture.
    let dev = score(emulated_context(0, &world), &frames, true, |p, i, which| {
        if which == "reference" {
            host(p, i, which)
        } else {
            on_device(p, EMU_MEMORY, None)
        }
    })
    .unwrap();
    assert_same(&cpu, &dev, "host reference, device distorted");
    assert_eq!(dev.host_uploads(), frames.len() as u64, "only the references are copied");
}

#[test]
fn emulated_context_refuses_what_it_cannot_read() {
    let Some(world) = emulated_world() else { return };
    let frames = synth::clip(Chroma::Yuv420, 8, 9, 7, 1, 7);
    let (r, d) = &frames[0];

    // A device picture of another context: the error names both memories.
    let other = DeviceMemoryId {
        kind: DeviceKind::Cuda,
        context: 0xbad0,
    };
    let mut ctx = emulated_context(0, &world);
    add_features(&mut ctx, true).unwrap();
    let err = ctx
        .push(host(r, 0, ""), on_device(d, other, None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("0xbad0") && err.contains("0xe1e1") && err.contains("distorted"),
        "{err}"
    );

    // (Every extractor has a device twin now; one without would be refused
    // by name at the first frame: Extractor::has_device_twin.)

    // A CPU context refuses a device picture.
    let mut ctx = Context::new(ContextConfig::default()).unwrap();
    add_features(&mut ctx, true).unwrap();
    let err = ctx
        .push(on_device(r, EMU_MEMORY, None), host(d, 0, ""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("scores on the CPU"), "{err}");
}

/// VIF (its device twin) with motion and PSNR: a whole context on the
/// emulator equals the CPU context.
#[test]
fn emulated_context_with_vif_equals_the_cpu_context() {
    let Some(world) = emulated_world() else { return };
    for (chroma, bits, w, h) in [(Chroma::Yuv420, 8, 33, 19), (Chroma::Yuv422, 10, 17, 16)] {
        let frames = synth::clip(chroma, bits, w, h, 3, 0x71f ^ w as u64);
        let with_vif = |mut ctx: Context| -> Context {
            ctx.use_feature("vif", FeatureOptions::new()).unwrap();
            score(ctx, &frames, true, host).unwrap()
        };
        let cpu = with_vif(Context::new(ContextConfig::default()).unwrap());
        let dev = with_vif(emulated_context(0, &world));
        let n = assert_same(&cpu, &dev, &format!("vif {w}x{h} {bits}-bit"));
        eprintln!("vif {w}x{h} {bits}-bit: {n} values equal");
    }
}

/// The VMAF models on the emulator: VIF, ADM, motion (device twins) and
/// the model scores equal the CPU context's, per frame and pooled.
#[test]
fn emulated_context_scores_vmaf_models_as_the_cpu() {
    let Some(world) = emulated_world() else { return };
    for (chroma, bits, w, h, threads) in [(Chroma::Yuv420, 8, 37, 33, 0), (Chroma::Yuv422, 10, 33, 35, 2)] {
        let frames = synth::clip(chroma, bits, w, h, 3, 0xadd ^ w as u64);
        let with_models = |mut ctx: Context| -> Context {
            use_models(&mut ctx, &[("vmaf_v0.6.1", "vmaf"), ("vmaf_v0.6.1neg", "vmaf_neg")]);
            // The models' motion, and PSNR.
            score(ctx, &frames, false, host).unwrap()
        };
        let cfg = ContextConfig { threads, ..Default::default() };
        let cpu = with_models(Context::new(cfg.clone()).unwrap());
        let dev = with_models(emulated_context(threads, &world));
        let n = assert_same(&cpu, &dev, &format!("vmaf {w}x{h} {bits}-bit, {threads} threads"));
        eprintln!("vmaf models {w}x{h} {bits}-bit, {threads} threads: {n} values equal");
    }
}

/// Scores `frames` (host pictures) on `ctx` with only the features the
/// caller added (no PSNR: its row kernels would take most of the
/// emulator's time).
fn only(mut ctx: Context, frames: &Clip) -> Context {
    for (r, d) in frames {
        ctx.push(host(r, 0, ""), host(d, 0, "")).unwrap();
    }
    ctx.flush().unwrap();
    ctx
}

/// float_ssim and float_ms_ssim (kernels/ssim.cu: float convolutions,
/// per-pixel terms summed on the host in the CPU's order): every value,
/// the l/c/s terms of each scale and the dB forms, equal to the CPU
/// context's as bits; 8 to 16 bits, 4:2:0 / 4:4:4 / gray, odd sizes,
/// float_ssim decimated by 2, 3 and 5 (odd sizes: the decimated size
/// rounds up) and not at all.
#[test]
fn emulated_context_scores_ssim_and_ms_ssim_as_the_cpu() {
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    // (chroma, bits, w, h, MS-SSIM (needs 176 a side), float_ssim scale,
    // dB options)
    let cases = [
        (Chroma::Yuv420, 8, 181, 177, true, 0, false),
        (Chroma::Yuv444, 10, 177, 179, true, 2, true),
        (Chroma::Yuv420, 12, 47, 37, false, 3, true),
        (Chroma::Yuv400, 16, 61, 58, false, 5, false),
        (Chroma::Yuv420, 8, 23, 19, false, 1, true),
        (Chroma::Yuv444, 16, 15, 12, false, 0, false),
    ];
    for (chroma, bits, w, h, ms, scale, db) in cases {
        // Distortion strength is the frame index mod 5: the small cases
        // take four frames (up to strength 3), MS-SSIM's 176-a-side two.
        let frames = synth::clip(chroma, bits, w, h, if ms { 2 } else { 4 }, 0x551 ^ w as u64);
        let with_ssim = |mut ctx: Context| -> Context {
            use_ssim(&mut ctx, scale, db, ms);
            only(ctx, &frames)
        };
        let what = format!("ssim {w}x{h} {} {bits}-bit, scale {scale}, ms {ms}", chroma.name());
        let cpu = with_ssim(Context::new(ContextConfig::default()).unwrap());
        let dev = with_ssim(emulated_context(0, &world));
        let n = assert_same(&cpu, &dev, &what);
        eprintln!("{what}: {n} values equal");
    }
    eprintln!("ssim cases: {:.1} s", started.elapsed().as_secs_f64());
}

/// speed_chroma (kernels/speed.cu: the copy, blur and decimation by 16 on
/// the device; the block statistics on the host with the CPU's code):
/// every value equal to the CPU context's as bits, 8 to 16 bits, 4:2:0,
/// 4:2:2 and 4:4:4 at odd sizes, kernel scales 1, 1.5 and 0.5, weight
/// modes 0, 1 and 5 (the v1.0.16 models'); a prescaled one is refused by name
/// (its prescaler has no device twin yet).
#[test]
fn emulated_context_scores_speed_chroma_as_the_cpu() {
    use vmafx::internals::feature::speed::CHROMA_DESCRIPTOR;
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    let cases = [
        // Chroma planes of ~320x240: a 20x15 decimated picture, 176 5x5
        // windows, so the covariance matrices are regular (smaller ones
        // are singular and score 0 whatever the blur gives).
        (Chroma::Yuv420, 8, 641, 483, "1", "0"),
        (Chroma::Yuv444, 10, 333, 245, "1.5", "1"),
        (Chroma::Yuv422, 12, 645, 250, "0.5", "5"),
        (Chroma::Yuv444, 16, 330, 257, "1", "5"),
    ];
    for (chroma, bits, w, h, ks, mode) in cases {
        let frames = synth::clip(chroma, bits, w, h, 4, 0x5bed ^ w as u64);
        let with_speed = |mut ctx: Context| -> Context {
            use_speed_chroma(&mut ctx, ks, mode, &[]);
            only(ctx, &frames)
        };
        let what = format!("speed_chroma {w}x{h} {} {bits}-bit, ks {ks}, mode {mode}", chroma.name());
        let cpu = with_speed(Context::new(ContextConfig::default()).unwrap());
        let dev = with_speed(emulated_context(0, &world));
        let n = assert_same(&cpu, &dev, &what);
        eprintln!("{what}: {n} values equal");
    }
    // A prescale: refused at the first frame, naming the option.
    let frames = synth::clip(Chroma::Yuv444, 8, 97, 83, 1, 3);
    let mut ctx = emulated_context(0, &world);
    let mut o = FeatureOptions::new();
    o.set_text(CHROMA_DESCRIPTOR.options, "speed_prescale", "1.5").unwrap();
    ctx.use_feature("speed_chroma", o).unwrap();
    let (r, d) = &frames[0];
    let err = ctx.push(host(r, 0, ""), host(d, 0, "")).and_then(|_| ctx.flush()).unwrap_err().to_string();
    assert!(err.contains("speed_prescale") && err.contains("CPU context"), "{err}");
    eprintln!("speed_chroma cases: {:.1} s", started.elapsed().as_secs_f64());
}

/// speed_temporal (kernels/speed.cu: the copies, their difference, the
/// blur and decimation by 16 on the device; the block statistics on the
/// host with the CPU's code): every value equal to the CPU context's as
/// bits, 8 to 16 bits at odd sizes, kernel scales 1 and 1.5, with and
/// without speed_use_ref_diff, on 0 and 2 worker threads (the previous
/// distorted picture placed beside the previous reference); a prescaled
/// one is refused by name.
#[test]
fn emulated_context_scores_speed_temporal_as_the_cpu() {
    use vmafx::internals::feature::speed::TEMPORAL_DESCRIPTOR;
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    let cases = [
        (Chroma::Yuv420, 8, 331, 247, "1", false, 0),
        (Chroma::Yuv400, 10, 257, 243, "1.5", true, 2),
        (Chroma::Yuv444, 12, 249, 161, "1", false, 2),
        (Chroma::Yuv422, 16, 163, 251, "1", true, 0),
    ];
    for (chroma, bits, w, h, ks, ref_diff, threads) in cases {
        let frames = synth::clip(chroma, bits, w, h, 4, 0x7e3 ^ w as u64);
        let with_speed = |mut ctx: Context| -> Context {
            let mut o = FeatureOptions::new();
            o.set_text(TEMPORAL_DESCRIPTOR.options, "speed_kernelscale", ks).unwrap();
            o.set_text(TEMPORAL_DESCRIPTOR.options, "speed_use_ref_diff", if ref_diff { "true" } else { "false" }).unwrap();
            // The v1.0.16 models' noise settings.
            o.set_text(TEMPORAL_DESCRIPTOR.options, "speed_nn_floor", "0.1").unwrap();
            o.set_text(TEMPORAL_DESCRIPTOR.options, "speed_sigma_nn", "0.19").unwrap();
            ctx.use_feature("speed_temporal", o).unwrap();
            only(ctx, &frames)
        };
        let what = format!("speed_temporal {w}x{h} {} {bits}-bit, ks {ks}, ref diff {ref_diff}, {threads} threads", chroma.name());
        let cpu = with_speed(Context::new(ContextConfig { threads, ..Default::default() }).unwrap());
        let dev = with_speed(emulated_context(threads, &world));
        let n = assert_same(&cpu, &dev, &what);
        // Frame 0 scores 0 by definition: the later ones must not all be 0.
        let name = cpu.collector().names().iter().find(|n| n.contains("speed_temporal")).unwrap();
        let values = cpu.collector().column(name).unwrap();
        assert!(values[1..].iter().any(|&v| v.is_some_and(|v| v != 0.0)), "{what}: every temporal score is 0 ({values:?})");
        eprintln!("{what}: {n} values equal");
    }
    // A prescale: refused at the second frame (the first scores 0 without the device), naming the option.
    let frames = synth::clip(Chroma::Yuv420, 8, 181, 163, 2, 3);
    let mut ctx = emulated_context(0, &world);
    let mut o = FeatureOptions::new();
    o.set_text(TEMPORAL_DESCRIPTOR.options, "speed_prescale", "0.5").unwrap();
    ctx.use_feature("speed_temporal", o).unwrap();
    let err = frames
        .iter()
        .enumerate()
        .try_for_each(|(i, (r, d))| ctx.push(host(r, i, ""), host(d, i, "")))
        .and_then(|_| ctx.flush())
        .unwrap_err()
        .to_string();
    assert!(err.contains("speed_prescale") && err.contains("CPU context"), "{err}");
    eprintln!("speed_temporal cases: {:.1} s", started.elapsed().as_secs_f64());
}

/// cambi (kernels/cambi.cu: the whole luma pass on the device, the
/// pooled values read back): every value equal to the CPU context's as
/// bits, on banded clips (a scene cut, steps of 2 to 4 codes) at 8, 10, 12
/// and 16 bits, odd sizes, no-reference and full_ref, anti-dithering
/// (enc_bitdepth 8), a resize to the encode size, 1 to 8 contrast steps,
/// top-k 0.2, a window taller than the smallest scale, the high-res
/// speed-up at 1080p; the scores must not all be 0, and no scale may fall
/// back to pooling on the host.
#[test]
fn emulated_context_scores_cambi_as_the_cpu() {
    use vmafx::internals::feature::cambi::DESCRIPTOR;
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    let pooled_on_host = vmafx::internals::feature::cambi::scales_pooled_on_host();
    let cases: [(Chroma, u8, usize, usize, &[(&str, &str)]); 6] = [
        (Chroma::Yuv420, 8, 241, 223, &[]),
        (Chroma::Yuv400, 10, 251, 219, &[("full_ref", "true"), ("max_log_contrast", "3"), ("topk", "0.2")]),
        (Chroma::Yuv444, 12, 233, 227, &[("enc_bitdepth", "8"), ("max_log_contrast", "0")]),
        (Chroma::Yuv420, 16, 255, 231, &[("enc_width", "221"), ("enc_height", "217"), ("window_size", "127")]),
        // An 11-row window over the 8 rows of scale 4: libvmaf's top and
        // bottom loops overlap there (rows computed twice, the later wins).
        (Chroma::Yuv420, 10, 401, 121, &[("window_size", "127")]),
        // The high-res speed-up (the first scale decimated too): it needs
        // an encode of 1920x1080 pixels or more.
        (Chroma::Yuv420, 8, 1920, 1080, &[("cambi_high_res_speedup", "1080")]),
    ];
    for (chroma, bits, w, h, options) in cases {
        // One frame at 1080p (the emulator's time), two (a scene cut) below.
        let frames = synth::banded_clip(chroma, bits, w, h, if w * h > 1 << 20 { 1 } else { 2 }, 0xca ^ w as u64);
        let with_cambi = |mut ctx: Context| -> Context {
            let mut o = FeatureOptions::new();
            for (k, v) in options {
                o.set_text(DESCRIPTOR.options, k, v).unwrap();
            }
            ctx.use_feature("cambi", o).unwrap();
            only(ctx, &frames)
        };
        let what = format!("cambi {w}x{h} {} {bits}-bit, {options:?}", chroma.name());
        let cpu = with_cambi(Context::new(ContextConfig::default()).unwrap());
        let dev = with_cambi(emulated_context(0, &world));
        let n = assert_same(&cpu, &dev, &what);
        let name = cpu.collector().names().iter().find(|n| n.contains("cambi")).unwrap();
        let values = cpu.collector().column(name).unwrap();
        assert!(values.iter().any(|v| v.is_some_and(|v| v > 0.0)), "{what}: every cambi score is 0 ({values:?})");
        eprintln!("{what}: {n} values equal ({:.1} s so far)", started.elapsed().as_secs_f64());
    }
    // Every scale pooled on the device (the exact sum, no c-values read
    // back): a wrong selection falls back to the host and shows here.
    assert_eq!(vmafx::internals::feature::cambi::scales_pooled_on_host(), pooled_on_host, "scales pooled on the host");
}

/// cambi on the lane reads the device luma itself (no read-back), so it
/// also checks the samples itself: a 10-bit sample above 1023 is refused
/// with the CPU's message, naming the first such sample in row order (one
/// above the maximum; a larger one later).
#[test]
fn emulated_context_refuses_cambi_luma_out_of_range_as_the_cpu() {
    let Some(world) = emulated_world() else { return };
    let mut frames = synth::banded_clip(Chroma::Yuv420, 10, 241, 223, 1, 0x0b);
    let dist = &mut frames[0].1;
    let stride = dist.stride(0);
    for (x, y, v) in [(200usize, 9usize, 1100u16), (17, 5, 1024), (30, 5, 1023)] {
        dist.plane_bytes_mut(0)[y * stride + 2 * x..][..2].copy_from_slice(&v.to_ne_bytes());
    }
    let err_of = |mut ctx: Context| -> String {
        ctx.use_feature("cambi", FeatureOptions::new()).unwrap();
        let (r, d) = &frames[0];
        ctx.push(host(r, 0, ""), host(d, 0, "")).and_then(|_| ctx.flush()).unwrap_err().to_string()
    };
    let cpu = err_of(Context::new(ContextConfig::default()).unwrap());
    let dev = err_of(emulated_context(0, &world));
    let message = &cpu[cpu.find("cambi: luma sample").expect("the CPU names the sample")..];
    assert_eq!(message, "cambi: luma sample (17,5) = 1024 exceeds the maximum 1023 of a 10-bit picture", "{cpu}");
    assert!(dev.contains("on the device") && dev.ends_with(message), "the device's refusal: {dev}\nthe CPU's: {cpu}");
}

/// VMAF v1.0.16 (`vmaf_v1.0.16_3d0h` and `vmaf_v1.0.16_hfr_3d0h`) on the
/// emulated lane: every feature they read (adm3 with its options, motion3,
/// with the hfr model's five-frame window, cambi with its high-res option,
/// speed_chroma, vif) has a device twin, so the context refuses nothing
/// and every value, the model scores included, equals the CPU context's;
/// 4 frames, so the five-frame window's SAD (from frame 2) is reached.
#[test]
fn emulated_context_scores_vmaf_v1016_as_the_cpu() {
    use vmafx::{Model, ModelConfig};
    let Some(world) = emulated_world() else { return };
    let started = std::time::Instant::now();
    // The smallest pictures the model scores (cambi: a side of 216;
    // SpEED: 80x80 chroma after decimating by 16).
    for (chroma, bits, w, h) in [(Chroma::Yuv420, 8, 241, 217), (Chroma::Yuv420, 10, 227, 219)] {
        let frames = synth::banded_clip(chroma, bits, w, h, 4, 0x1016 ^ w as u64);
        let with_model = |mut ctx: Context| -> Context {
            for (version, name) in [("vmaf_v1.0.16_3d0h", "vmaf"), ("vmaf_v1.0.16_hfr_3d0h", "vmaf_hfr")] {
                let cfg = ModelConfig { name: Some(name.into()), ..Default::default() };
                ctx.use_model(Model::builtin(version, &cfg).unwrap()).unwrap();
            }
            only(ctx, &frames)
        };
        let what = format!("vmaf_v1.0.16_3d0h and _hfr_3d0h {w}x{h} {} {bits}-bit", chroma.name());
        let cpu = with_model(Context::new(ContextConfig::default()).unwrap());
        let dev = with_model(emulated_context(0, &world));
        let n = assert_same(&cpu, &dev, &what);
        let names = cpu.collector().names().to_vec();
        for want in ["cambi", "speed_chroma", "integer_adm3", "integer_motion3", "vmaf", "vmaf_hfr"] {
            assert!(names.iter().any(|n| n.contains(want)), "{what}: no {want} in {names:?}");
        }
        eprintln!("{what}: {n} values equal ({:.1} s so far)", started.elapsed().as_secs_f64());
    }
}
