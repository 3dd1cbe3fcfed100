//! The import layer: how frames that live outside vmafx's heap (dma-bufs,
//! device memory, GL textures) become pictures the scoring core can read.
//!
//! Every device lane (the CPU, CUDA and HIP) takes the same
//! [`FrameDescriptor`]: where each object lives ([`Memory`]), how planes sit
//! in the objects (DRM layers, as FFmpeg's `AVDRMFrameDescriptor`), the DRM
//! fourcc and modifier, the size and bit depth, and the fences that guard it.
//! A lane either imports the frame or refuses it with an [`ImportError`]
//! whose [`ImportErrorKind`] says why (BUSY, RANGE, NOT SUPPORTED, INVALID,
//! DEVICE) and whose message names what was refused.
//!
//! The rule for fences: nothing is read from a buffer whose acquire fence has
//! not signalled. An import polls each fence without waiting and answers BUSY
//! if one is pending; [`cpu::HostImporter::wait_and_import`] waits and retries up
//! to a timeout. See docs/drm-prime.md.

pub(crate) mod cpu;
pub(crate) mod drm;
pub(crate) mod gpu;
mod dmabuf;
mod external;
mod layout;
pub(crate) mod sys;

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

pub use drm_fourcc::{DrmFourcc, DrmModifier};

/// What kind of memory an object of a frame is (`Memory::kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryObjectKind {
    Host,
    DmaBuf,
    DevicePointer,
    DeviceArray,
    GlTexture,
}

/// One memory object of a frame (FFmpeg's `AVDRMObjectDescriptor`, widened
/// to the other kinds of memory a lane may see).
#[derive(Debug)]
pub enum Memory {
    /// Host memory the caller keeps alive and unchanged while the frame is
    /// imported (shared, read-only).
    Host(Arc<[u8]>),
    /// A dma-buf; the descriptor owns the fd until an import succeeds.
    DmaBuf(OwnedFd),
    /// A device pointer (CUDA `CUdeviceptr`, HIP `hipDeviceptr_t`).
    DevicePointer(u64),
    /// A device array (CUDA `CUarray`, HIP `hipArray_t`).
    DeviceArray(u64),
    /// A GL texture name and its target.
    GlTexture { target: u32, name: u32 },
}

impl Memory {
    pub fn kind(&self) -> MemoryObjectKind {
        match self {
            Memory::Host(_) => MemoryObjectKind::Host,
            Memory::DmaBuf(_) => MemoryObjectKind::DmaBuf,
            Memory::DevicePointer(_) => MemoryObjectKind::DevicePointer,
            Memory::DeviceArray(_) => MemoryObjectKind::DeviceArray,
            Memory::GlTexture { .. } => MemoryObjectKind::GlTexture,
        }
    }
}

#[derive(Debug)]
pub struct Object {
    pub memory: Memory,
    /// Size the producer declares (0: unknown). The real size is checked
    /// anyway; a declared size past it is refused (RANGE).
    pub size: u64,
    /// Layout of the object's pixels (`DRM_FORMAT_MOD_*`).
    pub modifier: DrmModifier,
}

/// One plane of a layer: which object, where it starts, bytes per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaneRef {
    pub object: usize,
    pub offset: u64,
    pub pitch: u64,
}

/// One layer (FFmpeg's `AVDRMLayerDescriptor`): a DRM format and its planes.
/// NV12 can come as one `NV12` layer with two planes, or as VAAPI exports it,
/// one layer per plane: `R8` then `GR88` (`R16` then `GR1616` for P010/P016).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub format: DrmFourcc,
    pub planes: Vec<PlaneRef>,
}

/// What a consumer must wait for before reading.
#[derive(Debug)]
pub enum AcquireFence {
    None,
    /// A fence the host signals ([`HostFence::signal`]).
    Host(HostFence),
    /// A sync_file (Linux); owned until the import succeeds.
    SyncFile(OwnedFd),
    /// A device event (CUDA/HIP event handle).
    DeviceEvent(u64),
    /// A GL sync object (`GLsync`).
    GlSync(u64),
}

impl AcquireFence {
    pub fn describe(&self) -> String {
        match self {
            AcquireFence::None => "no fence".into(),
            AcquireFence::Host(_) => "host fence".into(),
            AcquireFence::SyncFile(fd) => {
                use std::os::fd::AsRawFd;
                format!("sync_file fd {}", fd.as_raw_fd())
            }
            AcquireFence::DeviceEvent(e) => format!("device event {e:#x}"),
            AcquireFence::GlSync(s) => format!("GL sync {s:#x}"),
        }
    }
}

/// What the consumer signals when it no longer reads the frame.
#[derive(Debug)]
pub enum ReleaseFence {
    Host(HostFence),
    DeviceEvent(u64),
    /// Refused: vmafx cannot create sync_files (no exporter of its own).
    SyncFile(OwnedFd),
}

/// A fence signalled from host code; clones share one state.
#[derive(Clone, Debug, Default)]
pub struct HostFence(Arc<(Mutex<bool>, Condvar)>);

impl HostFence {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn signal(&self) {
        let (lock, cv) = &*self.0;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cv.notify_all();
    }
    pub fn is_signalled(&self) -> bool {
        *self.0 .0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Waits up to `timeout`; returns whether it signalled.
    pub fn wait(&self, timeout: Duration) -> bool {
        let (lock, cv) = &*self.0;
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (guard, _) = cv
            .wait_timeout_while(guard, timeout, |s| !*s)
            .unwrap_or_else(|p| p.into_inner());
        *guard
    }
}

/// How to read a modifier of `DRM_FORMAT_MOD_INVALID` (FFmpeg's
/// "no modifier given"): by default it is refused, since the layout is
/// unknown; a caller who knows the producer's implicit layout is linear (an
/// old VAAPI driver, a dumb buffer) says so with `ImplicitLinear`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InvalidModifier {
    #[default]
    Refuse,
    ImplicitLinear,
}

/// A frame for import.
#[derive(Debug)]
pub struct FrameDescriptor {
    /// Names the frame in errors (e.g. "distorted frame 12").
    pub label: String,
    pub width: usize,
    pub height: usize,
    /// Bits per component (8 for NV12/YUV420, 10 for P010, 16 for P016; for
    /// R16 layers the caller says which).
    pub bits: u8,
    pub objects: Vec<Object>,
    pub layers: Vec<Layer>,
    pub invalid_modifier: InvalidModifier,
    /// Take each dma-buf's implicit fences (DMA_BUF_IOCTL_EXPORT_SYNC_FILE,
    /// READ) as acquire fences: FFmpeg's DRM frames carry none explicitly.
    pub implicit_sync: bool,
    pub acquire: Vec<AcquireFence>,
    pub release: Vec<ReleaseFence>,
    /// The implicit fences a poll found pending, as exported then (object,
    /// sync_file), held across BUSY retries: the kernel's export leaves a
    /// fence out once it has signalled, failed or not, so only a sync_file
    /// taken while it was pending can still tell a failure (dmabuf.rs).
    implicit_pending: std::sync::Mutex<Vec<(usize, std::os::fd::OwnedFd)>>,
}

impl FrameDescriptor {
    /// A descriptor with no objects or layers yet, implicit sync on.
    pub fn new(label: impl Into<String>, width: usize, height: usize, bits: u8) -> Self {
        FrameDescriptor {
            label: label.into(),
            width,
            height,
            bits,
            objects: Vec::new(),
            layers: Vec::new(),
            invalid_modifier: InvalidModifier::Refuse,
            implicit_sync: true,
            acquire: Vec::new(),
            release: Vec::new(),
            implicit_pending: Default::default(),
        }
    }
}

/// Why an import was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportErrorKind {
    /// A fence has not signalled yet: retry later (or `wait_and_import`).
    Busy,
    /// A plane's extent runs past the end of its object.
    Range,
    /// Well-formed, but this lane does not handle it (a tiled modifier, a
    /// format, a kind of memory or fence).
    NotSupported,
    /// Malformed: a closed fd, a plane that names no object, a zero size.
    Invalid,
    /// The device or kernel failed an operation that should have worked.
    Device,
}

impl fmt::Display for ImportErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImportErrorKind::Busy => "busy",
            ImportErrorKind::Range => "out of range",
            ImportErrorKind::NotSupported => "not supported",
            ImportErrorKind::Invalid => "invalid",
            ImportErrorKind::Device => "device error",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub kind: ImportErrorKind,
    pub message: String,
}

impl ImportError {
    pub fn new(kind: ImportErrorKind, message: impl Into<String>) -> Self {
        ImportError { kind, message: message.into() }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "import {}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ImportError {}

impl From<ImportError> for crate::Error {
    fn from(e: ImportError) -> Self {
        let text = e.to_string();
        match e.kind {
            ImportErrorKind::NotSupported => crate::Error::NotSupported(text),
            ImportErrorKind::Invalid | ImportErrorKind::Range => crate::Error::InvalidArgument(text),
            ImportErrorKind::Busy | ImportErrorKind::Device => crate::Error::Internal(text),
        }
    }
}

/// A refused import: the error, and the descriptor back (it still owns its
/// fds) so the caller can retry after BUSY or close them.
#[derive(Debug)]
pub struct Refusal {
    pub error: ImportError,
    /// Boxed: a refusal travels in `Err`, which should stay small.
    pub descriptor: Box<FrameDescriptor>,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl From<Refusal> for crate::Error {
    fn from(r: Refusal) -> Self {
        r.error.into()
    }
}

/// A modifier for messages: its name where drm-fourcc knows it, and its value.
pub(crate) fn modifier_name(m: DrmModifier) -> String {
    let v: u64 = m.into();
    match m {
        DrmModifier::Unrecognized(_) => format!("modifier {v:#018x}"),
        known => format!("modifier {known:?} ({v:#018x})"),
    }
}
