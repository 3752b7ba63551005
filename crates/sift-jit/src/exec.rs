//! Executable memory: the only module with `unsafe` code.
//!
//! No page is ever writable and executable at the same time (W^X). Two
//! ways of installing code keep that:
//!
//! * **Code file** (the default where it works): code lives in a
//!   process-private memory file (`memfd_create`), whose pages are mapped
//!   read + execute only, in chunks of 256 KiB. Code is written
//!   with `pwrite` on the file: no mapping of the process is ever writable,
//!   so installing a function is one `pwrite` (~0.2 µs on the Xeon of
//!   sessions 1–16, ~0.4 µs on the Zen 5 of session 17) instead of
//!   `mprotect` calls (~0.9 µs each there, 3 µs here), and many small
//!   filters share a page. A filter's functions are installed by their
//!   first use ([`LazyExec`] for the per-packet one), not when it is
//!   compiled. Blocks are
//!   handed out in power-of-two sizes (64 B to 64 KiB), each remembering
//!   its offset in the file; a dropped filter's block is overwritten with
//!   `int3` at once, one `pwrite` whatever its size (so its code is gone),
//!   and reused. After `fork` the child gets copies of the chunks in a file
//!   of its own (a `pthread_atfork` handler), so that neither process can
//!   overwrite code the other still runs.
//! * **Pages switched with `mprotect`** (where the code file is not
//!   available — no `memfd_create`, or a policy refusing executable shared
//!   mappings — for code larger than 64 KiB, or with the environment
//!   variable `SIFT_JIT_CODE=mprotect`): machine code is copied into pages
//!   that are readable and writable (never executable), then the pages are
//!   switched to read + execute with `mprotect` (never writable while
//!   executable). Code that fits in one page takes a page from a
//!   process-wide pool of read + write pages (mapped 16 at a time, each
//!   between inaccessible guard pages so that it is a kernel mapping of its
//!   own and `mprotect` never splits or merges mappings), so that
//!   installing it is a single `mprotect`; when the filter is dropped, its
//!   page is made read + write again (no longer executable) and goes back
//!   to the pool, or is unmapped if the pool is full. Larger code gets a
//!   mapping of its own.
//!
//! What the code file trades: a dropped filter's block stays mapped
//! executable (filled with `int3`) for reuse, and an attacker able to make
//! `pwrite` calls on the file descriptor could change code — but such an
//! attacker can call `mprotect` as well; a stray write through a pointer
//! can modify code in neither mode.
//!
//! Why dropping still costs a system call (~0.2 µs, the whole of a drop):
//! erasing lazily (when the block is reused, or in batches) would leave a
//! dropped filter's code executable in between. Safe Rust cannot reach it
//! (no function pointer to the code leaves this module), but the point of
//! the erasure is the case where something has gone wrong already: stale
//! code is then a ready-made gadget, so "a dropped filter's code is gone"
//! must hold when `drop` returns. Cheaper ways to erase were rejected: a
//! second, writable mapping of the file would make code writable through
//! a pointer; punching a hole zeroes whole pages (shared with live
//! filters, and zero bytes are no trap); `pwritev` only writes one range.
//! A program with no code (one starting with `ret #k`) has nothing to
//! install or erase.

use crate::{PacketRef, Prefetch};
use std::io;
use std::sync::Mutex;

/// The signature of a compiled filter: packet pointer, captured length,
/// wire length; returns the filter's verdict.
type FilterFn = extern "sysv64" fn(*const u8, usize, u32) -> u32;

/// The signature of a compiled count function (see `crate::x64`): `n`
/// packets to filter (followed by `ahead / PacketRef size` more, whose
/// packets it only prefetches), the prefetch distance in bytes of
/// [`PacketRef`]s, and whether to prefetch a deeper line of those packets
/// too (non-zero; see [`crate::Prefetch`]); returns how many it accepted.
type CountFn = extern "sysv64" fn(*const PacketRef<'_>, usize, usize, usize) -> u64;

/// The signature of a compiled verdict function (see `crate::x64`): that
/// of [`CountFn`] with, before the `deep` flag, where to write the `n`
/// packets' verdicts (one byte each, 1 or 0).
type VerdictFn = extern "sysv64" fn(*const PacketRef<'_>, usize, usize, *mut u8, usize) -> u64;

/// Pages mapped at once when the pool is empty.
const POOL_CHUNK: usize = 16;

/// Free pages kept at most; more are unmapped.
const POOL_MAX: usize = 256;

/// Addresses of free read + write pages, each one page long.
static POOL: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A read + execute mapping holding one compiled filter.
#[derive(Debug)]
pub(crate) struct ExecBuffer {
    ptr: *mut u8,
    map_len: usize,
    code_len: usize,
    /// The page came from (and goes back to) [`POOL`].
    pooled: bool,
    /// A block of the code file, going back to `code_file::CODE`.
    block: Option<code_file::Block>,
}

// SAFETY: the mapping is immutable (read + execute) after `ExecBuffer::new`
// returns, and it is only released by `Drop`, which needs exclusive
// ownership; sharing the pointer between threads is therefore sound.
unsafe impl Send for ExecBuffer {}
// SAFETY: see `Send`: no method mutates the mapping.
unsafe impl Sync for ExecBuffer {}

fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(page)
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096)
}

/// Maps `len` bytes read + write (anonymous, private; `populate`: fault
/// the pages in now rather than on first write).
fn map_rw(len: usize, populate: bool) -> io::Result<*mut u8> {
    let populate = if populate { libc::MAP_POPULATE } else { 0 };
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing; it aliases no Rust object. The result is checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(ptr.cast::<u8>())
}

/// A free read + write page from the pool, mapping more if it is empty.
///
/// Pool pages alternate with inaccessible guard pages: a chunk is mapped
/// inaccessible, then every other page is made read + write and faulted
/// in. Each pool page is thus a mapping (kernel VMA) of its own that can
/// never merge with a neighbour, so switching it between read + write and
/// read + execute changes one VMA in place instead of splitting the
/// chunk's mapping and merging it back on every compile and drop, which
/// is what made the `mprotect` cost several microseconds. A pool page is
/// released together with the guard page after it (`2 * page` bytes).
fn take_page(page: usize) -> io::Result<*mut u8> {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(addr) = pool.pop() {
        return Ok(addr as *mut u8);
    }
    let len = page
        .checked_mul(2 * POOL_CHUNK)
        .ok_or_else(|| io::Error::new(io::ErrorKind::OutOfMemory, "page size"))?;
    // SAFETY: an anonymous private inaccessible mapping at an address of
    // the kernel's choosing; it aliases no Rust object. Checked below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let base = base.cast::<u8>();
    let mut pages = Vec::with_capacity(POOL_CHUNK);
    for i in 0..POOL_CHUNK {
        // SAFETY: page `2 * i` of the mapping just made; nothing else
        // refers to it.
        let p = unsafe { base.add(2 * i * page) };
        // SAFETY: one whole page of the mapping owned here.
        let rc = unsafe { libc::mprotect(p.cast(), page, libc::PROT_READ | libc::PROT_WRITE) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            // SAFETY: the whole chunk is still owned here; no page of it
            // was handed out.
            unsafe { libc::munmap(base.cast(), len) };
            return Err(err);
        }
        // Fault the page in now rather than on the first compile using it.
        // SAFETY: `p` is a read + write page owned here.
        unsafe { p.write_volatile(0) };
        pages.push(p as usize);
    }
    // Hand out the first page, keep the others.
    pool.extend(pages.iter().skip(1));
    Ok(base)
}

impl ExecBuffer {
    /// Installs `code` read + execute. `code` must be a complete function
    /// generated by `crate::x64`: for [`ExecBuffer::call`] one with the
    /// [`FilterFn`] signature that only reads the packet bytes it was given
    /// (`ptr[..caplen]`), its own stack frame and the 128-byte red zone
    /// below the stack pointer (a count function goes in a
    /// [`CountBuffer`]).
    pub(crate) fn new(code: &[u8]) -> io::Result<ExecBuffer> {
        if let Some(buf) = code_file::install(code) {
            return Ok(buf);
        }
        let page = page_size();
        let pooled = code.len() <= page;
        let (ptr, map_len) = if pooled {
            (take_page(page)?, page)
        } else {
            let len = code
                .len()
                .checked_add(page - 1)
                .map(|n| n / page * page)
                .ok_or_else(|| io::Error::new(io::ErrorKind::OutOfMemory, "code too large"))?;
            (map_rw(len, false)?, len)
        };
        let buf = ExecBuffer {
            ptr,
            map_len,
            code_len: code.len(),
            pooled,
            block: None,
        };
        // SAFETY: `ptr` starts `map_len >= code.len()` bytes of read + write
        // memory that this buffer owns exclusively (a pool page is handed
        // out once; a fresh mapping is new) and that does not overlap `code`.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), buf.ptr, code.len()) };
        // SAFETY: `ptr`/`map_len` describe whole pages owned by `buf`.
        let rc = unsafe { libc::mprotect(ptr.cast(), map_len, libc::PROT_READ | libc::PROT_EXEC) };
        if rc != 0 {
            // `buf`'s Drop releases the pages.
            return Err(io::Error::last_os_error());
        }
        Ok(buf)
    }

    /// The address of the first byte of code.
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// A copy of the machine code.
    pub(crate) fn code_bytes(&self) -> Vec<u8> {
        // SAFETY: `ptr` starts `code_len` initialized bytes of a mapping this
        // buffer owns, readable (read + execute) and never written after
        // `new` returned; the slice does not outlive `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.code_len) }.to_vec()
    }

    /// Runs the filter on one packet.
    #[inline(always)]
    pub(crate) fn call(&self, data: &[u8], wire_len: u32) -> u32 {
        // SAFETY: `self.ptr` points to read + execute code generated by
        // `crate::x64` with the `FilterFn` ABI (see `new`). That code checks
        // every packet load against `data.len()` before reading, touches
        // no memory but `data`, its stack and the red zone, restores the
        // callee-saved registers it uses, and always returns.
        let f: FilterFn = unsafe { std::mem::transmute::<*mut u8, FilterFn>(self.ptr) };
        f(data.as_ptr(), data.len(), wire_len)
    }
}

/// The packets one call of a count function on gathered packets reads
/// ([`CountBuffer::count`]): [`crate::BATCH`] to filter and the
/// [`crate::PREFETCH_AHEAD`] after them, whose bytes it only prefetches.
pub(crate) const WINDOW: usize = crate::BATCH + crate::PREFETCH_AHEAD;

/// A filter's per-packet function: its machine code, generated when the
/// filter is compiled, and installed read + execute ([`ExecBuffer::new`])
/// by the first call that runs it (or asks for its address). Filters
/// used only through the batch entry points (which run the count and
/// verdict functions, compiled on first use) never install it: one
/// `pwrite` into the code file saved at compile time, and one when the
/// filter is dropped. Installing costs ~0.4 µs on the machine of session
/// 17, over half of libpcap's whole `pcap_compile` of `ip`
/// (docs/performance.md). Code longer than [`LAZY_MAX`] is installed at
/// compile time all the same.
///
/// A call reads only `entry` (the installed code's address) before
/// jumping to the code; the rest is boxed, out of the filter's way.
#[derive(Debug)]
pub(crate) struct LazyExec {
    /// The address of the installed code; null until installed.
    entry: std::sync::atomic::AtomicPtr<u8>,
    pending: Box<Pending>,
}

/// The installed per-packet function of a [`LazyExec`], borrowed from it.
#[derive(Clone, Copy)]
pub(crate) struct Installed<'a> {
    /// The address of the code: only [`LazyExec::installed`] makes one.
    entry: *mut u8,
    _code: std::marker::PhantomData<&'a LazyExec>,
}

impl Installed<'_> {
    /// Runs the filter on one packet.
    #[inline(always)]
    pub(crate) fn call(self, data: &[u8], wire_len: u32) -> u32 {
        // SAFETY: `entry` is the address of the `ExecBuffer` in the
        // `pending.installed` of the `LazyExec` this borrows (stored after
        // it was installed, and only then), which outlives the borrow:
        // read + execute code with the `FilterFn` ABI, as for
        // `ExecBuffer::call`.
        let f: FilterFn = unsafe { std::mem::transmute::<*mut u8, FilterFn>(self.entry) };
        f(data.as_ptr(), data.len(), wire_len)
    }
}

/// The longest per-packet function kept aside to be installed on first
/// use; longer ones are installed when compiled. Keeping the code costs a
/// heap block of its size, and in glibc a request of 1 KiB or more first
/// merges every small free block: after the optimizer has freed thousands
/// of tree nodes, that took ~15 µs for the 6.4 KB of the 200-connection
/// filter (against ~0.4 µs for the `pwrite`; session 17). A filter whose
/// code is that long takes tens of µs to compile anyway.
pub(crate) const LAZY_MAX: usize = 512;

/// The machine code of a [`LazyExec`] and its installed copy.
#[derive(Debug)]
struct Pending {
    /// The machine code while it is not installed (kept after installing,
    /// for `code_bytes`); empty for code installed when compiled.
    bytes: Box<[u8]>,
    /// The installed code, once installed; `None` inside if installing
    /// failed (the caller then evaluates the filter another way).
    installed: std::sync::OnceLock<Option<ExecBuffer>>,
}

impl LazyExec {
    /// The per-packet function `code` (complete, from `crate::x64`, as
    /// [`ExecBuffer::new`] requires), to be installed on first use. Where
    /// code cannot be installed in this process ([`can_install`]) it is
    /// installed now, so that the error shows at compile time; so is code
    /// longer than [`LAZY_MAX`].
    pub(crate) fn compiled(code: &[u8]) -> io::Result<LazyExec> {
        let now = code.len() > LAZY_MAX || !can_install();
        let lazy = LazyExec {
            entry: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            pending: Box::new(Pending {
                bytes: if now { Box::default() } else { code.into() },
                installed: std::sync::OnceLock::new(),
            }),
        };
        if now {
            let buf = ExecBuffer::new(code)?;
            lazy.entry.store(buf.ptr, std::sync::atomic::Ordering::Release);
            let _ = lazy.pending.installed.set(Some(buf));
        }
        Ok(lazy)
    }

    /// The installed code, installing it on the first call; `None` if it
    /// cannot be installed. Only the call that installs it publishes its
    /// address in `entry`: the others leave that field (read by every
    /// `JitFilter::run`, on any thread) untouched.
    pub(crate) fn get(&self) -> Option<&ExecBuffer> {
        let mut installing = false;
        let buf = self
            .pending
            .installed
            .get_or_init(|| {
                installing = true;
                ExecBuffer::new(&self.pending.bytes).ok()
            })
            .as_ref()?;
        if installing {
            self.entry.store(buf.ptr, std::sync::atomic::Ordering::Release);
        }
        Some(buf)
    }

    /// The installed code, if it was installed already (one load).
    #[inline(always)]
    pub(crate) fn installed(&self) -> Option<Installed<'_>> {
        let entry = self.entry.load(std::sync::atomic::Ordering::Acquire);
        (!entry.is_null()).then_some(Installed { entry, _code: std::marker::PhantomData })
    }

    /// The code installed when compiled, whose bytes were not kept.
    fn installed_at_compile(&self) -> Option<&ExecBuffer> {
        self.pending.installed.get()?.as_ref().filter(|_| self.pending.bytes.is_empty())
    }

    /// The number of bytes of machine code.
    pub(crate) fn code_len(&self) -> usize {
        self.installed_at_compile().map_or(self.pending.bytes.len(), |buf| buf.code_len)
    }

    /// A copy of the machine code.
    pub(crate) fn code_bytes(&self) -> Vec<u8> {
        self.installed_at_compile().map_or_else(|| self.pending.bytes.to_vec(), ExecBuffer::code_bytes)
    }

    /// Whether the code was installed (by a first call, or at compile time
    /// where [`can_install`] says no).
    #[cfg(test)]
    pub(crate) fn is_installed(&self) -> bool {
        self.pending.installed.get().is_some()
    }
}

/// Whether machine code can be installed in this process: tried once, by
/// installing (and dropping) a one-byte function. Where it cannot (no
/// executable mappings allowed), filters install their code when compiled
/// and report the error there.
pub(crate) fn can_install() -> bool {
    static CAN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CAN.get_or_init(|| ExecBuffer::new(&[0xc3]).is_ok()) // ret
}

/// A count function installed read + execute.
#[derive(Debug)]
pub(crate) struct CountBuffer {
    code: ExecBuffer,
}

impl CountBuffer {
    /// Installs `code`, a count function generated by `crate::x64` with
    /// the [`CountFn`] signature: it reads only the `PacketRef`s and
    /// packets it is given, touches no other memory but its stack and the
    /// red zone, restores the callee-saved registers it uses, and always
    /// returns.
    pub(crate) fn new(code: &[u8]) -> io::Result<CountBuffer> {
        Ok(CountBuffer { code: ExecBuffer::new(code)? })
    }

    /// Runs the count function on the first `n` (at most
    /// [`crate::BATCH`]) of `window`, the next [`crate::PREFETCH_AHEAD`]
    /// only prefetched, each packet's lines prefetched `prefetch.ahead`
    /// packets (at most `PREFETCH_AHEAD`) before it is filtered: the number
    /// of packets accepted.
    #[inline(always)]
    pub(crate) fn count(&self, window: &[PacketRef<'_>; WINDOW], n: usize, prefetch: Prefetch) -> u64 {
        let ahead = prefetch.ahead.min(crate::PREFETCH_AHEAD);
        self.run(&window[..n.min(crate::BATCH) + ahead], Prefetch { ahead, ..prefetch })
    }

    /// Runs the count function over the whole of `packets`, in place, each
    /// packet's lines prefetched `prefetch.ahead` packets (at most
    /// `PREFETCH_AHEAD`) before it is filtered: the number of packets
    /// accepted.
    #[inline(always)]
    pub(crate) fn count_in_place(&self, packets: &[PacketRef<'_>], prefetch: Prefetch) -> u64 {
        let ahead = prefetch.ahead.min(crate::PREFETCH_AHEAD).min(packets.len());
        // All but the last `ahead` packets with prefetching `ahead` on
        // (within the slice), then those with none (each prefetches its
        // own line).
        self.run(packets, Prefetch { ahead, ..prefetch }) + self.run(&packets[packets.len() - ahead..], Prefetch::NONE)
    }

    /// Runs the count function on the first `packets.len() - ahead` of
    /// `packets`, the packet `ahead` places on prefetched for each.
    #[inline(always)]
    fn run(&self, packets: &[PacketRef<'_>], prefetch: Prefetch) -> u64 {
        let ahead = prefetch.ahead.min(packets.len());
        let n = packets.len() - ahead;
        // SAFETY: the buffer holds a count function (`CountBuffer::new`)
        // with the `CountFn` ABI: it reads `n` packet refs to filter and,
        // for each, the one `ahead` places on (at most index `n - 1 +
        // ahead` = `packets.len() - 1`: all within `packets`), the bytes
        // of the first `n` packets only below their captured length (the
        // slices behind the `PacketRef`s outlive the call: they borrow for
        // at least as long as `packets`; the others' bytes, and the
        // deeper line `deep` asks for, which may lie past a packet's
        // captured length, are only prefetched, which never faults),
        // touches no other memory but
        // its stack and the red zone, restores the callee-saved registers
        // it uses, and always returns.
        let f: CountFn = unsafe { std::mem::transmute::<*mut u8, CountFn>(self.code.ptr) };
        f(packets.as_ptr(), n, ahead * usize::from(crate::packet::layout::SIZE), usize::from(prefetch.deep))
    }

    /// A copy of the machine code.
    pub(crate) fn code_bytes(&self) -> Vec<u8> {
        self.code.code_bytes()
    }
}

/// A verdict function installed read + execute.
#[derive(Debug)]
pub(crate) struct VerdictBuffer {
    code: ExecBuffer,
}

impl VerdictBuffer {
    /// Installs `code`, a verdict function generated by `crate::x64` with
    /// the [`VerdictFn`] signature: it reads only the `PacketRef`s and
    /// packets it is given, writes only the `n` verdict bytes it is given
    /// (each 0 or 1), touches no other memory but its stack and the red
    /// zone, restores the callee-saved registers it uses, and always
    /// returns.
    pub(crate) fn new(code: &[u8]) -> io::Result<VerdictBuffer> {
        Ok(VerdictBuffer { code: ExecBuffer::new(code)? })
    }

    /// Runs the verdict function over `packets` in place (as
    /// [`CountBuffer::count_in_place`]), writing packet `i`'s verdict to
    /// `verdicts[i]`; stops at the shorter of the two slices. The number of
    /// packets accepted.
    #[inline(always)]
    pub(crate) fn verdicts_in_place(&self, packets: &[PacketRef<'_>], prefetch: Prefetch, verdicts: &mut [bool]) -> u64 {
        let packets = &packets[..packets.len().min(verdicts.len())];
        let ahead = prefetch.ahead.min(crate::PREFETCH_AHEAD).min(packets.len());
        let main = packets.len() - ahead;
        let (first, last) = verdicts.split_at_mut(main);
        self.run(packets, Prefetch { ahead, ..prefetch }, first) + self.run(&packets[main..], Prefetch::NONE, last)
    }

    /// Runs the verdict function on the first `packets.len() - ahead` of
    /// `packets` (at most `verdicts.len()`), the packet `ahead` places on
    /// prefetched for each.
    #[inline(always)]
    fn run(&self, packets: &[PacketRef<'_>], prefetch: Prefetch, verdicts: &mut [bool]) -> u64 {
        let ahead = prefetch.ahead.min(packets.len());
        let n = (packets.len() - ahead).min(verdicts.len());
        // SAFETY: the buffer holds a verdict function (`VerdictBuffer::new`)
        // with the `VerdictFn` ABI: it reads `n` packet refs to filter and,
        // for each, the one `ahead` places on (at most index `n - 1 +
        // ahead` <= `packets.len() - 1`: all within `packets`), the bytes of
        // the first `n` packets only below their captured length (the
        // slices behind the `PacketRef`s outlive the call; the others'
        // bytes, and the deeper line `deep` asks for, which may lie past a
        // packet's captured length, are only prefetched, which never
        // faults), writes the bytes
        // 0 or 1 (valid `bool`s) to the first `n` of `verdicts` (`n <=
        // verdicts.len()`, borrowed mutably for the call) and nothing else
        // but its stack and the red zone, restores the callee-saved
        // registers it uses, and always returns.
        let f: VerdictFn = unsafe { std::mem::transmute::<*mut u8, VerdictFn>(self.code.ptr) };
        f(
            packets.as_ptr(),
            n,
            ahead * usize::from(crate::packet::layout::SIZE),
            verdicts.as_mut_ptr().cast::<u8>(),
            usize::from(prefetch.deep),
        )
    }
}

impl Drop for ExecBuffer {
    fn drop(&mut self) {
        if let Some(block) = self.block {
            code_file::release(self.ptr as usize, block, self.code_len);
            return;
        }
        if self.pooled {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL_MAX {
                // SAFETY: one whole page owned by `self`; no reference into
                // it outlives `self`. Back to read + write, not executable.
                let rc = unsafe {
                    libc::mprotect(
                        self.ptr.cast(),
                        self.map_len,
                        libc::PROT_READ | libc::PROT_WRITE,
                    )
                };
                if rc == 0 {
                    pool.push(self.ptr as usize);
                    return;
                }
            }
        }
        // A pool page goes together with the guard page after it.
        let len = if self.pooled { 2 * self.map_len } else { self.map_len };
        // SAFETY: `ptr`/`len` describe whole pages owned by `self` (a pool
        // page and its guard page, or a mapping of its own); no reference
        // into them outlives `self`. A failure cannot be handled.
        unsafe {
            libc::munmap(self.ptr.cast::<libc::c_void>(), len);
        }
    }
}

/// The code file: see the module documentation.
mod code_file {
    use super::ExecBuffer;
    use std::sync::Mutex;

    /// Bytes of the file mapped at once (one mapping per chunk).
    const CHUNK: usize = 256 * 1024;
    /// The smallest block.
    const MIN_BLOCK: usize = 64;
    /// Size classes: `MIN_BLOCK << class`, up to `MAX_BLOCK`.
    const CLASSES: usize = 11;
    /// The largest block; larger code uses `mprotect`ed pages.
    const MAX_BLOCK: usize = MIN_BLOCK << (CLASSES - 1);
    /// `int3`: what a free block holds.
    const TRAP: u8 = 0xcc;

    /// A mapped chunk of the file.
    struct Chunk {
        addr: usize,
        /// Its offset in the file.
        offset: usize,
    }

    struct CodeFile {
        /// The memory file, `-1` before the first use.
        fd: i32,
        /// The code file cannot be used here (or is turned off): every
        /// request goes to the `mprotect` pages.
        off: bool,
        chunks: Vec<Chunk>,
        /// Where the next fresh block starts in the newest chunk.
        bump: usize,
        /// Free blocks per size class (address, file offset).
        free: [Vec<(usize, usize)>; CLASSES],
    }

    /// A block handed out: its size class and offset in the file.
    #[derive(Clone, Copy, Debug)]
    pub(super) struct Block {
        class: u8,
        offset: usize,
    }

    static CODE: Mutex<CodeFile> = Mutex::new(CodeFile {
        fd: -1,
        off: false,
        chunks: Vec::new(),
        bump: CHUNK,
        free: [const { Vec::new() }; CLASSES],
    });

    fn class_of(len: usize) -> Option<usize> {
        (0..CLASSES).find(|&c| len <= MIN_BLOCK << c)
    }

    impl CodeFile {
        /// Writes `bytes` at `offset` of the file.
        fn write(&self, mut offset: usize, bytes: &[u8]) -> bool {
            let mut rest = bytes;
            while !rest.is_empty() {
                // SAFETY: `rest` is a live slice; the kernel copies from it
                // into the file (no Rust object is written).
                let n = unsafe { libc::pwrite(self.fd, rest.as_ptr().cast(), rest.len(), offset as libc::off_t) };
                if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                let Ok(n) = usize::try_from(n) else { return false };
                if n == 0 {
                    return false;
                }
                rest = &rest[n..];
                offset += n;
            }
            true
        }

        /// Maps one more chunk (creating the file first); false if the
        /// code file cannot work here.
        fn grow(&mut self) -> bool {
            if self.fd < 0 {
                if std::env::var_os("SIFT_JIT_CODE").is_some_and(|v| v == "mprotect") {
                    return false;
                }
                let Some(fd) = create_file() else { return false };
                self.fd = fd;
                // SAFETY: registering plain `extern "C"` functions that
                // take no arguments; see `lock_for_fork`.
                if unsafe { libc::pthread_atfork(Some(lock_for_fork), Some(unlock_after_fork), Some(child_after_fork)) }
                    != 0
                {
                    return false;
                }
            }
            let offset = self.chunks.len() * CHUNK;
            let Ok(end) = libc::off_t::try_from(offset + CHUNK) else { return false };
            // SAFETY: `fd` is the memory file this module owns.
            if unsafe { libc::ftruncate(self.fd, end) } != 0 {
                return false;
            }
            let Some(addr) = map_chunk(self.fd, offset) else { return false };
            self.chunks.push(Chunk { addr, offset });
            self.bump = 0;
            true
        }

        /// A free block of class `class` (its address and file offset).
        fn take(&mut self, class: usize) -> Option<(usize, usize)> {
            if let Some(block) = self.free[class].pop() {
                return Some(block);
            }
            let size = MIN_BLOCK << class;
            if self.bump + size > CHUNK {
                // The rest of the chunk becomes free blocks of smaller classes.
                if let Some((base, offset)) = self.chunks.last().map(|ch| (ch.addr, ch.offset)) {
                    let mut at = self.bump;
                    for c in (0..CLASSES).rev() {
                        while at + (MIN_BLOCK << c) <= CHUNK {
                            self.free[c].push((base + at, offset + at));
                            at += MIN_BLOCK << c;
                        }
                    }
                }
                // Carved once: if no chunk can be added, the next request
                // must not hand out the same blocks again.
                self.bump = CHUNK;
                if !self.grow() {
                    return None;
                }
            }
            let chunk = self.chunks.last()?;
            let block = (chunk.addr + self.bump, chunk.offset + self.bump);
            self.bump += size;
            Some(block)
        }
    }

    /// Creates the memory file (executable mappings allowed), or `None`.
    fn create_file() -> Option<i32> {
        let name = c"sift-jit";
        // MFD_EXEC: kernels with `vm.memfd_noexec` would otherwise seal the
        // file against executable mappings; older kernels refuse the flag.
        for flags in [libc::MFD_CLOEXEC | libc::MFD_EXEC, libc::MFD_CLOEXEC] {
            // SAFETY: `name` is a NUL-terminated string.
            let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
            if fd >= 0 {
                return Some(fd);
            }
        }
        None
    }

    /// Maps `CHUNK` bytes of `fd` at `offset` read + execute (shared, so
    /// that writes to the file show); `None` if refused.
    fn map_chunk(fd: i32, offset: usize) -> Option<usize> {
        let off = libc::off_t::try_from(offset).ok()?;
        // SAFETY: a new shared mapping of our own file at an address of the
        // kernel's choosing; it aliases no Rust object. Checked below.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), CHUNK, libc::PROT_READ | libc::PROT_EXEC, libc::MAP_SHARED, fd, off)
        };
        (p != libc::MAP_FAILED).then_some(p as usize)
    }

    /// Installs `code` in a block of the code file, or `None` when the code
    /// file cannot take it (the caller then uses `mprotect`ed pages).
    pub(super) fn install(code: &[u8]) -> Option<ExecBuffer> {
        if code.len() > MAX_BLOCK {
            return None;
        }
        let class = class_of(code.len().max(1))?;
        let mut file = CODE.lock().unwrap_or_else(|e| e.into_inner());
        if file.off {
            return None;
        }
        let Some((addr, offset)) = file.take(class) else {
            file.off = file.chunks.is_empty();
            return None;
        };
        if !file.write(offset, code) {
            file.free[class].push((addr, offset));
            return None;
        }
        Some(ExecBuffer {
            ptr: addr as *mut u8,
            map_len: MIN_BLOCK << class,
            code_len: code.len(),
            pooled: false,
            block: Some(Block { class: class as u8, offset }),
        })
    }

    /// Takes back `block`, at `addr`, that holds `len` bytes of code:
    /// they are overwritten with traps, one `pwrite` (every byte a block
    /// ever held was code of a filter, erased when it was dropped), and the
    /// block is reused.
    pub(super) fn release(addr: usize, block: Block, len: usize) {
        static TRAPS: [u8; MAX_BLOCK] = [TRAP; MAX_BLOCK];
        let mut file = CODE.lock().unwrap_or_else(|e| e.into_inner());
        // A block whose code could not be erased is not reused.
        if TRAPS.get(..len).is_some_and(|traps| file.write(block.offset, traps)) {
            file.free[usize::from(block.class)].push((addr, block.offset));
        }
    }

    thread_local! {
        /// The lock held across `fork` (by the forking thread).
        static HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, CodeFile>>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Before `fork`: holds the lock so that the child gets a consistent
    /// state (and no lock held by a thread that does not exist there).
    extern "C" fn lock_for_fork() {
        let guard = CODE.lock().unwrap_or_else(|e| e.into_inner());
        HELD.with(|h| *h.borrow_mut() = Some(guard));
    }

    /// After `fork`, in the parent.
    extern "C" fn unlock_after_fork() {
        HELD.with(|h| drop(h.borrow_mut().take()));
    }

    /// After `fork`, in the child: the chunks are still the parent's file,
    /// shared; move them to a file of the child's own, same addresses and
    /// contents. If that fails, the chunks become private anonymous copies
    /// (read + execute) and the code file is turned off in the child.
    extern "C" fn child_after_fork() {
        HELD.with(|h| {
            let mut held = h.borrow_mut();
            if let Some(file) = held.as_mut() {
                if file.fd >= 0 {
                    privatize(file);
                }
            }
            drop(held.take());
        });
    }

    fn privatize(file: &mut CodeFile) {
        let new_fd = create_file();
        let mut ok = new_fd.is_some();
        if let Some(fd) = new_fd {
            let len = file.chunks.len() * CHUNK;
            // SAFETY: `fd` is the file just created.
            ok = libc::off_t::try_from(len).is_ok_and(|l| unsafe { libc::ftruncate(fd, l) } == 0);
        }
        for c in &file.chunks {
            // SAFETY: `c.addr` starts a readable mapping of `CHUNK` bytes that
            // this module owns and nothing writes (the only thread of the
            // child is here).
            let bytes = unsafe { std::slice::from_raw_parts(c.addr as *const u8, CHUNK) };
            if ok {
                let fd = new_fd.unwrap_or(-1);
                // SAFETY: copies from a live slice into our new file.
                let n = unsafe { libc::pwrite(fd, bytes.as_ptr().cast(), CHUNK, c.offset as libc::off_t) };
                // SAFETY: replaces our own chunk mapping in place (same
                // address and length) by the new file's copy of it.
                ok = usize::try_from(n) == Ok(CHUNK)
                    && unsafe {
                        libc::mmap(
                            c.addr as *mut libc::c_void,
                            CHUNK,
                            libc::PROT_READ | libc::PROT_EXEC,
                            libc::MAP_SHARED | libc::MAP_FIXED,
                            fd,
                            c.offset as libc::off_t,
                        )
                    } != libc::MAP_FAILED;
                if ok {
                    continue;
                }
            }
            copy_to_private(c.addr, bytes);
        }
        // SAFETY: the parent's file descriptor (our copy of it); no
        // mapping needs it open.
        unsafe { libc::close(file.fd) };
        match new_fd {
            Some(fd) if ok => file.fd = fd,
            _ => {
                if let Some(fd) = new_fd {
                    // SAFETY: our own, unused file.
                    unsafe { libc::close(fd) };
                }
                file.fd = -1;
                file.off = true;
                file.free.iter_mut().for_each(Vec::clear);
            }
        }
    }

    /// Replaces the chunk at `addr` by a private anonymous read + execute
    /// copy of `bytes` (its contents), never writable and executable.
    fn copy_to_private(addr: usize, bytes: &[u8]) {
        // SAFETY: a temporary anonymous read + write mapping of our own.
        let tmp = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHUNK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if tmp == libc::MAP_FAILED {
            return;
        }
        // SAFETY: `tmp` is `CHUNK` writable bytes not overlapping `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), tmp.cast::<u8>(), CHUNK) };
        // SAFETY: make the copy read + execute, then move it over the chunk
        // (mremap with a fixed destination replaces the old mapping).
        unsafe {
            libc::mprotect(tmp, CHUNK, libc::PROT_READ | libc::PROT_EXEC);
            libc::mremap(tmp, CHUNK, CHUNK, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, addr as *mut libc::c_void);
        }
    }
}

/// Hints the CPU to fetch the cache line at `p` (no-op on a bad address).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: prefetch never faults and does not dereference `p` in the
    // abstract machine; SSE is part of the x86-64 baseline.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
}
