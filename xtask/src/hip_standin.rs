//! A libamdhip64.so stand-in for NVIDIA GPUs, built here (x86-64, no GPU, no
//! CUDA toolkit): AMD's own HIP headers compiled for their NVIDIA platform
//! (__HIP_PLATFORM_NVIDIA__), so every hip*/hiprtc* call the HIP lane makes
//! is AMD's mapping onto the CUDA runtime/driver and NVRTC. The wrappers
//! only export those header functions under their real names
//! (tools/hip-standin/exports.def; docs/gpu.md, "The HIP lane on an NVIDIA
//! GPU"). `cargo xtask hip-standin pack` fetches once into a cache keyed by
//! the exact versions, builds build/xtask/hip-standin/ (libamdhip64.so, also
//! named libhiprtc.so, and libcudart.so.12 beside it, RUNPATH $ORIGIN),
//! checks every symbol of the HIP lane's tables is exported and nothing but
//! the GPU host's libraries and glibc is needed, and writes its MANIFEST.

use crate::pack::{self, Manifest};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned inputs (flags of `hip-standin pack`, these defaults).
pub struct Versions {
    /// Debian trixie's libamdhip64-dev: AMD's HIP 5.7.1 headers.
    pub deb: String,
    /// CUDA 12.9's runtime (libcudart.so.12) and its headers; also the
    /// profiler API's version (CUDA 13's headers break HIP 5.7's mappings).
    pub cudart: String,
    pub nvrtc: String,
    pub nvcc: String,
    pub cccl: String,
    /// The GPU host's NVRTC, loaded at run time (NVRTC 12 is not carried).
    pub nvrtc_soname: String,
}

impl Default for Versions {
    fn default() -> Versions {
        Versions {
            deb: "5.7.1-6+deb13u1".into(),
            cudart: "12.9.79".into(),
            nvrtc: "12.9.86".into(),
            nvcc: "12.9.86".into(),
            cccl: "12.9.27".into(),
            nvrtc_soname: "libnvrtc.so.13".into(),
        }
    }
}

impl Versions {
    fn key(&self) -> String {
        format!("hip-{}+cudart-{}+nvrtc-{}+nvcc-{}+cccl-{}", self.deb, self.cudart, self.nvrtc, self.nvcc, self.cccl)
    }
}

fn log(line: &str) {
    eprintln!("[hip-standin] {line}");
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd.output().map_err(|e| format!("{shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{shown} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An identifier starting at `s` (letters, digits, '_').
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Every `hip…` identifier in `line` that starts a word.
fn hip_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices("hip") {
        let before = line[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        out.push(ident(&line[i..]).to_string());
    }
    out
}

/// The symbols the HIP lane's tables load: `hip…: fn(` fields of fn_table!,
/// the names in an rtc_table!'s `calls(…);`, and the calls FFmpeg's HIP
/// hwcontext loads (`LOAD_SYMBOL(hip…)`, `"hip…")`).
pub fn table_symbols(rust_sources: &[String], hwcontext: &str) -> Vec<String> {
    let mut s = Vec::new();
    for text in rust_sources {
        let mut in_calls = false;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("calls(") {
                in_calls = true;
            }
            if in_calls {
                s.extend(hip_words(t));
                in_calls = !t.contains(");");
                continue;
            }
            if t.starts_with("hip") {
                let name = ident(t);
                if t[name.len()..].trim_start().strip_prefix(':').is_some_and(|r| r.trim_start().starts_with("fn(")) {
                    s.push(name.to_string());
                }
            }
        }
    }
    for (i, _) in hwcontext.match_indices("LOAD_SYMBOL(hip") {
        s.push(ident(&hwcontext[i + "LOAD_SYMBOL(".len()..]).to_string());
    }
    for (i, _) in hwcontext.match_indices("\"hip") {
        let name = ident(&hwcontext[i + 1..]);
        if hwcontext[i + 1 + name.len()..].starts_with("\")") {
            s.push(name.to_string());
        }
    }
    s.retain(|n| n.len() > 3);
    s.sort();
    s.dedup();
    s
}

fn sources_table_symbols(root: &Path) -> Result<Vec<String>, String> {
    let mut texts = Vec::new();
    let dir = root.join("src/device/gpu");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rs")).collect();
    files.sort();
    for f in files {
        texts.push(std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    let hw = std::fs::read_to_string(root.join("ffmpeg-patches/src/hip/hwcontext_hip.c")).map_err(|e| format!("hwcontext_hip.c: {e}"))?;
    Ok(table_symbols(&texts, &hw))
}

/// The first Debian mirror this machine's apt configuration names (one-line
/// and deb822 sources), for a private trixie list.
pub fn debian_mirror(sources: &[String]) -> Option<String> {
    let mut uris = Vec::new();
    for text in sources {
        for line in text.lines() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("URIs:") {
                uris.extend(rest.split_whitespace().map(str::to_string));
            } else if t.starts_with("deb ") || t.starts_with("deb-src ") {
                uris.extend(t.split_whitespace().filter(|w| w.starts_with("http://") || w.starts_with("https://")).map(str::to_string));
            }
        }
    }
    uris.into_iter().find(|u| u.trim_end_matches('/').ends_with("/debian") && !u.contains("snapshot"))
}

fn apt_sources() -> Vec<String> {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(d) = std::fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(d.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    files.iter().filter_map(|f| std::fs::read_to_string(f).ok()).collect()
}

/// Downloads, once, the headers and libcudart into the cache.
fn fetch(v: &Versions) -> Result<PathBuf, String> {
    let home = std::env::var("XDG_CACHE_HOME").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| format!("{}/.cache", std::env::var("HOME").unwrap_or_default()));
    let cache = PathBuf::from(home).join("vmafx/hip-standin").join(v.key());
    if cache.join(".complete").exists() {
        log(&format!("cached: {}", cache.display()));
        return Ok(cache);
    }
    let t = std::env::temp_dir().join(format!("xtask-hip-standin-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let result = fetch_into(v, &cache, &t);
    let _ = std::fs::remove_dir_all(&t);
    result.map(|_| cache)
}

fn fetch_into(v: &Versions, cache: &Path, t: &Path) -> Result<(), String> {
    let mk = |p: &Path| std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()));
    mk(&t.join("lists/partial"))?;
    mk(&t.join("cache/archives/partial"))?;
    let mirror = debian_mirror(&apt_sources()).ok_or("no Debian mirror in the apt sources")?;
    log(&format!("libamdhip64-dev {} (trixie, from the apt sources' mirror)", v.deb));
    std::fs::write(t.join("list"), format!("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {mirror} trixie main\n")).map_err(|e| e.to_string())?;
    let apt_opts = [
        format!("-oDir::Etc::SourceList={}", t.join("list").display()),
        "-oDir::Etc::SourceParts=/dev/null".into(),
        format!("-oDir::State::Lists={}", t.join("lists").display()),
        format!("-oDir::Cache={}", t.join("cache").display()),
    ];
    run(Command::new("apt-get").args(&apt_opts).args(["update", "-qq"]))?;
    run(Command::new("apt-get").args(&apt_opts).args(["download", &format!("libamdhip64-dev={}", v.deb)]).current_dir(t))?;
    let deb = std::fs::read_dir(t).map_err(|e| e.to_string())?.filter_map(|e| e.ok()).map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "deb")).ok_or("apt-get download left no .deb")?;
    run(Command::new("dpkg").arg("-x").arg(&deb).arg(t.join("deb")))?;
    mk(&cache.join("hip"))?;
    mk(&cache.join("cuda/include"))?;
    mk(&cache.join("lib"))?;
    run(Command::new("cp").arg("-r").arg(t.join("deb/usr/include/hip")).arg(cache.join("hip/")))?;
    log(&format!("CUDA {} runtime, NVRTC {} and nvcc {} headers, CCCL {} (pip wheels; headers only but libcudart)", v.cudart, v.nvrtc, v.nvcc, v.cccl));
    let pins = [
        format!("nvidia-cuda-runtime-cu12=={}", v.cudart),
        format!("nvidia-cuda-nvrtc-cu12=={}", v.nvrtc),
        format!("nvidia-cuda-nvcc-cu12=={}", v.nvcc),
        format!("nvidia-cuda-profiler-api-cu12=={}", v.cudart),
        format!("nvidia-cuda-cccl-cu12=={}", v.cccl),
    ];
    run(Command::new("python3")
        .args(["-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"])
        .args(["--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux_2_27_x86_64", "-d"])
        .arg(t.join("whl"))
        .args(&pins))?;
    for w in std::fs::read_dir(t.join("whl")).map_err(|e| e.to_string())?.filter_map(|e| e.ok()) {
        // unzip fails when a wheel lacks one of the patterns: each wheel
        // holds one of them.
        let _ = Command::new("unzip")
            .args(["-q", "-o"])
            .arg(w.path())
            .args(["nvidia/cuda_runtime/*", "nvidia/cuda_profiler_api/include/*", "nvidia/cuda_nvrtc/include/*", "nvidia/cuda_nvcc/include/crt/*", "nvidia/cuda_cccl/include/nv/*", "-d"])
            .arg(t.join("w"))
            .output();
    }
    let w = t.join("w/nvidia");
    let inc = cache.join("cuda/include");
    run(Command::new("cp").arg("-r").arg(w.join("cuda_runtime/include/.")).arg(&inc))?;
    run(Command::new("cp").arg(w.join("cuda_nvrtc/include/nvrtc.h")).arg(w.join("cuda_profiler_api/include/cuda_profiler_api.h")).arg(&inc))?;
    // CUDA 12.9's runtime headers include crt/, which ships with nvcc's wheel.
    run(Command::new("cp").arg("-r").arg(w.join("cuda_nvcc/include/crt")).arg(w.join("cuda_cccl/include/nv")).arg(&inc))?;
    run(Command::new("cp").arg("-L").arg(w.join("cuda_runtime/lib/libcudart.so.12")).arg(cache.join("lib/")))?;
    std::fs::write(cache.join(".complete"), format!("libamdhip64-dev {}; {}\n", v.deb, pins.join("; "))).map_err(|e| e.to_string())?;
    log(&format!("fetched into {}", cache.display()));
    Ok(())
}

/// The libraries the stand-in may need: the host's driver and NVRTC, the
/// libcudart beside it, glibc.
fn needed_ok(lib: &str, v: &Versions) -> bool {
    lib == v.nvrtc_soname || matches!(lib, "libcudart.so.12" | "libcuda.so.1" | "libc.so.6" | "libm.so.6" | "libdl.so.2" | "libpthread.so.0" | "ld-linux-x86-64.so.2")
}

fn needed(lib: &Path) -> Result<Vec<String>, String> {
    let text = run(Command::new("readelf").arg("-d").arg(lib))?;
    Ok(text.lines().filter(|l| l.contains("(NEEDED)")).filter_map(|l| l.split_once('[').and_then(|(_, r)| r.split_once(']')).map(|(n, _)| n.to_string())).collect())
}

/// Every table symbol exported, no unexpected library needed.
pub fn check(root: &Path, out: &Path, v: &Versions) -> Result<String, String> {
    let lib = out.join("libamdhip64.so");
    let exported: Vec<String> = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib))?.lines().filter_map(|l| l.split_whitespace().nth(2)).map(str::to_string).collect();
    let symbols = sources_table_symbols(root)?;
    if symbols.is_empty() {
        return Err("no fn_table symbols found in src/device/gpu/*.rs".into());
    }
    // Defined by AMD's NVIDIA header for nvcc only (tools/hip-standin/exports.def).
    let missing: Vec<&String> = symbols.iter().filter(|s| *s != "hipArrayGetDescriptor" && !exported.contains(s)).collect();
    let libs = needed(&lib)?;
    let unexpected: Vec<&String> = libs.iter().filter(|l| !needed_ok(l, v)).collect();
    if !missing.is_empty() || !unexpected.is_empty() {
        return Err(format!("MISSING exports (fields of the HIP tables): {missing:?}; unexpected dependencies: {unexpected:?}"));
    }
    Ok(format!("the {} symbols of the HIP tables exported (hipArrayGetDescriptor excepted) ({} in all); needs {}", symbols.len(), exported.len(), libs.join(" ")))
}

pub fn pack(root: &Path, v: &Versions, dry_run: bool) -> Result<(), String> {
    let out = pack::part_dir(root, "hip-standin");
    if dry_run {
        println!("fetch (once) into ~/.cache/vmafx/hip-standin/{}", v.key());
        println!("compile tools/hip-standin/standin.cpp, apart.cpp; link {}/libamdhip64.so against stubs of libcuda.so.1 and {}", out.display(), v.nvrtc_soname);
        return Ok(());
    }
    let cache = fetch(v)?;
    let w = root.join("build/xtask-work/hip-standin");
    let _ = std::fs::remove_dir_all(&w);
    let _ = std::fs::remove_dir_all(&out);
    for d in [&w, &out] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let inc = |c: &mut Command| {
        c.args(["-D__HIP_PLATFORM_NVIDIA__", "-I"]).arg(cache.join("hip")).arg("-I").arg(cache.join("cuda/include")).args(["-I", "tools/hip-standin"]);
    };
    log("compiling tools/hip-standin/standin.cpp");
    let mut c = Command::new("g++");
    c.args(["-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden", "-Wall", "-Werror", "-Wno-deprecated-declarations"]);
    inc(&mut c);
    run(c.args(["-c", "tools/hip-standin/standin.cpp", "-o"]).arg(w.join("standin.o")))?;
    run(Command::new("g++").args(["-O2", "-fPIC", "-fvisibility=hidden", "-Wall", "-Werror", "-c", "tools/hip-standin/apart.cpp", "-o"]).arg(w.join("apart.o")))?;
    // The driver and NVRTC calls AMD's inline mappings make resolve at load
    // time from the GPU host's libcuda.so.1 and NVRTC; link-time stubs of
    // those SONAMEs stand for them here.
    let undefined = run(Command::new("nm").arg("-u").arg(w.join("standin.o")))?;
    for (soname, prefix) in [("libcuda.so.1", "cu"), (v.nvrtc_soname.as_str(), "nvrtc")] {
        let stubs: String = undefined
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .filter(|s| s.strip_prefix(prefix).is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase())))
            .map(|s| format!("void {s}(void) {{}}\n"))
            .collect();
        let c_file = w.join(format!("{soname}.c"));
        std::fs::write(&c_file, stubs).map_err(|e| e.to_string())?;
        run(Command::new("gcc").args(["-shared", "-fPIC", &format!("-Wl,-soname,{soname}"), "-o"]).arg(w.join(soname)).arg(&c_file))?;
        let link = soname.split(".so").next().unwrap_or(soname).to_string() + ".so";
        let _ = std::fs::remove_file(w.join(&link));
        std::os::unix::fs::symlink(soname, w.join(link)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(cache.join("lib/libcudart.so.12"), out.join("libcudart.so.12")).map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(std::fs::canonicalize(out.join("libcudart.so.12")).map_err(|e| e.to_string())?, w.join("libcudart.so")).map_err(|e| e.to_string())?;
    run(Command::new("g++")
        .args(["-shared", "-o"])
        .arg(out.join("libamdhip64.so"))
        .arg(w.join("standin.o"))
        .arg(w.join("apart.o"))
        .args(["-Wl,-soname,libamdhip64.so", "-static-libstdc++", "-static-libgcc", "-L"])
        .arg(&w)
        .args(["-lcudart", "-lnvrtc", "-lcuda", "-Wl,-rpath,$ORIGIN", "-Wl,--no-undefined", "-Wl,--as-needed", "-Wl,--exclude-libs,ALL"]))?;
    std::os::unix::fs::symlink("libamdhip64.so", out.join("libhiprtc.so")).map_err(|e| e.to_string())?;
    let checked = check(root, &out, v)?;
    log(&format!("checked: {checked}"));
    let mut m = Manifest::of_sources("hip-standin", pack::CRATE_SOURCES, "cargo xtask hip-standin pack");
    for f in ["libamdhip64.so", "libcudart.so.12"] {
        m.add_file(&out, f)?;
    }
    m.notes.push(std::fs::read_to_string(cache.join(".complete")).unwrap_or_default().trim().to_string());
    m.notes.push(format!("{}; {checked}", run(Command::new("g++").arg("--version"))?.lines().next().unwrap_or("")));
    pack::write(&out, &m)?;
    let _ = std::fs::remove_dir_all(&w);
    log(&m.summary());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_symbols_come_from_fields_calls_and_the_hwcontext() {
        let rust = "    fn_table! {\n        hipInit: fn(c_uint) -> HipError;\n        hipFree : fn(*mut c_void) -> HipError;\n        other: fn();\n    }\n    calls(hiprtcGetErrorString, hiprtcCreateProgram,\n        hiprtcCompileProgram);\n    self.calls().check(x, \"hiprtcVersion\")?;\n".to_string();
        let hw = "LOAD_SYMBOL(hipMalloc); dlsym(h, \"hipImportExternalMemory\"); \"hipNope\";";
        assert_eq!(table_symbols(&[rust], hw), ["hipFree", "hipImportExternalMemory", "hipInit", "hipMalloc", "hiprtcCompileProgram", "hiprtcCreateProgram", "hiprtcGetErrorString"]);
    }

    #[test]
    fn the_projects_tables_name_the_calls_the_lane_makes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let s = sources_table_symbols(root).unwrap();
        for name in ["hipInit", "hiprtcCompileProgram", "hipImportExternalMemory"] {
            assert!(s.iter().any(|x| x == name), "{name} not in {s:?}");
        }
    }

    #[test]
    fn the_mirror_comes_from_either_source_format_and_never_a_snapshot() {
        let one_line = "deb http://snapshot.example.org/archive/debian/20260101 trixie main\ndeb http://deb.example.org/debian bookworm main\n".to_string();
        assert_eq!(debian_mirror(&[one_line]), Some("http://deb.example.org/debian".into()));
        let deb822 = "Types: deb\nURIs: http://mirror.example.net/debian/\nSuites: bookworm\n".to_string();
        assert_eq!(debian_mirror(&[deb822]), Some("http://mirror.example.net/debian/".into()));
        assert_eq!(debian_mirror(&["deb http://example.org/ubuntu noble main\n".to_string()]), None);
    }
}
