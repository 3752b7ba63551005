//! Numbers the distinct values a pass meets ([`ValueNumbers`]), so that
//! the pass can keep what it knows about each value in plain vectors.

use crate::pred::Value;

/// The distinct values seen so far, numbered 0, 1, 2, ... in order of first
/// sight. Each value is copied once, when first numbered; a lookup hashes
/// the value once, and only its top node (a load's offset, an operation and
/// the top nodes of its operands): values of one filter rarely differ only
/// deeper down, and equal hashes are told apart by comparing the values.
#[derive(Default)]
pub(crate) struct ValueNumbers {
    /// Open addressing, linear probing: each slot holds a value number + 1,
    /// or 0 when empty. Its length is 0 or a power of two at least twice
    /// the number of values.
    slots: Vec<u32>,
    /// Per value number: the value, its hash and the slot holding it.
    entries: Vec<Entry>,
}

/// Where a value not numbered yet goes (from [`ValueNumbers::lookup`]):
/// valid while no other value is numbered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Vacancy {
    hash: u64,
    slot: usize,
    /// How many values were numbered when it was found.
    count: usize,
}

struct Entry {
    value: Value,
    hash: u64,
    slot: usize,
}

impl ValueNumbers {
    /// Forgets every value, keeping the room (a cost proportional to the
    /// number of values, not to the room).
    pub(crate) fn clear(&mut self) {
        for e in &self.entries {
            self.slots[e.slot] = 0;
        }
        self.entries.clear();
    }

    /// The number of `v`, if it has one.
    pub(crate) fn get(&self, v: &Value) -> Option<u32> {
        self.find(v, top_hash(v)).ok()
    }

    /// The number of `v`, or where [`ValueNumbers::number_vacant`] would
    /// put it (saves hashing it and probing again when it is numbered).
    pub(crate) fn lookup(&self, v: &Value) -> Result<u32, Vacancy> {
        let hash = top_hash(v);
        self.find(v, hash).map_err(|slot| Vacancy { hash, slot, count: self.entries.len() })
    }

    /// [`ValueNumbers::number`] of a value `lookup` did not find (`vacancy`
    /// is what it gave; if values were numbered since, `v` is looked up
    /// again).
    pub(crate) fn number_vacant(&mut self, v: &Value, vacancy: Vacancy) -> u32 {
        if vacancy.count != self.entries.len() || self.slots.is_empty() {
            return self.number(v);
        }
        self.insert(v, vacancy.hash, vacancy.slot)
    }

    /// The number of `v`, given (with a copy of `v`) on first sight.
    pub(crate) fn number(&mut self, v: &Value) -> u32 {
        if self.slots.is_empty() {
            self.grow();
        }
        let hash = top_hash(v);
        match self.find(v, hash) {
            Ok(n) => n,
            Err(slot) => self.insert(v, hash, slot),
        }
    }

    /// Numbers `v` (of hash `hash`, not numbered yet) in the empty slot
    /// `slot` where [`ValueNumbers::find`] stopped.
    fn insert(&mut self, v: &Value, hash: u64, slot: usize) -> u32 {
        let n = self.entries.len() as u32;
        self.entries.push(Entry { value: v.clone(), hash, slot });
        self.slots[slot] = n + 1;
        if self.slots.len() < 2 * self.entries.len() {
            self.grow();
        }
        n
    }

    /// `Ok(number)` of `v`, or `Err(empty slot)` where it would go (the
    /// table is never more than half full; with no slots, `Err(0)`).
    fn find(&self, v: &Value, hash: u64) -> Result<u32, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        let mask = self.slots.len() - 1;
        let mut slot = (hash as usize) & mask;
        loop {
            match self.slots[slot] {
                0 => return Err(slot),
                n => {
                    let e = &self.entries[n as usize - 1];
                    if e.hash == hash && e.value == *v {
                        return Ok(n - 1);
                    }
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Doubles the table (at least 16 slots) and places every value again.
    fn grow(&mut self) {
        let len = (2 * self.slots.len()).max(16);
        self.slots.clear();
        self.slots.resize(len, 0);
        let mask = len - 1;
        for (n, e) in self.entries.iter_mut().enumerate() {
            let mut slot = (e.hash as usize) & mask;
            while self.slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = n as u32 + 1;
            e.slot = slot;
        }
    }
}

/// A word standing for the top node of a value (its kind and constants).
fn top_word(v: &Value) -> u64 {
    match v {
        Value::Const(k) => u64::from(*k) << 8 | 1,
        Value::Len => 2,
        Value::Load { size, index, offset } => {
            u64::from(*offset) << 8 | u64::from(size.bytes()) << 4 | if index.is_some() { 3 } else { 4 }
        }
        Value::Bin(op, _, _) => (*op as u64) << 8 | 5,
        Value::Neg(_) => 6,
        Value::Protochain { v6, proto, nl } => u64::from(*nl) << 16 | u64::from(*proto) << 8 | u64::from(*v6) << 4 | 7,
    }
}

/// The hash of a value's top node and, for an operation, of its operands'
/// top nodes (a multiplicative hash; the high bits are folded down, the
/// table uses the low ones).
fn top_hash(v: &Value) -> u64 {
    let mut h = top_word(v);
    let mut mix = |w: u64| h = (h.rotate_left(26) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    match v {
        Value::Bin(_, a, b) => {
            mix(top_word(a));
            mix(top_word(b));
        }
        Value::Neg(a) => mix(top_word(a)),
        _ => mix(0),
    }
    h ^ (h >> 29)
}
