//! Logs and pooling against libvmaf 3.2.0.
//!
//! The same feature values go into libvmaf (`vmaf_import_feature_score`,
//! after reading `frames` blank pictures with no extractor so that its
//! picture count and size are set) and into our `FeatureCollector`, in the
//! same order. libvmaf's `vmaf_write_output` file and our log must then be
//! identical byte for byte in all four formats, once the version and fps
//! lines (which differ by design) are masked. Pooling is compared as bits
//! with `vmaf_feature_score_pooled` over many ranges.

use crate::support;

use std::ffi::CString;
use std::ptr;

use crate::support::synth::Rng;
use vmaf_head_sys as sys;
use vmafx::{FeatureCollector, LoadFlags, LogFormat, LogStream, PoolMethod};
use vmafx::internals::model::ModelDefinition;
use vmafx::internals::score::log::{render_log, LogInput, LOG_VERSION};
use vmafx::internals::score::pool::{pool, pool_frames, RunningPools};

const V061: [&str; 6] = [
    "VMAF_integer_feature_adm2_score",
    "VMAF_integer_feature_motion2_score",
    "VMAF_integer_feature_vif_scale0_score",
    "VMAF_integer_feature_vif_scale1_score",
    "VMAF_integer_feature_vif_scale2_score",
    "VMAF_integer_feature_vif_scale3_score",
];

/// One scenario: values written in order, then optionally a model score at
/// every scored frame that has all model features.
struct Scenario {
    label: String,
    frames: u32,
    subsample: u32,
    width: u32,
    height: u32,
    writes: Vec<(String, u32, f64)>,
    model: bool,
}

const FORMATS: [(LogFormat, sys::VmafOutputFormat, &str); 4] = [
    (LogFormat::Xml, sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_XML, "xml"),
    (LogFormat::Json, sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_JSON, "json"),
    (LogFormat::Csv, sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_CSV, "csv"),
    (LogFormat::Sub, sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_SUB, "sub"),
];

/// A libvmaf context holding the scenario's values.
struct Reference {
    ctx: *mut sys::VmafContext,
    model: *mut sys::VmafModel,
    /// Held while the context lives (see `reference::libvmaf_lock`).
    _libvmaf: std::sync::MutexGuard<'static, ()>,
}

impl Reference {
    fn new(s: &Scenario) -> Reference {
        let libvmaf = support::reference::libvmaf_lock();
        // SAFETY: libvmaf's C API under its lock (held by the Reference):
        // every return code is checked; the pictures are allocated by
        // vmaf_picture_alloc for the size and format read, which takes them;
        // each name is a CString alive for the call; the context and model
        // are freed once, in Drop.
        unsafe {
            let mut ctx = ptr::null_mut();
            let cfg = support::reference::config(0, s.subsample, support::reference::LibvmafPath::C);
            assert_eq!(sys::vmaf_init(&mut ctx, cfg), 0);
            for i in 0..s.frames {
                let mut r: sys::VmafPicture = std::mem::zeroed();
                let mut d: sys::VmafPicture = std::mem::zeroed();
                let fmt = sys::VmafPixelFormat_VMAF_PIX_FMT_YUV420P;
                assert_eq!(sys::vmaf_picture_alloc(&mut r, fmt, 8, s.width, s.height), 0);
                assert_eq!(sys::vmaf_picture_alloc(&mut d, fmt, 8, s.width, s.height), 0);
                assert_eq!(sys::vmaf_read_pictures(ctx, &mut r, &mut d, i), 0);
            }
            assert_eq!(sys::vmaf_read_pictures(ctx, ptr::null_mut(), ptr::null_mut(), 0), 0);
            for (name, i, v) in &s.writes {
                let n = CString::new(name.as_str()).unwrap();
                assert_eq!(sys::vmaf_import_feature_score(ctx, n.as_ptr(), *v, *i), 0, "{name} {i}");
            }
            let mut model = ptr::null_mut();
            if s.model {
                let mut mcfg = sys::VmafModelConfig { name: ptr::null(), flags: 0 };
                let v = CString::new("vmaf_v0.6.1").unwrap();
                assert_eq!(sys::vmaf_model_load(&mut model, &mut mcfg, v.as_ptr()), 0);
                for i in model_frames(s) {
                    let mut score = 0.0;
                    assert_eq!(sys::vmaf_score_at_index(ctx, model, &mut score, i), 0);
                }
            }
            Reference { ctx, model, _libvmaf: libvmaf }
        }
    }

    fn log(&self, fmt: sys::VmafOutputFormat, tag: &str) -> String {
        let path = std::env::temp_dir().join(format!("vmafx-log-format-{}-{tag}", std::process::id()));
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: `self.ctx` is the live context `new` made; `cpath` a
        // NUL-terminated path alive for the call.
        unsafe {
            assert_eq!(sys::vmaf_write_output(self.ctx, cpath.as_ptr(), fmt), 0);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        text
    }

    fn pooled(&self, name: &str, method: PoolMethod, first: u32, last: u32) -> Option<f64> {
        let m = match method {
            PoolMethod::Min => sys::VmafPoolingMethod_VMAF_POOL_METHOD_MIN,
            PoolMethod::Max => sys::VmafPoolingMethod_VMAF_POOL_METHOD_MAX,
            PoolMethod::Mean => sys::VmafPoolingMethod_VMAF_POOL_METHOD_MEAN,
            PoolMethod::HarmonicMean => sys::VmafPoolingMethod_VMAF_POOL_METHOD_HARMONIC_MEAN,
        };
        let n = CString::new(name).unwrap();
        let mut s = 0.0;
        // SAFETY: the live context, a NUL-terminated name and a local out value.
        let err = unsafe { sys::vmaf_feature_score_pooled(self.ctx, n.as_ptr(), m, &mut s, first, last) };
        (err == 0).then_some(s)
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        // SAFETY: the model (when loaded) and context `new` made, each
        // destroyed once, here.
        unsafe {
            if !self.model.is_null() {
                sys::vmaf_model_destroy(self.model);
            }
            sys::vmaf_close(self.ctx);
        }
    }
}

/// Scored frames that have every model feature.
fn model_frames(s: &Scenario) -> Vec<u32> {
    (0..s.frames)
        .filter(|i| s.subsample <= 1 || i % s.subsample == 0)
        .filter(|i| V061.iter().all(|n| s.writes.iter().any(|(w, j, _)| w == n && j == i)))
        .collect()
}

fn ours(s: &Scenario) -> FeatureCollector {
    let mut c = FeatureCollector::new();
    for (name, i, v) in &s.writes {
        c.append(name, *i, *v).unwrap();
    }
    if s.model {
        let m = ModelDefinition::builtin("vmaf_v0.6.1", LoadFlags::default()).unwrap();
        for i in model_frames(s) {
            let values: Vec<f64> = V061.iter().map(|n| c.get(n, i).unwrap()).collect();
            c.append("vmaf", i, m.score(&values).unwrap()).unwrap();
        }
    }
    c
}

/// Masks the two lines that differ by design: version and fps.
fn mask(text: &str, format: LogFormat) -> String {
    text.lines()
        .enumerate()
        .map(|(n, line)| match (format, n) {
            (LogFormat::Xml, 0) if line.starts_with("<VMAF version=\"") => "<VMAF version=*>".to_owned(),
            (LogFormat::Xml, 2) if line.starts_with("  <fyi fps=\"") => "  <fyi fps=*>".to_owned(),
            (LogFormat::Json, 1) if line.starts_with("  \"version\": \"") => "  \"version\": *".to_owned(),
            (LogFormat::Json, 2) if line.starts_with("  \"fps\": ") => "  \"fps\": *".to_owned(),
            _ => line.to_owned(),
        })
        .map(|l| l + "\n")
        .collect()
}

fn first_difference(a: &str, b: &str) -> String {
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  ours:   {x}\n  libvmaf: {y}", n + 1);
        }
    }
    format!("lengths differ: ours {} lines, libvmaf {} lines", a.lines().count(), b.lines().count())
}

fn check_logs(s: &Scenario) {
    let reference = Reference::new(s);
    let collector = ours(s);
    let input = LogInput {
        collector: &collector,
        frames: s.frames,
        subsample: s.subsample,
        width: s.width as usize,
        height: s.height as usize,
        fps: Some(25.0),
        incomplete: None,
    };
    for (format, cfmt, tag) in FORMATS {
        let theirs = reference.log(cfmt, tag);
        let ours = render_log(format, &input);
        let (mo, mt) = (mask(&ours, format), mask(&theirs, format));
        assert!(
            mo == mt && ours.ends_with('\n') == theirs.ends_with('\n'),
            "{} ({tag}): {}\n--- ours ---\n{ours}\n--- libvmaf ---\n{theirs}",
            s.label,
            first_difference(&mo, &mt)
        );
        if format == LogFormat::Json {
            assert!(ours.contains(&format!("\"version\": \"{LOG_VERSION}\"")));
        }
        // Written as a run writes it (frame by frame, values retired once
        // logged, pooled values kept running): the same bytes.
        let streamed = stream_log(s, &collector, format, tag);
        assert!(streamed == ours, "{} ({tag}): streamed log differs: {}", s.label, first_difference(&streamed, &ours));
    }
    // Pooling, as bits, over ranges that start on and off the subsample grid.
    for name in collector.names() {
        for (first, last) in [(0, s.frames - 1), (1, s.frames - 1), (2, 5), (3, 3), (1, 2), (0, s.frames + 3)] {
            if first > last {
                continue;
            }
            for m in PoolMethod::ALL {
                let theirs = reference.pooled(name, m, first, last);
                let ours = pool_frames(|i| collector.get(name, i), m, first, last, s.subsample).ok();
                assert_eq!(
                    ours.map(f64::to_bits),
                    theirs.map(f64::to_bits),
                    "{}: pooled {name} {m:?} {first}..={last}: ours {ours:?} libvmaf {theirs:?}",
                    s.label
                );
            }
        }
    }
}

/// `collector`'s log through `LogStream`, fed a frame at a time as a run
/// does, with every logged frame's values retired at once.
fn stream_log(s: &Scenario, collector: &FeatureCollector, format: LogFormat, tag: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("log_format_stream_{}_{tag}", s.label.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    let mut c = collector.clone();
    let mut pools = RunningPools::new(s.subsample);
    let mut log = LogStream::create(&path, format, s.subsample).unwrap();
    for i in 0..s.frames {
        pools.feed(c.names().iter().map(String::as_str), |n| c.get(n, i));
        log.write_frames(&c, i + 1).unwrap();
        c.retire_before(i + 1);
    }
    let head = (s.width as usize, s.height as usize, Some(25.0));
    log.finish(&c, &pools, head, None).unwrap();
    std::fs::read_to_string(&path).unwrap()
}

/// Values that stress the formatting: ties at 6 decimals, leading-zero
/// boundaries, tiny, huge, negative, zeros.
fn edge_values() -> Vec<f64> {
    vec![
        0.0, -0.0, 1.0, 100.0, 0.0078125, 0.5, 2.5e-7, 1e-7, 9.99e-7, 1e-6, 5e-7, 1.5e-7, -1e-7, -3e-9,
        1e-300, 5e-324, 123456.0000005, 99.99999949999999, 1e20, -1e20, 3e9, -2147483648.5, 0.1234565,
        2.0f64.powi(-20), 12345678.9, -0.4999999,
    ]
}

fn random_value(rng: &mut Rng, edges: &[f64]) -> f64 {
    match rng.below(5) {
        0 => edges[rng.below(edges.len() as u64) as usize],
        1 => (rng.below(1 << 20) as f64) / 128.0 / 1024.0, // exact binary fractions
        2 => (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 100.0,
        3 => ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1e-5,
        _ => {
            let x = f64::from_bits(rng.next_u64());
            if x.is_finite() && x.abs() < 1e30 { x } else { 0.75 }
        }
    }
}

const NAMES: [&str; 6] = [
    "VMAF_integer_feature_adm2_score",
    "VMAF_integer_feature_motion2_score",
    "psnr_y",
    "VMAF_feature_vif_scale0_score",
    "integer_adm2_egl_1",
    "Cambi_feature_cambi_score",
];

#[test]
fn logs_match_libvmaf() {
    let edges = edge_values();
    for subsample in [1u32, 2] {
        for seed in 0..6u64 {
            let mut rng = Rng::new(seed * 7 + subsample as u64);
            let frames = 5 + rng.below(20) as u32;
            // Every feature gets a value at the last frame, so all columns
            // share libvmaf's capacity (a shorter column makes libvmaf read
            // past its allocation).
            let mut writes = Vec::new();
            for i in 0..frames {
                for (k, n) in NAMES.iter().enumerate() {
                    // Feature k is missing at some frames (not the last).
                    let missing = k >= 3 && i + 1 < frames && rng.below(5) == 0;
                    if !missing {
                        writes.push((n.to_string(), i, random_value(&mut rng, &edges)));
                    }
                }
            }
            check_logs(&Scenario {
                label: format!("random seed {seed} subsample {subsample} frames {frames}"),
                frames,
                subsample,
                width: 1920,
                height: 1080,
                writes,
                model: false,
            });
        }
    }
}

#[test]
fn logs_with_model_scores() {
    for subsample in [1u32, 2] {
        let mut rng = Rng::new(99 + subsample as u64);
        let frames = 11;
        let mut writes = Vec::new();
        for i in 0..frames {
            for (k, n) in V061.iter().enumerate() {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                writes.push((n.to_string(), i, if k == 1 { u * 20.0 } else { u }));
            }
        }
        check_logs(&Scenario {
            label: format!("model subsample {subsample}"),
            frames,
            subsample,
            width: 576,
            height: 324,
            writes,
            model: true,
        });
    }
}

#[test]
fn logs_edge_layouts() {
    let mut scenarios = Vec::new();
    // Nothing at frame 0: libvmaf's JSON then opens the frame list with ",".
    let mut w = Vec::new();
    for i in 1..8u32 {
        w.push(("psnr_y".to_string(), i, i as f64 * 1.25));
        w.push(("VMAF_integer_feature_motion2_score".to_string(), i, 0.1 / i as f64));
    }
    scenarios.push(("no frame 0", 8, w));
    // NaN and infinities: null in JSON, nan/inf elsewhere, and pooled.
    let mut w = Vec::new();
    for i in 0..6u32 {
        let v = match i {
            1 => f64::NAN,
            2 => f64::INFINITY,
            3 => -f64::NAN,
            4 => f64::NEG_INFINITY,
            _ => 3.5,
        };
        w.push(("odd_feature".to_string(), i, v));
        w.push(("psnr_y".to_string(), i, 40.0 + i as f64));
    }
    // One feature only finite, one where all but NaN pools.
    w.push(("VMAF_integer_feature_adm2_score".to_string(), 5, 0.9));
    scenarios.push(("nan and inf", 6, w));
    // More frames read than written: pooling fails, metrics are empty.
    let mut w = Vec::new();
    for i in 0..4u32 {
        w.push(("psnr_y".to_string(), i, 30.0 + i as f64 / 3.0));
    }
    scenarios.push(("frames beyond values", 6, w));
    // A single frame.
    scenarios.push(("one frame", 1, vec![("psnr_y".to_string(), 0, 12.5)]));
    // Features written out of frame order, names first seen late.
    let mut w = Vec::new();
    for i in (0..9u32).rev() {
        w.push(("z_last_written_first".to_string(), i, i as f64 / 7.0));
    }
    for i in 0..9u32 {
        w.push(("a_second".to_string(), i, 1.0 - i as f64 / 9.0));
    }
    scenarios.push(("order", 9, w));
    for subsample in [1u32, 2, 3] {
        for (label, frames, writes) in &scenarios {
            check_logs(&Scenario {
                label: format!("{label} subsample {subsample}"),
                frames: *frames,
                subsample,
                width: 33,
                height: 17,
                writes: writes.clone(),
                model: false,
            });
        }
    }
}

#[test]
fn pool_of_values_matches_libvmaf_from_frame_zero() {
    let mut rng = Rng::new(5);
    let edges = edge_values();
    let values: Vec<f64> = (0..200).map(|_| random_value(&mut rng, &edges).abs()).collect();
    let s = Scenario {
        label: "pool".into(),
        frames: values.len() as u32,
        subsample: 1,
        width: 16,
        height: 16,
        writes: values.iter().enumerate().map(|(i, &v)| ("f".to_string(), i as u32, v)).collect(),
        model: false,
    };
    let reference = Reference::new(&s);
    for m in PoolMethod::ALL {
        let ours = pool(&values, m).unwrap();
        let theirs = reference.pooled("f", m, 0, values.len() as u32 - 1).unwrap();
        assert_eq!(ours.to_bits(), theirs.to_bits(), "{m:?}");
    }
}

