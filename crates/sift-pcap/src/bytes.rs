//! Endian-aware reads of fixed-size headers.
//!
//! The hot paths first take a fixed-size chunk (`<[u8]>::first_chunk`), so
//! the field reads below index arrays at constant offsets: out-of-range
//! offsets are compile-time errors and no runtime bounds check remains.

/// The `u32` at constant offset `AT` of a fixed-size header.
#[inline(always)]
pub(crate) fn u32_at<const AT: usize, const N: usize>(h: &[u8; N], le: bool) -> u32 {
    let w = [h[AT], h[AT + 1], h[AT + 2], h[AT + 3]];
    if le {
        u32::from_le_bytes(w)
    } else {
        u32::from_be_bytes(w)
    }
}

/// The `u16` at constant offset `AT` of a fixed-size header.
#[inline(always)]
pub(crate) fn u16_at<const AT: usize, const N: usize>(h: &[u8; N], le: bool) -> u16 {
    let w = [h[AT], h[AT + 1]];
    if le {
        u16::from_le_bytes(w)
    } else {
        u16::from_be_bytes(w)
    }
}

/// The `u32` at a run-time offset, or 0 past the end (for cold paths).
pub(crate) fn rd32(b: &[u8], at: usize, le: bool) -> u32 {
    match b.get(at..at.saturating_add(4)).and_then(|s| s.first_chunk::<4>()) {
        Some(c) => u32_at::<0, 4>(c, le),
        None => 0,
    }
}

/// The `u16` at a run-time offset, or 0 past the end (for cold paths).
pub(crate) fn rd16(b: &[u8], at: usize, le: bool) -> u16 {
    match b.get(at..at.saturating_add(2)).and_then(|s| s.first_chunk::<2>()) {
        Some(c) => u16_at::<0, 2>(c, le),
        None => 0,
    }
}

/// The `u64` at a run-time offset, or 0 past the end (for cold paths).
pub(crate) fn rd64(b: &[u8], at: usize, le: bool) -> u64 {
    match b.get(at..at.saturating_add(8)).and_then(|s| s.first_chunk::<8>()) {
        Some(c) if le => u64::from_le_bytes(*c),
        Some(c) => u64::from_be_bytes(*c),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads() {
        let h = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(u32_at::<0, 8>(&h, true), 0x0403_0201);
        assert_eq!(u32_at::<4, 8>(&h, false), 0x0506_0708);
        assert_eq!(u16_at::<6, 8>(&h, true), 0x0807);
        assert_eq!(rd32(&h, 6, true), 0);
        assert_eq!(rd16(&h, 6, false), 0x0708);
        assert_eq!(rd64(&h, 0, false), 0x0102_0304_0506_0708);
        assert_eq!(rd64(&h, 1, false), 0);
        assert_eq!(rd32(&h, usize::MAX, true), 0);
    }
}
