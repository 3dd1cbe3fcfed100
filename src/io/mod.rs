//! Video files in, pictures out: YUV4MPEG2 (`y4m`) and raw planar yuv
//! (`yuv`), the two inputs of libvmaf's `vmaf` tool (`tools/y4m_input.c`,
//! `tools/yuv_input.c`), and with feature `decode` any file FFmpeg's
//! libraries decode (`decode.rs`, docs/decode.md).
//!
//! Both readers take one frame per call, so memory stays flat whatever the
//! clip's length: a regular file is mapped and its frames lent to the
//! engine where they lie (`mapped.rs`); standard input and pipes are read
//! into [`OwnedPicture`]s. Errors name the file and the frame
//! ([`Error::Input`]).
//!
//! Two deliberate differences from libvmaf's readers: chroma planes of odd
//! sizes are read at ceil(w/2) x ceil(h/2) (what y4m and ffmpeg write; the
//! libvmaf tool reads floor and loses framing), and 16-bit and 4:0:0 inputs
//! are read too.

#[cfg(feature = "decode")]
pub mod decode;
mod mapped;
pub mod y4m;
pub mod yuv;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex, Weak};

use crate::picture::{Picture, PictureSource};
use crate::picture::{OwnedPicture, PixelFormat};
use crate::{Error, Result};

#[cfg(feature = "decode")]
pub use decode::{DecodeReader, FrameMap};
pub use y4m::{Y4mHeader, Y4mReader, Y4mWriter};
pub use yuv::{RawFormat, YuvReader};

/// A stream of pictures of one size and format.
pub trait FrameReader: Send {
    /// The file read, as given (for messages).
    fn path(&self) -> &Path;
    fn width(&self) -> usize;
    fn height(&self) -> usize;
    fn format(&self) -> PixelFormat;
    /// The next frame, or `None` at a clean end of file (no byte of a
    /// further frame). A partial frame is an error.
    fn read_frame(&mut self) -> Result<Option<OwnedPicture>>;
    /// Frames returned so far.
    fn frames_read(&self) -> u32;

    /// The next frame as the engine takes it: in place where the reader
    /// can (decoded frames), else the picture [`FrameReader::read_frame`]
    /// returns.
    fn read_source(&mut self) -> Result<Option<Arc<dyn PictureSource>>> {
        Ok(self.read_frame()?.map(|p| Arc::new(p) as Arc<dyn PictureSource>))
    }

    /// Reads and drops up to `n` frames; returns how many were there.
    fn skip_frames(&mut self, n: u32) -> Result<u32> {
        for i in 0..n {
            if self.read_frame()?.is_none() {
                return Ok(i);
            }
        }
        Ok(n)
    }
}

/// Opens `path` for reading: as raw yuv of `raw` when given; as y4m when
/// it starts with y4m's signature (or is `-`, standard input); otherwise,
/// with feature `decode`, through FFmpeg's libraries (and without it as
/// y4m, whose reader then says what the file is not).
pub fn open(path: &Path, raw: Option<RawFormat>) -> Result<Box<dyn FrameReader>> {
    if let Some(raw) = raw {
        return Ok(Box::new(YuvReader::open(path, raw)?));
    }
    #[cfg(feature = "decode")]
    if path.as_os_str() != "-" && !starts_with_y4m_signature(path)? {
        return Ok(Box::new(DecodeReader::open(path)?));
    }
    Ok(Box::new(Y4mReader::open(path)?))
}

/// Whether the file begins with "YUV4MPEG2" (y4m's fast reader takes it).
#[cfg(feature = "decode")]
fn starts_with_y4m_signature(path: &Path) -> Result<bool> {
    let mut head = [0u8; 9];
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let n = read_full(&mut file, &mut head, path)?;
    Ok(&head[..n] == b"YUV4MPEG2")
}

/// A buffered byte source for `path` (`-` is standard input).
pub fn open_source(path: &Path) -> Result<Box<dyn Read + Send>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(BufReader::with_capacity(1 << 20, std::io::stdin())));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
}

/// Reads until `buf` is full or the source ends; returns the bytes read.
/// (Unlike `read_exact`, a short read tells how much was there.)
pub(crate) fn read_full(source: &mut dyn Read, buf: &mut [u8], path: &Path) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match source.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(filled)
}

/// Reads up to `n` bytes into `buf` (cleared first); returns how many were
/// there. `buf` grows with the bytes that arrive, not with `n`: a header
/// that claims a 65536x65536 frame costs memory only if the file holds it.
pub(crate) fn read_up_to(source: &mut dyn Read, buf: &mut Vec<u8>, n: usize, path: &Path) -> Result<usize> {
    buf.clear();
    buf.reserve(n.min(1 << 20));
    source.take(n as u64).read_to_end(buf).map_err(|e| Error::io(path, e))
}

/// Bytes of one frame stored packed (no row padding), plane after plane,
/// chroma rounded up.
pub fn packed_frame_size(format: PixelFormat, width: usize, height: usize) -> usize {
    (0..format.chroma.plane_count())
        .map(|i| {
            let (w, h) = format.plane_size(i, width, height);
            w * h * format.bytes_per_sample()
        })
        .sum()
}

/// Fills `picture` from one packed frame in `bytes`; a sample beyond the
/// bit depth is reported with the file and frame.
pub(crate) fn fill_picture(picture: &mut OwnedPicture, bytes: &[u8], path: &Path, frame: u32) -> Result<()> {
    let format = picture.format();
    let (width, height) = (picture.width(), picture.height());
    let mut offset = 0;
    for i in 0..format.chroma.plane_count() {
        let (w, h) = format.plane_size(i, width, height);
        let len = w * h * format.bytes_per_sample();
        picture
            .fill_plane_from_packed(i, &bytes[offset..offset + len])
            .map_err(|e| Error::input(path, format!("frame {frame}: {}", strip_kind(&e))))?;
        offset += len;
    }
    Ok(())
}

/// The message of an error without its "invalid argument: " prefix.
fn strip_kind(e: &Error) -> String {
    match e {
        Error::InvalidArgument(m) | Error::NotSupported(m) => m.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn display(path: &Path) -> PathBuf {
    if path.as_os_str() == "-" {
        PathBuf::from("<stdin>")
    } else {
        path.to_path_buf()
    }
}

/// Most pictures a pool keeps: more than the engine holds in flight at
/// once (pictures beyond it are freed as before).
const POOL_MAX: usize = 32;

/// Pictures handed back when the engine drops a frame, so that a reader
/// refills pages already faulted in instead of allocating (and zeroing)
/// fresh ones for each frame. A reused picture keeps its padding as
/// `OwnedPicture::new` left it: readers write only the rows' samples.
#[derive(Default)]
pub(crate) struct PicturePool {
    free: Arc<Mutex<Vec<OwnedPicture>>>,
}

impl PicturePool {
    /// A picture of this size and format: a returned one, or a new one.
    pub(crate) fn take(&self, format: PixelFormat, width: usize, height: usize) -> Result<OwnedPicture> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(picture) = free.pop() {
            if picture.format() == format && picture.width() == width && picture.height() == height {
                return Ok(picture);
            }
        }
        drop(free);
        OwnedPicture::new(format, width, height)
    }

    /// `picture` for the engine; it comes back here when the engine drops it.
    pub(crate) fn share(&self, picture: OwnedPicture) -> Arc<dyn PictureSource> {
        Arc::new(PooledPicture { picture: Some(picture), pool: Arc::downgrade(&self.free) })
    }

    /// `picture`, unused, back into the pool (a read that failed).
    pub(crate) fn give_back(&self, picture: OwnedPicture) {
        give_back(&self.free, picture);
    }
}

fn give_back(free: &Mutex<Vec<OwnedPicture>>, picture: OwnedPicture) {
    let mut free = free.lock().unwrap_or_else(|e| e.into_inner());
    if free.len() < POOL_MAX {
        free.push(picture);
    }
}

/// A pooled picture lent to the engine.
struct PooledPicture {
    picture: Option<OwnedPicture>,
    pool: Weak<Mutex<Vec<OwnedPicture>>>,
}

impl PictureSource for PooledPicture {
    fn host(&self) -> Option<Picture<'_>> {
        self.picture.as_ref().map(OwnedPicture::view)
    }
}

impl Drop for PooledPicture {
    fn drop(&mut self) {
        // The reader may be gone (its pool with it): then the picture is freed.
        if let (Some(picture), Some(free)) = (self.picture.take(), self.pool.upgrade()) {
            give_back(&free, picture);
        }
    }
}
