//! The code pages of a compiled filter are never writable and executable at
//! once: after compilation the mapping holding the code is `r-xp`, and no
//! mapping of the process is both writable and executable.

use sift_bpf::insn::op::*;
use sift_bpf::Insn;
use sift_jit::JitFilter;
use std::sync::{Mutex, MutexGuard};

/// The tests of this file compile filters one at a time: a test that checks
/// what is left at a dropped filter's address must not see another test's
/// filter placed there in between.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static JIT: Mutex<()> = Mutex::new(());
    JIT.lock().unwrap_or_else(|e| e.into_inner())
}

/// (start, end, permissions) of every mapping in /proc/self/maps.
fn mappings() -> Vec<(usize, usize, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines()
        .filter_map(|line| {
            let mut cols = line.split_whitespace();
            let range = cols.next()?;
            let perms = cols.next()?.to_string();
            let (a, b) = range.split_once('-')?;
            Some((
                usize::from_str_radix(a, 16).ok()?,
                usize::from_str_radix(b, 16).ok()?,
                perms,
            ))
        })
        .collect()
}

#[test]
fn code_pages_are_never_writable_and_executable() {
    let _serial = one_at_a_time();
    if !JitFilter::is_supported() {
        return;
    }
    let prog = [
        Insn::stmt(LD | H | ABS, 12),
        Insn::jump(JMP | JEQ | K, 0x800, 0, 1),
        Insn::stmt(RET | K, 1),
        Insn::stmt(RET | K, 0),
    ];
    let filters: Vec<JitFilter> = (0..8)
        .map(|_| JitFilter::from_program(&prog).expect("compiles"))
        .collect();
    let maps = mappings();
    for f in &filters {
        assert!(f.code_size() > 0);
        let addr = f.code_addr();
        let (_, _, perms) = maps
            .iter()
            .find(|(a, b, _)| (*a..*b).contains(&addr))
            .unwrap_or_else(|| panic!("no mapping holds the code at {addr:#x}"));
        assert_eq!(&perms[..3], "r-x", "code mapping is {perms}");
        let mut packet = [0u8; 14];
        packet[12] = 8;
        assert_eq!(f.run(&packet, 14), 1);
    }
    for (a, b, perms) in &maps {
        assert!(
            !(perms.contains('w') && perms.contains('x')),
            "{a:#x}-{b:#x} is {perms}"
        );
    }
    // Dropping removes the code: its pages are no longer executable
    // (unmapped or back in the pool as read + write pages), or (code file)
    // its block is filled with `int3`.
    let (addr, len) = (filters[0].code_addr(), filters[0].code_size());
    drop(filters);
    let executable = mappings()
        .iter()
        .any(|(a, b, p)| (*a..*b).contains(&addr) && p.contains('x'));
    if executable {
        use std::io::{Read, Seek, SeekFrom};
        let mut mem = std::fs::File::open("/proc/self/mem").expect("/proc/self/mem");
        mem.seek(SeekFrom::Start(addr as u64)).expect("seek");
        let mut bytes = vec![0u8; len];
        mem.read_exact(&mut bytes).expect("read");
        assert!(bytes.iter().all(|&b| b == 0xcc), "dropped code still there: {bytes:02x?}");
    }
}

#[test]
fn invalid_programs_are_refused() {
    let _serial = one_at_a_time();
    assert!(JitFilter::from_program(&[]).is_err());
    assert!(JitFilter::from_program(&[Insn::stmt(0x08, 0), Insn::stmt(RET | K, 1)]).is_err());
    assert!(JitFilter::from_program(&[Insn::stmt(ST, 16), Insn::stmt(RET | K, 1)]).is_err());
    assert!(
        JitFilter::from_program(&[Insn::jump(JMP | JEQ | K, 0, 5, 0), Insn::stmt(RET | K, 1)])
            .is_err()
    );
}

#[test]
fn batch_matches_single_runs() {
    let _serial = one_at_a_time();
    if !JitFilter::is_supported() {
        return;
    }
    let prog = [
        Insn::stmt(LD | B | ABS, 0),
        Insn::jump(JMP | JGT | K, 10, 0, 1),
        Insn::stmt(RET | A, 0),
        Insn::stmt(RET | K, 0),
    ];
    let f = JitFilter::from_program(&prog).expect("compiles");
    let bufs: Vec<Vec<u8>> = (0u8..50).map(|i| vec![i; usize::from(i % 3)]).collect();
    let packets: Vec<(&[u8], u32)> = bufs
        .iter()
        .map(|b| (b.as_slice(), b.len() as u32))
        .collect();
    let mut out = vec![u32::MAX; packets.len() + 3];
    f.run_batch(&packets, &mut out);
    for (i, (d, w)) in packets.iter().enumerate() {
        assert_eq!(out[i], f.run(d, *w));
    }
    assert_eq!(&out[packets.len()..], [u32::MAX; 3]);
    let mut short = [0u32; 2];
    f.run_batch(&packets, &mut short);
    f.run_batch(&[], &mut short);
    // The counting entry point agrees with one call per packet, whatever
    // holds the packets (here: the buffers themselves).
    let expected = packets.iter().filter(|(d, w)| f.run(d, *w) != 0).count() as u64;
    assert_eq!(f.count_matches(&bufs, |b| (b.as_slice(), b.len() as u32)), expected);
    assert_eq!(f.count_matches(&bufs[..2], |b| (b.as_slice(), b.len() as u32)), 0);
    assert_eq!(f.count_matches(&[] as &[Vec<u8>], |b| (b.as_slice(), 0)), 0);
}

#[test]
fn filters_are_send_and_sync() {
    let _serial = one_at_a_time();
    fn check<T: Send + Sync>() {}
    check::<JitFilter>();
    if !JitFilter::is_supported() {
        return;
    }
    let prog = [Insn::stmt(LD | W | LEN, 0), Insn::stmt(RET | A, 0)];
    let f = JitFilter::from_program(&prog).expect("compiles");
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let f = &f;
            s.spawn(move || assert_eq!(f.run(&[], t), t));
        }
    });
}

#[test]
fn reused_and_large_code_pages_stay_w_xor_x() {
    let _serial = one_at_a_time();
    if !JitFilter::is_supported() {
        return;
    }
    let small = [Insn::stmt(LD | B | ABS, 0), Insn::stmt(RET | A, 0)];
    // A program whose code spans several pages (its own mapping).
    let mut large = vec![Insn::stmt(LD | IMM, 0)];
    large.extend(std::iter::repeat_n(Insn::stmt(ALU | ADD | K, 1000), 3000));
    large.push(Insn::stmt(RET | A, 0));
    for round in 0..50 {
        let filters: Vec<JitFilter> = (0..20)
            .map(|_| JitFilter::from_program(&small).expect("compiles"))
            .collect();
        let big = JitFilter::from_program(&large).expect("compiles");
        assert!(big.code_size() > 4096);
        if round % 10 == 0 {
            let maps = mappings();
            for f in filters.iter().chain([&big]) {
                let (a, b) = (f.code_addr(), f.code_addr() + f.code_size() - 1);
                for addr in [a, b] {
                    let (_, _, perms) = maps
                        .iter()
                        .find(|(s, e, _)| (*s..*e).contains(&addr))
                        .expect("mapped");
                    assert_eq!(&perms[..3], "r-x");
                }
            }
            assert!(!maps
                .iter()
                .any(|(_, _, p)| p.contains('w') && p.contains('x')));
        }
        for (i, f) in filters.iter().enumerate() {
            assert_eq!(f.run(&[i as u8], 1), i as u32);
        }
        assert_eq!(big.run(&[], 0), 3_000_000);
    }
}
