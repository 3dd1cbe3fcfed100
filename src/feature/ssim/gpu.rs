//! float_ssim's and float_ms_ssim's device twin (kernels/ssim.cu) on a lane
//! ([`TwinLane`]): luma to floats, the decimations (float_ssim's box,
//! MS-SSIM's 9/7 low-pass), both Gaussian passes and each pixel's l, c, s
//! on the device; one download of every scale's per-pixel terms, added on
//! the host in the CPU's row-major order ([`iqa::TermSums`]): a double sum
//! in any other order (a tree, per-row partials) would not give the CPU's
//! bits. The float finish (the means, MS-SSIM's powers, dB) is the CPU's
//! code in mod.rs.

use super::iqa::{self, SsimConstants, SsimTerms, TermSums, GAUSSIAN_LEN};
use super::{LPF, LPF_LEN, SCALES};
use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{SsimKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::{Error, Result};
use std::sync::OnceLock;

/// Rows per block of every ssim.cu kernel (`VX_SSIM_ROWS`).
const ROWS: usize = 8;

scratch_struct! {
/// The SSIM twin's device buffers.
struct SsimScratch {
    /// The Gaussian window and MS-SSIM's low-pass, uploaded once.
    gauss,
    lpf,
    /// Float images, two pairs (the scale read, the scale written).
    images,
    /// The five horizontal Gaussian planes of one scale.
    conv,
    /// l, c and s of every pixel of every scale.
    terms,
}
}

/// What the twin computes: float_ssim (decimated by `factor` first when
/// it is above 1) or MS-SSIM's five scales.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Plan {
    Single { factor: usize },
    Multi,
}

fn lpf_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| LPF.iter().flat_map(|v| v.to_ne_bytes()).collect())
}

fn gauss_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(iqa::gaussian_bytes)
}

fn grid(cols: usize, rows: usize) -> Result<(u32, u32)> {
    let gx = int(cols.div_ceil(BLOCK as usize), "width")? as u32;
    let gy = int(rows.div_ceil(ROWS), "height")? as u32;
    Ok((gx, gy))
}

/// The SSIM terms of each scale `plan` asks for (one for float_ssim, five
/// for MS-SSIM) of two luma planes in the lane's memory (8-bit samples at
/// `bits` 8, else 16-bit), equal to the CPU's [`iqa::ssim`] of the same
/// pictures.
pub(crate) fn terms_dev<L: TwinLane>(lane: &mut L, r: DevPlane, d: DevPlane, bits: u32, plan: Plan) -> Result<Vec<SsimTerms>> {
    lane.with_scratch(|lane, s: &mut SsimScratch<L::Buffer>| terms_on(lane, s, r, d, bits, plan))
}

fn terms_on<L: TwinLane>(
    lane: &mut L,
    s: &mut SsimScratch<L::Buffer>,
    r: DevPlane,
    d: DevPlane,
    bits: u32,
    plan: Plan,
) -> Result<Vec<SsimTerms>> {
    let (w, h) = (r.width, r.height);
    if d.width != w || d.height != h || d.bytes_per_sample != r.bytes_per_sample {
        return Err(Error::Mismatch("ssim: planes differ in size or depth".into()));
    }
    if r.bytes_per_sample != if bits == 8 { 1 } else { 2 } {
        return Err(Error::Mismatch(format!("ssim: {}-byte samples at {bits} bits", r.bytes_per_sample)));
    }
    // Each scale's size and how it is made from the one before.
    let mut sizes = vec![(w, h)];
    let (decimations, kernel_len) = match plan {
        Plan::Single { factor } if factor > 1 => (vec![factor], factor),
        Plan::Single { .. } => (vec![], 0),
        Plan::Multi => (vec![2; SCALES - 1], LPF_LEN),
    };
    for &f in &decimations {
        let (pw, ph) = *sizes.last().expect("the first size is there");
        iqa::check_decimate(pw, ph, f, kernel_len)?;
        sizes.push(iqa::decimated_size(pw, ph, f));
    }
    // float_ssim scores only its decimated image; MS-SSIM every scale.
    let scored: Vec<(usize, usize)> = match plan {
        Plan::Single { .. } => vec![*sizes.last().expect("one size at least")],
        Plan::Multi => sizes.clone(),
    };
    for &(sw, sh) in &scored {
        if sw < GAUSSIAN_LEN || sh < GAUSSIAN_LEN {
            return Err(Error::NotSupported(format!("ssim: a {sw}x{sh} scale is smaller than the 11x11 window")));
        }
    }

    let k: SsimKernels<L::Kernel> = lane.kernels()?;
    let gauss = lane.table(&mut s.gauss, gauss_bytes())?;
    let lpf = lane.table(&mut s.lpf, lpf_bytes())?;
    // Two pairs of w x h floats: every later scale is no larger.
    let frame = w * h * 4;
    let images = lane.grow(&mut s.images, 4 * frame)?;
    let pair = |which: usize| (images + (2 * which * frame) as u64, images + ((2 * which + 1) * frame) as u64);
    let conv = lane.grow(&mut s.conv, 5 * (w + 1 - GAUSSIAN_LEN.min(w)) * h * 4)?;
    let pixels: Vec<usize> = scored.iter().map(|&(sw, sh)| (sw + 1 - GAUSSIAN_LEN) * (sh + 1 - GAUSSIAN_LEN)).collect();
    let all_pixels: usize = pixels.iter().sum();
    let terms = lane.grow(&mut s.terms, 3 * all_pixels * 8)?;

    // Luma as floats (picture_copy) into pair 0.
    let (wi, hi) = (int(w, "width")?, int(h, "height")?);
    let (ref0, dis0) = pair(0);
    for (plane, out) in [(r, ref0), (d, dis0)] {
        let args = Args::new().ptr(plane.ptr).i32(int(plane.pitch, "pitch")?).i32(wi).i32(hi);
        let (entry, args) = match bits {
            8 => (k.ssim_to_float_8, args.ptr(out)),
            10 => (k.ssim_to_float_16, args.f32(4.0).ptr(out)),
            12 => (k.ssim_to_float_16, args.f32(16.0).ptr(out)),
            16 => (k.ssim_to_float_16, args.f32(256.0).ptr(out)),
            _ => return Err(Error::NotSupported(format!("ssim at {bits} bits (libvmaf reads 8, 10, 12 and 16)"))),
        };
        // SAFETY: ssim_to_float_8 (src, pitch, w, h, out) and _16 (.., h,
        // scaler, out); the plane spans h rows of its pitch, out w * h floats.
        unsafe { lane.launch(entry, grid(w, h)?, args) }?;
    }

    let c = SsimConstants::new();
    let mut current = 0usize;
    let mut at = 0usize;
    let scale_terms = |lane: &mut L, current: usize, (sw, sh): (usize, usize), at: &mut usize| -> Result<()> {
        let dw = sw + 1 - GAUSSIAN_LEN;
        let (a, b) = pair(current);
        let (swi, shi) = (int(sw, "width")?, int(sh, "height")?);
        let args = Args::new().ptr(a).ptr(b).i32(swi).i32(shi).ptr(gauss).ptr(conv);
        // SAFETY: ssim_conv_h (ref, dis, w, h, win, out); a and b hold sw x sh
        // floats, win 11, conv 5 x dw x sh floats (dw x sh <= w x h).
        unsafe { lane.launch(k.ssim_conv_h, grid(dw, sh)?, args) }?;
        let n = dw * (sh + 1 - GAUSSIAN_LEN);
        let (l_out, c_out, s_out) = (terms + (*at * 8) as u64, terms + ((*at + n) * 8) as u64, terms + ((*at + 2 * n) * 8) as u64);
        let args = Args::new()
            .ptr(conv)
            .i32(int(dw, "width")?)
            .i32(shi)
            .ptr(gauss)
            .f32(c.c1)
            .f32(c.c2)
            .f32(c.c3)
            .ptr(l_out)
            .ptr(c_out)
            .ptr(s_out);
        // SAFETY: ssim_terms (hp, dw, h, win, c1, c2, c3, l, c, s); conv as
        // written above, each output n doubles inside `terms` (3 x the
        // pixels of every scale, this scale's at `at`).
        unsafe { lane.launch(k.ssim_terms, grid(dw, sh + 1 - GAUSSIAN_LEN)?, args) }?;
        *at += 3 * n;
        Ok(())
    };
    if matches!(plan, Plan::Multi) {
        scale_terms(lane, current, sizes[0], &mut at)?;
    }
    for (i, &f) in decimations.iter().enumerate() {
        let ((pw, ph), (sw, sh)) = (sizes[i], sizes[i + 1]);
        let (taps, box_tap) = match plan {
            Plan::Multi => (lpf, 0.0f32),
            Plan::Single { .. } => (0, 1.0f32 / (f * f) as i32 as f32),
        };
        let next = 1 - current;
        for (src, dst) in [(pair(current).0, pair(next).0), (pair(current).1, pair(next).1)] {
            let args = Args::new()
                .ptr(src)
                .i32(int(pw, "width")?)
                .i32(int(ph, "height")?)
                .ptr(taps)
                .i32(int(kernel_len, "kernel")?)
                .f32(box_tap)
                .i32(int(f, "factor")?)
                .ptr(dst)
                .i32(int(sw, "width")?)
                .i32(int(sh, "height")?);
            // SAFETY: ssim_decimate (src, w, h, taps, k, box_tap, factor,
            // out, sw, sh); src holds pw x ph floats, dst sw x sh (<= w x h),
            // taps k x k floats or NULL; check_decimate kept every tap
            // within one reflection.
            unsafe { lane.launch(k.ssim_decimate, grid(sw, sh)?, args) }?;
        }
        current = next;
        if matches!(plan, Plan::Multi) || i + 1 == decimations.len() {
            scale_terms(lane, current, (sw, sh), &mut at)?;
        }
    }
    if decimations.is_empty() {
        scale_terms(lane, current, sizes[0], &mut at)?;
    }

    let values = lane.download_vec::<f64>(terms, 3 * all_pixels)?;
    let mut at = 0usize;
    Ok(scored
        .iter()
        .zip(&pixels)
        .map(|(&(sw, sh), &n)| {
            let (l, rest) = values[at..at + 3 * n].split_at(n);
            let (c, s) = rest.split_at(n);
            let mut sums = TermSums::default();
            for i in 0..n {
                sums.add(l[i], c[i], s[i]);
            }
            at += 3 * n;
            sums.terms(sw, sh)
        })
        .collect())
}
