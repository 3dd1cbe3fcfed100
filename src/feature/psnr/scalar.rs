//! Sums of squared differences over the top-left `w` x `h` of two planes,
//! as libvmaf's `psnr` (8-bit: int16 difference, uint32 per row, uint64
//! total) and `psnr_hbd` (uint32 square, uint64 total) accumulate them.

use crate::picture::PlaneView;

/// SSE of 8-bit planes.
pub fn sse_u8(r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> u64 {
    let mut sse = 0u64;
    for y in 0..h {
        let (a, b) = (&r.row_u8(y)[..w], &d.row_u8(y)[..w]);
        let mut row = 0u32;
        for (&x, &z) in a.iter().zip(b) {
            let e = x as i32 - z as i32;
            row = row.wrapping_add((e * e) as u32);
        }
        sse += row as u64;
    }
    sse
}

/// SSE of 16-bit planes (any depth above 8).
pub fn sse_u16(r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> u64 {
    let mut sse = 0u64;
    for y in 0..h {
        let (a, b) = (&r.row_u16(y)[..w], &d.row_u16(y)[..w]);
        for (&x, &z) in a.iter().zip(b) {
            let e = (x as i32 - z as i32).unsigned_abs();
            sse += (e * e) as u64;
        }
    }
    sse
}
