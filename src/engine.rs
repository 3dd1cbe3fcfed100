//! The scoring context: which extractors run, frames in flight on a worker
//! pool, results in frame order, look-back pictures for temporal features,
//! and model scores once the stream ends.
//!
//! Like libvmaf's `VmafContext` with `n_threads`: with 0 threads every frame
//! is scored on the caller's thread; with N, frames go to N workers (each
//! with its own extractor instances) and at most `2 * N` are in flight.
//! Results are committed to the collector in frame order, so the log's
//! feature order never depends on scheduling.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::feature::{
    ExtractorConfig, ExtractorDescriptor, Extractor, FeatureOptions, FrameInput, FrameScores,
};
use crate::device::{DeviceFrame, DeviceKind};
use crate::model::Model;
use crate::picture::{OwnedPicture, Picture, PixelFormat};
use crate::score::pool::{pool_frames, PoolMethod};
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
    /// The caller's CUDA context and stream (`CUcontext`, `CUstream` as
    /// integers; FFmpeg's `AVCUDADeviceContext`); work is queued after what
    /// the caller queued there. Both must outlive the context.
    CudaStream { context: u64, stream: u64 },
}

/// One extractor the context runs, with the options it runs under.
#[derive(Clone)]
struct ExtractorUse {
    descriptor: &'static ExtractorDescriptor,
    options: FeatureOptions,
}

struct Job {
    index: u32,
    reference: Arc<dyn PictureSource>,
    distorted: Arc<dyn PictureSource>,
    prev_reference: Option<Arc<dyn PictureSource>>,
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
    workers: Option<Workers>,
    in_flight: usize,
    /// Results that arrived ahead of the next frame to commit.
    pending: BTreeMap<u32, Vec<FrameScores>>,
    next_commit: u32,
    frames_in: u32,
    prev_reference: Option<Arc<dyn PictureSource>>,
    collector: FeatureCollector,
    /// Frames whose features (look-ahead ones included) and model scores
    /// are all final.
    frames_final: u32,
    flushed: bool,
    failed: Option<String>,
}

impl Context {
    pub fn new(config: ContextConfig) -> Result<Self> {
        if config.subsample == 0 {
            return Err(Error::invalid("subsample must be at least 1"));
        }
        if config.device != DeviceChoice::Cpu {
            return Err(Error::NotSupported(format!("scoring on {:?}: not in this build yet", config.device)));
        }
        Ok(Context {
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
            collector: FeatureCollector::new(),
            frames_final: 0,
            flushed: false,
            failed: None,
        })
    }

    pub fn config(&self) -> &ContextConfig {
        &self.config
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
        // only deduplicate.
        if !self.uses.iter().any(|u| std::ptr::eq(u.descriptor, descriptor) && u.options == options)
        {
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

    fn needs_prev_reference(&self) -> bool {
        self.uses.iter().any(|u| u.descriptor.needs_prev_reference)
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

    fn start(&mut self, geometry: Geometry) -> Result<()> {
        if self.uses.is_empty() {
            return Err(Error::invalid("no model and no feature to compute"));
        }
        let base = ExtractorConfig {
            width: geometry.width,
            height: geometry.height,
            format: geometry.format,
            options: FeatureOptions::new(),
            cpu: self.config.cpu,
        };
        self.local = Self::create_instances(&self.uses, &base)?;
        if self.config.threads > 0 {
            let (job_tx, job_rx) = mpsc::sync_channel::<Job>(self.config.threads);
            let job_rx = Arc::new(Mutex::new(job_rx));
            let (res_tx, res_rx) = mpsc::channel::<JobResult>();
            let mut handles = Vec::new();
            for t in 0..self.config.threads {
                let mut instances = Self::create_instances(&self.uses, &base)?;
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
                            run_job(&uses, &mut instances, subsample, &job)
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

    /// Queues one frame pair. Blocks while `2 * threads` frames are in
    /// flight. Errors from earlier frames surface here or at `flush`.
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
            let g = host_geometry(reference.as_ref(), index, "reference")?;
            let gd = host_geometry(distorted.as_ref(), index, "distorted")?;
            if g != gd {
                return Err(Error::Mismatch(format!(
                    "frame {index}: reference is {}x{} {}, distorted is {}x{} {}",
                    g.width, g.height, g.format, gd.width, gd.height, gd.format
                )));
            }
            match self.geometry {
                None => self.start(g)?,
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
        let job = Job { index, reference, distorted, prev_reference };
        self.frames_in += 1;

        if self.workers.is_none() {
            let scores = run_job(&self.uses, &mut self.local, self.config.subsample, &job);
            return self.accept(index, scores);
        }
        while self.in_flight >= 2 * self.config.threads {
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
            for fs in scores {
                for (name, value) in fs.values {
                    self.collector.append(&name, self.next_commit, value)?;
                }
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
            if self.config.subsample > 1 && index % self.config.subsample != 0 {
                continue;
            }
            for model in &self.models {
                let mut values = Vec::with_capacity(model.features().len());
                for f in model.features() {
                    values.push(self.collector.get(&f.feature, index).ok_or_else(|| {
                        Error::Internal(format!(
                            "model {}: feature {} missing at frame {index}",
                            model.name(),
                            f.feature
                        ))
                    })?);
                }
                let score = model.score(&values)?;
                self.collector.append(model.name(), index, score)?;
            }
        }
        self.frames_final = self.frames_final.max(settled);
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
    pub fn pooled(&self, name: &str, method: PoolMethod, first: u32, last: u32) -> Result<f64> {
        pool_frames(|i| self.collector.get(name, i), method, first, last, self.config.subsample)
            .map_err(|e| prefix_error(e, name))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.stop_workers();
    }
}

/// The size and format of a picture the CPU extractors can read.
fn host_geometry(p: &dyn PictureSource, index: u32, which: &str) -> Result<Geometry> {
    match (p.host(), p.device_frame()) {
        (Some(h), _) => Ok(Geometry { width: h.width(), height: h.height(), format: h.format() }),
        (None, Some(DeviceFrame { memory, .. })) => Err(Error::NotSupported(format!(
            "frame {index}: the {which} picture is in {:?} device memory, and this context scores on the CPU",
            memory.kind
        ))),
        (None, None) => Err(Error::invalid(format!("frame {index}: the {which} picture has no planes"))),
    }
}

fn run_job(
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
    let input = FrameInput {
        index: job.index,
        reference: &reference,
        distorted: &distorted,
        prev_reference: prev.as_ref(),
    };
    let mut out = Vec::with_capacity(uses.len());
    for (u, inst) in uses.iter().zip(instances.iter_mut()) {
        // Temporal extractors see every frame; the rest only scored ones.
        let skip = !(u.descriptor.needs_prev_reference || u.descriptor.every_frame)
            && subsample > 1
            && job.index % subsample != 0;
        let mut scores = FrameScores::default();
        if !skip {
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
