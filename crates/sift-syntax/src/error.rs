//! Errors with spans, rendered with a caret under the offending text.

use crate::span::Span;
use std::fmt;

/// An error in a filter expression: what is wrong and where.
///
/// Used by the parser and by later stages (lowering reports unsupported
/// primitives and bad values with the span of the primitive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What is wrong, as a sentence fragment (`unknown port 'foo'`).
    pub message: String,
    /// Where in the filter text. An empty span at the end of the text means
    /// "unexpected end of expression".
    pub span: Span,
}

impl Error {
    /// An error with `message` at `span`.
    pub fn new(message: impl Into<String>, span: Span) -> Error {
        Error { message: message.into(), span }
    }

    /// Renders the error for a terminal: the filter text (tabs and newlines
    /// shown as spaces, so the caret lines up), a line of `^` under the span,
    /// then the message.
    ///
    /// ```text
    /// tcp port 80 and hots 10.0.0.1
    ///                 ^^^^
    /// syntax error: unexpected 'hots'
    /// ```
    pub fn render(&self, source: &str) -> String {
        let shown: String = source
            .chars()
            .map(|c| if c.is_whitespace() { ' ' } else { c })
            .collect();
        let start = self.span.start as usize;
        let end = (self.span.end as usize).max(start + 1);
        // Column = number of chars before the byte offset.
        let col = source.get(..start.min(source.len())).map_or(0, |s| s.chars().count());
        let width = source
            .get(start.min(source.len())..end.min(source.len()))
            .map_or(1, |s| s.chars().count().max(1));
        format!("{shown}\n{}{}\n{}", " ".repeat(col), "^".repeat(width), self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
