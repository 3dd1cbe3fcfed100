//! YUV4MPEG2 (.y4m) reading and writing.
//!
//! Reads what libvmaf's `tools/y4m_input.c` (`y4m_parse_tags`,
//! `y4m_input_open_impl`, `y4m_fetch_into_vmaf_picture`) reads, and what
//! ffmpeg's y4m muxer writes beyond it:
//!
//! - header tags `W` `H` `F` `I` `A` `C` `X` (unknown tags are skipped, as
//!   libvmaf and the format's spec do);
//! - colorspaces `420`, `420jpeg`, `420paldv`, `420mpeg2` (chroma siting is
//!   not resampled: the planes are scored as stored), `422`, `444`,
//!   `444alpha` (the alpha plane is skipped), `mono`, and the high bit-depth
//!   forms `420p10`, `422p12`, `444p16`, `mono10`, ... (9 to 16 bits);
//!   `XYSCSS=` stands in when there is no `C` tag, as in ffmpeg;
//! - `FRAME` headers with parameters (ignored);
//! - chroma of odd sizes at ceil(w/2) x ceil(h/2); samples above 8 bits are
//!   16-bit little-endian.
//!
//! Interlaced material (`It`, `Ib`, `Im`) is read frame by frame like
//! progressive material; libvmaf's tool refuses it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::mapped::MappedInput;
use super::{display, fill_picture, packed_frame_size, read_full, read_up_to, FrameReader, PicturePool};
use crate::picture::{Chroma, OwnedPicture, Picture, PictureSource, PixelFormat};
use crate::{Error, Result};

/// Longest header line accepted (libvmaf takes 255 bytes; ffmpeg writes
/// well under 100).
const MAX_HEADER_LEN: usize = 4096;
/// Longest `FRAME` line accepted.
const MAX_FRAME_HEADER_LEN: usize = 4096;
/// Largest frame read straight into a picture (8K 4:4:4 16-bit is 199 MB);
/// a larger one, most likely a broken header, goes through `read_up_to`,
/// whose memory grows only with the bytes the file holds.
const MAX_DIRECT_FRAME_BYTES: usize = 1 << 28;

/// The stream header: every tag libvmaf reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Y4mHeader {
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    /// Frame rate as `F` gives it (numerator, denominator); (0, 0) if absent.
    pub frame_rate: (u32, u32),
    /// Interlacing: `p`, `t`, `b`, `m` or `?` (absent).
    pub interlace: char,
    /// Pixel aspect ratio as `A` gives it; (0, 0) if absent.
    pub pixel_aspect: (u32, u32),
    /// The colorspace as written (`C` tag, or `XYSCSS=`), e.g. "420p10";
    /// "420jpeg" if neither was given.
    pub colorspace: String,
    /// An alpha plane follows the three colour planes (`C444alpha`).
    pub alpha: bool,
}

impl Y4mHeader {
    /// A header for `format`, progressive, with colorspace tag derived from
    /// the format.
    pub fn new(width: usize, height: usize, format: PixelFormat, frame_rate: (u32, u32)) -> Self {
        Y4mHeader {
            width,
            height,
            format,
            frame_rate,
            interlace: 'p',
            pixel_aspect: (1, 1),
            colorspace: colorspace_tag(format),
            alpha: false,
        }
    }

    /// Parses a header line (without its newline). `path` names the file in
    /// errors.
    pub fn parse(line: &[u8], path: &Path) -> Result<Y4mHeader> {
        let bad = |what: String| Error::input(path, what);
        let line = std::str::from_utf8(line).map_err(|_| bad("y4m header is not ASCII text".into()))?;
        let rest = line.strip_prefix("YUV4MPEG2").ok_or_else(|| {
            bad(format!(
                "not a y4m file: it starts with {:?}, not \"YUV4MPEG2\" (raw .yuv needs --width, --height, --pixel_format and --bitdepth)",
                line.chars().take(9).collect::<String>()
            ))
        })?;
        if !rest.is_empty() && !rest.starts_with(' ') {
            return Err(bad(format!("bad y4m magic \"YUV4MPEG2{}\"", first_word(rest))));
        }
        let (mut width, mut height) = (None, None);
        let mut frame_rate = (0, 0);
        let mut interlace = '?';
        let mut pixel_aspect = (0, 0);
        let mut c_tag: Option<String> = None;
        let mut xyscss: Option<String> = None;
        for tag in rest.split(' ').filter(|t| !t.is_empty()) {
            // The key is the first character, which need not be ASCII
            // (an unknown tag is skipped, whatever its letter).
            let (key, value) = tag.split_at(tag.chars().next().map_or(0, char::len_utf8));
            let bad_tag = |why: &str| bad(format!("bad header tag \"{tag}\": {why}"));
            match key {
                "W" => width = Some(parse_dimension(value).map_err(bad_tag)?),
                "H" => height = Some(parse_dimension(value).map_err(bad_tag)?),
                "F" => frame_rate = parse_ratio(value).ok_or_else(|| bad_tag("expected F<num>:<den>"))?,
                "A" => pixel_aspect = parse_ratio(value).ok_or_else(|| bad_tag("expected A<num>:<den>"))?,
                "I" => {
                    interlace = match value {
                        "p" | "t" | "b" | "m" | "?" => value.chars().next().unwrap_or('?'),
                        _ => return Err(bad_tag("expected Ip, It, Ib, Im or I?")),
                    }
                }
                "C" => c_tag = Some(value.to_owned()),
                "X" => {
                    if let Some(v) = value.strip_prefix("YSCSS=") {
                        xyscss = Some(v.to_ascii_lowercase());
                    }
                }
                // Unknown tags are skipped, as the format allows.
                _ => {}
            }
        }
        let width = width.ok_or_else(|| bad("y4m header has no width (W tag)".into()))?;
        let height = height.ok_or_else(|| bad("y4m header has no height (H tag)".into()))?;
        let colorspace = c_tag.or(xyscss).unwrap_or_else(|| "420jpeg".to_owned());
        let (format, alpha) = parse_colorspace(&colorspace)
            .map_err(|why| Error::input(path, format!("unsupported colorspace \"C{colorspace}\": {why}")))?;
        Ok(Y4mHeader { width, height, format, frame_rate, interlace, pixel_aspect, colorspace, alpha })
    }

    /// The header line, newline included.
    pub fn to_line(&self) -> String {
        let mut s = format!("YUV4MPEG2 W{} H{}", self.width, self.height);
        if self.frame_rate != (0, 0) {
            s += &format!(" F{}:{}", self.frame_rate.0, self.frame_rate.1);
        }
        s += &format!(" I{}", self.interlace);
        if self.pixel_aspect != (0, 0) {
            s += &format!(" A{}:{}", self.pixel_aspect.0, self.pixel_aspect.1);
        }
        s += &format!(" C{}\n", self.colorspace);
        s
    }

    /// Bytes of one frame's samples (alpha included), without the FRAME line.
    pub fn frame_bytes(&self) -> usize {
        let alpha = if self.alpha { self.width * self.height * self.format.bytes_per_sample() } else { 0 };
        packed_frame_size(self.format, self.width, self.height) + alpha
    }
}

fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or("")
}

fn parse_dimension(v: &str) -> std::result::Result<usize, &'static str> {
    let n: usize = v.parse().map_err(|_| "expected a positive integer")?;
    // Keeps width * height * 6 far from overflow on any platform.
    if n == 0 || n > 1 << 16 {
        return Err("size must be 1 to 65536");
    }
    Ok(n)
}

fn parse_ratio(v: &str) -> Option<(u32, u32)> {
    let (n, d) = v.split_once(':')?;
    Some((n.parse().ok()?, d.parse().ok()?))
}

/// Chroma and depth of a y4m colorspace (`C` value, or `XYSCSS=` lower-cased).
fn parse_colorspace(c: &str) -> std::result::Result<(PixelFormat, bool), String> {
    let lower = c.to_ascii_lowercase();
    let (chroma, alpha, depth) = match lower.as_str() {
        "420" | "420jpeg" | "420paldv" | "420mpeg2" => (Chroma::Yuv420, false, "8"),
        "422" => (Chroma::Yuv422, false, "8"),
        "444" => (Chroma::Yuv444, false, "8"),
        "444alpha" => (Chroma::Yuv444, true, "8"),
        "mono" => (Chroma::Yuv400, false, "8"),
        "411" => return Err("4:1:1 is not supported (convert to 4:2:2 or 4:4:4)".into()),
        other => {
            if let Some(d) = other.strip_prefix("420p") {
                (Chroma::Yuv420, false, d)
            } else if let Some(d) = other.strip_prefix("422p") {
                (Chroma::Yuv422, false, d)
            } else if let Some(d) = other.strip_prefix("444p") {
                (Chroma::Yuv444, false, d)
            } else if let Some(d) = other.strip_prefix("mono") {
                (Chroma::Yuv400, false, d)
            } else {
                return Err(
                    "known: 420jpeg, 420paldv, 420mpeg2, 420, 422, 444, 444alpha, mono, and 420p10, 422p12, 444p16, mono10, ... (9 to 16 bits)"
                        .into(),
                );
            }
        }
    };
    let bits: u8 = depth.parse().map_err(|_| format!("bad bit depth \"{depth}\""))?;
    let format =
        PixelFormat::new(chroma, bits).map_err(|_| format!("bit depth {bits} (8 to 16 are read)"))?;
    Ok((format, alpha))
}

/// The colorspace tag ffmpeg writes for `format` (without the `C`).
pub fn colorspace_tag(format: PixelFormat) -> String {
    let base = match format.chroma {
        Chroma::Yuv400 => "mono",
        Chroma::Yuv420 => "420",
        Chroma::Yuv422 => "422",
        Chroma::Yuv444 => "444",
    };
    match (format.chroma, format.bits) {
        (Chroma::Yuv420, 8) => "420jpeg".to_owned(),
        (_, 8) => base.to_owned(),
        (Chroma::Yuv400, b) => format!("mono{b}"),
        (_, b) => format!("{base}p{b}"),
    }
}

/// Reads and parses the stream header (`path` names it in errors).
fn read_header(source: &mut dyn Read, path: &Path) -> Result<Y4mHeader> {
    // The magic first, so that a raw file is called one, not a y4m file
    // with a broken header.
    let mut magic = [0u8; 9];
    let got = read_full(source, &mut magic, path)?;
    if got == 0 {
        return Err(Error::input(path, "empty file: no y4m header"));
    }
    if got < magic.len() || &magic != b"YUV4MPEG2" {
        return Err(Error::input(
            path,
            format!(
                "not a y4m file: it starts with {:?}, not \"YUV4MPEG2\" (raw .yuv needs --width, --height, --pixel_format and --bitdepth)",
                String::from_utf8_lossy(&magic[..got])
            ),
        ));
    }
    let rest = read_line(source, MAX_HEADER_LEN, path).map_err(|e| match e {
        LineError::Eof(_) => Error::input(path, "truncated y4m header (no newline)"),
        LineError::TooLong => {
            Error::input(path, format!("y4m header longer than {MAX_HEADER_LEN} bytes"))
        }
        LineError::Io(e) => e,
    })?;
    let mut line = magic.to_vec();
    line.extend_from_slice(&rest);
    Y4mHeader::parse(&line, path)
}

/// The reader's input: `source`, or a regular file mapped (see
/// `mapped.rs`), whose frames are lent in place.
macro_rules! input {
    ($reader:expr) => {
        match &mut $reader.mapped {
            Some(m) => m as &mut dyn Read,
            None => &mut $reader.source as &mut dyn Read,
        }
    };
}

/// y4m reader: a regular file mapped (frames lent in place), anything else
/// streamed.
pub struct Y4mReader<R: Read = Box<dyn Read + Send>> {
    source: R,
    /// Where `open` could map the file: then it is read from here and
    /// `source` is empty.
    mapped: Option<MappedInput>,
    path: PathBuf,
    header: Y4mHeader,
    frames_read: u32,
    frame: Vec<u8>,
    pool: PicturePool,
}

impl Y4mReader<Box<dyn Read + Send>> {
    /// Opens a y4m file (`-` for standard input). A regular file is mapped
    /// and its frames lent to the engine in place (`mapped.rs`); anything
    /// else is streamed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        match MappedInput::open(path) {
            Some(mut input) => {
                let header = read_header(&mut input, &display(path))?;
                let empty: Box<dyn Read + Send> = Box::new(std::io::empty());
                let mut reader = Y4mReader::with_header(empty, path, header);
                reader.mapped = Some(input);
                Ok(reader)
            }
            None => Y4mReader::new(super::open_source(path)?, path),
        }
    }
}

impl<R: Read> Y4mReader<R> {
    /// Reads the header from `source`; `path` names it in errors.
    pub fn new(mut source: R, path: impl AsRef<Path>) -> Result<Self> {
        let header = read_header(&mut source, &display(path.as_ref()))?;
        Ok(Y4mReader::with_header(source, path, header))
    }

    fn with_header(source: R, path: impl AsRef<Path>, header: Y4mHeader) -> Self {
        Y4mReader {
            source,
            mapped: None,
            path: display(path.as_ref()),
            header,
            frames_read: 0,
            frame: Vec::new(),
            pool: PicturePool::default(),
        }
    }

    pub fn header(&self) -> &Y4mHeader {
        &self.header
    }

    /// Reads the next frame into `picture` (which must have this stream's
    /// size and format). Returns false at a clean end of file.
    pub fn read_frame_into(&mut self, picture: &mut OwnedPicture) -> Result<bool> {
        let h = &self.header;
        if picture.width() != h.width || picture.height() != h.height || picture.format() != h.format {
            return Err(Error::invalid(format!(
                "picture is {}x{} {}, stream is {}x{} {}",
                picture.width(),
                picture.height(),
                picture.format(),
                h.width,
                h.height,
                h.format
            )));
        }
        if !self.read_frame_bytes()? {
            return Ok(false);
        }
        self.finish_frame(picture)?;
        Ok(true)
    }

    /// Reads the next frame's FRAME line and samples into `self.frame`;
    /// false at a clean end of file.
    fn read_frame_bytes(&mut self) -> Result<bool> {
        if !self.read_frame_line()? {
            return Ok(false);
        }
        let (index, want) = (self.frames_read, self.header.frame_bytes());
        let got = read_up_to(input!(self), &mut self.frame, want, &self.path)?;
        if got != want {
            return Err(self.truncated(index, got, want));
        }
        Ok(true)
    }

    /// Whether the next frame is read straight into a picture's planes.
    fn reads_direct(&self) -> bool {
        !self.header.alpha && self.header.frame_bytes() <= MAX_DIRECT_FRAME_BYTES
    }

    /// Reads the next frame straight into `picture`'s rows (large reads,
    /// no copy in between; see `reads_direct`); false at a clean end of file.
    fn read_frame_direct(&mut self, picture: &mut OwnedPicture) -> Result<bool> {
        if !self.read_frame_line()? {
            return Ok(false);
        }
        let (index, want) = (self.frames_read, self.header.frame_bytes());
        let format = self.header.format;
        let mut got = 0;
        for i in 0..format.chroma.plane_count() {
            let (w, h) = format.plane_size(i, self.header.width, self.header.height);
            let (row, stride) = (w * format.bytes_per_sample(), picture.stride(i));
            let plane = picture.plane_bytes_mut(i);
            // Rows without padding are one read.
            let (chunk, chunk_stride) = if row == stride { (row * h, row * h) } else { (row, stride) };
            for dst in plane.chunks_mut(chunk_stride) {
                let n = read_full(input!(self), &mut dst[..chunk], &self.path)?;
                got += n;
                if n < chunk {
                    // As read_up_to counts: every byte up to the end of the file.
                    return Err(self.truncated(index, got, want));
                }
            }
        }
        for i in 0..format.chroma.plane_count() {
            picture
                .finish_plane_read_in_place(i)
                .map_err(|e| Error::input(&self.path, format!("frame {index}: {}", super::strip_kind(&e))))?;
        }
        self.frames_read += 1;
        Ok(true)
    }

    /// The next frame of a mapped file, lent in place (copied into a pooled
    /// picture only where its planes cannot be borrowed as they lie); None
    /// at a clean end of file.
    fn lend_frame(&mut self) -> Result<Option<Arc<dyn PictureSource>>> {
        if !self.read_frame_line()? {
            return Ok(None);
        }
        let (index, want) = (self.frames_read, self.header.frame_bytes());
        let Some(input) = self.mapped.as_mut() else {
            return Err(Error::Internal("y4m: lending a frame from a file that is not mapped".into()));
        };
        let (start, got) = input.take(want);
        if got != want {
            return Err(self.truncated(index, got, want));
        }
        let size = (self.header.width, self.header.height);
        let source = input.frame(start, self.header.format, size, &self.path, index)?;
        self.frames_read += 1;
        Ok(Some(source))
    }

    /// Frame `index` ended after `got` of its `want` bytes.
    fn truncated(&self, index: u32, got: usize, want: usize) -> Error {
        Error::input(&self.path, format!("truncated frame {index}: {got} of {want} bytes"))
    }

    /// Reads the next FRAME line; false at a clean end of file.
    fn read_frame_line(&mut self) -> Result<bool> {
        let index = self.frames_read;
        let line = match read_line(input!(self), MAX_FRAME_HEADER_LEN, &self.path) {
            Ok(line) => line,
            Err(LineError::Eof(0)) => return Ok(false),
            Err(LineError::Eof(n)) => {
                return Err(Error::input(
                    &self.path,
                    format!("truncated frame {index}: file ends {n} bytes into its FRAME header"),
                ))
            }
            Err(LineError::TooLong) => {
                return Err(Error::input(
                    &self.path,
                    format!(
                    "frame {index}: FRAME header longer than {MAX_FRAME_HEADER_LEN} bytes (loss of framing?)"
                ),
                ))
            }
            Err(LineError::Io(e)) => return Err(e),
        };
        if !(line.starts_with(b"FRAME") && (line.len() == 5 || line[5] == b' ')) {
            let shown: String = String::from_utf8_lossy(&line[..line.len().min(16)]).into_owned();
            return Err(Error::input(
                &self.path,
                format!("frame {index}: expected a FRAME header, found {shown:?} (loss of framing: is the file's size or colorspace what the header says?)"),
            ));
        }
        Ok(true)
    }

    /// Fills `picture` from the frame just read.
    fn finish_frame(&mut self, picture: &mut OwnedPicture) -> Result<()> {
        fill_picture(picture, &self.frame, &self.path, self.frames_read)?;
        self.frames_read += 1;
        Ok(())
    }
}

impl<R: Read + Send> FrameReader for Y4mReader<R> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn width(&self) -> usize {
        self.header.width
    }
    fn height(&self) -> usize {
        self.header.height
    }
    fn format(&self) -> PixelFormat {
        self.header.format
    }
    fn read_frame(&mut self) -> Result<Option<OwnedPicture>> {
        if self.reads_direct() {
            let mut picture = OwnedPicture::new(self.header.format, self.header.width, self.header.height)?;
            return Ok(self.read_frame_direct(&mut picture)?.then_some(picture));
        }
        // The picture is made once its bytes are there (see read_up_to).
        if !self.read_frame_bytes()? {
            return Ok(None);
        }
        let mut picture = OwnedPicture::new(self.header.format, self.header.width, self.header.height)?;
        self.finish_frame(&mut picture)?;
        Ok(Some(picture))
    }
    fn frames_read(&self) -> u32 {
        self.frames_read
    }
    fn read_source(&mut self) -> Result<Option<Arc<dyn PictureSource>>> {
        if self.mapped.is_some() && !self.header.alpha {
            return self.lend_frame();
        }
        if !self.reads_direct() {
            return Ok(self.read_frame()?.map(|p| Arc::new(p) as Arc<dyn PictureSource>));
        }
        let mut picture = self.pool.take(self.header.format, self.header.width, self.header.height)?;
        match self.read_frame_direct(&mut picture) {
            Ok(true) => Ok(Some(self.pool.share(picture))),
            other => {
                self.pool.give_back(picture);
                other.map(|_| None)
            }
        }
    }
}

enum LineError {
    /// The source ended after this many bytes of the line.
    Eof(usize),
    TooLong,
    Io(Error),
}

/// Reads up to and including a newline; returns the line without it.
/// Byte at a time: headers are short and the source is buffered.
fn read_line(source: &mut dyn Read, max: usize, path: &Path) -> std::result::Result<Vec<u8>, LineError> {
    let mut line = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    loop {
        match source.read(&mut byte) {
            Ok(0) => return Err(LineError::Eof(line.len())),
            Ok(_) => {
                if byte[0] == b'\n' {
                    return Ok(line);
                }
                if line.len() >= max {
                    return Err(LineError::TooLong);
                }
                line.push(byte[0]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(LineError::Io(Error::io(path, e))),
        }
    }
}

/// Streaming y4m writer (for tests, tools and clip generation).
pub struct Y4mWriter<W: Write> {
    sink: W,
    header: Y4mHeader,
    row: Vec<u8>,
}

impl<W: Write> Y4mWriter<W> {
    /// Writes `header` to `sink`.
    pub fn new(mut sink: W, header: Y4mHeader) -> Result<Self> {
        if header.alpha {
            return Err(Error::NotSupported("writing y4m with an alpha plane".into()));
        }
        sink.write_all(header.to_line().as_bytes()).map_err(|e| Error::io("<y4m writer>", e))?;
        Ok(Y4mWriter { sink, header, row: Vec::new() })
    }

    /// Writes one frame; `picture` must match the header.
    pub fn write_frame(&mut self, picture: &Picture<'_>) -> Result<()> {
        let h = &self.header;
        if picture.width() != h.width || picture.height() != h.height || picture.format() != h.format {
            return Err(Error::invalid(format!(
                "picture is {}x{} {}, y4m stream is {}x{} {}",
                picture.width(),
                picture.height(),
                picture.format(),
                h.width,
                h.height,
                h.format
            )));
        }
        let io = |e| Error::io("<y4m writer>", e);
        self.sink.write_all(b"FRAME\n").map_err(io)?;
        for i in 0..picture.plane_count() {
            let plane = picture.plane(i);
            for y in 0..plane.height() {
                self.row.clear();
                if plane.bytes_per_sample() == 1 {
                    self.row.extend_from_slice(plane.row_u8(y));
                } else {
                    for &v in plane.row_u16(y) {
                        self.row.extend_from_slice(&v.to_le_bytes());
                    }
                }
                self.sink.write_all(&self.row).map_err(io)?;
            }
        }
        Ok(())
    }

    pub fn into_inner(self) -> W {
        self.sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colorspaces() {
        let p = Path::new("t.y4m");
        let f =
            |c: &str| Y4mHeader::parse(format!("YUV4MPEG2 W4 H2 F25:1 C{c}").as_bytes(), p).map(|h| h.format);
        assert_eq!(f("420p10").unwrap(), PixelFormat::new(Chroma::Yuv420, 10).unwrap());
        assert_eq!(f("444p16").unwrap(), PixelFormat::new(Chroma::Yuv444, 16).unwrap());
        assert_eq!(f("mono12").unwrap(), PixelFormat::new(Chroma::Yuv400, 12).unwrap());
        assert_eq!(f("420paldv").unwrap(), PixelFormat::new(Chroma::Yuv420, 8).unwrap());
        assert!(f("411").is_err());
        assert!(f("420p17").is_err());
        assert!(f("yuv").is_err());
        for fmt in [(Chroma::Yuv420, 8), (Chroma::Yuv422, 10), (Chroma::Yuv444, 16), (Chroma::Yuv400, 12)] {
            let fmt = PixelFormat::new(fmt.0, fmt.1).unwrap();
            assert_eq!(parse_colorspace(&colorspace_tag(fmt)).unwrap().0, fmt);
        }
    }

    /// A y4m stream of `frames` frames whose bytes vary from frame to frame.
    fn stream(colorspace: &str, width: usize, height: usize, frames: usize) -> (Vec<u8>, Y4mHeader) {
        let line = format!("YUV4MPEG2 W{width} H{height} F25:1 Ip C{colorspace}\n");
        let header = Y4mHeader::parse(line.trim_end().as_bytes(), Path::new("t.y4m")).unwrap();
        let mut bytes = line.into_bytes();
        let mut seed = 12345u32;
        for _ in 0..frames {
            bytes.extend_from_slice(b"FRAME\n");
            for _ in 0..header.frame_bytes() / header.format.bytes_per_sample() {
                seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                let v = ((seed >> 16) as u16) & ((1u16 << header.format.bits) - 1);
                bytes.extend_from_slice(&v.to_le_bytes()[..header.format.bytes_per_sample()]);
            }
        }
        (bytes, header)
    }

    #[test]
    fn pooled_pictures_match_fresh_ones() {
        // Width 70: padded rows; 64: rows read as one plane.
        for (colorspace, width) in [("420jpeg", 70), ("420p10", 70), ("444p12", 64), ("mono", 64)] {
            let (bytes, header) = stream(colorspace, width, 9, 4);
            let mut pooled = Y4mReader::new(&bytes[..], "t.y4m").unwrap();
            let mut first_storage = None;
            let frame_bytes = header.frame_bytes();
            let first_frame = bytes.len() - 4 * (b"FRAME\n".len() + frame_bytes);
            for frame in 0..4 {
                // Filled from the packed bytes, as the reader did before it read in place.
                let mut want = OwnedPicture::new(header.format, header.width, header.height).unwrap();
                let at = first_frame + frame * (b"FRAME\n".len() + frame_bytes) + b"FRAME\n".len();
                fill_picture(&mut want, &bytes[at..at + frame_bytes], Path::new("t.y4m"), frame as u32).unwrap();
                let got = pooled.read_source().unwrap().unwrap();
                let got = got.host().unwrap();
                for i in 0..want.view().plane_count() {
                    // Padding included: a reused picture's must stay as a fresh one's.
                    assert_eq!(got.plane(i).data(), want.view().plane(i).data(), "{colorspace} frame {frame} plane {i}");
                }
                let storage = got.plane(0).data().as_ptr();
                match first_storage {
                    None => first_storage = Some(storage),
                    Some(first) => assert_eq!(storage, first, "{colorspace}: frame {frame} not in the pooled picture"),
                }
            }
            assert!(pooled.read_source().unwrap().is_none());
        }
    }

    #[test]
    fn direct_reads_report_depth_and_truncation() {
        let (mut bytes, header) = stream("420p10", 70, 9, 2);
        let second = bytes.len() - header.frame_bytes();
        // Frame 1, plane 0, sample (3, 2) = 1024.
        let at = second + 2 * (2 * 70 + 3);
        bytes[at..at + 2].copy_from_slice(&1024u16.to_le_bytes());
        let mut reader = Y4mReader::new(&bytes[..], "t.y4m").unwrap();
        assert!(reader.read_source().unwrap().is_some());
        let e = reader.read_source().err().unwrap().to_string();
        assert!(e.contains("frame 1: plane 0 sample (3,2) = 1024 exceeds 10 bits"), "{e}");

        let (bytes, header) = stream("420jpeg", 70, 9, 2);
        let cut = bytes.len() - 100;
        let mut reader = Y4mReader::new(&bytes[..cut], "t.y4m").unwrap();
        assert!(reader.read_source().unwrap().is_some());
        let e = reader.read_source().err().unwrap().to_string();
        let want = header.frame_bytes();
        assert!(e.contains(&format!("truncated frame 1: {} of {want} bytes", want - 100)), "{e}");
    }
}
