#!/bin/bash
# corruption.sh - a damaged store: a flipped byte in the data of an object
# in a pack, a truncated pack index, a damaged checkpoint record, a damaged
# undo history, a damaged stat cache, and a torn / damaged transaction log.
# fsck must name what is broken (exit 1); commands that need the damaged
# data must fail with exit 1 and change nothing; a transaction log whose
# plan cannot be read whole is kept until 'decree recover --rollback'.
# (Layouts: docs/format.md.)
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

# pack_flip PACK HEX: flip one byte in the middle of the data of object HEX
pack_flip() {
	$PY3 - "$1" "$2" <<'PY'
import struct, sys
path, want = sys.argv[1], bytes.fromhex(sys.argv[2])
data = bytearray(open(path, "rb").read())
assert data[:8] == b"DECRPACK", "not a pack"
off = 16
while off + 56 <= len(data):
    oid = bytes(data[off:off + 32])
    raw, stored = struct.unpack_from("<QQ", data, off + 40)
    if oid == want:
        pos = off + 56 + stored // 2
        data[pos] ^= 0x5A
        open(path, "r+b").write(data)
        print(pos)
        sys.exit(0)
    off += 56 + stored
sys.exit("object not found in pack")
PY
}
pack_of() { # store hex -> the pack holding the object
	local p
	for p in "$1"/packs/pack-*.pack; do
		if $PY3 - "$p" "$2" <<'PY'; then echo "$p"; return 0; fi
import struct, sys
data = open(sys.argv[1], "rb").read()
want = bytes.fromhex(sys.argv[2])
off = 16
while off + 56 <= len(data):
    if data[off:off + 32] == want:
        sys.exit(0)
    raw, stored = struct.unpack_from("<QQ", data, off + 40)
    off += 56 + stored
sys.exit(1)
PY
	done
	return 1
}
sha() { sha256sum <"$1" | cut -c1-64; }
randfile() { # seed bytes
	$PY3 -c 'import random, sys
random.seed(sys.argv[1])
sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(int(sys.argv[2]))))' "$1" "$2"
}
clean_after() { # name tree before-fp
	if [ "$(fast_state "$2")" = "$3" ]; then ok "$1: the tree is unchanged"
	else not_ok "$1: the tree is unchanged" "$(diff <(echo "$3") <(fast_state "$2") | head)"; fi
	if [ -z "$(temps_in "$2")" ] && [ -z "$(wal_in "$2")" ]; then ok "$1: no temps, no log"
	else not_ok "$1: no temps, no log" "$(temps_in "$2"; wal_in "$2")"; fi
}

# --- the base tree ---------------------------------------------------------------
B=$SCRATCH/base
mkdir -p "$B/src"
randfile C 8192 >"$B/victim.bin"
for i in $(seq 1 10); do printf 'source %d\n' "$i" >"$B/src/s$i.c"; done
printf 'text that compresses well %.0s' $(seq 1 50) >"$B/big.txt"
"$DECREE" -C "$B" checkpoint create --message A >/dev/null
VICTIM_C=$(sha "$B/victim.bin")
randfile D 8192 >"$B/victim.bin"
echo changed >"$B/src/s1.c"
"$DECREE" -C "$B" checkpoint create --message B >/dev/null
echo 'edited after B' >"$B/src/s2.c"
t "base: fsck of the intact store" "$DECREE" -C "$B" fsck
# a store is keyed by the root's path: every scenario starts from a copy of
# the base tree put back at the same path
cp -a "$B" "$SCRATCH/base.orig"
restore_base() { rm -rf "$B" && cp -a "$SCRATCH/base.orig" "$B"; }
ST=$B/.decree/store

# --- a flipped byte in an object's data ---------------------------------------------
P=$(pack_of "$ST" "$VICTIM_C")
if [ -n "$P" ] && pack_flip "$P" "$VICTIM_C" >/dev/null; then ok "flipped a byte in object ${VICTIM_C:0:12} in $(basename "$P")"
else not_ok "flipped a byte in object ${VICTIM_C:0:12}" "object not found in a pack"; fi
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *"$VICTIM_C"*) true ;; *) false ;; esac; then
	ok "fsck exits 1 naming the damaged object"
else
	not_ok "fsck exits 1 naming the damaged object" "exit $RC: $OUT $ERR"
fi
before=$(fast_state "$B")
t_err '*decree: *' "restore of a checkpoint needing the damaged object: exit 1" 1 \
	"$DECREE" -C "$B" checkpoint restore default:A
case "$ERR" in *"${VICTIM_C:0:12}"* | *victim.bin*) ok "... the message names the object or its path" ;;
*) not_ok "... the message names the object or its path" "$ERR" ;; esac
clean_after "restore needing a damaged object" "$B" "$before"
_run "$DECREE" -C "$B" --json checkpoint show default:A
if [ "$RC" -le 1 ] && ! grep -q 'Sanitizer\|runtime error' <<<"$ERR"; then
	ok "show of a checkpoint with a damaged object: no crash (exit $RC)"
else
	not_ok "show of a checkpoint with a damaged object: no crash" "exit $RC: $ERR"
fi
# a checkpoint that does not need the object still restores
t "restore of a checkpoint not needing the damaged object succeeds" \
	"$DECREE" -C "$B" checkpoint restore default:B
t "... and undo of it works" "$DECREE" -C "$B" undo
# Nothing is destroyed without being captured first: the working tree holds
# bytes whose only stored copy is the damaged object; a restore that
# overwrites them must store them afresh (or refuse), so undo brings them back.
randfile C 8192 >"$B/victim.bin"
want=$(fast_state "$B")
_run "$DECREE" -C "$B" checkpoint restore default:B
if [ "$RC" -eq 0 ]; then
	if "$DECREE" -C "$B" undo >"$SCRATCH/undo.out" 2>&1 && [ "$(fast_state "$B")" = "$want" ]; then
		ok "overwriting bytes whose stored copy is damaged: undo brings them back"
	else
		not_ok "overwriting bytes whose stored copy is damaged: undo brings them back" \
			"the restore overwrote victim.bin trusting the damaged object ${VICTIM_C:0:12}; undo: $(cat "$SCRATCH/undo.out")"
	fi
else
	ok "overwriting bytes whose stored copy is damaged: refused (${ERR##*decree: })"
	clean_after "refused restore over bytes with a damaged copy" "$B" "$want"
fi
restore_base

# --- a truncated pack index --------------------------------------------------------
IDX=$(ls "$ST"/packs/pack-*.idx | head -1)
size=$(stat -c %s "$IDX")
truncate -s $((size - 40)) "$IDX"
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *"$(basename "$IDX" .idx)"*) true ;; *) false ;; esac; then
	ok "truncated index (-40 bytes): fsck exits 1 naming it"
else
	not_ok "truncated index (-40 bytes): fsck exits 1 naming it" "exit $RC: $OUT $ERR"
fi
truncate -s 100 "$IDX"
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *"$(basename "$IDX" .idx)"*) true ;; *) false ;; esac; then
	ok "truncated index (100 bytes): fsck exits 1 naming it"
else
	not_ok "truncated index (100 bytes): fsck exits 1 naming it" "exit $RC: $OUT $ERR"
fi
before=$(fast_state "$B")
# the pack is invisible, not the store: a restore that needs none of its
# objects works, one that does fails and changes nothing
_run "$DECREE" -C "$B" checkpoint restore default:A
if [ "$RC" -eq 1 ]; then
	ok "restore with a truncated index: exit 1 (${ERR##*decree: })"
	clean_after "restore with a truncated index" "$B" "$before"
elif [ "$RC" -eq 0 ] && "$DECREE" -C "$B" checkpoint restore default:A --dry-run 2>&1 |
	grep -q 'nothing to restore\|would create 0, restore 0, delete 0'; then
	ok "restore with a truncated index of a pack it does not need: reaches A"
else
	not_ok "restore with a truncated index: exit 1, or 0 reaching A" "exit $RC: $ERR"
fi
_run "$DECREE" -C "$B" checkpoint create --message after-idx
if [ "$RC" -le 1 ] && ! grep -q 'Sanitizer\|runtime error' <<<"$ERR"; then
	ok "create with a truncated index: no crash (exit $RC)"
else
	not_ok "create with a truncated index: no crash" "exit $RC: $ERR"
fi
restore_base

# --- a damaged checkpoint record -------------------------------------------------
REC=$(ls "$ST"/roots/*/checkpoints/* | head -1)
recid=$(basename "$REC")
$PY3 -c 'import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
i = d.find(b"\"session\"")
d[i + 12] ^= 0x01
open(p, "wb").write(d)' "$REC"
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *"$recid"*) true ;; *) false ;; esac; then
	ok "damaged checkpoint record: fsck exits 1 naming it"
else
	not_ok "damaged checkpoint record: fsck exits 1 naming it" "exit $RC: $OUT $ERR"
fi
_run "$DECREE" -C "$B" checkpoint list
if [ "$RC" -le 1 ] && ! grep -q 'Sanitizer\|runtime error' <<<"$ERR"; then
	ok "list with a damaged record: no crash (exit $RC)"
else
	not_ok "list with a damaged record: no crash" "exit $RC: $ERR"
fi
before=$(fast_state "$B")
_run "$DECREE" -C "$B" checkpoint restore "${recid:0:12}"
if [ "$RC" -eq 1 ]; then ok "restore of the damaged record: exit 1 (${ERR##*decree: })"
else not_ok "restore of the damaged record: exit 1" "exit $RC: $ERR"; fi
clean_after "restore of a damaged record" "$B" "$before"
truncate -s 10 "$REC"
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *"$recid"*) true ;; *) false ;; esac; then
	ok "truncated checkpoint record: fsck exits 1 naming it"
else
	not_ok "truncated checkpoint record: fsck exits 1 naming it" "exit $RC: $OUT $ERR"
fi
restore_base

# --- a damaged undo history and stat cache --------------------------------------
"$DECREE" -C "$B" checkpoint restore default:A >/dev/null
OPL=$(ls "$ST"/roots/*/oplog)
$PY3 -c 'import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read()); d[len(d) // 2] ^= 0xFF
open(p, "wb").write(d)' "$OPL"
_run "$DECREE" -C "$B" fsck
if [ "$RC" -eq 1 ] && case "$OUT$ERR" in *oplog*) true ;; *) false ;; esac; then
	ok "damaged undo history: fsck exits 1 naming the oplog"
else
	not_ok "damaged undo history: fsck exits 1 naming the oplog" "exit $RC: $OUT $ERR"
fi
before=$(fast_state "$B")
t_err '*decree: *' "damaged undo history: undo exits 1 with a message" 1 "$DECREE" -C "$B" undo
clean_after "undo with a damaged history" "$B" "$before"
restore_base
"$DECREE" -C "$B" checkpoint create --message sc1 >/dev/null # writes a stat cache
SC=$(ls "$ST"/roots/*/statcache)
$PY3 -c 'import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
for i in range(40, len(d) - 40, 97): d[i] ^= 0x10
open(p, "wb").write(d)' "$SC"
echo 'after the cache' >"$B/src/s3.c"
t "damaged stat cache: checkpoint create still succeeds" "$DECREE" -C "$B" checkpoint create --message sc2
"$DECREE" -C "$B" --json checkpoint show default:sc2 | $PY3 -c 'import json, sys, hashlib, os
root = sys.argv[1]
bad = [f["path"] for f in json.load(sys.stdin)["files"] if f["mode"] in ("644", "755")
       and hashlib.sha256(open(os.path.join(root, f["path"]), "rb").read()).hexdigest() != f["sha256"]]
print(" ".join(bad))' "$B" >"$SCRATCH/sc.bad"
if [ ! -s "$SCRATCH/sc.bad" ] || [ "$(cat "$SCRATCH/sc.bad")" = "" ]; then ok "... and records the true content of every file"
else not_ok "... and records the true content of every file" "wrong: $(cat "$SCRATCH/sc.bad")"; fi
t "damaged stat cache: fsck" "$DECREE" -C "$B" fsck
restore_base

# --- a damaged transaction log ----------------------------------------------------
# Kill the restore right after its log became durable: at the first temp file
# it creates (openat of .decree-tmp-*).  Then damage the log in various ways.
# The log reached its path whole (docs/transactions.md), so a plan that
# cannot be read whole is damage: recovery must keep the log, change
# nothing and say 'decree recover --rollback'; that then rolls back what the
# log still names (here: nothing was renamed yet) and removes every temp.
# Damage after the plan (a torn COMMIT, garbage) is recovered as usual.
FP_PRE=$(fast_state "$B")
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$B" checkpoint restore default:A
FP_A=$(fast_state "$B")
KO=$(calls_in "$SCRATCH/restore.trace" openat 'decree-tmp-' | head -1)
restore_base
torn_case() { # name refused|recovered python-mutation
	restore_base
	kill_at openat "$KO" "$KILLED" -C "$B" checkpoint restore default:A
	local wal
	wal=$(wal_in "$B")
	if [ "$RC" -ne 137 ] || [ -z "$wal" ]; then
		not_ok "$1: killed right after the log write" "exit $RC, log: $wal"
		return
	fi
	$PY3 -c "import sys, struct
p = sys.argv[1]; d = bytearray(open(p, 'rb').read())
$3
open(p, 'wb').write(d)" "$wal"
	local killed
	killed=$(fast_state "$B")
	_run "$DECREE" -C "$B" recover
	if [ "$2" = recovered ]; then
		if [ "$RC" -eq 0 ]; then ok "$1: recover exits 0"; else not_ok "$1: recover exits 0" "exit $RC: $ERR"; fi
	else
		case "$RC:$ERR" in
		1:*"decree: "*txn.wal*damaged*"decree recover --rollback"*)
			ok "$1: recover exits 1 naming the log and 'decree recover --rollback'" ;;
		*) not_ok "$1: recover exits 1 naming the log and 'decree recover --rollback'" "exit $RC: $ERR" ;;
		esac
		if [ -n "$(wal_in "$B")" ] && [ "$(fast_state "$B")" = "$killed" ]; then
			ok "$1: ... keeps the log and changes nothing"
		else
			not_ok "$1: ... keeps the log and changes nothing"
		fi
		t_err '*decree recover --rollback*' "$1: a restore refuses too" 1 \
			"$DECREE" -C "$B" checkpoint restore default:A
		t "$1: recover --rollback" "$DECREE" -C "$B" recover --rollback
	fi
	clean_after "$1" "$B" "$FP_PRE"
	t "$1: fsck" "$DECREE" -C "$B" fsck
	t "$1: the restore can be run again" "$DECREE" -C "$B" checkpoint restore default:A
	if [ "$(fast_state "$B")" = "$FP_A" ]; then ok "$1: ... and reaches A"; else not_ok "$1: ... and reaches A"; fi
}
torn_case "log intact (killed after the log write)" recovered "pass"
torn_case "last record torn (5 bytes cut)" refused "d = d[:-5]"
torn_case "half of the last record cut" refused "off = 40; last = 40
while off + 20 <= len(d):
    L = struct.unpack_from('<I', d, off)[0]; last = off; off += 20 + L
d = d[:last + (off - last) // 2]"
torn_case "only the header left" refused "d = d[:40]"
torn_case "torn header (10 bytes)" refused "d = d[:10]"
torn_case "an empty log" refused "d = d[:0]"
torn_case "garbage appended" recovered "d += b'\x07' * 100"
torn_case "a torn COMMIT after the plan" recovered "d += bytes(13)"
torn_case "last record's checksum damaged" refused "d[-1] ^= 0xFF"
torn_case "first record's payload damaged" refused "d[60] ^= 0x01"
# a log of an unknown version is refused, not deleted
restore_base
kill_at openat "$KO" "$KILLED" -C "$B" checkpoint restore default:A
wal=$(wal_in "$B")
if [ -n "$wal" ]; then
	# a version this decree does not know, with a header that is valid as
	# such (its checksum recomputed): not damage, another format
	$PY3 -c 'import sys, struct, hashlib
p = sys.argv[1]; d = bytearray(open(p, "rb").read()); struct.pack_into("<I", d, 8, 99)
d[32:40] = hashlib.sha256(bytes(d[:32])).digest()[:8]
open(p, "wb").write(d)' "$wal"
	before=$(fast_state "$B")
	t_err '*decree: *version*' "a log of an unknown version: recover exits 1 naming the version" 1 \
		"$DECREE" -C "$B" recover
	if [ -n "$(wal_in "$B")" ] && [ "$(fast_state "$B")" = "$before" ]; then
		ok "... and keeps the log and the tree as they are"
	else
		not_ok "... and keeps the log and the tree as they are"
	fi
else
	not_ok "a log of an unknown version: set up" "no log after the kill"
fi
done_testing
