//! The one count of picture data copied through host memory. Every path
//! that does so counts here, once per picture: the filter's host frames
//! rewritten before scoring (p010 shifted, nv12 chroma split, bottom-up
//! rows), the CPU lane's dma-buf planes copied out of their mapping, and a
//! GPU lane's upload of a host picture. A [`crate::engine::Context`] owns
//! one (`Context::host_copies`); the filter hands its context's to its
//! importer, so the filter's C counter, the context and the tests read the
//! same numbers. Device frames read in place add nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Where a picture's data went through host memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCopy {
    /// Rewritten in host memory before scoring (deinterleaved, shifted,
    /// flipped): the CPU path's copies.
    InHostMemory,
    /// Copied from host memory to a GPU lane's device memory.
    ToDevice,
}

/// What was copied one way: pictures, their planes, their bytes.
#[derive(Debug, Default)]
struct Tally {
    pictures: AtomicU64,
    planes: AtomicU64,
    bytes: AtomicU64,
}

/// The host-copy counter, shared by clones (one per context).
#[derive(Clone, Debug, Default)]
pub struct HostCopies {
    tallies: Arc<[Tally; 2]>,
}

impl HostCopies {
    pub fn new() -> Self {
        Self::default()
    }

    fn tally(&self, kind: HostCopy) -> &Tally {
        &self.tallies[kind as usize]
    }

    /// Counts one picture whose `planes` planes (`bytes` in all) were
    /// copied `kind`.
    pub fn count(&self, kind: HostCopy, planes: usize, bytes: usize) {
        let t = self.tally(kind);
        t.pictures.fetch_add(1, Ordering::SeqCst);
        t.planes.fetch_add(planes as u64, Ordering::SeqCst);
        t.bytes.fetch_add(bytes as u64, Ordering::SeqCst);
    }

    /// Pictures copied `kind` (a picture's planes count once).
    pub fn pictures(&self, kind: HostCopy) -> u64 {
        self.tally(kind).pictures.load(Ordering::SeqCst)
    }

    /// Planes copied `kind`.
    pub fn planes(&self, kind: HostCopy) -> u64 {
        self.tally(kind).planes.load(Ordering::SeqCst)
    }

    /// Bytes copied `kind`.
    pub fn bytes(&self, kind: HostCopy) -> u64 {
        self.tally(kind).bytes.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_count_into_one_tally_per_kind() {
        let copies = HostCopies::new();
        let shared = copies.clone();
        shared.count(HostCopy::InHostMemory, 2, 100);
        copies.count(HostCopy::ToDevice, 1, 40);
        copies.count(HostCopy::ToDevice, 3, 60);
        assert_eq!((copies.pictures(HostCopy::InHostMemory), copies.planes(HostCopy::InHostMemory), copies.bytes(HostCopy::InHostMemory)), (1, 2, 100));
        assert_eq!((shared.pictures(HostCopy::ToDevice), shared.planes(HostCopy::ToDevice), shared.bytes(HostCopy::ToDevice)), (2, 4, 100));
    }
}
