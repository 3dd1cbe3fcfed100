//! What identifies one kernel compile: each compiler's options for a
//! target, the key over source, headers and options, and the targets
//! built ahead of time. A leaf with no imports: build.rs includes this file
//! too (`#[path]`), so the kernels it embeds are keyed by the very code the
//! run-time path keys its compiles (and the disk cache) by, and a kernel
//! edit changes the key an embedded entry must match.

/// CUDA targets compiled to cubins at build time (those the build's NVRTC
/// supports): Turing to Blackwell, one per architecture in common use.
pub const CUDA_CUBIN_TARGETS: &[&str] = &["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

/// The virtual architectures whose PTX may be embedded; the build embeds
/// the newest one its NVRTC supports, for GPUs newer than every cubin (the
/// driver JITs it).
pub const CUDA_PTX_TARGETS: &[&str] = &["compute_120", "compute_100", "compute_90"];

/// AMD processors compiled at build time: what every hiprtc from ROCm 5.2
/// on compiles without aborting (hip::known_good_targets).
pub const HIP_TARGETS: &[&str] = &["gfx906", "gfx90a", "gfx1030"];

/// FNV-1a, 64 bit: stable across builds and platforms (unlike `DefaultHasher`).
pub(crate) fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separates parts so ("ab","c") and ("a","bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The key of one compile (also the disk cache's file name):
/// `<hash of source, headers, options>-<arch>-<compiler><major>.<minor>`.
pub fn key(
    source: &str,
    headers: &[(&str, &str)],
    options: &[String],
    arch: &str,
    compiler: &str,
    version: (i32, i32),
) -> String {
    let mut parts: Vec<&[u8]> = vec![source.as_bytes()];
    for (name, text) in headers {
        parts.push(name.as_bytes());
        parts.push(text.as_bytes());
    }
    for option in options {
        parts.push(option.as_bytes());
    }
    let hash = fnv1a64(&parts);
    let safe_arch: String = arch
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!(
        "{hash:016x}-{safe_arch}-{compiler}{}.{}",
        version.0, version.1
    )
}

/// NVRTC's options for `arch` (`compute_90`: PTX; `sm_90`: a cubin).
pub(crate) fn nvrtc_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "-default-device".into(),
        // No a*b+c contracted into one FMA: the float steps of the twins
        // (VIF's gain, ADM's angle test) must round as the CPU's do.
        "--fmad=false".into(),
    ]
}

/// hiprtc's options for `arch` (`gfx90a`).
pub(crate) fn hiprtc_options(arch: &str) -> Vec<String> {
    // -ffp-contract=off: no FMA contraction, so float steps round as on the
    // CPU (see nvrtc_options's --fmad=false).
    vec![
        format!("--offload-arch={arch}"),
        "-O3".into(),
        "-ffp-contract=off".into(),
    ]
}
