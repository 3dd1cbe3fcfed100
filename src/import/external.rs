//! dma-bufs imported into a GPU lane as external memory (HIP:
//! `hipImportExternalMemory`, an OpaqueFd handle that ROCm's runtime maps as
//! a dma-buf, as AMD's rocDecode reads VAAPI surfaces), and the cache that
//! makes a decoder's surface pool an import per surface, not per frame.
//!
//! - **Identity.** An object is known by `fstat` (device, inode) and its
//!   size: every dma-buf has an inode of its own, and a cached import holds
//!   a duplicate of the fd (owned by the runtime), so the buffer, and with
//!   it the inode, stays alive while cached.
//! - **Planes.** Each plane is mapped at its offset
//!   (`hipExternalMemoryGetMappedBuffer`), once per (offset, size). ROCm
//!   5.2 ignores the offset and answers the object's base: detected by
//!   comparing with the mapping at offset 0; then every plane is base +
//!   offset.
//! - **Release.** An [`ExternalObject`] is shared by the cache and by each
//!   frame that reads it; a frame's reference is kept (with its buffers)
//!   until the frame's release event, recorded after its last reader, is
//!   done. When the last reference goes, the mapped buffers and the
//!   external memory go to the lane's [`Graveyard`], and the lane frees and
//!   destroys them (it holds the runtime). So memory is destroyed only
//!   after the last reader of the last frame that used it, and only once
//!   the cache let go (its importer dropped: the frames context gone).

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex, MutexGuard};

use super::sys;
use crate::device::gpu::backend::{Backend, DeviceMemory};

/// An object's identity: (device, inode, size).
pub(super) type Identity = (u64, u64, u64);

/// What is left of an object nobody reads any more: its mapped buffers
/// (freed first, by dropping them) and its external memory (destroyed
/// after).
pub(super) struct Dead {
    pub buffers: Vec<Box<dyn DeviceMemory>>,
    pub memory: u64,
}

/// Objects nobody references, waiting for the lane to destroy them.
pub(super) type Graveyard = Arc<Mutex<Vec<Dead>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a plane of the object is on the device, and what was mapped.
#[derive(Default)]
struct Mapped {
    /// (offset, size) → device pointer to the plane's first byte.
    planes: HashMap<(u64, u64), u64>,
    /// The mapping at offset 0 of the whole object, where one was needed.
    base: Option<u64>,
    /// Whether the runtime honours a mapping's offset (None: not seen yet).
    offset_honoured: Option<bool>,
    /// Distinct mappings the runtime handed out, each freed once when
    /// dropped (a runtime may answer one address twice: ROCm 5.2 answers
    /// the base; the second answer is forgotten, not freed).
    buffers: Vec<Box<dyn DeviceMemory>>,
}

impl Mapped {
    /// Keeps `buffer` (unless its address is kept already) and returns its
    /// address.
    fn keep<M: DeviceMemory + 'static>(&mut self, buffer: M) -> u64 {
        let ptr = buffer.ptr();
        if self.buffers.iter().any(|b| b.ptr() == ptr) {
            // The same mapping answered twice: one free is owed, not two.
            Box::new(buffer).into_raw();
        } else {
            self.buffers.push(Box::new(buffer));
        }
        ptr
    }
}

/// One dma-buf imported as external memory.
pub(super) struct ExternalObject {
    memory: u64,
    size: u64,
    mapped: Mutex<Mapped>,
    graveyard: Graveyard,
}

impl ExternalObject {
    /// A device pointer to the `len` bytes at `offset` (a plane), mapped on
    /// first use.
    pub(super) fn plane<B: Backend>(&self, backend: &mut B, offset: u64, len: u64) -> crate::Result<u64> {
        let mut m = lock(&self.mapped);
        if let Some(&ptr) = m.planes.get(&(offset, len)) {
            return Ok(ptr);
        }
        let ptr = if offset == 0 {
            m.keep(backend.map_external(self.memory, 0, len)?)
        } else {
            let base = match m.base {
                Some(b) => b,
                None => {
                    let b = m.keep(backend.map_external(self.memory, 0, self.size)?);
                    m.base = Some(b);
                    b
                }
            };
            let honoured = match m.offset_honoured {
                Some(h) => h,
                None => {
                    // Map at the offset; a runtime that ignores it (ROCm
                    // 5.2) answers the base again.
                    let probe = m.keep(backend.map_external(self.memory, offset, len)?);
                    let honoured = probe != base;
                    if honoured {
                        m.planes.insert((offset, len), probe);
                    }
                    m.offset_honoured = Some(honoured);
                    honoured
                }
            };
            match m.planes.get(&(offset, len)) {
                Some(&ptr) => ptr,
                None if honoured => m.keep(backend.map_external(self.memory, offset, len)?),
                None => base + offset,
            }
        };
        m.planes.insert((offset, len), ptr);
        Ok(ptr)
    }
}

impl Drop for ExternalObject {
    fn drop(&mut self) {
        // The last reference: every frame that read it has been released
        // and its release event is done. The lane frees and destroys.
        let buffers = std::mem::take(&mut lock(&self.mapped).buffers);
        lock(&self.graveyard).push(Dead { buffers, memory: self.memory });
    }
}

/// Frees and destroys what the graveyard holds, on `backend`.
pub(super) fn bury<B: Backend>(graveyard: &Graveyard, backend: &mut B) {
    let dead = std::mem::take(&mut *lock(graveyard));
    for d in dead {
        drop(d.buffers);
        backend.destroy_external(d.memory);
    }
}

/// How many objects an importer keeps imported: a decoder's surface pool
/// is well below it; a producer that makes new buffers all the time
/// evicts the least recently used.
const CACHED_OBJECTS: usize = 64;

/// An importer's imported objects by identity.
#[derive(Default)]
pub(super) struct ExternalCache {
    objects: HashMap<Identity, (Arc<ExternalObject>, u64)>,
    /// Ticks for least-recently-used eviction.
    clock: u64,
    /// Objects imported (a cache hit does not count).
    pub imports: u64,
}

impl ExternalCache {
    /// The import of `fd` (of `size` bytes): cached, or imported now from a
    /// duplicate of `fd` whose ownership passes to the runtime.
    pub(super) fn get<B: Backend>(
        &mut self,
        fd: &std::os::fd::OwnedFd,
        size: u64,
        backend: &mut B,
        graveyard: &Graveyard,
    ) -> Result<Arc<ExternalObject>, String> {
        let (dev, ino) = sys::identity(fd.as_fd()).map_err(|e| format!("fstat failed ({e})"))?;
        let key = (dev, ino, size);
        self.clock += 1;
        if let Some((object, used)) = self.objects.get_mut(&key) {
            *used = self.clock;
            return Ok(object.clone());
        }
        let dup = fd.try_clone().map_err(|e| format!("cannot duplicate the fd ({e})"))?;
        let memory = backend.import_dma_buf(dup, size).map_err(|e| e.to_string())?;
        self.imports += 1;
        let object = Arc::new(ExternalObject { memory, size, mapped: Mutex::default(), graveyard: graveyard.clone() });
        if self.objects.len() >= CACHED_OBJECTS {
            let oldest = self.objects.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.objects.remove(&k);
            }
        }
        self.objects.insert(key, (object.clone(), self.clock));
        Ok(object)
    }

    /// Objects held now.
    pub(super) fn len(&self) -> usize {
        self.objects.len()
    }

    /// Lets go of every object (frames still reading keep theirs).
    pub(super) fn clear(&mut self) {
        self.objects.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::gpu::backend::{ArrayExtent, ArrayRef, DeviceEvent, EventRef, Pitched};
    use crate::device::gpu::kernels::KernelSource;
    use crate::device::{DeviceKind, DeviceMemoryId};
    use std::ffi::c_void;
    use std::os::fd::{FromRawFd, OwnedFd};

    type Log = Arc<Mutex<Vec<String>>>;

    /// A runtime that only imports: objects at 0x10000 * n, mappings at
    /// base + offset (or base, as ROCm 5.2); every call logged.
    #[derive(Default)]
    struct Importing {
        ignores_offset: bool,
        objects: u64,
        log: Log,
    }

    impl Importing {
        fn log(&self) -> Vec<String> {
            lock(&self.log).clone()
        }
    }

    /// A mapping of [`Importing`]: its free is logged.
    struct Mapping {
        ptr: u64,
        log: Log,
    }

    impl DeviceMemory for Mapping {
        fn ptr(&self) -> u64 { self.ptr }
        fn bytes(&self) -> usize { 0 }
        fn into_raw(self: Box<Self>) -> u64 {
            let ptr = self.ptr;
            std::mem::forget(self);
            ptr
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) { lock(&self.log).push(format!("free {:#x}", self.ptr)) }
    }

    /// [`Importing`] makes no events.
    struct NoEvent;

    impl DeviceEvent for NoEvent {
        fn handle(&self) -> u64 { 0 }
    }

    impl Backend for Importing {
        type Function = ();
        type Buffer = Mapping;
        type Event = NoEvent;
        fn load(&mut self, _: &KernelSource) -> crate::Result<Vec<()>> { unimplemented!() }
        fn alloc(&mut self, _: usize) -> crate::Result<Mapping> { unimplemented!() }
        fn upload(&mut self, _: u64, _: &[u8]) -> crate::Result<()> { unimplemented!() }
        fn download(&mut self, _: &mut [u8], _: u64) -> crate::Result<()> { unimplemented!() }
        unsafe fn launch(&mut self, _: (), _: (u32, u32), _: &mut [*mut c_void]) -> crate::Result<()> { unimplemented!() }
        fn synchronize(&mut self) -> crate::Result<()> { Ok(()) }
        fn memory(&self) -> DeviceMemoryId { DeviceMemoryId { kind: DeviceKind::Hip, context: 0 } }
        fn create_event(&mut self) -> crate::Result<NoEvent> { unimplemented!() }
        fn record_event(&mut self, _: EventRef<'_>) -> crate::Result<()> { unimplemented!() }
        fn wait_event(&mut self, _: EventRef<'_>) -> crate::Result<()> { unimplemented!() }
        fn query_event(&mut self, _: EventRef<'_>) -> crate::Result<bool> { unimplemented!() }
        fn synchronize_event(&mut self, _: EventRef<'_>) -> crate::Result<()> { unimplemented!() }
        fn copy_2d(&mut self, _: Pitched, _: Pitched, _: usize, _: usize) -> crate::Result<()> { unimplemented!() }
        fn copy_from_array(&mut self, _: Pitched, _: ArrayRef, _: usize, _: usize) -> crate::Result<()> { unimplemented!() }
        fn allocation_range(&mut self, _: u64) -> crate::Result<Option<(u64, usize)>> { Ok(None) }
        fn array_extent(&mut self, _: ArrayRef) -> crate::Result<Option<ArrayExtent>> { Ok(None) }
        fn imports_dma_bufs(&self) -> bool { true }
        fn import_dma_buf(&mut self, _fd: OwnedFd, size: u64) -> crate::Result<u64> {
            self.objects += 1;
            lock(&self.log).push(format!("import {size}"));
            Ok(self.objects << 16)
        }
        fn map_external(&mut self, memory: u64, offset: u64, size: u64) -> crate::Result<Mapping> {
            lock(&self.log).push(format!("map {memory:#x} +{offset} {size}"));
            let ptr = if self.ignores_offset { memory } else { memory + offset };
            Ok(Mapping { ptr, log: self.log.clone() })
        }
        fn destroy_external(&mut self, memory: u64) { lock(&self.log).push(format!("destroy {memory:#x}")) }
    }

    fn memfd(len: usize) -> OwnedFd {
        // SAFETY: plain syscalls on an fd we own; results checked.
        unsafe {
            let fd = nix::libc::memfd_create(c"vmafx-test".as_ptr(), nix::libc::MFD_CLOEXEC);
            assert!(fd >= 0);
            assert_eq!(nix::libc::ftruncate(fd, len as i64), 0);
            OwnedFd::from_raw_fd(fd)
        }
    }

    #[test]
    fn planes_are_mapped_at_their_offsets_or_at_base_plus_offset_where_the_runtime_ignores_it() {
        for ignores_offset in [false, true] {
            let mut rt = Importing { ignores_offset, ..Default::default() };
            let graveyard = Graveyard::default();
            let mut cache = ExternalCache::default();
            let fd = memfd(8192);
            let object = cache.get(&fd, 8192, &mut rt, &graveyard).unwrap();
            // Y at 0, UV at 4096, and again (cached).
            assert_eq!(object.plane(&mut rt, 0, 4000).unwrap(), 0x10000);
            assert_eq!(object.plane(&mut rt, 4096, 2000).unwrap(), 0x10000 + 4096, "ignores_offset {ignores_offset}");
            assert_eq!(object.plane(&mut rt, 4096, 2000).unwrap(), 0x10000 + 4096);
            assert_eq!(object.plane(&mut rt, 6200, 100).unwrap(), 0x10000 + 6200);
            let log = rt.log();
            let maps: Vec<&String> = log.iter().filter(|l| l.starts_with("map")).collect();
            if ignores_offset {
                // Detected once: later planes are base + offset, no new mapping.
                assert_eq!(maps, ["map 0x10000 +0 4000", "map 0x10000 +0 8192", "map 0x10000 +4096 2000"]);
            } else {
                assert_eq!(maps, ["map 0x10000 +0 4000", "map 0x10000 +0 8192", "map 0x10000 +4096 2000", "map 0x10000 +6200 100"]);
            }
            // Another fd of the same object is a cache hit; the object goes
            // when the cache and the last frame let go, buffers first.
            let again = cache.get(&fd.try_clone().unwrap(), 8192, &mut rt, &graveyard).unwrap();
            assert!(Arc::ptr_eq(&object, &again));
            assert_eq!(cache.imports, 1);
            cache.clear();
            drop(object);
            bury(&graveyard, &mut rt);
            assert!(rt.log().iter().all(|l| !l.starts_with("destroy") && !l.starts_with("free")), "freed while a frame holds it");
            drop(again);
            bury(&graveyard, &mut rt);
            let log = rt.log();
            let tail: Vec<&String> = log.iter().skip_while(|l| !l.starts_with("free")).collect();
            // Distinct addresses, each freed once (offset 0 twice is one).
            let frees = if ignores_offset { 1 } else { 3 };
            assert_eq!(tail.len(), frees + 1, "{tail:?}");
            assert_eq!(tail.last().unwrap().as_str(), "destroy 0x10000");
        }
    }

    #[test]
    fn another_object_or_size_is_another_import_and_the_oldest_is_evicted() {
        let mut rt = Importing::default();
        let graveyard = Graveyard::default();
        let mut cache = ExternalCache::default();
        let (a, b) = (memfd(4096), memfd(4096));
        let oa = cache.get(&a, 4096, &mut rt, &graveyard).unwrap();
        let ob = cache.get(&b, 4096, &mut rt, &graveyard).unwrap();
        assert!(!Arc::ptr_eq(&oa, &ob));
        assert_eq!(cache.imports, 2);
        drop((oa, ob));
        let fds: Vec<OwnedFd> = (0..CACHED_OBJECTS).map(|_| memfd(4096)).collect();
        for fd in &fds {
            cache.get(fd, 4096, &mut rt, &graveyard).unwrap();
        }
        assert_eq!(cache.len(), CACHED_OBJECTS);
        bury(&graveyard, &mut rt);
        assert_eq!(rt.log().iter().filter(|l| l.starts_with("destroy")).count(), 2, "the two oldest evicted");
    }
}
