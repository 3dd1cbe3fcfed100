//! The GPU benchmark (issues 5 and 13): vmafx's CUDA lane on device-resident
//! frames against libvmaf 3.2.0's own CUDA backend on the same frames, with
//! the device memory each scoring context takes, the bandwidth each achieves
//! against the device's measured bandwidth, and a roofline of vmafx's
//! kernels from Nsight Compute.
//!
//! `cargo xtask bench-gpu pack` (here): build/xtask/bench-gpu/ holds
//! vmafx-bench-gpu (release), libvmaf 3.2.0's source (what meson needs and
//! the models), the nv-codec-headers of the ffmpeg-src crate with the driver
//! calls libvmaf needs added (`patch_nvh`), tools/bench-gpu/'s C program and
//! bin2c stand-in, and this machine's nasm (libvmaf's x86 assembly, for its
//! CPU extractors in the v1.0.16 rows) when the GPU host lacks one.
//!
//! `build/xtask/bin/xtask bench-gpu run` (there): builds libvmaf with CUDA
//! (meson, ninja, nvcc; device code for this GPU only) and the C program
//! against it, generates the frames, measures the bandwidth, runs both sides
//! per configuration, profiles one 4K frame's kernels with ncu when it is
//! there, and writes results.jsonl and table.md (handed back to $OUT).

use crate::host::{Driver, HostEnv, Lane};
use crate::json::{self, Json};
use crate::pack::{self, Manifest};
use crate::table::{Align, Table};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const PART: &str = "bench-gpu";
/// The work folder on the GPU host (libvmaf's build, frames), kept between
/// calls on a warm machine.
pub const WORK: &str = "build/xtask/bench-gpu-work";
/// WxH:bits:distinct:frames[:model], vmaf_v0.6.1 when no model is named.
/// The v0.6.1 runs are long enough (0.2-0.3 s each with 4 lanes on the
/// H200) that a host's hiccup does not decide the median: the 120- and
/// 240-frame runs of 2026-12-04 took 0.13 to 0.32 s for the same frames on
/// a noisy host.
pub const DEFAULT_CONFIGS: &str = "1920x1080:8:32:960 1920x1080:10:32:960 3840x2160:8:24:480 3840x2160:10:24:480 \
    1920x1080:8:32:120:vmaf_v1.0.16_3d0h 3840x2160:8:24:60:vmaf_v1.0.16_3d0h 3840x2160:10:24:60:vmaf_v1.0.16_3d0h \
    1920x1080:8:32:120:vmaf_v1.0.16_hfr_3d0h";
pub const DEFAULT_MODEL: &str = "vmaf_v0.6.1";
/// What ncu reads per kernel launch for the roofline.
pub const NCU_METRICS: &str = "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum";

#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    pub width: u32,
    pub height: u32,
    pub bits: u32,
    pub distinct: u32,
    pub frames: u32,
    pub model: String,
    /// As written, the key of its rows in results.jsonl.
    pub text: String,
}

impl BenchConfig {
    pub fn parse(text: &str) -> Result<BenchConfig, String> {
        let bad = || format!("configuration {text:?}: WxH:bits:distinct:frames[:model]");
        let parts: Vec<&str> = text.split(':').collect();
        if !(4..=5).contains(&parts.len()) {
            return Err(bad());
        }
        let (w, h) = parts[0].split_once('x').ok_or_else(bad)?;
        let n = |s: &str| s.parse::<u32>().map_err(|_| bad());
        let c = BenchConfig {
            width: n(w)?,
            height: n(h)?,
            bits: n(parts[1])?,
            distinct: n(parts[2])?,
            frames: n(parts[3])?,
            model: parts.get(4).map_or(DEFAULT_MODEL, |m| m).to_string(),
            text: text.to_string(),
        };
        if c.width < 16 || c.height < 16 || !c.width.is_multiple_of(2) || !c.height.is_multiple_of(2) || !(8..=16).contains(&c.bits) || c.distinct == 0 || c.frames == 0 {
            return Err(bad());
        }
        Ok(c)
    }

    /// Scored on libvmaf's CUDA extractors (the v1.0.16 models are not).
    pub fn default_model(&self) -> bool {
        self.model == DEFAULT_MODEL
    }

    fn size(&self) -> String {
        format!("{}x{}", self.width, self.height)
    }

    /// The arguments both programs take for the frames.
    fn frame_args(&self) -> Vec<String> {
        let mut a = vec!["--width".into(), self.width.to_string(), "--height".into(), self.height.to_string(), "--bits".into(), self.bits.to_string()];
        a.extend(["--distinct".into(), self.distinct.to_string(), "--frames".into(), self.frames.to_string()]);
        a
    }
}

/// A list of configurations ("none": only libvmaf's build and the bandwidth).
pub fn parse_configs(text: &str) -> Result<Vec<BenchConfig>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split_whitespace().map(BenchConfig::parse).collect()
}

// --- pack (here) ---------------------------------------------------------------

/// The driver calls libvmaf 3.2.0's CUDA code reaches through ffnvcodec's
/// table that nv-codec-headers 12.1.14.0 (the ffmpeg-src crate's) lacks, with
/// cuda.h's signatures.
const NVH_ADDED: &[(&str, &str)] = &[
    ("cuCtxSynchronize", "void"),
    ("cuCtxGetStreamPriorityRange", "int *leastPriority, int *greatestPriority"),
    ("cuStreamCreateWithPriority", "CUstream *phStream, unsigned int flags, int priority"),
    ("cuMemHostAlloc", "void **pp, size_t bytesize, unsigned int Flags"),
    ("cuMemFreeHost", "void *p"),
    ("cuMemFreeAsync", "CUdeviceptr dptr, CUstream hStream"),
    ("cuLaunchHostFunc", "CUstream hStream, CUhostFn *fn, void *userData"),
];

/// dynlink_cuda.h and dynlink_loader.h with NVH_ADDED's typedefs, table
/// fields and loads; unchanged when already there.
pub fn patch_nvh(cuda_h: &str, loader_h: &str) -> Result<(String, String), String> {
    if cuda_h.contains("tcuMemHostAlloc") {
        return Ok((cuda_h.to_string(), loader_h.to_string()));
    }
    let start = cuda_h.find("typedef CUresult CUDAAPI tcuLaunchKernel(").ok_or("dynlink_cuda.h: no tcuLaunchKernel typedef")?;
    let end = start + cuda_h[start..].find(");\n").ok_or("dynlink_cuda.h: tcuLaunchKernel typedef does not end")? + 3;
    let mut typedefs = String::from("\n/* added for libvmaf 3.2.0 (xtask/src/bench_gpu.rs, patch_nvh) */\ntypedef void CUDAAPI CUhostFn(void *userData);\n");
    for (n, a) in NVH_ADDED {
        typedefs.push_str(&format!("typedef CUresult CUDAAPI t{n}({a});\n"));
    }
    let cuda = format!("{}{typedefs}{}", &cuda_h[..end], &cuda_h[end..]);
    let field = "    tcuLaunchKernel *cuLaunchKernel;\n";
    let load = "    LOAD_SYMBOL(cuStreamCreate, tcuStreamCreate, \"cuStreamCreate\");\n";
    if loader_h.matches(field).count() != 1 || loader_h.matches(load).count() != 1 {
        return Err("dynlink_loader.h: not the layout patch_nvh knows".into());
    }
    let fields: String = NVH_ADDED.iter().map(|(n, _)| format!("    t{n} *{n};\n")).collect();
    let loads: String = NVH_ADDED.iter().map(|(n, _)| format!("    LOAD_SYMBOL({n}, t{n}, \"{n}\");\n")).collect();
    let loader = loader_h.replacen(field, &format!("{field}{fields}"), 1).replacen(load, &format!("{load}{loads}"), 1);
    Ok((cuda, loader))
}

/// Patches the headers in `dir` (an `include/ffnvcodec` folder) in place:
/// `xtask bench-gpu patch-nvh DIR`; gpu-ffmpeg-libvmaf's pack.
pub fn patch_nvh_dir(dir: &Path) -> Result<(), String> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()));
    let (cuda_h, loader_h) = patch_nvh(&read("dynlink_cuda.h")?, &read("dynlink_loader.h")?)?;
    std::fs::write(dir.join("dynlink_cuda.h"), cuda_h).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("dynlink_loader.h"), loader_h).map_err(|e| e.to_string())
}

pub fn run_ok(cmd: &mut Command, what: &str) -> Result<(), String> {
    let st = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({st})"))
    }
}

/// libvmaf 3.2.0's source as vmaf-head-sys vendors it (cargo metadata).
pub fn vendored_vmaf(root: &Path) -> Result<PathBuf, String> {
    let out = Command::new("cargo").args(["metadata", "--format-version", "1"]).current_dir(root).output().map_err(|e| format!("cargo metadata: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let manifest = text
        .split("\"manifest_path\":\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(p, _)| p))
        .find(|p| p.contains("/vmaf-head-sys-"))
        .ok_or("vmaf-head-sys not in cargo metadata")?;
    Ok(Path::new(manifest).parent().unwrap_or(Path::new("/")).join("vendored/vmaf"))
}

/// The ffmpeg-src crate's nv-codec-headers tarball in cargo's registry.
pub fn nv_codec_tarball() -> Result<PathBuf, String> {
    let home = std::env::var_os("CARGO_HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"));
    let mut found = Vec::new();
    for reg in std::fs::read_dir(home.join("registry/src")).map_err(|e| format!("cargo registry: {e}"))?.flatten() {
        for krate in std::fs::read_dir(reg.path()).into_iter().flatten().flatten() {
            let t = krate.path().join("native/nv-codec-headers.tar.xz");
            if krate.file_name().to_string_lossy().starts_with("ffmpeg-src-") && t.exists() {
                found.push(t);
            }
        }
    }
    found.sort();
    found.pop().ok_or_else(|| "nv-codec-headers.tar.xz (crate ffmpeg-src) not in cargo's registry: cargo fetch first".into())
}

/// The files of libvmaf's source the run's meson build needs, and the models.
const LIBVMAF_FILES: &[&str] = &[
    "LICENSE",
    "model/vmaf_v0.6.1.json",
    "model/vmaf_v1.0.16",
    "model/vmaf_v1.0.16_hfr",
    "libvmaf/meson.build",
    "libvmaf/meson_options.txt",
    "libvmaf/include",
    "libvmaf/src",
    "libvmaf/tools/meson.build",
    "libvmaf/doc/meson.build",
    "libvmaf/test/meson.build",
];

pub fn pack(root: &Path, dry_run: bool) -> Result<(), String> {
    let dir = pack::part_dir(root, PART);
    if dry_run {
        println!("build vmafx-bench-gpu (cargo build --release) -> {}/vmafx-bench-gpu", dir.display());
        println!("pack libvmaf 3.2.0's source, the patched nv-codec-headers, tools/bench-gpu/bench_libvmaf_cuda.c, bin2c.py, nasm");
        return Ok(());
    }
    eprintln!("building vmafx-bench-gpu (release)");
    run_ok(Command::new("cargo").args(["build", "--release", "--quiet", "--bin", "vmafx-bench-gpu"]).current_dir(root), "cargo build --release --bin vmafx-bench-gpu")?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut m = Manifest::of_sources(PART, pack::CRATE_SOURCES, "cargo xtask bench-gpu pack");
    pack::copy_stripped(&target.join("release/vmafx-bench-gpu"), &dir, "vmafx-bench-gpu")?;
    m.add_file(&dir, "vmafx-bench-gpu")?;

    let vmaf = vendored_vmaf(root)?;
    run_ok(Command::new("tar").arg("-czf").arg(dir.join("libvmaf-3.2.0.tar.gz")).arg("-C").arg(&vmaf).args(LIBVMAF_FILES), "tar libvmaf")?;
    m.add_file(&dir, "libvmaf-3.2.0.tar.gz")?;

    let tmp = std::env::temp_dir().join(format!("xtask-nvh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    run_ok(Command::new("tar").arg("-xJf").arg(nv_codec_tarball()?).arg("-C").arg(&tmp), "tar -xJf nv-codec-headers")?;
    let top = std::fs::read_dir(&tmp).map_err(|e| e.to_string())?.flatten().map(|e| e.path()).find(|p| p.join("include/ffnvcodec").is_dir()).ok_or("nv-codec-headers: no include/ffnvcodec")?;
    patch_nvh_dir(&top.join("include/ffnvcodec"))?;
    run_ok(Command::new("tar").arg("-czf").arg(dir.join("nv-codec-headers.tar.gz")).arg("-C").arg(&top).arg("include"), "tar nv-codec-headers")?;
    m.add_file(&dir, "nv-codec-headers.tar.gz")?;

    for (from, name) in [("tools/bench-gpu/bench_libvmaf_cuda.c", "bench_libvmaf_cuda.c"), ("tools/bench-gpu/bin2c.py", "bin2c.py")] {
        std::fs::copy(root.join(from), dir.join(name)).map_err(|e| format!("{from}: {e}"))?;
        m.add_file(&dir, name)?;
    }
    // libvmaf's x86 assembly needs nasm; the run puts this copy on PATH
    // only where the host has none (it needs glibc alone).
    if let Some(nasm) = which("nasm") {
        std::fs::copy(&nasm, dir.join("nasm")).map_err(|e| format!("{}: {e}", nasm.display()))?;
        m.add_file(&dir, "nasm")?;
        m.notes.push(format!("nasm from {}", nasm.display()));
    }

    // The C program compiles against the packed headers, CUDA lane included.
    let vinc = tmp.join("vmaf");
    std::fs::create_dir_all(&vinc).map_err(|e| e.to_string())?;
    run_ok(Command::new("tar").arg("-xzf").arg(dir.join("libvmaf-3.2.0.tar.gz")).arg("-C").arg(&vinc).arg("libvmaf/include"), "tar -xzf libvmaf include")?;
    run_ok(
        Command::new("gcc").args(C_FLAGS).arg("-fsyntax-only").arg("-I").arg(vinc.join("libvmaf/include")).arg("-I").arg(top.join("include")).arg(dir.join("bench_libvmaf_cuda.c")),
        "gcc -fsyntax-only bench_libvmaf_cuda.c",
    )?;
    let _ = std::fs::remove_dir_all(&tmp);
    // The bandwidth kernels compile with NVRTC, where scripts/gpu-ci-deps
    // put one (no GPU needed).
    let nvrtc = root.join("build/gpu-deps/nvrtc/nvidia/cu13/lib/libnvrtc.so.13");
    if nvrtc.exists() {
        run_ok(Command::new(dir.join("vmafx-bench-gpu")).arg("compile").env("VMAFX_KERNEL_CACHE", "off").env("VMAFX_NVRTC_LIB", &nvrtc), "vmafx-bench-gpu compile (the bandwidth kernels, NVRTC)")?;
    }
    pack::write(&dir, &m)?;
    crate::twins::pack_self(root)?;
    eprintln!("{}", m.summary());
    crate::twins::check_carry_size(root)
}

const C_FLAGS: &[&str] = &["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wall"];

pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.is_file()))
}

// --- run (the GPU host) -------------------------------------------------------------

pub struct RunOptions {
    pub configs: Vec<BenchConfig>,
    pub repeat: u32,
    /// vmafx's worker threads on the GPU (each a lane with its own stream).
    pub threads: u32,
    /// libvmaf's threads on its CPU extractors (v1.0.16 rows); 0: every core.
    pub libvmaf_threads: u32,
    /// Later configurations are skipped past this many seconds.
    pub deadline_s: u64,
    /// vmafx lanes timed: cuda, and hip through the stand-in.
    pub devices: Vec<String>,
    pub roofline: bool,
    pub dry_run: bool,
}

/// One RESULT line of a step, tagged with its configuration ("-" for the
/// bandwidth) and what ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub config: String,
    pub tag: String,
    pub result: Json,
}

impl Record {
    pub fn render(&self) -> String {
        format!("{{\"config\": {}, \"tag\": {}, \"result\": {}}}", json::quote(&self.config), json::quote(&self.tag), self.result.render())
    }
}

/// The last `RESULT {json}` line of a step's output, or an error object
/// saying why there is none.
pub fn result_of(log: &str, why_none: &str) -> Json {
    match log.lines().rev().find_map(|l| l.strip_prefix("RESULT ")) {
        Some(text) => Json::parse(text).unwrap_or_else(|e| error_json(&format!("RESULT line unreadable: {e}"))),
        None => error_json(why_none),
    }
}

fn error_json(e: &str) -> Json {
    Json::Obj(vec![("error".into(), Json::Str(e.into()))])
}

struct Bench<'a> {
    driver: Driver,
    /// The C program, or why there is none.
    cbench: Result<String, String>,
    records: Vec<Record>,
    work: PathBuf,
    started: std::time::Instant,
    o: &'a RunOptions,
    gpu_csv: String,
}

impl Bench<'_> {
    /// Runs `argv` (time-boxed) as step `name`, keeps its RESULT line.
    fn result(&mut self, config: &str, tag: &str, argv: Vec<String>, extra: &[(&str, &str)]) -> Json {
        let left = (self.o.deadline_s + 60).saturating_sub(self.started.elapsed().as_secs()).clamp(10, 180);
        let mut full = vec!["timeout".to_string(), left.to_string()];
        full.extend(argv);
        let name = if config == "-" { tag.to_string() } else { format!("{}-{tag}", config.replace([':', 'x'], "_")) };
        let log = self.driver.step(&name, &full, extra).log.clone();
        let result = if self.o.dry_run {
            Json::Obj(Vec::new())
        } else {
            result_of(&std::fs::read_to_string(&log).unwrap_or_default(), &format!("no RESULT line (killed after {left} s, or crashed: see {name}.log)"))
        };
        let mut brief = result.clone();
        if let Json::Obj(m) = &mut brief {
            m.retain(|(k, _)| !matches!(k.as_str(), "vmaf_frames" | "runs_s" | "runs_short_s" | "vmaf_first"));
        }
        self.driver.note(&format!("  {tag}: {}", brief.render()));
        self.records.push(Record { config: config.into(), tag: tag.into(), result: result.clone() });
        self.save();
        result
    }

    /// results.jsonl and table.md as they are, into the logs (and $OUT):
    /// a run cut short still hands back what it measured.
    fn save(&self) {
        if self.o.dry_run {
            return;
        }
        let lines: String = self.records.iter().map(|r| r.render() + "\n").collect();
        let _ = std::fs::write(self.driver.logs.join("results.jsonl"), lines);
        let _ = std::fs::write(self.driver.logs.join("table.md"), tabulate(&self.records, &self.gpu_csv, self.o));
        let _ = std::fs::write(self.driver.logs.join("gpu.csv"), &self.gpu_csv);
        self.driver.hand_back(&["summary.log", "results.jsonl", "table.md"]);
    }

    /// The C program with `args`, or its absence recorded as the result.
    fn libvmaf(&mut self, config: &str, tag: &str, args: Vec<String>) -> Json {
        match self.cbench.clone() {
            Ok(c) => self.result(config, tag, [vec![c], args].concat(), &[]),
            Err(e) => {
                let r = error_json(&format!("libvmaf with CUDA did not build: {e}"));
                self.records.push(Record { config: config.into(), tag: tag.into(), result: r.clone() });
                r
            }
        }
    }

    fn past_deadline(&self) -> bool {
        self.started.elapsed().as_secs() > self.o.deadline_s
    }
}

/// The gencode line libvmaf's meson.build gets for device code of `arch`
/// only (the H200: sm_90, one of upstream's list; it saves compile time).
pub fn meson_with_arch(meson_build: &str, arch: &str) -> Result<String, String> {
    let anchor = "    message('CUDA gencode = @0@'.format(gencode))";
    if meson_build.matches(anchor).count() != 1 {
        return Err("libvmaf/src/meson.build: the gencode message not found".into());
    }
    Ok(meson_build.replacen(
        anchor,
        &format!("    if get_option('enable_nvcc')\n        gencode = ['--fatbin', '-gencode=arch=compute_{arch},code=sm_{arch}']\n    endif\n{anchor}"),
        1,
    ))
}

/// Builds libvmaf with CUDA from the pack and the C program against it, in
/// the work folder (kept: a second run on a warm host reuses it). The
/// program's path, or why not.
fn build_libvmaf(b: &mut Bench, packed: &Path, arch: &str) -> Result<PathBuf, String> {
    let work = b.work.clone();
    let cbench = work.join("bench_libvmaf_cuda");
    let stamp_file = work.join("libvmaf.stamp");
    let m = pack::open(packed).ok();
    let stamp = format!(
        "{}-{arch}",
        m.as_ref().map(|m| m.files.iter().filter(|f| f.path.ends_with(".tar.gz") || f.path.ends_with(".c")).map(|f| format!("{:016x}", f.fnv64)).collect::<Vec<_>>().join("-")).unwrap_or_default()
    );
    if cbench.exists() && std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp.as_str()) {
        b.driver.note(&format!("libvmaf: reusing {}", cbench.display()));
        return Ok(cbench);
    }
    let _ = std::fs::remove_file(&stamp_file);
    let _ = std::fs::remove_file(&cbench);
    let (vmaf, nvh) = (work.join("vmaf"), work.join("nvh"));
    let _ = std::fs::remove_dir_all(&vmaf);
    let _ = std::fs::remove_dir_all(&nvh);
    for (d, t) in [(&vmaf, "libvmaf-3.2.0.tar.gz"), (&nvh, "nv-codec-headers.tar.gz")] {
        std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
        run_ok(Command::new("tar").arg("-xzf").arg(packed.join(t)).arg("-C").arg(d), t)?;
    }
    if !arch.is_empty() {
        let mb = vmaf.join("libvmaf/src/meson.build");
        let text = std::fs::read_to_string(&mb).map_err(|e| e.to_string())?;
        std::fs::write(&mb, meson_with_arch(&text, arch)?).map_err(|e| e.to_string())?;
    }
    let asm = which("nasm").is_some();
    b.driver.note(&format!("libvmaf: configuring with CUDA{}, CPU asm {asm}", if arch.is_empty() { String::new() } else { format!(" (device code for sm_{arch} only)") }));
    let cpath = nvh.join("include").display().to_string();
    let src = vmaf.join("libvmaf").display().to_string();
    let s = |v: &str| v.to_string();
    let setup = vec![
        s("meson"), s("setup"), format!("{src}/build"), src.clone(), s("--buildtype=release"), s("--default-library=static"),
        s("-Denable_cuda=true"), s("-Denable_nvcc=true"), s("-Denable_tests=false"), s("-Denable_docs=false"),
        s("-Denable_tools=false"), format!("-Denable_asm={asm}"), s("-Dbuilt_in_models=false"),
    ];
    // nvcc is handed -I ../src relative to the build folder: meson runs
    // ninja there, so the build folder must be libvmaf/build.
    if !b.driver.step("libvmaf-meson", &setup, &[("CPATH", &cpath)]).exit_ok {
        return Err("meson setup failed (libvmaf-meson.log)".into());
    }
    let jobs = std::thread::available_parallelism().map_or(4, |n| n.get()).to_string();
    let ninja = vec![s("timeout"), s("420"), s("ninja"), s("-C"), format!("{src}/build"), s("-j"), jobs, s("src/libvmaf.a")];
    if !b.driver.step("libvmaf-ninja", &ninja, &[("CPATH", &cpath)]).exit_ok {
        return Err("ninja failed (libvmaf-ninja.log)".into());
    }
    let mut cc: Vec<String> = vec![s("gcc")];
    cc.extend(C_FLAGS.iter().map(|f| s(f)));
    cc.extend([s("-I"), format!("{src}/include"), s("-I"), cpath.clone(), s("-o"), cbench.display().to_string()]);
    cc.extend([packed.join("bench_libvmaf_cuda.c").display().to_string(), format!("{src}/build/src/libvmaf.a"), s("-lstdc++"), s("-lm"), s("-lpthread"), s("-ldl")]);
    if !b.driver.step("cbench-cc", &cc, &[]).exit_ok {
        return Err("the C program did not compile (cbench-cc.log)".into());
    }
    let _ = std::fs::write(&stamp_file, stamp);
    Ok(cbench)
}

/// The model's JSON in the unpacked libvmaf source.
fn model_json(work: &Path, model: &str) -> Option<PathBuf> {
    fn find(dir: &Path, name: &str) -> Option<PathBuf> {
        for e in std::fs::read_dir(dir).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                if let Some(f) = find(&p, name) {
                    return Some(f);
                }
            } else if p.file_name().is_some_and(|f| f == name) {
                return Some(p);
            }
        }
        None
    }
    find(&work.join("vmaf/model"), &format!("{model}.json"))
}

pub fn run(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let packed = pack::part_dir(root, PART);
    let manifest = match pack::open(&packed) {
        Ok(m) => Some(m),
        Err(e) if o.dry_run => {
            println!("(not packed here: {e})");
            None
        }
        Err(e) => return Err(e),
    };
    let work = root.join(WORK);
    let hip = o.devices.iter().any(|d| d == "hip");
    let standin = hip.then(|| pack::part_dir(root, "hip-standin"));
    let mut env = HostEnv::discover(if hip { Lane::Hip } else { Lane::Cuda }, root, standin.as_deref());
    // The toolkit's nvcc and bin2c first; the packed nasm and bin2c
    // stand-in only where the host has none.
    let tools = work.join("tools");
    let mut path = vec!["/usr/local/cuda/bin".to_string()];
    path.extend(std::env::var("PATH").ok());
    path.push(tools.display().to_string());
    env.set("PATH", path.join(":"));
    env.set("VMAFX_KERNEL_CACHE", work.join("kernel-cache").display().to_string());
    let mut driver = Driver::new(root, env, o.dry_run);
    driver.echo = false;
    if !o.dry_run {
        std::fs::create_dir_all(work.join("frames")).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&tools).map_err(|e| e.to_string())?;
        for (from, to) in [("nasm", "nasm"), ("bin2c.py", "bin2c")] {
            if packed.join(from).exists() {
                let _ = std::fs::copy(packed.join(from), tools.join(to));
                let _ = Command::new("chmod").arg("+x").arg(tools.join(to)).status();
            }
        }
    }
    let mut b = Bench { driver, cbench: Err("not built yet".into()), records: Vec::new(), work: work.clone(), started: std::time::Instant::now(), o, gpu_csv: String::new() };
    if let Some(m) = &manifest {
        b.driver.note(&format!("pack {}", m.summary()));
    }
    b.driver.note(&format!("environment: {}", b.driver.env.describe()));
    let smi = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,compute_cap", "--format=csv"].map(String::from).to_vec();
    let log = b.driver.step("gpu", &smi, &[]).log.clone();
    b.gpu_csv = std::fs::read_to_string(&log).unwrap_or_default();
    let arch = b.gpu_csv.lines().nth(1).and_then(|l| l.rsplit(',').next()).map(|c| c.trim().replace('.', "")).filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_digit())).unwrap_or_default();
    b.driver.step("toolchain", &["sh", "-c", "nvcc --version | tail -n1; meson --version; ninja --version; gcc --version | head -n1; command -v nasm; command -v ncu"].map(String::from), &[]);

    let cbench = if o.dry_run {
        Ok(work.join("bench_libvmaf_cuda"))
    } else {
        build_libvmaf(&mut b, &packed, &arch)
    };
    // Without libvmaf the vmafx side still runs; libvmaf's columns say why not.
    b.cbench = cbench.map(|c| c.display().to_string());
    if let Err(e) = &b.cbench {
        b.driver.note(&format!("libvmaf: NOT AVAILABLE: {e}"));
    }
    let bin = packed.join("vmafx-bench-gpu").display().to_string();
    let s = |v: &str| v.to_string();
    b.result("-", "bandwidth-vmafx", vec![bin.clone(), s("bandwidth"), s("--mib"), s("2048"), s("--iters"), s("20")], &[]);
    b.libvmaf("-", "bandwidth-memcpy", vec![s("--bandwidth"), s("--mib"), s("2048"), s("--iters"), s("20")]);

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let lthreads = if o.libvmaf_threads == 0 { cores } else { o.libvmaf_threads }.to_string();
    for c in &o.configs {
        if b.past_deadline() {
            b.driver.note(&format!("deadline ({} s): skipping {}", o.deadline_s, c.text));
            b.records.push(Record { config: c.text.clone(), tag: "skipped".into(), result: Json::Obj(Vec::new()) });
            continue;
        }
        let d = work.join("frames").join(format!("{}-{}", c.size(), c.bits)).display().to_string();
        let model = model_json(&work, &c.model).map(|p| p.display().to_string()).unwrap_or_else(|| format!("{}.json", c.model));
        let frames = c.frame_args();
        let gen = vec![bin.clone(), s("gen"), s("--width"), c.width.to_string(), s("--height"), c.height.to_string(), s("--bits"), c.bits.to_string(), s("--distinct"), c.distinct.to_string(), s("--out"), d.clone()];
        b.result(&c.text, "gen", gen, &[]);
        let vmafx = |device: &str| {
            let mut a = vec![bin.clone(), s("score"), s("--model"), c.model.clone(), s("--device"), s(device), s("--threads"), o.threads.to_string(), s("--dir"), d.clone()];
            a.extend(frames.clone());
            a.extend([s("--repeat"), o.repeat.to_string(), s("--check")]);
            a
        };
        let first = b.result(&c.text, "vmafx-cuda", vmafx("cuda"), &[]);
        if first.has("error") {
            let again = b.result(&c.text, "vmafx-cuda-stream", vmafx("cuda-stream"), &[]);
            if again.has("error") {
                let mut a = vec![bin.clone(), s("score"), s("--model"), c.model.clone(), s("--device"), s("cpu"), s("--dir"), d.clone()];
                a.extend(frames.clone());
                a.extend([s("--repeat"), s("1")]);
                b.result(&c.text, "vmafx-cpu", a, &[]);
            }
        }
        for dev in o.devices.iter().filter(|d| *d != "cuda") {
            b.result(&c.text, &format!("vmafx-{dev}"), vmafx(dev), &[]);
        }
        let libvmaf = |extra: &[&str], frames: &[String]| {
            let mut a: Vec<String> = extra.iter().map(|x| s(x)).collect();
            a.extend([s("--ref"), format!("{d}/ref.yuv"), s("--dis"), format!("{d}/dis.yuv")]);
            a.extend(frames.iter().cloned());
            a.extend([s("--model"), model.clone()]);
            a
        };
        let repeat = [s("--repeat"), o.repeat.to_string()];
        let with_repeat = |f: &[String]| [f, &repeat[..]].concat();
        b.libvmaf(&c.text, "libvmaf-cuda", libvmaf(&[], &with_repeat(&frames)));
        // The first few frames, every core, once: the values check.
        let few = |n: u32| {
            let n = c.frames.min(n).to_string();
            vec![s("--width"), c.width.to_string(), s("--height"), c.height.to_string(), s("--bits"), c.bits.to_string(), s("--distinct"), c.distinct.to_string(), s("--frames"), n, s("--repeat"), s("1")]
        };
        if !c.default_model() {
            // libvmaf refuses this model on its CUDA extractors (the row
            // above records how); what a libvmaf user with CUDA frames can do
            // instead, on its CPU extractors (bench_libvmaf_cuda.c's header).
            b.libvmaf(&c.text, "libvmaf-cuda-gpumask", libvmaf(&["--gpumask", "--threads", &lthreads], &with_repeat(&frames)));
            b.libvmaf(&c.text, "libvmaf-cpu-download", libvmaf(&["--download", "--threads", &lthreads], &with_repeat(&frames)));
            b.libvmaf(&c.text, "libvmaf-cpu-zero-chroma", libvmaf(&["--cpu", "--zero-chroma", "--threads", &cores.to_string(), "--no-warmup"], &few(16)));
        } else {
            // Frames 0-2 (4 scored, so frame 2's motion has its next frame).
            b.libvmaf(&c.text, "libvmaf-cpu", libvmaf(&["--cpu", "--threads", &cores.to_string(), "--no-warmup"], &few(4)));
        }
        if !o.dry_run {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    if o.roofline && !b.past_deadline() {
        roofline_step(&mut b, &bin);
    }
    if o.dry_run {
        return Ok(true);
    }
    let table = tabulate(&b.records, &b.gpu_csv, o);
    print!("{table}");
    b.save();
    b.driver.note("done");
    let values_ok = b.records.iter().all(|r| r.result.str("check").is_none_or(|c| c.starts_with("equal")));
    Ok(values_ok)
}

// --- roofline (Nsight Compute) ---------------------------------------------------

/// Frames the profiled run scores after its warm-up, and the launches
/// skipped (the warm-up's 8 frames, about 20 launches each at vmaf_v0.6.1)
/// and profiled (about five frames' worth).
const ROOFLINE_FRAMES: u32 = 12;
const ROOFLINE_SKIP: u32 = 200;
const ROOFLINE_COUNT: u32 = 100;

fn roofline_step(b: &mut Bench, bin: &str) {
    let ncu = which("ncu").or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/ncu")).filter(|p| p.exists()));
    let Some(ncu) = ncu else {
        b.driver.note("roofline: no ncu on this host (Nsight Compute): skipped");
        return;
    };
    let s = |v: &str| v.to_string();
    let d = b.work.join("frames/roofline-3840x2160-8").display().to_string();
    b.result("roofline", "gen", vec![s(bin), s("gen"), s("--width"), s("3840"), s("--height"), s("2160"), s("--bits"), s("8"), s("--distinct"), s("8"), s("--out"), d.clone()], &[]);
    let argv = vec![
        s("timeout"), s("240"), ncu.display().to_string(), s("--csv"), s("--print-units"), s("base"), s("--clock-control"), s("none"),
        s("--metrics"), s(NCU_METRICS), s("--launch-skip"), ROOFLINE_SKIP.to_string(), s("--launch-count"), ROOFLINE_COUNT.to_string(),
        s(bin), s("score"), s("--device"), s("cuda"), s("--threads"), s("0"), s("--dir"), d.clone(), s("--width"), s("3840"), s("--height"), s("2160"),
        s("--bits"), s("8"), s("--distinct"), s("8"), s("--frames"), ROOFLINE_FRAMES.to_string(), s("--repeat"), s("1"),
    ];
    let log = b.driver.step("roofline-ncu", &argv, &[]).log.clone();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let launches = parse_ncu_csv(&text);
    b.driver.note(&format!("roofline: {} launches profiled", launches.len()));
    let rows: Vec<Json> = launches
        .iter()
        .map(|l| {
            Json::Obj(vec![
                ("kernel".into(), Json::Str(l.kernel.clone())),
                ("grid".into(), Json::Str(l.grid.clone())),
                ("ns".into(), Json::Num(l.ns)),
                ("dram_read".into(), Json::Num(l.dram_read)),
                ("dram_write".into(), Json::Num(l.dram_write)),
                ("l2".into(), Json::Num(l.l2)),
            ])
        })
        .collect();
    b.records.push(Record { config: "roofline".into(), tag: "ncu".into(), result: Json::Obj(vec![("launches".into(), Json::Arr(rows))]) });
    let _ = std::fs::remove_dir_all(&d);
    b.save();
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Launch {
    pub kernel: String,
    pub grid: String,
    pub ns: f64,
    pub dram_read: f64,
    pub dram_write: f64,
    pub l2: f64,
}

/// One CSV line's fields (ncu quotes every field; commas inside quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// ncu's `--csv --print-units base` output (one row per launch and metric,
/// among the program's own lines): per launch, in launch order, its kernel
/// (the name without parameters), grid, time in ns and bytes.
pub fn parse_ncu_csv(text: &str) -> Vec<Launch> {
    let mut header: Option<Vec<String>> = None;
    let mut launches: Vec<(String, Launch)> = Vec::new();
    for line in text.lines() {
        if !line.starts_with('"') {
            continue;
        }
        let f = csv_fields(line);
        if f.first().is_some_and(|x| x == "ID") {
            header = Some(f);
            continue;
        }
        let Some(h) = &header else { continue };
        let col = |name: &str| h.iter().position(|x| x == name).and_then(|i| f.get(i)).map(String::as_str).unwrap_or("");
        let id = col("ID").to_string();
        let value: f64 = col("Metric Value").replace(',', "").parse().unwrap_or(f64::NAN);
        let unit = col("Metric Unit");
        let scale = match unit {
            "usecond" => 1e3,
            "msecond" => 1e6,
            "second" => 1e9,
            "Kbyte" => 1e3,
            "Mbyte" => 1e6,
            "Gbyte" => 1e9,
            _ => 1.0,
        };
        if launches.last().is_none_or(|(i, _)| *i != id) {
            let kernel = col("Kernel Name");
            let kernel = kernel.split('(').next().unwrap_or(kernel).trim().to_string();
            launches.push((id.clone(), Launch { kernel, grid: col("Grid Size").to_string(), ..Launch::default() }));
        }
        let l = &mut launches.last_mut().expect("pushed above").1;
        match col("Metric Name") {
            "gpu__time_duration.sum" => l.ns = value * scale,
            "dram__bytes_read.sum" => l.dram_read = value * scale,
            "dram__bytes_write.sum" => l.dram_write = value * scale,
            "lts__t_bytes.sum" => l.l2 = value * scale,
            _ => {}
        }
    }
    launches.into_iter().map(|(_, l)| l).collect()
}

/// Launches grouped by kernel and grid (each group runs once per frame at
/// a fixed size), in order of first launch: (kernel, grid, count, mean ns,
/// mean DRAM read, write, L2 bytes).
pub fn group_launches(launches: &[Launch]) -> Vec<(String, String, usize, f64, f64, f64, f64)> {
    let mut groups: Vec<(String, String, Vec<&Launch>)> = Vec::new();
    for l in launches {
        match groups.iter_mut().find(|g| g.0 == l.kernel && g.1 == l.grid) {
            Some(g) => g.2.push(l),
            None => groups.push((l.kernel.clone(), l.grid.clone(), vec![l])),
        }
    }
    groups
        .into_iter()
        .map(|(k, g, v)| {
            let n = v.len() as f64;
            let mean = |f: fn(&Launch) -> f64| v.iter().map(|l| f(l)).sum::<f64>() / n;
            (k, g, v.len(), mean(|l| l.ns), mean(|l| l.dram_read), mean(|l| l.dram_write), mean(|l| l.l2))
        })
        .collect()
}

/// The roofline table: each kernel's DRAM bytes (ncu) against its time and
/// the read bandwidth measured in the same run.
pub fn roofline_table(launches: &[Launch], read_gbs: Option<f64>) -> String {
    let mut t = Table::new(&[
        ("kernel", Align::Left),
        ("grid", Align::Left),
        ("launches", Align::Right),
        ("µs", Align::Right),
        ("DRAM read MB", Align::Right),
        ("DRAM write MB", Align::Right),
        ("L2 MB", Align::Right),
        ("DRAM GB/s", Align::Right),
        ("% of read BW", Align::Right),
        ("L2 GB/s", Align::Right),
    ]);
    let groups = group_launches(launches);
    let (mut ns, mut dram, mut l2) = (0.0, 0.0, 0.0);
    for (k, g, n, t_ns, r, w, c) in &groups {
        let gbs = (r + w) / t_ns;
        t.row(&[k.clone(), g.clone(), n.to_string(), f(t_ns / 1e3, 1), f(r / 1e6, 2), f(w / 1e6, 2), f(c / 1e6, 2), f(gbs, 0), pct(gbs, read_gbs), f(c / t_ns, 0)]);
        ns += t_ns;
        dram += r + w;
        l2 += c;
    }
    if !groups.is_empty() {
        let gbs = dram / ns;
        t.row(&[s("one frame (each group once)"), s(""), s(""), f(ns / 1e3, 1), f(dram / 1e6, 2), s(""), f(l2 / 1e6, 2), f(gbs, 0), pct(gbs, read_gbs), f(l2 / ns, 0)]);
    }
    t.render_markdown()
}

fn s(v: &str) -> String {
    v.to_string()
}

fn f(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "n/a".into()
    }
}

fn pct(gbs: f64, read: Option<f64>) -> String {
    read.filter(|r| *r > 0.0).map_or("n/a".into(), |r| f(100.0 * gbs / r, 1))
}

fn mib(v: Option<f64>) -> String {
    v.filter(|b| *b >= 0.0).map_or("n/a".into(), |b| f(b / 1048576.0, 1))
}

// --- tables ------------------------------------------------------------------------

fn first<'a>(records: &'a [Record], config: &str, tag: &str) -> Option<&'a Json> {
    records.iter().find(|r| r.config == config && r.tag == tag).map(|r| &r.result)
}

/// How far apart (largest / smallest) one lane's timed runs of a
/// configuration may be before its row is flagged: a host's hiccup, or a
/// cost that varies from run to run (each run starts a fresh context).
pub const NOISY_SPREAD: f64 = 1.25;

/// A note when `r`'s timed runs of N frames (`runs_s`) are more than
/// [`NOISY_SPREAD`] apart: the median then says little, nor the ratio
/// built on it.
pub fn spread_note(r: &Json) -> Option<String> {
    let runs = r.nums("runs_s")?;
    let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = runs.iter().copied().fold(0.0, f64::max);
    (runs.len() > 1 && lo > 0.0 && hi / lo > NOISY_SPREAD).then(|| {
        format!(
            "its {} timed runs took {} to {} s ({}x apart): the median says little, so this row's fps and ratio are not figures to quote (rerun; look for what varies between runs)",
            runs.len(),
            f(lo, 3),
            f(hi, 3),
            f(hi / lo, 2)
        )
    })
}

/// "yes, 0 diff" / "**NO**" / "n/a" from a vmafx check field.
fn check_cell(r: &Json) -> String {
    match r.str("check") {
        None => "n/a".into(),
        Some(c) if c.starts_with("equal") => "yes, 0 diff".into(),
        Some(_) => "**NO**".into(),
    }
}

/// Every frame's score of two results equal as bits (the first `upto`).
fn same_frames(a: &Json, b: &Json, upto: Option<usize>) -> String {
    let (Some(fa), Some(fb)) = (a.nums("vmaf_frames"), b.nums("vmaf_frames")) else { return "n/a".into() };
    let n = upto.unwrap_or(fa.len().max(fb.len()));
    if n == 0 || fa.len() < n || fb.len() < n {
        return "n/a".into();
    }
    let diff: Vec<usize> = (0..n).filter(|&i| fa[i].to_bits() != fb[i].to_bits()).collect();
    match diff.first() {
        None => format!("yes, {n} frames"),
        Some(d) => format!("**NO**: {} of {n} frames differ (first: frame {d})", diff.len()),
    }
}

/// The markdown of a run: the v0.6.1 table (fps, bandwidth, ratio, values),
/// the fixed costs, the device memory per context, other lanes, the
/// v1.0.16 table and the roofline.
pub fn tabulate(records: &[Record], gpu_csv: &str, o: &RunOptions) -> String {
    let empty = Json::Obj(Vec::new());
    let get = |c: &str, t: &str| first(records, c, t).unwrap_or(&empty);
    let bw = get("-", "bandwidth-vmafx");
    let read_gbs = bw.num("read_gbs");
    let mut out = String::from("### GPU benchmark: vmafx CUDA vs libvmaf 3.2.0 CUDA, device-resident frames\n\n");
    let gpu: Vec<&str> = gpu_csv.lines().filter(|l| !l.trim().is_empty()).collect();
    if gpu.len() > 1 {
        out += &format!("- GPU: {} ({})\n", gpu[1], gpu[0]);
    }
    out += &format!(
        "- device memory bandwidth measured here: read kernel {} GB/s, copy kernel {} GB/s (read + write), cuMemcpyDtoD {} GB/s (read + write); % BW = achieved / read-kernel bandwidth\n",
        read_gbs.map_or("n/a".into(), |v| f(v, 0)),
        bw.num("copy_gbs").map_or("n/a".into(), |v| f(v, 0)),
        get("-", "bandwidth-memcpy").num("memcpy_dtod_gbs").map_or("n/a".into(), |v| f(v, 0))
    );
    out += "- bytes per frame = the minimum each frame must read: 3 luma planes (reference, distorted, previous reference) x width x height x bytes per sample\n";
    out += &format!("- vmafx: a scoring context on the GPU with {} worker threads (0: one lane on the caller's thread; each worker is a lane with its own stream)\n", o.threads);
    out += "- fps: steady rate, (N - N/5) / (median time of N frames - median time of N/5 frames), each run on a fresh context; frames in device memory before timing\n\n";
    let mut notes: Vec<String> = Vec::new();
    for tag in ["bandwidth-vmafx", "bandwidth-memcpy"] {
        if let Some(e) = get("-", tag).str("error") {
            notes.push(format!("{tag}: {e}"));
        }
    }
    let configs: Vec<BenchConfig> = {
        let mut seen: Vec<String> = Vec::new();
        for r in records {
            if r.config != "-" && r.config != "roofline" && !seen.contains(&r.config) {
                seen.push(r.config.clone());
            }
        }
        seen.iter().filter_map(|c| BenchConfig::parse(c).ok()).collect()
    };
    let side = |r: &Json| -> Vec<String> {
        match r.num("fps") {
            None => vec!["n/a".into(); 4],
            Some(fps) => {
                let gbs = r.num("gbs").unwrap_or(f64::NAN);
                vec![f(fps, 1), f(r.num("ms_per_frame").unwrap_or(f64::NAN), 3), f(gbs, 1), pct(gbs, read_gbs)]
            }
        }
    };
    let mut main = Table::new(&[
        ("size", Align::Left), ("bits", Align::Right), ("frames", Align::Right),
        ("vmafx CUDA fps", Align::Right), ("ms/frame", Align::Right), ("GB/s", Align::Right), ("% BW", Align::Right),
        ("libvmaf CUDA fps", Align::Right), ("ms/frame", Align::Right), ("GB/s", Align::Right), ("% BW", Align::Right),
        ("vmafx / libvmaf", Align::Right), ("vmafx CPU fps (threads)", Align::Right), ("VMAF vmafx", Align::Right), ("VMAF libvmaf CUDA", Align::Right),
        ("vmafx CUDA = CPU", Align::Left), ("libvmaf CPU = vmafx", Align::Left),
    ]);
    let mut fixed = Table::new(&[
        ("size", Align::Left), ("bits", Align::Right), ("vmafx CUDA fps whole run", Align::Right), ("vmafx fixed s", Align::Right), ("vmafx set-up s", Align::Right),
        ("libvmaf CUDA fps whole run", Align::Right), ("libvmaf fixed s", Align::Right), ("libvmaf set-up s", Align::Right),
    ]);
    let mut memory = Table::new(&[
        ("size", Align::Left), ("bits", Align::Right), ("model", Align::Left), ("frames N", Align::Right),
        ("vmafx MiB after set-up", Align::Right), ("peak, N frames", Align::Right), ("peak, N/5", Align::Right), ("growth N/5 to N", Align::Right),
        ("libvmaf", Align::Left), ("MiB after set-up", Align::Right), ("at end, N frames", Align::Right), ("at end, N/5", Align::Right), ("growth N/5 to N", Align::Right),
    ]);
    let mut models = Table::new(&[
        ("size", Align::Left), ("bits", Align::Right), ("model", Align::Left), ("frames", Align::Right), ("vmafx CUDA fps", Align::Right), ("ms/frame", Align::Right),
        ("vmafx CPU fps (threads)", Align::Right), ("libvmaf CUDA", Align::Left), ("libvmaf gpumask fps", Align::Right), ("ms/frame", Align::Right),
        ("libvmaf download fps", Align::Right), ("ms/frame", Align::Right), ("vmafx CUDA / gpumask", Align::Right), ("vmafx CUDA / download", Align::Right),
        ("vmafx CUDA = CPU", Align::Left), ("download = vmafx", Align::Left), ("gpumask = vmafx", Align::Left), ("gpumask = CPU, zero chroma", Align::Left),
    ]);
    let mut others = Table::new(&[
        ("size", Align::Left), ("bits", Align::Right), ("lane", Align::Left), ("fps", Align::Right), ("ms/frame", Align::Right), ("GB/s", Align::Right), ("% BW", Align::Right),
        ("/ vmafx CUDA", Align::Right), ("= CPU", Align::Left),
    ]);
    let ratio = |a: &Json, b: &Json| match (a.num("fps"), b.num("fps")) {
        (Some(x), Some(y)) if y > 0.0 => f(x / y, 2),
        _ => "n/a".into(),
    };
    let cpu_fps = |a: &Json, cpu: &Json, frames: u32| match (a.num("check_cpu_s"), cpu.num("fps")) {
        (Some(t), _) if t > 0.0 => format!("{} ({})", f(frames as f64 / t, 1), a.num("check_cpu_threads").map_or("?".into(), |n| n.to_string())),
        (_, Some(fps)) => format!("{} ({})", f(fps, 1), cpu.str("lane").and_then(|l| l.rsplit("-t").next()).unwrap_or("?")),
        _ => "n/a".into(),
    };
    for c in &configs {
        let (size, bits) = (c.size(), c.bits.to_string());
        if first(records, &c.text, "skipped").is_some() {
            notes.push(format!("{size} {bits}-bit {}: skipped (deadline)", c.model));
            continue;
        }
        let mut a = get(&c.text, "vmafx-cuda");
        let mut a_tag = "vmafx CUDA";
        if let Some(stream) = first(records, &c.text, "vmafx-cuda-stream") {
            notes.push(format!("{size} {bits}-bit, vmafx CUDA (DeviceChoice::Gpu): {}; retried on DeviceChoice::CudaStream", a.str("error").unwrap_or("?")));
            if !stream.has("error") {
                a = stream;
                a_tag = "vmafx CUDA (CudaStream)";
            }
        }
        let cpu = get(&c.text, "vmafx-cpu");
        for (tag, r) in [(a_tag, a), ("vmafx CPU", cpu), ("gen", get(&c.text, "gen"))] {
            if let Some(e) = r.str("error") {
                notes.push(format!("{size} {bits}-bit {}, {tag}: {e}", c.model));
            }
        }
        if let Some(ch) = a.str("check").filter(|ch| !ch.starts_with("equal")) {
            notes.push(format!("{size} {bits}-bit {}: {ch}", c.model));
        }
        let libvmaf_mem = if c.default_model() { ("CUDA", get(&c.text, "libvmaf-cuda")) } else { ("gpumask", get(&c.text, "libvmaf-cuda-gpumask")) };
        let growth = |r: &Json| match (r.num("device_bytes_end"), r.num("device_bytes_end_short")) {
            (Some(e), Some(s)) if e >= 0.0 && s >= 0.0 => f((e - s) / 1048576.0, 1),
            _ => "n/a".into(),
        };
        memory.row(&[
            size.clone(), bits.clone(), c.model.clone(), c.frames.to_string(),
            mib(a.num("device_bytes_context")), mib(a.num("device_bytes_end")), mib(a.num("device_bytes_end_short")), growth(a),
            libvmaf_mem.0.to_string(), mib(libvmaf_mem.1.num("device_bytes_context")), mib(libvmaf_mem.1.num("device_bytes_end")), mib(libvmaf_mem.1.num("device_bytes_end_short")), growth(libvmaf_mem.1),
        ]);
        if c.default_model() {
            let b = get(&c.text, "libvmaf-cuda");
            let lcpu = get(&c.text, "libvmaf-cpu");
            for (tag, r) in [("libvmaf CUDA", b), ("libvmaf CPU", lcpu)] {
                if let Some(e) = r.str("error") {
                    notes.push(format!("{size} {bits}-bit, {tag}: {e}"));
                }
            }
            for (tag, r) in [(a_tag, a), ("libvmaf CUDA", b)] {
                if let Some(n) = spread_note(r) {
                    notes.push(format!("{size} {bits}-bit, {tag}: {n}"));
                }
            }
            let vmafx_first = a.nums("vmaf_first").or_else(|| cpu.nums("vmaf_first"));
            let lcheck = match (lcpu.nums("vmaf_first"), vmafx_first) {
                (Some(l), Some(x)) if l.iter().map(|v| v.to_bits()).eq(x.iter().map(|v| v.to_bits())) => "yes (frames 0-2, as bits)".to_string(),
                (Some(l), Some(x)) => format!("**NO** ({l:?} vs {x:?})"),
                _ => "n/a".into(),
            };
            let vmaf = a.num("vmaf_pooled").or_else(|| a.num("check_cpu_pooled")).or_else(|| cpu.num("vmaf_pooled"));
            let mut row = vec![size.clone(), bits.clone(), c.frames.to_string()];
            row.extend(side(a));
            row.extend(side(b));
            row.extend([ratio(a, b), cpu_fps(a, cpu, c.frames), vmaf.map_or("n/a".into(), |v| f(v, 6)), b.num("vmaf_pooled").map_or("n/a".into(), |v| f(v, 6)), check_cell(a), lcheck]);
            main.row(&row);
            let cell = |r: &Json, k: &str, d: usize| r.num(k).map_or("n/a".into(), |v| f(v, d));
            fixed.row(&[size.clone(), bits.clone(), cell(a, "fps_whole", 1), cell(a, "fixed_s", 3), cell(a, "init_s", 3), cell(b, "fps_whole", 1), cell(b, "fixed_s", 3), cell(b, "init_s", 3)]);
            for r in records.iter().filter(|r| r.config == c.text && r.tag.starts_with("vmafx-") && !["vmafx-cuda", "vmafx-cuda-stream", "vmafx-cpu"].contains(&r.tag.as_str())) {
                let x = &r.result;
                match x.num("fps") {
                    None => others.row(&[size.clone(), bits.clone(), r.tag.clone(), x.str("error").unwrap_or("n/a").to_string(), s(""), s(""), s(""), s(""), s("")]),
                    Some(fps) => {
                        let gbs = x.num("gbs").unwrap_or(f64::NAN);
                        others.row(&[size.clone(), bits.clone(), r.tag.clone(), f(fps, 1), f(x.num("ms_per_frame").unwrap_or(f64::NAN), 3), f(gbs, 1), pct(gbs, read_gbs), ratio(x, a), check_cell(x)]);
                    }
                }
            }
        } else {
            let lc = get(&c.text, "libvmaf-cuda");
            let gm = get(&c.text, "libvmaf-cuda-gpumask");
            let dl = get(&c.text, "libvmaf-cpu-download");
            let zc = get(&c.text, "libvmaf-cpu-zero-chroma");
            for (tag, r) in [("libvmaf gpumask", gm), ("libvmaf download", dl), ("libvmaf CPU zero chroma", zc)] {
                if let Some(e) = r.str("error") {
                    notes.push(format!("{size} {bits}-bit {}, {tag}: {e}", c.model));
                }
            }
            let lcuda = match (lc.str("error"), lc.num("fps")) {
                (Some(e), _) => format!("error: {e}"),
                (None, Some(fps)) => format!("scored: {} fps", f(fps, 1)),
                _ => "n/a".into(),
            };
            let ours = if a.has("vmaf_frames") { a } else { cpu };
            let zn = zc.nums("vmaf_frames").map_or(0, |v| v.len().saturating_sub(2));
            let cell = |r: &Json, k: &str, d: usize| r.num(k).map_or("n/a".into(), |v| f(v, d));
            models.row(&[
                size.clone(), bits.clone(), c.model.clone(), c.frames.to_string(), cell(a, "fps", 1), cell(a, "ms_per_frame", 2), cpu_fps(a, cpu, c.frames), lcuda,
                cell(gm, "fps", 1), cell(gm, "ms_per_frame", 2), cell(dl, "fps", 1), cell(dl, "ms_per_frame", 2), ratio(a, gm), ratio(a, dl), check_cell(a),
                same_frames(ours, dl, None), same_frames(ours, gm, None), same_frames(gm, zc, Some(zn)),
            ]);
        }
    }
    if !main.is_empty() {
        out += &main.render_markdown();
        out += "\nPer run, apart from the steady rate above: the rate over the whole run (fresh context, all frames), the fixed time each run pays (first-frame set-up, drain at flush; from the N and N/5 runs), and the context set-up before the first frame (not timed above).\n\n";
        out += &fixed.render_markdown();
        out += "\nVMAF values: vmafx's CUDA lane must equal its CPU lane (every feature and score of every frame compared as bits) and libvmaf's CPU path (frames 0-2); libvmaf's own CUDA backend differs by design (its CUDA motion is the pre-3.2.0 integer_motion).\n";
    }
    if !others.is_empty() {
        out += "\n";
        out += &others.render_markdown();
    }
    if !memory.is_empty() {
        out += "\n### Device memory per scoring context\n\n";
        out += "cuMemGetInfo (the whole device's memory in use) before the context is made, after its set-up (vmafx: `Context::new` and the model; libvmaf: `vmaf_init`, the CUDA state, its preallocated pictures, the model's extractors) and in the run: vmafx's peak is the largest of readings every N/8 frames pushed and before the flush, while frames are in flight (its lanes free their buffers when the flush stops them), in untimed runs of N and N/5 frames of their own (readings during a timed run slowed it); libvmaf's is read at the end, before `vmaf_close` (it holds its pictures until then), of the last repeat. Each the increase over before, in MiB (2^20 bytes). The frames (uploaded once, before) are not counted. The driver hands out memory in 2 MiB pages. \"growth\" = peak of N frames minus peak of N/5 frames: what longer runs add. vmafx's figure covers every worker lane of the context; libvmaf's on v1.0.16 is its gpumask context (its CUDA state and device pictures; the extractors run on the CPU).\n\n";
        out += &memory.render_markdown();
    }
    if !models.is_empty() {
        out += "\n### Models libvmaf's CUDA extractors cannot score (v1.0.16): vmafx CUDA vs libvmaf on its CPU extractors\n\n";
        out += &format!("- libvmaf's threads: {}; vmafx CUDA: {} worker threads (lanes); vmafx CPU: every core\n", if o.libvmaf_threads == 0 { "every core".to_string() } else { o.libvmaf_threads.to_string() }, o.threads);
        out += "- libvmaf gpumask: the CUDA context and device pictures with gpumask set; libvmaf downloads luma only and runs every extractor on the CPU (its chroma is zero: checked against libvmaf's CPU path with zero chroma)\n";
        out += "- libvmaf download: the application copies each frame (every plane) to host pictures, libvmaf's CPU context scores them; every frame compared with vmafx's as bits\n\n";
        out += &models.render_markdown();
    }
    if let Some(Json::Arr(launches)) = first(records, "roofline", "ncu").and_then(|r| r.get("launches")) {
        let launches: Vec<Launch> = launches
            .iter()
            .map(|l| Launch {
                kernel: l.str("kernel").unwrap_or("?").into(),
                grid: l.str("grid").unwrap_or("").into(),
                ns: l.num("ns").unwrap_or(f64::NAN),
                dram_read: l.num("dram_read").unwrap_or(f64::NAN),
                dram_write: l.num("dram_write").unwrap_or(f64::NAN),
                l2: l.num("l2").unwrap_or(f64::NAN),
            })
            .collect();
        out += &format!(
            "\n### Roofline: vmafx's kernels at 3840x2160 8-bit (Nsight Compute)\n\nOne lane on the caller's thread, vmaf_v0.6.1, launches {}..{} of a run (after the warm-up's), each profiled alone (`ncu --clock-control none`, metrics {NCU_METRICS}). Bytes are what the kernel really moved: DRAM (HBM) reads and writes, and L2 traffic (what the SMs asked of L2; the difference is what L2 kept). Each row is one kernel at one grid, the mean of its launches; MB = 10^6 bytes; % of read BW is DRAM GB/s over the read kernel's {} GB/s measured above.\n\n",
            ROOFLINE_SKIP,
            ROOFLINE_SKIP + ROOFLINE_COUNT - 1,
            read_gbs.map_or("n/a".into(), |v| f(v, 0))
        );
        out += &roofline_table(&launches, read_gbs);
    }
    if !notes.is_empty() {
        out += "\n";
        for n in notes {
            out += &format!("- {n}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> RunOptions {
        RunOptions { configs: Vec::new(), repeat: 3, threads: 4, libvmaf_threads: 0, deadline_s: 520, devices: vec!["cuda".into()], roofline: true, dry_run: true }
    }

    #[test]
    fn configurations_read_with_the_default_model() {
        let c = parse_configs("3840x2160:10:24:120 1920x1080:8:32:120:vmaf_v1.0.16_3d0h").unwrap();
        assert_eq!((c[0].width, c[0].height, c[0].bits, c[0].distinct, c[0].frames), (3840, 2160, 10, 24, 120));
        assert!(c[0].default_model());
        assert_eq!(c[1].model, "vmaf_v1.0.16_3d0h");
        assert!(!c[1].default_model());
        assert_eq!(parse_configs(DEFAULT_CONFIGS).unwrap().len(), 8);
        assert_eq!(parse_configs("none").unwrap(), Vec::new());
        for bad in ["1920x1080:8:32", "1920:8:32:240", "1921x1080:8:32:240", "1920x1080:7:32:240", "1920x1080:8:0:240", "1920x1080:8:32:240:m:x"] {
            assert!(parse_configs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_nv_codec_headers_gain_the_calls_libvmaf_needs_once() {
        let cuda = "typedef CUresult CUDAAPI tcuLaunchKernel(CUfunction f,\n    void **extra);\ntypedef int tOther;\n";
        let loader = "typedef struct {\n    tcuLaunchKernel *cuLaunchKernel;\n} CudaFunctions;\n    LOAD_SYMBOL(cuStreamCreate, tcuStreamCreate, \"cuStreamCreate\");\n";
        let (c, l) = patch_nvh(cuda, loader).unwrap();
        assert!(c.contains("void **extra);\n\n/* added for libvmaf"), "{c}");
        assert!(c.contains("typedef CUresult CUDAAPI tcuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);\n"));
        assert!(c.ends_with("typedef int tOther;\n"));
        assert!(l.contains("    tcuLaunchKernel *cuLaunchKernel;\n    tcuCtxSynchronize *cuCtxSynchronize;\n"));
        assert!(l.contains("    LOAD_SYMBOL(cuLaunchHostFunc, tcuLaunchHostFunc, \"cuLaunchHostFunc\");\n"));
        assert_eq!(l.matches("LOAD_SYMBOL").count(), 8);
        assert_eq!(patch_nvh(&c, &l).unwrap(), (c.clone(), l.clone()));
        assert!(patch_nvh("no typedef", loader).is_err());
    }

    #[test]
    fn the_gencode_is_set_before_meson_prints_it() {
        let mb = "x\n    message('CUDA gencode = @0@'.format(gencode))\ny\n";
        let out = meson_with_arch(mb, "90").unwrap();
        assert!(out.contains("'-gencode=arch=compute_90,code=sm_90']\n    endif\n    message('CUDA gencode"));
        assert!(meson_with_arch("x", "90").is_err());
    }

    #[test]
    fn the_last_result_line_is_read_or_the_reason_given() {
        let r = result_of("noise\nRESULT {\"fps\": 1.5}\nRESULT {\"fps\": 2.5}\ntrailer\n", "none");
        assert_eq!(r.num("fps"), Some(2.5));
        assert_eq!(result_of("crashed\n", "killed after 10 s").str("error"), Some("killed after 10 s"));
        assert!(result_of("RESULT {broken", "x").str("error").unwrap().contains("unreadable"));
    }

    const NCU: &str = "==PROF== Connected to process 1\n\
\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
\"0\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"byte\",\"24,883,200\"\n\
\"0\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"dram__bytes_write.sum\",\"byte\",\"1000000\"\n\
\"0\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"usecond\",\"262.5\"\n\
\"0\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"lts__t_bytes.sum\",\"Mbyte\",\"60\"\n\
RESULT {\"fps\": 1}\n\
\"1\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"nsecond\",\"237500\"\n\
\"1\",\"1\",\"b\",\"h\",\"vif_stat_0_8(const unsigned char *, int)\",\"1\",\"7\",\"(256, 1, 1)\",\"(35, 270, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"byte\",\"24883200\"\n\
\"2\",\"1\",\"b\",\"h\",\"vif_reduce\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"nsecond\",\"13600\"\n";

    #[test]
    fn ncu_csv_reads_per_launch_in_base_units() {
        let l = parse_ncu_csv(NCU);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].kernel, "vif_stat_0_8");
        assert_eq!(l[0].grid, "(35, 270, 1)");
        assert_eq!((l[0].ns, l[0].dram_read, l[0].dram_write, l[0].l2), (262_500.0, 24_883_200.0, 1e6, 60e6));
        assert_eq!(l[1].ns, 237_500.0);
        assert_eq!(l[2].kernel, "vif_reduce");
        let g = group_launches(&l);
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].2, g[0].3), (2, 250_000.0));
    }

    #[test]
    fn the_roofline_rates_each_kernel_against_the_read_bandwidth() {
        let l = vec![
            Launch { kernel: "k".into(), grid: "(1, 1, 1)".into(), ns: 1000.0, dram_read: 3e6, dram_write: 1e6, l2: 8e6 },
            Launch { kernel: "k".into(), grid: "(1, 1, 1)".into(), ns: 1000.0, dram_read: 3e6, dram_write: 1e6, l2: 8e6 },
        ];
        let t = roofline_table(&l, Some(4000.0));
        // 4 MB in 1 µs = 4000 GB/s = 100 % of 4000 GB/s; L2 8000 GB/s.
        assert!(t.contains("| k | (1, 1, 1) | 2 | 1.0 | 3.00 | 1.00 | 8.00 | 4000 | 100.0 | 8000 |"), "{t}");
        assert!(t.contains("| one frame (each group once) |  |  | 1.0 | 4.00 |  | 8.00 | 4000 | 100.0 | 8000 |"), "{t}");
    }

    fn rec(config: &str, tag: &str, json: &str) -> Record {
        Record { config: config.into(), tag: tag.into(), result: Json::parse(json).unwrap() }
    }

    #[test]
    fn the_tables_show_ratios_memory_and_value_checks() {
        let c = "3840x2160:8:24:120";
        let records = vec![
            rec("-", "bandwidth-vmafx", r#"{"read_gbs": 4500.0, "copy_gbs": 3900.0}"#),
            rec(c, "vmafx-cuda", r#"{"fps": 1500.0, "ms_per_frame": 0.6667, "gbs": 37.3, "vmaf_pooled": 86.5, "vmaf_first": [84.5, 86.25, 87.75], "check": "equal: 1800 values", "check_cpu_s": 2.0, "check_cpu_threads": 16, "device_bytes_context": 104857600, "device_bytes_end": 209715200, "device_bytes_end_short": 209715200}"#),
            rec(c, "libvmaf-cuda", r#"{"fps": 600.0, "ms_per_frame": 1.6667, "gbs": 14.9, "vmaf_pooled": 86.51, "device_bytes_context": 52428800, "device_bytes_end": 62914560, "device_bytes_end_short": 60817408}"#),
            rec(c, "libvmaf-cpu", r#"{"vmaf_first": [84.5, 86.25, 87.75]}"#),
        ];
        let t = tabulate(&records, "name, cc\nNVIDIA H200, 9.0\n", &opts());
        assert!(t.contains("| 3840x2160 | 8 | 120 | 1500.0 | 0.667 | 37.3 | 0.8 | 600.0 | 1.667 | 14.9 | 0.3 | 2.50 | 60.0 (16) | 86.500000 | 86.510000 | yes, 0 diff | yes (frames 0-2, as bits) |"), "{t}");
        assert!(t.contains("| 3840x2160 | 8 | vmaf_v0.6.1 | 120 | 100.0 | 200.0 | 200.0 | 0.0 | CUDA | 50.0 | 60.0 | 58.0 | 2.0 |"), "{t}");
        assert!(t.contains("- GPU: NVIDIA H200, 9.0 (name, cc)"));
        // A GPU value that differs from the CPU's is marked and noted.
        let mut bad = records.clone();
        bad[1] = rec(c, "vmafx-cuda", r#"{"fps": 1500.0, "check": "DIFFERENT: vif frame 3"}"#);
        let t = tabulate(&bad, "", &opts());
        assert!(t.contains("| **NO** |"), "{t}");
        assert!(t.contains("- 3840x2160 8-bit vmaf_v0.6.1: DIFFERENT: vif frame 3"), "{t}");
    }

    #[test]
    fn runs_too_far_apart_are_flagged_and_close_ones_are_not() {
        let c = "3840x2160:10:24:120";
        let records = |vmafx_runs: &str| {
            vec![
                rec(c, "vmafx-cuda", &format!(r#"{{"fps": 850.0, "runs_s": {vmafx_runs}, "check": "equal"}}"#)),
                rec(c, "libvmaf-cuda", r#"{"fps": 580.0, "runs_s": [0.208, 0.209, 0.21]}"#),
            ]
        };
        // The second call of 2026-12-04: the same 120 frames in 0.13 to 0.32 s.
        let t = tabulate(&records("[0.319358, 0.192634, 0.132885]"), "", &opts());
        assert!(
            t.contains("- 3840x2160 10-bit, vmafx CUDA: its 3 timed runs took 0.133 to 0.319 s (2.40x apart): the median says little"),
            "{t}"
        );
        assert!(!t.contains("libvmaf CUDA: its"), "{t}");
        // Within a quarter of each other: no note.
        let t = tabulate(&records("[0.066, 0.070, 0.081]"), "", &opts());
        assert!(!t.contains("the median says little"), "{t}");
        assert_eq!(spread_note(&Json::parse(r#"{"runs_s": [0.1]}"#).unwrap()), None);
    }

    #[test]
    fn the_v1016_table_compares_every_frame_as_bits() {
        let c = "1920x1080:8:32:4:vmaf_v1.0.16_3d0h";
        let records = vec![
            rec(c, "vmafx-cuda", r#"{"fps": 100.0, "ms_per_frame": 10.0, "check": "equal", "vmaf_frames": [1.0, 2.0, 3.0, 4.0]}"#),
            rec(c, "libvmaf-cuda", r#"{"error": "vmaf_use_features_from_model (-22)"}"#),
            rec(c, "libvmaf-cuda-gpumask", r#"{"fps": 50.0, "ms_per_frame": 20.0, "vmaf_frames": [1.0, 2.5, 3.0, 4.0]}"#),
            rec(c, "libvmaf-cpu-download", r#"{"fps": 300.0, "ms_per_frame": 3.3, "vmaf_frames": [1.0, 2.0, 3.0, 4.0]}"#),
            rec(c, "libvmaf-cpu-zero-chroma", r#"{"vmaf_frames": [1.0, 2.5, 3.0, 4.0]}"#),
        ];
        let t = tabulate(&records, "", &opts());
        assert!(t.contains("| error: vmaf_use_features_from_model (-22) | 50.0 | 20.00 | 300.0 | 3.30 | 2.00 | 0.33 | yes, 0 diff | yes, 4 frames | **NO**: 1 of 4 frames differ (first: frame 1) | yes, 2 frames |"), "{t}");
    }
}
