//! The state domains and the regimes that read them.

/// One of the four state domains. Each has its own redb table and its own
/// immutable files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Domain {
    /// address (20 bytes) → nonce, balance, code hash.
    Account,
    /// address ‖ slot (20 + 32 bytes) → value, big-endian, leading zeros trimmed.
    Storage,
    /// address (20 bytes) → bytecode.
    Code,
    /// compact nibble path → encoded branch node.
    Commitment,
}

impl Domain {
    /// All domains, in their fixed index order.
    pub const ALL: [Domain; 4] = [
        Domain::Account,
        Domain::Storage,
        Domain::Code,
        Domain::Commitment,
    ];

    /// A dense index (0..4) for arrays keyed by domain.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The lower-case name used in table names, file names and metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Domain::Account => "account",
            Domain::Storage => "storage",
            Domain::Code => "code",
            Domain::Commitment => "commitment",
        }
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Who issued a read: block execution or the commitment (and its warmers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Regime {
    /// EVM execution reading state.
    Exec,
    /// The state-root calculation and the warmers that prefetch for it.
    Commitment,
}

impl Regime {
    /// Both regimes, in their fixed index order.
    pub const ALL: [Regime; 2] = [Regime::Exec, Regime::Commitment];

    /// A dense index (0..2) for arrays keyed by regime.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The lower-case name used in metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Regime::Exec => "exec",
            Regime::Commitment => "commitment",
        }
    }
}

impl std::fmt::Display for Regime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
