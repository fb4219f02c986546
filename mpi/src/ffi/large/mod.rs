//! MPI 4's large-count (`_c`) functions: each takes `MPI_Count` (and
//! `MPI_Aint`) where its int form takes `int`.
//!
//! Most share their int form's body, which takes its counts as `i64`
//! (`count_arg` turns them into the `usize` the layer works in), so a
//! count above `INT_MAX` works as any other:
//! - point-to-point (here): the int forms' bodies (`send_call`,
//!   `irecv_call`, `send_init`, `mrecv_call`, ...) called with the 64-bit
//!   count; `MPI_Get_count_c` and `MPI_Get_elements_c` read the status's
//!   64-bit byte count;
//! - the collectives: `coll/api.rs`'s `collective!` defines each
//!   collective's `_c` forms from the same parser, whose helpers take
//!   `int`s or `MPI_Count`s and `MPI_Aint`s (the spec holds `usize`
//!   counts and byte offsets);
//! - the datatype functions ([`types`]): the constructors build the layout
//!   from the 64-bit values and record a large-count recipe (decoded by
//!   `MPI_Type_get_envelope_c`/`contents_c`); pack and unpack take 64-bit
//!   counts, positions and sizes; `Reduce_local_c`;
//! - the attached buffers (here): `MPI_Buffer_attach_c`,
//!   `MPI_Comm_attach_buffer_c` and their detach forms share the int
//!   forms' bodies, the size an `MPI_Count` (the int detach forms give
//!   `INT_MAX` for a larger buffer).
//!
//! The queries `MPI_Type_size_c`, `MPI_Type_get_extent_c` and
//! `MPI_Type_get_true_extent_c` call the `_x` forms, which already return
//! `MPI_Count`s ([`large_fn!`]: the `_x` form raises its own errors, and
//! its code is returned unchanged).

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::abi::class::{MPI_ERR_COUNT, MPI_ERR_INTERN};
use crate::abi::{MpiStatus, MPI_COMM_SELF};
use crate::error::{Fail, Res};

use ferry::SendMode;

use super::bsend::{attach, bsend_call, detach, ibsend_call};
use super::commbuf::{comm_attach, comm_detach};
use super::mprobe::{imrecv_call, mrecv_call};
use super::p2p::{
    irecv_call, isend_call, recv_call, send_args, send_call, sendrecv_call, sendrecv_replace_call,
};
use super::pair::{isendrecv_call, isendrecv_replace_call};
use super::persist::{recv_init, send_init};
use super::status::PMPI_Get_elements_x;
use super::{get, mpi_fn, put};
use crate::state::rt;

mod types;

/// Defines `PMPI_X` and `MPI_X` from a body of type `Res<c_int>`: `Ok`
/// carries the code of the function it calls (already raised by it, so
/// passed through), `Err` a failure of its own, raised here on
/// communicator `$on`. Unlike
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

/// An `MPI_Count` displacement or extent as an `MPI_Aint`.
///
/// # Errors
/// `MPI_ERR_COUNT` when it does not fit (never on 64-bit targets).
pub(crate) fn aint(n: i64) -> Res<isize> {
    isize::try_from(n)
        .map_err(|_| Fail::msg(MPI_ERR_COUNT, format!("{n} does not fit an MPI_Aint")))
}

/// Defines the `_c` form of a send call `(buf, count, type, dest, tag,
/// comm[, request])` on its int form's body `$body(SendArgs[, request],
/// $mode)`.
macro_rules! send_c {
    ($name:ident / $pname:ident => $body:ident ($($req:ident,)?) $mode:expr) => {
        mpi_fn! {
            #[doc = concat!("`", stringify!($name), "`: the int form's body with an `MPI_Count` count.")]
            $name / $pname [comm] (buf: *const c_void, count: i64, datatype: usize, dest: c_int, tag: c_int, comm: usize $(, $req: *mut usize)?) {
                // SAFETY: the caller's buffer (and out-argument), as for
                // the int form.
                unsafe { $body(send_args!(buf, count, datatype, dest, tag, comm), $($req,)? $mode) }
            }
        }
    };
}

send_c!(MPI_Send_c / PMPI_Send_c => send_call() SendMode::Standard);
send_c!(MPI_Ssend_c / PMPI_Ssend_c => send_call() SendMode::Synchronous);
send_c!(MPI_Rsend_c / PMPI_Rsend_c => send_call() SendMode::Ready);
send_c!(MPI_Isend_c / PMPI_Isend_c => isend_call(request,) SendMode::Standard);
send_c!(MPI_Issend_c / PMPI_Issend_c => isend_call(request,) SendMode::Synchronous);
send_c!(MPI_Irsend_c / PMPI_Irsend_c => isend_call(request,) SendMode::Ready);
send_c!(MPI_Send_init_c / PMPI_Send_init_c => send_init(request,) Some(SendMode::Standard));
send_c!(MPI_Ssend_init_c / PMPI_Ssend_init_c => send_init(request,) Some(SendMode::Synchronous));
send_c!(MPI_Rsend_init_c / PMPI_Rsend_init_c => send_init(request,) Some(SendMode::Ready));
send_c!(MPI_Bsend_init_c / PMPI_Bsend_init_c => send_init(request,) None);

mpi_fn! {
    /// `MPI_Bsend_c`.
    MPI_Bsend_c / PMPI_Bsend_c [comm] (buf: *const c_void, count: i64, datatype: usize, dest: c_int, tag: c_int, comm: usize) {
        // SAFETY: the caller's buffer, as for the int form.
        unsafe { bsend_call(buf, count, datatype, dest, tag, comm) }
    }
}

mpi_fn! {
    /// `MPI_Ibsend_c`.
    MPI_Ibsend_c / PMPI_Ibsend_c [comm] (buf: *const c_void, count: i64, datatype: usize, dest: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: the caller's buffer and out-argument, as for the int form.
        unsafe { ibsend_call(buf, count, datatype, dest, tag, comm, request) }
    }
}

mpi_fn! {
    /// `MPI_Irecv_c`.
    MPI_Irecv_c / PMPI_Irecv_c [comm] (buf: *mut c_void, count: i64, datatype: usize, source: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: the caller's buffer and out-argument, as for the int form.
        unsafe { irecv_call(buf, count, datatype, source, tag, comm, request) }
    }
}

mpi_fn! {
    /// `MPI_Recv_init_c`.
    MPI_Recv_init_c / PMPI_Recv_init_c [comm] (buf: *mut c_void, count: i64, datatype: usize, source: c_int, tag: c_int, comm: usize, request: *mut usize) {
        // SAFETY: the caller's buffer and out-argument, as for the int form.
        unsafe { recv_init(buf, count, datatype, source, tag, comm, request) }
    }
}

mpi_fn! {
    /// `MPI_Recv_c`.
    MPI_Recv_c / PMPI_Recv_c [comm] (buf: *mut c_void, count: i64, datatype: usize, source: c_int, tag: c_int, comm: usize, status: *mut MpiStatus) {
        // SAFETY: the caller's buffer and status, as for the int form.
        unsafe { recv_call(buf, count, datatype, source, tag, comm, status) }
    }
}

mpi_fn! {
    /// `MPI_Mrecv_c` (errors on `MPI_COMM_SELF`, as the int form's: the
    /// message names no communicator here).
    MPI_Mrecv_c / PMPI_Mrecv_c (buf: *mut c_void, count: i64, datatype: usize, message: *mut usize, status: *mut MpiStatus) {
        // SAFETY: the caller's buffer, message and status, as for the int form.
        unsafe { mrecv_call(buf, count, datatype, message, status) }
    }
}

mpi_fn! {
    /// `MPI_Imrecv_c`.
    MPI_Imrecv_c / PMPI_Imrecv_c (buf: *mut c_void, count: i64, datatype: usize, message: *mut usize, request: *mut usize) {
        // SAFETY: the caller's buffer, message and out-argument, as for the int form.
        unsafe { imrecv_call(buf, count, datatype, message, request) }
    }
}

mpi_fn! {
    /// `MPI_Sendrecv_c`.
    MPI_Sendrecv_c / PMPI_Sendrecv_c [comm] (
        sendbuf: *const c_void, sendcount: i64, sendtype: usize, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: i64, recvtype: usize, source: c_int, recvtag: c_int,
        comm: usize, status: *mut MpiStatus,
    ) {
        // SAFETY: the caller's buffers and status, as for the int form.
        unsafe { sendrecv_call(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status) }
    }
}

mpi_fn! {
    /// `MPI_Sendrecv_replace_c`.
    MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c [comm] (
        buf: *mut c_void, count: i64, datatype: usize, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: usize, status: *mut MpiStatus,
    ) {
        // SAFETY: the caller's buffer and status, as for the int form.
        unsafe { sendrecv_replace_call(buf, count, datatype, dest, sendtag, source, recvtag, comm, status) }
    }
}

mpi_fn! {
    /// `MPI_Isendrecv_c`.
    MPI_Isendrecv_c / PMPI_Isendrecv_c [comm] (
        sendbuf: *const c_void, sendcount: i64, sendtype: usize, dest: c_int, sendtag: c_int,
        recvbuf: *mut c_void, recvcount: i64, recvtype: usize, source: c_int, recvtag: c_int,
        comm: usize, request: *mut usize,
    ) {
        // SAFETY: the caller's buffers and out-argument, as for the int form.
        unsafe { isendrecv_call(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, request) }
    }
}

mpi_fn! {
    /// `MPI_Isendrecv_replace_c`.
    MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c [comm] (
        buf: *mut c_void, count: i64, datatype: usize, dest: c_int, sendtag: c_int,
        source: c_int, recvtag: c_int, comm: usize, request: *mut usize,
    ) {
        // SAFETY: the caller's buffer and out-argument, as for the int form.
        unsafe { isendrecv_replace_call(buf, count, datatype, dest, sendtag, source, recvtag, comm, request) }
    }
}

mpi_fn! {
    /// `MPI_Buffer_attach_c`: a buffer of an `MPI_Count` size.
    MPI_Buffer_attach_c / PMPI_Buffer_attach_c (buffer: *mut c_void, size: i64) {
        attach(buffer, size)
    }
}

/// Writes a detached buffer's address and size.
///
/// # Safety
/// `buffer_addr` is really a `void **` out-argument (the standard's
/// binding); `size` is an out-argument.
unsafe fn detached(buffer_addr: *mut c_void, size: *mut i64, (addr, len): (usize, usize)) -> Res {
    // SAFETY: the caller's out-arguments; a size is at most isize::MAX.
    unsafe {
        put(buffer_addr.cast::<usize>(), addr)?;
        put(size, len as i64)
    }
}

mpi_fn! {
    /// `MPI_Buffer_detach_c`: as `MPI_Buffer_detach`, the size an
    /// `MPI_Count`.
    MPI_Buffer_detach_c / PMPI_Buffer_detach_c (buffer_addr: *mut c_void, size: *mut i64) {
        let region = detach(rt()?)?.unwrap_or((0, 0));
        // SAFETY: the caller's out-arguments.
        unsafe { detached(buffer_addr, size, region) }
    }
}

mpi_fn! {
    /// `MPI_Comm_attach_buffer_c` (MPI 4.1): a buffer of an `MPI_Count`
    /// size.
    MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c [comm] (comm: usize, buffer: *mut c_void, size: i64) {
        comm_attach(comm, buffer, size)
    }
}

mpi_fn! {
    /// `MPI_Comm_detach_buffer_c` (MPI 4.1): the size an `MPI_Count`.
    MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c [comm] (comm: usize, buffer_addr: *mut c_void, size: *mut i64) {
        let region = comm_detach(comm)?;
        // SAFETY: the caller's out-arguments.
        unsafe { detached(buffer_addr, size, region) }
    }
}

mpi_fn! {
    /// `MPI_Get_count_c`: whole elements in the status's bytes, above
    /// `INT_MAX` too (`MPI_UNDEFINED` if not whole).
    MPI_Get_count_c / PMPI_Get_count_c (status: *const MpiStatus, datatype: usize, count: *mut i64) {
        let ty = rt()?.any_type(datatype)?;
        // SAFETY: a status the caller filled (null is reported).
        let s = unsafe { get(status)? };
        // SAFETY: out-argument.
        unsafe { put(count, ty.count_of(s.bytes())) }
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
    fn counts_above_int_max_pass_the_shared_bodies_conversions() {
        use crate::datatype::{count_arg, predefined, TypeRef};
        let big = 5_033_164_800i64;
        assert_eq!(count_arg(big).unwrap(), 5_033_164_800usize);
        assert_eq!(count_arg(-1i64).unwrap_err().class, MPI_ERR_COUNT);
        assert_eq!(count_arg(i64::MIN).unwrap_err().class, MPI_ERR_COUNT);
        // The send and receive bodies' byte count, and `Get_count_c`'s
        // count back from the status's bytes.
        let byte = TypeRef::Pre(predefined(0x247).unwrap()); // MPI_BYTE
        let int = TypeRef::Pre(predefined(0x209).unwrap()); // MPI_INT
        let n = (1i64 << 31) + 8;
        assert_eq!(byte.bytes(n).unwrap(), n as usize);
        assert_eq!(byte.count_of(n as u64), n);
        assert_eq!(int.bytes(n).unwrap(), 4 * n as usize);
        assert_eq!(int.count_of(4 * n as u64), n);
        assert_eq!(
            int.count_of(4 * n as u64 + 2),
            i64::from(crate::abi::MPI_UNDEFINED)
        );
        assert_eq!(int.bytes(i64::MAX / 2).unwrap_err().class, MPI_ERR_COUNT);
        // The int forms' MPI_UNDEFINED for what does not fit an int.
        assert_eq!(crate::datatype::int_count(n), crate::abi::MPI_UNDEFINED);
        // Pack_c/Unpack_c positions and sizes above INT_MAX.
        let (pos, size) = crate::ffi::pack::position(n - 8, n).unwrap();
        assert_eq!((pos, size), ((n - 8) as usize, n as usize));
        assert_eq!(
            crate::ffi::pack::position(n + 1, n).unwrap_err().class,
            crate::abi::class::MPI_ERR_ARG
        );
    }

    #[test]
    fn a_send_args_count_is_widened_from_either_form() {
        let buf = std::ptr::null::<c_void>();
        let (datatype, dest, tag, comm) = (0x247usize, 1, 0, crate::abi::MPI_COMM_WORLD);
        let count: c_int = -5;
        assert_eq!(send_args!(buf, count, datatype, dest, tag, comm).count, -5);
        let count: i64 = 1 << 40;
        assert_eq!(
            send_args!(buf, count, datatype, dest, tag, comm).count,
            1 << 40
        );
    }

    #[test]
    fn displacements_fit_an_aint_on_64_bit_targets() {
        assert_eq!(aint(1 << 40).unwrap(), 1 << 40);
        assert_eq!(aint(-(1 << 40)).unwrap(), -(1 << 40));
        assert_eq!(aint(i64::MAX).unwrap() as i64, i64::MAX);
    }
}
