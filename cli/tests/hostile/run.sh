#!/usr/bin/env bash
# The hostile-user campaign of issue 12: damage a datadir in many ways, run
# every command a user would, and count for each class of damage how many
# trials gave a clear error or no effect and how many did something bad.
#
#   bad = a panic (exit 101 or "panicked" on stderr), a read-only command
#         (root, get, stats, verify) that changed a byte of the datadir, or a
#         wrong answer trusted: `verify` says ok (or a resumed replay
#         succeeds) while an answer differs from the undamaged datadir's or
#         the trace's final root is not reached.
#
# Usage: cli/tests/hostile/run.sh [STRATA_BINARY] [WORKDIR]
# (release binary recommended: cargo build --release -p strata-cli).
# Needs root for the read-only-mount and disk-full (tmpfs) classes; they are
# reported as skipped otherwise. Takes ~5-10 minutes on 2 cores.
set -uo pipefail

STRATA="${1:-target/release/strata}"
WORK="${2:-$(mktemp -d /tmp/strata-hostile.XXXXXX)}"
STRATA="$(realpath "$STRATA")"
mkdir -p "$WORK"
cd "$WORK" || exit 1
echo "binary $STRATA, workdir $WORK" >&2

declare -A TRIED CLEAR NOEFFECT BAD
record() { # class outcome detail
    TRIED[$1]=$((${TRIED[$1]:-0} + 1))
    case "$2" in
    clear) CLEAR[$1]=$((${CLEAR[$1]:-0} + 1)) ;;
    none) NOEFFECT[$1]=$((${NOEFFECT[$1]:-0} + 1)) ;;
    bad)
        BAD[$1]=$((${BAD[$1]:-0} + 1))
        echo "BAD [$1] $3" >&2
        ;;
    esac
}

# --- the pristine datadir: 20 of 40 blocks replayed, small steps so files exist.
if [ ! -f t.jsonl ]; then
    "$STRATA" gen-trace --accounts 20000 --contracts 200 --blocks 40 --seed 3 --out t.jsonl >/dev/null || exit 1
    "$STRATA" gen-trace --accounts 20000 --contracts 200 --blocks 40 --seed 4 --out other.jsonl >/dev/null || exit 1
fi
head -n 21 t.jsonl >t20.jsonl
FINAL_ROOT=$(tail -n 1 t.jsonl | jq -r .state_root)
ROOT20=$(sed -n 21p t.jsonl | jq -r .state_root)
ADDR=$(sed -n 21p t.jsonl | jq -r '.writes | keys[0]')
CONTRACT=$(head -n 1 t.jsonl | jq -r '.alloc | to_entries | map(select(.value.code != null)) | .[0].key')
if [ ! -d pristine ]; then
    "$STRATA" replay t20.jsonl --datadir pristine --step-size 4 --keep-steps 1 >/dev/null || exit 1
fi

digest() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64; }

# Runs one command in this shell: its stdout in OUT, its exit code in RC,
# PANIC=1 when it panicked.
PANIC=0
RC=0
OUT=
run() {
    "$@" >out.txt 2>err.txt
    RC=$?
    OUT=$(cat out.txt)
    if [ "$RC" = 101 ] || grep -q "panicked" err.txt; then PANIC=1; fi
}

run "$STRATA" root --datadir pristine; PRISTINE_ROOT=$OUT
run "$STRATA" get --datadir pristine account "$ADDR"; PRISTINE_ACCOUNT=$OUT
run "$STRATA" get --datadir pristine code "$CONTRACT"; PRISTINE_CODE=$OUT
[ "$PRISTINE_ROOT" = "20 $ROOT20" ] || { echo "pristine root $PRISTINE_ROOT != 20 $ROOT20" >&2; exit 1; }

# One trial on datadir $2 (already damaged): the read-only commands, then a
# resumed replay. Classifies and records under class $1.
trial() {
    local class=$1 dir=$2 detail=$3 before after root acct code verify_ok=0 wrong=0 errors=0
    PANIC=0
    before=$(digest "$dir")
    run "$STRATA" root --datadir "$dir"; root=$OUT
    [ $RC = 0 ] || errors=1
    [ $RC = 0 ] && [ "$root" != "$PRISTINE_ROOT" ] && wrong=1
    run "$STRATA" get --datadir "$dir" account "$ADDR"; acct=$OUT
    [ $RC = 0 ] || errors=1
    [ $RC = 0 ] && [ "$acct" != "$PRISTINE_ACCOUNT" ] && wrong=1
    run "$STRATA" get --datadir "$dir" code "$CONTRACT"; code=$OUT
    [ $RC = 0 ] || errors=1
    [ $RC = 0 ] && [ "$code" != "$PRISTINE_CODE" ] && wrong=1
    run "$STRATA" stats --datadir "$dir"
    [ $RC = 0 ] || errors=1
    run "$STRATA" verify --datadir "$dir"
    [ $RC = 0 ] && verify_ok=1
    after=$(digest "$dir")
    if [ "$PANIC" = 1 ]; then
        record "$class" bad "$detail: panic"
        return
    fi
    if [ "$before" != "$after" ]; then
        record "$class" bad "$detail: a read-only command changed the datadir"
        return
    fi
    if [ $verify_ok = 1 ] && [ $wrong = 1 ]; then
        record "$class" bad "$detail: verify ok but an answer differs from the undamaged datadir"
        return
    fi
    # Resume: either a clear refusal, or the trace's final root.
    run "$STRATA" replay t.jsonl --datadir "$dir" --step-size 4 --keep-steps 1
    if [ "$PANIC" = 1 ]; then
        record "$class" bad "$detail: replay panicked"
        return
    fi
    if [ $RC = 0 ]; then
        run "$STRATA" root --datadir "$dir"; root=$OUT
        if [ "$root" != "40 $FINAL_ROOT" ]; then
            record "$class" bad "$detail: resumed replay ended at '$root', not the trace's root"
            return
        fi
    fi
    if [ $errors = 1 ] || [ $verify_ok = 0 ] || [ $RC != 0 ]; then
        record "$class" clear "$detail"
    else
        record "$class" none "$detail"
    fi
}

fresh() { rm -rf "$1" && cp -a pristine "$1"; }
DB_SIZE=$(stat -c %s pristine/state.redb)

# --- redb byte flips
for i in $(seq 1 30); do
    fresh d
    off=$(((RANDOM * 32768 + RANDOM) % DB_SIZE))
    printf "\\x$(printf %02x $((RANDOM % 255 + 1)))" | dd of=d/state.redb bs=1 seek=$off conv=notrunc status=none
    trial "redb byte flips" d "xor at $off"
done
# --- redb truncations (0 included)
for len in 0 1 512 4096 $((DB_SIZE / 4)) $((DB_SIZE / 2)) $((DB_SIZE - 4096)) $((DB_SIZE - 1)); do
    fresh d
    truncate -s "$len" d/state.redb
    trial "redb truncations" d "truncated to $len"
done
# --- zeroed 4 KiB pages
for i in $(seq 1 30); do
    fresh d
    page=$(((RANDOM * 32768 + RANDOM) % (DB_SIZE / 4096)))
    dd if=/dev/zero of=d/state.redb bs=4096 seek=$page count=1 conv=notrunc status=none
    trial "redb zeroed pages" d "page $page"
done
# --- files/ damage: flips, truncation, deletion, a foreign file
FILES=(pristine/files/*.sst)
for i in $(seq 1 20); do
    fresh d
    f=d/files/$(basename "${FILES[$((RANDOM % ${#FILES[@]}))]}")
    size=$(stat -c %s "$f")
    case $((i % 4)) in
    0) off=$(((RANDOM * 32768 + RANDOM) % size)); printf '\xff' | dd of="$f" bs=1 seek=$off conv=notrunc status=none; what="flip $f at $off" ;;
    1) truncate -s $((size / 2)) "$f"; what="truncate $f" ;;
    2) rm "$f"; what="delete $f" ;;
    3) echo "my notes" >d/files/notes.txt; cp t20.jsonl d/files/my.jsonl; what="foreign files" ;;
    esac
    trial "files/ damage" d "$what"
    if [ $((i % 4)) = 3 ] && { [ ! -f d/files/notes.txt ] || [ ! -f d/files/my.jsonl ]; }; then
        record "missing/foreign datadir parts" bad "foreign files in files/ were deleted"
    elif [ $((i % 4)) = 3 ]; then
        record "missing/foreign datadir parts" none "foreign files in files/ kept"
    fi
done
# --- missing database beside files; a foreign file in a new datadir's files/
fresh d; rm d/state.redb; trial "missing/foreign datadir parts" d "state.redb removed"
rm -rf h; mkdir -p h/files; cp t20.jsonl h/files/my.jsonl
PANIC=0; run "$STRATA" replay h/files/my.jsonl --datadir h
if [ "$PANIC" = 1 ] || [ ! -f h/files/my.jsonl ]; then
    record "missing/foreign datadir parts" bad "new datadir lost its files/my.jsonl"
else record "missing/foreign datadir parts" none "new datadir kept files/my.jsonl"; fi

# --- read-only mount and no write permission
if mkdir -p ro && mount --bind pristine ro 2>/dev/null && mount -o remount,bind,ro ro 2>/dev/null; then
    for cmd in "root --datadir ro" "get --datadir ro account $ADDR" "stats --datadir ro" "verify --datadir ro"; do
        PANIC=0
        # shellcheck disable=SC2086
        run "$STRATA" $cmd
        if [ "$PANIC" = 1 ] || [ $RC != 0 ]; then
            record "read-only mount" bad "strata $cmd failed: $(head -c 300 err.txt)"
        else record "read-only mount" none "strata $cmd"; fi
    done
    umount ro
else
    echo "read-only mount: skipped (mount not permitted)" >&2
fi

# --- two writers at once
for i in $(seq 1 6); do
    fresh d
    "$STRATA" replay t.jsonl --datadir d --step-size 4 --keep-steps 1 >/dev/null 2>err1.txt &
    p1=$!
    "$STRATA" replay t.jsonl --datadir d --step-size 4 --keep-steps 1 >/dev/null 2>err2.txt
    rc2=$?
    wait $p1
    rc1=$?
    root=$("$STRATA" root --datadir d 2>/dev/null)
    if grep -q panicked err1.txt err2.txt || [ $rc1 = 101 ] || [ $rc2 = 101 ]; then
        record "two writers" bad "panic"
    elif [ "$root" != "40 $FINAL_ROOT" ]; then
        record "two writers" bad "ended at '$root'"
    elif [ $rc1 != 0 ] || [ $rc2 != 0 ]; then
        record "two writers" clear "one refused"
    else record "two writers" none "both finished"; fi
done

# --- disk full: a small tmpfs filled at different moments, then grown for the resume
if mkdir -p full && mount -t tmpfs -o size=96m tmpfs full 2>/dev/null; then
    for ballast_mib in 0 20 35 50 65 80; do
        rm -rf full/d full/ballast
        mount -o remount,size=96m "$PWD/full" || { echo "disk full: remount failed" >&2; continue; }
        [ "$ballast_mib" -gt 0 ] && head -c $((ballast_mib * 1024 * 1024)) /dev/zero >full/ballast
        PANIC=0
        run "$STRATA" replay t.jsonl --datadir full/d --step-size 4 --keep-steps 1
        rc=$RC
        first_err=$(tail -c 300 err.txt)
        rm -f full/ballast
        mount -o remount,size=1g "$PWD/full"
        if [ "$PANIC" = 1 ]; then record "disk full" bad "ballast $ballast_mib MiB: panic"; continue; fi
        # A failed final flush must fail the replay (DF2c), saying the journal holds the blocks.
        if [ $rc = 0 ] && grep -q "flush at close failed" err.txt; then
            record "disk full" bad "ballast $ballast_mib MiB: final flush failed, rc 0"; continue
        fi
        if [ $rc != 0 ] && grep -q "final flush" err.txt && ! grep -q "safe in the journal" err.txt; then
            record "disk full" bad "ballast $ballast_mib MiB: final flush error without the journal's word"; continue
        fi
        run "$STRATA" replay t.jsonl --datadir full/d --step-size 4 --keep-steps 1
        resume_rc=$RC
        run "$STRATA" root --datadir full/d; root=$OUT
        if [ "$PANIC" = 1 ]; then record "disk full" bad "ballast $ballast_mib MiB: panic on resume"
        elif [ "$root" != "40 $FINAL_ROOT" ]; then
            record "disk full" bad "ballast $ballast_mib MiB: resume rc $resume_rc ended at '$root'"
        elif [ $rc != 0 ]; then record "disk full" clear "ballast $ballast_mib MiB: refused ($first_err), resumed"
        else record "disk full" none "ballast $ballast_mib MiB: fit"; fi
    done
    umount full
else
    echo "disk full: skipped (mount not permitted)" >&2
fi

# --- resume with a trace that is not the datadir's: refused, head and root unchanged
fresh d
PANIC=0
run "$STRATA" replay other.jsonl --datadir d --step-size 4 --keep-steps 1
rc=$RC
run "$STRATA" root --datadir d; root=$OUT
if [ "$PANIC" = 1 ] || [ $rc = 0 ] || [ "$root" != "$PRISTINE_ROOT" ]; then
    record "bad trace/genesis/CLI input" bad "resume with another seed's trace: rc $rc, head now '$root'"
else record "bad trace/genesis/CLI input" clear "resume with another seed's trace"; fi

# --- bad trace, genesis and CLI input: each must be refused clearly
bad_input() { # detail, then the command
    local detail=$1
    shift
    PANIC=0
    run "$@"
    if [ "$PANIC" = 1 ] || [ $RC = 0 ] || [ $RC = 137 ]; then
        record "bad trace/genesis/CLI input" bad "$detail: rc $RC (137: killed after 20 s)"
    else record "bad trace/genesis/CLI input" clear "$detail"; fi
}
A=0x00000000000000000000000000000000000000aa
mk() { printf '%s\n' "$@" >bad.jsonl; }
mk '{"kind":"genesis","alloc":{"'$A'":{"balance":"0x1","balance":"0x2"}}}'
bad_input "repeated field" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{"'$A'":{"balance":"0x1"},"'$A'":{"balance":"0x2"}}}'
bad_input "repeated address" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{"0x00000000000000000000000000000000000000AA":{"balance":"0x1"},"'$A'":{"balance":"0x2"}}}'
bad_input "address in two letter cases" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{"'$A'":{"balance":"0x1","storage":{"0x1":"0x5","0x01":"0x6"}}}}'
bad_input "slot as 0x1 and 0x01" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{"'$A'":{"balance":"0x1"}},"alloc":{}}'
bad_input "two alloc keys" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{}}' '{"kind":"block","number":1,"reads":{},"writes":{"'$A'":{"balance":null}}}'
bad_input "null balance in a trace" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{}}' '{"kind":"block","number":1,"reads":{},"writes":{"'$A'":{"balance":"0x","nonce":1}}}'
bad_input "0x as a number in a trace" "$STRATA" replay bad.jsonl
mk '{"kind":"genesis","alloc":{}}' '{"kind":"block","number":1,"gas_used":18446744073709551615,"reads":{},"writes":{}}' \
    '{"kind":"block","number":2,"gas_used":18446744073709551615,"reads":{},"writes":{}}'
bad_input "gas_used total overflow" "$STRATA" replay bad.jsonl
# (a binary without the limit spawns a thread per warmer: give it 20 s)
bad_input "--warmers 100000" timeout -s KILL 20 "$STRATA" replay t20.jsonl --warmers 100000
bad_input "gen-trace --accounts u64::MAX" "$STRATA" gen-trace --accounts 18446744073709551615 --blocks 1 --out /dev/null
bad_input "--cache-mib 2^60" "$STRATA" replay t20.jsonl --cache-mib 1152921504606846976
bad_input "--step-size 0" "$STRATA" replay t20.jsonl --step-size 0
bad_input "--sync-every 0" "$STRATA" replay t20.jsonl --sync-every 0
bad_input "unwind beyond the window" "$STRATA" unwind --datadir pristine --to 100

# --- the table
printf '\n| class | tried | clear error | no effect | bad |\n|---|---:|---:|---:|---:|\n'
for class in "redb byte flips" "redb truncations" "redb zeroed pages" "files/ damage" \
    "missing/foreign datadir parts" "read-only mount" "two writers" "disk full" "bad trace/genesis/CLI input"; do
    printf '| %s | %d | %d | %d | %d |\n' "$class" "${TRIED[$class]:-0}" "${CLEAR[$class]:-0}" \
        "${NOEFFECT[$class]:-0}" "${BAD[$class]:-0}"
done
