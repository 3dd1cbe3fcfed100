//! Build script: the GPU kernels compiled ahead of time, so a first run
//! needs no run-time compile (docs/gpu.md, "Kernels built ahead").
//!
//! Where NVRTC (`VMAFX_NVRTC_LIB`, else scripts/gpu-ci-deps's wheel in
//! build/gpu-deps, else its SONAMEs) or hiprtc
//! (`VMAFX_HIPRTC_LIB`, else libhiprtc.so.7/.6, else ROCm 5's
//! libamdhip64.so.5) loads here, every kernels/*.cu is compiled for the
//! targets of src/device/gpu/kernel_key.rs that compiler supports, with the
//! options and key the run-time path uses (that file is included below), and
//! written to `$OUT_DIR/embedded_kernels.rs`, which src/device/gpu/embedded.rs
//! includes. A compiler that is missing is a cargo warning naming it; the
//! crate then compiles those kernels at run time, as before.
//! `VMAFX_EMBED_KERNELS=off` skips both compilers.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

#[path = "src/device/gpu/kernel_key.rs"]
#[allow(dead_code)]
mod kernel_key;

const COMPAT_HEADER: &str = "vmafx_compat.h";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=kernels");
    println!("cargo:rerun-if-changed=src/device/gpu/kernel_key.rs");
    for var in ["VMAFX_NVRTC_LIB", "VMAFX_HIPRTC_LIB", "VMAFX_EMBED_KERNELS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernels = read_kernels();
    let header = std::fs::read_to_string(format!("kernels/{COMPAT_HEADER}")).expect("kernels/vmafx_compat.h");
    let off = std::env::var("VMAFX_EMBED_KERNELS").is_ok_and(|v| v == "off");

    let mut entries: Vec<Entry> = Vec::new();
    let mut compilers: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let started = std::time::Instant::now();
    if off {
        missing.push("nvrtc: VMAFX_EMBED_KERNELS=off".into());
        missing.push("hiprtc: VMAFX_EMBED_KERNELS=off".into());
    } else {
        let (nvrtc, hiprtc) = std::thread::scope(|s| {
            let cuda = s.spawn(|| cuda_entries(&out, &kernels, &header));
            let hip = s.spawn(|| hip_entries(&out, &kernels, &header));
            (cuda.join().expect("NVRTC thread"), hip.join().expect("hiprtc thread"))
        });
        for (vendor, result) in [("nvrtc", nvrtc), ("hiprtc", hiprtc)] {
            match result {
                Ok((compiler, list)) => {
                    compilers.push(compiler);
                    entries.extend(list);
                }
                Err(why) => {
                    println!("cargo:warning=vmafx: no {vendor} kernels built ahead ({why}); they compile at run time");
                    missing.push(format!("{vendor}: {why}"));
                }
            }
        }
    }
    write_table(&out, &entries, &compilers, &missing, started.elapsed());
}

/// Compiled code of `key` from an earlier run of this script: its own
/// `$OUT_DIR/kernels/<key>.bin`, else a sibling's (the same crate built with
/// other features or for tests, in `$OUT_DIR/../..`; only read, and written
/// by its owner through a rename, so never seen half written). The key
/// covers source, header, options, target and compiler version, so a file
/// of that name is that compile (NVRTC and hiprtc are deterministic:
/// tests/device/kernels_compile.rs). A kernel edit recompiles that source
/// only; a second feature set compiles nothing.
fn earlier_build(out: &Path, key: &str) -> Option<Vec<u8>> {
    let name = format!("{key}.bin");
    let own = out.join("kernels").join(&name);
    let siblings = out.parent().and_then(Path::parent).map(|build| {
        std::fs::read_dir(build)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("vmafx-"))
            .map(|d| d.path().join("out/kernels").join(&name))
    });
    std::iter::once(own)
        .chain(siblings.into_iter().flatten())
        .find_map(|p| std::fs::read(p).ok().filter(|code| !code.is_empty()))
}

/// `code` as `$OUT_DIR/kernels/<key>.bin`, written then renamed.
fn store(out: &Path, key: &str, code: &[u8]) -> PathBuf {
    let dir = out.join("kernels");
    std::fs::create_dir_all(&dir).expect("OUT_DIR/kernels");
    let path = dir.join(format!("{key}.bin"));
    let tmp = dir.join(format!("{key}.tmp{}", std::process::id()));
    std::fs::write(&tmp, code).and_then(|_| std::fs::rename(&tmp, &path)).expect("an embedded kernel");
    path
}

/// One compiled kernel.
struct Entry {
    file: String,
    target: String,
    compiler: &'static str,
    version: (i32, i32),
    key: String,
    code: Vec<u8>,
    /// Taken from an earlier build ([`earlier_build`]), not compiled.
    reused: bool,
}

/// kernels/*.cu as (file name, text), by name.
fn read_kernels() -> Vec<(String, String)> {
    let mut list: Vec<(String, String)> = std::fs::read_dir("kernels")
        .expect("kernels/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .map(|n| {
            let text = std::fs::read_to_string(Path::new("kernels").join(&n)).expect("a kernel source");
            (n, text)
        })
        .collect();
    list.sort();
    list
}

/// NVRTC's and hiprtc's shared C shape (as src/device/gpu/rtc.rs).
struct Rtc {
    _lib: libloading::Library,
    create: unsafe extern "C" fn(*mut *mut c_void, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut *mut c_void) -> c_int,
    compile: unsafe extern "C" fn(*mut c_void, c_int, *const *const c_char) -> c_int,
    code_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    code: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
    log_size: unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int,
    log: unsafe extern "C" fn(*mut c_void, *mut c_char) -> c_int,
}

/// The symbol `name` of `lib` as a function pointer of type `T`.
///
/// # Safety
/// `T` is the symbol's C signature.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
    // SAFETY: the caller's promise.
    unsafe { lib.get::<T>(name.as_bytes()) }.map(|s| *s).map_err(|e| format!("{name}: {e}"))
}

/// Opens the first of `names` that loads.
fn open_first(names: &[String]) -> Result<(libloading::Library, String), String> {
    let mut last = String::from("no candidates");
    for name in names {
        // SAFETY: a vendor compiler's initialisers take no arguments.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => return Ok((lib, name.clone())),
            // libloading's error names the library already.
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("tried {}; {last}", names.join(", ")))
}

/// The override variable's path alone when set, else `candidates`.
fn candidates(var: &str, candidates: &[&str]) -> Vec<String> {
    match std::env::var(var) {
        Ok(path) if !path.is_empty() => vec![path],
        _ => candidates.iter().map(|s| s.to_string()).collect(),
    }
}

impl Rtc {
    /// The eight calls, named `<prefix><Name>`; the code calls of a cubin
    /// (`code` = ("GetCUBINSize", "GetCUBIN")) or PTX / a code object.
    fn load(lib: libloading::Library, prefix: &str, code: (&str, &str)) -> Result<Rtc, String> {
        let n = |s: &str| format!("{prefix}{s}\0");
        // SAFETY: nvrtc.h's and hiprtc.h's signatures, as rtc.rs declares them.
        unsafe {
            Ok(Rtc {
                create: symbol(&lib, &n("CreateProgram"))?,
                destroy: symbol(&lib, &n("DestroyProgram"))?,
                compile: symbol(&lib, &n("CompileProgram"))?,
                code_size: symbol(&lib, &n(code.0))?,
                code: symbol(&lib, &n(code.1))?,
                log_size: symbol(&lib, &n("GetProgramLogSize"))?,
                log: symbol(&lib, &n("GetProgramLog"))?,
                _lib: lib,
            })
        }
    }

    /// `source` compiled with `options`; the log on failure.
    fn build(&self, name: &str, source: &str, header: &str, options: &[String]) -> Result<Vec<u8>, String> {
        let c = |s: &str| CString::new(s).expect("no NUL in kernel text");
        let (c_source, c_name, c_header, c_header_name) = (c(source), c(name), c(header), c(COMPAT_HEADER));
        let c_options: Vec<CString> = options.iter().map(|o| c(o)).collect();
        let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let mut prog: *mut c_void = std::ptr::null_mut();
        // SAFETY: every string is NUL-terminated and outlives the program;
        // one header, one name.
        let rc = unsafe { (self.create)(&mut prog, c_source.as_ptr(), c_name.as_ptr(), 1, &c_header.as_ptr(), &c_header_name.as_ptr()) };
        if rc != 0 {
            return Err(format!("{name}: create program failed ({rc})"));
        }
        // SAFETY: prog is live until destroyed below; each buffer has the size
        // the compiler reported.
        let out = unsafe {
            let rc = (self.compile)(prog, option_ptrs.len() as c_int, option_ptrs.as_ptr());
            if rc != 0 {
                let mut size = 0usize;
                (self.log_size)(prog, &mut size);
                let mut log = vec![0u8; size.max(1)];
                (self.log)(prog, log.as_mut_ptr().cast());
                Err(format!("{name} {options:?}: compile failed ({rc}):\n{}", String::from_utf8_lossy(&log)))
            } else {
                let mut size = 0usize;
                let rc = (self.code_size)(prog, &mut size);
                let mut code = vec![0u8; size];
                if rc != 0 || (self.code)(prog, code.as_mut_ptr().cast()) != 0 {
                    Err(format!("{name}: reading the code failed"))
                } else {
                    Ok(code)
                }
            }
        };
        // SAFETY: created above, destroyed once.
        unsafe { (self.destroy)(&mut prog) };
        out
    }
}

/// NVRTC's builtins library, which it opens by bare name, from beside an
/// NVRTC opened by path (as src/device/gpu/nvrtc.rs does).
fn preload_builtins_beside(nvrtc_path: &str) {
    let Some(dir) = Path::new(nvrtc_path).parent().filter(|d| !d.as_os_str().is_empty()) else { return };
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("libnvrtc-builtins.so") {
            // SAFETY: NVRTC's own companion library.
            if let Ok(lib) = unsafe { libloading::Library::new(entry.path()) } {
                std::mem::forget(lib);
            }
        }
    }
}

/// Every kernel as a cubin for each of CUDA_CUBIN_TARGETS this NVRTC
/// supports, and as PTX for the newest of CUDA_PTX_TARGETS it supports.
fn cuda_entries(out: &Path, kernels: &[(String, String)], header: &str) -> Result<(String, Vec<Entry>), String> {
    // Where scripts/gpu-ci-deps puts PyPI's wheel (as tests/device/
    // kernels_compile.rs looks), then the SONAMEs; so a build here embeds
    // whether or not VMAFX_NVRTC_LIB is exported.
    let wheel = ["build/gpu-deps/nvrtc/nvidia/cu13/lib/libnvrtc.so.13", "build/gpu-deps/nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"];
    let wheel: Vec<String> = wheel.iter().filter(|p| Path::new(p).exists()).map(|p| {
        println!("cargo:rerun-if-changed={p}");
        std::fs::canonicalize(p).map_or(p.to_string(), |p| p.display().to_string())
    }).collect();
    let mut sonames: Vec<&str> = wheel.iter().map(String::as_str).collect();
    sonames.extend(["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]);
    let names = candidates("VMAFX_NVRTC_LIB", &sonames);
    let (lib, path) = open_first(&names)?;
    preload_builtins_beside(&path);
    type Version = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
    type Count = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: nvrtc.h's signatures.
    let (version_fn, count_fn, archs_fn) = unsafe {
        (symbol::<Version>(&lib, "nvrtcVersion\0")?, symbol::<Count>(&lib, "nvrtcGetNumSupportedArchs\0")?, symbol::<Count>(&lib, "nvrtcGetSupportedArchs\0")?)
    };
    let (mut major, mut minor, mut count) = (0, 0, 0);
    // SAFETY: each writes ints; the array has `count` of them.
    let supported: Vec<c_int> = unsafe {
        version_fn(&mut major, &mut minor);
        count_fn(&mut count);
        let mut archs = vec![0; count.max(0) as usize];
        archs_fn(archs.as_mut_ptr());
        archs
    };
    let number = |target: &str| target.rsplit('_').next().and_then(|n| n.parse::<c_int>().ok());
    let supports = |target: &str| number(target).is_some_and(|n| supported.contains(&n));
    let mut targets: Vec<String> = kernel_key::CUDA_CUBIN_TARGETS.iter().filter(|t| supports(t)).map(|s| s.to_string()).collect();
    targets.extend(kernel_key::CUDA_PTX_TARGETS.iter().find(|t| supports(t)).map(|s| s.to_string()));
    let cubin = Rtc::load(lib, "nvrtc", ("GetCUBINSize", "GetCUBIN"))?;
    let (lib, _) = open_first(&[path.clone()])?;
    let ptx = Rtc::load(lib, "nvrtc", ("GetPTXSize", "GetPTX"))?;
    let jobs: Vec<(&(String, String), &String)> = kernels.iter().flat_map(|k| targets.iter().map(move |t| (k, t))).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Result<Entry, String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&((file, source), target)) = jobs.get(i) else { break done };
                        let rtc = if target.starts_with("sm_") { &cubin } else { &ptx };
                        let options = kernel_key::nvrtc_options(target);
                        let key = kernel_key::key(source, &[(COMPAT_HEADER, header)], &options, target, "nvrtc", (major, minor));
                        let earlier = earlier_build(out, &key);
                        let reused = earlier.is_some();
                        let code = earlier.map_or_else(|| rtc.build(file, source, header, &options), Ok);
                        done.push((i, code.map(|code| Entry {
                            file: file.clone(),
                            target: target.clone(),
                            compiler: "nvrtc",
                            version: (major, minor),
                            key,
                            code,
                            reused,
                        })));
                    }
                })
            })
            .collect();
        let mut all: Vec<(usize, Result<Entry, String>)> = workers.into_iter().flat_map(|w| w.join().expect("an NVRTC worker")).collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, r)| r).collect()
    });
    // A kernel that does not compile would fail at run time too: say so here.
    let entries = results.into_iter().collect::<Result<Vec<_>, _>>().unwrap_or_else(|e| panic!("NVRTC ({path}): {e}"));
    Ok((format!("nvrtc {major}.{minor} ({path}): {}", targets.join(" ")), entries))
}

/// Every kernel as an AMD code object for each of HIP_TARGETS.
fn hip_entries(out: &Path, kernels: &[(String, String)], header: &str) -> Result<(String, Vec<Entry>), String> {
    let names = candidates("VMAFX_HIPRTC_LIB", &["libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5"]);
    let (lib, path) = open_first(&names)?;
    // The ROCm version as hip.rs reads it: the runtime's when it is in this
    // library (ROCm 5), else hiprtcVersion.
    type Version1 = unsafe extern "C" fn(*mut c_int) -> c_int;
    type Version2 = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
    // SAFETY: hip_runtime_api.h's and hiprtc.h's signatures.
    let version = unsafe {
        if let Ok(f) = symbol::<Version1>(&lib, "hipRuntimeGetVersion\0") {
            let mut v = 0;
            f(&mut v);
            (v / 10_000_000, (v / 100_000) % 100)
        } else {
            let f = symbol::<Version2>(&lib, "hiprtcVersion\0")?;
            let (mut major, mut minor) = (0, 0);
            f(&mut major, &mut minor);
            (major, minor)
        }
    };
    let rtc = Rtc::load(lib, "hiprtc", ("GetCodeSize", "GetCode"))?;
    let mut entries = Vec::new();
    // One at a time: hiprtc 5.2's thread safety is not documented.
    for (file, source) in kernels {
        for target in kernel_key::HIP_TARGETS {
            let options = kernel_key::hiprtc_options(target);
            let key = kernel_key::key(source, &[(COMPAT_HEADER, header)], &options, target, "hiprtc", version);
            let earlier = earlier_build(out, &key);
            let reused = earlier.is_some();
            let code = earlier.unwrap_or_else(|| rtc.build(file, source, header, &options).unwrap_or_else(|e| panic!("hiprtc ({path}): {e}")));
            entries.push(Entry { file: file.clone(), target: target.to_string(), compiler: "hiprtc", version, key, code, reused });
        }
    }
    Ok((format!("hiprtc {}.{} ({path}): {}", version.0, version.1, kernel_key::HIP_TARGETS.join(" ")), entries))
}

/// `$OUT_DIR/embedded_kernels.rs`: `EMBEDDED` (each entry's code beside it
/// in `$OUT_DIR/kernels/`), `BUILD_COMPILERS`, `BUILD_MISSING`.
fn write_table(out: &Path, entries: &[Entry], compilers: &[String], missing: &[String], took: std::time::Duration) {
    let reused = entries.iter().filter(|e| e.reused).count();
    let mut rs = format!(
        "// Written by build.rs in {:.1} s: {} kernels compiled, {reused} from an earlier build.\n#[rustfmt::skip]\npub static EMBEDDED: &[EmbeddedKernel] = &[\n",
        took.as_secs_f64(),
        entries.len() - reused
    );
    for e in entries {
        let path = store(out, &e.key, &e.code);
        rs += &format!(
            "    EmbeddedKernel {{ file: {:?}, target: {:?}, compiler: {:?}, version: ({}, {}), key: {:?}, code: include_bytes!({:?}) }},\n",
            e.file, e.target, e.compiler, e.version.0, e.version.1, e.key, path.display().to_string()
        );
    }
    rs += "];\n/// The compilers the build used: `<name> <major>.<minor> (<library>): <targets>`.\npub static BUILD_COMPILERS: &[&str] = &[\n";
    for c in compilers {
        rs += &format!("    {c:?},\n");
    }
    rs += "];\n/// The compilers the build did not find, and why.\npub static BUILD_MISSING: &[&str] = &[\n";
    for m in missing {
        rs += &format!("    {m:?},\n");
    }
    rs += "];\n";
    std::fs::write(out.join("embedded_kernels.rs"), rs).expect("OUT_DIR/embedded_kernels.rs");
}
