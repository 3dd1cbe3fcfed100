//! Extractor options with libvmaf's names, aliases, defaults and ranges.
//!
//! Parsing follows libvmaf's `opt.c`: booleans are exactly "true"/"false",
//! numbers must lie within [min, max]; anything else is refused with the
//! option's name and range.

use std::collections::BTreeMap;

use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionKind {
    Bool { default: bool },
    Int { default: i32, min: i32, max: i32 },
    Double { default: f64, min: f64, max: f64 },
    /// Text taken as given (libvmaf's `VMAF_OPT_TYPE_STRING`); `None` is
    /// libvmaf's NULL default. The extractor checks the value.
    Str { default: Option<&'static str> },
}

/// One option of an extractor.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    /// Short name used in derived feature names ("egl" in
    /// "integer_vif_scale0_egl_1").
    pub alias: Option<&'static str>,
    pub help: &'static str,
    pub kind: OptionKind,
    /// A feature parameter changes the feature's value, so a non-default
    /// value is written into the feature's name (libvmaf's
    /// `VMAF_OPT_FLAG_FEATURE_PARAM`).
    pub feature_param: bool,
}

/// libvmaf's `debug` option, shared by its integer extractors: extra
/// per-frame values, not a feature parameter (names do not change).
pub(crate) const DEBUG_OPTION: OptionSpec = OptionSpec {
    name: "debug",
    alias: None,
    help: "debug mode: enable additional output",
    kind: OptionKind::Bool { default: false },
    feature_param: false,
};

#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Bool(bool),
    Int(i32),
    Double(f64),
    /// `None`: a string option left at libvmaf's NULL default.
    Str(Option<String>),
}

impl OptionSpec {
    pub fn default_value(&self) -> OptionValue {
        match self.kind {
            OptionKind::Bool { default } => OptionValue::Bool(default),
            OptionKind::Int { default, .. } => OptionValue::Int(default),
            OptionKind::Double { default, .. } => OptionValue::Double(default),
            OptionKind::Str { default } => OptionValue::Str(default.map(str::to_owned)),
        }
    }

    /// Parses `text` as libvmaf's `vmaf_option_set` does.
    pub fn parse(&self, text: &str) -> Result<OptionValue> {
        let bad = |why: &str| {
            Error::invalid(format!("option {}={text}: {why}", self.name))
        };
        match self.kind {
            OptionKind::Bool { .. } => match text {
                "true" => Ok(OptionValue::Bool(true)),
                "false" => Ok(OptionValue::Bool(false)),
                _ => Err(bad("expected true or false")),
            },
            OptionKind::Int { min, max, .. } => {
                let n: i32 = text.trim().parse().map_err(|_| bad("not an integer"))?;
                if n < min || n > max {
                    return Err(bad(&format!("outside [{min}, {max}]")));
                }
                Ok(OptionValue::Int(n))
            }
            OptionKind::Double { min, max, .. } => {
                let n: f64 = text.trim().parse().map_err(|_| bad("not a number"))?;
                self.check_double(n).map_err(|_| bad(&format!("outside [{min}, {max}]")))
            }
            OptionKind::Str { .. } => Ok(OptionValue::Str(Some(text.to_owned()))),
        }
    }

    fn check_double(&self, n: f64) -> Result<OptionValue> {
        if let OptionKind::Double { min, max, .. } = self.kind {
            if !(n >= min && n <= max) {
                return Err(Error::invalid(format!(
                    "option {}={n}: outside [{min}, {max}]",
                    self.name
                )));
            }
        }
        Ok(OptionValue::Double(n))
    }

    /// Takes a value from a model file's `feature_opts_dicts` (JSON).
    pub fn from_json(&self, v: &serde_json::Value) -> Result<OptionValue> {
        match (self.kind, v) {
            (OptionKind::Bool { .. }, serde_json::Value::Bool(b)) => Ok(OptionValue::Bool(*b)),
            (OptionKind::Int { .. }, serde_json::Value::Number(n)) => self.parse(&n.to_string()),
            (OptionKind::Double { .. }, serde_json::Value::Number(n)) => self.check_double(
                n.as_f64().ok_or_else(|| Error::invalid(format!("option {}: {n}", self.name)))?,
            ),
            (_, serde_json::Value::String(s)) => self.parse(s),
            _ => Err(Error::invalid(format!("option {}: unexpected value {v}", self.name))),
        }
    }
}

/// Option values set for one extractor instance, keyed by option name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FeatureOptions {
    values: BTreeMap<String, OptionValue>,
}

impl FeatureOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` (or its alias) from text, checked against `specs`.
    pub fn set_text(&mut self, specs: &[OptionSpec], name: &str, text: &str) -> Result<()> {
        let spec = find_spec(specs, name)?;
        let v = spec.parse(text)?;
        self.values.insert(spec.name.to_owned(), v);
        Ok(())
    }

    pub fn set(&mut self, specs: &[OptionSpec], name: &str, value: OptionValue) -> Result<()> {
        let spec = find_spec(specs, name)?;
        self.values.insert(spec.name.to_owned(), value);
        Ok(())
    }

    /// Value of option `name`: the one set, else the spec's default.
    pub fn get(&self, specs: &[OptionSpec], name: &str) -> OptionValue {
        if let Some(v) = self.values.get(name) {
            return v.clone();
        }
        specs
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.default_value())
            .unwrap_or_else(|| panic!("extractor has no option '{name}'"))
    }

    pub fn get_bool(&self, specs: &[OptionSpec], name: &str) -> bool {
        match self.get(specs, name) {
            OptionValue::Bool(b) => b,
            other => panic!("option {name} is {other:?}, not a bool"),
        }
    }
    pub fn get_int(&self, specs: &[OptionSpec], name: &str) -> i32 {
        match self.get(specs, name) {
            OptionValue::Int(i) => i,
            other => panic!("option {name} is {other:?}, not an int"),
        }
    }
    pub fn get_double(&self, specs: &[OptionSpec], name: &str) -> f64 {
        match self.get(specs, name) {
            OptionValue::Double(d) => d,
            other => panic!("option {name} is {other:?}, not a double"),
        }
    }

    /// A string option's value (`None`: unset with a NULL default).
    pub fn get_str(&self, specs: &[OptionSpec], name: &str) -> Option<String> {
        match self.get(specs, name) {
            OptionValue::Str(s) => s,
            other => panic!("option {name} is {other:?}, not a string"),
        }
    }

    /// Values explicitly set, in option-name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &OptionValue)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether both give every option of `specs` the same value (a value
    /// set to the default equals one left unset).
    pub fn resolve_eq(&self, other: &FeatureOptions, specs: &[OptionSpec]) -> bool {
        specs.iter().all(|s| self.get(specs, s.name) == other.get(specs, s.name))
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// A value as libvmaf's `vmaf_feature_dictionary_set` stores it (its tool's
/// `--feature` and `--model` overloads, FFmpeg's libvmaf filter's `feature=`
/// and `model=`; vmafx takes all four through here): text that
/// reads whole as a C float (`sscanf("%f %c")` finds one number and
/// nothing after it) is read with `strtof` and written back with `%g`
/// ("1.0" becomes "1", "1.23456789" "1.23457"); other text stays as it is.
/// C's hexadecimal floats ("0x10") are not recognised: they stay text and
/// an option refuses them.
pub(crate) fn feature_dictionary_value(text: &str) -> String {
    let number = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']).trim_end_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    match number.parse::<f32>() {
        Ok(f) => crate::feature::naming::format_g(f as f64),
        Err(_) => text.to_owned(),
    }
}

fn find_spec<'s>(specs: &'s [OptionSpec], name: &str) -> Result<&'s OptionSpec> {
    specs.iter().find(|s| s.name == name || s.alias == Some(name)).ok_or_else(|| {
        let known: Vec<_> = specs.iter().map(|s| s.name).collect();
        Error::invalid(format!("unknown option '{name}' (known: {})", known.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::feature_dictionary_value as v;

    #[test]
    fn dictionary_values_as_libvmaf_stores_them() {
        for (text, stored) in [
            ("1.0", "1"),
            ("100", "100"),
            ("1.23456789", "1.23457"),
            (" 2.5 ", "2.5"),
            ("1e3", "1000"),
            ("0.1", "0.1"),
            ("16777217", "1.67772e+07"),
            ("true", "true"),
            ("1.5x", "1.5x"),
            ("0x10", "0x10"),
            ("", ""),
            ("pq", "pq"),
        ] {
            assert_eq!(v(text), stored, "{text:?}");
        }
    }
}
