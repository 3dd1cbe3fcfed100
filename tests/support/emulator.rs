//! A GPU emulated on the host for tests without one: the kernels of
//! kernels/ built as host C++ (kernel_emu.cpp), device memory as host
//! allocations, and streams as queues run in order. Work on a stream waits
//! behind a stream wait on an event until that event's last record (at the
//! time of the wait) has run, as on CUDA and HIP; a test can make an event
//! that only it signals ([`World::blocked_event`]), to stand for a producer
//! still writing or a reader still reading, and so check the ordering the
//! import promises. Where a real device would block forever (synchronizing
//! a stream stuck behind an event nobody signals), the emulator answers an
//! error instead.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use vmafx::DeviceKind;
use vmafx::internals::device::DeviceMemoryId;
use vmafx::internals::device::gpu::backend::{ArrayExtent, ArrayRef, Backend, DeviceEvent, DeviceMemory, EventRef, Pitched};
use vmafx::internals::device::gpu::kernels::KernelSource;

type Launch = unsafe extern "C" fn(i32, u32, u32, *mut *mut c_void) -> i32;
type Find = unsafe extern "C" fn(*const std::ffi::c_char) -> i32;

enum Op {
    Launch { f: i32, grid: (u32, u32), slots: Vec<[u8; 8]> },
    Copy { dst: Pitched, src: Pitched, row_bytes: usize, rows: usize },
    Write { dst: u64, bytes: Vec<u8> },
    Record { event: u64, generation: u64 },
    Wait { event: u64, generation: u64 },
}

#[derive(Default)]
struct Event {
    /// Records queued (or, for a blocked event, promised by the test).
    queued: u64,
    /// The last record that has run.
    done: u64,
    /// Destroyed by its owner: kept, since queued waits still refer to the
    /// work it was recorded after (as CUDA and HIP allow).
    destroyed: bool,
}

#[derive(Default)]
struct State {
    memory: BTreeMap<u64, Vec<u64>>,
    /// Freed while work was queued: kept until the queues drain.
    graveyard: Vec<Vec<u64>>,
    arrays: HashMap<u64, (u64, ArrayExtent)>,
    events: HashMap<u64, Event>,
    next_handle: u64,
    queues: HashMap<u32, VecDeque<Op>>,
    next_stream: u32,
    /// Whether allocation_range answers (false: "cannot tell").
    hide_ranges: bool,
    /// Host-to-device copies queued (`Backend::upload`).
    uploads: u64,
}

pub struct World {
    state: Mutex<State>,
    launch: Launch,
    find: Find,
}

/// The emulator library, built once per process and never unloaded (its
/// fibers' stacks live as long as the process); launches are serialised,
/// as it runs one block at a time on the launching thread.
static LIBRARY: std::sync::OnceLock<Option<(Launch, Find)>> = std::sync::OnceLock::new();
static LAUNCH: Mutex<()> = Mutex::new(());

/// One stream of the emulated device: a [`Backend`].
pub struct Emulator {
    world: Arc<World>,
    stream: u32,
}

/// A new emulated device (its own memory, events and streams) and its
/// first stream; `None` (skip) without a C++ compiler.
pub fn build_emulator() -> Option<Emulator> {
    let (launch, find) = (*LIBRARY.get_or_init(build_library))?;
    let world = Arc::new(World {
        state: Mutex::new(State { next_handle: 0x1000, ..Default::default() }),
        launch,
        find,
    });
    Some(world.stream())
}

/// Builds kernel_emu.cpp (every kernel of kernels/ as host C++) into a
/// shared library, or finds the one an earlier test process built from the
/// same sources: `target/tmp/kernel-emu/<hash>.so`, the hash of the
/// compiler's identity, the flags and every source byte. The planted
/// defects rerun the device tests dozens of times, nearly all with the
/// kernels unchanged, and the build costs ~5 s of CPU each time.
fn build_library() -> Option<(Launch, Find)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let required = std::env::var("VMAFX_REQUIRE_GPU_COMPILERS").is_ok_and(|v| v == "1");
    let main = root.join("tests/device_emu/kernel_emu.cpp");
    if !main.exists() {
        assert!(!required, "no kernel_emu.cpp under {}", root.display());
        eprintln!("SKIP: the sources are not here ({})", root.display());
        return None;
    }
    const FLAGS: [&str; 8] = ["-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror", "-ffp-contract=off"];
    let version = match std::process::Command::new(&cxx).arg("--version").output() {
        Ok(o) if o.status.success() => o.stdout,
        Ok(o) => panic!("{cxx} --version failed: {}", o.status),
        Err(e) => {
            assert!(!required, "no C++ compiler ({cxx}): {e}");
            eprintln!("SKIP: no C++ compiler ({cxx}): {e}");
            return None;
        }
    };
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("kernels")).unwrap().map(|e| e.unwrap().path()).collect();
    sources.sort();
    // kernel_emu.cpp #includes tests/device_fns/checks.cu too.
    sources.push(root.join("tests/device_fns/checks.cu"));
    sources.push(main.clone());
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&(&cxx, &version, FLAGS), &mut hasher);
    for source in &sources {
        std::hash::Hash::hash(&(source.file_name(), std::fs::read(source).unwrap()), &mut hasher);
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernel-emu");
    let out = dir.join(format!("{:016x}.so", std::hash::Hasher::finish(&hasher)));
    if !out.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        // Built aside and renamed: test processes may build it at once.
        let aside = dir.join(format!("building-{}.so", std::process::id()));
        let status = std::process::Command::new(&cxx)
            .args(FLAGS)
            .arg("-I")
            .arg(root.join("kernels"))
            .arg(&main)
            .arg("-o")
            .arg(&aside)
            .status()
            .unwrap_or_else(|e| panic!("{cxx}: {e}"));
        assert!(status.success(), "{cxx} failed to build the kernel emulator: {status}");
        std::fs::rename(&aside, &out).unwrap();
    }
    // SAFETY: our own library, built from kernel_emu.cpp (above or by an
    // earlier test process, from the same sources).
    let lib = unsafe { libloading::Library::new(&out) }.unwrap();
    // SAFETY: kernel_emu.cpp defines vx_emu_launch with this signature.
    let launch = unsafe { *lib.get::<Launch>(b"vx_emu_launch\0").unwrap() };
    // SAFETY: kernel_emu.cpp defines vx_emu_find with this signature.
    let find = unsafe { *lib.get::<Find>(b"vx_emu_find\0").unwrap() };
    std::mem::forget(lib);
    Some((launch, find))
}

fn blocked(stream: u32, what: &str) -> vmafx::Error {
    vmafx::Error::Device(format!(
        "emulator: {what} would wait forever: stream {stream} is stuck behind an event nobody signals"
    ))
}

impl World {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new stream on this device.
    pub fn stream(self: &Arc<Self>) -> Emulator {
        let mut s = self.lock();
        s.next_stream += 1;
        let stream = s.next_stream;
        s.queues.insert(stream, VecDeque::new());
        Emulator { world: self.clone(), stream }
    }

    /// An event with a record pending that only [`World::signal`] completes
    /// (a producer's write, or a reader's read, still running).
    pub fn blocked_event(&self) -> u64 {
        let mut s = self.lock();
        s.next_handle += 1;
        let e = s.next_handle;
        s.events.insert(e, Event { queued: 1, ..Default::default() });
        e
    }

    /// Completes `event`'s pending records and runs what waited on it.
    pub fn signal(&self, event: u64) {
        let mut s = self.lock();
        let ev = s.events.get_mut(&event).expect("signal of an unknown event");
        ev.done = ev.queued;
        self.pump(&mut s);
    }

    /// Host-to-device copies queued on this device so far.
    pub fn uploads(&self) -> u64 {
        self.lock().uploads
    }

    /// Writes `bytes` at device address `dst` now (a producer's write).
    pub fn poke(&self, dst: u64, bytes: &[u8]) {
        let s = self.lock();
        check_span(&s, dst, bytes.len());
        // SAFETY: dst..dst + len lies in a live allocation (checked above).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
    }

    /// Reads `len` bytes at device address `src` now.
    pub fn peek(&self, src: u64, len: usize) -> Vec<u8> {
        let s = self.lock();
        check_span(&s, src, len);
        // SAFETY: as in poke.
        unsafe { std::slice::from_raw_parts(src as *const u8, len) }.to_vec()
    }

    /// A device array of `extent` holding `rows` (tight rows of
    /// `extent.row_bytes()`), and its handle.
    pub fn array(&self, extent: ArrayExtent, rows: &[u8]) -> u64 {
        assert_eq!(rows.len(), extent.row_bytes() * extent.height);
        let mut s = self.lock();
        let buf = vec![0u64; rows.len().div_ceil(8).max(1)];
        let ptr = buf.as_ptr() as u64;
        s.memory.insert(ptr, buf);
        // SAFETY: the buffer has rows.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(rows.as_ptr(), ptr as *mut u8, rows.len()) };
        s.next_handle += 1;
        let handle = s.next_handle;
        s.arrays.insert(handle, (ptr, extent));
        handle
    }

    /// Allocations live now (device arrays not counted): what a test
    /// compares before and after an owner goes, to see nothing leaked.
    pub fn allocations(&self) -> usize {
        let s = self.lock();
        s.memory.len() - s.arrays.len()
    }

    /// Makes `allocation_range` answer "cannot tell" (as HIP without
    /// `hipMemGetAddressRange`).
    pub fn hide_ranges(&self, hide: bool) {
        self.lock().hide_ranges = hide;
    }

    /// Runs queued work until every stream is empty or waits on an event
    /// whose record has not run.
    fn pump(&self, s: &mut State) {
        loop {
            let mut progress = false;
            let streams: Vec<u32> = s.queues.keys().copied().collect();
            for stream in streams {
                loop {
                    let runnable = match s.queues[&stream].front() {
                        None => false,
                        Some(Op::Wait { event, generation }) => {
                            s.events.get(event).is_none_or(|e| e.done >= *generation)
                        }
                        Some(_) => true,
                    };
                    if !runnable {
                        break;
                    }
                    let op = s.queues.get_mut(&stream).unwrap().pop_front().unwrap();
                    self.run(s, op);
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        if s.queues.values().all(VecDeque::is_empty) {
            s.graveyard.clear();
        }
    }

    fn run(&self, s: &mut State, op: Op) {
        match op {
            Op::Launch { f, grid, mut slots } => {
                let mut args: Vec<*mut c_void> =
                    slots.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
                let _one_at_a_time = LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
                // SAFETY: the slots hold the kernel's arguments (engine.rs).
                let rc = unsafe { (self.launch)(f, grid.0, grid.1, args.as_mut_ptr()) };
                assert_eq!(rc, 0);
            }
            Op::Copy { dst, src, row_bytes, rows } => {
                for y in 0..rows {
                    let (d, from) = (dst.ptr + (y * dst.pitch) as u64, src.ptr + (y * src.pitch) as u64);
                    check_span(s, d, row_bytes);
                    check_span(s, from, row_bytes);
                    // SAFETY: both rows lie in live allocations (checked).
                    unsafe { std::ptr::copy(from as *const u8, d as *mut u8, row_bytes) };
                }
            }
            Op::Write { dst, bytes } => {
                check_span(s, dst, bytes.len());
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
            }
            Op::Record { event, generation } => {
                if let Some(e) = s.events.get_mut(&event) {
                    e.done = e.done.max(generation);
                }
            }
            Op::Wait { .. } => {}
        }
    }

    fn queue(&self, stream: u32, op: Op) {
        let mut s = self.lock();
        s.queues.get_mut(&stream).unwrap().push_back(op);
        self.pump(&mut s);
    }
}

/// Panics unless addr..addr + len lies inside one live allocation.
fn check_span(s: &State, addr: u64, len: usize) {
    let ok = s
        .memory
        .range(..=addr)
        .next_back()
        .is_some_and(|(base, buf)| addr + len as u64 <= base + buf.len() as u64 * 8);
    assert!(ok, "emulator: {len} bytes at {addr:#x} are outside every allocation");
}

impl Emulator {
    pub fn world(&self) -> &Arc<World> {
        &self.world
    }

    fn idle(&self, what: &str) -> vmafx::Result<()> {
        let mut s = self.world.lock();
        self.world.pump(&mut s);
        if s.queues[&self.stream].is_empty() {
            Ok(())
        } else {
            Err(blocked(self.stream, what))
        }
    }
}

/// An allocation of the emulated device, freed on drop (kept in the
/// graveyard while queued work may still read it).
pub struct EmuBuffer {
    world: Arc<World>,
    ptr: u64,
    bytes: usize,
}

impl DeviceMemory for EmuBuffer {
    fn ptr(&self) -> u64 {
        self.ptr
    }
    fn bytes(&self) -> usize {
        self.bytes
    }
    fn into_raw(self: Box<Self>) -> u64 {
        let ptr = self.ptr;
        let this = std::mem::ManuallyDrop::new(*self);
        // SAFETY: `this` is never dropped: its world is dropped once, here.
        drop(unsafe { std::ptr::read(&this.world) });
        ptr
    }
}

impl Drop for EmuBuffer {
    fn drop(&mut self) {
        let mut s = self.world.lock();
        let buf = s.memory.remove(&self.ptr);
        assert!(buf.is_some(), "free of unknown {:#x}", self.ptr);
        if !s.queues.values().all(VecDeque::is_empty) {
            s.graveyard.push(buf.unwrap());
        }
    }
}

/// An event of the emulated device, destroyed on drop (its record is kept:
/// queued waits still refer to it).
pub struct EmuEvent {
    world: Arc<World>,
    handle: u64,
}

impl DeviceEvent for EmuEvent {
    fn handle(&self) -> u64 {
        self.handle
    }
}

impl Drop for EmuEvent {
    fn drop(&mut self) {
        let mut s = self.world.lock();
        let e = s.events.get_mut(&self.handle).expect("destroy of an unknown event");
        assert!(!e.destroyed, "event {:#x} destroyed twice", self.handle);
        e.destroyed = true;
    }
}

/// Any handle as an event of the emulated device: it keeps every event's
/// record (never reused) and answers an error for an unknown or destroyed
/// one, so no handle is unsafe to pass.
pub fn borrowed(event: u64) -> EventRef<'static> {
    // SAFETY: see above: the emulator checks every handle it is given.
    unsafe { EventRef::from_handle(event) }
}

impl Backend for Emulator {
    type Function = i32;
    type Buffer = EmuBuffer;
    type Event = EmuEvent;
    fn load(&mut self, kernel: &KernelSource) -> vmafx::Result<Vec<i32>> {
        Ok(kernel
            .entries
            .iter()
            .map(|entry| {
                let name = std::ffi::CString::new(*entry).unwrap();
                // SAFETY: a NUL-terminated name.
                let id = unsafe { (self.world.find)(name.as_ptr()) };
                assert!(id >= 0, "{}: no emulation for entry {entry} (add it to kernel_emu.cpp)", kernel.name);
                id
            })
            .collect())
    }
    fn alloc(&mut self, bytes: usize) -> vmafx::Result<EmuBuffer> {
        let bytes = bytes.max(1);
        let buf = vec![0xa5a5_a5a5_a5a5_a5a5u64; bytes.div_ceil(8)];
        let ptr = buf.as_ptr() as u64;
        self.world.lock().memory.insert(ptr, buf);
        Ok(EmuBuffer { world: self.world.clone(), ptr, bytes })
    }
    fn upload(&mut self, dst: u64, src: &[u8]) -> vmafx::Result<()> {
        self.world.lock().uploads += 1;
        self.world.queue(self.stream, Op::Write { dst, bytes: src.to_vec() });
        Ok(())
    }
    fn download(&mut self, dst: &mut [u8], src: u64) -> vmafx::Result<()> {
        self.idle("a download")?;
        dst.copy_from_slice(&self.world.peek(src, dst.len()));
        Ok(())
    }
    unsafe fn launch(&mut self, f: i32, grid: (u32, u32), args: &mut [*mut c_void]) -> vmafx::Result<()> {
        let slots = args
            .iter()
            .map(|&p| {
                let mut slot = [0u8; 8];
                // SAFETY: each argument points at an 8-byte slot (engine.rs Args).
                unsafe { std::ptr::copy_nonoverlapping(p.cast::<u8>(), slot.as_mut_ptr(), 8) };
                slot
            })
            .collect();
        self.world.queue(self.stream, Op::Launch { f, grid, slots });
        Ok(())
    }
    fn synchronize(&mut self) -> vmafx::Result<()> {
        self.idle("a stream synchronize")
    }
    fn memory(&self) -> DeviceMemoryId {
        DeviceMemoryId { kind: DeviceKind::Cuda, context: 0xe1e1 }
    }
    fn create_event(&mut self) -> vmafx::Result<EmuEvent> {
        let mut s = self.world.lock();
        s.next_handle += 1;
        let e = s.next_handle;
        s.events.insert(e, Event::default());
        Ok(EmuEvent { world: self.world.clone(), handle: e })
    }
    fn record_event(&mut self, event: EventRef<'_>) -> vmafx::Result<()> {
        let event = event.handle();
        let generation = {
            let mut s = self.world.lock();
            let e = s.events.get_mut(&event).filter(|e| !e.destroyed).ok_or_else(|| vmafx::Error::Device(format!("record of unknown event {event:#x}")))?;
            e.queued += 1;
            e.queued
        };
        self.world.queue(self.stream, Op::Record { event, generation });
        Ok(())
    }
    fn wait_event(&mut self, event: EventRef<'_>) -> vmafx::Result<()> {
        let event = event.handle();
        let generation = self
            .world
            .lock()
            .events
            .get(&event)
            .filter(|e| !e.destroyed)
            .map(|e| e.queued)
            .ok_or_else(|| vmafx::Error::Device(format!("wait on unknown event {event:#x}")))?;
        self.world.queue(self.stream, Op::Wait { event, generation });
        Ok(())
    }
    fn query_event(&mut self, event: EventRef<'_>) -> vmafx::Result<bool> {
        let event = event.handle();
        let mut s = self.world.lock();
        self.world.pump(&mut s);
        let e = s.events.get(&event).ok_or_else(|| vmafx::Error::Device(format!("query of unknown event {event:#x}")))?;
        Ok(e.done >= e.queued)
    }
    fn synchronize_event(&mut self, event: EventRef<'_>) -> vmafx::Result<()> {
        if self.query_event(event)? {
            Ok(())
        } else {
            Err(blocked(self.stream, "an event synchronize"))
        }
    }
    fn copy_2d(&mut self, dst: Pitched, src: Pitched, row_bytes: usize, rows: usize) -> vmafx::Result<()> {
        self.world.queue(self.stream, Op::Copy { dst, src, row_bytes, rows });
        Ok(())
    }
    fn copy_from_array(&mut self, dst: Pitched, array: ArrayRef, row_bytes: usize, rows: usize) -> vmafx::Result<()> {
        let array = array.handle();
        let (ptr, extent) = *self
            .world
            .lock()
            .arrays
            .get(&array)
            .ok_or_else(|| vmafx::Error::Device(format!("no array {array:#x}")))?;
        let src = Pitched { ptr, pitch: extent.row_bytes() };
        self.world.queue(self.stream, Op::Copy { dst, src, row_bytes, rows });
        Ok(())
    }
    fn allocation_range(&mut self, ptr: u64) -> vmafx::Result<Option<(u64, usize)>> {
        let s = self.world.lock();
        if s.hide_ranges {
            return Ok(None);
        }
        match s.memory.range(..=ptr).next_back() {
            Some((&base, buf)) if ptr < base + buf.len() as u64 * 8 => Ok(Some((base, buf.len() * 8))),
            _ => Err(vmafx::Error::Device(format!("emulator: {ptr:#x} is not device memory (CUDA_ERROR_NOT_FOUND)"))),
        }
    }
    fn array_extent(&mut self, array: ArrayRef) -> vmafx::Result<Option<ArrayExtent>> {
        let array = array.handle();
        match self.world.lock().arrays.get(&array) {
            Some((_, e)) => Ok(Some(*e)),
            None => Err(vmafx::Error::Device(format!("emulator: {array:#x} is not an array (CUDA_ERROR_INVALID_HANDLE)"))),
        }
    }
}
