//! The fake `libamdhip64` (tests/hip_fake/fake_hip.cpp: the kernel
//! emulator behind the HIP runtime calls, whose hipImportExternalMemory
//! mmaps the dma-buf), built for a test binary and put where the real
//! loader finds it, and its test controls. Used by tests/import/dmabuf_hip.rs
//! (the library and the filter's C interface) and tests/lavfi/dmabuf_graph.rs
//! (the filter in an FFmpeg graph) and tests/cli/faults.rs (the CLI on a
//! failing device).

use std::path::{Path, PathBuf};

use nix::libc;

/// Set for the child runs on the fake.
pub const CHILD: &str = "VMAFX_FAKE_HIP_CHILD";
pub const ROCM7: &str = "70000000";
pub const ROCM52: &str = "50221153";

/// Builds the fake into a folder of its own (once per process) and links
/// hiprtc's and comgr's names to it.
pub fn fake_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-fake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libamdhip64.so.7");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
        let status = std::process::Command::new(&cxx)
            .args(["-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror", "-fvisibility=hidden", "-ffp-contract=off"])
            .arg("-I").arg(root.join("kernels"))
            .arg("-I").arg(root.join("tests/device_emu"))
            .arg(root.join("tests/hip_fake/fake_hip.cpp"))
            .arg("-o").arg(&lib)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!("{cxx} failed to build the fake libamdhip64: {s}"),
            Err(e) => {
                assert!(!required, "no C++ compiler ({cxx}): {e}");
                eprintln!("SKIP: no C++ compiler ({cxx}): {e}");
                return None;
            }
        }
        for name in ["libhiprtc.so.7", "libamd_comgr.so.3", "libamd_comgr.so.2"] {
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink("libamdhip64.so.7", &link).unwrap();
        }
        Some(dir)
    })
    .clone()
}

/// The guest's (or child's) environment for the fake.
pub fn fake_env(dir: &Path, version: &str) -> Vec<(String, String)> {
    vec![
        (CHILD.into(), "1".into()),
        ("LD_LIBRARY_PATH".into(), dir.display().to_string()),
        ("VMAFX_FAKE_HIP_VERSION".into(), version.into()),
        ("VMAFX_KERNEL_CACHE".into(), "off".into()),
        ("VMAFX_HIP_LIB".into(), String::new()),
        ("VMAFX_HIPRTC_LIB".into(), String::new()),
        ("VMAFX_COMGR_LIB".into(), String::new()),
    ]
}

/// The fake's test controls, from the library the lane loaded.
pub struct Fake {
    lib: libloading::Library,
}

impl Fake {
    pub fn get() -> Fake {
        vmafx::internals::device::gpu::hip::runtime().expect("the fake libamdhip64 on LD_LIBRARY_PATH");
        // SAFETY: already loaded by the lane's loader: the same handle.
        let lib = unsafe { libloading::Library::new("libamdhip64.so.7") }.unwrap();
        // SAFETY: exported by fake_hip.cpp with this signature.
        assert!(unsafe { lib.get::<unsafe extern "C" fn() -> *const libc::c_char>(b"vx_fake_hip_log\0") }.is_ok(), "libamdhip64.so.7 is not the fake");
        Fake { lib }
    }
    pub fn log(&self) -> String {
        // SAFETY: as in get; the string is copied before the next call.
        unsafe {
            let f = self.lib.get::<unsafe extern "C" fn() -> *const libc::c_char>(b"vx_fake_hip_log\0").unwrap();
            std::ffi::CStr::from_ptr(f()).to_string_lossy().into_owned()
        }
    }
    pub fn blocked_event(&self) -> u64 {
        // SAFETY: as in get.
        unsafe { self.lib.get::<unsafe extern "C" fn() -> u64>(b"vx_fake_hip_blocked_event\0").unwrap()() }
    }
    pub fn signal(&self, event: u64) {
        // SAFETY: as in get; a blocked event of the fake.
        unsafe { self.lib.get::<unsafe extern "C" fn(u64)>(b"vx_fake_hip_signal\0").unwrap()(event) }
    }
}

/// Log lines that mention `ext`.
pub fn lines_of<'a>(log: &'a str, ext: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.contains(&format!("ext={ext}"))).collect()
}

/// Every external memory the log shows imported.
pub fn imported(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.strip_prefix("import ext="))
        .map(|rest| rest.split(' ').next().unwrap().to_string())
        .collect()
}

pub fn no_violations(log: &str) {
    let bad: Vec<&str> = log.lines().filter(|l| l.starts_with("VIOLATION")).collect();
    assert!(bad.is_empty(), "the fake saw misuse:\n{}", bad.join("\n"));
}

