//! One libFuzzer binary for every target of `vmafx::internals::fuzz::TARGETS`; the
//! environment variable VMAFX_FUZZ_TARGET names the one to run
//! (scripts/fuzz sets it).
#![no_main]

use std::sync::OnceLock;

fn target() -> fn(&[u8]) {
    static TARGET: OnceLock<fn(&[u8])> = OnceLock::new();
    *TARGET.get_or_init(|| {
        let name = std::env::var("VMAFX_FUZZ_TARGET").unwrap_or_default();
        let known: Vec<_> = vmafx::internals::fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
        match vmafx::internals::fuzz::TARGETS.iter().find(|(n, _)| *n == name) {
            Some((_, f)) => *f,
            None => panic!("VMAFX_FUZZ_TARGET={name:?}: expected one of {known:?}"),
        }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| target()(data));
