//! Check 4a: every account's code hashes to its `code_hash`, every stored
//! code belongs to an account that carries its hash, and the `code_by_hash`
//! table (what revm reads) holds that code under that hash.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, keccak256};
use bytes::Bytes;

use crate::account::Account;
use crate::db::value::hex;

/// Looks a code up in the `code_by_hash` table; the error is a problem text.
pub(super) type CodeByHash<'a> = dyn FnMut(&B256) -> Result<Option<Bytes>, String> + 'a;

/// Checks the live accounts against the live code domain (`address → code`)
/// and `code_by_hash`; returns how many codes were hashed and the problems.
pub(super) fn check_code(
    accounts: &BTreeMap<Address, Account>,
    codes: &BTreeMap<Address, Bytes>,
    code_by_hash: &mut CodeByHash<'_>,
) -> (u64, Vec<String>) {
    let mut problems = Vec::new();
    let mut checked = 0u64;
    for (address, account) in accounts {
        let code = codes.get(address);
        if !account.has_code() {
            if let Some(code) = code {
                problems.push(format!(
                    "account {address} has no code hash but the code domain holds {} bytes of code for it",
                    code.len()
                ));
            }
            continue;
        }
        let Some(code) = code else {
            problems.push(format!(
                "account {address} has code hash {} but the code domain holds no code for it",
                account.code_hash
            ));
            continue;
        };
        checked += 1;
        let hashed = keccak256(code);
        if hashed != account.code_hash {
            problems.push(format!(
                "account {address}: its {} bytes of code hash to {hashed}, not to the account's code hash {}",
                code.len(),
                account.code_hash
            ));
            continue;
        }
        match code_by_hash(&account.code_hash) {
            Err(problem) => problems.push(problem),
            Ok(None) => problems.push(format!(
                "code_by_hash holds no entry for {} (the code of account {address})",
                account.code_hash
            )),
            Ok(Some(by_hash)) if by_hash != *code => problems.push(format!(
                "code_by_hash entry {} ({} bytes, hashing to {}) differs from the code of account {address} ({} bytes)",
                account.code_hash,
                by_hash.len(),
                keccak256(&by_hash),
                code.len()
            )),
            Ok(Some(_)) => {}
        }
    }
    for (address, code) in codes {
        if !accounts.contains_key(address) {
            problems.push(format!(
                "the code domain holds {} bytes of code for 0x{} which has no account",
                code.len(),
                hex(address.as_slice())
            ));
        }
    }
    (checked, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    fn account(code: &[u8]) -> Account {
        Account {
            nonce: 1,
            balance: U256::from(5),
            code_hash: keccak256(code),
        }
    }

    #[test]
    fn sound_code_has_no_problem() {
        let a = Address::repeat_byte(1);
        let accounts = BTreeMap::from([
            (a, account(b"\x60\x00")),
            (Address::repeat_byte(2), Account::default()),
        ]);
        let codes = BTreeMap::from([(a, Bytes::from_static(b"\x60\x00"))]);
        let mut by_hash = |_: &B256| Ok(Some(Bytes::from_static(b"\x60\x00")));
        assert_eq!(check_code(&accounts, &codes, &mut by_hash), (1, vec![]));
    }

    #[test]
    fn code_that_no_longer_hashes_to_the_code_hash_is_named() {
        let a = Address::repeat_byte(1);
        let accounts = BTreeMap::from([(a, account(b"\x60\x00"))]);
        let codes = BTreeMap::from([(a, Bytes::from_static(b"\x60\x01"))]);
        let mut by_hash = |_: &B256| Ok(None);
        let (_, problems) = check_code(&accounts, &codes, &mut by_hash);
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
        let codes = BTreeMap::from([
            (a, Bytes::from_static(b"\x60\x00")),
            (c, Bytes::from_static(b"\x60\x03")),
        ]);
        let mut by_hash = |_: &B256| Ok(Some(Bytes::from_static(b"\xfe")));
        let (checked, problems) = check_code(&accounts, &codes, &mut by_hash);
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
