#!/bin/bash
# concurrency.sh - several decree processes on one store/tree: concurrent
# checkpoint creators (same tree; several trees sharing a store; with a gc
# running), a creator started while a restore holds the lock (waits, then
# sees the restored tree, never a torn one), a lock held by a live process
# with DECREE_LOCK_TIMEOUT_MS=200 (exit 1, message names the owner's pid), and
# a stale lock left by a SIGKILLed decree (taken over, its transaction
# recovered).  The lock holder is a real decree restore paused inside its
# transaction with strace's delay_enter.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

W=$SCRATCH/w
mkdir -p "$W/src" "$W/doc"
for i in $(seq 1 30); do printf 'file %d\n' "$i" >"$W/src/f$i.c"; done
echo readme >"$W/doc/README"

# --- 4 creators at once on the same tree and store -------------------------
for round in 1 2; do
	pids=""
	for i in 1 2 3 4; do
		"$DECREE" -C "$W" checkpoint create --message "r$round-c$i" >"$SCRATCH/c$i.out" 2>&1 &
		pids="$pids $!"
	done
	fails=""
	i=0
	for p in $pids; do
		i=$((i + 1))
		wait "$p" || fails="$fails c$i: $(cat "$SCRATCH/c$i.out")"
	done
	if [ -z "$fails" ]; then ok "round $round: 4 concurrent creators all exit 0"
	else not_ok "round $round: 4 concurrent creators all exit 0" "$fails"; fi
	ids=$(for i in 1 2 3 4; do tail -1 "$SCRATCH/c$i.out"; done | sort -u | grep -c '^[0-9a-f]\{64\}$')
	listed=$("$DECREE" -C "$W" --json checkpoint list |
		$PY3 -c 'import json, sys; r = sys.argv[1]
print(len({c["id"] for c in json.load(sys.stdin)["checkpoints"] if (c.get("message") or "").startswith(r)}))' "r$round-")
	if [ "$ids" -eq 4 ] && [ "$listed" -eq 4 ]; then ok "round $round: 4 distinct ids printed and listed"
	else not_ok "round $round: 4 distinct ids printed and listed" "printed $ids, listed $listed"; fi
	t "round $round: fsck is clean" "$DECREE" -C "$W" fsck
	echo "round $round" >"$W/src/f1.c" # the next round sees a change
done

# --- 4 trees sharing one store, plus a gc, at once ---------------------------
S=$SCRATCH/shared-store
for i in 1 2 3 4; do
	mkdir -p "$SCRATCH/t$i"
	for j in $(seq 1 20); do printf 'tree %d file %d\n' "$i" "$j" >"$SCRATCH/t$i/f$j"; done
	echo common >"$SCRATCH/t$i/common" # the same object from every tree
done
"$DECREE" -C "$SCRATCH/t1" --store "$S" checkpoint create --message seed >/dev/null
pids=""
for i in 1 2 3 4; do
	"$DECREE" -C "$SCRATCH/t$i" --store "$S" checkpoint create --message shared >"$SCRATCH/s$i.out" 2>&1 &
	pids="$pids $!"
done
"$DECREE" -C "$SCRATCH/t1" --store "$S" gc >"$SCRATCH/gc.out" 2>&1 &
pids="$pids $!"
fails=""
for p in $pids; do wait "$p" || fails="$fails $p"; done
if [ -z "$fails" ]; then ok "4 creators on 4 trees sharing a store, and a gc: all exit 0"
else not_ok "4 creators on 4 trees sharing a store, and a gc: all exit 0" \
	"$(cat "$SCRATCH"/s?.out "$SCRATCH/gc.out")"; fi
t "shared store: fsck is clean" "$DECREE" -C "$SCRATCH/t1" --store "$S" fsck
allok=yes
for i in 1 2 3 4; do
	echo changed >"$SCRATCH/t$i/f1"
	"$DECREE" -C "$SCRATCH/t$i" --store "$S" checkpoint restore default:shared >/dev/null 2>&1 || allok=no
	grep -qx "tree $i file 1" "$SCRATCH/t$i/f1" || allok=no
done
if [ $allok = yes ]; then ok "shared store: every tree's checkpoint restores"
else not_ok "shared store: every tree's checkpoint restores"; fi

# --- a restore holding the lock ------------------------------------------------
# X = the tree now; then change it, and restore X paused for 4 s at its first
# rename of a temp over a target (inside the transaction, lock held).
"$DECREE" -C "$W" checkpoint create --message X >/dev/null
"$DECREE" -C "$W" --json checkpoint show default:X | $PY3 -c 'import json, sys
print("\n".join(sorted(f["path"] + " " + f["sha256"] for f in json.load(sys.stdin)["files"])))' >"$SCRATCH/x.files"
FP_X=$(fast_state "$W")
for i in $(seq 1 30); do printf 'changed %d\n' "$i" >"$W/src/f$i.c"; done
echo new >"$W/doc/NEW"
FP_PRE=$(fast_state "$W")
cp -a "$W" "$SCRATCH/w.pre"
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$W" checkpoint restore default:X
K=$(calls_in "$SCRATCH/restore.trace" renameat 'decree-tmp-' | head -1)
rm -rf "$W" && cp -a "$SCRATCH/w.pre" "$W"
wal_wait() { # wait until the restore is inside its transaction (10 s max)
	local i
	for i in $(seq 1 200); do
		[ -n "$(wal_in "$W")" ] && return 0
		sleep 0.05
	done
	return 1
}
(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS exec strace -f -o /dev/null -e trace=renameat \
	-e inject=renameat:delay_enter=4000000:when="$K" \
	"$KILLED" -C "$W" checkpoint restore default:X >"$SCRATCH/holder.out" 2>&1) &
holder=$!
if wal_wait; then
	ok "a restore is paused inside its transaction (renameat #$K), holding the lock"
	owner=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$W/.decree/store/lock")
	if [ -n "$owner" ] && [ -d "/proc/$owner" ] && grep -q decree "/proc/$owner/cmdline" 2>/dev/null; then
		ok "the lock file names the live holder (pid $owner)"
	else
		not_ok "the lock file names the live holder" "lock: $(cat "$W/.decree/store/lock")"
	fi
	# a second command with a short timeout gives up, naming the owner
	startt=$(date +%s%N)
	DECREE_LOCK_TIMEOUT_MS=200 t_err "*decree: *pid ${owner:-?}*" \
		"DECREE_LOCK_TIMEOUT_MS=200: exit 1, the message names the owner pid" 1 \
		"$DECREE" -C "$W" checkpoint create --message timeout
	ms=$((($(date +%s%N) - startt) / 1000000))
	if [ "$ms" -lt 2500 ]; then ok "... and it gave up quickly (${ms} ms)"
	else not_ok "... and it gave up quickly" "${ms} ms"; fi
	# The same tree through another store (an app keeping its checkpoints
	# outside the project, the CLI using .decree/store): "two decree processes
	# on the same store or tree never corrupt it" - it must wait or fail, not
	# snapshot the half-restored tree (or decree's own temp files).
	_run env DECREE_LOCK_TIMEOUT_MS=200 "$DECREE" -C "$W" --store "$SCRATCH/other-store" \
		checkpoint create --message during
	if [ "$RC" -ne 0 ]; then
		ok "a checkpoint through another store during the restore fails (exit $RC: ${ERR##*decree: })"
	else
		"$DECREE" -C "$W" --store "$SCRATCH/other-store" --json checkpoint show default:during |
			$PY3 -c 'import json, sys
print("\n".join(sorted(f["path"] + " " + f["sha256"] for f in json.load(sys.stdin)["files"])))' \
			>"$SCRATCH/during.files"
		echo "$FP_PRE" | awk '$1 == "F" { sub(/^\.\//, "", $2); print $2, $4 }' | sort >"$SCRATCH/pre.files"
		if cmp -s "$SCRATCH/during.files" "$SCRATCH/x.files" ||
			cmp -s "$SCRATCH/during.files" "$SCRATCH/pre.files"; then
			ok "a checkpoint through another store during the restore sees a whole state"
		else
			not_ok "a checkpoint through another store during the restore sees a whole state" \
				"no tree lock: it took the tree mid-transaction: $(grep -c . "$SCRATCH/during.files") files, $(grep -c decree-tmp "$SCRATCH/during.files") of them decree temp files; vs X:
$(diff "$SCRATCH/x.files" "$SCRATCH/during.files" | head -8)"
		fi
	fi
	t_exit 1 "a restore with DECREE_LOCK_TIMEOUT_MS=200 fails too" \
		env DECREE_LOCK_TIMEOUT_MS=200 "$DECREE" -C "$W" checkpoint restore default:X
	if [ -n "$(wal_in "$W")" ] && kill -0 $holder 2>/dev/null; then
		ok "... and the holder's transaction is untouched"
	else
		not_ok "... and the holder's transaction is untouched"
	fi
	# a creator without a short timeout waits for the restore, then runs
	"$DECREE" -C "$W" checkpoint create --message waited >"$SCRATCH/waiter.out" 2>&1 &
	waiter=$!
	wait $holder
	hrc=$?
	wait $waiter
	wrc=$?
	if [ $hrc -eq 0 ]; then ok "the paused restore completes"
	else not_ok "the paused restore completes" "exit $hrc: $(cat "$SCRATCH/holder.out")"; fi
	if [ $wrc -eq 0 ]; then ok "a creator started while the lock was held waited and succeeded"
	else not_ok "a creator started while the lock was held waited and succeeded" "$(cat "$SCRATCH/waiter.out")"; fi
	"$DECREE" -C "$W" --json checkpoint show default:waited | $PY3 -c 'import json, sys
print("\n".join(sorted(f["path"] + " " + f["sha256"] for f in json.load(sys.stdin)["files"])))' >"$SCRATCH/waited.files"
	if cmp -s "$SCRATCH/x.files" "$SCRATCH/waited.files"; then
		ok "... and its checkpoint is the restored tree (not a torn one)"
	else
		not_ok "... and its checkpoint is the restored tree (not a torn one)" \
			"$(diff "$SCRATCH/x.files" "$SCRATCH/waited.files" | head)"
	fi
	if [ "$(fast_state "$W")" = "$FP_X" ]; then ok "the tree is X"; else not_ok "the tree is X"; fi
else
	not_ok "a restore is paused inside its transaction (renameat #$K), holding the lock" \
		"$(cat "$SCRATCH/holder.out")"
	kill $holder 2>/dev/null
	wait $holder
fi
t "fsck after the lock contention" "$DECREE" -C "$W" fsck

# --- a stale lock left by a SIGKILLed decree --------------------------------------
rm -rf "$W" && cp -a "$SCRATCH/w.pre" "$W"
kill_at renameat "$K" "$KILLED" -C "$W" checkpoint restore default:X
if [ "$RC" -eq 137 ] && [ -n "$(wal_in "$W")" ]; then
	ok "a restore SIGKILLed inside its transaction"
else
	not_ok "a restore SIGKILLed inside its transaction" "exit $RC"
fi
dead=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$W/.decree/store/lock")
if [ -n "$dead" ] && [ ! -d "/proc/$dead" ]; then ok "the lock file still names the dead owner (pid $dead)"
else not_ok "the lock file still names the dead owner" "lock: $(cat "$W/.decree/store/lock")"; fi
startt=$(date +%s%N)
DECREE_LOCK_TIMEOUT_MS=200 t "the stale lock is taken over (create, timeout 200 ms)" \
	"$DECREE" -C "$W" checkpoint create --message after-kill
ms=$((($(date +%s%N) - startt) / 1000000))
if [ "$ms" -lt 2500 ]; then ok "... without waiting for the timeout (${ms} ms)"
else not_ok "... without waiting for the timeout" "${ms} ms"; fi
if [ "$(fast_state "$W")" = "$FP_PRE" ] && [ -z "$(wal_in "$W")" ] && [ -z "$(temps_in "$W")" ]; then
	ok "... and the killed restore was rolled back first (no log, no temps)"
else
	not_ok "... and the killed restore was rolled back first (no log, no temps)"
fi
t "fsck after the takeover" "$DECREE" -C "$W" fsck
# a lock file naming a live process that does not hold the lock
printf 'pid %d\nstart 1\nhost %s\n' $$ "$(hostname)" >"$W/.decree/store/lock"
DECREE_LOCK_TIMEOUT_MS=200 t "a lock file naming a live pid that holds no lock is taken over" \
	"$DECREE" -C "$W" checkpoint create --message after-forged
printf 'garbage\n\001\002' >"$W/.decree/store/lock"
DECREE_LOCK_TIMEOUT_MS=200 t "a lock file with garbage in it is taken over" \
	"$DECREE" -C "$W" checkpoint create --message after-garbage

# --- two restores racing ---------------------------------------------------------
echo y >"$W/doc/Y"
"$DECREE" -C "$W" checkpoint create --message Y >/dev/null
FP_Y=$(fast_state "$W")
"$DECREE" -C "$W" checkpoint restore default:X >"$SCRATCH/r1.out" 2>&1 &
p1=$!
"$DECREE" -C "$W" checkpoint restore default:Y >"$SCRATCH/r2.out" 2>&1 &
p2=$!
wait $p1
r1=$?
wait $p2
r2=$?
if [ $r1 -eq 0 ] && [ $r2 -eq 0 ]; then ok "two concurrent restores both succeed (serialized)"
else not_ok "two concurrent restores both succeed (serialized)" "$(cat "$SCRATCH/r1.out" "$SCRATCH/r2.out")"; fi
st=$(fast_state "$W")
if [ "$st" = "$FP_X" ] || [ "$st" = "$FP_Y" ]; then ok "... and the tree is exactly one of the two checkpoints"
else not_ok "... and the tree is exactly one of the two checkpoints"; fi
t "fsck after the race" "$DECREE" -C "$W" fsck

# ===== several processes creating one new store at once =======================
# (no lock exists before the store's directory does: whoever writes the
# marker first made the store, the others must not fail for it)
fails=0
for trial in 1 2 3 4 5 6 7 8 9 10; do
	NS=$SCRATCH/newstore-$trial
	for i in 1 2 3 4 5 6; do
		"$DECREE" --store "$NS" -C "$W" checkpoint create -q >/dev/null 2>>"$SCRATCH/newstore.err" &
	done
	wait
done
fails=$(grep -c . "$SCRATCH/newstore.err" 2>/dev/null || true)
if [ "${fails:-0}" -eq 0 ]; then ok "10 x 6 processes creating a new store at once: none fails"
else not_ok "10 x 6 processes creating a new store at once: none fails" "$(sort "$SCRATCH/newstore.err" | uniq -c)"; fi
t "... a later command there" "$DECREE" --store "$SCRATCH/newstore-1" -C "$W" checkpoint create -q
same_left=$(find "$SCRATCH/newstore-1" -maxdepth 1 -name '.*tmp-*' | wc -l)
if [ "$same_left" -eq 0 ]; then ok "... leaves no temp file in the store (swept under the lock)"
else not_ok "... leaves no temp file in the store" "$(find "$SCRATCH/newstore-1" -maxdepth 1)"; fi
done_testing
