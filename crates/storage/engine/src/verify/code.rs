//! Check 4a: every account's code hashes to its `code_hash`, every stored
//! code belongs to an account that carries its hash, and the `code_by_hash`
//! table (what revm reads) holds that code under that hash.
//!
//! The codes are walked once, each reduced to a [`CodeDigest`]; the
//! accounts are then checked one by one, in address order, against the
//! digest of their code.

use alloy_primitives::{Address, B256, keccak256};
use bytes::Bytes;

use alloy_primitives::hex::encode as hex;
use strata_types::account::Account;

/// Looks a code up in the `code_by_hash` table; the error is a problem text.
pub(super) type CodeByHash<'a> = dyn FnMut(&B256) -> Result<Option<Bytes>, String> + 'a;

/// What the checks need of one stored code: its hash and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CodeDigest {
    pub(super) hash: B256,
    pub(super) len: u64,
}

impl CodeDigest {
    /// Bytes of an encoded digest (hash, then length big-endian).
    pub(super) const LEN: usize = 32 + 8;

    /// The digest of `code`.
    pub(super) fn of(code: &[u8]) -> Self {
        Self {
            hash: keccak256(code),
            len: code.len() as u64,
        }
    }

    /// The digest's bytes, as the sort carries them.
    pub(super) fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..32].copy_from_slice(self.hash.as_slice());
        out[32..].copy_from_slice(&self.len.to_be_bytes());
        out
    }

    /// Decodes what [`CodeDigest::encode`] wrote; `None` for another length.
    pub(super) fn decode(bytes: &[u8]) -> Option<Self> {
        (bytes.len() == Self::LEN).then(|| Self {
            hash: B256::from_slice(&bytes[..32]),
            len: u64::from_be_bytes(bytes[32..].try_into().expect("8 bytes")),
        })
    }
}

/// Checks `account` (at `address`) against the digest of the code the code
/// domain holds for it (`None`: no code), and `code_by_hash`. Returns
/// whether a code was hashed and checked.
pub(super) fn check_account_code(
    address: Address,
    account: &Account,
    code: Option<CodeDigest>,
    code_by_hash: &mut CodeByHash<'_>,
    problems: &mut Vec<String>,
) -> bool {
    if !account.has_code() {
        if let Some(code) = code {
            problems.push(format!(
                "account {address} has no code hash but the code domain holds {} bytes of code for it",
                code.len
            ));
        }
        return false;
    }
    let Some(code) = code else {
        problems.push(format!(
            "account {address} has code hash {} but the code domain holds no code for it",
            account.code_hash
        ));
        return false;
    };
    if code.hash != account.code_hash {
        problems.push(format!(
            "account {address}: its {} bytes of code hash to {}, not to the account's code hash {}",
            code.len, code.hash, account.code_hash
        ));
        return true;
    }
    match code_by_hash(&account.code_hash) {
        Err(problem) => problems.push(problem),
        Ok(None) => problems.push(format!(
            "code_by_hash holds no entry for {} (the code of account {address})",
            account.code_hash
        )),
        Ok(Some(by_hash)) => {
            let found = CodeDigest::of(&by_hash);
            if found != code {
                problems.push(format!(
                    "code_by_hash entry {} ({} bytes, hashing to {}) differs from the code of account {address} ({} bytes)",
                    account.code_hash, found.len, found.hash, code.len
                ));
            }
        }
    }
    true
}

/// The problem of a stored code whose address (`key`) has no account.
pub(super) fn orphan_code(key: &[u8], code: CodeDigest) -> String {
    format!(
        "the code domain holds {} bytes of code for 0x{} which has no account",
        code.len,
        hex(key)
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use alloy_primitives::U256;

    fn account(code: &[u8]) -> Account {
        Account {
            nonce: 1,
            balance: U256::from(5),
            code_hash: keccak256(code),
        }
    }

    /// Runs the checks the way verify does, over whole maps.
    fn check(
        accounts: &BTreeMap<Address, Account>,
        codes: &BTreeMap<Address, &'static [u8]>,
        code_by_hash: &mut CodeByHash<'_>,
    ) -> (u64, Vec<String>) {
        let mut problems = Vec::new();
        let mut checked = 0;
        for (address, account) in accounts {
            let code = codes.get(address).map(|code| CodeDigest::of(code));
            checked += u64::from(check_account_code(
                *address,
                account,
                code,
                code_by_hash,
                &mut problems,
            ));
        }
        for (address, code) in codes {
            if !accounts.contains_key(address) {
                problems.push(orphan_code(address.as_slice(), CodeDigest::of(code)));
            }
        }
        (checked, problems)
    }

    #[test]
    fn a_digest_round_trips_and_refuses_another_length() {
        let digest = CodeDigest::of(b"\x60\x00");
        assert_eq!(CodeDigest::decode(&digest.encode()), Some(digest));
        assert_eq!(CodeDigest::decode(&digest.encode()[1..]), None);
    }

    #[test]
    fn sound_code_has_no_problem() {
        let a = Address::repeat_byte(1);
        let accounts = BTreeMap::from([
            (a, account(b"\x60\x00")),
            (Address::repeat_byte(2), Account::default()),
        ]);
        let codes = BTreeMap::from([(a, &b"\x60\x00"[..])]);
        let mut by_hash = |_: &B256| Ok(Some(Bytes::from_static(b"\x60\x00")));
        assert_eq!(check(&accounts, &codes, &mut by_hash), (1, vec![]));
    }

    #[test]
    fn code_that_no_longer_hashes_to_the_code_hash_is_named() {
        let a = Address::repeat_byte(1);
        let accounts = BTreeMap::from([(a, account(b"\x60\x00"))]);
        let codes = BTreeMap::from([(a, &b"\x60\x01"[..])]);
        let mut by_hash = |_: &B256| Ok(None);
        let (_, problems) = check(&accounts, &codes, &mut by_hash);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains(&a.to_string()), "{problems:?}");
        assert!(
            problems[0].contains("not to the account's code hash"),
            "{problems:?}"
        );
    }

    #[test]
    fn missing_orphan_and_disagreeing_code_by_hash_are_named() {
        let (a, b, c) = (
            Address::repeat_byte(1),
            Address::repeat_byte(2),
            Address::repeat_byte(3),
        );
        let accounts = BTreeMap::from([(a, account(b"\x60\x00")), (b, account(b"\x60\x02"))]);
        let codes = BTreeMap::from([(a, &b"\x60\x00"[..]), (c, &b"\x60\x03"[..])]);
        let mut by_hash = |_: &B256| Ok(Some(Bytes::from_static(b"\xfe")));
        let (checked, problems) = check(&accounts, &codes, &mut by_hash);
        assert_eq!(checked, 1);
        let text = problems.join("\n");
        assert_eq!(problems.len(), 3, "{text}");
        assert!(text.contains("code_by_hash entry"), "{text}");
        assert!(
            text.contains(&format!("account {b} has code hash")),
            "{text}"
        );
        assert!(text.contains("which has no account"), "{text}");
    }
}
