//! Structured choices drawn from a fuzzer's byte string: every check turns
//! raw bytes into the shape it needs (a link type, a program, packets) with
//! this reader, so the fuzz targets and the stable property tests feed the
//! same functions.
#![allow(dead_code)]

/// Reads small values from the front of a byte string; past the end every
/// read returns zeros (never panics).
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, little endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, little endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next `n` bytes (fewer at the end).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// Bytes up to (not including) the next NUL, which is consumed; the rest
    /// when there is none.
    pub fn until_nul(&mut self) -> &'a [u8] {
        let end = self.data.iter().position(|&b| b == 0).unwrap_or(self.data.len());
        let head = &self.data[..end];
        self.data = &self.data[(end + 1).min(self.data.len())..];
        head
    }

    /// Everything not read yet.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// `packet` with a few wire lengths and truncations derived from `seed`:
/// the full packet, cut short at `seed`-chosen points, and with a wire
/// length larger than the captured bytes (what the engines see on
/// snapshot-limited captures).
pub fn variants(packet: &[u8], seed: u32) -> Vec<(Vec<u8>, u32)> {
    let len = packet.len();
    let mut out = vec![(packet.to_vec(), len as u32)];
    if len > 0 {
        let cut = seed as usize % len;
        out.push((packet[..cut].to_vec(), len as u32));
        let cut2 = (seed >> 16) as usize % len;
        out.push((packet[..cut2].to_vec(), cut2 as u32));
    }
    out.push((packet.to_vec(), (len as u32).saturating_add(seed >> 20)));
    out
}

/// `items` over and over, whole, until there are at least `at_least` of
/// them (none if `items` is empty): enough packets for a batch entry point
/// to take its batch path.
pub fn repeated_to<T>(items: &[T], at_least: usize) -> impl Iterator<Item = &T> {
    let n = if items.is_empty() { 0 } else { at_least.div_ceil(items.len()) * items.len() };
    items.iter().cycle().take(n)
}

/// `n` structured random packets of link type `lt` from sift_testkit's
/// generator, each preceded by its [`variants`]: the packet set the stable
/// property tests feed to the checks (test builds only: the fuzz targets
/// take their packets from the fuzzer's bytes).
#[cfg(test)]
pub fn random_packets(rng: &mut sift_testkit::Rng, lt: sift_testkit::LinkType, n: usize) -> Vec<(Vec<u8>, u32)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (data, wire) = sift_testkit::packets::random_packet(rng, lt);
        out.extend(variants(&data, rng.next_u32()));
        out.push((data, wire));
    }
    out
}
