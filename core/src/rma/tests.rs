use super::*;
use crate::reduction::Datatype;

fn req(kind: Kind, disp: u64, len: u64, reply: Tag) -> Request {
    Request {
        reply,
        ..Request::new(kind, disp, len)
    }
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn data_requests_apply_and_answer() {
    let mut t = Target::default();
    let mut mem = vec![0u8; 32];
    let put = req(Kind::Put, 8, 4, 0).encode(&[1, 2, 3, 4]).unwrap();
    assert_eq!(t.serve(1, &put, &mut mem), Ok(Served::default()));
    assert_eq!(&mem[8..12], &[1, 2, 3, 4]);
    let get = req(Kind::Get, 6, 8, 5).encode(&[]).unwrap();
    let s = t.serve(1, &get, &mut mem).unwrap();
    assert_eq!(s.reply, Some((5, vec![0, 0, 1, 2, 3, 4, 0, 0])));

    // Sum of doubles, then a fetching max.
    mem[16..32].copy_from_slice(&f64s(&[1.5, -2.0]));
    let mut acc = req(Kind::Accumulate, 16, 16, 0);
    acc.dtype = Datatype::F64;
    acc.op = AccOp::Reduce(ReduceOp::Sum);
    t.serve(2, &acc.encode(&f64s(&[1.0, 1.0])).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(&mem[16..32], &f64s(&[2.5, -1.0])[..]);
    let mut fetch = acc.clone();
    fetch.kind = Kind::GetAccumulate;
    fetch.op = AccOp::Reduce(ReduceOp::Max);
    fetch.reply = 9;
    let s = t
        .serve(2, &fetch.encode(&f64s(&[0.0, 0.0])).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(s.reply, Some((9, f64s(&[2.5, -1.0]))));
    assert_eq!(&mem[16..32], &f64s(&[2.5, 0.0])[..]);
    let mut noop = fetch.clone();
    noop.op = AccOp::NoOp;
    let s = t
        .serve(2, &noop.encode(&f64s(&[7.0, 7.0])).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(s.reply, Some((9, f64s(&[2.5, 0.0]))));
    assert_eq!(&mem[16..32], &f64s(&[2.5, 0.0])[..]);

    // Compare-and-swap: no swap, then a swap.
    let mut cas = req(Kind::CompareAndSwap, 16, 8, 3);
    cas.dtype = Datatype::F64;
    let mut data = f64s(&[9.0]);
    data.extend(f64s(&[4.0]));
    let s = t.serve(0, &cas.encode(&data).unwrap(), &mut mem).unwrap();
    assert_eq!(s.reply, Some((3, f64s(&[2.5]))));
    assert_eq!(&mem[16..24], &f64s(&[2.5])[..]);
    let mut data = f64s(&[2.5]);
    data.extend(f64s(&[4.0]));
    t.serve(0, &cas.encode(&data).unwrap(), &mut mem).unwrap();
    assert_eq!(&mem[16..24], &f64s(&[4.0])[..]);
    assert_eq!(t.applied(), 7);
}

#[test]
fn bad_requests_write_nothing_and_answer_with_a_refusal() {
    let mut t = Target::default();
    let mut mem = vec![7u8; 16];
    let past = req(Kind::Put, 12, 8, 0).encode(&[0; 8]).unwrap();
    let r = t.serve(0, &past, &mut mem).unwrap_err();
    assert_eq!(r.reply, None);
    let huge = req(Kind::Get, u64::MAX, 2, 4).encode(&[]).unwrap();
    let r = t.serve(0, &huge, &mut mem).unwrap_err();
    assert_eq!(
        r.reply,
        Some((4, vec![0; 3])),
        "one byte more than expected"
    );
    let mut acc = req(Kind::Accumulate, 0, 8, 0);
    acc.dtype = Datatype::F64;
    acc.op = AccOp::Reduce(ReduceOp::Band);
    assert!(t.serve(0, &acc.encode(&[0; 8]).unwrap(), &mut mem).is_err());
    let mut cas = req(Kind::CompareAndSwap, 0, 8, 2);
    cas.dtype = Datatype::I32;
    assert!(t
        .serve(0, &cas.encode(&[0; 16]).unwrap(), &mut mem)
        .is_err());
    assert!(t.serve(0, &[1, 2, 3], &mut mem).is_err());
    assert_eq!(mem, vec![7u8; 16]);
    assert_eq!(t.applied(), 4, "refused data requests count for fences");
}

#[test]
fn scattered_requests_apply_every_range_or_none() {
    let mut t = Target::default();
    let mut mem = vec![0u8; 32];
    let ranges = [(24, 4), (0, 4), (8, 8)];
    let put = Request::scattered(Kind::Put, &ranges);
    let data: Vec<u8> = (1..=16).collect();
    t.serve(1, &put.encode_scattered(&ranges, &data).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(&mem[24..28], &[1, 2, 3, 4]);
    assert_eq!(&mem[0..4], &[5, 6, 7, 8]);
    assert_eq!(&mem[8..16], &[9, 10, 11, 12, 13, 14, 15, 16]);
    let mut get = Request::scattered(Kind::Get, &ranges);
    get.reply = 3;
    let s = t
        .serve(1, &get.encode_scattered(&ranges, &[]).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(s.reply, Some((3, data.clone())));

    // Sums of u32s over two ranges, fetching the old values.
    let ranges = [(0, 4), (24, 4)];
    let mut acc = Request::scattered(Kind::GetAccumulate, &ranges);
    acc.dtype = Datatype::U32;
    acc.op = AccOp::Reduce(ReduceOp::Sum);
    acc.reply = 4;
    let ones = [1u32.to_le_bytes(), 1u32.to_le_bytes()].concat();
    let s = t
        .serve(1, &acc.encode_scattered(&ranges, &ones).unwrap(), &mut mem)
        .unwrap();
    assert_eq!(s.reply, Some((4, [&data[4..8], &data[0..4]].concat())));
    assert_eq!(mem[0], 6);
    assert_eq!(mem[24], 2);

    // One range outside the window: nothing written, a refusal.
    let before = mem.clone();
    let ranges = [(0, 4), (30, 4)];
    let put = Request::scattered(Kind::Put, &ranges);
    assert!(t
        .serve(
            1,
            &put.encode_scattered(&ranges, &[9; 8]).unwrap(),
            &mut mem
        )
        .is_err());
    assert_eq!(mem, before);
    // A range of a partial element: the same.
    let ranges = [(0, 4), (8, 2)];
    let mut acc = Request::scattered(Kind::Accumulate, &ranges);
    acc.dtype = Datatype::U32;
    acc.op = AccOp::Reduce(ReduceOp::Sum);
    assert!(t
        .serve(
            1,
            &acc.encode_scattered(&ranges, &[1; 6]).unwrap(),
            &mut mem
        )
        .is_err());
    assert_eq!(mem, before);
}

#[test]
fn a_batch_applies_its_requests_in_order_and_counts_each() {
    let mut t = Target::default();
    let mut mem = vec![0u8; 16];
    let mut batch = vec![0u8; wire::HEADER_LEN];
    req(Kind::Put, 0, 4, 0)
        .encode_into(&mut batch, &[1, 2, 3, 4])
        .unwrap();
    let mut acc = req(Kind::Accumulate, 0, 4, 0);
    acc.dtype = Datatype::U32;
    acc.op = AccOp::Reduce(ReduceOp::Sum);
    acc.encode_into(&mut batch, &1u32.to_le_bytes()).unwrap();
    let ranges = [(8, 2), (12, 2)];
    Request::scattered(Kind::Put, &ranges)
        .encode_into(&mut batch, &[])
        .unwrap();
    // (a scattered put's data is its table and payload: rebuilt below)
    batch.truncate(batch.len() - wire::HEADER_LEN);
    let scattered = Request::scattered(Kind::Put, &ranges)
        .encode_scattered(&ranges, &[7, 7, 8, 8])
        .unwrap();
    batch.extend_from_slice(&scattered);
    Request::seal_batch(&mut batch, 3);
    assert_eq!(t.serve(1, &batch, &mut mem), Ok(Served::default()));
    assert_eq!(&mem[..4], &[2, 2, 3, 4]);
    assert_eq!(&mem[8..14], &[7, 7, 0, 0, 8, 8]);
    assert_eq!(t.applied(), 3);
    // A get inside a batch is refused (it would need a reply).
    let mut bad = vec![0u8; wire::HEADER_LEN];
    req(Kind::Get, 0, 4, 1).encode_into(&mut bad, &[]).unwrap();
    Request::seal_batch(&mut bad, 1);
    assert!(t.serve(1, &bad, &mut mem).is_err());
    // A request longer than its batch.
    let mut short = batch.clone();
    short.truncate(short.len() - 1);
    Request::seal_batch(&mut short, 3);
    assert!(t.serve(1, &short, &mut mem).is_err());
}

/// Two pieces that follow each other at 100..108 and 108..116, and one
/// apart at 200..204 (a dynamic window's attachments).
struct Pieces(Vec<(u64, Vec<u8>)>);

impl WindowMemory for Pieces {
    fn range(&mut self, start: u64, len: u64) -> Option<&mut [u8]> {
        self.0.iter_mut().find_map(|(at, b)| {
            let off = start.checked_sub(*at)?;
            b.as_mut_slice().range(off, len)
        })
    }

    fn split(&mut self, start: u64, len: u64) -> Option<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        let mut at = start;
        while at < start + len {
            let (b, p) = self
                .0
                .iter()
                .find(|(b, p)| *b <= at && at < b + p.len() as u64)?;
            let stop = (b + p.len() as u64).min(start + len);
            out.push((at, stop - at));
            at = stop;
        }
        Some(out)
    }
}

#[test]
fn a_range_over_adjacent_pieces_applies_in_each() {
    let mut t = Target::default();
    let mut mem = Pieces(vec![
        (100, vec![0; 8]),
        (108, vec![0; 8]),
        (200, vec![0; 4]),
    ]);
    let put = req(Kind::Put, 104, 8, 0)
        .encode(&[1, 2, 3, 4, 5, 6, 7, 8])
        .unwrap();
    t.serve(1, &put, &mut mem).unwrap();
    assert_eq!(mem.0[0].1, [0, 0, 0, 0, 1, 2, 3, 4]);
    assert_eq!(mem.0[1].1, [5, 6, 7, 8, 0, 0, 0, 0]);
    let get = req(Kind::Get, 100, 16, 3).encode(&[]).unwrap();
    let s = t.serve(1, &get, &mut mem).unwrap();
    assert_eq!(
        s.reply.unwrap().1,
        [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0]
    );
    // Past the second piece (a gap follows): refused, nothing written.
    let put = req(Kind::Put, 112, 8, 0).encode(&[9; 8]).unwrap();
    assert!(t.serve(1, &put, &mut mem).is_err());
    assert_eq!(mem.0[1].1, [5, 6, 7, 8, 0, 0, 0, 0]);
}

fn lock(t: &mut Target, from: Rank, tag: Tag, exclusive: bool) -> Vec<(Rank, Tag)> {
    let mut r = req(Kind::Lock, 0, 0, tag);
    r.exclusive = exclusive;
    t.serve(from, &r.encode(&[]).unwrap(), &mut Vec::new())
        .unwrap()
        .granted
}

fn unlock(t: &mut Target, from: Rank) -> Result<Served, Refused> {
    t.serve(
        from,
        &req(Kind::Unlock, 0, 0, 1).encode(&[]).unwrap(),
        &mut Vec::new(),
    )
}

#[test]
fn locks_are_granted_in_order_and_writers_do_not_starve() {
    let mut t = Target::default();
    assert_eq!(lock(&mut t, 0, 10, false), vec![(0, 10)]);
    assert_eq!(lock(&mut t, 1, 11, false), vec![(1, 11)]);
    assert_eq!(
        lock(&mut t, 2, 12, true),
        vec![],
        "exclusive waits for readers"
    );
    assert_eq!(
        lock(&mut t, 3, 13, false),
        vec![],
        "a reader waits behind a writer"
    );
    let s = unlock(&mut t, 0).unwrap();
    assert_eq!(s.reply, Some((1, vec![])));
    assert!(s.granted.is_empty());
    assert_eq!(unlock(&mut t, 1).unwrap().granted, vec![(2, 12)]);
    assert_eq!(unlock(&mut t, 2).unwrap().granted, vec![(3, 13)]);
    assert!(unlock(&mut t, 2).is_err(), "unlock without a lock");
    let mut again = req(Kind::Lock, 0, 0, 14);
    again.exclusive = true;
    assert!(t
        .serve(3, &again.encode(&[]).unwrap(), &mut Vec::new())
        .is_err());
    // A dead holder's lock is released.
    assert_eq!(lock(&mut t, 4, 15, true), vec![]);
    assert_eq!(t.forget(3), vec![(4, 15)]);
}

#[test]
fn post_and_complete_notices_are_counted_per_rank() {
    let mut t = Target::default();
    let post = req(Kind::Post, 0, 0, 0).encode(&[]).unwrap();
    let done = req(Kind::Complete, 0, 0, 0).encode(&[]).unwrap();
    assert_eq!(t.serve(3, &post, &mut Vec::new()), Ok(Served::default()));
    t.serve(3, &post, &mut Vec::new()).unwrap();
    t.serve(1, &done, &mut Vec::new()).unwrap();
    assert_eq!(
        (t.notices(3, false), t.notices(3, true), t.notices(1, true)),
        (2, 0, 1)
    );
    assert_eq!(t.applied(), 0, "notices are not data requests");
}

mod model {
    //! Random request sequences against a plain model of the window: the
    //! target's memory and replies equal the model's after every request.
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Put(u64, Vec<u8>),
        Get(u64, u64),
        AddU32(u64, u32),
        FetchAddU32(u64, u32),
        Cas(u64, u32, u32),
    }

    const SIZE: u64 = 64;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..SIZE + 8, proptest::collection::vec(any::<u8>(), 0..16))
                .prop_map(|(d, v)| Op::Put(d, v)),
            (0..SIZE + 8, 0..16u64).prop_map(|(d, l)| Op::Get(d, l)),
            (0..SIZE / 4 + 2, any::<u32>()).prop_map(|(i, v)| Op::AddU32(i * 4, v)),
            (0..SIZE / 4 + 2, any::<u32>()).prop_map(|(i, v)| Op::FetchAddU32(i * 4, v)),
            (0..SIZE / 4 + 2, 0..3u32, any::<u32>()).prop_map(|(i, c, v)| Op::Cas(i * 4, c, v)),
        ]
    }

    fn u32_at(m: &[u8], d: usize) -> u32 {
        u32::from_le_bytes(m[d..d + 4].try_into().unwrap())
    }

    proptest! {
        #[test]
        fn the_target_applies_requests_as_a_sequential_model_does(ops in proptest::collection::vec(op(), 1..60)) {
            let mut t = Target::default();
            let mut mem = vec![0u8; SIZE as usize];
            let mut model = mem.clone();
            for (i, o) in ops.iter().enumerate() {
                let tag = i as Tag + 1;
                let (req, data, want_reply): (Request, Vec<u8>, Option<Vec<u8>>) = match o {
                    Op::Put(d, v) => {
                        let fits = d + v.len() as u64 <= SIZE;
                        if fits { model[*d as usize..*d as usize + v.len()].copy_from_slice(v); }
                        (Request::new(Kind::Put, *d, v.len() as u64), v.clone(), None)
                    }
                    Op::Get(d, l) => {
                        let fits = d + l <= SIZE;
                        let r = if fits { Some(model[*d as usize..(*d + *l) as usize].to_vec()) } else { Some(vec![0; *l as usize + 1]) };
                        (Request { reply: tag, ..Request::new(Kind::Get, *d, *l) }, vec![], r)
                    }
                    Op::AddU32(d, v) | Op::FetchAddU32(d, v) => {
                        let fits = d + 4 <= SIZE;
                        let old = fits.then(|| u32_at(&model, *d as usize));
                        if let Some(o) = old { model[*d as usize..*d as usize + 4].copy_from_slice(&o.wrapping_add(*v).to_le_bytes()); }
                        let fetch = matches!(o, Op::FetchAddU32(..));
                        let mut r = Request::new(if fetch { Kind::GetAccumulate } else { Kind::Accumulate }, *d, 4);
                        r.dtype = Datatype::U32;
                        r.op = AccOp::Reduce(ReduceOp::Sum);
                        if fetch { r.reply = tag; }
                        let want = fetch.then(|| old.map_or(vec![0; 5], |o| o.to_le_bytes().to_vec()));
                        (r, v.to_le_bytes().to_vec(), want)
                    }
                    Op::Cas(d, c, v) => {
                        let fits = d + 4 <= SIZE;
                        let old = fits.then(|| u32_at(&model, *d as usize));
                        if old == Some(*c) { model[*d as usize..*d as usize + 4].copy_from_slice(&v.to_le_bytes()); }
                        let mut r = Request { reply: tag, ..Request::new(Kind::CompareAndSwap, *d, 4) };
                        r.dtype = Datatype::U32;
                        let mut data = c.to_le_bytes().to_vec();
                        data.extend(v.to_le_bytes());
                        (r, data, Some(old.map_or(vec![0; 5], |o| o.to_le_bytes().to_vec())))
                    }
                };
                let got = match t.serve(1, &req.encode(&data).unwrap(), &mut mem) {
                    Ok(s) => s.reply.map(|r| r.1),
                    Err(r) => r.reply.map(|r| r.1),
                };
                prop_assert_eq!(got, want_reply, "request {}: {:?}", i, o);
                prop_assert_eq!(&mem, &model, "request {}: {:?}", i, o);
            }
            prop_assert_eq!(t.applied(), ops.len() as u64);
        }
    }
}
