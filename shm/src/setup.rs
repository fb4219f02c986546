//! [`ShmDevice::new`]: the collective setup.
//!
//! 1. Every rank creates its wake directory (mode 0700, name
//!    `ferry-<job id>-w<64 random bits>`) and binds its wake socket `s` in
//!    it, then publishes `ferry-shm-<rank>` = `<pid>-<probe addr>-<probe
//!    bytes>-<wake bits>` (its pid, a 32-byte random buffer for the CMA
//!    probe, its directory's random part). The lowest local rank creates the
//!    segment (`O_EXCL`, mode 0600, name `ferry-<job id>-<64 random bits>`),
//!    sizes it, initialises the queues, writes the header with its magic
//!    last, and publishes `<name>;<node key>` as
//!    `ferry-shm-seg-<creator rank>` (the key names the node collectives'
//!    regions: `node`).
//! 2. **Barrier 1.** The others open and map the segment and check its
//!    header and that it is theirs (owner, mode). Everyone claims its rank
//!    block and cells, connects one socket to each peer's wake socket (after
//!    checking that the peer's directory is ours and private), opens a pidfd
//!    per peer and, if CMA is requested, reads every peer's probe buffer
//!    with `process_vm_readv`, recording the outcome in its rank block.
//! 3. **Barrier 2.** The creator unlinks the file and everyone removes its
//!    wake directory: from now on a crash leaks nothing, and no process can
//!    reach a wake socket but through the connections made in step 2.
//!    Everyone checks that every peer attached, and enables CMA only if
//!    every rank's probe succeeded (so all agree on the caps).
//!
//! Why wake sockets live in private directories (`SECURITY.md`): a socket
//! another user can reach could flood a sleeping rank with wake-ups (its
//! passive wait would become a busy loop), and a name another user can
//! bind first could make setup fail. Only our uid can enter the
//! directories, their names are drawn at random (a taken name is skipped),
//! and after setup no name is left at all.
//!
//! Every rank of the job calls `new` (exactly two `Bootstrap::barrier`s),
//! also on nodes with a single rank. A rank whose setup fails after barrier 1
//! still joins barrier 2 before returning its error, so the others fail
//! (a peer did not attach) instead of hanging.

use std::fmt::Write as _;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::Arc;

use ferry_core::auth::JobSecret;
use ferry_core::device::Caps;
use ferry_core::shared_files;
use ferry_core::{Bootstrap, Rank};

use crate::device::{Peer, ShmDevice, Wake, NOT_LOCAL, WAKE_TAG};
use crate::error::ShmError;
use crate::fastbox::{Lane, CTRL_LEN};
use crate::ffi::{header_of, Segment};
use crate::layout::{Geometry, FINGERPRINT, MAGIC, VERSION};
use crate::options::ShmOptions;
use crate::os::{self, CmaError, Epoll};
use crate::rdma::Rdma;

const PROBE: usize = 32;
/// Published instead of a segment name by a creator that failed.
const CREATE_FAILED: &str = "failed";

/// Removes a rank's wake directory (and the socket in it) when dropped:
/// after barrier 2, or on any path out of setup.
#[derive(Debug)]
struct RemoveDir(Option<PathBuf>);

impl RemoveDir {
    fn now(&mut self) {
        if let Some(path) = self.0.take() {
            if let Err(e) = std::fs::remove_dir_all(&path) {
                tracing::warn!(path = %path.display(), error = %e, "could not remove the wake directory");
            }
        }
    }
}

impl Drop for RemoveDir {
    fn drop(&mut self) {
        self.now();
    }
}

/// The wake socket's name inside its directory.
const WAKE_SOCKET: &str = "s";

/// Step 1's wake socket: a private directory with the bound socket in it.
fn bind_wake(dir: &std::path::Path, job: &str) -> Result<(RemoveDir, OwnedFd, String), ShmError> {
    let (path, hex) = os::create_wake_dir(dir, |hex| shared_files::wake_dir_name(job, hex))
        .map_err(ShmError::os("creating the wake directory"))?;
    let guard = RemoveDir(Some(path.clone()));
    let sock = os::wake_socket(&path.join(WAKE_SOCKET))
        .map_err(ShmError::os("binding the wake socket"))?;
    Ok((guard, sock, hex))
}

/// Removes the segment file when dropped (on every path out of setup).
#[derive(Debug)]
struct Unlink(Option<PathBuf>);

impl Unlink {
    fn now(&mut self) {
        if let Some(path) = self.0.take() {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "could not unlink the shm segment");
            }
        }
    }
}

impl Drop for Unlink {
    fn drop(&mut self) {
        self.now();
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What a peer published at step 1.
struct PeerCard {
    pid: u32,
    probe_addr: u64,
    probe: Vec<u8>,
    /// The random part of its wake directory's name.
    wake: String,
}

fn parse_card(rank: Rank, v: &str) -> Result<PeerCard, ShmError> {
    if v == CREATE_FAILED {
        return Err(ShmError::Peer(format!(
            "rank {rank} could not set up its shm device (see its log)"
        )));
    }
    let bad = || ShmError::Peer(format!("rank {rank} published a malformed shm card {v:?}"));
    let mut it = v.split('-');
    let pid = it.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let probe_addr = it
        .next()
        .and_then(|a| u64::from_str_radix(a, 16).ok())
        .ok_or_else(bad)?;
    let probe = it
        .next()
        .and_then(unhex)
        .filter(|p| p.len() == PROBE)
        .ok_or_else(bad)?;
    let wake = it
        .next()
        .filter(|w| shared_files::is_wake_hex(w))
        .ok_or_else(bad)?
        .to_owned();
    if it.next().is_some() {
        return Err(bad());
    }
    Ok(PeerCard {
        pid,
        probe_addr,
        probe,
        wake,
    })
}

/// Checks the caller's rank list: sorted, distinct, in the job, with us.
fn check_ranks(boot: &dyn Bootstrap, local_ranks: &[Rank]) -> Result<u32, ShmError> {
    let size = boot.size();
    if local_ranks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(ShmError::Options(
            "local_ranks must be sorted and distinct".into(),
        ));
    }
    if local_ranks.iter().any(|&r| r < 0 || r as u32 >= size) {
        return Err(ShmError::Options(format!(
            "local_ranks contains a rank outside the job of size {size}"
        )));
    }
    local_ranks
        .iter()
        .position(|&r| r == boot.rank())
        .map(|p| p as u32)
        .ok_or_else(|| ShmError::Options("local_ranks does not contain this rank".into()))
}

/// The creator's part of step 1. A name that exists already (nobody can
/// predict ours, but a squatter may try) is skipped for another.
fn create(
    dir: &std::path::Path,
    job: &str,
    geo: Geometry,
) -> Result<(Arc<Segment>, Unlink, String), ShmError> {
    let mut tries = 0;
    let (file, name, path) = loop {
        let name = shared_files::segment_name(
            job,
            os::random_u64().map_err(ShmError::os("reading /dev/urandom"))?,
        );
        let path = dir.join(&name);
        match os::create_segment_file(&path) {
            Ok(file) => break (file, name, path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => {
                tracing::warn!(path = %path.display(), "a segment name is taken (squatted?); drawing another");
                tries += 1;
            }
            Err(e) => return Err(ShmError::os("creating the shm segment")(e)),
        }
    };
    let unlink = Unlink(Some(path));
    file.set_len(geo.total as u64)
        .map_err(ShmError::os("sizing the shm segment"))?;
    let map = os::map(&file).map_err(ShmError::os("mapping the shm segment"))?;
    let seg = Segment::new(map, geo).map_err(|e| ShmError::Segment(e.into()))?;
    seg.init_queues()
        .map_err(|_| ShmError::Segment("initialising the queues".into()))?;
    let h = seg.header();
    // Relaxed: published by the Release store of the magic below.
    use std::sync::atomic::Ordering::Relaxed;
    h.version.store(VERSION, Relaxed);
    h.nranks.store(geo.nranks, Relaxed);
    h.cell_payload.store(geo.payload as u32, Relaxed);
    h.cells_per_rank.store(geo.cells_per_rank, Relaxed);
    h.fingerprint.store(FINGERPRINT, Relaxed);
    h.total_len.store(geo.total as u64, Relaxed);
    h.fb_slots.store(geo.fb_slots, Relaxed);
    h.fb_slot_size.store(geo.fb_size as u32, Relaxed);
    // Release: publishes the header and the initialised queues; pairs with
    // the Acquire load of the magic in `attach`.
    h.magic.store(MAGIC, Release);
    Ok((Arc::new(seg), unlink, name))
}

/// A non-creator's part of step 2: map and check the creator's segment.
fn attach(dir: &std::path::Path, name: &str, nranks: usize) -> Result<Arc<Segment>, ShmError> {
    if !shared_files::is_segment_name(name) {
        return Err(ShmError::Segment(format!("bad segment name {name:?}")));
    }
    let path = dir.join(name);
    let file = os::open_segment_file(&path).map_err(ShmError::os("opening the shm segment"))?;
    os::check_own_file(&file, &path).map_err(ShmError::os("checking the shm segment"))?;
    let len = file
        .metadata()
        .map_err(ShmError::os("reading the shm segment's size"))?
        .len();
    let map = os::map(&file).map_err(ShmError::os("mapping the shm segment"))?;
    let bad = |what: &str| Err(ShmError::Segment(format!("{name}: {what}")));
    let Some(h) = header_of(&map) else {
        return bad("too short for a header");
    };
    use std::sync::atomic::Ordering::Relaxed;
    // Acquire: pairs with the creator's Release store of the magic.
    if h.magic.load(Acquire) != MAGIC {
        return bad("bad magic");
    }
    if h.version.load(Relaxed) != VERSION || h.fingerprint.load(Relaxed) != FINGERPRINT {
        return bad("built by an incompatible ferry-shm (version or layout differs)");
    }
    let n = h.nranks.load(Relaxed) as usize;
    if n != nranks {
        return bad("created for a different number of local ranks");
    }
    let geo = match Geometry::new(
        n,
        h.cell_payload.load(Relaxed) as usize,
        h.cells_per_rank.load(Relaxed) as usize,
        h.fb_slots.load(Relaxed) as usize,
        h.fb_slot_size.load(Relaxed) as usize,
    ) {
        Some(g) if g.total as u64 == h.total_len.load(Relaxed) && g.total as u64 <= len => g,
        _ => return bad("geometry does not match the file"),
    };
    let seg = Segment::new(map, geo).map_err(|e| ShmError::Segment(e.into()))?;
    Ok(Arc::new(seg))
}

/// Everything step 2 produces for the device.
struct Attached {
    seg: Arc<Segment>,
    consumer: crate::ffi::Consumer,
    pool: Vec<crate::ffi::OwnedCell>,
    cards: Vec<PeerCard>,
    sock: OwnedFd,
    /// One socket connected to each peer's wake socket (`None`: us).
    to: Vec<Option<OwnedFd>>,
    key: JobSecret,
}

/// Connects to every peer's wake socket, after checking that its
/// directory is ours and private (so the socket is the peer's).
fn connect_wakes(
    dir: &std::path::Path,
    job: &str,
    me: u32,
    cards: &[PeerCard],
) -> Result<Vec<Option<OwnedFd>>, ShmError> {
    os::ensure_descriptors(2 * cards.len() as u64 + 256);
    let mut to = Vec::with_capacity(cards.len());
    for (l, card) in cards.iter().enumerate() {
        if l as u32 == me {
            to.push(None);
            continue;
        }
        let home = dir.join(shared_files::wake_dir_name(job, &card.wake));
        os::check_private_dir(&home).map_err(ShmError::os("checking a peer's wake directory"))?;
        let fd = os::wake_sender(&home.join(WAKE_SOCKET)).map_err(|e| {
            let what = if e.raw_os_error() == Some(libc_emfile()) {
                "connecting to a peer's wake socket: out of descriptors (each rank needs about two \
                 per local rank: raise `ulimit -n`)"
            } else {
                "connecting to a peer's wake socket"
            };
            ShmError::os(what)(e)
        })?;
        to.push(Some(fd));
    }
    Ok(to)
}

/// `EMFILE`, the per-process descriptor limit's errno.
fn libc_emfile() -> i32 {
    rustix::io::Errno::MFILE.raw_os_error()
}

/// Splits the creator's `<segment name>;<node key>`.
fn parse_segment(creator: Rank, v: &str) -> Result<(String, JobSecret), ShmError> {
    v.split_once(';')
        .and_then(|(name, key)| Some((name.to_owned(), JobSecret::from_hex(key)?)))
        .ok_or_else(|| {
            ShmError::Peer(format!(
                "rank {creator} published a malformed segment entry (not `<name>;<64 hex digits>`)"
            ))
        })
}

/// Step 2 for every rank.
#[allow(clippy::too_many_arguments)]
fn join(
    boot: &mut dyn Bootstrap,
    local_ranks: &[Rank],
    me: u32,
    opts: &ShmOptions,
    created: Option<(Arc<Segment>, String, JobSecret)>,
    name_key: &str,
    creator: Rank,
    sock: OwnedFd,
) -> Result<(Attached, String), ShmError> {
    let (seg, name, key) = match created {
        Some(c) => c,
        None => {
            let value = boot.get(name_key)?;
            if value == CREATE_FAILED {
                return Err(ShmError::Peer(format!(
                    "rank {creator} could not set up the shm segment (see its log)"
                )));
            }
            let (name, key) = parse_segment(creator, &value)?;
            (attach(&opts.dir, &name, local_ranks.len())?, name, key)
        }
    };
    let (consumer, pool) = seg.claim(me).map_err(|e| ShmError::Segment(e.into()))?;
    let mut cards = Vec::with_capacity(local_ranks.len());
    for &r in local_ranks {
        cards.push(parse_card(r, &boot.get(&format!("ferry-shm-{r}"))?)?);
    }
    let to = connect_wakes(&opts.dir, &os::sanitize_job_id(boot.job_id()), me, &cards)?;
    let cma_ok = opts.cma && probe_cma(me, local_ranks, &cards);
    let block = seg
        .rank(me)
        .ok_or_else(|| ShmError::Segment("rank block missing".into()))?;
    use std::sync::atomic::Ordering::Relaxed;
    // Relaxed: published by the Release store below.
    block.info.pid.store(std::process::id(), Relaxed);
    block.info.job_rank.store(boot.rank() as u32, Relaxed);
    // Release: publishes pid and rank; peers read it (Acquire) after
    // barrier 2.
    block.info.cma_ok.store(if cma_ok { 1 } else { 2 }, Release);
    Ok((
        Attached {
            seg,
            consumer,
            pool,
            cards,
            sock,
            to,
            key,
        },
        name,
    ))
}

/// `opts` with CMA kept or dropped by the machine's rule when the user did
/// not choose ([`ShmOptions::cma_auto`]). Every rank of a node reads the
/// same machine, so they agree; the exchange below still turns CMA off
/// everywhere if any rank declined.
fn decide_cma(mut opts: ShmOptions) -> ShmOptions {
    if opts.cma && opts.cma_auto {
        let rule = crate::cma_choice::machine_default();
        opts.cma = rule.cma;
        tracing::debug!(cma = opts.cma, why = rule.why, "CMA chosen by the machine");
    }
    opts
}

/// Reads every peer's probe buffer; false (with the reason logged) if any
/// read fails or returns the wrong bytes.
fn probe_cma(me: u32, local_ranks: &[Rank], cards: &[PeerCard]) -> bool {
    for (l, card) in cards.iter().enumerate() {
        if l as u32 == me {
            continue;
        }
        let mut got = [0u8; PROBE];
        match Rdma::probe(card.pid, &mut got, card.probe_addr) {
            Ok(()) if got[..] == card.probe[..] => {}
            Ok(()) => {
                tracing::warn!(
                    peer = local_ranks[l],
                    "CMA probe read the wrong bytes; CMA disabled"
                );
                return false;
            }
            Err(CmaError::Denied) => {
                tracing::warn!(
                    peer = local_ranks[l],
                    "process_vm_readv refused (EPERM: Yama ptrace_scope, seccomp or another \
                     user); rendezvous falls back to copies through the cells"
                );
                return false;
            }
            Err(e) => {
                tracing::warn!(peer = local_ranks[l], error = ?e, "CMA probe failed; CMA disabled");
                return false;
            }
        }
    }
    true
}

impl ShmDevice {
    /// Sets up the device: collective over the **whole job** (every rank calls
    /// it, with the ranks of its own node; it performs exactly two
    /// [`Bootstrap::barrier`]s). `local_ranks` are the job ranks on this node,
    /// sorted, including `boot.rank()`.
    ///
    /// # Errors
    /// - [`ShmError::Options`]: bad options or rank list;
    /// - [`ShmError::Os`]: creating, mapping or binding failed;
    /// - [`ShmError::Segment`]: the segment is not usable by this build;
    /// - [`ShmError::Peer`]: a local peer published garbage or did not attach;
    /// - [`ShmError::Bootstrap`]: the KVS or a barrier failed.
    pub fn new(
        boot: &mut dyn Bootstrap,
        local_ranks: &[Rank],
        opts: ShmOptions,
    ) -> Result<ShmDevice, ShmError> {
        opts.validate()?;
        let me = check_ranks(boot, local_ranks)?;
        let opts = decide_cma(opts);
        let rank = boot.rank();
        let job = os::sanitize_job_id(boot.job_id());
        let geo = opts
            .geometry(local_ranks.len())
            .ok_or_else(|| ShmError::Options("segment geometry overflows".into()))?;
        let seed = os::random_u64().map_err(ShmError::os("reading /dev/urandom"))?;
        if opts.cma {
            os::allow_cma_from_any();
        }
        // Stays at this address until `new` returns (after barrier 2), for
        // the peers' CMA probes.
        let mut probe = Box::new([0u8; PROBE]);
        os::random_bytes(&mut probe[..]).map_err(ShmError::os("reading /dev/urandom"))?;
        // A rank whose wake socket or segment fails still publishes (a
        // marker) and joins both barriers, so that its peers fail too
        // instead of waiting forever.
        let (mut wake_dir, wake) = match bind_wake(&opts.dir, &job) {
            Ok((dir, sock, hex)) => (dir, Ok((sock, hex))),
            Err(e) => (RemoveDir(None), Err(e)),
        };
        let card = match &wake {
            Ok((_, wake_hex)) => format!(
                "{}-{:x}-{}-{wake_hex}",
                std::process::id(),
                probe.as_ptr() as usize,
                hex(&probe[..])
            ),
            Err(_) => CREATE_FAILED.to_owned(),
        };
        boot.put(&format!("ferry-shm-{rank}"), &card)?;
        let creator = local_ranks[0];
        let name_key = format!("ferry-shm-seg-{creator}");
        let (created, mut unlink) = if rank == creator && wake.is_ok() {
            let created = create(&opts.dir, &job, geo).and_then(|(seg, unlink, name)| {
                let key = os::random_bytes32().map_err(ShmError::os("reading /dev/urandom"))?;
                Ok((seg, unlink, name, JobSecret::from_bytes(key)))
            });
            match created {
                Ok((seg, unlink, name, key)) => {
                    boot.put(&name_key, &format!("{name};{}", key.to_hex()))?;
                    (Ok(Some((seg, name, key))), unlink)
                }
                Err(e) => {
                    boot.put(&name_key, CREATE_FAILED)?;
                    (Err(e), Unlink(None))
                }
            }
        } else if rank == creator {
            boot.put(&name_key, CREATE_FAILED)?;
            (Ok(None), Unlink(None))
        } else {
            (Ok(None), Unlink(None))
        };
        boot.barrier()?;
        let joined = wake.and_then(|(sock, _)| {
            created.and_then(|c| join(boot, local_ranks, me, &opts, c, &name_key, creator, sock))
        });
        if let Err(e) = &joined {
            tracing::error!(rank, error = %e, "shm setup failed; joining the last barrier");
        }
        let barrier = boot.barrier();
        unlink.now();
        // Every peer is connected to our wake socket (or failed): its name
        // goes, and with it any way in but those connections.
        wake_dir.now();
        let (a, name) = joined?;
        barrier?;
        drop(probe);
        finish(a, name, rank, me, local_ranks, boot.size(), &opts, seed)
    }
}

/// Step 3: check the peers, agree on CMA, build the wake-up set.
#[allow(clippy::too_many_arguments)]
fn finish(
    a: Attached,
    name: String,
    rank: Rank,
    me: u32,
    local_ranks: &[Rank],
    size: u32,
    opts: &ShmOptions,
    seed: u64,
) -> Result<ShmDevice, ShmError> {
    let mut cma = true;
    for (l, &r) in local_ranks.iter().enumerate() {
        let block = a
            .seg
            .rank(l as u32)
            .ok_or_else(|| ShmError::Segment("rank block missing".into()))?;
        // Acquire: pairs with each rank's Release store of `cma_ok` (and the
        // claim's swap of `attached`) before barrier 2.
        let attached = block.info.attached.load(Acquire);
        let ok = block.info.cma_ok.load(Acquire);
        if attached == 0 || ok == 0 {
            return Err(ShmError::Peer(format!(
                "rank {r} did not attach to the shm segment"
            )));
        }
        cma &= ok == 1;
    }
    let epoll = Epoll::new().map_err(ShmError::os("creating the epoll set"))?;
    epoll
        .add(&a.sock, WAKE_TAG)
        .map_err(ShmError::os("watching the wake socket"))?;
    let mut peers = Vec::with_capacity(local_ranks.len());
    for (l, card) in a.cards.iter().enumerate() {
        let pidfd = if l as u32 == me {
            None
        } else {
            match os::pidfd(card.pid) {
                Ok(fd) => {
                    epoll
                        .add(&fd, l as u64)
                        .map_err(ShmError::os("watching a peer's pidfd"))?;
                    Some(fd)
                }
                Err(e) => {
                    tracing::debug!(error = %e, "pidfd_open failed; polling kill(pid, 0)");
                    None
                }
            }
        };
        peers.push(Peer {
            pid: card.pid,
            pidfd,
        });
    }
    let mut local_of = vec![NOT_LOCAL; size as usize];
    for (l, &r) in local_ranks.iter().enumerate() {
        local_of[r as usize] = l as u32;
    }
    let geo = *a.seg.geometry();
    let lanes = (0..local_ranks.len() as u32)
        .map(|p| Lane {
            tx_ring: a.seg.fb_ring(me, p),
            rx_ring: a.seg.fb_ring(p, me),
            ..Lane::default()
        })
        .collect();
    if !cma && opts.cma {
        tracing::info!(
            rank,
            "shm: CMA unavailable on this node; using copies through cells"
        );
    }
    tracing::debug!(rank, segment = %name, bytes = geo.total, cma, "shm device ready");
    Ok(ShmDevice {
        caps: Caps {
            name: "shm",
            max_payload: geo.payload,
            // A whole cell: two copies beat a rendezvous handshake up to here.
            eager_preferred: geo.payload,
            rdma_get: cma,
            rdma_put: cma,
            wait_fd: true,
        },
        consumer: a.consumer,
        me,
        rank,
        local_of,
        ranks: local_ranks.to_vec(),
        pool: a.pool,
        peers,
        lanes,
        active: crate::active::Active::new(local_ranks.len()),
        fb_slots: geo.fb_slots,
        fb_free_at: crate::fastbox::FREE_AT.min(geo.fb_slots / 2).max(1),
        fb_cap: if geo.fb_slots == 0 {
            0
        } else {
            geo.fb_size - CTRL_LEN
        },
        wake: Wake {
            epoll,
            sock: a.sock,
            to: a.to,
            ready: Vec::with_capacity(local_ranks.len() + 1),
            armed: false,
            drained: 0,
        },
        rdma: Rdma::new(me, seed),
        batch: opts.progress_batch,
        liveness_interval: opts.liveness_interval,
        until_liveness: opts.liveness_interval,
        node: crate::node::Nodes::new(opts.dir.clone(), a.key),
        calls: 0,
        check_now: false,
        last_liveness: std::time::Instant::now(),
        max_parked: geo.cells_per_rank / 2,
        broken: None,
        failures: ferry_core::device::PeerFailures::new(local_ranks.len()),
        seg: a.seg,
        name,
    })
}
