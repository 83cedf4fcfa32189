#!/bin/bash
# kill_projects.sh - SIGKILL `decree projects move OLD NEW` (external
# store) and the automatic re-attachment of a moved in-tree store (the
# first locked command after `mv`), at every rename, unlink, write and
# fsync they make.  After every kill the store holds the project's
# checkpoints either at the old root or at the new one, never both and
# never neither; `decree projects` names the right path; fsck is clean;
# running the move again (or any command in the moved project) finishes
# the job, and list, undo and restore work at the new path with nothing
# left keyed to the old one.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

# A project with two checkpoints and a restore (so an undo entry), then
# moved: OLD is gone, NEW holds the tree.  ext: external store; tree:
# store inside the project.
setup_slot() {
	local d=$SCRATCH/s$1
	mkdir -p "$d/old" "$d/tin/old"
	echo one >"$d/old/f.txt"
	"$KILLED" --store "$d/st" -C "$d/old" checkpoint create -m one >/dev/null || return 1
	echo two >"$d/old/f.txt"
	"$KILLED" --store "$d/st" -C "$d/old" checkpoint create -m two >/dev/null || return 1
	"$KILLED" --store "$d/st" -C "$d/old" checkpoint restore default:one >/dev/null || return 1
	mkdir -p "$d/other" && echo o >"$d/other/g.txt"
	"$KILLED" --store "$d/st" -C "$d/other" checkpoint create >/dev/null || return 1
	mv "$d/old" "$d/new"
	cp -a "$d/st" "$d/st.orig"
	echo one >"$d/tin/old/f.txt"
	"$KILLED" -C "$d/tin/old" checkpoint create -m one >/dev/null || return 1
	echo two >"$d/tin/old/f.txt"
	"$KILLED" -C "$d/tin/old" checkpoint create -m two >/dev/null || return 1
	"$KILLED" -C "$d/tin/old" checkpoint restore default:one >/dev/null || return 1
	mv "$d/tin/old" "$d/tin/new"
	cp -a "$d/tin" "$d/tin.orig"
}
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup$k.log" 2>&1; then
		not_ok "set up (slot $k)" "$(cat "$SCRATCH/setup$k.log")"
		done_testing
		exit 1
	fi
done
ok "set up: a moved project with an external store and one with an in-tree store"

D0=$SCRATCH/s0
trace_log "$SCRATCH/ext.trace" "$KILLED" --store "$D0/st" projects move "$D0/old" "$D0/new"
[ "$RC" -eq 0 ] && ok "an uninterrupted projects move" || not_ok "an uninterrupted projects move" "$(cat "$SCRATCH/.kerr")"
trace_log "$SCRATCH/tree.trace" "$KILLED" -C "$D0/tin/new" checkpoint prune --keep 5
[ "$RC" -eq 0 ] && ok "an uninterrupted re-attachment (prune in the moved tree)" || not_ok "an uninterrupted re-attachment" "$(cat "$SCRATCH/.kerr")"

: >"$SCRATCH/points"
for op in ext tree; do
	for sc in rename renameat renameat2 unlink unlinkat write fsync; do
		m=$(count_calls "$SCRATCH/$op.trace" "$sc")
		[ "$m" -gt 0 ] || continue
		for n in $(seq 1 "$m"); do echo "$op:$sc $n $m" >>"$SCRATCH/points"; done
	done
done

# attached ST ROOT: "yes" when the store has ROOT's records (its key
# directory exists and lists 3 checkpoints for ROOT, one + two + the
# pre-restore one)
attached() {
	local n
	n=$("$DECREE" --store "$1" -C "$2" --json checkpoint list 2>/dev/null |
		$PY3 -c 'import json, sys; print(len(json.load(sys.stdin)["checkpoints"]))' 2>/dev/null)
	[ "$n" = 3 ] && echo yes || echo "no($n)"
}

check_point() {
	local d=$1 op=${2%%:*} sc=${2#*:} n=$3 m=$4 why="" st old new a_old a_new roots
	case $op in
	ext)
		rm -rf "$d/st" && cp -a "$d/st.orig" "$d/st"
		st=$d/st old=$d/old new=$d/new
		kill_at "$sc" "$n" "$KILLED" --store "$st" projects move "$old" "$new"
		;;
	tree)
		rm -rf "$d/tin" && cp -a "$d/tin.orig" "$d/tin"
		st=$d/tin/new/.decree/store old=$d/tin/old new=$d/tin/new
		kill_at "$sc" "$n" "$KILLED" -C "$new" checkpoint prune --keep 5
		;;
	esac
	[ "$RC" -eq 137 ] || why="$why; not killed at $sc #$n (exit $RC)"
	# old or new, never both, never neither
	a_old=$(attached "$st" "$old")
	a_new=no
	[ "$op" = ext ] && a_new=$(attached "$st" "$new")
	roots=$("$DECREE" --store "$st" -C "$new" --json projects 2>&1 |
		$PY3 -c 'import json, sys; print(" ".join(sorted(p["root"] for p in json.load(sys.stdin)["projects"] if p["checkpoint_count"] == 3)))' 2>&1)
	case "$op:$a_old:$a_new:$roots" in
	ext:yes:no*:"$old" | ext:no*:yes:"$new") ;;
	tree:*:*:"$old" | tree:*:*:"$new") ;;
	*) why="$why; after the kill: old attached: $a_old, new attached: $a_new, projects: $roots" ;;
	esac
	"$DECREE" --store "$st" -C "$new" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck after the kill: $(head -3 "$d/fsck.out")"
	# finish: the move again (ext) or any locked command (tree)
	if [ $op = ext ] && [ "${a_old}" = yes ]; then
		"$DECREE" --store "$st" projects move "$old" "$new" >"$d/again.out" 2>&1 ||
			why="$why; moving again failed: $(tail -1 "$d/again.out")"
	fi
	[ "$op" = ext ] || "$DECREE" -C "$new" checkpoint prune --keep 5 >/dev/null 2>"$d/again.out" ||
		why="$why; prune in the moved tree failed: $(tail -1 "$d/again.out")"
	[ "$(attached "$st" "$new")" = yes ] || why="$why; not attached to the new root after finishing"
	"$DECREE" --store "$st" -C "$new" undo >"$d/undo.out" 2>&1 || why="$why; undo at the new root: $(tail -1 "$d/undo.out")"
	[ "$(cat "$new/f.txt")" = two ] || why="$why; undo did not bring back 'two'"
	"$DECREE" --store "$st" -C "$new" checkpoint restore default:one >"$d/restore.out" 2>&1 ||
		why="$why; restore at the new root: $(tail -1 "$d/restore.out")"
	[ "$(cat "$new/f.txt")" = one ] || why="$why; restore did not bring back 'one'"
	grep -lx "$old" "$st"/roots/*/ROOT >/dev/null 2>&1 && why="$why; a ROOT still names the old path"
	ls "$st"/roots/*/ROOT.next >/dev/null 2>&1 && why="$why; a ROOT.next is left"
	[ -z "$(find "$st/roots" -name '*tmp*')" ] || why="$why; temp files left: $(find "$st/roots" -name '*tmp*' | head -2)"
	"$DECREE" --store "$st" -C "$new" gc >"$d/gc.out" 2>&1 || why="$why; gc: $(tail -1 "$d/gc.out")"
	"$DECREE" --store "$st" -C "$new" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck at the end: $(head -3 "$d/fsck.out")"
	local what="$op killed at $sc #$n/$m"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
start=$(date +%s)
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# kill points tested: $(grep -c '^ext:' "$SCRATCH/points") in projects move," \
	"$(grep -c '^tree:' "$SCRATCH/points") in the re-attachment ($(($(date +%s) - start))s)"
done_testing
