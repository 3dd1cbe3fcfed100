//! CAMBI's per-frame work, the scalar reference, written from libvmaf
//! 3.2.0 `feature/cambi.c` (its C; the AVX2 file gives the same bits).
//!
//! A frame goes: luma to 10 bits at the encode size (`to_10bit`, nearest
//! neighbour when the size changes) → 2x2 anti-dithering below 10 bits →
//! spatial mask (7x7 count of flat pixels) → five scales, each decimated
//! 2:1, mode-filtered 3x3, then a c-value per masked pixel from sliding
//! window histograms → top-k pooling per scale → weighted sum.
//!
//! Working pictures (`Plane16`) keep one stride for every scale and are
//! decimated in place, as libvmaf's are. Sizes where libvmaf would read
//! outside a scale's picture are refused before any frame (see `mod.rs`).

use std::sync::OnceLock;

use crate::picture::PlaneView;

/// Entries of libvmaf's reciprocal table (`cambi.h`).
pub const RECIPROCAL_LUT_SIZE: usize = 4226;

/// libvmaf's `reciprocal_lut`: entry i is 1/i printed to 9 significant
/// digits and read back as a float (entry 0 is 0). That is not always
/// `1.0f32 / i` (42 entries differ by an ulp, the first at i = 82), so the
/// table is made the way its generator made it.
pub fn reciprocal_lut() -> &'static [f32] {
    static LUT: OnceLock<Vec<f32>> = OnceLock::new();
    LUT.get_or_init(|| {
        (0..RECIPROCAL_LUT_SIZE)
            .map(|i| {
                if i == 0 {
                    0.0
                } else {
                    format!("{:.8e}", 1.0 / i as f64).parse::<f32>().expect("a formatted float parses")
                }
            })
            .collect()
    })
}

/// A 16-bit working picture with one stride for all the scales it goes
/// through (libvmaf's `pics[0]` and `pics[1]`).
pub struct Plane16 {
    pub data: Vec<u16>,
    pub stride: usize,
}

impl Plane16 {
    pub fn new(width: usize, height: usize) -> Plane16 {
        Plane16 { data: vec![0; width * height], stride: width }
    }

    #[inline]
    pub fn row(&self, y: usize) -> &[u16] {
        &self.data[y * self.stride..(y + 1) * self.stride]
    }

    #[inline]
    pub fn row_mut(&mut self, y: usize) -> &mut [u16] {
        &mut self.data[y * self.stride..(y + 1) * self.stride]
    }
}

/// Source coordinates of a nearest-neighbour resize from `in_len` to
/// `out_len` samples, stepped in float as libvmaf's `decimate_generic_*`
/// step them. `None` where a coordinate falls outside the input.
pub fn resize_coords(in_len: usize, out_len: usize) -> Option<Vec<usize>> {
    let ratio = in_len as f32 / out_len as f32;
    // `ratio / 2 - 0.5`: a float halved, then a double subtraction stored
    // back into a float.
    let start = ((ratio / 2.0) as f64 - 0.5) as f32;
    let mut x = start;
    let mut out = Vec::with_capacity(out_len);
    for _ in 0..out_len {
        let ori = (x as f64 + 0.5) as i32;
        if ori < 0 || ori as usize >= in_len {
            return None;
        }
        out.push(ori as usize);
        x += ratio;
    }
    Some(out)
}

/// One input sample to 10 bits: up-shifted from 9 or fewer bits, rounded
/// down-shift from more.
#[inline]
fn sample_to_10bit(v: u32, bits: u32) -> u16 {
    if bits >= 10 {
        let shift = bits - 10;
        let round = if shift == 0 { 0 } else { 1 << (shift - 1) };
        ((v + round) >> shift) as u16
    } else {
        (v << (10 - bits)) as u16
    }
}

/// The highest sample value of a `bits`-deep plane that libvmaf's
/// `validate_image` accepts, and the first sample above it if any (8 and
/// 16 bits are not checked: no sample can exceed them).
pub fn first_out_of_range(plane: &PlaneView, bits: u32) -> Option<(usize, usize, u32)> {
    if bits == 8 || bits == 16 {
        return None;
    }
    let max = (1u32 << bits) - 1;
    for y in 0..plane.height() {
        let row = &plane.row_u16(y)[..plane.width()];
        if let Some(x) = row.iter().position(|&v| v as u32 > max) {
            return Some((x, y, row[x] as u32));
        }
    }
    None
}

/// Luma of `plane` (`bits` deep) into `out` as 10-bit samples at
/// `xs.len()` x `ys.len()`, sampling source columns `xs` and rows `ys`
/// (`None`: the same size, every sample).
pub fn to_10bit(plane: &PlaneView, bits: u32, out: &mut Plane16, coords: Option<(&[usize], &[usize])>) {
    match coords {
        None => {
            let w = plane.width();
            for y in 0..plane.height() {
                let dst = &mut out.row_mut(y)[..w];
                if bits == 8 {
                    for (d, &s) in dst.iter_mut().zip(&plane.row_u8(y)[..w]) {
                        *d = sample_to_10bit(s as u32, bits);
                    }
                } else {
                    for (d, &s) in dst.iter_mut().zip(&plane.row_u16(y)[..w]) {
                        *d = sample_to_10bit(s as u32, bits);
                    }
                }
            }
        }
        Some((xs, ys)) => {
            for (y, &sy) in ys.iter().enumerate() {
                let dst = &mut out.row_mut(y)[..xs.len()];
                if bits == 8 {
                    let src = plane.row_u8(sy);
                    for (d, &sx) in dst.iter_mut().zip(xs) {
                        *d = sample_to_10bit(src[sx] as u32, bits);
                    }
                } else {
                    let src = plane.row_u16(sy);
                    for (d, &sx) in dst.iter_mut().zip(xs) {
                        *d = sample_to_10bit(src[sx] as u32, bits);
                    }
                }
            }
        }
    }
}

/// 2x2 box average in place (each sample with its right, lower and
/// lower-right neighbours, read before they change), for encodes below
/// 10 bits: the last column averages vertically, the last row
/// horizontally, the corner stays.
#[inline(always)]
pub fn anti_dither(image: &mut Plane16, width: usize, height: usize) {
    let stride = image.stride;
    let d = &mut image.data;
    for i in 0..height - 1 {
        for j in 0..width - 1 {
            let a = i * stride + j;
            d[a] = ((d[a] as u32 + d[a + 1] as u32 + d[a + stride] as u32 + d[a + stride + 1] as u32) >> 2) as u16;
        }
        let a = i * stride + width - 1;
        d[a] = ((d[a] as u32 + d[a + stride] as u32) >> 1) as u16;
    }
    let i = height - 1;
    for j in 0..width - 1 {
        let a = i * stride + j;
        d[a] = ((d[a] as u32 + d[a + 1] as u32) >> 1) as u16;
    }
}

/// Side of the square over which the spatial mask counts flat pixels.
pub const MASK_FILTER_SIZE: usize = 7;

fn ceil_log2(n: u32) -> u16 {
    if n == 0 {
        return 0;
    }
    let mut tmp = n - 1;
    let mut shift = 0u16;
    while tmp > 0 {
        tmp >>= 1;
        shift += 1;
    }
    shift
}

/// How many flat pixels of the 7x7 square make a pixel part of the mask
/// (more than this): about half, a little more for larger pictures.
pub fn mask_index(width: usize, height: usize) -> u32 {
    let shifted = ((width >> 6) as u32).wrapping_mul((height >> 6) as u32);
    let n = (MASK_FILTER_SIZE * MASK_FILTER_SIZE) as i32;
    ((n + 3 * (ceil_log2(shifted) as i32 - 11) - 1) >> 1) as u16 as u32
}

/// The spatial mask: 1 where more than `mask_index` pixels of the 7x7
/// square around (squares clipped to the picture) are flat, i.e. equal
/// to their right and lower neighbours (a missing neighbour at the right
/// or bottom edge counts as equal).
#[inline(always)]
pub fn spatial_mask(image: &Plane16, mask: &mut Plane16, width: usize, height: usize, scratch: &mut MaskScratch) {
    let pad = MASK_FILTER_SIZE / 2;
    let threshold = mask_index(width, height);
    let MaskScratch { flat, column_sums, squares } = scratch;
    flat.clear();
    flat.resize(width * height, 0);
    for y in 0..height {
        let row = &image.row(y)[..width];
        let out = &mut flat[y * width..(y + 1) * width];
        // Right neighbours; the last column has none and counts as equal.
        for (f, pair) in out.iter_mut().zip(row.windows(2)) {
            *f = (pair[0] == pair[1]) as u8;
        }
        out[width - 1] = 1;
        // Lower neighbours; the last row has none and counts as equal.
        let below = (y + 1 < height).then(|| &image.row(y + 1)[..width]);
        if let Some(below) = below {
            for ((f, a), b) in out.iter_mut().zip(row).zip(below) {
                *f &= (a == b) as u8;
            }
        }
    }
    // Per column, the flat count of rows y-pad..=y+pad (at most 7: a u8);
    // then each square is the sum of 7 such counts (at most 49), added
    // slice by slice so that each pass is one vector loop (wrapping adds:
    // they never wrap, and overflow checks would keep them scalar).
    column_sums.clear();
    column_sums.resize(width, 0);
    for y in 0..pad.min(height) {
        for (s, &f) in column_sums.iter_mut().zip(&flat[y * width..(y + 1) * width]) {
            *s = s.wrapping_add(f);
        }
    }
    let (inner_lo, inner_hi) = (pad.min(width), width.saturating_sub(pad).max(pad.min(width)));
    squares.clear();
    squares.resize(inner_hi - inner_lo, 0);
    for y in 0..height {
        if y + pad < height {
            let r = y + pad;
            for (s, &f) in column_sums.iter_mut().zip(&flat[r * width..(r + 1) * width]) {
                *s = s.wrapping_add(f);
            }
        }
        if y > pad {
            let r = y - pad - 1;
            for (s, &f) in column_sums.iter_mut().zip(&flat[r * width..(r + 1) * width]) {
                *s = s.wrapping_sub(f);
            }
        }
        // Squares whole inside the row: columns x-pad..=x+pad.
        squares.fill(0);
        if inner_hi > inner_lo {
            for k in 0..MASK_FILTER_SIZE {
                for (q, &c) in squares.iter_mut().zip(&column_sums[inner_lo + k - pad..]) {
                    *q = q.wrapping_add(c);
                }
            }
        }
        let out = &mut mask.row_mut(y)[..width];
        for (m, &q) in out[inner_lo..inner_hi].iter_mut().zip(squares.iter()) {
            *m = (q as u32 > threshold) as u16;
        }
        // Squares the row's ends clip.
        for x in (0..inner_lo).chain(inner_hi..width) {
            let lo = x.saturating_sub(pad);
            let hi = (x + pad + 1).min(width);
            let q: u32 = column_sums[lo..hi].iter().map(|&c| c as u32).sum();
            out[x] = (q > threshold) as u16;
        }
    }
}

/// Reusable buffers of `spatial_mask`.
#[derive(Default)]
pub struct MaskScratch {
    flat: Vec<u8>,
    column_sums: Vec<u8>,
    squares: Vec<u8>,
}

/// Keeps every other row and column, in place: (i, j) ← (2i, 2j).
#[inline(always)]
pub fn decimate(image: &mut Plane16, width: usize, height: usize) {
    let stride = image.stride;
    for i in 0..height {
        for j in 0..width {
            image.data[i * stride + j] = image.data[(2 * i) * stride + 2 * j];
        }
    }
}

#[inline]
fn min3(a: u16, b: u16, c: u16) -> u16 {
    if a <= b && a <= c {
        return a;
    }
    if b <= c {
        return b;
    }
    c
}

/// The value two of three share, else the smallest.
#[inline]
fn mode3(a: u16, b: u16, c: u16) -> u16 {
    if a == b || a == c {
        return a;
    }
    if b == c {
        return b;
    }
    min3(a, b, c)
}

/// 3x3 mode filter in place, separably: the horizontal mode of each row
/// (first and last columns kept), then the vertical mode of three such
/// rows. The first and last rows keep their original samples.
#[inline(always)]
pub fn filter_mode(image: &mut Plane16, width: usize, height: usize, lines: &mut Vec<u16>) {
    lines.clear();
    lines.resize(3 * width, 0);
    let stride = image.stride;
    let mut curr = 0;
    for i in 0..height {
        let src = &image.data[i * stride..i * stride + width];
        let line = &mut lines[curr * width..(curr + 1) * width];
        line[0] = src[0];
        for j in 1..width.saturating_sub(1) {
            line[j] = mode3(src[j - 1], src[j], src[j + 1]);
        }
        line[width - 1] = src[width - 1];
        if i > 1 {
            let dst = &mut image.data[(i - 1) * stride..(i - 1) * stride + width];
            for (j, d) in dst.iter_mut().enumerate() {
                *d = mode3(lines[j], lines[width + j], lines[2 * width + j]);
            }
        }
        curr = if curr + 1 == 3 { 0 } else { curr + 1 };
    }
}

/// What the c-value computation needs beyond the pictures: the contrast
/// steps and their thresholds, fixed per extractor.
pub struct ContrastTables<'a> {
    /// 1 << max_log_contrast: contrast steps 1..=num_diffs codes.
    pub num_diffs: usize,
    /// Per step, the highest code (plus num_diffs) where it is visible.
    pub tvi_for_diff: &'a [u16],
    /// Codes whose step reaches up to this or below are invisible.
    pub vlt_luma: u16,
    /// Suprathreshold contrast weight per step.
    pub diff_weights: &'a [i32],
    /// Codes outside base..base+size never give a c-value: histograms keep
    /// only these rows.
    pub band_base: u16,
    pub band_size: u16,
}

/// The c-value of one masked pixel whose code plus num_diffs is `value`,
/// from the histograms of its window (column `col`). kernels/cambi.cu's
/// `vx_cambi_c_value` is its device twin (tests/device/fns.rs).
#[doc(hidden)]
#[inline]
pub fn c_value_pixel(hist: &[u16], value: u16, t: &ContrastTables<'_>, lut: &[f32], col: usize, width: usize) -> f32 {
    let band_offset = t.band_base.wrapping_add(t.num_diffs as u16);
    let compact = value as i32 - band_offset as i32;
    if compact as u32 >= t.band_size as u32 {
        return 0.0;
    }
    let p0 = hist[compact as usize * width + col] as i32;
    let mut c_value = 0.0f32;
    for d in 0..t.num_diffs {
        let step = d as i32 + 1;
        if (value as i32) <= t.tvi_for_diff[d] as i32 && value as i32 + step > t.vlt_luma as i32 {
            let above = compact + step;
            let below = compact - step;
            let p1 = hist[above as usize * width + col] as i32;
            let p2 = if below >= 0 { hist[below as usize * width + col] as i32 } else { 0 };
            let val = if p1 > p2 {
                (t.diff_weights[d] * p0 * p1) as f32 * lut[(p1 + p0) as usize]
            } else {
                (t.diff_weights[d] * p0 * p2) as f32 * lut[(p2 + p0) as usize]
            };
            if val > c_value {
                c_value = val;
            }
        }
    }
    c_value
}

/// Reusable buffers of `c_values`.
#[derive(Default)]
pub struct CValueScratch {
    /// Per code in the band and per column: how many masked pixels of the
    /// window rows, columns col-pad..=col+pad, have that code.
    histograms: Vec<u16>,
}

/// The histogram row of pixel (y, x): its code less the band's base, if
/// the mask keeps it and the code is in the band (`None` otherwise).
#[inline(always)]
fn band_row(image: &Plane16, mask: &Plane16, y: usize, x: usize, t: &ContrastTables<'_>) -> Option<u16> {
    if mask.data[y * mask.stride + x] == 0 {
        return None;
    }
    let row = image.data[y * image.stride + x].wrapping_sub(t.band_base);
    (row < t.band_size).then_some(row)
}

/// Adds `delta` (1, or `u16::MAX` to remove) to every count of `range`,
/// wrapping: the scalar range update ([`c_values_with`]'s `add_range`).
#[inline(always)]
pub fn add_range(range: &mut [u16], delta: u16) {
    for h in range {
        *h = h.wrapping_add(delta);
    }
}

/// Adds `delta` (1, or `u16::MAX` to remove) to histogram row `row` of the
/// columns whose window holds column x.
#[inline(always)]
fn bump(hist: &mut [u16], row: u16, x: usize, width: usize, pad: usize, delta: u16, add: &impl Fn(&mut [u16], u16)) {
    let left = x.saturating_sub(pad);
    let right = (x + pad + 1).min(width);
    let base = row as usize * width;
    add(&mut hist[base + left..base + right], delta);
}

/// Histogram entries past the last column: the SIMD rows read each
/// 16-bit count with a 32-bit gather, which touches one entry beyond.
pub const HISTOGRAM_PAD: usize = 1;

/// One row of c-values from the histograms that hold its window: the
/// row's codes and mask (`width` each), written to `out` (0 where the mask
/// is 0). `hist` holds `width * band_size` counts plus [`HISTOGRAM_PAD`].
pub type CValueRowFn = fn(hist: &[u16], img: &[u16], msk: &[u16], out: &mut [f32], t: &ContrastTables<'_>, width: usize);

/// The scalar c-value row, the reference of the SIMD ones.
pub fn c_value_row(hist: &[u16], img: &[u16], msk: &[u16], out: &mut [f32], t: &ContrastTables<'_>, width: usize) {
    let lut = reciprocal_lut();
    for x in 0..width {
        if msk[x] != 0 {
            out[x] = c_value_pixel(hist, img[x].wrapping_add(t.num_diffs as u16), t, lut, x, width);
        }
    }
}

/// The c-value of every pixel of a `width` x `height` scale into
/// `c_values` (row-major, `width` per row; 0 where the mask is 0), with a
/// window of `window` x `window` pixels. Rows enter and leave the
/// histograms in libvmaf's order, which fixes which rows each window holds
/// near the top and bottom.
#[allow(clippy::too_many_arguments)]
pub fn c_values(
    image: &Plane16,
    mask: &Plane16,
    c_values: &mut [f32],
    scratch: &mut CValueScratch,
    window: usize,
    t: &ContrastTables<'_>,
    width: usize,
    height: usize,
) {
    c_values_with(image, mask, c_values, scratch, window, t, width, height, c_value_row, add_range);
}

/// [`c_values`] with the row kernel `row_fn` and the range update
/// `add_range` (inlined into the SIMD callers, so that the rest of the
/// histogram updates compiles for their instruction set too: integer
/// counts, the same in any order).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn c_values_with(
    image: &Plane16,
    mask: &Plane16,
    c_values: &mut [f32],
    scratch: &mut CValueScratch,
    window: usize,
    t: &ContrastTables<'_>,
    width: usize,
    height: usize,
    row_fn: impl Fn(&[u16], &[u16], &[u16], &mut [f32], &ContrastTables<'_>, usize),
    add_range: impl Fn(&mut [u16], u16),
) {
    let pad = window >> 1;
    let c_values = &mut c_values[..width * height];
    c_values.fill(0.0);
    let hist = &mut scratch.histograms;
    hist.clear();
    hist.resize(width * t.band_size as usize + HISTOGRAM_PAD, 0);
    let add = |hist: &mut [u16], y: usize| {
        for x in 0..width {
            if let Some(r) = band_row(image, mask, y, x, t) {
                bump(hist, r, x, width, pad, 1, &add_range);
            }
        }
    };
    let remove = |hist: &mut [u16], y: usize| {
        for x in 0..width {
            if let Some(r) = band_row(image, mask, y, x, t) {
                bump(hist, r, x, width, pad, u16::MAX, &add_range);
            }
        }
    };
    // Row `leaving` leaves the windows and row `entering` enters them,
    // column by column; a column whose two pixels fall in one histogram
    // row changes nothing (libvmaf skips it too: most of a flat picture).
    let slide = |hist: &mut [u16], leaving: usize, entering: usize| {
        for x in 0..width {
            let out = band_row(image, mask, leaving, x, t);
            let inn = band_row(image, mask, entering, x, t);
            if out.is_some() && out == inn {
                continue;
            }
            if let Some(r) = out {
                bump(hist, r, x, width, pad, u16::MAX, &add_range);
            }
            if let Some(r) = inn {
                bump(hist, r, x, width, pad, 1, &add_range);
            }
        }
    };
    let row = |hist: &[u16], c_values: &mut [f32], y: usize| {
        // libvmaf computes rows past the bottom when the window is as tall
        // as the scale; they are never pooled.
        if y >= height {
            return;
        }
        let img = &image.row(y)[..width];
        let msk = &mask.row(y)[..width];
        row_fn(hist, img, msk, &mut c_values[y * width..(y + 1) * width], t, width);
    };

    for y in 0..pad {
        add(hist, y);
    }
    for i in 0..pad + 1 {
        if i + pad < height {
            add(hist, i + pad);
        }
        row(hist, c_values, i);
    }
    for i in pad + 1..height.saturating_sub(pad) {
        slide(hist, i - pad - 1, i + pad);
        row(hist, c_values, i);
    }
    for i in height - pad..height {
        if i > pad {
            remove(hist, i - pad - 1);
        }
        row(hist, c_values, i);
    }
}

/// The rows `c_values`' histograms hold when they give row y its final
/// c-values, `[first, last]` per row of a `height`-row scale with a window
/// of `window` rows: [`c_values`]' loop order replayed on the interval
/// (rows enter at the bottom and leave at the top, so the histogram always
/// holds one run of rows; a row computed twice keeps its later values).
/// The device twin (kernels/cambi.cu) counts these rows directly.
pub fn window_rows(height: usize, window: usize) -> Vec<[i32; 2]> {
    let pad = window >> 1;
    // The run held: rows first..next (next exclusive).
    let (mut first, mut next) = (0usize, 0usize);
    let mut out = vec![[0i32; 2]; height];
    let record = |out: &mut [[i32; 2]], y: usize, first: usize, next: usize| {
        if y < height {
            out[y] = [first as i32, next as i32 - 1];
        }
    };
    let add = |next: &mut usize, y: usize| {
        debug_assert_eq!(*next, y, "rows enter in order");
        *next = y + 1;
    };
    for y in 0..pad {
        add(&mut next, y);
    }
    for i in 0..pad + 1 {
        if i + pad < height {
            add(&mut next, i + pad);
        }
        record(&mut out, i, first, next);
    }
    for i in pad + 1..height.saturating_sub(pad) {
        first = i - pad;
        add(&mut next, i + pad);
        record(&mut out, i, first, next);
    }
    for i in height - pad..height {
        if i > pad {
            first = i - pad;
        }
        record(&mut out, i, first, next);
    }
    out
}

/// libvmaf's `quick_select`: partially orders `arr` so that its first `k`
/// entries are the k largest, by the same swaps (the pooled sum adds them
/// in the order this leaves them).
pub fn quick_select(arr: &mut [f32], k: usize) {
    let n = arr.len();
    if n == k {
        return;
    }
    let (mut left, mut right) = (0isize, n as isize - 1);
    let k = k as isize;
    while left < right {
        let pivot = arr[k as usize];
        let (mut i, mut j) = (left, right);
        loop {
            while arr[i as usize] > pivot {
                i += 1;
            }
            while arr[j as usize] < pivot {
                j -= 1;
            }
            if i <= j {
                arr.swap(i as usize, j as usize);
                i += 1;
                j -= 1;
            }
            if i > j {
                break;
            }
        }
        if j < k {
            left = i;
        }
        if k < i {
            right = j;
        }
    }
}

/// Mean of the `topk` share of largest c-values (at least one).
pub fn spatial_pooling(c_values: &mut [f32], topk: f64) -> f64 {
    let n = c_values.len() as i32;
    let k = ((topk * n as f64) as i32).clamp(1, n);
    quick_select(c_values, k as usize);
    let mut sum = 0.0f64;
    for &v in &c_values[..k as usize] {
        sum += v as f64;
    }
    sum / k as f64
}
