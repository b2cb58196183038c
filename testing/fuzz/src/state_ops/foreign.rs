//! The foreign store of a run: a second small store whose blocks carry the
//! same numbers as the harness's but another workload (balances of 1000 and
//! up, which the fuzzed store never writes, from its genesis on, so no
//! block of it has the state or root of one of ours, and none of its
//! blocks can be a valid successor of one of ours). Its journal starts a
//! segment per block, so it holds a segment named after every block it
//! committed, ready to be put into the fuzzed store's journal by
//! [`JournalDamage::Foreign`]. Genesis is not offered: a foreign genesis
//! segment in place of ours, over a redb that holds no block yet, would
//! be a whole valid store, not damage.
//!
//! [`JournalDamage::Foreign`]: super::JournalDamage::Foreign

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use strata_storage::files::{FileSystem, MemFileSystem};
use strata_storage::{Account, StateDb};

use super::backend::MemDb;
use super::decode::Config;
use super::harness::store_options;
use super::journal::{JOURNAL_DIR, segment_name};

/// The foreign store, grown on demand.
pub struct Foreign {
    dir: tempfile::TempDir,
    files: MemFileSystem,
    db: StateDb,
    /// The last block committed.
    last: u64,
}

impl Foreign {
    /// A store with the fuzzed one's settings but a segment per block, at
    /// block 0.
    pub fn new(config: Config) -> Self {
        let files = MemFileSystem::new();
        let dir = tempfile::tempdir().expect("foreign datadir");
        let fs: Arc<dyn FileSystem> = Arc::new(files.clone());
        let mut options = store_options(config, None);
        options.journal_segment_bytes = 1;
        let db = StateDb::open_with_io(dir.path(), options, fs, Some(MemDb::default()))
            .expect("open the foreign store");
        let mut foreign = Foreign {
            dir,
            files,
            db,
            last: 0,
        };
        foreign.commit(0);
        foreign
    }

    /// The bytes of the foreign segment that starts at `block` (at least
    /// block 1), committing blocks up to it first.
    pub fn segment(&mut self, block: u64) -> Vec<u8> {
        let block = block.max(1);
        while self.last < block {
            self.commit(self.last + 1);
        }
        let path = self.dir.path().join(JOURNAL_DIR).join(segment_name(block));
        self.files
            .contents(&path)
            .unwrap_or_else(|| panic!("the foreign store has no segment {}", path.display()))
    }

    /// Commits `block`: three accounts and a slot, all with values the
    /// fuzzed store never writes.
    fn commit(&mut self, block: u64) {
        let mut writer = self.db.begin_block(block).expect("begin a foreign block");
        for i in 0..3u64 {
            let who = Address::with_last_byte(((block * 3 + i) % 8) as u8 + 1);
            writer.put_account(
                who,
                &Account {
                    nonce: block,
                    balance: U256::from(1000 + block * 7 + i),
                    ..Account::default()
                },
            );
        }
        let who = Address::with_last_byte((block % 8) as u8 + 1);
        writer.put_storage(who, B256::with_last_byte(1), U256::from(5000 + block));
        writer.commit().expect("commit a foreign block");
        self.last = block;
    }
}
