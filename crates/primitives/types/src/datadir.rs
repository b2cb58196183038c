//! The datadir's layout and identity: the names of what a datadir holds,
//! in one place, for the engine that writes them and every tool and error
//! message that names them.

use std::fmt;

/// Name of the redb file inside the datadir.
pub const DB_FILE: &str = "state.redb";
/// Name of the folder of immutable files inside the datadir.
pub const FILES_DIR: &str = "files";
/// Name of the folder of history files inside the datadir (a datadir
/// that keeps history): immutable sorted files of each domain's changes,
/// one per block range.
pub const HISTORY_DIR: &str = "history";
/// Name of the journal's folder inside the datadir.
pub const JOURNAL_DIR: &str = "journal";
/// Name of the folder where a writer shared with readers in other
/// processes publishes each block's branch records (never synced, never
/// needed by its recovery; rewritten from scratch at each open).
pub const BRANCHES_DIR: &str = "branches";
/// The scratch folder of an import, inside the datadir.
pub const IMPORT_DIR: &str = "import.tmp";

/// A datadir's identity: 16 random bytes drawn when its database is
/// created, kept in redb's metadata and written into every journal segment,
/// so a segment copied in from another datadir is told apart.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatadirId(pub [u8; 16]);

impl DatadirId {
    /// A new, random identity (from the operating system's generator).
    pub fn random() -> std::io::Result<DatadirId> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        Ok(DatadirId(bytes))
    }
}

impl fmt::Display for DatadirId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for DatadirId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatadirId({self})")
    }
}
