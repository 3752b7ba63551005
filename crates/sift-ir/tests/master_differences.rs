//! Where sift deliberately follows libpcap master instead of 1.10.3 (see
//! the module documentation of `sift_ir::lower`), as regression tests: each
//! of these expressions compiles in libpcap 1.10.3 (`tcpdump -O -d`), and
//! each failed here before sift followed master.
//!
//! - master's value range checks (`assert_maxval`): the expression is
//!   rejected with master's message, and the error points at the value;
//! - `byte IDX & V` / `byte IDX | V` (libpcap commit 82724cc7): the byte is
//!   loaded, so a packet too short for it is rejected, and the operators
//!   mean "bits intersect" and "OR is non-zero".

use sift_ir::eval::{eval_pred, Abort};
use sift_ir::{lower, LinkType, LowerOptions, PacketView, Pred};

fn lower_on(lt: LinkType, expr: &str) -> Result<Pred, sift_syntax::Error> {
    let f = sift_syntax::parse(expr).unwrap_or_else(|e| panic!("{expr}: {}", e.message));
    lower(&f, &LowerOptions { linktype: lt, netmask: Some(0), ..LowerOptions::default() })
}

/// `expr` must be rejected on `lt` with `message`, the error's span being
/// the text `value`, the last occurrence of it in `expr`.
fn rejects(lt: LinkType, expr: &str, message: &str, value: &str) {
    let e = match lower_on(lt, expr) {
        Ok(p) => panic!("{expr:?} on {lt}: lowered to\n{p}"),
        Err(e) => e,
    };
    assert_eq!(e.message, message, "{expr:?} on {lt}");
    let at = expr.rfind(value).expect("value in the expression");
    assert_eq!(&expr[e.span.range()], value, "{expr:?} on {lt}: span {:?}", e.span);
    assert_eq!(e.span.start as usize, at, "{expr:?} on {lt}");
}

fn accepts(lt: LinkType, expr: &str) {
    if let Err(e) = lower_on(lt, expr) {
        panic!("{expr:?} on {lt}: {}", e.message);
    }
}

const ALL: [LinkType; 8] = [
    LinkType::EN10MB,
    LinkType::RAW,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
];

#[test]
fn protocol_numbers_above_255_are_rejected_on_every_link_type() {
    const MSG: &str = "protocol number 256 greater than maximum 255";
    for lt in ALL {
        rejects(lt, "proto 256", MSG, "256");
        rejects(lt, "ip proto 256", MSG, "256");
        rejects(lt, "ip6 proto 256", MSG, "256");
        rejects(lt, "protochain 256", MSG, "256");
        rejects(lt, "ip proto 0x100", MSG, "0x100");
        rejects(lt, "ip proto 300", "protocol number 300 greater than maximum 255", "300");
        rejects(lt, "tcp or ip proto 6 or 256", MSG, "256");
        rejects(lt, "ip6 proto (17 or 256) and tcp", MSG, "256");
        rejects(lt, "proto 4294967295", "protocol number 4294967295 greater than maximum 255", "4294967295");
        accepts(lt, "proto 255");
        accepts(lt, "ip6 proto 0xff");
    }
}

#[test]
fn byte_arguments_above_255_are_rejected_for_every_operator() {
    const MSG: &str = "byte argument 256 greater than maximum 255";
    for lt in ALL {
        for op in ["=", "<", ">", "&", "|"] {
            rejects(lt, &format!("byte 1 {op} 256"), MSG, "256");
            accepts(lt, &format!("byte 1 {op} 255"));
        }
        rejects(lt, "ip and byte 1 =256", MSG, "256");
        // The index is not range-checked (a load past the packet rejects it).
        accepts(lt, "byte 4294967295 = 1");
    }
}

#[test]
fn link_proto_values_must_fit_the_field_on_ethernet_and_linux_cooked() {
    for lt in [LinkType::EN10MB, LinkType::LINUX_SLL] {
        rejects(lt, "link proto 65536", "EtherType 65536 greater than maximum 65535", "65536");
        rejects(lt, "ether proto 0x10000", "EtherType 65536 greater than maximum 65535", "0x10000");
        rejects(lt, "link proto 1500", "LLC DSAP 1500 greater than maximum 255", "1500");
        rejects(lt, "ether proto 256", "LLC DSAP 256 greater than maximum 255", "256");
        for ok in ["link proto 255", "link proto 1501", "link proto 65535", "ether proto 0x800", "link proto 0"] {
            accepts(lt, ok);
        }
    }
    // DLT_LINUX_SLL2 has a type field but no LLC special case in master.
    rejects(LinkType::LINUX_SLL2, "link proto 65536", "EtherType 65536 greater than maximum 65535", "65536");
    accepts(LinkType::LINUX_SLL2, "link proto 1500");
    // Without a type field, master (like 1.10.3) compiles a test that never holds.
    for lt in [LinkType::RAW, LinkType::IPV4, LinkType::IPV6, LinkType::NULL, LinkType::LOOP] {
        accepts(lt, "link proto 65536");
        accepts(lt, "link proto 1500");
    }
}

#[test]
fn iso_and_isis_values_are_range_checked() {
    rejects(LinkType::EN10MB, "iso proto 256", "ISO protocol 256 greater than maximum 255", "256");
    rejects(LinkType::EN10MB, "isis proto 32", "IS-IS PDU type 32 greater than maximum 31", "32");
    accepts(LinkType::EN10MB, "isis proto 31");
    accepts(LinkType::EN10MB, "iso proto 255");
}

#[test]
fn decnet_addresses_are_area_dot_node() {
    // 1.10.3 also takes a plain number as a 16-bit DECnet address; master
    // (TESTrun reject_decnet_1) says "invalid DECnet address '1'".
    rejects(LinkType::EN10MB, "decnet host 1", "invalid DECnet address '1'", "1");
    rejects(LinkType::EN10MB, "decnet src 1034", "invalid DECnet address '1034'", "1034");
    rejects(LinkType::EN10MB, "decnet host 1.2 or 3", "invalid DECnet address '3'", "3");
    accepts(LinkType::EN10MB, "decnet host 1.2");
    for expr in ["decnet net 1.2.3.0/24", "decnet net 1.2.3.0 mask 255.255.255.0"] {
        let e = lower_on(LinkType::EN10MB, expr).expect_err(expr);
        assert_eq!(e.message, "'decnet' is not a valid qualifier for 'net'", "{expr}");
    }
}

/// A packet of `len` bytes, all zero except `byte` at offset 8.
fn packet(len: usize, byte: u8) -> Vec<u8> {
    let mut p = vec![0u8; len];
    if let Some(b) = p.get_mut(8) {
        *b = byte;
    }
    p
}

fn run(p: &Pred, data: &[u8]) -> Result<bool, Abort> {
    eval_pred(p, PacketView { data, wire_len: 100 })
}

#[test]
fn byte_and_tests_the_bits_of_the_loaded_byte() {
    for lt in ALL {
        let p = lower_on(lt, "byte 8 & 5").expect("lowers");
        assert_eq!(run(&p, &packet(20, 0x04)), Ok(true), "{lt}: bit 2 is set");
        assert_eq!(run(&p, &packet(20, 0x01)), Ok(true), "{lt}: bit 0 is set");
        assert_eq!(run(&p, &packet(20, 0x0a)), Ok(false), "{lt}: neither bit is set");
        assert_eq!(run(&p, &packet(20, 0x00)), Ok(false), "{lt}");
        // 1.10.3 tests its accumulator (0) and rejects every packet; master
        // loads the byte, which aborts when it is not captured.
        assert_eq!(run(&p, &packet(8, 0)), Err(Abort), "{lt}: the byte is not captured");
        let never = lower_on(lt, "byte 8 & 0").expect("lowers");
        assert_eq!(run(&never, &packet(20, 0xff)), Ok(false), "{lt}");
        assert_eq!(run(&never, &packet(8, 0)), Err(Abort), "{lt}");
    }
}

#[test]
fn byte_or_is_true_when_the_or_is_nonzero_and_the_byte_is_captured() {
    for lt in ALL {
        let p = lower_on(lt, "byte 8 | 5").expect("lowers");
        assert_eq!(run(&p, &packet(20, 0)), Ok(true), "{lt}");
        // 1.10.3 accepts every packet; master rejects one too short for the byte.
        assert_eq!(run(&p, &packet(8, 0)), Err(Abort), "{lt}");
        let zero = lower_on(lt, "byte 8 | 0").expect("lowers");
        assert_eq!(run(&zero, &packet(20, 0)), Ok(false), "{lt}");
        assert_eq!(run(&zero, &packet(20, 0x80)), Ok(true), "{lt}");
        assert_eq!(run(&zero, &packet(3, 0)), Err(Abort), "{lt}");
        // Under `not`, an abort still rejects.
        let neg = lower_on(lt, "not byte 8 | 0").expect("lowers");
        assert_eq!(run(&neg, &packet(20, 0)), Ok(true), "{lt}");
        assert_eq!(run(&neg, &packet(3, 0)), Err(Abort), "{lt}");
    }
}

#[test]
fn byte_trees_are_masters_programs() {
    let tree = |expr: &str| lower_on(LinkType::EN10MB, expr).expect("lowers").to_string();
    // Master: ldb [8]; jset #0x5 (optimized) / ldb [8]; and #0x5; jeq #0 (negated).
    assert_eq!(tree("byte 8 & 5").trim_end(), "u8[8] & 5 != 0");
    // Master: ldb [8]; or #0x5; jeq #0x0, negated.
    assert_eq!(tree("byte 8 | 5").trim_end(), "not\n  (u8[8] | 5) == 0");
    // Unchanged from 1.10.3.
    assert_eq!(tree("byte 8 = 5").trim_end(), "u8[8] == 5");
}

#[test]
fn ether_proto_lldp_as_master() {
    // 1.10.3: "unknown ether proto 'lldp'"; master: ldh [12]; jeq #0x88cc.
    let p = lower_on(LinkType::EN10MB, "ether proto lldp").expect("lowers");
    assert_eq!(p.to_string(), lower_on(LinkType::EN10MB, "ether proto 0x88cc").expect("lowers").to_string());
    let mut lldp = vec![0u8; 60];
    lldp[12..14].copy_from_slice(&[0x88, 0xcc]);
    assert_eq!(run(&p, &lldp), Ok(true));
    assert_eq!(run(&p, &packet(60, 0)), Ok(false));
    // Still a name, not a keyword: a bare `lldp` is a syntax error, as in master.
    assert!(sift_syntax::parse("lldp").is_err());
}
