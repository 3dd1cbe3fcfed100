//! Bootstrap model collections (libvmaf 3.2.0 `read_json_model.c`
//! `model_collection_parse`, `model.c` `vmaf_model_collection_append`,
//! `predict.c` `vmaf_bootstrap_predict_score_at_index`).
//!
//! A collection file holds members "0", "1", ...: member 0 is an ordinary
//! model scored under the configured name ("vmaf"); members 1.. form the
//! collection, each scored under "vmaf_0001", "vmaf_0002", ..., and from
//! their unclipped, untransformed predictions come "vmaf_bagging" (mean),
//! "vmaf_stddev", "vmaf_ci_p95_lo" and "vmaf_ci_p95_hi" (2.5th and 97.5th
//! percentiles), each mapped through member 1's transform and clip.

use super::definition::{LoadFlags, ModelDefinition, ModelType};
use super::json::{self, Json};
use crate::{Error, Result};

/// The collection's statistics, in the order libvmaf appends them.
const SUFFIXES: [&str; 4] = ["_bagging", "_stddev", "_ci_p95_lo", "_ci_p95_hi"];

/// Members 1.. of a collection, named as libvmaf names them.
#[derive(Clone, Debug)]
pub(crate) struct Bootstrap {
    /// ("vmaf_0001", member 1), ...
    pub(crate) members: Vec<(String, ModelDefinition)>,
    /// "vmaf_bagging", "vmaf_stddev", "vmaf_ci_p95_lo", "vmaf_ci_p95_hi".
    pub(crate) statistics: [String; 4],
}

/// Whether a model file is a collection: libvmaf reads a file as one model
/// when it can (a top-level `model_dict`) and as a collection otherwise.
pub(crate) fn is_collection(doc: &Json) -> bool {
    match doc {
        Json::Object(members) => {
            !members.iter().any(|(k, _)| k == "model_dict") && members.iter().any(|(k, _)| k == "0")
        }
        _ => false,
    }
}

/// Parses a collection: member 0 and the bootstrap members, `name` being
/// the configured model name.
pub(crate) fn parse(doc: &Json, name: &str, flags: LoadFlags) -> Result<(ModelDefinition, Bootstrap)> {
    let Json::Object(top) = doc else {
        return Err(Error::Model("model collection: expected an object".into()));
    };
    // libvmaf reads the members in file order, taking the key that spells
    // the next index ("0", then "1", ...) and skipping every other key.
    let mut defs = Vec::new();
    for (key, value) in top {
        if *key == defs.len().to_string() {
            let def = ModelDefinition::from_json_value(value, flags)
                .map_err(|e| prefixed(e, &format!("model collection member \"{key}\"")))?;
            defs.push(def);
        }
    }
    if defs.len() < 2 {
        return Err(Error::Model(
            "model collection: needs members \"0\" and \"1\" at least (libvmaf refuses it)".into(),
        ));
    }
    let model0 = defs.remove(0);
    let kind = defs[0].model_type;
    if let Some(i) = defs.iter().position(|d| d.model_type != kind) {
        return Err(Error::Model(format!(
            "model collection: member \"{}\" has model_type {:?}, member \"1\" {kind:?} (libvmaf refuses mixed types)",
            i + 1,
            defs[i].model_type
        )));
    }
    if !matches!(kind, ModelType::BootstrapSvmNuSvr | ModelType::ResidueBootstrapSvmNuSvr) {
        return Err(Error::NotSupported(format!(
            "model collection of model_type {kind:?} (libvmaf scores bootstrap collections only)"
        )));
    }
    let members = defs.into_iter().enumerate().map(|(i, d)| (format!("{name}_{:04}", i + 1), d)).collect();
    let statistics = SUFFIXES.map(|s| format!("{name}{s}"));
    Ok((model0, Bootstrap { members, statistics }))
}

/// Parses `text` as a collection when it is one (`None` for a single model).
pub(crate) fn parse_text(text: &str, name: &str, flags: LoadFlags) -> Result<Option<(ModelDefinition, Bootstrap)>> {
    // A text that is not JSON is left for the single-model parser to report.
    let Ok(doc) = json::parse(text) else { return Ok(None) };
    if !is_collection(&doc) {
        return Ok(None);
    }
    parse(&doc, name, flags).map(Some)
}

fn prefixed(e: Error, what: &str) -> Error {
    match e {
        Error::Model(m) => Error::Model(format!("{what}: {m}")),
        Error::NotSupported(m) => Error::NotSupported(format!("{what}: {m}")),
        other => other,
    }
}

/// `percentile` of `predict.c` on sorted scores.
fn percentile(scores: &[f64], perc: f64) -> f64 {
    let p = perc * (scores.len() - 1) as f64 / 100.;
    let (l, r) = (p.floor() as usize, p.ceil() as usize);
    if l == r {
        scores[l]
    } else {
        scores[l] * (r as f64 - p) + scores[r] * (p - l as f64)
    }
}

impl Bootstrap {
    /// The members' scores, then the four statistics, for one frame's
    /// feature values (in the order of the members' features), appended to
    /// `out` in the order of [`Bootstrap::names`].
    pub(crate) fn score(&self, values: &[f64], out: &mut Vec<f64>) -> Result<()> {
        let n = self.members.len();
        let mut raw = Vec::with_capacity(n);
        for (_, def) in &self.members {
            raw.push(def.raw_score(values)?);
            out.push(def.score(values)?);
        }
        let mut sum = 0.;
        for s in &raw {
            sum += s;
        }
        let mean = sum / n as f64;
        let delta = 0.01;
        let plus = mean + delta;
        let minus = mean - delta;
        let mut ssd = 0.;
        for s in &raw {
            // pow(x, 2) in libvmaf; GCC folds it to x * x.
            let d = s - mean;
            ssd += d * d;
        }
        let mut stddev = (ssd / n as f64).sqrt();
        // qsort with a three-way compare; NaN (never from a model) last.
        raw.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        let (lo, hi) = (percentile(&raw, 2.5), percentile(&raw, 97.5));
        let first = &self.members[0].1;
        let map = |x: f64| first.clip(first.apply_transform(x));
        let slope = (map(plus) - map(minus)) / (2.0 * delta);
        stddev *= slope;
        out.extend([map(mean), stddev, map(lo), map(hi)]);
        Ok(())
    }

    /// Names of the values [`Bootstrap::score`] appends.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|(n, _)| n.as_str()).chain(self.statistics.iter().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_as_libvmaf() {
        let s: Vec<f64> = (0..20).map(|i| i as f64 * 2.0).collect();
        // p = 2.5 * 19 / 100 = 0.475: between the first two.
        assert_eq!(percentile(&s, 2.5), 0.0 * (1.0 - 0.475) + 2.0 * 0.475);
        assert_eq!(percentile(&s, 97.5), s[18] * (19.0 - 18.525) + s[19] * (18.525 - 18.0));
        assert_eq!(percentile(&[1.0, 5.0, 9.0], 50.0), 5.0);
    }
}
