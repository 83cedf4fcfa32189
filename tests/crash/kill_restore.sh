#!/bin/bash
# kill_restore.sh - SIGKILL a `decree checkpoint restore` at every syscall step
# that matters (sampled where there are many), then recover and check the
# crash-consistency promise of DESIGN.md:
#   - the tree is EXACTLY the pre-restore state or checkpoint X's state
#   - no .decree-tmp-* file and no txn.wal is left; `decree fsck` exits 0
#   - history matches the tree: after a committed restore `decree undo`
#     brings the pre-restore state back; after a rolled-back one there is
#     nothing to undo and the restore can simply be run again.
# Then the same for kills of `decree recover` itself (recovery must be
# idempotent).  The killed process is the non-sanitized build/decree
# (LeakSanitizer cannot run under ptrace); recovery and fsck run $DECREE,
# the follow-up undo/restore (checks of the history) the fast build.
#
# Budget: KILL_BUDGET (default 8) points per syscall kind; every point for
# kinds with fewer invocations.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${KILL_BUDGET:-8}

# --- the tree --------------------------------------------------------------
# X: the checkpoint.  PRE: the working tree before the restore.  Between them
# 200+ paths differ: modified, created, deleted files, a created directory
# tree, a deleted directory tree, mode changes, symlinks (retargeted, created,
# deleted, one pointing to a directory), CRLF, empty, binary files, and
# type changes: a file that became a directory tree, a directory tree that
# became a file, a directory that became a symlink.
make_x() { # dir
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p keep sub/deep olddir/inner swapdir/in ldir
	for i in $(seq 1 40); do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in $(seq 1 10); do printf 'gone %d\n' "$i" >keep/gone$i.txt; done
	for i in $(seq 1 80); do printf 'mod %d\n' "$i" >sub/m$i.txt; done
	for i in $(seq 1 40); do printf 'deep %d\n' "$i" >sub/deep/d$i.txt; done
	for i in $(seq 1 5); do printf 'old %d\n' "$i" >olddir/inner/o$i.txt; done
	printf '#!/bin/sh\necho hi\n' >run.sh && chmod 755 run.sh
	printf 'plain' >flip.sh && chmod 644 flip.sh
	ln -s keep/k1.txt link1
	ln -s nowhere oldlink
	printf 'a\r\nb\r\n' >crlf.txt
	: >empty.txt
	printf 'no newline' >nonl.txt
	printf '\000\001\377\376binary' >bin.dat
	printf 'a file in X\n' >swapfile
	printf 'in a dir in X\n' >swapdir/in/x.txt
	printf 'x\n' >ldir/f.txt
	cd - >/dev/null
}
make_change() { # dir
	cd "$1" || return 1
	for i in $(seq 1 80); do printf 'modified %d\n' "$i" >sub/m$i.txt; done
	rm -r sub/deep olddir
	rm keep/gone*.txt
	mkdir -p newdir/n2
	for i in $(seq 1 60); do printf 'new %d\n' "$i" >newdir/n2/c$i.txt; done
	for i in $(seq 1 10); do printf 'new in sub %d\n' "$i" >sub/new$i.txt; done
	chmod 644 run.sh
	chmod 755 flip.sh
	rm link1 oldlink && ln -s keep/k2.txt link1 && ln -s sub linkdir
	printf 'x\r\ny' >crlf.txt
	rm empty.txt
	printf 'with newline now\n' >nonl.txt
	printf '\377binary2' >bin.dat
	rm swapfile && mkdir -p swapfile/d && printf 'a dir now\n' >swapfile/d/inner.txt
	rm -r swapdir && printf 'a file now\n' >swapdir
	rm -r ldir && ln -s keep ldir
	cd - >/dev/null
}

setup_slot() { # k -> $SCRATCH/s$k/{w,p}
	local d=$SCRATCH/s$1
	mkdir -p "$d"
	make_x "$d/w" || return 1
	"$DECREE" -C "$d/w" checkpoint create --message X >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_x" && tree_state "$d/w" >"$SCRATCH/ts_x"
	make_change "$d/w" || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_pre" && tree_state "$d/w" >"$SCRATCH/ts_pre"
	cp -a "$d/w" "$d/p"
}

for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the tree (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
ok "set up checkpoint X and a working tree differing from it"
FP_X=$(cat "$SCRATCH/fp_x")
FP_PRE=$(cat "$SCRATCH/fp_pre")
if [ "$FP_X" = "$(cat "$SCRATCH/ts_x")" ] && [ "$FP_PRE" = "$(cat "$SCRATCH/ts_pre")" ]; then
	ok "fast fingerprint equals tree_state for both states"
else
	not_ok "fast fingerprint equals tree_state for both states" \
		"$(diff "$SCRATCH/fp_x" "$SCRATCH/ts_x"; diff "$SCRATCH/fp_pre" "$SCRATCH/ts_pre")"
fi
ndiff=$(diff "$SCRATCH/fp_x" "$SCRATCH/fp_pre" | grep -c '^[<>]')
if [ "$ndiff" -ge 200 ]; then ok "the two states differ in $ndiff lines (>= 200)"
else not_ok "the two states differ in >= 200 lines" "only $ndiff"; fi

# --- a clean run, traced, to count the steps -------------------------------
# (on a reset copy, exactly like every kill point: the stat cache makes the
# number of calls depend on inode numbers)
W0=$SCRATCH/s0/w
reset() { rm -rf "$1/w" && cp -a "$1/p" "$1/w"; }
reset "$SCRATCH/s0"
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$W0" checkpoint restore default:X
if [ "$RC" -eq 0 ] && [ "$(fast_state "$W0")" = "$FP_X" ]; then
	ok "an uninterrupted restore (traced) reaches X"
else
	not_ok "an uninterrupted restore (traced) reaches X" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
fi
t "undo of the uninterrupted restore" "$DECREE" -C "$W0" undo
if [ "$(fast_state "$W0")" = "$FP_PRE" ]; then ok "undo brings the pre-restore state back"
else not_ok "undo brings the pre-restore state back"; fi
reset "$SCRATCH/s0"

# --- type changes alone (the big tree has them too; here a failure is plain) -
# X has a file where the working tree has a directory, and the other way round.
for kind in file-to-dir dir-to-file; do
	w=$SCRATCH/swap-$kind
	mkdir -p "$w"
	echo other >"$w/other"
	if [ $kind = file-to-dir ]; then echo 'a file' >"$w/swap"; else mkdir "$w/swap" && echo in >"$w/swap/x.txt"; fi
	"$DECREE" -C "$w" checkpoint create --message X >/dev/null
	want=$(fast_state "$w")
	if [ $kind = file-to-dir ]; then rm "$w/swap" && mkdir "$w/swap" && echo 'dir now' >"$w/swap/inner.txt"
	else rm -r "$w/swap" && echo 'file now' >"$w/swap"; fi
	before=$(fast_state "$w")
	t "restore where X has a ${kind%%-*} and the tree a ${kind##*-} exits 0" \
		"$DECREE" -C "$w" checkpoint restore default:X
	if [ "$(fast_state "$w")" = "$want" ]; then ok "... and reaches X ($kind)"
	else not_ok "... and reaches X ($kind)" "$(diff <(echo "$want") <(fast_state "$w"))"; fi
	t "... and undo works ($kind)" "$DECREE" -C "$w" undo
	if [ "$(fast_state "$w")" = "$before" ]; then ok "... and undo restores the tree ($kind)"
	else not_ok "... and undo restores the tree ($kind)"; fi
done

# --- the kill points ---------------------------------------------------------
# Every kind of call the restore makes that changes the file system (plus
# openat, which creates the temps), from the traced run.
KINDS="renameat rename unlinkat unlink write pwrite64 fsync syncfs fdatasync openat
mkdirat mkdir symlinkat fchmod ftruncate"
: >"$SCRATCH/points"
for sc in $KINDS; do
	m=$(count_calls "$SCRATCH/restore.trace" "$sc")
	[ "$m" -gt 0 ] || continue
	b=$BUDGET
	case $sc in
	fchmod | mkdir) b=3 ;;
	fsync) b=$((BUDGET * 2)) ;; # phase boundaries: all of them
	esac
	for n in $(pick_points "$m" "$b"); do echo "$sc $n $m" >>"$SCRATCH/points"; done
	case $sc in renameat | unlinkat | write | openat) echo "$sc $((m + 1)) $m" >>"$SCRATCH/points" ;; esac
done
npoints=$(wc -l <"$SCRATCH/points")

# check_point SLOTDIR SYSCALL N M IDX -> one result line "PASS|desc" or
# "FAIL|desc|why" on stdout
check_point() {
	local d=$1 sc=$2 n=$3 m=$4 idx=$5 w=$1/w why="" st rc what recover_cmd
	reset "$d"
	kill_at "$sc" "$n" "$KILLED" -C "$w" checkpoint restore default:X
	rc=$RC
	if [ "$n" -gt "$m" ]; then
		[ "$rc" -eq 0 ] || why="$why; run past the last $sc (#$n) exited $rc, wanted 0"
		what="no kill ($sc #$n > $m)"
	else
		[ "$rc" -eq 137 ] || why="$why; not killed at $sc #$n (exit $rc: $(tail -1 "$SCRATCH/.kerr"))"
		what="kill at $sc #$n/$m"
	fi
	local had_wal=no
	[ -n "$(wal_in "$w")" ] && had_wal=yes
	# every 4th point recovers through another mutating command
	if [ $((idx % 4)) -eq 3 ]; then
		recover_cmd="checkpoint create --message probe"
	else
		recover_cmd="recover"
	fi
	"$DECREE" -C "$w" $recover_cmd >"$d/rec.out" 2>&1 ||
		why="$why; 'decree $recover_cmd' failed: $(tail -3 "$d/rec.out")"
	st=$(fast_state "$w")
	local state=other
	[ "$st" = "$FP_PRE" ] && state=pre
	[ "$st" = "$FP_X" ] && state=X
	if [ "$state" = other ]; then
		why="$why; tree is neither the pre-restore state nor X:
$(diff <(echo "$FP_PRE") <(echo "$st") | head -5)
-- vs X:
$(diff <(echo "$FP_X") <(echo "$st") | head -5)"
	fi
	local tmps
	tmps=$(temps_in "$w")
	[ -z "$tmps" ] || why="$why; temp files left: $(echo "$tmps" | head -3)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left after 'decree $recover_cmd'"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	if [ "$state" = X ]; then
		if ! "$KILLED" -C "$w" undo >"$d/undo.out" 2>&1; then
			why="$why; undo after a committed restore failed: $(tail -2 "$d/undo.out")"
		elif [ "$(fast_state "$w")" != "$FP_PRE" ]; then
			why="$why; undo after a committed restore did not bring back the pre-restore state"
		fi
	elif [ "$state" = pre ]; then
		if "$KILLED" -C "$w" undo >"$d/undo.out" 2>&1; then
			why="$why; a rolled-back restore left an undo entry (undo succeeded)"
		fi
		if [ "$(fast_state "$w")" != "$FP_PRE" ]; then
			why="$why; 'decree undo' after a rolled-back restore changed the tree"
		elif ! "$KILLED" -C "$w" checkpoint restore default:X >"$d/again.out" 2>&1; then
			why="$why; restoring again after rollback failed: $(tail -2 "$d/again.out")"
		elif [ "$(fast_state "$w")" != "$FP_X" ]; then
			why="$why; restoring again after rollback did not reach X"
		fi
	fi
	what="$what (log: $had_wal, $recover_cmd -> $state)"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

start=$(date +%s)
run_points "$SCRATCH/points" "$SCRATCH/res"
kills_restore=$npoints

# --- kills of the recovery itself -------------------------------------------
# Interrupt the restore mid-apply (2/3 of its renames done), then kill
# `decree recover` at its own steps; the next `decree recover` must finish
# the job (rollback: the pre-restore state).
MID=$(($(count_calls "$SCRATCH/restore.trace" renameat) * 2 / 3))
make_mid() { # slotdir: $1/mid = a tree whose restore was killed mid-apply
	reset "$1"
	kill_at renameat "$MID" "$KILLED" -C "$1/w" checkpoint restore default:X
	[ "$RC" -eq 137 ] && [ -n "$(wal_in "$1/w")" ] || return 1
	rm -rf "$1/mid" && cp -a "$1/w" "$1/mid"
}
if make_mid "$SCRATCH/s0"; then
	ok "restore killed mid-apply (renameat #$MID) leaves a log to recover"
else
	not_ok "restore killed mid-apply (renameat #$MID) leaves a log to recover" "exit $RC"
fi
trace_log "$SCRATCH/recover.trace" "$KILLED" -C "$W0" recover
if [ "$RC" -eq 0 ] && [ "$(fast_state "$W0")" = "$FP_PRE" ]; then
	ok "recovery from mid-apply rolls back to the pre-restore state"
else
	not_ok "recovery from mid-apply rolls back to the pre-restore state" "exit $RC"
fi
check_recover_kill() { # slotdir sc n m idx
	local d=$1 w=$1/w why="" st
	if [ ! -d "$d/mid" ] && ! make_mid "$d"; then
		echo "FAIL|recover killed at $2 #$3/$4|could not interrupt the restore (exit $RC)"
		return
	fi
	rm -rf "$w" && cp -a "$d/mid" "$w"
	kill_at "$2" "$3" "$KILLED" -C "$w" recover
	[ "$RC" -eq 137 ] || why="$why; recover not killed at $2 #$3 (exit $RC)"
	"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 || why="$why; second recover failed: $(tail -3 "$d/rec.out")"
	st=$(fast_state "$w")
	[ "$st" = "$FP_PRE" ] || why="$why; tree is not the pre-restore state after the second recover:
$(diff <(echo "$FP_PRE") <(echo "$st") | head -6)"
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	if [ -z "$why" ]; then echo "PASS|recover killed at $2 #$3/$4, recovered again"
	else echo "FAIL|recover killed at $2 #$3/$4|${why#; }"; fi
}
: >"$SCRATCH/rpoints"
for sc in renameat unlinkat write openat mkdirat symlinkat fchmod fsync syncfs; do
	m=$(count_calls "$SCRATCH/recover.trace" "$sc")
	[ "$m" -gt 0 ] || continue
	b=$((BUDGET / 4)) # 2, 5 and 3 for the default budget
	case $sc in renameat | unlinkat) b=$((BUDGET * 5 / 8)) ;; write | openat) b=$((BUDGET * 3 / 8)) ;; esac
	[ "$b" -ge 2 ] || b=2
	for n in $(pick_points "$m" $b); do echo "$sc $n $m" >>"$SCRATCH/rpoints"; done
done
check_point() { check_recover_kill "$@"; }
run_points "$SCRATCH/rpoints" "$SCRATCH/rres"
kills_recover=$(wc -l <"$SCRATCH/rpoints")

# --- edits made between the crash and the recovery ------------------------------
# "Nothing is destroyed without being captured first": after a restore was
# killed mid-apply, the user edits a file the restore was rewriting, and
# writes files where the restore was deleting and creating.  The rollback
# may put the old state back, but the user's bytes must stay reachable: in
# the tree or in a checkpoint.
rm -rf "$W0" && cp -a "$SCRATCH/s0/mid" "$W0"
printf 'user edit after the crash\n' >"$W0/sub/m7.txt"
mkdir -p "$W0/newdir/n2" # (deleted by the restore before the kill)
printf 'user file where the restore deleted one\n' >"$W0/newdir/n2/c7.txt"
printf 'user file where the restore created one\n' >"$W0/keep/gone7.txt"
t "recover after user edits of an interrupted restore" "$DECREE" -C "$W0" recover
ids=$("$DECREE" -C "$W0" --json checkpoint list | $PY3 -c 'import json, sys
print("\n".join(c["id"] for c in json.load(sys.stdin)["checkpoints"]))')
for id in $ids; do "$DECREE" -C "$W0" --json checkpoint show "$id"; done >"$SCRATCH/all-manifests"
for f in sub/m7.txt newdir/n2/c7.txt keep/gone7.txt; do
	case $f in
	sub/*) h=$(printf 'user edit after the crash\n' | sha256sum | cut -c1-64) ;;
	newdir/*) h=$(printf 'user file where the restore deleted one\n' | sha256sum | cut -c1-64) ;;
	keep/*) h=$(printf 'user file where the restore created one\n' | sha256sum | cut -c1-64) ;;
	esac
	if [ -f "$W0/$f" ] && [ "$(sha256sum <"$W0/$f" | cut -c1-64)" = "$h" ]; then
		ok "user's post-crash bytes at $f: still in the tree"
	elif grep -q "$h" "$SCRATCH/all-manifests"; then
		ok "user's post-crash bytes at $f: captured in a checkpoint"
	else
		not_ok "user's post-crash bytes at $f are kept or captured by the recovery" \
			"the rollback replaced them and no checkpoint holds them (sha256 $h)"
	fi
done

echo "# kill points tested: $kills_restore in restore, $kills_recover in recover ($(($(date +%s) - start))s)"
done_testing
