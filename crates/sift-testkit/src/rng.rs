//! A tiny deterministic pseudo-random number generator.
//!
//! xoshiro256** seeded through splitmix64: fast, good enough statistically
//! for test generation, and fully reproducible from a `u64` seed on every
//! platform (no dependency on `rand`'s version-dependent streams).

/// A deterministic PRNG (xoshiro256**), seeded with [`Rng::new`].
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// One step of splitmix64, used to expand a seed into generator state.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator whose whole output stream is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    /// An independent generator derived from this one's seed space and a
    /// `stream` number (for example one stream per expression), so that
    /// consuming more values in one stream does not shift the others.
    pub fn fork(seed: u64, stream: u64) -> Rng {
        let mut st = seed ^ stream.wrapping_mul(0xd605_bbb5_8c8a_bbb5);
        let mixed = splitmix64(&mut st);
        Rng::new(mixed ^ stream)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        (self.next_u64() >> 56) as u8
    }

    /// A uniform value in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Lemire's multiply-shift reduction; the tiny bias is irrelevant here.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform `usize` in `0..n`; 0 when `n` is 0.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// A uniform value in the inclusive range `lo..=hi` (`lo` if `hi < lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// `true` with probability `p` (clamped to 0..=1).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        // 53 random bits mapped to [0, 1).
        let x = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        x < p
    }

    /// A uniformly chosen element of `items`.
    ///
    /// # Panics
    ///
    /// If `items` is empty: the generators only call it on non-empty
    /// constant tables.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// One of `items` or, with the same probability as each item, a value
    /// made by `random` (for "usually one of these, sometimes anything").
    pub fn one_of<T: Copy>(&mut self, items: &[T], random: impl FnOnce(&mut Rng) -> T) -> T {
        let i = self.index(items.len() + 1);
        match items.get(i) {
            Some(v) => *v,
            None => random(self),
        }
    }

    /// An element of `items` chosen with probability proportional to its
    /// weight; the first element if all weights are 0.
    ///
    /// # Panics
    ///
    /// If `items` is empty.
    pub fn weighted<'a, T>(&mut self, items: &'a [(u32, T)]) -> &'a T {
        let total: u64 = items.iter().map(|(w, _)| u64::from(*w)).sum();
        let mut x = self.below(total);
        for (w, item) in items {
            let w = u64::from(*w);
            if x < w {
                return item;
            }
            x -= w;
        }
        &items[0].1
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    /// Appends `n` random bytes to `out`.
    pub fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        out.extend((0..n).map(|_| self.byte()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
        assert_ne!(Rng::fork(1, 1).next_u64(), Rng::fork(1, 2).next_u64());
    }

    #[test]
    fn below_and_range_stay_in_bounds() {
        let mut r = Rng::new(7);
        let mut seen = [false; 10];
        for _ in 0..10_000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
            let w = r.range(5, 8);
            assert!((5..=8).contains(&w));
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.below(0), 0);
        assert_eq!(r.range(3, 3), 3);
        assert_eq!(r.range(9, 3), 9);
        let _ = r.range(0, u64::MAX);
    }

    #[test]
    fn chance_is_roughly_right() {
        let mut r = Rng::new(3);
        let hits = (0..100_000).filter(|_| r.chance(0.25)).count();
        assert!((20_000..30_000).contains(&hits), "{hits}");
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }

    #[test]
    fn pick_and_weighted() {
        let mut r = Rng::new(5);
        let items = [1, 2, 3];
        for _ in 0..100 {
            assert!(items.contains(r.pick(&items)));
        }
        let w = [(0u32, 'a'), (1, 'b')];
        for _ in 0..100 {
            assert_eq!(*r.weighted(&w), 'b');
        }
        assert_eq!(*r.weighted(&[(0u32, 'z')]), 'z');
    }
}
