//! SpEED's device twin (kernels/speed.cu) on a lane ([`TwinLane`]): the
//! picture copy (for `speed_temporal`, of two frames and their float
//! difference), the anti-alias blur and the decimation by 16 of
//! `filter_and_downscale` on the device, for the samples decimation keeps
//! only; one download of every input's decimated picture. The host runs
//! the rest with the CPU's code ([`super::scalar::SpeedState::score_downscaled`]:
//! the local mean, the 5x5 block statistics and their eigenvalues, the
//! score): a picture 1/256 the size, whose sums and linear algebra are
//! kept the CPU's by running the CPU's code. The prescale (an option, off
//! by default) has no device twin yet: such a context is refused.

use crate::device::gpu::backend::{int, scratch_struct, Args, DevPlane};
use crate::device::gpu::kernels::{SpeedKernels, BLOCK};
use crate::device::gpu::twin::TwinLane;
use crate::{Error, Result};

scratch_struct! {
/// The SpEED twin's device buffers.
struct SpeedScratch {
    /// The anti-alias taps of the call.
    taps,
    /// Every plane's decimated picture.
    out,
}
}

/// One picture SpEED blurs: a plane's `picture_copy`, minus a second
/// plane's where `minus` is given (`speed_temporal`'s previous minus
/// current frame).
#[derive(Clone, Copy)]
pub(crate) struct SpeedInput {
    pub plane: DevPlane,
    pub minus: Option<DevPlane>,
}

/// The anti-alias-blurred, 16-times decimated picture of each `w` x `h`
/// input (the top-left `w` x `h` of each plane; 8-bit samples at `bits` 8,
/// else 16-bit), `w / 16` x `h / 16` floats each, row-major: the samples
/// the CPU's `SpeedState::downscale` leaves, bit for bit.
pub(crate) fn downscale_dev<L: TwinLane>(
    lane: &mut L,
    inputs: &[SpeedInput],
    bits: u32,
    w: usize,
    h: usize,
    taps: &[f32],
) -> Result<Vec<Vec<f32>>> {
    let (ow, oh) = (w / 16, h / 16);
    let half = taps.len() / 2;
    if ow == 0 || oh == 0 || half >= w.min(h) {
        return Err(Error::NotSupported(format!("speed: a {w}x{h} plane is too small for a {}-tap blur", taps.len())));
    }
    let scaler = match bits {
        8 => 1.0f32,
        10 => 4.0,
        12 => 16.0,
        16 => 256.0,
        _ => return Err(Error::NotSupported(format!("speed at {bits} bits (libvmaf reads 8, 10, 12 and 16)"))),
    };
    let bytes = if bits == 8 { 1 } else { 2 };
    for p in inputs.iter().flat_map(|i| std::iter::once(i.plane).chain(i.minus)) {
        if p.width < w || p.height < h || p.bytes_per_sample != bytes {
            return Err(Error::Mismatch(format!("speed: a {}x{} plane of {}-byte samples, {w}x{h} at {bits} bits wanted", p.width, p.height, p.bytes_per_sample)));
        }
    }
    lane.with_scratch(|lane, s: &mut SpeedScratch<L::Buffer>| {
        let k: SpeedKernels<L::Kernel> = lane.kernels()?;
        let tap_bytes: Vec<u8> = taps.iter().flat_map(|t| t.to_ne_bytes()).collect();
        let t = lane.upload_bytes(&mut s.taps, &tap_bytes)?;
        let n = ow * oh;
        let out = lane.grow(&mut s.out, inputs.len() * n * 4)?;
        let grid = (ow.div_ceil(BLOCK as usize) as u32, int(oh, "height")? as u32);
        for (i, input) in inputs.iter().enumerate() {
            let (p, minus) = (input.plane, input.minus);
            let args = Args::new()
                .ptr(p.ptr)
                .i32(int(p.pitch, "pitch")?)
                .ptr(minus.map_or(0, |m| m.ptr))
                .i32(int(minus.map_or(0, |m| m.pitch), "pitch")?)
                .i32(bytes as i32)
                .f32(scaler)
                .i32(int(w, "width")?)
                .i32(int(h, "height")?)
                .ptr(t)
                .i32(int(taps.len(), "taps")?)
                .ptr(out + (i * n * 4) as u64)
                .i32(int(ow, "width")?);
            // SAFETY: speed_blur_dec16 (src, pitch, sub, sub_pitch, bytes,
            // scaler, w, h, taps, len, out, ow); both planes (sub null when
            // absent) span h rows of w samples of `bytes` (checked above),
            // every mirrored index stays in 0..w / 0..h (half < w, h),
            // taps holds len floats, out + i n holds n = ow x oh floats.
            unsafe { lane.launch(k.speed_blur_dec16, grid, args) }?;
        }
        let all = lane.download_vec::<f32>(out, inputs.len() * n)?;
        Ok(all.chunks_exact(n).map(<[f32]>::to_vec).collect())
    })
}
