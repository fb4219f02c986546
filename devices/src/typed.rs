//! Typed buffers: any plain-old-data element type, carried through the
//! byte-oriented engine without `unsafe`.
//!
//! A `Vec<T>` given to a nonblocking call is moved into a [`VecStorage`],
//! a [`ByteStorage`] whose bytes are `bytemuck::cast_slice` of the vector.
//! When the buffer comes back, [`buf_into_vec`] recovers the very same
//! vector through [`ByteStorage::into_any`] (no copy; the request records
//! the element type, see [`origin_of`]); a buffer that did not
//! come from a `Vec<T>` (an ARecv cell, a vector of another type) is copied
//! into a fresh `Vec<T>` instead.

use std::any::{Any, TypeId};

use bytemuck::Pod;
use ferry_core::{Buf, ByteStorage};

use crate::error::{ApiError, Result};

/// An element type ferry can send: plain old data that may cross threads.
///
/// Implemented for every `bytemuck::Pod + Send + Sync` type (all the
/// primitive numbers, arrays of them, `#[derive(Pod)]` structs).
pub trait Element: Pod + Send + Sync {}

impl<T: Pod + Send + Sync> Element for T {}

/// A `Vec<T>` seen as bytes.
#[derive(Debug)]
pub(crate) struct VecStorage<T: Element>(pub(crate) Vec<T>);

impl<T: Element> ByteStorage for VecStorage<T> {
    fn bytes(&self) -> &[u8] {
        if std::mem::size_of::<T>() == 0 {
            return &[];
        }
        bytemuck::cast_slice(&self.0)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        if std::mem::size_of::<T>() == 0 {
            return &mut [];
        }
        bytemuck::cast_slice_mut(&mut self.0)
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

/// Wraps a typed vector as a [`Buf`] without copying.
pub(crate) fn vec_into_buf<T: Element>(v: Vec<T>) -> Buf {
    // A Vec<u8> is a Buf as it is (no storage box). The type test goes
    // through `Any` on a stack slot, so it allocates nothing.
    let mut slot = Some(v);
    if let Some(bytes) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Vec<u8>>>() {
        return Buf::from_vec(bytes.take().unwrap_or_default());
    }
    match slot {
        Some(v) => Buf::from_storage(Box::new(VecStorage(v))),
        None => Buf::new(),
    }
}

/// The element type a buffer was made from, if it was a typed vector:
/// recorded by the request so that the buffer can be turned back into that
/// vector without a copy.
pub(crate) fn origin_of<T: Element>() -> Origin {
    Some(TypeId::of::<T>)
}

/// See [`origin_of`]. A function that names the type rather than its
/// `TypeId` (16 bytes): requests and completions are moved on every call,
/// and this keeps a completion under the size the compiler copies without
/// a `memcpy` call.
pub(crate) type Origin = Option<fn() -> TypeId>;

/// Turns a buffer back into a `Vec<T>`: the original vector if it was one
/// (`origin` says whether it was a `Vec<T>`; it is returned at its full
/// length, as given), a copy of the bytes otherwise.
///
/// # Errors
/// [`ApiError::ElementSize`] if the bytes are not a whole number of `T`s,
/// [`UsageError::OutOfMemory`](ferry_core::UsageError::OutOfMemory) if the
/// copy cannot be allocated.
pub(crate) fn buf_into_vec<T: Element>(buf: Buf, origin: Origin) -> Result<Vec<T>> {
    let buf = match buf.into_vec() {
        Ok(bytes) => return bytes_into_vec(bytes),
        Err(buf) => buf,
    };
    if origin.map(|type_of| type_of()) != Some(TypeId::of::<T>()) {
        return copy_to_vec(&buf);
    }
    let len = buf.len();
    match buf.into_storage() {
        Ok(storage) => match storage.into_any().downcast::<VecStorage<T>>() {
            Ok(v) if len == std::mem::size_of_val(v.0.as_slice()) => Ok(v.0),
            Ok(v) => copy_slice_to_vec(&v.bytes()[..len.min(v.bytes().len())]),
            Err(_) => Err(crate::Error::Internal(
                "a typed buffer came back with another storage",
            )),
        },
        Err(buf) => copy_to_vec(&buf),
    }
}

fn bytes_into_vec<T: Element>(bytes: Vec<u8>) -> Result<Vec<T>> {
    // Asked for bytes: the vector as it is; otherwise a copy. The type test
    // allocates nothing (see `vec_into_buf`).
    let mut slot = Some(bytes);
    if let Some(v) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Vec<T>>>() {
        return Ok(v.take().unwrap_or_default());
    }
    copy_slice_to_vec(slot.as_deref().unwrap_or(&[]))
}

/// Copies a buffer's bytes into a new `Vec<T>`.
pub(crate) fn copy_to_vec<T: Element>(buf: &Buf) -> Result<Vec<T>> {
    copy_slice_to_vec(buf.as_slice())
}

/// Copies bytes into a new `Vec<T>`.
///
/// # Errors
/// As for [`buf_into_vec`].
pub(crate) fn copy_slice_to_vec<T: Element>(bytes: &[u8]) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Ok(Vec::new());
    }
    if bytes.len() % size != 0 {
        return Err(ApiError::ElementSize {
            bytes: bytes.len(),
            elem_size: size,
        }
        .into());
    }
    let n = bytes.len() / size;
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| ferry_core::UsageError::OutOfMemory { bytes: bytes.len() })?;
    v.resize(n, T::zeroed());
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(bytes);
    Ok(v)
}

/// The bytes of a typed slice.
pub(crate) fn as_bytes<T: Element>(s: &[T]) -> &[u8] {
    if std::mem::size_of::<T>() == 0 {
        return &[];
    }
    bytemuck::cast_slice(s)
}

/// The bytes of a typed slice, writable.
pub(crate) fn as_bytes_mut<T: Element>(s: &mut [T]) -> &mut [u8] {
    if std::mem::size_of::<T>() == 0 {
        return &mut [];
    }
    bytemuck::cast_slice_mut(s)
}

/// A typed view of bytes, checked for size and alignment.
///
/// # Errors
/// [`ApiError::ElementSize`] or [`ApiError::Alignment`].
pub(crate) fn view_mut<T: Element>(bytes: &mut [u8]) -> Result<&mut [T]> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Ok(&mut []);
    }
    let len = bytes.len();
    bytemuck::try_cast_slice_mut(bytes).map_err(|e| match e {
        bytemuck::PodCastError::TargetAlignmentGreaterAndInputNotAligned => ApiError::Alignment {
            align: std::mem::align_of::<T>(),
        }
        .into(),
        _ => ApiError::ElementSize {
            bytes: len,
            elem_size: size,
        }
        .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_vector_comes_back_without_a_copy() {
        let v: Vec<u64> = (0..100).collect();
        let ptr = v.as_ptr() as usize;
        let buf = vec_into_buf(v);
        assert_eq!(buf.len(), 800);
        assert_eq!(buf.id(), ptr);
        let back: Vec<u64> = buf_into_vec(buf, origin_of::<u64>()).unwrap();
        assert_eq!(back.as_ptr() as usize, ptr);
        assert_eq!(back[99], 99);
    }

    #[test]
    fn bytes_stay_a_plain_vec_and_other_types_copy() {
        let buf = vec_into_buf(vec![1u8, 0, 0, 0, 2, 0, 0, 0]);
        assert!(buf.into_storage().is_err(), "Vec<u8> needs no storage box");
        let buf = vec_into_buf(vec![1u8, 0, 0, 0, 2, 0, 0, 0]);
        let v: Vec<u32> = buf_into_vec(buf, None).unwrap();
        assert_eq!(v, [1, 2]);
        let odd = vec_into_buf(vec![1u8, 2, 3]);
        assert!(buf_into_vec::<u32>(odd, None).is_err());
        let float = vec_into_buf(vec![1.5f32]);
        let bytes: Vec<u8> = buf_into_vec(float, origin_of::<f32>()).unwrap();
        assert_eq!(bytes, 1.5f32.to_ne_bytes());
    }

    #[test]
    fn zero_sized_elements_do_not_panic() {
        let buf = vec_into_buf(vec![(); 5]);
        assert_eq!(buf.len(), 0);
        let v: Vec<()> = buf_into_vec(buf, origin_of::<()>()).unwrap();
        assert!(v.len() == 5 || v.is_empty());
    }
}
