//! Node windows (`direct.rs`): `MPI_Win_allocate_shared`, and
//! `MPI_Win_allocate` when every member is on this node. The members of
//! the node map one region (`ferry_shm::window`); each exposes its part
//! of it as its window memory (so the protocol's requests would work as
//! for any window), and each loads and stores every other part at its own
//! address ([`Window::shared_query`]).
//!
//! The first member creates the region's file in the segment directory
//! (`FERRY_SHM_DIR`), named after this node's segment and 64 random bits,
//! and tells the others its name; once every member has mapped it, the
//! first removes the name. Parts are laid out in rank order, each starting
//! on a 64-byte line (MPI's default, contiguous allocation, with padding),
//! and the locks' words after them.
//!
//! `FERRY_RMA_NODE=0` ([`Config::rma_node`](crate::Config::rma_node)) on
//! any member makes `MPI_Win_allocate` give a window of private memory
//! that every operation reaches by messages (as across nodes), for
//! comparison.

use std::sync::Arc;

use ferry_core::{Buf, UsageError};
use ferry_shm::window::{Piece, Region};

use super::direct::{Direct, Plan};
use super::Window;
use crate::comm::Comm;
use crate::error::Result;
use crate::typed::Element;

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
        if !self.all_on_node() {
            return Err(
                UsageError::Unsupported("a shared window over processes on other nodes").into(),
            );
        }
        self.node_region(size, true)?.ok_or_else(|| {
            UsageError::Unsupported("the shared window's region could not be made").into()
        })
    }

    /// A node window of `size` bytes on this member if every member is on
    /// this node and none turned node windows off (`None`: the caller
    /// makes a window of private memory). Collective.
    pub(super) fn node_window<T: Element>(&self, size: usize) -> Result<Option<Window<T>>> {
        if !self.all_on_node() {
            return Ok(None);
        }
        self.node_region(size, false)
    }

    fn all_on_node(&self) -> bool {
        let node = &self.shared().node_ranks;
        self.group().job_ranks().iter().all(|r| node.contains(r))
    }

    /// The region and the window over it; `None` if a member turned node
    /// windows off (unless `required`) or the region could not be made.
    fn node_region<T: Element>(&self, size: usize, required: bool) -> Result<Option<Window<T>>> {
        let off = !required && !self.shared().config.rma_node;
        let n = self.size() as usize;
        let mut all = vec![0u64; 2 * n];
        self.allgather(&[size as u64, u64::from(off)], &mut all)?;
        if all.chunks_exact(2).any(|m| m[1] != 0) {
            return Ok(None);
        }
        let sizes: Vec<u64> = all.chunks_exact(2).map(|m| m[0]).collect();
        let plan = Plan::of(&sizes).ok_or(UsageError::OutOfMemory { bytes: usize::MAX })?;
        let region = match self.shared_region(plan.len) {
            Ok(r) => Arc::new(r),
            Err(e) if !required => {
                tracing::info!(error = %e, "a node window's region: private memory instead");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        let (off, len) = plan.parts[self.rank() as usize];
        let piece = Piece::new(Arc::clone(&region), off, len).map_err(io_error)?;
        let memory = Buf::from_storage(Box::new(piece));
        let mut w = Window::serve(self, Some(memory))?;
        w.direct = Some(Direct::new(region, plan));
        Ok(Some(w))
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
