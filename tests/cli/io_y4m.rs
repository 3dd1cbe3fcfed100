//! The y4m and raw yuv readers on files this test writes byte by byte:
//! every sample read back where it was written (odd sizes, 8 to 16 bits,
//! every chroma layout), and each malformed input refused with the file and
//! frame named.

use std::io::Write;
use std::path::PathBuf;

use vmafx::{Chroma, OwnedPicture, PixelFormat};
use vmafx::io::{self, FrameReader, RawFormat, Y4mHeader, Y4mReader, Y4mWriter, YuvReader};

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("io_y4m");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Deterministic sample value for (frame, plane, x, y) within `bits`.
fn sample(bits: u8, frame: usize, plane: usize, x: usize, y: usize) -> u16 {
    let mut h = (frame as u64) << 48 ^ (plane as u64) << 40 ^ (x as u64) << 20 ^ y as u64;
    h = h.wrapping_mul(0x9E3779B97F4A7C15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58476D1CE4E5B9);
    h ^= h >> 32;
    let max = (1u32 << bits) - 1;
    // Hit both extremes now and then.
    match h % 17 {
        0 => 0,
        1 => max as u16,
        _ => (h % (max as u64 + 1)) as u16,
    }
}

/// Packed frame bytes as the format lays them out: planes in order, chroma
/// ceil-sized, 16-bit little-endian above 8 bits.
fn packed_frame(fmt: PixelFormat, w: usize, h: usize, frame: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for p in 0..fmt.chroma.plane_count() {
        let (sx, sy) = fmt.chroma.shift();
        let (pw, ph) = if p == 0 { (w, h) } else { ((w + (1 << sx) - 1) >> sx, (h + (1 << sy) - 1) >> sy) };
        for y in 0..ph {
            for x in 0..pw {
                let v = sample(fmt.bits, frame, p, x, y);
                if fmt.bits > 8 {
                    out.extend_from_slice(&[(v & 0xff) as u8, (v >> 8) as u8]);
                } else {
                    out.push(v as u8);
                }
            }
        }
    }
    out
}

fn check_frame(pic: &OwnedPicture, frame: usize) {
    let v = pic.view();
    let fmt = pic.format();
    for p in 0..fmt.chroma.plane_count() {
        let plane = v.plane(p);
        for y in 0..plane.height() {
            for x in 0..plane.width() {
                assert_eq!(
                    plane.sample(x, y),
                    sample(fmt.bits, frame, p, x, y) as u32,
                    "{fmt} {}x{} frame {frame} plane {p} ({x},{y})",
                    pic.width(),
                    pic.height()
                );
            }
        }
    }
}

fn write_y4m(name: &str, header: &str, frames: &[(String, Vec<u8>)]) -> PathBuf {
    let path = tmp(name);
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(header.as_bytes()).unwrap();
    f.write_all(b"\n").unwrap();
    for (frame_line, data) in frames {
        f.write_all(frame_line.as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
        f.write_all(data).unwrap();
    }
    path
}

/// Every frame of `path`, read the three ways a reader gives them: copied
/// from the mapped file (`read_frame`), lent from it in place
/// (`read_source`, what the CLI takes), and streamed from the open file
/// (`read_source` of a reader over `File`, as for standard input). All three
/// must give the same pictures or the same error.
fn read_all(path: &PathBuf) -> vmafx::Result<Vec<OwnedPicture>> {
    fn drain(mut r: impl FrameReader, lent: bool) -> vmafx::Result<Vec<OwnedPicture>> {
        let mut out = Vec::new();
        loop {
            let next = if lent {
                r.read_source()?.map(|s| OwnedPicture::copy_of(&s.host().expect("host planes")).unwrap())
            } else {
                r.read_frame()?
            };
            let Some(p) = next else { break };
            out.push(p);
        }
        assert_eq!(r.frames_read() as usize, out.len());
        Ok(out)
    }
    let copied = Y4mReader::open(path).and_then(|r| drain(r, false));
    let lent = Y4mReader::open(path).and_then(|r| drain(r, true));
    let streamed = Y4mReader::new(std::fs::File::open(path).unwrap(), path).and_then(|r| drain(r, true));
    same_outcome(path, &lent, &copied, "copied from the map");
    same_outcome(path, &lent, &streamed, "streamed");
    lent
}

fn same_outcome(
    path: &PathBuf,
    want: &vmafx::Result<Vec<OwnedPicture>>,
    got: &vmafx::Result<Vec<OwnedPicture>>,
    how: &str,
) {
    match (want, got) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.len(), b.len(), "{}: frames lent and {how}", path.display());
            for (i, (a, b)) in a.iter().zip(b).enumerate() {
                let (a, b) = (a.view(), b.view());
                for p in 0..a.plane_count() {
                    let (pa, pb) = (a.plane(p), b.plane(p));
                    for y in 0..pa.height() {
                        for x in 0..pa.width() {
                            assert_eq!(pa.sample(x, y), pb.sample(x, y), "{}: frame {i} plane {p} ({x},{y}) lent and {how}", path.display());
                        }
                    }
                }
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}: errors lent and {how}", path.display()),
        (a, b) => panic!("{}: lent {:?} frames, {how} {:?}", path.display(), a.as_ref().map(Vec::len), b.as_ref().map(Vec::len)),
    }
}

#[test]
fn reads_every_colorspace_and_depth_at_odd_sizes() {
    let cases: &[(&str, Chroma, u8)] = &[
        ("420jpeg", Chroma::Yuv420, 8),
        ("420", Chroma::Yuv420, 8),
        ("420mpeg2", Chroma::Yuv420, 8),
        ("420paldv", Chroma::Yuv420, 8),
        ("422", Chroma::Yuv422, 8),
        ("444", Chroma::Yuv444, 8),
        ("mono", Chroma::Yuv400, 8),
        ("420p10", Chroma::Yuv420, 10),
        ("422p10", Chroma::Yuv422, 10),
        ("444p10", Chroma::Yuv444, 10),
        ("420p12", Chroma::Yuv420, 12),
        ("444p12", Chroma::Yuv444, 12),
        ("420p16", Chroma::Yuv420, 16),
        ("422p16", Chroma::Yuv422, 16),
        ("444p16", Chroma::Yuv444, 16),
        ("mono16", Chroma::Yuv400, 16),
        ("420p9", Chroma::Yuv420, 9),
        ("444p14", Chroma::Yuv444, 14),
    ];
    for &(c, chroma, bits) in cases {
        for (w, h) in [(7usize, 5usize), (33, 20), (16, 9), (1, 1)] {
            let fmt = PixelFormat::new(chroma, bits).unwrap();
            let frames: Vec<_> = (0..3).map(|i| ("FRAME".to_string(), packed_frame(fmt, w, h, i))).collect();
            let path = write_y4m(
                &format!("cs_{c}_{w}x{h}.y4m"),
                &format!("YUV4MPEG2 W{w} H{h} F30000:1001 Ip A1:1 C{c}"),
                &frames,
            );
            let pics = read_all(&path).unwrap_or_else(|e| panic!("C{c} {w}x{h}: {e}"));
            assert_eq!(pics.len(), 3, "C{c} {w}x{h}");
            for (i, p) in pics.iter().enumerate() {
                assert_eq!((p.width(), p.height(), p.format()), (w, h, fmt));
                check_frame(p, i);
            }
        }
    }
}

#[test]
fn header_tags_are_read() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 10).unwrap();
    // C absent: XYSCSS stands in (ffmpeg writes both); unknown tags skipped.
    let path = write_y4m(
        "tags.y4m",
        "YUV4MPEG2 W9 H7 F24:1 It A16:15 XYSCSS=420P10 XCOLORRANGE=LIMITED Zzz",
        &[("FRAME".into(), packed_frame(fmt, 9, 7, 0))],
    );
    let r = Y4mReader::open(&path).unwrap();
    let h = r.header();
    assert_eq!((h.width, h.height, h.format), (9, 7, fmt));
    assert_eq!(h.frame_rate, (24, 1));
    assert_eq!(h.pixel_aspect, (16, 15));
    assert_eq!(h.interlace, 't');
    assert_eq!(h.colorspace, "420p10");

    // No C and no XYSCSS: 4:2:0 8-bit, as libvmaf assumes.
    let path = write_y4m("noc.y4m", "YUV4MPEG2 W4 H4 F25:1", &[]);
    let r = Y4mReader::open(&path).unwrap();
    assert_eq!(r.header().format, PixelFormat::new(Chroma::Yuv420, 8).unwrap());
}

#[test]
fn frame_headers_with_parameters_and_alpha() {
    let fmt = PixelFormat::new(Chroma::Yuv444, 8).unwrap();
    let (w, h) = (5, 3);
    let with_alpha = |i: usize| {
        let mut d = packed_frame(fmt, w, h, i);
        d.extend(std::iter::repeat(0xA5).take(w * h));
        d
    };
    let path = write_y4m(
        "alpha.y4m",
        &format!("YUV4MPEG2 W{w} H{h} F25:1 Ip C444alpha"),
        &[
            ("FRAME Ip XFOO=bar".into(), with_alpha(0)),
            ("FRAME".into(), with_alpha(1)),
            ("FRAME ".into(), with_alpha(2)),
        ],
    );
    let pics = read_all(&path).unwrap();
    assert_eq!(pics.len(), 3);
    for (i, p) in pics.iter().enumerate() {
        check_frame(p, i);
    }
}

#[test]
fn writer_round_trips_and_writes_little_endian() {
    for (chroma, bits, w, h) in [
        (Chroma::Yuv420, 8, 13, 11),
        (Chroma::Yuv420, 10, 576, 324),
        (Chroma::Yuv444, 16, 3, 2),
        (Chroma::Yuv422, 12, 9, 4),
        (Chroma::Yuv400, 16, 5, 5),
    ] {
        let fmt = PixelFormat::new(chroma, bits).unwrap();
        let path = tmp(&format!("writer_{chroma:?}_{bits}_{w}x{h}.y4m"));
        let mut expected_bytes = Vec::new();
        {
            let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            let mut wr = Y4mWriter::new(file, Y4mHeader::new(w, h, fmt, (25, 1))).unwrap();
            for i in 0..4 {
                let data = packed_frame(fmt, w, h, i);
                let mut pic = OwnedPicture::new(fmt, w, h).unwrap();
                let mut off = 0;
                for p in 0..fmt.chroma.plane_count() {
                    let (pw, ph) = fmt.plane_size(p, w, h);
                    let n = pw * ph * fmt.bytes_per_sample();
                    pic.fill_plane_from_packed(p, &data[off..off + n]).unwrap();
                    off += n;
                }
                wr.write_frame(&pic.view()).unwrap();
                expected_bytes.extend_from_slice(b"FRAME\n");
                expected_bytes.extend_from_slice(&data);
            }
            wr.into_inner().flush().unwrap();
        }
        // The bytes on disk are exactly header + (FRAME + packed LE planes)*.
        let on_disk = std::fs::read(&path).unwrap();
        let header_end = on_disk.iter().position(|&b| b == b'\n').unwrap() + 1;
        assert_eq!(&on_disk[header_end..], &expected_bytes[..], "{fmt} {w}x{h}");
        let pics = read_all(&path).unwrap();
        assert_eq!(pics.len(), 4);
        for (i, p) in pics.iter().enumerate() {
            check_frame(p, i);
        }
    }
}

fn open_err(path: &PathBuf) -> String {
    match Y4mReader::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e.to_string(),
    }
}

fn read_err(path: &PathBuf) -> String {
    match read_all(path) {
        Ok(p) => panic!("{} read {} frames", path.display(), p.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_headers_are_refused_with_the_file_named() {
    let cases: &[(&str, &str, &str)] = &[
        ("bad_w.y4m", "YUV4MPEG2 W12x H4 F25:1", "bad header tag \"W12x\""),
        ("zero_w.y4m", "YUV4MPEG2 W0 H4 F25:1", "bad header tag \"W0\""),
        ("bad_f.y4m", "YUV4MPEG2 W4 H4 F25", "bad header tag \"F25\""),
        ("bad_i.y4m", "YUV4MPEG2 W4 H4 F25:1 Ix", "bad header tag \"Ix\""),
        ("no_h.y4m", "YUV4MPEG2 W4 F25:1", "no height"),
        ("no_w.y4m", "YUV4MPEG2 H4 F25:1", "no width"),
        ("c411.y4m", "YUV4MPEG2 W4 H4 F25:1 C411", "unsupported colorspace \"C411\""),
        ("cfoo.y4m", "YUV4MPEG2 W4 H4 F25:1 Cfoo", "unsupported colorspace \"Cfoo\""),
        ("c420p7.y4m", "YUV4MPEG2 W4 H4 F25:1 C420p7", "unsupported colorspace \"C420p7\""),
        ("magic.y4m", "YUV4MPEG W4 H4 F25:1", "not a y4m file"),
        ("magic3.y4m", "YUV4MPEG3 W4 H4 F25:1", "not a y4m file"),
    ];
    for &(name, header, want) in cases {
        let path = write_y4m(name, header, &[]);
        let e = open_err(&path);
        assert!(e.contains(want), "{name}: {e:?} lacks {want:?}");
        assert!(e.contains(name), "{name}: {e:?} does not name the file");
    }
    let path = tmp("empty.y4m");
    std::fs::write(&path, b"").unwrap();
    assert!(open_err(&path).contains("empty file"));
    let path = tmp("nonewline.y4m");
    std::fs::write(&path, b"YUV4MPEG2 W4 H4").unwrap();
    assert!(open_err(&path).contains("truncated y4m header"));
    let path = tmp("raw.y4m");
    std::fs::write(&path, vec![16u8; 10000]).unwrap();
    let e = open_err(&path);
    assert!(e.contains("--width"), "{e}");
    let e = match Y4mReader::open(tmp("does_not_exist.y4m")) {
        Ok(_) => panic!(),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("does_not_exist.y4m"), "{e}");
}

#[test]
fn truncation_and_lost_framing_name_the_frame() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
    let (w, h) = (11, 7);
    let header = format!("YUV4MPEG2 W{w} H{h} F25:1 C420jpeg");
    let full = |i| ("FRAME".to_string(), packed_frame(fmt, w, h, i));

    // Frame 2's data stops short.
    let mut short = packed_frame(fmt, w, h, 2);
    short.truncate(50);
    let path = write_y4m("trunc_data.y4m", &header, &[full(0), full(1), ("FRAME".into(), short)]);
    let e = read_err(&path);
    assert!(e.contains("trunc_data.y4m") && e.contains("truncated frame 2: 50 of 125 bytes"), "{e}");

    // The file ends inside frame 1's FRAME line.
    let mut bytes = std::fs::read(write_y4m("tmp.y4m", &header, &[full(0)])).unwrap();
    bytes.extend_from_slice(b"FRA");
    let path = tmp("trunc_header.y4m");
    std::fs::write(&path, &bytes).unwrap();
    let e = read_err(&path);
    assert!(e.contains("truncated frame 1") && e.contains("FRAME header"), "{e}");

    // Frames longer than the header says: framing lost at frame 1.
    let mut long = packed_frame(fmt, w, h, 0);
    long.extend_from_slice(&[1, 2, 3]);
    let path = write_y4m("framing.y4m", &header, &[("FRAME".into(), long), full(1)]);
    let e = read_err(&path);
    assert!(e.contains("framing.y4m") && e.contains("frame 1: expected a FRAME header"), "{e}");

    // "FRAMES" is not a FRAME header.
    let path = write_y4m("frames.y4m", &header, &[("FRAMES".into(), packed_frame(fmt, w, h, 0))]);
    assert!(read_err(&path).contains("frame 0: expected a FRAME header"));
}

#[test]
fn samples_beyond_the_bit_depth_are_refused() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 10).unwrap();
    let mut data = packed_frame(fmt, 4, 4, 1);
    data[2 * 5] = 0x00;
    data[2 * 5 + 1] = 0x04; // 1024 at (1,1) of the luma plane
    let path = write_y4m(
        "overrange.y4m",
        "YUV4MPEG2 W4 H4 F25:1 C420p10",
        &[("FRAME".into(), packed_frame(fmt, 4, 4, 0)), ("FRAME".into(), data)],
    );
    let e = read_err(&path);
    assert!(e.contains("overrange.y4m") && e.contains("frame 1") && e.contains("1024"), "{e}");
}

#[test]
fn raw_yuv_reads_like_ffmpeg_writes() {
    for (pix, bits, w, h) in [
        ("420", Some(8), 7, 5),
        ("yuv420p10le", None, 33, 21),
        ("422", Some(12), 9, 3),
        ("yuv444p16le", Some(16), 4, 4),
        ("gray", None, 3, 3),
    ] {
        let raw = RawFormat::from_options(w, h, pix, bits).unwrap();
        let path = tmp(&format!("raw_{pix}_{w}x{h}.yuv"));
        let mut bytes = Vec::new();
        for i in 0..3 {
            bytes.extend(packed_frame(raw.format, w, h, i));
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut r = io::open(&path, Some(raw)).unwrap();
        assert_eq!((r.width(), r.height(), r.format()), (w, h, raw.format));
        for i in 0..3 {
            check_frame(&r.read_frame().unwrap().unwrap(), i);
        }
        assert!(r.read_frame().unwrap().is_none());
        assert_eq!(r.frames_read(), 3);
        // Lent in place from the mapped file, as the CLI takes them.
        let mut r = io::open(&path, Some(raw)).unwrap();
        for i in 0..3 {
            let source = r.read_source().unwrap().unwrap();
            check_frame(&OwnedPicture::copy_of(&source.host().unwrap()).unwrap(), i);
        }
        assert!(r.read_source().unwrap().is_none());

        // One byte short of three frames.
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let frame = raw.frame_bytes();
        for lent in [false, true] {
            let mut r = YuvReader::open(&path, raw).unwrap();
            let mut next = || if lent { r.read_source().map(|s| s.is_some()) } else { r.read_frame().map(|p| p.is_some()) };
            assert!(next().unwrap() && next().unwrap());
            let e = next().unwrap_err().to_string();
            assert!(
                e.contains(&format!("truncated frame 2: {} of {frame} bytes", frame - 1))
                    && e.contains(path.file_name().unwrap().to_str().unwrap()),
                "{e}"
            );
        }
    }
    assert!(RawFormat::from_options(4, 4, "yuv420p10le", Some(8)).is_err());
    assert!(RawFormat::from_options(4, 4, "nv12", Some(8)).is_err());
}

#[test]
fn open_picks_y4m_or_raw() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
    let path = write_y4m(
        "open.y4m",
        "YUV4MPEG2 W6 H4 F25:1 C420jpeg",
        &[("FRAME".into(), packed_frame(fmt, 6, 4, 0))],
    );
    let mut r = io::open(&path, None).unwrap();
    check_frame(&r.read_frame().unwrap().unwrap(), 0);
    assert!(r.read_frame().unwrap().is_none());
    // skip_frames stops at the end.
    let mut r = io::open(&path, None).unwrap();
    assert_eq!(r.skip_frames(5).unwrap(), 1);
}

/// Headers the fuzzer sent (fuzz/corpus/y4m): a tag whose first character
/// is not ASCII is an unknown tag, not a panic; a header claiming a huge
/// frame costs memory only for the bytes there, and says the frame is cut.
#[test]
fn hostile_headers_get_clear_errors() {
    let tag = write_y4m("hostile_tag", "YUV4MPEG2 W2 H2 C444 \u{12c}S=210P10", &[("FRAME".into(), vec![7; 12])]);
    let pics = read_all(&tag).unwrap();
    assert_eq!((pics.len(), pics[0].width()), (1, 2));
    let huge = write_y4m("hostile_huge", "YUV4MPEG2 W65536 H65536 C444p16", &[("FRAME".into(), vec![0; 2])]);
    let e = read_err(&huge);
    assert!(e.contains("truncated frame 0: 2 of 25769803776 bytes"), "{e}");
}

/// A regular file is mapped and its frames lent where they lie: a plane's
/// rows are then the file's (stride = the row's bytes, no padding), except
/// for 16-bit samples at an odd offset, which cannot be borrowed as u16 and
/// are copied into a padded picture. Either way the samples are the file's.
#[test]
fn mapped_frames_are_lent_in_place_or_copied_where_misaligned() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 10).unwrap();
    let frames: Vec<_> = (0..2).map(|i| ("FRAME".to_string(), packed_frame(fmt, 7, 5, i))).collect();
    // "YUV4MPEG2 W7 H5 C420p10\n" is 24 bytes, "FRAME\n" 6: frame data at
    // even offsets. One more header byte puts every frame at an odd one.
    for (header, lent) in [("YUV4MPEG2 W7 H5 C420p10", true), ("YUV4MPEG2 W7 H5 C420p10 ", false)] {
        let path = write_y4m(&format!("lent_{lent}.y4m"), header, &frames);
        let mut r = Y4mReader::open(&path).unwrap();
        for i in 0..2 {
            let source = r.read_source().unwrap().unwrap();
            let picture = source.host().unwrap();
            let stride = picture.luma().stride();
            assert_eq!(stride == 14, lent, "{header:?}: frame {i} luma stride {stride}");
            check_frame(&OwnedPicture::copy_of(&picture).unwrap(), i);
        }
        assert!(r.read_source().unwrap().is_none());
    }
}

/// A file cut short after it was opened (and mapped) ends with the usual
/// error at the first frame it no longer holds; nothing past its new end is
/// touched (which would raise SIGBUS).
#[test]
fn a_file_cut_while_open_ends_with_a_truncated_frame() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
    let frames: Vec<_> = (0..3).map(|i| ("FRAME".to_string(), packed_frame(fmt, 64, 64, i))).collect();
    let header = "YUV4MPEG2 W64 H64 C420jpeg";
    let path = write_y4m("cut_while_open.y4m", header, &frames);
    let mut r = Y4mReader::open(&path).unwrap();
    let first = r.read_source().unwrap().unwrap();
    check_frame(&OwnedPicture::copy_of(&first.host().unwrap()).unwrap(), 0);
    // Cut 100 bytes into frame 1's samples.
    let frame1 = header.len() + 1 + (6 + 6144) + 6;
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(frame1 as u64 + 100).unwrap();
    let e = match r.read_source() {
        Ok(_) => panic!("frame 1 read from a file cut inside it"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("truncated frame 1: 100 of 6144 bytes"), "{e}");
    // The frame lent before the cut is still whole (its pages are still mapped).
    check_frame(&OwnedPicture::copy_of(&first.host().unwrap()).unwrap(), 0);
}

/// Frames lent from a mapped file leave the resident set when the engine
/// drops them: a long clip costs the frames in flight, not the file.
#[test]
fn lent_frames_leave_the_resident_set_when_dropped() {
    let fmt = PixelFormat::new(Chroma::Yuv420, 8).unwrap();
    let (w, h, n) = (640, 480, 16);
    let frames: Vec<_> = (0..n).map(|i| ("FRAME".to_string(), packed_frame(fmt, w, h, i))).collect();
    let path = write_y4m("resident.y4m", "YUV4MPEG2 W640 H480 C420jpeg", &frames);
    // The map's Rss (kB), from its lines in smaps.
    let name = path.canonicalize().unwrap();
    let resident_kb = || -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let at = smaps.find(name.to_str().unwrap()).expect("the file is mapped");
        smaps[at..]
            .lines()
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    let frame_kb = w * h * 3 / 2 / 1024;
    let mut r = Y4mReader::open(&path).unwrap();
    // Three frames in flight, as an engine holds them: each dropped three
    // frames after it was lent.
    let mut in_flight = std::collections::VecDeque::new();
    for i in 0..n {
        let source = r.read_source().unwrap().unwrap();
        check_frame(&OwnedPicture::copy_of(&source.host().unwrap()).unwrap(), i);
        in_flight.push_back(source);
        if in_flight.len() > 3 {
            in_flight.pop_front();
        }
        let rss = resident_kb();
        assert!(rss <= 4 * frame_kb + 16, "frame {i}: {rss} kB of the file resident, 3 frames ({} kB) in flight", 3 * frame_kb);
    }
    in_flight.clear();
    let rss = resident_kb();
    // At most the page the last frame ends in.
    assert!(rss <= 16, "{rss} kB of the {} kB file still resident after its frames were dropped", n * frame_kb);
    drop(r);
}
