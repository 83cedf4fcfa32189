#!/bin/bash
# after_commit.sh - the exit status tells the truth (DESIGN.md, Guarantees).
#
# restore, undo, redo, apply and revert (the pipeline's reverse apply) each
# run once under strace to find the system calls they make after the last
# temp file was renamed over its target: the COMMIT record, then the
# bookkeeping (history, removal of the log, the stat cache, cleanup).  Each
# of those calls then fails in turn (ENOSPC for writes and file creation,
# EIO for fsync, rename, unlink, truncate).  After each:
#   - exit 0 => the tree is exactly in the new state, and stderr has at most
#     one line, a "decree: warning:";
#   - exit 1 => the tree is exactly in the old state (the COMMIT record
#     never became durable: rolled back);
#   - anything else (exit 1 with the tree changed: the lie this script is
#     about) fails;
# then the next command finishes the bookkeeping: the inverse operation
# (undo after restore, apply and revert, redo after undo, undo after redo)
# works and brings the other state back, or, after an exit 1, the same
# operation works; and then no temp file, no txn.wal, fsck clean.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary

make_x() {
	mkdir -p "$1" && cd "$1" || return 1
	"$DECREE" -q init >/dev/null || return 1
	printf 'max_retries: 1\n' >>.decree/config.yml
	cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
printf 'edited by the routine\n' >sub/m1.txt
printf 'made by the routine\n' >made.txt
rm -f keep/k3.txt
EOF
	mkdir -p keep sub gone/inner
	for i in 1 2 3 4; do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in 1 2 3 4 5 6; do printf 'mod %d\n' "$i" >sub/m$i.txt; done
	for i in 1 2 3; do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
	printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
	ln -s keep/k1.txt link
	cd - >/dev/null
}
make_change() {
	cd "$1" || return 1
	for i in 1 2 3 4 5 6; do printf 'changed %d\n' "$i" >sub/m$i.txt; done
	rm -r gone
	mkdir -p fresh/dir
	for i in 1 2 3; do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
	chmod 644 run.sh
	rm link && ln -s keep/k2.txt link
	cd - >/dev/null
}
# $d/restore: tree PRE, checkpoint X exists    ($d/w is where commands run)
# $d/undo:    tree X after the restore
# $d/redo:    tree PRE after the undo (and $d/x.diff: X -> PRE)
# $d/revert:  tree RUN, after a run of the routine edit.sh on X
setup_slot() {
	local d=$SCRATCH/s$1 w=$SCRATCH/s$1/w
	mkdir -p "$d"
	make_x "$w" || return 1
	"$DECREE" -C "$w" checkpoint create --message X >/dev/null || return 1
	[ "$1" = 0 ] && fast_state "$w" >"$SCRATCH/fp_x"
	make_change "$w" || return 1
	[ "$1" = 0 ] && fast_state "$w" >"$SCRATCH/fp_pre"
	cp -a "$w" "$d/restore"
	"$DECREE" -C "$w" checkpoint restore default:X >/dev/null || return 1
	cp -a "$w" "$d/undo"
	(cd "$w" && "$DECREE" run -m edit -p x -v routine=edit) >/dev/null 2>&1 || return 1
	[ "$1" = 0 ] && fast_state "$w" >"$SCRATCH/fp_run"
	cp -a "$w" "$d/revert"
	rm -rf "$w" && cp -a "$d/undo" "$w"
	"$DECREE" -C "$w" undo >/dev/null || return 1
	"$DECREE" -C "$w" checkpoint diff default:X >"$d/x.diff" || return 1
	cp -a "$w" "$d/redo"
}
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
FP_X=$(cat "$SCRATCH/fp_x") FP_PRE=$(cat "$SCRATCH/fp_pre") FP_RUN=$(cat "$SCRATCH/fp_run")
RUN_ID=$(cd "$SCRATCH/s0/revert" && ls .decree/runs | head -1)
[ "$FP_X" != "$FP_PRE" ] && [ "$FP_RUN" != "$FP_X" ] && [ -n "$RUN_ID" ] &&
	ok "set up: checkpoint X, a tree PRE, a run ($RUN_ID)" ||
	not_ok "set up: checkpoint X, a tree PRE, a run" "run: $RUN_ID"

# op_cmd OP SLOTDIR: the command words of OP
op_cmd() {
	case $1 in
	restore) echo "checkpoint restore default:X" ;;
	undo) echo "undo" ;;
	redo) echo "redo" ;;
	apply) echo "apply --reverse $2/x.diff" ;;
	revert) echo "revert $(ls "$2/revert/.decree/runs" | head -1)" ;;
	esac
}
op_before() {
	case $1 in restore | redo | apply) echo "$FP_PRE" ;; undo) echo "$FP_X" ;; revert) echo "$FP_RUN" ;; esac
}
op_after() {
	case $1 in restore | redo | apply | revert) echo "$FP_X" ;; undo) echo "$FP_PRE" ;; esac
}
op_inverse() {
	case $1 in undo) echo redo ;; *) echo undo ;; esac
}
op_prepared() {
	case $1 in apply) echo redo ;; *) echo "$1" ;; esac
}
reset() { rm -rf "$1/w" && cp -a "$1/$(op_prepared "$2")" "$1/w"; }

# The calls of the main process after its last rename of a temp file over
# a target: "syscall invocation-number" (strace's when= unit), without the
# writes of the report to stdout and stderr.
after_last_rename() {
	awk '{ if (pid == "") pid = $1; if ($1 != pid) next
		s = $2; sub(/\(.*/, "", s); n[s]++; sc[NR] = s; num[NR] = n[s]; line[NR] = $0
		if (s ~ /^rename/ && $0 ~ /decree-tmp-/) last = NR }
	END { for (i = last + 1; i <= NR; i++) {
		if (sc[i] == "write" && line[i] ~ /^[0-9]+ +write[(][12],/) continue
		if (sc[i] == "openat" && line[i] !~ /O_CREAT/) continue
		if (sc[i] ~ /^(write|pwrite64|fsync|fdatasync|syncfs|renameat|renameat2|rename|unlinkat|unlink|openat|ftruncate|mkdirat)$/)
			print sc[i], num[i] } }' "$1"
}

: >"$SCRATCH/points"
for op in restore undo redo apply revert; do
	d=$SCRATCH/s0
	reset "$d" "$op"
	trace_log "$SCRATCH/$op.trace" "$KILLED" -C "$d/w" $(op_cmd $op "$d")
	if [ "$RC" -ne 0 ] || [ "$(fast_state "$d/w")" != "$(op_after $op)" ]; then
		not_ok "$op without faults reaches its state (traced)" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
		continue
	fi
	ok "$op without faults reaches its state (traced)"
	after_last_rename "$SCRATCH/$op.trace" >"$SCRATCH/$op.calls"
	while read -r sc n; do
		case $sc in write | pwrite64 | openat) e=ENOSPC ;; *) e=EIO ;; esac
		echo "$op:$sc:$e $n x" >>"$SCRATCH/points"
	done <"$SCRATCH/$op.calls"
	[ -s "$SCRATCH/$op.calls" ] || not_ok "$op: calls after the last rename found" "none in the trace"
done

# check_point SLOTDIR OP:SYSCALL:ERRNO N - IDX
check_point() {
	local d=$1 spec=$2 n=$3 w=$1/w why="" st state=other rc err op sc e
	op=${spec%%:*} sc=${spec#*:} e=${sc#*:} sc=${sc%%:*}
	local what="$op, $e at $sc #$n" before after inv
	before=$(op_before "$op") after=$(op_after "$op") inv=$(op_inverse "$op")
	reset "$d" "$op"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" $(op_cmd "$op" "$d")
	rc=$RC err=$ERR
	st=$(fast_state "$w")
	[ "$st" = "$before" ] && state=before
	[ "$st" = "$after" ] && state=after
	case $rc:$state in
	0:after)
		what="$what: exit 0, done"
		local lines
		lines=$(echo "$err" | grep -c '^decree: ')
		if [ "$lines" -gt 0 ]; then
			case "$(echo "$err" | grep '^decree: ')" in
			"decree: warning: "*) what="$what, warned" ;;
			*) why="$why; exit 0 with an error message: $(echo "$err" | grep '^decree: ')" ;;
			esac
			[ "$lines" -le 1 ] || why="$why; $lines 'decree:' lines: $(echo "$err" | grep '^decree: ' | head -3)"
		fi
		# the next command finishes the bookkeeping: the inverse works
		if ! "$KILLED" -C "$w" $inv >"$d/next.out" 2>&1; then
			why="$why; the next command, '$inv', failed: $(tail -2 "$d/next.out")"
		elif [ "$(fast_state "$w")" != "$before" ]; then
			why="$why; '$inv' did not bring the old state back"
		fi
		;;
	1:before)
		what="$what: exit 1, unchanged"
		if ! "$KILLED" -C "$w" $(op_cmd "$op" "$d") >"$d/next.out" 2>&1; then
			why="$why; '$op' fails again without the fault: $(tail -2 "$d/next.out")"
		elif [ "$(fast_state "$w")" != "$after" ]; then
			why="$why; '$op' without the fault did not reach its state"
		fi
		;;
	*)
		why="$why; exit $rc with the tree $state: $(echo "$err" | grep 'decree:' | tail -2)"
		;;
	esac
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3)"
	local stemps
	stemps=$(find "$w/.decree" -name '*.tmp-*' 2>/dev/null)
	[ -z "$stemps" ] || why="$why; store temp files left: $(echo "$stemps" | head -3)"
	[ -z "$(wal_in "$w")" ] || why="$why; txn.wal left after the next command"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$d/fsck.out")"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}
run_points "$SCRATCH/points" "$SCRATCH/res"
echo "# injection points tested: $(wc -l <"$SCRATCH/points")"
done_testing
