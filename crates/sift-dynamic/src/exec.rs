//! The packet path: instructions prepared into compact records.
//!
//! A pass keeps its [`Instr`]uctions (the model, what updates edit and what
//! [`crate::Pass::instrs`] shows) and, beside them, one [`Step`] per
//! instruction, built when the pass is built (O(length of the pass); value
//! tables are shared, not copied). A step has its loads decoded (direct,
//! past the IPv4 header, past two headers, wire length) and its comparison
//! in the form that runs fastest:
//! - one value: a compare;
//! - 2 to [`SMALL_SET`](crate::SMALL_SET) values: **SIMD** lanes (on x86-64
//!   two SSE2 registers compared against the broadcast field, see
//!   [`sift_jit::simd::U32x8`]);
//! - more: the set's own [`HashTable`], shared, not rebuilt (a multiply, a
//!   shift, four slots compared at once);
//! - IPv4 + protocol + not a fragment: one fused step;
//! - `not tcp port (a or b ...)` after `ip` (alternatives: not the
//!   protocol, a fragment, none of the ports): one `unless-l4` step.
//!
//! A program of one pass runs as a [`Fused`] plan: a few common shapes as
//! straight functions, any other as its steps in a row, runs of negated set
//! tests over two fields (`not host a and not host b ...`) fused into one
//! `none-of` step that loads both fields and tests them without branches.
//!
//! Per packet, the IPv4 header length is loaded once ([`Pkt::ihl`]) and
//! reused by every later step that addresses past that header.
//!
//! Outcomes and load order are those of [`Instr::eval`].

use std::sync::Arc;

use sift_jit::simd::{U16Pairs, U32x8};

use crate::model::{layered_len, Abort, Addr, Atom, Cmp, Field, HashTable, Instr, Size, Source, ValueSet};
use crate::Pass;

/// A packet being filtered, with its IPv4 header length once loaded.
pub(crate) struct Pkt<'a> {
    data: &'a [u8],
    wire_len: u32,
    /// Offset of the IHL byte whose header length is cached (`u64::MAX`: none).
    ihl_at: u64,
    ihl: u64,
}

impl<'a> Pkt<'a> {
    #[inline(always)]
    pub(crate) fn new(data: &'a [u8], wire_len: u32) -> Pkt<'a> {
        Pkt { data, wire_len, ihl_at: u64::MAX, ihl: 0 }
    }

    /// `4 * (pkt[at] & 0xf)`, loaded at most once per packet.
    #[inline(always)]
    fn ihl(&mut self, at: u32) -> Result<u64, Abort> {
        if u64::from(at) == self.ihl_at {
            return Ok(self.ihl);
        }
        let b = *self.data.get(at as usize).ok_or(Abort)?;
        self.ihl_at = u64::from(at);
        self.ihl = u64::from(b & 0xf) * 4;
        Ok(self.ihl)
    }

    /// The four bytes at `at`, if captured.
    #[inline(always)]
    fn bytes4(&self, at: u64) -> Option<[u8; 4]> {
        let at = usize::try_from(at).ok()?;
        match self.data.get(at..at.wrapping_add(4)) {
            Some(&[a, b, c, d]) => Some([a, b, c, d]),
            _ => None,
        }
    }

    #[inline(always)]
    fn load(&self, at: u64, size: Size) -> Result<u32, Abort> {
        let at = usize::try_from(at).map_err(|_| Abort)?;
        match size {
            Size::Byte => self.data.get(at).map(|&b| u32::from(b)).ok_or(Abort),
            Size::Half => match self.data.get(at..at.wrapping_add(2)) {
                Some(&[a, b]) => Ok(u32::from(u16::from_be_bytes([a, b]))),
                _ => Err(Abort),
            },
            Size::Word => match self.data.get(at..at.wrapping_add(4)) {
                Some(&[a, b, c, d]) => Ok(u32::from_be_bytes([a, b, c, d])),
                _ => Err(Abort),
            },
        }
    }
}

/// Where a prepared field is read.
#[derive(Clone, Copy, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum Loc {
    Len,
    Direct(u32),
    Ipv4 { ihl_at: u32, offset: u32 },
    Layered { ihl_at: Option<u32>, len_at: u32, len_mask: u32, len_shr: u32, len_shl: u32, offset: u32 },
}

/// A prepared [`Field`]: location, width, mask (all ones when none).
#[derive(Clone, Copy, Debug)]
struct PField {
    loc: Loc,
    size: Size,
    mask: u32,
}

impl PField {
    fn new(f: &Field) -> PField {
        let (loc, size) = match f.source {
            Source::Len => (Loc::Len, Size::Word),
            Source::Load { size, addr } => (
                match addr {
                    Addr::Direct(k) => Loc::Direct(k),
                    Addr::Ipv4Payload { ihl_at, offset } => Loc::Ipv4 { ihl_at, offset },
                    Addr::Layered { ihl_at, len_at, len_mask, len_shr, len_shl, offset } => {
                        Loc::Layered { ihl_at, len_at, len_mask, len_shr, len_shl, offset }
                    }
                },
                size,
            ),
        };
        PField { loc, size, mask: f.mask.unwrap_or(u32::MAX) }
    }

    #[inline(always)]
    fn read(&self, p: &mut Pkt<'_>) -> Result<u32, Abort> {
        let at = match self.loc {
            Loc::Len => return Ok(p.wire_len & self.mask),
            Loc::Direct(k) => u64::from(k),
            Loc::Ipv4 { ihl_at, offset } => p.ihl(ihl_at)? + u64::from(offset),
            Loc::Layered { ihl_at, len_at, len_mask, len_shr, len_shl, offset } => {
                let h = match ihl_at {
                    Some(a) => p.ihl(a)?,
                    None => 0,
                };
                let b = p.load(h + u64::from(len_at), Size::Byte)?;
                h + layered_len(b, len_mask, len_shr, len_shl) + u64::from(offset)
            }
        };
        Ok(p.load(at, self.size)? & self.mask)
    }
}

/// A prepared comparison.
#[derive(Clone, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum PCmp {
    Never,
    Eq(u32),
    Lanes(U32x8),
    Table(Arc<HashTable>),
    Range(u32, u32),
    Gt(u32),
    Ge(u32),
    AnyBits(u32),
}

impl PCmp {
    fn new(c: &Cmp) -> PCmp {
        match c {
            Cmp::In(s) => PCmp::of_set(s),
            Cmp::Range(lo, hi) => PCmp::Range(*lo, *hi),
            Cmp::Gt(k) => PCmp::Gt(*k),
            Cmp::Ge(k) => PCmp::Ge(*k),
            Cmp::AnyBits(k) => PCmp::AnyBits(*k),
        }
    }

    /// Membership in `s`.
    fn of_set(s: &ValueSet) -> PCmp {
        match s {
            ValueSet::Small(v) => match v[..] {
                [] => PCmp::Never,
                [k] => PCmp::Eq(k),
                _ => U32x8::new(v).map_or_else(|| PCmp::Table(Arc::new(table_of(v))), PCmp::Lanes),
            },
            // The set's own table, shared: preparing the step is O(1).
            ValueSet::Large(t) => PCmp::Table(t.clone()),
        }
    }

    #[inline(always)]
    fn test(&self, v: u32) -> bool {
        match self {
            PCmp::Never => false,
            PCmp::Eq(k) => v == *k,
            PCmp::Lanes(l) => l.contains(v),
            PCmp::Table(t) => t.contains(v),
            PCmp::Range(lo, hi) => *lo <= v && v <= *hi,
            PCmp::Gt(k) => v > *k,
            PCmp::Ge(k) => v >= *k,
            PCmp::AnyBits(k) => v & *k != 0,
        }
    }

    /// `test(x) || test(y)`, both evaluated, without a branch between them
    /// where the comparison allows (for two fields already loaded).
    #[inline(always)]
    fn test_either(&self, x: u32, y: u32) -> bool {
        match self {
            PCmp::Never => false,
            PCmp::Eq(k) => (x == *k) | (y == *k),
            PCmp::Lanes(l) => l.contains_either(x, y),
            PCmp::Table(t) => t.contains(x) | t.contains(y),
            PCmp::Range(lo, hi) => (*lo <= x) & (x <= *hi) | (*lo <= y) & (y <= *hi),
            PCmp::Gt(k) => (x > *k) | (y > *k),
            PCmp::Ge(k) => (x >= *k) | (y >= *k),
            PCmp::AnyBits(k) => (x | y) & *k != 0,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            PCmp::Never => "never",
            PCmp::Eq(_) => "eq",
            PCmp::Lanes(_) if U32x8::IS_SIMD => "simd-sse2",
            PCmp::Lanes(_) => "lanes",
            PCmp::Table(_) => "hash",
            PCmp::Range(..) => "range",
            PCmp::Gt(_) | PCmp::Ge(_) => "order",
            PCmp::AnyBits(_) => "bits",
        }
    }
}

fn table_of(v: &[u32]) -> HashTable {
    let mut t = HashTable::with_capacity(v.len());
    for &x in v {
        t.insert(x);
    }
    t
}

/// A prepared [`Atom`].
#[derive(Clone, Debug)]
struct PAtom {
    field: PField,
    cmp: PCmp,
    negate: bool,
}

impl PAtom {
    fn new(a: &Atom) -> PAtom {
        PAtom { field: PField::new(&a.field), cmp: PCmp::new(&a.cmp), negate: a.negate }
    }

    #[inline(always)]
    fn eval(&self, p: &mut Pkt<'_>) -> Result<bool, Abort> {
        Ok(self.cmp.test(self.field.read(p)?) != self.negate)
    }
}

/// A prepared instruction. The first variants are superinstructions for
/// the most common shapes, run without dispatching on the load or the
/// comparison.
#[derive(Clone, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum Op {
    /// `u8[off] == k` (xor `negate`).
    Eq8 { off: u32, k: u32, negate: bool },
    /// `u16[off] == k` (xor `negate`).
    Eq16 { off: u32, k: u32, negate: bool },
    /// `u32[off] & mask == k` (xor `negate`).
    Eq32 { off: u32, mask: u32, k: u32, negate: bool },
    /// `u32[off0] & mask == k or u32[off1] & mask == k` (xor `negate`):
    /// `src or dst net`.
    Either32 { offs: [u32; 2], mask: u32, k: u32, negate: bool },
    /// `u16[ihl + off0] in cmp or u16[ihl + off1] in cmp` (xor `negate`),
    /// `ihl` from the IPv4 header at `ihl_at`: `port` sets.
    /// `first`: a merged instruction's first values ([`Instr::Either`]),
    /// within `cmp`, deciding alone when the second field is out of bounds.
    Ports { ihl_at: u32, offs: [u32; 2], cmp: PCmp, negate: bool, first: Option<Box<PCmp>> },
    Test(PAtom),
    Either { fields: [PField; 2], cmp: PCmp, negate: bool, first: Option<Box<PCmp>> },
    /// `u16[eth_at] == 0x800 and u8[proto_at] == proto [and u16[frag_at] &
    /// 0x1fff == 0]`, fused.
    Ipv4L4 { eth_at: u32, proto_at: u32, proto: u32, frag_at: Option<u32> },
    All(Arc<[PAtom]>),
    Any(Arc<[PAtom]>),
    /// Alternatives whose conjunctions all start with `key == k` on the same
    /// field (`host X`: ethertype 0x800 and src, 0x800 and dst, 0x806 and
    /// ..., 0x8035 and ...): the key is loaded once (every conjunction would
    /// load the same bytes first, with the same outcome), and a conjunction
    /// whose `k` differs fails with no load.
    Keyed { key: PField, arms: Arc<[(u32, Arc<[PAtom]>)]> },
    Alternatives(Arc<[Arc<[PAtom]>]>),
    /// Alternatives of single tests ("escapes") then a last conjunction of
    /// the [`NoneOf`] shape: `not tcp port (80 or 25)` after `ip` is
    /// `proto != 6 or fragment or none of the ports`.
    Unless { escapes: Arc<[PAtom]>, rest: NoneOf },
    /// [`Op::Unless`] with the escapes `u8[proto_at] != proto` and
    /// `u16[frag_at] & 0x1fff != 0`: `not tcp port (...)` after `ip`.
    UnlessL4 { proto_at: u32, proto: u32, frag_at: u32, rest: NoneOf },
    /// A run of instructions fused into one (single-pass programs only,
    /// where no copied mark refers to the positions inside it).
    NoneOf(NoneOf),
}

/// `not f in A and not g in G and not f in F`, tested in that order: the
/// run of negated equalities `not host a and not host b ...` or `not port
/// (a or b)` becomes (see `merge_negated_runs` in the translation). With
/// both fields in the captured bytes, the tests run without a branch
/// between them.
#[derive(Clone, Debug)]
struct NoneOf {
    loads: Pair,
    a: PCmp,
    rest: Rest,
}

/// How [`NoneOf`] loads its two fields.
#[derive(Clone, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum Pair {
    /// Unmasked words at fixed offsets (`ip src`, `ip dst`).
    Direct32([u32; 2]),
    /// Unmasked halfwords past the IPv4 header (ports).
    Ipv4Half { ihl_at: u32, offs: [u32; 2] },
    /// Any other two fields (boxed, as the rarer forms below: steps stay
    /// small, so that updates move and allocate less).
    Fields(Box<[PField; 2]>),
}

/// What [`NoneOf`] tests once both fields are loaded.
#[derive(Clone, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum Rest {
    /// `G = F` and `A` within it: `f in F or g in F`.
    Same(PCmp),
    /// [`Rest::Same`] on adjacent halfwords (ports), `F` of at most
    /// eight values: both tested in one go from a 4-byte load.
    Halves(U16Pairs),
    /// `f in A or g in G or f in F`: `[G, F]`.
    Apart(Box<[PCmp; 2]>),
}

impl NoneOf {
    /// From atoms `[not f in A, not g in G(, not f in F)]`.
    fn new(atoms: &[&Atom]) -> Option<NoneOf> {
        let neg_set = |a: &Atom| a.negate && matches!(a.cmp, Cmp::In(_));
        let (fa, ga, fs) = match atoms {
            [x, y] => (x, y, None),
            [x, y, z] if z.field == x.field && neg_set(z) => (x, y, Some(&z.cmp)),
            _ => return None,
        };
        if !neg_set(fa) || !neg_set(ga) || fa.field == ga.field {
            return None;
        }
        let (Cmp::In(sa), Cmp::In(sg)) = (&fa.cmp, &ga.cmp) else { return None };
        // `f in A or g in G or f in F` = `f in G or g in G` when `F = G`
        // and `A` is within `G`, or when there is no `F` and `A = G`.
        let same = match fs {
            Some(Cmp::In(sf)) => sf == sg && sa.sorted().into_iter().all(|v| sg.contains(v)),
            Some(_) => false,
            None => sa == sg,
        };
        let rest = if same {
            Rest::Same(PCmp::new(&ga.cmp))
        } else {
            Rest::Apart(Box::new([PCmp::new(&ga.cmp), fs.map_or(PCmp::Never, PCmp::new)]))
        };
        let (f, g) = (PField::new(&fa.field), PField::new(&ga.field));
        let loads = match (f, g) {
            (
                PField { loc: Loc::Direct(o0), size: Size::Word, mask: u32::MAX },
                PField { loc: Loc::Direct(o1), size: Size::Word, mask: u32::MAX },
            ) => Pair::Direct32([o0, o1]),
            (
                PField { loc: Loc::Ipv4 { ihl_at: a0, offset: o0 }, size: Size::Half, mask: u32::MAX },
                PField { loc: Loc::Ipv4 { ihl_at: a1, offset: o1 }, size: Size::Half, mask: u32::MAX },
            ) if a0 == a1 => Pair::Ipv4Half { ihl_at: a0, offs: [o0, o1] },
            _ => Pair::Fields(Box::new([f, g])),
        };
        // Adjacent halfwords (source and destination port) tested together.
        let rest = match (&loads, rest) {
            (Pair::Ipv4Half { offs: [o0, o1], .. }, Rest::Same(PCmp::Lanes(lanes))) => {
                match U16Pairs::new(&sg.sorted()).filter(|_| o0.abs_diff(*o1) == 2) {
                    Some(pairs) => Rest::Halves(pairs),
                    None => Rest::Same(PCmp::Lanes(lanes)),
                }
            }
            (_, rest) => rest,
        };
        Some(NoneOf { loads, a: PCmp::new(&fa.cmp), rest })
    }

    #[inline(always)]
    fn eval(&self, p: &mut Pkt<'_>) -> Result<bool, Abort> {
        let (x, y) = match &self.loads {
            Pair::Direct32([o0, o1]) => {
                let x = p.load(u64::from(*o0), Size::Word)?;
                (x, p.load(u64::from(*o1), Size::Word))
            }
            Pair::Ipv4Half { ihl_at, offs: [o0, o1] } => {
                let h = p.ihl(*ihl_at)?;
                if let Rest::Halves(pairs) = &self.rest {
                    // Both fields in the captured bytes: one load.
                    if let Some(w) = p.bytes4(h + u64::from((*o0).min(*o1))) {
                        return Ok(!pairs.contains_either_be(w));
                    }
                }
                let x = p.load(h + u64::from(*o0), Size::Half)?;
                (x, p.load(h + u64::from(*o1), Size::Half))
            }
            Pair::Fields(fg) => {
                let [f, g] = &**fg;
                let x = f.read(p)?;
                (x, g.read(p))
            }
        };
        match y {
            // Both loaded: the same verdict with every test run.
            Ok(y) => Ok(!match &self.rest {
                Rest::Same(c) => c.test_either(x, y),
                Rest::Halves(pairs) => {
                    let (x, y) = ((x as u16).to_be_bytes(), (y as u16).to_be_bytes());
                    pairs.contains_either_be([x[0], x[1], y[0], y[1]])
                }
                Rest::Apart(gf) => self.a.test(x) | gf[0].test(y) | gf[1].test(x),
            }),
            // `x in A` holds before `g` is loaded; otherwise `g` aborts.
            Err(Abort) if self.a.test(x) => Ok(false),
            Err(Abort) => Err(Abort),
        }
    }

    fn kind(&self) -> String {
        match &self.rest {
            Rest::Same(c) => format!("none-of/{}", c.kind()),
            Rest::Halves(_) if U16Pairs::IS_SIMD => "none-of/halves-sse2".to_string(),
            Rest::Halves(_) => "none-of/halves".to_string(),
            Rest::Apart(gf) => format!("none-of({},{},{})", self.a.kind(), gf[0].kind(), gf[1].kind()),
        }
    }
}

impl Op {
    fn new(i: &Instr) -> Op {
        match i {
            Instr::Test(a) => {
                let p = PAtom::new(a);
                match (p.field.loc, p.field.size, p.field.mask, &p.cmp) {
                    (Loc::Direct(off), Size::Byte, u32::MAX, PCmp::Eq(k)) => Op::Eq8 { off, k: *k, negate: p.negate },
                    (Loc::Direct(off), Size::Half, u32::MAX, PCmp::Eq(k)) => Op::Eq16 { off, k: *k, negate: p.negate },
                    (Loc::Direct(off), Size::Word, mask, PCmp::Eq(k)) => Op::Eq32 { off, mask, k: *k, negate: p.negate },
                    _ => Op::Test(p),
                }
            }
            Instr::Either { fields, cmp: c, negate, first } => {
                let (f0, f1, cmp) = (PField::new(&fields[0]), PField::new(&fields[1]), PCmp::new(c));
                // The first values within the comparison: with both fields
                // loaded, `f0 in A1 or f1 cmp or f0 cmp` is `f0 cmp or f1 cmp`.
                let within = match (first, c) {
                    (None, _) => true,
                    (Some(a1), Cmp::In(s)) => a1.sorted().into_iter().all(|v| s.contains(v)),
                    (Some(_), _) => false,
                };
                let first = first.as_ref().map(|a1| Box::new(PCmp::of_set(a1)));
                match (f0, f1, &cmp) {
                    (
                        PField { loc: Loc::Direct(o0), size: Size::Word, mask: m0 },
                        PField { loc: Loc::Direct(o1), size: Size::Word, mask: m1 },
                        PCmp::Eq(k),
                    ) if m0 == m1 && first.is_none() => Op::Either32 { offs: [o0, o1], mask: m0, k: *k, negate: *negate },
                    (
                        PField { loc: Loc::Ipv4 { ihl_at: a0, offset: o0 }, size: Size::Half, mask: u32::MAX },
                        PField { loc: Loc::Ipv4 { ihl_at: a1, offset: o1 }, size: Size::Half, mask: u32::MAX },
                        _,
                    ) if a0 == a1 && within => Op::Ports { ihl_at: a0, offs: [o0, o1], cmp, negate: *negate, first },
                    _ => Op::Either { fields: [f0, f1], cmp, negate: *negate, first },
                }
            }
            Instr::All(atoms) => ipv4_l4(atoms).unwrap_or_else(|| Op::All(atoms.iter().map(PAtom::new).collect())),
            Instr::Any(atoms) => Op::Any(atoms.iter().map(PAtom::new).collect()),
            Instr::Alternatives(alts) => keyed(alts).or_else(|| unless(alts)).unwrap_or_else(|| {
                Op::Alternatives(alts.iter().map(|c| c.iter().map(PAtom::new).collect()).collect())
            }),
        }
    }

    #[inline(always)]
    fn eval(&self, p: &mut Pkt<'_>) -> Result<bool, Abort> {
        match self {
            Op::Eq8 { off, k, negate } => Ok((p.load(u64::from(*off), Size::Byte)? == *k) != *negate),
            Op::Eq16 { off, k, negate } => Ok((p.load(u64::from(*off), Size::Half)? == *k) != *negate),
            Op::Eq32 { off, mask, k, negate } => Ok((p.load(u64::from(*off), Size::Word)? & mask == *k) != *negate),
            Op::Either32 { offs, mask, k, negate } => {
                let hit = p.load(u64::from(offs[0]), Size::Word)? & mask == *k
                    || p.load(u64::from(offs[1]), Size::Word)? & mask == *k;
                Ok(hit != *negate)
            }
            Op::Ports { ihl_at, offs, cmp, negate, first } => ports_eval(p, *ihl_at, *offs, cmp, *negate, first.as_deref()),
            Op::Test(a) => a.eval(p),
            Op::Ipv4L4 { eth_at, proto_at, proto, frag_at } => ipv4_l4_eval(p, *eth_at, *proto_at, *proto, *frag_at),
            Op::Either { fields, cmp, negate, first: None } => {
                let hit = cmp.test(fields[0].read(p)?) || cmp.test(fields[1].read(p)?);
                Ok(hit != *negate)
            }
            Op::Either { fields, cmp, negate, first: Some(a1) } => {
                let x = fields[0].read(p)?;
                let hit = a1.test(x) || {
                    let y = fields[1].read(p)?;
                    cmp.test(y) || cmp.test(x)
                };
                Ok(hit != *negate)
            }
            Op::All(atoms) => {
                for a in atoms.iter() {
                    if !a.eval(p)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Op::Any(atoms) => {
                for a in atoms.iter() {
                    if a.eval(p)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Op::Keyed { key, arms } => {
                let v = key.read(p)?;
                'arm: for (k, rest) in arms.iter() {
                    if v != *k {
                        continue;
                    }
                    for a in rest.iter() {
                        if !a.eval(p)? {
                            continue 'arm;
                        }
                    }
                    return Ok(true);
                }
                Ok(false)
            }
            Op::Unless { escapes, rest } => {
                for e in escapes.iter() {
                    if e.eval(p)? {
                        return Ok(true);
                    }
                }
                rest.eval(p)
            }
            Op::NoneOf(n) => n.eval(p),
            Op::UnlessL4 { proto_at, proto, frag_at, rest } => {
                if p.load(u64::from(*proto_at), Size::Byte)? != *proto
                    || p.load(u64::from(*frag_at), Size::Half)? & 0x1fff != 0
                {
                    return Ok(true);
                }
                rest.eval(p)
            }
            Op::Alternatives(alts) => {
                'alt: for conj in alts.iter() {
                    for a in conj.iter() {
                        if !a.eval(p)? {
                            continue 'alt;
                        }
                    }
                    return Ok(true);
                }
                Ok(false)
            }
        }
    }

    fn kind(&self) -> String {
        let atoms = |v: &[PAtom]| v.iter().map(|a| a.cmp.kind()).collect::<Vec<_>>().join(",");
        match self {
            Op::Eq8 { .. } | Op::Eq16 { .. } | Op::Eq32 { .. } => "eq".to_string(),
            Op::Either32 { .. } => "either/eq".to_string(),
            Op::Ports { cmp, .. } => format!("ports/{}", cmp.kind()),
            Op::Test(a) => a.cmp.kind().to_string(),
            Op::Either { cmp, .. } => format!("either/{}", cmp.kind()),
            Op::Ipv4L4 { .. } => "ipv4-l4".to_string(),
            Op::All(v) => format!("all({})", atoms(v)),
            Op::Any(v) => format!("any({})", atoms(v)),
            Op::Keyed { arms, .. } => {
                format!("keyed({})", arms.iter().map(|(_, c)| atoms(c)).collect::<Vec<_>>().join(" | "))
            }
            Op::Alternatives(v) => {
                format!("alternatives({})", v.iter().map(|c| atoms(c)).collect::<Vec<_>>().join(" | "))
            }
            Op::Unless { escapes, rest } => format!("unless({} | {})", atoms(escapes), rest.kind()),
            Op::NoneOf(n) => n.kind(),
            Op::UnlessL4 { rest, .. } => format!("unless-l4({})", rest.kind()),
        }
    }
}

/// [`Op::Keyed`], when every conjunction of `alts` starts with an
/// un-negated single-value equality on the same field.
fn keyed(alts: &[Vec<Atom>]) -> Option<Op> {
    let first = alts.first()?.first()?;
    let mut arms = Vec::with_capacity(alts.len());
    for conj in alts {
        let (head, rest) = conj.split_first()?;
        if head.field != first.field || head.negate {
            return None;
        }
        let k = match &head.cmp {
            Cmp::In(ValueSet::Small(v)) if v.len() == 1 => v[0],
            _ => return None,
        };
        arms.push((k, rest.iter().map(PAtom::new).collect()));
    }
    Some(Op::Keyed { key: PField::new(&first.field), arms: arms.into() })
}

/// [`Op::Unless`], when every alternative but the last is one test and
/// the last is of the [`NoneOf`] shape.
fn unless(alts: &[Vec<Atom>]) -> Option<Op> {
    let (last, init) = alts.split_last()?;
    let mut escapes = Vec::with_capacity(init.len());
    for c in init {
        match &c[..] {
            [a] => escapes.push(PAtom::new(a)),
            _ => return None,
        }
    }
    let rest = NoneOf::new(&last.iter().collect::<Vec<_>>())?;
    let direct = |a: &Atom, size: Size| match (a.field.source, a.field.mask) {
        (Source::Load { size: s, addr: Addr::Direct(k) }, None) if s == size => Some(k),
        _ => None,
    };
    if let [Some(e), Some(f)] = [init.first(), init.get(1)].map(|c| c.and_then(|c| c.first())) {
        let proto = match &e.cmp {
            Cmp::In(ValueSet::Small(v)) if v.len() == 1 && e.negate => v.first().copied(),
            _ => None,
        };
        let frag = !f.negate && f.cmp == Cmp::AnyBits(0x1fff);
        if let (2, Some(proto), true, Some(proto_at), Some(frag_at)) =
            (init.len(), proto, frag, direct(e, Size::Byte), direct(f, Size::Half))
        {
            return Some(Op::UnlessL4 { proto_at, proto, frag_at, rest });
        }
    }
    Some(Op::Unless { escapes: escapes.into(), rest })
}

/// [`Op::Ipv4L4`].
#[inline(always)]
fn ipv4_l4_eval(p: &mut Pkt<'_>, eth_at: u32, proto_at: u32, proto: u32, frag_at: Option<u32>) -> Result<bool, Abort> {
    if p.load(u64::from(eth_at), Size::Half)? != 0x800 || p.load(u64::from(proto_at), Size::Byte)? != proto {
        return Ok(false);
    }
    match frag_at {
        Some(f) => Ok(p.load(u64::from(f), Size::Half)? & 0x1fff == 0),
        None => Ok(true),
    }
}

/// [`Op::Ports`].
#[inline(always)]
fn ports_eval(
    p: &mut Pkt<'_>,
    ihl_at: u32,
    offs: [u32; 2],
    cmp: &PCmp,
    negate: bool,
    first: Option<&PCmp>,
) -> Result<bool, Abort> {
    let h = p.ihl(ihl_at)?;
    let (a, b) = (h + u64::from(offs[0]), h + u64::from(offs[1]));
    // Both fields in the captured bytes: load both, test both at once, no
    // branch on the first one's outcome. Otherwise in order: the first may
    // hold before the second aborts (only a merged instruction's first
    // values, `first`, within `cmp`).
    let hit = match (p.load(a, Size::Half), p.load(b, Size::Half)) {
        (Ok(x), Ok(y)) => cmp.test_either(x, y),
        (Ok(x), Err(Abort)) => {
            if !first.unwrap_or(cmp).test(x) {
                return Err(Abort);
            }
            true
        }
        (Err(Abort), _) => return Err(Abort),
    };
    Ok(hit != negate)
}

/// A whole one-pass program of a common shape, run as one straight
/// function with no per-step dispatch (see [`Fused::new`]).
#[derive(Clone, Debug)]
pub(crate) struct Fused(Plan);

#[derive(Clone, Debug)]
#[repr(u8)] // a plain tag byte: one load and a jump per dispatch, no niche decoding
enum Plan {
    /// No step: every packet matches.
    True,
    /// `[ipv4-l4 with the fragment test, ports with 2 to 8 values]`: `ip
    /// and tcp port (a or b ...)`, in SIMD lanes.
    L4PortsLanes(L4PortsLanes),
    /// `[ipv4-l4, ports]` with any comparison.
    L4Ports(Box<L4Ports>),
    /// One step.
    One(Op),
    /// Any other pass: its steps in a row (runs of negated set tests fused
    /// into [`Op::NoneOf`]), with no copied-mark bookkeeping.
    Straight(Box<[Op]>),
}

/// [`Plan::L4PortsLanes`].
#[derive(Clone, Debug)]
struct L4PortsLanes {
    eth_at: u32,
    proto_at: u32,
    proto: u32,
    frag_at: u32,
    ihl_at: u32,
    offs: [u32; 2],
    lanes: U32x8,
    /// The values again, for both fields at once when they are adjacent
    /// (source and destination port): one 4-byte load, no byte swap.
    pairs: Option<U16Pairs>,
    negate: bool,
    /// As in [`Op::Ports`] (boxed: only tested on cut packets).
    first: Option<Box<PCmp>>,
}

impl L4PortsLanes {
    #[inline(always)]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        let p = &mut Pkt::new(data, wire_len);
        if !matches!(ipv4_l4_eval(p, self.eth_at, self.proto_at, self.proto, Some(self.frag_at)), Ok(true)) {
            return false;
        }
        let Ok(h) = p.ihl(self.ihl_at) else { return false };
        let (a, b) = (h + u64::from(self.offs[0]), h + u64::from(self.offs[1]));
        // Both fields in the captured bytes: the same verdict as below.
        if let (Some(pairs), Some(w)) = (&self.pairs, p.bytes4(a.min(b))) {
            return pairs.contains_either_be(w) != self.negate;
        }
        match (p.load(a, Size::Half), p.load(b, Size::Half)) {
            (Ok(x), Ok(y)) => self.lanes.contains_either(x, y) != self.negate,
            (Ok(x), Err(Abort)) => {
                !self.negate && self.first.as_deref().map_or_else(|| self.lanes.contains(x), |a1| a1.test(x))
            }
            (Err(Abort), _) => false,
        }
    }
}

/// [`Plan::L4Ports`].
#[derive(Clone, Debug)]
struct L4Ports {
    eth_at: u32,
    proto_at: u32,
    proto: u32,
    frag_at: Option<u32>,
    ihl_at: u32,
    offs: [u32; 2],
    cmp: PCmp,
    negate: bool,
    first: Option<Box<PCmp>>,
}

impl L4Ports {
    #[inline(always)]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        let p = &mut Pkt::new(data, wire_len);
        matches!(ipv4_l4_eval(p, self.eth_at, self.proto_at, self.proto, self.frag_at), Ok(true))
            && matches!(ports_eval(p, self.ihl_at, self.offs, &self.cmp, self.negate, self.first.as_deref()), Ok(true))
    }
}

/// A one-step plan's verdict.
#[inline(always)]
fn one_matches(op: &Op, data: &[u8], wire_len: u32) -> bool {
    matches!(op.eval(&mut Pkt::new(data, wire_len)), Ok(true))
}

/// A straight plan's verdict: every step holds, in order.
#[inline(always)]
fn straight_matches(ops: &[Op], data: &[u8], wire_len: u32) -> bool {
    let p = &mut Pkt::new(data, wire_len);
    for op in ops {
        if !matches!(op.eval(p), Ok(true)) {
            return false;
        }
    }
    true
}

impl Fused {
    /// The fused form of the only pass of a program: `instrs` and their
    /// `steps`.
    pub(crate) fn new(instrs: &[Arc<Instr>], steps: &[Step]) -> Option<Fused> {
        if instrs.len() != steps.len() {
            return None;
        }
        let plan = match steps {
            [] => Plan::True,
            [Step { op: Op::Ipv4L4 { eth_at, proto_at, proto, frag_at }, .. }, Step { op: Op::Ports { ihl_at, offs, cmp, negate, first }, .. }] => {
                match (frag_at, cmp) {
                    (Some(frag_at), PCmp::Lanes(lanes)) => Plan::L4PortsLanes(L4PortsLanes {
                        eth_at: *eth_at,
                        proto_at: *proto_at,
                        proto: *proto,
                        frag_at: *frag_at,
                        ihl_at: *ihl_at,
                        offs: *offs,
                        lanes: *lanes,
                        pairs: match instrs.get(1).map(|i| &**i) {
                            Some(Instr::Either { cmp: Cmp::In(set), .. }) if offs[0].abs_diff(offs[1]) == 2 => {
                                U16Pairs::new(&set.sorted())
                            }
                            _ => None,
                        },
                        negate: *negate,
                        first: first.clone(),
                    }),
                    _ => Plan::L4Ports(Box::new(L4Ports {
                        eth_at: *eth_at,
                        proto_at: *proto_at,
                        proto: *proto,
                        frag_at: *frag_at,
                        ihl_at: *ihl_at,
                        offs: *offs,
                        cmp: cmp.clone(),
                        negate: *negate,
                        first: first.clone(),
                    })),
                }
            }
            [one] => Plan::One(one.op.clone()),
            _ => Plan::Straight(straight(instrs, steps)),
        };
        Some(Fused(plan))
    }

    /// The verdict: the steps' conjunction, an abort rejecting.
    #[inline(always)]
    pub(crate) fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        match &self.0 {
            Plan::True => true,
            Plan::L4PortsLanes(l) => l.matches(data, wire_len),
            Plan::L4Ports(_) | Plan::One(_) | Plan::Straight(_) => self.matches_other(data, wire_len),
        }
    }

    /// [`crate::Program::for_each_verdict`] for this program: the plan is
    /// chosen once, outside the loop, and runs inline in it.
    #[inline(always)]
    pub(crate) fn for_each_verdict<T>(
        &self,
        items: &[T],
        packet: impl Fn(&T) -> (&[u8], u32),
        mut verdict: impl FnMut(usize, bool),
    ) {
        match &self.0 {
            Plan::True => (0..items.len()).for_each(|i| verdict(i, true)),
            Plan::L4PortsLanes(l) => batch!(items, packet, verdict, |d, w| l.matches(d, w)),
            Plan::L4Ports(l) => batch!(items, packet, verdict, |d, w| l.matches(d, w)),
            Plan::One(op) => batch!(items, packet, verdict, |d, w| one_matches(op, d, w)),
            Plan::Straight(ops) => batch!(items, packet, verdict, |d, w| straight_matches(ops, d, w)),
        }
    }

    /// The plans [`Fused::matches`] keeps out of line (the per-packet
    /// entry point stays small).
    #[inline(never)]
    fn matches_other(&self, data: &[u8], wire_len: u32) -> bool {
        match &self.0 {
            Plan::True => true,
            Plan::L4PortsLanes(l) => l.matches(data, wire_len),
            Plan::L4Ports(l) => l.matches(data, wire_len),
            Plan::One(op) => one_matches(op, data, wire_len),
            Plan::Straight(ops) => straight_matches(ops, data, wire_len),
        }
    }
}

/// The steps of a single pass as [`Plan::Straight`] runs them: runs of
/// two or three negated set tests of the [`NoneOf`] shape become one step.
fn straight(instrs: &[Arc<Instr>], steps: &[Step]) -> Box<[Op]> {
    let test = |i: usize| match instrs.get(i).map(|x| &**x) {
        Some(Instr::Test(a)) => Some(a),
        _ => None,
    };
    let mut ops = Vec::with_capacity(steps.len());
    let mut i = 0;
    while let Some(step) = steps.get(i) {
        let fused = [3, 2].into_iter().find_map(|n| {
            let atoms: Option<Vec<&Atom>> = (i..i + n).map(test).collect();
            Some((n, NoneOf::new(&atoms?)?))
        });
        match fused {
            Some((n, none_of)) => {
                ops.push(Op::NoneOf(none_of));
                i += n;
            }
            None => {
                ops.push(step.op.clone());
                i += 1;
            }
        }
    }
    ops.into_boxed_slice()
}

/// The fused IPv4 + protocol (+ not a fragment) step, when `atoms` is
/// exactly that: direct unmasked loads compared with single values.
fn ipv4_l4(atoms: &[Atom]) -> Option<Op> {
    let direct = |a: &Atom, size: Size| match (a.field.source, a.field.mask) {
        (Source::Load { size: s, addr: Addr::Direct(k) }, None) if s == size => Some(k),
        _ => None,
    };
    let single = |a: &Atom| match &a.cmp {
        Cmp::In(ValueSet::Small(v)) if v.len() == 1 && !a.negate => v.first().copied(),
        _ => None,
    };
    let (eth, proto, frag) = match atoms {
        [e, p] => (e, p, None),
        [e, p, f] => (e, p, Some(f)),
        _ => return None,
    };
    let eth_at = direct(eth, Size::Half)?;
    if single(eth)? != 0x800 {
        return None;
    }
    let proto_at = direct(proto, Size::Byte)?;
    let proto = single(proto)?;
    let frag_at = match frag {
        None => None,
        Some(f) if f.negate && f.cmp == Cmp::AnyBits(0x1fff) => Some(direct(f, Size::Half)?),
        Some(_) => return None,
    };
    Some(Op::Ipv4L4 { eth_at, proto_at, proto, frag_at })
}

/// One instruction of a pass as the packet path runs it.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    op: Op,
    /// Skipped when the previous pass got past this position.
    pub(crate) copied: bool,
}

impl Step {
    pub(crate) fn new(i: &Instr, copied: bool) -> Step {
        Step { op: Op::new(i), copied }
    }

    /// The same step with the copied mark `copied`.
    pub(crate) fn marked(&self, copied: bool) -> Step {
        Step { op: self.op.clone(), copied }
    }

    /// A step that holds and loads nothing.
    pub(crate) fn always() -> Step {
        Step { op: Op::All(Arc::new([])), copied: false }
    }

    #[inline(always)]
    pub(crate) fn eval(&self, p: &mut Pkt<'_>) -> Result<bool, Abort> {
        self.op.eval(p)
    }

    /// How the step runs (`eq`, `simd-sse2`, `hash`, `ipv4-l4`, ...).
    pub(crate) fn kind(&self) -> String {
        self.op.kind()
    }
}

/// Runs `pass` from step `start` with hierarchical execution (see
/// `Program::matches_passes`): `Ok(true)` accepted, `Ok(false)` failed
/// (`prev_failed` = where), `Err` aborted.
#[inline(always)]
pub(crate) fn run_pass(pass: &Pass, start: usize, p: &mut Pkt<'_>, prev_failed: &mut usize) -> Result<bool, Abort> {
    for (i, step) in pass.steps.iter().enumerate().skip(start) {
        if step.copied && i <= *prev_failed {
            if i == *prev_failed {
                // Failed in the previous pass: fails here too.
                return Ok(false);
            }
            continue;
        }
        if !step.eval(p)? {
            *prev_failed = i;
            return Ok(false);
        }
    }
    Ok(true)
}

/// A `host X` first instruction's shape: the key field, the arms
/// `(k_j, f_j)`, and `X`.
type HostShape = (Field, Vec<(u32, Field)>, u32);

/// The shape of a `host X` first instruction: alternatives `key == k_j and
/// f_j == X` (ethertype, then the IPv4 / ARP / RARP address fields), `X`
/// the same in every arm.
fn host_shape(i: &Instr) -> Option<HostShape> {
    let Instr::Alternatives(alts) = i else { return None };
    let single = |a: &Atom| match &a.cmp {
        Cmp::In(ValueSet::Small(v)) if v.len() == 1 && !a.negate => v.first().copied(),
        _ => None,
    };
    let (mut key, mut x) = (None, None);
    let mut arms = Vec::with_capacity(alts.len());
    for conj in alts {
        let [k, f] = &conj[..] else { return None };
        if *key.get_or_insert(k.field) != k.field || *x.get_or_insert(single(f)?) != single(f)? {
            return None;
        }
        arms.push((single(k)?, f.field));
    }
    Some((key?, arms, x?))
}

/// Ranges of passes, `(first pass, end)`.
type PassRanges = Box<[(u32, u32)]>;

/// A run of passes whose first instructions are `host X` tests of the same
/// shape, for several `X` (the FTP filter's servers), and where each `X`'s
/// passes (a group) start.
#[derive(Debug)]
struct HostRun {
    start: usize,
    end: usize,
    key: PField,
    arms: Box<[(u32, PField)]>,
    /// `X` and its groups, `(first pass, end)`, in pass order; sorted by `X`.
    groups: Box<[(u32, PassRanges)]>,
}

/// The passes of a program with its [`HostRun`]s: a packet tries only the
/// groups of the `X` its address fields hold. Every other group's first
/// instruction loads the same fields and compares them with a constant
/// they do not hold: it fails without aborting, so skipping it changes
/// nothing (where a field is cut off, the run is evaluated pass by pass).
#[derive(Debug)]
pub(crate) struct HostIndex {
    passes: Box<[Arc<Pass>]>,
    runs: Box<[HostRun]>,
}

impl HostIndex {
    /// Fewest groups in a run worth indexing.
    const MIN_GROUPS: usize = 3;

    /// The index of a program's passes, if it has runs worth one.
    pub(crate) fn build<'a>(passes: impl Iterator<Item = &'a Arc<Pass>>) -> Option<HostIndex> {
        let passes: Vec<&Arc<Pass>> = passes.collect();
        let shapes: Vec<_> = passes.iter().map(|p| p.instrs.first().and_then(|i| host_shape(i))).collect();
        let mut runs = Vec::new();
        // Pass 0 runs from the program's head: runs start at 1.
        let mut i = 1;
        while i < passes.len() {
            let Some((key, arms, _)) = &shapes[i] else {
                i += 1;
                continue;
            };
            let mut j = i;
            let mut groups: Vec<(u32, Vec<(u32, u32)>)> = Vec::new();
            while let Some(Some((k2, a2, x))) = shapes.get(j) {
                if k2 != key || a2 != arms {
                    break;
                }
                let same_group = j > i && shapes[j - 1].as_ref().is_some_and(|s| s.2 == *x);
                let (at, end) = (j as u32, j as u32 + 1);
                if same_group {
                    if let Some(g) = groups.iter_mut().find(|g| g.0 == *x).and_then(|g| g.1.last_mut()) {
                        g.1 = end;
                    }
                } else {
                    match groups.iter_mut().find(|g| g.0 == *x) {
                        Some(g) => g.1.push((at, end)),
                        None => groups.push((*x, vec![(at, end)])),
                    }
                }
                j += 1;
            }
            if groups.len() >= Self::MIN_GROUPS {
                groups.sort_unstable_by_key(|g| g.0);
                runs.push(HostRun {
                    start: i,
                    end: j,
                    key: PField::new(key),
                    arms: arms.iter().map(|(k, f)| (*k, PField::new(f))).collect(),
                    groups: groups.into_iter().map(|(x, v)| (x, v.into_boxed_slice())).collect(),
                });
            }
            i = j.max(i + 1);
        }
        if runs.is_empty() {
            return None;
        }
        Some(HostIndex { passes: passes.into_iter().cloned().collect(), runs: runs.into_boxed_slice() })
    }

    /// The passes after the head (pass 0's first `head_len` steps, which
    /// held if `head_held`; `prev_failed` where it failed).
    pub(crate) fn matches(&self, p: &mut Pkt<'_>, head_len: usize, head_held: bool, mut prev_failed: usize) -> bool {
        let mut at = 0;
        if head_held {
            match self.passes.first().map(|pass| run_pass(pass, head_len, p, &mut prev_failed)) {
                Some(Ok(true)) => return true,
                Some(Err(Abort)) => return false,
                _ => {}
            }
        }
        at += 1;
        for run in self.runs.iter() {
            // The passes before the run, one by one.
            while at < run.start {
                match run_pass(&self.passes[at], 0, p, &mut prev_failed) {
                    Ok(true) => return true,
                    Err(Abort) => return false,
                    Ok(false) => at += 1,
                }
            }
            // The fields every non-matching group's first step loads.
            let Ok(key) = run.key.read(p) else { return false };
            let mut vals = [0u32; 8];
            let mut n = 0;
            let mut cut = false;
            for (k, f) in run.arms.iter() {
                if *k != key {
                    continue;
                }
                match f.read(p) {
                    Ok(v) if n < vals.len() => {
                        vals[n] = v;
                        n += 1;
                    }
                    _ => {
                        cut = true;
                        break;
                    }
                }
            }
            if cut {
                // Pass by pass (an abort decides where it happens).
                while at < run.end {
                    match run_pass(&self.passes[at], 0, p, &mut prev_failed) {
                        Ok(true) => return true,
                        Err(Abort) => return false,
                        Ok(false) => at += 1,
                    }
                }
                continue;
            }
            // The groups of the values held, in pass order.
            let mut cands = [(0u32, 0u32); 8];
            let mut c = 0;
            for v in &vals[..n] {
                if let Ok(g) = run.groups.binary_search_by_key(v, |g| g.0) {
                    for &r in run.groups[g].1.iter() {
                        if c == cands.len() {
                            // Too many: pass by pass from here.
                            c = usize::MAX;
                            break;
                        }
                        cands[c] = r;
                        c += 1;
                    }
                }
                if c == usize::MAX {
                    break;
                }
            }
            if c == usize::MAX {
                while at < run.end {
                    match run_pass(&self.passes[at], 0, p, &mut prev_failed) {
                        Ok(true) => return true,
                        Err(Abort) => return false,
                        Ok(false) => at += 1,
                    }
                }
                continue;
            }
            let cands = &mut cands[..c];
            cands.sort_unstable();
            for &(start, end) in cands.iter() {
                let (start, end) = (start as usize, end as usize);
                if end <= at {
                    continue; // the same group through two fields
                }
                if start > at {
                    // Skipped groups failed at their first step.
                    prev_failed = 0;
                    at = start;
                }
                while at < end {
                    match run_pass(&self.passes[at], 0, p, &mut prev_failed) {
                        Ok(true) => return true,
                        Err(Abort) => return false,
                        Ok(false) => at += 1,
                    }
                }
            }
            if at < run.end {
                prev_failed = 0;
                at = run.end;
            }
        }
        while at < self.passes.len() {
            match run_pass(&self.passes[at], 0, p, &mut prev_failed) {
                Ok(true) => return true,
                Err(Abort) => return false,
                Ok(false) => at += 1,
            }
        }
        false
    }
}
