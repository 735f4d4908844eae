//! What the `v2` and `v3` tables are written with: slot constructors, and
//! the messages both of gnostic's `.proto` files declare alike (`Contact`,
//! `License`, `ExternalDocs`, `Tag`: the same fields, the same numbers).

use super::encode::{At, Kind, Msg, Shape, Slot};

use Kind::{Any, Str};

/// A field read from the JSON member `key`.
pub(super) const fn key(number: u32, key: &'static str, kind: Kind) -> Slot {
    Slot { number, at: At::Key(key), kind }
}

/// The `x-` members, as `NamedAny` pairs.
pub(super) const fn ext(number: u32) -> Slot {
    Slot { number, at: At::Extensions, kind: Any }
}

/// One message.
pub(super) const fn msg(m: &'static Msg) -> Kind {
    Kind::Msg(m)
}

/// A repeated message.
pub(super) const fn msgs(m: &'static Msg) -> Kind {
    Kind::Msgs(m)
}

pub(super) static CONTACT: Msg = Msg {
    name: "Contact",
    shape: Shape::Fields(&[key(1, "name", Str), key(2, "url", Str), key(3, "email", Str), ext(4)]),
};

pub(super) static LICENSE: Msg = Msg {
    name: "License",
    shape: Shape::Fields(&[key(1, "name", Str), key(2, "url", Str), ext(3)]),
};

pub(super) static EXTERNAL_DOCS: Msg = Msg {
    name: "ExternalDocs",
    shape: Shape::Fields(&[key(1, "description", Str), key(2, "url", Str), ext(3)]),
};

pub(super) static TAG: Msg = Msg {
    name: "Tag",
    shape: Shape::Fields(&[
        key(1, "name", Str),
        key(2, "description", Str),
        key(3, "externalDocs", msg(&EXTERNAL_DOCS)),
        ext(4),
    ]),
};
