//! Logs compared with libvmaf's own: byte for byte, once the lines that
//! differ by design are masked (the version line of the XML and JSON logs,
//! and the fps line, which vmafx writes only when it knows the rate).

/// `text` with the version and fps lines masked; every other line, and the
/// line numbers, kept.
pub fn masked(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("<VMAF version=\"") {
                "<VMAF version=*>"
            } else if l.starts_with("  <fyi fps=\"") {
                "  <fyi fps=*>"
            } else if l.starts_with("  \"version\": ") {
                "  \"version\": *"
            } else if l.starts_with("  \"fps\": ") {
                "  \"fps\": *"
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Panics unless `ours` and libvmaf's `theirs` are the same log once
/// masked, naming the first line that differs (or the first line one of
/// them lacks).
pub fn assert_same_log(label: &str, ours: &str, theirs: &str) {
    let (a, b) = (masked(ours), masked(theirs));
    if a != b {
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count().min(b.lines().count()));
        panic!(
            "{label}: logs differ at line {}:\n  ours:    {:?}\n  libvmaf: {:?}",
            line + 1,
            a.lines().nth(line),
            b.lines().nth(line)
        );
    }
}

/// Panics unless each of vmafx's four logs of `input` (JSON, XML, CSV, SUB)
/// is libvmaf's (`json`, then `others` in that order) once masked.
pub fn assert_every_log_same(label: &str, input: &vmafx::internals::score::log::LogInput<'_>, json: &str, others: &[String; 3]) {
    use vmafx::LogFormat;
    use vmafx::internals::score::log::render_log;
    let logs = [LogFormat::Json, LogFormat::Xml, LogFormat::Csv, LogFormat::Sub];
    let texts = std::iter::once(json).chain(others.iter().map(String::as_str));
    for (format, text) in logs.into_iter().zip(texts) {
        assert_same_log(&format!("{label} {format:?}"), &render_log(format, input), text);
    }
}
