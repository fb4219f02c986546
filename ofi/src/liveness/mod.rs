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
//!
//! # Who may connect (`SECURITY.md`)
//! The listener is reachable by anyone who can reach its address, so:
//! - it binds the address the fabric endpoint uses (its IP for a socket
//!   provider, loopback for `shm`), or `FERRY_OFI_LIVENESS_ADDR`, never
//!   the wildcard address;
//! - a connection counts only once its other end has proved, by the
//!   mutual HMAC handshake of [`ferry_core::auth::handshake`], that it
//!   holds the job secret and is the rank it claims; a forged, replayed or
//!   malformed hello is logged (`warn`) and closed, and counts for nothing;
//! - connections are handled by one non-blocking loop (`establish`), each
//!   accepted one with its own deadline, so a stalled one holds up no other
//!   and is dropped when its deadline passes; at most `MAX_PENDING`
//!   unauthenticated ones are kept (the oldest is dropped beyond).

mod establish;

use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use ferry_core::auth::handshake::Gate;
use ferry_core::Rank;
use rustix::event::epoll;

pub(crate) use establish::Refusals;

/// Epoll tag of the CQ's wait fd (sockets are tagged with their rank).
pub(crate) const CQ_TAG: u64 = u64::MAX;

/// 32 bytes from `/dev/urandom`.
pub(crate) fn random_32() -> io::Result<[u8; 32]> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}

/// The IP address in a fabric endpoint name that is a `sockaddr_in` or a
/// `sockaddr_in6` (socket-based providers: `tcp`, `verbs` over IPoIB with
/// rxm), if it names one specific, usable address.
pub(crate) fn fabric_ip(name: &[u8]) -> Option<IpAddr> {
    let family = i32::from(u16::from_ne_bytes([*name.first()?, *name.get(1)?]));
    let ip = if family == libc::AF_INET && name.len() >= 16 {
        IpAddr::from([name[4], name[5], name[6], name[7]])
    } else if family == libc::AF_INET6 && name.len() >= 28 {
        let mut a = [0u8; 16];
        a.copy_from_slice(&name[8..24]);
        IpAddr::from(a)
    } else {
        return None;
    };
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        // fe80::/10 needs a scope id that a peer cannot use as is.
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    };
    (!ip.is_unspecified() && !link_local).then_some(ip)
}

/// The address to listen at, in order: `configured`
/// ([`OfiOptions::liveness_addr`](crate::OfiOptions::liveness_addr), an
/// IP or a host name), the fabric endpoint's own IP, loopback for a
/// node-local provider (`shm`), else this host's first non-loopback IPv4
/// address, else loopback.
fn listen_ip(configured: Option<&str>, fabric_name: &[u8], node_local: bool) -> io::Result<IpAddr> {
    if let Some(a) = configured {
        if let Ok(ip) = a.parse() {
            return Ok(ip);
        }
        return (a, 0)
            .to_socket_addrs()?
            .next()
            .map(|s| s.ip())
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("FERRY_OFI_LIVENESS_ADDR={a:?} resolves to no address"),
                )
            });
    }
    if let Some(ip) = fabric_ip(fabric_name) {
        return Ok(ip);
    }
    if node_local {
        return Ok(Ipv4Addr::LOCALHOST.into());
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default();
    let found = (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut it| it.find(|a| a.is_ipv4() && !a.ip().is_loopback()));
    Ok(found.map_or(Ipv4Addr::LOCALHOST.into(), |a| a.ip()))
}

/// A listening socket, before the exchange.
#[derive(Debug)]
pub(crate) struct Listener {
    listener: TcpListener,
    /// `ip:port` (`[ip]:port` for IPv6), published through the KVS.
    pub(crate) addr: String,
}

impl Listener {
    /// Listens at the address [`listen_ip`] chooses (never the wildcard).
    pub(crate) fn bind(
        configured: Option<&str>,
        fabric_name: &[u8],
        node_local: bool,
    ) -> io::Result<Listener> {
        let ip = listen_ip(configured, fabric_name, node_local)?;
        let listener = TcpListener::bind((ip, 0)).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("binding the liveness listener to {ip}: {e}"),
            )
        })?;
        let addr = listener.local_addr()?.to_string();
        tracing::debug!(%addr, "ofi liveness: listening");
        Ok(Listener { listener, addr })
    }
}

/// The connections, in an epoll set with the CQ's fd.
#[derive(Debug)]
pub(crate) struct Liveness {
    epoll: OwnedFd,
    socks: Vec<(Rank, TcpStream)>,
}

impl Liveness {
    /// Connects to every peer above `me` and accepts every peer below,
    /// each connection authenticated by `gate` (see the module docs).
    pub(crate) fn connect(
        me: Rank,
        l: Listener,
        peers: &[(Rank, String)],
        cq_fd: Option<i32>,
        gate: &mut Gate,
        timeout: Duration,
    ) -> io::Result<(Liveness, Refusals)> {
        let mut targets = Vec::new();
        for (rank, addr) in peers.iter().filter(|(r, _)| *r > me) {
            let sa: SocketAddr = addr.parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("rank {rank} published the liveness address {addr:?}, not ip:port"),
                )
            })?;
            targets.push((*rank, sa));
        }
        let below: Vec<Rank> = peers.iter().map(|(r, _)| *r).filter(|r| *r < me).collect();
        let (socks, refusals) =
            establish::establish(me, l.listener, &targets, &below, gate, timeout)?;
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
        Ok((Liveness { epoll, socks }, refusals))
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
        // The tags, copied out on the stack (the completion queue's fd is in
        // this set too, so this runs on most polls that see traffic: it
        // must not allocate).
        let mut tags = [0u64; 16];
        let n = events.len().min(tags.len());
        for (t, e) in tags.iter_mut().zip(events.iter()) {
            *t = e.data.u64();
        }
        for &tag in tags[..n].iter().filter(|&&t| t != CQ_TAG) {
            let Some(i) = self.socks.iter().position(|(r, _)| *r as u64 == tag) else {
                continue;
            };
            let mut b = [0u8; 16];
            let gone = match (&self.socks[i].1).read(&mut b) {
                Ok(0) => true,
                // An authenticated peer sends nothing after the handshake;
                // bytes are ignored (only a closed connection means death).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut v = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        v.extend_from_slice(&port.to_be_bytes());
        v.extend_from_slice(&ip);
        v.extend_from_slice(&[0; 8]);
        v
    }

    #[test]
    fn the_fabric_address_decides_where_to_listen() {
        let name = sockaddr_in([127, 0, 0, 1], 4000);
        assert_eq!(fabric_ip(&name), Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(fabric_ip(&sockaddr_in([0, 0, 0, 0], 4000)), None);
        assert_eq!(fabric_ip(&sockaddr_in([169, 254, 1, 1], 1)), None);
        assert_eq!(fabric_ip(b"fi_shm-ferry-job-0"), None);
        assert_eq!(fabric_ip(&name[..15]), None);
        let mut v6 = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        v6.extend_from_slice(&[0; 6]);
        v6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0; 4]);
        assert_eq!(fabric_ip(&v6), Some(std::net::Ipv6Addr::LOCALHOST.into()));
        // The configured address first; then the fabric's; then loopback
        // for a node-local provider; never the wildcard.
        assert_eq!(
            listen_ip(Some("10.1.2.3"), &name, false).unwrap(),
            IpAddr::from([10, 1, 2, 3])
        );
        assert_eq!(
            listen_ip(None, &name, false).unwrap(),
            IpAddr::from([127, 0, 0, 1])
        );
        assert_eq!(
            listen_ip(None, b"fi_shm-x", true).unwrap(),
            IpAddr::from(Ipv4Addr::LOCALHOST)
        );
        assert!(!listen_ip(None, b"opaque", false).unwrap().is_unspecified());
        let l = Listener::bind(None, b"fi_shm-x", true).unwrap();
        assert!(l.addr.starts_with("127.0.0.1:"), "{}", l.addr);
    }
}

#[cfg(test)]
mod attack_tests;
