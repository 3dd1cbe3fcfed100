//! The filter's C interface (include/vmafx.h) driven as FFmpeg's glue
//! drives it, for the dma-buf tests (tests/import/dmabuf_vm.rs on the CPU,
//! tests/import/dmabuf_hip.rs with `device=hip`): host frames standing in for
//! AVFrames, software or DRM_PRIME, and a filter made with given options.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use nix::libc;
use vmafx::OwnedPicture;

/// A filter with `model` (and no feature), `n_threads`, `fence_timeout_us`
/// and `device` (None: unset); Err carries vmafx_filter_new's message.
pub fn new_filter(model: &std::ffi::CStr, n_threads: i32, fence_timeout_us: i64, device: Option<&std::ffi::CStr>) -> Result<*mut vmafx::internals::avfilter::ffi::VmafxFilter, String> {
    new_filter_logging(model, n_threads, fence_timeout_us, device, None)
}

/// [`new_filter`] writing its log: `log` is (log_path, log_fmt).
pub fn new_filter_logging(
    model: &std::ffi::CStr,
    n_threads: i32,
    fence_timeout_us: i64,
    device: Option<&std::ffi::CStr>,
    log: Option<(&std::ffi::CStr, &std::ffi::CStr)>,
) -> Result<*mut vmafx::internals::avfilter::ffi::VmafxFilter, String> {
    use vmafx::internals::avfilter::ffi::*;
    let opts = VmafxFilterOptions {
        model: model.as_ptr(),
        feature: std::ptr::null(),
        log_path: log.map_or(std::ptr::null(), |(path, _)| path.as_ptr()),
        log_fmt: log.map_or(std::ptr::null(), |(_, fmt)| fmt.as_ptr()),
        pool: std::ptr::null(),
        n_threads,
        n_subsample: 1,
        fence_timeout_us,
        device: device.map_or(std::ptr::null(), |d| d.as_ptr()),
    };
    let host = VmafxHost { frame_free: Some(host_free), frame_set_metadata: Some(host_set_metadata) };
    let mut err = [0 as libc::c_char; 1024];
    // SAFETY: valid options, host and error buffer.
    let f = unsafe { vmafx_filter_new(&opts, &host, err.as_mut_ptr(), err.len()) };
    if f.is_null() {
        // SAFETY: vmafx_filter_new NUL-terminates its message.
        return Err(unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }.to_string_lossy().into_owned());
    }
    Ok(f)
}

/// A host frame as the FFmpeg glue would hand it over (an AVFrame stand-in):
/// a software picture, or a DRM descriptor whose fd it owns; output frames
/// collect their metadata. `live` counts frames not yet released.
pub struct HostFrame {
    pub pic: Option<OwnedPicture>,
    pub drm: Option<(Box<vmafx::AvDrmFrameDescriptor>, OwnedFd)>,
    pub meta: std::sync::Mutex<Vec<(String, String)>>,
    pub live: Arc<std::sync::atomic::AtomicUsize>,
    /// Run when vmafx releases the frame (a decoder reusing the surface).
    pub on_free: Option<Box<dyn FnOnce() + Send>>,
}

pub unsafe extern "C" fn host_free(p: *mut std::ffi::c_void) {
    // SAFETY: every handle given to vmafx is a Box<HostFrame>, released once.
    let mut f = unsafe { Box::from_raw(p as *mut HostFrame) };
    if let Some(reuse) = f.on_free.take() {
        reuse();
    }
    f.live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
}

pub unsafe extern "C" fn host_set_metadata(p: *mut std::ffi::c_void, k: *const libc::c_char, v: *const libc::c_char) -> i32 {
    // SAFETY: a live HostFrame; NUL-terminated strings (vmafx.h).
    let (f, k, v) = unsafe { (&*(p as *const HostFrame), std::ffi::CStr::from_ptr(k), std::ffi::CStr::from_ptr(v)) };
    f.meta.lock().unwrap().push((k.to_string_lossy().into(), v.to_string_lossy().into()));
    0
}

pub fn host_frame(live: &Arc<std::sync::atomic::AtomicUsize>, pic: Option<OwnedPicture>, drm: Option<(Box<vmafx::AvDrmFrameDescriptor>, OwnedFd)>) -> *mut HostFrame {
    host_frame_with(live, pic, drm, None)
}

/// [`host_frame`] with `on_free` run when vmafx releases it.
pub fn host_frame_with(
    live: &Arc<std::sync::atomic::AtomicUsize>,
    pic: Option<OwnedPicture>,
    drm: Option<(Box<vmafx::AvDrmFrameDescriptor>, OwnedFd)>,
    on_free: Option<Box<dyn FnOnce() + Send>>,
) -> *mut HostFrame {
    live.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Box::into_raw(Box::new(HostFrame { pic, drm, meta: Default::default(), live: live.clone(), on_free }))
}

/// The VmafxFrame the glue fills for `f` (software planes, or drm_prime
/// with the descriptor in data[0] and the sw_format).
pub fn vmafx_frame(f: *mut HostFrame, w: usize, h: usize, sw: &std::ffi::CStr) -> vmafx::internals::avfilter::ffi::VmafxFrame {
    // SAFETY: a live HostFrame we just made.
    let hf = unsafe { &*f };
    let mut data = [std::ptr::null(); 4];
    let mut linesize = [0; 4];
    let pix_fmt = if let Some((desc, _)) = &hf.drm {
        data[0] = &**desc as *const _ as *const u8;
        c"drm_prime".as_ptr()
    } else {
        let v = hf.pic.as_ref().unwrap().view();
        for i in 0..v.plane_count() {
            data[i] = v.plane(i).data().as_ptr();
            linesize[i] = v.plane(i).stride() as i32;
        }
        sw.as_ptr()
    };
    vmafx::internals::avfilter::ffi::VmafxFrame {
        data,
        linesize,
        width: w as i32,
        height: h as i32,
        pix_fmt,
        handle: f as *mut _,
        sw_format: sw.as_ptr(),
        hw_context: std::ptr::null_mut(),
    }
}

pub fn last_error(f: *mut vmafx::internals::avfilter::ffi::VmafxFilter) -> String {
    // SAFETY: a live filter.
    unsafe { std::ffi::CStr::from_ptr(vmafx::internals::avfilter::ffi::vmafx_filter_last_error(f)) }.to_string_lossy().into()
}


/// Ends the stream (`reference_frames` = the pairs pushed) and pops every
/// output frame: each one's `lavfi.vmafx.*` metadata as f64 bits.
pub fn finish_and_pop(f: *mut vmafx::internals::avfilter::ffi::VmafxFilter, frames: usize) -> Vec<Vec<(String, u64)>> {
    use vmafx::internals::avfilter::ffi::*;
    // SAFETY: a live filter.
    assert_eq!(unsafe { vmafx_filter_finish(f, frames as i64, 0) }, 0, "{}", last_error(f));
    let mut outputs = Vec::new();
    loop {
        let mut out = std::ptr::null_mut();
        // SAFETY: a live filter, a writable pointer.
        let n = unsafe { vmafx_filter_pop(f, &mut out) };
        assert!(n >= 0, "{}", last_error(f));
        if n == 0 {
            break;
        }
        // SAFETY: the HostFrame handed over as output, now ours again.
        let of = unsafe { Box::from_raw(out as *mut HostFrame) };
        of.live.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        let meta = of.meta.lock().unwrap().iter().map(|(k, v)| (k.clone(), v.parse::<f64>().unwrap().to_bits())).collect();
        outputs.push(meta);
    }
    outputs
}
