//! Which SIMD levels a checkasm test can prove on this machine.
//!
//! CI machines differ: some have AVX-512, some do not. A test compares every
//! level the CPU runs with the scalar reference and says in the log which
//! levels it ran and which it could not, so a log shows what was proven.
//! `VMAFX_CPU_LEVEL` caps the levels as it caps the library
//! (`CpuLevel::detect`), which lets an AVX-512 machine stand in for one
//! without it.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

use vmafx::CpuLevel;

/// The levels above scalar that this CPU runs (capped by `VMAFX_CPU_LEVEL`),
/// lowest first; says once per family which it runs and which it skips, and
/// why. Written to stderr directly: the test harness captures `eprintln!`
/// of passing tests, and this line belongs in every log.
pub fn simd_levels(family: &str) -> Vec<CpuLevel> {
    let top = CpuLevel::detect();
    let (ran, skipped): (Vec<CpuLevel>, Vec<CpuLevel>) =
        CpuLevel::ALL.into_iter().filter(|l| *l > CpuLevel::Scalar).partition(|l| *l <= top);
    let names = |v: &[CpuLevel]| v.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ");
    let mut line = format!("checkasm {family}: ran scalar vs [{}]", names(&ran));
    if !skipped.is_empty() {
        let why = if CpuLevel::detect_host() > top { "capped by VMAFX_CPU_LEVEL" } else { "not runnable on this CPU" };
        line += &format!("; skipped [{}] ({why})", names(&skipped));
    }
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if SAID.lock().unwrap_or_else(|p| p.into_inner()).insert(family.to_owned()) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    ran
}
