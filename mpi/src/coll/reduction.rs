//! Reduction ops: `MPI_Op_create`, `MPI_Op_free`, `MPI_Op_commutative`,
//! `MPI_Reduce_local`, and [`resolve`]: an (op, datatype) pair as the
//! byte-level op ferry runs ([`Red`]).
//!
//! A predefined op applies to a predefined type, or to a derived type
//! whose type map holds one predefined type only (a contiguous run of
//! doubles, a vector of ints), reduced packed. A user op (`MPI_User_function`)
//! is called through its C pointer with the program's datatype handle and
//! an element count: on packed data when the datatype is contiguous, else
//! on the data as it lies in memory from the lower bound ([`Form::Extent`]),
//! so that the function reads its own layout. Its element size is only
//! known at run time, hence `ferry::Op::on_bytes` with an opaque datatype
//! of that size (ferry then splits work at element boundaries only).

use std::ffi::c_int;

use ferry::ferry_core::coll::{reduce_into, Datatype, ReduceOp, UserOp};

use crate::coll::{CBuf, Form};

use crate::abi::class::*;
use crate::abi::*;
use crate::datatype::{count_arg, TypeRef};
use crate::error::{Fail, Res};
use crate::ffi::args::{Out, RecvBuf, SendBuf};
use crate::ffi::cell::LevelCell;
use crate::handle::{Kind, Table};
use crate::reduce::{is_predefined, predefined_op};
use crate::state::ChapterCell;
use crate::state::{rt, Runtime};

/// `MPI_User_function`.
pub(crate) use crate::abi::callback::UserFn;

/// User reduction ops.
static OPS: ChapterCell<Table<UserOpObj>> = ChapterCell::new(|| Table::new(Kind::Op));

impl Runtime {
    /// The program's reduction ops.
    pub(crate) fn ops(&self) -> &'static LevelCell<Table<UserOpObj>> {
        OPS.of(self)
    }
}

/// A user op (`MPI_Op_create`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserOpObj {
    /// The `MPI_User_function *`.
    func: UserFn,
    commutative: bool,
}

/// A reduction resolved for one datatype.
#[derive(Debug, Clone)]
pub(crate) struct Red {
    pub(crate) op: ReduceOp,
    pub(crate) dtype: Datatype,
    /// How the data crosses ferry.
    pub(crate) form: Form,
    /// Wire bytes per element of the program's datatype.
    pub(crate) unit: usize,
}

/// Calls a user op on wire bytes: `inout = input (op) inout`. `base` is
/// where displacement 0 of the first element lies relative to the bytes
/// (the function computes its own addresses from it); buffers the
/// function's datatype alignment does not fit go through aligned copies.
fn call_user(
    f: UserFn,
    datatype: usize,
    base: isize,
    unit: usize,
    align: usize,
    input: &[u8],
    inout: &mut [u8],
) {
    if unit == 0 || inout.is_empty() {
        return;
    }
    let aligned = |p: *const u8| (p as usize) % align.clamp(1, 16) == 0;
    if !aligned(input.as_ptr()) || !aligned(inout.as_ptr()) {
        let words = inout.len().div_ceil(16);
        let mut i = vec![0u128; words];
        let mut o = vec![0u128; words];
        bytemuck::cast_slice_mut::<u128, u8>(&mut i)[..input.len()].copy_from_slice(input);
        bytemuck::cast_slice_mut::<u128, u8>(&mut o)[..inout.len()].copy_from_slice(inout);
        let (ib, ob) = (
            bytemuck::cast_slice::<u128, u8>(&i),
            bytemuck::cast_slice_mut::<u128, u8>(&mut o),
        );
        call_user(
            f,
            datatype,
            base,
            unit,
            1,
            &ib[..input.len()],
            &mut ob[..inout.len()],
        );
        inout.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&o)[..inout.len()]);
        return;
    }
    // A call takes at most INT_MAX elements (its count is an `int`): more
    // (a `_c` collective's) go in calls on consecutive runs of them.
    let total = inout.len() / unit;
    let mut done = 0;
    while done < total {
        let k = (total - done).min(c_int::MAX as usize);
        let at = done * unit;
        crate::ffi::callbacks::user_fn(
            f,
            &input[at..],
            &mut inout[at..],
            base,
            unit,
            k as c_int,
            datatype,
        );
        done += k;
    }
}

/// The byte-level reduction of op handle `op` on `ty` (handle `datatype`).
///
/// # Errors
/// `MPI_ERR_OP` for a bad handle or an op undefined on the type (a
/// predefined op on a type map of mixed types); `MPI_ERR_TYPE` for a user
/// op on a datatype whose data reaches outside its extent;
/// `MPI_ERR_UNSUPPORTED_OPERATION` for a predefined type ferry cannot
/// reduce.
pub(crate) fn resolve(rt: &Runtime, op: usize, ty: &TypeRef, datatype: usize) -> Res<Red> {
    if is_predefined(op) {
        let Some((p, _)) = ty.uniform() else {
            return Err(Fail::new(
                MPI_ERR_OP,
                "a predefined op needs a datatype of one predefined type",
            ));
        };
        let (op, dtype) = predefined_op(op, p)?;
        return Ok(Red {
            op,
            dtype,
            form: Form::Packed,
            unit: ty.size(),
        });
    }
    let user = rt
        .ops()
        .with(|t| t.get(op).copied())?
        .map_err(|b| Fail::handle(MPI_ERR_OP, b, "reduction operation"))?;
    let layout = ty.layout();
    let (lb, ext) = ty.extent();
    let (form, base, unit) = match ty.contiguous_from(2) {
        Some(d) => (Form::Packed, d, ty.size()),
        None => {
            if layout.true_lb < layout.lb || layout.true_ub > layout.ub || ext <= 0 {
                return Err(Fail::new(
                    MPI_ERR_TYPE,
                    "a user op needs a datatype whose data lies within its extent",
                ));
            }
            (
                Form::Extent {
                    lb,
                    ext: ext as usize,
                },
                lb,
                ext as usize,
            )
        }
    };
    let size = u32::try_from(unit)
        .map_err(|_| Fail::new(MPI_ERR_TYPE, "the datatype is too large for a reduction"))?;
    let (f, align) = (user.func, layout.align);
    let call = move |i: &[u8], io: &mut [u8]| call_user(f, datatype, base, unit, align, i, io);
    Ok(Red {
        op: ReduceOp::User(UserOp::new(call, user.commutative)),
        dtype: Datatype::Opaque { size },
        form,
        unit,
    })
}

/// `MPI_Op_create`.
pub(crate) fn op_create(user_fn: Option<UserFn>, commute: c_int, mut op: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let func = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
    if op.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null op pointer"));
    }
    let h = rt
        .ops()
        .with(|t| {
            t.insert(UserOpObj {
                func,
                commutative: commute != 0,
            })
        })?
        .ok_or_else(|| Fail::new(MPI_ERR_INTERN, "too many ops"))?;
    op.set(h)
}

/// `MPI_Op_free`: the handle becomes `MPI_OP_NULL`; reductions in
/// flight keep the function.
pub(crate) fn op_free(mut op: Out<'_, usize>) -> Res {
    let rt = rt()?;
    let h = op.get()?;
    if is_predefined(h) {
        return Err(Fail::new(MPI_ERR_OP, "a predefined op cannot be freed"));
    }
    rt.ops()
        .with(|t| t.remove(h))?
        .map_err(|b| Fail::handle(MPI_ERR_OP, b, "reduction operation"))?;
    op.set(MPI_OP_NULL)
}

/// `MPI_Op_commutative`: every predefined op but `MPI_REPLACE` and
/// `MPI_NO_OP` is commutative; a user op as created.
pub(crate) fn op_commutative(op: usize, mut commute: Out<'_, c_int>) -> Res {
    let c = if is_predefined(op) {
        !matches!(op, MPI_REPLACE | MPI_NO_OP)
    } else {
        rt()?
            .ops()
            .with(|t| t.get(op).map(|u| u.commutative))?
            .map_err(|b| Fail::handle(MPI_ERR_OP, b, "reduction operation"))?
    };
    commute.set(c_int::from(c))
}

/// `MPI_Reduce_local` and `MPI_Reduce_local_c`: `inoutbuf = inbuf (op)
/// inoutbuf` on `count` elements.
pub(crate) fn reduce_local(
    inbuf: SendBuf,
    inoutbuf: RecvBuf,
    count: impl Into<i64>,
    datatype: usize,
    op: usize,
) -> Res {
    let rt = rt()?;
    let ty = rt.comm_type(datatype)?;
    let red = resolve(rt, op, &ty, datatype)?;
    let n = count_arg(count.into())?;
    let input = CBuf::new(inbuf, n, ty.clone());
    let inout = CBuf::new(inoutbuf, n, ty);
    let (i, mut io) = (input.to_vec(red.form)?, inout.to_vec(red.form)?);
    reduce_into(&red.op, red.dtype, &i, &mut io)?;
    inout.write(red.form, &io)
}
