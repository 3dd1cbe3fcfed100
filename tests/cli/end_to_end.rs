//! The `vmafx` binary end to end on y4m and yuv files this test writes:
//! its score line and JSON log against libvmaf's own numbers (through
//! `tests/support/reference.rs`), and every input error it must refuse with
//! the file and frame named and a non-zero exit.


use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::partial_log::{assert_partial_log, frames_by_number, read_json};
use crate::support::{reference, synth};
use synth::write_y4m;
use vmafx::{Chroma, OwnedPicture, PixelFormat};

fn dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Raw planar bytes of the pictures, as ffmpeg's rawvideo writes them.
fn write_yuv(path: &Path, pictures: &[&OwnedPicture]) {
    let mut bytes = Vec::new();
    for p in pictures {
        let v = p.view();
        for i in 0..v.plane_count() {
            let plane = v.plane(i);
            for y in 0..plane.height() {
                for x in 0..plane.width() {
                    let s = plane.sample(x, y) as u16;
                    if p.format().bits > 8 {
                        bytes.extend_from_slice(&s.to_le_bytes());
                    } else {
                        bytes.push(s as u8);
                    }
                }
            }
        }
    }
    std::fs::write(path, bytes).unwrap();
}

/// A reference/distorted y4m pair named `name_ref.y4m`, `name_dist.y4m`.
struct Pair {
    frames: Vec<(OwnedPicture, OwnedPicture)>,
    reference: PathBuf,
    distorted: PathBuf,
}

fn pair(name: &str, chroma: Chroma, bits: u8, w: usize, h: usize, n: usize) -> Pair {
    let frames = synth::clip(chroma, bits, w, h, n, 7 + bits as u64);
    let reference = dir().join(format!("{name}_ref.y4m"));
    let distorted = dir().join(format!("{name}_dist.y4m"));
    write_y4m(&reference, &frames.iter().map(|f| &f.0).collect::<Vec<_>>());
    write_y4m(&distorted, &frames.iter().map(|f| &f.1).collect::<Vec<_>>());
    Pair { frames, reference, distorted }
}

fn vmafx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vmafx")).args(args).output().expect("run vmafx")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs vmafx expecting success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = vmafx(args);
    assert!(o.status.success(), "vmafx {args:?} failed ({}):\n{}", o.status, stderr(&o));
    stdout(&o)
}

/// Runs vmafx expecting failure with exit code `code`; returns stderr.
fn fails(args: &[&str], code: i32) -> String {
    let o = vmafx(args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "vmafx {args:?}: stdout {:?} stderr {:?}",
        stdout(&o),
        stderr(&o)
    );
    stderr(&o)
}

fn assert_has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "{text:?} lacks {p:?}");
    }
}

/// The per-frame metrics and pooled metrics of a libvmaf-style JSON log.
fn json_scores(log: &str) -> (serde_json::Value, serde_json::Value) {
    let v: serde_json::Value =
        serde_json::from_str(log).unwrap_or_else(|e| panic!("bad JSON log ({e}):\n{log}"));
    (v["frames"].clone(), v["pooled_metrics"].clone())
}

// ---- successes ---------------------------------------------------------

#[test]
fn score_line_and_json_log_equal_libvmaf() {
    for (name, chroma, bits, w, h) in [
        ("s8", Chroma::Yuv420, 8, 97, 61),
        ("s10", Chroma::Yuv420, 10, 96, 64),
        ("s444", Chroma::Yuv444, 8, 80, 50),
    ] {
        let p = pair(name, chroma, bits, w, h, 6);
        let spec = reference::RefSpec {
            models: vec![("vmaf_v0.6.1".into(), "vmaf".into())],
            features: vec![("psnr".into(), vec![])],
            ..Default::default()
        };
        let r = reference::run(&p.frames, &spec, &[]);
        let want = format!("vmaf_v0.6.1: {:.6}\n", r.pooled["vmaf"][0].unwrap());
        let (ref_frames, ref_pooled) = json_scores(&r.log_json);
        for threads in ["0", "2"] {
            let log = dir().join(format!("{name}_t{threads}.json"));
            let out = ok(&[
                "-r",
                s(&p.reference),
                "-d",
                s(&p.distorted),
                "--threads",
                threads,
                "--feature",
                "psnr",
                "--json",
                "-o",
                s(&log),
            ]);
            assert_eq!(out, want, "{name} threads {threads}");
            let (frames, pooled) = json_scores(&std::fs::read_to_string(&log).unwrap());
            assert_eq!(
                frames, ref_frames,
                "{name} threads {threads}: per-frame metrics differ from libvmaf's log"
            );
            assert_eq!(
                pooled, ref_pooled,
                "{name} threads {threads}: pooled metrics differ from libvmaf's log"
            );
        }
    }
}

#[test]
fn several_models_and_subsample() {
    let p = pair("models", Chroma::Yuv420, 8, 64, 48, 7);
    let spec = reference::RefSpec {
        models: vec![
            ("vmaf_v0.6.1".into(), "vmaf".into()),
            ("vmaf_v0.6.1neg".into(), "vmaf_neg".into()),
            ("vmaf_4k_v0.6.1neg".into(), "vmaf_4k_neg".into()),
        ],
        subsample: 3,
        ..Default::default()
    };
    let r = reference::run(&p.frames, &spec, &[]);
    let want = format!(
        "vmaf_v0.6.1: {:.6}\nvmaf_v0.6.1neg: {:.6}\nvmaf_4k_v0.6.1neg: {:.6}\n",
        r.pooled["vmaf"][0].unwrap(),
        r.pooled["vmaf_neg"][0].unwrap(),
        r.pooled["vmaf_4k_neg"][0].unwrap()
    );
    let out = ok(&[
        "-r",
        s(&p.reference),
        "-d",
        s(&p.distorted),
        "--subsample",
        "3",
        "--threads",
        "2",
        "-m",
        "version=vmaf_v0.6.1",
        "--model",
        "version=vmaf_v0.6.1neg:name=vmaf_neg",
        "-m",
        "version=vmaf_4k_v0.6.1neg:name=vmaf_4k_neg",
    ]);
    assert_eq!(out, want);
}

#[test]
fn raw_yuv_scores_like_y4m() {
    for (chroma, bits, pix, w, h) in [(Chroma::Yuv420, 8, "420", 65, 39), (Chroma::Yuv422, 10, "422", 64, 36)]
    {
        let name = format!("raw{bits}");
        let p = pair(&name, chroma, bits, w, h, 4);
        let (ry, dy) = (dir().join(format!("{name}_ref.yuv")), dir().join(format!("{name}_dist.yuv")));
        write_yuv(&ry, &p.frames.iter().map(|f| &f.0).collect::<Vec<_>>());
        write_yuv(&dy, &p.frames.iter().map(|f| &f.1).collect::<Vec<_>>());
        let from_y4m = ok(&["-r", s(&p.reference), "-d", s(&p.distorted)]);
        let (ws, hs, bs) = (w.to_string(), h.to_string(), bits.to_string());
        let from_yuv = ok(&["-r", s(&ry), "-d", s(&dy), "-w", &ws, "-h", &hs, "-p", pix, "-b", &bs]);
        assert_eq!(from_yuv, from_y4m, "{name}");
        assert!(from_y4m.starts_with("vmaf_v0.6.1: "), "{from_y4m}");
        // ffmpeg's pixel format names work too.
        let ff = if bits == 8 { "yuv420p".to_owned() } else { format!("yuv422p{bits}le") };
        let from_ff =
            ok(&["-r", s(&ry), "-d", s(&dy), "--width", &ws, "--height", &hs, "--pixel_format", &ff]);
        assert_eq!(from_ff, from_y4m, "{name} {ff}");
    }
}

/// CAMBI in libvmaf's option syntax: the JSON log (per frame and pooled,
/// names included) equals libvmaf's.
#[test]
fn cambi_feature_json_log_equals_libvmaf() {
    let frames = synth::banded_clip(Chroma::Yuv420, 10, 320, 240, 4, 3);
    let reference = dir().join("cambi_ref.y4m");
    let distorted = dir().join("cambi_dist.y4m");
    write_y4m(&reference, &frames.iter().map(|f| &f.0).collect::<Vec<_>>());
    write_y4m(&distorted, &frames.iter().map(|f| &f.1).collect::<Vec<_>>());
    for (arg, opts) in [
        ("cambi", vec![]),
        ("cambi=full_ref=true:window_size=33:cambi_eotf=pq", vec![("full_ref", "true"), ("window_size", "33"), ("cambi_eotf", "pq")]),
    ] {
        let spec = reference::RefSpec {
            features: vec![("cambi".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
            ..Default::default()
        };
        let r = reference::run(&frames, &spec, &[]);
        let (ref_frames, ref_pooled) = json_scores(&r.log_json);
        let log = dir().join("cambi.json");
        ok(&["-r", s(&reference), "-d", s(&distorted), "-n", "--feature", arg, "--json", "-o", s(&log), "--quiet"]);
        let (frames, pooled) = json_scores(&std::fs::read_to_string(&log).unwrap());
        assert_eq!(frames, ref_frames, "{arg}: per-frame metrics differ from libvmaf's log");
        assert_eq!(pooled, ref_pooled, "{arg}: pooled metrics differ from libvmaf's log");
    }
}

/// The eight v1.0.16 models by `-m version=...`, all in one run: the score
/// lines and the JSON log's frames and pooled metrics are libvmaf's. At
/// 176x144 both refuse (cambi); vmafx says why.
#[test]
fn v1016_models_by_version_equal_libvmaf() {
    const V1016: [&str; 8] = [
        "vmaf_v1.0.16_3d0h",
        "vmaf_v1.0.16_3d0h_2160",
        "vmaf_v1.0.16_5d0h",
        "vmaf_v1.0.16_1d5h_2160",
        "vmaf_v1.0.16_hfr_3d0h",
        "vmaf_v1.0.16_hfr_3d0h_2160",
        "vmaf_v1.0.16_hfr_5d0h",
        "vmaf_v1.0.16_hfr_1d5h_2160",
    ];
    let p = pair("v1016", Chroma::Yuv420, 8, 640, 360, 4);
    let spec = reference::RefSpec {
        models: V1016.iter().map(|v| (v.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let r = reference::run(&p.frames, &spec, &[]);
    let want: String = V1016.iter().map(|v| format!("{v}: {:.6}\n", r.pooled[*v][0].unwrap())).collect();
    let (ref_frames, ref_pooled) = json_scores(&r.log_json);
    let log = dir().join("v1016.json");
    let mut args = vec!["-r", s(&p.reference), "-d", s(&p.distorted), "--threads", "2", "--json", "-o", s(&log)];
    let models: Vec<String> = V1016.iter().map(|v| format!("version={v}:name={v}")).collect();
    for m in &models {
        args.extend(["-m", m.as_str()]);
    }
    assert_eq!(ok(&args), want);
    let (frames, pooled) = json_scores(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(frames, ref_frames, "per-frame metrics differ from libvmaf's log");
    assert_eq!(pooled, ref_pooled, "pooled metrics differ from libvmaf's log");

    let small = pair("v1016_small", Chroma::Yuv420, 8, 176, 144, 2);
    let spec = reference::RefSpec { models: vec![(V1016[0].into(), "vmaf".into())], ..Default::default() };
    assert!(reference::try_run(&small.frames, &spec, &[]).is_err(), "libvmaf scored v1.0.16 at 176x144");
    let err = fails(&["-r", s(&small.reference), "-d", s(&small.distorted), "-m", "version=vmaf_v1.0.16_3d0h"], 1);
    assert_has(&err, &["cambi", "216"]);
}

/// The bootstrap collection: libvmaf's tool prints member 0's score, then
/// the collection's pooled bagging score, 95% interval and stddev.
#[test]
fn bootstrap_model_by_version_equals_libvmaf() {
    let p = pair("bootstrap", Chroma::Yuv420, 10, 98, 66, 5);
    let spec = reference::RefSpec { models: vec![("vmaf_b_v0.6.3".into(), "vmaf".into())], ..Default::default() };
    let r = reference::run(&p.frames, &spec, &["vmaf_bagging".into(), "vmaf_ci_p95_lo".into(), "vmaf_ci_p95_hi".into(), "vmaf_stddev".into()]);
    let mean = |n: &str| r.pooled[n][0].unwrap();
    let want = format!(
        "vmaf_b_v0.6.3: {:.6}\nvmaf_b_v0.6.3: {:.6}, ci.p95: [{:.6}, {:.6}], stddev: {:.6}\n",
        mean("vmaf"),
        mean("vmaf_bagging"),
        mean("vmaf_ci_p95_lo"),
        mean("vmaf_ci_p95_hi"),
        mean("vmaf_stddev")
    );
    let (ref_frames, ref_pooled) = json_scores(&r.log_json);
    let log = dir().join("bootstrap.json");
    let out = ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--threads", "2", "-m", "version=vmaf_b_v0.6.3", "--json", "-o", s(&log)]);
    assert_eq!(out, want);
    let (frames, pooled) = json_scores(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(frames, ref_frames, "per-frame metrics differ from libvmaf's log");
    assert_eq!(pooled, ref_pooled, "pooled metrics differ from libvmaf's log");
}

/// `--model version=...:<extractor>.<option>=value`, as libvmaf's tool
/// takes it: the overloaded features' names and values, the model's
/// score, in the JSON log equal to libvmaf's.
#[test]
fn model_feature_overloads_equal_libvmaf() {
    let p = pair("overload", Chroma::Yuv420, 8, 96, 64, 5);
    let overloads = [("vif", "vif_enhn_gain_limit", "1.0"), ("motion", "motion_force_zero", "true")];
    let spec = reference::RefSpec {
        models: vec![("vmaf_v0.6.1".into(), "vmaf".into())],
        overloads: vec![overloads.iter().map(|(x, o, v)| (x.to_string(), o.to_string(), v.to_string())).collect()],
        ..Default::default()
    };
    let r = reference::run(&p.frames, &spec, &[]);
    assert!(r.log_names.iter().any(|n| n == "integer_vif_scale0_egl_1"), "{:?}", r.log_names);
    let (ref_frames, ref_pooled) = json_scores(&r.log_json);
    let log = dir().join("overload.json");
    let model = "version=vmaf_v0.6.1:vif.vif_enhn_gain_limit=1.0:motion.motion_force_zero=true";
    let out = ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "-m", model, "--json", "-o", s(&log)]);
    assert_eq!(out, format!("vmaf_v0.6.1: {:.6}\n", r.pooled["vmaf"][0].unwrap()));
    let (frames, pooled) = json_scores(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(frames, ref_frames, "per-frame metrics differ from libvmaf's log");
    assert_eq!(pooled, ref_pooled, "pooled metrics differ from libvmaf's log");
}

#[test]
fn features_only_with_no_prediction() {
    let p = pair("noprediction", Chroma::Yuv420, 8, 33, 21, 4);
    let out = ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "-n", "--feature", "motion", "--quiet"]);
    assert_eq!(out, "", "no score line without prediction");
    let out = ok(&[
        "-r",
        s(&p.reference),
        "-d",
        s(&p.distorted),
        "--no-prediction",
        "--feature",
        "motion=motion_force_zero=true",
    ]);
    assert_eq!(out, "");
}

#[test]
fn frame_count_skip_and_log_formats() {
    let p = pair("formats", Chroma::Yuv420, 8, 48, 32, 6);
    let log = dir().join("formats.json");
    ok(&[
        "-r",
        s(&p.reference),
        "-d",
        s(&p.distorted),
        "-n",
        "--feature",
        "motion",
        "--frame_cnt",
        "3",
        "--frame_skip_ref",
        "1",
        "--frame_skip_dist",
        "1",
        "--json",
        "-o",
        s(&log),
    ]);
    let (frames, _) = json_scores(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(frames.as_array().unwrap().len(), 3);
    // Frames 1..=3 of both files: the same as libvmaf on those frames.
    let spec = reference::RefSpec { features: vec![("motion".into(), vec![])], ..Default::default() };
    let r = reference::run(&p.frames[1..4], &spec, &[]);
    assert_eq!(frames, json_scores(&r.log_json).0);

    // The format follows the flag, else the extension, else XML.
    for (flag, file, starts) in [
        (Some("--csv"), "f.txt", "Frame,"),
        (Some("--xml"), "f.json", "<VMAF"),
        (Some("--sub"), "f.sub", "{"),
        (None, "f.csv", "Frame,"),
        (None, "f.json", "{"),
        (None, "f.log", "<VMAF"),
    ] {
        let out = dir().join(file);
        let _ = std::fs::remove_file(&out);
        let mut args =
            vec!["-r", s(&p.reference), "-d", s(&p.distorted), "-n", "--feature", "motion", "-o", s(&out)];
        args.extend(flag);
        ok(&args);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.trim_start().starts_with(starts), "{flag:?} {file}: {text:.80}");
    }
}

/// A run longer than the batches in which logged frames' values are
/// dropped (64): the log, written frame by frame with the pooled values
/// kept running, equals libvmaf's; subsampled and PSNR's apsnr
/// aggregates (summed as frames commit) included.
#[test]
fn long_runs_log_as_libvmaf() {
    let p = pair("long", Chroma::Yuv420, 8, 64, 48, 150);
    for subsample in [1u32, 3] {
        let spec = reference::RefSpec {
            models: vec![("vmaf_v0.6.1".into(), "vmaf".into())],
            features: vec![("psnr".into(), vec![("enable_apsnr".into(), "true".into())])],
            subsample,
            ..Default::default()
        };
        let r = reference::run(&p.frames, &spec, &[]);
        let want: serde_json::Value = serde_json::from_str(&r.log_json).unwrap();
        for threads in ["0", "3"] {
            let log = dir().join(format!("long_s{subsample}_t{threads}.json"));
            let sub = subsample.to_string();
            let out = ok(&[
                "-r", s(&p.reference), "-d", s(&p.distorted), "--threads", threads, "--subsample", &sub,
                "--feature", "psnr=enable_apsnr=true", "--json", "-o", s(&log),
            ]);
            assert_eq!(out, format!("vmaf_v0.6.1: {:.6}\n", r.pooled["vmaf"][0].unwrap()));
            let got = read_json(&log);
            for key in ["frames", "pooled_metrics", "aggregate_metrics"] {
                assert_eq!(got[key], want[key], "subsample {subsample} threads {threads}: {key}");
            }
        }
    }
}

/// SIGINT (and SIGTERM) mid-run: the run stops before its next frame,
/// writes the log of the frames scored, marked incomplete, and exits with
/// 128 + the signal. The distorted input is a FIFO this test feeds: once
/// more frames were written than the pipe holds, vmafx is reading them.
#[test]
fn a_signal_mid_run_keeps_the_frames_scored() {
    use std::io::Write;
    let (w, h, n) = (64usize, 48usize, 60usize);
    let p = pair("signal", Chroma::Yuv420, 8, w, h, n);
    let full_log = dir().join("signal_full.json");
    ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--json", "-o", s(&full_log)]);
    let full = read_json(&full_log);
    let dist_bytes = std::fs::read(&p.distorted).unwrap();
    let header = dist_bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let frame = 6 + w * h * 3 / 2;
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let fifo = dir().join(format!("signal_{signal}.y4m"));
        let _ = std::fs::remove_file(&fifo);
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let log = dir().join(format!("signal_{signal}.json"));
        let _ = std::fs::remove_file(&log);
        let child = Command::new(env!("CARGO_BIN_EXE_vmafx"))
            .args(["-r", s(&p.reference), "-d", s(&fifo), "--threads", "2", "--json", "-o", s(&log)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        // 30 frames (138 KiB) do not fit a pipe (64 KiB) and vmafx's read
        // buffer: when the write returns, vmafx is in its frame loop, its
        // signal handlers in place.
        pipe.write_all(&dist_bytes[..header + 30 * frame]).unwrap();
        let kill = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        assert!(kill.success());
        // The rest; vmafx stops at the next frame and closes the pipe.
        let _ = pipe.write_all(&dist_bytes[header + 30 * frame..]);
        drop(pipe);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "SIG{signal}: {err}");
        assert!(out.stdout.is_empty(), "an interrupted run printed a score");
        assert_has(&err, &[&format!("interrupted by SIG{signal} after "), "marked incomplete"]);
        let partial = read_json(&log);
        assert!(partial["incomplete"].as_str().unwrap().contains(&format!("SIG{signal}")), "{partial}");
        let kept = partial["frames"].as_array().unwrap().len();
        assert!((1..n).contains(&kept), "SIG{signal}: {kept} frames kept");
        // The frames kept are the full run's, the last one's look-ahead
        // values aside.
        let (a, b) = (frames_by_number(&full), frames_by_number(&partial));
        assert_eq!(a[..kept - 1], b[..kept - 1], "SIG{signal}");
        for (key, value) in &b[kept - 1] {
            if !["integer_motion2", "integer_motion3", "vmaf"].contains(&key.as_str()) {
                assert_eq!(&a[kept - 1][key], value, "SIG{signal}: {key} of the last kept frame");
            }
        }
    }
}

#[test]
fn version_and_help() {
    let out = ok(&["--version"]);
    assert_has(&out, &["vmafx", "3.2.0"]);
    let out = ok(&["--help"]);
    assert_has(&out, &["--reference", "--pixel_format", "--no_prediction", "--cpu-level"]);
    // Every built-in model and every extractor, with its options.
    let mut listed: Vec<&str> = vmafx::Model::builtin_versions().to_vec();
    listed.extend(vmafx::internals::feature::REGISTRY.iter().map(|d| d.name));
    listed.extend(["vmaf_b_v0.6.3", "vmaf_float_b_v0.6.3", "vif.vif_enhn_gain_limit=1.0", "float_ms_ssim", "enable_lcs", "clip_db", "motion_force_zero", "float_adm", "vmaf_float_4k_v0.6.1"]);
    assert_has(&out, &listed);
}

// ---- errors --------------------------------------------------------------

#[test]
fn mismatched_inputs_are_refused() {
    let a = pair("mm_a", Chroma::Yuv420, 8, 32, 16, 3);
    let b = pair("mm_b", Chroma::Yuv420, 8, 32, 18, 3);
    let c = pair("mm_c", Chroma::Yuv420, 10, 32, 16, 3);
    let d = pair("mm_d", Chroma::Yuv444, 8, 32, 16, 3);
    let e = fails(&["-r", s(&a.reference), "-d", s(&b.distorted)], 1);
    assert_has(&e, &["mm_a_ref.y4m", "mm_b_dist.y4m", "sizes differ: 32x16 vs 32x18"]);
    let e = fails(&["-r", s(&a.reference), "-d", s(&c.distorted)], 1);
    assert_has(&e, &["mm_c_dist.y4m", "bit depths differ: 8 vs 10"]);
    let e = fails(&["-r", s(&a.reference), "-d", s(&d.distorted)], 1);
    assert_has(&e, &["mm_d_dist.y4m", "pixel formats differ: 420 vs 444"]);
    // Refused before scoring began: no log is left behind.
    let log = dir().join("mm_failed.json");
    let _ = std::fs::remove_file(&log);
    fails(&["-r", s(&a.reference), "-d", s(&b.distorted), "-o", s(&log)], 1);
    assert!(!log.exists(), "a run refused before scoring left {}", log.display());
}

/// The issue's case: the distorted file cut in the middle of frame 13
/// (numbered from 0, as the error says). The run fails, and its log holds
/// the 13 frames before the cut, marked incomplete, with exactly the values
/// of a run on those frames alone; against the full run only the last kept
/// frame's look-ahead values differ: motion2[12] = min(sad[12], sad[13])
/// becomes sad[12], and motion3 and the VMAF score follow it. This clip's
/// sad[13] < sad[12], so they do differ.
#[test]
fn a_cut_file_keeps_the_frames_scored_before_the_cut() {
    let (w, h, n, kept) = (64usize, 48usize, 16usize, 13usize);
    let p = pair("cut", Chroma::Yuv420, 8, w, h, n);
    let bytes = std::fs::read(&p.distorted).unwrap();
    let header = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let frame = "FRAME\n".len() + w * h * 3 / 2;
    let cut = dir().join("cut_dist_cut.y4m");
    std::fs::write(&cut, &bytes[..header + kept * frame + 6 + 1000]).unwrap();
    let first = dir().join("cut_dist_first.y4m");
    write_y4m(&first, &p.frames[..kept].iter().map(|f| &f.1).collect::<Vec<_>>());
    let first_ref = dir().join("cut_ref_first.y4m");
    write_y4m(&first_ref, &p.frames[..kept].iter().map(|f| &f.0).collect::<Vec<_>>());

    for threads in ["0", "2"] {
        let run = |dist: &Path, reference: &Path, log: &Path, fmt: &str| {
            let _ = std::fs::remove_file(log);
            vmafx(&["-r", s(reference), "-d", s(dist), "--threads", threads, "--feature", "psnr", fmt, "-o", s(log)])
        };
        let full_log = dir().join(format!("cut_full_t{threads}.json"));
        let o = run(&p.distorted, &p.reference, &full_log, "--json");
        assert!(o.status.success(), "{}", stderr(&o));
        let clean_log = dir().join(format!("cut_first_t{threads}.json"));
        let o = run(&first, &first_ref, &clean_log, "--json");
        assert!(o.status.success(), "{}", stderr(&o));
        let cut_log = dir().join(format!("cut_t{threads}.json"));
        let o = run(&cut, &p.reference, &cut_log, "--json");
        assert_eq!(o.status.code(), Some(1), "threads {threads}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "a failed run printed a score: {}", stdout(&o));
        assert_has(
            &stderr(&o),
            &["truncated frame 13", "the log holds the 13 frames scored before the error, marked incomplete"],
        );

        let (full, clean, cut_v) = (read_json(&full_log), read_json(&clean_log), read_json(&cut_log));
        assert_partial_log(&format!("threads {threads}"), &full, &clean, &cut_v, kept, "truncated frame 13");
    }

    // XML carries the mark as an attribute of <VMAF>; CSV has no place
    // for one: its rows are those of the run on the kept frames, byte for byte.
    let xml = dir().join("cut.xml");
    let _ = std::fs::remove_file(&xml);
    fails(&["-r", s(&p.reference), "-d", s(&cut), "--xml", "-o", s(&xml)], 1);
    let text = std::fs::read_to_string(&xml).unwrap();
    assert!(text.lines().next().unwrap().contains(" incomplete=\""), "{text:.200}");
    assert_eq!(text.matches("<frame ").count(), kept);
    let (csv_cut, csv_clean) = (dir().join("cut.csv"), dir().join("cut_first.csv"));
    let e = fails(&["-r", s(&p.reference), "-d", s(&cut), "-o", s(&csv_cut)], 1);
    assert_has(&e, &["csv and sub logs have no place for the mark"]);
    ok(&["-r", s(&first_ref), "-d", s(&first), "-o", s(&csv_clean)]);
    assert_eq!(std::fs::read_to_string(&csv_cut).unwrap(), std::fs::read_to_string(&csv_clean).unwrap());
}

#[test]
fn unequal_frame_counts_are_refused() {
    // Large enough for every VMAF feature (ADM needs 33x33).
    let long = pair("fc_long", Chroma::Yuv420, 8, 64, 48, 5);
    let short = dir().join("fc_short.y4m");
    write_y4m(&short, &long.frames[..3].iter().map(|f| &f.1).collect::<Vec<_>>());
    let e = fails(&["-r", s(&long.reference), "-d", s(&short), "-n", "--feature", "motion"], 1);
    assert_has(&e, &["fc_short.y4m ended after 3 frames", "fc_long_ref.y4m has a frame 3"]);
    let e = fails(&["-r", s(&short), "-d", s(&long.distorted), "-n", "--feature", "motion"], 1);
    assert_has(&e, &["fc_short.y4m ended after 3 frames", "fc_long_dist.y4m"]);
    // The frames scored before the error are kept, marked incomplete.
    let log = dir().join("fc_failed.json");
    let _ = std::fs::remove_file(&log);
    let e = fails(&["-r", s(&short), "-d", s(&long.distorted), "-n", "--feature", "motion", "-o", s(&log)], 1);
    assert_has(&e, &["fc_failed.json: the log holds the 3 frames scored before the error, marked incomplete"]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(v["frames"].as_array().unwrap().len(), 3);
    assert!(v["incomplete"].as_str().unwrap().contains("ended after 3 frames"), "{v}");
    // With the default model too.
    let e = fails(&["-r", s(&long.reference), "-d", s(&short)], 1);
    assert_has(&e, &["fc_short.y4m ended after 3 frames", "fc_long_ref.y4m has a frame 3"]);
}

#[test]
fn broken_files_are_named() {
    let p = pair("broken", Chroma::Yuv420, 8, 32, 16, 4);
    let mut bytes = std::fs::read(&p.distorted).unwrap();
    bytes.truncate(bytes.len() - 100);
    let truncated = dir().join("broken_truncated.y4m");
    std::fs::write(&truncated, &bytes).unwrap();
    let e = fails(&["-r", s(&p.reference), "-d", s(&truncated), "-n", "--feature", "motion"], 1);
    assert_has(&e, &["broken_truncated.y4m", "truncated frame 3"]);

    let missing = dir().join("no_such_file.y4m");
    let e = fails(&["-r", s(&p.reference), "-d", s(&missing)], 1);
    assert_has(&e, &["no_such_file.y4m"]);

    let raw = dir().join("broken_raw.yuv");
    std::fs::write(&raw, vec![0u8; 32 * 16 * 3 / 2 * 2]).unwrap();
    let e = fails(&["-r", s(&raw), "-d", s(&raw)], 1);
    assert_has(&e, &["broken_raw.yuv", "not a y4m file", "--width"]);

    let bad_cs = dir().join("broken_cs.y4m");
    std::fs::write(&bad_cs, b"YUV4MPEG2 W32 H16 F25:1 C411\nFRAME\n").unwrap();
    let e = fails(&["-r", s(&bad_cs), "-d", s(&p.distorted)], 1);
    assert_has(&e, &["broken_cs.y4m", "unsupported colorspace \"C411\""]);
}

#[test]
fn bad_options_are_refused() {
    let p = pair("opts", Chroma::Yuv420, 8, 32, 16, 2);
    let (r, d) = (s(&p.reference), s(&p.distorted));
    // Argument errors from the parser: exit code 2.
    assert_has(&fails(&["-r", r, "-d", d, "--bogus"], 2), &["--bogus"]);
    assert_has(&fails(&["-r", r, "-d", d, "--threads", "two"], 2), &["--threads"]);
    // Everything else: exit code 1, with what was wrong.
    assert_has(&fails(&["-d", d], 1), &["--reference"]);
    assert_has(&fails(&["-r", r], 1), &["--distorted"]);
    assert_has(
        &fails(&["-r", r, "-d", d, "-w", "32"], 1),
        &["--width, --height, --pixel_format and --bitdepth"],
    );
    assert_has(
        &fails(&["-r", r, "-d", d, "-w", "32", "-h", "16", "-p", "420", "-b", "9"], 1),
        &["--bitdepth 9"],
    );
    assert_has(&fails(&["-r", r, "-d", d, "-w", "32", "-h", "16", "-p", "nv12", "-b", "8"], 1), &["nv12"]);
    assert_has(&fails(&["-r", r, "-d", d, "--feature", "float_nope"], 1), &["float_nope", "float_ssim"]);
    // CAMBI refuses pictures under 216 pixels on both sides, as libvmaf.
    assert_has(&fails(&["-r", r, "-d", d, "-n", "--feature", "cambi"], 1), &["cambi", "216"]);
    assert_has(&fails(&["-r", r, "-d", d, "--feature", "cambi=eotf=pq:window_size=7"], 1), &["window_size"]);
    assert_has(&fails(&["-r", r, "-d", d, "--feature", "motion=nope=1"], 1), &["nope"]);
    assert_has(
        &fails(&["-r", r, "-d", d, "--feature", "motion=motion_force_zero"], 1),
        &["bad option string"],
    );
    assert_has(&fails(&["-r", r, "-d", d, "-m", "vmaf_v0.6.1"], 1), &["bad option string \"vmaf_v0.6.1\""]);
    assert_has(&fails(&["-r", r, "-d", d, "-m", "name=x"], 1), &["version=NAME", "path=FILE"]);
    assert_has(&fails(&["-r", r, "-d", d, "-m", "version=a:path=b"], 1), &["not both"]);
    assert_has(
        &fails(&["-r", r, "-d", d, "-m", "version=vmaf_v0.6.1", "-m", "version=vmaf_v0.6.1neg"], 1),
        &["uniquely named"],
    );
    assert_has(&fails(&["-r", r, "-d", d, "-m", "version=vmaf_nope"], 1), &["vmaf_nope"]);
    assert_has(&fails(&["-r", r, "-d", d, "-m", "path=/no/such/model.json"], 1), &["/no/such/model.json"]);
    // Feature overloads libvmaf's tool would silently ignore are named.
    assert_has(
        &fails(&["-r", r, "-d", d, "-m", "version=vmaf_v0.6.1:vfi.vif_enhn_gain_limit=1.0"], 1),
        &["vmaf_v0.6.1", "vfi.vif_enhn_gain_limit=1.0", "no such feature extractor"],
    );
    assert_has(
        &fails(&["-r", r, "-d", d, "-m", "version=vmaf_v0.6.1:adm.adm_enhn_gain=1.0"], 1),
        &["adm.adm_enhn_gain=1.0", "no option 'adm_enhn_gain'", "adm_enhn_gain_limit"],
    );
    assert_has(&fails(&["-r", r, "-d", d, "-m", "version=vmaf_v0.6.1:vif.a.b=1"], 1), &["vif.a.b", "no feature overload"]);
    assert_has(&fails(&["-r", r, "-d", d, "--cpu-level", "sse9"], 1), &["sse9"]);
    assert_has(&fails(&["-r", r, "-d", d, "--aom_ctc", "v1.0"], 1), &["--aom_ctc"]);
    assert_has(&fails(&["-r", r, "-d", d, "-n"], 1), &["nothing to compute"]);
    let out_dir = dir().join("no_such_dir").join("log.json");
    assert_has(
        &fails(&["-r", r, "-d", d, "-n", "--feature", "motion", "-o", s(&out_dir)], 1),
        &["no_such_dir"],
    );
}

#[test]
fn device_option() {
    use vmafx::internals::device::{self, DeviceKind};
    let p = pair("device", Chroma::Yuv420, 8, 33, 17, 3);
    let (r, d) = (s(&p.reference), s(&p.distorted));
    let log = |dev: &str| dir().join(format!("device_{dev}.json"));
    let logs: Vec<PathBuf> = ["default", "cpu", "cuda", "hip", "bad"].iter().map(|d| log(d)).collect();
    let on = |dev: &str, log: &Path| -> Vec<String> {
        let mut args = vec!["-r", r, "-d", d, "-n", "--feature", "motion", "--feature", "psnr", "--json"];
        args.extend(["-o", s(log)]);
        if dev != "default" {
            args.extend(["--device", dev]);
        }
        args.into_iter().map(String::from).collect()
    };
    let run_ok = |dev: &str, log: &Path| {
        let args = on(dev, log);
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        json_scores(&std::fs::read_to_string(log).unwrap())
    };
    let run_fails = |dev: &str| {
        let args = on(dev, &logs[4]);
        fails(&args.iter().map(String::as_str).collect::<Vec<_>>(), 1)
    };
    assert_has(&run_fails("gpu"), &["--device gpu", "cuda:N"]);
    assert_has(&run_fails("cuda:one"), &["--device cuda:one"]);
    assert_has(&run_fails("cpu:1"), &["--device cpu:1"]);
    let cpu = run_ok("default", &logs[0]);
    assert_eq!(run_ok("cpu", &logs[1]), cpu);
    // A GPU runtime that is missing is named; one that is there with no
    // device says so; a GPU scores as the CPU does.
    for (kind, name, log) in [(DeviceKind::Cuda, "cuda", &logs[2]), (DeviceKind::Hip, "hip", &logs[3])] {
        match device::count(kind) {
            // No driver (libcuda.so.1 named), or a runtime without a GPU
            // (HIP's hipInit error): the CLI says what the library said.
            Err(e) => {
                let e = e.to_string();
                assert_has(&run_fails(name), &[e.trim_start_matches("device: ")]);
            }
            Ok(0) => assert_has(&run_fails(name), &["device 0 requested, 0 present"]),
            Ok(_) => assert_eq!(run_ok(name, log), cpu, "--device {name}"),
        }
    }
}

#[test]
fn cpu_levels_score_alike() {
    let p = pair("cpu", Chroma::Yuv420, 8, 64, 40, 4);
    let want = ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--cpu-level", "scalar"]);
    for level in ["avx2", "avx512", "avx512vnni"] {
        assert_eq!(
            ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--cpu-level", level]),
            want,
            "{level}"
        );
    }
    assert_eq!(ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--cpumask", "0x8"]), want);
    assert_eq!(ok(&["-r", s(&p.reference), "-d", s(&p.distorted), "--cpumask", "0x20"]), want);
}

#[test]
fn odd_sized_16_bit_y4m_from_standard_input() {
    // 16-bit y4m, which libvmaf's tool cannot read, through stdin.
    let p = pair("stdin16", Chroma::Yuv420, 16, 41, 23, 3);
    let bytes = std::fs::read(&p.reference).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vmafx"))
        .args(["-r", "-", "-d", s(&p.distorted), "-n", "--feature", "motion", "--json", "-o"])
        .arg(dir().join("stdin16.json"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(p.frames[0].0.format(), PixelFormat::new(Chroma::Yuv420, 16).unwrap());
    let spec = reference::RefSpec { features: vec![("motion".into(), vec![])], ..Default::default() };
    let r = reference::run(&p.frames, &spec, &[]);
    let log = std::fs::read_to_string(dir().join("stdin16.json")).unwrap();
    assert_eq!(json_scores(&log).0, json_scores(&r.log_json).0);
}
