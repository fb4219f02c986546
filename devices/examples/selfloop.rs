use std::time::Instant;
fn main() {
    let mut config = ferry::Config::from_env().unwrap();
    config.thread_level = ferry::ThreadLevel::Single;
    let world = config.init().unwrap();
    let comm = world.world();
    let me = world.rank();
    let s = [0u8; 8];
    let mut r = [0u8; 8];
    let n: u32 = std::env::var("N").map_or(2_000_000, |v| v.parse().unwrap());
    for _ in 0..1000 {
        comm.send(&s, me, 1).unwrap();
        comm.recv(&mut r, me, 1).unwrap();
    }
    let t = Instant::now();
    for _ in 0..n {
        comm.send(&s, me, 1).unwrap();
        comm.recv(&mut r, me, 1).unwrap();
    }
    println!(
        "rust self send+recv: {:.1} ns",
        t.elapsed().as_nanos() as f64 / f64::from(n)
    );
    world.finalize().unwrap();
}
