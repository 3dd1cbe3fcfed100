//! `float_ansnr` (libvmaf `feature/float_ansnr.c`, `ansnr.c`,
//! `ansnr_tools.c`): the reference blurred by a 3x3 kernel against the
//! distorted one blurred by a 5x5 kernel (2-D filters, mirrored borders),
//! their signal-to-noise ratio written as `float_ansnr` and the noise's
//! PSNR as `float_anpsnr`.

use super::{c_max, c_min, check_bits, check_size, peak_and_cap, FloatPlane};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::Result;

/// libvmaf's `ansnr_filter2d_ref_s`: 1 2 1 / 2 4 2 / 1 2 1 over 16, each a
/// double quotient rounded to float.
fn ref_filter() -> [f32; 9] {
    let k = [1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0];
    k.map(|v: f64| (v / 16.0) as f32)
}

/// libvmaf's `ansnr_filter2d_dis_s`: a 5x5 kernel over 571.
fn dis_filter() -> [f32; 25] {
    let k = [
        2.0, 7.0, 12.0, 7.0, 2.0, //
        7.0, 31.0, 52.0, 31.0, 7.0, //
        12.0, 52.0, 127.0, 52.0, 12.0, //
        7.0, 31.0, 52.0, 31.0, 7.0, //
        2.0, 7.0, 12.0, 7.0, 2.0,
    ];
    k.map(|v: f64| (v / 571.0) as f32)
}

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "float_ansnr",
    provided_features: &["float_ansnr"],
    options: &[],
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: false,
    create,
};

struct FloatAnsnr {
    bits: u32,
    peak: f64,
    psnr_max: f64,
    reference: FloatPlane,
    distorted: FloatPlane,
    ref_filtered: FloatPlane,
    dis_filtered: FloatPlane,
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    check_bits("float_ansnr", bits)?;
    // The 5x5 mirror reaches two samples in (libvmaf reads outside the
    // plane below 3 on a side).
    check_size("float_ansnr", cfg.width, cfg.height, 3, 3, "its 5x5 filter mirrors two samples in")?;
    let (peak, psnr_max) = peak_and_cap(bits);
    let plane = || FloatPlane::new(cfg.width, cfg.height);
    Ok(Box::new(FloatAnsnr {
        bits,
        peak,
        psnr_max,
        reference: plane(),
        distorted: plane(),
        ref_filtered: plane(),
        dis_filtered: plane(),
    }))
}

/// libvmaf's mirror without repeating the edge: -1 reads 1, n reads n-2.
#[inline]
fn mirror(i: isize, n: isize) -> usize {
    let m = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 1
    } else {
        i
    };
    m as usize
}

/// libvmaf's `ansnr_filter2d_s`: per output sample, each kernel row summed
/// in float, then the rows in kernel order.
pub(crate) fn filter2d(f: &[f32], fwidth: usize, src: &FloatPlane, dst: &mut FloatPlane) {
    let (w, h) = (src.width as isize, src.height as isize);
    let half = (fwidth / 2) as isize;
    for i in 0..h {
        for j in 0..w {
            let mut accum = 0.0f32;
            for fi in 0..fwidth {
                let mut inner = 0.0f32;
                let ii = mirror(i - half + fi as isize, h);
                for fj in 0..fwidth {
                    let jj = mirror(j - half + fj as isize, w);
                    inner += f[fi * fwidth + fj] * src.at(jj, ii);
                }
                accum += inner;
            }
            dst.data[i as usize * src.width + j as usize] = accum;
        }
    }
}

/// libvmaf's `ansnr_mse_s`: signal and noise energy, each row summed in
/// float, then the rows in float.
pub(crate) fn mse(r: &FloatPlane, d: &FloatPlane) -> (f32, f32) {
    let (mut sig, mut noise) = (0.0f32, 0.0f32);
    for y in 0..r.height {
        let (mut sig_row, mut noise_row) = (0.0f32, 0.0f32);
        for (&a, &b) in r.row(y).iter().zip(d.row(y)) {
            sig_row += a * a;
            noise_row += (a - b) * (a - b);
        }
        sig += sig_row;
        noise += noise_row;
    }
    (sig, noise)
}

impl Extractor for FloatAnsnr {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        self.reference.copy_from(&frame.reference.luma(), -128, self.bits);
        self.distorted.copy_from(&frame.distorted.luma(), -128, self.bits);
        filter2d(&ref_filter(), 3, &self.reference, &mut self.ref_filtered);
        filter2d(&dis_filter(), 5, &self.distorted, &mut self.dis_filtered);
        let (sig, noise) = mse(&self.ref_filtered, &self.dis_filtered);
        let ansnr = if noise == 0.0 { self.psnr_max } else { 10.0 * ((sig / noise) as f64).log10() };
        let (w, h) = (self.reference.width as i32 as f64, self.reference.height as i32 as f64);
        let anpsnr = c_min(
            10.0 * (self.peak * self.peak * w * h / c_max(noise as f64, 1e-10)).log10(),
            self.psnr_max,
        );
        out.push("float_ansnr", ansnr);
        out.push("float_anpsnr", anpsnr);
        Ok(())
    }
}
