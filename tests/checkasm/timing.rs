//! Timing helpers for the ignored `*_timing` and `*_profile` tests: ours and
//! libvmaf's kernels on the same 1080p frames, as thread CPU time (these are
//! benchmarks run by hand, never timed assertions).

use crate::support;
use vmafx::{Chroma, OwnedPicture, PixelFormat};

/// A 1920x1080 4:2:0 reference and its distorted twin.
pub fn hd_frame(bits: u8) -> (OwnedPicture, OwnedPicture) {
    let fmt = PixelFormat::new(Chroma::Yuv420, bits).unwrap();
    let r = support::synth::reference_frame(fmt, 1920, 1080, 3, 7);
    let d = support::synth::distort(&r, 3, 8);
    (r, d)
}

/// CPU time of this thread, in ms: other processes sharing the machine do
/// not inflate it (wall time here is at the mercy of the load).
pub fn thread_cpu_ms() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: plain libc call writing into `ts`.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.sec as f64 * 1e3 + ts.nsec as f64 * 1e-6
}

/// Median of per-frame thread CPU times.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// libvmaf's feature extractor `feature` ("vif", "motion", ...) per
/// frame (ms) on `path`, extracting on this thread.
pub fn time_libvmaf(
    feature: &str,
    path: support::reference::LibvmafPath,
    frame: &(OwnedPicture, OwnedPicture),
    reps: u32,
) -> f64 {
    use std::ffi::CString;
    use std::ptr;
    use vmaf_head_sys as sys;
    let _libvmaf = support::reference::libvmaf_lock();
    // SAFETY: libvmaf's C API as its header documents it, under the lock
    // that keeps one libvmaf run at a time: every return code is checked;
    // each VmafPicture is allocated 1920x1080 by vmaf_picture_alloc before
    // rows (1920 samples of the frame's depth, within its stride) are copied
    // in, and handed to vmaf_read_pictures, which takes ownership.
    unsafe {
        let mut ctx = ptr::null_mut();
        assert_eq!(sys::vmaf_init(&mut ctx, support::reference::config(0, 1, path)), 0);
        let name = CString::new(feature).unwrap();
        assert_eq!(sys::vmaf_use_feature(ctx, name.as_ptr(), ptr::null_mut()), 0);
        let f = frame.0.format();
        let pics: Vec<(sys::VmafPicture, sys::VmafPicture)> = (0..=reps)
            .map(|_| {
                let mk = |p: &OwnedPicture| {
                    let mut pic: sys::VmafPicture = std::mem::zeroed();
                    assert_eq!(
                        sys::vmaf_picture_alloc(
                            &mut pic,
                            sys::VmafPixelFormat_VMAF_PIX_FMT_YUV420P,
                            f.bits as u32,
                            1920,
                            1080
                        ),
                        0
                    );
                    let v = p.view().luma();
                    let bps = f.bytes_per_sample();
                    for y in 0..1080 {
                        let src = &v.data()[y * v.stride()..y * v.stride() + 1920 * bps];
                        ptr::copy_nonoverlapping(
                            src.as_ptr(),
                            (pic.data[0] as *mut u8).offset(y as isize * pic.stride[0]),
                            src.len(),
                        );
                    }
                    pic
                };
                (mk(&frame.0), mk(&frame.1))
            })
            .collect();
        let mut it = pics.into_iter();
        let (mut r, mut d) = it.next().unwrap();
        assert_eq!(sys::vmaf_read_pictures(ctx, &mut r, &mut d, 0), 0);
        let mut times = Vec::new();
        for (i, (mut r, mut d)) in it.enumerate() {
            // n_threads = 0: libvmaf extracts inside this call, on this thread.
            let t = thread_cpu_ms();
            assert_eq!(sys::vmaf_read_pictures(ctx, &mut r, &mut d, i as u32 + 1), 0);
            times.push(thread_cpu_ms() - t);
        }
        let ms = median(times);
        sys::vmaf_read_pictures(ctx, ptr::null_mut(), ptr::null_mut(), 0);
        sys::vmaf_close(ctx);
        ms
    }
}

