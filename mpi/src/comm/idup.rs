//! `MPI_Comm_idup`'s request: ferry's `PendingComm`, polled by the
//! completion calls until the communicator exists, which is then stored
//! and its handle written where the program asked (MPI forbids reading
//! that handle before the request completes).

use std::ffi::c_int;

use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::ffi::args::Later;
use crate::info::Info;
use crate::state::{lock, rt, CommObj};

/// A duplication in progress.
#[derive(Debug)]
pub(crate) struct Idup {
    pending: Option<ferry::PendingComm>,
    /// Where the new handle goes (`MPI_Comm *`), once.
    out: Option<Later<usize>>,
    errh: Errh,
    /// The attributes the copy callbacks gave, at the call.
    attrs: Vec<(c_int, usize)>,
    info: Info,
}

impl Idup {
    /// A duplication of `parent`'s communicator into `out`, with `info`
    /// (`None`: the parent's).
    pub(crate) fn new(
        pending: ferry::PendingComm,
        out: Later<usize>,
        parent: &CommObj,
        attrs: Vec<(c_int, usize)>,
        info: Option<Info>,
    ) -> Idup {
        let m = lock(&parent.meta);
        Idup {
            pending: Some(pending),
            out: Some(out),
            errh: m.errh.clone(),
            attrs,
            info: info.unwrap_or_else(|| m.info.clone()),
        }
    }

    /// Tests the duplication once; when it is done, stores the new
    /// communicator and writes its handle. True when done.
    pub(crate) fn poll(&mut self) -> Res<bool> {
        let Some(pending) = self.pending.as_mut() else {
            return Ok(true);
        };
        let comm = match pending.test() {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(false),
            Err(e) => {
                self.pending = None;
                return Err(Fail::from(e));
            }
        };
        self.pending = None;
        let obj = CommObj::new(comm, "", self.errh.clone());
        {
            let mut m = lock(&obj.meta);
            m.attrs = std::mem::take(&mut self.attrs);
            m.info = std::mem::take(&mut self.info);
        }
        let h = rt()?.add_comm(obj)?;
        if let Some(out) = self.out.take() {
            out.set(h)?;
        }
        Ok(true)
    }
}
