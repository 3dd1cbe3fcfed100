//! vmafx: VMAF and its companion metrics, bit-exact with libvmaf 3.2.0.
//!
//! Data flows one way through the rooms of this crate:
//!
//! ```text
//! picture (plane views) → feature (extractors, registry) → engine (frames in flight)
//!        → score (collector, pooling, logs) ← model (libvmaf JSON models, SVM)
//! ```
//!
//! # The API
//! Everything an application needs is re-exported here, at the crate root:
//! a [`Context`] (configured by a [`ContextConfig`], placed by a
//! [`DeviceChoice`]) takes [`Model`]s and features by name
//! ([`FeatureOptions`]), scores [`Picture`]s (or any [`PictureSource`]) pushed
//! in order, and hands back per-frame scores ([`FeatureCollector`]), pooled
//! ones ([`PoolMethod`]) and logs in libvmaf's formats ([`LogFormat`],
//! [`LogStream`]). [`io`] reads y4m and raw yuv files (and, with feature
//! `decode`, anything FFmpeg decodes). Errors are one [`Error`] that says
//! what and why. The CLI (`src/bin/vmafx.rs`) and the Python module are
//! built on these (and share libvmaf's option strings and the log and plot
//! writers through `internals`, which is not API).
//!
//! # Cargo features
//! - `cli` (default): the `vmafx` binary (clap, signal-hook).
//! - `capi` (default): the C interface of `include/vmafx.h` that FFmpeg's
//!   `vmafx` filter links (`--no-default-features --features capi` for the
//!   staticlib, without clap).
//! - `decode`: any input FFmpeg's libavformat/libavcodec decode.
//!
//! # Frames from FFmpeg
//! A program that holds FFmpeg's DRM_PRIME frames scores them where they
//! are: an [`AvDrmFrameDescriptor`] (FFmpeg's `AVDRMFrameDescriptor`, as
//! laid out in C) becomes a [`FrameDescriptor`], which a [`HostImporter`]
//! maps into a [`CpuFrame`], a [`PictureSource`] (a [`Refusal`] hands the
//! descriptor back). FFmpeg itself links the C interface of
//! `include/vmafx.h` (feature `capi`).
//!
//! Everything else is the crate's own (docs/architecture.md, "Rooms").

// A `pub` item that no outside path reaches (the root's re-exports,
// `internals`) says "API" and is not: make it `pub(crate)`.
#![warn(unreachable_pub)]

// The rooms: private, reached from outside only through the root's
// re-exports below and, for the project's own tests, `internals`.
mod avfilter;
mod cfmt;
mod device;
mod engine;
mod error;
mod feature;
#[cfg(feature = "capi")]
mod fuzz;
mod import;
pub mod io;
mod model;
mod option_strings;
mod picture;
mod score;
mod simd;

pub use device::DeviceKind;
pub use engine::{CallerStream, Context, ContextConfig, DeviceChoice, GpuVendor, HipCallerStream};
pub use error::{Error, Result};
pub use feature::options::FeatureOptions;
pub use import::cpu::{CpuFrame, HostImporter};
pub use import::drm::AvDrmFrameDescriptor;
pub use import::{FrameDescriptor, Refusal};
pub use model::definition::LoadFlags;
pub use model::{FeatureOverload, Model, ModelConfig};
pub use picture::{Chroma, OwnedPicture, Picture, PictureSource, PixelFormat, PlaneView};
pub use score::log::{LogFormat, LogStream};
pub use score::plot::PlotSpec;
pub use score::{FeatureCollector, PoolMethod};
pub use simd::CpuLevel;

/// Not API: the crate's internals that its own tests, benchmarks, fuzz
/// targets and Python module check against libvmaf piece by piece (an
/// extractor, a kernel, an importer, the filter's C side). Laid out as the
/// rooms of `src/` (`internals::feature::adm` is `src/feature/adm/`) and
/// listing only what those callers name; it changes with the code, without
/// notice. Anything else in the rooms is `pub(crate)` or private.
#[doc(hidden)]
pub mod internals {
    pub mod avfilter {
        #[cfg(feature = "capi")]
        pub use crate::avfilter::ffi;
        pub use crate::avfilter::Filter;
        pub mod cuda {
            pub use crate::avfilter::cuda::{descriptor, CudaInput};
        }
        pub mod frame {
            pub use crate::avfilter::frame::{FrameHandle, FrameMemory, HostFormat, HostPicture, Layout, RawPlanes};
        }
        pub mod hip {
            pub use crate::avfilter::hip::HipInput;
        }
        pub mod number {
            pub use crate::avfilter::number::format_g17;
        }
        pub mod options {
            pub use crate::avfilter::options::RawOptions;
        }
    }
    pub mod device {
        pub use crate::device::{count, DeviceFrame, DeviceInfo, DeviceKind, DeviceMemoryId, FenceKind, MemoryKind};
        pub mod gpu {
            pub use crate::device::gpu::GpuDevice;
            pub mod backend {
                pub use crate::device::gpu::backend::{
                    take_drop_errors, Args, ArrayExtent, ArrayRef, Backend, DevPlane, DeviceEvent, DeviceMemory, DeviceScalar,
                    EventRef, KernelRunner, Pitched, Scratch,
                };
            }
            pub mod cache {
                pub use crate::device::gpu::cache::{get_or_compile_in, key};
            }
            pub mod compile {
                pub use crate::device::gpu::compile::{cuda_ptx, hip_code_object};
            }
            pub mod kernel_key {
                pub use crate::device::gpu::kernel_key::{CUDA_CUBIN_TARGETS, CUDA_PTX_TARGETS, HIP_TARGETS};
            }
            pub mod nvrtc {
                pub use crate::device::gpu::nvrtc::{nvrtc, options, ENV};
            }
            pub mod cuda {
                pub use crate::device::gpu::cuda::{driver, result, sys, ContextGuard, CudaDriver, DRIVER_ENV};
            }
            pub mod embedded {
                pub use crate::device::gpu::embedded::{
                    pick_cuda, pick_hip, run_time_key, served, EmbeddedKernel, BUILD_COMPILERS, BUILD_MISSING, EMBEDDED,
                };
            }
            pub mod hip {
                pub use crate::device::gpu::hip::{
                    comgr_targets, hiprtc, runtime, sys, HipRuntime, COMGR_ENV, HIPRTC_ENV, HIP_CANDIDATES, HIP_ENV,
                };
            }
            pub mod kernels {
                pub use crate::device::gpu::kernels::{
                    ConvertKernels, KernelSet, KernelSource, Loaded, ALL, COMPAT_HEADER, MOTION, PSNR, VIF,
                };
            }
            pub mod lane {
                pub use crate::device::gpu::lane::{device_count, DeviceBuffer, GpuLane};
            }
        }
    }
    pub mod feature {
        pub use crate::feature::{find_extractor, find_provider, naming, REGISTRY};
        pub mod adm {
            pub use crate::feature::adm::{
                cm, decouple, dwt, kernels, sums_scalar, AdmParams, AdmSums, Kernels, DESCRIPTOR, SCALAR_KERNELS,
            };
            pub mod gpu {
                pub use crate::feature::adm::gpu::{sums, sums_dev};
            }
        }
        pub mod cambi {
            pub use crate::feature::cambi::{
                c_value_row_fn, c_values_fn, luminance, picture_passes, scalar, scales_pooled_on_host, PicturePasses, CONTRAST_WEIGHTS,
                DESCRIPTOR,
            };
        }
        pub mod motion {
            pub use crate::feature::motion::{sad_fn, sad_scalar, DESCRIPTOR};
            pub mod gpu {
                pub use crate::feature::motion::gpu::{sad, sad_dev};
            }
        }
        pub mod psnr {
            pub use crate::feature::psnr::{sse_u16, sse_u8, DESCRIPTOR};
            pub mod gpu {
                pub use crate::feature::psnr::gpu::{sse, sse_dev};
            }
        }
        pub mod speed {
            pub use crate::feature::speed::{copy_sample, filter, CHROMA_DESCRIPTOR, TEMPORAL_DESCRIPTOR};
        }
        pub mod ssim {
            pub use crate::feature::ssim::{pixel_terms, symmetric, SsimConstants, MS_SSIM_DESCRIPTOR, SSIM_DESCRIPTOR};
        }
        pub mod vif {
            pub use crate::feature::vif::{
                accumulate, kernels, kernels_for, log2_32, log2_64, log2_table, reflect, sums_scalar, Kernels, Plane, Scratch,
                StatParams, SubsampleParams, VifComputer, VifSums, DESCRIPTOR, FILTERS, SIGMA_NSQ,
            };
            pub mod gpu {
                pub use crate::feature::vif::gpu::{sums, sums_dev};
            }
        }
    }
    #[cfg(feature = "capi")]
    pub mod fuzz {
        pub use crate::fuzz::TARGETS;
    }
    pub mod import {
        pub use crate::import::{
            AcquireFence, DrmFourcc, DrmModifier, HostFence, ImportErrorKind, InvalidModifier, Layer, Memory, Object, PlaneRef,
            ReleaseFence,
        };
        pub mod drm {
            pub use crate::import::drm::{AvDrmLayerDescriptor, AvDrmObjectDescriptor, AvDrmPlaneDescriptor};
        }
        pub mod gpu {
            pub use crate::import::gpu::{wait_ready, GpuImporter};
        }
        pub mod sys {
            pub use crate::import::sys::sync_file_status;
        }
    }
    pub mod model {
        pub use crate::model::definition::ModelDefinition;
    }
    pub mod option_strings {
        pub use crate::option_strings::{parse_c_unsigned, parse_device, parse_feature, parse_model, prefixed, ModelArg};
    }
    pub mod picture {
        pub use crate::picture::{HostCopies, HostCopy};
    }
    pub mod score {
        pub mod log {
            pub use crate::score::log::{log_name, render_log, LogInput, LOG_VERSION};
        }
        pub mod plot {
            pub use crate::score::plot::{default_features, render_svg};
        }
        pub mod pool {
            pub use crate::score::pool::{pool, pool_frames, RunningPools};
        }
    }
}

/// The libvmaf release whose numbers vmafx reproduces.
pub const REFERENCE_LIBVMAF_VERSION: &str = "3.2.0";
