//! Numbers the distinct values a pass meets ([`ValueNumbers`]), so that
//! the pass can keep what it knows about each value in plain vectors.

use crate::pred::Value;

/// The distinct values seen so far, numbered 0, 1, 2, ... in order of first
/// sight. Each value is written down once, when first numbered, as words
/// in one shared vector (no allocation per value, none freed when the
/// table is cleared: a copy of `u16[((u8[14] & 0xf) << 2) + 14]` was five
/// boxes); a lookup hashes the value once, and only its top node (a load's
/// offset, an operation and the top nodes of its operands): values of one
/// filter rarely differ only deeper down, and equal hashes are told apart
/// by comparing the value with the words.
#[derive(Default)]
pub(crate) struct ValueNumbers {
    /// Open addressing, linear probing: each slot holds a value number + 1,
    /// or 0 when empty. Its length is 0 or a power of two at least twice
    /// the number of values.
    slots: Vec<u32>,
    /// Per value number: where its words are, its hash and the slot
    /// holding it.
    entries: Vec<Entry>,
    /// The values numbered, written down by [`encode`] one after the other.
    words: Vec<u32>,
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
    /// `words[start..end]` is the value.
    start: u32,
    end: u32,
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
        self.words.clear();
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
        let start = self.words.len() as u32;
        encode(v, &mut self.words);
        self.entries.push(Entry { start, end: self.words.len() as u32, hash, slot });
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
                    if e.hash == hash && is_encoded(v, &self.words[e.start as usize..e.end as usize]) {
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

/// Writes `v` down as words, node by node in prefix order: a node's kind
/// and small fields in one word, then its constants, then its operands.
/// Two values are equal exactly when their words are.
fn encode(v: &Value, out: &mut Vec<u32>) {
    match v {
        Value::Const(k) => out.extend([1, *k]),
        Value::Len => out.push(2),
        Value::Load { size, index, offset } => {
            out.extend([3 | size.bytes() << 8 | u32::from(index.is_some()) << 16, *offset]);
            if let Some(i) = index {
                encode(i, out);
            }
        }
        Value::Bin(op, a, b) => {
            out.push(4 | (*op as u32) << 8);
            encode(a, out);
            encode(b, out);
        }
        Value::Neg(a) => {
            out.push(5);
            encode(a, out);
        }
        Value::Protochain { v6, proto, nl } => out.extend([6 | u32::from(*v6) << 8 | u32::from(*proto) << 16, *nl]),
    }
}

/// Whether `words` is what [`encode`] writes for `v`.
#[inline]
fn is_encoded(v: &Value, words: &[u32]) -> bool {
    match (v, words) {
        // A load at a constant offset (most values): no call.
        (Value::Load { size, index: None, offset }, [w, k]) => *w == 3 | size.bytes() << 8 && k == offset,
        _ => encoded_prefix(v, words).is_some_and(|rest| rest.is_empty()),
    }
}

/// The words after those [`encode`] would write for `v`, if `words` starts
/// with them.
fn encoded_prefix<'a>(v: &Value, words: &'a [u32]) -> Option<&'a [u32]> {
    if let Some(rest) = leaf_prefix(v, words) {
        return rest;
    }
    // The words after an expected one.
    let one = |w: u32| match words {
        [x, rest @ ..] if *x == w => Some(rest),
        _ => None,
    };
    // An operand: a leaf inline, else a call.
    let operand = |v: &Value, words: &'a [u32]| leaf_prefix(v, words).unwrap_or_else(|| encoded_prefix(v, words));
    match v {
        Value::Load { size, index: Some(i), offset } => match words {
            [w, k, rest @ ..] if *w == 3 | size.bytes() << 8 | 1 << 16 && k == offset => operand(i, rest),
            _ => None,
        },
        Value::Bin(op, a, b) => operand(b, operand(a, one(4 | (*op as u32) << 8)?)?),
        Value::Neg(a) => operand(a, one(5)?),
        // (Leaves.)
        _ => None,
    }
}

/// [`encoded_prefix`] of a value without operands (`None` for one with).
#[inline(always)]
fn leaf_prefix<'a>(v: &Value, words: &'a [u32]) -> Option<Option<&'a [u32]>> {
    let two = |w: u32, k: u32| match words {
        [x, y, rest @ ..] if *x == w && *y == k => Some(rest),
        _ => None,
    };
    Some(match v {
        Value::Const(k) => two(1, *k),
        Value::Len => match words {
            [2, rest @ ..] => Some(rest),
            _ => None,
        },
        Value::Load { size, index: None, offset } => two(3 | size.bytes() << 8, *offset),
        Value::Protochain { v6, proto, nl } => two(6 | u32::from(*v6) << 8 | u32::from(*proto) << 16, *nl),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{encode, is_encoded};
    use crate::pred::{BinOp, Size, Value};

    /// A value of every kind, small constants (so that random pairs are
    /// often equal or differ in one field only).
    fn value(seed: &mut u64, depth: u32) -> Value {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (*seed >> 33) as u32;
        let k = r >> 8 & 1;
        let sub = |seed: &mut u64| Box::new(value(seed, depth.saturating_sub(1)));
        match if depth == 0 { r % 4 } else { r % 8 } {
            0 => Value::Const(k),
            1 => Value::Len,
            2 => Value::load([Size::Byte, Size::Half, Size::Word][(r >> 9) as usize % 3], k),
            3 => Value::Protochain { v6: k == 1, proto: (r >> 10 & 1) as u8, nl: r >> 11 & 1 },
            4 => Value::Load { size: Size::Byte, index: Some(sub(seed)), offset: k },
            5 => Value::Neg(sub(seed)),
            6 => Value::Bin([BinOp::Add, BinOp::Shl][k as usize], sub(seed), sub(seed)),
            _ => Value::Bin(BinOp::And, sub(seed), sub(seed)),
        }
    }

    /// A value's words match exactly the values equal to it.
    #[test]
    fn words_match_exactly_the_equal_values() {
        let mut seed = 7;
        let values: Vec<Value> = (0..400).map(|_| value(&mut seed, 3)).collect();
        let (mut equal, mut words) = (0, Vec::new());
        for a in &values {
            words.clear();
            encode(a, &mut words);
            for b in &values {
                assert_eq!(is_encoded(b, &words), a == b, "{a} / {b}");
                equal += usize::from(a == b && !std::ptr::eq(a, b));
            }
        }
        assert!(equal > 1000, "{equal}");
    }
}
