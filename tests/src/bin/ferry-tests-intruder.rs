//! The attacker of the attack tests (`tests/security.rs`): what another
//! user or another host can do to a starting job, knowing ferry's source.
//!
//! - `ferry-tests-intruder liveness ADDR=RANK...`: connects to every ofi
//!   liveness listener given, several times, and on each connection does
//!   one wrong thing: a hello claiming each rank of the job followed by a
//!   made-up proof, half a hello and silence, garbage, the old
//!   unauthenticated hello (4 bytes of a rank), a hello for another rank.
//!   Prints `intruder: connected N` once every connection is open (the
//!   test then lets the ranks run), waits (30 s at most) for the ranks to
//!   close them all, and prints `intruder liveness: N connections, closed
//!   by the ranks C, left open A`.
//! - `ferry-tests-intruder unix DIR SECS`: one round, then `intruder:
//!   first round done`, then rounds for SECS seconds, holding every name
//!   it took until it exits. A round squats and floods: binds a socket and
//!   makes a directory inside
//!   every `ferry-*` directory of DIR (the wake directories), binds the
//!   abstract names the wake sockets used to have (`@<segment>-w<i>`),
//!   plants guessed job names in DIR, and sends datagrams to every socket
//!   of `/proc/net/unix` of the jobs in DIR (but its own): paths under DIR,
//!   abstract names that start with one of its jobs' prefixes. Prints
//!   `intruder unix: rounds R, sends S, delivered D, squats Q, squats that
//!   took a name inside a ferry directory X, abstract binds B, planted P`.
//!
//! Run as another user for the `unix` mode (`setpriv --reuid=65534 ...`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ferry_core::auth::handshake::Message;

fn hello(from: u32, to: u32, nonce: u8) -> Vec<u8> {
    Message::Hello {
        from,
        to,
        nonce: [nonce; 32],
    }
    .encode()
}

/// Opens the connections to one listener and sends each one's first bytes.
fn open(addr: SocketAddr, rank: u32, size: u32) -> Vec<(TcpStream, Option<u32>)> {
    let mut out = Vec::new();
    let mut conn = |first: &[u8], forged: Option<u32>| match TcpStream::connect(addr) {
        Ok(mut s) => {
            let _ = s.write_all(first);
            out.push((s, forged));
        }
        Err(e) => eprintln!("intruder: connecting to {addr}: {e}"),
    };
    for claim in 0..size {
        conn(&hello(claim, rank, claim as u8 + 1), Some(claim));
    }
    conn(&hello(0, rank, 0xee)[..20], None);
    conn(b"GET / HTTP/1.0\r\n\r\n", None);
    conn(&0u32.to_le_bytes(), None);
    conn(&hello(0, rank + 100, 0xdd), None);
    out
}

/// Answers a challenge with a made-up proof, then waits for the close.
fn play(mut s: TcpStream, rank: u32, forged: Option<u32>) -> bool {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    if let Some(claim) = forged {
        let mut challenge = [0u8; 78];
        if s.read_exact(&mut challenge).is_ok() {
            let proof = Message::Proof {
                from: claim,
                to: rank,
                mac: [0xa5; 32],
            };
            let _ = s.write_all(&proof.encode());
        }
    }
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn liveness(targets: &[String]) -> ExitCode {
    let mut parsed = Vec::new();
    for t in targets {
        let Some((a, r)) = t.split_once('=') else {
            eprintln!("intruder: {t:?} is not ADDR=RANK");
            return ExitCode::from(2);
        };
        let (Ok(a), Ok(r)) = (a.parse::<SocketAddr>(), r.parse::<u32>()) else {
            eprintln!("intruder: {t:?} is not ADDR=RANK");
            return ExitCode::from(2);
        };
        parsed.push((a, r));
    }
    let size = parsed.len() as u32;
    let mut conns = Vec::new();
    for &(a, r) in &parsed {
        conns.extend(open(a, r, size).into_iter().map(|(s, f)| (s, r, f)));
    }
    println!("intruder: connected {}", conns.len());
    let _ = std::io::stdout().flush();
    let n = conns.len();
    let handles: Vec<_> = conns
        .into_iter()
        .map(|(s, r, f)| std::thread::spawn(move || play(s, r, f)))
        .collect();
    let closed = handles
        .into_iter()
        .map(|h| h.join().unwrap_or(false))
        .filter(|c| *c)
        .count();
    println!(
        "intruder liveness: {n} connections, closed by the ranks {closed}, left open {}",
        n - closed
    );
    ExitCode::SUCCESS
}

#[derive(Debug, Default)]
struct Unix {
    rounds: u64,
    sends: u64,
    delivered: u64,
    squats: u64,
    took: u64,
    abstract_binds: u64,
    planted: u64,
    /// What we bound ourselves (not targets).
    ours: Vec<String>,
    keep: Vec<UnixDatagram>,
}

/// The names in `/proc/net/unix` (abstract ones with a leading `@`) of
/// the jobs whose files are in `dir`: paths under `dir`, and abstract
/// names that start with one of `prefixes` (`ferry-<job id>`). Other
/// processes' sockets (other jobs on the machine) are left alone.
fn job_sockets(dir: &Path, prefixes: &[String]) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let dir = dir.to_str().unwrap_or("/nonexistent");
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter(|n| match n.strip_prefix('@') {
            Some(a) => prefixes.iter().any(|p| a.starts_with(p.as_str())),
            None => n.starts_with(dir),
        })
        .map(str::to_owned)
        .collect()
}

impl Unix {
    fn round(&mut self, dir: &Path, out: &UnixDatagram) {
        self.rounds += 1;
        let entries: Vec<(String, PathBuf, bool)> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter_map(|e| {
                        let name = e.file_name().to_str()?.to_owned();
                        let is_dir = e.file_type().ok()?.is_dir();
                        name.starts_with("ferry-").then(|| (name, e.path(), is_dir))
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (name, path, is_dir) in &entries {
            if *is_dir {
                // Inside a wake directory: its socket's name, another one.
                self.squats += 2;
                if let Ok(s) = UnixDatagram::bind(path.join("s")) {
                    self.took += 1;
                    self.keep.push(s);
                }
                if std::fs::create_dir(path.join("x")).is_ok() {
                    self.took += 1;
                }
            } else {
                // A segment: the abstract names its wake sockets used to
                // take, and the next job names.
                for i in 0..8 {
                    let n = format!("{name}-w{i}");
                    self.squats += 1;
                    if let Ok(a) = UnixAddr::from_abstract_name(n.as_bytes()) {
                        if let Ok(s) = UnixDatagram::bind_addr(&a) {
                            self.abstract_binds += 1;
                            self.ours.push(format!("@{n}"));
                            self.keep.push(s);
                        }
                    }
                }
            }
            // Guessed names with the job's prefix: a wake directory and a
            // segment that a rank might draw next.
            if let Some(job) = name.strip_prefix("ferry-").and_then(|r| r.get(..32)) {
                if self.planted < 64 {
                    let guess = format!("{:016x}", self.rounds * 7919 + self.planted);
                    for n in [
                        format!("ferry-{job}-w{guess}"),
                        format!("ferry-{job}-{guess}"),
                    ] {
                        self.squats += 1;
                        if std::fs::write(dir.join(&n), b"planted").is_ok() {
                            self.planted += 1;
                        }
                    }
                }
            }
        }
        // The flood, at this job's sockets only.
        let prefixes: Vec<String> = entries
            .iter()
            .filter_map(|(n, _, _)| n.get(..6 + 32).map(str::to_owned))
            .collect();
        for name in job_sockets(dir, &prefixes) {
            if self.ours.contains(&name) {
                continue;
            }
            let addr = match name.strip_prefix('@') {
                Some(a) => UnixAddr::from_abstract_name(a.as_bytes()),
                None => UnixAddr::from_pathname(&name),
            };
            let Ok(addr) = addr else { continue };
            for _ in 0..200 {
                self.sends += 1;
                if out.send_to_addr(&[1], &addr).is_ok() {
                    self.delivered += 1;
                }
            }
        }
    }
}

fn unix(dir: &str, secs: f64) -> ExitCode {
    let out = match UnixDatagram::unbound() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("intruder: socket: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _ = out.set_nonblocking(true);
    let mut u = Unix::default();
    u.round(Path::new(dir), &out);
    // The test lets the ranks run now; the names bound stay bound.
    println!("intruder: first round done");
    let _ = std::io::stdout().flush();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        u.round(Path::new(dir), &out);
    }
    println!(
        "intruder unix: rounds {}, sends {}, delivered {}, squats {}, squats that took a name inside a ferry directory {}, abstract binds {}, planted {}",
        u.rounds, u.sends, u.delivered, u.squats, u.took, u.abstract_binds, u.planted
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("liveness") => liveness(&args[1..]),
        Some("unix") if args.len() == 3 => match args[2].parse() {
            Ok(secs) => unix(&args[1], secs),
            Err(_) => ExitCode::from(2),
        },
        _ => {
            eprintln!("usage: ferry-tests-intruder liveness ADDR=RANK... | unix DIR SECS");
            ExitCode::from(2)
        }
    }
}
