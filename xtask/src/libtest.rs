//! What a step's log says: the counts of libtest's `test result:` lines, the
//! tests it lists as failed, the notes of tests that skipped, and the twins'
//! own comparison rows (a row ending `equal` or `DIFFERENT`: the GPU value
//! against the CPU's, compared as bits by the test).

#[derive(Default, Debug, PartialEq)]
pub struct StepReport {
    /// How many `test result:` lines (one per test binary run).
    pub results: u32,
    pub passed: u32,
    pub failed: u32,
    pub ignored: u32,
    /// Tests libtest names under `failures:`.
    pub failures: Vec<String>,
    /// `panicked at` lines (where the first failure was found).
    pub panics: Vec<String>,
    /// Lines a test printed when it skipped (`SKIP …`).
    pub skips: Vec<String>,
    /// Comparison rows of the twins' tables: equal, and the different ones.
    pub equal_rows: u32,
    pub different_rows: Vec<String>,
    /// The tests' own totals: "[feature: ]N comparisons, M different".
    pub comparisons: u32,
    pub different: u32,
}

impl StepReport {
    pub fn parse(log: &str) -> StepReport {
        let mut r = StepReport::default();
        let mut in_failures = false;
        for line in log.lines() {
            let trimmed = line.trim();
            if let Some(rest) = trimmed.strip_prefix("test result: ") {
                r.results += 1;
                r.passed += count(rest, " passed");
                r.failed += count(rest, " failed");
                r.ignored += count(rest, " ignored");
                in_failures = false;
                continue;
            }
            if trimmed == "failures:" {
                in_failures = true;
                continue;
            }
            if in_failures {
                // The closing list: "    name" lines; the first `failures:`
                // block holds "---- name stdout ----" sections instead.
                if let Some(name) = line.strip_prefix("    ") {
                    if !name.starts_with(' ') && !name.is_empty() && !r.failures.iter().any(|f| f == name) {
                        r.failures.push(name.to_string());
                    }
                }
                continue;
            }
            if line.contains("panicked at") {
                r.panics.push(trimmed.to_string());
            }
            if let Some(pos) = line.find("SKIP") {
                r.skips.push(line[pos..].trim().to_string());
            }
            if let Some((head, tail)) = trimmed.split_once(" comparisons, ") {
                let n = head.rsplit(' ').next().and_then(|n| n.parse::<u32>().ok());
                let d = tail.strip_suffix(" different").and_then(|d| d.parse::<u32>().ok());
                if let (Some(n), Some(d)) = (n, d) {
                    r.comparisons += n;
                    r.different += d;
                }
            }
            match trimmed.rsplit(char::is_whitespace).next() {
                Some("equal") if trimmed.contains(char::is_whitespace) => r.equal_rows += 1,
                Some("DIFFERENT") => r.different_rows.push(trimmed.to_string()),
                _ => {}
            }
        }
        r
    }

    /// The step's tests ran (a result line, at least one test passed: a
    /// filter that matches nothing is a mistake, not a pass) and none
    /// failed, no comparison row differed.
    pub fn clean(&self) -> bool {
        self.results > 0 && self.passed > 0 && self.failed == 0 && self.failures.is_empty() && self.different_rows.is_empty() && self.different == 0
    }
}

/// The number before `what` in "6 passed; 0 failed; …" (0 when absent).
fn count(summary: &str, what: &str) -> u32 {
    summary
        .split(';')
        .find_map(|part| part.trim().trim_start_matches("ok. ").trim_start_matches("FAILED. ").strip_suffix(what.trim_start_matches(' ')).map(str::trim))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A whole twins run on the H200 (scripts/gpu-twins run, 2026-12-03).
    const CAMBI_RUN: &str = include_str!("../../docs/h200/2026-12-03-e-gpu-twins-cambi.log");

    #[test]
    fn a_recorded_twins_run_counts_every_result_and_comparison_row() {
        let r = StepReport::parse(CAMBI_RUN);
        assert_eq!(r.results, 8, "loaders, compile, twins, contexts, import, fns, two defects");
        assert!(r.passed > 30, "{r:?}");
        // The two planted defects' binaries each failed one test.
        assert_eq!(r.failed, 2);
        // motion and PSNR 576, VIF 100, ADM 149; one table row per case.
        assert_eq!((r.comparisons, r.different), (576 + 100 + 149, 0));
        assert_eq!(r.equal_rows, 151);
        assert!(r.different_rows.is_empty());
        assert!(r.skips.iter().any(|s| s.starts_with("SKIP hip:")), "{:?}", r.skips);
    }

    #[test]
    fn the_counts_of_a_result_line() {
        let line = "FAILED. 9 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out; finished in 44.91s";
        assert_eq!((count(line, " passed"), count(line, " failed"), count(line, " ignored")), (9, 1, 2));
        assert_eq!(count("ok. 6 passed; 0 failed", " measured"), 0);
    }

    #[test]
    fn a_failing_run_names_its_tests_and_different_rows() {
        let log = "running 2 tests\n\
            Cuda0      8      33x33     33 Random     []    0.11      0.08  0.35388918302208172  equal\n\
            Cuda0      8      33x33     36 Enhanced   []    0.09      0.07  1.02577947346376996  DIFFERENT\n\
            adm: 2 comparisons, 1 different\n\
            thread 'gpu_adm_equals_the_cpu' panicked at tests/device/twins.rs:463:5:\n\
            test gpu_adm_equals_the_cpu ... FAILED\n\
            \n\
            failures:\n\
            \n\
            ---- gpu_adm_equals_the_cpu stdout ----\n\
            \n\
            failures:\n    gpu_adm_equals_the_cpu\n\n\
            test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.51s\n";
        let r = StepReport::parse(log);
        assert_eq!((r.results, r.passed, r.failed, r.equal_rows), (1, 1, 1, 1));
        assert_eq!(r.failures, vec!["gpu_adm_equals_the_cpu"]);
        assert_eq!(r.different_rows.len(), 1);
        assert_eq!((r.comparisons, r.different), (2, 1));
        assert_eq!(r.panics.len(), 1);
        assert!(!r.clean());
    }

    #[test]
    fn a_log_without_a_result_line_is_not_clean() {
        assert!(!StepReport::parse("error while loading shared libraries: libcuda.so.1\n").clean());
        assert!(StepReport::parse("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n").clean());
        // A module this binary lacks: its filter matched nothing.
        assert!(!StepReport::parse("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 62 filtered out\n").clean());
    }
}
