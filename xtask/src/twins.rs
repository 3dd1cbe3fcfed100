//! The twins workflow: the device chapter's GPU modules (tests/device/) and
//! the GPU planted defects, built here into build/xtask/twins/, run on the
//! GPU host module by module against the CPU, tabulated.

use crate::defects;
use crate::host::{Driver, HostEnv, Lane};
use crate::pack::{self, Manifest};
use crate::table::{Align, Table};
use std::path::Path;

/// The device chapter's modules a GPU host runs, in order.
pub const MODULES: &[&str] = &["loaders", "kernels_compile", "cold_start", "twins", "gpu_context", "import", "fns"];
/// The kernel cache `cold_start::` starts with, emptied before the run.
pub const COLD_CACHE: &str = "build/xtask/kernel-cache-cold";

#[derive(Debug, PartialEq)]
pub struct PlannedStep {
    pub name: String,
    pub argv: Vec<String>,
    pub extra: Vec<(&'static str, &'static str)>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The steps of one module on `lane`, with the device binary at `device`.
pub fn module_step(module: &str, lane: Lane, device: &str) -> Result<PlannedStep, String> {
    let (args, extra): (Vec<&str>, Vec<(&'static str, &'static str)>) = match (module, lane) {
        ("loaders", Lane::Cuda) => (vec!["--nocapture", "loaders::"], vec![]),
        // The stand-in's hipRuntimeGetVersion is cudart's (12090, read as
        // ROCm 0.0): the test expecting ROCm >= 5 is left out.
        ("loaders", Lane::Hip) => (vec!["--nocapture", "--skip", "hip_runtime_loads_or_names_every_soname", "loaders::"], vec![]),
        // The device's own NVRTC (the other compilers' tests run here).
        ("kernels_compile", _) => (vec!["--nocapture", "kernels_compile::every_kernel_compiles_with_nvrtc"], vec![]),
        // A fresh process with empty caches (this xtask's and the driver's
        // own): its first frame's kernels come from the set built ahead. A
        // CUDA test: on the HIP lane's run it still asks for CUDA.
        // The pack embeds the kernels built ahead (pack::use_kernel_compilers):
        // a binary without them fails here instead of passing on NVRTC.
        ("cold_start", Lane::Cuda) => (vec!["--nocapture", "cold_start::"], vec![("VMAFX_KERNEL_CACHE", COLD_CACHE), ("CUDA_CACHE_DISABLE", "1"), ("VMAFX_REQUIRE_EMBEDDED", "cuda")]),
        ("cold_start", Lane::Hip) => (vec!["--nocapture", "cold_start::"], vec![("VMAFX_KERNEL_CACHE", COLD_CACHE), ("CUDA_CACHE_DISABLE", "1"), ("VMAFX_REQUIRE_EMBEDDED", "cuda"), ("VMAFX_REQUIRE_GPU", "cuda")]),
        ("twins", _) => (vec!["--nocapture", "--test-threads=1", "twins::"], vec![]),
        ("gpu_context", _) => (vec!["--nocapture", "--test-threads=1", "gpu_context::"], vec![]),
        ("import", Lane::Cuda) => (vec!["--nocapture", "--test-threads=1", "import::"], vec![]),
        // The import tests make CUDA frames; the HIP lane reads device
        // frames in gpu_context:: above.
        ("import", Lane::Hip) => (vec!["--nocapture", "--test-threads=1", "import::"], vec![("VMAFX_REQUIRE_GPU", "cuda")]),
        // Each kernel device function on every rounding tie, on the GPU.
        ("fns", _) => (vec!["--nocapture", "--test-threads=1", "fns::gpu_"], vec![]),
        _ => return Err(format!("no module {module} (modules: {})", MODULES.join(","))),
    };
    let mut argv = vec![device.to_string()];
    argv.extend(strings(&args));
    Ok(PlannedStep { name: module.to_string(), argv, extra })
}

/// A packed defect: "defect N chapter::module | what" in the manifest.
pub fn packed_defects(m: &Manifest) -> Vec<(usize, String, String, String)> {
    m.notes
        .iter()
        .filter_map(|n| n.strip_prefix("defect "))
        .filter_map(|n| {
            let (head, what) = n.split_once(" | ")?;
            let (num, target) = head.split_once(' ')?;
            let (chapter, module) = target.split_once("::").unwrap_or((target, ""));
            let filter = if module.is_empty() { String::new() } else { format!("{module}::") };
            Some((num.parse().ok()?, chapter.to_string(), filter, what.to_string()))
        })
        .collect()
}

pub fn defect_step(dir: &str, number: usize, chapter: &str, filter: &str, lane: Lane) -> PlannedStep {
    let mut argv = vec![format!("{dir}/defects/{number}-{chapter}"), "--test-threads=1".to_string()];
    if !filter.is_empty() {
        argv.push(filter.to_string());
    }
    // On the HIP lane a defect of the CUDA import path is still caught there.
    let extra = if lane == Lane::Hip { vec![("VMAFX_REQUIRE_GPU", "hip,cuda")] } else { vec![] };
    PlannedStep { name: format!("defect-{number}"), argv, extra }
}

pub struct PackOptions {
    pub defects: String,
    pub dry_run: bool,
}

pub fn pack(root: &Path, o: &PackOptions) -> Result<(), String> {
    let list = std::fs::read_to_string(root.join("scripts/planted-defects-gpu.txt")).map_err(|e| format!("scripts/planted-defects-gpu.txt: {e}"))?;
    let chosen = defects::select(defects::parse(&list)?, &o.defects)?;
    let dir = pack::part_dir(root, "twins");
    if o.dry_run {
        for d in &chosen {
            println!("build defect {} ({} {}): {}", d.number, d.chapter, d.filter, d.what);
        }
        println!("build the device chapter (cargo test --no-run --test device) -> {}/device", dir.display());
        println!("copy this xtask -> {}/bin/xtask", root.join(pack::PACK_ROOT).display());
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("defects")).map_err(|e| e.to_string())?;
    let mut m = Manifest::of_sources("twins", pack::CRATE_SOURCES, &format!("cargo xtask twins pack --defects {}", o.defects));
    for d in &chosen {
        let name = format!("defects/{}-{}", d.number, d.chapter);
        defects::build_defect(root, d, &dir.join(&name))?;
        m.add_file(&dir, &name)?;
        let target = if d.filter.is_empty() { d.chapter.clone() } else { format!("{}::{}", d.chapter, d.filter.trim_end_matches("::")) };
        m.notes.push(format!("defect {} {target} | {}", d.number, d.what));
        eprintln!("built defect {}: {}", d.number, d.what);
    }
    // Last, so the target folder is left with the untouched crate.
    let exe = defects::build_chapter("device")?;
    pack::copy_stripped(&exe, &dir, "device")?;
    m.add_file(&dir, "device")?;
    pack::write(&dir, &m)?;
    pack_self(root)?;
    eprintln!("{}", m.summary());
    check_carry_size(root)
}

/// Copies this xtask into build/xtask/bin (its own part), for the host.
pub fn pack_self(root: &Path) -> Result<(), String> {
    let dir = pack::part_dir(root, "bin");
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    pack::copy_stripped(&exe, &dir, "xtask")?;
    let mut m = Manifest::of_sources("bin", pack::XTASK_SOURCES, "cargo xtask (itself)");
    m.add_file(&dir, "xtask")?;
    pack::write(&dir, &m)
}

/// Every part under build/xtask checked against its manifest, and all
/// together within what the run tool carries.
pub fn check_carry_size(root: &Path) -> Result<(), String> {
    let mut total = 0;
    let mut broken = Vec::new();
    for part in parts(root) {
        match pack::open(&pack::part_dir(root, &part)) {
            Ok(m) => {
                total += m.total_bytes();
                eprintln!("  {}", m.summary());
            }
            Err(e) => {
                eprintln!("  {part}: {e}");
                broken.push(part);
            }
        }
    }
    eprintln!("carry {}: {:.1} MiB of {} MiB", pack::PACK_ROOT, total as f64 / 1048576.0, pack::CARRY_LIMIT >> 20);
    if total > pack::CARRY_LIMIT {
        return Err(format!("{} is {total} bytes, over the {} MiB the run tool carries: pack fewer defects (--defects 1,5)", pack::PACK_ROOT, pack::CARRY_LIMIT >> 20));
    }
    if !broken.is_empty() {
        return Err(format!("parts not as packed: {}", broken.join(", ")));
    }
    Ok(())
}

pub fn parts(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join(pack::PACK_ROOT))
        .map(|d| d.filter_map(|e| e.ok()).filter(|e| e.path().join("MANIFEST").exists()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub struct RunOptions {
    pub lane: Lane,
    pub modules: Vec<String>,
    pub defects: bool,
    pub dry_run: bool,
}

/// The steps of a run: the modules, then each packed defect.
pub fn plan(o: &RunOptions, manifest: Option<&Manifest>) -> Result<Vec<PlannedStep>, String> {
    let dir = format!("{}/twins", pack::PACK_ROOT);
    let device = format!("{dir}/device");
    let mut steps = Vec::new();
    for m in &o.modules {
        steps.push(module_step(m, o.lane, &device)?);
    }
    if o.defects {
        for (n, chapter, filter, _) in manifest.map(packed_defects).unwrap_or_default() {
            steps.push(defect_step(&dir, n, &chapter, &filter, o.lane));
        }
    }
    Ok(steps)
}

/// Runs the plan on this host; Ok(true) when every module passed and every
/// defect was caught.
pub fn run(root: &Path, o: &RunOptions) -> Result<bool, String> {
    let twins = pack::part_dir(root, "twins");
    let manifest = match pack::open(&twins) {
        Ok(m) => Some(m),
        Err(e) if o.dry_run => {
            println!("(not packed here: {e})");
            None
        }
        Err(e) => return Err(e),
    };
    let standin = if o.lane == Lane::Hip {
        let d = pack::part_dir(root, "hip-standin");
        if !o.dry_run {
            pack::open(&d)?;
        }
        Some(d)
    } else {
        None
    };
    let env = HostEnv::discover(o.lane, root, standin.as_deref());
    let steps = plan(o, manifest.as_ref())?;
    let mut driver = Driver::new(root, env, o.dry_run);
    if !o.dry_run {
        let _ = std::fs::remove_dir_all(root.join(COLD_CACHE));
    }
    if let Some(m) = &manifest {
        driver.note(&format!("pack {}", m.summary()));
    }
    driver.note(&format!("environment: {}", driver.env.describe()));
    for s in &steps {
        driver.step(&s.name, &s.argv, &s.extra);
    }
    if o.dry_run {
        return Ok(true);
    }
    let whats: Vec<(usize, String)> = manifest.as_ref().map(packed_defects).unwrap_or_default().into_iter().map(|(n, _, _, w)| (n, w)).collect();
    let (text, ok) = tabulate(&driver, &whats);
    print!("{text}");
    let _ = std::fs::write(driver.logs.join("table.txt"), &text);
    let defects = if whats.is_empty() || !o.defects { "" } else { ", every packed defect caught" };
    driver.note(&if ok { format!("done: every module passed{defects}") } else { "done: SOMETHING FAILED (tables above)".to_string() });
    driver.hand_back(&["summary.log", "table.txt"]);
    Ok(ok)
}

/// The modules' table and the defects' table of a finished run, and
/// whether it all passed.
pub fn tabulate(driver: &Driver, whats: &[(usize, String)]) -> (String, bool) {
    let mut ok = true;
    let mut modules = Table::new(&[
        ("module", Align::Left),
        ("s", Align::Right),
        ("passed", Align::Right),
        ("failed", Align::Right),
        ("compared", Align::Right),
        ("different", Align::Right),
        ("skip notes", Align::Right),
        ("result", Align::Left),
    ]);
    let mut caught = Table::new(&[("defect", Align::Right), ("result", Align::Left), ("failed test", Align::Left), ("what it breaks", Align::Left)]);
    for o in &driver.outcomes {
        let r = &o.report;
        if let Some(n) = o.name.strip_prefix("defect-").and_then(|n| n.parse::<usize>().ok()) {
            let is_caught = !o.exit_ok;
            ok &= is_caught;
            let what = whats.iter().find(|w| w.0 == n).map(|w| w.1.as_str()).unwrap_or("");
            caught.row(&[n.to_string(), if is_caught { "caught".into() } else { "MISSED".into() }, r.failures.first().cloned().unwrap_or_default(), what.to_string()]);
            continue;
        }
        let passed = o.exit_ok && r.clean();
        ok &= passed;
        modules.row(&[
            o.name.clone(),
            format!("{:.1}", o.seconds),
            r.passed.to_string(),
            r.failed.to_string(),
            r.comparisons.max(r.equal_rows + r.different_rows.len() as u32).to_string(),
            r.different.max(r.different_rows.len() as u32).to_string(),
            r.skips.len().to_string(),
            if passed { "ok".into() } else { format!("FAILED ({})", o.log.display()) },
        ]);
    }
    let mut text = modules.render();
    if !caught.is_empty() {
        text.push('\n');
        text.push_str(&caught.render());
    }
    (text, ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::StepOutcome;
    use crate::libtest::StepReport;

    fn opts(lane: Lane, modules: &[&str]) -> RunOptions {
        RunOptions { lane, modules: strings(modules), defects: true, dry_run: true }
    }

    #[test]
    fn the_cuda_plan_runs_each_module_then_each_packed_defect() {
        let mut m = Manifest::default();
        m.notes.push("defect 5 device::fns | device function: adm_scale_s123's Q28 rounding one unit low".into());
        let steps = plan(&opts(Lane::Cuda, MODULES), Some(&m)).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["loaders", "kernels_compile", "cold_start", "twins", "gpu_context", "import", "fns", "defect-5"]);
        assert_eq!(steps[3].argv, strings(&["build/xtask/twins/device", "--nocapture", "--test-threads=1", "twins::"]));
        assert_eq!(steps[7].argv, strings(&["build/xtask/twins/defects/5-device", "--test-threads=1", "fns::"]));
        assert_eq!(steps[2].extra, vec![("VMAFX_KERNEL_CACHE", COLD_CACHE), ("CUDA_CACHE_DISABLE", "1"), ("VMAFX_REQUIRE_EMBEDDED", "cuda")]);
        assert!(steps.iter().filter(|s| s.name != "cold_start").all(|s| s.extra.is_empty()));
    }

    #[test]
    fn the_hip_plan_leaves_out_the_rocm_version_test_and_imports_on_cuda() {
        let steps = plan(&opts(Lane::Hip, &["loaders", "import"]), None).unwrap();
        assert!(steps[0].argv.contains(&"hip_runtime_loads_or_names_every_soname".to_string()));
        assert_eq!(steps[1].extra, vec![("VMAFX_REQUIRE_GPU", "cuda")]);
        assert_eq!(defect_step("d", 1, "device", "import::", Lane::Hip).extra, vec![("VMAFX_REQUIRE_GPU", "hip,cuda")]);
    }

    #[test]
    fn an_unknown_module_is_refused() {
        assert!(plan(&opts(Lane::Cuda, &["twinz"]), None).unwrap_err().contains("no module twinz"));
    }

    #[test]
    fn a_missed_defect_or_a_failed_module_fails_the_run() {
        let mut d = Driver::new(Path::new("/nonexistent"), HostEnv::default(), true);
        let report = |log: &str| StepReport::parse(log);
        let push = |d: &mut Driver, name: &str, exit_ok: bool, log: &str| d.outcomes.push(StepOutcome { name: name.into(), exit_ok, seconds: 1.25, log: format!("/o/{name}.log").into(), report: report(log) });
        push(&mut d, "twins", true, "a 1 equal\ntest result: ok. 6 passed; 0 failed; 0 ignored\n");
        push(&mut d, "defect-3", false, "failures:\n    gpu_x\n\ntest result: FAILED. 0 passed; 1 failed;\n");
        let (text, ok) = tabulate(&d, &[(3, "the wait skipped".into())]);
        assert!(ok, "{text}");
        assert_eq!(
            text,
            "module    s  passed  failed  compared  different  skip notes  result\n\
             twins   1.2       6       0         1          0           0  ok\n\
             \n\
             defect  result  failed test  what it breaks\n     \
                  3  caught  gpu_x        the wait skipped\n"
        );
        push(&mut d, "defect-4", true, "test result: ok. 1 passed; 0 failed;\n");
        assert!(!tabulate(&d, &[]).1);
        d.outcomes.remove(2);
        push(&mut d, "fns", true, "x DIFFERENT\ntest result: ok. 1 passed; 0 failed;\n");
        assert!(!tabulate(&d, &[]).1);
    }

    #[test]
    fn packed_defects_read_back_from_the_manifest() {
        let m = Manifest { notes: vec!["defect 12 device::gpu_context | a | b".into(), "defect 2 device | whole".into(), "other".into()], ..Manifest::default() };
        assert_eq!(packed_defects(&m), vec![(12, "device".into(), "gpu_context::".into(), "a | b".into()), (2, "device".into(), String::new(), "whole".into())]);
    }
}
