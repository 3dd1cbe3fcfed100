//! Where libvmaf 3.2.0's own SIMD departs from its C code.
//!
//! vmafx follows libvmaf's C code, and every golden test compares with it
//! (`LibvmafPath::C`), so no test depends on the SIMD of the machine it runs
//! on. This file keeps the evidence for that choice:
//!
//! - `adm_avx2_departs_from_c_at_80_wide`: one departure, asserted, so a
//!   libvmaf that fixes it (a new vendored version) is noticed;
//! - `sweep` (ignored: a survey, not a check) prints the table of
//!   docs/correctness.md: for each integer feature, bit depth and SIMD path,
//!   the sizes at which libvmaf's values differ from its C code's.
//!
//!   cargo test --test golden -- --ignored --nocapture libvmaf_simd::sweep
//!
//! A path this CPU cannot run is reported as such, never compared (libvmaf
//! would silently fall back to a lower one).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath, RefSpec};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::find_extractor;

type Frames = Vec<(OwnedPicture, OwnedPicture)>;

/// The names of every value extractor `feature` writes with `opts` (which
/// are libvmaf's: vmafx writes the same, tests/golden/ checks that).
fn names(feature: &str, opts: &[(&str, &str)]) -> Vec<String> {
    let mut fo = FeatureOptions::new();
    let descriptor = find_extractor(feature).unwrap();
    for (k, v) in opts {
        fo.set_text(descriptor.options, k, v).unwrap();
    }
    let mut ctx = Context::new(ContextConfig { threads: 0, ..Default::default() }).unwrap();
    ctx.use_feature(feature, fo).unwrap();
    let frames = synth::clip(Chroma::Yuv420, 8, 64, 64, 2, 1);
    for (r, d) in frames {
        ctx.push(Arc::new(r), Arc::new(d)).unwrap();
    }
    ctx.flush().unwrap();
    ctx.collector().names().to_vec()
}

/// libvmaf's values of every feature `feature` writes, per frame, on `path`.
fn libvmaf(frames: &Frames, feature: &str, opts: &[(&str, &str)], path: LibvmafPath) -> BTreeMap<String, Vec<Option<u64>>> {
    let spec = RefSpec {
        features: vec![(feature.into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        path,
        ..Default::default()
    };
    let r = reference::run(frames, &spec, &names(feature, opts));
    assert!(!r.values.is_empty(), "{feature}: libvmaf wrote nothing");
    r.values.into_iter().map(|(name, col)| (name, col.into_iter().map(|v| v.map(f64::to_bits)).collect())).collect()
}

/// The names whose values on `path` differ from the C code's (`c`), with
/// the first differing frame's two values.
fn departures_from(c: &BTreeMap<String, Vec<Option<u64>>>, frames: &Frames, feature: &str, opts: &[(&str, &str)], path: LibvmafPath) -> Vec<String> {
    let simd = libvmaf(frames, feature, opts, path);
    assert_eq!(c.keys().collect::<Vec<_>>(), simd.keys().collect::<Vec<_>>(), "{feature}: names differ by path");
    let mut out = Vec::new();
    for (name, col) in c {
        if let Some(i) = (0..col.len()).find(|&i| col[i] != simd[name][i]) {
            let show = |v: Option<u64>| v.map(|b| format!("{:.6}", f64::from_bits(b))).unwrap_or("-".into());
            out.push(format!("{name} frame {i}: C {} {} {}", show(col[i]), path.name(), show(simd[name][i])));
        }
    }
    out
}

fn departures(frames: &Frames, feature: &str, opts: &[(&str, &str)], path: LibvmafPath) -> Vec<String> {
    departures_from(&libvmaf(frames, feature, opts, LibvmafPath::C), frames, feature, opts, path)
}

/// The departure the issue tracker first met (tests/cli/end_to_end.rs's 80x50 4:4:4
/// clip scored 92.991844 by libvmaf's AVX2 ADM, 93.914635 by its C and by
/// vmafx): libvmaf's AVX2 ADM at 80 pixels wide. Runs wherever AVX2 does;
/// its AVX-512 ADM agrees with the C there.
#[test]
fn adm_avx2_departs_from_c_at_80_wide() {
    if !LibvmafPath::Avx2.runs_here() {
        eprintln!("libvmaf_simd: not runnable on this CPU: no AVX2");
        return;
    }
    let frames = synth::clip(Chroma::Yuv444, 8, 80, 50, 1, 15);
    let departs = departures(&frames, "adm", &[], LibvmafPath::Avx2);
    eprintln!("libvmaf AVX2 vs C, adm 8-bit 80x50:\n  {}", departs.join("\n  "));
    assert!(
        departs.iter().any(|d| d.starts_with("VMAF_integer_feature_adm2_score ")),
        "libvmaf's AVX2 ADM now equals its C at 80x50: a fixed libvmaf? Re-run the sweep \
         (cargo test --test golden -- --ignored --nocapture libvmaf_simd::sweep) and update docs/correctness.md"
    );
    // Its C is what vmafx and every golden test follow; at the widths of
    // ordinary video its SIMD agrees (the sweep's large sizes).
    let ordinary = synth::clip(Chroma::Yuv420, 8, 176, 144, 2, 3);
    assert_eq!(departures(&ordinary, "adm", &[], LibvmafPath::Avx2), Vec::<String>::new(), "176x144");
}

/// Prints, for each integer feature, bit depth and SIMD path this CPU runs,
/// the sizes where libvmaf's values differ from its C code's (not a check).
#[test]
#[ignore = "a survey: cargo test --test golden -- --ignored --nocapture libvmaf_simd::sweep"]
fn sweep() {
    let paths: Vec<LibvmafPath> = [LibvmafPath::Avx2, LibvmafPath::Avx512].into_iter().filter(|p| p.runs_here()).collect();
    for p in [LibvmafPath::Avx2, LibvmafPath::Avx512] {
        if !paths.contains(&p) {
            println!("{}: not runnable on this CPU", p.name());
        }
    }
    let widths: Vec<usize> = std::env::var("VMAFX_SWEEP_WIDTHS")
        .ok()
        .map(|s| s.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| (16..=160).chain([176, 200, 256, 320, 352, 426, 640, 720, 854, 1280, 1920]).collect());
    let heights = [16usize, 33, 50, 67, 144];
    // (feature, options, smallest width and height libvmaf computes it at)
    let features: [(&str, &[(&str, &str)], usize); 5] = [
        ("adm", &[], 33),
        ("adm", &[("adm_csf_mode", "1")], 33),
        ("adm", &[("adm_enhn_gain_limit", "1.2")], 33),
        ("vif", &[], 16),
        ("motion", &[], 3),
    ];
    println!("| feature | bits | path | widths where libvmaf's values differ from its C |");
    println!("|---|---|---|---|");
    for (feature, opts, min) in features {
        for bits in [8u8, 10, 12, 16] {
            // path -> height -> widths that depart
            let mut departs: BTreeMap<LibvmafPath, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
            let hs: Vec<usize> = heights.iter().copied().filter(|&h| h >= min).collect();
            let ws: Vec<usize> = widths.iter().copied().filter(|&w| w >= min).collect();
            for &h in &hs {
                for &w in &ws {
                    let frames = synth::clip(Chroma::Yuv420, bits, w, h, 3, (w * 1000 + h) as u64);
                    let c = libvmaf(&frames, feature, opts, LibvmafPath::C);
                    for &p in &paths {
                        let at = departs.entry(p).or_default().entry(h).or_default();
                        if !departures_from(&c, &frames, feature, opts, p).is_empty() {
                            at.push(w);
                        }
                    }
                }
            }
            let label = if opts.is_empty() {
                feature.to_string()
            } else {
                format!("{feature} {}", opts.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))
            };
            for &p in &paths {
                let by_height = departs.remove(&p).unwrap_or_default();
                let first = by_height.values().next().cloned().unwrap_or_default();
                let text = if by_height.values().all(|v| *v == first) {
                    let n = first.len();
                    format!("{} ({n} of {} widths {}–{}, at every height of {hs:?})", ranges(&first), ws.len(), ws[0], ws[ws.len() - 1])
                } else {
                    let n: usize = by_height.values().map(Vec::len).sum();
                    format!(
                        "{n} of {} sizes, varying with height and content (widths {}–{}, heights {hs:?})",
                        ws.len() * hs.len(),
                        ws[0],
                        ws[ws.len() - 1]
                    )
                };
                println!("| {label} | {bits} | {} | {text} |", p.name());
            }
        }
    }
}

/// "33–40, 49–52, 200" for [33, 34, ..., 40, 49, ..., 52, 200]; "none" for [].
fn ranges(v: &[usize]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let mut out: Vec<String> = Vec::new();
    let mut start = v[0];
    for i in 1..=v.len() {
        if i == v.len() || v[i] != v[i - 1] + 1 {
            out.push(if start == v[i - 1] { start.to_string() } else { format!("{start}–{}", v[i - 1]) });
            if i < v.len() {
                start = v[i];
            }
        }
    }
    out.join(", ")
}
