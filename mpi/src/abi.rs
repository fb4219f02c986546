//! The MPI 5.0 ABI's fixed values, as the Rust side needs them: the
//! predefined handles, error classes and other constants of
//! `include/mpi.h`. The header and this file must agree; the C test
//! `mpi/tests/abi_values.c` checks the header against the library.
#![allow(missing_docs)]

use std::ffi::c_int;

// Versions.
pub const MPI_VERSION: c_int = 5;
pub const MPI_SUBVERSION: c_int = 0;
pub const MPI_ABI_VERSION: c_int = 1;
pub const MPI_ABI_SUBVERSION: c_int = 0;

// Predefined handles (pointer-sized values).
pub const MPI_OP_NULL: usize = 0x20;
pub const MPI_SUM: usize = 0x21;
pub const MPI_MIN: usize = 0x22;
pub const MPI_MAX: usize = 0x23;
pub const MPI_PROD: usize = 0x24;
pub const MPI_BAND: usize = 0x28;
pub const MPI_BOR: usize = 0x29;
pub const MPI_BXOR: usize = 0x2a;
pub const MPI_LAND: usize = 0x30;
pub const MPI_LOR: usize = 0x31;
pub const MPI_LXOR: usize = 0x32;
pub const MPI_MINLOC: usize = 0x38;
pub const MPI_MAXLOC: usize = 0x39;
pub const MPI_REPLACE: usize = 0x3c;
pub const MPI_NO_OP: usize = 0x3d;

pub const MPI_COMM_NULL: usize = 0x100;
pub const MPI_COMM_WORLD: usize = 0x101;
pub const MPI_COMM_SELF: usize = 0x102;

pub const MPI_GROUP_NULL: usize = 0x108;
pub const MPI_WIN_NULL: usize = 0x110;
pub const MPI_FILE_NULL: usize = 0x118;
pub const MPI_SESSION_NULL: usize = 0x120;
pub const MPI_GROUP_EMPTY: usize = 0x109;
pub const MPI_MESSAGE_NULL: usize = 0x128;
pub const MPI_MESSAGE_NO_PROC: usize = 0x129;

pub const MPI_INFO_NULL: usize = 0x130;
pub const MPI_INFO_ENV: usize = 0x131;

pub const MPI_ERRHANDLER_NULL: usize = 0x140;
pub const MPI_ERRORS_ARE_FATAL: usize = 0x141;
pub const MPI_ERRORS_RETURN: usize = 0x142;
pub const MPI_ERRORS_ABORT: usize = 0x143;

pub const MPI_REQUEST_NULL: usize = 0x180;

pub const MPI_DATATYPE_NULL: usize = 0x200;

// Buffer address constants.
pub const MPI_IN_PLACE: usize = 1;

// Wildcards and sentinels.
pub const MPI_ANY_SOURCE: c_int = -1;
pub const MPI_ANY_TAG: c_int = -2;
pub const MPI_PROC_NULL: c_int = -3;
pub const MPI_ROOT: c_int = -4;
pub const MPI_UNDEFINED: c_int = -32766;

// Thread levels.
pub const MPI_THREAD_SINGLE: c_int = 0;
pub const MPI_THREAD_FUNNELED: c_int = 1024;
pub const MPI_THREAD_SERIALIZED: c_int = 2048;
pub const MPI_THREAD_MULTIPLE: c_int = 4096;

// Comparison results.
pub const MPI_IDENT: c_int = 201;
pub const MPI_CONGRUENT: c_int = 202;
pub const MPI_SIMILAR: c_int = 203;
pub const MPI_UNEQUAL: c_int = 204;

// Topology kinds (MPI_Topo_test).
pub const MPI_CART: c_int = 211;
pub const MPI_GRAPH: c_int = 212;
pub const MPI_DIST_GRAPH: c_int = 213;

/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY`: sentinel addresses of a
/// distributed graph's weight arrays.
pub const MPI_UNWEIGHTED: usize = 10;
pub const MPI_WEIGHTS_EMPTY: usize = 11;

// Split types.
pub const MPI_COMM_TYPE_SHARED: c_int = 221;
pub const MPI_COMM_TYPE_HW_UNGUIDED: c_int = 222;
pub const MPI_COMM_TYPE_HW_GUIDED: c_int = 223;
pub const MPI_COMM_TYPE_RESOURCE_GUIDED: c_int = 224;

// Predefined attribute keys.
pub const MPI_KEYVAL_INVALID: c_int = 0;
pub const MPI_TAG_UB: c_int = 501;
pub const MPI_IO: c_int = 502;
pub const MPI_HOST: c_int = 503;
pub const MPI_WTIME_IS_GLOBAL: c_int = 504;
pub const MPI_UNIVERSE_SIZE: c_int = 505;
pub const MPI_APPNUM: c_int = 506;
pub const MPI_LASTUSEDCODE: c_int = 507;

// String limits.
pub const MPI_MAX_ERROR_STRING: usize = 512;
pub const MPI_MAX_INFO_KEY: usize = 256;
pub const MPI_MAX_INFO_VAL: usize = 1024;
pub const MPI_MAX_LIBRARY_VERSION_STRING: usize = 8192;
pub const MPI_MAX_OBJECT_NAME: usize = 128;
pub const MPI_MAX_PROCESSOR_NAME: usize = 256;

/// The error classes, 0 ..= 61 (`MPI_SUCCESS` ..= `MPI_ERR_ERRHANDLER`).
pub mod class {
    use std::ffi::c_int;
    pub const MPI_SUCCESS: c_int = 0;
    pub const MPI_ERR_BUFFER: c_int = 1;
    pub const MPI_ERR_COUNT: c_int = 2;
    pub const MPI_ERR_TYPE: c_int = 3;
    pub const MPI_ERR_TAG: c_int = 4;
    pub const MPI_ERR_COMM: c_int = 5;
    pub const MPI_ERR_RANK: c_int = 6;
    pub const MPI_ERR_REQUEST: c_int = 7;
    pub const MPI_ERR_ROOT: c_int = 8;
    pub const MPI_ERR_GROUP: c_int = 9;
    pub const MPI_ERR_OP: c_int = 10;
    pub const MPI_ERR_TOPOLOGY: c_int = 11;
    pub const MPI_ERR_DIMS: c_int = 12;
    pub const MPI_ERR_ARG: c_int = 13;
    pub const MPI_ERR_UNKNOWN: c_int = 14;
    pub const MPI_ERR_TRUNCATE: c_int = 15;
    pub const MPI_ERR_OTHER: c_int = 16;
    pub const MPI_ERR_INTERN: c_int = 17;
    pub const MPI_ERR_PENDING: c_int = 18;
    pub const MPI_ERR_IN_STATUS: c_int = 19;
    pub const MPI_ERR_INFO_KEY: c_int = 31;
    pub const MPI_ERR_INFO_NOKEY: c_int = 32;
    pub const MPI_ERR_INFO_VALUE: c_int = 33;
    pub const MPI_ERR_INFO: c_int = 34;
    pub const MPI_ERR_KEYVAL: c_int = 36;
    pub const MPI_ERR_NO_MEM: c_int = 39;
    pub const MPI_ERR_ASSERT: c_int = 22;
    pub const MPI_ERR_DISP: c_int = 26;
    pub const MPI_ERR_LOCKTYPE: c_int = 37;
    pub const MPI_ERR_RMA_CONFLICT: c_int = 47;
    pub const MPI_ERR_RMA_RANGE: c_int = 48;
    pub const MPI_ERR_RMA_SHARED: c_int = 49;
    pub const MPI_ERR_RMA_SYNC: c_int = 50;
    pub const MPI_ERR_SIZE: c_int = 52;
    pub const MPI_ERR_WIN: c_int = 56;
    pub const MPI_ERR_CONVERSION: c_int = 25;
    pub const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 54;
    pub const MPI_ERR_UNSUPPORTED_OPERATION: c_int = 55;
    pub const MPI_ERR_PROC_ABORTED: c_int = 58;
    pub const MPI_ERR_VALUE_TOO_LARGE: c_int = 59;
    pub const MPI_ERR_SESSION: c_int = 60;
    pub const MPI_ERR_ERRHANDLER: c_int = 61;
    pub const MPI_ERR_ABI: c_int = 62;
    /// The last standard class below the tools interface's.
    pub const LAST: c_int = 62;
    /// The tools interface's classes (the MPI_T functions return them).
    pub const MPI_T_ERR_CANNOT_INIT: c_int = 1001;
    pub const MPI_T_ERR_NOT_INITIALIZED: c_int = 1003;
    pub const MPI_T_ERR_INVALID: c_int = 1006;
    pub const MPI_T_ERR_INVALID_INDEX: c_int = 1007;
    pub const MPI_T_ERR_INVALID_SESSION: c_int = 1009;
    pub const MPI_T_ERR_INVALID_HANDLE: c_int = 1010;
    pub const MPI_T_ERR_INVALID_NAME: c_int = 1011;
    pub const MPI_T_ERR_OUT_OF_HANDLES: c_int = 1012;
    pub const MPI_T_ERR_CVAR_SET_NEVER: c_int = 1015;
    pub const MPI_T_ERR_PVAR_NO_WRITE: c_int = 1016;
    pub const MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = 1017;
    pub const MPI_T_ERR_PVAR_NO_ATOMIC: c_int = 1018;
    /// `MPI_ERR_LASTCODE` of the ABI.
    pub const MPI_ERR_LASTCODE: c_int = 0x3fff;
}

/// `MPI_Status` as the ABI lays it out: three public fields, then five
/// ints the implementation owns. ferry keeps the received byte count in
/// `internal[0..2]` (low, high 32 bits) and the cancelled flag in
/// `internal[2]`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MpiStatus {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    pub internal: [c_int; 5],
}

const _: () = assert!(std::mem::size_of::<MpiStatus>() == 32);

impl MpiStatus {
    /// The empty status (null and inactive requests, sends): source
    /// `MPI_ANY_SOURCE`, tag `MPI_ANY_TAG`, error `MPI_SUCCESS`, count 0.
    pub const EMPTY: MpiStatus = MpiStatus {
        source: MPI_ANY_SOURCE,
        tag: MPI_ANY_TAG,
        error: class::MPI_SUCCESS,
        internal: [0; 5],
    };

    /// Bytes received.
    pub fn bytes(&self) -> u64 {
        (self.internal[0] as u32 as u64) | ((self.internal[1] as u32 as u64) << 32)
    }

    /// Sets the bytes received.
    pub fn set_bytes(&mut self, bytes: u64) {
        self.internal[0] = bytes as u32 as c_int;
        self.internal[1] = (bytes >> 32) as u32 as c_int;
    }

    /// True if the operation was cancelled.
    pub fn cancelled(&self) -> bool {
        self.internal[2] != 0
    }

    /// The MPI status of a ferry status (its error as a class).
    pub fn from_ferry(s: &ferry::Status) -> MpiStatus {
        let mut m = MpiStatus {
            source: source_out(s.source),
            tag: tag_out(s.tag),
            error: s
                .error
                .map_or(class::MPI_SUCCESS, |e| crate::error::class_of_core(&e)),
            internal: [0; 5],
        };
        m.set_bytes(s.bytes as u64);
        m.internal[2] = c_int::from(s.cancelled);
        m
    }
}

// ferry's own sentinels differ from the ABI's (ferry: ANY_SOURCE -2,
// PROC_NULL -1, ANY_TAG -1), so ranks and tags are translated both ways.
// Any other negative value becomes one ferry rejects (`i32::MIN`), so that
// e.g. MPI_ANY_TAG passed as a rank (-2, ferry's ANY_SOURCE) is an error.

/// A rank argument in ferry's terms.
#[inline]
pub fn rank_in(rank: c_int) -> ferry::Rank {
    // A real rank first: one test on the path every send and receive takes.
    match rank {
        r if r >= 0 => r,
        MPI_ANY_SOURCE => ferry::ANY_SOURCE,
        MPI_PROC_NULL => ferry::PROC_NULL,
        _ => i32::MIN,
    }
}

/// A tag argument in ferry's terms.
#[inline]
pub fn tag_in(tag: c_int) -> ferry::Tag {
    match tag {
        t if t >= 0 => t,
        MPI_ANY_TAG => ferry::ANY_TAG,
        _ => i32::MIN,
    }
}

/// A status source in the ABI's terms.
#[inline]
pub fn source_out(source: ferry::Rank) -> c_int {
    match source {
        ferry::ANY_SOURCE => MPI_ANY_SOURCE,
        ferry::PROC_NULL => MPI_PROC_NULL,
        s => s,
    }
}

/// A status tag in the ABI's terms.
#[inline]
pub fn tag_out(tag: ferry::Tag) -> c_int {
    if tag == ferry::ANY_TAG {
        MPI_ANY_TAG
    } else {
        tag
    }
}

/// `MPIX_REQUEST_EMPTY` (ferry's extension): the request of an operation
/// that completed inside its initiating call; in the request handles'
/// range of the ABI, next to `MPI_REQUEST_NULL` (0x180), a value the ABI
/// leaves unused.
pub const MPIX_REQUEST_EMPTY: usize = 0x181;

/// The C callback types of the ABI (`mpi.h`'s `typedef`s), as the
/// exported functions take them.
pub mod callback {
    use std::ffi::{c_int, c_void};

    use crate::abi::MpiStatus;

    /// `MPI_User_function`: `(invec, inoutvec, len, datatype)`.
    pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut usize);
    /// `MPI_User_function_c`: the same with an `MPI_Count` length.
    pub type UserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut usize);
    /// `MPI_Comm_errhandler_function`: `(comm *, error_code *, ...)`.
    pub type CommErrhFn = unsafe extern "C" fn(*mut usize, *mut c_int, ...);
    /// `MPI_Session_errhandler_function`: `(session *, error_code *, ...)`,
    /// the same shape (a handle's address, the code's).
    pub type SessionErrhFn = CommErrhFn;
    /// `MPI_Grequest_query_function`: `(extra_state, status)`.
    pub type GrequestQueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
    /// `MPI_Grequest_free_function`: `(extra_state)`.
    pub type GrequestFreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
    /// `MPI_Grequest_cancel_function`: `(extra_state, complete)`.
    pub type GrequestCancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;
    /// `MPI_Comm_copy_attr_function`: `(comm, keyval, extra_state,
    /// attribute_val_in, attribute_val_out, flag)`.
    pub type CommCopyAttrFn = unsafe extern "C" fn(
        usize,
        c_int,
        *mut c_void,
        *mut c_void,
        *mut c_void,
        *mut c_int,
    ) -> c_int;
    /// `MPI_Comm_delete_attr_function`: `(comm, keyval, attribute_val,
    /// extra_state)`.
    pub type CommDeleteAttrFn =
        unsafe extern "C" fn(usize, c_int, *mut c_void, *mut c_void) -> c_int;

    /// `MPI_COMM_NULL_COPY_FN` / `MPI_COMM_NULL_DELETE_FN`.
    pub const NULL_FN: usize = 0;
    /// `MPI_COMM_DUP_FN`.
    pub const DUP_FN: usize = 1;

    /// An attribute key's copy callback.
    #[derive(Debug, Clone, Copy)]
    pub enum CopyCb {
        /// `MPI_COMM_NULL_COPY_FN`: a duplicate does not get the attribute.
        Null,
        /// `MPI_COMM_DUP_FN`: a duplicate gets the same value.
        Dup,
        /// The program's function.
        Program(CommCopyAttrFn),
    }

    /// An attribute key's delete callback.
    #[derive(Debug, Clone, Copy)]
    pub enum DeleteCb {
        /// `MPI_COMM_NULL_DELETE_FN`.
        Null,
        /// The program's function.
        Program(CommDeleteAttrFn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_translate_both_ways_and_strays_are_invalid() {
        assert_eq!(rank_in(MPI_ANY_SOURCE), ferry::ANY_SOURCE);
        assert_eq!(rank_in(MPI_PROC_NULL), ferry::PROC_NULL);
        assert_eq!(rank_in(-2), i32::MIN);
        assert_eq!(rank_in(-4), i32::MIN);
        assert_eq!(rank_in(5), 5);
        assert_eq!(tag_in(MPI_ANY_TAG), ferry::ANY_TAG);
        assert_eq!(tag_in(-1), i32::MIN);
        assert_eq!(tag_in(7), 7);
        assert_eq!(source_out(rank_in(MPI_PROC_NULL)), MPI_PROC_NULL);
        assert_eq!(source_out(rank_in(MPI_ANY_SOURCE)), MPI_ANY_SOURCE);
        assert_eq!(tag_out(tag_in(MPI_ANY_TAG)), MPI_ANY_TAG);
        let empty = MpiStatus::from_ferry(&ferry::Status::EMPTY);
        assert_eq!(empty, MpiStatus::EMPTY);
    }

    #[test]
    fn status_byte_counts_round_trip_above_4_gib() {
        let mut s = MpiStatus::EMPTY;
        for b in [0u64, 1, 0xffff_ffff, 0x1_0000_0000, 0x7fff_ffff_ffff] {
            s.set_bytes(b);
            assert_eq!(s.bytes(), b);
        }
    }
}
