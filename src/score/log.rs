//! Logs in libvmaf's formats (`output.c`): xml, json, csv, sub.
//! Placeholder API: being written.
use crate::score::FeatureCollector;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Xml,
    Json,
    Csv,
    Sub,
}

impl LogFormat {
    /// "xml", "json", "csv", "sub" (libvmaf's and FFmpeg's `log_fmt` names).
    pub fn parse(s: &str) -> Option<LogFormat> {
        match s {
            "xml" => Some(LogFormat::Xml),
            "json" => Some(LogFormat::Json),
            "csv" => Some(LogFormat::Csv),
            "sub" => Some(LogFormat::Sub),
            _ => None,
        }
    }
}

/// Everything a log needs besides the format.
pub struct LogInput<'a> {
    pub collector: &'a FeatureCollector,
    /// Frames read (libvmaf's `pic_cnt`).
    pub frames: u32,
    pub subsample: u32,
    pub width: usize,
    pub height: usize,
    /// Frames per second of the run, if measured.
    pub fps: Option<f64>,
}

pub fn write_log(_w: &mut dyn std::io::Write, _format: LogFormat, _input: &LogInput<'_>) -> std::io::Result<()> {
    Err(std::io::Error::other("log writer not yet written"))
}
