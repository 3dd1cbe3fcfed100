//! DRM_PRIME frames on the CPU device, on real dma-bufs and real sync_files.
//!
//! This machine's kernel has no dma-buf exporter, so the tests run inside a
//! qemu VM (scripts/dmabuf-vm, Debian's 6.12 kernel with vgem and udmabuf):
//! the test `runs_the_dmabuf_tests_in_a_vm` boots it with this very binary;
//! inside, `VMAFX_IN_DMABUF_VM=1` and /dev/dri/card0 are present and the
//! `vm_*` tests run (outside, they return at once and the driver stands for
//! them). With `VMAFX_REQUIRE_VM=1` a VM that cannot start is a failure.
//!
//! A producer allocates vgem dumb buffers (CREATE_DUMB + PRIME_HANDLE_TO_FD)
//! and udmabufs (memfd + UDMABUF_CREATE), attaches an unsignalled fence
//! (VGEM_FENCE_ATTACH, WRITE), tries an import (BUSY), writes the content,
//! signals the fence from another thread after a delay; the import then
//! succeeds and every per-frame value (vmaf_v0.6.1, motion included) equals
//! the software run on the same content, as f64 bits.

use crate::support::rerun;
use crate::support::synth;
use crate::support::vm_bed;
use crate::support::filter_capi;
use crate::support::partial_log;

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use filter_capi::*;
use vm_bed::*;
use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, FrameDescriptor, HostImporter, Model, ModelConfig, OwnedPicture, PixelFormat};
use vmafx::internals::import::sys::sync_file_status;
use vmafx::internals::import::{AcquireFence, DrmFourcc, DrmModifier, ImportErrorKind, Layer, Memory, Object, PlaneRef, ReleaseFence};

/// True inside the VM (vgem and udmabuf present there).
fn in_vm() -> bool {
    vm_bed::in_vm(&["/dev/dri/card0", "/dev/udmabuf"])
}

/// The dma-buf's implicit read fences as a sync_file (what a caller would
/// hand over as an explicit fence).
fn export_sync_file(buf: &Buffer) -> OwnedFd {
    #[repr(C)]
    struct Export {
        flags: u32,
        fd: i32,
    }
    let mut e = Export { flags: 1, fd: -1 };
    ioctl(buf.fd.as_raw_fd(), DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &mut e).expect("EXPORT_SYNC_FILE");
    // SAFETY: a fresh fd we own.
    unsafe { OwnedFd::from_raw_fd(e.fd) }
}

// ------------------------------------------------------------ layouts

/// Planar YUV420 in one layer of one object: pitches wider than the rows,
/// planes at offsets that are not packed.
struct PlanarLayout {
    pitch: [usize; 3],
    offset: [usize; 3],
    len: usize,
}

fn planar_layout(w: usize, h: usize) -> PlanarLayout {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let pitch = [w + 40, cw + 24, cw + 24];
    let offset = [256, 256 + pitch[0] * h + 64, 256 + pitch[0] * h + 64 + pitch[1] * ch + 128];
    PlanarLayout { pitch, offset, len: offset[2] + pitch[2] * ch }
}

fn planar_descriptor(label: String, fd: OwnedFd, l: &PlanarLayout, w: usize, h: usize) -> FrameDescriptor {
    let mut d = FrameDescriptor::new(label, w, h, 8);
    d.objects.push(Object { memory: Memory::DmaBuf(fd), size: 0, modifier: DrmModifier::Linear });
    d.layers.push(Layer {
        format: DrmFourcc::Yuv420,
        planes: (0..3).map(|i| PlaneRef { object: 0, offset: l.offset[i] as u64, pitch: l.pitch[i] as u64 }).collect(),
    });
    d
}

// ------------------------------------------------------------ scoring

fn context(with_psnr: bool) -> Context {
    let mut c = Context::new(ContextConfig { threads: 0, ..ContextConfig::default() }).unwrap();
    c.use_model(Model::builtin("vmaf_v0.6.1", &ModelConfig::default()).unwrap()).unwrap();
    if with_psnr {
        c.use_feature("psnr", FeatureOptions::new()).unwrap();
    }
    c
}

fn software_values(frames: &[(OwnedPicture, OwnedPicture)], with_psnr: bool) -> Vec<(String, Vec<Option<u64>>)> {
    let mut c = context(with_psnr);
    for (r, d) in frames {
        c.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    all_values(&mut c)
}

fn assert_same(got: &[(String, Vec<Option<u64>>)], want: &[(String, Vec<Option<u64>>)]) {
    assert!(want.iter().any(|(n, _)| n == "vmaf"), "no vmaf score in {want:?}");
    assert!(want.iter().any(|(n, _)| n.contains("motion")), "no motion feature");
    assert_eq!(got.len(), want.len(), "feature sets differ");
    for ((gn, gv), (wn, wv)) in got.iter().zip(want) {
        assert_eq!(gn, wn);
        assert_eq!(gv, wv, "{gn}: dma-buf run differs from the software run (bits)");
    }
}

/// Luma only, as a gray picture of the same depth.
fn luma_of(p: &OwnedPicture) -> OwnedPicture {
    let f = PixelFormat::new(Chroma::Yuv400, p.format().bits).unwrap();
    let mut out = OwnedPicture::new(f, p.width(), p.height()).unwrap();
    let v = p.view();
    for y in 0..p.height() {
        for x in 0..p.width() {
            out.set(0, x, y, v.luma().sample(x, y) as u16);
        }
    }
    out
}

// ------------------------------------------------------------ tests

/// Planar YUV420: distorted frames in fenced vgem buffers, references in
/// udmabufs. BUSY before the fence signals, then bit-exact scores, zero host
/// copies, one SYNC bracket per object.
#[test]
fn vm_planar_yuv420_fenced_frames_score_like_software() {
    if !in_vm() {
        return;
    }
    let (w, h, n) = (80, 60, 5);
    let frames = synth::clip(Chroma::Yuv420, 8, w, h, n, 11);
    let want = software_values(&frames, false);
    let vgem = Vgem::open();
    let device = HostImporter::new(false);
    let layout = planar_layout(w, h);
    let mut ctx = context(false);
    let mut buffers = Vec::new();
    for (t, (r, d)) in frames.iter().enumerate() {
        let mut rbuf = Buffer::udmabuf(layout.len);
        for i in 0..3 {
            write_plane(rbuf.bytes_mut(), r, i, layout.offset[i], layout.pitch[i], 0);
        }
        let mut dbuf = Buffer::vgem(&vgem, layout.len);
        let fence = dbuf.attach_fence();
        let desc = planar_descriptor(format!("distorted frame {t}"), dbuf.dup_fd(), &layout, w, h);
        let refusal = device.import(desc).expect_err("an import under an unsignalled fence must be BUSY");
        assert_eq!(refusal.error.kind, ImportErrorKind::Busy, "{}", refusal.error);
        assert!(refusal.error.message.contains("implicit write fence of object 0"), "{}", refusal.error);
        // The producer writes while its fence is pending, then signals.
        for i in 0..3 {
            write_plane(dbuf.bytes_mut(), d, i, layout.offset[i], layout.pitch[i], 0);
        }
        let signaller = fence.signal_later(Duration::from_millis(150));
        let dist = device.wait_and_import(*refusal.descriptor, Duration::from_secs(10)).expect("import after signal");
        signaller.join().unwrap();
        let refd = planar_descriptor(format!("reference frame {t}"), rbuf.dup_fd(), &layout, w, h);
        let refd = device.import(refd).expect("an unfenced udmabuf imports at once");
        assert_eq!(dist.format(), PixelFormat::new(Chroma::Yuv420, 8).unwrap());
        ctx.push(Arc::new(refd), Arc::new(dist)).unwrap();
        buffers.push((rbuf, dbuf));
    }
    let got = all_values(&mut ctx);
    assert_same(&got, &want);
    let s = device.stats();
    assert_eq!(s.host_copies(), 0, "a planar DRM_PRIME frame is read in place");
    assert_eq!(s.imports(), 2 * n as u64);
    assert_eq!(s.sync_starts(), 2 * n as u64, "one DMA_BUF_IOCTL_SYNC START|READ per object before reading");
    assert!(s.busy() >= n as u64);
    drop(ctx);
    assert_eq!(s.sync_ends(), 2 * n as u64, "every SYNC bracket closed once the engine let go");
}

/// VAAPI's NV12 export (R8 + GR88 layers in one udmabuf, odd size) with a
/// caller-given sync_file: BUSY until it signals; luma read in place for
/// luma-only scoring; chroma deinterleaved (counted) when asked.
#[test]
fn vm_nv12_vaapi_layout_with_caller_sync_file() {
    if !in_vm() {
        return;
    }
    let (w, h, n): (usize, usize, usize) = (81, 59, 4);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let frames = synth::clip(Chroma::Yuv420, 8, w, h, n, 23);
    let luma_frames: Vec<_> = frames.iter().map(|(r, d)| (luma_of(r), luma_of(d))).collect();
    let want_luma = software_values(&luma_frames, false);
    let want_full = software_values(&frames, true);
    let vgem = Vgem::open();
    // SYNC_IOC_FILE_INFO (the status that tells a failed fence from a good
    // one) as a real sync_file answers it: active, then signalled.
    let gate = Buffer::vgem(&vgem, 4096);
    let fence = gate.attach_fence();
    let sync_file = export_sync_file(&gate);
    assert_eq!(sync_file_status(sync_file.as_fd()).expect("SYNC_IOC_FILE_INFO"), Some(0), "pending: active");
    fence.signal();
    assert_eq!(sync_file_status(sync_file.as_fd()).expect("SYNC_IOC_FILE_INFO"), Some(1), "signalled");
    let (ypitch, cpitch) = (w + 47, 2 * cw + 16);
    let coff = 128 + ypitch * h;
    let len = coff + cpitch * ch;
    for read_chroma in [false, true] {
        let device = HostImporter::new(read_chroma);
        let mut ctx = context(read_chroma);
        let mut keep = Vec::new();
        for (t, (r, d)) in frames.iter().enumerate() {
            let mut pair = Vec::new();
            for (which, pic) in [("reference", r), ("distorted", d)] {
                let mut buf = Buffer::udmabuf(len);
                write_plane(buf.bytes_mut(), pic, 0, 128, ypitch, 0);
                write_interleaved(buf.bytes_mut(), pic, coff, cpitch, 0);
                let mut desc = FrameDescriptor::new(format!("{which} frame {t}"), w, h, 8);
                desc.objects.push(Object { memory: Memory::DmaBuf(buf.dup_fd()), size: len as u64, modifier: DrmModifier::Linear });
                desc.layers.push(Layer { format: DrmFourcc::R8, planes: vec![PlaneRef { object: 0, offset: 128, pitch: ypitch as u64 }] });
                desc.layers.push(Layer { format: DrmFourcc::Gr88, planes: vec![PlaneRef { object: 0, offset: coff as u64, pitch: cpitch as u64 }] });
                // The explicit fence: a vgem writer's, handed over as a sync_file.
                let gate = Buffer::vgem(&vgem, 4096);
                let fence = gate.attach_fence();
                desc.acquire.push(AcquireFence::SyncFile(export_sync_file(&gate)));
                desc.implicit_sync = false;
                let refusal = device.import(desc).expect_err("caller's sync_file pending: BUSY");
                assert_eq!(refusal.error.kind, ImportErrorKind::Busy);
                assert!(refusal.error.message.contains("acquire fence 0 (sync_file"), "{}", refusal.error);
                let s = fence.signal_later(Duration::from_millis(50));
                let frame = device.wait_and_import(*refusal.descriptor, Duration::from_secs(10)).expect("import");
                s.join().unwrap();
                pair.push(frame);
                keep.push(buf);
            }
            let dist = pair.pop().unwrap();
            let refd = pair.pop().unwrap();
            ctx.push(Arc::new(refd), Arc::new(dist)).unwrap();
        }
        let got = all_values(&mut ctx);
        let s = device.stats();
        if read_chroma {
            assert_same(&got, &want_full);
            assert_eq!(s.host_copies(), 2 * 2 * n as u64, "U and V deinterleaved per picture, counted");
        } else {
            assert_same(&got, &want_luma);
            assert_eq!(s.host_copies(), 0, "NV12 luma is read in place");
        }
        assert_eq!(s.sync_starts(), 2 * n as u64);
    }
}

/// P010 (one layer, two planes, MSB-aligned 10-bit) in vgem: scores equal
/// the 10-bit software run; the shift to 10 bits is a counted copy.
#[test]
fn vm_p010_scores_like_10_bit_software() {
    if !in_vm() {
        return;
    }
    let (w, h, n) = (64, 48, 3);
    let frames = synth::clip(Chroma::Yuv420, 10, w, h, n, 5);
    let luma_frames: Vec<_> = frames.iter().map(|(r, d)| (luma_of(r), luma_of(d))).collect();
    let want = software_values(&luma_frames, false);
    let vgem = Vgem::open();
    let device = HostImporter::new(false);
    let (ypitch, cpitch) = (2 * w + 64, 2 * w + 64);
    let coff = ypitch * h;
    let len = coff + cpitch * h / 2;
    let mut ctx = context(false);
    let mut keep = Vec::new();
    for (t, (r, d)) in frames.iter().enumerate() {
        let mut pair = Vec::new();
        for (which, pic) in [("reference", r), ("distorted", d)] {
            let mut buf = Buffer::vgem(&vgem, len);
            let fence = buf.attach_fence();
            write_plane(buf.bytes_mut(), pic, 0, 0, ypitch, 6);
            write_interleaved(buf.bytes_mut(), pic, coff, cpitch, 6);
            let mut desc = FrameDescriptor::new(format!("{which} frame {t}"), w, h, 10);
            desc.objects.push(Object { memory: Memory::DmaBuf(buf.dup_fd()), size: 0, modifier: DrmModifier::Linear });
            desc.layers.push(Layer {
                format: DrmFourcc::P010,
                planes: vec![
                    PlaneRef { object: 0, offset: 0, pitch: ypitch as u64 },
                    PlaneRef { object: 0, offset: coff as u64, pitch: cpitch as u64 },
                ],
            });
            let desc = match device.import(desc) {
                Err(r) if r.error.kind == ImportErrorKind::Busy => *r.descriptor,
                other => panic!("expected BUSY, got {other:?}"),
            };
            let s = fence.signal_later(Duration::from_millis(20));
            pair.push(device.wait_and_import(desc, Duration::from_secs(10)).expect("import"));
            s.join().unwrap();
            keep.push(buf);
        }
        let dist = pair.pop().unwrap();
        let refd = pair.pop().unwrap();
        assert_eq!(refd.picture().bits(), 10);
        ctx.push(Arc::new(refd), Arc::new(dist)).unwrap();
    }
    assert_same(&all_values(&mut ctx), &want);
    assert_eq!(device.stats().host_copies(), 2 * n as u64, "one shifted luma copy per picture");
}

/// VAAPI's P010 export with one object per layer (R16 + GR1616, 10 bits in
/// the high bits): each object's implicit fence is waited for in turn;
/// scores equal the 10-bit software run.
#[test]
fn vm_vaapi_p010_two_objects_two_fences() {
    if !in_vm() {
        return;
    }
    let (w, h, n): (usize, usize, usize) = (48, 38, 3);
    let frames = synth::clip(Chroma::Yuv420, 10, w, h, n, 9);
    let luma_frames: Vec<_> = frames.iter().map(|(r, d)| (luma_of(r), luma_of(d))).collect();
    let want = software_values(&luma_frames, false);
    let vgem = Vgem::open();
    let device = HostImporter::new(false);
    let (ypitch, cpitch) = (2 * w + 32, 4 * w.div_ceil(2) + 32);
    let mut ctx = context(false);
    let mut keep = Vec::new();
    for (t, (r, d)) in frames.iter().enumerate() {
        let mut pair = Vec::new();
        for (which, pic) in [("reference", r), ("distorted", d)] {
            let mut ybuf = Buffer::vgem(&vgem, ypitch * h);
            let mut cbuf = Buffer::vgem(&vgem, 64 + cpitch * h.div_ceil(2));
            let (yfence, cfence) = (ybuf.attach_fence(), cbuf.attach_fence());
            write_plane(ybuf.bytes_mut(), pic, 0, 0, ypitch, 6);
            write_interleaved(cbuf.bytes_mut(), pic, 64, cpitch, 6);
            let mut desc = FrameDescriptor::new(format!("{which} frame {t}"), w, h, 10);
            for b in [&ybuf, &cbuf] {
                desc.objects.push(Object { memory: Memory::DmaBuf(b.dup_fd()), size: 0, modifier: DrmModifier::Linear });
            }
            desc.layers.push(Layer { format: DrmFourcc::R16, planes: vec![PlaneRef { object: 0, offset: 0, pitch: ypitch as u64 }] });
            desc.layers.push(Layer { format: DrmFourcc::Gr1616, planes: vec![PlaneRef { object: 1, offset: 64, pitch: cpitch as u64 }] });
            let r0 = device.import(desc).expect_err("both fences pending");
            assert!(r0.error.message.contains("object 0"), "{}", r0.error);
            yfence.signal();
            let r1 = device.import(*r0.descriptor).expect_err("the chroma object's fence is pending");
            assert_eq!(r1.error.kind, ImportErrorKind::Busy);
            assert!(r1.error.message.contains("implicit write fence of object 1"), "{}", r1.error);
            let s = cfence.signal_later(Duration::from_millis(20));
            pair.push(device.wait_and_import(*r1.descriptor, Duration::from_secs(10)).expect("import"));
            s.join().unwrap();
            keep.push((ybuf, cbuf));
        }
        let dist = pair.pop().unwrap();
        let refd = pair.pop().unwrap();
        ctx.push(Arc::new(refd), Arc::new(dist)).unwrap();
    }
    assert_same(&all_values(&mut ctx), &want);
    let s = device.stats();
    assert_eq!(s.host_copies(), 2 * n as u64, "one shifted luma copy per picture");
    assert_eq!(s.sync_starts(), 4 * n as u64, "two objects per picture, each bracketed once");
}

/// A frame as FFmpeg describes it (AVDRMFrameDescriptor, VAAPI's NV12
/// export: R8 + GR88 layers in one object) through `from_av_drm`: BUSY under
/// the writer's fence, then every sample equal to the software picture;
/// `DRM_FORMAT_MOD_INVALID` as FFmpeg passes it is refused by default.
#[test]
fn vm_ffmpeg_drm_descriptor_imports() {
    use vmafx::AvDrmFrameDescriptor;
    use vmafx::internals::import::drm::{AvDrmLayerDescriptor, AvDrmObjectDescriptor, AvDrmPlaneDescriptor};
    if !in_vm() {
        return;
    }
    let (w, h): (usize, usize) = (70, 42);
    let (_, pic) = synth::clip(Chroma::Yuv420, 8, w, h, 1, 31).remove(0);
    let vgem = Vgem::open();
    let (pitch, coff) = (128usize, 128 * h);
    let mut buf = Buffer::vgem(&vgem, coff + pitch * h / 2);
    let fence = buf.attach_fence();
    let mut av = AvDrmFrameDescriptor { nb_objects: 1, nb_layers: 2, ..Default::default() };
    av.objects[0] = AvDrmObjectDescriptor { fd: buf.fd.as_raw_fd(), size: buf.len, format_modifier: 0 };
    av.layers[0] = AvDrmLayerDescriptor { format: DrmFourcc::R8 as u32, nb_planes: 1, ..Default::default() };
    av.layers[0].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: 0, pitch: pitch as isize };
    av.layers[1] = AvDrmLayerDescriptor { format: DrmFourcc::Gr88 as u32, nb_planes: 1, ..Default::default() };
    av.layers[1].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: coff as isize, pitch: pitch as isize };
    let device = HostImporter::new(true);
    let desc = FrameDescriptor::from_av_drm(&av, "main frame 0", w, h, 8).unwrap();
    let r = device.import(desc).expect_err("BUSY under the writer's fence");
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    write_plane(buf.bytes_mut(), &pic, 0, 0, pitch, 0);
    write_interleaved(buf.bytes_mut(), &pic, coff, pitch, 0);
    let s = fence.signal_later(Duration::from_millis(30));
    let frame = device.wait_and_import(*r.descriptor, Duration::from_secs(10)).unwrap();
    s.join().unwrap();
    let (got, want) = (frame.picture(), pic.view());
    for i in 0..3 {
        let (g, wv) = (got.plane(i), want.plane(i));
        for y in 0..g.height() {
            for x in 0..g.width() {
                assert_eq!(g.sample(x, y), wv.sample(x, y), "plane {i} ({x},{y})");
            }
        }
    }
    assert_eq!(device.stats().host_copies(), 2, "U and V deinterleaved");
    av.objects[0].format_modifier = 0x00ff_ffff_ffff_ffff; // DRM_FORMAT_MOD_INVALID
    let desc = FrameDescriptor::from_av_drm(&av, "main frame 1", w, h, 8).unwrap();
    let r = device.import(desc).expect_err("MOD_INVALID refused by default");
    assert_eq!(r.error.kind, ImportErrorKind::NotSupported);
    assert!(r.error.message.contains("main frame 1") && r.error.message.contains("DRM_FORMAT_MOD_INVALID"));
}

/// Each refusal is a clear error: kind, and a message naming what and why.
#[test]
fn vm_refusals_name_what_and_why() {
    if !in_vm() {
        return;
    }
    let (w, h) = (64, 48);
    let layout = planar_layout(w, h);
    let vgem = Vgem::open();
    let buf = Buffer::vgem(&vgem, layout.len);
    let device = HostImporter::new(false);
    let expect = |desc: FrameDescriptor, kind: ImportErrorKind, words: &[&str]| {
        let r = device.import(desc).expect_err("must be refused");
        assert_eq!(r.error.kind, kind, "{}", r.error);
        for word in words {
            assert!(r.error.message.contains(word), "'{}' does not name '{word}'", r.error);
        }
        r
    };
    // A tiled modifier.
    let mut d = planar_descriptor("tiled frame".into(), buf.dup_fd(), &layout, w, h);
    d.objects[0].modifier = DrmModifier::I915_x_tiled;
    expect(d, ImportErrorKind::NotSupported, &["tiled frame", "I915_x_tiled", "DRM_FORMAT_MOD_LINEAR"]);
    // MOD_INVALID: refused unless the caller says the layout is implicit-linear.
    let mut d = planar_descriptor("implicit frame".into(), buf.dup_fd(), &layout, w, h);
    d.objects[0].modifier = DrmModifier::Invalid;
    let mut d = *expect(d, ImportErrorKind::NotSupported, &["DRM_FORMAT_MOD_INVALID"]).descriptor;
    d.invalid_modifier = vmafx::internals::import::InvalidModifier::ImplicitLinear;
    device.import(d).expect("implicit-linear accepted when the caller says so");
    // A plane past the end of its buffer.
    let mut d = planar_descriptor("long frame".into(), buf.dup_fd(), &layout, w, h);
    d.layers[0].planes[2].offset = buf.len as u64 - 10;
    expect(d, ImportErrorKind::Range, &["long frame", "plane 2", "past the end of object 0"]);
    // A declared size larger than the object.
    let mut d = planar_descriptor("big frame".into(), buf.dup_fd(), &layout, w, h);
    d.objects[0].size = buf.len as u64 + 4096;
    expect(d, ImportErrorKind::Range, &["declares"]);
    // A closed fd (a number no fd holds; the descriptor is forgotten, not closed).
    // SAFETY: the OwnedFd is never dropped (mem::forget below).
    let closed = unsafe { OwnedFd::from_raw_fd(900_000) };
    let d = planar_descriptor("closed frame".into(), closed, &layout, w, h);
    let r = expect(d, ImportErrorKind::Invalid, &["closed frame", "fd 900000", "closed fd"]);
    std::mem::forget(r.descriptor);
    // A format not handled.
    let mut d = planar_descriptor("rgb frame".into(), buf.dup_fd(), &layout, w, h);
    d.layers[0].format = DrmFourcc::Xrgb8888;
    expect(d, ImportErrorKind::NotSupported, &["rgb frame", "XR24"]);
    // A sync_file release fence.
    let mut d = planar_descriptor("release frame".into(), buf.dup_fd(), &layout, w, h);
    d.release.push(ReleaseFence::SyncFile(buf.dup_fd()));
    expect(d, ImportErrorKind::NotSupported, &["release fence 0 is a sync_file"]);
    // A GL texture.
    let mut d = planar_descriptor("gl frame".into(), buf.dup_fd(), &layout, w, h);
    d.objects[0].memory = Memory::GlTexture { target: 0x0DE1, name: 7 };
    expect(d, ImportErrorKind::NotSupported, &["GL texture 7"]);
    // A plane naming a missing object.
    let mut d = planar_descriptor("orphan frame".into(), buf.dup_fd(), &layout, w, h);
    d.layers[0].planes[1].object = 3;
    expect(d, ImportErrorKind::Invalid, &["object 3 of 1"]);
    // A fence that never signals (within the import's 1.5 s timeout).
    let fence = buf.attach_fence();
    let d = planar_descriptor("stuck frame".into(), buf.dup_fd(), &layout, w, h);
    let t0 = std::time::Instant::now();
    let r = device.wait_and_import(d, Duration::from_millis(1500)).expect_err("never signalled");
    assert!(t0.elapsed() >= Duration::from_millis(1500) && t0.elapsed() < Duration::from_secs(15));
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    for word in ["gave up after 1.5s", "stuck frame", "implicit write fence of object 0"] {
        assert!(r.error.message.contains(word), "'{}' does not name '{word}'", r.error);
    }
    let e: vmafx::Error = r.error.clone().into();
    assert!(e.to_string().contains("stuck frame"));
    fence.signal();
    device.import(*r.descriptor).expect("imports once signalled");
    assert_eq!(device.stats().sync_starts(), 2);
}

/// Host release fences are signalled when the frame is dropped.
#[test]
fn vm_host_release_fence_signals_on_drop() {
    if !in_vm() {
        return;
    }
    let (w, h) = (32, 16);
    let layout = planar_layout(w, h);
    let buf = Buffer::udmabuf(layout.len);
    let device = HostImporter::new(false);
    let release = vmafx::internals::import::HostFence::new();
    let mut d = planar_descriptor("released frame".into(), buf.dup_fd(), &layout, w, h);
    d.release.push(ReleaseFence::Host(release.clone()));
    let frame = device.import(d).expect("import");
    assert!(!release.is_signalled());
    assert_eq!(frame.picture().width(), w);
    drop(frame);
    assert!(release.is_signalled());
    assert_eq!(device.stats().sync_ends(), 1);
}

// ------------------------------------------------- the filter's C interface

fn new_filter(fence_timeout_us: i64) -> *mut vmafx::internals::avfilter::ffi::VmafxFilter {
    filter_capi::new_filter(c"version=vmaf_v0.6.1", 2, fence_timeout_us * time_scale() as i64, None).expect("vmafx_filter_new")
}

/// A DRM_PRIME frame of `pic` in a fresh vgem buffer, as FFmpeg describes
/// it: yuv420p as one YUV420 layer (padded pitches, unpacked offsets), nv12
/// as VAAPI exports it (R8 + GR88 layers). Returns the buffer (to keep it
/// mapped) and the descriptor with its own fd.
fn drm_frame(vgem: &Arc<Vgem>, pic: &OwnedPicture, sw: &str) -> (Buffer, Box<vmafx::AvDrmFrameDescriptor>, OwnedFd) {
    let mut buf = Buffer::vgem(vgem, drm_len(pic.width(), pic.height(), sw));
    let (desc, fd) = fill_drm(&mut buf, pic, sw);
    (buf, desc, fd)
}

/// Bytes a DRM_PRIME frame of `sw` at `w`x`h` takes in [`fill_drm`]'s layout.
fn drm_len(w: usize, h: usize, sw: &str) -> usize {
    match sw {
        "yuv420p" => planar_layout(w, h).len,
        _ => w.next_multiple_of(64) * (h + h.div_ceil(2)),
    }
}

/// Writes `pic` into `buf` (at least [`drm_len`] bytes) in `sw`'s layout
/// and describes it; the descriptor comes with a dup of the buffer's fd.
fn fill_drm(buf: &mut Buffer, pic: &OwnedPicture, sw: &str) -> (Box<vmafx::AvDrmFrameDescriptor>, OwnedFd) {
    use vmafx::AvDrmFrameDescriptor;
    use vmafx::internals::import::drm::{AvDrmLayerDescriptor, AvDrmObjectDescriptor, AvDrmPlaneDescriptor};
    let (w, h) = (pic.width(), pic.height());
    let mut av = Box::new(AvDrmFrameDescriptor { nb_objects: 1, ..Default::default() });
    if sw == "yuv420p" {
        let l = planar_layout(w, h);
        for i in 0..3 {
            write_plane(buf.bytes_mut(), pic, i, l.offset[i], l.pitch[i], 0);
        }
        av.nb_layers = 1;
        av.layers[0] = AvDrmLayerDescriptor { format: DrmFourcc::Yuv420 as u32, nb_planes: 3, ..Default::default() };
        for i in 0..3 {
            av.layers[0].planes[i] = AvDrmPlaneDescriptor { object_index: 0, offset: l.offset[i] as isize, pitch: l.pitch[i] as isize };
        }
    } else {
        assert_eq!(sw, "nv12");
        let (pitch, coff) = (w.next_multiple_of(64), w.next_multiple_of(64) * h);
        write_plane(buf.bytes_mut(), pic, 0, 0, pitch, 0);
        write_interleaved(buf.bytes_mut(), pic, coff, pitch, 0);
        av.nb_layers = 2;
        av.layers[0] = AvDrmLayerDescriptor { format: DrmFourcc::R8 as u32, nb_planes: 1, ..Default::default() };
        av.layers[0].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: 0, pitch: pitch as isize };
        av.layers[1] = AvDrmLayerDescriptor { format: DrmFourcc::Gr88 as u32, nb_planes: 1, ..Default::default() };
        av.layers[1].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: coff as isize, pitch: pitch as isize };
    }
    let fd = buf.dup_fd();
    av.objects[0] = AvDrmObjectDescriptor { fd: fd.as_raw_fd(), size: buf.len, format_modifier: 0 };
    (av, fd)
}

/// Per-frame metadata of one filter run over `frames`, each input software
/// or DRM_PRIME (`drm_main`, `drm_ref`). The first DRM frame's buffer has an
/// unsignalled write fence that another thread signals after 100 ms: the
/// push waits for it. Returns the metadata per output frame (values parsed
/// to f64 bits) and the host-copy counter.
fn filter_run(frames: &[(OwnedPicture, OwnedPicture)], sw: &str, drm_main: bool, drm_ref: bool) -> (Vec<Vec<(String, u64)>>, u64) {
    use vmafx::internals::avfilter::ffi::*;
    let sw_c = std::ffi::CString::new(sw).unwrap();
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let vgem = Vgem::open();
    let f = new_filter(1_000_000);
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, w as i32, h as i32, sw_c.as_ptr(), w as i32, h as i32, sw_c.as_ptr()) }, 0, "{}", last_error(f));
    let mut buffers = Vec::new();
    let mut fenced = false;
    // Set just before the fence signals: a push that returns with it unset
    // did not wait.
    let signalling = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut signaller = None;
    for (r, d) in frames {
        let mut make = |pic: &OwnedPicture, drm: bool| -> *mut HostFrame {
            if !drm {
                return host_frame(&live, Some(pic.clone()), None);
            }
            let (buf, desc, fd) = drm_frame(&vgem, pic, sw);
            if !fenced {
                fenced = true;
                let (fence, flag) = (buf.attach_fence(), signalling.clone());
                signaller = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    flag.store(true, std::sync::atomic::Ordering::SeqCst);
                    fence.signal();
                }));
            }
            buffers.push(buf);
            host_frame(&live, None, Some((desc, fd)))
        };
        let (mh, rh) = (make(d, drm_main), make(r, drm_ref));
        let out = host_frame(&live, None, None);
        let (mf, rf) = (vmafx_frame(mh, w, h, &sw_c), vmafx_frame(rh, w, h, &sw_c));
        // SAFETY: filled frames whose planes live as long as their handles.
        let ret = unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) };
        assert_eq!(ret, 0, "{}", last_error(f));
        if let Some(s) = signaller.take() {
            assert!(signalling.load(std::sync::atomic::Ordering::SeqCst), "the push did not wait for the fence");
            s.join().unwrap();
        }
    }
    let outputs = finish_and_pop(f, frames.len());
    // SAFETY: a live filter.
    let (scored, copies) = unsafe { (vmafx_filter_frames_scored(f), vmafx_filter_host_copies(f)) };
    assert_eq!(scored, frames.len() as u64);
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "every frame handed over was released");
    (outputs, copies)
}

/// The filter's C interface with DRM_PRIME inputs (the route FFmpeg's glue
/// takes: AVDRMFrameDescriptor + sw_format): on either input, mixed with a
/// software input, or both; yuv420p (one YUV420 layer) and nv12 (VAAPI's
/// R8 + GR88). Every per-frame value equals the all-software run as f64
/// bits; a pending fence is waited for; planar layouts make no host copy.
#[test]
fn vm_filter_drm_prime_inputs_score_like_software() {
    if !in_vm() {
        return;
    }
    for sw in ["yuv420p", "nv12"] {
        let frames = synth::clip(Chroma::Yuv420, 8, 70, 42, 4, 23);
        let (want, copies) = filter_run(&frames, sw, false, false);
        assert_eq!(want.len(), frames.len());
        assert!(want[0].iter().any(|(k, _)| k == "lavfi.vmafx.vmaf"), "{want:?}");
        assert!(want[0].iter().any(|(k, _)| k.contains("motion")));
        assert_eq!(copies, 0, "{sw} software frames, luma-only features: read in place");
        for (drm_main, drm_ref) in [(true, false), (false, true), (true, true)] {
            let (got, copies) = filter_run(&frames, sw, drm_main, drm_ref);
            assert_eq!(got, want, "{sw} drm main {drm_main} ref {drm_ref}: differs from the software run (bits)");
            assert_eq!(copies, 0, "{sw} drm_prime frames read in place (luma-only features)");
        }
    }
}

/// A fence never signalled: past fence_timeout the push fails with an error
/// naming the frame and the fence, nothing is scored from that buffer, and
/// every frame handed over is released.
#[test]
fn vm_filter_drm_fence_timeout_is_a_clear_error() {
    use vmafx::internals::avfilter::ffi::*;
    if !in_vm() {
        return;
    }
    let frames = synth::clip(Chroma::Yuv420, 8, 64, 36, 1, 5);
    let (r, d) = &frames[0];
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let vgem = Vgem::open();
    let f = new_filter(200_000);
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, 64, 36, c"yuv420p".as_ptr(), 64, 36, c"yuv420p".as_ptr()) }, 0);
    let (buf, desc, fd) = drm_frame(&vgem, d, "yuv420p");
    let fence = buf.attach_fence();
    let mh = host_frame(&live, None, Some((desc, fd)));
    let rh = host_frame(&live, Some(r.clone()), None);
    let out = host_frame(&live, None, None);
    let (mf, rf) = (vmafx_frame(mh, 64, 36, c"yuv420p"), vmafx_frame(rh, 64, 36, c"yuv420p"));
    let t0 = std::time::Instant::now();
    // SAFETY: filled frames whose planes live as long as their handles.
    let ret = unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) };
    let waited = t0.elapsed();
    assert!(ret < 0, "a never-signalled fence must fail the push");
    let msg = last_error(f);
    eprintln!("fence timeout error: {msg}");
    assert!(msg.contains("main frame 0") && msg.contains("implicit write fence of object 0") && msg.contains(&gave_up_after(200)), "{msg}");
    let scale = time_scale();
    assert!(waited >= Duration::from_millis(200) * scale && waited < Duration::from_secs(10) * scale, "waited {waited:?}");
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "the frames of a failed push are released");
    // SAFETY: a live filter.
    unsafe {
        assert_eq!(vmafx_filter_frames_scored(f), 0, "nothing scored from the unsignalled buffer");
        assert_eq!(vmafx_filter_finish(f, 0, 0), 0);
        let mut o = std::ptr::null_mut();
        assert_eq!(vmafx_filter_pop(f, &mut o), 0, "no output frame for the failed pair");
        vmafx_filter_free(f);
    }
    fence.signal();
    drop(buf);
}

// ------------------------------------- failed fences (tests/vm/fence_error)

/// The fence test module's device (tests/vm/fence_error, loaded by
/// scripts/dmabuf-vm): Debian's kernel has no SW_SYNC and vgem's fences
/// never fail, so this is where a fence that signals an error comes from.
const FENCE_TEST_DEVICE: &str = "/dev/vmafx_fence_test";
/// `_IOR('v', 0xf0, struct vmafx_fence_create)`.
const VMAFX_FENCE_CREATE: nix::libc::c_ulong = 0x8008_76f0;
/// `_IOW('v', 0xf1, struct vmafx_fence_signal)`.
const VMAFX_FENCE_SIGNAL: nix::libc::c_ulong = 0x4008_76f1;
/// `_IOW('b', 3, struct dma_buf_import_sync_file)`.
const DMA_BUF_IOCTL_IMPORT_SYNC_FILE: nix::libc::c_ulong = 0x4008_6203;
const DMA_BUF_SYNC_WRITE: u32 = 2;
const EIO: i32 = nix::libc::EIO;

/// True inside the VM, where the fence test module must be loaded too.
fn in_vm_with_test_fences() -> bool {
    vm_bed::in_vm(&["/dev/dri/card0", "/dev/udmabuf", FENCE_TEST_DEVICE])
}

/// One open file of the module: its fences still pending at close signal
/// with ENOENT.
struct TestFences(OwnedFd);

impl TestFences {
    fn open() -> Arc<TestFences> {
        let dev = std::fs::OpenOptions::new().read(true).write(true).open(FENCE_TEST_DEVICE).expect(FENCE_TEST_DEVICE);
        Arc::new(TestFences(dev.into()))
    }

    /// A new pending fence with its sync_file.
    fn create(self: &Arc<Self>) -> TestFence {
        #[repr(C)]
        struct Create {
            fd: i32,
            handle: u32,
        }
        let mut c = Create { fd: -1, handle: 0 };
        ioctl(self.0.as_raw_fd(), VMAFX_FENCE_CREATE, &mut c).expect("VMAFX_FENCE_CREATE");
        // SAFETY: a fresh fd we own.
        TestFence { fences: self.clone(), handle: c.handle, sync_file: unsafe { OwnedFd::from_raw_fd(c.fd) } }
    }
}

struct TestFence {
    fences: Arc<TestFences>,
    handle: u32,
    sync_file: OwnedFd,
}

impl TestFence {
    fn sync_file(&self) -> OwnedFd {
        self.sync_file.try_clone().unwrap()
    }

    /// Signals, with `errno` as the fence's error unless 0.
    fn signal(&self, errno: i32) {
        #[repr(C)]
        struct Signal {
            handle: u32,
            error: i32,
        }
        ioctl(self.fences.0.as_raw_fd(), VMAFX_FENCE_SIGNAL, &mut Signal { handle: self.handle, error: -errno }).expect("VMAFX_FENCE_SIGNAL");
    }

    fn signal_later(self, delay: Duration, errno: i32) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            self.signal(errno);
        })
    }

    /// Adds the fence to `buf`'s dma-buf as a writer's (the implicit fence
    /// an import waits for).
    fn attach_to(&self, buf: &Buffer) {
        #[repr(C)]
        struct Import {
            flags: u32,
            fd: i32,
        }
        let mut i = Import { flags: DMA_BUF_SYNC_WRITE, fd: self.sync_file.as_raw_fd() };
        ioctl(buf.fd.as_raw_fd(), DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &mut i).expect("DMA_BUF_IOCTL_IMPORT_SYNC_FILE");
    }
}

fn planar_udmabuf(pic: &OwnedPicture, l: &PlanarLayout) -> Buffer {
    let mut buf = Buffer::udmabuf(l.len);
    for i in 0..3 {
        write_plane(buf.bytes_mut(), pic, i, l.offset[i], l.pitch[i], 0);
    }
    buf
}

/// Real sync_files from the fence test module as the caller's acquire
/// fence. Signalled without error: BUSY until then, and the frames score
/// bit-exact. Signalled with EIO: the import refuses the frame naming frame,
/// fence and errno, as soon as the fence fails (not at the timeout), and
/// again on every retry (final); as the dma-buf's implicit fence the same.
#[test]
fn vm_failed_fences_are_refused_at_once_and_good_ones_score() {
    if !in_vm_with_test_fences() {
        return;
    }
    let (w, h, n) = (64, 48, 3);
    let frames = synth::clip(Chroma::Yuv420, 8, w, h, n, 17);
    let want = software_values(&frames, false);
    let layout = planar_layout(w, h);
    let device = HostImporter::new(false);
    let fences = TestFences::open();

    // The status vmafx reads (SYNC_IOC_FILE_INFO): active, then the error;
    // a fence left pending at close fails with ENOENT.
    let fence = fences.create();
    assert_eq!(sync_file_status(fence.sync_file.as_fd()).expect("SYNC_IOC_FILE_INFO"), Some(0), "pending: active");
    fence.signal(EIO);
    assert_eq!(sync_file_status(fence.sync_file.as_fd()).expect("SYNC_IOC_FILE_INFO"), Some(-EIO), "failed: its error");
    let other = TestFences::open();
    let abandoned = other.create().sync_file();
    drop(other);
    assert_eq!(sync_file_status(abandoned.as_fd()).unwrap(), Some(-nix::libc::ENOENT), "pending at close");

    let mut ctx = context(false);
    let mut buffers = Vec::new();
    for (t, (r, d)) in frames.iter().enumerate() {
        let (rbuf, dbuf) = (planar_udmabuf(r, &layout), planar_udmabuf(d, &layout));
        let fence = fences.create();
        let mut desc = planar_descriptor(format!("distorted frame {t}"), dbuf.dup_fd(), &layout, w, h);
        desc.acquire.push(AcquireFence::SyncFile(fence.sync_file()));
        let refusal = device.import(desc).expect_err("caller's sync_file pending: BUSY");
        assert_eq!(refusal.error.kind, ImportErrorKind::Busy, "{}", refusal.error);
        assert!(refusal.error.message.contains("acquire fence 0 (sync_file"), "{}", refusal.error);
        let s = fence.signal_later(Duration::from_millis(50), 0);
        let dist = device.wait_and_import(*refusal.descriptor, Duration::from_secs(10)).expect("a fence signalled without error");
        s.join().unwrap();
        let refd = device.import(planar_descriptor(format!("reference frame {t}"), rbuf.dup_fd(), &layout, w, h)).expect("unfenced");
        ctx.push(Arc::new(refd), Arc::new(dist)).unwrap();
        buffers.push((rbuf, dbuf));
    }
    assert_same(&all_values(&mut ctx), &want);

    // Far past how long a failure takes to be seen, even scaled.
    let timeout = Duration::from_secs(60) * time_scale();
    let expect_failed = |r: &vmafx::Refusal, words: &[&str]| {
        assert_eq!(r.error.kind, ImportErrorKind::Device, "{}", r.error);
        for word in words.iter().chain(&["signalled an error", "EIO"]) {
            assert!(r.error.message.contains(word), "no {word:?} in: {}", r.error);
        }
        assert!(!r.error.message.contains("gave up"), "{}", r.error);
    };
    // A caller's fence pending when the wait starts: the wait ends when it
    // fails, not at the timeout; a retry is refused the same way.
    let dbuf = planar_udmabuf(&frames[0].1, &layout);
    let fence = fences.create();
    let mut desc = planar_descriptor("distorted frame 7".into(), dbuf.dup_fd(), &layout, w, h);
    desc.acquire.push(AcquireFence::SyncFile(fence.sync_file()));
    let t0 = std::time::Instant::now();
    let s = fence.signal_later(Duration::from_millis(100), EIO);
    let refusal = device.wait_and_import(desc, timeout).expect_err("a failed fence must not import");
    let waited = t0.elapsed();
    s.join().unwrap();
    eprintln!("failed caller fence after {waited:?}: {}", refusal.error);
    expect_failed(&refusal, &["distorted frame 7", "acquire fence 0 (sync_file"]);
    assert!(waited < timeout / 4, "waited {waited:?}: the failure was not seen when it happened");
    let again = device.import(*refusal.descriptor).expect_err("a failed fence stays failed");
    expect_failed(&again, &["distorted frame 7", "acquire fence 0 (sync_file"]);

    // The failed fence as the dma-buf's own write fence (the implicit
    // path), failing while the wait runs: refused the same way. The kernel
    // no longer shows a fence once it has signalled: EXPORT_SYNC_FILE
    // leaves it out (dma_resv_get_fences), so a fresh export reads
    // signalled and only the sync_file exported while it was pending (the
    // one the import holds across its retries) carries the error.
    let ibuf = planar_udmabuf(&frames[0].1, &layout);
    let fence = fences.create();
    fence.attach_to(&ibuf);
    let desc = planar_descriptor("distorted frame 8".into(), ibuf.dup_fd(), &layout, w, h);
    let exported_while_pending = export_sync_file(&ibuf);
    let t0 = std::time::Instant::now();
    let s = fence.signal_later(Duration::from_millis(100), EIO);
    let refusal = device.wait_and_import(desc, timeout).expect_err("a failed implicit fence must not import");
    let waited = t0.elapsed();
    s.join().unwrap();
    eprintln!("failed implicit fence after {waited:?}: {}", refusal.error);
    expect_failed(&refusal, &["distorted frame 8: the implicit write fence of object 0"]);
    assert!(waited < timeout / 4, "waited {waited:?}: the failure was not seen when it happened");
    assert_eq!(sync_file_status(exported_while_pending.as_fd()).unwrap(), Some(-EIO));
    assert_eq!(sync_file_status(export_sync_file(&ibuf).as_fd()).unwrap(), Some(1), "a fresh export shows no failed fence");
}

/// The filter's C interface (the glue's route) with DRM_PRIME main frames
/// (vgem) and software references; at pair `fault_at` the main frame's
/// buffer carries a module fence that fails with EIO 100 ms into the push.
/// JSON log at `log`. Returns the failed push's error, how long it took and
/// the error of the summary uninit asks for.
fn filter_run_with_failed_fence(frames: &[(OwnedPicture, OwnedPicture)], log: &std::path::Path, fault_at: Option<usize>) -> Option<(String, Duration, String)> {
    use vmafx::internals::avfilter::ffi::*;
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let vgem = Vgem::open();
    let fences = TestFences::open();
    let path = std::ffi::CString::new(log.to_str().unwrap()).unwrap();
    // A timeout far past the failure: a push that waits it out is no pass.
    let timeout_us = 60_000_000 * time_scale() as i64;
    let f = new_filter_logging(c"version=vmaf_v0.6.1", 2, timeout_us, None, Some((&path, c"json"))).expect("vmafx_filter_new");
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, w as i32, h as i32, c"yuv420p".as_ptr(), w as i32, h as i32, c"yuv420p".as_ptr()) }, 0, "{}", last_error(f));
    let mut buffers = Vec::new();
    let mut failed = None;
    for (i, (r, d)) in frames.iter().enumerate() {
        let (buf, desc, fd) = drm_frame(&vgem, d, "yuv420p");
        let signaller = (fault_at == Some(i)).then(|| {
            let fence = fences.create();
            fence.attach_to(&buf);
            fence.signal_later(Duration::from_millis(100), EIO)
        });
        buffers.push(buf);
        let main = host_frame(&live, None, Some((desc, fd)));
        let reference = host_frame(&live, Some(r.clone()), None);
        let out = host_frame(&live, None, None);
        let (mf, rf) = (vmafx_frame(main, w, h, c"yuv420p"), vmafx_frame(reference, w, h, c"yuv420p"));
        let t0 = std::time::Instant::now();
        // SAFETY: filled frames whose planes live as long as their handles.
        let ret = unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) };
        let waited = t0.elapsed();
        if let Some(s) = signaller {
            s.join().unwrap();
        }
        if ret < 0 {
            failed = Some((last_error(f), waited));
            break;
        }
    }
    // What the glue's uninit does: the summary (which writes the log), then free.
    // SAFETY: a live filter.
    let summary = unsafe { vmafx_filter_summary(f) };
    let summary_error = summary.is_null().then(|| last_error(f));
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "every frame handed over was released");
    assert_eq!(failed.is_some(), summary_error.is_some(), "{failed:?} / {summary_error:?}");
    failed.zip(summary_error).map(|((e, waited), s)| (e, waited, s))
}

/// A fence that fails mid-run, through the filter's C interface: the push
/// fails as soon as it does, naming the frame, the fence and EIO; the log
/// uninit writes holds the frames before it, marked incomplete, equal to a
/// run on those frames alone.
#[test]
fn vm_filter_failed_fence_keeps_the_frames_scored() {
    if !in_vm_with_test_fences() {
        return;
    }
    let frames = synth::clip(Chroma::Yuv420, 8, 48, 40, 6, 23);
    let kept = 4;
    let dir = std::env::temp_dir();
    let (clean_log, cut_log) = (dir.join("vmafx-fence-clean.json"), dir.join("vmafx-fence-cut.json"));
    assert!(filter_run_with_failed_fence(&frames[..kept], &clean_log, None).is_none());
    let (push_error, waited, summary_error) = filter_run_with_failed_fence(&frames, &cut_log, Some(kept)).expect("the failed fence was not refused");
    eprintln!("failed fence through the filter after {waited:?}: {push_error}");
    for word in ["main frame 4", "implicit write fence of object 0", "signalled an error", "EIO"] {
        assert!(push_error.contains(word), "no {word:?} in: {push_error}");
    }
    assert!(waited < Duration::from_secs(15) * time_scale(), "the push waited {waited:?}: not ended by the failure");
    assert!(summary_error.contains("incomplete"), "{summary_error}");
    let (cut, clean) = (partial_log::read_json(&cut_log), partial_log::read_json(&clean_log));
    let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("no incomplete mark in {cut}"));
    assert!(why.contains("main frame 4") && why.contains("EIO"), "incomplete = {why:?}");
    assert!(clean.get("incomplete").is_none(), "{clean}");
    assert_eq!(partial_log::frames_by_number(&cut).len(), kept, "{cut}");
    assert_eq!(cut["frames"], clean["frames"], "the frames kept differ from a run on them alone");
    assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "pooled values differ");
}

/// The process's resident set (KiB), open fds, dma-buf mappings and all
/// mappings. Only the dma-buf ones are a fixed count: malloc's arenas grow
/// and shrink by changing the protection of parts of a reserved region,
/// which splits and merges mappings.
fn process_footprint() -> (u64, usize, usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let rss = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap();
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let dma_buf = maps.lines().filter(|l| l.contains("dmabuf") || l.contains("/dev/dri")).count();
    (rss, fds, dma_buf, maps.lines().count())
}

/// Pops every output frame `f` has ready, as [`finish_and_pop`] does.
fn pop_ready(f: *mut vmafx::internals::avfilter::ffi::VmafxFilter, into: &mut std::collections::VecDeque<Vec<(String, u64)>>) {
    loop {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live filter, a writable pointer.
        let n = unsafe { vmafx::internals::avfilter::ffi::vmafx_filter_pop(f, &mut out) };
        assert!(n >= 0, "{}", last_error(f));
        if n == 0 {
            return;
        }
        // SAFETY: the HostFrame handed over as output, ours again.
        let of = unsafe { Box::from_raw(out as *mut HostFrame) };
        of.live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        into.push_back(of.meta.lock().unwrap().iter().map(|(k, v)| (k.clone(), v.parse::<f64>().unwrap().to_bits())).collect());
    }
}

/// The long DRM_PRIME run of issue 17 (`scripts/soak drm [FRAMES]` boots the
/// VM and runs it; not part of the test command): FRAMES nv12 frame pairs
/// (VAAPI's R8 + GR88 layout) from two pools of 8 vgem surfaces reused as a
/// decoder reuses its surfaces (a surface is rewritten only after vmafx
/// released the frame on it), every 50th under a write fence signalled 2 ms
/// later, through the filter's C interface with n_threads=2. Beside it the
/// same pictures as yuv420p software frames through a second filter: every output's
/// values must equal it as bits. Every 500 frames, once every pair pushed is
/// scored and the DRM_PRIME frames vmafx still holds (those motion keeps)
/// settle, the process's fds, dma-buf mappings and RSS are sampled. How many
/// frames are still held then varies with the workers' timing (each holds
/// fds and, while read, a mapping), so after the warm-up (10%, at least
/// 1,000 frames) the fds and mappings must stay within what frames in
/// flight explain and the later half of the run must not reach above the
/// earlier half; the RSS must stay within 1 MiB.
#[test]
#[ignore = "a long run: scripts/soak drm (boots the dmabuf VM)"]
fn soak_drm_prime() {
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use vmafx::internals::avfilter::ffi::*;
    assert!(in_vm(), "run it through scripts/soak drm: it needs the dmabuf VM");
    let frames: usize = std::env::var("VMAFX_DRM_SOAK_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let warmup = (frames / 10).max(1000).min(frames / 2);
    const POOL: usize = 8;
    const EVERY: usize = 500;
    let (w, h) = (160, 90);
    let clip = synth::clip(Chroma::Yuv420, 8, w, h, 16, 17);
    let vgem = Vgem::open();
    let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // DRM_PRIME input frames vmafx holds: each holds an fd (and, while
    // read, a mapping), so the footprint is sampled when none is held.
    let drm_live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut pools: Vec<Vec<Buffer>> = (0..2).map(|_| (0..POOL).map(|_| Buffer::vgem(&vgem, drm_len(w, h, "nv12"))).collect()).collect();
    let free: Vec<Arc<Mutex<Vec<usize>>>> = (0..2).map(|_| Arc::new(Mutex::new((0..POOL).collect()))).collect();
    let (drm, soft) = (new_filter(2_000_000), new_filter(2_000_000));
    for (f, sw) in [(drm, c"nv12"), (soft, c"yuv420p")] {
        // SAFETY: live filters, NUL-terminated names.
        assert_eq!(unsafe { vmafx_filter_configure(f, w as i32, h as i32, sw.as_ptr(), w as i32, h as i32, sw.as_ptr()) }, 0, "{}", last_error(f));
    }
    let (mut got, mut want) = (VecDeque::new(), VecDeque::new());
    let (mut compared, mut samples) = (0usize, Vec::new());
    let t0 = std::time::Instant::now();
    for i in 0..frames {
        let (r, d) = &clip[i % clip.len()];
        let mut handles = [std::ptr::null_mut(); 2];
        let mut signallers = Vec::new();
        for (k, pic) in [d, r].into_iter().enumerate() {
            // A free surface, or wait for vmafx to release one.
            let waiting = std::time::Instant::now();
            let slot = loop {
                if let Some(s) = free[k].lock().unwrap().pop() {
                    break s;
                }
                assert!(waiting.elapsed() < Duration::from_secs(20), "frame {i}: vmafx holds all {POOL} surfaces");
                pop_ready(drm, &mut got);
                std::thread::sleep(Duration::from_micros(200));
            };
            let buf = &mut pools[k][slot];
            let (desc, fd) = fill_drm(buf, pic, "nv12");
            if i % 50 == 0 {
                signallers.push(buf.attach_fence().signal_later(Duration::from_millis(2)));
            }
            let back = free[k].clone();
            handles[k] = host_frame_with(&drm_live, None, Some((desc, fd)), Some(Box::new(move || back.lock().unwrap().push(slot))));
        }
        let out = host_frame(&live, None, None);
        let (mf, rf) = (vmafx_frame(handles[0], w, h, c"nv12"), vmafx_frame(handles[1], w, h, c"nv12"));
        // SAFETY: filled frames whose descriptors live as long as their handles.
        assert_eq!(unsafe { vmafx_filter_push(drm, &mf, &rf, out as *mut _) }, 0, "frame {i}: {}", last_error(drm));
        let (sm, sr, so) = (host_frame(&live, Some(d.clone()), None), host_frame(&live, Some(r.clone()), None), host_frame(&live, None, None));
        let (mf, rf) = (vmafx_frame(sm, w, h, c"yuv420p"), vmafx_frame(sr, w, h, c"yuv420p"));
        // SAFETY: as above, software planes.
        assert_eq!(unsafe { vmafx_filter_push(soft, &mf, &rf, so as *mut _) }, 0, "frame {i}: {}", last_error(soft));
        for s in signallers {
            s.join().unwrap();
        }
        pop_ready(drm, &mut got);
        pop_ready(soft, &mut want);
        while !got.is_empty() && !want.is_empty() {
            assert_eq!(got.pop_front(), want.pop_front(), "frame {compared}: DRM_PRIME differs from software (bits)");
            compared += 1;
        }
        if (i + 1) % EVERY == 0 {
            // Quiescent: every pushed pair scored and the DRM_PRIME frames
            // vmafx still holds (what motion keeps of earlier frames) settled.
            let waiting = std::time::Instant::now();
            let mut held = usize::MAX;
            // SAFETY: a live filter.
            while unsafe { vmafx_filter_frames_scored(drm) } < (i + 1) as u64 || drm_live.load(std::sync::atomic::Ordering::SeqCst) != held {
                assert!(waiting.elapsed() < Duration::from_secs(20), "frame {i}: scoring never settled");
                held = drm_live.load(std::sync::atomic::Ordering::SeqCst);
                pop_ready(drm, &mut got);
                std::thread::sleep(Duration::from_millis(5));
            }
            let (rss, fds, dma_buf, maps) = process_footprint();
            eprintln!("soak-drm: frame {:>6}  rss {rss} KiB  fds {fds}  dma-buf mappings {dma_buf}  (all mappings {maps})  DRM_PRIME frames held {held}  ({:.1} s)", i + 1, t0.elapsed().as_secs_f64());
            samples.push((i + 1, rss, fds, dma_buf, held));
        }
    }
    let rest_got = finish_and_pop(drm, frames);
    let rest_want = finish_and_pop(soft, frames);
    got.extend(rest_got);
    want.extend(rest_want);
    assert_eq!(got.len(), want.len());
    compared += got.len();
    assert_eq!(got, want, "the last frames: DRM_PRIME differs from software (bits)");
    assert_eq!(compared, frames, "every frame scored and compared");
    // SAFETY: live filters, freed once.
    unsafe {
        assert_eq!(vmafx_filter_frames_scored(drm), frames as u64);
        vmafx_filter_free(drm);
        vmafx_filter_free(soft);
    }
    assert_eq!(live.load(std::sync::atomic::Ordering::SeqCst), 0, "every frame handed over was released");
    assert_eq!(drm_live.load(std::sync::atomic::Ordering::SeqCst), 0, "every DRM_PRIME frame handed over was released");
    let steady: Vec<_> = samples.iter().filter(|s| s.0 > warmup).collect();
    assert!(steady.len() >= 2, "too few samples after the warm-up of {warmup} frames");
    let (rss_min, rss_max) = (steady.iter().map(|s| s.1).min().unwrap(), steady.iter().map(|s| s.1).max().unwrap());
    let (fds, maps): (Vec<_>, Vec<_>) = steady.iter().map(|s| (s.2, s.3)).unzip();
    eprintln!(
        "soak-drm: {frames} frames in {:.1} s; after frame {warmup}: rss {rss_min}..{rss_max} KiB (drift {} KiB), fds {:?}, dma-buf mappings {:?}",
        t0.elapsed().as_secs_f64(),
        rss_max - rss_min,
        (fds.iter().min().unwrap(), fds.iter().max().unwrap()),
        (maps.iter().min().unwrap(), maps.iter().max().unwrap())
    );
    // Flat: bounded by what a filter holds in flight, and no later half
    // above the earlier one (a leak of even one fd or mapping per thousand
    // frames would put it there).
    let half = steady.len() / 2;
    for (what, v) in [("open fds", &fds), ("dma-buf mappings", &maps)] {
        let (early, late) = (v[..half].iter().max().unwrap(), v[half..].iter().max().unwrap());
        assert!(late <= early, "{what} grew after the warm-up: {v:?}");
        assert!(v.iter().max().unwrap() - v.iter().min().unwrap() <= 4 * POOL, "{what} spread beyond the frames in flight: {v:?}");
    }
    assert!(maps.iter().min().unwrap() >= &(2 * POOL), "the pools' own mappings are not seen: {maps:?}");
    assert!(rss_max - rss_min <= 1024, "RSS drifted {} KiB after the warm-up", rss_max - rss_min);
}

/// Boots the VM with this test binary (its `vm_*` tests); outside the VM
/// this is the test that stands for them.
#[test]
fn runs_the_dmabuf_tests_in_a_vm() {
    vm_bed::run_in_vm(vm_bed::VmRun { filter: &rerun::filter(module_path!(), "vm_"), threads: 2, expected: 11, env: vec![] });
}

// Unused-import guard for AsFd on some toolchains.
#[allow(dead_code)]
fn _uses(fd: &OwnedFd) -> i32 {
    fd.as_fd().as_raw_fd()
}
