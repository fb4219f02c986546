//! Every raw libibverbs call, behind checked wrappers.
//!
//! # Why this module exists
//! rdma-sys 0.3 translates the `static inline` verbs of `<infiniband/verbs.h>`
//! (`ibv_post_send`, `ibv_poll_cq`, `ibv_post_srq_recv`, `ibv_req_notify_cq`)
//! into Rust functions that `unwrap()` the provider's ops-table pointers, so
//! a provider without one would panic inside the data path. The wrappers here
//! call through the ops table themselves and return
//! [`FfiError::Missing`] instead. Everything else that can fail returns
//! [`FfiError::Os`] with the errno (or the verb's own positive error code).
//!
//! # Ownership
//! Each verbs object has an owning wrapper that destroys it on drop
//! ([`Context`], [`Pd`], [`Channel`], [`Cq`], [`Srq`], [`Qp`], [`Mr`]). The
//! wrappers do not encode the parent/child lifetimes in types: the device
//! declares its fields in destruction order (children first), which is the
//! one rule the verbs API imposes (a PD cannot be freed while an MR or QP
//! uses it, and so on). Every wrapper is `Send`: libibverbs objects may be
//! used from any thread, and ferry only reaches them through `&mut` of the
//! one device that owns them.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::{self, NonNull};

pub(crate) use rdma_sys as sys;

mod chain;
mod events;
mod post;
mod registered;
pub(crate) mod slab;
#[cfg(test)]
pub(crate) mod testmem;
mod ud;

pub(crate) use chain::Chain;
#[cfg(test)]
pub(crate) use chain::CHAIN_MAX;
pub(crate) use events::AsyncEvent;
pub(crate) use registered::{register_lent, AttachCache, Budget, RegisteredBuf, Revoker};
pub(crate) use ud::Ah;

/// What a raw call reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FfiError {
    /// The provider's ops table has no such function.
    #[error("{0}: the verbs provider does not implement it")]
    Missing(&'static str),
    /// The call failed with this errno (or verbs error code).
    #[error("{what}: error code {code}")]
    Os { what: &'static str, code: i32 },
}

impl From<FfiError> for ferry_core::Error {
    fn from(e: FfiError) -> Self {
        match e {
            FfiError::Missing(what) => ferry_core::DeviceError::Unsupported(what).into(),
            FfiError::Os { what, code } => ferry_core::DeviceError::Os { what, code }.into(),
        }
    }
}

type Result<T> = std::result::Result<T, FfiError>;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os(what: &'static str) -> FfiError {
    FfiError::Os {
        what,
        code: errno(),
    }
}

/// A verb that returns 0 or an error code (verbs return the errno itself,
/// some providers return -1 and set errno).
fn check(what: &'static str, rc: c_int) -> Result<()> {
    match rc {
        0 => Ok(()),
        -1 => Err(os(what)),
        code => Err(FfiError::Os {
            what,
            code: code.abs(),
        }),
    }
}

/// The provider ops table of `ctx`.
///
/// # Safety
/// `ctx` must point to a live, open `ibv_context`.
unsafe fn ops(ctx: *mut sys::ibv_context) -> sys::ibv_context_ops {
    // SAFETY: the caller guarantees `ctx` is a live context; the ops table is
    // plain data filled in by the provider when the device was opened.
    unsafe { (*ctx).ops }
}

// ---- device list and context ------------------------------------------------

/// The list from `ibv_get_device_list`, freed on drop.
#[derive(Debug)]
pub(crate) struct DeviceList {
    list: NonNull<*mut sys::ibv_device>,
    len: usize,
}

impl DeviceList {
    pub(crate) fn get() -> Result<DeviceList> {
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out-pointer; the returned list is owned by
        // the wrapper and freed exactly once in `Drop`.
        let raw = unsafe { sys::ibv_get_device_list(&mut n) };
        let list = NonNull::new(raw).ok_or_else(|| os("ibv_get_device_list"))?;
        Ok(DeviceList {
            list,
            len: usize::try_from(n).unwrap_or(0),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn device(&self, i: usize) -> Option<*mut sys::ibv_device> {
        if i >= self.len {
            return None;
        }
        // SAFETY: the list holds `len` valid device pointers (and a NULL
        // terminator); `i < len`.
        let d = unsafe { *self.list.as_ptr().add(i) };
        (!d.is_null()).then_some(d)
    }

    /// The kernel name of device `i` (`mlx5_0`, `rxe0`).
    pub(crate) fn name(&self, i: usize) -> Option<String> {
        let d = self.device(i)?;
        // SAFETY: `d` is a live device of this list; the name is a
        // NUL-terminated string owned by the library, copied out at once.
        let name = unsafe { sys::ibv_get_device_name(d) };
        if name.is_null() {
            return None;
        }
        // SAFETY: non-NULL and NUL-terminated (see above).
        Some(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        )
    }

    /// Opens device `i`. The context stays valid after the list is freed.
    pub(crate) fn open(&self, i: usize) -> Result<Context> {
        let d = self.device(i).ok_or(FfiError::Os {
            what: "ibv_open_device (no such device)",
            code: libc::ENODEV,
        })?;
        // SAFETY: `d` is a live device of this list.
        let ctx = unsafe { sys::ibv_open_device(d) };
        NonNull::new(ctx)
            .map(Context)
            .ok_or_else(|| os("ibv_open_device"))
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from `ibv_get_device_list` and is freed once.
        unsafe { sys::ibv_free_device_list(self.list.as_ptr()) }
    }
}

/// An open device.
#[derive(Debug)]
pub(crate) struct Context(NonNull<sys::ibv_context>);

// SAFETY: libibverbs contexts may be used from any thread; see module docs.
unsafe impl Send for Context {}

impl Context {
    pub(crate) fn raw(&self) -> *mut sys::ibv_context {
        self.0.as_ptr()
    }

    pub(crate) fn query_device(&self) -> Result<sys::ibv_device_attr> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut attr: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer.
        check("ibv_query_device", unsafe {
            sys::ibv_query_device(self.raw(), &mut attr)
        })?;
        Ok(attr)
    }

    pub(crate) fn query_port(&self, port: u8) -> Result<sys::ibv_port_attr> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut attr: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer of the full struct size.
        // rdma-sys's `___ibv_query_port` checks the extended op is present
        // before calling it, and otherwise uses the exported compat symbol,
        // which fills a prefix of the same struct.
        check("ibv_query_port", unsafe {
            sys::___ibv_query_port(self.raw(), port, &mut attr)
        })?;
        Ok(attr)
    }

    pub(crate) fn query_gid(&self, port: u8, index: i32) -> Result<[u8; 16]> {
        let mut gid = sys::ibv_gid { raw: [0; 16] };
        // SAFETY: live context, valid out-pointer.
        check("ibv_query_gid", unsafe {
            sys::ibv_query_gid(self.raw(), port, index, &mut gid)
        })?;
        // SAFETY: every bit pattern of the union is a valid `raw`.
        Ok(unsafe { gid.raw })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: opened by `ibv_open_device`, closed once, after every child
        // (the device's field order guarantees it).
        let rc = unsafe { sys::ibv_close_device(self.raw()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_close_device failed");
        }
    }
}

// ---- protection domain, memory regions --------------------------------------

/// A protection domain.
#[derive(Debug)]
pub(crate) struct Pd(NonNull<sys::ibv_pd>);

// SAFETY: see module docs.
unsafe impl Send for Pd {}

impl Pd {
    pub(crate) fn new(ctx: &Context) -> Result<Pd> {
        // SAFETY: live context.
        let pd = unsafe { sys::ibv_alloc_pd(ctx.raw()) };
        NonNull::new(pd).map(Pd).ok_or_else(|| os("ibv_alloc_pd"))
    }

    pub(crate) fn raw(&self) -> *mut sys::ibv_pd {
        self.0.as_ptr()
    }

    /// Registers `len` bytes at `addr`.
    ///
    /// # Safety
    /// The memory must stay allocated (and not move) until the returned
    /// [`Mr`] is dropped, and must be writable if `access` includes a write
    /// flag.
    pub(super) unsafe fn reg_mr(&self, addr: *mut u8, len: usize, access: u32) -> Result<Mr> {
        // SAFETY: live PD; the caller guarantees the memory outlives the MR.
        // `access` is a plain flag set (no OPTIONAL_RANGE), so the exported
        // `ibv_reg_mr` is the right symbol (the header macro picks it too).
        let mr = unsafe { sys::ibv_reg_mr(self.raw(), addr.cast(), len, access as c_int) };
        NonNull::new(mr).map(Mr).ok_or_else(|| os("ibv_reg_mr"))
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: allocated by `ibv_alloc_pd`, freed once after its children.
        let rc = unsafe { sys::ibv_dealloc_pd(self.raw()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_dealloc_pd failed");
        }
    }
}

/// A memory region.
#[derive(Debug)]
pub(crate) struct Mr(NonNull<sys::ibv_mr>);

// SAFETY: see module docs.
unsafe impl Send for Mr {}

impl Mr {
    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: a live MR; the key fields never change after registration.
        unsafe { (*self.0.as_ptr()).lkey }
    }

    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: as for `lkey`.
        unsafe { (*self.0.as_ptr()).rkey }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: registered by `ibv_reg_mr`, deregistered once; the memory
        // is still allocated (the `reg_mr` contract).
        let rc = unsafe { sys::ibv_dereg_mr(self.0.as_ptr()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_dereg_mr failed");
        }
    }
}

// ---- completion channel and queue -------------------------------------------

/// A completion channel (its fd is what a sleeping waiter polls).
#[derive(Debug)]
pub(crate) struct Channel(NonNull<sys::ibv_comp_channel>);

// SAFETY: see module docs.
unsafe impl Send for Channel {}

impl Channel {
    /// A channel whose fd is non-blocking, so that draining events in
    /// `disarm` can never block.
    pub(crate) fn new(ctx: &Context) -> Result<Channel> {
        // SAFETY: live context.
        let ch = unsafe { sys::ibv_create_comp_channel(ctx.raw()) };
        let ch = NonNull::new(ch)
            .map(Channel)
            .ok_or_else(|| os("ibv_create_comp_channel"))?;
        let fd = ch.fd();
        // SAFETY: `fd` is the channel's open descriptor; F_GETFL/F_SETFL only
        // change its flags.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(os("fcntl(O_NONBLOCK) on the completion channel"));
        }
        Ok(ch)
    }

    pub(crate) fn fd(&self) -> i32 {
        // SAFETY: a live channel; `fd` never changes.
        unsafe { (*self.0.as_ptr()).fd }
    }

    /// The channel's fd, borrowed for as long as the channel.
    pub(crate) fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        // SAFETY: the channel owns its fd, open until `ibv_destroy_comp_channel`
        // in `Drop`; the borrow cannot outlive `self`.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd()) }
    }

    /// Takes one pending event without blocking: `Ok(true)` if there was one
    /// (the caller must ack it on its CQ), `Ok(false)` if none.
    pub(crate) fn try_get_event(&self) -> Result<bool> {
        let mut cq = ptr::null_mut();
        let mut cq_ctx = ptr::null_mut();
        // SAFETY: a live channel with a non-blocking fd; valid out-pointers.
        let rc = unsafe { sys::ibv_get_cq_event(self.0.as_ptr(), &mut cq, &mut cq_ctx) };
        if rc == 0 {
            return Ok(true);
        }
        match errno() {
            libc::EAGAIN => Ok(false),
            code => Err(FfiError::Os {
                what: "ibv_get_cq_event",
                code,
            }),
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: created by `ibv_create_comp_channel`, destroyed once after
        // its CQ.
        let rc = unsafe { sys::ibv_destroy_comp_channel(self.0.as_ptr()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_comp_channel failed");
        }
    }
}

/// A completion queue. Events taken from its channel must be acked before
/// it is destroyed; the wrapper counts them and acks the rest on drop.
#[derive(Debug)]
pub(crate) struct Cq {
    cq: NonNull<sys::ibv_cq>,
    unacked: u32,
}

// SAFETY: see module docs.
unsafe impl Send for Cq {}

impl Cq {
    pub(crate) fn new(ctx: &Context, entries: i32, channel: &Channel) -> Result<Cq> {
        // SAFETY: live context and channel.
        let cq = unsafe {
            sys::ibv_create_cq(ctx.raw(), entries, ptr::null_mut(), channel.0.as_ptr(), 0)
        };
        let cq = NonNull::new(cq).ok_or_else(|| os("ibv_create_cq"))?;
        Ok(Cq { cq, unacked: 0 })
    }

    pub(crate) fn raw(&self) -> *mut sys::ibv_cq {
        self.cq.as_ptr()
    }

    /// Polls up to `wc.len()` completions; returns how many were written.
    #[inline]
    pub(crate) fn poll(&mut self, wc: &mut [sys::ibv_wc]) -> Result<usize> {
        // SAFETY: a live CQ, so its context is live.
        let f = unsafe { ops((*self.raw()).context) }
            .poll_cq
            .ok_or(FfiError::Missing("ibv_poll_cq"))?;
        let n = c_int::try_from(wc.len()).unwrap_or(c_int::MAX);
        // SAFETY: `wc` has room for `n` entries; the CQ is live.
        let rc = unsafe { f(self.raw(), n, wc.as_mut_ptr()) };
        usize::try_from(rc).map_err(|_| FfiError::Os {
            what: "ibv_poll_cq",
            code: rc.abs(),
        })
    }

    /// Asks for an event on the channel at the next completion.
    pub(crate) fn req_notify(&mut self) -> Result<()> {
        // SAFETY: a live CQ, so its context is live.
        let f = unsafe { ops((*self.raw()).context) }
            .req_notify_cq
            .ok_or(FfiError::Missing("ibv_req_notify_cq"))?;
        // SAFETY: a live CQ; 0 = every completion, not only solicited ones.
        check("ibv_req_notify_cq", unsafe { f(self.raw(), 0) })
    }

    /// Counts one event taken from the channel; acks in batches (the ack
    /// takes a mutex inside libibverbs).
    pub(crate) fn event_taken(&mut self) {
        self.unacked += 1;
        if self.unacked >= 64 {
            self.ack();
        }
    }

    fn ack(&mut self) {
        if self.unacked > 0 {
            // SAFETY: a live CQ; exactly `unacked` events were taken from its
            // channel and not yet acked.
            unsafe { sys::ibv_ack_cq_events(self.raw(), self.unacked) };
            self.unacked = 0;
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        self.ack();
        // SAFETY: created by `ibv_create_cq`, destroyed once after every QP
        // and SRQ that uses it; all its events were acked above.
        let rc = unsafe { sys::ibv_destroy_cq(self.raw()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_cq failed");
        }
    }
}

// ---- shared receive queue ----------------------------------------------------

/// A shared receive queue.
#[derive(Debug)]
pub(crate) struct Srq(NonNull<sys::ibv_srq>);

// SAFETY: see module docs.
unsafe impl Send for Srq {}

impl Srq {
    pub(crate) fn new(pd: &Pd, max_wr: u32) -> Result<Srq> {
        let mut attr = sys::ibv_srq_init_attr {
            srq_context: ptr::null_mut(),
            attr: sys::ibv_srq_attr {
                max_wr,
                max_sge: 1,
                srq_limit: 0,
            },
        };
        // SAFETY: live PD, valid attributes.
        let srq = unsafe { sys::ibv_create_srq(pd.raw(), &mut attr) };
        NonNull::new(srq)
            .map(Srq)
            .ok_or_else(|| os("ibv_create_srq"))
    }

    pub(crate) fn raw(&self) -> *mut sys::ibv_srq {
        self.0.as_ptr()
    }

    /// Posts one receive of `len` bytes at `addr`.
    ///
    /// # Safety
    /// `addr..addr+len` must lie in memory registered with `lkey` with local
    /// write access, and must not be read or written by anyone else until
    /// its completion is polled.
    #[inline]
    pub(super) unsafe fn post_recv(
        &mut self,
        wr_id: u64,
        addr: u64,
        len: u32,
        lkey: u32,
    ) -> Result<()> {
        // SAFETY: a live SRQ, so its context is live.
        let f = unsafe { ops((*self.raw()).context) }
            .post_srq_recv
            .ok_or(FfiError::Missing("ibv_post_srq_recv"))?;
        let mut sge = sys::ibv_sge {
            addr,
            length: len,
            lkey,
        };
        let mut wr = sys::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and its SGE live across the call (the provider
        // copies them); the memory contract is the caller's.
        check("ibv_post_srq_recv", unsafe {
            f(self.raw(), &mut wr, &mut bad)
        })
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: created by `ibv_create_srq`, destroyed once after its QPs.
        let rc = unsafe { sys::ibv_destroy_srq(self.raw()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_srq failed");
        }
    }
}

// ---- queue pairs ---------------------------------------------------------------

/// One scatter/gather element of a send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) lkey: u32,
}

/// What a send work request does.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SendOp {
    /// SEND with immediate data (host order; converted to network order).
    SendImm(u32),
    /// RDMA READ of the remote region into the SGEs.
    Read { addr: u64, rkey: u32 },
    /// RDMA WRITE of the SGEs into the remote region.
    Write { addr: u64, rkey: u32 },
}

/// A queue pair (RC to a peer, or the one UD QP of the handshake).
#[derive(Debug)]
pub(crate) struct Qp(NonNull<sys::ibv_qp>);

// SAFETY: see module docs.
unsafe impl Send for Qp {}

impl Qp {
    /// An RC QP whose receives come from `srq`.
    pub(crate) fn new(
        pd: &Pd,
        cq: &Cq,
        srq: &Srq,
        cap: sys::ibv_qp_cap,
    ) -> Result<(Qp, sys::ibv_qp_cap)> {
        Qp::create(pd, cq, Some(srq), cap, sys::ibv_qp_type::IBV_QPT_RC)
    }

    /// A QP of type `ty`, with its own receive queue when `srq` is `None`.
    pub(crate) fn create(
        pd: &Pd,
        cq: &Cq,
        srq: Option<&Srq>,
        cap: sys::ibv_qp_cap,
        ty: sys::ibv_qp_type::Type,
    ) -> Result<(Qp, sys::ibv_qp_cap)> {
        let mut attr = sys::ibv_qp_init_attr {
            qp_context: ptr::null_mut(),
            send_cq: cq.raw(),
            recv_cq: cq.raw(),
            srq: srq.map_or(ptr::null_mut(), Srq::raw),
            cap,
            qp_type: ty,
            sq_sig_all: 0,
        };
        // SAFETY: live PD, CQ and SRQ (or none); the provider writes the
        // granted caps back into `attr.cap`.
        let qp = unsafe { sys::ibv_create_qp(pd.raw(), &mut attr) };
        let qp = NonNull::new(qp)
            .map(Qp)
            .ok_or_else(|| os("ibv_create_qp"))?;
        Ok((qp, attr.cap))
    }

    pub(crate) fn num(&self) -> u32 {
        // SAFETY: a live QP; `qp_num` never changes.
        unsafe { (*self.0.as_ptr()).qp_num }
    }

    pub(crate) fn modify(&mut self, attr: &mut sys::ibv_qp_attr, mask: u32) -> Result<()> {
        // SAFETY: a live QP and a valid attribute struct for `mask`.
        check("ibv_modify_qp", unsafe {
            sys::ibv_modify_qp(self.0.as_ptr(), attr, mask as c_int)
        })
    }

    /// Posts one send work request (signaled or not: see `signal.rs`).
    ///
    /// # Safety
    /// Every SGE must lie in memory registered with its lkey (unless
    /// `inline`, when the bytes are copied during the call) and stay valid
    /// and untouched (read-only for a send, not accessed at all for a read)
    /// until the completion is polled; a remote region must be the peer's.
    #[inline]
    pub(super) unsafe fn post_send(
        &mut self,
        wr_id: u64,
        op: SendOp,
        sges: &[Sge],
        inline: bool,
        signaled: bool,
    ) -> Result<()> {
        // SAFETY: a live QP, so its context is live.
        let f = unsafe { ops((*self.0.as_ptr()).context) }
            .post_send
            .ok_or(FfiError::Missing("ibv_post_send"))?;
        let mut list = [sys::ibv_sge {
            addr: 0,
            length: 0,
            lkey: 0,
        }; 2];
        let n = sges.len().min(list.len());
        for (d, s) in list.iter_mut().zip(&sges[..n]) {
            *d = sys::ibv_sge {
                addr: s.addr,
                length: s.len,
                lkey: s.lkey,
            };
        }
        // SAFETY: all-zero is a valid value of this plain C struct (null
        // pointers, zero counts).
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        fill_send_wr(&mut wr, wr_id, op, inline, signaled);
        wr.sg_list = list.as_mut_ptr();
        wr.num_sge = n as c_int;
        let mut bad = ptr::null_mut();
        // SAFETY: the WR and SGE list live across the call (the provider
        // copies them, and copies inline data); the memory contract is the
        // caller's.
        check("ibv_post_send", unsafe {
            f(self.0.as_ptr(), &mut wr, &mut bad)
        })
    }
}

/// Fills `wr`'s operation, immediate or remote region, and flags (not its
/// SGE list or chain link).
fn fill_send_wr(wr: &mut sys::ibv_send_wr, wr_id: u64, op: SendOp, inline: bool, signaled: bool) {
    wr.wr_id = wr_id;
    let mut flags = if signaled {
        sys::ibv_send_flags::IBV_SEND_SIGNALED.0
    } else {
        0
    };
    if inline {
        flags |= sys::ibv_send_flags::IBV_SEND_INLINE.0;
    }
    wr.send_flags = flags;
    match op {
        SendOp::SendImm(imm) => {
            wr.opcode = sys::ibv_wr_opcode::IBV_WR_SEND_WITH_IMM;
            wr.imm_data_invalidated_rkey_union.imm_data = imm.to_be();
        }
        SendOp::Read { addr, rkey } => {
            wr.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_READ;
            wr.wr.rdma = sys::rdma_t {
                remote_addr: addr,
                rkey,
            };
        }
        SendOp::Write { addr, rkey } => {
            wr.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
            wr.wr.rdma = sys::rdma_t {
                remote_addr: addr,
                rkey,
            };
        }
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: created by `ibv_create_qp`, destroyed once before its CQ,
        // SRQ and PD.
        let rc = unsafe { sys::ibv_destroy_qp(self.0.as_ptr()) };
        if rc != 0 {
            tracing::warn!(rc, "ibv_destroy_qp failed");
        }
    }
}

/// A zeroed QP attribute struct, to fill in for `ibv_modify_qp`.
pub(crate) fn zeroed_qp_attr() -> sys::ibv_qp_attr {
    // SAFETY: all-zero is a valid value of this plain C struct.
    unsafe { std::mem::zeroed() }
}

/// A zeroed work completion array of `n` entries.
pub(crate) fn wc_array(n: usize) -> Vec<sys::ibv_wc> {
    // SAFETY: all-zero is a valid value of this plain C struct.
    (0..n).map(|_| unsafe { std::mem::zeroed() }).collect()
}

/// The immediate data of a receive completion, in host order.
pub(crate) fn wc_imm(wc: &sys::ibv_wc) -> u32 {
    // SAFETY: both union members are a plain `u32`; for a receive with
    // IBV_WC_WITH_IMM it is the immediate, otherwise a value the caller
    // validates anyway.
    u32::from_be(unsafe { wc.imm_data_invalidated_rkey_union.imm_data })
}
