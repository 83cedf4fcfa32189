#!/bin/bash
# hook_run.sh - what `decree hook AGENT EVENT` does with a payload
# (docs/agents.md), checked through the journal (`decree rewind --json`)
# and the hook log; the real agents are driven by tests/agents, faults by
# tests/crash/hook_faults.sh.  Covered here: a locked store and a store
# that cannot be opened (exit 0, nothing on stdout, a log line, the
# session goes on), Codex's apply_patch file names, paths outside the
# project, read-only tools (no store is even opened), Gemini's turns
# without ids, a missed prompt event, a hook run from a subdirectory.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export XDG_STATE_HOME=$SCRATCH/state

# hook AGENT EVENT JSON: as an agent runs it, from the current directory
hook() {
	printf '%s' "$3" | "$DECREE" hook "$1" "$2" >"$SCRATCH/.hout" 2>"$SCRATCH/.herr"
	RC=$?
}
quiet() { # NAME: the last hook exited 0 and printed nothing on stdout
	if [ "$RC" -eq 0 ] && [ ! -s "$SCRATCH/.hout" ]; then ok "$1"; else
		not_ok "$1" "exit $RC; stdout: $(head -c 300 "$SCRATCH/.hout")"; fi
}
turns() { # the journal as [(turn, message, files)]
	"$DECREE" --json rewind 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([(t["turn"], t["message"], t["files"]) for t in d["turns"]])'
}
project() { # DIR
	rm -rf "$1" && mkdir -p "$1/sub" && cd "$1" || exit 1
	printf 'alpha\nbeta\n' >a.txt
	printf 'one\n' >sub/b.txt
	printf 'gone\n' >old.txt
}

# --- a locked store: the hook waits its time, gives up, logs; the next goes on
P=$SCRATCH/locked
project "$P"
"$DECREE" -q checkpoint create >/dev/null
pl='"session_id":"s-lock","cwd":"'"$P"'","prompt_id":"p1"'
start=$(date +%s%N)
DECREE_LOCK_TIMEOUT_MS=300 flock .decree/store/lock sh -c \
	"printf '%s' '{$pl,\"prompt\":\"go\"}' | '$DECREE' hook claude-code UserPromptSubmit >'$SCRATCH/.hout' 2>'$SCRATCH/.herr'"
RC=$? ms=$((($(date +%s%N) - start) / 1000000))
quiet "locked store: the prompt hook exits 0, prints nothing"
[ $ms -lt 5000 ] && ok "... within the lock wait (${ms} ms)" || not_ok "... took ${ms} ms"
grep -q "claude-code UserPromptSubmit $P: cannot checkpoint the turn: .*lock" .decree/store/hooks.log &&
	ok "... and says why in <store>/hooks.log" || not_ok "... logged" "$(cat .decree/store/hooks.log 2>&1)"
"$DECREE" --json hook status | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if "lock" in d["last_error"]["message"] else 1)' &&
	ok "... which 'hook status' shows" || not_ok "... status" "$("$DECREE" --json hook status)"
hook claude-code PreToolUse "{$pl,\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$P/new.txt\"}}"
echo new >new.txt
hook claude-code PostToolUse "{$pl,\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$P/new.txt\"}}"
same "the next tool's hook starts the turn the prompt missed" "$(turns)" "[(1, 'p1', ['new.txt'])]"

# --- a store that cannot be opened: the fallback log
P=$SCRATCH/damaged
project "$P"
"$DECREE" -q checkpoint create >/dev/null
echo 'decree-store 99' >.decree/store/DECREE-STORE
hook claude-code UserPromptSubmit '{"session_id":"s-dmg","cwd":"'"$P"'","prompt":"x"}'
quiet "a store of an unknown version: exit 0, nothing printed"
grep -q "claude-code UserPromptSubmit $P: cannot open the store" "$XDG_STATE_HOME/decree/hooks.log" &&
	ok "... logged in \$XDG_STATE_HOME/decree/hooks.log" || not_ok "... fallback log" "$(cat "$XDG_STATE_HOME/decree/hooks.log" 2>&1)"

# --- Codex: apply_patch names its files, relative to the session's cwd
P=$SCRATCH/codex
project "$P"
pl='"session_id":"s-codex","cwd":"'"$P"'","turn_id":"t1"'
hook codex UserPromptSubmit "{$pl,\"prompt\":\"patch it\"}"
quiet "codex prompt"
patch='*** Begin Patch\n*** Add File: sub/c.txt\n+c\n*** Update File: a.txt\n@@\n alpha\n-beta\n+BETA\n*** Delete File: old.txt\n*** Update File: sub/b.txt\n*** Move to: sub/moved.txt\n@@\n-one\n+ONE\n*** End Patch\n'
hook codex PreToolUse "{$pl,\"tool_name\":\"apply_patch\",\"tool_input\":{\"command\":\"$patch\"}}"
echo c >sub/c.txt && printf 'alpha\nBETA\n' >a.txt && rm old.txt && echo ONE >sub/moved.txt && rm sub/b.txt
hook codex PostToolUse "{$pl,\"tool_name\":\"apply_patch\",\"tool_input\":{\"command\":\"$patch\"},\"tool_response\":\"ok\"}"
quiet "codex apply_patch"
same "apply_patch: its added, updated, deleted and moved files, each once" "$(turns)" \
	"[(1, 't1', ['a.txt', 'old.txt', 'sub/b.txt', 'sub/c.txt', 'sub/moved.txt'])]"
"$DECREE" -q rewind 1 --agent-only
same "rewind --agent-only puts them back" "$(cat a.txt old.txt sub/b.txt; ls sub)" "$(printf 'alpha\nbeta\ngone\none\nb.txt')"

# --- paths outside the project, and tools that only read
P=$SCRATCH/outside
project "$P"
pl='"session_id":"s-out","cwd":"'"$P"'","prompt_id":"p1"'
hook claude-code UserPromptSubmit "{$pl,\"prompt\":\"x\"}"
echo elsewhere >"$SCRATCH/elsewhere.txt"
hook claude-code PostToolUse "{$pl,\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$SCRATCH/elsewhere.txt\"}}"
hook claude-code PostToolUse "{$pl,\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$P/../elsewhere.txt\"}}"
hook claude-code PostToolUse "{$pl,\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"$P/.git/config\"}}"
quiet "a file outside the project"
same "... is not the project's: nothing journaled" "$(turns)" "[(1, 'p1', [])]"
P=$SCRATCH/readonly
project "$P"
hook claude-code PostToolUse '{"session_id":"s-ro","cwd":"'"$P"'","tool_name":"Read","tool_input":{"file_path":"'"$P"'/a.txt"}}'
quiet "a tool that only reads"
[ ! -e .decree ] && ok "... opens no store (none is made)" || not_ok "... made $(find .decree | head -3)"

# --- Gemini: no turn ids; turns are numbered
P=$SCRATCH/gemini
project "$P"
pl='"session_id":"s-gem","cwd":"'"$P"'"'
hook gemini BeforeAgent "{$pl,\"prompt\":\"first\"}"
hook gemini BeforeTool "{$pl,\"tool_name\":\"write_file\",\"tool_input\":{\"file_path\":\"$P/g1.txt\"}}"
echo 1 >g1.txt
hook gemini AfterTool "{$pl,\"tool_name\":\"write_file\",\"tool_input\":{\"file_path\":\"$P/g1.txt\"}}"
hook gemini BeforeAgent "{$pl,\"prompt\":\"second\"}"
hook gemini BeforeTool "{$pl,\"tool_name\":\"replace\",\"tool_input\":{\"file_path\":\"a.txt\"}}"
echo changed >a.txt
hook gemini AfterTool "{$pl,\"tool_name\":\"replace\",\"tool_input\":{\"file_path\":\"a.txt\"}}"
quiet "gemini"
same "gemini: turn-1, turn-2, each with its files (a relative path too)" "$(turns)" \
	"[(1, 'turn-1', ['g1.txt']), (2, 'turn-2', ['a.txt'])]"

# --- from a subdirectory of a decree project: the project is the ancestor
P=$SCRATCH/nested
project "$P"
mkdir -p .decree
cd sub || exit 1
pl='"session_id":"s-sub","cwd":"'"$P/sub"'","prompt_id":"p1"'
hook claude-code UserPromptSubmit "{$pl,\"prompt\":\"x\"}"
hook claude-code PreToolUse "{$pl,\"tool_name\":\"Bash\",\"tool_use_id\":\"b1\",\"tool_input\":{\"command\":\"x\"}}"
sleep 0.05
echo made >made.txt && echo top >../top.txt
hook claude-code PostToolUse "{$pl,\"tool_name\":\"Bash\",\"tool_use_id\":\"b1\",\"tool_input\":{\"command\":\"x\"}}"
cd "$P" || exit 1
quiet "a hook run in a subdirectory"
same "... journals paths of the project at the ancestor holding .decree" "$(turns)" "[(1, 'p1', ['sub/made.txt', 'top.txt'])]"
[ ! -e sub/.decree ] && ok "... and makes no store in the subdirectory" || not_ok "... store in sub/"

done_testing
