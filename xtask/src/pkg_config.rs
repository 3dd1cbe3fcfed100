//! A stand-in for pkg-config, enough for FFmpeg's configure in
//! `xtask gpu-ffmpeg-libvmaf run` on a GPU host without pkg-config: the xtask
//! answers as pkg-config when called by that name (a link named
//! `pkg-config`) or as `xtask pkg-config …`. Reads NAME.pc from
//! $PKG_CONFIG_PATH and answers --version, --exists (with constraints such
//! as `ffnvcodec >= 12.0.16.1 ffnvcodec < 12.1`), --modversion, --cflags,
//! --cflags-only-I, --libs and --variable=NAME; --static and --print-errors
//! are accepted. Requires is not followed (the .pc files written there have
//! none).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::PathBuf;

/// A .pc file: its variables (`name=value`) and fields (`Name: value`),
/// `${var}` substituted from the variables defined above.
#[derive(Debug, Default, PartialEq)]
pub struct PcFile {
    pub variables: HashMap<String, String>,
    pub fields: HashMap<String, String>,
}

fn substitute(v: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        match rest[i + 2..].find('}') {
            Some(j) => {
                out.push_str(vars.get(&rest[i + 2..i + 2 + j]).map(String::as_str).unwrap_or(""));
                rest = &rest[i + 3 + j..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_key(k: &str) -> bool {
    !k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

pub fn parse_pc(text: &str) -> PcFile {
    let mut pc = PcFile::default();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        // A variable when '=' comes before any ':' (`prefix=/usr`).
        if let Some((k, v)) = line.split_once('=') {
            if !k.contains(':') && is_key(k.trim()) {
                let v = substitute(v.trim(), &pc.variables);
                pc.variables.insert(k.trim().to_string(), v);
                continue;
            }
        }
        if let Some((k, v)) = line.split_once(':') {
            if is_key(k.trim()) {
                let v = substitute(v.trim(), &pc.variables);
                pc.fields.insert(k.trim().to_string(), v);
            }
        }
    }
    pc
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Num(u64),
    Text(String),
}

fn version_key(v: &str) -> Vec<Part> {
    v.split(['.', '-']).map(|p| p.parse().map(Part::Num).unwrap_or_else(|_| Part::Text(p.to_string()))).collect()
}

pub fn satisfied(have: &str, op: &str, want: &str) -> bool {
    let o = version_key(have).cmp(&version_key(want));
    match op {
        "<" => o == Ordering::Less,
        "<=" => o != Ordering::Greater,
        ">" => o == Ordering::Greater,
        ">=" => o != Ordering::Less,
        "=" | "==" => o == Ordering::Equal,
        "!=" => o != Ordering::Equal,
        _ => false,
    }
}

const OPS: &[&str] = &["<", "<=", ">", ">=", "=", "==", "!="];

/// Runs pkg-config on `args` with `search` ($PKG_CONFIG_PATH); returns the
/// exit status, the standard output and the error output.
pub fn run(args: &[String], search: &str) -> (i32, String, String) {
    let opts: Vec<&str> = args.iter().map(String::as_str).filter(|a| a.starts_with("--")).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).filter(|a| !a.starts_with("--")).collect();
    if opts.contains(&"--version") {
        return (0, "0.29.2\n".into(), String::new());
    }
    let mut err = String::new();
    let mut loaded = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let name = words[i];
        let constraint = (i + 2 < words.len() && OPS.contains(&words[i + 1])).then(|| (words[i + 1], words[i + 2]));
        i += if constraint.is_some() { 3 } else { 1 };
        let found = search.split(':').filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join(format!("{name}.pc"))).find(|p| p.is_file());
        let Some(path) = found else {
            if opts.contains(&"--print-errors") || !opts.contains(&"--exists") {
                err.push_str(&format!("Package {name} was not found in the pkg-config search path.\n"));
            }
            return (1, String::new(), err);
        };
        let pc = parse_pc(&std::fs::read_to_string(&path).unwrap_or_default());
        if let Some((op, want)) = constraint {
            let have = pc.fields.get("Version").map(String::as_str).unwrap_or("0");
            if !satisfied(have, op, want) {
                if opts.contains(&"--print-errors") {
                    err.push_str(&format!("Requested '{name} {op} {want}' but version of {name} is {have}\n"));
                }
                return (1, String::new(), err);
            }
        }
        loaded.push(pc);
    }
    let mut out: Vec<String> = Vec::new();
    for pc in &loaded {
        let field = |k: &str| pc.fields.get(k).cloned().unwrap_or_default();
        for o in &opts {
            if let Some(name) = o.strip_prefix("--variable=") {
                out.push(pc.variables.get(name).cloned().unwrap_or_default());
            } else if *o == "--modversion" {
                out.push(field("Version"));
            } else if *o == "--cflags" {
                out.push(field("Cflags"));
            } else if *o == "--cflags-only-I" {
                out.push(field("Cflags").split_whitespace().filter(|f| f.starts_with("-I")).collect::<Vec<_>>().join(" "));
            } else if *o == "--libs" {
                out.push(format!("{} {}", field("Libs"), field("Libs.private")));
            }
        }
    }
    let text = if out.is_empty() { String::new() } else { out.iter().filter(|x| !x.is_empty()).cloned().collect::<Vec<_>>().join(" ").trim().to_string() + "\n" };
    (0, text, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBVMAF_PC: &str = "prefix=/w/vmaf\nlibdir=${prefix}/lib # the static library\nincludedir=${prefix}/include\n\nName: libvmaf\nDescription: VMAF\nVersion: 3.2.0\nLibs: -L${libdir} -lvmaf\nLibs.private: -lcudart_static -lstdc++ -lm\nCflags: -I${includedir}/libvmaf -DVMAF_CUDA\n";
    const FFNV_PC: &str = "prefix=/w/nv\nincludedir=${prefix}/include\nName: ffnvcodec\nVersion: 12.0.16.1\nCflags: -I${includedir}\n";

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-pc-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("libvmaf.pc"), LIBVMAF_PC).unwrap();
        std::fs::write(d.join("ffnvcodec.pc"), FFNV_PC).unwrap();
        d
    }

    fn ask(args: &str) -> (i32, String, String) {
        let d = dir();
        let a: Vec<String> = args.split(' ').map(str::to_string).collect();
        run(&a, &format!("/nonexistent:{}", d.display()))
    }

    #[test]
    fn variables_and_fields_are_substituted_in_order() {
        let pc = parse_pc(LIBVMAF_PC);
        assert_eq!(pc.variables["libdir"], "/w/vmaf/lib");
        assert_eq!(pc.fields["Libs"], "-L/w/vmaf/lib -lvmaf");
        assert_eq!(pc.fields["Version"], "3.2.0");
    }

    #[test]
    fn configure_queries_answer_as_pkg_config_does() {
        assert_eq!(ask("--version"), (0, "0.29.2\n".into(), String::new()));
        assert_eq!(ask("--exists --print-errors ffnvcodec >= 12.0.16.1 ffnvcodec < 12.1").0, 0);
        assert_eq!(ask("--exists --print-errors ffnvcodec >= 12.1").2, "Requested 'ffnvcodec >= 12.1' but version of ffnvcodec is 12.0.16.1\n");
        assert_eq!(ask("--modversion libvmaf").1, "3.2.0\n");
        assert_eq!(ask("--cflags libvmaf").1, "-I/w/vmaf/include/libvmaf -DVMAF_CUDA\n");
        assert_eq!(ask("--cflags-only-I libvmaf").1, "-I/w/vmaf/include/libvmaf\n");
        assert_eq!(ask("--libs --static libvmaf").1, "-L/w/vmaf/lib -lvmaf -lcudart_static -lstdc++ -lm\n");
        assert_eq!(ask("--variable=includedir ffnvcodec").1, "/w/nv/include\n");
        assert_eq!(ask("--libs ffnvcodec").1, "\n");
    }

    #[test]
    fn a_missing_package_fails_quietly_for_exists() {
        assert_eq!(ask("--exists nosuch"), (1, String::new(), String::new()));
        assert_eq!(ask("--cflags nosuch").2, "Package nosuch was not found in the pkg-config search path.\n");
    }

    #[test]
    fn versions_compare_part_by_part_as_numbers() {
        assert!(satisfied("12.0.16.1", ">=", "12.0.16.1"));
        assert!(satisfied("12.0.16.1", "<", "12.1"));
        assert!(satisfied("3.10.0", ">", "3.9.9"));
        assert!(satisfied("3.2", "<", "3.2.0"));
        assert!(!satisfied("3.2.0", "!=", "3.2.0"));
    }
}
