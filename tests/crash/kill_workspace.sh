#!/bin/bash
# kill_workspace.sh - decree workspace create, apply and discard under
# injected faults (DESIGN.md "Workspaces", "Guarantees"): SIGKILL, or
# ENOSPC (write, mkdir, symlink, openat O_CREAT) / EIO (fsync, syncfs,
# rename, unlink), at sampled invocations of every kind of call that
# changes the file system (KILL_BUDGET per kind, default 3; KILL_BUDGET=
# 100000 with WS_FAULTS=all tries an error and a kill at every one: `make
# torture` does).
#
# create: the project is untouched; there is no workspace, or a complete
#   and exact one (the scanned tree, byte-, mode- and link-exact, listed
#   by `workspace list`); a failed create (exit != 0) made none; the next
#   `workspace list` leaves no .tmp-*/.trash-* directory in
#   <store>/workspaces, and the next create makes an exact one; no temp
#   file in the store; fsck clean.
# apply: after `decree recover` the project is exactly before or exactly
#   after the apply (a failed one: before, unless it said otherwise); the
#   workspace is untouched; no temps, no log; fsck clean; "after": undo
#   gives "before" back; "before": the apply then works.
# discard: the workspace is exactly as it was or gone; gone: `decree undo`
#   makes it again exactly; there: discarding it again works and `decree
#   undo` makes it again; no litter left after that; fsck clean.
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
unset DECREE_STORE
BUDGET=${KILL_BUDGET:-3}
[ "$BUDGET" -ge 2 ] 2>/dev/null || BUDGET=2 # pick_points needs 2
FAULTS=${WS_FAULTS:-rotate}
COMMANDS=${WS_COMMANDS:-create apply discard}

# --- the trees -----------------------------------------------------------------
make_tree() { # dir
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p src/deep docs node_modules/x build
	for i in $(seq 1 6); do seq 1 $((i * 7)) >src/f$i.txt; done
	seq 1 30 >src/deep/lines.txt
	printf 'doc\n' >docs/a.md
	printf 'bin\0ary\0' >blob.bin
	printf 'secret\n' >secret && chmod 600 secret
	printf '#!/bin/sh\necho hi\n' >run.sh && chmod 755 run.sh
	: >empty
	ln -s src/deep/lines.txt link
	ln -s missing dangling
	printf 'build/\n' >.gitignore
	echo ignored >node_modules/x/i.js
	echo out >build/o
	cd - >/dev/null
}
# the workspace's changes (apply, discard)
ws_change() { # workspace dir
	(
		cd "$1" || exit 1
		sed -i 's/^5$/five/' src/deep/lines.txt
		echo added >src/new.txt
		mkdir -p fresh/dir && echo fresh >fresh/dir/n.txt
		rm src/f2.txt
		chmod 700 run.sh
		rm link && ln -s docs/a.md link
		printf 'bin\0ws\0' >blob.bin
	)
}
# the project's own changes after the workspace was made (apply merges)
proj_change() { # project dir
	(
		cd "$1" || exit 1
		sed -i 's/^25$/twenty-five/' src/deep/lines.txt
		echo proj >>src/f3.txt
	)
}
# the workspace directory of project $1
wsdir() { echo "$1/.decree/store/workspaces/$2"; }
# what a workspace must hold: the project's scanned tree (ignored files and
# .decree/ left out)
scanned() { fast_state "$1" | grep -v '^F ./build/\|^F ./node_modules/'; }
litter() { # project -> .tmp-*/.trash-* in its workspaces, store temp files
	find "$1/.decree/store/workspaces" -maxdepth 1 \( -name '.tmp-*' -o -name '.trash-*' \) 2>/dev/null
	find "$1/.decree" -name '*.decree-tmp*' -o -name 'tmp-*' 2>/dev/null | grep -v /workspaces/
}
listed() { # project -> the workspace names `workspace list --json` shows
	"$DECREE" -C "$1" --json workspace list 2>/dev/null | $PY3 -c '
import json, sys
print(" ".join(w["name"] for w in json.load(sys.stdin)["workspaces"]))' 2>/dev/null
}

# template_<cmd> W: the starting tree of <cmd> in W (store inside it)
template_create() {
	make_tree "$1" && "$DECREE" -C "$1" checkpoint create --message base
}
template_apply() {
	template_create "$1" && "$DECREE" -C "$1" workspace create w &&
		ws_change "$(wsdir "$1" w)" && proj_change "$1"
}
template_discard() {
	template_create "$1" && "$DECREE" -C "$1" workspace create w &&
		ws_change "$(wsdir "$1" w)"
}
CMD_create='workspace create w'
CMD_apply='workspace apply w'
CMD_discard='workspace discard w'

setup() { # slot cmd
	local d=$SCRATCH/s$1 cmd=$2 w=$SCRATCH/s$1/w
	mkdir -p "$d" && rm -rf "$w" "$d/t.$cmd"
	"template_$cmd" "$w" >>"$d/setup.log" 2>&1 || return 1
	cp -a "$w" "$d/t.$cmd" || return 1
	if [ "$1" = 0 ]; then
		scanned "$w" >"$SCRATCH/pre.$cmd"
		[ "$cmd" = create ] || scanned "$(wsdir "$w" w)" >"$SCRATCH/ws.$cmd"
		eval "set -- \$CMD_$cmd"
		"$DECREE" -C "$w" "$@" >>"$d/setup.log" 2>&1 || return 1
		scanned "$w" >"$SCRATCH/post.$cmd"
		rm -rf "$w" && cp -a "$d/t.$cmd" "$w"
	fi
}
reset() { rm -rf "$1/w" && cp -a "$1/t.$2" "$1/w"; }

fault_of() {
	case $1 in
	write | pwrite64 | mkdir | mkdirat | symlinkat | openat) echo ENOSPC ;;
	*) echo EIO ;;
	esac
}

# --- the checks of one point ---------------------------------------------------
check_create() { # d w rc err fault
	local d=$1 w=$2 rc=$3 err=$4 fault=$5 ws st
	ws=$(wsdir "$w" w)
	[ "$(scanned "$w")" = "$PRE" ] || why="$why; the project changed"
	if [ -d "$ws" ]; then
		what="$what, made"
		st=$(scanned "$ws")
		[ "$st" = "$PRE" ] || why="$why; the workspace is there but not exact: $(diff <(echo "$PRE") <(echo "$st") | head -4 | tr '\n' ' ')"
		[ "$fault" = KILL ] || [ "$rc" -eq 0 ] ||
			why="$why; exit $rc ($(echo "$err" | grep 'decree:' | tail -1)) but the workspace was made"
		[ "$(listed "$w")" = w ] || why="$why; workspace list shows '$(listed "$w")', wanted 'w'"
	else
		what="$what, none"
		[ "$rc" -ne 0 ] || why="$why; exit 0 but no workspace"
		[ -z "$(listed "$w")" ] || why="$why; workspace list shows '$(listed "$w")' with no workspace"
	fi
	# the next list, then create, leave nothing behind
	local lit
	lit=$(litter "$w")
	[ -z "$lit" ] || why="$why; left after the next 'workspace list': $(echo "$lit" | sed "s|$w/||" | head -3 | tr '\n' ' ')"
	local next=w2
	[ -d "$ws" ] || next=w
	if ! "$DECREE" -C "$w" workspace create "$next" >"$d/next.out" 2>&1; then
		why="$why; the next 'workspace create $next' failed: $(tail -2 "$d/next.out")"
	elif [ "$(scanned "$(wsdir "$w" "$next")")" != "$PRE" ]; then
		why="$why; the next 'workspace create $next' is not exact"
	fi
	lit=$(litter "$w")
	[ -z "$lit" ] || why="$why; left after the next create: $(echo "$lit" | sed "s|$w/||" | head -3 | tr '\n' ' ')"
}
check_apply() { # d w rc err fault
	local d=$1 w=$2 rc=$3 err=$4 fault=$5 st
	st=$(scanned "$w")
	if [ "$st" = "$POST" ]; then
		what="$what, after"
		[ "$rc" -eq 0 ] || [ "$fault" = KILL ] ||
			case "$err" in
			*"decree undo"* | *"was applied"* | *"committed"*) ;;
			*) why="$why; exit $rc ($(echo "$err" | grep 'decree:' | tail -1)) but the apply happened" ;;
			esac
	elif [ "$st" = "$PRE" ]; then
		what="$what, before"
		[ "$rc" -ne 0 ] || why="$why; exit 0 but nothing happened"
	else
		why="$why; the project is neither before nor after: $(diff <(echo "$PRE") <(echo "$st") | head -6 | tr '\n' ' ')"
	fi
	[ "$(scanned "$(wsdir "$w" w)")" = "$WS" ] || why="$why; the workspace changed"
	[ -z "$(temps_in "$w")" ] || why="$why; temp files left: $(temps_in "$w" | head -3 | tr '\n' ' ')"
	[ -z "$why" ] || return 0
	if [ "$st" = "$POST" ]; then
		if ! "$DECREE" -C "$w" undo >"$d/inv.out" 2>&1 || [ "$(scanned "$w")" != "$PRE" ]; then
			why="$why; undo after the apply does not give 'before' back: $(tail -2 "$d/inv.out")"
		fi
	else
		if ! "$DECREE" -C "$w" workspace apply w >"$d/inv.out" 2>&1 || [ "$(scanned "$w")" != "$POST" ]; then
			why="$why; the apply, run again, does not reach 'after': $(tail -2 "$d/inv.out")"
		fi
	fi
}
check_discard() { # d w rc err fault
	local d=$1 w=$2 rc=$3 err=$4 fault=$5 ws st
	ws=$(wsdir "$w" w)
	[ "$(scanned "$w")" = "$PRE" ] || why="$why; the project changed"
	if [ -d "$ws" ]; then
		what="$what, there"
		st=$(scanned "$ws")
		[ "$st" = "$WS" ] || why="$why; the workspace is there but changed: $(diff <(echo "$WS") <(echo "$st") | head -4 | tr '\n' ' ')"
		[ "$rc" -ne 0 ] || why="$why; exit 0 but the workspace is still there"
		[ -n "$why" ] || "$DECREE" -C "$w" workspace discard w >"$d/inv.out" 2>&1 ||
			why="$why; discarding it again failed: $(tail -2 "$d/inv.out")"
	else
		what="$what, gone"
		[ "$rc" -eq 0 ] || [ "$fault" = KILL ] ||
			why="$why; exit $rc ($(echo "$err" | grep 'decree:' | tail -1)) but the workspace is gone"
	fi
	[ -z "$why" ] || return 0
	if ! "$DECREE" -C "$w" undo >"$d/inv.out" 2>&1; then
		why="$why; undo failed: $(tail -2 "$d/inv.out")"
	elif [ "$(scanned "$ws" 2>/dev/null)" != "$WS" ]; then
		why="$why; undo did not make the workspace again exactly: $(tail -2 "$d/inv.out")"
	fi
	local lit
	lit=$(litter "$w")
	[ -z "$lit" ] || why="$why; left after the undo: $(echo "$lit" | sed "s|$w/||" | head -3 | tr '\n' ' ')"
}

# check_point SLOTDIR CMD:SYSCALL:FAULT N M IDX
check_point() {
	local d=$1 spec=$2 n=$3 m=$4 cmd sc fault w=$1/w why="" what rc err
	cmd=${spec%%:*} spec=${spec#*:} sc=${spec%%:*} fault=${spec#*:}
	what="$cmd: $fault at $sc #$n/$m"
	local PRE POST WS
	PRE=$(cat "$SCRATCH/../pre.$cmd") POST=$(cat "$SCRATCH/../post.$cmd")
	WS=$(cat "$SCRATCH/../ws.$cmd" 2>/dev/null)
	reset "$d" "$cmd"
	eval "set -- \$CMD_$cmd"
	if [ "$fault" = KILL ]; then
		kill_at "$sc" "$n" "$KILLED" -C "$w" "$@"
		rc=$RC err=$(cat "$SCRATCH/.kerr")
		[ "$rc" -eq 137 ] && what="$what: killed" || what="$what: exit $rc (not reached)"
	else
		fail_at "$sc" "$fault" "$n" "$KILLED" -C "$w" "$@"
		rc=$RC err=$ERR
		what="$what: exit $rc"
		[ "$rc" -eq 0 ] || case "$err" in
		*"decree: "*) ;;
		*) why="$why; exit $rc without a 'decree:' line" ;;
		esac
	fi
	# a transaction log: only after a kill, or announced
	if [ -n "$(wal_in "$w")" ]; then
		[ "$rc" -eq 137 ] || case "$err" in
		*"decree recover"*) ;;
		*) why="$why; exit $rc left a transaction log without saying to run 'decree recover'" ;;
		esac
	fi
	if [ "$rc" -eq 137 ] || [ -n "$(wal_in "$w")" ]; then
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; recover failed: $(tail -2 "$d/rec.out")"
	fi
	"check_$cmd" "$d" "$w" "$rc" "$err" "$fault"
	[ -z "$(wal_in "$w")" ] || why="$why; a transaction log is left"
	"$DECREE" -C "$w" fsck >"$d/fsck.out" 2>&1 ||
		why="$why; fsck: $(grep -v '^ok' "$d/fsck.out" | head -3 | tr '\n' ' ')"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

# --- the points -------------------------------------------------------------------
WRITE_RE='^[0-9]+ +write[(]([3-9]|[0-9][0-9]+),'
KINDS="write fsync fdatasync syncfs renameat rename unlinkat unlink mkdirat mkdir symlinkat openat"
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
	# one traced run from the starting tree
	reset "$SCRATCH/s0" "$cmd"
	eval "set -- \$CMD_$cmd"
	T=$SCRATCH/$cmd.trace
	trace_log "$T" "$KILLED" -C "$SCRATCH/s0/w" "$@"
	if [ "$RC" -ne 0 ] || [ "$(scanned "$SCRATCH/s0/w")" != "$(cat "$SCRATCH/post.$cmd")" ]; then
		not_ok "$cmd: an untouched traced run reaches 'after'" "exit $RC: $(tail -3 "$SCRATCH/.kerr")"
		continue
	fi
	ok "$cmd: an untouched traced run reaches 'after'"
	: >"$SCRATCH/points.$cmd"
	i=0
	for sc in $KINDS; do
		re=.
		case $sc in
		write) re=$WRITE_RE ;;
		openat) re=O_CREAT ;;
		esac
		m=$(count_calls "$T" "$sc")
		[ "$m" -gt 0 ] || continue
		for n in $(pick_calls "$T" "$sc" "$re" "$BUDGET"); do
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
	np=$(wc -l <"$SCRATCH/points.$cmd")
	total=$((total + np))
	cat "$SCRATCH"/res."$cmd".* 2>/dev/null | awk -v c="$cmd" -v n="$np" -F'|' '
		{ w = $2; sub(/^[^:]*: /, "", w); split(w, a, ", "); st[a[length(a)]]++
		  if (w ~ /killed/) k++; else e++; if ($1 == "FAIL") f++ }
		END { printf "# %s: %d points (%d kills, %d errors or unreached kills);", c, n, k, e
		      for (s in st) printf " %s %d", s, st[s]; printf "; %d failed\n", f }'
done
echo "# kill_workspace: $total fault points (budget $BUDGET per kind, faults: $FAULTS)"
done_testing
