//! The Linux kernel's classic-BPF implementation as an oracle.
//!
//! A [`KernelFilter`] owns an `AF_UNIX`/`SOCK_DGRAM` socket pair whose
//! receiving end has the program attached with `SO_ATTACH_FILTER`. To run
//! the program on a packet, [`KernelFilter::accepts`] sends the bytes as one
//! datagram and immediately tries a non-blocking receive:
//!
//! * Delivery on `AF_UNIX` datagram sockets is synchronous: `sendmsg` runs
//!   the receiver's socket filter and queues (or drops) the datagram before
//!   it returns, so the datagram is either already in the receive queue or
//!   gone; no waiting is involved (checked by the unit tests).
//! * A filter result of 0 drops the datagram silently; a result `N > 0`
//!   keeps it (trimmed to `N` bytes if shorter). So the packet passes iff a
//!   datagram is received. `MSG_TRUNC` makes `recv` report a datagram's real
//!   length, so a tiny buffer suffices, and a zero-length datagram is seen as
//!   a successful zero-length receive.
//!
//! The kernel sees only the datagram: `caplen == len == data.len()`
//! (`ld #len` is the datagram length). Compare with libpcap using
//! `wire_len = data.len()`.
//!
//! The kernel converts classic BPF to eBPF; known differences from
//! libpcap's `bpf_filter` (libpcap 1.10.3) that show up here:
//! * `lsh x`/`rsh x` with `X >= 32`: the kernel shifts by `X mod 32`,
//!   libpcap gives 0;
//! * loads at offsets ≥ 2^31 (constant or `X + k`, computed in signed 32-bit
//!   arithmetic by the kernel) are ancillary (`SKF_AD_*`, ≥ 0xfffff000) or
//!   network/link-relative (`SKF_NET_OFF`, `SKF_LL_OFF`) loads in the kernel
//!   and plain out-of-bounds loads (reject) in libpcap; `X + k` wraps in the
//!   kernel and not in libpcap;
//! * the kernel's checker refuses backward jumps (`protochain`), reads of
//!   scratch memory not written on every path, shifts by constants ≥ 32 and
//!   constant divisions by 0.

use sift_bpf::insn::Insn;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The kernel's checker refused a program (`SO_ATTACH_FILTER` failed with
/// `EINVAL` or similar). Carried inside the `io::Error` returned by
/// [`KernelFilter::new`]; test with [`is_rejected`].
#[derive(Debug)]
pub struct Rejected {
    /// The `errno` of the failed `setsockopt`.
    pub errno: i32,
    /// The program length.
    pub len: usize,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the kernel refused the {}-instruction program: {}",
            self.len,
            io::Error::from_raw_os_error(self.errno)
        )
    }
}

impl std::error::Error for Rejected {}

/// Was this error the kernel refusing the program (as opposed to a system
/// failure such as running out of file descriptors)?
pub fn is_rejected(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Rejected>())
}

/// A classic-BPF program attached to a socket, run by the kernel.
#[derive(Debug)]
pub struct KernelFilter {
    tx: OwnedFd,
    rx: OwnedFd,
}

impl KernelFilter {
    /// Creates a socket pair and attaches `prog` to its receiving end. An
    /// error satisfying [`is_rejected`] means the kernel's checker refused
    /// the program; other errors are system failures.
    pub fn new(prog: &[Insn]) -> io::Result<KernelFilter> {
        let mut fds = [-1i32; 2];
        // SAFETY: socketpair writes two file descriptors into the 2-element
        // array on success; on failure it returns -1 and we return the error.
        let rc = unsafe {
            libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just created by socketpair and are
        // owned by nobody else; OwnedFd takes ownership and closes them.
        let (tx, rx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let kf = KernelFilter { tx, rx };
        match kf.attach(prog) {
            // On a fresh socket, ENOMEM means the program alone exceeds the
            // socket option memory limit (net.core.optmem_max): a refusal.
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                Rejected { errno: libc::ENOMEM, len: prog.len() },
            )),
            Err(e) => Err(e),
            Ok(()) => Ok(kf),
        }
    }

    /// Replaces the attached program (the socket pair is reused, which is
    /// cheaper than creating a new filter). Same errors as [`KernelFilter::new`].
    /// On error the previous program stays attached.
    pub fn set_program(&mut self, prog: &[Insn]) -> io::Result<()> {
        self.drain()?;
        match self.attach(prog) {
            Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
                // Replaced filters are freed after an RCU grace period and
                // count against net.core.optmem_max until then, so many quick
                // replacements run out of option memory: start over on a
                // fresh socket pair.
                *self = KernelFilter::new(prog)?;
                Ok(())
            }
            r => r,
        }
    }

    fn attach(&self, prog: &[Insn]) -> io::Result<()> {
        let rejected = |errno| io::Error::new(io::ErrorKind::InvalidInput, Rejected { errno, len: prog.len() });
        // sock_fprog.len is 16 bits; the kernel's limit is far below anyway.
        let Ok(len) = u16::try_from(prog.len()) else {
            return Err(rejected(libc::EINVAL));
        };
        if len == 0 {
            return Err(rejected(libc::EINVAL));
        }
        let fprog = libc::sock_fprog {
            len,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: Insn is repr(C) with the layout of struct sock_filter
        // (u16 code, u8 jt, u8 jf, u32 k); fprog points to `len` of them,
        // which the kernel copies during the call and never writes. The
        // option value is a properly sized sock_fprog.
        let rc = unsafe {
            libc::setsockopt(
                self.rx.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                (&fprog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(errno @ (libc::EINVAL | libc::E2BIG)) => {
                    Err(rejected(errno))
                }
                _ => Err(e),
            };
        }
        Ok(())
    }

    /// Receives one pending datagram without blocking: `Ok(true)` if one
    /// was there, `Ok(false)` if the queue was empty.
    fn recv_one(&self) -> io::Result<bool> {
        let mut buf = [0u8; 16];
        // SAFETY: buf is a valid writable buffer of buf.len() bytes; with
        // MSG_TRUNC the kernel still writes at most buf.len() bytes and
        // returns the datagram's full length.
        let n = unsafe {
            libc::recv(
                self.rx.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n >= 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(false),
            _ => Err(e),
        }
    }

    /// Empties the receive queue (it is normally already empty).
    fn drain(&self) -> io::Result<()> {
        while self.recv_one()? {}
        Ok(())
    }

    /// Does the kernel's run of the program accept `data` (captured length =
    /// wire length = `data.len()`)? True iff the program returned non-zero.
    pub fn accepts(&self, data: &[u8]) -> io::Result<bool> {
        // The queue is empty here: every call consumes what it sent, and
        // set_program drains.
        // SAFETY: data points to data.len() readable bytes (an empty slice
        // with length 0 is never dereferenced). MSG_DONTWAIT: never block;
        // MSG_NOSIGNAL: no SIGPIPE.
        let n = unsafe {
            libc::send(
                self.tx.as_raw_fd(),
                data.as_ptr().cast(),
                data.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != data.len() {
            return Err(io::Error::other(format!("short datagram send: {n} of {}", data.len())));
        }
        self.recv_one()
    }

    /// The kernel's verdicts on many packets at once: like calling
    /// [`KernelFilter::accepts`] on each, but with `sendmmsg`/`recvmmsg`
    /// on chunks of packets (two system calls per chunk instead of two per
    /// packet).
    ///
    /// The datagrams that pass are received in order and matched to the
    /// packets sent: packet *i* passed iff the next received datagram equals
    /// it. Identical packets get identical verdicts, so the greedy match is
    /// exact for programs that keep whole datagrams. A program may also trim
    /// a datagram (return less than its length); a trimmed datagram is a
    /// proper prefix of its packet, so packets that are a proper prefix of
    /// another packet of the same chunk are not batched but run one by one
    /// with [`KernelFilter::accepts`]. Then a trimmed datagram equals no
    /// batched packet, stays unmatched, and the result is an `InvalidData`
    /// error (use [`KernelFilter::accepts`] for such programs).
    pub fn accepts_batch(&self, packets: &[&[u8]]) -> io::Result<Vec<bool>> {
        const CHUNK: usize = 64;
        let mut verdicts = vec![false; packets.len()];
        let slot = packets.iter().map(|p| p.len()).max().unwrap_or(0) + 1;
        let mut rbuf = vec![0u8; slot.checked_mul(CHUNK).ok_or_else(|| io::Error::other("packets too large"))?];
        for (c, chunk) in packets.chunks(CHUNK).enumerate() {
            let base = c * CHUNK;
            // Packets that are a proper prefix of another one: in sorted
            // order, the next different packet starts with them.
            let mut order: Vec<usize> = (0..chunk.len()).collect();
            order.sort_by(|&a, &b| chunk[a].cmp(chunk[b]));
            let mut alone = vec![false; chunk.len()];
            for (w, &i) in order.iter().enumerate() {
                let p = chunk[i];
                let next = order[w + 1..].iter().map(|&j| chunk[j]).find(|q| *q != p);
                alone[i] = next.is_some_and(|q| q.starts_with(p));
            }
            let batch: Vec<usize> = (0..chunk.len()).filter(|&i| !alone[i]).collect();
            let mut done = 0;
            while done < batch.len() {
                let group: Vec<&[u8]> = batch[done..].iter().map(|&i| chunk[i]).collect();
                let sent = self.send_many(&group)?;
                let received = self.recv_many(&mut rbuf, slot, sent)?;
                let mut next = 0;
                for (k, p) in group.iter().take(sent).enumerate() {
                    let hit = received.get(next).is_some_and(|&(off, len)| rbuf.get(off..off + len) == Some(*p));
                    next += usize::from(hit);
                    if let Some(v) = verdicts.get_mut(base + batch[done + k]) {
                        *v = hit;
                    }
                }
                if next != received.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a received datagram matches no packet sent (trimmed by the filter)",
                    ));
                }
                done += sent;
            }
            for i in (0..chunk.len()).filter(|&i| alone[i]) {
                if let Some(v) = verdicts.get_mut(base + i) {
                    *v = self.accepts(chunk[i])?;
                }
            }
        }
        Ok(verdicts)
    }

    /// Sends a prefix of `chunk` (at least one packet) with one `sendmmsg`;
    /// returns how many were sent.
    fn send_many(&self, chunk: &[&[u8]]) -> io::Result<usize> {
        let mut iov: Vec<libc::iovec> = chunk
            .iter()
            .map(|p| libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: mmsghdr is a plain C struct of integers and raw
                // pointers, for which all-zero bytes are a valid value (null
                // pointers, zero lengths).
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let n = libc::c_uint::try_from(msgs.len()).unwrap_or(0);
        // SAFETY: msgs holds n initialized headers, each pointing to one
        // iovec in `iov` that describes a live packet slice borrowed from
        // `chunk`; all of them outlive the call, and the kernel only reads
        // the packet bytes (it writes msg_len in the headers).
        let rc = unsafe {
            libc::sendmmsg(self.tx.as_raw_fd(), msgs.as_mut_ptr(), n, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let sent = rc as usize;
        if sent == 0 && !chunk.is_empty() {
            return Err(io::Error::other("sendmmsg sent nothing"));
        }
        for (m, p) in msgs.iter().zip(chunk).take(sent) {
            if m.msg_len as usize != p.len() {
                return Err(io::Error::other("short datagram send"));
            }
        }
        Ok(sent)
    }

    /// Receives every queued datagram (at most `max` of them) into `rbuf`,
    /// one per `slot` bytes; returns (offset, length) pairs in order.
    fn recv_many(&self, rbuf: &mut [u8], slot: usize, max: usize) -> io::Result<Vec<(usize, usize)>> {
        let max = max.min(rbuf.len() / slot.max(1));
        let mut got: Vec<(usize, usize)> = Vec::with_capacity(max);
        while got.len() < max {
            let first = got.len();
            let want = max - first;
            let mut iov: Vec<libc::iovec> = (first..max)
                .map(|i| libc::iovec {
                    // In bounds: i < max <= rbuf.len() / slot.
                    iov_base: rbuf[i * slot..].as_mut_ptr().cast(),
                    iov_len: slot,
                })
                .collect();
            let mut msgs: Vec<libc::mmsghdr> = iov
                .iter_mut()
                .map(|v| {
                    // SAFETY: all-zero bytes are a valid mmsghdr (see send_many).
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_iov = v;
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            let n = libc::c_uint::try_from(want).unwrap_or(0);
            // SAFETY: msgs holds `want` headers, each with one iovec
            // describing a distinct `slot`-byte region inside rbuf, which is
            // exclusively borrowed and outlives the call; the kernel writes at
            // most iov_len bytes into each and fills msg_len/msg_flags. A null
            // timeout is allowed.
            let rc = unsafe {
                libc::recvmmsg(self.rx.as_raw_fd(), msgs.as_mut_ptr(), n, libc::MSG_DONTWAIT, std::ptr::null_mut())
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    break;
                }
                return Err(e);
            }
            if rc == 0 {
                break;
            }
            for (k, m) in msgs.iter().take(rc as usize).enumerate() {
                if m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                    return Err(io::Error::other("datagram larger than any packet sent"));
                }
                got.push(((first + k) * slot, m.msg_len as usize));
            }
        }
        Ok(got)
    }
}

/// An operation on which the kernel's classic BPF and libpcap's
/// `bpf_filter` (1.10.3) can give different results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divergence {
    /// `lsh x` / `rsh x` with `X >= 32`: libpcap gives 0, the kernel shifts
    /// by `X mod 32`.
    ShiftByX {
        /// Instruction index.
        pc: usize,
        /// The shift count.
        x: u32,
    },
    /// A load whose offset (`k`, or `X + k` in exact arithmetic) is at
    /// least 2^31: out of bounds for libpcap; for the kernel a negative
    /// 32-bit offset (ancillary data, `SKF_NET_OFF`/`SKF_LL_OFF` relative
    /// loads) or, for `X + k`, a wrapped small offset.
    HugeOffset {
        /// Instruction index.
        pc: usize,
        /// The offset in exact arithmetic.
        offset: u64,
    },
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Divergence::ShiftByX { pc, x } => {
                write!(f, "insn {pc}: shift by X = {x} (libpcap: 0, kernel: shift by {})", x % 32)
            }
            Divergence::HugeOffset { pc, offset } => write!(
                f,
                "insn {pc}: load at offset {offset:#x} >= 2^31 (libpcap: out of bounds, kernel: negative/wrapped offset)"
            ),
        }
    }
}

/// Runs `prog` on `data` (wire length = `data.len()`, as the kernel sees
/// it) with libpcap's semantics and returns the first operation on the
/// executed path where the kernel's semantics differ, if any. `None` means
/// the kernel must give the same verdict as libpcap (provided its checker
/// accepts the program). Programs with backward or out-of-range jumps are
/// followed only as far as they are well-formed.
pub fn divergence(prog: &[Insn], data: &[u8]) -> Option<Divergence> {
    use sift_bpf::insn::op::*;
    let len = data.len() as u64;
    let load = |off: u64, size: u64| -> Option<u32> {
        if off + size > len {
            return None;
        }
        let mut v = 0u32;
        for i in 0..size {
            v = (v << 8) | u32::from(*data.get((off + i) as usize)?);
        }
        Some(v)
    };
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; 16];
    let mut pc = 0usize;
    // Forward-only programs execute each instruction at most once.
    for _ in 0..=prog.len() {
        let ins = prog.get(pc)?;
        let code = ins.code;
        let k = ins.k;
        let class = code & 0x07;
        let size = match code & 0x18 {
            W => 4,
            H => 2,
            B => 1,
            _ => 4,
        };
        let src = if code & X != 0 { x } else { k };
        pc += 1;
        match class {
            LD | LDX => {
                let v = match code & 0xe0 {
                    IMM => k,
                    LEN => len as u32,
                    MEM => *mem.get(k as usize)?,
                    ABS | IND | MSH => {
                        let off = u64::from(k) + if code & 0xe0 == IND { u64::from(x) } else { 0 };
                        if off >= 1 << 31 {
                            return Some(Divergence::HugeOffset { pc: pc - 1, offset: off });
                        }
                        if code & 0xe0 == MSH {
                            (load(off, 1)? & 0xf) << 2
                        } else {
                            load(off, size)?
                        }
                    }
                    _ => return None,
                };
                if class == LD {
                    a = v;
                } else {
                    x = v;
                }
            }
            ST => *mem.get_mut(k as usize)? = a,
            STX => *mem.get_mut(k as usize)? = x,
            ALU => {
                let opn = code & 0xf0;
                if (opn == LSH || opn == RSH) && code & X != 0 && x >= 32 {
                    return Some(Divergence::ShiftByX { pc: pc - 1, x });
                }
                a = match opn {
                    ADD => a.wrapping_add(src),
                    SUB => a.wrapping_sub(src),
                    MUL => a.wrapping_mul(src),
                    DIV => a.checked_div(src)?,
                    MOD => a.checked_rem(src)?,
                    AND => a & src,
                    OR => a | src,
                    XOR => a ^ src,
                    LSH => a.checked_shl(src).unwrap_or(0),
                    RSH => a.checked_shr(src).unwrap_or(0),
                    NEG => a.wrapping_neg(),
                    _ => return None,
                };
            }
            JMP => {
                let opn = code & 0xf0;
                let taken = match opn {
                    JA => {
                        if k >= 1 << 31 {
                            return None;
                        }
                        pc = pc.checked_add(k as usize)?;
                        continue;
                    }
                    JEQ => a == src,
                    JGT => a > src,
                    JGE => a >= src,
                    JSET => a & src != 0,
                    _ => return None,
                };
                pc += usize::from(if taken { ins.jt } else { ins.jf });
            }
            RET => return None,
            MISC => {
                if code & 0xf8 == TXA {
                    a = x;
                } else {
                    x = a;
                }
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use sift_bpf::insn::op;

    fn ldb_eq(off: u32, v: u32) -> Vec<Insn> {
        vec![
            Insn::stmt(op::LD | op::B | op::ABS, off),
            Insn::jump(op::JMP | op::JEQ | op::K, v, 0, 1),
            Insn::stmt(op::RET | op::K, 3),
            Insn::stmt(op::RET | op::K, 0),
        ]
    }

    #[test]
    fn accepts_and_drops() {
        let kf = KernelFilter::new(&ldb_eq(0, 7)).unwrap();
        assert!(kf.accepts(&[7, 1, 2, 3, 4, 5]).unwrap());
        assert!(!kf.accepts(&[6, 1, 2, 3, 4, 5]).unwrap());
        assert!(kf.accepts(&[7]).unwrap());
        // Out-of-bounds load rejects, including on the empty datagram.
        assert!(!kf.accepts(&[]).unwrap());
        let kf = KernelFilter::new(&ldb_eq(10, 7)).unwrap();
        assert!(!kf.accepts(&[7, 7, 7]).unwrap());
    }

    #[test]
    fn empty_datagram_passes_accept_all() {
        let kf = KernelFilter::new(&[Insn::stmt(op::RET | op::K, 1)]).unwrap();
        assert!(kf.accepts(&[]).unwrap());
        let kf = KernelFilter::new(&[Insn::stmt(op::RET | op::K, 0)]).unwrap();
        assert!(!kf.accepts(&[]).unwrap());
        assert!(!kf.accepts(&[1, 2, 3]).unwrap());
    }

    #[test]
    fn delivery_is_synchronous() {
        // Alternate accepted and dropped datagrams many times: each verdict
        // must be visible right after the send, with nothing left queued.
        let kf = KernelFilter::new(&ldb_eq(0, 1)).unwrap();
        for i in 0..5000u32 {
            let b = (i % 2) as u8;
            let pkt = vec![b; 1 + (i as usize % 1500)];
            assert_eq!(kf.accepts(&pkt).unwrap(), b == 1, "datagram {i}");
            assert!(!kf.recv_one().unwrap(), "left-over datagram after {i}");
        }
    }

    #[test]
    fn batch_matches_single() {
        let mut prog = ldb_eq(0, 1);
        prog[2].k = 262_144; // keep whole datagrams
        let kf = KernelFilter::new(&prog).unwrap();
        let mut packets: Vec<Vec<u8>> = Vec::new();
        for i in 0..1000usize {
            let b = u8::from(i % 3 == 0 || i % 7 == 0);
            // Include empty, repeated and identical-prefix packets.
            let len = if i % 50 == 0 { 0 } else { 1 + i % 17 };
            packets.push(vec![b; len]);
        }
        let refs: Vec<&[u8]> = packets.iter().map(|p| p.as_slice()).collect();
        let batch = kf.accepts_batch(&refs).unwrap();
        let single: Vec<bool> = refs.iter().map(|p| kf.accepts(p).unwrap()).collect();
        assert_eq!(batch, single);
        assert!(batch.iter().any(|v| *v) && batch.iter().any(|v| !*v));
        assert!(kf.accepts_batch(&[]).unwrap().is_empty());
        // Large datagrams.
        let big = [vec![1u8; 60_000], vec![0u8; 60_000], vec![1u8; 9000]];
        let refs: Vec<&[u8]> = big.iter().map(|p| p.as_slice()).collect();
        assert_eq!(kf.accepts_batch(&refs).unwrap(), vec![true, false, true]);
        assert!(!kf.recv_one().unwrap());
    }

    #[test]
    fn batch_detects_trimming() {
        // ret #1 trims every datagram to one byte.
        let kf = KernelFilter::new(&[Insn::stmt(op::RET | op::K, 1)]).unwrap();
        let p = [1u8, 2, 3];
        assert!(kf.accepts_batch(&[&p]).is_err());
        assert!(kf.accepts(&p).unwrap());
        // A trimmed datagram equal to another packet of the batch must not
        // be taken for it: [8] is a prefix of [8, 1], so it runs alone.
        let prog = [
            Insn::stmt(op::LD | op::B | op::ABS, 1),
            Insn::jump(op::JMP | op::JEQ | op::K, 1, 0, 1),
            Insn::stmt(op::RET | op::K, 1),
            Insn::stmt(op::RET | op::K, 0),
        ];
        let kf = KernelFilter::new(&prog).unwrap();
        let (a, b) = ([8u8].as_slice(), [8u8, 1].as_slice());
        assert!(!kf.accepts(a).unwrap());
        assert!(kf.accepts(b).unwrap());
        match kf.accepts_batch(&[a, b]) {
            Ok(v) => assert_eq!(v, vec![false, true]),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::InvalidData),
        }
        match kf.accepts_batch(&[b, a]) {
            Ok(v) => assert_eq!(v, vec![true, false]),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::InvalidData),
        }
    }

    #[test]
    fn ret_a_truncation_still_passes() {
        // ret a with A = 1: the datagram is trimmed but delivered.
        let prog = [Insn::stmt(op::LD | op::IMM, 1), Insn::stmt(op::RET | op::A, 0)];
        let kf = KernelFilter::new(&prog).unwrap();
        assert!(kf.accepts(&[9; 100]).unwrap());
    }

    #[test]
    fn checker_rejections_are_distinct() {
        let e = KernelFilter::new(&[]).unwrap_err();
        assert!(is_rejected(&e), "{e}");
        // ldx M[0] before any store.
        let e = KernelFilter::new(&[Insn::stmt(op::LDX | op::MEM, 0), Insn::stmt(op::RET | op::K, 1)]).unwrap_err();
        assert!(is_rejected(&e), "{e}");
        // Constant shift by 33.
        let e = KernelFilter::new(&[Insn::stmt(op::ALU | op::LSH | op::K, 33), Insn::stmt(op::RET | op::A, 0)])
            .unwrap_err();
        assert!(is_rejected(&e), "{e}");
        // Jump out of the program.
        let e = KernelFilter::new(&[Insn::jump(op::JMP | op::JEQ | op::K, 0, 5, 0), Insn::stmt(op::RET | op::K, 1)])
            .unwrap_err();
        assert!(is_rejected(&e), "{e}");
        let too_long = vec![Insn::stmt(op::RET | op::K, 1); 5000];
        assert!(is_rejected(&KernelFilter::new(&too_long).unwrap_err()));
        assert!(!is_rejected(&io::Error::other("x")));
    }

    #[test]
    fn many_replacements_do_not_exhaust_option_memory() {
        let mut prog = vec![Insn::stmt(op::LD | op::IMM, 1); 4000];
        prog.push(Insn::stmt(op::RET | op::K, 1));
        let mut kf = KernelFilter::new(&prog).unwrap();
        for i in 0..300u32 {
            prog[0].k = i;
            kf.set_program(&prog).unwrap();
        }
        assert!(kf.accepts(&[1]).unwrap());
    }

    #[test]
    fn set_program_replaces() {
        let mut kf = KernelFilter::new(&ldb_eq(0, 1)).unwrap();
        assert!(kf.accepts(&[1]).unwrap());
        kf.set_program(&ldb_eq(0, 2)).unwrap();
        assert!(!kf.accepts(&[1]).unwrap());
        assert!(kf.accepts(&[2]).unwrap());
        assert!(is_rejected(&kf.set_program(&[]).unwrap_err()));
        // The old program is still attached.
        assert!(kf.accepts(&[2]).unwrap());
    }

    #[test]
    fn divergence_detection() {
        let shl = [
            Insn::stmt(op::LD | op::B | op::ABS, 0),
            Insn::stmt(op::MISC | op::TAX, 0),
            Insn::stmt(op::LD | op::IMM, 1),
            Insn::stmt(op::ALU | op::LSH | op::X, 0),
            Insn::stmt(op::RET | op::A, 0),
        ];
        assert_eq!(divergence(&shl, &[31]), None);
        assert_eq!(divergence(&shl, &[40]), Some(Divergence::ShiftByX { pc: 3, x: 40 }));
        // Out of bounds before the shift: nothing to diverge.
        assert_eq!(divergence(&shl, &[]), None);
        let ind = [
            Insn::stmt(op::LDX | op::IMM, 0xffff_ffff),
            Insn::stmt(op::LD | op::B | op::IND, 2),
            Insn::stmt(op::RET | op::K, 1),
        ];
        assert_eq!(divergence(&ind, &[1, 2, 3]), Some(Divergence::HugeOffset { pc: 1, offset: 0x1_0000_0001 }));
        let abs = [Insn::stmt(op::LD | op::W | op::ABS, 0xfff0_0000), Insn::stmt(op::RET | op::K, 1)];
        assert!(divergence(&abs, &[1, 2, 3, 4]).is_some());
        // The kernel really does differ there (SKF_NET_OFF-relative load).
        let kf = KernelFilter::new(&abs).unwrap();
        assert!(kf.accepts(&[1, 2, 3, 4]).unwrap());
        assert_eq!(crate::libpcap::filter(&abs, &[1, 2, 3, 4], 4), 0);
        assert!(divergence(&ldb_eq(0, 7), &[7]).is_none());
        assert!(!Divergence::ShiftByX { pc: 0, x: 33 }.to_string().is_empty());
    }

    #[test]
    fn kernel_shift_semantics_differ_from_libpcap() {
        // ldb [0]; tax; ld #1; lsh x; ret a — the kernel takes X mod 32.
        let prog = [
            Insn::stmt(op::LD | op::B | op::ABS, 0),
            Insn::stmt(op::MISC | op::TAX, 0),
            Insn::stmt(op::LD | op::IMM, 1),
            Insn::stmt(op::ALU | op::LSH | op::X, 0),
            Insn::stmt(op::RET | op::A, 0),
        ];
        let kf = KernelFilter::new(&prog).unwrap();
        assert!(kf.accepts(&[32]).unwrap());
        assert_eq!(crate::libpcap::filter(&prog, &[32], 1), 0);
    }
}
