//! libvmaf 3.2.0 (the `vmaf-head-sys` crate's vendored build) driven through
//! its C API: the reference every golden test compares with, as doubles.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::{Mutex, MutexGuard};

use vmaf_head_sys as sys;
use vmafx::{Chroma, OwnedPicture};

/// What to ask libvmaf for.
#[derive(Clone, Debug, Default)]
pub struct RefSpec {
    /// Built-in model versions ("vmaf_v0.6.1"), scored under the given name
    /// (`(version, name)`). A model collection ("vmaf_b_v0.6.3") is loaded
    /// and scored as libvmaf's tool does: where `vmaf_model_load` refuses
    /// the version, member 0 as a model in its place, and the collection
    /// (`vmaf_score_pooled_model_collection`) after every model; the names
    /// it writes are read back like `query`'s.
    pub models: Vec<(String, String)>,
    /// Feature overloads per model, beside `models` (missing entries: none):
    /// (extractor, option, value), applied after loading as libvmaf's tool
    /// does (`vmaf_model_feature_overload`, or for a collection
    /// `vmaf_model_collection_feature_overload`), each in a dictionary of
    /// its own made by `vmaf_feature_dictionary_set`.
    pub overloads: Vec<Vec<(String, String, String)>>,
    /// Extra extractors: (name, [(option, value)]).
    pub features: Vec<(String, Vec<(String, String)>)>,
    pub threads: u32,
    pub subsample: u32,
    /// Which of libvmaf's code paths runs. The default, its C code, is the
    /// specification: libvmaf's AVX2 and AVX-512 code departs from it on
    /// some inputs (docs/correctness.md), and which SIMD libvmaf would pick
    /// depends on the machine the tests happen to run on.
    pub path: LibvmafPath,
}

/// One of libvmaf 3.2.0's code paths for its integer features, chosen with
/// its `cpumask` (the bits of `enum VmafCpuFlags` in `src/x86/cpu.h` that
/// are switched off).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LibvmafPath {
    /// Its C code, on every CPU: the reference every golden test compares with.
    #[default]
    C,
    /// Its AVX2 code (AVX-512 masked off).
    Avx2,
    /// Its AVX-512 code.
    Avx512,
}

impl LibvmafPath {
    pub const ALL: [LibvmafPath; 3] = [LibvmafPath::C, LibvmafPath::Avx2, LibvmafPath::Avx512];
    const FLAG_AVX512: u64 = 1 << 4;
    const FLAG_AVX512ICL: u64 = 1 << 5;

    pub fn name(self) -> &'static str {
        match self {
            LibvmafPath::C => "C",
            LibvmafPath::Avx2 => "AVX2",
            LibvmafPath::Avx512 => "AVX-512",
        }
    }

    /// The `cpumask` that leaves libvmaf this path and nothing above it.
    pub fn cpumask(self) -> u64 {
        match self {
            LibvmafPath::C => u64::MAX,
            LibvmafPath::Avx2 => Self::FLAG_AVX512 | Self::FLAG_AVX512ICL,
            LibvmafPath::Avx512 => 0,
        }
    }

    /// Whether this CPU runs the path: libvmaf would silently fall back to a
    /// lower one where it cannot, so a comparison of paths must ask first.
    /// The same CPUID bits libvmaf's `vmaf_get_cpu_flags_x86` requires.
    pub fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("bmi1")
                && is_x86_feature_detected!("bmi2");
            match self {
                LibvmafPath::C => true,
                LibvmafPath::Avx2 => avx2,
                LibvmafPath::Avx512 => {
                    avx2 && is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512dq")
                        && is_x86_feature_detected!("avx512cd")
                        && is_x86_feature_detected!("avx512bw")
                        && is_x86_feature_detected!("avx512vl")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == LibvmafPath::C
        }
    }
}

/// libvmaf's configuration: quiet, on `path`.
pub fn config(threads: u32, subsample: u32, path: LibvmafPath) -> sys::VmafConfiguration {
    sys::VmafConfiguration {
        log_level: sys::VmafLogLevel_VMAF_LOG_LEVEL_NONE,
        n_threads: threads,
        n_subsample: subsample.max(1),
        cpumask: path.cpumask() as _,
        gpumask: 0,
    }
}

/// libvmaf's results.
#[derive(Debug, Default)]
pub struct RefScores {
    /// Feature (and model) values per frame, for every name queried.
    pub values: BTreeMap<String, Vec<Option<f64>>>,
    /// Metric names the JSON log lists per frame (aliases, as printed).
    pub log_names: Vec<String>,
    /// The JSON log itself.
    pub log_json: String,
    /// The XML, CSV and subtitle logs, in that order.
    pub log_others: [String; 3],
    pub frames: u32,
    /// Pooled over all frames, for every model and queried name:
    /// `[mean, harmonic_mean, min, max]` (libvmaf's `vmaf_score_pooled`,
    /// `vmaf_feature_score_pooled`); `None` where libvmaf returned an error.
    pub pooled: BTreeMap<String, [Option<f64>; 4]>,
}

/// vmafx's pooling methods in the order `RefScores::pooled` keeps them.
pub const OUR_POOLS: [vmafx::PoolMethod; 4] = {
    use vmafx::PoolMethod::*;
    [Mean, HarmonicMean, Min, Max]
};

/// Asserts that a finished context wrote the feature names libvmaf's log
/// prints and, for each, every frame's value and every pooled value equal
/// to libvmaf's as bits. Returns the largest value written (tests show
/// with it that their content moves the score).
#[allow(dead_code)]
pub fn assert_context_equals(ctx: &vmafx::Context, theirs: &RefScores, names: &[String], what: &str) -> f64 {
    let mut b = theirs.log_names.clone();
    b.sort();
    // Our collector keeps libvmaf's internal name; its log prints the alias.
    let mut printed: Vec<String> = names.iter().map(|n| vmafx::internals::feature::naming::alias(n).to_owned()).collect();
    printed.sort();
    assert_eq!(printed, b, "{what}: feature names");
    let n = theirs.frames;
    let mut largest = 0.0f64;
    for name in names {
        for i in 0..n {
            let (x, y) = (ctx.score_at(name, i), theirs.values[name][i as usize]);
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{what}: {name} frame {i}: ours {x:?}, libvmaf {y:?}");
            largest = largest.max(x.unwrap_or(0.0));
        }
        for (k, method) in OUR_POOLS.iter().enumerate() {
            let x = ctx.pooled(name, *method, 0, n - 1).ok();
            let y = theirs.pooled[name][k];
            assert_eq!(x.map(f64::to_bits), y.map(f64::to_bits), "{what}: {name} pooled {method:?}: ours {x:?}, libvmaf {y:?}");
        }
    }
    largest
}

/// libvmaf's pooling methods in the order `RefScores::pooled` keeps them.
pub const POOL_METHODS: [(&str, sys::VmafPoolingMethod); 4] = [
    ("mean", sys::VmafPoolingMethod_VMAF_POOL_METHOD_MEAN),
    ("harmonic_mean", sys::VmafPoolingMethod_VMAF_POOL_METHOD_HARMONIC_MEAN),
    ("min", sys::VmafPoolingMethod_VMAF_POOL_METHOD_MIN),
    ("max", sys::VmafPoolingMethod_VMAF_POOL_METHOD_MAX),
];

fn pix_fmt(c: Chroma) -> sys::VmafPixelFormat {
    match c {
        Chroma::Yuv400 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV400P,
        Chroma::Yuv420 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV420P,
        Chroma::Yuv422 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV422P,
        Chroma::Yuv444 => sys::VmafPixelFormat_VMAF_PIX_FMT_YUV444P,
    }
}

pub fn to_vmaf_picture(p: &OwnedPicture) -> sys::VmafPicture {
    let f = p.format();
    // SAFETY: VmafPicture is a C struct of integers and pointers, for which
    // all zeroes is a valid (empty) value.
    let mut pic: sys::VmafPicture = unsafe { std::mem::zeroed() };
    // SAFETY: `pic` is an empty picture vmaf_picture_alloc fills for this size
    // and format (return code checked).
    let err = unsafe {
        sys::vmaf_picture_alloc(&mut pic, pix_fmt(f.chroma), f.bits as u32, p.width() as u32, p.height() as u32)
    };
    assert_eq!(err, 0, "vmaf_picture_alloc");
    let view = p.view();
    let bps = f.bytes_per_sample();
    for i in 0..f.chroma.plane_count() {
        let plane = view.plane(i);
        // libvmaf rounds chroma sizes down (w >> ss); copy what it holds.
        let (cw, ch) = (pic.w[i] as usize, pic.h[i] as usize);
        for y in 0..ch.min(plane.height()) {
            let src = &plane.data()[y * plane.stride()..y * plane.stride() + cw.min(plane.width()) * bps];
            // SAFETY: row `y` < pic.h[i] of plane `i`, which vmaf_picture_alloc
            // made `stride[i]` bytes apart; `src` holds at most pic.w[i] samples.
            unsafe {
                let dst = (pic.data[i] as *mut u8).offset(y as isize * pic.stride[i]);
                ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
            }
        }
    }
    pic
}

/// libvmaf keeps its cpumask in one process-wide static: `vmaf_init` writes
/// it and each extractor reads it when it initialises, which may be at the
/// first frame. Tests run on parallel threads, so a run that asked for the C
/// code (`LibvmafPath::C`) could get the SIMD chosen by another test's
/// `vmaf_init` in between. Every libvmaf run holds this lock from
/// `vmaf_init` to `vmaf_close`.
pub fn libvmaf_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    // A test that panicked while holding it left libvmaf in no shared state
    // worth refusing over.
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs libvmaf on `frames` (reference, distorted) and reads back every name
/// in `query` plus every name the models and features produce.
pub fn run(frames: &[(OwnedPicture, OwnedPicture)], spec: &RefSpec, query: &[String]) -> RefScores {
    try_run(frames, spec, query).unwrap_or_else(|e| panic!("libvmaf: {e}"))
}

/// `run`, with libvmaf's refusal of a frame (`vmaf_read_pictures` failing)
/// or of the flush returned as an error that names the step and code.
///
/// A result libvmaf gave before for the same input is read back from
/// `stored` instead of computed again: libvmaf's C code is the slow half of
/// every golden test and runs one at a time (`libvmaf_lock`), and the suite
/// (the planted defects above all: each reruns a module with only vmafx
/// changed) asks it the same questions many times.
pub fn try_run(
    frames: &[(OwnedPicture, OwnedPicture)],
    spec: &RefSpec,
    query: &[String],
) -> Result<RefScores, String> {
    let key = stored::key(frames, spec, query);
    if let Some(scores) = key.as_deref().and_then(stored::read) {
        return Ok(scores);
    }
    let scores = run_libvmaf(frames, spec, query)?;
    if let Some(key) = &key {
        stored::write(key, &scores);
    }
    Ok(scores)
}

/// libvmaf's results kept between test runs, in the target directory
/// (`target/tmp/libvmaf-results/`, so a fresh clone starts empty), one file
/// per question. The key is a 64-bit hash of everything the answer depends
/// on: the vendored libvmaf (`vmaf-head-sys`'s checksum in Cargo.lock), this
/// file's source (how the question is put to libvmaf), the spec, the names
/// queried and every sample of every frame. Values are kept as their bits.
/// `VMAFX_LIBVMAF_RESULTS=off` always asks libvmaf.
mod stored {
    use std::collections::BTreeMap;
    use std::hash::{DefaultHasher, Hash, Hasher};
    use std::path::PathBuf;

    use serde::{Deserialize, Serialize};
    use super::{OwnedPicture, RefScores, RefSpec};

    #[derive(Serialize, Deserialize)]
    struct Stored {
        values: BTreeMap<String, Vec<Option<u64>>>,
        log_names: Vec<String>,
        log_json: String,
        log_others: [String; 3],
        frames: u32,
        pooled: BTreeMap<String, [Option<u64>; 4]>,
    }

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("libvmaf-results")
    }

    /// What every answer depends on besides its question: the vendored
    /// libvmaf (its package checksum in Cargo.lock) and how this file puts
    /// the question. Read once per test process; `None` without Cargo.lock.
    fn identity() -> Option<&'static str> {
        static IDENTITY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        IDENTITY
            .get_or_init(|| {
                let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).ok()?;
                let entry = lock.split("[[package]]").find(|p| p.contains("name = \"vmaf-head-sys\""))?;
                let checksum = entry.lines().find(|l| l.starts_with("checksum = "))?;
                Some(format!("{checksum}\n{}", include_str!("reference.rs")))
            })
            .as_deref()
    }

    pub(super) fn key(frames: &[(OwnedPicture, OwnedPicture)], spec: &RefSpec, query: &[String]) -> Option<String> {
        if std::env::var("VMAFX_LIBVMAF_RESULTS").is_ok_and(|v| v == "off") {
            return None;
        }
        let mut h = DefaultHasher::new();
        identity()?.hash(&mut h);
        format!("{spec:?}").hash(&mut h);
        query.hash(&mut h);
        frames.len().hash(&mut h);
        for picture in frames.iter().flat_map(|(r, d)| [r, d]) {
            let f = picture.format();
            (format!("{:?}", f.chroma), f.bits, picture.width(), picture.height()).hash(&mut h);
            let view = picture.view();
            for i in 0..f.chroma.plane_count() {
                let plane = view.plane(i);
                let row = plane.width() * plane.bytes_per_sample();
                for y in 0..plane.height() {
                    h.write(&plane.data()[y * plane.stride()..y * plane.stride() + row]);
                }
            }
        }
        Some(format!("{:016x}.json", h.finish()))
    }

    pub(super) fn read(key: &str) -> Option<RefScores> {
        let text = std::fs::read_to_string(dir().join(key)).ok()?;
        let s: Stored = serde_json::from_str(&text).ok()?;
        let values = s.values.into_iter().map(|(k, v)| (k, v.into_iter().map(|b| b.map(f64::from_bits)).collect()));
        let pooled = s.pooled.into_iter().map(|(k, v)| (k, v.map(|b| b.map(f64::from_bits))));
        Some(RefScores {
            values: values.collect(),
            log_names: s.log_names,
            log_json: s.log_json,
            log_others: s.log_others,
            frames: s.frames,
            pooled: pooled.collect(),
        })
    }

    /// Best effort: a directory that cannot be written only costs the next run time.
    pub(super) fn write(key: &str, scores: &RefScores) {
        let values = scores.values.iter().map(|(k, v)| (k.clone(), v.iter().map(|x| x.map(f64::to_bits)).collect()));
        let pooled = scores.pooled.iter().map(|(k, v)| (k.clone(), v.map(|x| x.map(f64::to_bits))));
        let s = Stored {
            values: values.collect(),
            log_names: scores.log_names.clone(),
            log_json: scores.log_json.clone(),
            log_others: scores.log_others.clone(),
            frames: scores.frames,
            pooled: pooled.collect(),
        };
        let Ok(text) = serde_json::to_string(&s) else { return };
        let _ = std::fs::create_dir_all(dir());
        // Written aside and renamed: test threads and processes share the directory.
        let aside = dir().join(format!("{key}.{}.{:?}", std::process::id(), std::thread::current().id()));
        if std::fs::write(&aside, text).is_ok() && std::fs::rename(&aside, dir().join(key)).is_err() {
            let _ = std::fs::remove_file(&aside);
        }
    }
}

/// Asks libvmaf itself (`try_run` without the stored results).
fn run_libvmaf(
    frames: &[(OwnedPicture, OwnedPicture)],
    spec: &RefSpec,
    query: &[String],
) -> Result<RefScores, String> {
    let _libvmaf = libvmaf_lock();
    // SAFETY: libvmaf's C API under its lock: every return code is checked;
    // names are CStrings alive for the calls that read them; pictures from
    // to_vmaf_picture go to vmaf_read_pictures, which takes them; models,
    // collections and the context are destroyed once (at the end, or on
    // the error path before returning).
    unsafe {
        let mut ctx = ptr::null_mut();
        assert_eq!(sys::vmaf_init(&mut ctx, config(spec.threads, spec.subsample, spec.path)), 0);
        let mut models = Vec::new();
        let mut collections = Vec::new();
        for (k, (version, name)) in spec.models.iter().enumerate() {
            let cname = CString::new(name.as_str()).unwrap();
            let cver = CString::new(version.as_str()).unwrap();
            let mut mcfg = sys::VmafModelConfig { name: cname.as_ptr(), flags: 0 };
            let mut model = ptr::null_mut();
            let mut collection = ptr::null_mut();
            if sys::vmaf_model_load(&mut model, &mut mcfg, cver.as_ptr()) != 0 {
                let err = sys::vmaf_model_collection_load(&mut model, &mut collection, &mut mcfg, cver.as_ptr());
                assert_eq!(err, 0, "load {version} (as a model, then as a collection)");
            }
            for (extractor, option, value) in spec.overloads.get(k).into_iter().flatten() {
                let mut dict = ptr::null_mut();
                let (o, v) = (CString::new(option.as_str()).unwrap(), CString::new(value.as_str()).unwrap());
                assert_eq!(sys::vmaf_feature_dictionary_set(&mut dict, o.as_ptr(), v.as_ptr()), 0);
                let x = CString::new(extractor.as_str()).unwrap();
                // Each call takes the dictionary over and frees it.
                let err = if collection.is_null() {
                    sys::vmaf_model_feature_overload(model, x.as_ptr(), dict)
                } else {
                    sys::vmaf_model_collection_feature_overload(model, &mut collection, x.as_ptr(), dict)
                };
                assert_eq!(err, 0, "overload {version}: {extractor}.{option}={value}");
            }
            if collection.is_null() {
                assert_eq!(sys::vmaf_use_features_from_model(ctx, model), 0, "use {version}");
            } else {
                assert_eq!(sys::vmaf_use_features_from_model_collection(ctx, collection), 0, "use {version}");
                collections.push(collection);
            }
            models.push((model, cname));
        }
        for (name, opts) in &spec.features {
            let mut dict = ptr::null_mut();
            for (k, v) in opts {
                let (k, v) = (CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap());
                assert_eq!(sys::vmaf_feature_dictionary_set(&mut dict, k.as_ptr(), v.as_ptr()), 0);
            }
            let cname = CString::new(name.as_str()).unwrap();
            assert_eq!(sys::vmaf_use_feature(ctx, cname.as_ptr(), dict), 0, "use feature {name}");
        }
        let mut failed = None;
        for (i, (r, d)) in frames.iter().enumerate() {
            let (mut rp, mut dp) = (to_vmaf_picture(r), to_vmaf_picture(d));
            let err = sys::vmaf_read_pictures(ctx, &mut rp, &mut dp, i as u32);
            if err != 0 {
                failed = Some(format!("vmaf_read_pictures at frame {i}: {err}"));
                break;
            }
        }
        let err = sys::vmaf_read_pictures(ctx, ptr::null_mut(), ptr::null_mut(), 0);
        if failed.is_none() && err != 0 {
            failed = Some(format!("flush: {err}"));
        }
        if let Some(e) = failed {
            for (model, _) in models {
                sys::vmaf_model_destroy(model);
            }
            for c in collections {
                sys::vmaf_model_collection_destroy(c);
            }
            sys::vmaf_close(ctx);
            return Err(e);
        }

        let n = frames.len() as u32;
        let mut out = RefScores { frames: n, ..Default::default() };
        for (model, cname) in &models {
            let mut col = Vec::new();
            for i in 0..n {
                let mut s = 0.0;
                let err = sys::vmaf_score_at_index(ctx, *model, &mut s, i);
                col.push(if err == 0 { Some(s) } else { None });
            }
            out.values.insert(cname.to_str().unwrap().to_owned(), col);
            let mut pooled = [None; 4];
            for (slot, (_, method)) in pooled.iter_mut().zip(POOL_METHODS) {
                let mut s = 0.0;
                let err = sys::vmaf_score_pooled(ctx, *model, method, &mut s, 0, n.saturating_sub(1));
                *slot = if err == 0 { Some(s) } else { None };
            }
            out.pooled.insert(cname.to_str().unwrap().to_owned(), pooled);
        }
        for &c in &collections {
            // Scores every frame once; a second scoring would fail (libvmaf
            // never overwrites a value), so the names are read back below.
            let mut score: sys::VmafModelCollectionScore = std::mem::zeroed();
            let err = sys::vmaf_score_pooled_model_collection(
                ctx,
                c,
                sys::VmafPoolingMethod_VMAF_POOL_METHOD_MEAN,
                &mut score,
                0,
                n.saturating_sub(1),
            );
            assert_eq!(err, 0, "vmaf_score_pooled_model_collection");
        }
        for name in query {
            let cname = CString::new(name.as_str()).unwrap();
            let mut col = Vec::new();
            for i in 0..n {
                let mut s = 0.0;
                let err = sys::vmaf_feature_score_at_index(ctx, cname.as_ptr(), &mut s, i);
                col.push(if err == 0 { Some(s) } else { None });
            }
            out.values.insert(name.clone(), col);
            let mut pooled = [None; 4];
            for (slot, (_, method)) in pooled.iter_mut().zip(POOL_METHODS) {
                let mut s = 0.0;
                let err = sys::vmaf_feature_score_pooled(ctx, cname.as_ptr(), method, &mut s, 0, n.saturating_sub(1));
                *slot = if err == 0 { Some(s) } else { None };
            }
            out.pooled.insert(name.clone(), pooled);
        }

        // The JSON log, for the list of names libvmaf prints.
        let dir = std::env::temp_dir().join(format!("vmafx-ref-{}-{:p}", std::process::id(), &out));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ref.json");
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(
            sys::vmaf_write_output(ctx, cpath.as_ptr(), sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_JSON),
            0
        );
        out.log_json = std::fs::read_to_string(&path).unwrap();
        let others = [
            sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_XML,
            sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_CSV,
            sys::VmafOutputFormat_VMAF_OUTPUT_FORMAT_SUB,
        ];
        for (slot, fmt) in out.log_others.iter_mut().zip(others) {
            let path = dir.join("ref.other");
            let cpath = CString::new(path.to_str().unwrap()).unwrap();
            assert_eq!(sys::vmaf_write_output(ctx, cpath.as_ptr(), fmt), 0);
            *slot = std::fs::read_to_string(&path).unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
        let v: serde_json::Value = serde_json::from_str(&out.log_json).unwrap();
        if let Some(m) = v["frames"][0]["metrics"].as_object() {
            out.log_names = m.keys().cloned().collect();
        }

        for (model, _) in models {
            sys::vmaf_model_destroy(model);
        }
        for c in collections {
            sys::vmaf_model_collection_destroy(c);
        }
        sys::vmaf_close(ctx);
        Ok(out)
    }
}

/// libvmaf's version string.
pub fn version() -> String {
    // SAFETY: vmaf_version returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::vmaf_version()).to_string_lossy().into_owned() }
}

/// Panics unless two JSON logs (ours, libvmaf's) are equal but for the
/// lines that differ by design (version, fps), naming the first line that
/// differs. `VMAFX_SHOW_LOGS` prints the heads of both.
pub fn assert_json_logs_equal(label: &str, ours: &str, libvmaf: &str) {
    let masked = |log: &str| -> String {
        log.lines()
            .filter(|l| !l.starts_with("  \"version\": ") && !l.starts_with("  \"fps\": "))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let (a, b) = (masked(ours), masked(libvmaf));
    if a != b {
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
        if std::env::var_os("VMAFX_SHOW_LOGS").is_some() {
            eprintln!("ours:\n{}\nlibvmaf:\n{}", &a[..a.len().min(1500)], &b[..b.len().min(1500)]);
        }
        panic!("{label}: JSON logs differ at line {}:\n  ours:    {:?}\n  libvmaf: {:?}", line + 1, a.lines().nth(line), b.lines().nth(line));
    }
}
