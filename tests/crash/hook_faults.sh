#!/bin/bash
# hook_faults.sh - the agent hooks under injected faults (docs/agents.md:
# "a hook never gets in the agent's way").
#
# Five hook calls, each on a project prepared for it:
#   prompt1   UserPromptSubmit of a session's first turn (checkpoint, new
#             journal)
#   prompt2   UserPromptSubmit of its second turn, the tree changed
#   filetool  PostToolUse of an Edit (one named path, no walk)
#   shellpre  PreToolUse of a Bash command (its start is journaled)
#   shellpost PostToolUse of that Bash command (the walk, objects stored,
#             the stat cache saved)
# Each runs once under strace to list its calls that change the file
# system (write, fsync, fdatasync, rename, unlink, mkdir); then, at sampled
# invocations of each (HOOK_FAULT_BUDGET per kind, 2 in make check;
# HOOK_FAULT_BUDGET=100000 tries every one), a fresh copy of the project
# runs the hook again with ENOSPC (writes, mkdir) or EIO (the others), and
# with SIGKILL.  After each:
#   - an injected error: exit 0 and nothing on stdout (the agent is never
#     failed, and Claude Code would read stdout); a kill: killed;
#   - the working tree is exactly as before (a hook never writes to it);
#   - after 'decree recover': no temp file in the tree or the store, and
#     'decree fsck' finds nothing (no journal line torn, no pack left
#     half-written); a fault before the store's marker was written leaves
#     no file in .decree but the hook log saying so (a kill: and the
#     marker's temp file, which the next call removes);
#   - the same hook call once more, without a fault, does its job: the
#     journal then holds what a clean run gives (the turns and their
#     files, compared with the clean run's 'decree rewind --json').
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${HOOK_FAULT_BUDGET:-2}

# A project, and the hook payloads of one Claude Code session.
make_project() { # dir
	mkdir -p "$1/src" "$1/docs" && (
		cd "$1" || exit 1
		for i in 1 2 3 4 5 6; do printf 'line %d\n' "$i" >src/f$i.c; done
		printf 'alpha\nbeta\n' >docs/edit-me.md
		printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
		ln -s src/f1.c link
	)
}
payload() { # dir event tool tool_id input
	printf '{"hook_event_name":"%s","session_id":"fault-session","cwd":"%s","prompt_id":"turn-%s","prompt":"Do it\\nnow","tool_name":"%s","tool_use_id":"%s","tool_input":%s}' \
		"$2" "$1" "${TURN:-1}" "$3" "$4" "$5"
}
hook() { # binary dir event tool tool_id input: run the hook the agent's way
	local bin=$1 dir=$2
	shift 2
	(cd "$dir" && payload "$dir" "$@" | "$bin" hook claude-code "$1")
}

# setup_<case> DIR: the project just before the case's hook call;
# args_<case> DIR: the call's event, tool, tool id and tool input.
setup_prompt1() { make_project "$1"; }
args_prompt1() { echo UserPromptSubmit - - '{}'; }
setup_prompt2() {
	make_project "$1" && hook "$DECREE" "$1" UserPromptSubmit - - '{}' &&
		printf 'changed\n' >"$1/src/f2.c" && rm "$1/src/f3.c" &&
		printf 'new\n' >"$1/src/new.c"
}
args_prompt2() { echo UserPromptSubmit - - '{}'; }
setup_filetool() {
	make_project "$1" && hook "$DECREE" "$1" UserPromptSubmit - - '{}' &&
		printf 'alpha\nBETA\n' >"$1/docs/edit-me.md"
}
args_filetool() { echo PostToolUse Edit t1 "{\"file_path\":\"$1/docs/edit-me.md\"}"; }
setup_shellpre() { make_project "$1" && hook "$DECREE" "$1" UserPromptSubmit - - '{}'; }
args_shellpre() { echo PreToolUse Bash b1 '{"command":"make"}'; }
setup_shellpost() {
	setup_shellpre "$1" && hook "$DECREE" "$1" PreToolUse Bash b1 '{"command":"make"}' &&
		sleep 0.05 && printf 'built\n' >"$1/src/f4.c" && printf 'out\n' >"$1/out.o" &&
		rm "$1/src/f5.c" && chmod 755 "$1/src/f6.c"
}
args_shellpost() { echo PostToolUse Bash b1 '{"command":"make"}'; }

# The journal as rewind lists it, without times and ids.
turns() {
	"$DECREE" -C "$1" --json rewind 2>/dev/null | $PY3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("no session"); sys.exit(0)
print(json.dumps([(t["turn"], t["message"], t["prompt"], t["files"]) for t in d["turns"]]))'
}

CASES="prompt1 prompt2 filetool shellpre shellpost"
for c in $CASES; do
	d=$SCRATCH/$c
	mkdir -p "$d"
	TURN=1
	# the starting project (built at the path every run uses: a store is
	# keyed by its root's path), a clean run and what it leaves
	rm -rf "$d/w"
	"setup_$c" "$d/w" >/dev/null 2>&1 || { not_ok "$c: setup"; continue; }
	cp -a "$d/w" "$d/t"
	fast_state "$d/w" >"$d/before"
	[ $c = prompt2 ] && TURN=2
	# shellcheck disable=SC2046
	payload "$d/w" $("args_$c" "$d/w") >"$d/payload.json"
	ev=$(sed 's/^{"hook_event_name":"\([A-Za-z]*\)".*/\1/' "$d/payload.json")
	cmd="cd '$d/w' && exec '$KILLED' hook claude-code '$ev' <'$d/payload.json'"
	sh -c "$cmd" >"$d/clean.out" 2>&1
	turns "$d/w" >"$d/clean.turns"
	[ ! -s "$d/clean.out" ] && [ ! -s "$d/w/.decree/store/hooks.log" ] &&
		! grep -q 'no session' "$d/clean.turns" &&
		ok "$c: a clean run prints nothing, logs nothing, journals $(cat "$d/clean.turns")" ||
		not_ok "$c: clean run" "$(cat "$d/clean.out" "$d/w/.decree/store/hooks.log" "$d/clean.turns" 2>/dev/null)"
	# the points: every mutating call of the hook process
	rm -rf "$d/w" && cp -a "$d/t" "$d/w"
	trace_log "$d/trace" sh -c "$cmd"
	npoints=0 nfail=0
	for sc in write fsync fdatasync renameat rename unlinkat unlink mkdirat mkdir; do
		m=$(count_calls "$d/trace" "$sc")
		[ "${m:-0}" -gt 0 ] || continue
		err=EIO
		case $sc in write | mkdir | mkdirat) err=ENOSPC ;; esac
		for n in $(pick_points "$m" "$BUDGET"); do
			for fault in "$err" KILL; do
				npoints=$((npoints + 1))
				rm -rf "$d/w" && cp -a "$d/t" "$d/w"
				what="$c: $fault at $sc #$n/$m"
				why=""
				if [ $fault = KILL ]; then
					kill_at "$sc" "$n" sh -c "$cmd"
					[ "$RC" -eq 137 ] || [ "$RC" -eq 0 ] || why="$why; exit $RC, wanted killed (137) or 0"
				else
					fail_at "$sc" "$err" "$n" sh -c "$cmd"
					[ "$RC" -eq 0 ] || why="$why; exit $RC, wanted 0"
				fi
				[ ! -s "$SCRATCH/.kout" ] || why="$why; stdout: $(head -c 200 "$SCRATCH/.kout")"
				fast_state "$d/w" >"$d/now"
				cmp -s "$d/before" "$d/now" || why="$why; the tree changed: $(diff "$d/before" "$d/now" | head -5 | tr '\n' ' ')"
				"$DECREE" -C "$d/w" recover >"$d/rec.out" 2>&1 ||
					why="$why; recover failed: $(tail -2 "$d/rec.out")"
				# a fault before the store's marker was written
				# leaves no store: then nothing may be in it
				if [ -f "$d/w/.decree/store/DECREE-STORE" ]; then
					"$DECREE" -C "$d/w" fsck >"$d/fsck.out" 2>&1 ||
						why="$why; fsck: $(tail -3 "$d/fsck.out" | tr '\n' ' ')"
				elif [ -n "$(find "$d/w/.decree" -type f ! -name hooks.log ! -name '.DECREE-STORE.tmp-*' 2>/dev/null)" ]; then
					why="$why; no store marker, but files: $(find "$d/w/.decree" -type f | head -3 | tr '\n' ' ')"
				fi
				# the agent goes on: the same call again does its job
				rm -f "$d/w/.decree/store/hooks.log"
				sh -c "$cmd" >"$d/again.out" 2>&1
				[ ! -s "$d/again.out" ] && [ ! -s "$d/w/.decree/store/hooks.log" ] ||
					why="$why; the call again: $(cat "$d/again.out" "$d/w/.decree/store/hooks.log" 2>/dev/null | head -3 | tr '\n' ' ')"
				t=$(temps_in "$d/w"; find "$d/w/.decree" -name '.*.tmp-*' 2>/dev/null)
				[ -z "$t" ] || why="$why; temp files left: $t"
				[ "$(turns "$d/w")" = "$(cat "$d/clean.turns")" ] ||
					why="$why; journal $(turns "$d/w"), a clean run gives $(cat "$d/clean.turns")"
				if [ -z "$why" ]; then ok "$what"; else
					nfail=$((nfail + 1))
					not_ok "$what" "${why#; }"
				fi
			done
		done
	done
	echo "# $c: $npoints fault points, $nfail failed"
	[ "$npoints" -gt 0 ] || not_ok "$c: no mutating call was traced"
done

done_testing
