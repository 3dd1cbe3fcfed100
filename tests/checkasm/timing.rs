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

/// What a timed libvmaf extractor is fed, frame after frame.
#[derive(Clone, Copy, PartialEq)]
pub enum Feed {
    /// The same reference and distorted picture every frame (VIF, ADM).
    SamePair,
    /// References alternating between the two pictures, so a temporal
    /// extractor (motion) sees the pair's difference every frame, as our
    /// kernel is timed on: fed one reference throughout, libvmaf's motion
    /// finds every row of the difference zero and skips its horizontal pass.
    AlternatingReference,
}

/// One libvmaf extractor fed frame by frame, so its frames can be timed
/// between other variants' (a host with two speed modes then slows all of
/// them alike). Holds libvmaf's lock for its life: one run at a time.
struct LibvmafRun {
    ctx: *mut vmaf_head_sys::VmafContext,
    pictures: std::vec::IntoIter<(vmaf_head_sys::VmafPicture, vmaf_head_sys::VmafPicture)>,
    index: u32,
    _libvmaf: std::sync::MutexGuard<'static, ()>,
}

impl LibvmafRun {
    /// Allocates `reps` frames' pictures and extracts a first, untimed frame.
    fn new(
        feature: &str,
        path: support::reference::LibvmafPath,
        frame: &(OwnedPicture, OwnedPicture),
        feed: Feed,
        reps: u32,
    ) -> LibvmafRun {
        use support::reference::to_vmaf_picture;
        let libvmaf = support::reference::libvmaf_lock();
        let mut ctx = std::ptr::null_mut();
        let name = std::ffi::CString::new(feature).unwrap();
        // SAFETY: libvmaf's C API as its header documents it, under the lock
        // that keeps one libvmaf run at a time; both return codes checked.
        unsafe {
            assert_eq!(vmaf_head_sys::vmaf_init(&mut ctx, support::reference::config(0, 1, path)), 0);
            assert_eq!(vmaf_head_sys::vmaf_use_feature(ctx, name.as_ptr(), std::ptr::null_mut()), 0);
        }
        let pictures: Vec<_> = (0..=reps)
            .map(|i| {
                if feed == Feed::AlternatingReference && i % 2 == 1 {
                    (to_vmaf_picture(&frame.1), to_vmaf_picture(&frame.0))
                } else {
                    (to_vmaf_picture(&frame.0), to_vmaf_picture(&frame.1))
                }
            })
            .collect();
        let mut run = LibvmafRun { ctx, pictures: pictures.into_iter(), index: 0, _libvmaf: libvmaf };
        run.time_frame();
        run
    }

    /// Extracts the next frame; its thread CPU time in ms.
    fn time_frame(&mut self) -> f64 {
        let (mut r, mut d) = self.pictures.next().expect("more frames timed than allocated");
        let t = thread_cpu_ms();
        // SAFETY: ctx is live until drop; the pictures were allocated by
        // vmaf_picture_alloc and are handed over. n_threads = 0: libvmaf
        // extracts inside this call, on this thread.
        assert_eq!(unsafe { vmaf_head_sys::vmaf_read_pictures(self.ctx, &mut r, &mut d, self.index) }, 0);
        self.index += 1;
        thread_cpu_ms() - t
    }
}

impl Drop for LibvmafRun {
    fn drop(&mut self) {
        // SAFETY: ctx came from vmaf_init and is closed once, after the
        // flush; pictures never handed over are released first.
        unsafe {
            for (mut r, mut d) in self.pictures.by_ref() {
                vmaf_head_sys::vmaf_picture_unref(&mut r);
                vmaf_head_sys::vmaf_picture_unref(&mut d);
            }
            vmaf_head_sys::vmaf_read_pictures(self.ctx, std::ptr::null_mut(), std::ptr::null_mut(), 0);
            vmaf_head_sys::vmaf_close(self.ctx);
        }
    }
}

/// One of our variants in [`interleaved`]: its label and a closure that
/// scores one frame and returns its thread CPU time (ms).
pub type Variant<'a> = (String, Box<dyn FnMut() -> f64 + 'a>);

/// Our `variants` and libvmaf's `feature` on every path this host runs,
/// frame by frame in turn, so a host whose speed swings between modes slows
/// all of them alike (timed in consecutive blocks, the medians would compare
/// the modes, not the code). libvmaf's paths take turns with ours one at a
/// time (one libvmaf context at a time), so ours run `reps` frames per path.
/// Returns "LABEL MS; ..." of the medians, ours first.
pub fn interleaved(
    feature: &str,
    frame: &(OwnedPicture, OwnedPicture),
    feed: Feed,
    reps: u32,
    mut variants: Vec<Variant<'_>>,
) -> String {
    let mut ours: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    let mut theirs = Vec::new();
    for path in support::reference::LibvmafPath::ALL.into_iter().filter(|p| p.runs_here()) {
        let mut run = LibvmafRun::new(feature, path, frame, feed, reps);
        let mut times = Vec::new();
        for _ in 0..reps {
            for ((_, time_one), t) in variants.iter_mut().zip(ours.iter_mut()) {
                t.push(time_one());
            }
            times.push(run.time_frame());
        }
        theirs.push((path.name(), median(times)));
    }
    let mut line = String::new();
    for ((label, _), times) in variants.iter().zip(ours) {
        line += &format!(" {label} {:.2};", median(times));
    }
    for (name, ms) in theirs {
        line += &format!(" libvmaf {name} {ms:.2};");
    }
    line
}
