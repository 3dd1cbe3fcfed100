//! Lossy test clips made with the system `ffmpeg` (Debian 12's, with libx264
//! and libx265; `scripts/setup` installs it): textured, moving content
//! encoded at several CRFs so VMAF spreads from the 20s to the high 90s,
//! decoded back to y4m at 8, 10, 12 and 16 bits, 4:2:0, 4:2:2 and 4:4:4, at
//! 576x324 and at odd sizes.
//!
//! Each clip is cached under `target/vmafx-clips/<name>-<hash>/` where the
//! hash covers every ffmpeg command line that makes it and ffmpeg's version,
//! so a rerun reads files and a changed recipe regenerates.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Content of a clip's reference (a lavfi graph; `{s}` is the size).
#[derive(Clone, Copy, Debug)]
pub enum Content {
    /// A zoom into the Mandelbrot set's seahorse valley overlaid with a
    /// blurred Game of Life and grain: fine texture, smooth areas, motion.
    Fractal,
    /// Game of Life colonies with mould, blurred, over moving gradients,
    /// with grain: organic shapes that move every frame.
    Organic,
    /// ffmpeg's testsrc2: text, edges, colour ramps, a moving box.
    TestPattern,
    /// SMPTE HD colour bars scrolling sideways, with grain.
    ScrollingBars,
}

impl Content {
    fn graph(self, w: usize, h: usize) -> (Vec<String>, String) {
        let s = format!("{w}x{h}");
        match self {
            Content::Fractal => (
                vec![
                    format!("mandelbrot=s={s}:r=25:start_scale=0.01:end_scale=0.001:end_pts=40:outer=normalized_iteration_count:maxiter=2000"),
                    format!("life=s={s}:r=25:mold=20:ratio=0.5:seed=7:life_color=#b08040:death_color=#203018:mold_color=#506030"),
                ],
                "[1]gblur=sigma=2[l];[0][l]blend=all_mode=overlay:all_opacity=0.6,noise=alls=6:allf=t:all_seed=11,eq=saturation=0.7".into(),
            ),
            Content::Organic => (
                vec![
                    format!("life=s={s}:r=25:mold=8:ratio=0.3:seed=3:life_color=#e0c090:death_color=#102030:mold_color=#608040"),
                    format!("gradients=s={s}:r=25:speed=0.03:n=3:seed=5"),
                ],
                "[0]gblur=sigma=1.2[l];[l][1]blend=all_mode=softlight,noise=alls=10:allf=t:all_seed=13".into(),
            ),
            Content::TestPattern => (
                vec![format!("testsrc2=s={s}:r=25")],
                "[0]noise=alls=4:allf=t:all_seed=17".into(),
            ),
            Content::ScrollingBars => (
                vec![format!("smptehdbars=s={s}:r=25")],
                "[0]scroll=h=0.013:v=0.004,noise=alls=7:allf=t:all_seed=19".into(),
            ),
        }
    }
}

/// How a clip is made.
#[derive(Clone, Debug)]
pub struct ClipSpec {
    pub name: &'static str,
    pub content: Content,
    /// Size the content is made and encoded at (even: encoders need it).
    pub encode_size: (usize, usize),
    /// Size both files are cropped to after decoding (odd sizes).
    pub crop: Option<(usize, usize)>,
    pub frames: usize,
    /// "libx264" or "libx265".
    pub codec: &'static str,
    pub crf: u32,
    /// Pixel format encoded (yuv420p, yuv420p10le, yuv444p, ...).
    pub encode_pix_fmt: &'static str,
    /// Pixel format of both y4m files (ffmpeg converts after decoding).
    pub pix_fmt: &'static str,
}

/// A clip on disk.
#[derive(Clone, Debug)]
pub struct Clip {
    pub name: String,
    pub reference: PathBuf,
    pub distorted: PathBuf,
    pub pix_fmt: String,
    pub width: usize,
    pub height: usize,
    pub frames: usize,
}

/// The golden set: VMAF from ~20 to ~99, every layout and depth the CLI
/// reads, two odd sizes.
pub fn specs() -> Vec<ClipSpec> {
    let base = |name, content, crf| ClipSpec {
        name,
        content,
        encode_size: (576, 324),
        crop: None,
        frames: 12,
        codec: "libx264",
        crf,
        encode_pix_fmt: "yuv420p",
        pix_fmt: "yuv420p",
    };
    vec![
        base("fractal_crf18", Content::Fractal, 18),
        base("fractal_crf32", Content::Fractal, 32),
        base("fractal_crf35", Content::Fractal, 35),
        base("organic_crf33", Content::Organic, 33),
        base("organic_crf21", Content::Organic, 21),
        base("testsrc2_crf38", Content::TestPattern, 38),
        ClipSpec { frames: 16, ..base("bars_crf30", Content::ScrollingBars, 30) },
        ClipSpec {
            encode_size: (428, 240),
            crop: Some((427, 239)),
            ..base("fractal_427x239_crf36", Content::Fractal, 36)
        },
        ClipSpec {
            encode_size: (194, 110),
            crop: Some((193, 109)),
            frames: 8,
            ..base("testsrc2_193x109_crf30", Content::TestPattern, 30)
        },
        ClipSpec {
            encode_size: (352, 200),
            crop: Some((351, 197)),
            frames: 10,
            ..base("bars_351x197_crf24", Content::ScrollingBars, 24)
        },
        ClipSpec {
            encode_pix_fmt: "yuv420p10le",
            pix_fmt: "yuv420p10le",
            ..base("organic_10bit_crf28", Content::Organic, 28)
        },
        ClipSpec {
            codec: "libx265",
            encode_pix_fmt: "yuv420p12le",
            pix_fmt: "yuv420p12le",
            frames: 8,
            ..base("fractal_12bit_x265_crf30", Content::Fractal, 30)
        },
        ClipSpec {
            encode_pix_fmt: "yuv420p10le",
            pix_fmt: "yuv420p16le",
            frames: 8,
            ..base("testsrc2_16bit_crf40", Content::TestPattern, 40)
        },
        ClipSpec {
            encode_pix_fmt: "yuv444p",
            pix_fmt: "yuv444p",
            frames: 8,
            ..base("fractal_444_crf30", Content::Fractal, 30)
        },
        ClipSpec {
            codec: "libx265",
            encode_size: (384, 216),
            crop: Some((383, 215)),
            encode_pix_fmt: "yuv422p10le",
            pix_fmt: "yuv422p10le",
            frames: 8,
            ..base("organic_422_10bit_x265_383x215_crf28", Content::Organic, 28)
        },
    ]
}

/// Where clips are cached: `<target>/vmafx-clips`.
pub fn cache_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(&tmp).join("vmafx-clips")
}

/// ffmpeg's version line, or `None` when ffmpeg is not installed.
pub fn ffmpeg_version() -> Option<String> {
    static VERSION: OnceLock<Option<String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = Command::new("ffmpeg").arg("-version").output().ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8_lossy(&out.stdout).lines().next().map(str::to_owned)
        })
        .clone()
}

/// FNV-1a, 64 bits: a hash that stays the same across Rust releases.
fn fnv1a(text: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

const COMMON: &[&str] = &["-hide_banner", "-loglevel", "error", "-nostdin", "-y"];

/// The ffmpeg argument lists that make `spec` in `dir`: source, encode,
/// reference y4m, distorted y4m.
fn commands(spec: &ClipSpec, dir: &Path) -> Vec<Vec<String>> {
    let (w, h) = spec.encode_size;
    let (inputs, graph) = spec.content.graph(w, h);
    let src = dir.join("source.nut").display().to_string();
    let enc = dir.join("encoded.mkv").display().to_string();
    let reference = dir.join("ref.y4m").display().to_string();
    let distorted = dir.join("dist.y4m").display().to_string();
    let args =
        |list: &[&str]| -> Vec<String> { COMMON.iter().chain(list.iter()).map(|s| s.to_string()).collect() };

    let frames = spec.frames.to_string();
    let mut make_source = args(&[]);
    for i in &inputs {
        make_source.extend(["-f".into(), "lavfi".into(), "-i".into(), i.clone()]);
    }
    let filter = format!("{graph},format={}", spec.encode_pix_fmt);
    make_source
        .extend(["-filter_complex", &filter, "-frames:v", &frames, "-c:v", "ffv1", &src].map(String::from));

    let crf = spec.crf.to_string();
    let mut encode = args(&[
        "-i",
        &src,
        "-c:v",
        spec.codec,
        "-crf",
        &crf,
        "-preset",
        "veryfast",
        "-pix_fmt",
        spec.encode_pix_fmt,
    ]);
    if spec.codec == "libx265" {
        encode.extend(["-x265-params".into(), "log-level=error".into()]);
    } else {
        encode.extend(["-threads".into(), "2".into()]);
    }
    encode.push(enc.clone());

    let mut post = String::new();
    if let Some((cw, ch)) = spec.crop {
        post += &format!("crop={cw}:{ch}:0:0,");
    }
    post += &format!("format={}", spec.pix_fmt);
    let to_y4m = |input: &str, output: &str| {
        args(&[
            "-i",
            input,
            "-vf",
            &post,
            "-frames:v",
            &frames,
            "-strict",
            "-1",
            "-f",
            "yuv4mpegpipe",
            output,
        ])
    };
    vec![make_source, encode, to_y4m(&src, &reference), to_y4m(&enc, &distorted)]
}

/// Makes `spec` if it is not cached; returns it on disk. Panics with the
/// command and ffmpeg's message when ffmpeg fails or is missing.
pub fn ensure(spec: &ClipSpec) -> Clip {
    let version = ffmpeg_version().unwrap_or_else(|| {
        panic!("ffmpeg is not installed: the golden clips need it (run scripts/setup, or apt-get install ffmpeg)")
    });
    let root = cache_dir();
    // The key: every command, with a placeholder directory, and the version.
    let placeholder = commands(spec, Path::new("@"));
    let key = format!("{version}\n{placeholder:?}");
    let dir = root.join(format!("{}-{:016x}", spec.name, fnv1a(&key)));
    let (w, h) = spec.crop.unwrap_or(spec.encode_size);
    let clip = Clip {
        name: spec.name.to_owned(),
        reference: dir.join("ref.y4m"),
        distorted: dir.join("dist.y4m"),
        pix_fmt: spec.pix_fmt.to_owned(),
        width: w,
        height: h,
        frames: spec.frames,
    };
    if clip.reference.exists() && clip.distorted.exists() {
        return clip;
    }
    // Made in a private directory, then renamed into place, so concurrent
    // tests never see half a clip.
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let work = root.join(format!(".tmp-{}-{}-{nanos}", spec.name, std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    for cmd in commands(spec, &work) {
        let out = Command::new("ffmpeg").args(&cmd).output().expect("running ffmpeg");
        if !out.status.success() {
            panic!("clip {}: ffmpeg {:?} failed:\n{}", spec.name, cmd, String::from_utf8_lossy(&out.stderr));
        }
    }
    let _ = std::fs::remove_file(work.join("source.nut"));
    let _ = std::fs::remove_file(work.join("encoded.mkv"));
    if std::fs::rename(&work, &dir).is_err() {
        // Another test made it first.
        let _ = std::fs::remove_dir_all(&work);
    }
    assert!(
        clip.reference.exists() && clip.distorted.exists(),
        "clip {} missing after generation",
        spec.name
    );
    clip
}

/// Every clip of [`specs`], made if needed. Clips of older recipes are
/// removed from the cache.
pub fn all() -> Vec<Clip> {
    let clips: Vec<Clip> = specs().iter().map(ensure).collect();
    let keep: Vec<PathBuf> =
        clips.iter().filter_map(|c| c.reference.parent().map(Path::to_path_buf)).collect();
    if let Ok(entries) = std::fs::read_dir(cache_dir()) {
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && !name.starts_with('.') && !keep.contains(&path) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
    clips
}

/// The clip's frames as (reference, distorted) pairs, checked against the
/// frame count it was made with.
#[allow(dead_code)]
pub fn read_pairs(clip: &Clip) -> Vec<(vmafx::OwnedPicture, vmafx::OwnedPicture)> {
    use vmafx::io::{FrameReader, Y4mReader};
    let read = |path| {
        let mut r = Y4mReader::open(path).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        while let Some(p) = r.read_frame().unwrap_or_else(|e| panic!("{e}")) {
            out.push(p);
        }
        out
    };
    let (r, d) = (read(&clip.reference), read(&clip.distorted));
    assert_eq!(r.len(), d.len(), "{}: frame counts", clip.name);
    assert_eq!(r.len(), clip.frames, "{}: frames", clip.name);
    r.into_iter().zip(d).collect()
}
