//! What the FFmpeg runs of `gpu-ffmpeg` and `gpu-ffmpeg-libvmaf` leave
//! behind, read back: the per-frame metadata (metadata=mode=print, %.17g),
//! vmafx's and libvmaf's JSON logs, the counters line vmafx prints at the
//! end, the first error of a log; and per-frame values compared as doubles
//! (the same bits, the same keys).

use crate::json::Json;
use std::collections::BTreeMap;

/// One frame's values by key.
pub type Frame = BTreeMap<String, f64>;

/// The frames of `metadata=mode=print:file=…`: a `frame:N …` line opens
/// one, each `key=value` after it is a value.
pub fn read_metadata(text: &str) -> Result<Vec<Frame>, String> {
    let mut frames: Vec<Frame> = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with("frame:") {
            frames.push(Frame::new());
        } else if let (Some((k, v)), Some(cur)) = (line.split_once('='), frames.last_mut()) {
            let value = v.parse::<f64>().map_err(|_| format!("metadata: {line:?} is not key=number"))?;
            cur.insert(k.to_string(), value);
        }
    }
    Ok(frames)
}

/// A JSON log's `frames[].metrics` and its `pooled_metrics` (an empty
/// object when absent).
pub fn read_json_log(text: &str) -> Result<(Vec<Frame>, Json), String> {
    let j = Json::parse(text)?;
    let mut frames = Vec::new();
    if let Some(Json::Arr(list)) = j.get("frames") {
        for fr in list {
            let mut f = Frame::new();
            if let Some(Json::Obj(metrics)) = fr.get("metrics") {
                for (k, v) in metrics {
                    match v {
                        Json::Num(n) => f.insert(k.clone(), *n),
                        _ => return Err(format!("JSON log: metric {k} is not a number")),
                    };
                }
            }
            frames.push(f);
        }
    }
    Ok((frames, j.get("pooled_metrics").cloned().unwrap_or(Json::Obj(Vec::new()))))
}

/// Two JSON values equal, numbers as bits, an object's members in any
/// order (vmafx lists pooled features in the order its extractors
/// registered, which the thread count changes).
pub fn same_bits(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Num(x), Json::Num(y)) => x.to_bits() == y.to_bits(),
        (Json::Arr(x), Json::Arr(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_bits(p, q)),
        (Json::Obj(x), Json::Obj(y)) => x.len() == y.len() && x.iter().all(|(k, p)| b.get(k).is_some_and(|q| same_bits(p, q))),
        (x, y) => x == y,
    }
}

/// Per-frame values of a GPU run (`gpu`) against the CPU run's (`cpu`):
/// how many values were compared, and every difference (frame count,
/// keys, a value's bits).
pub fn compare_frames(gpu: &[Frame], cpu: &[Frame], what: &str) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut n = 0;
    if gpu.len() != cpu.len() {
        problems.push(format!("{what}: {} frames vs {}", gpu.len(), cpu.len()));
    }
    for (i, (a, b)) in gpu.iter().zip(cpu).enumerate() {
        let only: Vec<&String> = a.keys().filter(|k| !b.contains_key(*k)).chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
        if !only.is_empty() {
            problems.push(format!("{what} frame {i}: keys differ: {only:?}"));
        }
        for (k, x) in a {
            let Some(y) = b.get(k) else { continue };
            n += 1;
            if x.to_bits() != y.to_bits() {
                problems.push(format!("{what} frame {i} {k}: {x:?} vs {y:?}"));
            }
        }
    }
    (n, problems)
}

/// vmafx's closing line: "N frame pairs scored, H host copies[, D CUDA|GPU
/// frames in place]", the last one of the log; its "VMAF score: S" lines;
/// whether it said its CUDA frames are read in place.
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Counters {
    pub pairs: Option<u64>,
    pub host_copies: Option<u64>,
    pub in_place: Option<u64>,
    pub scores: Vec<String>,
    pub cuda_in_place_line: bool,
}

fn leading_number(s: &str) -> Option<u64> {
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn trailing_number(s: &str) -> Option<u64> {
    let rev: String = s.chars().rev().take_while(char::is_ascii_digit).collect();
    rev.chars().rev().collect::<String>().parse().ok()
}

impl Counters {
    pub fn parse(log: &str) -> Counters {
        let mut c = Counters { cuda_in_place_line: log.contains("CUDA frames read in place on the GPU"), ..Counters::default() };
        for line in log.lines() {
            if let Some((_, s)) = line.split_once("VMAF score: ") {
                c.scores.push(s.split_whitespace().next().unwrap_or("").to_string());
            }
            let Some((before, after)) = line.split_once(" frame pairs scored, ") else { continue };
            let (Some(pairs), Some(copies)) = (trailing_number(before), leading_number(after)) else { continue };
            let rest = after.trim_start_matches(|ch: char| ch.is_ascii_digit());
            let Some(rest) = rest.strip_prefix(" host copies") else { continue };
            let in_place = rest.strip_prefix(", ").and_then(|r| {
                let d = leading_number(r)?;
                let r = r.trim_start_matches(|ch: char| ch.is_ascii_digit());
                (r.starts_with(" CUDA frames in place") || r.starts_with(" GPU frames in place")).then_some(d)
            });
            c.pairs = Some(pairs);
            c.host_copies = Some(copies);
            c.in_place = Some(in_place.unwrap_or(0));
        }
        c
    }
}

/// The first few error lines of a run's log, vmafx's own first.
pub fn first_error(log: &str) -> String {
    const SIGNS: &[&str] = &["rror", "Cannot", "not supported", "device:", "mismatch:", "invalid argument:", "internal:", "failed"];
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let bad = |l: &&str| SIGNS.iter().any(|s| l.contains(s));
    let vmafx: Vec<&str> = lines.iter().copied().filter(|l| l.contains("vmafx") && bad(l) && !l.contains("Failed to configure")).collect();
    let other = lines.iter().copied().filter(|l| bad(l) && !vmafx.contains(l));
    let picked: Vec<&str> = vmafx.iter().copied().chain(other).take(3).collect();
    if picked.is_empty() {
        lines.iter().rev().find(|l| !l.is_empty()).map_or("(no output)".to_string(), |l| l.to_string())
    } else {
        picked.join(" / ")
    }
}

/// The first error-looking lines of a libvmaf_cuda run's log (its `# argv`
/// line left out), at most 300 characters.
pub fn first_error_libvmaf(log: &str) -> String {
    const SIGNS: &[&str] = &["rror", "cannot", "not supported", "unsupported", "invalid", "failed", "no such", "not found", "killed", "timed out"];
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("# ")).collect();
    let picked: Vec<&str> = lines.iter().copied().filter(|l| SIGNS.iter().any(|s| l.to_lowercase().contains(s))).take(3).collect();
    let text = if picked.is_empty() { lines.last().copied().unwrap_or("(no output)").to_string() } else { picked.join(" / ") };
    text.chars().take(300).collect()
}

/// (frames, pooled mean VMAF) of a libvmaf or vmafx JSON log: the pooled
/// "vmaf", else the first pooled metric whose name starts with "vmaf".
pub fn pooled_vmaf(text: &str) -> (Option<usize>, Option<f64>) {
    let Ok(j) = Json::parse(text) else { return (None, None) };
    let frames = match j.get("frames") {
        Some(Json::Arr(f)) => f.len(),
        _ => 0,
    };
    let mean = match j.get("pooled_metrics") {
        Some(Json::Obj(m)) => m.iter().find(|(k, _)| k == "vmaf").or_else(|| m.iter().find(|(k, _)| k.starts_with("vmaf"))).and_then(|(_, v)| v.num("mean")),
        _ => None,
    };
    (Some(frames), mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = "frame:0    pts:0       pts_time:0\nlavfi.vmafx.vif_scale0=0.93160927295684814\nlavfi.vmafx.vmaf=76.668905196236123\nframe:1    pts:1       pts_time:0.04\nlavfi.vmafx.vif_scale0=0.9\nlavfi.vmafx.vmaf=80\n";

    #[test]
    fn metadata_reads_per_frame_doubles() {
        let f = read_metadata(META).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0]["lavfi.vmafx.vmaf"].to_bits(), "76.668905196236123".parse::<f64>().unwrap().to_bits());
        assert_eq!(f[1].len(), 2);
        assert!(read_metadata("frame:0\nlavfi.vmafx.vmaf=x\n").is_err());
    }

    #[test]
    fn equal_runs_compare_every_value() {
        let f = read_metadata(META).unwrap();
        assert_eq!(compare_frames(&f, &f, "cuda"), (4, vec![]));
    }

    #[test]
    fn one_bit_a_missing_frame_or_key_is_a_difference() {
        let cpu = read_metadata(META).unwrap();
        let mut gpu = cpu.clone();
        let v = gpu[1]["lavfi.vmafx.vmaf"];
        gpu[1].insert("lavfi.vmafx.vmaf".into(), f64::from_bits(v.to_bits() + 1));
        let (n, p) = compare_frames(&gpu, &cpu, "cuda");
        assert_eq!(n, 4);
        assert_eq!(p, vec!["cuda frame 1 lavfi.vmafx.vmaf: 80.00000000000001 vs 80.0"]);
        // The last frame missing.
        let (_, p) = compare_frames(&cpu[..1], &cpu, "cuda");
        assert_eq!(p, vec!["cuda: 1 frames vs 2"]);
        let mut fewer = cpu.clone();
        fewer[0].remove("lavfi.vmafx.vif_scale0");
        assert!(compare_frames(&fewer, &cpu, "cuda").1[0].contains("keys differ"));
    }

    #[test]
    fn a_json_log_gives_frames_and_pooled_values() {
        let text = r#"{"version": "x", "frames": [{"frameNum": 0, "metrics": {"vmaf": 76.5, "psnr_y": 34.1}}], "pooled_metrics": {"vmaf": {"min": 76.5, "mean": 76.5}}}"#;
        let (frames, pooled) = read_json_log(text).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0]["psnr_y"], 34.1);
        assert!(same_bits(&pooled, &pooled));
        let other = Json::parse(r#"{"vmaf": {"min": 76.5, "mean": 76.50000000000001}}"#).unwrap();
        assert!(!same_bits(&pooled, &other));
        let reordered = Json::parse(r#"{"psnr_y": {"mean": 34.5}, "vmaf": {"mean": 76.5}}"#).unwrap();
        let in_order = Json::parse(r#"{"vmaf": {"mean": 76.5}, "psnr_y": {"mean": 34.5}}"#).unwrap();
        assert!(same_bits(&reordered, &in_order));
        assert!(!same_bits(&reordered, &Json::parse(r#"{"psnr_y": {"mean": 34.5}, "vmaf": {"mean": 76.5}, "x": 1}"#).unwrap()));
        assert!(!same_bits(&reordered, &Json::parse(r#"{"psnr_y": {"mean": 34.5}, "vmafx": {"mean": 76.5}}"#).unwrap()));
        assert_eq!(pooled_vmaf(text), (Some(1), Some(76.5)));
        assert_eq!(pooled_vmaf("{\"frames\": [], \"pooled_metrics\": {\"vmaf_hd\": {\"mean\": 9}}}"), (Some(0), Some(9.0)));
        assert_eq!(pooled_vmaf("not json"), (None, None));
    }

    #[test]
    fn the_counters_line_is_read_as_printed() {
        let log = "[Parsed_vmafx_2 @ 0x1] main cuda/nv12, reference cuda/nv12: CUDA frames read in place on the GPU\n\
                   [Parsed_vmafx_2 @ 0x1] VMAF score: 76.668905\n\
                   [Parsed_vmafx_2 @ 0x1] 48 frame pairs scored, 0 host copies, 96 CUDA frames in place\n";
        let c = Counters::parse(log);
        assert_eq!((c.pairs, c.host_copies, c.in_place), (Some(48), Some(0), Some(96)));
        assert_eq!(c.scores, vec!["76.668905"]);
        assert!(c.cuda_in_place_line);
        let cpu = Counters::parse("x 48 frame pairs scored, 3 host copies\n");
        assert_eq!((cpu.pairs, cpu.host_copies, cpu.in_place), (Some(48), Some(3), Some(0)));
        assert!(!cpu.cuda_in_place_line);
        assert_eq!(Counters::parse("nothing").pairs, None);
        assert_eq!(Counters::parse("2 frame pairs scored, 0 host copies, 4 GPU frames in place").in_place, Some(4));
    }

    #[test]
    fn the_first_error_prefers_vmafxs_own_lines() {
        let log = "Stream mapping:\nError while filtering: Generic error\n[Parsed_vmafx_2 @ 0x1] device: no CUDA driver\nexit\n";
        assert_eq!(first_error(log), "[Parsed_vmafx_2 @ 0x1] device: no CUDA driver / Error while filtering: Generic error");
        assert_eq!(first_error("a\nlast words\n"), "last words");
        assert_eq!(first_error(""), "(no output)");
        let libvmaf = "# ffmpeg -i x failed\n[AVFilterGraph] Impossible to convert: Function not implemented\nConversion failed!\n";
        assert_eq!(first_error_libvmaf(libvmaf), "Conversion failed!");
        assert_eq!(first_error_libvmaf("# argv\nskipped: deadline (300 s) reached\n"), "skipped: deadline (300 s) reached");
    }
}
