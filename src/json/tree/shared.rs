//! One subtree standing at many spots of a tree ([`Node::Shared`]).
//!
//! The converter turns an API's parameters and responses into the same
//! few objects again and again: Kubernetes 1.27 writes 4,177 parameters
//! inline, 102 of them different (more than half the bytes of its OpenAPI
//! 3.0 documents), and 1,819 responses, 255 different. Converted once and
//! shared, each is built and written out once; every other spot copies
//! its bytes.
//!
//! A shared subtree knows whether it holds a `$ref`: the walks that look
//! for references (`openapi::split`) look into one that does and pass by
//! one that does not. A clone shares it, and nothing changes it once it
//! is shared.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::Node;

/// A subtree that stands at many spots of a tree: see the module.
#[derive(Clone)]
pub struct Shared<'a>(Arc<Inner<'a>>);

struct Inner<'a> {
    node: Node<'a>,
    /// Whether a member of an object under `node` is named `$ref`.
    refs: bool,
    /// The node as compact JSON, once it is known to stand at more than
    /// one spot (a subtree met once is written from the tree, as any);
    /// `None` when it was too large to keep.
    rendered: OnceLock<Option<Box<[u8]>>>,
}

impl<'a> Shared<'a> {
    /// `node`, to be shared; `node` back when it holds a shared node
    /// already (one level of sharing is what the walks for references
    /// expect).
    pub(crate) fn new(node: Node<'a>) -> Result<Self, Node<'a>> {
        match scan(&node) {
            None => Err(node),
            Some(refs) => Ok(Self(Arc::new(Inner { node, refs, rendered: OnceLock::new() }))),
        }
    }

    /// True when a member of an object in the subtree is named `$ref`.
    #[must_use]
    pub fn holds_refs(&self) -> bool {
        self.0.refs
    }

    /// The subtree.
    #[must_use]
    pub fn node(&self) -> &Node<'a> {
        &self.0.node
    }

    /// Renders the subtree now, for every later [`Node::render`] of it to
    /// copy, if that takes at most `limit` bytes: for one placed at a
    /// second spot. Decided once; a larger subtree is written from the
    /// tree at each spot, as an unshared one is. Gives the bytes kept by
    /// this call.
    pub(crate) fn keep_rendered(&self, limit: usize) -> usize {
        let mut kept = 0;
        self.0.rendered.get_or_init(|| {
            let len = self.0.node.rendered_len_within(limit)?;
            let mut out = Vec::with_capacity(len);
            self.0.node.render(&mut out);
            kept = out.len();
            Some(out.into_boxed_slice())
        });
        kept
    }

    /// The compact JSON [`Shared::keep_rendered`] kept, if it did.
    pub(crate) fn rendered(&self) -> Option<&[u8]> {
        self.0.rendered.get().and_then(Option::as_deref)
    }

    /// True when both are the one subtree (not merely equal ones).
    #[must_use]
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Shared<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.node(), f)
    }
}

/// Whether a member of an object under `node` (itself included) is named
/// `$ref`; `None` when a node under it is shared. Iterative: the
/// converter's nodes are as deep as the input makes them.
fn scan(node: &Node<'_>) -> Option<bool> {
    let mut refs = false;
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        match n {
            Node::Object(o) => {
                for (k, v) in o {
                    refs |= k == "$ref";
                    stack.push(v);
                }
            }
            Node::Array(items) => stack.extend(items.iter()),
            Node::Shared(_) => return None,
            _ => {}
        }
    }
    Some(refs)
}
