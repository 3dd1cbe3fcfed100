//! Integer PSNR (libvmaf 3.2.0 `feature/integer_psnr.c`, extractor "psnr").
//!
//! Per frame and plane: the sum of squared differences (`psnr` at 8 bits,
//! `psnr_hbd` above), MSE = SSE / pixels, PSNR = 10 log10(peak² / MSE)
//! clipped at `psnr_max` (6 * bpc + 12 dB, or from `min_sse`). Written as
//! `psnr_y`, `psnr_cb`, `psnr_cr` (and `mse_*` with `enable_mse`). With
//! `enable_apsnr`, `flush` sets the aggregates `apsnr_y/cb/cr` from the SSE
//! and pixel counts of the whole stream.
//!
//! libvmaf's chroma planes are (w >> ss_x) x (h >> ss_y); ours round up, so
//! only that top-left region is read.

pub(crate) mod gpu;
mod scalar;

use super::options::{OptionKind, OptionSpec};
use super::{
    DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput,
    FrameScores,
};
use crate::device::gpu::ErasedRunner;
use gpu::SseRegion;
use crate::picture::{Chroma, PixelFormat};
use crate::score::collector::PRIVATE_PREFIX;
use crate::score::FeatureCollector;
use crate::{Error, Result};

pub use scalar::{sse_u16, sse_u8};

const PSNR_NAMES: [&str; 3] = ["psnr_y", "psnr_cb", "psnr_cr"];
const MSE_NAMES: [&str; 3] = ["mse_y", "mse_cb", "mse_cr"];
const APSNR_NAMES: [&str; 3] = ["apsnr_y", "apsnr_cb", "apsnr_cr"];

static OPTIONS: [OptionSpec; 5] = [
    OptionSpec {
        name: "enable_chroma",
        alias: None,
        help: "enable calculation for chroma channels",
        kind: OptionKind::Bool { default: true },
        feature_param: false,
    },
    OptionSpec {
        name: "enable_mse",
        alias: None,
        help: "enable MSE calculation",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    OptionSpec {
        name: "enable_apsnr",
        alias: None,
        help: "enable APSNR calculation",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    OptionSpec {
        name: "reduced_hbd_peak",
        alias: None,
        help: "reduce hbd peak value to align with scaled 8-bit content",
        kind: OptionKind::Bool { default: false },
        feature_param: false,
    },
    OptionSpec {
        name: "min_sse",
        alias: None,
        help: "constrain the minimum possible sse",
        kind: OptionKind::Double { default: 0.0, min: 0.0, max: f64::MAX },
        feature_param: false,
    },
];

pub static DESCRIPTOR: ExtractorDescriptor = ExtractorDescriptor {
    name: "psnr",
    provided_features: &PSNR_NAMES,
    options: &OPTIONS,
    // libvmaf flags psnr TEMPORAL: it runs on every frame, even those a
    // subsample rate skips (its apsnr aggregate sums them all).
    needs_prev_reference: false,
    needs_prev_distorted: false,
    needs_two_back: crate::feature::never_two_back,
    every_frame: true,
    reads_chroma: true,
    create,
};

/// Private per-frame values for the apsnr aggregates: SSE and pixel count
/// per plane (exact as doubles: both stay far below 2^53).
fn apsnr_sse_name(p: usize) -> String {
    format!("{PRIVATE_PREFIX}psnr_sse_{p}")
}
fn apsnr_pixels_name(p: usize) -> String {
    format!("{PRIVATE_PREFIX}psnr_pixels_{p}")
}

struct Psnr {
    enable_chroma: bool,
    enable_mse: bool,
    enable_apsnr: bool,
    bits: u32,
    peak: u32,
    psnr_max: [f64; 3],
    /// libvmaf's plane sizes: chroma rounded down.
    plane_size: [(usize, usize); 3],
    /// Whole-stream sums for apsnr (libvmaf's uint64 state, order-free),
    /// taken from the private per-frame values as frames are committed,
    /// so the collector need not keep them: (sse, pixels) per plane.
    apsnr_sums: [(u64, u64); 3],
    /// Frames summed into `apsnr_sums`.
    apsnr_summed: u32,
}

#[inline]
fn c_min(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

#[inline]
fn c_max(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

/// libvmaf's plane sizes for a `w` x `h` picture of `format`.
fn libvmaf_plane_sizes(format: PixelFormat, w: usize, h: usize) -> [(usize, usize); 3] {
    let (sx, sy) = format.chroma.shift();
    [(w, h), (w >> sx, h >> sy), (w >> sx, h >> sy)]
}

fn create(cfg: &ExtractorConfig) -> Result<Box<dyn Extractor>> {
    let o: &FeatureOptions = &cfg.options;
    let bits = cfg.format.bits as u32;
    if !matches!(bits, 8 | 10 | 12 | 16) {
        // libvmaf's extract returns -EINVAL for other depths.
        return Err(Error::NotSupported(format!("psnr at {bits} bits (libvmaf scores 8, 10, 12 and 16)")));
    }
    let reduced_hbd_peak = o.get_bool(&OPTIONS, "reduced_hbd_peak");
    let peak: u32 = if reduced_hbd_peak { 255 << (bits - 8) } else { (1 << bits) - 1 };
    let mut enable_chroma = o.get_bool(&OPTIONS, "enable_chroma");
    if cfg.format.chroma == Chroma::Yuv400 {
        enable_chroma = false;
    }
    let min_sse = o.get_double(&OPTIONS, "min_sse");
    let (w, h) = (cfg.width as u32, cfg.height as u32);
    let mut psnr_max = [0.0; 3];
    for (i, m) in psnr_max.iter_mut().enumerate() {
        if min_sse != 0.0 {
            let ss_hor = cfg.format.chroma != Chroma::Yuv444;
            let ss_ver = cfg.format.chroma == Chroma::Yuv420;
            let pw = if i > 0 && ss_hor { w / 2 } else { w };
            let ph = if i > 0 && ss_ver { h / 2 } else { h };
            let mse = min_sse / pw.wrapping_mul(ph) as f64;
            *m = (10.0 * ((peak.wrapping_mul(peak)) as f64 / mse).log10()).ceil();
        } else {
            *m = (6 * bits + 12) as f64;
        }
    }
    Ok(Box::new(Psnr {
        enable_chroma,
        enable_mse: o.get_bool(&OPTIONS, "enable_mse"),
        enable_apsnr: o.get_bool(&OPTIONS, "enable_apsnr"),
        bits,
        peak,
        apsnr_sums: [(0, 0); 3],
        apsnr_summed: 0,
        psnr_max,
        plane_size: libvmaf_plane_sizes(cfg.format, cfg.width, cfg.height),
    }))
}

impl Psnr {
    /// Scores every plane from its SSE over libvmaf's plane size, which
    /// `sse(p, w, h)` computes (on the CPU or on a device). Shared by both
    /// paths, so the values are the same given the same sums.
    fn score(
        &self,
        out: &mut FrameScores,
        mut sse: impl FnMut(usize, usize, usize) -> Result<u64>,
    ) -> Result<()> {
        let n = if self.enable_chroma { 3 } else { 1 };
        for p in 0..n {
            let (w, h) = self.plane_size[p];
            let sse = sse(p, w, h)?;
            let pixels = (w as u32).wrapping_mul(h as u32);
            if self.enable_apsnr {
                out.push(&apsnr_sse_name(p), sse as f64);
                out.push(&apsnr_pixels_name(p), pixels as f64);
            }
            let mse = sse as f64 / pixels as f64;
            // psnr() hard-codes peak 255 at 8 bits; psnr_hbd uses s->peak.
            let peak_sq =
                if self.bits == 8 { 255.0 * 255.0 } else { self.peak.wrapping_mul(self.peak) as f64 };
            let psnr = c_min(10.0 * (peak_sq / c_max(mse, 1e-16)).log10(), self.psnr_max[p]);
            out.push(PSNR_NAMES[p], psnr);
            if self.enable_mse {
                out.push(MSE_NAMES[p], mse);
            }
        }
        Ok(())
    }
}

fn check_plane(p: usize, have: [(usize, usize); 2], w: usize, h: usize) -> Result<()> {
    if have.iter().any(|&(pw, ph)| pw < w || ph < h) {
        return Err(Error::Internal(format!("psnr: plane {p} smaller than {w}x{h}")));
    }
    Ok(())
}

impl Extractor for Psnr {
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
        let bits = self.bits;
        self.score(out, |p, w, h| {
            let r = frame.reference.plane(p);
            let d = frame.distorted.plane(p);
            check_plane(p, [(r.width(), r.height()), (d.width(), d.height())], w, h)?;
            Ok(if bits == 8 { sse_u8(&r, &d, w, h) } else { sse_u16(&r, &d, w, h) })
        })
    }

    fn has_device_twin(&self) -> bool {
        true
    }

    fn extract_device(
        &mut self,
        frame: &DeviceFrameInput<'_>,
        lane: &mut ErasedRunner,
        out: &mut FrameScores,
    ) -> Result<()> {
        // Every plane's SSE in one round trip, then the shared finish.
        let n = if self.enable_chroma { 3 } else { 1 };
        let mut regions = Vec::with_capacity(n);
        for p in 0..n {
            let (w, h) = self.plane_size[p];
            let (r, d) = match (frame.reference.planes.get(p), frame.distorted.planes.get(p)) {
                (Some(r), Some(d)) => (*r, *d),
                _ => return Err(Error::Internal(format!("psnr: plane {p} is not on the device"))),
            };
            check_plane(p, [(r.width, r.height), (d.width, d.height)], w, h)?;
            // An empty region (chroma of a 1-pixel-wide 4:2:x picture) sums
            // to 0, as on the CPU.
            regions.push(SseRegion { reference: r, distorted: d, width: w, height: h });
        }
        let sse = gpu::sse_regions_dev(lane, &regions)?;
        self.score(out, |p, _, _| Ok(sse[p]))
    }

    fn settle(&mut self, c: &mut FeatureCollector, committed: u32, _eof: bool) -> Result<u32> {
        if self.enable_apsnr {
            for i in self.apsnr_summed..committed {
                for (p, (sse, pixels)) in self.apsnr_sums.iter_mut().enumerate() {
                    let s = c.get(&apsnr_sse_name(p), i).unwrap_or(0.0) as u64;
                    let n = c.get(&apsnr_pixels_name(p), i).unwrap_or(0.0) as u64;
                    *sse = sse.wrapping_add(s);
                    *pixels = pixels.wrapping_add(n);
                }
            }
        }
        self.apsnr_summed = self.apsnr_summed.max(committed);
        Ok(committed)
    }

    fn flush(&mut self, c: &mut FeatureCollector) -> Result<()> {
        if !self.enable_apsnr {
            return Ok(());
        }
        for (p, name) in APSNR_NAMES.iter().enumerate() {
            let (sse, pixels) = self.apsnr_sums[p];
            let peak_sq = self.peak.wrapping_mul(self.peak);
            let apsnr = 10.0 * ((peak_sq as f64).log10() + (pixels as f64).log10() - (sse as f64).log10());
            let max_apsnr =
                (10.0 * ((peak_sq as u64).wrapping_mul(pixels).wrapping_mul(2) as f64).log10()).ceil();
            c.set_aggregate(name, c_min(apsnr, max_apsnr))?;
        }
        Ok(())
    }
}
