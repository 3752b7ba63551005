//! Executable memory: the only module with `unsafe` code.
//!
//! Machine code is copied into pages that are readable and writable (never
//! executable), then the pages are switched to read + execute with
//! `mprotect` (never writable while executable). Pages are never writable
//! and executable at the same time (W^X).
//!
//! Installing code costs system calls, which dominate the compile time of
//! small filters. Code that fits in one page therefore takes a page from a
//! process-wide pool of read + write pages (mapped 16 at a time, each
//! between inaccessible guard pages so that it is a kernel mapping of its
//! own and `mprotect` never splits or merges mappings), so that
//! installing it is a single `mprotect`; when the filter is dropped, its
//! page is made read + write again (no longer executable) and goes back to
//! the pool, or is unmapped if the pool is full. Larger code gets a mapping
//! of its own.

use std::io;
use std::sync::Mutex;

/// The signature of a compiled filter: packet pointer, captured length,
/// wire length; returns the filter's verdict.
type FilterFn = extern "sysv64" fn(*const u8, usize, u32) -> u32;

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
    /// with the [`FilterFn`] signature that only reads the packet bytes it
    /// was given (`ptr[..caplen]`), its own stack frame and the 128-byte red
    /// zone below the stack pointer; `crate::x64` generates such code.
    pub(crate) fn new(code: &[u8]) -> io::Result<ExecBuffer> {
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

    /// The number of bytes of machine code.
    pub(crate) fn code_len(&self) -> usize {
        self.code_len
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

impl Drop for ExecBuffer {
    fn drop(&mut self) {
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

/// Hints the CPU to fetch the cache line at `p` (no-op on a bad address).
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: prefetch never faults and does not dereference `p` in the
    // abstract machine; SSE is part of the x86-64 baseline.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
}
