//! The fuzz targets (src/fuzz.rs) without a fuzzer build: every committed
//! corpus file (fuzz/corpus/TARGET: seeds, and inputs that once crashed a
//! target, kept as regressions), then a fixed number of deterministic
//! mutations of each (bytes flipped, cut, spliced, repeated). A target that
//! panics fails the test and names the input, written to
//! target/fuzz-replay-failures/ to replay with scripts/fuzz's fuzzer.
//!
//! The long runs with coverage feedback are scripts/fuzz's (not part of the
//! test suite); docs/reliability.md has their figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The largest single allocation an input may cause. A header that claims
/// a huge frame must not cost that memory before the frame's bytes are
/// there: with lazily zeroed pages a 25 GB `vec![0; n]` passes unnoticed
/// here (the fuzzer's malloc limit catches it), so the size requested is
/// what is checked.
const LARGEST_ALLOCATION: usize = 64 << 20;

thread_local! {
    /// The largest allocation requested on this thread since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

struct Watching;

impl Watching {
    fn note(size: usize) {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// bookkeeping touches only a thread-local Cell (no allocation, no Drop).
unsafe impl GlobalAlloc for Watching {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size());
        // SAFETY: the caller's layout, as GlobalAlloc::alloc was given it.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::note(layout.size());
        // SAFETY: the caller's layout, as GlobalAlloc::alloc_zeroed was given it.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::note(new_size);
        // SAFETY: `ptr` came from this allocator, which is System's, with
        // `layout` (GlobalAlloc::realloc's contract on the caller).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from System (every allocation here does) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Watching = Watching;

/// Mutations per corpus file: the whole replay stays within a few seconds
/// on one core (docs/reliability.md states the budget; no timing asserted).
const MUTATIONS_PER_FILE: usize = 150;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: an empty corpus", dir.display());
    files.into_iter().map(|p| { let b = std::fs::read(&p).expect("a corpus file"); (p, b) }).collect()
}

/// xorshift64*: the same mutations on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = [0, 0xff, 0x7f, 0x80, b'0', b'9', b':', b'=', b'|', b' '][rng.below(10)];
            }
            2 => v.truncate(rng.below(v.len() + 1)),
            3 => {
                let i = rng.below(v.len() + 1);
                let n = rng.below(other.len() + 1);
                let j = rng.below(other.len() - n + 1);
                v.splice(i..i, other[j..j + n].iter().copied());
            }
            4 if !v.is_empty() => {
                let i = rng.below(v.len());
                let n = rng.below(v.len() - i + 1).min(64);
                let chunk = v[i..i + n].to_vec();
                v.splice(i..i, chunk);
            }
            _ => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
        }
    }
    v
}

fn replay(target: &str) {
    let (_, run) = vmafx::internals::fuzz::TARGETS.iter().find(|(n, _)| *n == target).expect("a known target");
    let files = corpus(target);
    let start = Instant::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ target.len() as u64);
    let mut runs = 0;
    for (fi, (path, seed)) in files.iter().enumerate() {
        let other = &files[(fi + 1) % files.len()].1;
        let inputs = std::iter::once(seed.clone())
            .chain((0..MUTATIONS_PER_FILE).map(|_| mutate(&mut rng, seed, other)))
            .collect::<Vec<_>>();
        for (k, input) in inputs.iter().enumerate() {
            runs += 1;
            LARGEST.with(|l| l.set(0));
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                run(input);
                let largest = LARGEST.with(|l| l.get());
                assert!(largest <= LARGEST_ALLOCATION, "{largest} bytes allocated at once for {} input bytes", input.len());
            }));
            if outcome.is_err() {
                let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-replay-failures").join(target);
                std::fs::create_dir_all(&out).expect("the failures folder");
                let file = out.join(format!("{}-{k}", path.file_name().unwrap().to_string_lossy()));
                std::fs::write(&file, input).expect("the failing input");
                panic!(
                    "fuzz target {target} failed on {} (mutation {k} of {}), written to {}",
                    if k == 0 { "the corpus file itself" } else { "a mutation" },
                    path.display(),
                    file.display()
                );
            }
        }
    }
    eprintln!("{target}: {runs} inputs in {:.2} s", start.elapsed().as_secs_f64());
}

#[test]
fn y4m() {
    replay("y4m");
}

#[test]
fn yuv() {
    replay("yuv");
}

#[test]
fn model_json() {
    replay("model_json");
}

#[test]
fn cli_options() {
    replay("cli_options");
}

#[test]
fn filter_options() {
    replay("filter_options");
}

#[test]
fn drm_descriptor() {
    replay("drm_descriptor");
}

#[test]
fn c_api() {
    replay("c_api");
}

/// The targets and the corpus folders name each other one to one.
#[test]
fn every_target_has_a_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut folders: Vec<String> = std::fs::read_dir(&dir)
        .expect("fuzz/corpus")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut targets: Vec<String> = vmafx::internals::fuzz::TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    targets.sort();
    assert_eq!(folders, targets);
}
