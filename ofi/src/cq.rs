//! What a completion (or a CQ error entry) means: which operation (the
//! context array is in `ffi::context`) and which error.

use ferry_core::{DeviceError, Error, PeerError, Rank};

pub(crate) use crate::ffi::{Contexts, Op};
use crate::sys;

/// Whether an `FI_E*` code means the peer is gone (tcp reports a killed
/// peer as a reset or refused connection, or EIO).
pub(crate) fn is_dead(code: i32) -> bool {
    [
        sys::FI_ECONNRESET,
        sys::FI_ECONNREFUSED,
        sys::FI_ECONNABORTED,
        sys::FI_EHOSTUNREACH,
        sys::FI_ENETUNREACH,
        sys::FI_ENOTCONN,
        libc::EPIPE as u32,
        sys::FI_ESHUTDOWN,
        sys::FI_ETIMEDOUT,
        sys::FI_EIO,
        sys::FI_EADDRNOTAVAIL,
    ]
    .iter()
    .any(|&c| c as i32 == code)
}

/// The error a failed operation towards `peer` gets.
pub(crate) fn op_error(peer: Rank, what: &'static str, code: i32) -> Error {
    if is_dead(code) {
        PeerError::Died { rank: peer }.into()
    } else {
        DeviceError::Completion { what, status: code }.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::OpContext;

    #[test]
    fn contexts_classify_by_address_only() {
        let mut c = Contexts::new(3, 2, 4);
        let (r, s, m) = (c.recv(2) as usize, c.send(0) as usize, c.rma(3) as usize);
        assert_eq!(c.classify(r), Op::Recv(2));
        assert_eq!(c.classify(s), Op::Send(0));
        assert_eq!(c.classify(m), Op::Rma(3));
        assert_eq!(c.classify(0), Op::Unknown);
        let odd = c.rma(0) as usize + 1;
        assert_eq!(c.classify(odd), Op::Unknown);
        assert_eq!(
            c.classify(m + std::mem::size_of::<OpContext>()),
            Op::Unknown
        );
    }
}
