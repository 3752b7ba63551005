//! Packet timestamps: the raw value from the file plus its resolution, with
//! conversions that reproduce libpcap 1.10.3 bit for bit.

/// Timestamp precision of a reader's output or a writer's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TsPrecision {
    /// Microseconds (magic 0xa1b2c3d4); tcpdump's default.
    #[default]
    Micro,
    /// Nanoseconds (magic 0xa1b23c4d).
    Nano,
}

impl TsPrecision {
    /// Fractions of a second per second: 10^6 or 10^9.
    pub fn per_second(self) -> u64 {
        match self {
            TsPrecision::Micro => 1_000_000,
            TsPrecision::Nano => 1_000_000_000,
        }
    }
}

/// A packet timestamp exactly as stored in the file.
///
/// pcap stores 32-bit seconds and a 32-bit fraction (µs or ns); pcapng stores
/// a 64-bit tick count in the interface's `if_tsresol` units plus the
/// interface's `if_tsoffset` seconds. No conversion happens when a packet is
/// read; the accessors convert on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Timestamp {
    repr: Repr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Repr {
    /// pcap record with microsecond fraction. `swapped`: the file's byte
    /// order differs from the host's, which changes how libpcap 1.10.3
    /// widens the fields (see `libpcap_timeval`).
    Micro { secs: u32, frac: u32, swapped: bool },
    /// pcap record with nanosecond fraction.
    Nano { secs: u32, frac: u32, swapped: bool },
    /// pcapng: ticks since the epoch (minus the offset) in units of the
    /// raw `if_tsresol` byte `resol`.
    Ticks { ticks: u64, offset: i64, resol: u8 },
}

/// The default pcapng resolution byte: 10^-6.
pub(crate) const DEFAULT_TSRESOL: u8 = 6;

/// Ticks per second for a valid raw `if_tsresol` byte (10^-n for n <= 19,
/// 2^-n for n <= 63 with the top bit set). Invalid bytes are rejected when
/// the interface is read, so they never reach here; they map to 1.
pub(crate) fn ticks_per_second(resol: u8) -> u64 {
    if resol & 0x80 != 0 {
        1u64.checked_shl(u32::from(resol & 0x7f)).unwrap_or(1)
    } else {
        10u64.checked_pow(u32::from(resol)).unwrap_or(1)
    }
}

impl Timestamp {
    /// A pcap timestamp with a microsecond fraction (raw header fields of
    /// a file in the host's byte order).
    pub fn from_pcap_micros(secs: u32, usecs: u32) -> Timestamp {
        Timestamp { repr: Repr::Micro { secs, frac: usecs, swapped: false } }
    }

    /// A pcap timestamp with a nanosecond fraction (raw header fields of a
    /// file in the host's byte order).
    pub fn from_pcap_nanos(secs: u32, nsecs: u32) -> Timestamp {
        Timestamp { repr: Repr::Nano { secs, frac: nsecs, swapped: false } }
    }

    /// A pcap timestamp read from a file; `swapped` tells whether the file's
    /// byte order differs from the host's.
    pub(crate) fn from_pcap(secs: u32, frac: u32, nanos: bool, swapped: bool) -> Timestamp {
        let repr = if nanos {
            Repr::Nano { secs, frac, swapped }
        } else {
            Repr::Micro { secs, frac, swapped }
        };
        Timestamp { repr }
    }

    /// A pcapng timestamp; `resol` is the raw `if_tsresol` option byte
    /// (6 when absent) and must be valid (decimal exponent <= 19, binary
    /// exponent <= 63).
    pub(crate) fn from_ticks(ticks: u64, offset: i64, resol: u8) -> Timestamp {
        Timestamp { repr: Repr::Ticks { ticks, offset, resol } }
    }

    /// The `struct timeval` libpcap 1.10.3 hands to its callers (`tv_sec` as
    /// a 64-bit `time_t`, `tv_usec` as a `long`) when the file is opened with
    /// `precision`. This reproduces libpcap's arithmetic exactly:
    ///
    /// * pcap: libpcap sign-extends the 32-bit seconds and fraction of a file
    ///   in the host's byte order, but zero-extends them when it had to
    ///   byte-swap them (its swap macro yields an unsigned value); the
    ///   fraction is then scaled (×1000 or ÷1000, truncating) as is;
    /// * pcapng: ticks are split with 64-bit wrapping arithmetic, including
    ///   libpcap's overflowing multiplication for fine binary resolutions.
    pub fn libpcap_timeval(&self, precision: TsPrecision) -> (i64, i64) {
        let widen = |v: u32, swapped: bool| if swapped { i64::from(v) } else { i64::from(v as i32) };
        match self.repr {
            Repr::Micro { secs, frac, swapped } => {
                let (sec, frac) = (widen(secs, swapped), widen(frac, swapped));
                match precision {
                    TsPrecision::Micro => (sec, frac),
                    TsPrecision::Nano => (sec, frac * 1000),
                }
            }
            Repr::Nano { secs, frac, swapped } => {
                let (sec, frac) = (widen(secs, swapped), widen(frac, swapped));
                match precision {
                    TsPrecision::Micro => (sec, frac / 1000),
                    TsPrecision::Nano => (sec, frac),
                }
            }
            Repr::Ticks { ticks, offset, resol } => {
                let tsresol = ticks_per_second(resol);
                let user = precision.per_second();
                let sec = (ticks / tsresol).wrapping_add(offset as u64);
                let mut frac = ticks % tsresol;
                let binary = resol & 0x80 != 0;
                if tsresol != user {
                    if binary {
                        frac = frac.wrapping_mul(user) / tsresol;
                    } else if tsresol > user {
                        frac /= tsresol / user;
                    } else {
                        frac *= user / tsresol;
                    }
                }
                (sec as i64, i64::from(frac as i32))
            }
        }
    }

    /// Seconds and microseconds exactly as libpcap 1.10.3 delivers them when
    /// the file is opened with microsecond precision (tcpdump's default), as
    /// the 32-bit values `pcap_dump` writes to a microsecond pcap file.
    pub fn micros(&self) -> (u32, u32) {
        let (s, f) = self.libpcap_timeval(TsPrecision::Micro);
        (s as u32, f as u32)
    }

    /// Seconds and nanoseconds exactly as libpcap 1.10.3 delivers them when
    /// the file is opened with nanosecond precision, as the 32-bit values
    /// `pcap_dump` writes to a nanosecond pcap file.
    pub fn nanos(&self) -> (u32, u32) {
        let (s, f) = self.libpcap_timeval(TsPrecision::Nano);
        (s as u32, f as u32)
    }

    /// The 32-bit seconds and fraction for a pcap record of the given
    /// precision (what [`crate::PcapWriter`] writes).
    pub fn pcap_fields(&self, precision: TsPrecision) -> (u32, u32) {
        match precision {
            TsPrecision::Micro => self.micros(),
            TsPrecision::Nano => self.nanos(),
        }
    }

    /// The exact instant in nanoseconds since the Unix epoch, without
    /// libpcap's truncations: pcap seconds are unsigned (as the format
    /// specifies), an out-of-range fraction is kept as is, pcapng
    /// ticks are divided exactly (sub-nanosecond parts are floored) and the
    /// interface offset is added without wrapping.
    pub fn as_unix_nanos(&self) -> i128 {
        const NS: i128 = 1_000_000_000;
        match self.repr {
            Repr::Micro { secs, frac, .. } => i128::from(secs) * NS + i128::from(frac) * 1000,
            Repr::Nano { secs, frac, .. } => i128::from(secs) * NS + i128::from(frac),
            Repr::Ticks { ticks, offset, resol } => {
                let per = i128::from(ticks_per_second(resol));
                let ticks = i128::from(ticks);
                let secs = ticks / per + i128::from(offset);
                let frac = (ticks % per) * NS / per;
                secs * NS + frac
            }
        }
    }

    /// Ticks per second of the stored value (10^6 or 10^9 for pcap, the
    /// interface resolution for pcapng).
    pub fn resolution(&self) -> u64 {
        match self.repr {
            Repr::Micro { .. } => 1_000_000,
            Repr::Nano { .. } => 1_000_000_000,
            Repr::Ticks { resol, .. } => ticks_per_second(resol),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_micro_and_nano() {
        let t = Timestamp::from_pcap_micros(1_418_145_369, 924_505);
        assert_eq!(t.micros(), (1_418_145_369, 924_505));
        assert_eq!(t.nanos(), (1_418_145_369, 924_505_000));
        assert_eq!(t.as_unix_nanos(), 1_418_145_369_924_505_000);

        let t = Timestamp::from_pcap_nanos(1_418_145_369, 924_505_488);
        assert_eq!(t.micros(), (1_418_145_369, 924_505));
        assert_eq!(t.nanos(), (1_418_145_369, 924_505_488));
        assert_eq!(t.as_unix_nanos(), 1_418_145_369_924_505_488);
    }

    #[test]
    fn libpcap_widening_quirks() {
        // Host byte order: libpcap sign-extends, so a nanosecond field with
        // the top bit set is negative and -1 / 1000 is 0.
        let t = Timestamp::from_pcap_nanos(5, 0xFFFF_FFFF);
        assert_eq!(t.micros(), (5, 0));
        let t = Timestamp::from_pcap_nanos(5, 0x8000_0000);
        assert_eq!(t.micros(), (5, (-2_147_483i32) as u32));
        let t = Timestamp::from_pcap_micros(0x8000_0000, 0);
        assert_eq!(t.libpcap_timeval(TsPrecision::Micro).0, -2_147_483_648);
        assert_eq!(t.as_unix_nanos(), 2_147_483_648 * 1_000_000_000);
        // Other byte order: libpcap's swap yields unsigned values.
        let t = Timestamp::from_pcap(5, 0xFFFF_FFFF, true, true);
        assert_eq!(t.micros(), (5, 4_294_967));
        let t = Timestamp::from_pcap(0x8000_0000, 0, false, true);
        assert_eq!(t.libpcap_timeval(TsPrecision::Micro).0, 2_147_483_648);
        // A microsecond field scaled to nanoseconds keeps its low 32 bits.
        let t = Timestamp::from_pcap(5, 4_000_000_000, false, true);
        assert_eq!(t.libpcap_timeval(TsPrecision::Nano), (5, 4_000_000_000_000));
        assert_eq!(t.nanos().1, (4_000_000_000_000u64 & 0xFFFF_FFFF) as u32);
    }

    #[test]
    fn pcapng_resolutions() {
        // Default microseconds.
        let t = Timestamp::from_ticks(1_234_567_890_123_456, 0, 6);
        assert_eq!(t.micros(), (1_234_567_890, 123_456));
        assert_eq!(t.nanos(), (1_234_567_890, 123_456_000));
        // Nanoseconds, with an offset.
        let t = Timestamp::from_ticks(1_234_567_890_123_456, -5, 9);
        assert_eq!(t.micros(), (1_234_562, 890_123));
        assert_eq!(t.nanos(), (1_234_562, 890_123_456));
        assert_eq!(t.as_unix_nanos(), 1_234_562_890_123_456);
        // 10^-19: the whole value is a fraction.
        let t = Timestamp::from_ticks(1_234_567_890_123_456, 0, 19);
        assert_eq!(t.micros(), (0, 123));
        // 2^-63 with all bits set: libpcap's multiplication wraps.
        let t = Timestamp::from_ticks(u64::MAX, 0, 0x80 | 63);
        assert_eq!(t.nanos(), (1, 1));
        // 2^-10 (1/1024 s ticks).
        let t = Timestamp::from_ticks(1024 * 7 + 512, 0, 0x80 | 10);
        assert_eq!(t.micros(), (7, 500_000));
        assert_eq!(t.as_unix_nanos(), 7_500_000_000);
        assert_eq!(t.resolution(), 1024);
    }
}
