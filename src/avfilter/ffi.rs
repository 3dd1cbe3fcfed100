//! `extern "C"` entry points declared in `include/vmafx.h`.
//!
//! # Safety
//! The functions taking pointers are `unsafe`: callers pass what vmafx.h
//! documents (a handle from `vmafx_filter_new`, used by one thread at a
//! time; NUL-terminated strings; filled `VmafxFrame`s whose planes stay
//! valid while their handle lives).
//!
//! Each one
//! catches panics (none unwinds into C), turns errors into return codes,
//! and keeps the message for `vmafx_filter_last_error`. All state lives in
//! the handle: the ffmpeg program creates and drops instances freely.
//!
//! The item docs here are the C documentation: cbindgen writes them into
//! `include/vmafx.h` (cbindgen.toml; tests/api_surface.rs checks the
//! checked-in header is what it writes). Per-function safety notes are
//! plain comments so that they stay out of the header.
#![allow(
    clippy::missing_safety_doc,
    reason = "the module's # Safety section is every function's contract"
)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use super::cuda::CudaInput;
use super::hip::HipInput;
use super::frame::{FrameHandle, FrameMemory, RawPlanes, HOST_FORMATS};
use super::options::RawOptions;
use super::Filter;
use crate::Error;

/// The interface's version: raised when a function or field is added, so
/// that the glue can check it (`#if VMAFX_FILTER_API_VERSION < 6`).
pub const VMAFX_FILTER_API_VERSION: c_int = 6;

/// Return code: success.
pub const VMAFX_OK: c_int = 0;
/// Return code: bad option, bad input, mismatch.
pub const VMAFX_EINVAL: c_int = -1;
/// Return code: well-formed but not supported.
pub const VMAFX_ENOTSUP: c_int = -2;
/// Return code: scoring failed, panic caught, ...
pub const VMAFX_EINTERNAL: c_int = -3;

/// Callbacks into the host. Both may be called from vmafx worker threads:
/// they must be thread-safe (av_frame_free and av_dict_set on a frame
/// nobody else touches are).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VmafxHost {
    /// Releases a frame handle handed to vmafx (av_frame_free).
    pub frame_free: Option<unsafe extern "C" fn(frame: *mut c_void)>,
    /// Sets one metadata entry on an output frame (av_dict_set on
    /// frame->metadata). Returns 0 or a negative error. Called on the
    /// thread that calls vmafx_filter_pop.
    pub frame_set_metadata:
        Option<unsafe extern "C" fn(frame: *mut c_void, key: *const c_char, value: *const c_char) -> c_int>,
}

/// Option strings, with the syntax of FFmpeg's libvmaf filter. NULL means
/// unset (libvmaf's defaults). Copied by vmafx_filter_new.
#[repr(C)]
pub struct VmafxFilterOptions {
    /// "version=vmaf_v0.6.1|path=foo.json:name=bar"
    pub model: *const c_char,
    /// "name=psnr|name=motion:motion_force_zero=true"
    pub feature: *const c_char,
    pub log_path: *const c_char,
    /// xml (default), json, csv, sub
    pub log_fmt: *const c_char,
    /// mean (default), min, harmonic_mean
    pub pool: *const c_char,
    /// 0: score on the filter's thread
    pub n_threads: c_int,
    /// >= 1
    pub n_subsample: c_int,
    /// How long to wait for a DRM_PRIME frame's fences (its dma-bufs'
    /// implicit write fences), in microseconds; <= 0: 1 second. Past it the
    /// push fails naming the frame and the fence.
    pub fence_timeout_us: i64,
    /// Where DRM_PRIME and software frames are scored (API version 4):
    /// NULL, "" or "cpu": the CPU (dma-bufs read in place through mmap);
    /// "hip" or "hip:N": HIP device N (0 by default), each dma-buf imported
    /// there once (hipImportExternalMemory) after the same fence wait.
    /// vmafx_filter_new fails when the HIP runtime or device is not usable.
    /// CUDA frames are scored on their own device; with "hip" they are
    /// refused at configure.
    pub device: *const c_char,
}

/// One input frame as vmafx reads it: plane pointers and line sizes as in
/// AVFrame, the pixel format by its FFmpeg name (av_get_pix_fmt_name), and
/// the handle vmafx takes ownership of (released with host->frame_free once
/// scored; the planes must stay valid until then).
///
/// A DRM_PRIME frame: pix_fmt "drm_prime", data[0] its AVDRMFrameDescriptor
/// (libavutil/hwcontext_drm.h), sw_format the name of its hw_frames_ctx's
/// sw_format (the layout of the dma-bufs: nv12, p010le, yuv420p, ...).
/// vmafx duplicates the fds, waits for the buffers' implicit fences (up to
/// fence_timeout_us) and reads them in place, on the CPU or, with
/// options.device "hip[:N]", on that HIP device; the handle stays referenced
/// until the imported picture is dropped (on HIP: until the device is past
/// its last read).
///
/// A CUDA frame (API version 3): pix_fmt "cuda", data[]/linesize[] the
/// device pointers (CUdeviceptr) and pitches of its sw_format's planes, as
/// in the AVFrame, sw_format the name of its hw_frames_ctx's sw_format, and
/// hw_context the CUcontext of its device (AVCUDADeviceContext.cuda_ctx),
/// which must be the one given to vmafx_filter_set_cuda_device for that
/// input. The planes are read in place on the GPU, after the work queued on
/// that device's stream; the handle stays referenced until that reading is
/// done.
///
/// A HIP frame (API version 5; AV_PIX_FMT_HIP of the HIP hwcontext): pix_fmt
/// "hip", data[]/linesize[] the device pointers and pitches of its
/// sw_format's planes, sw_format as for CUDA; its input must have been
/// declared with vmafx_filter_set_hip_device. Read in place on that HIP
/// device (p010, and nv12/p016 chroma when read, converted there first),
/// after the work queued on the device context's stream.
///
/// sw_format is ignored for software frames, hw_context for all but CUDA
/// frames.
#[repr(C)]
pub struct VmafxFrame {
    pub data: [*const u8; 4],
    pub linesize: [c_int; 4],
    pub width: c_int,
    pub height: c_int,
    pub pix_fmt: *const c_char,
    pub handle: *mut c_void,
    pub sw_format: *const c_char,
    pub hw_context: *mut c_void,
}

/// One filter instance, opaque to C: from vmafx_filter_new to
/// vmafx_filter_free.
pub struct VmafxFilter {
    filter: Filter,
    frame_free: unsafe extern "C" fn(*mut c_void),
    set_metadata: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int,
    last_error: CString,
    warnings: CString,
    summary: CString,
}

fn code(e: &Error) -> c_int {
    match e {
        Error::NotSupported(_) => VMAFX_ENOTSUP,
        Error::Internal(_) => VMAFX_EINTERNAL,
        _ => VMAFX_EINVAL,
    }
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Reads an optional C string; invalid UTF-8 is an error.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, Error> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(Some)
        .map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("internal error (panic): {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("internal error (panic): {s}")
    } else {
        "internal error (panic)".into()
    }
}

/// Runs `body` on the handle, recording errors and panics.
///
/// # Safety
/// `f` is NULL or a handle from `vmafx_filter_new` not yet freed, used by one
/// thread at a time.
unsafe fn with_filter(f: *mut VmafxFilter, body: impl FnOnce(&mut VmafxFilter) -> Result<c_int, Error>) -> c_int {
    if f.is_null() {
        return VMAFX_EINVAL;
    }
    // SAFETY: a non-NULL handle comes from vmafx_filter_new and is used by
    // one thread at a time (the filter's).
    let vx = unsafe { &mut *f };
    match catch_unwind(AssertUnwindSafe(|| body(&mut *vx))) {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            vx.last_error = c_string(&e.to_string());
            vx.filter.note_fault(&e);
            code(&e)
        }
        Err(p) => {
            vx.last_error = c_string(&panic_text(p));
            VMAFX_EINTERNAL
        }
    }
}

fn copy_error(err: *mut c_char, len: usize, msg: &str) {
    if err.is_null() || len == 0 {
        return;
    }
    let bytes = msg.as_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: the caller gives `len` writable bytes at `err`.
    unsafe {
        ptr::copy_nonoverlapping(bytes.as_ptr(), err as *mut u8, n);
        *err.add(n) = 0;
    }
}

/// Creates an instance and parses the options. Returns NULL on error, with
/// the message copied into err (err_len bytes, NUL-terminated).
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_new(
    options: *const VmafxFilterOptions,
    host: *const VmafxHost,
    err: *mut c_char,
    err_len: usize,
) -> *mut VmafxFilter {
    let result = catch_unwind(|| -> Result<Box<VmafxFilter>, Error> {
        if options.is_null() || host.is_null() {
            return Err(Error::invalid("vmafx_filter_new: NULL options or host"));
        }
        // SAFETY: non-NULL pointers to the structs vmafx.h declares.
        let (o, h) = unsafe { (&*options, *host) };
        let (Some(frame_free), Some(set_metadata)) = (h.frame_free, h.frame_set_metadata) else {
            return Err(Error::invalid("vmafx_filter_new: host callbacks missing"));
        };
        // SAFETY: NULL or NUL-terminated strings (vmafx.h).
        let raw = unsafe {
            RawOptions {
                model: opt_str(o.model, "model")?,
                feature: opt_str(o.feature, "feature")?,
                log_path: opt_str(o.log_path, "log_path")?,
                log_fmt: opt_str(o.log_fmt, "log_fmt")?,
                pool: opt_str(o.pool, "pool")?,
                n_threads: o.n_threads as i64,
                n_subsample: o.n_subsample as i64,
                device: opt_str(o.device, "device")?,
            }
        };
        let mut filter = Filter::new(&raw)?;
        filter.set_fence_timeout(std::time::Duration::from_micros(o.fence_timeout_us.max(0) as u64));
        Ok(Box::new(VmafxFilter {
            filter,
            frame_free,
            set_metadata,
            last_error: CString::default(),
            warnings: CString::default(),
            summary: CString::default(),
        }))
    });
    match result {
        Ok(Ok(b)) => Box::into_raw(b),
        Ok(Err(e)) => {
            copy_error(err, err_len, &e.to_string());
            ptr::null_mut()
        }
        Err(p) => {
            copy_error(err, err_len, &panic_text(p));
            ptr::null_mut()
        }
    }
}

/// Pixel format names the filter accepts (NULL-terminated list).
#[no_mangle]
pub extern "C" fn vmafx_filter_pix_fmts() -> *const *const c_char {
    struct List([*const c_char; 23]);
    // SAFETY: the pointers are to 'static C string literals.
    unsafe impl Sync for List {}
    static NAMES: List = List([
        c"yuv420p".as_ptr(), c"yuv422p".as_ptr(), c"yuv444p".as_ptr(),
        c"yuv420p10le".as_ptr(), c"yuv422p10le".as_ptr(), c"yuv444p10le".as_ptr(),
        c"yuv420p12le".as_ptr(), c"yuv422p12le".as_ptr(), c"yuv444p12le".as_ptr(),
        c"yuv420p16le".as_ptr(), c"yuv422p16le".as_ptr(), c"yuv444p16le".as_ptr(),
        c"gray".as_ptr(), c"gray10le".as_ptr(), c"gray12le".as_ptr(), c"gray16le".as_ptr(),
        c"nv12".as_ptr(), c"p010le".as_ptr(), c"p016le".as_ptr(),
        c"drm_prime".as_ptr(), c"cuda".as_ptr(), c"hip".as_ptr(),
        ptr::null(),
    ]);
    debug_assert_eq!(HOST_FORMATS.len(), NAMES.0.len() - 4);
    NAMES.0.as_ptr()
}

/// Checks the negotiated inputs: sizes and formats of both must match and
/// be supported. A DRM_PRIME or CUDA input is given by its sw_format, so a
/// drm_prime (or cuda) nv12 input and a software nv12 input match.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_configure(
    f: *mut VmafxFilter,
    main_w: c_int,
    main_h: c_int,
    main_fmt: *const c_char,
    ref_w: c_int,
    ref_h: c_int,
    ref_fmt: *const c_char,
) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        // SAFETY: NULL or NUL-terminated (av_get_pix_fmt_name).
        let (m, r) = unsafe { (opt_str(main_fmt, "main format")?, opt_str(ref_fmt, "reference format")?) };
        let size = |v: c_int| usize::try_from(v).map_err(|_| Error::invalid(format!("size {v}")));
        vx.filter.configure(
            (size(main_w)?, size(main_h)?, m.unwrap_or("none")),
            (size(ref_w)?, size(ref_h)?, r.unwrap_or("none")),
        )?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Declares an input (0: main, 1: reference) as CUDA frames (API version
/// 3): `cuda_ctx` and `stream` are its device's AVCUDADeviceContext fields
/// (CUcontext, CUstream; NULL is the default stream), plain pointers that
/// must outlive the filter. Call before vmafx_filter_configure, which then
/// takes that input by its sw_format and scores on the GPU, queued on that
/// stream after the decoder's work; a software input mixed with it is
/// copied to the device. Both inputs CUDA: the same context. Configure fails
/// when the CUDA driver cannot be loaded.
// Safety: `cuda_ctx` and `stream` are only stored, never dereferenced here.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_set_cuda_device(
    f: *mut VmafxFilter,
    input: c_int,
    cuda_ctx: *mut c_void,
    stream: *mut c_void,
) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        let input = usize::try_from(input).map_err(|_| Error::invalid(format!("input {input}")))?;
        vx.filter.set_cuda_device(input, CudaInput { context: cuda_ctx as u64, stream: stream as u64 })?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Declares an input (0: main, 1: reference) as HIP frames (API version
/// 5): `device` and `stream` are its device's AVHIPDeviceContext fields
/// (the HIP device ordinal, a hipStream_t; NULL is the null stream), the
/// stream outliving the filter. As for CUDA, call before
/// vmafx_filter_configure, which then scores on that HIP device, each frame
/// after the work queued on that stream; a software input mixed with it is
/// copied to the device. Both inputs HIP: the same device and stream. HIP
/// frames beside CUDA frames, or with options.device "hip", are refused at
/// configure, as is a HIP runtime that cannot be loaded.
// Safety: `stream` is only stored, never dereferenced here.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_set_hip_device(
    f: *mut VmafxFilter,
    input: c_int,
    device: c_int,
    stream: *mut c_void,
) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        let input = usize::try_from(input).map_err(|_| Error::invalid(format!("input {input}")))?;
        let device = usize::try_from(device).map_err(|_| Error::invalid(format!("HIP device {device}")))?;
        vx.filter.set_hip_device(input, HipInput { device, stream: stream as u64 })?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Takes the handle out of `frame` (so it is released exactly once) and
/// reads its planes.
///
/// # Safety
/// `frame` points to a filled `VmafxFrame`.
unsafe fn take_frame<'a>(
    frame: *const VmafxFrame,
    free: unsafe extern "C" fn(*mut c_void),
) -> Result<(FrameHandle, RawPlanes, &'a str), Error> {
    // SAFETY: a filled VmafxFrame (the caller's promise).
    let fr = unsafe { &*frame };
    // SAFETY: `handle` is a frame handed over to vmafx (vmafx.h), released
    // by `free` once.
    let handle = unsafe { FrameHandle::new(fr.handle, free) };
    // SAFETY: NULL or NUL-terminated (av_get_pix_fmt_name).
    let mut fmt = unsafe { opt_str(fr.pix_fmt, "pixel format") }?.unwrap_or("none");
    // DRM_PRIME (the descriptor in data[0]), CUDA and HIP (device pointers):
    // read as their sw_format.
    let memory = match fmt {
        "drm_prime" => FrameMemory::DrmPrime,
        "cuda" if fr.hw_context.is_null() => {
            return Err(Error::invalid("cuda frame without a CUDA context (no hw_frames_ctx?)"))
        }
        "cuda" => FrameMemory::Cuda { context: fr.hw_context as u64 },
        "hip" => FrameMemory::Hip,
        _ => FrameMemory::Host,
    };
    if memory != FrameMemory::Host {
        // SAFETY: NULL or NUL-terminated (av_get_pix_fmt_name).
        fmt = unsafe { opt_str(fr.sw_format, "sw_format") }?
            .ok_or_else(|| Error::invalid(format!("{fmt} frame without a sw_format (no hw_frames_ctx?)")))?;
    }
    if fr.width <= 0 || fr.height <= 0 {
        return Err(Error::invalid(format!("frame size {}x{}", fr.width, fr.height)));
    }
    let raw = RawPlanes {
        data: fr.data,
        linesize: fr.linesize,
        width: fr.width as usize,
        height: fr.height as usize,
        memory,
    };
    Ok((handle, raw, fmt))
}

/// Queues one frame pair for scoring. `main` and `reference` hand over their
/// handles (also on error: vmafx releases them). `output` is the frame to
/// pass downstream once its scores are final (vmafx_filter_pop returns it
/// with its metadata set); it is released with host->frame_free if never
/// popped. May block while the worker pool is full.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_push(
    f: *mut VmafxFilter,
    main: *const VmafxFrame,
    reference: *const VmafxFrame,
    output: *mut c_void,
) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        let free = vx.frame_free;
        // SAFETY: `output` is a frame handed over (vmafx.h).
        let output = unsafe { FrameHandle::new(output, free) };
        if main.is_null() || reference.is_null() {
            // The frame given is handed over all the same (vmafx.h).
            for frame in [main, reference].into_iter().filter(|p| !p.is_null()) {
                // SAFETY: a filled VmafxFrame whose handle is ours now.
                drop(unsafe { FrameHandle::new((*frame).handle, free) });
            }
            return Err(Error::invalid("vmafx_filter_push: NULL frame"));
        }
        // SAFETY: filled VmafxFrames (vmafx.h). Both handles are taken
        // before either frame's error returns, so a bad main frame does not
        // leak the reference (each take_frame releases its own on error).
        let (m, r) = unsafe { (take_frame(main, free), take_frame(reference, free)) };
        vx.filter.push(m?, r?, output)?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Queues a frame that passes through unscored (eof_action=pass after the
/// reference ended), in order behind the frames before it.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_push_unscored(f: *mut VmafxFilter, output: *mut c_void) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        // SAFETY: `output` is a frame handed over (vmafx.h).
        let output = unsafe { FrameHandle::new(output, vx.frame_free) };
        vx.filter.push_unscored(output);
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// The host found the main input ended while the reference goes on (its
/// frame sync would repeat main's last frame): after `main_frames` frames.
/// Returns an error that says so (the run fails; vmafx_filter_summary then
/// writes the log of the frames scored, marked incomplete).
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_main_ended(f: *mut VmafxFilter, main_frames: i64) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        vx.filter.main_ended(main_frames)?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// The host found the reference input ended while the main input goes on
/// (its frame sync would repeat the reference's last frame): after
/// `reference_frames` frames, before that repeated pair was pushed.
/// Returns an error that says so (the run fails; vmafx_filter_summary then
/// writes the log of the common frames scored, marked incomplete). API
/// version 6.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_reference_ended(f: *mut VmafxFilter, reference_frames: i64) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        vx.filter.reference_ended(reference_frames)?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Pops the next output frame whose scores are final (metadata set).
/// Returns 1 with *output set, 0 when none is ready, or an error.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_pop(f: *mut VmafxFilter, output: *mut *mut c_void) -> c_int {
    if output.is_null() {
        return VMAFX_EINVAL;
    }
    // SAFETY: `output` is writable.
    unsafe { *output = ptr::null_mut() };
    let body = |vx: &mut VmafxFilter| {
        let set_metadata = vx.set_metadata;
        let mut set = |frame: &FrameHandle, key: &str, value: &str| -> Result<(), Error> {
            let (k, v) = (c_string(key), c_string(value));
            // SAFETY: a frame we hold, NUL-terminated strings.
            let ret = unsafe { set_metadata(frame.as_ptr(), k.as_ptr(), v.as_ptr()) };
            if ret < 0 {
                return Err(Error::Internal(format!("setting frame metadata {key} failed ({ret})")));
            }
            Ok(())
        };
        match vx.filter.pop(&mut set)? {
            Some(frame) => {
                // SAFETY: as above; ownership goes back to the host.
                unsafe { *output = frame.into_raw() };
                Ok(1)
            }
            None => Ok(0),
        }
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// End of stream: scores every frame still in flight; afterwards every
/// queued frame can be popped. `reference_frames` is how many reference
/// frames the host saw (for the unequal-count check; -1 to skip it) and
/// `allow_unequal` turns that error into a warning (shortest=1, or an
/// eof_action other than repeat). Idempotent.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_finish(
    f: *mut VmafxFilter,
    reference_frames: i64,
    allow_unequal: c_int,
) -> c_int {
    let body = |vx: &mut VmafxFilter| {
        vx.filter.finish(reference_frames, allow_unequal != 0)?;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    unsafe { with_filter(f, body) }
}

/// Finishes if needed, writes the log file (if log_path is set; once) and
/// returns the lines to log at info level ("VMAF score: %f\n" per model, as
/// libvmaf), valid until the next call on f; "" when there is nothing to
/// log; NULL on error (see vmafx_filter_last_error). After any call on f
/// failed, it writes the log of the frames scored before that failure,
/// marked incomplete, and returns NULL with a message that says so. The log
/// file itself is created by vmafx_filter_new (an unwritable path fails
/// there) and removed by vmafx_filter_free if no log was written into it
/// and vmafx created it.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_summary(f: *mut VmafxFilter) -> *const c_char {
    let body = |vx: &mut VmafxFilter| {
        let text = c_string(vx.filter.summary()?);
        vx.summary = text;
        Ok(VMAFX_OK)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    let ret = unsafe { with_filter(f, body) };
    if ret < 0 {
        return ptr::null();
    }
    // SAFETY: non-NULL (with_filter returned OK).
    unsafe { (*f).summary.as_ptr() }
}

/// Warnings produced since the last call (one per line), or NULL.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_take_warnings(f: *mut VmafxFilter) -> *const c_char {
    let body = |vx: &mut VmafxFilter| {
        let w = vx.filter.take_warnings();
        if w.is_empty() {
            return Ok(0);
        }
        vx.warnings = c_string(&(w.join("\n") + "\n"));
        Ok(1)
    };
    // SAFETY: `f` is NULL or a live handle used by one thread (vmafx.h).
    let ret = unsafe { with_filter(f, body) };
    if ret != 1 {
        return ptr::null();
    }
    // SAFETY: non-NULL (with_filter returned 1).
    unsafe { (*f).warnings.as_ptr() }
}

/// The last error message (never NULL; empty when none).
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_last_error(f: *const VmafxFilter) -> *const c_char {
    if f.is_null() {
        return c"vmafx: no filter instance".as_ptr();
    }
    // SAFETY: a handle from vmafx_filter_new.
    unsafe { (*f).last_error.as_ptr() }
}

/// Frames scored so far.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_frames_scored(f: *const VmafxFilter) -> u64 {
    if f.is_null() {
        return 0;
    }
    // SAFETY: a handle from vmafx_filter_new.
    unsafe { (*f).filter.frames_scored() }
}

/// Host copies made (nv12/p010 chroma deinterleaving, p010 luma shifts,
/// negative line sizes): a debug counter. CUDA and HIP frames are read on
/// their device: they never count.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_host_copies(f: *const VmafxFilter) -> u64 {
    if f.is_null() {
        return 0;
    }
    // SAFETY: a handle from vmafx_filter_new.
    unsafe { (*f).filter.host_copies() }
}

/// CUDA frames handed to the GPU scoring context in place (API version 3),
/// DRM_PRIME frames imported on the HIP device (API version 4), and HIP
/// frames (API version 5), in place or converted on the device.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_device_frames(f: *const VmafxFilter) -> u64 {
    if f.is_null() {
        return 0;
    }
    // SAFETY: a handle from vmafx_filter_new.
    unsafe { (*f).filter.device_frames() }
}

/// Releases everything, queued frames included. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn vmafx_filter_free(f: *mut VmafxFilter) {
    if f.is_null() {
        return;
    }
    // Dropping stops the workers and releases every frame still held; a
    // panic there must not cross into C.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: a handle from vmafx_filter_new, freed once.
        drop(unsafe { Box::from_raw(f) });
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn no_free(_: *mut c_void) {}

    fn frame(pix_fmt: &CStr, sw_format: Option<&CStr>, hw_context: usize) -> VmafxFrame {
        VmafxFrame {
            data: [8 as *const u8, ptr::null(), ptr::null(), ptr::null()],
            linesize: [64, 0, 0, 0],
            width: 64,
            height: 48,
            pix_fmt: pix_fmt.as_ptr(),
            handle: ptr::null_mut(),
            sw_format: sw_format.map_or(ptr::null(), |s| s.as_ptr()),
            hw_context: hw_context as *mut c_void,
        }
    }

    #[test]
    fn frames_are_read_as_their_memory_and_sw_format() {
        // SAFETY: every frame passed is a filled VmafxFrame from `frame`
        // (its data pointers fake, never read for the memory kinds taken
        // here), and `no_free` releases nothing.
        let take = |f: &VmafxFrame| unsafe { take_frame(f, no_free) }.map(|(_, raw, fmt)| (raw.memory, fmt.to_owned()));
        assert_eq!(take(&frame(c"nv12", Some(c"gray"), 7)).unwrap(), (FrameMemory::Host, "nv12".into()));
        assert_eq!(take(&frame(c"drm_prime", Some(c"nv12"), 0)).unwrap(), (FrameMemory::DrmPrime, "nv12".into()));
        assert_eq!(
            take(&frame(c"cuda", Some(c"p010le"), 0x5eed)).unwrap(),
            (FrameMemory::Cuda { context: 0x5eed }, "p010le".into())
        );
        let err = take(&frame(c"cuda", Some(c"nv12"), 0)).unwrap_err().to_string();
        assert!(err.contains("cuda frame without a CUDA context"), "{err}");
        let err = take(&frame(c"cuda", None, 0x5eed)).unwrap_err().to_string();
        assert!(err.contains("cuda frame without a sw_format"), "{err}");
        let err = take(&frame(c"drm_prime", None, 0)).unwrap_err().to_string();
        assert!(err.contains("drm_prime frame without a sw_format"), "{err}");
    }
}
