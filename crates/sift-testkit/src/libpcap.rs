//! The installed libpcap (1.10.3) as an oracle, through a minimal FFI.
//!
//! * [`compile`] runs `pcap_compile()` on a dead handle (`pcap_open_dead`)
//!   for a link type, snapshot length and netmask, optimized or not, and
//!   returns libpcap's program or its error text.
//! * [`filter`] / [`CheckedProgram::filter`] run libpcap's own interpreter
//!   (`bpf_filter()`) on a packet.
//!
//! libpcap 1.10.3's `bpf_filter` trusts its program: an unknown opcode
//! aborts the process, a scratch index ≥ 16 or a jump past the end reads out
//! of bounds. So every program is checked here first ([`check_program`]):
//! known opcodes only, scratch indexes < 16, every jump target inside the
//! program, a `ret` as the last instruction. Backward `ja` (libpcap's
//! `protochain` loop) is refused unless explicitly allowed, because a
//! backward jump can loop forever in 1.10.3's interpreter.
//!
//! All the `unsafe` of the crate's libpcap use is in this module.

use sift_bpf::insn::{op, Insn};
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::sync::Mutex;

/// `PCAP_NETMASK_UNKNOWN` from `<pcap/pcap.h>`.
pub const NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// The snapshot length libpcap's compiler uses by default (and tcpdump's
/// default), the `ret #262144` of accepting programs.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// `struct bpf_program` from `<pcap/bpf.h>`.
#[repr(C)]
struct BpfProgram {
    bf_len: c_uint,
    bf_insns: *mut Insn,
}

/// The opaque `pcap_t`.
#[repr(C)]
struct PcapT {
    _private: [u8; 0],
}

extern "C" {
    fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut PcapT;
    fn pcap_close(p: *mut PcapT);
    fn pcap_compile(
        p: *mut PcapT,
        fp: *mut BpfProgram,
        s: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    fn pcap_freecode(fp: *mut BpfProgram);
    fn pcap_geterr(p: *mut PcapT) -> *mut c_char;
    fn bpf_filter(pc: *const Insn, p: *const u8, wirelen: c_uint, buflen: c_uint) -> c_uint;
    fn pcap_lib_version() -> *const c_char;
    fn pcap_datalink_name_to_val(name: *const c_char) -> c_int;
}

/// libpcap's DLT value for a link-type name (`pcap_datalink_name_to_val`,
/// the names `tcpdump -y` takes), or `None` if libpcap does not know it.
pub fn datalink_value(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call; the
    // function only reads it and returns a number.
    let v = unsafe { pcap_datalink_name_to_val(c.as_ptr()) };
    u32::try_from(v).ok()
}

/// Dead handles kept open between compilations, one per (DLT, snaplen).
/// A raw pointer is not `Send`; the handles are only ever used under the
/// [`COMPILER`] lock.
struct Handles(Vec<(u32, u32, *mut PcapT)>);

// SAFETY: the pcap_t pointers are owned by this structure, never shared
// outside it, and only dereferenced by libpcap while the COMPILER mutex is
// held, so moving the structure between threads is sound.
unsafe impl Send for Handles {}

/// Serializes every call into libpcap's compiler: it keeps state in the
/// handle and (in old versions) in globals, and name lookups are not
/// reentrant everywhere.
static COMPILER: Mutex<Handles> = Mutex::new(Handles(Vec::new()));

/// The version string of the linked libpcap (`libpcap version 1.10.3 ...`).
pub fn version() -> String {
    // SAFETY: pcap_lib_version takes no arguments and returns a pointer to a
    // static NUL-terminated string (or NULL, checked).
    let p = unsafe { pcap_lib_version() };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: p is non-null and points to libpcap's static version string,
    // which lives for the whole process.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Compiles `expr` with libpcap's `pcap_compile()` for link type `dlt`
/// (a DLT_* value), snapshot length `snaplen`, the IPv4 `netmask`
/// (`None` = `PCAP_NETMASK_UNKNOWN`, so `ip broadcast` fails), optimized or
/// not. Returns the program or libpcap's error message.
pub fn compile(
    expr: &str,
    dlt: u32,
    snaplen: u32,
    netmask: Option<u32>,
    optimize: bool,
) -> Result<Vec<Insn>, String> {
    let c_expr = CString::new(expr).map_err(|_| "filter contains a NUL byte".to_string())?;
    let dlt_c = c_int::try_from(dlt).map_err(|_| format!("DLT {dlt} out of range"))?;
    let snap_c = c_int::try_from(snaplen).map_err(|_| format!("snaplen {snaplen} out of range"))?;
    // A poisoned lock only means another thread panicked while holding it;
    // the handles themselves are still valid.
    let mut handles = COMPILER.lock().unwrap_or_else(|e| e.into_inner());
    let handle = match handles.0.iter().find(|h| h.0 == dlt && h.1 == snaplen) {
        Some(h) => h.2,
        None => {
            // SAFETY: pcap_open_dead only allocates and initializes a new
            // handle from two integers; NULL (allocation failure) is checked.
            let p = unsafe { pcap_open_dead(dlt_c, snap_c) };
            if p.is_null() {
                return Err("pcap_open_dead failed".to_string());
            }
            handles.0.push((dlt, snaplen, p));
            p
        }
    };
    let mut prog = BpfProgram { bf_len: 0, bf_insns: std::ptr::null_mut() };
    let mask = netmask.unwrap_or(NETMASK_UNKNOWN);
    // SAFETY: handle is a live pcap_t from pcap_open_dead (kept open in
    // HANDLES, used only under the lock we hold); prog is a valid, writable
    // bpf_program; c_expr is a NUL-terminated string that outlives the call.
    let rc = unsafe { pcap_compile(handle, &mut prog, c_expr.as_ptr(), c_int::from(optimize), mask) };
    if rc != 0 {
        // SAFETY: pcap_geterr returns the handle's error buffer, a
        // NUL-terminated string inside the live handle (non-null for a
        // valid handle; checked anyway). We copy it before unlocking.
        let err = unsafe { pcap_geterr(handle) };
        if err.is_null() {
            return Err("pcap_compile failed".to_string());
        }
        // SAFETY: err is non-null and NUL-terminated (see above).
        return Err(unsafe { CStr::from_ptr(err) }.to_string_lossy().into_owned());
    }
    let len = prog.bf_len as usize;
    let insns = if prog.bf_insns.is_null() || len == 0 {
        Vec::new()
    } else {
        // SAFETY: on success pcap_compile set bf_insns to an array of
        // bf_len instructions, and Insn has the exact layout of struct
        // bpf_insn (repr(C): u16, u8, u8, u32). We copy them out before
        // freeing.
        unsafe { std::slice::from_raw_parts(prog.bf_insns, len) }.to_vec()
    };
    // SAFETY: prog was filled by a successful pcap_compile and is freed once.
    unsafe { pcap_freecode(&mut prog) };
    Ok(insns)
}

/// Is `code` an opcode libpcap's interpreter implements?
fn known_opcode(code: u16) -> bool {
    use op::*;
    let class = code & 0x07;
    match class {
        LD => matches!(code,
            c if c == LD | W | ABS || c == LD | H | ABS || c == LD | B | ABS
                || c == LD | W | IND || c == LD | H | IND || c == LD | B | IND
                || c == LD | W | LEN || c == LD | IMM || c == LD | MEM),
        LDX => matches!(code,
            c if c == LDX | W | LEN || c == LDX | IMM || c == LDX | MEM || c == LDX | MSH | B),
        ST => code == ST,
        STX => code == STX,
        ALU => {
            let opn = code & 0xf0;
            let src = code & 0x08;
            if opn == NEG {
                return src == K;
            }
            matches!(opn, ADD | SUB | MUL | DIV | MOD | AND | OR | XOR | LSH | RSH)
        }
        JMP => {
            let opn = code & 0xf0;
            let src = code & 0x08;
            if opn == JA {
                return src == K;
            }
            matches!(opn, JEQ | JGT | JGE | JSET)
        }
        RET => code == RET | K || code == RET | A,
        MISC => code == MISC | TAX || code == MISC | TXA,
        _ => false,
    }
}

/// Checks that libpcap 1.10.3's `bpf_filter` can run `prog` without reading
/// out of its bounds: known opcodes, scratch indexes < 16, jump targets in
/// the program, last instruction a `ret`. Backward `ja` jumps (which wrap
/// `k`, as libpcap's `protochain` code does) are refused unless
/// `allow_backward`, because they can loop forever.
pub fn check_program(prog: &[Insn], allow_backward: bool) -> Result<(), String> {
    if prog.is_empty() {
        return Err("empty program".into());
    }
    if prog.len() > 3_000_000 {
        return Err("program too long".into());
    }
    let len = prog.len() as u64;
    for (i, ins) in prog.iter().enumerate() {
        if !known_opcode(ins.code) {
            return Err(format!("insn {i}: unknown opcode {:#06x}", ins.code));
        }
        let class = ins.code & 0x07;
        let mode = ins.code & 0xe0;
        let uses_mem = (class == op::LD || class == op::LDX) && mode == op::MEM
            || class == op::ST
            || class == op::STX;
        if uses_mem && ins.k >= op::MEMWORDS {
            return Err(format!("insn {i}: scratch index {} out of range", ins.k));
        }
        if class == op::JMP {
            let from = i as u64 + 1;
            if ins.code & 0xf0 == op::JA {
                let signed = i64::from(ins.k as i32);
                let target = from as i64 + signed;
                if signed < 0 && !allow_backward {
                    return Err(format!("insn {i}: backward jump"));
                }
                if target < 0 || target >= len as i64 || signed == -1 {
                    return Err(format!("insn {i}: jump out of the program"));
                }
            } else if from + u64::from(ins.jt) >= len || from + u64::from(ins.jf) >= len {
                return Err(format!("insn {i}: jump out of the program"));
            }
        }
    }
    match prog.last() {
        Some(last) if last.code & 0x07 == op::RET => Ok(()),
        _ => Err("the last instruction is not a ret".into()),
    }
}

/// A program that passed [`check_program`] and can be run by libpcap's
/// interpreter any number of times.
#[derive(Clone, Debug)]
pub struct CheckedProgram {
    insns: Vec<Insn>,
}

impl CheckedProgram {
    /// Checks `prog` (forward jumps only) and keeps a copy.
    pub fn new(prog: &[Insn]) -> Result<CheckedProgram, String> {
        check_program(prog, false)?;
        Ok(CheckedProgram { insns: prog.to_vec() })
    }

    /// Like [`CheckedProgram::new`] but also accepts backward `ja` jumps
    /// (libpcap's `protochain` loops). Only use it for programs produced by
    /// libpcap itself, whose loops terminate.
    pub fn new_allow_backward(prog: &[Insn]) -> Result<CheckedProgram, String> {
        check_program(prog, true)?;
        Ok(CheckedProgram { insns: prog.to_vec() })
    }

    /// The instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Runs libpcap's `bpf_filter()` on a packet: `data` are the captured
    /// bytes, `wire_len` the original length. Returns the program's return
    /// value (0 = reject; an out-of-bounds load or a division by zero gives 0).
    pub fn filter(&self, data: &[u8], wire_len: u32) -> u32 {
        let Ok(buflen) = c_uint::try_from(data.len()) else {
            return 0;
        };
        // An empty slice may have a dangling pointer; libpcap never
        // dereferences it with buflen 0 (every load is bounds-checked first),
        // but hand it a real address anyway.
        let empty = [0u8; 1];
        let ptr = if data.is_empty() { empty.as_ptr() } else { data.as_ptr() };
        // SAFETY: the program passed check_program (known opcodes, scratch
        // indexes < 16, every jump inside the program, ends with ret), so
        // bpf_filter stays within `insns`; it reads at most `buflen` bytes
        // from `ptr`, which points to `data` (or a 1-byte dummy when empty).
        // Insn has the layout of struct bpf_insn. bpf_filter only reads.
        let r = unsafe { bpf_filter(self.insns.as_ptr(), ptr, wire_len, buflen) };
        r as u32
    }
}

/// Runs libpcap's `bpf_filter()` on a packet after checking the program
/// (forward jumps only; see [`check_program`]). A program that fails the
/// check is not run and gives 0. For repeated runs prefer
/// [`CheckedProgram`], which checks once.
pub fn filter(prog: &[Insn], data: &[u8], wire_len: u32) -> u32 {
    match CheckedProgram::new(prog) {
        Ok(p) => p.filter(data, wire_len),
        Err(_) => 0,
    }
}

/// Closes every cached dead handle (for tests that want a clean state).
pub fn close_handles() {
    let mut handles = COMPILER.lock().unwrap_or_else(|e| e.into_inner());
    for (_, _, p) in handles.0.drain(..) {
        // SAFETY: p came from pcap_open_dead, is closed exactly once (it is
        // removed from the list), and no compile is running (we hold the lock).
        unsafe { pcap_close(p) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EN10MB: u32 = 1;

    fn tcp_packet() -> Vec<u8> {
        let mut p = vec![0u8; 54];
        p[12] = 0x08; // EtherType IPv4
        p[14] = 0x45;
        p[23] = 6; // TCP
        p[34] = 0x04; // sport 1234
        p[35] = 0xd2;
        p[36] = 0; // dport 80
        p[37] = 80;
        p
    }

    #[test]
    fn version_is_1_10_3() {
        assert!(version().contains("1.10.3"), "{}", version());
    }

    #[test]
    fn compile_and_filter() {
        let prog = compile("tcp dst port 80", EN10MB, DEFAULT_SNAPLEN, None, false).unwrap();
        assert!(!prog.is_empty());
        let pkt = tcp_packet();
        assert_eq!(filter(&prog, &pkt, pkt.len() as u32), DEFAULT_SNAPLEN);
        let mut other = pkt.clone();
        other[37] = 81;
        assert_eq!(filter(&prog, &other, other.len() as u32), 0);
        // Truncated: the port load is out of bounds.
        assert_eq!(filter(&prog, &pkt[..30], 54), 0);
        assert_eq!(filter(&prog, &[], 54), 0);
    }

    #[test]
    fn compile_errors() {
        let e = compile("tcp port", EN10MB, DEFAULT_SNAPLEN, None, false).unwrap_err();
        assert!(e.contains("syntax error"), "{e}");
        let e = compile("ip broadcast", EN10MB, DEFAULT_SNAPLEN, None, false).unwrap_err();
        assert!(e.contains("netmask not known"), "{e}");
        assert!(compile("ip broadcast", EN10MB, DEFAULT_SNAPLEN, Some(0xffffff00), false).is_ok());
        assert!(compile("a\0b", EN10MB, DEFAULT_SNAPLEN, None, false).is_err());
        // The optimizer's own error.
        let e = compile("tcp and udp", EN10MB, DEFAULT_SNAPLEN, None, true).unwrap_err();
        assert!(e.contains("rejects all packets"), "{e}");
        assert!(compile("tcp and udp", EN10MB, DEFAULT_SNAPLEN, None, false).is_ok());
    }

    #[test]
    fn empty_filter_accepts() {
        let prog = compile("", EN10MB, 1234, None, false).unwrap();
        assert_eq!(filter(&prog, &[], 0), 1234);
    }

    #[test]
    fn checker_refuses_unsafe_programs() {
        let ret0 = Insn::stmt(op::RET | op::K, 0);
        assert!(check_program(&[], false).is_err());
        assert!(check_program(&[Insn::stmt(op::LD | op::IMM, 1)], false).is_err());
        assert!(check_program(&[Insn::stmt(0xffff, 0), ret0], false).is_err());
        assert!(check_program(&[Insn::stmt(op::LD | op::MEM, 16), ret0], false).is_err());
        assert!(check_program(&[Insn::jump(op::JMP | op::JEQ | op::K, 0, 1, 0), ret0], false).is_err());
        assert!(check_program(&[Insn::jump(op::JMP | op::JEQ | op::K, 0, 0, 0), ret0], false).is_ok());
        let back = [ret0, Insn::stmt(op::JMP | op::JA, (-2i32) as u32), ret0];
        assert!(check_program(&back, false).is_err());
        assert!(check_program(&back, true).is_ok());
        let self_loop = [Insn::stmt(op::JMP | op::JA, u32::MAX), ret0];
        assert!(check_program(&self_loop, true).is_err());
        assert_eq!(filter(&[Insn::stmt(0xffff, 0), ret0], &[1, 2], 2), 0);
    }

    #[test]
    fn interpreter_semantics_of_1_10_3() {
        // ldb [0]; tax; ld #1; lsh x; ret a
        let shl = [
            Insn::stmt(op::LD | op::B | op::ABS, 0),
            Insn::stmt(op::MISC | op::TAX, 0),
            Insn::stmt(op::LD | op::IMM, 1),
            Insn::stmt(op::ALU | op::LSH | op::X, 0),
            Insn::stmt(op::RET | op::A, 0),
        ];
        assert_eq!(filter(&shl, &[31], 1), 1 << 31);
        // A shift by X >= 32 gives 0 in libpcap (the kernel takes X mod 32).
        assert_eq!(filter(&shl, &[32], 1), 0);
        assert_eq!(filter(&shl, &[33], 1), 0);
        // Division by X == 0 rejects.
        let div = [
            Insn::stmt(op::LD | op::B | op::ABS, 0),
            Insn::stmt(op::MISC | op::TAX, 0),
            Insn::stmt(op::LD | op::IMM, 10),
            Insn::stmt(op::ALU | op::DIV | op::X, 0),
            Insn::stmt(op::ADD | op::ALU | op::K, 1),
            Insn::stmt(op::RET | op::A, 0),
        ];
        assert_eq!(filter(&div, &[0], 1), 0);
        assert_eq!(filter(&div, &[5], 1), 3);
        // ld [x + k] does not wrap: X = 0xffffffff, k = 1 is out of bounds.
        let ind = [
            Insn::stmt(op::LDX | op::IMM, u32::MAX),
            Insn::stmt(op::LD | op::B | op::IND, 1),
            Insn::stmt(op::RET | op::K, 1),
        ];
        assert_eq!(filter(&ind, &[1, 2, 3], 3), 0);
        // ld #len is the wire length, not the captured length.
        let len = [Insn::stmt(op::LD | op::W | op::LEN, 0), Insn::stmt(op::RET | op::A, 0)];
        assert_eq!(filter(&len, &[1, 2, 3], 77), 77);
    }

    #[test]
    fn compile_is_thread_safe() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let e = format!("tcp port {} or host 10.0.0.{}", i + t, i);
                        assert!(compile(&e, EN10MB, DEFAULT_SNAPLEN, None, i % 2 == 0).is_ok());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
