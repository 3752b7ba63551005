//! The installed libpcap, loaded at run time with `dlopen` (never linked),
//! so the benchmark runs without it and its engine is simply absent.
//!
//! Only what the benchmark needs: `pcap_open_dead`, `pcap_compile` (with
//! libpcap's optimizer on, as `tcpdump` runs it), `pcap_offline_filter`
//! (libpcap's interpreter, as a libpcap user calls it per packet),
//! `pcap_freecode`, `pcap_geterr`, `pcap_close`, `pcap_lib_version`.
//!
//! All the crate's `unsafe` code is in this module.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::sync::OnceLock;
use std::time::Instant;

use crate::engines::Runner;

/// `PCAP_NETMASK_UNKNOWN`.
const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// `struct bpf_insn` (8 bytes: u16, u8, u8, u32).
#[repr(C)]
#[derive(Clone, Copy)]
struct BpfInsn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct bpf_program`.
#[repr(C)]
struct BpfProgram {
    bf_len: c_uint,
    bf_insns: *mut BpfInsn,
}

/// `struct pcap_pkthdr`.
#[repr(C)]
struct PcapPkthdr {
    ts: libc::timeval,
    caplen: u32,
    len: u32,
}

type PcapT = c_void;

type OpenDeadFn = unsafe extern "C" fn(c_int, c_int) -> *mut PcapT;
type CompileFn =
    unsafe extern "C" fn(*mut PcapT, *mut BpfProgram, *const c_char, c_int, u32) -> c_int;
type FreecodeFn = unsafe extern "C" fn(*mut BpfProgram);
type GeterrFn = unsafe extern "C" fn(*mut PcapT) -> *mut c_char;
type CloseFn = unsafe extern "C" fn(*mut PcapT);
type OfflineFilterFn =
    unsafe extern "C" fn(*const BpfProgram, *const PcapPkthdr, *const u8) -> c_int;
type VersionFn = unsafe extern "C" fn() -> *const c_char;

/// The entry points of a loaded libpcap.
#[derive(Clone, Copy)]
pub struct Libpcap {
    open_dead: OpenDeadFn,
    compile: CompileFn,
    freecode: FreecodeFn,
    geterr: GeterrFn,
    close: CloseFn,
    offline_filter: OfflineFilterFn,
    version: VersionFn,
}

/// The shared-object names tried, in order.
const SONAMES: &[&str] = &["libpcap.so.0.8", "libpcap.so.1", "libpcap.so"];

static LIB: OnceLock<Option<Libpcap>> = OnceLock::new();

/// Looks up `name` in the library `handle`.
fn symbol(handle: *mut c_void, name: &str) -> Option<*mut c_void> {
    let c = CString::new(name).ok()?;
    // SAFETY: handle is a live handle returned by dlopen (never closed);
    // c is a NUL-terminated string that outlives the call.
    let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
    (!p.is_null()).then_some(p)
}

fn load() -> Option<Libpcap> {
    let handle = SONAMES.iter().find_map(|name| {
        let c = CString::new(*name).ok()?;
        // SAFETY: c is a NUL-terminated string; dlopen has no other
        // preconditions. Running libpcap's initializers is expected.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!h.is_null()).then_some(h)
    })?;
    let open_dead = symbol(handle, "pcap_open_dead")?;
    let compile = symbol(handle, "pcap_compile")?;
    let freecode = symbol(handle, "pcap_freecode")?;
    let geterr = symbol(handle, "pcap_geterr")?;
    let close = symbol(handle, "pcap_close")?;
    let offline_filter = symbol(handle, "pcap_offline_filter")?;
    let version = symbol(handle, "pcap_lib_version")?;
    // SAFETY: each pointer is the address of the libpcap function of that
    // name, whose C prototype (from <pcap/pcap.h>) is exactly the function
    // pointer type it is converted to. The library is never unloaded, so
    // the pointers stay valid for the life of the process.
    unsafe {
        Some(Libpcap {
            open_dead: std::mem::transmute::<*mut c_void, OpenDeadFn>(open_dead),
            compile: std::mem::transmute::<*mut c_void, CompileFn>(compile),
            freecode: std::mem::transmute::<*mut c_void, FreecodeFn>(freecode),
            geterr: std::mem::transmute::<*mut c_void, GeterrFn>(geterr),
            close: std::mem::transmute::<*mut c_void, CloseFn>(close),
            offline_filter: std::mem::transmute::<*mut c_void, OfflineFilterFn>(offline_filter),
            version: std::mem::transmute::<*mut c_void, VersionFn>(version),
        })
    }
}

impl Libpcap {
    /// The installed libpcap, loaded on first use; `None` when no libpcap
    /// shared library (or one without the needed symbols) is found.
    pub fn get() -> Option<&'static Libpcap> {
        LIB.get_or_init(load).as_ref()
    }

    /// `pcap_lib_version()`.
    pub fn version(&self) -> String {
        // SAFETY: pcap_lib_version takes no arguments and returns a static
        // NUL-terminated string (NULL checked).
        let p = unsafe { (self.version)() };
        if p.is_null() {
            return String::new();
        }
        // SAFETY: p is non-null and points to libpcap's static string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Compiles `expr` for DLT `dlt` and `snaplen` with libpcap's optimizer
    /// on (`optimize = true`) or off; returns the filter and the time
    /// `pcap_compile` alone took, in nanoseconds.
    pub fn compile(
        &'static self,
        expr: &str,
        dlt: u32,
        snaplen: u32,
        optimize: bool,
    ) -> Result<(LibpcapFilter, u64), String> {
        let c_expr = CString::new(expr).map_err(|_| "filter contains a NUL byte".to_string())?;
        let dlt = c_int::try_from(dlt).map_err(|_| format!("DLT {dlt} out of range"))?;
        let snaplen =
            c_int::try_from(snaplen).map_err(|_| format!("snaplen {snaplen} out of range"))?;
        // SAFETY: pcap_open_dead only allocates a handle from two integers;
        // NULL is checked.
        let handle = unsafe { (self.open_dead)(dlt, snaplen) };
        if handle.is_null() {
            return Err("pcap_open_dead failed".into());
        }
        // From here on `f` owns the handle (and later the program) and
        // releases them on drop, also on the error path.
        let mut f = LibpcapFilter {
            lib: self,
            handle,
            prog: BpfProgram {
                bf_len: 0,
                bf_insns: std::ptr::null_mut(),
            },
            compiled: false,
        };
        let t = Instant::now();
        // SAFETY: handle is live; f.prog is a valid writable bpf_program;
        // c_expr is NUL-terminated and outlives the call.
        let rc = unsafe {
            (self.compile)(
                handle,
                &mut f.prog,
                c_expr.as_ptr(),
                c_int::from(optimize),
                NETMASK_UNKNOWN,
            )
        };
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if rc != 0 {
            // SAFETY: pcap_geterr returns the live handle's NUL-terminated
            // error buffer (NULL checked); it is copied before the handle
            // is closed by f's drop.
            let e = unsafe { (self.geterr)(handle) };
            let msg = if e.is_null() {
                "pcap_compile failed".to_string()
            } else {
                // SAFETY: e is non-null and NUL-terminated (see above).
                unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
            };
            return Err(msg);
        }
        f.compiled = true;
        Ok((f, ns))
    }
}

/// A filter compiled by libpcap, run by `pcap_offline_filter`.
pub struct LibpcapFilter {
    lib: &'static Libpcap,
    handle: *mut PcapT,
    prog: BpfProgram,
    compiled: bool,
}

impl LibpcapFilter {
    /// Number of cBPF instructions.
    pub fn len(&self) -> usize {
        self.prog.bf_len as usize
    }

    /// True for an empty program (libpcap never produces one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `pcap_offline_filter` on one packet.
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        let Ok(caplen) = u32::try_from(data.len()) else {
            return false;
        };
        let hdr = PcapPkthdr {
            ts: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            caplen,
            len: wire_len,
        };
        // SAFETY: prog was filled by a successful pcap_compile and is still
        // owned by self; hdr.caplen is data's length, so libpcap's
        // interpreter reads only within data.
        unsafe { (self.lib.offline_filter)(&self.prog, &hdr, data.as_ptr()) != 0 }
    }
}

// SAFETY: a LibpcapFilter exclusively owns its pcap_t (from pcap_open_dead)
// and its compiled program; neither is tied to the thread that made it
// (libpcap keeps no thread-local state for a dead handle), and moving the
// owner moves every use with it: `ftpcap` compiles on an updater thread and
// filters on another, one at a time.
unsafe impl Send for LibpcapFilter {}

impl Drop for LibpcapFilter {
    fn drop(&mut self) {
        if self.compiled {
            // SAFETY: prog came from a successful pcap_compile and is freed
            // exactly once (here).
            unsafe { (self.lib.freecode)(&mut self.prog) };
        }
        // SAFETY: handle came from pcap_open_dead and is closed exactly
        // once (here); nothing refers to it afterwards.
        unsafe { (self.lib.close)(self.handle) };
    }
}

impl Runner for LibpcapFilter {
    #[inline]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        LibpcapFilter::matches(self, data, wire_len)
    }

    fn program_size(&self) -> Option<usize> {
        Some(self.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_filters_when_installed() {
        let Some(lib) = Libpcap::get() else {
            eprintln!("libpcap not installed; skipped");
            return;
        };
        assert!(lib.version().contains("libpcap"));
        let (f, _) = lib.compile("ip", 1, 262_144, true).unwrap();
        assert_eq!(f.len(), 4);
        let mut p = vec![0u8; 60];
        assert!(!f.matches(&p, 60));
        p[12] = 8;
        assert!(f.matches(&p, 60));
        assert!(!f.matches(&p[..13], 60));
        let e = lib.compile("tcp port", 1, 262_144, true).err().unwrap();
        assert!(e.contains("syntax"), "{e}");
    }
}
