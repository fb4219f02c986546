//! The liveness setup under attack, in one process: an intruder reaches
//! every listener before the real peers do, with forged ranks, stalled
//! half-handshakes, garbage and the old unauthenticated hello; the ranks
//! still connect to each other, within the time of an unattacked setup,
//! and every intrusion is refused.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ferry_core::auth::handshake::{Gate, Message};
use ferry_core::auth::JobSecret;
use ferry_core::Rank;

use super::establish::{establish, ACCEPT_DEADLINE};
use super::Listener;

const N: Rank = 3;

/// Connections the intruder opens to each listener, and what they do.
#[derive(Debug, Clone, Copy)]
enum Intrusion {
    /// A hello claiming a real rank below the target, then a made-up proof.
    ForgedProof(u32),
    /// Half a hello, then silence.
    Stalled,
    /// Bytes that are no handshake.
    Garbage,
    /// The old handshake: 4 bytes of a rank.
    OldHello(u32),
    /// A hello for another rank.
    WrongTarget,
}

fn intrude(addr: SocketAddr, target: u32, what: Intrusion) -> std::thread::JoinHandle<String> {
    let mut s = TcpStream::connect(addr).expect("the intruder connects");
    std::thread::spawn(move || {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let hello = |from, to| {
            Message::Hello {
                from,
                to,
                nonce: [0x5a; 32],
            }
            .encode()
        };
        match what {
            Intrusion::ForgedProof(claim) => {
                s.write_all(&hello(claim, target)).unwrap();
                let mut challenge = [0u8; 78];
                match s.read_exact(&mut challenge) {
                    Ok(()) => {}
                    // Refused at the hello (a rank that may not connect).
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                        ) =>
                    {
                        return "closed".into()
                    }
                    Err(e) => return format!("no challenge: {e}"),
                }
                let proof = Message::Proof {
                    from: claim,
                    to: target,
                    mac: [0xa5; 32],
                };
                let _ = s.write_all(&proof.encode());
            }
            Intrusion::Stalled => s.write_all(&hello(0, target)[..20]).unwrap(),
            Intrusion::Garbage => s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap(),
            Intrusion::OldHello(claim) => s.write_all(&claim.to_le_bytes()).unwrap(),
            Intrusion::WrongTarget => s.write_all(&hello(0, target + 7)).unwrap(),
        }
        // Every intrusion ends with the rank closing the connection.
        let mut rest = Vec::new();
        match s.read_to_end(&mut rest) {
            Ok(_) => "closed".into(),
            // Closed with bytes of ours still unread there.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => "closed".into(),
            Err(e) => format!("not closed: {e}"),
        }
    })
}

#[test]
fn intruders_first_then_the_real_peers() {
    let secret = JobSecret::from_bytes([42; 32]);
    let listeners: Vec<Listener> = (0..N)
        .map(|_| Listener::bind(Some("127.0.0.1"), b"", false).unwrap())
        .collect();
    let addrs: Vec<(Rank, String)> = (0..N)
        .map(|r| (r, listeners[r as usize].addr.clone()))
        .collect();
    // The intruder queues its connections in every listener's backlog
    // before any rank starts its setup.
    let mut intruders = Vec::new();
    for (r, (_, a)) in addrs.iter().enumerate() {
        let a: SocketAddr = a.parse().unwrap();
        let mut plan = vec![
            Intrusion::Stalled,
            Intrusion::Garbage,
            Intrusion::OldHello(0),
            Intrusion::WrongTarget,
        ];
        plan.extend((0..r as u32).map(Intrusion::ForgedProof));
        // A rank above the target may not connect to it: refused at hello.
        plan.push(Intrusion::ForgedProof(N as u32));
        for what in plan {
            intruders.push((r, what, intrude(a, r as u32, what)));
        }
    }
    let start = Instant::now();
    let ranks: Vec<_> = listeners
        .into_iter()
        .enumerate()
        .map(|(me, l)| {
            let me = me as Rank;
            let addrs = addrs.clone();
            let secret = secret.clone();
            std::thread::spawn(move || {
                let targets: Vec<(Rank, SocketAddr)> = addrs
                    .iter()
                    .filter(|(r, _)| *r > me)
                    .map(|(r, a)| (*r, a.parse().unwrap()))
                    .collect();
                let below: Vec<Rank> = (0..me).collect();
                let mut gate = Gate::new(
                    secret,
                    "attack-test",
                    me as u32,
                    below.iter().map(|&r| r as u32),
                    [me as u8; 32],
                );
                establish(
                    me,
                    l.listener,
                    &targets,
                    &below,
                    &mut gate,
                    Duration::from_secs(60),
                )
            })
        })
        .collect();
    for (me, h) in ranks.into_iter().enumerate() {
        let (socks, refused) = h
            .join()
            .unwrap()
            .unwrap_or_else(|e| panic!("rank {me}: {e}"));
        let mut peers: Vec<Rank> = socks.iter().map(|(r, _)| *r).collect();
        peers.sort_unstable();
        let want: Vec<Rank> = (0..N).filter(|&r| r != me as Rank).collect();
        assert_eq!(peers, want, "rank {me} is connected to the wrong ranks");
        // Every intrusion is refused (the stalled one at the latest when
        // setup ends).
        let intrusions = 5 + me;
        assert_eq!(refused, intrusions, "rank {me}: refusals");
    }
    // The stalled connections held nothing up.
    assert!(
        start.elapsed() < ACCEPT_DEADLINE,
        "setup took {:?}",
        start.elapsed()
    );
    for (r, what, h) in intruders {
        assert_eq!(h.join().unwrap(), "closed", "rank {r}, {what:?}");
    }
}

#[test]
fn a_flood_of_connections_does_not_keep_the_real_peer_out() {
    let secret = JobSecret::from_bytes([7; 32]);
    let l1 = Listener::bind(Some("127.0.0.1"), b"", false).unwrap();
    let a1: SocketAddr = l1.addr.parse().unwrap();
    // More stalled connections than rank 1 keeps: the oldest are dropped,
    // and rank 0, which connects last, still gets in.
    let flood: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut s = TcpStream::connect(a1).unwrap();
            s.write_all(b"FRY").unwrap();
            s
        })
        .collect();
    let t1 = {
        let secret = secret.clone();
        std::thread::spawn(move || {
            let mut gate = Gate::new(secret, "flood", 1, [0], [1; 32]);
            establish(
                1,
                l1.listener,
                &[],
                &[0],
                &mut gate,
                Duration::from_secs(60),
            )
        })
    };
    let l0 = Listener::bind(Some("127.0.0.1"), b"", false).unwrap();
    let mut gate = Gate::new(secret, "flood", 0, [], [0; 32]);
    let (s0, _) = establish(
        0,
        l0.listener,
        &[(1, a1)],
        &[],
        &mut gate,
        Duration::from_secs(60),
    )
    .unwrap();
    let (s1, refused) = t1.join().unwrap().unwrap();
    assert_eq!(s0.len(), 1);
    assert_eq!(s1.iter().map(|(r, _)| *r).collect::<Vec<_>>(), [0]);
    assert_eq!(refused, 100);
    drop(flood);
}

#[test]
fn another_jobs_rank_is_refused_and_setup_times_out_cleanly() {
    let l1 = Listener::bind(Some("127.0.0.1"), b"", false).unwrap();
    let a1: SocketAddr = l1.addr.parse().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut gate = Gate::new(JobSecret::from_bytes([1; 32]), "job", 1, [0], [1; 32]);
        establish(1, l1.listener, &[], &[0], &mut gate, Duration::from_secs(2))
    });
    let l0 = Listener::bind(Some("127.0.0.1"), b"", false).unwrap();
    let mut gate = Gate::new(JobSecret::from_bytes([2; 32]), "job", 0, [], [0; 32]);
    let e0 = establish(
        0,
        l0.listener,
        &[(1, a1)],
        &[],
        &mut gate,
        Duration::from_secs(2),
    )
    .unwrap_err();
    let e1 = t1.join().unwrap().unwrap_err();
    assert_eq!(e0.kind(), std::io::ErrorKind::TimedOut, "{e0}");
    assert_eq!(e1.kind(), std::io::ErrorKind::TimedOut, "{e1}");
    assert!(e1.to_string().contains("refused"), "{e1}");
}
