//! SpEED's picture filters, from libvmaf 3.2.0's `feature/vif_tools.c` (the
//! float VIF tools SpEED borrows): Gaussian taps, the separable mirrored
//! blur, decimation by 16, and the four prescalers.
//!
//! Every operation keeps C's types: `f32` where libvmaf's variables are
//! `float`, `f64` where an expression is promoted to `double` (a double
//! constant or a libm call) and rounded back when stored.

/// libvmaf's `valid_kernelscales` (`vif_tools.h`), as `float`s.
pub const VALID_KERNELSCALES: [f32; 21] = [
    1.0,
    1.0 / 2.0,
    3.0 / 2.0,
    2.0,
    2.0 / 3.0,
    24.0 / 10.0,
    360.0 / 97.0,
    4.0 / 3.0,
    3.5 / 3.0,
    3.75 / 3.0,
    4.25 / 3.0,
    5.0 / 3.0,
    3.0,
    1.0 / 2.25,
    1.4746,
    1.54,
    1.6,
    1.06667,
    0.711111,
    0.740740,
    1.111111,
];

/// `vif_validate_kernelscale`: within 1e-3 of a listed scale.
pub fn kernelscale_is_valid(kernelscale: f32) -> bool {
    VALID_KERNELSCALES.iter().any(|k| (kernelscale - k).abs() < 1e-3)
}

/// `round_up_to_odd`: the ceiling, made odd by adding one.
fn round_up_to_odd(f: f32) -> i32 {
    let ceiling = (f as f64).ceil() as i32;
    if ceiling % 2 == 0 {
        ceiling + 1
    } else {
        ceiling
    }
}

/// `vif_get_filter_size`.
pub fn filter_size(scale: i32, kernelscale: f32) -> usize {
    let n = (1 << (4 - scale)) + 1;
    round_up_to_odd(n as f32 * kernelscale).max(3) as usize
}

/// `get_gaussian_pdf` at `x` (mean 0): the exponent in double, the
/// quotient in float.
fn gaussian_pdf(x: f32, stdev: f32) -> f32 {
    let d = x as f64;
    let s = stdev as f64;
    let num = (-0.5 * d / s * d / s).exp() as f32;
    let den = (1.0 / (s * (2.0 * std::f64::consts::PI).sqrt())) as f32;
    num / den
}

/// `get_1d_gaussian_kernel`: `size` taps normalised by their float sum.
fn gaussian_kernel(size: usize, stdev: f32) -> Vec<f32> {
    let k = (size as i32 - 1) / 2;
    let mut taps: Vec<f32> = (0..size as i32).map(|i| gaussian_pdf((i - k) as f32, stdev)).collect();
    let mut sum = 0.0f32;
    for t in &taps {
        sum += t;
    }
    for t in &mut taps {
        *t /= sum;
    }
    taps
}

/// `vif_get_filter(scale, kernelscale)`.
pub fn vif_filter(scale: i32, kernelscale: f32) -> Vec<f32> {
    let size = filter_size(scale, kernelscale);
    gaussian_kernel(size, size as f32 / 5.0)
}

/// `speed_get_antialias_filter(scale, kernelscale)`: scale 1's size, with
/// a deviation widened by sqrt(scale).
pub fn antialias_filter(scale: i32, kernelscale: f32) -> Vec<f32> {
    let size = filter_size(1, kernelscale);
    let stdev = (scale as f64).sqrt() * size as f64 / 5.0f32 as f64;
    gaussian_kernel(size, stdev as f32)
}

/// Mirrors an index into `0..n` as libvmaf's filters do (no edge repeat).
/// kernels/speed.cu's `vx_speed_mirror` is its device twin
/// (tests/device/fns.rs).
#[doc(hidden)]
#[inline]
pub fn mirror_index(i: isize, n: isize) -> usize {
    (if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 2
    } else {
        i
    }) as usize
}

/// `vif_filter1d_s` (its C path): for each row, a vertical pass into a row
/// buffer, then a horizontal pass into `dst`; float accumulation in tap
/// order. Strides are in samples.
///
/// Each output sample sums its taps in libvmaf's order; the loops run over
/// whole rows per tap (the same sums, in an order the compiler can
/// vectorise), with the mirrored border columns summed one by one.
pub fn filter1d(taps: &[f32], src: &[f32], dst: &mut [f32], row: &mut Vec<f32>, w: usize, h: usize, stride: usize) {
    let half = taps.len() / 2;
    row.clear();
    row.resize(w, 0.0);
    for i in 0..h {
        row.fill(0.0);
        for (fi, &tap) in taps.iter().enumerate() {
            let ii = mirror_index(i as isize - half as isize + fi as isize, h as isize);
            for (acc, &v) in row.iter_mut().zip(&src[ii * stride..ii * stride + w]) {
                *acc += tap * v;
            }
        }
        let out = &mut dst[i * stride..i * stride + w];
        // Columns whose window stays inside the row; the rest mirror.
        let (lo, hi) = (half.min(w), w.saturating_sub(half).max(half.min(w)));
        out[lo..hi].fill(0.0);
        for (fj, &tap) in taps.iter().enumerate() {
            for (o, &v) in out[lo..hi].iter_mut().zip(&row[lo - half + fj..]) {
                *o += tap * v;
            }
        }
        for j in (0..lo).chain(hi..w) {
            let mut accum = 0.0f32;
            for (fj, &tap) in taps.iter().enumerate() {
                let jj = mirror_index(j as isize - half as isize + fj as isize, w as isize);
                accum += tap * row[jj];
            }
            out[j] = accum;
        }
    }
}

/// [`filter1d`] followed by [`decimate16`] into `frame` itself, computing
/// only the samples the decimation keeps: the vertical pass of every 16th
/// row, the horizontal pass of every 16th column of it. Each kept sample
/// is the same sum of the same products in the same order as
/// [`filter1d`]'s (both start at 0 and add tap by tap), so the result is
/// the same bits for a sixteenth of the vertical work and a 256th of the
/// horizontal. Samples outside the decimated picture keep their values,
/// as [`decimate16`] leaves them; `out` is scratch.
pub fn filter1d_decimate16(
    taps: &[f32],
    frame: &mut [f32],
    out: &mut Vec<f32>,
    row: &mut Vec<f32>,
    w: usize,
    h: usize,
    stride: usize,
) {
    let half = taps.len() as isize / 2;
    let (dw, dh) = (w / 16, h / 16);
    out.clear();
    out.resize(dw * dh, 0.0);
    row.clear();
    row.resize(w, 0.0);
    for i in 0..dh {
        let y = 16 * i as isize;
        row.fill(0.0);
        for (fi, &tap) in taps.iter().enumerate() {
            let ii = mirror_index(y - half + fi as isize, h as isize);
            for (acc, &v) in row.iter_mut().zip(&frame[ii * stride..ii * stride + w]) {
                *acc += tap * v;
            }
        }
        for (j, o) in out[i * dw..(i + 1) * dw].iter_mut().enumerate() {
            let x = 16 * j as isize;
            let mut accum = 0.0f32;
            for (fj, &tap) in taps.iter().enumerate() {
                accum += tap * row[mirror_index(x - half + fj as isize, w as isize)];
            }
            *o = accum;
        }
    }
    // Written only now: the rows above are read again by later outputs.
    for i in 0..dh {
        frame[i * stride..i * stride + dw].copy_from_slice(&out[i * dw..(i + 1) * dw]);
    }
}

/// `vif_dec16_s`: every 16th sample of every 16th row.
pub fn decimate16(src: &[f32], dst: &mut [f32], w: usize, h: usize, stride: usize) {
    for i in 0..h / 16 {
        for j in 0..w / 16 {
            dst[i * stride + j] = src[i * 16 * stride + j * 16];
        }
    }
}

/// libvmaf's prescaling methods (`vif_get_scaling_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleMethod {
    Nearest,
    Bilinear,
    Bicubic,
    Lanczos4,
}

impl ScaleMethod {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "nearest" => Some(ScaleMethod::Nearest),
            "bilinear" => Some(ScaleMethod::Bilinear),
            "bicubic" => Some(ScaleMethod::Bicubic),
            "lanczos4" => Some(ScaleMethod::Lanczos4),
            _ => None,
        }
    }
}

/// One resize, `src_w` x `src_h` to `dst_w` x `dst_h`, both at `stride`
/// samples a row.
#[derive(Clone, Debug)]
pub struct Resize {
    pub method: ScaleMethod,
    pub src_w: usize,
    pub src_h: usize,
    pub dst_w: usize,
    pub dst_h: usize,
    /// Bilinear's column table (libvmaf computes it once per instance).
    columns: Vec<(usize, usize, f32)>,
}

/// libvmaf's float `mirror(i, left, right)`.
#[inline]
fn mirror_f(i: f32, left: f32, right: f32) -> f32 {
    if i < left {
        -i
    } else if i > right {
        2.0 * right - i
    } else {
        i
    }
}

/// `(x + 0.5) * ratio - 0.5`, in double, stored as float.
#[inline]
fn source_position(x: usize, ratio: f32) -> f32 {
    ((x as f64 + 0.5) * ratio as f64 - 0.5) as f32
}

impl Resize {
    pub fn new(method: ScaleMethod, src_w: usize, src_h: usize, dst_w: usize, dst_h: usize) -> Self {
        let mut columns = Vec::new();
        if method == ScaleMethod::Bilinear {
            // vif_scale_frame_bilinear_precompute_columns_s
            let ratio_x = src_w as f32 / dst_w as f32;
            let right = (src_w - 1) as f32;
            for x in 0..dst_w {
                let xx = source_position(x, ratio_x);
                let x1 = mirror_f((xx as f64).floor() as f32, 0.0, right) as i32;
                let x2 = mirror_f((xx as f64).ceil() as f32, 0.0, right) as i32;
                columns.push((x1 as usize, x2 as usize, xx - x1 as f32));
            }
        }
        Resize { method, src_w, src_h, dst_w, dst_h, columns }
    }

    /// Resizes `src` into `dst`; at the same size (a prescale off 1 by
    /// more than 1e-3 that rounds back to it) libvmaf copies the picture,
    /// and `dst` already holds it.
    pub fn run(&self, src: &[f32], dst: &mut [f32], stride: usize) {
        if (self.src_w, self.src_h) == (self.dst_w, self.dst_h) {
            return;
        }
        match self.method {
            ScaleMethod::Nearest => self.nearest(src, dst, stride),
            ScaleMethod::Bilinear => self.bilinear(src, dst, stride),
            ScaleMethod::Bicubic => self.interpolated(src, dst, stride, bicubic_at),
            ScaleMethod::Lanczos4 => self.interpolated(src, dst, stride, lanczos4_at),
        }
    }

    fn nearest(&self, src: &[f32], dst: &mut [f32], stride: usize) {
        let ratio_x = self.src_w as f32 / self.dst_w as f32;
        let ratio_y = self.src_h as f32 / self.dst_h as f32;
        for y in 0..self.dst_h {
            for x in 0..self.dst_w {
                let sy = (y as f32 * ratio_y) as i32 as usize;
                let sx = (x as f32 * ratio_x) as i32 as usize;
                dst[y * stride + x] = src[sy * stride + sx];
            }
        }
    }

    fn bilinear(&self, src: &[f32], dst: &mut [f32], stride: usize) {
        let ratio_y = self.src_h as f32 / self.dst_h as f32;
        let bottom = (self.src_h - 1) as f32;
        for y in 0..self.dst_h {
            let yy = source_position(y, ratio_y);
            let y1 = mirror_f((yy as f64).floor() as f32, 0.0, bottom) as i32;
            let y2 = mirror_f((yy as f64).ceil() as f32, 0.0, bottom) as i32;
            let dy = yy - y1 as f32;
            let r1 = &src[y1 as usize * stride..];
            let r2 = &src[y2 as usize * stride..];
            for (x, &(x1, x2, dx)) in self.columns.iter().enumerate() {
                dst[y * stride + x] = (1.0 - dy) * (1.0 - dx) * r1[x1]
                    + (1.0 - dy) * dx * r1[x2]
                    + dy * (1.0 - dx) * r2[x1]
                    + dy * dx * r2[x2];
            }
        }
    }

    fn interpolated(&self, src: &[f32], dst: &mut [f32], stride: usize, at: fn(&[f32], usize, usize, usize, f32, f32) -> f32) {
        let ratio_x = self.src_w as f32 / self.dst_w as f32;
        let ratio_y = self.src_h as f32 / self.dst_h as f32;
        for y in 0..self.dst_h {
            let yy = source_position(y, ratio_y);
            for x in 0..self.dst_w {
                let xx = source_position(x, ratio_x);
                dst[y * stride + x] = at(src, self.src_w, self.src_h, stride, xx, yy);
            }
        }
    }
}

fn bicubic_kernel(t: f32) -> f32 {
    let a = -0.75f32;
    let t = if t < 0.0 { -t } else { t };
    if t < 1.0 {
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    }
    if t < 2.0 {
        return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
    }
    0.0
}

/// libvmaf's `bicubic_interpolation`.
fn bicubic_at(src: &[f32], width: usize, height: usize, stride: usize, x: f32, y: f32) -> f32 {
    let x0 = (x as f64).floor() as i32;
    let y0 = (y as f64).floor() as i32;
    let dx = x - x0 as f32;
    let dy = y - y0 as f32;
    let mut wx = [0.0f32; 4];
    let mut wy = [0.0f32; 4];
    for i in -1i32..=2 {
        wx[(i + 1) as usize] = bicubic_kernel(i as f32 - dx);
        wy[(i + 1) as usize] = bicubic_kernel(i as f32 - dy);
    }
    let mut value = 0.0f32;
    for j in -1i32..=2 {
        for i in -1i32..=2 {
            let xi = mirror_f((x0 + i) as f32, 0.0, (width - 1) as f32) as i32 as usize;
            let yi = mirror_f((y0 + j) as f32, 0.0, (height - 1) as f32) as i32 as usize;
            let weight = wx[(i + 1) as usize] * wy[(j + 1) as usize];
            value += src[yi * stride + xi] * weight;
        }
    }
    value
}

fn lanczos4_kernel(x: f32, a: f32) -> f32 {
    if x as f64 == 0.0 {
        return 1.0;
    }
    if x > -a && x < a {
        let (pi, xd, ad) = (std::f64::consts::PI, x as f64, a as f64);
        return (ad * (pi * xd).sin() * (pi * xd / ad).sin() / (pi * pi * xd * xd)) as f32;
    }
    0.0
}

/// libvmaf's `lanczos4_interpolation`: a 9x9 window normalised by its
/// weight sum.
fn lanczos4_at(src: &[f32], width: usize, height: usize, stride: usize, x: f32, y: f32) -> f32 {
    const A: i32 = 4;
    let x0 = (x as f64).floor() as i32;
    let y0 = (y as f64).floor() as i32;
    let dx = x - x0 as f32;
    let dy = y - y0 as f32;
    let mut wx = [0.0f32; 9];
    let mut wy = [0.0f32; 9];
    for i in -A..=A {
        wx[(i + A) as usize] = lanczos4_kernel(i as f32 - dx, A as f32);
        wy[(i + A) as usize] = lanczos4_kernel(i as f32 - dy, A as f32);
    }
    let (mut value, mut weight_sum) = (0.0f32, 0.0f32);
    for iy in -A..=A {
        for ix in -A..=A {
            let weight = wx[(ix + A) as usize] * wy[(iy + A) as usize];
            weight_sum += weight;
            let xi = mirror_f((x0 + ix) as f32, 0.0, (width - 1) as f32) as i32 as usize;
            let yi = mirror_f((y0 + iy) as f32, 0.0, (height - 1) as f32) as i32 as usize;
            value += src[yi * stride + xi] * weight;
        }
    }
    value / weight_sum
}
