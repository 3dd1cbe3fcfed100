//! The kernel sources (top-level `kernels/`), embedded at build time: one
//! source per feature for both vendors, plus the compat header they include.

/// `kernels/vmafx_compat.h`, passed to NVRTC/hiprtc as an in-memory header.
pub const COMPAT_HEADER: (&str, &str) = (
    "vmafx_compat.h",
    include_str!("../../../kernels/vmafx_compat.h"),
);

/// One kernel source and the entry points the host looks up in it.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub source: &'static str,
    pub entries: &'static [&'static str],
}

pub const MOTION: KernelSource = KernelSource {
    name: "motion.cu",
    source: include_str!("../../../kernels/motion.cu"),
    entries: &["motion_blur_y_8", "motion_blur_y_16", "motion_row_sad"],
};

pub const PSNR: KernelSource = KernelSource {
    name: "psnr.cu",
    source: include_str!("../../../kernels/psnr.cu"),
    entries: &["psnr_sse_row_8", "psnr_sse_row_16"],
};

/// Integer VIF (src/device/gpu/vif.rs): the statistic per scale, the
/// subsampling between scales, the reduction over blocks.
pub const VIF: KernelSource = KernelSource {
    name: "vif.cu",
    source: include_str!("../../../kernels/vif.cu"),
    entries: &[
        "vif_stat_0_8",
        "vif_stat_0_16",
        "vif_stat_1",
        "vif_stat_2",
        "vif_stat_3",
        "vif_subsample_0_8",
        "vif_subsample_0_16",
        "vif_subsample_1",
        "vif_subsample_2",
        "vif_reduce",
    ],
};

pub const ADM: KernelSource = KernelSource {
    name: "adm.cu",
    source: include_str!("../../../kernels/adm.cu"),
    entries: &["adm_dwt_s0_8", "adm_dwt_s0_16", "adm_dwt_s123", "adm_cm_s0", "adm_cm_s123", "adm_zero"],
};

/// Every kernel source; tests/kernels_compile.rs compiles each for each vendor.
pub const ALL: &[KernelSource] = &[MOTION, PSNR, VIF, ADM];

/// Threads per block; equals `VMAFX_BLOCK` in the compat header.
pub const BLOCK: u32 = 256;
