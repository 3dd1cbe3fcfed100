//! The kernels in kernels/ and the GPU engine's launches, checked against
//! the CPU on a machine without a GPU: tests/device_emu/kernel_emu.cpp
//! compiles the same kernel sources as host C++ (each block's threads are
//! real threads meeting at a barrier for __syncthreads) and takes launches
//! in cuLaunchKernel's (grid, void **args) form, and this test gives the real
//! [`Engine`] a [`Backend`] that runs them. What a GPU adds (its compiler,
//! memory model, warps) is left to tests/device_twins.rs on a GPU host.
//!
//! Needs a C++20 compiler (`c++`, or $CXX); missing, it skips unless
//! VMAFX_REQUIRE_GPU_COMPILERS=1.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use vmafx::device::gpu::engine::{Backend, Engine};
use vmafx::device::gpu::kernels::KernelSource;
use vmafx::picture::PlaneView;

type Launch = unsafe extern "C" fn(i32, u32, u32, *mut *mut c_void) -> i32;
type Find = unsafe extern "C" fn(*const std::ffi::c_char) -> i32;

struct Emulator {
    launch: Launch,
    find: Find,
    memory: HashMap<u64, Vec<u64>>,
}

/// The emulator library, built and loaded once per process (tests run on
/// several threads; kernel_emu.cpp serialises their launches).
fn build_emulator() -> Option<Emulator> {
    static LIB: std::sync::OnceLock<Option<(Launch, Find, libloading::Library)>> =
        std::sync::OnceLock::new();
    let (launch, find, _) = LIB.get_or_init(load_emulator).as_ref()?;
    Some(Emulator {
        launch: *launch,
        find: *find,
        memory: HashMap::new(),
    })
}

fn load_emulator() -> Option<(Launch, Find, libloading::Library)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("vmafx_kernel_emu_{}.so", std::process::id()));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let status = std::process::Command::new(&cxx)
        .args([
            "-std=c++20",
            "-O2",
            "-shared",
            "-fPIC",
            "-pthread",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(root.join("kernels"))
        .arg(root.join("tests/device_emu/kernel_emu.cpp"))
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cxx} failed to build the kernel emulator: {s}"),
        Err(e) => {
            let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
            assert!(!required, "no C++ compiler ({cxx}): {e}");
            eprintln!("SKIP: no C++ compiler ({cxx}): {e}");
            return None;
        }
    }
    // SAFETY: our own library, built just now.
    let lib = unsafe { libloading::Library::new(&out) }.unwrap();
    // SAFETY: kernel_emu.cpp defines vx_emu_launch with this signature.
    let launch = unsafe { *lib.get::<Launch>(b"vx_emu_launch\0").unwrap() };
    // SAFETY: kernel_emu.cpp defines vx_emu_find with this signature.
    let find = unsafe { *lib.get::<Find>(b"vx_emu_find\0").unwrap() };
    std::fs::remove_file(&out).ok();
    Some((launch, find, lib))
}

impl Backend for Emulator {
    type Function = i32;
    fn load(&mut self, kernel: &KernelSource) -> vmafx::Result<Vec<i32>> {
        Ok(kernel
            .entries
            .iter()
            .map(|entry| {
                let name = std::ffi::CString::new(*entry).unwrap();
                // SAFETY: a NUL-terminated name.
                let id = unsafe { (self.find)(name.as_ptr()) };
                assert!(
                    id >= 0,
                    "{}: no emulation for entry {entry} (add it to kernel_emu.cpp)",
                    kernel.name
                );
                id
            })
            .collect())
    }
    fn alloc(&mut self, bytes: usize) -> vmafx::Result<u64> {
        let buf = vec![0xa5a5_a5a5_a5a5_a5a5u64; bytes.div_ceil(8)];
        let ptr = buf.as_ptr() as u64;
        self.memory.insert(ptr, buf);
        Ok(ptr)
    }
    fn free(&mut self, ptr: u64) {
        assert!(
            self.memory.remove(&ptr).is_some(),
            "free of unknown {ptr:#x}"
        );
    }
    fn upload(&mut self, dst: u64, src: &[u8]) -> vmafx::Result<()> {
        let buf = self.memory.get_mut(&dst).expect("upload to an allocation");
        assert!(src.len() <= buf.len() * 8);
        // SAFETY: buf has at least src.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.as_mut_ptr().cast(), src.len()) };
        Ok(())
    }
    fn download(&mut self, dst: &mut [u8], src: u64) -> vmafx::Result<()> {
        let buf = &self.memory[&src];
        assert!(dst.len() <= buf.len() * 8);
        // SAFETY: buf has at least dst.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().cast(), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
    unsafe fn launch(
        &mut self,
        f: i32,
        grid: (u32, u32),
        args: &mut [*mut c_void],
    ) -> vmafx::Result<()> {
        // SAFETY: args point at the kernel's argument values (engine.rs).
        assert_eq!(
            unsafe { (self.launch)(f, grid.0, grid.1, args.as_mut_ptr()) },
            0
        );
        Ok(())
    }
    fn synchronize(&mut self) -> vmafx::Result<()> {
        Ok(())
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// 16-bit-aligned plane storage: (buffer, stride in bytes).
fn plane(
    w: usize,
    h: usize,
    bits: u32,
    pad: usize,
    full_scale: Option<bool>,
    seed: u64,
) -> (Vec<u16>, usize) {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let max = (1u64 << bits) - 1;
    let mut rng = Rng(seed | 1);
    let mut buf = vec![0u16; (stride * h).div_ceil(2) + 1];
    // SAFETY: viewing the u16 buffer as bytes.
    let bytes: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), buf.len() * 2) };
    for y in 0..h {
        for x in 0..w {
            let v = match full_scale {
                Some(true) => max,
                Some(false) => 0,
                None => rng.next() % (max + 1),
            };
            let at = y * stride + x * bps;
            if bps == 1 {
                bytes[at] = v as u8;
            } else {
                bytes[at..at + 2].copy_from_slice(&(v as u16).to_ne_bytes());
            }
        }
    }
    (buf, stride)
}

fn view(buf: &[u16], stride: usize, w: usize, h: usize, bits: u32) -> PlaneView<'_> {
    // SAFETY: viewing the u16 buffer as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast(), buf.len() * 2) };
    PlaneView::new(bytes, stride, w, h, if bits == 8 { 1 } else { 2 }).unwrap()
}

#[test]
fn emulated_kernels_through_the_engine_equal_the_cpu() {
    let Some(emu) = build_emulator() else { return };
    let mut engine = Engine::new(emu).unwrap();
    let mut y_row = Vec::new();
    let mut cases = 0;
    for (w, h) in [(17, 9), (300, 7), (513, 5), (8, 8)] {
        for bits in [8u32, 10, 12, 16] {
            for (pattern, pad) in [("random", 0), ("random", 6), ("max-vs-0", 2)] {
                let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ pad as u64;
                let (a, b) = if pattern == "random" {
                    (
                        plane(w, h, bits, pad, None, seed),
                        plane(w, h, bits, pad, None, seed ^ 0xdead_beef),
                    )
                } else {
                    (
                        plane(w, h, bits, pad, Some(true), 0),
                        plane(w, h, bits, pad, Some(false), 0),
                    )
                };
                let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
                let what = format!("{w}x{h} {bits}-bit stride {} {pattern} seed {seed:#x}", a.1);

                let want = vmafx::feature::motion::sad_scalar(&va, &vb, bits, &mut y_row);
                assert_eq!(
                    engine.motion_sad(&va, &vb, bits).unwrap(),
                    want,
                    "motion {what}"
                );
                assert!(
                    want > 0 || pattern != "random",
                    "motion {what}: degenerate case"
                );

                let want = if bits == 8 {
                    vmafx::feature::psnr::sse_u8(&va, &vb, w, h)
                } else {
                    vmafx::feature::psnr::sse_u16(&va, &vb, w, h)
                };
                assert_eq!(engine.psnr_sse(&va, &vb, w, h).unwrap(), want, "sse {what}");
                // A sub-region, as chroma of odd sizes is read (floor, not ceil).
                let (sw, sh) = (w - 1, h - 1);
                let want = if bits == 8 {
                    vmafx::feature::psnr::sse_u8(&va, &vb, sw, sh)
                } else {
                    vmafx::feature::psnr::sse_u16(&va, &vb, sw, sh)
                };
                assert_eq!(
                    engine.psnr_sse(&va, &vb, sw, sh).unwrap(),
                    want,
                    "sse region {what}"
                );
                cases += 1;
            }
        }
    }
    drop(engine);
    assert!(vmafx::device::gpu::engine::take_drop_errors().is_empty());
    eprintln!("{cases} cases equal");
}

/// A plane of `f(x, y)` samples with `pad` bytes after each row: (buffer, stride).
fn plane_of(w: usize, h: usize, bits: u32, pad: usize, f: impl Fn(usize, usize) -> u64) -> (Vec<u16>, usize) {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let mut buf = vec![0u16; (stride * h).div_ceil(2) + 1];
    // SAFETY: viewing the u16 buffer as bytes.
    let bytes: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), buf.len() * 2) };
    for y in 0..h {
        for x in 0..w {
            let v = f(x, y);
            let at = y * stride + x * bps;
            if bps == 1 {
                bytes[at] = v as u8;
            } else {
                bytes[at..at + 2].copy_from_slice(&(v as u16).to_ne_bytes());
            }
        }
    }
    (buf, stride)
}

/// VIF's four scales (kernels/vif.cu through Engine::vif_sums) against the
/// CPU's scalar sums: 8/10/12/16 bit, odd sizes (down to VIF's minimum),
/// odd pitches, random, correlated-with-gain, smooth and extreme content,
/// enhancement gain limits 100, 1.0 and 2.5, scale 0 skipped.
#[test]
fn emulated_vif_equals_the_cpu() {
    use vmafx::feature::vif;
    let Some(emu) = build_emulator() else { return };
    let mut engine = Engine::new(emu).unwrap();
    let mut cases = 0;
    let mut log_paths = 0;
    let mut gain_limited = 0;
    // 270 wide: scale-0 tiles (statistic and subsampling) with no column
    // mirror (the inner path).
    for (w, h) in [(67, 45), (96, 54), (16, 16), (270, 19)] {
        for bits in [8u32, 10, 12, 16] {
            if w == 270 && (bits == 10 || bits == 12) {
                continue;
            }
            let max = (1u64 << bits) - 1;
            let odd_pad = if bits == 8 { 3 } else { 6 };
            let cases_here: [(&str, usize, f64, bool); 7] = [
                ("random", 0, 100.0, false),
                ("random", odd_pad, 1.0, false),
                ("gain", odd_pad, 100.0, false),
                ("gain", 0, 1.0, false),
                ("smooth", odd_pad + 64, 2.5, true),
                ("max-vs-0", odd_pad, 100.0, false),
                ("zero", 0, 100.0, false),
            ];
            for (pattern, pad, egl, skip) in cases_here {
                let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ pad as u64;
                let noise = |s: u64, x: usize, y: usize| {
                    let mut r = Rng((s ^ (y * 4099 + x) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
                    r.next();
                    r.next()
                };
                let smooth = |x: usize, y: usize| ((x * 3 + y * 5) as u64 * max / (3 * w + 5 * h) as u64).min(max);
                let (a, b) = match pattern {
                    "random" => (
                        plane_of(w, h, bits, pad, |x, y| noise(seed, x, y) % (max + 1)),
                        plane_of(w, h, bits, pad, |x, y| noise(seed ^ 0xdead, x, y) % (max + 1)),
                    ),
                    // Distorted = 1.5 x reference + noise: gains above 1.
                    "gain" => (
                        plane_of(w, h, bits, pad, |x, y| noise(seed, x, y) % (max / 2 + 1)),
                        plane_of(w, h, bits, pad, |x, y| {
                            ((noise(seed, x, y) % (max / 2 + 1)) * 3 / 2 + noise(seed ^ 7, x, y) % 4).min(max)
                        }),
                    ),
                    "smooth" => (
                        plane_of(w, h, bits, pad, smooth),
                        plane_of(w, h, bits, pad, |x, y| (smooth(x, y) + noise(seed, x, y) % 9).min(max)),
                    ),
                    "max-vs-0" => (plane_of(w, h, bits, pad, |_, _| max), plane_of(w, h, bits, pad, |_, _| 0)),
                    _ => (plane_of(w, h, bits, pad, |_, _| 0), plane_of(w, h, bits, pad, |_, _| 0)),
                };
                let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
                let what = format!(
                    "{w}x{h} {bits}-bit stride {} {pattern} egl {egl} skip_scale0 {skip} seed {seed:#x}",
                    a.1
                );
                let want = vif::sums_scalar(&va, &vb, bits, egl, skip).unwrap();
                let got = engine.vif_sums(&va, &vb, bits, egl, skip).unwrap();
                assert_eq!(got, want, "vif {what}");
                if want.iter().any(|s| s.num_log != 0) {
                    log_paths += 1;
                }
                if egl == 1.0 && vif::sums_scalar(&va, &vb, bits, 100.0, skip).unwrap() != want {
                    gain_limited += 1;
                }
                cases += 1;
            }
        }
    }
    // Device planes with different pitches for reference and distorted
    // (two producers), read in place through vif_sums_dev.
    for bits in [8u32, 10] {
        let (w, h) = (61, 33);
        let max = (1u64 << bits) - 1;
        let (a, sa) = plane_of(w, h, bits, 2, |x, y| ((x * 37 + y * 11) as u64 * 97) % (max + 1));
        let (b, sb) = plane_of(w, h, bits, 10, |x, y| ((x * 37 + y * 11) as u64 * 97 + (x % 3) as u64) % (max + 1));
        let (va, vb) = (view(&a, sa, w, h, bits), view(&b, sb, w, h, bits));
        let want = vif::sums_scalar(&va, &vb, bits, 100.0, false).unwrap();
        let r = engine.upload_plane("test.vif.ref", &va).unwrap();
        let d = engine.upload_plane("test.vif.dis", &vb).unwrap();
        assert_ne!(r.pitch, d.pitch);
        assert_eq!(engine.vif_sums_dev(r, d, bits, 100.0, false).unwrap(), want, "vif {bits}-bit, pitches {sa} and {sb}");
        // Wrong depth for the samples, different sizes: errors, not results.
        assert!(engine.vif_sums_dev(r, d, if bits == 8 { 10 } else { 8 }, 100.0, false).is_err());
        let smaller = vmafx::device::gpu::engine::DevPlane { height: h - 1, ..d };
        assert!(engine.vif_sums_dev(r, smaller, bits, 100.0, false).is_err());
        cases += 1;
    }
    // Too small for VIF: refused, as the CPU refuses it.
    let (a, stride) = plane_of(15, 40, 8, 0, |_, _| 0);
    assert!(engine.vif_sums(&view(&a, stride, 15, 40, 8), &view(&a, stride, 15, 40, 8), 8, 100.0, false).is_err());
    assert!(log_paths >= cases / 2, "only {log_paths} of {cases} cases reach the log path");
    assert!(gain_limited >= 12, "the gain limit changed only {gain_limited} cases");
    drop(engine);
    assert!(vmafx::device::gpu::engine::take_drop_errors().is_empty());
    eprintln!("{cases} vif cases equal ({log_paths} with log sums, {gain_limited} changed by egl 1.0)");
}

/// ADM test content: (reference, distorted) sample values at (x, y).
#[derive(Clone, Copy, Debug)]
enum AdmContent {
    /// Independent noise (decouple's angle test mostly fails).
    Random,
    /// A textured reference and a contrast-enhanced, noisy copy: the angle
    /// test passes often and the enhancement gain limit bites.
    Enhanced,
    /// A textured reference and a blurred-looking (flattened) copy.
    Flattened,
    /// Full scale against zero.
    MaxVsZero,
    /// Equal pictures.
    Equal,
}

fn adm_planes(
    w: usize,
    h: usize,
    bits: u32,
    pad: usize,
    content: AdmContent,
    seed: u64,
) -> [(Vec<u16>, usize); 2] {
    let bps = if bits == 8 { 1 } else { 2 };
    let stride = w * bps + pad;
    let max = (1i64 << bits) - 1;
    let mid = 1i64 << (bits - 1);
    let mut rng = Rng(seed | 1);
    let mut out = [
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
        (vec![0u16; (stride * h).div_ceil(2) + 1], stride),
    ];
    let scale = 1i64 << (bits - 8);
    for y in 0..h {
        for x in 0..w {
            let texture = (((x * 37 + y * 11) % 64) as i64 - 32) * scale
                + ((x as f64 * 0.3).sin() * (y as f64 * 0.2).cos() * 60.0) as i64 * scale;
            let base = mid / 2 + (x + y) as i64 * max / (2 * (w + h)) as i64;
            let noise = |rng: &mut Rng, amp: i64| (rng.next() % (2 * amp as u64 + 1)) as i64 - amp;
            let (r, d) = match content {
                AdmContent::Random => ((rng.next() as i64) & max, (rng.next() as i64) & max),
                AdmContent::Enhanced => {
                    let r = base + texture;
                    (r, base + texture * 5 / 4 + noise(&mut rng, 2 * scale))
                }
                AdmContent::Flattened => {
                    let r = base + texture + noise(&mut rng, 8 * scale);
                    (r, base + texture / 3 + noise(&mut rng, scale))
                }
                AdmContent::MaxVsZero => (max, 0),
                AdmContent::Equal => {
                    let r = base + texture;
                    (r, r)
                }
            };
            for (p, v) in out.iter_mut().zip([r, d]) {
                let v = v.clamp(0, max) as u16;
                // SAFETY: viewing the u16 buffer as bytes.
                let bytes: &mut [u8] =
                    unsafe { std::slice::from_raw_parts_mut(p.0.as_mut_ptr().cast(), p.0.len() * 2) };
                let at = y * stride + x * bps;
                if bps == 1 {
                    bytes[at] = v as u8;
                } else {
                    bytes[at..at + 2].copy_from_slice(&v.to_ne_bytes());
                }
            }
        }
    }
    out
}

fn adm_params(w: usize, h: usize, bits: u32, opts: &[(&str, &str)]) -> vmafx::feature::adm::AdmParams {
    use vmafx::feature::{adm, FeatureOptions};
    let mut fo = FeatureOptions::new();
    for (k, v) in opts {
        fo.set_text(adm::DESCRIPTOR.options, k, v).unwrap();
    }
    adm::AdmParams::new(w, h, bits, &fo).unwrap()
}

#[test]
fn emulated_adm_equals_the_cpu() {
    use vmafx::feature::adm;
    let Some(emu) = build_emulator() else { return };
    let mut engine = Engine::new(emu).unwrap();
    let contents = [
        AdmContent::Random,
        AdmContent::Enhanced,
        AdmContent::Flattened,
        AdmContent::MaxVsZero,
        AdmContent::Equal,
    ];
    // (size, bits, content, options): with the default options every depth
    // and size with two contents (each depth sees all five); each option
    // set on two sizes, depths and contents. (The emulator is slow: ~2 s a
    // case on 2 busy cores.)
    type Case<'a> = ((usize, usize), u32, AdmContent, Vec<(&'a str, &'a str)>);
    let mut cases: Vec<Case> = Vec::new();
    for (si, size) in [(33, 33), (67, 45), (96, 54)].into_iter().enumerate() {
        for bits in [8u32, 10, 12, 16] {
            for k in 0..2 {
                cases.push((size, bits, contents[(si * 2 + k) % contents.len()], vec![]));
            }
        }
    }
    // Wide enough for several DWT blocks per row at scale 0 (550 outputs)
    // and a masking row longer than a block (440).
    cases.push(((1100, 35), 8, AdmContent::Enhanced, vec![]));
    cases.push(((1101, 33), 16, AdmContent::Random, vec![("adm_enhn_gain_limit", "1.2")]));
    let option_sets: [&[(&str, &str)]; 9] = [
        &[("adm_enhn_gain_limit", "1.2")],
        &[("adm_enhn_gain_limit", "1.0")],
        &[("adm_csf_mode", "1")],
        &[("adm_csf_mode", "2")],
        &[("adm_csf_mode", "3"), ("adm_norm_view_dist", "5.0")],
        &[("adm_csf_scale", "1.5"), ("adm_csf_diag_scale", "0.75"), ("adm_csf_mode", "1")],
        &[("adm_ref_display_height", "2160")],
        &[("adm_skip_aim", "true")],
        &[("adm_skip_scale0", "true")],
    ];
    for opts in option_sets {
        cases.push(((67, 45), 8, AdmContent::Enhanced, opts.to_vec()));
        cases.push(((35, 49), 10, AdmContent::Random, opts.to_vec()));
    }
    let start = std::time::Instant::now();
    for (n, ((w, h), bits, content, opts)) in cases.iter().enumerate() {
        let (w, h, bits) = (*w, *h, *bits);
        // Tight rows, and padded ones (odd for 8 bit).
        let pad = [0, if bits == 8 { 3 } else { 6 }, 64][n % 3];
        let seed = (w * 1000 + h) as u64 ^ (bits as u64) << 20 ^ (n as u64) << 32;
        let [a, b] = adm_planes(w, h, bits, pad, *content, seed);
        let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
        let params = adm_params(w, h, bits, opts);
        let what = format!("{w}x{h} {bits}-bit stride {} {content:?} {opts:?} seed {seed:#x}", a.1);
        let want = adm::sums_scalar(&params, &va, &vb).unwrap();
        let got = engine.adm_sums(&va, &vb, &params).unwrap();
        assert_eq!(got, want, "adm sums {what}");
        let (sw, sg) = (params.scores(&want), params.scores(&got));
        for (x, y) in [(sw.adm2, sg.adm2), (sw.aim, sg.aim), (sw.adm3, sg.adm3)] {
            assert_eq!(x.to_bits(), y.to_bits(), "adm scores {what}");
        }
        if !matches!(content, AdmContent::Equal | AdmContent::MaxVsZero) && !params.skip_scale0 {
            assert!(want.scales[0].num.iter().any(|&v| v != 0), "adm {what}: degenerate case");
        }
    }
    drop(engine);
    assert!(vmafx::device::gpu::engine::take_drop_errors().is_empty());
    eprintln!("adm: {} cases equal ({:.1} s)", cases.len(), start.elapsed().as_secs_f64());
}

/// One 1920x1080 frame (8 and 10 bit) through the emulated ADM kernels:
/// minutes on 2 cores, so run on demand (`-- --ignored`).
#[test]
#[ignore]
fn emulated_adm_1080p_equals_the_cpu() {
    use vmafx::feature::adm;
    let Some(emu) = build_emulator() else { return };
    let mut engine = Engine::new(emu).unwrap();
    for (bits, content, pad) in [(8u32, AdmContent::Enhanced, 3usize), (10, AdmContent::Random, 64)] {
        let (w, h) = (1920, 1080);
        let [a, b] = adm_planes(w, h, bits, pad, content, 0x1080);
        let (va, vb) = (view(&a.0, a.1, w, h, bits), view(&b.0, b.1, w, h, bits));
        let params = adm_params(w, h, bits, &[]);
        let t = std::time::Instant::now();
        let got = engine.adm_sums(&va, &vb, &params).unwrap();
        eprintln!("{bits}-bit {content:?}: emulated in {:.1} s", t.elapsed().as_secs_f64());
        assert_eq!(got, adm::sums_scalar(&params, &va, &vb).unwrap(), "{w}x{h} {bits}-bit {content:?}");
    }
}
