//! vmafx's GPU-host workflow (docs/gpu.md, "On a GPU host"): pack here,
//! carry build/xtask, run there, compare, tabulate.
//!
//! Here (`cargo xtask …`, this machine builds the binaries):
//!   twins pack [--defects all|none|N,M,…] [--dry-run]
//!       the device chapter's test binary and, per chosen planted defect of
//!       scripts/planted-defects-gpu.txt, one built with it, into
//!       build/xtask/twins/ (MANIFEST: commit, changed sources, files);
//!       this xtask into build/xtask/bin/. Default --defects none.
//!   hip-standin pack [--dry-run]
//!       the libamdhip64 stand-in for the HIP lane on an NVIDIA GPU
//!       (hip_standin.rs) into build/xtask/hip-standin/; `twins run --lane
//!       hip` points the lane at it there.
//!   hip-nvidia pack [--defects all|none|N,M,…] [--dry-run]
//!       hip-standin pack, twins pack, and build/xtask/clips/: the vmafx
//!       command, lossy clips and the CPU's JSON log of each.
//!   parts
//!       every packed part's manifest, checked against its files.
//!   bench-gpu pack [--dry-run]
//!       the GPU benchmark (bench_gpu.rs) into build/xtask/bench-gpu/:
//!       vmafx-bench-gpu (release), libvmaf 3.2.0's source, the patched
//!       nv-codec-headers, tools/bench-gpu/'s C program, nasm.
//!   bench-gpu patch-nvh DIR
//!       the driver calls libvmaf's CUDA code needs added to the
//!       nv-codec-headers in DIR (include/ffnvcodec), in place.
//!   gpu-ffmpeg pack [--ffmpeg PATH] [--frames 48] [--no-hip-standin]
//!       FFmpeg 7.1-cuda with vmafx (scripts/ffmpeg-build, or PATH),
//!       checked for the host's glibc and libraries, and the NVDEC clips
//!       (/usr/bin/ffmpeg) into build/xtask/gpu-ffmpeg/; the HIP stand-in.
//!   gpu-ffmpeg-libvmaf pack [--tarball FFMPEG-7.1.orig.tar.xz]
//!       FFmpeg 7.1's and libvmaf 3.2.0's sources and the patched
//!       nv-codec-headers into build/xtask/gpu-ffmpeg-libvmaf/.
//!   bin pack
//!       this xtask alone into build/xtask/bin/.
//! Anywhere:
//!   pkg-config ARGS (or the xtask through a link named pkg-config)
//!       a pkg-config for FFmpeg's configure on a host without one
//!       (pkg_config.rs; gpu-ffmpeg-libvmaf run).
//!   compare CPU.json GPU.json
//!       two vmafx JSON logs, every number as f64 bits ("fps" skipped).
//! There (the GPU host, build/xtask carried; no Rust: the packed binary,
//! `build/xtask/bin/xtask …`, run from the repository root):
//!   twins run [--lane cuda|hip] [--modules loaders,kernels_compile,
//!             cold_start,twins,gpu_context,import,fns] [--no-defects] [--dry-run]
//!       each module against the CPU with the lane required, then each
//!       packed defect (caught when its binary fails); logs and a table in
//!       build/xtask/logs, handed back to $OUT when set (summary.log,
//!       table.txt, xtask-logs.tar.gz); exit 1 unless all passed.
//!       Defaults: --lane cuda, every module, the packed defects.
//!   hip-nvidia run [--modules M,M] [--no-defects] [--no-clips] [--dry-run]
//!       twins run --lane hip (modules loaders,twins,gpu_context,fns,import
//!       by default), then each clip with --device hip and --device cuda
//!       against the CPU's log, every number as bits.
//!   bench-gpu run [--configs "WxH:bits:distinct:frames[:model] …"|none]
//!             [--repeat 3] [--threads 0] [--libvmaf-threads 0]
//!             [--deadline 520] [--devices "cuda hip"] [--no-roofline] [--dry-run]
//!       libvmaf with CUDA built there, then per configuration vmafx's
//!       CUDA lane (checked against its CPU lane as bits) and libvmaf's
//!       CUDA backend on the same device frames, each context's device
//!       memory, and ncu's roofline of one 4K frame's kernels; results.jsonl
//!       and table.md in build/xtask/logs and $OUT. Exit 1 when a GPU value
//!       differs from the CPU's.
//!   gpu-ffmpeg run [--runs 2] [--pairs P,P] [--no-psnr] [--loop N]
//!             [--cuda-opts O] [--cpu-opts O] [--cuda-variants "O;O"] [--skip mixed,dl]
//!       per clip pair NVDEC -> vmafx on the GPU, mixed, downloaded and
//!       PSNR runs against software -> vmafx on the CPU, every per-frame
//!       value as doubles, host copies, timings; a table (gpu_ffmpeg_run.rs).
//!   gpu-ffmpeg run-hip [--runs 2] [--pairs P,P] [--cpu-opts O]
//!       hwupload to HIP (the stand-in) and to CUDA -> vmafx against the CPU.
//!   gpu-ffmpeg soak [--frames 10000] [--size 320x180]
//!       four vmafx on CUDA frames and one on the CPU in one graph: GPU
//!       memory and fds flat after the warm-up, every value equal.
//!   gpu-ffmpeg-libvmaf run [--arch 90] [--jobs N] [--deadline 300] [--runs 2]
//!             [--pairs P,P] [--no-vmafx] [--nvcc nvcc] [--build-only] [--pkg-config-shim]
//!       libvmaf with CUDA and a minimal FFmpeg 7.1 built there, then per
//!       pair NVDEC decode, NVDEC -> scale_cuda -> libvmaf_cuda and NVDEC ->
//!       vmafx timed, pooled VMAF shown (gpu_ffmpeg_libvmaf.rs).
//!   env [--lane cuda|hip]
//!       the lanes' environment as `export` lines (eval it), for programs
//!       run outside xtask there: scripts/bench-gpu's HIP row, FFmpeg.
//! --dry-run prints the plan (steps, commands, environment) and runs nothing.

mod bench_gpu;
mod compare;
mod defects;
mod ffmpeg_logs;
mod gpu_ffmpeg;
mod gpu_ffmpeg_libvmaf;
mod gpu_ffmpeg_run;
mod hip_nvidia;
mod hip_standin;
mod host;
mod json;
mod libtest;
mod pack;
mod pkg_config;
mod table;
mod twins;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: xtask twins pack [--defects all|none|N,M] [--dry-run]
       xtask twins run [--lane cuda|hip] [--modules M,M] [--no-defects] [--dry-run]
       xtask hip-standin pack [--dry-run]
       xtask hip-nvidia pack [--defects all|none|N,M] [--dry-run]
       xtask hip-nvidia run [--modules M,M] [--no-defects] [--no-clips] [--dry-run]
       xtask bench-gpu pack [--dry-run]
       xtask bench-gpu patch-nvh INCLUDE/ffnvcodec
       xtask bench-gpu run [--configs C|none] [--repeat N] [--threads N] [--libvmaf-threads N] [--deadline S] [--devices \"cuda hip\"] [--no-roofline] [--dry-run]
       xtask gpu-ffmpeg pack [--ffmpeg PATH] [--frames 48] [--no-hip-standin]
       xtask gpu-ffmpeg run [--runs N] [--pairs P,P] [--no-psnr] [--loop N] [--cuda-opts O] [--cpu-opts O] [--cuda-variants \"O;O\"] [--skip mixed,dl]
       xtask gpu-ffmpeg run-hip [--runs N] [--pairs P,P] [--cpu-opts O]
       xtask gpu-ffmpeg soak [--frames 10000] [--size 320x180]
       xtask gpu-ffmpeg-libvmaf pack [--tarball T]
       xtask gpu-ffmpeg-libvmaf run [--arch 90] [--jobs N] [--deadline 300] [--runs N] [--pairs P,P] [--no-vmafx] [--nvcc nvcc] [--build-only] [--pkg-config-shim]
       xtask env [--lane cuda|hip]
       xtask parts
       xtask bin pack
       xtask compare CPU.json GPU.json
       xtask pkg-config ARGS (or as a link named pkg-config)
(docs/gpu.md, \"On a GPU host\"; defaults in xtask/src/main.rs)";

/// The repository root: the workspace's under `cargo xtask` (cargo run
/// sets CARGO_MANIFEST_DIR to xtask/), else the folder it runs in (the GPU
/// host's copy of the tree).
fn root() -> PathBuf {
    match std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) {
        Some(d) if d.ends_with("xtask") => d.parent().map(PathBuf::from).unwrap_or_default(),
        _ => std::env::current_dir().unwrap_or_default(),
    }
}

/// Flags after the subcommand: `--name value` or `--name`.
struct Flags(Vec<String>);

impl Flags {
    fn take_value(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.0.iter().position(|a| a == name) {
            Some(i) if i + 1 < self.0.len() => {
                let v = self.0.remove(i + 1);
                self.0.remove(i);
                Ok(Some(v))
            }
            Some(_) => Err(format!("{name} needs a value")),
            None => Ok(None),
        }
    }
    fn take_switch(&mut self, name: &str) -> bool {
        let found = self.0.iter().position(|a| a == name);
        if let Some(i) = found {
            self.0.remove(i);
        }
        found.is_some()
    }
    fn done(self) -> Result<(), String> {
        match self.0.first() {
            Some(a) => Err(format!("unknown argument {a}\n{USAGE}")),
            None => Ok(()),
        }
    }
}

/// pkg-config's answer to `args`, printed; its exit status.
fn pkg_config(args: &[String]) -> ExitCode {
    let (rc, out, err) = pkg_config::run(args, &std::env::var("PKG_CONFIG_PATH").unwrap_or_default());
    print!("{out}");
    eprint!("{err}");
    ExitCode::from(rc as u8)
}

fn main_result() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root();
    std::env::set_current_dir(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let words: Vec<&str> = args.iter().take(2).map(String::as_str).collect();
    let mut flags = Flags(args.iter().skip(words.len().min(2)).cloned().collect());
    let number = |v: Option<String>, name: &str, default: u64| -> Result<u64, String> { v.map_or(Ok(default), |v| v.parse().map_err(|_| format!("{name} {v}: a number"))) };
    // The packs that build vmafx embed the kernels built ahead (a dry run builds nothing).
    if matches!(words.as_slice(), ["twins" | "hip-nvidia" | "bench-gpu" | "gpu-ffmpeg", "pack"]) && !args.iter().any(|a| a == "--dry-run") {
        pack::use_kernel_compilers(&root);
    }
    match words.as_slice() {
        ["twins", "pack"] => {
            let o = twins::PackOptions { defects: flags.take_value("--defects")?.unwrap_or_else(|| "none".into()), dry_run: flags.take_switch("--dry-run") };
            flags.done()?;
            twins::pack(&root, &o).map(|_| true)
        }
        ["twins", "run"] => {
            let o = twins::RunOptions {
                lane: host::Lane::parse(&flags.take_value("--lane")?.unwrap_or_else(|| "cuda".into()))?,
                modules: flags.take_value("--modules")?.map(|m| m.split(',').map(str::to_string).collect()).unwrap_or_else(|| twins::MODULES.iter().map(|m| m.to_string()).collect()),
                defects: !flags.take_switch("--no-defects"),
                dry_run: flags.take_switch("--dry-run"),
            };
            flags.done()?;
            twins::run(&root, &o)
        }
        ["hip-standin", "pack"] => {
            let dry_run = flags.take_switch("--dry-run");
            flags.done()?;
            hip_standin::pack(&root, &hip_standin::Versions::default(), dry_run)?;
            twins::pack_self(&root)?;
            twins::check_carry_size(&root).map(|_| true)
        }
        ["hip-nvidia", "pack"] => {
            let defects = flags.take_value("--defects")?.unwrap_or_else(|| "none".into());
            let dry_run = flags.take_switch("--dry-run");
            flags.done()?;
            hip_nvidia::pack(&root, &defects, dry_run).map(|_| true)
        }
        ["hip-nvidia", "run"] => {
            let o = hip_nvidia::RunOptions {
                modules: flags.take_value("--modules")?.map(|m| m.split(',').map(str::to_string).collect()).unwrap_or_else(|| hip_nvidia::HIP_MODULES.iter().map(|m| m.to_string()).collect()),
                defects: !flags.take_switch("--no-defects"),
                clips: !flags.take_switch("--no-clips"),
                dry_run: flags.take_switch("--dry-run"),
            };
            flags.done()?;
            hip_nvidia::run_all(&root, &o)
        }
        ["bench-gpu", "pack"] => {
            let dry_run = flags.take_switch("--dry-run");
            flags.done()?;
            bench_gpu::pack(&root, dry_run).map(|_| true)
        }
        ["bench-gpu", "patch-nvh"] => {
            let Some(dir) = flags.0.pop() else { return Err(USAGE.to_string()) };
            flags.done()?;
            bench_gpu::patch_nvh_dir(std::path::Path::new(&dir)).map(|_| true)
        }
        ["bench-gpu", "run"] => {
            let o = bench_gpu::RunOptions {
                configs: bench_gpu::parse_configs(&flags.take_value("--configs")?.unwrap_or_else(|| bench_gpu::DEFAULT_CONFIGS.into()))?,
                repeat: number(flags.take_value("--repeat")?, "--repeat", 3)?.max(1) as u32,
                threads: number(flags.take_value("--threads")?, "--threads", 0)? as u32,
                libvmaf_threads: number(flags.take_value("--libvmaf-threads")?, "--libvmaf-threads", 0)? as u32,
                deadline_s: number(flags.take_value("--deadline")?, "--deadline", 520)?,
                devices: flags.take_value("--devices")?.unwrap_or_else(|| "cuda".into()).split_whitespace().map(str::to_string).collect(),
                roofline: !flags.take_switch("--no-roofline"),
                dry_run: flags.take_switch("--dry-run"),
            };
            flags.done()?;
            bench_gpu::run(&root, &o)
        }
        ["gpu-ffmpeg", "pack"] => {
            let o = gpu_ffmpeg::PackOptions {
                ffmpeg: flags.take_value("--ffmpeg")?.map(PathBuf::from),
                frames: number(flags.take_value("--frames")?, "--frames", 48)? as u32,
                hip_standin: !flags.take_switch("--no-hip-standin"),
            };
            flags.done()?;
            gpu_ffmpeg::pack(&root, &o).map(|_| true)
        }
        ["gpu-ffmpeg", "run" | "run-hip"] => {
            let list = |v: Option<String>, sep: char| v.map(|v| v.split(sep).filter(|s| !s.is_empty()).map(str::to_string).collect::<Vec<_>>());
            let o = gpu_ffmpeg_run::RunOptions {
                runs: number(flags.take_value("--runs")?, "--runs", 2)?.max(1) as u32,
                psnr: !flags.take_switch("--no-psnr"),
                cuda_opts: flags.take_value("--cuda-opts")?.unwrap_or_default(),
                cpu_opts: flags.take_value("--cpu-opts")?,
                pairs: list(flags.take_value("--pairs")?, ','),
                loops: number(flags.take_value("--loop")?, "--loop", 0)? as u32,
                variants: list(flags.take_value("--cuda-variants")?, ';').unwrap_or_default(),
                skip: list(flags.take_value("--skip")?, ',').unwrap_or_default(),
            };
            flags.done()?;
            if words[1] == "run" {
                gpu_ffmpeg_run::run(&root, &o)
            } else {
                gpu_ffmpeg_run::run_hip(&root, &o)
            }
        }
        ["gpu-ffmpeg", "soak"] => {
            let frames = number(flags.take_value("--frames")?, "--frames", 10_000)?;
            let size = flags.take_value("--size")?.unwrap_or_else(|| "320x180".into());
            flags.done()?;
            gpu_ffmpeg_run::soak(&root, frames, &size)
        }
        ["gpu-ffmpeg-libvmaf", "pack"] => {
            let tarball = flags.take_value("--tarball")?.map(PathBuf::from);
            flags.done()?;
            gpu_ffmpeg_libvmaf::pack(&root, tarball.as_deref()).map(|_| true)
        }
        ["gpu-ffmpeg-libvmaf", "run"] => {
            let o = gpu_ffmpeg_libvmaf::RunOptions {
                arch: flags.take_value("--arch")?,
                jobs: flags.take_value("--jobs")?.map(|j| number(Some(j), "--jobs", 0)).transpose()?.map(|j| j as u32),
                deadline_s: number(flags.take_value("--deadline")?, "--deadline", 300)?,
                runs: number(flags.take_value("--runs")?, "--runs", 2)?.max(1) as u32,
                pairs: flags.take_value("--pairs")?.map(|p| p.split(',').map(str::to_string).collect()),
                vmafx: !flags.take_switch("--no-vmafx"),
                nvcc: flags.take_value("--nvcc")?.unwrap_or_else(|| "nvcc".into()),
                build_only: flags.take_switch("--build-only"),
                pkg_config_shim: flags.take_switch("--pkg-config-shim"),
            };
            flags.done()?;
            gpu_ffmpeg_libvmaf::run(&root, &o)
        }
        ["env", ..] => {
            let mut flags = Flags(args[1..].to_vec());
            let lane = host::Lane::parse(&flags.take_value("--lane")?.unwrap_or_else(|| "cuda".into()))?;
            flags.done()?;
            let standin = (lane == host::Lane::Hip).then(|| pack::part_dir(&root, "hip-standin"));
            print!("{}", host::HostEnv::discover(lane, &root, standin.as_deref()).exports());
            Ok(true)
        }
        ["parts", ..] => twins::check_carry_size(&root).map(|_| true),
        ["bin", "pack"] => {
            flags.done()?;
            twins::pack_self(&root)?;
            twins::check_carry_size(&root).map(|_| true)
        }
        ["compare", ..] => {
            let [cpu, gpu] = args.get(1..).unwrap_or_default() else { return Err(USAGE.to_string()) };
            let read = |p: &String| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
            let c = compare::compare_logs(&read(cpu)?, &read(gpu)?, &["fps"])?;
            for d in &c.differences {
                println!("DIFFERENT {d}");
            }
            println!("{} numbers equal as bits, {} different", c.equal_numbers, c.differences.len());
            Ok(c.equal())
        }
        _ => Err(USAGE.to_string()),
    }
}

fn main() -> ExitCode {
    // Called as pkg-config (a link of that name), or `xtask pkg-config`:
    // no repository root needed, the arguments are pkg-config's.
    let argv: Vec<String> = std::env::args().collect();
    if argv.first().is_some_and(|a| a.rsplit('/').next() == Some("pkg-config")) {
        return pkg_config(&argv[1..]);
    }
    if argv.get(1).map(String::as_str) == Some("pkg-config") {
        return pkg_config(&argv[2..]);
    }
    match main_result() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::from(2)
        }
    }
}
