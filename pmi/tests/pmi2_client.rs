//! The PMI-2 client against a small in-test server that answers as Slurm
//! 22.05's `mpi/pmi2` plugin does (one thread per rank, a shared key-value
//! space published at each fence), and against a scripted peer that sends
//! malformed replies.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError};
use ferry_pmi::v2::wire::{encode, parse_body, parse_header, Message, HEADER_LEN};
use ferry_pmi::{PmiClient, PmiVersion};

const INIT: &[u8] = b"cmd=init pmi_version=2 pmi_subversion=0\n";
const INIT_OK: &[u8] = b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n";

/// Reads the client's opening line byte by byte (Slurm reads it in one
/// read(2); the client must not send more before the reply).
fn read_init(s: &mut UnixStream) -> Vec<u8> {
    let mut line = Vec::new();
    let mut b = [0u8];
    while line.last() != Some(&b'\n') {
        if s.read(&mut b).unwrap() == 0 {
            break;
        }
        line.push(b[0]);
    }
    line
}

/// Reads one framed request; `None` at end of stream.
fn read_frame(s: &mut UnixStream) -> Option<Message> {
    let mut header = [0u8; HEADER_LEN];
    s.read_exact(&mut header).ok()?;
    let mut body = vec![0u8; parse_header(&header).unwrap()];
    s.read_exact(&mut body).unwrap();
    Some(parse_body(&body).unwrap())
}

fn send_body(s: &mut UnixStream, body: &str) {
    // Slurm's client_resp_send: "%-6d" then the body.
    write!(s, "{:<6}{body}", body.len()).unwrap();
}

/// The shared state of a fake Slurm step.
struct Step {
    size: u32,
    kvs: Mutex<HashMap<String, String>>,
    pending: Mutex<Vec<(String, String)>>,
    fence: Barrier,
    /// Every request each rank sent, in order, as its body.
    log: Mutex<Vec<(u32, String)>>,
}

/// Serves one rank the way Slurm's plugin does; returns when the client
/// finalizes, aborts or goes away.
fn serve_rank(step: &Step, rank: u32, mut s: UnixStream) {
    assert_eq!(read_init(&mut s), INIT);
    s.write_all(INIT_OK).unwrap();
    while let Some(req) = read_frame(&mut s) {
        // The body as the client wrote it.
        let body = String::from_utf8(encode(&req).unwrap()[HEADER_LEN..].to_vec()).unwrap();
        step.log.lock().unwrap().push((rank, body));
        match req.cmd() {
            "fullinit" => {
                assert_eq!(req.get("pmirank"), Some(rank.to_string().as_str()));
                assert_eq!(req.get("pmijobid"), Some("17.0"));
                assert_eq!(req.get("threaded"), Some("FALSE"));
                send_body(
                    &mut s,
                    &format!(
                        "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank={rank};\
                         size={};appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
                        step.size
                    ),
                );
            }
            "job-getid" => send_body(&mut s, "cmd=job-getid-response;rc=0;jobid=17.0;"),
            "kvs-put" => {
                let kv = (
                    req.get("key").unwrap().to_owned(),
                    req.get("value").unwrap().to_owned(),
                );
                step.pending.lock().unwrap().push(kv);
                send_body(&mut s, "cmd=kvs-put-response;rc=0;");
            }
            "kvs-fence" => {
                step.fence.wait();
                if step.fence.wait().is_leader() {
                    let mut pending = step.pending.lock().unwrap();
                    step.kvs.lock().unwrap().extend(pending.drain(..));
                }
                step.fence.wait();
                send_body(&mut s, "cmd=kvs-fence-response;rc=0;");
            }
            "kvs-get" => {
                let value = step
                    .kvs
                    .lock()
                    .unwrap()
                    .get(req.get("key").unwrap())
                    .cloned();
                match value {
                    Some(v) => send_body(
                        &mut s,
                        &format!("cmd=kvs-get-response;rc=0;found=TRUE;value={v};"),
                    ),
                    None => send_body(&mut s, "cmd=kvs-get-response;rc=0;found=FALSE;"),
                }
            }
            "info-getjobattr" => {
                assert_eq!(req.get("key"), Some("universeSize"));
                send_body(
                    &mut s,
                    &format!(
                        "cmd=info-getjobattr-response;rc=0;found=TRUE;value={};",
                        step.size
                    ),
                );
            }
            "finalize" => {
                send_body(&mut s, "cmd=finalize-response;rc=0;");
                return;
            }
            "abort" => return,
            other => panic!("unexpected request {other}"),
        }
    }
}

/// A fake step of `size` ranks; returns the client ends, the server
/// threads and the shared state.
fn step(size: u32) -> (Vec<UnixStream>, Vec<thread::JoinHandle<()>>, Arc<Step>) {
    let step = Arc::new(Step {
        size,
        kvs: Mutex::new(HashMap::from([(
            "PMI_process_mapping".to_owned(),
            format!("(vector,(0,1,{size}))"),
        )])),
        pending: Mutex::new(Vec::new()),
        fence: Barrier::new(size as usize),
        log: Mutex::new(Vec::new()),
    });
    let (mut clients, mut servers) = (Vec::new(), Vec::new());
    for rank in 0..size {
        let (s, c) = UnixStream::pair().unwrap();
        clients.push(c);
        let step = Arc::clone(&step);
        servers.push(thread::spawn(move || serve_rank(&step, rank, s)));
    }
    (clients, servers, step)
}

#[test]
fn four_ranks_exchange_values_through_fences() {
    let size = 4;
    let (clients, servers, step) = step(size);
    let ranks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            thread::spawn(move || {
                let mut pmi =
                    PmiClient::from_stream_pmi2(stream, rank as i32, Some("17.0")).unwrap();
                assert_eq!(pmi.version(), PmiVersion::V2);
                assert_eq!(
                    (pmi.rank(), pmi.size(), pmi.job_id()),
                    (rank as i32, size, "17.0")
                );
                assert_eq!(pmi.kvsname(), "17.0");
                assert_eq!(pmi.maxes().keylen_max, 64);
                assert_eq!(pmi.get_appnum().unwrap(), -1);
                assert_eq!(pmi.get_universe_size().unwrap(), Some(size));
                for round in 0..3 {
                    pmi.put(
                        &format!("addr/{round}/{rank}"),
                        &format!("x={rank}:{round} with spaces\\"),
                    )
                    .unwrap();
                    pmi.barrier().unwrap();
                    for r in 0..size {
                        assert_eq!(
                            pmi.get(&format!("addr/{round}/{r}")).unwrap(),
                            format!("x={r}:{round} with spaces\\")
                        );
                    }
                }
                assert_eq!(pmi.get("PMI_process_mapping").unwrap(), "(vector,(0,1,4))");
                assert_eq!(
                    pmi.get("absent"),
                    Err(BootstrapError::NotFound("absent".into()))
                );
                pmi.barrier().unwrap();
                pmi.finalize().unwrap();
            })
        })
        .collect();
    for r in ranks {
        r.join().unwrap();
    }
    for s in servers {
        s.join().unwrap();
    }
    // The requests on the wire, as MPICH's PMI-2 client writes them.
    let log = step.log.lock().unwrap();
    let rank1: Vec<&str> = log
        .iter()
        .filter(|(r, _)| *r == 1)
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(
        &rank1[..6],
        [
            "cmd=fullinit;pmijobid=17.0;pmirank=1;threaded=FALSE;",
            "cmd=job-getid;",
            "cmd=info-getjobattr;key=universeSize;",
            "cmd=kvs-put;key=addr/0/1;value=x=1:0 with spaces\\;",
            "cmd=kvs-fence;",
            "cmd=kvs-get;jobid=17.0;srcid=-1;key=addr/0/0;",
        ]
    );
    assert_eq!(rank1.last(), Some(&"cmd=finalize;"));
}

#[test]
fn invalid_keys_and_values_are_refused_before_the_wire() {
    let (mut clients, servers, step) = step(1);
    let mut pmi = PmiClient::from_stream_pmi2(clients.pop().unwrap(), 0, Some("17.0")).unwrap();
    for (key, value) in [
        ("k", "tab\there"),
        ("k", "new\nline"),
        ("k", "é"),
        ("k", ""),
        ("", "v"),
        ("a.b", "v"),
        ("a=b", "v"),
        ("a;b", "v"),
        ("PMI_mine", "v"),
    ] {
        match pmi.put(key, value) {
            Err(BootstrapError::Invalid(msg)) => assert!(!msg.is_empty()),
            other => panic!("put({key:?}, {value:?}): {other:?}"),
        }
    }
    assert!(matches!(
        pmi.put(&"k".repeat(64), "v"),
        Err(BootstrapError::Invalid(m)) if m.contains("at most 63")
    ));
    assert!(matches!(
        pmi.put("k", &"v".repeat(1025)),
        Err(BootstrapError::Invalid(m)) if m.contains("1024")
    ));
    // `;` is carried encoded (Slurm cannot carry it), and counts as 3.
    assert!(matches!(
        pmi.put("k", &";".repeat(342)),
        Err(BootstrapError::Invalid(m)) if m.contains("once `;` and `%` are encoded")
    ));
    pmi.put("seg", "ferry-10-b3c5;95a3 100%").unwrap();
    // Still usable; the longest legal key and value go through.
    pmi.put(&"k".repeat(63), &"v".repeat(1024)).unwrap();
    pmi.barrier().unwrap();
    assert_eq!(pmi.get(&"k".repeat(63)).unwrap(), "v".repeat(1024));
    assert_eq!(pmi.get("seg").unwrap(), "ferry-10-b3c5;95a3 100%");
    pmi.finalize().unwrap();
    for s in servers {
        s.join().unwrap();
    }
    // Nothing invalid reached the server.
    let log = step.log.lock().unwrap();
    let puts: Vec<&str> = log
        .iter()
        .filter(|(_, m)| m.contains("kvs-put"))
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert_eq!(
        puts[0],
        "cmd=kvs-put;key=seg;value=ferry-10-b3c5%3B95a3 100%25;"
    );
}

#[test]
fn abort_reaches_the_server_with_its_message() {
    let (mut clients, servers, step) = step(1);
    let pmi = PmiClient::from_stream_pmi2(clients.pop().unwrap(), 0, Some("17.0")).unwrap();
    pmi.abort(9, "disk full; giving up").unwrap();
    for s in servers {
        s.join().unwrap();
    }
    let log = step.log.lock().unwrap();
    assert_eq!(
        log.last().unwrap().1,
        "cmd=abort;isworld=TRUE;msg=disk full, giving up;"
    );
}

/// Runs a client against a peer that answers `init` correctly, then
/// sends `replies` (raw bytes, one per request) in order and hangs up.
fn against(replies: Vec<Vec<u8>>) -> (Result<PmiClient, BootstrapError>, thread::JoinHandle<()>) {
    let (mut server, client) = UnixStream::pair().unwrap();
    let peer = thread::spawn(move || {
        assert_eq!(read_init(&mut server), INIT);
        server.write_all(INIT_OK).unwrap();
        for reply in replies {
            if read_frame(&mut server).is_none() {
                return;
            }
            server.write_all(&reply).unwrap();
        }
        // Then it hangs up.
    });
    (PmiClient::from_stream_pmi2(client, 0, None), peer)
}

fn framed(body: &str) -> Vec<u8> {
    format!("{:<6}{body}", body.len()).into_bytes()
}

const FULLINIT_OK: &str = "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;\
                           size=2;appnum=0;";
const JOBID_OK: &str = "cmd=job-getid-response;rc=0;jobid=5.0;";

#[test]
fn malformed_replies_are_typed_errors_and_break_the_connection() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"abcdefcmd=x;".to_vec(), "length header"),
        (b"999999".to_vec(), "longer than 65536"),
        (
            framed("cmd=kvs-put-response;rc=0;"),
            "expected `cmd=kvs-fence-response`",
        ),
        (framed("cmd=kvs-fence-response;rc=0"), "not terminated"),
        (framed("cmd=kvs-fence-response;"), "missing key `rc`"),
        (
            framed("cmd=kvs-fence-response;rc=0;x=1;"),
            "unexpected key `x`",
        ),
        (
            b"30    cmd=kvs-fence-response;rc=0;".to_vec(),
            "in the middle of a message",
        ),
    ];
    for (bad, want) in cases {
        let (client, peer) = against(vec![framed(FULLINIT_OK), framed(JOBID_OK), bad.clone()]);
        let mut pmi = client.unwrap();
        assert_eq!(pmi.job_id(), "5.0");
        pmi.set_timeout(Some(Duration::from_secs(5))).unwrap();
        let err = pmi.barrier().unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, BootstrapError::Protocol(_) | BootstrapError::Io(_)),
            "{text}"
        );
        assert!(
            text.contains(want),
            "{:?}: {text}",
            String::from_utf8_lossy(&bad)
        );
        // The stream's position is unknown now: the client says so.
        let again = pmi.barrier().unwrap_err().to_string();
        assert!(again.contains("unusable after an earlier error"), "{again}");
        drop(pmi);
        peer.join().unwrap();
    }
}

#[test]
fn handshake_failures_are_named() {
    // The server refuses the version (as Slurm answers a mismatch).
    let (mut server, client) = UnixStream::pair().unwrap();
    let peer = thread::spawn(move || {
        read_init(&mut server);
        server
            .write_all(b"cmd=response_to_init rc=1 pmi_version=1 pmi_subversion=1\n")
            .unwrap();
    });
    let err = PmiClient::from_stream_pmi2(client, 0, None).unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Refused { op: "init", reason } if reason.contains("PMI 1.1")),
        "{err:?}"
    );
    peer.join().unwrap();

    // fullinit names another rank than the environment's.
    let other_rank = FULLINIT_OK.replace("rank=0", "rank=1");
    let (client, peer) = against(vec![framed(&other_rank)]);
    let err = client.unwrap_err().to_string();
    assert!(
        err.contains("rank 0 of ?, its `fullinit` reply rank 1 of 2"),
        "{err}"
    );
    peer.join().unwrap();

    // A job id that cannot go into a file name.
    let (client, peer) = against(vec![
        framed(FULLINIT_OK),
        framed("cmd=job-getid-response;rc=0;jobid=../x;"),
    ]);
    let err = client.unwrap_err().to_string();
    assert!(err.contains("job id \"../x\""), "{err}");
    peer.join().unwrap();

    // The server closes the connection instead of answering.
    let (client, peer) = against(vec![]);
    let err = client.unwrap_err();
    assert!(matches!(err, BootstrapError::Io(_)), "{err:?}");
    peer.join().unwrap();
}

#[test]
fn a_silent_server_times_out() {
    let (mut server, client) = UnixStream::pair().unwrap();
    let peer = thread::spawn(move || {
        assert_eq!(read_init(&mut server), INIT);
        server.write_all(INIT_OK).unwrap();
        read_frame(&mut server).unwrap();
        server.write_all(&framed(FULLINIT_OK)).unwrap();
        read_frame(&mut server).unwrap();
        server.write_all(&framed(JOBID_OK)).unwrap();
        // Reads the fence, never answers; waits for the client to go.
        let mut rest = Vec::new();
        let _ = server.read_to_end(&mut rest);
    });
    let mut pmi = PmiClient::from_stream_pmi2(client, 0, None).unwrap();
    pmi.set_timeout(Some(Duration::from_millis(100))).unwrap();
    let err = pmi.barrier().unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Io(m) if m.contains("timed out waiting for the reply to `kvs-fence`")),
        "{err:?}"
    );
    drop(pmi);
    peer.join().unwrap();
}
