//! The import layer on host memory (runs anywhere; the dma-buf path is
//! tested on real dma-bufs in tests/import/dmabuf_vm.rs): layouts read in place or
//! copied as documented, pictures equal to the software ones sample for
//! sample, host fences, refusals.

use crate::support::synth;

use std::sync::Arc;
use std::time::Duration;

use vmafx::{Chroma, FrameDescriptor, HostImporter, OwnedPicture, Picture};
use vmafx::internals::import::{AcquireFence, DrmFourcc, DrmModifier, HostFence, ImportErrorKind, Layer, Memory, Object, PlaneRef};

/// Lays `pic` out as `format` in one host object (Y at 0, chroma after),
/// 16-bit samples little-endian and MSB-aligned (`shift`).
fn host_descriptor(pic: &OwnedPicture, format: DrmFourcc, bits: u8, shift: u32) -> FrameDescriptor {
    let (w, h) = (pic.width(), pic.height());
    let v = pic.view();
    let bps = if bits > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let ypitch = w * bps + 6;
    let planar = format == DrmFourcc::Yuv420;
    let cpitch = if planar { cw * bps + 10 } else { 2 * cw * bps + 10 };
    let offs = [0, ypitch * h, ypitch * h + cpitch * ch];
    let len = offs[2] + if planar { cpitch * ch } else { 0 };
    let mut bytes = vec![0u8; len];
    let mut put = |off: usize, val: u32| {
        if bps == 1 {
            bytes[off] = val as u8;
        } else {
            bytes[off..off + 2].copy_from_slice(&((val << shift) as u16).to_le_bytes());
        }
    };
    for y in 0..h {
        for x in 0..w {
            put(y * ypitch + x * bps, v.luma().sample(x, y));
        }
    }
    for y in 0..ch {
        for x in 0..cw {
            let (u, vv) = (v.plane(1).sample(x, y), v.plane(2).sample(x, y));
            if planar {
                put(offs[1] + y * cpitch + x * bps, u);
                put(offs[2] + y * cpitch + x * bps, vv);
            } else {
                put(offs[1] + y * cpitch + 2 * x * bps, u);
                put(offs[1] + y * cpitch + (2 * x + 1) * bps, vv);
            }
        }
    }
    let mut d = FrameDescriptor::new("host frame", w, h, bits);
    d.objects.push(Object { memory: Memory::Host(Arc::from(bytes)), size: len as u64, modifier: DrmModifier::Linear });
    let n = if planar { 3 } else { 2 };
    let pitches = [ypitch, cpitch, cpitch];
    d.layers.push(Layer {
        format,
        planes: (0..n).map(|i| PlaneRef { object: 0, offset: offs[i] as u64, pitch: pitches[i] as u64 }).collect(),
    });
    d
}

fn assert_planes_equal(got: &Picture<'_>, want: &Picture<'_>, planes: usize) {
    assert_eq!(got.plane_count(), planes);
    for i in 0..planes {
        let (g, w) = (got.plane(i), want.plane(i));
        assert_eq!((g.width(), g.height()), (w.width(), w.height()), "plane {i} size");
        for y in 0..g.height() {
            for x in 0..g.width() {
                assert_eq!(g.sample(x, y), w.sample(x, y), "plane {i} at ({x},{y})");
            }
        }
    }
}

#[test]
fn planar_yuv420_is_read_in_place() {
    let (_, d) = synth::clip(Chroma::Yuv420, 8, 37, 23, 1, 3).remove(0);
    let device = HostImporter::new(true);
    let frame = device.import(host_descriptor(&d, DrmFourcc::Yuv420, 8, 0)).unwrap();
    assert_planes_equal(&frame.picture(), &d.view(), 3);
    assert_eq!(device.stats().host_copies(), 0);
}

#[test]
fn nv12_luma_in_place_chroma_deinterleaved_on_request() {
    let (_, d) = synth::clip(Chroma::Yuv420, 8, 37, 23, 1, 4).remove(0);
    let luma_only = HostImporter::new(false);
    let f = luma_only.import(host_descriptor(&d, DrmFourcc::Nv12, 8, 0)).unwrap();
    assert_eq!(f.picture().format().chroma, Chroma::Yuv400);
    assert_planes_equal(&f.picture(), &d.view(), 1);
    assert_eq!(luma_only.stats().host_copies(), 0);
    let chroma = HostImporter::new(true);
    let f = chroma.import(host_descriptor(&d, DrmFourcc::Nv12, 8, 0)).unwrap();
    assert_planes_equal(&f.picture(), &d.view(), 3);
    assert_eq!(chroma.stats().host_copies(), 2);
}

#[test]
fn p010_and_p016_read_as_their_depths() {
    let (_, d10) = synth::clip(Chroma::Yuv420, 10, 33, 17, 1, 5).remove(0);
    let device = HostImporter::new(true);
    let f = device.import(host_descriptor(&d10, DrmFourcc::P010, 10, 6)).unwrap();
    assert_eq!(f.picture().bits(), 10);
    assert_planes_equal(&f.picture(), &d10.view(), 3);
    assert_eq!(device.stats().host_copies(), 3, "luma shifted, U and V deinterleaved");
    let (_, d16) = synth::clip(Chroma::Yuv420, 16, 33, 17, 1, 6).remove(0);
    let device = HostImporter::new(false);
    let f = device.import(host_descriptor(&d16, DrmFourcc::P016, 16, 0)).unwrap();
    assert_planes_equal(&f.picture(), &d16.view(), 1);
    assert_eq!(device.stats().host_copies(), 0, "P016 luma is read in place");
}

#[test]
fn host_fence_busy_then_imported() {
    let (_, d) = synth::clip(Chroma::Yuv420, 8, 16, 8, 1, 7).remove(0);
    let device = HostImporter::new(false);
    let fence = HostFence::new();
    let mut desc = host_descriptor(&d, DrmFourcc::Yuv420, 8, 0);
    desc.acquire.push(AcquireFence::Host(fence.clone()));
    let r = device.import(desc).unwrap_err();
    assert_eq!(r.error.kind, ImportErrorKind::Busy);
    assert!(r.error.message.contains("host frame: acquire fence 0 (host fence)"), "{}", r.error);
    let r = device.wait_and_import(*r.descriptor, Duration::from_millis(50)).unwrap_err();
    assert!(r.error.message.starts_with("gave up after 50ms"), "{}", r.error);
    let f2 = fence.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        f2.signal();
    });
    device.wait_and_import(*r.descriptor, Duration::from_secs(10)).expect("signalled");
    t.join().unwrap();
}

#[test]
fn refusals_on_the_cpu_device() {
    let (_, d) = synth::clip(Chroma::Yuv420, 8, 16, 8, 1, 8).remove(0);
    let device = HostImporter::new(false);
    let refuse = |f: &dyn Fn(&mut FrameDescriptor), kind: ImportErrorKind, word: &str| {
        let mut desc = host_descriptor(&d, DrmFourcc::Yuv420, 8, 0);
        f(&mut desc);
        let r = device.import(desc).unwrap_err();
        assert_eq!(r.error.kind, kind, "{}", r.error);
        assert!(r.error.message.contains(word), "'{}' lacks '{word}'", r.error);
        let e: vmafx::Error = r.into();
        assert!(e.to_string().contains(word));
    };
    refuse(&|d| d.objects[0].modifier = DrmModifier::I915_y_tiled, ImportErrorKind::NotSupported, "I915_y_tiled");
    refuse(&|d| d.objects[0].memory = Memory::DevicePointer(0x1000), ImportErrorKind::NotSupported, "DevicePointer");
    refuse(&|d| d.acquire.push(AcquireFence::DeviceEvent(5)), ImportErrorKind::NotSupported, "device event 0x5");
    refuse(&|d| d.acquire.push(AcquireFence::GlSync(9)), ImportErrorKind::NotSupported, "GL sync 0x9");
    refuse(&|d| d.layers[0].planes[0].pitch = 3, ImportErrorKind::Invalid, "shorter than a row");
    refuse(&|d| d.layers[0].planes[1].offset = u64::MAX - 4, ImportErrorKind::Range, "overflow");
    refuse(&|d| d.bits = 10, ImportErrorKind::Invalid, "bit depth 10");
    refuse(&|d| d.layers[0].planes.pop().map(|_| ()).unwrap_or(()), ImportErrorKind::Invalid, "has 2 planes");
    refuse(&|d| d.layers[0].format = DrmFourcc::Rg1616, ImportErrorKind::NotSupported, "RG32");
}

/// The mirror of FFmpeg's AVDRMFrameDescriptor has its C layout (x86_64:
/// sizeof 528, nb_layers at 104, layers at 112, as gcc gives for
/// libavutil/hwcontext_drm.h of FFmpeg 7.1 and 9.0).
#[test]
fn av_drm_descriptor_layout_and_conversion() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use vmafx::AvDrmFrameDescriptor;
    use vmafx::internals::import::drm::{AvDrmLayerDescriptor, AvDrmObjectDescriptor, AvDrmPlaneDescriptor};
    assert_eq!(std::mem::size_of::<AvDrmFrameDescriptor>(), 528);
    assert_eq!(std::mem::offset_of!(AvDrmFrameDescriptor, nb_layers), 104);
    assert_eq!(std::mem::offset_of!(AvDrmFrameDescriptor, layers), 112);
    // SAFETY: a memfd for the test, owned here.
    let memfd = unsafe { OwnedFd::from_raw_fd(nix::libc::memfd_create(c"t".as_ptr(), 0)) };
    let mut av = AvDrmFrameDescriptor { nb_objects: 1, nb_layers: 2, ..Default::default() };
    av.objects[0] = AvDrmObjectDescriptor { fd: memfd.as_raw_fd(), size: 4096, format_modifier: 0 };
    av.layers[0] = AvDrmLayerDescriptor { format: DrmFourcc::R8 as u32, nb_planes: 1, ..Default::default() };
    av.layers[0].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: 0, pitch: 64 };
    av.layers[1] = AvDrmLayerDescriptor { format: DrmFourcc::Gr88 as u32, nb_planes: 1, ..Default::default() };
    av.layers[1].planes[0] = AvDrmPlaneDescriptor { object_index: 0, offset: 2048, pitch: 64 };
    let d = FrameDescriptor::from_av_drm(&av, "main frame 0", 64, 32, 8).unwrap();
    assert_eq!(d.layers.len(), 2);
    assert_eq!(d.layers[1].planes[0], PlaneRef { object: 0, offset: 2048, pitch: 64 });
    assert_eq!(d.objects[0].modifier, DrmModifier::Linear);
    match &d.objects[0].memory {
        Memory::DmaBuf(fd) => assert_ne!(fd.as_raw_fd(), memfd.as_raw_fd(), "the fd is duplicated"),
        other => panic!("{other:?}"),
    }
    assert!(d.implicit_sync);
    let refused = |av: &AvDrmFrameDescriptor, kind: ImportErrorKind, word: &str| {
        let e = FrameDescriptor::from_av_drm(av, "main frame 1", 64, 32, 8).unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.message.contains(word), "'{e}' lacks '{word}'");
    };
    let mut bad = av;
    bad.objects[0].fd = 900_001;
    refused(&bad, ImportErrorKind::Invalid, "fd 900001 cannot be duplicated");
    let mut bad = av;
    bad.layers[1].planes[0].object_index = 1;
    refused(&bad, ImportErrorKind::Invalid, "names object 1 of 1");
    let mut bad = av;
    bad.layers[0].planes[0].pitch = -64;
    refused(&bad, ImportErrorKind::NotSupported, "negative pitches");
    let mut bad = av;
    bad.nb_layers = 5;
    refused(&bad, ImportErrorKind::Invalid, "5 layers");
    let mut bad = av;
    bad.layers[0].format = u32::from_le_bytes(*b"ZZZZ");
    refused(&bad, ImportErrorKind::NotSupported, "ZZZZ");
}
