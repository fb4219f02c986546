//! MPI's non-overtaking rule end to end, over a simulated network whose
//! random delays reorder traffic between different pairs of ranks (each pair
//! stays FIFO, as the device contract requires), and an all-to-all stress.
//!
//! The matching queues have their own model test (`matching_model.rs`);
//! these tests add everything around them: eager and rendezvous protocols
//! mixed in one stream, RTS matching versus data arrival, wildcards, ARecv,
//! and receives posted while traffic is in flight.

mod common_protocols;

use common_protocols::{caps, no_leaks, pattern, waitall};
use ferry_core::sim::{NetConfig, Sim, SimRng};
use ferry_core::{
    Buf, Caps, Completion, Config, Rank, Request, RndvMode, Status, Tag, ANY_SOURCE, ANY_TAG,
};

/// Every ordering message starts with its source, its per-pair sequence
/// number and its tag, so a receive can name the message it got.
const HEADER: usize = 12;
const MAX_LEN: usize = 9000;
const MODES: [RndvMode; 4] = [
    RndvMode::Auto,
    RndvMode::Get,
    RndvMode::Put,
    RndvMode::Fragmented,
];

/// Small thresholds, so that a stream of modest messages crosses all of them.
fn small_config(mode: RndvMode) -> Config {
    let limits = Config {
        eager_limit: Some(256),
        fragment_size: 512,
        rdma_threshold: 2048,
        ..Config::default()
    };
    Config {
        rndv_mode: mode,
        ..limits
    }
}

/// The caps variant for a seed: RDMA both ways, put only, or none.
fn seed_caps(seed: u64) -> Caps {
    let variants = [caps(true, true), caps(false, true), caps(false, false)];
    variants[(seed / 4 % 3) as usize].clone()
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    src: Rank,
    dst: Rank,
    seq: u32,
    tag: Tag,
    len: usize,
    /// Position in the job-wide order in which the sends were started.
    global: usize,
}

impl Msg {
    fn body(&self) -> Vec<u8> {
        let salt = ((self.src as u64) << 40) | ((self.dst as u64) << 20) | u64::from(self.seq);
        let mut b = Vec::with_capacity(self.len);
        for v in [self.src as u32, self.seq, self.tag as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend(pattern(self.len - HEADER, salt));
        b
    }
}

/// `(src, seq)` from the header of a received body.
fn decode(body: &[u8]) -> (Rank, u32) {
    let word = |i: usize| u32::from_le_bytes(body[4 * i..4 * i + 4].try_into().unwrap());
    (word(0) as Rank, word(1))
}

/// A receive as posted: its selector, and what became of it.
#[derive(Debug)]
struct Posted {
    source: Rank,
    tag: Tag,
    req: Request,
    /// Posted before any packet could have arrived.
    early: bool,
    /// Index into the message list, once matched; `None` if cancelled.
    got: Option<usize>,
}

impl Posted {
    fn matches(&self, m: &Msg) -> bool {
        (self.source == ANY_SOURCE || self.source == m.src)
            && (self.tag == ANY_TAG || self.tag == m.tag)
    }
}

fn size_from(rng: &mut SimRng) -> usize {
    // Around the eager limit, the fragment size and the RDMA threshold, and
    // well away from each.
    let (lo, hi) = [
        (12, 100),
        (250, 262),
        (500, 1200),
        (2040, 2056),
        (3000, MAX_LEN),
    ][rng.below(5) as usize];
    rng.range_inclusive(lo as u64, hi as u64) as usize
}

fn shuffle<T>(rng: &mut SimRng, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

/// What one ordering run saw.
#[derive(Debug, Default)]
struct Report {
    /// Two early ANY_SOURCE/ANY_TAG receives at one rank got messages from
    /// different sources in the opposite of their send order: arrivals were
    /// reordered across pairs.
    reordered: bool,
    /// Messages matched by each selector kind: exact, ANY_SOURCE, ANY_TAG, both.
    by_kind: [usize; 4],
    cancelled: usize,
    /// Which message each receive got, rank by rank in posting order.
    assignment: Vec<Option<usize>>,
}

/// One seeded run: `ranks` ranks each send `per_pair` messages to every
/// other rank, started in a random job-wide interleaving; receivers post a
/// random mix of selectors (each derived from one message bound for them)
/// in random order, some before any traffic arrives and the rest while it
/// is in flight. Greedy MPI matching may strand a receive (a wildcard took
/// the message an exact receive was made for); those are cancelled and the
/// leftover messages drained with catch-all receives, which the
/// non-overtaking check covers as well.
fn ordering_run(seed: u64, ranks: usize, per_pair: usize) -> Report {
    let mut rng = SimRng::new(seed ^ 0x0DE5);
    let net = NetConfig::new(ranks)
        .with_delay(0, 5)
        .with_seed(seed)
        .with_caps(seed_caps(seed));
    let mut sim = Sim::new(net, small_config(MODES[(seed % 4) as usize]));
    let n = ranks as Rank;

    let mut pairs: Vec<Vec<Msg>> = Vec::new();
    for (src, dst) in (0..n)
        .flat_map(|s| (0..n).map(move |d| (s, d)))
        .filter(|(s, d)| s != d)
    {
        let mut tag = rng.below(3) as Tag;
        let mut pair = Vec::new();
        for seq in 0..per_pair as u32 {
            if rng.chance(1, 3) {
                tag = rng.below(3) as Tag;
            }
            pair.push(Msg {
                src,
                dst,
                seq,
                tag,
                len: size_from(&mut rng),
                global: 0,
            });
        }
        pair.reverse();
        pairs.push(pair);
    }
    let (mut msgs, mut sends) = (Vec::new(), Vec::new());
    while !pairs.is_empty() {
        let p = rng.below(pairs.len() as u64) as usize;
        let mut m = pairs[p].pop().expect("empty pairs are removed");
        if pairs[p].is_empty() {
            pairs.swap_remove(p);
        }
        m.global = msgs.len();
        let s = sim
            .engine(m.src)
            .isend(m.dst, m.tag, 0, Buf::from_vec(m.body()))
            .unwrap();
        sends.push((m.src, s.request));
        msgs.push(m);
    }

    let mut plans: Vec<Vec<Posted>> = (0..n)
        .map(|d| {
            let mut mine: Vec<&Msg> = msgs.iter().filter(|m| m.dst == d).collect();
            shuffle(&mut rng, &mut mine);
            mine.iter()
                .map(|m| {
                    let kind = rng.below(5);
                    let source = if kind == 2 || kind == 4 {
                        ANY_SOURCE
                    } else {
                        m.src
                    };
                    let tag = if kind >= 3 { ANY_TAG } else { m.tag };
                    Posted {
                        source,
                        tag,
                        req: Request::NULL,
                        early: false,
                        got: None,
                    }
                })
                .collect()
        })
        .collect();
    let mut posted = vec![0usize; ranks];
    for d in 0..ranks {
        let third = plans[d].len() / 3;
        post_next(
            &mut sim,
            &mut rng,
            &mut plans[d],
            &mut posted[d],
            d as Rank,
            third,
            true,
        );
    }
    loop {
        let mut more = false;
        for d in 0..ranks {
            let count = rng.below(5) as usize;
            let plan = &mut plans[d];
            more |= post_next(
                &mut sim,
                &mut rng,
                plan,
                &mut posted[d],
                d as Rank,
                count,
                false,
            );
        }
        for _ in 0..rng.below(4) {
            sim.step().unwrap();
        }
        if !more {
            break;
        }
    }
    sim.run_until_idle().unwrap();

    let mut report = Report::default();
    let mut received = vec![false; msgs.len()];
    for (d, plan) in plans.iter_mut().enumerate() {
        let d = d as Rank;
        for p in plan.iter_mut() {
            if !sim.engine(d).is_complete(&p.req).unwrap() {
                sim.engine(d).cancel(&p.req).unwrap();
            }
        }
        // Catch-alls for whatever the cancelled receives left behind.
        let left = sim.engine(d).counters().unexpected_depth as usize;
        for _ in 0..left {
            let buf = Buf::zeroed(MAX_LEN).unwrap();
            let req = sim
                .engine(d)
                .irecv(ANY_SOURCE, ANY_TAG, 0, buf)
                .unwrap()
                .request;
            plan.push(Posted {
                source: ANY_SOURCE,
                tag: ANY_TAG,
                req,
                early: false,
                got: None,
            });
        }
    }
    sim.run_until_idle().unwrap();
    for (d, plan) in plans.iter_mut().enumerate() {
        for p in plan.iter_mut() {
            let c = sim
                .engine(d as Rank)
                .test(&mut p.req)
                .unwrap()
                .expect("done after idle");
            if c.status.cancelled {
                report.cancelled += 1;
                continue;
            }
            let i = check_received(&msgs, d as Rank, p, &c);
            assert!(
                !std::mem::replace(&mut received[i], true),
                "seed {seed}: {:?} twice",
                msgs[i]
            );
            let kind = usize::from(p.source == ANY_SOURCE) + 2 * usize::from(p.tag == ANY_TAG);
            report.by_kind[kind] += 1;
            p.got = Some(i);
        }
        report.reordered |= check_non_overtaking(&msgs, plan, seed);
        report.assignment.extend(plan.iter().map(|p| p.got));
    }
    if let Some(i) = received.iter().position(|r| !r) {
        panic!("seed {seed}: {:?} was never received", msgs[i]);
    }
    for (src, mut s) in sends {
        let c = sim
            .engine(src)
            .test(&mut s)
            .unwrap()
            .expect("every send completed");
        assert_eq!(c.status.error, None, "seed {seed}");
    }
    no_leaks(&mut sim);
    report
}

/// Posts the next `count` receives of rank `d`'s plan (by `irecv` or
/// ARecv at random); false once the plan is all posted.
fn post_next(
    sim: &mut Sim,
    rng: &mut SimRng,
    plan: &mut [Posted],
    posted: &mut usize,
    d: Rank,
    count: usize,
    early: bool,
) -> bool {
    let end = (*posted + count).min(plan.len());
    for p in &mut plan[*posted..end] {
        let e = sim.engine(d);
        p.req = if rng.chance(1, 3) {
            e.iarecv(p.source, p.tag, 0).unwrap().request
        } else {
            let buf = Buf::zeroed(MAX_LEN).unwrap();
            e.irecv(p.source, p.tag, 0, buf).unwrap().request
        };
        p.early = early;
    }
    *posted = end;
    end < plan.len()
}

/// Checks one completed receive against the message its data names and
/// returns that message's index.
fn check_received(msgs: &[Msg], d: Rank, p: &Posted, c: &Completion) -> usize {
    let body = c.buf.as_ref().expect("a receive returns its buffer");
    let st: Status = c.status;
    assert_eq!(st.error, None);
    let (src, seq) = decode(body);
    let i = msgs
        .iter()
        .position(|m| m.src == src && m.dst == d && m.seq == seq)
        .unwrap_or_else(|| panic!("rank {d} got a message nobody sent: {src} #{seq}"));
    let m = &msgs[i];
    assert_eq!(
        (st.source, st.tag, st.bytes),
        (m.src, m.tag, m.len),
        "{m:?}"
    );
    assert!(
        p.matches(m),
        "{m:?} went to a receive for ({}, {})",
        p.source,
        p.tag
    );
    assert!(body[..m.len] == m.body()[..], "{m:?}: data");
    i
}

/// MPI's non-overtaking rule, in the form that holds whatever the timing:
/// if receive `i` was posted before receive `j` and could have taken the
/// message `a` that `j` got, then `i` must have got an earlier message from
/// `a`'s source, or one from another source; never a later one from `a`'s
/// source, and it cannot have gone without (been cancelled). Returns true if
/// two early catch-all receives show arrivals out of send order.
fn check_non_overtaking(msgs: &[Msg], plan: &[Posted], seed: u64) -> bool {
    let mut reordered = false;
    for (j, later) in plan.iter().enumerate() {
        let Some(a) = later.got.map(|g| &msgs[g]) else {
            continue;
        };
        for earlier in plan[..j].iter().filter(|e| e.matches(a)) {
            let overtaken = match earlier.got.map(|g| &msgs[g]) {
                None => true,
                Some(b) => b.src == a.src && b.seq > a.seq,
            };
            assert!(
                !overtaken,
                "seed {seed}: {a:?} overtook the receive {earlier:?}"
            );
        }
        if later.early && later.source == ANY_SOURCE && later.tag == ANY_TAG {
            let early_any = plan[..j]
                .iter()
                .filter(|e| e.early && e.source == ANY_SOURCE);
            let firsts = early_any.filter(|e| e.tag == ANY_TAG).filter_map(|e| e.got);
            reordered |= firsts
                .map(|g| &msgs[g])
                .any(|b| b.src != a.src && b.global > a.global);
        }
    }
    reordered
}

#[test]
fn non_overtaking_holds_under_cross_pair_reordering() {
    let mut total = Report::default();
    let mut reordered_seeds = 0;
    for seed in 0..120 {
        let ranks = 4 + (seed % 3) as usize;
        let r = ordering_run(seed, ranks, 8);
        reordered_seeds += usize::from(r.reordered);
        total.cancelled += r.cancelled;
        for k in 0..4 {
            total.by_kind[k] += r.by_kind[k];
        }
    }
    // The test is only as good as the reordering and wildcard use it saw.
    assert!(
        reordered_seeds > 0,
        "no seed reordered arrivals across pairs"
    );
    assert!(
        total.by_kind.iter().all(|&k| k > 100),
        "selector kinds used: {:?}",
        total.by_kind
    );
}

#[test]
fn same_seed_replays_the_same_matching() {
    let a = ordering_run(7, 5, 6);
    let b = ordering_run(7, 5, 6);
    assert!(a.assignment.len() > 100 && a.assignment == b.assignment);
    assert_eq!(
        (a.by_kind, a.cancelled, a.reordered),
        (b.by_kind, b.cancelled, b.reordered)
    );
}

/// All-to-all in rounds: every rank sends one message per round to every
/// other rank (tag = round) and receives them with exact selectors or with
/// ANY_SOURCE (chosen per rank and round, so greedy matching can never
/// strand a receive), by `irecv` or ARecv. Everything is started up front;
/// then each rank in turn blocks in `waitall` while the others progress.
fn all_to_all(seed: u64, ranks: usize, rounds: usize, huge: bool) {
    let mut rng = SimRng::new(seed ^ 0xA11);
    let mode = MODES[(seed % 4) as usize];
    let net = NetConfig::new(ranks)
        .with_delay(0, 4)
        .with_seed(seed)
        .with_caps(seed_caps(seed));
    let mut sim = Sim::new(net, small_config(mode));
    let n = ranks as Rank;
    let sizes = [
        0, 1, 255, 256, 257, 511, 512, 513, 2047, 2048, 2049, 5000, 20_000, 70_000,
    ];
    let salt = |s: Rank, d: Rank, round: usize| (s as u64 * 64 + d as u64) * 1000 + round as u64;
    // Each message's length is a function of its coordinates, so sender and
    // receiver agree on it without a table.
    let len = |s: Rank, d: Rank, round: usize| {
        let mut r = SimRng::new(salt(s, d, round) ^ (seed << 32));
        match huge && r.chance(1, 40) {
            true => 1 << 20,
            false => sizes[r.below(sizes.len() as u64) as usize],
        }
    };
    let mut sends: Vec<Vec<Request>> = vec![Vec::new(); ranks];
    let mut recvs: Vec<Vec<(Rank, usize, Request)>> = vec![Vec::new(); ranks];
    for round in 0..rounds {
        for d in 0..n {
            let any = rng.chance(1, 2);
            let widest = (0..ranks)
                .map(|s| len(s as Rank, d, round))
                .max()
                .unwrap_or(0);
            for s in (0..n).filter(|&s| s != d) {
                let (source, cap) = match any {
                    true => (ANY_SOURCE, widest),
                    false => (s, len(s, d, round)),
                };
                let e = sim.engine(d);
                let r = if rng.chance(1, 3) {
                    e.iarecv(source, round as Tag, 0).unwrap()
                } else {
                    e.irecv(source, round as Tag, 0, Buf::zeroed(cap).unwrap())
                        .unwrap()
                };
                recvs[d as usize].push((source, round, r.request));
            }
        }
        for s in 0..n {
            for d in (0..n).filter(|&d| d != s) {
                let body = pattern(len(s, d, round), salt(s, d, round));
                let r = sim
                    .engine(s)
                    .isend(d, round as Tag, 0, Buf::from_vec(body))
                    .unwrap();
                sends[s as usize].push(r.request);
            }
        }
    }
    for d in 0..n {
        let mut reqs: Vec<Request> = recvs[d as usize].iter().map(|r| r.2).collect();
        let mut seen = vec![vec![false; rounds]; ranks];
        for (c, &(source, round, _)) in waitall(&mut sim, d, &mut reqs)
            .iter()
            .zip(&recvs[d as usize])
        {
            let st = c.status;
            let s = st.source;
            assert!(
                source == ANY_SOURCE || source == s,
                "seed {seed}: wrong source"
            );
            assert!(
                !std::mem::replace(&mut seen[s as usize][round], true),
                "seed {seed}: twice"
            );
            let want = pattern(len(s, d, round), salt(s, d, round));
            assert_eq!(
                (st.error, st.tag, st.bytes),
                (None, round as Tag, want.len()),
                "seed {seed}"
            );
            let got = c.buf.as_ref().unwrap();
            assert!(
                got[..st.bytes] == want[..],
                "seed {seed}: {s} -> {d} round {round}: data"
            );
        }
    }
    let (mut eager, mut rndv) = (0, 0);
    for s in 0..n {
        let out = waitall(&mut sim, s, &mut sends[s as usize]);
        assert!(out.iter().all(|c| c.status.error.is_none()), "seed {seed}");
        let c = sim.engine(s).counters();
        eager += c.eager_sent;
        rndv += c.rndv_get_sent + c.rndv_put_sent + c.rndv_frag_sent;
    }
    assert_eq!(
        eager + rndv,
        (ranks * (ranks - 1) * rounds) as u64,
        "one protocol per message"
    );
    assert!(
        eager > 0 && rndv > 0,
        "seed {seed}: sizes span the thresholds"
    );
    sim.run_until_idle().unwrap();
    no_leaks(&mut sim);
}

#[test]
fn all_to_all_short() {
    for seed in 0..4 {
        all_to_all(seed, 8, 3, false);
    }
}

#[test]
#[ignore = "long: 8 ranks, 12 rounds, 24 seeds, some 1 MiB messages"]
fn all_to_all_stress() {
    for seed in 0..24 {
        all_to_all(1000 + seed, 8, 12, true);
    }
}

#[test]
#[should_panic(expected = "overtook")]
fn the_overtaking_check_catches_a_reversed_pair() {
    // b was sent after a by the same source, yet the earlier-posted receive,
    // which could take either, got b.
    let a = Msg {
        src: 1,
        dst: 0,
        seq: 0,
        tag: 3,
        len: HEADER,
        global: 0,
    };
    let b = Msg {
        seq: 1,
        global: 1,
        ..a
    };
    let recv = |got| Posted {
        source: 1,
        tag: 3,
        req: Request::NULL,
        early: false,
        got,
    };
    check_non_overtaking(&[a, b], &[recv(Some(1)), recv(Some(0))], 0);
}
