//! The `vmafx` filter of the FFmpeg 9.0 build through the libavfilter API
//! (buffersrc ×2 → vmafx → buffersink, via ffmpeg-sys-next bound to that
//! build's headers): the per-frame metadata, parsed from its `%.17g` text,
//! equals the core's values as f64 bits; frames come out in order, all of
//! them; bad input fails with an error code, never a crash.
//!
//! Run (scripts/ffmpeg-build 9.0 first):
//!   FFMPEG_DIR=build/ffmpeg-9.0/install LD_LIBRARY_PATH=build/ffmpeg-9.0/install/lib \
//!     cargo test --features lavfi-api-tests --test lavfi api::


use std::ffi::{CStr, CString};
use std::ptr;

use crate::sink::{drain_vmafx, VmafxMetadata, EAGAIN};
use crate::support::synth;
use crate::support::ffmpeg::{assert_same_bits, Scores, Spec};
use ffmpeg_sys_next as ff;
use vmafx::{Chroma, OwnedPicture};


/// How the test lays a synth picture out in an AVFrame.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Planar,
    /// Interleaved chroma; samples shifted left by the value (p010: 6).
    SemiPlanar(u32),
}

fn pix_fmt_name(chroma: Chroma, bits: u8, layout: Layout) -> String {
    match (layout, chroma, bits) {
        (Layout::SemiPlanar(_), _, 8) => "nv12".into(),
        (Layout::SemiPlanar(_), _, 10) => "p010le".into(),
        (Layout::SemiPlanar(_), _, _) => "p016le".into(),
        (_, Chroma::Yuv400, 8) => "gray".into(),
        (_, Chroma::Yuv400, b) => format!("gray{b}le"),
        (_, c, 8) => format!("yuv{}p", c.name()),
        (_, c, b) => format!("yuv{}p{b}le", c.name()),
    }
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn err_text(code: i32) -> String {
    let mut buf = [0 as std::ffi::c_char; 128];
    // SAFETY: av_strerror writes at most `buf.len()` bytes, NUL-terminated,
    // into `buf`, which CStr then reads.
    unsafe {
        ff::av_strerror(code, buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

/// An AVFrame holding `p` in the host layout.
unsafe fn make_frame(p: &OwnedPicture, fmt: &str, layout: Layout, pts: i64) -> *mut ff::AVFrame {
    // SAFETY: the caller's contract is only `p` itself. `f` is the frame
    // av_frame_alloc just made (asserted non-null) and av_frame_get_buffer gave it
    // planes for `width` x `height` in `format` (asserted 0): each row written
    // starts at `data[i] + y * linesize[i]` with `y` below that plane's height and
    // holds at most `linesize[i]` bytes (a row of `p`, whose geometry and chroma
    // are the frame's).
    unsafe {
        let f = ff::av_frame_alloc();
        assert!(!f.is_null());
        (*f).width = p.width() as i32;
        (*f).height = p.height() as i32;
        (*f).format = ff::av_get_pix_fmt(cstr(fmt).as_ptr()) as i32;
        assert!((*f).format >= 0, "unknown pix fmt {fmt}");
        (*f).pts = pts;
        assert_eq!(ff::av_frame_get_buffer(f, 0), 0);
        let v = p.view();
        let bps = p.format().bytes_per_sample();
        let luma = v.plane(0);
        for y in 0..luma.height() {
            let dst = (*f).data[0].offset(y as isize * (*f).linesize[0] as isize);
            match layout {
                Layout::SemiPlanar(shift) if bps == 2 => {
                    for (x, s) in luma.row_u16(y).iter().enumerate() {
                        let b = (s << shift).to_le_bytes();
                        *dst.add(2 * x) = b[0];
                        *dst.add(2 * x + 1) = b[1];
                    }
                }
                _ => {
                    let row = &luma.data()[y * luma.stride()..y * luma.stride() + luma.width() * bps];
                    ptr::copy_nonoverlapping(row.as_ptr(), dst, row.len());
                }
            }
        }
        if p.format().chroma == Chroma::Yuv400 {
            return f;
        }
        match layout {
            Layout::Planar => {
                for i in 1..3 {
                    let pl = v.plane(i);
                    for y in 0..pl.height() {
                        let dst = (*f).data[i].offset(y as isize * (*f).linesize[i] as isize);
                        let row = &pl.data()[y * pl.stride()..y * pl.stride() + pl.width() * bps];
                        ptr::copy_nonoverlapping(row.as_ptr(), dst, row.len());
                    }
                }
            }
            Layout::SemiPlanar(shift) => {
                let (u, w) = (v.plane(1), v.plane(2));
                for y in 0..u.height() {
                    let dst = (*f).data[1].offset(y as isize * (*f).linesize[1] as isize);
                    for x in 0..u.width() {
                        for (k, pl) in [u, w].iter().enumerate() {
                            let s = pl.sample(x, y) << shift;
                            if bps == 1 {
                                *dst.add(2 * x + k) = s as u8;
                            } else {
                                let b = (s as u16).to_le_bytes();
                                *dst.add(4 * x + 2 * k) = b[0];
                                *dst.add(4 * x + 2 * k + 1) = b[1];
                            }
                        }
                    }
                }
            }
        }
        f
    }
}

struct Graph {
    graph: *mut ff::AVFilterGraph,
    main: *mut ff::AVFilterContext,
    reference: *mut ff::AVFilterContext,
    sink: *mut ff::AVFilterContext,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: the graph build_graph allocated, freed once (it nulls the pointer).
        unsafe { ff::avfilter_graph_free(&mut self.graph) };
    }
}

/// buffersrc(main), buffersrc(reference) → vmafx=`options` → buffersink.
/// Errors: (step, code).
unsafe fn build_graph(
    main: (usize, usize, &str),
    reference: (usize, usize, &str),
    options: &str,
) -> Result<Graph, (String, i32)> {
    // SAFETY: `graph` is the graph avfilter_graph_alloc just made (asserted
    // non-null), owned by `g`, which frees it on every return; each name and
    // argument is a CString alive for the call that reads it; the contexts linked
    // were created in this graph (their return codes checked first).
    unsafe {
        let graph = ff::avfilter_graph_alloc();
        assert!(!graph.is_null());
        let mut g = Graph { graph, main: ptr::null_mut(), reference: ptr::null_mut(), sink: ptr::null_mut() };
        let create = |ctx: &mut *mut ff::AVFilterContext, filter: &str, name: &str, args: &str| {
            let f = ff::avfilter_get_by_name(cstr(filter).as_ptr());
            assert!(!f.is_null(), "filter {filter} missing from the 9.0 build");
            let args = cstr(args);
            let r = ff::avfilter_graph_create_filter(ctx, f, cstr(name).as_ptr(), args.as_ptr(), ptr::null_mut(), graph);
            if r < 0 { Err((format!("create {name}"), r)) } else { Ok(()) }
        };
        let src_args = |(w, h, fmt): (usize, usize, &str)| {
            format!("video_size={w}x{h}:pix_fmt={fmt}:time_base=1/25:pixel_aspect=1/1")
        };
        create(&mut g.main, "buffer", "main", &src_args(main))?;
        create(&mut g.reference, "buffer", "reference", &src_args(reference))?;
        let mut vmafx = ptr::null_mut();
        create(&mut vmafx, "vmafx", "vmafx", options)?;
        create(&mut g.sink, "buffersink", "sink", "")?;
        for (src, dst, pad) in [(g.main, vmafx, 0), (g.reference, vmafx, 1)] {
            let r = ff::avfilter_link(src, 0, dst, pad);
            if r < 0 {
                return Err(("link".into(), r));
            }
        }
        let r = ff::avfilter_link(vmafx, 0, g.sink, 0);
        if r < 0 {
            return Err(("link".into(), r));
        }
        let r = ff::avfilter_graph_config(graph, ptr::null_mut());
        if r < 0 {
            return Err(("config".into(), r));
        }
        Ok(g)
    }
}

/// Output frames: (pts, metadata under lavfi.vmafx.).
type Output = Vec<(i64, VmafxMetadata)>;

/// Pulls every frame `sink` has ready into `out`; Ok(true) at EOF.
/// Safety: `sink` is the buffersink of a configured graph.
unsafe fn drain(sink: *mut ff::AVFilterContext, out: &mut Output) -> Result<bool, i32> {
    // SAFETY: this fn's contract is drain_vmafx's.
    unsafe { drain_vmafx(sink, |pts, meta| out.push((pts, meta))) }
}

/// Feeds `main_pics` and `ref_pics` (equal counts unless testing that) and
/// returns the output, or (step, error code).
fn run(
    main_pics: &[&OwnedPicture],
    ref_pics: &[&OwnedPicture],
    layout: Layout,
    options: &str,
) -> Result<Output, (String, i32)> {
    let p = main_pics[0];
    let fmt = pix_fmt_name(p.format().chroma, p.format().bits, layout);
    // SAFETY: `g` is a configured graph (build_graph), alive to the end of
    // the block; each frame make_frame returns is handed to buffersrc (which
    // takes a reference) and freed once; drain gets the graph's sink.
    unsafe {
        let g = build_graph((p.width(), p.height(), &fmt), (p.width(), p.height(), &fmt), options)?;
        let mut out = Output::new();
        for i in 0..main_pics.len().max(ref_pics.len()) {
            for (src, pics) in [(g.main, main_pics), (g.reference, ref_pics)] {
                if let Some(pic) = pics.get(i) {
                    let mut f = make_frame(pic, &fmt, layout, i as i64);
                    let r = ff::av_buffersrc_add_frame(src, f);
                    ff::av_frame_free(&mut f);
                    if r < 0 {
                        return Err(("add frame".into(), r));
                    }
                }
            }
            drain(g.sink, &mut out).map_err(|r| ("get frame".to_string(), r))?;
        }
        for src in [g.main, g.reference] {
            let r = ff::av_buffersrc_add_frame(src, ptr::null_mut());
            if r < 0 {
                return Err(("eof".into(), r));
            }
        }
        while !drain(g.sink, &mut out).map_err(|r| ("get frame at eof".to_string(), r))? {
            let r = ff::avfilter_graph_request_oldest(g.graph);
            if r == ff::AVERROR_EOF {
                drain(g.sink, &mut out).map_err(|r| ("get frame at eof".to_string(), r))?;
                break;
            }
            if r < 0 && r != EAGAIN {
                return Err(("request at eof".into(), r));
            }
        }
        Ok(out)
    }
}

/// Output metadata as scores (values parsed from their %.17g text).
fn scores(out: &Output) -> Scores {
    let mut s = Scores::new();
    for (i, (_, meta)) in out.iter().enumerate() {
        for (k, v) in meta {
            let value: f64 = v.parse().unwrap_or_else(|_| panic!("metadata {k}={v}"));
            assert_eq!(ffmpeg_support_format(value), *v, "metadata {k} is not %.17g");
            s.entry(k.clone()).or_default().insert(i as u32, value);
        }
    }
    s
}

fn ffmpeg_support_format(v: f64) -> String {
    vmafx::internals::avfilter::number::format_g17(v)
}

fn check(case: &str, chroma: Chroma, bits: u8, w: usize, h: usize, layout: Layout, spec: &Spec, options: &str) {
    let frames = synth::clip(chroma, bits, w, h, 8, 31 + bits as u64);
    let dist: Vec<_> = frames.iter().map(|(_, d)| d).collect();
    let refs: Vec<_> = frames.iter().map(|(r, _)| r).collect();
    let out = run(&dist, &refs, layout, options)
        .unwrap_or_else(|(step, r)| panic!("{case}: {step} failed: {}", err_text(r)));
    let pts: Vec<i64> = out.iter().map(|(p, _)| *p).collect();
    assert_eq!(pts, (0..8).collect::<Vec<i64>>(), "{case}: every frame, in order");
    assert_same_bits(case, ("metadata", &scores(&out)), ("core", &spec.core_scores(&frames)));
}

fn motion(threads: usize, subsample: u32) -> (Spec, String) {
    let spec = Spec { features: vec![("motion".into(), vec![])], threads, subsample, ..Default::default() };
    (spec, format!("model=:feature=name=motion:n_threads={threads}:n_subsample={subsample}"))
}

/// Motion (what the core has now) through every format family.
#[test]
fn metadata_equals_core_across_formats() {
    let cases = [
        ("yuv420p odd", Chroma::Yuv420, 8, 33, 21, Layout::Planar, 0, 1),
        ("yuv422p10", Chroma::Yuv422, 10, 40, 30, Layout::Planar, 2, 1),
        ("yuv444p12", Chroma::Yuv444, 12, 27, 19, Layout::Planar, 1, 2),
        ("yuv420p16", Chroma::Yuv420, 16, 32, 32, Layout::Planar, 3, 1),
        ("gray10", Chroma::Yuv400, 10, 24, 18, Layout::Planar, 0, 1),
        ("gray", Chroma::Yuv400, 8, 24, 18, Layout::Planar, 0, 3),
        ("nv12", Chroma::Yuv420, 8, 34, 20, Layout::SemiPlanar(0), 0, 1),
        ("p010", Chroma::Yuv420, 10, 34, 20, Layout::SemiPlanar(6), 2, 1),
        ("p016", Chroma::Yuv420, 16, 34, 20, Layout::SemiPlanar(0), 0, 1),
    ];
    for (case, chroma, bits, w, h, layout, threads, subsample) in cases {
        let (spec, opts) = motion(threads, subsample);
        check(case, chroma, bits, w, h, layout, &spec, &opts);
    }
}

/// The default model (needs the core's VIF, ADM and models): metadata
/// `lavfi.vmafx.vmaf` and every feature equal the core's values.
#[test]
fn default_model_metadata_equals_core() {
    let spec = Spec { models: vec![("vmaf_v0.6.1".into(), None)], threads: 2, subsample: 1, ..Default::default() };
    check("vmaf_v0.6.1 yuv420p", Chroma::Yuv420, 8, 64, 48, Layout::Planar, &spec, "n_threads=2");
    let spec = Spec {
        models: vec![("vmaf_v0.6.1".into(), None)],
        features: vec![("psnr".into(), vec![])],
        threads: 0,
        subsample: 1,
    };
    check("vmaf_v0.6.1 + psnr p010", Chroma::Yuv420, 10, 64, 48, Layout::SemiPlanar(6), &spec, "feature=name=psnr");
}

/// Bad input: errors from the API, no crash, no silent drop.
#[test]
fn bad_input_fails_with_an_error() {
    // SAFETY: build_graph's only inputs are these strings; each graph it
    // returns frees itself when dropped.
    unsafe {
        let opts = "model=:feature=name=motion";
        let e = build_graph((32, 24, "yuv420p"), (34, 24, "yuv420p"), opts).err().expect("sizes differ");
        assert_eq!(e.0, "config", "{e:?}");
        let e = build_graph((32, 24, "yuv420p"), (32, 24, "yuv420p10le"), opts).err().expect("formats differ");
        assert_eq!(e.0, "config", "{e:?}");
        for bad in [
            "model=version=nosuch",
            "model=:feature=name=nosuch",
            "model=:feature=name=motion:log_fmt=yaml",
            "model=:feature=name=motion:pool=median",
            "model=",
        ] {
            let e = build_graph((32, 24, "yuv420p"), (32, 24, "yuv420p"), bad).err();
            assert!(matches!(&e, Some((s, _)) if s == "create vmafx"), "{bad}: {e:?}");
        }
    }
    // Unequal frame counts: an error at end of stream, after every frame
    // that was scored came out.
    let frames = synth::clip(Chroma::Yuv420, 8, 32, 24, 6, 4);
    let dist: Vec<_> = frames.iter().map(|(_, d)| d).collect();
    let refs: Vec<_> = frames.iter().map(|(r, _)| r).collect();
    let e = run(&dist, &refs[..4], Layout::Planar, "model=:feature=name=motion").err().expect("unequal counts");
    assert_eq!(e.1, -22, "EINVAL expected: {} {}", e.0, err_text(e.1));
    let out = run(&dist, &refs[..4], Layout::Planar, "model=:feature=name=motion:shortest=1").unwrap();
    assert_eq!(out.len(), 4, "shortest=1 scores the common frames");
}
