//! Integer PSNR against libvmaf 3.2.0: psnr_y/cb/cr (and mse_*) per frame
//! as bits, at 8/10/12/16 bits, odd sizes (libvmaf's chroma planes round
//! down), 400/420/422/444, every option; apsnr aggregates against the
//! values libvmaf prints in its JSON log.

use std::sync::Arc;

use crate::support::{reference, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::psnr::DESCRIPTOR;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, opts: &[(&str, &str)], threads: usize, subsample: u32) -> Context {
    let mut o = FeatureOptions::new();
    for (k, v) in opts {
        o.set_text(DESCRIPTOR.options, k, v).unwrap();
    }
    let cfg = ContextConfig { threads, subsample, cpu: CpuLevel::detect_host(), ..Default::default() };
    let mut ctx = Context::new(cfg).unwrap();
    ctx.use_feature("psnr", o).unwrap();
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    ctx
}

/// The text libvmaf printed for aggregate `name` in its JSON log.
fn printed_aggregate<'a>(log: &'a str, name: &str) -> Option<&'a str> {
    let section = &log[log.find("\"aggregate_metrics\"")?..];
    let key = format!("\"{name}\": ");
    let start = section.find(&key)? + key.len();
    let rest = &section[start..];
    let end = rest.find([',', '\n']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

/// Our aggregate printed as libvmaf's output.c prints it.
fn print_like_libvmaf(v: f64, their_text: &str) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    let decimals = their_text.split('.').nth(1).map_or(6, |d| d.len());
    format!("{v:.decimals$}")
}

fn check(frames: &Clip, opts: &[(&str, &str)], what: &str, threads: usize, subsample: u32) {
    let ctx = ours(frames, opts, threads, subsample);
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert!(!names.is_empty(), "{what}: nothing written");
    let spec = reference::RefSpec {
        features: vec![("psnr".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        subsample,
        ..Default::default()
    };
    let theirs = reference::run(frames, &spec, &names);
    let mut log_names = theirs.log_names.clone();
    log_names.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, log_names, "{what}: feature names");
    for n in &names {
        for i in 0..frames.len() as u32 {
            let a = ctx.score_at(n, i);
            let b = theirs.values[n][i as usize];
            assert_eq!(
                a.map(f64::to_bits),
                b.map(f64::to_bits),
                "{what}: {n} frame {i}: ours {a:?}, libvmaf {b:?}"
            );
        }
    }
    let apsnr = opts.contains(&("enable_apsnr", "true"));
    for name in ["apsnr_y", "apsnr_cb", "apsnr_cr"] {
        let text = printed_aggregate(&theirs.log_json, name);
        let mine = ctx.collector().aggregate(name);
        assert_eq!(text.is_some(), apsnr, "{what}: libvmaf aggregate {name}");
        assert_eq!(mine.is_some(), apsnr, "{what}: our aggregate {name}");
        if let (Some(text), Some(v)) = (text, mine) {
            assert_eq!(print_like_libvmaf(v, text), text, "{what}: {name} = {v}");
        }
    }
}

const SIZES: [(usize, usize); 3] = [(67, 45), (33, 20), (176, 99)];
const CHROMAS: [Chroma; 4] = [Chroma::Yuv420, Chroma::Yuv422, Chroma::Yuv444, Chroma::Yuv400];

fn matrix(opts: &[(&str, &str)], label: &str) {
    let mut k = 0;
    for bits in [8u8, 10, 12, 16] {
        for (w, h) in SIZES {
            let chroma = CHROMAS[k % 4];
            let seed = 3 + k as u64;
            k += 1;
            // Frame 0 is undistorted: psnr clips at psnr_max there.
            let frames = synth::clip(chroma, bits, w, h, 6, seed);
            check(&frames, opts, &format!("{label} {bits}-bit {w}x{h} {chroma:?}"), 0, 1);
        }
    }
}

#[test]
fn psnr_default_matches_libvmaf() {
    matrix(&[], "default");
}

#[test]
fn psnr_mse_and_apsnr_match_libvmaf() {
    matrix(&[("enable_mse", "true"), ("enable_apsnr", "true")], "mse+apsnr");
}

#[test]
fn psnr_peak_and_min_sse_options_match_libvmaf() {
    matrix(&[("reduced_hbd_peak", "true"), ("min_sse", "0.5")], "reduced peak+min_sse");
    matrix(&[("enable_chroma", "false"), ("enable_apsnr", "true"), ("min_sse", "3")], "luma only+apsnr");
}

#[test]
fn psnr_threads_and_subsample_match_libvmaf() {
    // libvmaf runs psnr (a TEMPORAL extractor) on every frame, subsampled
    // or not.
    let frames = synth::clip(Chroma::Yuv420, 10, 67, 45, 7, 9);
    check(&frames, &[("enable_apsnr", "true")], "threads=3", 3, 1);
    check(&frames, &[("enable_apsnr", "true"), ("enable_mse", "true")], "subsample=2", 2, 2);
}

/// Identical pictures: psnr at psnr_max, apsnr at its ceiling (sse 0).
#[test]
fn psnr_identical_pictures_match_libvmaf() {
    for (bits, chroma) in [(8u8, Chroma::Yuv420), (12, Chroma::Yuv422), (16, Chroma::Yuv444)] {
        let frames: Clip =
            synth::clip(chroma, bits, 41, 23, 3, 1).into_iter().map(|(r, _)| (r.clone(), r)).collect();
        check(
            &frames,
            &[("enable_apsnr", "true"), ("enable_mse", "true")],
            &format!("identical {bits}-bit"),
            0,
            1,
        );
        check(&frames, &[("min_sse", "0.25")], &format!("identical min_sse {bits}-bit"), 0, 1);
    }
}

#[test]
fn psnr_extreme_content_matches_libvmaf() {
    use vmafx::PixelFormat;
    for bits in [8u8, 10, 12, 16] {
        let fmt = PixelFormat::new(Chroma::Yuv444, bits).unwrap();
        let (w, h) = (37usize, 11usize);
        let max = ((1u32 << bits) - 1) as u16;
        let mut frames = Vec::new();
        for kind in 0..3 {
            let mut r = OwnedPicture::new(fmt, w, h).unwrap();
            let mut d = OwnedPicture::new(fmt, w, h).unwrap();
            for p in 0..3 {
                for y in 0..h {
                    for x in 0..w {
                        let (a, b) = match kind {
                            0 => (max, 0),
                            1 => ((x as u16 * 37) & max, ((x + y) as u16 * 91) & max),
                            _ => (0, 0),
                        };
                        r.set(p, x, y, a);
                        d.set(p, x, y, b);
                    }
                }
            }
            frames.push((r, d));
        }
        check(
            &frames,
            &[("enable_mse", "true"), ("enable_apsnr", "true")],
            &format!("extreme {bits}-bit"),
            0,
            1,
        );
    }
}
