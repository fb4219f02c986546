use std::time::Instant;
fn main() -> ferry::Result<()> {
    let world = ferry::init()?;
    let c = world.world();
    let iters = 100_000;
    for _ in 0..1000 {
        c.barrier()?;
    }
    let t = Instant::now();
    for _ in 0..iters {
        c.barrier()?;
    }
    let bar = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let mut x = [1.0f64];
    let op = ferry::Op::sum();
    for _ in 0..1000 {
        c.allreduce_in_place(&mut x, &op)?;
    }
    let t = Instant::now();
    for _ in 0..iters {
        c.allreduce_in_place(&mut x, &op)?;
    }
    let ar = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let mut big = vec![1.0f64; 1 << 17];
    let t = Instant::now();
    for _ in 0..200 {
        c.allreduce_in_place(&mut big, &op)?;
    }
    let arb = t.elapsed().as_secs_f64() * 1e6 / 200.0;
    let t = Instant::now();
    for _ in 0..iters {
        let mut r = c.ibarrier()?;
        r.wait()?;
    }
    let ibar = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    if c.rank() == 0 {
        println!("barrier {bar:.3} us  ibarrier {ibar:.3} us  allreduce8 {ar:.3} us  allreduce1M {arb:.1} us");
    }
    world.finalize()
}
