//! Segmented buffers (`Buf::segmented`: a non-contiguous datatype's
//! scattered bytes, which the MPI C layer sends and receives without
//! packing) on a real device: every protocol the partner's table uses,
//! into and out of contiguous buffers, and one segmented on both sides.

use std::sync::{Arc, Mutex};

use ferry::{Buf, Rank, Segments, SendMode, Tag};

use super::{pattern, same_bytes, Ctx, Failure, Outcome, Verdict};
use crate::ensure;

/// What fills the holes of a strided buffer; a receive that wrote one
/// shows up as a changed byte.
const HOLE: u8 = 0x5A;

/// `block` bytes of data every `stride` bytes of memory, the memory shared
/// with the body, which reads it once the receive completed.
#[derive(Clone)]
struct Strided {
    mem: Arc<Mutex<Vec<u8>>>,
    block: usize,
    stride: usize,
    len: usize,
}

impl Strided {
    fn new(len: usize, block: usize, stride: usize) -> Strided {
        Strided {
            mem: Arc::new(Mutex::new(vec![HOLE; len.div_ceil(block) * stride])),
            block,
            stride,
            len,
        }
    }

    fn at(&self, packed: usize) -> usize {
        packed / self.block * self.stride + packed % self.block
    }

    fn buf(&self) -> Buf {
        Buf::segmented(Box::new(self.clone()))
    }

    /// The packed bytes, or the first hole byte that was written.
    fn packed(&self) -> Result<Vec<u8>, Failure> {
        let mem = self.mem.lock().map_err(|_| Failure("poisoned".into()))?;
        if let Some(i) = (0..mem.len()).find(|&i| i % self.stride >= self.block && mem[i] != HOLE) {
            return Err(Failure(format!("hole byte {i} was written")));
        }
        Ok((0..self.len).map(|p| mem[self.at(p)]).collect())
    }
}

impl Segments for Strided {
    fn len(&self) -> usize {
        self.len
    }
    fn gather(&self, offset: usize, out: &mut [u8]) {
        let mem = self.mem.lock().unwrap_or_else(|e| e.into_inner());
        for (i, o) in out.iter_mut().enumerate() {
            *o = mem[self.at(offset + i)];
        }
    }
    fn scatter(&mut self, offset: usize, data: &[u8]) {
        let mut mem = self.mem.lock().unwrap_or_else(|e| e.into_inner());
        for (i, &d) in data.iter().enumerate() {
            let at = self.at(offset + i);
            mem[at] = d;
        }
    }
}

/// Which side is segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Send,
    Recv,
    Both,
}

/// Every size class of the partner's table (eager, fragmented, RDMA), each
/// with the send buffer segmented, the receive buffer segmented, and both;
/// the receive posted before the send on even tags and after on odd ones.
pub fn segmented(ctx: &Ctx) -> Outcome {
    if let Some(p) = ctx.partner() {
        let table = ctx.world.protocol_table(p)?;
        let e = table.eager_max;
        let mut sizes = vec![
            1,
            e,
            e + 1,
            3 * table.fragment + 5,
            table.rdma_min.max(e + 1),
        ];
        sizes.push((1 << 20) + 3);
        sizes.retain(|&s| s <= 1 << 21);
        let mut tag: Tag = 2100;
        for side in [Side::Send, Side::Recv, Side::Both] {
            for &len in &sizes {
                tag += 1;
                one(ctx, p, side, len, tag)?;
            }
        }
    }
    ctx.barrier()?;
    Ok(Verdict::Pass)
}

/// One message of `len` bytes each way between the pair.
fn one(ctx: &Ctx, p: Rank, side: Side, len: usize, tag: Tag) -> Result<(), Failure> {
    let c = &ctx.comm;
    let w = format!("{side:?} {len} B tag {tag}");
    for turn in [true, false] {
        if ctx.leads() == turn {
            let data = pattern(len, ctx.rank, p, tag, 0);
            let buf = if side == Side::Recv {
                Buf::from(&data[..])
            } else {
                let s = Strided::new(len, 7, 19);
                let mut b = s.buf();
                b.write_at(0, &data);
                b
            };
            if tag % 2 == 1 {
                // Let the receive be posted first.
                c.recv::<u8>(&mut [], p, tag + 1000)?;
            }
            let mut r = c.isend_buf(buf, None, p, tag, SendMode::Standard)?;
            let done = r.wait()?;
            ensure!(done.status.error.is_none(), "{w}: send {:?}", done.status);
        } else {
            let want = pattern(len, p, ctx.rank, tag, 0);
            let dst = Strided::new(len, 5, 11);
            let buf = if side == Side::Send {
                Buf::zeroed(len)?
            } else {
                dst.buf()
            };
            let mut r = c.irecv_buf(buf, None, p, tag)?;
            if tag % 2 == 1 {
                c.send::<u8>(&[], p, tag + 1000)?;
            }
            let done = r.wait()?;
            let s = &done.status;
            ensure!(
                s.error.is_none() && s.bytes == len && s.source == p,
                "{w}: receive {s:?}"
            );
            let got = if side == Side::Send {
                done.bytes().to_vec()
            } else {
                drop(done);
                dst.packed()?
            };
            same_bytes(&got, &want, &w)?;
        }
    }
    Ok(())
}
