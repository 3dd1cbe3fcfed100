//! FFmpeg's own libvmaf_cuda filter on the NVDEC frames and clips of
//! `gpu-ffmpeg`: the side-by-side with vmafx on CUDA frames.
//!
//! `cargo xtask gpu-ffmpeg-libvmaf pack` (here): build/xtask/gpu-ffmpeg-libvmaf/
//! holds FFmpeg 7.1's pristine source (Debian's orig tarball, as
//! scripts/ffmpeg-build uses, repacked as .tar.gz without tests/ref), the
//! libvmaf 3.2.0 source and the patched nv-codec-headers as bench-gpu packs
//! them, and the bin2c stand-in.
//!
//! `build/xtask/bin/xtask gpu-ffmpeg-libvmaf run` (there; gpu-ffmpeg packed
//! too): builds libvmaf with CUDA (static, device code for this GPU only, no
//! asm, no built-in models) and a minimal FFmpeg 7.1 with NVDEC, scale_cuda
//! and libvmaf_cuda, then times per clip pair NVDEC decode alone, NVDEC ->
//! scale_cuda -> libvmaf_cuda and NVDEC -> vmafx, each a whole process,
//! best of N. Every step is time-boxed: a failure leaves a table that says
//! what failed and why. The pooled VMAF of each log is shown; libvmaf's CUDA
//! VMAF differs from its CPU (and so from vmafx) by design: its CUDA motion
//! is the pre-3.2.0 integer_motion (docs/benchmarks.md, GPU section).

use crate::bench_gpu::{self, run_ok, which};
use crate::ffmpeg_logs::{first_error_libvmaf, pooled_vmaf};
use crate::gpu_ffmpeg::{self as g, run_logged, Ran};
use crate::host::HostEnv;
use crate::pack::{self, Manifest};
use crate::table::{Align, Table};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const PART: &str = "gpu-ffmpeg-libvmaf";
/// The builds and runs on the GPU host (a second run reuses the builds);
/// outside build/xtask, whose every byte a carry takes (~200 MB built).
pub const WORK: &str = "build/xtask-work/gpu-ffmpeg-libvmaf";
pub const PART_LIMIT: u64 = 25 << 20;
const LIBVMAF_FILES: &[&str] = &["LICENSE", "model/vmaf_v0.6.1.json", "libvmaf/meson.build", "libvmaf/meson_options.txt", "libvmaf/include", "libvmaf/src", "libvmaf/tools/meson.build", "libvmaf/doc/meson.build", "libvmaf/test/meson.build"];
const HW: [&str; 4] = ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"];

fn log(line: &str) {
    eprintln!("[gpu-ffmpeg-libvmaf] {line}");
}

/// nv-codec-headers as scripts/ffmpeg-build takes them (the ffmpeg-src
/// crate's, cached beside the FFmpeg tarballs), else from cargo's registry.
fn nv_codec_headers(root: &Path) -> Result<PathBuf, String> {
    let out = Command::new("bash").args(["-c", "source scripts/ffmpeg-common.sh && fetch_nv_codec_headers"]).current_dir(root).output().map_err(|e| e.to_string())?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && path.is_file() {
        return Ok(path);
    }
    bench_gpu::nv_codec_tarball()
}

pub fn pack(root: &Path, tarball: Option<&Path>) -> Result<(), String> {
    let tarball = match tarball {
        Some(t) => t.to_path_buf(),
        None => {
            // The tarball scripts/ffmpeg-build uses (fetched once, cached).
            let out = Command::new("bash").args(["-c", "source scripts/ffmpeg-common.sh && fetch_ffmpeg_71"]).current_dir(root).output().map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err(format!("fetch_ffmpeg_71 (scripts/ffmpeg-common.sh) failed:\n{}", String::from_utf8_lossy(&out.stderr)));
            }
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    if !tarball.is_file() {
        return Err(format!("FFmpeg 7.1 tarball {} missing", tarball.display()));
    }
    let dir = pack::part_dir(root, PART);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let tmp = std::env::temp_dir().join(format!("xtask-ffl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    log(&format!("FFmpeg: repacking {} (pristine; without tests/ref, which only FATE reads)", tarball.display()));
    run_ok(Command::new("tar").arg("-xJf").arg(&tarball).arg("-C").arg(&tmp), "tar -xJf the FFmpeg tarball")?;
    let tops: Vec<PathBuf> = std::fs::read_dir(&tmp).map_err(|e| e.to_string())?.flatten().map(|e| e.path()).collect();
    let [top] = tops.as_slice() else { return Err(format!("unexpected layout in {}", tarball.display())) };
    if !top.join("configure").is_file() {
        return Err(format!("unexpected layout in {}: no configure", tarball.display()));
    }
    let name = top.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let script = format!("tar -cf - -C '{}' --exclude='{name}/tests/ref' '{name}' | gzip -9n > '{}'", tmp.display(), dir.join("ffmpeg-7.1.tar.gz").display());
    run_ok(Command::new("bash").args(["-c", &format!("set -o pipefail; {script}")]), "repacking FFmpeg")?;
    let sha = String::from_utf8_lossy(&Command::new("sha256sum").arg(&tarball).output().map_err(|e| e.to_string())?.stdout).chars().take(16).collect::<String>();
    std::fs::write(dir.join("ffmpeg-source"), format!("{name} {} {sha}\n", tarball.file_name().unwrap_or_default().to_string_lossy())).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(top);

    log("libvmaf 3.2.0 source and patched nv-codec-headers");
    let vmaf = bench_gpu::vendored_vmaf(root)?;
    run_ok(Command::new("tar").arg("-czf").arg(dir.join("libvmaf-3.2.0.tar.gz")).arg("-C").arg(&vmaf).args(LIBVMAF_FILES), "tar libvmaf")?;
    run_ok(Command::new("tar").arg("-xJf").arg(nv_codec_headers(root)?).arg("-C").arg(&tmp), "tar -xJf nv-codec-headers")?;
    let nvh = std::fs::read_dir(&tmp).map_err(|e| e.to_string())?.flatten().map(|e| e.path()).find(|p| p.join("include/ffnvcodec").is_dir()).ok_or("nv-codec-headers: no include/ffnvcodec")?;
    bench_gpu::patch_nvh_dir(&nvh.join("include/ffnvcodec"))?;
    // FFmpeg's configure asks pkg-config for ffnvcodec by version: keep it.
    let pc_in = std::fs::read_to_string(nvh.join("ffnvcodec.pc.in")).map_err(|e| e.to_string())?;
    let version = pc_in.lines().find_map(|l| l.strip_prefix("Version:")).map(str::trim).filter(|v| !v.is_empty()).ok_or("no Version in nv-codec-headers' ffnvcodec.pc.in")?;
    std::fs::write(dir.join("nv-codec-headers.version"), format!("{version}\n")).map_err(|e| e.to_string())?;
    run_ok(Command::new("tar").arg("-czf").arg(dir.join("nv-codec-headers.tar.gz")).arg("-C").arg(&nvh).arg("include"), "tar nv-codec-headers")?;
    std::fs::copy(root.join("tools/bench-gpu/bin2c.py"), dir.join("bin2c.py")).map_err(|e| format!("tools/bench-gpu/bin2c.py: {e}"))?;
    let _ = std::fs::remove_dir_all(&tmp);

    let mut m = Manifest::of_sources(PART, &["xtask", "tools/bench-gpu"], "cargo xtask gpu-ffmpeg-libvmaf pack");
    for f in ["ffmpeg-7.1.tar.gz", "ffmpeg-source", "libvmaf-3.2.0.tar.gz", "nv-codec-headers.tar.gz", "nv-codec-headers.version", "bin2c.py"] {
        m.add_file(&dir, f)?;
    }
    pack::write(&dir, &m)?;
    log(&m.summary());
    if m.total_bytes() > PART_LIMIT {
        return Err(format!("{} is {} MiB (keep it under {} MiB)", dir.display(), m.total_bytes() >> 20, PART_LIMIT >> 20));
    }
    crate::twins::pack_self(root)?;
    if pack::open(&pack::part_dir(root, g::PART)).is_err() {
        log("note: the gpu-ffmpeg part (clips, vmafx's ffmpeg) is missing: cargo xtask gpu-ffmpeg pack");
    }
    crate::twins::check_carry_size(root)?;
    log("ready: carry build/xtask, then build/xtask/bin/xtask gpu-ffmpeg-libvmaf run there");
    Ok(())
}

// --- the GPU host ---------------------------------------------------------------

pub struct RunOptions {
    /// Compute capability digits (default nvidia-smi's, else 90).
    pub arch: Option<String>,
    /// make -j / ninja -j (default the cores).
    pub jobs: Option<u32>,
    /// Runs that would start later than this (from the start) are skipped.
    pub deadline_s: u64,
    pub runs: u32,
    pub pairs: Option<Vec<String>>,
    /// The vmafx column.
    pub vmafx: bool,
    pub nvcc: String,
    /// Stop after the builds (the local check).
    pub build_only: bool,
    /// The xtask as pkg-config even where the host has one.
    pub pkg_config_shim: bool,
}

/// One build step's line of status.tsv: step, ok|FAILED, seconds, why.
struct Steps {
    file: PathBuf,
    lines: Vec<[String; 4]>,
}

impl Steps {
    fn add(&mut self, step: &str, ok: bool, seconds: u64, why: &str) {
        let row = [step.to_string(), if ok { "ok" } else { "FAILED" }.to_string(), seconds.to_string(), why.replace('\t', " ")];
        log(&format!("{step}: {} ({seconds} s) {why}", row[1]));
        self.lines.push(row);
        let _ = std::fs::write(&self.file, self.lines.iter().map(|r| r.join("\t") + "\n").collect::<String>());
    }
}

/// The first error-looking line of a build log (for the table).
pub fn why_failed(log_text: &str) -> String {
    let line = log_text.lines().find(|l| {
        let lower = l.to_lowercase();
        ["error:", "fatal", "not found", "failed"].iter().any(|s| lower.contains(s))
    });
    line.or_else(|| log_text.lines().rev().find(|l| !l.trim().is_empty())).unwrap_or("").chars().take(200).collect()
}

/// The FFmpeg configure flags of the minimal build.
pub fn ffmpeg_flags(nvcc: &str, arch: &str, pkg_config: &str) -> Vec<String> {
    let mut f: Vec<String> = [
        "--disable-everything", "--disable-autodetect", "--disable-x86asm", "--disable-doc", "--disable-network",
        "--disable-ffplay", "--disable-ffprobe", "--disable-avdevice", "--disable-swresample",
        "--enable-nonfree", "--enable-libvmaf", "--enable-ffnvcodec", "--enable-cuda", "--enable-cuda-nvcc", "--enable-nvdec",
    ]
    .map(String::from)
    .to_vec();
    f.push(format!("--nvcc={nvcc}"));
    f.push(format!("--nvccflags=-gencode arch=compute_{arch},code=sm_{arch} -O2"));
    f.push(format!("--pkg-config={pkg_config}"));
    f.extend(
        [
            "--pkg-config-flags=--static", "--enable-hwaccel=h264_nvdec,hevc_nvdec", "--enable-decoder=h264,hevc", "--enable-demuxer=mov,matroska",
            "--enable-parser=h264,hevc", "--enable-protocol=file,pipe",
            "--enable-filter=buffer,buffersink,libvmaf_cuda,scale_cuda,hwupload_cuda,hwdownload,null,format,metadata",
            "--enable-encoder=wrapped_avframe", "--enable-muxer=null",
        ]
        .map(String::from),
    );
    f
}

/// libvmaf.pc (the static library of the build tree, its C++ objects need
/// -lstdc++; the driver is dlopened) and ffnvcodec.pc (the patched headers).
pub fn pc_files(work: &Path, nvh_version: &str) -> (String, String) {
    let w = work.display();
    let libvmaf = format!(
        "Name: libvmaf\nDescription: VMAF 3.2.0 with CUDA (static, build tree)\nVersion: 3.2.0\nLibs: -L{w}/vmaf/libvmaf/build/src -lvmaf -lstdc++ -lm -lpthread -ldl\nCflags: -I{w}/vmaf/libvmaf/include -I{w}/vmaf/libvmaf/include/libvmaf -I{w}/vmaf/libvmaf/build/include -I{w}/nvh/include\n"
    );
    let ffnvcodec = format!("prefix={w}/nvh\nincludedir=${{prefix}}/include\n\nName: ffnvcodec\nDescription: FFmpeg version of Nvidia Codec SDK headers (patched: 7 driver entry points libvmaf calls)\nVersion: {nvh_version}\nCflags: -I${{includedir}}\n");
    (libvmaf, ffnvcodec)
}

struct Host {
    env: HostEnv,
    work: PathBuf,
    steps: Steps,
    jobs: String,
}

impl Host {
    /// `argv` in `cwd`, its stdout and stderr (meson reports on stdout)
    /// logged to work/NAME.log, killed after `limit` s.
    fn step(&self, name: &str, cwd: &Path, argv: &[&str], limit: u64) -> Ran {
        let mut full: Vec<String> = vec!["sh".into(), "-c".into(), format!("cd '{}' && exec \"$@\" 1>&2", cwd.display()), "sh".into()];
        full.extend(argv.iter().map(|s| s.to_string()));
        run_logged(&full, &self.env, &self.work.join(format!("{name}.log")), Some(Duration::from_secs(limit)), false)
    }

    fn log_text(&self, name: &str) -> String {
        std::fs::read_to_string(self.work.join(format!("{name}.log"))).unwrap_or_default()
    }
}

fn build_libvmaf(h: &mut Host, packed: &Path, m: &Manifest, arch: &str, nvcc: &str) -> bool {
    let work = h.work.clone();
    let lib = work.join("vmaf/libvmaf/build/src/libvmaf.a");
    let hashes: Vec<String> = m.files.iter().filter(|f| f.path.starts_with("libvmaf") || f.path.starts_with("nv-codec")).map(|f| format!("{:016x}", f.fnv64)).collect();
    let stamp = format!("{}-{arch}-{nvcc}", hashes.join("-"));
    let t0 = Instant::now();
    if lib.exists() && std::fs::read_to_string(work.join("libvmaf.stamp")).ok().as_deref() == Some(&stamp) {
        h.steps.add("libvmaf", true, 0, &format!("reused {}", lib.display()));
        return true;
    }
    for f in ["libvmaf.stamp", "ffmpeg.stamp"] {
        let _ = std::fs::remove_file(work.join(f));
    }
    let fail = |h: &mut Host, why: String| {
        h.steps.add("libvmaf", false, t0.elapsed().as_secs(), &why);
        false
    };
    for (d, t) in [("vmaf", "libvmaf-3.2.0.tar.gz"), ("nvh", "nv-codec-headers.tar.gz")] {
        let _ = std::fs::remove_dir_all(work.join(d));
        let _ = std::fs::create_dir_all(work.join(d));
        if let Err(e) = run_ok(Command::new("tar").arg("-xzf").arg(packed.join(t)).arg("-C").arg(work.join(d)), t) {
            return fail(h, e);
        }
    }
    let mb = work.join("vmaf/libvmaf/src/meson.build");
    match std::fs::read_to_string(&mb).map_err(|e| e.to_string()).and_then(|t| bench_gpu::meson_with_arch(&t, arch)) {
        Ok(t) => {
            let _ = std::fs::write(&mb, t);
        }
        Err(e) => return fail(h, e),
    }
    if which("bin2c").is_none() {
        let fb = work.join("fallback");
        let _ = std::fs::create_dir_all(&fb);
        let _ = std::fs::copy(packed.join("bin2c.py"), fb.join("bin2c"));
        let _ = Command::new("chmod").arg("+x").arg(fb.join("bin2c")).status();
        let path = format!("{}:{}", h.env.vars.iter().find(|(k, _)| k == "PATH").map_or(String::new(), |(_, v)| v.clone()), fb.display());
        h.env.set("PATH", path);
        log("bin2c missing: using the packed bin2c.py");
    }
    h.env.set("CPATH", work.join("nvh/include").display().to_string());
    // nvcc is handed -I ../src relative to the build folder: libvmaf/build.
    let src = work.join("vmaf/libvmaf");
    let setup = [
        "meson", "setup", "build", "--buildtype=release", "--default-library=static", "-Denable_cuda=true", "-Denable_nvcc=true", "-Denable_tests=false",
        "-Denable_docs=false", "-Denable_tools=false", "-Denable_asm=false", "-Dbuilt_in_models=false",
    ];
    if !h.step("libvmaf-meson", &src, &setup, 90).ok() {
        let why = why_failed(&h.log_text("libvmaf-meson"));
        return fail(h, why);
    }
    let jobs = h.jobs.clone();
    if !h.step("libvmaf-ninja", &src, &["nice", "ninja", "-C", "build", "-j", &jobs, "src/libvmaf.a"], 150).ok() {
        let why = why_failed(&h.log_text("libvmaf-ninja"));
        return fail(h, why);
    }
    let _ = std::fs::write(work.join("libvmaf.stamp"), &stamp);
    h.steps.add("libvmaf", true, t0.elapsed().as_secs(), &format!("meson + ninja, sm_{arch}"));
    true
}

fn build_ffmpeg(h: &mut Host, packed: &Path, flags: &[String]) -> bool {
    let work = h.work.clone();
    let ff = work.join("ffmpeg/ffmpeg");
    let t0 = Instant::now();
    let source = std::fs::read_to_string(packed.join("ffmpeg-source")).unwrap_or_default();
    let libvmaf_stamp = std::fs::read_to_string(work.join("libvmaf.stamp")).ok();
    let fstamp = format!("{:016x}", pack::fnv64(format!("{source}{}{}", libvmaf_stamp.clone().unwrap_or_default(), flags.join(" ")).as_bytes()));
    if libvmaf_stamp.is_none() {
        h.steps.add("ffmpeg", false, 0, "not built: libvmaf with CUDA did not build");
        return false;
    }
    if ff.exists() && std::fs::read_to_string(work.join("ffmpeg.stamp")).ok().as_deref() == Some(&fstamp) {
        h.steps.add("ffmpeg", true, 0, &format!("reused {}", ff.display()));
        return true;
    }
    let _ = std::fs::remove_file(work.join("ffmpeg.stamp"));
    // A configured tree of the same flags (a make cut short by its time
    // limit) is resumed; anything else starts afresh.
    let obj = work.join("ffmpeg");
    let resumed = std::fs::read_to_string(work.join("configure.stamp")).ok().as_deref() == Some(&fstamp) && obj.join("ffbuild/config.mak").exists();
    if resumed {
        log("FFmpeg: resuming the configured tree");
    } else {
        let _ = std::fs::remove_file(work.join("configure.stamp"));
        for d in ["ffmpeg", "ffmpeg-src"] {
            let _ = std::fs::remove_dir_all(work.join(d));
            let _ = std::fs::create_dir_all(work.join(d));
        }
        if let Err(e) = run_ok(Command::new("tar").arg("-xzf").arg(packed.join("ffmpeg-7.1.tar.gz")).arg("-C").arg(work.join("ffmpeg-src")), "tar -xzf ffmpeg-7.1.tar.gz") {
            h.steps.add("ffmpeg", false, t0.elapsed().as_secs(), &e);
            return false;
        }
        let src = std::fs::read_dir(work.join("ffmpeg-src")).into_iter().flatten().flatten().map(|e| e.path()).next().unwrap_or_default();
        h.env.set("PKG_CONFIG_PATH", work.join("pkgconfig").display().to_string());
        let configure = src.join("configure").display().to_string();
        let argv: Vec<&str> = std::iter::once(configure.as_str()).chain(flags.iter().map(String::as_str)).collect();
        let r = h.step("ffmpeg-configure", &obj, &argv, 120);
        if !r.ok() {
            let cl = std::fs::read_to_string(obj.join("ffbuild/config.log")).unwrap_or_default();
            eprintln!("{}", cl.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"));
            let why = if r.rc == 124 { "timed out after 120 s".to_string() } else { h.log_text("ffmpeg-configure").lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").chars().take(200).collect() };
            h.steps.add("ffmpeg", false, t0.elapsed().as_secs(), &format!("configure: {why}"));
            return false;
        }
        let _ = std::fs::write(work.join("configure.stamp"), &fstamp);
        if !std::fs::read_to_string(obj.join("ffbuild/config.mak")).unwrap_or_default().lines().any(|l| l == "CONFIG_LIBVMAF_CUDA_FILTER=yes") {
            log("warning: configure disabled libvmaf_cuda (see ffbuild/config.log)");
        }
        log(&format!("FFmpeg configured in {} s", t0.elapsed().as_secs()));
    }
    log(&format!("FFmpeg: make -j{}", h.jobs));
    let jobs = format!("-j{}", h.jobs);
    let r = h.step("ffmpeg-make", &obj, &["nice", "make", &jobs, "ffmpeg"], 240);
    if !r.ok() {
        let text = h.log_text("ffmpeg-make");
        let why = if r.rc == 124 { "timed out after 240 s (run again: make resumes)".to_string() } else { text.lines().find(|l| l.contains("error:") || l.contains("Error ")).map_or(format!("exit {}", r.rc), |l| l.chars().take(200).collect()) };
        h.steps.add("ffmpeg", false, t0.elapsed().as_secs(), &format!("make: {why}"));
        return false;
    }
    let _ = std::fs::write(work.join("ffmpeg.stamp"), &fstamp);
    h.steps.add("ffmpeg", true, t0.elapsed().as_secs(), &format!("configure + make -j{}", h.jobs));
    true
}

/// A timed run's outcome: skipped past the deadline, or ran.
pub enum Timed {
    Skipped,
    Ran(Ran),
}

/// A pair fails the run when one of its libvmaf_cuda runs failed or was
/// skipped (the decode and vmafx columns only inform): (run, ok) each.
pub fn pair_failed<'a>(runs: impl Iterator<Item = (&'a str, bool)>) -> bool {
    runs.filter(|(k, _)| k.starts_with("libvmaf")).any(|(_, ok)| !ok)
}

pub fn run(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let start = Instant::now();
    let packed = pack::part_dir(root, PART);
    let m = pack::open(&packed).map_err(|e| format!("{e}: cargo xtask gpu-ffmpeg-libvmaf pack here, carry build/xtask"))?;
    let work = root.join(WORK);
    std::fs::create_dir_all(work.join("pkgconfig")).map_err(|e| e.to_string())?;
    let mut env = g::run_env(root, None);
    env.set("PATH", format!("/usr/local/cuda/bin:{}", std::env::var("PATH").unwrap_or_default()));
    let jobs = o.jobs.map_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()).to_string(), |j| j.to_string());
    let mut h = Host { env, work: work.clone(), steps: Steps { file: work.join("status.tsv"), lines: Vec::new() }, jobs };
    let _ = std::fs::write(&h.steps.file, "");

    log("environment");
    let smi = Command::new("nvidia-smi").args(["--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]).output().ok().filter(|o| o.status.success());
    let gpu = smi.as_ref().map_or("(nvidia-smi failed)".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let _ = std::fs::write(work.join("gpu.txt"), format!("{gpu}\n"));
    eprintln!("{gpu}");
    h.step("toolchain", root, &["sh", "-c", &format!("{} --version | tail -n1; echo meson $(meson --version), ninja $(ninja --version), $(gcc --version | head -n1)", o.nvcc)], 30);
    eprint!("{}", h.log_text("toolchain"));
    let arch = o.arch.clone().unwrap_or_else(|| gpu.lines().next().and_then(|l| l.rsplit(',').next()).map(|c| c.trim().replace('.', "")).unwrap_or_default());
    let arch = if !arch.is_empty() && arch.chars().all(|c| c.is_ascii_digit()) { arch } else { "90".to_string() };

    // FFmpeg's configure finds libvmaf and ffnvcodec only through
    // pkg-config: this xtask answers as one when called by that name.
    let pkg_config = if o.pkg_config_shim || which("pkg-config").is_none() {
        let link = work.join("pkg-config");
        let _ = std::fs::remove_file(&link);
        let me = std::env::current_exe().map_err(|e| e.to_string())?;
        std::os::unix::fs::symlink(&me, &link).map_err(|e| e.to_string())?;
        log(&format!("pkg-config: the xtask's stand-in ({})", link.display()));
        link.display().to_string()
    } else {
        "pkg-config".to_string()
    };

    let libvmaf_ok = build_libvmaf(&mut h, &packed, &m, &arch, &o.nvcc);
    let nvh_version = std::fs::read_to_string(packed.join("nv-codec-headers.version")).unwrap_or_default();
    let (libvmaf_pc, ffnvcodec_pc) = pc_files(&work, nvh_version.trim());
    let _ = std::fs::write(work.join("pkgconfig/libvmaf.pc"), libvmaf_pc);
    let _ = std::fs::write(work.join("pkgconfig/ffnvcodec.pc"), ffnvcodec_pc);
    let flags = ffmpeg_flags(&o.nvcc, &arch, &pkg_config);
    let built = libvmaf_ok && build_ffmpeg(&mut h, &packed, &flags);
    let ff = work.join("ffmpeg/ffmpeg");
    if built {
        let filters = Command::new(&ff).args(["-hide_banner", "-filters"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        let found: Vec<&str> = filters.lines().filter(|l| l.contains(" libvmaf_cuda ") || l.contains(" scale_cuda ")).collect();
        if found.len() < 2 {
            log(&format!("warning: no libvmaf_cuda/scale_cuda in {}", ff.display()));
        }
        eprintln!("{}", found.join("\n"));
    }
    save(&work);
    if o.build_only {
        print!("{}", std::fs::read_to_string(work.join("status.tsv")).unwrap_or_default());
        return Ok(true);
    }

    // --- the runs and the table ---
    let runs_dir = work.join("runs");
    std::fs::create_dir_all(&runs_dir).map_err(|e| e.to_string())?;
    let vmafx_ff = pack::part_dir(root, g::PART).join("bin/ffmpeg");
    let with_vmafx = o.vmafx && vmafx_ff.exists();
    let model = work.join("vmaf/model/vmaf_v0.6.1.json").display().to_string();
    let pairs = g::clip_pairs(&pack::part_dir(root, g::PART).join("clips"), o.pairs.as_deref());
    let timed = |tag: &str, argv: &[String], n: u32| -> (Timed, PathBuf) {
        let log = runs_dir.join(format!("{tag}.log"));
        let left = |s: &Instant| o.deadline_s as f64 - s.elapsed().as_secs_f64();
        if left(&start) < 15.0 {
            let _ = std::fs::write(&log, format!("skipped: deadline ({} s) reached\n", o.deadline_s));
            return (Timed::Skipped, log);
        }
        let mut best: Option<Ran> = None;
        for _ in 0..n {
            let limit = Duration::from_secs(left(&start).clamp(10.0, 90.0) as u64);
            let r = run_logged(argv, &h.env, &log, Some(limit), true);
            if !r.ok() {
                return (Timed::Ran(r), log);
            }
            if best.as_ref().is_none_or(|b| r.seconds < b.seconds) {
                best = Some(r);
            }
        }
        (Timed::Ran(best.unwrap_or(Ran { seconds: 0.0, rc: 127 })), log)
    };

    let mut table = Table::new(&[
        ("pair", Align::Left),
        ("frames", Align::Right),
        ("decode (NVDEC)", Align::Left),
        ("NVDEC+scale_cuda+libvmaf_cuda", Align::Left),
        ("VMAF libvmaf_cuda", Align::Left),
        ("10-bit as yuv420p: libvmaf_cuda", Align::Left),
        ("VMAF (yuv420p)", Align::Left),
        ("NVDEC+vmafx (cuda)", Align::Left),
        ("VMAF vmafx", Align::Left),
        ("status", Align::Left),
    ]);
    let (mut details, mut failed) = (Vec::new(), !built);
    for (name, dist, reference) in &pairs {
        let ten_bit = name.split('-').next().unwrap_or("").contains("10");
        let inputs: Vec<String> = HW.iter().map(|s| s.to_string()).chain(["-i".into(), dist.display().to_string()]).chain(HW.iter().map(|s| s.to_string())).chain(["-i".into(), reference.display().to_string()]).collect();
        let base = |bin: &Path| [vec![bin.display().to_string(), "-hide_banner".into(), "-nostdin".into()], inputs.clone()].concat();
        let mut res: BTreeMap<String, (Timed, PathBuf, Option<PathBuf>)> = BTreeMap::new();
        if built {
            let (t, l) = timed(&format!("{name}-decode"), &[base(&ff), ["-map", "0:v", "-map", "1:v", "-f", "null", "-"].map(String::from).to_vec()].concat(), o.runs);
            res.insert("decode".into(), (t, l, None));
            for fmt in if ten_bit { vec!["yuv444p16", "yuv420p"] } else { vec!["yuv420p"] } {
                let jl = runs_dir.join(format!("{name}-libvmaf-{fmt}.json"));
                let sc = format!("scale_cuda=format={fmt}:interp_algo=nearest");
                let graph = format!("[0:v]{sc}[d];[1:v]{sc}[r];[d][r]libvmaf_cuda=model=path={model}:log_fmt=json:log_path={}", jl.display());
                let (t, l) = timed(&format!("{name}-libvmaf-{fmt}"), &[base(&ff), vec!["-lavfi".into(), graph, "-f".into(), "null".into(), "-".into()]].concat(), o.runs);
                res.insert(format!("libvmaf-{fmt}"), (t, l, Some(jl)));
            }
        }
        if with_vmafx {
            let jl = runs_dir.join(format!("{name}-vmafx.json"));
            let graph = format!("[0:v]null[d];[1:v]null[r];[d][r]vmafx=log_fmt=json:log_path={}", jl.display());
            let mut argv = base(&vmafx_ff);
            argv.splice(3..3, ["-v".to_string(), "verbose".to_string()]);
            argv.extend(["-lavfi".into(), graph, "-f".into(), "null".into(), "-".into()]);
            let (t, l) = timed(&format!("{name}-vmafx"), &argv, o.runs);
            res.insert("vmafx".into(), (t, l, Some(jl)));
        }
        let json_of = |k: &str| res.get(k).and_then(|(t, _, j)| matches!(t, Timed::Ran(r) if r.ok()).then_some(j.clone()).flatten()).map(|j| std::fs::read_to_string(j).unwrap_or_default());
        let frames = ["libvmaf-yuv420p", "libvmaf-yuv444p16", "vmafx"].iter().filter_map(|k| json_of(k)).find_map(|t| pooled_vmaf(&t).0.filter(|n| *n > 0));
        let mut status = Vec::new();
        let mut cell = |k: &str| -> String {
            match res.get(k) {
                None => "-".into(),
                Some((Timed::Skipped, ..)) => {
                    status.push(format!("{k}: skipped (deadline)"));
                    "skipped".into()
                }
                Some((Timed::Ran(r), log, _)) if !r.ok() => {
                    status.push(format!("{k} failed"));
                    details.push(format!("{name} {k} (rc {}): {}", r.rc, first_error_libvmaf(&std::fs::read_to_string(log).unwrap_or_default())));
                    "fail".into()
                }
                Some((Timed::Ran(r), ..)) => g::time_cell(Some(r), frames.unwrap_or(0) as u64),
            }
        };
        let main_fmt = if ten_bit { "libvmaf-yuv444p16" } else { "libvmaf-yuv420p" };
        let decode = cell("decode");
        let main_time = if res.contains_key(main_fmt) { format!("{} {}", cell(main_fmt), &main_fmt[8..]) } else { "-".into() };
        let as420_time = if ten_bit { cell("libvmaf-yuv420p") } else { "-".into() };
        let vmafx_time = cell("vmafx");
        let mut score = |k: &str| -> String {
            match json_of(k) {
                None => "-".into(),
                Some(t) => match pooled_vmaf(&t).1 {
                    Some(v) => format!("{v:.6}"),
                    None => {
                        status.push(format!("{k}: no pooled VMAF in its JSON log"));
                        "?".into()
                    }
                },
            }
        };
        let (main_score, as420_score, vmafx_score) = (score(main_fmt), if ten_bit { score("libvmaf-yuv420p") } else { "-".into() }, score("vmafx"));
        if !built {
            status.push("libvmaf_cuda not built".into());
        }
        failed |= pair_failed(res.iter().map(|(k, (t, ..))| (k.as_str(), matches!(t, Timed::Ran(r) if r.ok()))));
        table.row(&[
            name.clone(),
            frames.map_or("?".into(), |f| f.to_string()),
            decode,
            main_time,
            main_score,
            as420_time,
            as420_score,
            vmafx_time,
            vmafx_score,
            if status.is_empty() { "ok".into() } else { status.join("; ") },
        ]);
    }
    let mut text = format!("GPU: {gpu}\nbuild steps:\n");
    text += &h.steps.lines.iter().map(|s| format!("  {}\n", s.join(" | "))).collect::<String>();
    text += &format!("\n{}", table.render_markdown());
    text += &format!(
        "\ntimes: whole ffmpeg process, best of {}; both inputs NVDEC (-hwaccel cuda -hwaccel_output_format cuda); libvmaf_cuda: scale_cuda=format=F:interp_algo=nearest on both, model=path=vmaf_v0.6.1.json; vmafx: {}\n",
        o.runs,
        if with_vmafx { "build/xtask/gpu-ffmpeg/bin/ffmpeg, defaults" } else { "not run" }
    );
    if pairs.is_empty() {
        text += "no clip pairs under build/xtask/gpu-ffmpeg/clips (cargo xtask gpu-ffmpeg pack, carry build/xtask)\n";
        failed = true;
    }
    if !details.is_empty() {
        text += "\ndetails:\n";
        text += &details.iter().map(|d| format!("  {d}\n")).collect::<String>();
    }
    text += &format!("logs and JSON logs in {}\n", runs_dir.display());
    print!("{text}");
    let _ = std::fs::write(work.join("table.md"), &text);
    save(&work);
    Ok(!failed)
}

/// status.tsv, the build logs' tails, the runs' logs and the table, into
/// $OUT when set.
fn save(work: &Path) {
    let Some(out) = std::env::var_os("OUT").filter(|o| !o.is_empty()).map(PathBuf::from) else { return };
    let _ = std::fs::create_dir_all(out.join("runs"));
    for e in std::fs::read_dir(work).into_iter().flatten().flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".log") || name == "status.tsv" || name == "table.md" {
            let bytes = std::fs::read(&p).unwrap_or_default();
            let _ = std::fs::write(out.join(&name), &bytes[bytes.len().saturating_sub(200_000)..]);
        }
    }
    let config_log = std::fs::read(work.join("ffmpeg/ffbuild/config.log")).unwrap_or_default();
    if !config_log.is_empty() {
        let _ = std::fs::write(out.join("config.log"), &config_log[config_log.len().saturating_sub(200_000)..]);
    }
    for e in std::fs::read_dir(work.join("runs")).into_iter().flatten().flatten() {
        let _ = std::fs::copy(e.path(), out.join("runs").join(e.file_name()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_names_the_gpus_arch_and_the_pkg_config() {
        let f = ffmpeg_flags("nvcc", "90", "/w/pkg-config");
        assert!(f.contains(&"--nvccflags=-gencode arch=compute_90,code=sm_90 -O2".to_string()));
        assert!(f.contains(&"--pkg-config=/w/pkg-config".to_string()));
        assert!(f.iter().any(|x| x.contains("libvmaf_cuda,scale_cuda")));
    }

    #[test]
    fn the_pc_files_point_into_the_work_folder() {
        let (libvmaf, nvh) = pc_files(Path::new("/w"), "12.1.14.0");
        let pc = crate::pkg_config::parse_pc(&nvh);
        assert_eq!(pc.fields.get("Cflags").map(String::as_str), Some("-I/w/nvh/include"));
        assert!(libvmaf.contains("Libs: -L/w/vmaf/libvmaf/build/src -lvmaf -lstdc++"));
        assert!(nvh.contains("Version: 12.1.14.0\n"));
        assert!(nvh.contains("prefix=/w/nvh\nincludedir=${prefix}/include\n"));
    }

    #[test]
    fn a_failed_or_skipped_libvmaf_cuda_run_fails_the_pair() {
        assert!(!pair_failed([("decode", false), ("libvmaf-yuv420p", true), ("vmafx", false)].into_iter()));
        assert!(pair_failed([("libvmaf-yuv444p16", true), ("libvmaf-yuv420p", false)].into_iter()));
        assert!(!pair_failed(std::iter::empty()));
    }

    #[test]
    fn a_build_logs_first_error_is_its_why() {
        assert_eq!(why_failed("ok\n../src/x.c:3: error: nope\nmore\n"), "../src/x.c:3: error: nope");
        assert_eq!(why_failed("ok\nlast\n\n"), "last");
    }
}
