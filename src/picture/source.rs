//! What the engine scores: anything that holds a picture, on the host, in
//! device memory, or both. The readers (src/io), the importers (src/import)
//! and the filter (src/avfilter) implement it; the engine only reads it.

use super::{DeviceFrame, OwnedPicture, Picture};

/// Something that holds a picture for as long as the engine needs it:
/// an [`OwnedPicture`], or a wrapper around a reference-counted frame. Its
/// samples are in host memory ([`PictureSource::host`]), in a GPU lane's
/// memory ([`PictureSource::device_frame`]), or both. Dropping the last
/// reference is the release: every reader is done with it then.
pub trait PictureSource: Send + Sync {
    /// The host planes; `None` for a picture that lives only on a device.
    fn host(&self) -> Option<Picture<'_>>;
    /// The planes in device memory, when the picture is there.
    fn device_frame(&self) -> Option<&DeviceFrame> {
        None
    }
}

impl PictureSource for OwnedPicture {
    fn host(&self) -> Option<Picture<'_>> {
        Some(self.view())
    }
}
