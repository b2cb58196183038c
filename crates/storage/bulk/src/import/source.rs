//! Where an import's accounts come from ([`AccountSource`]): whole
//! accounts, or — for an account too large to hold — its fields with its
//! storage pushed slot by slot into a [`LargeStorage`], which sorts it on
//! disk while the source reads it.
//!
//! Any iterator of `Result<(Address, GenesisAccount), E>` is a source of
//! whole accounts; [`crate::dump::DumpReader`] streams the storage of a line
//! longer than [`LargeStorage::stream_above_bytes`].

use std::path::Path;

use alloy_primitives::{Address, B256, U256};

use crate::account_trie::SlotSort;
use crate::error::BulkError;
use crate::sort::RunError;
use strata_genesis::GenesisAccount;

/// One account of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceAccount {
    /// An account with its whole storage.
    Whole(Address, GenesisAccount),
    /// An account whose storage is what the source pushed into the
    /// [`LargeStorage`] of the call that returned it (and the slots of
    /// `storage`, if any).
    Streamed(Address, GenesisAccount),
}

/// The accounts of an import, in any order.
pub trait AccountSource {
    /// Why an account could not be read.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The next account, `None` after the last. The slots of an account
    /// returned as [`SourceAccount::Streamed`] are pushed into `large`
    /// during this call; a [`LargePushError`] from `large` ends the source
    /// (the import reports the cause).
    fn next_account(
        &mut self,
        large: &mut LargeStorage,
    ) -> Option<Result<SourceAccount, Self::Error>>;

    /// The error for a slot that the last streamed account lists twice,
    /// naming where it is in the input; `None` leaves it to the import's
    /// [`BulkError::RepeatedSlot`].
    fn repeated_slot(&self, address: Address, slot: B256) -> Option<Self::Error> {
        let _ = (address, slot);
        None
    }
}

/// An iterator of whole accounts is a source.
impl<I, E> AccountSource for I
where
    I: Iterator<Item = Result<(Address, GenesisAccount), E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    type Error = E;

    fn next_account(&mut self, _: &mut LargeStorage) -> Option<Result<SourceAccount, E>> {
        self.next()
            .map(|item| item.map(|(address, account)| SourceAccount::Whole(address, account)))
    }
}

/// The storage of one streamed account, sorted on disk by hashed slot as it
/// arrives, within a share of the import's sort budget.
pub struct LargeStorage {
    dir: std::path::PathBuf,
    budget: usize,
    sort: Option<SlotSort>,
    failed: Option<RunError>,
}

/// [`LargeStorage::push`] failed: the scratch sort could not spill (the
/// import reports the cause, naming the run file).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the storage of a large account could not be sorted on disk")]
pub struct LargePushError;

impl LargeStorage {
    /// Streams into runs in `dir`, spilling each `budget` bytes.
    pub(crate) fn new(dir: &Path, budget: usize) -> Self {
        Self {
            dir: dir.to_path_buf(),
            budget,
            sort: None,
            failed: None,
        }
    }

    /// The size of input (a dump line's bytes) above which a source should
    /// stream an account's storage here instead of returning it whole: half
    /// the budget, about as many slots as one run of the sort holds.
    pub fn stream_above_bytes(&self) -> usize {
        self.budget / 2
    }

    /// Adds a slot of the account being read (zero values too: a repeated
    /// slot is refused whatever its values).
    pub fn push(&mut self, slot: B256, value: U256) -> Result<(), LargePushError> {
        if self.failed.is_some() {
            return Err(LargePushError);
        }
        let sort = self
            .sort
            .get_or_insert_with(|| SlotSort::new(&self.dir, self.budget));
        sort.push(slot, value).map_err(|e| {
            self.failed = Some(e);
            LargePushError
        })
    }

    /// A sort with nothing in it (a streamed account without slots).
    pub(crate) fn empty_sort(&self) -> SlotSort {
        SlotSort::new(&self.dir, self.budget)
    }

    /// What was pushed since the last take (`None` if nothing), or why a
    /// push failed.
    pub(crate) fn take(&mut self) -> Result<Option<SlotSort>, BulkError> {
        let sort = self.sort.take();
        match self.failed.take() {
            Some(e) => Err(e.into()),
            None => Ok(sort),
        }
    }
}
