//! Checks on logs a failed run leaves (the CLI's and the filter's): the
//! frames kept equal a run on those frames alone, and against the full
//! run only the last kept frame's look-ahead values differ.

use serde_json::{Map, Value};

/// The frames of a JSON log by number, each a map of metric to value.
pub fn frames_by_number(log: &Value) -> Vec<Map<String, Value>> {
    let frames = log["frames"].as_array().unwrap_or_else(|| panic!("no frames in {log}"));
    frames
        .iter()
        .enumerate()
        .map(|(i, f)| {
            assert_eq!(f["frameNum"], i as u64, "frames out of order");
            f["metrics"].as_object().unwrap().clone()
        })
        .collect()
}

pub fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: bad JSON ({e}):\n{text}", path.display()))
}

/// `cut` (a partial log of `kept` frames) against `full` (the whole run)
/// and `clean` (a run on the first `kept` frames alone): `cut` is marked
/// incomplete with a reason containing `reason`, holds exactly `clean`'s
/// frames and pooled values, and differs from `full` only at the last kept
/// frame, and there exactly in motion2 (its own SAD instead of
/// min(sad[last], sad[last + 1])), motion3 and the VMAF score. The clip
/// must have sad[last + 1] < sad[last], so that they do differ.
pub fn assert_partial_log(case: &str, full: &Value, clean: &Value, cut: &Value, kept: usize, reason: &str) {
    let why = cut["incomplete"].as_str().unwrap_or_else(|| panic!("{case}: no \"incomplete\" mark in {cut}"));
    assert!(why.contains(reason), "{case}: incomplete = {why:?}, expected it to name {reason:?}");
    assert!(clean.get("incomplete").is_none() && full.get("incomplete").is_none(), "{case}");
    assert_eq!(cut["frames"], clean["frames"], "{case}: frames differ from a run on the kept frames");
    assert_eq!(cut["pooled_metrics"], clean["pooled_metrics"], "{case}: pooled values differ");
    let (full_frames, cut_frames) = (frames_by_number(full), frames_by_number(cut));
    assert_eq!(cut_frames.len(), kept, "{case}");
    assert!(full_frames.len() > kept, "{case}");
    assert_eq!(full_frames[..kept - 1], cut_frames[..kept - 1], "{case}");
    let (a, b) = (&full_frames[kept - 1], &cut_frames[kept - 1]);
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{case}");
    let differ: Vec<&str> = a.keys().filter(|k| a[*k] != b[*k]).map(|k| k.as_str()).collect();
    assert_eq!(differ, ["integer_motion2", "integer_motion3", "vmaf"], "{case}: {a:?} vs {b:?}");
    let sad = |f: &Map<String, Value>| f["VMAF_integer_feature_motion_sad_score"].as_f64().unwrap();
    let (sad_last, sad_next) = (sad(b), sad(&full_frames[kept]));
    assert!(sad_next < sad_last, "{case}: the clip no longer tests the look-ahead");
    assert_eq!(b["integer_motion2"].as_f64(), Some(sad_last), "{case}");
    assert_eq!(a["integer_motion2"].as_f64(), Some(sad_next), "{case}");
}
