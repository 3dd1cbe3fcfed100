//! PSNR's SSE of a whole picture in one round trip: the row kernels of
//! kernels/psnr.cu (libvmaf 3.2.0 `integer_psnr.c`) for every plane into
//! one buffer, one download, the rows added on the host in u64 as
//! [`Engine::psnr_sse_dev`] adds them. A context on a GPU scores PSNR with
//! one stream sync per frame instead of one per plane.

use super::engine::{int, Args, Backend, DevPlane, Engine};
use super::kernels::PsnrKernels;
use crate::{Error, Result};

/// One plane pair and the top-left region whose SSE is wanted.
#[derive(Clone, Copy, Debug)]
pub struct SseRegion {
    pub reference: DevPlane,
    pub distorted: DevPlane,
    pub width: usize,
    pub height: usize,
}

impl<B: Backend> Engine<B> {
    /// The SSE of each region ([`crate::feature::psnr::sse_u8`] /
    /// [`crate::feature::psnr::sse_u16`]); empty regions are 0, as on the
    /// CPU, and launch nothing.
    pub fn psnr_sse_regions_dev(&mut self, regions: &[SseRegion]) -> Result<Vec<u64>> {
        for r in regions {
            let (a, b) = (&r.reference, &r.distorted);
            if r.width > a.width.min(b.width) || r.height > a.height.min(b.height) {
                return Err(Error::invalid(format!(
                    "psnr: region {}x{} outside the planes",
                    r.width, r.height
                )));
            }
            if a.bytes_per_sample != b.bytes_per_sample {
                return Err(Error::Mismatch("psnr: planes differ in depth".into()));
            }
        }
        let rows_total: usize = regions.iter().map(|r| if r.width == 0 { 0 } else { r.height }).sum();
        if rows_total == 0 {
            return Ok(vec![0; regions.len()]);
        }
        let k: PsnrKernels<B::Function> = self.kernels()?;
        let rows = self.psnr.frame_rows.at_least(&mut self.backend, rows_total * 8)?;
        let mut at = 0usize;
        for r in regions {
            if r.width == 0 || r.height == 0 {
                continue;
            }
            let entry = if r.reference.bytes_per_sample == 2 { k.psnr_sse_row_16 } else { k.psnr_sse_row_8 };
            let args = Args::new()
                .ptr(r.reference.ptr)
                .ptr(r.distorted.ptr)
                .i32(int(r.reference.pitch, "pitch")?)
                .i32(int(r.distorted.pitch, "pitch")?)
                .i32(int(r.width, "width")?)
                .ptr(rows + (at * 8) as u64);
            // SAFETY: psnr_sse_row_8/16 (ref, dis, ref_stride, dis_stride, w,
            // row_sse); each plane spans `height` rows of its pitch (checked
            // above against the planes' sizes); rows + at holds `height` u64
            // (at + height <= rows_total).
            unsafe { self.launch(entry, (1, int(r.height, "height")? as u32), args) }?;
            at += r.height;
        }
        let sums = self.download_vec::<u64>(rows, rows_total)?;
        let mut at = 0usize;
        Ok(regions
            .iter()
            .map(|r| {
                if r.width == 0 || r.height == 0 {
                    return 0;
                }
                let sse = sums[at..at + r.height].iter().sum();
                at += r.height;
                sse
            })
            .collect())
    }
}
