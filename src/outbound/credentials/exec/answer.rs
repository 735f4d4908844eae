//! The plugin's answer: an `ExecCredential` on stdout (client-go's
//! `ExecCredentialStatus`), read into a token and its expiry.
//!
//! The answer is read as a JSON tree and its fields picked by hand, not
//! deserialized into a struct: serde's messages quote values ("invalid
//! type: string \"…\""), and the value quoted could be the token. Every
//! error here names a field, never a value the plugin sent, except the
//! `apiVersion`/`kind` it answered with (shortened).

use std::fmt;
use std::time::SystemTime;

use serde_json::Value;

use super::ApiVersion;

/// Why the answer cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// stdout is not JSON.
    #[error("its output is not JSON")]
    Json(#[source] serde_json::Error),
    /// A field is not of the expected type.
    #[error("{field} is not {expected}")]
    Field {
        /// The field (`status.token`).
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
    /// It answered in another version than it was asked in.
    #[error("it answered apiVersion {found:?}, but was asked for {asked}")]
    ApiVersion {
        /// What it was asked for.
        asked: ApiVersion,
        /// What it answered (shortened).
        found: String,
    },
    /// It answered something else than an `ExecCredential`.
    #[error("it answered kind {found:?}, not ExecCredential")]
    Kind {
        /// What it answered (shortened).
        found: String,
    },
    /// Client certificates without a token.
    #[error(
        "it answered a client certificate and no token: client certificates from exec plugins are not supported (the proxy's TLS client is built before the plugin runs); configure the plugin to return a token"
    )]
    Certificates,
    /// Neither a token nor certificates.
    #[error("its answer has no status.token")]
    NoToken,
    /// `status.expirationTimestamp` is not an RFC 3339 time. (The time
    /// crate's reason is left out: it repeats itself in its own source
    /// chain, and the example says more.)
    #[error(
        "status.expirationTimestamp {found:?} is not an RFC 3339 time (like 2006-01-02T15:04:05Z)"
    )]
    Expiry {
        /// What it answered (shortened).
        found: String,
    },
}

/// A token and when it expires.
#[derive(Clone, PartialEq, Eq)]
pub struct Answer {
    /// `status.token`; never printed.
    pub token: String,
    /// `status.expirationTimestamp`; `None`: it does not expire.
    pub expires: Option<SystemTime>,
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answer").field("expires", &self.expires).finish_non_exhaustive()
    }
}

/// Reads the `ExecCredential` a plugin asked in `asked` printed.
///
/// # Errors
/// [`AnswerError`] naming the field.
pub fn parse(stdout: &[u8], asked: ApiVersion) -> Result<Answer, AnswerError> {
    let doc: Value = serde_json::from_slice(stdout).map_err(AnswerError::Json)?;
    let root = doc
        .as_object()
        .ok_or(AnswerError::Field { field: "the output", expected: "a JSON object" })?;
    let text = |v: Option<&Value>, field: &'static str| -> Result<Option<String>, AnswerError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(AnswerError::Field { field, expected: "a string" }),
        }
    };
    let version = text(root.get("apiVersion"), "apiVersion")?.unwrap_or_default();
    if version != asked.as_str() {
        return Err(AnswerError::ApiVersion { asked, found: shorten(&version) });
    }
    let kind = text(root.get("kind"), "kind")?.unwrap_or_default();
    if kind != "ExecCredential" {
        return Err(AnswerError::Kind { found: shorten(&kind) });
    }
    let status = match root.get("status") {
        None | Some(Value::Null) => return Err(AnswerError::NoToken),
        Some(Value::Object(status)) => status,
        Some(_) => return Err(AnswerError::Field { field: "status", expected: "an object" }),
    };
    let token = text(status.get("token"), "status.token")?.filter(|t| !t.is_empty());
    let cert = text(status.get("clientCertificateData"), "status.clientCertificateData")?;
    let key = text(status.get("clientKeyData"), "status.clientKeyData")?;
    let Some(token) = token else {
        let certificates = [cert, key].iter().flatten().any(|s| !s.is_empty());
        return Err(if certificates { AnswerError::Certificates } else { AnswerError::NoToken });
    };
    let expires = text(status.get("expirationTimestamp"), "status.expirationTimestamp")?
        .filter(|t| !t.is_empty())
        .map(|t| {
            time::OffsetDateTime::parse(&t, &time::format_description::well_known::Rfc3339)
                .map(SystemTime::from)
                .map_err(|_| AnswerError::Expiry { found: shorten(&t) })
        })
        .transpose()?;
    Ok(Answer { token, expires })
}

/// What the plugin said, short enough for a message.
fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const V1: ApiVersion = ApiVersion::V1;

    fn answer(status: &str) -> String {
        format!(
            r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{status}}}"#
        )
    }

    fn error(stdout: &str, asked: ApiVersion) -> String {
        crate::error_chain(&parse(stdout.as_bytes(), asked).expect_err("refused"))
    }

    #[test]
    fn a_token_and_its_expiry_are_read() {
        let a = parse(
            answer(r#"{"token":"abc","expirationTimestamp":"2030-01-02T03:04:05Z"}"#).as_bytes(),
            V1,
        )
        .expect("valid");
        assert_eq!(a.token, "abc");
        assert_eq!(a.expires, Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_553_445)));
        assert!(!format!("{a:?}").contains("abc"), "{a:?}");
    }

    #[test]
    fn an_expiry_with_an_offset_and_fractions_is_read() {
        let a = parse(
            answer(r#"{"token":"t","expirationTimestamp":"2030-01-02T05:04:05.5+02:00"}"#)
                .as_bytes(),
            V1,
        )
        .expect("valid");
        let expected = SystemTime::UNIX_EPOCH + Duration::from_millis(1_893_553_445_500);
        assert_eq!(a.expires, Some(expected));
    }

    #[test]
    fn without_expiry_the_token_does_not_expire() {
        let a = parse(answer(r#"{"token":"t","expirationTimestamp":null}"#).as_bytes(), V1)
            .expect("valid");
        assert_eq!(a.expires, None);
    }

    #[test]
    fn another_api_version_than_asked_is_refused() {
        let v1beta1 = r#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}"#;
        assert_eq!(
            error(v1beta1, V1),
            "it answered apiVersion \"client.authentication.k8s.io/v1beta1\", but was asked for client.authentication.k8s.io/v1"
        );
        assert_eq!(
            parse(v1beta1.as_bytes(), ApiVersion::V1beta1).expect("same version").token,
            "t"
        );
    }

    #[test]
    fn another_kind_is_refused() {
        let text = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"Status"}"#;
        assert_eq!(error(text, V1), "it answered kind \"Status\", not ExecCredential");
    }

    #[test]
    fn certificates_without_a_token_are_refused_with_the_reason() {
        let e = error(&answer(r#"{"clientCertificateData":"C","clientKeyData":"K"}"#), V1);
        assert!(e.starts_with("it answered a client certificate and no token: client certificates from exec plugins are not supported"), "{e}");
    }

    #[test]
    fn a_missing_or_empty_token_is_refused() {
        for status in ["{}", r#"{"token":""}"#, "null"] {
            assert_eq!(error(&answer(status), V1), "its answer has no status.token", "{status}");
        }
        let no_status =
            r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#;
        assert_eq!(error(no_status, V1), "its answer has no status.token");
    }

    #[test]
    fn errors_never_quote_the_token() {
        let cases = [
            answer(r#"{"token":"SECRET","expirationTimestamp":7}"#),
            answer(r#"{"token":"SECRET","clientKeyData":["SECRET"]}"#),
            answer(r#"{"token":"SECRET","expirationTimestamp":"soon"}"#),
            format!("{} trailing SECRET", answer(r#"{"token":"SECRET"}"#)),
        ];
        for text in cases {
            let e = error(&text, V1);
            assert!(!e.contains("SECRET"), "{e}");
        }
        assert_eq!(
            error(&answer(r#"{"token":"t","expirationTimestamp":"soon"}"#), V1),
            "status.expirationTimestamp \"soon\" is not an RFC 3339 time (like 2006-01-02T15:04:05Z)"
        );
    }

    #[test]
    fn output_that_is_not_json_is_refused() {
        assert!(error("Please log in", V1).starts_with("its output is not JSON: "));
        assert_eq!(error("[]", V1), "the output is not a JSON object");
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = "x".repeat(500);
        let text = format!(r#"{{"apiVersion":"{long}","kind":"ExecCredential"}}"#);
        let e = error(&text, V1);
        assert!(e.len() < 200, "{e}");
    }
}
