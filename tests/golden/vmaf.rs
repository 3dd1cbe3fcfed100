//! Golden test: every lossy clip of `tests/support/clips.rs` scored by vmafx
//! (scalar on the calling thread, and the host's best SIMD level on 2
//! workers) and by libvmaf 3.2.0 with the four v0.6.1 built-in models and
//! psnr. Every per-frame feature and score, and every pooled value (mean,
//! harmonic mean, min, max), must be the same double, bit for bit; the names
//! vmafx writes must be the names libvmaf's JSON log prints.
//!
//! Prints a summary table (and writes it to
//! `target/vmafx-clips/golden-summary.md`).


use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::support::{clips, reference};
use vmafx::{Context, ContextConfig, CpuLevel, FeatureOptions, Model, ModelConfig, OwnedPicture, PoolMethod};
use vmafx::internals::feature::naming::alias;

/// (built-in version, name in the collector)
const MODELS: [(&str, &str); 4] = [
    ("vmaf_v0.6.1", "vmaf"),
    ("vmaf_v0.6.1neg", "vmaf_neg"),
    ("vmaf_4k_v0.6.1", "vmaf_4k"),
    ("vmaf_4k_v0.6.1neg", "vmaf_4k_neg"),
];

const POOLS: [PoolMethod; 4] = [PoolMethod::Mean, PoolMethod::HarmonicMean, PoolMethod::Min, PoolMethod::Max];

fn run_ours(
    frames: &[(OwnedPicture, OwnedPicture)],
    threads: usize,
    cpu: CpuLevel,
) -> vmafx::Result<Context> {
    let mut ctx = Context::new(ContextConfig { threads, subsample: 1, cpu, ..Default::default() })?;
    for (version, name) in MODELS {
        let cfg = ModelConfig { name: Some(name.into()), ..Default::default() };
        ctx.use_model(Model::builtin(version, &cfg)?)?;
    }
    ctx.use_feature("psnr", FeatureOptions::new())?;
    for (r, d) in frames {
        ctx.push(Arc::new(r.clone()), Arc::new(d.clone()))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

struct Comparison {
    values: usize,
    mismatches: Vec<String>,
    max_abs_diff: f64,
}

impl Comparison {
    fn check(&mut self, what: impl FnOnce() -> String, ours: Option<f64>, theirs: Option<f64>) {
        self.values += 1;
        if ours.map(f64::to_bits) != theirs.map(f64::to_bits) {
            if let (Some(a), Some(b)) = (ours, theirs) {
                let d = (a - b).abs();
                self.max_abs_diff = self.max_abs_diff.max(if d.is_nan() { f64::INFINITY } else { d });
            } else {
                self.max_abs_diff = f64::INFINITY;
            }
            if self.mismatches.len() < 8 {
                self.mismatches.push(format!("{}: vmafx {ours:?}, libvmaf {theirs:?}", what()));
            } else if self.mismatches.len() == 8 {
                self.mismatches.push("...".into());
            }
        }
    }
}

fn compare(ctx: &Context, r: &reference::RefScores, frames: u32, label: &str, cmp: &mut Comparison) {
    let names = ctx.collector().names().to_vec();
    for name in &names {
        for i in 0..frames {
            cmp.check(
                || format!("{label} {name} frame {i}"),
                ctx.score_at(name, i),
                r.values[name][i as usize],
            );
        }
        for (k, method) in POOLS.iter().enumerate() {
            let ours = ctx.pooled(name, *method, 0, frames - 1).ok();
            cmp.check(|| format!("{label} {name} pooled {method:?}"), ours, r.pooled[name][k]);
        }
    }
    // The names a log prints: ours through libvmaf's alias table, and
    // libvmaf's JSON log.
    let ours: BTreeSet<&str> = names.iter().map(|n| alias(n)).collect();
    let theirs: BTreeSet<&str> = r.log_names.iter().map(String::as_str).collect();
    if ours != theirs {
        cmp.max_abs_diff = f64::INFINITY;
        cmp.mismatches.push(format!(
            "{label} feature names differ: only vmafx {:?}, only libvmaf {:?}",
            ours.difference(&theirs).collect::<Vec<_>>(),
            theirs.difference(&ours).collect::<Vec<_>>()
        ));
    }
}

fn mean(r: &reference::RefScores, name: &str) -> String {
    r.pooled.get(name).and_then(|p| p[0]).map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

#[test]
fn golden_clips_match_libvmaf() {
    let clips = clips::all();
    let mut table = String::from(
        "| clip | format | size | frames | VMAF | VMAF neg | VMAF 4k | VMAF 4k neg | PSNR-Y | values compared | max abs diff |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut failures = Vec::new();
    for clip in &clips {
        let frames = clips::read_pairs(clip);
        let n = frames.len() as u32;
        let mut cmp = Comparison { values: 0, mismatches: Vec::new(), max_abs_diff: 0.0 };
        // Scalar kernels on the calling thread, and the best SIMD level on
        // two workers: both must give libvmaf's numbers.
        let runs = [(0usize, CpuLevel::Scalar), (2, CpuLevel::detect())];
        let ours: Vec<_> = runs
            .iter()
            .map(|&(t, cpu)| (format!("threads {t} {}", cpu.name()), run_ours(&frames, t, cpu)))
            .collect();
        let mut query: Vec<String> = vec!["psnr_y".into()];
        if let Some((_, Ok(ctx))) = ours.first() {
            query = ctx.collector().names().to_vec();
        }
        let spec = reference::RefSpec {
            models: MODELS.iter().map(|(v, n)| (v.to_string(), n.to_string())).collect(),
            features: vec![("psnr".into(), vec![])],
            threads: 2,
            subsample: 1,
            ..Default::default()
        };
        let r = reference::run(&frames, &spec, &query);
        for (label, result) in &ours {
            match result {
                Ok(ctx) => compare(ctx, &r, n, label, &mut cmp),
                Err(e) => {
                    cmp.max_abs_diff = f64::INFINITY;
                    cmp.mismatches.push(format!("{label}: vmafx failed: {e}"));
                }
            }
        }
        // The same names; their order follows libvmaf's at each thread
        // count (psnr first with threads: tests/golden/log_order.rs).
        if let (Some((_, Ok(a))), Some((_, Ok(b)))) = (ours.first(), ours.get(1)) {
            let sorted = |c: &Context| {
                let mut v = c.collector().names().to_vec();
                v.sort();
                v
            };
            if sorted(a) != sorted(b) {
                cmp.mismatches.push("the two runs wrote different features".into());
            }
        }
        let diff = if cmp.max_abs_diff == 0.0 && cmp.mismatches.is_empty() {
            "0".to_owned()
        } else {
            format!("{:e}", cmp.max_abs_diff)
        };
        let _ = writeln!(
            table,
            "| {} | {} | {}x{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            clip.name,
            clip.pix_fmt,
            clip.width,
            clip.height,
            n,
            mean(&r, "vmaf"),
            mean(&r, "vmaf_neg"),
            mean(&r, "vmaf_4k"),
            mean(&r, "vmaf_4k_neg"),
            mean(&r, "psnr_y"),
            cmp.values,
            diff
        );
        if !cmp.mismatches.is_empty() {
            failures.push(format!("{}:\n  {}", clip.name, cmp.mismatches.join("\n  ")));
        }
    }
    println!("\n{table}");
    let _ = std::fs::write(clips::cache_dir().join("golden-summary.md"), &table);
    assert!(
        failures.is_empty(),
        "{} of {} clips differ from libvmaf:\n{}",
        failures.len(),
        clips.len(),
        failures.join("\n")
    );
}
