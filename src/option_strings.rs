//! The `vmafx` command's option strings (`--model`, `--feature`,
//! `--device`, `--cpumask`), parsed as libvmaf's `tools/cli_parse.c` parses
//! them. Here rather than in the binary so the fuzz targets (src/fuzz.rs)
//! and the Python module reach the same code; plain string parsing, so it
//! is built without feature `cli` (clap stays with the binary).

use std::path::PathBuf;

use crate::engine::{DeviceChoice, GpuVendor};
use crate::feature::options::feature_dictionary_value;
use crate::feature::{find_extractor, FeatureOptions};
use crate::model::{FeatureOverload, ModelConfig};
use crate::Error;

/// One `--model` argument, parsed as libvmaf's `parse_model_config` does;
/// its feature overloads (`vif.vif_enhn_gain_limit=1.0`) go in
/// `config.overloads`, which the model applies as it loads.
#[derive(Debug)]
pub struct ModelArg {
    pub version: Option<String>,
    pub path: Option<PathBuf>,
    pub config: ModelConfig,
    /// What the score line calls it: the version or the path, as given.
    pub label: String,
}

pub fn parse_model(arg: &str) -> Result<ModelArg, Error> {
    let mut version = None;
    let mut path = None;
    let mut config = ModelConfig { name: Some("vmaf".into()), ..Default::default() };
    for key_val in arg.split(':').filter(|s| !s.is_empty()) {
        let mut parts = key_val.split('=');
        let key = parts.next().unwrap_or("");
        let val = match parts.next() {
            Some(v) => v,
            None if key == "disable_clip" || key == "enable_transform" => "true",
            None => {
                return Err(Error::invalid(format!(
                    "--model {arg}: bad option string \"{key}\" (expected key=value)"
                )))
            }
        };
        match key {
            "path" => path = Some(PathBuf::from(val)),
            "version" => version = Some(val.to_owned()),
            "name" => config.name = Some(val.to_owned()),
            "disable_clip" => config.disable_clip |= val == "true",
            "enable_transform" => config.enable_transform |= val == "true",
            _ if key.contains('.') => config
                .overloads
                .push(FeatureOverload::parse(key, val).map_err(|e| prefixed(e, &format!("--model {arg}")))?),
            _ => {
                return Err(Error::invalid(format!(
                    "--model {arg}: unknown key \"{key}\" (known: version, path, name, enable_transform, \
                     disable_clip, <extractor>.<option>)"
                )))
            }
        }
    }
    let label = match (&version, &path) {
        (Some(v), None) => v.clone(),
        (None, Some(p)) => p.display().to_string(),
        (Some(_), Some(_)) => {
            return Err(Error::invalid(format!("--model {arg}: give version= or path=, not both")))
        }
        (None, None) => {
            return Err(Error::invalid(format!("--model {arg}: needs version=NAME (built-in) or path=FILE")))
        }
    };
    Ok(ModelArg { version, path, config, label })
}

/// One `--feature` argument: `NAME[=opt=val:opt=val]` (libvmaf's
/// `parse_feature_config`).
pub fn parse_feature(arg: &str) -> Result<(String, FeatureOptions), Error> {
    let (name, rest) = match arg.split_once('=') {
        Some((n, r)) => (n, Some(r)),
        None => (arg, None),
    };
    let descriptor = find_extractor(name).map_err(|e| prefixed(e, &format!("--feature {arg}")))?;
    let mut options = FeatureOptions::new();
    for key_val in rest.into_iter().flat_map(|r| r.split(':')).filter(|s| !s.is_empty()) {
        let mut parts = key_val.split('=');
        let key = parts.next().unwrap_or("");
        let val = parts.next().ok_or_else(|| {
            Error::invalid(format!("--feature {arg}: bad option string \"{key}\" (expected opt=value)"))
        })?;
        options
            .set_text(descriptor.options, key, &feature_dictionary_value(val))
            .map_err(|e| prefixed(e, &format!("--feature {arg}")))?;
    }
    Ok((name.to_owned(), options))
}

/// `e` with `prefix` before its message.
pub fn prefixed(e: Error, prefix: &str) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!("{prefix}: {m}")),
        Error::NotSupported(m) => Error::NotSupported(format!("{prefix}: {m}")),
        Error::Model(m) => Error::Model(format!("{prefix}: {m}")),
        other => other,
    }
}

/// `strtoul(s, _, 0)`: decimal, 0x hex or 0 octal.
pub fn parse_c_unsigned(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}


/// `--device cpu|cuda[:N]|hip[:N]`.
pub fn parse_device(arg: &str) -> Result<DeviceChoice, Error> {
    let bad = || Error::invalid(format!("--device {arg}: expected cpu, cuda, cuda:N, hip or hip:N"));
    let (name, index) = match arg.split_once(':') {
        Some((name, n)) => (name, n.parse::<usize>().map_err(|_| bad())?),
        None => (arg, 0),
    };
    match name.to_ascii_lowercase().as_str() {
        "cpu" if index == 0 => Ok(DeviceChoice::Cpu),
        "cuda" => Ok(DeviceChoice::Gpu { vendor: GpuVendor::Cuda, index }),
        "hip" => Ok(DeviceChoice::Gpu { vendor: GpuVendor::Hip, index }),
        _ => Err(bad()),
    }
}
