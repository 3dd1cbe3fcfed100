//! `DecodeReader::seek_to_frame`: a segment of a segmented run (vmafx.ray)
//! starts at any frame of an encoded input by seeking to the key frame at
//! or before it (`DecodeReader::map_frames`, packets only) and decoding
//! forward. Every frame read after a seek to frame f equals, sample for
//! sample, frame f.. of a decode from the start: on an x264 .mp4 with
//! B-frames and an x265 .mkv (10 bits, open GOPs), key frames every 4,
//! each decoded from the latest key frame at or before f.

use std::path::{Path, PathBuf};

use vmafx::OwnedPicture;
use vmafx::io::{DecodeReader, FrameReader};
use crate::support::ffmpeg::system_ffmpeg;

const FRAMES: usize = 14;

fn encode(name: &str, fmt: &str, codec: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("decode_seek");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let src = format!("testsrc2=s=192x108:r=25,noise=alls=12:allf=t:all_seed=3,format={fmt}");
    let frames = FRAMES.to_string();
    let mut args = vec!["-f", "lavfi", "-i", &src, "-frames:v", &frames];
    args.extend(codec);
    args.push(path.to_str().unwrap());
    system_ffmpeg(&args);
    path
}

fn samples(p: &OwnedPicture) -> Vec<Vec<u8>> {
    let v = p.view();
    (0..v.plane_count())
        .map(|i| {
            let plane = v.plane(i);
            let row = plane.width() * plane.bytes_per_sample();
            (0..plane.height()).flat_map(|y| plane.data()[y * plane.stride()..][..row].to_vec()).collect()
        })
        .collect()
}

fn check(path: &Path) {
    let mut whole = DecodeReader::open(path).unwrap();
    let mut frames = Vec::new();
    while let Some(f) = whole.read_frame().unwrap() {
        frames.push(samples(&f));
    }
    assert_eq!(frames.len(), FRAMES);
    let map = DecodeReader::map_frames(path).unwrap().expect("a map from the packets");
    assert_eq!(map.pts.len(), FRAMES, "{}: one timestamp per frame", path.display());
    assert!(map.keys.len() >= 3, "{}: key frames {:?}", path.display(), map.keys);
    for from in 0..FRAMES {
        let mut r = DecodeReader::open(path).unwrap();
        let key = r.seek_to_frame(&map, from as u32).unwrap();
        // Decoded from the latest key frame at or before it, not from further back.
        let latest = map.keys.iter().map(|k| k.0).filter(|&k| k <= from as u32).max();
        assert_eq!(Some(key), latest, "{}: seek to {from}", path.display());
        assert_eq!(r.frames_read(), from as u32);
        for (i, expected) in frames.iter().enumerate().skip(from) {
            let got = r.read_frame().unwrap().unwrap_or_else(|| panic!("seek to {from}: ended before {i}"));
            assert!(samples(&got) == *expected, "{}: seek to {from}: frame {i} differs", path.display());
        }
        assert!(r.read_frame().unwrap().is_none());
    }
}

#[test]
fn x264_with_b_frames_seeks_to_every_frame() {
    check(&encode("x264.mp4", "yuv420p", &["-c:v", "libx264", "-g", "4", "-bf", "2", "-crf", "30", "-preset", "veryfast"]));
}

#[test]
fn x265_open_gop_seeks_to_every_frame() {
    let params = "log-level=error:keyint=4:min-keyint=4:open-gop=1:bframes=2";
    check(&encode("x265.mkv", "yuv420p10le", &["-c:v", "libx265", "-x265-params", params, "-crf", "30"]));
}
