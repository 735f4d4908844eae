//! What a `/openapi/v2` protobuf answer says, read from the protobuf wire
//! format itself.
//!
//! The check compares a protobuf answer with the JSON served at the same
//! URL by what a client reads from both: the `swagger` version, the path
//! names and the definition names, in order. It does not re-encode the
//! JSON with openapi-proxy's encoder and compare bytes: a kube-apiserver's
//! gnostic encoding writes `x-` extensions and examples as block YAML where
//! ours writes compact JSON, so equal documents would differ in bytes and
//! every real cluster would fail. Three fields of gnostic's
//! `openapi.v2.Document` are read (field numbers from gnostic's
//! `OpenAPIv2.proto`); everything else is skipped by its wire type.

/// `Document.swagger`.
const SWAGGER: u32 = 1;
/// `Document.paths` (`Paths`), whose `path` (2) are `NamedPathItem`s.
const PATHS: u32 = 8;
const PATHS_PATH: u32 = 2;
/// `Document.definitions` (`Definitions`), whose `additional_properties`
/// (1) are `NamedSchema`s.
const DEFINITIONS: u32 = 9;
const DEFINITIONS_ENTRY: u32 = 1;
/// `Named…`'s `name`.
const NAME: u32 = 1;

/// The top of an `openapi.v2.Document`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct V2Outline {
    /// `swagger`.
    pub swagger: String,
    /// Path names, in order.
    pub paths: Vec<String>,
    /// Definition names, in order.
    pub definitions: Vec<String>,
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

/// The names of the `Named…` entries numbered `entry` in message `bytes`.
fn names(bytes: &[u8], entry: u32) -> Result<Vec<String>, WireError> {
    let mut out = Vec::new();
    for (n, v) in fields(bytes)? {
        if let (true, Value::Bytes(named)) = (n == entry, v) {
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

/// Reads the top of an `openapi.v2.Document`.
///
/// # Errors
/// [`WireError`] when `bytes` are not a protobuf message of that shape.
pub fn v2_outline(bytes: &[u8]) -> Result<V2Outline, WireError> {
    let mut out = V2Outline::default();
    for (n, v) in fields(bytes)? {
        let Value::Bytes(b) = v else { continue };
        match n {
            SWAGGER => out.swagger = string(b, SWAGGER)?,
            PATHS => out.paths.extend(names(b, PATHS_PATH)?),
            DEFINITIONS => out.definitions.extend(names(b, DEFINITIONS_ENTRY)?),
            _ => {}
        }
    }
    Ok(out)
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
        assert_eq!(outline.swagger, "2.0");
        assert_eq!(outline.paths, ["/b", "/a"]);
        assert_eq!(outline.definitions, ["Z", "A"]);
    }

    #[test]
    fn truncated_bytes_are_an_error_not_a_panic() {
        assert_eq!(v2_outline(&[0x42, 0x05, 0x0a]), Err(WireError::Truncated(0)));
        assert!(matches!(v2_outline(&[0x0b]), Err(WireError::WireType { wire: 3, .. })));
        assert_eq!(v2_outline(b"{\"swagger\"").map(|o| o.swagger.is_empty()).ok(), None);
    }
}
