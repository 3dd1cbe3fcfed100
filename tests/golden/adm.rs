//! Integer ADM against libvmaf 3.2.0: every value it writes, per frame,
//! compared as bits.
//!
//! The reference is libvmaf's C code (`LibvmafPath::C`), on every CPU:
//! libvmaf's AVX2 / AVX-512 ADM departs from it at some widths, in Barten
//! CSF mode and with a fractional adm_enhn_gain_limit (docs/correctness.md,
//! tests/golden/libvmaf_simd.rs), and vmafx ports the C.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::{adm, naming};

/// Our adm's values for `names` (all it writes when `names` is None).
fn ours(frames: &[(OwnedPicture, OwnedPicture)], opts: &[(&str, &str)], cpu: CpuLevel) -> (Vec<String>, Context) {
    let mut fo = FeatureOptions::new();
    for (k, v) in opts {
        fo.set_text(adm::DESCRIPTOR.options, k, v).unwrap();
    }
    let mut ctx = Context::new(ContextConfig { threads: 1, cpu, ..Default::default() }).unwrap();
    ctx.use_feature("adm", fo).unwrap();
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    (ctx.collector().names().to_vec(), ctx)
}

/// Runs our adm with `opts` at `cpu` and libvmaf's C code on the same
/// frames; asserts every name we write has libvmaf's value, bit for bit, and
/// that we write exactly the names libvmaf's log lists.
fn check(frames: &[(OwnedPicture, OwnedPicture)], opts: &[(&str, &str)], cpu: CpuLevel, what: &str) {
    let (names, ctx) = ours(frames, opts, cpu);
    let spec = reference::RefSpec {
        features: vec![("adm".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        ..Default::default()
    };
    let r = reference::run(frames, &spec, &names);
    let mut ours_sorted: Vec<String> = names.iter().map(|n| naming::alias(n).to_owned()).collect();
    ours_sorted.sort();
    let mut theirs_sorted = r.log_names.clone();
    theirs_sorted.sort();
    assert_eq!(ours_sorted, theirs_sorted, "{what}: feature names");
    let theirs: Vec<Vec<Option<f64>>> = names.iter().map(|n| r.values[n].clone()).collect();
    let mut bad = Vec::new();
    for (k, n) in names.iter().enumerate() {
        for i in 0..frames.len() as u32 {
            let ours = ctx.score_at(n, i);
            let theirs = theirs[k][i as usize];
            if ours.map(f64::to_bits) != theirs.map(f64::to_bits) {
                bad.push(format!("{n} frame {i}: ours {ours:?} libvmaf {theirs:?}"));
            }
        }
    }
    assert!(bad.is_empty(), "{what} ({cpu:?}, libvmaf C): {} mismatches:\n{}", bad.len(), bad.join("\n"));
}

fn levels() -> Vec<CpuLevel> {
    CpuLevel::available().filter(|l| *l <= CpuLevel::Avx2).collect()
}

/// Ordinary sizes, and odd ones where libvmaf's SIMD departs from its C.
const SIZES: [(usize, usize); 8] = [(176, 99), (256, 144), (96, 54), (67, 45), (33, 33), (33, 40), (130, 70), (201, 47)];

#[test]
fn adm_default_options_all_depths_and_sizes() {
    let mut seed = 0;
    for cpu in levels() {
        for bits in [8u8, 10, 12, 16] {
            for chroma in [Chroma::Yuv420, Chroma::Yuv444] {
                for &(w, h) in &SIZES {
                    seed += 1;
                    let frames = synth::clip(chroma, bits, w, h, 4, seed);
                    check(&frames, &[], cpu, &format!("{bits} bit {w}x{h} {chroma:?}"));
                }
            }
        }
    }
}

#[test]
fn adm_neg_model_option() {
    let opts = [("adm_enhn_gain_limit", "1.0")];
    for cpu in levels() {
        for (bits, w, h) in [(8u8, 176usize, 99usize), (10, 256, 144), (16, 96, 54), (8, 67, 45), (12, 33, 40)] {
            let frames = synth::clip(Chroma::Yuv420, bits, w, h, 5, 11);
            check(&frames, &opts, cpu, &format!("egl=1 {bits} bit {w}x{h}"));
        }
    }
}

#[test]
fn adm_other_options() {
    let frames8 = synth::clip(Chroma::Yuv420, 8, 176, 99, 4, 21);
    let frames10 = synth::clip(Chroma::Yuv420, 10, 96, 54, 4, 22);
    let frames_odd = synth::clip(Chroma::Yuv444, 12, 67, 45, 3, 23);
    let sets: &[&[(&str, &str)]] = &[
        &[("debug", "true")],
        &[("adm_csf_mode", "1")],
        &[("adm_csf_mode", "2")],
        &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")],
        &[("adm_noise_weight", "0.5"), ("adm_dlm_weight", "0.8")],
        &[("adm_csf_scale", "1.5"), ("adm_csf_diag_scale", "0.75"), ("adm_csf_mode", "1")],
        &[("adm_ref_display_height", "2160")],
        &[("adm_skip_aim", "true")],
        &[("adm_skip_scale0", "true"), ("debug", "true")],
        &[("adm_min_val", "0.9")],
        &[("adm_enhn_gain_limit", "1.2")],
    ];
    for cpu in levels() {
        for opts in sets {
            check(&frames8, opts, cpu, &format!("8 bit {opts:?}"));
            check(&frames10, opts, cpu, &format!("10 bit {opts:?}"));
            check(&frames_odd, opts, cpu, &format!("12 bit 67x45 {opts:?}"));
        }
    }
}

#[test]
fn adm_refuses_what_libvmaf_cannot_compute() {
    let frames = synth::clip(Chroma::Yuv420, 8, 32, 64, 1, 1);
    let mut ctx = Context::new(ContextConfig { threads: 1, ..Default::default() }).unwrap();
    ctx.use_feature("adm", FeatureOptions::new()).unwrap();
    let pushed = ctx.push(Arc::new(frames[0].0.clone()), Arc::new(frames[0].1.clone()));
    let flushed = pushed.and_then(|_| ctx.flush());
    assert!(flushed.is_err(), "32-wide picture accepted");
}

/// libvmaf's adm on `path`: the values of `names` per frame.
fn run_libvmaf(
    frames: &[(OwnedPicture, OwnedPicture)],
    opts: &[(&str, &str)],
    names: &[String],
    path: LibvmafPath,
) -> Vec<Vec<Option<f64>>> {
    let spec = reference::RefSpec {
        features: vec![("adm".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        path,
        ..Default::default()
    };
    let r = reference::run(frames, &spec, names);
    names.iter().map(|n| r.values[n].clone()).collect()
}

/// CPU seconds this process has used (user + system), from /proc: steadier
/// than wall time on a shared machine.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

/// Rough timing at 1080p: our adm per CPU level and libvmaf's, in CPU
/// time, the best of 5 interleaved rounds (not a check).
#[test]
#[ignore]
fn timing_1080p() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 10, 5);
    let names = vec!["VMAF_integer_feature_adm2_score".to_string()];
    let mut configs: Vec<(String, Box<dyn Fn()>)> = Vec::new();
    for cpu in CpuLevel::available() {
        let f = frames.clone();
        configs.push((format!("vmafx {cpu:?}"), Box::new(move || drop(ours(&f, &[], cpu)))));
    }
    for path in LibvmafPath::ALL.into_iter().filter(|p| p.runs_here()) {
        let (f, n) = (frames.clone(), names.clone());
        configs.push((format!("libvmaf {}", path.name()), Box::new(move || drop(run_libvmaf(&f, &[], &n, path)))));
    }
    let mut best = vec![f64::INFINITY; configs.len()];
    for _ in 0..5 {
        for (k, (_, f)) in configs.iter().enumerate() {
            let t = cpu_seconds();
            f();
            best[k] = best[k].min((cpu_seconds() - t) * 1e3 / frames.len() as f64);
        }
    }
    for ((label, _), ms) in configs.iter().zip(best) {
        println!("{label}: {ms:.1} ms/frame (CPU)");
    }
}

/// Our adm alone at 1080p, for a profiler (not a check).
#[test]
#[ignore]
fn profile_1080p() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 4, 5);
    let cpu = std::env::var("VMAFX_CPU_LEVEL").ok().and_then(|s| CpuLevel::parse(&s)).unwrap_or(CpuLevel::Avx2);
    let t = std::time::Instant::now();
    for _ in 0..5 {
        ours(&frames, &[], cpu);
    }
    println!("{cpu:?}: {:.2} ms/frame", t.elapsed().as_secs_f64() * 1e3 / 20.0);
}

#[test]
fn adm_flat_identical_and_extreme_frames() {
    use vmafx::PixelFormat;
    for cpu in levels() {
        for bits in [8u8, 10, 16] {
            let fmt = PixelFormat::new(Chroma::Yuv420, bits).unwrap();
            let (w, h) = (96, 54);
            let max = ((1u32 << bits) - 1) as u16;
            let plane = |f: &dyn Fn(usize, usize) -> u16| {
                let mut p = OwnedPicture::new(fmt, w, h).unwrap();
                for i in 0..3 {
                    let (pw, ph) = fmt.plane_size(i, w, h);
                    for y in 0..ph {
                        for x in 0..pw {
                            p.set(i, x, y, f(x, y));
                        }
                    }
                }
                p
            };
            let flat = plane(&|_, _| max / 2);
            let black = plane(&|_, _| 0);
            let checker = plane(&|x, y| if (x + y) % 2 == 0 { max } else { 0 });
            let stripes = plane(&|x, _| if (x / 3) % 2 == 0 { max } else { 0 });
            let noisy = synth::clip(Chroma::Yuv420, bits, w, h, 1, 99).remove(0).0;
            let frames = vec![
                (flat.clone(), flat.clone()),
                (noisy.clone(), noisy.clone()),
                (checker.clone(), black.clone()),
                (black.clone(), checker.clone()),
                (checker.clone(), stripes.clone()),
                (stripes.clone(), checker.clone()),
                (noisy.clone(), flat.clone()),
            ];
            check(&frames, &[], cpu, &format!("{bits} bit flat/extreme"));
            check(&frames, &[("adm_enhn_gain_limit", "1.0")], cpu, &format!("{bits} bit flat/extreme egl=1"));
        }
    }
}

/// Our AVX2 adm and libvmaf's best path here, once each, for a profiler
/// (not a check).
#[test]
#[ignore]
fn profile_vs_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 10, 5);
    let names = vec!["VMAF_integer_feature_adm2_score".to_string()];
    for _ in 0..3 {
        ours(&frames, &[], CpuLevel::Avx2);
        let best = LibvmafPath::ALL.into_iter().filter(|p| p.runs_here()).last().unwrap();
        run_libvmaf(&frames, &[], &names, best);
    }
}
