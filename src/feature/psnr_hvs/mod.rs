//! PSNR-HVS (libvmaf 3.2.0 `feature/third_party/xiph/psnr_hvs.c`, Xiph's
//! Daala tool; extractor "psnr_hvs"): per plane, 8x8 blocks every 7
//! pixels, the integer Daala DCT of both, the coefficient errors weighted
//! by a contrast sensitivity table and masked by the reference's (or the
//! distorted block's, the larger) activity; written in dB as `psnr_hvs_y`,
//! `psnr_hvs_cb`, `psnr_hvs_cr` and `psnr_hvs` (0.8 Y + 0.1 (Cb + Cr)).
//!
//! Kept as the C computes it: int DCT (wrapping, as the C's int overflow
//! does on every target libvmaf runs on), float sums and masks. libvmaf's
//! plane sizes round chroma down; only that region is read. Refused as
//! libvmaf refuses them: 4:0:0 and more than 12 bits.

use super::{Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::picture::{Chroma, PlaneView};
use crate::{Error, Result};

const NAMES: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "psnr_hvs",
    provided_features: &NAMES,
    options: &[],
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: false,
    reads_chroma: true,
    create,
};

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let bits = cfg.format.bits as u32;
    if bits > 12 {
        return Err(Error::NotSupported(format!("psnr_hvs at {bits} bits (libvmaf: 12 bits at most)")));
    }
    if cfg.format.chroma == Chroma::Yuv400 {
        return Err(Error::NotSupported("psnr_hvs on 4:0:0 (libvmaf refuses it)".into()));
    }
    let (sx, sy) = cfg.format.chroma.shift();
    let (w, h) = (cfg.width, cfg.height);
    Ok(Box::new(PsnrHvs { bits, sizes: [(w, h), (w >> sx, h >> sy), (w >> sx, h >> sy)] }))
}

struct PsnrHvs {
    bits: u32,
    /// libvmaf's plane sizes (chroma rounded down).
    sizes: [(usize, usize); 3],
}

impl Extractor for PsnrHvs {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let mut score = [0.0f64; 3];
        for p in 0..3 {
            let csf = match p {
                0 => &CSF_Y,
                1 => &CSF_CB420,
                _ => &CSF_CR420,
            };
            let (w, h) = self.sizes[p];
            score[p] = calc_psnrhvs(&frame.reference.plane(p), &frame.distorted.plane(p), self.bits, w, h, csf);
            out.push(NAMES[p], convert_score_db(score[p]));
        }
        let psnr_hvs = score[0] * 0.8 + 0.1 * (score[1] + score[2]);
        out.push(NAMES[3], convert_score_db(psnr_hvs));
        Ok(())
    }
}

/// `convert_score_db(score, 1.0)`: `10 * (-1 * log10(1.0 * score))`, whose
/// `-1 *` the C compiler folds into a negation (which flips a NaN's sign,
/// where a multiplication by -1 keeps it). LLVM would fold `10 * -x` into
/// `x * -10`, keeping it: `black_box` keeps the negation a negation.
fn convert_score_db(score: f64) -> f64 {
    10.0 * std::hint::black_box(-score.log10())
}

/// `OD_DCT_RSHIFT`: a right shift rounding towards zero.
#[inline]
fn rshift(a: i32, b: u32) -> i32 {
    (((a as u32) >> (32 - b)).wrapping_add(a as u32) as i32) >> b
}

/// `(t * c + r) >> s` with C's int arithmetic.
#[inline]
fn mul_shift(t: i32, c: i32, r: i32, s: u32) -> i32 {
    t.wrapping_mul(c).wrapping_add(r) >> s
}

/// `od_bin_fdct8`: x[k * stride] for k in 0..8 into y[0..8].
fn fdct8(y: &mut [i32], x: &[i32], at: usize, stride: usize) {
    let mut t0 = x[at];
    let mut t4 = x[at + stride];
    let mut t2 = x[at + 2 * stride];
    let mut t6 = x[at + 3 * stride];
    let mut t7 = x[at + 4 * stride];
    let mut t3 = x[at + 5 * stride];
    let mut t5 = x[at + 6 * stride];
    let mut t1 = x[at + 7 * stride];
    t1 = t0.wrapping_sub(t1);
    let t1h = rshift(t1, 1);
    t0 = t0.wrapping_sub(t1h);
    t4 = t4.wrapping_add(t5);
    let t4h = rshift(t4, 1);
    t5 = t5.wrapping_sub(t4h);
    t3 = t2.wrapping_sub(t3);
    t2 = t2.wrapping_sub(rshift(t3, 1));
    t6 = t6.wrapping_add(t7);
    let t6h = rshift(t6, 1);
    t7 = t6h.wrapping_sub(t7);
    t0 = t0.wrapping_add(t6h);
    t6 = t0.wrapping_sub(t6);
    t2 = t4h.wrapping_sub(t2);
    t4 = t2.wrapping_sub(t4);
    t0 = t0.wrapping_sub(mul_shift(t4, 13573, 16384, 15));
    t4 = t4.wrapping_add(mul_shift(t0, 11585, 8192, 14));
    t0 = t0.wrapping_sub(mul_shift(t4, 13573, 16384, 15));
    t6 = t6.wrapping_sub(mul_shift(t2, 21895, 16384, 15));
    t2 = t2.wrapping_add(mul_shift(t6, 15137, 8192, 14));
    t6 = t6.wrapping_sub(mul_shift(t2, 21895, 16384, 15));
    t3 = t3.wrapping_add(mul_shift(t5, 19195, 16384, 15));
    t5 = t5.wrapping_add(mul_shift(t3, 11585, 8192, 14));
    t3 = t3.wrapping_sub(mul_shift(t5, 7489, 4096, 13));
    t7 = rshift(t5, 1).wrapping_sub(t7);
    t5 = t5.wrapping_sub(t7);
    t3 = t1h.wrapping_sub(t3);
    t1 = t1.wrapping_sub(t3);
    t7 = t7.wrapping_add(mul_shift(t1, 3227, 16384, 15));
    t1 = t1.wrapping_sub(mul_shift(t7, 6393, 16384, 15));
    t7 = t7.wrapping_add(mul_shift(t1, 3227, 16384, 15));
    t5 = t5.wrapping_add(mul_shift(t3, 2485, 4096, 13));
    t3 = t3.wrapping_sub(mul_shift(t5, 18205, 16384, 15));
    t5 = t5.wrapping_add(mul_shift(t3, 2485, 4096, 13));
    y[..8].copy_from_slice(&[t0, t1, t2, t3, t4, t5, t6, t7]);
}

/// `od_bin_fdct8x8` in place on a row-major 8x8 block.
fn fdct8x8(block: &mut [i32; 64]) {
    let mut z = [0i32; 64];
    for i in 0..8 {
        fdct8(&mut z[8 * i..], block, i, 8);
    }
    for i in 0..8 {
        fdct8(&mut block[8 * i..], &z, i, 8);
    }
}

/// `calc_psnrhvs` of one plane (its `w` x `h` top-left region), step 7.
fn calc_psnrhvs(src: &PlaneView<'_>, dst: &PlaneView<'_>, depth: u32, w: usize, h: usize, csf: &[[f32; 8]; 8]) -> f64 {
    let mut mask = [[0.0f32; 8]; 8];
    for x in 0..8 {
        for y in 0..8 {
            let c = csf[x][y] as f64 * 0.3885746225901003;
            mask[x][y] = (c * c) as f32;
        }
    }
    let mut ret = 0.0f32;
    let mut pixels = 0i32;
    let (mut dct_s, mut dct_d) = ([0i32; 64], [0i32; 64]);
    let mut y = 0;
    while (y as isize) < h as isize - 7 {
        let mut x = 0;
        while (x as isize) < w as isize - 7 {
            let mut s_means = [0.0f32; 4];
            let mut d_means = [0.0f32; 4];
            let mut s_vars = [0.0f32; 4];
            let mut d_vars = [0.0f32; 4];
            let (mut s_gmean, mut d_gmean, mut s_gvar, mut d_gvar) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
            let (mut s_mask, mut d_mask) = (0.0f32, 0.0f32);
            for i in 0..8 {
                for j in 0..8 {
                    let sub = ((i & 12) >> 2) + ((j & 12) >> 1);
                    let (s, d) = (src.sample(x + j, y + i) as i32, dst.sample(x + j, y + i) as i32);
                    dct_s[i * 8 + j] = s;
                    dct_d[i * 8 + j] = d;
                    s_gmean += s as f32;
                    d_gmean += d as f32;
                    s_means[sub] += s as f32;
                    d_means[sub] += d as f32;
                }
            }
            s_gmean /= 64.0f32;
            d_gmean /= 64.0f32;
            for m in s_means.iter_mut().chain(d_means.iter_mut()) {
                *m /= 16.0f32;
            }
            for i in 0..8 {
                for j in 0..8 {
                    let sub = ((i & 12) >> 2) + ((j & 12) >> 1);
                    let (s, d) = (dct_s[i * 8 + j] as f32, dct_d[i * 8 + j] as f32);
                    s_gvar += (s - s_gmean) * (s - s_gmean);
                    d_gvar += (d - d_gmean) * (d - d_gmean);
                    s_vars[sub] += (s - s_means[sub]) * (s - s_means[sub]);
                    d_vars[sub] += (d - d_means[sub]) * (d - d_means[sub]);
                }
            }
            s_gvar *= 1.0f32 / 63.0f32 * 64.0f32;
            d_gvar *= 1.0f32 / 63.0f32 * 64.0f32;
            for v in s_vars.iter_mut().chain(d_vars.iter_mut()) {
                *v *= 1.0f32 / 15.0f32 * 16.0f32;
            }
            if s_gvar > 0.0 {
                s_gvar = (s_vars[0] + s_vars[1] + s_vars[2] + s_vars[3]) / s_gvar;
            }
            if d_gvar > 0.0 {
                d_gvar = (d_vars[0] + d_vars[1] + d_vars[2] + d_vars[3]) / d_gvar;
            }
            fdct8x8(&mut dct_s);
            fdct8x8(&mut dct_d);
            for i in 0..8 {
                for j in (i == 0) as usize..8 {
                    let c = dct_s[i * 8 + j];
                    s_mask += c.wrapping_mul(c) as f32 * mask[i][j];
                }
            }
            for i in 0..8 {
                for j in (i == 0) as usize..8 {
                    let c = dct_d[i * 8 + j];
                    d_mask += c.wrapping_mul(c) as f32 * mask[i][j];
                }
            }
            s_mask = (((s_mask * s_gvar) as f64).sqrt() / 32.0f32 as f64) as f32;
            d_mask = (((d_mask * d_gvar) as f64).sqrt() / 32.0f32 as f64) as f32;
            if d_mask > s_mask {
                s_mask = d_mask;
            }
            for i in 0..8 {
                for j in 0..8 {
                    let mut err = dct_s[i * 8 + j].wrapping_sub(dct_d[i * 8 + j]).wrapping_abs() as f32;
                    if i != 0 || j != 0 {
                        err = if err < s_mask / mask[i][j] { 0.0 } else { err - s_mask / mask[i][j] };
                    }
                    ret += (err * csf[i][j]) * (err * csf[i][j]);
                    pixels += 1;
                }
            }
            x += 7;
        }
        y += 7;
    }
    ret /= pixels as f32;
    let samplemax: i32 = (1 << depth) - 1;
    ret /= samplemax.wrapping_mul(samplemax) as f32;
    ret as f64
}

#[rustfmt::skip]
static CSF_Y: [[f32; 8]; 8] = [
    [1.6193873005, 2.2901594831, 2.08509755623, 1.48366094411, 1.00227514334, 0.678296995242, 0.466224900598, 0.3265091542],
    [2.2901594831, 1.94321815382, 2.04793073064, 1.68731108984, 1.2305666963, 0.868920337363, 0.61280991668, 0.436405793551],
    [2.08509755623, 2.04793073064, 1.34329019223, 1.09205635862, 0.875748795257, 0.670882927016, 0.501731932449, 0.372504254596],
    [1.48366094411, 1.68731108984, 1.09205635862, 0.772819797575, 0.605636379554, 0.48309405692, 0.380429446972, 0.295774038565],
    [1.00227514334, 1.2305666963, 0.875748795257, 0.605636379554, 0.448996256676, 0.352889268808, 0.283006984131, 0.226951348204],
    [0.678296995242, 0.868920337363, 0.670882927016, 0.48309405692, 0.352889268808, 0.27032073436, 0.215017739696, 0.17408067321],
    [0.466224900598, 0.61280991668, 0.501731932449, 0.380429446972, 0.283006984131, 0.215017739696, 0.168869545842, 0.136153931001],
    [0.3265091542, 0.436405793551, 0.372504254596, 0.295774038565, 0.226951348204, 0.17408067321, 0.136153931001, 0.109083846276],
];
#[rustfmt::skip]
static CSF_CB420: [[f32; 8]; 8] = [
    [1.91113096927, 2.46074210438, 1.18284184739, 1.14982565193, 1.05017074788, 0.898018824055, 0.74725392039, 0.615105596242],
    [2.46074210438, 1.58529308355, 1.21363250036, 1.38190029285, 1.33100189972, 1.17428548929, 0.996404342439, 0.830890433625],
    [1.18284184739, 1.21363250036, 0.978712413627, 1.02624506078, 1.03145147362, 0.960060382087, 0.849823426169, 0.731221236837],
    [1.14982565193, 1.38190029285, 1.02624506078, 0.861317501629, 0.801821139099, 0.751437590932, 0.685398513368, 0.608694761374],
    [1.05017074788, 1.33100189972, 1.03145147362, 0.801821139099, 0.676555426187, 0.605503172737, 0.55002013668, 0.495804539034],
    [0.898018824055, 1.17428548929, 0.960060382087, 0.751437590932, 0.605503172737, 0.514674450957, 0.454353482512, 0.407050308965],
    [0.74725392039, 0.996404342439, 0.849823426169, 0.685398513368, 0.55002013668, 0.454353482512, 0.389234902883, 0.342353999733],
    [0.615105596242, 0.830890433625, 0.731221236837, 0.608694761374, 0.495804539034, 0.407050308965, 0.342353999733, 0.295530605237],
];
#[rustfmt::skip]
static CSF_CR420: [[f32; 8]; 8] = [
    [2.03871978502, 2.62502345193, 1.26180942886, 1.11019789803, 1.01397751469, 0.867069376285, 0.721500455585, 0.593906509971],
    [2.62502345193, 1.69112867013, 1.17180569821, 1.3342742857, 1.28513006198, 1.13381474809, 0.962064122248, 0.802254508198],
    [1.26180942886, 1.17180569821, 0.944981930573, 0.990876405848, 0.995903384143, 0.926972725286, 0.820534991409, 0.706020324706],
    [1.11019789803, 1.3342742857, 0.990876405848, 0.831632933426, 0.77418706195, 0.725539939514, 0.661776842059, 0.587716619023],
    [1.01397751469, 1.28513006198, 0.995903384143, 0.77418706195, 0.653238524286, 0.584635025748, 0.531064164893, 0.478717061273],
    [0.867069376285, 1.13381474809, 0.926972725286, 0.725539939514, 0.584635025748, 0.496936637883, 0.438694579826, 0.393021669543],
    [0.721500455585, 0.962064122248, 0.820534991409, 0.661776842059, 0.531064164893, 0.438694579826, 0.375820256136, 0.330555063063],
    [0.593906509971, 0.802254508198, 0.706020324706, 0.587716619023, 0.478717061273, 0.393021669543, 0.330555063063, 0.285345396658],
];
