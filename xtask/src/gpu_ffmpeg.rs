//! vmafx inside FFmpeg on CUDA frames (NVDEC) on an NVIDIA host.
//!
//! `cargo xtask gpu-ffmpeg pack` (here, no GPU): FFmpeg 7.1 with CUDA,
//! NVDEC/CUVID and vmafx (scripts/ffmpeg-build 7.1-cuda), checked to need
//! nothing newer than the host's glibc and no library beyond glibc and
//! libgcc_s; clips encoded with this machine's ffmpeg (8-bit H.264 and
//! 10-bit HEVC, 1080p and 2160p, a reference and a distorted encode each);
//! the HIP stand-in (hip-standin pack) and this xtask: build/xtask/.
//!
//! There (`build/xtask/bin/xtask gpu-ffmpeg …`, no Python):
//!   run      per pair: NVDEC -> vmafx, software decode -> vmafx on the CPU,
//!            a mixed pair, NVDEC -> hwdownload -> vmafx, PSNR's chroma;
//!            every per-frame value of a GPU run equal as doubles to the
//!            CPU run's, host copies counted, decode and scoring timed
//!            (gpu_ffmpeg_run.rs);
//!   run-hip  software decode -> hwupload to HIP (the stand-in) -> vmafx,
//!            against the CPU, timed beside hwupload to CUDA;
//!   soak     N generated frame pairs through one graph of four vmafx on
//!            CUDA frames and one on the CPU: GPU memory and fds flat after
//!            the warm-up, every value equal (docs/reliability.md).

use crate::host::{HostEnv, Lane};
use crate::pack::{self, Manifest};
use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const PART: &str = "gpu-ffmpeg";
/// The runs' logs, metadata and JSON logs on the GPU host.
pub const WORK: &str = "build/xtask/gpu-ffmpeg-work";
/// The newest glibc symbol version the GPU host has (Ubuntu 24.04).
pub const GLIBC_MAX: &str = "2.39";
/// The libraries the packed ffmpeg may need (libcuda and libnvcuvid are
/// dlopened).
pub const HOST_LIBS: &[&str] = &["libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2", "librt.so.1", "libutil.so.1", "ld-linux-x86-64.so.2"];
/// The part's size limit: it is carried with the xtask and the stand-in.
pub const PART_LIMIT: u64 = 60 << 20;

fn log(line: &str) {
    eprintln!("[gpu-ffmpeg] {line}");
}

/// Dotted versions compared part by part as numbers (2.39 above 2.4).
pub fn version_cmp(a: &str, b: &str) -> Ordering {
    let key = |v: &str| v.split('.').map(|p| p.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>();
    key(a).cmp(&key(b))
}

/// The dynamic needs of a program from `objdump -T` and `readelf -d`:
/// glibc symbol versions up to `glibc_max` and only HOST_LIBS. A line
/// saying what it needs, or why it would not run on the host.
pub fn check_portable(objdump_t: &str, readelf_d: &str, glibc_max: &str) -> Result<String, String> {
    let mut newest = String::from("0");
    for word in objdump_t.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        if let Some(v) = word.strip_prefix("GLIBC_") {
            if v.starts_with(|c: char| c.is_ascii_digit()) && version_cmp(v, &newest) == Ordering::Greater {
                newest = v.to_string();
            }
        }
    }
    if version_cmp(&newest, glibc_max) == Ordering::Greater {
        let users: Vec<&str> = objdump_t.lines().filter(|l| l.contains(&format!("GLIBC_{newest}"))).take(5).collect();
        return Err(format!("needs glibc {newest}; the GPU host has {glibc_max}:\n{}", users.join("\n")));
    }
    let needed: Vec<&str> = readelf_d.lines().filter_map(|l| l.split_once("Shared library: [")).filter_map(|(_, r)| r.split_once(']')).map(|(lib, _)| lib).collect();
    if let Some(lib) = needed.iter().find(|l| !HOST_LIBS.contains(l)) {
        return Err(format!("needs {lib}, which the GPU host may not have"));
    }
    Ok(format!("glibc <= {newest}, needs: {}", needed.join(" ")))
}

fn output_of(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| format!("{shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{shown} failed:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// (name, distorted, reference) clip pairs under `clips`: each `*-ref.*`
/// with its `*-dist.*`; only those of `only` when given.
pub fn clip_pairs(clips: &Path, only: Option<&[String]>) -> Vec<(String, PathBuf, PathBuf)> {
    let mut refs: Vec<PathBuf> = std::fs::read_dir(clips).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().contains("-ref."))).collect();
    refs.sort();
    refs.into_iter()
        .filter_map(|r| {
            let file = r.file_name()?.to_string_lossy().into_owned();
            let (name, ext) = file.rsplit_once("-ref.")?;
            let dist = r.with_file_name(format!("{name}-dist.{ext}"));
            dist.exists().then(|| (name.to_string(), dist, r.clone()))
        })
        .filter(|(n, ..)| only.is_none_or(|o| o.iter().any(|x| x == n)))
        .collect()
}

// --- pack (here) ----------------------------------------------------------------

pub struct PackOptions {
    /// An FFmpeg 7.1-cuda program already built (else scripts/ffmpeg-build).
    pub ffmpeg: Option<PathBuf>,
    /// Frames per clip.
    pub frames: u32,
    /// The HIP stand-in too (run-hip needs it).
    pub hip_standin: bool,
}

/// One clip with /usr/bin/ffmpeg (libx264 / libx265), unless it is there.
fn encode_clip(clips: &Path, file: &str, src: &str, codec_args: &[&str]) -> Result<(), String> {
    let to = clips.join(file);
    if std::fs::metadata(&to).is_ok_and(|m| m.len() > 0) {
        return Ok(());
    }
    log(&format!("clip {file}"));
    let ext = file.rsplit('.').next().unwrap_or("mp4");
    let tmp = clips.join(format!("{file}.tmp.{ext}"));
    output_of(Command::new("nice").args(["/usr/bin/ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src]).args(codec_args).arg(&tmp))?;
    std::fs::rename(&tmp, &to).map_err(|e| e.to_string())
}

/// The test clips: a moving test pattern with static grain, reference at
/// CRF 24, distorted at CRF 38 (blocking and smearing: VMAF well below 100).
fn make_clips(clips: &Path, frames: u32) -> Result<(), String> {
    let stamp = clips.join("FRAMES");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(&frames.to_string()) {
        let _ = std::fs::remove_dir_all(clips);
    }
    std::fs::create_dir_all(clips).map_err(|e| e.to_string())?;
    std::fs::write(&stamp, frames.to_string()).map_err(|e| e.to_string())?;
    if !Path::new("/usr/bin/ffmpeg").exists() {
        return Err("/usr/bin/ffmpeg (with libx264, libx265) is needed for the clips".into());
    }
    for (size, name) in [("1920x1080", "1080p"), ("3840x2160", "2160p")] {
        let src = format!("testsrc2=size={size}:rate=24,noise=alls=4,trim=end_frame={frames}");
        for (kind, crf) in [("ref", "24"), ("dist", "38")] {
            encode_clip(clips, &format!("h264-{name}-{kind}.mp4"), &src, &["-c:v", "libx264", "-preset", "veryfast", "-crf", crf, "-pix_fmt", "yuv420p"])?;
            encode_clip(clips, &format!("hevc10-{name}-{kind}.mkv"), &src, &["-c:v", "libx265", "-preset", "ultrafast", "-crf", crf, "-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error"])?;
        }
    }
    Ok(())
}

pub fn pack(root: &Path, o: &PackOptions) -> Result<(), String> {
    let ff = match &o.ffmpeg {
        Some(f) => f.clone(),
        None => {
            let st = Command::new(root.join("scripts/ffmpeg-build")).arg("7.1-cuda").stdout(Stdio::null()).current_dir(root).status().map_err(|e| format!("scripts/ffmpeg-build: {e}"))?;
            if !st.success() {
                return Err(format!("scripts/ffmpeg-build 7.1-cuda failed ({st})"));
            }
            let build = std::env::var_os("VMAFX_BUILD").map(PathBuf::from).unwrap_or_else(|| root.join("build"));
            build.join("ffmpeg-7.1-cuda/obj/ffmpeg")
        }
    };
    let objdump = output_of(Command::new("objdump").arg("-T").arg(&ff))?;
    let readelf = output_of(Command::new("readelf").arg("-d").arg(&ff))?;
    let portable = check_portable(&objdump, &readelf, GLIBC_MAX).map_err(|e| format!("{}: {e}", ff.display()))?;
    log(&format!("{}: {portable}", ff.display()));

    let dir = pack::part_dir(root, PART);
    let _ = std::fs::remove_file(dir.join("MANIFEST"));
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    let packed = dir.join("bin/ffmpeg");
    output_of(Command::new("strip").arg("-o").arg(&packed).arg(&ff))?;
    make_clips(&dir.join("clips"), o.frames)?;
    let ask = |args: &[&str]| output_of(Command::new(&packed).arg("-hide_banner").args(args).stdin(Stdio::null()));
    if !ask(&["-filters"])?.contains(" vmafx ") {
        return Err("the built ffmpeg has no vmafx filter".into());
    }
    if !ask(&["-hwaccels"])?.lines().any(|l| l.trim() == "cuda") {
        return Err("the built ffmpeg has no cuda hwaccel".into());
    }
    if !ask(&["-init_hw_device", "list"])?.lines().any(|l| l.trim() == "hip") {
        return Err("the built ffmpeg has no hip device type".into());
    }

    let mut m = Manifest::of_sources(PART, pack::CRATE_SOURCES, &format!("cargo xtask gpu-ffmpeg pack --frames {}", o.frames));
    m.add_file(&dir, "bin/ffmpeg")?;
    let mut clips: Vec<String> = std::fs::read_dir(dir.join("clips")).map_err(|e| e.to_string())?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| !n.contains(".tmp.")).collect();
    clips.sort();
    for c in clips {
        m.add_file(&dir, &format!("clips/{c}"))?;
    }
    m.notes.push(format!("ffmpeg from {}: {portable}", ff.display()));
    pack::write(&dir, &m)?;
    log(&m.summary());
    if m.total_bytes() > PART_LIMIT {
        return Err(format!("{} is {} MiB (keep it under {} MiB)", dir.display(), m.total_bytes() >> 20, PART_LIMIT >> 20));
    }
    if o.hip_standin {
        crate::hip_standin::pack(root, &crate::hip_standin::Versions::default(), false)?;
    }
    crate::twins::pack_self(root)?;
    crate::twins::check_carry_size(root)?;
    log("ready: carry build/xtask, then build/xtask/bin/xtask gpu-ffmpeg run (or run-hip, soak) there");
    Ok(())
}

// --- the GPU host ---------------------------------------------------------------

/// The environment of the runs: NVRTC as the twins find it, the kernel
/// cache under the pack; no lane required (the CPU runs are part of it).
pub fn run_env(root: &Path, hip_standin: Option<&Path>) -> HostEnv {
    let mut env = HostEnv::discover(if hip_standin.is_some() { Lane::Hip } else { Lane::Cuda }, root, hip_standin);
    env.vars.retain(|(k, _)| k != "VMAFX_REQUIRE_GPU");
    env
}

/// How a process ended: its exit code, 128 + a signal, 124 past its limit,
/// 127 when it could not start.
pub struct Ran {
    pub seconds: f64,
    pub rc: i32,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.rc == 0
    }
}

/// Runs `argv` with `env`, stdout dropped, stderr to `log` (after a `# argv`
/// line when `header`); killed after `limit`.
pub fn run_logged(argv: &[String], env: &HostEnv, log: &Path, limit: Option<Duration>, header: bool) -> Ran {
    use std::io::Write;
    let t = Instant::now();
    let Ok(mut file) = std::fs::File::create(log) else { return Ran { seconds: 0.0, rc: 127 } };
    if header {
        let _ = writeln!(file, "# {}", argv.join(" "));
    }
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::null());
    match file.try_clone() {
        Ok(f) => cmd.stderr(f),
        Err(_) => cmd.stderr(Stdio::null()),
    };
    for (k, v) in &env.vars {
        cmd.env(k, v);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(file, "\n{}: {e}", argv[0]);
            return Ran { seconds: 0.0, rc: 127 };
        }
    };
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                use std::os::unix::process::ExitStatusExt;
                let rc = st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0));
                return Ran { seconds: t.elapsed().as_secs_f64(), rc };
            }
            Ok(None) if limit.is_some_and(|l| t.elapsed() > l) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = writeln!(file, "\ntimed out after {} s", limit.unwrap_or_default().as_secs());
                return Ran { seconds: t.elapsed().as_secs_f64(), rc: 124 };
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return Ran { seconds: t.elapsed().as_secs_f64(), rc: 127 },
        }
    }
}

/// The best of `n` runs (the first failure ends it).
pub fn best_of(n: u32, argv: &[String], env: &HostEnv, log: &Path) -> Ran {
    let mut best: Option<Ran> = None;
    for _ in 0..n.max(1) {
        let r = run_logged(argv, env, log, None, false);
        if !r.ok() {
            return r;
        }
        if best.as_ref().is_none_or(|b| r.seconds < b.seconds) {
            best = Some(r);
        }
    }
    best.unwrap_or(Ran { seconds: 0.0, rc: 127 })
}

/// "1.23s (39 fps)", "fail", or "-" when it did not run.
pub fn time_cell(r: Option<&Ran>, frames: u64) -> String {
    match r {
        None => "-".into(),
        Some(r) if !r.ok() => "fail".into(),
        Some(r) if frames > 0 && r.seconds > 0.0 => format!("{:.2}s ({:.0} fps)", r.seconds, frames as f64 / r.seconds),
        Some(r) => format!("{:.2}s", r.seconds),
    }
}

/// ffmpeg's command for `inputs` (distorted first) -> `prep` -> vmafx
/// (`opts`, JSON log `work/tag.json`) -> per-frame metadata in `work/tag.meta`.
pub fn vmafx_graph(ff: &str, work: &Path, inputs: &[String], tag: &str, opts: &str, prep: &str) -> Vec<String> {
    let w = work.display();
    let mut graph = format!("{prep}[d][r]vmafx=log_fmt=json:log_path={w}/{tag}.json");
    if !opts.is_empty() {
        graph.push(':');
        graph.push_str(opts);
    }
    graph.push_str(&format!(",metadata=mode=print:file={w}/{tag}.meta"));
    let mut argv: Vec<String> = [ff, "-hide_banner", "-nostdin", "-v", "verbose"].map(String::from).to_vec();
    argv.extend(inputs.iter().cloned());
    argv.extend(["-lavfi".into(), graph, "-f".into(), "null".into(), "-".into()]);
    argv
}

/// When $OUT is set (the device tool's folder to bring back): `table` and
/// every log of `work`, archived.
pub fn hand_back(work: &Path, table: &str) {
    let Some(out) = std::env::var_os("OUT").filter(|o| !o.is_empty()).map(PathBuf::from) else { return };
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join(format!("{}.md", work.file_name().unwrap_or_default().to_string_lossy())), table);
    let name = format!("{}-logs.tar.gz", work.file_name().unwrap_or_default().to_string_lossy());
    let _ = Command::new("tar").arg("-czf").arg(out.join(name)).arg("-C").arg(work).arg(".").status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers() {
        assert_eq!(version_cmp("2.39", "2.4"), Ordering::Greater);
        assert_eq!(version_cmp("2.3.4", "2.39"), Ordering::Less);
        assert_eq!(version_cmp("2.39", "2.39"), Ordering::Equal);
    }

    const READELF: &str = " 0x0000000000000001 (NEEDED)             Shared library: [libm.so.6]\n 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n";

    #[test]
    fn a_program_within_the_hosts_glibc_and_libraries_passes() {
        let objdump = "0000 DF *UND* 0000 (GLIBC_2.2.5) memcpy\n0000 DF *UND* 0000 (GLIBC_2.34) pthread_create\n0000 DF *UND* 0000 GLIBC_2.38 __isoc23_strtol\n";
        assert_eq!(check_portable(objdump, READELF, "2.39"), Ok("glibc <= 2.38, needs: libm.so.6 libc.so.6".into()));
    }

    #[test]
    fn a_newer_glibc_or_another_library_is_refused() {
        let objdump = "0000 DF *UND* 0000 (GLIBC_2.4) a\n0000 DF *UND* 0000 (GLIBC_2.40) b\n";
        assert!(check_portable(objdump, READELF, "2.39").unwrap_err().starts_with("needs glibc 2.40"));
        let readelf = format!("{READELF} 0x1 (NEEDED) Shared library: [libx264.so.164]\n");
        assert_eq!(check_portable("(GLIBC_2.2.5)", &readelf, "2.39"), Err("needs libx264.so.164, which the GPU host may not have".into()));
    }

    #[test]
    fn clip_pairs_match_references_to_distorted_encodes() {
        let dir = std::env::temp_dir().join(format!("xtask-clips-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["h264-1080p-ref.mp4", "h264-1080p-dist.mp4", "hevc10-1080p-ref.mkv", "hevc10-1080p-dist.mkv", "lonely-ref.mp4", "FRAMES"] {
            std::fs::write(dir.join(f), b"x").unwrap();
        }
        let names = |p: Vec<(String, PathBuf, PathBuf)>| p.into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(names(clip_pairs(&dir, None)), ["h264-1080p", "hevc10-1080p"]);
        assert_eq!(clip_pairs(&dir, None)[1].1, dir.join("hevc10-1080p-dist.mkv"));
        assert_eq!(names(clip_pairs(&dir, Some(&["hevc10-1080p".to_string()]))), ["hevc10-1080p"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_vmafx_graph_logs_json_and_metadata() {
        let argv = vmafx_graph("ff", Path::new("/w"), &["-i".into(), "d.mp4".into()], "p-cuda", "n_threads=2", "[0:v]null[d];[1:v]null[r];");
        assert_eq!(argv[8], "[0:v]null[d];[1:v]null[r];[d][r]vmafx=log_fmt=json:log_path=/w/p-cuda.json:n_threads=2,metadata=mode=print:file=/w/p-cuda.meta");
        assert_eq!(&argv[9..], ["-f", "null", "-"]);
    }

    #[test]
    fn a_run_is_timed_logged_and_time_boxed() {
        let log = std::env::temp_dir().join(format!("xtask-run-test-{}.log", std::process::id()));
        let sh = |s: &str| ["sh", "-c", s].map(String::from).to_vec();
        let r = run_logged(&sh("echo oops >&2; exit 3"), &HostEnv::default(), &log, None, true);
        assert_eq!(r.rc, 3);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "# sh -c echo oops >&2; exit 3\noops\n");
        let r = run_logged(&sh("sleep 5"), &HostEnv::default(), &log, Some(Duration::from_millis(200)), false);
        assert_eq!(r.rc, 124);
        assert!(r.seconds < 4.0);
        assert_eq!(time_cell(Some(&Ran { seconds: 2.0, rc: 0 }), 48), "2.00s (24 fps)");
        assert_eq!(time_cell(Some(&Ran { seconds: 2.0, rc: 1 }), 48), "fail");
        assert_eq!(time_cell(None, 48), "-");
        let _ = std::fs::remove_file(&log);
    }
}
