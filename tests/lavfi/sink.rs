//! The buffersink end both chapters' graphs share: frames out, vmafx's
//! per-frame metadata read while each frame still holds it.

use std::ffi::CStr;
use std::ptr;

use ffmpeg_sys_next as ff;

/// AVERROR(EAGAIN): the graph wants more input before it has a frame.
pub(crate) const EAGAIN: i32 = -nix::libc::EAGAIN;

/// vmafx's per-frame metadata: (name after `lavfi.vmafx.`, value as written).
pub(crate) type VmafxMetadata = Vec<(String, String)>;

/// Pulls every frame `sink` has ready and hands each one's pts and vmafx
/// metadata to `each`; Ok(true) at EOF, Ok(false) when the sink wants more
/// input, Err(code) on any other error.
///
/// # Safety
/// `sink` is the buffersink of a configured graph.
pub(crate) unsafe fn drain_vmafx(
    sink: *mut ff::AVFilterContext,
    mut each: impl FnMut(i64, VmafxMetadata),
) -> Result<bool, i32> {
    // SAFETY: the caller gives the buffersink of a configured graph (this
    // fn's contract); each frame `f` is freed exactly once, on every path, and
    // its metadata entries are copied into owned Strings while `f` holds them.
    unsafe {
        loop {
            let mut f = ff::av_frame_alloc();
            let r = ff::av_buffersink_get_frame(sink, f);
            if r < 0 {
                ff::av_frame_free(&mut f);
                return match r {
                    EAGAIN => Ok(false),
                    ff::AVERROR_EOF => Ok(true),
                    _ => Err(r),
                };
            }
            let mut meta = Vec::new();
            let mut e: *const ff::AVDictionaryEntry = ptr::null();
            loop {
                e = ff::av_dict_iterate((*f).metadata, e);
                if e.is_null() {
                    break;
                }
                let key = CStr::from_ptr((*e).key).to_string_lossy();
                if let Some(name) = key.strip_prefix("lavfi.vmafx.") {
                    meta.push((name.to_owned(), CStr::from_ptr((*e).value).to_string_lossy().into_owned()));
                }
            }
            let pts = (*f).pts;
            ff::av_frame_free(&mut f);
            each(pts, meta);
        }
    }
}
