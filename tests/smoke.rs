use vfsmc::check::{Check, Verdict};
use vfsmc::engine::EngineKind;

#[test]
fn mp_litmus_on_loom() {
    let m = vfsmc_specs::model("litmus").unwrap();
    let s = m.scenario("litmus").unwrap();
    for v in m.variants() {
        for e in [
            EngineKind::Loom,
            EngineKind::Pct,
            EngineKind::Random,
            EngineKind::Dfs,
            EngineKind::Stress,
        ] {
            let r = Check::new(m, v, s, e).run().unwrap();
            println!("{}", r.text());
        }
    }
    let v = m.variant("MP+poonceonces").unwrap();
    let r = Check::new(m, v, s, EngineKind::Loom).run().unwrap();
    assert_eq!(r.verdict, Verdict::Violates);
}
