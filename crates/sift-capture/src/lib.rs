//! Zero-copy live capture on Linux for sift.
//!
//! An AF_PACKET socket with a TPACKET_V3 receive ring mapped into the
//! process: the kernel fills blocks of packets, sift reads (and writes out)
//! the packets straight from the mapped blocks, then hands each block back.
//!
//! ```text
//! NIC ─▶ kernel ─▶ SO_ATTACH_FILTER (sift's cBPF) ─▶ ring block ─▶ Block ─▶ Packet<'block> ─▶ pcap
//! ```
//!
//! * [`Capture::open`] creates the socket and ring for an interface
//!   ([`Config`], [`RingConfig`]); `any` captures on every interface in
//!   LINUX_SLL2 cooked mode.
//! * [`Capture::set_filter`] installs a compiled [`sift::Filter`]: its cBPF
//!   runs in the kernel (rejected packets never reach the ring) when the
//!   kernel can run it exactly, in user space otherwise ([`Placement`]).
//! * [`Capture::next_block`] waits for a retired block; [`Block::packets`]
//!   iterates its packets, whose byte slices borrow the block, so a packet
//!   cannot outlive the block's return to the kernel.
//! * VLAN tags the kernel stripped are put back in place (as libpcap does),
//!   so `vlan` filters and written files see the frame as it was on the wire.
//! * [`Capture::stats`] accumulates `PACKET_STATISTICS` (which resets on
//!   every read).
//! * [`capture_main`] is the `sift -i` loop: filter, `-c`, `-w`, `-U`,
//!   SIGINT/SIGTERM, tcpdump's statistics lines.
//!
//! Live capture needs root or CAP_NET_RAW ([`Error::Permission`]).

#![warn(missing_docs)]
// All unsafe code lives in `sys` (FFI: sockets, mmap, poll, signals).
#![deny(unsafe_code)]

pub mod frame;
pub mod output;
mod run;
mod sys;
pub mod updates;

use std::fmt;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use frame::{FrameHeader, Framing};
use sift::{Filter, Insn};
use updates::LiveFilter;

pub use run::{capture_main, capture_with, open_capture, worker_path, CaptureArgs, DEFAULT_SCHED_SLICE_US};

/// LINKTYPE/DLT value of Ethernet.
pub const DLT_EN10MB: u32 = 1;
/// DLT value of raw IP (`DLT_RAW` on Linux).
pub const DLT_RAW: u32 = 12;
/// DLT value of Linux cooked capture v2.
pub const DLT_LINUX_SLL2: u32 = 276;
/// The default snapshot length (libpcap's).
pub const DEFAULT_SNAPLEN: u32 = sift::DEFAULT_SNAPLEN;

/// Geometry and latency of the receive ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Bytes per block (a multiple of the page size, a power of two).
    pub block_size: u32,
    /// Number of blocks.
    pub block_count: u32,
    /// Milliseconds after which the kernel hands over a block that is not
    /// full (the latency bound at low packet rates).
    pub block_timeout_ms: u32,
}

impl Default for RingConfig {
    /// 8 blocks of 1 MiB (4× libpcap's default buffer), 50 ms retire
    /// timeout.
    fn default() -> Self {
        RingConfig {
            block_size: 1 << 20,
            block_count: 8,
            block_timeout_ms: 50,
        }
    }
}

impl RingConfig {
    /// A ring of about `bytes` (tcpdump's `-B`) in 4 blocks (power-of-two
    /// sizes, 64 KiB to 1 MiB; more blocks above 4 MiB). Fewer, larger
    /// blocks mean fewer wakeups, and each costs more than the reads of
    /// the block's packets (libpcap uses 16 blocks of 256 KiB for
    /// tcpdump's default 4 MiB); while the reader is woken, the kernel
    /// fills the other 3/4 of the ring.
    pub fn for_buffer(bytes: u64, block_timeout_ms: u32) -> RingConfig {
        let per_block = (bytes / 4).clamp(64 << 10, 1 << 20);
        // The largest power of two not above per_block.
        let block_size = 1u32 << (63 - per_block.leading_zeros());
        let block_count = u32::try_from((bytes / u64::from(block_size)).max(2)).unwrap_or(u32::MAX);
        RingConfig {
            block_size,
            block_count,
            block_timeout_ms,
        }
    }
}

/// What to capture and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Interface name, or `any` for every interface (cooked SLL2 headers).
    pub interface: String,
    /// Put the interface in promiscuous mode (ignored for `any`).
    pub promisc: bool,
    /// Bytes kept of each packet (0 means the default 262144).
    pub snaplen: u32,
    /// Ring geometry.
    pub ring: RingConfig,
    /// Do not capture packets this host sends (`PACKET_IGNORE_OUTGOING`).
    pub ignore_outgoing: bool,
    /// Join a PACKET_FANOUT group: the kernel spreads the interface's
    /// packets over the group's sockets (one ring each). Activate the
    /// members with [`Capture::activate_held`], then release them, for a
    /// flow never to be split between members while the group forms.
    pub fanout: Option<Fanout>,
}

/// How the kernel spreads packets over the sockets of a fanout group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FanoutMode {
    /// By flow hash: a flow always goes to the same socket.
    Hash,
    /// Round robin.
    LoadBalance,
    /// By the CPU that received the packet.
    Cpu,
    /// To the next socket when one's ring is full.
    Rollover,
    /// By the NIC's receive queue.
    QueueMapping,
}

/// Membership of a PACKET_FANOUT group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fanout {
    /// Group id, shared by the group's sockets (per network namespace).
    pub group: u16,
    /// Distribution.
    pub mode: FanoutMode,
    /// Reassemble IP fragments before hashing (PACKET_FANOUT_FLAG_DEFRAG),
    /// so all fragments of a datagram reach the same socket.
    pub defrag: bool,
}

impl Fanout {
    fn mode_and_flags(&self) -> u16 {
        let mode = match self.mode {
            FanoutMode::Hash => 0,
            FanoutMode::LoadBalance => 1,
            FanoutMode::Cpu => 2,
            FanoutMode::Rollover => 3,
            FanoutMode::QueueMapping => 5,
        };
        mode | if self.defrag { 0x8000 } else { 0 }
    }
}

impl Config {
    /// Defaults for `interface`: promiscuous, default snaplen and ring.
    pub fn new(interface: &str) -> Config {
        Config {
            interface: interface.to_string(),
            promisc: true,
            snaplen: DEFAULT_SNAPLEN,
            ring: RingConfig::default(),
            ignore_outgoing: false,
            fanout: None,
        }
    }
}

/// Why a capture could not be set up or run.
#[derive(Debug)]
pub enum Error {
    /// Creating the packet socket was refused (not root, no CAP_NET_RAW).
    Permission,
    /// No interface of that name.
    NoSuchDevice(String),
    /// The ring geometry is invalid.
    BadRing(String),
    /// A system call failed; `what` says which step.
    Io {
        /// The step that failed.
        what: &'static str,
        /// The system error.
        error: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Permission => write!(f, "live capture needs root or CAP_NET_RAW"),
            Error::NoSuchDevice(d) => write!(f, "{d}: No such device exists"),
            Error::BadRing(m) => write!(f, "invalid ring configuration: {m}"),
            Error::Io { what, error } => write!(f, "{what}: {error}"),
        }
    }
}

impl std::error::Error for Error {}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> Error {
    move |error| Error::Io { what, error }
}

/// A network interface as `-D` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Interface name (`any` for the pseudo-device).
    pub name: String,
    /// Kernel interface index (0 for `any`).
    pub index: i32,
    /// ARPHRD_* hardware type.
    pub arphrd: u16,
    /// IFF_* flags.
    pub flags: u32,
}

const IFF_UP: u32 = 0x1;
const IFF_LOOPBACK: u32 = 0x8;
const IFF_RUNNING: u32 = 0x40;

impl Interface {
    /// Looks an interface up by name in the calling thread's network
    /// namespace (`any` is the pseudo-device).
    pub fn by_name(name: &str) -> Result<Interface, Error> {
        if name == "any" {
            return Ok(Interface {
                name: "any".into(),
                index: 0,
                arphrd: 0xffff,
                flags: IFF_UP | IFF_RUNNING,
            });
        }
        match sys::iface_info(name) {
            Ok(Some((index, arphrd, flags))) => Ok(Interface {
                name: name.to_string(),
                index,
                arphrd,
                flags,
            }),
            Ok(None) => Err(Error::NoSuchDevice(name.to_string())),
            Err(error) => Err(Error::Io {
                what: "interface lookup",
                error,
            }),
        }
    }

    /// The link type of packets captured on this interface (DLT value) and
    /// whether the kernel must be asked for cooked (SOCK_DGRAM) packets.
    ///
    /// Ethernet and loopback give EN10MB, `ARPHRD_NONE` (tun) gives RAW,
    /// 802.11 and radiotap their DLTs; `any` and every other hardware type
    /// give LINUX_SLL2 in cooked mode.
    pub fn link(&self) -> (u32, bool) {
        if self.name == "any" {
            return (DLT_LINUX_SLL2, true);
        }
        match self.arphrd {
            1 | 772 => (DLT_EN10MB, false), // ETHER, LOOPBACK
            0xfffe => (DLT_RAW, false),     // NONE
            801 => (105, false),            // IEEE80211
            803 => (127, false),            // IEEE80211_RADIOTAP
            _ => (DLT_LINUX_SLL2, true),
        }
    }

    /// Is the interface up?
    pub fn is_up(&self) -> bool {
        self.flags & IFF_UP != 0
    }

    /// The `tcpdump -D` description of the flags.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.flags & IFF_UP != 0 {
            parts.push("Up");
        }
        if self.flags & IFF_RUNNING != 0 {
            parts.push("Running");
        }
        if self.flags & IFF_LOOPBACK != 0 {
            parts.push("Loopback");
        }
        if self.name == "any" {
            format!(
                "any (Pseudo-device that captures on all interfaces) [{}]",
                parts.join(", ")
            )
        } else {
            format!("{} [{}]", self.name, parts.join(", "))
        }
    }
}

/// Every interface of the calling thread's network namespace plus `any`,
/// ordered roughly as tcpdump `-D` does (up first, loopback after the
/// others, `any` after the interfaces that are up).
pub fn list_interfaces() -> io::Result<Vec<Interface>> {
    // /proc/thread-self/net/dev follows the thread's namespace (unlike
    // /sys/class/net, which follows the sysfs mount's).
    let dev = fs::read_to_string("/proc/thread-self/net/dev")
        .or_else(|_| fs::read_to_string("/proc/net/dev"))?;
    let mut v = Vec::new();
    for line in dev.lines().skip(2) {
        let Some((name, _)) = line.split_once(':') else {
            continue;
        };
        if let Ok(i) = Interface::by_name(name.trim()) {
            v.push(i);
        }
    }
    v.push(Interface::by_name("any").map_err(|e| io::Error::other(e.to_string()))?);
    let rank = |i: &Interface| {
        let lo = i.flags & IFF_LOOPBACK != 0;
        let any = i.name == "any";
        (!i.is_up(), lo, any, i.index)
    };
    v.sort_by_key(rank);
    Ok(v)
}

/// The `tcpdump -D` listing: `1.eth0 [Up, Running]` lines.
pub fn interface_listing() -> io::Result<String> {
    let mut s = String::new();
    for (n, i) in list_interfaces()?.iter().enumerate() {
        s.push_str(&format!("{}.{}\n", n + 1, i.describe()));
    }
    Ok(s)
}

/// Where the filter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// No filter: every packet is captured.
    None,
    /// In the kernel; only packets whose VLAN tag the kernel stripped
    /// (invisible to an in-kernel filter) are passed up and filtered again
    /// in user space after the tag is put back.
    Kernel,
    /// Entirely in user space (cooked mode, or the kernel refused the
    /// program).
    Userland,
}

/// Capture counters, as tcpdump reports them plus sift's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets handed to the application (written).
    pub captured: u64,
    /// Packets the kernel's socket filter accepted (drops included), as
    /// libpcap's `ps_recv`.
    pub received_by_filter: u64,
    /// Packets the kernel dropped because the ring was full.
    pub dropped_by_kernel: u64,
    /// Packets the interface dropped since the capture started, as
    /// libpcap's `ps_ifdrop` on Linux: the growth of the interface's
    /// `rx_missed_errors` + `rx_fifo_errors` (sysfs), counted in
    /// promiscuous mode only (never for `any`).
    pub dropped_by_interface: u64,
    /// Packets sift could not present (malformed ring frames) or lost
    /// after reading them.
    pub dropped_by_sift: u64,
    /// Packets that reached the ring but failed the user-space filter.
    pub filtered_in_userland: u64,
}

impl Stats {
    /// tcpdump's exit lines (`N packets captured`, `... received by
    /// filter`, `... dropped by kernel`, and, as tcpdump 4.99 prints it
    /// only when not zero, `... dropped by interface`) plus
    /// `N packets dropped by sift`.
    pub fn tcpdump_lines(&self) -> String {
        let line =
            |n: u64, what: &str| format!("{n} packet{} {what}\n", if n == 1 { "" } else { "s" });
        let mut s = String::new();
        s.push_str(&line(self.captured, "captured"));
        s.push_str(&line(self.received_by_filter, "received by filter"));
        s.push_str(&line(self.dropped_by_kernel, "dropped by kernel"));
        if self.dropped_by_interface != 0 {
            s.push_str(&line(self.dropped_by_interface, "dropped by interface"));
        }
        s.push_str(&line(self.dropped_by_sift, "dropped by sift"));
        s
    }
}

#[derive(Debug, Default)]
struct Counters {
    delivered: u64,
    malformed: u64,
    userland_rejected: u64,
    kernel_packets: u64,
    kernel_drops: u64,
    /// The interface's drop counters when the capture was activated
    /// (promiscuous mode only, as libpcap).
    interface_drops_at_start: Option<u64>,
}

/// One live capture: a packet socket and its mapped TPACKET_V3 ring.
pub struct Capture {
    fd: OwnedFd,
    map: sys::Mapping,
    iface: Interface,
    linktype: u32,
    framing: Framing,
    snaplen: u32,
    ring: RingConfig,
    promisc: bool,
    fanout: Option<Fanout>,
    active: bool,
    next: usize,
    filter: Option<UserPredicate>,
    placement: Placement,
    /// Blocks still to filter entirely in user space because they may hold
    /// packets that passed a previous filter.
    refilter_blocks: usize,
    /// The socket filter last attached, which [`Capture::release`] attaches
    /// again (empty: none).
    kernel_program: Vec<Insn>,
    counters: Counters,
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("interface", &self.iface.name)
            .field("linktype", &self.linktype)
            .field("snaplen", &self.snaplen)
            .field("ring", &self.ring)
            .field("placement", &self.placement)
            .finish()
    }
}

fn page_size() -> u32 {
    4096
}

impl Capture {
    /// Creates the socket and the ring for `cfg.interface`. The socket
    /// receives nothing until [`Capture::activate`] (called by the first
    /// [`Capture::next_block`]), so a filter set in between applies to the
    /// very first packet.
    pub fn open(cfg: &Config) -> Result<Capture, Error> {
        let iface = Interface::by_name(&cfg.interface)?;
        let (linktype, cooked) = iface.link();
        let r = cfg.ring;
        if r.block_size < page_size() || !r.block_size.is_power_of_two() {
            return Err(Error::BadRing(format!(
                "block size {} is not a power of two of at least {}",
                r.block_size,
                page_size()
            )));
        }
        if r.block_count == 0 {
            return Err(Error::BadRing("no blocks".into()));
        }
        let snaplen = if cfg.snaplen == 0 {
            DEFAULT_SNAPLEN
        } else {
            cfg.snaplen
        };
        let fd = sys::packet_socket(cooked).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => Error::Permission,
            _ => Error::Io {
                what: "socket(AF_PACKET)",
                error: e,
            },
        })?;
        sys::set_tpacket_v3(&fd).map_err(io_err("PACKET_VERSION TPACKET_V3"))?;
        let framing = if cooked {
            Framing::CookedSll2
        } else {
            Framing::Raw {
                reinsert_vlan: linktype == DLT_EN10MB,
            }
        };
        let reserve = if cooked {
            frame::SLL2_HDR_LEN
        } else {
            frame::VLAN_TAG_LEN
        };
        sys::set_reserve(&fd, reserve as u32).map_err(io_err("PACKET_RESERVE"))?;
        if cfg.ignore_outgoing {
            sys::set_ignore_outgoing(&fd).map_err(io_err("PACKET_IGNORE_OUTGOING"))?;
        }
        // The frame size only has to divide the block size in V3.
        let frame_size = 2048u32.min(r.block_size);
        let frames_per_block = r.block_size / frame_size;
        let frame_nr = frames_per_block
            .checked_mul(r.block_count)
            .ok_or_else(|| Error::BadRing("too many blocks".into()))?;
        let req = sys::TpacketReq3 {
            block_size: r.block_size,
            block_nr: r.block_count,
            frame_size,
            frame_nr,
            retire_blk_tov: r.block_timeout_ms,
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        sys::set_rx_ring(&fd, &req).map_err(io_err("PACKET_RX_RING"))?;
        let map = sys::Mapping::new(&fd, r.block_size as usize, r.block_count as usize)
            .map_err(io_err("mmap of the ring"))?;
        let mut cap = Capture {
            fd,
            map,
            linktype,
            framing,
            snaplen,
            ring: r,
            promisc: cfg.promisc && iface.name != "any",
            fanout: cfg.fanout,
            iface,
            active: false,
            next: 0,
            filter: None,
            placement: Placement::None,
            refilter_blocks: 0,
            kernel_program: Vec::new(),
            counters: Counters::default(),
        };
        // Without a filter the kernel still truncates to the snapshot length.
        cap.set_filter(None)?;
        Ok(cap)
    }

    /// The link type of the captured packets (DLT value; the LINKTYPE
    /// value for files is the same for every type this crate produces).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// The interface.
    pub fn interface(&self) -> &Interface {
        &self.iface
    }

    /// The snapshot length.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Where the current filter runs.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The classic BPF program of the filter installed with
    /// [`Capture::set_filter`] (what the kernel runs, behind the VLAN
    /// prefix or rewritten for cooked mode, when the placement is
    /// [`Placement::Kernel`]); `None` without one, for a live filter, or
    /// for a filter too large for classic BPF (`sift::Filter::program`
    /// fails; it runs in user space).
    pub fn filter_program(&self) -> Option<&[Insn]> {
        match &self.filter {
            Some(UserPredicate::Static(f)) => f.program().ok(),
            _ => None,
        }
    }

    /// Options to compile a filter for this capture with (link type,
    /// snapshot length; live semantics).
    pub fn compile_options(&self) -> sift::CompileOptions {
        sift::CompileOptions {
            linktype: sift::LinkType(self.linktype),
            snaplen: self.snaplen,
            ..Default::default()
        }
    }

    /// Installs `filter` (compiled with [`Capture::compile_options`]), or
    /// removes the filter with `None`. Returns where it runs.
    ///
    /// In cooked mode (`any`) the kernel has the network-layer packet and
    /// the SLL2 header's fields as ancillary data: the program is attached
    /// with its offsets rewritten ([`cooked_program`]) when that is exact,
    /// and runs in user space on the rebuilt SLL2 packets otherwise.
    ///
    /// In raw (non-cooked) mode the program is attached with
    /// SO_ATTACH_FILTER behind a three-instruction prefix that lets through
    /// packets whose VLAN tag the kernel stripped (the kernel runs socket
    /// filters on the untagged frame); those are filtered again in user
    /// space once the tag is back. If the kernel refuses the program, or
    /// would not run it exactly ([`kernel_runs_exactly`]), it runs in user
    /// space.
    ///
    /// On an active capture the swap is exact: the packets already in the
    /// ring (which passed the previous filter) are filtered again with the
    /// new one in user space, for one pass over the ring.
    pub fn set_filter(&mut self, filter: Option<Filter>) -> Result<Placement, Error> {
        let accept_all = [Insn::stmt(0x06, self.snaplen)]; // ret #snaplen
        let placement = match (&filter, self.framing) {
            (None, _) => {
                // Truncation in the kernel; a refusal here is harmless.
                let _ = self.attach(&accept_all);
                Placement::None
            }
            (Some(f), Framing::CookedSll2) => {
                let kernel = kernel_program(f).and_then(cooked_program);
                match kernel.map(|prog| self.attach(&prog)) {
                    Some(Ok(())) => Placement::Kernel,
                    _ => {
                        self.detach().map_err(io_err("SO_DETACH_FILTER"))?;
                        let _ = self.attach(&accept_all);
                        Placement::Userland
                    }
                }
            }
            (Some(f), Framing::Raw { .. }) => match kernel_program(f) {
                None => {
                    let _ = self.attach(&accept_all);
                    Placement::Userland
                }
                Some(program) => match self.attach(&vlan_passthrough(program, self.snaplen)) {
                    Ok(()) => Placement::Kernel,
                    Err(_) => {
                        self.detach().map_err(io_err("SO_DETACH_FILTER"))?;
                        let _ = self.attach(&accept_all);
                        Placement::Userland
                    }
                },
            },
        };
        self.filter = filter.map(UserPredicate::Static);
        self.placement = placement;
        if self.active {
            // Every block the kernel may have (partly) filled under the old
            // filter is filtered again with the new one.
            self.refilter_blocks = self.map.block_nr();
        }
        Ok(placement)
    }

    /// Installs a [`LiveFilter`] (`--engine dynamic`): it runs in user
    /// space on every packet of the ring (the kernel only truncates to the
    /// snapshot length), and [`Capture::live_filter_mut`] updates it between
    /// blocks. On an active capture the packets already in the ring are
    /// filtered with it too.
    pub fn set_live_filter(&mut self, filter: LiveFilter) -> Result<Placement, Error> {
        let accept_all = [Insn::stmt(0x06, self.snaplen)]; // ret #snaplen
        self.attach(&accept_all).map_err(io_err("SO_ATTACH_FILTER"))?;
        self.filter = Some(UserPredicate::Live(Box::new(filter)));
        self.placement = Placement::Userland;
        Ok(self.placement)
    }

    /// The [`LiveFilter`] installed with [`Capture::set_live_filter`], to
    /// update: a change applies from the next block on.
    pub fn live_filter_mut(&mut self) -> Option<&mut LiveFilter> {
        match self.filter.as_mut() {
            Some(UserPredicate::Live(f)) => Some(f),
            _ => None,
        }
    }

    /// Attaches `prog` as the socket filter, and remembers it for
    /// [`Capture::release`] if the kernel took it.
    fn attach(&mut self, prog: &[Insn]) -> io::Result<()> {
        sys::attach_filter(&self.fd, prog)?;
        self.kernel_program.clear();
        self.kernel_program.extend_from_slice(prog);
        Ok(())
    }

    /// Removes the socket filter.
    fn detach(&mut self) -> io::Result<()> {
        sys::detach_filter(&self.fd)?;
        self.kernel_program.clear();
        Ok(())
    }

    /// [`Capture::activate`] with every packet held back: a filter that
    /// rejects everything is attached first, so the socket is bound (and in
    /// its fanout group) but nothing enters the ring until
    /// [`Capture::release`] attaches the capture's own filter again (as
    /// does setting a filter in between). No effect on an active capture.
    ///
    /// For the members of a fanout group: activated one after another, the
    /// group forms while packets flow, and the kernel hands a flow to the
    /// members that have joined so far (a member bound but not yet in the
    /// group even gets every packet besides); activating every member held,
    /// then releasing them, keeps each flow on one member from the first
    /// packet any of them takes.
    pub fn activate_held(&mut self) -> Result<(), Error> {
        if self.active {
            return Ok(());
        }
        // ret #0 (the capture's own program stays in `kernel_program`)
        sys::attach_filter(&self.fd, &[Insn::stmt(0x06, 0)]).map_err(io_err("SO_ATTACH_FILTER"))?;
        self.activate()
    }

    /// Ends [`Capture::activate_held`]'s hold: attaches the capture's own
    /// socket filter again (removes the hold's if it has none).
    pub fn release(&mut self) -> Result<(), Error> {
        if self.kernel_program.is_empty() {
            return sys::detach_filter(&self.fd).map_err(io_err("SO_DETACH_FILTER"));
        }
        sys::attach_filter(&self.fd, &self.kernel_program).map_err(io_err("SO_ATTACH_FILTER"))
    }

    /// Binds the socket to the interface (sets promiscuous mode, joins the
    /// fanout group): from now on packets flow into the ring. Idempotent.
    pub fn activate(&mut self) -> Result<(), Error> {
        if self.active {
            return Ok(());
        }
        if self.promisc {
            self.counters.interface_drops_at_start = Some(interface_drops(&self.iface.name));
            sys::add_promisc(&self.fd, self.iface.index)
                .map_err(io_err("PACKET_ADD_MEMBERSHIP promisc"))?;
        }
        sys::bind(&self.fd, self.iface.index).map_err(|e| match e.raw_os_error() {
            Some(libc::ENODEV) => Error::NoSuchDevice(self.iface.name.clone()),
            Some(libc::ENETDOWN) => Error::Io {
                what: "bind (interface down)",
                error: e,
            },
            _ => Error::Io {
                what: "bind",
                error: e,
            },
        })?;
        if let Some(f) = self.fanout {
            sys::join_fanout(&self.fd, f.group, f.mode_and_flags())
                .map_err(io_err("PACKET_FANOUT"))?;
        }
        self.active = true;
        Ok(())
    }

    /// Waits up to `timeout_ms` (negative: forever) for the next block the
    /// kernel retired. `Ok(None)` on timeout or when a signal interrupted
    /// the wait.
    pub fn next_block(&mut self, timeout_ms: i32) -> Result<Option<Block<'_>>, Error> {
        self.activate()?;
        let n = self.map.block_nr();
        if !self.map.block_ready(self.next) {
            sys::poll_in(&self.fd, timeout_ms).map_err(io_err("poll"))?;
            if !self.map.block_ready(self.next) {
                return Ok(None);
            }
        }
        let index = self.next;
        self.next = (self.next + 1) % n.max(1);
        let user_filter = match self.placement {
            _ if self.refilter_blocks > 0 && self.filter.is_some() => UserFilter::All,
            Placement::None => UserFilter::None,
            // In cooked mode nothing is put back: the kernel saw what we see.
            Placement::Kernel if self.framing == Framing::CookedSll2 => UserFilter::None,
            Placement::Kernel => UserFilter::VlanOnly,
            Placement::Userland => UserFilter::All,
        };
        self.refilter_blocks = self.refilter_blocks.saturating_sub(1);
        Ok(Some(Block {
            map: &mut self.map,
            index,
            consumed: false,
            framing: self.framing,
            snaplen: self.snaplen,
            filter: self.filter.as_ref(),
            user_filter,
            counters: &mut self.counters,
        }))
    }

    /// Are there captured packets sift has not read yet: a retired block,
    /// or packets in the block the kernel is filling (which it hands over
    /// within one block timeout)?
    pub fn packets_pending(&self) -> bool {
        self.map.block_ready(self.next) || self.map.block_packet_count(self.next) > 0
    }

    /// Reads the kernel's counters (which resets them), adds them to the
    /// totals and returns the totals.
    pub fn stats(&mut self) -> Result<Stats, Error> {
        let (packets, drops) = sys::packet_stats(&self.fd).map_err(io_err("PACKET_STATISTICS"))?;
        self.counters.kernel_packets += u64::from(packets);
        self.counters.kernel_drops += u64::from(drops);
        let c = &self.counters;
        let dropped_by_interface = c.interface_drops_at_start.map_or(0, |start| {
            interface_drops(&self.iface.name).saturating_sub(start)
        });
        Ok(Stats {
            captured: c.delivered,
            received_by_filter: c.kernel_packets,
            dropped_by_kernel: c.kernel_drops,
            dropped_by_interface,
            dropped_by_sift: c.malformed,
            filtered_in_userland: c.userland_rejected,
        })
    }
}

/// The interface's drop counters as libpcap reads them for `ps_ifdrop`:
/// `rx_missed_errors` + `rx_fifo_errors` under
/// `/sys/class/net/IFACE/statistics` (0 for a counter that cannot be read).
fn interface_drops(iface: &str) -> u64 {
    interface_drops_in(&std::path::Path::new("/sys/class/net").join(iface))
}

/// [`interface_drops`] for the sysfs directory of an interface.
fn interface_drops_in(dir: &std::path::Path) -> u64 {
    ["rx_missed_errors", "rx_fifo_errors"]
        .iter()
        .map(|f| {
            fs::read_to_string(dir.join("statistics").join(f))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(0)
        })
        .fold(0u64, u64::saturating_add)
}

/// The classic BPF program of `filter` if the kernel may run it: there is
/// one (`sift::Filter::program`) and [`kernel_runs_exactly`] holds.
fn kernel_program(filter: &Filter) -> Option<&[Insn]> {
    filter.program().ok().filter(|p| kernel_runs_exactly(p))
}

/// Can the kernel run `prog` with libpcap's semantics on every packet?
///
/// Not when it shifts by X (the kernel takes X mod 32, libpcap gives 0 for
/// X >= 32) or may load at an offset of 2^31 or more (the kernel treats
/// those as ancillary or link/network-relative loads, libpcap as out of
/// bounds). Constant offsets are checked directly; for `[x + k]` loads, X
/// must provably stay small: every `ldx` is `4*([k]&0xf)` (at most 60) or
/// a constant, and there is no `tax`. Programs the kernel's checker refuses
/// are caught when attaching.
pub fn kernel_runs_exactly(prog: &[Insn]) -> bool {
    let mut max_x: Option<u64> = Some(0);
    for i in prog {
        let class = i.code & 0x07;
        let mode = i.code & 0xe0;
        if class == 0x01 {
            let bound = match mode {
                0xa0 => Some(60),             // ldxb 4*([k]&0xf)
                0x00 => Some(u64::from(i.k)), // ldx #k
                _ => None,
            };
            max_x = max_x.zip(bound).map(|(a, b)| a.max(b));
        }
        if class == 0x07 && i.code & 0xf8 == 0x00 {
            max_x = None; // tax
        }
    }
    prog.iter().all(|i| {
        let class = i.code & 0x07;
        let mode = i.code & 0xe0;
        let shift_by_x =
            class == 0x04 && matches!(i.code & 0xf0, 0x60 | 0x70) && i.code & 0x08 != 0;
        let loads = matches!(class, 0x00 | 0x01);
        let huge_abs = loads && matches!(mode, 0x20 | 0xa0) && i.k >= 0x8000_0000;
        let huge_ind =
            loads && mode == 0x40 && max_x.is_none_or(|x| x + u64::from(i.k) >= 0x8000_0000);
        !shift_by_x && !huge_abs && !huge_ind
    })
}

/// `prog`, written for LINUX_SLL2 packets, rewritten for a cooked
/// (SOCK_DGRAM) socket whose filter sees the network-layer packet: payload
/// offsets lose the 20-byte header, and the three header fields libpcap's
/// programs read become the kernel's ancillary loads (`ldh [0]` protocol,
/// `ld [4]` interface index, `ldb [10]` packet type). `None` when the
/// rewrite would not be exact: other header bytes, `[x + k]` or
/// `4*([k]&0xf)` with `k` inside the header (X is a length, so only loads
/// whose constant part is past the header move with it), or `len` (the
/// kernel's excludes the header).
pub fn cooked_program(prog: &[Insn]) -> Option<Vec<Insn>> {
    const SKF_AD_OFF: u32 = 0xffff_f000;
    const HDR: u32 = frame::SLL2_HDR_LEN as u32;
    let mut out = prog.to_vec();
    for i in &mut out {
        let class = i.code & 0x07;
        if !matches!(class, 0x00 | 0x01) {
            continue;
        }
        let (mode, size) = (i.code & 0xe0, i.code & 0x18);
        match mode {
            0x80 => return None, // len
            0x20 if class == 0x00 => {
                i.k = match (i.k, size) {
                    (k, _) if k >= HDR => k - HDR,
                    (0, 0x08) => SKF_AD_OFF,      // ldh [0]: SKF_AD_PROTOCOL
                    (4, 0x00) => SKF_AD_OFF + 8,  // ld [4]: SKF_AD_IFINDEX
                    (10, 0x10) => SKF_AD_OFF + 4, // ldb [10]: SKF_AD_PKTTYPE
                    _ => return None,
                };
            }
            0x40 | 0xa0 => {
                if i.k < HDR {
                    return None;
                }
                i.k -= HDR;
            }
            _ => {}
        }
    }
    Some(out)
}

/// `prog` behind a prefix that accepts (`ret #snaplen`) every packet whose
/// VLAN tag the kernel stripped: `ld vlan_avail; jeq #0, +1, +0; ret #snaplen`.
/// Jumps are relative, so the program after the prefix is unchanged.
pub fn vlan_passthrough(prog: &[Insn], snaplen: u32) -> Vec<Insn> {
    // SKF_AD_OFF (-0x1000) + SKF_AD_VLAN_TAG_PRESENT (48).
    const VLAN_TAG_PRESENT: u32 = 0xffff_f000 + 48;
    let mut v = Vec::with_capacity(prog.len() + 3);
    v.push(Insn::stmt(0x20, VLAN_TAG_PRESENT)); // ld [vlan_avail]
    v.push(Insn::jump(0x15, 0, 1, 0)); // jeq #0, skip the ret
    v.push(Insn::stmt(0x06, snaplen)); // ret #snaplen
    v.extend_from_slice(prog);
    v
}

/// The filter run in user space.
enum UserPredicate {
    /// A compiled filter (also attached to the kernel when exact).
    Static(Filter),
    /// A filter updated while packets flow.
    Live(Box<LiveFilter>),
}

impl UserPredicate {
    #[inline]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        match self {
            UserPredicate::Static(f) => f.matches(data, wire_len),
            UserPredicate::Live(f) => f.matches(data, wire_len),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UserFilter {
    None,
    VlanOnly,
    All,
}

/// A block the kernel handed over. Its packets borrow it; dropping it
/// returns the block to the kernel.
pub struct Block<'c> {
    map: &'c mut sys::Mapping,
    index: usize,
    consumed: bool,
    framing: Framing,
    snaplen: u32,
    filter: Option<&'c UserPredicate>,
    user_filter: UserFilter,
    counters: &'c mut Counters,
}

impl Block<'_> {
    /// The packets of the block that pass the filter, rebuilt in place
    /// (VLAN tags back, SLL2 headers) and truncated to the snapshot length.
    /// A block can be iterated once: a second call yields nothing.
    pub fn packets(&mut self) -> Packets<'_> {
        let first = std::mem::replace(&mut self.consumed, true);
        let (rest, remaining) = match (first, self.map.block_mut(self.index)) {
            (false, Some(mem)) => match frame::block_header(mem) {
                Some(h) => {
                    let used = (h.len as usize).min(mem.len());
                    let start = (h.first as usize).min(used);
                    let mem: &mut [u8] = &mut mem[..used];
                    (mem.get_mut(start..).unwrap_or_default(), h.num_pkts)
                }
                None => (Default::default(), 0),
            },
            _ => (Default::default(), 0),
        };
        Packets {
            rest,
            remaining,
            framing: self.framing,
            snaplen: self.snaplen as usize,
            filter: self.filter,
            user_filter: self.user_filter,
            counters: self.counters,
            budget: None,
            budget_spent: false,
            prefetched: 0,
        }
    }
}

impl Drop for Block<'_> {
    fn drop(&mut self) {
        self.map.release(self.index);
    }
}

/// One captured packet, borrowed from its ring block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'b> {
    /// The captured bytes (at most the snapshot length).
    pub data: &'b [u8],
    /// Length on the wire (including a VLAN tag or SLL2 header put back).
    pub wire_len: u32,
    /// Timestamp: seconds since the epoch.
    pub sec: u32,
    /// Timestamp: nanoseconds.
    pub nsec: u32,
    /// Interface index the packet was seen on.
    pub ifindex: i32,
    /// `PACKET_HOST`, `PACKET_OUTGOING`, ... (`sll_pkttype`).
    pub pkttype: u8,
    /// Whether a VLAN tag stripped by the kernel was put back.
    pub vlan_reinserted: bool,
}

/// How far ahead of the frame being read the iterator asks for cache
/// lines, when frames are short.
const PREFETCH_AHEAD: usize = 2048;
/// Frames of up to this many bytes (headers included) are short.
const SMALL_FRAME: usize = 512;
/// How many frames ahead the iterator asks for the header, when frames
/// are long.
const FRAMES_AHEAD: usize = 16;

/// Iterator over the packets of a [`Block`].
pub struct Packets<'b> {
    rest: &'b mut [u8],
    remaining: u32,
    framing: Framing,
    snaplen: usize,
    filter: Option<&'b UserPredicate>,
    user_filter: UserFilter,
    counters: &'b mut Counters,
    /// `-c`: the count of packets taken (shared by fanout workers) and the
    /// limit; each packet takes one before it is yielded.
    budget: Option<(&'b AtomicU64, u64)>,
    budget_spent: bool,
    /// Bytes from the start of `rest` asked for with a prefetch.
    prefetched: usize,
}

impl<'b> Packets<'b> {
    /// The `remaining` packets of the frames in `rest` (unfiltered).
    #[cfg(test)]
    pub(crate) fn for_test(
        rest: &'b mut [u8],
        remaining: u32,
        framing: Framing,
        counters: &'b mut Counters,
    ) -> Self {
        Packets {
            rest,
            remaining,
            framing,
            snaplen: DEFAULT_SNAPLEN as usize,
            filter: None,
            user_filter: UserFilter::None,
            counters,
            budget: None,
            budget_spent: false,
            prefetched: 0,
        }
    }

    /// Yields packets only while `taken` (incremented for each one) stays
    /// below `limit`; see [`Packets::budget_spent`].
    pub(crate) fn with_budget(mut self, taken: &'b AtomicU64, limit: u64) -> Self {
        self.budget = Some((taken, limit));
        self
    }

    /// Did the iteration end because the budget of
    /// [`Packets::with_budget`] was spent?
    pub(crate) fn budget_spent(&self) -> bool {
        self.budget_spent
    }
}

impl Packets<'_> {
    /// Asks for the cache lines of the frames after the current one (at
    /// the start of `rest`, `next` bytes long) before they are read: the
    /// kernel wrote them, most likely from another CPU.
    #[inline(always)]
    fn prefetch(&mut self, rest: &[u8], next: usize) {
        if next <= SMALL_FRAME {
            // Short packets are read whole (copied, filtered): every line
            // of the block, once, PREFETCH_AHEAD bytes before it is read.
            while self.prefetched < PREFETCH_AHEAD {
                sys::prefetch(rest.as_ptr().wrapping_add(self.prefetched));
                self.prefetched += 64;
            }
        } else {
            // Long packets are mostly written from the ring, unread: only
            // the header of the frame FRAMES_AHEAD further on, if frames
            // keep this size.
            let at = rest.as_ptr().wrapping_add(next.wrapping_mul(FRAMES_AHEAD));
            sys::prefetch(at);
            sys::prefetch(at.wrapping_add(64));
        }
    }
}

impl<'b> Iterator for Packets<'b> {
    type Item = Packet<'b>;

    #[inline(always)]
    fn next(&mut self) -> Option<Packet<'b>> {
        while self.remaining > 0 {
            self.remaining -= 1;
            let rest = std::mem::take(&mut self.rest);
            let Some(h) = FrameHeader::parse(rest) else {
                self.counters.malformed += u64::from(self.remaining) + 1;
                self.remaining = 0;
                return None;
            };
            let next = h.next_offset as usize;
            self.prefetch(rest, next);
            let (frame, tail) = if self.remaining > 0 && next > 0 && next <= rest.len() {
                rest.split_at_mut(next)
            } else {
                if self.remaining > 0 {
                    // Inconsistent chain: the rest of the block is lost.
                    self.counters.malformed += u64::from(self.remaining);
                    self.remaining = 0;
                }
                let len = rest.len();
                rest.split_at_mut(len)
            };
            self.rest = tail;
            self.prefetched = self.prefetched.saturating_sub(frame.len());
            // Most frames are used as they are; the others are parsed again
            // (so that the header need not be kept in memory for them).
            let as_is = frame::as_is(frame.len(), &h, self.framing);
            let Some(r) = as_is.or_else(|| frame::rebuild_frame(frame, self.framing)) else {
                self.counters.malformed += 1;
                continue;
            };
            let frame: &'b [u8] = frame;
            let caplen = r.caplen.min(self.snaplen);
            let Some(data) = frame.get(r.start..r.start + caplen) else {
                self.counters.malformed += 1;
                continue;
            };
            let check = match self.user_filter {
                UserFilter::None => false,
                UserFilter::VlanOnly => r.vlan_reinserted || h.has_stripped_vlan(),
                UserFilter::All => true,
            };
            if check {
                if let Some(f) = self.filter {
                    if !f.matches(data, r.wire_len) {
                        self.counters.userland_rejected += 1;
                        continue;
                    }
                }
            }
            if let Some((taken, limit)) = self.budget {
                if taken.fetch_add(1, Ordering::Relaxed) >= limit {
                    self.budget_spent = true;
                    self.remaining = 0;
                    return None;
                }
            }
            self.counters.delivered += 1;
            return Some(Packet {
                data,
                wire_len: r.wire_len,
                sec: h.sec,
                nsec: h.nsec,
                ifindex: h.ifindex,
                pkttype: h.pkttype,
                vlan_reinserted: r.vlan_reinserted,
            });
        }
        None
    }
}

/// A raw AF_PACKET sender bound to one interface: frames are sent as
/// given, link-layer header included (for tests and traffic generators).
#[derive(Debug)]
pub struct Injector {
    fd: OwnedFd,
}

impl Injector {
    /// Opens a sender on `interface` (in the calling thread's network
    /// namespace). Needs root or CAP_NET_RAW.
    pub fn open(interface: &str) -> Result<Injector, Error> {
        let iface = Interface::by_name(interface)?;
        if iface.name == "any" {
            return Err(Error::NoSuchDevice("any".into()));
        }
        let fd = sys::packet_socket(false).map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => Error::Permission,
            _ => Error::Io {
                what: "socket(AF_PACKET)",
                error: e,
            },
        })?;
        sys::bind_tx(&fd, iface.index).map_err(io_err("bind"))?;
        Ok(Injector { fd })
    }

    /// Sends from now on straight to the driver, bypassing the queueing
    /// discipline (`PACKET_QDISC_BYPASS`): faster floods; frames the
    /// driver refuses are dropped instead of queued.
    pub fn bypass_qdisc(&self) -> io::Result<()> {
        sys::set_qdisc_bypass(&self.fd)
    }

    /// Sends a batch of frames with one system call per 64; returns how
    /// many were sent (fewer on a transient error such as a full queue
    /// after the first frame).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut done = 0;
        while done < frames.len() {
            match sys::send_many(&self.fd, &frames[done..]) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    /// Sends one frame; an error if the kernel took less than all of it.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        let n = sys::send(&self.fd, frame)?;
        if n != frame.len() {
            return Err(io::Error::other(format!(
                "short send: {n} of {}",
                frame.len()
            )));
        }
        Ok(())
    }
}

/// Asks a running [`capture_main`] / [`capture_with`] loop to stop, as
/// SIGINT would (for embedding and tests).
pub fn request_stop() {
    sys::request_stop();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_is_send() {
        fn send<T: Send>() {}
        send::<Capture>();
    }

    #[test]
    fn stats_lines() {
        let s = Stats {
            captured: 1,
            received_by_filter: 2,
            dropped_by_kernel: 0,
            dropped_by_sift: 0,
            ..Default::default()
        };
        assert_eq!(
            s.tcpdump_lines(),
            "1 packet captured\n2 packets received by filter\n0 packets dropped by kernel\n0 packets dropped by sift\n"
        );
        // tcpdump 4.99 adds the interface's drops, when there are any,
        // after the kernel's.
        let s = Stats {
            dropped_by_interface: 1,
            ..s
        };
        assert_eq!(
            s.tcpdump_lines(),
            "1 packet captured\n2 packets received by filter\n0 packets dropped by kernel\n1 packet dropped by interface\n0 packets dropped by sift\n"
        );
    }

    #[test]
    fn interface_drops_sum_missed_and_fifo_errors() {
        let dir = std::env::temp_dir().join(format!("sift-ifdrops-{}", std::process::id()));
        let stats = dir.join("statistics");
        fs::create_dir_all(&stats).unwrap();
        assert_eq!(interface_drops_in(&dir), 0, "missing counters read as 0");
        fs::write(stats.join("rx_missed_errors"), "7\n").unwrap();
        assert_eq!(interface_drops_in(&dir), 7);
        fs::write(stats.join("rx_fifo_errors"), "35\n").unwrap();
        assert_eq!(interface_drops_in(&dir), 42);
        fs::write(stats.join("rx_fifo_errors"), "junk").unwrap();
        assert_eq!(interface_drops_in(&dir), 7);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(interface_drops("no-such-if0"), 0);
    }

    #[test]
    fn passthrough_prefix_keeps_program() {
        let prog = [Insn::stmt(0x06, 7)];
        let v = vlan_passthrough(&prog, 100);
        assert_eq!(v.len(), 4);
        assert_eq!(v[3], prog[0]);
        assert_eq!(v[2], Insn::stmt(0x06, 100));
        sift::Filter::from_program(v).unwrap();
    }

    #[test]
    fn kernel_exactness() {
        let f = |e: &str| sift::Filter::new(e, &sift::CompileOptions::default()).unwrap();
        assert!(kernel_runs_exactly(f.program_of("tcp port 80")));
        assert!(kernel_runs_exactly(
            f.program_of("ether[0] & 1 = 1 and vlan 3")
        ));
        assert!(!kernel_runs_exactly(
            f.program_of("ether[0] << ether[1] = 2")
        ));
        let huge = [Insn::stmt(0x20, 0x8000_0000), Insn::stmt(0x16, 0)]; // ld [0x80000000]; ret a
        assert!(!kernel_runs_exactly(&huge));
        let ind = [
            Insn::stmt(0x01, 0x7fff_fff0),
            Insn::stmt(0x50, 0x10),
            Insn::stmt(0x16, 0),
        ];
        assert!(!kernel_runs_exactly(&ind));
        assert!(kernel_runs_exactly(&ind[1..]));
        assert!(!kernel_runs_exactly(f.program_of("ether[ether[0]] = 2")));
        for e in [
            "udp dst port 53",
            "ip6 and tcp port 443",
            "vlan 10 and tcp[tcpflags] & tcp-syn != 0",
            "ip[2:2] > 100 and not icmp",
            "ip6 proto 58",
            "mpls 3 and ip",
            "tcp[13] = 2",
        ] {
            assert!(kernel_runs_exactly(f.program_of(e)), "{e}");
        }
    }

    #[test]
    fn cooked_rewrite() {
        let o = sift::CompileOptions {
            linktype: sift::LinkType::LINUX_SLL2,
            ..Default::default()
        };
        let f = |e: &str| sift::Filter::new(e, &o).unwrap();
        let p = cooked_program(f("udp dst port 1000").program().unwrap()).unwrap();
        assert_eq!(p[0], Insn::stmt(0x28, 0xffff_f000)); // ldh [protocol]
        assert!(p.contains(&Insn::stmt(0xb1, 0))); // ldxb 4*([0]&0xf)
        assert!(p.contains(&Insn::stmt(0x48, 2))); // ldh [x + 2]
        let p = cooked_program(f("inbound and ifindex 3").program().unwrap()).unwrap();
        assert_eq!(p[0], Insn::stmt(0x30, 0xffff_f004));
        assert_eq!(p[2], Insn::stmt(0x20, 0xffff_f008));
        assert!(cooked_program(f("greater 100").program().unwrap()).is_none());
        assert!(cooked_program(f("ether[2] = 1").program().unwrap()).is_none());
        assert!(cooked_program(f("ether[ether[0]] = 1").program().unwrap()).is_none());
    }

    trait ProgramOf {
        fn program_of(&self, e: &str) -> &'static [Insn];
    }
    impl<F: Fn(&str) -> sift::Filter> ProgramOf for F {
        fn program_of(&self, e: &str) -> &'static [Insn] {
            Box::leak(Box::new(self(e))).program().unwrap()
        }
    }

    #[test]
    fn link_types() {
        let i = |name: &str, arphrd| Interface {
            name: name.into(),
            index: 1,
            arphrd,
            flags: 0,
        };
        assert_eq!(i("eth0", 1).link(), (DLT_EN10MB, false));
        assert_eq!(i("lo", 772).link(), (DLT_EN10MB, false));
        assert_eq!(i("tun0", 0xfffe).link(), (DLT_RAW, false));
        assert_eq!(i("ppp0", 512).link(), (DLT_LINUX_SLL2, true));
        assert_eq!(
            Interface::by_name("any").unwrap().link(),
            (DLT_LINUX_SLL2, true)
        );
        assert!(matches!(
            Interface::by_name("no-such-if0"),
            Err(Error::NoSuchDevice(_))
        ));
        assert!(matches!(
            Interface::by_name("../x"),
            Err(Error::NoSuchDevice(_))
        ));
    }

    #[test]
    fn listing_has_lo_and_any() {
        let l = interface_listing().unwrap();
        assert!(l.contains("any (Pseudo-device"), "{l}");
        assert!(l
            .lines()
            .all(|x| x.split('.').next().unwrap().parse::<u32>().is_ok()));
    }

    #[test]
    fn ring_for_buffer_sizes() {
        let r = |kib: u64| {
            let c = RingConfig::for_buffer(kib << 10, 1000);
            (c.block_size >> 10, c.block_count)
        };
        assert_eq!(r(4096), (1024, 4));
        assert_eq!(r(256), (64, 4));
        assert_eq!(r(512), (128, 4));
        assert_eq!(r(2000), (256, 7));
        assert_eq!(r(65536), (1024, 64));
        assert_eq!(r(1), (64, 2));
    }

    #[test]
    fn bad_ring_is_refused() {
        let mut c = Config::new("lo");
        c.ring.block_size = 5000;
        assert!(matches!(Capture::open(&c), Err(Error::BadRing(_))));
        c.ring = RingConfig {
            block_count: 0,
            ..Default::default()
        };
        assert!(matches!(Capture::open(&c), Err(Error::BadRing(_))));
    }
}
