//! The dma-buf test bed shared by tests/import/dmabuf_vm.rs and tests/lavfi/dmabuf_graph.rs:
//! the driver that boots scripts/dmabuf-vm with the test binary, the guard
//! the `vm_*` tests start with, and the vgem/udmabuf uAPI a producer needs.
//!
//! Outside the VM a test binary's driver test boots the VM (Debian's 6.12
//! kernel under qemu) and runs its own `vm_*` tests inside, where
//! `VMAFX_IN_DMABUF_VM=1` is set; there the driver returns at once.

use nix::libc;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vmafx::OwnedPicture;

/// Set in the guest: the `vm_*` tests run only where it is.
pub const IN_VM: &str = "VMAFX_IN_DMABUF_VM";

/// How many times a VM that gave no result is booted. A TCG guest now and
/// then dies while booting (seen: an int3 in kernel text being patched, a
/// boot that outlives the timeout on a loaded host); a boot that ran the
/// tests is final, whatever they said.
const BOOTS: usize = 3;

/// How much slower than normal the tests run: `VMAFX_TEST_TIME_SCALE`
/// (default 1; scripts/valgrind sets 20, valgrind inside a TCG guest being
/// that much slower). The tests' fence timeouts are multiplied by it, so a
/// producer thread that signals after some milliseconds still comes first.
pub fn time_scale() -> u32 {
    std::env::var("VMAFX_TEST_TIME_SCALE").ok().and_then(|v| v.parse().ok()).filter(|&s| s >= 1).unwrap_or(1)
}

/// "gave up after 300ms" as vmafx words it for `ms` scaled by [`time_scale`]
/// (the exact number only when unscaled).
pub fn gave_up_after(ms: u64) -> String {
    if time_scale() == 1 { format!("gave up after {ms}ms") } else { String::from("gave up after") }
}

/// True inside the VM; panics if the VM lacks one of `devices` (a broken bed
/// must not pass as "skipped").
pub fn in_vm(devices: &[&str]) -> bool {
    if std::env::var_os(IN_VM).is_none() {
        return false;
    }
    for d in devices {
        assert!(std::path::Path::new(d).exists(), "inside the dmabuf VM but {d} is missing");
    }
    true
}

/// What the driver runs in the VM: this binary's tests whose names start
/// with `filter`, `threads` at a time; `expected` of them must pass.
pub struct VmRun<'a> {
    pub filter: &'a str,
    pub threads: usize,
    pub expected: usize,
    /// Extra `VAR=VALUE` for the guest (the host's root is the guest's, so
    /// paths are the same there).
    pub env: Vec<String>,
}

/// The driver: boots the VM (up to [`BOOTS`] times while it gives no
/// result) and fails unless `run.expected` tests passed there. Returns at
/// once inside the VM. A VM that cannot start fails the test under
/// `VMAFX_REQUIRE_VM=1` (scripts/test and scripts/planted-defects set it)
/// and is reported as SKIPPED otherwise.
pub fn run_in_vm(run: VmRun) {
    run_in_vm_with(run, &[]);
}

/// [`run_in_vm`] with more options of scripts/dmabuf-vm (`--pci-display`).
pub fn run_in_vm_with(run: VmRun, vm_options: &[&str]) {
    if std::env::var_os(IN_VM).is_some() {
        return;
    }
    // scripts/planted-defects runs a module's host-side tests first, with the
    // boot deferred: the driver only names itself (its test's name, which
    // libtest gives its thread) and passes; the script boots the VM for the
    // named drivers only when every host-side test passed.
    // (With one test thread libtest may run tests on "main": then no name, no deferral.)
    let thread = std::thread::current();
    let test_name = thread.name().filter(|n| *n != "main");
    if let (Some(file), Some(name)) = (std::env::var_os("VMAFX_VM_DEFER"), test_name) {
        let mut names = std::fs::OpenOptions::new().append(true).create(true).open(&file).unwrap();
        std::io::Write::write_all(&mut names, format!("{name}\n").as_bytes()).unwrap();
        eprintln!("VM boot deferred (VMAFX_VM_DEFER): {name}");
        return;
    }
    let require = std::env::var("VMAFX_REQUIRE_VM").is_ok_and(|v| v == "1");
    let exe = std::env::current_exe().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dmabuf-vm");
    let t0 = Instant::now();
    let mut boots = 0;
    let (code, stdout) = loop {
        boots += 1;
        let mut cmd = std::process::Command::new(&script);
        cmd.args(["--hostroot", "-t", "400", "-e", &format!("{IN_VM}=1")]).args(vm_options);
        for e in &run.env {
            cmd.arg("-e").arg(e);
        }
        cmd.arg("--").arg(&exe).args([run.filter, "--test-threads", &run.threads.to_string(), "--nocapture"]);
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) if !require => {
                eprintln!("SKIPPED: cannot run {}: {e}", script.display());
                return;
            }
            Err(e) => panic!("cannot run {}: {e}", script.display()),
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{stdout}\n{stderr}\n(VM boot {boots}: {:.1} s since the first)", t0.elapsed().as_secs_f64());
        // The tests ran when the harness printed its "running N tests" line.
        let ran = stdout.contains("running ") || stdout.contains("test result:");
        if !ran && boots < BOOTS {
            eprintln!("the VM gave no result (exit {:?}); booting it again", out.status.code());
            continue;
        }
        break (out.status.code(), stdout);
    };
    let ran = stdout.contains("running ") || stdout.contains("test result:");
    match code {
        Some(0) => {
            let want = format!("test result: ok. {} passed", run.expected);
            assert!(stdout.contains(&want), "the VM ran other than the {} {}* tests", run.expected, run.filter);
        }
        _ if ran => panic!("the tests in the dmabuf VM failed (exit {code:?})"),
        _ if require => panic!("the dmabuf VM gave no result in {boots} boots (exit {code:?}) and VMAFX_REQUIRE_VM=1"),
        _ => eprintln!("SKIPPED: the dmabuf VM could not start (exit {code:?}); set VMAFX_REQUIRE_VM=1 to fail"),
    }
}

// ------------------------------------------------- vgem and udmabuf uAPI

#[repr(C)]
#[derive(Default)]
pub struct CreateDumb {
    pub height: u32,
    pub width: u32,
    pub bpp: u32,
    pub flags: u32,
    pub handle: u32,
    pub pitch: u32,
    pub size: u64,
}
#[repr(C)]
#[derive(Default)]
pub struct PrimeHandle {
    pub handle: u32,
    pub flags: u32,
    pub fd: i32,
}
#[repr(C)]
#[derive(Default)]
pub struct GemClose {
    pub handle: u32,
    pub pad: u32,
}
#[repr(C)]
#[derive(Default)]
pub struct VgemFenceAttach {
    pub handle: u32,
    pub flags: u32,
    pub out_fence: u32,
    pub pad: u32,
}
#[repr(C)]
#[derive(Default)]
pub struct VgemFenceSignal {
    pub fence: u32,
    pub flags: u32,
}
#[repr(C)]
#[derive(Default)]
pub struct UdmabufCreate {
    pub memfd: u32,
    pub flags: u32,
    pub offset: u64,
    pub size: u64,
}
pub const DRM_IOCTL_MODE_CREATE_DUMB: libc::c_ulong = 0xc020_64b2;
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: libc::c_ulong = 0xc00c_642d;
pub const DRM_IOCTL_GEM_CLOSE: libc::c_ulong = 0x4008_6409;
pub const DRM_IOCTL_VGEM_FENCE_ATTACH: libc::c_ulong = 0xc010_6441;
pub const DRM_IOCTL_VGEM_FENCE_SIGNAL: libc::c_ulong = 0x4008_6442;
pub const UDMABUF_CREATE: libc::c_ulong = 0x4018_7542;
/// `DMA_BUF_IOCTL_EXPORT_SYNC_FILE`.
pub const DMA_BUF_IOCTL_EXPORT_SYNC_FILE: libc::c_ulong = 0xc008_6202;
pub const VGEM_FENCE_WRITE: u32 = 1;
/// `I915_FORMAT_MOD_X_TILED`: fourcc_mod_code(INTEL, 1).
pub const I915_FORMAT_MOD_X_TILED: u64 = (1 << 56) | 1;

pub fn ioctl<T>(fd: i32, req: libc::c_ulong, arg: &mut T) -> std::io::Result<()> {
    // SAFETY: test producer; `arg` is the #[repr(C)] struct the ioctl expects.
    let rc = unsafe { libc::ioctl(fd, req, arg as *mut T) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

// ------------------------------------------------------------ layouts

/// Writes plane `i` of `pic` at `offset` with `pitch` (16-bit samples as
/// little-endian, shifted up by `shift` for MSB-aligned formats).
pub fn write_plane(dst: &mut [u8], pic: &OwnedPicture, i: usize, offset: usize, pitch: usize, shift: u32) {
    let view = pic.view();
    let p = view.plane(i);
    for y in 0..p.height() {
        let row = &mut dst[offset + y * pitch..];
        for x in 0..p.width() {
            if p.bytes_per_sample() == 1 {
                row[x] = p.sample(x, y) as u8;
            } else {
                let v = (p.sample(x, y) << shift) as u16;
                row[2 * x..2 * x + 2].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

/// Writes chroma planes 1 and 2 of `pic` interleaved (U, V) at `offset`.
pub fn write_interleaved(dst: &mut [u8], pic: &OwnedPicture, offset: usize, pitch: usize, shift: u32) {
    let view = pic.view();
    let (u, v) = (view.plane(1), view.plane(2));
    let bps = u.bytes_per_sample();
    for y in 0..u.height() {
        let row = &mut dst[offset + y * pitch..];
        for x in 0..u.width() {
            for (k, p) in [u, v].iter().enumerate() {
                let i = 2 * x + k;
                if bps == 1 {
                    row[i] = p.sample(x, y) as u8;
                } else {
                    row[2 * i..2 * i + 2].copy_from_slice(&((p.sample(x, y) << shift) as u16).to_le_bytes());
                }
            }
        }
    }
}

// ------------------------------------------------- producer buffers

/// The vgem device (/dev/dri/card0), shared by a test's buffers.
pub struct Vgem(pub OwnedFd);

impl Vgem {
    pub fn open() -> Arc<Vgem> {
        let path = c"/dev/dri/card0";
        // SAFETY: plain open of a device node.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        assert!(fd >= 0, "open /dev/dri/card0: {}", std::io::Error::last_os_error());
        // SAFETY: a fresh fd we own.
        Arc::new(Vgem(unsafe { OwnedFd::from_raw_fd(fd) }))
    }
}

/// A writable buffer: its dma-buf fd and a read-write mapping.
pub struct Buffer {
    pub fd: OwnedFd,
    ptr: *mut u8,
    pub len: usize,
    vgem: Option<(Arc<Vgem>, u32)>,
}

// SAFETY: the producer writes only from the owning test thread.
unsafe impl Send for Buffer {}

impl Buffer {
    pub fn map(fd: OwnedFd, len: usize, vgem: Option<(Arc<Vgem>, u32)>) -> Buffer {
        // SAFETY: a fresh shared RW mapping of a dma-buf of at least `len` bytes.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        assert!(ptr != libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
        Buffer { fd, ptr: ptr as *mut u8, len, vgem }
    }

    /// A vgem dumb buffer of at least `len` bytes, exported as a dma-buf.
    pub fn vgem(dev: &Arc<Vgem>, len: usize) -> Buffer {
        let mut c = CreateDumb { width: 4096, height: len.div_ceil(4096) as u32, bpp: 8, ..Default::default() };
        ioctl(dev.0.as_raw_fd(), DRM_IOCTL_MODE_CREATE_DUMB, &mut c).expect("CREATE_DUMB");
        let mut p = PrimeHandle { handle: c.handle, flags: (libc::O_CLOEXEC | libc::O_RDWR) as u32, fd: -1 };
        ioctl(dev.0.as_raw_fd(), DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut p).expect("PRIME_HANDLE_TO_FD");
        // SAFETY: a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(p.fd) };
        Buffer::map(fd, c.size as usize, Some((dev.clone(), c.handle)))
    }

    /// A udmabuf of at least `len` bytes over a sealed memfd.
    pub fn udmabuf(len: usize) -> Buffer {
        let len = len.div_ceil(4096) * 4096;
        // SAFETY: plain syscalls on fds we own; results checked.
        unsafe {
            let memfd = libc::memfd_create(c"vmafx-frame".as_ptr(), libc::MFD_ALLOW_SEALING | libc::MFD_CLOEXEC);
            assert!(memfd >= 0);
            let memfd = OwnedFd::from_raw_fd(memfd);
            assert_eq!(libc::ftruncate(memfd.as_raw_fd(), len as i64), 0);
            assert_eq!(libc::fcntl(memfd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK), 0);
            let dev = libc::open(c"/dev/udmabuf".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            assert!(dev >= 0, "open /dev/udmabuf");
            let dev = OwnedFd::from_raw_fd(dev);
            let mut arg = UdmabufCreate { memfd: memfd.as_raw_fd() as u32, flags: 1, offset: 0, size: len as u64 };
            let fd = libc::ioctl(dev.as_raw_fd(), UDMABUF_CREATE, &mut arg);
            assert!(fd >= 0, "UDMABUF_CREATE: {}", std::io::Error::last_os_error());
            Buffer::map(OwnedFd::from_raw_fd(fd), len, None)
        }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: our RW mapping of `len` bytes, written from one thread.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Attaches an unsignalled WRITE fence (what a GPU writer would hold).
    pub fn attach_fence(&self) -> Fence {
        let (dev, handle) = self.vgem.as_ref().expect("fences need a vgem buffer");
        let mut a = VgemFenceAttach { handle: *handle, flags: VGEM_FENCE_WRITE, ..Default::default() };
        ioctl(dev.0.as_raw_fd(), DRM_IOCTL_VGEM_FENCE_ATTACH, &mut a).expect("VGEM_FENCE_ATTACH");
        Fence { dev: dev.clone(), id: a.out_fence }
    }

    pub fn dup_fd(&self) -> OwnedFd {
        self.fd.try_clone().expect("dup")
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: unmaps our own mapping once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

pub struct Fence {
    dev: Arc<Vgem>,
    pub id: u32,
}

// SAFETY: only an fd number (owned by the Arc) and an id.
unsafe impl Send for Fence {}

impl Fence {
    pub fn signal(&self) {
        let mut s = VgemFenceSignal { fence: self.id, flags: 0 };
        ioctl(self.dev.0.as_raw_fd(), DRM_IOCTL_VGEM_FENCE_SIGNAL, &mut s).expect("VGEM_FENCE_SIGNAL");
    }
    /// Signals after `delay` from another thread.
    pub fn signal_later(self, delay: Duration) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            self.signal();
        })
    }
}


/// Every (feature, frame) value of `c` after its flush, as bits, sorted by
/// name: what the dma-buf tests compare with the software run.
pub fn all_values(c: &mut vmafx::Context) -> Vec<(String, Vec<Option<u64>>)> {
    c.flush().unwrap();
    let col = c.collector();
    let mut names: Vec<String> = col.names().to_vec();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let v = col.column(&n).unwrap().iter().map(|x| x.map(f64::to_bits)).collect();
            (n, v)
        })
        .collect()
}
