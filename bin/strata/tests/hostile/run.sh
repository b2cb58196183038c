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
# Issue 28 (shared/research/durability-findings.md) adds the journal,
# re-checksummed frames, frequent flushes, kills during every writer
# command, state dumps, query/export edges, a full stdout, --metrics/observe
# and the findings' "other" cases; there bad also means: a wrong root or
# value served without an error, `verify` ok over damage that a writer
# refuses, committed blocks lost, something strata did not make deleted (a
# journal segment deleted or shortened other than a torn tail kept aside in
# a .torn-OFFSET file), or a hang (every command runs under `timeout`).
# Each section states its rule where it records.
#
# Usage: [ONLY="section ..."] bin/strata/tests/hostile/run.sh [STRATA_BINARY] [WORKDIR]
# (release binary recommended: cargo build --release -p strata-cli).
# Needs root for the read-only-mount, disk-full (tmpfs) and mknod trials;
# they are skipped otherwise. Needs jq, python3 and libxxhash0 (or python's
# xxhash). Takes ~15-25 minutes on 2 cores. Exits 1 when a trial is bad;
# every outcome is in WORKDIR/trials.log.
set -uo pipefail

STRATA="${1:-target/release/strata}"
WORK="${2:-$(mktemp -d /tmp/strata-hostile.XXXXXX)}"
STRATA="$(realpath "$STRATA")"
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$WORK"
cd "$WORK" || exit 1
echo "binary $STRATA, workdir $WORK" >&2
: >trials.log

# ONLY="journal flushes ..." runs only those sections (names: redb files
# ro-mount two-writers disk-full input journal recheck flushes kill-replay
# kill-other kill-unwind dumps edges metrics other surfaces); default all.
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

declare -A TRIED CLEAR NOEFFECT BAD
# Every trial's outcome also goes to $WORK/trials.log.
record() { # class outcome detail
    TRIED[$1]=$((${TRIED[$1]:-0} + 1))
    echo "$2 [$1] $3" >>"$WORK/trials.log"
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
# PANIC=1 when it panicked or died of a signal (an abort is rc 134). Not counted as a panic: a panic inside redb
# (its source path on stderr) that strata's storage guard caught and turned
# into a `corrupt database: ... redb panicked` error with exit 1 — the hook
# still prints it by design (storage/src/db/guard.rs); CAUGHT=1 then.
PANIC=0
CAUGHT=0
RC=0
OUT=
# Every command runs under `timeout` ($TMO s, default 300): a hang is rc 137
# and counts as bad where the caller checks HANG.
TMO=${TMO:-300}
HANG=0
run() {
    timeout -s KILL "$TMO" "$@" >out.txt 2>err.txt
    RC=$?
    OUT=$(cat out.txt)
    if [ "$RC" = 101 ]; then PANIC=1
    elif [ "$RC" -ge 128 ] && [ "$RC" != 137 ]; then PANIC=1; echo "crashed: $* (signal $((RC - 128)))" >>err.txt
    elif grep -q "panicked" err.txt; then
        if [ "$RC" = 1 ] && grep -q "redb panicked" err.txt &&
            ! grep "panicked at" err.txt | grep -qv '/redb-[0-9.]*/src/'; then CAUGHT=1
        else PANIC=1; fi
    fi
    if [ "$RC" = 137 ]; then HANG=1; PANIC=1; echo "hang: $* (killed after $TMO s)" >>err.txt; fi
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
    CAUGHT=0
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
        record "$class" clear "$detail$([ "$CAUGHT" = 1 ] && echo ' (a redb panic caught: corrupt database, rc 1)')"
    else
        record "$class" none "$detail"
    fi
}

fresh() { rm -rf "$1" && cp -a pristine "$1"; }
DB_SIZE=$(stat -c %s pristine/state.redb)

if want redb; then
# --- redb byte flips
for i in $(seq 1 30); do
    fresh d
    off=$(((RANDOM * 32768 + RANDOM) % DB_SIZE))
    printf "\\x$(printf %02x $((RANDOM % 255 + 1)))" | dd of=d/state.redb bs=1 seek=$off conv=notrunc status=none
    trial "redb byte flips" d "xor at $off"
done
fi
if want redb; then
# --- redb truncations (0 included)
for len in 0 1 512 4096 $((DB_SIZE / 4)) $((DB_SIZE / 2)) $((DB_SIZE - 4096)) $((DB_SIZE - 1)); do
    fresh d
    truncate -s "$len" d/state.redb
    trial "redb truncations" d "truncated to $len"
done
fi
if want redb; then
# --- zeroed 4 KiB pages
for i in $(seq 1 30); do
    fresh d
    page=$(((RANDOM * 32768 + RANDOM) % (DB_SIZE / 4096)))
    dd if=/dev/zero of=d/state.redb bs=4096 seek=$page count=1 conv=notrunc status=none
    trial "redb zeroed pages" d "page $page"
done
fi
if want files; then
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
fi
if want files; then
# --- missing database beside files; a foreign file in a new datadir's files/
fresh d; rm d/state.redb; trial "missing/foreign datadir parts" d "state.redb removed"
rm -rf h; mkdir -p h/files; cp t20.jsonl h/files/my.jsonl
PANIC=0; run "$STRATA" replay h/files/my.jsonl --datadir h
if [ "$PANIC" = 1 ] || [ ! -f h/files/my.jsonl ]; then
    record "missing/foreign datadir parts" bad "new datadir lost its files/my.jsonl"
else record "missing/foreign datadir parts" none "new datadir kept files/my.jsonl"; fi

fi
if want ro-mount; then
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

fi
if want two-writers; then
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

fi
if want disk-full; then
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

fi
if want input; then
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

fi
# =====================================================================
# Issue 28's classes (shared/research/durability-findings.md, B1-B10 and
# the "other findings"). Each trial's rule is stated where it is recorded.
# What the engine promises for the journal: only a damaged last frame of
# the last segment with nothing valid after it is a torn tail, cut and kept
# aside in journal/<segment>.torn-OFFSET; any other damage is refused naming
# segment and offset, nothing cut; a foreign segment is refused naming both
# identities; `verify: ok` means a writer opens the datadir; reads at a
# recent block check the roots; unwind is atomic w.r.t. kills.
# =====================================================================
J=journal
seg() { printf '%s/journal/journal-%020d.log' "$1" "$2"; }
for n in 10 20 30; do head -n $((n + 1)) t.jsonl >t$n.jsonl; done
head -n 11 other.jsonl >f10.jsonl
# ROOT[n] = the trace's root after block n (0 = genesis)
mapfile -t ROOT < <(jq -r '.state_root // .root // empty' t.jsonl)
if [ "${#ROOT[@]}" != 41 ]; then
    mapfile -t ROOT < <(jq -r 'if .kind == "genesis" then (.state_root // "genesis") else .state_root end' t.jsonl)
fi
# What `root` prints for a datadir without a block (the empty trie's root).
EMPTY="none 0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
# Two accounts written late (blocks 14 and 35) and one written by block 1.
A14=$(sed -n 15p t.jsonl | jq -r '.writes | keys[0]')
A35=$(sed -n 36p t.jsonl | jq -r '.writes | keys[0]')
B6ADDR=0x01376d2a20643669f0b2b3f8866bdabd2c37c9aa

cat >jtool.py <<'PY'
import ctypes, struct, sys

# Journal segment tool for the hostile campaign (book/src/reference/formats/journal.md).
# Format 2: a 48-byte segment header ("STRJSEG\n"), then frames
#   magic "SJR2" | len u32 | block u64 | header check u64 | parent [32] | root [32] | payload | frame check u64
#   header check = xxh3-64(magic|len|block), frame check = xxh3-64(len|block|parent|root|payload)
# Format 1 (before journal-integrity): no header; magic "SJR1" | len u32 | block u64 | payload | xxh3-64(block|payload)
# xxh3-64 (seed 0) through the system's libxxhash (Debian package libxxhash0).
try:
    _lib = ctypes.CDLL("libxxhash.so.0")
    _lib.XXH3_64bits.restype = ctypes.c_uint64
    _lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

    def xxh3(data):
        data = bytes(data)
        return _lib.XXH3_64bits(data, len(data))
except OSError:
    import xxhash  # pip install xxhash

    def xxh3(data):
        return xxhash.xxh3_64_intdigest(bytes(data))

SEG_HEADER = 48


def version(b):
    return 2 if b[:8] == b"STRJSEG\n" else 1


def frames(b):
    """(offset, block, payload_start, payload_len, frame_end) of the whole frames, in order."""
    out = []
    if version(b) == 2:
        off = SEG_HEADER
        while off + 24 <= len(b):
            magic, n, blk, hc = struct.unpack_from("<IIQQ", b, off)
            if magic != struct.unpack("<I", b"SJR2")[0] or xxh3(b[off:off + 16]) != hc:
                break
            end = off + 24 + 64 + n + 8
            if end > len(b):
                break
            out.append((off, blk, off + 88, n, end))
            off = end
    else:
        off = 0
        while off + 16 <= len(b):
            magic, n, blk = struct.unpack_from("<IIQ", b, off)
            if magic != struct.unpack("<I", b"SJR1")[0]:
                break
            end = off + 16 + n + 8
            if end > len(b):
                break
            out.append((off, blk, off + 16, n, end))
            off = end
    return out


def recheck(b, k):
    """Recompute frame k's checksums after its bytes were changed."""
    off, blk, ps, n, end = frames_loose(b)[k]
    if version(b) == 2:
        struct.pack_into("<Q", b, off + 16, xxh3(b[off:off + 16]))
        struct.pack_into("<Q", b, end - 8, xxh3(b[off + 4:off + 16] + b[off + 24:end - 8]))
    else:
        struct.pack_into("<Q", b, end - 8, xxh3(b[off + 8:off + 16] + b[ps:ps + n]))


frames_loose = frames


def entries(b, ps, n):
    """(domain, value_start, value_len, prev_start, prev_len) of a payload's entries."""
    record_version = b[ps]
    p = ps + 1 + 8 + 32
    has_hash = b[p]
    p += 1 + (32 if has_hash else 0)
    # version 2: a header; version 3 (lean): a header flag, then maybe one
    has_header = record_version == 2
    if record_version == 3:
        has_header = b[p] == 1
        p += 1
    if has_header:
        (hlen,) = struct.unpack_from("<I", b, p)
        p += 4 + hlen
    (count,) = struct.unpack_from("<I", b, p)
    p += 4
    out = []
    for _ in range(count):
        dom = b[p]
        p0 = p
        (klen,) = struct.unpack_from("<H", b, p + 1)
        p += 3 + klen
        vs = vl = None
        if b[p] == 1:
            (vl,) = struct.unpack_from("<I", b, p + 1)
            vs = p + 5
            p = vs + vl
        else:
            p += 1
        qs = ql = None
        tag = b[p]
        if tag == 2:
            (ql,) = struct.unpack_from("<I", b, p + 1)
            qs = p + 5
            p = qs + ql
        else:
            p += 1
        out.append((dom, vs, vl, qs, ql, bytes(b[p0 + 3:p0 + 3 + klen]).hex()))
    return out


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    b = bytearray(open(path, "rb").read())
    fr = frames(b)
    if cmd == "frames":  # index offset block end
        for i, f in enumerate(fr):
            print(i, f[0], f[1], f[4])
        return
    if cmd == "count":
        print(len(fr))
        return
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    if k < 0:
        k += len(fr)
    off, blk, ps, n, end = fr[k]
    if cmd == "lenflip":  # xor 0x01 into the high byte of frame k's payload length
        b[off + 7] ^= 1
    elif cmd == "blockflip":  # xor 0x01 into the low byte of frame k's block number
        b[off + 8] ^= 1
    elif cmd == "payflip":  # xor 0x04 into a payload byte of frame k (no new checksum)
        b[ps + n // 2] ^= 4
    elif cmd == "rootflip":  # xor 0x01 into frame k's root (format 2), no new checksum
        b[off + 24 + 32 + 5] ^= 1
    elif cmd in ("value", "prev", "rootrec"):
        # change one byte of frame k and re-checksum the frame (finding CR2):
        # value: the last balance byte of the 3rd account value with a
        # balance (the value still decodes); prev: of the 3rd previous
        # (unwind) value; rootrec: the root in the payload and, in format 2,
        # the frame's root.
        if cmd == "rootrec":
            b[ps + 9 + 31] ^= 1
            if version(b) == 2:
                b[off + 24 + 32 + 31] ^= 1
        else:
            es = entries(b, ps, n)
            if cmd == "value":
                cand = [e for e in es if e[0] == 0 and e[1] is not None and e[2] > 2 and b[e[1] + 1 + b[e[1]]] > 0]
                e = cand[min(2, len(cand) - 1)]
                vs, vl = e[1:3]
            else:
                cand = [e for e in es if e[0] == 0 and e[3] is not None and e[4] > 2 and b[e[3] + 1 + b[e[3]]] > 0]
                e = cand[min(2, len(cand) - 1)]
                vs, vl = e[3:5]
            # account value: [n][nonce: n][b][balance: b][c][code hash: c]
            nl = b[vs]
            bl = b[vs + 1 + nl]
            b[vs + 1 + nl + bl] ^= 1
            print(off, blk, "0x" + e[5])
            recheck(b, k)
            open(path, "wb").write(b)
            return
        recheck(b, k)
    else:
        sys.exit("unknown command " + cmd)
    open(path, "wb").write(b)
    print(off, blk)


main()
PY
jt() { python3 "$WORK/jtool.py" "$@"; }

# The reference datadirs. seg: T10, T20, T30, T replayed, 4 flushed segments,
# head 40 (the findings' `seg`, E). c1: T10, then T killed by SIGKILL once
# segment 11 holds >= 7 frames: unflushed blocks in the journal (the
# findings' D/C1). fd: the other seed's 10 blocks (a foreign flushed
# segment 1); f4: fd killed in its replay of the other trace as c1.
mk_killed() { # dir trace10 trace frames
    local dir=$1 t10=$2 tr=$3 want=$4 p n k
    for k in 1 2 3 4 5; do
        rm -rf "$dir"
        "$STRATA" replay "$t10" --datadir "$dir" >/dev/null 2>&1 || return 1
        "$STRATA" replay "$tr" --datadir "$dir" >/dev/null 2>&1 &
        p=$!
        n=0
        while kill -0 $p 2>/dev/null; do
            n=$(jt count "$(seg "$dir" 11)" 2>/dev/null || echo 0)
            [ "$n" -ge "$want" ] && break
            sleep 0.02
        done
        kill -9 $p 2>/dev/null
        wait $p 2>/dev/null
        n=$("$STRATA" root --datadir "$dir" 2>/dev/null | cut -d' ' -f1)
        [ -n "$n" ] && [ "$n" -gt 12 ] && [ "$n" -lt 40 ] && return 0
    done
    return 1
}
if [ ! -d seg ]; then
    for n in 10 20 30; do "$STRATA" replay t$n.jsonl --datadir seg >/dev/null 2>&1 || exit 1; done
    "$STRATA" replay t.jsonl --datadir seg >/dev/null 2>&1 || exit 1
fi
[ "$("$STRATA" root --datadir seg)" = "40 ${ROOT[40]}" ] || { echo "seg: wrong root" >&2; exit 1; }
[ -d fd ] || "$STRATA" replay f10.jsonl --datadir fd >/dev/null 2>&1 || exit 1
[ -d c1 ] || mk_killed c1 t10.jsonl t.jsonl 7 || { echo "could not make c1" >&2; exit 1; }
[ -d f4 ] || mk_killed f4 f10.jsonl other.jsonl 7 || { echo "could not make f4" >&2; exit 1; }
C1HEAD=$("$STRATA" root --datadir c1 | cut -d' ' -f1)
echo "seg: head 40, $(ls seg/journal | wc -l) segments; c1: head $C1HEAD ($(jt count "$(seg c1 11)") frames in segment 11)" >&2
"$STRATA" export --datadir seg --out seg.dump 2>/dev/null || exit 1
LAST=journal/$(basename "$(seg x 11)") # c1's newest segment, relative to a datadir

# truth VAR BLOCK ADDRESS: the account at BLOCK as the undamaged seg serves it.
truth() { "$STRATA" get --datadir seg --block "$2" account "$3" 2>/dev/null; }

# Journal files' names, sizes and hashes (to tell what a writer cut or deleted).
jlist() { (cd "$1/journal" 2>/dev/null && for f in *; do [ -f "$f" ] && echo "$f $(stat -c %s "$f") $(sha256sum <"$f" | cut -c1-16)"; done); }
# What a writer did to the journal that strata must not do: a segment that
# existed before is gone or shorter (or changed) without its lost bytes kept
# in a <segment>.torn-* file beside it; a file strata did not make is gone.
# Prints the first such thing, nothing when all is well.
jloss() { # dir beforelist beforecopy
    local dir=$1 list=$2 copy=$3 name size rest torn ok
    while read -r name size rest; do
        case "$name" in
        *.log)
            if [ -f "$dir/journal/$name" ] && cmp -s "$dir/journal/$name" "$copy/$name"; then continue; fi
            ok=0
            for torn in "$dir/journal/$name".torn-*; do
                [ -f "$torn" ] || continue
                if [ -f "$dir/journal/$name" ]; then
                    cat "$dir/journal/$name" "$torn" | cmp -s - "$copy/$name" && ok=1
                else
                    # the whole segment was torn: kept aside whole (or its
                    # header alone rewritten away)
                    tail -c "$(stat -c %s "$torn")" "$copy/$name" | cmp -s - "$torn" && ok=1
                fi
            done
            # a first-format segment converted in place is not a loss
            [ $ok = 0 ] && [ -f "$dir/journal/$name" ] && head -c 8 "$dir/journal/$name" | grep -q STRJSEG &&
                ! head -c 8 "$copy/$name" | grep -q STRJSEG && ok=1
            [ $ok = 1 ] || { echo "$name: deleted or shortened ($size bytes before, $(stat -c %s "$dir/journal/$name" 2>/dev/null || echo gone) after) with no torn file keeping the bytes"; return; }
            ;;
        *) [ -e "$dir/journal/$name" ] || { echo "$name (not strata's) deleted"; return; } ;;
        esac
    done <"$list"
}

# A served root must be the trace's root of the block it names.
root_wrong() { # "N 0x.." -> nonzero when right
    local n=${1%% *} r=${1#* }
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 40 ] && [ "$r" = "${ROOT[$n]}" ] && return 1
    return 0
}

# One journal trial on damaged datadir $2.
#   bad = panic/hang; a read-only command (root, get, verify) changed a byte;
#         a root or value served (rc 0) that is not the trace's at its block;
#         verify ok while the writer (compact) refuses, or while the head is
#         below MIN (committed blocks missing); a writer that succeeds at a
#         head below MIN; a segment deleted or shortened other than a torn
#         tail kept aside, a file strata did not make deleted; a resumed
#         replay that succeeds anywhere but the trace's final root.
#   clear = some command refused (or verify reported problems) and nothing bad.
#   none = everything opened at the expected head.
jtrial() { # class dir detail MIN
    local class=$1 dir=$2 detail=$3 min=$4 before after root head verify_ok=0 errors=0 wrc werr loss v
    PANIC=0
    before=$(digest "$dir")
    jlist "$dir" >jlist.txt
    rm -rf jcopy && cp -a "$dir/journal" jcopy 2>/dev/null || mkdir -p jcopy
    run "$STRATA" root --datadir "$dir"; root=$OUT
    if [ $RC = 0 ]; then
        if root_wrong "$root"; then record "$class" bad "$detail: root served '$root', not the trace's"; return; fi
        head=${root%% *}
        for a in "$A14" "$A35"; do
            run "$STRATA" get --datadir "$dir" account "$a"
            if [ $RC = 0 ] && [ "$OUT" != "$(truth x "$head" "$a")" ]; then
                record "$class" bad "$detail: get $a at $head served '$OUT' (true: '$(truth x "$head" "$a")')"; return
            fi
            [ $RC = 0 ] || errors=1
        done
    else errors=1; head=-1; fi
    run "$STRATA" verify --datadir "$dir"
    [ $RC = 0 ] && verify_ok=1
    v=$(tail -c 300 err.txt out.txt | tr '\n' ' ')
    after=$(digest "$dir")
    if [ "$PANIC" = 1 ]; then record "$class" bad "$detail: read-only command panicked or hung: $(tail -c 300 err.txt)"; return; fi
    if [ "$before" != "$after" ]; then record "$class" bad "$detail: a read-only command changed the datadir"; return; fi
    if [ $verify_ok = 1 ] && [ "$head" -lt "$min" ]; then
        record "$class" bad "$detail: verify ok at head $head, committed blocks up to $min missing"; return
    fi
    run "$STRATA" compact --datadir "$dir"; wrc=$RC; werr=$(tail -c 400 err.txt | tr '\n' ' ')
    if [ "$PANIC" = 1 ]; then record "$class" bad "$detail: compact panicked or hung"; return; fi
    loss=$(jloss "$dir" jlist.txt jcopy)
    if [ -n "$loss" ]; then record "$class" bad "$detail: compact rc $wrc: $loss ($werr)"; return; fi
    if [ $verify_ok = 1 ] && [ $wrc != 0 ]; then
        record "$class" bad "$detail: verify ok, but the writer refuses: $werr"; return
    fi
    if [ $wrc = 0 ]; then
        run "$STRATA" root --datadir "$dir"; root=$OUT
        if root_wrong "$root"; then record "$class" bad "$detail: after compact, root '$root' is not the trace's"; return; fi
        head=${root%% *}
        if [ "$head" -lt "$min" ]; then record "$class" bad "$detail: compact succeeded at head $head: committed blocks up to $min lost ($werr)"; return; fi
        run "$STRATA" get --datadir "$dir" account "$A14"
        if [ $RC = 0 ] && [ "$OUT" != "$(truth x "$head" "$A14")" ]; then
            record "$class" bad "$detail: after compact get $A14 at $head served '$OUT'"; return
        fi
        run "$STRATA" replay t.jsonl --datadir "$dir"
        if [ "$PANIC" = 1 ]; then record "$class" bad "$detail: resumed replay panicked or hung"; return; fi
        if [ $RC = 0 ]; then
            run "$STRATA" root --datadir "$dir"
            [ "$OUT" = "40 ${ROOT[40]}" ] || { record "$class" bad "$detail: resumed replay ended at '$OUT'"; return; }
        else errors=1; fi
    fi
    if [ $errors = 1 ] || [ $verify_ok = 0 ] || [ $wrc != 0 ]; then
        record "$class" clear "$detail${werr:+ (writer: ${werr:0:160})}"
    else record "$class" none "$detail"; fi
}
jfresh() { rm -rf "$2" && cp -a "$1" "$2"; }
if want journal; then
    C=$J" segments"
    # --- on seg (all blocks flushed, 4 segments): nothing may be lost (MIN 40)
    jfresh seg x; python3 - "$(seg x 1)" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); o=min(6000000,len(b)//2); b[o]^=4; open(p,'wb').write(b)
PY
    jtrial "$C" x "B3: a byte of flushed segment 1 flipped" 40
    jfresh seg x; jt lenflip "$(seg x 31)" 2 >/dev/null
    jtrial "$C" x "B2: length of the frame of block 33 flipped (flushed, last segment)" 40
    jfresh seg x; jt lenflip "$(seg x 11)" 3 >/dev/null
    jtrial "$C" x "length of a middle frame of flushed segment 11 flipped" 40
    jfresh seg x; jt blockflip "$(seg x 21)" 4 >/dev/null
    jtrial "$C" x "block number of a frame of segment 21 flipped" 40
    jfresh seg x; jt payflip "$(seg x 31)" -1 >/dev/null
    jtrial "$C" x "payload byte of the last frame (block 40, flushed) flipped" 40
    jfresh seg x; rm "$(seg x 11)"
    jtrial "$C" x "B3: middle segment 11 deleted" 40
    jfresh seg x; rm "$(seg x 31)"
    jtrial "$C" x "newest segment 31 of a flushed datadir deleted (journal behind head)" 40
    jfresh seg x; rm -f x/journal/*
    jtrial "$C" x "all segments of a flushed datadir deleted" 40
    jfresh seg x; : >"$(seg x 21)"
    jtrial "$C" x "J19: middle segment 21 emptied" 40
    jfresh seg x; truncate -s $(($(stat -c %s "$(seg x 1)") / 2)) "$(seg x 1)"
    jtrial "$C" x "flushed segment 1 truncated to half" 40
    jfresh seg x; truncate -s $(($(stat -c %s "$(seg x 31)") - 100)) "$(seg x 31)"
    jtrial "$C" x "DF5a: last segment (flushed block 40) cut short by 100 bytes" 40
    jfresh seg x; truncate -s 30 "$(seg x 31)"
    jtrial "$C" x "last segment cut inside its header" 40
    jfresh seg x; cp "$(seg x 11)" "$(seg x 5)"
    jtrial "$C" x "B3: a copy of segment 11 under an earlier name (5)" 40
    jfresh seg x; cp "$(seg x 21)" "$(seg x 11)"
    jtrial "$C" x "segment 21 copied over segment 11 (duplicate blocks)" 40
    jfresh seg x; mv "$(seg x 11)" x/tmp.log; mv "$(seg x 21)" "$(seg x 11)"; mv x/tmp.log "$(seg x 21)"
    jtrial "$C" x "segments 11 and 21 swapped (reorder)" 40
    jfresh seg x; cp fd/journal/"$(basename "$(seg x 1)")" x/journal/
    jtrial "$C" x "B5/J23: another datadir's flushed segment 1 copied in" 40
    jfresh seg x; python3 - "$(seg x 21)" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[20]^=1; open(p,'wb').write(b)
PY
    jtrial "$C" x "datadir id in segment 21's header flipped" 40
    jfresh seg x; echo notes >x/journal/notes.txt; cp t10.jsonl x/journal/mine.log.bak
    jtrial "$C" x "files strata did not make in journal/" 40
    [ -f x/journal/notes.txt ] && [ -f x/journal/mine.log.bak ] || record "$C" bad "foreign files in journal/ were deleted"
    # --- on c1 (a killed writer: blocks 11..C1HEAD unflushed in segment 11)
    jfresh c1 x; jt lenflip "x/$LAST" 3 >/dev/null
    jtrial "$C" x "B1/J06: length of the frame of block 14 flipped (unflushed, valid frames after it)" "$C1HEAD"
    jfresh c1 x; jt payflip "x/$LAST" 2 >/dev/null
    jtrial "$C" x "payload byte of the frame of block 13 flipped (frames after it)" "$C1HEAD"
    jfresh c1 x; jt rootflip "x/$LAST" 4 >/dev/null
    jtrial "$C" x "root of the frame of block 15 flipped" "$C1HEAD"
    jfresh c1 x; head -c 200000 /dev/zero >>"x/$LAST"
    jtrial "$C" x "J05: zeros after the last frame (a power cut's fill)" "$C1HEAD"
    jfresh c1 x; jt payflip "x/$LAST" -1 >/dev/null
    jtrial "$C" x "J12: a full-length last frame with a bad checksum (torn tail)" $((C1HEAD - 1))
    for cut in 1 100 5000 100000; do
        jfresh c1 x; truncate -s $(($(stat -c %s "x/$LAST") - cut)) "x/$LAST"
        jtrial "$C" x "last frame cut short by $cut bytes (torn tail)" $((C1HEAD - 1))
        ls x/journal/ | grep -q 'torn-' || [ ! -f "x/$LAST" ] ||
            record "$C" bad "cut by $cut: no .torn-OFFSET file kept after the writer's open"
    done
    jfresh c1 x; off=$(jt frames "x/$LAST" | sed -n 4p | cut -d' ' -f2); truncate -s $((off + 10)) "x/$LAST"
    jtrial "$C" x "segment 11 truncated 10 bytes into the frame of block 14" 13
    jfresh c1 x; rm "x/$LAST"
    jtrial "$C" x "J26: newest segment deleted (like a torn tail cut to nothing)" 10
    jfresh c1 x; rm -f x/journal/*
    jtrial "$C" x "J27: all segments deleted" 10
    jfresh c1 x; cp "f4/$LAST" "x/$LAST"
    jtrial "$C" x "B4/J22: another datadir's unflushed segment 11 over ours" 10
    jfresh c1 x; cp "$(seg fd 1)" "$(seg x 1)"
    jtrial "$C" x "another datadir's flushed segment 1 beside ours" "$C1HEAD"
    jfresh c1 x; cp "x/$LAST" "$(seg x 12)"
    jtrial "$C" x "segment 11 duplicated as 12" "$C1HEAD"
    jfresh c1 x; cat "x/$LAST" "x/$LAST" >x/dup && mv x/dup "x/$LAST"
    jtrial "$C" x "segment 11's bytes twice in one file" "$C1HEAD"
    for i in 1 2 3 4 5 6; do
        jfresh c1 x; size=$(stat -c %s "x/$LAST")
        off=$(((RANDOM * 32768 + RANDOM) % size))
        printf "\\x$(printf %02x $((RANDOM % 255 + 1)))" | dd of="x/$LAST" bs=1 seek=$off conv=notrunc status=none
        # a flip in the last frame is a torn tail (MIN head - 1), anywhere else refused
        last_off=$(jt frames "c1/$LAST" | tail -n 1 | cut -d' ' -f2)
        [ $off -ge "$last_off" ] && m=$((C1HEAD - 1)) || m=$C1HEAD
        jtrial "$C" x "random xor at $off of unflushed segment 11" "$m"
    done
fi

# --- frames changed and re-checksummed (CR2)
#   bad as jtrial; a changed value must not be served: the open's walk along
#   the keys a replayed block wrote refuses it naming the block (or the value
#   is superseded and every answer is still right).
if want recheck; then
    C="frames re-checksummed"
    jfresh c1 x; jt value "x/$LAST" 3 >/dev/null; jtrial "$C" x "CR2: an account value of block 14 (unflushed) changed, re-checksummed" "$C1HEAD"
    jfresh c1 x; jt value "x/$LAST" -1 >/dev/null; jtrial "$C" x "CR2: an account value of the last block (unflushed) changed, re-checksummed" "$C1HEAD"
    jfresh c1 x; jt prev "x/$LAST" 2 >/dev/null; jtrial "$C" x "CR2: an unwind value of block 13 (unflushed) changed, re-checksummed" "$C1HEAD"
    # ... and then an unwind through it: refused, or the trace's root of block 12
    jfresh c1 x; key=$(jt prev "x/$LAST" 2 | cut -d' ' -f3)
    PANIC=0
    run "$STRATA" verify --datadir x; vrc=$RC
    run "$STRATA" get --datadir x --block 12 account "$key"
    [ $RC = 0 ] && [ "$OUT" != "$(truth x 12 "$key")" ] && record "$C" bad "unflushed unwind value of block 13 changed: get --block 12 account $key served '$OUT' (true: '$(truth x 12 "$key")')"
    run "$STRATA" unwind --datadir x --to 12; urc=$RC; ue=$(tail -c 200 err.txt | tr '\n' ' ')
    run "$STRATA" root --datadir x; root=$OUT
    if [ "$PANIC" = 1 ]; then record "$C" bad "unflushed unwind value of block 13, unwind --to 12: panic/hang"
    elif root_wrong "$root"; then record "$C" bad "unflushed unwind value of block 13 changed: unwind --to 12 rc $urc, root '$root' not the trace's"
    elif [ $vrc = 0 ] && [ $urc != 0 ]; then record "$C" bad "unflushed unwind value of block 13 changed: verify ok, unwind --to 12 refused: $ue"
    elif [ $urc != 0 ]; then record "$C" clear "unflushed unwind value of block 13: unwind --to 12 refused: $ue"
    else record "$C" none "unflushed unwind value of block 13: unwind --to 12 reached '$root'"; fi
    jfresh c1 x; jt rootrec "x/$LAST" -1 >/dev/null; jtrial "$C" x "CR2: the last block's root (record and frame) changed, re-checksummed" "$C1HEAD"
    # flushed frames: only unwind and reads at a block use them; the unwind
    # must refuse or reach the trace's root, get --block must not serve a wrong value
    for what in value prev; do
        jfresh seg x; key=$(jt $what "$(seg x 31)" 4 | cut -d' ' -f3)
        PANIC=0
        run "$STRATA" verify --datadir x; vrc=$RC
        run "$STRATA" get --datadir x --block 34 account "$key"; grc=$RC; got=$OUT
        run "$STRATA" unwind --datadir x --to 33; urc=$RC; ue=$(tail -c 200 err.txt | tr '\n' ' ')
        run "$STRATA" root --datadir x; root=$OUT
        if [ "$PANIC" = 1 ]; then record "$C" bad "flushed $what of block 35: panic/hang"
        elif root_wrong "$root"; then record "$C" bad "flushed $what of block 35 changed: unwind rc $urc, root '$root' not the trace's"
        elif [ $grc = 0 ] && [ "$got" != "$(truth x 34 "$key")" ]; then record "$C" bad "flushed $what of block 35: get --block 34 account $key served '$got' (true: '$(truth x 34 "$key")')"
        elif [ $vrc = 0 ] && [ $urc != 0 ]; then record "$C" bad "flushed $what of block 35: verify ok, unwind refused: $ue"
        elif [ $vrc != 0 ] || [ $urc != 0 ]; then record "$C" clear "flushed $what of block 35 (unwind rc $urc: $ue; verify rc $vrc)"
        else record "$C" none "flushed $what of block 35: unwind reached $root"; fi
    done
fi

# --- replay with frequent flushes and no crash (B6)
#   bad = rc != 0, the final root not the trace's, verify not ok, get of the
#   account block 1 wrote not the true one, or export differing from the
#   undamaged seg's export (same state at block 40).
b6() { # detail, flags...
    local detail=$1 rc vr
    shift
    rm -rf k
    PANIC=0
    run "$STRATA" replay t.jsonl --datadir k "$@"; rc=$RC
    cp err.txt b6err.txt
    b6check "$detail" $rc
}
b6check() {
    local detail=$1 rc=$2 vr ex
    run "$STRATA" root --datadir k; root=$OUT
    run "$STRATA" verify --datadir k; vr=$RC; v=$(tail -c 200 out.txt | tr '\n' ' ')
    run "$STRATA" get --datadir k account "$B6ADDR"; got=$OUT
    run "$STRATA" export --datadir k --out k.dump; ex=$RC
    if [ "$PANIC" = 1 ]; then record "replay, frequent flushes" bad "$detail: panic/hang"
    elif [ "$rc" != 0 ]; then record "replay, frequent flushes" bad "$detail: rc $rc: $(tail -c 200 b6err.txt)"
    elif [ "$root" != "40 ${ROOT[40]}" ]; then record "replay, frequent flushes" bad "$detail: root '$root'"
    elif [ $vr != 0 ]; then record "replay, frequent flushes" bad "$detail: verify: $v"
    elif [ "$got" != "$(truth x 40 "$B6ADDR")" ]; then record "replay, frequent flushes" bad "$detail: get $B6ADDR '$got'"
    elif [ $ex != 0 ] || ! cmp -s k.dump seg.dump; then record "replay, frequent flushes" bad "$detail: export differs from the trace's state ($(diff k.dump seg.dump 2>/dev/null | grep -c '^<') lines)"
    else record "replay, frequent flushes" none "$detail"; fi
}
if want flushes; then
    for i in 1 2 3; do b6 "B6 run $i: --flush-mib 2 --memory-mib 8 --step-size 4 --keep-steps 1" --flush-mib 2 --memory-mib 8 --step-size 4 --keep-steps 1; done
    b6 "--flush-mib 2 --memory-mib 8 --step-size 8 --keep-steps 1" --flush-mib 2 --memory-mib 8 --step-size 8 --keep-steps 1
    b6 "--flush-mib 4 --memory-mib 16 --step-size 4 --keep-steps 1" --flush-mib 4 --memory-mib 16 --step-size 4 --keep-steps 1
    b6 "--flush-mib 2 --step-size 4 --keep-steps 1 (default memory)" --flush-mib 2 --step-size 4 --keep-steps 1
    for i in 1 2 3; do b6 "run $i: --flush-mib 2 --memory-mib 8 --step-size 4 (keep-steps 2)" --flush-mib 2 --memory-mib 8 --step-size 4; done
    b6 "--step-size 4 --keep-steps 1 alone" --step-size 4 --keep-steps 1
    # resumed: half, then the rest, with the B6 flags
    rm -rf k; PANIC=0
    run "$STRATA" replay t20.jsonl --datadir k --flush-mib 2 --memory-mib 8 --step-size 4 --keep-steps 1
    run "$STRATA" replay t.jsonl --datadir k --flush-mib 2 --memory-mib 8 --step-size 4 --keep-steps 1
    cp err.txt b6err.txt
    b6check "B6 flags, resumed at 20" $RC
fi

# --- SIGKILL during replay
#   bad = after the kill a root that is not the trace's root of its block, a
#   read-only open changing bytes, verify not ok (after a kill the datadir
#   must be whole), or the resumed replay not reaching the final root (or its
#   state differing from the trace's: verify + export as in B6).
REPLAY_MS=
if want kill-replay; then
    rm -rf k; s=$(date +%s%N); "$STRATA" replay t.jsonl --datadir k >/dev/null 2>&1; REPLAY_MS=$((($(date +%s%N) - s) / 1000000))
    echo "a full replay takes $REPLAY_MS ms" >&2
    for flags in "" "--flush-mib 2 --memory-mib 8 --step-size 4 --keep-steps 2" "--flush-mib 2 --memory-mib 8 --step-size 8 --keep-steps 1"; do
        for i in 1 2 3 4 5 6 7 8; do
            rm -rf k; "$STRATA" replay t10.jsonl --datadir k $flags >/dev/null 2>&1
            # shellcheck disable=SC2086
            "$STRATA" replay t.jsonl --datadir k $flags >/dev/null 2>kerr.txt &
            p=$!
            d=$(((RANDOM % (REPLAY_MS * 3 / 4 + 1)) + 30))
            sleep "$(printf '0.%03d' $((d % 1000)))"; [ $d -ge 1000 ] && sleep $((d / 1000))
            kill -9 $p 2>/dev/null; wait $p 2>/dev/null
            PANIC=0
            b=$(digest k)
            run "$STRATA" root --datadir k; root=$OUT; rrc=$RC
            run "$STRATA" verify --datadir k; vr=$RC; v=$(tail -c 200 out.txt err.txt | tr '\n' ' ')
            a=$(digest k)
            if grep -q panicked kerr.txt || [ "$PANIC" = 1 ]; then record "SIGKILL during replay" bad "kill at ${d} ms ($flags): panic/hang"; continue; fi
            if [ "$b" != "$a" ]; then record "SIGKILL during replay" bad "kill at ${d} ms ($flags): a read-only open changed the datadir"; continue; fi
            if [ $rrc != 0 ] || root_wrong "$root"; then record "SIGKILL during replay" bad "kill at ${d} ms ($flags): root rc $rrc '$root' $(tail -c 200 err.txt)"; continue; fi
            if [ $vr != 0 ]; then record "SIGKILL during replay" bad "kill at ${d} ms ($flags): verify: $v"; continue; fi
            # shellcheck disable=SC2086
            run "$STRATA" replay t.jsonl --datadir k $flags; rc=$RC
            c=$(tail -c 200 err.txt)
            run "$STRATA" root --datadir k; r2=$OUT
            run "$STRATA" export --datadir k --out k.dump
            if [ $rc != 0 ] || [ "$r2" != "40 ${ROOT[40]}" ] || ! cmp -s k.dump seg.dump; then
                record "SIGKILL during replay" bad "kill at ${d} ms ($flags) at '$root': resume rc $rc, root '$r2', export $(cmp -s k.dump seg.dump && echo same || echo differs) $c"
            else record "SIGKILL during replay" none "kill at ${d} ms ($flags): head ${root%% *}"; fi
        done
    done
fi

# --- SIGKILL during compact / init --state / export
#   bad = the datadir after the kill not opening at its old head and root
#   (compact, export) or serving a root other than the dump's (init --state);
#   verify not ok after the next writer; a temporary file that the next run
#   of the same command does not remove; an --out file that is neither the
#   old file nor the whole dump.
ms_of() { local s; s=$(date +%s%N); "$@" >/dev/null 2>&1; echo $((($(date +%s%N) - s) / 1000000)); }
killat() { # ms, command... (stdout/stderr to kout/kerr)
    local d=$1 p
    shift
    "$@" >kout.txt 2>kerr.txt &
    p=$!
    sleep "$(printf '%d.%03d' $((d / 1000)) $((d % 1000)))"
    kill -9 $p 2>/dev/null; wait $p 2>/dev/null
}
if want kill-other; then
    C="SIGKILL during compact/init/export"
    # compact of c1: replays and flushes the journal, collates
    jfresh c1 k; CMS=$(ms_of "$STRATA" compact --datadir k)
    [ "$CMS" -gt 20 ] || CMS=200
    for i in $(seq 1 8); do
        jfresh c1 k; d=$((RANDOM % CMS + 5))
        killat $d "$STRATA" compact --datadir k
        PANIC=0
        run "$STRATA" root --datadir k; root=$OUT
        run "$STRATA" verify --datadir k; vr=$RC
        run "$STRATA" compact --datadir k; crc=$RC
        run "$STRATA" root --datadir k; r2=$OUT
        if grep -q panicked kerr.txt || [ "$PANIC" = 1 ]; then record "$C" bad "compact killed at $d ms: panic/hang"
        elif [ "$root" != "$C1HEAD ${ROOT[$C1HEAD]}" ] || [ "$r2" != "$root" ]; then record "$C" bad "compact killed at $d ms: root '$root', after a new compact '$r2' (want $C1HEAD)"
        elif [ $vr != 0 ] || [ $crc != 0 ]; then record "$C" bad "compact killed at $d ms: verify rc $vr, compact rc $crc: $(tail -c 200 err.txt)"
        elif ls -a k k/files k/journal | grep -q '\.tmp\|rewrite\|convert\|strata-'; then record "$C" bad "compact killed at $d ms: temporary left after the next compact: $(ls -a k k/files k/journal | grep '\.tmp\|rewrite\|convert\|strata-' | head -3)"
        else record "$C" none "compact killed at $d ms"; fi
    done
    # init --state from seg's dump. A datadir with no block and the empty
    # trie's root ($EMPTY) is an import that committed nothing: fine.
    rm -rf ki; IMS=$(ms_of "$STRATA" init --state seg.dump --block 40 --datadir ki); rm -rf ki
    for i in $(seq 1 8); do
        rm -rf ki; d=$((RANDOM % IMS + 5))
        killat $d "$STRATA" init --state seg.dump --block 40 --datadir ki
        PANIC=0
        run "$STRATA" root --datadir ki; root=$OUT; rrc=$RC
        run "$STRATA" init --state seg.dump --block 40 --datadir ki; irc=$RC
        run "$STRATA" root --datadir ki; r2=$OUT; r2rc=$RC
        if grep -q panicked kerr.txt || [ "$PANIC" = 1 ]; then record "$C" bad "init --state killed at $d ms: panic/hang"
        elif [ $rrc = 0 ] && [ "$root" != "40 ${ROOT[40]}" ] && [ "$root" != "$EMPTY" ]; then record "$C" bad "init --state killed at $d ms: root '$root' served without error"
        elif [ $r2rc = 0 ] && [ "$r2" != "40 ${ROOT[40]}" ] && { [ $irc = 0 ] || [ "$r2" != "$EMPTY" ]; }; then record "$C" bad "init --state killed at $d ms, init again rc $irc: root '$r2'"
        elif [ $r2rc != 0 ] && [ $irc = 0 ]; then record "$C" bad "init --state killed at $d ms: the second init said ok, root fails"
        elif [ $irc != 0 ]; then record "$C" clear "init --state killed at $d ms: root '$root', the second init refused: $(tail -c 120 err.txt | tr '\n' ' ')"
        else record "$C" none "init --state killed at $d ms"; fi
    done
    # export --out onto an existing file
    EMS=$(ms_of "$STRATA" export --datadir seg --out kx.dump)
    for i in $(seq 1 8); do
        echo old >kx.dump; d=$((RANDOM % EMS + 5))
        killat $d "$STRATA" export --datadir seg --out kx.dump
        ok=0; { [ "$(cat kx.dump)" = old ] || cmp -s kx.dump seg.dump; } && ok=1
        left=$(ls -a | grep -c '^\.strata-output-')
        PANIC=0
        run "$STRATA" export --datadir seg --out kx.dump
        left2=$(ls -a | grep -c '^\.strata-output-')
        if grep -q panicked kerr.txt || [ "$PANIC" = 1 ]; then record "$C" bad "export killed at $d ms: panic/hang"
        elif [ $ok = 0 ]; then record "$C" bad "export killed at $d ms: --out is neither the old file nor the dump"
        elif [ "$left2" != 0 ]; then record "$C" bad "export killed at $d ms: $left2 .strata-output-* left after the next export"
        elif [ $RC != 0 ] || ! cmp -s kx.dump seg.dump; then record "$C" bad "export killed at $d ms: the next export rc $RC"
        else record "$C" none "export killed at $d ms ($left temporaries left, removed by the next export)"; fi
    done
fi

# --- SIGKILL during unwind (B10)
#   good = the datadir opens at the old head 40 with its window whole (the
#   unwind run again reaches block 5 with the trace's root) or at block 5.
#   bad = anything else: another head or root, verify not ok, the retried
#   unwind refused or ending elsewhere, a panic/hang.
if want kill-unwind; then
    C="SIGKILL during unwind"
    jfresh seg u; UMS=$(ms_of "$STRATA" unwind --datadir u --to 5)
    echo "an unwind 40 -> 5 takes $UMS ms" >&2
    for i in $(seq 1 10); do
        jfresh seg u; d=$((UMS * i / 10 + RANDOM % (UMS / 20 + 1)))
        killat $d "$STRATA" unwind --datadir u --to 5
        PANIC=0
        run "$STRATA" root --datadir u; root=$OUT
        run "$STRATA" verify --datadir u; vr=$RC
        if [ "$root" = "5 ${ROOT[5]}" ] && [ $vr = 0 ]; then record "$C" none "killed at $d ms: at block 5"; continue; fi
        if [ "$root" != "40 ${ROOT[40]}" ] || [ $vr != 0 ]; then record "$C" bad "killed at $d ms: root '$root', verify rc $vr"; continue; fi
        run "$STRATA" unwind --datadir u --to 5; urc=$RC; e=$(tail -c 200 err.txt | tr '\n' ' ')
        run "$STRATA" root --datadir u; r2=$OUT
        if [ "$PANIC" = 1 ]; then record "$C" bad "killed at $d ms: panic/hang"
        elif [ $urc != 0 ] || [ "$r2" != "5 ${ROOT[5]}" ]; then record "$C" bad "killed at $d ms: at 40, retried unwind rc $urc, root '$r2': $e"
        else record "$C" none "killed at $d ms: at 40, retried unwind reached 5"; fi
    done
fi

# --- disk full, issue 28's cases (needs root: a tmpfs in the work dir)
#   bad = a panic; a replay whose final flush failed exiting 0 (DF2c); a
#   datadir copied onto a full disk (its newest segment cut short) whose
#   journal a writer then deletes or shortens without keeping the bytes
#   (DF5a/B2); committed blocks lost after the disk has room again.
if want disk-full && [ "$(id -u)" = 0 ] && mkdir -p full2 && mount -t tmpfs -o size=64m tmpfs full2 2>/dev/null; then
    C="disk full (issue 28)"
    SEGKB=$(du -sk seg | cut -f1)
    # DF5a: cp -a of seg onto a disk a little too small
    for short_kb in 200 2000 8000; do
        rm -rf full2/*
        mount -o remount,size=$(((SEGKB - short_kb) * 1024)) "$PWD/full2"
        cp -a seg full2/e 2>/dev/null
        mount -o remount,size=1g "$PWD/full2"
        if [ -f full2/e/state.redb ] && cmp -s full2/e/state.redb seg/state.redb; then
            jtrial "$C" full2/e "DF5a: seg copied onto a disk ${short_kb} KiB too small" 40
        else
            PANIC=0; run "$STRATA" root --datadir full2/e
            if [ "$PANIC" = 1 ]; then record "$C" bad "DF5a ${short_kb}: copy without a whole state.redb: panic"
            else record "$C" clear "DF5a ${short_kb}: the copy lost state.redb bytes: root rc $RC"; fi
        fi
    done
    # DF2c: the final flush at close fails on ENOSPC: rc must be non-zero
    for mib in 48 72 76 80 84 88; do
        rm -rf full2/*
        mount -o remount,size=${mib}m "$PWD/full2"
        PANIC=0
        run "$STRATA" replay t.jsonl --datadir full2/d --memory-mib 4096 --flush-mib 4096; rc=$RC
        e=$(tail -c 300 err.txt | tr '\n' ' ')
        mount -o remount,size=1g "$PWD/full2"
        if [ "$PANIC" = 1 ]; then record "$C" bad "replay on ${mib} MiB: panic/hang"; continue; fi
        if [ $rc = 0 ] && grep -qi "flush at close failed\|final flush" err.txt; then record "$C" bad "replay on ${mib} MiB: the final flush failed, rc 0: $e"; continue; fi
        run "$STRATA" replay t.jsonl --datadir full2/d; r=$RC
        run "$STRATA" root --datadir full2/d
        if [ "$OUT" != "40 ${ROOT[40]}" ]; then record "$C" bad "replay on ${mib} MiB (rc $rc): after room, resume rc $r, root '$OUT'"
        elif [ $rc != 0 ]; then record "$C" clear "replay on ${mib} MiB refused: ${e:0:160}"
        else record "$C" none "replay on ${mib} MiB fit"; fi
    done
    # unwind and compact on a full disk: refused or done, never half
    for cmd in "unwind --to 5" compact; do
        rm -rf full2/*
        mount -o remount,size=1g "$PWD/full2"
        cp -a seg full2/u
        used=$(du -sk full2 | cut -f1)
        mount -o remount,size=$(((used + 64) * 1024)) "$PWD/full2"
        PANIC=0
        # shellcheck disable=SC2086
        run "$STRATA" $cmd --datadir full2/u; rc=$RC
        mount -o remount,size=1g "$PWD/full2"
        run "$STRATA" root --datadir full2/u; root=$OUT
        run "$STRATA" verify --datadir full2/u; vr=$RC
        want_root="40 ${ROOT[40]}"; [ "$cmd" != compact ] && [ $rc = 0 ] && want_root="5 ${ROOT[5]}"
        if [ "$PANIC" = 1 ]; then record "$C" bad "$cmd on a full disk: panic/hang"
        elif [ "$root" != "$want_root" ] || [ $vr != 0 ]; then record "$C" bad "$cmd on a full disk (rc $rc): root '$root', verify rc $vr"
        elif [ $rc != 0 ]; then record "$C" clear "$cmd on a full disk refused: $(tail -c 120 err.txt)"
        else record "$C" none "$cmd on a full disk fit"; fi
    done
    umount full2
elif want disk-full; then
    echo "disk full (issue 28): skipped (needs root and tmpfs)" >&2
fi

# --- bad state dumps for init --state
#   bad = a panic/hang; init succeeding on a dump that is not whole and
#   right (a datadir whose root is not the dump's, or verify not ok); a
#   refused init leaving a datadir behind.
if want dumps; then
    C="bad state dumps"
    dump_trial() { # detail file [extra args]
        local detail=$1 f=$2
        shift 2
        rm -rf di; PANIC=0
        run "$STRATA" init --state "$f" --datadir di "$@"; rc=$RC; e=$(tail -c 160 err.txt | tr '\n' ' ')
        if [ "$PANIC" = 1 ]; then record "$C" bad "$detail: panic/hang"; return; fi
        if [ $rc != 0 ]; then
            if [ -e di ] && [ -n "$(ls -A di 2>/dev/null)" ]; then
                # a leftover datadir is not bad in itself, but it must not serve a state
                run "$STRATA" root --datadir di
                if [ $RC = 0 ] && [ "$OUT" != "$EMPTY" ]; then record "$C" bad "$detail: refused, but the datadir it left serves '$OUT'"
                else record "$C" clear "$detail: ${e:0:120} (left a datadir: root '$OUT')"; fi
            else record "$C" clear "$detail: ${e:0:120}"; fi
            return
        fi
        run "$STRATA" verify --datadir di; vr=$RC
        run "$STRATA" root --datadir di; root=$OUT
        hdr=$(head -c 200 "$f" | head -n 1 | jq -r .root 2>/dev/null)
        if [ $vr != 0 ] || [ "${root#* }" != "$hdr" ]; then record "$C" bad "$detail: accepted, root '$root' (dump says $hdr), verify rc $vr"
        else record "$C" none "$detail: accepted, root is the dump's"; fi
    }
    L2=$(sed -n 2p seg.dump); L3=$(sed -n 3p seg.dump)
    dump_trial "the good dump" seg.dump
    : >bd; dump_trial "empty file" bd
    head -n 1 seg.dump >bd; dump_trial "root line only" bd
    tail -n +2 seg.dump >bd; dump_trial "no root line" bd
    head -n 5000 seg.dump >bd; dump_trial "first 5000 lines only" bd
    head -c $(($(stat -c %s seg.dump) / 2)) seg.dump >bd; dump_trial "cut in the middle of a line" bd
    head -c $(($(stat -c %s seg.dump) - 1)) seg.dump >bd; dump_trial "last byte (newline) missing" bd
    { head -n 2 seg.dump; echo "$L2"; tail -n +3 seg.dump; } >bd; dump_trial "an account line twice" bd
    { head -n 1 seg.dump; echo "$L3"; echo "$L2"; tail -n +4 seg.dump; } >bd; dump_trial "two lines out of order" bd
    sed '1s/0x[0-9a-f]\{4\}/0x0000/' seg.dump >bd; dump_trial "a wrong root" bd
    sed '2s/"nonce":[0-9]*/"nonce":999999/' seg.dump >bd; dump_trial "a nonce changed" bd
    sed '2s/"balance":"0x/"balance":"0xff/' seg.dump >bd; dump_trial "a balance changed" bd
    sed '2s/"address":"0x/"address":"0xZZ/' seg.dump >bd; dump_trial "a non-hex address" bd
    sed '2s/"address":"0x../"address":"0x/' seg.dump >bd; dump_trial "a short address" bd
    sed '2s/"nonce":[0-9]*/"nonce":-1/' seg.dump >bd; dump_trial "a negative nonce" bd
    sed '2s/"nonce":[0-9]*/"nonce":18446744073709551616/' seg.dump >bd; dump_trial "nonce 2^64" bd
    sed '2s/"balance":"0x[0-9a-f]*"/"balance":"0x1'"$(printf '0%.0s' $(seq 1 64))"'"/' seg.dump >bd; dump_trial "balance above 2^256" bd
    sed 's/$/\r/' seg.dump >bd; dump_trial "CRLF line ends" bd
    { head -n 1 seg.dump; printf '\xff\xfe\n'; tail -n +2 seg.dump; } >bd; dump_trial "bytes not UTF-8" bd
    { head -n 1 seg.dump; echo '{}'; tail -n +2 seg.dump; } >bd; dump_trial "an empty object line" bd
    { cat seg.dump; echo; } >bd; dump_trial "an empty last line" bd
    # the first account with code gets other code (its codeHash kept)
    python3 -c '
import re,sys
done=False
for line in open("seg.dump"):
    if not done and re.search(r"\"code\":\"0x[0-9a-f]{4,}", line):
        line=re.sub(r"\"code\":\"0x[0-9a-f]*\"", "\"code\":\"0x6000\"", line, count=1); done=True
    sys.stdout.write(line)
' >bd
    cmp -s bd seg.dump || dump_trial "code not matching its codeHash" bd
    dump_trial "--block u64::MAX" seg.dump --block 18446744073709551615
    dump_trial "a folder as the dump" seg
    dump_trial "a missing dump" nothere.dump
fi

# --- proof / get / unwind / export edge cases
#   bad = a panic/hang; a wrong value served with rc 0 (B5); a node the
#   script made (device, FIFO) or a symlink replaced by a regular file (B7);
#   stdout on a full device panicking instead of `cannot write the output`
#   (B8); verify --sort-memory aborting (B9); a command that is refused
#   changing the datadir.
if want edges; then
    C="proof/get/unwind/export edges"
    edge() { # detail, expect (ok|err), command...
        local detail=$1 expect=$2 b a
        shift 2
        b=$(digest seg); PANIC=0
        run "$@"
        a=$(digest seg)
        if [ "$PANIC" = 1 ]; then record "$C" bad "$detail: panic/hang: $(tail -c 200 err.txt)"
        elif [ "$b" != "$a" ]; then record "$C" bad "$detail: changed the datadir"
        elif [ "$expect" = err ] && [ $RC = 0 ]; then record "$C" bad "$detail: rc 0, want a refusal: $(head -c 200 out.txt)"
        elif [ "$expect" = ok ] && [ $RC != 0 ]; then record "$C" clear "$detail: refused: $(tail -c 160 err.txt)"
        elif [ $RC != 0 ]; then record "$C" clear "$detail: $(tail -c 120 err.txt | tr '\n' ' ')"
        else record "$C" none "$detail"; fi
    }
    # B5: a foreign flushed segment, then get --block 5 (must not serve the other chain's value)
    jfresh seg e2; cp "$(seg fd 1)" e2/journal/
    AB5=0x00778b22159d1e3b13634c3e8d4afa086cfce118
    PANIC=0
    run "$STRATA" verify --datadir e2; vr=$RC
    run "$STRATA" get --datadir e2 --block 5 account $AB5; grc=$RC; got=$OUT
    if [ "$PANIC" = 1 ]; then record "$C" bad "B5: panic/hang"
    elif [ $grc = 0 ] && [ "$got" != "$(truth x 5 $AB5)" ]; then record "$C" bad "B5: get --block 5 on a foreign flushed segment served '$got' (true '$(truth x 5 $AB5)'), verify rc $vr"
    elif [ $grc = 0 ] && [ $vr = 0 ]; then record "$C" bad "B5: verify ok over a foreign segment"
    else record "$C" clear "B5: get --block 5 rc $grc, verify rc $vr"; fi
    run "$STRATA" proof --datadir e2 --block 5 $AB5
    if [ "$PANIC" = 1 ]; then record "$C" bad "B5: proof --block 5: panic"
    elif [ $RC = 0 ]; then record "$C" bad "B5: proof --block 5 on a foreign flushed segment rc 0"
    else record "$C" clear "B5: proof --block 5 refused"; fi
    edge "get --block 41 (after the head)" err "$STRATA" get --datadir seg --block 41 account "$A14"
    edge "get --block 0 (genesis, in the window)" ok "$STRATA" get --datadir seg --block 0 account "$A14"
    edge "proof --block 41" err "$STRATA" proof --datadir seg --block 41 "$A14"
    edge "proof of an absent account" ok "$STRATA" proof --datadir seg 0x00000000000000000000000000000000000000aa
    edge "get of a 19-byte address" err "$STRATA" get --datadir seg account 0x00000000000000000000000000000000000000
    edge "unwind --to 41 (after the head)" err "$STRATA" unwind --datadir seg --to 41
    edge "unwind --to u64::MAX" err "$STRATA" unwind --datadir seg --to 18446744073709551615
    # (the findings' command: the default temp dir, here TMPDIR in the work dir)
    rm -rf vt; mkdir vt
    edge "B9: verify --sort-memory 99999999999" err env TMPDIR="$WORK/vt" "$STRATA" verify --datadir seg --sort-memory 99999999999
    ls "$WORK/vt" 2>/dev/null | grep -q . && record "$C" bad "B9: a folder left in the temp dir: $(ls vt)"
    edge "export --out into a missing folder" err "$STRATA" export --datadir seg --out "$WORK/nothere/x.dump"
    edge "export --out a folder" err "$STRATA" export --datadir seg --out "$WORK/jcopy"
    # B7: nodes made here (never /dev/null itself)
    rm -rf nodes; mkdir nodes
    if [ "$(id -u)" = 0 ] && mknod -m 666 nodes/null c 1 3 2>/dev/null; then
        edge "B7: export --out a null device made with mknod" ok "$STRATA" export --datadir seg --out nodes/null
        [ -c nodes/null ] || record "$C" bad "B7: export replaced the device node nodes/null with $(stat -c %F nodes/null)"
    else echo "B7 device node: skipped (mknod needs root)" >&2; fi
    mkfifo nodes/fifo
    cat nodes/fifo >nodes/from-fifo & cp=$!
    edge "B7: export --out a FIFO (read by cat)" ok "$STRATA" export --datadir seg --out nodes/fifo
    sleep 0.2; kill $cp 2>/dev/null; wait $cp 2>/dev/null
    if [ ! -p nodes/fifo ]; then record "$C" bad "B7: export replaced the FIFO with $(stat -c %F nodes/fifo)"
    elif ! cmp -s nodes/from-fifo seg.dump; then record "$C" bad "B7: the FIFO's reader got $(stat -c %s nodes/from-fifo) bytes, not the dump"; fi
    echo target >nodes/target; ln -s target nodes/link
    edge "export --out a symlink" ok "$STRATA" export --datadir seg --out nodes/link
    if [ ! -L nodes/link ]; then record "$C" bad "export --out replaced the symlink with a file"
    elif ! cmp -s nodes/target seg.dump; then record "$C" bad "export --out a symlink: its target is not the dump"; fi
    # B8: stdout on a full device (made here with mknod as /dev/full's twin, else /dev/full)
    FULL=/dev/full
    [ "$(id -u)" = 0 ] && mknod -m 666 nodes/full c 1 7 2>/dev/null && FULL=nodes/full
    b8() { # detail, command...
        local detail=$1
        shift
        PANIC=0
        timeout -s KILL "$TMO" "$@" >"$FULL" 2>err.txt; RC=$?
        grep -q panicked err.txt && PANIC=1
        if [ "$PANIC" = 1 ] || [ $RC = 101 ] || [ $RC -ge 128 ]; then record "B8: stdout on a full device" bad "$detail: rc $RC $(grep -m1 panicked err.txt)"
        elif [ $RC = 0 ]; then record "B8: stdout on a full device" bad "$detail: rc 0 with stdout full"
        elif grep -q "cannot write the output" err.txt; then record "B8: stdout on a full device" clear "$detail"
        else record "B8: stdout on a full device" clear "$detail: rc $RC $(tail -c 100 err.txt)"; fi
    }
    jfresh seg b8d
    b8 proof "$STRATA" proof --datadir b8d "$A14"
    b8 check-trace "$STRATA" check-trace t10.jsonl
    rm -rf b8r; b8 replay "$STRATA" replay t10.jsonl --datadir b8r
    b8 observe "$STRATA" observe --datadir b8d --duration 1
    b8 compact "$STRATA" compact --datadir b8d
    b8 "unwind --to 39" "$STRATA" unwind --datadir b8d --to 39
    rm -rf b8i; b8 "init --state" "$STRATA" init --state seg.dump --block 40 --datadir b8i
    b8 export "$STRATA" export --datadir b8d
    b8 root "$STRATA" root --datadir b8d
    b8 get "$STRATA" get --datadir b8d account "$A14"
    b8 stats "$STRATA" stats --datadir b8d
    b8 verify "$STRATA" verify --datadir b8d
    b8 completions "$STRATA" completions bash
    b8 man "$STRATA" man
    b8 gen-trace "$STRATA" gen-trace --accounts 100 --blocks 2
fi

# --- --metrics and observe
#   bad = a panic/hang; observe (read-only) changing a byte; a scrape that
#   fails while replay runs; a taken or bad address accepted silently.
if want metrics; then
    C="--metrics / observe"
    mt() { # detail expect command...
        local detail=$1 expect=$2
        shift 2
        PANIC=0; run "$@"
        if [ "$PANIC" = 1 ]; then record "$C" bad "$detail: panic/hang"
        elif [ "$expect" = err ] && [ $RC = 0 ]; then record "$C" bad "$detail: accepted"
        elif [ $RC != 0 ]; then record "$C" clear "$detail: $(tail -c 120 err.txt | tr '\n' ' ')"
        else record "$C" none "$detail"; fi
    }
    rm -rf m; mt "--metrics not an address" err "$STRATA" replay t10.jsonl --datadir m --metrics nonsense
    rm -rf m; mt "--metrics port 99999" err "$STRATA" replay t10.jsonl --datadir m --metrics 127.0.0.1:99999
    python3 -c 'import socket,time,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(60)' >port.txt &
    holder=$!; sleep 0.5; PORT=$(cat port.txt)
    rm -rf m; mt "--metrics on a taken port" err "$STRATA" replay t10.jsonl --datadir m --metrics 127.0.0.1:$PORT
    [ -e m/state.redb ] && record "$C" bad "--metrics on a taken port: the refused replay created a datadir"
    kill $holder 2>/dev/null; wait $holder 2>/dev/null
    # a scrape during a replay
    rm -rf m
    "$STRATA" replay t.jsonl --datadir m --metrics 127.0.0.1:0 >/dev/null 2>merr.txt &
    p=$!; addr=
    for _ in $(seq 1 100); do addr=$(grep -o '127\.0\.0\.1:[0-9]*' merr.txt | head -n 1); [ -n "$addr" ] && break; sleep 0.05; done
    if [ -n "$addr" ]; then
        body=$(timeout 10 python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://$addr/metrics').read().decode()[:20000])" 2>&1); src=$?
        nf=$(timeout 10 python3 -c "import urllib.request; urllib.request.urlopen('http://$addr/nothere')" 2>&1 | grep -c 404)
    fi
    wait $p; prc=$?
    if grep -q panicked merr.txt || [ $prc != 0 ]; then record "$C" bad "replay with --metrics 127.0.0.1:0: rc $prc"
    elif [ -z "$addr" ]; then record "$C" none "replay --metrics: finished before its address was read"
    elif [ $src != 0 ] || ! grep -q '^strata_' <<<"$body"; then record "$C" bad "scrape of $addr during replay failed: ${body:0:200}"
    else record "$C" none "scrape during replay ($(grep -c '^strata_' <<<"$body") samples)"; [ "$nf" -ge 1 ] && record "$C" clear "GET /nothere is 404"; fi
    # observe: read-only, on a closed datadir, a killed writer's, a missing one
    for d in seg c1; do
        jfresh $d o; b=$(digest o)
        mt "observe --duration 2 on $d" ok "$STRATA" observe --datadir o --duration 2
        [ "$(digest o)" = "$b" ] || record "$C" bad "observe on $d changed the datadir"
    done
    mt "observe on a missing datadir" err "$STRATA" observe --datadir nothere --duration 1
    [ -e nothere ] && record "$C" bad "observe created the missing datadir"
    mt "observe --rate 0" err "$STRATA" observe --datadir seg --rate 0 --duration 1
    mt "observe --duration -1" err "$STRATA" observe --datadir seg --duration -1
    mt "observe with a trace of another seed" ok "$STRATA" observe --datadir seg --trace other.jsonl --duration 1
    # observe beside a writer
    rm -rf m; "$STRATA" replay t20.jsonl --datadir m >/dev/null 2>&1
    "$STRATA" replay t.jsonl --datadir m --share --sync-every 1 >/dev/null 2>merr.txt & p=$!
    sleep 0.3
    mt "observe beside a replay --share" ok "$STRATA" observe --datadir m --duration 2
    wait $p; prc=$?
    [ $prc = 0 ] || record "$C" bad "replay --share with an observer failed rc $prc: $(tail -c 200 merr.txt)"
fi

# --- other findings of issue 28
#   bad as stated per line.
if want other; then
    C="other findings"
    # read-only opens of power-cut images: zeros after the last frame, a bad last checksum
    for how in zeros badsum; do
        jfresh c1 x
        [ $how = zeros ] && head -c 65536 /dev/zero >>"x/$LAST" || jt payflip "x/$LAST" -1 >/dev/null
        [ $how = zeros ] && want_head=$C1HEAD || want_head=$((C1HEAD - 1))
        PANIC=0; run "$STRATA" root --datadir x; r=$OUT; rrc=$RC
        run "$STRATA" verify --datadir x; vr=$RC
        run "$STRATA" get --datadir x account "$A14"; g=$RC
        if [ "$PANIC" = 1 ]; then record "$C" bad "J05/J12 $how: panic"
        elif [ $rrc != 0 ] || [ $g != 0 ] || [ $vr != 0 ]; then record "$C" bad "J05/J12 $how: a read-only open refuses a crash image the writer accepts (root rc $rrc, get rc $g, verify rc $vr): $(tail -c 160 err.txt)"
        elif [ "$r" != "$want_head ${ROOT[$want_head]}" ]; then record "$C" bad "J05/J12 $how: root '$r', want block $want_head"
        else record "$C" none "J05/J12 $how: read-only opens serve block $want_head"; fi
    done
    # readers on a killed writer's datadir (O2/O3)
    jfresh c1 x
    "$STRATA" observe --datadir x --duration 4 >/dev/null 2>oerr.txt & p=$!
    sleep 1
    PANIC=0; run "$STRATA" root --datadir x; r=$RC; e=$(tail -c 160 err.txt)
    run "$STRATA" get --datadir x account "$A14"; g=$RC
    wait $p; orc=$?
    if [ "$PANIC" = 1 ]; then record "$C" bad "O2: panic"
    elif [ $r != 0 ] || [ $g != 0 ]; then record "$C" bad "O2: root/get beside observe on a killed writer's datadir refused (root rc $r, get rc $g): $e"
    elif [ $orc != 0 ]; then record "$C" bad "O2: observe rc $orc: $(tail -c 160 oerr.txt)"
    else record "$C" none "O2: readers coexist on a killed writer's datadir"; fi
    jfresh c1 x
    "$STRATA" root --datadir x >/dev/null 2>&1 &
    "$STRATA" get --datadir x account "$A14" >/dev/null 2>&1 &
    run "$STRATA" verify --datadir x; v=$RC; wait
    [ $v = 0 ] && record "$C" none "O3: three readers at once on a killed writer's datadir" ||
        record "$C" bad "O3: verify beside two readers on a killed writer's datadir: $(tail -c 160 err.txt)"
    # temporaries of killed commands are removed by the next start: each
    # command is killed once its temporary exists (or after 10 s)
    kill_when() { # glob, command...
        local g=$1 p n
        shift
        "$@" >kout.txt 2>kerr.txt &
        p=$!
        for n in $(seq 1 1000); do compgen -G "$g" >/dev/null && break; kill -0 $p 2>/dev/null || break; sleep 0.01; done
        kill -9 $p 2>/dev/null; wait $p 2>/dev/null
    }
    echo old >tk.dump
    kill_when '.strata-output-*' "$STRATA" export --datadir seg --out tk.dump
    n1=$(ls -a | grep -c '^\.strata-output-'); run "$STRATA" export --datadir seg --out tk.dump; n2=$(ls -a | grep -c '^\.strata-output-')
    [ "$n2" = 0 ] && record "$C" none "export temporaries ($n1 after a kill) removed by the next export" ||
        record "$C" bad "$n2 .strata-output-* left after the next export"
    rm -rf vt; mkdir vt
    kill_when 'vt/*' "$STRATA" verify --datadir seg --temp-dir vt
    n1=$(ls vt | wc -l); run "$STRATA" verify --datadir seg --temp-dir vt; n2=$(ls vt | wc -l)
    [ "$n2" = 0 ] && record "$C" none "verify temporaries ($n1 after a kill) removed by the next verify" ||
        record "$C" bad "$n2 files left in --temp-dir after the next verify: $(ls vt | head -3)"
    rm -rf sw; mkdir sw; jfresh pristine sw/d
    kill_when 'sw/.strata-sweep-*' "$STRATA" replay t.jsonl --datadir sw/d --warmers 0,1 --step-size 4 --keep-steps 1
    n1=$(ls -a sw | grep -c '^\.strata-sweep-')
    run "$STRATA" replay t.jsonl --datadir sw/d --warmers 0,1 --step-size 4 --keep-steps 1
    n2=$(ls -a sw | grep -c '^\.strata-sweep-')
    [ "$n2" = 0 ] && record "$C" none "sweep temporaries ($n1 after a kill) removed by the next sweep (rc $RC)" ||
        record "$C" bad "$n2 .strata-sweep-* left after the next sweep"
    # refused writer commands must not change state.redb's bytes or mtime
    refused() { # detail command...
        local detail=$1 h m
        shift
        jfresh seg r; h=$(digest r); m=$(stat -c %Y.%y r/state.redb)
        PANIC=0; run "$@"
        if [ "$PANIC" = 1 ]; then record "$C" bad "$detail: panic"
        elif [ $RC = 0 ]; then record "$C" bad "$detail: accepted"
        elif [ "$(digest r)" != "$h" ] || [ "$(stat -c %Y.%y r/state.redb)" != "$m" ]; then record "$C" bad "$detail: refused, but the datadir's bytes or state.redb's mtime changed"
        else record "$C" clear "$detail: refused, nothing changed"; fi
    }
    refused "init --state into an existing datadir" "$STRATA" init --state seg.dump --datadir r
    refused "unwind --to 41" "$STRATA" unwind --datadir r --to 41
    refused "replay of another seed's trace" "$STRATA" replay other.jsonl --datadir r
    refused "replay --step-size 8 on a datadir made with the default" "$STRATA" replay t.jsonl --datadir r --step-size 8
    jfresh seg r; jt lenflip "$(seg r 31)" 2 >/dev/null; jlist r >jlist.txt; rm -rf jcopy; cp -a r/journal jcopy
    run "$STRATA" unwind --datadir r --to 99999; loss=$(jloss r jlist.txt jcopy)
    [ -z "$loss" ] && record "$C" clear "refused unwind on a damaged journal cut nothing" ||
        record "$C" bad "refused unwind on a damaged journal: $loss"
    # --step-size on an existing datadir: refused or used, never ignored
    jfresh pristine r
    PANIC=0; run "$STRATA" replay t.jsonl --datadir r --step-size 16
    if [ $RC = 0 ]; then record "$C" bad "--step-size 16 on a datadir made with 4: accepted (ignored?)"
    else record "$C" clear "--step-size 16 on a datadir made with 4 refused"; fi
    jfresh pristine r
    run "$STRATA" replay t.jsonl --datadir r --step-size 4 --keep-steps 1
    [ $RC = 0 ] && record "$C" none "the datadir's own --step-size replays" || record "$C" bad "the datadir's own --step-size refused: $(tail -c 160 err.txt)"
fi

# --- the surfaces after the durability work: output flags, ef-test links,
# chain configurations, serve --genesis and its limits, calls past their
# time limit, import-chain's final flush and --baseline-state. bad = an
# input or datadir file changed by a refused or any command, a panic or
# hang, a configuration stored that strata cannot read back, a call still
# running after its answer, a final-flush error that does not say the
# blocks are safe in the journal, or a refusal after blocks were imported.
if want surfaces; then
    C="output flags, links, configs, serve, calls"
    if [ ! -d sgc ]; then
        "$STRATA" gen-chain --accounts 2000 --contracts 20 --blocks 12 --gas-per-block 2000000 --fork cancun --seed 1 --out sgc >/dev/null 2>&1 || exit 1
        "$STRATA" gen-chain --accounts 2000 --contracts 20 --blocks 12 --gas-per-block 2000000 --fork cancun --seed 2 --out sgc2 >/dev/null 2>&1 || exit 1
        "$STRATA" import-chain sgc/chain.rlp --datadir sdd --genesis sgc/genesis.json >/dev/null 2>&1 || exit 1
    fi
    inputs() { cat sgc/chain.rlp sgc/genesis.json sgc/state.jsonl t.jsonl | sha256sum | cut -c1-64; }
    # An output flag at a datadir file or an input: refused, nothing changed.
    out_refused() { # detail, command...
        local detail=$1; shift
        jfresh sdd sdc; local h i; h=$(digest sdc); i=$(inputs)
        PANIC=0; run "$@"
        if [ "$PANIC" = 1 ]; then record "$C" bad "$detail: panic"
        elif [ "$(digest sdc)" != "$h" ] || [ "$(inputs)" != "$i" ]; then record "$C" bad "$detail: a datadir or input file changed (rc $RC)"
        elif [ $RC = 0 ]; then record "$C" bad "$detail: accepted"
        else record "$C" clear "$detail: refused, nothing changed: $(tail -c 120 err.txt)"; fi
    }
    seg1=$(ls sdd/journal | head -1)
    out_refused "import-chain --trace-out the datadir's state.redb" "$STRATA" import-chain sgc/chain.rlp --datadir sdc --trace-out sdc/state.redb
    out_refused "import-chain --trace-out a journal segment" "$STRATA" import-chain sgc/chain.rlp --datadir sdc --trace-out "sdc/journal/$seg1"
    out_refused "import-chain --json the datadir's state.redb" "$STRATA" import-chain sgc/chain.rlp --datadir sdc --json sdc/state.redb
    out_refused "import-chain --trace-out its input chain" "$STRATA" import-chain sgc/chain.rlp --datadir snew --genesis sgc/genesis.json --trace-out sgc/chain.rlp
    ln -sf sgc/chain.rlp slink.rlp
    out_refused "import-chain --trace-out a symlink to its input" "$STRATA" import-chain sgc/chain.rlp --datadir snew --genesis sgc/genesis.json --trace-out slink.rlp
    out_refused "import-chain --json its --genesis" "$STRATA" import-chain sgc/chain.rlp --datadir snew --genesis sgc/genesis.json --json sgc/genesis.json
    out_refused "import-chain --trace-out and --json one file" "$STRATA" import-chain sgc/chain.rlp --datadir sdc --trace-out same.out --json same.out
    out_refused "replay --json its trace" "$STRATA" replay t.jsonl --json t.jsonl
    out_refused "replay --plot into its datadir" "$STRATA" replay t.jsonl --datadir sdc --plot sdc/plot.svg
    out_refused "export --out the datadir's state.redb" "$STRATA" export --datadir sdc --out sdc/state.redb
    out_refused "gen-trace --out and --state-out one file" "$STRATA" gen-trace --accounts 10 --contracts 1 --blocks 1 --out same.out --state-out same.out
    [ -e snew ] && record "$C" bad "a refused import made the datadir snew" || record "$C" none "no refused import made a datadir"
    # Written through: a report over an older one, a trace onto /dev/null.
    jfresh sdd sdc; echo old >report.json
    run "$STRATA" import-chain sgc/chain.rlp --datadir sdc --json report.json
    { [ $RC = 0 ] && jq -e '.command == "import-chain"' report.json >/dev/null; } &&
        record "$C" none "--json over an older report replaced it whole" || record "$C" bad "--json over an older report: rc $RC"
    run "$STRATA" import-chain sgc/chain.rlp --datadir snull --genesis sgc/genesis.json --trace-out /dev/null
    { [ $RC = 0 ] && [ -c /dev/null ]; } && record "$C" none "--trace-out /dev/null streamed, still a device" ||
        record "$C" bad "--trace-out /dev/null: rc $RC"
    rm -rf snull

    # ef-test through symlink loops: ends, counts each case once.
    # The shared vectors: VECTORS, else beside the checkout this script is in.
    VECTORS="${VECTORS:-$SCRIPT_DIR/../../../../../shared/vectors}"
    HD="$VECTORS/ef_blockchain_tests/ValidBlocks/bcEIP1559/highDemand.json"
    [ -f "$HD" ] || record "$C" none "ef-test self-link trial skipped: no $HD"
    rm -rf loop2 loop1; mkdir loop2 loop1; ln -s ../loop2 loop2/a; ln -s ../loop2 loop2/b
    PANIC=0; run "$STRATA" ef-test loop2
    [ "$PANIC" = 1 ] && record "$C" bad "ef-test of a folder linked to itself twice: hang or panic" ||
        record "$C" none "ef-test of a folder linked to itself twice ends (rc $RC)"
    if [ -f "$HD" ]; then
        cp "$HD" loop1/; ln -s ../loop1 loop1/self
        PANIC=0; run "$STRATA" ef-test loop1
        cases=$(jq 'length' "$HD")
        if grep -q "^$cases passed\|[^0-9]$cases passed" out.txt err.txt && [ "$PANIC" = 0 ]; then
            record "$C" none "ef-test with a self-link counts its $cases cases once"
        else record "$C" bad "ef-test with a self-link: $(grep -h passed out.txt err.txt | head -1)"; fi
    fi

    # Chain configurations with forks out of order: refused, no datadir.
    for fork in '.config.londonBlock = 5' '.config.londonBlock = 5 | .config.arrowGlacierBlock = 5 | .config.grayGlacierBlock = 5' \
        '.config.shanghaiTime = 300 | .config.cancunTime = 200'; do
        jq "$fork" sgc/chain.json >bad-chain.json; jq "$fork" sgc/genesis.json >bad-genesis.json
        rm -rf sbad
        PANIC=0; run "$STRATA" init --state sgc/state.jsonl --chain bad-chain.json --datadir sbad
        { [ $RC != 0 ] && [ "$PANIC" = 0 ] && grep -q "unsupported fork ordering" err.txt && [ ! -e sbad ]; } &&
            record "$C" clear "init --chain with $fork refused: $(tail -c 100 err.txt)" || record "$C" bad "init --chain with $fork: rc $RC"
        PANIC=0; run "$STRATA" import-chain sgc/chain.rlp --genesis bad-genesis.json --datadir sbad
        { [ $RC != 0 ] && [ "$PANIC" = 0 ] && grep -q "unsupported fork ordering" err.txt && [ ! -e sbad ]; } &&
            record "$C" clear "import-chain --genesis with $fork refused" || record "$C" bad "import-chain --genesis with $fork: rc $RC"
    done

    # serve: another chain's genesis, zero limits, a taken --ws port.
    serve_refused() { # detail, grep pattern, args...
        local detail=$1 pattern=$2; shift 2
        PANIC=0; run "$STRATA" serve --datadir sdd --http 127.0.0.1:0 "$@"
        { [ $RC != 0 ] && [ $RC != 137 ] && [ "$PANIC" = 0 ] && grep -q "$pattern" err.txt; } &&
            record "$C" clear "$detail refused: $(tail -c 100 err.txt)" || record "$C" bad "$detail: rc $RC $(tail -c 100 err.txt)"
    }
    serve_refused "serve --genesis of another chain" "holds another chain" --genesis sgc2/genesis.json
    serve_refused "serve --max-page 0" "max-page" --max-page 0
    serve_refused "serve --max-connections 0" "max-connections" --max-connections 0
    python3 -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",18611)); s.listen(); time.sleep(30)' &
    holder=$!; sleep 0.5
    serve_refused "serve --ws on a taken port" "127.0.0.1:18611" --ws 127.0.0.1:18611
    kill $holder 2>/dev/null; wait $holder 2>/dev/null

    # Calls past their time limit are stopped before their answer.
    "$STRATA" serve --datadir sdd --http 127.0.0.1:18612 --call-timeout-ms 200 --rpc-gas-cap 20000000000 --max-in-flight 2 2>serve.err &
    srv=$!; sleep 1
    body='{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x00000000000000000000000000000000000000cc","gas":"0x4a817c800"},"latest",{"0x00000000000000000000000000000000000000cc":{"code":"0x5b600056"}}]}'
    callers=()
    for _ in 1 2 3 4 5 6; do
        curl -s -H 'content-type: application/json' -d "$body" http://127.0.0.1:18612 >>calls.out &
        callers+=($!)
    done
    wait "${callers[@]}"
    t0=$(awk '{print $14+$15}' /proc/$srv/stat); sleep 3; t1=$(awk '{print $14+$15}' /proc/$srv/stat)
    ticks=$((t1 - t0)); stopped=$(grep -o "was stopped" calls.out | wc -l)
    { [ "$ticks" -lt 50 ] && [ "$stopped" = 6 ]; } && record "$C" none "6 calls past 200 ms answered stopped; the server then idle ($ticks ticks in 3 s)" ||
        record "$C" bad "calls past their limit: $stopped of 6 answered stopped, $ticks CPU ticks in the 3 s after"
    kill $srv; wait $srv 2>/dev/null; rm -f calls.out

    # --baseline-state whose accounts do not give its root: refused first.
    jfresh sdd sdc
    python3 - sgc/state.jsonl >tampered.jsonl <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
account = json.loads(lines[1]); account["balance"] = "0x1234567"; lines[1] = json.dumps(account)
print("\n".join(lines))
PY
    rm -rf sinit; "$STRATA" init --state sgc/state.jsonl --chain sgc/chain.json --datadir sinit >/dev/null 2>&1
    PANIC=0; run "$STRATA" import-chain sgc/chain.rlp --datadir sinit --baseline memory --baseline-state tampered.jsonl
    head=$("$STRATA" root --datadir sinit | cut -d' ' -f1)
    { [ $RC != 0 ] && [ "$head" = 0 ]; } && record "$C" clear "--baseline-state with a wrong account refused before any block (head $head)" ||
        record "$C" bad "--baseline-state with a wrong account: rc $RC, head $head"

    # import-chain's final flush on a full disk says the journal keeps the blocks.
    if [ "$(id -u)" = 0 ] && mkdir -p full3 && mount -t tmpfs -o size=3m tmpfs full3 2>/dev/null; then
        cp -a sinit full3/dd 2>/dev/null
        PANIC=0; run "$STRATA" import-chain sgc/chain.rlp --datadir full3/dd
        if [ $RC = 0 ]; then record "$C" none "import-chain on a 3 MB tmpfs had room"
        elif grep -q "final flush" err.txt; then
            grep -q "safe in the journal" err.txt && record "$C" clear "a failed final flush says the blocks are safe in the journal" ||
                record "$C" bad "a failed final flush does not say the journal keeps the blocks"
        else record "$C" clear "import-chain on a full disk refused: $(tail -c 100 err.txt)"; fi
        umount full3
    fi
fi

# --- the table
printf '\n| class | tried | clear error | no effect | bad |\n|---|---:|---:|---:|---:|\n'
TOTAL=(0 0 0 0)
for class in "redb byte flips" "redb truncations" "redb zeroed pages" "files/ damage" \
    "missing/foreign datadir parts" "read-only mount" "two writers" "disk full" "bad trace/genesis/CLI input" \
    "journal segments" "frames re-checksummed" "replay, frequent flushes" "SIGKILL during replay" \
    "SIGKILL during compact/init/export" "SIGKILL during unwind" "disk full (issue 28)" "bad state dumps" \
    "proof/get/unwind/export edges" "B8: stdout on a full device" "--metrics / observe" "other findings" \
    "output flags, links, configs, serve, calls"; do
    [ "${TRIED[$class]:-0}" = 0 ] && continue
    TOTAL=($((TOTAL[0] + ${TRIED[$class]:-0})) $((TOTAL[1] + ${CLEAR[$class]:-0})) $((TOTAL[2] + ${NOEFFECT[$class]:-0})) $((TOTAL[3] + ${BAD[$class]:-0})))
    printf '| %s | %d | %d | %d | %d |\n' "$class" "${TRIED[$class]:-0}" "${CLEAR[$class]:-0}" \
        "${NOEFFECT[$class]:-0}" "${BAD[$class]:-0}"
done
printf "| total | %d | %d | %d | %d |\n" "${TOTAL[@]}"
[ "${TOTAL[3]}" = 0 ]
