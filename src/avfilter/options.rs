//! The `vmafx` filter's option strings, with the syntax of FFmpeg's
//! `libvmaf` filter (`libavfilter/vf_libvmaf.c`: `delimited_dict_parse`,
//! `parse_models`, `parse_features`, `log_fmt_map`, `pool_method_map`).
//!
//! `model` and `feature` are lists separated by `|`; each entry is a list
//! of `key=value` pairs separated by `:` (FFmpeg's `av_dict_parse_string`
//! with `av_get_token` quoting: `'...'` and `\x`). Where libvmaf silently
//! falls back (an unknown log format or pool method, an unknown model
//! key), vmafx refuses with a message instead.

use std::path::PathBuf;

use crate::model::{FeatureOverload, ModelConfig};
use crate::score::log::LogFormat;
use crate::score::PoolMethod;
use crate::{Error, Result};

/// Where a model comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ModelSource {
    /// A built-in model by version ("vmaf_v0.6.1").
    Version(String),
    /// A libvmaf JSON model file.
    Path(PathBuf),
}

/// One entry of the `model` option.
#[derive(Clone, Debug)]
pub(crate) struct ModelSpec {
    pub source: ModelSource,
    /// Name, flags and the `extractor.option=value` overloads (libvmaf's
    /// `vmaf_model_feature_overload`), in the order given.
    pub config: ModelConfig,
}

/// One entry of the `feature` option: an extractor and its options.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FeatureSpec {
    pub name: String,
    pub options: Vec<(String, String)>,
}

/// The `device` option: where DRM_PRIME and software frames are scored.
/// CUDA frames are not named here: they are scored on their own CUDA
/// context, whatever this says (a HIP device beside them is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeviceOption {
    /// The CPU (unset, `cpu`): dma-bufs read in place through mmap.
    Cpu,
    /// HIP device `index` (`hip`, `hip:N`): dma-bufs imported with
    /// `hipImportExternalMemory`, scored on that device.
    Hip { index: usize },
}

impl DeviceOption {
    /// `cpu`, `hip` or `hip:N`; unset or empty is the CPU.
    pub(crate) fn parse(s: Option<&str>) -> Result<DeviceOption> {
        let Some(s) = s.filter(|s| !s.is_empty()) else { return Ok(DeviceOption::Cpu) };
        let (name, index) = match s.split_once(':') {
            Some((name, n)) => (name, Some(n)),
            None => (s, None),
        };
        let index = match index {
            None => 0,
            Some(n) => n.parse::<usize>().map_err(|_| {
                Error::invalid(format!("device '{s}': the index after ':' must be a device number (hip:0, hip:1, ...)"))
            })?,
        };
        match name {
            "cpu" if index == 0 => Ok(DeviceOption::Cpu),
            "hip" => Ok(DeviceOption::Hip { index }),
            "cuda" => Err(Error::invalid(format!(
                "device '{s}': CUDA frames are scored on their own CUDA device already \
                 (-hwaccel cuda -hwaccel_output_format cuda); device= takes cpu, hip or hip:N"
            ))),
            _ => Err(Error::invalid(format!("device '{s}': expected cpu, hip or hip:N"))),
        }
    }
}

/// Every filter option, parsed.
#[derive(Clone, Debug)]
pub(crate) struct FilterOptions {
    pub models: Vec<ModelSpec>,
    pub features: Vec<FeatureSpec>,
    pub log_path: Option<PathBuf>,
    pub log_format: LogFormat,
    pub pool: PoolMethod,
    pub threads: usize,
    pub subsample: u32,
    pub device: DeviceOption,
}

/// The option values as the glue hands them over (`None` = unset).
#[derive(Clone, Debug, Default)]
pub struct RawOptions<'a> {
    pub model: Option<&'a str>,
    pub feature: Option<&'a str>,
    pub log_path: Option<&'a str>,
    pub log_fmt: Option<&'a str>,
    pub pool: Option<&'a str>,
    pub n_threads: i64,
    pub n_subsample: i64,
    /// `cpu`, `hip` or `hip:N` (API version 4).
    pub device: Option<&'a str>,
}

impl FilterOptions {
    pub(crate) fn parse(raw: &RawOptions<'_>) -> Result<FilterOptions> {
        let models = match raw.model {
            Some(s) => parse_models(s)?,
            None => Vec::new(),
        };
        let features = match raw.feature {
            Some(s) => parse_features(s)?,
            None => Vec::new(),
        };
        if models.is_empty() && features.is_empty() {
            return Err(Error::invalid(
                "nothing to compute: give a model (model=version=vmaf_v0.6.1) or a feature (feature=name=psnr)",
            ));
        }
        let log_format = match raw.log_fmt {
            None => LogFormat::Xml,
            Some(s) => LogFormat::parse(s).ok_or_else(|| {
                Error::invalid(format!("log_fmt '{s}': expected xml, json, csv or sub"))
            })?,
        };
        let pool = match raw.pool {
            None => PoolMethod::Mean,
            Some("mean") => PoolMethod::Mean,
            Some("min") => PoolMethod::Min,
            Some("harmonic_mean") => PoolMethod::HarmonicMean,
            Some(s) => {
                return Err(Error::invalid(format!(
                    "pool '{s}': expected mean, min or harmonic_mean"
                )))
            }
        };
        if raw.n_threads < 0 || raw.n_threads > 1024 {
            return Err(Error::invalid(format!("n_threads {} outside [0, 1024]", raw.n_threads)));
        }
        if raw.n_subsample < 1 || raw.n_subsample > u32::MAX as i64 {
            return Err(Error::invalid(format!("n_subsample {} must be at least 1", raw.n_subsample)));
        }
        Ok(FilterOptions {
            models,
            features,
            log_path: raw.log_path.filter(|p| !p.is_empty()).map(PathBuf::from),
            log_format,
            pool,
            threads: raw.n_threads as usize,
            subsample: raw.n_subsample as u32,
            device: DeviceOption::parse(raw.device)?,
        })
    }
}

/// Splits `s` on `|` (as libvmaf's `av_strtok`: empty entries skipped) and
/// each entry into key/value pairs.
fn parse_dict_list(s: &str, what: &str) -> Result<Vec<Vec<(String, String)>>> {
    s.split('|')
        .filter(|e| !e.is_empty())
        .map(|entry| {
            parse_dict(entry)
                .map_err(|e| Error::invalid(format!("could not parse {what} config '{entry}': {e}")))
        })
        .collect()
}

/// `av_dict_parse_string(entry, "=", ":", 0)`: pairs separated by `:`,
/// key and value by `=`, each token read as `av_get_token` reads it. A
/// later duplicate key replaces the earlier one.
pub(crate) fn parse_dict(entry: &str) -> std::result::Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut rest = entry;
    while !rest.is_empty() {
        let (key, after_key) = get_token(rest, b"=");
        let Some(after_eq) = after_key.strip_prefix('=') else {
            return Err(format!("'{key}' has no '=value'"));
        };
        let (value, after_value) = get_token(after_eq, b":");
        if key.is_empty() {
            return Err("empty key".into());
        }
        out.retain(|(k, _)| *k != key);
        out.push((key, value));
        rest = after_value.strip_prefix(':').unwrap_or(after_value);
    }
    Ok(out)
}

/// FFmpeg's `av_get_token`: reads up to an unquoted, unescaped delimiter;
/// `\x` escapes one character, `'...'` quotes; leading and trailing
/// unquoted whitespace is dropped.
fn get_token<'a>(s: &'a str, delims: &[u8]) -> (String, &'a str) {
    let s = s.trim_start_matches([' ', '\n', '\t', '\r']);
    let mut out = String::new();
    // Length of `out` up to the last character that must stay (quoted,
    // escaped or non-space).
    let mut keep = 0;
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_ascii() && delims.contains(&(c as u8)) {
            out.truncate(keep);
            return (out, &s[i..]);
        }
        chars.next();
        match c {
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    out.push(e);
                    keep = out.len();
                }
            }
            '\'' => {
                for (_, q) in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    out.push(q);
                }
                keep = out.len();
            }
            _ => {
                out.push(c);
                if !matches!(c, ' ' | '\n' | '\t' | '\r') {
                    keep = out.len();
                }
            }
        }
    }
    out.truncate(keep);
    (out, "")
}

fn parse_bool_flag(key: &str, value: &str) -> Result<bool> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::invalid(format!("model {key}={value}: expected true or false"))),
    }
}

/// The `model` option (libvmaf's `parse_models`).
pub(crate) fn parse_models(s: &str) -> Result<Vec<ModelSpec>> {
    let mut models = Vec::new();
    for dict in parse_dict_list(s, "model")? {
        let mut version = None;
        let mut path = None;
        let mut config = ModelConfig::default();
        for (key, value) in dict {
            match key.as_str() {
                "version" => version = Some(value),
                "path" => path = Some(value),
                "name" => config.name = Some(value),
                "enable_transform" => config.enable_transform = parse_bool_flag(&key, &value)?,
                "disable_clip" => config.disable_clip = parse_bool_flag(&key, &value)?,
                _ if key.contains('.') => config.overloads.push(
                    FeatureOverload::parse(&key, &value).map_err(|e| Error::invalid(format!("model: {e}")))?,
                ),
                _ => {
                    return Err(Error::invalid(format!(
                        "unknown model key '{key}' (known: version, path, name, enable_transform, disable_clip, <extractor>.<option>)"
                    )))
                }
            }
        }
        // As libvmaf: a version wins over a path.
        let source = match (version, path) {
            (Some(v), _) => ModelSource::Version(v),
            (None, Some(p)) => ModelSource::Path(PathBuf::from(p)),
            (None, None) => {
                return Err(Error::invalid(format!(
                    "could not load model with config '{s}': give version= or path="
                )))
            }
        };
        models.push(ModelSpec { source, config });
    }
    Ok(models)
}

/// The `feature` option (libvmaf's `parse_features`).
pub(crate) fn parse_features(s: &str) -> Result<Vec<FeatureSpec>> {
    let mut features = Vec::new();
    for dict in parse_dict_list(s, "feature")? {
        let mut name = None;
        let mut options = Vec::new();
        for (key, value) in dict {
            if key == "name" {
                name = Some(value);
            } else {
                options.push((key, value));
            }
        }
        let name = name.ok_or_else(|| {
            Error::invalid(format!("feature config '{s}': an entry has no name="))
        })?;
        features.push(FeatureSpec { name, options });
    }
    Ok(features)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn dict_syntax_matches_av_dict_parse_string() {
        assert_eq!(parse_dict("version=vmaf_v0.6.1:name=foo").unwrap(),
                   kv(&[("version", "vmaf_v0.6.1"), ("name", "foo")]));
        assert_eq!(parse_dict("path='/a:b/c.json'").unwrap(), kv(&[("path", "/a:b/c.json")]));
        assert_eq!(parse_dict("path=/a\\:b").unwrap(), kv(&[("path", "/a:b")]));
        assert_eq!(parse_dict(" name = x :a=1").unwrap(), kv(&[("name", "x"), ("a", "1")]));
        assert_eq!(parse_dict("a=1:a=2").unwrap(), kv(&[("a", "2")]));
        assert!(parse_dict("version").is_err());
        assert!(parse_dict("=x").is_err());
    }

    #[test]
    fn models_as_libvmaf() {
        let m = parse_models("version=vmaf_v0.6.1|version=vmaf_v0.6.1neg:name=neg:enable_transform=true|path=m.json:vif.vif_enhn_gain_limit=1.0").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].source, ModelSource::Version("vmaf_v0.6.1".into()));
        assert_eq!(m[1].config.name.as_deref(), Some("neg"));
        assert!(m[1].config.enable_transform);
        assert_eq!(m[2].source, ModelSource::Path("m.json".into()));
        let overload = FeatureOverload { extractor: "vif".into(), option: "vif_enhn_gain_limit".into(), value: "1.0".into() };
        assert_eq!(m[2].config.overloads, vec![overload]);
        assert!(m[0].config.overloads.is_empty());
        assert!(parse_models("version=v:vif.=1").is_err());
        assert!(parse_models("version=v:.egl=1").is_err());
        assert!(parse_models("verison=vmaf_v0.6.1").is_err());
        assert!(parse_models("name=x").is_err());
        assert!(parse_models("version=v:enable_transform=yes").is_err());
        assert!(parse_models("").unwrap().is_empty());
    }

    #[test]
    fn features_as_libvmaf() {
        let f = parse_features("name=psnr|name=motion:motion_force_zero=true").unwrap();
        assert_eq!(f[0], FeatureSpec { name: "psnr".into(), options: vec![] });
        assert_eq!(f[1].options, kv(&[("motion_force_zero", "true")]));
        assert!(parse_features("motion_force_zero=true").is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        let base = RawOptions { feature: Some("name=motion"), n_subsample: 1, ..Default::default() };
        assert!(FilterOptions::parse(&base).is_ok());
        assert!(FilterOptions::parse(&RawOptions { log_fmt: Some("yaml"), ..base.clone() }).is_err());
        assert!(FilterOptions::parse(&RawOptions { pool: Some("median"), ..base.clone() }).is_err());
        assert!(FilterOptions::parse(&RawOptions { n_subsample: 0, ..base.clone() }).is_err());
        assert!(FilterOptions::parse(&RawOptions { n_threads: -1, ..base.clone() }).is_err());
        assert!(FilterOptions::parse(&RawOptions { feature: None, model: Some(""), ..base }).is_err());
    }

    #[test]
    fn device_takes_cpu_hip_and_an_index() {
        let parse = |s| DeviceOption::parse(Some(s));
        assert_eq!(DeviceOption::parse(None).unwrap(), DeviceOption::Cpu);
        assert_eq!(parse("").unwrap(), DeviceOption::Cpu);
        assert_eq!(parse("cpu").unwrap(), DeviceOption::Cpu);
        assert_eq!(parse("hip").unwrap(), DeviceOption::Hip { index: 0 });
        assert_eq!(parse("hip:0").unwrap(), DeviceOption::Hip { index: 0 });
        assert_eq!(parse("hip:3").unwrap(), DeviceOption::Hip { index: 3 });
        for (bad, words) in [
            ("hip:", "must be a device number"),
            ("hip:x", "must be a device number"),
            ("hip:-1", "must be a device number"),
            ("cpu:1", "expected cpu, hip or hip:N"),
            ("HIP", "expected cpu, hip or hip:N"),
            ("vulkan", "expected cpu, hip or hip:N"),
            ("cuda", "CUDA frames are scored on their own CUDA device"),
            ("cuda:1", "CUDA frames are scored on their own CUDA device"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("device '{bad}'")) && e.contains(words), "{bad}: {e}");
        }
        let base = RawOptions { feature: Some("name=motion"), n_subsample: 1, ..Default::default() };
        let o = FilterOptions::parse(&RawOptions { device: Some("hip:1"), ..base.clone() }).unwrap();
        assert_eq!(o.device, DeviceOption::Hip { index: 1 });
        assert!(FilterOptions::parse(&RawOptions { device: Some("gpu"), ..base }).is_err());
    }
}
