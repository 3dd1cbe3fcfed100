//! The public scoring context: its settings, the extractors and models it
//! runs, the frames pushed in and their results committed in frame order,
//! look-back pictures for temporal features, look-ahead settling, model
//! scores, pooling, and the end of the stream (whole or cut short).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::choice::DeviceChoice;
use super::picture_checks::{geometry_of, PictureGeometry};
use super::placement::{describe_memory, LaneState, WorkerDevice};
use super::prefix_error;
use super::workers::{create_instances, run_job, ExtractorUse, Job, Workers};
use crate::device::gpu::GpuDevice;
use crate::device::{DeviceKind, DeviceMemoryId};
use crate::feature::{Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameScores};
use crate::model::Model;
use crate::picture::{HostCopies, HostCopy, PictureSource, PixelFormat};
use crate::score::pool::{pool_frames, PoolMethod, RunningPools};
use crate::score::FeatureCollector;
use crate::simd::CpuLevel;
use crate::{Error, Result};

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

/// The scoring context.
pub struct Context {
    config: ContextConfig,
    uses: Vec<ExtractorUse>,
    models: Vec<Model>,
    geometry: Option<PictureGeometry>,
    /// Instances for the caller's thread (inline scoring and flush).
    local: Vec<Box<dyn Extractor>>,
    /// GPU lanes opened by `new`, handed to the workers (or kept for the
    /// caller's thread) at the first frame; empty on the CPU.
    lanes: Vec<GpuDevice>,
    /// The memory the lanes read in place (`None` on the CPU).
    memory: Option<DeviceMemoryId>,
    device_info: Option<crate::device::DeviceInfo>,
    /// The caller's thread's lane (0 threads).
    local_lane: WorkerDevice,
    /// Picture data copied through host memory (the lanes' uploads).
    host_copies: HostCopies,
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
    /// name, such as the kernel emulator of tests/device/emu.rs
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
            local_lane: WorkerDevice::Cpu,
            host_copies: HostCopies::new(),
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
        self.host_copies.pictures(HostCopy::ToDevice)
    }

    /// The context's host-copy counter: its lanes' uploads, and whatever
    /// a caller copies for it and counts there (the filter's host frames
    /// and CPU dma-buf imports).
    pub fn host_copies(&self) -> &HostCopies {
        &self.host_copies
    }

    /// Counts into `copies` from now on (a caller's counter that outlives
    /// this context: the filter's, across a change of device). Before the
    /// first frame only, when the lanes take it.
    pub fn count_host_copies_in(&mut self, copies: HostCopies) -> Result<()> {
        self.check_configurable()?;
        self.host_copies = copies;
        Ok(())
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
        let g = PictureGeometry { width, height, format };
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

    /// Creates the extractor instances for `geometry`; with `spawn`, the
    /// worker pool too (none when the frames come already extracted).
    fn start(&mut self, geometry: PictureGeometry, spawn: bool) -> Result<()> {
        if self.uses.is_empty() {
            return Err(Error::invalid("no model and no feature to compute"));
        }
        self.order_uses_as_libvmaf();
        let base = ExtractorConfig {
            width: geometry.width,
            height: geometry.height,
            format: geometry.format,
            options: FeatureOptions::new(),
            cpu: self.config.cpu,
            device: self.lanes.first().map_or(DeviceKind::Cpu, |l| l.info().kind),
        };
        self.local = create_instances(&self.uses, &base)?;
        self.check_device_twins()?;
        let mut lanes = self.hand_out_lanes(geometry.format);
        if self.config.threads == 0 {
            self.local_lane = lanes.next().unwrap_or(WorkerDevice::Cpu);
        }
        if self.config.threads > 0 && spawn {
            self.workers =
                Some(Workers::spawn(self.config.threads, &self.uses, &base, self.config.subsample, lanes)?);
        }
        self.geometry = Some(geometry);
        Ok(())
    }

    /// libvmaf with a thread pool runs its TEMPORAL extractors on the
    /// calling thread before the pool's job for the frame, so their
    /// features come first in its collector and logs; ours follow the
    /// order of `uses`.
    fn order_uses_as_libvmaf(&mut self) {
        if self.config.threads > 0 {
            self.uses.sort_by_key(|u| !u.descriptor.libvmaf_temporal());
        }
    }

    /// On a GPU every extractor must have a device twin; the first without
    /// one is refused by name.
    fn check_device_twins(&self) -> Result<()> {
        if self.memory.is_none() {
            return Ok(());
        }
        match self.uses.iter().zip(&self.local).find(|(_, inst)| !inst.has_device_twin()) {
            Some((u, _)) => Err(Error::NotSupported(format!(
                "feature extractor {} has no device twin in this build: score it in a CPU context",
                u.descriptor.name
            ))),
            None => Ok(()),
        }
    }

    /// The lanes opened by `new`, each wrapped with the planes its pictures
    /// need there: chroma goes to the device only when some extractor
    /// reads it (for the previous reference, a temporal one).
    fn hand_out_lanes(&mut self, format: PixelFormat) -> impl Iterator<Item = WorkerDevice> {
        let planes_for = |temporal_only: bool| {
            let reads = self
                .uses
                .iter()
                .any(|u| u.descriptor.reads_chroma && (u.descriptor.needs_prev_reference || !temporal_only));
            if reads {
                format.chroma.plane_count()
            } else {
                1
            }
        };
        let (planes, prev_planes) = (planes_for(false), planes_for(true));
        let uploads = self.host_copies.clone();
        std::mem::take(&mut self.lanes).into_iter().map(move |device| {
            let uploads = uploads.clone();
            WorkerDevice::Device(Box::new(LaneState { device, planes, prev_planes, kept: None, uploads }))
        })
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
        if let WorkerDevice::Device(lane) = &mut self.local_lane {
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
        if let WorkerDevice::Device(lane) = &mut self.local_lane {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feature::{ExtractorConfig, FrameInput};
    use std::sync::atomic::Ordering;
    use crate::picture::{Chroma, OwnedPicture};

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
