//! `vmafx._vmafx`: the vmafx core for Python (docs/python.md).
//!
//! `score` scores two files (any format `vmafx::io::open` reads: y4m, or
//! anything FFmpeg decodes); `Context` scores frames pushed as arrays
//! (anything with the buffer protocol: numpy uint8/uint16, read in place
//! when each row's samples are contiguous, copied and counted otherwise);
//! both hand back a `Result`
//! whose logs are the CLI's text. Errors raise `vmafx.Error` with the
//! core's message. Scoring runs with the GIL released.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use vmafx::{
    Chroma, Context as CoreContext, ContextConfig, CpuLevel, FeatureCollector, LogFormat, Model, OwnedPicture, Picture, PictureSource,
    PixelFormat, PlaneView, PlotSpec, PoolMethod,
};
use vmafx::io;
use vmafx::internals::avfilter::frame::HostFormat;
use vmafx::internals::option_strings::{parse_device, parse_feature, parse_model, prefixed};
use vmafx::internals::picture::{HostCopies, HostCopy};
use vmafx::internals::score::log::{log_name, render_log, LogInput};
use vmafx::internals::score::plot;
use vmafx::internals::score::pool::pool_frames;

create_exception!(_vmafx, Error, PyException, "An error from the vmafx core; the message says what and why.");

fn py_err(e: vmafx::Error) -> PyErr {
    Error::new_err(e.to_string())
}

/// What to compute: the models (`model`: a built-in name, a JSON path, a
/// CLI `--model` string, or a list of them; None for none) and features
/// (CLI `--feature` strings).
struct Plan {
    models: Vec<Model>,
    features: Vec<(String, vmafx::FeatureOptions)>,
    config: ContextConfig,
}

fn model_arg(text: &str) -> vmafx::Result<vmafx::internals::option_strings::ModelArg> {
    if text.contains('=') {
        parse_model(text)
    } else if text.ends_with(".json") {
        parse_model(&format!("path={text}"))
    } else {
        parse_model(&format!("version={text}"))
    }
}

impl Plan {
    fn new(names: Vec<String>, features: Vec<String>, threads: usize, device: &str, subsample: u32) -> PyResult<Plan> {
        let mut models = Vec::new();
        for text in &names {
            let spec = model_arg(text).map_err(py_err)?;
            let model = match (&spec.version, &spec.path) {
                (Some(v), _) => Model::builtin(v, &spec.config),
                (None, Some(p)) => Model::from_path(p, &spec.config),
                (None, None) => unreachable!("parse_model requires version or path"),
            }
            .map_err(|e| py_err(prefixed(e, &format!("loading model {}", spec.label))))?;
            models.push(model);
        }
        let features =
            features.iter().map(|f| parse_feature(f)).collect::<vmafx::Result<Vec<_>>>().map_err(py_err)?;
        if models.is_empty() && features.is_empty() {
            return Err(Error::new_err("nothing to compute: no model and no feature"));
        }
        let device = parse_device(device).map_err(py_err)?;
        let config = ContextConfig { threads, subsample: subsample.max(1), cpu: CpuLevel::detect(), device };
        Ok(Plan { models, features, config })
    }

    fn context(&self) -> vmafx::Result<CoreContext> {
        let mut ctx = CoreContext::new(self.config.clone())?;
        for m in &self.models {
            ctx.use_model(m.clone())?;
        }
        for (name, options) in &self.features {
            ctx.use_feature(name, options.clone())?;
        }
        Ok(ctx)
    }
}

/// The scores of a run: per-frame values, pooled values and the logs.
#[pyclass(frozen, module = "vmafx")]
struct Result {
    collector: FeatureCollector,
    frames: u32,
    subsample: u32,
    width: usize,
    height: usize,
    fps: Option<f64>,
    /// Collector names of the model scores.
    models: Vec<String>,
}

impl Result {
    fn from_context(ctx: &CoreContext, frames: u32, width: usize, height: usize, seconds: f64) -> Result {
        Result {
            collector: ctx.collector().clone(),
            frames,
            subsample: ctx.config().subsample,
            width,
            height,
            fps: Some(frames as f64 / seconds.max(1e-9)),
            models: ctx.models().iter().map(|m| m.name().to_owned()).collect(),
        }
    }

    fn log(&self, format: LogFormat) -> String {
        render_log(
            format,
            &LogInput {
                collector: &self.collector,
                frames: self.frames,
                subsample: self.subsample,
                width: self.width,
                height: self.height,
                fps: self.fps,
                incomplete: None,
            },
        )
    }

    /// Names with at least one value, as the logs list them.
    fn names(&self) -> Vec<&str> {
        let c = &self.collector;
        c.names()
            .iter()
            .map(String::as_str)
            .filter(|n| c.column(n).is_some_and(|col| col.iter().any(Option::is_some)))
            .collect()
    }
}

#[pymethods]
impl Result {
    /// One dict per frame: libvmaf's metric name -> value (frames left
    /// out by `subsample` are empty dicts).
    #[getter]
    fn frames<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let names = self.names();
        for i in 0..self.collector.frame_count() {
            let d = PyDict::new(py);
            for name in &names {
                if let Some(v) = self.collector.get(name, i) {
                    d.set_item(log_name(name), v)?;
                }
            }
            list.append(d)?;
        }
        Ok(list)
    }

    /// libvmaf's name -> {"min", "max", "mean", "harmonic_mean"} over every
    /// frame scored, as the logs pool them.
    #[getter]
    fn pooled<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let last = self.frames.wrapping_sub(1);
        for name in self.names() {
            let d = PyDict::new(py);
            for m in PoolMethod::ALL {
                let v = pool_frames(|i| self.collector.get(name, i), m, 0, last, self.subsample).map_err(py_err)?;
                d.set_item(m.name(), v)?;
            }
            out.set_item(log_name(name), d)?;
        }
        Ok(out)
    }

    /// Whole-stream values (e.g. `apsnr_y`), by libvmaf's name.
    #[getter]
    fn aggregates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, v) in self.collector.aggregates() {
            out.set_item(name, *v)?;
        }
        Ok(out)
    }

    #[getter]
    fn frame_count(&self) -> u32 {
        self.frames
    }
    #[getter]
    fn fps(&self) -> Option<f64> {
        self.fps
    }
    /// The JSON log, as `vmafx --json` writes it.
    fn json(&self) -> String {
        self.log(LogFormat::Json)
    }
    /// The XML log, as `vmafx --xml` writes it.
    fn xml(&self) -> String {
        self.log(LogFormat::Xml)
    }
    /// The CSV log, as `vmafx --csv` writes it.
    fn csv(&self) -> String {
        self.log(LogFormat::Csv)
    }
    /// The subtitle log, as `vmafx --sub` writes it.
    fn sub(&self) -> String {
        self.log(LogFormat::Sub)
    }
    /// Draws the per-frame scores (and `features`, libvmaf names; by
    /// default those added beside the models' own) into an SVG at `path`,
    /// as `vmafx --plot` does.
    #[pyo3(signature = (path, features=None, worst=5))]
    fn plot(&self, path: PathBuf, features: Option<Vec<String>>, worst: usize) -> PyResult<()> {
        let features = match features {
            None => plot::default_features(&self.collector, &self.models),
            Some(wanted) => {
                let mut names = Vec::new();
                for w in wanted {
                    let found = self.collector.names().iter().find(|n| log_name(n) == w || **n == w);
                    names.push(found.cloned().ok_or_else(|| Error::new_err(format!("no feature '{w}' in this result")))?);
                }
                names
            }
        };
        let spec = PlotSpec { models: &self.models, features: &features, frames: self.frames, subsample: self.subsample, worst };
        std::fs::write(&path, plot::render_svg(&self.collector, &spec)).map_err(|e| py_err(vmafx::Error::io(&path, e)))
    }

    fn __repr__(&self) -> String {
        format!("<vmafx.Result: {} frames, {}x{}>", self.frames, self.width, self.height)
    }
}

/// Scores `reference` against `distorted` (paths: y4m, or any file FFmpeg
/// decodes); `vmafx.score` gives the defaults.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn score(
    py: Python<'_>,
    reference: PathBuf,
    distorted: PathBuf,
    models: Vec<String>,
    features: Vec<String>,
    threads: usize,
    device: &str,
    subsample: u32,
) -> PyResult<Result> {
    let plan = Plan::new(models, features, threads, device, subsample)?;
    py.allow_threads(|| score_files(&plan, &reference, &distorted)).map_err(py_err)
}

/// Both inputs opened, checked to have one size and format.
fn open_pair(
    reference: &std::path::Path,
    distorted: &std::path::Path,
) -> vmafx::Result<(Box<dyn io::FrameReader>, Box<dyn io::FrameReader>)> {
    let r = io::open(reference, None)?;
    let d = io::open(distorted, None)?;
    check_pair(r.as_ref(), d.as_ref())?;
    Ok((r, d))
}

/// Both inputs have one size and format.
fn check_pair(r: &dyn io::FrameReader, d: &dyn io::FrameReader) -> vmafx::Result<()> {
    if (r.width(), r.height(), r.format()) != (d.width(), d.height(), d.format()) {
        return Err(vmafx::Error::Mismatch(format!(
            "reference {} ({}x{} {}) and distorted {} ({}x{} {}) differ in size or format",
            r.path().display(),
            r.width(),
            r.height(),
            r.format(),
            d.path().display(),
            d.width(),
            d.height(),
            d.format()
        )));
    }
    Ok(())
}

fn score_files(plan: &Plan, reference: &std::path::Path, distorted: &std::path::Path) -> vmafx::Result<Result> {
    let (mut r, mut d) = open_pair(reference, distorted)?;
    let mut ctx = plan.context()?;
    let start = Instant::now();
    let mut frames = 0u32;
    loop {
        match (r.read_source()?, d.read_source()?) {
            (Some(a), Some(b)) => ctx.push(a, b)?,
            (None, None) => break,
            (a, _) => {
                let (short, long) = if a.is_none() { (&r, &d) } else { (&d, &r) };
                return Err(vmafx::Error::Mismatch(format!(
                    "{} ended after {frames} frames, but {} has a frame {frames} (frame counts differ)",
                    short.path().display(),
                    long.path().display()
                )));
            }
        }
        frames += 1;
    }
    if frames == 0 {
        return Err(vmafx::Error::input(r.path(), "no frames to score"));
    }
    ctx.flush()?;
    Ok(Result::from_context(&ctx, frames, r.width(), r.height(), start.elapsed().as_secs_f64()))
}

/// Frames in `reference` and `distorted`, which must have as many, of one
/// size and format: the title a segmented run cuts into ranges. Reads
/// every frame (decoding encoded inputs).
#[pyfunction]
fn frame_count(py: Python<'_>, reference: PathBuf, distorted: PathBuf) -> PyResult<u32> {
    py.allow_threads(|| -> vmafx::Result<u32> {
        let (mut r, mut d) = open_pair(&reference, &distorted)?;
        let (nr, nd) = (r.skip_frames(u32::MAX)?, d.skip_frames(u32::MAX)?);
        if nr != nd {
            return Err(vmafx::Error::Mismatch(format!(
                "{} has {nr} frames and {} has {nd} (frame counts differ)",
                r.path().display(),
                d.path().display()
            )));
        }
        Ok(nr)
    })
    .map_err(py_err)
}

/// Where each frame of an encoded input is (`vmafx::io::FrameMap`, from its
/// packets alone): `(pts, keys)`, or None for y4m/yuv inputs and streams
/// whose packets do not say (those are read from their start).
#[pyfunction]
fn frame_map(py: Python<'_>, path: PathBuf) -> PyResult<Option<MapTuple>> {
    py.allow_threads(|| -> vmafx::Result<Option<MapTuple>> {
        // y4m has its own reader (io::open), which reads from the start.
        let mut head = [0u8; 9];
        let n = std::io::Read::read(&mut std::fs::File::open(&path).map_err(|e| vmafx::Error::io(&path, e))?, &mut head)
            .map_err(|e| vmafx::Error::io(&path, e))?;
        if &head[..n] == b"YUV4MPEG2" {
            return Ok(None);
        }
        Ok(io::DecodeReader::map_frames(&path)?.map(|m| (m.pts, m.keys)))
    })
    .map_err(py_err)
}

/// A `FrameMap` as it crosses processes.
type MapTuple = (Vec<i64>, Vec<(u32, i64)>);

/// `path` opened so that its next frame is frame `from`: by seeking to the
/// key frame at or before it where `map` is given, else by reading and
/// dropping the frames before it.
fn open_at(path: &std::path::Path, map: Option<MapTuple>, from: u32) -> vmafx::Result<Box<dyn io::FrameReader>> {
    if let Some((pts, keys)) = map.filter(|_| from > 0) {
        let mut reader = io::DecodeReader::open(path)?;
        reader.seek_to_frame(&io::FrameMap { pts, keys }, from)?;
        return Ok(Box::new(reader));
    }
    let mut reader = io::open(path, None)?;
    if reader.skip_frames(from)? != from {
        return Err(vmafx::Error::input(path, format!("it has fewer than {from} frames")));
    }
    Ok(reader)
}

/// A chroma layout as a segment's result names it (it crosses processes).
fn chroma_name(c: Chroma) -> &'static str {
    match c {
        Chroma::Yuv400 => "400",
        Chroma::Yuv420 => "420",
        Chroma::Yuv422 => "422",
        Chroma::Yuv444 => "444",
    }
}

fn chroma_of(name: &str) -> PyResult<Chroma> {
    Ok(match name {
        "400" => Chroma::Yuv400,
        "420" => Chroma::Yuv420,
        "422" => Chroma::Yuv422,
        "444" => Chroma::Yuv444,
        _ => return Err(Error::new_err(format!("chroma '{name}': expected 400, 420, 422 or 444"))),
    })
}

/// One frame's extracted values, in commit order.
type FrameValues = Vec<(String, f64)>;

/// Scores frames `first..end` of a title for a segmented run: pushes from
/// `look_behind` frames earlier (`Context::segment_push_from`; an input
/// with a `frame_map` seeks to the key frame at or before that) and returns
/// `(width, height, chroma, bits, values)`, `values` the extracted values
/// of each frame of the range (fewer when the title ends first), which
/// `merge` turns into the title's result.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn score_range(
    py: Python<'_>,
    reference: PathBuf,
    distorted: PathBuf,
    first: u32,
    end: u32,
    models: Vec<String>,
    features: Vec<String>,
    threads: usize,
    device: &str,
    subsample: u32,
    reference_map: Option<MapTuple>,
    distorted_map: Option<MapTuple>,
) -> PyResult<(usize, usize, &'static str, u8, Vec<FrameValues>)> {
    let plan = Plan::new(models, features, threads, device, subsample)?;
    py.allow_threads(|| -> vmafx::Result<_> {
        let mut ctx = plan.context()?;
        ctx.record_extracted()?;
        let from = ctx.segment_push_from(first);
        let mut r = open_at(&reference, reference_map, from)?;
        let mut d = open_at(&distorted, distorted_map, from)?;
        check_pair(r.as_ref(), d.as_ref())?;
        for index in from..end {
            match (r.read_source()?, d.read_source()?) {
                (Some(a), Some(b)) => ctx.push(a, b)?,
                (None, None) => break,
                _ => {
                    return Err(vmafx::Error::Mismatch(format!(
                        "{} and {} differ in length at frame {index}",
                        r.path().display(),
                        d.path().display()
                    )))
                }
            }
        }
        ctx.flush()?;
        let values = ctx.extracted().get((first - from) as usize..).unwrap_or_default().to_vec();
        let format = r.format();
        Ok((r.width(), r.height(), chroma_name(format.chroma), format.bits, values))
    })
    .map_err(py_err)
}

/// The title's result from its segments' values (`score_range`), every
/// frame in order: look-ahead features settled, models scored and pooled
/// once over all frames, as one pass. `seconds`: the run's wall time (its
/// fps in the logs).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn merge(
    py: Python<'_>,
    width: usize,
    height: usize,
    chroma: &str,
    bits: u8,
    frames: Vec<FrameValues>,
    models: Vec<String>,
    features: Vec<String>,
    threads: usize,
    subsample: u32,
    seconds: f64,
) -> PyResult<Result> {
    let format = PixelFormat::new(chroma_of(chroma)?, bits).map_err(py_err)?;
    // The features are already computed: the merge runs on the CPU, with
    // the segments' thread setting (it orders the features in the logs).
    let plan = Plan::new(models, features, threads, "cpu", subsample)?;
    py.allow_threads(|| -> vmafx::Result<Result> {
        let mut ctx = plan.context()?;
        let n = frames.len() as u32;
        for values in frames {
            ctx.push_extracted(width, height, format, values)?;
        }
        ctx.flush()?;
        Ok(Result::from_context(&ctx, n, width, height, seconds))
    })
    .map_err(py_err)
}

/// One plane of a pushed picture, held by its Python buffer (never read:
/// holding it keeps the array's memory exported and in place).
#[allow(dead_code)]
enum HeldBuffer {
    U8(PyBuffer<u8>),
    U16(PyBuffer<u16>),
    /// A copy, rows packed, of an array whose rows are not contiguous.
    CopiedU8(Vec<u8>),
    CopiedU16(Vec<u16>),
}

impl HeldBuffer {
    /// Bytes copied to hold this plane; None when it is read in place.
    fn copied(&self) -> Option<usize> {
        match self {
            HeldBuffer::U8(_) | HeldBuffer::U16(_) => None,
            HeldBuffer::CopiedU8(v) => Some(v.len()),
            HeldBuffer::CopiedU16(v) => Some(v.len() * 2),
        }
    }
}

/// A picture whose planes are Python buffers, read in place. The buffers
/// are released (under the GIL, by PyBuffer's drop) when the engine drops
/// the picture.
struct BufferPicture {
    format: PixelFormat,
    width: usize,
    height: usize,
    /// (address, bytes spanned, row stride) of each plane.
    planes: Vec<(usize, usize, usize)>,
    _buffers: Vec<HeldBuffer>,
}

impl PictureSource for BufferPicture {
    fn host(&self) -> Option<Picture<'_>> {
        let bps = self.format.bytes_per_sample();
        let views: Vec<PlaneView<'_>> = self
            .planes
            .iter()
            .enumerate()
            .map(|(i, &(addr, len, stride))| {
                let (w, h) = self.format.plane_size(i, self.width, self.height);
                // SAFETY: `addr..addr + len` lies in the buffer `_buffers[i]`
                // holds (its shape and strides checked in `plane_of`): an
                // exported Python buffer, whose memory stays put while
                // exported, or our copy, whose heap block never moves.
                let data = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
                PlaneView::new(data, stride, w, h, bps).expect("plane checked in plane_of")
            })
            .collect();
        Picture::new(self.format, self.width, self.height, &views).ok()
    }
}

/// Plane `i` of a picture of `format` as a held buffer: 2-D, `h` rows of
/// `w` samples of the format's width. Read in place when each row's
/// samples are contiguous and rows do not overlap, else copied
/// (`HeldBuffer::copied`).
fn plane_of(
    obj: &Bound<'_, PyAny>,
    format: PixelFormat,
    (w, h): (usize, usize),
    i: usize,
) -> PyResult<(HeldBuffer, (usize, usize, usize))> {
    let py = obj.py();
    let bps = format.bytes_per_sample();
    let expect = |shape: &[usize]| -> PyResult<()> {
        if shape != [h, w] {
            return Err(Error::new_err(format!("plane {i}: shape {shape:?}, expected ({h}, {w}) for {format}")));
        }
        Ok(())
    };
    let in_place = |strides: &[isize]| strides[1] == bps as isize && strides[0] >= (w * bps) as isize;
    let packed = (w * bps, (h - 1) * w * bps + w * bps);
    if bps == 1 {
        let b = PyBuffer::<u8>::get(obj)
            .map_err(|e| Error::new_err(format!("plane {i}: expected a uint8 array ({e})")))?;
        expect(b.shape())?;
        if in_place(b.strides()) {
            let (addr, stride) = (b.buf_ptr() as usize, b.strides()[0] as usize);
            return Ok((HeldBuffer::U8(b), (addr, (h - 1) * stride + w * bps, stride)));
        }
        let copy = b.to_vec(py)?;
        let addr = copy.as_ptr() as usize;
        Ok((HeldBuffer::CopiedU8(copy), (addr, packed.1, packed.0)))
    } else {
        let b = PyBuffer::<u16>::get(obj)
            .map_err(|e| Error::new_err(format!("plane {i}: expected a uint16 array ({e})")))?;
        expect(b.shape())?;
        if in_place(b.strides()) {
            let (addr, stride) = (b.buf_ptr() as usize, b.strides()[0] as usize);
            return Ok((HeldBuffer::U16(b), (addr, (h - 1) * stride + w * bps, stride)));
        }
        let copy = b.to_vec(py)?;
        let addr = copy.as_ptr() as usize;
        Ok((HeldBuffer::CopiedU16(copy), (addr, packed.1, packed.0)))
    }
}

/// Scores frames pushed as arrays, one context per stream.
#[pyclass(module = "vmafx")]
struct Context {
    /// The core context until `flush`; behind a mutex because Python
    /// objects may be touched from any thread.
    inner: Mutex<Option<CoreContext>>,
    format: PixelFormat,
    width: usize,
    height: usize,
    frames: u32,
    seconds: f64,
    /// The core context's host-copy counter (a clone shares it, and
    /// outlives `flush`): planes copied because their rows were not
    /// contiguous count there, as `HostCopy::InHostMemory`.
    copies: HostCopies,
    /// Planes read in place, in the array's own memory.
    planes_in_place: u64,
}

impl Context {
    fn picture(&mut self, planes: &Bound<'_, PyAny>, which: &str) -> PyResult<Arc<dyn PictureSource>> {
        let planes: Vec<Bound<'_, PyAny>> = planes.extract()?;
        let n = self.format.chroma.plane_count();
        if planes.len() != n {
            return Err(Error::new_err(format!("{which}: {} needs {n} planes, got {}", self.format, planes.len())));
        }
        let mut buffers = Vec::with_capacity(n);
        let mut spans = Vec::with_capacity(n);
        for (i, obj) in planes.iter().enumerate() {
            let size = self.format.plane_size(i, self.width, self.height);
            let (b, span) = plane_of(obj, self.format, size, i)
                .map_err(|e| Error::new_err(format!("{which}: {}", e)))?;
            buffers.push(b);
            spans.push(span);
        }
        // Counted once made: a copy is made even if a later check refuses
        // the picture.
        let copied: Vec<usize> = buffers.iter().filter_map(HeldBuffer::copied).collect();
        if !copied.is_empty() {
            self.copies.count(HostCopy::InHostMemory, copied.len(), copied.iter().sum());
        }
        self.planes_in_place += (buffers.len() - copied.len()) as u64;
        let picture =
            BufferPicture { format: self.format, width: self.width, height: self.height, planes: spans, _buffers: buffers };
        // Samples beyond the bit depth would be scored as garbage: check
        // them, as the file readers do, by copying into a checked picture.
        let view = picture.host().ok_or_else(|| Error::new_err("picture has no planes"))?;
        if self.format.bits > 8 && self.format.bits < 16 {
            check_depth(&view).map_err(|e| Error::new_err(format!("{which}: {e}")))?;
        }
        Ok(Arc::new(picture))
    }
}

fn check_depth(p: &Picture<'_>) -> std::result::Result<(), String> {
    let bits = p.bits();
    for i in 0..p.plane_count() {
        let plane = p.plane(i);
        for y in 0..plane.height() {
            if let Some(x) = plane.row_u16(y).iter().position(|v| (*v as u32) >> bits != 0) {
                return Err(format!("plane {i} sample ({x},{y}) = {} exceeds {bits} bits", plane.row_u16(y)[x]));
            }
        }
    }
    Ok(())
}

#[pymethods]
impl Context {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        width: usize,
        height: usize,
        pix_fmt: &str,
        models: Vec<String>,
        features: Vec<String>,
        threads: usize,
        device: &str,
        subsample: u32,
    ) -> PyResult<Context> {
        let host = HostFormat::by_name(pix_fmt).map_err(py_err)?;
        if host.layout != vmafx::internals::avfilter::frame::Layout::Planar {
            return Err(Error::new_err(format!("pix_fmt {pix_fmt}: push planar formats (one array per plane)")));
        }
        OwnedPicture::new(host.core_format(true), width, height).map_err(py_err)?;
        let plan = Plan::new(models, features, threads, device, subsample)?;
        let inner = plan.context().map_err(py_err)?;
        let copies = inner.host_copies().clone();
        Ok(Context {
            inner: Mutex::new(Some(inner)),
            format: host.core_format(true),
            width,
            height,
            frames: 0,
            seconds: 0.0,
            copies,
            planes_in_place: 0,
        })
    }

    /// Planes pushed so far that were read in place (rows contiguous).
    #[getter]
    fn planes_in_place(&self) -> u64 {
        self.planes_in_place
    }

    /// Planes pushed so far that were copied, rows packed, because their
    /// samples are not contiguous in a row (Fortran order, a column step).
    #[getter]
    fn planes_copied(&self) -> u64 {
        self.copies.planes(HostCopy::InHostMemory)
    }

    /// Bytes of those copies.
    #[getter]
    fn bytes_copied(&self) -> u64 {
        self.copies.bytes(HostCopy::InHostMemory)
    }

    /// Queues one frame pair: a list of arrays each (one per plane: Y, or
    /// Y, U, V), uint8 for 8 bits, uint16 above. Arrays are read in place
    /// until scored: do not change them before `flush`.
    fn push(&mut self, py: Python<'_>, reference: &Bound<'_, PyAny>, distorted: &Bound<'_, PyAny>) -> PyResult<()> {
        let r = self.picture(reference, "reference")?;
        let d = self.picture(distorted, "distorted")?;
        let start = Instant::now();
        py.allow_threads(|| match self.inner.lock().expect("context lock").as_mut() {
            Some(ctx) => ctx.push(r, d),
            None => Err(vmafx::Error::invalid("frame pushed after flush")),
        })
        .map_err(py_err)?;
        self.seconds += start.elapsed().as_secs_f64();
        self.frames += 1;
        Ok(())
    }

    /// Scores what is queued and returns the result; the context is done.
    fn flush(&mut self, py: Python<'_>) -> PyResult<Result> {
        let taken = self.inner.lock().expect("context lock").take();
        let mut ctx = taken.ok_or_else(|| Error::new_err("flush called twice"))?;
        let start = Instant::now();
        let done = py.allow_threads(|| ctx.flush().map(|_| ctx));
        let ctx = done.map_err(py_err)?;
        self.seconds += start.elapsed().as_secs_f64();
        let result = Result::from_context(&ctx, self.frames, self.width, self.height, self.seconds);
        // Workers release pictures (Python buffers, under the GIL) as they
        // stop: drop the context with the GIL released.
        py.allow_threads(move || drop(ctx));
        Ok(result)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Some(ctx) = self.inner.get_mut().ok().and_then(Option::take) {
            // As in flush: workers may still hold buffers whose release
            // takes the GIL.
            Python::with_gil(|py| py.allow_threads(move || drop(ctx)));
        }
    }
}

#[pymodule]
fn _vmafx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(score, m)?)?;
    m.add_function(wrap_pyfunction!(frame_count, m)?)?;
    m.add_function(wrap_pyfunction!(frame_map, m)?)?;
    m.add_function(wrap_pyfunction!(score_range, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_class::<Context>()?;
    m.add_class::<Result>()?;
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("LIBVMAF_VERSION", vmafx::REFERENCE_LIBVMAF_VERSION)?;
    Ok(())
}
