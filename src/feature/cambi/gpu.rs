//! CAMBI's device twin (kernels/cambi.cu) on a lane ([`TwinLane`]): the
//! c-values of each scale, the heaviest step (a histogram of the window's
//! codes per pixel), on the device; the host prepares each scale's image
//! and mask with the CPU's code (10-bit copy, anti-dithering, the spatial
//! mask, decimation, the mode filter) and pools the c-values with it. The
//! kernel counts each pixel's window directly over the rows libvmaf's
//! sliding histogram holds ([`super::scalar::window_rows`]): the same
//! integer counts, and the c-value's one float product as the CPU forms it.

use super::scalar::{reciprocal_lut, window_rows, ContrastTables, Plane16};
use crate::device::gpu::backend::{int, scratch_struct, Args};
use crate::device::gpu::kernels::{CambiKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::{Error, Result};

scratch_struct! {
/// The CAMBI twin's device buffers.
struct CambiScratch {
    /// The reciprocal table (uploaded once).
    lut,
    /// The visibility thresholds and contrast weights, as i32.
    tables,
    /// The scale's image and mask, rows at their stride.
    image,
    mask,
    /// Per row, the first and last window row.
    rows,
    /// The scale's c-values.
    out,
}
}

fn ne_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The c-values of a `w` x `h` scale of `image` and `mask` with a `window`
/// x `window` window into `out` (`w` per row), as the CPU's
/// `scalar::c_values` writes them, bit for bit.
#[allow(clippy::too_many_arguments)]
pub(crate) fn c_values_dev<L: TwinLane>(
    lane: &mut L,
    image: &Plane16,
    mask: &Plane16,
    window: usize,
    t: &ContrastTables<'_>,
    w: usize,
    h: usize,
    out: &mut [f32],
) -> Result<()> {
    let nd = t.num_diffs;
    if nd > 32 || t.tvi_for_diff.len() < nd || t.diff_weights.len() < nd {
        return Err(Error::Internal(format!("cambi: {nd} contrast steps (the device twin takes at most 32)")));
    }
    if image.stride != mask.stride || image.stride < w || image.data.len() < image.stride * h || mask.data.len() < mask.stride * h || out.len() < w * h {
        return Err(Error::Internal(format!("cambi: a {w}x{h} scale does not fit its working pictures")));
    }
    let stride = image.stride;
    let rows: Vec<i32> = window_rows(h, window).into_iter().flatten().collect();
    let mut tables: Vec<i32> = t.tvi_for_diff[..nd].iter().map(|&v| v as i32).collect();
    tables.extend_from_slice(&t.diff_weights[..nd]);
    lane.with_scratch(|lane, s: &mut CambiScratch<L::Buffer>| {
        let k: CambiKernels<L::Kernel> = lane.kernels()?;
        let lut = lane.table(&mut s.lut, &ne_bytes(reciprocal_lut(), f32::to_ne_bytes))?;
        let tab = lane.upload_bytes(&mut s.tables, &ne_bytes(&tables, i32::to_ne_bytes))?;
        let img = lane.upload_bytes(&mut s.image, &ne_bytes(&image.data[..stride * h], u16::to_ne_bytes))?;
        let msk = lane.upload_bytes(&mut s.mask, &ne_bytes(&mask.data[..stride * h], u16::to_ne_bytes))?;
        let rws = lane.upload_bytes(&mut s.rows, &ne_bytes(&rows, i32::to_ne_bytes))?;
        let o = lane.grow(&mut s.out, w * h * 4)?;
        let args = Args::new()
            .ptr(img)
            .ptr(msk)
            .i32(int(stride, "stride")?)
            .i32(int(w, "width")?)
            .i32(int(h, "height")?)
            .ptr(rws)
            .i32(int(window >> 1, "window")?)
            .i32(nd as i32)
            .ptr(tab)
            .i32(t.vlt_luma as i32)
            .ptr(tab + 4 * nd as u64)
            .i32(t.band_base as i32)
            .i32(t.band_size as i32)
            .ptr(lut)
            .ptr(o);
        let grid = (w.div_ceil(BLOCK as usize) as u32, int(h, "height")? as u32);
        // SAFETY: cambi_c_values (image, mask, stride, w, h, rows, pad, nd,
        // tvi, vlt, weights, band_base, band_size, lut, out): image and mask
        // hold h rows of `stride` >= w samples (checked above), rows holds
        // 2 h row indices within 0..h (window_rows), tvi and weights nd
        // i32 each (tab, tab + 4 nd), the window's counts stay below the
        // reciprocal table's size (create refuses larger windows), out
        // holds w h floats.
        unsafe { lane.launch(k.cambi_c_values, grid, args) }?;
        let got = lane.download_vec::<f32>(o, w * h)?;
        out[..w * h].copy_from_slice(&got);
        Ok(())
    })
}
