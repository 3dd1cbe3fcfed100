//! The built-in models, embedded as libvmaf embeds them (`model.c`,
//! `built_in_models[]`): the JSON files of libvmaf 3.2.0's `model/` folder,
//! unchanged, in `models/` at the top of this repository.

/// (version, JSON text), in libvmaf's order.
pub(crate) static BUILTIN_MODELS: &[(&str, &str)] = &[
    // The float features' models (libvmaf builds them in first, with
    // -Denable_float=true), the float bootstrap collection among them.
    ("vmaf_float_v0.6.1", include_str!("../../models/vmaf_float_v0.6.1.json")),
    ("vmaf_float_b_v0.6.3", include_str!("../../models/vmaf_float_b_v0.6.3.json")),
    ("vmaf_float_v0.6.1neg", include_str!("../../models/vmaf_float_v0.6.1neg.json")),
    ("vmaf_float_4k_v0.6.1", include_str!("../../models/vmaf_float_4k_v0.6.1.json")),
    ("vmaf_v0.6.1", include_str!("../../models/vmaf_v0.6.1.json")),
    // A bootstrap collection: member 0 and twenty resampled members.
    ("vmaf_b_v0.6.3", include_str!("../../models/vmaf_b_v0.6.3.json")),
    ("vmaf_v0.6.1neg", include_str!("../../models/vmaf_v0.6.1neg.json")),
    ("vmaf_4k_v0.6.1", include_str!("../../models/vmaf_4k_v0.6.1.json")),
    // vmaf_v0.6.1neg's features (enhancement gain limits 1.0) with
    // vmaf_4k_v0.6.1's training and no score transform.
    ("vmaf_4k_v0.6.1neg", include_str!("../../models/vmaf_4k_v0.6.1neg.json")),
    // CAMBI, SpEED chroma, ADM3 and motion3 (libvmaf's v1.0.16 family; the
    // _hfr ones with motion's five-frame window and moving average).
    ("vmaf_v1.0.16_3d0h", include_str!("../../models/vmaf_v1.0.16_3d0h.json")),
    ("vmaf_v1.0.16_3d0h_2160", include_str!("../../models/vmaf_v1.0.16_3d0h_2160.json")),
    ("vmaf_v1.0.16_5d0h", include_str!("../../models/vmaf_v1.0.16_5d0h.json")),
    ("vmaf_v1.0.16_1d5h_2160", include_str!("../../models/vmaf_v1.0.16_1d5h_2160.json")),
    ("vmaf_v1.0.16_hfr_3d0h", include_str!("../../models/vmaf_v1.0.16_hfr_3d0h.json")),
    ("vmaf_v1.0.16_hfr_3d0h_2160", include_str!("../../models/vmaf_v1.0.16_hfr_3d0h_2160.json")),
    ("vmaf_v1.0.16_hfr_5d0h", include_str!("../../models/vmaf_v1.0.16_hfr_5d0h.json")),
    ("vmaf_v1.0.16_hfr_1d5h_2160", include_str!("../../models/vmaf_v1.0.16_hfr_1d5h_2160.json")),
];

/// Versions, for listings and error messages.
pub(crate) static BUILTIN_VERSIONS: &[&str] = &[
    "vmaf_float_v0.6.1",
    "vmaf_float_b_v0.6.3",
    "vmaf_float_v0.6.1neg",
    "vmaf_float_4k_v0.6.1",
    "vmaf_v0.6.1",
    "vmaf_b_v0.6.3",
    "vmaf_v0.6.1neg",
    "vmaf_4k_v0.6.1",
    "vmaf_4k_v0.6.1neg",
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_3d0h_2160",
    "vmaf_v1.0.16_5d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_hfr_3d0h_2160",
    "vmaf_v1.0.16_hfr_5d0h",
    "vmaf_v1.0.16_hfr_1d5h_2160",
];

pub(crate) fn find(version: &str) -> Option<&'static str> {
    BUILTIN_MODELS.iter().find(|(v, _)| *v == version).map(|(_, text)| *text)
}
