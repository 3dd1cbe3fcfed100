//! The worker pool: the extractors a context runs, one frame's job, the
//! threads that take jobs (each with its own extractor instances and lane)
//! and score them on the CPU or on their lane.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::placement::{same_picture, WorkerDevice, SLOTS};
use super::prefix_error;
use crate::feature::{
    DeviceFrameInput, Extractor, ExtractorConfig, ExtractorDescriptor, FeatureOptions, FrameInput, FrameScores,
};
use crate::picture::{Picture, PictureSource};
use crate::{Error, Result};

/// One extractor the context runs, with the options it runs under.
#[derive(Clone)]
pub(super) struct ExtractorUse {
    pub(super) descriptor: &'static ExtractorDescriptor,
    pub(super) options: FeatureOptions,
}

/// One frame for a worker: its pictures and the look-back ones its
/// extractors read.
pub(super) struct Job {
    pub(super) index: u32,
    pub(super) reference: Arc<dyn PictureSource>,
    pub(super) distorted: Arc<dyn PictureSource>,
    pub(super) prev_reference: Option<Arc<dyn PictureSource>>,
    /// Kept only when an extractor needs it (`needs_prev_distorted`).
    pub(super) prev_distorted: Option<Arc<dyn PictureSource>>,
    /// Kept only when an extractor needs it (`needs_two_back`).
    pub(super) prev_prev_reference: Option<Arc<dyn PictureSource>>,
}

pub(super) type JobResult = (u32, Result<Vec<FrameScores>>);

/// The running pool: jobs in (bounded), results out in any order.
pub(super) struct Workers {
    pub(super) jobs: Option<mpsc::SyncSender<Job>>,
    pub(super) results: mpsc::Receiver<JobResult>,
    pub(super) handles: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `threads` workers, each with its own extractor instances and
    /// the next of `lanes` (the CPU when they run out).
    pub(super) fn spawn(
        threads: usize,
        uses: &[ExtractorUse],
        base: &ExtractorConfig,
        subsample: u32,
        mut lanes: impl Iterator<Item = WorkerDevice>,
    ) -> Result<Workers> {
        let (job_tx, job_rx) = mpsc::sync_channel::<Job>(threads);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (res_tx, res_rx) = mpsc::channel::<JobResult>();
        let mut handles = Vec::new();
        for t in 0..threads {
            let mut instances = create_instances(uses, base)?;
            let mut lane = lanes.next().unwrap_or(WorkerDevice::Cpu);
            let uses = uses.to_vec();
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
        Ok(Workers { jobs: Some(job_tx), results: res_rx, handles })
    }
}

/// One instance of every extractor in `uses`, for one worker (or the
/// caller's thread).
pub(super) fn create_instances(uses: &[ExtractorUse], base: &ExtractorConfig) -> Result<Vec<Box<dyn Extractor>>> {
    uses.iter()
        .map(|u| {
            let cfg = ExtractorConfig { options: u.options.clone(), ..base.clone() };
            (u.descriptor.create)(&cfg)
                .map_err(|e| prefix_error(e, &format!("feature extractor {}", u.descriptor.name)))
        })
        .collect()
}

/// Whether extractor `u` runs on frame `index`: temporal extractors see
/// every frame; the rest only scored ones.
fn runs_on(u: &ExtractorUse, subsample: u32, index: u32) -> bool {
    u.descriptor.needs_prev_reference
        || u.descriptor.needs_prev_distorted
        || u.descriptor.every_frame
        || subsample <= 1 || index % subsample == 0
}

/// Scores one frame on `lane`: the CPU, or a GPU lane with each picture
/// placed on it once.
pub(super) fn run_job(
    uses: &[ExtractorUse],
    instances: &mut [Box<dyn Extractor>],
    lane: &mut WorkerDevice,
    subsample: u32,
    job: &Job,
) -> Result<Vec<FrameScores>> {
    let lane = match lane {
        WorkerDevice::Cpu => return run_cpu_job(uses, instances, subsample, job),
        WorkerDevice::Device(lane) => lane,
    };
    let mut out: Vec<FrameScores> = uses.iter().map(|_| FrameScores::default()).collect();
    let runs: Vec<bool> = uses.iter().map(|u| runs_on(u, subsample, job.index)).collect();
    if !runs.contains(&true) {
        return Ok(out);
    }
    // The producer's writes first (a caller's stream: one event wait), then
    // each picture goes on the lane once, whatever reads it.
    lane.device.wait_for_caller_stream()?;
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

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic in extractor: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic in extractor: {s}")
    } else {
        "panic in extractor".into()
    }
}

