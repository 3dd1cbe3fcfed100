//! Pictures as the scoring core sees them: a pixel format and up to three
//! borrowed planes with their own strides.
//!
//! The core never owns the memory it scores. A [`Picture`] borrows planes from
//! an [`OwnedPicture`] (CLI, tests), or from memory an import layer maps
//! (AVFrame buffers, dma-bufs). Samples are `u8` at 8 bits and native-endian
//! `u16` above, as in libvmaf's `VmafPicture`.
//!
//! This room is the meeting point of the data path: the readers, the
//! importers and the filter make pictures ([`PictureSource`], host planes
//! here, device planes in [`device_frame`]); the engine and the device lanes
//! read them. It points at nothing but the crate's error type.

pub(crate) mod device_frame;
mod host_copies;
mod source;

pub use device_frame::{DevPlane, DeviceFrame, DeviceKind, DeviceMemoryId};
pub use host_copies::{HostCopies, HostCopy};
pub use source::PictureSource;

use crate::{Error, Result};

/// Chroma subsampling of a planar picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Chroma {
    /// Luma only (gray).
    Yuv400,
    Yuv420,
    Yuv422,
    Yuv444,
}

impl Chroma {
    /// log2 of the horizontal and vertical chroma subsampling.
    pub fn shift(self) -> (u32, u32) {
        match self {
            Chroma::Yuv400 | Chroma::Yuv444 => (0, 0),
            Chroma::Yuv420 => (1, 1),
            Chroma::Yuv422 => (1, 0),
        }
    }
    pub fn plane_count(self) -> usize {
        if self == Chroma::Yuv400 {
            1
        } else {
            3
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Chroma::Yuv400 => "400",
            Chroma::Yuv420 => "420",
            Chroma::Yuv422 => "422",
            Chroma::Yuv444 => "444",
        }
    }
}

/// Pixel format: subsampling and bits per component (8..=16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PixelFormat {
    pub chroma: Chroma,
    pub bits: u8,
}

impl PixelFormat {
    pub fn new(chroma: Chroma, bits: u8) -> Result<Self> {
        if !(8..=16).contains(&bits) {
            return Err(Error::NotSupported(format!(
                "bit depth {bits} (vmafx scores 8 to 16 bits per component)"
            )));
        }
        Ok(PixelFormat { chroma, bits })
    }
    /// Bytes per sample: 1 at 8 bits, 2 above.
    pub fn bytes_per_sample(self) -> usize {
        if self.bits > 8 {
            2
        } else {
            1
        }
    }
    /// Width and height of plane `index` for a picture of `width` x `height`
    /// (chroma rounded up, as libvmaf and y4m do).
    pub fn plane_size(self, index: usize, width: usize, height: usize) -> (usize, usize) {
        if index == 0 {
            return (width, height);
        }
        let (sx, sy) = self.chroma.shift();
        ((width + (1 << sx) - 1) >> sx, (height + (1 << sy) - 1) >> sy)
    }
}

impl std::fmt::Display for PixelFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.chroma == Chroma::Yuv400 {
            write!(f, "gray")?;
        } else {
            write!(f, "yuv{}p", self.chroma.name())?;
        }
        if self.bits > 8 {
            write!(f, "{}", self.bits)?;
        }
        Ok(())
    }
}

/// One plane: `height` rows of `width` samples, row `y` starting at byte
/// `y * stride` of `data`.
///
/// Invariants (checked by [`PlaneView::new`]): `stride >= width * bytes`,
/// `data` covers the last row, and for 2-byte samples `data` and `stride`
/// are 2-byte aligned so rows can be read as `&[u16]`.
#[derive(Clone, Copy, Debug)]
pub struct PlaneView<'a> {
    data: &'a [u8],
    stride: usize,
    width: usize,
    height: usize,
    bytes_per_sample: usize,
}

impl<'a> PlaneView<'a> {
    pub fn new(
        data: &'a [u8],
        stride: usize,
        width: usize,
        height: usize,
        bytes_per_sample: usize,
    ) -> Result<Self> {
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("empty plane {width}x{height}")));
        }
        let row_bytes = width * bytes_per_sample;
        if stride < row_bytes {
            return Err(Error::invalid(format!(
                "stride {stride} is shorter than a row of {width} samples ({row_bytes} bytes)"
            )));
        }
        let need = (height - 1) * stride + row_bytes;
        if data.len() < need {
            return Err(Error::invalid(format!(
                "plane of {width}x{height} with stride {stride} needs {need} bytes, buffer has {}",
                data.len()
            )));
        }
        if bytes_per_sample == 2 && (data.as_ptr() as usize % 2 != 0 || stride % 2 != 0) {
            return Err(Error::NotSupported(
                "16-bit plane not 2-byte aligned (start or stride is odd)".into(),
            ));
        }
        Ok(PlaneView { data, stride, width, height, bytes_per_sample })
    }

    pub fn width(&self) -> usize {
        self.width
    }
    pub fn height(&self) -> usize {
        self.height
    }
    /// Distance between rows, in bytes.
    pub fn stride(&self) -> usize {
        self.stride
    }
    pub fn bytes_per_sample(&self) -> usize {
        self.bytes_per_sample
    }
    /// Raw bytes from the first sample to the end of the last row.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Row `y` as bytes (8-bit samples).
    #[inline]
    pub fn row_u8(&self, y: usize) -> &'a [u8] {
        debug_assert_eq!(self.bytes_per_sample, 1);
        let start = y * self.stride;
        &self.data[start..start + self.width]
    }

    /// Row `y` as 16-bit samples.
    #[inline]
    pub fn row_u16(&self, y: usize) -> &'a [u16] {
        debug_assert_eq!(self.bytes_per_sample, 2);
        let start = y * self.stride;
        let bytes = &self.data[start..start + 2 * self.width];
        // SAFETY: `new` checked that data and stride are 2-byte aligned, so
        // `bytes` starts on a u16 boundary; its length is 2 * width; u16 has
        // no invalid bit patterns.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const u16, self.width) }
    }

    /// Sample at (x, y) widened to u32, whatever the depth.
    #[inline]
    pub fn sample(&self, x: usize, y: usize) -> u32 {
        if self.bytes_per_sample == 1 {
            self.row_u8(y)[x] as u32
        } else {
            self.row_u16(y)[x] as u32
        }
    }
}

/// A picture the core can score: format, size and borrowed planes.
#[derive(Clone, Copy, Debug)]
pub struct Picture<'a> {
    format: PixelFormat,
    width: usize,
    height: usize,
    planes: [Option<PlaneView<'a>>; 3],
}

impl<'a> Picture<'a> {
    /// Builds a picture from plane views; checks each plane's size against
    /// the format.
    pub fn new(
        format: PixelFormat,
        width: usize,
        height: usize,
        planes: &[PlaneView<'a>],
    ) -> Result<Self> {
        let n = format.chroma.plane_count();
        if planes.len() != n {
            return Err(Error::invalid(format!(
                "{format} needs {n} planes, got {}",
                planes.len()
            )));
        }
        let mut out = [None; 3];
        for (i, p) in planes.iter().enumerate() {
            let (w, h) = format.plane_size(i, width, height);
            if p.width != w || p.height != h || p.bytes_per_sample != format.bytes_per_sample() {
                return Err(Error::invalid(format!(
                    "plane {i} of a {width}x{height} {format} picture must be {w}x{h} with {} byte samples, got {}x{} with {}",
                    format.bytes_per_sample(),
                    p.width,
                    p.height,
                    p.bytes_per_sample
                )));
            }
            out[i] = Some(*p);
        }
        Ok(Picture { format, width, height, planes: out })
    }

    pub fn format(&self) -> PixelFormat {
        self.format
    }
    pub fn bits(&self) -> u32 {
        self.format.bits as u32
    }
    pub fn width(&self) -> usize {
        self.width
    }
    pub fn height(&self) -> usize {
        self.height
    }
    /// Plane `i` (0 = Y, 1 = Cb, 2 = Cr). Panics if the format lacks it.
    pub fn plane(&self, i: usize) -> PlaneView<'a> {
        self.planes[i].expect("plane index beyond the format's plane count")
    }
    pub fn luma(&self) -> PlaneView<'a> {
        self.plane(0)
    }
    pub fn plane_count(&self) -> usize {
        self.format.chroma.plane_count()
    }
}

/// Heap pictures for the CLI and tests. Rows are padded to a multiple of 64
/// bytes, like libvmaf's picture allocator (SIMD loads stay inside the row).
#[derive(Clone, Debug)]
pub struct OwnedPicture {
    format: PixelFormat,
    width: usize,
    height: usize,
    strides: [usize; 3],
    offsets: [usize; 3],
    // Cache-line storage: every plane, and with 64-byte strides every row,
    // starts on a cache line (a Vec<u16> of this size comes from mmap at 16
    // bytes past a page, and then each 64-byte SIMD load of a row would
    // touch two lines). u16s within, so 16-bit rows read as &[u16].
    storage: Vec<Line>,
}

/// 64 bytes, 64-aligned: [`OwnedPicture`]'s unit of storage.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([u16; 32]);

/// An error naming the first sample of `picture` beyond its bit depth
/// (16-bit samples only: 8-bit ones cannot be).
pub(crate) fn check_sample_depth(picture: &Picture<'_>) -> Result<()> {
    if picture.format().bytes_per_sample() == 1 {
        return Ok(());
    }
    for i in 0..picture.plane_count() {
        let plane = picture.plane(i);
        for y in 0..plane.height() {
            let row = plane.row_u16(y);
            let any = row.iter().fold(0u16, |a, &v| a | v);
            check_depth(i, y, row, any, picture.format().bits)?;
        }
    }
    Ok(())
}

/// Row `y` of plane `i`, whose samples OR to `any`: an error naming the
/// first sample beyond `bits` (searched for only then).
fn check_depth(i: usize, y: usize, row: &[u16], any: u16, bits: u8) -> Result<()> {
    if bits < 16 && any >> bits != 0 {
        let x = row.iter().position(|v| v >> bits != 0).unwrap_or(0);
        return Err(Error::invalid(format!("plane {i} sample ({x},{y}) = {} exceeds {bits} bits", row[x])));
    }
    Ok(())
}

impl OwnedPicture {
    pub fn new(format: PixelFormat, width: usize, height: usize) -> Result<Self> {
        if width == 0 || height == 0 {
            return Err(Error::invalid(format!("picture size {width}x{height}")));
        }
        let bps = format.bytes_per_sample();
        let mut strides = [0; 3];
        let mut offsets = [0; 3];
        let mut total = 0usize;
        for i in 0..format.chroma.plane_count() {
            let (w, h) = format.plane_size(i, width, height);
            let stride = (w * bps + 63) & !63;
            strides[i] = stride;
            offsets[i] = total;
            total += stride * h;
        }
        Ok(OwnedPicture {
            format,
            width,
            height,
            strides,
            offsets,
            storage: vec![Line([0; 32]); total.div_ceil(64)],
        })
    }

    pub fn format(&self) -> PixelFormat {
        self.format
    }
    pub fn width(&self) -> usize {
        self.width
    }
    pub fn height(&self) -> usize {
        self.height
    }
    pub fn stride(&self, plane: usize) -> usize {
        self.strides[plane]
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `Line` is 64 plain bytes (repr(C) [u16; 32], no padding).
        unsafe { std::slice::from_raw_parts(self.storage.as_ptr() as *const u8, self.storage.len() * 64) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, with unique access.
        unsafe { std::slice::from_raw_parts_mut(self.storage.as_mut_ptr() as *mut u8, self.storage.len() * 64) }
    }

    /// The storage as u16s (any bit pattern is a valid u16).
    fn words_mut(&mut self) -> &mut [u16] {
        // SAFETY: as in `bytes`; Line is 64-aligned, so u16-aligned.
        unsafe { std::slice::from_raw_parts_mut(self.storage.as_mut_ptr() as *mut u16, self.storage.len() * 32) }
    }

    /// Plane `i` as mutable bytes, `stride(i)` bytes per row.
    pub fn plane_bytes_mut(&mut self, i: usize) -> &mut [u8] {
        let (_, h) = self.format.plane_size(i, self.width, self.height);
        let (off, len) = (self.offsets[i], self.strides[i] * h);
        &mut self.bytes_mut()[off..off + len]
    }

    /// Writes sample (x, y) of plane `i`.
    pub fn set(&mut self, i: usize, x: usize, y: usize, v: u16) {
        let stride = self.strides[i];
        let bps = self.format.bytes_per_sample();
        let p = self.plane_bytes_mut(i);
        if bps == 1 {
            p[y * stride + x] = v as u8;
        } else {
            p[y * stride + 2 * x..y * stride + 2 * x + 2].copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// Copies `height` rows of packed samples (little-endian for 16 bits, as
    /// in y4m and raw yuv files) into plane `i`.
    pub fn fill_plane_from_packed(&mut self, i: usize, packed: &[u8]) -> Result<()> {
        let (w, h) = self.format.plane_size(i, self.width, self.height);
        let bps = self.format.bytes_per_sample();
        let row = w * bps;
        if packed.len() != row * h {
            return Err(Error::invalid(format!(
                "plane {i}: {} bytes given, {} expected",
                packed.len(),
                row * h
            )));
        }
        let stride = self.strides[i];
        let bits = self.format.bits;
        if bps == 1 {
            let dst = self.plane_bytes_mut(i);
            for (d, s) in dst.chunks_mut(stride).zip(packed.chunks_exact(row)) {
                d[..row].copy_from_slice(s);
            }
            return Ok(());
        }
        // 16-bit storage: rows start on u16 boundaries (strides are
        // multiples of 64 bytes), so write u16s directly; check the depth
        // once per row with an OR of the samples (the slow search for the
        // offending sample runs only on error).
        let (off, stride16) = (self.offsets[i] / 2, stride / 2);
        let plane = &mut self.words_mut()[off..off + stride16 * h];
        for (y, (d, s)) in plane.chunks_mut(stride16).zip(packed.chunks_exact(row)).enumerate() {
            let mut any = 0u16;
            for (dv, sv) in d[..w].iter_mut().zip(s.chunks_exact(2)) {
                let v = u16::from_le_bytes([sv[0], sv[1]]);
                any |= v;
                *dv = v;
            }
            check_depth(i, y, &d[..w], any, bits)?;
        }
        Ok(())
    }

    /// After plane `i`'s rows were written as little-endian bytes in place
    /// (a reader's direct read): puts the samples in host order and checks
    /// the bit depth, as [`OwnedPicture::fill_plane_from_packed`] does.
    pub(crate) fn finish_plane_read_in_place(&mut self, i: usize) -> Result<()> {
        if self.format.bytes_per_sample() == 1 {
            return Ok(());
        }
        let (w, h) = self.format.plane_size(i, self.width, self.height);
        let bits = self.format.bits;
        let (off, stride16) = (self.offsets[i] / 2, self.strides[i] / 2);
        let plane = &mut self.words_mut()[off..off + stride16 * h];
        for (y, row) in plane.chunks_mut(stride16).enumerate() {
            let mut any = 0u16;
            for v in &mut row[..w] {
                *v = u16::from_le(*v);
                any |= *v;
            }
            check_depth(i, y, &row[..w], any, bits)?;
        }
        Ok(())
    }

    /// An owned copy of `picture` (its samples row by row, into this
    /// type's padded rows).
    pub fn copy_of(picture: &Picture<'_>) -> Result<Self> {
        let mut owned = OwnedPicture::new(picture.format(), picture.width(), picture.height())?;
        for i in 0..picture.plane_count() {
            let src = picture.plane(i);
            let row = src.width() * src.bytes_per_sample();
            let stride = owned.strides[i];
            let dst = owned.plane_bytes_mut(i);
            for y in 0..src.height() {
                let from = &src.data()[y * src.stride()..y * src.stride() + row];
                dst[y * stride..y * stride + row].copy_from_slice(from);
            }
        }
        Ok(owned)
    }

    /// Borrowed view of this picture.
    pub fn view(&self) -> Picture<'_> {
        let bps = self.format.bytes_per_sample();
        let bytes = self.bytes();
        let n = self.format.chroma.plane_count();
        let mut planes = [None; 3];
        for (i, slot) in planes.iter_mut().enumerate().take(n) {
            let (w, h) = self.format.plane_size(i, self.width, self.height);
            let len = self.strides[i] * h;
            let data = &bytes[self.offsets[i]..self.offsets[i] + len];
            *slot = Some(PlaneView {
                data,
                stride: self.strides[i],
                width: w,
                height: h,
                bytes_per_sample: bps,
            });
        }
        Picture { format: self.format, width: self.width, height: self.height, planes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_sizes_round_chroma_up() {
        let f = PixelFormat::new(Chroma::Yuv420, 10).unwrap();
        assert_eq!(f.plane_size(1, 7, 5), (4, 3));
        let f = PixelFormat::new(Chroma::Yuv422, 8).unwrap();
        assert_eq!(f.plane_size(2, 7, 5), (4, 5));
    }

    #[test]
    fn owned_rows_start_on_cache_lines() {
        // Large enough for the allocator to map it (16 bytes past a page
        // for a plain Vec<u16>), in both depths and a clone.
        for bits in [8, 10] {
            let f = PixelFormat::new(Chroma::Yuv420, bits).unwrap();
            let p = OwnedPicture::new(f, 1919, 1081).unwrap();
            for pic in [p.clone(), p] {
                let v = pic.view();
                for i in 0..v.plane_count() {
                    let plane = v.plane(i);
                    for y in [0, 1, plane.height() - 1] {
                        let row = plane.data()[y * plane.stride()..].as_ptr();
                        assert_eq!(row as usize % 64, 0, "{bits}-bit plane {i} row {y}");
                    }
                }
            }
        }
    }

    #[test]
    fn plane_view_checks_extent_and_alignment() {
        let buf = vec![0u8; 100];
        assert!(PlaneView::new(&buf, 10, 10, 10, 1).is_ok());
        assert!(PlaneView::new(&buf, 10, 10, 11, 1).is_err());
        assert!(PlaneView::new(&buf, 9, 10, 2, 1).is_err());
        assert!(PlaneView::new(&buf[1..], 10, 4, 2, 2).is_err() || (buf[1..].as_ptr() as usize) % 2 == 0);
    }

    #[test]
    fn owned_roundtrip_16bit() {
        let f = PixelFormat::new(Chroma::Yuv444, 16).unwrap();
        let mut p = OwnedPicture::new(f, 3, 2).unwrap();
        p.set(0, 2, 1, 65535);
        p.set(2, 0, 0, 7);
        let v = p.view();
        assert_eq!(v.luma().sample(2, 1), 65535);
        assert_eq!(v.plane(2).row_u16(0)[0], 7);
    }
}
