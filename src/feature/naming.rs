//! Feature names as libvmaf prints them.
//!
//! libvmaf keeps long internal names ("VMAF_integer_feature_vif_scale0_score")
//! and prints short aliases ("integer_vif_scale0"). An extractor run with a
//! non-default feature parameter gets it appended to the alias, options in
//! alphabetical order of their names: "integer_adm2_egl_1" for
//! adm_enhn_gain_limit=1.0 (`feature/feature_name.c`, `feature/alias.c`).

use super::options::{FeatureOptions, OptionSpec, OptionValue};

/// libvmaf's alias table for the features vmafx provides.
const ALIASES: &[(&str, &str)] = &[
    ("VMAF_integer_feature_adm2_score", "integer_adm2"),
    ("VMAF_integer_feature_aim_score", "integer_aim"),
    ("VMAF_integer_feature_adm3_score", "integer_adm3"),
    ("VMAF_integer_feature_motion_score", "integer_motion"),
    ("VMAF_integer_feature_motion2_score", "integer_motion2"),
    ("VMAF_integer_feature_motion3_score", "integer_motion3"),
    ("VMAF_integer_feature_vif_scale0_score", "integer_vif_scale0"),
    ("VMAF_integer_feature_vif_scale1_score", "integer_vif_scale1"),
    ("VMAF_integer_feature_vif_scale2_score", "integer_vif_scale2"),
    ("VMAF_integer_feature_vif_scale3_score", "integer_vif_scale3"),
];

/// Short name of a feature: the alias if it has one, else the name itself.
pub fn alias(name: &str) -> &str {
    ALIASES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a).unwrap_or(name)
}

/// libvmaf's `vmaf_feature_name_from_options`.
pub fn feature_name(provided: &str, specs: &[OptionSpec], options: &FeatureOptions) -> String {
    // Non-default feature parameters, sorted by option name.
    let mut params: Vec<(&OptionSpec, OptionValue)> = specs
        .iter()
        .filter(|s| s.feature_param)
        .map(|s| (s, options.get(specs, s.name)))
        .filter(|(s, v)| *v != s.default_value())
        .collect();
    if params.is_empty() {
        return provided.to_owned();
    }
    params.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
    let mut out = alias(provided).to_owned();
    for (spec, value) in params {
        let key = spec.alias.unwrap_or(spec.name);
        match value {
            OptionValue::Bool(_) => out.push_str(&format!("_{key}")),
            OptionValue::Int(i) => out.push_str(&format!("_{key}_{i}")),
            OptionValue::Double(d) => out.push_str(&format!("_{key}_{}", format_g(d))),
        }
    }
    out
}

/// C's `printf("%g", x)`: 6 significant digits, trailing zeros dropped,
/// exponent form below 1e-4 or from 1e6.
pub fn format_g(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    if !x.is_finite() {
        return if x.is_nan() { "nan".into() } else if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // The exponent after rounding to 6 significant digits decides the form.
    let sci = format!("{:.5e}", x);
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if !(-4..6).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_owned()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_c() {
        assert_eq!(format_g(1.0), "1");
        assert_eq!(format_g(100.0), "100");
        assert_eq!(format_g(1.2), "1.2");
        assert_eq!(format_g(0.5), "0.5");
        assert_eq!(format_g(3.0), "3");
        assert_eq!(format_g(0.0001), "0.0001");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(1234567.0), "1.23457e+06");
        assert_eq!(format_g(123456.0), "123456");
        assert_eq!(format_g(2.718281828), "2.71828");
        assert_eq!(format_g(999999.5), "1e+06");
    }
}
