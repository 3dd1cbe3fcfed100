//! The `vmafx` FFmpeg filter (FFmpeg 7.1 or 8.1, built by
//! scripts/ffmpeg-build with vmafx AND FFmpeg's own libvmaf filter in one
//! ffmpeg binary; scripts/test runs this file on both) against libvmaf
//! 3.2.0 on the same clips:
//! - the JSON logs are identical, line for line (bar "version" and the
//!   timing line "fps");
//! - the per-frame metadata (`lavfi.vmafx.*`, `%.17g`) equals, as f64
//!   bits, what the core computes on the same frames, and prints as
//!   libvmaf's log prints it;
//! - formats beyond libvmaf (nv12, p010, p016, gray, bottom-up frames);
//! - bad input ends with a clear error, never a crash or a silent drop.
//!
//! The ffmpeg program is `$VMAFX_FFMPEG` (default
//! `${VMAFX_BUILD:-build}/ffmpeg-7.1/obj/ffmpeg`; 8.1's is
//! `build/ffmpeg-8.1/obj/ffmpeg`). Missing, each test says SKIPPED; with
//! VMAFX_REQUIRE_FFMPEG=1 it fails instead.


use std::path::{Path, PathBuf};

use crate::support::reference::{self, LibvmafPath};
use crate::support::partial_log::{assert_partial_log, read_json};
use crate::support::synth;
use crate::support::ffmpeg::*;
use vmafx::{Chroma, OwnedPicture};

fn ffmpeg_bin() -> Option<PathBuf> {
    find_tool("VMAFX_FFMPEG", "ffmpeg-7.1/obj/ffmpeg")
}

fn motion_spec(threads: usize, subsample: u32) -> Spec {
    Spec { features: vec![("motion".into(), vec![])], threads, subsample, ..Default::default() }
}

/// vmafx's metadata over `graph_in` (a chain producing [d] and [r] from
/// [0:v] and [1:v]); returns (frames seen by metadata=print, scores, texts).
fn vmafx_metadata(
    bin: &Path,
    dir: &Path,
    dist: &Path,
    reference: &Path,
    prep: &str,
    options: &str,
    extra: &[&str],
) -> (u32, Scores, std::collections::BTreeMap<u32, std::collections::BTreeMap<String, String>>, String) {
    let meta = dir.join("meta.txt");
    let _ = std::fs::remove_file(&meta);
    let graph = format!("{prep}[d][r]vmafx={options},metadata=mode=print:file={}", meta.display());
    let run = ffmpeg(bin, dist, reference, &graph, extra);
    assert!(run.ok, "vmafx run failed: {graph}\n{}", run.stderr);
    let (n, scores, texts) = read_metadata(&meta, "lavfi.vmafx.");
    (n, scores, texts, run.stderr)
}

const PLAIN: &str = "[0:v]null[d];[1:v]null[r];";

/// libvmaf's JSON log for the same options.
fn libvmaf_log(bin: &Path, dir: &Path, dist: &Path, reference: &Path, prep: &str, options: &str) -> (String, String) {
    let log = dir.join("libvmaf.json");
    let graph = format!("{prep}[d][r]libvmaf={options}:log_fmt=json:log_path={}", log.display());
    let run = ffmpeg(bin, dist, reference, &graph, &[]);
    assert!(run.ok, "libvmaf run failed: {graph}\n{}", run.stderr);
    (std::fs::read_to_string(&log).unwrap(), run.stderr)
}

/// FFmpeg's libvmaf filter runs libvmaf's best SIMD for this CPU, which
/// departs from libvmaf's C code (what vmafx follows) at some sizes
/// (docs/correctness.md). A filter-against-filter comparison means something
/// only where the two agree, so each case proves that on its own frames, in
/// this process: the test cannot pass or fail by the CPU it runs on.
fn assert_libvmaf_simd_agrees_with_c(case: &str, frames: &[(OwnedPicture, OwnedPicture)], spec: &Spec) {
    let best = LibvmafPath::ALL.into_iter().filter(|p| p.runs_here()).last().unwrap();
    let names: Vec<String> = spec.core_names(frames);
    let run = |path| {
        let r = reference::run(
            frames,
            &reference::RefSpec {
                models: spec.models.iter().map(|(v, n)| (v.clone(), n.clone().unwrap_or_else(|| "vmaf".into()))).collect(),
                features: spec.features.clone(),
                path,
                ..Default::default()
            },
            &names,
        );
        r.values.into_iter().map(|(k, col)| (k, col.into_iter().map(|v| v.map(f64::to_bits)).collect::<Vec<_>>())).collect::<Vec<_>>()
    };
    assert_eq!(
        run(best),
        run(LibvmafPath::C),
        "{case}: libvmaf's {} code departs from its C on these frames, so FFmpeg's libvmaf filter \
         cannot stand for the reference here: choose a size the sweep of tests/golden/libvmaf_simd.rs shows agreeing",
        best.name()
    );
}

/// Metadata must print, per frame and metric, exactly as libvmaf's log.
/// libvmaf logs only the frames a subsample rate scores.
fn assert_metadata_prints_as_libvmaf(case: &str, n: usize, subsample: u32, meta: &Scores, log: &str) {
    let frames = json_frames_text(log);
    let logged_frames = n.div_ceil(subsample as usize);
    assert_eq!(frames.len(), logged_frames, "{case}: libvmaf logged {} frames", frames.len());
    for (i, metrics) in &frames {
        for (name, text) in metrics {
            let ours = meta
                .get(name)
                .and_then(|c| c.get(i))
                .unwrap_or_else(|| panic!("{case}: no metadata {name} on frame {i}"));
            assert_eq!(&libvmaf_json_number(*ours), text, "{case}: {name} frame {i} ({ours:e})");
        }
    }
    let logged: usize = frames.values().map(|m| m.len()).sum();
    let ours: usize = meta.values().map(|c| c.keys().filter(|&&i| i % subsample == 0).count()).sum();
    assert_eq!(ours, logged, "{case}: vmafx wrote metadata libvmaf did not log");
}

fn clip(chroma: Chroma, bits: u8, w: usize, h: usize, n: usize, seed: u64) -> Vec<(OwnedPicture, OwnedPicture)> {
    synth::clip(chroma, bits, w, h, n, seed)
}

/// The main test: default model (and more), vmafx's JSON log against
/// libvmaf's, the pooled score line, and metadata against the core.
/// Needs the core's VIF, ADM, models and log writer.
#[test]
fn json_logs_match_libvmaf() {
    let Some(bin) = ffmpeg_bin() else { return };
    // Sizes where libvmaf's SIMD (what its FFmpeg filter runs) and its C
    // code agree; at other odd sizes vmafx follows libvmaf's C code (see
    // tests/golden/adm.rs), so the filter-vs-filter logs could differ there.
    // With n_threads > 0 libvmaf 3.2.0 writes its TEMPORAL extractors'
    // features (psnr) first, and so does vmafx (tests/golden/log_order.rs).
    // With n_subsample its threads race to write motion's SAD first, an
    // order no run can promise: those cases compare the logs per frame and
    // metric, and as sorted lines, instead of line for line (`strict_order`
    // false).
    let cases: Vec<(&str, Chroma, u8, usize, usize, bool, Spec)> = vec![
        ("default model 8-bit 420", Chroma::Yuv420, 8, 176, 99, true,
         Spec { models: vec![("vmaf_v0.6.1".into(), None)], threads: 0, subsample: 1, ..Default::default() }),
        ("two models + psnr 10-bit 422", Chroma::Yuv422, 10, 96, 54, true,
         Spec { models: vec![("vmaf_v0.6.1".into(), Some("vmaf".into())), ("vmaf_v0.6.1neg".into(), Some("vmaf_neg".into()))],
                features: vec![("psnr".into(), vec![])], threads: 0, subsample: 1 }),
        ("12-bit 444 threads 3 subsample 2", Chroma::Yuv444, 12, 256, 144, false,
         Spec { models: vec![("vmaf_v0.6.1".into(), None)], threads: 3, subsample: 2, ..Default::default() }),
        ("16-bit 420 threads 1", Chroma::Yuv420, 16, 96, 54, false,
         Spec { models: vec![("vmaf_v0.6.1".into(), None)], threads: 1, subsample: 1, ..Default::default() }),
        ("model + psnr 8-bit 420 threads 2", Chroma::Yuv420, 8, 176, 99, true,
         Spec { models: vec![("vmaf_v0.6.1".into(), None)], features: vec![("psnr".into(), vec![])], threads: 2, subsample: 1 }),
    ];
    for (k, (case, chroma, bits, w, h, strict_order, spec)) in cases.into_iter().enumerate() {
        let dir = workdir(&format!("json-{k}"));
        let frames = clip(chroma, bits, w, h, 7, 100 + k as u64);
        let (dist, reference) = write_clips(&dir, &frames);
        let opts = spec.filter_options();
        assert_libvmaf_simd_agrees_with_c(case, &frames, &spec);
        let (theirs, their_err) = libvmaf_log(&bin, &dir, &dist, &reference, PLAIN, &opts);

        let ours_path = dir.join("vmafx.json");
        let vopts = format!("{opts}:log_fmt=json:log_path={}", ours_path.display());
        let (n, meta, _, our_err) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, &vopts, &[]);
        assert_eq!(n as usize, frames.len(), "{case}: output frames");
        let ours = std::fs::read_to_string(&ours_path).unwrap_or_else(|e| panic!("{case}: vmafx log: {e}\n{our_err}"));
        // The two lines that differ by design: the version and the timing.
        let strip = |s: &str| {
            s.lines()
                .filter(|l| !l.starts_with("  \"fps\": ") && !l.starts_with("  \"version\": "))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let (mut a, mut b) = (strip(&ours), strip(&theirs));
        if !strict_order {
            assert_eq!(json_frames_text(&ours), json_frames_text(&theirs), "{case}: per-frame metrics");
            a.sort();
            b.sort();
        }
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x, y, "{case}: JSON log line {}", i + 1);
        }
        assert_eq!(a.len(), b.len(), "{case}: JSON log length");

        let score_lines = |s: &str| s.lines().filter_map(|l| l.split_once("VMAF score: ").map(|(_, v)| v.to_owned())).collect::<Vec<_>>();
        assert_eq!(score_lines(&our_err), score_lines(&their_err), "{case}: pooled score lines");
        assert_eq!(score_lines(&our_err).len(), spec.models.len(), "{case}: one score line per model");

        assert_metadata_prints_as_libvmaf(case, frames.len(), spec.subsample, &meta, &theirs);
        assert_same_bits(case, ("metadata", &meta), ("core", &spec.core_scores(&frames)));
    }
}

/// The plumbing with what the core has now (motion): metadata vs libvmaf's
/// printed log and vs the core's doubles, across depths, layouts, odd
/// sizes, threads and subsampling; nothing dropped, order kept.
#[test]
fn motion_metadata_matches_libvmaf_and_core() {
    let Some(bin) = ffmpeg_bin() else { return };
    let cases = [
        (Chroma::Yuv420, 8, 33, 27, 0, 1),
        (Chroma::Yuv420, 8, 64, 48, 3, 1),
        (Chroma::Yuv422, 10, 31, 20, 2, 1),
        (Chroma::Yuv444, 12, 40, 17, 1, 3),
        (Chroma::Yuv420, 16, 25, 25, 4, 2),
    ];
    for (k, (chroma, bits, w, h, threads, subsample)) in cases.into_iter().enumerate() {
        let case = format!("{chroma:?} {bits}-bit {w}x{h} threads={threads} subsample={subsample}");
        let dir = workdir(&format!("motion-{k}"));
        let frames = clip(chroma, bits, w, h, 9, 7 + k as u64);
        let (dist, reference) = write_clips(&dir, &frames);
        let spec = motion_spec(threads, subsample);
        let opts = format!("model='':{}", spec.filter_options().split_once(':').unwrap().1);
        assert_libvmaf_simd_agrees_with_c(&case, &frames, &spec);
        let (theirs, _) = libvmaf_log(&bin, &dir, &dist, &reference, PLAIN, &opts);
        let (n, meta, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, &opts, &[]);
        assert_eq!(n as usize, frames.len(), "{case}: every frame comes out");
        assert_metadata_prints_as_libvmaf(&case, frames.len(), subsample, &meta, &theirs);
        assert_same_bits(&case, ("metadata", &meta), ("core", &spec.core_scores(&frames)));
    }
}

/// Output order and content do not depend on the worker count.
#[test]
fn threads_keep_order_and_values() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("threads");
    let frames = clip(Chroma::Yuv420, 8, 48, 32, 12, 3);
    let (dist, reference) = write_clips(&dir, &frames);
    let mut first = None;
    for threads in [0, 1, 4] {
        let opts = format!("model='':feature=name=motion:n_threads={threads}");
        // showinfo-free check of order: pts are printed by metadata=print.
        let (n, meta, texts, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, &opts, &[]);
        assert_eq!(n, 12);
        assert_eq!(texts.keys().copied().collect::<Vec<_>>(), (0..12).collect::<Vec<u32>>());
        match &first {
            None => first = Some(meta),
            Some(f) => assert_same_bits(&format!("threads={threads}"), ("threads", &meta), ("inline", f)),
        }
    }
}

/// nv12, p010 and p016 give the values of their planar twins; gray gives
/// the core's 4:0:0 values; luma-only features copy nothing but p010's
/// shifted luma; PSNR's chroma of nv12 is deinterleaved (counted).
#[test]
fn semi_planar_and_gray_formats() {
    let Some(bin) = ffmpeg_bin() else { return };
    for (k, (bits, planar, semi)) in [(8u8, "yuv420p", "nv12"), (10, "yuv420p10le", "p010le"), (16, "yuv420p16le", "p016le")]
        .into_iter()
        .enumerate()
    {
        let dir = workdir(&format!("semi-{k}"));
        let frames = clip(Chroma::Yuv420, bits, 38, 22, 6, 11);
        let (dist, reference) = write_clips(&dir, &frames);
        let opts = "model='':feature=name=motion";
        let (_, want, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, opts, &[]);
        let prep = format!("[0:v]format={semi}[d];[1:v]format={semi}[r];");
        let (n, got, _, log) = vmafx_metadata(&bin, &dir, &dist, &reference, &prep, opts, &["-loglevel", "verbose"]);
        assert_eq!(n, 6);
        assert_same_bits(semi, (semi, &got), (planar, &want));
        let copies = if semi == "p010le" { 12 } else { 0 };
        assert!(log.contains(&format!("6 frame pairs scored, {copies} host copies")), "{semi}: copies\n{log}");
    }
    // Gray: the core on 4:0:0 pictures.
    for bits in [8u8, 10, 12, 16] {
        let dir = workdir(&format!("gray-{bits}"));
        let frames = clip(Chroma::Yuv400, bits, 30, 20, 5, 5);
        let (dist, reference) = write_clips(&dir, &frames);
        let spec = motion_spec(0, 1);
        let (n, meta, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, "model='':feature=name=motion", &[]);
        assert_eq!(n, 5);
        assert_same_bits(&format!("gray {bits}"), ("metadata", &meta), ("core", &spec.core_scores(&frames)));
    }
}

/// Bottom-up frames (negative line sizes, from vflip) score as libvmaf
/// scores them.
#[test]
fn negative_linesizes() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("vflip");
    let frames = clip(Chroma::Yuv420, 10, 36, 24, 6, 21);
    let (dist, reference) = write_clips(&dir, &frames);
    let prep = "[0:v]vflip[d];[1:v]vflip[r];";
    let opts = "model='':feature=name=motion";
    assert_libvmaf_simd_agrees_with_c("vflip", &frames, &motion_spec(0, 1));
    let (theirs, _) = libvmaf_log(&bin, &dir, &dist, &reference, prep, opts);
    let (n, meta, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, prep, opts, &[]);
    assert_eq!(n, 6);
    assert_metadata_prints_as_libvmaf("vflip", 6, 1, &meta, &theirs);
}

fn expect_error(bin: &Path, dist: &Path, reference: &Path, graph: &str, needle: &str) {
    let run = ffmpeg(bin, dist, reference, graph, &[]);
    assert!(!run.ok, "{graph}: should fail\n{}", run.stderr);
    assert!(run.stderr.contains(needle), "{graph}: expected '{needle}' in:\n{}", run.stderr);
}

/// Bad input: a clear error, no crash.
#[test]
fn bad_input_is_refused_clearly() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("bad");
    let frames = clip(Chroma::Yuv420, 8, 32, 24, 4, 1);
    let (dist, reference) = write_clips(&dir, &frames);
    let other = dir.join("other.y4m");
    let big = clip(Chroma::Yuv420, 8, 34, 24, 4, 1);
    write_y4m(&other, &big.iter().map(|(r, _)| r).collect::<Vec<_>>());
    let deep = dir.join("deep.y4m");
    let deep_frames = clip(Chroma::Yuv420, 10, 32, 24, 4, 1);
    write_y4m(&deep, &deep_frames.iter().map(|(r, _)| r).collect::<Vec<_>>());
    let m = "model='':feature=name=motion";

    let run = ffmpeg(&bin, &dist, &other, &format!("[0:v][1:v]vmafx={m}"), &[]);
    assert!(!run.ok && run.stderr.contains("input sizes differ: main is 32x24, reference is 34x24"), "{}", run.stderr);
    let run = ffmpeg(&bin, &dist, &deep, &format!("[0:v][1:v]vmafx={m}"), &[]);
    assert!(!run.ok && run.stderr.contains("input pixel formats differ: main is yuv420p, reference is yuv420p10le"), "{}", run.stderr);

    for (opts, needle) in [
        ("model=version=vmaf_v9", "could not load model with version vmaf_v9"),
        ("model=path=/nonexistent.json", "could not load model with path /nonexistent.json"),
        ("model='verison=vmaf_v0.6.1'", "unknown model key 'verison'"),
        ("model='':feature=name=nosuch", "feature extractor 'nosuch'"),
        ("model='':feature='name=motion\\:motion_force_zero=maybe'", "motion_force_zero=maybe"),
        ("model='':feature='name=motion\\:nosuch=1'", "unknown option 'nosuch'"),
        ("model='':feature=name=motion:log_fmt=yaml", "log_fmt 'yaml'"),
        ("model='':feature=name=motion:pool=median", "pool 'median'"),
        ("model=''", "nothing to compute"),
        ("model='':feature=name=motion:n_subsample=0", "n_subsample"),
        ("model='':feature=name=motion:log_fmt=json:log_path=/nonexistent-dir/x.json", "/nonexistent-dir/x.json"),
    ] {
        expect_error(&bin, &dist, &reference, &format!("[0:v][1:v]vmafx={opts}"), needle);
    }
}

/// DRM_PRIME support on the FFmpeg side: the `fence_timeout` option (a
/// duration, 1 s by default, at least 1 us) and software inputs scoring as
/// before with it set. DRM_PRIME frames themselves need a dma-buf exporter
/// this machine lacks: tests/import/dmabuf_vm.rs drives the same C interface with
/// real dma-bufs and fences in a VM.
#[test]
fn fence_timeout_option() {
    let Some(bin) = ffmpeg_bin() else { return };
    let help = std::process::Command::new(&bin).args(["-hide_banner", "-h", "filter=vmafx"]).output().expect("ffmpeg -h");
    let help = String::from_utf8_lossy(&help.stdout);
    let line = help.lines().find(|l| l.contains("fence_timeout")).unwrap_or_else(|| panic!("no fence_timeout option:\n{help}"));
    assert!(line.contains("<duration>") && line.contains("(default 1)"), "{line}");

    let dir = workdir("fence-timeout");
    let frames = clip(Chroma::Yuv420, 8, 32, 24, 4, 3);
    let (dist, reference) = write_clips(&dir, &frames);
    let m = "model='':feature=name=motion";
    let (_, want, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, m, &[]);
    let (n, got, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, &format!("{m}:fence_timeout=0.25"), &[]);
    assert_eq!(n, 4);
    assert_same_bits("fence_timeout=0.25", ("with", &got), ("without", &want));
    expect_error(&bin, &dist, &reference, &format!("[0:v][1:v]vmafx={m}:fence_timeout=0"), "fence_timeout");
}

/// The `device` option: `cpu` scores as unset; `hip` where no HIP runtime
/// can be loaded fails at init with a message naming the option, the
/// library and the override; a malformed value or `cuda` (CUDA frames pick
/// their device themselves) is refused before anything runs. Scoring on a
/// HIP device: tests/import/dmabuf_hip.rs (a fake runtime in the dma-buf VM).
#[test]
fn device_option() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("device");
    let frames = clip(Chroma::Yuv420, 8, 32, 24, 3, 4);
    let (dist, reference) = write_clips(&dir, &frames);
    let m = "model='':feature=name=motion";
    let (_, want, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, m, &[]);
    let (n, got, _, _) = vmafx_metadata(&bin, &dir, &dist, &reference, PLAIN, &format!("{m}:device=cpu"), &[]);
    assert_eq!(n, 3);
    assert_same_bits("device=cpu", ("with", &got), ("without", &want));

    let missing = dir.join("no-such-libamdhip64.so.7");
    let missing = missing.to_str().unwrap();
    // (quoted and escaped: the colon stays inside the option's value)
    for (device, index) in [("hip", "0"), ("'hip\\:2'", "2")] {
        let graph = format!("[0:v][1:v]vmafx={m}:device={device}");
        let run = ffmpeg_env(&bin, &dist, &reference, &graph, &[], &[("VMAFX_HIP_LIB", missing)]);
        assert!(!run.ok, "{graph}: should fail without a HIP runtime\n{}", run.stderr);
        for needle in [&format!("device=hip:{index}: HIP device {index} cannot be used here"), "HIP runtime not found", missing, "VMAFX_HIP_LIB"] {
            assert!(run.stderr.contains(needle), "{graph}: expected '{needle}' in:\n{}", run.stderr);
        }
        assert!(!run.stderr.contains("VMAF score"), "{graph}: nothing may be scored");
    }
    for (device, needle) in [
        ("'hip\\:x'", "device 'hip:x': the index after ':' must be a device number"),
        ("cuda", "device 'cuda': CUDA frames are scored on their own CUDA device already"),
        ("vulkan", "device 'vulkan': expected cpu, hip or hip:N"),
    ] {
        expect_error(&bin, &dist, &reference, &format!("[0:v][1:v]vmafx={m}:device={device}"), needle);
    }
}

/// The ffmpeg under test carries the current glue (scripts/ffmpeg-build
/// brings ffmpeg-patches/src/vf_vmafx.c into its cached build each run):
/// its vmafx lists exactly the options of the glue's AVOption table, with
/// their help texts. A stale glue (an option added or reworded since) fails.
#[test]
fn the_built_filter_is_the_current_glue() {
    let Some(bin) = ffmpeg_bin() else { return };
    let glue = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ffmpeg-patches/src/vf_vmafx.c")).unwrap();
    let table = &glue[glue.find("static const AVOption vmafx_options[]").expect("the glue's option table")..];
    let table = &table[..table.find("{ NULL }").unwrap()];
    let options: Vec<(&str, &str)> = table
        .lines()
        .filter_map(|l| {
            let l = l.trim().strip_prefix("{\"")?;
            let (name, rest) = l.split_once('"')?;
            let help = rest.split('"').nth(1)?;
            Some((name, help))
        })
        .collect();
    assert!(options.len() >= 9 && options.iter().any(|(n, _)| *n == "device"), "{options:?}");
    let help = std::process::Command::new(&bin).args(["-hide_banner", "-h", "filter=vmafx"]).output().expect("ffmpeg -h");
    let help = String::from_utf8_lossy(&help.stdout);
    // The filter's own options, before framesync's (eof_action, ...).
    let listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("vmafx AVOptions:"))
        .skip(1)
        .take_while(|l| l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, options.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "the built vmafx is not the glue in ffmpeg-patches/src:\n{help}");
    for (name, text) in options {
        assert!(help.lines().any(|l| l.split_whitespace().next() == Some(name) && l.contains(text)), "{name}: '{text}' not in:\n{help}");
    }
}

/// Unequal frame counts are an error by default (a shorter reference is
/// refused at its first repeated frame, and the log keeps the common
/// frames); shortest=1 accepts them with a warning and scores the common
/// frames.
#[test]
fn unequal_frame_counts() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("unequal");
    let frames = clip(Chroma::Yuv420, 8, 32, 24, 6, 2);
    let (dist, _) = write_clips(&dir, &frames);
    let short = dir.join("short.y4m");
    write_y4m(&short, &frames[..4].iter().map(|(r, _)| r).collect::<Vec<_>>());
    let m = "model='':feature=name=motion";
    expect_error(&bin, &dist, &short, &format!("[0:v][1:v]vmafx={m}"), "the reference input ended after 4 frames while the main (distorted) input goes on");
    // Refused at the first pair framesync makes with the reference's last
    // frame repeated (eof_action=repeat), so the log uninit writes holds
    // the 4 common pairs, marked incomplete with that error, equal to a run
    // on those pairs alone: no pair against a repeat, and the last common
    // frame's look-ahead not taken against one (the error shows under
    // -loglevel error).
    let first = dir.join("first");
    std::fs::create_dir_all(&first).unwrap();
    let (first_dist, first_ref) = write_clips(&first, &frames[..4]);
    let logged = |path: &Path| {
        let _ = std::fs::remove_file(path);
        format!("[0:v][1:v]vmafx={m}:log_fmt=json:log_path={}", path.display())
    };
    let (cut_log, clean_log) = (dir.join("unequal.json"), dir.join("first.json"));
    let run = ffmpeg(&bin, &dist, &short, &logged(&cut_log), &["-loglevel", "error"]);
    assert!(!run.ok && run.stderr.contains("reference input ended after 4 frames") && run.stderr.contains("marked incomplete"), "{}", run.stderr);
    let run = ffmpeg(&bin, &first_dist, &first_ref, &logged(&clean_log), &[]);
    assert!(run.ok, "{}", run.stderr);
    let (cut, clean) = (read_json(&cut_log), read_json(&clean_log));
    let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("no incomplete mark in {cut}"));
    assert!(why.contains("reference input ended after 4 frames"), "incomplete = {why:?}");
    assert_eq!(cut["frames"].as_array().map(Vec::len), Some(4), "{cut}");
    assert_eq!(cut["frames"], clean["frames"], "the common frames differ from a run on them alone");
    assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "pooled values differ");
    let run = ffmpeg(&bin, &dist, &short, &format!("[0:v][1:v]vmafx={m}:shortest=1"), &[]);
    assert!(run.ok, "{}", run.stderr);
    let run = ffmpeg(&bin, &dist, &short, &format!("[0:v][1:v]vmafx={m}:eof_action=pass"), &[]);
    assert!(run.ok && run.stderr.contains("2 main frames passed through unscored"), "{}", run.stderr);
}

/// The main input cut in the middle of frame 13: FFmpeg's y4m reader ends
/// it there (silently), and framesync would repeat its last frame against
/// the reference's next ones. vmafx refuses that pair, the graph fails,
/// and the log written at uninit holds the 13 frames scored, marked
/// incomplete, equal to a run on those frames alone (against the full
/// run, the last one's look-ahead values aside: see `assert_partial_log`).
/// Every message shows under `-loglevel error`.
#[test]
fn a_cut_main_input_keeps_the_frames_scored_before_it() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("cut");
    let (w, h, n, kept) = (64usize, 48usize, 16usize, 13usize);
    // The clip of tests/cli/end_to_end.rs's cut test: sad[13] < sad[12].
    let frames = clip(Chroma::Yuv420, 8, w, h, n, 15);
    let (dist, reference) = write_clips(&dir, &frames);
    let bytes = std::fs::read(&dist).unwrap();
    let header = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let cut = dir.join("cut.y4m");
    std::fs::write(&cut, &bytes[..header + kept * (6 + w * h * 3 / 2) + 6 + 1000]).unwrap();
    let first = dir.join("first");
    std::fs::create_dir_all(&first).unwrap();
    let (first_dist, first_ref) = write_clips(&first, &frames[..kept]);

    for threads in [0, 2] {
        let log = |name: &str| dir.join(format!("{name}_t{threads}.json"));
        let graph = |path: &Path| {
            let _ = std::fs::remove_file(path);
            format!("[0:v][1:v]vmafx=feature=name=psnr:n_threads={threads}:log_fmt=json:log_path={}", path.display())
        };
        let run = ffmpeg(&bin, &dist, &reference, &graph(&log("full")), &[]);
        assert!(run.ok, "{}", run.stderr);
        let run = ffmpeg(&bin, &first_dist, &first_ref, &graph(&log("first")), &[]);
        assert!(run.ok, "{}", run.stderr);
        let run = ffmpeg(&bin, &cut, &reference, &graph(&log("cut")), &["-loglevel", "error"]);
        assert!(!run.ok, "a cut input should fail the run:\n{}", run.stderr);
        for needle in [
            "the main (distorted) input ended after 13 frames while the reference goes on",
            "the log holds the 13 frames scored before the error, marked incomplete",
        ] {
            assert!(run.stderr.contains(needle), "threads {threads}: '{needle}' not in:\n{}", run.stderr);
        }
        assert!(!run.stderr.contains("VMAF score"), "a failed run logged a score:\n{}", run.stderr);
        let (full, clean, partial) = (read_json(&log("full")), read_json(&log("first")), read_json(&log("cut")));
        assert_partial_log(&format!("filter, threads {threads}"), &full, &clean, &partial, kept, "ended after 13 frames");
    }
}

/// An unwritable log_path fails when the filter starts, before any frame
/// is scored, and the message shows under `-loglevel error`.
#[test]
fn an_unwritable_log_path_fails_before_scoring() {
    let Some(bin) = ffmpeg_bin() else { return };
    let dir = workdir("bad-log-path");
    let (dist, reference) = write_clips(&dir, &clip(Chroma::Yuv420, 8, 64, 48, 4, 5));
    let run = ffmpeg(&bin, &dist, &reference, "[0:v][1:v]vmafx=log_path=/nonexistent/x.json", &["-loglevel", "error"]);
    assert!(!run.ok);
    assert!(run.stderr.contains("/nonexistent/x.json: No such file or directory"), "{}", run.stderr);
    assert!(!run.stderr.contains("VMAF score"), "{}", run.stderr);
    // Created at the start, removed when the run fails before scoring
    // (here: inputs of different sizes).
    let other = dir.join("other.y4m");
    write_y4m(&other, &clip(Chroma::Yuv420, 8, 66, 48, 4, 5).iter().map(|(r, _)| r).collect::<Vec<_>>());
    let log = dir.join("unused.json");
    let _ = std::fs::remove_file(&log);
    let run = ffmpeg(&bin, &dist, &other, &format!("[0:v][1:v]vmafx=log_path={}", log.display()), &[]);
    assert!(!run.ok && run.stderr.contains("input sizes differ"), "{}", run.stderr);
    assert!(!log.exists(), "a run that scored nothing left {}", log.display());
}
