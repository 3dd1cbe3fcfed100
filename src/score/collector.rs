//! The feature collector: one value per (feature, frame), as libvmaf's
//! `feature_collector.c` keeps them. Features keep the order in which they
//! were first written, so logs list them deterministically.
//!
//! Besides per-frame values it keeps whole-stream aggregates (libvmaf's
//! `aggregate_vector`, e.g. psnr's `apsnr_y`) and private per-frame values
//! an extractor leaves for its own flush (names starting with
//! [`PRIVATE_PREFIX`]; never listed).

use std::collections::HashMap;

use crate::{Error, Result};

#[derive(Clone, Debug, Default)]
pub struct FeatureCollector {
    names: Vec<String>,
    index_of: HashMap<String, usize>,
    /// Per feature, the values of frames `first_kept..`.
    values: Vec<Vec<Option<f64>>>,
    /// Frames before this one were retired ([`FeatureCollector::retire_before`]).
    first_kept: u32,
    aggregates: Vec<(String, f64)>,
}

/// Prefix of per-frame values an extractor writes only for its own flush
/// (whole-stream sums that every worker contributes to): stored and read
/// back like features, but not listed by [`FeatureCollector::names`], so
/// logs never show them.
pub(crate) const PRIVATE_PREFIX: &str = "vmafx-private:";

impl FeatureCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a feature name so it is listed even before its first
    /// value (fixes the log order).
    pub fn declare(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index_of.get(name) {
            return i;
        }
        let i = self.values.len();
        if !name.starts_with(PRIVATE_PREFIX) {
            self.names.push(name.to_owned());
        }
        self.index_of.insert(name.to_owned(), i);
        self.values.push(Vec::new());
        i
    }

    /// Writes `value` for `name` at frame `index`. Writing the same slot
    /// twice is an error, as in libvmaf.
    pub fn append(&mut self, name: &str, index: u32, value: f64) -> Result<()> {
        if index < self.first_kept {
            return Err(Error::Internal(format!(
                "feature {name} written for frame {index}, which was already retired (logged and released)"
            )));
        }
        let f = self.declare(name);
        let column = &mut self.values[f];
        let i = (index - self.first_kept) as usize;
        if column.len() <= i {
            column.resize(i + 1, None);
        }
        if column[i].is_some() {
            return Err(Error::Internal(format!(
                "feature {name} written twice for frame {index}"
            )));
        }
        column[i] = Some(value);
        Ok(())
    }

    /// Value of `name` at frame `index`, if written (and not retired).
    pub fn get(&self, name: &str, index: u32) -> Option<f64> {
        let f = *self.index_of.get(name)?;
        let i = index.checked_sub(self.first_kept)?;
        self.values[f].get(i as usize).copied().flatten()
    }

    /// Drops the values of frames before `frame` (a log has them, nothing
    /// reads them again), so a long stream holds a few frames' values,
    /// not all of them. Aggregates and the feature list stay.
    pub fn retire_before(&mut self, frame: u32) {
        if frame <= self.first_kept {
            return;
        }
        let n = (frame - self.first_kept) as usize;
        for column in &mut self.values {
            column.drain(..n.min(column.len()));
        }
        self.first_kept = frame;
    }

    /// The first frame whose values are kept (0 unless retired).
    pub fn first_kept(&self) -> u32 {
        self.first_kept
    }

    /// Feature names in first-written order (private values excluded).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn contains(&self, name: &str) -> bool {
        self.index_of.contains_key(name)
    }

    /// The values of `name` kept, indexed by frame from
    /// [`FeatureCollector::first_kept`] (`None` where not written).
    pub fn column(&self, name: &str) -> Option<&[Option<f64>]> {
        self.index_of.get(name).map(|&f| self.values[f].as_slice())
    }

    /// One past the highest frame index any feature was written for (or
    /// retired up to).
    pub fn frame_count(&self) -> u32 {
        self.first_kept + self.values.iter().map(|c| c.len()).max().unwrap_or(0) as u32
    }

    /// Sets a whole-stream value, as libvmaf's
    /// `vmaf_feature_collector_set_aggregate`: setting a name again is
    /// accepted only with the same value.
    pub fn set_aggregate(&mut self, name: &str, value: f64) -> Result<()> {
        if let Some((_, v)) = self.aggregates.iter().find(|(n, _)| n == name) {
            // libvmaf compares with ==.
            return if *v == value {
                Ok(())
            } else {
                Err(Error::Internal(format!("aggregate {name} set twice ({v}, then {value})")))
            };
        }
        self.aggregates.push((name.to_owned(), value));
        Ok(())
    }

    /// The aggregate `name`, if set.
    pub fn aggregate(&self, name: &str) -> Option<f64> {
        self.aggregates.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// Aggregates in the order they were set.
    pub fn aggregates(&self) -> &[(String, f64)] {
        &self.aggregates
    }
}
