//! Parameters and responses converted once per distinct input.
//!
//! An API writes the same parameters and responses again and again
//! (Kubernetes 1.27: 4,177 parameters inline, 102 different; 1,819
//! responses, 255 different). Equal inputs convert to equal outputs, as
//! long as converting one takes no note (a note names the spot) and the
//! same media types are produced: such a conversion is kept as a
//! [`Shared`] node and placed at every spot where the same input stands,
//! rendered once for all of them. What converting it did besides is
//! either the same for every copy (a reference resolved, a schema
//! hoisted, kept by the context) or counted again ([`Kept::charges`]).
//!
//! The lookup is bounded whatever the input: inputs are found by a
//! fingerprint and then compared whole, at most [`BUCKET`] of them per
//! fingerprint (a fixed-seed hash, so a hostile document may make them
//! collide) and at most [`ENTRIES`] in all; past either bound an input is
//! simply converted where it stands.

use std::collections::BTreeMap;

use crate::json::tree::{Node, Number, Object, Shared};

use super::Context;

/// Inputs kept per fingerprint.
const BUCKET: usize = 4;

/// Inputs kept in all: Kubernetes has a few hundred different ones.
pub(super) const ENTRIES: usize = 4096;

/// The bytes a shared node placed at a second spot keeps, rendered, for
/// the spots after: at most this many for one node, and
/// [`RENDERED_ALL`] for all of one conversion. Kubernetes' take about
/// 0.5 MB in all, none over 4 KB. Past either bound a node is written from
/// the tree at each spot, as an unshared one is, so that a hostile
/// document (one long string at many spots) cannot make the conversion
/// hold bytes of an output the split has not bounded yet.
pub(super) const RENDERED_EACH: usize = 64 * 1024;

/// See [`RENDERED_EACH`].
pub(super) const RENDERED_ALL: usize = 4 * 1024 * 1024;

impl Context<'_> {
    /// Keeps `shared`'s bytes, rendered, within the bounds above.
    pub(super) fn keep_rendered(&mut self, shared: &Shared<'_>) {
        let kept = shared.keep_rendered(self.rendered_left.min(RENDERED_EACH));
        self.rendered_left -= kept;
    }
}

/// Converted inputs of one kind (parameters, responses).
#[derive(Default)]
pub(super) struct Reuse<'a> {
    by_fingerprint: BTreeMap<u64, Vec<Kept<'a>>>,
    entries: usize,
}

/// One input and what it converted to.
pub(super) struct Kept<'a> {
    input: &'a Object<'a>,
    /// The media types it was converted for (a response's `content`).
    media: Vec<&'a str>,
    /// The conversion.
    pub(super) shared: Shared<'a>,
    /// The copies of values the conversion counted
    /// (`Context::charge_values`): so many values, so many times; counted
    /// again, the same way, for each copy placed.
    pub(super) charges: (usize, usize),
}

impl<'a> Reuse<'a> {
    /// The conversion kept for an input equal to `input` converted for
    /// `media`, whose fingerprint is `print`.
    pub(super) fn get(&self, print: u64, input: &Object<'_>, media: &[&str]) -> Option<&Kept<'a>> {
        let bucket = self.by_fingerprint.get(&print)?;
        bucket.iter().find(|k| k.media == media && same_object(k.input, input))
    }

    /// True when a conversion of an input with fingerprint `print` may
    /// still be kept.
    pub(super) fn has_room(&self, print: u64) -> bool {
        self.entries < ENTRIES
            && self.by_fingerprint.get(&print).is_none_or(|bucket| bucket.len() < BUCKET)
    }

    /// Keeps `shared` as the conversion of `input` for `media` (which
    /// [`Reuse::get`] did not find), if there is room.
    pub(super) fn keep(
        &mut self,
        print: u64,
        input: &'a Object<'a>,
        media: &[&'a str],
        shared: Shared<'a>,
        charges: (usize, usize),
    ) {
        if self.has_room(print) {
            let kept = Kept { input, media: media.to_vec(), shared, charges };
            self.by_fingerprint.entry(print).or_default().push(kept);
            self.entries += 1;
        }
    }
}

/// A hash of `input` consistent with its equality: equal objects get the
/// same fingerprint. Strings are taken by their length and first and
/// last eight bytes, not whole, and mixed by a multiply each: hashing
/// every byte of the parameters' long descriptions cost more than
/// converting them. The comparison that follows tells apart what the
/// fingerprint does not.
pub(super) fn fingerprint(input: &Object<'_>, media: &[&str]) -> u64 {
    let print = media.iter().fold(SEED, |print, m| text_print(print, m));
    object_print(print, input, 0)
}

const SEED: u64 = 0x243F_6A88_85A3_08D3;

fn mix(print: u64, word: u64) -> u64 {
    (print ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

fn object_print(print: u64, object: &Object<'_>, depth: usize) -> u64 {
    let mut print = mix(print, object.len() as u64);
    for (key, value) in object {
        print = node_print(text_print(print, key), value, depth + 1);
    }
    print
}

/// Depth past which nested values are left out of the fingerprint (they
/// are still compared): a parameter's are two or three deep, a hostile
/// one's as deep as the parser allows, which recursion must not follow.
const DEPTH: usize = 8;

fn node_print(print: u64, node: &Node<'_>, depth: usize) -> u64 {
    match node {
        Node::Null => mix(print, 1),
        Node::Bool(b) => mix(print, 2 + u64::from(*b)),
        // Equal numbers may be written differently (`1.0`, `1`): the kind
        // alone, and the comparison decides.
        Node::Number(_) => mix(print, 4),
        Node::String(s) => text_print(mix(print, 5), s),
        Node::Array(items) => {
            let mut print = mix(print, 6 ^ (items.len() as u64) << 8);
            if depth < DEPTH {
                for item in items {
                    print = node_print(print, item, depth + 1);
                }
            }
            print
        }
        Node::Object(o) if depth < DEPTH => object_print(mix(print, 7), o, depth),
        Node::Object(_) => mix(print, 7),
        Node::Shared(shared) => node_print(print, shared.node(), depth),
    }
}

/// A text's length and its first and last eight bytes.
fn text_print(print: u64, text: &str) -> u64 {
    let bytes = text.as_bytes();
    let (first, last) = match (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        (Some(first), Some(last)) => (u64::from_le_bytes(*first), u64::from_le_bytes(*last)),
        _ => (bytes.iter().fold(0, |w, &b| w << 8 | u64::from(b)), 0),
    };
    mix(mix(mix(print, bytes.len() as u64), first), last)
}

/// True when `a` and `b` convert to the same bytes: equal, and each
/// number written the same (`Node`'s equality takes `0.0` for `-0.0`,
/// which are written differently).
fn same_object(a: &Object<'_>, b: &Object<'_>) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
}

fn same(a: &Node<'_>, b: &Node<'_>) -> bool {
    match (a.resolved(), b.resolved()) {
        (Node::Null, Node::Null) => true,
        (Node::Bool(x), Node::Bool(y)) => x == y,
        (Node::Number(x), Node::Number(y)) => same_number(x, y),
        (Node::String(x), Node::String(y)) => x == y,
        (Node::Array(x), Node::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Node::Object(x), Node::Object(y)) => same_object(x, y),
        _ => false,
    }
}

fn same_number(a: &Number<'_>, b: &Number<'_>) -> bool {
    match (a, b) {
        (Number::Integer(x), Number::Integer(y)) => x == y,
        (Number::Big(x), Number::Big(y)) => x == y,
        (Number::Parsed(x), Number::Parsed(y)) => {
            (x.as_u64(), x.as_i64(), x.as_f64().map(f64::to_bits))
                == (y.as_u64(), y.as_i64(), y.as_f64().map(f64::to_bits))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::tree::parse;

    fn object(text: &str) -> Node<'_> {
        parse(text.as_bytes()).unwrap()
    }

    fn shared(text: &str) -> Shared<'_> {
        Shared::new(object(text)).unwrap()
    }

    #[test]
    fn equal_inputs_are_found_and_look_alikes_are_told_apart() {
        let a = object(r#"{"name":"x","description":"aaaaaaaaXaaaaaaaa","default":0.0}"#);
        let b = object(r#"{"name":"x","description":"aaaaaaaaXaaaaaaaa","default":0.0}"#);
        // The same length, first and last bytes: the same fingerprint.
        let middle = object(r#"{"name":"x","description":"aaaaaaaaYaaaaaaaa","default":0.0}"#);
        // Equal as numbers, written differently.
        let zero = object(r#"{"name":"x","description":"aaaaaaaaXaaaaaaaa","default":-0.0}"#);
        let [a, b, middle, zero] = [&a, &b, &middle, &zero].map(|n| n.as_object().unwrap());
        assert_eq!(fingerprint(a, &[]), fingerprint(b, &[]));
        assert_eq!(fingerprint(a, &[]), fingerprint(middle, &[]));
        assert_eq!(fingerprint(a, &[]), fingerprint(zero, &[]));
        let mut reuse = Reuse::default();
        let print = fingerprint(a, &["application/json"]);
        reuse.keep(print, a, &["application/json"], shared("{}"), (3, 2));
        let found = reuse.get(print, b, &["application/json"]).expect("an equal input");
        assert_eq!(found.charges, (3, 2));
        assert!(reuse.get(print, middle, &["application/json"]).is_none());
        assert!(reuse.get(print, zero, &["application/json"]).is_none());
        assert!(reuse.get(print ^ 1, b, &["application/json"]).is_none());
        // Converted for other media types: another conversion.
        assert!(reuse.get(print, b, &["application/yaml"]).is_none());
        assert!(reuse.get(print, b, &[]).is_none());
        assert_ne!(fingerprint(a, &["application/json"]), fingerprint(a, &["application/yaml"]));
    }

    #[test]
    fn inputs_kept_are_bounded_per_fingerprint_and_in_all() {
        let texts: Vec<String> = (0..=ENTRIES).map(|i| format!(r#"{{"name":"p{i}"}}"#)).collect();
        let nodes: Vec<Node<'_>> = texts.iter().map(|t| object(t)).collect();
        let inputs: Vec<&Object<'_>> = nodes.iter().map(|n| n.as_object().unwrap()).collect();
        let mut reuse = Reuse::default();
        // A hostile document's colliding inputs: a few kept, then no more,
        // so that no lookup compares more than `BUCKET` of them.
        for input in &inputs[..BUCKET + 3] {
            reuse.keep(7, input, &[], shared("{}"), (0, 0));
        }
        assert_eq!(reuse.by_fingerprint[&7].len(), BUCKET);
        assert!(!reuse.has_room(7));
        assert!(reuse.get(7, inputs[BUCKET], &[]).is_none());
        for input in &inputs[BUCKET..] {
            reuse.keep(fingerprint(input, &[]), input, &[], shared("{}"), (0, 0));
        }
        assert_eq!(reuse.entries, ENTRIES);
        assert!(!reuse.has_room(12345));
    }

    #[test]
    fn deep_inputs_are_fingerprinted_without_following_every_level() {
        let deep = format!("{}{}", r#"{"a":"#.repeat(100), "1}".to_string() + &"}".repeat(99));
        let node = object(&deep);
        let input = node.as_object().unwrap();
        assert_eq!(fingerprint(input, &[]), fingerprint(input, &[]));
        assert!(same_object(input, input));
    }
}
