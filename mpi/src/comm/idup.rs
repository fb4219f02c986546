//! `MPI_Comm_idup` and its request: ferry's `PendingComm`, polled by the
//! completion calls until the communicator exists, which is then stored
//! and its handle written where the program asked (MPI forbids reading
//! that handle before the request completes). A floor above the rest of
//! `comm`: it makes a request.

use std::ffi::c_int;

use crate::abi::class::*;
use crate::abi::{MpiStatus, MPI_INFO_NULL};
use crate::attr::calls::copy_all;
use crate::comm::communicators::hints_of;
use crate::errhandler::Errh;
use crate::error::{Fail, Res};
use crate::ffi::args::{Later, Out};
use crate::info::Info;
use crate::request::object::{Polled, ReqObj, State};
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
}

impl Polled for Idup {
    /// Tests the duplication once; when it is done, stores the new
    /// communicator and writes its handle.
    fn poll(&mut self) -> Res<Option<MpiStatus>> {
        let Some(pending) = self.pending.as_mut() else {
            return Ok(Some(MpiStatus::EMPTY));
        };
        let comm = match pending.test() {
            Ok(Some(c)) => c,
            Ok(None) => return Ok(None),
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
        Ok(Some(MpiStatus::EMPTY))
    }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info` (`info` `Some`):
/// `newcomm` is written when the request completes.
fn idup(
    comm: usize,
    info: Option<usize>,
    newcomm: Later<usize>,
    request: &mut Out<'_, usize>,
) -> Res {
    let rt = rt()?;
    let c = rt.comm_counted(comm)?;
    if newcomm.is_null() || request.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null communicator or request pointer",
        ));
    }
    let info = match info {
        Some(MPI_INFO_NULL) => Some(Info::default()),
        Some(h) => Some(crate::info::calls::read(h)?),
        None => None,
    };
    let hints = info
        .as_ref()
        .map_or(c.comm.hints(), |i| hints_of(i, c.comm.hints()));
    let attrs = copy_all(rt, comm, &c)?;
    let pending = c.comm.idup_with_hints(hints)?;
    let obj = ReqObj {
        state: State::Polled(Box::new(Idup::new(pending, newcomm, &c, attrs, info))),
        ..ReqObj::ready(MpiStatus::EMPTY, comm)
    };
    let h = rt.add_request(obj)?;
    request.set(h)
}

/// `MPI_Comm_idup`: `newcomm` is written when the request completes.
pub(crate) fn comm_idup(comm: usize, newcomm: Later<usize>, mut request: Out<'_, usize>) -> Res {
    idup(comm, None, newcomm, &mut request)
}

/// `MPI_Comm_idup_with_info`: as `MPI_Comm_idup` with the given hints.
pub(crate) fn comm_idup_with_info(
    comm: usize,
    info: usize,
    newcomm: Later<usize>,
    mut request: Out<'_, usize>,
) -> Res {
    idup(comm, Some(info), newcomm, &mut request)
}
