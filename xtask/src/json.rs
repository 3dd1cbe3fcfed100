//! A small JSON reader for the benchmark's `RESULT {json}` lines (the
//! xtask has no dependencies): objects, arrays, strings with the common
//! escapes, numbers as f64 (Rust's parse rounds correctly, so a score
//! printed with 17 digits reads back as the same bits), true/false/null.

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn parse(text: &str) -> Result<Json, String> {
        let mut p = Parser { b: text.as_bytes(), i: 0 };
        let v = p.value()?;
        p.space();
        if p.i != p.b.len() {
            return Err(format!("JSON: text after the value at byte {}", p.i));
        }
        Ok(v)
    }

    /// The member `key` of an object (the first one of that name).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn num(&self, key: &str) -> Option<f64> {
        match self.get(key) {
            Some(Json::Num(n)) => Some(*n),
            _ => None,
        }
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Json::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// The numbers of the array `key` (null elements left out).
    pub fn nums(&self, key: &str) -> Option<Vec<f64>> {
        match self.get(key) {
            Some(Json::Arr(v)) => Some(v.iter().filter_map(|x| if let Json::Num(n) = x { Some(*n) } else { None }).collect()),
            _ => None,
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The value written back as JSON text (numbers in Rust's shortest
    /// round-trip form).
    pub fn render(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Num(n) if n.is_finite() => format!("{n:?}"),
            Json::Num(_) => "null".into(),
            Json::Str(s) => quote(s),
            Json::Arr(v) => format!("[{}]", v.iter().map(Json::render).collect::<Vec<_>>().join(", ")),
            Json::Obj(m) => format!("{{{}}}", m.iter().map(|(k, v)| format!("{}: {}", quote(k), v.render())).collect::<Vec<_>>().join(", ")),
        }
    }
}

pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("JSON: {what} at byte {}", self.i))
    }

    fn eat(&mut self, c: u8) -> bool {
        self.space();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        match self.b.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Obj(members));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return self.err("':' expected");
                    }
                    members.push((key, self.value()?));
                    if self.eat(b'}') {
                        return Ok(Json::Obj(members));
                    }
                    if !self.eat(b',') {
                        return self.err("',' or '}' expected");
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(b']') {
                        return Ok(Json::Arr(items));
                    }
                    if !self.eat(b',') {
                        return self.err("',' or ']' expected");
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                while self.i < self.b.len() && matches!(self.b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
                text.parse().map(Json::Num).or_else(|_| self.err("a number"))
            }
            _ => {
                for (word, v) in [("true", Json::Bool(true)), ("false", Json::Bool(false)), ("null", Json::Null)] {
                    if self.b[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(v);
                    }
                }
                self.err("a value expected")
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.b.get(self.i) != Some(&b'"') {
            return self.err("'\"' expected");
        }
        self.i += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.b.get(self.i) {
            self.i += 1;
            match c {
                b'"' => return String::from_utf8(out).or_else(|_| self.err("UTF-8")),
                b'\\' => {
                    let e = self.b.get(self.i).copied();
                    self.i += 1;
                    match e {
                        Some(b'n') => out.push(b'\n'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b'u') => {
                            let hex = self.b.get(self.i..self.i + 4).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u32::from_str_radix(h, 16).ok());
                            let ch = hex.and_then(char::from_u32).unwrap_or('\u{fffd}');
                            self.i += 4;
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        Some(c) => out.push(c),
                        None => return self.err("an escape"),
                    }
                }
                c => out.push(c),
            }
        }
        self.err("a string that does not end")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_reads_with_its_numbers_as_bits() {
        let v = Json::parse(r#"{"lane": "vmafx-cuda-t4", "fps": 1234.5, "vmaf_frames": [76.66820409650113, null, 1e-3], "check": null, "ok": true, "e": "a \"q\" \u00e9"}"#).unwrap();
        assert_eq!(v.str("lane"), Some("vmafx-cuda-t4"));
        assert_eq!(v.num("fps"), Some(1234.5));
        assert_eq!(v.nums("vmaf_frames").unwrap()[0].to_bits(), 76.66820409650113f64.to_bits());
        assert_eq!(v.nums("vmaf_frames").unwrap().len(), 2);
        assert_eq!(v.get("check"), Some(&Json::Null));
        assert_eq!(v.str("e"), Some("a \"q\" é"));
        assert_eq!(Json::parse(&v.render()).unwrap(), v);
    }

    #[test]
    fn broken_text_is_refused() {
        assert!(Json::parse("{\"a\": }").is_err());
        assert!(Json::parse("{\"a\": 1").is_err());
        assert!(Json::parse("[1 2]").is_err());
        assert!(Json::parse("{} x").is_err());
    }
}
