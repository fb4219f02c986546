//! Raw pointer helpers for the decoders of `args` and the buffer module
//! (`datatype::buf`). Each is `unsafe`: the caller vouches that a non-null pointer is
//! valid; nulls are reported, never dereferenced.

use std::ffi::{c_char, c_int};

use crate::abi::class::{MPI_ERR_ARG, MPI_ERR_BUFFER};
use crate::error::{Fail, Res};

/// Reads the in-argument `p`.
///
/// # Safety
/// `p` is null or valid for a read of `T`.
///
/// # Errors
/// `MPI_ERR_ARG` for null.
pub(crate) unsafe fn get<T: Copy>(p: *const T) -> Res<T> {
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for an argument",
        ));
    }
    // SAFETY: non-null, and valid for a read (the caller's promise).
    Ok(unsafe { p.read() })
}

/// A NUL-terminated C string argument.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that stays valid and
/// unchanged for `'a`.
///
/// # Errors
/// `MPI_ERR_ARG` for null or a string that is not UTF-8.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Res<&'a str> {
    if p.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for a string",
        ));
    }
    // SAFETY: non-null and NUL-terminated (the caller's promise).
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Fail::new(MPI_ERR_ARG, "a string argument is not valid UTF-8"))
}

/// Copies `s` (cut to `cap - 1` bytes) and a NUL into `buf`, and its length
/// into `len` if not null.
///
/// # Safety
/// `buf` is null or valid for writes of `cap` bytes; `len` is null or
/// valid for a write of an `int`.
///
/// # Errors
/// `MPI_ERR_ARG` for a null `buf`.
pub(crate) unsafe fn put_str(buf: *mut c_char, cap: usize, s: &str, len: *mut c_int) -> Res {
    if buf.is_null() {
        return Err(Fail::new(
            MPI_ERR_ARG,
            "a null pointer was passed for a string buffer",
        ));
    }
    let n = s.len().min(cap.saturating_sub(1));
    // SAFETY: `buf` is valid for `cap` bytes and `n < cap`, so `n` bytes
    // and the NUL fit; `s` cannot overlap memory the program gave us.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
    }
    if !len.is_null() {
        // SAFETY: non-null, valid for a write (the caller's promise).
        unsafe { len.write(c_int::try_from(n).unwrap_or(c_int::MAX)) };
    }
    Ok(())
}

/// The bytes of a send buffer.
///
/// # Safety
/// `p` is null or valid for reads of `len` bytes that nobody writes for
/// `'a`.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
#[inline]
pub(crate) unsafe fn bytes<'a>(p: *const u8, len: usize) -> Res<&'a [u8]> {
    // Null first: a caller that checked it already (the blocking calls'
    // fast path) has this branch folded away, and a non-null pointer
    // makes a slice of any length, 0 included.
    if p.is_null() {
        if len == 0 {
            return Ok(&[]);
        }
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "a null buffer with a non-zero count",
        ));
    }
    // SAFETY: non-null, valid for `len` bytes, unaliased by writers for
    // 'a (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The bytes of a receive buffer.
///
/// # Safety
/// `p` is null or valid for reads and writes of `len` bytes that nothing
/// else accesses for `'a`.
///
/// # Errors
/// `MPI_ERR_BUFFER` for null with `len > 0`.
#[inline]
pub(crate) unsafe fn bytes_mut<'a>(p: *mut u8, len: usize) -> Res<&'a mut [u8]> {
    // As in `bytes`.
    if p.is_null() {
        if len == 0 {
            return Ok(&mut []);
        }
        return Err(Fail::new(
            MPI_ERR_BUFFER,
            "a null buffer with a non-zero count",
        ));
    }
    // SAFETY: non-null, valid for `len` bytes, and not accessed by anything
    // else for 'a (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}
