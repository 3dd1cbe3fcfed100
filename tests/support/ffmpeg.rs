//! FFmpeg in the tests: the system's ffmpeg making encoded clips (the
//! decode chapter); for the filter tests, y4m clips from `support::synth`,
//! running the patched ffmpeg, reading libvmaf's JSON log and the
//! `metadata=print` output, and the core's own values for the same frames.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use vmafx::{Chroma, Context, ContextConfig, FeatureOptions, Model, ModelConfig, OwnedPicture};
use vmafx::internals::feature::{find_extractor, naming};

/// Runs the system's ffmpeg (scripts/setup installs it) quietly,
/// overwriting outputs; panics with its stderr when it fails.
pub fn system_ffmpeg(args: &[&str]) {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(args)
        .output()
        .expect("running ffmpeg (scripts/setup installs it)");
    assert!(out.status.success(), "ffmpeg {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// Per-frame values by metric name (as logs print names).
pub type Scores = BTreeMap<String, BTreeMap<u32, f64>>;

/// Finds an FFmpeg build artefact: `$var`, else `default` under
/// `$VMAFX_BUILD` (scripts/ffmpeg-build's cache, default `build/`). With VMAFX_REQUIRE_FFMPEG=1 a missing one fails the test;
/// otherwise the test says it is skipped, on stderr.
pub fn find_tool(var: &str, default: &str) -> Option<PathBuf> {
    let build = std::env::var_os("VMAFX_BUILD")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("build"));
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| build.join(default));
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "{} not found ({var} unset or wrong): build it with scripts/ffmpeg-build",
        path.display()
    );
    if std::env::var("VMAFX_REQUIRE_FFMPEG").as_deref() == Ok("1") {
        panic!("VMAFX_REQUIRE_FFMPEG=1 but {msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A fresh directory for one test's files.
pub fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffmpeg-filter").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn y4m_tag(chroma: Chroma, bits: u8) -> String {
    let base = match chroma {
        Chroma::Yuv400 => "mono",
        Chroma::Yuv420 => "420",
        Chroma::Yuv422 => "422",
        Chroma::Yuv444 => "444",
    };
    match (chroma, bits) {
        (Chroma::Yuv420, 8) => "420jpeg".into(),
        (_, 8) => base.into(),
        (Chroma::Yuv400, b) => format!("mono{b}"),
        (_, b) => format!("{base}p{b}"),
    }
}

/// Writes pictures as a y4m file (16-bit samples little-endian).
pub fn write_y4m(path: &Path, pics: &[&OwnedPicture]) {
    let f = pics[0].format();
    let (w, h) = (pics[0].width(), pics[0].height());
    let mut out = Vec::new();
    writeln!(out, "YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C{}", y4m_tag(f.chroma, f.bits)).unwrap();
    for p in pics {
        out.extend_from_slice(b"FRAME\n");
        let v = p.view();
        for i in 0..f.chroma.plane_count() {
            let plane = v.plane(i);
            for y in 0..plane.height() {
                if f.bits > 8 {
                    for s in plane.row_u16(y) {
                        out.extend_from_slice(&s.to_le_bytes());
                    }
                } else {
                    out.extend_from_slice(plane.row_u8(y));
                }
            }
        }
    }
    std::fs::write(path, out).unwrap();
}

/// Writes the distorted and reference clips of `frames` ((reference,
/// distorted) pairs) into `dir`; returns (distorted, reference) paths.
pub fn write_clips(dir: &Path, frames: &[(OwnedPicture, OwnedPicture)]) -> (PathBuf, PathBuf) {
    let (d, r) = (dir.join("dist.y4m"), dir.join("ref.y4m"));
    write_y4m(&d, &frames.iter().map(|(_, d)| d).collect::<Vec<_>>());
    write_y4m(&r, &frames.iter().map(|(r, _)| r).collect::<Vec<_>>());
    (d, r)
}

pub struct Run {
    pub ok: bool,
    pub code: Option<i32>,
    pub stderr: String,
}

/// `ffmpeg -i dist -i ref -lavfi GRAPH -f null -` (`extra` before the
/// output). The graph sees the inputs as [0:v] and [1:v].
pub fn ffmpeg(ffmpeg: &Path, dist: &Path, reference: &Path, graph: &str, extra: &[&str]) -> Run {
    ffmpeg_env(ffmpeg, dist, reference, graph, extra, &[])
}

/// [`ffmpeg`] with `env` set for the program.
pub fn ffmpeg_env(ffmpeg: &Path, dist: &Path, reference: &Path, graph: &str, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(ffmpeg);
    cmd.envs(env.iter().copied());
    cmd.args(["-nostdin", "-hide_banner", "-nostats", "-i"])
        .arg(dist)
        .arg("-i")
        .arg(reference)
        .args(["-lavfi", graph])
        .args(extra)
        .args(["-f", "null", "-"]);
    let out = cmd.output().expect("running ffmpeg");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.signal().is_none(),
            "ffmpeg crashed (signal {:?}) on {graph}:\n{stderr}",
            out.status.signal()
        );
    }
    Run { ok: out.status.success(), code: out.status.code(), stderr }
}

/// Per-frame metrics of a libvmaf JSON log, as printed (text).
pub fn json_frames_text(log: &str) -> BTreeMap<u32, BTreeMap<String, String>> {
    let mut out: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
    let mut frame = None;
    let mut in_metrics = false;
    for line in log.lines() {
        let t = line.trim();
        if let Some(n) = t.strip_prefix("\"frameNum\": ") {
            frame = Some(n.trim_end_matches(',').parse::<u32>().unwrap());
            continue;
        }
        if t == "\"metrics\": {" {
            in_metrics = true;
            continue;
        }
        if in_metrics && t.starts_with('}') {
            in_metrics = false;
            continue;
        }
        if in_metrics {
            let (k, v) = t.split_once(": ").unwrap();
            out.entry(frame.unwrap())
                .or_default()
                .insert(k.trim_matches('"').to_owned(), v.trim_end_matches(',').to_owned());
        }
    }
    out
}

/// `metadata=mode=print:file=...` output: keys under `prefix` by frame.
pub fn read_metadata(path: &Path, prefix: &str) -> (u32, Scores, BTreeMap<u32, BTreeMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut scores = Scores::new();
    let mut texts: BTreeMap<u32, BTreeMap<String, String>> = BTreeMap::new();
    let mut frame: Option<u32> = None;
    let mut frames = 0;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("frame:") {
            frame = Some(rest.split_whitespace().next().unwrap().parse().unwrap());
            frames += 1;
        } else if let Some(kv) = line.strip_prefix(prefix) {
            let (k, v) = kv.split_once('=').unwrap();
            let f = frame.unwrap();
            let value: f64 = v.parse().unwrap_or_else(|_| panic!("metadata {k}={v} is not a number"));
            scores.entry(k.to_owned()).or_default().insert(f, value);
            texts.entry(f).or_default().insert(k.to_owned(), v.to_owned());
        }
    }
    (frames, scores, texts)
}

/// libvmaf's `count_leading_zeros_d` (output.c).
fn count_leading_zeros_d(x: f64) -> i32 {
    let x = x.abs();
    let int_part = x as i32;
    let mut frac = x - int_part as f64;
    let mut n = 0;
    while frac < 1.0 && frac != 0.0 {
        frac *= 10.0;
        n += 1;
    }
    n
}

/// A value as libvmaf's JSON log prints it.
pub fn libvmaf_json_number(v: f64) -> String {
    if !v.is_finite() {
        return "null".into();
    }
    if count_leading_zeros_d(v) <= 6 {
        format!("{v:.6}")
    } else {
        format!("{v:.16}")
    }
}

/// What the tests ask for, in the filter's option syntax and for the core.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// (version, name) pairs; the filter gets `version=..:name=..`.
    pub models: Vec<(String, Option<String>)>,
    /// (extractor, options).
    pub features: Vec<(String, Vec<(String, String)>)>,
    pub threads: usize,
    pub subsample: u32,
}

impl Spec {
    /// The filter options (for vmafx and libvmaf alike).
    pub fn filter_options(&self) -> String {
        let models: Vec<String> = self
            .models
            .iter()
            .map(|(v, n)| match n {
                Some(n) => format!("version={v}\\:name={n}"),
                None => format!("version={v}"),
            })
            .collect();
        let features: Vec<String> = self
            .features
            .iter()
            .map(|(n, opts)| {
                let mut s = format!("name={n}");
                for (k, v) in opts {
                    s.push_str(&format!("\\:{k}={v}"));
                }
                s
            })
            .collect();
        let mut o = format!("model='{}'", models.join("|"));
        if !features.is_empty() {
            o.push_str(&format!(":feature='{}'", features.join("|")));
        }
        o.push_str(&format!(":n_threads={}:n_subsample={}", self.threads, self.subsample.max(1)));
        o
    }

    /// The names (libvmaf's, unaliased) of every value the core writes for
    /// this spec.
    pub fn core_names(&self, frames: &[(OwnedPicture, OwnedPicture)]) -> Vec<String> {
        self.core_context(frames).collector().names().to_vec()
    }

    /// The core's values for `frames`, by printed name.
    pub fn core_scores(&self, frames: &[(OwnedPicture, OwnedPicture)]) -> Scores {
        let ctx = self.core_context(frames);
        let mut out = Scores::new();
        for name in ctx.collector().names() {
            for i in 0..frames.len() as u32 {
                if let Some(v) = ctx.score_at(name, i) {
                    out.entry(naming::alias(name).to_owned()).or_default().insert(i, v);
                }
            }
        }
        out
    }

    /// The core, run over `frames` with this spec.
    fn core_context(&self, frames: &[(OwnedPicture, OwnedPicture)]) -> Context {
        let mut ctx = Context::new(ContextConfig {
            threads: self.threads,
            subsample: self.subsample.max(1),
            ..ContextConfig::default()
        })
        .unwrap();
        for (v, n) in &self.models {
            let cfg = ModelConfig { name: n.clone(), ..ModelConfig::default() };
            ctx.use_model(Model::builtin(v, &cfg).unwrap_or_else(|e| panic!("model {v}: {e}")))
                .unwrap();
        }
        for (name, opts) in &self.features {
            let d = find_extractor(name).unwrap();
            let mut o = FeatureOptions::new();
            for (k, v) in opts {
                o.set_text(d.options, k, v).unwrap();
            }
            ctx.use_feature(name, o).unwrap();
        }
        for (r, d) in frames {
            ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
        }
        ctx.flush().unwrap();
        ctx
    }
}

/// Asserts two score sets are identical as f64 bits.
pub fn assert_same_bits(case: &str, what: (&str, &Scores), other: (&str, &Scores)) {
    let names_a: Vec<_> = what.1.keys().collect();
    let names_b: Vec<_> = other.1.keys().collect();
    assert_eq!(names_a, names_b, "{case}: metric names, {} vs {}", what.0, other.0);
    for (name, col) in what.1 {
        let col_b = &other.1[name];
        let fa: Vec<_> = col.keys().collect();
        let fb: Vec<_> = col_b.keys().collect();
        assert_eq!(fa, fb, "{case}: frames with {name}, {} vs {}", what.0, other.0);
        for (i, v) in col {
            let w = col_b[i];
            assert_eq!(v.to_bits(), w.to_bits(), "{case}: {name} frame {i}: {} {v:e} vs {} {w:e}", what.0, other.0);
        }
    }
}
