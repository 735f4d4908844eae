//! `securityDefinitions` → `components.securitySchemes`.
//!
//! Upstream copies v2 schemes verbatim (docs/upstream.md#b-8-1), which leaves
//! `type: basic` and the v2 oauth2 flow names in the output — neither is
//! valid v3. Here `basic` becomes HTTP basic authentication and each oauth2
//! `flow` moves to its v3 name (`application` → `clientCredentials`,
//! `accessCode` → `authorizationCode`) with its URLs and scopes.

use crate::json::tree::{Node, Object};

use super::{Context, ConvertError, NoteKind, as_object};
use crate::json::pointer::Location;

impl<'a> Context<'a> {
    pub(super) fn security_schemes(
        &mut self,
        defs: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let defs = as_object(defs, at, "an object of security schemes")?;
        // Collected, then made an object once (`Object::from_members`).
        let mut out = Vec::with_capacity(defs.len());
        for (name, def) in defs {
            let scheme = self.security_scheme(def, &at.key(name))?;
            out.push((self.component_key("securityDefinitions", name), scheme));
        }
        Ok(Node::Object(Object::from_members(out)))
    }

    fn security_scheme(
        &mut self,
        def: &Node<'a>,
        at: &Location<'_>,
    ) -> Result<Node<'a>, ConvertError> {
        let def = as_object(def, at, "a security scheme object")?;
        let kind = def.get("type").and_then(Node::as_str).unwrap_or_default();
        let mut out = Object::new();
        match kind {
            "basic" => {
                out.insert("type", Node::String("http".into()));
                out.insert("scheme", Node::String("basic".into()));
                copy(def, &mut out, &["description"]);
            }
            "apiKey" => {
                out.insert("type", Node::String("apiKey".into()));
                copy(def, &mut out, &["description", "name", "in"]);
            }
            "oauth2" => {
                out.insert("type", Node::String("oauth2".into()));
                copy(def, &mut out, &["description"]);
                let flow = def.get("flow").and_then(Node::as_str).unwrap_or_default();
                let (name, fields): (&str, &[&str]) = match flow {
                    "implicit" => ("implicit", &["authorizationUrl"]),
                    "password" => ("password", &["tokenUrl"]),
                    "application" => ("clientCredentials", &["tokenUrl"]),
                    "accessCode" => ("authorizationCode", &["authorizationUrl", "tokenUrl"]),
                    other => {
                        self.note(
                            at,
                            NoteKind::UnknownSecurityScheme {
                                kind: format!("oauth2 flow {other}"),
                            },
                        );
                        return Ok(Node::Object(def.clone()));
                    }
                };
                let mut f = Object::new();
                copy(def, &mut f, fields);
                // Scopes are required in v3 (and in v2); an absent list is
                // an empty one.
                let scopes =
                    def.get("scopes").cloned().unwrap_or_else(|| Node::Object(Object::new()));
                f.insert("scopes", scopes);
                let mut flows = Object::new();
                flows.insert(name, Node::Object(f));
                out.insert("flows", Node::Object(flows));
            }
            other => {
                self.note(at, NoteKind::UnknownSecurityScheme { kind: other.to_owned() });
                return Ok(Node::Object(def.clone()));
            }
        }
        for (k, v) in def {
            if k.starts_with("x-") {
                let converted = self.extension(v, &at.key(k));
                // Unique in the input, and no name the scheme gets else.
                out.push_new(k.clone(), converted);
            }
        }
        Ok(Node::Object(out))
    }
}

fn copy<'a>(from: &Object<'a>, to: &mut Object<'a>, fields: &[&'a str]) {
    for f in fields {
        if let Some(v) = from.get(f) {
            to.insert((*f).to_owned(), v.clone());
        }
    }
}
