//! The GPU host's half of `gpu-ffmpeg`: vmafx on CUDA (or HIP) frames
//! against vmafx on the CPU, on the packed clips.
//!
//! `run`, per pair (distorted, reference):
//!   decode cuda   both inputs -hwaccel cuda -hwaccel_output_format cuda, -f null
//!   cuda+vmafx    the same through vmafx (nv12 luma read in place, p010
//!                 shifted down on the device)
//!   cuda+psnr     with feature=name=psnr (chroma split on the device),
//!                 against sw+psnr
//!   mixed+vmafx   CUDA main, software reference in NVDEC's layout
//!   decode sw     both inputs in software, -f null
//!   dl+vmafx      NVDEC, hwdownload, vmafx on the CPU
//!   sw+vmafx      software decode, vmafx on the CPU
//! Every per-frame value (metadata at %.17g and the JSON log) of a GPU run
//! must equal the CPU run's as doubles, the pooled values and the "VMAF
//! score" line too; CUDA frames are never copied through the host (a
//! software or downloaded p010 is shifted on the host: one counted copy per
//! frame, allowed there only). A table; false on any difference or failure.

use crate::ffmpeg_logs::{self as logs, Counters, Frame};
use crate::gpu_ffmpeg::{self as g, best_of, time_cell, vmafx_graph, Ran};
use crate::json::Json;
use crate::pack;
use crate::table::{Align, Table};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const HW: [&str; 4] = ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"];

pub struct RunOptions {
    /// Timed repetitions, the best shown.
    pub runs: u32,
    /// The cuda+psnr and sw+psnr runs.
    pub psnr: bool,
    pub cuda_opts: String,
    /// vmafx's options on the CPU (default n_threads = cores).
    pub cpu_opts: Option<String>,
    pub pairs: Option<Vec<String>>,
    /// Each clip read n+1 times (-stream_loop): steady-state rates.
    pub loops: u32,
    /// One more timed and compared cuda+vmafx run per option string.
    pub variants: Vec<String>,
    /// Runs left out: mixed, dl.
    pub skip: Vec<String>,
}

/// The CPU run every GPU run of pair `name` is compared with: its logs and
/// its frame-pair count (0 and a status note when it failed or its logs
/// cannot be read).
fn cpu_reference(
    ok: bool,
    work: &Path,
    name: &str,
    log: &Path,
    status: &mut Vec<String>,
    details: &mut Vec<String>,
) -> (Option<Reference>, u64) {
    if !ok {
        status.push("cpu run failed".to_string());
        details.push(format!("{name} cpu: {}", logs::first_error(&read(log))));
        return (None, 0);
    }
    let reference =
        Reference::load(work, &format!("{name}-cpu")).map_err(|e| status.push(format!("cpu logs unreadable: {e}"))).ok();
    (reference, Counters::parse(&read(log)).pairs.unwrap_or(0))
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A finished CPU-side run: what the GPU runs are compared with.
pub struct Reference {
    pub meta: Vec<Frame>,
    pub frames: Vec<Frame>,
    pub pooled: Json,
    pub scores: Vec<String>,
}

impl Reference {
    pub fn load(work: &Path, tag: &str) -> Result<Reference, String> {
        let (frames, pooled) = logs::read_json_log(&read(&work.join(format!("{tag}.json"))))?;
        Ok(Reference { meta: logs::read_metadata(&read(&work.join(format!("{tag}.meta"))))?, frames, pooled, scores: Counters::parse(&read(&work.join(format!("{tag}.log")))).scores })
    }

    /// `run` (its metadata, JSON log and score lines) against this one:
    /// values compared and the differences.
    pub fn compare(&self, run: &Reference, what: &str) -> (usize, Vec<String>) {
        let (n1, mut p) = logs::compare_frames(&run.meta, &self.meta, &format!("{what} metadata"));
        let (n2, p2) = logs::compare_frames(&run.frames, &self.frames, &format!("{what} json"));
        p.extend(p2);
        if !logs::same_bits(&run.pooled, &self.pooled) {
            p.push(format!("{what} json pooled_metrics differ"));
        }
        if run.scores != self.scores {
            p.push(format!("{what} VMAF score line {:?} vs {:?}", run.scores, self.scores));
        }
        (n1 + n2, p)
    }
}

/// What a run's counters must say: CUDA frames on the device (two per pair
/// with both inputs CUDA, one for the mixed run, none downloaded) and host
/// copies (none for CUDA frames; the mixed run's software p010 reference
/// and downloaded frames are shifted on the host). The problems.
pub fn check_counters(run: &str, c: &Counters, ten_bit: bool) -> Vec<String> {
    let mut status = Vec::new();
    let pairs = c.pairs.unwrap_or(0);
    let per_pair = match run {
        "mixed" => 1,
        "dl" => 0,
        _ => 2,
    };
    let cuda_line_wanted = run != "dl";
    if c.cuda_in_place_line != cuda_line_wanted || c.in_place != Some(pairs * per_pair) || pairs == 0 {
        status.push(format!("{run}: {} CUDA frames on the device for {pairs} pairs", c.in_place.map_or("?".into(), |n| n.to_string())));
    }
    let copies = c.host_copies.unwrap_or(u64::MAX);
    let allowed = match run {
        "dl" => copies,
        "mixed" if ten_bit => pairs,
        _ => 0,
    };
    if copies != allowed {
        status.push(format!("{run}: {} host copies", c.host_copies.map_or("?".into(), |n| n.to_string())));
    }
    status
}

pub fn run(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let dir = pack::part_dir(root, g::PART);
    let m = pack::open(&dir)?;
    let ff = dir.join("bin/ffmpeg").display().to_string();
    let work = root.join(g::WORK).join("run");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let env = g::run_env(root, None);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu_opts = o.cpu_opts.clone().unwrap_or_else(|| format!("n_threads={cores}"));
    println!("pack {}", m.summary());
    println!("{}", env.describe());
    let _ = Command::new("nvidia-smi").args(["--query-gpu=name,driver_version", "--format=csv,noheader"]).status().map_err(|_| println!("nvidia-smi: not found"));
    let _ = Command::new(&ff).args(["-hide_banner", "-version"]).status();
    let pairs = g::clip_pairs(&dir.join("clips"), o.pairs.as_deref());
    if pairs.is_empty() {
        return Err(format!("no clip pairs under {}/clips (cargo xtask gpu-ffmpeg pack first)", dir.display()));
    }

    let variant_runs: Vec<String> = (0..o.variants.len()).map(|i| format!("cuda-v{i}")).collect();
    let compared_runs: Vec<String> = ["cuda"].iter().map(|s| s.to_string()).chain(variant_runs.iter().cloned()).chain(["mixed", "dl", "psnr"].map(String::from)).collect();
    let mut head: Vec<String> = ["pair", "frames", "decode cuda", "cuda+vmafx"].map(String::from).to_vec();
    head.extend(o.variants.iter().map(|v| format!("cuda+vmafx {v}")));
    head.extend(["mixed+vmafx", "cuda+hwdownload+vmafx (cpu)", "decode sw", "sw+vmafx (cpu)", "cuda+psnr", "sw+psnr (cpu)"].map(String::from));
    let vnames: String = o.variants.iter().map(|v| format!(" / cuda {v}")).collect();
    head.push(format!("values compared: diffs (cuda{vnames} / mixed / dl / psnr)"));
    head.extend(["host copies (cuda / mixed / dl / psnr)", "status"].map(String::from));
    let cols: Vec<(&str, Align)> = head.iter().map(|h| (h.as_str(), if h == "frames" { Align::Right } else { Align::Left })).collect();
    let mut table = Table::new(&cols);
    let (mut details, mut failed) = (Vec::new(), false);

    for (name, dist, reference) in &pairs {
        let (dist, reference) = (dist.display().to_string(), reference.display().to_string());
        let lp: Vec<String> = if o.loops > 0 { vec!["-stream_loop".into(), o.loops.to_string()] } else { vec![] };
        let input = |hw: bool, clip: &str| -> Vec<String> { (if hw { HW.map(String::from).to_vec() } else { vec![] }).into_iter().chain(lp.iter().cloned()).chain(["-i".to_string(), clip.to_string()]).collect() };
        let cuda_in = [input(true, &dist), input(true, &reference)].concat();
        let sw_in = [input(false, &dist), input(false, &reference)].concat();
        let mixed_in = [input(true, &dist), input(false, &reference)].concat();
        let null: Vec<String> = ["-map", "0:v", "-map", "1:v", "-f", "null", "-"].map(String::from).to_vec();
        let plain = |inputs: &[String]| [vec![ff.clone(), "-hide_banner".into(), "-nostdin".into()], inputs.to_vec(), null.clone()].concat();
        let logf = |k: &str| work.join(format!("{name}-{k}.log"));
        let nop = "[0:v]null[d];[1:v]null[r];";
        let mut res: BTreeMap<String, Ran> = BTreeMap::new();
        res.insert("dec_cuda".into(), best_of(o.runs, &plain(&cuda_in), &env, &logf("dec-cuda")));
        res.insert("dec_sw".into(), best_of(o.runs, &plain(&sw_in), &env, &logf("dec-sw")));
        res.insert("cpu".into(), best_of(o.runs, &vmafx_graph(&ff, &work, &sw_in, &format!("{name}-cpu"), &cpu_opts, nop), &env, &logf("cpu")));
        res.insert("cuda".into(), best_of(o.runs, &vmafx_graph(&ff, &work, &cuda_in, &format!("{name}-cuda"), &o.cuda_opts, nop), &env, &logf("cuda")));
        for (v, k) in o.variants.iter().zip(&variant_runs) {
            res.insert(k.clone(), best_of(o.runs, &vmafx_graph(&ff, &work, &cuda_in, &format!("{name}-{k}"), v, nop), &env, &logf(k)));
        }
        let with = |a: &str, b: &str| [a, b].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(":");
        if o.psnr {
            let psnr = "feature=name=psnr";
            res.insert("cpu_psnr".into(), best_of(1, &vmafx_graph(&ff, &work, &sw_in, &format!("{name}-cpu-psnr"), &with(psnr, &cpu_opts), nop), &env, &logf("cpu-psnr")));
            res.insert("psnr".into(), best_of(1, &vmafx_graph(&ff, &work, &cuda_in, &format!("{name}-psnr"), &with(psnr, &o.cuda_opts), nop), &env, &logf("psnr")));
        }
        // vmafx wants one format on both inputs: the software side in
        // NVDEC's layout.
        let ten_bit = name.split('-').next().unwrap_or("").contains("10");
        let nvdec_fmt = if ten_bit { "p010le" } else { "nv12" };
        if !o.skip.iter().any(|s| s == "mixed") {
            let prep = format!("[0:v]null[d];[1:v]format={nvdec_fmt}[r];");
            res.insert("mixed".into(), best_of(1, &vmafx_graph(&ff, &work, &mixed_in, &format!("{name}-mixed"), &o.cuda_opts, &prep), &env, &logf("mixed")));
        }
        if !o.skip.iter().any(|s| s == "dl") {
            let prep = format!("[0:v]hwdownload,format={nvdec_fmt}[d];[1:v]hwdownload,format={nvdec_fmt}[r];");
            res.insert("dl".into(), best_of(o.runs, &vmafx_graph(&ff, &work, &cuda_in, &format!("{name}-dl"), &cpu_opts, &prep), &env, &logf("dl")));
        }

        let mut status = Vec::new();
        let (cpu, nframes) = cpu_reference(res["cpu"].ok(), &work, name, &logf("cpu"), &mut status, &mut details);
        let psnr_ref = match res.get("cpu_psnr") {
            Some(r) if r.ok() => Reference::load(&work, &format!("{name}-cpu-psnr")).map_err(|e| status.push(format!("cpu psnr logs unreadable: {e}"))).ok(),
            Some(_) => {
                status.push("cpu psnr run failed".into());
                details.push(format!("{name} cpu psnr: {}", logs::first_error(&read(&logf("cpu-psnr")))));
                None
            }
            None => None,
        };
        let mut compared: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut copies: BTreeMap<String, u64> = BTreeMap::new();
        for run_name in &compared_runs {
            let Some(r) = res.get(run_name) else { continue };
            let log_text = read(&logf(run_name));
            if !r.ok() {
                status.push(format!("{run_name} failed"));
                details.push(format!("{name} {run_name}: {}", logs::first_error(&log_text)));
                continue;
            }
            let c = Counters::parse(&log_text);
            if let Some(h) = c.host_copies {
                copies.insert(run_name.clone(), h);
            }
            status.extend(check_counters(run_name, &c, ten_bit));
            let against = if run_name == "psnr" { psnr_ref.as_ref() } else { cpu.as_ref() };
            let Some(against) = against else { continue };
            let (n, p) = match Reference::load(&work, &format!("{name}-{run_name}")) {
                Ok(mine) => against.compare(&mine, run_name),
                Err(e) => (0, vec![format!("{run_name} logs unreadable: {e}")]),
            };
            compared.insert(run_name.clone(), (n, p.len()));
            if !p.is_empty() {
                status.push(format!("{run_name}: {} differences", p.len()));
                details.extend(p.iter().take(10).map(|x| format!("{name} {x}")));
            }
        }
        failed |= !status.is_empty();
        let mut row = vec![name.clone(), nframes.to_string(), time_cell(res.get("dec_cuda"), nframes), time_cell(res.get("cuda"), nframes)];
        row.extend(variant_runs.iter().map(|k| time_cell(res.get(k), nframes)));
        row.extend(["mixed", "dl", "dec_sw", "cpu", "psnr", "cpu_psnr"].iter().map(|k| time_cell(res.get(*k), nframes)));
        row.push(compared_runs.iter().map(|k| compared.get(k).map_or("-".into(), |(n, d)| format!("{n}: {d} diff"))).collect::<Vec<_>>().join(" / "));
        row.push(["cuda", "mixed", "dl", "psnr"].iter().map(|k| copies.get(*k).map_or("-".into(), |c| c.to_string())).collect::<Vec<_>>().join(" / "));
        row.push(if status.is_empty() { "ok".into() } else { status.join("; ") });
        table.row(&row);
    }
    let mut text = format!("\n{}", table.render_markdown());
    text += &format!("\ntimes: best of {} (mixed, psnr: 1 run); cpu run options: {cpu_opts}; cuda run options: {}\n", o.runs, if o.cuda_opts.is_empty() { "(defaults)" } else { &o.cuda_opts });
    text += &format!("logs, metadata and JSON logs in {}\n", work.display());
    hand_back_report(&work, text, &details);
    Ok(!failed)
}

/// Ends a run's report: the details under the table, printed, kept in
/// `table.md` and handed back with the logs.
fn hand_back_report(work: &Path, mut text: String, details: &[String]) {
    if !details.is_empty() {
        text += "\ndetails:\n";
        text += &details.iter().map(|d| format!("  {d}\n")).collect::<String>();
    }
    print!("{text}");
    let _ = std::fs::write(work.join("table.md"), &text);
    g::hand_back(work, &text);
}

// --- HIP frames on the stand-in -------------------------------------------------

/// FFmpeg's HIP hwcontext tries libamdhip64.so.7 first: a host's own HIP
/// runtime (the H200's Debian .so.5 fails hipInit on an NVIDIA GPU) would
/// win over the stand-in unless that first name is the stand-in's.
fn standin_first_name(standin: &Path) -> Result<(), String> {
    let first = standin.join("libamdhip64.so.7");
    if std::fs::symlink_metadata(&first).is_err() {
        std::os::unix::fs::symlink("libamdhip64.so", &first).map_err(|e| format!("{}: {e}", first.display()))?;
    }
    Ok(())
}

/// Per pair: software decode -> hwupload to HIP -> vmafx, and the same to
/// CUDA, against software decode -> vmafx on the CPU; host copies 0 and
/// both inputs' frames on the device. A table; false on any difference.
pub fn run_hip(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let dir = pack::part_dir(root, g::PART);
    pack::open(&dir)?;
    let standin = pack::part_dir(root, "hip-standin");
    pack::open(&standin).map_err(|e| format!("no HIP stand-in ({e}): cargo xtask gpu-ffmpeg pack puts it there"))?;
    standin_first_name(&standin)?;
    let env = g::run_env(root, Some(&standin));
    let ff = dir.join("bin/ffmpeg").display().to_string();
    let work = root.join(g::WORK).join("hip");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let cpu_opts = o.cpu_opts.clone().unwrap_or_else(|| format!("n_threads={}", std::thread::available_parallelism().map_or(1, |n| n.get())));
    println!("{}", env.describe());
    let mut list = Command::new(&ff);
    list.args(["-hide_banner", "-init_hw_device", "list"]);
    for (k, v) in &env.vars {
        list.env(k, v);
    }
    let listed = list.output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let words: Vec<&str> = listed.split_whitespace().collect();
    if !words.contains(&"hip") || !words.contains(&"cuda") {
        return Err(format!("{ff}: -init_hw_device list gives {words:?}: hip and cuda are needed"));
    }
    let pairs = g::clip_pairs(&dir.join("clips"), o.pairs.as_deref());
    if pairs.is_empty() {
        return Err(format!("no clip pairs under {}/clips", dir.display()));
    }
    let mut table = Table::new(&[
        ("pair", Align::Left),
        ("frames", Align::Right),
        ("sw decode+hwupload hip+vmafx", Align::Left),
        ("sw decode+hwupload cuda+vmafx", Align::Left),
        ("sw+vmafx (cpu)", Align::Left),
        ("hip: values compared with cpu", Align::Left),
        ("cuda: values compared with cpu", Align::Left),
        ("status", Align::Left),
    ]);
    let (mut details, mut failed) = (Vec::new(), false);
    for (name, dist, reference) in &pairs {
        let files = ["-i".to_string(), dist.display().to_string(), "-i".to_string(), reference.display().to_string()];
        let logf = |k: &str| work.join(format!("{name}-{k}.log"));
        let mut res: BTreeMap<&str, Ran> = BTreeMap::new();
        for (k, device, opts) in [("cpu", None, cpu_opts.as_str()), ("hip", Some("hip"), ""), ("cuda", Some("cuda"), "")] {
            let argv = match device {
                None => vmafx_graph(&ff, &work, &files, &format!("{name}-{k}"), opts, "[0:v]null[d];[1:v]null[r];"),
                Some(d) => {
                    let inputs = [vec!["-init_hw_device".into(), format!("{d}=gpu:0"), "-filter_hw_device".into(), "gpu".into()], files.to_vec()].concat();
                    vmafx_graph(&ff, &work, &inputs, &format!("{name}-{k}"), opts, "[0:v]hwupload[d];[1:v]hwupload[r];")
                }
            };
            res.insert(k, best_of(o.runs, &argv, &env, &logf(k)));
        }
        let mut status = Vec::new();
        let (cpu, nframes) = cpu_reference(res["cpu"].ok(), &work, name, &logf("cpu"), &mut status, &mut details);
        let mut cells: BTreeMap<&str, String> = BTreeMap::new();
        for k in ["hip", "cuda"] {
            let text = read(&logf(k));
            if !res[k].ok() {
                status.push(format!("{k} failed"));
                details.push(format!("{name} {k}: {}", logs::first_error(&text)));
                continue;
            }
            let c = Counters::parse(&text);
            let scored = c.pairs.unwrap_or(0);
            if c.host_copies != Some(0) || c.in_place != Some(2 * scored) || scored == 0 {
                status.push(format!("{k}: {:?} host copies, {:?} frames on the device for {scored} pairs", c.host_copies, c.in_place));
            }
            let Some(cpu) = &cpu else { continue };
            let (n, p) = match Reference::load(&work, &format!("{name}-{k}")) {
                Ok(mine) => cpu.compare(&mine, k),
                Err(e) => (0, vec![format!("{k} logs unreadable: {e}")]),
            };
            cells.insert(k, format!("{n}: {} diff, {} host copies", p.len(), c.host_copies.map_or("?".into(), |h| h.to_string())));
            if !p.is_empty() {
                status.push(format!("{k}: {} differences", p.len()));
                details.extend(p.iter().take(10).map(|x| format!("{name} {x}")));
            }
        }
        failed |= !status.is_empty();
        table.row(&[
            name.clone(),
            nframes.to_string(),
            time_cell(res.get("hip"), nframes),
            time_cell(res.get("cuda"), nframes),
            time_cell(res.get("cpu"), nframes),
            cells.get("hip").cloned().unwrap_or("-".into()),
            cells.get("cuda").cloned().unwrap_or("-".into()),
            if status.is_empty() { "ok".into() } else { status.join("; ") },
        ]);
    }
    let text = format!("\n{}\ntimes: best of {}; cpu run options: {cpu_opts}; logs, metadata and JSON logs in {}\n", table.render_markdown(), o.runs, work.display());
    hand_back_report(&work, text, &details);
    Ok(!failed)
}

// --- the soak -----------------------------------------------------------------

/// One sample of the soak's process, once a second.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub seconds: f64,
    pub frame: u64,
    pub rss_kib: u64,
    pub fds: u64,
    /// nvidia-smi's MiB for the process (None: not listed yet).
    pub gpu_mib: Option<u64>,
}

/// The samples after the warm-up (the first half of the frames): GPU memory
/// and open fds must not change, and there must be three of them. The
/// ranges' line and the problems. Half, not a tenth: the four instances'
/// buffer pools reach their in-flight peak at a time the scheduling
/// decides (one more 2 MiB page at frame 938 on 2026-12-03, at frame 2,317
/// on 2026-12-04, flat for the 7,300 frames after), and a leak shows in the
/// second half as well as over the whole run.
pub fn soak_verdict(samples: &[Sample], frames: u64) -> (Option<String>, Vec<String>) {
    let steady: Vec<&Sample> = samples.iter().filter(|s| s.frame > frames / 2 && s.gpu_mib.is_some()).collect();
    if steady.len() < 3 {
        return (None, vec![format!("only {} samples after the warm-up", steady.len())]);
    }
    let range = |f: &dyn Fn(&Sample) -> u64| (steady.iter().map(|s| f(s)).min().unwrap_or(0), steady.iter().map(|s| f(s)).max().unwrap_or(0));
    let (g0, g1) = range(&|s| s.gpu_mib.unwrap_or(0));
    let (r0, r1) = range(&|s| s.rss_kib);
    let (f0, f1) = range(&|s| s.fds);
    let line = format!("after frame {} ({} samples): GPU memory {g0}..{g1} MiB, RSS {r0}..{r1} KiB (drift {} KiB), fds {f0}..{f1}", frames / 2, steady.len(), r1 - r0);
    let mut problems = Vec::new();
    if g1 != g0 {
        problems.push(format!("GPU memory drifted {} MiB", g1 - g0));
    }
    if f1 != f0 {
        problems.push(format!("open fds changed {f0} -> {f1}"));
    }
    (Some(line), problems)
}

/// (RSS KiB, open fds) of a live process.
fn proc_status(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()?;
    Some((rss, std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64))
}

/// nvidia-smi's line for `pid` in `--query-compute-apps=pid,used_memory`.
pub fn gpu_mib_of(smi_csv: &str, pid: u32) -> Option<u64> {
    smi_csv.lines().find_map(|l| {
        let (p, m) = l.split_once(',')?;
        (p.trim() == pid.to_string()).then(|| m.trim().parse().ok()).flatten()
    })
}

fn device_memory(pid: u32) -> Option<u64> {
    let out = Command::new("timeout").args(["20", "nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]).output().ok()?;
    gpu_mib_of(&String::from_utf8_lossy(&out.stdout), pid)
}

/// `frames` generated frame pairs of `size` through one graph: four vmafx
/// on CUDA frames (hwupload) and a fifth on the same frames in software;
/// sampled every second; every value of each CUDA instance equal to the
/// software one's. False on any problem.
pub fn soak(root: &Path, frames: u64, size: &str) -> Result<bool, String> {
    let dir = pack::part_dir(root, g::PART);
    pack::open(&dir)?;
    let ff = dir.join("bin/ffmpeg");
    let work = root.join(g::WORK).join("soak");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let env = g::run_env(root, None);
    let (rate, lanes) = (25, 4);
    let src = format!("testsrc2=s={size}:r={rate}:d={}", frames as f64 / rate as f64);
    let split = lanes + 1;
    let w = work.display();
    let mut graph = format!("[0:v]noise=alls=8:allf=t,format=yuv420p,split={split}{};", (0..split).map(|i| format!("[d{i}]")).collect::<String>());
    graph += &format!("[1:v]format=yuv420p,split={split}{};", (0..split).map(|i| format!("[r{i}]")).collect::<String>());
    for i in 0..lanes {
        graph += &format!("[d{i}]hwupload[dc{i}];[r{i}]hwupload[rc{i}];[dc{i}][rc{i}]vmafx=log_fmt=json:log_path={w}/cuda{i}.json[o{i}];");
    }
    graph += &format!("[d{lanes}][r{lanes}]vmafx=n_threads=4:log_fmt=json:log_path={w}/cpu.json[o{lanes}]");
    let progress = work.join("progress");
    let _ = std::fs::remove_file(&progress);
    let mut cmd = Command::new(&ff);
    cmd.args(["-hide_banner", "-nostdin", "-v", "info", "-progress"]).arg(&progress).args(["-stats_period", "1", "-init_hw_device", "cuda=cu:0", "-filter_hw_device", "cu"]);
    cmd.args(["-f", "lavfi", "-i", &src, "-f", "lavfi", "-i", &src, "-filter_complex", &graph]);
    for i in 0..split {
        cmd.args(["-map", &format!("[o{i}]"), "-f", "null", "-"]);
    }
    for (k, v) in &env.vars {
        cmd.env(k, v);
    }
    let log = std::fs::File::create(work.join("ffmpeg.log")).map_err(|e| e.to_string())?;
    cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(log);
    println!("soak: {frames} frames of {size}, {lanes} vmafx on CUDA frames + 1 on the CPU, one graph");
    let t0 = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", ff.display()))?;
    let mut samples = Vec::new();
    let exit = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        std::thread::sleep(Duration::from_secs(1));
        let (st, mem) = (proc_status(child.id()), device_memory(child.id()));
        let frame = read(&progress).lines().filter_map(|l| l.strip_prefix("frame=")).next_back().and_then(|f| f.trim().parse().ok()).unwrap_or(0);
        if let Some((rss_kib, fds)) = st {
            samples.push(Sample { seconds: t0.elapsed().as_secs_f64(), frame, rss_kib, fds, gpu_mib: mem });
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let mut problems = Vec::new();
    if !exit.success() {
        problems.push(format!("ffmpeg exited {exit}: {}", logs::first_error(&read(&work.join("ffmpeg.log")))));
    }
    let tsv: String = samples.iter().map(|s| format!("{:.3}\t{}\t{}\t{}\t{}\n", s.seconds, s.frame, s.rss_kib, s.fds, s.gpu_mib.map_or("None".into(), |m| m.to_string()))).collect();
    let _ = std::fs::write(work.join("samples.tsv"), format!("seconds\tframe\trss_kib\tfds\tgpu_mib\n{tsv}"));
    let (line, drift) = soak_verdict(&samples, frames);
    if let Some(l) = line {
        println!("{l}");
    }
    problems.extend(drift);
    if exit.success() {
        let (cpu, cpu_pooled) = logs::read_json_log(&read(&work.join("cpu.json")))?;
        if cpu.len() as u64 != frames {
            problems.push(format!("the CPU log has {} frames, not {frames}", cpu.len()));
        }
        for i in 0..lanes {
            let (js, pooled) = logs::read_json_log(&read(&work.join(format!("cuda{i}.json"))))?;
            let (n, mut diffs) = logs::compare_frames(&js, &cpu, &format!("cuda{i}"));
            if !logs::same_bits(&pooled, &cpu_pooled) {
                diffs.push(format!("cuda{i}: pooled values differ"));
            }
            println!("cuda{i}: {n} values compared with the CPU instance, {} differ", diffs.len());
            problems.extend(diffs.into_iter().take(5));
        }
    }
    println!("wall {wall:.0} s ({:.0} frame pairs/s per instance); samples in {}/samples.tsv", frames as f64 / wall, work.display());
    for p in &problems {
        println!("  {p}");
    }
    println!("soak: {}", if problems.is_empty() { "passed" } else { "FAILED" });
    g::hand_back(&work, &format!("soak of {frames} frames: {}\n{}", if problems.is_empty() { "passed" } else { "FAILED" }, problems.join("\n")));
    Ok(problems.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counters(pairs: u64, copies: u64, in_place: u64, line: bool) -> Counters {
        Counters { pairs: Some(pairs), host_copies: Some(copies), in_place: Some(in_place), scores: vec![], cuda_in_place_line: line }
    }

    #[test]
    fn cuda_frames_are_read_in_place_without_host_copies() {
        assert!(check_counters("cuda", &counters(48, 0, 96, true), true).is_empty());
        assert_eq!(check_counters("cuda", &counters(48, 48, 96, true), false), vec!["cuda: 48 host copies"]);
        assert_eq!(check_counters("cuda", &counters(48, 0, 95, true), false), vec!["cuda: 95 CUDA frames on the device for 48 pairs"]);
        assert_eq!(check_counters("psnr", &counters(48, 0, 96, false), false).len(), 1);
        assert_eq!(check_counters("cuda", &counters(0, 0, 0, true), false).len(), 1);
        assert_eq!(check_counters("cuda", &Counters::default(), false).len(), 2);
    }

    #[test]
    fn the_mixed_and_downloaded_runs_have_their_own_rules() {
        // The mixed run: one CUDA frame per pair; its software p010
        // reference shifted on the host, an nv12 one not.
        assert!(check_counters("mixed", &counters(48, 48, 48, true), true).is_empty());
        assert_eq!(check_counters("mixed", &counters(48, 48, 48, true), false), vec!["mixed: 48 host copies"]);
        assert!(check_counters("mixed", &counters(48, 0, 48, true), false).is_empty());
        // Downloaded: no CUDA frames, any host copies.
        assert!(check_counters("dl", &counters(48, 96, 0, false), true).is_empty());
        assert_eq!(check_counters("dl", &counters(48, 0, 0, true), false).len(), 1);
    }

    fn sample(frame: u64, gpu: Option<u64>, fds: u64) -> Sample {
        Sample { seconds: frame as f64, frame, rss_kib: 1000 + frame, fds, gpu_mib: gpu }
    }

    #[test]
    fn a_flat_soak_passes_after_its_warm_up() {
        let s: Vec<Sample> = [(5, Some(900)), (450, Some(702)), (600, Some(700)), (700, Some(700)), (900, Some(700))].iter().map(|&(f, g)| sample(f, g, 20)).collect();
        let (line, p) = soak_verdict(&s, 1000);
        assert_eq!(p, Vec::<String>::new());
        assert_eq!(line.unwrap(), "after frame 500 (3 samples): GPU memory 700..700 MiB, RSS 1600..1900 KiB (drift 300 KiB), fds 20..20");
    }

    #[test]
    fn gpu_memory_or_fds_that_move_fail_the_soak() {
        let s: Vec<Sample> = [(600, 700, 20), (700, 702, 20), (900, 702, 21)].iter().map(|&(f, g, d)| sample(f, Some(g), d)).collect();
        assert_eq!(soak_verdict(&s, 1000).1, vec!["GPU memory drifted 2 MiB", "open fds changed 20 -> 21"]);
        let few: Vec<Sample> = [(400, Some(700)), (600, None), (700, Some(700)), (900, Some(700))].iter().map(|&(f, g)| sample(f, g, 20)).collect();
        assert_eq!(soak_verdict(&few, 1000).1, vec!["only 2 samples after the warm-up"]);
    }

    #[test]
    fn nvidia_smi_is_read_for_the_process() {
        let csv = "1234, 700\n99, 5\n";
        assert_eq!(gpu_mib_of(csv, 1234), Some(700));
        assert_eq!(gpu_mib_of(csv, 12), None);
    }

    #[test]
    fn a_gpu_run_is_compared_with_every_part_of_the_cpu_run() {
        let f: Frame = [("vmaf".to_string(), 76.5)].into_iter().collect();
        let pooled = Json::parse(r#"{"vmaf": {"mean": 76.5}}"#).unwrap();
        let cpu = Reference { meta: vec![f.clone(), f.clone()], frames: vec![f.clone(), f.clone()], pooled: pooled.clone(), scores: vec!["76.5".into()] };
        let same = Reference { meta: cpu.meta.clone(), frames: cpu.frames.clone(), pooled: pooled.clone(), scores: cpu.scores.clone() };
        assert_eq!(cpu.compare(&same, "cuda"), (4, vec![]));
        let short = Reference { meta: vec![f.clone()], frames: cpu.frames.clone(), pooled: Json::parse(r#"{"vmaf": {"mean": 76.6}}"#).unwrap(), scores: vec!["76.6".into()] };
        let (n, p) = cpu.compare(&short, "cuda");
        assert_eq!(n, 3);
        assert_eq!(p.len(), 3, "{p:?}");
    }
}
