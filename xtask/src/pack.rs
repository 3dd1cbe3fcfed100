//! The pack: what `cargo xtask … pack` puts under build/xtask/ for the GPU
//! host, one folder per part (twins, hip-standin, …), each with a MANIFEST
//! that says what was built from which commit and sources, and every file
//! with its size and FNV-1a hash, checked before a run uses it.
//!
//! MANIFEST is text, one `key value` line each (a key may repeat):
//!   format 1
//!   part twins
//!   commit <HEAD>            the commit the sources were at
//!   dirty <path>             a file under `sources` that differed from it
//!   diff-fnv64 <hex>         FNV-1a of `git diff HEAD -- sources` (0 if clean)
//!   built <UTC time> <command>
//!   file <fnv64> <bytes> <path relative to the part>
//!   note <free text>         e.g. one line per planted defect

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder packs live in, relative to the repository root; the one path
/// the GPU host's command carries.
pub const PACK_ROOT: &str = "build/xtask";
/// What the run tool carries at most (64 MiB over every carried path).
pub const CARRY_LIMIT: u64 = 64 << 20;
/// The sources the crate's binaries (test chapters, the CLI, the stand-in)
/// are built from.
pub const CRATE_SOURCES: &[&str] = &["src", "tests", "kernels", "build.rs", "Cargo.toml", "Cargo.lock", "include", "models", "tools", "ffmpeg-patches", "scripts/planted-defects-gpu.txt"];
/// The sources of this xtask.
pub const XTASK_SOURCES: &[&str] = &["xtask", "Cargo.lock"];

pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[derive(Debug, Default, PartialEq, Clone)]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub fnv64: u64,
}

#[derive(Debug, Default, PartialEq, Clone)]
pub struct Manifest {
    pub part: String,
    pub commit: String,
    pub dirty: Vec<String>,
    pub diff_fnv64: u64,
    pub built: String,
    pub files: Vec<FileEntry>,
    pub notes: Vec<String>,
}

impl Manifest {
    /// A manifest of `part` built from `sources` as they are now (git here).
    pub fn of_sources(part: &str, sources: &[&str], command: &str) -> Manifest {
        let git = |args: &[&str]| -> String {
            Command::new("git").args(args).output().ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
        };
        let mut status_args = vec!["status", "--porcelain", "--"];
        status_args.extend_from_slice(sources);
        let mut diff_args = vec!["diff", "HEAD", "--"];
        diff_args.extend_from_slice(sources);
        let diff = git(&diff_args);
        let date = Command::new("date").args(["-u", "+%Y-%m-%dT%H:%MZ"]).output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default();
        Manifest {
            part: part.to_string(),
            commit: git(&["rev-parse", "HEAD"]).trim().to_string(),
            dirty: git(&status_args).lines().map(|l| l.get(3..).unwrap_or(l).to_string()).collect(),
            diff_fnv64: if diff.is_empty() { 0 } else { fnv64(diff.as_bytes()) },
            built: format!("{date} {command}"),
            files: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "format 1\npart {}\ncommit {}", self.part, self.commit);
        for d in &self.dirty {
            let _ = writeln!(s, "dirty {d}");
        }
        let _ = writeln!(s, "diff-fnv64 {:016x}\nbuilt {}", self.diff_fnv64, self.built);
        for f in &self.files {
            let _ = writeln!(s, "file {:016x} {} {}", f.fnv64, f.bytes, f.path);
        }
        for n in &self.notes {
            let _ = writeln!(s, "note {n}");
        }
        s
    }

    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        let mut format = None;
        for (n, line) in text.lines().enumerate() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            let bad = || format!("MANIFEST line {}: {line:?}", n + 1);
            match key {
                "format" => format = Some(value.to_string()),
                "part" => m.part = value.to_string(),
                "commit" => m.commit = value.to_string(),
                "dirty" => m.dirty.push(value.to_string()),
                "diff-fnv64" => m.diff_fnv64 = u64::from_str_radix(value, 16).map_err(|_| bad())?,
                "built" => m.built = value.to_string(),
                "file" => {
                    let mut f = value.splitn(3, ' ');
                    let (h, b, p) = (f.next(), f.next(), f.next());
                    m.files.push(FileEntry {
                        fnv64: h.and_then(|h| u64::from_str_radix(h, 16).ok()).ok_or_else(bad)?,
                        bytes: b.and_then(|b| b.parse().ok()).ok_or_else(bad)?,
                        path: p.filter(|p| !p.is_empty()).ok_or_else(bad)?.to_string(),
                    });
                }
                "note" => m.notes.push(value.to_string()),
                "" => {}
                _ => return Err(bad()),
            }
        }
        match format.as_deref() {
            Some("1") => Ok(m),
            other => Err(format!("MANIFEST format {other:?}, this xtask reads format 1")),
        }
    }

    /// Records `path` (inside `dir`, the part's folder) as it is now.
    pub fn add_file(&mut self, dir: &Path, path: &str) -> Result<(), String> {
        let bytes = std::fs::read(dir.join(path)).map_err(|e| format!("{}: {e}", dir.join(path).display()))?;
        self.files.push(FileEntry { path: path.to_string(), bytes: bytes.len() as u64, fnv64: fnv64(&bytes) });
        Ok(())
    }

    /// Every file of the manifest present in `dir` with its size and hash.
    pub fn verify(&self, dir: &Path) -> Result<(), String> {
        for f in &self.files {
            let bytes = std::fs::read(dir.join(&f.path)).map_err(|e| format!("pack {}: {}: {e}", self.part, f.path))?;
            if bytes.len() as u64 != f.bytes || fnv64(&bytes) != f.fnv64 {
                return Err(format!("pack {}: {} is not the file packed ({} bytes, packed {})", self.part, f.path, bytes.len(), f.bytes));
            }
        }
        Ok(())
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }

    /// One line: part, commit (short), dirty files, build time.
    pub fn summary(&self) -> String {
        let short = self.commit.get(..10).unwrap_or(&self.commit);
        let dirty = if self.dirty.is_empty() { "clean".to_string() } else { format!("{} files changed (diff {:016x})", self.dirty.len(), self.diff_fnv64) };
        format!("{}: {} files, {} bytes, built from {short}, {dirty}, {}", self.part, self.files.len(), self.total_bytes(), self.built)
    }
}

/// The folder of `part` under the pack root, from the repository root.
/// The kernel compilers' environment for a pack's builds: `scripts/gpu-ci-deps
/// --env` (NVRTC from PyPI into build/gpu-deps, Debian's hiprtc) prints
/// `export VMAFX_NVRTC_LIB='…'`, set here for every cargo and FFmpeg build the
/// pack runs. build.rs then embeds the kernels built ahead, so the GPU host's
/// first frame needs no NVRTC (docs/benchmarks.md, "Start-up"); and since
/// build.rs reruns when that variable changes, a crate built before the wheel
/// was fetched is rebuilt with it. Without the compilers the pack still builds
/// and says the first run there will compile every kernel.
pub fn use_kernel_compilers(root: &Path) {
    let out = std::process::Command::new(root.join("scripts/gpu-ci-deps")).arg("--env").current_dir(root).output();
    let vars = match &out {
        Ok(o) if o.status.success() => parse_exports(&String::from_utf8_lossy(&o.stdout)),
        _ => Vec::new(),
    };
    if vars.is_empty() {
        eprintln!("pack: scripts/gpu-ci-deps found no kernel compiler: the binaries embed no kernels, and their first run compiles every kernel (seconds)");
    }
    for (name, value) in vars {
        eprintln!("pack: {name}={value} (kernels built ahead)");
        std::env::set_var(name, value);
    }
}

/// `export NAME='VALUE'` lines, as scripts/gpu-ci-deps prints them.
pub fn parse_exports(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("export ")?.split_once('='))
        .map(|(n, v)| (n.to_string(), v.trim_matches('\'').to_string()))
        .collect()
}

pub fn part_dir(root: &Path, part: &str) -> PathBuf {
    root.join(PACK_ROOT).join(part)
}

pub fn write(dir: &Path, m: &Manifest) -> Result<(), String> {
    std::fs::write(dir.join("MANIFEST"), m.render()).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The manifest of the part in `dir`, checked against its files.
pub fn open(dir: &Path) -> Result<Manifest, String> {
    let text = std::fs::read_to_string(dir.join("MANIFEST")).map_err(|e| format!("{}/MANIFEST: {e} (pack it here first: cargo xtask … pack)", dir.display()))?;
    let m = Manifest::parse(&text)?;
    m.verify(dir)?;
    Ok(m)
}

/// Copies `from` to `dir/name` without debug info (strip, when present).
pub fn copy_stripped(from: &Path, dir: &Path, name: &str) -> Result<(), String> {
    let to = dir.join(name);
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let stripped = Command::new("strip").arg("--strip-debug").arg("-o").arg(&to).arg(from).status().map(|s| s.success()).unwrap_or(false);
    if !stripped {
        std::fs::copy(from, &to).map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            part: "twins".into(),
            commit: "6d391b4aa0f1".into(),
            dirty: vec!["src/engine/workers.rs".into()],
            diff_fnv64: 0xfeed,
            built: "2026-12-03T21:30Z cargo xtask twins pack".into(),
            files: vec![FileEntry { path: "device".into(), bytes: 3, fnv64: fnv64(b"abc") }, FileEntry { path: "defects/1-device".into(), bytes: 0, fnv64: fnv64(b"") }],
            notes: vec!["defect 1 device::import | gpu import: the device-event acquire wait skipped (CUDA)".into()],
        }
    }

    #[test]
    fn gpu_ci_deps_exports_are_read() {
        let text = "export VMAFX_NVRTC_LIB='/x/build/gpu-deps/libnvrtc.so.13'\n# a note\nexport B=plain\n";
        assert_eq!(parse_exports(text), vec![("VMAFX_NVRTC_LIB".to_string(), "/x/build/gpu-deps/libnvrtc.so.13".to_string()), ("B".to_string(), "plain".to_string())]);
        assert!(parse_exports("VMAFX_NVRTC_LIB=/x\n").is_empty());
    }

    #[test]
    fn fnv64_is_the_published_function() {
        // FNV-1a 64 test vectors.
        assert_eq!(fnv64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn a_manifest_reads_back_as_written() {
        let m = sample();
        assert_eq!(Manifest::parse(&m.render()).unwrap(), m);
        assert!(m.render().starts_with("format 1\npart twins\ncommit 6d391b4aa0f1\ndirty src/engine/workers.rs\n"));
    }

    #[test]
    fn another_format_or_a_broken_line_is_refused() {
        assert!(Manifest::parse("format 2\npart twins\n").unwrap_err().contains("format"));
        assert!(Manifest::parse("format 1\nfile zz 3 device\n").unwrap_err().contains("line 2"));
        assert!(Manifest::parse("format 1\nwho knows\n").is_err());
    }

    #[test]
    fn a_changed_or_missing_file_fails_verification() {
        let dir = std::env::temp_dir().join(format!("xtask-pack-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("defects")).unwrap();
        std::fs::write(dir.join("device"), b"abc").unwrap();
        std::fs::write(dir.join("defects/1-device"), b"").unwrap();
        let m = sample();
        assert_eq!(m.verify(&dir), Ok(()));
        std::fs::write(dir.join("device"), b"abd").unwrap();
        assert!(m.verify(&dir).unwrap_err().contains("is not the file packed"));
        std::fs::remove_file(dir.join("device")).unwrap();
        assert!(m.verify(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
