//! vmafx's HIP lane on an NVIDIA GPU host, through the libamdhip64 stand-in
//! (hip_standin.rs). `pack` (here) builds the stand-in, the twins part
//! (device chapter and the chosen planted defects) and build/xtask/clips/:
//! the vmafx command and lossy clips made with ffmpeg (x264 at two CRFs,
//! 8-bit 4:2:0 and 10-bit 4:2:2, odd sizes), each with the CPU lane's JSON
//! log made here. `run` (there) runs the twins' modules on the HIP lane,
//! the packed defects, and the clips with `--device hip` and `--device
//! cuda` against the CPU's log, every number as bits (compare.rs).

use crate::compare;
use crate::host::{Driver, HostEnv, Lane};
use crate::pack::{self, Manifest};
use crate::table::{Align, Table};
use crate::twins;
use std::path::Path;
use std::process::Command;

/// (name, size, pixel format, x264 CRF) of each clip pair.
pub const CLIPS: &[(&str, &str, &str, u32)] = &[("c8-420", "351x199", "yuv420p", 30), ("c10-422", "258x146", "yuv422p10le", 38)];
/// The device chapter's modules on the HIP lane (the NVRTC compile test is
/// the CUDA lane's; fns::gpu_ checks every lane it finds, HIP included).
pub const HIP_MODULES: &[&str] = &["loaders", "twins", "gpu_context", "fns", "import"];

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed:\n{}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// The CLI as the cli chapter builds it (the test profile, the features the
/// chapters share: what `cargo test` has built already).
fn build_vmafx() -> Result<std::path::PathBuf, String> {
    let out = Command::new("cargo").args(["test", "--no-run", "--message-format=json", "--test", "cli"]).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("cargo test --no-run --test cli failed:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("\"executable\":\"").and_then(|(_, r)| r.split_once('"')).map(|(p, _)| p.to_string()))
        .find(|p| p.ends_with("/vmafx"))
        .map(Into::into)
        .ok_or_else(|| "no vmafx executable in cargo's messages".into())
}

pub fn pack(root: &Path, defects: &str, dry_run: bool) -> Result<(), String> {
    crate::hip_standin::pack(root, &crate::hip_standin::Versions::default(), dry_run)?;
    twins::pack(root, &twins::PackOptions { defects: defects.into(), dry_run })?;
    let dir = pack::part_dir(root, "clips");
    if dry_run {
        println!("build vmafx (as the cli chapter does) -> {}/vmafx; clips {:?} with their CPU logs", dir.display(), CLIPS.iter().map(|c| c.0).collect::<Vec<_>>());
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut m = Manifest::of_sources("clips", pack::CRATE_SOURCES, "cargo xtask hip-nvidia pack");
    pack::copy_stripped(&build_vmafx()?, &dir, "vmafx")?;
    m.add_file(&dir, "vmafx")?;
    for (name, size, fmt, crf) in CLIPS {
        let (r, mkv, d, cpu) = (dir.join(format!("{name}-ref.y4m")), dir.join(format!("{name}.mkv")), dir.join(format!("{name}-dis.y4m")), dir.join(format!("{name}-cpu.json")));
        let src = format!("testsrc2=s={size}:r=25,noise=alls=6:allf=t:all_seed=17");
        run(Command::new("ffmpeg").args(["-v", "error", "-y", "-f", "lavfi", "-i", &src, "-frames:v", "12", "-pix_fmt", fmt, "-strict", "-1"]).arg(&r))?;
        run(Command::new("ffmpeg").args(["-v", "error", "-y", "-i"]).arg(&r).args(["-c:v", "libx264", "-crf", &crf.to_string(), "-pix_fmt", fmt]).arg(&mkv))?;
        run(Command::new("ffmpeg").args(["-v", "error", "-y", "-i"]).arg(&mkv).args(["-pix_fmt", fmt, "-strict", "-1"]).arg(&d))?;
        let _ = std::fs::remove_file(&mkv);
        run(Command::new(dir.join("vmafx")).arg("-r").arg(&r).arg("-d").arg(&d).args(["--feature", "psnr", "--json", "-o"]).arg(&cpu))?;
        for f in [&r, &d, &cpu] {
            m.add_file(&dir, &f.file_name().unwrap().to_string_lossy())?;
        }
    }
    pack::write(&dir, &m)?;
    eprintln!("{}", m.summary());
    twins::check_carry_size(root)
}

pub struct RunOptions {
    pub modules: Vec<String>,
    pub defects: bool,
    pub clips: bool,
    pub dry_run: bool,
}

pub fn run_all(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let twins_ok = twins::run(root, &twins::RunOptions { lane: Lane::Hip, modules: o.modules.clone(), defects: o.defects, dry_run: o.dry_run })?;
    if !o.clips {
        return Ok(twins_ok);
    }
    let dir = pack::part_dir(root, "clips");
    if !o.dry_run {
        pack::open(&dir)?;
    }
    let standin = pack::part_dir(root, "hip-standin");
    let mut driver = Driver::new_appending(root, HostEnv::discover(Lane::Hip, root, Some(&standin)), o.dry_run);
    let mut table = Table::new(&[("clip", Align::Left), ("device", Align::Left), ("numbers equal", Align::Right), ("different", Align::Right), ("result", Align::Left)]);
    let mut ok = twins_ok;
    for (name, ..) in CLIPS {
        for device in ["hip", "cuda"] {
            let out = dir.join(format!("{name}-{device}.json"));
            let argv: Vec<String> = [dir.join("vmafx").display().to_string(), "-r".into(), dir.join(format!("{name}-ref.y4m")).display().to_string(), "-d".into(), dir.join(format!("{name}-dis.y4m")).display().to_string()]
                .into_iter()
                .chain(["--feature", "psnr", "--json", "-o"].map(String::from))
                .chain([out.display().to_string(), "--device".into(), device.into()])
                .collect();
            let exit_ok = driver.step(&format!("clip-{name}-{device}"), &argv, &[]).exit_ok;
            if o.dry_run {
                continue;
            }
            let cpu = std::fs::read_to_string(dir.join(format!("{name}-cpu.json"))).map_err(|e| e.to_string())?;
            let gpu = std::fs::read_to_string(&out).unwrap_or_default();
            let c = compare::compare_logs(&cpu, &gpu, &["fps"]).unwrap_or_else(|e| compare::Comparison { equal_numbers: 0, differences: vec![e] });
            let equal = exit_ok && c.equal();
            ok &= equal;
            for d in &c.differences {
                driver.note(&format!("clip {name} --device {device}: DIFFERENT {d}"));
            }
            let _ = std::fs::copy(&out, driver.logs.join(format!("{name}-{device}.json")));
            table.row(&[name.to_string(), device.to_string(), c.equal_numbers.to_string(), c.differences.len().to_string(), if equal { "equal to the CPU's log".into() } else { "DIFFERENT (or failed)".to_string() }]);
        }
    }
    if !o.dry_run {
        let text = table.render();
        print!("{text}");
        let _ = std::fs::write(driver.logs.join("clips.txt"), &text);
        driver.note(if ok { "done: every step passed" } else { "done: SOMETHING FAILED" });
        driver.hand_back(&["summary.log", "table.txt", "clips.txt"]);
    }
    Ok(ok)
}
