//! The device interface a metric's GPU twin is written against
//! (`src/feature/<metric>/gpu.rs`): a lane's kernels, scratch buffers,
//! uploads, launches and read-backs, and nothing of the driver behind it.
//! [`KernelRunner`] provides it on any [`Backend`]: a CUDA or HIP lane, the
//! kernel emulator of the tests, a context's lane ([`super::ErasedRunner`]).

use super::backend::{Args, Backend, DevPlane, DeviceMemory, DeviceScalar, KernelRunner, Scratch};
use super::kernels::KernelSet;
use crate::picture::PlaneView;
use crate::Result;

/// What a device twin uses of a lane.
pub trait TwinLane: Sized {
    /// A loaded kernel, taken by name through a [`KernelSet`].
    type Kernel: Copy;
    /// Device memory of this lane, freed on drop.
    type Buffer: DeviceMemory + 'static;

    /// The kernels of set `K` (compiled and loaded on first use).
    fn kernels<K: KernelSet<Self::Kernel>>(&mut self) -> Result<K>;
    /// `slot`'s address, grown first to at least `bytes`.
    fn grow(&mut self, slot: &mut Scratch<Self::Buffer>, bytes: usize) -> Result<u64>;
    /// A read-only table in `slot`, uploaded on the first call only.
    fn table(&mut self, slot: &mut Scratch<Self::Buffer>, data: &[u8]) -> Result<u64>;
    /// `data` copied into `slot` (grown first) on every call, in stream
    /// order (kernels queued before it still read what was there).
    fn upload_bytes(&mut self, slot: &mut Scratch<Self::Buffer>, data: &[u8]) -> Result<u64>;
    /// A host plane copied into `slot`, rows at the host stride.
    fn upload_plane(&mut self, slot: &mut Scratch<Self::Buffer>, plane: &PlaneView) -> Result<DevPlane>;
    /// Launches `f` on a (grid_x, grid_y) grid of `BLOCK`-thread blocks.
    ///
    /// # Safety
    /// `args` match `f`'s parameter list in kernels/ (types and order), and
    /// every pointer among them spans what `f` touches for this grid.
    unsafe fn launch(&mut self, f: Self::Kernel, grid: (u32, u32), args: Args) -> Result<()>;
    /// `count` values of `T` at `src`, read after the work queued so far.
    fn download_vec<T: DeviceScalar>(&mut self, src: u64, count: usize) -> Result<Vec<T>>;
    /// Runs `f` with the lane's scratch of type `S` (a twin's own struct of
    /// [`Scratch`] buffers, kept for the lane's life).
    fn with_scratch<S: Default + Send + 'static, R>(&mut self, f: impl FnOnce(&mut Self, &mut S) -> R) -> R;
}

impl<B: Backend> TwinLane for KernelRunner<B> {
    type Kernel = B::Function;
    type Buffer = B::Buffer;

    fn kernels<K: KernelSet<B::Function>>(&mut self) -> Result<K> {
        KernelRunner::kernels(self)
    }
    fn grow(&mut self, slot: &mut Scratch<B::Buffer>, bytes: usize) -> Result<u64> {
        self.scratch(slot, bytes)
    }
    fn table(&mut self, slot: &mut Scratch<B::Buffer>, data: &[u8]) -> Result<u64> {
        slot.table(self.backend_mut(), data)
    }
    fn upload_bytes(&mut self, slot: &mut Scratch<B::Buffer>, data: &[u8]) -> Result<u64> {
        let p = self.scratch(slot, data.len())?;
        self.backend_mut().upload(p, data)?;
        Ok(p)
    }
    fn upload_plane(&mut self, slot: &mut Scratch<B::Buffer>, plane: &PlaneView) -> Result<DevPlane> {
        KernelRunner::upload_plane(self, slot, plane)
    }
    unsafe fn launch(&mut self, f: B::Function, grid: (u32, u32), args: Args) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { KernelRunner::launch(self, f, grid, args) }
    }
    fn download_vec<T: DeviceScalar>(&mut self, src: u64, count: usize) -> Result<Vec<T>> {
        KernelRunner::download_vec(self, src, count)
    }
    fn with_scratch<S: Default + Send + 'static, R>(&mut self, f: impl FnOnce(&mut Self, &mut S) -> R) -> R {
        KernelRunner::with_scratch(self, f)
    }
}
