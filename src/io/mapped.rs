//! Regular files read through a read-only memory map, so that the y4m and
//! raw yuv readers lend each frame to the engine where it already is (in
//! the page cache) instead of copying it into a picture of their own: no
//! `read` copy, no picture to allocate and fill, and the reader thread no
//! longer takes CPU time and cache from the workers.
//!
//! The hazard of any map: a file that another process shrinks while it is
//! mapped raises SIGBUS where a page past its new end is touched. Each frame
//! is checked against the file's current size when it is lent, so a file
//! cut short before a frame is read gives the usual "truncated frame"
//! error; only a cut while the workers read a lent frame is not caught.
//! Standard input, pipes and anything else that is not a regular file are
//! read as a stream, as before.

use std::fs::File;
use std::io::Read;
use std::num::NonZeroUsize;
use std::path::Path;
use std::ptr::NonNull;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use nix::sys::mman::{madvise, mmap, munmap, MapFlags, MmapAdvise, ProtFlags};

use super::{fill_picture, packed_frame_size};
use crate::picture::{check_sample_depth, OwnedPicture, Picture, PictureSource, PixelFormat, PlaneView};
use crate::{Error, Result};

/// A read-only, private map of a whole regular file.
///
/// Invariants: `ptr` is the start of a live mapping of `len` bytes made by
/// `mmap` (PROT_READ, MAP_PRIVATE) and unmapped only in `Drop`; nothing
/// writes through it, so `&[u8]` views of it may be shared between
/// threads. Assumed of the world outside, as by every program that maps
/// its input: no other process writes the file while it is mapped (a write
/// would show through in pages not yet read, as it would in a `read`).
pub(crate) struct MappedFile {
    ptr: NonNull<u8>,
    len: usize,
    file: File,
    frames: Mutex<LentFrames>,
}

/// The frames lent and not yet dropped, for letting go of the pages behind
/// them. Frames are lent front to back and dropped in any order.
#[derive(Default)]
struct LentFrames {
    /// Start of each lent frame still alive, with how many lent there.
    live: BTreeMap<usize, usize>,
    /// End of the last frame lent.
    lent_until: usize,
    /// Everything below this has been let go of once.
    released_until: usize,
}

/// How far back each release sweeps again. A page fault maps the pages
/// around it that the page cache holds (fault-around, 64 KiB; a whole large
/// folio on newer kernels, up to 2 MiB), so a fault near the low-water mark
/// can map pages just behind it after they were let go of.
const RESWEEP: usize = 4 << 20;

// SAFETY: the mapping is read-only memory owned by this value (see the
// invariants); reading it from several threads at once is sound.
unsafe impl Send for MappedFile {}
// SAFETY: as above.
unsafe impl Sync for MappedFile {}

impl MappedFile {
    /// Maps `file` when it is a non-empty regular file whose size fits the
    /// address space; `None` otherwise (the caller then streams it).
    pub(crate) fn new(file: File) -> Option<MappedFile> {
        let meta = file.metadata().ok()?;
        if !meta.file_type().is_file() {
            return None;
        }
        let len = NonZeroUsize::new(usize::try_from(meta.len()).ok()?)?;
        // SAFETY: a fresh read-only private mapping of an open file at
        // offset 0; no existing memory is affected.
        let ptr = unsafe { mmap(None, len, ProtFlags::PROT_READ, MapFlags::MAP_PRIVATE, &file, 0) }.ok()?;
        // Frames are read front to back: ask for aggressive read-ahead. Advice
        // only; a kernel that ignores it changes nothing.
        // SAFETY: the range is the mapping just made.
        let _ = unsafe { madvise(ptr, len.get(), MmapAdvise::MADV_SEQUENTIAL) };
        Some(MappedFile { ptr: ptr.cast(), len: len.get(), file, frames: Mutex::default() })
    }

    /// The file's bytes as mapped.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` and `len` describe the live, read-only mapping
        // (invariants), which outlives `&self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Notes a frame lent at `start..end`.
    fn lent(&self, start: usize, end: usize) {
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        *frames.live.entry(start).or_default() += 1;
        frames.lent_until = frames.lent_until.max(end);
    }

    /// Notes that the frame lent at `start` was dropped, and lets go of the
    /// pages below the oldest frame still lent (all of them when none is):
    /// they leave this process's resident set and stay in the page cache,
    /// so a long clip costs the frames in flight, not the whole file. The
    /// reader only moves forward, so nothing reads there again; were a page
    /// read anyway, it would be faulted back in from the file unchanged
    /// (the map is private and never written).
    fn dropped(&self, start: usize) {
        let mut frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = frames.live.get_mut(&start) {
            *count -= 1;
            if *count == 0 {
                frames.live.remove(&start);
            }
        }
        let low = frames.live.keys().next().copied().unwrap_or(frames.lent_until);
        let page = page_size();
        let end = low / page * page;
        let first = frames.released_until.saturating_sub(RESWEEP) / page * page;
        if end <= first {
            return;
        }
        frames.released_until = frames.released_until.max(end);
        // SAFETY: first < end <= len rounded down to a page, inside the
        // mapping; MADV_DONTNEED on a private file mapping that was never
        // written only drops page-table entries (see above).
        let at = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(first)) };
        let _ = unsafe { madvise(at.cast(), end - first, MmapAdvise::MADV_DONTNEED) };
    }

    /// How many of the mapped bytes the file still holds (it may have been
    /// cut since it was mapped; a page past its end must not be touched).
    fn bytes_on_file(&self) -> usize {
        match self.file.metadata() {
            Ok(meta) => usize::try_from(meta.len()).unwrap_or(usize::MAX).min(self.len),
            // Unknown: assume the worst, that nothing more can be read.
            Err(_) => 0,
        }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped only here; every view
        // of it borrows `self` (or an `Arc` of it), so none outlives this.
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf reads a constant of the system.
    *PAGE.get_or_init(|| match unsafe { nix::libc::sysconf(nix::libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// A cursor over a mapped file: `Read` for headers and for what is copied,
/// [`MappedInput::take`] for frames lent in place.
pub(crate) struct MappedInput {
    file: Arc<MappedFile>,
    pos: usize,
}

impl MappedInput {
    /// `path` mapped, when it is a regular file that can be; `None` for
    /// standard input (`-`), pipes and the like, and for every file with
    /// `VMAFX_NO_MAP=1` (a stream then, as before maps; for comparisons).
    pub(crate) fn open(path: &Path) -> Option<MappedInput> {
        if path.as_os_str() == "-" || std::env::var_os("VMAFX_NO_MAP").is_some_and(|v| v == "1") {
            return None;
        }
        // Asked of the path, not of an open file: opening a FIFO to find out
        // would take (and, closed again, drop) the writer already waiting.
        if !std::fs::metadata(path).is_ok_and(|m| m.file_type().is_file()) {
            return None;
        }
        let file = MappedFile::new(File::open(path).ok()?)?;
        Some(MappedInput { file: Arc::new(file), pos: 0 })
    }

    /// The next `len` bytes: their offset in the file and how many of them
    /// the file holds now (fewer at its end, or where it was cut since it
    /// was mapped). The cursor moves past what is there.
    pub(crate) fn take(&mut self, len: usize) -> (usize, usize) {
        let start = self.pos;
        let mut got = len.min(self.file.len - start);
        if got > 0 && self.file.bytes_on_file() < start + got {
            got = self.file.bytes_on_file().saturating_sub(start);
        }
        self.pos += got;
        (start, got)
    }

    /// `len` bytes at `start` (a range [`MappedInput::take`] returned).
    pub(crate) fn range(&self, start: usize, len: usize) -> &[u8] {
        &self.file.bytes()[start..start + len]
    }

    /// Frame `index` of `path`, packed at `start` (a range `take` returned
    /// whole), as the engine takes it: lent in place once its samples are
    /// checked against the bit depth, or copied into a picture where its
    /// planes cannot be borrowed as they lie (16-bit samples at an odd
    /// offset, or on a big-endian host).
    pub(crate) fn frame(
        &self,
        start: usize,
        format: PixelFormat,
        (width, height): (usize, usize),
        path: &Path,
        index: u32,
    ) -> Result<Arc<dyn PictureSource>> {
        let frame = MappedFrame { file: Arc::clone(&self.file), start, format, width, height };
        self.file.lent(start, start + packed_frame_size(format, width, height));
        if let Some(picture) = frame.picture() {
            check_sample_depth(&picture)
                .map_err(|e| Error::input(path, format!("frame {index}: {}", super::strip_kind(&e))))?;
            return Ok(Arc::new(frame));
        }
        let mut picture = OwnedPicture::new(format, width, height)?;
        fill_picture(&mut picture, self.range(start, packed_frame_size(format, width, height)), path, index)?;
        Ok(Arc::new(picture))
    }
}

impl Read for MappedInput {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let (start, got) = self.take(buf.len());
        buf[..got].copy_from_slice(self.range(start, got));
        Ok(got)
    }
}

/// A frame lent from a mapped file: packed planes (no row padding), plane
/// after plane, from `start`.
pub(crate) struct MappedFrame {
    file: Arc<MappedFile>,
    start: usize,
    format: PixelFormat,
    width: usize,
    height: usize,
}

impl MappedFrame {
    /// The picture over the mapped bytes; `None` where it cannot be one
    /// (see [`MappedInput::frame`]).
    fn picture(&self) -> Option<Picture<'_>> {
        let bps = self.format.bytes_per_sample();
        if bps == 2 && cfg!(target_endian = "big") {
            return None;
        }
        let bytes = self.file.bytes();
        let mut planes = Vec::with_capacity(3);
        let mut offset = self.start;
        for i in 0..self.format.chroma.plane_count() {
            let (w, h) = self.format.plane_size(i, self.width, self.height);
            let len = w * h * bps;
            planes.push(PlaneView::new(bytes.get(offset..offset + len)?, w * bps, w, h, bps).ok()?);
            offset += len;
        }
        Picture::new(self.format, self.width, self.height, &planes).ok()
    }
}

impl Drop for MappedFrame {
    fn drop(&mut self) {
        self.file.dropped(self.start);
    }
}

impl PictureSource for MappedFrame {
    fn host(&self) -> Option<Picture<'_>> {
        // Some: `MappedInput::frame` lends a frame only after the same call
        // succeeded, and nothing it reads has changed since.
        self.picture()
    }
}
