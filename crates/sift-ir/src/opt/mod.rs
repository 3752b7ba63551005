//! The optimizer: rewrites a [`Pred`] into an equivalent one that evaluates
//! fewer tests, with exactly the semantics of [`crate::pred`] (pure tests,
//! left-to-right short-circuit, an abort anywhere rejects the packet), so
//! verdicts never change, truncated packets included.
//!
//! A fixed pipeline of passes, each one walk over the tree (no fixpoint):
//!
//! 1. [`fold`]: constant folding and flattening;
//! 2. [`factor`]: alternatives of an `or` that start with the same test are
//!    brought together (past alternatives whose first test excludes theirs)
//!    and the test is factored out; `and` distributes over an `or` whose
//!    alternatives start with exclusive tests (bounded copying);
//! 3. [`facts`]: path facts: a test already decided on the path becomes
//!    `true`/`false`, tests that cannot abort and whose outcome is not
//!    needed are dropped, non-aborting tests of the same value are grouped;
//! 4. [`factor`] once more when the first round's path facts changed
//!    something (they expose common first tests, e.g. `u8[23] == 6` once
//!    `ip` is known), and [`facts`] once more if that factoring changed
//!    something.
//!
//! What a backend gets: a tree in which consecutive tests of the same
//! value (same load) are adjacent wherever they may be reordered, so that
//! the value can be loaded once for all of them; and fewer, shallower tests.
//!
//! ```
//! use sift_ir::{opt, Pred, Size, Value};
//! let ip = Pred::eq(Value::load(Size::Half, 12), 0x800);
//! let ip6 = Pred::eq(Value::load(Size::Half, 12), 0x86dd);
//! // ip and ip6: the second test is decided by the first.
//! assert_eq!(opt::optimize(&ip.clone().and(ip6)), Pred::False);
//! ```

pub mod analysis;
pub mod factor;
pub mod facts;
pub mod fold;
mod numbering;

use crate::pred::Pred;

/// Which passes run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptOptions {
    /// Factoring and distribution (pass 2).
    pub factor: bool,
    /// Path facts (pass 3).
    pub facts: bool,
    /// Run factoring and path facts a second time.
    pub second_round: bool,
}

impl Default for OptOptions {
    fn default() -> Self {
        OptOptions { factor: true, facts: true, second_round: true }
    }
}

/// Optimizes with every pass.
pub fn optimize(p: &Pred) -> Pred {
    optimize_with(p, &OptOptions::default())
}

/// Optimizes with the passes `opts` selects.
pub fn optimize_with(p: &Pred, opts: &OptOptions) -> Pred {
    let folded = fold::fold_ref(p);
    let size = analysis::size(&folded);
    run(folded, size, opts, None)
}

/// [`optimize`], consuming the predicate (saves copying it).
pub fn optimize_owned(p: Pred) -> Pred {
    let (folded, size) = fold::fold_sized(p);
    run(folded, size, &OptOptions::default(), None)
}

/// The predicate after each pass, named, in order (for `sift explain` and
/// tests); the last one is the optimizer's result. The passes listed are
/// the ones that ran (no second round when the first one's path facts
/// changed nothing, no second path facts when the second factoring
/// changed nothing).
pub fn stages(p: &Pred, opts: &OptOptions) -> Vec<(&'static str, Pred)> {
    let mut out = Vec::new();
    let folded = fold::fold_ref(p);
    let size = analysis::size(&folded);
    run(folded, size, opts, Some(&mut |name, q: &Pred| out.push((name, q.clone()))));
    out
}

/// Gets each pass's name and result (for [`stages`]).
type Seen<'a> = &'a mut dyn FnMut(&'static str, &Pred);

/// The passes after [`fold`], which gave `folded` (of [`analysis::size`]
/// `size`); `seen` (for [`stages`]) gets every intermediate tree.
fn run(folded: Pred, size: usize, opts: &OptOptions, mut seen: Option<Seen<'_>>) -> Pred {
    let mut seen = |name, q: &Pred| {
        if let Some(f) = seen.as_mut() {
            f(name, q);
        }
    };
    let mut cur = folded;
    seen("fold", &cur);
    // Distribution may copy up to twice the tree plus a little.
    let mut budget = 2 * size + 1024;
    let rounds = if opts.second_round { 2 } else { 1 };
    for round in 0..rounds {
        // Whether each pass of the round may have changed the tree: each
        // pass says so whenever its result may differ from its input.
        let (mut factored, mut simplified) = (false, false);
        if opts.factor {
            cur = factor::factor_noting(cur, &mut budget, &mut factored);
            seen("factor", &cur);
        }
        // Path facts again on their own output would find little: only
        // what a node's collapse made possible (an `or` reduced to one
        // operand stands where aborts count differently): 8 of the 50,580
        // compiled corpus cases lose 2-4 cBPF instructions, 2 gain as much
        // (2026-11-26); the large filters save a tenth of their compile.
        if round > 0 && opts.factor && !factored {
            break;
        }
        if opts.facts {
            cur = facts::simplify_numbered(cur, round > 0, &mut simplified);
            seen("facts", &cur);
        }
        // The second round is for what path facts exposed (common first
        // tests once a protocol is known). When they changed nothing, it
        // would factor factoring's own output again: that finds nothing
        // more, except rarely a few alternatives it could regroup, which
        // the cBPF optimizer merges anyway (cBPF identical over 50,580
        // compiled corpus cases, 2026-11-26); path facts on their own
        // output find nothing.
        let exposed = if opts.facts { simplified } else { factored };
        if !exposed {
            break;
        }
    }
    cur
}

#[cfg(test)]
mod tests;
