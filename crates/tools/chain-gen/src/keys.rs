//! Deterministic secp256k1 keys and EIP-1559 transaction signing.
//!
//! Key `i` of seed `s` is the first valid secret among
//! `keccak256("strata-gen-chain key" ‖ s ‖ i ‖ attempt)` for attempt 0, 1, …
//! (a hash is a valid secret unless it is zero or at least the curve order,
//! about one chance in 2^128). Signatures are RFC 6979 (deterministic), so
//! the same seed gives the same transactions, byte for byte.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{Address, B256, Signature, keccak256};
use k256::ecdsa::SigningKey;

/// Domain separation of key derivation.
const KEY_DOMAIN: &[u8] = b"strata-gen-chain key";

/// One account's key: its secret and its address.
#[derive(Clone, Debug)]
pub struct AccountKey {
    /// The 32-byte secret (kept as bytes: a `SigningKey` is rebuilt per
    /// signature, so a million accounts cost 52 bytes each, not ~150).
    pub secret: B256,
    /// keccak256 of the public key, last 20 bytes.
    pub address: Address,
}

impl AccountKey {
    /// Key number `index` of `seed`.
    pub fn derive(seed: u64, index: u64) -> Self {
        let mut attempt: u32 = 0;
        loop {
            let mut input = Vec::with_capacity(KEY_DOMAIN.len() + 20);
            input.extend_from_slice(KEY_DOMAIN);
            input.extend_from_slice(&seed.to_be_bytes());
            input.extend_from_slice(&index.to_be_bytes());
            input.extend_from_slice(&attempt.to_be_bytes());
            let secret = keccak256(&input);
            if let Ok(key) = SigningKey::from_bytes(&secret.0.into()) {
                return Self {
                    secret,
                    address: Address::from_private_key(&key),
                };
            }
            attempt = attempt.wrapping_add(1);
        }
    }

    /// Signs `tx` (its EIP-1559 signing hash) with this key.
    pub fn sign(&self, tx: TxEip1559) -> Result<TxEnvelope, k256::ecdsa::Error> {
        let key = SigningKey::from_bytes(&self.secret.0.into())?;
        let (signature, recovery) = key.sign_prehash_recoverable(tx.signature_hash().as_slice())?;
        let signature = Signature::from((signature, recovery));
        Ok(TxEnvelope::Eip1559(tx.into_signed(signature)))
    }
}

#[cfg(test)]
mod tests {
    use alloy_consensus::transaction::SignerRecoverable;
    use alloy_primitives::{TxKind, U256};

    use super::*;

    #[test]
    fn keys_are_deterministic_and_distinct() {
        let a = AccountKey::derive(7, 0);
        assert_eq!(a.address, AccountKey::derive(7, 0).address);
        assert_ne!(a.address, AccountKey::derive(7, 1).address);
        assert_ne!(a.address, AccountKey::derive(8, 0).address);
    }

    #[test]
    fn a_signed_transaction_recovers_its_signer() {
        let key = AccountKey::derive(1, 42);
        let tx = TxEip1559 {
            chain_id: 1337,
            nonce: 3,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(Address::repeat_byte(9)),
            value: U256::from(5),
            ..Default::default()
        };
        let signed = key.sign(tx.clone()).expect("signs");
        assert_eq!(signed.recover_signer().expect("recovers"), key.address);
        assert_eq!(signed, key.sign(tx).expect("signs"), "RFC 6979: same bytes");
    }
}
