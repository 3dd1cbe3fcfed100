//! CAMBI against libvmaf 3.2.0's C code (its SIMD masked off): every
//! per-frame value and every pooled value as bits, the names libvmaf logs,
//! at 8 to 16 bits, 4:0:0 to 4:4:4, odd sizes, a scene cut, every option;
//! libvmaf's EOTFs themselves; and the sizes and options both refuse.

use std::sync::Arc;

use crate::support::reference::{self, LibvmafPath};
use crate::support::synth;
use vmafx::{Chroma, Context, ContextConfig, CpuLevel, FeatureOptions, OwnedPicture};
use vmafx::internals::feature::cambi::{luminance, scalar, DESCRIPTOR};

type Clip = Vec<(OwnedPicture, OwnedPicture)>;

fn options(opts: &[(&str, &str)]) -> FeatureOptions {
    let mut o = FeatureOptions::new();
    for (k, v) in opts {
        o.set_text(DESCRIPTOR.options, k, v).unwrap();
    }
    o
}

fn ours(frames: &Clip, opts: &[(&str, &str)], threads: usize, subsample: u32) -> vmafx::Result<Context> {
    ours_at(frames, opts, threads, subsample, CpuLevel::detect_host())
}

fn ours_at(frames: &Clip, opts: &[(&str, &str)], threads: usize, subsample: u32, cpu: CpuLevel) -> vmafx::Result<Context> {
    let cfg = ContextConfig { threads, subsample, cpu, ..Default::default() };
    let mut ctx = Context::new(cfg)?;
    ctx.use_feature("cambi", options(opts))?;
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

fn spec(opts: &[(&str, &str)], subsample: u32) -> reference::RefSpec {
    spec_on(opts, subsample, LibvmafPath::C)
}

/// libvmaf's cambi on `path`: its C code is the reference (its AVX2 cambi
/// agrees with it on everything tried, but the C is what vmafx follows).
fn spec_on(opts: &[(&str, &str)], subsample: u32, path: LibvmafPath) -> reference::RefSpec {
    reference::RefSpec {
        features: vec![("cambi".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        subsample,
        path,
        ..Default::default()
    }
}

/// Scores `frames` both ways and compares every value as bits; returns
/// the largest cambi score (to show the content has banding to find).
fn check(frames: &Clip, opts: &[(&str, &str)], what: &str, threads: usize, subsample: u32) -> f64 {
    check_against(frames, opts, what, threads, subsample, LibvmafPath::C)
}

fn check_against(frames: &Clip, opts: &[(&str, &str)], what: &str, threads: usize, subsample: u32, path: LibvmafPath) -> f64 {
    let ctx = ours(frames, opts, threads, subsample).unwrap_or_else(|e| panic!("{what}: vmafx: {e}"));
    let names: Vec<String> = ctx.collector().names().to_vec();
    assert!(!names.is_empty(), "{what}: nothing written");
    let theirs = reference::run(frames, &spec_on(opts, subsample, path), &names);
    reference::assert_context_equals(&ctx, &theirs, &names, what)
}

/// Every depth vmafx reads, each chroma layout, odd and lopsided sizes
/// (at least one side 216, libvmaf's minimum), a scene cut mid-clip.
#[test]
fn cambi_default_matches_libvmaf_across_depths_layouts_and_sizes() {
    let sizes = [(320, 240), (321, 217), (233, 181), (217, 3), (3, 300), (40, 301)];
    let chromas = [Chroma::Yuv420, Chroma::Yuv422, Chroma::Yuv444, Chroma::Yuv400];
    let mut k = 0;
    for bits in [8u8, 9, 10, 11, 12, 16] {
        for (w, h) in sizes {
            let chroma = chromas[k % 4];
            k += 1;
            let frames = synth::banded_clip(chroma, bits, w, h, 4, 11 + k as u64);
            let largest = check(&frames, &[], &format!("{bits}-bit {w}x{h} {chroma:?}"), 0, 1);
            if (w, h) == (320, 240) {
                assert!(largest > 0.1, "{bits}-bit {w}x{h}: the content shows no banding ({largest})");
            }
        }
    }
}

/// The reference side and the combination (`full_ref`), with and without
/// a source size of its own (smaller, and larger than the picture).
#[test]
fn cambi_full_ref_matches_libvmaf() {
    for bits in [8u8, 10, 12] {
        let frames = synth::banded_clip(Chroma::Yuv420, bits, 400, 226, 4, 5);
        check(&frames, &[("full_ref", "true")], &format!("full_ref {bits}-bit"), 0, 1);
    }
    let frames = synth::banded_clip(Chroma::Yuv420, 10, 640, 360, 3, 6);
    check(&frames, &[("full_ref", "true"), ("src_width", "320"), ("src_height", "200")], "smaller source", 0, 1);
    // A source wider than the picture (by less than libvmaf's 32-sample row
    // alignment at 10 bits; more at any other depth).
    let frames650 = synth::banded_clip(Chroma::Yuv420, 10, 650, 366, 3, 6);
    check(&frames650, &[("full_ref", "true"), ("src_width", "660"), ("src_height", "400")], "larger source", 0, 1);
    let frames12 = synth::banded_clip(Chroma::Yuv420, 12, 640, 360, 3, 7);
    check(&frames12, &[("full_ref", "true"), ("src_width", "960"), ("src_height", "540")], "larger source", 0, 1);
    check(
        &frames,
        &[("full_ref", "true"), ("src_width", "480"), ("src_height", "270"), ("enc_width", "400"), ("enc_height", "250")],
        "source and encode sizes",
        0,
        1,
    );
}

/// Each option libvmaf's cambi declares, at values that change the score
/// (and the feature's name), one or two at a time.
#[test]
fn cambi_options_match_libvmaf() {
    let frames = synth::banded_clip(Chroma::Yuv420, 10, 360, 240, 4, 21);
    let frames8 = synth::banded_clip(Chroma::Yuv420, 8, 360, 240, 4, 22);
    let cases: &[&[(&str, &str)]] = &[
        &[("cambi_max_val", "1.5")],
        &[("cambi_max_val", "0")],
        &[("enc_width", "300"), ("enc_height", "200")],
        &[("enc_width", "181"), ("enc_height", "239")],
        // Only one of the pair: libvmaf takes the picture's size.
        &[("enc_width", "300")],
        // Larger than the picture: the picture's size.
        &[("enc_width", "720"), ("enc_height", "480")],
        &[("enc_bitdepth", "8")],
        &[("enc_bitdepth", "6")],
        &[("window_size", "15")],
        &[("window_size", "127")],
        &[("topk", "0.2")],
        &[("topk", "1.0")],
        &[("cambi_topk", "0.05")],
        &[("topk", "0.3"), ("cambi_topk", "0.9")],
        &[("tvi_threshold", "0.1")],
        &[("tvi_threshold", "0.0001")],
        &[("tvi_threshold", "1")],
        &[("cambi_vis_lum_threshold", "2.5")],
        &[("cambi_vis_lum_threshold", "50")],
        &[("cambi_vis_lum_threshold", "300"), ("tvi_threshold", "0.0001")],
        &[("max_log_contrast", "0")],
        &[("max_log_contrast", "0"), ("cambi_vis_lum_threshold", "2")],
        &[("max_log_contrast", "5")],
        &[("max_log_contrast", "3"), ("tvi_threshold", "0.5")],
        &[("eotf", "pq")],
        &[("cambi_eotf", "pq")],
        &[("eotf", "pq"), ("cambi_eotf", "bt1886")],
        &[("eotf", "bt1886"), ("cambi_eotf", "pq"), ("cambi_vis_lum_threshold", "1")],
        // Below 1080p the speed-up is off, but its name stays.
        &[("cambi_high_res_speedup", "1080")],
        &[("cambi_high_res_speedup", "7")],
        &[("full_ref", "false")],
    ];
    for opts in cases {
        eprintln!("case {opts:?}");
        check(&frames, opts, &format!("10-bit {opts:?}"), 0, 1);
    }
    for opts in [&[("enc_bitdepth", "10")][..], &[("window_size", "33"), ("topk", "0.5")], &[("eotf", "pq")]] {
        check(&frames8, opts, &format!("8-bit {opts:?}"), 0, 1);
    }
}

/// The high-resolution speed-up where it applies (1080p and up).
#[test]
fn cambi_high_res_speedup_matches_libvmaf() {
    let frames = synth::banded_clip(Chroma::Yuv420, 10, 1920, 1080, 2, 31);
    check(&frames, &[("cambi_high_res_speedup", "1080")], "1080p hrs=1080", 0, 1);
    check(&frames, &[("cambi_high_res_speedup", "1440")], "1080p hrs=1440 (off)", 0, 1);
    check(&frames, &[], "1080p default", 0, 1);
}

/// Several workers, and a subsample rate (cambi is skipped on the frames
/// between, as in libvmaf).
#[test]
fn cambi_threads_and_subsample_match_libvmaf() {
    let frames = synth::banded_clip(Chroma::Yuv420, 8, 320, 240, 7, 41);
    check(&frames, &[("full_ref", "true")], "threads=3", 3, 1);
    check(&frames, &[], "subsample=3", 2, 3);
}

/// libvmaf's AVX2 cambi (its only SIMD for cambi) gives the same values as
/// its C on these clips; vmafx equals both.
#[test]
fn cambi_matches_libvmaf_simd_too() {
    if !LibvmafPath::Avx2.runs_here() {
        eprintln!("cambi_matches_libvmaf_simd_too: not runnable on this CPU: no AVX2");
        return;
    }
    for (bits, w, h) in [(8u8, 321, 217), (10, 333, 250), (16, 250, 301)] {
        let frames = synth::banded_clip(Chroma::Yuv420, bits, w, h, 3, 51);
        check_against(&frames, &[("full_ref", "true")], &format!("libvmaf AVX2 {bits}-bit {w}x{h}"), 0, 1, LibvmafPath::Avx2);
    }
}

/// Identical flat pictures: no banding anywhere.
#[test]
fn cambi_flat_pictures_match_libvmaf() {
    use vmafx::PixelFormat;
    for (bits, value) in [(8u8, 0u16), (10, 512), (16, 65535)] {
        let fmt = PixelFormat::new(Chroma::Yuv444, bits).unwrap();
        let mut p = OwnedPicture::new(fmt, 256, 216).unwrap();
        for plane in 0..3 {
            for y in 0..216 {
                for x in 0..256 {
                    p.set(plane, x, y, value);
                }
            }
        }
        let frames = vec![(p.clone(), p)];
        check(&frames, &[("full_ref", "true")], &format!("flat {bits}-bit {value}"), 0, 1);
    }
}

/// libvmaf's own luminance functions (linked from its static library) give
/// the doubles ours do at every 10-bit code, with both EOTFs.
#[test]
fn cambi_eotfs_match_libvmaf() {
    extern "C" {
        fn vmaf_luminance_bt1886_eotf(v: f64) -> f64;
        fn vmaf_luminance_pq_eotf(v: f64) -> f64;
    }
    let range = luminance::LumaRange::LIMITED_10BIT;
    for code in 0..1024 {
        let v = (code.clamp(range.foot, range.head) - range.foot) as f64 / (range.head - range.foot) as f64;
        // SAFETY: pure functions of a double.
        let (b, p) = unsafe { (vmaf_luminance_bt1886_eotf(v), vmaf_luminance_pq_eotf(v)) };
        assert_eq!(luminance::bt1886_eotf(v).to_bits(), b.to_bits(), "bt1886 at code {code}");
        assert_eq!(luminance::pq_eotf(v).to_bits(), p.to_bits(), "pq at code {code}");
    }
}

/// libvmaf's reciprocal table is not 1.0f / i everywhere: its generator
/// printed 1/i to 9 digits. Pin entries where the two differ.
#[test]
fn cambi_reciprocal_table_is_libvmafs() {
    let lut = scalar::reciprocal_lut();
    assert_eq!(lut.len(), scalar::RECIPROCAL_LUT_SIZE);
    assert_eq!(lut[0], 0.0);
    assert_eq!(lut[1], 1.0);
    // cambi.h: 82 → 0.0121951224f (1.0f / 82 is 0.0121951215f).
    assert_eq!(lut[82].to_bits(), 0.0121951224f32.to_bits());
    assert_ne!(lut[82].to_bits(), (1.0f32 / 82.0).to_bits());
    assert_eq!(lut[4225].to_bits(), 0.000236686391f32.to_bits());
    let differ = (1..lut.len()).filter(|&i| lut[i].to_bits() != (1.0f32 / i as f32).to_bits()).count();
    assert_eq!(differ, 42);
}

/// What libvmaf refuses, vmafx refuses, with an error that names why; and
/// a size libvmaf scores from samples outside its picture, which vmafx
/// refuses instead.
#[test]
fn cambi_refusals() {
    // Both sides under 216: libvmaf's init fails.
    let small = synth::banded_clip(Chroma::Yuv420, 8, 176, 144, 2, 1);
    let e = ours(&small, &[], 0, 1).err().expect("176x144 refused").to_string();
    assert!(e.contains("216"), "{e}");
    assert!(reference::try_run(&small, &spec(&[], 1), &[]).is_err(), "libvmaf scored 176x144");

    // An unknown EOTF.
    let frames = synth::banded_clip(Chroma::Yuv420, 8, 320, 240, 1, 1);
    let e = ours(&frames, &[("eotf", "srgb")], 0, 1).err().expect("eotf refused").to_string();
    assert!(e.contains("srgb"), "{e}");
    assert!(reference::try_run(&frames, &spec(&[("eotf", "srgb")], 1), &[]).is_err());

    // Wider and shorter source than encode.
    let o = [("full_ref", "true"), ("src_width", "320"), ("src_height", "239"), ("enc_width", "300"), ("enc_height", "240")];
    let e = ours(&frames, &o, 0, 1).err().expect("lopsided source refused").to_string();
    assert!(e.contains("wider"), "{e}");
    assert!(reference::try_run(&frames, &spec(&o, 1), &[]).is_err());

    // A window too large for the reciprocal table (3840x2160 would be 65:
    // 127 at 1920x1080 scales to 63, fine; at 4K to 127, refused).
    let big = synth::banded_clip(Chroma::Yuv400, 8, 3840, 2160, 1, 1);
    let e = ours(&big, &[("window_size", "127")], 0, 1).err().expect("window refused").to_string();
    assert!(e.contains("reciprocal"), "{e}");
    assert!(reference::try_run(&big, &spec(&[("window_size", "127")], 1), &[]).is_err());

    // A 10-bit picture under a wider source: libvmaf shifts its rows and
    // mixes in the previous frame's source (frame 1 differs).
    let ten = synth::banded_clip(Chroma::Yuv420, 10, 640, 360, 2, 6);
    let o = [("full_ref", "true"), ("src_width", "960"), ("src_height", "540")];
    let e = ours(&ten, &o, 0, 1).err().expect("misread 10-bit refused").to_string();
    assert!(e.contains("misreads"), "{e}");

    // A luminance threshold above every visible step: libvmaf writes
    // outside its histograms (it crashes, so it is not run here).
    let e = ours(&frames, &[("cambi_vis_lum_threshold", "300")], 0, 1).err().expect("vlt refused").to_string();
    assert!(e.contains("cambi_vis_lum_threshold"), "{e}");

    // Heatmaps are not written.
    let e = ours(&frames, &[("heatmaps_path", "/tmp/x")], 0, 1).err().expect("heatmaps refused").to_string();
    assert!(e.contains("heatmaps"), "{e}");

    // Narrow and tall: the window (11 wide) is wider than the coarsest
    // scale (2 columns); libvmaf reads past the scale's columns.
    let narrow = synth::banded_clip(Chroma::Yuv420, 8, 20, 1000, 1, 1);
    let e = ours(&narrow, &[], 0, 1).err().expect("narrow refused").to_string();
    assert!(e.contains("outside the picture"), "{e}");

    // Options outside libvmaf's ranges.
    for (k, v) in [("window_size", "14"), ("enc_width", "179"), ("max_log_contrast", "6"), ("topk", "0"), ("full_ref", "yes")] {
        let mut o = FeatureOptions::new();
        assert!(o.set_text(DESCRIPTOR.options, k, v).is_err(), "{k}={v} accepted");
    }
}

/// Why libvmaf 3.2.0 fails the v1.0.16 models on 176x144: their first
/// feature, cambi, refuses pictures under 216 pixels on both sides in its
/// init (at the first frame, -EINVAL), so the first `vmaf_read_pictures`
/// fails (the `vmaf` tool prints "problem reading pictures", then, its
/// error code kept, "problem flushing context"). With worker threads the
/// workers drop that error and every frame lacks the model's score; that
/// run is not repeated here, because libvmaf's speed_chroma then runs on
/// the small chroma planes and can crash (it does at 216x144). One side of
/// 216 is enough for cambi.
#[test]
fn libvmaf_v1_0_16_fails_under_216_because_of_cambi() {
    let model = reference::RefSpec {
        models: vec![("vmaf_v1.0.16_3d0h".into(), "vmaf".into())],
        ..Default::default()
    };
    let small = synth::banded_clip(Chroma::Yuv420, 8, 176, 144, 2, 1);
    let single = reference::try_run(&small, &model, &[]).err().expect("libvmaf scored 176x144");
    assert_eq!(single, "vmaf_read_pictures at frame 0: -22");
    assert!(reference::try_run(&small, &spec(&[], 1), &[]).is_err(), "cambi alone scored 176x144");

    // The cambi options v1.0.16 sets, at the smallest size it takes.
    let wide_enough = synth::banded_clip(Chroma::Yuv420, 8, 216, 144, 2, 1);
    let v1016 = [("cambi_high_res_speedup", "1080"), ("cambi_vis_lum_threshold", "0.06"), ("cambi_max_val", "17")];
    check(&wide_enough, &v1016, "v1.0.16's cambi at 216x144", 0, 1);
}

/// Times CAMBI alone (default options) on a banded 1920x1080 8-bit clip
/// of 6 frames, on the calling thread, best of 3: vmafx at each CPU level
/// the host runs, libvmaf through its C API on each of its paths.
/// `cargo test --test golden -- --ignored --nocapture cambi::cambi_time_ratio`
#[test]
#[ignore]
fn cambi_time_ratio() {
    use std::time::Instant;
    let frames = synth::banded_clip(Chroma::Yuv420, 8, 1920, 1080, 6, 3);
    let n = frames.len() as f64;
    let best = |f: &dyn Fn() -> f64| (0..3).map(|_| f()).fold(f64::INFINITY, f64::min);
    let mut libvmaf = Vec::new();
    for path in [LibvmafPath::C, LibvmafPath::Avx2, LibvmafPath::Avx512] {
        if !path.runs_here() {
            continue;
        }
        let s = spec_on(&[], 1, path);
        let secs = best(&|| {
            let t = Instant::now();
            reference::run(&frames, &s, &[]);
            t.elapsed().as_secs_f64()
        });
        eprintln!("cambi: libvmaf {} {:.1} ms/frame", path.name(), secs * 1e3 / n);
        libvmaf.push((path.name(), secs));
    }
    for cpu in CpuLevel::available() {
        let secs = best(&|| {
            let t = Instant::now();
            ours_at(&frames, &[], 0, 1, cpu).unwrap();
            t.elapsed().as_secs_f64()
        });
        let ratios: Vec<String> = libvmaf.iter().map(|(p, l)| format!("{p} {:.2}", l / secs)).collect();
        eprintln!(
            "cambi: vmafx {} {:.1} ms/frame: libvmaf/vmafx time = {}",
            cpu.name(),
            secs * 1e3 / n,
            ratios.join(", ")
        );
    }
}
