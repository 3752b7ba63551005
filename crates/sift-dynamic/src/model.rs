//! The data model: fields, comparisons, instructions and their evaluation.
//!
//! Every instruction evaluates to one of three outcomes, like a predicate of
//! sift's IR: true, false, or *abort* (a load past the captured bytes), and an
//! abort rejects the whole packet. Each instruction performs its loads in the
//! same order as the static program of the equivalent expression
//! ([`Instr::to_expr`]), so verdicts agree on truncated packets too.

use std::collections::HashSet;
use std::fmt::Write as _;

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
                };
                load(data, at, size)?
            }
        };
        Ok(match self.mask {
            Some(m) => v & m,
            None => v,
        })
    }

    /// The field as pcap-filter expression text (`link[...]`, `len`).
    pub fn to_expr(&self) -> String {
        let base = match self.source {
            Source::Len => "len".to_string(),
            Source::Load { size, addr } => {
                let at = match addr {
                    Addr::Direct(k) => format!("{k}"),
                    Addr::Ipv4Payload { ihl_at, offset } => format!("((link[{ihl_at}] & 0xf) << 2) + {offset}"),
                };
                format!("link[{at} : {}]", size.bytes())
            }
        };
        match self.mask {
            Some(m) => format!("({base} & {m:#x})"),
            None => base,
        }
    }
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

/// Below this many values a set is a sorted array; from it on, a hash set
/// (O(1) membership whatever the size).
pub const SMALL_SET: usize = 8;

/// A set of constants one instruction compares a field against ("SIMD"
/// operands): a short sorted array, or a hash set for large sets.
#[derive(Clone, Debug)]
pub enum ValueSet {
    /// Up to [`SMALL_SET`] values, sorted, no duplicates.
    Small(Vec<u32>),
    /// Any number of values.
    Large(HashSet<u32>),
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
            ValueSet::Large(h) => large_contains(h, v),
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
                        let mut h: HashSet<u32> = a.iter().copied().collect();
                        h.insert(v);
                        *self = ValueSet::Large(h);
                    }
                    true
                }
            },
            ValueSet::Large(h) => h.insert(v),
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
            ValueSet::Large(h) => h.remove(&v),
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
            ValueSet::Large(h) => Box::new(h.iter().copied()),
        }
    }
}

/// Hash-set membership, kept out of line so the small cases inline well.
#[inline(never)]
fn large_contains(h: &HashSet<u32>, v: u32) -> bool {
    h.contains(&v)
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

    fn to_expr(&self) -> String {
        let t = self.cmp.to_expr(&self.field.to_expr());
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
            Instr::Either { fields, cmp, negate } => {
                let hit = cmp.test(fields[0].read(data, wire_len)?) || cmp.test(fields[1].read(data, wire_len)?);
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

    /// Equivalent pcap-filter expression text (same loads, same order).
    pub fn to_expr(&self) -> String {
        match self {
            Instr::Test(a) => a.to_expr(),
            Instr::Either { fields, cmp, negate } => {
                let t = format!("({} or {})", cmp.to_expr(&fields[0].to_expr()), cmp.to_expr(&fields[1].to_expr()));
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
                    alts.iter().map(|c| Instr::All(c.clone()).to_expr()).collect();
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
                    let _ = write!(s, "{}", a.to_expr());
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
