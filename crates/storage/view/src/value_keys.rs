//! Keys of the state value cache: one tag byte (the domain, or bytecode by
//! hash) followed by the domain's key, built on the stack.

use std::ops::Deref;

use alloy_primitives::{B256, keccak256};
use bytes::Bytes;

use crate::overlay::Overlay;
use strata_types::domain::Domain;

/// The tag of bytecode looked up by its hash (after the domains' indices).
const CODE_BY_HASH_TAG: u8 = Domain::ALL.len() as u8;

/// Tag and key bytes fit inline up to this length (a storage key is 52).
const INLINE: usize = 63;

/// A value-cache key: inline for every key strata writes itself, on the
/// heap for longer raw keys.
pub enum CacheKey {
    /// Tag and key on the stack.
    Inline {
        /// Bytes used of `bytes`.
        len: u8,
        /// Tag then key.
        bytes: [u8; INLINE],
    },
    /// Tag and key on the heap (a raw key longer than strata writes).
    Heap(Vec<u8>),
}

impl CacheKey {
    fn tagged(tag: u8, key: &[u8]) -> CacheKey {
        if key.len() < INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[0] = tag;
            bytes[1..=key.len()].copy_from_slice(key);
            CacheKey::Inline {
                len: key.len() as u8 + 1,
                bytes,
            }
        } else {
            let mut bytes = Vec::with_capacity(key.len() + 1);
            bytes.push(tag);
            bytes.extend_from_slice(key);
            CacheKey::Heap(bytes)
        }
    }
}

impl Deref for CacheKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            CacheKey::Inline { len, bytes } => &bytes[..*len as usize],
            CacheKey::Heap(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for CacheKey {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

/// The cache key of `key` in `domain`.
pub fn value_key(domain: Domain, key: &[u8]) -> CacheKey {
    CacheKey::tagged(domain.index() as u8, key)
}

/// The cache key of the bytecode whose keccak256 is `hash`.
pub fn code_hash_key(hash: &B256) -> CacheKey {
    CacheKey::tagged(CODE_BY_HASH_TAG, hash.as_slice())
}

/// What a block's writes put in the value cache: every account, storage and
/// code write (deletions as known absences), and each new bytecode under
/// its hash (a lookup by hash may have cached its absence).
pub fn value_writes(overlay: &Overlay) -> Vec<(CacheKey, Option<Bytes>)> {
    let mut writes = Vec::with_capacity(overlay.len());
    for domain in [Domain::Account, Domain::Storage, Domain::Code] {
        for (key, value) in overlay.entries(domain) {
            writes.push((value_key(domain, key), value.clone()));
            if domain == Domain::Code
                && let Some(code) = value
            {
                writes.push((code_hash_key(&keccak256(code)), Some(code.clone())));
            }
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_tagged_by_domain_and_long_keys_spill_to_the_heap() {
        let account = value_key(Domain::Account, &[1; 20]);
        let storage = value_key(Domain::Storage, &[1; 20]);
        assert_ne!(&*account, &*storage);
        assert_eq!(account.len(), 21);
        assert!(matches!(
            value_key(Domain::Storage, &[2; 52]),
            CacheKey::Inline { .. }
        ));
        let long = value_key(Domain::Code, &[3; 100]);
        assert!(matches!(long, CacheKey::Heap(_)));
        assert_eq!(&long[1..], &[3; 100][..]);
        assert_ne!(
            &*code_hash_key(&B256::ZERO),
            &*value_key(Domain::Code, &[0; 32])
        );
    }
}
