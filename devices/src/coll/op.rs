//! Typed reduction operations: [`Op<T>`] pairs one of core's
//! [`ReduceOp`]s with the element type it runs on, so that a bitwise op on
//! floats or a min-loc on plain numbers does not compile, and a user op
//! sees `&[T]`, not bytes.

use std::marker::PhantomData;

use bytemuck::{Pod, Zeroable};
use ferry_core::coll::{Datatype, ReduceOp, UserOp};

use crate::typed::Element;

/// An element type with built-in arithmetic reductions (MPI's predefined
/// numeric datatypes).
pub trait Reducible: Element {
    /// The matching core datatype.
    const DATATYPE: Datatype;
}

/// An integer element type: the logical and bitwise ops apply.
pub trait Integer: Reducible {}

macro_rules! reducible {
    ($($t:ty => $d:ident $(, $int:ident)?;)*) => {$(
        impl Reducible for $t {
            const DATATYPE: Datatype = Datatype::$d;
        }
        $(impl $int for $t {})?
    )*};
}

reducible! {
    i8 => I8, Integer; i16 => I16, Integer; i32 => I32, Integer; i64 => I64, Integer;
    u8 => U8, Integer; u16 => U16, Integer; u32 => U32, Integer; u64 => U64, Integer;
    f32 => F32; f64 => F64;
}

/// A (value, index) pair for [`Op::min_loc`] and [`Op::max_loc`], laid out
/// as C's `MPI_FLOAT_INT`, `MPI_DOUBLE_INT`, `MPI_LONG_INT`, `MPI_2INT` and
/// `MPI_SHORT_INT` structs.
pub trait LocPair: Element {
    /// The matching core datatype.
    const DATATYPE: Datatype;
}

macro_rules! loc_pair {
    ($($(#[$doc:meta])* $name:ident($v:ty $(, pad $pad:ty)?) => $d:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
        pub struct $name {
            /// The value compared.
            pub value: $v,
            /// The index carried along (the rank, typically).
            pub index: i32,
            $(_pad: $pad,)?
        }

        impl $name {
            /// A pair.
            pub fn new(value: $v, index: i32) -> $name {
                $name { value, index, $(_pad: <$pad>::default(),)? }
            }
        }

        impl LocPair for $name {
            const DATATYPE: Datatype = Datatype::$d;
        }
    )*};
}

loc_pair! {
    /// `MPI_FLOAT_INT`.
    FloatInt(f32) => F32I32;
    /// `MPI_DOUBLE_INT` (with C's trailing padding).
    DoubleInt(f64, pad u32) => F64I32;
    /// `MPI_LONG_INT` (with C's trailing padding).
    LongInt(i64, pad u32) => I64I32;
    /// `MPI_2INT`.
    TwoInt(i32) => I32I32;
}

/// `MPI_SHORT_INT`: a short, two bytes of padding, an int.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
pub struct ShortInt {
    /// The value compared.
    pub value: i16,
    _pad: u16,
    /// The index carried along.
    pub index: i32,
}

impl ShortInt {
    /// A pair.
    pub fn new(value: i16, index: i32) -> ShortInt {
        ShortInt {
            value,
            _pad: 0,
            index,
        }
    }
}

impl LocPair for ShortInt {
    const DATATYPE: Datatype = Datatype::I16I32;
}

/// A reduction on elements of `T`: a built-in op, or a user function.
#[derive(Debug, Clone)]
pub struct Op<T> {
    pub(crate) op: ReduceOp,
    pub(crate) dtype: Datatype,
    _t: PhantomData<fn(T)>,
}

impl<T: Element> Op<T> {
    fn new(op: ReduceOp, dtype: Datatype) -> Op<T> {
        Op {
            op,
            dtype,
            _t: PhantomData,
        }
    }

    /// A user-defined op (`MPI_Op_create`): `f(input, inout)` must set
    /// `inout[i] = input[i] ⊕ inout[i]`, where `input` holds the
    /// contributions of lower ranks. `commutative: false` makes every
    /// collective combine operands in rank order.
    pub fn user(f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static, commutative: bool) -> Op<T> {
        let bytes = move |input: &[u8], inout: &mut [u8]| {
            match (
                bytemuck::try_cast_slice::<u8, T>(input),
                bytemuck::try_cast_slice_mut::<u8, T>(inout),
            ) {
                (Ok(i), Ok(o)) => f(i, o),
                // A temporary's alignment is the allocator's: copy through
                // aligned vectors rather than fail.
                _ => {
                    let n = inout.len() / std::mem::size_of::<T>().max(1);
                    let mut i = vec![T::zeroed(); n];
                    let mut o = vec![T::zeroed(); n];
                    bytemuck::cast_slice_mut::<T, u8>(&mut i).copy_from_slice(input);
                    bytemuck::cast_slice_mut::<T, u8>(&mut o).copy_from_slice(inout);
                    f(&i, &mut o);
                    inout.copy_from_slice(bytemuck::cast_slice(&o));
                }
            }
        };
        let size = u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX);
        Op::new(
            ReduceOp::User(UserOp::new(bytes, commutative)),
            Datatype::Opaque { size },
        )
    }

    /// Is the op commutative?
    pub fn is_commutative(&self) -> bool {
        self.op.is_commutative()
    }
}

impl Op<u8> {
    /// An op on elements of `dtype` carried in raw bytes, for callers that
    /// know their element type only at run time (MPI's C ABI in
    /// `ferry-mpi`; a user op on a C datatype of any size is
    /// `ReduceOp::User` with `Datatype::Opaque`). Buffers are `u8`s whose
    /// lengths must be whole elements of `dtype`; whether `op` is defined on
    /// `dtype` is checked by the engine as for any op, so the caller should
    /// check it first ([`ReduceOp::check`]) to fail before a collective
    /// starts.
    pub fn on_bytes(op: ReduceOp, dtype: Datatype) -> Op<u8> {
        Op::new(op, dtype)
    }
}

macro_rules! builtin {
    ($bound:ident: $($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl<T: $bound> Op<T> {$(
            $(#[$doc])*
            pub fn $name() -> Op<T> {
                Op::new(ReduceOp::$op, T::DATATYPE)
            }
        )*}
    };
}

builtin! { Reducible:
    /// `MPI_SUM` (integers wrap).
    sum => Sum;
    /// `MPI_PROD` (integers wrap).
    prod => Prod;
    /// `MPI_MIN`.
    min => Min;
    /// `MPI_MAX`.
    max => Max;
}

builtin! { Integer:
    /// `MPI_LAND`: non-zero is true; the result is 0 or 1.
    land => Land;
    /// `MPI_LOR`.
    lor => Lor;
    /// `MPI_LXOR`.
    lxor => Lxor;
    /// `MPI_BAND`.
    band => Band;
    /// `MPI_BOR`.
    bor => Bor;
    /// `MPI_BXOR`.
    bxor => Bxor;
}

builtin! { LocPair:
    /// `MPI_MINLOC`: the least value, and on a tie the least index.
    min_loc => MinLoc;
    /// `MPI_MAXLOC`: the greatest value, and on a tie the least index.
    max_loc => MaxLoc;
}
