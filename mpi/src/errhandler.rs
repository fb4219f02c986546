//! Error handlers: the three predefined ones and the program's own
//! (`MPI_Comm_create_errhandler`), and what raising an error does.
//!
//! Calling a user handler is C code, so it happens in `ffi::raise`; this
//! module decides what to do and formats the fatal message.

use std::ffi::c_int;
use std::sync::Arc;

use crate::abi::*;
use crate::error::Fail;

/// `MPI_Comm_errhandler_function`: `void f(MPI_Comm *comm, int *code, ...)`.
pub use crate::abi::callback::CommErrhFn;

/// Error handlers the program made (and handles `get_errhandler` gave):
/// process-wide, as a session's handler is made before the session
/// starts the runtime.
pub static ERRHANDLERS: std::sync::Mutex<crate::handle::Table<Errh>> =
    std::sync::Mutex::new(crate::handle::Table::new(crate::handle::Kind::Errhandler));

/// An error handler.
#[derive(Debug, Clone)]
pub enum Errh {
    /// `MPI_ERRORS_ARE_FATAL` (the default): message, then the job ends.
    Fatal,
    /// `MPI_ERRORS_RETURN`: the call returns the error code.
    Return,
    /// `MPI_ERRORS_ABORT`: message, then the communicator's processes end
    /// (here the job: ferry has no partial abort).
    Abort,
    /// The program's own function; the call then returns the code.
    User(Arc<UserErrh>),
}

/// A handler made by `MPI_Comm_create_errhandler`. Shared (`Arc`) by the
/// handles and communicators that refer to it: `MPI_Errhandler_free`
/// removes a handle, and the handler lives while a communicator uses it.
#[derive(Debug)]
pub struct UserErrh {
    /// The C function.
    pub func: CommErrhFn,
}

impl Errh {
    /// The handler a predefined handle names.
    pub fn predefined(handle: usize) -> Option<Errh> {
        match handle {
            MPI_ERRORS_ARE_FATAL => Some(Errh::Fatal),
            MPI_ERRORS_RETURN => Some(Errh::Return),
            MPI_ERRORS_ABORT => Some(Errh::Abort),
            _ => None,
        }
    }

    /// The predefined handle of a predefined handler.
    pub fn predefined_handle(&self) -> Option<usize> {
        match self {
            Errh::Fatal => Some(MPI_ERRORS_ARE_FATAL),
            Errh::Return => Some(MPI_ERRORS_RETURN),
            Errh::Abort => Some(MPI_ERRORS_ABORT),
            Errh::User(_) => None,
        }
    }
}

/// The message the fatal handlers print: the call, the error's class
/// string and ferry's detail.
pub fn fatal_message(rank: Option<i32>, call: &str, fail: &Fail) -> String {
    let class = crate::error::code_string(fail.class)
        .filter(|s| !s.is_empty())
        .unwrap_or(std::borrow::Cow::Borrowed("unknown error class"));
    let who = rank.map_or_else(String::new, |r| format!(" rank {r}:"));
    format!(
        "ferry-mpi:{who} {call} failed: {class} (error class {}): {}",
        fail.class, fail.what
    )
}

/// Ends the job: ferry has no partial abort, and a rank that exits
/// non-zero makes `ferryrun` (and Hydra) kill the others. An exit code that
/// would be 0 modulo 256 becomes 1, so the job is seen to fail.
pub fn abort_job(code: c_int) -> ! {
    let code = match code & 0xff {
        0 => 1,
        c => c,
    };
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::class::MPI_ERR_RANK;

    #[test]
    fn the_fatal_message_names_the_call_and_the_error() {
        let f = Fail::msg(MPI_ERR_RANK, "invalid rank 9 (communicator size 4)".into());
        let m = fatal_message(Some(2), "MPI_Send", &f);
        assert!(m.contains("rank 2"), "{m}");
        assert!(m.contains("MPI_Send"), "{m}");
        assert!(m.contains("MPI_ERR_RANK"), "{m}");
        assert!(m.contains("invalid rank 9"), "{m}");
    }

    #[test]
    fn predefined_handlers_round_trip() {
        for h in [MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT] {
            assert_eq!(Errh::predefined(h).unwrap().predefined_handle(), Some(h));
        }
        assert!(Errh::predefined(MPI_ERRHANDLER_NULL).is_none());
    }
}
