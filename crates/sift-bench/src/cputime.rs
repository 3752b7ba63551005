//! The calling thread's CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`),
//! for timing samples on a machine shared with other work: time spent
//! waiting for a CPU is left out.

/// Nanoseconds of CPU time the calling thread has used; `None` if the
/// clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame; the
    // call writes only to it and has no other memory-safety precondition.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}
