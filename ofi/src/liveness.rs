//! Peer liveness: one TCP connection per pair of ranks, outside libfabric.
//!
//! An RDM endpoint reports a dead peer only through a failed operation
//! towards it, and the shm provider never does (a dead receiver's queue
//! just stops draining). A rank blocked in a receive from a peer that died
//! has no such operation, so it would wait forever. Instead, each pair of
//! ranks holds a TCP connection that carries nothing: the kernel closes it
//! when a process dies, however it dies, and the survivor's socket turns
//! readable (EOF or reset). The sockets sit in the same epoll set as the
//! CQ's wait fd, so a sleeping rank wakes up for a death too.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use ferry_core::Rank;
use rustix::event::epoll;

/// Epoll tag of the CQ's wait fd (sockets are tagged with their rank).
pub(crate) const CQ_TAG: u64 = u64::MAX;

/// The address peers connect to: `configured`
/// ([`OfiOptions::liveness_addr`](crate::OfiOptions::liveness_addr)), else
/// this host's first non-loopback IPv4 address, else loopback.
fn advertised_ip(configured: Option<&str>) -> String {
    if let Some(a) = configured {
        return a.to_owned();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let found = (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.find(|a| a.is_ipv4() && !a.ip().is_loopback()));
    found.map_or_else(|| "127.0.0.1".to_owned(), |a| a.ip().to_string())
}

/// A listening socket, before the exchange.
#[derive(Debug)]
pub(crate) struct Listener {
    listener: TcpListener,
    /// `ip:port`, published through the KVS.
    pub(crate) addr: String,
}

impl Listener {
    pub(crate) fn bind(advertise: Option<&str>) -> io::Result<Listener> {
        let listener = TcpListener::bind(("0.0.0.0", 0))?;
        let port = listener.local_addr()?.port();
        Ok(Listener {
            listener,
            addr: format!("{}:{port}", advertised_ip(advertise)),
        })
    }
}

/// The connections, in an epoll set with the CQ's fd.
#[derive(Debug)]
pub(crate) struct Liveness {
    epoll: OwnedFd,
    socks: Vec<(Rank, TcpStream)>,
}

impl Liveness {
    /// Connects to every peer above `me` and accepts every peer below (each
    /// connection starts with the connecting rank, 4 bytes LE).
    pub(crate) fn connect(
        me: Rank,
        l: Listener,
        peers: &[(Rank, String)],
        cq_fd: Option<i32>,
        timeout: Duration,
    ) -> io::Result<Liveness> {
        let deadline = Instant::now() + timeout;
        let mut socks = Vec::new();
        for (rank, addr) in peers.iter().filter(|(r, _)| *r > me) {
            let mut s = TcpStream::connect(addr.as_str())?;
            s.write_all(&me.to_le_bytes())?;
            socks.push((*rank, s));
        }
        let below = peers.iter().filter(|(r, _)| *r < me).count();
        l.listener.set_nonblocking(true)?;
        let mut accepted = 0;
        while accepted < below {
            match l.listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false)?;
                    s.set_read_timeout(Some(timeout))?;
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b)?;
                    let r = Rank::from_le_bytes(b);
                    if peers.iter().any(|(p, _)| *p == r && r < me) {
                        socks.push((r, s));
                        accepted += 1;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "peers did not connect their liveness sockets",
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        if let Some(fd) = cq_fd {
            crate::ffi::epoll_add_wait_fd(&epoll, fd, CQ_TAG)?;
        }
        for (r, s) in &socks {
            s.set_nonblocking(true)?;
            epoll::add(
                &epoll,
                s.as_fd(),
                epoll::EventData::new_u64(*r as u64),
                epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
            )?;
        }
        Ok(Liveness { epoll, socks })
    }

    pub(crate) fn fd(&self) -> i32 {
        self.epoll.as_raw_fd()
    }

    /// Appends the peers whose connection closed (never blocks).
    pub(crate) fn poll(&mut self, dead: &mut Vec<Rank>) {
        let zero = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // A stack buffer: `epoll::Event` holds a raw pointer (not Send).
        let mut buf = [std::mem::MaybeUninit::<epoll::Event>::uninit(); 16];
        let Ok((events, _)) = epoll::wait(&self.epoll, &mut buf, Some(&zero)) else {
            return;
        };
        let tags: Vec<u64> = events.iter().map(|e| e.data.u64()).collect();
        for tag in tags.into_iter().filter(|&t| t != CQ_TAG) {
            let Some(i) = self.socks.iter().position(|(r, _)| *r as u64 == tag) else {
                continue;
            };
            let mut b = [0u8; 16];
            let gone = match (&self.socks[i].1).read(&mut b) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => e.kind() != io::ErrorKind::WouldBlock,
            };
            if gone {
                let (r, s) = self.socks.swap_remove(i);
                let _ = epoll::delete(&self.epoll, s.as_fd());
                dead.push(r);
            }
        }
    }
}
