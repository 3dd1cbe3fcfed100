//! The GPU loaders on any machine: a missing driver is an error that names
//! the exact library tried, never a panic; layouts are unit tests in
//! src/device/gpu/{cuda,hip}.rs.

use crate::support::rerun;
use vmafx::internals::device::gpu::{cuda, hip};

#[test]
fn cuda_driver_loads_or_names_libcuda_so_1() {
    match cuda::driver() {
        Ok(api) => {
            // A machine with the NVIDIA driver: the table is complete.
            assert_eq!(api.library, "libcuda.so.1");
            let mut version = 0;
            // SAFETY: writes one int.
            let rc = unsafe { (api.cuDriverGetVersion)(&mut version) };
            cuda::result::check(api, rc, "cuDriverGetVersion").unwrap();
            eprintln!("CUDA driver {version}");
        }
        Err(e) => {
            let s = e.to_string();
            assert!(matches!(e, vmafx::Error::Device(_)), "{s}");
            if std::env::var_os(cuda::DRIVER_ENV).is_none() {
                assert!(
                    s.contains("libcuda.so.1") && s.contains("VMAFX_CUDA_LIB"),
                    "{s}"
                );
            }
            eprintln!("no CUDA driver here: {s}");
            // Asking twice gives the same error, not a panic or a retry.
            assert_eq!(cuda::driver().unwrap_err().to_string(), s);
        }
    }
}

#[test]
fn hip_runtime_loads_or_names_every_soname() {
    match hip::runtime() {
        Ok(api) => {
            let version = api.rocm_version().unwrap();
            eprintln!("HIP runtime {}: ROCm {version:?}", api.library);
            assert!(version.0 >= 5, "{version:?}");
            let mut count = -1;
            // SAFETY: writes one int.
            let rc = unsafe { (api.hipGetDeviceCount)(&mut count) };
            if rc != 0 {
                // No AMD GPU here: the code is decoded by hipGetErrorName.
                let e = api.check(rc, "hipGetDeviceCount").unwrap_err().to_string();
                assert!(
                    e.contains("hipGetDeviceCount") && e.contains("hipError"),
                    "{e}"
                );
                eprintln!("{e}");
            }
        }
        Err(e) => {
            let s = e.to_string();
            for name in hip::HIP_CANDIDATES {
                assert!(s.contains(name), "{s} lacks {name}");
            }
        }
    }
}

#[test]
fn hiprtc_loads_or_names_both_places_it_can_live() {
    match hip::hiprtc() {
        Ok(rtc) => eprintln!("hiprtc {:?} from {}", rtc.version().unwrap(), rtc.library),
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.contains("libhiprtc.so.6") || s.contains("libamdhip64.so.5"),
                "{s}"
            );
        }
    }
}

/// A scoring context on a caller's HIP stream where no AMD GPU is: a clean
/// error naming the HIP device and why, at `Context::new` (the lane opens
/// there), never a panic.
#[test]
fn hip_caller_stream_context_without_a_gpu_is_a_clean_error() {
    use vmafx::{Context, ContextConfig, DeviceChoice, DeviceKind, HipCallerStream};
    if matches!(vmafx::internals::device::count(DeviceKind::Hip), Ok(n) if n > 0) {
        eprintln!("an AMD GPU is here: tests/device/gpu_context.rs covers HipStream");
        return;
    }
    // SAFETY: 0 is the null stream of device 0, which the contract allows;
    // with no device the lane fails before using it.
    let device = DeviceChoice::HipStream(unsafe { HipCallerStream::new(0, 0) });
    let cfg = ContextConfig { device, ..Default::default() };
    let e = Context::new(cfg).err().expect("no AMD GPU, yet a HIP context opened");
    let s = e.to_string();
    assert!(matches!(e, vmafx::Error::Device(_) | vmafx::Error::InvalidArgument(_)), "{s}");
    assert!(s.contains("HIP"), "{s}");
    eprintln!("{s}");
}

/// One ROCm release as stub libraries (tests/device_loaders/rocm_stub.c):
/// the runtime's version, the names it installs, and the processors its
/// code-object manager lists.
struct Release {
    major: u32,
    version: u32,
    /// hiprtc inside the runtime (ROCm 5.x) rather than in libhiprtc.so.N.
    rtc_inside: bool,
    comgr_soname: &'static str,
    processors: &'static [&'static str],
}

const ROCM7: Release = Release { major: 7, version: 70_100_000, rtc_inside: false, comgr_soname: "libamd_comgr.so.3", processors: &["gfx90a", "gfx942", "gfx1100"] };
const ROCM6: Release = Release { major: 6, version: 60_200_000, rtc_inside: false, comgr_soname: "libamd_comgr.so.2", processors: &["gfx90a", "gfx940", "gfx1030"] };
const ROCM5: Release = Release { major: 5, version: 50_200_000, rtc_inside: true, comgr_soname: "libamd_comgr.so.2", processors: &["gfx900", "gfx90a", "gfx1030"] };

/// Builds `parts` of `releases` into a new directory: "runtime", "hiprtc",
/// "comgr" (each release's libraries under its own names). `None` without a
/// C compiler (skip), unless VMAFX_REQUIRE_GPU_COMPILERS=1.
fn stub_dir(name: &str, releases: &[&Release], parts: &[&str]) -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("rocm-stubs-{}/{name}", std::process::id()));
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/device_loaders/rocm_stub.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
    if !src.exists() {
        // A test binary carried to another host (xtask twins run).
        assert!(!required, "no {}", src.display());
        eprintln!("SKIP: the stub source is not here ({})", src.display());
        return None;
    }
    std::fs::create_dir_all(&dir).unwrap();
    for r in releases {
        let list = r.processors.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(",");
        let mut libs: Vec<(String, Vec<&str>)> = Vec::new();
        if parts.contains(&"runtime") {
            let mut defines = vec!["-DRUNTIME"];
            if r.rtc_inside {
                defines.push("-DHIPRTC");
            }
            libs.push((format!("libamdhip64.so.{}", r.major), defines));
        }
        if parts.contains(&"hiprtc") && !r.rtc_inside {
            libs.push((format!("libhiprtc.so.{}", r.major), vec!["-DHIPRTC"]));
        }
        // One comgr per SONAME: the first release listed keeps its own.
        if parts.contains(&"comgr") && !dir.join(r.comgr_soname).exists() {
            libs.push((r.comgr_soname.to_string(), vec!["-DCOMGR"]));
        }
        for (lib, defines) in libs {
            let status = std::process::Command::new(&cc)
                .args(["-std=c11", "-shared", "-fPIC", "-O1", "-w"])
                .args(&defines)
                .arg(format!("-DROCM_VERSION={}", r.version))
                .arg(format!("-DCOMGR_LIST={list}"))
                .arg(format!("-Wl,-soname,{lib}"))
                .arg("-o")
                .arg(dir.join(&lib))
                .arg(&src)
                .status();
            match status {
                Ok(s) => assert!(s.success(), "{cc} failed to build the stub {lib}"),
                Err(e) => {
                    assert!(!required, "no C compiler ({cc}): {e}");
                    eprintln!("SKIP: no C compiler ({cc}): {e}");
                    return None;
                }
            }
        }
    }
    Some(dir)
}

/// What the loader chose in a process whose library search path is `dir`
/// only (this test binary again, running [`stub_child`]): "key=value" lines.
fn loader_choices(dir: &std::path::Path, gcn_arch: Option<&str>) -> std::collections::HashMap<String, String> {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", &rerun::filter(module_path!(), "stub_child"), "--nocapture", "--test-threads=1"])
        .env("VMAFX_STUB_CHILD", "1")
        .env("LD_LIBRARY_PATH", dir)
        .env("VMAFX_KERNEL_CACHE", "off");
    for var in [hip::HIP_ENV, hip::HIPRTC_ENV, hip::COMGR_ENV, "VMAFX_HIP_ARCH", "STUB_GCN_ARCH"] {
        child.env_remove(var);
    }
    if let Some(arch) = gcn_arch {
        child.env("STUB_GCN_ARCH", arch);
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child died (a compile reached a target comgr lacks?): {:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    stdout
        .lines()
        .filter_map(|l| l.split_once("STUB ").map(|(_, said)| said))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Run by [`loader_choices`] in a child process; nothing otherwise.
#[test]
fn stub_child() {
    if std::env::var_os("VMAFX_STUB_CHILD").is_none() {
        return;
    }
    let say = |k: &str, v: String| println!("STUB {k}={}", v.replace('\n', " "));
    match hip::runtime() {
        Ok(rt) => {
            say("runtime", rt.library.clone());
            say("rocm", format!("{:?}", rt.rocm_version().unwrap()));
        }
        Err(e) => say("runtime-error", e.to_string()),
    }
    match hip::hiprtc() {
        Ok(rtc) => say("hiprtc", rtc.library.clone()),
        Err(e) => say("hiprtc-error", e.to_string()),
    }
    if let Ok(rt) = hip::runtime() {
        match hip::comgr_targets(rt.rocm_version().unwrap().0) {
            Ok(t) => say("comgr", format!("{} {}", t.source, t.processors.join(","))),
            Err(e) => say("comgr-error", e.to_string()),
        }
    }
    for arch in ["gfx90a", "gfx1100"] {
        match vmafx::internals::device::gpu::compile::hip_code_object(&vmafx::internals::device::gpu::kernels::MOTION, arch) {
            Ok(code) => say(&format!("compile-{arch}"), String::from_utf8_lossy(&code).into_owned()),
            Err(e) => say(&format!("compile-{arch}-error"), e.to_string()),
        }
    }
    match vmafx::internals::device::gpu::GpuDevice::hip(0) {
        Ok(d) => say("device", format!("{}|{}|{}", d.info().name, d.info().arch, d.info().memory_bytes)),
        Err(e) => say("device-error", e.to_string()),
    }
}

/// The HIP loader on stub releases: libamdhip64 .so.7, then .so.6, then
/// .so.5; hiprtc from the runtime's own ROCm (libhiprtc.so.N from 6 on,
/// inside libamdhip64.so.5 before); the code-object manager of that
/// release asked which processors it compiles for, and a target it lacks
/// refused before hiprtc sees it (the stub hiprtc aborts as comgr does).
/// A device opens on the one lane with its name, target and memory.
#[test]
fn rocm_releases_choose_runtime_hiprtc_and_targets_in_order() {
    let get = |m: &std::collections::HashMap<String, String>, k: &str| m.get(k).cloned().unwrap_or_else(|| panic!("no {k} in {m:?}"));

    // All three releases side by side: the newest wins, with its own hiprtc
    // and comgr (which knows gfx1100).
    let Some(all) = stub_dir("all", &[&ROCM7, &ROCM6, &ROCM5], &["runtime", "hiprtc", "comgr"]) else { return };
    let m = loader_choices(&all, None);
    assert_eq!(get(&m, "runtime"), "libamdhip64.so.7");
    assert_eq!(get(&m, "rocm"), "(7, 1)");
    assert_eq!(get(&m, "hiprtc"), "libhiprtc.so.7");
    assert_eq!(get(&m, "comgr"), "libamd_comgr.so.3 gfx90a,gfx942,gfx1100");
    assert_eq!(get(&m, "compile-gfx1100"), "STUB");
    assert_eq!(get(&m, "device"), format!("stub device|gfx90a:sramecc+:xnack-|{}", 8usize << 30));

    // ROCm 6 and 5: 6 wins; its comgr lacks gfx1100, which is refused
    // without reaching hiprtc.
    let Some(six) = stub_dir("six", &[&ROCM6, &ROCM5], &["runtime", "hiprtc", "comgr"]) else { return };
    let m = loader_choices(&six, None);
    assert_eq!(get(&m, "runtime"), "libamdhip64.so.6");
    assert_eq!(get(&m, "hiprtc"), "libhiprtc.so.6");
    assert_eq!(get(&m, "compile-gfx90a"), "STUB");
    let e = get(&m, "compile-gfx1100-error");
    assert!(e.contains("gfx1100") && e.contains("6.2") && e.contains("libamd_comgr.so.2") && e.contains("gfx940"), "{e}");
    // A device whose own target comgr lacks: refused at open, clearly.
    let m = loader_choices(&six, Some("gfx1100"));
    let e = get(&m, "device-error");
    assert!(e.contains("gfx1100") && e.contains("libamd_comgr.so.2"), "{e}");

    // ROCm 5 alone: hiprtc lives in the runtime.
    let Some(five) = stub_dir("five", &[&ROCM5], &["runtime", "comgr"]) else { return };
    let m = loader_choices(&five, None);
    assert_eq!(get(&m, "runtime"), "libamdhip64.so.5");
    assert_eq!(get(&m, "hiprtc"), "libamdhip64.so.5");
    assert_eq!(get(&m, "compile-gfx90a"), "STUB");
    assert!(get(&m, "compile-gfx1100-error").contains("5.2"));

    // ROCm 6's runtime without its libhiprtc.so.6: an error naming it, not
    // another release's compiler.
    let Some(lone) = stub_dir("lone", &[&ROCM6], &["runtime", "comgr"]) else { return };
    let m = loader_choices(&lone, None);
    assert_eq!(get(&m, "runtime"), "libamdhip64.so.6");
    let e = get(&m, "hiprtc-error");
    assert!(e.contains("libhiprtc.so.6") && !m.contains_key("hiprtc"), "{e}");
}
