//! Complexity tests: with 100,000 queued entries, a match costs a small
//! constant number of lane-entry inspections, whatever the order.
//!
//! They count [`MatchStats::entries_examined`] instead of timing, so they are
//! deterministic and meaningful in debug builds. Run with `--nocapture` to
//! see the measured averages.

use std::collections::BTreeSet;

use super::{MatchStats, PostedQueue, UnexpectedQueue};
use crate::envelope::{Envelope, Pattern};

const N: usize = 100_000;
const CTX: u32 = 1;
const SOURCES: i32 = 16;
/// The bound the design promises: at most four lane heads per search, plus
/// amortized dead-entry skips.
const MAX_AVERAGE: f64 = 4.0;

/// splitmix64: a reproducible shuffle without a dependency.
fn shuffled(n: usize, mut seed: u64) -> Vec<usize> {
    let mut next = move || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    v
}

/// Message `i` of the distinct-tag workloads.
fn env_of(i: usize) -> Envelope {
    Envelope {
        source: i as i32 % SOURCES,
        tag: i as i32,
        context: CTX,
    }
}

fn exact_of(i: usize) -> Pattern {
    let e = env_of(i);
    Pattern {
        context: CTX,
        source: Some(e.source),
        tag: Some(e.tag),
    }
}

fn average(label: &str, stats: MatchStats) -> f64 {
    let avg = stats.entries_examined as f64 / stats.searches as f64;
    eprintln!(
        "{label}: {} searches, {} entries examined, {avg:.3} per search",
        stats.searches, stats.entries_examined
    );
    assert!(avg <= MAX_AVERAGE, "{label}: {avg:.3} entries per search");
    avg
}

fn posted_distinct_tags(wildcards: bool) -> f64 {
    let mut q = PostedQueue::new();
    for i in 0..N {
        q.post(exact_of(i), i);
    }
    if wildcards {
        // Posted last, so they lose every comparison and every arrival has
        // to look at their lanes as well as its exact lane.
        q.post(
            Pattern {
                context: CTX,
                source: None,
                tag: Some(7),
            },
            usize::MAX,
        );
        q.post(
            Pattern {
                context: CTX,
                source: Some(3),
                tag: None,
            },
            usize::MAX,
        );
        q.post(
            Pattern {
                context: CTX,
                source: None,
                tag: None,
            },
            usize::MAX,
        );
    }
    for i in shuffled(N, 1) {
        assert_eq!(q.take_match(&env_of(i)), Some(i));
    }
    assert_eq!(q.len(), if wildcards { 3 } else { 0 });
    average(
        &format!("posted, distinct tags, wildcards={wildcards}"),
        q.stats(),
    )
}

#[test]
fn matching_posted_distinct_tags_random_order() {
    assert!(
        posted_distinct_tags(false) <= 1.0,
        "no wildcard: the exact lane alone"
    );
    posted_distinct_tags(true);
}

fn unexpected_distinct_tags(wildcards: bool) -> f64 {
    let mut q = UnexpectedQueue::new();
    for i in 0..N {
        q.push(env_of(i), i);
    }
    // What is left, globally and per source, to check wildcard answers.
    let mut left: BTreeSet<usize> = (0..N).collect();
    let mut left_by_source: Vec<BTreeSet<usize>> = (0..SOURCES)
        .map(|s| (0..N).filter(|i| env_of(*i).source == s).collect())
        .collect();
    let forget = |i: usize, left: &mut BTreeSet<usize>, by_source: &mut [BTreeSet<usize>]| {
        assert!(left.remove(&i));
        assert!(by_source[env_of(i).source as usize].remove(&i));
    };
    for (step, i) in shuffled(N, 2).into_iter().enumerate() {
        if !left.contains(&i) {
            continue; // a wildcard took it already
        }
        if wildcards && step % 300 == 299 {
            // A wildcard receive of each class, interleaved. Each may take
            // `i` itself; the next one then has nothing left to check.
            let first = *left.first().unwrap();
            let any_both = Pattern {
                context: CTX,
                source: None,
                tag: None,
            };
            assert_eq!(q.take(&any_both).map(|m| m.1), Some(first));
            forget(first, &mut left, &mut left_by_source);
            if !left.contains(&i) {
                continue;
            }
            let source = env_of(i).source;
            let any_tag = Pattern {
                context: CTX,
                source: Some(source),
                tag: None,
            };
            let first = *left_by_source[source as usize].first().unwrap();
            assert_eq!(q.take(&any_tag).map(|m| m.1), Some(first));
            forget(first, &mut left, &mut left_by_source);
            if !left.contains(&i) {
                continue;
            }
            let any_source = Pattern {
                context: CTX,
                source: None,
                tag: Some(i as i32),
            };
            assert_eq!(q.take(&any_source).map(|m| m.1), Some(i));
        } else {
            assert_eq!(q.take(&exact_of(i)), Some((env_of(i), i)));
        }
        forget(i, &mut left, &mut left_by_source);
    }
    assert!(q.is_empty());
    assert_eq!(q.index_mut().lane_count(), 0);
    let compacted = q.index_mut().compacted();
    assert!(
        compacted <= 3 * N as u64,
        "compaction dropped {compacted} entries"
    );
    average(
        &format!("unexpected, distinct tags, wildcards={wildcards}"),
        q.stats(),
    )
}

#[test]
fn matching_unexpected_distinct_tags_random_order() {
    assert!(
        unexpected_distinct_tags(false) <= 1.0,
        "an exact take reads one lane head"
    );
    unexpected_distinct_tags(true);
}

#[test]
fn matching_posted_one_lane_fifo() {
    let env = Envelope {
        source: 2,
        tag: 9,
        context: CTX,
    };
    let pattern = Pattern {
        context: CTX,
        source: Some(2),
        tag: Some(9),
    };
    for wildcards in [false, true] {
        let mut q = PostedQueue::new();
        for i in 0..N {
            q.post(pattern, i);
        }
        if wildcards {
            q.post(
                Pattern {
                    context: CTX,
                    source: None,
                    tag: Some(9),
                },
                usize::MAX,
            );
            q.post(
                Pattern {
                    context: CTX,
                    source: Some(2),
                    tag: None,
                },
                usize::MAX,
            );
            q.post(
                Pattern {
                    context: CTX,
                    source: None,
                    tag: None,
                },
                usize::MAX,
            );
        }
        for i in 0..N {
            assert_eq!(q.take_match(&env), Some(i));
        }
        average(
            &format!("posted, one lane FIFO, wildcards={wildcards}"),
            q.stats(),
        );
    }
}

#[test]
fn matching_unexpected_one_lane_fifo() {
    let env = Envelope {
        source: 2,
        tag: 9,
        context: CTX,
    };
    let patterns = [
        Pattern {
            context: CTX,
            source: Some(2),
            tag: Some(9),
        },
        Pattern {
            context: CTX,
            source: None,
            tag: Some(9),
        },
        Pattern {
            context: CTX,
            source: Some(2),
            tag: None,
        },
        Pattern {
            context: CTX,
            source: None,
            tag: None,
        },
    ];
    for mixed in [false, true] {
        let mut q = UnexpectedQueue::new();
        for i in 0..N {
            q.push(env, i);
        }
        for i in 0..N {
            let pattern = if mixed { patterns[i % 4] } else { patterns[0] };
            assert_eq!(q.take(&pattern), Some((env, i)));
        }
        assert_eq!(
            q.index_mut().compacted(),
            0,
            "in-order traffic never compacts"
        );
        assert_eq!(q.index_mut().lane_count(), 0);
        let avg = average(
            &format!("unexpected, one lane FIFO, mixed patterns={mixed}"),
            q.stats(),
        );
        assert!(
            avg <= 1.0,
            "dead copies are dropped at once when they are heads"
        );
    }
}
