//! The one comparison of CPU and GPU values: two vmafx JSON logs walked
//! token by token, every number parsed to f64 (Rust's parse rounds
//! correctly) and compared as bits, every other token as text. The values
//! of the keys named in `timing_keys` (a throughput such as "fps") are
//! skipped: they are timings, not results.

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Punct(char),
    Str(&'a str),
    Num(&'a str),
    Word(&'a str),
}

fn tokens(text: &str) -> Result<Vec<Token<'_>>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'}' | b'[' | b']' | b':' | b',' => {
                out.push(Token::Punct(c as char));
                i += 1;
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if j >= b.len() {
                    return Err(format!("a string that does not end, at byte {i}"));
                }
                out.push(Token::Str(&text[start..j]));
                i = j + 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                out.push(Token::Num(&text[start..i]));
            }
            b'a'..=b'z' => {
                let start = i;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                out.push(Token::Word(&text[start..i]));
            }
            _ => return Err(format!("unexpected byte {:?} at {i}", c as char)),
        }
    }
    Ok(out)
}

/// What two logs compared to: how many numbers were equal as bits, and the
/// first differences (path-less: the key before each and both texts).
#[derive(Debug, Default, PartialEq)]
pub struct Comparison {
    pub equal_numbers: usize,
    pub differences: Vec<String>,
}

impl Comparison {
    pub fn equal(&self) -> bool {
        self.differences.is_empty() && self.equal_numbers > 0
    }
}

/// Compares `cpu` and `gpu` (two JSON logs of the same input); keeps the
/// first 20 differences.
pub fn compare_logs(cpu: &str, gpu: &str, timing_keys: &[&str]) -> Result<Comparison, String> {
    let a = tokens(cpu).map_err(|e| format!("the CPU log: {e}"))?;
    let b = tokens(gpu).map_err(|e| format!("the GPU log: {e}"))?;
    let mut result = Comparison::default();
    let mut differ = |what: String| {
        if result.differences.len() < 20 {
            result.differences.push(what);
        }
    };
    let (mut i, mut j) = (0, 0);
    let mut key = "";
    while i < a.len() && j < b.len() {
        // After `"key":`, a timing's value is skipped on both sides.
        if let (Token::Str(k), Some(Token::Punct(':'))) = (&a[i], a.get(i + 1)) {
            key = k;
            if timing_keys.contains(k) && b.get(j) == Some(&a[i]) {
                i += 3;
                j += 3;
                continue;
            }
        }
        match (&a[i], &b[j]) {
            (Token::Num(x), Token::Num(y)) => {
                match (x.parse::<f64>(), y.parse::<f64>()) {
                    (Ok(p), Ok(q)) if p.to_bits() == q.to_bits() => result.equal_numbers += 1,
                    (Ok(_), Ok(_)) => differ(format!("\"{key}\": cpu {x}, gpu {y}")),
                    _ => return Err(format!("not a number: {x} or {y}")),
                }
            }
            (x, y) if x == y => {}
            (x, y) => {
                differ(format!("the logs part after \"{key}\": cpu {x:?}, gpu {y:?}"));
                return Ok(result);
            }
        }
        i += 1;
        j += 1;
    }
    if i < a.len() || j < b.len() {
        differ(format!("one log ends first ({} and {} tokens)", a.len(), b.len()));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU: &str = r#"{"version": "vmafx 0.1.0", "fps": 12.5, "frames": [{"frameNum": 0, "metrics": {"psnr_y": 34.164839, "vmaf": 76.66890519623612}}]}"#;

    #[test]
    fn equal_logs_are_equal_whatever_their_timings() {
        let gpu = CPU.replace("12.5", "913.0");
        let c = compare_logs(CPU, &gpu, &["fps"]).unwrap();
        assert_eq!(c, Comparison { equal_numbers: 3, differences: vec![] });
        assert!(c.equal());
    }

    #[test]
    fn one_unit_in_the_last_place_is_a_difference() {
        // 76.66890519623612 and the next double up.
        let next = f64::from_bits(76.66890519623612f64.to_bits() + 1);
        let gpu = CPU.replace("76.66890519623612", &format!("{next:?}"));
        let c = compare_logs(CPU, &gpu, &["fps"]).unwrap();
        assert_eq!(c.differences, vec![format!("\"vmaf\": cpu 76.66890519623612, gpu {next:?}")]);
        assert!(!c.equal());
    }

    #[test]
    fn the_same_double_written_two_ways_is_equal() {
        let gpu = CPU.replace("34.164839", "3.4164839e1");
        assert!(compare_logs(CPU, &gpu, &["fps"]).unwrap().equal());
    }

    #[test]
    fn a_timing_key_not_named_is_compared() {
        let gpu = CPU.replace("12.5", "913.0");
        assert_eq!(compare_logs(CPU, &gpu, &[]).unwrap().differences.len(), 1);
    }

    #[test]
    fn a_missing_frame_or_key_is_a_difference() {
        let gpu = CPU.replace(r#""psnr_y": 34.164839, "#, "");
        assert!(!compare_logs(CPU, &gpu, &["fps"]).unwrap().equal());
        assert!(!compare_logs(CPU, "{}", &["fps"]).unwrap().equal());
        assert!(compare_logs(CPU, "{\"a", &[]).is_err());
    }
}
