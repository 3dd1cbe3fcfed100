//! The CPU as a [`Device`]: the scalar reference kernels, the ones every
//! GPU twin is compared with.

use super::{Device, DeviceInfo, DeviceKind, FenceKind, MemoryKind};
use crate::feature::vif::{self, VifSums};
use crate::feature::adm::{self, AdmParams, AdmSums};
use crate::feature::{motion, psnr};
use crate::picture::PlaneView;
use crate::Result;

pub struct CpuDevice {
    info: DeviceInfo,
    y_row: Vec<i32>,
}

impl CpuDevice {
    pub fn new() -> Self {
        let info = DeviceInfo {
            kind: DeviceKind::Cpu,
            index: 0,
            name: "CPU (scalar reference)".into(),
            arch: "scalar".into(),
            memory_bytes: 0,
            memory_kinds: vec![MemoryKind::Host],
            fence_kinds: vec![FenceKind::None],
        };
        Self {
            info,
            y_row: Vec::new(),
        }
    }
}

impl Default for CpuDevice {
    fn default() -> Self {
        Self::new()
    }
}

impl Device for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn motion_sad(&mut self, prev: &PlaneView, cur: &PlaneView, bits: u32) -> Result<u64> {
        Ok(motion::sad_scalar(prev, cur, bits, &mut self.y_row))
    }
    fn psnr_sse(&mut self, r: &PlaneView, d: &PlaneView, w: usize, h: usize) -> Result<u64> {
        Ok(if r.bytes_per_sample() == 1 {
            psnr::sse_u8(r, d, w, h)
        } else {
            psnr::sse_u16(r, d, w, h)
        })
    }
    fn vif_sums(
        &mut self,
        r: &PlaneView,
        d: &PlaneView,
        bpc: u32,
        enhn_gain_limit: f64,
        skip_scale0: bool,
    ) -> Result<[VifSums; 4]> {
        vif::sums_scalar(r, d, bpc, enhn_gain_limit, skip_scale0)
    }
    fn adm_sums(&mut self, r: &PlaneView, d: &PlaneView, params: &AdmParams) -> Result<AdmSums> {
        adm::sums_scalar(params, r, d)
    }
}
