//! An object's repeated keys, resolved as `serde_json::Map` (an
//! `IndexMap`) resolves them: the first occurrence keeps its place, the
//! last value wins. For the objects the parser reads and those the
//! converter builds from lists the input makes as long as it likes: a
//! small object's keys are compared pairwise, a larger one's sorted, and
//! never is each member searched for among those before it.

use super::{Node, Text};

/// Objects up to this size are checked for repeated keys pairwise; larger
/// ones by sorting their keys.
const PAIRWISE_LIMIT: usize = 16;

/// True when two of `members` have the same key.
pub(super) fn has_repeated_keys(members: &[(Text<'_>, Node<'_>)]) -> bool {
    if members.len() <= PAIRWISE_LIMIT {
        let mut rest = members;
        while let Some(((key, _), after)) = rest.split_first() {
            if after.iter().any(|(other, _)| other == key) {
                return true;
            }
            rest = after;
        }
        false
    } else {
        let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        keys.windows(2).any(|w| w.first() == w.last())
    }
}

/// Repeated keys resolved as `serde_json::Map` resolves them: the first
/// occurrence keeps its place, the last value wins.
///
/// The members' positions are sorted by key once, rather than the members
/// kept so far searched for each key: an object of 50,000 members with one
/// key repeated (730 KB of JSON) took 2.4 s that way.
pub(super) fn last_value_wins<'a>(members: Vec<(Text<'a>, Node<'a>)>) -> Vec<(Text<'a>, Node<'a>)> {
    let key = |i: usize| members.get(i).map(|(k, _)| k.as_str());
    let mut order: Vec<usize> = (0..members.len()).collect();
    // Stable: the occurrences of a key stay in input order.
    order.sort_by(|&a, &b| key(a).cmp(&key(b)));
    // At each key's first occurrence, where its last one is.
    let mut last_of: Vec<Option<usize>> = vec![None; members.len()];
    for same in order.chunk_by(|&a, &b| key(a) == key(b)) {
        if let (Some(&first), Some(&last)) = (same.first(), same.last())
            && let Some(slot) = last_of.get_mut(first)
        {
            *slot = Some(last);
        }
    }
    let mut slots: Vec<Option<(Text<'a>, Node<'a>)>> = members.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(last_of.iter().flatten().count());
    for (first, last) in last_of.into_iter().enumerate() {
        let Some(last) = last else { continue };
        let Some((key, own)) = slots.get_mut(first).and_then(Option::take) else { continue };
        let value = if last == first {
            Some(own)
        } else {
            slots.get_mut(last).and_then(Option::take).map(|(_, v)| v)
        };
        if let Some(value) = value {
            out.push((key, value));
        }
    }
    out
}
