//! The scoring context: which extractors run, frames in flight on a worker
//! pool, results in frame order, look-back pictures for temporal features,
//! and model scores once the stream ends.
//!
//! Like libvmaf's `VmafContext` with `n_threads`: with 0 threads every frame
//! is scored on the caller's thread; with N, frames go to N workers (each
//! with its own extractor instances) and at most `2 * N` are in flight.
//! Results are committed to the collector in frame order, so the log's
//! feature order never depends on scheduling.
//!
//! On a GPU ([`DeviceChoice::Gpu`], [`DeviceChoice::CudaStream`],
//! [`DeviceChoice::HipStream`],
//! [`Context::with_lanes`]) every worker (or the caller's thread, with 0
//! threads) owns one lane: a [`GpuDevice`] with its own stream and scratch.
//! Per frame the worker puts each picture on its lane once (a host picture
//! is copied into the lane's scratch, a device picture of the lane's memory
//! is read in place after its `ready` event) and every extractor's device
//! twin reads those planes. The twins compute integer sums on the device
//! and finish with the CPU code, so the values are the CPU context's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::device::gpu::{GpuDevice, UploadSlot};
use crate::device::{DeviceFrame, DeviceKind, DeviceMemoryId};
use crate::feature::{
    DeviceFrameInput, ExtractorConfig, ExtractorDescriptor, Extractor, FeatureOptions, FrameInput,
    FrameScores,
};
use crate::model::Model;
use crate::picture::{OwnedPicture, Picture, PixelFormat};
use crate::score::pool::{pool_frames, PoolMethod, RunningPools};
use crate::score::FeatureCollector;
use crate::simd::CpuLevel;
use crate::{Error, Result};

/// Something that holds a picture for as long as the engine needs it:
/// an [`OwnedPicture`], or a wrapper around a reference-counted frame. Its
/// samples are in host memory ([`PictureSource::host`]), in a GPU lane's
/// memory ([`PictureSource::device_frame`]), or both. Dropping the last
/// reference is the release: every reader is done with it then.
pub trait PictureSource: Send + Sync {
    /// The host planes; `None` for a picture that lives only on a device.
    fn host(&self) -> Option<Picture<'_>>;
    /// The planes in device memory, when the picture is there.
    fn device_frame(&self) -> Option<&DeviceFrame> {
        None
    }
}

impl PictureSource for OwnedPicture {
    fn host(&self) -> Option<Picture<'_>> {
        Some(self.view())
    }
}

/// Context settings, as libvmaf's `VmafConfiguration`.
#[derive(Clone, Debug)]
pub struct ContextConfig {
    /// Worker threads; 0 scores on the caller's thread.
    pub threads: usize,
    /// Score every n-th frame (temporal extractors still see every frame).
    pub subsample: u32,
    /// Highest SIMD level to use.
    pub cpu: CpuLevel,
    /// Where the features are computed.
    pub device: DeviceChoice,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig { threads: 0, subsample: 1, cpu: CpuLevel::detect(), device: DeviceChoice::Cpu }
    }
}

/// Where a context computes its features. On a GPU every extractor runs
/// its device twin (identical values); host pictures are copied to the
/// device once per frame, device pictures ([`PictureSource::device_frame`])
/// are read in place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceChoice {
    #[default]
    Cpu,
    /// Device `index` of `kind` (CUDA or HIP), on streams of vmafx's own.
    Gpu { kind: DeviceKind, index: usize },
    /// The caller's CUDA context and stream (FFmpeg's
    /// `AVCUDADeviceContext`); each frame's work runs after what the caller
    /// queued there before the frame was scored. Made with the unsafe
    /// [`CallerStream::new`].
    ///
    /// Every lane (one per worker thread) has a non-blocking stream of its
    /// own in the caller's context; per frame it records an event on the
    /// caller's stream and waits for it (no host wait). So a decoder's next
    /// copies on the caller's stream do not queue behind our kernels, and
    /// our read-backs wait for our stream only.
    CudaStream(CallerStream),
    /// The caller's HIP device and stream (`hipStream_t`), as
    /// [`DeviceChoice::CudaStream`] for CUDA: lanes on non-blocking streams
    /// of their own that wait for the caller's stream by event per frame.
    /// Made with the unsafe [`HipCallerStream::new`].
    HipStream(HipCallerStream),
}

/// A caller's `CUcontext` and `CUstream`, as integers. Only
/// [`CallerStream::new`] makes one, and it is unsafe: the driver
/// dereferences these handles, so a safe caller must not be able to invent
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallerStream {
    context: u64,
    stream: u64,
}

impl CallerStream {
    /// # Safety
    /// `context` is a live `CUcontext` and `stream` a stream in it (or 0,
    /// its default stream); both outlive every [`Context`] made with them.
    pub unsafe fn new(context: u64, stream: u64) -> Self {
        CallerStream { context, stream }
    }
    pub fn context(&self) -> u64 {
        self.context
    }
    pub fn stream(&self) -> u64 {
        self.stream
    }
}

/// A caller's HIP device ordinal and `hipStream_t` (as an integer). Only
/// [`HipCallerStream::new`] makes one, and it is unsafe, as
/// [`CallerStream::new`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HipCallerStream {
    device: usize,
    stream: u64,
}

impl HipCallerStream {
    /// # Safety
    /// `stream` is a live stream of HIP device `device` (or 0, its null
    /// stream) that outlives every [`Context`] made with it.
    pub unsafe fn new(device: usize, stream: u64) -> Self {
        HipCallerStream { device, stream }
    }
    pub fn device(&self) -> usize {
        self.device
    }
    pub fn stream(&self) -> u64 {
        self.stream
    }
}

impl DeviceChoice {
    /// Opens one lane for this GPU choice.
    fn open_lane(self) -> Result<GpuDevice> {
        Ok(match self {
            DeviceChoice::Cpu => return Err(Error::Internal("a GPU lane for the CPU".into())),
            DeviceChoice::Gpu { kind: DeviceKind::Cuda, index } => GpuDevice::cuda(index)?,
            DeviceChoice::Gpu { kind: DeviceKind::Hip, index } => GpuDevice::hip(index)?,
            DeviceChoice::Gpu { kind: DeviceKind::Cpu, .. } => {
                return Err(Error::invalid("DeviceChoice::Gpu of kind Cpu: use DeviceChoice::Cpu"))
            }
            // SAFETY: CallerStream::new's contract: a live context and a
            // stream in it (or 0, its default stream), outliving the context.
            DeviceChoice::CudaStream(caller) => unsafe {
                GpuDevice::cuda_from_stream(caller.context as usize as _, caller.stream as usize as _)?
            },
            // SAFETY: HipCallerStream::new's contract: a live stream of that
            // device (or 0, its null stream), outliving the context.
            DeviceChoice::HipStream(caller) => unsafe {
                GpuDevice::hip_from_stream(caller.device, caller.stream as usize as _)?
            },
        })
    }
}

impl std::fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceChoice::Cpu => write!(f, "the CPU"),
            DeviceChoice::Gpu { kind: DeviceKind::Cuda, index } => write!(f, "CUDA device {index}"),
            DeviceChoice::Gpu { kind: DeviceKind::Hip, index } => write!(f, "HIP device {index}"),
            DeviceChoice::Gpu { kind: DeviceKind::Cpu, index } => write!(f, "CPU device {index}"),
            DeviceChoice::CudaStream(CallerStream { context, stream }) => {
                write!(f, "CUDA context {context:#x}, stream {stream:#x}")
            }
            DeviceChoice::HipStream(HipCallerStream { device, stream }) => {
                write!(f, "HIP device {device}, stream {stream:#x}")
            }
        }
    }
}

/// Pictures per frame whose planes a lane holds uploaded at once:
/// reference, distorted, previous reference, previous distorted, the
/// reference two frames back.
const SLOTS: usize = crate::device::gpu::UPLOAD_PICTURES;

/// A worker's GPU lane and the pictures on it.
struct LaneState {
    device: GpuDevice,
    /// Planes each picture needs there (chroma only when an extractor of
    /// the context reads it).
    planes: usize,
    /// Planes the previous reference needs (chroma only when a temporal
    /// extractor reads it).
    prev_planes: usize,
    /// The last frame's reference copied here, with its planes and scratch
    /// slot: the next frame's previous reference when this lane scores that
    /// frame, so a run on one lane copies each picture once.
    kept: Option<(Arc<dyn PictureSource>, DeviceFrame, usize)>,
    /// Host pictures copied to a device, context-wide.
    uploads: Arc<AtomicU64>,
}

impl LaneState {
    /// `picture` on the lane: in place, kept from the last frame, or copied
    /// into a scratch slot not in `used` (returned in the second field).
    fn place(
        &mut self,
        picture: &Arc<dyn PictureSource>,
        planes: usize,
        used: &mut [bool; SLOTS],
        index: u32,
        which: &str,
    ) -> Result<(DeviceFrame, Option<usize>)> {
        let memory = self.device.memory();
        if let Some(frame) = picture.device_frame().filter(|f| f.memory == memory) {
            if frame.planes.len() < planes {
                return Err(Error::invalid(format!(
                    "frame {index}: the {which} device picture has luma only; this context's extractors read chroma"
                )));
            }
            if let Some(event) = frame.ready {
                // SAFETY: a device frame's `ready` is an event of its
                // memory's device, live while the picture is (DeviceFrame).
                self.device.wait_ready(unsafe { crate::device::gpu::engine::EventRef::from_handle(event) })?;
            }
            return Ok((frame.clone(), None));
        }
        if let Some((kept, frame, slot)) = &self.kept {
            if same_picture(kept, picture) && frame.planes.len() >= planes {
                used[*slot] = true;
                return Ok((frame.clone(), Some(*slot)));
            }
        }
        let host = placed_host(picture.as_ref(), memory, index, which)?;
        let kept_slot = self.kept.as_ref().map(|k| k.2);
        let slot = (0..SLOTS)
            .filter(|&i| !used[i])
            .min_by_key(|&i| Some(i) == kept_slot)
            .ok_or_else(|| Error::Internal(format!("more than {SLOTS} pictures in one frame")))?;
        if Some(slot) == kept_slot {
            self.kept = None;
        }
        used[slot] = true;
        let planes = (0..planes)
            .map(|p| self.device.upload_plane(UploadSlot { picture: slot, plane: p }, &host.plane(p)))
            .collect::<Result<Vec<_>>>()?;
        self.uploads.fetch_add(1, Ordering::Relaxed);
        let frame = DeviceFrame {
            memory,
            format: host.format(),
            width: host.width(),
            height: host.height(),
            planes,
            ready: None,
        };
        Ok((frame, Some(slot)))
    }
}

fn same_picture(a: &Arc<dyn PictureSource>, b: &Arc<dyn PictureSource>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// The host planes of a picture a lane of `memory` must copy; a device
/// picture of another memory without host planes is refused, naming both.
fn placed_host<'p>(
    p: &'p dyn PictureSource,
    memory: DeviceMemoryId,
    index: u32,
    which: &str,
) -> Result<Picture<'p>> {
    match (p.host(), p.device_frame()) {
        (Some(h), _) => Ok(h),
        (None, Some(f)) => Err(Error::Mismatch(format!(
            "frame {index}: the {which} picture is in {}, and this context scores in {}",
            describe_memory(f.memory),
            describe_memory(memory)
        ))),
        (None, None) => Err(Error::invalid(format!("frame {index}: the {which} picture has no planes"))),
    }
}

fn describe_memory(m: DeviceMemoryId) -> String {
    match m.kind {
        DeviceKind::Cuda => format!("CUDA context {:#x}", m.context),
        DeviceKind::Hip => format!("HIP device {}", m.context),
        DeviceKind::Cpu => "host memory".into(),
    }
}

/// One extractor the context runs, with the options it runs under.
#[derive(Clone)]
struct ExtractorUse {
    descriptor: &'static ExtractorDescriptor,
    options: FeatureOptions,
}

/// What a worker scores frames with: the CPU, or its own GPU lane.
enum WorkerLane {
    Cpu,
    Device(Box<LaneState>),
}

struct Job {
    index: u32,
    reference: Arc<dyn PictureSource>,
    distorted: Arc<dyn PictureSource>,
    prev_reference: Option<Arc<dyn PictureSource>>,
    /// Kept only when an extractor needs it (`needs_prev_distorted`).
    prev_distorted: Option<Arc<dyn PictureSource>>,
    /// Kept only when an extractor needs it (`needs_two_back`).
    prev_prev_reference: Option<Arc<dyn PictureSource>>,
}

type JobResult = (u32, Result<Vec<FrameScores>>);

struct Workers {
    jobs: Option<mpsc::SyncSender<Job>>,
    results: mpsc::Receiver<JobResult>,
    handles: Vec<JoinHandle<()>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    width: usize,
    height: usize,
    format: PixelFormat,
}

/// The scoring context.
pub struct Context {
    config: ContextConfig,
    uses: Vec<ExtractorUse>,
    models: Vec<Model>,
    geometry: Option<Geometry>,
    /// Instances for the caller's thread (inline scoring and flush).
    local: Vec<Box<dyn Extractor>>,
    /// GPU lanes opened by `new`, handed to the workers (or kept for the
    /// caller's thread) at the first frame; empty on the CPU.
    lanes: Vec<GpuDevice>,
    /// The memory the lanes read in place (`None` on the CPU).
    memory: Option<DeviceMemoryId>,
    device_info: Option<crate::device::DeviceInfo>,
    /// The caller's thread's lane (0 threads).
    local_lane: WorkerLane,
    uploads: Arc<AtomicU64>,
    workers: Option<Workers>,
    in_flight: usize,
    /// Results that arrived ahead of the next frame to commit.
    pending: BTreeMap<u32, Vec<FrameScores>>,
    next_commit: u32,
    frames_in: u32,
    prev_reference: Option<Arc<dyn PictureSource>>,
    prev_distorted: Option<Arc<dyn PictureSource>>,
    prev_prev_reference: Option<Arc<dyn PictureSource>>,
    collector: FeatureCollector,
    /// Every feature pooled over the final frames, fed as they become
    /// final: pooling needs no per-frame values kept.
    pools: RunningPools,
    /// Frames whose features (look-ahead ones included) and model scores
    /// are all final.
    frames_final: u32,
    flushed: bool,
    failed: Option<String>,
    /// Each committed frame's extracted values in commit order, when
    /// asked for ([`Context::record_extracted`]): what a segment of a
    /// title hands to the merge ([`Context::push_extracted`]).
    extracted: Option<Vec<Vec<(String, f64)>>>,
}

impl Context {
    /// A context on `config.device`. A GPU lane is opened per worker thread
    /// (one for 0 threads) now, so a missing runtime, device or compiler is
    /// an error here, naming it.
    pub fn new(config: ContextConfig) -> Result<Self> {
        let device = config.device;
        if device == DeviceChoice::Cpu {
            return Self::open(config, || device.open_lane(), false);
        }
        Self::open(config, || device.open_lane(), true)
            .map_err(|e| prefix_error(e, &format!("scoring on {device}")))
    }

    /// A context on lanes the caller opens: `open_lane` is called once per
    /// worker thread (once for 0 threads). For backends vmafx does not
    /// name, such as the kernel emulator of tests/device_emu.rs
    /// ([`GpuDevice::from_backend`]); `config.device` is not used. Every
    /// lane must read the same memory.
    pub fn with_lanes(
        config: ContextConfig,
        open_lane: impl FnMut() -> Result<GpuDevice>,
    ) -> Result<Self> {
        Self::open(config, open_lane, true)
    }

    fn open(
        config: ContextConfig,
        mut open_lane: impl FnMut() -> Result<GpuDevice>,
        on_device: bool,
    ) -> Result<Self> {
        if config.subsample == 0 {
            return Err(Error::invalid("subsample must be at least 1"));
        }
        let mut lanes = Vec::new();
        if on_device {
            for _ in 0..config.threads.max(1) {
                lanes.push(open_lane()?);
            }
        }
        let memory = lanes.first().map(GpuDevice::memory);
        if let Some(m) = memory {
            if let Some(other) = lanes.iter().map(GpuDevice::memory).find(|&o| o != m) {
                return Err(Error::invalid(format!(
                    "lanes read different memories ({} and {})",
                    describe_memory(m),
                    describe_memory(other)
                )));
            }
        }
        Ok(Context {
            device_info: lanes.first().map(|l| l.info().clone()),
            lanes,
            memory,
            local_lane: WorkerLane::Cpu,
            uploads: Arc::new(AtomicU64::new(0)),
            config: ContextConfig { cpu: CpuLevel::capped(config.cpu), ..config },
            uses: Vec::new(),
            models: Vec::new(),
            geometry: None,
            local: Vec::new(),
            workers: None,
            in_flight: 0,
            pending: BTreeMap::new(),
            next_commit: 0,
            frames_in: 0,
            prev_reference: None,
            prev_distorted: None,
            prev_prev_reference: None,
            collector: FeatureCollector::new(),
            pools: RunningPools::new(config.subsample),
            frames_final: 0,
            flushed: false,
            failed: None,
            extracted: None,
        })
    }

    pub fn config(&self) -> &ContextConfig {
        &self.config
    }

    /// The memory the context's lanes read device pictures from in place
    /// (`None` for a CPU context): an importer puts frames there.
    pub fn device_memory(&self) -> Option<DeviceMemoryId> {
        self.memory
    }

    /// The lanes' device (`None` for a CPU context).
    pub fn device_info(&self) -> Option<&crate::device::DeviceInfo> {
        self.device_info.as_ref()
    }

    /// Host pictures copied to a GPU lane so far (a picture's planes count
    /// once). A device picture read in place adds nothing; a frame scored
    /// on one lane copies its reference and distorted pictures (its previous
    /// reference is still there); on several lanes the previous reference
    /// may be copied again by the lane that needs it.
    pub fn host_uploads(&self) -> u64 {
        self.uploads.load(Ordering::Relaxed)
    }

    fn check_configurable(&self) -> Result<()> {
        if self.geometry.is_some() {
            return Err(Error::invalid("features and models must be added before the first frame"));
        }
        Ok(())
    }

    /// Runs extractor `name` (libvmaf's name: "vif", "adm", "motion",
    /// "psnr") with `options`. Adding the same extractor with the same
    /// options twice runs it once.
    pub fn use_feature(&mut self, name: &str, options: FeatureOptions) -> Result<()> {
        let descriptor = crate::feature::find_extractor(name)?;
        self.use_extractor(descriptor, options)
    }

    pub fn use_extractor(
        &mut self,
        descriptor: &'static ExtractorDescriptor,
        options: FeatureOptions,
    ) -> Result<()> {
        self.check_configurable()?;
        // Options are validated by the descriptor's specs when set; here
        // only deduplicate: an option set to its default is the option
        // left out (one v1.0.16 model spells `speed_kernelscale: 1.0`, its
        // siblings leave it out).
        if !self.uses.iter().any(|u| {
            std::ptr::eq(u.descriptor, descriptor) && u.options.resolve_eq(&options, descriptor.options)
        }) {
            self.uses.push(ExtractorUse { descriptor, options });
        }
        Ok(())
    }

    /// Scores with `model`: its features are extracted, and its score is
    /// written per frame under the model's name at the end.
    pub fn use_model(&mut self, model: Model) -> Result<()> {
        self.check_configurable()?;
        if self.models.iter().any(|m| m.name() == model.name()) {
            return Err(Error::invalid(format!("two models named '{}'", model.name())));
        }
        for f in model.features() {
            self.use_extractor(f.extractor, f.options.clone())?;
        }
        self.models.push(model);
        Ok(())
    }

    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// Frames before a frame whose pictures its extraction reads (the most
    /// any extractor of this context needs: [`ExtractorDescriptor::look_behind`]).
    /// A segment `[a, b)` of a title pushes frames from
    /// [`Context::segment_push_from`]`(a)` and keeps the extracted values of
    /// `a..b` ([`Context::extracted`]).
    pub fn look_behind(&self) -> u32 {
        self.uses.iter().map(|u| u.descriptor.look_behind(&u.options)).max().unwrap_or(0)
    }

    /// The first frame to push for a segment of a title that starts at
    /// frame `first`: [`Context::look_behind`] frames earlier (not before
    /// frame 0), down to a multiple of the subsample rate, so the segment's
    /// frames are numbered as in the title modulo that rate.
    pub fn segment_push_from(&self, first: u32) -> u32 {
        let from = first.saturating_sub(self.look_behind());
        from - from % self.config.subsample.max(1)
    }

    /// Keeps every committed frame's extracted values (before look-ahead
    /// features and model scores), for [`Context::extracted`]. Call before
    /// the first frame.
    pub fn record_extracted(&mut self) -> Result<()> {
        self.check_configurable()?;
        self.extracted = Some(Vec::new());
        Ok(())
    }

    /// The extracted values of every committed frame, from frame 0, each
    /// frame's in the order they were committed (empty unless
    /// [`Context::record_extracted`] was called).
    pub fn extracted(&self) -> &[Vec<(String, f64)>] {
        self.extracted.as_deref().unwrap_or(&[])
    }

    /// Commits the next frame's extracted values as another context
    /// recorded them ([`Context::extracted`]), for a title scored in
    /// segments: fed every frame in order, this context settles the look-
    /// ahead features, scores the models, pools and aggregates exactly as a
    /// single pass over the pictures does (the same code on the same values
    /// in the same order). The pictures were `width` x `height` in
    /// `format`. Configure it as the segments' contexts were (models,
    /// features, subsample, and threads 0 or not: that orders the features);
    /// it starts no workers, and takes no pictures once its workers run.
    pub fn push_extracted(
        &mut self,
        width: usize,
        height: usize,
        format: PixelFormat,
        values: Vec<(String, f64)>,
    ) -> Result<()> {
        if self.flushed {
            return Err(Error::invalid("frame pushed after flush"));
        }
        if let Some(f) = &self.failed {
            return Err(Error::Internal(f.clone()));
        }
        if self.workers.is_some() {
            return Err(Error::invalid("extracted values pushed to a context that scores pictures"));
        }
        let g = Geometry { width, height, format };
        match self.geometry {
            None => self.start(g, false)?,
            Some(first) if first != g => {
                return Err(Error::Mismatch(format!(
                    "frame {}: a segment of {width}x{height} {format}, earlier ones were {}x{} {}",
                    self.frames_in, first.width, first.height, first.format
                )))
            }
            Some(_) => {}
        }
        let index = self.frames_in;
        self.frames_in += 1;
        self.accept(index, Ok(vec![FrameScores { values }]))
    }

    fn needs_prev_reference(&self) -> bool {
        self.uses.iter().any(|u| u.descriptor.needs_prev_reference)
    }

    fn needs_prev_distorted(&self) -> bool {
        self.uses.iter().any(|u| u.descriptor.needs_prev_distorted)
    }

    fn needs_two_back(&self) -> bool {
        self.uses.iter().any(|u| (u.descriptor.needs_two_back)(&u.options))
    }

    fn create_instances(uses: &[ExtractorUse], base: &ExtractorConfig) -> Result<Vec<Box<dyn Extractor>>> {
        uses.iter()
            .map(|u| {
                let cfg = ExtractorConfig { options: u.options.clone(), ..base.clone() };
                (u.descriptor.create)(&cfg)
                    .map_err(|e| prefix_error(e, &format!("feature extractor {}", u.descriptor.name)))
            })
            .collect()
    }

    /// Creates the extractor instances for `geometry`; with `spawn`, the
    /// worker pool too (none when the frames come already extracted).
    fn start(&mut self, geometry: Geometry, spawn: bool) -> Result<()> {
        if self.uses.is_empty() {
            return Err(Error::invalid("no model and no feature to compute"));
        }
        if self.config.threads > 0 {
            // libvmaf with a thread pool runs its TEMPORAL extractors on the
            // calling thread before the pool's job for the frame, so their
            // features come first in its collector and logs; ours follow
            // the order of `uses`.
            self.uses.sort_by_key(|u| !u.descriptor.libvmaf_temporal());
        }
        let base = ExtractorConfig {
            width: geometry.width,
            height: geometry.height,
            format: geometry.format,
            options: FeatureOptions::new(),
            cpu: self.config.cpu,
            device: self.lanes.first().map_or(DeviceKind::Cpu, |l| l.info().kind),
        };
        self.local = Self::create_instances(&self.uses, &base)?;
        if self.memory.is_some() {
            if let Some((u, _)) =
                self.uses.iter().zip(&self.local).find(|(_, inst)| !inst.has_device_twin())
            {
                return Err(Error::NotSupported(format!(
                    "feature extractor {} has no device twin in this build: score it in a CPU context",
                    u.descriptor.name
                )));
            }
        }
        // Chroma goes to the device only when some extractor reads it.
        let chroma = |temporal_only: bool| {
            let reads = self
                .uses
                .iter()
                .any(|u| u.descriptor.reads_chroma && (u.descriptor.needs_prev_reference || !temporal_only));
            if reads {
                geometry.format.chroma.plane_count()
            } else {
                1
            }
        };
        let (planes, prev_planes) = (chroma(false), chroma(true));
        let mut lanes = std::mem::take(&mut self.lanes).into_iter().map(|device| {
            WorkerLane::Device(Box::new(LaneState {
                device,
                planes,
                prev_planes,
                kept: None,
                uploads: Arc::clone(&self.uploads),
            }))
        });
        if self.config.threads == 0 {
            self.local_lane = lanes.next().unwrap_or(WorkerLane::Cpu);
        }
        if self.config.threads > 0 && spawn {
            let (job_tx, job_rx) = mpsc::sync_channel::<Job>(self.config.threads);
            let job_rx = Arc::new(Mutex::new(job_rx));
            let (res_tx, res_rx) = mpsc::channel::<JobResult>();
            let mut handles = Vec::new();
            for t in 0..self.config.threads {
                let mut instances = Self::create_instances(&self.uses, &base)?;
                let mut lane = lanes.next().unwrap_or(WorkerLane::Cpu);
                let uses = self.uses.clone();
                let subsample = self.config.subsample;
                let job_rx = Arc::clone(&job_rx);
                let res_tx = res_tx.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("vmafx-worker-{t}"))
                    .spawn(move || loop {
                        let job = match job_rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        let index = job.index;
                        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            run_job(&uses, &mut instances, &mut lane, subsample, &job)
                        }))
                        .unwrap_or_else(|p| Err(Error::Internal(panic_message(p))));
                        drop(job);
                        if res_tx.send((index, result)).is_err() {
                            return;
                        }
                    })
                    .map_err(|e| Error::Internal(format!("spawning a worker: {e}")))?;
                handles.push(handle);
            }
            self.workers = Some(Workers { jobs: Some(job_tx), results: res_rx, handles });
        }
        self.geometry = Some(geometry);
        Ok(())
    }

    /// Queues one frame pair. Blocks while `2 * threads` frames are pushed
    /// but not committed (in flight, or done ahead of an earlier one). Errors from earlier frames surface here or at `flush`.
    pub fn push(
        &mut self,
        reference: Arc<dyn PictureSource>,
        distorted: Arc<dyn PictureSource>,
    ) -> Result<()> {
        if self.flushed {
            return Err(Error::invalid("frame pushed after flush"));
        }
        if let Some(f) = &self.failed {
            return Err(Error::Internal(f.clone()));
        }
        let index = self.frames_in;
        {
            let g = geometry_of(reference.as_ref(), self.memory, index, "reference")?;
            let gd = geometry_of(distorted.as_ref(), self.memory, index, "distorted")?;
            if g != gd {
                return Err(Error::Mismatch(format!(
                    "frame {index}: reference is {}x{} {}, distorted is {}x{} {}",
                    g.width, g.height, g.format, gd.width, gd.height, gd.format
                )));
            }
            match self.geometry {
                None => self.start(g, true)?,
                Some(first) if first != g => {
                    return Err(Error::Mismatch(format!(
                        "frame {index} is {}x{} {}, earlier frames were {}x{} {}",
                        g.width, g.height, g.format, first.width, first.height, first.format
                    )))
                }
                Some(_) => {}
            }
        }
        let prev_reference = self.prev_reference.take();
        if self.needs_prev_reference() {
            self.prev_reference = Some(Arc::clone(&reference));
        }
        let prev_distorted = self.prev_distorted.take();
        if self.needs_prev_distorted() {
            self.prev_distorted = Some(Arc::clone(&distorted));
        }
        let prev_prev_reference = self.prev_prev_reference.take();
        if self.needs_two_back() {
            self.prev_prev_reference = prev_reference.clone();
        }
        let job = Job { index, reference, distorted, prev_reference, prev_distorted, prev_prev_reference };
        self.frames_in += 1;

        if self.workers.is_none() {
            let scores =
                run_job(&self.uses, &mut self.local, &mut self.local_lane, self.config.subsample, &job);
            return self.accept(index, scores);
        }
        // Bound the frames pushed but not yet committed (in flight, or
        // received ahead of a slower earlier frame), not only those in
        // flight: while one worker stalls on frame i, the others would
        // otherwise go on finishing i+1, i+2, ... and every one of them (and
        // the caller's frames held until they are final) would wait here;
        // FFmpeg's frame pools grew to that peak and kept it (soak RSS).
        while index - self.next_commit >= 2 * self.config.threads as u32 {
            self.receive_one()?;
        }
        let workers = self.workers.as_ref().unwrap();
        workers
            .jobs
            .as_ref()
            .unwrap()
            .send(job)
            .map_err(|_| Error::Internal("worker pool stopped".into()))?;
        self.in_flight += 1;
        Ok(())
    }

    fn receive_one(&mut self) -> Result<()> {
        let workers = self.workers.as_ref().unwrap();
        let (index, scores) = workers
            .results
            .recv()
            .map_err(|_| Error::Internal("worker pool stopped".into()))?;
        self.in_flight -= 1;
        self.accept(index, scores)
    }

    fn accept(&mut self, index: u32, scores: Result<Vec<FrameScores>>) -> Result<()> {
        let scores = match scores {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("frame {index}: {e}");
                self.failed = Some(msg.clone());
                return Err(prefix_error(e, &format!("frame {index}")));
            }
        };
        self.pending.insert(index, scores);
        let before = self.next_commit;
        while let Some(scores) = self.pending.remove(&self.next_commit) {
            let mut record = self.extracted.as_ref().map(|_| Vec::new());
            for fs in scores {
                for (name, value) in fs.values {
                    self.collector.append(&name, self.next_commit, value)?;
                    if let Some(r) = &mut record {
                        r.push((name, value));
                    }
                }
            }
            if let (Some(all), Some(r)) = (&mut self.extracted, record) {
                all.push(r);
            }
            self.next_commit += 1;
        }
        if self.next_commit != before {
            self.settle(false)?;
        }
        Ok(())
    }

    /// Lets look-ahead extractors finish the frames they can, then scores
    /// the models on every frame that became final.
    fn settle(&mut self, end_of_stream: bool) -> Result<()> {
        let mut settled = self.next_commit;
        for inst in &mut self.local {
            settled = settled.min(inst.settle(&mut self.collector, self.next_commit, end_of_stream)?);
        }
        for index in self.frames_final..settled {
            self.score_models(index)?;
            let collector = &self.collector;
            self.pools.feed(collector.names().iter().map(String::as_str), |name| collector.get(name, index));
        }
        self.frames_final = self.frames_final.max(settled);
        Ok(())
    }

    /// The model scores of frame `index` (once its features are final).
    fn score_models(&mut self, index: u32) -> Result<()> {
        if self.config.subsample > 1 && index % self.config.subsample != 0 {
            return Ok(());
        }
        // Every model's score first, then the collections' members and
        // statistics: libvmaf's tool pools the models before the
        // collections, which fixes the order of names in its logs.
        let mut inputs = Vec::with_capacity(self.models.len());
        for model in &self.models {
            let mut values = Vec::with_capacity(model.features().len());
            for f in model.features() {
                values.push(self.collector.get(&f.feature, index).ok_or_else(|| {
                    Error::Internal(format!("model {}: feature {} missing at frame {index}", model.name(), f.feature))
                })?);
            }
            let score = model.score(&values)?;
            self.collector.append(model.name(), index, score)?;
            inputs.push(values);
        }
        let mut extra = Vec::new();
        for (model, values) in self.models.iter().zip(&inputs) {
            extra.clear();
            model.bootstrap_scores(values, &mut extra)?;
            for (name, &value) in model.bootstrap_names().zip(&extra) {
                self.collector.append(name, index, value)?;
            }
        }
        Ok(())
    }

    /// Frames (from 0) whose every feature and model score is final: what
    /// a filter may attach to its output frames now.
    pub fn frames_final(&self) -> u32 {
        self.frames_final
    }

    /// Frames pushed so far.
    pub fn frames_in(&self) -> u32 {
        self.frames_in
    }

    /// Frames whose per-frame features are all in the collector.
    pub fn frames_committed(&self) -> u32 {
        self.next_commit
    }

    /// Ends the stream: waits for every frame, settles the look-ahead
    /// features of the last frames and their model scores, then runs the
    /// extractors' flush.
    pub fn flush(&mut self) -> Result<()> {
        if self.flushed {
            return Ok(());
        }
        if let Some(f) = &self.failed {
            return Err(Error::Internal(f.clone()));
        }
        while self.in_flight > 0 {
            self.receive_one()?;
        }
        self.stop_workers();
        // The stream is over: release the picture the lane kept.
        if let WorkerLane::Device(lane) = &mut self.local_lane {
            lane.kept = None;
        }
        self.flushed = true;
        if self.frames_in == 0 {
            return Err(Error::invalid("no frames were scored"));
        }
        self.settle(true)?;
        for inst in &mut self.local {
            inst.flush(&mut self.collector)?;
        }
        Ok(())
    }

    /// Ends the stream after a fault (an input error, a failed frame, a
    /// stop request): waits for the frames in flight, keeps the committed
    /// ones up to the first frame that failed, and finishes them as if the
    /// stream had ended there: the last kept frame's look-ahead values
    /// (motion2 and what depends on it) are those of a stream that long,
    /// exactly what libvmaf computes on those frames alone. Returns the
    /// frames kept, every value of which is final (0: nothing to log).
    pub fn flush_partial(&mut self) -> Result<u32> {
        if self.flushed {
            return Ok(self.frames_final);
        }
        // Results arrive in any order; `accept` commits in frame order, so
        // nothing past the first failed frame is ever committed.
        while self.in_flight > 0 {
            let Some(workers) = self.workers.as_ref() else { break };
            let Ok((index, scores)) = workers.results.recv() else { break };
            self.in_flight -= 1;
            if let Err(e) = &scores {
                self.failed.get_or_insert_with(|| format!("frame {index}: {e}"));
            }
            let _ = self.accept(index, scores);
        }
        self.in_flight = 0;
        self.stop_workers();
        if let WorkerLane::Device(lane) = &mut self.local_lane {
            lane.kept = None;
        }
        self.flushed = true;
        self.pending.clear();
        if self.next_commit == 0 {
            return Ok(0);
        }
        self.settle(true)?;
        for inst in &mut self.local {
            inst.flush(&mut self.collector)?;
        }
        // Pooling and logs count these frames only.
        self.frames_in = self.next_commit;
        Ok(self.next_commit)
    }

    fn stop_workers(&mut self) {
        if let Some(mut w) = self.workers.take() {
            w.jobs.take();
            for h in w.handles.drain(..) {
                let _ = h.join();
            }
        }
    }

    /// Every feature and model score written so far.
    pub fn collector(&self) -> &FeatureCollector {
        &self.collector
    }

    /// Value of feature (or model) `name` at frame `index`.
    pub fn score_at(&self, name: &str, index: u32) -> Option<f64> {
        self.collector.get(name, index)
    }

    /// Pools `name` over frames `first..=last` with `method`, skipping
    /// frames the subsample rate did not score (libvmaf's
    /// `vmaf_feature_score_pooled`).
    ///
    /// Over every final frame (`0..=frames_final() - 1`) this reads the
    /// running pools, so it works after frames were retired; other ranges
    /// need their frames' values kept.
    pub fn pooled(&self, name: &str, method: PoolMethod, first: u32, last: u32) -> Result<f64> {
        if first == 0 && last.checked_add(1) == Some(self.pools.frames()) {
            return self.pools.pooled(name, method).map_err(|e| prefix_error(e, name));
        }
        if first < self.collector.first_kept() {
            return Err(Error::invalid(format!(
                "{name}: pooling frames {first}..={last}, but frames before {} were retired",
                self.collector.first_kept()
            )));
        }
        pool_frames(|i| self.collector.get(name, i), method, first, last, self.config.subsample)
            .map_err(|e| prefix_error(e, name))
    }

    /// The running pools over every final frame (what logs print as
    /// pooled metrics).
    pub fn running_pools(&self) -> &RunningPools {
        &self.pools
    }

    /// Drops the per-frame values of frames before `frame` (at most
    /// `frames_final()`): a caller that has logged them (and attached them
    /// to its frames) keeps memory flat over a long stream. Pooling over
    /// all frames still works ([`Context::pooled`]).
    pub fn retire_before(&mut self, frame: u32) {
        self.collector.retire_before(frame.min(self.frames_final));
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.stop_workers();
    }
}

/// The size and format of a picture, as the context will read it: its host
/// planes on the CPU (`memory` None); on a GPU its device planes when they
/// are in the lanes' memory, else its host planes (copied).
fn geometry_of(p: &dyn PictureSource, memory: Option<DeviceMemoryId>, index: u32, which: &str) -> Result<Geometry> {
    let Some(memory) = memory else {
        return match (p.host(), p.device_frame()) {
            (Some(h), _) => Ok(Geometry { width: h.width(), height: h.height(), format: h.format() }),
            (None, Some(DeviceFrame { memory, .. })) => Err(Error::NotSupported(format!(
                "frame {index}: the {which} picture is in {:?} device memory, and this context scores on the CPU",
                memory.kind
            ))),
            (None, None) => Err(Error::invalid(format!("frame {index}: the {which} picture has no planes"))),
        };
    };
    if let Some(f) = p.device_frame().filter(|f| f.memory == memory) {
        check_device_frame(f, index, which)?;
        return Ok(Geometry { width: f.width, height: f.height, format: f.format });
    }
    let h = placed_host(p, memory, index, which)?;
    Ok(Geometry { width: h.width(), height: h.height(), format: h.format() })
}

/// A device picture's planes cover its format's (the kernels read them
/// without bounds checks): as many as the format has (luma alone is
/// accepted; a context needing chroma refuses it when it reads it), each at
/// least its plane's size, a pitch holding a row.
fn check_device_frame(f: &DeviceFrame, index: u32, which: &str) -> Result<()> {
    let bps = f.format.bytes_per_sample();
    let count = f.format.chroma.plane_count();
    if f.planes.is_empty() || f.planes.len() > count {
        return Err(Error::invalid(format!(
            "frame {index}: the {which} device picture has {} planes; {} has {count}",
            f.planes.len(),
            f.format
        )));
    }
    for (i, plane) in f.planes.iter().enumerate() {
        let (w, h) = f.format.plane_size(i, f.width, f.height);
        if plane.width < w || plane.height < h || plane.bytes_per_sample != bps || plane.pitch < plane.width * bps
        {
            return Err(Error::invalid(format!(
                "frame {index}: the {which} device picture's plane {i} is {}x{} at {} bytes a sample, pitch {}; \
                 {} at {}x{} needs {w}x{h} at {bps}",
                plane.width, plane.height, plane.bytes_per_sample, plane.pitch, f.format, f.width, f.height
            )));
        }
        // The kernels read samples above 8 bits as u16.
        if bps == 2 && (plane.ptr % 2 != 0 || plane.pitch % 2 != 0) {
            return Err(Error::invalid(format!(
                "frame {index}: the {which} device picture's plane {i} is not 2-byte aligned (pointer {:#x}, pitch {})",
                plane.ptr, plane.pitch
            )));
        }
    }
    Ok(())
}

/// Whether extractor `u` runs on frame `index`: temporal extractors see
/// every frame; the rest only scored ones.
fn runs_on(u: &ExtractorUse, subsample: u32, index: u32) -> bool {
    u.descriptor.needs_prev_reference
        || u.descriptor.needs_prev_distorted
        || u.descriptor.every_frame
        || subsample <= 1 || index % subsample == 0
}

fn run_job(
    uses: &[ExtractorUse],
    instances: &mut [Box<dyn Extractor>],
    lane: &mut WorkerLane,
    subsample: u32,
    job: &Job,
) -> Result<Vec<FrameScores>> {
    let lane = match lane {
        WorkerLane::Cpu => return run_cpu_job(uses, instances, subsample, job),
        WorkerLane::Device(lane) => lane,
    };
    let mut out: Vec<FrameScores> = uses.iter().map(|_| FrameScores::default()).collect();
    let runs: Vec<bool> = uses.iter().map(|u| runs_on(u, subsample, job.index)).collect();
    if !runs.contains(&true) {
        return Ok(out);
    }
    // The producer's writes first (a caller's stream: one event wait), then
    // each picture goes on the lane once, whatever reads it.
    lane.device.follow_producer()?;
    let mut used = [false; SLOTS];
    let needs_prev = uses.iter().zip(&runs).any(|(u, &r)| r && u.descriptor.needs_prev_reference);
    let prev = match (&job.prev_reference, needs_prev) {
        (Some(p), true) => Some(lane.place(p, lane.prev_planes, &mut used, job.index, "previous reference")?.0),
        _ => None,
    };
    let needs_prev_distorted = uses.iter().zip(&runs).any(|(u, &r)| r && u.descriptor.needs_prev_distorted);
    let prev_distorted = match (&job.prev_distorted, &job.prev_reference, &prev, needs_prev_distorted) {
        (Some(p), Some(pr), Some(placed), true) if same_picture(p, pr) => Some(placed.clone()),
        (Some(p), _, _, true) => Some(lane.place(p, lane.prev_planes, &mut used, job.index, "previous distorted")?.0),
        _ => None,
    };
    let needs_two_back = uses.iter().zip(&runs).any(|(u, &r)| r && (u.descriptor.needs_two_back)(&u.options));
    let prev_prev_reference = match (&job.prev_prev_reference, needs_two_back) {
        (Some(p), true) => Some(lane.place(p, 1, &mut used, job.index, "reference two frames back")?.0),
        _ => None,
    };
    let (reference, reference_slot) = lane.place(&job.reference, lane.planes, &mut used, job.index, "reference")?;
    let distorted = if same_picture(&job.reference, &job.distorted) {
        reference.clone()
    } else {
        lane.place(&job.distorted, lane.planes, &mut used, job.index, "distorted")?.0
    };
    let input = DeviceFrameInput {
        index: job.index,
        reference: &reference,
        distorted: &distorted,
        prev_reference: prev.as_ref(),
        prev_distorted: prev_distorted.as_ref(),
        prev_prev_reference: prev_prev_reference.as_ref(),
    };
    for ((u, inst), (scores, &runs)) in uses.iter().zip(instances.iter_mut()).zip(out.iter_mut().zip(&runs)) {
        if runs {
            inst.extract_device(&input, lane.device.twins(), scores)
                .map_err(|e| prefix_error(e, &format!("feature extractor {} on the device", u.descriptor.name)))?;
        }
    }
    lane.kept = reference_slot.map(|slot| (Arc::clone(&job.reference), reference, slot));
    Ok(out)
}

fn run_cpu_job(
    uses: &[ExtractorUse],
    instances: &mut [Box<dyn Extractor>],
    subsample: u32,
    job: &Job,
) -> Result<Vec<FrameScores>> {
    fn host(p: &Arc<dyn PictureSource>, index: u32) -> Result<Picture<'_>> {
        p.host().ok_or_else(|| Error::Internal(format!("frame {index}: host planes vanished")))
    }
    let reference = host(&job.reference, job.index)?;
    let distorted = host(&job.distorted, job.index)?;
    let prev = job.prev_reference.as_ref().map(|p| host(p, job.index)).transpose()?;
    let prev_distorted = job.prev_distorted.as_ref().map(|p| host(p, job.index)).transpose()?;
    let prev_prev_reference = job.prev_prev_reference.as_ref().map(|p| host(p, job.index)).transpose()?;
    let input = FrameInput {
        index: job.index,
        reference: &reference,
        distorted: &distorted,
        prev_reference: prev.as_ref(),
        prev_distorted: prev_distorted.as_ref(),
        prev_prev_reference: prev_prev_reference.as_ref(),
    };
    let mut out = Vec::with_capacity(uses.len());
    for (u, inst) in uses.iter().zip(instances.iter_mut()) {
        let mut scores = FrameScores::default();
        if runs_on(u, subsample, job.index) {
            inst.extract(&input, &mut scores)
                .map_err(|e| prefix_error(e, &format!("feature extractor {}", u.descriptor.name)))?;
        }
        out.push(scores);
    }
    Ok(out)
}

fn prefix_error(e: Error, prefix: &str) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{prefix}: {m}")),
        Error::NotSupported(m) => Error::NotSupported(format!("{prefix}: {m}")),
        Error::Internal(m) => Error::Internal(format!("{prefix}: {m}")),
        Error::Mismatch(m) => Error::Mismatch(format!("{prefix}: {m}")),
        Error::Device(m) => Error::Device(format!("{prefix}: {m}")),
        other => other,
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic in extractor: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic in extractor: {s}")
    } else {
        "panic in extractor".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature::{ExtractorConfig, FrameInput};
    use crate::picture::Chroma;

    const FAILS_AT: u32 = 5;

    /// Writes its frame index, and fails on frame `FAILS_AT` (a device
    /// error, a refused picture: any fault of one frame).
    struct FailsOnce;

    impl Extractor for FailsOnce {
        fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
            if frame.index == FAILS_AT {
                return Err(Error::Device(format!("planted fault at frame {}", frame.index)));
            }
            out.push("test_index", frame.index as f64);
            Ok(())
        }
    }

    static FAILS_ONCE: ExtractorDescriptor = ExtractorDescriptor {
        name: "fails_once",
        provided_features: &["test_index"],
        options: &[],
        needs_prev_reference: false,
        needs_prev_distorted: false,
        needs_two_back: crate::feature::never_two_back,
        every_frame: false,
        reads_chroma: false,
        create: |_: &ExtractorConfig| Ok(Box::new(FailsOnce)),
    };

    /// Frames the other workers finished while frame `STALLS_AT` was held.
    static FINISHED_PAST_STALL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    const STALLS_AT: u32 = 1;

    /// Holds frame `STALLS_AT` until the other workers finished 8 later
    /// frames (or a second passed): a worker descheduled on a loaded machine.
    struct StallsOnce;

    impl Extractor for StallsOnce {
        fn extract(&mut self, frame: &FrameInput<'_>, out: &mut FrameScores) -> Result<()> {
            if frame.index == STALLS_AT {
                let start = std::time::Instant::now();
                while FINISHED_PAST_STALL.load(Ordering::SeqCst) < 8
                    && start.elapsed() < std::time::Duration::from_secs(1)
                {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            } else if frame.index > STALLS_AT {
                FINISHED_PAST_STALL.fetch_add(1, Ordering::SeqCst);
            }
            out.push("test_index", frame.index as f64);
            Ok(())
        }
    }

    static STALLS_ONCE: ExtractorDescriptor = ExtractorDescriptor {
        name: "stalls_once",
        provided_features: &["test_index"],
        options: &[],
        needs_prev_reference: false,
        needs_prev_distorted: false,
        needs_two_back: crate::feature::never_two_back,
        every_frame: false,
        reads_chroma: false,
        create: |_: &ExtractorConfig| Ok(Box::new(StallsOnce)),
    };

    /// One slow frame must not let the frames after it pile up: the
    /// frames pushed but not committed stay within `2 * threads` (the
    /// caller holds each of them until it is final).
    #[test]
    fn a_stalled_frame_holds_back_at_most_two_frames_per_thread() {
        let threads = 2;
        let mut ctx = Context::new(ContextConfig { threads, ..Default::default() }).unwrap();
        ctx.use_extractor(&STALLS_ONCE, FeatureOptions::new()).unwrap();
        let mut most_uncommitted = 0;
        for t in 0..40 {
            ctx.push(picture(t), picture(t + 100)).unwrap();
            most_uncommitted = most_uncommitted.max(ctx.frames_in() - ctx.frames_committed());
        }
        ctx.flush().unwrap();
        assert!(
            most_uncommitted <= 2 * threads as u32,
            "{most_uncommitted} frames pushed but not committed at once, with {threads} threads"
        );
        for i in 0..40 {
            assert_eq!(ctx.score_at("test_index", i), Some(i as f64));
        }
    }

    fn picture(t: usize) -> Arc<dyn PictureSource> {
        let mut p = OwnedPicture::new(PixelFormat::new(Chroma::Yuv420, 8).unwrap(), 32, 16).unwrap();
        for (i, v) in p.plane_bytes_mut(0).iter_mut().enumerate() {
            *v = ((i * 7 + t * t * 13) % 251) as u8;
        }
        Arc::new(p)
    }

    /// Frames after a failed one are dropped; the ones before it are
    /// finished as a stream that ends there: motion2 of the last kept frame
    /// is its own SAD, as libvmaf computes on those frames alone.
    #[test]
    fn flush_partial_keeps_the_frames_before_a_failed_one() {
        for threads in [0, 1, 3] {
            let mut ctx = Context::new(ContextConfig { threads, ..Default::default() }).unwrap();
            ctx.use_extractor(&FAILS_ONCE, FeatureOptions::new()).unwrap();
            ctx.use_feature("motion", FeatureOptions::new()).unwrap();
            for t in 0..10 {
                if ctx.push(picture(t), picture(t + 100)).is_err() {
                    break;
                }
            }
            assert!(ctx.flush().is_err(), "threads {threads}: the failed frame went unnoticed");
            assert_eq!(ctx.flush_partial().unwrap(), FAILS_AT, "threads {threads}");
            let c = ctx.collector();
            assert_eq!(c.frame_count(), FAILS_AT, "threads {threads}: frames past the fault were kept");
            for i in 0..FAILS_AT {
                assert_eq!(c.get("test_index", i), Some(i as f64));
            }
            let sad = |i| c.get("VMAF_integer_feature_motion_sad_score", i).unwrap();
            let motion2 = |i| c.get("VMAF_integer_feature_motion2_score", i).unwrap();
            let last = FAILS_AT - 1;
            assert_eq!(motion2(last).to_bits(), sad(last).to_bits());
            assert_eq!(motion2(last - 1).to_bits(), sad(last - 1).min(sad(last)).to_bits());
            // Pooling covers the kept frames only.
            assert_eq!(ctx.pooled("test_index", PoolMethod::Max, 0, last).unwrap(), last as f64);
        }
    }
}
