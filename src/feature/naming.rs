//! Feature names as libvmaf prints them.
//!
//! libvmaf keeps long internal names ("VMAF_integer_feature_vif_scale0_score")
//! and prints short aliases ("integer_vif_scale0"). An extractor run with a
//! non-default feature parameter gets it appended to the alias, options in
//! alphabetical order of their names: "integer_adm2_egl_1" for
//! adm_enhn_gain_limit=1.0 (`feature/feature_name.c`, `feature/alias.c`).

use super::options::{FeatureOptions, OptionSpec, OptionValue};

/// libvmaf's alias table (`feature/alias.c`), whole: logs of imported
/// values print as libvmaf's do even for features vmafx does not compute.
const ALIASES: &[(&str, &str)] = &[
    ("VMAF_feature_adm2_score", "adm2"),
    ("VMAF_feature_aim_score", "aim"),
    ("VMAF_feature_adm3_score", "adm3"),
    ("VMAF_feature_adm_scale0_score", "adm_scale0"),
    ("VMAF_feature_adm_scale1_score", "adm_scale1"),
    ("VMAF_feature_adm_scale2_score", "adm_scale2"),
    ("VMAF_feature_adm_scale3_score", "adm_scale3"),
    ("VMAF_feature_motion_score", "motion"),
    ("VMAF_feature_motion2_score", "motion2"),
    ("VMAF_feature_motion3_score", "motion3"),
    ("VMAF_feature_vif_scale0_score", "vif_scale0"),
    ("VMAF_feature_vif_scale1_score", "vif_scale1"),
    ("VMAF_feature_vif_scale2_score", "vif_scale2"),
    ("VMAF_feature_vif_scale3_score", "vif_scale3"),
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
    ("Cambi_feature_cambi_score", "cambi"),
    ("Speed_chroma_feature_speed_chroma_u_score", "speed_chroma_u"),
    ("Speed_chroma_feature_speed_chroma_v_score", "speed_chroma_v"),
    ("Speed_chroma_feature_speed_chroma_uv_score", "speed_chroma_uv"),
    ("Speed_temporal_feature_speed_temporal_score", "speed_temporal"),
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
            OptionValue::Str(s) => out.push_str(&format!("_{key}_{}", s.unwrap_or_default())),
        }
    }
    out
}

/// C's `printf("%g", x)`, as libvmaf writes option values into names.
pub fn format_g(x: f64) -> String {
    crate::cfmt::g(x, 6)
}
