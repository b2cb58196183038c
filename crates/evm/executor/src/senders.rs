//! A block's senders, recovered from its transactions' signatures on
//! rayon's pool: by [`execute_block_with`](crate::execute_block_with)
//! itself, or ahead of it ([`RecoveredSenders`]), as an importer does while
//! the block before executes and commits (reth and Erigon recover senders
//! before execution too).

use std::time::{Duration, Instant};

use alloy_consensus::TxEnvelope;
use alloy_consensus::transaction::{Recovered, SignerRecoverable};
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::B256;

use crate::ChainSpec;
use crate::block::DecodedBlock;
use crate::error::InvalidBlock;

/// A block's senders recovered ahead of its execution
/// ([`ExecuteOptions::senders`](crate::ExecuteOptions::senders)); a
/// signature that recovers no sender is kept as the block's error.
#[derive(Debug)]
pub struct RecoveredSenders {
    /// The block they belong to.
    hash: B256,
    /// Whether EIP-2's rule (a signature's `s` in the lower half) applied.
    homestead: bool,
    transactions: Result<Vec<Recovered<TxEnvelope>>, InvalidBlock>,
    took: Duration,
}

impl RecoveredSenders {
    /// Recovers the senders of `block` under `spec`'s rules, one after
    /// the other on the calling thread (a thread of its own, ahead of the
    /// execution, takes the place of rayon's pool).
    pub fn recover(spec: &ChainSpec, block: &DecodedBlock) -> Self {
        let started = Instant::now();
        let homestead = homestead_at(spec, block);
        let transactions = block
            .block
            .body
            .transactions
            .iter()
            .enumerate()
            .map(|(index, tx)| recover_one(homestead, index, tx))
            .collect();
        Self {
            hash: block.hash,
            homestead,
            transactions,
            took: started.elapsed(),
        }
    }

    /// The time the recovery took.
    pub fn took(&self) -> Duration {
        self.took
    }

    /// The senders, when these were recovered for `block` under the rules
    /// `spec` gives it (`None`: another block or other rules, to be
    /// recovered again).
    pub(crate) fn for_block(
        &self,
        spec: &ChainSpec,
        block: &DecodedBlock,
    ) -> Option<Result<&[Recovered<TxEnvelope>], InvalidBlock>> {
        (self.hash == block.hash && self.homestead == homestead_at(spec, block))
            .then(|| self.transactions.as_deref().map_err(Clone::clone))
    }
}

fn homestead_at(spec: &ChainSpec, block: &DecodedBlock) -> bool {
    spec.is_homestead_active_at_block(block.number())
}

/// Every transaction of `block` with its sender, recovered in parallel;
/// the first transaction whose signature fails is named. From Homestead on
/// a signature's `s` must be in the lower half (EIP-2); Frontier accepted
/// either.
pub(crate) fn recover_senders(
    homestead: bool,
    block: &DecodedBlock,
) -> Result<Vec<Recovered<TxEnvelope>>, InvalidBlock> {
    use rayon::prelude::*;
    let recovered: Vec<Result<Recovered<TxEnvelope>, InvalidBlock>> = block
        .block
        .body
        .transactions
        .par_iter()
        .enumerate()
        .map(|(index, tx)| recover_one(homestead, index, tx))
        .collect();
    recovered.into_iter().collect()
}

/// Transaction `index`'s sender.
fn recover_one(
    homestead: bool,
    index: usize,
    tx: &TxEnvelope,
) -> Result<Recovered<TxEnvelope>, InvalidBlock> {
    let signer = if homestead {
        tx.recover_signer()
    } else {
        tx.recover_signer_unchecked()
    };
    signer
        .map(|signer| Recovered::new_unchecked(tx.clone(), signer))
        .map_err(|_| InvalidBlock::Signature { index })
}

/// The senders of `block` under `spec`'s rules, recovered now.
pub(crate) fn recover_now(
    spec: &ChainSpec,
    block: &DecodedBlock,
) -> Result<Vec<Recovered<TxEnvelope>>, InvalidBlock> {
    recover_senders(homestead_at(spec, block), block)
}

#[cfg(test)]
mod tests {
    use alloy_consensus::{Block, BlockBody, Header, SignableTransaction, TxEip1559};
    use alloy_primitives::{Address, Signature, TxKind, U256, keccak256};
    use k256::ecdsa::SigningKey;

    use super::*;

    /// secp256k1's group order.
    const ORDER: U256 = U256::from_be_slice(&[
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36,
        0x41, 0x41,
    ]);

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32].into()).expect("a valid secret")
    }

    fn signed(key: &SigningKey, nonce: u64, high_s: bool) -> TxEnvelope {
        let tx = TxEip1559 {
            chain_id: 1,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: 2_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(Address::repeat_byte(7)),
            value: U256::from(1),
            ..Default::default()
        };
        let (signature, recovery) = key
            .sign_prehash_recoverable(tx.signature_hash().as_slice())
            .expect("signs");
        let mut signature = Signature::from((signature, recovery));
        if high_s {
            // The same signature with `s` in the upper half (EIP-2 refuses
            // it; Frontier accepted it).
            signature = Signature::new(signature.r(), ORDER - signature.s(), !signature.v());
        }
        TxEnvelope::Eip1559(tx.into_signed(signature))
    }

    fn block(number: u64, transactions: Vec<TxEnvelope>) -> DecodedBlock {
        DecodedBlock {
            block: Block {
                header: Header {
                    number,
                    ..Default::default()
                },
                body: BlockBody {
                    transactions,
                    ommers: Vec::new(),
                    withdrawals: None,
                },
            },
            hash: keccak256(number.to_be_bytes()),
            access_list: None,
        }
    }

    fn spec(homestead: bool) -> ChainSpec {
        ChainSpec::from_chain_config(&alloy_genesis::ChainConfig {
            homestead_block: homestead.then_some(0),
            ..Default::default()
        })
    }

    fn senders(recovered: Result<&[Recovered<TxEnvelope>], InvalidBlock>) -> Vec<Address> {
        recovered
            .expect("recovered")
            .iter()
            .map(|tx| tx.signer())
            .collect()
    }

    #[test]
    fn senders_recovered_ahead_are_those_recovered_now() {
        let (alice, bob) = (key(1), key(2));
        let block = block(5, vec![signed(&alice, 0, false), signed(&bob, 0, false)]);
        let spec = spec(true);
        let ahead = RecoveredSenders::recover(&spec, &block);
        let now = recover_now(&spec, &block).expect("recovers");
        let expected: Vec<Address> = now.iter().map(|tx| tx.signer()).collect();
        assert_eq!(
            expected,
            [alice, bob].map(|key| Address::from_private_key(&key))
        );
        assert_eq!(
            senders(ahead.for_block(&spec, &block).expect("this block's")),
            expected
        );
    }

    #[test]
    fn a_high_s_signature_is_refused_from_homestead_on_ahead_as_now() {
        let alice = key(1);
        let block = block(5, vec![signed(&alice, 0, false), signed(&alice, 1, true)]);
        let homestead = spec(true);
        let ahead = RecoveredSenders::recover(&homestead, &block);
        let refused = InvalidBlock::Signature { index: 1 };
        assert_eq!(
            ahead
                .for_block(&homestead, &block)
                .expect("this block's")
                .err(),
            Some(refused.clone())
        );
        assert_eq!(recover_now(&homestead, &block).err(), Some(refused));
        // Under Frontier's rules the same signature recovers the same sender;
        // senders recovered under the other rules are not used.
        let frontier = spec(false);
        assert!(ahead.for_block(&frontier, &block).is_none());
        let ahead = RecoveredSenders::recover(&frontier, &block);
        let sender = Address::from_private_key(&alice);
        assert_eq!(
            senders(ahead.for_block(&frontier, &block).expect("this block's")),
            [sender, sender]
        );
    }

    #[test]
    fn senders_of_another_block_are_not_used() {
        let alice = key(1);
        let spec = spec(true);
        let first = block(5, vec![signed(&alice, 0, false)]);
        let second = block(6, vec![signed(&alice, 1, false)]);
        let ahead = RecoveredSenders::recover(&spec, &first);
        assert!(ahead.for_block(&spec, &second).is_none());
    }
}
