//! The trace reader: a bad-input matrix (each error names the line, and
//! where it applies the address and the field), spellings it accepts, and
//! writer → reader round trips.

use std::collections::BTreeMap;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use strata_trace::model::WorldState;
use strata_trace::{
    AccountRead, AccountWrite, TraceBlock, TraceError, TraceLine, TraceReader, TraceWriter,
};

const A: &str = "0x00000000000000000000000000000000000000aa";
const GOOD_BLOCK_1: &str = r#"{"kind":"block","number":1,"reads":{},"writes":{}}"#;

/// Read a whole trace; return the first error's message.
fn first_error(text: &str) -> String {
    for item in TraceReader::new(text.as_bytes()) {
        if let Err(e) = item {
            return e.to_string();
        }
    }
    panic!("no error in:\n{text}");
}

fn read_all(text: &str) -> Vec<TraceLine> {
    TraceReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn bad_input_matrix() {
    let long_slot = format!("0x{}", "11".repeat(33));
    let big_balance = format!("0x1{}", "0".repeat(64));
    let cases: Vec<(String, &[&str])> = vec![
        (r#"{"kind":"block","number":2,"#.to_owned(), &["line 2: invalid JSON at column"]),
        ("[1,2]".to_owned(), &["line 2: line: expected a JSON object, found [1,2]"]),
        (r#"{"kind":"blok","number":2,"reads":{},"writes":{}}"#.to_owned(), &["line 2: unknown kind \"blok\""]),
        (r#"{"number":2,"reads":{},"writes":{}}"#.to_owned(), &["line 2: line: missing field \"kind\""]),
        (r#"{"kind":"block","reads":{},"writes":{}}"#.to_owned(), &["line 2: block: missing field \"number\""]),
        (r#"{"kind":"block","number":2,"writes":{}}"#.to_owned(), &["line 2: block: missing field \"reads\""]),
        (r#"{"kind":"block","number":2,"reads":{},"writes":{},"extra":1}"#.to_owned(), &["line 2: line: unknown field `extra`, expected one of", "(column 57)"]),
        (r#"{"kind":"block","number":"0xzz","reads":{},"writes":{}}"#.to_owned(), &["line 2: field \"number\": invalid number \"0xzz\""]),
        (
            r#"{"kind":"block","number":2,"state_root":"0x1234","reads":{},"writes":{}}"#.to_owned(),
            &["line 2: field \"state_root\": expected 32 bytes, found 2"],
        ),
        (
            r#"{"kind":"block","number":2,"reads":{"0x00000000000000000000000000000000000000":{"balance":"0x1","nonce":0}},"writes":{}}"#.to_owned(),
            &["line 2: reads: invalid address \"0x00000000000000000000000000000000000000\": expected 20 bytes, found 19"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"nonce":0}}}},"writes":{{}}}}"#),
            &["line 2: reads 0x00000000000000000000000000000000000000aa: missing field \"balance\""],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":"0x1","nonce":"0x10000000000000000"}}}},"writes":{{}}}}"#),
            &["line 2: reads 0x00000000000000000000000000000000000000aa: field \"nonce\"", "out of range", "2^64-1"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"balance":"{big_balance}"}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"balance\"", "2^256-1"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":"0x1","nonce":1,"code_hash":"0x{}"}}}},"writes":{{}}}}"#, "ab".repeat(31)),
            &["line 2: reads 0x00000000000000000000000000000000000000aa: field \"code_hash\": expected 32 bytes, found 31"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":"0x1","nonce":1,"code_hash":"0x{}","code":"0x6001"}}}},"writes":{{}}}}"#, "ab".repeat(32)),
            &["line 2: reads 0x00000000000000000000000000000000000000aa: field \"code_hash\"", "is not keccak256(code)"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"storage":{{"{long_slot}":"0x1"}}}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"storage\": expected at most 32 bytes, found 33"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"storage":{{"0x01":"0xgg"}}}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"storage[0x01]\": invalid hex \"0xgg\""],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"code":"0x123"}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"code\": invalid hex \"0x123\""],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"balence":"0x1"}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: unknown field `balence`, expected one of `deleted`"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"deleted":"yes"}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"deleted\": expected true or false"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: empty entry"],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"nonce":-1}}}}}}"#),
            &["line 2: writes 0x00000000000000000000000000000000000000aa: field \"nonce\": invalid number \"-1\""],
        ),
        (
            format!(r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":1.5,"nonce":0}}}},"writes":{{}}}}"#),
            &["line 2: reads 0x00000000000000000000000000000000000000aa: field \"balance\": invalid number \"1.5\""],
        ),
        (r#"{"kind":"block","number":3,"reads":{},"writes":{}}"#.to_owned(), &["line 2: block number 3 does not follow block 1 (expected 2)"]),
        (r#"{"kind":"block","number":1,"reads":{},"writes":{}}"#.to_owned(), &["line 2: block number 1 does not follow block 1"]),
        (r#"{"kind":"genesis","alloc":{}}"#.to_owned(), &["line 2: a genesis line may only be the first line"]),
    ];
    for (bad, expected) in &cases {
        let text = format!("{GOOD_BLOCK_1}\n{bad}\n");
        let message = first_error(&text);
        for part in *expected {
            assert!(
                message.contains(part),
                "for input {bad}\nexpected {part:?}\nin {message:?}"
            );
        }
    }
}

/// Each of these used to be accepted, the later key silently winning.
#[test]
fn repeated_keys_are_refused_naming_line_and_key() {
    let upper = "0x00000000000000000000000000000000000000AA";
    let bare = &A[2..];
    let read = r#"{"balance":"0x1","nonce":0}"#;
    let slot32 = format!("0x{}01", "00".repeat(31));
    let block = |reads: &str, writes: &str| {
        format!(r#"{{"kind":"block","number":2,"reads":{{{reads}}},"writes":{{{writes}}}}}"#)
    };
    let cases: Vec<(String, String)> = vec![
        (
            r#"{"kind":"block","number":2,"number":3,"reads":{},"writes":{}}"#.to_owned(),
            "line 2: line: duplicate field `number`".to_owned(),
        ),
        (
            block("", &format!(r#""{A}":{{"balance":"0x1","balance":"0x2"}}"#)),
            format!("line 2: writes {A}: duplicate field `balance`"),
        ),
        (
            block(&format!(r#""{A}":{read},"{A}":{read}"#), ""),
            format!("line 2: reads: address {A} is listed twice (first as {A})"),
        ),
        (
            block(&format!(r#""{A}":{read},"{upper}":{read}"#), ""),
            format!("line 2: reads: address {upper} is listed twice (first as {A})"),
        ),
        (
            block(
                "",
                &format!(r#""{bare}":{{"nonce":1}},"{A}":{{"nonce":2}}"#),
            ),
            format!("line 2: writes: address {A} is listed twice (first as {bare})"),
        ),
        (
            block(
                "",
                &format!(r#""{A}":{{"storage":{{"0x1":"0x5","0x01":"0x6"}}}}"#),
            ),
            format!("line 2: writes {A}: storage slot 0x01 is listed twice (first as 0x1)"),
        ),
        (
            block(
                &format!(
                    r#""{A}":{{"balance":"0x1","nonce":0,"storage":{{"{slot32}":"0x0","0x1":"0x0"}}}}"#
                ),
                "",
            ),
            format!("line 2: reads {A}: storage slot 0x1 is listed twice (first as {slot32})"),
        ),
    ];
    for (bad, expected) in &cases {
        let message = first_error(&format!("{GOOD_BLOCK_1}\n{bad}\n"));
        assert!(
            message.starts_with(expected.as_str()),
            "for input {bad}\nexpected {expected:?}\nin {message:?}"
        );
    }
    let genesis = [
        (
            r#"{"kind":"genesis","alloc":{},"alloc":{}}"#.to_owned(),
            "line 1: line: duplicate field `alloc`".to_owned(),
        ),
        (
            r#"{"kind":"genesis","alloc":{"alloc":{},"config":{},"alloc":{}}}"#.to_owned(),
            "line 1: genesis alloc: the genesis has 2 \"alloc\" keys; expected one".to_owned(),
        ),
        (
            format!(r#"{{"kind":"genesis","alloc":{{"{A}":{{}},"{upper}":{{}}}}}}"#),
            format!("line 1: genesis alloc: address {upper} is listed twice (first as {A})"),
        ),
        (
            format!(
                r#"{{"kind":"genesis","alloc":{{"{A}":{{"storage":{{"0x1":"0x1","0x01":"0x1"}}}}}}}}"#
            ),
            format!(
                "line 1: genesis alloc: account {A}: storage slot 0x01 is listed twice (first as 0x1)"
            ),
        ),
    ];
    for (bad, expected) in &genesis {
        let message = first_error(&format!("{bad}\n"));
        assert!(
            message.starts_with(expected.as_str()),
            "for input {bad}\nexpected {expected:?}\nin {message:?}"
        );
    }
}

/// `null` and `"0x"` are no numbers (nor hashes, bytes or flags) in traces.
#[test]
fn null_and_empty_hex_are_refused_naming_line_and_field() {
    let number = "expected a number or a hex/decimal string, found null";
    let cases: Vec<(String, String)> = vec![
        (
            r#"{"kind":"block","number":null,"reads":{},"writes":{}}"#.to_owned(),
            format!("line 2: field \"number\": {number}"),
        ),
        (
            r#"{"kind":"block","number":"0x","reads":{},"writes":{}}"#.to_owned(),
            "line 2: field \"number\": invalid number \"0x\"".to_owned(),
        ),
        (
            r#"{"kind":"block","number":2,"gas_used":null,"reads":{},"writes":{}}"#.to_owned(),
            format!("line 2: field \"gas_used\": {number}"),
        ),
        (
            r#"{"kind":"block","number":2,"gas_used":"0x","reads":{},"writes":{}}"#.to_owned(),
            "line 2: field \"gas_used\": invalid number \"0x\"".to_owned(),
        ),
        (
            r#"{"kind":"block","number":2,"state_root":null,"reads":{},"writes":{}}"#.to_owned(),
            "line 2: field \"state_root\": expected a 32-byte hex string, found null".to_owned(),
        ),
        (
            r#"{"kind":"block","number":2,"reads":null,"writes":{}}"#.to_owned(),
            "line 2: reads: expected a JSON object, found null".to_owned(),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":null,"nonce":0}}}},"writes":{{}}}}"#
            ),
            format!("line 2: reads {A}: field \"balance\": {number}"),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{"{A}":{{"balance":"0x","nonce":0}}}},"writes":{{}}}}"#
            ),
            format!("line 2: reads {A}: field \"balance\": invalid number \"0x\""),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"nonce":null}}}}}}"#
            ),
            format!("line 2: writes {A}: field \"nonce\": {number}"),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"nonce":"0x"}}}}}}"#
            ),
            format!("line 2: writes {A}: field \"nonce\": invalid number \"0x\""),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"code":null}}}}}}"#
            ),
            format!("line 2: writes {A}: field \"code\": expected a hex string, found null"),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"deleted":null}}}}}}"#
            ),
            format!("line 2: writes {A}: field \"deleted\": expected true or false, found null"),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"storage":null}}}}}}"#
            ),
            format!(
                "line 2: writes {A}: field \"storage\": expected an object of slot → value, found null"
            ),
        ),
        (
            format!(
                r#"{{"kind":"block","number":2,"reads":{{}},"writes":{{"{A}":{{"storage":{{"0x1":null}}}}}}}}"#
            ),
            format!(
                "line 2: writes {A}: field \"storage[0x1]\": expected a hex string or a number, found null"
            ),
        ),
    ];
    for (bad, expected) in &cases {
        let message = first_error(&format!("{GOOD_BLOCK_1}\n{bad}\n"));
        assert_eq!(&message, expected, "for input {bad}");
    }
    // "0x" stays the empty code (it removes an account's code).
    let text = format!(
        "{{\"kind\":\"block\",\"number\":1,\"reads\":{{}},\"writes\":{{\"{A}\":{{\"code\":\"0x\"}}}}}}\n"
    );
    let TraceLine::Block(block) = &read_all(&text)[0] else {
        panic!("not a block")
    };
    assert_eq!(
        block.writes[&Address::with_last_byte(0xaa)].code,
        Some(Bytes::new())
    );
}

#[test]
fn genesis_line_errors_name_line_account_and_field() {
    let text = format!("{{\"kind\":\"genesis\",\"alloc\":{{\"{A}\":{{\"balance\":\"0xzz\"}}}}}}\n");
    let message = first_error(&text);
    assert_eq!(
        message,
        "line 1: genesis alloc: account 0x00000000000000000000000000000000000000aa: field \"balance\": invalid number \"0xzz\""
    );
    let message = first_error("{\"kind\":\"genesis\",\"alloc\":[]}\n");
    assert!(
        message.contains("line 1: genesis \"alloc\": expected a JSON object"),
        "{message}"
    );
    let message = first_error("{\"kind\":\"genesis\"}\n");
    assert!(
        message.contains("line 1: genesis: missing field \"alloc\""),
        "{message}"
    );
}

#[test]
fn the_reader_stops_after_an_error_and_reports_its_line() {
    let text = format!(
        "{GOOD_BLOCK_1}\n\n  \n{{\"kind\":\"block\",\"number\":9,\"reads\":{{}},\"writes\":{{}}}}\n{GOOD_BLOCK_1}\n"
    );
    let items: Vec<_> = TraceReader::new(text.as_bytes()).collect();
    assert_eq!(items.len(), 2, "one good line, one error, then nothing");
    match &items[1] {
        Err(
            e @ TraceError::OutOfOrder {
                previous: 1,
                found: 9,
                ..
            },
        ) => assert_eq!(e.line(), 4, "blank lines count"),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn accepted_spellings() {
    let text = format!(
        "{{\"kind\":\"block\",\"number\":\"0x7\",\"gas_used\":\"21000\",\"reads\":{{\"{}\":{{\"balance\":1000,\"nonce\":\"0x2\",\"storage\":{{\"0x1\":\"0x0\",\"0x02\":5}}}}}},\
         \"writes\":{{\"{A}\":{{\"deleted\":true}}}}}}\n",
        "00000000000000000000000000000000000000AA"
    );
    let lines = read_all(&text);
    let TraceLine::Block(block) = &lines[0] else {
        panic!("not a block")
    };
    assert_eq!(block.number, 7);
    assert_eq!(block.gas_used, Some(21_000));
    let read = &block.reads[&Address::with_last_byte(0xaa)];
    assert_eq!(read.balance, U256::from(1000));
    assert_eq!(read.nonce, 2);
    assert_eq!(
        read.storage[&B256::with_last_byte(1)],
        U256::ZERO,
        "zero reads are kept"
    );
    assert_eq!(read.storage[&B256::with_last_byte(2)], U256::from(5));
    assert!(block.writes[&Address::with_last_byte(0xaa)].deleted);
}

fn sample_block() -> TraceBlock {
    let code = Bytes::from_static(&[0x60, 0x80, 0x60, 0x40, 0x52]);
    let mut reads = BTreeMap::new();
    reads.insert(
        Address::with_last_byte(1),
        AccountRead {
            balance: U256::MAX,
            nonce: u64::MAX,
            code_hash: Some(keccak256(&code)),
            code: Some(code.clone()),
            storage: [
                (B256::with_last_byte(1), U256::ZERO),
                (B256::repeat_byte(0xff), U256::from(7)),
            ]
            .into(),
        },
    );
    let mut writes = BTreeMap::new();
    writes.insert(
        Address::with_last_byte(1),
        AccountWrite {
            deleted: true,
            nonce: Some(1),
            code: Some(code),
            storage: [(B256::with_last_byte(3), U256::from(9))].into(),
            ..AccountWrite::default()
        },
    );
    writes.insert(
        Address::with_last_byte(2),
        AccountWrite {
            deleted: true,
            ..AccountWrite::default()
        },
    );
    writes.insert(
        Address::with_last_byte(3),
        AccountWrite {
            balance: Some(U256::ZERO),
            code: Some(Bytes::new()),
            storage: [(B256::with_last_byte(1), U256::ZERO)].into(),
            ..AccountWrite::default()
        },
    );
    // An EIP-7928 list, which the line carries as the engine API writes it.
    let access_list = vec![alloy_eip7928::AccountChanges {
        address: Address::repeat_byte(0x42),
        storage_changes: vec![alloy_eip7928::SlotChanges::new(
            U256::from(1),
            vec![alloy_eip7928::StorageChange::new(
                alloy_eip7928::BlockAccessIndex::new(1),
                U256::from(7),
            )],
        )],
        storage_reads: vec![U256::from(2)],
        balance_changes: vec![alloy_eip7928::BalanceChange::new(
            alloy_eip7928::BlockAccessIndex::new(2),
            U256::from(1_000),
        )],
        ..Default::default()
    }];
    TraceBlock {
        number: 5,
        gas_used: Some(30_000_000),
        state_root: Some(B256::repeat_byte(0x12)),
        reads,
        writes,
        access_list: Some(access_list),
    }
}

#[test]
fn writer_and_reader_round_trip() {
    let mut state = WorldState::new();
    state.apply_block(&sample_block());
    let genesis = TraceLine::Genesis {
        alloc: state.to_alloc(),
        state_root: Some(state.state_root()),
    };
    let mut next = sample_block();
    next.number = 6;
    next.state_root = None;
    next.gas_used = None;
    let lines = vec![
        genesis,
        TraceLine::Block(sample_block()),
        TraceLine::Block(next),
    ];
    let mut writer = TraceWriter::new(Vec::new());
    for line in &lines {
        writer.write(line).unwrap();
    }
    let bytes = writer.finish().unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert_eq!(read_all(&text), lines);
}

#[test]
fn writes_apply_deleted_first_then_fields() {
    let a = Address::with_last_byte(1);
    let mut state = WorldState::new();
    let setup = AccountWrite {
        balance: Some(U256::from(5)),
        nonce: Some(3),
        storage: [
            (B256::with_last_byte(1), U256::from(1)),
            (B256::with_last_byte(2), U256::from(2)),
        ]
        .into(),
        ..AccountWrite::default()
    };
    state.apply_write(&a, &setup);
    let root_before = state.state_root();

    // A zero value deletes the slot; fields not given stay.
    state.apply_write(
        &a,
        &AccountWrite {
            storage: [(B256::with_last_byte(1), U256::ZERO)].into(),
            ..AccountWrite::default()
        },
    );
    let account = state.account(&a).unwrap();
    assert_eq!(
        (account.nonce(), account.balance(), account.storage().len()),
        (3, U256::from(5), 1)
    );
    assert_ne!(
        state.state_root(),
        root_before,
        "the cached storage root was invalidated"
    );

    // Deleted then re-created: old storage and balance are gone.
    state.apply_write(
        &a,
        &AccountWrite {
            deleted: true,
            nonce: Some(1),
            ..AccountWrite::default()
        },
    );
    let account = state.account(&a).unwrap();
    assert_eq!(
        (account.nonce(), account.balance(), account.storage().len()),
        (1, U256::ZERO, 0)
    );

    // Deleted only: the account is gone and the state is empty again.
    state.apply_write(
        &a,
        &AccountWrite {
            deleted: true,
            ..AccountWrite::default()
        },
    );
    assert!(state.account(&a).is_none());
    assert_eq!(state.state_root(), WorldState::new().state_root());
}

#[test]
fn check_reads_catches_a_wrong_pre_value() {
    let a = Address::with_last_byte(1);
    let mut state = WorldState::new();
    state.apply_write(
        &a,
        &AccountWrite {
            balance: Some(U256::from(5)),
            storage: [(B256::with_last_byte(1), U256::from(1))].into(),
            ..AccountWrite::default()
        },
    );
    let mut block = TraceBlock {
        number: 1,
        ..TraceBlock::default()
    };
    block.reads.insert(
        a,
        state.read(&a, [B256::with_last_byte(1), B256::with_last_byte(2)], true),
    );
    block
        .reads
        .insert(Address::with_last_byte(9), AccountRead::default());
    state.check_reads(&block).unwrap();
    block
        .reads
        .get_mut(&a)
        .unwrap()
        .storage
        .insert(B256::with_last_byte(2), U256::from(4));
    let err = state.check_reads(&block).unwrap_err().to_string();
    assert!(
        err.contains(
            "field \"storage[0x0000000000000000000000000000000000000000000000000000000000000002]\""
        ),
        "{err}"
    );
    assert!(err.contains("trace says 0x4, state holds 0x0"), "{err}");
}

#[test]
fn mutated_lines_never_panic() {
    use rand::{Rng, SeedableRng};

    let path = strata_test_support::repo_root().join("testdata/small.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().nth(1).unwrap().as_bytes().to_vec();
    let alphabet = b"0123456789abcdefxX\"{}[],:-.eE \\ntruefalsnul";
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let (mut ok, mut err) = (0, 0);
    for _ in 0..3_000 {
        let mut mutated = line.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..mutated.len());
            match rng.random_range(0..3) {
                0 => mutated[at] = alphabet[rng.random_range(0..alphabet.len())],
                1 => {
                    mutated.remove(at);
                }
                _ => mutated.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
            }
        }
        let Ok(mutated) = String::from_utf8(mutated) else {
            continue;
        };
        match strata_trace::parse_line(&mutated, 2) {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.line(), 2);
                assert!(e.to_string().starts_with("line 2: "), "{e}");
                err += 1;
            }
        }
    }
    assert!(err > 1_000 && ok > 100, "{ok} accepted, {err} rejected");
}
