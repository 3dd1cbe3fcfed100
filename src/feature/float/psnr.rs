//! `float_psnr` (libvmaf `feature/float_psnr.c`, `psnr.c`): PSNR of the
//! luma planes copied to float on libvmaf's 8-bit scale, written as
//! `float_psnr`.

use super::{c_max, c_min, check_bits, peak_and_cap, FloatPlane};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::Result;

const NAME: &str = "float_psnr";

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_psnr",
    provided_features: &[NAME],
    options: &[],
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

struct FloatPsnr {
    bits: u32,
    peak: f64,
    psnr_max: f64,
    reference: FloatPlane,
    distorted: FloatPlane,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_psnr", bits)?;
    let (peak, psnr_max) = peak_and_cap(bits);
    Ok(Box::new(FloatPsnr {
        bits,
        peak,
        psnr_max,
        reference: FloatPlane::new(cfg.width, cfg.height),
        distorted: FloatPlane::new(cfg.width, cfg.height),
    }))
}

/// libvmaf's `compute_psnr`: float differences squared in float, summed in
/// double.
pub(crate) fn psnr(r: &FloatPlane, d: &FloatPlane, peak: f64, psnr_max: f64) -> f64 {
    let mut noise = 0.0f64;
    for y in 0..r.height {
        for (&a, &b) in r.row(y).iter().zip(d.row(y)) {
            let diff = a - b;
            noise += (diff * diff) as f64;
        }
    }
    noise /= (r.width as i32).wrapping_mul(r.height as i32) as f64;
    c_min(10.0 * (peak * peak / c_max(noise, 1e-10)).log10(), psnr_max)
}

impl Extractor for FloatPsnr {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        self.reference.copy_from(&frame.reference.luma(), 0, self.bits);
        self.distorted.copy_from(&frame.distorted.luma(), 0, self.bits);
        out.push(NAME, psnr(&self.reference, &self.distorted, self.peak, self.psnr_max));
        Ok(())
    }
}
