//! Every raw libfabric call, behind checked wrappers.
//!
//! libfabric returns `-FI_E*` (a negated errno-style code) on failure. The
//! wrappers turn that into a [`Fail`] naming the call, which becomes an
//! [`OfiError`](crate::OfiError) at setup and a
//! [`DeviceError::Os`](ferry_core::DeviceError::Os) on the data path;
//! `-FI_EAGAIN` on a post is `Ok(false)` (back-pressure, not an error).
//!
//! The fids are raw pointers owned by the structs here. Their lifetimes
//! follow libfabric's rule that a fid outlives everything bound to it:
//! [`Fabric`] closes the endpoint first ([`Fabric::close_ep`]), the device
//! then drops its memory registrations, and [`Fabric`]'s `Drop` closes the
//! AV, CQ, domain and fabric last.

use std::ffi::{c_void, CStr, CString};
use std::ptr::{self, addr_of_mut, null_mut};

use ferry_core::device::RdmaDir;

mod context;
mod fd;
mod post;
pub(crate) mod sys;

pub(crate) use context::{Contexts, Op};
pub(crate) use fd::epoll_add_wait_fd;
#[cfg(test)]
pub(crate) use fd::poll_readable;

/// A failed call: which, and the positive `FI_E*` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fail {
    pub(crate) what: &'static str,
    pub(crate) code: i32,
}

impl From<Fail> for ferry_core::Error {
    fn from(f: Fail) -> Self {
        ferry_core::DeviceError::Os {
            what: f.what,
            code: f.code,
        }
        .into()
    }
}

/// Maps a libfabric return value: negative is `-FI_E*`.
#[inline]
fn check(what: &'static str, ret: isize) -> Result<isize, Fail> {
    if ret < 0 {
        Err(Fail {
            what,
            code: i32::try_from(-ret).unwrap_or(i32::MAX),
        })
    } else {
        Ok(ret)
    }
}

/// A post: `-FI_EAGAIN` is `Ok(false)`.
#[inline]
fn posted(what: &'static str, ret: isize) -> Result<bool, Fail> {
    if ret == -(sys::FI_EAGAIN as isize) {
        return Ok(false);
    }
    check(what, ret).map(|_| true)
}

/// libfabric's text for a positive `FI_E*` code.
pub(crate) fn strerror(code: i32) -> String {
    // SAFETY: fi_strerror accepts any int and returns a static,
    // NUL-terminated string (never NULL).
    let s = unsafe { sys::fi_strerror(code) };
    if s.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-NULL, NUL-terminated, static (checked above).
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

fn cstr_field(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's string fields are NUL-terminated and live as long
    // as the fi_info that holds them (the caller borrows it).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// An owned `fi_info` list (from `fi_getinfo` or `fi_dupinfo`).
#[derive(Debug)]
pub(crate) struct InfoList(*mut sys::fi_info);

// SAFETY: the list is plain heap data owned by this value; libfabric keeps no
// reference to it, so it may move between threads.
unsafe impl Send for InfoList {}

impl InfoList {
    /// Empty hints (`fi_allocinfo`), to be filled with [`InfoList::hints_mut`].
    pub(crate) fn alloc_hints() -> Result<InfoList, Fail> {
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info with all its
        // attribute structs, or returns NULL.
        let p = unsafe { sys::fi_dupinfo(ptr::null()) };
        if p.is_null() {
            return Err(Fail {
                what: "fi_allocinfo",
                code: sys::FI_ENOMEM as i32,
            });
        }
        Ok(InfoList(p))
    }

    /// The head entry's attributes, writable (hints only).
    pub(crate) fn hints_mut(&mut self) -> HintsMut<'_> {
        HintsMut(self)
    }

    /// `fi_getinfo(version, NULL, NULL, 0, hints)`. `FI_ENODATA` (nothing
    /// matches) is `Ok(None)`.
    pub(crate) fn get(hints: Option<&InfoList>) -> Result<Option<InfoList>, Fail> {
        let mut out = null_mut();
        let h = hints.map_or(ptr::null(), |h| h.0.cast_const());
        // SAFETY: hints is NULL or a valid fi_info we own; out is a valid
        // out-pointer; node/service may be NULL.
        let rc = unsafe {
            sys::fi_getinfo(
                sys::make_version(1, 17),
                ptr::null(),
                ptr::null(),
                0,
                h,
                &mut out,
            )
        };
        if rc == -(sys::FI_ENODATA as i32) {
            return Ok(None);
        }
        check("fi_getinfo", rc as isize)?;
        if out.is_null() {
            return Ok(None);
        }
        Ok(Some(InfoList(out)))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Info<'_>> {
        let mut p = self.0;
        std::iter::from_fn(move || {
            if p.is_null() {
                return None;
            }
            // SAFETY: p is an entry of the list this value owns; the list is
            // borrowed for the iterator's lifetime.
            let e = unsafe { &*p };
            p = e.next;
            Some(Info(e))
        })
    }

    /// A copy of one entry, as its own one-entry list.
    pub(crate) fn dup(entry: Info<'_>) -> Result<InfoList, Fail> {
        // SAFETY: entry borrows a valid fi_info; fi_dupinfo copies it (and
        // only it: the copy's `next` is NULL).
        let p = unsafe { sys::fi_dupinfo(entry.0) };
        if p.is_null() {
            return Err(Fail {
                what: "fi_dupinfo",
                code: sys::FI_ENOMEM as i32,
            });
        }
        Ok(InfoList(p))
    }

    pub(crate) fn first(&self) -> Option<Info<'_>> {
        self.iter().next()
    }
}

impl Drop for InfoList {
    fn drop(&mut self) {
        // SAFETY: we own the list (from fi_getinfo/fi_dupinfo); freed once.
        unsafe { sys::fi_freeinfo(self.0) }
    }
}

/// Writable access to hints.
#[derive(Debug)]
pub(crate) struct HintsMut<'a>(&'a mut InfoList);

impl HintsMut<'_> {
    fn info(&mut self) -> &mut sys::fi_info {
        // SAFETY: the list is non-NULL (checked at allocation) and borrowed
        // mutably through self.
        unsafe { &mut *self.0 .0 }
    }

    pub(crate) fn set_caps(&mut self, caps: u64, mode: u64) {
        let i = self.info();
        i.caps = caps;
        i.mode = mode;
    }

    /// Endpoint type, MR modes, threading and message order.
    pub(crate) fn set_attrs(&mut self, mr_mode: u64, msg_order: u64) {
        let i = self.info();
        // SAFETY: fi_dupinfo(NULL) allocated every attribute struct; they are
        // owned by the list borrowed mutably here.
        unsafe {
            (*i.ep_attr).type_ = sys::FI_EP_RDM;
            (*i.domain_attr).mr_mode = mr_mode as i32;
            (*i.domain_attr).threading = sys::FI_THREAD_DOMAIN;
            (*i.tx_attr).msg_order = msg_order;
            (*i.rx_attr).msg_order = msg_order;
        }
    }

    /// Restricts to one provider (`prov_name`, e.g. `tcp;ofi_rxm`).
    pub(crate) fn set_provider(&mut self, name: &str) -> Result<(), Fail> {
        let c = CString::new(name).map_err(|_| Fail {
            what: "provider name",
            code: sys::FI_EINVAL as i32,
        })?;
        let i = self.info();
        // SAFETY: fi_freeinfo frees prov_name with free(), so it must come
        // from malloc: strdup copies our NUL-terminated string.
        let dup = unsafe { libc::strdup(c.as_ptr()) };
        if dup.is_null() {
            return Err(Fail {
                what: "strdup",
                code: sys::FI_ENOMEM as i32,
            });
        }
        // SAFETY: fabric_attr was allocated by fi_dupinfo(NULL); its old
        // prov_name is NULL or ours (freed here before replacing).
        unsafe {
            libc::free((*i.fabric_attr).prov_name.cast());
            (*i.fabric_attr).prov_name = dup;
        }
        Ok(())
    }
}

/// A borrowed `fi_info` entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Info<'a>(&'a sys::fi_info);

impl Info<'_> {
    pub(crate) fn caps(&self) -> u64 {
        self.0.caps
    }
    pub(crate) fn mode(&self) -> u64 {
        self.0.mode
    }
    pub(crate) fn provider(&self) -> String {
        // SAFETY: fabric_attr is non-NULL in every entry fi_getinfo returns.
        cstr_field(unsafe { (*self.0.fabric_attr).prov_name })
    }
    pub(crate) fn fabric(&self) -> String {
        // SAFETY: as above.
        cstr_field(unsafe { (*self.0.fabric_attr).name })
    }
    pub(crate) fn domain(&self) -> String {
        // SAFETY: domain_attr is non-NULL in every entry fi_getinfo returns.
        cstr_field(unsafe { (*self.0.domain_attr).name })
    }
    pub(crate) fn mr_mode(&self) -> u64 {
        // SAFETY: as above.
        unsafe { (*self.0.domain_attr).mr_mode as u64 }
    }
    pub(crate) fn manual_progress(&self) -> bool {
        // SAFETY: as above.
        unsafe { (*self.0.domain_attr).data_progress == sys::FI_PROGRESS_MANUAL }
    }
    pub(crate) fn inject_size(&self) -> usize {
        // SAFETY: tx_attr is non-NULL in every entry fi_getinfo returns.
        unsafe { (*self.0.tx_attr).inject_size }
    }
    pub(crate) fn tx_size(&self) -> usize {
        // SAFETY: as above.
        unsafe { (*self.0.tx_attr).size }
    }
    pub(crate) fn rx_size(&self) -> usize {
        // SAFETY: rx_attr is non-NULL in every entry fi_getinfo returns.
        unsafe { (*self.0.rx_attr).size }
    }
    pub(crate) fn max_msg_size(&self) -> usize {
        // SAFETY: ep_attr is non-NULL in every entry fi_getinfo returns.
        unsafe { (*self.0.ep_attr).max_msg_size }
    }
    pub(crate) fn is_rdm(&self) -> bool {
        // SAFETY: as above.
        unsafe { (*self.0.ep_attr).type_ == sys::FI_EP_RDM }
    }
}

/// A memory registration; closed on drop (before the domain: the device
/// drops its registrations before its [`Fabric`]).
#[derive(Debug)]
pub(crate) struct Mr {
    mr: *mut sys::fid_mr,
    pub(crate) desc: *mut c_void,
    pub(crate) key: u64,
}

// SAFETY: an MR is a handle to provider state that FI_THREAD_DOMAIN lets any
// one thread at a time use; the device owning it is used by one thread at a
// time (`&mut self`).
unsafe impl Send for Mr {}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: mr is a live MR we opened; closed exactly once.
        let rc = unsafe { sys::fi_close(addr_of_mut!((*self.mr).fid)) };
        if rc != 0 {
            tracing::warn!(code = -rc, "fi_close(mr) failed");
        }
    }
}

/// One completion, as read off the CQ (the fields the device uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Done {
    /// The operation's context address (classified, never dereferenced).
    pub(crate) ctx: usize,
    pub(crate) len: usize,
    pub(crate) tag: u64,
}
/// One error completion.
pub(crate) type CqErr = sys::fi_cq_err_entry;
/// An operation context, one per outstanding operation (`FI_CONTEXT2`).
pub(crate) type OpContext = sys::fi_context2;
/// An AV address.
pub(crate) type Addr = sys::fi_addr_t;

/// Completions read per `fi_cq_read`.
pub(crate) const CQ_BATCH: usize = 32;

/// What `fi_cq_read` found.
#[derive(Debug)]
pub(crate) enum CqRead {
    /// This many entries were written.
    Entries(usize),
    /// An error entry is at the head: read it with [`Fabric::cq_readerr`].
    Error,
}

/// The fabric, domain, completion queue, address vector and endpoint of
/// one rank.
#[derive(Debug)]
pub(crate) struct Fabric {
    fabric: *mut sys::fid_fabric,
    domain: *mut sys::fid_domain,
    cq: *mut sys::fid_cq,
    av: *mut sys::fid_av,
    ep: *mut sys::fid_ep,
    /// The CQ's wait fd, if it was opened with `FI_WAIT_FD`.
    wait_fd: Option<i32>,
    mr_endpoint: bool,
}

// SAFETY: the fids are used only through `&mut` methods of the device that
// owns this value (FI_THREAD_DOMAIN: one thread at a time, any thread).
unsafe impl Send for Fabric {}

impl Fabric {
    /// Opens everything for `info`, the CQ with `FI_WAIT_FD` when `wait`
    /// (falling back to `FI_WAIT_NONE` if the provider refuses it).
    /// Opens fabric, domain, CQ, AV and endpoint, and enables the endpoint.
    /// `name`, if given, is set with `fi_setname` before `fi_enable`: the
    /// shm provider names its shared-memory region after it (see
    /// `setup.rs`).
    pub(crate) fn open(
        info: &InfoList,
        cq_size: usize,
        wait: bool,
        name: Option<&std::ffi::CStr>,
    ) -> Result<Fabric, Fail> {
        let i = info.0;
        let mut f = Fabric {
            fabric: null_mut(),
            domain: null_mut(),
            cq: null_mut(),
            av: null_mut(),
            ep: null_mut(),
            wait_fd: None,
            mr_endpoint: false,
        };
        // SAFETY: i is a valid one-entry fi_info list we own; every out
        // pointer is a field of `f`, whose Drop closes what was opened (in
        // reverse order) if a later step fails.
        unsafe {
            f.mr_endpoint =
                (*(*i).domain_attr).mr_mode as u64 & u64::from(sys::FI_MR_ENDPOINT) != 0;
            let rc = sys::fi_fabric((*i).fabric_attr, &mut f.fabric, null_mut());
            check("fi_fabric", rc as isize)?;
            let rc = sys::fi_domain(f.fabric, i, &mut f.domain, null_mut());
            check("fi_domain", rc as isize)?;
            let mut attr = sys::fi_cq_attr {
                size: cq_size,
                format: sys::FI_CQ_FORMAT_TAGGED,
                wait_obj: if wait {
                    sys::FI_WAIT_FD
                } else {
                    sys::FI_WAIT_NONE
                },
                ..Default::default()
            };
            let rc = sys::fi_cq_open(f.domain, &mut attr, &mut f.cq, null_mut());
            if rc != 0 && wait {
                attr.wait_obj = sys::FI_WAIT_NONE;
                let rc = sys::fi_cq_open(f.domain, &mut attr, &mut f.cq, null_mut());
                check("fi_cq_open", rc as isize)?;
            } else {
                check("fi_cq_open", rc as isize)?;
                if wait {
                    let mut fd: i32 = -1;
                    let rc = sys::fi_control(
                        addr_of_mut!((*f.cq).fid),
                        sys::FI_GETWAIT as i32,
                        (&mut fd as *mut i32).cast(),
                    );
                    if rc == 0 && fd >= 0 {
                        f.wait_fd = Some(fd);
                    }
                }
            }
            let mut av_attr = sys::fi_av_attr {
                type_: sys::FI_AV_TABLE,
                ..Default::default()
            };
            let rc = sys::fi_av_open(f.domain, &mut av_attr, &mut f.av, null_mut());
            check("fi_av_open", rc as isize)?;
            let rc = sys::fi_endpoint(f.domain, i, &mut f.ep, null_mut());
            check("fi_endpoint", rc as isize)?;
            let rc = sys::fi_ep_bind(f.ep, addr_of_mut!((*f.av).fid), 0);
            check("fi_ep_bind(av)", rc as isize)?;
            let flags = u64::from(sys::FI_TRANSMIT) | u64::from(sys::FI_RECV);
            let rc = sys::fi_ep_bind(f.ep, addr_of_mut!((*f.cq).fid), flags);
            check("fi_ep_bind(cq)", rc as isize)?;
            if let Some(name) = name {
                // fi_setname copies the string (the shm provider strdups it).
                let bytes = name.to_bytes_with_nul();
                let rc = sys::fi_setname(
                    addr_of_mut!((*f.ep).fid),
                    name.as_ptr().cast_mut().cast(),
                    bytes.len(),
                );
                check("fi_setname", rc as isize)?;
            }
            let rc = sys::fi_enable(f.ep);
            check("fi_enable", rc as isize)?;
        }
        Ok(f)
    }

    pub(crate) fn wait_fd(&self) -> Option<i32> {
        self.wait_fd
    }

    /// The endpoint's address, for peers' AVs.
    pub(crate) fn name(&self) -> Result<Vec<u8>, Fail> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: ep is open; buf has len writable bytes; len is in/out.
        let mut rc = unsafe {
            sys::fi_getname(
                addr_of_mut!((*self.ep).fid),
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc == -(sys::FI_ETOOSMALL as i32) {
            buf.resize(len, 0);
            // SAFETY: as above, with the size libfabric asked for.
            rc = unsafe {
                sys::fi_getname(
                    addr_of_mut!((*self.ep).fid),
                    buf.as_mut_ptr().cast(),
                    &mut len,
                )
            };
        }
        check("fi_getname", rc as isize)?;
        buf.truncate(len);
        Ok(buf)
    }

    /// Inserts one peer address; returns its AV handle.
    pub(crate) fn av_insert(&mut self, addr: &[u8]) -> Result<Addr, Fail> {
        let mut out: Addr = sys::FI_ADDR_UNSPEC;
        // SAFETY: av is open; addr is a readable address blob of the
        // provider's format (libfabric reads its own length from it); out
        // receives one fi_addr_t.
        let rc =
            unsafe { sys::fi_av_insert(self.av, addr.as_ptr().cast(), 1, &mut out, 0, null_mut()) };
        if rc != 1 {
            return Err(Fail {
                what: "fi_av_insert",
                code: if rc < 0 { -rc } else { sys::FI_EINVAL as i32 },
            });
        }
        Ok(out)
    }

    /// Registers `len` bytes at `buf` for `access` (`FI_*` bits).
    pub(crate) fn mr_reg(
        &mut self,
        buf: *const u8,
        len: usize,
        access: u64,
        requested_key: u64,
    ) -> Result<Mr, Fail> {
        let mut mr = null_mut();
        // SAFETY: the caller keeps buf..buf+len allocated until the MR is
        // closed (the device owns the memory while registered); domain is open.
        let rc = unsafe {
            sys::fi_mr_reg(
                self.domain,
                buf.cast(),
                len,
                access,
                0,
                requested_key,
                0,
                &mut mr,
                null_mut(),
            )
        };
        check("fi_mr_reg", rc as isize)?;
        // SAFETY: mr was just opened.
        let (desc, key) = unsafe { (sys::fi_mr_desc(mr), sys::fi_mr_key(mr)) };
        let out = Mr { mr, desc, key };
        if self.mr_endpoint {
            // SAFETY: FI_MR_ENDPOINT: the MR must be bound to the endpoint and
            // enabled before use; both are open.
            unsafe {
                let rc = sys::fi_mr_bind(mr, addr_of_mut!((*self.ep).fid), 0);
                check("fi_mr_bind", rc as isize)?;
                let rc = sys::fi_mr_enable(mr);
                check("fi_mr_enable", rc as isize)?;
                // The key may only be final once enabled.
                let key = sys::fi_mr_key(mr);
                return Ok(Mr { key, ..out });
            }
        }
        Ok(out)
    }

    /// `fi_tinject`: buffered, no completion.
    #[inline]
    pub(crate) fn tinject(&mut self, data: &[u8], dest: Addr, tag: u64) -> Result<bool, Fail> {
        // SAFETY: ep is open; libfabric copies `data` before returning.
        let rc = unsafe { sys::fi_tinject(self.ep, data.as_ptr().cast(), data.len(), dest, tag) };
        posted("fi_tinject", rc)
    }

    /// # Safety
    /// `buf..buf+len` and `ctx` stay valid and untouched until the
    /// completion for `ctx` is read; `desc` is the buffer's MR descriptor or
    /// NULL where the provider does not need one.
    #[inline]
    pub(crate) unsafe fn tsend(
        &mut self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: Addr,
        tag: u64,
        ctx: *mut OpContext,
    ) -> Result<bool, Fail> {
        // SAFETY: the caller's contract above; ep is open.
        let rc = unsafe { sys::fi_tsend(self.ep, buf.cast(), len, desc, dest, tag, ctx.cast()) };
        posted("fi_tsend", rc)
    }

    /// Posts a receive matching any source and any tag under `ignore`.
    ///
    /// # Safety
    /// As for [`Fabric::tsend`], for a writable buffer.
    #[inline]
    pub(crate) unsafe fn trecv(
        &mut self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        ignore: u64,
        ctx: *mut OpContext,
    ) -> Result<bool, Fail> {
        // SAFETY: the caller's contract; ep is open.
        let rc = unsafe {
            sys::fi_trecv(
                self.ep,
                buf.cast(),
                len,
                desc,
                sys::FI_ADDR_UNSPEC,
                0,
                ignore,
                ctx.cast(),
            )
        };
        posted("fi_trecv", rc)
    }

    /// `fi_read` ([`RdmaDir::Get`]) or `fi_write` of `len` bytes between a
    /// local buffer and a peer's registered region.
    ///
    /// # Safety
    /// As for [`Fabric::tsend`] (the local buffer is written by a read).
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn rma(
        &mut self,
        dir: RdmaDir,
        local: *mut u8,
        len: usize,
        desc: *mut c_void,
        peer: Addr,
        addr: u64,
        key: u64,
        ctx: *mut OpContext,
    ) -> Result<bool, Fail> {
        // SAFETY: the caller's contract; ep is open.
        let rc = unsafe {
            if dir == RdmaDir::Put {
                sys::fi_write(
                    self.ep,
                    local.cast(),
                    len,
                    desc,
                    peer,
                    addr,
                    key,
                    ctx.cast(),
                )
            } else {
                sys::fi_read(
                    self.ep,
                    local.cast(),
                    len,
                    desc,
                    peer,
                    addr,
                    key,
                    ctx.cast(),
                )
            }
        };
        posted(
            if dir == RdmaDir::Put {
                "fi_write"
            } else {
                "fi_read"
            },
            rc,
        )
    }

    /// Reads up to [`CQ_BATCH`] completions, appending them to `out` (also
    /// what drives a manual-progress provider).
    #[inline]
    pub(crate) fn cq_read(&mut self, out: &mut Vec<Done>) -> Result<CqRead, Fail> {
        // Uninitialized: zeroing 1.5 KiB per poll shows in the latency.
        let mut entries = [std::mem::MaybeUninit::<sys::fi_cq_tagged_entry>::uninit(); CQ_BATCH];
        // SAFETY: cq is open (FI_CQ_FORMAT_TAGGED, so entries are
        // fi_cq_tagged_entry); the array has CQ_BATCH writable entries.
        let rc = unsafe { sys::fi_cq_read(self.cq, entries.as_mut_ptr().cast(), CQ_BATCH) };
        if rc == -(sys::FI_EAGAIN as isize) {
            return Ok(CqRead::Entries(0));
        }
        if rc == -(sys::FI_EAVAIL as isize) {
            return Ok(CqRead::Error);
        }
        let n = check("fi_cq_read", rc)? as usize;
        out.extend(entries[..n.min(CQ_BATCH)].iter().map(|e| {
            // SAFETY: fi_cq_read wrote its first n entries (n <= CQ_BATCH).
            let e = unsafe { e.assume_init_ref() };
            Done {
                ctx: e.op_context as usize,
                len: e.len,
                tag: e.tag,
            }
        }));
        Ok(CqRead::Entries(n))
    }

    /// Reads the error entry at the head of the CQ, with the provider's text.
    pub(crate) fn cq_readerr(&mut self) -> Result<Option<(CqErr, String)>, Fail> {
        let mut e = CqErr::default();
        // SAFETY: cq is open; e is a zeroed entry (err_data_size 0: the
        // provider keeps err_data itself, valid until the next CQ call).
        let rc = unsafe { sys::fi_cq_readerr(self.cq, &mut e, 0) };
        if rc == -(sys::FI_EAGAIN as isize) {
            return Ok(None);
        }
        check("fi_cq_readerr", rc)?;
        let mut text = [0 as std::ffi::c_char; 128];
        // SAFETY: cq is open; err_data is what readerr just returned; text
        // is a writable buffer of the given length.
        let s = unsafe {
            sys::fi_cq_strerror(
                self.cq,
                e.prov_errno,
                e.err_data,
                text.as_mut_ptr(),
                text.len(),
            )
        };
        Ok(Some((e, cstr_field(s))))
    }

    /// `fi_trywait` on the CQ: `true` when the caller may sleep on the fd.
    pub(crate) fn trywait(&mut self) -> Result<bool, Fail> {
        let mut fids = [
            // SAFETY: cq is open; taking its fid's address reads nothing.
            unsafe { addr_of_mut!((*self.cq).fid) },
        ];
        // SAFETY: fabric is open; fids holds one open fid.
        let rc = unsafe { sys::fi_trywait(self.fabric, fids.as_mut_ptr(), 1) };
        if rc == -(sys::FI_EAGAIN as i32) {
            return Ok(false);
        }
        check("fi_trywait", rc as isize).map(|_| true)
    }

    /// Closes the endpoint (first, before any MR or buffer it may use).
    pub(crate) fn close_ep(&mut self) {
        if !self.ep.is_null() {
            // SAFETY: ep is open; set to NULL so it is closed once.
            let rc = unsafe { sys::fi_close(addr_of_mut!((*self.ep).fid)) };
            if rc != 0 {
                tracing::warn!(code = -rc, "fi_close(ep) failed");
            }
            self.ep = null_mut();
        }
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        self.close_ep();
        let fids = [
            (self.av.cast::<sys::fid>(), "av"),
            (self.cq.cast::<sys::fid>(), "cq"),
            (self.domain.cast::<sys::fid>(), "domain"),
            (self.fabric.cast::<sys::fid>(), "fabric"),
        ];
        for (fid, what) in fids {
            if fid.is_null() {
                continue;
            }
            // SAFETY: each is open (non-NULL) and closed once, after
            // everything bound to it (reverse order of opening). Each fid_*
            // struct starts with its `struct fid`, so the cast is its fid.
            let rc = unsafe { sys::fi_close(fid) };
            if rc != 0 {
                tracing::warn!(code = -rc, what, "fi_close failed");
            }
        }
    }
}
