//! `Op::on_bytes`: reductions on raw bytes that the engine reduces as the
//! named datatype (the constructor `ferry-mpi` uses for C datatypes).

use ferry::ferry_core::coll::{Datatype, ReduceOp, UserOp};
use ferry::{Config, Op};

#[test]
fn byte_ops_reduce_whole_elements_of_their_datatype() {
    let world = Config::default().init().expect("singleton init");
    let comm = world.world();
    let values: Vec<u8> = [3i32, -4, 5].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut out = vec![0u8; values.len()];
    comm.allreduce(
        &values,
        &mut out,
        &Op::on_bytes(ReduceOp::Sum, Datatype::I32),
    )
    .unwrap();
    assert_eq!(out, values, "one member: the sum is the input");
    // Not a whole number of i32s: refused, nothing written.
    let mut short = vec![7u8; 5];
    let err = comm
        .allreduce(
            &values[..5],
            &mut short,
            &Op::on_bytes(ReduceOp::Sum, Datatype::I32),
        )
        .unwrap_err();
    assert!(err.to_string().contains("whole"), "{err}");
    // A user op on 3-byte elements keeps to element boundaries.
    let op = Op::on_bytes(
        ReduceOp::User(UserOp::new(
            |i: &[u8], io: &mut [u8]| {
                assert_eq!(i.len() % 3, 0);
                for (a, b) in i.iter().zip(io.iter_mut()) {
                    *b = b.wrapping_add(*a);
                }
            },
            true,
        )),
        Datatype::Opaque { size: 3 },
    );
    let mut buf = vec![1u8; 9];
    comm.allreduce_in_place(&mut buf, &op).unwrap();
    assert_eq!(buf, vec![1u8; 9]);
    assert!(op.is_commutative());
    world.finalize().unwrap();
}
