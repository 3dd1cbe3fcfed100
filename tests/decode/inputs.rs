//! Encoded inputs through FFmpeg's libraries (feature `decode`,
//! src/io/decode.rs), against the same files decoded to y4m by the ffmpeg
//! command first: the frames read equal the y4m frames sample for sample,
//! every per-frame value and pooled score equals the y4m run's as f64
//! bits, the CLI scores an .mkv/.mp4 pair directly with the same log, and
//! mismatched or unreadable inputs are refused with the file named.
//!
//! The clips (an ffv1 .mkv source, its x264 .mp4 and x265 .mkv encodes, 8
//! and 10 bits) are made by the machine's ffmpeg (scripts/setup installs
//! it) under the target's tmp dir.

use crate::support::contexts;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use vmafx::{Context, ContextConfig, Model, ModelConfig, Picture};
use vmafx::io::{self, DecodeReader, FrameReader, Y4mReader};
use crate::support::ffmpeg::system_ffmpeg;

const FRAMES: usize = 10;
const SIZE: &str = "320x180";

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Every file of the test, made once per test binary run.
struct Clips {
    dir: PathBuf,
}

impl Clips {
    fn get() -> &'static Clips {
        static CLIPS: OnceLock<Clips> = OnceLock::new();
        CLIPS.get_or_init(|| {
            let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("decode");
            std::fs::create_dir_all(&dir).unwrap();
            let c = Clips { dir };
            let frames = FRAMES.to_string();
            let src = format!("testsrc2=s={SIZE}:r=25,noise=alls=8:allf=t:all_seed=5");
            for (bits, fmt) in [(8, "yuv420p"), (10, "yuv420p10le")] {
                let source = c.path(&format!("source{bits}.mkv"));
                let graph = format!("{src},format={fmt}");
                system_ffmpeg(&["-f", "lavfi", "-i", &graph, "-frames:v", &frames, "-c:v", "ffv1", p(&source)]);
                let (codec, out) = if bits == 8 { ("libx264", "x264.mp4") } else { ("libx265", "x265.mkv") };
                let mut args = vec!["-i", p(&source), "-c:v", codec, "-crf", "34", "-preset", "veryfast"];
                if codec == "libx265" {
                    args.extend(["-x265-params", "log-level=error"]);
                }
                let enc = c.path(out);
                args.extend(["-pix_fmt", fmt, p(&enc)]);
                system_ffmpeg(&args);
            }
            // For the refusals: a smaller encode, a shorter one, a format
            // vmafx does not read, a file that is not video.
            let source8 = c.path("source8.mkv");
            system_ffmpeg(&["-i", p(&source8), "-vf", "scale=160:90", "-c:v", "libx264", p(&c.path("small.mp4"))]);
            system_ffmpeg(&["-i", p(&source8), "-frames:v", "7", "-c:v", "libx264", p(&c.path("short.mp4"))]);
            system_ffmpeg(&["-i", p(&source8), "-pix_fmt", "bgr0", "-c:v", "ffv1", p(&c.path("rgb.mkv"))]);
            std::fs::write(c.path("notes.mp4"), "not a video\n").unwrap();
            for name in ["source8.mkv", "x264.mp4", "source10.mkv", "x265.mkv"] {
                c.to_y4m(name);
            }
            c
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `name` decoded by the ffmpeg command to `name.y4m`, every frame
    /// as decoded (passthrough: none dropped or duplicated).
    fn to_y4m(&self, name: &str) -> PathBuf {
        let out = self.path(&format!("{name}.y4m"));
        system_ffmpeg(&["-i", p(&self.path(name)), "-fps_mode", "passthrough", "-strict", "-1", "-f", "yuv4mpegpipe", p(&out)]);
        out
    }

    fn y4m(&self, name: &str) -> PathBuf {
        self.path(&format!("{name}.y4m"))
    }
}

fn assert_same_picture(a: &Picture<'_>, b: &Picture<'_>, what: &str) {
    assert_eq!((a.format(), a.width(), a.height()), (b.format(), b.width(), b.height()), "{what}: geometry");
    for i in 0..a.plane_count() {
        let (pa, pb) = (a.plane(i), b.plane(i));
        let row = pa.width() * pa.bytes_per_sample();
        for y in 0..pa.height() {
            assert_eq!(
                &pa.data()[y * pa.stride()..][..row],
                &pb.data()[y * pb.stride()..][..row],
                "{what}: plane {i} row {y}"
            );
        }
    }
}

#[test]
fn decoded_frames_equal_the_y4m_the_ffmpeg_command_writes() {
    let c = Clips::get();
    for (name, bits) in [("source8.mkv", 8), ("x264.mp4", 8), ("source10.mkv", 10), ("x265.mkv", 10)] {
        let mut decoded = DecodeReader::open(&c.path(name)).unwrap_or_else(|e| panic!("{e}"));
        let mut y4m = Y4mReader::open(&c.y4m(name)).unwrap();
        assert_eq!(decoded.format(), y4m.format(), "{name}: format from the stream");
        assert_eq!(decoded.format().bits, bits, "{name}: bit depth from the stream");
        assert_eq!((decoded.width(), decoded.height()), (320, 180), "{name}: size");
        let mut n = 0;
        loop {
            let (a, b) = (decoded.read_source().unwrap(), y4m.read_frame().unwrap());
            match (a, b) {
                (None, None) => break,
                (Some(a), Some(b)) => {
                    assert_same_picture(&a.host().unwrap(), &b.view(), &format!("{name} frame {n}"));
                }
                (a, b) => panic!("{name}: frame {n}: decoded {} vs y4m {}", a.is_some(), b.is_some()),
            }
            n += 1;
        }
        assert_eq!(n, FRAMES, "{name}: frames");
        assert_eq!(decoded.frames_read() as usize, FRAMES, "{name}: frames_read");
    }
}

/// VMAF v0.6.1 (VIF, ADM, motion) and PSNR (with MSE and APSNR) over two
/// readers, on two worker threads (decoded frames stay referenced
/// while workers read them in place).
fn score(reference: &mut dyn FrameReader, distorted: &mut dyn FrameReader) -> Context {
    let mut ctx = Context::new(ContextConfig { threads: 2, ..ContextConfig::default() }).unwrap();
    ctx.use_model(Model::builtin("vmaf_v0.6.1", &ModelConfig::default()).unwrap()).unwrap();
    contexts::add_features(&mut ctx, false).unwrap();
    loop {
        match (reference.read_source().unwrap(), distorted.read_source().unwrap()) {
            (Some(r), Some(d)) => ctx.push(r, d).unwrap(),
            (None, None) => break,
            _ => panic!("frame counts differ"),
        }
    }
    ctx.flush().unwrap();
    ctx
}

#[test]
fn scores_of_decoded_inputs_equal_scores_of_their_y4m_as_bits() {
    let c = Clips::get();
    for (source, encode) in [("source8.mkv", "x264.mp4"), ("source10.mkv", "x265.mkv")] {
        let open = |path: &Path| io::open(path, None).unwrap_or_else(|e| panic!("{e}"));
        let decoded = score(open(&c.path(source)).as_mut(), open(&c.path(encode)).as_mut());
        let y4m = score(open(&c.y4m(source)).as_mut(), open(&c.y4m(encode)).as_mut());
        assert_eq!(decoded.frames_final() as usize, FRAMES);
        let compared = contexts::assert_same(&y4m, &decoded, &format!("{source} vs {encode}"));
        assert!(compared > 10 * FRAMES, "{source} vs {encode}: only {compared} values compared");
        let vmaf = decoded.score_at("vmaf", 0).expect("a VMAF score");
        assert!(vmaf > 5.0 && vmaf < 100.0, "{encode}: VMAF {vmaf} is not a real score");
    }
}

fn vmafx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vmafx")).args(args).output().expect("running vmafx")
}

/// The log without its "fps" field (the run's speed).
fn log_without_fps(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !l.trim_start().starts_with("\"fps\"")).collect::<Vec<_>>().join("\n")
}

#[test]
fn cli_scores_an_mkv_mp4_pair_directly_with_the_y4m_log() {
    let c = Clips::get();
    for (source, encode) in [("source8.mkv", "x264.mp4"), ("source10.mkv", "x265.mkv")] {
        let run = |r: &Path, d: &Path, log: &str| {
            let log = c.path(log);
            let out = vmafx(&["-r", p(r), "-d", p(d), "--feature", "psnr", "--threads", "2", "--json", "-o", p(&log)]);
            assert!(out.status.success(), "vmafx failed: {}", String::from_utf8_lossy(&out.stderr));
            (String::from_utf8(out.stdout).unwrap(), log_without_fps(&log))
        };
        let (line, direct) = run(&c.path(source), &c.path(encode), "direct.json");
        let (y4m_line, via_y4m) = run(&c.y4m(source), &c.y4m(encode), "via_y4m.json");
        assert!(line.starts_with("vmaf_v0.6.1: "), "{encode}: score line {line:?}");
        assert_eq!(line, y4m_line, "{encode}: score line");
        assert!(direct.contains("\"frameNum\": 9"), "{encode}: 10 frames in the log");
        assert_eq!(direct, via_y4m, "{encode}: log");
    }
}

fn refusal(reference: &str, distorted: &str) -> String {
    let c = Clips::get();
    let out = vmafx(&["-r", p(&c.path(reference)), "-d", p(&c.path(distorted))]);
    assert!(!out.status.success(), "{reference} vs {distorted} was accepted");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn mismatched_and_unreadable_inputs_are_refused_by_name() {
    let err = refusal("source8.mkv", "small.mp4");
    assert!(err.contains("sizes differ: 320x180 vs 160x90") && err.contains("small.mp4"), "{err}");
    let err = refusal("source8.mkv", "short.mp4");
    assert!(err.contains("short.mp4 ended after 7 frames") && err.contains("frame counts differ"), "{err}");
    let err = refusal("source8.mkv", "source10.mkv");
    assert!(err.contains("bit depths differ: 8 vs 10"), "{err}");
    let err = refusal("source8.mkv", "rgb.mkv");
    assert!(err.contains("rgb.mkv") && err.contains("pixel format 'bgr0'"), "{err}");
    let err = refusal("source8.mkv", "notes.mp4");
    assert!(err.contains("notes.mp4") && err.contains("FFmpeg cannot open it"), "{err}");
    let err = refusal("source8.mkv", "missing.mkv");
    assert!(err.contains("missing.mkv"), "{err}");
}
