//! Converted documents keyed by the digest of their input, shared by every
//! poll loop and outliving snapshots.
//!
//! A Swagger 2.0 document changes a little at a time (one aggregated server
//! upgrades one group-version); only the parts whose input changed are
//! converted again, and the others keep their bytes, hash and ETag — so
//! clients' caches of them stay valid.

use std::sync::Arc;

use dashmap::DashMap;

use crate::rendered::Rendered;

/// Converted output by SHA-256 of the converted input.
#[derive(Debug, Default)]
pub struct ConversionCache {
    entries: DashMap<[u8; 32], Arc<Rendered>>,
}

impl ConversionCache {
    /// The conversion of the input with this digest, if cached.
    #[must_use]
    pub fn get(&self, digest: &[u8; 32]) -> Option<Arc<Rendered>> {
        // Clone the Arc and drop the map's guard on the same line (dashmap
        // may deadlock if a guard is held while the map is used again).
        self.entries.get(digest).map(|e| Arc::clone(e.value()))
    }

    /// Caches a conversion and returns it (or the one another thread cached
    /// first, so every user shares one `Arc`).
    pub fn insert(&self, digest: [u8; 32], rendered: Arc<Rendered>) -> Arc<Rendered> {
        Arc::clone(self.entries.entry(digest).or_insert(rendered).value())
    }

    /// Drops entries nothing else holds any more: documents no downstream
    /// contributes and no snapshot serves.
    pub fn prune(&self) {
        self.entries.retain(|_, v| Arc::strong_count(v) > 1);
    }

    /// Number of cached conversions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is cached.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_only_what_is_still_used() {
        let cache = ConversionCache::default();
        let kept = cache.insert([1; 32], Arc::new(Rendered::json(&b"{}"[..])));
        drop(cache.insert([2; 32], Arc::new(Rendered::json(&b"[]"[..]))));
        cache.prune();
        assert_eq!(cache.len(), 1);
        assert!(Arc::ptr_eq(&cache.get(&[1; 32]).unwrap(), &kept));
    }
}
