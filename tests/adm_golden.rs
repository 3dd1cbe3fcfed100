//! Integer ADM against libvmaf 3.2.0: every value it writes, per frame,
//! compared as bits.
//!
//! libvmaf's AVX2 / AVX-512 ADM agrees with its C code on most widths but
//! not all (67x45, 80x45, 130x70... differ, and AVX2 differs from AVX-512
//! there), nor in Barten CSF mode, nor with a fractional
//! adm_enhn_gain_limit. vmafx ports the C, so: where libvmaf's SIMD and C
//! agree the reference is libvmaf as it runs on this host; elsewhere it is
//! libvmaf with its SIMD switched off (`cpumask`).

mod common;
use std::ffi::CString;
use std::ptr;
use std::sync::Arc;

use common::{reference, synth};
use vmaf_head_sys as sys;
use vmafx::engine::{Context, ContextConfig};
use vmafx::feature::{adm, naming, FeatureOptions};
use vmafx::picture::{Chroma, OwnedPicture};
use vmafx::simd::CpuLevel;

/// Which libvmaf to compare with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ref {
    /// libvmaf as it runs on this host (its AVX2 / AVX-512 code).
    Host,
    /// libvmaf with its SIMD switched off: its C code.
    C,
}

/// Our adm's values for `names` (all it writes when `names` is None).
fn ours(frames: &[(OwnedPicture, OwnedPicture)], opts: &[(&str, &str)], cpu: CpuLevel) -> (Vec<String>, Context) {
    let mut fo = FeatureOptions::new();
    for (k, v) in opts {
        fo.set_text(adm::DESCRIPTOR.options, k, v).unwrap();
    }
    let mut ctx = Context::new(ContextConfig { threads: 1, cpu, ..Default::default() }).unwrap();
    ctx.use_feature("adm", fo).unwrap();
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
    }
    ctx.flush().unwrap();
    (ctx.collector().names().to_vec(), ctx)
}

/// Runs our adm with `opts` at `cpu` and libvmaf on the same frames; asserts
/// every name we write has libvmaf's value, bit for bit, and that we write
/// exactly the names libvmaf's log lists.
fn check(frames: &[(OwnedPicture, OwnedPicture)], opts: &[(&str, &str)], cpu: CpuLevel, reference: Ref, what: &str) {
    let (names, ctx) = ours(frames, opts, cpu);
    let spec = reference::RefSpec {
        features: vec![("adm".into(), opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())],
        ..Default::default()
    };
    let r = reference::run(frames, &spec, &names);
    let mut ours_sorted: Vec<String> = names.iter().map(|n| naming::alias(n).to_owned()).collect();
    ours_sorted.sort();
    let mut theirs_sorted = r.log_names.clone();
    theirs_sorted.sort();
    assert_eq!(ours_sorted, theirs_sorted, "{what}: feature names");
    let theirs: Vec<Vec<Option<f64>>> = match reference {
        Ref::Host => names.iter().map(|n| r.values[n].clone()).collect(),
        Ref::C => run_libvmaf(frames, opts, &names, !0),
    };
    let mut bad = Vec::new();
    for (k, n) in names.iter().enumerate() {
        for i in 0..frames.len() as u32 {
            let ours = ctx.score_at(n, i);
            let theirs = theirs[k][i as usize];
            if ours.map(f64::to_bits) != theirs.map(f64::to_bits) {
                bad.push(format!("{n} frame {i}: ours {ours:?} libvmaf {theirs:?}"));
            }
        }
    }
    assert!(bad.is_empty(), "{what} ({cpu:?}, libvmaf {reference:?}): {} mismatches:\n{}", bad.len(), bad.join("\n"));
}

fn levels() -> Vec<CpuLevel> {
    CpuLevel::available().filter(|l| *l <= CpuLevel::Avx2).collect()
}

/// Sizes where libvmaf's SIMD and C agree, so libvmaf as it runs here is
/// the reference; and odd sizes where only its C code is.
const HOST_SIZES: [(usize, usize); 3] = [(176, 99), (256, 144), (96, 54)];
const C_SIZES: [(usize, usize); 5] = [(67, 45), (33, 33), (33, 40), (130, 70), (201, 47)];

#[test]
fn adm_default_options_all_depths_and_sizes() {
    let mut seed = 0;
    for cpu in levels() {
        for bits in [8u8, 10, 12, 16] {
            for chroma in [Chroma::Yuv420, Chroma::Yuv444] {
                for (sizes, reference) in [(&HOST_SIZES[..], Ref::Host), (&C_SIZES[..], Ref::C)] {
                    for &(w, h) in sizes {
                        seed += 1;
                        let frames = synth::clip(chroma, bits, w, h, 4, seed);
                        check(&frames, &[], cpu, reference, &format!("{bits} bit {w}x{h} {chroma:?}"));
                    }
                }
            }
        }
    }
}

#[test]
fn adm_neg_model_option() {
    let opts = [("adm_enhn_gain_limit", "1.0")];
    for cpu in levels() {
        for (bits, w, h, reference) in [
            (8u8, 176usize, 99usize, Ref::Host),
            (10, 256, 144, Ref::Host),
            (16, 96, 54, Ref::Host),
            (8, 67, 45, Ref::C),
            (12, 33, 40, Ref::C),
        ] {
            let frames = synth::clip(Chroma::Yuv420, bits, w, h, 5, 11);
            check(&frames, &opts, cpu, reference, &format!("egl=1 {bits} bit {w}x{h}"));
        }
    }
}

#[test]
fn adm_other_options() {
    let frames8 = synth::clip(Chroma::Yuv420, 8, 176, 99, 4, 21);
    let frames10 = synth::clip(Chroma::Yuv420, 10, 96, 54, 4, 22);
    let frames_odd = synth::clip(Chroma::Yuv444, 12, 67, 45, 3, 23);
    let sets: &[&[(&str, &str)]] = &[
        &[("debug", "true")],
        &[("adm_csf_mode", "1")],
        &[("adm_csf_mode", "2")],
        &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")],
        &[("adm_noise_weight", "0.5"), ("adm_dlm_weight", "0.8")],
        &[("adm_csf_scale", "1.5"), ("adm_csf_diag_scale", "0.75"), ("adm_csf_mode", "1")],
        &[("adm_ref_display_height", "2160")],
        &[("adm_skip_aim", "true")],
        &[("adm_skip_scale0", "true"), ("debug", "true")],
        &[("adm_min_val", "0.9")],
        &[("adm_enhn_gain_limit", "1.2")],
    ];
    for cpu in levels() {
        for opts in sets {
            // In Barten mode the Q32 weights pass 2^31, which libvmaf's SIMD
            // multiplies as signed; with a fractional gain limit its SIMD
            // decouple rounds where the C truncates: only the C is the
            // reference there.
            let barten = opts.contains(&("adm_csf_mode", "1"));
            let fractional_gain = opts.contains(&("adm_enhn_gain_limit", "1.2"));
            let host = if barten || fractional_gain { Ref::C } else { Ref::Host };
            check(&frames8, opts, cpu, host, &format!("8 bit {opts:?}"));
            check(&frames10, opts, cpu, host, &format!("10 bit {opts:?}"));
            check(&frames_odd, opts, cpu, Ref::C, &format!("12 bit 67x45 {opts:?}"));
        }
    }
}

#[test]
fn adm_refuses_what_libvmaf_cannot_compute() {
    let frames = synth::clip(Chroma::Yuv420, 8, 32, 64, 1, 1);
    let mut ctx = Context::new(ContextConfig { threads: 1, ..Default::default() }).unwrap();
    ctx.use_feature("adm", FeatureOptions::new()).unwrap();
    let pushed = ctx.push(Arc::new(frames[0].0.clone()), Arc::new(frames[0].1.clone()));
    let flushed = pushed.and_then(|_| ctx.flush());
    assert!(flushed.is_err(), "32-wide picture accepted");
}

/// libvmaf's adm with `cpumask` (0: as the host runs it; !0: its C code):
/// the values of `names` per frame.
fn run_libvmaf(
    frames: &[(OwnedPicture, OwnedPicture)],
    opts: &[(&str, &str)],
    names: &[String],
    cpumask: u64,
) -> Vec<Vec<Option<f64>>> {
    let _libvmaf = reference::libvmaf_lock();
    unsafe {
        let mut ctx = ptr::null_mut();
        let cfg = sys::VmafConfiguration {
            log_level: sys::VmafLogLevel_VMAF_LOG_LEVEL_NONE,
            n_threads: 0,
            n_subsample: 1,
            cpumask: cpumask as _,
            gpumask: 0,
        };
        assert_eq!(sys::vmaf_init(&mut ctx, cfg), 0);
        let mut dict = ptr::null_mut();
        for (k, v) in opts {
            let (k, v) = (CString::new(*k).unwrap(), CString::new(*v).unwrap());
            assert_eq!(sys::vmaf_feature_dictionary_set(&mut dict, k.as_ptr(), v.as_ptr()), 0);
        }
        let cname = CString::new("adm").unwrap();
        assert_eq!(sys::vmaf_use_feature(ctx, cname.as_ptr(), dict), 0);
        for (i, (r, d)) in frames.iter().enumerate() {
            let (mut rp, mut dp) = (to_vmaf_picture(r), to_vmaf_picture(d));
            assert_eq!(sys::vmaf_read_pictures(ctx, &mut rp, &mut dp, i as u32), 0);
        }
        assert_eq!(sys::vmaf_read_pictures(ctx, ptr::null_mut(), ptr::null_mut(), 0), 0);
        let mut out = Vec::new();
        for n in names {
            let cn = CString::new(n.as_str()).unwrap();
            let mut col = Vec::new();
            for i in 0..frames.len() as u32 {
                let mut s = 0.0;
                let err = sys::vmaf_feature_score_at_index(ctx, cn.as_ptr(), &mut s, i);
                col.push(if err == 0 { Some(s) } else { None });
            }
            out.push(col);
        }
        sys::vmaf_close(ctx);
        out
    }
}

/// A libvmaf picture holding `p` (chroma cut to libvmaf's floor sizes).
unsafe fn to_vmaf_picture(p: &OwnedPicture) -> sys::VmafPicture {
    let f = p.format();
    let mut pic: sys::VmafPicture = std::mem::zeroed();
    let fmt = match f.chroma {
        Chroma::Yuv400 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV400P,
        Chroma::Yuv420 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV420P,
        Chroma::Yuv422 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV422P,
        Chroma::Yuv444 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV444P,
    };
    assert_eq!(sys::vmaf_picture_alloc(&mut pic, fmt, f.bits as u32, p.width() as u32, p.height() as u32), 0);
    let view = p.view();
    let bps = f.bytes_per_sample();
    for i in 0..f.chroma.plane_count() {
        let plane = view.plane(i);
        let (cw, ch) = (pic.w[i] as usize, pic.h[i] as usize);
        for y in 0..ch.min(plane.height()) {
            let src = &plane.data()[y * plane.stride()..y * plane.stride() + cw.min(plane.width()) * bps];
            let dst = (pic.data[i] as *mut u8).offset(y as isize * pic.stride[i]);
            ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
        }
    }
    pic
}

/// Prints where libvmaf's SIMD departs from its C (not a check).
#[test]
#[ignore]
fn diag_libvmaf_simd_vs_c() {
    let names: Vec<String> = ["VMAF_integer_feature_adm2_score", "integer_adm_scale1", "integer_adm_scale2", "integer_adm_scale3"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (w, h) in [(33usize, 33usize), (64, 36), (67, 45), (96, 54), (130, 70), (176, 99), (426, 240), (640, 480), (720, 576), (854, 480), (1024, 576), (1280, 720), (1920, 1080)] {
        let frames = synth::clip(Chroma::Yuv420, 8, w, h, 2, 1);
        let c = run_libvmaf(&frames, &[], &names, !0);
        let avx2 = run_libvmaf(&frames, &[], &names, 1 << 4);
        let host = run_libvmaf(&frames, &[], &names, 0);
        println!("{w}x{h}: C==AVX2 {} C==host {}", c == avx2, c == host);
    }
}

#[test]
#[ignore]
fn diag_opts_vs_c() {
    let frames8 = synth::clip(Chroma::Yuv420, 8, 176, 99, 4, 21);
    for opts in [&[("adm_csf_mode", "1")][..], &[("adm_csf_mode", "2")], &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")], &[("adm_enhn_gain_limit", "1.2")]] {
        let (names, ctx) = ours(&frames8, opts, CpuLevel::Scalar);
        let c = run_libvmaf(&frames8, opts, &names, !0);
        let host = run_libvmaf(&frames8, opts, &names, 0);
        for (k, n) in names.iter().enumerate() {
            let o: Vec<_> = (0..4).map(|i| ctx.score_at(n, i)).collect();
            println!("{opts:?} {n}: ours==C {} C==host {}  ours {:?} C {:?}", o == c[k], c[k] == host[k], o[1], c[k][1]);
        }
    }
}

/// CPU seconds this process has used (user + system), from /proc: steadier
/// than wall time on a shared machine.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

/// Rough timing at 1080p: our adm per CPU level and libvmaf's, in CPU
/// time, the best of 5 interleaved rounds (not a check).
#[test]
#[ignore]
fn timing_1080p() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 10, 5);
    let names = vec!["VMAF_integer_feature_adm2_score".to_string()];
    let mut configs: Vec<(String, Box<dyn Fn()>)> = Vec::new();
    for cpu in CpuLevel::available() {
        let f = frames.clone();
        configs.push((format!("vmafx {cpu:?}"), Box::new(move || drop(ours(&f, &[], cpu)))));
    }
    for (label, mask) in [("C", !0u64), ("AVX2", 1 << 4), ("host", 0)] {
        let (f, n) = (frames.clone(), names.clone());
        configs.push((format!("libvmaf {label}"), Box::new(move || drop(run_libvmaf(&f, &[], &n, mask)))));
    }
    let mut best = vec![f64::INFINITY; configs.len()];
    for _ in 0..5 {
        for (k, (_, f)) in configs.iter().enumerate() {
            let t = cpu_seconds();
            f();
            best[k] = best[k].min((cpu_seconds() - t) * 1e3 / frames.len() as f64);
        }
    }
    for ((label, _), ms) in configs.iter().zip(best) {
        println!("{label}: {ms:.1} ms/frame (CPU)");
    }
}

/// Our adm alone at 1080p, for a profiler (not a check).
#[test]
#[ignore]
fn profile_1080p() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 4, 5);
    let cpu = std::env::var("VMAFX_CPU_LEVEL").ok().and_then(|s| CpuLevel::parse(&s)).unwrap_or(CpuLevel::Avx2);
    let t = std::time::Instant::now();
    for _ in 0..5 {
        ours(&frames, &[], cpu);
    }
    println!("{cpu:?}: {:.2} ms/frame", t.elapsed().as_secs_f64() * 1e3 / 20.0);
}

#[test]
fn adm_flat_identical_and_extreme_frames() {
    use vmafx::picture::PixelFormat;
    for cpu in levels() {
        for bits in [8u8, 10, 16] {
            let fmt = PixelFormat::new(Chroma::Yuv420, bits).unwrap();
            let (w, h) = (96, 54);
            let max = ((1u32 << bits) - 1) as u16;
            let plane = |f: &dyn Fn(usize, usize) -> u16| {
                let mut p = OwnedPicture::new(fmt, w, h).unwrap();
                for i in 0..3 {
                    let (pw, ph) = fmt.plane_size(i, w, h);
                    for y in 0..ph {
                        for x in 0..pw {
                            p.set(i, x, y, f(x, y));
                        }
                    }
                }
                p
            };
            let flat = plane(&|_, _| max / 2);
            let black = plane(&|_, _| 0);
            let checker = plane(&|x, y| if (x + y) % 2 == 0 { max } else { 0 });
            let stripes = plane(&|x, _| if (x / 3) % 2 == 0 { max } else { 0 });
            let noisy = synth::clip(Chroma::Yuv420, bits, w, h, 1, 99).remove(0).0;
            let frames = vec![
                (flat.clone(), flat.clone()),
                (noisy.clone(), noisy.clone()),
                (checker.clone(), black.clone()),
                (black.clone(), checker.clone()),
                (checker.clone(), stripes.clone()),
                (stripes.clone(), checker.clone()),
                (noisy.clone(), flat.clone()),
            ];
            check(&frames, &[], cpu, Ref::Host, &format!("{bits} bit flat/extreme"));
            check(&frames, &[("adm_enhn_gain_limit", "1.0")], cpu, Ref::Host, &format!("{bits} bit flat/extreme egl=1"));
        }
    }
}

/// Our AVX2 adm and libvmaf as the host runs it, once each, for a
/// profiler (not a check).
#[test]
#[ignore]
fn profile_vs_libvmaf() {
    let frames = synth::clip(Chroma::Yuv420, 8, 1920, 1080, 10, 5);
    let names = vec!["VMAF_integer_feature_adm2_score".to_string()];
    for _ in 0..3 {
        ours(&frames, &[], CpuLevel::Avx2);
        run_libvmaf(&frames, &[], &names, 0);
    }
}
