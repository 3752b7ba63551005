//! Text forms of classic BPF programs.
//!
//! Output reproduces, byte for byte, what libpcap 1.10.3's `bpf_dump()`
//! prints (and so `tcpdump -d`, `-dd`, `-ddd` of tcpdump 4.99.3):
//!
//! * [`dump_d`]: one [`image`] per line, e.g. `(001) jeq      #0x800           jt 2\tjf 5`.
//!   Operand-less instructions keep 1.10.3's trailing blanks (`tax      `).
//! * [`dump_dd`]: C initializers, `{ 0x28, 0, 0, 0x0000000c },`.
//! * [`dump_ddd`]: the instruction count, then `code jt jf k` in decimal.
//!
//! [`parse_program`] reads the `-ddd` form, the `-dd` form, and the comma
//! form of `tc`/`iptables` (`4,48 0 0 9,21 0 1 6,6 0 0 1,6 0 0 0`).

use crate::insn::{op, Insn};
use std::fmt::{self, Write as _};

/// Names libpcap 1.10.3 (built for Linux) prints for `ld [k]`, `ldh [k]`,
/// `ldb [k]` at the kernel's ancillary-data offsets `SKF_AD_OFF + 4 * i`.
const ANCILLARY_NAMES: [&str; 16] = [
    "proto", "type", "ifidx", "nla", "nlan", "mark", "queue", "hatype", "rxhash", "cpu", "xor_x", "vlan_tci",
    "vlanp", "poff", "random", "vlan_tpid",
];

/// `SKF_AD_OFF`: where the Linux kernel's ancillary-data offsets start.
pub(crate) const SKF_AD_OFF: u32 = 0xffff_f000;

/// The name of the ancillary-data load at absolute offset `k`, if any.
pub(crate) fn ancillary_name(k: u32) -> Option<&'static str> {
    let rel = k.checked_sub(SKF_AD_OFF)?;
    if rel % 4 != 0 {
        return None;
    }
    ANCILLARY_NAMES.get((rel / 4) as usize).copied()
}

/// The operand text of an absolute load: `[12]`, `[-1]` or `[type]`.
fn abs_operand(k: u32) -> String {
    match ancillary_name(k) {
        Some(name) => format!("[{name}]"),
        None => format!("[{}]", k as i32),
    }
}

/// libpcap 1.10.3's `bpf_image(insn, pc)`: one instruction as text, without a
/// newline. Jump targets are printed as absolute instruction numbers.
pub fn image(insn: &Insn, pc: usize) -> String {
    let k = insn.k;
    let signed = k as i32;
    let (name, operand): (&str, String) = match insn.code {
        c if c == op::RET | op::K => ("ret", format!("#{signed}")),
        c if c == op::RET | op::A => ("ret", String::new()),
        c if c == op::LD | op::W | op::ABS => ("ld", abs_operand(k)),
        c if c == op::LD | op::H | op::ABS => ("ldh", abs_operand(k)),
        c if c == op::LD | op::B | op::ABS => ("ldb", abs_operand(k)),
        c if c == op::LD | op::W | op::LEN => ("ld", "#pktlen".to_string()),
        c if c == op::LD | op::W | op::IND => ("ld", format!("[x + {signed}]")),
        c if c == op::LD | op::H | op::IND => ("ldh", format!("[x + {signed}]")),
        c if c == op::LD | op::B | op::IND => ("ldb", format!("[x + {signed}]")),
        c if c == op::LD | op::IMM => ("ld", format!("#0x{k:x}")),
        c if c == op::LDX | op::IMM => ("ldx", format!("#0x{k:x}")),
        c if c == op::LDX | op::MSH | op::B => ("ldxb", format!("4*([{signed}]&0xf)")),
        c if c == op::LD | op::MEM => ("ld", format!("M[{signed}]")),
        c if c == op::LDX | op::MEM => ("ldx", format!("M[{signed}]")),
        c if c == op::ST => ("st", format!("M[{signed}]")),
        c if c == op::STX => ("stx", format!("M[{signed}]")),
        c if c == op::JMP | op::JA => {
            // libpcap computes `pc + 1 + k` in 32-bit int arithmetic.
            let target = (pc as u32).wrapping_add(1).wrapping_add(k) as i32;
            ("ja", format!("{target}"))
        }
        c if c == op::JMP | op::JGT | op::K => ("jgt", format!("#0x{k:x}")),
        c if c == op::JMP | op::JGE | op::K => ("jge", format!("#0x{k:x}")),
        c if c == op::JMP | op::JEQ | op::K => ("jeq", format!("#0x{k:x}")),
        c if c == op::JMP | op::JSET | op::K => ("jset", format!("#0x{k:x}")),
        c if c == op::JMP | op::JGT | op::X => ("jgt", "x".to_string()),
        c if c == op::JMP | op::JGE | op::X => ("jge", "x".to_string()),
        c if c == op::JMP | op::JEQ | op::X => ("jeq", "x".to_string()),
        c if c == op::JMP | op::JSET | op::X => ("jset", "x".to_string()),
        c if c == op::ALU | op::ADD | op::X => ("add", "x".to_string()),
        c if c == op::ALU | op::SUB | op::X => ("sub", "x".to_string()),
        c if c == op::ALU | op::MUL | op::X => ("mul", "x".to_string()),
        c if c == op::ALU | op::DIV | op::X => ("div", "x".to_string()),
        c if c == op::ALU | op::MOD | op::X => ("mod", "x".to_string()),
        c if c == op::ALU | op::AND | op::X => ("and", "x".to_string()),
        c if c == op::ALU | op::OR | op::X => ("or", "x".to_string()),
        c if c == op::ALU | op::XOR | op::X => ("xor", "x".to_string()),
        c if c == op::ALU | op::LSH | op::X => ("lsh", "x".to_string()),
        c if c == op::ALU | op::RSH | op::X => ("rsh", "x".to_string()),
        c if c == op::ALU | op::ADD | op::K => ("add", format!("#{signed}")),
        c if c == op::ALU | op::SUB | op::K => ("sub", format!("#{signed}")),
        c if c == op::ALU | op::MUL | op::K => ("mul", format!("#{signed}")),
        c if c == op::ALU | op::DIV | op::K => ("div", format!("#{signed}")),
        c if c == op::ALU | op::MOD | op::K => ("mod", format!("#{signed}")),
        c if c == op::ALU | op::AND | op::K => ("and", format!("#0x{k:x}")),
        c if c == op::ALU | op::OR | op::K => ("or", format!("#0x{k:x}")),
        c if c == op::ALU | op::XOR | op::K => ("xor", format!("#0x{k:x}")),
        c if c == op::ALU | op::LSH | op::K => ("lsh", format!("#{signed}")),
        c if c == op::ALU | op::RSH | op::K => ("rsh", format!("#{signed}")),
        c if c == op::ALU | op::NEG => ("neg", String::new()),
        c if c == op::MISC | op::TAX => ("tax", String::new()),
        c if c == op::MISC | op::TXA => ("txa", String::new()),
        c => ("unimp", format!("0x{c:x}")),
    };
    let class = insn.code & 0x07;
    let jop = insn.code & 0xf0;
    let n = pc as i64;
    if class == op::JMP && jop != op::JA {
        format!(
            "({n:03}) {name:<8} {operand:<16} jt {}\tjf {}",
            n + 1 + i64::from(insn.jt),
            n + 1 + i64::from(insn.jf)
        )
    } else {
        format!("({n:03}) {name:<8} {operand}")
    }
}

/// The `-d` form: [`image`] of every instruction, one per line.
pub fn dump_d(prog: &[Insn]) -> String {
    let mut s = String::with_capacity(prog.len() * 40);
    for (pc, insn) in prog.iter().enumerate() {
        s.push_str(&image(insn, pc));
        s.push('\n');
    }
    s
}

/// The `-dd` form: one C initializer per line, `{ 0x15, 0, 3, 0x00000800 },`.
pub fn dump_dd(prog: &[Insn]) -> String {
    let mut s = String::with_capacity(prog.len() * 30);
    for i in prog {
        // Writing to a String cannot fail.
        let _ = writeln!(s, "{{ 0x{:x}, {}, {}, 0x{:08x} }},", i.code, i.jt, i.jf, i.k);
    }
    s
}

/// The `-ddd` form: the instruction count on the first line, then
/// `code jt jf k` in decimal, one instruction per line.
pub fn dump_ddd(prog: &[Insn]) -> String {
    let mut s = String::with_capacity(prog.len() * 20 + 8);
    let _ = writeln!(s, "{}", prog.len());
    for i in prog {
        let _ = writeln!(s, "{} {} {} {}", i.code, i.jt, i.jf, i.k);
    }
    s
}

/// The comma form used by `tc ... bpf bytecode` and `iptables -m bpf
/// --bytecode`: `count,code jt jf k,code jt jf k,...`, no trailing comma.
pub fn dump_comma(prog: &[Insn]) -> String {
    let mut s = prog.len().to_string();
    for i in prog {
        let _ = write!(s, ",{} {} {} {}", i.code, i.jt, i.jf, i.k);
    }
    s
}

/// Why [`parse_program`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextErrorKind {
    /// The text has no program in it.
    Empty,
    /// Something else than what the format needs at this point.
    Expected(&'static str),
    /// A number too large for its field (`code` is 16 bits, `jt`/`jf` 8, `k` 32).
    OutOfRange {
        /// Which field: `"code"`, `"jt"`, `"jf"`, `"k"` or `"count"`.
        field: &'static str,
    },
    /// The count in front of the program disagrees with the instructions.
    CountMismatch {
        /// The count the text declares.
        declared: u64,
        /// The number of instructions found.
        found: usize,
    },
}

/// A syntax error in a program text, with its position (1-based line and
/// column, counted in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    /// Line of the error, from 1.
    pub line: usize,
    /// Column of the error, from 1.
    pub column: usize,
    /// What is wrong.
    pub kind: TextErrorKind,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: ", self.line, self.column)?;
        match &self.kind {
            TextErrorKind::Empty => f.write_str("no BPF program in the text"),
            TextErrorKind::Expected(what) => write!(f, "expected {what}"),
            TextErrorKind::OutOfRange { field } => {
                let max = match *field {
                    "code" => "65535",
                    "jt" | "jf" => "255",
                    _ => "4294967295",
                };
                write!(f, "{field} is out of range (at most {max})")
            }
            TextErrorKind::CountMismatch { declared, found } => {
                write!(f, "the program declares {declared} instructions but has {found}")
            }
        }
    }
}

impl std::error::Error for TextError {}

/// Parses a program in one of the text forms:
///
/// * `-ddd`: a count line, then one `code jt jf k` line (decimal) per
///   instruction;
/// * `-dd`: lines `{ 0x28, 0, 0, 0x0000000c },` (the count line is absent);
/// * the comma form `count,code jt jf k,code jt jf k,...` (a trailing comma
///   is allowed; may span lines).
///
/// Numbers may be decimal or `0x` hexadecimal in every form. Blank lines are
/// ignored. The declared count must match the instructions.
pub fn parse_program(text: &str) -> Result<Vec<Insn>, TextError> {
    let mut cur = Cursor::new(text);
    cur.skip_ws();
    if cur.at_end() {
        return Err(cur.error(TextErrorKind::Empty));
    }
    if cur.peek() == Some('{') {
        parse_dd(cur)
    } else if text.contains(',') {
        parse_comma(cur)
    } else {
        parse_ddd(cur)
    }
}

fn parse_ddd(mut cur: Cursor<'_>) -> Result<Vec<Insn>, TextError> {
    let (declared, count_pos) = cur.number("the instruction count", "count", u64::from(u32::MAX))?;
    cur.end_of_line()?;
    let mut prog = Vec::new();
    loop {
        cur.skip_ws();
        if cur.at_end() {
            break;
        }
        let code = cur.field("code", 0xffff)?;
        let jt = cur.field("jt", 0xff)?;
        let jf = cur.field("jf", 0xff)?;
        let k = cur.field("k", u64::from(u32::MAX))?;
        cur.end_of_line()?;
        prog.push(Insn { code: code as u16, jt: jt as u8, jf: jf as u8, k: k as u32 });
    }
    check_count(declared, count_pos, prog.len())?;
    Ok(prog)
}

fn parse_dd(mut cur: Cursor<'_>) -> Result<Vec<Insn>, TextError> {
    let mut prog = Vec::new();
    loop {
        cur.skip_ws();
        if cur.at_end() {
            break;
        }
        cur.expect('{', "'{'")?;
        let code = cur.field("code", 0xffff)?;
        cur.expect(',', "','")?;
        let jt = cur.field("jt", 0xff)?;
        cur.expect(',', "','")?;
        let jf = cur.field("jf", 0xff)?;
        cur.expect(',', "','")?;
        let k = cur.field("k", u64::from(u32::MAX))?;
        cur.expect('}', "'}'")?;
        cur.skip_blanks();
        if cur.peek() == Some(',') {
            cur.bump();
        }
        cur.end_of_line()?;
        prog.push(Insn { code: code as u16, jt: jt as u8, jf: jf as u8, k: k as u32 });
    }
    Ok(prog)
}

fn parse_comma(mut cur: Cursor<'_>) -> Result<Vec<Insn>, TextError> {
    let (declared, count_pos) = cur.number("the instruction count", "count", u64::from(u32::MAX))?;
    cur.skip_ws();
    let mut prog = Vec::new();
    while !cur.at_end() {
        cur.expect(',', "','")?;
        cur.skip_ws();
        if cur.at_end() {
            break; // trailing comma
        }
        let code = cur.field("code", 0xffff)?;
        let jt = cur.field("jt", 0xff)?;
        let jf = cur.field("jf", 0xff)?;
        let k = cur.field("k", u64::from(u32::MAX))?;
        cur.skip_ws();
        prog.push(Insn { code: code as u16, jt: jt as u8, jf: jf as u8, k: k as u32 });
    }
    check_count(declared, count_pos, prog.len())?;
    Ok(prog)
}

fn check_count(declared: u64, (line, column): (usize, usize), found: usize) -> Result<(), TextError> {
    if declared == found as u64 {
        Ok(())
    } else {
        Err(TextError { line, column, kind: TextErrorKind::CountMismatch { declared, found } })
    }
}

/// A position in the text, tracking line and column.
struct Cursor<'a> {
    rest: std::str::Chars<'a>,
    line: usize,
    column: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor { rest: text.chars(), line: 1, column: 1 }
    }

    fn peek(&self) -> Option<char> {
        self.rest.clone().next()
    }

    fn at_end(&self) -> bool {
        self.peek().is_none()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn pos(&self) -> (usize, usize) {
        (self.line, self.column)
    }

    fn error(&self, kind: TextErrorKind) -> TextError {
        TextError { line: self.line, column: self.column, kind }
    }

    /// Skips all whitespace, newlines included.
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Skips whitespace other than newlines.
    fn skip_blanks(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace() && c != '\n') {
            self.bump();
        }
    }

    /// Requires the end of the line (or of the text) after optional blanks.
    fn end_of_line(&mut self) -> Result<(), TextError> {
        self.skip_blanks();
        match self.peek() {
            None => Ok(()),
            Some('\n') => {
                self.bump();
                Ok(())
            }
            Some(_) => Err(self.error(TextErrorKind::Expected("the end of the line"))),
        }
    }

    fn expect(&mut self, c: char, what: &'static str) -> Result<(), TextError> {
        self.skip_blanks();
        if self.peek() == Some(c) {
            self.bump();
            Ok(())
        } else {
            Err(self.error(TextErrorKind::Expected(what)))
        }
    }

    /// An instruction field on the current line.
    fn field(&mut self, field: &'static str, max: u64) -> Result<u64, TextError> {
        let what = match field {
            "code" => "an opcode",
            "jt" => "a jt offset",
            "jf" => "a jf offset",
            _ => "a k value",
        };
        Ok(self.number(what, field, max)?.0)
    }

    /// A decimal or `0x` hexadecimal number after optional blanks, at most
    /// `max`; returns it with its position.
    fn number(&mut self, what: &'static str, field: &'static str, max: u64) -> Result<(u64, (usize, usize)), TextError> {
        self.skip_blanks();
        let start = self.pos();
        let mut probe = self.rest.clone();
        let hex = probe.next() == Some('0') && matches!(probe.next(), Some('x' | 'X'));
        let radix = if hex {
            self.bump();
            self.bump();
            16
        } else {
            10
        };
        let mut value: u64 = 0;
        let mut digits = 0usize;
        let mut overflow = false;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(radix)) {
            self.bump();
            digits += 1;
            match value.checked_mul(u64::from(radix)).and_then(|v| v.checked_add(u64::from(d))) {
                Some(v) if v <= max => value = v,
                _ => overflow = true,
            }
        }
        if digits == 0 {
            return Err(TextError { line: start.0, column: start.1, kind: TextErrorKind::Expected(what) });
        }
        if self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return Err(self.error(TextErrorKind::Expected(what)));
        }
        if overflow {
            return Err(TextError { line: start.0, column: start.1, kind: TextErrorKind::OutOfRange { field } });
        }
        Ok((value, start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }

    #[test]
    fn images_of_every_known_opcode() {
        // Expected texts are libpcap 1.10.3's bpf_image() output (measured
        // with a small C program linked with -lpcap), at pc 7, jt 3, jf 250.
        let cases: &[(u16, u32, &str)] = &[
            (0x00, 15, "(007) ld       #0xf"),
            (0x01, 0xffffffff, "(007) ldx      #0xffffffff"),
            (0x02, 15, "(007) st       M[15]"),
            (0x03, 0x80000000, "(007) stx      M[-2147483648]"),
            (0x04, 0xffffffff, "(007) add      #-1"),
            (0x05, 15, "(007) ja       23"),
            (0x05, 0x80000000, "(007) ja       -2147483640"),
            (0x05, 0xffffffff, "(007) ja       7"),
            (0x06, 262144, "(007) ret      #262144"),
            (0x06, 0xffffffff, "(007) ret      #-1"),
            (0x07, 9, "(007) tax      "),
            (0x0c, 9, "(007) add      x"),
            (0x14, 15, "(007) sub      #15"),
            (0x15, 15, "(007) jeq      #0xf             jt 11\tjf 258"),
            (0x16, 15, "(007) ret      "),
            (0x1c, 0, "(007) sub      x"),
            (0x1d, 0, "(007) jeq      x                jt 11\tjf 258"),
            (0x20, 15, "(007) ld       [15]"),
            (0x20, 0xfffff030, "(007) ld       [vlanp]"),
            (0x20, 0xfffff001, "(007) ld       [-4095]"),
            (0x24, 15, "(007) mul      #15"),
            (0x25, 0x80000000, "(007) jgt      #0x80000000      jt 11\tjf 258"),
            (0x28, 0xfffff004, "(007) ldh      [type]"),
            (0x2c, 0, "(007) mul      x"),
            (0x2d, 0, "(007) jgt      x                jt 11\tjf 258"),
            (0x30, 0xfffff03c, "(007) ldb      [vlan_tpid]"),
            (0x30, 0xfffff040, "(007) ldb      [-4032]"),
            (0x34, 15, "(007) div      #15"),
            (0x35, 15, "(007) jge      #0xf             jt 11\tjf 258"),
            (0x3c, 0, "(007) div      x"),
            (0x3d, 0, "(007) jge      x                jt 11\tjf 258"),
            (0x40, 0xfffff030, "(007) ld       [x + -4048]"),
            (0x44, 15, "(007) or       #0xf"),
            (0x45, 15, "(007) jset     #0xf             jt 11\tjf 258"),
            (0x48, 15, "(007) ldh      [x + 15]"),
            (0x4c, 0, "(007) or       x"),
            (0x4d, 0, "(007) jset     x                jt 11\tjf 258"),
            (0x50, 15, "(007) ldb      [x + 15]"),
            (0x54, 15, "(007) and      #0xf"),
            (0x5c, 0, "(007) and      x"),
            (0x60, 15, "(007) ld       M[15]"),
            (0x61, 0xffffffff, "(007) ldx      M[-1]"),
            (0x64, 15, "(007) lsh      #15"),
            (0x6c, 0, "(007) lsh      x"),
            (0x74, 0xfffff030, "(007) rsh      #-4048"),
            (0x7c, 0, "(007) rsh      x"),
            (0x80, 15, "(007) ld       #pktlen"),
            (0x81, 15, "(007) unimp    0x81"),
            (0x84, 15, "(007) neg      "),
            (0x87, 15, "(007) txa      "),
            (0x94, 15, "(007) mod      #15"),
            (0x9c, 0, "(007) mod      x"),
            (0xa4, 15, "(007) xor      #0xf"),
            (0xac, 0, "(007) xor      x"),
            (0xb1, 15, "(007) ldxb     4*([15]&0xf)"),
            (0xb1, 0xffffffff, "(007) ldxb     4*([-1]&0xf)"),
            (0x08, 0, "(007) unimp    0x8"),
            (0x0e, 0, "(007) unimp    0xe"),
            (0x105, 0, "(007) unimp    0x105"),
            (0x125, 0, "(007) unimp    0x125            jt 11\tjf 258"),
            (0x1015, 0, "(007) unimp    0x1015           jt 11\tjf 258"),
            (0xff0d, 0, "(007) unimp    0xff0d"),
        ];
        for &(code, k, want) in cases {
            assert_eq!(image(&i(code, 3, 250, k), 7), want, "code {code:#x} k {k:#x}");
        }
        assert_eq!(image(&i(0x06, 0, 0, 0), 1234), "(1234) ret      #0");
    }

    #[test]
    fn ancillary_names() {
        assert_eq!(ancillary_name(0xfffff000), Some("proto"));
        assert_eq!(ancillary_name(0xfffff03c), Some("vlan_tpid"));
        assert_eq!(ancillary_name(0xfffff040), None);
        assert_eq!(ancillary_name(0xfffff002), None);
        assert_eq!(ancillary_name(12), None);
    }

    fn sample() -> Vec<Insn> {
        vec![i(0x28, 0, 0, 12), i(0x15, 0, 1, 0x800), i(0x06, 0, 0, 262144), i(0x06, 0, 0, 0)]
    }

    #[test]
    fn dumps() {
        let p = sample();
        assert_eq!(
            dump_d(&p),
            "(000) ldh      [12]\n(001) jeq      #0x800           jt 2\tjf 3\n(002) ret      #262144\n(003) ret      #0\n"
        );
        assert_eq!(
            dump_dd(&p),
            "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000800 },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },\n"
        );
        assert_eq!(dump_ddd(&p), "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n");
        assert_eq!(dump_comma(&p), "4,40 0 0 12,21 0 1 2048,6 0 0 262144,6 0 0 0");
        assert_eq!(dump_d(&[]), "");
        assert_eq!(dump_ddd(&[]), "0\n");
    }

    #[test]
    fn parse_round_trips() {
        let p = sample();
        assert_eq!(parse_program(&dump_ddd(&p)), Ok(p.clone()));
        assert_eq!(parse_program(&dump_dd(&p)), Ok(p.clone()));
        assert_eq!(parse_program(&dump_comma(&p)), Ok(p.clone()));
        assert_eq!(parse_program(&(dump_comma(&p) + ",")), Ok(p.clone()));
        assert_eq!(parse_program("4,40 0 0 12,\n21 0 1 2048,\n6 0 0 262144,\n6 0 0 0,\n"), Ok(p.clone()));
        assert_eq!(parse_program("\n\n  4\r\n40 0 0 12\n\n21 0 1 0x800\n6 0 0 262144  \n6 0 0 0"), Ok(p.clone()));
        assert_eq!(parse_program("{0x28,0,0,0xc}\n{ 0x15, 0, 1, 2048 }\n{ 6, 0, 0, 262144 },\n{ 0x6, 0, 0, 0x0 },"), Ok(p));
        assert_eq!(parse_program("0\n"), Ok(vec![]));
        assert_eq!(parse_program("1,6 0 0 4294967295"), Ok(vec![i(6, 0, 0, u32::MAX)]));
    }

    fn err(text: &str) -> (usize, usize, TextErrorKind) {
        let e = parse_program(text).expect_err(text);
        (e.line, e.column, e.kind)
    }

    #[test]
    fn parse_errors_name_the_position() {
        use TextErrorKind::*;
        assert_eq!(err(""), (1, 1, Empty));
        assert_eq!(err("  \n "), (2, 2, Empty));
        assert_eq!(err("2\n6 0 0 1\n"), (1, 1, CountMismatch { declared: 2, found: 1 }));
        assert_eq!(err("1\n6 0 0\n"), (2, 6, Expected("a k value")));
        assert_eq!(err("1\n6 0 0 1 7\n"), (2, 9, Expected("the end of the line")));
        assert_eq!(err("1\n6 256 0 1\n"), (2, 3, OutOfRange { field: "jt" }));
        assert_eq!(err("1\n65536 0 0 1\n"), (2, 1, OutOfRange { field: "code" }));
        assert_eq!(err("1\n6 0 0 4294967296\n"), (2, 7, OutOfRange { field: "k" }));
        assert_eq!(err("1\n6 0 0 12abc\n"), (2, 9, Expected("a k value")));
        assert_eq!(err("2,6 0 0 1,6 0 x 0"), (1, 15, Expected("a jf offset")));
        assert_eq!(err("3,6 0 0 1,6 0 0 0"), (1, 1, CountMismatch { declared: 3, found: 2 }));
        assert_eq!(err("2,6 0 0 1;6 0 0 0"), (1, 10, Expected("','")));
        assert_eq!(err("{ 0x6, 0, 0, 0 }\n{ 0x6, 0 0, 0 }"), (2, 10, Expected("','")));
        assert_eq!(err("{ 0x6, 0, 0, 0 } x"), (1, 18, Expected("the end of the line")));
        assert_eq!(err("ret #0"), (1, 1, Expected("the instruction count")));
        let e = parse_program("1\n6 256 0 1\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2, column 3: jt is out of range (at most 255)");
    }
}
