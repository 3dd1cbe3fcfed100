//! checkasm for motion: every SIMD level's SAD kernel against the scalar
//! reference on random and extreme input, odd widths and padded strides.

use crate::support;
use crate::support::synth::Rng;
use vmafx::PlaneView;
use vmafx::internals::feature::motion::{sad_fn, sad_scalar};

#[derive(Clone, Copy, Debug)]
enum Fill {
    Random,
    /// prev all max, cur all zero: the largest blurred differences.
    Extreme,
    /// Alternating max/zero stripes, opposite phase in prev and cur.
    Stripes,
    /// Small differences around mid-grey (the common case).
    Near,
}

fn fill(buf: &mut [u16], w: usize, h: usize, stride: usize, bits: u32, fill: Fill, prev: bool, rng: &mut Rng) {
    let max = (1u32 << bits) - 1;
    for y in 0..h {
        for x in 0..w {
            let v = match fill {
                Fill::Random => rng.below(max as u64 + 1) as u32,
                Fill::Extreme => if prev { max } else { 0 },
                Fill::Stripes => if ((x + y) % 2 == 0) == prev { max } else { 0 },
                Fill::Near => (max / 2).saturating_add(rng.below(9) as u32).saturating_sub(4),
            };
            buf[y * stride + x] = v as u16;
        }
    }
}

#[test]
fn motion_sad_simd_matches_scalar() {
    let seed = std::env::var("CHECKASM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_u64);
    let mut rng = Rng::new(seed);
    let levels = support::cpu::simd_levels("motion");
    let mut cases = 0;
    for bits in [8u32, 10, 12, 16] {
        for &w in &[3usize, 4, 7, 15, 16, 17, 31, 33, 64, 67, 129, 1031] {
            for &h in &[3usize, 4, 5, 9, 67] {
                for f in [Fill::Random, Fill::Extreme, Fill::Stripes, Fill::Near] {
                    let bps = if bits > 8 { 2 } else { 1 };
                    let stride = w + rng.below(9) as usize; // in samples
                    let mut a = vec![0u16; stride * h];
                    let mut b = vec![0u16; stride * h];
                    fill(&mut a, w, h, stride, bits, f, true, &mut rng);
                    fill(&mut b, w, h, stride, bits, f, false, &mut rng);
                    let to_bytes = |v: &[u16]| -> Vec<u8> {
                        if bps == 1 { v.iter().map(|&s| s as u8).collect() } else { v.iter().flat_map(|s| s.to_ne_bytes()).collect() }
                    };
                    let (ab, bb) = (to_bytes(&a), to_bytes(&b));
                    // Vec<u8> from a u16 iterator is 1-aligned; copy into u16 storage for 2-byte planes.
                    let (a16, b16);
                    let (pa, pb) = if bps == 2 {
                        a16 = a.clone();
                        b16 = b.clone();
                        // SAFETY: the bytes of a live Vec<u16> (a16 outlives the view),
                        // 2 per element; u8 has no alignment or validity needs.
                        let ap = unsafe { std::slice::from_raw_parts(a16.as_ptr() as *const u8, a16.len() * 2) };
                        // SAFETY: the same for b16.
                        let bp = unsafe { std::slice::from_raw_parts(b16.as_ptr() as *const u8, b16.len() * 2) };
                        (PlaneView::new(ap, stride * 2, w, h, 2).unwrap(), PlaneView::new(bp, stride * 2, w, h, 2).unwrap())
                    } else {
                        (PlaneView::new(&ab, stride, w, h, 1).unwrap(), PlaneView::new(&bb, stride, w, h, 1).unwrap())
                    };
                    let want = sad_scalar(&pa, &pb, bits, &mut Vec::new());
                    for &level in &levels {
                        let got = sad_fn(level)(&pa, &pb, bits, &mut Vec::new());
                        assert_eq!(got, want, "motion sad {level:?} bits={bits} w={w} h={h} stride={stride} fill={f:?} seed={seed}");
                    }
                    cases += 1;
                }
            }
        }
    }
    eprintln!("checkasm_motion: {cases} cases x {:?} levels, seed {seed}", levels);
}

/// Ours per level and libvmaf's motion extractor, per 1080p frame (median thread
/// CPU time, frames interleaved: `timing::interleaved`). Both blur the
/// difference of two unequal lumas: ours the pair's, libvmaf's each
/// reference's against the last, the references alternating between the
/// pair's two pictures (`Feed::AlternatingReference`).
#[test]
#[ignore = "timing, not a check: cargo test --release --test checkasm -- --ignored --nocapture motion::"]
fn motion_timing() {
    use crate::timing;
    use vmafx::CpuLevel;
    let reps: u32 = std::env::var("VMAFX_PROFILE_REPS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    for bits in [8u8, 10] {
        let frame = timing::hd_frame(bits);
        let (rv, dv) = (frame.0.view(), frame.1.view());
        let variants: Vec<timing::Variant> = CpuLevel::available()
            .map(|level| {
                let sad = sad_fn(level);
                let (rv, dv) = (&rv, &dv);
                let mut y_row = Vec::new();
                let time_one = move || {
                    let t = timing::thread_cpu_ms();
                    std::hint::black_box(sad(&rv.luma(), &dv.luma(), bits as u32, &mut y_row));
                    timing::thread_cpu_ms() - t
                };
                (format!("vmafx {}", level.name()), Box::new(time_one) as Box<dyn FnMut() -> f64>)
            })
            .collect();
        let medians = timing::interleaved("motion", &frame, timing::Feed::AlternatingReference, reps, variants);
        println!("1920x1080 {bits}-bit motion, ms/frame (median thread CPU time, frames interleaved):{medians}");
    }
}
