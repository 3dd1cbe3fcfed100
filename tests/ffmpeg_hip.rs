//! FFmpeg's HIP hwcontext (the first patch of the 7.1 and 9.0 series,
//! `lavu: add HIP hwcontext`: AV_HWDEVICE_TYPE_HIP, AV_PIX_FMT_HIP) on a
//! machine without a GPU: the FFmpeg builds of scripts/ffmpeg-build run on
//! the fake `libamdhip64` of tests/hip_fake (host memory as device memory),
//! found through LD_LIBRARY_PATH as FFmpeg dlopens the real one. Its
//! copies run only when a stream is synchronised (VMAFX_FAKE_HIP_LAZY=1),
//! so a transfer that returns before synchronising leaves its bytes behind.
//!
//! On each line (7.1: build/ffmpeg-7.1, 9.0: build/ffmpeg-9.0):
//! - `ffmpeg -init_hw_device list` names `hip`;
//! - `-init_hw_device hip=h:0 -filter_hw_device h -vf hwupload,hwdownload`
//!   gives back every frame byte for byte, for planar 8 to 16 bits, gray,
//!   nv12, p010 and p016 at an odd size; a device by PCI bus id works;
//! - refusals, named: a device index that does not exist, an unknown PCI
//!   bus id, no HIP runtime at all;
//! - FFmpeg's own `libavutil/tests/hwdevice` passes for `hip`;
//! - tests/ffmpeg_hip/hwframes_check.c, through libavutil's API: where
//!   each plane of a pool frame lies (pitches multiples of 256, inside one
//!   allocation), each uploaded row at its pitch in device memory the
//!   moment the upload returns, the download equal, an unsupported
//!   sw_format and a transfer from another format refused;
//! - vmafx, which does not read HIP frames yet, refuses them at negotiation.
//!
//! A missing build makes each test say SKIPPED; with VMAFX_REQUIRE_FFMPEG=1
//! it fails instead.

mod ffmpeg_support;
#[path = "common/hip_fake.rs"]
mod hip_fake;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ffmpeg_support::{find_tool, workdir};

/// One FFmpeg line's HIP-enabled build.
struct Line {
    name: &'static str,
    ffmpeg: PathBuf,
    /// FFmpeg's libavutil/tests/hwdevice of that build.
    hwdevice: PathBuf,
    /// Where its headers and libavutil are, and the libraries the
    /// programs load (the shared 9.0 build), if any.
    include: PathBuf,
    lib: PathBuf,
    shared: bool,
}

impl Line {
    fn find(name: &'static str) -> Option<Line> {
        match name {
            "7.1" => {
                let ffmpeg = find_tool("VMAFX_FFMPEG_HIP71", "ffmpeg-7.1/obj/ffmpeg")?;
                let dev = find_tool("VMAFX_FFMPEG_HIP71_DEV", "ffmpeg-7.1/dev")?;
                Some(Line {
                    name,
                    hwdevice: find_tool("VMAFX_FFMPEG_HIP71_HWDEVICE", "ffmpeg-7.1/tests/hwdevice")?,
                    include: dev.join("include"),
                    lib: dev.join("lib"),
                    ffmpeg,
                    shared: false,
                })
            }
            _ => {
                let install = find_tool("VMAFX_FFMPEG9_DIR", "ffmpeg-9.0/install")?;
                let root = install.parent()?.to_path_buf();
                let ffmpeg = install.join("bin/ffmpeg");
                let hwdevice = root.join("tests/hwdevice");
                for p in [&ffmpeg, &hwdevice] {
                    if !p.exists() {
                        let msg = format!("{} not found: build FFmpeg 9.0 with scripts/ffmpeg-build 9.0", p.display());
                        assert!(std::env::var("VMAFX_REQUIRE_FFMPEG").as_deref() != Ok("1"), "VMAFX_REQUIRE_FFMPEG=1 but {msg}");
                        eprintln!("SKIPPED: {msg}");
                        return None;
                    }
                }
                Some(Line { name, ffmpeg, hwdevice, include: install.join("include"), lib: install.join("lib"), shared: true })
            }
        }
    }

    /// LD_LIBRARY_PATH for a program of this line on the fake (`fake`:
    /// the fake's folder, or one without any HIP runtime).
    fn library_path(&self, fake: &Path) -> String {
        if self.shared {
            format!("{}:{}", fake.display(), self.lib.display())
        } else {
            fake.display().to_string()
        }
    }

    fn command(&self, program: &Path, fake: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("LD_LIBRARY_PATH", self.library_path(fake)).env("VMAFX_FAKE_HIP_LAZY", "1");
        cmd
    }

    fn ffmpeg(&self, fake: &Path, args: &[&str]) -> Output {
        self.command(&self.ffmpeg, fake)
            .args(["-nostdin", "-hide_banner", "-nostats", "-y"])
            .args(args)
            .output()
            .expect("running ffmpeg")
    }
}

fn fake() -> Option<PathBuf> {
    hip_fake::fake_dir()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A folder with no HIP runtime in it.
fn no_runtime(line: &Line) -> PathBuf {
    workdir(&format!("hip-no-runtime-{}", line.name))
}

const W: usize = 175;
const H: usize = 99;
const FRAMES: usize = 3;

/// Every sw_format the round trip covers, with its frame size in bytes at W x H.
fn formats() -> Vec<(&'static str, usize)> {
    let (cw, ch) = (W.div_ceil(2), H.div_ceil(2));
    vec![
        ("yuv420p", W * H + 2 * cw * ch),
        ("yuv422p", W * H + 2 * cw * H),
        ("yuv444p", 3 * W * H),
        ("yuv420p10le", 2 * (W * H + 2 * cw * ch)),
        ("yuv422p12le", 2 * (W * H + 2 * cw * H)),
        ("yuv444p16le", 2 * 3 * W * H),
        ("gray", W * H),
        ("nv12", W * H + 2 * cw * ch),
        ("p010le", 2 * (W * H + 2 * cw * ch)),
        ("p016le", 2 * (W * H + 2 * cw * ch)),
    ]
}

fn device_list_names_hip(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let out = line.ffmpeg(&fake, &["-init_hw_device", "list"]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}: ffmpeg -init_hw_device list failed: {}", line.name, stderr(&out));
    assert!(listed.lines().any(|l| l.trim() == "hip"), "{}: no hip in the device list:\n{listed}", line.name);
}

/// hwupload then hwdownload on HIP device `device` gives back `src` byte
/// for byte, frame by frame.
fn round_trip(line: &Line, fake: &Path, dir: &Path, fmt: &str, frame_bytes: usize, device: &str) {
    let size = format!("{W}x{H}");
    let src = dir.join(format!("{fmt}.src"));
    let out_path = dir.join(format!("{fmt}.out"));
    // Noise, so that a row or a plane in the wrong place changes bytes;
    // testsrc2 makes even sizes only, scale gives the odd one.
    let made = line.ffmpeg(fake, &[
        "-f", "lavfi", "-i", &format!("testsrc2=size=176x100:rate=25,scale={W}:{H},noise=alls=40:allf=t+u,format={fmt}"),
        "-frames:v", &FRAMES.to_string(), "-f", "rawvideo", src.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}: making the {fmt} source: {}", line.name, stderr(&made));
    let source = std::fs::read(&src).unwrap();
    assert_eq!(source.len(), FRAMES * frame_bytes, "{}: {fmt} source size", line.name);

    let out = line.ffmpeg(fake, &[
        "-v", "verbose",
        "-init_hw_device", &format!("hip=h:{device}"), "-filter_hw_device", "h",
        "-f", "rawvideo", "-pix_fmt", fmt, "-s", &size, "-i", src.to_str().unwrap(),
        "-vf", &format!("hwupload,hwdownload,format={fmt}"),
        "-f", "rawvideo", out_path.to_str().unwrap(),
    ]);
    let log = stderr(&out);
    assert!(out.status.success(), "{}: {fmt} round trip failed:\n{log}", line.name);
    assert!(log.contains("HIP device 0: vmafx fake HIP device"), "{}: {fmt}: the HIP device was not opened:\n{log}", line.name);
    let back = std::fs::read(&out_path).unwrap();
    assert_eq!(back.len(), source.len(), "{}: {fmt}: {} bytes back for {}", line.name, back.len(), source.len());
    if let Some(at) = back.iter().zip(&source).position(|(a, b)| a != b) {
        panic!(
            "{}: {fmt} through HIP differs from the source at byte {at} (frame {}, offset {} in the frame)",
            line.name, at / frame_bytes, at % frame_bytes
        );
    }
}

fn round_trips_byte_identical(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let dir = workdir(&format!("hip-round-trip-{}", line.name));
    for (fmt, bytes) in formats() {
        round_trip(&line, &fake, &dir, fmt, bytes, "0");
    }
    // The fake's one device, by its PCI bus id.
    round_trip(&line, &fake, &dir, "nv12", formats()[7].1, "0000:03:00.0");
}

fn refusals_are_named(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    // Without the fake, the machine's own runtime may be found (Debian's
    // ROCm 5.2 libamdhip64.so.5 serves the kernel compile tests): with no
    // GPU it fails at init or finds no device; with no runtime, loading fails.
    let no_gpu: &[&str] = &["Could not load the HIP runtime", "hipInit failed", "hipGetDeviceCount failed", "HIP device 0 does not exist (0 devices)"];
    let cases: [(&str, &Path, &[&str]); 3] = [
        ("hip=h:5", &fake, &["HIP device 5 does not exist (1 devices)"]),
        ("hip=h:0000:99:00.0", &fake, &["No HIP device at PCI bus id 0000:99:00.0"]),
        ("hip=h:0", &no_runtime(&line), no_gpu),
    ];
    for (spec, libs, words) in cases {
        let out = line.ffmpeg(libs, &[
            "-init_hw_device", spec, "-filter_hw_device", "h",
            "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "1",
            "-vf", "hwupload,hwdownload,format=yuv420p", "-f", "null", "-",
        ]);
        let log = stderr(&out);
        assert!(!out.status.success(), "{}: {spec} was accepted:\n{log}", line.name);
        assert!(words.iter().any(|w| log.contains(w)), "{}: {spec}: none of {words:?} in:\n{log}", line.name);
    }
}

fn hwdevice_test_passes(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let out = line.command(&line.hwdevice, &fake).output().expect("running libavutil/tests/hwdevice");
    let log = stderr(&out);
    assert!(out.status.success(), "{}: libavutil/tests/hwdevice failed:\n{log}", line.name);
    for words in ["Test passed for hip with default options.", "Test passed for hip with device 0.", " 0 failed"] {
        assert!(log.contains(words), "{}: hwdevice: no \"{words}\" in:\n{log}", line.name);
    }
}

fn hwframes_check_passes(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let dir = workdir(&format!("hip-hwframes-check-{}", line.name));
    let program = dir.join("hwframes_check");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ffmpeg_hip/hwframes_check.c");
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=c17", "-O1", "-Wall", "-Werror", "-o"]).arg(&program).arg(&source);
    cc.arg("-I").arg(&line.include).arg("-L").arg(&line.lib).arg("-lavutil");
    if !line.shared {
        // The static libavutil's own dependencies.
        cc.args(["-lm", "-ldl", "-pthread"]);
    }
    let built = cc.output().expect("running cc");
    assert!(built.status.success(), "{}: building hwframes_check: {}", line.name, stderr(&built));
    let out = line.command(&program, &fake).output().expect("running hwframes_check");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let failed: Vec<&str> = report.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(out.status.success() && failed.is_empty(), "{}: hwframes_check:\n{}\n{}", line.name, failed.join("\n"), stderr(&out));
    assert!(report.contains("0 failures"), "{}: hwframes_check did not finish:\n{report}", line.name);
}

/// vmafx does not read HIP frames yet (docs/ffmpeg.md, "HIP frames"): its
/// inputs do not offer `hip`, so a graph that feeds it HIP frames fails to
/// negotiate and nothing is scored, rather than device pointers being read
/// as host memory.
fn vmafx_refuses_hip_frames(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let out = line.ffmpeg(&fake, &[
        "-init_hw_device", "hip=h:0", "-filter_hw_device", "h",
        "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25",
        "-frames:v", "2", "-lavfi", "[0:v]hwupload[d];[d][1:v]vmafx", "-f", "null", "-",
    ]);
    let log = stderr(&out);
    assert!(!out.status.success(), "{}: vmafx took HIP frames:\n{log}", line.name);
    assert!(log.contains("Impossible to convert between the formats"), "{}: not refused at negotiation:\n{log}", line.name);
    assert!(!log.contains("VMAF score"), "{}: frames were scored:\n{log}", line.name);
}

#[test]
fn ffmpeg71_vmafx_refuses_hip_frames_until_it_reads_them() {
    vmafx_refuses_hip_frames("7.1");
}
#[test]
fn ffmpeg90_vmafx_refuses_hip_frames_until_it_reads_them() {
    vmafx_refuses_hip_frames("9.0");
}
#[test]
fn ffmpeg71_init_hw_device_list_names_hip() {
    device_list_names_hip("7.1");
}
#[test]
fn ffmpeg90_init_hw_device_list_names_hip() {
    device_list_names_hip("9.0");
}
#[test]
fn ffmpeg71_hwupload_hwdownload_round_trip_is_byte_identical() {
    round_trips_byte_identical("7.1");
}
#[test]
fn ffmpeg90_hwupload_hwdownload_round_trip_is_byte_identical() {
    round_trips_byte_identical("9.0");
}
#[test]
fn ffmpeg71_hip_device_refusals_are_named() {
    refusals_are_named("7.1");
}
#[test]
fn ffmpeg90_hip_device_refusals_are_named() {
    refusals_are_named("9.0");
}
#[test]
fn ffmpeg71_libavutil_hwdevice_test_passes_for_hip() {
    hwdevice_test_passes("7.1");
}
#[test]
fn ffmpeg90_libavutil_hwdevice_test_passes_for_hip() {
    hwdevice_test_passes("9.0");
}
#[test]
fn ffmpeg71_hip_frames_layout_transfers_and_refusals() {
    hwframes_check_passes("7.1");
}
#[test]
fn ffmpeg90_hip_frames_layout_transfers_and_refusals() {
    hwframes_check_passes("9.0");
}
