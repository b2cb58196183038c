//! [`CommitStats`]: what one commitment computation did (hashes, records
//! and leaves read, records written), counted by each walker and summed.

/// Counters of one [`crate::compute_root`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// keccak256 invocations, node hashing and key hashing together.
    pub keccak_calls: u64,
    /// keccak-f permutations those calls cost (`len / 136 + 1` per input): a
    /// full 16-child branch (532 bytes) costs 4, a typical leaf 1.
    pub keccak_blocks: u64,
    /// Of `keccak_calls`, the ones that hashed touched addresses and slots.
    pub key_hashes: u64,
    /// Records requested from the [`crate::BranchSource`].
    pub records_read: u64,
    /// Accounts and slots read from the [`crate::StateSource`].
    pub leaves_read: u64,
    /// Records written (new or changed) in the output.
    pub records_written: u64,
    /// Records deleted in the output.
    pub records_deleted: u64,
    /// Distinct touched accounts (including storage-only and wiped ones).
    pub touched_accounts: u64,
    /// Distinct touched storage slots.
    pub touched_slots: u64,
}

impl CommitStats {
    /// Adds another walk's counters to these.
    pub fn add(&mut self, o: &CommitStats) {
        self.keccak_calls += o.keccak_calls;
        self.keccak_blocks += o.keccak_blocks;
        self.key_hashes += o.key_hashes;
        self.records_read += o.records_read;
        self.leaves_read += o.leaves_read;
        self.records_written += o.records_written;
        self.records_deleted += o.records_deleted;
        self.touched_accounts += o.touched_accounts;
        self.touched_slots += o.touched_slots;
    }
}
