//! What a request does when its ferry operation completes.

use ferry::Completion;

use super::req::Report;
use crate::error::Res;

/// A request's post step; see [`Post::run`].
#[derive(Debug)]
pub(crate) enum Post {
    /// Nothing: the completion's status is the report.
    None,
}

impl Post {
    /// True if there is no step to run.
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Post::None)
    }

    /// Runs the step on the completion, adjusting the report.
    ///
    /// # Safety
    /// The program's buffers this step writes are valid and untouched by
    /// anything else (MPI's rule for a nonblocking operation until it
    /// completes).
    pub(crate) unsafe fn run(self, c: Completion, report: &mut Report) -> Res {
        let _ = (c, report);
        match self {
            Post::None => Ok(()),
        }
    }
}
