//! Errors at the C boundary: [`Fail`] (what a call failed with, and on
//! which communicator), the mapping of ferry's typed errors to the
//! standard's error classes, and the classes' strings.
//!
//! Error codes are the classes themselves: `MPI_Error_class(code)` is
//! `code`. The detail (ferry's message: which rank, which sizes) is printed
//! by `MPI_ERRORS_ARE_FATAL` and `MPI_ERRORS_ABORT`.

use std::borrow::Cow;
use std::ffi::c_int;

use ferry::ferry_core::{self, DeviceError, PeerError, UsageError};
use ferry::{ApiError, Error};

use crate::abi::class::*;
use crate::abi::MPI_COMM_SELF;
use crate::handle::BadHandle;

/// A failed call: the class it returns, a message for the fatal handlers,
/// and the communicator whose error handler is invoked ([`Failure`]).
/// Boxed, so that every call's `Res<T>` is as small as `T` plus a pointer
/// and the success path moves no error-sized results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail(Box<Failure>);

/// What a [`Fail`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error class (and code).
    pub class: c_int,
    /// What went wrong, for people.
    pub what: Cow<'static, str>,
    /// The communicator handle whose error handler applies; `None` means
    /// `MPI_COMM_SELF` (MPI 4: errors not tied to an object).
    pub comm: Option<usize>,
}

impl std::ops::Deref for Fail {
    type Target = Failure;
    fn deref(&self) -> &Failure {
        &self.0
    }
}

impl std::ops::DerefMut for Fail {
    fn deref_mut(&mut self) -> &mut Failure {
        &mut self.0
    }
}

/// The result of a call's body.
pub type Res<T = ()> = Result<T, Fail>;

impl Fail {
    /// A failure of `class` with a fixed message.
    #[cold]
    pub fn new(class: c_int, what: &'static str) -> Fail {
        Fail(Box::new(Failure {
            class,
            what: Cow::Borrowed(what),
            comm: None,
        }))
    }

    /// A failure of `class` with a formatted message.
    #[cold]
    pub fn msg(class: c_int, what: String) -> Fail {
        Fail(Box::new(Failure {
            class,
            what: Cow::Owned(what),
            comm: None,
        }))
    }

    /// Attributes the failure to communicator `comm` (unless an inner step
    /// already did).
    pub fn on(mut self, comm: usize) -> Fail {
        self.comm.get_or_insert(comm);
        self
    }

    /// The communicator whose handler applies.
    pub fn comm(&self) -> usize {
        self.comm.unwrap_or(MPI_COMM_SELF)
    }

    /// A bad handle of the kind whose error class is `class`.
    pub fn handle(class: c_int, bad: BadHandle, kind: &'static str) -> Fail {
        let why = match bad {
            BadHandle::Foreign => "is not a valid",
            BadHandle::Stale => "names a freed",
            BadHandle::Busy => "names an object another call is completing:",
        };
        Fail::msg(class, format!("the handle {why} {kind}"))
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::msg(class_of(&e), e.to_string())
    }
}

impl From<ferry_core::Error> for Fail {
    fn from(e: ferry_core::Error) -> Fail {
        Fail::msg(class_of_core(&e), e.to_string())
    }
}

/// The standard class of a ferry error.
pub fn class_of(e: &Error) -> c_int {
    match e {
        Error::Usage(u) => class_of_usage(u),
        Error::Api(a) => match a {
            ApiError::InvalidRank { .. } => MPI_ERR_RANK,
            ApiError::InvalidGroup(_) => MPI_ERR_GROUP,
            ApiError::InvalidTopology(_) => MPI_ERR_TOPOLOGY,
            ApiError::ElementSize { .. } | ApiError::Alignment { .. } => MPI_ERR_BUFFER,
            ApiError::MixedWorlds => MPI_ERR_REQUEST,
            ApiError::MessageTaken => MPI_ERR_REQUEST,
            ApiError::ContextsExhausted => MPI_ERR_OTHER,
            ApiError::Unsupported(_) => MPI_ERR_UNSUPPORTED_OPERATION,
            ApiError::ThreadLevel { .. } => MPI_ERR_OTHER,
            ApiError::Finalized => MPI_ERR_OTHER,
            _ => MPI_ERR_OTHER,
        },
        Error::Peer(p) => class_of_peer(p),
        Error::Device(d) => class_of_device(d),
        Error::Internal(_) => MPI_ERR_INTERN,
        // Config, bootstrap and setup failures: the environment.
        _ => MPI_ERR_OTHER,
    }
}

/// The standard class of an engine error (what a status carries).
pub fn class_of_core(e: &ferry_core::Error) -> c_int {
    match e {
        ferry_core::Error::Usage(u) => class_of_usage(u),
        ferry_core::Error::Peer(p) => class_of_peer(p),
        ferry_core::Error::Device(d) => class_of_device(d),
        ferry_core::Error::Internal(_) => MPI_ERR_INTERN,
        _ => MPI_ERR_OTHER,
    }
}

fn class_of_usage(u: &UsageError) -> c_int {
    match u {
        UsageError::InvalidRank { .. } => MPI_ERR_RANK,
        UsageError::InvalidTag { .. } => MPI_ERR_TAG,
        UsageError::Truncated { .. } => MPI_ERR_TRUNCATE,
        UsageError::StaleHandle | UsageError::WrongRequestKind(_) | UsageError::RequestActive => {
            MPI_ERR_REQUEST
        }
        UsageError::MessageTooLarge { .. } => MPI_ERR_COUNT,
        UsageError::LengthMismatch(_) => MPI_ERR_COUNT,
        // Members disagree on the call (root, count, order): the standard
        // has no class for it; MPICH reports MPI_ERR_OTHER too.
        UsageError::CollectiveMismatch { .. } => MPI_ERR_OTHER,
        UsageError::OpNotDefined { .. } => MPI_ERR_OP,
        UsageError::Unsupported(_) => MPI_ERR_UNSUPPORTED_OPERATION,
        UsageError::OutOfMemory { .. } => MPI_ERR_NO_MEM,
        UsageError::RmaRange { .. } => MPI_ERR_RMA_RANGE,
        UsageError::RmaSync(_) => MPI_ERR_RMA_SYNC,
        UsageError::RmaRefused => MPI_ERR_RMA_CONFLICT,
        _ => MPI_ERR_OTHER,
    }
}

/// A dead peer: the ABI has no MPI_ERR_PROC_FAILED (that is ULFM's), so
/// it is MPI_ERR_OTHER, as the ABI's classes leave no closer one for a
/// process that died without calling MPI_Abort.
fn class_of_peer(p: &PeerError) -> c_int {
    match p {
        PeerError::Died { .. } | PeerError::FailedPending { .. } => MPI_ERR_OTHER,
        PeerError::Protocol { .. } | PeerError::TransferFailed { .. } => MPI_ERR_OTHER,
        _ => MPI_ERR_OTHER,
    }
}

fn class_of_device(d: &DeviceError) -> c_int {
    match d {
        DeviceError::Unsupported(_) => MPI_ERR_UNSUPPORTED_OPERATION,
        _ => MPI_ERR_OTHER,
    }
}

/// The standard string of each class, indexed by class.
const STRINGS: [&str; 63] = [
    "MPI_SUCCESS: no error",
    "MPI_ERR_BUFFER: invalid buffer pointer",
    "MPI_ERR_COUNT: invalid count argument",
    "MPI_ERR_TYPE: invalid datatype",
    "MPI_ERR_TAG: invalid tag",
    "MPI_ERR_COMM: invalid communicator",
    "MPI_ERR_RANK: invalid rank",
    "MPI_ERR_REQUEST: invalid request",
    "MPI_ERR_ROOT: invalid root",
    "MPI_ERR_GROUP: invalid group",
    "MPI_ERR_OP: invalid reduction operation",
    "MPI_ERR_TOPOLOGY: invalid topology",
    "MPI_ERR_DIMS: invalid dimension argument",
    "MPI_ERR_ARG: invalid argument of some other kind",
    "MPI_ERR_UNKNOWN: unknown error",
    "MPI_ERR_TRUNCATE: message truncated on receive",
    "MPI_ERR_OTHER: known error not in this list",
    "MPI_ERR_INTERN: internal error in ferry (please report)",
    "MPI_ERR_PENDING: pending request",
    "MPI_ERR_IN_STATUS: error code is in status",
    "MPI_ERR_ACCESS: permission denied",
    "MPI_ERR_AMODE: invalid file access mode",
    "MPI_ERR_ASSERT: invalid assertion argument",
    "MPI_ERR_BAD_FILE: invalid file name",
    "MPI_ERR_BASE: invalid base address",
    "MPI_ERR_CONVERSION: data conversion error",
    "MPI_ERR_DISP: invalid displacement",
    "MPI_ERR_DUP_DATAREP: data representation already defined",
    "MPI_ERR_FILE_EXISTS: file exists",
    "MPI_ERR_FILE_IN_USE: file in use",
    "MPI_ERR_FILE: invalid file handle",
    "MPI_ERR_INFO_KEY: info key too long",
    "MPI_ERR_INFO_NOKEY: info key not defined",
    "MPI_ERR_INFO_VALUE: info value too long",
    "MPI_ERR_INFO: invalid info object",
    "MPI_ERR_IO: I/O error",
    "MPI_ERR_KEYVAL: invalid attribute key",
    "MPI_ERR_LOCKTYPE: invalid lock type",
    "MPI_ERR_NAME: invalid service name",
    "MPI_ERR_NO_MEM: out of memory",
    "MPI_ERR_NOT_SAME: collective arguments not identical",
    "MPI_ERR_NO_SPACE: not enough space",
    "MPI_ERR_NO_SUCH_FILE: file does not exist",
    "MPI_ERR_PORT: invalid port name",
    "MPI_ERR_QUOTA: quota exceeded",
    "MPI_ERR_READ_ONLY: read-only file or file system",
    "MPI_ERR_RMA_ATTACH: memory cannot be attached",
    "MPI_ERR_RMA_CONFLICT: conflicting accesses to a window",
    "MPI_ERR_RMA_RANGE: target memory outside the window",
    "MPI_ERR_RMA_SHARED: memory cannot be shared",
    "MPI_ERR_RMA_SYNC: wrong synchronization of RMA calls",
    "MPI_ERR_SERVICE: invalid service name",
    "MPI_ERR_SIZE: invalid size argument",
    "MPI_ERR_SPAWN: error spawning processes",
    "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
    "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported by this library",
    "MPI_ERR_WIN: invalid window",
    "MPI_ERR_RMA_FLAVOR: wrong window flavor",
    "MPI_ERR_PROC_ABORTED: a peer process aborted",
    "MPI_ERR_VALUE_TOO_LARGE: value too large to store",
    "MPI_ERR_SESSION: invalid session",
    "MPI_ERR_ERRHANDLER: invalid error handler",
    "MPI_ERR_ABI: the MPI ABI does not match",
];

/// The tools interface's classes, from `MPI_T_ERR_CANNOT_INIT` (1001).
const T_STRINGS: [&str; 18] = [
    "MPI_T_ERR_CANNOT_INIT: the tools interface cannot be initialized",
    "MPI_T_ERR_NOT_ACCESSIBLE: not accessible",
    "MPI_T_ERR_NOT_INITIALIZED: the tools interface is not initialized",
    "MPI_T_ERR_NOT_SUPPORTED: not supported",
    "MPI_T_ERR_MEMORY: out of memory",
    "MPI_T_ERR_INVALID: invalid use of the tools interface",
    "MPI_T_ERR_INVALID_INDEX: invalid or out-of-range index",
    "MPI_T_ERR_INVALID_ITEM: invalid item index",
    "MPI_T_ERR_INVALID_SESSION: invalid performance variable session",
    "MPI_T_ERR_INVALID_HANDLE: invalid handle",
    "MPI_T_ERR_INVALID_NAME: no variable of that name",
    "MPI_T_ERR_OUT_OF_HANDLES: no more handles",
    "MPI_T_ERR_OUT_OF_SESSIONS: no more sessions",
    "MPI_T_ERR_CVAR_SET_NOT_NOW: the control variable cannot be set now",
    "MPI_T_ERR_CVAR_SET_NEVER: the control variable cannot be set",
    "MPI_T_ERR_PVAR_NO_WRITE: the performance variable cannot be written or reset",
    "MPI_T_ERR_PVAR_NO_STARTSTOP: the performance variable cannot be started or stopped",
    "MPI_T_ERR_PVAR_NO_ATOMIC: the performance variable cannot be read and reset atomically",
];

/// The string of error code `code` (`None` for a code no class has).
pub fn string_of(code: c_int) -> Option<&'static str> {
    let (table, first): (&[&str], c_int) = if code >= MPI_T_ERR_CANNOT_INIT {
        (&T_STRINGS, MPI_T_ERR_CANNOT_INIT)
    } else {
        (&STRINGS, 0)
    };
    usize::try_from(code - first)
        .ok()
        .and_then(|i| table.get(i))
        .copied()
}

/// The string of any error code, the program's own included (`None` for
/// a number that is no code).
pub fn code_string(code: c_int) -> Option<std::borrow::Cow<'static, str>> {
    string_of(code)
        .map(std::borrow::Cow::Borrowed)
        .or_else(|| crate::usererr::string_of(code).map(std::borrow::Cow::Owned))
}

/// True for a valid standard error code (every one is a class).
pub fn is_valid_code(code: c_int) -> bool {
    string_of(code).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_own_string_named_after_it() {
        assert_eq!(STRINGS.len() as c_int, LAST + 1);
        for (class, name) in [
            (MPI_SUCCESS, "MPI_SUCCESS"),
            (MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"),
            (
                MPI_ERR_UNSUPPORTED_OPERATION,
                "MPI_ERR_UNSUPPORTED_OPERATION",
            ),
            (MPI_ERR_ERRHANDLER, "MPI_ERR_ERRHANDLER"),
            (MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"),
            (MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL"),
        ] {
            assert!(string_of(class).unwrap().starts_with(name), "{class}");
        }
        assert_eq!(string_of(-1), None);
        assert_eq!(string_of(LAST + 1), None);
    }

    #[test]
    fn ferry_errors_map_to_the_standard_classes() {
        let cases: [(Error, c_int); 9] = [
            (
                UsageError::InvalidRank { rank: 9, size: 4 }.into(),
                MPI_ERR_RANK,
            ),
            (UsageError::InvalidTag { tag: -7 }.into(), MPI_ERR_TAG),
            (
                UsageError::Truncated {
                    message: 8,
                    capacity: 4,
                }
                .into(),
                MPI_ERR_TRUNCATE,
            ),
            (UsageError::StaleHandle.into(), MPI_ERR_REQUEST),
            (
                UsageError::OpNotDefined {
                    op: "band",
                    datatype: ferry_core::coll::reduce::Datatype::F32,
                }
                .into(),
                MPI_ERR_OP,
            ),
            (
                ApiError::InvalidRank { rank: 5, size: 2 }.into(),
                MPI_ERR_RANK,
            ),
            (
                ferry_core::Error::Peer(PeerError::Died { rank: 1 }).into(),
                MPI_ERR_OTHER,
            ),
            (Error::Internal("x"), MPI_ERR_INTERN),
            (ApiError::Finalized.into(), MPI_ERR_OTHER),
        ];
        for (e, class) in cases {
            assert_eq!(class_of(&e), class, "{e}");
            assert_eq!(Fail::from(e).class, class);
        }
        let died = ferry_core::Error::Peer(PeerError::Died { rank: 3 });
        assert_eq!(class_of_core(&died), MPI_ERR_OTHER);
        let t = ferry_core::Error::Usage(UsageError::Truncated {
            message: 2,
            capacity: 1,
        });
        assert_eq!(class_of_core(&t), MPI_ERR_TRUNCATE);
    }

    #[test]
    fn a_failure_keeps_the_first_communicator_it_is_attributed_to() {
        let f = Fail::new(MPI_ERR_ARG, "x");
        assert_eq!(f.comm(), MPI_COMM_SELF);
        let f = f.on(0x101).on(0x102);
        assert_eq!(f.comm(), 0x101);
    }
}
