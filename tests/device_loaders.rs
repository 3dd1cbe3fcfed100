//! The GPU loaders on any machine: a missing driver is an error that names
//! the exact library tried, never a panic; layouts are unit tests in
//! src/device/gpu/{cuda,hip}.rs.

use vmafx::device::gpu::{cuda, hip};

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
                s.contains("libhiprtc.so.6") && s.contains("libamdhip64.so.5"),
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
    use vmafx::device::DeviceKind;
    use vmafx::engine::{Context, ContextConfig, DeviceChoice, HipCallerStream};
    if matches!(vmafx::device::count(DeviceKind::Hip), Ok(n) if n > 0) {
        eprintln!("an AMD GPU is here: tests/device_context.rs covers HipStream");
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
