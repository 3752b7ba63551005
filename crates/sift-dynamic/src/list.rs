//! A persistent list of passes: chunks of `Arc`s behind `Arc`s, so that a
//! new version differing in one place shares every other chunk with the old
//! one. An edit copies the chunk pointers and one chunk: O(N / CHUNK + CHUNK)
//! pointer copies instead of O(N).

use std::sync::Arc;

/// Target chunk length; a chunk is split when it reaches twice that.
const CHUNK: usize = 16;

/// A persistent sequence of `Arc<T>`.
#[derive(Debug)]
pub(crate) struct List<T> {
    chunks: Vec<Arc<Vec<Arc<T>>>>,
    len: usize,
}

impl<T> Clone for List<T> {
    fn clone(&self) -> Self {
        List { chunks: self.chunks.clone(), len: self.len }
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List { chunks: Vec::new(), len: 0 }
    }
}

impl<T> List<T> {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Chunk and index within it of element `k`.
    fn locate(&self, mut k: usize) -> Option<(usize, usize)> {
        for (c, chunk) in self.chunks.iter().enumerate() {
            if k < chunk.len() {
                return Some((c, k));
            }
            k -= chunk.len();
        }
        None
    }

    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<&Arc<T>> {
        let (c, i) = self.locate(k)?;
        self.chunks.get(c)?.get(i)
    }

    /// The chunks of elements, in order (for the packet path's loop).
    #[inline]
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &[Arc<T>]> {
        self.chunks.iter().map(|c| &c[..])
    }

    /// The elements in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    /// Replaces element `k`; false if out of range.
    pub(crate) fn set(&mut self, k: usize, v: Arc<T>) -> bool {
        let Some((c, i)) = self.locate(k) else { return false };
        let Some(chunk) = self.chunks.get_mut(c) else { return false };
        match Arc::make_mut(chunk).get_mut(i) {
            Some(slot) => {
                *slot = v;
                true
            }
            None => false,
        }
    }

    /// Inserts `v` before element `k` (`k == len()` appends); false if out
    /// of range.
    pub(crate) fn insert(&mut self, k: usize, v: Arc<T>) -> bool {
        let (c, i) = if k == self.len {
            match self.chunks.len().checked_sub(1) {
                Some(c) => (c, self.chunks[c].len()),
                None => {
                    self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
                    (0, 0)
                }
            }
        } else {
            match self.locate(k) {
                Some(ci) => ci,
                None => return false,
            }
        };
        let Some(chunk) = self.chunks.get_mut(c) else { return false };
        let vec = Arc::make_mut(chunk);
        vec.insert(i, v);
        if vec.len() >= 2 * CHUNK {
            let tail = vec.split_off(CHUNK);
            self.chunks.insert(c + 1, Arc::new(tail));
        }
        self.len += 1;
        true
    }

    /// Removes element `k`; false if out of range.
    pub(crate) fn remove(&mut self, k: usize) -> bool {
        let Some((c, i)) = self.locate(k) else { return false };
        let Some(chunk) = self.chunks.get_mut(c) else { return false };
        let vec = Arc::make_mut(chunk);
        vec.remove(i);
        if vec.is_empty() {
            self.chunks.remove(c);
        }
        self.len -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_vec_and_shares_chunks() {
        let mut l: List<u32> = List::default();
        let mut v: Vec<u32> = Vec::new();
        let mut x = 7u32;
        for step in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let k = (x >> 8) as usize % (v.len() + 1);
            if v.len() > 100 || (x & 3 == 0 && !v.is_empty()) {
                let k = k.min(v.len() - 1);
                assert!(l.remove(k));
                v.remove(k);
            } else if x & 3 == 1 && k < v.len() {
                assert!(l.set(k, Arc::new(step)));
                v[k] = step;
            } else {
                let old = l.clone();
                assert!(l.insert(k, Arc::new(step)));
                v.insert(k, step);
                assert_eq!(old.len() + 1, l.len());
            }
            assert_eq!(l.len(), v.len());
            assert!(l.iter().map(|a| **a).eq(v.iter().copied()));
        }
        assert!(!l.remove(v.len()) && l.get(v.len()).is_none() && !l.insert(v.len() + 1, Arc::new(0)));
    }
}
