//! The error type of the reader: what went wrong and where.

use std::fmt;

/// Coarse classification of an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the input failed (I/O error, mapping failure).
    Io,
    /// The input is not a pcap or pcapng file (unknown magic).
    NotACapture,
    /// A well-formed file of a version or variant libpcap refuses.
    Unsupported,
    /// The input ends in the middle of a header, record or block.
    Truncated,
    /// A header, record or block is inconsistent (bad lengths, options, ...).
    Malformed,
}

/// A read error: a description of the damage and the byte offset in the
/// input where the offending structure starts.
///
/// `Display` gives `"<what>, at byte offset N"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Boxed so that `Result<Packet, Error>` stays small on the hot path.
    inner: Box<Inner>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    message: String,
    offset: u64,
}

impl Error {
    /// Builds an error (used by the parsers; errors are rare, so the message
    /// is an owned string).
    pub(crate) fn new(kind: ErrorKind, offset: usize, message: impl Into<String>) -> Error {
        Error {
            inner: Box::new(Inner {
                kind,
                message: message.into(),
                offset: offset as u64,
            }),
        }
    }

    pub(crate) fn io(err: &std::io::Error) -> Error {
        Error::new(ErrorKind::Io, 0, format!("read error: {err}"))
    }

    /// Byte offset in the input of the structure that could not be read.
    pub fn offset(&self) -> u64 {
        self.inner.offset
    }

    /// The class of the error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The description without the offset.
    pub fn message(&self) -> &str {
        &self.inner.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, at byte offset {}", self.inner.message, self.inner.offset)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_offset() {
        let e = Error::new(ErrorKind::Truncated, 40, "truncated record header");
        assert_eq!(e.to_string(), "truncated record header, at byte offset 40");
        assert_eq!(e.offset(), 40);
        assert_eq!(e.kind(), ErrorKind::Truncated);
        assert_eq!(e.message(), "truncated record header");
    }
}
