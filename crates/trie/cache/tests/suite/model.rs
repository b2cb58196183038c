//! Every cache kind behaves like a map within its capacity (proptest
//! against a `HashMap` model).

use std::collections::HashMap;

use bytes::Bytes;
use proptest::prelude::*;
use strata_cache::{CacheKind, build_cache};

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
    Get(Vec<u8>),
    Load(Vec<u8>, Option<Vec<u8>>),
    Clear,
}

/// Short paths (pinned and tail), mostly nibbles, sometimes not, and a few
/// around the inline key limit (80 nibbles) and long non-nibble keys.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(0u8..4, 0..5),
        2 => proptest::collection::vec(any::<u8>(), 0..3),
        1 => proptest::collection::vec(0u8..2, 79..82),
        1 => proptest::collection::vec(prop_oneof![Just(0u8), Just(200u8)], 45..48),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        4 => (key(), bytes()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => key().prop_map(Op::Remove),
        4 => key().prop_map(Op::Get),
        2 => (key(), proptest::option::of(bytes())).prop_map(|(k, v)| Op::Load(k, v)),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn caches_behave_like_a_map(ops in proptest::collection::vec(op(), 1..120)) {
        for &kind in CacheKind::ALL {
            let cache = build_cache(kind, 64 << 20);
            let mut model: HashMap<Vec<u8>, Bytes> = HashMap::new();
            for op in &ops {
                match op {
                    Op::Insert(k, v) => {
                        cache.insert(k, Bytes::from(v.clone()));
                        model.insert(k.clone(), Bytes::from(v.clone()));
                    }
                    Op::Remove(k) => {
                        cache.remove(k);
                        model.remove(k);
                    }
                    Op::Get(k) => prop_assert_eq!(cache.get(k), model.get(k).cloned(), "{} get {:?}", kind, k),
                    Op::Load(k, v) => {
                        let mut ran = false;
                        let loaded = v.clone().map(Bytes::from);
                        let lookup = cache
                            .get_or_load(k, &mut || { ran = true; Ok(loaded.clone()) })
                            .map_err(|e| TestCaseError::fail(e.to_string()))?;
                        match model.get(k) {
                            Some(cached) => {
                                prop_assert!(!ran && lookup.hit, "{} {:?}: cached value not used", kind, k);
                                prop_assert_eq!(lookup.value.as_ref(), Some(cached));
                            }
                            None => {
                                prop_assert!(ran && !lookup.hit, "{} {:?}: loader skipped", kind, k);
                                prop_assert_eq!(&lookup.value, &loaded);
                                if let Some(value) = loaded {
                                    model.insert(k.clone(), value);
                                }
                            }
                        }
                    }
                    Op::Clear => {
                        cache.clear();
                        model.clear();
                    }
                }
            }
            prop_assert_eq!(cache.stats().entries, model.len() as u64, "{}", kind);
            for (k, v) in &model {
                prop_assert_eq!(cache.get(k), Some(v.clone()), "{} final {:?}", kind, k);
            }
        }
    }
}
