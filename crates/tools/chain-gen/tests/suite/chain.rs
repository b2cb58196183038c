//! The generated chain on its own: deterministic, decodable, near its gas
//! target, every header root equal to a recomputation.

use alloy_consensus::proofs::calculate_transaction_root;
use alloy_consensus::transaction::SignerRecoverable;
use alloy_primitives::{B256, U256};
use alloy_trie::root::{state_root_unhashed, storage_root_unhashed};
use alloy_trie::{EMPTY_ROOT_HASH, TrieAccount};
use strata_chain_gen::{CHAIN_FILE, CHAIN_ID, GENESIS_FILE, Generator, TxShape, write_chain};

use super::{read_blocks, small_config};

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let config = small_config(5);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_chain(&config, a.path(), |_| {}).expect("generates");
    write_chain(&config, b.path(), |_| {}).expect("generates");
    for file in [GENESIS_FILE, CHAIN_FILE] {
        let (x, y) = (
            std::fs::read(a.path().join(file)).unwrap(),
            std::fs::read(b.path().join(file)).unwrap(),
        );
        assert!(!x.is_empty());
        assert!(x == y, "{file} differs between two runs of one seed");
    }
    let other = tempfile::tempdir().unwrap();
    write_chain(&small_config(6), other.path(), |_| {}).expect("generates");
    assert_ne!(
        std::fs::read(a.path().join(CHAIN_FILE)).unwrap(),
        std::fs::read(other.path().join(CHAIN_FILE)).unwrap()
    );
}

#[test]
fn blocks_decode_near_their_gas_target_with_signed_type_2_transactions() {
    let config = small_config(1);
    let dir = tempfile::tempdir().unwrap();
    let summary = write_chain(&config, dir.path(), |_| {}).expect("generates");
    let blocks = read_blocks(&dir.path().join(CHAIN_FILE));
    assert_eq!(blocks.len(), 3);
    let mut parent_hash = summary.genesis_hash;
    for (index, block) in blocks.iter().enumerate() {
        let header = block.header();
        assert_eq!(header.number, index as u64 + 1);
        assert_eq!(header.parent_hash, parent_hash);
        parent_hash = block.hash;
        assert!(
            header.gas_used >= config.gas_per_block
                && header.gas_used < config.gas_per_block + 1_100_000,
            "block {} used {} gas, target {}",
            header.number,
            header.gas_used,
            config.gas_per_block
        );
        assert_eq!(header.gas_limit, 2 * config.gas_per_block);
        let transactions = &block.block.body.transactions;
        assert!(
            transactions.len() >= 10,
            "{} transactions",
            transactions.len()
        );
        for tx in transactions {
            // EIP-1559, the blob transactions' EIP-4844, and from Prague
            // the delegations' EIP-7702.
            let chain_id = match (tx.as_eip1559(), tx.as_eip7702()) {
                (Some(tx), _) => tx.tx().chain_id,
                (None, None) if tx.as_eip4844().is_some() => {
                    tx.as_eip4844()
                        .expect("a blob transaction")
                        .tx()
                        .tx()
                        .chain_id
                }
                (None, Some(tx)) => {
                    for authorization in &tx.tx().authorization_list {
                        authorization
                            .recover_authority()
                            .expect("the authorization recovers");
                    }
                    tx.tx().chain_id
                }
                (None, None) => panic!("a transaction of another type: {tx:?}"),
            };
            assert_eq!(chain_id, CHAIN_ID);
            tx.recover_signer().expect("the signature recovers");
        }
        assert_eq!(
            header.transactions_root,
            calculate_transaction_root(transactions)
        );
        assert_eq!(header.withdrawals_root, Some(EMPTY_ROOT_HASH));
        assert!(header.difficulty.is_zero() && header.nonce.is_zero());
        assert_eq!(
            block.block.body.withdrawals.as_ref().map(|w| w.is_empty()),
            Some(true)
        );
    }
    assert_eq!(summary.head.1, parent_hash);
    assert_eq!(summary.reverted, 0, "no transaction of the mix reverts");
    // Every shape of the mix shows up in 3 blocks of 2 Mgas (about 100 txs).
    for shape in [
        TxShape::EtherTransfer,
        TxShape::TokenTransfer,
        TxShape::RouterCall,
    ] {
        assert!(
            summary.shapes.get(&shape).copied().unwrap_or(0) > 0,
            "{shape:?}"
        );
    }
}

#[test]
fn every_state_root_equals_a_recomputation_from_the_whole_state() {
    let mut generator = Generator::new(&small_config(3)).expect("starts");
    let recompute = |generator: &Generator| {
        let accounts = &generator.world().db().cache.accounts;
        state_root_unhashed(accounts.iter().filter_map(|(address, account)| {
            let info = account.info()?;
            let storage_root = storage_root_unhashed(
                account
                    .storage
                    .iter()
                    .map(|(slot, value)| (B256::from(*slot), *value)),
            );
            Some((
                *address,
                TrieAccount {
                    nonce: info.nonce,
                    balance: info.balance,
                    storage_root,
                    code_hash: info.code_hash,
                },
            ))
        }))
    };
    assert_eq!(generator.head().0.state_root, recompute(&generator));
    // The header built from the world's root is the one alloy-trie's root
    // of the allocation gives.
    let genesis = strata_executor::GenesisBlock::new(generator.genesis()).expect("genesis");
    assert_eq!(generator.head().1, genesis.hash);
    for _ in 0..4 {
        let block = generator.next_block().expect("a block");
        let root = block.block.header.state_root;
        assert_eq!(
            root,
            recompute(&generator),
            "block {}",
            block.block.header.number
        );
        assert_eq!(root, generator.world().full_state_root());
        assert!(
            generator
                .world()
                .db()
                .cache
                .accounts
                .values()
                .all(|a| a.storage.values().all(|v| *v != U256::ZERO))
        );
    }
}
