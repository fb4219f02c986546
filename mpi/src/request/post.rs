//! What a request does when its ferry operation completes.

use ferry::Completion;

use crate::datatype::buf::Unpack;
use crate::error::{Fail, Res};
use crate::request::object::{Report, ReqObj};

/// How a nonblocking collective's result reaches the program's buffers
/// (the collectives chapter describes it).
pub(crate) trait CopyOut: std::fmt::Debug + Send {
    /// Copies the result, `data`, out. The buffers are the program's,
    /// valid and untouched by anything else by MPI's rule for a
    /// nonblocking collective's output until it completes (the caller's
    /// [`Post::run`] contract).
    fn copy_out(&self, data: &[u8]) -> Res;
}

/// A request's post step; see [`Post::run`].
#[derive(Debug)]
pub(crate) enum Post {
    /// Nothing: the completion's status is the report.
    None,
    /// A receive staged in a vector (a non-contiguous datatype): unpack
    /// what arrived into the program's buffer.
    Unpack(Box<Unpack>),
    /// A nonblocking collective: copy the result out of the completion's
    /// vector into the program's buffers.
    Coll(Box<dyn CopyOut>),
    /// An ARecv (`MPIX_Iarecv`): hand the library's buffer over through
    /// the status.
    Arecv,
}

impl Post {
    /// True if the step writes the program's buffers, so the operation must
    /// be completed (not just looked at) before the program may read them.
    pub(crate) fn writes_buffers(&self) -> bool {
        matches!(self, Post::Unpack(_) | Post::Coll(_))
    }

    /// Runs the step on the completion, adjusting the report. The
    /// program's buffers it writes are valid and untouched by anything
    /// else until now (MPI's rule for a nonblocking operation until it
    /// completes: the promise of the tokens they were made from).
    pub(crate) fn run(self, c: Completion, report: &mut Report) -> Res {
        match self {
            Post::None => {
                // Hands a raw operation's loan record back to ferry.
                let _ = c.into_status();
                Ok(())
            }
            Post::Unpack(u) => {
                let got = c.status.bytes;
                let staged = c.into_vec::<u8>().map_err(Fail::from)?;
                u.run(&staged[..got.min(staged.len())]);
                Ok(())
            }
            Post::Coll(pieces) => {
                let out = c.into_vec::<u8>().map_err(Fail::from)?;
                pieces.copy_out(&out)
            }
            Post::Arecv => {
                report.arecv = c.into_buf();
                Ok(())
            }
        }
    }
}

/// Runs the post step of an active request that ferry completed with `c`,
/// and ends its activation: the request's report.
pub(crate) fn finish(obj: &mut ReqObj, c: Completion) -> Report {
    let comm = obj.comm;
    let post = std::mem::replace(&mut obj.post, Post::None);
    obj.end_activation();
    let mut report = Report::of(&c.status, comm);
    if let Err(f) = post.run(c, &mut report) {
        report.status.error = f.class;
        report.result = report.result.and(Err(f.on(comm)));
    }
    report
}
