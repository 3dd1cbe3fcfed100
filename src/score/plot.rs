//! A picture of a run: per-frame model scores and features over time as a
//! self-contained SVG (no script, font file or link: any browser opens it),
//! written by `vmafx --plot` and `Result.plot` in Python (docs/cli.md, "--plot").
//!
//! The first panel holds the model scores (0 to 100) with each model's
//! pooled mean and harmonic mean as dashed lines and its worst frames
//! marked; one panel follows per feature, scaled to its own range, with
//! its mean. Frames left out by subsampling are gaps.

use std::fmt::Write;

use super::log::log_name;
use super::pool::{pool_frames, PoolMethod};
use super::FeatureCollector;

/// What to draw.
pub struct PlotSpec<'a> {
    /// Collector names of the model scores ("vmaf", ...), drawn 0 to 100.
    pub models: &'a [String],
    /// Collector names of the features to draw, one panel each.
    pub features: &'a [String],
    /// Frames scored.
    pub frames: u32,
    pub subsample: u32,
    /// How many of the worst frames of each model to mark.
    pub worst: usize,
}

const WIDTH: f64 = 960.0;
const PANEL: f64 = 200.0;
const GAP: f64 = 56.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const COLORS: &[&str] = &["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"];

/// The features worth a panel by default: every column that is neither a
/// model score nor one of VMAF's elementary features (`integer_*`, and
/// the motion SAD they are built from, `VMAF_*`), e.g. what
/// `--feature psnr` or `--feature cambi` added.
pub fn default_features(c: &FeatureCollector, models: &[String]) -> Vec<String> {
    c.names()
        .iter()
        .filter(|n| !models.contains(n))
        .filter(|n| !log_name(n).starts_with("integer_") && !log_name(n).starts_with("VMAF_"))
        .filter(|n| c.column(n).is_some_and(|col| col.iter().any(Option::is_some)))
        .cloned()
        .collect()
}

fn escaped(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One panel's frame: x from the frame index, y from the value.
struct Axes {
    top: f64,
    lo: f64,
    hi: f64,
    frames: u32,
}

impl Axes {
    fn x(&self, frame: u32) -> f64 {
        let span = (self.frames.max(2) - 1) as f64;
        LEFT + (WIDTH - LEFT - RIGHT) * frame as f64 / span
    }
    fn y(&self, v: f64) -> f64 {
        let t = if self.hi > self.lo { (v - self.lo) / (self.hi - self.lo) } else { 0.5 };
        self.top + PANEL * (1.0 - t.clamp(0.0, 1.0))
    }
}

/// The values of `name` as (frame, value), subsampled frames left out.
fn points(c: &FeatureCollector, name: &str, frames: u32) -> Vec<(u32, f64)> {
    (0..frames).filter_map(|i| c.get(name, i).filter(|v| v.is_finite()).map(|v| (i, v))).collect()
}

fn polyline(out: &mut String, axes: &Axes, pts: &[(u32, f64)], color: &str) {
    let mut d = String::new();
    for (i, v) in pts {
        let _ = write!(d, "{:.1},{:.1} ", axes.x(*i), axes.y(*v));
    }
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
        d.trim_end()
    );
}

/// A pooled value as a horizontal line, labelled at the right end above
/// it, or (`left`, so two close values stay legible) at the left below it.
fn level(out: &mut String, axes: &Axes, v: f64, color: &str, dash: &str, label: &str, left: bool) {
    let y = axes.y(v);
    let (x, anchor, ty) = if left { (LEFT + 4.0, "start", y + 12.0) } else { (WIDTH - RIGHT - 2.0, "end", y - 3.0) };
    let _ = writeln!(
        out,
        r#"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-dasharray="{dash}" stroke-width="1"/><text x="{x:.1}" y="{ty:.1}" font-size="11" text-anchor="{anchor}" fill="{color}">{}</text>"#,
        WIDTH - RIGHT,
        escaped(label)
    );
}

fn panel_frame(out: &mut String, axes: &Axes, title: &str) {
    let (top, bottom) = (axes.top, axes.top + PANEL);
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{top}" width="{}" height="{PANEL}" fill="#fafafa" stroke="#888"/><text x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"##,
        WIDTH - LEFT - RIGHT,
        top - 8.0,
        escaped(title)
    );
    for k in 0..=4 {
        let v = axes.lo + (axes.hi - axes.lo) * k as f64 / 4.0;
        let y = axes.y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 4.0,
            y + 3.0,
            short(v)
        );
    }
    let ticks = axes.frames.clamp(1, 10);
    for k in 0..=ticks {
        let frame = ((axes.frames.max(1) - 1) as u64 * k as u64 / ticks as u64) as u32;
        let x = axes.x(frame);
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle">{frame}</text>"#,
            bottom + 13.0
        );
    }
}

fn short(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

fn pooled(c: &FeatureCollector, name: &str, spec: &PlotSpec<'_>, method: PoolMethod) -> Option<f64> {
    pool_frames(|i| c.get(name, i), method, 0, spec.frames.wrapping_sub(1), spec.subsample).ok()
}

/// The SVG of `spec` over `c`.
pub fn render_svg(c: &FeatureCollector, spec: &PlotSpec<'_>) -> String {
    let models: Vec<&String> = spec.models.iter().filter(|m| c.contains(m)).collect();
    let panels = usize::from(!models.is_empty()) + spec.features.len();
    let height = 40.0 + panels as f64 * (PANEL + GAP);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="22" font-size="15">vmafx: {} frames (x: frame number)</text>"#,
        spec.frames
    );
    let mut top = 40.0 + GAP - 16.0;
    if !models.is_empty() {
        let axes = Axes { top, lo: 0.0, hi: 100.0, frames: spec.frames };
        let title = models.iter().map(|m| log_name(m)).collect::<Vec<_>>().join(", ");
        panel_frame(&mut out, &axes, &format!("{title} (per frame; dashed: pooled mean, dotted: harmonic mean)"));
        for (k, name) in models.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let pts = points(c, name, spec.frames);
            polyline(&mut out, &axes, &pts, color);
            let label = log_name(name);
            if let Some(m) = pooled(c, name, spec, PoolMethod::Mean) {
                level(&mut out, &axes, m, color, "6 4", &format!("{label} mean {m:.3}"), false);
            }
            if let Some(h) = pooled(c, name, spec, PoolMethod::HarmonicMean) {
                level(&mut out, &axes, h, color, "2 3", &format!("{label} harmonic mean {h:.3}"), true);
            }
            let mut worst = pts.clone();
            worst.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            for (i, v) in worst.iter().take(spec.worst) {
                let (x, y) = (axes.x(*i), axes.y(*v));
                let _ = writeln!(
                    out,
                    r##"<circle class="worst" cx="{x:.1}" cy="{y:.1}" r="4" fill="none" stroke="#e00" stroke-width="2"><title>{label}: worst frame {i}: {v:.6}</title></circle><text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#e00">{i}</text>"##,
                    y + 15.0
                );
            }
        }
        top += PANEL + GAP;
    }
    for (k, name) in spec.features.iter().enumerate() {
        let pts = points(c, name, spec.frames);
        let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let hi = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if pts.is_empty() { (0.0, 1.0) } else if hi > lo { (lo, hi) } else { (lo - 1.0, hi + 1.0) };
        let pad = (hi - lo) * 0.05;
        let axes = Axes { top, lo: lo - pad, hi: hi + pad, frames: spec.frames };
        panel_frame(&mut out, &axes, log_name(name));
        let color = COLORS[(k + models.len()) % COLORS.len()];
        polyline(&mut out, &axes, &pts, color);
        if let Some(m) = pooled(c, name, spec, PoolMethod::Mean) {
            level(&mut out, &axes, m, color, "6 4", &format!("mean {m:.3}"), false);
        }
        top += PANEL + GAP;
    }
    out.push_str("</svg>\n");
    out
}
