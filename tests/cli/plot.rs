//! `vmafx --plot scores.svg`: the SVG holds every frame's VMAF and the
//! features asked for, marks the worst frames and the pooled values the
//! log holds, and renders in a real browser (Debian's chromium, headless)
//! into a picture that is not blank.


use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::synth::{self, write_y4m};
use vmafx::Chroma;

const FRAMES: usize = 12;

/// A directory per test (tests run in parallel).
fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plot").join(test);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Scores a synthetic pair with PSNR, writing the JSON log and the plot.
fn scored(test: &str) -> (serde_json::Value, String, PathBuf) {
    let d = dir(test);
    let clip = synth::clip(Chroma::Yuv420, 8, 96, 64, FRAMES, 7);
    let (r, s): (Vec<_>, Vec<_>) = clip.iter().map(|(a, b)| (a, b)).unzip();
    write_y4m(&d.join("ref.y4m"), &r);
    write_y4m(&d.join("dist.y4m"), &s);
    let (log, svg) = (d.join("log.json"), d.join("scores.svg"));
    let out = Command::new(env!("CARGO_BIN_EXE_vmafx"))
        .args(["-r", p(&d.join("ref.y4m")), "-d", p(&d.join("dist.y4m")), "--feature", "psnr"])
        .args(["--json", "-o", p(&log), "--plot", p(&svg)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    (log, std::fs::read_to_string(&svg).unwrap(), svg)
}

#[test]
fn the_plot_marks_the_worst_frames_and_the_pooled_values_of_the_log() {
    let (log, svg, _) = scored("marks");
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.trim_end().ends_with("</svg>"));
    assert!(!svg.contains("href") && !svg.contains("<script"), "self-contained");
    // One line per series: VMAF, then psnr_y, psnr_cb, psnr_cr panels.
    let lines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<polyline")).collect();
    assert_eq!(lines.len(), 4, "{svg}");
    for l in &lines {
        assert_eq!(l.split("points=\"").nth(1).unwrap().split_whitespace().count(), FRAMES, "{l}");
    }
    for name in ["psnr_y", "psnr_cb", "psnr_cr"] {
        assert!(svg.contains(&format!(">{name}</text>")), "panel {name}");
    }
    // The five worst VMAF frames of the log, in order, are the circles.
    let mut by_score: Vec<(f64, u64)> = log["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["metrics"]["vmaf"].as_f64().unwrap(), f["frameNum"].as_u64().unwrap()))
        .collect();
    by_score.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let marked: Vec<u64> = svg
        .split("worst frame ")
        .skip(1)
        .map(|s| s.split(':').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(marked, by_score.iter().take(5).map(|s| s.1).collect::<Vec<_>>());
    let mean = log["pooled_metrics"]["vmaf"]["mean"].as_f64().unwrap();
    let hmean = log["pooled_metrics"]["vmaf"]["harmonic_mean"].as_f64().unwrap();
    assert!(svg.contains(&format!("vmaf mean {mean:.3}<")), "pooled mean {mean} in\n{svg}");
    assert!(svg.contains(&format!("vmaf harmonic mean {hmean:.3}<")), "harmonic mean {hmean}");
}

/// Debian's chromium, headless, screenshots `svg` into `png`.
fn screenshot(svg: &Path, png: &Path) {
    let profile = dir("renders").join(format!("chromium-profile-{}", png.file_stem().unwrap().to_string_lossy()));
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        .args(["--disable-component-update", "--no-first-run", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=960,900", &format!("file://{}", svg.display())])
        .output()
        .expect("running chromium (scripts/setup installs it)");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(png.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_plot_renders_in_a_headless_browser_and_is_not_blank() {
    let (_, _, svg) = scored("renders");
    let d = dir("renders");
    // The same canvas with nothing drawn: what "empty" looks like.
    let blank = d.join("blank.svg");
    std::fs::write(&blank, r#"<svg xmlns="http://www.w3.org/2000/svg" width="960" height="900"><rect width="100%" height="100%" fill="white"/></svg>"#).unwrap();
    let (shot, blank_shot) = (d.join("scores.png"), d.join("blank.png"));
    screenshot(&svg, &shot);
    screenshot(&blank, &blank_shot);
    let (n, b) = (std::fs::metadata(&shot).unwrap().len(), std::fs::metadata(&blank_shot).unwrap().len());
    // Lines, text and markers compress far worse than a white page.
    assert!(n > 4 * b && n > 20_000, "the plot's screenshot is {n} bytes, a blank page's {b}");
}
