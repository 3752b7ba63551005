//! [`PacketRef`]: one packet as the count function reads it.
//!
//! The only `unsafe` here turns a `PacketRef` back into the slice it was
//! made from, and declares it `Send + Sync` as that slice is.

use std::marker::PhantomData;

/// A packet to filter: its captured bytes (borrowed) and its wire length,
/// laid out as the JIT's count function reads them: the bytes' address at
/// offset 0, their length at 8 and the wire length at 12, both 32 bits
/// (16 bytes, `repr(C)`: four to a cache line).
///
/// A slice of these is what [`crate::JitFilter::count_packets`] filters in
/// place: its machine code walks the slice itself, with no copy of any
/// item and one call for the whole slice. Keep packets this way (for
/// instance one `PacketRef` per record of a capture file read whole) when
/// the filtering speed matters; [`crate::JitFilter::count_matches`] takes
/// packets held in any structure, but first copies each one's address and
/// lengths into a `PacketRef` of its own.
///
/// ```
/// use sift_jit::PacketRef;
///
/// let bytes = [0u8; 60];
/// let p = PacketRef::new(&bytes[..42], 60);
/// assert_eq!(p.data().len(), 42);
/// assert_eq!(p.wire_len(), 60);
/// ```
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PacketRef<'a> {
    ptr: *const u8,
    caplen: u32,
    wire_len: u32,
    _data: PhantomData<&'a [u8]>,
}

/// Where the generated code finds a [`PacketRef`]'s fields, and its size.
pub(crate) mod layout {
    /// Offset of the address of the captured bytes.
    pub(crate) const PTR: u8 = 0;
    /// Offset of the captured length (4 bytes).
    pub(crate) const CAPLEN: u8 = 8;
    /// Offset of the wire length (4 bytes).
    pub(crate) const WIRE_LEN: u8 = 12;
    /// The size of a `PacketRef`: the stride of the slice.
    pub(crate) const SIZE: u8 = 16;
}

const _: () = {
    assert!(std::mem::offset_of!(PacketRef<'static>, ptr) == layout::PTR as usize);
    assert!(std::mem::offset_of!(PacketRef<'static>, caplen) == layout::CAPLEN as usize);
    assert!(std::mem::offset_of!(PacketRef<'static>, wire_len) == layout::WIRE_LEN as usize);
    assert!(std::mem::size_of::<PacketRef<'static>>() == layout::SIZE as usize);
};

// SAFETY: a `PacketRef<'a>` stands for a `&'a [u8]` (it is only made from
// one, in `new`, and only read back as one, in `data`), which is `Send`
// and `Sync`; the wire length is plain data.
#[allow(unsafe_code)]
unsafe impl Send for PacketRef<'_> {}
// SAFETY: as for `Send` above.
#[allow(unsafe_code)]
unsafe impl Sync for PacketRef<'_> {}

impl<'a> PacketRef<'a> {
    /// No bytes, wire length 0 (what fills the count function's window
    /// past the last packet; those are only prefetched).
    pub const EMPTY: PacketRef<'static> = PacketRef {
        ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
        caplen: 0,
        wire_len: 0,
        _data: PhantomData,
    };

    /// The packet with captured bytes `data` and wire length `wire_len`.
    ///
    /// Lengths are 32 bits, as in a capture file's records: of a slice
    /// longer than `u32::MAX` bytes only the first `u32::MAX` are kept.
    #[inline(always)]
    pub fn new(data: &'a [u8], wire_len: u32) -> PacketRef<'a> {
        PacketRef {
            ptr: data.as_ptr(),
            caplen: u32::try_from(data.len()).unwrap_or(u32::MAX),
            wire_len,
            _data: PhantomData,
        }
    }

    /// The captured bytes.
    #[inline(always)]
    pub fn data(&self) -> &'a [u8] {
        // SAFETY: `ptr` and `caplen` are those of a `&'a [u8]` or of a
        // prefix of one (the fields are private and only `new` sets them,
        // from such a slice, cutting the length to 32 bits; `EMPTY`
        // is the empty slice's dangling, aligned, non-null pointer), which
        // the `PhantomData` keeps borrowed for `'a`.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.ptr, self.caplen as usize)
        }
    }

    /// The wire (original) length.
    #[inline(always)]
    pub fn wire_len(&self) -> u32 {
        self.wire_len
    }

    /// The address of the first captured byte.
    #[inline(always)]
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }
}

impl Default for PacketRef<'_> {
    fn default() -> Self {
        PacketRef::EMPTY
    }
}

impl std::fmt::Debug for PacketRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketRef")
            .field("caplen", &self.caplen)
            .field("wire_len", &self.wire_len)
            .finish()
    }
}

impl<'a> From<(&'a [u8], u32)> for PacketRef<'a> {
    fn from((data, wire_len): (&'a [u8], u32)) -> Self {
        PacketRef::new(data, wire_len)
    }
}

#[cfg(test)]
mod tests {
    use super::PacketRef;

    #[test]
    fn a_packet_ref_gives_back_its_slice() {
        let bytes: Vec<u8> = (0..100).collect();
        let p = PacketRef::new(&bytes[10..30], 1500);
        assert_eq!(p.data(), &bytes[10..30]);
        assert_eq!(p.wire_len(), 1500);
        assert_eq!(PacketRef::EMPTY.data(), &[] as &[u8]);
        assert_eq!(PacketRef::default().wire_len(), 0);
        let q: PacketRef<'_> = (&bytes[..], 7).into();
        assert_eq!(q.data().len(), 100);
    }
}
