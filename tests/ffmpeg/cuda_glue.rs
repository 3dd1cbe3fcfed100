//! The vmafx filter's CUDA glue (vf_vmafx.c → vmafx_filter_set_cuda_device,
//! CUDA frames) in a real FFmpeg graph, on a machine without a GPU: the
//! FFmpeg 7.1-cuda build (scripts/ffmpeg-build 7.1-cuda) runs against a fake
//! `libcuda.so.1` (tests/ffmpeg_cuda/fake_libcuda.c, built here with cc;
//! host memory as device memory, contexts 0x5eed0001, ...). `hwupload` makes
//! CUDA frames from a test pattern; the tests check what reaches vmafx:
//! the links negotiated as CUDA with their sw_format, the CUcontext and
//! stream from `AVCUDADeviceContext`, one context for both inputs, a
//! mixed CUDA + software pair, and two contexts refused; p010 and nv12 /
//! p016 with a chroma reader (PSNR) accepted, with the importer's library
//! stream made in the frames' context (the fake driver traces it). Scoring
//! itself needs a real GPU (xtask gpu-ffmpeg run): the fake driver runs
//! no kernels and the tests point NVRTC nowhere, so a run ends in the
//! device error of the scoring context on the frames' CUDA context.
//!
//! The ffmpeg program is `$VMAFX_FFMPEG_CUDA` (default
//! `${VMAFX_BUILD:-build}/ffmpeg-7.1-cuda/obj/ffmpeg`). Missing, each test
//! says SKIPPED; with VMAFX_REQUIRE_FFMPEG=1 it fails instead.


use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::ffmpeg::{find_tool, workdir};

/// The fake driver, built once per test binary into its own directory
/// (FFmpeg dlopens `libcuda.so.1` by name: LD_LIBRARY_PATH finds it).
fn fake_driver_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = workdir("fake-libcuda");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ffmpeg_cuda/fake_libcuda.c");
        let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(dir.join("libcuda.so.1"))
            .arg(&src)
            .output()
            .expect("running cc");
        assert!(out.status.success(), "building the fake libcuda: {}", String::from_utf8_lossy(&out.stderr));
        dir
    })
    .clone()
}

struct Run {
    ok: bool,
    stderr: String,
    /// The fake driver's trace of stream and event calls.
    trace: String,
}

/// ffmpeg with two 64x48 test patterns as inputs, `graph` as -lavfi, on
/// the fake driver, at verbose level.
fn run(bin: &Path, graph: &str) -> Run {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let trace = fake_driver_dir().join(format!(
        "trace-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&trace);
    let out = Command::new(bin)
        .env("LD_LIBRARY_PATH", fake_driver_dir())
        .env("VMAFX_FAKE_CUDA_TRACE", &trace)
        // A scoring context that gets as far as compiling kernels fails
        // cleanly instead of finding a real NVRTC.
        .env("VMAFX_NVRTC_LIB", "/nonexistent/libnvrtc.so")
        .env("VMAFX_KERNEL_CACHE", "off")
        .args(["-nostdin", "-hide_banner", "-nostats", "-v", "verbose"])
        .args(["-init_hw_device", "cuda=gpu", "-filter_hw_device", "gpu"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25,trim=end_frame=3"])
        .args(["-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25,trim=end_frame=3,gblur"])
        .args(["-lavfi", graph, "-f", "null", "-"])
        .output()
        .expect("running ffmpeg");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let trace_text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(out.status.signal().is_none(), "ffmpeg crashed on {graph}:\n{stderr}");
    }
    Run { ok: out.status.success(), stderr, trace: trace_text }
}

fn ffmpeg_cuda() -> Option<PathBuf> {
    find_tool("VMAFX_FFMPEG_CUDA", "ffmpeg-7.1-cuda/obj/ffmpeg")
}

/// The run reached the scoring context on the frames' CUDA context (one of
/// the fake driver's) and stopped there: "not supported" before the GPU
/// context lands, a device error (no kernels, no NVRTC) after.
fn assert_scoring_reached_cuda_context(r: &Run, graph: &str) {
    assert!(!r.ok, "the fake driver cannot score, yet ffmpeg succeeded: {graph}\n{}", r.stderr);
    let before_gpu_context = r.stderr.lines().find(|l| l.contains("not supported: scoring on CudaStream { context: "));
    let device_error = r.stderr.lines().find(|l| l.contains("[Parsed_vmafx") && l.contains("device: "));
    match (before_gpu_context, device_error) {
        (Some(line), _) => {
            // The CUcontext FFmpeg's device made: 0x5eed0001.. (decimal in
            // the Debug print), stream NULL (FFmpeg's default stream).
            let ctx: u64 = line.split("context: ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
            assert_eq!(ctx & !0xffff, 0x5eed_0000, "{line}");
            assert!(line.contains("stream: 0 }"), "{line}");
        }
        (None, Some(line)) => {
            // The fake driver loads (every symbol vmafx needs is there):
            // the error is the scoring context's, on FFmpeg's context and
            // stream, not the driver's absence.
            assert!(!line.contains("driver is not usable"), "{line}");
            // The scoring context on FFmpeg's context and stream, or the
            // converter's library stream in that context (p010; chroma of
            // semi-planar frames), which is set up first.
            let scoring = line.contains("scoring on CUDA context 0x5eed") && line.contains(", stream 0x0:");
            let converter = line.contains("frames on the device (CUDA context 0x5eed");
            assert!(scoring || converter, "{line}");
        }
        (None, None) => panic!("no vmafx error about the CUDA context: {graph}\n{}", r.stderr),
    }
}

#[test]
fn cuda_inputs_reach_vmafx_with_their_context() {
    let Some(bin) = ffmpeg_cuda() else { return };
    let graph = "[0:v]format=nv12,hwupload[d];[1:v]format=nv12,hwupload[r];[d][r]vmafx";
    let r = run(&bin, graph);
    assert!(
        r.stderr.contains("main cuda/nv12, reference cuda/nv12: CUDA frames read in place on the GPU"),
        "{}",
        r.stderr
    );
    assert_scoring_reached_cuda_context(&r, graph);
}

#[test]
fn mixed_cuda_and_software_inputs_configure() {
    let Some(bin) = ffmpeg_cuda() else { return };
    for (graph, line) in [
        ("[0:v]format=yuv420p,hwupload[d];[1:v]format=yuv420p[r];[d][r]vmafx", "main cuda/yuv420p, reference yuv420p"),
        ("[0:v]format=nv12[d];[1:v]format=nv12,hwupload[r];[d][r]vmafx", "main nv12, reference cuda/nv12"),
    ] {
        let r = run(&bin, graph);
        assert!(r.stderr.contains(&format!("{line}: CUDA frames read in place on the GPU")), "{graph}\n{}", r.stderr);
        assert_scoring_reached_cuda_context(&r, graph);
    }
}

#[test]
fn two_cuda_contexts_are_refused() {
    let Some(bin) = ffmpeg_cuda() else { return };
    // hwupload_cuda makes a device of its own per instance: two contexts.
    let graph = "[0:v]format=nv12,hwupload_cuda[d];[1:v]format=nv12,hwupload_cuda[r];[d][r]vmafx";
    let r = run(&bin, graph);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("the main and reference CUDA frames are in different CUDA contexts"),
        "{}",
        r.stderr
    );
}

#[test]
fn cuda_formats_must_match_like_software_ones() {
    let Some(bin) = ffmpeg_cuda() else { return };
    let graph = "[0:v]format=nv12,hwupload[d];[1:v]format=yuv420p,hwupload[r];[d][r]vmafx";
    let r = run(&bin, graph);
    assert!(!r.ok);
    assert!(r.stderr.contains("input pixel formats differ: main is nv12, reference is yuv420p"), "{}", r.stderr);
}

/// Streams the fake driver created: vmafx's (the converter's library
/// stream, made first, and each scoring lane's; FFmpeg creates none). Each
/// must be non-blocking (flags 1): a blocking stream would synchronise with
/// FFmpeg's legacy default stream, so decode and scoring could not overlap.
fn streams_created(r: &Run) -> usize {
    let created: Vec<&str> = r.trace.lines().filter(|l| l.starts_with("stream_create ")).collect();
    for line in &created {
        assert!(line.ends_with(" flags 1"), "a blocking stream: {line}\n{}", r.trace);
    }
    created.len()
}

#[test]
fn layouts_needing_device_work_are_accepted() {
    let Some(bin) = ffmpeg_cuda() else { return };
    for (graph, line) in [
        // 10-bit HEVC's NVDEC layout: shifted down on the device.
        ("[0:v]format=p010le,hwupload[d];[1:v]format=p010le,hwupload[r];[d][r]vmafx", "main cuda/p010le, reference cuda/p010le"),
        // Chroma read (PSNR): split on the device; mixed with software.
        ("[0:v]format=nv12,hwupload[d];[1:v]format=nv12[r];[d][r]vmafx=feature=name=psnr", "main cuda/nv12, reference nv12"),
        ("[0:v]format=p016le,hwupload[d];[1:v]format=p016le,hwupload[r];[d][r]vmafx=feature=name=psnr", "main cuda/p016le, reference cuda/p016le"),
        ("[0:v]format=p010le[d];[1:v]format=p010le,hwupload[r];[d][r]vmafx=feature=name=psnr", "main p010le, reference cuda/p010le"),
    ] {
        let r = run(&bin, graph);
        assert!(r.stderr.contains(&format!("{line}: CUDA frames read in place on the GPU")), "{graph}\n{}", r.stderr);
        assert!(!r.stderr.lines().any(|l| l.contains("[Parsed_vmafx") && l.contains("not supported")), "{graph}\n{}", r.stderr);
        assert_scoring_reached_cuda_context(&r, graph);
        // The converter's library stream, made in the frames' context.
        assert_eq!(streams_created(&r), 1, "{graph}\n{}", r.trace);
    }
    // Read in place: no converter; the scoring lane's stream only.
    for graph in [
        "[0:v]format=nv12,hwupload[d];[1:v]format=nv12,hwupload[r];[d][r]vmafx",
        "[0:v]format=yuv444p16le,hwupload[d];[1:v]format=yuv444p16le,hwupload[r];[d][r]vmafx=feature=name=psnr",
    ] {
        let r = run(&bin, graph);
        assert_scoring_reached_cuda_context(&r, graph);
        assert_eq!(streams_created(&r), 1, "{graph}\n{}", r.trace);
    }
}
