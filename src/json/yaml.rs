//! YAML → `serde_json::Value` under an expansion budget.
//!
//! YAML aliases let a small file stand for a huge document: one anchored
//! list of 100,000 items reused 100,000 times is 500 KB of text and ten
//! billion values. The YAML library refuses deeply nested alias chains but
//! not such wide reuse, so the document is built here, counting as it goes,
//! and refused as soon as it outgrows what its own text could spell
//! without aliases. Memory stays a small multiple of the input, whatever
//! the input says.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

/// What one value costs against the budget, beside its string bytes: about
/// what a `Value` takes in memory.
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

/// Reads one YAML document as a `Value`, refusing it once its expanded size
/// passes `budget` (see [`budget_for`]).
///
/// # Errors
/// [`YamlError`].
pub fn from_slice(bytes: &[u8], budget: usize) -> Result<Value, YamlError> {
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
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value JSON can hold")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.charge(0)?;
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a number JSON can hold")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge(v.len())?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.charge(v.len())?;
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut members = Map::new();
        while let Some(key) = map.next_key_seed(Key(self))? {
            if members.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate entry with key \"{key}\"")));
            }
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
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
    use super::*;

    fn read(text: &str) -> Result<Value, YamlError> {
        from_slice(text.as_bytes(), budget_for(text.len()))
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
