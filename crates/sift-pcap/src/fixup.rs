//! libpcap's post-processing of packet data read from a savefile.
//!
//! A few link types carry pseudo-headers whose fields are in the byte order
//! of the host that captured them. When libpcap reads a file whose byte
//! order differs from the reading host's, it byte-swaps those fields in the
//! packet data before handing the packet over, so tcpdump's filters and its
//! `-w` output see host-order fields. For memory-mapped Linux USB captures
//! it also recomputes the original length of incoming isochronous
//! completions that old libpcap versions got wrong.
//!
//! The field layouts and the bounds checks follow libpcap 1.10.3 (checked by
//! differential tests against the installed library); the code is our own.

use crate::linktype;

/// Whether packets of `linktype` in a file of the other byte order need
/// their pseudo-header swapped.
pub(crate) fn needs_swap(linktype: u32) -> bool {
    matches!(
        linktype,
        linktype::LINUX_SLL
            | linktype::PFLOG
            | linktype::USB_LINUX
            | linktype::USB_LINUX_MMAPPED
            | linktype::NFLOG
            | linktype::LINUX_SLL2
    )
}

/// Swaps the bytes of the `N`-byte field at `at`, if the whole field lies
/// within the first `limit` bytes of `buf`. Returns whether it did.
fn swap_field<const N: usize>(buf: &mut [u8], at: usize, limit: usize) -> bool {
    match at.checked_add(N) {
        Some(end) if end <= limit => match buf.get_mut(at..end) {
            Some(field) => {
                field.reverse();
                true
            }
            None => false,
        },
        _ => false,
    }
}

fn read_u16_ne(buf: &[u8], at: usize) -> Option<u16> {
    let b = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([b[0], b[1]]))
}

fn read_u32_ne(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Converts the host-order pseudo-header fields of one packet from the
/// other byte order to ours. `data` is the captured data (its length is the
/// captured length); `wire_len` is the original length from the record,
/// which libpcap also consults.
pub(crate) fn swap_pseudo_header(linktype: u32, data: &mut [u8], wire_len: u32) {
    let caplen = data.len();
    let wire_len = wire_len as usize;
    match linktype {
        linktype::LINUX_SLL => swap_cooked(data, wire_len, 16, 14),
        linktype::LINUX_SLL2 => swap_cooked(data, wire_len, 20, 0),
        linktype::PFLOG => swap_pflog(data, wire_len),
        linktype::USB_LINUX => swap_usb(data, false),
        linktype::USB_LINUX_MMAPPED => swap_usb(data, true),
        linktype::NFLOG => swap_nflog(data, caplen, wire_len),
        _ => {}
    }
}

/// Linux cooked captures (SLL: 16-byte header, protocol at 14; SLL2: 20-byte
/// header, protocol at 0): the SocketCAN header that follows a CAN or CAN FD
/// protocol type has a host-order CAN ID.
fn swap_cooked(data: &mut [u8], wire_len: usize, header_len: usize, proto_at: usize) {
    const CAN: u16 = 0x000C;
    const CANFD: u16 = 0x000D;
    let limit = data.len().min(wire_len);
    if limit < header_len {
        return;
    }
    let Some(proto) = data.get(proto_at..proto_at + 2) else {
        return;
    };
    let proto = u16::from_be_bytes([proto[0], proto[1]]);
    if proto == CAN || proto == CANFD {
        swap_field::<4>(data, header_len, limit);
    }
}

/// pflog: the uid, pid, rule_uid and rule_pid fields (offsets 44, 48, 52 and
/// 56) are host order; each is swapped only if the captured data, the
/// original length and the header's own length byte all cover it.
fn swap_pflog(data: &mut [u8], wire_len: usize) {
    let limit = data.len().min(wire_len);
    let Some(&header_len) = data.first() else {
        return;
    };
    let limit = limit.min(usize::from(header_len));
    for at in [44, 48, 52, 56] {
        if !swap_field::<4>(data, at, limit) {
            return;
        }
    }
}

/// Linux USB (48-byte header, or 64 bytes for the memory-mapped variant,
/// followed there by isochronous descriptors). Every field is swapped only
/// if the captured data holds all of it.
fn swap_usb(data: &mut [u8], mmapped: bool) {
    const ISOCHRONOUS: u8 = 0;
    let caplen = data.len();
    // id (8), skip 4 one-byte fields, bus_id (2), skip 2 one-byte fields,
    // ts_sec (8), ts_usec, status, urb_len, data_len (4 each).
    if !swap_field::<8>(data, 0, caplen) || !swap_field::<2>(data, 12, caplen) {
        return;
    }
    for (at, width) in [(16usize, 8usize), (24, 4), (28, 4), (32, 4), (36, 4)] {
        let done = if width == 8 {
            swap_field::<8>(data, at, caplen)
        } else {
            swap_field::<4>(data, at, caplen)
        };
        if !done {
            return;
        }
    }
    // The transfer type sits at offset 9, well inside what we just checked.
    let iso = data.get(9) == Some(&ISOCHRONOUS);
    if iso {
        // error_count, numdesc.
        if !swap_field::<4>(data, 40, caplen) || !swap_field::<4>(data, 44, caplen) {
            return;
        }
    }
    if !mmapped {
        return;
    }
    // interval, start_frame, xfer_flags, ndesc.
    for at in [48, 52, 56, 60] {
        if !swap_field::<4>(data, at, caplen) {
            return;
        }
    }
    if !iso {
        return;
    }
    let Some(ndesc) = read_u32_ne(data, 60) else {
        return;
    };
    // Each descriptor: status, offset, len (swapped), padding. The loop ends
    // as soon as a field runs past the captured data, so it is bounded by
    // the packet size whatever ndesc says.
    let mut at = 64usize;
    for _ in 0..ndesc {
        for _ in 0..3 {
            if !swap_field::<4>(data, at, caplen) {
                return;
            }
            at += 4;
        }
        at += 4;
    }
}

/// NFLOG: a 4-byte big-endian header (version at offset 1), then TLVs whose
/// 16-bit length and type are host order. Lengths are rounded up to 4;
/// libpcap keeps the rounded size in a 16-bit variable, so a length of
/// 0xFFFD..0xFFFF rounds to 0 and stops the walk.
fn swap_nflog(data: &mut [u8], caplen: usize, wire_len: usize) {
    if caplen < 4 || wire_len < 4 {
        return;
    }
    if data.get(1) != Some(&0) {
        return;
    }
    let mut caplen = caplen - 4;
    let mut length = wire_len - 4;
    let mut at = 4usize;
    while caplen >= 4 {
        swap_field::<2>(data, at, usize::MAX);
        swap_field::<2>(data, at + 2, usize::MAX);
        let Some(tlv_len) = read_u16_ne(data, at) else {
            return;
        };
        let mut size = tlv_len;
        if size % 4 != 0 {
            size = size.wrapping_add(4 - size % 4);
        }
        let size = usize::from(size);
        if size < 4 || caplen < size || length < size {
            return;
        }
        length -= size;
        caplen -= size;
        at += size;
    }
}

/// Memory-mapped Linux USB: if the packet is a completed incoming
/// isochronous transfer whose original length looks computed the old, wrong
/// way (header + descriptors + URB length), recompute it from the
/// descriptors as libpcap 1.10.3 does. `data` must already be in host
/// order. Returns the (possibly corrected) original length.
///
/// libpcap 1.10.3 checks the old-style length in 64-bit arithmetic, computes
/// the new one in wrapping 32-bit arithmetic and trusts the descriptor
/// count (later versions saturate and cap it at 128); only the descriptors
/// actually captured are looked at.
pub(crate) fn usb_mmapped_wire_len(data: &[u8], wire_len: u32) -> u32 {
    const HEADER: u32 = 64;
    const DESC: u32 = 16;
    let caplen = data.len() as u32;
    if data.len() < HEADER as usize {
        return wire_len;
    }
    let (Some(ndesc), Some(urb_len)) = (read_u32_ne(data, 60), read_u32_ne(data, 32)) else {
        return wire_len;
    };
    let event_type = data[8];
    let transfer_type = data[9];
    let endpoint = data[10];
    let data_flag = data[15];
    let completion = transfer_type == 0 && event_type == b'C' && endpoint & 0x80 != 0;
    // libpcap compares in 64-bit (size_t) arithmetic.
    let old_style = u64::from(HEADER) + u64::from(ndesc) * u64::from(DESC) + u64::from(urb_len);
    if data_flag != 0 || !completion || u64::from(wire_len) != old_style {
        return wire_len;
    }
    // ...but keeps the corrected length in 32 bits.
    let iso_header_len = ndesc.wrapping_mul(DESC).wrapping_add(HEADER);
    let mut end = 0u32;
    let mut left = caplen - HEADER;
    let mut at = HEADER as usize;
    let mut desc = 0;
    while desc < ndesc && left >= DESC {
        let offset = read_u32_ne(data, at + 4).unwrap_or(0);
        let len = read_u32_ne(data, at + 8).unwrap_or(0);
        if len != 0 {
            end = end.max(offset.wrapping_add(len));
        }
        desc += 1;
        left -= DESC;
        at += DESC as usize;
    }
    let fixed = iso_header_len.wrapping_add(end);
    let mut out = wire_len;
    if fixed >= caplen {
        out = fixed;
    }
    if caplen > out {
        out = caplen;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sll_can_id_is_swapped() {
        let mut p = vec![0u8; 24];
        p[14] = 0x00;
        p[15] = 0x0C;
        p[16..20].copy_from_slice(&[1, 2, 3, 4]);
        swap_pseudo_header(linktype::LINUX_SLL, &mut p, 24);
        assert_eq!(&p[16..20], &[4, 3, 2, 1]);
        // Not CAN: untouched.
        p[15] = 0x08;
        swap_pseudo_header(linktype::LINUX_SLL, &mut p, 24);
        assert_eq!(&p[16..20], &[4, 3, 2, 1]);
        // Original length too short: untouched.
        p[15] = 0x0D;
        swap_pseudo_header(linktype::LINUX_SLL, &mut p, 19);
        assert_eq!(&p[16..20], &[4, 3, 2, 1]);
    }

    #[test]
    fn nflog_tlvs_are_swapped() {
        // Header, TLV len 8 type 1, 4 value bytes, TLV len 5 type 2 (+pad).
        let mut p = vec![2, 0, 0, 0, 0, 8, 0, 1, 9, 9, 9, 9, 0, 5, 0, 2, 7, 0, 0, 0];
        swap_pseudo_header(linktype::NFLOG, &mut p, 20);
        assert_eq!(&p[4..8], &[8, 0, 1, 0]);
        assert_eq!(&p[12..16], &[5, 0, 2, 0]);
        assert_eq!(&p[8..12], &[9, 9, 9, 9]);
    }

    #[test]
    fn swaps_are_bounded_by_short_packets() {
        for lt in [113, 117, 189, 220, 239, 276] {
            for n in 0..80 {
                let mut p = vec![0u8; n];
                swap_pseudo_header(lt, &mut p, n as u32);
                let mut p = vec![0xFFu8; n];
                swap_pseudo_header(lt, &mut p, u32::MAX);
            }
        }
    }

    #[test]
    fn usb_length_fix() {
        let mut p = vec![0u8; 136];
        p[8] = b'C';
        p[9] = 0;
        p[10] = 0x81;
        p[32..36].copy_from_slice(&100u32.to_ne_bytes());
        p[60..64].copy_from_slice(&2u32.to_ne_bytes());
        // Descriptor 0: offset 0, len 10; descriptor 1: offset 50, len 20.
        p[68..72].copy_from_slice(&0u32.to_ne_bytes());
        p[72..76].copy_from_slice(&10u32.to_ne_bytes());
        p[84..88].copy_from_slice(&50u32.to_ne_bytes());
        p[88..92].copy_from_slice(&20u32.to_ne_bytes());
        assert_eq!(usb_mmapped_wire_len(&p, 64 + 32 + 100), 166);
        assert_eq!(usb_mmapped_wire_len(&p, 5), 5);
        assert_eq!(usb_mmapped_wire_len(&p[..63], 196), 196);
    }
}
