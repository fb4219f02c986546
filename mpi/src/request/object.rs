//! The object behind an `MPI_Request` handle: the ferry operation (or a
//! completion already known), what to do when it completes (unpack a
//! staged receive, copy a collective's result out), and, for persistent
//! requests, how to start it again.
//!
//! Completing a request is split in two so that the completion calls
//! (`batch.rs`) can run ferry's own multiple-completion functions over
//! many requests at once: ferry completes the [`State::Active`] operation,
//! then [`finish`](crate::request::post::finish) runs the request's
//! [`Post`] step on the completion. [`ReqObj::wait`], [`ReqObj::test`] and
//! [`ReqObj::peek`] complete (or look at) one object on its own, blocking
//! in ferry on what it waits for.

use ferry::Request;

use crate::abi::MpiStatus;
use crate::error::{Fail, Res};

use crate::ffi::args::StatusOut;
use crate::request::post::{finish, Post};

/// A request: see the module docs.
#[derive(Debug)]
pub(crate) struct ReqObj {
    /// Where the operation is.
    pub(crate) state: State,
    /// The communicator whose error handler the completion raises errors
    /// on (a handle: it may have been freed since, then `MPI_COMM_SELF`'s
    /// handler applies).
    pub(crate) comm: usize,
    /// What to do with the completion of the current activation.
    pub(crate) post: Post,
    /// How to start the request again (persistent requests only).
    pub(crate) persist: Option<Box<dyn Restart>>,
}

/// How a persistent request starts again: the chapter that made it
/// (point-to-point, collectives) describes its operation.
pub(crate) trait Restart: std::fmt::Debug + Send {
    /// Starts the operation anew: its state and post step. Its buffers
    /// are the program's, valid by MPI's rule for persistent requests.
    fn start(&self) -> Res<(State, Post)>;
}

/// A request the C layer completes itself, with no single ferry operation
/// behind it (`MPI_Comm_idup`, `MPI_Isendrecv`, a buffer flush): polled by
/// the completion calls until it is done. The chapter that made it
/// implements this.
pub(crate) trait Polled: std::fmt::Debug + Send {
    /// Advances it once: its status when it is complete.
    fn poll(&mut self) -> Res<Option<MpiStatus>>;

    /// Blocks until it is complete (by default, polling).
    fn wait(&mut self) -> Res<MpiStatus> {
        loop {
            if let Some(s) = self.poll()? {
                return Ok(s);
            }
            std::thread::yield_now();
        }
    }

    /// `MPI_Cancel` on it (by default nothing: it goes on).
    fn cancel(&self) -> Res {
        Ok(())
    }

    /// True if, freed by the program while pending, it must still be
    /// polled to its end (a post step of its own to run).
    fn outlives_free(&self) -> bool {
        false
    }
}

/// Where a request's operation is.
#[derive(Debug)]
pub(crate) enum State {
    /// A ferry operation in flight.
    Active(Request),
    /// A contiguous send or receive on a communicator with job ranks, in
    /// flight, known by its engine handle alone: `batch.rs` completes arrays
    /// of them without a ferry `Request`. Every other path takes requests
    /// out of the table through [`ReqObj::promote`], which makes it
    /// `Active`, so no other code ever sees this state.
    Raw(ferry::RawRequest),
    /// Completed inside its initiating call (`MPI_Ibsend`, a persistent
    /// buffered send's start, a finished `MPI_Comm_idup`): the status the
    /// next completion call reports.
    Ready(MpiStatus),
    /// A persistent request that is not started (or completed since).
    Inactive,
    /// A request the C layer completes itself ([`Polled`]).
    Polled(Box<dyn Polled>),
    /// A generalized request (`MPI_Grequest_start`): complete once the
    /// program calls `MPI_Grequest_complete`.
    Greq(Box<crate::request::greq::Greq>),
}

impl ReqObj {
    /// A request for a ferry operation in flight.
    #[inline]
    pub(crate) fn active(req: Request, comm: usize, post: Post) -> ReqObj {
        ReqObj {
            state: State::Active(req),
            comm,
            post,
            persist: None,
        }
    }

    /// A raw operation in flight (see [`State::Raw`]).
    pub(crate) fn raw(req: ferry::RawRequest, comm: usize) -> ReqObj {
        ReqObj {
            state: State::Raw(req),
            comm,
            post: Post::None,
            persist: None,
        }
    }

    /// Makes a raw operation an ordinary ferry request, owned by this
    /// object (its drop frees the operation). Any communicator with job
    /// ranks serves: the world's.
    pub(crate) fn promote(&mut self, rt: &crate::state::Runtime) {
        if let State::Raw(r) = self.state {
            self.state = State::Active(Request::from_raw(&rt.world_comm.comm, r));
        }
    }

    /// A request that completed inside its call with `status`.
    pub(crate) fn ready(status: MpiStatus, comm: usize) -> ReqObj {
        ReqObj {
            state: State::Ready(status),
            comm,
            post: Post::None,
            persist: None,
        }
    }

    /// True if the request stays after it completes (persistent).
    pub(crate) fn persistent(&self) -> bool {
        self.persist.is_some()
    }

    /// Makes a persistent request an ordinary one (freed by the program:
    /// it is not started again).
    pub(crate) fn make_one_shot(&mut self) {
        self.persist = None;
    }

    /// True for an inactive persistent request (which completion calls
    /// treat as `MPI_REQUEST_NULL`, but do not free).
    pub(crate) fn inactive(&self) -> bool {
        matches!(self.state, State::Inactive)
    }

    /// Moves the ferry request out (for ferry's multiple-completion
    /// functions); `Request::NULL` for every other state, which those
    /// functions treat as inactive.
    pub(crate) fn take_ferry(&mut self) -> Request {
        match &mut self.state {
            State::Active(r) => std::mem::replace(r, Request::NULL),
            _ => Request::NULL,
        }
    }

    /// Puts back what [`ReqObj::take_ferry`] took (a completed request
    /// comes back as `Request::NULL`; the state stays `Active` until
    /// [`finish`] or [`ReqObj::complete_ready`]).
    pub(crate) fn put_ferry(&mut self, req: Request) {
        if let State::Active(r) = &mut self.state {
            *r = req;
        }
    }

    /// True if a completion call can report the request without asking
    /// ferry: [`State::Ready`], or a generalized request the program
    /// completed.
    pub(crate) fn is_ready(&self) -> bool {
        match &self.state {
            State::Ready(_) => true,
            State::Greq(g) => g.is_complete(),
            _ => false,
        }
    }

    /// The report of a ready request (see [`ReqObj::is_ready`]), which then
    /// ends its activation (a generalized request's query and free
    /// callbacks run here).
    pub(crate) fn complete_ready(&mut self) -> Option<Report> {
        if let State::Greq(g) = &self.state {
            if !g.is_complete() {
                return None;
            }
            let report = g.finish(self.comm);
            self.end_activation();
            return Some(report);
        }
        match self.state {
            State::Ready(status) => {
                self.end_activation();
                let mut report = Report::ok(status);
                if status.error != crate::abi::class::MPI_SUCCESS {
                    let f = Fail::new(status.error, "the operation failed (see its status)");
                    report.result = Err(f.on(self.comm));
                }
                Some(report)
            }
            _ => None,
        }
    }

    /// Polls a request the C layer completes itself ([`State::Polled`])
    /// once: done, it becomes [`State::Ready`]; a generalized request is
    /// pending until the program completes it. True if it is still
    /// pending.
    pub(crate) fn poll_pending(&mut self) -> Res<bool> {
        let p = match &mut self.state {
            State::Polled(p) => p,
            State::Greq(g) => return Ok(!g.is_complete()),
            _ => return Ok(false),
        };
        match p.poll() {
            Ok(Some(status)) => {
                self.state = State::Ready(status);
                Ok(false)
            }
            Ok(None) => Ok(true),
            Err(f) => {
                self.end_activation();
                Err(f.on(self.comm))
            }
        }
    }

    /// Completes the object, blocking until it is complete (in ferry on
    /// its operation, or on each half of a pair).
    pub(crate) fn wait(&mut self) -> Res<Report> {
        match &mut self.state {
            State::Active(req) => {
                let done = req.wait().map_err(|e| Fail::from(e).on(self.comm))?;
                Ok(finish(self, done))
            }
            State::Ready(_) => Ok(self.complete_ready().unwrap_or_else(Report::empty)),
            State::Inactive => Ok(Report::empty()),
            State::Raw(_) => Err(unpromoted(self.comm)),
            State::Polled(p) => {
                // (An `MPI_Isendrecv` blocks in ferry on each half.)
                match p.wait() {
                    Ok(status) => self.state = State::Ready(status),
                    Err(f) => {
                        self.end_activation();
                        return Err(f.on(self.comm));
                    }
                }
                Ok(self.complete_ready().unwrap_or_else(Report::empty))
            }
            State::Greq(g) => {
                g.wait();
                Ok(self.complete_ready().unwrap_or_else(Report::empty))
            }
        }
    }

    /// Tests the object: its report if it completed.
    pub(crate) fn test(&mut self) -> Res<Option<Report>> {
        match &mut self.state {
            State::Active(req) => match req.test().map_err(|e| Fail::from(e).on(self.comm))? {
                Some(done) => Ok(Some(finish(self, done))),
                None => Ok(None),
            },
            State::Ready(_) => Ok(self.complete_ready()),
            State::Inactive => Ok(Some(Report::empty())),
            State::Raw(_) => Err(unpromoted(self.comm)),
            State::Polled(_) | State::Greq(_) => {
                if self.poll_pending()? {
                    return Ok(None);
                }
                Ok(self.complete_ready())
            }
        }
    }

    /// The status of the object if it is complete, without ending it. One
    /// with a post step is completed in ferry (so that its data is in the
    /// program's buffer when the flag says complete) and kept as
    /// [`State::Ready`] until a completion call reports it.
    pub(crate) fn peek(&mut self) -> Res<Option<MpiStatus>> {
        match &mut self.state {
            State::Active(req) if !self.post.writes_buffers() => {
                let s = req.get_status().map_err(|e| Fail::from(e).on(self.comm))?;
                Ok(s.map(|s| MpiStatus::from_ferry(&s)))
            }
            State::Active(req) => match req.test().map_err(|e| Fail::from(e).on(self.comm))? {
                Some(done) => {
                    let report = finish(self, done);
                    self.state = State::Ready(report.status);
                    Ok(Some(report.status))
                }
                None => Ok(None),
            },
            State::Ready(s) => Ok(Some(*s)),
            State::Inactive => Ok(Some(MpiStatus::EMPTY)),
            State::Raw(_) => Err(unpromoted(self.comm)),
            State::Polled(_) => match self.poll_pending()? {
                true => Ok(None),
                false => self.peek(),
            },
            State::Greq(g) => g.query().map_err(|f| f.on(self.comm)),
        }
    }

    /// After a completion: a persistent request becomes inactive; any other
    /// is spent (its handle is freed by the caller).
    pub(crate) fn end_activation(&mut self) {
        self.state = State::Inactive;
        self.post = Post::None;
    }
}

/// The error of a path that met a raw request it should have been given
/// promoted (see [`State::Raw`]); raised on `comm`.
pub(crate) fn unpromoted(comm: usize) -> Fail {
    Fail::new(
        crate::abi::class::MPI_ERR_INTERN,
        "internal error (please report): a raw request was not promoted",
    )
    .on(comm)
}

/// What the completion of one request reports: its status, and its error
/// (already in `status.error` as a class) as a failure on its communicator.
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) status: MpiStatus,
    pub(crate) result: Res,
    /// An ARecv's buffer, handed over through the status (`MPIX_Arecv`).
    pub(crate) arecv: Option<ferry::Buf>,
}

impl Report {
    /// A successful completion with `status`.
    pub(crate) fn ok(status: MpiStatus) -> Report {
        Report {
            status,
            result: Ok(()),
            arecv: None,
        }
    }

    /// The report of an operation that ferry completed with status `s`,
    /// raising its error (if any) on communicator `comm`.
    pub(crate) fn of(s: &ferry::Status, comm: usize) -> Report {
        let mut report = Report::ok(MpiStatus::from_ferry(s));
        if let Some(e) = s.error {
            report.result = Err(Fail::from(e).on(comm));
        }
        report
    }

    /// The empty status of an inactive or null request.
    pub(crate) fn empty() -> Report {
        Report::ok(MpiStatus::EMPTY)
    }

    /// Writes the status into a status argument that must be there
    /// (`MPIX_Arecv`'s), handing an ARecv's buffer over through it; the
    /// result.
    pub(crate) fn write_to(self, out: &mut crate::ffi::args::Out<'_, MpiStatus>) -> Res {
        let mut status = self.status;
        if let Some(buf) = self.arecv {
            crate::ffi::os::hand_over(&mut status, buf);
        }
        out.set(status)?;
        self.result
    }

    /// Writes the status (unless `MPI_STATUS_IGNORE`), handing an ARecv's
    /// buffer over through it (dropped with an ignored status: nobody can
    /// take it); the result.
    pub(crate) fn write_status(self, out: &mut StatusOut<'_>) -> Res {
        let mut status = self.status;
        if let Some(buf) = self.arecv {
            if !out.is_ignore() {
                crate::ffi::os::hand_over(&mut status, buf);
            }
        }
        out.set(status);
        self.result
    }
}
