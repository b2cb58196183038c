//! Deterministic secp256k1 keys, and the signing of EIP-1559, EIP-4844 and
//! EIP-7702 transactions and of EIP-7702 authorizations.
//!
//! Key `i` of seed `s` is the first valid secret among
//! `keccak256("strata-gen-chain key" ‖ s ‖ i ‖ attempt)` for attempt 0, 1, …
//! (a hash is a valid secret unless it is zero or at least the curve order,
//! about one chance in 2^128). Signatures are RFC 6979 (deterministic), so
//! the same seed gives the same transactions, byte for byte.

use alloy_consensus::{SignableTransaction, TxEip1559, TxEip4844, TxEip7702, TxEnvelope};
use alloy_eips::eip7702::{Authorization, SignedAuthorization};
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

    /// Signs `tx` (its signing hash) with this key.
    pub fn sign(&self, tx: Unsigned) -> Result<TxEnvelope, k256::ecdsa::Error> {
        Ok(match tx {
            Unsigned::Eip1559(tx) => {
                let signature = self.sign_hash(tx.signature_hash())?;
                TxEnvelope::Eip1559(tx.into_signed(signature))
            }
            Unsigned::Eip7702(tx) => {
                let signature = self.sign_hash(tx.signature_hash())?;
                TxEnvelope::Eip7702(tx.into_signed(signature))
            }
            Unsigned::Eip4844(tx) => {
                let signature = self.sign_hash(tx.signature_hash())?;
                TxEnvelope::Eip4844(tx.into_signed(signature).into())
            }
        })
    }

    /// Signs an EIP-7702 authorization: this key's account delegates to
    /// the authorization's address.
    pub fn authorize(
        &self,
        authorization: Authorization,
    ) -> Result<SignedAuthorization, k256::ecdsa::Error> {
        let signature = self.sign_hash(authorization.signature_hash())?;
        Ok(authorization.into_signed(signature))
    }

    fn sign_hash(&self, hash: B256) -> Result<Signature, k256::ecdsa::Error> {
        let key = SigningKey::from_bytes(&self.secret.0.into())?;
        let (signature, recovery) = key.sign_prehash_recoverable(hash.as_slice())?;
        Ok(Signature::from((signature, recovery)))
    }
}

/// A transaction of the mix before it is signed.
#[derive(Clone, Debug)]
pub enum Unsigned {
    /// Every kind but a delegation.
    Eip1559(TxEip1559),
    /// A delegation (EIP-7702), its authorizations already signed.
    Eip7702(TxEip7702),
    /// A blob transaction (EIP-4844) as a block carries it: the blobs'
    /// versioned hashes, without the sidecar.
    Eip4844(TxEip4844),
}

impl Unsigned {
    /// The gas limit.
    pub fn gas_limit(&self) -> u64 {
        match self {
            Self::Eip1559(tx) => tx.gas_limit,
            Self::Eip7702(tx) => tx.gas_limit,
            Self::Eip4844(tx) => tx.gas_limit,
        }
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
        let signed = key.sign(Unsigned::Eip1559(tx.clone())).expect("signs");
        assert_eq!(signed.recover_signer().expect("recovers"), key.address);
        assert_eq!(
            signed,
            key.sign(Unsigned::Eip1559(tx)).expect("signs"),
            "RFC 6979: same bytes"
        );
    }
}
