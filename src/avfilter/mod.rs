//! The Rust side of FFmpeg's `vmafx` filter (a drop-in for the `libvmaf`
//! filter, `libavfilter/vf_libvmaf.c`): one [`Filter`] per filter instance
//! holds the options, the scoring [`Context`], and the output frames held
//! back until their scores are final; `ffi` (feature `capi`) exposes it to
//! the C glue (`include/vmafx.h`).
//!
//! Flow per frame pair: the glue hands over a reference to the distorted
//! and reference frames (kept alive until scored, then released) and the
//! distorted frame to pass downstream. Frames are scored on the context's
//! worker pool in order; an output frame leaves once every feature and
//! model score of its index is final (`Context::frames_final`: motion needs
//! the next frame), with one metadata entry per score:
//! `lavfi.vmafx.<name>` = the value as `%.17g` ([`number::format_g17`]),
//! `<name>` as libvmaf's logs print it (`integer_vif_scale0`, `vmaf`).
//! At end of stream the tail is flushed, the log written in libvmaf's
//! format, and the pooled score returned as libvmaf logs it.
//!
//! DRM_PRIME frames (either input, or both) arrive as FFmpeg's
//! `AVDRMFrameDescriptor` plus the hw frames context's sw_format: the fds
//! are duplicated ([`FrameDescriptor::from_av_drm`]), the buffers' implicit
//! write fences waited for up to the `fence_timeout`, and the planes read
//! in place by the CPU device ([`HostImporter`]); the AVFrame stays referenced
//! until the imported picture is dropped. docs/drm-prime.md.
//!
//! With `device=hip[:N]` DRM_PRIME frames are imported on that HIP device
//! instead (`hipImportExternalMemory`, each surface once; [`hip`]) after the
//! same fence wait, and the context scores there; software frames beside
//! them are copied to the device by the context.
//!
//! CUDA frames (either input, or both; `-hwaccel cuda
//! -hwaccel_output_format cuda`) arrive as device pointers plus the
//! sw_format; the glue first names each CUDA input's `CUcontext` and
//! stream ([`Filter::set_cuda_device`]), and `configure` then builds the
//! scoring context on that device and stream (`DeviceChoice::CudaStream`),
//! so the frames are read in place after the decoder's work ([`cuda`]);
//! p010, and nv12 / p016 chroma when an extractor reads it, are converted
//! on the device first (GPU importer, on a stream of ours in the frames'
//! context). A software input mixed with a CUDA one is copied to the device
//! by the context. docs/ffmpeg.md.
//!
//! HIP frames (`AV_PIX_FMT_HIP`, the 7.1 and 9.0 series' HIP hwcontext) go
//! the same way: the glue names each HIP input's device ordinal and stream
//! ([`Filter::set_hip_device`]), the context scores on that device beside
//! that stream (`DeviceChoice::HipStream`), and p010 / read chroma are
//! converted by the GPU importer on a stream of ours ([`hip`]).
//!
//! Both vendors' frames that need work on the device (p010; semi-planar
//! chroma when read) go through one converter ([`frames_import`]), which
//! differs per vendor only in how it reaches the device and the input's
//! stream.

pub(crate) mod cuda;
#[cfg(feature = "capi")]
pub mod ffi;
pub(crate) mod frame;
pub(crate) mod frames_import;
pub(crate) mod hip;
pub(crate) mod number;
pub(crate) mod options;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{CallerStream, Context, ContextConfig, DeviceChoice, HipCallerStream};
use crate::feature::{find_extractor, ExtractorDescriptor, FeatureOptions};
use crate::import::cpu::{HostImporter, CpuFrame};
use crate::import::drm::AvDrmFrameDescriptor;
use crate::import::FrameDescriptor;
use crate::picture::{HostCopy, Picture, PictureSource};
use crate::model::Model;
use crate::score::log::{LogFormat, LogStream};
use crate::{Error, Result};

use cuda::{CudaInput, DevicePicture};
use frame::{FrameHandle, FrameMemory, HostFormat, HostPicture, RawPlanes};
use frames_import::{FramesDevice, FramesImport};
use hip::{HipDrm, HipInput};
use options::{DeviceOption, FilterOptions, ModelSource, RawOptions};

/// How long a DRM_PRIME frame's fences are waited for by default.
pub(crate) const DEFAULT_FENCE_TIMEOUT: Duration = Duration::from_secs(1);

/// An imported DRM_PRIME frame and the AVFrame behind it: the import (its
/// mappings and duplicated fds, SYNC bracket) ends before the frame is
/// released (fields drop in declaration order).
struct DrmPicture {
    imported: CpuFrame,
    _frame: FrameHandle,
}

impl PictureSource for DrmPicture {
    fn host(&self) -> Option<Picture<'_>> {
        Some(self.imported.picture())
    }
}

/// Prefix of every metadata key the filter writes.
pub(crate) const METADATA_PREFIX: &str = "lavfi.vmafx.";

/// How the host sets metadata on an output frame.
pub(crate) type SetMetadata<'a> = dyn FnMut(&FrameHandle, &str, &str) -> Result<()> + 'a;

struct Pending {
    frame: FrameHandle,
    /// Frame index in the scoring context; `None` for frames passed
    /// through unscored.
    index: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct InputGeometry {
    width: usize,
    height: usize,
    format: &'static HostFormat,
}

/// One filter instance.
pub struct Filter {
    options: FilterOptions,
    /// What the context runs, kept to rebuild it on a CUDA device.
    models: Vec<Model>,
    extractors: Vec<(&'static ExtractorDescriptor, FeatureOptions)>,
    context: Context,
    /// The CUDA device of each input (main, reference) whose frames are
    /// CUDA frames.
    cuda: [Option<CudaInput>; 2],
    /// The HIP device of each input whose frames are HIP frames.
    hip_inputs: [Option<HipInput>; 2],
    /// Where the context scores (set by `configure`).
    scoring_on: DeviceChoice,
    /// Where it scores when no input is CUDA frames: the CPU, or the HIP
    /// device of `device=hip[:N]`.
    home: DeviceChoice,
    /// Imports DRM_PRIME frames on that HIP device (`device=hip[:N]`).
    hip: Option<HipDrm>,
    /// Converts the CUDA or HIP frames that need it on their device (p010;
    /// nv12 / p016 chroma when read); made by `configure` when needed.
    frames_import: Option<FramesImport>,
    /// CUDA and HIP frames handed to the context (in place or converted
    /// on the device), and DRM_PRIME frames imported on the HIP device.
    device_frames: u64,
    read_chroma: bool,
    geometry: Option<InputGeometry>,
    pending: VecDeque<Pending>,
    pairs: u32,
    unscored: u32,
    /// Reads DRM_PRIME frames (dma-bufs) in place.
    device: HostImporter,
    fence_timeout: Duration,
    started: Option<Instant>,
    finished: bool,
    summary: Option<String>,
    /// The log file, created by `new` (an unwritable path fails there);
    /// removed at drop when no log was written into it and this filter
    /// created it.
    log: Option<LogStream>,
    log_written: bool,
    /// The first error the filter returned: the run failed, and the log
    /// holds the frames scored before it, marked incomplete.
    fault: Option<String>,
    warnings: Vec<String>,
}

impl Filter {
    /// Parses the options, loads the models and sets up the context.
    pub fn new(raw: &RawOptions<'_>) -> Result<Filter> {
        let options = FilterOptions::parse(raw)?;
        let mut models = Vec::new();
        for spec in &options.models {
            let model = match &spec.source {
                ModelSource::Version(v) => Model::builtin(v, &spec.config),
                ModelSource::Path(p) => Model::from_path(p, &spec.config),
            }
            .map_err(|e| {
                let what = match &spec.source {
                    ModelSource::Version(v) => format!("version {v}"),
                    ModelSource::Path(p) => format!("path {}", p.display()),
                };
                Error::Model(format!("could not load model with {what}: {e}"))
            })?;
            models.push(model);
        }
        let mut extractors = Vec::new();
        let mut read_chroma = false;
        for f in &options.features {
            let descriptor = find_extractor(&f.name)?;
            let mut opts = FeatureOptions::new();
            for (k, v) in &f.options {
                // As FFmpeg's libvmaf filter: through vmaf_feature_dictionary_set.
                opts.set_text(descriptor.options, k, &crate::feature::options::feature_dictionary_value(v))
                    .map_err(|e| Error::invalid(format!("feature {}: {e}", f.name)))?;
            }
            read_chroma |= descriptor.reads_chroma;
            extractors.push((descriptor, opts));
        }
        for m in &models {
            for f in m.features() {
                read_chroma |= f.extractor.reads_chroma;
            }
        }
        // The HIP device first: without a runtime, the error names the option.
        let hip = match options.device {
            DeviceOption::Cpu => None,
            DeviceOption::Hip { index } => Some(HipDrm::open(index, read_chroma)?),
        };
        let home = hip.as_ref().map_or(DeviceChoice::Cpu, HipDrm::scoring_device);
        let context = make_context(&options, &models, &extractors, home)?;
        let log = options
            .log_path
            .as_deref()
            .map(|p| LogStream::create(p, options.log_format, options.subsample))
            .transpose()?;
        // The CPU importer's copies count in the context's counter.
        let device = HostImporter::counting_in(read_chroma, context.host_copies().clone());
        Ok(Filter {
            log,
            options,
            models,
            extractors,
            context,
            cuda: [None, None],
            hip_inputs: [None, None],
            scoring_on: home,
            home,
            hip,
            frames_import: None,
            device_frames: 0,
            read_chroma,
            geometry: None,
            pending: VecDeque::new(),
            pairs: 0,
            unscored: 0,
            device,
            fence_timeout: DEFAULT_FENCE_TIMEOUT,
            started: None,
            finished: false,
            summary: None,
            log_written: false,
            fault: None,
            warnings: Vec::new(),
        })
    }

    /// Checks the negotiated inputs.
    pub fn configure(
        &mut self,
        main: (usize, usize, &str),
        reference: (usize, usize, &str),
    ) -> Result<()> {
        if main.0 != reference.0 || main.1 != reference.1 {
            return Err(Error::Mismatch(format!(
                "input sizes differ: main is {}x{}, reference is {}x{} (scale one of them first)",
                main.0, main.1, reference.0, reference.1
            )));
        }
        if main.2 != reference.2 {
            return Err(Error::Mismatch(format!(
                "input pixel formats differ: main is {}, reference is {} (convert one with format=)",
                main.2, reference.2
            )));
        }
        let format = HostFormat::by_name(main.2)?;
        if main.0 < 3 || main.1 < 3 {
            return Err(Error::NotSupported(format!("frames of {}x{} (at least 3x3)", main.0, main.1)));
        }
        self.geometry = Some(InputGeometry { width: main.0, height: main.1, format });
        self.configure_device(main.2)
    }

    /// Declares `input` (0: main, 1: reference) as CUDA frames on the
    /// device `AVCUDADeviceContext` {`context`, `stream`}; before
    /// [`Filter::configure`].
    pub fn set_cuda_device(&mut self, input: usize, device: CudaInput) -> Result<()> {
        if input > 1 {
            return Err(Error::invalid(format!("input {input}: 0 (main) or 1 (reference)")));
        }
        if device.context == 0 {
            return Err(Error::invalid(format!("{} input: a CUDA device without a CUcontext", INPUT_NAMES[input])));
        }
        if self.pairs > 0 {
            return Err(Error::invalid("CUDA device set after frames were scored"));
        }
        self.cuda[input] = Some(device);
        Ok(())
    }

    /// Declares `input` (0: main, 1: reference) as HIP frames on the device
    /// `AVHIPDeviceContext` {`device`, `stream`}; before
    /// [`Filter::configure`].
    pub fn set_hip_device(&mut self, input: usize, device: HipInput) -> Result<()> {
        if input > 1 {
            return Err(Error::invalid(format!("input {input}: 0 (main) or 1 (reference)")));
        }
        if self.pairs > 0 {
            return Err(Error::invalid("HIP device set after frames were scored"));
        }
        self.hip_inputs[input] = Some(device);
        Ok(())
    }

    /// Scores where the frames are: on the CPU (or the HIP device of
    /// `device=hip`), or, when an input is CUDA or HIP frames, on that
    /// device beside that stream.
    fn configure_device(&mut self, format: &str) -> Result<()> {
        if let Some(device) = self.hip_frames_device(format)? {
            return self.use_device(device, format);
        }
        if let (Some(hip), Some(i)) = (&self.hip, self.cuda.iter().position(Option::is_some)) {
            return Err(Error::Mismatch(format!(
                "device=hip:{}, but the {} input is CUDA frames, scored on their own CUDA device: \
                 leave device unset for CUDA frames, or give the filter DRM_PRIME or software frames",
                hip.index(),
                INPUT_NAMES[i]
            )));
        }
        let device = match self.cuda {
            [None, None] => self.home,
            [Some(m), Some(r)] if m.context != r.context => {
                return Err(Error::Mismatch(format!(
                    "the main and reference CUDA frames are in different CUDA contexts ({:#x}, {:#x}); \
                     decode both on one device (-init_hw_device cuda=gpu -hwaccel_device gpu on each input)",
                    m.context, r.context
                )))
            }
            [Some(c), _] | [None, Some(c)] => {
                let which = if self.cuda[0].is_some() { INPUT_NAMES[0] } else { INPUT_NAMES[1] };
                cuda::check_driver(which, &format!("cuda {format}"))?;
                // SAFETY: the inputs' AVCUDADeviceContext's CUcontext and
                // stream (vmafx_filter_set_cuda_device), alive while the
                // filter's links reference their frames contexts, i.e.
                // longer than the filter and its scoring context.
                DeviceChoice::CudaStream(unsafe { CallerStream::new(c.context, c.stream) })
            }
        };
        self.use_device(device, format)
    }

    /// The scoring device for HIP frame inputs, `None` when no input is HIP
    /// frames; refuses HIP frames beside CUDA frames, `device=hip`, or on
    /// two devices or streams.
    fn hip_frames_device(&self, format: &str) -> Result<Option<DeviceChoice>> {
        let Some(i) = self.hip_inputs.iter().position(Option::is_some) else { return Ok(None) };
        if let Some(c) = self.cuda.iter().position(Option::is_some) {
            return Err(Error::Mismatch(format!(
                "the {} input is HIP frames and the {} input CUDA frames: both must be on one device \
                 (hwdownload one of them)",
                INPUT_NAMES[i], INPUT_NAMES[c]
            )));
        }
        if let Some(hip) = &self.hip {
            return Err(Error::Mismatch(format!(
                "device=hip:{}, but the {} input is HIP frames, scored on their own HIP device: \
                 leave device unset for HIP frames, or give the filter DRM_PRIME or software frames",
                hip.index(),
                INPUT_NAMES[i]
            )));
        }
        let h = match self.hip_inputs {
            [Some(m), Some(r)] if m.device != r.device => {
                return Err(Error::Mismatch(format!(
                    "the main and reference HIP frames are on different HIP devices ({}, {}); \
                     upload both to one device (-init_hw_device hip=gpu -filter_hw_device gpu)",
                    m.device, r.device
                )))
            }
            [Some(m), Some(r)] if m.stream != r.stream => {
                return Err(Error::Mismatch(format!(
                    "the main and reference HIP frames are on different streams of HIP device {} ({:#x}, {:#x}); \
                     use one HIP device context for both inputs",
                    m.device, m.stream, r.stream
                )))
            }
            [Some(h), _] | [None, Some(h)] => h,
            [None, None] => return Ok(None),
        };
        hip::check_runtime(INPUT_NAMES[i], &format!("hip {format}"))?;
        // SAFETY: the inputs' AVHIPDeviceContext's stream
        // (vmafx_filter_set_hip_device), alive while the filter's links
        // reference their frames contexts, i.e. longer than the filter and
        // its scoring context.
        Ok(Some(DeviceChoice::HipStream(unsafe { HipCallerStream::new(h.device, h.stream) })))
    }

    /// Makes the converters the inputs need, then the scoring context on
    /// `device` (when it changed).
    fn use_device(&mut self, device: DeviceChoice, format: &str) -> Result<()> {
        if device != self.scoring_on && self.pairs > 0 {
            return Err(Error::invalid("inputs reconfigured after frames were scored"));
        }
        // The converter first (its library stream in the frames' context;
        // kernels load on first use), then the scoring context.
        let format = HostFormat::by_name(format)?;
        self.frames_import = None;
        let frames = match device {
            DeviceChoice::CudaStream(caller) => {
                Some((FramesDevice::Cuda { context: caller.context() }, self.cuda.map(|c| c.map(|c| c.stream))))
            }
            DeviceChoice::HipStream(caller) => {
                Some((FramesDevice::Hip { device: caller.device() }, self.hip_inputs.map(|h| h.map(|h| h.stream))))
            }
            _ => None,
        };
        if let Some((frames, streams)) = frames.filter(|_| cuda::needs_device_work(format, self.read_chroma)) {
            // SAFETY: the CUcontext and the streams are the inputs' hw
            // device context's (vmafx_filter_set_cuda_device /
            // set_hip_device), of one device (the filter refuses two),
            // alive while the filter's links reference their frames
            // contexts, i.e. longer than the filter.
            self.frames_import = Some(unsafe { FramesImport::new(frames, streams, format, self.read_chroma) }?);
        }
        if device != self.scoring_on {
            let copies = self.context.host_copies().clone();
            self.context = make_context(&self.options, &self.models, &self.extractors, device)?;
            self.context.count_host_copies_in(copies)?;
            self.scoring_on = device;
        }
        Ok(())
    }

    /// How long DRM_PRIME frames' fences are waited for (zero: the default).
    pub fn set_fence_timeout(&mut self, timeout: Duration) {
        self.fence_timeout = if timeout.is_zero() { DEFAULT_FENCE_TIMEOUT } else { timeout };
    }

    fn wrap(&mut self, frame: FrameHandle, raw: &RawPlanes, fmt: &str, what: &str) -> Result<Arc<dyn PictureSource>> {
        let g = self
            .geometry
            .ok_or_else(|| Error::Internal("frame before the inputs were configured".into()))?;
        if fmt != g.format.name || raw.width != g.width || raw.height != g.height {
            return Err(Error::Mismatch(format!(
                "{what} frame {} is {}x{} {fmt}, the input was configured as {}x{} {}",
                self.pairs, raw.width, raw.height, g.width, g.height, g.format.name
            )));
        }
        match raw.memory {
            FrameMemory::Host => {}
            FrameMemory::DrmPrime => return self.import_drm(frame, raw, what),
            FrameMemory::Cuda { context } => return self.wrap_cuda(frame, raw, context, what),
            FrameMemory::Hip => return self.wrap_hip(frame, raw, what),
        }
        // SAFETY: the glue fills RawPlanes from the AVFrame behind `frame`
        // (vmafx.h contract), whose buffers stay referenced by `frame`.
        let (pic, copied) = unsafe { HostPicture::wrap(frame, raw, g.format, self.read_chroma) }?;
        if copied {
            let (planes, bytes) = pic.copied();
            self.context.host_copies().count(HostCopy::InHostMemory, planes, bytes);
        }
        Ok(Arc::new(pic))
    }

    /// Wraps a CUDA frame: its planes stay on the device, read in place by
    /// the context, which runs on that input's CUDA context, or converted
    /// there first (p010; semi-planar chroma when read).
    fn wrap_cuda(&mut self, frame: FrameHandle, raw: &RawPlanes, context: u64, what: &str) -> Result<Arc<dyn PictureSource>> {
        let g = self.geometry.ok_or_else(|| Error::Internal("frame before configure".into()))?;
        let input = if what == INPUT_NAMES[0] { 0 } else { 1 };
        let label = format!("{what} frame {} (cuda {})", self.pairs, g.format.name);
        let Some(device) = self.cuda[input] else {
            return Err(Error::invalid(format!(
                "{label}: a CUDA frame on an input not declared as CUDA (vmafx_filter_set_cuda_device)"
            )));
        };
        if context != device.context {
            return Err(Error::Mismatch(format!(
                "{label}: the frame is in CUDA context {context:#x}, the input's device is {:#x}",
                device.context
            )));
        }
        let pic: Arc<dyn PictureSource> = match self.frames_import.as_mut() {
            Some(import) => import.import(input, frame, raw, g.format, &label)?,
            None => Arc::new(DevicePicture::wrap(frame, raw, g.format, self.read_chroma, cuda_memory(context), &label)?),
        };
        self.device_frames += 1;
        Ok(pic)
    }

    /// Wraps a HIP frame: read in place by the context on its device, or
    /// converted there first (p010; semi-planar chroma when read).
    fn wrap_hip(&mut self, frame: FrameHandle, raw: &RawPlanes, what: &str) -> Result<Arc<dyn PictureSource>> {
        let g = self.geometry.ok_or_else(|| Error::Internal("frame before configure".into()))?;
        let input = if what == INPUT_NAMES[0] { 0 } else { 1 };
        let label = format!("{what} frame {} (hip {})", self.pairs, g.format.name);
        let Some(device) = self.hip_inputs[input] else {
            return Err(Error::invalid(format!(
                "{label}: a HIP frame on an input not declared as HIP (vmafx_filter_set_hip_device)"
            )));
        };
        let pic: Arc<dyn PictureSource> = match self.frames_import.as_mut() {
            Some(import) => import.import(input, frame, raw, g.format, &label)?,
            None => Arc::new(hip::wrap_in_place(frame, raw, g.format, self.read_chroma, device.device, &label)?),
        };
        self.device_frames += 1;
        Ok(pic)
    }

    /// Imports a DRM_PRIME frame, waiting for its fences: on the HIP device
    /// of `device=hip`, else on the CPU device.
    fn import_drm(&mut self, frame: FrameHandle, raw: &RawPlanes, what: &str) -> Result<Arc<dyn PictureSource>> {
        let g = self.geometry.ok_or_else(|| Error::Internal("frame before configure".into()))?;
        if raw.data[0].is_null() {
            return Err(Error::invalid(format!("{what} frame {}: drm_prime frame without a descriptor", self.pairs)));
        }
        // SAFETY: vmafx.h: data[0] of a DRM_PRIME frame is its
        // AVDRMFrameDescriptor, valid while `frame` is referenced (it is,
        // until after this read and the fd duplication).
        let av = unsafe { std::ptr::read_unaligned(raw.data[0] as *const AvDrmFrameDescriptor) };
        let label = format!("{what} frame {} (drm_prime {})", self.pairs, g.format.name);
        let desc = FrameDescriptor::from_av_drm(&av, label, raw.width, raw.height, g.format.bits)?;
        if let Some(hip) = &self.hip {
            let pic = hip.import(frame, desc, self.fence_timeout)?;
            self.device_frames += 1;
            return Ok(pic);
        }
        // Its host copies (planes deinterleaved or shifted) count once per
        // frame in the context's counter, as for software frames.
        let imported = self.device.wait_and_import(desc, self.fence_timeout)?;
        Ok(Arc::new(DrmPicture { imported, _frame: frame }))
    }

    /// Queues one pair; `output` leaves through [`Filter::pop`] once final.
    /// The handles are released on every path, errors included.
    pub fn push(
        &mut self,
        main: (FrameHandle, RawPlanes, &str),
        reference: (FrameHandle, RawPlanes, &str),
        output: FrameHandle,
    ) -> Result<()> {
        if self.finished {
            return Err(Error::invalid("frame after end of stream"));
        }
        let distorted = self.wrap(main.0, &main.1, main.2, "main")?;
        let reference = self.wrap(reference.0, &reference.1, reference.2, "reference")?;
        self.started.get_or_insert_with(Instant::now);
        self.context.push(reference, distorted)?;
        self.pending.push_back(Pending { frame: output, index: Some(self.pairs) });
        self.pairs += 1;
        Ok(())
    }

    /// The host is about to repeat the main input's last frame (FFmpeg's
    /// framesync extends main past its end while the reference goes on):
    /// the main input ended after `main_frames` frames, early, as a
    /// truncated file does. An error: scoring the repeated frame against
    /// later reference frames would log pairs that never existed.
    pub fn main_ended(&mut self, main_frames: i64) -> Result<()> {
        Err(Error::Mismatch(format!(
            "the main (distorted) input ended after {main_frames} frames while the reference goes on \
             (a truncated or shorter main input); FFmpeg would score its last frame again. \
             Make the inputs equally long, or end at the shorter with shortest=1"
        )))
    }

    /// The host found the reference ended while the main input goes on:
    /// its frame sync would pair the next main frames with the reference's
    /// last frame again (eof_action=repeat). An error: those pairs never
    /// existed, and scoring them would also change the last common frame's
    /// look-ahead values; the log keeps the `reference_frames` common pairs.
    pub fn reference_ended(&mut self, reference_frames: i64) -> Result<()> {
        Err(Error::Mismatch(format!(
            "the reference input ended after {reference_frames} frames while the main (distorted) input goes on \
             (a truncated or shorter reference); FFmpeg would score the reference's last frame again. \
             Make the inputs equally long, or accept it with shortest=1 or eof_action=endall|pass"
        )))
    }

    /// Queues a frame that passes through unscored, behind the others.
    pub fn push_unscored(&mut self, output: FrameHandle) {
        self.unscored += 1;
        self.pending.push_back(Pending { frame: output, index: None });
    }

    /// The next output frame whose scores are final, with its metadata set.
    pub fn pop(&mut self, set: &mut SetMetadata<'_>) -> Result<Option<FrameHandle>> {
        self.log_final_frames()?;
        let ready = match self.pending.front() {
            None => return Ok(None),
            Some(Pending { index: None, .. }) => true,
            Some(Pending { index: Some(i), .. }) => self.finished || *i < self.context.frames_final(),
        };
        if !ready {
            return Ok(None);
        }
        let Pending { frame, index } = self.pending.pop_front().expect("front exists");
        if let Some(i) = index {
            let collector = self.context.collector();
            for name in collector.names() {
                if let Some(v) = collector.get(name, i) {
                    set(&frame, &metadata_key(name), &number::format_g17(v))?;
                }
            }
        }
        Ok(Some(frame))
    }

    /// End of stream: scores what is in flight, then checks the frame
    /// counts. `reference_frames < 0` skips that check.
    pub fn finish(&mut self, reference_frames: i64, allow_unequal: bool) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.pairs > 0 {
            self.context.flush()?;
        }
        let main_frames = self.pairs as i64 + self.unscored as i64;
        if reference_frames >= 0 && reference_frames != main_frames {
            let msg = format!(
                "frame counts differ: main (distorted) has {main_frames} frames, reference has {reference_frames}"
            );
            if !allow_unequal {
                return Err(Error::Mismatch(format!(
                    "{msg}; with eof_action=repeat (the default) a shorter reference would have its last frame scored again. \
                     Make the inputs equally long, or accept it with shortest=1 or eof_action=endall|pass"
                )));
            }
            self.warnings.push(format!(
                "{msg}; {} pairs scored, {} main frames passed through unscored",
                self.pairs, self.unscored
            ));
        }
        Ok(())
    }

    /// Records the first error returned to the host: the graph fails, and
    /// [`Filter::summary`] then writes the frames scored before it as a log
    /// marked incomplete.
    pub fn note_fault(&mut self, e: &Error) {
        self.fault.get_or_insert_with(|| e.to_string());
    }

    /// Finishes if needed, writes the log (once), and returns the lines
    /// libvmaf logs at info level: "VMAF score: %f" per model. After a
    /// fault ([`Filter::note_fault`]) it writes the log of the frames
    /// scored before it, marked incomplete, and returns an
    /// [`Error::Incomplete`] that says so.
    pub fn summary(&mut self) -> Result<&str> {
        if self.summary.is_none() {
            if let Err(e) = self.finish(-1, true) {
                self.note_fault(&e);
            }
            if let Some(fault) = self.fault.clone() {
                return Err(self.keep_partial_log(&fault));
            }
            let mut text = String::new();
            if self.pairs > 0 {
                for m in self.context.models() {
                    let score = self.context.pooled(m.name(), self.options.pool, 0, self.pairs - 1)?;
                    text.push_str(&format!("VMAF score: {}\n", printf_f(score)));
                }
                self.write_log(self.pairs, None)?;
            }
            self.summary = Some(text);
        }
        Ok(self.summary.as_deref().unwrap_or(""))
    }

    /// After `fault`: the frames scored before it, finished as a stream
    /// that ends there, go to the log marked incomplete. Returns the error
    /// to report (the log's fate).
    fn keep_partial_log(&mut self, fault: &str) -> Error {
        let frames = match self.context.flush_partial() {
            Ok(n) => n,
            Err(e) => return e,
        };
        let Some(path) = self.options.log_path.clone() else {
            return Error::Incomplete(format!("no log_path: the {frames} frames scored before the error are not kept"));
        };
        if frames == 0 {
            return Error::Incomplete(format!("{}: no frame was scored before the error, no log written", path.display()));
        }
        match self.write_log(frames, Some(fault)) {
            Ok(()) => Error::Incomplete(format!(
                "{}: the log holds the {frames} frame{} scored before the error, marked incomplete{}",
                path.display(),
                if frames == 1 { "" } else { "s" },
                match self.options.log_format {
                    LogFormat::Json | LogFormat::Xml => " (\"incomplete\")",
                    LogFormat::Csv | LogFormat::Sub => " (only here: csv and sub logs have no place for the mark)",
                }
            )),
            Err(e) => e,
        }
    }

    fn write_log(&mut self, frames: u32, incomplete: Option<&str>) -> Result<()> {
        self.log_final_frames()?;
        let Some(log) = self.log.as_mut() else { return Ok(()) };
        if self.log_written {
            return Ok(());
        }
        let g = self.geometry.ok_or_else(|| Error::Internal("log before configure".into()))?;
        let seconds = self.started.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
        let fps = (seconds > 0.0).then(|| frames as f64 / seconds);
        log.finish(self.context.collector(), self.context.running_pools(), (g.width, g.height, fps), incomplete)?;
        self.log_written = true;
        Ok(())
    }

    /// Logs the frames whose values became final, then lets the context
    /// drop the values of frames both logged and sent downstream (with
    /// their metadata), in batches: memory stays flat over a long stream.
    fn log_final_frames(&mut self) -> Result<()> {
        let final_frames = self.context.frames_final();
        let logged = match self.log.as_mut() {
            Some(log) => {
                log.write_frames(self.context.collector(), final_frames)?;
                log.frames_written()
            }
            None => final_frames,
        };
        let popped = match self.pending.iter().find_map(|p| p.index) {
            Some(next) => next,
            None => self.pairs,
        };
        let releasable = logged.min(popped);
        if releasable >= self.context.collector().first_kept() + RETIRE_BATCH {
            self.context.retire_before(releasable);
        }
        Ok(())
    }

    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
    pub fn frames_scored(&self) -> u64 {
        self.pairs as u64
    }
    /// Frames copied in host memory before scoring (software frames
    /// shifted, split or flipped; DRM_PRIME frames copied out of their
    /// mapping): the context's counter, not its uploads to a GPU lane.
    pub fn host_copies(&self) -> u64 {
        self.context.host_copies().pictures(HostCopy::InHostMemory)
    }
    /// CUDA and HIP frames scored on their device, and DRM_PRIME frames
    /// imported on the HIP device.
    pub fn device_frames(&self) -> u64 {
        self.device_frames
    }
    /// dma-buf objects imported on the HIP device (each once) and held now;
    /// (0, 0) without `device=hip`.
    pub fn hip_dma_buf_imports(&self) -> (u64, usize) {
        self.hip.as_ref().map_or((0, 0), HipDrm::dma_buf_imports)
    }
    /// Planes converted on the device (p010 shifted, chroma split); 0 when
    /// every CUDA or HIP frame is read in place.
    pub fn device_converted_planes(&self) -> u64 {
        use crate::import::gpu::GpuImportStats;
        self.frames_import.as_ref().map_or(0, |i| GpuImportStats::get(&i.stats().converted_planes))
    }
    /// Where the context scores.
    pub fn scoring_on(&self) -> DeviceChoice {
        self.scoring_on
    }
    pub fn context(&self) -> &Context {
        &self.context
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            log.discard_unless_finished();
        }
    }
}

/// Frames whose values are dropped at once when logged and sent on.
const RETIRE_BATCH: u32 = 64;

/// The device memory of CUDA frames in `context` (a `CUcontext`).
fn cuda_memory(context: u64) -> crate::device::DeviceMemoryId {
    crate::device::DeviceMemoryId { kind: crate::device::DeviceKind::Cuda, context }
}

/// The inputs by index, as errors name them.
const INPUT_NAMES: [&str; 2] = ["main", "reference"];

/// A context on `device` running the filter's models and extractors (in the
/// order `Filter::new` met them: the same collector order on every device).
fn make_context(
    options: &FilterOptions,
    models: &[Model],
    extractors: &[(&'static ExtractorDescriptor, FeatureOptions)],
    device: DeviceChoice,
) -> Result<Context> {
    let mut context = Context::new(ContextConfig {
        threads: options.threads,
        subsample: options.subsample,
        device,
        ..ContextConfig::default()
    })?;
    for model in models {
        context.use_model(model.clone())?;
    }
    for (descriptor, opts) in extractors {
        context.use_extractor(descriptor, opts.clone())?;
    }
    Ok(context)
}

/// The metadata key of a collector entry: the prefix and the name libvmaf
/// prints in its logs (the alias: "integer_vif_scale0", a model's name).
pub(crate) fn metadata_key(collector_name: &str) -> String {
    format!("{METADATA_PREFIX}{}", crate::feature::naming::alias(collector_name))
}

/// C's `%f` (six decimals; "nan", "inf" as glibc prints them).
fn printf_f(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf".into() } else { "inf".into() }
    } else {
        format!("{v:.6}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::picture::{Chroma, OwnedPicture, PixelFormat};
    use std::collections::HashMap;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    /// The tests count live frames in one counter: one test at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    unsafe extern "C" fn free_fake(p: *mut c_void) {
        LIVE.fetch_sub(1, Ordering::SeqCst);
        // SAFETY: the tests' handles are Box<OwnedPicture>s, each released once.
        drop(unsafe { Box::from_raw(p as *mut OwnedPicture) });
    }

    /// A host frame: a boxed picture, counted while alive.
    fn fake(p: &OwnedPicture) -> (FrameHandle, RawPlanes) {
        LIVE.fetch_add(1, Ordering::SeqCst);
        let b = Box::new(p.clone());
        let v = b.view();
        let mut data = [std::ptr::null(); 4];
        let mut linesize = [0; 4];
        for i in 0..v.plane_count() {
            data[i] = v.plane(i).data().as_ptr();
            linesize[i] = v.plane(i).stride() as i32;
        }
        let raw = RawPlanes { data, linesize, width: p.width(), height: p.height(), memory: frame::FrameMemory::Host };
        // SAFETY: the pointer is the Box<OwnedPicture> whose planes `raw`
        // points into, given up here; `free_fake` takes it back, once.
        (unsafe { FrameHandle::new(Box::into_raw(b) as *mut c_void, free_fake) }, raw)
    }

    fn picture(t: usize) -> OwnedPicture {
        let f = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
        let mut p = OwnedPicture::new(f, 16, 12).unwrap();
        for y in 0..12 {
            for x in 0..16 {
                p.set(0, x, y, ((x * 7 + y * 3 + t * t * 5) % 256) as u16);
            }
        }
        p
    }

    #[test]
    fn output_waits_for_final_scores_and_matches_the_core() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        for threads in [0, 2] {
            let raw = RawOptions { model: Some(""), feature: Some("name=motion"), n_threads: threads, n_subsample: 1, ..Default::default() };
            let mut f = Filter::new(&raw).unwrap();
            f.configure((16, 12, "yuv420p"), (16, 12, "yuv420p")).unwrap();
            let mut got: Vec<HashMap<String, String>> = Vec::new();
            let pop_all = |f: &mut Filter, got: &mut Vec<HashMap<String, String>>| {
                loop {
                    let mut meta = HashMap::new();
                    let mut set = |_: &FrameHandle, k: &str, v: &str| -> Result<()> {
                        meta.insert(k.to_owned(), v.to_owned());
                        Ok(())
                    };
                    match f.pop(&mut set).unwrap() {
                        Some(frame) => {
                            drop(frame);
                            got.push(meta);
                        }
                        None => break,
                    }
                }
            };
            let pics: Vec<OwnedPicture> = (0..6).map(picture).collect();
            for (i, p) in pics.iter().enumerate() {
                let (m, mr) = fake(p);
                let (r, rr) = fake(&pics[(i + 1) % 6]);
                let (o, _) = fake(p);
                f.push((m, mr, "yuv420p"), (r, rr, "yuv420p"), o).unwrap();
                pop_all(&mut f, &mut got);
                // Motion needs the next frame: frame i cannot be out yet.
                assert!(got.len() <= i, "threads={threads}: frame {i} left before the next was scored");
            }
            f.finish(6, false).unwrap();
            pop_all(&mut f, &mut got);
            assert_eq!(got.len(), 6);
            for (i, meta) in got.iter().enumerate() {
                let v = f.context().score_at("VMAF_integer_feature_motion2_score", i as u32).unwrap();
                assert_eq!(meta["lavfi.vmafx.integer_motion2"], number::format_g17(v));
            }
            assert_eq!(f.summary().unwrap(), "");
            drop(f);
        }
        assert_eq!(LIVE.load(Ordering::SeqCst), 0, "every host frame released");
    }

    #[test]
    fn cuda_inputs_need_one_context_and_the_driver() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let raw = RawOptions { model: None, feature: Some("name=motion"), n_subsample: 1, ..Default::default() };
        let mut f = Filter::new(&raw).unwrap();
        assert!(f.set_cuda_device(2, CudaInput { context: 1, stream: 0 }).is_err());
        assert!(f.set_cuda_device(0, CudaInput { context: 0, stream: 0 }).is_err());
        f.set_cuda_device(0, CudaInput { context: 0xc1, stream: 0x51 }).unwrap();
        f.set_cuda_device(1, CudaInput { context: 0xc2, stream: 0x52 }).unwrap();
        let err = f.configure((64, 48, "nv12"), (64, 48, "nv12")).unwrap_err().to_string();
        assert!(err.contains("different CUDA contexts (0xc1, 0xc2)"), "{err}");

        // One CUDA input, mixed with a software one.
        let mut f = Filter::new(&raw).unwrap();
        f.set_cuda_device(1, CudaInput { context: 0xc1, stream: 0x51 }).unwrap();
        let psnr = RawOptions { model: None, feature: Some("name=psnr"), n_subsample: 1, ..Default::default() };
        let mut g = Filter::new(&psnr).unwrap();
        g.set_cuda_device(0, CudaInput { context: 0xc1, stream: 0x51 }).unwrap();
        match crate::device::gpu::cuda::driver() {
            Err(_) => {
                // No driver here: a clear error naming the input and the
                // library, for every layout (p010 and nv12 with chroma
                // readers are converted on the device now, not refused).
                for fmt in ["nv12", "p010le", "p016le", "yuv420p10le"] {
                    let err = f.configure((64, 48, fmt), (64, 48, fmt)).unwrap_err().to_string();
                    assert!(err.starts_with(&format!("device: the reference input is CUDA frames (cuda {fmt}), but the CUDA driver is not usable here")), "{err}");
                    assert!(err.contains("libcuda.so.1"), "{err}");
                }
                let err = g.configure((64, 48, "nv12"), (64, 48, "nv12")).unwrap_err().to_string();
                assert!(err.starts_with("device: the main input is CUDA frames (cuda nv12)"), "{err}");
                assert_eq!(f.scoring_on(), DeviceChoice::Cpu);
            }
            // A driver: the context is made on the caller's stream (or,
            // before the GPU context, refused as not supported).
            Ok(_) => match f.configure((64, 48, "nv12"), (64, 48, "nv12")) {
                // SAFETY: only compared, never used.
                Ok(()) => assert_eq!(f.scoring_on(), DeviceChoice::CudaStream(unsafe { CallerStream::new(0xc1, 0x51) })),
                Err(e) => assert!(matches!(e, Error::NotSupported(_)), "{e}"),
            },
        }
    }

    /// The filter takes every extractor and built-in model by libvmaf's
    /// names and options (the values are the engine's: tests/golden/).
    #[test]
    fn every_extractor_and_the_bootstrap_collection_are_accepted() {
        let raw = RawOptions {
            model: Some("version=vmaf_b_v0.6.3:name=b"),
            feature: Some("name=float_ssim:enable_lcs=true:scale=2|name=float_ms_ssim:enable_db=true:clip_db=true|name=ciede|name=psnr_hvs"),
            n_subsample: 1,
            ..Default::default()
        };
        let f = Filter::new(&raw).unwrap();
        let names: Vec<&str> = f.context.models()[0].bootstrap_names().collect();
        assert_eq!((names.len(), names[0], names[23]), (24, "b_0001", "b_ci_p95_hi"));
        let names: Vec<&str> = f.extractors.iter().map(|(d, _)| d.name).collect();
        assert_eq!(names, ["float_ssim", "float_ms_ssim", "ciede", "psnr_hvs"]);
        for bad in ["name=float_ssim:scale=11", "name=float_ms_ssim:enable_lcs=maybe", "name=ciede:nope=1"] {
            let raw = RawOptions { model: None, feature: Some(bad), n_subsample: 1, ..Default::default() };
            assert!(Filter::new(&raw).is_err(), "{bad}");
        }
    }

    #[test]
    fn cuda_frame_on_a_software_input_is_refused() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let raw = RawOptions { model: None, feature: Some("name=motion"), n_subsample: 1, ..Default::default() };
        let mut f = Filter::new(&raw).unwrap();
        f.configure((16, 12, "yuv420p"), (16, 12, "yuv420p")).unwrap();
        let p = picture(0);
        let (m, mut mr) = fake(&p);
        mr.memory = frame::FrameMemory::Cuda { context: 0xc1 };
        let (r, rr) = fake(&p);
        let (o, _) = fake(&p);
        let err = f.push((m, mr, "yuv420p"), (r, rr, "yuv420p"), o).unwrap_err().to_string();
        assert!(err.contains("main frame 0 (cuda yuv420p): a CUDA frame on an input not declared as CUDA"), "{err}");
        drop(f);
        assert_eq!(LIVE.load(Ordering::SeqCst), 0, "every frame released on the error path");
    }

    #[test]
    fn mismatches_are_errors_and_release_frames() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let raw = RawOptions { model: None, feature: Some("name=motion"), n_subsample: 1, ..Default::default() };
        let mut f = Filter::new(&raw).unwrap();
        assert!(f.configure((16, 12, "yuv420p"), (18, 12, "yuv420p")).is_err());
        assert!(f.configure((16, 12, "yuv420p"), (16, 12, "nv12")).is_err());
        assert!(f.configure((16, 12, "rgb24"), (16, 12, "rgb24")).is_err());
        f.configure((16, 12, "yuv420p"), (16, 12, "yuv420p")).unwrap();
        let p = picture(0);
        let (m, mr) = fake(&p);
        let (r, mut rr) = fake(&p);
        rr.width = 14;
        let (o, _) = fake(&p);
        assert!(f.push((m, mr, "yuv420p"), (r, rr, "yuv420p"), o).is_err());
        let (m, mr) = fake(&p);
        let (r, rr) = fake(&p);
        let (o, _) = fake(&p);
        f.push((m, mr, "yuv420p"), (r, rr, "yuv420p"), o).unwrap();
        let err = f.finish(3, false).unwrap_err().to_string();
        assert!(err.contains("main (distorted) has 1 frames, reference has 3"), "{err}");
        drop(f);
        assert_eq!(LIVE.load(Ordering::SeqCst), 0);
    }
}
