//! checkasm-style tests of the kernels' device functions (kernels/adm.cu,
//! kernels/vif.cu, kernels/ssim.cu, kernels/speed.cu): each function, run by a check kernel
//! (tests/device_fns/checks.cu) over arrays of inputs, against the CPU's
//! scalar function on the same inputs, every output compared. The inputs
//! cover each function's whole range: random values over it, its ends, and
//! inputs built to land exactly on each rounding tie (and one either side),
//! which whole frames rarely reach: a one-unit change of a rounding
//! constant can pass every frame test and fails here.
//!
//! `emulated_device_functions_equal_the_cpu` runs the check kernels in the
//! kernel emulator (a C++20 compiler; missing, it skips unless
//! VMAFX_REQUIRE_GPU_COMPILERS=1); `gpu_device_functions_equal_the_cpu` runs
//! them on each CUDA and HIP device present (skips without one, unless
//! VMAFX_REQUIRE_GPU names the lane; `xtask twins run` runs it).
//! The seed is printed on failure; VMAFX_CHECKASM_SEED replays one.

use crate::support::emulator;
use crate::support::device_planes;

use device_planes::{gpu_required, Rng};
use vmafx::internals::device::gpu::backend::{Args, Backend, DeviceMemory, DeviceScalar, KernelRunner};
use vmafx::internals::device::gpu::kernels::KernelSource;
use vmafx::internals::feature::adm::{cm, decouple, dwt};
use vmafx::internals::feature::{cambi, speed, ssim, vif};

/// The kernel sources the check kernels call, then the check kernels (the
/// emulator has its own copy of each, built from the same files).
const CHECKS: KernelSource = KernelSource {
    name: "device_fns_checks.cu",
    source: concat!(
        include_str!("../../kernels/adm.cu"),
        "\n",
        include_str!("../../kernels/vif.cu"),
        "\n",
        include_str!("../../kernels/ssim.cu"),
        "\n",
        include_str!("../../kernels/speed.cu"),
        "\n",
        include_str!("../../kernels/cambi.cu"),
        "\n",
        include_str!("../device_fns/checks.cu")
    ),
    entries: &[
        "check_adm_div",
        "check_adm_filt16",
        "check_adm_filt64",
        "check_adm_vert_s0_8",
        "check_adm_vert_s0_16",
        "check_adm_decouple_s0",
        "check_adm_decouple_s123",
        "check_adm_csf_s0",
        "check_adm_csf_s123",
        "check_adm_accum",
        "check_adm_mirror",
        "check_vif_reflect",
        "check_vif_log2",
        "check_vif_accumulate",
        "check_vif_hfilter",
        "check_ssim_symmetric",
        "check_ssim_pixel",
        "check_speed_mirror",
        "check_speed_sample",
        "check_speed_input",
        "check_cambi_c_value",
    ],
};

fn seed() -> u64 {
    std::env::var("VMAFX_CHECKASM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    })
}

/// The inverse of odd `a` modulo 2^64 (Newton's iteration).
fn inverse_odd(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}

/// x in [0, 2^bits) with coef * x = target (mod 2^bits); coef odd.
fn solve(coef: i64, target: i64, bits: u32) -> i64 {
    let m = (1u64 << bits) - 1;
    ((target as u64).wrapping_mul(inverse_odd(coef as u64)) & m) as i64
}

/// Values near every power of two and the ends of [lo, hi].
fn edges(lo: i64, hi: i64) -> Vec<i64> {
    let mut v = vec![lo, lo + 1, hi - 1, hi, 0, 1, -1];
    for b in 0..63 {
        for d in [-1i64, 0, 1] {
            v.push((1i64 << b) + d);
            v.push(-(1i64 << b) + d);
        }
    }
    v.retain(|x| (lo..=hi).contains(x));
    v.sort_unstable();
    v.dedup();
    v
}

struct Gen {
    rng: Rng,
}
impl Gen {
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.rng.next() % (hi - lo + 1) as u64) as i64
    }
    fn coin(&mut self) -> bool {
        self.rng.next() & 1 == 0
    }
    fn pick(&mut self, v: &[i64]) -> i64 {
        v[(self.rng.next() % v.len() as u64) as usize]
    }
    /// Mostly over the whole range, some at its edges.
    fn value(&mut self, lo: i64, hi: i64, edge: &[i64]) -> i64 {
        if self.rng.next() & 7 == 0 {
            self.pick(edge)
        } else {
            self.range(lo, hi)
        }
    }
}

/// The check kernels on one backend, with the buffers of one call.
struct Checker<B: Backend> {
    engine: KernelRunner<B>,
    buffers: Vec<B::Buffer>,
    label: String,
}

trait Bytes: Copy {
    fn put(self, out: &mut Vec<u8>);
}
macro_rules! bytes {
    ($($t:ty),*) => {$(impl Bytes for $t { fn put(self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_ne_bytes()) } })*};
}
bytes!(u8, u16, i32, u32, u64, i64, f32);

impl<B: Backend> Checker<B> {
    fn new(backend: B, label: &str) -> Self {
        let mut engine = KernelRunner::new(backend).unwrap();
        engine.kernel(&CHECKS, CHECKS.entries[0]).unwrap_or_else(|e| panic!("{label}: loading the check kernels: {e}"));
        Checker { engine, buffers: Vec::new(), label: label.into() }
    }
    fn entry(&mut self, name: &str) -> B::Function {
        self.engine.kernel(&CHECKS, name).unwrap()
    }
    fn input<T: Bytes>(&mut self, v: &[T]) -> u64 {
        let mut b = Vec::with_capacity(v.len() * 8);
        v.iter().for_each(|x| x.put(&mut b));
        let p = self.output(b.len());
        self.engine.backend_mut().upload(p, &b).unwrap();
        p
    }
    fn output(&mut self, bytes: usize) -> u64 {
        let b = self.engine.backend_mut().alloc(bytes.max(8)).unwrap();
        let p = b.ptr();
        self.buffers.push(b);
        p
    }
    fn read<T: DeviceScalar>(&mut self, p: u64, n: usize) -> Vec<T> {
        self.engine.download_vec::<T>(p, n).unwrap()
    }
    /// Launches `name` over `n` inputs (a grid-stride loop in each kernel).
    fn run(&mut self, name: &str, n: usize, args: Args) {
        let grid = (n.div_ceil(256).clamp(1, 64) as u32, 1);
        let f = self.entry(name);
        // SAFETY: every check kernel's parameters are built by its caller
        // below in checks.cu's order, with buffers of n inputs / outputs.
        unsafe { self.engine.launch(f, grid, args) }.unwrap_or_else(|e| panic!("{}: {name}: {e}", self.label));
    }
    fn done(&mut self) {
        self.buffers.clear();
    }
}

/// Compares `got` with `want` element by element; the first difference
/// names the function, the input and both values.
fn compare<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T], input: impl Fn(usize) -> String) {
    assert_eq!(got.len(), want.len(), "{what}: output length");
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
    if let Some(&i) = bad.first() {
        panic!("{what}: {} of {} outputs differ; first at {i}: {}: device {:?}, CPU {:?}", bad.len(), got.len(), input(i), got[i], want[i]);
    }
}

fn check_all<B: Backend>(c: &mut Checker<B>, g: &mut Gen) {
    let l = c.label.clone();
    let t0 = std::time::Instant::now();
    div(c, &l);
    filt16(c, g, &l);
    filt64(c, g, &l);
    vert_s0(c, g, &l);
    decouple_s0(c, g, &l);
    decouple_s123(c, g, &l);
    csf(c, g, &l);
    accum(c, g, &l);
    mirrors(c, &l);
    vif_log2(c, g, &l);
    vif_accumulate(c, g, &l);
    vif_hfilter(c, g, &l);
    ssim_symmetric(c, &l);
    ssim_pixel(c, g, &l);
    speed_fns(c, &l);
    cambi_c_value(c, g, &l);
    eprintln!("{l}: every device function equals the CPU ({:.1} s)", t0.elapsed().as_secs_f64());
}

/// adm_div: every o in -32768..=32768 but 0, against div_lookup.
fn div<B: Backend>(c: &mut Checker<B>, l: &str) {
    let o: Vec<i32> = (-32768..=32768).filter(|&o| o != 0).collect();
    let n = o.len();
    let (pi, po) = (c.input(&o), c.output(n * 4));
    c.run("check_adm_div", n, Args::new().ptr(pi).i32(n as i32).ptr(po));
    let got = c.read::<i32>(po, n);
    let want: Vec<i32> = o.iter().map(|&o| decouple::div_lookup()[(o + 32768) as usize]).collect();
    compare(&format!("{l}: adm_div"), &got, &want, |i| format!("o = {}", o[i]));
    c.done();
}

/// The Daubechies taps' odd coefficient (27411: s1 of LO, s2 of HI) lets
/// one input be solved for a sum on (or beside) a rounding tie.
fn tie_window(g: &mut Gen, lo: i64, hi: i64, add: i64, shift: u32, high: bool) -> [i64; 4] {
    let mut s: [i64; 4] = std::array::from_fn(|_| g.range(lo, hi));
    let f = if high { dwt::HI } else { dwt::LO };
    let k = if high { 2 } else { 1 };
    let rest: i64 = (0..4).filter(|&t| t != k).map(|t| f[t] as i64 * s[t]).sum();
    // acc + add = 0 (mod 2^shift): the tie; +-1 beside it.
    let target = -add - rest + g.range(-1, 1);
    let x = solve(27411, target, shift);
    // Any value of that residue inside [lo, hi].
    let span = 1i64 << shift;
    let steps = (hi - lo + 1) / span;
    s[k] = lo + (x - lo).rem_euclid(span) + if steps > 1 { g.range(0, steps - 2) * span } else { 0 };
    s
}

fn filt16<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let edge = edges(-32768, 32767);
    let mut s: Vec<i32> = Vec::new();
    for i in 0..(1 << 16) {
        let w: [i64; 4] = match i % 4 {
            0 | 1 => tie_window(g, -32768, 32767, 32768, 16, i % 4 == 1),
            2 => std::array::from_fn(|_| g.pick(&edge)),
            _ => std::array::from_fn(|_| g.range(-32768, 32767)),
        };
        s.extend(w.map(|v| v as i32));
    }
    let n = s.len() / 4;
    let (pi, po) = (c.input(&s), c.output(n * 8));
    c.run("check_adm_filt16", n, Args::new().ptr(pi).i32(n as i32).ptr(po));
    let got = c.read::<i32>(po, 2 * n);
    let mut want = Vec::with_capacity(2 * n);
    for w in s.chunks_exact(4) {
        let w16 = w.iter().map(|&v| v as i16).collect::<Vec<_>>();
        let (mut a, mut v, mut h, mut d) = ([0i32], [0i16], [0i16], [0i16]);
        dwt::horizontal_s0(&w16, &w16, &mut a, &mut v, &mut h, &mut d);
        want.extend([a[0], v[0] as i32]);
    }
    compare(&format!("{l}: adm_filt16 (lo, hi)"), &got, &want, |i| format!("window {:?}", &s[i / 2 * 4..i / 2 * 4 + 4]));
    c.done();
}

fn filt64<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let edge = edges(i32::MIN as i64, i32::MAX as i64);
    for (add, shift) in [(0i64, 0u32), (16384, 15), (32768, 16)] {
        let mut s: Vec<i32> = Vec::new();
        for i in 0..(1 << 15) {
            let w: [i64; 4] = match i % 4 {
                0 | 1 if shift > 0 => tie_window(g, i32::MIN as i64, i32::MAX as i64, add, shift, i % 4 == 1),
                2 => std::array::from_fn(|_| g.pick(&edge)),
                // Band values of real frames are far smaller: some there too.
                3 if i % 8 == 3 => std::array::from_fn(|_| g.range(-(1 << 20), 1 << 20)),
                _ => std::array::from_fn(|_| g.range(i32::MIN as i64, i32::MAX as i64)),
            };
            s.extend(w.map(|v| v as i32));
        }
        let n = s.len() / 4;
        let (pi, po) = (c.input(&s), c.output(n * 8));
        c.run("check_adm_filt64", n, Args::new().ptr(pi).i32(n as i32).i64(add).i32(shift as i32).ptr(po));
        let got = c.read::<i32>(po, 2 * n);
        let mut want = Vec::with_capacity(2 * n);
        for w in s.chunks_exact(4) {
            let (mut lo, mut hi) = ([0i32], [0i32]);
            dwt::vertical_s123([&w[0..1], &w[1..2], &w[2..3], &w[3..4]], add, shift, &mut lo, &mut hi);
            want.extend([lo[0], hi[0]]);
        }
        compare(&format!("{l}: adm_filt64 (add {add}, shift {shift})"), &got, &want, |i| format!("window {:?}", &s[i / 2 * 4..i / 2 * 4 + 4]));
        c.done();
    }
}

fn vert_s0<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    for bits in [8u32, 10, 12, 16] {
        let max = (1i64 << bits) - 1;
        let add = 1i64 << (bits - 1);
        let centre = dwt::LO_SUM as i64 * add;
        let n = 1 << 16;
        let mut cols: Vec<[i64; 4]> = Vec::with_capacity(n);
        for i in 0..n {
            cols.push(match i % 4 {
                0 => {
                    // lo: acc - centre + add on a multiple of 2^bits (+-1).
                    let mut s: [i64; 4] = std::array::from_fn(|_| g.range(0, max));
                    let rest = dwt::LO[0] as i64 * s[0] + dwt::LO[2] as i64 * s[2] + dwt::LO[3] as i64 * s[3];
                    s[1] = solve(27411, centre - add - rest + g.range(-1, 1), bits);
                    s
                }
                1 => {
                    let mut s: [i64; 4] = std::array::from_fn(|_| g.range(0, max));
                    let rest = dwt::HI[0] as i64 * s[0] + dwt::HI[1] as i64 * s[1] + dwt::HI[3] as i64 * s[3];
                    s[2] = solve(27411, -add - rest + g.range(-1, 1), bits);
                    s
                }
                2 => std::array::from_fn(|_| g.pick(&[0, 1, max - 1, max])),
                _ => std::array::from_fn(|_| g.range(0, max)),
            });
        }
        let bps = if bits == 8 { 1 } else { 2 };
        let pitch = n * bps;
        let mut plane = Vec::with_capacity(4 * pitch);
        let rows: Vec<Vec<u16>> = (0..4).map(|r| cols.iter().map(|c| c[r] as u16).collect()).collect();
        for r in &rows {
            for &v in r {
                if bps == 1 {
                    plane.push(v as u8)
                } else {
                    plane.extend(v.to_ne_bytes())
                }
            }
        }
        let (pp, plo, phi) = (c.input(&plane), c.output(n * 4), c.output(n * 4));
        let name = if bits == 8 { "check_adm_vert_s0_8" } else { "check_adm_vert_s0_16" };
        let shift = if bits == 8 { 8 } else { bits };
        c.run(name, n, Args::new().ptr(pp).i32(pitch as i32).i32(n as i32).i32(shift as i32).ptr(plo).ptr(phi));
        let (glo, ghi) = (c.read::<i32>(plo, n), c.read::<i32>(phi, n));
        let (mut lo, mut hi) = (vec![0i16; n], vec![0i16; n]);
        if bits == 8 {
            let r8: Vec<Vec<u8>> = rows.iter().map(|r| r.iter().map(|&v| v as u8).collect()).collect();
            dwt::vertical_u8([&r8[0], &r8[1], &r8[2], &r8[3]], &mut lo, &mut hi);
        } else {
            dwt::vertical_u16([&rows[0], &rows[1], &rows[2], &rows[3]], bits, &mut lo, &mut hi);
        }
        let (wlo, whi): (Vec<i32>, Vec<i32>) = (lo.iter().map(|&v| v as i32).collect(), hi.iter().map(|&v| v as i32).collect());
        compare(&format!("{l}: adm_vert_s0 lo, {bits}-bit"), &glo, &wlo, |i| format!("column {:?}", cols[i]));
        compare(&format!("{l}: adm_vert_s0 hi, {bits}-bit"), &ghi, &whi, |i| format!("column {:?}", cols[i]));
        c.done();
    }
}

const EGLS: [f64; 4] = [100.0, 1.0, 1.2, 2.5];

/// Decouple inputs, band-planar: random, edges, pairs whose h/v lie within
/// 1 degree (the gain limit applies), and ties of the Q15 roundings.
fn decouple_inputs(g: &mut Gen, n: usize, lo: i64, hi: i64) -> (Vec<i32>, Vec<i32>) {
    let edge = edges(lo, hi);
    let (mut o, mut t) = (vec![0i32; 3 * n], vec![0i32; 3 * n]);
    for i in 0..n {
        for b in 0..3 {
            let (ov, tv) = match i % 5 {
                0 => (g.value(lo, hi, &edge), g.value(lo, hi, &edge)),
                1 => {
                    // t = o * c for one c per pixel (nearly parallel), a few units off.
                    let ov = g.value(lo, hi, &edge) / if g.coin() { 1 } else { 1 << g.range(0, 20) };
                    let c = [0.25, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0][(i / 5) % 7];
                    ((ov), ((ov as f64 * c) as i64 + g.range(-2, 2)).clamp(lo, hi))
                }
                2 => {
                    // (div(o) * t + 16384) >> 15 on its tie: o with an odd
                    // 2^30 / |o| (|o| < 2^15), t solved mod 2^15.
                    let mut ov;
                    loop {
                        ov = g.range(-32767, 32767);
                        if ov != 0 && (decouple::div_lookup()[(ov + 32768) as usize] & 1) == 1 {
                            break;
                        }
                    }
                    let d = decouple::div_lookup()[(ov + 32768) as usize] as i64;
                    let x = solve(d, -16384 + g.range(-1, 1), 15);
                    // The residue's values of o's sign, |t| <= |o| where one is.
                    let mut tv = if ov > 0 { x } else { x - 32768 };
                    if tv.abs() > ov.abs() {
                        tv = ov;
                    }
                    (ov, tv.clamp(lo, hi))
                }
                3 if hi > 32767 => {
                    // get_best15_from32 on its tie: |o| = m 2^s - 2^(s-1) (+-1).
                    let s = g.range(1, 16);
                    let m = g.range((1 << 14) + 1, (1 << 15) - 1);
                    let a = ((m << s) - (1 << (s - 1)) + g.range(-1, 1)).min(hi);
                    let ov = if g.coin() { a } else { -a };
                    let tv = (ov as f64 * (g.range(0, 1100) as f64 / 1000.0)) as i64;
                    (ov, tv.clamp(lo, hi))
                }
                _ => (g.range(lo, hi), g.range(lo, hi)),
            };
            o[b * n + i] = ov as i32;
            t[b * n + i] = tv as i32;
        }
    }
    (o, t)
}

fn decouple_s0<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    for egl in EGLS {
        let n = 1 << 16;
        let (o, t) = decouple_inputs(g, n, -32768, 32767);
        let (po, pt, pr, pa) = (c.input(&o), c.input(&t), c.output(12 * n), c.output(12 * n));
        c.run("check_adm_decouple_s0", n, Args::new().ptr(po).ptr(pt).i32(n as i32).f64(egl).ptr(pr).ptr(pa));
        let (gr, ga) = (c.read::<i32>(pr, 3 * n), c.read::<i32>(pa, 3 * n));
        let o16: Vec<i16> = o.iter().map(|&v| v as i16).collect();
        let t16: Vec<i16> = t.iter().map(|&v| v as i16).collect();
        let (mut r, mut a) = (vec![0i16; 3 * n], vec![0i16; 3 * n]);
        {
            let (rh, rest) = r.split_at_mut(n);
            let (rv, rd) = rest.split_at_mut(n);
            let (ah, rest) = a.split_at_mut(n);
            let (av, ad) = rest.split_at_mut(n);
            decouple::decouple_s0_row(
                [&o16[..n], &o16[n..2 * n], &o16[2 * n..]],
                [&t16[..n], &t16[n..2 * n], &t16[2 * n..]],
                [rh, rv, rd],
                [ah, av, ad],
                egl,
            );
        }
        let wr: Vec<i32> = r.iter().map(|&v| v as i32).collect();
        let wa: Vec<i32> = a.iter().map(|&v| v as i32).collect();
        let px = |i: usize| {
            let p = i % n;
            format!("pixel o {:?} t {:?}", [o[p], o[n + p], o[2 * n + p]], [t[p], t[n + p], t[2 * n + p]])
        };
        compare(&format!("{l}: adm_decouple<scale 0> r, egl {egl}"), &gr, &wr, px);
        compare(&format!("{l}: adm_decouple<scale 0> a, egl {egl}"), &ga, &wa, px);
        c.done();
    }
}

fn decouple_s123<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    for (egl, (lo, hi)) in EGLS.into_iter().zip([(i32::MIN as i64 + 1, i32::MAX as i64), (-(1 << 24), 1 << 24)].into_iter().cycle()) {
        let n = 1 << 16;
        let (o, t) = decouple_inputs(g, n, lo, hi);
        let (po, pt, pr, pa) = (c.input(&o), c.input(&t), c.output(12 * n), c.output(12 * n));
        c.run("check_adm_decouple_s123", n, Args::new().ptr(po).ptr(pt).i32(n as i32).f64(egl).ptr(pr).ptr(pa));
        let (gr, ga) = (c.read::<i32>(pr, 3 * n), c.read::<i32>(pa, 3 * n));
        let (mut r, mut a) = (vec![0i32; 3 * n], vec![0i32; 3 * n]);
        {
            let (rh, rest) = r.split_at_mut(n);
            let (rv, rd) = rest.split_at_mut(n);
            let (ah, rest) = a.split_at_mut(n);
            let (av, ad) = rest.split_at_mut(n);
            decouple::decouple_s123_row([&o[..n], &o[n..2 * n], &o[2 * n..]], [&t[..n], &t[n..2 * n], &t[2 * n..]], [rh, rv, rd], [ah, av, ad], egl);
        }
        let px = |i: usize| {
            let p = i % n;
            format!("pixel o {:?} t {:?}", [o[p], o[n + p], o[2 * n + p]], [t[p], t[n + p], t[2 * n + p]])
        };
        compare(&format!("{l}: adm_decouple<scales 1-3> r, egl {egl}, range {lo}..{hi}"), &gr, &r, px);
        compare(&format!("{l}: adm_decouple<scales 1-3> a, egl {egl}, range {lo}..{hi}"), &ga, &a, px);
        c.done();
    }
}

fn csf<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let n = 1 << 16;
    // Scale 0: libvmaf's default weights and random ones; x on the ties of
    // (rf x + add) >> shift (odd rf) and over the i16 range.
    let edge16 = edges(-32768, 32767);
    for rf in [[36453u32, 36453, 49417], [g.range(1, 65535) as u32 | 1, g.range(1, 65535) as u32 | 1, g.range(1, 65535) as u32 | 1]] {
        let mut x = vec![0i32; 3 * n];
        for i in 0..n {
            for b in 0..3 {
                let (add, shift) = if b == 2 { (65535i64, 17u32) } else { (16384, 15) };
                x[b * n + i] = match i % 3 {
                    0 => {
                        let s = solve(rf[b] as i64, -add + g.range(-1, 1), shift);
                        let v = if shift == 15 { s - if g.coin() { 0 } else { 32768 } } else { s };
                        v.clamp(-32768, 32767) as i32
                    }
                    1 => g.pick(&edge16) as i32,
                    _ => g.range(-32768, 32767) as i32,
                };
            }
        }
        let (px, pf, pc) = (c.input(&x), c.output(4 * n), c.output(4 * n));
        c.run("check_adm_csf_s0", n, Args::new().ptr(px).i32(n as i32).u32(rf[0]).u32(rf[1]).u32(rf[2]).ptr(pf).ptr(pc));
        let (gf, gc) = (c.read::<i32>(pf, n), c.read::<i32>(pc, n));
        let x16: Vec<i16> = x.iter().map(|&v| v as i16).collect();
        let (mut f, mut cs) = (vec![0i32; n], vec![0i32; n]);
        cm::csf_s0_row([&x16[..n], &x16[n..2 * n], &x16[2 * n..]], rf.map(|r| r as u16), &mut f, &mut cs);
        let at = |i: usize| format!("x {:?}, rf {rf:?}", [x[i], x[n + i], x[2 * n + i]]);
        compare(&format!("{l}: adm_csf<scale 0> fsum"), &gf, &f, at);
        compare(&format!("{l}: adm_csf<scale 0> csum"), &gc, &cs, at);
        c.done();
    }
    // Scales 1-3: Q32 weights; x on the ties of (rf x + 2^27) >> 28.
    let edge32 = edges(i32::MIN as i64, i32::MAX as i64);
    for rf in [[(96784u32 * 4096) | 1, (120000 * 4096) | 1, (59000 * 4096) | 1], [g.rng.next() as u32 | 1, g.rng.next() as u32 | 1, g.rng.next() as u32 | 1]] {
        let mut x = vec![0i32; 3 * n];
        for i in 0..n {
            for b in 0..3 {
                x[b * n + i] = match i % 3 {
                    0 => (solve(rf[b] as i64, -(1 << 27) + g.range(-1, 1), 28) + g.range(-8, 7) * (1 << 28)) as i32,
                    1 => g.pick(&edge32) as i32,
                    _ => g.range(i32::MIN as i64, i32::MAX as i64) as i32,
                };
            }
        }
        let (px, pf, pc) = (c.input(&x), c.output(4 * n), c.output(4 * n));
        c.run("check_adm_csf_s123", n, Args::new().ptr(px).i32(n as i32).u32(rf[0]).u32(rf[1]).u32(rf[2]).ptr(pf).ptr(pc));
        let (gf, gc) = (c.read::<i32>(pf, n), c.read::<i32>(pc, n));
        let (mut f, mut cs) = (vec![0i32; n], vec![0i32; n]);
        cm::csf_s123_row([&x[..n], &x[n..2 * n], &x[2 * n..]], rf, &mut f, &mut cs);
        let at = |i: usize| format!("x {:?}, rf {rf:?}", [x[i], x[n + i], x[2 * n + i]]);
        compare(&format!("{l}: adm_csf<scales 1-3> fsum"), &gf, &f, at);
        compare(&format!("{l}: adm_csf<scales 1-3> csum"), &gc, &cs, at);
        c.done();
    }
}

fn accum<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let n = 1 << 16;
    let edge = edges(i32::MIN as i64, i32::MAX as i64);
    // (sub, sq add, sq shift) of scale 0's h/v and d, and of scales 1-3;
    // cube shifts as shift_and_round gives for widths 8 .. 8192.
    for (sub, sq_add, sq_shift) in [(10u32, 1i64 << 28, 29u32), (12, 1 << 29, 30), (0, 1 << 29, 30)] {
        for cub_shift in [0u32, 1, 3, 5, 9, 13] {
            let cub_add = if cub_shift == 0 { 0 } else { 1i64 << (cub_shift - 1) };
            let (mut x, mut thr) = (vec![0i32; n], vec![0i32; n]);
            for i in 0..n {
                thr[i] = match i % 4 {
                    0 => g.range(0, 1 << 16),
                    1 => g.pick(&edge),
                    _ => g.range(0, 1 << 20),
                } as i32;
                let shifted = (thr[i] as u32).wrapping_shl(sub) as i32 as i64;
                x[i] = match i % 4 {
                    // |x| - thr << sub = 2^14 (2j + 1) (+-1): v^2 + 2^28 on a
                    // multiple of 2^29.
                    0 => (shifted + (g.range(0, 1 << 10) * 2 + 1) * (1 << 14) + g.range(-1, 1)).clamp(i32::MIN as i64 + 1, i32::MAX as i64),
                    1 => g.pick(&edge),
                    _ => g.range(i32::MIN as i64, i32::MAX as i64),
                } as i32;
            }
            let (px, pt, po) = (c.input(&x), c.input(&thr), c.output(8 * n));
            c.run(
                "check_adm_accum",
                n,
                Args::new().ptr(px).ptr(pt).i32(n as i32).i32(sub as i32).i64(sq_add).i32(sq_shift as i32).i64(cub_add).i32(cub_shift as i32).ptr(po),
            );
            let got = c.read::<i64>(po, n);
            let want: Vec<i64> = (0..n)
                .map(|i| {
                    if sub == 0 {
                        cm::accum_s123(x[i], thr[i], (cub_shift, cub_add as u32))
                    } else {
                        cm::accum_s0(x[i], thr[i], sub, (sq_add, sq_shift), (cub_shift, cub_add as u32))
                    }
                })
                .collect();
            compare(&format!("{l}: adm_accum (sub {sub}, sq {sq_add}/{sq_shift}, cube {cub_add}/{cub_shift})"), &got, &want, |i| {
                format!("x {}, thr {}", x[i], thr[i])
            });
            c.done();
        }
    }
}

/// The border rules: ADM's DWT mirror and VIF's reflection.
fn mirrors<B: Backend>(c: &mut Checker<B>, l: &str) {
    for n in 5..70usize {
        let count = n + 3;
        let po = c.output(4 * count);
        c.run("check_adm_mirror", count, Args::new().i32(n as i32).i32(count as i32).ptr(po));
        let got = c.read::<i32>(po, count);
        // k = 2i - 1 + t of src_indices covers -1 ..= n (+1 for odd n).
        let mut want = vec![i32::MIN; count];
        for (i, taps) in dwt::src_indices(n).iter().enumerate() {
            for (t, &src) in taps.iter().enumerate() {
                want[2 * i + t] = src as i32;
            }
        }
        let known: Vec<usize> = (0..count).filter(|&k| want[k] != i32::MIN).collect();
        compare(&format!("{l}: adm_mirror, n = {n}"), &known.iter().map(|&k| got[k]).collect::<Vec<_>>(), &known.iter().map(|&k| want[k]).collect::<Vec<_>>(), |i| format!("index {}", known[i] as i64 - 1));
        c.done();
    }
    for n in 1..40usize {
        let offset = 3 * n as i32 + 20;
        let count = 2 * offset as usize + n;
        let po = c.output(4 * count);
        c.run("check_vif_reflect", count, Args::new().i32(n as i32).i32(offset).i32(count as i32).ptr(po));
        let got = c.read::<i32>(po, count);
        let want: Vec<i32> = (0..count).map(|i| vif::reflect(i as isize - offset as isize, n) as i32).collect();
        compare(&format!("{l}: vx_vif_reflect, n = {n}"), &got, &want, |i| format!("index {}", i as i64 - offset as i64));
        c.done();
    }
}

fn vif_log2<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let table = vif::log2_table();
    let t: Vec<u16> = table.to_vec();
    let mut v: Vec<u64> = edges(0, i64::MAX).into_iter().map(|x| x as u64).collect();
    v.extend([u64::MAX, u64::MAX - 1, u32::MAX as u64]);
    for _ in 0..(1 << 16) {
        let bits = g.range(0, 64) as u32;
        v.push(if bits == 64 { g.rng.next() } else { g.rng.next() & ((1u64 << bits) - 1) });
    }
    let n = v.len();
    let (pv, pt, p32, p64) = (c.input(&v), c.input(&t), c.output(4 * n), c.output(4 * n));
    c.run("check_vif_log2", n, Args::new().ptr(pv).i32(n as i32).ptr(pt).ptr(p32).ptr(p64));
    let (g32, g64) = (c.read::<i32>(p32, n), c.read::<i32>(p64, n));
    let w32: Vec<i32> = v.iter().map(|&x| vif::log2_32(table, x as u32)).collect();
    let w64: Vec<i32> = v.iter().map(|&x| vif::log2_64(table, x)).collect();
    compare(&format!("{l}: vx_vif_log2_32"), &g32, &w32, |i| format!("temp {}", v[i] as u32));
    compare(&format!("{l}: vx_vif_log2_64"), &g64, &w64, |i| format!("temp {}", v[i]));
    c.done();
}

fn vif_accumulate<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let t: Vec<u16> = vif::log2_table().to_vec();
    let edge = edges(i32::MIN as i64, i32::MAX as i64);
    let nsq = vif::SIGMA_NSQ as i64;
    for egl in EGLS {
        let n = 1 << 16;
        let (mut s1, mut s2, mut s12) = (vec![0i32; n], vec![0i32; n], vec![0i32; n]);
        for i in 0..n {
            let (a, b, ab) = match i % 4 {
                // Around the noise threshold sigma1² = 2 * 65536.
                0 => (nsq + g.range(-2, 2), g.range(-5, 1 << 20), g.range(-5, 1 << 20)),
                1 => (g.pick(&edge), g.pick(&edge), g.pick(&edge)),
                // Realistic: sigma12 near sqrt(s1 s2), gains around the limit.
                2 => {
                    let a = g.range(0, 1 << 26);
                    let b = g.range(0, 1 << 26);
                    let ab = ((a as f64 * b as f64).sqrt() * (g.range(-1200, 1200) as f64 / 1000.0)) as i64;
                    (a, b, ab)
                }
                _ => (g.range(i32::MIN as i64, i32::MAX as i64), g.range(i32::MIN as i64, i32::MAX as i64), g.range(i32::MIN as i64, i32::MAX as i64)),
            };
            (s1[i], s2[i], s12[i]) = (a as i32, b as i32, ab as i32);
        }
        let (p1, p2, p12, pt, po) = (c.input(&s1), c.input(&s2), c.input(&s12), c.input(&t), c.output(32 * n));
        c.run("check_vif_accumulate", n, Args::new().ptr(p1).ptr(p2).ptr(p12).i32(n as i32).f64(egl).ptr(pt).ptr(po));
        let got = c.read::<u64>(po, 4 * n);
        let mut want = Vec::with_capacity(4 * n);
        for i in 0..n {
            let mut s = vif::VifSums::default();
            vif::accumulate(&mut s, s1[i], s2[i], s12[i], egl, vif::log2_table());
            want.extend([s.num_log as u64, s.den_log as u64, s.num_non_log as u64, s.den_non_log as u64]);
        }
        compare(&format!("{l}: vx_vif_accumulate (num_log, den_log, num_non_log, den_non_log), egl {egl}"), &got, &want, |i| {
            format!("sigma1² {}, sigma2² {}, sigma12 {}", s1[i / 4], s2[i / 4], s12[i / 4])
        });
        c.done();
    }
}

/// The statistic's horizontal filters against the CPU's sums (u64 sum of
/// f * value; the means' u32 sum wraps as the CPU's would) over the whole
/// u32 range: the squares' 16-bit split and the mirrored pre-adds must give
/// the same sums for any vertical value, not only those a frame reaches.
fn vif_hfilter<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let edge: Vec<i64> = edges(0, u32::MAX as i64);
    let n = 1 << 14;
    let mut v = vec![0u32; 24 * n];
    for (i, x) in v.iter_mut().enumerate() {
        *x = match (i / 24) % 4 {
            0 => u32::MAX - g.range(0, 1) as u32,
            1 => (0xffff + g.range(-1, 1)) as u32 | if g.coin() { 0xffff_0000 } else { 0 },
            2 => g.pick(&edge) as u32,
            _ => g.range(0, u32::MAX as i64) as u32,
        };
    }
    let pv = c.input(&v);
    for (scale, f) in vif::FILTERS.iter().enumerate() {
        let (ps, pm) = (c.output(32 * n), c.output(16 * n));
        c.run("check_vif_hfilter", n, Args::new().ptr(pv).i32(n as i32).i32(scale as i32).ptr(ps).ptr(pm));
        let (got_sq, got_mu) = (c.read::<u64>(ps, 4 * n), c.read::<u32>(pm, 4 * n));
        let (mut want_sq, mut want_mu) = (Vec::with_capacity(4 * n), Vec::with_capacity(4 * n));
        for w in v.chunks(24) {
            for o in 0..4 {
                let taps = f.iter().zip(&w[o..]);
                want_sq.push(taps.clone().map(|(&f, &x)| f as u64 * x as u64).sum::<u64>());
                want_mu.push(taps.fold(0u32, |a, (&f, &x)| a.wrapping_add((f as u32).wrapping_mul(x))));
            }
        }
        let input = |i: usize| format!("window {:?}", &v[24 * (i / 4)..24 * (i / 4) + 24]);
        compare(&format!("{l}: vx_vif_hfilter_sq, scale {scale}"), &got_sq, &want_sq, input);
        compare(&format!("{l}: vx_vif_hfilter_mu, scale {scale}"), &got_mu, &want_mu, input);
    }
    c.done();
}

/// SSIM's mirror against iqa.rs's, wherever one reflection lands inside.
fn ssim_symmetric<B: Backend>(c: &mut Checker<B>, l: &str) {
    for n in 1..40usize {
        let offset = n as i32;
        let count = 3 * n;
        let po = c.output(4 * count);
        c.run("check_ssim_symmetric", count, Args::new().i32(n as i32).i32(offset).i32(count as i32).ptr(po));
        let got = c.read::<i32>(po, count);
        let want: Vec<i32> = (0..count).map(|i| ssim::symmetric(i as isize - offset as isize, n).expect("inside") as i32).collect();
        compare(&format!("{l}: vx_ssim_symmetric, n = {n}"), &got, &want, |i| format!("index {}", i as i64 - offset as i64));
        c.done();
    }
}

/// One SSIM pixel (l, c, s as doubles) against iqa::pixel_terms, as bits:
/// means over 0..=255 with every mantissa bit random, second moments at,
/// just under and around mu² (sigmas rounding to 0 or negative: the
/// clamp and the flat-region fix), identical pictures, full-scale ones.
fn ssim_pixel<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let k = ssim::SsimConstants::new();
    let n = 1 << 16;
    let mut unit = || (g.rng.next() >> 40) as f32 / (1u64 << 24) as f32;
    let mut v = Vec::with_capacity(5 * n);
    for i in 0..n {
        let (mu1, mu2) = (unit() * 255.0, unit() * 255.0);
        let (r1, r2, r3) = (unit(), unit(), unit());
        let p = match i % 5 {
            // Second moments a little above the squared means.
            0 => [mu1, mu2, mu1 * mu1 + r1 * 400.0, mu2 * mu2 + r2 * 400.0, mu1 * mu2 + (r3 - 0.5) * 400.0],
            // Exactly the squared means: sigmas 0, covariance 0.
            1 => [mu1, mu2, mu1 * mu1, mu2 * mu2, mu1 * mu2],
            // A few ulps under: negative sigmas clamped, negative covariance.
            2 => [mu1, mu2, f32::from_bits((mu1 * mu1).to_bits().saturating_sub(3)), f32::from_bits((mu2 * mu2).to_bits().saturating_sub(1)), f32::from_bits((mu1 * mu2).to_bits().saturating_sub(2))],
            // Identical pictures (flat or textured).
            3 => [mu1, mu1, mu1 * mu1 + r1 * 50.0, mu1 * mu1 + r1 * 50.0, mu1 * mu1 + r1 * 50.0],
            // Anywhere: moments in [0, 65025], the means at the ends too.
            _ => [if r1 < 0.1 { 0.0 } else if r1 > 0.9 { 255.0 } else { mu1 }, mu2, unit() * 65025.0, unit() * 65025.0, (unit() - 0.5) * 65025.0],
        };
        v.extend(p);
    }
    let (pv, po) = (c.input(&v), c.output(24 * n));
    c.run("check_ssim_pixel", n, Args::new().ptr(pv).i32(n as i32).f32(k.c1).f32(k.c2).f32(k.c3).ptr(po));
    let got: Vec<u64> = c.read::<f64>(po, 3 * n).iter().map(|x| x.to_bits()).collect();
    let mut want = Vec::with_capacity(3 * n);
    for p in v.chunks_exact(5) {
        let (a, b, s) = ssim::pixel_terms(p[0], p[1], p[2], p[3], p[4], k);
        want.extend([a.to_bits(), b.to_bits(), s.to_bits()]);
    }
    compare(&format!("{l}: vx_ssim_pixel (l, c, s as bits)"), &got, &want, |i| format!("{:?}", &v[5 * (i / 3)..5 * (i / 3) + 5]));
    c.done();
}

/// SpEED's blur mirror against filter.rs's (every index one reflection
/// reaches), and its picture copy of every sample value at 8, 10, 12 and
/// 16 bits against the CPU's, as f32 bits.
fn speed_fns<B: Backend>(c: &mut Checker<B>, l: &str) {
    for n in 2..40usize {
        let offset = n as i32 - 1;
        let count = 3 * n - 2;
        let po = c.output(4 * count);
        c.run("check_speed_mirror", count, Args::new().i32(n as i32).i32(offset).i32(count as i32).ptr(po));
        let got = c.read::<i32>(po, count);
        let want: Vec<i32> = (0..count).map(|i| speed::filter::mirror_index(i as isize - offset as isize, n as isize) as i32).collect();
        compare(&format!("{l}: vx_speed_mirror, n = {n}"), &got, &want, |i| format!("index {}", i as i64 - offset as i64));
        c.done();
    }
    for (bits, scaler) in [(8u32, 1.0f32), (10, 4.0), (12, 16.0), (16, 256.0)] {
        let n = 1usize << bits;
        let (pp, po) = if bits == 8 {
            let v: Vec<u8> = (0..n).map(|v| v as u8).collect();
            (c.input(&v), c.output(4 * n))
        } else {
            let v: Vec<u16> = (0..n).map(|v| v as u16).collect();
            (c.input(&v), c.output(4 * n))
        };
        let bytes = if bits == 8 { 1 } else { 2 };
        c.run("check_speed_sample", n, Args::new().ptr(pp).i32(bytes).f32(scaler).i32(n as i32).ptr(po));
        let got: Vec<u32> = c.read::<f32>(po, n).iter().map(|v| v.to_bits()).collect();
        let want: Vec<u32> = (0..n).map(|v| speed::copy_sample(v as u16, bits).to_bits()).collect();
        compare(&format!("{l}: vx_speed_sample, {bits} bits"), &got, &want, |i| format!("sample {i}"));
        c.done();
    }
    // speed_temporal's difference of two copies: pairs spread over the
    // whole range (a stride prime to every power of two), the ends met.
    for (bits, scaler) in [(8u32, 1.0f32), (10, 4.0), (12, 16.0), (16, 256.0)] {
        let n = 1usize << 16;
        let mask = (1usize << bits) - 1;
        let a: Vec<u16> = (0..n).map(|i| (i & mask) as u16).collect();
        let b: Vec<u16> = (0..n).map(|i| ((i * 40503 + 7) & mask) as u16).collect();
        let (pa, pb) = if bits == 8 {
            let narrow = |v: &[u16]| v.iter().map(|&x| x as u8).collect::<Vec<u8>>();
            (c.input(&narrow(&a)), c.input(&narrow(&b)))
        } else {
            (c.input(&a), c.input(&b))
        };
        let bytes = if bits == 8 { 1 } else { 2 };
        for minus in [true, false] {
            let po = c.output(4 * n);
            let args = Args::new().ptr(pa).ptr(if minus { pb } else { 0 }).i32(bytes).f32(scaler).i32(n as i32).ptr(po);
            c.run("check_speed_input", n, args);
            let got: Vec<u32> = c.read::<f32>(po, n).iter().map(|v| v.to_bits()).collect();
            let want: Vec<u32> = (0..n)
                .map(|i| {
                    let v = speed::copy_sample(a[i], bits);
                    if minus { v - speed::copy_sample(b[i], bits) } else { v }.to_bits()
                })
                .collect();
            compare(&format!("{l}: vx_speed_input, {bits} bits, minus {minus}"), &got, &want, |i| format!("samples {} - {}", a[i], b[i]));
        }
        c.done();
    }
}

/// CAMBI's c-value of a pixel from its window's counts, against the CPU's
/// c_value_pixel (fed the same counts as a one-column histogram), as f32
/// bits: 1, 4 and 32 contrast steps, codes over the whole 10-bit range
/// (inside and outside the band, next to its edges), counts random up to
/// the reciprocal table's reach and small ones that tie p1 with p2.
fn cambi_c_value<B: Backend>(c: &mut Checker<B>, g: &mut Gen, l: &str) {
    let lut = cambi::scalar::reciprocal_lut();
    for nd in [1usize, 4, 32] {
        // Thresholds rising by step (as both EOTFs' do), a visibility floor.
        let vlt = 40u16;
        let tvi: Vec<u16> = (0..nd).map(|d| (300 + 97 * d + nd) as u16).collect();
        let weights: Vec<i32> = (0..nd).map(|d| [1, 2, 3, 4, 4, 5, 5, 6][d % 8] + d as i32 / 8).collect();
        let band_base = (vlt as i32 - 3 * nd as i32 + 1).max(0) as u16;
        let band_size = (tvi[nd - 1] as i32 + 1 - band_base as i32) as u16;
        let t = cambi::scalar::ContrastTables { num_diffs: nd, tvi_for_diff: &tvi, vlt_luma: vlt, diff_weights: &weights, band_base, band_size };
        let n = 20_000usize;
        let k = 2 * nd + 1;
        let mut imgs = Vec::with_capacity(n);
        let mut counts = Vec::with_capacity(n * k);
        for i in 0..n {
            let edge = [0, band_base as i64, band_base as i64 + 1, (band_base + band_size) as i64 - 1, (band_base + band_size) as i64, 1023];
            imgs.push(g.value(0, 1023, &edge) as i32);
            // p0 + any other count below the table's 4226 entries.
            let hi = if i % 2 == 0 { 2000 } else { 3 };
            counts.extend((0..k).map(|_| g.range(0, hi) as i32));
        }
        let want: Vec<u32> = (0..n)
            .map(|i| {
                // One column, a row per code of the band: the counts of
                // codes img - nd ..= img + nd that lie in it.
                let mut hist = vec![0u16; band_size as usize];
                for (j, &cnt) in counts[i * k..(i + 1) * k].iter().enumerate() {
                    let code = imgs[i] - nd as i32 + j as i32;
                    let row = code - band_base as i32;
                    if row >= 0 && row < band_size as i32 {
                        hist[row as usize] = cnt as u16;
                    }
                }
                let value = (imgs[i] as u16).wrapping_add(nd as u16);
                cambi::scalar::c_value_pixel(&hist, value, &t, lut, 0, 1).to_bits()
            })
            .collect();
        // The device counts only codes in the band: zero the others.
        let device_counts: Vec<i32> = (0..n * k)
            .map(|at| {
                let code = imgs[at / k] - nd as i32 + (at % k) as i32;
                let row = code - band_base as i32;
                if row >= 0 && row < band_size as i32 { counts[at] } else { 0 }
            })
            .collect();
        let tvi32: Vec<i32> = tvi.iter().map(|&v| v as i32).collect();
        let (pc, pi, pt, pw, pl) = (c.input(&device_counts), c.input(&imgs), c.input(&tvi32), c.input(&weights), c.input(lut));
        let po = c.output(4 * n);
        let args = Args::new().ptr(pc).ptr(pi).i32(n as i32).i32(nd as i32).ptr(pt).i32(vlt as i32).ptr(pw).i32(band_base as i32).i32(band_size as i32).ptr(pl).ptr(po);
        c.run("check_cambi_c_value", n, args);
        let got: Vec<u32> = c.read::<f32>(po, n).iter().map(|v| v.to_bits()).collect();
        compare(&format!("{l}: vx_cambi_c_value, {nd} steps"), &got, &want, |i| format!("code {}, counts {:?}", imgs[i], &counts[i * k..(i + 1) * k]));
        c.done();
    }
}

fn run_with_seed(label: &str, f: impl FnOnce(&mut Gen)) {
    let s = seed();
    let mut g = Gen { rng: Rng(s | 1) };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut g)));
    if let Err(e) = r {
        eprintln!("{label}: failed with VMAFX_CHECKASM_SEED={s}");
        std::panic::resume_unwind(e);
    }
}

#[test]
fn emulated_device_functions_equal_the_cpu() {
    let Some(emu) = emulator::build_emulator() else { return };
    run_with_seed("emulator", |g| check_all(&mut Checker::new(emu, "emulator"), g));
}

#[test]
fn gpu_device_functions_equal_the_cpu() {
    use vmafx::DeviceKind;
    use vmafx::internals::device::gpu::lane;
    for (label, kind) in [("cuda", DeviceKind::Cuda), ("hip", DeviceKind::Hip)] {
        match lane::device_count(kind) {
            Ok(n) if n > 0 => {
                run_with_seed(label, |g| {
                    check_all(&mut Checker::new(lane::GpuLane::open(kind, 0).unwrap(), &format!("{label} 0")), g)
                });
            }
            Ok(_) => {
                assert!(!gpu_required(label), "VMAFX_REQUIRE_GPU={label} but no {label} device");
                eprintln!("SKIP {label}: no device");
            }
            Err(e) => {
                assert!(!gpu_required(label), "VMAFX_REQUIRE_GPU={label}: {e}");
                eprintln!("SKIP {label}: {e}");
            }
        }
    }
}
