#!/bin/bash
# damaged_log.sh - a damaged transaction log never tears the tree.
#
# A restore of ~600 paths is killed at three points: half-way through
# staging its temp files, half-way through renaming them over their
# targets, and after its COMMIT record (before the history is written).
# The log it leaves is then damaged in many ways: cut at many lengths,
# single bytes flipped (header, record lengths, payloads, checksums), a
# 4 KiB page zeroed, garbage appended.  `decree recover` must then either
#   - exit 0 with the tree exactly before or exactly after the restore, no
#     temp file and no log left, fsck clean; or
#   - exit 1 naming the log and saying 'decree recover --rollback', keep
#     the log, change nothing, and so must every mutating command; then
#     `decree recover --rollback` exits 0, leaves no temp file and no log,
#     fsck is clean, and every path is in its old or its new state.
# Never exit 0 with a torn tree.  DAMAGE_BUDGET (default 8) cuts and
# flips per kill point (plus fixed ones in the header and first record);
# DAMAGE_ALL=1 tries every byte.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${DAMAGE_BUDGET:-8}

restore_slots 250 150 40 60

W0=$SCRATCH/s0/w
reset_pristine() { rm -rf "$1/w" && cp -a "$1/p" "$1/w"; }
reset_pristine "$SCRATCH/s0"
trace_log "$SCRATCH/restore.trace" "$KILLED" -C "$W0" checkpoint restore default:X
if [ "$RC" -eq 0 ] && [ "$(fast_state "$W0")" = "$FP_X" ]; then
	ok "an uninterrupted restore (traced) reaches X"
else
	not_ok "an uninterrupted restore (traced) reaches X" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
fi
mid() { awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
K_STAGE=$(calls_in "$SCRATCH/restore.trace" openat 'decree-tmp-.*O_CREAT' | mid)
K_RENAME=$(calls_in "$SCRATCH/restore.trace" renameat 'decree-tmp-' | mid)
# after COMMIT: the history, written ahead to a temp, is renamed into place
K_COMMIT=$(calls_in "$SCRATCH/restore.trace" renameat 'oplog[.]tmp-' | head -1)

# Each kill leaves a state (tree + store with its log) in every slot: $d/k-NAME
kill_state() { # name syscall n
	local k d
	for k in $(seq 0 $((SLOTS - 1))); do
		d=$SCRATCH/s$k
		reset_pristine "$d"
		kill_at "$2" "$3" "$KILLED" -C "$d/w" checkpoint restore default:X
		[ "$RC" -eq 137 ] && [ -n "$(wal_in "$d/w")" ] || return 1
		rm -rf "$d/k-$1" && cp -a "$d/w" "$d/k-$1"
	done
}
KILLS=""
for kp in "stage openat $K_STAGE" "rename renameat $K_RENAME" "commit renameat $K_COMMIT"; do
	set -- $kp
	if [ -n "${3:-}" ] && kill_state "$1" "$2" "$3"; then
		ok "killed the restore at $1 ($2 #$3), a log is left"
		KILLS="$KILLS $1"
	else
		not_ok "killed the restore at $1 ($2 #${3:-?}), a log is left" "exit $RC"
	fi
done
LOGLEN=$(stat -c %s "$(wal_in "$SCRATCH/s0/k-rename")")

# Damage cases: "cut N", "flip N", "zero N" (a 4 KiB page from N), "junk".
{
	if [ "${DAMAGE_ALL:-0}" = 1 ]; then
		for n in $(seq 0 $((LOGLEN - 1))); do echo "cut $n"; echo "flip $n"; done
	else
		for n in 0 20 39 40 44 60; do echo "cut $n"; echo "flip $n"; done
		for n in $(pick_points $((LOGLEN - 1)) "$BUDGET"); do echo "cut $n"; echo "flip $n"; done
		echo "cut $((LOGLEN - 9))"
		echo "flip $((LOGLEN - 1))"
	fi
	for n in 0 4096 $((LOGLEN / 2)) $((LOGLEN - 100)); do echo "zero $n"; done
	echo "junk 0"
} | sort -u >"$SCRATCH/damages"
: >"$SCRATCH/points"
for kname in $KILLS; do
	while read -r how n; do echo "$kname:$how $n x" >>"$SCRATCH/points"; done <"$SCRATCH/damages"
done


# Every path either as before or as after the restore (per path, not the
# whole tree): the output names the torn ones.
torn_paths() { # state-now
	$PY3 - "$FP_PRE" "$FP_X" "$1" <<'PY'
import sys
def parse(s):
    m = {}
    for line in s.splitlines():
        if not line: continue
        k, rest = line.split(" ", 2)[1], line
        if line.startswith("L "): k = line[2:].split(" -> ")[0]
        else: k = line.split(" ")[1]
        m[k] = line
    return m
pre, x, now = (parse(a) for a in sys.argv[1:4])
for k in sorted(set(pre) | set(x) | set(now)):
    if now.get(k) != pre.get(k) and now.get(k) != x.get(k):
        print(k)
PY
}

check_point() { # SLOTDIR KILL:HOW N - IDX
	local d=$1 spec=$2 n=$3 w=$1/w why="" kname how st state rc err log
	kname=${spec%%:*} how=${spec#*:}
	local what="killed at $kname, log $how $n"
	rm -rf "$w" && cp -a "$d/k-$kname" "$w"
	log=$(wal_in "$w")
	damage_bytes "$log" "$how" "$n"
	local killed_state
	killed_state=$(fast_state "$w")
	_run "$DECREE" -C "$w" recover
	rc=$RC err=$ERR
	st=$(fast_state "$w")
	state=torn
	[ "$st" = "$FP_PRE" ] && state=before
	[ "$st" = "$FP_X" ] && state=after
	if [ "$rc" -eq 0 ]; then
		what="$what: recovered, $state"
		[ "$state" != torn ] || why="$why; recover exited 0 with a torn tree: $(torn_paths "$st" | head -5 | tr '\n' ' ')"
	elif [ "$rc" -eq 1 ]; then
		what="$what: refused"
		case "$err" in *txn.wal*"decree recover --rollback"*) ;;
		*) why="$why; the refusal does not name the log and 'decree recover --rollback': $err" ;; esac
		[ -n "$(wal_in "$w")" ] || why="$why; the log was removed although recover failed"
		[ "$st" = "$killed_state" ] || why="$why; the failed recover changed the tree"
		_run "$DECREE" -C "$w" checkpoint restore default:X
		[ "$RC" -eq 1 ] || why="$why; a restore over the damaged log exited $RC"
		[ "$(fast_state "$w")" = "$killed_state" ] || why="$why; a restore over the damaged log changed the tree"
		_run "$DECREE" -C "$w" recover --rollback
		if [ "$RC" -ne 0 ]; then
			why="$why; recover --rollback exited $RC: $ERR"
		else
			st=$(fast_state "$w")
			local torn
			torn=$(torn_paths "$st")
			[ -z "$torn" ] || why="$why; after recover --rollback, paths in neither state: $(echo "$torn" | head -5 | tr '\n' ' ')"
			[ "$st" = "$FP_PRE" ] && what="$what, rolled back" || what="$what, rolled back what the log names"
		fi
	else
		why="$why; recover exited $rc: $err"
	fi
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | wc -l)"
	[ "$rc" -gt 1 ] || [ -z "$(wal_in "$w")" ] || why="$why; txn.wal left"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# damage cases tested: $(wc -l <"$SCRATCH/points")"
done_testing
