//! `float_moment` (libvmaf `feature/float_moment.c`, `moment.c`): the
//! first and second moments of each luma plane, written as
//! `float_moment_ref1st`, `float_moment_dis1st`, `float_moment_ref2nd`,
//! `float_moment_dis2nd`.

use super::{check_bits, FloatPlane};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::Result;

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_moment",
    // libvmaf provides this one name and writes the four below.
    provided_features: &["float_moment"],
    options: &[],
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

struct FloatMoment {
    bits: u32,
    reference: FloatPlane,
    distorted: FloatPlane,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_moment", bits)?;
    Ok(Box::new(FloatMoment {
        bits,
        reference: FloatPlane::new(cfg.width, cfg.height),
        distorted: FloatPlane::new(cfg.width, cfg.height),
    }))
}

fn pixels(p: &FloatPlane) -> f64 {
    (p.width as i32).wrapping_mul(p.height as i32) as f64
}

/// libvmaf's `compute_1st_moment`: samples summed in double.
pub(crate) fn first_moment(p: &FloatPlane) -> f64 {
    let mut cum = 0.0f64;
    for y in 0..p.height {
        for &v in p.row(y) {
            cum += v as f64;
        }
    }
    cum / pixels(p)
}

/// libvmaf's `compute_2nd_moment`: squares in float, summed in double.
pub(crate) fn second_moment(p: &FloatPlane) -> f64 {
    let mut cum = 0.0f64;
    for y in 0..p.height {
        for &v in p.row(y) {
            cum += (v * v) as f64;
        }
    }
    cum / pixels(p)
}

impl Extractor for FloatMoment {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        self.reference.copy_from(&frame.reference.luma(), 0, self.bits);
        self.distorted.copy_from(&frame.distorted.luma(), 0, self.bits);
        out.push("float_moment_ref1st", first_moment(&self.reference));
        out.push("float_moment_dis1st", first_moment(&self.distorted));
        out.push("float_moment_ref2nd", second_moment(&self.reference));
        out.push("float_moment_dis2nd", second_moment(&self.distorted));
        Ok(())
    }
}
