//! Unit tests of lowering on hand-built ASTs.
