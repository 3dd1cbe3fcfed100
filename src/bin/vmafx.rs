//! `vmafx`: libvmaf's `vmaf` tool (`tools/vmaf.c`, `tools/cli_parse.c`) on
//! the vmafx scoring core, with the same option spellings.
//!
//! Thin over the public API: `io` reads the two files, `engine::Context`
//! scores them, `model::Model` loads the models, `score::log` writes the log.
//! Differences from libvmaf's tool, all additive: the pooled score is printed
//! on stdout (libvmaf prints it on stderr, and only to a terminal), the log
//! format follows the output file's extension when no `--xml/--json/--csv/
//! --sub` is given, unequal frame counts are an error rather than a warning,
//! and `--cpu-level` caps the SIMD level by name.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use signal_hook::consts::{SIGINT, SIGTERM};

use vmafx::{Context, ContextConfig, CpuLevel, DeviceChoice, Error, FeatureOptions, LogFormat, LogStream, Model, PlotSpec, PoolMethod};
use vmafx::io::{self, FrameReader, RawFormat};
use vmafx::internals::option_strings::{parse_c_unsigned, parse_device, parse_feature, parse_model, prefixed, ModelArg};
use vmafx::internals::score::plot;

const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

#[derive(Parser, Debug)]
#[command(
    name = "vmafx",
    about = "VMAF and companion metrics, bit-exact with libvmaf 3.2.0",
    long_about = "Scores a distorted video against its reference with VMAF models and features, \
                  computing exactly the numbers libvmaf 3.2.0 computes. Inputs are .y4m, raw \
                  planar .yuv given --width, --height, --pixel_format and --bitdepth, or (feature \
                  `decode`) any file FFmpeg's libraries decode (.mp4, .mkv, ...).",
    disable_help_flag = true,
    disable_version_flag = true,
    max_term_width = 100
)]
struct Cli {
    /// Reference video: .y4m, raw .yuv, or (built with feature `decode`)
    /// any file FFmpeg decodes (`-` reads y4m from standard input)
    #[arg(short = 'r', long, value_name = "PATH")]
    reference: Option<PathBuf>,
    /// Distorted video, as the reference
    #[arg(short = 'd', long, value_name = "PATH")]
    distorted: Option<PathBuf>,

    /// Width of raw .yuv input
    #[arg(short = 'w', long)]
    width: Option<usize>,
    /// Height of raw .yuv input
    #[arg(short = 'h', long)]
    height: Option<usize>,
    /// Pixel format of raw .yuv input: 420, 422, 444 (or ffmpeg's yuv420p10le, ...)
    #[arg(short = 'p', long = "pixel_format", visible_alias = "pixel-format", value_name = "FMT")]
    pixel_format: Option<String>,
    /// Bit depth of raw .yuv input: 8, 10, 12 or 16
    #[arg(short = 'b', long, value_name = "BITS")]
    bitdepth: Option<u32>,

    /// Model, colon-delimited: version=NAME (built-in) or path=FILE (JSON),
    /// [name=LABEL] [enable_transform] [disable_clip]; repeatable.
    /// Default: version=vmaf_v0.6.1
    #[arg(short = 'm', long, value_name = "PARAMS", long_help = model_long_help())]
    model: Vec<String>,
    /// Additional feature: NAME[=opt=val:opt=val] (e.g. psnr, psnr=enable_chroma=false, cambi=full_ref=true); repeatable
    #[arg(long, value_name = "NAME[=OPTS]", long_help = feature_long_help())]
    feature: Vec<String>,

    /// Output (log) file
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Write the log as XML (the default, unless the output's extension says otherwise)
    #[arg(long, overrides_with_all = ["json", "csv", "sub"])]
    xml: bool,
    /// Write the log as JSON
    #[arg(long, overrides_with_all = ["xml", "csv", "sub"])]
    json: bool,
    /// Write the log as CSV
    #[arg(long, overrides_with_all = ["xml", "json", "sub"])]
    csv: bool,
    /// Write the log as subtitles
    #[arg(long, overrides_with_all = ["xml", "json", "csv"])]
    sub: bool,
    /// Also draw per-frame scores and the --feature values as an SVG
    /// (worst frames and pooled values marked); keeps every frame's values
    /// in memory until the end
    #[arg(long, value_name = "PATH")]
    plot: Option<PathBuf>,

    /// Worker threads (0: score on the reading thread)
    #[arg(long, default_value_t = 0, value_name = "N")]
    threads: usize,
    /// Compute scores only every N frames
    #[arg(long, default_value_t = 1, value_name = "N")]
    subsample: u32,
    /// Highest SIMD level: scalar, avx2, avx512 or avx512vnni (default: the best the CPU has)
    #[arg(long = "cpu-level", visible_alias = "cpu_level", value_name = "LEVEL")]
    cpu_level: Option<String>,
    /// libvmaf's bitmask of instruction sets to disable (8: AVX2 and above, 16: AVX-512, 32: AVX-512 VNNI)
    #[arg(long, value_name = "MASK")]
    cpumask: Option<String>,
    /// Where to score: cpu (default), cuda[:N] or hip[:N] (GPU N, default 0)
    #[arg(long, value_name = "DEVICE")]
    device: Option<String>,
    /// libvmaf's GPU mask (accepted and ignored; --device picks the GPU)
    #[arg(long, value_name = "MASK", hide = true)]
    gpumask: Option<String>,

    /// Maximum number of frames to score
    #[arg(long = "frame_cnt", visible_alias = "frame-cnt", value_name = "N")]
    frame_cnt: Option<u32>,
    /// Skip the first N frames of the reference
    #[arg(long = "frame_skip_ref", visible_alias = "frame-skip-ref", value_name = "N", default_value_t = 0)]
    frame_skip_ref: u32,
    /// Skip the first N frames of the distorted video
    #[arg(
        long = "frame_skip_dist",
        visible_alias = "frame-skip-dist",
        value_name = "N",
        default_value_t = 0
    )]
    frame_skip_dist: u32,

    /// libvmaf's AOM CTC presets (they need features vmafx does not compute yet)
    #[arg(long = "aom_ctc", value_name = "VERSION", hide = true)]
    aom_ctc: Option<String>,
    /// libvmaf's Netflix CTC presets (they need features vmafx does not compute yet)
    #[arg(long = "nflx_ctc", value_name = "VERSION", hide = true)]
    nflx_ctc: Option<String>,

    /// No prediction: extract features only (no default model, no score line)
    #[arg(short = 'n', long = "no_prediction", visible_alias = "no-prediction")]
    no_prediction: bool,
    /// No progress meter; with --output, no score line either
    #[arg(short = 'q', long)]
    quiet: bool,
    /// Print the version and exit
    #[arg(short = 'v', long, action = ArgAction::SetTrue)]
    version: bool,
    /// Print help
    #[arg(long, action = ArgAction::Help)]
    help: Option<bool>,
}

fn log_format(cli: &Cli) -> LogFormat {
    if cli.json {
        LogFormat::Json
    } else if cli.csv {
        LogFormat::Csv
    } else if cli.sub {
        LogFormat::Sub
    } else if cli.xml {
        LogFormat::Xml
    } else {
        cli.output
            .as_deref()
            .and_then(|p| p.extension())
            .and_then(|e| LogFormat::parse(&e.to_string_lossy().to_ascii_lowercase()))
            .unwrap_or(LogFormat::Xml)
    }
}

fn cpu_level(cli: &Cli) -> Result<CpuLevel, Error> {
    let mut level = CpuLevel::detect();
    if let Some(name) = &cli.cpu_level {
        let cap = CpuLevel::parse(name)
            .ok_or_else(|| Error::invalid(format!("--cpu-level {name}: expected scalar, avx2, avx512 or avx512vnni")))?;
        level = level.min(cap);
    }
    if let Some(mask) = &cli.cpumask {
        let mask = parse_c_unsigned(mask)
            .ok_or_else(|| Error::invalid(format!("--cpumask {mask}: expected an integer")))?;
        // libvmaf's VMAF_X86_CPU_FLAG_AVX2 = 1 << 3, AVX512 = 1 << 4,
        // AVX512ICL (Ice Lake's additions, VNNI among them) = 1 << 5.
        if mask & (1 << 3) != 0 {
            level = CpuLevel::Scalar;
        } else if mask & (1 << 4) != 0 {
            level = level.min(CpuLevel::Avx2);
        } else if mask & (1 << 5) != 0 {
            level = level.min(CpuLevel::Avx512);
        }
    }
    Ok(level)
}

/// `--device cpu|cuda[:N]|hip[:N]`.
fn device_choice(cli: &Cli) -> Result<DeviceChoice, Error> {
    cli.device.as_deref().map_or(Ok(DeviceChoice::Cpu), parse_device)
}

/// The raw-yuv description, if any of its options were given (libvmaf's
/// `use_yuv`: then all four are required).
fn raw_format(cli: &Cli) -> Result<Option<RawFormat>, Error> {
    if cli.width.is_none() && cli.height.is_none() && cli.pixel_format.is_none() && cli.bitdepth.is_none() {
        return Ok(None);
    }
    let (Some(w), Some(h), Some(p)) = (cli.width, cli.height, cli.pixel_format.as_deref()) else {
        return Err(Error::invalid(
            "raw .yuv input needs all of --width, --height, --pixel_format and --bitdepth",
        ));
    };
    if let Some(b) = cli.bitdepth {
        if ![8, 10, 12, 16].contains(&b) {
            return Err(Error::invalid(format!("--bitdepth {b}: expected 8, 10, 12 or 16")));
        }
    }
    RawFormat::from_options(w, h, p, cli.bitdepth).map(Some)
}

/// The progress line on a terminal's stderr: frames read, frames per
/// second of frames scored.
struct Progress {
    enabled: bool,
    start: Instant,
}

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl Progress {
    fn show(&self, read: u32, scored: u32, done: bool) {
        if !self.enabled {
            return;
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        let fps = if elapsed > 0.0 { scored as f64 / elapsed } else { 0.0 };
        let spinner = if done { " " } else { SPINNER[read as usize % SPINNER.len()] };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{read} frame{} {spinner} {fps:.2} FPS\x1b[K{}",
            if read == 1 { " " } else { "s" },
            if done { "\n" } else { "" }
        );
        let _ = err.flush();
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    if cli.aom_ctc.is_some() || cli.nflx_ctc.is_some() {
        return Err(Error::NotSupported(
            "--aom_ctc and --nflx_ctc presets need ciede, float_ssim, float_ms_ssim and psnr_hvs, which vmafx does not compute yet".into(),
        ));
    }
    let reference = cli
        .reference
        .clone()
        .ok_or_else(|| Error::invalid("the reference .y4m or .yuv (-r/--reference) is required"))?;
    let distorted = cli
        .distorted
        .clone()
        .ok_or_else(|| Error::invalid("the distorted .y4m or .yuv (-d/--distorted) is required"))?;
    let raw = raw_format(&cli)?;
    let cpu = cpu_level(&cli)?;
    let device = device_choice(&cli)?;

    let mut model_specs = cli.model.iter().map(|m| parse_model(m)).collect::<Result<Vec<_>, _>>()?;
    if model_specs.is_empty() && !cli.no_prediction {
        model_specs.push(parse_model(&format!("version={DEFAULT_MODEL}"))?);
    }
    for (i, a) in model_specs.iter().enumerate() {
        if model_specs[..i].iter().any(|b| b.config.name == a.config.name) {
            return Err(Error::invalid(format!(
                "two models are named \"{}\": each model should be uniquely named (--model ...:name=LABEL)",
                a.config.name.as_deref().unwrap_or("vmaf")
            )));
        }
    }
    let features = cli.feature.iter().map(|f| parse_feature(f)).collect::<Result<Vec<_>, _>>()?;
    if model_specs.is_empty() && features.is_empty() {
        return Err(Error::invalid("nothing to compute: --no_prediction without --model or --feature"));
    }

    // Inputs are checked before models load, as libvmaf's tool does.
    let mut ref_in = io::open(&reference, raw)?;
    let mut dist_in = io::open(&distorted, raw)?;
    check_compatible(ref_in.as_ref(), dist_in.as_ref())?;
    let skipped = ref_in.skip_frames(cli.frame_skip_ref)?;
    if skipped < cli.frame_skip_ref {
        return Err(Error::input(
            ref_in.path(),
            format!("has {skipped} frames, fewer than --frame_skip_ref {}", cli.frame_skip_ref),
        ));
    }
    let skipped = dist_in.skip_frames(cli.frame_skip_dist)?;
    if skipped < cli.frame_skip_dist {
        return Err(Error::input(
            dist_in.path(),
            format!("has {skipped} frames, fewer than --frame_skip_dist {}", cli.frame_skip_dist),
        ));
    }

    // The log file is opened before scoring, so a bad path fails fast.
    let mut log_file = cli
        .output
        .as_deref()
        .map(|p| LogStream::create(p, log_format(&cli), cli.subsample.max(1)))
        .transpose()?;
    let result = score(
        &cli,
        ContextConfig { threads: cli.threads, subsample: cli.subsample.max(1), cpu, device },
        &model_specs,
        features,
        ref_in.as_mut(),
        dist_in.as_mut(),
        log_file.as_mut(),
    );
    if let (Err(_), Some(log)) = (&result, log_file) {
        log.discard_unless_finished();
    }
    result
}

/// Scores the inputs, prints the score lines and writes the log. On an
/// error after scoring began, the log still gets every frame scored before
/// it, marked incomplete, and the error is returned.
fn score(
    cli: &Cli,
    config: ContextConfig,
    model_specs: &[ModelArg],
    features: Vec<(String, FeatureOptions)>,
    ref_in: &mut dyn FrameReader,
    dist_in: &mut dyn FrameReader,
    mut log_file: Option<&mut LogStream>,
) -> Result<(), Error> {
    let mut ctx = Context::new(config)?;
    let mut labels = Vec::new();
    for spec in model_specs {
        let model = match (&spec.version, &spec.path) {
            (Some(v), _) => Model::builtin(v, &spec.config),
            (None, Some(p)) => Model::from_path(p, &spec.config),
            (None, None) => unreachable!("parse_model requires version or path"),
        }
        .map_err(|e| prefixed(e, &format!("loading model {}", spec.label)))?;
        let bootstrap = model.bootstrap_names().count() > 0;
        labels.push((spec.label.clone(), model.name().to_owned(), bootstrap));
        ctx.use_model(model)?;
    }
    for (name, options) in features {
        ctx.use_feature(&name, options)?;
    }

    let stderr_tty = std::io::stderr().is_terminal();
    if stderr_tty && !cli.quiet {
        eprintln!(
            "vmafx {} (libvmaf {} bit-exact)",
            env!("CARGO_PKG_VERSION"),
            vmafx::REFERENCE_LIBVMAF_VERSION
        );
    }
    let progress = Progress { enabled: stderr_tty && !cli.quiet, start: Instant::now() };
    let start = Instant::now();
    let fed = feed(cli, &mut ctx, ref_in, dist_in, &progress, log_file.as_deref_mut());
    let outcome = fed.and_then(|frames| {
        ctx.flush().map_err(|e| match e {
            Error::InvalidArgument(m) if frames == 0 => {
                Error::input(ref_in.path(), format!("no frames to score ({m})"))
            }
            other => other,
        })?;
        Ok(frames)
    });
    let frames = match outcome {
        Ok(frames) => frames,
        Err(fault) => {
            if ctx.frames_in() > 0 {
                if let Some(log) = log_file {
                    keep_partial_log(cli, &mut ctx, log, &fault, ref_in, start)?;
                }
            }
            return Err(fault);
        }
    };
    progress.show(frames, frames, true);
    let fps = frames as f64 / start.elapsed().as_secs_f64().max(1e-9);

    // libvmaf's tool: the score line unless quiet with an output file.
    let print_scores = !cli.no_prediction && (!cli.quiet || cli.output.is_none());
    if print_scores {
        let mut out = std::io::stdout().lock();
        for (label, name, _) in &labels {
            let score = ctx.pooled(name, PoolMethod::Mean, 0, frames - 1)?;
            writeln!(out, "{label}: {score:.6}").map_err(|e| Error::io("<stdout>", e))?;
        }
        // Then each model collection's pooled statistics, as libvmaf's tool.
        for (label, name, _) in labels.iter().filter(|l| l.2) {
            let pooled = |suffix: &str| ctx.pooled(&format!("{name}{suffix}"), PoolMethod::Mean, 0, frames - 1);
            let (bagging, lo, hi) = (pooled("_bagging")?, pooled("_ci_p95_lo")?, pooled("_ci_p95_hi")?);
            let stddev = pooled("_stddev")?;
            writeln!(out, "{label}: {bagging:.6}, ci.p95: [{lo:.6}, {hi:.6}], stddev: {stddev:.6}")
                .map_err(|e| Error::io("<stdout>", e))?;
        }
    }

    if let Some(log) = log_file {
        log.write_frames(ctx.collector(), ctx.frames_final())?;
        let head = (ref_in.width(), ref_in.height(), Some(fps));
        log.finish(ctx.collector(), ctx.running_pools(), head, None)?;
    }
    if let Some(path) = &cli.plot {
        let models: Vec<String> = labels.iter().map(|(_, name, _)| name.clone()).collect();
        let features = plot::default_features(ctx.collector(), &models);
        let spec = PlotSpec { models: &models, features: &features, frames, subsample: config_subsample(cli), worst: 5 };
        std::fs::write(path, plot::render_svg(ctx.collector(), &spec)).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn config_subsample(cli: &Cli) -> u32 {
    cli.subsample.max(1)
}

/// Frames whose values are dropped at once, once logged.
const RETIRE_BATCH: u32 = 64;

/// Logs the frames whose values became final, then drops their values
/// from the context (in batches): memory stays flat over a long stream.
/// Pooled values stay available ([`Context::pooled`] over all frames).
fn log_final_frames(ctx: &mut Context, log: Option<&mut LogStream>, keep_all: bool) -> Result<(), Error> {
    let releasable = match log {
        Some(log) => {
            log.write_frames(ctx.collector(), ctx.frames_final())?;
            log.frames_written()
        }
        None => ctx.frames_final(),
    };
    if !keep_all && releasable >= ctx.collector().first_kept() + RETIRE_BATCH {
        ctx.retire_before(releasable);
    }
    Ok(())
}

/// Reads frame pairs and pushes them until the inputs end (or
/// `--frame_cnt`); returns the frames pushed.
fn feed(
    cli: &Cli,
    ctx: &mut Context,
    ref_in: &mut dyn FrameReader,
    dist_in: &mut dyn FrameReader,
    progress: &Progress,
    mut log: Option<&mut LogStream>,
) -> Result<u32, Error> {
    let mut frames = 0u32;
    loop {
        // 0 means no limit, as in libvmaf.
        if cli.frame_cnt.is_some_and(|n| n > 0 && frames >= n) {
            return Ok(frames);
        }
        let r = ref_in.read_source()?;
        let d = dist_in.read_source()?;
        let (r, d) = match (r, d) {
            (None, None) => return Ok(frames),
            (Some(r), Some(d)) => (r, d),
            (None, Some(_)) => return Err(ended_early(ref_in, dist_in, frames)),
            (Some(_), None) => return Err(ended_early(dist_in, ref_in, frames)),
        };
        if let Some(signal) = stop_requested() {
            return Err(Error::Interrupted(format!("{signal} after {frames} frames")));
        }
        ctx.push(r, d)?;
        frames += 1;
        log_final_frames(ctx, log.as_deref_mut(), cli.plot.is_some())?;
        progress.show(frames, ctx.frames_committed(), false);
    }
}

/// After `fault`: finishes the frames scored before it and writes their
/// log, marked incomplete, saying so on stderr.
fn keep_partial_log(
    cli: &Cli,
    ctx: &mut Context,
    log: &mut LogStream,
    fault: &Error,
    ref_in: &dyn FrameReader,
    start: Instant,
) -> Result<(), Error> {
    let frames = ctx.flush_partial()?;
    if frames == 0 {
        return Ok(());
    }
    let fps = frames as f64 / start.elapsed().as_secs_f64().max(1e-9);
    log.write_frames(ctx.collector(), frames)?;
    let head = (ref_in.width(), ref_in.height(), Some(fps));
    log.finish(ctx.collector(), ctx.running_pools(), head, Some(&fault.to_string()))?;
    eprintln!(
        "vmafx: {}: the log holds the {frames} frame{} scored before the error, marked incomplete{}",
        log.path().display(),
        if frames == 1 { "" } else { "s" },
        match log_format(cli) {
            LogFormat::Json | LogFormat::Xml => " (\"incomplete\")",
            LogFormat::Csv | LogFormat::Sub => " (only here: csv and sub logs have no place for the mark)",
        }
    );
    Ok(())
}

fn check_compatible(r: &dyn FrameReader, d: &dyn FrameReader) -> Result<(), Error> {
    let mut problems = Vec::new();
    if (r.width(), r.height()) != (d.width(), d.height()) {
        problems.push(format!("sizes differ: {}x{} vs {}x{}", r.width(), r.height(), d.width(), d.height()));
    }
    if r.format().chroma != d.format().chroma {
        problems.push(format!(
            "pixel formats differ: {} vs {}",
            r.format().chroma.name(),
            d.format().chroma.name()
        ));
    }
    if r.format().bits != d.format().bits {
        problems.push(format!("bit depths differ: {} vs {}", r.format().bits, d.format().bits));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Mismatch(format!(
        "reference {} ({}x{} {}) and distorted {} ({}x{} {}) are incompatible: {}",
        r.path().display(),
        r.width(),
        r.height(),
        r.format(),
        d.path().display(),
        d.width(),
        d.height(),
        d.format(),
        problems.join("; ")
    )))
}

fn ended_early(short: &dyn FrameReader, long: &dyn FrameReader, frame: u32) -> Error {
    Error::Mismatch(format!(
        "{} ended after {frame} frames, but {} has a frame {frame} (frame counts differ)",
        short.path().display(),
        long.path().display()
    ))
}

/// Set by SIGINT or SIGTERM: the run stops before its next frame and
/// writes the log of the frames scored (marked incomplete). A second
/// signal ends the process at once.
static STOP: [std::sync::OnceLock<Arc<AtomicBool>>; 2] = [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
const STOP_SIGNALS: [(i32, &str); 2] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")];

fn catch_stop_signals() -> Result<(), Error> {
    for (slot, (signal, name)) in STOP.iter().zip(STOP_SIGNALS) {
        let flag = slot.get_or_init(|| Arc::new(AtomicBool::new(false)));
        let err = |e| Error::Internal(format!("catching {name}: {e}"));
        // Registered first, so it sees the flag as it was before this
        // signal: set means a second signal, which exits (status 1).
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(flag)).map_err(err)?;
        signal_hook::flag::register(signal, Arc::clone(flag)).map_err(err)?;
    }
    Ok(())
}

/// The stop signal received, if any.
fn stop_requested() -> Option<&'static str> {
    STOP.iter()
        .zip(STOP_SIGNALS)
        .find(|(slot, _)| slot.get().is_some_and(|f| f.load(Ordering::Relaxed)))
        .map(|(_, (_, name))| name)
}

/// The built-in models and feature extractors, with each extractor's
/// options, for `--help` (from the library's own lists, so always current).
fn catalogue() -> String {
    let mut text = String::from("Built-in models (--model version=NAME):\n");
    text.push_str(&wrapped("  ", Model::builtin_versions(), 2));
    text.push_str("\nFeatures (--feature NAME[=opt=val:...]) and their options:\n");
    for d in vmafx::internals::feature::REGISTRY {
        let options: Vec<&str> = d.options.iter().map(|o| o.name).collect();
        text.push_str(&wrapped(&format!("  {:<15} ", d.name), &options, 18));
    }
    text
}

/// `words` comma-separated after `first`, lines kept within 100 columns,
/// continuation lines indented by `indent`.
fn wrapped(first: &str, words: &[&str], indent: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_owned();
    for (i, w) in words.iter().enumerate() {
        let piece = if i + 1 < words.len() { format!("{w},") } else { (*w).to_owned() };
        if line.len() + piece.len() + 1 > 100 && !line.trim().is_empty() && i > 0 {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
        }
        line.push_str(&piece);
        line.push(' ');
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

fn main() -> ExitCode {
    if let Err(e) = catch_stop_signals() {
        eprintln!("vmafx: error: {e}");
        return ExitCode::FAILURE;
    }
    let parsed = Cli::command()
        .after_help(catalogue())
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    if cli.version {
        println!(
            "vmafx {} (bit-exact with libvmaf {})",
            env!("CARGO_PKG_VERSION"),
            vmafx::REFERENCE_LIBVMAF_VERSION
        );
        return ExitCode::SUCCESS;
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Interrupted(what)) => {
            eprintln!("vmafx: interrupted by {what}");
            // 128 + the signal's number, as a shell reports a process the
            // signal ended.
            ExitCode::from(if what.starts_with("SIGTERM") { 128 + 15 } else { 128 + 2 })
        }
        Err(e) => {
            eprintln!("vmafx: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--help`'s text for --model, with the built-in models as the library
/// lists them.
fn model_long_help() -> String {
    format!(
        "Model, colon-delimited: version=NAME (built-in) or path=FILE (JSON), [name=LABEL] \
         [enable_transform] [disable_clip] [EXTRACTOR.OPTION=VALUE (a feature overload, e.g. \
         vif.vif_enhn_gain_limit=1.0)]; repeatable. Default: version=vmaf_v0.6.1\n\
         Built-in: {}",
        vmafx::Model::builtin_versions().join(", ")
    )
}

/// `--help`'s text for --feature, with every extractor of the registry.
fn feature_long_help() -> String {
    let names: Vec<&str> = vmafx::internals::feature::REGISTRY.iter().map(|d| d.name).collect();
    format!(
        "Additional feature: NAME[=opt=val:opt=val] (e.g. psnr, psnr=enable_chroma=false, \
         cambi=full_ref=true); repeatable\n\
         Extractors: {}",
        names.join(", ")
    )
}
