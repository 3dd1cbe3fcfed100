//! One SpEED score of a pair of float pictures (libvmaf 3.2.0
//! `feature/speed.c`, `speed_extract_score`): each picture is prescaled,
//! blurred, decimated by 16 and made zero-mean locally; a Gaussian scale
//! mixture model over 5x5 blocks then gives each block an entropy and a
//! variance, and the score is the mean over blocks of the weighted entropy
//! difference.
//!
//! Floats stay floats and doubles doubles exactly where libvmaf's C has
//! them; libvmaf's covariance kernel is its C one (its AVX2/AVX-512
//! kernels are not the reference).

use super::filter::{self, Resize};
use super::linalg::{self, SolveScratch};

/// libvmaf's `DEFAULT_BLOCK_SIZE`.
pub(crate) const BLOCK: usize = 5;
const ELEMENTS: usize = BLOCK * BLOCK;
/// Decimation by 2^4.
const NUM_SCALES: i32 = 4;

/// SpEED's options as `speed_extract_score` takes them (`SpeedOptions`).
#[derive(Clone, Debug)]
pub(crate) struct SpeedParams {
    pub kernelscale: f32,
    /// `None`: libvmaf's prescale is within 1e-3 of 1 (no resize).
    pub resize: Option<Resize>,
    pub sigma_nn: f32,
    pub nn_floor: f32,
    pub weight_var_mode: i32,
}

/// The sizes SpEED works at (`SpeedDimensions`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dimensions {
    pub width: usize,
    pub height: usize,
    pub scaled_width: usize,
    pub scaled_height: usize,
    /// Samples per row of every float buffer (libvmaf's aligned stride).
    pub stride: usize,
    pub alloc_height: usize,
    pub truncated_width: usize,
    pub truncated_height: usize,
    pub blocks_wide: usize,
    pub blocks_high: usize,
}

impl Dimensions {
    /// libvmaf's `speed_init_dimensions`; `None` where a side of the
    /// decimated picture holds no whole 5x5 block (libvmaf logs "image too
    /// small" there and goes on to read outside its buffers).
    pub(crate) fn new(width: usize, height: usize, prescale: f64) -> Option<Self> {
        let scaled_height = (height as f64 * prescale + 0.5) as i32 as usize;
        let scaled_width = (width as f64 * prescale + 0.5) as i32 as usize;
        let alloc_width = width.max(scaled_width);
        let truncated_width = (scaled_width >> NUM_SCALES) / BLOCK * BLOCK;
        let truncated_height = (scaled_height >> NUM_SCALES) / BLOCK * BLOCK;
        if truncated_width == 0 || truncated_height == 0 {
            return None;
        }
        // ALIGN_CEIL(alloc_width * sizeof(float)) over 32 bytes.
        let stride = (alloc_width * 4).div_ceil(32) * 32 / 4;
        Some(Dimensions {
            width,
            height,
            scaled_width,
            scaled_height,
            stride,
            alloc_height: height.max(scaled_height),
            truncated_width,
            truncated_height,
            blocks_wide: truncated_width / BLOCK,
            blocks_high: truncated_height / BLOCK,
        })
    }

    pub(crate) fn num_blocks(&self) -> usize {
        self.blocks_wide * self.blocks_high
    }

    /// Floats in one picture buffer.
    pub(crate) fn frame_len(&self) -> usize {
        self.stride * self.alloc_height
    }

    fn submatrix(&self) -> (usize, usize) {
        (self.truncated_width - BLOCK + 1, self.truncated_height - BLOCK + 1)
    }
}

/// Entropies and variances of one picture's blocks (`SpeedResultBuffers`).
#[derive(Default)]
struct BlockStats {
    entropies: Vec<f32>,
    variances: Vec<f32>,
}

/// Per-instance working memory (`SpeedState` without the options).
pub(crate) struct SpeedState {
    pub dim: Dimensions,
    antialias: Vec<f32>,
    local_mean: Vec<f32>,
    curr_scale: Vec<f32>,
    copy: Vec<f32>,
    decimated: Vec<f32>,
    row: Vec<f32>,
    cov: Vec<f32>,
    eigen: Vec<f32>,
    means: Vec<f32>,
    independent: Vec<f32>,
    solution: Vec<f32>,
    solve: SolveScratch,
    reference: BlockStats,
    distorted: BlockStats,
}

/// Whether one picture's covariance matrix could be inverted.
type Regular = bool;

impl SpeedState {
    pub(crate) fn new(dim: Dimensions, params: &SpeedParams) -> Self {
        let blocks = dim.num_blocks();
        SpeedState {
            dim,
            antialias: filter::antialias_filter(NUM_SCALES, params.kernelscale),
            local_mean: filter::vif_filter(NUM_SCALES, params.kernelscale),
            curr_scale: vec![0.0; dim.frame_len()],
            copy: vec![0.0; dim.frame_len()],
            decimated: Vec::new(),
            row: Vec::new(),
            cov: vec![0.0; ELEMENTS * ELEMENTS],
            eigen: vec![0.0; ELEMENTS],
            means: vec![0.0; ELEMENTS],
            independent: vec![0.0; ELEMENTS * blocks],
            solution: vec![0.0; ELEMENTS * blocks],
            solve: SolveScratch::default(),
            reference: BlockStats { entropies: vec![0.0; blocks], variances: vec![0.0; blocks] },
            distorted: BlockStats { entropies: vec![0.0; blocks], variances: vec![0.0; blocks] },
        }
    }

    /// `speed_extract_score`: both buffers (`frame_len` floats at `stride`)
    /// are filtered in place. Returns the score and whether either
    /// covariance matrix was singular (libvmaf's error return).
    pub(crate) fn score(&mut self, params: &SpeedParams, reference: &mut [f32], distorted: &mut [f32]) -> (f32, bool) {
        self.downscale(params, reference);
        self.downscale(params, distorted);
        self.score_downscaled(params, reference, distorted)
    }

    /// [`Self::score`] of two buffers already prescaled, blurred and
    /// decimated by 16 (the decimated picture at the buffer's top left, at
    /// `stride`): what a device twin hands back (speed/gpu.rs).
    pub(crate) fn score_downscaled(&mut self, params: &SpeedParams, reference: &mut [f32], distorted: &mut [f32]) -> (f32, bool) {
        self.remove_local_mean(reference);
        let ref_ok = self.est_params(reference, params.sigma_nn, true);
        self.remove_local_mean(distorted);
        let dis_ok = self.est_params(distorted, params.sigma_nn, false);
        // One side singular (rare): 0 rather than an inflated score.
        let score = if ref_ok != dis_ok { 0.0 } else { self.speed_score(params) };
        (score, !ref_ok || !dis_ok)
    }

    /// `filter_and_downscale`'s first half: prescale, anti-alias blur,
    /// decimate by 16.
    fn downscale(&mut self, params: &SpeedParams, frame: &mut [f32]) {
        let d = self.dim;
        let stride = d.stride;
        if let Some(resize) = &params.resize {
            self.copy.copy_from_slice(&frame[..d.frame_len()]);
            resize.run(&self.copy, frame, stride);
        }
        // Only the samples the decimation keeps are blurred (the same bits).
        filter::filter1d_decimate16(
            &self.antialias,
            frame,
            &mut self.decimated,
            &mut self.row,
            d.scaled_width,
            d.scaled_height,
            stride,
        );
    }

    /// `filter_and_downscale`'s second half: subtract the local mean of
    /// the decimated picture (the filter writes every sample it reads
    /// back).
    fn remove_local_mean(&mut self, frame: &mut [f32]) {
        let d = self.dim;
        let (w, h) = (d.scaled_width >> NUM_SCALES, d.scaled_height >> NUM_SCALES);
        filter::filter1d(&self.local_mean, frame, &mut self.curr_scale, &mut self.row, w, h, d.stride);
        subtract(frame, &self.curr_scale, w, h, d.stride);
    }

    /// The anti-alias taps (`speed_get_antialias_filter`).
    pub(crate) fn antialias(&self) -> &[f32] {
        &self.antialias
    }

    /// `est_params`: block entropies and variances of one filtered
    /// picture; `false` where its covariance matrix is singular (the
    /// variances are then 0).
    fn est_params(&mut self, data: &[f32], sigma_nn: f32, reference: bool) -> Regular {
        let d = self.dim;
        let blocks = d.num_blocks();
        self.covariance_matrix(data);
        linalg::eigenvalues(&self.cov, ELEMENTS, &mut self.eigen);
        self.independent_term(data);
        // `!(e < eps)`, as libvmaf tests it (a NaN passes).
        let regular = self.eigen.iter().all(|&e| !((e as f64) < linalg::EPS));
        let solved = regular
            && linalg::solve(&self.cov, ELEMENTS, &self.independent, blocks, &mut self.solution, &mut self.solve).is_ok();
        if !solved {
            self.solution.fill(0.0);
        }
        // Z = X * Y / B^2, then S = the column sums of Z (into row 0).
        let denominator = ELEMENTS as f32;
        for (x, y) in self.solution.iter_mut().zip(&self.independent) {
            *x = (*x * y) / denominator;
        }
        for i in 1..ELEMENTS {
            for j in 0..blocks {
                let v = self.solution[i * blocks + j];
                self.solution[j] += v;
            }
        }
        let log2_2pie = (2.0 * std::f64::consts::PI * std::f64::consts::E).log2();
        let out = if reference { &mut self.reference } else { &mut self.distorted };
        out.entropies.fill(0.0);
        for &eigen in &self.eigen {
            let l = if eigen < 0.0 { 0.0 } else { eigen };
            for (e, &s) in out.entropies.iter_mut().zip(&self.solution[..blocks]) {
                *e = (*e as f64 + (((l * s + sigma_nn) as f64).log2() + log2_2pie)) as f32;
            }
        }
        out.variances.copy_from_slice(&self.solution[..blocks]);
        solved
    }

    /// `compute_covariance_matrix`: the 25x25 covariance of the 5x5
    /// neighbourhoods, from float means and double sums.
    fn covariance_matrix(&mut self, data: &[f32]) {
        let d = self.dim;
        let stride = d.stride;
        let (sw, sh) = d.submatrix();
        let count_f = (sw * sh) as f32;
        for r in 0..BLOCK {
            for c in 0..BLOCK {
                let mut sum = 0.0f32;
                for i in 0..sh {
                    for v in &data[(r + i) * stride + c..(r + i) * stride + c + sw] {
                        sum += v;
                    }
                }
                self.means[r * BLOCK + c] = sum / count_f;
            }
        }
        let count_d = (sw * sh) as f64;
        for xi in 0..ELEMENTS {
            for yi in 0..=xi {
                let (rx, cx, ry, cy) = (xi / BLOCK, xi % BLOCK, yi / BLOCK, yi % BLOCK);
                let mean_x = self.means[xi] as f64;
                let mean_y = self.means[yi] as f64;
                let mut sum = 0.0f64;
                for i in 0..sh {
                    let row_x = &data[(rx + i) * stride + cx..(rx + i) * stride + cx + sw];
                    let row_y = &data[(ry + i) * stride + cy..(ry + i) * stride + cy + sw];
                    for (&vx, &vy) in row_x.iter().zip(row_y) {
                        sum += (vx as f64 - mean_x) * (vy as f64 - mean_y);
                    }
                }
                let cov = (sum / count_d) as f32;
                self.cov[xi * ELEMENTS + yi] = cov;
                self.cov[yi * ELEMENTS + xi] = cov;
            }
        }
    }

    /// `compute_independent_term`: row k (a position in the 5x5 block)
    /// holds that position's sample of every block.
    fn independent_term(&mut self, data: &[f32]) {
        let d = self.dim;
        let blocks = d.num_blocks();
        for si in 0..BLOCK {
            for sj in 0..BLOCK {
                let out_row = si * BLOCK + sj;
                for bi in 0..d.blocks_high {
                    for bj in 0..d.blocks_wide {
                        let (i, j) = (si + bi * BLOCK, sj + bj * BLOCK);
                        self.independent[out_row * blocks + bi * d.blocks_wide + bj] = data[i * d.stride + j];
                    }
                }
            }
        }
    }

    /// `get_speed_score`: the mean over blocks of |ref - dis| weighted
    /// entropies, blocks under the noise floor's entropy on both sides
    /// counting 0.
    fn speed_score(&self, p: &SpeedParams) -> f32 {
        let log2_2pie = (2.0 * std::f64::consts::PI * std::f64::consts::E).log2();
        let base = (ELEMENTS as f64 * ((((1.0 + p.nn_floor) * p.sigma_nn) as f64).log2() + log2_2pie)) as f32;
        let (r, d) = (&self.reference, &self.distorted);
        let mut score = 0.0f32;
        for i in 0..self.dim.num_blocks() {
            if r.entropies[i] < base && d.entropies[i] < base {
                continue;
            }
            let (re, de) = (r.entropies[i] as f64, d.entropies[i] as f64);
            let (rv, dv) = (r.variances[i], d.variances[i]);
            // log2(1 + v) with v a float sum (float) or a double blend.
            let lf = |v: f32| ((1.0 + v) as f64).log2();
            let ld = |v: f64| (1.0 + v).log2();
            let (wr, wd) = match p.weight_var_mode {
                0 => (lf(rv), lf(dv)),
                1 => (lf(rv), lf(rv)),
                2 => (lf(dv), lf(dv)),
                3 => {
                    let both = ld((rv + dv) as f64 / 2.0);
                    (both, both)
                }
                4 => (lf(rv), ld((rv + dv) as f64 / 2.0)),
                5 => (lf(rv), ld(0.75 * rv as f64 + 0.25 * dv as f64)),
                6 => (lf(rv), ld(0.25 * rv as f64 + 0.75 * dv as f64)),
                // The option's range stops at 6.
                _ => unreachable!("speed_weight_var_mode outside 0..=6"),
            };
            let spatial_ref = (re * wr) as f32;
            let spatial_dis = (de * wd) as f32;
            score += (spatial_ref - spatial_dis).abs();
        }
        score / self.dim.num_blocks() as f32
    }
}

/// `subtract_image`: `a -= b` over `w` x `h`.
pub(crate) fn subtract(a: &mut [f32], b: &[f32], w: usize, h: usize, stride: usize) {
    for i in 0..h {
        for j in 0..w {
            a[i * stride + j] -= b[i * stride + j];
        }
    }
}
