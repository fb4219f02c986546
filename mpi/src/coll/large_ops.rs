//! The large-count reduction function `MPI_Op_create_c`, whose user
//! functions take `MPI_Count *len`: each is called through a trampoline
//! of the int type (`ffi::large_user_fn`). (`MPI_Reduce_local_c` is
//! `MPI_Reduce_local`'s body.)

use std::ffi::c_int;

use crate::abi::callback::UserFnC;
use crate::abi::class::MPI_ERR_ARG;
use crate::coll::reduction::op_create;
use crate::error::{Fail, Res};

/// `MPI_Op_create_c`: an op whose function takes `MPI_Count *len`.
pub(crate) fn op_create_c(
    user_fn: Option<UserFnC>,
    commute: c_int,
    op: crate::ffi::args::Out<'_, usize>,
) -> Res {
    let f = user_fn.ok_or_else(|| Fail::new(MPI_ERR_ARG, "a null user function"))?;
    op_create(
        Some(crate::ffi::large_user_fn::trampoline_of(f)?),
        commute,
        op,
    )
}
