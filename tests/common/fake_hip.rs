//! The fake `libamdhip64` (tests/hip_fake/fake_hip.cpp over the kernel
//! emulator), built into a folder of its own with hiprtc's and comgr's
//! names linked to it, for tests that start a process on it through
//! LD_LIBRARY_PATH. (tests/dmabuf_hip.rs builds the same for its children.)

use std::path::{Path, PathBuf};

/// The folder holding the fake; `None` (skip) without a C++ compiler
/// unless VMAFX_REQUIRE_GPU_COMPILERS=1.
pub fn fake_hip_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-fake-faults-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libamdhip64.so.7");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
        let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
        let status = std::process::Command::new(&cxx)
            .args(["-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror", "-fvisibility=hidden"])
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

/// The environment of a process on the fake.
pub fn fake_hip_env(dir: &Path) -> Vec<(String, String)> {
    vec![
        ("LD_LIBRARY_PATH".into(), dir.display().to_string()),
        ("VMAFX_KERNEL_CACHE".into(), "off".into()),
        ("VMAFX_HIP_LIB".into(), String::new()),
        ("VMAFX_HIPRTC_LIB".into(), String::new()),
        ("VMAFX_COMGR_LIB".into(), String::new()),
    ]
}
