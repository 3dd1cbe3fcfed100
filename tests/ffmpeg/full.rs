//! vmafx in a full-featured FFmpeg 8.1, configured as a pipeline builds
//! it (GPL, shared libraries, x264, x265, dav1d, ... from Debian's -dev
//! packages) against the prefix `scripts/install` writes: the 8.1-full line
//! of scripts/ffmpeg-build, installed into
//! `${VMAFX_BUILD:-build}/ffmpeg-8.1-full/install` (or
//! `$VMAFX_FFMPEG_FULL_DIR`).
//!
//! That FFmpeg encodes a generated source with x264 into .mp4 and with x265
//! into .mkv, then scores each encode against the source as people run it
//! (`ffmpeg -i encode -i source -lavfi "[0:v][1:v]vmafx"`). The per-frame
//! values must equal, as f64 bits, the filter's values on the same frames
//! decoded by that FFmpeg into y4m, and the core's own values on those y4m
//! frames. Missing, each test says SKIPPED; with VMAFX_REQUIRE_FFMPEG=1 it
//! fails instead.


use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::ffmpeg::*;
use vmafx::OwnedPicture;
use vmafx::io::Y4mReader;

const FRAMES: usize = 24;

/// The installed full build: (bin/ffmpeg, lib).
fn full_build() -> Option<(PathBuf, PathBuf)> {
    let dir = find_tool("VMAFX_FFMPEG_FULL_DIR", "ffmpeg-8.1-full/install")?;
    let bin = dir.join("bin/ffmpeg");
    assert!(bin.exists(), "{} has no bin/ffmpeg", dir.display());
    Some((bin, dir.join("lib")))
}

/// Runs the shared-library ffmpeg with `args`; panics with its stderr on failure.
fn run(bin: &Path, lib: &Path, args: &[&str]) -> String {
    let out = Command::new(bin)
        .env("LD_LIBRARY_PATH", lib)
        .args(["-nostdin", "-hide_banner", "-nostats", "-y"])
        .args(args)
        .output()
        .expect("running ffmpeg");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ffmpeg {args:?} failed:\n{stderr}");
    stderr
}

/// vmafx's per-frame metadata for `dist` scored against `reference`.
fn filter_scores(bin: &Path, lib: &Path, dir: &Path, dist: &Path, reference: &Path, tag: &str) -> Scores {
    let meta = dir.join(format!("{tag}.meta.txt"));
    let graph = format!("[0:v][1:v]vmafx=feature=name=psnr,metadata=mode=print:file={}", meta.display());
    run(bin, lib, &["-i", path(dist), "-i", path(reference), "-lavfi", &graph, "-f", "null", "-"]);
    let (n, scores, _) = read_metadata(&meta, "lavfi.vmafx.");
    assert_eq!(n as usize, FRAMES, "{tag}: frames through vmafx");
    scores
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn read_y4m(p: &Path) -> Vec<OwnedPicture> {
    let mut r = Y4mReader::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let h = r.header().clone();
    let mut out = Vec::new();
    loop {
        let mut pic = OwnedPicture::new(h.format, h.width, h.height).unwrap();
        if !r.read_frame_into(&mut pic).unwrap() {
            break;
        }
        out.push(pic);
    }
    out
}

/// Encodes the source with `codec`, then scores the encode three ways.
fn encoded_equals_y4m(name: &str, encode: &[&str]) {
    let Some((bin, lib)) = full_build() else { return };
    let dir = workdir(&format!("full-{name}"));
    let source = dir.join("source.y4m");
    let src = "testsrc2=size=352x288:rate=25,format=yuv420p,noise=alls=4:allf=t";
    run(&bin, &lib, &["-f", "lavfi", "-i", src, "-frames:v", &FRAMES.to_string(), path(&source)]);
    let encoded = dir.join(name);
    let mut args = vec!["-i", path(&source)];
    args.extend_from_slice(encode);
    args.push(path(&encoded));
    run(&bin, &lib, &args);
    let decoded = dir.join("decoded.y4m");
    run(&bin, &lib, &["-i", path(&encoded), "-f", "yuv4mpegpipe", path(&decoded)]);

    let from_encode = filter_scores(&bin, &lib, &dir, &encoded, &source, "encoded");
    let from_y4m = filter_scores(&bin, &lib, &dir, &decoded, &source, "y4m");
    assert!(from_encode.contains_key("vmaf") && from_encode.contains_key("psnr_y"), "{name}: {:?}", from_encode.keys());
    assert_same_bits(name, ("encoded input", &from_encode), ("decoded y4m input", &from_y4m));

    let (refs, dists) = (read_y4m(&source), read_y4m(&decoded));
    assert_eq!((refs.len(), dists.len()), (FRAMES, FRAMES), "{name}: y4m frames");
    let frames: Vec<_> = refs.into_iter().zip(dists).collect();
    let spec = Spec {
        models: vec![("vmaf_v0.6.1".into(), None)],
        features: vec![("psnr".into(), vec![])],
        ..Default::default()
    };
    assert_same_bits(name, ("encoded input", &from_encode), ("core on the y4m frames", &spec.core_scores(&frames)));
    // An encode that changed nothing would prove little.
    assert!(from_encode["vmaf"].values().any(|v| *v < 99.0), "{name}: the encode is lossless? {:?}", from_encode["vmaf"]);
}

#[test]
fn x264_mp4_scores_as_its_y4m() {
    encoded_equals_y4m("x264.mp4", &["-c:v", "libx264", "-preset", "veryfast", "-crf", "32"]);
}

#[test]
fn x265_mkv_scores_as_its_y4m() {
    encoded_equals_y4m("x265.mkv", &["-c:v", "libx265", "-preset", "ultrafast", "-crf", "32", "-x265-params", "log-level=error"]);
}
