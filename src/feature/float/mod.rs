//! libvmaf 3.2.0's float feature extractors (built there with
//! `-Denable_float=true`): `float_psnr`, `float_ansnr`, `float_moment`,
//! `float_motion`, `float_vif`, `float_adm`.
//!
//! Each works on the luma plane copied to `f32` as libvmaf's
//! `picture_copy` copies it ([`FloatPlane`]), and keeps libvmaf's C types
//! operation by operation: `f32` where its C has `float`, `f64` where it
//! has `double`, the same order of additions, no fused multiply-adds
//! (Rust never contracts), and the same libm calls (`log10`, `pow`), so
//! the values are its values as bits.

pub(crate) mod adm;
mod adm_rcp;
pub(crate) mod ansnr;
pub(crate) mod moment;
pub(crate) mod motion;
pub(crate) mod psnr;
pub(crate) mod vif;

use crate::picture::PlaneView;
use crate::{Error, Result};

/// A plane as `f32` samples, `width` per row, no padding.
#[derive(Clone, Debug, Default)]
pub(crate) struct FloatPlane {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f32>,
}

impl FloatPlane {
    pub(crate) fn new(width: usize, height: usize) -> Self {
        Self { width, height, data: vec![0.0; width * height] }
    }

    pub(crate) fn row(&self, y: usize) -> &[f32] {
        &self.data[y * self.width..(y + 1) * self.width]
    }

    pub(crate) fn row_mut(&mut self, y: usize) -> &mut [f32] {
        &mut self.data[y * self.width..(y + 1) * self.width]
    }

    #[inline]
    pub(crate) fn at(&self, x: usize, y: usize) -> f32 {
        self.data[y * self.width + x]
    }

    /// libvmaf's `picture_copy`: 8-bit samples as `sample + offset`, deeper
    /// ones scaled to the 8-bit range, `sample / 2^(bits-8) + offset`, all
    /// in `float`. Reads the top-left `self.width` x `self.height` of
    /// `src`.
    pub(crate) fn copy_from(&mut self, src: &PlaneView<'_>, offset: i32, bits: u32) {
        let offset = offset as f32;
        let (w, h) = (self.width, self.height);
        if bits == 8 {
            for y in 0..h {
                let s = &src.row_u8(y)[..w];
                for (d, &v) in self.row_mut(y).iter_mut().zip(s) {
                    *d = v as f32 + offset;
                }
            }
        } else {
            let scaler = hbd_scaler(bits);
            for y in 0..h {
                let s = &src.row_u16(y)[..w];
                for (d, &v) in self.row_mut(y).iter_mut().zip(s) {
                    *d = v as f32 / scaler + offset;
                }
            }
        }
    }
}

/// `picture_copy`'s divisor at 10, 12 and 16 bits.
fn hbd_scaler(bits: u32) -> f32 {
    match bits {
        10 => 4.0,
        12 => 16.0,
        _ => 256.0,
    }
}

/// libvmaf's `picture_copy` knows 8, 10, 12 and 16 bits; it reads any other
/// depth's 16-bit samples as bytes (garbage), so vmafx refuses them.
pub(crate) fn check_bits(extractor: &str, bits: u32) -> Result<()> {
    if matches!(bits, 8 | 10 | 12 | 16) {
        return Ok(());
    }
    Err(Error::NotSupported(format!(
        "{extractor} at {bits} bits (libvmaf's float features read 8, 10, 12 and 16 bits only)"
    )))
}

/// Refuses a picture smaller than `min_w` x `min_h`, saying why.
pub(crate) fn check_size(extractor: &str, w: usize, h: usize, min_w: usize, min_h: usize, why: &str) -> Result<()> {
    if w >= min_w && h >= min_h {
        return Ok(());
    }
    Err(Error::NotSupported(format!(
        "{extractor} on a {w}x{h} picture (at least {min_w}x{min_h}: {why})"
    )))
}

/// C's `MIN(a, b)`: `a < b ? a : b`.
#[inline]
pub(crate) fn c_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

/// C's `MAX(a, b)`: `a > b ? a : b`.
#[inline]
pub(crate) fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// Peak and PSNR cap of `float_psnr` and `float_ansnr` (8-bit scale).
pub(crate) fn peak_and_cap(bits: u32) -> (f64, f64) {
    match bits {
        8 => (255.0, 60.0),
        10 => (255.75, 72.0),
        12 => (255.9375, 84.0),
        _ => (255.99609375, 108.0),
    }
}
