//! [`RegisteredBuf`]: an engine buffer together with its memory region, in
//! the one order that is safe to drop (the MR first, then the memory).

use ferry_core::Buf;

use super::{FfiError, Mr, Pd};

/// A `Buf` registered with the HCA. The region is deregistered before the
/// buffer can go: by field order on drop, and explicitly in
/// [`RegisteredBuf::into_buf`].
#[derive(Debug)]
pub(crate) struct RegisteredBuf {
    // Field order is drop order: deregister, then release the buffer.
    /// `None` for an empty buffer (nothing to register).
    mr: Option<Mr>,
    buf: Buf,
    addr: u64,
    len: usize,
}

impl RegisteredBuf {
    /// Registers `buf` with `access` (verbs access flags). `writable`
    /// registrations take the buffer's memory with `as_mut_slice`; others
    /// are never written through.
    ///
    /// # Errors
    /// The failure of `ibv_reg_mr`, with the buffer back.
    #[allow(clippy::result_large_err)]
    pub(crate) fn new(
        pd: &Pd,
        mut buf: Buf,
        access: u32,
        writable: bool,
    ) -> Result<RegisteredBuf, (FfiError, Buf)> {
        let (ptr, len) = if writable {
            let s = buf.as_mut_slice();
            (s.as_mut_ptr(), s.len())
        } else {
            let s = buf.as_slice();
            (s.as_ptr().cast_mut(), s.len())
        };
        let mr = if len == 0 {
            None
        } else {
            // SAFETY: `ptr..ptr+len` is the buffer's memory, which does not
            // move while the `Buf` lives (buffer.rs, "Address stability"),
            // and this value keeps the `Buf` until the MR is dropped. Write
            // access is only asked for memory taken with `as_mut_slice`.
            match unsafe { pd.reg_mr(ptr, len, access) } {
                Ok(mr) => Some(mr),
                Err(e) => return Err((e, buf)),
            }
        };
        Ok(RegisteredBuf {
            mr,
            buf,
            addr: ptr as u64,
            len,
        })
    }

    /// The registered memory's address.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The registered length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The local key (0 for an empty buffer).
    pub(crate) fn lkey(&self) -> u32 {
        self.mr.as_ref().map_or(0, Mr::lkey)
    }

    /// The remote key (0 for an empty buffer).
    pub(crate) fn rkey(&self) -> u32 {
        self.mr.as_ref().map_or(0, Mr::rkey)
    }

    /// Deregisters (`ibv_dereg_mr`), then gives the buffer back.
    pub(crate) fn into_buf(self) -> Buf {
        let RegisteredBuf { mr, buf, .. } = self;
        drop(mr);
        buf
    }
}
