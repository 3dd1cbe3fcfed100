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
//! - vmafx reads HIP frames (`hwupload` to HIP; the fake's kernel
//!   emulator runs vmafx's kernels): per-frame metadata equal as text (so
//!   as bits, `%.17g`) to the same graph on software frames, for planar
//!   frames read in place, nv12 / p016 luma in place, p010 and nv12 chroma
//!   (PSNR) converted on the device, and a HIP input beside a software one;
//!   no host copy for HIP frames, every one scored on the device; formats
//!   that differ refused;
//! - the filter refuses HIP inputs on two devices or two streams, beside
//!   CUDA frames, or on an input not declared HIP (the Rust API, no ffmpeg);
//! - DRM_PRIME frames map to HIP frames (tests/ffmpeg_hip/drm_map_check.c,
//!   in the dma-buf VM: vgem dma-bufs under unsignalled write fences, the
//!   fake as ROCm 7 and as ROCm 5.2): the producer's bytes at the DRM
//!   pitches and offsets the moment the map returns, the mapping released
//!   with the mapped frame and not before, a tiled modifier and a plane
//!   outside its object refused by name; on 9.0 (a DRM hwcontext) a HIP
//!   device derived from vgem refused as not a PCI device, one derived
//!   from a PCI display (qemu's bochs-display, `--pci-display`) when the
//!   fake sits at its bus id, refused naming the bus id when not.
//!
//! A missing build makes each test say SKIPPED; with VMAFX_REQUIRE_FFMPEG=1
//! it fails instead.

use crate::support::rerun;
use crate::support::hip_fake;
use crate::support::vm_bed;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::ffmpeg::{find_tool, read_metadata, workdir};

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

/// Builds tests/ffmpeg_hip/`name`.c against the line's libavutil.
fn build_check(line: &Line, name: &str) -> PathBuf {
    let dir = workdir(&format!("hip-{name}-{}", line.name));
    let program = dir.join(name);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/ffmpeg_hip/{name}.c"));
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=c17", "-O1", "-Wall", "-Werror", "-pthread", "-o"]).arg(&program).arg(&source);
    cc.arg("-I").arg(&line.include).arg("-L").arg(&line.lib).arg("-lavutil");
    // The static libavutil's own dependencies (and dlopen for the checks).
    cc.args(["-lm", "-ldl"]);
    let built = cc.output().expect("running cc");
    assert!(built.status.success(), "{}: building {name}: {}", line.name, stderr(&built));
    program
}

/// A check program's report: it passed every check and finished.
fn assert_check_passed(line: &str, name: &str, out: &Output) {
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let failed: Vec<&str> = report.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(out.status.success() && failed.is_empty(), "{line}: {name} ({}):\n{}\n{report}\n{}", out.status, failed.join("\n"), stderr(out));
    assert!(report.contains("0 failures"), "{line}: {name} did not finish:\n{report}");
}

fn hwframes_check_passes(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let program = build_check(&line, "hwframes_check");
    let out = line.command(&program, &fake).output().expect("running hwframes_check");
    assert_check_passed(line.name, "hwframes_check", &out);
}

// ------------------------------------------- DRM_PRIME to HIP, in the VM

/// The guest's variables naming a line's drm_map_check and its
/// LD_LIBRARY_PATH (the fake's folder first).
fn drm_check_vars(line: &str) -> (String, String) {
    let tag = line.replace('.', "");
    (format!("VMAFX_HIP_DRM_CHECK_{tag}"), format!("VMAFX_HIP_DRM_LIBS_{tag}"))
}

/// Builds tests/ffmpeg_hip/drm_map_check.c for each line here and runs it
/// in the dma-buf VM (real vgem dma-bufs and unsignalled fences), where the
/// `vm_` tests below run it on the fake as ROCm 7 and as ROCm 5.2.
#[test]
fn drm_prime_frames_map_to_hip_in_the_dmabuf_vm() {
    if std::env::var_os(vm_bed::IN_VM).is_some() {
        return;
    }
    let Some(fake) = fake() else { return };
    let mut env = Vec::new();
    for name in ["7.1", "9.0"] {
        let Some(line) = Line::find(name) else { continue };
        let program = build_check(&line, "drm_map_check");
        let (check, libs) = drm_check_vars(name);
        env.push(format!("{check}={}", program.display()));
        env.push(format!("{libs}={}", line.library_path(&fake)));
    }
    if env.is_empty() {
        return;
    }
    // A PCI display beside vgem: a DRM device with a PCI bus id to derive from.
    vm_bed::run_in_vm_with(vm_bed::VmRun { filter: &rerun::filter(module_path!(), "vm_"), threads: 1, expected: 2, env }, &["--pci-display"]);
}

/// In the VM: the line's drm_map_check passes on the fake as each runtime.
fn drm_map_check_passes(line: &str) {
    if !vm_bed::in_vm(&["/dev/dri/card0"]) {
        return;
    }
    let (check, libs) = drm_check_vars(line);
    let (Ok(program), Ok(libs)) = (std::env::var(&check), std::env::var(&libs)) else {
        eprintln!("SKIPPED: {line} was not built on the host");
        return;
    };
    // The PCI display's card (bochs-display) and its bus id, from sysfs.
    let pci = std::fs::canonicalize("/sys/class/drm/card1/device").ok().filter(|d| d.to_string_lossy().contains("/pci"));
    let bus_id = pci.as_ref().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned());
    assert!(bus_id.is_some(), "inside the dmabuf VM but /dev/dri/card1 is no PCI device (--pci-display)");
    let bus_id = bus_id.unwrap();
    for version in [hip_fake::ROCM7, hip_fake::ROCM52] {
        let mut cmd = Command::new(&program);
        cmd.env("LD_LIBRARY_PATH", &libs)
            .env("VMAFX_FAKE_HIP_LAZY", "1")
            .env("VMAFX_FAKE_HIP_VERSION", version)
            .env("DRM_MAP_CHECK_PCI_CARD", "/dev/dri/card1")
            .env("DRM_MAP_CHECK_PCI_BUS_ID", &bus_id);
        // As ROCm 7 the fake sits at the display's bus id (derived); as
        // ROCm 5.2 at its own, 0000:03:00.0 (refused).
        if version == hip_fake::ROCM7 {
            cmd.env("VMAFX_FAKE_HIP_PCI_BUS_ID", &bus_id);
        }
        let out = cmd.output().expect("running drm_map_check");
        println!("--- {line}, the fake as HIP_VERSION {version}:\n{}", String::from_utf8_lossy(&out.stdout));
        assert_check_passed(line, &format!("drm_map_check (HIP_VERSION {version})"), &out);
        if line == "9.0" {
            // Its libavutil has the DRM hwcontext: derivation was checked.
            let report = String::from_utf8_lossy(&out.stdout);
            let derived = report.lines().filter(|l| l.starts_with("ok   derive:")).count();
            assert_eq!(derived, 3, "9.0: not every derivation check ran:\n{report}");
        }
    }
}

#[test]
fn vm_ffmpeg71_drm_prime_frames_map_to_hip() {
    drm_map_check_passes("7.1");
}
#[test]
fn vm_ffmpeg90_drm_prime_frames_map_to_hip() {
    drm_map_check_passes("9.0");
}

/// One vmafx run on the fake: its metadata (`metadata=print`) and stderr.
struct VmafxRun {
    ok: bool,
    metadata: String,
    log: String,
}

/// Runs `graph` (inputs 0 and 1 into vmafx, as [`input`] makes them) over
/// a blurred copy (main) of a noisy W2 x H2 clip (reference), with vmafx's own HIP loader
/// pointed at the fake, and prints the metadata.
fn run_vmafx(line: &Line, fake: &Path, dir: &Path, name: &str, graph: &str) -> VmafxRun {
    let meta = dir.join(format!("{name}.meta"));
    let _ = std::fs::remove_file(&meta);
    let src = format!("testsrc2=size=176x100:rate=25,scale={W2}:{H2},noise=alls=30:allf=t+u,trim=end_frame={FRAMES}");
    let graph = format!("{graph},metadata=mode=print:file={}", meta.display());
    let mut cmd = line.command(&line.ffmpeg, fake);
    for (k, v) in hip_fake::fake_env(fake, hip_fake::ROCM7) {
        if k != "LD_LIBRARY_PATH" {
            cmd.env(k, v);
        }
    }
    let out = cmd
        .args(["-nostdin", "-hide_banner", "-nostats", "-y", "-v", "verbose"])
        .args(["-init_hw_device", "hip=h:0", "-filter_hw_device", "h"])
        .args(["-f", "lavfi", "-i", &format!("{src},gblur=sigma=1.5"), "-f", "lavfi", "-i", &src])
        .args(["-lavfi", &graph, "-f", "null", "-"])
        .output()
        .expect("running ffmpeg");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(out.status.signal().is_none(), "{}: ffmpeg crashed on {graph}:\n{}", line.name, stderr(&out));
    }
    VmafxRun { ok: out.status.success(), metadata: std::fs::read_to_string(&meta).unwrap_or_default(), log: stderr(&out) }
}

/// An odd size: each HIP plane's pitch (rows rounded up to 256 bytes) is
/// then wider than its row.
const W2: usize = 67;
const H2: usize = 41;

/// vmafx's closing line: (pairs scored, host copies, GPU frames).
fn counters(run: &VmafxRun) -> (u64, u64, u64) {
    let line = run.log.lines().find(|l| l.contains(" frame pairs scored, ")).unwrap_or_else(|| panic!("no counters line:\n{}", run.log));
    let n: Vec<u64> = line.rsplit(']').next().unwrap().split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).map(|t| t.parse().unwrap()).collect();
    (n[0], n[1], n[2])
}

/// Each case: the format, which inputs are uploaded to HIP, and vmafx
/// with its options.
struct Case {
    format: &'static str,
    main_hip: bool,
    ref_hip: bool,
    options: &'static str,
}

fn cases() -> Vec<Case> {
    let c = |format, main_hip, ref_hip, options| Case { format, main_hip, ref_hip, options };
    vec![
        // Planar, read in place: VMAF's features.
        c("yuv420p", true, true, "vmafx"),
        c("yuv444p10le", true, true, "vmafx=model=version=vmaf_v0.6.1:feature=name=psnr"),
        // nv12 luma in place; p016 too.
        c("nv12", true, true, "vmafx"),
        c("p016le", true, true, "vmafx"),
        // Through the importer on the device: p010's shift, nv12 chroma.
        c("p010le", true, true, "vmafx"),
        c("nv12", true, true, "vmafx=feature=name=psnr"),
        // HIP beside software, each way round.
        c("yuv420p10le", true, false, "vmafx=feature=name=psnr"),
        c("p010le", false, true, "vmafx=feature=name=psnr"),
    ]
}

fn input(label: &str, index: usize, format: &str, hip: bool) -> String {
    format!("[{index}:v]format={format}{}[{label}]", if hip { ",hwupload" } else { "" })
}

/// HIP frames scored by vmafx equal the software frames scored by vmafx,
/// every metadata value as text (`%.17g`: the same double).
fn hip_frames_score_as_software(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let dir = workdir(&format!("hip-vmafx-{}", line.name));
    for (i, case) in cases().iter().enumerate() {
        let fmt = case.format;
        let software = format!("{};{};[d][r]{}", input("d", 0, fmt, false), input("r", 1, fmt, false), case.options);
        let on_hip = format!("{};{};[d][r]{}", input("d", 0, fmt, case.main_hip), input("r", 1, fmt, case.ref_hip), case.options);
        let cpu = run_vmafx(&line, &fake, &dir, &format!("{i}-cpu"), &software);
        assert!(cpu.ok, "{}: {software} failed:\n{}", line.name, cpu.log);
        let gpu = run_vmafx(&line, &fake, &dir, &format!("{i}-hip"), &on_hip);
        assert!(gpu.ok, "{}: {on_hip} failed:\n{}", line.name, gpu.log);
        assert!(gpu.log.contains("HIP frames read on their HIP device"), "{}: {on_hip}: not read as HIP frames:\n{}", line.name, gpu.log);

        let (frames, _, cpu_values) = read_metadata(&dir.join(format!("{i}-cpu.meta")), "lavfi.vmafx.");
        let (hip_frames, _, hip_values) = read_metadata(&dir.join(format!("{i}-hip.meta")), "lavfi.vmafx.");
        assert_eq!((frames, hip_frames), (FRAMES as u32, FRAMES as u32), "{}: {on_hip}: frames out", line.name);
        let keys = cpu_values.get(&0).map_or(0, |k| k.len());
        assert!(keys >= 1, "{}: {software}: no vmafx metadata:\n{}", line.name, cpu.metadata);
        if case.options.contains("psnr") {
            assert!(cpu_values[&0].contains_key("psnr_cb"), "{}: {software}: no chroma PSNR", line.name);
        }
        assert_eq!(hip_values, cpu_values, "{}: {on_hip}: HIP frames scored differently from software frames", line.name);

        let (pairs, copies, device) = counters(&gpu);
        let hip_inputs = case.main_hip as u64 + case.ref_hip as u64;
        assert_eq!(pairs, FRAMES as u64, "{}: {on_hip}", line.name);
        assert_eq!(device, hip_inputs * FRAMES as u64, "{}: {on_hip}: HIP frames not all on the device", line.name);
        // Only a software p010 input beside a HIP one is copied on the host
        // (its shift, as on the CPU path).
        let software_p010 = fmt == "p010le" && hip_inputs == 1;
        assert_eq!(copies, if software_p010 { FRAMES as u64 } else { 0 }, "{}: {on_hip}: host copies\n{}", line.name, gpu.log);
    }
}

/// Inputs vmafx cannot pair are refused by name, nothing scored.
fn hip_format_mismatch_refused(line: &'static str) {
    let (Some(line), Some(fake)) = (Line::find(line), fake()) else { return };
    let dir = workdir(&format!("hip-vmafx-refused-{}", line.name));
    let graph = format!("{};{};[d][r]vmafx", input("d", 0, "nv12", true), input("r", 1, "yuv420p", true));
    let run = run_vmafx(&line, &fake, &dir, "mismatch", &graph);
    assert!(!run.ok, "{}: {graph} was accepted:\n{}", line.name, run.log);
    assert!(run.log.contains("input pixel formats differ: main is nv12, reference is yuv420p"), "{}: {graph}:\n{}", line.name, run.log);
    assert!(!run.log.contains("VMAF score"), "{}: frames were scored:\n{}", line.name, run.log);
}

#[test]
fn ffmpeg71_vmafx_scores_hip_frames_as_software_frames() {
    hip_frames_score_as_software("7.1");
}
#[test]
fn ffmpeg90_vmafx_scores_hip_frames_as_software_frames() {
    hip_frames_score_as_software("9.0");
}
#[test]
fn ffmpeg71_vmafx_refuses_hip_inputs_of_different_formats() {
    hip_format_mismatch_refused("7.1");
}
#[test]
fn ffmpeg90_vmafx_refuses_hip_inputs_of_different_formats() {
    hip_format_mismatch_refused("9.0");
}

/// The filter's checks on HIP inputs, before any runtime is needed: two
/// devices, two streams, HIP beside CUDA, a bad input index, a HIP frame on
/// an input not declared HIP.
#[test]
fn filter_refuses_hip_inputs_it_cannot_pair() {
    use vmafx::internals::avfilter::Filter;
    use vmafx::internals::avfilter::cuda::CudaInput;
    use vmafx::internals::avfilter::hip::HipInput;
    use vmafx::internals::avfilter::options::RawOptions;
    let raw = RawOptions { model: None, feature: Some("name=psnr"), n_subsample: 1, ..Default::default() };
    let configure = |f: &mut Filter| f.configure((64, 48, "nv12"), (64, 48, "nv12")).unwrap_err().to_string();

    let mut f = Filter::new(&raw).unwrap();
    f.set_hip_device(0, HipInput { device: 0, stream: 0 }).unwrap();
    f.set_hip_device(1, HipInput { device: 1, stream: 0 }).unwrap();
    let err = configure(&mut f);
    assert!(err.contains("the main and reference HIP frames are on different HIP devices (0, 1)"), "{err}");

    let mut f = Filter::new(&raw).unwrap();
    f.set_hip_device(0, HipInput { device: 0, stream: 0x51 }).unwrap();
    f.set_hip_device(1, HipInput { device: 0, stream: 0x52 }).unwrap();
    let err = configure(&mut f);
    assert!(err.contains("different streams of HIP device 0 (0x51, 0x52)"), "{err}");

    let mut f = Filter::new(&raw).unwrap();
    f.set_hip_device(0, HipInput { device: 0, stream: 0 }).unwrap();
    f.set_cuda_device(1, CudaInput { context: 0xc1, stream: 0 }).unwrap();
    let err = configure(&mut f);
    assert!(err.contains("the main input is HIP frames and the reference input CUDA frames"), "{err}");

    let mut f = Filter::new(&raw).unwrap();
    assert!(f.set_hip_device(2, HipInput { device: 0, stream: 0 }).is_err());
    assert_eq!(f.scoring_on(), vmafx::DeviceChoice::Cpu);
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
