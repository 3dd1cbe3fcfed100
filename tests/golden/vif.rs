//! Integer VIF against libvmaf 3.2.0: every per-frame value, as bits, at
//! 8/10/12/16 bits, odd sizes, 420/422/444, default options, the
//! vmaf_v0.6.1neg option (egl=1), debug output and vif_skip_scale0, at
//! every CPU level this host runs and with two workers; against libvmaf as
//! the host runs it (its SIMD) and against its C code.

use std::sync::Arc;

use crate::support::{reference, synth};
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::vif::DESCRIPTOR;

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn ours(frames: &Clip, opts: &[(&str, &str)], cpu: CpuLevel, threads: usize) -> Context {
    let mut o = FeatureOptions::new();
    for (k, v) in opts {
        o.set_text(DESCRIPTOR.options, k, v).unwrap();
    }
    let mut ctx = Context::new(ContextConfig { threads, cpu, ..Default::default() }).unwrap();
    ctx.use_feature("vif", o).unwrap();
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    ctx
}

/// Compares every value our VIF writes with libvmaf's, at every CPU level.
fn check(frames: &Clip, opts: &[(&str, &str)], what: &str) {
    let base = ours(frames, opts, CpuLevel::Scalar, 0);
    let names: Vec<String> = base.collector().names().to_vec();
    assert!(!names.is_empty());
    // libvmaf's C code, the reference. (Where its SIMD agrees with it is
    // tests/golden/libvmaf_simd.rs's business, not this test's: it must not depend
    // on the CPU it runs on.)
    let spec = reference::RefSpec {
        features: vec![("vif".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        ..Default::default()
    };
    let theirs = [("libvmaf C", reference::run(frames, &spec, &names))];
    let mut runs = vec![("scalar".to_string(), base)];
    for cpu in CpuLevel::available().filter(|&c| c != CpuLevel::Scalar) {
        runs.push((cpu.name().to_string(), ours(frames, opts, cpu, 0)));
    }
    // Two workers: instances must not carry state from frame to frame.
    runs.push(("threads".to_string(), ours(frames, opts, CpuLevel::detect_host(), 2)));
    for (level, ctx) in &runs {
        assert_eq!(ctx.collector().names(), names.as_slice(), "{what} {level}: feature names");
        for n in &names {
            for i in 0..frames.len() as u32 {
                let a = ctx.score_at(n, i);
                assert!(a.is_some(), "{what} {level}: {n} frame {i} missing");
                for (who, theirs) in &theirs {
                    let b = theirs.values[n][i as usize];
                    assert_eq!(
                        a.map(f64::to_bits),
                        b.map(f64::to_bits),
                        "{what} {level}: {n} frame {i}: ours {a:?}, {who} {b:?}"
                    );
                }
            }
        }
    }
}

const SIZES: [(usize, usize); 3] = [(67, 45), (33, 20), (176, 99)];
const CHROMAS: [Chroma; 3] = [Chroma::Yuv420, Chroma::Yuv422, Chroma::Yuv444];

fn matrix(opts: &[(&str, &str)], label: &str) {
    let mut k = 0;
    for bits in [8u8, 10, 12, 16] {
        for (w, h) in SIZES {
            let chroma = CHROMAS[k % 3];
            let seed = 11 + k as u64;
            k += 1;
            let frames = synth::clip(chroma, bits, w, h, 5, seed);
            check(&frames, opts, &format!("{label} {bits}-bit {w}x{h} {chroma:?} seed {seed}"));
        }
    }
}

#[test]
fn vif_default_options_match_libvmaf() {
    matrix(&[], "default");
}

#[test]
fn vif_egl1_matches_libvmaf() {
    matrix(&[("vif_enhn_gain_limit", "1.0")], "egl=1");
}

#[test]
fn vif_debug_and_skip_scale0_match_libvmaf() {
    for (bits, w, h, chroma) in
        [(8u8, 67usize, 45usize, Chroma::Yuv420), (10, 176, 99, Chroma::Yuv444), (16, 33, 20, Chroma::Yuv422)]
    {
        let frames = synth::clip(chroma, bits, w, h, 4, 5);
        check(&frames, &[("debug", "true")], &format!("debug {bits}-bit {w}x{h}"));
        check(
            &frames,
            &[("debug", "true"), ("vif_skip_scale0", "true")],
            &format!("debug+ssclz {bits}-bit {w}x{h}"),
        );
        check(
            &frames,
            &[("vif_enhn_gain_limit", "1.5"), ("vif_skip_scale0", "true")],
            &format!("egl1.5+ssclz {bits}-bit {w}x{h}"),
        );
    }
}

/// Frames whose content exercises the whole range: flat, full-scale
/// checkerboards, noise (large variances at 16 bits), identical pairs.
#[test]
fn vif_extreme_content_matches_libvmaf() {
    use vmafx::PixelFormat;
    for bits in [8u8, 10, 12, 16] {
        let fmt = PixelFormat::new(Chroma::Yuv420, bits).unwrap();
        let (w, h) = (71usize, 37usize);
        let max = ((1u32 << bits) - 1) as u16;
        let mut rng = synth::Rng::new(bits as u64);
        let mut frames = Vec::new();
        for kind in 0..6 {
            let mut r = OwnedPicture::new(fmt, w, h).unwrap();
            let mut d = OwnedPicture::new(fmt, w, h).unwrap();
            for y in 0..h {
                for x in 0..w {
                    let (a, b) = match kind {
                        0 => (max, 0),
                        1 => {
                            if (x + y) % 2 == 0 {
                                (max, max)
                            } else {
                                (0, max)
                            }
                        }
                        2 => (rng.below(max as u64 + 1) as u16, rng.below(max as u64 + 1) as u16),
                        3 => {
                            let v = rng.below(max as u64 + 1) as u16;
                            (v, v)
                        }
                        4 => {
                            if (x / 3 + y / 2) % 2 == 0 {
                                (max, max - (max >> 3))
                            } else {
                                (0, max >> 4)
                            }
                        }
                        // Flat reference, noisy distorted: large non-log sums.
                        _ => (max / 2, rng.below(max as u64 + 1) as u16),
                    };
                    r.set(0, x, y, a);
                    d.set(0, x, y, b);
                }
            }
            frames.push((r, d));
        }
        check(&frames, &[], &format!("extreme {bits}-bit"));
        check(&frames, &[("vif_enhn_gain_limit", "1.0")], &format!("extreme egl=1 {bits}-bit"));
    }
}

#[test]
fn vif_refuses_pictures_below_16x16() {
    use vmafx::PixelFormat;
    for (w, h) in [(15usize, 40usize), (40, 15), (8, 8)] {
        let fmt = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
        let p = OwnedPicture::new(fmt, w, h).unwrap();
        let mut ctx = Context::new(ContextConfig::default()).unwrap();
        ctx.use_feature("vif", FeatureOptions::new()).unwrap();
        let err = ctx.push(Arc::new(p.clone()), Arc::new(p)).unwrap_err();
        assert!(err.to_string().contains("16x16"), "{w}x{h}: {err}");
    }
    // 16x16 is scored, and matches.
    check(&synth::clip(Chroma::Yuv420, 8, 16, 16, 3, 2), &[], "16x16");
    check(&synth::clip(Chroma::Yuv444, 12, 17, 31, 3, 2), &[], "17x31");
}
