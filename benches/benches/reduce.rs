//! Criterion benchmarks of the local reduction kernels
//! ([`ferry_core::coll::reduce::reduce_into`]): `inout[i] = input[i] op
//! inout[i]` over two buffers of `size` bytes, throughput counted as the
//! `size` bytes reduced (the kernel reads 2 × size and writes size).
//!
//! - `reduce/{sum_f64,sum_i32,max_f32,bxor_u64}/SIZE`: the element-wise
//!   kernels on 8-aligned buffers, the usual case, which should vectorise
//!   and run at memory (or cache) speed.
//! - `reduce/sum_f64_misaligned/SIZE`: the same sum with both buffers one
//!   byte off alignment: the unaligned fallback.
//! - `reduce/minloc_f64i32/SIZE`: the pair kernel, which compares and
//!   branches per element.
//! - `reduce/copy/SIZE`: `copy_from_slice` of the same buffers, the
//!   yardstick: a kernel at memory speed is within a small factor of it (it
//!   moves 3 × size bytes where the copy moves 2 × size).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferry_core::coll::reduce::{reduce_into, Datatype, ReduceOp};

const SIZES: [usize; 4] = [8, 4 << 10, 64 << 10, 1 << 20];

/// `size` bytes starting `skew` bytes past an 8-aligned address, filled with
/// `fill`.
struct Placed {
    bytes: Vec<u8>,
    start: usize,
    size: usize,
}

impl Placed {
    fn new(size: usize, skew: usize, fill: u8) -> Placed {
        let bytes = vec![fill; size + 16];
        let start = (8 - bytes.as_ptr() as usize % 8) % 8 + skew;
        Placed { bytes, start, size }
    }

    fn get(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.size]
    }

    fn get_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + self.size]
    }
}

fn reduce(c: &mut Criterion) {
    let mut group = c.benchmark_group("reduce");
    let cases = [
        ("sum_f64", ReduceOp::Sum, Datatype::F64, 0, &SIZES[..]),
        ("sum_i32", ReduceOp::Sum, Datatype::I32, 0, &SIZES[..]),
        ("max_f32", ReduceOp::Max, Datatype::F32, 0, &SIZES[..]),
        ("bxor_u64", ReduceOp::Bxor, Datatype::U64, 0, &SIZES[..]),
        (
            "sum_f64_misaligned",
            ReduceOp::Sum,
            Datatype::F64,
            1,
            &SIZES[2..],
        ),
        (
            "minloc_f64i32",
            ReduceOp::MinLoc,
            Datatype::F64I32,
            0,
            &SIZES[2..],
        ),
    ];
    for (name, op, dtype, skew, sizes) in cases {
        for &size in sizes {
            // 0x3f bytes: about 0.75 as f32 and 4.8e-4 as f64. The sums
            // grow by that much per iteration: far from overflow in any run.
            let input = Placed::new(size, skew, 0x3f);
            let mut inout = Placed::new(size, skew, 0x3f);
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_function(BenchmarkId::new(name, size), |b| {
                b.iter(|| {
                    reduce_into(&op, dtype, black_box(input.get()), inout.get_mut())
                        .expect("reduce")
                })
            });
        }
    }
    for size in &SIZES[2..] {
        let input = Placed::new(*size, 0, 0x3f);
        let mut inout = Placed::new(*size, 0, 0);
        group.throughput(Throughput::Bytes(*size as u64));
        group.bench_function(BenchmarkId::new("copy", size), |b| {
            b.iter(|| inout.get_mut().copy_from_slice(black_box(input.get())))
        });
    }
    group.finish();
}

criterion_group!(benches, reduce);
criterion_main!(benches);
