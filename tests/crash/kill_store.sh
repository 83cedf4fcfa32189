#!/bin/bash
# kill_store.sh - SIGKILL the store writers that do not touch the working
# tree: `checkpoint create` (pack + index + record, and the repack of small
# packs it triggers past 16 packs) and `gc` (pack rewrite, then deletion of
# the old packs).  After every kill: fsck is clean, every checkpoint listed
# is complete and restorable (its files read back with the right hashes),
# the interrupted checkpoint either exists completely or not at all, and a
# following gc removes the crashed writer's leftovers.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${KILL_BUDGET:-4}

# 16 checkpoints (16 small packs): the 17th create repacks.  Then prune the
# first 10 of them so that a gc has something to free.  (Set up with the
# fast build, in parallel: it is not what is tested here.)
setup_slot() {
	local d=$SCRATCH/s$1 w i
	w=$d/w
	mkdir -p "$w/src"
	for i in $(seq 1 8); do printf 'base %d\n' "$i" >"$w/src/b$i.txt"; done
	for i in $(seq 1 16); do
		printf 'round %d\n' "$i" >"$w/src/r$i.txt"
		printf 'edit %d\n' "$i" >"$w/src/b1.txt"
		"$KILLED" -C "$w" checkpoint create --message "c$i" >/dev/null || return 1
	done
	printf 'round 17\n' >"$w/src/r17.txt"
	cp -a "$w" "$d/create" # before the 17th create (which repacks)
	"$KILLED" -C "$w" checkpoint prune --keep 6 >/dev/null || return 1
	cp -a "$w" "$d/gc" # before a gc with garbage to free
	rm -rf "$w"
}
for k in $(seq 0 $((SLOTS - 1))); do
	setup_slot "$k" >"$SCRATCH/setup$k.log" 2>&1 &
	eval "setup_pid$k=$!"
done
for k in $(seq 0 $((SLOTS - 1))); do
	if ! eval "wait \$setup_pid$k"; then
		not_ok "set up the stores (slot $k)" "$(cat "$SCRATCH/setup$k.log")"
		done_testing
		exit 1
	fi
done
ok "set up: 16 checkpoints in 16 packs"
npacks=$(ls "$SCRATCH/s0/create/.decree/store/packs/"*.idx | wc -l)
W0=$SCRATCH/s0/w
reset() { rm -rf "$1/w" && cp -a "$1/$2" "$1/w"; }

reset "$SCRATCH/s0" create
trace_log "$SCRATCH/create.trace" "$KILLED" -C "$W0" checkpoint create --message c17
n=$(ls "$W0/.decree/store/packs/"*.idx | wc -l)
if [ "$RC" -eq 0 ] && [ "$n" -lt "$npacks" ]; then ok "the 17th create repacks ($npacks packs -> $n)"
else ok "# SKIP the 17th create did not repack ($npacks packs -> $n; exit $RC)"; fi
reset "$SCRATCH/s0" gc
trace_log "$SCRATCH/gc.trace" "$KILLED" -C "$W0" gc
if [ "$RC" -eq 0 ] && grep -q '^[^0]\|[1-9][0-9]* object' "$SCRATCH/.kout"; then ok "an uninterrupted gc frees objects: $(cat "$SCRATCH/.kout")"
else not_ok "an uninterrupted gc frees objects" "exit $RC: $(cat "$SCRATCH/.kout" "$SCRATCH/.kerr")"; fi

: >"$SCRATCH/points"
for op in create gc; do
	for sc in renameat rename unlinkat unlink write fsync ftruncate; do
		m=$(count_calls "$SCRATCH/$op.trace" "$sc")
		[ "$m" -gt 0 ] || continue
		b=$BUDGET
		case $sc in unlink | unlinkat | renameat) b=$((BUDGET * 2)) ;; esac
		for n in $(pick_points "$m" "$b"); do echo "$op:$sc $n $m" >>"$SCRATCH/points"; done
	done
done

# After the kill: fsck ($DECREE) is clean, so every object that a record
# references is there and intact; the records are all listed; c17 exists
# completely or not at all; a gc (fast build, as the other follow-ups)
# removes what the crashed writer left behind.
check_point() {
	local d=$1 op=${2%%:*} sc=${2#*:} n=$3 m=$4 w=$1/w why="" cmd nrec want
	case $op in
	create) cmd="checkpoint create --message c17" want="16 17" ;;
	gc) cmd="gc" want=6 ;;
	esac
	reset "$d" $op
	kill_at "$sc" "$n" "$KILLED" -C "$w" $cmd
	[ "$RC" -eq 137 ] || why="$why; not killed at $sc #$n (exit $RC)"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck after the kill: $(head -3 "$d/fsck.out")"
	nrec=$("$KILLED" -C "$w" --json checkpoint list 2>"$d/list.err" |
		$PY3 -c 'import json, sys; print(len(json.load(sys.stdin)["checkpoints"]))') ||
		why="$why; list failed: $(cat "$d/list.err")"
	case " $want " in *" $nrec "*) ;; *) why="$why; $nrec checkpoints listed, wanted $want" ;; esac
	if [ $op = create ]; then
		"$KILLED" -C "$w" checkpoint create --message c17 >/dev/null 2>"$d/again.err" ||
			why="$why; creating c17 after the kill failed: $(tail -1 "$d/again.err")"
		"$KILLED" -C "$w" checkpoint restore default:c17 --dry-run >"$d/dry.out" 2>&1 ||
			why="$why; c17 not restorable: $(tail -1 "$d/dry.out")"
		grep -q 'nothing to restore\|would create 0, restore 0, delete 0' "$d/dry.out" ||
			why="$why; c17 differs from the tree it was made of: $(tail -2 "$d/dry.out")"
	fi
	"$KILLED" -C "$w" gc >"$d/gc.out" 2>&1 || why="$why; gc after the kill failed: $(tail -1 "$d/gc.out")"
	local left
	left=$(cd "$w/.decree/store" && {
		find . -name '*tmp*'
		for f in packs/*; do
			case $f in
			*.pack) [ -e "${f%.pack}.idx" ] || echo "$f" ;;
			*.idx) [ -e "${f%.idx}.pack" ] || echo "$f" ;;
			packs/sealed) ;; # docs/format.md "Trusting stored objects"
			*) echo "$f" ;;
			esac
		done
	})
	[ -z "$left" ] || why="$why; leftovers after gc: $(echo "$left" | head -3)"
	"$KILLED" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck after gc: $(head -3 "$d/fsck.out")"
	local what="$op killed at $sc #$n/$m"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
start=$(date +%s)
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# kill points tested: $(grep -c '^create:' "$SCRATCH/points") in checkpoint create," \
	"$(grep -c '^gc:' "$SCRATCH/points") in gc ($(($(date +%s) - start))s)"
done_testing
