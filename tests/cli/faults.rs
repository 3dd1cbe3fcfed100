//! Faults a farm meets, without a GPU or a VM: each gives a clear error,
//! a non-zero exit, and loses nothing already scored.
//!
//! - a GPU library that is missing (CUDA's and HIP's, named by the
//!   variables that point the loaders at them);
//! - a GPU out of memory (at the first frame, where a lane allocates) and
//!   a kernel launch that fails mid-run, on the fake `libamdhip64` (tests/hip_fake/,
//!   the kernel emulator behind HIP's calls) told to fail after N calls
//!   (VMAFX_FAKE_HIP_MALLOCS, VMAFX_FAKE_HIP_LAUNCHES): the CLI's log keeps
//!   the frames scored before, equal to a CPU run on those frames alone;
//! - a GPU library that loads but lacks a call vmafx needs (too old);
//! - a log path that cannot be written, refused before any frame is read;
//! - a dma-buf fd closed under the reader and a fence fd that polls POLLERR,
//!   through the DRM descriptor and the CPU lane's import on memfd objects
//!   (what needs a real dma-buf, the mapping and the SYNC bracket, is
//!   tests/import/dmabuf_vm.rs's, in the VM); a closed fd mid-run through
//!   the filter's C interface, whose log keeps the frames before it.

use crate::support::hip_fake;
use crate::support::partial_log;
use crate::support::synth;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use partial_log::read_json;
use vmafx::{AvDrmFrameDescriptor, FrameDescriptor, HostImporter};
use vmafx::internals::import::{AcquireFence, DrmFourcc, ImportErrorKind};
use synth::write_y4m;
use vmafx::{Chroma, OwnedPicture};

fn dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("faults");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A clip pair of `n` frames, and the pair of its first `kept` frames.
fn clips(name: &str, n: usize) -> (Vec<(OwnedPicture, OwnedPicture)>, PathBuf, PathBuf) {
    let frames = synth::clip(Chroma::Yuv420, 8, 48, 40, n, 23);
    let (r, d) = (dir().join(format!("{name}_ref.y4m")), dir().join(format!("{name}_dist.y4m")));
    write_y4m(&r, &frames.iter().map(|f| &f.0).collect::<Vec<_>>());
    write_y4m(&d, &frames.iter().map(|f| &f.1).collect::<Vec<_>>());
    (frames, r, d)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn vmafx(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vmafx"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run vmafx")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn fails(o: &Output, parts: &[&str]) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "exit status {:?}: {e}", o.status);
    assert!(o.stdout.is_empty(), "a failed run printed a score: {}", String::from_utf8_lossy(&o.stdout));
    for p in parts {
        assert!(e.contains(p), "stderr lacks {p:?}:\n{e}");
    }
    e
}

/// The features the GPU lanes compute (VIF, ADM, motion) and PSNR, with
/// the VMAF model on top.
const FEATURES: &[&str] = &["--feature", "psnr", "--json"];

#[test]
fn a_missing_gpu_library_is_named_and_nothing_is_created() {
    let (_, r, d) = clips("missing", 3);
    for (device, var) in [("cuda", "VMAFX_CUDA_LIB"), ("hip", "VMAFX_HIP_LIB")] {
        let lib = format!("/nonexistent/vmafx-faults/lib{device}.so.1");
        let log = dir().join(format!("missing_{device}.json"));
        let _ = std::fs::remove_file(&log);
        let mut args = vec!["-r", s(&r), "-d", s(&d), "--device", device, "-o", s(&log)];
        args.extend(FEATURES);
        let o = vmafx(&args, &[(var.into(), lib.clone())]);
        fails(&o, &[&lib]);
        assert!(!log.exists(), "--device {device}: a run refused before scoring left a log");
    }
}

/// A run on the fake HIP device with `faults` (its variables), against a
/// CPU run of the same clip.
fn on_fake_hip(name: &str, r: &Path, d: &Path, faults: &[(&str, &str)]) -> Option<(Output, PathBuf)> {
    let dir_fake = hip_fake::fake_dir()?;
    let mut env = hip_fake::fake_env(&dir_fake, hip_fake::ROCM7);
    env.extend(faults.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let log = dir().join(format!("{name}.json"));
    let _ = std::fs::remove_file(&log);
    let mut args = vec!["-r", s(r), "-d", s(d), "--device", "hip", "-o", s(&log)];
    args.extend(FEATURES);
    Some((vmafx(&args, &env), log))
}

#[test]
fn gpu_out_of_memory_names_the_frame_the_device_and_the_allocation() {
    // A lane allocates all its device memory for the first frame (later
    // frames of one size reuse it), so this is where memory runs out; no
    // frame was scored, so no log is left.
    let (_, r, d) = clips("oom_start", 4);
    let Some((o, log)) = on_fake_hip("oom_start", &r, &d, &[("VMAFX_FAKE_HIP_MALLOCS", "0")]) else { return };
    fails(&o, &["frame 0", "HIP device 0: ", " bytes: hipMalloc failed", "hipErrorOutOfMemory"]);
    assert!(!log.exists(), "nothing was scored, yet a log was left");
}

/// The frames a failed GPU run kept equal a CPU run on those frames alone
/// (as bits: the JSON values), pooled values included; the log says why it
/// is incomplete.
fn assert_kept_as_on_the_cpu(case: &str, frames: &[(OwnedPicture, OwnedPicture)], log: &Path, reason: &str) -> usize {
    let cut = read_json(log);
    let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("{case}: no incomplete mark in {cut}"));
    assert!(why.contains(reason), "{case}: incomplete = {why:?}, expected {reason:?}");
    let kept = cut["frames"].as_array().unwrap().len();
    assert!(kept >= 1 && kept < frames.len(), "{case}: {kept} of {} frames kept", frames.len());
    let (r, d) = (dir().join(format!("{case}_first_ref.y4m")), dir().join(format!("{case}_first_dist.y4m")));
    write_y4m(&r, &frames[..kept].iter().map(|f| &f.0).collect::<Vec<_>>());
    write_y4m(&d, &frames[..kept].iter().map(|f| &f.1).collect::<Vec<_>>());
    let clean_log = dir().join(format!("{case}_clean.json"));
    let mut args = vec!["-r", s(&r), "-d", s(&d), "-o", s(&clean_log)];
    args.extend(FEATURES);
    let o = vmafx(&args, &[]);
    assert!(o.status.success(), "{case}: {}", stderr(&o));
    let clean = read_json(&clean_log);
    assert_eq!(cut["frames"], clean["frames"], "{case}: the frames kept differ from a CPU run on them");
    assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "{case}: pooled values differ");
    kept
}

#[test]
fn a_gpu_launch_failing_mid_run_keeps_the_frames_scored() {
    let n = 5;
    let (frames, r, d) = clips("launch", n);
    // Enough launches for two or three frames, then hipErrorLaunchFailure.
    let Some((o, log)) = on_fake_hip("launch", &r, &d, &[("VMAFX_FAKE_HIP_LAUNCHES", "60")]) else { return };
    fails(&o, &["hipErrorLaunchFailure", "marked incomplete"]);
    let kept = assert_kept_as_on_the_cpu("launch", &frames, &log, "hipErrorLaunchFailure");
    eprintln!("launch failure: {kept} of {n} frames kept");
}

/// A memfd of `len` bytes, standing in for a dma-buf object.
fn memfd(len: usize) -> OwnedFd {
    // SAFETY: a NUL-terminated name; the fd returned is new and ours.
    let fd = unsafe { nix::libc::memfd_create(c"vmafx-faults".as_ptr(), 0) };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: `fd` is open and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    std::fs::File::from(fd.try_clone().unwrap()).set_len(len as u64).unwrap();
    fd
}

/// FFmpeg's descriptor of one NV12 64x64 frame in object `fd`.
fn nv12(fd: i32) -> AvDrmFrameDescriptor {
    let mut av = AvDrmFrameDescriptor { nb_objects: 1, nb_layers: 1, ..Default::default() };
    av.objects[0].fd = fd;
    av.objects[0].size = 64 * 96;
    av.layers[0].format = DrmFourcc::Nv12 as u32;
    av.layers[0].nb_planes = 2;
    av.layers[0].planes[0].pitch = 64;
    av.layers[0].planes[1].pitch = 64;
    av.layers[0].planes[1].offset = 64 * 64;
    av
}

#[test]
fn a_dma_buf_fd_closed_by_its_producer() {
    // Closed before the frame reached vmafx: refused, naming object and fd.
    let fd = memfd(64 * 96);
    let raw = fd.as_raw_fd();
    drop(fd);
    let e = FrameDescriptor::from_av_drm(&nv12(raw), "frame 7", 64, 64, 8).unwrap_err();
    assert_eq!(e.kind, ImportErrorKind::Invalid, "{e}");
    let m = e.to_string();
    assert!(m.contains("frame 7") && m.contains("object 0") && m.contains(&format!("fd {raw}")) && m.contains("closed"), "{m}");

    // Closed by its producer after the frame was handed over: the
    // descriptor holds its own fd (a dup), so the object is still there for
    // the import (sized, checked; memfd is no dma-buf, so only the SYNC
    // bracket, which needs one, refuses it).
    let fd = memfd(64 * 96);
    let mut desc = FrameDescriptor::from_av_drm(&nv12(fd.as_raw_fd()), "frame 8", 64, 64, 8).unwrap();
    drop(fd);
    desc.implicit_sync = false;
    let refusal = HostImporter::new(false).import(desc).unwrap_err();
    let m = refusal.error.to_string();
    assert!(m.contains("DMA_BUF_IOCTL_SYNC"), "the import failed before reaching the object: {m}");
}

#[test]
fn a_fence_fd_that_polls_pollerr_is_an_error_not_a_wait() {
    let object = memfd(64 * 96);
    let mut desc = FrameDescriptor::from_av_drm(&nv12(object.as_raw_fd()), "frame 3", 64, 64, 8).unwrap();
    desc.implicit_sync = false;
    // An fd handed over as a fence that polls POLLERR: a pipe's write end
    // whose reader is gone. (A real sync_file never polls POLLERR: a failed
    // fence polls readable and shows its error only through
    // SYNC_IOC_FILE_INFO; src/import/sys.rs asks for it.)
    let mut ends = [0; 2];
    // SAFETY: two ints to write; both fds are new and ours.
    assert_eq!(unsafe { nix::libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: as above.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    drop(reader);
    desc.acquire.push(AcquireFence::SyncFile(writer));
    let start = std::time::Instant::now();
    let refusal = HostImporter::new(false).wait_and_import(desc, std::time::Duration::from_secs(30)).unwrap_err();
    let m = refusal.error.to_string();
    assert_ne!(refusal.error.kind, ImportErrorKind::Busy, "a failed wait taken for a pending fence: {m}");
    assert!(m.contains("frame 3") && m.contains("acquire fence 0") && m.contains("signalled an error: POLLERR"), "{m}");
    // Not retried until the 30 s timeout: an error is final.
    assert!(start.elapsed() < std::time::Duration::from_secs(25), "the failed wait was retried: {m}");
}

/// A GPU library that loads but lacks a call vmafx needs: what a runtime
/// older than the oldest vmafx supports looks like (a call added after it
/// is missing). libc stands in for it: the loader names the library and
/// the first call it lacks, and the run fails before scoring, leaving no
/// log.
#[test]
fn a_gpu_library_without_a_needed_call_is_named_and_nothing_is_created() {
    let (_, r, d) = clips("too_old", 3);
    for (device, var, call) in [("cuda", "VMAFX_CUDA_LIB", "required symbol cu"), ("hip", "VMAFX_HIP_LIB", "required symbol hip")] {
        let log = dir().join(format!("too_old_{device}.json"));
        let _ = std::fs::remove_file(&log);
        let mut args = vec!["-r", s(&r), "-d", s(&d), "--device", device, "-o", s(&log)];
        args.extend(FEATURES);
        let o = vmafx(&args, &[(var.into(), "libc.so.6".into())]);
        fails(&o, &["libc.so.6: ", call, " not found"]);
        assert!(!log.exists(), "--device {device}: a run refused before scoring left a log");
    }
}

/// The log file is opened before any frame is read: with a distorted file
/// cut inside its first frame and a log path in a missing directory, the
/// run fails on the path, never reaching the cut.
#[test]
fn an_unwritable_log_path_fails_before_the_first_frame_is_read() {
    let (_, r, d) = clips("log_first", 2);
    let cut = dir().join("log_first_cut.y4m");
    let bytes = std::fs::read(&d).unwrap();
    let header = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&cut, &bytes[..header + "FRAME\n".len() + 100]).unwrap();
    let log = dir().join("no_such_dir").join("log.json");
    let e = fails(&vmafx(&["-r", s(&r), "-d", s(&cut), "-o", s(&log), "--json"], &[]), &["no_such_dir"]);
    assert!(!e.contains("truncated"), "the log path was checked after reading frames: {e}");
    // The same cut file with a writable log does reach the cut.
    let log = dir().join("log_first.json");
    fails(&vmafx(&["-r", s(&r), "-d", s(&cut), "-o", s(&log), "--json"], &[]), &["truncated frame 0"]);
}

/// An fd number that is not open and will not be soon: a dup far above the
/// fds this process uses, then closed (the kernel hands out the lowest free
/// number, so other tests' new fds do not land on it).
fn closed_fd() -> i32 {
    let fd = memfd(64);
    // SAFETY: duplicates an open fd to a free number >= 900.
    let high = unsafe { nix::libc::fcntl(fd.as_raw_fd(), nix::libc::F_DUPFD_CLOEXEC, 900) };
    assert!(high >= 900, "F_DUPFD: {}", std::io::Error::last_os_error());
    // SAFETY: `high` is ours and closed once.
    unsafe { nix::libc::close(high) };
    high
}

/// `frames` through the filter's C interface as FFmpeg's glue drives it
/// (n_threads=2, JSON log at `log`), software frames but, from pair
/// `fault_at` on, a DRM_PRIME main frame whose dma-buf fd its producer has
/// already closed. Returns the error of the failed push and the message of
/// the summary that uninit asks for, if they failed.
fn filter_run_with_closed_fd(frames: &[(OwnedPicture, OwnedPicture)], log: &Path, fault_at: Option<usize>) -> Option<(String, String)> {
    use crate::support::filter_capi::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use vmafx::internals::avfilter::ffi::*;
    let (w, h) = (frames[0].0.width(), frames[0].0.height());
    let live = std::sync::Arc::new(AtomicUsize::new(0));
    let path = std::ffi::CString::new(s(log)).unwrap();
    let f = new_filter_logging(c"version=vmaf_v0.6.1", 2, 1_000_000, None, Some((&path, c"json"))).expect("vmafx_filter_new");
    // SAFETY: a live filter, NUL-terminated names.
    assert_eq!(unsafe { vmafx_filter_configure(f, w as i32, h as i32, c"yuv420p".as_ptr(), w as i32, h as i32, c"yuv420p".as_ptr()) }, 0, "{}", last_error(f));
    let mut failed = None;
    for (i, (r, d)) in frames.iter().enumerate() {
        let main = if fault_at == Some(i) {
            let mut av = AvDrmFrameDescriptor { nb_objects: 1, nb_layers: 1, ..Default::default() };
            av.objects[0].fd = closed_fd();
            av.objects[0].size = w * h * 3 / 2;
            av.layers[0].format = DrmFourcc::Yuv420 as u32;
            av.layers[0].nb_planes = 3;
            for (p, (offset, pitch)) in [(0, w), (w * h, w / 2), (w * h * 5 / 4, w / 2)].into_iter().enumerate() {
                av.layers[0].planes[p].offset = offset as isize;
                av.layers[0].planes[p].pitch = pitch as isize;
            }
            // The glue's frame owns an fd of its own (the AVFrame's), open.
            host_frame(&live, None, Some((Box::new(av), memfd(64))))
        } else {
            host_frame(&live, Some(d.clone()), None)
        };
        let reference = host_frame(&live, Some(r.clone()), None);
        let out = host_frame(&live, None, None);
        let (mf, rf) = (vmafx_frame(main, w, h, c"yuv420p"), vmafx_frame(reference, w, h, c"yuv420p"));
        // SAFETY: filled frames whose planes live as long as their handles.
        if unsafe { vmafx_filter_push(f, &mf, &rf, out as *mut _) } < 0 {
            failed = Some(last_error(f));
            break;
        }
    }
    // What the glue's uninit does: the summary (which writes the log),
    // then free. Output frames never popped are released by free.
    // SAFETY: a live filter.
    let summary = unsafe { vmafx_filter_summary(f) };
    let summary_error = summary.is_null().then(|| last_error(f));
    // SAFETY: freed once.
    unsafe { vmafx_filter_free(f) };
    assert_eq!(live.load(Ordering::SeqCst), 0, "every frame handed over was released");
    assert_eq!(failed.is_some(), summary_error.is_some(), "{failed:?} / {summary_error:?}");
    failed.zip(summary_error)
}

/// A dma-buf fd closed by its producer before the frame reached vmafx,
/// mid-run, through the filter: the push fails naming the fd, and the log
/// uninit writes holds the frames before it, marked incomplete with that
/// error, equal (frames and pooled values) to a run on those frames alone.
#[test]
fn a_closed_dma_buf_mid_run_keeps_the_frames_the_filter_scored() {
    let frames = synth::clip(Chroma::Yuv420, 8, 48, 40, 6, 23);
    let kept = 4;
    let cut_log = dir().join("filter_closed_fd.json");
    let (push_error, summary_error) = filter_run_with_closed_fd(&frames, &cut_log, Some(kept)).expect("the closed fd was not refused");
    assert!(push_error.contains("main frame 4") && push_error.contains("object 0") && push_error.contains("closed"), "{push_error}");
    assert!(summary_error.contains("incomplete"), "{summary_error}");
    let clean_log = dir().join("filter_closed_fd_clean.json");
    assert!(filter_run_with_closed_fd(&frames[..kept], &clean_log, None).is_none());
    let (cut, clean) = (read_json(&cut_log), read_json(&clean_log));
    let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("no incomplete mark in {cut}"));
    assert!(why.contains("closed"), "incomplete = {why:?}");
    assert_eq!(cut["frames"].as_array().map(Vec::len), Some(kept), "{cut}");
    assert_eq!(cut["frames"], clean["frames"], "the frames kept differ from a run on them alone");
    assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "pooled values differ");
}
