//! Shared helpers of the libpcap conformance suites (`testrun_rows.rs`,
//! `bug_regressions.rs`): data locations, a reader for libpcap's `-d`
//! program text, a flat-JSON line reader, a minimal pcap/pcapng reader, the
//! list of features that are not supported yet, and the sift pipeline
//! (parse → lower → codegen) with its two engines.
//!
//! Everything here is private test code: the testkit's library is owned by
//! another engineer, so small helpers that it does not offer live here.
#![allow(dead_code)]

use sift_bpf::insn::op;
use sift_bpf::Insn;
use sift_ir::{LinkType, Pred};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The link types sift's lowering supports (TESTrun DLT names), as
/// `sift_ir::lower::supported_linktypes` says.
pub fn supported_dlts() -> Vec<&'static str> {
    sift_ir::lower::supported_linktypes().into_iter().filter_map(LinkType::name).collect()
}

/// libpcap's default snapshot length (the `ret` of accepting programs).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// The shared data directory (`$SIFT_SHARED_DATA`, default `/work/shared/data`).
pub fn data_dir() -> PathBuf {
    std::env::var_os("SIFT_SHARED_DATA").map_or_else(|| PathBuf::from("/work/shared/data"), PathBuf::from)
}

/// Is the shared data present? The suites fail loudly without it, unless
/// `SIFT_SKIP_DATA_TESTS=1` says the environment has no data on purpose.
pub fn require_data() -> bool {
    if data_dir().join("libpcap-tests").is_dir() {
        return true;
    }
    if std::env::var("SIFT_SKIP_DATA_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("shared data not found under {}: skipped (SIFT_SKIP_DATA_TESTS=1)", data_dir().display());
        return false;
    }
    panic!(
        "shared data not found under {} (set SIFT_SHARED_DATA, or SIFT_SKIP_DATA_TESTS=1 to skip)",
        data_dir().display()
    );
}

/// Is `dlt` (a TESTrun DLT name) supported in this phase?
pub fn is_supported_dlt(dlt: &str) -> bool {
    LinkType::from_name(dlt).is_some_and(sift_ir::lower::supports_linktype)
}

// ---------------------------------------------------------------------------
// Features that are "not supported yet" in this phase.

/// Keywords of primitives that are out of scope in this phase, with the
/// feature family they belong to (for the per-family counts).
const UNSUPPORTED_KEYWORDS: &[(&str, &str)] = &[];

/// The first out-of-scope feature family `expr` uses, if any (by keyword:
/// words are runs of letters, digits, `-` and `_`, compared case-insensitively).
pub fn unsupported_feature(expr: &str) -> Option<&'static str> {
    for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        if word.is_empty() {
            continue;
        }
        let lower = word.to_ascii_lowercase();
        if let Some((_, family)) = UNSUPPORTED_KEYWORDS.iter().find(|(k, _)| *k == lower) {
            return Some(family);
        }
    }
    None
}

/// Does `prog` contain a backward `ja` (libpcap stores its offset wrapped,
/// as `protochain`'s loop does)?
#[allow(dead_code)]
pub fn has_backward_jump(prog: &[Insn]) -> bool {
    prog.iter().enumerate().any(|(pc, i)| {
        i.code == sift_bpf::insn::op::JMP | sift_bpf::insn::op::JA
            && (pc as u64 + 1 + u64::from(i.k)) >= prog.len() as u64
    })
}

/// Does a TESTrun `requires` value ask for /etc/hosts, ethers or networks
/// entries? Those rows run with [`testrun_names`] instead of the system's.
pub fn requires_names(requires: &str) -> bool {
    requires.starts_with("configure the ")
}

/// The hosts, networks and ethers entries TESTrun asks the machine to have
/// (its `@hosts_lines`, `@networks_lines`, `@ethers_lines`; the `host357`
/// names, which have several addresses each, as master's expected programs
/// show them), as sift name tables. Other names go to the system.
pub fn testrun_names() -> &'static sift_ir::NameTables {
    static TABLES: std::sync::OnceLock<sift_ir::NameTables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| sift_testkit::testrun::name_tables(true))
}

// ---------------------------------------------------------------------------
// The sift pipeline.

/// sift's compiled filter: the predicate (reference semantics) and the program.
pub struct SiftFilter {
    /// The lowered predicate, run by the reference evaluator.
    pub pred: Pred,
    /// The classic BPF program, run by sift's interpreter.
    pub program: Vec<Insn>,
}

/// Parses, lowers and compiles `expr` with sift. The error text says which
/// stage failed.
pub fn sift_compile(expr: &str, lt: LinkType, snaplen: u32, netmask: Option<u32>) -> Result<SiftFilter, String> {
    let ast = sift_syntax::parse(expr).map_err(|e| format!("parse: {}", e.message))?;
    let lopts = sift_ir::LowerOptions { linktype: lt, netmask, names: Some(testrun_names()), ..Default::default() };
    let pred = sift_ir::lower(&ast, &lopts).map_err(|e| format!("lower: {}", e.message))?;
    // Fields added later keep their defaults.
    #[allow(clippy::needless_update)]
    let copts = sift_bpf::codegen::CodegenOptions { snaplen, ..Default::default() };
    let program = sift_bpf::codegen::compile(&pred, &copts).map_err(|e| format!("codegen: {e}"))?;
    Ok(SiftFilter { pred, program })
}

/// Runs a program with sift's classic BPF interpreter.
pub fn sift_run(prog: &[Insn], data: &[u8], wire_len: u32) -> u32 {
    sift_bpf::interp::run(prog, data, wire_len)
}

/// Runs sift's reference evaluator on the predicate.
pub fn sift_eval(pred: &Pred, data: &[u8], wire_len: u32) -> bool {
    sift_ir::eval::matches(pred, sift_ir::PacketView { data, wire_len })
}

/// A dotted-quad netmask as the `u32` libpcap's `pcap_compile` takes
/// (`255.255.255.0` = `0xffffff00`).
pub fn parse_netmask(s: &str) -> Option<u32> {
    s.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
}

// ---------------------------------------------------------------------------
// libpcap's `-d` program text (bpf_dump level 1).

/// Names of the Linux ancillary-data loads as libpcap prints them, in the
/// order of their offsets `SKF_AD_OFF + 4 * i`.
const ANCILLARY: [&str; 16] = [
    "proto", "type", "ifidx", "nla", "nlan", "mark", "queue", "hatype", "rxhash", "cpu", "xor_x", "vlan_tci", "vlanp",
    "poff", "random", "vlan_tpid",
];
const SKF_AD_OFF: u32 = 0xffff_f000;

/// A decimal (possibly negative) or `0x` hexadecimal number, as a `u32`
/// (negative values wrap, as libpcap prints `k` with `%d`).
fn parse_num(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok();
    }
    let v: i64 = s.parse().ok()?;
    if v < i64::from(i32::MIN) || v > i64::from(u32::MAX) {
        return None;
    }
    Some(v as u32)
}

/// `#k` with a number.
fn parse_imm(s: &str) -> Option<u32> {
    parse_num(s.strip_prefix('#')?)
}

/// `M[i]` with i < 16.
fn parse_mem(s: &str) -> Option<u32> {
    let i = parse_num(s.strip_prefix("M[")?.strip_suffix(']')?)?;
    (i < 16).then_some(i)
}

/// A load operand: `[k]`, `[name]` (ancillary) or `[x + k]`.
enum LoadOperand {
    Abs(u32),
    Ind(u32),
}

fn parse_load_operand(s: &str) -> Option<LoadOperand> {
    let inner = s.strip_prefix('[')?.strip_suffix(']')?.trim();
    if let Some(rest) = inner.strip_prefix('x') {
        let rest = rest.trim_start().strip_prefix('+')?;
        return parse_num(rest).map(LoadOperand::Ind);
    }
    if let Some(i) = ANCILLARY.iter().position(|n| *n == inner) {
        return Some(LoadOperand::Abs(SKF_AD_OFF + 4 * i as u32));
    }
    parse_num(inner).map(LoadOperand::Abs)
}

/// A relative jump offset from an absolute target printed at `pc`.
fn rel_u8(target: u32, pc: u32) -> Option<u8> {
    u8::try_from(target.checked_sub(pc + 1)?).ok()
}

/// Parses one instruction line `(NNN) op operand [jt T\tjf F]`.
fn parse_d_line(line: &str, expect_pc: u32) -> Result<Insn, String> {
    let rest = line.strip_prefix('(').ok_or("no '(' at the start")?;
    let (pcs, rest) = rest.split_once(')').ok_or("no ')'")?;
    let pc: u32 = pcs.trim().parse().map_err(|_| format!("bad pc '{pcs}'"))?;
    if pc != expect_pc {
        return Err(format!("pc {pc}, expected {expect_pc}"));
    }
    // Drop a bpf_image-enumeration comment (`; 0x0028`) if present.
    let rest = rest.split(';').next().unwrap_or("");
    let rest = rest.trim();
    let (mnemonic, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if mnemonic.is_empty() {
        return Err("no mnemonic".into());
    }
    let operands: Vec<&str> = tail.split_whitespace().collect();
    // Loads like `[x + 14]` contain blanks; jumps end with `jt T jf F`.
    let operand_owned: String = operands.iter().take_while(|w| **w != "jt").copied().collect();
    let operand = operand_owned.as_str();
    let bad = || format!("bad operand '{}' for {mnemonic}", operands.join(" "));
    let jump_targets = || -> Result<(u8, u8), String> {
        // `jt T jf F` after the comparison operand.
        match operands.as_slice() {
            [.., "jt", t, "jf", f] => {
                let t = parse_num(t).ok_or_else(bad)?;
                let f = parse_num(f).ok_or_else(bad)?;
                Ok((rel_u8(t, pc).ok_or_else(bad)?, rel_u8(f, pc).ok_or_else(bad)?))
            }
            _ => Err(bad()),
        }
    };
    let alu = |code: u16| -> Result<Insn, String> {
        if operand == "x" {
            Ok(Insn::stmt(op::ALU | code | op::X, 0))
        } else {
            Ok(Insn::stmt(op::ALU | code | op::K, parse_imm(operand).ok_or_else(bad)?))
        }
    };
    let jmp = |code: u16| -> Result<Insn, String> {
        let (jt, jf) = jump_targets()?;
        if operand == "x" {
            Ok(Insn::jump(op::JMP | code | op::X, 0, jt, jf))
        } else {
            Ok(Insn::jump(op::JMP | code | op::K, parse_imm(operand).ok_or_else(bad)?, jt, jf))
        }
    };
    let load = |size: u16| -> Result<Insn, String> {
        match parse_load_operand(operand).ok_or_else(bad)? {
            LoadOperand::Abs(k) => Ok(Insn::stmt(op::LD | size | op::ABS, k)),
            LoadOperand::Ind(k) => Ok(Insn::stmt(op::LD | size | op::IND, k)),
        }
    };
    match mnemonic {
        "ld" => {
            if operand == "#pktlen" {
                Ok(Insn::stmt(op::LD | op::W | op::LEN, 0))
            } else if let Some(k) = parse_imm(operand) {
                Ok(Insn::stmt(op::LD | op::IMM, k))
            } else if let Some(i) = parse_mem(operand) {
                Ok(Insn::stmt(op::LD | op::MEM, i))
            } else {
                load(op::W)
            }
        }
        "ldh" => load(op::H),
        "ldb" => load(op::B),
        "ldx" | "ldxb" => {
            if operand == "#pktlen" {
                Ok(Insn::stmt(op::LDX | op::W | op::LEN, 0))
            } else if let Some(k) = parse_imm(operand) {
                Ok(Insn::stmt(op::LDX | op::IMM, k))
            } else if let Some(i) = parse_mem(operand) {
                Ok(Insn::stmt(op::LDX | op::MEM, i))
            } else {
                // 4*([k]&0xf)
                let k = operand
                    .strip_prefix("4*([")
                    .and_then(|s| s.strip_suffix("]&0xf)"))
                    .and_then(parse_num)
                    .ok_or_else(bad)?;
                Ok(Insn::stmt(op::LDX | op::B | op::MSH, k))
            }
        }
        "st" => Ok(Insn::stmt(op::ST, parse_mem(operand).ok_or_else(bad)?)),
        "stx" => Ok(Insn::stmt(op::STX, parse_mem(operand).ok_or_else(bad)?)),
        "add" => alu(op::ADD),
        "sub" => alu(op::SUB),
        "mul" => alu(op::MUL),
        "div" => alu(op::DIV),
        "mod" => alu(op::MOD),
        "and" => alu(op::AND),
        "or" => alu(op::OR),
        "xor" => alu(op::XOR),
        "lsh" => alu(op::LSH),
        "rsh" => alu(op::RSH),
        "neg" => Ok(Insn::stmt(op::ALU | op::NEG, 0)),
        "ja" => {
            let target = parse_num(operand).ok_or_else(bad)?;
            // Backward targets (protochain's loop) wrap, as libpcap stores them.
            Ok(Insn::stmt(op::JMP | op::JA, target.wrapping_sub(pc + 1)))
        }
        "jeq" => jmp(op::JEQ),
        "jgt" => jmp(op::JGT),
        "jge" => jmp(op::JGE),
        "jset" => jmp(op::JSET),
        "ret" => {
            if operand.is_empty() || operand.eq_ignore_ascii_case("a") {
                Ok(Insn::stmt(op::RET | op::A, 0))
            } else {
                Ok(Insn::stmt(op::RET | op::K, parse_imm(operand).ok_or_else(bad)?))
            }
        }
        "tax" => Ok(Insn::stmt(op::MISC | op::TAX, 0)),
        "txa" => Ok(Insn::stmt(op::MISC | op::TXA, 0)),
        other => Err(format!("unknown mnemonic '{other}'")),
    }
}

/// Parses libpcap's `-d` text (`bpf_dump(prog, 1)`, as `tcpdump -d` prints
/// it) back into instructions. Jump targets are absolute in the text.
pub fn parse_d_text(text: &str) -> Result<Vec<Insn>, String> {
    let mut prog = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let pc = u32::try_from(prog.len()).map_err(|_| "program too long".to_string())?;
        let insn = parse_d_line(line, pc).map_err(|e| format!("line {}: {e}: {line}", n + 1))?;
        prog.push(insn);
    }
    if prog.is_empty() {
        return Err("empty program".to_string());
    }
    Ok(prog)
}

// ---------------------------------------------------------------------------
// Flat JSON objects, one per line (the jsonl data files).

/// A JSON scalar (the data files hold flat objects only).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, as written.
    Num(String),
    /// A string, unescaped.
    Str(String),
}

impl Json {
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A number or a numeric string as `u32`.
    pub fn as_u32(&self) -> Option<u32> {
        match self {
            Json::Num(s) | Json::Str(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// `true` for `true`.
    pub fn is_true(&self) -> bool {
        matches!(self, Json::Bool(true))
    }
}

struct JsonCursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl JsonCursor<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
        self.i += 4;
        let h = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
        u32::from_str_radix(h, 16).map_err(|_| "bad \\u escape".to_string())
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = *self.s.get(self.i).ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self.s.get(self.i).ok_or("unterminated escape")?;
                    self.i += 1;
                    let ch = match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'/' => '/',
                        b'\\' => '\\',
                        b'"' => '"',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) && self.s.get(self.i..self.i + 2) == Some(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            char::from_u32(cp).unwrap_or('\u{fffd}')
                        }
                        other => return Err(format!("bad escape '\\{}'", other as char)),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                _ => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| "string is not UTF-8".to_string())
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.s.get(self.i) {
            Some(b'"') => self.string().map(Json::Str),
            Some(b'n') if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(Json::Null)
            }
            Some(b't') if self.s[self.i..].starts_with(b"true") => {
                self.i += 4;
                Ok(Json::Bool(true))
            }
            Some(b'f') if self.s[self.i..].starts_with(b"false") => {
                self.i += 5;
                Ok(Json::Bool(false))
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
                {
                    self.i += 1;
                }
                Ok(Json::Num(String::from_utf8_lossy(&self.s[start..self.i]).into_owned()))
            }
            _ => Err(format!("unsupported JSON value at byte {}", self.i)),
        }
    }
}

/// Parses one flat JSON object (`{"k": scalar, ...}`).
pub fn parse_json_object(line: &str) -> Result<HashMap<String, Json>, String> {
    let mut c = JsonCursor { s: line.as_bytes(), i: 0 };
    let mut map = HashMap::new();
    c.eat(b'{')?;
    c.ws();
    if c.s.get(c.i) == Some(&b'}') {
        return Ok(map);
    }
    loop {
        let k = c.string()?;
        c.eat(b':')?;
        let v = c.value()?;
        map.insert(k, v);
        c.ws();
        match c.s.get(c.i) {
            Some(b',') => c.i += 1,
            Some(b'}') => break,
            _ => return Err(format!("expected ',' or '}}' at byte {}", c.i)),
        }
    }
    Ok(map)
}

/// Reads a jsonl file into objects.
pub fn read_jsonl(path: &Path) -> Vec<HashMap<String, Json>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, l)| parse_json_object(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1)))
        .collect()
}

// ---------------------------------------------------------------------------
// Captures (pcap and pcapng), read just enough for the suites.

/// One capture file: link type, snapshot length and packets
/// (captured bytes, wire length).
pub struct Capture {
    /// File path.
    pub path: PathBuf,
    /// Link type (DLT value).
    pub linktype: LinkType,
    /// The snapshot length libpcap would use for the file (0 or too large → 262144).
    pub snaplen: u32,
    /// Packets: captured bytes and original length.
    pub packets: Vec<(Vec<u8>, u32)>,
}

fn adjust_snaplen(s: u32) -> u32 {
    if s == 0 || s > DEFAULT_SNAPLEN {
        DEFAULT_SNAPLEN
    } else {
        s
    }
}

struct Bytes<'a> {
    b: &'a [u8],
    big: bool,
}

impl Bytes<'_> {
    fn u16(&self, at: usize) -> Option<u16> {
        let s: [u8; 2] = self.b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if self.big { u16::from_be_bytes(s) } else { u16::from_le_bytes(s) })
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let s: [u8; 4] = self.b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big { u32::from_be_bytes(s) } else { u32::from_le_bytes(s) })
    }
}

/// A packet: captured bytes and wire length.
pub type Packet = (Vec<u8>, u32);

/// What a capture reader returns: LINKTYPE, snapshot length, packets.
type Parsed = (u32, u32, Vec<Packet>);

fn read_pcap(b: &[u8], big: bool) -> Result<Parsed, String> {
    let r = Bytes { b, big };
    let major = r.u16(4).ok_or("short header")?;
    if major != 2 {
        return Err(format!("pcap version {major}"));
    }
    let snaplen = r.u32(16).ok_or("short header")?;
    let lt = r.u32(20).ok_or("short header")?;
    if lt & 0x03ff_0000 != 0 {
        return Err(format!("reserved link-type bits set: {lt:#x}"));
    }
    let mut packets = Vec::new();
    let mut at = 24usize;
    while at < b.len() {
        let caplen = r.u32(at + 8).ok_or("truncated record header")? as usize;
        let len = r.u32(at + 12).ok_or("truncated record header")?;
        let start = at + 16;
        let end = start.checked_add(caplen).ok_or("bad caplen")?;
        let data = b.get(start..end).ok_or("truncated record")?;
        packets.push((data.to_vec(), len));
        at = end;
    }
    Ok((lt & 0xffff, snaplen, packets))
}

fn read_pcapng(b: &[u8]) -> Result<Parsed, String> {
    let mut big = false;
    let mut at = 0usize;
    let mut ifaces: Vec<(u32, u32)> = Vec::new();
    let mut packets = Vec::new();
    while at < b.len() {
        // The byte order is set by each section header.
        if b.get(at..at + 4) == Some(&[0x0a, 0x0d, 0x0d, 0x0a]) {
            let bom = b.get(at + 8..at + 12).ok_or("short SHB")?;
            big = match bom {
                [0x1a, 0x2b, 0x3c, 0x4d] => true,
                [0x4d, 0x3c, 0x2b, 0x1a] => false,
                _ => return Err("bad byte-order magic".into()),
            };
            let r = Bytes { b, big };
            let (maj, min) = (r.u16(at + 12).ok_or("short SHB")?, r.u16(at + 14).ok_or("short SHB")?);
            if (maj, min) != (1, 0) {
                return Err(format!("pcapng version {maj}.{min}"));
            }
            ifaces.clear();
        }
        let r = Bytes { b, big };
        let btype = r.u32(at).ok_or("truncated block")?;
        let blen = r.u32(at + 4).ok_or("truncated block")? as usize;
        if blen < 12 || !blen.is_multiple_of(4) {
            return Err(format!("bad block length {blen}"));
        }
        let end = at.checked_add(blen).ok_or("bad block length")?;
        if r.u32(end - 4) != Some(blen as u32) {
            return Err("block total length in header and trailer differ".into());
        }
        let body = at + 8;
        match btype {
            1 => {
                let lt = u32::from(r.u16(body).ok_or("short IDB")?);
                let snap = r.u32(body + 4).ok_or("short IDB")?;
                ifaces.push((lt, snap));
            }
            6 => {
                let caplen = r.u32(body + 12).ok_or("short EPB")? as usize;
                let len = r.u32(body + 16).ok_or("short EPB")?;
                let start = body + 20;
                let data = b.get(start..start + caplen).filter(|_| start + caplen <= end - 4).ok_or("bad EPB")?;
                packets.push((data.to_vec(), len));
            }
            3 => {
                let len = r.u32(body).ok_or("short SPB")?;
                let snap = ifaces.first().map_or(0, |i| i.1);
                let room = (end - 4).saturating_sub(body + 4);
                let mut caplen = (len as usize).min(room);
                if snap != 0 {
                    caplen = caplen.min(snap as usize);
                }
                packets.push((b[body + 4..body + 4 + caplen].to_vec(), len));
            }
            2 => {
                let caplen = r.u32(body + 12).ok_or("short PB")? as usize;
                let len = r.u32(body + 16).ok_or("short PB")?;
                let start = body + 20;
                let data = b.get(start..start + caplen).filter(|_| start + caplen <= end - 4).ok_or("bad PB")?;
                packets.push((data.to_vec(), len));
            }
            _ => {}
        }
        at = end;
    }
    let (lt, snap) = *ifaces.first().ok_or("no interface")?;
    if ifaces.iter().any(|i| i.0 != lt) {
        return Err("interfaces with different link types".into());
    }
    Ok((lt, snap, packets))
}

/// Reads a pcap or pcapng file.
pub fn read_capture(path: &Path) -> Result<Capture, String> {
    let b = std::fs::read(path).map_err(|e| e.to_string())?;
    let magic = b.get(0..4).ok_or("too short")?;
    let (lt, snap, packets) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => read_pcap(&b, false)?,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => read_pcap(&b, true)?,
        [0x0a, 0x0d, 0x0d, 0x0a] => read_pcapng(&b)?,
        _ => return Err("not a capture".into()),
    };
    Ok(Capture {
        path: path.to_path_buf(),
        linktype: LinkType::from_linktype(lt),
        snaplen: adjust_snaplen(snap),
        packets,
    })
}

/// Every readable capture under `pcaps/` (files that fail to read, such as
/// the deliberately invalid ones, are left out).
pub fn all_captures() -> Vec<Capture> {
    let mut out = Vec::new();
    let mut dirs = vec![data_dir().join("pcaps")];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "pcap" || e == "pcapng") {
                if let Ok(c) = read_capture(&p) {
                    out.push(c);
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Program-guided packets.

/// A comparison a traced run went through: the compared value came straight
/// from a packet load (possibly masked with `and #m`).
struct Decision {
    addr: usize,
    size: usize,
    mask: u32,
    jop: u16,
    k: u32,
    taken: bool,
}

/// Where a value in a register came from: `(load & mask) + add`, the load
/// being `size` bytes at `addr` (`size` 0: the wire length).
#[derive(Clone, Copy)]
struct Src {
    addr: usize,
    size: usize,
    mask: u32,
    add: u32,
}

/// What a traced run saw: the packet-derived comparisons in order, and the
/// out-of-bounds load that ended it, if any.
struct Trace {
    decisions: Vec<Decision>,
    oob: Option<(usize, usize)>,
    /// The return value, when the run reached a `ret`.
    ret: Option<u32>,
}

fn load_be(d: &[u8], addr: usize, size: usize) -> Option<u32> {
    let b = d.get(addr..addr.checked_add(size)?)?;
    Some(b.iter().fold(0u32, |a, &x| (a << 8) | u32::from(x)))
}

fn store_be(d: &mut [u8], addr: usize, size: usize, v: u32) {
    for i in 0..size {
        if let Some(b) = d.get_mut(addr + i) {
            *b = (v >> (8 * (size - 1 - i))) as u8;
        }
    }
}

/// Runs `prog` like `bpf_filter`, recording the comparisons against loaded
/// values (a small tracing interpreter; never panics, stops after a step budget).
fn trace(prog: &[Insn], d: &[u8], wire: u32) -> Trace {
    let mut t = Trace { decisions: Vec::new(), oob: None, ret: None };
    let (mut a, mut x) = (0u32, 0u32);
    let (mut a_src, mut x_src): (Option<Src>, Option<Src>) = (None, None);
    let mut mem = [0u32; 16];
    let mut mem_src: [Option<Src>; 16] = [None; 16];
    let mut pc = 0usize;
    for _ in 0..100_000 {
        let Some(i) = prog.get(pc) else { return t };
        pc += 1;
        let class = i.code & 0x07;
        match class {
            op::LD | op::LDX => {
                let mode = i.code & 0xe0;
                let size = match i.code & 0x18 {
                    op::H => 2,
                    op::B => 1,
                    _ => 4,
                };
                let (val, src) = match mode {
                    op::IMM => (i.k, None),
                    op::LEN => (wire, Some(Src { addr: 0, size: 0, mask: u32::MAX, add: 0 })),
                    op::MEM => (mem[(i.k & 15) as usize], mem_src[(i.k & 15) as usize]),
                    op::ABS | op::IND | op::MSH => {
                        let base = if mode == op::IND { u64::from(x) } else { 0 };
                        let addr = base + u64::from(i.k);
                        let size = if mode == op::MSH { 1 } else { size };
                        let Ok(addr) = usize::try_from(addr) else { return t };
                        match load_be(d, addr, size) {
                            Some(v) if mode == op::MSH => ((v & 0xf) * 4, None),
                            Some(v) => (v, Some(Src { addr, size, mask: u32::MAX, add: 0 })),
                            None => {
                                if addr < 1 << 20 {
                                    t.oob = Some((addr, size));
                                }
                                return t;
                            }
                        }
                    }
                    _ => return t,
                };
                if class == op::LD {
                    (a, a_src) = (val, src);
                } else {
                    (x, x_src) = (val, src);
                }
            }
            op::ST => {
                mem[(i.k & 15) as usize] = a;
                mem_src[(i.k & 15) as usize] = a_src;
            }
            op::STX => {
                mem[(i.k & 15) as usize] = x;
                mem_src[(i.k & 15) as usize] = x_src;
            }
            op::ALU => {
                let by_x = i.code & 0x08 == op::X;
                let operand = if by_x { x } else { i.k };
                // A packet-derived operand makes A depend on two loads.
                let operand_known = !by_x || x_src.is_none();
                let opn = i.code & 0xf0;
                a = match opn {
                    op::ADD => a.wrapping_add(operand),
                    op::SUB => a.wrapping_sub(operand),
                    op::MUL => a.wrapping_mul(operand),
                    op::DIV | op::MOD if operand == 0 => return t,
                    op::DIV => a / operand,
                    op::MOD => a % operand,
                    op::AND => a & operand,
                    op::OR => a | operand,
                    op::XOR => a ^ operand,
                    op::LSH => a.checked_shl(operand).unwrap_or(0),
                    op::RSH => a.checked_shr(operand).unwrap_or(0),
                    op::NEG => a.wrapping_neg(),
                    _ => return t,
                };
                a_src = match (opn, a_src) {
                    (op::AND, Some(s)) if operand_known && s.add == 0 => Some(Src { mask: s.mask & operand, ..s }),
                    (op::ADD, Some(s)) if operand_known => Some(Src { add: s.add.wrapping_add(operand), ..s }),
                    (op::SUB, Some(s)) if operand_known => Some(Src { add: s.add.wrapping_sub(operand), ..s }),
                    _ => None,
                };
            }
            op::JMP => {
                let opn = i.code & 0xf0;
                if opn == op::JA {
                    pc = pc.wrapping_add(i.k as usize) & 0xffff_ffff;
                    continue;
                }
                let operand = if i.code & 0x08 == op::X { x } else { i.k };
                let taken = match opn {
                    op::JEQ => a == operand,
                    op::JGT => a > operand,
                    op::JGE => a >= operand,
                    op::JSET => a & operand != 0,
                    _ => return t,
                };
                // Compared with a constant (or with X holding a constant).
                let by_x = i.code & 0x08 == op::X;
                if let (Some(s), true) = (a_src, !by_x || x_src.is_none()) {
                    let k = operand.wrapping_sub(s.add);
                    t.decisions.push(Decision { addr: s.addr, size: s.size, mask: s.mask, jop: opn, k, taken });
                }
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
            op::RET => {
                t.ret = Some(if i.code & 0x18 == op::A { a } else { i.k });
                return t;
            }
            op::MISC => {
                if i.code & 0xf8 == op::TXA {
                    (a, a_src) = (x, x_src);
                } else {
                    (x, x_src) = (a, a_src);
                }
            }
            _ => return t,
        }
    }
    t
}

/// The masked value a comparison needs to go the other way, if one exists.
fn flip_value(d: &Decision, rng: &mut sift_testkit::Rng) -> Option<u32> {
    let m = d.mask;
    let want = !d.taken;
    let v = match (d.jop, want) {
        (op::JEQ, true) => (d.k & !m == 0).then_some(d.k)?,
        (op::JEQ, false) => (d.k ^ (m & m.wrapping_neg())) & m,
        (op::JGT, true) => {
            let c = d.k.checked_add(1)?;
            if c & m == c { c } else if m > d.k { m } else { return None }
        }
        (op::JGT, false) | (op::JGE, false) => {
            if d.jop == op::JGE && d.k == 0 {
                return None;
            }
            if rng.chance(0.5) { 0 } else { d.k.saturating_sub(u32::from(d.jop == op::JGE)) & m }
        }
        (op::JGE, true) => {
            if d.k & m == d.k { d.k } else if m >= d.k { m } else { return None }
        }
        (op::JSET, true) => {
            let bits = d.k & m;
            if bits == 0 {
                return None;
            }
            bits
        }
        (op::JSET, false) => 0,
        _ => return None,
    };
    Some(v)
}

/// Packets steered through `prog`: starting from a seed, comparisons against
/// loaded bytes are flipped one at a time by rewriting those bytes (and a
/// packet too short for a load is extended), so that deep paths and
/// accepting paths are exercised. Some results are truncated afterwards.
pub fn guided_packets(
    prog: &[Insn],
    seeds: &[(Vec<u8>, u32)],
    rng: &mut sift_testkit::Rng,
    count: usize,
) -> Vec<(Vec<u8>, u32)> {
    let mut out = Vec::with_capacity(count);
    if seeds.is_empty() {
        return out;
    }
    for _ in 0..count {
        let (mut d, mut w) = seeds[rng.index(seeds.len())].clone();
        // Either seek an accepting path (flip the comparison that decided
        // the rejection until the program accepts) or wander.
        let seek = rng.chance(0.7);
        let steps = if seek { 24 } else { 1 + rng.index(12) };
        // Addresses already rewritten: flipping a fresh one moves on.
        let mut patched: Vec<(usize, usize)> = Vec::new();
        for _ in 0..steps {
            let t = trace(prog, &d, w);
            if seek && t.ret.is_some_and(|r| r != 0) {
                break;
            }
            if let Some((addr, size)) = t.oob {
                let need = addr + size;
                if need <= 4096 && rng.chance(0.8) {
                    while d.len() < need {
                        d.push(rng.byte());
                    }
                    w = w.max(d.len() as u32);
                    continue;
                }
            }
            if t.decisions.is_empty() {
                break;
            }
            let n = t.decisions.len();
            let fresh = t.decisions.iter().rposition(|x| !patched.contains(&(x.addr, x.size)));
            let pick = match fresh {
                Some(f) if rng.chance(if seek { 0.85 } else { 0.5 }) => f,
                _ => rng.index(n),
            };
            let dec = &t.decisions[pick];
            let Some(masked) = flip_value(dec, rng) else { continue };
            patched.push((dec.addr, dec.size));
            if dec.size == 0 {
                // The wire length.
                w = (w & !dec.mask) | (masked & dec.mask);
                continue;
            }
            let Some(old) = load_be(&d, dec.addr, dec.size) else { continue };
            store_be(&mut d, dec.addr, dec.size, (old & !dec.mask) | (masked & dec.mask));
        }
        if rng.chance(0.15) && !d.is_empty() {
            let cut = rng.index(d.len());
            d.truncate(cut);
        }
        out.push((d, w));
    }
    out
}

// ---------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), to check the data files' `bytecode:sha256=` hashes.

const SHA256_K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

/// The SHA-256 digest of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] =
        [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64).wrapping_mul(8)).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16].wrapping_add(s0).wrapping_add(w[i - 7]).wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7].wrapping_add(s1).wrapping_add(ch).wrapping_add(SHA256_K[i]).wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [t1.wrapping_add(t2), v[0], v[1], v[2], v[3].wrapping_add(t1), v[4], v[5], v[6]];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// The data files' program hash: `bytecode:sha256=<first 16 hex digits of
/// the SHA-256 of the text with each line right-trimmed and '\n'-terminated>;n=<lines>`.
pub fn bytecode_hash(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let mut norm = String::new();
    for l in &lines {
        norm.push_str(l);
        norm.push('\n');
    }
    let digest = sha256(norm.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("bytecode:sha256={hex};n={}", lines.len())
}

/// Hex of the first `max` bytes of a packet (with `...` when cut).
pub fn hex(data: &[u8], max: usize) -> String {
    let mut s: String = data.iter().take(max).map(|b| format!("{b:02x}")).collect();
    if data.len() > max {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d_text_roundtrip_shapes() {
        let text = "(000) ldh      [12]\n(001) jeq      #0x800           jt 2\tjf 5\n(002) ldb      [x + -4]\n\
                    (003) ldxb     4*([14]&0xf)\n(004) ja       1\n(005) ret      #0\n";
        let p = parse_d_text(text).unwrap();
        assert_eq!(p.len(), 6);
        assert_eq!(p[1], Insn::jump(op::JMP | op::JEQ | op::K, 0x800, 0, 3));
        assert_eq!(p[2].k, (-4i32) as u32);
        assert_eq!(p[4].k, 1u32.wrapping_sub(5));
    }

    #[test]
    fn sha256_known_answers() {
        let hex = |d: [u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let long = vec![b'a'; 1000];
        assert_eq!(hex(sha256(&long)), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
        assert_eq!(bytecode_hash("(000) ret      #262144\n"), "bytecode:sha256=a58b97ffc73690a7;n=1");
    }
}
