//! Memory that the processes of a node map together, for one-sided
//! windows made by `MPI_Win_allocate_shared`: one file in the segment
//! directory, created by one process, opened by the others, and unlinked
//! once all have it mapped (so nothing stays behind but while they set it
//! up). Each process's part of the window is a [`Piece`] of the mapping,
//! which the engine reads and writes as a `Buf`'s storage, and every
//! process of the node can load and store any part at its own address
//! ([`Region::addr`]).
//!
//! # Safety contract
//! The mapping stays mapped while a [`Region`] (or a [`Piece`], which
//! holds one) lives. Other processes write the same bytes: that is the
//! point of the window. The engine makes slices of a piece only under its
//! lock and only to apply a request or for the program's own access, and
//! MPI makes conflicting accesses from several processes erroneous (they
//! must be separated by the window's synchronization), so a slice never
//! sees a concurrent conflicting write in a correct program. This module
//! is the only place that turns the mapping's address into slices.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU8};
use std::sync::Arc;

use ferry_core::ByteStorage;
use memmap2::MmapRaw;

use crate::os;

/// A shared mapping of a file (see the module docs).
#[derive(Debug)]
pub struct Region {
    map: MmapRaw,
    path: PathBuf,
    _file: File,
}

impl Region {
    /// Creates the file at `path` (it must not exist; mode 0600) with
    /// `len` bytes (at least one), zeroed, and maps it.
    ///
    /// # Errors
    /// The file exists already, or cannot be made, sized or mapped.
    pub fn create(path: &Path, len: usize) -> io::Result<Region> {
        let file = os::create_segment_file(path)?;
        let sized = file.set_len(len.max(1) as u64);
        if let Err(e) = sized {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Region::mapped(file, path)
    }

    /// Opens and maps the file another process created at `path`.
    ///
    /// # Errors
    /// The file is missing or cannot be mapped.
    pub fn open(path: &Path) -> io::Result<Region> {
        Region::mapped(os::open_segment_file(path)?, path)
    }

    fn mapped(file: File, path: &Path) -> io::Result<Region> {
        let map = os::map(&file)?;
        Ok(Region {
            map,
            path: path.to_owned(),
            _file: file,
        })
    }

    /// Removes the file's name (the mapping stays): once every process
    /// has opened it.
    ///
    /// # Errors
    /// The file cannot be removed.
    pub fn unlink(&self) -> io::Result<()> {
        std::fs::remove_file(&self.path)
    }

    /// The mapping's first byte's address in this process.
    pub fn addr(&self) -> usize {
        self.map.as_ptr() as usize
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True for an empty mapping (never: a region has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The address of `offset..offset + len`, if it lies inside.
    fn span(&self, offset: usize, len: usize) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        // SAFETY: `offset <= end <= len()`: inside the mapping (or one past
        // its end for an empty span).
        #[allow(unsafe_code)]
        (end <= self.map.len()).then(|| unsafe { self.map.as_mut_ptr().add(offset) })
    }

    /// Copies `data` into the mapping at `offset` (a put); false if it
    /// does not fit.
    pub fn write(&self, offset: usize, data: &[u8]) -> bool {
        let Some(at) = self.span(offset, data.len()) else {
            return false;
        };
        // SAFETY: `at` has `data.len()` writable bytes (`span`); `data` is
        // this process's memory, never the mapping's own bytes as a slice
        // of it (no `&[u8]` of the mapping outlives a call of this type),
        // so the two do not overlap. Other processes' accesses: the
        // module's contract.
        #[allow(unsafe_code)]
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), at, data.len())
        };
        true
    }

    /// Copies `out.len()` bytes of the mapping from `offset` into `out` (a
    /// get); false if they do not lie inside.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> bool {
        let Some(at) = self.span(offset, out.len()) else {
            return false;
        };
        // SAFETY: as in `write`, reading.
        #[allow(unsafe_code)]
        unsafe {
            std::ptr::copy_nonoverlapping(at, out.as_mut_ptr(), out.len())
        };
        true
    }

    /// The atomic byte at `offset` (a lock's slot).
    pub fn atomic_u8(&self, offset: usize) -> Option<&AtomicU8> {
        let at = self.span(offset, 1)?;
        // SAFETY: inside the mapping, which outlives `&self`; every access
        // to a slot, in every process, is atomic.
        #[allow(unsafe_code)]
        Some(unsafe { AtomicU8::from_ptr(at) })
    }

    /// The atomic word at `offset` (aligned; a lock's word).
    pub fn atomic_u32(&self, offset: usize) -> Option<&AtomicU32> {
        let at = self.span(offset, 4)?;
        // SAFETY: as in `atomic_u8`; aligned (checked).
        #[allow(unsafe_code)]
        (at as usize % 4 == 0).then(|| unsafe { AtomicU32::from_ptr(at.cast()) })
    }

    /// Runs `f` on `len` bytes from `offset` (`None` if they do not lie
    /// inside). For an accumulate: the caller holds the lock that excludes every other process's
    /// access to these bytes.
    pub fn with_bytes<R>(
        &self,
        offset: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Option<R> {
        let at = self.span(offset, len)?;
        if len == 0 {
            return Some(f(&mut []));
        }
        // SAFETY: inside the mapping (`span`), which outlives the call; the
        // caller's lock excludes the other processes' accesses (see the
        // module's contract), and the slice does not leave `f`.
        #[allow(unsafe_code)]
        let bytes = unsafe { std::slice::from_raw_parts_mut(at, len) };
        Some(f(bytes))
    }
}

/// `len` bytes of a [`Region`] from byte `offset`: one process's part of a
/// shared window, as storage for a `Buf`.
#[derive(Debug)]
pub struct Piece {
    region: Arc<Region>,
    offset: usize,
    len: usize,
}

impl Piece {
    /// The part `offset..offset + len` of `region`.
    ///
    /// # Errors
    /// A part that does not lie inside the region.
    pub fn new(region: Arc<Region>, offset: usize, len: usize) -> io::Result<Piece> {
        let inside = offset
            .checked_add(len)
            .is_some_and(|end| end <= region.len());
        if !inside {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a piece outside its region",
            ));
        }
        Ok(Piece {
            region,
            offset,
            len,
        })
    }
}

impl ByteStorage for Piece {
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: inside the mapping (checked in `new`), which lives as
        // long as `self.region`; see the module's safety contract for the
        // other processes' writes.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.region.map.as_ptr().add(self.offset), self.len)
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as in `bytes`; the mapping is writable (MAP_SHARED,
        // read-write), and `&mut self` makes this the one slice of this
        // piece in this process.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(self.region.map.as_mut_ptr().add(self.offset), self.len)
        }
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}
