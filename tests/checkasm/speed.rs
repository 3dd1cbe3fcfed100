//! checkasm for SpEED's anti-alias blur: `filter1d_decimate16`, which
//! blurs only the samples the decimation by 16 keeps, against the whole
//! blur (`filter1d`) followed by `decimate16`, as bits on the whole
//! buffer (the decimated picture and what is left around it): every
//! kernel scale libvmaf accepts, sizes below, at and across multiples of
//! 16 (where the taps mirror at both edges), strides wider than the
//! picture, random, extreme and smooth samples. The seed is printed on
//! failure.

use crate::support::synth::Rng;
use vmafx::internals::feature::speed::filter::{antialias_filter, decimate16, filter1d, filter1d_decimate16, VALID_KERNELSCALES};


fn frame(kind: u64, w: usize, h: usize, stride: usize, rng: &mut Rng) -> Vec<f32> {
    (0..stride * h)
        .map(|i| {
            let (x, y) = (i % stride, i / stride);
            match kind {
                0 => rng.below(1 << 16) as f32 / 7.0 - 4000.0,
                1 => [0.0f32, 65535.0, -1.0e-30, 1.0e30][rng.below(4) as usize],
                _ => (x * 3 + y * 5) as f32 * 0.37 + (w + h) as f32,
            }
        })
        .collect()
}

fn check(taps: &[f32], w: usize, h: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let stride = w + rng.below(9) as usize;
    let original = frame(seed % 3, w, h, stride, &mut rng);
    let mut want = original.clone();
    let mut blurred = vec![0.0f32; stride * h];
    filter1d(taps, &want, &mut blurred, &mut Vec::new(), w, h, stride);
    decimate16(&blurred, &mut want, w, h, stride);
    let mut got = original.clone();
    filter1d_decimate16(taps, &mut got, &mut Vec::new(), &mut Vec::new(), w, h, stride);
    let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
    if !same {
        let i = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()).unwrap();
        panic!(
            "speed filter1d_decimate16 ({} taps, {w}x{h} stride {stride}, seed {seed}): sample ({}, {}) {} != {}",
            taps.len(),
            i % stride,
            i / stride,
            got[i],
            want[i]
        );
    }
}

#[test]
fn blur_decimate16_equals_whole_blur_then_decimation() {
    let mut seed = 0x5bee_d000u64;
    for ks in VALID_KERNELSCALES {
        let taps = antialias_filter(4, ks);
        // Sizes from the taps' length up (`filter1d` needs a row at least
        // that long; SpEED's pictures are far larger).
        let min = taps.len();
        for (w, h) in [(min, min), (16.max(min), 16.max(min)), (17.max(min), 33), (47, 31.max(min)), (64, 48), (130, 67)] {
            seed += 1;
            check(&taps, w, h, seed);
        }
    }
    // One picture of the size the benchmarks use.
    check(&antialias_filter(4, 1.0), 1920, 1080, seed + 1);
}
