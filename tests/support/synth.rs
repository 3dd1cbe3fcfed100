//! Synthetic frame pairs for quick tests: deterministic, seeded, with
//! texture, edges, gradients, motion and a distortion that varies by frame.

use vmafx::{Chroma, OwnedPicture, PixelFormat};

/// xorshift64*: small, deterministic, good enough for test content.
#[derive(Clone)]
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Reference content at frame `t`: moving gradients, a checkerboard block,
/// a circle and noise, scaled to `bits`.
pub fn reference_frame(fmt: PixelFormat, w: usize, h: usize, t: usize, seed: u64) -> OwnedPicture {
    let mut p = OwnedPicture::new(fmt, w, h).unwrap();
    let max = (1u32 << fmt.bits) - 1;
    let mut rng = Rng::new(seed ^ (t as u64 * 7919));
    for i in 0..fmt.chroma.plane_count() {
        let (pw, ph) = fmt.plane_size(i, w, h);
        for y in 0..ph {
            for x in 0..pw {
                let fx = x as f64 / pw as f64;
                let fy = y as f64 / ph as f64;
                let shift = t as f64 * 0.03;
                let mut v = 0.5 + 0.3 * ((fx * 6.0 + shift) * 3.1).sin() * ((fy * 4.0 - shift) * 2.3).cos();
                if ((x + 2 * t) / 8 + y / 8) % 2 == 0 && fx < 0.3 && fy > 0.5 {
                    v += 0.15;
                }
                let dx = fx - 0.6 - 0.01 * t as f64;
                let dy = fy - 0.4;
                if dx * dx + dy * dy < 0.02 {
                    v = 0.9 - v * 0.3;
                }
                v += (rng.below(1000) as f64 / 1000.0 - 0.5) * 0.04;
                let s = (v.clamp(0.0, 1.0) * max as f64).round() as u16;
                p.set(i, x, y, s);
            }
        }
    }
    p
}

/// A distorted copy: blur, quantisation and noise whose strength depends on
/// `strength` (0 = identical).
pub fn distort(src: &OwnedPicture, strength: u32, seed: u64) -> OwnedPicture {
    let fmt = src.format();
    let (w, h) = (src.width(), src.height());
    let mut d = OwnedPicture::new(fmt, w, h).unwrap();
    let max = (1i64 << fmt.bits) - 1;
    let mut rng = Rng::new(seed);
    let view = src.view();
    for i in 0..fmt.chroma.plane_count() {
        let plane = view.plane(i);
        let (pw, ph) = (plane.width(), plane.height());
        let q = 1i64 << (strength.min(6) + fmt.bits as u32 - 8);
        for y in 0..ph {
            for x in 0..pw {
                let mut acc = 0i64;
                for (dy, dx) in [(0i64, 0i64), (0, 1), (1, 0), (0, -1), (-1, 0)] {
                    let yy = (y as i64 + dy).clamp(0, ph as i64 - 1) as usize;
                    let xx = (x as i64 + dx).clamp(0, pw as i64 - 1) as usize;
                    acc += plane.sample(xx, yy) as i64;
                }
                let blurred = if strength > 0 { acc / 5 } else { plane.sample(x, y) as i64 };
                let mut v = if strength > 0 { (blurred / q) * q + q / 2 } else { blurred };
                if strength > 0 {
                    v += rng.below(2 * strength as u64 + 1) as i64 - strength as i64;
                }
                d.set(i, x, y, v.clamp(0, max) as u16);
            }
        }
    }
    d
}

/// A short clip: `n` frames with distortion strength cycling 0..=4.
pub fn clip(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, seed: u64) -> Vec<(OwnedPicture, OwnedPicture)> {
    let fmt = PixelFormat::new(chroma, bits).unwrap();
    (0..n)
        .map(|t| {
            let r = reference_frame(fmt, w, h, t, seed);
            let d = distort(&r, (t % 5) as u32, seed + t as u64);
            (r, d)
        })
        .collect()
}

/// Content where CAMBI finds banding: smooth gradients (dark, mid-grey and
/// bright, horizontal in scene 0, vertical and radial in scene 1) quantised
/// into flat steps `step` 10-bit codes tall (CAMBI looks for steps of 1
/// to 4 such codes; at least one code of `fmt`, 0: one code of `fmt`), beside noisy texture and sharp
/// edges its mask must leave out, a black and a full-scale strip. `t`
/// moves the gradients; chroma carries a gradient CAMBI never reads.
pub fn banded_frame(fmt: PixelFormat, w: usize, h: usize, t: usize, step: u32, scene: u32, seed: u64) -> OwnedPicture {
    let mut p = OwnedPicture::new(fmt, w, h).unwrap();
    let max = (1u32 << fmt.bits) - 1;
    // Step 0: one code at the picture's own depth (the smoothest it holds).
    let q = match step {
        0 => 1.0,
        s if fmt.bits >= 10 => (s << (fmt.bits - 10)) as f64,
        s => (s >> (10 - fmt.bits)).max(1) as f64,
    };
    let mut rng = Rng::new(seed ^ (t as u64 * 104729) ^ ((scene as u64) << 40));
    for i in 0..fmt.chroma.plane_count() {
        let (pw, ph) = fmt.plane_size(i, w, h);
        for y in 0..ph {
            for x in 0..pw {
                let fx = x as f64 / pw.max(2) as f64;
                let fy = y as f64 / ph.max(2) as f64;
                let shift = t as f64 * 0.02;
                let v = if i > 0 {
                    0.45 + 0.1 * fx
                } else if fx > 0.9 && fy < 0.1 {
                    if x % 2 == 0 { 0.0 } else { 1.0 }
                } else if scene == 0 {
                    match (fy * 4.0) as u32 {
                        0 => 0.06 + 0.12 * fx + shift * 0.1,
                        1 => 0.35 + 0.10 * fx - shift * 0.05,
                        2 if fx < 0.4 => 0.5 + (rng.below(1000) as f64 / 1000.0 - 0.5) * 0.3,
                        2 => 0.75 + 0.15 * fx,
                        _ => {
                            if (x / 9 + y / 7) % 3 == 0 { 0.2 } else { 0.1 + 0.08 * fx }
                        }
                    }
                } else {
                    let (dx, dy) = (fx - 0.5 - shift, fy - 0.5);
                    let r = (dx * dx + dy * dy).sqrt();
                    if fx < 0.25 {
                        0.08 + 0.2 * fy
                    } else if r < 0.3 {
                        0.55 - 0.4 * r
                    } else {
                        0.15 + (rng.below(1000) as f64 / 1000.0) * 0.05 * (x % 3) as f64
                    }
                };
                let code = (v.clamp(0.0, 1.0) * max as f64 / q).round() * q;
                p.set(i, x, y, code.min(max as f64) as u16);
            }
        }
    }
    p
}

/// A clip for CAMBI: `n` frames, a scene cut at `n / 2`; the reference's
/// steps are one code, the distorted ones 2 to 4 10-bit codes (banding).
pub fn banded_clip(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, seed: u64) -> Vec<(OwnedPicture, OwnedPicture)> {
    let fmt = PixelFormat::new(chroma, bits).unwrap();
    (0..n)
        .map(|t| {
            let scene = (t >= n / 2 && n > 1) as u32;
            let r = banded_frame(fmt, w, h, t, 0, scene, seed);
            let d = banded_frame(fmt, w, h, t, 2 + (t % 3) as u32, scene, seed);
            (r, d)
        })
        .collect()
}

/// Writes pictures as a y4m file through vmafx's own writer (25 fps).
#[allow(dead_code)]
pub fn write_y4m(path: &std::path::Path, pictures: &[&OwnedPicture]) {
    use std::io::Write;
    let first = pictures[0];
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let header = vmafx::io::Y4mHeader::new(first.width(), first.height(), first.format(), (25, 1));
    let mut w = vmafx::io::Y4mWriter::new(file, header).unwrap();
    for p in pictures {
        w.write_frame(&p.view()).unwrap();
    }
    w.into_inner().flush().unwrap();
}
