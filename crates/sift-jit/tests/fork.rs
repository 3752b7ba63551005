#![cfg(all(target_arch = "x86_64", target_os = "linux"))]
//! After `fork`, parent and child compile filters independently: the code
//! of one never replaces the code of the other, even in a block that was
//! free in both when they forked. (A test binary of its own: it forks.)

use sift_bpf::insn::op::*;
use sift_bpf::Insn;
use sift_jit::JitFilter;

fn ret(k: u32) -> JitFilter {
    JitFilter::from_program(&[Insn::stmt(LD | W | LEN, 0), Insn::stmt(RET | K, k)]).expect("compiles")
}

#[test]
fn parent_and_child_code_stay_apart() {
    if !JitFilter::is_supported() {
        return;
    }
    // A block used once, then free in both processes.
    let a = ret(1);
    let kept = ret(7);
    drop(a);
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only compiles, runs and exits (`_exit`).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let mut b = [0u8; 1];
        // SAFETY: waits for the parent's byte.
        unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) };
        let child = ret(2);
        let code = if child.run(&[], 0) == 2 && kept.run(&[], 0) == 7 { 0 } else { 1 };
        // SAFETY: leaves the child without running the harness.
        unsafe { libc::_exit(code) };
    }
    // The parent compiles first (likely into the block both have free),
    // then the child does.
    let parent = ret(3);
    // SAFETY: one byte to the child.
    unsafe { libc::write(fds[1], [1u8].as_ptr().cast(), 1) };
    let mut status = 0;
    // SAFETY: waits for our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child saw wrong code");
    assert_eq!(parent.run(&[], 0), 3);
    assert_eq!(kept.run(&[], 0), 7);
    let again = ret(4);
    assert_eq!(again.run(&[], 0), 4);
    assert_eq!(parent.run(&[], 0), 3);
}
