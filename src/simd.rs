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
