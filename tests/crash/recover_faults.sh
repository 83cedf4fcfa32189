#!/bin/bash
# recover_faults.sh - I/O errors inside `decree recover`.
#
# Three interrupted restores (a ~70-path tree): killed half-way through its
# renames (an uncommitted log: recovery rolls back), killed after its
# COMMIT record (recovery finishes the history), and the first one with
# its log cut short (damaged: `decree recover --rollback`).  Recovery of
# each runs once under strace to find its write, fsync, rename, unlink,
# create, mkdir and symlink calls; then each of them (sampled: RECOVER_BUDGET
# per kind, default 6) fails in turn with ENOSPC or EIO.  After each:
#   - exit 0 => the tree is exactly the state recovery promises (before the
#     restore, or after it for the committed one), no log, no temp file;
#   - exit 1 => the log is still there (recovery can be run again);
#   - then recovery without the fault exits 0 with the tree exactly in
#     that state, no temp file, no log, fsck clean, and the history works
#     (the restore can be run, or the committed one undone).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${RECOVER_BUDGET:-6}

restore_slots 30 20 8 10
reset_pristine() { rm -rf "$1/w" && cp -a "$1/p" "$1/w"; }
reset_pristine "$SCRATCH/s0"
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$SCRATCH/s0/w" checkpoint restore default:X
[ "$RC" -eq 0 ] && ok "an uninterrupted restore (traced)" || not_ok "an uninterrupted restore (traced)" "exit $RC"
mid() { awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
K_RENAME=$(calls_in "$SCRATCH/restore.trace" renameat 'decree-tmp-' | mid)
# after COMMIT: the history, written ahead to a temp, is renamed into place
K_COMMIT=$(calls_in "$SCRATCH/restore.trace" renameat 'oplog[.]tmp-' | head -1)

# $d/k-NAME: the tree and store a killed restore left (NAME: rename, commit,
# damaged = rename with the log cut short)
for k in $(seq 0 $((SLOTS - 1))); do
	d=$SCRATCH/s$k
	for kp in "rename renameat $K_RENAME" "commit renameat $K_COMMIT"; do
		set -- $kp
		reset_pristine "$d"
		kill_at "$2" "$3" "$KILLED" -C "$d/w" checkpoint restore default:X
		rm -rf "$d/k-$1" && cp -a "$d/w" "$d/k-$1"
	done
	rm -rf "$d/k-damaged" && cp -a "$d/k-rename" "$d/k-damaged"
	wal=$(wal_in "$d/k-damaged")
	[ -n "$wal" ] && truncate -s -5 "$wal"
done
if [ -n "$(wal_in "$SCRATCH/s0/k-rename")" ] && [ -n "$(wal_in "$SCRATCH/s0/k-commit")" ]; then
	ok "killed restores left their logs (renames, after COMMIT)"
else
	not_ok "killed restores left their logs (renames, after COMMIT)"
fi

rec_cmd() { case $1 in damaged) echo "recover --rollback" ;; *) echo recover ;; esac; }
want_state() { case $1 in commit) echo "$FP_X" ;; *) echo "$FP_PRE" ;; esac; }

: >"$SCRATCH/points"
for kname in rename commit damaged; do
	d=$SCRATCH/s0
	rm -rf "$d/w" && cp -a "$d/k-$kname" "$d/w"
	trace_log "$SCRATCH/rec-$kname.trace" "$KILLED" -C "$d/w" $(rec_cmd $kname)
	if [ "$RC" -ne 0 ] || [ "$(fast_state "$d/w")" != "$(want_state $kname)" ]; then
		not_ok "$kname: recovery without faults (traced)" "exit $RC: $(tail -2 "$SCRATCH/.kerr")"
		continue
	fi
	ok "$kname: recovery without faults (traced)"
	T=$SCRATCH/rec-$kname.trace
	for sc in write fsync syncfs renameat rename unlinkat unlink openat mkdirat symlinkat fchmod; do
		case $sc in
		write) nums=$(calls_in "$T" write '^[0-9]+ +write[(]([03-9]|[0-9][0-9]+),') ;;
		openat) nums=$(calls_in "$T" openat 'O_CREAT') ;;
		*) nums=$(calls_in "$T" "$sc") ;;
		esac
		cnt=$(printf '%s\n' "$nums" | grep -c .)
		[ "$cnt" -gt 0 ] || continue
		case $sc in write | openat | mkdirat | symlinkat) e=ENOSPC ;; *) e=EIO ;; esac
		for i in $(pick_points "$cnt" "$BUDGET"); do
			echo "$kname:$sc:$e $(printf '%s\n' "$nums" | sed -n "${i}p") x" >>"$SCRATCH/points"
		done
	done
done

check_point() { # SLOTDIR KILL:SC:ERRNO N - IDX
	local d=$1 spec=$2 n=$3 w=$1/w why="" kname sc e rc st want
	kname=${spec%%:*} sc=${spec#*:} e=${sc#*:} sc=${sc%%:*}
	local what="$kname, $e at $sc #$n"
	want=$(want_state "$kname")
	rm -rf "$w" && cp -a "$d/k-$kname" "$w"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" $(rec_cmd "$kname")
	rc=$RC
	st=$(fast_state "$w")
	if [ "$rc" -eq 0 ]; then
		what="$what: exit 0"
		[ "$st" = "$want" ] || why="$why; exit 0 but the tree is not the promised state"
		[ -z "$(wal_in "$w")" ] || why="$why; exit 0 but the log is still there"
		[ -z "$(temps_in "$w")" ] || why="$why; exit 0 with temp files left"
	elif [ "$rc" -eq 1 ]; then
		what="$what: exit 1, log kept"
		[ -n "$(wal_in "$w")" ] || why="$why; exit 1 but the log is gone"
	else
		why="$why; exit $rc: $(echo "$ERR" | tail -1)"
	fi
	if ! "$DECREE" -C "$w" $(rec_cmd "$kname") >"$d/rec.out" 2>&1; then
		why="$why; recovery without the fault failed: $(tail -2 "$d/rec.out")"
	fi
	[ "$(fast_state "$w")" = "$want" ] || why="$why; after recovery the tree is not the promised state"
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -2)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -2 "$d/fsck.out")"
	if [ -z "$why" ]; then
		if [ "$kname" = commit ]; then
			"$KILLED" -C "$w" undo >"$d/h.out" 2>&1 && [ "$(fast_state "$w")" = "$FP_PRE" ] ||
				why="$why; undo of the recovered restore failed: $(tail -1 "$d/h.out")"
		else
			"$KILLED" -C "$w" checkpoint restore default:X >"$d/h.out" 2>&1 && [ "$(fast_state "$w")" = "$FP_X" ] ||
				why="$why; the restore fails after recovery: $(tail -1 "$d/h.out")"
		fi
	fi
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# injection points tested: $(wc -l <"$SCRATCH/points")"
done_testing
