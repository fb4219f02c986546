//! A PMI-1 server: one connected Unix socket per rank, a key-value space
//! and a barrier across the job. `ferryrun` drives it from its event loop
//! (through [`PmiServer::fds`] and [`PmiServer::handle_readable`]); tests
//! and embedders can call [`PmiServer::run`] on a thread instead.
//!
//! The protocol logic lives in [`PmiJob`], which does no I/O.

mod job;

pub use job::{Output, PmiJob, ServerEvent, KEYLEN_MAX, KVSNAME_MAX, VALLEN_MAX};

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::wire::{excerpt, MAX_LINE};

/// How long a reply may block on a rank that does not read its socket.
/// Replies are tiny, so only a rank that floods requests without reading
/// answers can fill the socket buffer; it is then cut off.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of the server's own I/O (a rank's misbehaviour is a
/// [`ServerEvent`], not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The number of streams differs from the job size.
    #[error("the job has {size} ranks but {streams} connections were given")]
    SizeMismatch {
        /// Ranks in the job.
        size: u32,
        /// Streams given.
        streams: usize,
    },
    /// Waiting for the ranks failed.
    #[error("PMI server I/O: {0}")]
    Io(#[from] io::Error),
    /// [`PmiServer::run`]'s deadline passed with connections still open.
    #[error("PMI server deadline passed with {open} connection(s) still open")]
    Timeout {
        /// Connections still open.
        open: usize,
    },
}

#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
}

/// The socket side of a PMI-1 job: rank `r` talks over `streams[r]`.
#[derive(Debug)]
pub struct PmiServer {
    job: PmiJob,
    conns: Vec<Option<Conn>>,
}

impl PmiServer {
    /// Serves `job` over `streams`, one per rank in rank order.
    ///
    /// # Errors
    /// [`ServerError::SizeMismatch`] if `streams.len()` is not the job
    /// size, [`ServerError::Io`] if a socket option cannot be set.
    pub fn new(job: PmiJob, streams: Vec<UnixStream>) -> Result<Self, ServerError> {
        if streams.len() != job.size() as usize {
            return Err(ServerError::SizeMismatch {
                size: job.size(),
                streams: streams.len(),
            });
        }
        let mut conns = Vec::with_capacity(streams.len());
        for stream in streams {
            stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
            conns.push(Some(Conn {
                stream,
                buf: Vec::new(),
            }));
        }
        Ok(PmiServer { job, conns })
    }

    /// The protocol state (key-value space, ranks).
    pub fn job(&self) -> &PmiJob {
        &self.job
    }

    /// Number of connections still open.
    pub fn open_connections(&self) -> usize {
        self.conns.iter().filter(|c| c.is_some()).count()
    }

    /// The open connections to poll for readability, with their ranks.
    pub fn fds(&self) -> Vec<(u32, BorrowedFd<'_>)> {
        self.conns
            .iter()
            .enumerate()
            .filter_map(|(r, c)| c.as_ref().map(|c| (r as u32, c.stream.as_fd())))
            .collect()
    }

    /// Reads what `rank` sent (call when its socket is readable or has hung
    /// up; a single read, so it never blocks after a readiness report),
    /// answers every complete request and returns the resulting events.
    pub fn handle_readable(&mut self, rank: u32) -> Vec<ServerEvent> {
        let Some(Some(conn)) = self.conns.get_mut(rank as usize) else {
            return Vec::new();
        };
        let mut chunk = [0u8; 4096];
        let outputs = match conn.stream.read(&mut chunk) {
            Ok(0) => self.job.connection_closed(rank),
            Ok(n) => {
                conn.buf.extend_from_slice(&chunk[..n]);
                let mut outputs = Vec::new();
                let mut closed = false;
                while let Some(end) = conn.buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = conn.buf.drain(..=end).collect();
                    outputs.extend(self.job.handle_line(rank, &line));
                    closed = outputs
                        .iter()
                        .any(|o| matches!(o, Output::Close { rank: r } if *r == rank));
                    if closed {
                        break;
                    }
                }
                if !closed && conn.buf.len() > MAX_LINE {
                    let reason = format!(
                        "request line longer than {MAX_LINE} bytes: {}",
                        excerpt(&conn.buf)
                    );
                    outputs.extend(self.job.reject(rank, reason));
                }
                outputs
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) =>
            {
                Vec::new()
            }
            Err(_) => self.job.connection_closed(rank),
        };
        self.apply(outputs)
    }

    /// Performs the job's outputs: writes replies, closes connections, and
    /// collects events (including disconnections found while writing).
    fn apply(&mut self, outputs: Vec<Output>) -> Vec<ServerEvent> {
        let mut events = Vec::new();
        let mut pending = outputs;
        while !pending.is_empty() {
            let mut next = Vec::new();
            for output in pending {
                match output {
                    Output::Reply { rank, line } => {
                        let Some(Some(conn)) = self.conns.get_mut(rank as usize) else {
                            continue;
                        };
                        if conn.stream.write_all(line.as_bytes()).is_err() {
                            // A rank that cannot be written to has died or
                            // stopped reading: it has left the job.
                            self.conns[rank as usize] = None;
                            next.extend(self.job.connection_closed(rank));
                        }
                    }
                    Output::Close { rank } => {
                        if let Some(slot) = self.conns.get_mut(rank as usize) {
                            *slot = None;
                        }
                    }
                    Output::Event(e) => {
                        if let ServerEvent::Disconnected { rank, .. } = e {
                            if let Some(slot) = self.conns.get_mut(rank as usize) {
                                *slot = None;
                            }
                        }
                        events.push(e);
                    }
                }
            }
            pending = next;
        }
        events
    }

    /// Serves until every connection has closed (each rank finalized and
    /// disconnected, died, or was cut off), returning all events in order.
    ///
    /// # Errors
    /// [`ServerError::Timeout`] if `deadline` passes first (the events so
    /// far are lost: use the `fds`/`handle_readable` pair to keep them),
    /// [`ServerError::Io`] if polling fails.
    pub fn run(&mut self, deadline: Option<Instant>) -> Result<Vec<ServerEvent>, ServerError> {
        let mut events = Vec::new();
        while self.open_connections() > 0 {
            let timeout = match deadline {
                None => PollTimeout::NONE,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(ServerError::Timeout {
                            open: self.open_connections(),
                        });
                    }
                    PollTimeout::try_from(left.as_millis().min(60_000) as i32 + 1)
                        .unwrap_or(PollTimeout::MAX)
                }
            };
            let ready: Vec<u32> = {
                let fds = self.fds();
                let mut pollfds: Vec<PollFd<'_>> = fds
                    .iter()
                    .map(|(_, fd)| PollFd::new(*fd, PollFlags::POLLIN))
                    .collect();
                match poll(&mut pollfds, timeout) {
                    Ok(_) => {}
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(ServerError::Io(e.into())),
                }
                fds.iter()
                    .zip(&pollfds)
                    .filter(|(_, p)| p.revents().is_some_and(|r| !r.is_empty()))
                    .map(|((rank, _), _)| *rank)
                    .collect()
            };
            for rank in ready {
                events.extend(self.handle_readable(rank));
            }
        }
        Ok(events)
    }
}
