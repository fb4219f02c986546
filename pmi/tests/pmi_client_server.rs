//! The PMI-1 client against the PMI-1 server over real socketpairs, one
//! thread per rank; and the client against a scripted peer that sends
//! malformed replies.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

use ferry_core::{Bootstrap, BootstrapError};
use ferry_pmi::server::{PmiJob, PmiServer, ServerEvent};
use ferry_pmi::PmiClient;

/// Starts a server for `size` ranks on a thread; returns the client ends
/// and the server thread (which yields every event once all ranks left).
fn serve(size: u32) -> (Vec<UnixStream>, thread::JoinHandle<Vec<ServerEvent>>) {
    let (mut servers, mut clients) = (Vec::new(), Vec::new());
    for _ in 0..size {
        let (s, c) = UnixStream::pair().unwrap();
        servers.push(s);
        clients.push(c);
    }
    let mut server = PmiServer::new(PmiJob::new("testjob", size), servers).unwrap();
    let handle = thread::spawn(move || {
        server
            .run(Some(Instant::now() + Duration::from_secs(30)))
            .expect("server")
    });
    (clients, handle)
}

#[test]
fn four_ranks_exchange_values_through_barriers() {
    let size = 4;
    let (clients, server) = serve(size);
    let ranks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            thread::spawn(move || {
                let mut pmi = PmiClient::from_stream(stream, rank as i32, size).unwrap();
                assert_eq!(
                    (pmi.rank(), pmi.size(), pmi.job_id()),
                    (rank as i32, size, "testjob")
                );
                assert_eq!(pmi.maxes().keylen_max, 64);
                assert_eq!(pmi.get_appnum().unwrap(), 0);
                assert_eq!(pmi.get_universe_size().unwrap(), Some(size));
                for round in 0..3 {
                    pmi.put(
                        &format!("addr/{round}/{rank}"),
                        &format!("x={rank}:{round}"),
                    )
                    .unwrap();
                    pmi.barrier().unwrap();
                    for r in 0..size {
                        assert_eq!(
                            pmi.get(&format!("addr/{round}/{r}")).unwrap(),
                            format!("x={r}:{round}")
                        );
                    }
                }
                assert_eq!(pmi.get("PMI_process_mapping").unwrap(), "(vector,(0,1,4))");
                pmi.barrier().unwrap();
                pmi.finalize().unwrap();
            })
        })
        .collect();
    for r in ranks {
        r.join().unwrap();
    }
    let events = server.join().unwrap();
    for rank in 0..size {
        assert!(
            events.contains(&ServerEvent::Finalized { rank }),
            "{events:?}"
        );
        assert!(
            events.contains(&ServerEvent::Disconnected {
                rank,
                finalized: true
            }),
            "{events:?}"
        );
    }
    assert_eq!(events.len(), 2 * size as usize, "{events:?}");
}

#[test]
fn errors_are_typed_and_leave_the_client_usable() {
    let (mut clients, server) = serve(1);
    let mut pmi = PmiClient::from_stream(clients.pop().unwrap(), 0, 1).unwrap();
    assert_eq!(
        pmi.get("absent"),
        Err(BootstrapError::NotFound("absent".into()))
    );
    for (key, value) in [
        ("k", "two words"),
        ("k", "back\\slash"),
        ("k", "tab\there"),
        ("k", "é"),
        ("k", ""),
        ("", "v"),
        ("a.b", "v"),
        ("a=b", "v"),
        ("PMI_mine", "v"),
    ] {
        match pmi.put(key, value) {
            Err(BootstrapError::Invalid(msg)) => assert!(!msg.is_empty()),
            other => panic!("put({key:?}, {value:?}): {other:?}"),
        }
    }
    let long_key = "k".repeat(64);
    assert!(
        matches!(pmi.put(&long_key, "v"), Err(BootstrapError::Invalid(m)) if m.contains("at most 63"))
    );
    let long_value = "v".repeat(1024);
    assert!(
        matches!(pmi.put("k", &long_value), Err(BootstrapError::Invalid(m)) if m.contains("at most 1023"))
    );
    // The longest legal value fits the server's limits and MPICH's line.
    let max_value = "v".repeat(900);
    pmi.put("k", &max_value).unwrap();
    assert_eq!(pmi.get("k").unwrap(), max_value);
    // Overwriting is allowed, as under Hydra.
    pmi.put("k", "second").unwrap();
    assert_eq!(pmi.get("k").unwrap(), "second");
    pmi.barrier().unwrap();
    pmi.finalize().unwrap();
    server.join().unwrap();
}

#[test]
fn a_rank_leaving_without_finalize_fails_the_barrier() {
    let (mut clients, server) = serve(2);
    let leaver = clients.pop().unwrap();
    let waiter = thread::spawn({
        let stream = clients.pop().unwrap();
        move || {
            let mut pmi = PmiClient::from_stream(stream, 0, 2).unwrap();
            pmi.barrier()
        }
    });
    let pmi = PmiClient::from_stream(leaver, 1, 2).unwrap();
    thread::sleep(Duration::from_millis(50));
    drop(pmi);
    match waiter.join().unwrap() {
        Err(BootstrapError::Refused {
            op: "barrier_in",
            reason,
        }) => {
            assert!(reason.contains("rank_1_left_the_job"), "{reason}")
        }
        other => panic!("expected a refused barrier, got {other:?}"),
    }
    let events = server.join().unwrap();
    assert!(events.contains(&ServerEvent::Disconnected {
        rank: 1,
        finalized: false
    }));
}

#[test]
fn abort_reaches_the_server() {
    let (mut clients, server) = serve(1);
    let pmi = PmiClient::from_stream(clients.pop().unwrap(), 0, 1).unwrap();
    pmi.abort(9, "disk full, giving up").unwrap();
    let events = server.join().unwrap();
    assert_eq!(
        events[0],
        ServerEvent::Aborted {
            rank: 0,
            code: 9,
            message: "disk_full,_giving_up".into()
        }
    );
}

#[test]
fn garbage_from_a_rank_is_reported_and_cut_off() {
    let (mut clients, server) = serve(2);
    let mut raw = clients.pop().unwrap();
    raw.write_all(b"cmd=put key=a b\n").unwrap();
    let mut reply = String::new();
    // The server closes the connection instead of answering.
    assert_eq!(BufReader::new(&raw).read_line(&mut reply).unwrap(), 0);
    let mut long = clients.pop().unwrap();
    long.write_all(&vec![b'a'; 5000]).unwrap();
    let events = server.join().unwrap();
    let reasons: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::BadRequest { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{events:?}");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("not of the form key=value")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("longer than 4096")),
        "{reasons:?}"
    );
}

/// A scripted PMI server: answers the handshake correctly, then answers
/// the next request with `bad`.
fn client_facing(bad: &'static [u8]) -> (PmiClient, thread::JoinHandle<()>) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let peer = thread::spawn(move || {
        let mut reader = BufReader::new(theirs.try_clone().unwrap());
        let mut out = theirs;
        let mut line = String::new();
        for reply in [
            &b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"[..],
            b"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
            b"cmd=my_kvsname kvsname=scripted\n",
            bad,
        ] {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                return;
            }
            out.write_all(reply).unwrap();
        }
        // Closing here makes a reply cut short look like EOF mid-line.
    });
    (PmiClient::from_stream(ours, 0, 1).unwrap(), peer)
}

#[test]
fn malformed_replies_are_protocol_errors_naming_the_fault() {
    let cases: [(&[u8], &str); 7] = [
        (
            b"cmd=finalize_ack\n",
            "expected `cmd=barrier_out`, got `cmd=finalize_ack`",
        ),
        (b"cmd=barrier_out rc=0 junk\n", "not of the form key=value"),
        (b"cmd=barrier_out surprise=1\n", "unexpected key `surprise`"),
        (b"barrier_out\n", "does not start with `cmd=`"),
        (b"cmd=barrier_out\r\n", "not printable ASCII"),
        (
            b"cmd=barrier_o",
            "connection closed in the middle of a line",
        ),
        (&[b'x'; 5000], "longer than 4096"),
    ];
    for (bad, want) in cases {
        let (mut pmi, peer) = client_facing(bad);
        match pmi.barrier() {
            Err(BootstrapError::Protocol(msg)) => assert!(msg.contains(want), "{msg} / {want}"),
            other => panic!("{bad:?}: expected a protocol error, got {other:?}"),
        }
        // The stream position is unknown now: no further requests.
        match pmi.barrier() {
            Err(BootstrapError::Io(msg)) => assert!(msg.contains("unusable"), "{msg}"),
            other => panic!("expected the client to refuse, got {other:?}"),
        }
        drop(pmi);
        peer.join().unwrap();
    }
}

#[test]
fn put_and_get_replies_are_checked() {
    let (mut pmi, peer) = client_facing(b"cmd=put_result msg=success\n");
    assert!(
        matches!(pmi.put("k", "v"), Err(BootstrapError::Protocol(m)) if m.contains("missing key `rc`"))
    );
    drop(pmi);
    peer.join().unwrap();

    let (mut pmi, peer) = client_facing(b"cmd=put_result rc=-1 msg=no_room\n");
    assert_eq!(
        pmi.put("k", "v"),
        Err(BootstrapError::Refused {
            op: "put",
            reason: "rc=-1 msg=no_room".into()
        })
    );
    drop(pmi);
    peer.join().unwrap();

    let (mut pmi, peer) = client_facing(b"cmd=get_result rc=0 msg=success\n");
    assert!(
        matches!(pmi.get("k"), Err(BootstrapError::Protocol(m)) if m.contains("missing key `value`"))
    );
    drop(pmi);
    peer.join().unwrap();

    let (mut pmi, peer) = client_facing(b"");
    assert!(
        matches!(pmi.get("k"), Err(BootstrapError::Io(m)) if m.contains("closed the PMI connection"))
    );
    drop(pmi);
    peer.join().unwrap();
}

#[test]
fn a_reply_timeout_is_an_io_error() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        let mut reader = BufReader::new(theirs.try_clone().unwrap());
        let mut out = theirs;
        let mut line = String::new();
        for reply in [
            &b"cmd=response_to_init rc=0\n"[..],
            b"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
            b"cmd=my_kvsname kvsname=silent\n",
        ] {
            line.clear();
            reader.read_line(&mut line).unwrap();
            out.write_all(reply).unwrap();
        }
        // Never answer the barrier; hold the socket open until the client
        // has given up.
        line.clear();
        let _ = reader.read_line(&mut line);
        let _ = reader.read_line(&mut line);
    });
    let mut pmi = PmiClient::from_stream(ours, 0, 1).unwrap();
    pmi.set_timeout(Some(Duration::from_millis(100))).unwrap();
    let t = Instant::now();
    assert!(matches!(pmi.barrier(), Err(BootstrapError::Io(m)) if m.contains("timed out")));
    assert!(t.elapsed() < Duration::from_secs(5));
    drop(pmi);
    server.join().unwrap();
}
