//! The only module with `unsafe`: AF_PACKET socket options, the ring
//! mapping, `poll`, and the stop-signal handler. Every block says why it is
//! sound; everything above this module is safe code (the crate denies
//! `unsafe_code` elsewhere).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sift::Insn;

/// `SOL_PACKET`.
const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_RESERVE: libc::c_int = 12;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_MR_PROMISC: u16 = 1;
const TPACKET_V3: libc::c_int = 2;
/// `ETH_P_ALL`.
pub const ETH_P_ALL: u16 = 0x0003;
/// `TP_STATUS_USER`: the block belongs to user space.
pub const TP_STATUS_USER: u32 = 1;
/// `TP_STATUS_KERNEL`: the block belongs to the kernel.
pub const TP_STATUS_KERNEL: u32 = 0;

/// `struct tpacket_req3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TpacketReq3 {
    /// Block size (multiple of the page size).
    pub block_size: u32,
    /// Number of blocks.
    pub block_nr: u32,
    /// Frame size (only checked by the kernel; frames are variable in V3).
    pub frame_size: u32,
    /// Number of frames: `block_size / frame_size * block_nr`.
    pub frame_nr: u32,
    /// Block retire timeout, ms.
    pub retire_blk_tov: u32,
    /// Private area per block.
    pub sizeof_priv: u32,
    /// Feature request word (rxhash).
    pub feature_req_word: u32,
}

/// `struct packet_mreq`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: u16,
    mr_alen: u16,
    mr_address: [u8; 8],
}

/// `struct tpacket_stats_v3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TpacketStatsV3 {
    tp_packets: u32,
    tp_drops: u32,
    tp_freeze_q_cnt: u32,
}

/// Marker for plain C structs (integers only, `repr(C)`) that can be passed
/// to `setsockopt`/`getsockopt` by pointer and size.
///
/// # Safety
/// Implementors must be `repr(C)` with no padding-sensitive invariants and
/// be valid for every bit pattern.
unsafe trait Pod: Copy {}
// SAFETY: integer-only repr(C) structs / integers, valid for any bits.
unsafe impl Pod for libc::c_int {}
// SAFETY: as above.
unsafe impl Pod for TpacketReq3 {}
// SAFETY: as above.
unsafe impl Pod for PacketMreq {}
// SAFETY: as above.
unsafe impl Pod for TpacketStatsV3 {}

fn setsockopt<T: Pod>(
    fd: &OwnedFd,
    level: libc::c_int,
    opt: libc::c_int,
    val: &T,
) -> io::Result<()> {
    // SAFETY: `val` points to a live, initialized T of exactly the size
    // passed; the kernel only reads it during the call.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (val as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt<T: Pod + Default>(
    fd: &OwnedFd,
    level: libc::c_int,
    opt: libc::c_int,
) -> io::Result<T> {
    let mut val = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `val` is a writable T of `len` bytes; the kernel writes at most
    // `len` bytes and any bit pattern is a valid T (Pod).
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&mut val as *mut T).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(val)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens an AF_PACKET socket that receives nothing until [`bind`] (protocol
/// 0): `cooked` gives SOCK_DGRAM (network layer), else SOCK_RAW.
pub fn packet_socket(cooked: bool) -> io::Result<OwnedFd> {
    let ty = if cooked {
        libc::SOCK_DGRAM
    } else {
        libc::SOCK_RAW
    };
    // SAFETY: plain system call with integer arguments.
    let fd = unsafe { libc::socket(libc::AF_PACKET, ty | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Selects TPACKET_V3.
pub fn set_tpacket_v3(fd: &OwnedFd) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_VERSION, &TPACKET_V3)
}

/// Reserves `n` bytes of headroom before each packet in the ring.
pub fn set_reserve(fd: &OwnedFd, n: u32) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_RESERVE, &(n as libc::c_int))
}

/// Asks the kernel not to deliver packets this host sends.
pub fn set_ignore_outgoing(fd: &OwnedFd) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &1)
}

/// `PACKET_QDISC_BYPASS`: frames sent on the socket go straight to the
/// driver (no queueing discipline, no local taps on the way).
pub fn set_qdisc_bypass(fd: &OwnedFd) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &1)
}

/// Joins fanout group `group` with `mode_and_flags` (PACKET_FANOUT_* mode
/// in the low byte, PACKET_FANOUT_FLAG_* above). The socket must be bound.
pub fn join_fanout(fd: &OwnedFd, group: u16, mode_and_flags: u16) -> io::Result<()> {
    const PACKET_FANOUT: libc::c_int = 18;
    let arg = (libc::c_int::from(mode_and_flags) << 16) | libc::c_int::from(group);
    setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg)
}

/// Creates the receive ring.
pub fn set_rx_ring(fd: &OwnedFd, req: &TpacketReq3) -> io::Result<()> {
    setsockopt(fd, SOL_PACKET, PACKET_RX_RING, req)
}

/// Puts the interface in promiscuous mode for as long as the socket lives.
pub fn add_promisc(fd: &OwnedFd, ifindex: i32) -> io::Result<()> {
    let m = PacketMreq {
        mr_ifindex: ifindex,
        mr_type: PACKET_MR_PROMISC,
        ..Default::default()
    };
    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &m)
}

/// Reads (and thereby resets) the kernel's counters: (packets, drops).
pub fn packet_stats(fd: &OwnedFd) -> io::Result<(u32, u32)> {
    let s: TpacketStatsV3 = getsockopt(fd, SOL_PACKET, PACKET_STATISTICS)?;
    Ok((s.tp_packets, s.tp_drops))
}

/// Attaches a classic BPF program (SO_ATTACH_FILTER).
pub fn attach_filter(fd: &OwnedFd, prog: &[Insn]) -> io::Result<()> {
    let len = u16::try_from(prog.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: Insn is repr(C) with struct sock_filter's layout (u16, u8, u8,
    // u32); fprog points to `len` of them, alive for the call; the kernel
    // copies the program and never writes through the pointer.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Detaches any socket filter (ENOENT when there was none is success).
pub fn detach_filter(fd: &OwnedFd) -> io::Result<()> {
    match setsockopt(fd, libc::SOL_SOCKET, libc::SO_DETACH_FILTER, &0) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        r => r,
    }
}

/// Binds the socket to `ifindex` (0: every interface) for all protocols.
pub fn bind(fd: &OwnedFd, ifindex: i32) -> io::Result<()> {
    // SAFETY: all-zero bytes are a valid sockaddr_ll (integers only).
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: sll is a valid sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Waits up to `timeout_ms` for the socket to become readable (a block
/// retired) or to report an error. `Ok(false)` on timeout or signal.
pub fn poll_in(fd: &OwnedFd, timeout_ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLERR,
        revents: 0,
    };
    // SAFETY: p is one valid pollfd, and nfds is 1.
    let rc = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    if p.revents & (libc::POLLNVAL) != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(rc > 0)
}

/// The mapped receive ring: `block_nr` blocks of `block_size` bytes.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    block_size: usize,
    block_nr: usize,
}

// SAFETY: the mapping is owned memory shared only with the kernel; moving
// the owner to another thread is fine (nothing is thread-local).
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps the ring created by [`set_rx_ring`] on `fd`.
    pub fn new(fd: &OwnedFd, block_size: usize, block_nr: usize) -> io::Result<Mapping> {
        let len = block_size
            .checked_mul(block_nr)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "ring too large"))?;
        // SAFETY: a fresh shared mapping of the socket's ring; the kernel
        // checks the length against the ring it created.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
            block_size,
            block_nr,
        })
    }

    /// Number of blocks.
    pub fn block_nr(&self) -> usize {
        self.block_nr
    }

    fn status_word(&self, i: usize) -> Option<&AtomicU32> {
        if i >= self.block_nr {
            return None;
        }
        // SAFETY: block i starts at i * block_size < len (checked above);
        // block starts are page aligned, so offset 8 (block_status) is
        // 4-byte aligned and inside the mapping, which lives as long as
        // &self. The kernel writes the word concurrently, which is why it
        // is only accessed atomically.
        Some(unsafe { &*(self.ptr.add(i * self.block_size + 8) as *const AtomicU32) })
    }

    fn header_word(&self, i: usize, offset: usize) -> Option<&AtomicU32> {
        if i >= self.block_nr || !offset.is_multiple_of(4) || offset + 4 > self.block_size {
            return None;
        }
        // SAFETY: as in status_word: the word lies inside block i of the
        // mapping, 4-byte aligned, and is only accessed atomically because
        // the kernel may write it concurrently.
        Some(unsafe { &*(self.ptr.add(i * self.block_size + offset) as *const AtomicU32) })
    }

    /// The packet count in block `i`'s header. For a block the kernel owns
    /// this is the number of packets it has put in so far (0 for a block it
    /// has not opened since [`Mapping::release`] cleared the count).
    pub fn block_packet_count(&self, i: usize) -> u32 {
        self.header_word(i, 12)
            .map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Does block `i` belong to user space (retired by the kernel)? Acquire
    /// ordering: the block's contents are visible once this returns true.
    pub fn block_ready(&self, i: usize) -> bool {
        self.status_word(i)
            .is_some_and(|w| w.load(Ordering::Acquire) & TP_STATUS_USER != 0)
    }

    /// Block `i`'s bytes, which user space may read and write while the
    /// block is ready (the kernel does not touch a block it handed over
    /// until [`Mapping::release`]). `None` if the block is not ready.
    pub fn block_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        if !self.block_ready(i) {
            return None;
        }
        // SAFETY: the range [i*bs, (i+1)*bs) is inside the mapping (i <
        // block_nr, checked by block_ready). The block belongs to user space
        // (TP_STATUS_USER, acquired), so the kernel does not write it until
        // released; the &mut self borrow makes this the only slice into the
        // mapping, and it cannot outlive the mapping.
        Some(unsafe {
            std::slice::from_raw_parts_mut(self.ptr.add(i * self.block_size), self.block_size)
        })
    }

    /// Hands block `i` back to the kernel (release ordering: our writes to
    /// the block happen before the kernel reuses it).
    pub fn release(&mut self, i: usize) {
        // The count is cleared while the block is still ours, so that a
        // block the kernel has not reopened reads as empty.
        if let Some(n) = self.header_word(i, 12) {
            n.store(0, Ordering::Relaxed);
        }
        if let Some(w) = self.status_word(i) {
            w.store(TP_STATUS_KERNEL, Ordering::Release);
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe the mapping created in new(); no slice
        // into it can outlive &mut self.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Asks the CPU to start loading the cache line holding `at` (a hint: no
/// effect on the program's meaning, never a fault, any address allowed).
#[inline(always)]
pub fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and cannot fault,
    // whatever the address (SSE, which provides it, is part of x86-64).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// `struct sched_attr` of `sched_setattr(2)` (its first version, 56 bytes).
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}

/// Asks the scheduler to treat the calling thread as latency-sensitive:
/// under EEVDF (Linux 6.12 and later) a normal (`SCHED_OTHER`) thread may
/// request a time slice shorter than the default (`sched_runtime`, 0.1 to
/// 100 ms), and a thread with a short slice preempts a busy one sooner when
/// it wakes up. Its share of the CPU does not change (same policy, same
/// nice value; no privilege needed). Older kernels ignore the request.
pub fn request_slice(slice_us: u32) -> io::Result<()> {
    // The nice value is set along with the slice: keep the current one.
    // SAFETY: getpriority has no memory arguments (errno is reset first
    // because -1 is a valid result).
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        flags: 0,
        nice,
        priority: 0,
        runtime: u64::from(slice_us) * 1000,
        deadline: 0,
        period: 0,
        util_min: 0,
        util_max: 0,
    };
    // SAFETY: `attr` is a valid, initialized sched_attr whose `size` field
    // tells the kernel how much of it to read; pid 0 is the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Set by the SIGINT/SIGTERM handler.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGINT and SIGTERM that set the stop flag (no
/// SA_RESTART, so a blocking `poll` returns early).
pub fn install_stop_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: all-zero bytes are a valid sigaction; we then set the
        // handler to a function with the signature the kernel calls and an
        // empty mask.
        let rc = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Has a stop signal arrived since the last [`clear_stop`]?
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Clears the stop flag (before a new capture).
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}

/// Asks the running capture loop to stop, as a signal would.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// `struct ifreq` as far as the interface queries use it: the name, then a
/// 24-byte union (large enough on every Linux ABI).
#[repr(C)]
#[derive(Clone, Copy)]
struct IfReq {
    name: [u8; 16],
    data: [u8; 24],
}

const SIOCGIFFLAGS: u64 = 0x8913;
const SIOCGIFHWADDR: u64 = 0x8927;
const SIOCGIFINDEX: u64 = 0x8933;

/// Index, ARPHRD hardware type and IFF flags of the interface `name` in the
/// calling thread's network namespace (ioctls on a throw-away socket).
/// `Ok(None)` if no such interface.
pub fn iface_info(name: &str) -> io::Result<Option<(i32, u16, u32)>> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= 16 || bytes.contains(&0) {
        return Ok(None);
    }
    // SAFETY: plain system call with integer arguments.
    let raw = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw was just returned by socket() and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let query = |req: u64| -> io::Result<Option<[u8; 24]>> {
        let mut ifr = IfReq {
            name: [0; 16],
            data: [0; 24],
        };
        ifr.name[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: these SIOCGIF* requests read the NUL-terminated name from
        // and write at most sizeof(struct ifreq) (<= 40 bytes on every ABI)
        // into the 40-byte IfReq, which lives across the call.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, &mut ifr as *mut IfReq) };
        if rc == 0 {
            return Ok(Some(ifr.data));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENODEV) => Ok(None),
            _ => Err(e),
        }
    };
    let Some(d) = query(SIOCGIFINDEX)? else {
        return Ok(None);
    };
    let index = i32::from_ne_bytes([d[0], d[1], d[2], d[3]]);
    let Some(d) = query(SIOCGIFHWADDR)? else {
        return Ok(None);
    };
    let arphrd = u16::from_ne_bytes([d[0], d[1]]);
    let Some(d) = query(SIOCGIFFLAGS)? else {
        return Ok(None);
    };
    let flags = u32::from(u16::from_ne_bytes([d[0], d[1]]));
    Ok(Some((index, arphrd, flags)))
}

/// Sends one frame on a bound packet socket (link-layer header included).
pub fn send(fd: &OwnedFd, frame: &[u8]) -> io::Result<usize> {
    // SAFETY: frame points to frame.len() readable bytes for the call.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            frame.as_ptr().cast(),
            frame.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Binds a packet socket for sending on `ifindex` (protocol 0: receives
/// nothing).
pub fn bind_tx(fd: &OwnedFd, ifindex: i32) -> io::Result<()> {
    // SAFETY: all-zero bytes are a valid sockaddr_ll (integers only).
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = 0;
    sll.sll_ifindex = ifindex;
    // SAFETY: sll is a valid sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends up to 64 frames with one `sendmmsg`; returns how many were sent.
pub fn send_many(fd: &OwnedFd, frames: &[&[u8]]) -> io::Result<usize> {
    let n = frames.len().min(64);
    let mut iov: Vec<libc::iovec> = frames[..n]
        .iter()
        .map(|f| libc::iovec {
            iov_base: f.as_ptr() as *mut libc::c_void,
            iov_len: f.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            // SAFETY: mmsghdr is integers and raw pointers; all-zero is a
            // valid value (null pointers, zero lengths).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: msgs holds n headers, each pointing to one iovec in `iov`
    // describing a live frame borrowed from `frames`; all outlive the call,
    // and the kernel only reads the frames (it writes msg_len).
    let rc = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            msgs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_NOSIGNAL,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// `strftime(template, localtime(t))`, as tcpdump names `-G` files. An
/// error when the template holds a NUL byte, the time cannot be converted,
/// or the result would exceed `PATH_MAX` bytes.
pub fn strftime_local(template: &[u8], t: i64) -> io::Result<Vec<u8>> {
    if template.is_empty() {
        return Ok(Vec::new());
    }
    let fmt = std::ffi::CString::new(template)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name holds a NUL byte"))?;
    let time: libc::time_t = t;
    // SAFETY: `tm` is plain data that localtime_r fills; both pointers are
    // valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: see above; localtime_r is the thread-safe variant.
    if unsafe { libc::localtime_r(&time, &mut tm) }.is_null() {
        return Err(io::Error::other("localtime failed"));
    }
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: `buf` has `buf.len()` writable bytes, `fmt` is NUL-terminated
    // and `tm` is initialized; strftime writes at most `max` bytes.
    let n = unsafe {
        libc::strftime(
            buf.as_mut_ptr().cast::<libc::c_char>(),
            buf.len() - 1,
            fmt.as_ptr(),
            &tm,
        )
    };
    if n == 0 {
        return Err(io::Error::other("strftime: the file name is too long"));
    }
    buf.truncate(n);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    /// The thread's slice as the scheduler reports it (`se.slice`, ns), on
    /// kernels that report one.
    fn own_slice_ns() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = text.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    /// Whether the running kernel's release is at least `major.minor`.
    fn kernel_at_least(major: u32, minor: u32) -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
    }

    #[test]
    fn a_capture_thread_gets_the_slice_it_asks_for() {
        std::thread::spawn(|| {
            let before = own_slice_ns();
            let asked = super::request_slice(100);
            match (before, own_slice_ns()) {
                // Linux 6.12+ (EEVDF custom slices): 100 µs it is.
                (Some(_), Some(after)) if asked.is_ok() && kernel_at_least(6, 12) => assert_eq!(after, 100_000),
                // Otherwise the request is only a hint: nothing to check.
                _ => eprintln!("no custom slice here ({asked:?}); skipped"),
            }
        })
        .join()
        .expect("thread");
    }
}
