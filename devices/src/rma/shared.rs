//! Shared windows (`MPI_Win_allocate_shared`): the members of a node map
//! one region (`ferry_shm::window`), each exposes its part of it as its
//! window memory (so the protocol's requests work as for any window), and
//! each can load and store every other part at its own address
//! ([`Window::shared_query`]).
//!
//! The first member creates the region's file in the segment directory
//! (`FERRY_SHM_DIR`), named after this node's segment and 64 random bits,
//! and tells the others its name; once every member has mapped it, the
//! first removes the name. Parts are laid out in rank order, each starting
//! on a 64-byte line (MPI's default, contiguous allocation, with padding).

use std::sync::Arc;

use ferry_core::{Buf, UsageError};
use ferry_shm::window::{Piece, Region};

use super::Window;
use crate::comm::Comm;
use crate::error::Result;

/// A shared window's region and where each member's part lies in it.
#[derive(Debug)]
pub(super) struct Layout {
    region: Arc<Region>,
    /// Each member's part: offset in the region, length.
    parts: Vec<(usize, usize)>,
}

impl Layout {
    /// Member `rank`'s part: its address in this process and its length.
    pub(super) fn part(&self, rank: usize) -> Option<(usize, usize)> {
        self.parts
            .get(rank)
            .map(|&(off, len)| (self.region.addr() + off, len))
    }
}

/// The region's file: after this node's segment, so that a launcher's
/// sweep of the job's files takes it if a member dies while setting up.
fn region_path(comm: &Comm, nonce: u64) -> std::path::PathBuf {
    let dir = ferry_shm::ShmOptions::dir_from_source(&|var: &str| std::env::var(var).ok());
    let segment = comm
        .inner
        .shared
        .lock()
        .ok()
        .and_then(|mut g| {
            g.engine()
                .ok()
                .and_then(|e| e.device().shm_segment().map(str::to_owned))
        })
        .unwrap_or_else(|| format!("ferry-{}", std::process::id()));
    dir.join(format!("{segment}-win{nonce:016x}"))
}

impl Comm {
    /// `MPI_Win_allocate_shared`: `size` zeroed bytes on this member, in a
    /// region every member of the node maps (see the module docs).
    /// Collective; every member must be on this node.
    ///
    /// # Errors
    /// Members on other nodes ([`UsageError::Unsupported`]); a region that
    /// cannot be made or mapped; as for [`Comm::win_allocate`].
    pub fn win_allocate_shared(&self, size: usize) -> Result<Window<u8>> {
        let node = &self.shared().node_ranks;
        if self.group().job_ranks().iter().any(|r| !node.contains(r)) {
            return Err(
                UsageError::Unsupported("a shared window over processes on other nodes").into(),
            );
        }
        let n = self.size() as usize;
        let mut sizes = vec![0u64; n];
        self.allgather(&[size as u64], &mut sizes)?;
        let mut parts = Vec::with_capacity(n);
        let mut at = 0usize;
        for &s in &sizes {
            let len =
                usize::try_from(s).map_err(|_| UsageError::OutOfMemory { bytes: usize::MAX })?;
            parts.push((at, len));
            at = at
                .checked_add(len)
                .and_then(|e| e.checked_next_multiple_of(64))
                .ok_or(UsageError::OutOfMemory { bytes: usize::MAX })?;
        }
        let region = Arc::new(self.shared_region(at)?);
        let (off, len) = parts[self.rank() as usize];
        let piece = Piece::new(Arc::clone(&region), off, len).map_err(io_error)?;
        let memory = Buf::from_storage(Box::new(piece));
        let mut w = Window::serve(self, Some(memory))?;
        w.shared = Some(Layout { region, parts });
        Ok(w)
    }

    /// Makes (first member) or opens (the others) the node's region of
    /// `len` bytes; collective.
    fn shared_region(&self, len: usize) -> Result<Region> {
        // The name, or an empty one if the first member failed (then all
        // fail alike).
        let mut name = [0u8; 512];
        let mut made = None;
        if self.rank() == 0 {
            let nonce = {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u128(
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos()),
                );
                h.write_u32(std::process::id());
                h.finish()
            };
            let path = region_path(self, nonce);
            match Region::create(&path, len) {
                Ok(r) => {
                    let p = path.as_os_str().as_encoded_bytes();
                    if p.len() < name.len() {
                        name[..p.len()].copy_from_slice(p);
                    }
                    made = Some(r);
                }
                Err(e) => {
                    tracing::warn!(error = %e, path = %path.display(), "a shared window's region")
                }
            }
        }
        self.bcast(&mut name, 0)?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        if end == 0 {
            return Err(
                UsageError::Unsupported("the shared window's region could not be made").into(),
            );
        }
        let region = match made {
            Some(r) => Ok(r),
            None => {
                let path =
                    std::path::PathBuf::from(String::from_utf8_lossy(&name[..end]).into_owned());
                Region::open(&path)
            }
        };
        // Everyone opened it (or failed to) before the name goes.
        let opened = u8::from(region.is_ok());
        let mut all = [0u8];
        self.allreduce(&[opened], &mut all, &crate::Op::min())?;
        if let Ok(r) = &region {
            if self.rank() == 0 {
                if let Err(e) = r.unlink() {
                    tracing::warn!(error = %e, "removing a shared window's region name");
                }
            }
        }
        let region = region.map_err(io_error)?;
        if all[0] == 0 {
            return Err(UsageError::Unsupported(
                "a member could not map the shared window's region",
            )
            .into());
        }
        Ok(region)
    }
}

fn io_error(e: std::io::Error) -> crate::Error {
    tracing::warn!(error = %e, "a shared window's region");
    UsageError::Unsupported("a shared window's region could not be mapped").into()
}
