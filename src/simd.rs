//! The CPU level, detected once and capped by the user.
//!
//! Kernels are chosen per level when an extractor is created; the scalar
//! code is the reference every other level is tested against
//! (`tests/checkasm.rs`). `VMAFX_CPU_LEVEL=scalar|avx2|avx512|avx512vnni` (or the CLI's
//! `--cpu-level`) caps the level, like rav1e's `RAV1E_CPU_TARGET`.

use std::sync::OnceLock;

/// Ordered instruction-set levels: a higher level implies the lower ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuLevel {
    Scalar,
    Avx2,
    Avx512,
    /// AVX-512 with VNNI (`vpdpwssd`: a 16-bit multiply-add into 32-bit
    /// accumulators in one instruction); Intel since Ice Lake, AMD since Zen 4.
    Avx512Vnni,
}

impl CpuLevel {
    pub const ALL: [CpuLevel; 4] = [CpuLevel::Scalar, CpuLevel::Avx2, CpuLevel::Avx512, CpuLevel::Avx512Vnni];

    pub fn name(self) -> &'static str {
        match self {
            CpuLevel::Scalar => "scalar",
            CpuLevel::Avx2 => "avx2",
            CpuLevel::Avx512 => "avx512",
            CpuLevel::Avx512Vnni => "avx512vnni",
        }
    }

    pub fn parse(s: &str) -> Option<CpuLevel> {
        match s.to_ascii_lowercase().as_str() {
            "scalar" | "rust" | "c" | "none" => Some(CpuLevel::Scalar),
            "avx2" => Some(CpuLevel::Avx2),
            "avx512" => Some(CpuLevel::Avx512),
            "avx512vnni" => Some(CpuLevel::Avx512Vnni),
            _ => None,
        }
    }

    /// The highest level this CPU supports, ignoring any cap.
    pub fn detect_host() -> CpuLevel {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx2")
            {
                if is_x86_feature_detected!("avx512vnni") {
                    return CpuLevel::Avx512Vnni;
                }
                return CpuLevel::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return CpuLevel::Avx2;
            }
        }
        CpuLevel::Scalar
    }

    /// The level to use: the host's, capped by `VMAFX_CPU_LEVEL` if set.
    /// Detected once per process.
    pub fn detect() -> CpuLevel {
        static LEVEL: OnceLock<CpuLevel> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            let host = CpuLevel::detect_host();
            match std::env::var("VMAFX_CPU_LEVEL").ok().and_then(|s| CpuLevel::parse(&s)) {
                Some(cap) => cap.min(host),
                None => host,
            }
        })
    }

    /// `requested` capped at what the host can run.
    pub fn capped(requested: CpuLevel) -> CpuLevel {
        requested.min(CpuLevel::detect_host())
    }

    /// Levels the host can run, lowest first (for tests and benches).
    pub fn available() -> impl Iterator<Item = CpuLevel> {
        let host = CpuLevel::detect_host();
        CpuLevel::ALL.into_iter().filter(move |l| *l <= host)
    }
}

/// Whether vector gathers (`vpgatherdd`) beat scalar loads on this CPU, for
/// the kernels that can do either (VIF's log2 lookups): they do on recent
/// cores (an Intel Xeon of 2026: VIF 6-9 % faster at AVX2, 11-17 % at
/// AVX-512; an AMD EPYC Zen 4: the same speed), not on AMD before Zen 3
/// (family 17h and older: gathers are microcoded and slow) nor on Hygon's
/// family 18h (Zen 1 cores), nor on Intel cores whose microcode mitigates
/// Gather Data Sampling ("Downfall", Skylake to Tiger Lake: a gather then
/// costs several times more), which Linux reports in
/// `/sys/devices/system/cpu/vulnerabilities/gather_data_sampling`.
/// `VMAFX_GATHERS=0|1` overrides (for benchmarks). Detected once.
pub(crate) fn fast_gathers() -> bool {
    static FAST: OnceLock<bool> = OnceLock::new();
    *FAST.get_or_init(|| match std::env::var("VMAFX_GATHERS").as_deref() {
        Ok("0") => false,
        Ok("1") => true,
        _ => gathers_fast_here(),
    })
}

#[cfg(target_arch = "x86_64")]
fn gathers_fast_here() -> bool {
    use std::arch::x86_64::__cpuid;
    let leaf0 = __cpuid(0);
    let mut vendor = [0u8; 12];
    for (chunk, reg) in vendor.chunks_mut(4).zip([leaf0.ebx, leaf0.edx, leaf0.ecx]) {
        chunk.copy_from_slice(&reg.to_le_bytes());
    }
    let eax = __cpuid(1).eax;
    let base = (eax >> 8) & 0xf;
    let family = if base == 0xf { base + ((eax >> 20) & 0xff) } else { base };
    let gds = std::fs::read_to_string("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling").ok();
    gathers_fast_for(&vendor, family, gds.as_deref())
}

/// The decision of [`fast_gathers`] from the CPUID vendor string, the
/// display family and Linux's Gather Data Sampling state.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn gathers_fast_for(vendor: &[u8; 12], family: u32, gds: Option<&str>) -> bool {
    match vendor {
        // Hygon's family 18h is a Zen 1 core: below 19h like AMD's older families.
        b"AuthenticAMD" | b"HygonGenuine" => family >= 0x19,
        _ => !matches!(gds, Some(state) if state.starts_with("Mitigation: Microcode")),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn gathers_fast_here() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::gathers_fast_for;

    #[test]
    fn gathers_by_vendor_family_and_microcode() {
        // AMD: microcoded gathers up to Zen 2 (17h), fast from Zen 3 (19h).
        assert!(!gathers_fast_for(b"AuthenticAMD", 0x17, None));
        assert!(gathers_fast_for(b"AuthenticAMD", 0x19, None));
        assert!(gathers_fast_for(b"AuthenticAMD", 0x1a, Some("Not affected")));
        // Hygon's Zen 1 family says "Not affected" to GDS, yet its gathers are slow.
        assert!(!gathers_fast_for(b"HygonGenuine", 0x18, Some("Not affected")));
        // Intel: slow only under the Downfall microcode mitigation.
        assert!(gathers_fast_for(b"GenuineIntel", 6, Some("Not affected")));
        assert!(gathers_fast_for(b"GenuineIntel", 6, None));
        assert!(!gathers_fast_for(b"GenuineIntel", 6, Some("Mitigation: Microcode")));
        assert!(gathers_fast_for(b"GenuineIntel", 6, Some("Vulnerable: No microcode")));
    }
}
