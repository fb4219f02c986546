//! The cell queue: Dmitry Vyukov's *intrusive MPSC node-based queue*
//! (1024cores.net, "Intrusive MPSC node-based queue", 2010), the algorithm
//! family of MPICH Nemesis's shared-memory receive queues (Buntinas, Mercier
//! and Gropp, "Design and evaluation of Nemesis, a scalable, low-latency,
//! message-passing communication subsystem", CCGrid 2006), written over
//! **indices into an arena** instead of pointers so that it can live in a
//! segment mapped at different addresses in different processes.
//!
//! # The algorithm
//! Every node has a `next` link; the queue has a `tail` that producers
//! exchange, a `head` only the consumer touches, and a `stub` node that keeps
//! the list non-empty.
//! - **push** (any number of producers): `node.next = NIL`;
//!   `prev = swap(tail, node)`; `prev.next = node`. Two stores and one
//!   exchange: wait-free.
//! - **pop** (one consumer): follow `head.next`; the last node is only handed
//!   out after the stub has been pushed behind it. Between a producer's
//!   exchange and its link store the list is briefly cut: `pop` then reports
//!   [`Pop::Busy`] ("retry soon"), never a wrong answer.
//!
//! # Sleeping (the Dekker pair)
//! [`Queue::arm`] and [`Queue::push_notify`] add the no-lost-wakeup handshake
//! of the device's passive waiting: the consumer raises its `sleeping` flag
//! and then reads `tail`; a producer exchanges `tail` and then reads the flag.
//! Both second steps are read-modify-writes (`fetch_add(0)`), which always
//! read the latest value in their location's modification order, so with
//! acquire/release orderings alone (no `SeqCst`, which loom does not model)
//! at least one side sees the other: either the consumer sees the new `tail`
//! and does not sleep, or the producer sees the flag and signals. The
//! argument is spelled out at the two call sites.
//!
//! # Corruption
//! The arena resolves an index to a link and returns `None` for an index
//! outside it; every link read from shared memory goes through it, so a
//! corrupted link becomes a [`Corrupt`] error, never an out-of-bounds access.
//!
//! The algorithm knows nothing of mmaps: [`Arena`] and [`Link`] abstract the
//! storage, so the tests run it on plain (or loom's) atomics in a `Vec`.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, Ordering};

/// The null index.
pub(crate) const NIL: u32 = u32::MAX;

/// An atomic `u32` link (`std`'s in shared memory, loom's in the model tests).
pub(crate) trait Link {
    fn load(&self, order: Ordering) -> u32;
    fn store(&self, value: u32, order: Ordering);
    fn swap(&self, value: u32, order: Ordering) -> u32;
    fn fetch_add(&self, value: u32, order: Ordering) -> u32;
}

impl Link for AtomicU32 {
    #[inline]
    fn load(&self, order: Ordering) -> u32 {
        AtomicU32::load(self, order)
    }
    #[inline]
    fn store(&self, value: u32, order: Ordering) {
        AtomicU32::store(self, value, order);
    }
    #[inline]
    fn swap(&self, value: u32, order: Ordering) -> u32 {
        AtomicU32::swap(self, value, order)
    }
    #[inline]
    fn fetch_add(&self, value: u32, order: Ordering) -> u32 {
        AtomicU32::fetch_add(self, value, order)
    }
}

#[cfg(loom)]
impl Link for loom::sync::atomic::AtomicU32 {
    fn load(&self, order: Ordering) -> u32 {
        loom::sync::atomic::AtomicU32::load(self, order)
    }
    fn store(&self, value: u32, order: Ordering) {
        loom::sync::atomic::AtomicU32::store(self, value, order);
    }
    fn swap(&self, value: u32, order: Ordering) -> u32 {
        loom::sync::atomic::AtomicU32::swap(self, value, order)
    }
    fn fetch_add(&self, value: u32, order: Ordering) -> u32 {
        loom::sync::atomic::AtomicU32::fetch_add(self, value, order)
    }
}

/// Producer, after publishing to a consumer (a push, or a fastbox slot): whether
/// the consumer sleeps and must be signalled. The producer that finds the
/// flag raised also lowers it, so one sleep costs one signal however many
/// producers arrive.
#[inline]
pub(crate) fn claim_sleeper<L: Link>(sleeping: &L) -> bool {
    // Relaxed (P2): ordered by the publishing RMW before it (the exchange in
    // `push`, or the one in `fastbox::publish`), see `Queue::arm`.
    if sleeping.load(Relaxed) == 0 {
        return false;
    }
    // AcqRel: claims the one signal of this sleep; pairs with the other
    // producers' claims and the consumer's `arm` swap.
    sleeping.swap(0, AcqRel) != 0
}

/// Where the nodes' `next` links live.
pub(crate) trait Arena {
    /// The link type.
    type Link: Link;
    /// The `next` link of `node`, or `None` if the arena has no such node.
    fn next(&self, node: u32) -> Option<&Self::Link>;
}

/// What [`Queue::pop`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pop {
    /// The oldest node; the caller owns it now.
    Item(u32),
    /// Nothing queued.
    Empty,
    /// A producer is between its exchange and its link store: a node is on
    /// its way. Retry later (do not sleep).
    Busy,
}

/// A link named a node outside the arena: the shared structure is corrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// The offending index.
    pub(crate) node: u32,
}

/// A view of one queue: its `tail` (shared by producers), its `head`
/// (consumer-private, kept next to the queue) and the index of its stub node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Queue<'a, L> {
    tail: &'a L,
    head: &'a L,
    stub: u32,
}

#[inline]
fn link<A: Arena>(arena: &A, node: u32) -> Result<&A::Link, Corrupt> {
    arena.next(node).ok_or(Corrupt { node })
}

impl<'a, L: Link> Queue<'a, L> {
    /// A view of the queue made of these words.
    #[inline]
    pub(crate) fn new(tail: &'a L, head: &'a L, stub: u32) -> Queue<'a, L> {
        Queue { tail, head, stub }
    }

    /// Sets up an empty queue. Only before the queue is shared (the segment
    /// creator, before it publishes the segment).
    pub(crate) fn init<A: Arena<Link = L>>(&self, arena: &A) -> Result<(), Corrupt> {
        link(arena, self.stub)?.store(NIL, Relaxed);
        self.tail.store(self.stub, Relaxed);
        self.head.store(self.stub, Relaxed);
        Ok(())
    }

    /// Appends `node` (any thread, any process). The caller gives up the
    /// node: it must not touch it again until it pops it from a queue.
    #[inline]
    pub(crate) fn push<A: Arena<Link = L>>(&self, arena: &A, node: u32) -> Result<(), Corrupt> {
        let next = link(arena, node)?;
        // Relaxed: ordered before the node's publication by the Release
        // half of the exchange below and by the Release link store.
        next.store(NIL, Relaxed);
        // AcqRel. Release: the next pusher's Acquire exchange (it receives
        // `node` as its `prev`) sees our `NIL` store before it links
        // `node.next`, so our store can never overwrite its link. Acquire:
        // the same, for the `NIL` store of whoever pushed `prev`.
        // Also the producer half of the Dekker pair in `push_notify`.
        let prev = self.tail.swap(node, AcqRel);
        // Release: publishes `node` (its cell contents and its NIL link);
        // pairs with the Acquire loads of `next` in `pop`.
        link(arena, prev)?.store(node, Release);
        Ok(())
    }

    /// Consumer: takes the oldest node. Only the queue's one consumer may
    /// call it.
    #[inline]
    pub(crate) fn pop<A: Arena<Link = L>>(&self, arena: &A) -> Result<Pop, Corrupt> {
        // Relaxed: `head` is consumer-private.
        let mut head = self.head.load(Relaxed);
        // Acquire: pairs with the Release link store in `push`, making the
        // node's contents visible before we hand it out.
        let mut next = link(arena, head)?.load(Acquire);
        if head == self.stub {
            if next == NIL {
                // Acquire is not needed for the answer; a tail that moved
                // means a push is half done.
                return Ok(if self.tail.load(Relaxed) == self.stub {
                    Pop::Empty
                } else {
                    Pop::Busy
                });
            }
            // Skip the stub.
            self.head.store(next, Relaxed);
            head = next;
            // Acquire: as above.
            next = link(arena, head)?.load(Acquire);
        }
        if next != NIL {
            self.head.store(next, Relaxed);
            return Ok(Pop::Item(head));
        }
        // `head` is the last linked node. Hand it out only once a node (the
        // stub) is behind it, so the list never becomes empty.
        if self.tail.load(Relaxed) != head {
            return Ok(Pop::Busy);
        }
        self.push(arena, self.stub)?;
        // Acquire: as above (the link may be the stub's or a racing
        // producer's node).
        next = link(arena, head)?.load(Acquire);
        if next != NIL {
            self.head.store(next, Relaxed);
            return Ok(Pop::Item(head));
        }
        Ok(Pop::Busy)
    }

    /// Consumer: raises `sleeping`, then checks the queue. Returns `true` if
    /// the queue is empty: from now on a [`push_notify`](Self::push_notify)
    /// reports that the consumer must be signalled, until
    /// [`disarm`](Self::disarm). Returns `false` (flag lowered again) if
    /// something is queued or on its way.
    ///
    /// The Dekker pair: the consumer writes the flag (A1) then reads `tail`
    /// (A2); a producer writes `tail` (P1, the exchange in `push`) then reads
    /// the flag (P2). A2 is a read-modify-write (`fetch_add(0)`), so it reads
    /// the latest `tail` in its modification order, and P1 is one too:
    /// - if P1 precedes A2 in that order, A2 sees the pushed node (or a
    ///   later one): not empty, no sleep;
    /// - otherwise P1 reads A2's value or that of a later exchange (A2's
    ///   release sequence), so A2 (Release) synchronizes with P1 (Acquire):
    ///   A1 happens before P2, and P2 reads the raised flag.
    ///
    /// So P2 can be a plain load, and the send path has no fence and no RMW
    /// on the flag while the consumer is awake. (Model-checked by
    /// `loom_no_lost_wakeup`, which fails when A2 is a plain load.)
    ///
    /// `quiet` is called between the two steps' end and the verdict: the
    /// device's fastbox check (A2 on every slot the consumer polls, see
    /// [`crate::fastbox`]); `false` there also means no sleep.
    pub(crate) fn arm(&self, sleeping: &L, quiet: impl FnOnce() -> bool) -> bool {
        // Relaxed would do for A1 (A2 carries the ordering); AcqRel keeps it
        // ordered before A2 in any reading.
        sleeping.swap(1, AcqRel);
        // AcqRel RMW (A2): pairs with the AcqRel exchange P1 in `push`, as
        // argued above.
        let tail = self.tail.fetch_add(0, AcqRel);
        let head = self.head.load(Relaxed);
        if head == self.stub && tail == self.stub && quiet() {
            true
        } else {
            sleeping.store(0, Relaxed);
            false
        }
    }

    /// Consumer: lowers `sleeping` (after waking, before draining).
    pub(crate) fn disarm(&self, sleeping: &L) {
        // Relaxed: a producer that still takes the raised flag sends one
        // signal too many; the device drains it (see `ShmDevice::disarm`),
        // and nothing is lost either way.
        sleeping.store(0, Relaxed);
    }

    /// Producer: [`push`](Self::push), then reports whether the consumer is
    /// asleep and must be signalled. The producer that finds the flag
    /// raised also lowers it, so one sleep costs one signal however many
    /// producers arrive.
    #[inline]
    pub(crate) fn push_notify<A: Arena<Link = L>>(
        &self,
        arena: &A,
        node: u32,
        sleeping: &L,
    ) -> Result<bool, Corrupt> {
        self.push(arena, node)?;
        // P2: ordered by the exchange in `push`, see `arm`. The flag shares
        // the cache line of `tail`, which the exchange just made ours.
        Ok(claim_sleeper(sleeping))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync;

    /// An arena of `n` plain links; queue `q` uses node `n + q` as its stub
    /// and the words `words[2q]` (tail), `words[2q + 1]` (head).
    struct TestArena {
        links: Vec<sync::AtomicU32>,
        words: Vec<sync::AtomicU32>,
        nodes: u32,
    }

    impl Arena for TestArena {
        type Link = sync::AtomicU32;
        fn next(&self, node: u32) -> Option<&sync::AtomicU32> {
            self.links.get(node as usize)
        }
    }

    impl TestArena {
        fn new(nodes: u32, queues: u32) -> TestArena {
            let arena = TestArena {
                links: (0..nodes + queues)
                    .map(|_| sync::AtomicU32::new(NIL))
                    .collect(),
                words: (0..3 * queues).map(|_| sync::AtomicU32::new(0)).collect(),
                nodes,
            };
            for q in 0..queues {
                arena.queue(q).init(&arena).unwrap();
            }
            arena
        }
        fn queue(&self, q: u32) -> Queue<'_, sync::AtomicU32> {
            let q = q as usize;
            Queue::new(
                &self.words[3 * q],
                &self.words[3 * q + 1],
                self.nodes + q as u32,
            )
        }
        fn flag(&self, q: u32) -> &sync::AtomicU32 {
            &self.words[3 * q as usize + 2]
        }
    }

    #[cfg(not(loom))]
    mod threads {
        use super::*;
        use std::sync::Arc;

        #[test]
        fn single_thread_fifo_and_empty() {
            let a = TestArena::new(8, 1);
            let q = a.queue(0);
            assert_eq!(q.pop(&a).unwrap(), Pop::Empty);
            for n in [3, 1, 4, 0] {
                q.push(&a, n).unwrap();
            }
            for n in [3, 1, 4, 0] {
                assert_eq!(q.pop(&a).unwrap(), Pop::Item(n));
            }
            assert_eq!(q.pop(&a).unwrap(), Pop::Empty);
            // Reuse after the stub went round.
            q.push(&a, 7).unwrap();
            assert_eq!(q.pop(&a).unwrap(), Pop::Item(7));
            q.push(&a, 7).unwrap();
            q.push(&a, 6).unwrap();
            assert_eq!(q.pop(&a).unwrap(), Pop::Item(7));
            assert_eq!(q.pop(&a).unwrap(), Pop::Item(6));
            assert_eq!(q.pop(&a).unwrap(), Pop::Empty);
        }

        #[test]
        fn half_done_push_is_busy_not_empty() {
            let a = TestArena::new(4, 1);
            let q = a.queue(0);
            // Simulate a producer stopped between its exchange and its link.
            a.links[2].store(NIL, Relaxed);
            let prev = a.words[0].swap(2, AcqRel);
            assert_eq!(q.pop(&a).unwrap(), Pop::Busy);
            assert!(!q.arm(a.flag(0), || true), "a half-done push is not empty");
            a.links[prev as usize].store(2, Release);
            assert_eq!(q.pop(&a).unwrap(), Pop::Item(2));
            assert!(q.arm(a.flag(0), || true));
            assert!(!q.arm(a.flag(0), || false), "a busy fastbox is not empty");
            assert!(q.arm(a.flag(0), || true));
            assert!(q.push_notify(&a, 1, a.flag(0)).unwrap(), "sleeper is seen");
            assert!(
                !q.push_notify(&a, 3, a.flag(0)).unwrap(),
                "one signal per sleep"
            );
            q.disarm(a.flag(0));
            assert!(!q.push_notify(&a, 0, a.flag(0)).unwrap());
            for n in [1, 3, 0] {
                assert_eq!(q.pop(&a).unwrap(), Pop::Item(n));
            }
        }

        #[test]
        fn corrupt_links_are_errors() {
            let a = TestArena::new(4, 1);
            let q = a.queue(0);
            assert_eq!(q.push(&a, 99), Err(Corrupt { node: 99 }));
            q.push(&a, 1).unwrap();
            a.links[1].store(1234, Release);
            assert_eq!(q.pop(&a).unwrap(), Pop::Item(1));
            assert_eq!(q.pop(&a), Err(Corrupt { node: 1234 }));
        }

        /// Four producers, each owning a pool of nodes it recycles through a
        /// free queue the consumer returns them to: FIFO per producer,
        /// exactly once, and no node is lost.
        #[test]
        fn producers_consumer_and_free_lists_under_threads() {
            const PRODUCERS: u32 = 4;
            const POOL: u32 = 8;
            const ITEMS: u32 = 20_000;
            // Queue 0 receives; queue 1 + p is producer p's free queue.
            let a = Arc::new(TestArena::new(PRODUCERS * POOL, 1 + PRODUCERS));
            // Each node carries (producer, sequence) in a side table that the
            // queue's Release/Acquire publishes.
            let payload: Arc<Vec<sync::AtomicU32>> = Arc::new(
                (0..PRODUCERS * POOL)
                    .map(|_| sync::AtomicU32::new(0))
                    .collect(),
            );
            let mut handles = Vec::new();
            for p in 0..PRODUCERS {
                let (a, payload) = (a.clone(), payload.clone());
                handles.push(std::thread::spawn(move || {
                    let mut free: Vec<u32> = (p * POOL..(p + 1) * POOL).collect();
                    for seq in 0..ITEMS {
                        let node = loop {
                            if let Some(n) = free.pop() {
                                break n;
                            }
                            match a.queue(1 + p).pop(&*a).unwrap() {
                                Pop::Item(n) => free.push(n),
                                _ => std::thread::yield_now(),
                            }
                        };
                        assert_eq!(node / POOL, p, "got a node from another pool");
                        payload[node as usize].store(p << 24 | seq, Relaxed);
                        a.queue(0).push(&*a, node).unwrap();
                    }
                }));
            }
            let mut next_seq = [0u32; PRODUCERS as usize];
            let mut got = 0;
            while got < PRODUCERS * ITEMS {
                match a.queue(0).pop(&*a).unwrap() {
                    Pop::Item(n) => {
                        let v = payload[n as usize].load(Relaxed);
                        let (p, seq) = (v >> 24, v & 0xFF_FFFF);
                        assert_eq!(p, n / POOL);
                        assert_eq!(seq, next_seq[p as usize], "FIFO per producer");
                        next_seq[p as usize] += 1;
                        got += 1;
                        a.queue(1 + p).push(&*a, n).unwrap();
                    }
                    Pop::Empty | Pop::Busy => std::hint::spin_loop(),
                }
            }
            for h in handles {
                h.join().unwrap();
            }
            assert_eq!(a.queue(0).pop(&*a).unwrap(), Pop::Empty);
        }
    }

    /// Model checks. Run with
    /// `RUSTFLAGS="--cfg loom" cargo test -p ferry-shm --release --lib loom`.
    #[cfg(loom)]
    mod loom_models {
        use super::*;
        use loom::sync::Arc;
        use loom::thread;

        fn builder() -> loom::model::Builder {
            let mut b = loom::model::Builder::new();
            if b.preemption_bound.is_none() {
                b.preemption_bound = Some(3);
            }
            b
        }

        /// Pops until an item arrives.
        fn pop_blocking(a: &TestArena, q: u32) -> u32 {
            loop {
                match a.queue(q).pop(a).unwrap() {
                    Pop::Item(n) => return n,
                    Pop::Empty | Pop::Busy => thread::yield_now(),
                }
            }
        }

        /// The payload word of each node is a Relaxed atomic: loom lets a
        /// Relaxed load return any value coherence allows, so if the queue's
        /// Release/Acquire did not order the write before the read, loom finds
        /// an execution where the assertion on the value fails.
        fn cells(n: usize) -> Arc<Vec<sync::AtomicU32>> {
            Arc::new((0..n).map(|_| sync::AtomicU32::new(0)).collect())
        }

        /// Two producers push two nodes each; the consumer receives all four,
        /// each exactly once, in FIFO order per producer, with the data each
        /// producer wrote before pushing.
        #[test]
        fn loom_two_producers_one_consumer() {
            builder().check(|| {
                let a = Arc::new(TestArena::new(4, 1));
                let data = cells(4);
                let producers: Vec<_> = (0..2u32)
                    .map(|p| {
                        let (a, data) = (a.clone(), data.clone());
                        thread::spawn(move || {
                            for k in 0..2u32 {
                                let node = 2 * p + k;
                                data[node as usize].store(100 + node, Relaxed);
                                a.queue(0).push(&*a, node).unwrap();
                            }
                        })
                    })
                    .collect();
                let mut seen = Vec::new();
                while seen.len() < 4 {
                    let n = pop_blocking(&a, 0);
                    assert_eq!(data[n as usize].load(Relaxed), 100 + n);
                    seen.push(n);
                }
                for p in producers {
                    p.join().unwrap();
                }
                for p in 0..2 {
                    let mine: Vec<_> = seen.iter().filter(|&&n| n / 2 == p).collect();
                    assert_eq!(mine, vec![&(2 * p), &(2 * p + 1)], "FIFO per producer");
                }
                assert_eq!(a.queue(0).pop(&*a).unwrap(), Pop::Empty);
            });
        }

        /// The free-list return path: a producer sends its one cell, the
        /// consumer returns it through the producer's free queue, and the
        /// producer reuses it. A missing happens-before on the way back would
        /// let the consumer's read of round 0 see the round-1 rewrite (and
        /// one in the forward direction, round 1 read as round 0). Two
        /// producers interleaving is the first model's subject.
        #[test]
        fn loom_cells_return_to_their_owner() {
            builder().check(|| {
                // Queue 0: receive queue; queue 1: the producer's free queue.
                let a = Arc::new(TestArena::new(1, 2));
                let data = cells(1);
                let producer = {
                    let (a, data) = (a.clone(), data.clone());
                    thread::spawn(move || {
                        data[0].store(10, Relaxed);
                        a.queue(0).push(&*a, 0).unwrap();
                        assert_eq!(pop_blocking(&a, 1), 0, "got its own cell back");
                        data[0].store(11, Relaxed);
                        a.queue(0).push(&*a, 0).unwrap();
                    })
                };
                assert_eq!(pop_blocking(&a, 0), 0);
                assert_eq!(data[0].load(Relaxed), 10, "round 0");
                a.queue(1).push(&*a, 0).unwrap();
                assert_eq!(pop_blocking(&a, 0), 0);
                assert_eq!(data[0].load(Relaxed), 11, "round 1");
                producer.join().unwrap();
            });
        }

        /// The sleep handshake: a consumer that decides to sleep is always
        /// signalled by the producer whose node it missed.
        #[test]
        fn loom_no_lost_wakeup() {
            builder().check(|| {
                let a = Arc::new(TestArena::new(1, 1));
                let producer = {
                    let a = a.clone();
                    thread::spawn(move || a.queue(0).push_notify(&*a, 0, a.flag(0)).unwrap())
                };
                let slept = a.queue(0).arm(a.flag(0), || true);
                let signalled = producer.join().unwrap();
                if slept {
                    assert!(signalled, "the consumer slept and nobody woke it");
                    a.queue(0).disarm(a.flag(0));
                }
                assert_eq!(pop_blocking(&a, 0), 0);
            });
        }
    }
}
