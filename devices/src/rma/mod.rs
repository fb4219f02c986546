//! One-sided communication (MPI's RMA): a [`Window<T>`] exposes `len`
//! elements of `T` on every member of a communicator, which the others
//! put to, get from and accumulate into without the owner taking part.
//!
//! ```
//! use ferry::rma::{Combine, LockKind};
//! let world = ferry::init()?; // a singleton here; under `ferryrun -n N`, rank i of N
//! let comm = world.world();
//! let right = (comm.rank() + 1) % comm.size() as i32;
//! let win = comm.win_allocate::<f64>(16)?;
//! win.fence_epoch(|w| w.put(right, 0, &[comm.rank() as f64]))??;
//! let left = (comm.rank() + comm.size() as i32 - 1) % comm.size() as i32;
//! assert_eq!(win.local(|v| v[0])?, left as f64);
//! {
//!     let epoch = win.lock(0, LockKind::Exclusive)?;
//!     epoch.accumulate(0, 1, &[1.0], Combine::Op(&ferry::Op::sum()))?;
//!     let mut r = epoch.get(0, 1, 1)?;
//!     assert!(r.wait()?.into_vec::<f64>()?[0] >= 1.0);
//! } // unlocked here
//! win.free()?;
//! world.finalize()?;
//! # Ok::<(), ferry::Error>(())
//! ```
//!
//! # How it works
//! A window whose members all share this node, made by
//! [`Comm::win_allocate`] or [`Comm::win_allocate_shared`], is a *node
//! window*: its memory is one shared region, an origin puts and gets by
//! copies, accumulates and atomics under short locks in the region, and
//! locks are atomic words there, so every operation is complete when its
//! call returns and the target's CPU is never needed.
//!
//! On any other window (across nodes, over the program's memory, or
//! dynamic), every operation travels as a message to its target on the window's own
//! context (a duplicate of the communicator's), and the target's engine
//! applies it when it progresses, for whatever reason: see
//! [`ferry_core::rma`] for the protocol. So one-sided communication works
//! on every device, and a target serves passive-target epochs while it
//! waits on anything in ferry, or, with the progress thread
//! (`FERRY_ASYNC_PROGRESS`), while it computes.
//!
//! # Epochs
//! An operation needs an access epoch to its target: between two fences
//! ([`Window::fence`], or [`Window::fence_epoch`] around a closure), or
//! under a lock of that target ([`Window::lock`], whose guard unlocks on
//! drop, so a forgotten unlock cannot happen in safe code) or of every
//! member ([`Window::lock_all`]). Anything else is
//! [`UsageError::RmaSync`](ferry_core::UsageError::RmaSync); a range past
//! the target's window is
//! [`UsageError::RmaRange`](ferry_core::UsageError::RmaRange), checked
//! before anything is sent.
//!
//! # Soundness
//! The window's memory belongs to the engine: the program reads and writes
//! its own part through [`Window::local`], under the engine's lock, so no
//! request is applied meanwhile, and on a node window under this member's
//! exclusive lock, which every other origin's operation excludes (a lock
//! epoch's by its lock, a fence or start epoch's by the target's shared
//! lock for the operation's length): no safe call can race with a remote
//! write. Gets and fetching operations return [`Request`](crate::Request)s that own their
//! result, like an owned receive.

mod batch;
#[cfg(feature = "shm")]
mod direct;
mod ops;
mod scattered;
#[cfg(feature = "shm")]
mod shared;
mod sync;

use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

use ferry_core::{Buf, Rank, Tag, TAG_UB};

use crate::comm::Comm;
use crate::error::Result;
use crate::typed::{Element, VecStorage};

pub use ops::Combine;
pub use sync::{Epoch, LockEpoch, LockKind};

/// A window of `T`s on every member of a communicator (see the module
/// docs). `Send + Sync`: its calls may come from any thread.
#[derive(Debug)]
pub struct Window<T: Element> {
    /// The window's communicator: a duplicate, whose context carries the
    /// requests.
    comm: Comm,
    /// The bytes each member exposes.
    sizes: Box<[u64]>,
    origin: Mutex<Origin>,
    /// A node window's region (`direct.rs`): set when every member is
    /// on this node and the window's memory is ferry's to place.
    #[cfg(feature = "shm")]
    direct: Option<direct::Direct>,
    _elements: PhantomData<fn() -> T>,
}

/// This rank's side as an origin.
#[derive(Debug)]
struct Origin {
    /// Data requests sent to each target since the last fence.
    sent: Vec<u64>,
    /// Data requests that target this rank, by every fence so far.
    expected: u64,
    access: Access,
    /// The tag of the next reply (cycles through `1..=TAG_UB`).
    next_reply: Tag,
    /// The origins of the open exposure epoch (`MPI_Win_post`).
    exposed: Option<Vec<Rank>>,
    /// Post notices used by `start`, by target.
    posts_used: Vec<u64>,
    /// Complete notices used by `wait`, by origin.
    completes_used: Vec<u64>,
    /// Puts and accumulates waiting to go, by target (`batch.rs`).
    batches: Vec<batch::Batch>,
    /// The table of the last lock epoch, kept for the next.
    spare_locks: Vec<Option<LockKind>>,
    /// Direct flushes and unlocks, for the liveness checks they make now
    /// and then (`direct.rs`).
    #[cfg_attr(not(feature = "shm"), allow(dead_code))]
    checks: u32,
    freed: bool,
}

/// Which access epochs are open.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Access {
    /// None: only fences and locks are allowed.
    Closed,
    /// Between fences: every target.
    Fence,
    /// Locks of single targets (`None`: not locked).
    Locks(Vec<Option<LockKind>>),
    /// A shared lock of every member.
    All,
    /// `MPI_Win_start`'s group of targets.
    Group(Vec<Rank>),
}

impl Origin {
    fn reply_tag(&mut self) -> Tag {
        let t = self.next_reply;
        self.next_reply = if t >= TAG_UB { 1 } else { t + 1 };
        t
    }
}

impl Comm {
    /// `MPI_Win_allocate`: a window of `len` zeroed elements of `T` on every
    /// member (lengths may differ). Collective. When every member is on
    /// this node, a node window: the memory is shared, and every
    /// operation is done by the origin in its call (see the module docs).
    ///
    /// # Errors
    /// As for [`Comm::dup`] and [`Comm::allgather`]; an allocation that
    /// fails.
    pub fn win_allocate<T: Element>(&self, len: usize) -> Result<Window<T>> {
        #[cfg(feature = "shm")]
        if let Some(w) = self.node_window(len.saturating_mul(elem_size::<T>()))? {
            return Ok(w);
        }
        self.win_allocate_private(len)
    }

    /// [`Comm::win_allocate`] in each member's private memory, even on
    /// one node: every operation travels as a message to its target, as
    /// across nodes, and is applied when the target progresses. For
    /// comparisons and tests of that path. Collective.
    ///
    /// # Errors
    /// As for [`Comm::win_allocate`].
    pub fn win_allocate_private<T: Element>(&self, len: usize) -> Result<Window<T>> {
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| ferry_core::UsageError::OutOfMemory {
                bytes: len.saturating_mul(std::mem::size_of::<T>()),
            })?;
        v.resize(len, T::zeroed());
        let memory = Buf::from_storage(Box::new(VecStorage(v)));
        Window::serve(self, Some(memory))
    }
}

impl Comm {
    /// A window of `size` zeroed bytes on this member, aligned for any
    /// element type (16 bytes): `MPI_Win_allocate` for callers with their
    /// own element types (the C layer). Collective.
    ///
    /// # Errors
    /// As for [`Comm::win_allocate`].
    pub fn win_allocate_bytes(&self, size: usize) -> Result<Window<u8>> {
        #[cfg(feature = "shm")]
        if let Some(w) = self.node_window(size)? {
            return Ok(w);
        }
        let words = size.div_ceil(16);
        let mut v: Vec<u128> = Vec::new();
        v.try_reserve_exact(words)
            .map_err(|_| ferry_core::UsageError::OutOfMemory { bytes: size })?;
        v.resize(words, 0);
        let memory = Buf::from_storage_with_len(Box::new(VecStorage(v)), size);
        Window::serve(self, Some(memory))
    }

    /// `MPI_Win_create`: a window over `memory`, a contiguous buffer
    /// (memory the caller lent: [`crate::lent_mut`]). Collective.
    ///
    /// # Errors
    /// As for [`Comm::win_allocate`]; a segmented buffer.
    pub fn win_create(&self, memory: Buf) -> Result<Window<u8>> {
        Window::serve(self, Some(memory))
    }

    /// `MPI_Win_create_dynamic`: a window without memory, which each
    /// member attaches pieces of ([`Window::attach`]); displacements are
    /// addresses in them. An operation on memory not attached is refused
    /// by its target (a fetching one fails with
    /// [`UsageError::RmaRefused`](ferry_core::UsageError::RmaRefused)).
    /// Collective.
    ///
    /// # Errors
    /// As for [`Comm::win_allocate`].
    pub fn win_create_dynamic(&self) -> Result<Window<u8>> {
        Window::serve(self, None)
    }
}

impl<T: Element> Window<T> {
    /// The address of this member's window memory (for the C layer's
    /// `MPI_Win_allocate` base pointer and `MPI_WIN_BASE`); 0 for an
    /// empty part (C's `NULL`).
    ///
    /// # Errors
    /// A freed window, a finalized world.
    pub fn base_addr(&self) -> Result<usize> {
        let _o = self.origin()?;
        let mut g = self.comm.inner.shared.lock()?;
        let memory = g.engine()?.win_memory(self.comm.context())?;
        Ok(if memory.is_empty() {
            0
        } else {
            memory.as_ptr() as usize
        })
    }

    /// `MPI_Win_attach`: `memory` (lent by the caller), whose first byte
    /// is at `addr`, joins this member's part of a dynamic window.
    ///
    /// # Errors
    /// A window that is not dynamic; memory attached already.
    pub fn attach(&self, addr: u64, memory: Buf) -> Result<()> {
        let _o = self.origin()?;
        let mut g = self.comm.inner.shared.lock()?;
        g.engine()?.win_attach(self.comm.context(), addr, memory)?;
        Ok(())
    }

    /// `MPI_Win_detach`: the piece attached at `addr` leaves the window
    /// (and is dropped: the caller's loan ends).
    ///
    /// # Errors
    /// A window that is not dynamic; nothing attached at `addr`.
    pub fn detach(&self, addr: u64) -> Result<()> {
        let _o = self.origin()?;
        let mut g = self.comm.inner.shared.lock()?;
        drop(g.engine()?.win_detach(self.comm.context(), addr)?);
        Ok(())
    }

    /// `MPI_Win_shared_query`: where member `rank`'s part of the window
    /// is in this process (address, length in bytes): every member's for
    /// a shared window ([`Comm::win_allocate_shared`]); this member's own
    /// for any other window but a dynamic one; `None` otherwise.
    ///
    /// # Errors
    /// A freed window; a bad rank.
    pub fn shared_query(&self, rank: Rank) -> Result<Option<(usize, usize)>> {
        self.size_of(rank)?;
        #[cfg(feature = "shm")]
        if let Some(d) = &self.direct {
            return Ok(d.part(rank as usize));
        }
        let len = self.sizes[rank as usize];
        if rank != self.comm.rank() || len == u64::MAX {
            return Ok(None);
        }
        Ok(Some((self.base_addr()?, len as usize)))
    }

    /// Serves `memory` (`None`: a dynamic window) on a duplicate of
    /// `parent`, then learns every member's size (after which every member
    /// serves: a request can only come after that).
    fn serve(parent: &Comm, memory: Option<Buf>) -> Result<Window<T>> {
        let comm = parent.dup()?;
        // A dynamic window's bounds are its target's to check.
        let bytes = memory.as_ref().map_or(u64::MAX, |m| m.len() as u64);
        {
            let origins = comm.group().job_ranks();
            let mut g = comm.inner.shared.lock()?;
            let e = g.engine()?;
            match memory {
                Some(m) => e.win_serve(comm.context(), m, &origins)?,
                None => e.win_serve_dynamic(comm.context(), &origins)?,
            }
        }
        let mut sizes = vec![0u64; comm.size() as usize];
        if let Err(e) = comm.allgather(&[bytes], &mut sizes) {
            let _ = comm
                .inner
                .shared
                .lock()
                .map(|mut g| g.engine().map(|e| e.win_retire(comm.context())));
            return Err(e);
        }
        let n = comm.size() as usize;
        Ok(Window {
            comm,
            sizes: sizes.into_boxed_slice(),
            origin: Mutex::new(Origin {
                sent: vec![0; n],
                expected: 0,
                access: Access::Closed,
                next_reply: 1,
                exposed: None,
                posts_used: vec![0; n],
                completes_used: vec![0; n],
                checks: 0,
                batches: (0..n).map(|_| batch::Batch::default()).collect(),
                spare_locks: Vec::new(),
                freed: false,
            }),
            #[cfg(feature = "shm")]
            direct: None,
            _elements: PhantomData,
        })
    }

    /// The window's communicator (a duplicate of the one it was made on).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The number of elements member `rank` exposes.
    ///
    /// # Errors
    /// A rank outside the window.
    pub fn len_of(&self, rank: Rank) -> Result<usize> {
        let size = self.size_of(rank)?;
        Ok((size / elem_size::<T>().max(1) as u64) as usize)
    }

    fn size_of(&self, rank: Rank) -> Result<u64> {
        self.sizes.get(rank as usize).copied().ok_or_else(|| {
            ferry_core::UsageError::InvalidRank {
                rank,
                size: self.comm.size(),
            }
            .into()
        })
    }

    /// Runs `f` on this rank's part of the window (its own loads and
    /// stores), under the engine's lock: no remote request is applied
    /// while it runs. On a node window (every member on this node, made
    /// by [`Comm::win_allocate`]), whose origins store into the memory
    /// themselves, it also holds this member's exclusive lock: it waits
    /// for the other members' locks of it to end, and their operations
    /// wait for it. `f` must not wait for another member.
    ///
    /// # Errors
    /// A freed window, a finalized world; a lock holder's death.
    pub fn local<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        #[cfg(feature = "shm")]
        if let Some(d) = self.direct() {
            return self.direct_local(d, || self.local_unlocked(f))?;
        }
        self.local_unlocked(f)
    }

    fn local_unlocked<R>(&self, f: impl FnOnce(&mut [T]) -> R) -> Result<R> {
        let _o = self.origin()?;
        let mut g = self.comm.inner.shared.lock()?;
        let bytes = g.engine()?.win_memory(self.comm.context())?;
        // The memory is a `Vec<T>` (`win_allocate`): aligned and whole.
        let elems: &mut [T] = if elem_size::<T>() == 0 {
            &mut []
        } else {
            bytemuck::try_cast_slice_mut(bytes).map_err(|_| crate::ApiError::Alignment {
                align: std::mem::align_of::<T>(),
            })?
        };
        Ok(f(elems))
    }

    /// `MPI_Win_free`: waits until every member is done with the window
    /// (a barrier), then stops serving it. Collective. Dropping a window
    /// without it stops serving at once, which a member still using it
    /// sees as a request that is never answered: free windows.
    ///
    /// # Errors
    /// An epoch still open (a lock held); as for [`Comm::barrier`].
    pub fn free(self) -> Result<()> {
        {
            let mut o = self.origin()?;
            self.flush_batches(&mut o)?;
            if matches!(o.access, Access::All)
                || matches!(&o.access, Access::Locks(l) if l.iter().any(Option::is_some))
            {
                return Err(ferry_core::UsageError::RmaSync(
                    "freeing a window with a lock held (unlock first)",
                )
                .into());
            }
        }
        self.comm.barrier()?;
        self.retire()
    }

    fn retire(&self) -> Result<()> {
        let mut o = self.origin.lock().unwrap_or_else(|p| p.into_inner());
        if o.freed {
            return Ok(());
        }
        o.freed = true;
        let mut g = self.comm.inner.shared.lock()?;
        g.engine()?.win_retire(self.comm.context())?;
        Ok(())
    }

    /// The origin state, or an error for a freed window.
    fn origin(&self) -> Result<MutexGuard<'_, Origin>> {
        let o = self.origin.lock().unwrap_or_else(|p| p.into_inner());
        if o.freed {
            return Err(ferry_core::UsageError::StaleHandle.into());
        }
        Ok(o)
    }
}

impl<T: Element> Drop for Window<T> {
    fn drop(&mut self) {
        if let Err(e) = self.retire() {
            tracing::debug!(error = %e, "a window dropped after its world");
        }
    }
}

fn elem_size<T>() -> usize {
    std::mem::size_of::<T>()
}
