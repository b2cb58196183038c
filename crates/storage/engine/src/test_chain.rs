//! The small chain the journal-tampering tests build (replay check, verify's
//! unwind-data check): block n sets account n's and account 0's nonce to n,
//! every block stays in the memory tier and the unwind window.

use std::path::Path;

use alloy_primitives::{Address, U256};

use crate::{Account, Options, StateDb};

/// No background work, no flush before the tests ask for one, a window of 16.
pub(crate) fn options() -> Options {
    Options {
        background_maintenance: false,
        flush_batch_bytes: 1 << 30,
        memory_budget_bytes: 1 << 30,
        unwind_depth: 16,
        ..Options::default()
    }
}

/// Account `i`'s address.
pub(crate) fn who(i: u64) -> Address {
    Address::with_last_byte(i as u8 + 1)
}

/// An account with `nonce` and a balance of 100.
pub(crate) fn account(nonce: u64) -> Account {
    Account {
        nonce,
        balance: U256::from(100),
        ..Account::default()
    }
}

/// Blocks `0..count`: block n sets account n's and account 0's nonce to n.
pub(crate) fn blocks(dir: &Path, count: u64) -> StateDb {
    let db = StateDb::open(dir, options()).unwrap();
    for n in 0..count {
        let mut writer = db.begin_block(n).unwrap();
        writer.put_account(who(n), &account(n));
        writer.put_account(who(0), &account(n));
        writer.commit().unwrap();
    }
    db
}
