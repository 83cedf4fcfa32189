#!/bin/bash
# damaged_record.sh - one checkpoint record that cannot be read, among
# several, that the record cache does not hold: it blocks only itself.
# list, show, diff, restore, rollback, create, prune and drop work for every
# other checkpoint and warn about it by id; naming it fails with exit 1
# saying it is damaged; fsck names it; prune, drop and fsck --repair remove
# it.  (Record format: docs/format.md "Checkpoint records".)
. "$DECREE_TOP/tests/crash/lib.sh"

# The tree and its checkpoints: A, B, D in session s1, C in s2.  B is
# damaged in every scenario.
B=$SCRATCH/base
mkdir -p "$B/src"
echo one >"$B/src/a.c"
"$DECREE" -C "$B" checkpoint create --session s1 --message A >/dev/null
echo two >"$B/src/a.c"
"$DECREE" -C "$B" checkpoint create --session s1 --message B >/dev/null
echo three >"$B/src/b.c"
"$DECREE" -C "$B" checkpoint create --session s2 --message C >/dev/null
echo four >"$B/src/a.c"
"$DECREE" -C "$B" checkpoint create --session s1 --message D >/dev/null
ST=$B/.decree/store
RECDIR=$(echo "$ST"/roots/*/checkpoints)
# the record of B: the one whose message is B
BID=$(grep -l '"message":"B"' "$RECDIR"/* | xargs basename)
FP_D=$(fast_state "$B")
cp -a "$B" "$SCRATCH/base.orig"
# a store is keyed by the root's path: each scenario starts from a copy of
# the base tree put back at the same path
fresh() { # how: flip | trunc | zero | garbage
	rm -rf "$B" && cp -a "$SCRATCH/base.orig" "$B"
	rm -f "$ST"/roots/*/checkpoints.cache
	local rec=$RECDIR/$BID
	chmod u+w "$rec"
	case $1 in
	flip) # one byte of the message: still JSON, the session readable
		$PY3 -c 'import sys
p = sys.argv[1]; d = bytearray(open(p, "rb").read())
i = d.find(b"\"message\":\"B\"") + 11
d[i] ^= 0x01
open(p, "wb").write(d)' "$rec" ;;
	trunc) truncate -s 7 "$rec" ;;
	zero) head -c "$(stat -c %s "$rec")" /dev/zero >"$rec" ;;
	esac
}
warned() { # name: stderr names B's record
	case "$ERR" in *"$BID"*) ok "$1: warns naming the damaged record" ;;
	*) not_ok "$1: warns naming the damaged record" "stderr: $ERR" ;; esac
}
ids() { $PY3 -c 'import json, sys
print(" ".join(c["message"] for c in json.load(sys.stdin)["checkpoints"]))'; }

for how in flip trunc zero; do
	fresh $how
	_run "$DECREE" -C "$B" --json checkpoint list
	if [ "$RC" -eq 0 ] && [ "$(ids <<<"$OUT")" = "A C D" ]; then
		ok "$how: list shows every other checkpoint"
	else
		not_ok "$how: list shows every other checkpoint" "exit $RC: $OUT $ERR"
	fi
	warned "$how: list"
	# the damaged record was not cached as if it were a checkpoint
	_run "$DECREE" -C "$B" --json checkpoint list
	[ "$(ids <<<"$OUT")" = "A C D" ] && ok "$how: list again (cache written)" ||
		not_ok "$how: list again (cache written)" "$OUT"
	warned "$how: list again"
	t "$how: show of another checkpoint" "$DECREE" -C "$B" checkpoint show s1:A
	t_err "*decree: checkpoint record $BID*damaged*" \
		"$how: show of the damaged one: exit 1 saying it is damaged" 1 \
		"$DECREE" -C "$B" checkpoint show "${BID:0:12}"
	t_exit 1 "$how: show s1:B does not find it" "$DECREE" -C "$B" checkpoint show s1:B
	t "$how: diff of two other checkpoints" "$DECREE" -C "$B" checkpoint diff s1:A s2:C
	t "$how: rollback lists the others" "$DECREE" -C "$B" rollback
	warned "$how: rollback"
	_run "$DECREE" -C "$B" --json fsck
	if [ "$RC" -eq 1 ] && case "$OUT" in *"$BID"*) true ;; *) false ;; esac; then
		ok "$how: fsck exits 1 naming it"
	else
		not_ok "$how: fsck exits 1 naming it" "exit $RC: $OUT $ERR"
	fi
	FP=$(fast_state "$B")
	t_exit 1 "$how: restore of the damaged one: exit 1" \
		"$DECREE" -C "$B" checkpoint restore "$BID"
	[ "$(fast_state "$B")" = "$FP" ] && ok "$how: ... the tree is unchanged" ||
		not_ok "$how: ... the tree is unchanged"
	t "$how: restore of another checkpoint" "$DECREE" -C "$B" checkpoint restore s1:A
	warned "$how: restore"
	[ "$(cat "$B/src/a.c")" = one ] && [ ! -e "$B/src/b.c" ] &&
		ok "$how: ... reaches it" || not_ok "$how: ... reaches it"
	t "$how: undo" "$DECREE" -C "$B" undo
	[ "$(fast_state "$B")" = "$FP_D" ] && ok "$how: ... back to D" ||
		not_ok "$how: ... back to D"
	t "$how: create with a message" "$DECREE" -C "$B" checkpoint create --session s1 --message E
	t "$how: create with the damaged record's message makes a new one" \
		"$DECREE" -C "$B" checkpoint create --session s1 --message B
done

# prune: the damaged record goes with the pruned ones
fresh flip
_run "$DECREE" -C "$B" --json checkpoint prune --session s1 --keep 1
if [ "$RC" -eq 0 ] && [ ! -e "$RECDIR/$BID" ]; then ok "prune --session s1 removes the damaged s1 record"
else not_ok "prune --session s1 removes the damaged s1 record" "exit $RC: $OUT $ERR"; fi
case "$ERR" in *"$BID"*removed*) ok "... and says so" ;; *) not_ok "... and says so" "$ERR" ;; esac
_run "$DECREE" -C "$B" --json checkpoint list
[ "$(ids <<<"$OUT")" = "C D" ] && [ -z "$ERR" ] && ok "... list: C D, no warning" ||
	not_ok "... list: C D, no warning" "$OUT $ERR"
fresh flip
t "prune --session s2 works" "$DECREE" -C "$B" checkpoint prune --session s2 --keep 1
[ -e "$RECDIR/$BID" ] && ok "... and keeps the damaged s1 record" ||
	not_ok "... and keeps the damaged s1 record"
fresh trunc
t "prune (all sessions) with a record whose session cannot be read" \
	"$DECREE" -C "$B" checkpoint prune --keep 5
[ ! -e "$RECDIR/$BID" ] && ok "... removes it" || not_ok "... removes it"

# drop
fresh flip
t "drop --session s2 works" "$DECREE" -C "$B" checkpoint drop --session s2
_run "$DECREE" -C "$B" --json checkpoint list
[ "$(ids <<<"$OUT")" = "A D" ] && ok "... A D remain" || not_ok "... A D remain" "$OUT $ERR"
t "drop --session s1 works" "$DECREE" -C "$B" checkpoint drop --session s1
[ ! -e "$RECDIR/$BID" ] && ok "... and removes the damaged s1 record" ||
	not_ok "... and removes the damaged s1 record"
fresh zero
t "drop --all works" "$DECREE" -C "$B" checkpoint drop --all
[ -z "$(ls -A "$RECDIR")" ] && ok "... and removes every record" ||
	not_ok "... and removes every record" "$(ls "$RECDIR")"

# fsck --repair removes it, and only it
for how in flip trunc zero; do
	fresh $how
	_run "$DECREE" -C "$B" fsck --repair
	if [ "$RC" -eq 0 ] && [ ! -e "$RECDIR/$BID" ] && case "$OUT" in *"$BID"*) true ;; *) false ;; esac; then
		ok "$how: fsck --repair removes the damaged record and names it"
	else
		not_ok "$how: fsck --repair removes the damaged record and names it" "exit $RC: $OUT $ERR"
	fi
	t "$how: ... fsck is clean afterwards" "$DECREE" -C "$B" fsck
	_run "$DECREE" -C "$B" --json checkpoint list
	[ "$(ids <<<"$OUT")" = "A C D" ] && ok "$how: ... the others remain" ||
		not_ok "$how: ... the others remain" "$OUT $ERR"
done

# a record that cannot be read (permissions) is skipped, never removed
if [ "$(id -u)" != 0 ]; then
	fresh none
	chmod 000 "$RECDIR/$BID"
	_run "$DECREE" -C "$B" --json checkpoint list
	[ "$RC" -eq 0 ] && [ "$(ids <<<"$OUT")" = "A C D" ] && ok "unreadable record: list shows the others" ||
		not_ok "unreadable record: list shows the others" "exit $RC: $OUT $ERR"
	warned "unreadable record: list"
	t "unreadable record: prune works" "$DECREE" -C "$B" checkpoint prune --keep 1
	[ -e "$RECDIR/$BID" ] && ok "... and keeps it" || not_ok "... and keeps it"
	chmod 444 "$RECDIR/$BID"
fi
# a FIFO in place of a record never hangs a listing
fresh none
rm -f "$RECDIR/$BID" && mkfifo "$RECDIR/$BID"
_run timeout 20 "$DECREE" -C "$B" --json checkpoint list
[ "$RC" -eq 0 ] && [ "$(ids <<<"$OUT")" = "A C D" ] && ok "a FIFO as a record: list does not hang" ||
	not_ok "a FIFO as a record: list does not hang" "exit $RC: $OUT $ERR"
done_testing
