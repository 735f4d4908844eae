//! YAML → [`Node`] tree under an expansion budget.
//!
//! YAML aliases let a small file stand for a huge document: one anchored
//! list of 100,000 items reused 100,000 times is 500 KB of text and ten
//! billion values. The YAML library refuses deeply nested alias chains but
//! not such wide reuse, so the document is built here, counting as it goes,
//! and refused as soon as it outgrows what its own text could spell
//! without aliases. Memory stays a small multiple of the input, whatever
//! the input says.
//!
//! The tree is built directly rather than through a `serde_json::Value`:
//! a `Value` holds no integer beyond 64 bits, and YAML documents do carry
//! them (`maximum: 18446744073709551616`, an `enum` of
//! `-9223372036854776000` as a JavaScript tool printed it). Those become
//! [`Number::Big`], written back exactly as the integer reads. Integers
//! beyond 128 bits are read by the YAML library as floats and stay floats.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;

use crate::json::tree::{Node, Number, Object, Text};

/// What one value costs against the budget, beside its string bytes: about
/// what a value of a tree takes in memory.
const VALUE_COST: usize = 16;

/// Budget beyond the input's own size, for small documents.
const BUDGET_SLACK: usize = 1 << 20;

/// The expansion budget for `len` bytes of YAML: enough for any document
/// without aliases (a value spelt with two bytes, `1,`, costs
/// [`VALUE_COST`]), so only aliases can exceed it.
#[must_use]
pub fn budget_for(len: usize) -> usize {
    len.saturating_mul(VALUE_COST / 2).saturating_add(BUDGET_SLACK)
}

/// Why YAML could not be read.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// Not YAML, or YAML JSON cannot hold (a mapping key that is not a
    /// scalar, a repeated key, a non-finite number).
    #[error(transparent)]
    Syntax(#[from] serde_yaml_ng::Error),
    /// The document, its aliases expanded, is larger than the budget.
    #[error(
        "the document expands (through YAML aliases) to more than {budget} bytes of values; \
         refused"
    )]
    TooLarge {
        /// The budget that was exceeded.
        budget: usize,
    },
}

/// Reads one YAML document as a tree owning its strings, refusing it once
/// its expanded size passes `budget` (see [`budget_for`]).
///
/// # Errors
/// [`YamlError`].
pub fn from_slice(bytes: &[u8], budget: usize) -> Result<Node<'static>, YamlError> {
    let spent = Cell::new(0usize);
    let seed = Bounded { spent: &spent, budget };
    match seed.deserialize(serde_yaml_ng::Deserializer::from_slice(bytes)) {
        Ok(value) => Ok(value),
        // The budget error travels through the YAML library as a custom
        // message; the counter says which it was.
        Err(_) if spent.get() > budget => Err(YamlError::TooLarge { budget }),
        Err(e) => Err(YamlError::Syntax(e)),
    }
}

/// A value under construction, charged to a shared counter.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    spent: &'a Cell<usize>,
    budget: usize,
}

impl Bounded<'_> {
    fn charge<E: de::Error>(&self, bytes: usize) -> Result<(), E> {
        let spent = self.spent.get().saturating_add(VALUE_COST).saturating_add(bytes);
        self.spent.set(spent);
        if spent > self.budget {
            return Err(E::custom("expansion budget exceeded"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Node<'static>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'static>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// An integer as its decimal text, for one that does not fit 64 bits (the
/// YAML library hands those over as 128-bit integers).
fn big(text: String) -> Node<'static> {
    Node::Number(Number::Big(Text::from(text)))
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Node<'static>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value JSON can hold")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'static>, E> {
        self.charge(0)?;
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node<'static>, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node<'static>, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node<'static>, E> {
        self.charge(0)?;
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node<'static>, E> {
        self.charge(0)?;
        Ok(Node::Number(Number::Parsed(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node<'static>, E> {
        self.charge(0)?;
        Ok(Node::Number(Number::Parsed(v.into())))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node<'static>, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => {
                self.charge(0)?;
                Ok(big(v.to_string()))
            }
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node<'static>, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => {
                self.charge(0)?;
                Ok(big(v.to_string()))
            }
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node<'static>, E> {
        self.charge(0)?;
        serde_json::Number::from_f64(v)
            .map(|n| Node::Number(Number::Parsed(n)))
            .ok_or_else(|| E::custom(format!("{v} is not a number JSON can hold")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node<'static>, E> {
        self.charge(v.len())?;
        Ok(Node::String(Text::from(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node<'static>, E> {
        self.charge(v.len())?;
        Ok(Node::String(Text::from(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'static>, A::Error> {
        self.charge(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'static>, A::Error> {
        self.charge(0)?;
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(Key(self))? {
            let value = map.next_value_seed(self)?;
            members.push((Text::from(key), value));
        }
        // Repeated keys are found once the mapping is read, by sorting its
        // keys: `Object` looks keys up linearly, and checking each key as it
        // comes would be quadratic in the size of a mapping (a document's
        // `paths` or `definitions` has thousands).
        let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        if let Some(pair) = keys.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(de::Error::custom(format!("duplicate entry with key \"{}\"", pair[0])));
        }
        Ok(Node::Object(Object::from_unique(members)))
    }
}

/// A mapping key: a scalar, as the string JSON would write for it
/// (`200:` is the response code `"200"`).
struct Key<'a>(Bounded<'a>);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        self.visit_string(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        self.visit_string(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        self.visit_string(v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        self.visit_string(v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        self.visit_string(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        if !v.is_finite() {
            return Err(E::custom(format!("{v} cannot be a JSON object key")));
        }
        self.visit_string(v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        self.visit_string("null".to_owned())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        self.0.charge(v.len())?;
        Ok(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        self.0.charge(v.len())?;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn read(text: &str) -> Result<Value, YamlError> {
        from_slice(text.as_bytes(), budget_for(text.len())).map(|n| n.to_value())
    }

    fn render(text: &str) -> String {
        let node = from_slice(text.as_bytes(), budget_for(text.len())).unwrap();
        String::from_utf8(node.to_vec()).unwrap()
    }

    // Issue 14, cause 4: such integers made the whole document refused.
    #[test]
    fn integers_beyond_64_bits_are_kept_as_written() {
        assert_eq!(
            render("a: -9223372036854776000\nb: 18446744073709551616\nc: [-9223372036854775809]\n"),
            r#"{"a":-9223372036854776000,"b":18446744073709551616,"c":[-9223372036854775809]}"#
        );
    }

    #[test]
    fn integers_within_64_bits_are_written_as_before() {
        assert_eq!(
            render("a: -9223372036854775808\nb: 18446744073709551615\nc: 0x10\n"),
            r#"{"a":-9223372036854775808,"b":18446744073709551615,"c":16}"#
        );
    }

    #[test]
    fn a_key_beyond_64_bits_is_its_decimal_text() {
        assert_eq!(render("18446744073709551616: x\n"), r#"{"18446744073709551616":"x"}"#);
    }

    #[test]
    fn reads_what_a_person_writes() {
        let v =
            read("swagger: '2.0'\nresponses:\n  200: {description: ok}\nx: [1, 2.5, true, ~]\n")
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"swagger": "2.0", "responses": {"200": {"description": "ok"}},
                "x": [1, 2.5, true, null]})
        );
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["swagger", "responses", "x"], "source order is kept");
    }

    #[test]
    fn modest_aliases_are_expanded() {
        let v = read("a: &p {type: string}\nb: *p\n").unwrap();
        assert_eq!(v["a"], v["b"]);
    }

    #[test]
    fn a_wide_alias_bomb_is_refused_early() {
        // One anchored list of 10,000 items used 10,000 times: 100 million
        // values from about 40 KB.
        let items = vec!["a"; 10_000].join(", ");
        let uses = vec!["*a"; 10_000].join(", ");
        let text = format!("x-a: &a [{items}]\nx-b: [{uses}]\n");
        let e = read(&text).unwrap_err();
        assert!(matches!(e, YamlError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn a_long_string_reused_is_charged_by_its_length() {
        let long = "x".repeat(100_000);
        let uses = vec!["*s"; 1_000].join(", ");
        let text = format!("s: &s {long}\nt: [{uses}]\n");
        assert!(matches!(read(&text), Err(YamlError::TooLarge { .. })));
    }

    #[test]
    fn repeated_keys_and_non_scalar_keys_are_errors() {
        assert!(matches!(read("a: 1\na: 2\n"), Err(YamlError::Syntax(_))));
        assert!(matches!(read("? [1, 2]\n: x\n"), Err(YamlError::Syntax(_))));
    }

    #[test]
    fn any_document_without_aliases_fits_its_budget() {
        // The densest spelling: a one-character value and a separator.
        let text = format!("[{}]", vec!["1"; 200_000].join(","));
        assert_eq!(read(&text).unwrap().as_array().map(Vec::len), Some(200_000));
    }
}
