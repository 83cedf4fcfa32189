#!/bin/bash
# torture.sh - every mutating command under injected faults (issue 9,
# "prove it"): create, restore, apply, revert (pipeline), undo, redo,
# prune, drop, gc, recover and rewind --agent-only (issue 10).
# `make torture` runs it (TORTURE_BUDGET,
# TORTURE_FAULTS, TORTURE_COMMANDS and KILL_SLOTS tune it); it uses the
# helpers of tests/crash/lib.sh.
#
# Each command runs once under strace to list its calls that change the
# file system (writes to files, fsync/fdatasync/syncfs, rename, unlink,
# mkdir).  Then, at sampled invocations of each (TORTURE_BUDGET per kind,
# 2 in make check; every one with `make torture`), a fresh copy of the
# command's starting tree runs it again with one fault: ENOSPC for writes
# and mkdir, EIO for fsync, rename and unlink, or SIGKILL.  After each:
#   exit 0     the tree (and the list of checkpoints) is exactly "after";
#   exit != 0  exactly "before" (a transaction log left behind must have
#              been announced, and `decree recover` then finishes the job);
#   killed     after `decree recover`: "before" or "after";
#   always     no temp file in the tree or the store, no transaction log,
#              `fsck` clean, and when the tree is "after" the command's
#              inverse (undo, or redo for undo) brings "before" back.
# Faults rotate (error, kill, error, ...) over the points in make check;
# TORTURE_FAULTS=all tries both at every point.  When a kind has more
# calls than the budget, the sampled points are random, one in each of
# BUDGET equal slices of its calls, and the rotation starts at random too:
# TORTURE_SEED (printed; default: the time) replays a run, and successive
# `make check` runs cover different points.  A summary line per command
# counts the outcomes (the closing-note table of issue 9).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${TORTURE_BUDGET:-2}
FAULTS=${TORTURE_FAULTS:-rotate}
COMMANDS=${TORTURE_COMMANDS:-create restore apply revert undo redo prune drop gc recover rewind}
SEED=${TORTURE_SEED:-$(($(date +%s) % 1000000))}
echo "# torture: seed $SEED (TORTURE_SEED=$SEED replays this run)"
RANDOM=$SEED

# sample_calls LOG SYSCALL REGEX BUDGET: like pick_calls (lib.sh), but with
# more calls than BUDGET one random call in each of BUDGET equal slices;
# into PICKED (not printed: a subshell would draw other random numbers).
sample_calls() {
	local all k j lo hi
	mapfile -t all < <(calls_in "$1" "$2" "$3")
	k=${#all[@]} PICKED=()
	if [ "$k" -le "$4" ]; then
		PICKED=("${all[@]}")
		return 0
	fi
	for j in $(seq 0 $(($4 - 1))); do
		lo=$((j * k / $4)) hi=$(((j + 1) * k / $4 - 1))
		PICKED+=("${all[$((lo + RANDOM % (hi - lo + 1)))]}")
	done
}

# --- trees ------------------------------------------------------------------
make_x() { # the tree of checkpoint X
	mkdir -p "$1" && (
		cd "$1" || exit 1
		mkdir -p keep sub gone/inner
		for i in 1 2 3; do printf 'keep %d\n' "$i" >keep/k$i.txt; done
		for i in 1 2 3 4 5 6; do printf 'mod %d\n' "$i" >sub/m$i.txt; done
		for i in 1 2 3 4; do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
		printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
		ln -s keep/k1.txt link
	)
}
make_change() { # X -> P: modify, delete, create, mode and link changes
	(
		cd "$1" || exit 1
		for i in 1 2 3 4 5 6; do printf 'changed %d\n' "$i" >sub/m$i.txt; done
		rm -r gone
		mkdir -p fresh/dir
		for i in 1 2 3 4 5; do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
		chmod 644 run.sh
		rm link && ln -s keep/k2.txt link
	)
}
D1() { "$DECREE" -C "$W" "$@" >>"$SLOT/setup.log" 2>&1; }

# template_<cmd>: build the starting tree of <cmd> in $W (store inside);
# prints nothing; the command itself is CMD_<cmd> (words, $SLOT expanded
# at run time), its inverse INV_<cmd>.
base() { make_x "$W" && D1 checkpoint create --message X && make_change "$W"; }
template_create() { base; }
CMD_create='checkpoint create --message Y'
template_restore() { base; }
CMD_restore='checkpoint restore default:X'
INV_restore=undo
template_apply() {
	base && "$DECREE" -C "$W" checkpoint diff default:X >"$SLOT/patch" &&
		D1 checkpoint restore default:X
}
CMD_apply='apply $SLOT/patch'
INV_apply=undo
template_revert() {
	make_x "$W" && D1 init && cat >"$W/.decree/routines/chg.sh" <<'EOF' &&
#!/bin/bash
for i in 1 2 3 4 5 6; do printf 'changed %d\n' "$i" >sub/m$i.txt; done
rm -r gone
mkdir -p fresh/dir
for i in 1 2 3 4 5; do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
rm link && ln -s keep/k2.txt link
EOF
		D1 run -m chg -p x -v routine=chg &&
		ls "$W/.decree/runs" | head -1 >"$SLOT/run_id"
}
CMD_revert='revert $(cat $SLOT/run_id)'
INV_revert=undo
template_undo() { base && D1 checkpoint restore default:X; }
CMD_undo=undo
INV_undo=redo
template_redo() { template_undo && D1 undo; }
CMD_redo=redo
INV_redo=undo
template_prune() {
	base && for k in 2 3 4; do
		echo "$k" >>"$W/keep/k3.txt" && D1 checkpoint create --message X$k || return 1
	done
}
CMD_prune='checkpoint prune --keep 1'
template_drop() {
	base && for k in 1 2 3; do
		echo "$k" >>"$W/keep/k3.txt" && D1 checkpoint create --session S --message S$k || return 1
	done
}
CMD_drop='checkpoint drop --session S'
template_gc() { template_drop && D1 checkpoint drop --session S; }
CMD_gc=gc
# rewind: an agent session (decree hook, as Claude Code runs it) changed
# the tree in turn 1; the user edited one of its files since; rewind 1
# --agent-only reverts the agent's other changes and keeps that edit
agent_hook() { # EVENT JSON-MEMBERS
	printf '{"session_id":"torture","cwd":"%s","prompt_id":"t1","prompt":"change it"%s}' "$W" "$2" |
		"$DECREE" -C "$W" hook claude-code "$1" >>"$SLOT/setup.log" 2>&1
}
template_rewind() {
	make_x "$W" && agent_hook UserPromptSubmit "" &&
		agent_hook PreToolUse ',"tool_name":"Bash","tool_use_id":"b1","tool_input":{"command":"x"}' &&
		sleep 0.05 && make_change "$W" &&
		agent_hook PostToolUse ',"tool_name":"Bash","tool_use_id":"b1","tool_input":{"command":"x"}' &&
		printf 'the user was here\n' >>"$W/sub/m1.txt"
}
CMD_rewind='rewind 1 --agent-only'
INV_rewind=undo
# recover: a restore killed in the middle of its renames leaves a log
template_recover() {
	local n
	base || return 1
	trace_log "$SLOT/kill.trace" "$KILLED" -C "$W" checkpoint restore default:X
	[ "$RC" -eq 0 ] || return 1
	"$DECREE" -C "$W" undo >/dev/null 2>&1 || return 1
	n=$(calls_in "$SLOT/kill.trace" renameat 'decree-tmp' | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	[ -n "$n" ] || return 1
	kill_at renameat "$n" "$KILLED" -C "$W" checkpoint restore default:X
	[ -n "$(wal_in "$W")" ]
}
CMD_recover=recover

# --- state --------------------------------------------------------------------
# the checkpoints a user named (session:message; ids hold time stamps, and
# safety captures have no message)
ids() { "$DECREE" -C "$1" checkpoint list --json 2>/dev/null | $PY3 -c '
import json, sys
print(" ".join(sorted("%s:%s" % (c["session"], c["message"]) for c in json.load(sys.stdin)["checkpoints"] if c["message"])))'; }
state() { fast_state "$1"; echo "ids: $(ids "$1")"; }

# Per slot and command: t.<cmd> (the starting tree) and the states before
# and after the command.
setup() { # slot cmd
	local cmd=$2
	SLOT=$SCRATCH/s$1 W=$SCRATCH/s$1/w
	mkdir -p "$SLOT" && rm -rf "$W" "$SLOT/t.$cmd"
	"template_$cmd" || return 1
	cp -a "$W" "$SLOT/t.$cmd" || return 1
	state "$W" >"$SLOT/before.$cmd"
	eval "set -- $(eval echo "\$CMD_$cmd")"
	"$DECREE" -C "$W" "$@" >>"$SLOT/setup.log" 2>&1 || return 1
	state "$W" >"$SLOT/after.$cmd"
	[ -z "$(wal_in "$W")" ] || return 1
}
reset() { rm -rf "$1/w" && cp -a "$1/t.$2" "$1/w"; }

fault_of() { # syscall -> errno
	case $1 in
	write | pwrite64 | mkdir | mkdirat) echo ENOSPC ;;
	*) echo EIO ;;
	esac
}

# check_point SLOTDIR CMD:SYSCALL:FAULT N M IDX
check_point() {
	local d=$1 spec=$2 n=$3 m=$4 cmd sc fault w=$1/w why="" what st before after rc err
	cmd=${spec%%:*} spec=${spec#*:} sc=${spec%%:*} fault=${spec#*:}
	what="$cmd: $fault at $sc #$n/$m"
	SLOT=$d W=$w
	reset "$d" "$cmd"
	before=$(cat "$d/before.$cmd") after=$(cat "$d/after.$cmd")
	eval "set -- $(eval echo "\$CMD_$cmd")"
	if [ "$fault" = KILL ]; then
		kill_at "$sc" "$n" "$KILLED" -C "$w" "$@"
		rc=$RC err=$(cat "$SCRATCH/.kerr")
	else
		fail_at "$sc" "$fault" "$n" "$KILLED" -C "$w" "$@"
		rc=$RC err=$ERR
	fi
	if [ "$fault" = KILL ] && [ "$rc" -eq 137 ]; then
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; recover after the kill failed: $(tail -2 "$d/rec.out")"
		what="$what: killed"
	elif [ -n "$(wal_in "$w")" ]; then
		# (a failed recover keeps the log: that is its job)
		[ "$cmd" = recover ] || case "$err" in
		*"decree recover"*) ;;
		*) why="$why; exit $rc left a transaction log without saying to run 'decree recover'" ;;
		esac
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; recover failed: $(tail -2 "$d/rec.out")"
		what="$what: exit $rc, log recovered"
	else
		what="$what: exit $rc"
	fi
	[ "$rc" -eq 0 ] || [ "$rc" -eq 137 ] || case "$err" in
	*"decree: "*) ;;
	*) why="$why; exit $rc without a 'decree:' line" ;;
	esac
	st=$(state "$w")
	if [ "$st" = "$after" ]; then
		what="$what, after"
		# (recover: the harness's own recover may finish what a failed
		# one left; a kill may land after the commit)
		# (gc: nothing a user sees changes, so its exit status cannot
		# lie about it)
		[ "$rc" -eq 0 ] || [ "$rc" -eq 137 ] || [ "$cmd" = recover ] ||
			[ "$before" = "$after" ] ||
			why="$why; exit $rc ($(echo "$err" | grep 'decree:' | tail -1)) but the command happened"
	elif [ "$st" = "$before" ]; then
		what="$what, before"
		[ "$rc" -ne 0 ] || why="$why; exit 0 but nothing happened"
	else
		why="$why; the tree is neither before nor after: $(diff <(echo "$before") <(echo "$st") | head -8 | tr '\n' ' ')"
	fi
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3 | tr '\n' ' ')"
	local stemps
	stemps=$(find "$w/.decree" -name '*tmp*' 2>/dev/null)
	[ -z "$stemps" ] || why="$why; store temp files left: $(echo "$stemps" | head -3 | tr '\n' ' ')"
	[ -z "$(wal_in "$w")" ] || why="$why; a transaction log is left"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 || why="$why; fsck: $(grep -v '^ok' "$d/fsck.out" | head -3 | tr '\n' ' ')"
	local inv
	inv=$(eval echo "\${INV_$cmd:-}")
	if [ -z "$why" ] && [ -n "$inv" ] && [ "$st" = "$after" ] && [ "$before" != "$after" ]; then
		if ! "$DECREE" -C "$w" "$inv" >"$d/inv.out" 2>&1 ||
			[ "$(fast_state "$w")" != "$(echo "$before" | grep -v '^ids: ')" ]; then
			why="$why; $inv after it does not bring the tree back: $(tail -2 "$d/inv.out")"
		fi
	fi
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

WRITE_RE='^[0-9]+ +write[(]([3-9]|[0-9][0-9]+),'
total=0
for cmd in $COMMANDS; do
	ok_setup=yes
	for k in $(seq 0 $((SLOTS - 1))); do
		if ! setup "$k" "$cmd"; then
			not_ok "$cmd: set up its starting tree (slot $k)" "$(tail -5 "$SCRATCH/s$k/setup.log")"
			ok_setup=no
			break
		fi
	done
	[ $ok_setup = yes ] || continue
	# trace it once from its starting tree
	SLOT=$SCRATCH/s0 W=$SCRATCH/s0/w
	reset "$SLOT" "$cmd"
	eval "set -- $(eval echo "\$CMD_$cmd")"
	trace_log "$SCRATCH/$cmd.trace" "$KILLED" -C "$W" "$@"
	T=$SCRATCH/$cmd.trace
	if [ "$RC" -ne 0 ]; then
		not_ok "$cmd: an untouched traced run succeeds" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
		continue
	fi
	: >"$SCRATCH/points.$cmd"
	i=$((RANDOM % 2))
	for sc in write fsync fdatasync syncfs renameat rename unlinkat unlink mkdirat mkdir; do
		re=.
		[ "$sc" = write ] && re=$WRITE_RE
		m=$(count_calls "$T" "$sc")
		sample_calls "$T" "$sc" "$re" "$BUDGET"
		for n in "${PICKED[@]}"; do
			e=$(fault_of "$sc")
			case $FAULTS in
			all) printf '%s:%s:%s %s %s\n%s:%s:KILL %s %s\n' "$cmd" "$sc" "$e" "$n" "$m" "$cmd" "$sc" "$n" "$m" ;;
			*) if [ $((i % 2)) -eq 0 ]; then f=$e; else f=KILL; fi
				printf '%s:%s:%s %s %s\n' "$cmd" "$sc" "$f" "$n" "$m" ;;
			esac
			i=$((i + 1))
		done
	done >>"$SCRATCH/points.$cmd"
	run_points "$SCRATCH/points.$cmd" "$SCRATCH/res.$cmd"
	# the summary line of this command
	np=$(wc -l <"$SCRATCH/points.$cmd")
	total=$((total + np))
	# (a state "after" of gc or recover is also "before": nothing a
	# user sees changes; "log" counts failures that left a log for
	# `decree recover`, announced)
	cat "$SCRATCH"/res."$cmd".* 2>/dev/null | awk -v c="$cmd" -v n="$np" -F'|' '
		{ r = $1; full = $2; w = full; sub(/.*: /, "", w)
		  st = w ~ /after/ ? "after" : (w ~ /before/ ? "before" : "neither")
		  if (w ~ /killed/) {
			kills++
			if (st == "after") ka++; else if (st == "before") kb++
		  } else {
			errs++
			rc = w; sub(/^exit /, "", rc); sub(/,.*/, "", rc)
			if (rc == 0 && st == "after") e0a++
			else if (rc != 0 && st == "before") enb++
			else if (rc != 0 && st == "after") ena++
			if (w ~ /log recovered/) lr++
			if (full ~ /: KILL at /) nr++
		  }
		  if (r == "FAIL") { f++; if ($3 ~ /temp files/) tf++; if ($3 ~ /fsck/) ff++ }
		}
		END { printf "# %s: %d points; errors %d: %d exit 0 after, %d exit!=0 before, %d exit!=0 nothing visible changed, %d left a log (announced)%s; kills %d: recovered to %d before, %d after; %d failed a check (%d temp files, %d fsck)\n",
			c, n, errs, e0a, enb, ena, lr, nr ? sprintf(", %d kills not reached", nr) : "",
			kills, kb, ka, f, tf, ff }'
done
echo "# torture: $total fault points in all (budget $BUDGET per syscall kind, faults: $FAULTS, seed $SEED)"
done_testing
