//! The data model: fields, comparisons, instructions and their evaluation.
//!
//! Every instruction evaluates to one of three outcomes, like a predicate of
//! sift's IR: true, false, or *abort* (a load past the captured bytes), and an
//! abort rejects the whole packet. Each instruction performs its loads in the
//! same order as the static program of the equivalent expression
//! ([`Instr::to_expr`]), so verdicts agree on truncated packets too.

use std::fmt::Write as _;
use std::sync::Arc;

use sift_ir::LinkType;

pub use sift_ir::Size;

/// Evaluation aborted: a load was out of bounds; the packet is rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abort;

/// Where a field is loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Addr {
    /// A fixed offset from the start of the packet.
    Direct(u32),
    /// Past an IPv4 header: `4 * (pkt[ihl_at] & 0xf) + offset` (libpcap's
    /// `ldxb 4*([k]&0xf)` addressing). The IHL byte is loaded first.
    Ipv4Payload {
        /// Offset of the byte holding the IPv4 version/IHL.
        ihl_at: u32,
        /// Constant added to the header length.
        offset: u32,
    },
    /// L2-indirect: past two variable-length headers, such as the TCP
    /// payload past the IPv4 header and the TCP header. With `h` = `4 *
    /// (pkt[ihl_at] & 0xf)` (0 without `ihl_at`) and the second header's
    /// length `l` = `((pkt[h + len_at] & len_mask) >> len_shr) << len_shl`,
    /// the field is at `h + l + offset`. Every load happens (the IHL byte,
    /// the length byte, the field): any out of bounds aborts. The
    /// translation emits this only with `len_shl <= 8` and small constants,
    /// where the expression text ([`Field::to_expr`]) computes the same
    /// address without wrapping.
    Layered {
        /// Offset of the IPv4 version/IHL byte, if the first header is IPv4.
        ihl_at: Option<u32>,
        /// Offset of the second header's length byte, from `h`.
        len_at: u32,
        /// Mask applied to the length byte.
        len_mask: u32,
        /// Right shift applied after the mask (taken modulo 32).
        len_shr: u32,
        /// Left shift applied last (taken modulo 32).
        len_shl: u32,
        /// Constant added to `h + l`.
        offset: u32,
    },
}

/// A 32-bit value taken from the packet: a load or the wire length, then an
/// optional mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// What is read.
    pub source: Source,
    /// `value & mask` when present.
    pub mask: Option<u32>,
}

/// The raw value of a [`Field`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The packet's wire length (`len`); never aborts.
    Len,
    /// A big-endian load.
    Load {
        /// Width.
        size: Size,
        /// Address.
        addr: Addr,
    },
}

impl Field {
    /// A load of `size` bytes at a fixed offset.
    pub fn direct(size: Size, offset: u32) -> Field {
        Field { source: Source::Load { size, addr: Addr::Direct(offset) }, mask: None }
    }

    /// A load of `size` bytes past the IPv4 header whose IHL is at `ihl_at`.
    pub fn ipv4_payload(size: Size, ihl_at: u32, offset: u32) -> Field {
        Field { source: Source::Load { size, addr: Addr::Ipv4Payload { ihl_at, offset } }, mask: None }
    }

    /// A load of `size` bytes in the TCP payload of an IPv4 packet whose
    /// IHL byte is at `ihl_at`: `offset` bytes past the IPv4 and TCP
    /// headers (the TCP data offset is the high nibble of TCP byte 12), as
    /// `tcp[((tcp[12] & 0xf0) >> 2) + offset]` addresses it.
    pub fn tcp_payload(size: Size, ihl_at: u32, offset: u32) -> Field {
        let addr = Addr::Layered {
            ihl_at: Some(ihl_at),
            len_at: ihl_at + 12,
            len_mask: 0xf0,
            len_shr: 2,
            len_shl: 0,
            offset: ihl_at.saturating_add(offset),
        };
        Field { source: Source::Load { size, addr }, mask: None }
    }

    /// The same field masked with `mask`.
    pub fn masked(self, mask: u32) -> Field {
        Field { mask: Some(mask), ..self }
    }

    /// Reads the field.
    #[inline(always)]
    pub fn read(&self, data: &[u8], wire_len: u32) -> Result<u32, Abort> {
        let v = match self.source {
            Source::Len => wire_len,
            Source::Load { size, addr } => {
                let at = match addr {
                    Addr::Direct(k) => u64::from(k),
                    Addr::Ipv4Payload { ihl_at, offset } => {
                        let b = *data.get(ihl_at as usize).ok_or(Abort)?;
                        u64::from(b & 0xf) * 4 + u64::from(offset)
                    }
                    Addr::Layered { ihl_at, len_at, len_mask, len_shr, len_shl, offset } => {
                        let h = match ihl_at {
                            Some(a) => u64::from(*data.get(a as usize).ok_or(Abort)? & 0xf) * 4,
                            None => 0,
                        };
                        let b = load(data, h + u64::from(len_at), Size::Byte)?;
                        h + layered_len(b, len_mask, len_shr, len_shl) + u64::from(offset)
                    }
                };
                load(data, at, size)?
            }
        };
        Ok(match self.mask {
            Some(m) => v & m,
            None => v,
        })
    }

    /// The field as pcap-filter expression text (`link[...]`, `len`), for a
    /// link type whose link-layer header starts the packet (`link[k]` is
    /// byte `k`); see [`Field::to_expr_on`] for the others.
    pub fn to_expr(&self) -> String {
        self.print(Origin::default())
    }

    /// The field as expression text for `linktype`: the instruction's
    /// offsets count from the start of the packet, and the text addresses
    /// them as `link[k - h]` where the link-layer header starts at a fixed
    /// `h` (4 on DLT_NETANALYZER, 12 on DLT_NETANALYZER_TRANSPARENT), as
    /// `radio[k]` where a radio header of variable length comes first
    /// (radiotap, AVS, Prism). An offset before `h` (only an instruction
    /// made by hand can hold one) has no such text: it is printed as
    /// `link[k]`, not equivalent. On DLT_PPI (a variable header without
    /// `radio`) absolute offsets have no text either.
    pub fn to_expr_on(&self, linktype: LinkType) -> String {
        self.print(Origin::of(linktype))
    }

    pub(crate) fn print(&self, o: Origin) -> String {
        let base = match self.source {
            Source::Len => "len".to_string(),
            Source::Load { size, addr } => {
                let (acc, k) = o.at(match addr {
                    Addr::Direct(k) => k,
                    Addr::Ipv4Payload { offset, .. } | Addr::Layered { offset, .. } => offset,
                });
                let h = match addr {
                    Addr::Ipv4Payload { ihl_at, .. } | Addr::Layered { ihl_at: Some(ihl_at), .. } => {
                        format!("(({} & 0xf) << 2) + ", o.byte(ihl_at))
                    }
                    _ => String::new(),
                };
                let at = match addr {
                    Addr::Layered { len_at, len_mask, len_shr, len_shl, .. } => {
                        let (lacc, l) = o.at(len_at);
                        format!("((({lacc}[{h}{l}] & {len_mask:#x}) >> {}) << {}) + {h}{k}", len_shr & 31, len_shl & 31)
                    }
                    _ => format!("{h}{k}"),
                };
                format!("{acc}[{at} : {}]", size.bytes())
            }
        };
        match self.mask {
            Some(m) => format!("({base} & {m:#x})"),
            None => base,
        }
    }
}

/// How printed expressions address an absolute packet offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Origin {
    /// `link[k - h]`: the link-layer header starts at byte `h`.
    Link(u32),
    /// `link[k]`.
    #[default]
    Start,
    /// `radio[k]`: the packet starts with a radio header.
    Radio,
}

impl Origin {
    /// Where `link[]` starts on `linktype`.
    pub(crate) fn of(linktype: LinkType) -> Origin {
        match linktype.to_linktype() {
            240 => Origin::Link(4),
            241 => Origin::Link(12),
            // Radiotap, AVS, Prism: `radio[k]` is byte k.
            127 | 163 | 119 => Origin::Radio,
            _ => Origin::Start,
        }
    }

    /// The accessor and index for absolute offset `k`.
    fn at(self, k: u32) -> (&'static str, u32) {
        match self {
            Origin::Link(h) if k >= h => ("link", k - h),
            Origin::Link(_) | Origin::Start => ("link", k),
            Origin::Radio => ("radio", k),
        }
    }

    /// The byte at absolute offset `k` as text.
    fn byte(self, k: u32) -> String {
        let (acc, i) = self.at(k);
        format!("{acc}[{i}]")
    }
}

/// The second header's length of [`Addr::Layered`] from its length byte.
#[inline(always)]
pub(crate) fn layered_len(b: u32, mask: u32, shr: u32, shl: u32) -> u64 {
    u64::from(((b & mask) >> (shr & 31)) << (shl & 31))
}

#[inline]
fn load(data: &[u8], at: u64, size: Size) -> Result<u32, Abort> {
    let n = u64::from(size.bytes());
    let end = at.checked_add(n).ok_or(Abort)?;
    if end > data.len() as u64 {
        return Err(Abort);
    }
    let b = data.get(at as usize..end as usize).ok_or(Abort)?;
    Ok(match *b {
        [x] => u32::from(x),
        [x, y] => u32::from(u16::from_be_bytes([x, y])),
        [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
        _ => return Err(Abort),
    })
}

/// Up to this many values a set is a sorted array (run as SIMD compares);
/// above it, a [`HashTable`] (O(1) membership whatever the size).
pub const SMALL_SET: usize = 8;

/// A set of constants one instruction compares a field against ("SIMD"
/// operands): a short sorted array, or a hash table for large sets.
#[derive(Clone, Debug)]
pub enum ValueSet {
    /// Up to [`SMALL_SET`] values, sorted, no duplicates.
    Small(Vec<u32>),
    /// Any number of values. Shared: the packet path holds the same table,
    /// and an update copies it once (copy-on-write).
    Large(Arc<HashTable>),
}

impl PartialEq for ValueSet {
    fn eq(&self, other: &ValueSet) -> bool {
        self.len() == other.len() && self.iter().all(|v| other.contains(v))
    }
}

impl ValueSet {
    /// A set of the given values.
    pub fn from_values(values: impl IntoIterator<Item = u32>) -> ValueSet {
        let mut s = ValueSet::Small(Vec::new());
        for v in values {
            s.insert(v);
        }
        s
    }

    /// Is `v` in the set?
    #[inline]
    pub fn contains(&self, v: u32) -> bool {
        match self {
            // A short linear scan beats a binary search at this size.
            ValueSet::Small(a) => a.contains(&v),
            ValueSet::Large(h) => h.contains(v),
        }
    }

    /// Adds `v`; false if it was already there.
    pub fn insert(&mut self, v: u32) -> bool {
        match self {
            ValueSet::Small(a) => match a.binary_search(&v) {
                Ok(_) => false,
                Err(i) => {
                    if a.len() < SMALL_SET {
                        a.insert(i, v);
                    } else {
                        let mut h = HashTable::with_capacity(a.len() + 1);
                        for &x in a.iter() {
                            h.insert(x);
                        }
                        h.insert(v);
                        *self = ValueSet::Large(Arc::new(h));
                    }
                    true
                }
            },
            ValueSet::Large(h) => !h.contains(v) && Arc::make_mut(h).insert(v),
        }
    }

    /// Removes `v`; false if it was not there.
    pub fn remove(&mut self, v: u32) -> bool {
        match self {
            ValueSet::Small(a) => match a.binary_search(&v) {
                Ok(i) => {
                    a.remove(i);
                    true
                }
                Err(_) => false,
            },
            ValueSet::Large(h) => h.contains(v) && Arc::make_mut(h).remove(v),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ValueSet::Small(a) => a.len(),
            ValueSet::Large(h) => h.len(),
        }
    }

    /// Is the set empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values, sorted.
    pub fn sorted(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.iter().collect();
        v.sort_unstable();
        v
    }

    fn iter(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            ValueSet::Small(a) => Box::new(a.iter().copied()),
            ValueSet::Large(h) => Box::new(h.iter()),
        }
    }
}

/// A set of `u32` as an open-addressing table with linear probing and a
/// multiplicative hash: membership is a multiply, a shift and (at load
/// factor at most 1/2) one or two slot reads, whatever the size.
#[derive(Clone, Debug)]
pub struct HashTable {
    /// Power-of-two many slots; `empty` marks a free one.
    slots: Box<[u32]>,
    /// A value not in the set, marking free slots.
    empty: u32,
    len: usize,
    /// `32 - log2(slots.len())`: the hash's top bits index the table.
    shift: u32,
}

impl HashTable {
    /// An empty table with room for `n` values before it grows.
    pub fn with_capacity(n: usize) -> HashTable {
        let cap = (n.max(4) * 2).next_power_of_two();
        HashTable { slots: vec![0; cap].into_boxed_slice(), empty: 0, len: 0, shift: 32 - cap.trailing_zeros() }
    }

    #[inline(always)]
    fn home(&self, v: u32) -> usize {
        // Fibonacci hashing: the top bits of v * 2^32 / phi.
        (v.wrapping_mul(0x9e37_79b9) >> self.shift) as usize
    }

    /// Is `v` in the set? The probe reads four slots at once (SSE2 on
    /// x86-64, [`sift_jit::simd::probe4`]), with no branch per slot: at load factor at most 1/2 the first four slots
    /// from `v`'s home almost always hold `v` or a free slot (which ends
    /// the probe: linear probing never leaves a gap before a value).
    #[inline(always)]
    pub fn contains(&self, v: u32) -> bool {
        let i = self.home(v);
        if let Some(g) = self.slots.get(i..i + 4).and_then(|g| <&[u32; 4]>::try_from(g).ok()) {
            match sift_jit::simd::probe4(g, v, self.empty) {
                (true, _) if v != self.empty => return true,
                (_, true) => return false,
                _ => {}
            }
        }
        self.probe(v)
    }

    /// [`HashTable::contains`] slot by slot, from `v`'s home.
    #[cold]
    #[inline(never)]
    fn probe(&self, v: u32) -> bool {
        if v == self.empty {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(v);
        // At most half the slots are used: the probe meets a free one.
        for _ in 0..self.slots.len() {
            match self.slots.get(i) {
                Some(&s) if s == v => return true,
                Some(&s) if s == self.empty => return false,
                Some(_) => i = (i + 1) & mask,
                None => return false,
            }
        }
        false
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Is the table empty?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values, in table order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let e = self.empty;
        self.slots.iter().copied().filter(move |&s| s != e)
    }

    /// Adds `v`; false if it was already there.
    pub fn insert(&mut self, v: u32) -> bool {
        if self.contains(v) {
            return false;
        }
        if v == self.empty {
            // Pick another free marker: one not in the set and not `v`.
            let mut e = self.empty.wrapping_add(1);
            while e == v || self.contains(e) {
                e = e.wrapping_add(0x9e37_79b9);
            }
            let old = self.empty;
            for s in self.slots.iter_mut() {
                if *s == old {
                    *s = e;
                }
            }
            self.empty = e;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            let mut bigger = HashTable::with_capacity(self.slots.len());
            bigger.empty = self.empty;
            bigger.slots.fill(self.empty);
            for x in self.iter() {
                bigger.place(x);
            }
            bigger.len = self.len;
            *self = bigger;
        }
        self.place(v);
        self.len += 1;
        true
    }

    /// Puts `v` (not in the set, not the marker) in its first free slot.
    fn place(&mut self, v: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(v);
        let empty = self.empty;
        for _ in 0..self.slots.len() {
            match self.slots.get_mut(i) {
                Some(s) if *s == empty => {
                    *s = v;
                    return;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Removes `v`; false if it was not there. Later entries of the probe
    /// run move back into the hole (no tombstones).
    pub fn remove(&mut self, v: u32) -> bool {
        if v == self.empty {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(v);
        loop {
            let s = self.slots[i];
            if s == v {
                break;
            }
            if s == self.empty {
                return false;
            }
            i = (i + 1) & mask;
        }
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s == self.empty {
                break;
            }
            let home = self.home(s);
            // `s` may fill the hole if its probe from `home` passes it.
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = self.empty;
        self.len -= 1;
        true
    }
}

/// A comparison of a field value against constants.
#[derive(Clone, Debug, PartialEq)]
pub enum Cmp {
    /// The value is one of the set (compare-equal with SIMD operands).
    In(ValueSet),
    /// `lo <= value <= hi`.
    Range(u32, u32),
    /// `value > k`.
    Gt(u32),
    /// `value >= k`.
    Ge(u32),
    /// `value & k != 0`.
    AnyBits(u32),
}

impl Cmp {
    /// Compare-equal to one constant.
    pub fn eq(k: u32) -> Cmp {
        Cmp::In(ValueSet::from_values([k]))
    }

    #[inline(always)]
    fn test(&self, v: u32) -> bool {
        match self {
            Cmp::In(s) => s.contains(v),
            Cmp::Range(lo, hi) => *lo <= v && v <= *hi,
            Cmp::Gt(k) => v > *k,
            Cmp::Ge(k) => v >= *k,
            Cmp::AnyBits(k) => v & *k != 0,
        }
    }

    /// Expression text testing `f` (a field's text); same loads as the
    /// instruction: each mention of `f` reloads the same bytes.
    fn to_expr(&self, f: &str) -> String {
        match self {
            Cmp::In(s) if s.is_empty() => format!("({f} = 0 and {f} = 1)"),
            Cmp::In(s) => {
                let parts: Vec<String> = s.sorted().iter().map(|v| format!("{f} = {v:#x}")).collect();
                format!("({})", parts.join(" or "))
            }
            Cmp::Range(lo, hi) => format!("({f} >= {lo:#x} and {f} <= {hi:#x})"),
            Cmp::Gt(k) => format!("{f} > {k:#x}"),
            Cmp::Ge(k) => format!("{f} >= {k:#x}"),
            Cmp::AnyBits(k) => format!("{f} & {k:#x} != 0"),
        }
    }
}

/// One primitive test: a field, a comparison, an optional negation.
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    /// The value tested.
    pub field: Field,
    /// The comparison.
    pub cmp: Cmp,
    /// Negate the result (an abort stays an abort).
    pub negate: bool,
}

impl Atom {
    /// `field cmp`.
    pub fn new(field: Field, cmp: Cmp) -> Atom {
        Atom { field, cmp, negate: false }
    }

    #[inline(always)]
    fn eval(&self, data: &[u8], wire_len: u32) -> Result<bool, Abort> {
        Ok(self.cmp.test(self.field.read(data, wire_len)?) != self.negate)
    }

    fn print(&self, o: Origin) -> String {
        let t = self.cmp.to_expr(&self.field.print(o));
        if self.negate {
            format!("not {t}")
        } else {
            t
        }
    }
}

/// A fixed-size CISC instruction: one whole primitive of a pass.
#[derive(Clone, Debug, PartialEq)]
pub enum Instr {
    /// One field tested.
    Test(Atom),
    /// "src or dst" power instruction: the first field is tested, then (if
    /// that failed) the second, against the same comparison; `negate`
    /// negates the whole (`not (src or dst)`).
    Either {
        /// The two fields, in evaluation order.
        fields: [Field; 2],
        /// The comparison both share (e.g. a port set).
        cmp: Cmp,
        /// Negate the result.
        negate: bool,
        /// After passes that differed only in this instruction's value set
        /// were merged (`port (21 or 22)`): the first merged pass's values
        /// `A1`. The instruction is then `f0 in A1 or (f1 cmp or f0 cmp)`:
        /// a first field in `A1` holds before the second is loaded, any
        /// other value needs the second field loadable (out of bounds, the
        /// first pass aborted before a later one could test its values).
        /// `None`: plain `f0 cmp or f1 cmp`.
        first: Option<ValueSet>,
    },
    /// Power instruction: all tests hold, tried in order (e.g. IPv4 +
    /// protocol + not a fragment, or src net and dst net).
    All(Vec<Atom>),
    /// One test holds, tried in order.
    Any(Vec<Atom>),
    /// One conjunction holds, tried in order (each tried left to right):
    /// an alternative such as `host h` = `ip and src h or ip and dst h` used
    /// before further conditions.
    Alternatives(Vec<Vec<Atom>>),
}

impl Instr {
    /// Evaluates the instruction on a packet.
    #[inline]
    pub fn eval(&self, data: &[u8], wire_len: u32) -> Result<bool, Abort> {
        match self {
            Instr::Test(a) => a.eval(data, wire_len),
            Instr::Either { fields, cmp, negate, first: None } => {
                let hit = cmp.test(fields[0].read(data, wire_len)?) || cmp.test(fields[1].read(data, wire_len)?);
                Ok(hit != *negate)
            }
            Instr::Either { fields, cmp, negate, first: Some(a1) } => {
                let x = fields[0].read(data, wire_len)?;
                let hit = a1.contains(x) || {
                    let y = fields[1].read(data, wire_len)?;
                    cmp.test(y) || cmp.test(x)
                };
                Ok(hit != *negate)
            }
            Instr::All(atoms) => {
                for a in atoms {
                    if !a.eval(data, wire_len)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Instr::Any(atoms) => {
                for a in atoms {
                    if a.eval(data, wire_len)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Instr::Alternatives(alts) => {
                'alt: for conj in alts {
                    for a in conj {
                        if !a.eval(data, wire_len)? {
                            continue 'alt;
                        }
                    }
                    return Ok(true);
                }
                Ok(false)
            }
        }
    }

    /// The comparison an update of values applies to, if the instruction
    /// has a single one ([`Instr::Test`], [`Instr::Either`]).
    pub fn cmp_mut(&mut self) -> Option<&mut Cmp> {
        match self {
            Instr::Test(a) => Some(&mut a.cmp),
            Instr::Either { cmp, .. } => Some(cmp),
            Instr::All(_) | Instr::Any(_) | Instr::Alternatives(_) => None,
        }
    }

    /// A short name of the instruction kind (for listings).
    pub fn kind(&self) -> &'static str {
        match self {
            Instr::Test(_) => "test",
            Instr::Either { .. } => "either",
            Instr::All(a) if is_ipv4_l4(a) => "ipv4-l4",
            Instr::All(_) => "all",
            Instr::Any(_) => "any",
            Instr::Alternatives(_) => "alternatives",
        }
    }

    /// Equivalent pcap-filter expression text (same loads, same order), for
    /// a link type whose link-layer header starts the packet (see
    /// [`Field::to_expr`]).
    pub fn to_expr(&self) -> String {
        self.print(Origin::default())
    }

    /// Equivalent expression text on `linktype` (see [`Field::to_expr_on`]).
    pub fn to_expr_on(&self, linktype: LinkType) -> String {
        self.print(Origin::of(linktype))
    }

    pub(crate) fn print(&self, o: Origin) -> String {
        match self {
            Instr::Test(a) => a.print(o),
            Instr::Either { fields, cmp, negate, first } => {
                let (f0, f1) = (fields[0].print(o), fields[1].print(o));
                let t = match first {
                    None => format!("({} or {})", cmp.to_expr(&f0), cmp.to_expr(&f1)),
                    Some(a1) => format!(
                        "({} or {} or {})",
                        Cmp::In(a1.clone()).to_expr(&f0),
                        cmp.to_expr(&f1),
                        cmp.to_expr(&f0)
                    ),
                };
                if *negate {
                    format!("not {t}")
                } else {
                    t
                }
            }
            Instr::Alternatives(alts) => {
                if alts.is_empty() {
                    return "len < 0".to_string();
                }
                let parts: Vec<String> =
                    alts.iter().map(|c| Instr::All(c.clone()).print(o)).collect();
                format!("({})", parts.join(" or "))
            }
            Instr::All(atoms) | Instr::Any(atoms) => {
                if atoms.is_empty() {
                    return if matches!(self, Instr::All(_)) { "len >= 0" } else { "len < 0" }.to_string();
                }
                let sep = if matches!(self, Instr::All(_)) { " and " } else { " or " };
                let mut s = String::from("(");
                for (i, a) in atoms.iter().enumerate() {
                    if i > 0 {
                        s.push_str(sep);
                    }
                    let _ = write!(s, "{}", a.print(o));
                }
                s.push(')');
                s
            }
        }
    }
}

/// Is this the IPv4-non-fragment-L4 pattern (ethertype, protocol, maybe
/// fragment offset)?
fn is_ipv4_l4(atoms: &[Atom]) -> bool {
    matches!(atoms.first(), Some(Atom { cmp: Cmp::In(s), negate: false, .. }) if s.len() == 1 && s.contains(0x800))
        && (atoms.len() == 2 || atoms.len() == 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_grow_into_hash_sets_and_back() {
        let mut s = ValueSet::from_values([5, 1, 3]);
        assert!(matches!(&s, ValueSet::Small(v) if v == &[1, 3, 5]));
        for v in 10..40 {
            assert!(s.insert(v));
        }
        assert!(matches!(s, ValueSet::Large(_)));
        assert!(!s.insert(10));
        assert!(s.contains(39) && !s.contains(40));
        assert!(s.remove(39) && !s.remove(39));
        assert_eq!(s.len(), 32);
    }

    #[test]
    fn hash_table_behaves_like_a_set() {
        let mut t = HashTable::with_capacity(1);
        let mut m = std::collections::BTreeSet::new();
        let mut x = 1u32;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            // Small values collide with the free marker (0 at first).
            let v = if step % 3 == 0 { (x >> 16) % 8 } else { (x >> 8) % 3000 };
            if (x >> 4) % 5 < 3 && m.len() < 1500 {
                assert_eq!(t.insert(v), m.insert(v), "insert {v}");
            } else {
                assert_eq!(t.remove(v), m.remove(&v), "remove {v}");
            }
            assert_eq!(t.len(), m.len());
            if step % 97 == 0 {
                let mut got: Vec<u32> = t.iter().collect();
                got.sort_unstable();
                assert!(got.iter().eq(m.iter()));
                for probe in 0..3010 {
                    assert_eq!(t.contains(probe), m.contains(&probe), "contains {probe}");
                }
            }
        }
    }

    #[test]
    fn loads_abort_out_of_bounds() {
        let f = Field::ipv4_payload(Size::Half, 0, 2);
        assert_eq!(f.read(&[0x45, 0, 0, 0, 0, 0, 0, 0], 8), Err(Abort));
        let mut p = vec![0x41u8, 0, 0, 0, 0, 0, 0x12, 0x34];
        assert_eq!(f.read(&p, 8), Ok(0x1234));
        p.truncate(7);
        assert_eq!(f.read(&p, 8), Err(Abort));
        assert_eq!(Field::direct(Size::Word, u32::MAX).read(&p, 8), Err(Abort));
    }
}
