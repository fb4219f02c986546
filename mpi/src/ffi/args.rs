//! The checked forms of C arguments: what a generated shim hands a body,
//! so every body is safe Rust (`mpi/abi/functions.txt` says what each
//! pointer argument is).
//!
//! # Contract
//! Each decoder is `unsafe`: the shim calls it on the pointer the C caller
//! passed, and the caller's promise is the MPI standard's for that
//! argument (valid for the reads or writes the function's description
//! implies, for the length the table's `len(P)=E` gives, or null where the
//! standard allows it). A decoder checks what can be checked (null, a
//! negative length) and turns the pointer into a value, a slice, a string,
//! or one of the write-only views below, whose lifetime is the call's: a
//! body cannot keep one past its return, and cannot make one itself (no
//! safe constructor), so every raw access in this crate's chapters
//! goes through a pointer and a length the caller vouched for.
//!
//! Write-only views ([`Out`], [`OutSlice`], [`StatusOut`], [`TextOut`],
//! [`Later`]) exist because out-arguments may point to memory the program
//! never initialized: no `&mut T` is ever made to it.
//!
//! The program's data buffers are the exception to the call's lifetime:
//! [`SendBuf`] and [`RecvBuf`] are tokens of an address, which a body may
//! keep as long as the standard keeps the buffer the library's (a
//! nonblocking operation's, a persistent request's), and whose memory it
//! reaches only through `datatype::buf`, with the count and datatype of
//! the same call.

use std::ffi::{c_char, c_int};
use std::marker::PhantomData;

use crate::abi::class::MPI_ERR_ARG;
use crate::abi::MpiStatus;
use crate::error::{Fail, Res};

/// An out-argument (or in-out argument) `T *`.
#[derive(Debug)]
pub(crate) struct Out<'a, T> {
    p: *mut T,
    _call: PhantomData<&'a mut T>,
}

impl<T: Copy> Out<'_, T> {
    /// Whether the program passed null (allowed for some arguments).
    pub(crate) fn is_null(&self) -> bool {
        self.p.is_null()
    }

    /// Writes `v`.
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for null.
    pub(crate) fn set(&mut self, v: T) -> Res {
        if self.p.is_null() {
            return Err(Fail::new(
                MPI_ERR_ARG,
                "a null pointer was passed for an output argument",
            ));
        }
        // SAFETY: non-null, and valid for a write of `T` for the call (the
        // contract of `out`, which made `self`).
        unsafe { self.p.write(v) };
        Ok(())
    }

    /// Reads the current value of an in-out argument.
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for null.
    pub(crate) fn get(&self) -> Res<T> {
        if self.p.is_null() {
            return Err(Fail::new(
                MPI_ERR_ARG,
                "a null pointer was passed for an argument",
            ));
        }
        // SAFETY: non-null, and an in-out argument is valid for reads (the
        // contract of `out`; a body reads only in-out arguments).
        Ok(unsafe { self.p.read() })
    }
}

/// `p` as an out-argument.
///
/// # Safety
/// `p` is null or valid for writes (and, for an in-out argument, reads) of
/// a `T` for the call.
pub(crate) unsafe fn out<'a, T>(p: *mut T) -> Out<'a, T> {
    Out {
        p,
        _call: PhantomData,
    }
}

/// A status out-argument: null is `MPI_STATUS_IGNORE`.
#[derive(Debug)]
pub(crate) struct StatusOut<'a> {
    p: *mut MpiStatus,
    _call: PhantomData<&'a mut MpiStatus>,
}

impl StatusOut<'_> {
    /// Whether the program passed `MPI_STATUS_IGNORE`.
    pub(crate) fn is_ignore(&self) -> bool {
        self.p.is_null()
    }

    /// Writes `s` unless the program passed `MPI_STATUS_IGNORE`, all but
    /// its `MPI_ERROR` field: a call that completes one operation leaves
    /// that field as the program had it (MPI 4.1 §3.2.5: only the calls
    /// that return several statuses set it, with `MPI_ERR_IN_STATUS`).
    /// The empty status (of a null or inactive request) is written whole:
    /// its definition includes `MPI_ERROR` = `MPI_SUCCESS` (§3.7.3).
    #[inline]
    pub(crate) fn set(&mut self, s: MpiStatus) {
        if self.p.is_null() {
            return;
        }
        // Only the empty status (and a send's) has source MPI_ANY_SOURCE,
        // so a compare or two tell it from a received message's.
        if s.source == crate::abi::MPI_ANY_SOURCE && s.error == crate::abi::class::MPI_SUCCESS {
            // SAFETY: non-null, valid for a write (the contract of
            // `status_out`).
            unsafe { self.p.write(s) };
        } else {
            // SAFETY: non-null, valid for writes of an `MPI_Status` (the
            // contract of `status_out`); each field is written through a
            // raw place, so no reference to possibly uninitialized memory
            // is made.
            unsafe {
                std::ptr::addr_of_mut!((*self.p).source).write(s.source);
                std::ptr::addr_of_mut!((*self.p).tag).write(s.tag);
                std::ptr::addr_of_mut!((*self.p).internal).write(s.internal);
            }
        }
    }
}

/// `p` as a status out-argument.
///
/// # Safety
/// `p` is null or valid for a write of an `MPI_Status` for the call.
pub(crate) unsafe fn status_out<'a>(p: *mut MpiStatus) -> StatusOut<'a> {
    StatusOut {
        p,
        _call: PhantomData,
    }
}

/// The value an in-argument `const T *` points to.
///
/// # Safety
/// `p` is null or valid for a read of a `T`.
///
/// # Errors
/// `MPI_ERR_ARG` for null.
pub(crate) unsafe fn value<T: Copy>(p: *const T) -> Res<T> {
    // SAFETY: forwarded.
    unsafe { super::raw::get(p) }
}

/// The room an in-out length `int *` gives a string: what it holds, or
/// none for a null pointer (the tools interface lets a program pass NULL
/// for a string it does not want, and its length).
///
/// # Safety
/// As for [`value`].
///
/// # Errors
/// None: a null pointer is no room.
pub(crate) unsafe fn room(p: *const c_int) -> Res<i64> {
    if p.is_null() {
        return Ok(0);
    }
    // SAFETY: forwarded; not null.
    Ok(i64::from(unsafe { value(p)? }).max(0))
}

/// The string an in-argument `const char *` points to.
///
/// # Safety
/// `p` is null or a NUL-terminated string, unchanged for the call.
///
/// # Errors
/// `MPI_ERR_ARG` for null or a string that is not UTF-8.
pub(crate) unsafe fn text<'a>(p: *const c_char) -> Res<&'a str> {
    // SAFETY: forwarded.
    unsafe { super::raw::cstr(p) }
}

/// An `MPI_Comm_copy_attr_function *` argument: 0 and 1 are the ABI's
/// `MPI_COMM_NULL_COPY_FN` and `MPI_COMM_DUP_FN`, anything else the
/// program's function.
///
/// # Safety
/// `addr` is 0, 1 or the address of a function of that type.
pub(crate) unsafe fn copy_attr_fn(addr: usize) -> crate::abi::callback::CopyCb {
    use crate::abi::callback::{CopyCb, DUP_FN, NULL_FN};
    match addr {
        NULL_FN => CopyCb::Null,
        DUP_FN => CopyCb::Dup,
        // SAFETY: the address of an `MPI_Comm_copy_attr_function` (the
        // caller's promise); function and data pointers have one size.
        f => CopyCb::Program(unsafe {
            std::mem::transmute::<usize, crate::abi::callback::CommCopyAttrFn>(f)
        }),
    }
}

/// An `MPI_Comm_delete_attr_function *` argument: 0 is the ABI's
/// `MPI_COMM_NULL_DELETE_FN`.
///
/// # Safety
/// `addr` is 0 or the address of a function of that type.
pub(crate) unsafe fn delete_attr_fn(addr: usize) -> crate::abi::callback::DeleteCb {
    use crate::abi::callback::{DeleteCb, NULL_FN};
    match addr {
        NULL_FN => DeleteCb::Null,
        // SAFETY: as in `copy_attr_fn`.
        f => DeleteCb::Program(unsafe {
            std::mem::transmute::<usize, crate::abi::callback::CommDeleteAttrFn>(f)
        }),
    }
}

/// A length from the table's `len(P)=E`, as a `usize`. A negative one
/// is 0: the body checks its count argument itself, with the class the
/// standard gives that argument (`MPI_ERR_COUNT`, `MPI_ERR_ARG`,
/// `MPI_ERR_DIMS`), so a decoder never reports it first.
fn length(len: i64) -> usize {
    usize::try_from(len).unwrap_or(0)
}

/// An in-array `const T P[]` of `len` entries.
///
/// # Safety
/// `p` is null or valid for reads of `len` `T`s, unchanged for the call.
///
/// # Errors
/// `MPI_ERR_ARG` for null with a positive length.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: i64) -> Res<&'a [T]> {
    let n = length(len);
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null array with a non-zero count"));
    }
    // SAFETY: non-null, valid for `n` reads, unchanged (the caller's
    // promise, forwarded).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An out-array `T P[]` of a known length: written entry by entry.
#[derive(Debug)]
pub(crate) struct OutSlice<'a, T> {
    p: *mut T,
    len: usize,
    _call: PhantomData<&'a mut [T]>,
}

impl<T: Copy> OutSlice<'_, T> {
    /// An array of no entries (an argument a form does not have).
    pub(crate) fn empty() -> Self {
        OutSlice {
            p: std::ptr::null_mut(),
            len: 0,
            _call: PhantomData,
        }
    }

    /// Writes entry `i`.
    ///
    /// # Panics
    /// `i` out of bounds (a bug in the body: the guard reports it as
    /// `MPI_ERR_INTERN`, and nothing is written).
    pub(crate) fn set(&mut self, i: usize, v: T) {
        assert!(i < self.len, "out-array index {i} of {}", self.len);
        // SAFETY: `i < len`, and the array is valid for `len` writes (the
        // contract of `slice_out`; non-null when `len > 0`).
        unsafe { self.p.add(i).write(v) };
    }
}

/// An out-array `T P[]` of `len` entries.
///
/// # Safety
/// `p` is null or valid for writes of `len` `T`s for the call.
///
/// # Errors
/// As [`slice`].
pub(crate) unsafe fn slice_out<'a, T>(p: *mut T, len: i64) -> Res<OutSlice<'a, T>> {
    let n = length(len);
    if n > 0 && p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null array with a non-zero count"));
    }
    Ok(OutSlice {
        p,
        len: n,
        _call: PhantomData,
    })
}

/// An out-array `T P[]` of `len` entries that may be null: an array of
/// statuses (`MPI_STATUSES_IGNORE`), or one the function writes only when
/// it has something to write, whose body checks it then.
///
/// # Safety
/// `p` is null or valid for writes of `len` `T`s for the call.
pub(crate) unsafe fn opt_slice_out<'a, T>(p: *mut T, len: i64) -> Option<OutSlice<'a, T>> {
    (!p.is_null()).then(|| OutSlice {
        p,
        len: length(len),
        _call: PhantomData,
    })
}

/// A string out-argument `char *P` of a known capacity (the standard's
/// `MPI_MAX_*` for the argument, or a length the program passed).
#[derive(Debug)]
pub(crate) struct TextOut<'a> {
    p: *mut c_char,
    cap: usize,
    _call: PhantomData<&'a mut [c_char]>,
}

impl TextOut<'_> {
    /// True for a null buffer or one of no bytes (nothing can be written).
    pub(crate) fn is_empty(&self) -> bool {
        self.p.is_null() || self.cap == 0
    }

    /// Copies `s`, cut to the capacity less one, and a NUL; its length to
    /// `len` when given.
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for a null buffer.
    pub(crate) fn set(&mut self, s: &str, len: Option<&mut Out<'_, c_int>>) -> Res {
        // SAFETY: `p` is null or valid for `cap` writes (the contract of
        // `text_out`); `put_str` writes at most `cap` bytes.
        unsafe { super::raw::put_str(self.p, self.cap, s, std::ptr::null_mut())? };
        if let Some(len) = len {
            if !len.is_null() {
                let n = s.len().min(self.cap.saturating_sub(1));
                len.set(c_int::try_from(n).unwrap_or(c_int::MAX))?;
            }
        }
        Ok(())
    }
}

/// `p` as a string out-argument of `cap` bytes.
///
/// # Safety
/// `p` is null or valid for writes of `cap` bytes for the call.
/// A negative capacity is 0.
pub(crate) unsafe fn text_out<'a>(p: *mut c_char, cap: i64) -> TextOut<'a> {
    TextOut {
        p,
        cap: length(cap),
        _call: PhantomData,
    }
}

/// An out-argument written when a request completes (`MPI_Comm_idup`'s
/// `newcomm`): the standard has the program keep it valid until then.
/// Kept as an address, so the request that holds it may move between
/// threads.
#[derive(Debug)]
pub(crate) struct Later<T> {
    addr: usize,
    _ty: PhantomData<fn(T)>,
}

impl<T> Later<T> {
    /// Whether the program passed null.
    pub(crate) fn is_null(&self) -> bool {
        self.addr == 0
    }

    /// Writes `v`, once.
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for null.
    pub(crate) fn set(self, v: T) -> Res {
        if self.addr == 0 {
            return Err(Fail::new(
                MPI_ERR_ARG,
                "a null pointer was passed for an output argument",
            ));
        }
        // SAFETY: non-null, valid for a write of `T` until the request
        // completes, which is now (the contract of `later`; `set` takes
        // `self`, so it writes once).
        unsafe { (self.addr as *mut T).write(v) };
        Ok(())
    }
}

/// `p` as an out-argument written at a request's completion.
///
/// # Safety
/// `p` is null or valid for a write of a `T` until the request the call
/// starts completes.
pub(crate) unsafe fn later<T>(p: *mut T) -> Later<T> {
    Later {
        addr: p as usize,
        _ty: PhantomData,
    }
}

/// An in-out array `T P[]` (read and written: the program initialized
/// it).
///
/// # Safety
/// `p` is null or valid for reads and writes of `len` initialized `T`s,
/// touched by nothing else during the call.
///
/// # Errors
/// `MPI_ERR_ARG` for null with a positive length.
pub(crate) unsafe fn slice_inout<'a, T>(p: *mut T, len: i64) -> Res<&'a mut [T]> {
    let n = length(len);
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "a null array with a non-zero count"));
    }
    // SAFETY: non-null, valid for `n` reads and writes of initialized
    // values, unaliased during the call (the caller's promise).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// `MPI_Free_mem`'s `base`.
///
/// # Safety
/// `base` is null, or what `MPI_Alloc_mem` returned (or a buffer
/// `MPIX_Status_get_buffer` handed over), not yet freed.
pub(crate) unsafe fn alloc_base(base: *mut std::ffi::c_void) -> super::os::AllocBase {
    super::os::AllocBase(base as usize)
}

/// An array of `len` C strings (`main`'s `argv`): each read up to the
/// first null entry, lossily as UTF-8; none for a null array.
///
/// # Safety
/// `p` is null or valid for reads of `len` pointers, each null or a
/// NUL-terminated string.
pub(crate) unsafe fn c_strings(p: *mut *mut c_char, len: i64) -> Vec<String> {
    let n = if p.is_null() { 0 } else { length(len) };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: `p` holds `len` pointers (the caller's promise).
        let s = unsafe { p.add(i).read() };
        if s.is_null() {
            break;
        }
        // SAFETY: a NUL-terminated string (the caller's promise).
        out.push(
            unsafe { std::ffi::CStr::from_ptr(s) }
                .to_string_lossy()
                .into_owned(),
        );
    }
    out
}

/// A program's input data buffer, `const void *P` (a send buffer, a
/// collective's `sendbuf`, `MPI_Pack`'s `inbuf`): the address the program
/// passed, with MPI's promise about it.
///
/// A body hands it to `datatype::buf` (the one module that reads program
/// buffers) with the count and datatype the same call passed; it may keep
/// it as long as the standard keeps the buffer the library's (a
/// nonblocking call: until the request completes; a persistent one: until
/// the request is freed). It may be `MPI_IN_PLACE` or `MPI_BOTTOM`, which
/// only a body can tell apart from a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendBuf {
    addr: usize,
}

/// A program's output data buffer, `void *P` (a receive buffer, a
/// collective's `recvbuf`, `MPI_Unpack`'s `outbuf`): as [`SendBuf`], for
/// writes. Where the function's description also reads it (an
/// `MPI_IN_PLACE` collective, `MPI_Sendrecv_replace`), it is read as
/// [`RecvBuf::input`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvBuf {
    addr: usize,
}

impl SendBuf {
    /// The address (`MPI_BOTTOM` is 0).
    pub(crate) fn addr(self) -> usize {
        self.addr
    }

    /// Whether the program passed `MPI_IN_PLACE`.
    pub(crate) fn is_in_place(self) -> bool {
        self.addr == crate::abi::MPI_IN_PLACE
    }

    /// The buffer `off` bytes on (an element of a collective's buffer, a
    /// displacement the program gave): still the program's buffer, under
    /// the same promise.
    pub(crate) fn offset(self, off: isize) -> SendBuf {
        SendBuf {
            addr: self.addr.wrapping_add_signed(off),
        }
    }
}

impl RecvBuf {
    /// No buffer: an argument a member does not use, of no data (a
    /// zero-length buffer is neither read nor written).
    pub(crate) const NONE: RecvBuf = RecvBuf { addr: 0 };

    /// The address (`MPI_BOTTOM` is 0).
    pub(crate) fn addr(self) -> usize {
        self.addr
    }

    /// As [`SendBuf::offset`].
    pub(crate) fn offset(self, off: isize) -> RecvBuf {
        RecvBuf {
            addr: self.addr.wrapping_add_signed(off),
        }
    }

    /// The same buffer read as input: for the functions whose description
    /// reads it too (an `MPI_IN_PLACE` collective's data, the buffer of
    /// `MPI_Sendrecv_replace`), where the program initialized it.
    pub(crate) fn input(self) -> SendBuf {
        SendBuf { addr: self.addr }
    }
}

/// `p` as an input data buffer.
///
/// # Safety
/// `p` is `MPI_IN_PLACE`, or null, or valid for the reads the function's
/// description makes of the data its count and datatype arguments
/// describe, for as long as the standard says (the call; a nonblocking
/// call's operation; a persistent request's life).
pub(crate) unsafe fn send_buf(p: *const std::ffi::c_void) -> SendBuf {
    SendBuf { addr: p as usize }
}

/// `p` as an output data buffer.
///
/// # Safety
/// As [`send_buf`], for writes, and accessed by nothing else meanwhile
/// (reads too where the function's description reads it).
pub(crate) unsafe fn recv_buf(p: *mut std::ffi::c_void) -> RecvBuf {
    RecvBuf { addr: p as usize }
}

/// An in-array `const T P[]` with one entry per member of the call's
/// communicator (a v-collective's counts, displacements and datatypes):
/// its length is the communicator's, which only the body knows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommArray<'a, T> {
    p: *const T,
    _call: PhantomData<&'a [T]>,
}

impl<'a, T> CommArray<'a, T> {
    /// The array as the `n` entries the function's description gives it
    /// (one per member: the body passes the size it means).
    ///
    /// # Errors
    /// `MPI_ERR_ARG` for null with `n > 0` (`what` names the array).
    pub(crate) fn entries(self, n: usize, what: &str) -> Res<&'a [T]> {
        if n == 0 {
            return Ok(&[]);
        }
        if self.p.is_null() {
            return Err(Fail::msg(MPI_ERR_ARG, format!("a null {what} array")));
        }
        // SAFETY: non-null, valid for reads of one entry per member of the
        // call's communicator, unchanged for the call (the contract of
        // `comm_array`); the body passes that member count.
        Ok(unsafe { std::slice::from_raw_parts(self.p, n) })
    }
}

/// `p` as an array of one entry per member of the call's communicator.
///
/// # Safety
/// `p` is null or valid for reads of as many `T`s as the function's
/// description gives it (one per member the body counts), unchanged for
/// the call.
pub(crate) unsafe fn comm_array<'a, T>(p: *const T) -> CommArray<'a, T> {
    CommArray {
        p,
        _call: PhantomData,
    }
}

/// A distributed graph's weight array argument: `MPI_UNWEIGHTED`,
/// `MPI_WEIGHTS_EMPTY` (weighted, with no edges here), or the weights.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Weights<'a> {
    /// `MPI_UNWEIGHTED`.
    Unweighted,
    /// `MPI_WEIGHTS_EMPTY`.
    Empty,
    /// One weight per edge (as many as the body says).
    Given(CommArray<'a, c_int>),
}

/// `p` as a weight array (in).
///
/// # Safety
/// `p` is one of the two sentinels, or null, or valid for reads of one
/// `int` per edge the function's description gives it.
pub(crate) unsafe fn weights<'a>(p: *const c_int) -> Weights<'a> {
    match p as usize {
        crate::abi::MPI_UNWEIGHTED => Weights::Unweighted,
        crate::abi::MPI_WEIGHTS_EMPTY => Weights::Empty,
        _ => Weights::Given(CommArray {
            p,
            _call: PhantomData,
        }),
    }
}

/// `p` as a weight out-array of `len` entries: `None` for
/// `MPI_UNWEIGHTED` (or `MPI_WEIGHTS_EMPTY`), which takes no writes.
///
/// # Safety
/// `p` is one of the two sentinels, or null, or valid for writes of
/// `len` `int`s for the call.
///
/// # Errors
/// As [`slice_out`].
pub(crate) unsafe fn weights_out<'a>(p: *mut c_int, len: i64) -> Res<Option<OutSlice<'a, c_int>>> {
    match p as usize {
        crate::abi::MPI_UNWEIGHTED | crate::abi::MPI_WEIGHTS_EMPTY => Ok(None),
        // SAFETY: forwarded.
        _ => unsafe { slice_out(p, len) }.map(Some),
    }
}
