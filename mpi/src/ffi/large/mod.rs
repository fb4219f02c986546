//! MPI 4's large-count (`_c`) functions: each takes `MPI_Count` (and
//! `MPI_Aint`) where its int form takes `int`, converts its arguments and
//! calls the int form's `PMPI_X`.
//!
//! What a conversion leaves out: a count above `INT_MAX` is
//! `MPI_ERR_COUNT` (`mpi/README.md`'s table), raised by the `_c` function
//! on the call's communicator ([`large_fn!`]). A message above 2 GiB
//! still goes through the int forms with a larger datatype (ferry moves
//! up to 1 TiB a message, `Config::max_message`);
//! every other error is raised once, by the int form, through the same
//! handler, and its code is returned unchanged. Out-arguments of type
//! `MPI_Count` are widened (the `_x` forms already return them).
//!
//! Arrays of counts and displacements are converted into temporaries: the
//! int forms read them during the call only (the collectives parse them
//! into their spec at the call, `coll/spec.rs`; the type constructors
//! copy them into the type), so the temporaries need not outlive the call,
//! even for the nonblocking and persistent forms.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_COUNT, MPI_ERR_INTERN, MPI_SUCCESS};
use crate::abi::{MpiStatus, MPI_COMM_SELF};
use crate::error::{Fail, Res};

use super::bsend::{PMPI_Bsend, PMPI_Buffer_attach, PMPI_Buffer_detach, PMPI_Ibsend};
use super::commbuf::{PMPI_Comm_attach_buffer, PMPI_Comm_detach_buffer};
use super::mprobe::{PMPI_Imrecv, PMPI_Mrecv};
use super::p2p::{
    PMPI_Get_count, PMPI_Irecv, PMPI_Irsend, PMPI_Isend, PMPI_Issend, PMPI_Recv, PMPI_Rsend,
    PMPI_Send, PMPI_Sendrecv, PMPI_Sendrecv_replace, PMPI_Ssend,
};
use super::pair::{PMPI_Isendrecv, PMPI_Isendrecv_replace};
use super::persist::{
    PMPI_Bsend_init, PMPI_Recv_init, PMPI_Rsend_init, PMPI_Send_init, PMPI_Ssend_init,
};
use super::put;
use super::status::PMPI_Get_elements_x;

mod coll;
mod types;

/// Defines `PMPI_X` and `MPI_X` from a body of type `Res<c_int>`: `Ok`
/// carries the int form's code (already raised by it, so passed through),
/// `Err` a failed conversion, raised here on communicator `$on`. Unlike
/// `mpi_fn!`, whose `Err` is the only way to fail, this keeps the int
/// form's error from being raised a second time.
macro_rules! large_fn {
    ($(#[$meta:meta])* $name:ident / $pname:ident [$on:expr] ($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        ///
        /// # Safety
        /// Every pointer argument must be valid for the accesses the MPI
        /// standard describes for this function, or null where it allows.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> c_int {
            $crate::ffi::large::run(stringify!($name), $on, move || -> $crate::error::Res<c_int> { $body })
        }

        #[doc = concat!("`", stringify!($name), "`: the interposable name of `", stringify!($pname), "`.")]
        ///
        /// # Safety
        /// As for the `PMPI_` form.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the same function under its profiling name; the
            // caller's promises carry over unchanged.
            unsafe { $pname($($arg),*) }
        }
    };
}
pub(crate) use large_fn;

/// Runs a `_c` body under a panic guard: the int form's code, or a failed
/// conversion (or a panic, `MPI_ERR_INTERN`) raised on `comm`.
pub(crate) fn run(call: &'static str, comm: usize, body: impl FnOnce() -> Res<c_int>) -> c_int {
    let fail = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(code)) => return code,
        Ok(Err(f)) => f.on(comm),
        Err(_) => Fail::new(MPI_ERR_INTERN, "internal error (please report): a panic").on(comm),
    };
    // The handler may be the program's; a panic in our part of raising
    // must not unwind into C either.
    catch_unwind(AssertUnwindSafe(|| super::raise(call, fail))).unwrap_or(MPI_ERR_INTERN)
}

/// A count argument as the int form takes it.
///
/// # Errors
/// `MPI_ERR_COUNT` when it does not fit an `int` (a negative count that
/// fits is passed on, for the int form to refuse).
pub(crate) fn int(n: i64) -> Res<c_int> {
    c_int::try_from(n).map_err(|_| {
        Fail::msg(
            MPI_ERR_COUNT,
            format!("the count {n} does not fit an int (ferry's _c functions take counts up to INT_MAX)"),
        )
    })
}

/// An `MPI_Count` displacement or extent as an `MPI_Aint`.
///
/// # Errors
/// `MPI_ERR_COUNT` when it does not fit (never on 64-bit targets).
pub(crate) fn aint(n: i64) -> Res<isize> {
    isize::try_from(n)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("{n} does not fit an MPI_Aint")))
}

/// `n` entries of the program's array `p` converted by `f`; `None` for a
/// null array, which is passed on as null for the int form to judge.
///
/// # Safety
/// `p` is null or valid for reads of `n` entries.
pub(crate) unsafe fn array<T: Copy, U>(
    p: *const T,
    n: usize,
    f: impl Fn(T) -> Res<U>,
) -> Res<Option<Vec<U>>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null and valid for `n` entries (the caller's promise).
    let s = unsafe { std::slice::from_raw_parts(p, n) };
    s.iter().map(|&v| f(v)).collect::<Res<Vec<U>>>().map(Some)
}

/// The pointer the int form takes for a converted array.
pub(crate) fn ptr<U>(v: &Option<Vec<U>>) -> *const U {
    v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
}

/// A count argument used as an array length: a negative one reads none
/// (the int form refuses it).
pub(crate) fn len(n: c_int) -> usize {
    usize::try_from(n).unwrap_or(0)
}

/// Reads `*p` as an int for an in/out position argument.
///
/// # Safety
/// `p` is null or valid for a read.
unsafe fn position(p: *const i64) -> Res<c_int> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null position pointer"));
    }
    // SAFETY: non-null (checked), valid for a read (the caller's promise).
    int(unsafe { p.read() })
}

/// Defines the `_c` form of a send-like call `(buf, count, type, peer,
/// tag, comm[, request])`.
macro_rules! p2p_c {
    ($name:ident / $pname:ident => $int:ident ($buf:ty) $(, $req:ident)?) => {
        large_fn! {
            #[doc = concat!("`", stringify!($name), "`: `", stringify!($int), "` with an `MPI_Count` count.")]
            $name / $pname [comm] (buf: $buf, count: i64, datatype: usize, peer: c_int, tag: c_int, comm: usize $(, $req: *mut usize)?) {
                let n = int(count)?;
                // SAFETY: the arguments pass unchanged but the count, which
                // fits; the caller's promises carry over.
                Ok(unsafe { $int(buf, n, datatype, peer, tag, comm $(, $req)?) })
            }
        }
    };
}

p2p_c!(MPI_Send_c / PMPI_Send_c => PMPI_Send(*const c_void));
p2p_c!(MPI_Bsend_c / PMPI_Bsend_c => PMPI_Bsend(*const c_void));
p2p_c!(MPI_Ssend_c / PMPI_Ssend_c => PMPI_Ssend(*const c_void));
p2p_c!(MPI_Rsend_c / PMPI_Rsend_c => PMPI_Rsend(*const c_void));
p2p_c!(MPI_Isend_c / PMPI_Isend_c => PMPI_Isend(*const c_void), request);
p2p_c!(MPI_Ibsend_c / PMPI_Ibsend_c => PMPI_Ibsend(*const c_void), request);
p2p_c!(MPI_Issend_c / PMPI_Issend_c => PMPI_Issend(*const c_void), request);
p2p_c!(MPI_Irsend_c / PMPI_Irsend_c => PMPI_Irsend(*const c_void), request);
p2p_c!(MPI_Send_init_c / PMPI_Send_init_c => PMPI_Send_init(*const c_void), request);
p2p_c!(MPI_Bsend_init_c / PMPI_Bsend_init_c => PMPI_Bsend_init(*const c_void), request);
p2p_c!(MPI_Ssend_init_c / PMPI_Ssend_init_c => PMPI_Ssend_init(*const c_void), request);
p2p_c!(MPI_Rsend_init_c / PMPI_Rsend_init_c => PMPI_Rsend_init(*const c_void), request);
p2p_c!(MPI_Irecv_c / PMPI_Irecv_c => PMPI_Irecv(*mut c_void), request);
p2p_c!(MPI_Recv_init_c / PMPI_Recv_init_c => PMPI_Recv_init(*mut c_void), request);

large_fn! {
    /// `MPI_Recv_c`: `MPI_Recv` with an `MPI_Count` count.
    MPI_Recv_c / PMPI_Recv_c [comm] (buf: *mut c_void, count: i64, datatype: usize, source: c_int, tag: c_int, comm: usize, status: *mut MpiStatus) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Recv(buf, n, datatype, source, tag, comm, status) })
    }
}

large_fn! {
    /// `MPI_Mrecv_c`: `MPI_Mrecv` with an `MPI_Count` count (errors on
    /// `MPI_COMM_SELF`: the message names no communicator here).
    MPI_Mrecv_c / PMPI_Mrecv_c [MPI_COMM_SELF] (buf: *mut c_void, count: i64, datatype: usize, message: *mut usize, status: *mut MpiStatus) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Mrecv(buf, n, datatype, message, status) })
    }
}

large_fn! {
    /// `MPI_Imrecv_c`: `MPI_Imrecv` with an `MPI_Count` count.
    MPI_Imrecv_c / PMPI_Imrecv_c [MPI_COMM_SELF] (buf: *mut c_void, count: i64, datatype: usize, message: *mut usize, request: *mut usize) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Imrecv(buf, n, datatype, message, request) })
    }
}

large_fn! {
    /// `MPI_Sendrecv_c`: `MPI_Sendrecv` with `MPI_Count` counts.
    MPI_Sendrecv_c / PMPI_Sendrecv_c [comm] (
        sendbuf: *const c_void, sendcount: i64, sendtype: usize, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: i64, recvtype: usize, source: c_int, recvtag: c_int,
        comm: usize, status: *mut MpiStatus,
    ) {
        let (s, r) = (int(sendcount)?, int(recvcount)?);
        // SAFETY: unchanged arguments but the counts; the caller's promises.
        Ok(unsafe { PMPI_Sendrecv(sendbuf, s, sendtype, dest, sendtag, recvbuf, r, recvtype, source, recvtag, comm, status) })
    }
}

large_fn! {
    /// `MPI_Sendrecv_replace_c`: `MPI_Sendrecv_replace` with an `MPI_Count` count.
    MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c [comm] (
        buf: *mut c_void, count: i64, datatype: usize, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: usize, status: *mut MpiStatus,
    ) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Sendrecv_replace(buf, n, datatype, dest, sendtag, source, recvtag, comm, status) })
    }
}

large_fn! {
    /// `MPI_Isendrecv_c`: `MPI_Isendrecv` with `MPI_Count` counts.
    MPI_Isendrecv_c / PMPI_Isendrecv_c [comm] (
        sendbuf: *const c_void, sendcount: i64, sendtype: usize, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: i64, recvtype: usize, source: c_int, recvtag: c_int,
        comm: usize, request: *mut usize,
    ) {
        let (s, r) = (int(sendcount)?, int(recvcount)?);
        // SAFETY: unchanged arguments but the counts; the caller's promises.
        Ok(unsafe { PMPI_Isendrecv(sendbuf, s, sendtype, dest, sendtag, recvbuf, r, recvtype, source, recvtag, comm, request) })
    }
}

large_fn! {
    /// `MPI_Isendrecv_replace_c`: `MPI_Isendrecv_replace` with an `MPI_Count` count.
    MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c [comm] (
        buf: *mut c_void, count: i64, datatype: usize, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: usize, request: *mut usize,
    ) {
        let n = int(count)?;
        // SAFETY: unchanged arguments but the count; the caller's promises.
        Ok(unsafe { PMPI_Isendrecv_replace(buf, n, datatype, dest, sendtag, source, recvtag, comm, request) })
    }
}

large_fn! {
    /// `MPI_Buffer_attach_c`: `MPI_Buffer_attach` with an `MPI_Count` size.
    MPI_Buffer_attach_c / PMPI_Buffer_attach_c [MPI_COMM_SELF] (buffer: *mut c_void, size: i64) {
        let n = int(size)?;
        // SAFETY: unchanged arguments but the size; the caller's promises.
        Ok(unsafe { PMPI_Buffer_attach(buffer, n) })
    }
}

large_fn! {
    /// `MPI_Buffer_detach_c`: `MPI_Buffer_detach`, the size widened.
    MPI_Buffer_detach_c / PMPI_Buffer_detach_c [MPI_COMM_SELF] (buffer_addr: *mut c_void, size: *mut i64) {
        let mut n: c_int = 0;
        // SAFETY: the caller's `buffer_addr`; `n` is a local.
        let code = unsafe { PMPI_Buffer_detach(buffer_addr, &mut n) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-argument.
            unsafe { put(size, i64::from(n))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Comm_attach_buffer_c` (MPI 4.1): `MPI_Comm_attach_buffer` with
    /// an `MPI_Count` size.
    MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c [comm] (comm: usize, buffer: *mut c_void, size: i64) {
        let n = int(size)?;
        // SAFETY: unchanged arguments but the size; the caller's promises.
        Ok(unsafe { PMPI_Comm_attach_buffer(comm, buffer, n) })
    }
}

large_fn! {
    /// `MPI_Comm_detach_buffer_c` (MPI 4.1): the size widened.
    MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c [comm] (comm: usize, buffer_addr: *mut c_void, size: *mut i64) {
        let mut n: c_int = 0;
        // SAFETY: the caller's `buffer_addr`; `n` is a local.
        let code = unsafe { PMPI_Comm_detach_buffer(comm, buffer_addr, &mut n) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-argument.
            unsafe { put(size, i64::from(n))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Get_count_c`: `MPI_Get_count` widened (`MPI_UNDEFINED` stays
    /// itself).
    MPI_Get_count_c / PMPI_Get_count_c [MPI_COMM_SELF] (status: *const MpiStatus, datatype: usize, count: *mut i64) {
        let mut n: c_int = 0;
        // SAFETY: the caller's status; `n` is a local.
        let code = unsafe { PMPI_Get_count(status, datatype, &mut n) };
        if code == MPI_SUCCESS {
            // SAFETY: the caller's out-argument.
            unsafe { put(count, i64::from(n))? };
        }
        Ok(code)
    }
}

large_fn! {
    /// `MPI_Get_elements_c`: `MPI_Get_elements_x`.
    MPI_Get_elements_c / PMPI_Get_elements_c [MPI_COMM_SELF] (status: *const MpiStatus, datatype: usize, count: *mut i64) {
        // SAFETY: the same arguments and types; the caller's promises.
        Ok(unsafe { PMPI_Get_elements_x(status, datatype, count) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_that_do_not_fit_an_int_are_err_count() {
        assert_eq!(int(7).unwrap(), 7);
        assert_eq!(int(-3).unwrap(), -3); // the int form refuses it
        assert_eq!(int(i64::from(c_int::MAX)).unwrap(), c_int::MAX);
        assert_eq!(
            int(i64::from(c_int::MAX) + 1).unwrap_err().class,
            MPI_ERR_COUNT
        );
        assert_eq!(
            int(i64::from(c_int::MIN) - 1).unwrap_err().class,
            MPI_ERR_COUNT
        );
    }

    #[test]
    fn arrays_convert_every_entry_and_pass_null_on() {
        let src = [1i64, 2, 3];
        // SAFETY: a local array of 3 entries.
        let v = unsafe { array(src.as_ptr(), 3, int) }.unwrap();
        assert_eq!(v.as_deref(), Some(&[1, 2, 3][..]));
        let big = [1i64, 1 << 40];
        // SAFETY: a local array of 2 entries.
        let e = unsafe { array(big.as_ptr(), 2, int) }.unwrap_err();
        assert_eq!(e.class, MPI_ERR_COUNT);
        // SAFETY: null is never read.
        let none = unsafe { array(std::ptr::null::<i64>(), 5, int) }.unwrap();
        assert!(ptr(&none).is_null());
        assert_eq!(len(-1), 0);
    }
}
