//! Logs in libvmaf 3.2.0's formats (`output.c`: `vmaf_write_output_xml`,
//! `_json`, `_csv`, `_sub`), byte for byte the same layout and number
//! formatting given the same collector, quirks included:
//!
//! - values print with `%.6f`, or `%.16f` when they have more than six
//!   leading zeros after the decimal point (`count_leading_zeros_d`);
//! - only frames the subsample rate scores are listed, and only those with
//!   at least one value; a feature missing at a frame is left out of that
//!   frame (CSV included, so its columns shift as libvmaf's do);
//! - JSON separates frames with ",\n" whenever the frame number is not 0,
//!   and a NaN or infinite per-frame value is written `null` without the
//!   line break that follows numbers;
//! - pooled metrics are computed over frames 0..frames-1 as
//!   `vmaf_feature_score_pooled` does; a feature missing at a scored frame
//!   gets no pooled values.
//!
//! One deliberate difference: the version field is vmafx's own,
//! [`LOG_VERSION`] ("vmafx-<crate version>"), not libvmaf's version string,
//! so tools can tell who wrote the log. `aggregate_metrics` lists the
//! collector's whole-stream values (PSNR's `enable_apsnr` writes them).

use std::fmt::Write as _;
use std::collections::HashSet;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::feature::naming;
use crate::score::pool::{pool_frames, PoolMethod, RunningPools};
use crate::score::FeatureCollector;
use crate::{Error, Result};

/// The "version" written into logs.
pub const LOG_VERSION: &str = concat!("vmafx-", env!("CARGO_PKG_VERSION"));

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Xml,
    Json,
    Csv,
    Sub,
}

impl LogFormat {
    /// "xml", "json", "csv", "sub" (libvmaf's and FFmpeg's `log_fmt` names).
    pub fn parse(s: &str) -> Option<LogFormat> {
        match s {
            "xml" => Some(LogFormat::Xml),
            "json" => Some(LogFormat::Json),
            "csv" => Some(LogFormat::Csv),
            "sub" => Some(LogFormat::Sub),
            _ => None,
        }
    }
}

/// Everything a log needs besides the format.
pub struct LogInput<'a> {
    pub collector: &'a FeatureCollector,
    /// Frames read (libvmaf's `pic_cnt`).
    pub frames: u32,
    pub subsample: u32,
    pub width: usize,
    pub height: usize,
    /// Frames per second of the run, if measured. `None` writes what
    /// libvmaf writes for a NaN rate: `null` in JSON, `nan` in XML.
    pub fps: Option<f64>,
    /// Why the log stops early (`None` for a complete run). JSON logs get
    /// a top-level key `"incomplete"` and XML logs an attribute
    /// `incomplete` on `<VMAF>`, both with this text: log readers look
    /// up the keys they know (`frames`, `pooled_metrics`; `frames/frame`)
    /// and pass over the rest. CSV and subtitle logs have no such place
    /// (a reader takes every line as a frame), so theirs carry no mark:
    /// the exit status and stderr say it.
    pub incomplete: Option<&'a str>,
}

/// `s` as the inside of a JSON string.
fn json_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// `s` as an XML attribute value (inside double quotes).
fn xml_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A log written as the run goes: each frame as soon as its values are
/// final ([`LogStream::write_frames`]), the pooled values kept running
/// (the context's [`RunningPools`]), so memory does not grow with the
/// stream. The file is created by [`LogStream::create`], before any frame
/// is scored, so a path that cannot be written fails at once.
///
/// libvmaf's XML and JSON logs open with the run's rate (fps), known only
/// at the end: the frames go to the file first, and [`LogStream::finish`]
/// moves them up to put the head before them, then appends the pooled
/// values. The result is byte for byte [`render_log`]'s. An output that
/// cannot be read back and rewritten in place (a pipe, a terminal) keeps
/// the frames in memory until the end instead. A process killed before
/// `finish` leaves the frames without head or tail.
pub struct LogStream {
    path: PathBuf,
    file: File,
    format: LogFormat,
    subsample: u32,
    /// This run created the file (it did not exist before).
    created: bool,
    finished: bool,
    /// The next frame to write (frames before it are written).
    next_frame: u32,
    /// Features that had a value at some frame written (the CSV header
    /// and the pooled metrics list only those).
    with_values: HashSet<String>,
    body: Body,
}

enum Body {
    /// Frames written to the file from offset 0: this many bytes.
    InFile(u64),
    /// Frames kept for the end (an output that cannot be rewritten).
    InMemory(Vec<u8>),
}

impl LogStream {
    /// Creates (or truncates) `path` now.
    pub fn create(path: &Path, format: LogFormat, subsample: u32) -> Result<LogStream> {
        let created = !path.exists();
        let open_rw = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path);
        let (file, body) = match open_rw {
            Ok(f) if f.metadata().is_ok_and(|m| m.is_file()) => (f, Body::InFile(0)),
            Ok(f) => (f, Body::InMemory(Vec::new())),
            // /dev/stdout on a write-only descriptor, and the like.
            Err(_) => (File::create(path).map_err(|e| Error::io(path, e))?, Body::InMemory(Vec::new())),
        };
        Ok(LogStream {
            path: path.to_owned(),
            file,
            format,
            subsample: subsample.max(1),
            created,
            finished: false,
            next_frame: 0,
            with_values: HashSet::new(),
            body,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written so far (`0..frames_written()`): their values may be
    /// retired from the collector.
    pub fn frames_written(&self) -> u32 {
        self.next_frame
    }

    /// Writes frames up to (not including) `upto`, every value of which is
    /// final in `c`.
    pub fn write_frames(&mut self, c: &FeatureCollector, upto: u32) -> Result<()> {
        if upto <= self.next_frame {
            return Ok(());
        }
        let mut text = String::new();
        for i in self.next_frame..upto {
            for name in c.names() {
                if !self.with_values.contains(name) && c.get(name, i).is_some() {
                    self.with_values.insert(name.clone());
                }
            }
            write_frame(&mut text, self.format, c, i, self.subsample);
        }
        self.next_frame = upto;
        match &mut self.body {
            Body::InFile(len) => {
                self.file.write_all_at(text.as_bytes(), *len).map_err(|e| Error::io(&self.path, e))?;
                *len += text.len() as u64;
            }
            Body::InMemory(bytes) => bytes.extend_from_slice(text.as_bytes()),
        }
        Ok(())
    }

    /// Completes the log: `frames` frames (all written), pooled from
    /// `pools`, `c`'s aggregates, the head with `width`, `height`, `fps`,
    /// and the `incomplete` mark if the run stopped early
    /// ([`LogInput::incomplete`]).
    pub fn finish(
        &mut self,
        c: &FeatureCollector,
        pools: &RunningPools,
        head: (usize, usize, Option<f64>),
        incomplete: Option<&str>,
    ) -> Result<()> {
        let (width, height, fps) = head;
        let names: Vec<&str> =
            c.names().iter().map(String::as_str).filter(|n| self.with_values.contains(*n)).collect();
        let mut head_text = String::new();
        write_head(&mut head_text, self.format, &LogHead { width, height, fps, incomplete }, &names);
        let mut tail = String::new();
        let pooled = |name: &str| -> Vec<(PoolMethod, f64)> {
            PoolMethod::ALL
                .iter()
                .map(|&m| pools.pooled(name, m).ok().map(|v| (m, v)))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default()
        };
        write_tail(&mut tail, self.format, &names, pooled, c.aggregates());
        let io = |e| Error::io(&self.path, e);
        match &mut self.body {
            Body::InFile(len) => {
                prepend(&self.file, *len, head_text.as_bytes()).map_err(io)?;
                let end = *len + head_text.len() as u64;
                self.file.write_all_at(tail.as_bytes(), end).map_err(io)?;
                self.file.set_len(end + tail.len() as u64).map_err(io)?;
            }
            Body::InMemory(bytes) => {
                let mut w = std::io::BufWriter::new(&self.file);
                w.write_all(head_text.as_bytes())
                    .and_then(|_| w.write_all(bytes))
                    .and_then(|_| w.write_all(tail.as_bytes()))
                    .and_then(|_| w.flush())
                    .map_err(io)?;
            }
        }
        self.finished = true;
        Ok(())
    }

    /// For a run that wrote no log (it failed before scoring a frame):
    /// removes the file if this run created it, never a file that was
    /// there, nor /dev/stdout and the like.
    pub fn discard_unless_finished(self) {
        if !self.finished && self.created && self.path.metadata().is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Moves the `len` bytes at the start of `file` up by `head.len()` and
/// writes `head` before them, a chunk at a time from the end (the copy
/// never overwrites bytes still to be moved).
fn prepend(file: &File, len: u64, head: &[u8]) -> std::io::Result<()> {
    let shift = head.len() as u64;
    let mut chunk = vec![0u8; (1 << 20).min(len as usize)];
    let mut end = len;
    while end > 0 {
        let n = end.min(chunk.len() as u64) as usize;
        let start = end - n as u64;
        file.read_exact_at(&mut chunk[..n], start)?;
        file.write_all_at(&chunk[..n], start + shift)?;
        end = start;
    }
    file.write_all_at(head, 0)
}

/// The log of `input` in `format`, as text: its head, every frame listed,
/// its tail, the pieces [`LogStream`] writes as a run goes.
pub fn render_log(format: LogFormat, input: &LogInput<'_>) -> String {
    let c = input.collector;
    // A name declared but never written has no counterpart in libvmaf's
    // collector (its vectors start with a value): leave it out.
    let names: Vec<&str> = c
        .names()
        .iter()
        .map(String::as_str)
        .filter(|n| c.column(n).is_some_and(|col| col.iter().any(Option::is_some)))
        .collect();
    let head = LogHead {
        width: input.width,
        height: input.height,
        fps: input.fps,
        incomplete: input.incomplete,
    };
    let mut out = String::new();
    write_head(&mut out, format, &head, &names);
    for i in 0..c.frame_count() {
        write_frame(&mut out, format, c, i, input.subsample);
    }
    // libvmaf pools over 0..=pic_cnt - 1 in unsigned arithmetic.
    let last = input.frames.wrapping_sub(1);
    let pooled = |name: &str| -> Vec<(PoolMethod, f64)> {
        PoolMethod::ALL
            .iter()
            .map(|&m| pool_frames(|i| c.get(name, i), m, 0, last, input.subsample).ok().map(|v| (m, v)))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default()
    };
    write_tail(&mut out, format, &names, pooled, c.aggregates());
    out
}

/// What a log's head says besides the format: it comes before the frames
/// but holds the run's rate, so [`LogStream`] writes it last.
struct LogHead<'a> {
    width: usize,
    height: usize,
    fps: Option<f64>,
    incomplete: Option<&'a str>,
}

/// libvmaf's `vmaf_feature_name_alias`.
pub fn log_name(name: &str) -> &str {
    naming::alias(name)
}


/// C's `(int)x` as x86-64 compiles it (`cvttsd2si`): out of range and NaN
/// give INT_MIN.
fn c_int_trunc(x: f64) -> i32 {
    if x.is_nan() || x >= 2147483648.0 || x <= -2147483649.0 {
        i32::MIN
    } else {
        x.trunc() as i32
    }
}

/// libvmaf's `count_leading_zeros_d`: zeros after the decimal point
/// before the first non-zero digit of the fractional part.
fn count_leading_zeros(x: f64) -> u32 {
    let x = if x < 0.0 { x.abs() } else { x };
    let int_part = c_int_trunc(x);
    let mut fractional = x - int_part as f64;
    let mut count = 0;
    while fractional < 1.0 && fractional != 0.0 {
        fractional *= 10.0;
        count += 1;
    }
    count
}

/// glibc's `printf("%.*f", precision, x)`.
fn c_fixed(x: f64, precision: usize) -> String {
    crate::cfmt::fixed(x, precision)
}

/// A value as libvmaf prints it: `%.6f`, or `%.16f` past six leading zeros.
fn c_value(x: f64) -> String {
    if count_leading_zeros(x) <= 6 {
        c_fixed(x, 6)
    } else {
        c_fixed(x, 16)
    }
}

/// C's FP_NORMAL, FP_ZERO or FP_SUBNORMAL.
fn is_finite(x: f64) -> bool {
    x.is_finite()
}

/// Everything before the first frame. `names`: the features with a value
/// (the CSV header lists them).
fn write_head(out: &mut String, format: LogFormat, head: &LogHead<'_>, names: &[&str]) {
    match format {
        LogFormat::Xml => {
            match head.incomplete {
                Some(why) => {
                    let _ = writeln!(out, "<VMAF version=\"{LOG_VERSION}\" incomplete=\"{}\">", xml_escaped(why));
                }
                None => {
                    let _ = writeln!(out, "<VMAF version=\"{LOG_VERSION}\">");
                }
            }
            let _ = writeln!(
                out,
                "  <params qualityWidth=\"{}\" qualityHeight=\"{}\" />",
                head.width as u32 as i32, head.height as u32 as i32
            );
            let _ = writeln!(out, "  <fyi fps=\"{}\" />", c_fixed(head.fps.unwrap_or(f64::NAN), 2));
            out.push_str("  <frames>\n");
        }
        LogFormat::Json => {
            out.push_str("{\n");
            let _ = writeln!(out, "  \"version\": \"{LOG_VERSION}\",");
            if let Some(why) = head.incomplete {
                let _ = writeln!(out, "  \"incomplete\": \"{}\",", json_escaped(why));
            }
            match head.fps {
                Some(fps) if is_finite(fps) => {
                    let _ = writeln!(out, "  \"fps\": {},", c_fixed(fps, 2));
                }
                _ => out.push_str("  \"fps\": null,\n"),
            }
            out.push_str("  \"frames\": [");
        }
        LogFormat::Csv => {
            out.push_str("Frame,");
            for name in names {
                let _ = write!(out, "{},", log_name(name));
            }
            out.push('\n');
        }
        LogFormat::Sub => {}
    }
}

/// Frame `i` as the log lists it: only frames the subsample rate scores,
/// and only those with a value; its values in collector order.
fn write_frame(out: &mut String, format: LogFormat, c: &FeatureCollector, i: u32, subsample: u32) {
    if subsample > 1 && i % subsample != 0 {
        return;
    }
    let values: Vec<(&str, f64)> =
        c.names().iter().filter_map(|n| c.get(n, i).map(|v| (log_name(n), v))).collect();
    if values.is_empty() {
        return;
    }
    match format {
        LogFormat::Xml => {
            let _ = write!(out, "    <frame frameNum=\"{}\" ", i as i32);
            for (name, v) in values {
                let _ = write!(out, "{name}=\"{}\" ", c_value(v));
            }
            out.push_str("/>\n");
        }
        LogFormat::Json => {
            out.push_str(if i > 0 { ",\n" } else { "\n" });
            out.push_str("    {\n");
            let _ = writeln!(out, "      \"frameNum\": {},", i as i32);
            out.push_str("      \"metrics\": {\n");
            let cnt = values.len();
            for (k, (name, v)) in values.into_iter().enumerate() {
                let comma = if k + 1 < cnt { "," } else { "" };
                if is_finite(v) {
                    let _ = writeln!(out, "        \"{name}\": {}{comma}", c_value(v));
                } else {
                    let _ = write!(out, "        \"{name}\": null{comma}");
                }
            }
            out.push_str("      }\n");
            out.push_str("    }");
        }
        LogFormat::Csv => {
            let _ = write!(out, "{},", i as i32);
            for (_, v) in values {
                let _ = write!(out, "{},", c_value(v));
            }
            out.push('\n');
        }
        LogFormat::Sub => {
            let _ = write!(out, "{{{}}}{{{}}}frame: {}|", i as i32, (i as i32).wrapping_add(1), i as i32);
            for (name, v) in values {
                let _ = write!(out, "{name}: {}|", c_value(v));
            }
            out.push('\n');
        }
    }
}

/// Everything after the last frame: pooled values of `names` in libvmaf's
/// method order (empty where libvmaf's pooling fails), then aggregates.
fn write_tail(
    out: &mut String,
    format: LogFormat,
    names: &[&str],
    pooled: impl Fn(&str) -> Vec<(PoolMethod, f64)>,
    aggregates: &[(String, f64)],
) {
    match format {
        LogFormat::Xml => {
            out.push_str("  </frames>\n");
            out.push_str("  <pooled_metrics>\n");
            for name in names {
                let _ = write!(out, "    <metric name=\"{}\" ", log_name(name));
                for (m, v) in pooled(name) {
                    let _ = write!(out, "{}=\"{}\" ", m.name(), c_value(v));
                }
                out.push_str("/>\n");
            }
            out.push_str("  </pooled_metrics>\n");
            out.push_str("  <aggregate_metrics ");
            for (name, v) in aggregates {
                let _ = write!(out, "{}=\"{}\" ", name, c_value(*v));
            }
            out.push_str("/>\n");
            out.push_str("</VMAF>\n");
        }
        LogFormat::Json => {
            out.push_str("\n  ],\n");
            out.push_str("  \"pooled_metrics\": {");
            for (j, name) in names.iter().enumerate() {
                out.push_str(if j > 0 { ",\n" } else { "\n" });
                let _ = write!(out, "    \"{}\": {{", log_name(name));
                for (k, (m, v)) in pooled(name).into_iter().enumerate() {
                    out.push_str(if k > 0 { ",\n" } else { "\n" });
                    if is_finite(v) {
                        let _ = write!(out, "      \"{}\": {}", m.name(), c_value(v));
                    } else {
                        let _ = write!(out, "      \"{}\": null", m.name());
                    }
                }
                out.push('\n');
                out.push_str("    }");
            }
            out.push_str("\n  },\n");
            out.push_str("  \"aggregate_metrics\": {");
            for (i, (name, v)) in aggregates.iter().enumerate() {
                if is_finite(*v) {
                    let _ = write!(out, "\n    \"{}\": {}", name, c_value(*v));
                } else {
                    let _ = write!(out, "\n    \"{}\": null", name);
                }
                out.push_str(if i + 1 < aggregates.len() { "," } else { "" });
            }
            out.push_str("\n  }\n");
            out.push_str("}\n");
        }
        LogFormat::Csv | LogFormat::Sub => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn snprintf(buf: *mut std::os::raw::c_char, n: usize, fmt: *const std::os::raw::c_char, ...) -> i32;
    }

    fn glibc_fixed(x: f64, precision: i32) -> String {
        let mut buf = vec![0u8; 512];
        // SAFETY: buf holds 512 bytes and snprintf writes at most that many,
        // NUL included; the format takes one int and one double.
        let n = unsafe { snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.*f".as_ptr(), precision, x) };
        assert!(n >= 0 && (n as usize) < buf.len(), "value too long for the test buffer");
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    #[test]
    fn fixed_formatting_matches_glibc() {
        let mut specials = vec![
            0.0, -0.0, 0.5, 1.5, 2.5, -0.5, 0.0078125, 0.0000005, -0.0000005, 1e-7, -1e-20, 1e-300,
            f64::MIN_POSITIVE, 5e-324, 123456789.12345679, 1e22, 1e300, -1e300, 99.9999995,
            0.1234565, 2.0f64.powi(-20), 3.0 * 2.0f64.powi(-21), f64::MAX, f64::INFINITY,
            f64::NEG_INFINITY, f64::NAN, -f64::NAN,
        ];
        // Exact ties at 6 and 16 decimals: k / 2^n.
        for k in 0..300 {
            specials.push(k as f64 / 128.0 / 1000.0);
            specials.push(k as f64 / 2.0f64.powi(40));
        }
        let mut state = 0x9e3779b97f4a7c15u64;
        for _ in 0..20000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            specials.push(f64::from_bits(state));
            specials.push((state >> 11) as f64 / (1u64 << 53) as f64 * 100.0);
        }
        for x in specials {
            for p in [2, 6, 16] {
                assert_eq!(c_fixed(x, p as usize), glibc_fixed(x, p), "{x:e} ({:#x}) at %.{p}f", x.to_bits());
            }
        }
    }

    #[test]
    fn leading_zeros() {
        assert_eq!(count_leading_zeros(0.5), 1);
        assert_eq!(count_leading_zeros(0.001), 3);
        assert_eq!(count_leading_zeros(12.0), 0);
        assert_eq!(count_leading_zeros(1e-7), 7);
        assert_eq!(count_leading_zeros(-1e-7), 7);
        assert_eq!(count_leading_zeros(3e9), 0);
        assert_eq!(count_leading_zeros(f64::NAN), 0);
        assert_eq!(c_value(1e-7), "0.0000001000000000");
        assert_eq!(c_value(0.000001), "0.000001");
    }

    #[test]
    fn declared_but_unwritten_features_are_left_out() {
        let mut c = FeatureCollector::new();
        c.declare("never_written");
        c.append("psnr_y", 0, 1.0).unwrap();
        let input =
            LogInput { collector: &c, frames: 1, subsample: 1, width: 2, height: 2, fps: Some(1.0), incomplete: None };
        assert_eq!(render_log(LogFormat::Csv, &input), "Frame,psnr_y,\n0,1.000000,\n");
    }

    #[test]
    fn incomplete_marks_are_escaped_where_readers_skip_them() {
        let mut c = FeatureCollector::new();
        c.append("psnr_y", 0, 1.0).unwrap();
        let why = "a \"b\" <c> & d\\\n";
        let input =
            LogInput { collector: &c, frames: 1, subsample: 1, width: 2, height: 2, fps: None, incomplete: Some(why) };
        let json: serde_json::Value = serde_json::from_str(&render_log(LogFormat::Json, &input)).unwrap();
        assert_eq!(json["incomplete"], why);
        assert_eq!(json["frames"].as_array().unwrap().len(), 1);
        let xml = render_log(LogFormat::Xml, &input);
        assert!(xml.starts_with(
            "<VMAF version=\"vmafx-"
        ));
        assert!(xml.lines().next().unwrap().ends_with(" incomplete=\"a &quot;b&quot; &lt;c&gt; &amp; d\\&#10;\">"), "{xml}");
        let complete = LogInput { incomplete: None, ..input };
        assert!(!render_log(LogFormat::Json, &complete).contains("incomplete"));
        assert!(!render_log(LogFormat::Xml, &complete).contains("incomplete"));
    }

    #[test]
    fn aliases() {
        assert_eq!(log_name("VMAF_integer_feature_adm2_score"), "integer_adm2");
        assert_eq!(log_name("VMAF_feature_vif_scale0_score"), "vif_scale0");
        assert_eq!(log_name("psnr_y"), "psnr_y");
    }
}
