//! Scoring the same clip on two contexts (CPU and a device) and comparing
//! everything they wrote: per-frame values, aggregates and pooled scores,
//! as f64 bits. Shared by tests/device/emu.rs (emulated lanes) and
//! tests/device/gpu_context.rs (a GPU); included by `#[path]` so those test
//! binaries do not link libvmaf.

use std::sync::Arc;
use vmafx::{Context, FeatureOptions, OwnedPicture, PictureSource, PoolMethod};

pub type Clip = Vec<(OwnedPicture, OwnedPicture)>;

/// The features with device twins: motion (with its debug value) and PSNR
/// with MSE and the whole-stream APSNR; `motion` false for PSNR alone
/// (pictures below 3x3).
pub fn add_features(ctx: &mut Context, motion: bool) -> vmafx::Result<()> {
    use vmafx::internals::feature::{motion, psnr};
    if motion {
        let mut o = FeatureOptions::new();
        o.set_text(motion::DESCRIPTOR.options, "debug", "true")?;
        ctx.use_feature("motion", o)?;
    }
    let mut o = FeatureOptions::new();
    o.set_text(psnr::DESCRIPTOR.options, "enable_mse", "true")?;
    o.set_text(psnr::DESCRIPTOR.options, "enable_apsnr", "true")?;
    ctx.use_feature("psnr", o)
}

/// Scores `frames` on `ctx`, each picture as `picture(p, frame, which)`
/// makes it ("reference" or "distorted").
pub fn score(
    mut ctx: Context,
    frames: &Clip,
    motion: bool,
    mut picture: impl FnMut(&OwnedPicture, usize, &str) -> Arc<dyn PictureSource>,
) -> vmafx::Result<Context> {
    add_features(&mut ctx, motion)?;
    for (i, (r, d)) in frames.iter().enumerate() {
        ctx.push(picture(r, i, "reference"), picture(d, i, "distorted"))?;
    }
    ctx.flush()?;
    Ok(ctx)
}

/// A host picture.
pub fn host(p: &OwnedPicture, _: usize, _: &str) -> Arc<dyn PictureSource> {
    Arc::new(p.clone())
}

/// Every value, aggregate and pooled score of `dev` equals `cpu`'s, as
/// bits; returns how many were compared.
pub fn assert_same(cpu: &Context, dev: &Context, what: &str) -> usize {
    let (c, d) = (cpu.collector(), dev.collector());
    // As sets: with worker threads a context lists libvmaf's TEMPORAL
    // features first (as libvmaf does), so contexts of different thread
    // counts differ in order only; tests/golden/log_order.rs holds the order.
    let sorted = |n: &[String]| {
        let mut n = n.to_vec();
        n.sort();
        n
    };
    assert_eq!(sorted(c.names()), sorted(d.names()), "{what}: feature names");
    assert_eq!(cpu.frames_final(), dev.frames_final(), "{what}: final frames");
    let last = cpu.frames_in() - 1;
    let mut values = 0;
    for name in c.names() {
        let (a, b) = (c.column(name).unwrap(), d.column(name).unwrap());
        assert_eq!(a.len(), b.len(), "{what}: {name}: frames");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert_eq!(
                x.map(f64::to_bits),
                y.map(f64::to_bits),
                "{what}: {name} at frame {i}: CPU {x:?}, device {y:?}"
            );
            values += 1;
        }
        for method in PoolMethod::ALL {
            let (x, y) = (cpu.pooled(name, method, 0, last), dev.pooled(name, method, 0, last));
            assert_eq!(
                x.as_ref().ok().map(|v| v.to_bits()),
                y.as_ref().ok().map(|v| v.to_bits()),
                "{what}: {name} pooled {method:?}: CPU {x:?}, device {y:?}"
            );
            values += 1;
        }
    }
    let bits = |v: &[(String, f64)]| v.iter().map(|(n, x)| (n.clone(), x.to_bits())).collect::<Vec<_>>();
    assert_eq!(bits(c.aggregates()), bits(d.aggregates()), "{what}: aggregates");
    values + c.aggregates().len()
}

/// The built-in models `models` ((version, name)) on `ctx`: the cases a
/// device context scores as the CPU does (with the models' features).
pub fn use_models(ctx: &mut Context, models: &[(&str, &str)]) {
    use vmafx::{Model, ModelConfig};
    for (version, name) in models {
        let cfg = ModelConfig { name: Some(name.to_string()), ..Default::default() };
        ctx.use_model(Model::builtin(version, &cfg).unwrap()).unwrap();
    }
}

/// float_ssim with its l/c/s terms at `scale` (0: libvmaf's automatic
/// decimation) and, with `db`, its clipped dB forms; float_ms_ssim with its
/// l/c/s terms too when `ms` (it needs 176 pixels a side).
pub fn use_ssim(ctx: &mut Context, scale: u32, db: bool, ms: bool) {
    use vmafx::internals::feature::ssim::{MS_SSIM_DESCRIPTOR, SSIM_DESCRIPTOR};
    let mut o = FeatureOptions::new();
    o.set_text(SSIM_DESCRIPTOR.options, "enable_lcs", "true").unwrap();
    o.set_text(SSIM_DESCRIPTOR.options, "scale", &scale.to_string()).unwrap();
    if db {
        o.set_text(SSIM_DESCRIPTOR.options, "enable_db", "true").unwrap();
        o.set_text(SSIM_DESCRIPTOR.options, "clip_db", "true").unwrap();
    }
    ctx.use_feature("float_ssim", o).unwrap();
    if ms {
        let mut o = FeatureOptions::new();
        o.set_text(MS_SSIM_DESCRIPTOR.options, "enable_lcs", "true").unwrap();
        ctx.use_feature("float_ms_ssim", o).unwrap();
    }
}

/// speed_chroma with the v1.0.16 models' noise settings (`speed_nn_floor`
/// 0.1, `speed_sigma_nn` 0.19: with the defaults small synthetic pictures
/// score 0), kernel scale `kernelscale`, weight mode `weight_mode`, and the
/// `extra` options.
pub fn use_speed_chroma(ctx: &mut Context, kernelscale: &str, weight_mode: &str, extra: &[(&str, &str)]) {
    use vmafx::internals::feature::speed::CHROMA_DESCRIPTOR;
    let mut o = FeatureOptions::new();
    let noise = [("speed_nn_floor", "0.1"), ("speed_sigma_nn", "0.19")];
    let scale = [("speed_kernelscale", kernelscale), ("speed_weight_var_mode", weight_mode)];
    for (k, v) in noise.iter().chain(&scale).chain(extra) {
        o.set_text(CHROMA_DESCRIPTOR.options, k, v).unwrap();
    }
    ctx.use_feature("speed_chroma", o).unwrap();
}
