mod common;
use std::sync::Arc;
use common::{reference, synth};
use vmafx::engine::{Context, ContextConfig};
use vmafx::feature::FeatureOptions;
use vmafx::picture::Chroma;

#[test]
fn motion_matches_libvmaf() {
    for (bits, w, h) in [(8u8, 67usize, 45usize), (10, 64, 36), (16, 33, 20)] {
        let frames = synth::clip(Chroma::Yuv420, bits, w, h, 6, 42);
        let mut ctx = Context::new(ContextConfig { threads: 2, ..Default::default() }).unwrap();
        ctx.use_feature("motion", FeatureOptions::new()).unwrap();
        for (r, d) in &frames {
            ctx.push(Arc::new(r.clone()), Arc::new(d.clone())).unwrap();
        }
        ctx.flush().unwrap();
        let names: Vec<String> = ctx.collector().names().to_vec();
        let spec = reference::RefSpec { features: vec![("motion".into(), vec![])], ..Default::default() };
        let r = reference::run(&frames, &spec, &names);
        println!("log names {:?}", r.log_names);
        for n in &names {
            for i in 0..frames.len() as u32 {
                let ours = ctx.score_at(n, i);
                let theirs = r.values[n][i as usize];
                assert_eq!(ours.map(f64::to_bits), theirs.map(f64::to_bits), "{bits} bit {n} frame {i}: {ours:?} vs {theirs:?}");
            }
        }
    }
}
