//! Any video FFmpeg can decode (.mp4, .mkv, .webm, ...; H.264, HEVC, AV1,
//! ...) through the system's libavformat and libavcodec (feature `decode`).
//!
//! The first video stream is decoded in presentation order, as ffmpeg's
//! `-fps_mode passthrough` writes it: no frame is dropped, duplicated or
//! converted. Each decoded `AVFrame` stays referenced and is handed to the
//! core in place ([`HostPicture`], the filter's wrapper: planar formats
//! read where the decoder wrote them); pixel format and bit depth are the
//! stream's. A format the core does not read (RGB, 4:1:1, big-endian...) is
//! refused by name rather than converted, since a conversion would change
//! the values scored. A size or format change mid-stream is an error that
//! names the frame.
//!
//! All FFmpeg calls are in this file; each owning handle frees what it
//! holds on drop.

use std::ffi::{c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Arc;

use ffmpeg_sys_next as ff;

use super::{display, FrameReader};
use crate::avfilter::frame::{FrameHandle, FrameMemory, HostFormat, HostPicture, RawPlanes};
use crate::picture::PictureSource;
use crate::picture::{OwnedPicture, PixelFormat};
use crate::{Error, Result};

/// FFmpeg's message for an error code.
fn av_error(code: i32) -> String {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: av_strerror writes at most buf.len() bytes, NUL-terminated.
    unsafe {
        ff::av_strerror(code, buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

/// The FFmpeg name of a pixel format ("?" if unknown).
fn pix_fmt_name(format: i32) -> String {
    // SAFETY: av_get_pix_fmt_name accepts any value and returns a static
    // string or NULL. The transmute target is a C enum of int width; any
    // value is only read back as an int by FFmpeg.
    unsafe {
        let name = ff::av_get_pix_fmt_name(std::mem::transmute::<i32, ff::AVPixelFormat>(format));
        if name.is_null() {
            "?".into()
        } else {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }
}

/// The core's view of a decoder's pixel format: full-range ("yuvj") forms
/// store the same samples as their limited-range twins.
fn host_format(name: &str, path: &Path) -> Result<&'static HostFormat> {
    let name = match name {
        "yuvj420p" => "yuv420p",
        "yuvj422p" => "yuv422p",
        "yuvj444p" => "yuv444p",
        other => other,
    };
    HostFormat::by_name(name).map_err(|e| {
        Error::input(
            path,
            format!("{e}; convert it first (ffmpeg -i IN -pix_fmt yuv420p OUT.y4m), knowing that conversion changes the values scored"),
        )
    })
}

/// An open input file: owns its `AVFormatContext`.
struct Demuxer(*mut ff::AVFormatContext);

impl Drop for Demuxer {
    fn drop(&mut self) {
        // SAFETY: opened by avformat_open_input, closed once here (it sets
        // the pointer to NULL).
        unsafe { ff::avformat_close_input(&mut self.0) }
    }
}

/// A decoder: owns its `AVCodecContext`.
struct Decoder(*mut ff::AVCodecContext);

impl Drop for Decoder {
    fn drop(&mut self) {
        // SAFETY: allocated by avcodec_alloc_context3, freed once here.
        unsafe { ff::avcodec_free_context(&mut self.0) }
    }
}

/// A packet: owns its `AVPacket` (and the reference it holds).
struct Packet(*mut ff::AVPacket);

impl Drop for Packet {
    fn drop(&mut self) {
        // SAFETY: allocated by av_packet_alloc, freed once here.
        unsafe { ff::av_packet_free(&mut self.0) }
    }
}

/// Releases a decoded frame the engine held ([`FrameHandle`]'s callback).
unsafe extern "C" fn free_frame(frame: *mut c_void) {
    let mut frame = frame as *mut ff::AVFrame;
    // SAFETY: the handle owns this frame (an av_frame_alloc'd reference),
    // released exactly once here; av_frame_free is thread-safe on a
    // reference-counted frame.
    unsafe { ff::av_frame_free(&mut frame) }
}

/// A decoded stream read frame by frame.
pub struct DecodeReader {
    path: PathBuf,
    demuxer: Demuxer,
    decoder: Decoder,
    packet: Packet,
    stream: i32,
    width: usize,
    height: usize,
    host: &'static HostFormat,
    format: PixelFormat,
    frames: u32,
    /// The demuxer is exhausted and the decoder has been told so.
    draining: bool,
    /// The decoder has returned its last frame.
    ended: bool,
    /// A frame decoded ahead by a seek ([`DecodeReader::seek_to_frame`]):
    /// the next one to hand out.
    pending: Option<FrameHandle>,
}

// SAFETY: the reader owns its FFmpeg contexts and uses them from one thread
// at a time (&mut self); FFmpeg's contexts may move between threads.
unsafe impl Send for DecodeReader {}

impl DecodeReader {
    /// Opens `path` and its best video stream's decoder.
    pub fn open(path: &Path) -> Result<Self> {
        let shown = display(path);
        let bad = |what: String| Error::input(&shown, what);
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| bad("path holds a NUL byte".into()))?;
        let mut fmt: *mut ff::AVFormatContext = ptr::null_mut();
        // SAFETY: fmt is NULL, so avformat_open_input allocates it; on
        // failure it frees it and leaves NULL.
        let rc = unsafe { ff::avformat_open_input(&mut fmt, c_path.as_ptr(), ptr::null(), ptr::null_mut()) };
        if rc < 0 {
            return Err(bad(format!("FFmpeg cannot open it: {}", av_error(rc))));
        }
        let demuxer = Demuxer(fmt);
        // SAFETY: demuxer.0 is an open input.
        let rc = unsafe { ff::avformat_find_stream_info(demuxer.0, ptr::null_mut()) };
        if rc < 0 {
            return Err(bad(format!("FFmpeg cannot read its streams: {}", av_error(rc))));
        }
        let mut codec: *const ff::AVCodec = ptr::null();
        // SAFETY: demuxer.0 is open; codec receives a static decoder.
        let stream = unsafe {
            ff::av_find_best_stream(demuxer.0, ff::AVMediaType::AVMEDIA_TYPE_VIDEO, -1, -1, &mut codec, 0)
        };
        if stream < 0 {
            return Err(bad(if stream == ff::AVERROR_DECODER_NOT_FOUND {
                "FFmpeg has no decoder for its video stream".into()
            } else {
                "it has no video stream".into()
            }));
        }
        // SAFETY: stream indexes (*demuxer.0).streams, which has nb_streams
        // entries, each with codecpar.
        let par = unsafe { (**(*demuxer.0).streams.add(stream as usize)).codecpar };
        // SAFETY: codec is the stream's decoder found above.
        let decoder = Decoder(unsafe { ff::avcodec_alloc_context3(codec) });
        if decoder.0.is_null() {
            return Err(Error::Internal("avcodec_alloc_context3 failed".into()));
        }
        // SAFETY: both contexts are valid; thread_count 0 is "auto" (frame
        // threads change timing, never the samples).
        let rc = unsafe {
            let rc = ff::avcodec_parameters_to_context(decoder.0, par);
            (*decoder.0).thread_count = 0;
            if rc < 0 {
                rc
            } else {
                ff::avcodec_open2(decoder.0, codec, ptr::null_mut())
            }
        };
        if rc < 0 {
            return Err(bad(format!("FFmpeg cannot open its decoder: {}", av_error(rc))));
        }
        // SAFETY: par is the stream's parameters, read only.
        let (width, height, pix_fmt) = unsafe { ((*par).width, (*par).height, (*par).format) };
        if width <= 0 || height <= 0 {
            return Err(bad(format!("its video stream has no size ({width}x{height})")));
        }
        let host = host_format(&pix_fmt_name(pix_fmt), &shown)?;
        // SAFETY: plain allocation, NULL on failure.
        let packet = Packet(unsafe { ff::av_packet_alloc() });
        if packet.0.is_null() {
            return Err(Error::Internal("av_packet_alloc failed".into()));
        }
        Ok(DecodeReader {
            path: shown,
            demuxer,
            decoder,
            packet,
            stream,
            width: width as usize,
            height: height as usize,
            host,
            format: host.core_format(true),
            frames: 0,
            draining: false,
            ended: false,
            pending: None,
        })
    }

    /// The next decoded frame, still referenced, or `None` at the end.
    fn next_frame(&mut self) -> Result<Option<FrameHandle>> {
        if let Some(frame) = self.pending.take() {
            return Ok(Some(frame));
        }
        if self.ended {
            return Ok(None);
        }
        // SAFETY: plain allocation; the handle owns and frees it.
        let raw = unsafe { ff::av_frame_alloc() };
        if raw.is_null() {
            return Err(Error::Internal("av_frame_alloc failed".into()));
        }
        // SAFETY: raw is a fresh frame, freed by free_frame exactly once.
        let frame = unsafe { FrameHandle::new(raw as *mut c_void, free_frame) };
        loop {
            // SAFETY: the decoder is open; raw is a frame we own.
            let rc = unsafe { ff::avcodec_receive_frame(self.decoder.0, raw) };
            if rc >= 0 {
                return Ok(Some(frame));
            }
            if rc == ff::AVERROR_EOF {
                self.ended = true;
                return Ok(None);
            }
            if rc != ff::AVERROR(nix::libc::EAGAIN) {
                return Err(self.error(format!("decoding frame {}: {}", self.frames, av_error(rc))));
            }
            self.send_next_packet()?;
        }
    }

    /// Feeds the decoder the next packet of our stream, or tells it the
    /// input ended.
    fn send_next_packet(&mut self) -> Result<()> {
        if self.draining {
            return Err(Error::Internal("decoder wants input after its end".into()));
        }
        loop {
            // SAFETY: demuxer open, packet ours; the packet's previous
            // reference was released by av_packet_unref below.
            let rc = unsafe { ff::av_read_frame(self.demuxer.0, self.packet.0) };
            if rc == ff::AVERROR_EOF {
                self.draining = true;
                // SAFETY: a NULL packet starts draining.
                let rc = unsafe { ff::avcodec_send_packet(self.decoder.0, ptr::null()) };
                return if rc < 0 && rc != ff::AVERROR_EOF {
                    Err(self.error(format!("draining the decoder: {}", av_error(rc))))
                } else {
                    Ok(())
                };
            }
            if rc < 0 {
                return Err(self.error(format!("reading after frame {}: {}", self.frames, av_error(rc))));
            }
            // SAFETY: av_read_frame filled the packet.
            let ours = unsafe { (*self.packet.0).stream_index } == self.stream;
            let rc = if ours {
                // SAFETY: the decoder copies or references the packet's data.
                unsafe { ff::avcodec_send_packet(self.decoder.0, self.packet.0) }
            } else {
                0
            };
            // SAFETY: releases the packet's reference; the packet is reusable.
            unsafe { ff::av_packet_unref(self.packet.0) };
            if rc < 0 {
                return Err(self.error(format!("decoding after frame {}: {}", self.frames, av_error(rc))));
            }
            if ours {
                return Ok(());
            }
        }
    }

    fn error(&self, what: String) -> Error {
        Error::input(&self.path, what)
    }

    /// The next frame as a picture the engine reads in place.
    pub fn read_picture(&mut self) -> Result<Option<HostPicture>> {
        let Some(frame) = self.next_frame()? else {
            return Ok(None);
        };
        let raw = frame.as_ptr() as *const ff::AVFrame;
        // SAFETY: a frame the decoder returned: its fields are set.
        let (w, h, fmt, data, linesize) =
            unsafe { ((*raw).width, (*raw).height, (*raw).format, (*raw).data, (*raw).linesize) };
        let index = self.frames;
        if (w as usize, h as usize) != (self.width, self.height) {
            return Err(self.error(format!(
                "frame {index} is {w}x{h}, but the stream began at {}x{} (vmafx scores one size per stream)",
                self.width, self.height
            )));
        }
        let host = host_format(&pix_fmt_name(fmt), &self.path)?;
        if !std::ptr::eq(host, self.host) {
            return Err(self.error(format!(
                "frame {index} is {}, but the stream began as {} (vmafx scores one format per stream)",
                host.name, self.host.name
            )));
        }
        let planes = RawPlanes {
            data: [data[0], data[1], data[2], data[3]].map(|p| p as *const u8),
            linesize: [linesize[0], linesize[1], linesize[2], linesize[3]],
            width: self.width,
            height: self.height,
            memory: FrameMemory::Host,
        };
        // SAFETY: a decoded software frame: data[i] holds the plane's rows
        // linesize[i] apart at the format's plane sizes, kept alive by the
        // frame reference `frame` moves into the picture.
        let (picture, _copied) = unsafe { HostPicture::wrap(frame, &planes, self.host, true) }
            .map_err(|e| self.error(format!("frame {index}: {e}")))?;
        self.frames += 1;
        Ok(Some(picture))
    }
}

impl FrameReader for DecodeReader {
    fn path(&self) -> &Path {
        &self.path
    }
    fn width(&self) -> usize {
        self.width
    }
    fn height(&self) -> usize {
        self.height
    }
    fn format(&self) -> PixelFormat {
        self.format
    }
    fn read_frame(&mut self) -> Result<Option<OwnedPicture>> {
        let Some(picture) = self.read_picture()? else {
            return Ok(None);
        };
        let view = picture.host().ok_or_else(|| Error::Internal("decoded picture has no host planes".into()))?;
        OwnedPicture::copy_of(&view).map(Some)
    }
    fn read_source(&mut self) -> Result<Option<Arc<dyn PictureSource>>> {
        Ok(self.read_picture()?.map(|p| Arc::new(p) as Arc<dyn PictureSource>))
    }
    fn frames_read(&self) -> u32 {
        self.frames
    }
    fn skip_frames(&mut self, n: u32) -> Result<u32> {
        for i in 0..n {
            if self.read_picture()?.is_none() {
                return Ok(i);
            }
        }
        Ok(n)
    }
}

/// Where each frame of a stream is, from its packets alone (no decoding):
/// what a segmented run needs to start a task at any frame by seeking to
/// the key frame at or before it and decoding forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameMap {
    /// Each frame's presentation timestamp, in presentation order (the
    /// position of a timestamp here is its frame's index).
    pub pts: Vec<i64>,
    /// The key frames, in presentation order: (frame index, the timestamp
    /// to seek to: its packet's decoding timestamp, else its presentation
    /// one).
    pub keys: Vec<(u32, i64)>,
}

impl FrameMap {
    /// The index of the frame presented at `pts`.
    fn index_of(&self, pts: i64) -> Option<u32> {
        self.pts.binary_search(&pts).ok().map(|i| i as u32)
    }
}

impl DecodeReader {
    /// Maps every frame of `path`'s video stream by reading its packets
    /// (no decoding). `None` when the packets do not say where each frame
    /// goes (a packet without a presentation timestamp, two with one
    /// timestamp, no key frame first): such a stream is read from its start.
    pub fn map_frames(path: &Path) -> Result<Option<FrameMap>> {
        let reader = DecodeReader::open(path)?;
        let mut pts = Vec::new();
        let mut keys = Vec::new();
        loop {
            // SAFETY: demuxer open, packet ours; its previous reference was
            // released below.
            let rc = unsafe { ff::av_read_frame(reader.demuxer.0, reader.packet.0) };
            if rc == ff::AVERROR_EOF {
                break;
            }
            if rc < 0 {
                return Err(reader.error(format!("reading packet {}: {}", pts.len(), av_error(rc))));
            }
            // SAFETY: av_read_frame filled the packet.
            let (stream, p, d, flags) = unsafe {
                let k = &*reader.packet.0;
                (k.stream_index, k.pts, k.dts, k.flags)
            };
            // SAFETY: releases the packet's reference; the packet is reusable.
            unsafe { ff::av_packet_unref(reader.packet.0) };
            if stream != reader.stream {
                continue;
            }
            if p == ff::AV_NOPTS_VALUE {
                return Ok(None);
            }
            if flags & ff::AV_PKT_FLAG_KEY != 0 {
                keys.push((p, if d == ff::AV_NOPTS_VALUE { p } else { d }));
            }
            pts.push(p);
        }
        pts.sort_unstable();
        if pts.windows(2).any(|w| w[0] == w[1]) {
            return Ok(None);
        }
        let map = FrameMap { pts, keys: Vec::new() };
        let mut keys: Vec<(u32, i64)> =
            keys.into_iter().filter_map(|(p, seek)| map.index_of(p).map(|i| (i, seek))).collect();
        keys.sort_unstable();
        if keys.first().map(|k| k.0) != Some(0) {
            return Ok(None);
        }
        Ok(Some(FrameMap { keys, ..map }))
    }

    /// Positions the reader so that the next frame read is frame `frame`
    /// of `map` (this stream's map): seeks to the latest key frame at or
    /// before it, decodes forward and drops the frames before it (an
    /// earlier key frame is tried when the demuxer lands past it). Returns
    /// the key frame it decoded from.
    pub fn seek_to_frame(&mut self, map: &FrameMap, frame: u32) -> Result<u32> {
        if frame as usize >= map.pts.len() {
            return Err(self.error(format!("frame {frame}: the stream has {} frames", map.pts.len())));
        }
        let mut key = map.keys.partition_point(|k| k.0 <= frame);
        while key > 0 {
            key -= 1;
            let seek = map.keys[key].1;
            // SAFETY: the demuxer is open and `stream` is one of its
            // streams; the decoder is open, and flushing drops what it
            // held from before the seek.
            let rc = unsafe {
                let rc = ff::av_seek_frame(self.demuxer.0, self.stream, seek, ff::AVSEEK_FLAG_BACKWARD);
                ff::avcodec_flush_buffers(self.decoder.0);
                rc
            };
            if rc < 0 {
                return Err(self.error(format!("seeking to frame {}: {}", map.keys[key].0, av_error(rc))));
            }
            self.draining = false;
            self.ended = false;
            self.pending = None;
            loop {
                let Some(decoded) = self.next_frame()? else {
                    return Err(self.error(format!("the stream ended before frame {frame} after a seek")));
                };
                // SAFETY: a frame the decoder returned: its fields are set.
                let ts = unsafe { (*(decoded.as_ptr() as *const ff::AVFrame)).best_effort_timestamp };
                let index = map.index_of(ts).ok_or_else(|| {
                    self.error(format!("a frame at timestamp {ts} is not in the stream's packets"))
                })?;
                if index < frame {
                    continue;
                }
                if index > frame {
                    // Landed past it: an earlier key frame.
                    break;
                }
                self.pending = Some(decoded);
                self.frames = frame;
                return Ok(map.keys[key].0);
            }
        }
        Err(self.error(format!("no key frame to decode frame {frame} from")))
    }
}
