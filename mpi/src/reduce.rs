//! Which of ferry's reductions serves a predefined MPI op on a predefined
//! datatype: the core `ReduceOp` and `Datatype` pair that
//! `ferry::Op::on_bytes` runs on the program's bytes.
//!
//! MPI's groups decide what is defined (MPI 4.1 §6.9.2): `SUM`, `PROD`,
//! `MIN`, `MAX` on integers and floating point (`SUM` and `PROD` on
//! complex numbers too); the logical ops on integers, C's `bool` and
//! Fortran's `LOGICAL`s; the bitwise ops on integers and `MPI_BYTE`;
//! `MINLOC`/`MAXLOC` on the pair types. Anything else is `MPI_ERR_OP`
//! (characters and `MPI_PACKED` take no op at all), but for `MPI_CHAR`,
//! which MPICH and Open MPI reduce as a signed 8-bit integer, and so does
//! ferry (programs rely on it).
//!
//! Every op here runs on packed data, `size` bytes per value, which is
//! what crosses ferry. The padded pair types (`MPI_DOUBLE_INT`,
//! `MPI_LONG_INT`, `MPI_SHORT_INT`) are reduced by the engine's pair
//! types, which lay a value out as C's struct: `on_packed` spreads each
//! value into that layout and gathers the result back.
//!
//! ferry's engine reduces the common types itself; complex numbers,
//! `MPI_2REAL`, `MPI_2DOUBLE_PRECISION`, `MPI_INTEGER16` and
//! `MPI_LOGICAL16` are element-wise functions here, run as ferry user ops
//! (commutative) on their own size; so are C's `long double` types,
//! through a C helper (`ffi/longdouble.rs`). Types with no arithmetic here
//! (half and quad precision, and complex numbers of them) are
//! `MPI_ERR_UNSUPPORTED_OPERATION`.

use ferry::ferry_core::coll::{reduce_into, Datatype, ReduceOp, UserOp};

use crate::abi::class::*;
use crate::abi::*;
use crate::datatype::{Elem, Predefined};
use crate::error::{Fail, Res};

/// The name of a predefined op (`""` for anything else).
pub fn op_name(op: usize) -> &'static str {
    match op {
        MPI_SUM => "MPI_SUM",
        MPI_MIN => "MPI_MIN",
        MPI_MAX => "MPI_MAX",
        MPI_PROD => "MPI_PROD",
        MPI_BAND => "MPI_BAND",
        MPI_BOR => "MPI_BOR",
        MPI_BXOR => "MPI_BXOR",
        MPI_LAND => "MPI_LAND",
        MPI_LOR => "MPI_LOR",
        MPI_LXOR => "MPI_LXOR",
        MPI_MINLOC => "MPI_MINLOC",
        MPI_MAXLOC => "MPI_MAXLOC",
        MPI_REPLACE => "MPI_REPLACE",
        MPI_NO_OP => "MPI_NO_OP",
        _ => "",
    }
}

/// True for a predefined op handle.
pub fn is_predefined(op: usize) -> bool {
    !op_name(op).is_empty()
}

/// Which group of ops a type takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Integer,
    Float,
    Bool,
    Byte,
    Pair,
}

/// The core datatype and op group of a predefined type; `None` for the
/// types ferry cannot reduce.
fn core_type(e: Elem) -> Option<(Datatype, Class)> {
    Some(match e {
        Elem::I8 => (Datatype::I8, Class::Integer),
        Elem::I16 => (Datatype::I16, Class::Integer),
        Elem::I32 => (Datatype::I32, Class::Integer),
        Elem::I64 => (Datatype::I64, Class::Integer),
        Elem::U8 => (Datatype::U8, Class::Integer),
        Elem::U16 => (Datatype::U16, Class::Integer),
        Elem::U32 => (Datatype::U32, Class::Integer),
        Elem::U64 => (Datatype::U64, Class::Integer),
        Elem::F32 => (Datatype::F32, Class::Float),
        Elem::F64 => (Datatype::F64, Class::Float),
        // C's bool is one byte holding 0 or 1; ferry's logical ops on u8
        // give 0 or 1.
        Elem::Bool => (Datatype::U8, Class::Bool),
        Elem::Byte => (Datatype::U8, Class::Byte),
        Elem::FloatInt => (Datatype::F32I32, Class::Pair),
        Elem::DoubleInt => (Datatype::F64I32, Class::Pair),
        Elem::LongInt => (Datatype::I64I32, Class::Pair),
        Elem::TwoInt => (Datatype::I32I32, Class::Pair),
        Elem::ShortInt => (Datatype::I16I32, Class::Pair),
        _ => return None,
    })
}

/// An op applied to every `N`-byte element (`inout = input (op) inout`),
/// as a commutative ferry user op on an opaque type of that size.
fn each<const N: usize>(
    f: impl Fn(&[u8; N], &mut [u8; N]) + Send + Sync + 'static,
) -> (ReduceOp, Datatype) {
    let run = move |input: &[u8], inout: &mut [u8]| {
        for (a, b) in input.chunks_exact(N).zip(inout.chunks_exact_mut(N)) {
            if let (Ok(a), Ok(b)) = (<&[u8; N]>::try_from(a), <&mut [u8; N]>::try_from(b)) {
                f(a, b);
            }
        }
    };
    (
        ReduceOp::User(UserOp::new(run, true)),
        Datatype::Opaque { size: N as u32 },
    )
}

macro_rules! pair_ops {
    ($name:ident, $t:ty, $n:literal) => {
        /// Complex `SUM`/`PROD`, or value-and-index `MINLOC`/`MAXLOC`,
        /// on two values of the float type.
        fn $name(op: usize, complex: bool) -> Option<(ReduceOp, Datatype)> {
            const H: usize = $n / 2;
            fn get(b: &[u8]) -> ($t, $t) {
                let mut x = [0u8; H];
                let mut y = [0u8; H];
                x.copy_from_slice(&b[..H]);
                y.copy_from_slice(&b[H..]);
                (<$t>::from_ne_bytes(x), <$t>::from_ne_bytes(y))
            }
            fn set(b: &mut [u8], (x, y): ($t, $t)) {
                b[..H].copy_from_slice(&x.to_ne_bytes());
                b[H..].copy_from_slice(&y.to_ne_bytes());
            }
            Some(match op {
                MPI_SUM if complex => each::<$n>(|a, b| {
                    let ((ar, ai), (br, bi)) = (get(a), get(b));
                    set(b, (ar + br, ai + bi));
                }),
                MPI_PROD if complex => each::<$n>(|a, b| {
                    let ((ar, ai), (br, bi)) = (get(a), get(b));
                    set(b, (ar * br - ai * bi, ar * bi + ai * br));
                }),
                MPI_MINLOC | MPI_MAXLOC if !complex => {
                    let min = op == MPI_MINLOC;
                    each::<$n>(move |a, b| {
                        let ((av, ai), (bv, bi)) = (get(a), get(b));
                        let better = if min { av < bv } else { av > bv };
                        if better || (av == bv && ai < bi) {
                            set(b, (av, ai));
                        }
                    })
                }
                _ => return None,
            })
        }
    };
}

pair_ops!(pairs32, f32, 8);
pair_ops!(pairs64, f64, 16);

/// The core `op` on a padded pair type `p`, run on packed values: each
/// value's parts (`p.size` bytes back to back) are spread to their
/// displacements in a zeroed `p.extent`-byte struct, which the core
/// reduces as `dtype` (whose layout is C's), and gathered back.
fn on_packed(op: ReduceOp, dtype: Datatype, p: &'static Predefined) -> (ReduceOp, Datatype) {
    let (size, extent, parts) = (p.size, p.extent, p.parts());
    let spread = move |packed: &[u8]| {
        let mut wide = vec![0u8; packed.len() / size * extent];
        for (v, w) in packed.chunks_exact(size).zip(wide.chunks_exact_mut(extent)) {
            let mut at = 0;
            for &(disp, len) in parts {
                w[disp..disp + len].copy_from_slice(&v[at..at + len]);
                at += len;
            }
        }
        wide
    };
    let run = move |input: &[u8], inout: &mut [u8]| {
        let (a, mut b) = (spread(input), spread(inout));
        // Lengths are whole values of one op on a pair type (checked by
        // `predefined_op`): the core accepts them.
        if reduce_into(&op, dtype, &a, &mut b).is_err() {
            return;
        }
        for (v, w) in inout.chunks_exact_mut(size).zip(b.chunks_exact(extent)) {
            let mut at = 0;
            for &(disp, len) in parts {
                v[at..at + len].copy_from_slice(&w[disp..disp + len]);
                at += len;
            }
        }
    };
    (
        ReduceOp::User(UserOp::new(run, true)),
        Datatype::Opaque { size: size as u32 },
    )
}

/// The ops on a 16-byte integer (`logical_only`: a `LOGICAL16`).
fn int128(op: usize, logical_only: bool) -> Option<(ReduceOp, Datatype)> {
    fn lift(f: fn(i128, i128) -> i128) -> (ReduceOp, Datatype) {
        each::<16>(move |a, b| {
            let r = f(i128::from_ne_bytes(*a), i128::from_ne_bytes(*b));
            *b = r.to_ne_bytes();
        })
    }
    Some(match op {
        MPI_LAND => lift(|a, b| i128::from(a != 0 && b != 0)),
        MPI_LOR => lift(|a, b| i128::from(a != 0 || b != 0)),
        MPI_LXOR => lift(|a, b| i128::from((a != 0) != (b != 0))),
        _ if logical_only => return None,
        MPI_SUM => lift(i128::wrapping_add),
        MPI_PROD => lift(i128::wrapping_mul),
        MPI_MIN => lift(i128::min),
        MPI_MAX => lift(i128::max),
        MPI_BAND => lift(|a, b| a & b),
        MPI_BOR => lift(|a, b| a | b),
        MPI_BXOR => lift(|a, b| a ^ b),
        _ => return None,
    })
}

/// The ops on a `long double` type, through the C helper.
fn long_double(op: usize, kind: crate::ffi::longdouble::Kind) -> Option<(ReduceOp, Datatype)> {
    use crate::ffi::longdouble::{apply, elem_size, takes, Op};
    let op = match op {
        MPI_SUM => Op::Sum,
        MPI_PROD => Op::Prod,
        MPI_MIN => Op::Min,
        MPI_MAX => Op::Max,
        MPI_MINLOC => Op::MinLoc,
        MPI_MAXLOC => Op::MaxLoc,
        _ => return None,
    };
    if !takes(kind, op) {
        return None;
    }
    let run = move |input: &[u8], inout: &mut [u8]| {
        // `takes` checked the op, so the helper does not refuse it.
        let _ = apply(kind, op, input, inout);
    };
    Some((
        ReduceOp::User(UserOp::new(run, true)),
        Datatype::Opaque {
            size: elem_size(kind) as u32,
        },
    ))
}

/// The ops on a Fortran `LOGICAL` of `size` bytes: ferry's logical ops on
/// the integer of that size (0 or 1 out, as gfortran's `.true.` is 1).
fn logical(op: usize, size: usize) -> Option<(ReduceOp, Datatype)> {
    let dtype = match size {
        1 => Datatype::I8,
        2 => Datatype::I16,
        4 => Datatype::I32,
        8 => Datatype::I64,
        _ => return int128(op, true),
    };
    core_op(op, Class::Bool).map(|op| (op, dtype))
}

/// The core op of a predefined op, if `class` takes it.
fn core_op(op: usize, class: Class) -> Option<ReduceOp> {
    let arith = matches!(class, Class::Integer | Class::Float);
    let logical = matches!(class, Class::Integer | Class::Bool);
    let bitwise = matches!(class, Class::Integer | Class::Byte);
    Some(match op {
        MPI_SUM if arith => ReduceOp::Sum,
        MPI_PROD if arith => ReduceOp::Prod,
        MPI_MIN if arith => ReduceOp::Min,
        MPI_MAX if arith => ReduceOp::Max,
        MPI_LAND if logical => ReduceOp::Land,
        MPI_LOR if logical => ReduceOp::Lor,
        MPI_LXOR if logical => ReduceOp::Lxor,
        MPI_BAND if bitwise => ReduceOp::Band,
        MPI_BOR if bitwise => ReduceOp::Bor,
        MPI_BXOR if bitwise => ReduceOp::Bxor,
        MPI_MINLOC if class == Class::Pair => ReduceOp::MinLoc,
        MPI_MAXLOC if class == Class::Pair => ReduceOp::MaxLoc,
        _ => return None,
    })
}

/// The core op and datatype of predefined `op` on predefined type `p`.
///
/// # Errors
/// `MPI_ERR_OP` for a handle that is no predefined op, or an op the
/// standard does not define on the type (`MPI_BAND` on floats, `MPI_SUM`
/// on `MPI_2INT`, `MPI_REPLACE`/`MPI_NO_OP` outside RMA);
/// `MPI_ERR_UNSUPPORTED_OPERATION` for a type ferry cannot reduce.
pub fn predefined_op(op: usize, p: &'static Predefined) -> Res<(ReduceOp, Datatype)> {
    let name = op_name(op);
    if name.is_empty() {
        return Err(Fail::new(MPI_ERR_OP, "invalid reduction operation"));
    }
    let undefined = || Fail::msg(MPI_ERR_OP, format!("{name} is not defined on {}", p.name));
    let extended = match p.elem {
        Elem::None => {
            return Err(Fail::msg(
                MPI_ERR_UNSUPPORTED_OPERATION,
                format!(
                    "reductions on {} are not supported (no arithmetic for it here)",
                    p.name
                ),
            ))
        }
        // The standard defines no op on MPI_CHAR, but MPICH and Open MPI
        // reduce it as a signed 8-bit integer (C's `char` here), and
        // programs rely on it (OSU 7's osu_allreduce sums MPI_CHARs by
        // default): so does ferry. The other text types take none.
        Elem::Text if p.name == "MPI_CHAR" => {
            return Ok((
                core_op(op, Class::Integer).ok_or_else(undefined)?,
                Datatype::I8,
            ));
        }
        Elem::Text => return Err(undefined()),
        Elem::Complex32 => pairs32(op, true),
        Elem::Complex64 => pairs64(op, true),
        Elem::TwoF32 => pairs32(op, false),
        Elem::TwoF64 => pairs64(op, false),
        Elem::I128 => int128(op, false),
        Elem::Logical => logical(op, p.size),
        Elem::LongDouble => long_double(op, crate::ffi::longdouble::Kind::Real),
        Elem::LongDoubleComplex => long_double(op, crate::ffi::longdouble::Kind::Complex),
        Elem::LongDoubleInt => long_double(op, crate::ffi::longdouble::Kind::WithInt),
        _ => {
            let (dtype, class) = core_type(p.elem).ok_or_else(undefined)?;
            let op = core_op(op, class).ok_or_else(undefined)?;
            if p.size != p.extent {
                return Ok(on_packed(op, dtype, p));
            }
            return Ok((op, dtype));
        }
    };
    extended.ok_or_else(undefined)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::lookup;
    use std::ffi::c_int;

    fn class_of(op: usize, ty: usize) -> c_int {
        match predefined_op(op, lookup(ty).unwrap()) {
            Ok(_) => MPI_SUCCESS,
            Err(f) => f.class,
        }
    }

    #[test]
    fn ops_are_defined_on_the_standard_groups_only() {
        const INT: usize = 0x209;
        const DOUBLE: usize = 0x214;
        const BYTE: usize = 0x247;
        const C_BOOL: usize = 0x238;
        const TWO_INT: usize = 0x22b;
        const COMPLEX: usize = 0x216;
        const LONG_DOUBLE: usize = 0x220;
        const LONG_DOUBLE_INT: usize = 0x22d;
        const LONG_DOUBLE_COMPLEX: usize = 0x224;
        const REAL16: usize = 0x2e2;
        const CHAR: usize = 0x243;
        const LOGICAL: usize = 0x218;
        assert_eq!(class_of(MPI_SUM, DOUBLE), MPI_SUCCESS);
        assert_eq!(class_of(MPI_BAND, DOUBLE), MPI_ERR_OP);
        assert_eq!(class_of(MPI_BXOR, INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_LAND, INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_MINLOC, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_LOR, C_BOOL), MPI_SUCCESS);
        assert_eq!(class_of(MPI_BAND, C_BOOL), MPI_ERR_OP);
        assert_eq!(class_of(MPI_BOR, BYTE), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, BYTE), MPI_ERR_OP);
        assert_eq!(class_of(MPI_MAXLOC, TWO_INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, TWO_INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_REPLACE, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_OP_NULL, INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_SUM, COMPLEX), MPI_SUCCESS);
        assert_eq!(class_of(MPI_MAX, COMPLEX), MPI_ERR_OP);
        assert_eq!(class_of(MPI_LAND, LOGICAL), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, LOGICAL), MPI_ERR_OP);
        // MPI_CHAR is a signed 8-bit integer, as for MPICH and Open MPI.
        assert_eq!(class_of(MPI_MAX, CHAR), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, CHAR), MPI_SUCCESS);
        assert_eq!(class_of(MPI_MAXLOC, CHAR), MPI_ERR_OP);
        assert_eq!(class_of(MPI_SUM, 0x23c), MPI_ERR_OP); // MPI_WCHAR
        assert_eq!(class_of(MPI_SUM, LONG_DOUBLE), MPI_SUCCESS);
        assert_eq!(class_of(MPI_BAND, LONG_DOUBLE), MPI_ERR_OP);
        assert_eq!(class_of(MPI_MAXLOC, LONG_DOUBLE_INT), MPI_SUCCESS);
        assert_eq!(class_of(MPI_SUM, LONG_DOUBLE_INT), MPI_ERR_OP);
        assert_eq!(class_of(MPI_PROD, LONG_DOUBLE_COMPLEX), MPI_SUCCESS);
        assert_eq!(class_of(MPI_MAX, LONG_DOUBLE_COMPLEX), MPI_ERR_OP);
        assert_eq!(class_of(MPI_SUM, REAL16), MPI_ERR_UNSUPPORTED_OPERATION);
    }

    /// Runs `op` on `ty` over byte buffers through core's reduction.
    fn reduce(op: usize, ty: usize, input: &[u8], inout: &mut [u8]) {
        let (op, dtype) = predefined_op(op, lookup(ty).unwrap()).unwrap();
        ferry::ferry_core::coll::reduce_into(&op, dtype, input, inout).unwrap();
    }

    fn bytes64(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn element_wise_ops_compute_what_the_standard_says() {
        // Complex double: (1+2i)(3+4i) = -5+10i; sums add.
        let a = bytes64(&[1.0, 2.0, 0.5, 0.5]);
        let mut b = bytes64(&[3.0, 4.0, 1.0, -1.0]);
        reduce(MPI_PROD, 0x216, &a, &mut b);
        assert_eq!(b, bytes64(&[-5.0, 10.0, 1.0, 0.0]));
        let mut c = bytes64(&[3.0, 4.0, 1.0, -1.0]);
        reduce(MPI_SUM, 0x216, &a, &mut c);
        assert_eq!(c, bytes64(&[4.0, 6.0, 1.5, -0.5]));
        // 2DOUBLE_PRECISION MINLOC: the lower value, then the lower index.
        let a = bytes64(&[1.0, 7.0, 2.0, 3.0]);
        let mut b = bytes64(&[1.0, 9.0, 1.0, 4.0]);
        reduce(MPI_MINLOC, 0x231, &a, &mut b);
        assert_eq!(b, bytes64(&[1.0, 7.0, 1.0, 4.0]));
        // INTEGER16 sum past 64 bits; LOGICAL16 and LOGICAL4 or.
        let x = (1i128 << 70).to_ne_bytes();
        let mut y = (5i128 << 70).to_ne_bytes();
        reduce(MPI_SUM, 0x2e1, &x, &mut y);
        assert_eq!(i128::from_ne_bytes(y), 6i128 << 70);
        let mut l = 0i128.to_ne_bytes();
        reduce(MPI_LOR, 0x2e0, &7i128.to_ne_bytes(), &mut l);
        assert_eq!(i128::from_ne_bytes(l), 1);
        let mut l4 = 0i32.to_ne_bytes();
        reduce(MPI_LOR, 0x218, &(-1i32).to_ne_bytes(), &mut l4);
        assert_eq!(i32::from_ne_bytes(l4), 1);
    }

    #[test]
    fn pair_types_have_the_core_layout_sizes() {
        // The core lays pairs out as C's struct (the extent); every op
        // here runs on packed values (the size).
        for p in crate::datatype::ALL {
            if let Some((d, _)) = core_type(p.elem) {
                assert_eq!(d.size(), p.extent, "{}", p.name);
            }
            for op in [MPI_SUM, MPI_MAXLOC, MPI_BAND, MPI_LOR] {
                if let Ok((_, d)) = predefined_op(op, p) {
                    assert_eq!(d.size(), p.size, "{} on {}", op_name(op), p.name);
                }
            }
        }
    }

    /// Packed `{value; int}` pairs of `W`-byte values.
    fn packed<const W: usize>(pairs: &[([u8; W], i32)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (v, i) in pairs {
            out.extend_from_slice(v);
            out.extend_from_slice(&i.to_ne_bytes());
        }
        out
    }

    #[test]
    fn padded_pairs_reduce_packed_values() {
        // MPI_DOUBLE_INT, 12 bytes a value: MAXLOC keeps the larger value,
        // the lower index on a tie.
        let d = |v: f64, i| (v.to_ne_bytes(), i);
        let a = packed(&[d(3.0, 1), d(2.0, 5), d(-1.0, 2)]);
        let mut b = packed(&[d(1.0, 0), d(2.0, 4), d(0.5, 7)]);
        reduce(MPI_MAXLOC, 0x229, &a, &mut b);
        assert_eq!(b, packed(&[d(3.0, 1), d(2.0, 4), d(0.5, 7)]));
        reduce(MPI_MINLOC, 0x229, &a, &mut b);
        assert_eq!(b, packed(&[d(3.0, 1), d(2.0, 4), d(-1.0, 2)]));
        // MPI_SHORT_INT, 6 bytes a value; MPI_LONG_INT, 12.
        let s = |v: i16, i| (v.to_ne_bytes(), i);
        let a = packed(&[s(-7, 3), s(9, 1)]);
        let mut b = packed(&[s(4, 0), s(9, 2)]);
        reduce(MPI_MINLOC, 0x22c, &a, &mut b);
        assert_eq!(b, packed(&[s(-7, 3), s(9, 1)]));
        let l = |v: i64, i| (v.to_ne_bytes(), i);
        let a = packed(&[l(1 << 40, 9)]);
        let mut b = packed(&[l(5, 0)]);
        reduce(MPI_MAXLOC, 0x22a, &a, &mut b);
        assert_eq!(b, packed(&[l(1 << 40, 9)]));
    }
}
