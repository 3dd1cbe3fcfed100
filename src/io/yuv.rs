//! Raw planar yuv files: frames of packed planes (Y, then Cb, Cr), no
//! header, as libvmaf's `tools/yuv_input.c` reads them with `--width
//! --height --pixel_format --bitdepth`.
//!
//! Pixel formats are given as libvmaf's tool takes them (`420`, `422`,
//! `444` plus a bit depth) or by ffmpeg's names (`yuv420p`, `yuv422p10le`,
//! `gray16le`, ...). Samples above 8 bits are 16-bit little-endian. Chroma of
//! odd sizes is ceil(w/2) wide, as ffmpeg writes it (libvmaf's tool reads
//! floor there and loses framing).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::mapped::MappedInput;
use super::{display, fill_picture, packed_frame_size, read_up_to, FrameReader};
use crate::picture::{Chroma, OwnedPicture, PictureSource, PixelFormat};
use crate::{Error, Result};

/// Size and format of a raw yuv stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFormat {
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
}

impl RawFormat {
    /// From the libvmaf tool's four options. `pixel_format` is `420`, `422`
    /// or `444` (or an ffmpeg name); `bitdepth` may be omitted when the
    /// ffmpeg name carries it, and must agree with it when both are given.
    pub fn from_options(
        width: usize,
        height: usize,
        pixel_format: &str,
        bitdepth: Option<u32>,
    ) -> Result<RawFormat> {
        if width == 0 || height == 0 || width > 1 << 16 || height > 1 << 16 {
            return Err(Error::invalid(format!("raw yuv size {width}x{height} (1 to 65536 each)")));
        }
        let (chroma, named_bits) = parse_pixel_format(pixel_format)?;
        let bits = match (named_bits, bitdepth) {
            (Some(n), Some(b)) if n as u32 != b => {
                return Err(Error::invalid(format!(
                    "pixel format {pixel_format} is {n}-bit, but --bitdepth is {b}"
                )))
            }
            (Some(n), _) => n as u32,
            (None, Some(b)) => b,
            (None, None) => {
                return Err(Error::invalid(format!(
                    "pixel format {pixel_format} needs a bit depth (--bitdepth 8, 10, 12 or 16)"
                )))
            }
        };
        if !(8..=16).contains(&bits) {
            return Err(Error::NotSupported(format!("bit depth {bits} (8 to 16 are read)")));
        }
        Ok(RawFormat { width, height, format: PixelFormat::new(chroma, bits as u8)? })
    }

    /// Bytes of one frame.
    pub fn frame_bytes(&self) -> usize {
        packed_frame_size(self.format, self.width, self.height)
    }
}

/// Chroma and, for ffmpeg names, bit depth of a pixel format name.
pub fn parse_pixel_format(name: &str) -> Result<(Chroma, Option<u8>)> {
    let unknown = || {
        Error::invalid(format!(
            "pixel format \"{name}\" (expected 420, 422, 444, or yuv420p, yuv422p10le, yuv444p16le, gray, gray10le, ...)"
        ))
    };
    match name {
        "420" => return Ok((Chroma::Yuv420, None)),
        "422" => return Ok((Chroma::Yuv422, None)),
        "444" => return Ok((Chroma::Yuv444, None)),
        "400" => return Ok((Chroma::Yuv400, None)),
        _ => {}
    }
    let (chroma, rest) = if let Some(r) = name.strip_prefix("yuv420p") {
        (Chroma::Yuv420, r)
    } else if let Some(r) = name.strip_prefix("yuvj420p") {
        (Chroma::Yuv420, r)
    } else if let Some(r) = name.strip_prefix("yuv422p") {
        (Chroma::Yuv422, r)
    } else if let Some(r) = name.strip_prefix("yuvj422p") {
        (Chroma::Yuv422, r)
    } else if let Some(r) = name.strip_prefix("yuv444p") {
        (Chroma::Yuv444, r)
    } else if let Some(r) = name.strip_prefix("yuvj444p") {
        (Chroma::Yuv444, r)
    } else if let Some(r) = name.strip_prefix("gray") {
        (Chroma::Yuv400, r)
    } else {
        return Err(unknown());
    };
    if rest.is_empty() {
        return Ok((chroma, Some(8)));
    }
    let digits = rest.strip_suffix("le").ok_or_else(|| {
        if rest.ends_with("be") {
            Error::NotSupported(format!("big-endian pixel format {name} (use the le variant)"))
        } else {
            unknown()
        }
    })?;
    let bits: u8 = digits.parse().map_err(|_| unknown())?;
    if !(9..=16).contains(&bits) {
        return Err(unknown());
    }
    Ok((chroma, Some(bits)))
}

/// Raw yuv reader: a regular file mapped (frames lent in place), anything
/// else streamed.
pub struct YuvReader<R: Read = Box<dyn Read + Send>> {
    source: R,
    /// Where `open` could map the file: then it is read from here and
    /// `source` is empty (see `mapped.rs`).
    mapped: Option<MappedInput>,
    path: PathBuf,
    raw: RawFormat,
    frames_read: u32,
    frame: Vec<u8>,
}

impl YuvReader<Box<dyn Read + Send>> {
    /// Opens a raw yuv file (`-` for standard input). A regular file is
    /// mapped and its frames lent to the engine in place (`mapped.rs`);
    /// anything else is streamed.
    pub fn open(path: impl AsRef<Path>, raw: RawFormat) -> Result<Self> {
        let path = path.as_ref();
        match MappedInput::open(path) {
            Some(input) => {
                let empty: Box<dyn Read + Send> = Box::new(std::io::empty());
                let mut reader = YuvReader::new(empty, path, raw)?;
                reader.mapped = Some(input);
                Ok(reader)
            }
            None => YuvReader::new(super::open_source(path)?, path, raw),
        }
    }
}

impl<R: Read> YuvReader<R> {
    pub fn new(source: R, path: impl AsRef<Path>, raw: RawFormat) -> Result<Self> {
        Ok(YuvReader {
            source,
            mapped: None,
            path: display(path.as_ref()),
            raw,
            frames_read: 0,
            frame: Vec::new(),
        })
    }

    pub fn raw_format(&self) -> RawFormat {
        self.raw
    }

    /// Reads the next frame into `picture`; false at a clean end of file.
    pub fn read_frame_into(&mut self, picture: &mut OwnedPicture) -> Result<bool> {
        let r = self.raw;
        if picture.width() != r.width || picture.height() != r.height || picture.format() != r.format {
            return Err(Error::invalid(format!(
                "picture is {}x{} {}, stream is {}x{} {}",
                picture.width(),
                picture.height(),
                picture.format(),
                r.width,
                r.height,
                r.format
            )));
        }
        if !self.read_frame_bytes()? {
            return Ok(false);
        }
        self.finish_frame(picture)?;
        Ok(true)
    }

    /// Reads the next frame's samples into `self.frame`; false at a clean
    /// end of file.
    fn read_frame_bytes(&mut self) -> Result<bool> {
        let (r, index) = (self.raw, self.frames_read);
        let want = r.frame_bytes();
        let input: &mut dyn Read = match &mut self.mapped {
            Some(m) => m,
            None => &mut self.source,
        };
        let got = read_up_to(input, &mut self.frame, want, &self.path)?;
        if got == 0 {
            return Ok(false);
        }
        if got != want {
            return Err(self.truncated(index, got, want));
        }
        Ok(true)
    }

    /// Frame `index` ended after `got` of its `want` bytes.
    fn truncated(&self, index: u32, got: usize, want: usize) -> Error {
        let r = self.raw;
        Error::input(
            &self.path,
            format!("truncated frame {index}: {got} of {want} bytes (is the file {}x{} {}?)", r.width, r.height, r.format),
        )
    }

    /// Fills `picture` from the frame just read.
    fn finish_frame(&mut self, picture: &mut OwnedPicture) -> Result<()> {
        fill_picture(picture, &self.frame, &self.path, self.frames_read)?;
        self.frames_read += 1;
        Ok(())
    }
}

impl<R: Read + Send> FrameReader for YuvReader<R> {
    fn path(&self) -> &Path {
        &self.path
    }
    fn width(&self) -> usize {
        self.raw.width
    }
    fn height(&self) -> usize {
        self.raw.height
    }
    fn format(&self) -> PixelFormat {
        self.raw.format
    }
    fn read_frame(&mut self) -> Result<Option<OwnedPicture>> {
        // The picture is made once its bytes are there (see read_up_to).
        if !self.read_frame_bytes()? {
            return Ok(None);
        }
        let mut picture = OwnedPicture::new(self.raw.format, self.raw.width, self.raw.height)?;
        self.finish_frame(&mut picture)?;
        Ok(Some(picture))
    }
    fn frames_read(&self) -> u32 {
        self.frames_read
    }
    fn read_source(&mut self) -> Result<Option<Arc<dyn PictureSource>>> {
        let Some(input) = self.mapped.as_mut() else {
            return Ok(self.read_frame()?.map(|p| Arc::new(p) as Arc<dyn PictureSource>));
        };
        let (r, index) = (self.raw, self.frames_read);
        let want = r.frame_bytes();
        let (start, got) = input.take(want);
        if got == 0 {
            return Ok(None);
        }
        if got != want {
            return Err(self.truncated(index, got, want));
        }
        let source = input.frame(start, r.format, (r.width, r.height), &self.path, index)?;
        self.frames_read += 1;
        Ok(Some(source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_format_names() {
        assert_eq!(parse_pixel_format("420").unwrap(), (Chroma::Yuv420, None));
        assert_eq!(parse_pixel_format("yuv422p10le").unwrap(), (Chroma::Yuv422, Some(10)));
        assert_eq!(parse_pixel_format("yuv444p").unwrap(), (Chroma::Yuv444, Some(8)));
        assert_eq!(parse_pixel_format("gray16le").unwrap(), (Chroma::Yuv400, Some(16)));
        assert!(parse_pixel_format("yuv420p10be").is_err());
        assert!(parse_pixel_format("nv12").is_err());
        assert!(RawFormat::from_options(8, 8, "yuv420p10le", Some(8)).is_err());
        assert_eq!(RawFormat::from_options(8, 8, "420", Some(12)).unwrap().format.bits, 12);
        assert!(RawFormat::from_options(8, 8, "420", None).is_err());
    }
}
