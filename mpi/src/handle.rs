//! Handle values and the per-kind tables that user objects live in.
//!
//! # Encoding
//! Every MPI handle of the ABI is a pointer-sized value (`typedef struct
//! MPI_ABI_Comm* MPI_Comm`). The standard fixes the predefined handles as
//! small integers below `0x1000` (`MPI_COMM_WORLD` is `0x101`, `MPI_INT` is
//! `0x209`, ...). Objects the program creates (communicators, requests,
//! error handlers, infos, datatypes, groups, ops, messages) are entries of
//! a [`Table`] per kind, and their
//! handle packs the entry's slot, its generation and its kind:
//!
//! ```text
//!  63      49 48 47         32 31          8 7      0
//! +----------+--+-------------+-------------+--------+
//! |    0     |1 | generation  |  slot + 1   |  kind  |
//! +----------+--+-------------+-------------+--------+
//! ```
//!
//! - bit 48 ([`USER_BIT`]) is always set, so a user handle is at least
//!   2^48: it can never equal a predefined handle, `NULL` (0) or a small
//!   integer a program passes by mistake;
//! - `kind` ([`Kind`]) says which table the handle belongs to, so a request
//!   passed where a communicator is expected is `MPI_ERR_COMM`, not a
//!   lookup in the wrong table;
//! - `generation` (16 bits) changes each time a slot is reused, so a handle
//!   kept after `MPI_Comm_free` / completion is detected as stale (unless the
//!   same slot was reused 65536 times in between);
//! - `slot + 1` (24 bits) bounds each table to 16 Mi live objects.
//!
//! The values are never dereferenced: a handle is only ever decoded.

/// Set in every user handle; see the module docs.
pub const USER_BIT: usize = 1 << 48;

const KIND_BITS: u32 = 8;
const SLOT_BITS: u32 = 24;
const SLOT_SHIFT: u32 = KIND_BITS;
const GEN_SHIFT: u32 = KIND_BITS + SLOT_BITS;
const SLOT_MASK: usize = (1 << SLOT_BITS) - 1;
const GEN_MASK: usize = 0xffff;
/// Slots per table: `slot + 1` must fit in 24 bits.
pub const MAX_SLOTS: usize = SLOT_MASK;

/// Which table a user handle belongs to (the low byte of the handle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `MPI_Comm`.
    Comm = 0xc1,
    /// `MPI_Request`.
    Request = 0xc2,
    /// `MPI_Errhandler`.
    Errhandler = 0xc3,
    /// `MPI_Info`.
    Info = 0xc4,
    /// `MPI_Datatype` (derived).
    Datatype = 0xc5,
    /// `MPI_Group`.
    Group = 0xc6,
    /// `MPI_Op` (user ops).
    Op = 0xc7,
    /// `MPI_Message`.
    Message = 0xc8,
    /// `MPI_Session`.
    Session = 0xc9,
    /// `MPI_Win`.
    Win = 0xca,
}

/// Why a handle did not name a live object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadHandle {
    /// Not a user handle of this kind at all.
    Foreign,
    /// A handle of this kind whose object was freed.
    Stale,
    /// The object is lent out by another call in progress (two threads
    /// completing the same request at once).
    Busy,
}

/// Why a slot that holds no live object refused to give one.
fn refusal<T>(slot: &Slot<T>) -> BadHandle {
    if matches!(slot, Slot::Lent) {
        BadHandle::Busy
    } else {
        BadHandle::Stale
    }
}

fn encode(kind: Kind, slot: usize, generation: u16) -> usize {
    USER_BIT | (usize::from(generation) << GEN_SHIFT) | ((slot + 1) << SLOT_SHIFT) | kind as usize
}

/// The slot and generation of `handle` if it is a user handle of `kind`.
fn decode(kind: Kind, handle: usize) -> Option<(usize, u16)> {
    let high = handle & !(USER_BIT | (GEN_MASK << GEN_SHIFT) | (SLOT_MASK << SLOT_SHIFT) | 0xff);
    if high != 0 || handle & USER_BIT == 0 || handle & 0xff != kind as usize {
        return None;
    }
    let slot1 = (handle >> SLOT_SHIFT) & SLOT_MASK;
    let generation = ((handle >> GEN_SHIFT) & GEN_MASK) as u16;
    slot1.checked_sub(1).map(|slot| (slot, generation))
}

/// Handles below this are predefined (or null): the ABI's small integers.
pub const PREDEFINED_LIMIT: usize = 0x1000;

/// The `int` form of a handle of `kind` (`MPI_X_toint`, which is what
/// `MPI_X_c2f` names in the MPI 5.0 ABI): a predefined handle's own
/// value; a user handle's slot + 1, negated (at most 2^24: every `int`
/// holds it), whose generation the table gives back on the way in
/// ([`Table::from_int`]); `None` for what is neither.
pub fn to_int(kind: Kind, handle: usize) -> Option<i32> {
    if handle < PREDEFINED_LIMIT {
        return Some(handle as i32);
    }
    let (slot, _) = decode(kind, handle)?;
    Some(-((slot + 1) as i32))
}

/// True if `handle` looks like a user handle of any kind (used to tell a
/// wrong-kind handle from a predefined one in messages).
pub fn is_user(handle: usize) -> bool {
    handle & USER_BIT != 0
}

#[derive(Debug)]
enum Slot<T> {
    Free,
    Live(T),
    /// Taken out by a call that will put it back or release it.
    Lent,
}

/// A slab of objects of one kind, addressed by encoded handles. Freed slots
/// are reused (last freed, first reused), so a steady state of
/// create/free allocates nothing.
#[derive(Debug)]
pub struct Table<T> {
    kind: Kind,
    slots: Vec<(u16, Slot<T>)>,
    free: Vec<usize>,
    live: usize,
}

impl<T> Table<T> {
    /// An empty table of `kind`.
    pub const fn new(kind: Kind) -> Table<T> {
        Table {
            kind,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Live (or lent) objects.
    pub fn len(&self) -> usize {
        self.live
    }

    /// True if the table holds nothing.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The handle an `int` form ([`to_int`]) names now: a predefined
    /// value as it is; a slot's live object's handle, or for a slot that
    /// holds none a handle every lookup finds stale (generation 0, never
    /// given out).
    pub fn from_int(&self, i: i32) -> usize {
        if i >= 0 {
            return i as usize;
        }
        let slot = (-i64::from(i) - 1) as usize;
        match self.slots.get(slot) {
            Some((g, Slot::Live(_) | Slot::Lent)) => encode(self.kind, slot, *g),
            _ => encode(self.kind, slot.min(SLOT_MASK - 1), 0),
        }
    }

    /// Stores `value`; `None` if the table is full ([`MAX_SLOTS`]).
    pub fn insert(&mut self, value: T) -> Option<usize> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                if self.slots.len() >= MAX_SLOTS {
                    return None;
                }
                self.slots.push((1, Slot::Free));
                self.slots.len() - 1
            }
        };
        let entry = &mut self.slots[slot];
        entry.1 = Slot::Live(value);
        self.live += 1;
        Some(encode(self.kind, slot, entry.0))
    }

    fn slot(&self, handle: usize) -> Result<usize, BadHandle> {
        let (slot, generation) = decode(self.kind, handle).ok_or(BadHandle::Foreign)?;
        match self.slots.get(slot) {
            Some((g, _)) if *g == generation => Ok(slot),
            _ => Err(BadHandle::Stale),
        }
    }

    /// The object `handle` names.
    ///
    /// # Errors
    /// A handle of another kind, a stale handle, or a lent object.
    pub fn get(&self, handle: usize) -> Result<&T, BadHandle> {
        match &self.slots[self.slot(handle)?].1 {
            Slot::Live(v) => Ok(v),
            Slot::Lent => Err(BadHandle::Busy),
            Slot::Free => Err(BadHandle::Stale),
        }
    }

    /// The object `handle` names, mutably.
    ///
    /// # Errors
    /// As for [`Table::get`].
    pub fn get_mut(&mut self, handle: usize) -> Result<&mut T, BadHandle> {
        let slot = self.slot(handle)?;
        match &mut self.slots[slot].1 {
            Slot::Live(v) => Ok(v),
            Slot::Lent => Err(BadHandle::Busy),
            Slot::Free => Err(BadHandle::Stale),
        }
    }

    /// Removes the object; `handle` is stale from now on.
    ///
    /// # Errors
    /// As for [`Table::get`].
    pub fn remove(&mut self, handle: usize) -> Result<T, BadHandle> {
        let slot = self.slot(handle)?;
        let entry = &mut self.slots[slot];
        match std::mem::replace(&mut entry.1, Slot::Free) {
            Slot::Live(value) => {
                self.retire(slot);
                Ok(value)
            }
            other => {
                let err = refusal(&other);
                entry.1 = other;
                Err(err)
            }
        }
    }

    /// Takes the object out but keeps its slot (and handle) reserved, for a
    /// call that completes it without holding the table's lock. Hand it back
    /// with [`Table::restore`] or end it with [`Table::release`].
    ///
    /// # Errors
    /// As for [`Table::get`].
    pub fn lend(&mut self, handle: usize) -> Result<T, BadHandle> {
        let slot = self.slot(handle)?;
        match std::mem::replace(&mut self.slots[slot].1, Slot::Lent) {
            Slot::Live(v) => Ok(v),
            other => {
                let err = refusal(&other);
                self.slots[slot].1 = other;
                Err(err)
            }
        }
    }

    /// Puts a lent object back under its handle. Does nothing for a handle
    /// that is not lent (which `lend` would not have returned).
    pub fn restore(&mut self, handle: usize, value: T) {
        if let Ok(slot) = self.slot(handle) {
            if matches!(self.slots[slot].1, Slot::Lent) {
                self.slots[slot].1 = Slot::Live(value);
            }
        }
    }

    /// Frees a lent slot: its handle is stale from now on.
    pub fn release(&mut self, handle: usize) {
        if let Ok(slot) = self.slot(handle) {
            if matches!(self.slots[slot].1, Slot::Lent) {
                self.slots[slot].1 = Slot::Free;
                self.retire(slot);
            }
        }
    }

    /// Puts a just-emptied slot on the free list under a new generation.
    fn retire(&mut self, slot: usize) {
        let entry = &mut self.slots[slot];
        // Generation 0 is skipped so that no handle has an all-zero middle
        // (purely cosmetic: bit 48 already tells them apart).
        entry.0 = entry.0.wrapping_add(1).max(1);
        self.free.push(slot);
        self.live -= 1;
    }

    /// Every live object, with its handle.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, (g, s))| match s {
                Slot::Live(v) => Some((encode(self.kind, i, *g), v)),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_handles_never_collide_with_predefined_values() {
        let mut t = Table::new(Kind::Comm);
        for i in 0..1000 {
            let h = t.insert(i).unwrap();
            assert!(h >= USER_BIT, "{h:#x}");
            assert!(is_user(h));
        }
        for predefined in [
            0usize,
            0x100,
            0x101,
            0x102,
            0x180,
            0x209,
            0xfff,
            1,
            usize::MAX,
        ] {
            assert_eq!(
                t.get(predefined),
                Err(BadHandle::Foreign),
                "{predefined:#x}"
            );
        }
    }

    #[test]
    fn a_handle_of_another_kind_is_foreign() {
        let mut comms = Table::new(Kind::Comm);
        let mut reqs = Table::new(Kind::Request);
        let c = comms.insert("c").unwrap();
        let r = reqs.insert("r").unwrap();
        assert_eq!(comms.get(r), Err(BadHandle::Foreign));
        assert_eq!(reqs.get(c), Err(BadHandle::Foreign));
        assert_eq!(comms.get(c), Ok(&"c"));
    }

    #[test]
    fn freed_handles_are_stale_even_when_the_slot_is_reused() {
        let mut t = Table::new(Kind::Request);
        let a = t.insert(1).unwrap();
        assert_eq!(t.remove(a), Ok(1));
        assert_eq!(t.get(a), Err(BadHandle::Stale));
        assert_eq!(t.remove(a), Err(BadHandle::Stale));
        let b = t.insert(2).unwrap();
        assert_ne!(a, b, "the reused slot has a new generation");
        assert_eq!(t.get(a), Err(BadHandle::Stale));
        assert_eq!(t.get(b), Ok(&2));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn lent_objects_are_busy_until_restored_or_released() {
        let mut t = Table::new(Kind::Request);
        let h = t.insert(String::from("x")).unwrap();
        let v = t.lend(h).unwrap();
        assert_eq!(t.get(h), Err(BadHandle::Busy));
        assert_eq!(t.lend(h), Err(BadHandle::Busy));
        t.restore(h, v);
        assert_eq!(t.get(h).map(String::as_str), Ok("x"));
        let _ = t.lend(h).unwrap();
        t.release(h);
        assert_eq!(t.get(h), Err(BadHandle::Stale));
        assert!(t.is_empty());
    }

    #[test]
    fn corrupted_handles_are_rejected() {
        let mut t = Table::new(Kind::Comm);
        let h = t.insert(()).unwrap();
        assert_eq!(t.get(h | (1 << 60)), Err(BadHandle::Foreign));
        assert_eq!(t.get(h & !USER_BIT), Err(BadHandle::Foreign));
        // slot + 1 == 0 is never produced.
        assert_eq!(
            t.get(h & !(SLOT_MASK << SLOT_SHIFT)),
            Err(BadHandle::Foreign)
        );
        // A slot past the end.
        let far = encode(Kind::Comm, 5000, 1);
        // The int form of a far slot's handle names that slot again.
        assert_eq!(to_int(Kind::Comm, far), Some(-5001));
        assert_eq!(t.get(far), Err(BadHandle::Stale));
    }

    #[test]
    fn int_forms_round_trip_while_the_object_lives() {
        let mut t = Table::new(Kind::Group);
        let h = t.insert(7u8).unwrap();
        let i = to_int(Kind::Group, h).unwrap();
        assert!(i < 0);
        assert_eq!(t.from_int(i), h);
        // Predefined handles are their own int form.
        assert_eq!(to_int(Kind::Group, 0x109), Some(0x109));
        assert_eq!(t.from_int(0x109), 0x109);
        // Another kind's handle has none; a freed object's int is stale.
        assert_eq!(to_int(Kind::Comm, h), None);
        t.remove(h).unwrap();
        assert_eq!(t.get(t.from_int(i)), Err(BadHandle::Stale));
        assert_eq!(t.get(t.from_int(-1_000_000)), Err(BadHandle::Stale));
    }

    #[test]
    fn generations_wrap_without_reaching_zero() {
        let mut t = Table::new(Kind::Info);
        let mut last = 0;
        for _ in 0..70_000 {
            let h = t.insert(()).unwrap();
            assert_ne!(h, last);
            last = h;
            t.remove(h).unwrap();
        }
        assert_eq!(t.slots.len(), 1, "one slot, reused");
    }
}
