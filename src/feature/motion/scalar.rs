//! Scalar motion SAD: the reference the SIMD twins are checked against.

use super::FILTER;
use crate::picture::PlaneView;

/// libvmaf's mirror for the 3.2.0 pipeline: -1 → 1, size → size - 2.
#[inline]
pub(crate) fn mirror(idx: i32, size: i32) -> usize {
    if idx < 0 {
        (-idx) as usize
    } else if idx >= size {
        (2 * size - idx - 2) as usize
    } else {
        idx as usize
    }
}

/// Sum over the picture of |blur_x(blur_y(prev - cur))|, libvmaf's
/// `motion_score_pipeline_8` / `_16`.
pub fn sad(prev: &PlaneView, cur: &PlaneView, bits: u32, y_row: &mut Vec<i32>) -> u64 {
    let (w, h) = (cur.width(), cur.height());
    y_row.resize(w, 0);
    let mut total: u64 = 0;
    for i in 0..h {
        let rows: [usize; 5] = std::array::from_fn(|k| mirror(i as i32 - 2 + k as i32, h as i32));
        let mut any_nonzero = 0i32;
        if bits == 8 {
            let p: [&[u8]; 5] = rows.map(|r| prev.row_u8(r));
            let c: [&[u8]; 5] = rows.map(|r| cur.row_u8(r));
            for j in 0..w {
                let mut acc = 0i32;
                for k in 0..5 {
                    acc += FILTER[k] * (p[k][j] as i32 - c[k][j] as i32);
                }
                y_row[j] = (acc + (1 << 7)) >> 8;
                any_nonzero |= y_row[j];
            }
        } else {
            let p: [&[u16]; 5] = rows.map(|r| prev.row_u16(r));
            let c: [&[u16]; 5] = rows.map(|r| cur.row_u16(r));
            for j in 0..w {
                let mut acc = 0i64;
                for k in 0..5 {
                    acc += FILTER[k] as i64 * (p[k][j] as i32 - c[k][j] as i32) as i64;
                }
                y_row[j] = ((acc + (1i64 << (bits - 1))) >> bits) as i32;
                any_nonzero |= y_row[j];
            }
        }
        if any_nonzero == 0 {
            continue;
        }
        let mut row_sad: u32 = 0;
        for j in 0..w {
            let mut acc = 0i64;
            for k in 0..5 {
                acc += FILTER[k] as i64 * y_row[mirror(j as i32 - 2 + k as i32, w as i32)] as i64;
            }
            let v = ((acc + (1 << 15)) >> 16) as i32;
            row_sad = row_sad.wrapping_add(v.unsigned_abs());
        }
        total += row_sad as u64;
    }
    total
}
