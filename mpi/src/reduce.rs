//! Reductions on predefined datatypes: which of ferry's typed ops serves
//! an (MPI op, datatype) pair, and the typed call on the caller's bytes.
//!
//! ferry's `Op<T>` is typed, so the dispatch is a `match` on the
//! datatype's element kind choosing `T`. A buffer that is not aligned for
//! `T` (legal in C only for byte-typed buffers, but cheap to allow) goes
//! through an aligned copy.

use ferry::{
    Comm, DoubleInt, Element, FloatInt, Integer, LocPair, LongInt, Op, Reducible, ShortInt, TwoInt,
};

use crate::abi::class::*;
use crate::abi::*;
use crate::datatype::{Elem, Predefined};
use crate::error::{Fail, Res};

/// What to reduce, and where (the fields are the calls' buffers).
#[derive(Debug)]
#[allow(missing_docs)]
pub enum Target<'a> {
    /// `MPI_Allreduce`; `send: None` is `MPI_IN_PLACE`.
    All {
        send: Option<&'a [u8]>,
        recv: &'a mut [u8],
    },
    /// `MPI_Reduce`: the root passes `recv` (and `send: None` for
    /// `MPI_IN_PLACE`); the others pass `send` only.
    Root {
        root: i32,
        send: Option<&'a [u8]>,
        recv: Option<&'a mut [u8]>,
    },
}

fn op_name(op: usize) -> &'static str {
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

fn arith<T: Reducible>(op: usize) -> Option<Op<T>> {
    Some(match op {
        MPI_SUM => Op::sum(),
        MPI_PROD => Op::prod(),
        MPI_MIN => Op::min(),
        MPI_MAX => Op::max(),
        _ => return None,
    })
}

fn logical<T: Integer>(op: usize) -> Option<Op<T>> {
    Some(match op {
        MPI_LAND => Op::land(),
        MPI_LOR => Op::lor(),
        MPI_LXOR => Op::lxor(),
        _ => return None,
    })
}

fn bitwise<T: Integer>(op: usize) -> Option<Op<T>> {
    Some(match op {
        MPI_BAND => Op::band(),
        MPI_BOR => Op::bor(),
        MPI_BXOR => Op::bxor(),
        _ => return None,
    })
}

fn integer<T: Integer>(op: usize) -> Option<Op<T>> {
    arith(op).or_else(|| logical(op)).or_else(|| bitwise(op))
}

fn loc<T: LocPair>(op: usize) -> Option<Op<T>> {
    Some(match op {
        MPI_MINLOC => Op::min_loc(),
        MPI_MAXLOC => Op::max_loc(),
        _ => return None,
    })
}

/// Runs the reduction of `dt` elements with predefined `op`.
///
/// # Errors
/// `MPI_ERR_OP` for a handle that is no predefined op, or an op the
/// standard does not define on the type (`MPI_BAND` on floats, `MPI_SUM`
/// on `MPI_2INT`, `MPI_REPLACE` outside RMA); `MPI_ERR_UNSUPPORTED_OPERATION`
/// for a type ferry cannot reduce yet (complex, long double, ...); ferry's
/// own errors.
pub fn run(comm: &Comm, op: usize, dt: &Predefined, target: Target<'_>) -> Res {
    let name = op_name(op);
    if name.is_empty() {
        return Err(Fail::new(MPI_ERR_OP, "invalid reduction operation (MPI_OP_NULL, or not a predefined op: user ops are not supported yet)"));
    }
    let undefined = || Fail::msg(MPI_ERR_OP, format!("{name} is not defined on {}", dt.name));
    macro_rules! go {
        ($t:ty, $ops:ident) => {
            typed::<$t>(comm, &$ops::<$t>(op).ok_or_else(undefined)?, target)
        };
    }
    match dt.elem {
        Elem::I8 => go!(i8, integer),
        Elem::I16 => go!(i16, integer),
        Elem::I32 => go!(i32, integer),
        Elem::I64 => go!(i64, integer),
        Elem::U8 => go!(u8, integer),
        Elem::U16 => go!(u16, integer),
        Elem::U32 => go!(u32, integer),
        Elem::U64 => go!(u64, integer),
        Elem::F32 => go!(f32, arith),
        Elem::F64 => go!(f64, arith),
        // C's bool is one byte holding 0 or 1; ferry's logical ops on u8
        // give 0 or 1.
        Elem::Bool => go!(u8, logical),
        Elem::Byte => go!(u8, bitwise),
        Elem::FloatInt => go!(FloatInt, loc),
        Elem::DoubleInt => go!(DoubleInt, loc),
        Elem::LongInt => go!(LongInt, loc),
        Elem::TwoInt => go!(TwoInt, loc),
        Elem::ShortInt => go!(ShortInt, loc),
        Elem::None => Err(Fail::msg(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("reductions on {} are not supported yet", dt.name),
        )),
    }
}

/// `b` copied into a vector of `T` (`b` holds whole elements: a count
/// times the type's size).
fn aligned_copy<T: Element>(b: &[u8]) -> Vec<T> {
    let mut v =
        vec![<T as bytemuck::Zeroable>::zeroed(); b.len() / std::mem::size_of::<T>().max(1)];
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(b);
    v
}

/// Runs `f` on `b` viewed as `&[T]` (copied if misaligned).
fn with_ref<T: Element, R>(b: &[u8], f: impl FnOnce(&[T]) -> R) -> R {
    match bytemuck::try_cast_slice::<u8, T>(b) {
        Ok(t) => f(t),
        Err(_) => f(&aligned_copy::<T>(b)),
    }
}

/// Runs `f` on `b` viewed as `&mut [T]` (through an aligned copy, written
/// back, if misaligned).
fn with_mut<T: Element, R>(b: &mut [u8], f: impl FnOnce(&mut [T]) -> R) -> R {
    if let Ok(t) = bytemuck::try_cast_slice_mut::<u8, T>(b) {
        return f(t);
    }
    let mut copy = aligned_copy::<T>(b);
    let r = f(&mut copy);
    b.copy_from_slice(bytemuck::cast_slice(&copy));
    r
}

fn typed<T: Element>(comm: &Comm, op: &Op<T>, target: Target<'_>) -> Res {
    match target {
        Target::All { send: None, recv } => with_mut(recv, |r| comm.allreduce_in_place(r, op))?,
        Target::All {
            send: Some(send),
            recv,
        } => with_ref(send, |s| with_mut(recv, |r| comm.allreduce(s, r, op)))?,
        Target::Root {
            root,
            send: None,
            recv: Some(recv),
        } => with_mut(recv, |r| comm.reduce_in_place(r, op, root))?,
        Target::Root {
            root,
            send: Some(send),
            recv,
        } => with_ref(send, |s| match recv {
            Some(recv) => with_mut(recv, |r| comm.reduce(s, Some(r), op, root)),
            None => comm.reduce(s, None, op, root),
        })?,
        Target::Root {
            send: None,
            recv: None,
            ..
        } => {
            return Err(Fail::new(
                MPI_ERR_BUFFER,
                "MPI_IN_PLACE is only valid at the root of MPI_Reduce",
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_are_defined_on_the_standard_groups_only() {
        assert!(arith::<f64>(MPI_SUM).is_some());
        assert!(arith::<f64>(MPI_BAND).is_none());
        assert!(integer::<i32>(MPI_BXOR).is_some());
        assert!(integer::<i32>(MPI_LAND).is_some());
        assert!(integer::<i32>(MPI_MINLOC).is_none());
        assert!(logical::<u8>(MPI_BAND).is_none());
        assert!(bitwise::<u8>(MPI_SUM).is_none());
        assert!(loc::<TwoInt>(MPI_MAXLOC).is_some());
        assert!(loc::<TwoInt>(MPI_SUM).is_none());
        assert_eq!(op_name(MPI_OP_NULL), "");
        assert_eq!(op_name(MPI_REPLACE), "MPI_REPLACE");
    }

    #[test]
    fn pair_types_have_the_c_layout_sizes() {
        for (name, size) in [
            ("MPI_FLOAT_INT", std::mem::size_of::<FloatInt>()),
            ("MPI_DOUBLE_INT", std::mem::size_of::<DoubleInt>()),
            ("MPI_LONG_INT", std::mem::size_of::<LongInt>()),
            ("MPI_2INT", std::mem::size_of::<TwoInt>()),
            ("MPI_SHORT_INT", std::mem::size_of::<ShortInt>()),
        ] {
            let p = crate::datatype::ALL
                .iter()
                .find(|p| p.name == name)
                .unwrap();
            assert_eq!(p.size, size, "{name}");
        }
    }

    #[test]
    fn misaligned_views_copy_and_write_back() {
        let mut raw = [0u8; 9];
        raw[1..5].copy_from_slice(&7i32.to_ne_bytes());
        raw[5..9].copy_from_slice(&9i32.to_ne_bytes());
        let sum = with_ref::<i32, i32>(&raw[1..], |v| v.iter().sum());
        assert_eq!(sum, 16);
        with_mut::<i32, ()>(&mut raw[1..], |v| v[1] = 42);
        assert_eq!(&raw[5..9], &42i32.to_ne_bytes());
    }
}
