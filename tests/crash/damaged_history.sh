#!/bin/bash
# damaged_history.sh - a damaged undo history is contained (DESIGN.md,
# "Damage is contained, never spread").
#
# A history of three undo entries and one redo entry is damaged in many
# ways (cut at many lengths, single bytes flipped, a page zeroed, garbage
# appended).  Then, with a timeout on each command:
#   - a restore (which needs no old entry) works: exit 0 and the tree is
#     the checkpoint's; or it fails with exit 1 naming the history file and
#     changes nothing;
#   - checkpoint create works;
#   - undo of that restore brings the tree back;
#   - further undos each either work (the tree is one of the two states) or
#     fail with exit 1 naming the history file and change nothing;
#   - `decree undo --drop-damaged` exits 0, then fsck is clean, and no temp
#     file or log is left.
# DAMAGE_BUDGET (default 12) cuts and flips; DAMAGE_ALL=1: every byte.
. "$DECREE_TOP/tests/crash/lib.sh"
BUDGET=${DAMAGE_BUDGET:-12}
T() { timeout 30 "$DECREE" "$@"; }

make_a() {
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p d
	for i in 1 2 3 4 5; do printf 'a %d\n' "$i" >d/f$i.txt; done
	printf 'only in A\n' >onlya.txt
	cd - >/dev/null
}
to_b() {
	cd "$1" || return 1
	for i in 1 2 3; do printf 'b %d\n' "$i" >d/f$i.txt; done
	rm onlya.txt
	printf 'only in B\n' >onlyb.txt
	cd - >/dev/null
}
setup_slot() {
	local d=$SCRATCH/s$1 w=$SCRATCH/s$1/w
	mkdir -p "$d"
	make_a "$w" || return 1
	T -C "$w" checkpoint create --message A >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$w" >"$SCRATCH/fp_a"
	to_b "$w" || return 1
	T -C "$w" checkpoint create --message B >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$w" >"$SCRATCH/fp_b"
	T -C "$w" checkpoint restore default:A >/dev/null || return 1
	T -C "$w" checkpoint restore default:B >/dev/null || return 1
	T -C "$w" checkpoint restore default:A >/dev/null || return 1
	T -C "$w" checkpoint restore default:B >/dev/null || return 1
	T -C "$w" undo >/dev/null || return 1 # 3 undo entries, 1 redo; tree A
	cp -a "$w" "$d/p"
}
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
FP_A=$(cat "$SCRATCH/fp_a") FP_B=$(cat "$SCRATCH/fp_b")
OPL=$(ls "$SCRATCH"/s0/p/.decree/store/roots/*/oplog)
LEN=$(stat -c %s "$OPL")
[ "$(fast_state "$SCRATCH/s0/p")" = "$FP_A" ] && ok "set up: a history of 3 undo and 1 redo entries ($LEN bytes), tree A" ||
	not_ok "set up: tree A"

{
	if [ "${DAMAGE_ALL:-0}" = 1 ]; then
		for n in $(seq 0 $((LEN - 1))); do echo "cut $n"; echo "flip $n"; done
	else
		for n in 0 1 4 8 12 16 20 24 28 30; do echo "cut $n"; echo "flip $n"; done
		for n in $(pick_points $((LEN - 1)) "$BUDGET"); do echo "cut $n"; echo "flip $n"; done
		echo "flip $((LEN - 1))"
	fi
	echo "zero 0"
	echo "zero $((LEN / 2))"
	echo "junk 0"
} | sort -u | awk '{ print $1 ":" $2, "x", "x" }' >"$SCRATCH/points"


check_point() { # SLOTDIR HOW:N - - IDX
	local d=$1 how=${2%%:*} n=${2#*:} w=$1/w why="" st opl
	local what="history $how $n"
	rm -rf "$w" && cp -a "$d/p" "$w"
	opl=$(ls "$w"/.decree/store/roots/*/oplog)
	damage_bytes "$opl" "$how" "$n"
	# a restore needs no old entry
	_run T -C "$w" checkpoint restore default:B
	st=$(fast_state "$w")
	local restored=no
	if [ "$RC" -eq 0 ]; then
		[ "$st" = "$FP_B" ] && restored=yes || why="$why; restore exited 0 but the tree is not B"
		what="$what: restore works"
	elif [ "$RC" -eq 1 ]; then
		case "$ERR" in *oplog*) ;; *) why="$why; the failed restore does not name the history: $ERR" ;; esac
		[ "$st" = "$FP_A" ] || why="$why; the failed restore changed the tree"
		what="$what: restore refused"
	else
		why="$why; restore exited $RC: $ERR"
	fi
	_run T -C "$w" checkpoint create --message probe
	[ "$RC" -eq 0 ] || why="$why; checkpoint create failed: $ERR"
	if [ $restored = yes ]; then
		_run T -C "$w" undo
		if [ "$RC" -ne 0 ] || [ "$(fast_state "$w")" != "$FP_A" ]; then
			why="$why; undo of the restore failed (exit $RC): $ERR"
		fi
	fi
	local i undone=0 refused=0
	for i in 1 2 3 4; do
		st=$(fast_state "$w")
		_run T -C "$w" undo
		if [ "$RC" -eq 0 ]; then
			undone=$((undone + 1))
			case "$(fast_state "$w")" in "$FP_A" | "$FP_B") ;; *) why="$why; undo $i left the tree in neither state" ;; esac
		elif [ "$RC" -eq 1 ]; then
			[ "$(fast_state "$w")" = "$st" ] || why="$why; a failed undo changed the tree"
			case "$ERR" in
			*"nothing to undo"*) break ;;
			*oplog*) refused=$((refused + 1)) ;;
			*) why="$why; a failed undo does not name the history: $ERR" ;;
			esac
			_run T -C "$w" undo --drop-damaged
			[ "$RC" -eq 0 ] || why="$why; undo --drop-damaged failed (exit $RC): $ERR"
		else
			why="$why; undo exited $RC: $ERR"
			break
		fi
	done
	what="$what, $undone undone, $refused refused"
	_run T -C "$w" undo --drop-damaged
	[ "$RC" -eq 0 ] || why="$why; undo --drop-damaged failed (exit $RC): $ERR"
	_run T -C "$w" fsck
	[ "$RC" -eq 0 ] || why="$why; fsck after --drop-damaged: $OUT $ERR"
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# damage cases tested: $(wc -l <"$SCRATCH/points")"
done_testing
