//! The kernels in kernels/ and the GPU engine's launches, checked against
//! the CPU on a machine without a GPU: tests/device_emu/kernel_emu.cpp
//! compiles the same kernel sources as host C++ (each block's threads are
//! real threads meeting at a barrier for __syncthreads) and takes launches
//! in cuLaunchKernel's (grid, void **args) form, and this test gives the real
//! [`KernelRunner`] a [`Backend`] that runs them. What a GPU adds (its compiler,
//! memory model, warps) is left to tests/device/twins.rs on a GPU host.
//!
//! Needs a C++20 compiler (`c++`, or $CXX); missing, it skips unless
//! VMAFX_REQUIRE_GPU_COMPILERS=1.

use crate::support::emulator;
use crate::support::device_planes;

use device_planes::{layout, plane_of, view, Rng, LAYOUT_FORMATS};

use emulator::build_emulator;
use vmafx::internals::device::gpu::backend::KernelRunner;

/// 16-bit-aligned plane storage: (buffer, stride in bytes).
fn plane(
    w: usize,
    h: usize,
    bits: u32,
    pad: usize,
    full_scale: Option<bool>,
    seed: u64,
) -> (Vec<u16>, usize) {
    let max = (1u64 << bits) - 1;
    let mut rng = Rng(seed | 1);
    plane_of(w, h, bits, pad, |_, _| match full_scale {
        Some(true) => max,
        Some(false) => 0,
        None => rng.next() % (max + 1),
    })
}

#[test]
fn emulated_kernels_through_the_engine_equal_the_cpu() {
    let Some(emu) = build_emulator() else { return };
    let mut engine = KernelRunner::new(emu).unwrap();
    let mut y_row = Vec::new();
    let mut cases = 0;
    // (260, 37): motion's tiles (256 x 16) meet in both directions;
    // (780, 21): two of them need no column mirror (aligned group loads
    // where the stride allows, pad 0; sample by sample where not, pad 6).
    for (w, h) in [(17, 9), (300, 7), (513, 5), (8, 8), (260, 37), (780, 21)] {
        for bits in [8u32, 10, 12, 16] {
            for (pattern, pad) in [("random", 0), ("random", 6), ("max-vs-0", 2)] {
                let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ pad as u64;
                let (a, b) = if pattern == "random" {
                    (
                        plane(w, h, bits, pad, None, seed),
                        plane(w, h, bits, pad, None, seed ^ 0xdead_beef),
                    )
                } else {
                    (
                        plane(w, h, bits, pad, Some(true), 0),
                        plane(w, h, bits, pad, Some(false), 0),
                    )
                };
                let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
                let what = format!("{w}x{h} {bits}-bit stride {} {pattern} seed {seed:#x}", a.1);

                let want = vmafx::internals::feature::motion::sad_scalar(&va, &vb, bits, &mut y_row);
                assert_eq!(
                    vmafx::internals::feature::motion::gpu::sad(&mut engine, &va, &vb, bits).unwrap(),
                    want,
                    "motion {what}"
                );
                assert!(
                    want > 0 || pattern != "random",
                    "motion {what}: degenerate case"
                );

                let want = if bits == 8 {
                    vmafx::internals::feature::psnr::sse_u8(&va, &vb, w, h)
                } else {
                    vmafx::internals::feature::psnr::sse_u16(&va, &vb, w, h)
                };
                assert_eq!(vmafx::internals::feature::psnr::gpu::sse(&mut engine, &va, &vb, w, h).unwrap(), want, "sse {what}");
                // A sub-region, as chroma of odd sizes is read (floor, not ceil).
                let (sw, sh) = (w - 1, h - 1);
                let want = if bits == 8 {
                    vmafx::internals::feature::psnr::sse_u8(&va, &vb, sw, sh)
                } else {
                    vmafx::internals::feature::psnr::sse_u16(&va, &vb, sw, sh)
                };
                assert_eq!(
                    vmafx::internals::feature::psnr::gpu::sse(&mut engine, &va, &vb, sw, sh).unwrap(),
                    want,
                    "sse region {what}"
                );
                cases += 1;
            }
        }
    }
    drop(engine);
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    eprintln!("{cases} cases equal");
}

// ---------------------------------------------------------------------------
// Device-frame import (src/import/gpu.rs) through the emulated device:
// layouts planarised as the CPU does them, refusals, fences and the order
// of the library stream, the readers' streams and the release.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use vmafx::{FrameDescriptor, PictureSource};
use vmafx::internals::device::DeviceFrame;
use vmafx::internals::device::gpu::backend::{ArrayExtent, Backend, DevPlane, DeviceEvent, DeviceMemory, Pitched, Scratch};
use vmafx::internals::import::gpu::{wait_ready, GpuImporter};
use vmafx::internals::import::{AcquireFence, DrmFourcc, DrmModifier, HostFence, ImportErrorKind, Layer, Memory, Object, PlaneRef, ReleaseFence};

/// Device memory of the emulated device holding `bytes`.
fn device_buffer(emu: &mut emulator::Emulator, bytes: &[u8]) -> emulator::EmuBuffer {
    let buffer = emu.alloc(bytes.len()).unwrap();
    emu.world().poke(buffer.ptr(), bytes);
    buffer
}

/// A device plane's samples, read back from the emulated device.
fn read_plane(emu: &emulator::Emulator, p: &DevPlane) -> Vec<Vec<u16>> {
    (0..p.height)
        .map(|y| {
            let row = emu.world().peek(p.ptr + (y * p.pitch) as u64, p.width * p.bytes_per_sample);
            if p.bytes_per_sample == 1 {
                row.iter().map(|&b| b as u16).collect()
            } else {
                row.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect()
            }
        })
        .collect()
}

fn assert_frame(emu: &emulator::Emulator, f: &DeviceFrame, want: &[Vec<Vec<u16>>], planes: usize, what: &str) {
    assert_eq!(f.planes.len(), planes, "{what}: planes");
    for (i, p) in f.planes.iter().enumerate() {
        assert_eq!((p.width, p.height), (want[i][0].len(), want[i].len()), "{what}: plane {i} size");
        assert_eq!(read_plane(emu, p), want[i], "{what}: plane {i}");
    }
}

#[test]
fn device_frames_planarised_as_the_cpu_does() {
    let Some(mut emu) = build_emulator() else { return };
    let importer = GpuImporter::new(emu.world().stream(), true).unwrap();
    let gray = importer.with_chroma(false);
    let cpu = vmafx::HostImporter::new(true);
    let mut cases = 0;
    for format in LAYOUT_FORMATS {
        for (w, h) in [(1, 1), (17, 9), (300, 5), (513, 3)] {
            for (offset, pad) in [(0, 0), (6, 3), (64, 10)] {
                let seed = (w * 7919 + h * 31 + offset * 3 + pad) as u64 ^ format as u64;
                let l = layout(format, w, h, offset, pad, seed);
                let what = format!("{format} {w}x{h} offset {offset} pad {pad} seed {seed:#x}");
                let ptr_buffer = device_buffer(&mut emu, &l.bytes);
                let ptr = ptr_buffer.ptr();
                let frame = importer
                    .import(l.descriptor(&what, Memory::DevicePointer(ptr), 0))
                    .unwrap_or_else(|r| panic!("{what}: {r}"));
                assert!(frame.host().is_none());
                let f = frame.device_frame().unwrap();
                assert_eq!(f.format.bits, l.bits);
                let mut reader = emu.world().stream();
                wait_ready(f, &mut reader).unwrap();
                reader.synchronize().unwrap();
                assert_frame(&emu, f, &l.want, 3, &what);
                // 8-bit planar and 16-bit luma read in place: the producer's
                // pointer, at its offset and pitch.
                if l.bits == 8 || l.bits == 16 {
                    assert_eq!(f.planes[0].ptr, ptr + offset as u64, "{what}: luma in place");
                    assert_eq!(f.planes[0].pitch, l.planes[0].pitch as usize);
                }
                // The CPU lane on the same bytes gives the same planes.
                if matches!(format, DrmFourcc::Nv12 | DrmFourcc::P010 | DrmFourcc::P016 | DrmFourcc::Yuv420) {
                    let host = cpu
                        .import(l.descriptor(&what, Memory::Host(Arc::from(l.bytes.clone())), 0))
                        .unwrap_or_else(|r| panic!("{what}: cpu: {r}"));
                    let pic = host.picture();
                    for i in 0..3 {
                        let p = pic.plane(i);
                        let rows: Vec<Vec<u16>> = (0..p.height())
                            .map(|y| (0..p.width()).map(|x| p.sample(x, y) as u16).collect())
                            .collect();
                        assert_eq!(rows, l.want[i], "{what}: the CPU lane's plane {i}");
                    }
                }
                // Without chroma: semi-planar frames are gray, luma only.
                let g = gray.import(l.descriptor(&what, Memory::DevicePointer(ptr), 0)).unwrap();
                let gf = g.device_frame().unwrap();
                let planes = if l.planes.len() == 2 { 1 } else { 3 };
                assert_eq!(gf.planes.len(), planes, "{what}: gray");
                wait_ready(gf, &mut reader).unwrap();
                reader.synchronize().unwrap();
                assert_frame(&emu, gf, &l.want, planes, &what);
                drop((frame, g));
                drop(ptr_buffer);
                cases += 1;
            }
        }
    }
    let stats = importer.stats();
    assert_eq!(stats.releases.load(Ordering::SeqCst), cases);
    assert_eq!(emu.world().uploads(), 0, "an import copied frame data from the host");
    drop(importer);
    drop(gray);
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    eprintln!("{cases} layouts equal");
}

#[test]
fn convert_kernels_equal_the_host_deinterleave() {
    // The kernels alone, on odd widths and pitches, against the loop of
    // src/import/cpu.rs (deinterleave, shift down).
    let Some(emu) = build_emulator() else { return };
    let mut engine = KernelRunner::new(emu).unwrap();
    let k: vmafx::internals::device::gpu::kernels::ConvertKernels<_> = engine.kernels().unwrap();
    let (mut src_buf, mut u_buf, mut v_buf, mut y_buf) = (Scratch::default(), Scratch::default(), Scratch::default(), Scratch::default());
    for bits in [8u32, 10, 16] {
        let bps = if bits == 8 { 1 } else { 2 };
        for (w, h) in [(1, 1), (7, 3), (255, 2), (257, 4), (600, 1)] {
            for pad in [0usize, 2, 7] {
                let pad = if bps == 2 { pad & !1 } else { pad };
                let src_pitch = 2 * w * bps + pad;
                let mut rng = Rng((w * 131 + h + pad) as u64 ^ (bits as u64) << 40 | 1);
                let src: Vec<u8> = (0..src_pitch * h).map(|_| rng.next() as u8).collect();
                let shift = if bits == 16 || bits == 8 { 0 } else { 16 - bits };
                let dst_pitch = w * bps + 3 * bps;
                let s = engine.scratch(&mut src_buf, src.len()).unwrap();
                let u = engine.scratch(&mut u_buf, dst_pitch * h).unwrap();
                let v = engine.scratch(&mut v_buf, dst_pitch * h).unwrap();
                let y = engine.scratch(&mut y_buf, dst_pitch * h).unwrap();
                engine.backend_mut().upload(s, &src).unwrap();
                let grid = ((w as u32).div_ceil(256), h as u32);
                let base = vmafx::internals::device::gpu::backend::Args::new().ptr(s).i32(src_pitch as i32).i32(w as i32).i32(h as i32);
                let uv = if bps == 1 { base } else { base.i32(shift as i32) };
                let uv = uv.ptr(u).i32(dst_pitch as i32).ptr(v).i32(dst_pitch as i32);
                // SAFETY: convert_uv_8/16's parameters; buffers sized above.
                unsafe { engine.launch(if bps == 2 { k.convert_uv_16 } else { k.convert_uv_8 }, grid, uv) }.unwrap();
                if bps == 2 {
                    let one = vmafx::internals::device::gpu::backend::Args::new()
                        .ptr(s).i32(src_pitch as i32).i32(w as i32).i32(h as i32).i32(shift as i32).ptr(y).i32(dst_pitch as i32);
                    // SAFETY: convert_shift_16's parameters (reads w of the 2w samples per row).
                    unsafe { engine.launch(k.convert_shift_16, grid, one) }.unwrap();
                }
                let got_u = engine.download_vec::<u32>(u, (dst_pitch * h).div_ceil(4)).unwrap();
                let got_v = engine.download_vec::<u32>(v, (dst_pitch * h).div_ceil(4)).unwrap();
                let got_y = engine.download_vec::<u32>(y, (dst_pitch * h).div_ceil(4)).unwrap();
                let bytes = |words: &[u32]| words.iter().flat_map(|w| w.to_ne_bytes()).collect::<Vec<u8>>();
                let (gu, gv, gy) = (bytes(&got_u), bytes(&got_v), bytes(&got_y));
                let what = format!("{bits}-bit {w}x{h} src pitch {src_pitch}");
                for row in 0..h {
                    for x in 0..w {
                        let at = |i: usize| row * src_pitch + i * bps;
                        let sample = |b: &[u8], at: usize| if bps == 1 { b[at] as u16 } else { u16::from_le_bytes([b[at], b[at + 1]]) };
                        let o = row * dst_pitch + x * bps;
                        assert_eq!(sample(&gu, o), sample(&src, at(2 * x)) >> shift, "{what}: U ({x},{row})");
                        assert_eq!(sample(&gv, o), sample(&src, at(2 * x + 1)) >> shift, "{what}: V ({x},{row})");
                        if bps == 2 {
                            assert_eq!(sample(&gy, o), sample(&src, at(x)) >> shift, "{what}: shifted ({x},{row})");
                        }
                    }
                }
            }
        }
    }
}

fn refusal(importer: &GpuImporter<emulator::Emulator>, d: FrameDescriptor) -> (ImportErrorKind, String) {
    let r = importer.import(d).expect_err("refused");
    (r.error.kind, r.error.to_string())
}

#[test]
fn device_import_refusals() {
    let Some(mut emu) = build_emulator() else { return };
    let importer = GpuImporter::new(emu.world().stream(), true).unwrap();
    let l = layout(DrmFourcc::Nv12, 33, 17, 8, 3, 5);
    let ptr_buffer = device_buffer(&mut emu, &l.bytes);
    let ptr = ptr_buffer.ptr();
    let good = || l.descriptor("frame 7", Memory::DevicePointer(ptr), 0);
    let len = l.bytes.len() as u64;

    let mut d = good();
    d.objects[0].modifier = DrmModifier::I915_x_tiled;
    let (k, m) = refusal(&importer, d);
    assert_eq!(k, ImportErrorKind::NotSupported, "{m}");
    assert!(m.contains("frame 7") && m.contains("LINEAR"), "{m}");

    let mut d = good();
    d.layers[0].planes[1].offset = len - 10; // chroma past the allocation
    let (k, m) = refusal(&importer, d);
    assert_eq!(k, ImportErrorKind::Range, "{m}");
    assert!(m.contains("plane 1"), "{m}");

    let mut d = good();
    d.objects[0].size = len + 64; // declares more than the allocation
    assert_eq!(refusal(&importer, d).0, ImportErrorKind::Range);

    // Where the runtime cannot tell, the declared size bounds the planes.
    emu.world().hide_ranges(true);
    let mut d = good();
    d.objects[0].size = len - 8;
    d.layers[0].planes[1].offset = len - 20;
    assert_eq!(refusal(&importer, d).0, ImportErrorKind::Range);
    importer.import(good()).unwrap();
    emu.world().hide_ranges(false);

    let mut d = good();
    let array = emu.world().array(ArrayExtent { width: 4, height: 4, channels: 1, channel_bytes: 1 }, &[0; 16]);
    d.objects.push(Object { memory: Memory::DeviceArray(array), size: 0, modifier: DrmModifier::Linear });
    d.layers[0].planes[1].object = 1;
    let (k, m) = refusal(&importer, d);
    assert_eq!(k, ImportErrorKind::NotSupported, "{m}");
    assert!(m.contains("one kind"), "{m}");

    let mut d = good();
    d.objects[0].memory = Memory::Host(Arc::from(l.bytes.clone()));
    assert_eq!(refusal(&importer, d).0, ImportErrorKind::NotSupported);

    let mut d = good();
    d.objects[0].memory = Memory::DevicePointer(0x10);
    let (k, m) = refusal(&importer, d);
    assert_eq!(k, ImportErrorKind::Invalid, "{m}");

    let mut d = good();
    d.layers[0].planes[0].pitch = 20; // shorter than a row of 33
    assert_eq!(refusal(&importer, d).0, ImportErrorKind::Invalid);

    let mut d = good();
    let (_rd, wr) = nix::unistd::pipe().unwrap();
    d.release.push(ReleaseFence::SyncFile(wr));
    let (k, m) = refusal(&importer, d);
    assert_eq!(k, ImportErrorKind::NotSupported, "{m}");
    assert!(m.contains("sync_file"), "{m}");

    let mut d = good();
    d.acquire.push(AcquireFence::GlSync(1));
    assert_eq!(refusal(&importer, d).0, ImportErrorKind::NotSupported);

    // Device arrays: one plane each, at offset 0, inside the array.
    let y = emu.world().array(ArrayExtent { width: 33, height: 17, channels: 1, channel_bytes: 1 }, &[1; 33 * 17]);
    let uv = emu.world().array(ArrayExtent { width: 16, height: 9, channels: 2, channel_bytes: 1 }, &[2; 32 * 9]);
    let arrays = |uv_offset: u64| {
        let mut d = FrameDescriptor::new("frame 8", 33, 17, 8);
        for a in [y, uv] {
            d.objects.push(Object { memory: Memory::DeviceArray(a), size: 0, modifier: DrmModifier::Linear });
        }
        d.layers.push(Layer { format: DrmFourcc::R8, planes: vec![PlaneRef { object: 0, offset: 0, pitch: 0 }] });
        d.layers.push(Layer { format: DrmFourcc::Gr88, planes: vec![PlaneRef { object: 1, offset: uv_offset, pitch: 0 }] });
        d
    };
    assert_eq!(refusal(&importer, arrays(2)).0, ImportErrorKind::Invalid);
    // 33 wide needs 17 chroma samples a row: the 16-wide array is too small.
    let (k, m) = refusal(&importer, arrays(0));
    assert_eq!(k, ImportErrorKind::Range, "{m}");
    assert!(m.contains("device array"), "{m}");
    assert_eq!(importer.stats().imports.load(Ordering::SeqCst), 1);
    drop(ptr_buffer);
}

#[test]
fn device_arrays_copied_out_on_the_device() {
    let Some(emu) = build_emulator() else { return };
    let importer = GpuImporter::new(emu.world().stream(), true).unwrap();
    for (bits, w, h) in [(8u8, 33usize, 17usize), (10, 17, 9), (16, 5, 3)] {
        let l = layout(if bits == 8 { DrmFourcc::Nv12 } else if bits == 10 { DrmFourcc::P010 } else { DrmFourcc::P016 }, w, h, 0, 0, bits as u64);
        let bps = if bits == 8 { 1 } else { 2 };
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let ypitch = l.planes[0].pitch as usize;
        let y = emu.world().array(ArrayExtent { width: w, height: h, channels: 1, channel_bytes: bps }, &l.bytes[..ypitch * h]);
        let uv = emu.world().array(
            ArrayExtent { width: cw, height: ch, channels: 2, channel_bytes: bps },
            &l.bytes[ypitch * h..ypitch * h + 2 * cw * bps * ch],
        );
        let mut d = FrameDescriptor::new("array frame", w, h, bits);
        for a in [y, uv] {
            d.objects.push(Object { memory: Memory::DeviceArray(a), size: 0, modifier: DrmModifier::Linear });
        }
        let (one, two) = if bits == 8 { (DrmFourcc::R8, DrmFourcc::Gr88) } else { (DrmFourcc::R16, DrmFourcc::Gr1616) };
        d.layers.push(Layer { format: one, planes: vec![PlaneRef { object: 0, offset: 0, pitch: 0 }] });
        d.layers.push(Layer { format: two, planes: vec![PlaneRef { object: 1, offset: 0, pitch: 0 }] });
        let frame = importer.import(d).unwrap();
        let mut reader = emu.world().stream();
        wait_ready(frame.device_frame().unwrap(), &mut reader).unwrap();
        reader.synchronize().unwrap();
        assert_frame(&emu, frame.device_frame().unwrap(), &l.want, 3, &format!("{bits}-bit arrays"));
    }
    assert_eq!(importer.stats().array_copies.load(Ordering::SeqCst), 6);
}

#[test]
fn host_fences_and_sync_files_busy_until_signalled() {
    let Some(mut emu) = build_emulator() else { return };
    let importer = GpuImporter::new(emu.world().stream(), false).unwrap();
    let l = layout(DrmFourcc::Nv12, 9, 5, 0, 1, 9);
    let ptr_buffer = device_buffer(&mut emu, &l.bytes);
    let ptr = ptr_buffer.ptr();

    let fence = HostFence::new();
    let mut d = l.descriptor("distorted frame 3", Memory::DevicePointer(ptr), 0);
    d.acquire.push(AcquireFence::Host(fence.clone()));
    let r = importer.import(d).expect_err("busy");
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    assert_eq!(importer.stats().busy.load(Ordering::SeqCst), 1);
    assert_eq!(importer.stats().imports.load(Ordering::SeqCst), 0, "nothing queued while BUSY");
    // Timeout: the error names the frame and the fence.
    let r = importer.wait_and_import(*r.descriptor, Duration::from_millis(30), None).expect_err("timeout");
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    let m = r.error.to_string();
    assert!(m.contains("distorted frame 3") && m.contains("host fence") && m.contains("gave up"), "{m}");
    // Signalled from another thread while waiting: imported.
    let f2 = fence.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        f2.signal();
    });
    let frame = importer.wait_and_import(*r.descriptor, Duration::from_secs(10), None).unwrap();
    t.join().unwrap();
    drop(frame);

    // A sync_file stands here as a pipe: readable = signalled (poll(POLLIN)).
    let (rd, wr) = nix::unistd::pipe().unwrap();
    let mut d = l.descriptor("reference frame 4", Memory::DevicePointer(ptr), 0);
    d.acquire.push(AcquireFence::SyncFile(rd));
    let r = importer.import(d).expect_err("busy");
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    assert!(r.error.message.contains("sync_file"), "{}", r.error);
    nix::unistd::write(&wr, b"x").unwrap();
    importer.import(*r.descriptor).unwrap();
    drop(ptr_buffer);
}

#[test]
fn device_event_acquire_is_waited_on_the_device() {
    // The producer is still writing (its event not signalled): the import
    // returns at once, but neither the library stream's conversion nor a
    // reader may run before the producer is done.
    let Some(mut emu) = build_emulator() else { return };
    let world = emu.world().clone();
    let importer = GpuImporter::new(world.stream(), true).unwrap();
    for format in [DrmFourcc::Nv12, DrmFourcc::P010] {
        let l = layout(format, 37, 11, 4, 2, 77);
        let stale = vec![0u8; l.bytes.len()];
        let ptr_buffer = device_buffer(&mut emu, &stale);
        let ptr = ptr_buffer.ptr();
        let producer = world.blocked_event();
        let mut d = l.descriptor("frame 1", Memory::DevicePointer(ptr), 0);
        d.acquire.push(AcquireFence::DeviceEvent(producer));
        let frame = importer.import(d).unwrap();
        let f = frame.device_frame().unwrap();
        let mut reader = KernelRunner::new(world.stream()).unwrap();
        wait_ready(f, reader.backend_mut()).unwrap();
        let (w, h) = (f.width, f.height);
        let early = vmafx::internals::feature::psnr::gpu::sse_dev(&mut reader, f.luma(), f.luma(), w, h);
        assert!(early.is_err(), "{format}: the reader ran before the producer's event: {early:?}");
        world.poke(ptr, &l.bytes);
        world.signal(producer);
        reader.backend_mut().synchronize().unwrap();
        assert_frame(&emu, f, &l.want, 3, &format!("{format} after the producer"));
        drop(frame);
        drop(ptr_buffer);
    }
}

#[test]
fn pooled_buffers_go_out_again_only_after_their_readers() {
    // A released frame's converted planes go back to the lane's pool behind
    // the event recorded after its last reader: while that reader is still
    // reading, the next import must not be handed them.
    let Some(mut emu) = build_emulator() else { return };
    let world = emu.world().clone();
    let importer = GpuImporter::new(world.stream(), true).unwrap();
    let l = layout(DrmFourcc::Nv12, 21, 7, 0, 3, 11);
    let source = device_buffer(&mut emu, &l.bytes);
    let import = |label: &str| importer.import(l.descriptor(label, Memory::DevicePointer(source.ptr()), 0)).unwrap();
    let chroma = |f: &dyn PictureSource| f.device_frame().unwrap().planes[1..].iter().map(|p| p.ptr).collect::<Vec<_>>();
    let first = import("frame 1");
    let first_chroma = chroma(&*first);
    assert_eq!(first_chroma.len(), 2, "U and V converted into buffers of the lane's pool");
    let mut reader = world.stream();
    let busy = world.blocked_event();
    reader.wait_event(emulator::borrowed(busy)).unwrap(); // the reader's earlier work, still running
    wait_ready(first.device_frame().unwrap(), &mut reader).unwrap();
    first.reads_queued(&mut reader).unwrap();
    drop(first);
    let second = import("frame 2");
    let second_chroma = chroma(&*second);
    assert!(second_chroma.iter().all(|p| !first_chroma.contains(p)), "a buffer handed out again while its reader was still reading");
    world.signal(busy);
    reader.synchronize().unwrap();
    drop(second);
    let third = import("frame 3");
    assert!(
        chroma(&*third).iter().all(|p| first_chroma.contains(p) || second_chroma.contains(p)),
        "the released frames' buffers reused once their readers were done"
    );
}

#[test]
fn release_after_the_last_reader() {
    // Two readers (two contexts) share one import; each is still reading
    // (blocked) when its reference drops. The release event must follow
    // both reads: the producer's overwrite, queued behind it, must not
    // reach what they read.
    let Some(mut emu) = build_emulator() else { return };
    let world = emu.world().clone();
    let importer = GpuImporter::new(world.stream(), false).unwrap();
    let l = layout(DrmFourcc::Nv12, 21, 7, 0, 3, 11);
    let ptr_buffer = device_buffer(&mut emu, &l.bytes);
    let ptr = ptr_buffer.ptr();
    let mut producer = world.stream();
    let release_event = producer.create_event().unwrap();
    let release = emulator::borrowed(release_event.handle());
    let mut d = l.descriptor("frame 2", Memory::DevicePointer(ptr), 0);
    d.release.push(ReleaseFence::DeviceEvent(release.handle()));
    let frame = importer.import(d).unwrap();
    let luma = frame.device_frame().unwrap().luma();
    let mut readers = Vec::new();
    let mut copies = Vec::new();
    for _ in 0..2 {
        let mut r = world.stream();
        let busy = world.blocked_event();
        r.wait_event(emulator::borrowed(busy)).unwrap(); // this reader's earlier work, still running
        let f = frame.clone();
        wait_ready(f.device_frame().unwrap(), &mut r).unwrap();
        let copy_buffer = r.alloc(luma.pitch * luma.height).unwrap();
        let copy = copy_buffer.ptr();
        copies.push(copy_buffer);
        let dst = Pitched { ptr: copy, pitch: luma.pitch };
        r.copy_2d(dst, Pitched { ptr: luma.ptr, pitch: luma.pitch }, luma.width, luma.height).unwrap();
        f.reads_queued(&mut r).unwrap();
        readers.push((r, busy, copy, f));
    }
    drop(frame);
    let (r0, b0, c0, f0) = readers.remove(0);
    drop(f0);
    assert_eq!(importer.stats().releases.load(Ordering::SeqCst), 0, "released with a reference left");
    let (r1, b1, c1, f1) = readers.remove(0);
    // The last reference goes while both readers are still reading.
    drop(f1);
    assert!(!producer.query_event(release).unwrap(), "release signalled before the readers were done");
    // The producer reuses the buffer once released.
    producer.wait_event(release).unwrap();
    producer.upload(ptr, &vec![0xee; l.bytes.len()]).unwrap();
    world.signal(b0);
    assert!(!producer.query_event(release).unwrap(), "release signalled before the second reader was done");
    world.signal(b1);
    assert!(producer.query_event(release).unwrap());
    producer.synchronize().unwrap();
    let want: Vec<u8> = (0..luma.height).flat_map(|y| l.bytes[y * luma.pitch..y * luma.pitch + luma.width].to_vec()).collect();
    for (r, c) in [(&r0, c0), (&r1, c1)] {
        let got: Vec<u8> = (0..luma.height).flat_map(|y| r.world().peek(c + (y * luma.pitch) as u64, luma.width)).collect();
        assert_eq!(got, want, "a reader saw the producer's next frame");
    }
    assert_eq!(world.peek(ptr, 4), vec![0xee; 4]);
    let _ = (r0, r1);
    drop(ptr_buffer);
}

#[test]
fn host_release_fence_and_callback_once_after_both_readers() {
    let Some(mut emu) = build_emulator() else { return };
    let world = emu.world().clone();
    let importer = GpuImporter::new(world.stream(), true).unwrap();
    let l = layout(DrmFourcc::P010, 15, 5, 2, 4, 3);
    let ptr_buffer = device_buffer(&mut emu, &l.bytes);
    let ptr = ptr_buffer.ptr();
    let fence = HostFence::new();
    let called = Arc::new(AtomicUsize::new(0));
    let c = called.clone();
    let mut d = l.descriptor("frame 5", Memory::DevicePointer(ptr), 0);
    d.release.push(ReleaseFence::Host(fence.clone()));
    let frame = importer
        .import_with(d, Some(Box::new(move || { c.fetch_add(1, Ordering::SeqCst); })))
        .map_err(|(r, _)| r)
        .unwrap();
    let mut contexts: Vec<_> = (0..2).map(|_| KernelRunner::new(world.stream()).unwrap()).collect();
    let mut held = Vec::new();
    let mut sums = Vec::new();
    for e in contexts.iter_mut() {
        let f = frame.clone();
        let df = f.device_frame().unwrap();
        wait_ready(df, e.backend_mut()).unwrap();
        let (cw, ch) = (df.planes[1].width, df.planes[1].height);
        sums.push(vmafx::internals::feature::psnr::gpu::sse_dev(e, df.planes[1], df.planes[2], cw, ch).unwrap());
        f.reads_queued(e.backend_mut()).unwrap();
        held.push(f);
    }
    let want: u64 = l.want[1].iter().flatten().zip(l.want[2].iter().flatten()).map(|(&a, &b)| ((a as i64 - b as i64).pow(2)) as u64).sum();
    assert_eq!(sums, vec![want, want]);
    drop(frame);
    held.pop();
    assert!(!fence.is_signalled());
    assert_eq!(called.load(Ordering::SeqCst), 0);
    held.pop();
    assert!(fence.is_signalled());
    assert_eq!(called.load(Ordering::SeqCst), 1);
    assert_eq!(importer.stats().releases.load(Ordering::SeqCst), 1);
    drop(contexts);
    drop(importer);
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    drop(ptr_buffer);
}
/// VIF's four scales (kernels/vif.cu through KernelRunner::vif_sums) against the
/// CPU's scalar sums: 8/10/12/16 bit, odd sizes (down to VIF's minimum),
/// odd pitches, random, correlated-with-gain, smooth and extreme content,
/// enhancement gain limits 100, 1.0 and 2.5, scale 0 skipped.
#[test]
fn emulated_vif_equals_the_cpu() {
    use vmafx::internals::feature::vif;
    let Some(emu) = build_emulator() else { return };
    let mut engine = KernelRunner::new(emu).unwrap();
    let mut cases = 0;
    let mut log_paths = 0;
    let mut gain_limited = 0;
    // 270 wide: scale-0 tiles (statistic and subsampling) with no column
    // mirror (the inner path).
    for (w, h) in [(67, 45), (96, 54), (16, 16), (270, 19)] {
        for bits in [8u32, 10, 12, 16] {
            if w == 270 && (bits == 10 || bits == 12) {
                continue;
            }
            let max = (1u64 << bits) - 1;
            let odd_pad = if bits == 8 { 3 } else { 6 };
            let cases_here: [(&str, usize, f64, bool); 7] = [
                ("random", 0, 100.0, false),
                ("random", odd_pad, 1.0, false),
                ("gain", odd_pad, 100.0, false),
                ("gain", 0, 1.0, false),
                ("smooth", odd_pad + 64, 2.5, true),
                ("max-vs-0", odd_pad, 100.0, false),
                ("zero", 0, 100.0, false),
            ];
            for (pattern, pad, egl, skip) in cases_here {
                let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ pad as u64;
                let noise = |s: u64, x: usize, y: usize| {
                    let mut r = Rng((s ^ (y * 4099 + x) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
                    r.next();
                    r.next()
                };
                let smooth = |x: usize, y: usize| ((x * 3 + y * 5) as u64 * max / (3 * w + 5 * h) as u64).min(max);
                let (a, b) = match pattern {
                    "random" => (
                        plane_of(w, h, bits, pad, |x, y| noise(seed, x, y) % (max + 1)),
                        plane_of(w, h, bits, pad, |x, y| noise(seed ^ 0xdead, x, y) % (max + 1)),
                    ),
                    // Distorted = 1.5 x reference + noise: gains above 1.
                    "gain" => (
                        plane_of(w, h, bits, pad, |x, y| noise(seed, x, y) % (max / 2 + 1)),
                        plane_of(w, h, bits, pad, |x, y| {
                            ((noise(seed, x, y) % (max / 2 + 1)) * 3 / 2 + noise(seed ^ 7, x, y) % 4).min(max)
                        }),
                    ),
                    "smooth" => (
                        plane_of(w, h, bits, pad, smooth),
                        plane_of(w, h, bits, pad, |x, y| (smooth(x, y) + noise(seed, x, y) % 9).min(max)),
                    ),
                    "max-vs-0" => (plane_of(w, h, bits, pad, |_, _| max), plane_of(w, h, bits, pad, |_, _| 0)),
                    _ => (plane_of(w, h, bits, pad, |_, _| 0), plane_of(w, h, bits, pad, |_, _| 0)),
                };
                let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
                let what = format!(
                    "{w}x{h} {bits}-bit stride {} {pattern} egl {egl} skip_scale0 {skip} seed {seed:#x}",
                    a.1
                );
                let want = vif::sums_scalar(&va, &vb, bits, egl, skip).unwrap();
                let got = vmafx::internals::feature::vif::gpu::sums(&mut engine, &va, &vb, bits, egl, skip).unwrap();
                assert_eq!(got, want, "vif {what}");
                if want.iter().any(|s| s.num_log != 0) {
                    log_paths += 1;
                }
                if egl == 1.0 && vif::sums_scalar(&va, &vb, bits, 100.0, skip).unwrap() != want {
                    gain_limited += 1;
                }
                cases += 1;
            }
        }
    }
    // Device planes with different pitches for reference and distorted
    // (two producers), read in place through vif_sums_dev.
    for bits in [8u32, 10] {
        let (w, h) = (61, 33);
        let max = (1u64 << bits) - 1;
        let (a, sa) = plane_of(w, h, bits, 2, |x, y| ((x * 37 + y * 11) as u64 * 97) % (max + 1));
        let (b, sb) = plane_of(w, h, bits, 10, |x, y| ((x * 37 + y * 11) as u64 * 97 + (x % 3) as u64) % (max + 1));
        let (va, vb) = (view(&a, sa, w, h, bits), view(&b, sb, w, h, bits));
        let want = vif::sums_scalar(&va, &vb, bits, 100.0, false).unwrap();
        let (mut r_buf, mut d_buf) = (Scratch::default(), Scratch::default());
        let r = engine.upload_plane(&mut r_buf, &va).unwrap();
        let d = engine.upload_plane(&mut d_buf, &vb).unwrap();
        assert_ne!(r.pitch, d.pitch);
        assert_eq!(vmafx::internals::feature::vif::gpu::sums_dev(&mut engine, r, d, bits, 100.0, false).unwrap(), want, "vif {bits}-bit, pitches {sa} and {sb}");
        // Wrong depth for the samples, different sizes: errors, not results.
        assert!(vmafx::internals::feature::vif::gpu::sums_dev(&mut engine, r, d, if bits == 8 { 10 } else { 8 }, 100.0, false).is_err());
        let smaller = vmafx::internals::device::gpu::backend::DevPlane { height: h - 1, ..d };
        assert!(vmafx::internals::feature::vif::gpu::sums_dev(&mut engine, r, smaller, bits, 100.0, false).is_err());
        cases += 1;
    }
    // Too small for VIF: refused, as the CPU refuses it.
    let (a, stride) = plane_of(15, 40, 8, 0, |_, _| 0);
    assert!(vmafx::internals::feature::vif::gpu::sums(&mut engine, &view(&a, stride, 15, 40, 8), &view(&a, stride, 15, 40, 8), 8, 100.0, false).is_err());
    assert!(log_paths >= cases / 2, "only {log_paths} of {cases} cases reach the log path");
    assert!(gain_limited >= 12, "the gain limit changed only {gain_limited} cases");
    drop(engine);
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    eprintln!("{cases} vif cases equal ({log_paths} with log sums, {gain_limited} changed by egl 1.0)");
}

/// ADM test content: (reference, distorted) sample values at (x, y).
#[derive(Clone, Copy, Debug)]
enum AdmContent {
    /// Independent noise (decouple's angle test mostly fails).
    Random,
    /// A textured reference and a contrast-enhanced, noisy copy: the angle
    /// test passes often and the enhancement gain limit bites.
    Enhanced,
    /// A textured reference and a blurred-looking (flattened) copy.
    Flattened,
    /// Full scale against zero.
    MaxVsZero,
    /// Equal pictures.
    Equal,
}

fn adm_planes(
    w: usize,
    h: usize,
    bits: u32,
    pad: usize,
    content: AdmContent,
    seed: u64,
) -> [(Vec<u16>, usize); 2] {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let max = (1i64 << bits) - 1;
    let mid = 1i64 << (bits - 1);
    let mut rng = Rng(seed | 1);
    let mut out = [
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
    ];
    let scale = 1i64 << (bits - 8);
    for y in 0..h {
        for x in 0..w {
            let texture = (((x * 37 + y * 11) % 64) as i64 - 32) * scale
                + ((x as f64 * 0.3).sin() * (y as f64 * 0.2).cos() * 60.0) as i64 * scale;
            let base = mid / 2 + (x + y) as i64 * max / (2 * (w + h)) as i64;
            let noise = |rng: &mut Rng, amp: i64| (rng.next() % (2 * amp as u64 + 1)) as i64 - amp;
            let (r, d) = match content {
                AdmContent::Random => ((rng.next() as i64) & max, (rng.next() as i64) & max),
                AdmContent::Enhanced => {
                    let r = base + texture;
                    (r, base + texture * 5 / 4 + noise(&mut rng, 2 * scale))
                }
                AdmContent::Flattened => {
                    let r = base + texture + noise(&mut rng, 8 * scale);
                    (r, base + texture / 3 + noise(&mut rng, scale))
                }
                AdmContent::MaxVsZero => (max, 0),
                AdmContent::Equal => {
                    let r = base + texture;
                    (r, r)
                }
            };
            for (p, v) in out.iter_mut().zip([r, d]) {
                let v = v.clamp(0, max) as u16;
                // SAFETY: viewing the u16 buffer as bytes.
                let bytes: &mut [u8] =
                    unsafe { std::slice::from_raw_parts_mut(p.0.as_mut_ptr().cast(), p.0.len() * 2) };
                let at = y * stride + x * bps;
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

fn adm_params(w: usize, h: usize, bits: u32, opts: &[(&str, &str)]) -> vmafx::internals::feature::adm::AdmParams {
    use vmafx::FeatureOptions;
    use vmafx::internals::feature::adm;
    let mut fo = FeatureOptions::new();
    for (k, v) in opts {
        fo.set_text(adm::DESCRIPTOR.options, k, v).unwrap();
    }
    adm::AdmParams::new(w, h, bits, &fo).unwrap()
}

#[test]
fn emulated_adm_equals_the_cpu() {
    use vmafx::internals::feature::adm;
    let Some(emu) = build_emulator() else { return };
    let mut engine = KernelRunner::new(emu).unwrap();
    let contents = [
        AdmContent::Random,
        AdmContent::Enhanced,
        AdmContent::Flattened,
        AdmContent::MaxVsZero,
        AdmContent::Equal,
    ];
    // (size, bits, content, options): with the default options every depth
    // and size with two contents (each depth sees all five); each option
    // set on two sizes, depths and contents. (The emulator is slow: ~2 s a
    // case on 2 busy cores.)
    type Case<'a> = ((usize, usize), u32, AdmContent, Vec<(&'a str, &'a str)>);
    let mut cases: Vec<Case> = Vec::new();
    for (si, size) in [(33, 33), (67, 45), (96, 54)].into_iter().enumerate() {
        for bits in [8u32, 10, 12, 16] {
            for k in 0..2 {
                cases.push((size, bits, contents[(si * 2 + k) % contents.len()], vec![]));
            }
        }
    }
    // Wide enough for several DWT blocks per row at scale 0 (550 outputs)
    // and a masking row longer than a block (440).
    cases.push(((1100, 35), 8, AdmContent::Enhanced, vec![]));
    cases.push(((1101, 33), 16, AdmContent::Random, vec![("adm_enhn_gain_limit", "1.2")]));
    let option_sets: [&[(&str, &str)]; 9] = [
        &[("adm_enhn_gain_limit", "1.2")],
        &[("adm_enhn_gain_limit", "1.0")],
        &[("adm_csf_mode", "1")],
        &[("adm_csf_mode", "2")],
        &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")],
        &[("adm_csf_scale", "1.5"), ("adm_csf_diag_scale", "0.75"), ("adm_csf_mode", "1")],
        &[("adm_ref_display_height", "2160")],
        &[("adm_skip_aim", "true")],
        &[("adm_skip_scale0", "true")],
    ];
    for opts in option_sets {
        cases.push(((67, 45), 8, AdmContent::Enhanced, opts.to_vec()));
        cases.push(((35, 49), 10, AdmContent::Random, opts.to_vec()));
    }
    let start = std::time::Instant::now();
    for (n, ((w, h), bits, content, opts)) in cases.iter().enumerate() {
        let (w, h, bits) = (*w, *h, *bits);
        // Tight rows, and padded ones (odd for 8 bit).
        let pad = [0, if bits == 8 { 3 } else { 6 }, 64][n % 3];
        let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ (n as u64) << 32;
        let [a, b] = adm_planes(w, h, bits, pad, *content, seed);
        let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
        let params = adm_params(w, h, bits, opts);
        let what = format!("{w}x{h} {bits}-bit stride {} {content:?} {opts:?} seed {seed:#x}", a.1);
        let want = adm::sums_scalar(&params, &va, &vb).unwrap();
        let got = vmafx::internals::feature::adm::gpu::sums(&mut engine, &va, &vb, &params).unwrap();
        assert_eq!(got, want, "adm sums {what}");
        let (sw, sg) = (params.scores(&want), params.scores(&got));
        for (x, y) in [(sw.adm2, sg.adm2), (sw.aim, sg.aim), (sw.adm3, sg.adm3)] {
            assert_eq!(x.to_bits(), y.to_bits(), "adm scores {what}");
        }
        if !matches!(content, AdmContent::Equal | AdmContent::MaxVsZero) && !params.skip_scale0 {
            assert!(want.scales[0].num.iter().any(|&v| v != 0), "adm {what}: degenerate case");
        }
    }
    drop(engine);
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    eprintln!("adm: {} cases equal ({:.1} s)", cases.len(), start.elapsed().as_secs_f64());
}

/// One 1920x1080 frame (8 and 10 bit) through the emulated ADM kernels:
/// minutes on 2 cores, so run on demand (`-- --ignored`).
#[test]
#[ignore]
fn emulated_adm_1080p_equals_the_cpu() {
    use vmafx::internals::feature::adm;
    let Some(emu) = build_emulator() else { return };
    let mut engine = KernelRunner::new(emu).unwrap();
    for (bits, content, pad) in [(8u32, AdmContent::Enhanced, 3usize), (10, AdmContent::Random, 64)] {
        let (w, h) = (1920, 1080);
        let [a, b] = adm_planes(w, h, bits, pad, content, 0x1080);
        let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
        let params = adm_params(w, h, bits, &[]);
        let t = std::time::Instant::now();
        let got = vmafx::internals::feature::adm::gpu::sums(&mut engine, &va, &vb, &params).unwrap();
        eprintln!("{bits}-bit {content:?}: emulated in {:.1} s", t.elapsed().as_secs_f64());
        assert_eq!(got, adm::sums_scalar(&params, &va, &vb).unwrap(), "{w}x{h} {bits}-bit {content:?}");
    }
}

// ---------------------------------------------------------------------------
// The FFmpeg filter's CUDA frames (src/avfilter/cuda.rs): the descriptor the
// filter builds from an AVFrame's two device pointers (nv12, p010le, p016le),
// imported through the emulated device, gives the planes the filter's host
// path (src/avfilter/frame.rs: p010 shifted, chroma split on the host) gives
// for the same bytes; the AVFrame is released once, after the frame drops.

static FILTER_RELEASES: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn filter_frame_released(_: *mut std::ffi::c_void) {
    FILTER_RELEASES.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn filter_cuda_frames_import_as_the_host_path_reads_them() {
    use vmafx::internals::avfilter::cuda::descriptor;
    use vmafx::internals::avfilter::frame::{FrameHandle, FrameMemory, HostFormat, HostPicture, RawPlanes};
    let Some(mut emu) = build_emulator() else { return };
    let importer = GpuImporter::new(emu.world().stream(), true).unwrap();
    let gray = importer.with_chroma(false);
    let mut cases = 0;
    for name in ["nv12", "p010le", "p016le"] {
        let format = HostFormat::by_name(name).unwrap();
        let bps = if format.bits > 8 { 2 } else { 1 };
        for (w, h, pad) in [(17usize, 9usize, 6usize), (64, 4, 0), (33, 5, 64)] {
            let what = format!("{name} {w}x{h} pad {pad}");
            let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
            let (ypitch, cpitch) = (w * bps + pad, cw * 2 * bps + pad);
            let mut seed = (w * 131 + h * 7 + pad) as u64 ^ format.bits as u64;
            let mut bytes = |n: usize| -> Vec<u8> {
                (0..n)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (seed >> 56) as u8
                    })
                    .collect()
            };
            let (y, uv) = (bytes(ypitch * h), bytes(cpitch * ch));
            let (y_buffer, uv_buffer) = (device_buffer(&mut emu, &y), device_buffer(&mut emu, &uv));
            let (dy, duv) = (y_buffer.ptr(), uv_buffer.ptr());
            let raw = |a: *const u8, b: *const u8, memory| RawPlanes {
                data: [a, b, std::ptr::null(), std::ptr::null()],
                linesize: [ypitch as i32, cpitch as i32, 0, 0],
                width: w,
                height: h,
                memory,
            };
            // The host path on the same bytes: what the CPU scores.
            let host_raw = raw(y.as_ptr(), uv.as_ptr(), FrameMemory::Host);
            // SAFETY: the planes are `y` and `uv`, alive past the picture;
            // the handle's free function only counts.
            let (host, _) = unsafe {
                HostPicture::wrap(FrameHandle::new(8 as *mut _, filter_frame_released), &host_raw, format, true)
            }
            .unwrap();
            let pic = host.host().unwrap();
            let want: Vec<Vec<Vec<u16>>> = (0..3)
                .map(|i| {
                    let p = pic.plane(i);
                    (0..p.height()).map(|y| (0..p.width()).map(|x| p.sample(x, y) as u16).collect()).collect()
                })
                .collect();
            drop(host);
            let dev_raw = raw(dy as *const u8, duv as *const u8, FrameMemory::Cuda { context: 1 });
            for (imp, planes) in [(&importer, 3), (&gray, 1)] {
                let before = FILTER_RELEASES.load(Ordering::SeqCst);
                let desc = descriptor(&dev_raw, format, &what).unwrap();
                // SAFETY: as above.
                let handle = unsafe { FrameHandle::new(8 as *mut _, filter_frame_released) };
                let frame = imp
                    .import_with(desc, Some(Box::new(move || drop(handle))))
                    .unwrap_or_else(|(r, _)| panic!("{what}: {r}"));
                let f = frame.device_frame().unwrap();
                assert_eq!((f.format.bits, f.width, f.height), (format.bits, w, h), "{what}");
                let mut reader = emu.world().stream();
                wait_ready(f, &mut reader).unwrap();
                reader.synchronize().unwrap();
                assert_frame(&emu, f, &want, planes, &what);
                // Luma in place unless it must be shifted (p010).
                assert_eq!(f.planes[0].ptr == dy, !format.msb_aligned, "{what}: luma in place");
                assert_eq!(FILTER_RELEASES.load(Ordering::SeqCst), before, "{what}: released while alive");
                drop(frame);
                assert_eq!(FILTER_RELEASES.load(Ordering::SeqCst), before + 1, "{what}: released once at drop");
            }
            drop((y_buffer, uv_buffer));
            cases += 1;
        }
    }
    assert_eq!(emu.world().uploads(), 0, "an import copied frame data from the host");
    drop((importer, gray));
    assert!(vmafx::internals::device::gpu::backend::take_drop_errors().is_empty());
    eprintln!("{cases} filter layouts equal");
}

#[test]
fn every_device_buffer_is_freed_when_its_owner_goes() {
    // The engine's scratch (grown once: a second, larger size) and an
    // importer's frames and pool free their device memory when dropped:
    // none is left on the emulated device, none freed twice (the emulator
    // panics on an unknown free).
    use vmafx::internals::feature::vif;
    let Some(mut emu) = build_emulator() else { return };
    let world = emu.world().clone();
    let before = world.allocations();
    {
        let mut engine = KernelRunner::new(world.stream()).unwrap();
        for (w, h) in [(40, 36), (72, 50)] {
            for bits in [8u32, 10] {
                let [a, b] = adm_planes(w, h, bits, 2, AdmContent::Enhanced, 5);
                let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
                let want = vif::sums_scalar(&va, &vb, bits, 100.0, false).unwrap();
                assert_eq!(vmafx::internals::feature::vif::gpu::sums(&mut engine, &va, &vb, bits, 100.0, false).unwrap(), want, "vif {w}x{h} {bits}-bit");
                let p = adm_params(w, h, bits, &[]);
                let want = vmafx::internals::feature::adm::sums_scalar(&p, &va, &vb).unwrap();
                assert_eq!(vmafx::internals::feature::adm::gpu::sums(&mut engine, &va, &vb, &p).unwrap(), want, "adm {w}x{h} {bits}-bit");
                let sse = if bits == 8 { vmafx::internals::feature::psnr::sse_u8(&va, &vb, w, h) } else { vmafx::internals::feature::psnr::sse_u16(&va, &vb, w, h) };
                assert_eq!(vmafx::internals::feature::psnr::gpu::sse(&mut engine, &va, &vb, w, h).unwrap(), sse, "psnr {w}x{h} {bits}-bit");
                vmafx::internals::feature::motion::gpu::sad(&mut engine, &va, &vb, bits).unwrap();
            }
        }
        assert!(world.allocations() > before, "the engine holds its scratch while alive");
    }
    assert_eq!(world.allocations(), before, "the engine's scratch outlived it");
    {
        let importer = GpuImporter::new(world.stream(), true).unwrap();
        for (w, h) in [(33, 9), (64, 20)] {
            let l = layout(DrmFourcc::P010, w, h, 6, 2, 77);
            let ptr_buffer = device_buffer(&mut emu, &l.bytes);
            let frame = importer.import(l.descriptor("leak check", Memory::DevicePointer(ptr_buffer.ptr()), 0)).unwrap();
            let f = frame.device_frame().unwrap();
            let mut reader = world.stream();
            wait_ready(f, &mut reader).unwrap();
            reader.synchronize().unwrap();
            assert_frame(&emu, f, &l.want, 3, "p010 leak check");
            drop(frame);
            drop(ptr_buffer);
        }
    }
    assert_eq!(world.allocations(), before, "an importer's frames or pool outlived it");
}
