//! The kernel sources (top-level `kernels/`), embedded at build time: one
//! source per feature for both vendors, plus the compat header they include.
//!
//! Each source comes with a typed set of its entries ([`kernel_set!`]): a
//! struct with one field per `extern "C"` entry, named as the entry and
//! filled by name from what the lane loaded. A launch names its kernel
//! (`k.vif_reduce`), so reordering a list cannot change which one runs.

use crate::{Error, Result};

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

/// A source's loaded entries, found by name.
pub struct Loaded<'a, F> {
    source: &'static str,
    entries: &'static [&'static str],
    functions: &'a [F],
}

impl<'a, F: Copy> Loaded<'a, F> {
    /// `functions` as a lane loaded them: in the order of `source.entries`.
    pub fn new(source: &KernelSource, functions: &'a [F]) -> Self {
        Loaded { source: source.name, entries: source.entries, functions }
    }

    /// The entry named `name`.
    pub fn get(&self, name: &str) -> Result<F> {
        self.entries
            .iter()
            .position(|e| *e == name)
            .and_then(|i| self.functions.get(i).copied())
            .ok_or_else(|| Error::Internal(format!("{}: no kernel {name} was loaded", self.source)))
    }
}

/// A typed set of a source's kernels (made by [`kernel_set!`]).
pub trait KernelSet<F>: Sized {
    const SOURCE: KernelSource;
    /// The set, each field looked up by its entry name.
    fn from_loaded(loaded: &Loaded<'_, F>) -> Result<Self>;
}

/// A struct of one source's kernels, a field per entry named as the entry,
/// and its [`KernelSet`] impl: `kernel_set! { pub struct MotionKernels =
/// "motion.cu", include_str!(..) { motion_sad_8, .. } }`.
#[macro_export]
#[doc(hidden)] // the crate's own kernel tables (and the tests'), not application API
macro_rules! kernel_set {
    ($(#[$m:meta])* $vis:vis struct $set:ident = $file:literal, $source:expr, { $($entry:ident),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug)]
        $vis struct $set<F> {
            $(pub $entry: F),+
        }
        impl<F: Copy> $crate::internals::device::gpu::kernels::KernelSet<F> for $set<F> {
            const SOURCE: $crate::internals::device::gpu::kernels::KernelSource = $crate::internals::device::gpu::kernels::KernelSource {
                name: $file,
                source: $source,
                entries: &[$(stringify!($entry)),+],
            };
            fn from_loaded(loaded: &$crate::internals::device::gpu::kernels::Loaded<'_, F>) -> $crate::Result<Self> {
                Ok($set { $($entry: loaded.get(stringify!($entry))?),+ })
            }
        }
    };
}

/// The source of kernel set `K`.
const fn source<K: KernelSet<()>>() -> KernelSource {
    K::SOURCE
}

kernel_set! {
    /// kernels/motion.cu: the row sums of the blurred difference, and their zeroing.
    pub(crate) struct MotionKernels = "motion.cu", include_str!("../../../kernels/motion.cu"), {
        motion_sad_8, motion_sad_16, motion_zero,
    }
}
pub const MOTION: KernelSource = source::<MotionKernels<()>>();

kernel_set! {
    /// kernels/psnr.cu: per-row SSE.
    pub(crate) struct PsnrKernels = "psnr.cu", include_str!("../../../kernels/psnr.cu"), {
        psnr_sse_row_8, psnr_sse_row_16,
    }
}
pub const PSNR: KernelSource = source::<PsnrKernels<()>>();

kernel_set! {
    /// kernels/convert.cu: planarising imported frames (src/import/gpu.rs).
    pub struct ConvertKernels = "convert.cu", include_str!("../../../kernels/convert.cu"), {
        convert_uv_8, convert_uv_16, convert_shift_16,
    }
}
pub(crate) const CONVERT: KernelSource = source::<ConvertKernels<()>>();

kernel_set! {
    /// kernels/vif.cu: integer VIF (src/feature/vif/gpu.rs): the statistic
    /// per scale (subsampling the next scale's input on the way, adding its
    /// blocks' sums to the frame's), scale 1's input alone (when scale 0's
    /// statistic is skipped), the sums' zeroing.
    pub(crate) struct VifKernels = "vif.cu", include_str!("../../../kernels/vif.cu"), {
        vif_stat_0_8, vif_stat_0_16, vif_stat_1, vif_stat_2, vif_stat_3,
        vif_subsample_0_8, vif_subsample_0_16,
        vif_zero,
    }
}
pub const VIF: KernelSource = source::<VifKernels<()>>();

kernel_set! {
    /// kernels/adm.cu: integer ADM (src/feature/adm/gpu.rs).
    pub(crate) struct AdmKernels = "adm.cu", include_str!("../../../kernels/adm.cu"), {
        adm_dwt_s0_8, adm_dwt_s0_16, adm_dwt_s123, adm_cm_s0, adm_cm_s123, adm_zero,
    }
}
pub(crate) const ADM: KernelSource = source::<AdmKernels<()>>();

kernel_set! {
    /// kernels/ssim.cu: float SSIM and MS-SSIM (src/feature/ssim/gpu.rs):
    /// luma to floats, decimation, the Gaussian passes, per-pixel terms.
    pub(crate) struct SsimKernels = "ssim.cu", include_str!("../../../kernels/ssim.cu"), {
        ssim_to_float_8, ssim_to_float_16, ssim_decimate, ssim_conv_h, ssim_terms,
    }
}
pub(crate) const SSIM: KernelSource = source::<SsimKernels<()>>();

kernel_set! {
    /// kernels/speed.cu: SpEED's blur and decimation by 16
    /// (src/feature/speed/gpu.rs).
    pub(crate) struct SpeedKernels = "speed.cu", include_str!("../../../kernels/speed.cu"), {
        speed_blur_dec16,
    }
}
pub(crate) const SPEED: KernelSource = source::<SpeedKernels<()>>();

kernel_set! {
    /// kernels/cambi.cu: CAMBI's luma pass per frame: the picture passes,
    /// the c-values and the pooling's selection (src/feature/cambi/gpu.rs).
    pub(crate) struct CambiKernels = "cambi.cu", include_str!("../../../kernels/cambi.cu"), {
        cambi_c_values, cambi_load, cambi_range_check, cambi_anti_dither, cambi_spatial_mask, cambi_decimate,
        cambi_filter_mode, cambi_zero, cambi_histogram, cambi_select, cambi_top_sum,
    }
}
pub(crate) const CAMBI: KernelSource = source::<CambiKernels<()>>();

/// Every kernel source; tests/device/kernels_compile.rs compiles each for each vendor.
pub const ALL: &[KernelSource] = &[MOTION, PSNR, CONVERT, VIF, ADM, SSIM, SPEED, CAMBI];

/// Threads per block; equals `VMAFX_BLOCK` in the compat header.
pub(crate) const BLOCK: u32 = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_takes_each_kernel_by_its_name_whatever_the_load_order() {
        // Functions as a lane would hand them back: the entry's index + 100.
        let functions: Vec<u32> = (0..VIF.entries.len() as u32).map(|i| i + 100).collect();
        let k = VifKernels::<u32>::from_loaded(&Loaded::new(&VIF, &functions)).unwrap();
        assert_eq!((k.vif_stat_0_8, k.vif_zero, k.vif_subsample_0_16), (100, 107, 106));
        // A source listing its entries in another order gets the same kernels.
        let reversed: Vec<&'static str> = VIF.entries.iter().rev().copied().collect();
        let reversed = KernelSource { entries: Box::leak(reversed.into_boxed_slice()), ..VIF };
        let functions: Vec<u32> = (0..8).rev().map(|i| i + 100).collect();
        let k = VifKernels::<u32>::from_loaded(&Loaded::new(&reversed, &functions)).unwrap();
        assert_eq!((k.vif_stat_0_8, k.vif_zero, k.vif_subsample_0_16), (100, 107, 106));
        // A missing entry is an error that names it.
        let short = KernelSource { entries: &VIF.entries[..7], ..VIF };
        let e = VifKernels::<u32>::from_loaded(&Loaded::new(&short, &functions[..7])).unwrap_err();
        assert!(e.to_string().contains("vif_zero"), "{e}");
    }
}
