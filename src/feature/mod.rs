//! Feature extractors and their registry, in the spirit of libvmaf's
//! `VmafFeatureExtractor`.
//!
//! An extractor is described once, statically ([`ExtractorDescriptor`]: its
//! name, the features it provides, its options, whether it looks back at the
//! previous reference). The engine creates one instance per worker thread
//! ([`Extractor`]); `extract` turns one frame pair into feature values and
//! `flush` runs once at the end on the whole collector (motion2/motion3 need
//! the next frame). Device twins register under the same names, so the
//! model never knows where a feature was computed: in a context on a GPU
//! lane the engine calls `extract_device` instead of `extract`, with the
//! frame pair's planes in the lane's memory; the twin computes the integer
//! sums there and finishes with the CPU path's own code.

pub(crate) mod adm;
pub(crate) mod cambi;
pub(crate) mod ciede;
pub(crate) mod float;
pub(crate) mod motion;
pub mod naming;
pub(crate) mod options;
pub(crate) mod psnr;
pub(crate) mod psnr_hvs;
pub(crate) mod speed;
pub(crate) mod ssim;
pub(crate) mod vif;

use crate::device::gpu::ErasedRunner;
use crate::device::{DeviceFrame, DeviceKind};
use crate::picture::{Picture, PixelFormat};
use crate::score::FeatureCollector;
use crate::simd::CpuLevel;
use crate::{Error, Result};
pub(crate) use options::{FeatureOptions, OptionSpec};

/// What every instance of an extractor is created with.
#[derive(Clone, Debug)]
pub struct ExtractorConfig {
    pub width: usize,
    pub height: usize,
    pub format: PixelFormat,
    /// Option values the user or the model set (validated against the
    /// descriptor's specs); the rest take their defaults.
    pub options: FeatureOptions,
    /// Highest SIMD level this instance may use.
    pub cpu: CpuLevel,
    /// Where frames are scored: `Cpu` (`extract`), or a GPU lane of this
    /// kind (`extract_device`; CPU scratch can be left out).
    pub device: DeviceKind,
}

/// One frame pair handed to `extract`.
pub struct FrameInput<'a> {
    pub index: u32,
    pub reference: &'a Picture<'a>,
    pub distorted: &'a Picture<'a>,
    /// The previous frame's reference picture, for temporal extractors
    /// (`None` for the first frame).
    pub prev_reference: Option<&'a Picture<'a>>,
    /// The previous frame's distorted picture, for extractors that ask for
    /// it (`needs_prev_distorted`; `None` for the first frame and for the
    /// others).
    pub prev_distorted: Option<&'a Picture<'a>>,
    /// The reference two frames back, for extractors whose options ask
    /// for it (`needs_two_back`: motion's five-frame window; `None` for
    /// the first two frames and for the others).
    pub prev_prev_reference: Option<&'a Picture<'a>>,
}

/// One frame pair in a GPU lane's memory, handed to `extract_device`: host
/// pictures the engine copied into the lane's scratch (once per frame, for
/// every extractor), or device pictures read in place. Every picture has
/// the planes of the context's format (chroma too when any extractor of
/// the context reads chroma), ready to read on the lane's stream.
pub struct DeviceFrameInput<'a> {
    pub index: u32,
    pub reference: &'a DeviceFrame,
    pub distorted: &'a DeviceFrame,
    /// The previous frame's reference (`None` for the first frame).
    pub prev_reference: Option<&'a DeviceFrame>,
    /// The previous frame's distorted picture, for extractors that ask for
    /// it (`needs_prev_distorted`; `None` for the first frame).
    pub prev_distorted: Option<&'a DeviceFrame>,
    /// The reference two frames back, for extractors whose options ask for
    /// it (`needs_two_back`: motion's five-frame window; `None` before
    /// frame 2).
    pub prev_prev_reference: Option<&'a DeviceFrame>,
}

/// Values an extractor produced for one frame, in the order written.
#[derive(Clone, Debug, Default)]
pub struct FrameScores {
    pub values: Vec<(String, f64)>,
}

impl FrameScores {
    pub fn push(&mut self, name: &str, value: f64) {
        self.values.push((name.to_owned(), value));
    }
}

/// A live extractor: per-thread scratch buffers and resolved options.
pub trait Extractor: Send {
    /// Scores one frame pair. Must be a pure function of its input (plus the
    /// options): the engine runs frames on several instances at once.
    fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()>;

    /// Whether this extractor has a device twin (`extract_device`). A
    /// context on a GPU lane refuses, at its first frame, an extractor
    /// without one: features are never computed elsewhere behind the
    /// caller's back.
    fn has_device_twin(&self) -> bool {
        false
    }

    /// Scores one frame pair whose planes are in `lane`'s memory, giving
    /// the values `extract` gives for the same pictures, bit for bit (the
    /// device computes integer sums, in the metric's `gpu.rs` against the
    /// lane's [`crate::device::gpu::twin::TwinLane`]; the float finish is
    /// the CPU path's).
    fn extract_device(
        &mut self,
        _frame: &DeviceFrameInput<'_>,
        _lane: &mut ErasedRunner,
        _out: &mut FrameScores,
    ) -> Result<()> {
        Err(Error::NotSupported("no device twin".into()))
    }

    /// Writes the values that depend on later frames (motion2 needs the
    /// next frame's SAD) for every frame it now can. Frames `0..committed`
    /// have all their per-frame values in the collector; `end_of_stream`
    /// says no more will come. Called on one instance after each commit and
    /// at the end. Returns how many frames (from 0) are final for this
    /// extractor; the default, for extractors without look-ahead, is all.
    fn settle(
        &mut self,
        _collector: &mut FeatureCollector,
        committed: u32,
        _end_of_stream: bool,
    ) -> Result<u32> {
        Ok(committed)
    }

    /// Runs once after the last frame (after `settle` with
    /// `end_of_stream`), on one instance. Whole-stream aggregates live here.
    fn flush(&mut self, _collector: &mut FeatureCollector) -> Result<()> {
        Ok(())
    }
}

/// Static description of an extractor, one per metric.
pub struct ExtractorDescriptor {
    /// libvmaf's extractor name ("vif", "adm", "motion", "psnr").
    pub name: &'static str,
    /// libvmaf's internal names of what it provides
    /// ("VMAF_integer_feature_vif_scale0_score", ...).
    pub provided_features: &'static [&'static str],
    /// Options, with libvmaf's names, aliases and defaults.
    pub options: &'static [OptionSpec],
    /// Needs the previous frame's reference picture.
    pub needs_prev_reference: bool,
    /// Needs the previous frame's distorted picture too (SpEED's temporal
    /// feature differences both streams). Implies `needs_prev_reference`.
    pub needs_prev_distorted: bool,
    /// Whether an instance with these options needs the reference two
    /// frames back too (libvmaf's `prev_prev_ref`). Implies
    /// `needs_prev_reference`.
    pub needs_two_back: fn(&FeatureOptions) -> bool,
    /// Runs on every frame even when the context subsamples (libvmaf's
    /// TEMPORAL and PREV_REF extractors, and PSNR, whose whole-stream
    /// aggregate needs every frame). Implied by `needs_prev_reference`.
    pub every_frame: bool,
    /// Reads the chroma planes. Luma-only extractors let an import skip
    /// deinterleaving NV12-like chroma (a host copy).
    pub reads_chroma: bool,
    pub create: fn(&ExtractorConfig) -> Result<Box<dyn Extractor>>,
}

impl ExtractorDescriptor {
    /// The output name of `provided` (an entry of `provided_features`) under
    /// `options`, as libvmaf's `vmaf_feature_name_from_options` makes it.
    pub fn feature_name(&self, provided: &str, options: &FeatureOptions) -> String {
        naming::feature_name(provided, self.options, options)
    }

    pub fn provides(&self, provided: &str) -> bool {
        self.provided_features.contains(&provided)
    }

    /// Frames before frame `i` whose pictures `extract` reads for frame
    /// `i` under `options`: 2 for the reference two back, 1 for the
    /// previous reference or distorted picture, 0 for none. A segment of a
    /// title is scored from that many frames before its first one (look-
    /// ahead values are settled at the merge, over every frame).
    pub fn look_behind(&self, options: &FeatureOptions) -> u32 {
        if (self.needs_two_back)(options) {
            2
        } else if self.needs_prev_reference || self.needs_prev_distorted {
            1
        } else {
            0
        }
    }

    /// Whether libvmaf flags this extractor `VMAF_FEATURE_EXTRACTOR_TEMPORAL`
    /// (which orders its features first in a threaded context's logs).
    pub fn libvmaf_temporal(&self) -> bool {
        LIBVMAF_TEMPORAL.contains(&self.name)
    }
}

/// libvmaf 3.2.0's extractors flagged TEMPORAL whose features come first in
/// a threaded context's logs (`integer_psnr.c`, `speed.c`): libvmaf runs them
/// on its own thread while the pool runs the rest, so whichever appends
/// frame 0's values first names the order. `float_motion.c` is TEMPORAL too
/// but blurs the picture before it appends, and libvmaf's float-model logs
/// list the pool's features first (tests/golden/float_models.rs, 3 threads):
/// it is left out. Integer motion is PREV_REF only.
const LIBVMAF_TEMPORAL: [&str; 2] = ["psnr", "speed_temporal"];

/// `needs_two_back` of the extractors that never look two frames back.
pub(crate) fn never_two_back(_: &FeatureOptions) -> bool {
    false
}

/// Every extractor vmafx knows, in the order logs list them.
pub static REGISTRY: &[&ExtractorDescriptor] = &[
    &adm::DESCRIPTOR,
    &motion::DESCRIPTOR,
    &vif::DESCRIPTOR,
    &psnr::DESCRIPTOR,
    &cambi::DESCRIPTOR,
    &speed::CHROMA_DESCRIPTOR,
    &speed::TEMPORAL_DESCRIPTOR,
    &float::psnr::DESCRIPTOR,
    &float::ansnr::DESCRIPTOR,
    &float::moment::DESCRIPTOR,
    &float::motion::DESCRIPTOR,
    &float::vif::DESCRIPTOR,
    &float::adm::DESCRIPTOR,
    &ssim::SSIM_DESCRIPTOR,
    &ssim::MS_SSIM_DESCRIPTOR,
    &ciede::DESCRIPTOR,
    &psnr_hvs::DESCRIPTOR,
];

/// Looks an extractor up by its libvmaf name.
pub fn find_extractor(name: &str) -> Result<&'static ExtractorDescriptor> {
    REGISTRY.iter().copied().find(|d| d.name == name).ok_or_else(|| {
        let known: Vec<_> = REGISTRY.iter().map(|d| d.name).collect();
        Error::NotSupported(format!("feature extractor '{name}' (known: {})", known.join(", ")))
    })
}

/// Looks up the extractor that provides a libvmaf feature name (as model
/// files list them, e.g. "VMAF_integer_feature_adm2_score").
pub fn find_provider(feature: &str) -> Result<&'static ExtractorDescriptor> {
    REGISTRY
        .iter()
        .copied()
        .find(|d| d.provides(feature))
        .ok_or_else(|| Error::NotSupported(format!("no extractor provides feature '{feature}'")))
}
