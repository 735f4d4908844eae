//! What an OpenAPI protobuf answer says, read from the protobuf wire
//! format itself.
//!
//! The check compares a protobuf answer with the JSON served at the same
//! URL by what a client reads from both: the version (`swagger`,
//! `openapi`), the path names and the schema names (v2 `definitions`, v3
//! `components.schemas`), in order. It does not re-encode the JSON with
//! openapi-proxy's encoder and compare bytes: a kube-apiserver's gnostic
//! encoding writes `x-` extensions and examples as block YAML where ours
//! writes compact JSON, so equal documents would differ in bytes and every
//! real cluster would fail. Those fields of gnostic's `openapi.v2.Document`
//! and `openapi.v3.Document` are read (field numbers from gnostic's
//! `OpenAPIv2.proto` and `OpenAPIv3.proto`); everything else is skipped by
//! its wire type.

/// Where a document's outline is, by field numbers.
struct Layout {
    /// The version string's field.
    version: u32,
    /// The messages down to the path list, then the `Named…` entries' field.
    paths: (&'static [u32], u32),
    /// The same for the schemas.
    schemas: (&'static [u32], u32),
}

/// `openapi.v2.Document`: `swagger` (1); `paths` (8) of `NamedPathItem`s
/// (2); `definitions` (9) of `NamedSchema`s (1).
const V2: Layout = Layout { version: 1, paths: (&[8], 2), schemas: (&[9], 1) };
/// `openapi.v3.Document`: `openapi` (1); `paths` (4) of `NamedPathItem`s
/// (1); `components` (5) → `schemas` (1) of `NamedSchemaOrReference`s (1).
const V3: Layout = Layout { version: 1, paths: (&[4], 1), schemas: (&[5, 1], 1) };
/// `Named…`'s `name`.
const NAME: u32 = 1;

/// The top of an OpenAPI document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// `swagger` (v2) or `openapi` (v3).
    pub version: String,
    /// Path names, in order.
    pub paths: Vec<String>,
    /// Schema names (v2 `definitions`, v3 `components.schemas`), in order.
    pub schemas: Vec<String>,
}

/// Why bytes are not a protobuf message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes end inside a field.
    #[error("truncated at byte {0}")]
    Truncated(usize),
    /// A wire type protobuf does not define (or the deprecated groups).
    #[error("wire type {wire} at byte {at} is not supported")]
    WireType {
        /// The wire type.
        wire: u64,
        /// Where.
        at: usize,
    },
    /// A string field is not UTF-8.
    #[error("field {0} is not UTF-8")]
    Utf8(u32),
}

/// One field's value: varints and fixed-size values are skipped.
enum Value<'a> {
    Bytes(&'a [u8]),
    Other,
}

/// The fields of one message, in wire order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u32, Value<'_>)>, WireError> {
    let total = buf.len();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let at = total - buf.len();
        let key = varint(&mut buf, at)?;
        let number = u32::try_from(key >> 3).unwrap_or(u32::MAX);
        let value = match key & 7 {
            0 => {
                varint(&mut buf, at)?;
                Value::Other
            }
            1 => {
                buf = buf.get(8..).ok_or(WireError::Truncated(at))?;
                Value::Other
            }
            2 => {
                let len = usize::try_from(varint(&mut buf, at)?).unwrap_or(usize::MAX);
                let bytes = buf.get(..len).ok_or(WireError::Truncated(at))?;
                buf = &buf[len..];
                Value::Bytes(bytes)
            }
            5 => {
                buf = buf.get(4..).ok_or(WireError::Truncated(at))?;
                Value::Other
            }
            wire => return Err(WireError::WireType { wire, at }),
        };
        out.push((number, value));
    }
    Ok(out)
}

fn varint(buf: &mut &[u8], at: usize) -> Result<u64, WireError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first().ok_or(WireError::Truncated(at))?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(WireError::Truncated(at))
}

fn string(bytes: &[u8], field: u32) -> Result<String, WireError> {
    std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| WireError::Utf8(field))
}

/// The messages at `path` (field numbers, one level each) below `bytes`.
fn messages<'a>(bytes: &'a [u8], path: &[u32]) -> Result<Vec<&'a [u8]>, WireError> {
    let Some((first, rest)) = path.split_first() else { return Ok(vec![bytes]) };
    let mut out = Vec::new();
    for (n, v) in fields(bytes)? {
        if let (true, Value::Bytes(b)) = (n == *first, v) {
            out.extend(messages(b, rest)?);
        }
    }
    Ok(out)
}

/// The names of the `Named…` entries (field `entry`) of the messages at
/// `path`.
fn names(bytes: &[u8], (path, entry): (&[u32], u32)) -> Result<Vec<String>, WireError> {
    let mut out = Vec::new();
    for message in messages(bytes, path)? {
        for named in messages(message, &[entry])? {
            let mut name = String::new();
            for (k, v) in fields(named)? {
                if let (NAME, Value::Bytes(b)) = (k, v) {
                    name = string(b, NAME)?;
                }
            }
            out.push(name);
        }
    }
    Ok(out)
}

fn outline(bytes: &[u8], layout: &Layout) -> Result<Outline, WireError> {
    let mut version = String::new();
    for (n, v) in fields(bytes)? {
        if let (true, Value::Bytes(b)) = (n == layout.version, v) {
            version = string(b, n)?;
        }
    }
    Ok(Outline {
        version,
        paths: names(bytes, layout.paths)?,
        schemas: names(bytes, layout.schemas)?,
    })
}

/// Reads the top of an `openapi.v2.Document`.
///
/// # Errors
/// [`WireError`] when `bytes` are not a protobuf message.
pub fn v2_outline(bytes: &[u8]) -> Result<Outline, WireError> {
    outline(bytes, &V2)
}

/// Reads the top of an `openapi.v3.Document`.
///
/// # Errors
/// [`WireError`] when `bytes` are not a protobuf message.
pub fn v3_outline(bytes: &[u8]) -> Result<Outline, WireError> {
    outline(bytes, &V3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, u8::try_from(bytes.len()).expect("short")];
        out.extend_from_slice(bytes);
        out
    }

    fn named(name: &str) -> Vec<u8> {
        [field(1, name.as_bytes()), field(2, &[])].concat()
    }

    #[test]
    fn reads_swagger_and_the_names_of_paths_and_definitions_in_order() {
        let paths = [field(2, &named("/b")), field(2, &named("/a"))].concat();
        let definitions = [field(1, &named("Z")), field(1, &named("A"))].concat();
        // An `info` (2) and a varint (field 13) are skipped.
        let doc = [
            field(1, b"2.0"),
            field(2, &field(1, b"title")),
            vec![13 << 3, 0x96, 0x01],
            field(8, &paths),
            field(9, &definitions),
        ]
        .concat();
        let outline = v2_outline(&doc).expect("decodes");
        assert_eq!(outline.version, "2.0");
        assert_eq!(outline.paths, ["/b", "/a"]);
        assert_eq!(outline.schemas, ["Z", "A"]);
    }

    /// openapi-proxy writes a large `/openapi/v2` as several `paths` and
    /// `definitions` fields, which a parser merges: read as one.
    #[test]
    fn a_document_in_pieces_is_read_as_its_parts_merged() {
        let doc = [
            field(8, &field(2, &named("/b"))),
            field(9, &field(1, &named("Z"))),
            field(1, b"2.0"),
            field(8, &field(2, &named("/a"))),
            field(9, &field(1, &named("A"))),
        ]
        .concat();
        let outline = v2_outline(&doc).expect("decodes");
        assert_eq!(outline.version, "2.0");
        assert_eq!(outline.paths, ["/b", "/a"]);
        assert_eq!(outline.schemas, ["Z", "A"]);
    }

    #[test]
    fn reads_openapi_and_the_names_of_paths_and_component_schemas_in_order() {
        let paths = [field(1, &named("/x")), field(1, &named("/a"))].concat();
        let schemas = field(1, &[field(1, &named("S")), field(1, &named("B"))].concat());
        let doc = [field(1, b"3.0.0"), field(4, &paths), field(5, &schemas)].concat();
        let outline = v3_outline(&doc).expect("decodes");
        assert_eq!(outline.version, "3.0.0");
        assert_eq!(outline.paths, ["/x", "/a"]);
        assert_eq!(outline.schemas, ["S", "B"]);
    }

    #[test]
    fn truncated_bytes_are_an_error_not_a_panic() {
        assert_eq!(v2_outline(&[0x42, 0x05, 0x0a]), Err(WireError::Truncated(0)));
        assert!(matches!(v2_outline(&[0x0b]), Err(WireError::WireType { wire: 3, .. })));
        assert_eq!(v2_outline(b"{\"swagger\"").map(|o| o.version.is_empty()).ok(), None);
    }
}
