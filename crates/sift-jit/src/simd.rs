//! Small SIMD kernels behind safe APIs, for engines that may not hold
//! `unsafe` code themselves (the dynamic engine's set operands).
//!
//! Rust requires an `unsafe` block to call SSE2 intrinsics from a function
//! without `#[target_feature(enable = "sse2")]`, even where SSE2 is part of
//! the target's baseline (as on every x86-64); this module holds those
//! blocks, each guarded by `cfg(target_feature = "sse2")`.

/// Up to eight `u32` values tested for membership at once: on x86-64 with
/// SSE2 (always), two 128-bit registers of four lanes, membership being a
/// broadcast, two lane-wise compares, an `or` and a mask extraction, with
/// no branch per value; elsewhere, a branch-free scan of a fixed array.
#[derive(Clone, Copy, Debug)]
pub struct U32x8 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    regs: [std::arch::x86_64::__m128i; 2],
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    vals: [u32; 8],
}

impl U32x8 {
    /// True when [`U32x8::contains`] runs as SIMD instructions here.
    pub const IS_SIMD: bool = cfg!(all(target_arch = "x86_64", target_feature = "sse2"));

    /// The lanes for 1 to 8 values (unused lanes repeat the first value);
    /// `None` for no value or more than eight.
    pub fn new(values: &[u32]) -> Option<U32x8> {
        let first = *values.first()?;
        if values.len() > 8 {
            return None;
        }
        let mut v = [first; 8];
        for (slot, x) in v.iter_mut().zip(values) {
            *slot = *x;
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::_mm_set_epi32;
            let i = |k: usize| v[k] as i32;
            // SAFETY: `_mm_set_epi32` needs SSE2, enabled for this build
            // (the cfg above); it takes values, no pointer.
            #[allow(unsafe_code)]
            let regs = unsafe { [_mm_set_epi32(i(3), i(2), i(1), i(0)), _mm_set_epi32(i(7), i(6), i(5), i(4))] };
            Some(U32x8 { regs })
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            Some(U32x8 { vals: v })
        }
    }

    /// Is `x` one of the values?
    #[inline(always)]
    pub fn contains(&self, x: u32) -> bool {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::{_mm_cmpeq_epi32, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi32};
            // SAFETY: these intrinsics need SSE2, enabled for this build
            // (the cfg above); they take registers and values, no pointer.
            #[allow(unsafe_code)]
            unsafe {
                let b = _mm_set1_epi32(x as i32);
                let eq = _mm_or_si128(_mm_cmpeq_epi32(self.regs[0], b), _mm_cmpeq_epi32(self.regs[1], b));
                _mm_movemask_epi8(eq) != 0
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            self.vals.iter().fold(false, |acc, &v| acc | (v == x))
        }
    }

    /// Is `x` or `y` one of the values? Both are tested, with no branch
    /// (four lane-wise compares, one mask extraction): for a field pair
    /// such as source and destination port.
    #[inline(always)]
    pub fn contains_either(&self, x: u32, y: u32) -> bool {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::{_mm_cmpeq_epi32, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi32};
            // SAFETY: these intrinsics need SSE2, enabled for this build
            // (the cfg above); they take registers and values, no pointer.
            #[allow(unsafe_code)]
            unsafe {
                let (bx, by) = (_mm_set1_epi32(x as i32), _mm_set1_epi32(y as i32));
                let ex = _mm_or_si128(_mm_cmpeq_epi32(self.regs[0], bx), _mm_cmpeq_epi32(self.regs[1], bx));
                let ey = _mm_or_si128(_mm_cmpeq_epi32(self.regs[0], by), _mm_cmpeq_epi32(self.regs[1], by));
                _mm_movemask_epi8(_mm_or_si128(ex, ey)) != 0
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            self.vals.iter().fold(false, |acc, &v| acc | (v == x) | (v == y))
        }
    }
}

/// Up to eight 16-bit values tested against both big-endian halves of
/// four packet bytes at once (a field pair such as source and destination
/// port, adjacent in the packet): on x86-64 with SSE2 the four bytes are
/// one 32-bit load broadcast to eight 16-bit lanes, compared with two
/// registers holding every value twice (byte-swapped, so that no byte swap
/// of the packet's bytes is needed): two lane-wise compares, an `or` and a
/// mask extraction. Elsewhere, a scan of a fixed array.
#[derive(Clone, Copy, Debug)]
pub struct U16Pairs {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    regs: [std::arch::x86_64::__m128i; 2],
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    vals: [u16; 8],
}

impl U16Pairs {
    /// True when [`U16Pairs::contains_either_be`] runs as SIMD instructions here.
    pub const IS_SIMD: bool = cfg!(all(target_arch = "x86_64", target_feature = "sse2"));

    /// The registers for 1 to 8 values, each at most `0xffff` (unused
    /// places repeat the first value); `None` otherwise.
    pub fn new(values: &[u32]) -> Option<U16Pairs> {
        let first = u16::try_from(*values.first()?).ok()?;
        if values.len() > 8 {
            return None;
        }
        let mut v = [first; 8];
        for (slot, x) in v.iter_mut().zip(values) {
            *slot = u16::try_from(*x).ok()?;
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::_mm_set_epi16;
            // Lanes 2k and 2k + 1 hold value k (of four per register), as a
            // little-endian load of its big-endian bytes reads it.
            let l = |k: usize| v[k].swap_bytes() as i16;
            // SAFETY: `_mm_set_epi16` needs SSE2, enabled for this build
            // (the cfg above); it takes values, no pointer.
            #[allow(unsafe_code)]
            let regs = unsafe {
                [
                    _mm_set_epi16(l(3), l(3), l(2), l(2), l(1), l(1), l(0), l(0)),
                    _mm_set_epi16(l(7), l(7), l(6), l(6), l(5), l(5), l(4), l(4)),
                ]
            };
            Some(U16Pairs { regs })
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            Some(U16Pairs { vals: v })
        }
    }

    /// Is the big-endian 16-bit value in `bytes[0..2]` or the one in
    /// `bytes[2..4]` one of the values?
    #[inline(always)]
    pub fn contains_either_be(&self, bytes: [u8; 4]) -> bool {
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            use std::arch::x86_64::{_mm_cmpeq_epi16, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi32};
            // SAFETY: these intrinsics need SSE2, enabled for this build
            // (the cfg above); they take registers and values, no pointer.
            #[allow(unsafe_code)]
            unsafe {
                let b = _mm_set1_epi32(i32::from_le_bytes(bytes));
                let eq = _mm_or_si128(_mm_cmpeq_epi16(self.regs[0], b), _mm_cmpeq_epi16(self.regs[1], b));
                _mm_movemask_epi8(eq) != 0
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        {
            let x = u16::from_be_bytes([bytes[0], bytes[1]]);
            let y = u16::from_be_bytes([bytes[2], bytes[3]]);
            self.vals.iter().fold(false, |acc, &v| acc | (v == x) | (v == y))
        }
    }
}

/// Four `u32` slots of a hash table compared at once against a value `v`
/// and the free-slot marker `e`: `(some slot holds v, some slot holds e)`.
/// On x86-64 one unaligned 128-bit load, two lane-wise compares and two
/// mask extractions, with no branch per slot.
#[inline(always)]
pub fn probe4(slots: &[u32; 4], v: u32, e: u32) -> (bool, bool) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{__m128i, _mm_cmpeq_epi32, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi32};
        // SAFETY: `slots` is a live reference to 16 bytes, read unaligned by
        // `_mm_loadu_si128`; the other intrinsics take registers and values.
        // SSE2 is enabled for this build (the cfg above).
        #[allow(unsafe_code)]
        unsafe {
            let g = _mm_loadu_si128(slots.as_ptr().cast::<__m128i>());
            let hit = _mm_movemask_epi8(_mm_cmpeq_epi32(g, _mm_set1_epi32(v as i32)));
            let free = _mm_movemask_epi8(_mm_cmpeq_epi32(g, _mm_set1_epi32(e as i32)));
            (hit != 0, free != 0)
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        (slots.contains(&v), slots.contains(&e))
    }
}

/// Hints the CPU to fetch the cache line holding the start of `data` (the
/// packet's headers) into every cache level: for batch loops that filter one
/// packet while a later one's headers arrive. Does nothing for an empty
/// slice or off x86-64.
#[inline(always)]
pub fn prefetch(data: &[u8]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch never faults and does not dereference the
        // pointer in the abstract machine (it comes from a live slice
        // anyway); SSE is enabled for this build (the cfg above).
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(data.as_ptr().cast::<i8>());
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = data;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u16_pairs_test_both_halves() {
        assert!(U16Pairs::new(&[]).is_none() && U16Pairs::new(&[0; 9]).is_none());
        assert!(U16Pairs::new(&[0x1_0000]).is_none());
        for n in 1..=8u32 {
            let vals: Vec<u32> = (0..n).map(|i| (i * 0x1357 + 0x80) & 0xffff).collect();
            let p = U16Pairs::new(&vals).unwrap();
            for x in (0..0x1_0000u32).step_by(97).chain(vals.iter().copied()) {
                for y in [0u32, 0xffff, vals[0], x ^ 1] {
                    let mut b = [0u8; 4];
                    b[..2].copy_from_slice(&(x as u16).to_be_bytes());
                    b[2..].copy_from_slice(&(y as u16).to_be_bytes());
                    assert_eq!(p.contains_either_be(b), vals.contains(&x) || vals.contains(&y), "{x:#x} {y:#x} in {vals:x?}");
                }
            }
        }
    }

    #[test]
    fn probe4_finds_values_and_free_slots() {
        let g = [7, 0, 9, 0xffff_ffff];
        assert_eq!(probe4(&g, 9, 0), (true, true));
        assert_eq!(probe4(&g, 8, 0), (false, true));
        assert_eq!(probe4(&g, 0xffff_ffff, 5), (true, false));
        assert_eq!(probe4(&g, 1, 5), (false, false));
    }

    #[test]
    fn membership_for_every_size() {
        assert!(U32x8::new(&[]).is_none() && U32x8::new(&[0; 9]).is_none());
        for n in 1..=8u32 {
            let vals: Vec<u32> = (0..n).map(|i| i.wrapping_mul(0x8000_0001) ^ 0xdead).collect();
            let l = U32x8::new(&vals).expect("1..=8 values");
            for &v in &vals {
                assert!(l.contains(v));
            }
            for probe in [0u32, 1, u32::MAX, 0xdeae, 0x8000_0000] {
                assert_eq!(l.contains(probe), vals.contains(&probe), "{probe:#x} in {vals:x?}");
                for &other in vals.iter().chain(&[2u32, 0xdeae]) {
                    let want = vals.contains(&probe) || vals.contains(&other);
                    assert_eq!(l.contains_either(probe, other), want, "{probe:#x}/{other:#x} in {vals:x?}");
                    assert_eq!(l.contains_either(other, probe), want, "{other:#x}/{probe:#x} in {vals:x?}");
                }
            }
        }
        // (Checked at compile time: x86-64 always has the SIMD version.)
        #[cfg(target_arch = "x86_64")]
        const { assert!(U32x8::IS_SIMD) };
    }
}
