//! CIEDE2000 colour difference (libvmaf 3.2.0 `feature/ciede.c`, extractor
//! "ciede", feature "ciede2000"): each pixel pair converted from YUV
//! (BT.709, limited range) to linear RGB, XYZ (D65) and L*a*b*, its ΔE00
//! with kL 0.65, kC 1, kH 4, and per frame 45 - 20 log10(mean ΔE00).
//!
//! Kept as libvmaf computes it, type for type: doubles through the colour
//! conversion, floats for L*a*b* and most of ΔE00, its libm calls (`pow`,
//! `powf`, `atan2`, `sin`, `cos`, `exp`) where it calls them; `pow(x, 2)`
//! is x * x, as the C compiler folds it.
//!
//! 4:2:0 chroma is upsampled by repetition as libvmaf does. Refused: 4:0:0
//! and depths other than 8, 10, 12, 16 (libvmaf's init fails), 4:2:2
//! (libvmaf's upsampler walks 4:2:2 chroma as if it were 4:2:0, reading
//! past each row) and 4:2:0 with an odd side (it reads a chroma column or
//! row past the plane).

use super::{Extractor, ExtractorConfig, ExtractorDescriptor, FrameInput, FrameScores};
use crate::picture::{Chroma, Picture};
use crate::{Error, Result};
use std::f64::consts::PI;

pub(crate) static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "ciede",
    provided_features: &["ciede2000"],
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
    let (w, h) = (cfg.width, cfg.height);
    if !matches!(bits, 8 | 10 | 12 | 16) {
        return Err(Error::NotSupported(format!("ciede at {bits} bits (libvmaf reads 8, 10, 12 and 16)")));
    }
    match cfg.format.chroma {
        Chroma::Yuv444 => {}
        Chroma::Yuv400 => return Err(Error::NotSupported("ciede on 4:0:0 (it needs colour; libvmaf refuses it)".into())),
        Chroma::Yuv422 => {
            return Err(Error::NotSupported(
                "ciede on 4:2:2 (libvmaf upsamples 4:2:2 chroma as 4:2:0 and reads past its rows)".into(),
            ))
        }
        Chroma::Yuv420 if w % 2 == 1 || h % 2 == 1 => {
            return Err(Error::NotSupported(format!(
                "ciede on 4:2:0 at {w}x{h} (an odd side: libvmaf reads a chroma column or row past the plane)"
            )))
        }
        Chroma::Yuv420 => {}
    }
    Ok(Box::new(Ciede { bits }))
}

struct Ciede {
    bits: u32,
}

/// The three samples of (x, y), 4:2:0 chroma taken at (x / 2, y / 2).
#[inline]
fn yuv(p: &Picture<'_>, x: usize, y: usize) -> (f32, f32, f32) {
    let (cx, cy) = if p.format().chroma == Chroma::Yuv420 { (x / 2, y / 2) } else { (x, y) };
    (p.plane(0).sample(x, y) as f32, p.plane(1).sample(cx, cy) as f32, p.plane(2).sample(cx, cy) as f32)
}

impl Extractor for Ciede {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let (w, h) = (frame.reference.width(), frame.reference.height());
        let mut de00_sum = 0.0f64;
        for i in 0..h {
            for j in 0..w {
                let (ry, ru, rv) = yuv(frame.reference, j, i);
                let (dy, du, dv) = yuv(frame.distorted, j, i);
                let c1 = lab_color(ry as f64, ru as f64, rv as f64, self.bits);
                let c2 = lab_color(dy as f64, du as f64, dv as f64, self.bits);
                let de00 = ciede2000(c1, c2, KSub { l: 0.65, c: 1.0, h: 4.0 });
                de00_sum += de00 as f64;
            }
        }
        let pixels = (w as u32).wrapping_mul(h as u32) as f64;
        out.push("ciede2000", 45. - 20. * (de00_sum / pixels).log10());
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
struct Lab {
    l: f32,
    a: f32,
    b: f32,
}

#[derive(Clone, Copy, Debug)]
struct KSub {
    l: f32,
    c: f32,
    h: f32,
}

fn rgb_to_xyz_map(c: f64) -> f64 {
    if c > 10. / 255. {
        let a = 0.055;
        let d = 1.0 / 1.055;
        ((c + a) * d).powf(2.4)
    } else {
        let d = 1.0 / 12.92;
        c * d
    }
}

/// Returns float, as libvmaf's does.
fn xyz_to_lab_map(c: f64) -> f32 {
    let kappa = 24389.0 / 27.0;
    let epsilon = 216.0 / 24389.0;
    if c > epsilon {
        c.powf(1.0 / 3.0) as f32
    } else {
        ((kappa * c + 16.0) * (1.0 / 116.0)) as f32
    }
}

/// `get_lab_color`.
fn lab_color(y: f64, u: f64, v: f64, bpc: u32) -> Lab {
    let scale = (1u32 << (bpc - 8)) as f64;
    let y = (y - 16. * scale) * (1. / (219. * scale));
    let u = (u - 128. * scale) * (1. / (224. * scale));
    let v = (v - 128. * scale) * (1. / (224. * scale));
    let r = rgb_to_xyz_map(y + 1.28033 * v);
    let g = rgb_to_xyz_map(y - 0.21482 * u - 0.38059 * v);
    let b = rgb_to_xyz_map(y + 2.12798 * u);
    let x = r * 0.4124564390896921 + g * 0.357576077643909 + b * 0.18043748326639894;
    let y = r * 0.21267285140562248 + g * 0.715152155287818 + b * 0.07217499330655958;
    let z = r * 0.019333895582329317 + g * 0.119192025881303 + b * 0.9503040785363677;
    let x = xyz_to_lab_map(x * (1.0 / 0.95047)) as f64;
    let y = xyz_to_lab_map(y) as f64;
    let z = xyz_to_lab_map(z * (1.0 / 1.08883)) as f64;
    Lab { l: ((116.0 * y) - 16.0) as f32, a: (500.0 * (x - y)) as f32, b: (200.0 * (y - z)) as f32 }
}

fn h_prime(x: f32, y: f32) -> f32 {
    if x as f64 == 0.0 && y as f64 == 0.0 {
        return 0.0;
    }
    let mut hue = (x as f64).atan2(y as f64) as f32;
    if (hue as f64) < 0.0 {
        hue = (hue as f64 + 2. * PI) as f32;
    }
    hue
}

fn delta_h_prime(c1: f32, c2: f32, h1: f32, h2: f32) -> f32 {
    if c1 as f64 == 0.0 || c2 as f64 == 0.0 {
        return 0.0;
    }
    if ((h1 - h2).abs() as f64) <= PI {
        return h2 - h1;
    }
    if h2 <= h1 {
        ((h2 - h1) as f64 + 2. * PI) as f32
    } else {
        ((h2 - h1) as f64 - 2. * PI) as f32
    }
}

fn upcase_h_bar_prime(h1: f32, h2: f32) -> f32 {
    if ((h1 - h2) as f64).abs() > PI {
        (((h1 + h2) as f64 + 2.0 * PI) / 2.0) as f32
    } else {
        ((h1 + h2) as f64 / 2.0) as f32
    }
}

fn upcase_t(hb: f32) -> f32 {
    let hb = hb as f64;
    (1.0 - 0.17 * (hb - PI / 6.0).cos() + 0.24 * (2.0 * hb).cos() + 0.32 * (3.0 * hb + PI / 30.0).cos()
        - 0.20 * (4.0 * hb - 7.0 * PI / 20.0).cos()) as f32
}

fn radians_to_degrees(r: f32) -> f32 {
    (r as f64 * (180.0 / PI)) as f32
}

fn degrees_to_radians(d: f32) -> f32 {
    (d as f64 * (PI / 180.0)) as f32
}

/// powf(25., 7), folded by the C compiler (correctly rounded).
const POWF_25_7: f32 = 6103515625.0;
/// pow(25, 7), exact.
const POW_25_7: f64 = 6103515625.0;

fn r_sub_t(c_bar_prime: f32, hb: f32) -> f32 {
    let degrees = ((radians_to_degrees(hb) as f64 - 275.0) * (1.0 / 25.0)) as f32;
    let c7 = c_bar_prime.powf(7.0);
    let rc = ((c7 / (c7 + POWF_25_7)) as f64).sqrt();
    // powf(degrees, 2), folded to degrees * degrees.
    let angle = degrees_to_radians((60.0 * (-(degrees * degrees) as f64).exp()) as f32);
    (-2.0 * rc * (angle as f64).sin()) as f32
}

fn sq(x: f64) -> f64 {
    x * x
}

fn ciede2000(c1: Lab, c2: Lab, k: KSub) -> f32 {
    let delta_l_prime = c2.l - c1.l;
    let l_bar = (c1.l + c2.l) / 2.0;
    let cc1 = (sq(c1.a as f64) + sq(c1.b as f64)).sqrt() as f32;
    let cc2 = (sq(c2.a as f64) + sq(c2.b as f64)).sqrt() as f32;
    let c_bar = (cc1 + cc2) / 2.0;
    let c_bar7 = (c_bar as f64).powf(7.0);
    let a_prime_1 = (c1.a as f64 + (c1.a / 2.0) as f64 * (1.0 - (c_bar7 / (c_bar7 + POW_25_7)).sqrt())) as f32;
    let a_prime_2 = (c2.a as f64 + (c2.a / 2.0) as f64 * (1.0 - (c_bar7 / (c_bar7 + POW_25_7)).sqrt())) as f32;
    let c_prime_1 = (sq(a_prime_1 as f64) + sq(c1.b as f64)).sqrt() as f32;
    let c_prime_2 = (sq(a_prime_2 as f64) + sq(c2.b as f64)).sqrt() as f32;
    let c_bar_prime = (c_prime_1 + c_prime_2) / 2.0;
    let delta_c_prime = c_prime_2 - c_prime_1;
    let l50 = sq((l_bar - 50.0) as f64);
    let s_sub_l = (1. + ((0.015 * l50) / (20.0 + l50).sqrt())) as f32;
    let s_sub_c = (1. + 0.045 * c_bar_prime as f64) as f32;
    let h_prime_1 = h_prime(c1.b, a_prime_1);
    let h_prime_2 = h_prime(c2.b, a_prime_2);
    let dh = delta_h_prime(cc1, cc2, h_prime_1, h_prime_2);
    let delta_upcase_h_prime = (2.0 * ((c_prime_1 * c_prime_2) as f64).sqrt() * (dh as f64 / 2.0).sin()) as f32;
    let hb = upcase_h_bar_prime(h_prime_1, h_prime_2);
    let t = upcase_t(hb);
    let s_sub_upcase_h = (1.0 + 0.015 * c_bar_prime as f64 * t as f64) as f32;
    let rt = r_sub_t(c_bar_prime, hb);
    let lightness = delta_l_prime / (k.l * s_sub_l);
    let chroma = delta_c_prime / (k.c * s_sub_c);
    let hue = delta_upcase_h_prime / (k.h * s_sub_upcase_h);
    (sq(lightness as f64) + sq(chroma as f64) + sq(hue as f64) + (rt * chroma * hue) as f64).sqrt() as f32
}
