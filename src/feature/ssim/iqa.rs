//! The IQA library's SSIM core as libvmaf 3.2.0 builds it
//! (`feature/iqa/convolve.c` with `IQA_CONVOLVE_1D`, `decimate.c`,
//! `ssim_tools.c` `_iqa_ssim` with default arguments, `math_utils.c`),
//! with its types kept: float samples and products, double sums. Rust does
//! not contract `a * b + c` into an FMA, nor reassociate, so each line
//! rounds where the C rounds.

use crate::{Error, Result};

/// `GAUSSIAN_LEN`.
pub(crate) const GAUSSIAN_LEN: usize = 11;

/// `g_gaussian_window_h` (= `_v`): the 11-tap Gaussian, sigma 1.5.
const GAUSSIAN: [f32; GAUSSIAN_LEN] = [
    0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001, 0.007599, 0.001028,
];

/// A float image, rows packed (stride = width).
#[derive(Clone, Debug, Default)]
pub(crate) struct Image {
    pub(crate) data: Vec<f32>,
    pub(crate) width: usize,
    pub(crate) height: usize,
}

/// `KBND_SYMMETRIC`: mirror about the edge, the edge sample repeated.
/// `None` where one reflection does not land inside (libvmaf reads out
/// of bounds there). kernels/ssim.cu's `vx_ssim_symmetric` is its device
/// twin (tests/device/fns.rs).
#[doc(hidden)]
#[inline]
pub fn symmetric(i: isize, n: usize) -> Option<usize> {
    let n = n as isize;
    let r = if i < 0 {
        -1 - i
    } else if i >= n {
        (n - (i - n)) - 1
    } else {
        i
    };
    (0..n).contains(&r).then_some(r as usize)
}

/// `_iqa_filter_pixel` with `KBND_SYMMETRIC` and kscale 1: the 2-D
/// `kernel` (`k` x `k`, row-major) centred on (x, y).
fn filter_pixel(img: &Image, x: usize, y: usize, kernel: &[f32], k: usize) -> Result<f32> {
    let c = (k / 2) as isize;
    let even = (k % 2 == 0) as isize;
    let mut sum = 0.0f64;
    let mut k_offset = 0;
    let (xi, yi) = (x as isize, y as isize);
    if xi >= c && yi >= c && xi < img.width as isize - c && yi < img.height as isize - c {
        // Inside: no reflection (libvmaf's non-edge path; the same taps).
        for v in -c..=c - even {
            let row = &img.data[(yi + v) as usize * img.width..];
            for u in -c..=c - even {
                sum += (row[(xi + u) as usize] * kernel[k_offset]) as f64;
                k_offset += 1;
            }
        }
        return Ok(sum as f32);
    }
    for v in -c..=c - even {
        for u in -c..=c - even {
            let (sx, sy) = (symmetric(x as isize + u, img.width), symmetric(y as isize + v, img.height));
            let (Some(sx), Some(sy)) = (sx, sy) else {
                return Err(Error::NotSupported(format!(
                    "a {k}x{k} filter on a {}x{} picture reaches past its mirrored border (libvmaf reads outside the picture)",
                    img.width, img.height
                )));
            };
            // float * float, then summed as double.
            sum += (img.data[sy * img.width + sx] * kernel[k_offset]) as f64;
            k_offset += 1;
        }
    }
    Ok(sum as f32)
}

/// `_iqa_decimate(img, w, h, factor, kernel, NULL, ...)`: in place, as
/// `compute_ssim` calls it (each output written before later ones read).
pub(crate) fn decimate_in_place(img: &mut Image, factor: usize, kernel: &[f32], k: usize) -> Result<()> {
    let (sw, sh) = decimated_size(img.width, img.height, factor);
    for y in 0..sh {
        for x in 0..sw {
            let v = filter_pixel(img, x * factor, y * factor, kernel, k)?;
            img.data[y * sw + x] = v;
        }
    }
    img.width = sw;
    img.height = sh;
    img.data.truncate(sw * sh);
    Ok(())
}

/// `_iqa_decimate(img, w, h, factor, kernel, result, ...)`: into a new image.
pub(crate) fn decimate(img: &Image, factor: usize, kernel: &[f32], k: usize) -> Result<Image> {
    let (sw, sh) = decimated_size(img.width, img.height, factor);
    let mut data = Vec::with_capacity(sw * sh);
    for y in 0..sh {
        for x in 0..sw {
            data.push(filter_pixel(img, x * factor, y * factor, kernel, k)?);
        }
    }
    Ok(Image { data, width: sw, height: sh })
}

/// libvmaf's decimated size: `w / factor + (w & 1)`.
pub(crate) fn decimated_size(w: usize, h: usize, factor: usize) -> (usize, usize) {
    (w / factor + (w & 1), h / factor + (h & 1))
}

/// `_iqa_convolve` with the separable Gaussian (`IQA_CONVOLVE_1D`): the
/// window applied wherever it fits, giving a (w - 10) x (h - 10) image;
/// `cache` is scratch of w * h.
fn convolve(img: &[f32], w: usize, h: usize, cache: &mut Vec<f32>) -> Vec<f32> {
    let c = GAUSSIAN_LEN / 2;
    let (dw, dh) = (w + 1 - GAUSSIAN_LEN, h + 1 - GAUSSIAN_LEN);
    cache.clear();
    cache.resize(w * h, 0.0);
    for ky in 0..h {
        for x in 0..dw {
            let at = ky * w + x;
            let mut sum = 0.0f64;
            for (u, k) in GAUSSIAN.iter().enumerate() {
                sum += (img[at + u] * k) as f64;
            }
            cache[at + c] = sum as f32;
        }
    }
    let mut out = vec![0.0f32; dw * dh];
    for x in 0..dw {
        for y in 0..dh {
            let at = y * w + x + c;
            let mut sum = 0.0f64;
            for (v, k) in GAUSSIAN.iter().enumerate() {
                sum += (cache[at + v * w] * k) as f64;
            }
            out[y * dw + x] = sum as f32;
        }
    }
    out
}

/// SSIM of one scale and the means of its luminance, contrast and
/// structure terms, all as libvmaf's floats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SsimTerms {
    pub(crate) ssim: f32,
    pub(crate) l: f32,
    pub(crate) c: f32,
    pub(crate) s: f32,
}

/// `(((x) > (y)) ? (x) : (y))` with x = 0.0 (a double), stored back as float.
#[inline]
fn c_max0(v: f32) -> f32 {
    if 0.0f64 > v as f64 {
        0.0
    } else {
        v
    }
}

/// `_iqa_ssim`'s constants with default arguments (K1 0.01, K2 0.03, L 255).
#[derive(Clone, Copy, Debug)]
pub struct SsimConstants {
    pub c1: f32,
    pub c2: f32,
    pub c3: f32,
}

impl SsimConstants {
    pub fn new() -> SsimConstants {
        let (k1, k2, l) = (0.01f32, 0.03f32, 255i32 as f32);
        let c1 = (k1 * l) * (k1 * l);
        let c2 = (k2 * l) * (k2 * l);
        SsimConstants { c1, c2, c3: c2 / 2.0f32 }
    }
}

impl Default for SsimConstants {
    fn default() -> Self {
        Self::new()
    }
}

/// One pixel of `_iqa_ssim`: from its five convolved values (the means,
/// the raw second moments of reference, distorted and both) the
/// luminance, contrast and structure terms. kernels/ssim.cu's
/// `vx_ssim_pixel` is its device twin (tests/device/fns.rs).
#[doc(hidden)]
pub fn pixel_terms(mu1: f32, mu2: f32, ref_sq: f32, cmp_sq: f32, both: f32, k: SsimConstants) -> (f64, f64, f64) {
    let ref_sigma = c_max0(ref_sq - mu1 * mu1);
    let cmp_sigma = c_max0(cmp_sq - mu2 * mu2);
    let sigma_both = both - mu1 * mu2;
    let sigma_ref_sigma_cmp = ((ref_sigma * cmp_sigma) as f64).sqrt() as f32;
    let l = (2.0 * mu1 as f64 * mu2 as f64 + k.c1 as f64) / ((mu1 * mu1 + mu2 * mu2 + k.c1) as f64);
    let c = (2.0 * sigma_ref_sigma_cmp as f64 + k.c2 as f64) / ((ref_sigma + cmp_sigma + k.c2) as f64);
    // libvmaf's fix for flat, identical regions: a negative covariance
    // from rounding counts as 0 where both deviations are 0.
    let clamped = if sigma_both < 0.0f32 && sigma_ref_sigma_cmp <= 0.0f32 { 0.0f32 } else { sigma_both };
    let s = ((clamped + k.c3) / (sigma_ref_sigma_cmp + k.c3)) as f64;
    (l, c, s)
}

/// `_iqa_ssim`'s double sums over the pixels, added in row-major order
/// (no other order gives the same doubles), then the means as floats.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TermSums {
    ssim: f64,
    l: f64,
    c: f64,
    s: f64,
}

impl TermSums {
    #[inline]
    pub(crate) fn add(&mut self, l: f64, c: f64, s: f64) {
        self.ssim += l * c * s;
        self.l += l;
        self.c += c;
        self.s += s;
    }

    /// The means over a `w` x `h` image's (w - 10) x (h - 10) windows.
    pub(crate) fn terms(&self, w: usize, h: usize) -> SsimTerms {
        let size = ((w + 1 - GAUSSIAN_LEN) * (h + 1 - GAUSSIAN_LEN)) as i32 as f64;
        SsimTerms {
            ssim: (self.ssim / size) as f32,
            l: (self.l / size) as f32,
            c: (self.c / size) as f32,
            s: (self.s / size) as f32,
        }
    }
}

/// `_iqa_ssim` with the Gaussian window and default arguments (K1 0.01,
/// K2 0.03, L 255, alpha = beta = gamma = 1). Both images are `w` x `h`,
/// at least 11 x 11.
pub(crate) fn ssim(reference: &Image, distorted: &Image) -> SsimTerms {
    let (w, h) = (reference.width, reference.height);
    debug_assert!(w >= GAUSSIAN_LEN && h >= GAUSSIAN_LEN);
    let k = SsimConstants::new();
    let (rf, cf) = (&reference.data, &distorted.data);
    let mut cache = Vec::new();
    let ref_mu = convolve(rf, w, h, &mut cache);
    let cmp_mu = convolve(cf, w, h, &mut cache);
    let ref_sq: Vec<f32> = rf.iter().map(|&r| r * r).collect();
    let cmp_sq: Vec<f32> = cf.iter().map(|&d| d * d).collect();
    let both: Vec<f32> = rf.iter().zip(cf).map(|(&r, &d)| r * d).collect();
    let ref_sigma = convolve(&ref_sq, w, h, &mut cache);
    let cmp_sigma = convolve(&cmp_sq, w, h, &mut cache);
    let sigma_both = convolve(&both, w, h, &mut cache);
    let mut sums = TermSums::default();
    for i in 0..ref_mu.len() {
        let (l, c, s) = pixel_terms(ref_mu[i], cmp_mu[i], ref_sigma[i], cmp_sigma[i], sigma_both[i], k);
        sums.add(l, c, s);
    }
    sums.terms(w, h)
}

/// Whether `_iqa_decimate` of a `w` x `h` image by `factor` with a `k` x
/// `k` kernel stays inside one mirror reflection everywhere (the CPU's
/// [`decimate`] errs where it does not; the device twin checks first).
pub(crate) fn check_decimate(w: usize, h: usize, factor: usize, k: usize) -> Result<()> {
    let (sw, sh) = decimated_size(w, h, factor);
    let c = (k / 2) as isize;
    let even = (k % 2 == 0) as isize;
    let fits = |out: usize, n: usize| {
        (0..out).all(|o| (-c..=c - even).all(|u| symmetric((o * factor) as isize + u, n).is_some()))
    };
    if fits(sw, w) && fits(sh, h) {
        return Ok(());
    }
    Err(Error::NotSupported(format!(
        "a {k}x{k} filter on a {w}x{h} picture reaches past its mirrored border (libvmaf reads outside the picture)"
    )))
}

/// The Gaussian window as the device reads it (native-endian f32).
pub(crate) fn gaussian_bytes() -> Vec<u8> {
    GAUSSIAN.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// `_round` of `math_utils.c`.
pub(crate) fn iqa_round(a: f32) -> i32 {
    let sign = if a > 0.0 { 1 } else { -1 };
    let t = a as i32;
    if (a - t as f32) as f64 >= 0.5 {
        t + sign
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_border() {
        assert_eq!(symmetric(-1, 5), Some(0));
        assert_eq!(symmetric(-2, 5), Some(1));
        assert_eq!(symmetric(5, 5), Some(4));
        assert_eq!(symmetric(6, 5), Some(3));
        assert_eq!(symmetric(-7, 5), None);
    }

    #[test]
    fn round_as_iqa() {
        assert_eq!(iqa_round(1.5), 2);
        assert_eq!(iqa_round(1.49), 1);
        assert_eq!(iqa_round(2.0), 2);
        assert_eq!(iqa_round(0.0), 0);
    }

    /// The device twin decimates into a new image; the CPU's in-place
    /// decimation (float_ssim) must read no sample it already overwrote.
    #[test]
    fn in_place_decimation_equals_a_new_image() {
        let mut seed = 0x5eedu64;
        for factor in 2..=10usize {
            for (w, h) in [(23, 23), (24, 31), (37, 22), (60, 45), (101, 57)] {
                let data: Vec<f32> = (0..w * h)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (seed >> 40) as u8 as f32
                    })
                    .collect();
                let img = Image { data, width: w, height: h };
                let kernel = vec![1.0f32 / (factor * factor) as i32 as f32; factor * factor];
                let checked = check_decimate(w, h, factor, factor);
                let new = decimate(&img, factor, &kernel, factor);
                assert_eq!(checked.is_ok(), new.is_ok(), "{w}x{h} / {factor}");
                let Ok(new) = new else { continue };
                let mut in_place = img.clone();
                decimate_in_place(&mut in_place, factor, &kernel, factor).unwrap();
                let bits = |i: &Image| i.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&new), bits(&in_place), "{w}x{h} / {factor}");
            }
        }
    }

    #[test]
    fn identical_images_score_one() {
        let data: Vec<f32> = (0..40 * 30).map(|i| ((i * 37) % 251) as f32).collect();
        let img = Image { data, width: 40, height: 30 };
        let t = ssim(&img, &img);
        assert!((t.ssim - 1.0).abs() < 1e-6 && (t.s - 1.0).abs() < 1e-6, "{t:?}");
    }
}
