//! Property test of the matching queues against a naive reference model.
//!
//! The model keeps plain `Vec`s in sequence order and scans them linearly,
//! which is obviously MPI's definition. Random operation sequences (post,
//! arrive, receive, probe, matched probe, cancel, message removal, peer
//! failure) run against both; every result must agree: which receive got
//! which message, in which order, and what probes saw.
//!
//! Independently of the model, every match is checked against MPI's
//! non-overtaking rule: when a receive gets message `m`, no earlier-sent
//! message from the same source on the same context that the receive also
//! matches may still be waiting.
//!
//! Small ranges of context, source and tag make collisions (and so ordering
//! decisions) frequent.

use ferry_core::matching::{PostedKey, PostedQueue, UnexpectedKey, UnexpectedQueue};
use ferry_core::{Envelope, Pattern, Rank};
use proptest::prelude::*;

const CONTEXTS: u32 = 2;
const SOURCES: Rank = 3;
const TAGS: i32 = 3;

/// The unexpected-queue payload: a message id (ids grow in send order), and
/// a counter that `get_mut` bumps, so mutation through keys is checked too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Msg {
    id: u64,
    touched: u32,
}

#[derive(Clone, Debug)]
enum Op {
    /// Raw `post`, without looking at unexpected messages first.
    Post(Pattern),
    /// MPI receive: `take` from the unexpected queue, else `post`.
    Recv(Pattern),
    /// MPI arrival: `take_match` a posted receive, else `push`.
    Arrive(Envelope),
    /// `peek`.
    Probe(Pattern),
    /// `take` without posting.
    MProbe(Pattern),
    /// `remove` of a receive ever posted, by index (may be gone already).
    Cancel(usize),
    /// `remove` of a message ever queued, by index (may be gone already).
    RemoveMsg(usize),
    /// `get_mut` of a message ever queued, by index.
    Touch(usize),
    /// `remove_where` on both queues for everything tied to one source.
    FailPeer(Rank),
}

/// Plain vectors in sequence order; every query is a linear scan.
#[derive(Default)]
struct Model {
    /// (receive id, pattern) in posting order.
    posted: Vec<(u32, Pattern)>,
    /// (message, envelope) in arrival order.
    unexpected: Vec<(Msg, Envelope)>,
}

impl Model {
    fn take_match(&mut self, env: &Envelope) -> Option<u32> {
        let i = self.posted.iter().position(|(_, p)| p.matches(env))?;
        Some(self.posted.remove(i).0)
    }

    fn find(&self, pattern: &Pattern) -> Option<usize> {
        self.unexpected.iter().position(|(_, e)| pattern.matches(e))
    }

    fn take(&mut self, pattern: &Pattern) -> Option<(Envelope, Msg)> {
        let (m, e) = self.unexpected.remove(self.find(pattern)?);
        Some((e, m))
    }

    fn cancel(&mut self, recv: u32) -> Option<u32> {
        let i = self.posted.iter().position(|(r, _)| *r == recv)?;
        Some(self.posted.remove(i).0)
    }

    fn remove_msg(&mut self, id: u64) -> Option<(Envelope, Msg)> {
        let i = self.unexpected.iter().position(|(m, _)| m.id == id)?;
        let (m, e) = self.unexpected.remove(i);
        Some((e, m))
    }

    fn touch(&mut self, id: u64) -> Option<Msg> {
        let (m, _) = self.unexpected.iter_mut().find(|(m, _)| m.id == id)?;
        m.touched += 1;
        Some(*m)
    }

    /// MPI's standing invariant: no posted receive matches a waiting message
    /// (otherwise one of them should have taken the other).
    fn assert_settled(&self) {
        for (r, p) in &self.posted {
            for (m, e) in &self.unexpected {
                assert!(
                    !p.matches(e),
                    "receive {r} {p:?} sits beside matching message {m:?}"
                );
            }
        }
    }
}

/// Non-overtaking: a receive with `pattern` got message `id` with envelope
/// `env`; `waiting` is what was queued before the match.
fn assert_not_overtaking(pattern: &Pattern, env: &Envelope, id: u64, waiting: &[(Msg, Envelope)]) {
    for (m, e) in waiting {
        let same_stream = e.context == env.context && e.source == env.source;
        assert!(
            !(same_stream && m.id < id && pattern.matches(e)),
            "message {id} {env:?} overtook earlier message {} {e:?} for {pattern:?}",
            m.id
        );
    }
}

struct Harness {
    posted: PostedQueue<u32>,
    unexpected: UnexpectedQueue<Msg>,
    model: Model,
    /// MPI mode: receives are posted only after `take` failed, so the model
    /// invariant holds and arrivals must respect non-overtaking too.
    mpi: bool,
    recv_keys: Vec<(u32, PostedKey)>,
    msg_keys: Vec<(u64, UnexpectedKey)>,
    next_recv: u32,
    next_msg: u64,
}

impl Harness {
    fn new(mpi: bool) -> Self {
        Harness {
            posted: PostedQueue::new(),
            unexpected: UnexpectedQueue::new(),
            model: Model::default(),
            mpi,
            recv_keys: Vec::new(),
            msg_keys: Vec::new(),
            next_recv: 0,
            next_msg: 0,
        }
    }

    fn post(&mut self, pattern: Pattern) {
        let id = self.next_recv;
        self.next_recv += 1;
        let key = self.posted.post(pattern, id);
        self.model.posted.push((id, pattern));
        self.recv_keys.push((id, key));
    }

    /// Checks one `take` (receive or matched probe) against the model.
    fn take(&mut self, pattern: &Pattern) -> bool {
        let waiting = self.model.unexpected.clone();
        let got = self.unexpected.take(pattern);
        let want = self.model.take(pattern);
        assert_eq!(got, want, "take {pattern:?}");
        if let Some((env, msg)) = got {
            assert!(pattern.matches(&env));
            assert_not_overtaking(pattern, &env, msg.id, &waiting);
        }
        got.is_some()
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Post(pattern) => self.post(pattern),
            Op::Recv(pattern) => {
                if !self.take(&pattern) {
                    self.post(pattern);
                }
            }
            Op::MProbe(pattern) => {
                self.take(&pattern);
            }
            Op::Arrive(env) => {
                let msg = Msg {
                    id: self.next_msg,
                    touched: 0,
                };
                self.next_msg += 1;
                let got = self.posted.take_match(&env);
                let pattern_of =
                    |r: u32| self.model.posted.iter().find(|(id, _)| *id == r).unwrap().1;
                let matched_pattern = got.map(pattern_of);
                let want = self.model.take_match(&env);
                assert_eq!(got, want, "arrival of {env:?}");
                match matched_pattern {
                    Some(pattern) => {
                        assert!(pattern.matches(&env));
                        if self.mpi {
                            assert_not_overtaking(&pattern, &env, msg.id, &self.model.unexpected);
                        }
                    }
                    None => {
                        let key = self.unexpected.push(env, msg);
                        self.model.unexpected.push((msg, env));
                        self.msg_keys.push((msg.id, key));
                    }
                }
            }
            Op::Probe(pattern) => {
                let got = self.unexpected.peek(&pattern).map(|(k, e, m)| (k, e, *m));
                let want = self.model.find(&pattern).map(|i| self.model.unexpected[i]);
                assert_eq!(got.map(|(_, e, m)| (m, e)), want, "probe {pattern:?}");
                if let Some((key, env, msg)) = got {
                    let known = self
                        .msg_keys
                        .iter()
                        .find(|(id, _)| *id == msg.id)
                        .map(|k| k.1);
                    assert_eq!(Some(key), known, "probe returns the message's own key");
                    assert_not_overtaking(&pattern, &env, msg.id, &self.model.unexpected);
                }
            }
            Op::Cancel(i) => {
                if let Some(&(id, key)) = self.recv_keys.get(i % self.recv_keys.len().max(1)) {
                    assert_eq!(
                        self.posted.remove(key),
                        self.model.cancel(id),
                        "cancel {id}"
                    );
                }
            }
            Op::RemoveMsg(i) => {
                if let Some(&(id, key)) = self.msg_keys.get(i % self.msg_keys.len().max(1)) {
                    assert_eq!(
                        self.unexpected.remove(key),
                        self.model.remove_msg(id),
                        "remove {id}"
                    );
                }
            }
            Op::Touch(i) => {
                if let Some(&(id, key)) = self.msg_keys.get(i % self.msg_keys.len().max(1)) {
                    let got = self.unexpected.get_mut(key).map(|m| {
                        m.touched += 1;
                        *m
                    });
                    assert_eq!(got, self.model.touch(id), "get_mut {id}");
                }
            }
            Op::FailPeer(source) => {
                let got = self.posted.remove_where(|p, _| p.source == Some(source));
                let want: Vec<u32> = self
                    .model
                    .posted
                    .iter()
                    .filter(|(_, p)| p.source == Some(source))
                    .map(|(r, _)| *r)
                    .collect();
                self.model.posted.retain(|(_, p)| p.source != Some(source));
                assert_eq!(got, want, "posted remove_where source {source}");

                let got = self.unexpected.remove_where(|e, _| e.source == source);
                let want: Vec<(Envelope, Msg)> = self
                    .model
                    .unexpected
                    .iter()
                    .filter(|(_, e)| e.source == source)
                    .map(|(m, e)| (*e, *m))
                    .collect();
                self.model.unexpected.retain(|(_, e)| e.source != source);
                assert_eq!(got, want, "unexpected remove_where source {source}");
            }
        }
        self.check_depths();
        if self.mpi {
            self.model.assert_settled();
        }
    }

    fn check_depths(&self) {
        assert_eq!(self.posted.len(), self.model.posted.len());
        assert_eq!(self.posted.stats().depth, self.model.posted.len());
        assert_eq!(self.posted.is_empty(), self.model.posted.is_empty());
        assert_eq!(self.unexpected.len(), self.model.unexpected.len());
        assert_eq!(self.unexpected.stats().depth, self.model.unexpected.len());
        assert_eq!(self.unexpected.is_empty(), self.model.unexpected.is_empty());
    }

    /// Drains both queues through wildcards and compares the leftovers, so
    /// that state never observed by an operation is checked as well.
    fn drain(&mut self) {
        for context in 0..CONTEXTS {
            let all = Pattern {
                context,
                source: None,
                tag: None,
            };
            while self.take(&all) {}
            for source in 0..SOURCES {
                for tag in 0..TAGS {
                    let env = Envelope {
                        source,
                        tag,
                        context,
                    };
                    while let Some(r) = self.posted.take_match(&env) {
                        assert_eq!(Some(r), self.model.take_match(&env), "drain {env:?}");
                    }
                    assert_eq!(self.model.take_match(&env), None, "drain {env:?}");
                }
            }
        }
        self.check_depths();
        assert!(self.posted.is_empty() && self.unexpected.is_empty());
    }
}

fn envelope() -> impl Strategy<Value = Envelope> {
    (0..CONTEXTS, 0..SOURCES, 0..TAGS).prop_map(|(context, source, tag)| Envelope {
        source,
        tag,
        context,
    })
}

/// Exact about half the time; each wildcard class about one time in six.
fn pattern() -> impl Strategy<Value = Pattern> {
    (
        0..CONTEXTS,
        prop_oneof![2 => (0..SOURCES).prop_map(Some), 1 => Just(None)],
        prop_oneof![2 => (0..TAGS).prop_map(Some), 1 => Just(None)],
    )
        .prop_map(|(context, source, tag)| Pattern {
            context,
            source,
            tag,
        })
}

fn op(raw_posts: bool) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => pattern().prop_map(Op::Post),
        4 => pattern().prop_map(Op::Recv),
        6 => envelope().prop_map(Op::Arrive),
        1 => pattern().prop_map(Op::Probe),
        1 => pattern().prop_map(Op::MProbe),
        2 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::RemoveMsg),
        1 => any::<usize>().prop_map(Op::Touch),
        1 => (0..SOURCES).prop_map(Op::FailPeer),
    ]
    .prop_map(move |op| match op {
        // The engine never posts blindly.
        Op::Post(p) if !raw_posts => Op::Recv(p),
        op => op,
    })
}

/// Receives posted faster than messages arrive, so the posted queue grows
/// past the shallow list (64) into the lanes and drains back, with cancels
/// of receives posted on either side of the spill.
fn op_deep() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => pattern().prop_map(Op::Recv),
        3 => envelope().prop_map(Op::Arrive),
        3 => any::<usize>().prop_map(Op::Cancel),
        1 => any::<usize>().prop_map(Op::RemoveMsg),
        1 => pattern().prop_map(Op::Probe),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Deep posted queues: the list spills into the lanes, keys from both
    /// sides of the spill cancel, and the queue drains back to the list.
    #[test]
    fn matching_model_deep_posted_queue(ops in prop::collection::vec(op_deep(), 150..400)) {
        let mut h = Harness::new(true);
        for op in &ops {
            h.apply(op);
        }
        h.drain();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// The engine's discipline: receives look at unexpected messages before
    /// posting, arrivals look at posted receives before queueing. Every
    /// match, arrivals included, must respect non-overtaking.
    #[test]
    fn matching_model_mpi_engine(ops in prop::collection::vec(op(false), 0..60)) {
        let mut h = Harness::new(true);
        for op in &ops {
            h.apply(op);
        }
        h.drain();
    }

    /// Raw queue use, with `post` that ignores waiting messages: the queues
    /// alone must still agree with the model, and every `take` and `peek`
    /// must respect non-overtaking.
    #[test]
    fn matching_model_raw_queues(ops in prop::collection::vec(op(true), 0..60)) {
        let mut h = Harness::new(false);
        for op in &ops {
            h.apply(op);
        }
        h.drain();
    }
}
