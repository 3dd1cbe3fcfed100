//! The one "run on the GPU host" driver: the environment the lanes need
//! (NVRTC found as the toolkit or python's wheels hold it, the kernel cache,
//! the lane required, the HIP stand-in), each step's output teed to the
//! console and a log file under build/xtask/logs (handed back to $OUT as a
//! few files: the device tool brings back at most 8), and what each
//! step's log says (libtest.rs).

use crate::libtest::StepReport;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Lane {
    Cuda,
    Hip,
}

impl Lane {
    pub fn parse(s: &str) -> Result<Lane, String> {
        match s {
            "cuda" => Ok(Lane::Cuda),
            "hip" => Ok(Lane::Hip),
            _ => Err(format!("--lane {s}: cuda or hip")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Lane::Cuda => "cuda",
            Lane::Hip => "hip",
        }
    }
}

/// Where NVRTC may be, first found wins: CUDA 13's toolkit, 12's, then
/// python's nvidia wheels under each site-packages folder.
pub fn nvrtc_candidates(site_packages: &[String]) -> Vec<PathBuf> {
    let mut c = vec![PathBuf::from("/usr/local/cuda/lib64/libnvrtc.so.13"), PathBuf::from("/usr/local/cuda/lib64/libnvrtc.so.12")];
    for sp in site_packages {
        c.push(Path::new(sp).join("nvidia/cu13/lib/libnvrtc.so.13"));
        c.push(Path::new(sp).join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
    }
    c
}

fn site_packages() -> Vec<String> {
    Command::new("python3")
        .args(["-c", "import site; print('\\n'.join(site.getsitepackages()))"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The environment the steps run in, on top of the process's own.
#[derive(Debug, Default, PartialEq)]
pub struct HostEnv {
    pub vars: Vec<(String, String)>,
}

impl HostEnv {
    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.vars.iter_mut().find(|(k, _)| k == key) {
            Some(kv) => kv.1 = value,
            None => self.vars.push((key.to_string(), value)),
        }
    }

    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The lanes' environment. `outer` reads the process's variables (the
    /// few the tests read themselves are kept when set); `nvrtc` is what
    /// discovery found; `hip_standin` the stand-in's folder for the HIP lane.
    pub fn for_lane(lane: Lane, root: &Path, outer: &dyn Fn(&str) -> Option<String>, nvrtc: Option<PathBuf>, hip_standin: Option<&Path>) -> HostEnv {
        let mut env = HostEnv::default();
        let nvrtc = outer("VMAFX_NVRTC_LIB").map(PathBuf::from).or(nvrtc);
        if let Some(n) = &nvrtc {
            env.set("VMAFX_NVRTC_LIB", n.display().to_string());
        }
        env.set("VMAFX_KERNEL_CACHE", outer("VMAFX_KERNEL_CACHE").unwrap_or_else(|| root.join(crate::pack::PACK_ROOT).join("kernel-cache").display().to_string()));
        env.set("VMAFX_REQUIRE_GPU", lane.name());
        if let Some(d) = hip_standin {
            // The stand-in and its libcudart.so.12 beside it; the host's
            // NVRTC (its SONAME and the builtins it opens by name) after.
            let lib = d.join("libamdhip64.so").display().to_string();
            env.set("VMAFX_HIP_LIB", lib.clone());
            env.set("VMAFX_HIPRTC_LIB", lib);
            let mut path = vec![d.display().to_string()];
            path.extend(outer("LD_LIBRARY_PATH").into_iter().filter(|p| !p.is_empty()));
            if let Some(dir) = nvrtc.as_ref().and_then(|n| n.parent()) {
                path.push(dir.display().to_string());
            }
            env.set("LD_LIBRARY_PATH", path.join(":"));
            // The lane asks hiprtc for an AMD target; the stand-in compiles
            // for the device's own compute capability whatever it is given.
            env.set("VMAFX_HIP_ARCH", outer("VMAFX_HIP_ARCH").unwrap_or_else(|| "gfx90a".into()));
        }
        env
    }

    /// Discovers NVRTC on this host and builds the lanes' environment.
    pub fn discover(lane: Lane, root: &Path, hip_standin: Option<&Path>) -> HostEnv {
        let nvrtc = nvrtc_candidates(&site_packages()).into_iter().find(|p| p.exists());
        HostEnv::for_lane(lane, root, &|k| std::env::var(k).ok(), nvrtc, hip_standin)
    }

    /// `export KEY='value'` lines for a shell's eval.
    pub fn exports(&self) -> String {
        self.vars.iter().map(|(k, v)| format!("export {k}='{}'\n", v.replace('\'', "'\\''"))).collect()
    }

    pub fn describe(&self) -> String {
        self.vars.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

pub struct StepOutcome {
    pub name: String,
    /// The command exited 0.
    pub exit_ok: bool,
    pub seconds: f64,
    pub log: PathBuf,
    pub report: StepReport,
}

/// Runs steps, each teed to `logs/NAME.log`, and remembers them.
pub struct Driver {
    pub logs: PathBuf,
    pub env: HostEnv,
    pub dry_run: bool,
    /// Each step's output to the console too (off in the unit tests).
    pub echo: bool,
    start: Instant,
    pub outcomes: Vec<StepOutcome>,
}

impl Driver {
    /// Logs go to build/xtask/logs (`hand_back` copies them to $OUT).
    pub fn new(root: &Path, env: HostEnv, dry_run: bool) -> Driver {
        let logs = root.join(crate::pack::PACK_ROOT).join("logs");
        if !dry_run {
            let _ = std::fs::create_dir_all(&logs);
            let _ = std::fs::write(logs.join("summary.log"), "");
        }
        Driver { logs, env, dry_run, echo: true, start: Instant::now(), outcomes: Vec::new() }
    }

    /// As `new`, keeping the summary log of an earlier driver of this run.
    pub fn new_appending(root: &Path, env: HostEnv, dry_run: bool) -> Driver {
        let summary = Driver::new(root, HostEnv::default(), true).logs.join("summary.log");
        let kept = std::fs::read(&summary).unwrap_or_default();
        let d = Driver::new(root, env, dry_run);
        if !dry_run {
            let _ = std::fs::write(&summary, kept);
        }
        d
    }

    /// When $OUT is set (the device tool's folder of files to bring back):
    /// `files` of the logs (the summary, the tables) as they are, and every
    /// log in one archive, $OUT/xtask-logs.tar.gz.
    pub fn hand_back(&self, files: &[&str]) {
        let Some(out) = std::env::var_os("OUT").filter(|o| !o.is_empty()).map(PathBuf::from) else { return };
        if self.dry_run {
            return;
        }
        let _ = std::fs::create_dir_all(&out);
        for f in files {
            let _ = std::fs::copy(self.logs.join(f), out.join(f));
        }
        let tar = Command::new("tar").arg("-czf").arg(out.join("xtask-logs.tar.gz")).arg("-C").arg(&self.logs).arg(".").status();
        if !tar.map(|s| s.success()).unwrap_or(false) {
            self.note("could not archive the logs into $OUT (tar)");
        }
    }

    /// A line to the console and the summary log, with the time since start.
    pub fn note(&self, line: &str) {
        let line = format!("[xtask +{}s] {line}", self.start.elapsed().as_secs());
        eprintln!("{line}");
        if !self.dry_run {
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(self.logs.join("summary.log")) {
                let _ = writeln!(f, "{line}");
            }
        }
    }

    /// Runs `argv` with the lanes' environment plus `extra`; its stdout and
    /// stderr together to the console and logs/NAME.log.
    pub fn step(&mut self, name: &str, argv: &[String], extra: &[(&str, &str)]) -> &StepOutcome {
        let log = self.logs.join(format!("{name}.log"));
        let shown = extra.iter().map(|(k, v)| format!("{k}={v} ")).collect::<String>() + &argv.join(" ");
        if self.dry_run {
            println!("step {name}: {shown}");
            self.outcomes.push(StepOutcome { name: name.into(), exit_ok: true, seconds: 0.0, log, report: StepReport::default() });
            return self.outcomes.last().unwrap();
        }
        self.note(&format!("{name}: {shown}"));
        let t = Instant::now();
        let (exit_ok, text) = match run_teed(argv, &self.env, extra, &log, self.echo) {
            Ok(r) => r,
            Err(e) => (false, format!("xtask: could not run {}: {e}\n", argv[0])),
        };
        let report = StepReport::parse(&text);
        let outcome = StepOutcome { name: name.into(), exit_ok, seconds: t.elapsed().as_secs_f64(), log, report };
        self.note(&format!("{name}: {}", if outcome.exit_ok { "ok" } else { "FAILED" }));
        self.outcomes.push(outcome);
        self.outcomes.last().unwrap()
    }
}

fn run_teed(argv: &[String], env: &HostEnv, extra: &[(&str, &str)], log: &Path, echo: bool) -> std::io::Result<(bool, String)> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
    for (k, v) in &env.vars {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    // The pipe's write ends live in `cmd`: drop it so the read ends at exit.
    drop(cmd);
    let mut file = std::fs::File::create(log)?;
    let mut all = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if echo {
            let _ = std::io::stdout().write_all(&buf[..n]);
        }
        file.write_all(&buf[..n])?;
        all.extend_from_slice(&buf[..n]);
    }
    let status = child.wait()?;
    Ok((status.success(), String::from_utf8_lossy(&all).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn nvrtc_is_looked_for_in_the_toolkit_then_the_wheels() {
        let c = nvrtc_candidates(&["/usr/lib/python3/dist-packages".into()]);
        assert_eq!(c[0], PathBuf::from("/usr/local/cuda/lib64/libnvrtc.so.13"));
        assert_eq!(c[2], PathBuf::from("/usr/lib/python3/dist-packages/nvidia/cu13/lib/libnvrtc.so.13"));
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn the_cuda_lane_is_required_and_its_cache_under_the_pack() {
        let env = HostEnv::for_lane(Lane::Cuda, Path::new("/w"), &none, Some("/usr/local/cuda/lib64/libnvrtc.so.13".into()), None);
        assert_eq!(env.get("VMAFX_REQUIRE_GPU"), Some("cuda"));
        assert_eq!(env.get("VMAFX_NVRTC_LIB"), Some("/usr/local/cuda/lib64/libnvrtc.so.13"));
        assert_eq!(env.get("VMAFX_KERNEL_CACHE"), Some("/w/build/xtask/kernel-cache"));
        assert_eq!(env.get("VMAFX_HIP_LIB"), None);
    }

    #[test]
    fn the_hip_lane_points_at_the_standin_with_nvrtc_after_it() {
        let outer = |k: &str| (k == "LD_LIBRARY_PATH").then(|| "/opt/x".to_string());
        let env = HostEnv::for_lane(Lane::Hip, Path::new("/w"), &outer, Some("/usr/local/cuda/lib64/libnvrtc.so.13".into()), Some(Path::new("/w/build/xtask/hip-standin")));
        assert_eq!(env.get("VMAFX_REQUIRE_GPU"), Some("hip"));
        assert_eq!(env.get("VMAFX_HIP_LIB"), Some("/w/build/xtask/hip-standin/libamdhip64.so"));
        assert_eq!(env.get("VMAFX_HIPRTC_LIB"), env.get("VMAFX_HIP_LIB"));
        assert_eq!(env.get("LD_LIBRARY_PATH"), Some("/w/build/xtask/hip-standin:/opt/x:/usr/local/cuda/lib64"));
        assert_eq!(env.get("VMAFX_HIP_ARCH"), Some("gfx90a"));
    }

    #[test]
    fn exports_quote_for_a_shell() {
        let mut env = HostEnv::default();
        env.set("A", "it's");
        assert_eq!(env.exports(), "export A='it'\\''s'\n");
    }

    #[test]
    fn a_variable_the_tests_read_is_kept_when_set() {
        let outer = |k: &str| (k == "VMAFX_NVRTC_LIB").then(|| "/mine/libnvrtc.so.13".to_string());
        let env = HostEnv::for_lane(Lane::Cuda, Path::new("/w"), &outer, Some("/usr/local/cuda/lib64/libnvrtc.so.13".into()), None);
        assert_eq!(env.get("VMAFX_NVRTC_LIB"), Some("/mine/libnvrtc.so.13"));
    }

    #[test]
    fn a_step_is_teed_to_its_log_and_read() {
        let root = std::env::temp_dir().join(format!("xtask-host-test-{}", std::process::id()));
        let mut d = Driver { logs: root.clone(), env: HostEnv::default(), dry_run: false, echo: false, start: Instant::now(), outcomes: Vec::new() };
        std::fs::create_dir_all(&root).unwrap();
        let argv: Vec<String> = ["sh", "-c", "echo 'test result: ok. 2 passed; 0 failed;'; echo SKIP hip: no device >&2; exit 3"].iter().map(|s| s.to_string()).collect();
        let o = d.step("probe", &argv, &[("A", "1")]);
        assert!(!o.exit_ok);
        assert_eq!(o.report.passed, 2);
        assert_eq!(o.report.skips, vec!["SKIP hip: no device"]);
        assert!(std::fs::read_to_string(root.join("probe.log")).unwrap().contains("SKIP hip"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
