//! Owned byte buffers that move between the user, the engine and devices.
//!
//! The engine never borrows user memory across calls: an operation takes a
//! [`Buf`] by value and hands it back on completion. This is what keeps the
//! safe API sound when a request is leaked with `mem::forget`: leaked
//! requests leak their buffer, they never leave a dangling borrow.
//!
//! A [`Buf`] is a `Vec<u8>` (the common case: no extra allocation), any
//! [`ByteStorage`] (a typed `Vec<T>`, a device's shm cell or registered
//! receive buffer that returns itself to its pool on drop), or memory lent
//! by address ([`Buf::lent`]: the raw-pointer view that an `unsafe`
//! constructor in the `ferry` crate makes, without an allocation), or data
//! scattered over memory that only its owner can reach ([`Segments`]: a
//! non-contiguous datatype's elements, moved fragment by fragment).
//!
//! # Segmented buffers
//! A [`Buf::segmented`] buffer has no slice: its bytes are read and written
//! piecewise with [`Buf::read_at`] and [`Buf::write_at`], and
//! [`Buf::as_slice`] is empty. The engine sends one with the fragmented
//! rendezvous only (gathering each fragment as it goes out) and never
//! registers one with a device; it lands eager data and fragments in it
//! at their offsets. This is what lets a non-contiguous message move
//! without a staging copy of the whole message on either side.
//!
//! # Address stability
//! The bytes of a `Buf` do not move while the `Buf` lives, even when the
//! `Buf` itself is moved (a `Vec`'s heap block and a boxed storage's contents
//! stay put). Devices rely on this when they register a `Buf` for RDMA: a
//! device owns the `Buf` for the whole time it is registered.
//!
//! # Attached registrations
//! A device may tie a registration of an owned buffer's memory to the
//! buffer itself ([`Buf::attach`], an [`Attachment`]) so that the next
//! transfer of the same `Buf` reuses it. The attachment is dropped before
//! the memory can go: when the `Buf` drops (it is declared before the
//! memory, so it goes first), and when the memory leaves the `Buf`
//! ([`Buf::into_vec`], [`Buf::into_storage`]). A `Buf` leaked with
//! `mem::forget` leaks its attachment with its memory. Only owned memory
//! (a vector or a storage) takes one; there is no way to move an attachment
//! from one `Buf` to another, so it can never describe other memory than
//! the one it was made for.
//!
//! # ARecv buffers
//! A buffer that the library allocated for `arecv` is also a `Buf`. Its
//! [`Buf::id`] (the address of its first byte) lets tests prove that an
//! unexpected message was handed over without a copy.

use std::fmt;

/// Storage that can back a [`Buf`].
///
/// Implementations must return the same memory from every call for as long
/// as the value lives (see *Address stability* in the module docs).
pub trait ByteStorage: Send + 'static {
    /// The bytes.
    fn bytes(&self) -> &[u8];
    /// The bytes, writable.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// The storage as `Any`, so its owner can recover the concrete type
    /// (a typed `Vec<T>`) when the buffer comes back. Implement as `self`.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

impl ByteStorage for Box<[u8]> {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// A device's registration of a [`Buf`]'s memory, carried by the `Buf`
/// (see *Attached registrations* in the module docs). Dropping it must end
/// the registration.
pub trait Attachment: Send + fmt::Debug + 'static {
    /// The attachment as `Any`, so the device that made it can recognise
    /// it. Implement as `self`.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// An owned representation with a registration tied to it.
struct WithAttachment {
    // Field order is drop order: the registration ends before the memory
    // goes.
    attachment: Box<dyn Attachment>,
    repr: Repr,
}

/// Bytes that are not one slice: the packed view of data scattered over
/// memory (a non-contiguous datatype's elements in a program's buffer). See
/// *Segmented buffers* in the module docs.
///
/// Offsets are in the packed order; the engine reads and writes in
/// increasing offsets, one fragment after the other, so an implementation
/// may keep a cursor and make the in-order case cheap.
pub trait Segments: Send + 'static {
    /// The number of packed bytes.
    fn len(&self) -> usize;
    /// True if there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies the packed bytes `offset..offset + out.len()` into `out`
    /// (the engine never asks past [`Segments::len`]).
    fn gather(&self, offset: usize, out: &mut [u8]);
    /// Writes `data` as the packed bytes `offset..offset + data.len()`
    /// (never past [`Segments::len`]).
    fn scatter(&mut self, offset: usize, data: &[u8]);
}

/// Access to memory lent to the engine by address (see [`Buf::lent`]):
/// what turns a lent buffer's address back into bytes. A table of two
/// functions rather than a trait object, so that a lent `Buf` stays as
/// small as a vector-backed one.
///
/// This is how memory the caller only borrows (the raw API, the C ABI)
/// rides in a [`Buf`] without a boxed [`ByteStorage`] per operation. Only
/// the code that made a lent `Buf` can make its slices, so a `Lender` is
/// sound when every `Buf` made with it (through [`Buf::lent`]) names memory
/// that stays valid, and is not accessed by anyone else, for as long as that
/// `Buf` lives; keep it private to the code that upholds this.
#[derive(Debug)]
pub struct Lender {
    /// The `view.len()` bytes at `view.addr()`.
    pub bytes: for<'a> fn(LentView<'a>) -> &'a [u8],
    /// The same bytes, writable; memory lent only for reading yields an
    /// empty slice.
    pub bytes_mut: for<'a> fn(LentView<'a>) -> &'a mut [u8],
}

/// The address and length of a lent buffer, borrowed from it for `'a`
/// (made by [`Buf`] only: it is what a [`Lender`] turns into a slice).
#[derive(Debug, Clone, Copy)]
pub struct LentView<'a> {
    addr: usize,
    len: usize,
    _buf: std::marker::PhantomData<&'a Buf>,
}

impl LentView<'_> {
    /// The first byte's address.
    pub fn addr(&self) -> usize {
        self.addr
    }
    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

enum Repr {
    Vec(Vec<u8>),
    Storage(Box<dyn ByteStorage>),
    /// Lent memory: an address and the access that reads it (the length is
    /// the `Buf`'s own).
    Lent {
        addr: usize,
        lender: &'static Lender,
    },
    /// Scattered bytes, reached piecewise.
    Segments(Box<dyn Segments>),
    /// A vector or a storage with an attached registration (boxed, so that
    /// a `Buf` stays as small as a vector-backed one).
    Attached(Box<WithAttachment>),
}

impl Repr {
    /// The representation that holds the bytes (below an attachment).
    #[inline(always)]
    fn base(&self) -> &Repr {
        match self {
            Repr::Attached(a) => &a.repr,
            r => r,
        }
    }

    #[inline(always)]
    fn base_mut(&mut self) -> &mut Repr {
        match self {
            Repr::Attached(a) => &mut a.repr,
            r => r,
        }
    }

    /// Drops an attachment, if any: the memory is about to leave the `Buf`.
    fn detached(self) -> Repr {
        match self {
            Repr::Attached(a) => {
                let WithAttachment { attachment, repr } = *a;
                drop(attachment);
                repr
            }
            r => r,
        }
    }
}

/// An owned byte buffer; see the module docs.
///
/// `len()` may be smaller than the backing storage (a 100-byte message in a
/// 8 KiB shm cell); slices expose only the first `len()` bytes.
pub struct Buf {
    repr: Repr,
    len: usize,
}

impl Buf {
    /// An empty buffer (no allocation).
    pub const fn new() -> Buf {
        Buf {
            repr: Repr::Vec(Vec::new()),
            len: 0,
        }
    }

    /// Wraps a vector; `len()` is the vector's length.
    pub fn from_vec(v: Vec<u8>) -> Buf {
        let len = v.len();
        Buf {
            repr: Repr::Vec(v),
            len,
        }
    }

    /// A zeroed buffer of `len` bytes.
    ///
    /// # Errors
    /// [`UsageError::OutOfMemory`](crate::UsageError::OutOfMemory) if the
    /// allocation fails: an ARecv of a huge message must not abort.
    pub fn zeroed(len: usize) -> Result<Buf, crate::Error> {
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| crate::UsageError::OutOfMemory { bytes: len })?;
        v.resize(len, 0);
        Ok(Buf::from_vec(v))
    }

    /// A copy of `bytes`.
    ///
    /// # Errors
    /// As for [`Buf::zeroed`].
    pub fn copy_from(bytes: &[u8]) -> Result<Buf, crate::Error> {
        let mut v = Vec::new();
        v.try_reserve_exact(bytes.len())
            .map_err(|_| crate::UsageError::OutOfMemory { bytes: bytes.len() })?;
        v.extend_from_slice(bytes);
        Ok(Buf::from_vec(v))
    }

    /// Wraps any storage; `len()` is the storage's full length.
    pub fn from_storage(s: Box<dyn ByteStorage>) -> Buf {
        let len = s.bytes().len();
        Buf {
            repr: Repr::Storage(s),
            len,
        }
    }

    /// Wraps storage of which only the first `len` bytes are meaningful.
    /// `len` is clamped to the storage's length.
    pub fn from_storage_with_len(s: Box<dyn ByteStorage>, len: usize) -> Buf {
        let len = len.min(s.bytes().len());
        Buf {
            repr: Repr::Storage(s),
            len,
        }
    }

    /// A buffer over `len` bytes at `addr` that `lender` reads and writes:
    /// memory lent to the engine rather than given (see [`Lender`]). No
    /// allocation.
    pub fn lent(addr: usize, len: usize, lender: &'static Lender) -> Buf {
        Buf {
            repr: Repr::Lent { addr, lender },
            len,
        }
    }

    /// True for a [`Buf::lent`] buffer.
    pub fn is_lent(&self) -> bool {
        matches!(self.repr, Repr::Lent { .. })
    }

    /// A buffer over scattered bytes (see *Segmented buffers* in the
    /// module docs); `len()` is `segments.len()`. No allocation beyond the
    /// box the caller made.
    pub fn segmented(segments: Box<dyn Segments>) -> Buf {
        let len = segments.len();
        Buf {
            repr: Repr::Segments(segments),
            len,
        }
    }

    /// False for a [`Buf::segmented`] buffer: its bytes have no slice, and
    /// only [`Buf::read_at`] and [`Buf::write_at`] reach them.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        !matches!(self.repr, Repr::Segments(_))
    }

    /// Copies the meaningful bytes `offset..offset + out.len()` into `out`,
    /// whatever the representation.
    ///
    /// # Panics
    /// If the range is outside `0..len()` (a bug of the caller's, as an
    /// out-of-range slice index is).
    #[inline]
    pub fn read_at(&self, offset: usize, out: &mut [u8]) {
        let end = offset + out.len();
        assert!(end <= self.len, "read_at past the buffer's end");
        match self.repr.base() {
            Repr::Segments(s) => s.gather(offset, out),
            _ => copy_short(out, &self.as_slice()[offset..end]),
        }
    }

    /// Writes `data` as the meaningful bytes `offset..offset + data.len()`,
    /// whatever the representation.
    ///
    /// # Panics
    /// If the range is outside `0..len()`, or the storage cannot be written
    /// there (a read-only loan).
    #[inline(always)]
    pub fn write_at(&mut self, offset: usize, data: &[u8]) {
        let end = offset + data.len();
        assert!(end <= self.len, "write_at past the buffer's end");
        match self.repr.base_mut() {
            Repr::Segments(s) => s.scatter(offset, data),
            _ => copy_short(&mut self.as_mut_slice()[offset..end], data),
        }
    }

    fn view(&self, addr: usize) -> LentView<'_> {
        LentView {
            addr,
            len: self.len,
            _buf: std::marker::PhantomData,
        }
    }

    /// The number of meaningful bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if `len() == 0`.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The meaningful bytes; empty for a [`Buf::segmented`] buffer, which
    /// has no slice (use [`Buf::read_at`]).
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self.repr.base() {
            Repr::Vec(v) => &v[..self.len],
            Repr::Storage(s) => &s.bytes()[..self.len],
            Repr::Lent { addr, lender } => (lender.bytes)(self.view(*addr)),
            Repr::Segments(_) | Repr::Attached(_) => &[],
        }
    }

    /// The meaningful bytes, writable. Storage that cannot be written (a
    /// read-only loan of a send buffer) yields fewer bytes, never a panic;
    /// a segmented buffer none (use [`Buf::write_at`]).
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match self.repr.base_mut() {
            Repr::Vec(v) => &mut v[..self.len],
            Repr::Storage(s) => {
                let bytes = s.bytes_mut();
                let n = self.len.min(bytes.len());
                &mut bytes[..n]
            }
            Repr::Lent { addr, lender } => {
                let view = LentView {
                    addr: *addr,
                    len: self.len,
                    _buf: std::marker::PhantomData,
                };
                (lender.bytes_mut)(view)
            }
            Repr::Segments(_) | Repr::Attached(_) => &mut [],
        }
    }

    /// Shortens the meaningful length (never grows it).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The address of the first byte: a buffer's identity. Two `Buf`s with the
    /// same non-zero id share their memory (so the second was handed over, not
    /// copied). Devices use it as the registration address. A segmented
    /// buffer's is the address of its segments' owner (it is never
    /// registered).
    #[inline]
    pub fn id(&self) -> usize {
        match self.repr.base() {
            Repr::Vec(v) => v.as_ptr() as usize,
            Repr::Storage(s) => s.bytes().as_ptr() as usize,
            Repr::Lent { addr, .. } => *addr,
            Repr::Segments(s) => std::ptr::addr_of!(**s).cast::<u8>() as usize,
            Repr::Attached(_) => 0,
        }
    }

    /// The vector, if this `Buf` wraps one (truncated to `len()`); otherwise
    /// the `Buf` unchanged.
    ///
    /// # Errors
    /// Gives the `Buf` back if it is not vector-backed.
    pub fn into_vec(self) -> Result<Vec<u8>, Buf> {
        if !matches!(self.repr.base(), Repr::Vec(_)) {
            return Err(self);
        }
        match self.repr.detached() {
            Repr::Vec(mut v) => {
                v.truncate(self.len);
                Ok(v)
            }
            repr => Err(Buf {
                repr,
                len: self.len,
            }),
        }
    }

    /// The storage, if this `Buf` wraps one.
    ///
    /// # Errors
    /// Gives the `Buf` back if it is vector-backed.
    pub fn into_storage(self) -> Result<Box<dyn ByteStorage>, Buf> {
        if !matches!(self.repr.base(), Repr::Storage(_)) {
            return Err(self);
        }
        match self.repr.detached() {
            Repr::Storage(s) => Ok(s),
            repr => Err(Buf {
                repr,
                len: self.len,
            }),
        }
    }

    /// Ties `attachment` (a device's registration of this buffer's memory)
    /// to the buffer, replacing any earlier one; see *Attached
    /// registrations* in the module docs. No allocation when the buffer
    /// already has one.
    ///
    /// # Errors
    /// Gives the attachment back for memory the `Buf` does not own (lent
    /// or segmented).
    pub fn attach(&mut self, attachment: Box<dyn Attachment>) -> Result<(), Box<dyn Attachment>> {
        match &mut self.repr {
            Repr::Attached(a) => a.attachment = attachment,
            Repr::Vec(_) | Repr::Storage(_) => {
                let repr = std::mem::replace(&mut self.repr, Repr::Vec(Vec::new()));
                self.repr = Repr::Attached(Box::new(WithAttachment { attachment, repr }));
            }
            Repr::Lent { .. } | Repr::Segments(_) => return Err(attachment),
        }
        Ok(())
    }

    /// The attached registration, if any.
    #[inline]
    pub fn attachment(&self) -> Option<&dyn Attachment> {
        match &self.repr {
            Repr::Attached(a) => Some(&*a.attachment),
            _ => None,
        }
    }

    /// Drops the attached registration, if any.
    pub fn detach(&mut self) {
        if matches!(self.repr, Repr::Attached(_)) {
            let repr = std::mem::replace(&mut self.repr, Repr::Vec(Vec::new()));
            self.repr = repr.detached();
        }
    }

    /// Copies the bytes into a new vector (gathering a segmented buffer's).
    pub fn to_vec(&self) -> Vec<u8> {
        match self.repr.base() {
            Repr::Segments(s) => {
                let mut v = vec![0u8; self.len];
                s.gather(0, &mut v);
                v
            }
            _ => self.as_slice().to_vec(),
        }
    }
}

impl Default for Buf {
    fn default() -> Self {
        Buf::new()
    }
}

impl From<Vec<u8>> for Buf {
    fn from(v: Vec<u8>) -> Buf {
        Buf::from_vec(v)
    }
}

impl From<&[u8]> for Buf {
    fn from(b: &[u8]) -> Buf {
        Buf::from_vec(b.to_vec())
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.repr.base() {
            Repr::Vec(_) => "vec",
            Repr::Storage(_) => "storage",
            Repr::Lent { .. } => "lent",
            Repr::Segments(_) | Repr::Attached(_) => "segmented",
        };
        write!(f, "Buf({kind}, {} bytes @ {:#x})", self.len, self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_survives_moves() {
        let b = Buf::from_vec(vec![1, 2, 3]);
        let id = b.id();
        let moved = Box::new(b);
        assert_eq!(moved.id(), id);
        let v = (*moved).into_vec().unwrap();
        assert_eq!(v.as_ptr() as usize, id);
    }

    #[test]
    fn storage_len_is_clamped() {
        let s: Box<dyn ByteStorage> = Box::new(vec![7u8; 16].into_boxed_slice());
        let mut b = Buf::from_storage_with_len(s, 100);
        assert_eq!(b.len(), 16);
        b.truncate(4);
        assert_eq!(b.as_slice(), &[7, 7, 7, 7]);
        assert!(b.into_vec().is_err());
    }

    /// Every other byte of a backing vector: the packed bytes of a
    /// strided layout.
    struct EveryOther(Vec<u8>);

    impl Segments for EveryOther {
        fn len(&self) -> usize {
            self.0.len() / 2
        }
        fn gather(&self, offset: usize, out: &mut [u8]) {
            for (i, o) in out.iter_mut().enumerate() {
                *o = self.0[2 * (offset + i)];
            }
        }
        fn scatter(&mut self, offset: usize, data: &[u8]) {
            for (i, &d) in data.iter().enumerate() {
                self.0[2 * (offset + i)] = d;
            }
        }
    }

    #[test]
    fn segmented_bytes_are_reached_piecewise_only() {
        let mut b = Buf::segmented(Box::new(EveryOther((0..20).collect())));
        assert_eq!((b.len(), b.is_contiguous()), (10, false));
        assert!(b.as_slice().is_empty() && b.as_mut_slice().is_empty());
        let mut out = [0u8; 3];
        b.read_at(2, &mut out);
        assert_eq!(out, [4, 6, 8]);
        b.write_at(8, &[100, 101]);
        assert_eq!(b.to_vec(), [0, 2, 4, 6, 8, 10, 12, 14, 100, 101]);
        assert!(b.into_vec().is_err());
    }

    #[test]
    fn contiguous_buffers_read_and_write_at_offsets() {
        let mut b = Buf::from_vec(vec![0; 6]);
        assert!(b.is_contiguous());
        b.write_at(2, &[1, 2, 3]);
        let mut out = [0u8; 4];
        b.read_at(1, &mut out);
        assert_eq!(out, [0, 1, 2, 3]);
    }

    #[test]
    #[should_panic(expected = "past the buffer's end")]
    fn a_write_past_the_end_is_caught_for_every_representation() {
        let mut b = Buf::segmented(Box::new(EveryOther(vec![0; 8])));
        b.write_at(3, &[1, 2]);
    }

    /// Counts its drops.
    #[derive(Debug)]
    struct Reg(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Attachment for Reg {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    impl Drop for Reg {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn an_attachment_ends_before_the_memory_leaves_the_buf() {
        use std::sync::atomic::Ordering::Relaxed;
        let drops = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let reg = || Box::new(Reg(drops.clone()));
        // Dropped with the Buf; the bytes and the identity are unchanged.
        let mut b = Buf::from_vec(vec![1, 2, 3]);
        let id = b.id();
        b.attach(reg()).unwrap();
        assert_eq!((b.id(), b.as_slice()), (id, &[1u8, 2, 3][..]));
        assert!(b.attachment().unwrap().as_any().is::<Reg>());
        b.as_mut_slice()[0] = 9;
        drop(b);
        assert_eq!(drops.load(Relaxed), 1);
        // Ended when the memory leaves through into_vec, kept when it
        // does not (into_storage of a vector gives the Buf back).
        let mut b = Buf::from_vec(vec![4; 8]);
        b.attach(reg()).unwrap();
        let Err(b) = b.into_storage() else {
            panic!("a vector is not a storage")
        };
        assert!(b.attachment().is_some());
        let v = b.into_vec().unwrap();
        assert_eq!((v.len(), drops.load(Relaxed)), (8, 2));
        // Replaced, detached; refused for memory the Buf does not own.
        let mut b = Buf::from_storage(Box::new(vec![0u8; 4].into_boxed_slice()));
        b.attach(reg()).unwrap();
        b.attach(reg()).unwrap();
        assert_eq!(drops.load(Relaxed), 3);
        b.detach();
        assert!(b.attachment().is_none() && drops.load(Relaxed) == 4);
        let mut seg = Buf::segmented(Box::new(EveryOther(vec![0; 4])));
        assert!(seg.attach(reg()).is_err());
        // Leaked with the memory under mem::forget, never ended early.
        let mut b = Buf::from_vec(vec![0; 4]);
        b.attach(reg()).unwrap();
        std::mem::forget(b);
        assert_eq!(drops.load(Relaxed), 5, "the refused one only");
    }

    #[test]
    fn huge_allocation_is_an_error_not_an_abort() {
        let err = Buf::zeroed(usize::MAX / 2).unwrap_err();
        assert!(matches!(
            err,
            crate::Error::Usage(crate::UsageError::OutOfMemory { .. })
        ));
    }
}

/// Copies `src` into the start of `dst` (which must be at least as long),
/// without a `memcpy` call for up to 64 bytes: two overlapping fixed-size
/// moves, which compile to a load and a store each (two of each from 33
/// bytes). Small messages and
/// headers are copied once per packet on the hot path, where the call
/// costs more than the copy.
///
/// # Panics
/// If `dst` is shorter than `src` (as `copy_from_slice` does).
#[inline(always)]
pub fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    if (33..=64).contains(&n) {
        dst[..32].copy_from_slice(&src[..32]);
        dst[n - 32..].copy_from_slice(&src[n - 32..]);
    } else if (17..=32).contains(&n) {
        dst[..16].copy_from_slice(&src[..16]);
        dst[n - 16..].copy_from_slice(&src[n - 16..]);
    } else if (8..=16).contains(&n) {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if (4..8).contains(&n) {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else {
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
mod copy_short_tests {
    use super::copy_short;

    #[test]
    fn copies_every_length_exactly() {
        let src: Vec<u8> = (1..=80).collect();
        for n in 0..=80 {
            let mut dst = vec![0u8; 88];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0),
                "length {n} wrote past its end"
            );
        }
    }
}
