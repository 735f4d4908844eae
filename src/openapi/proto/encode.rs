//! The one walk from a JSON tree to protobuf bytes, driven by a table of
//! messages ([`Msg`]) instead of a Rust type per message.
//!
//! gnostic's messages are regular: each JSON object maps to a message
//! whose fields are its known keys, its `x-` keys (as `NamedAny`) and, for
//! map-like objects, every member as a `Named…` pair. A table of about a
//! hundred rows says that once for both versions; typed messages would
//! build a second copy of a 4 MB document only to write it out.
//!
//! Bytes are written as Go's `proto.Marshal` writes gnostic's messages:
//! fields in number order, proto3 defaults (`""`, `false`, `0`) left out
//! except in a oneof, every present sub-message written even when empty.
//! A nested message's length is not known before its content is written:
//! five bytes are kept for it, and the content is moved back over the
//! unused ones once its length is known (a few megabytes moved for the
//! whole Kubernetes document, far less than a second tree).

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

use crate::json::tree::{Node, Number};

/// A protobuf message as gnostic parses it from a JSON value.
pub(super) struct Msg {
    /// The message's name in gnostic's `.proto`, for errors.
    pub name: &'static str,
    /// How the JSON value maps to its fields.
    pub shape: Shape,
}

/// How a JSON value maps to a message's fields.
pub(super) enum Shape {
    /// An object with known keys, in field-number order.
    Fields(&'static [Slot]),
    /// An object whose every member becomes a `Named…{name = 1, value =
    /// 2}` in field `.0`; the value is read as `.1`.
    Map(u32, Kind),
    /// An array of strings in repeated field 1 (`StringArray`); with
    /// `true`, a single string is one value (`TypeItem`).
    Strings(bool),
    /// An object or an array of objects in repeated field 1 (`ItemsItem`).
    Items(&'static Msg),
    /// A schema (field 1) or a boolean (field 2):
    /// `AdditionalPropertiesItem`.
    SchemaOrBool(&'static Msg),
    /// A number (field 1, double), a boolean (2) or a string (3); anything
    /// else leaves the message empty (OpenAPI v3's `DefaultType`).
    Scalar,
    /// A oneof: the function picks the field and message for the value.
    OneOf(fn(&Node<'_>) -> Option<(u32, &'static Msg)>),
}

/// One field of a [`Shape::Fields`] message.
pub(super) struct Slot {
    /// The field number.
    pub number: u32,
    /// Which members fill it.
    pub at: At,
    /// How each member's value is written.
    pub kind: Kind,
}

/// The members of an object a [`Slot`] takes.
pub(super) enum At {
    /// The member with this key.
    Key(&'static str),
    /// Every `x-` member, as `NamedAny` (gnostic's `vendor_extension` or
    /// `specification_extension`).
    Extensions,
    /// Every member whose key the function accepts, as `Named…` pairs.
    Pattern(fn(&str) -> bool),
    /// Every other member, read and left out: a reference's siblings,
    /// which gnostic's `NewReference` does not read and OpenAPI 3.0 says
    /// "SHALL be ignored" (as JSON Reference does for Swagger 2.0).
    /// Kubernetes 1.24 to 1.26 write `default` beside `$ref`.
    Ignored,
}

/// How one JSON value is written as a field.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// `string`: a string (or an integer's text, or `null` as `""`).
    Str,
    /// `bool`.
    Bool,
    /// `double`: any number.
    Double,
    /// `int64`: an integer.
    Int64,
    /// `repeated string`: an array of strings.
    Strs,
    /// `Any`: the value as YAML text (compact JSON, see [`field`]).
    Any,
    /// `repeated Any`: an array.
    Anys,
    /// A message.
    Msg(&'static Msg),
    /// `repeated` message: an array.
    Msgs(&'static Msg),
}

/// Why a JSON value has no encoding: what gnostic's parse rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A key the message has no field for.
    #[error("{message} has no property {key:?}")]
    UnknownProperty {
        /// The message.
        message: &'static str,
        /// The key.
        key: String,
    },
    /// A value of the wrong JSON type.
    #[error("{message} needs {expected} here")]
    WrongType {
        /// The message being read.
        message: &'static str,
        /// What the field takes.
        expected: &'static str,
    },
    /// A value none of a oneof's messages takes.
    #[error("no kind of {message} fits this value")]
    NoMatch {
        /// The oneof message.
        message: &'static str,
    },
    /// A message longer than protobuf's 32-bit lengths allow.
    #[error("a message over 4 GiB")]
    TooLarge,
}

/// A [`Problem`] and where: the JSON pointer's tokens, innermost first
/// (pushed as the error returns, so that a good document pays nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failure {
    pub problem: Problem,
    pub tokens: Vec<String>,
}

impl Failure {
    fn new(problem: Problem) -> Self {
        Self { problem, tokens: Vec::new() }
    }

    fn at(mut self, token: &str) -> Self {
        self.tokens.push(token.to_owned());
        self
    }

    fn at_index(mut self, index: usize) -> Self {
        self.tokens.push(index.to_string());
        self
    }
}

type Result<T = ()> = std::result::Result<T, Failure>;

/// Bytes kept for a nested message's length: a varint of up to 32 bits.
const LEN_ROOM: usize = 5;

/// Writes `value`, read as `msg`, as a whole protobuf message.
pub(super) fn message(msg: &'static Msg, value: &Node<'_>, out: &mut Vec<u8>) -> Result {
    body(msg, value, out)
}

/// Opens a length-delimited field: its key and room for the length.
fn open(number: u32, out: &mut Vec<u8>) -> usize {
    encode_key(number, WireType::LengthDelimited, out);
    let at = out.len();
    out.extend_from_slice(&[0; LEN_ROOM]);
    at
}

/// Closes the field [`open`] began at `at`: writes the length and moves
/// the content back over the room it did not need.
fn close(at: usize, out: &mut Vec<u8>) -> Result {
    let start = at + LEN_ROOM;
    let len = out.len() - start;
    let len64 = u64::try_from(len).map_err(|_| Failure::new(Problem::TooLarge))?;
    if len64 > u64::from(u32::MAX) {
        return Err(Failure::new(Problem::TooLarge));
    }
    let mut head = [0u8; LEN_ROOM];
    let mut room = &mut head[..];
    encode_varint(len64, &mut room);
    let used = LEN_ROOM - room.len();
    out[at..at + used].copy_from_slice(&head[..used]);
    out.copy_within(start.., at + used);
    out.truncate(at + used + len);
    debug_assert_eq!(encoded_len_varint(len64), used);
    Ok(())
}

fn string_field(number: u32, s: &str, out: &mut Vec<u8>) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

fn wrong(msg: &'static Msg, expected: &'static str) -> Failure {
    Failure::new(Problem::WrongType { message: msg.name, expected })
}

/// The fields of `msg` read from `value` (without a key or length).
fn body(msg: &'static Msg, value: &Node<'_>, out: &mut Vec<u8>) -> Result {
    match &msg.shape {
        Shape::Fields(slots) => {
            let Node::Object(object) = value else { return Err(wrong(msg, "an object")) };
            for (key, _) in object.iter() {
                let key = key.as_str();
                let known = slots.iter().any(|s| match s.at {
                    At::Key(k) => k == key,
                    At::Extensions => key.starts_with("x-"),
                    At::Pattern(p) => p(key),
                    At::Ignored => true,
                });
                if !known {
                    return Err(Failure::new(Problem::UnknownProperty {
                        message: msg.name,
                        key: key.to_owned(),
                    }));
                }
            }
            for slot in *slots {
                match slot.at {
                    At::Key(key) => {
                        if let Some(v) = object.get(key) {
                            field(msg, slot.number, slot.kind, v, out, false)
                                .map_err(|e| e.at(key))?;
                        }
                    }
                    At::Extensions => {
                        for (k, v) in object.iter().filter(|(k, _)| k.as_str().starts_with("x-")) {
                            named(msg, slot.number, k.as_str(), Kind::Any, v, out)?;
                        }
                    }
                    At::Pattern(accepts) => {
                        for (k, v) in object.iter().filter(|(k, _)| accepts(k.as_str())) {
                            named(msg, slot.number, k.as_str(), slot.kind, v, out)?;
                        }
                    }
                    At::Ignored => {}
                }
            }
            Ok(())
        }
        Shape::Map(number, kind) => {
            let Node::Object(object) = value else { return Err(wrong(msg, "an object")) };
            for (k, v) in object.iter() {
                named(msg, *number, k.as_str(), *kind, v, out)?;
            }
            Ok(())
        }
        Shape::Strings(single) => match value {
            Node::String(s) if *single => {
                string_field(1, s.as_str(), out);
                Ok(())
            }
            Node::Array(_) => field(msg, 1, Kind::Strs, value, out, false),
            _ => Err(wrong(msg, "an array of strings")),
        },
        Shape::Items(item) => match value {
            Node::Object(_) => field(msg, 1, Kind::Msg(item), value, out, false),
            Node::Array(_) => field(msg, 1, Kind::Msgs(item), value, out, false),
            _ => Err(wrong(msg, "an object or an array")),
        },
        Shape::SchemaOrBool(schema) => match value {
            Node::Bool(b) => field(msg, 2, Kind::Bool, &Node::Bool(*b), out, true),
            Node::Object(_) => field(msg, 1, Kind::Msg(schema), value, out, false),
            _ => Err(wrong(msg, "an object or a boolean")),
        },
        Shape::Scalar => match value {
            Node::Number(_) => field(msg, 1, Kind::Double, value, out, true),
            Node::Bool(_) => field(msg, 2, Kind::Bool, value, out, true),
            Node::String(_) => field(msg, 3, Kind::Str, value, out, true),
            // gnostic leaves the message empty for `{}`, `[]` and `null`.
            _ => Ok(()),
        },
        Shape::OneOf(pick) => {
            let Some((number, chosen)) = pick(value) else {
                return Err(Failure::new(Problem::NoMatch { message: msg.name }));
            };
            field(msg, number, Kind::Msg(chosen), value, out, true)
        }
    }
}

/// A `Named…{name = 1, value = 2}` pair in field `number`.
fn named(
    msg: &'static Msg,
    number: u32,
    name: &str,
    kind: Kind,
    value: &Node<'_>,
    out: &mut Vec<u8>,
) -> Result {
    let at = open(number, out);
    if !name.is_empty() {
        string_field(1, name, out);
    }
    field(msg, 2, kind, value, out, false).map_err(|e| e.at(name))?;
    close(at, out)
}

/// Writes `value` as field `number` of `kind`. `present`: the field is a
/// oneof member, written even when it holds its type's default.
fn field(
    msg: &'static Msg,
    number: u32,
    kind: Kind,
    value: &Node<'_>,
    out: &mut Vec<u8>,
    present: bool,
) -> Result {
    match kind {
        Kind::Str => {
            let text = match value {
                Node::String(s) => s.as_str(),
                Node::Number(Number::Integer(text)) => text,
                Node::Null => "",
                _ => return Err(wrong(msg, "a string")),
            };
            if present || !text.is_empty() {
                string_field(number, text, out);
            }
        }
        Kind::Bool => {
            let Node::Bool(b) = value else { return Err(wrong(msg, "a boolean")) };
            if present || *b {
                encode_key(number, WireType::Varint, out);
                encode_varint(u64::from(*b), out);
            }
        }
        Kind::Double => {
            let Node::Number(n) = value else { return Err(wrong(msg, "a number")) };
            let v = n.to_json().as_f64().ok_or_else(|| wrong(msg, "a number"))?;
            if present || v.to_bits() != 0 {
                encode_key(number, WireType::SixtyFourBit, out);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        Kind::Int64 => {
            let Node::Number(Number::Integer(text)) = value else {
                return Err(wrong(msg, "an integer"));
            };
            let v: i64 = text.parse().map_err(|_| wrong(msg, "a 64-bit integer"))?;
            if present || v != 0 {
                encode_key(number, WireType::Varint, out);
                // int64 is written as its two's complement, as Go does.
                encode_varint(v.cast_unsigned(), out);
            }
        }
        Kind::Strs => {
            let Node::Array(items) = value else { return Err(wrong(msg, "an array of strings")) };
            for (i, item) in items.iter().enumerate() {
                let Node::String(s) = item else {
                    return Err(wrong(msg, "an array of strings").at_index(i));
                };
                string_field(number, s.as_str(), out);
            }
        }
        Kind::Any => {
            // Any{yaml = 2}: the value as compact JSON, which YAML reads
            // as the same value (JSON is YAML's flow style), then a
            // newline as gnostic's YAML ends. gnostic writes block-style
            // YAML; every YAML reader, and so every client (kube-openapi's
            // `proto` models read these with a YAML parser), reads both
            // to the same value.
            let any = open(number, out);
            let yaml = open(2, out);
            value.render(out);
            out.push(b'\n');
            close(yaml, out)?;
            close(any, out)?;
        }
        Kind::Anys => {
            let Node::Array(items) = value else { return Err(wrong(msg, "an array")) };
            for item in items {
                field(msg, number, Kind::Any, item, out, false)?;
            }
        }
        Kind::Msg(child) => {
            let at = open(number, out);
            body(child, value, out)?;
            close(at, out)?;
        }
        Kind::Msgs(child) => {
            let Node::Array(items) = value else { return Err(wrong(msg, "an array")) };
            for (i, item) in items.iter().enumerate() {
                let at = open(number, out);
                body(child, item, out).map_err(|e| e.at_index(i))?;
                close(at, out)?;
            }
        }
    }
    Ok(())
}
