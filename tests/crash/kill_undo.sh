#!/bin/bash
# kill_undo.sh - SIGKILL `decree undo` and `decree redo` at sampled syscall
# steps, recover, and check: the tree is exactly one of the two states, no
# temp file or txn.wal is left, fsck is clean, and the history still matches
# the tree (the operation that did not happen can be done, the one that
# happened can be reverted).  Also an undo of a restore whose result was
# edited afterwards ("drifted": decree captures a pre-undo checkpoint first).
# The killed process is the non-sanitized build/decree; recover and fsck run
# $DECREE, the follow-up undo/redo the fast build.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${KILL_BUDGET:-4}

# X: the checkpoint; PRE: the tree before the restore (43 paths differ,
# with a file that became a directory and a directory that became a file).
make_x() {
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p keep sub gone/inner wasdir/x
	printf 'was a file\n' >wasfile
	printf 'in wasdir\n' >wasdir/x/y.txt
	for i in $(seq 1 5); do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in $(seq 1 12); do printf 'mod %d\n' "$i" >sub/m$i.txt; done
	for i in $(seq 1 8); do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
	printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
	ln -s keep/k1.txt link
	: >empty
	cd - >/dev/null
}
make_change() {
	cd "$1" || return 1
	for i in $(seq 1 12); do printf 'changed %d\n' "$i" >sub/m$i.txt; done
	rm -r gone
	mkdir -p fresh/dir
	for i in $(seq 1 15); do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
	chmod 644 run.sh
	rm link && ln -s keep/k2.txt link && ln -s sub dirlink
	rm empty
	rm wasfile && mkdir -p wasfile/z && printf 'now a dir\n' >wasfile/z/f.txt
	rm -r wasdir && printf 'now a file\n' >wasdir
	cd - >/dev/null
}
# $SCRATCH/s$k/undo: tree restored to X (undo possible)
# $SCRATCH/s$k/redo: the same after undo (tree PRE, redo possible)
# $SCRATCH/s$k/drift: like undo, plus an edit made after the restore
setup_slot() {
	local d=$SCRATCH/s$1
	mkdir -p "$d"
	make_x "$d/w" || return 1
	"$DECREE" -C "$d/w" checkpoint create --message X >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_x"
	make_change "$d/w" || return 1
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_pre"
	cp -a "$d/w" "$d/pre"
	"$DECREE" -C "$d/w" checkpoint restore default:X >/dev/null || return 1
	cp -a "$d/w" "$d/undo"
	printf 'edited after the restore\n' >"$d/w/sub/m1.txt"
	printf 'new after the restore\n' >"$d/w/keep/late.txt"
	[ "$1" = 0 ] && fast_state "$d/w" >"$SCRATCH/fp_drift"
	cp -a "$d/w" "$d/drift"
	rm -rf "$d/w" && cp -a "$d/undo" "$d/w"
	"$DECREE" -C "$d/w" undo >/dev/null || return 1
	cp -a "$d/w" "$d/redo"
}
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
FP_X=$(cat "$SCRATCH/fp_x") FP_PRE=$(cat "$SCRATCH/fp_pre") FP_DRIFT=$(cat "$SCRATCH/fp_drift")
if [ "$(fast_state "$SCRATCH/s0/redo")" = "$FP_PRE" ] && [ "$(fast_state "$SCRATCH/s0/undo")" = "$FP_X" ]; then
	ok "set up: restore reaches X, undo brings the pre-restore tree back"
else
	not_ok "set up: restore reaches X, undo brings the pre-restore tree back"
fi
[ "$FP_X" != "$FP_PRE" ] && [ "$FP_DRIFT" != "$FP_X" ] || not_ok "the states differ"

W0=$SCRATCH/s0/w
reset() { rm -rf "$1/w" && cp -a "$1/$2" "$1/w"; }

# count the steps of each operation
for op in undo redo; do
	reset "$SCRATCH/s0" $op
	trace_log "$SCRATCH/$op.trace" "$KILLED" -C "$W0" $op
	case $op in undo) want=$FP_PRE ;; redo) want=$FP_X ;; esac
	if [ "$RC" -eq 0 ] && [ "$(fast_state "$W0")" = "$want" ]; then
		ok "uninterrupted $op (traced) reaches its target state"
	else
		not_ok "uninterrupted $op (traced) reaches its target state" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
	fi
done
# A drifted undo reverts the paths the restore touched (the edit of
# sub/m1.txt is overwritten, after being captured) and leaves the file
# created later alone; redo then re-applies the restore.
reset "$SCRATCH/s0" drift
trace_log "$SCRATCH/drift.trace" "$KILLED" -C "$W0" undo
FP_DRIFT_UNDONE=$(fast_state "$W0")
want=$(printf '%s\n%s\n' "$FP_PRE" "$(grep ' ./keep/late.txt ' "$SCRATCH/fp_drift")" | LC_ALL=C sort -t' ' -k2,2)
if [ "$RC" -eq 0 ] && [ "$FP_DRIFT_UNDONE" = "$want" ]; then
	ok "uninterrupted drifted undo (traced): pre-restore tree plus the later new file"
else
	not_ok "uninterrupted drifted undo (traced): pre-restore tree plus the later new file" \
		"exit $RC: $(tail -3 "$SCRATCH/.kerr"); $(diff <(echo "$want") <(echo "$FP_DRIFT_UNDONE"))"
fi
if "$DECREE" -C "$W0" checkpoint list | grep -q pre-undo; then
	ok "a drifted undo captures a pre-undo checkpoint"
else
	not_ok "a drifted undo captures a pre-undo checkpoint" "$("$DECREE" -C "$W0" checkpoint list)"
fi
t "redo after the drifted undo" "$DECREE" -C "$W0" redo
FP_DRIFT_REDONE=$(fast_state "$W0")
want=$(printf '%s\n%s\n' "$FP_X" "$(grep ' ./keep/late.txt ' "$SCRATCH/fp_drift")" | LC_ALL=C sort -t' ' -k2,2)
if [ "$FP_DRIFT_REDONE" = "$want" ]; then ok "... reaches X plus the later new file"
else not_ok "... reaches X plus the later new file" "$(diff <(echo "$want") <(echo "$FP_DRIFT_REDONE"))"; fi

: >"$SCRATCH/points"
for op in undo redo drift; do
	for sc in renameat unlinkat write openat fsync syncfs mkdirat symlinkat fchmod rename unlink; do
		m=$(count_calls "$SCRATCH/$op.trace" "$sc")
		[ "$m" -gt 0 ] || continue
		b=$BUDGET
		case $op:$sc in
		drift:*) b=$((BUDGET / 2)) ;;
		*:renameat | *:unlinkat | *:fsync) b=$((BUDGET + 2)) ;;
		esac
		for n in $(pick_points "$m" "$b"); do echo "$op:$sc $n $m" >>"$SCRATCH/points"; done
	done
done

# check_point SLOTDIR OP:SYSCALL N M IDX
check_point() {
	local d=$1 op=${2%%:*} sc=${2#*:} n=$3 m=$4 w=$1/w why="" st state=other cmd
	local from to redo_to
	case $op in
	undo) cmd=undo from=$FP_X to=$FP_PRE ;;
	drift) cmd=undo from=$FP_DRIFT to=$FP_DRIFT_UNDONE ;;
	redo) cmd=redo from=$FP_PRE to=$FP_X ;;
	esac
	reset "$d" $op
	kill_at "$sc" "$n" "$KILLED" -C "$w" $cmd
	[ "$RC" -eq 137 ] || why="$why; not killed at $sc #$n (exit $RC: $(tail -1 "$SCRATCH/.kerr"))"
	"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 || why="$why; recover failed: $(tail -3 "$d/rec.out")"
	st=$(fast_state "$w")
	[ "$st" = "$from" ] && state=before
	[ "$st" = "$to" ] && state=after
	[ "$state" = other ] && why="$why; the tree is neither the state before nor after the $cmd:
$(diff <(echo "$from") <(echo "$st") | head -5)
-- vs after:
$(diff <(echo "$to") <(echo "$st") | head -5)"
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left after recover"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	# the history must match the tree
	local next next_fp
	case $op:$state in
	undo:before) next=undo next_fp=$FP_PRE ;;
	undo:after) next=redo next_fp=$FP_X ;;
	drift:before) next=undo next_fp=$FP_DRIFT_UNDONE ;;
	drift:after) next=redo next_fp=$FP_DRIFT_REDONE ;;
	redo:before) next=redo next_fp=$FP_X ;;
	redo:after) next=undo next_fp=$FP_PRE ;;
	*) next= ;;
	esac
	if [ -n "$next" ]; then
		if ! "$KILLED" -C "$w" $next >"$d/next.out" 2>&1; then
			why="$why; '$next' after recovery ($state) failed: $(tail -2 "$d/next.out")"
		elif [ "$(fast_state "$w")" != "$next_fp" ]; then
			why="$why; '$next' after recovery ($state) did not reach the expected tree"
		fi
	fi
	if [ $op = drift ] && [ $state = after ] &&
		! "$DECREE" -C "$w" checkpoint list 2>&1 | grep -q pre-undo; then
		why="$why; the committed drifted undo has no pre-undo checkpoint"
	fi
	local what="$op killed at $sc #$n/$m (recover -> $state, then $next)"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
start=$(date +%s)
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# kill points tested: $(grep -c '^undo:' "$SCRATCH/points") in undo," \
	"$(grep -c '^redo:' "$SCRATCH/points") in redo, $(grep -c '^drift:' "$SCRATCH/points") in a drifted undo" \
	"($(($(date +%s) - start))s)"
done_testing
