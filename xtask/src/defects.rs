//! The GPU planted defects (scripts/planted-defects-gpu.txt): each built
//! here into its own test binary, once per defect, for the GPU host to run
//! (a defect is caught when its binary fails).
//!
//! Line format (docs/testing.md): `file | chapter::module | perl
//! substitution | what it breaks`; `#` comments and blank lines skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, PartialEq, Clone)]
pub struct Defect {
    /// 1-based, in the file's order (the number `--defects` takes).
    pub number: usize,
    pub file: String,
    pub chapter: String,
    /// The libtest filter (`module::`), empty for a whole chapter.
    pub filter: String,
    pub substitution: String,
    pub what: String,
}

pub fn parse(text: &str) -> Result<Vec<Defect>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = || format!("planted-defects-gpu.txt line {}: not `file | target | substitution | what`", n + 1);
        let (file, rest) = line.split_once('|').ok_or_else(bad)?;
        let (target, rest) = rest.split_once('|').ok_or_else(bad)?;
        let (subst, what) = rest.rsplit_once('|').ok_or_else(bad)?;
        let target = target.trim();
        let (chapter, module) = target.split_once("::").unwrap_or((target, ""));
        out.push(Defect {
            number: out.len() + 1,
            file: file.trim().into(),
            chapter: chapter.into(),
            filter: if module.is_empty() { String::new() } else { format!("{module}::") },
            substitution: subst.trim().into(),
            what: what.trim().into(),
        });
    }
    Ok(out)
}

/// `all`, `none` or numbers (`1,4,9`) of the file's defects.
pub fn select(all: Vec<Defect>, which: &str) -> Result<Vec<Defect>, String> {
    match which {
        "all" => Ok(all),
        "none" => Ok(Vec::new()),
        list => {
            let mut picked = Vec::new();
            for n in list.split(',') {
                let n: usize = n.trim().parse().map_err(|_| format!("--defects {list}: all, none or numbers such as 1,4"))?;
                picked.push(all.get(n.wrapping_sub(1)).cloned().ok_or_else(|| format!("--defects: no defect {n} (there are {})", all.len()))?);
            }
            Ok(picked)
        }
    }
}

/// The test binary cargo built for `chapter`, from `--message-format=json`.
pub fn executable_of(messages: &str, chapter: &str) -> Option<PathBuf> {
    let needle = format!("/deps/{chapter}-");
    messages
        .lines()
        .filter_map(|l| l.split_once("\"executable\":\"").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once('"').map(|(path, _)| path))
        .rfind(|p| p.contains(&needle))
        .map(PathBuf::from)
}

/// Builds `chapter`'s test binary (test profile) and says where it is.
pub fn build_chapter(chapter: &str) -> Result<PathBuf, String> {
    let out = Command::new("cargo").args(["test", "--no-run", "--message-format=json", "--test", chapter]).output().map_err(|e| format!("cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo test --no-run --test {chapter} failed:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    executable_of(&String::from_utf8_lossy(&out.stdout), chapter).ok_or_else(|| format!("no executable for {chapter} in cargo's messages"))
}

/// Puts the file back as it was when dropped (a failed build, a panic).
struct Restore {
    path: PathBuf,
    text: Vec<u8>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.text);
    }
}

/// Applies `d`, builds its chapter, and copies the binary to `dest`; the
/// source is restored whatever happens.
pub fn build_defect(root: &Path, d: &Defect, dest: &Path) -> Result<(), String> {
    let path = root.join(&d.file);
    let original = std::fs::read(&path).map_err(|e| format!("{}: {e}", d.file))?;
    let restore = Restore { path: path.clone(), text: original.clone() };
    let ok = Command::new("perl").args(["-0pi", "-e", &d.substitution]).arg(&path).status().map_err(|e| format!("perl: {e}"))?.success();
    if !ok || std::fs::read(&path).map_err(|e| e.to_string())? == original {
        return Err(format!("STALE defect {} ({}): the substitution no longer matches {}", d.number, d.what, d.file));
    }
    let exe = build_chapter(&d.chapter).map_err(|e| format!("defect {} ({}) does not build: {e}", d.number, d.what))?;
    drop(restore);
    crate::pack::copy_stripped(&exe, dest.parent().unwrap(), &dest.file_name().unwrap().to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_defect_list_parses_with_a_bar_inside_a_substitution() {
        let text = "# comment\n\nsrc/a.rs | device::import | s/x|y/z/ | what it breaks\nkernels/b.cu | device | s/a/b/ | whole chapter\n";
        let d = parse(text).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].number, d[0].chapter.as_str(), d[0].filter.as_str(), d[0].substitution.as_str(), d[0].what.as_str()), (1, "device", "import::", "s/x|y/z/", "what it breaks"));
        assert_eq!((d[1].chapter.as_str(), d[1].filter.as_str()), ("device", ""));
    }

    #[test]
    fn the_project_list_parses_and_names_device_modules() {
        let d = parse(include_str!("../../scripts/planted-defects-gpu.txt")).unwrap();
        assert!(d.len() >= 10, "{}", d.len());
        assert!(d.iter().all(|d| d.chapter == "device" && d.filter.ends_with("::")));
    }

    #[test]
    fn a_selection_by_number() {
        let d = parse("a | device::x | s/a/b/ | one\nb | device::y | s/a/b/ | two\n").unwrap();
        assert_eq!(select(d.clone(), "2").unwrap()[0].what, "two");
        assert_eq!(select(d.clone(), "none").unwrap().len(), 0);
        assert_eq!(select(d.clone(), "all").unwrap().len(), 2);
        assert!(select(d.clone(), "3").unwrap_err().contains("no defect 3"));
        assert!(select(d, "x").is_err());
    }

    #[test]
    fn the_chapter_binary_is_found_in_cargos_messages() {
        let msgs = "{\"reason\":\"compiler-artifact\",\"executable\":null}\n{\"reason\":\"compiler-artifact\",\"executable\":\"/w/target/debug/deps/device-56562f797c56f78c\",\"fresh\":true}\n";
        assert_eq!(executable_of(msgs, "device"), Some(PathBuf::from("/w/target/debug/deps/device-56562f797c56f78c")));
        assert_eq!(executable_of(msgs, "golden"), None);
    }
}
