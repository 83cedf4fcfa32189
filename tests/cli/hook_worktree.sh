#!/bin/bash
# hook_worktree.sh - Claude Code's WorktreeCreate and WorktreeRemove hooks
# answered by decree (docs/agents.md "Worktrees"; issue 12): `claude
# --worktree NAME` in a project without git runs the hook with
# {"name": NAME, "cwd", "session_id", ...} and works in the directory the
# hook prints on stdout; WorktreeRemove gets {"worktree_path": ...}.  A
# non-zero exit fails the agent's worktree step (it shows stderr).  The
# payloads are the ones Claude Code 2.1.331 sends (tests/agents/
# claude_worktree.sh drives the real binary).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE CLAUDE_PROJECT_DIR
export XDG_STATE_HOME=$SCRATCH/state

# hook EVENT JSON [AGENT]: as Claude Code runs it, from the current directory
hook() {
	printf '%s' "$2" | "$DECREE" hook "${3:-claude-code}" "$1" >"$SCRATCH/.hout" 2>"$SCRATCH/.herr"
	RC=$?
	HOUT=$(cat "$SCRATCH/.hout")
	HERR=$(cat "$SCRATCH/.herr")
}
answered() { # NAME WANT-STDOUT: exit 0, exactly WANT-STDOUT + newline, no stderr
	if [ "$RC" -eq 0 ] && [ "$(cat "$SCRATCH/.hout"; echo x)" = "$2
x" ] && [ -z "$HERR" ]; then ok "$1"; else
		not_ok "$1" "exit $RC; stdout: $HOUT; stderr: $HERR"; fi
}
silent() { # NAME: exit 0, nothing on stdout or stderr
	if [ "$RC" -eq 0 ] && [ ! -s "$SCRATCH/.hout" ] && [ -z "$HERR" ]; then ok "$1"; else
		not_ok "$1" "exit $RC; stdout: $HOUT; stderr: $HERR"; fi
}
failed() { # NAME STDERR-GLOB: exit 1, nothing on stdout, the reason on stderr
	case "$HERR" in
	$2) if [ "$RC" -eq 1 ] && [ ! -s "$SCRATCH/.hout" ]; then ok "$1"; else
		not_ok "$1" "exit $RC; stdout: $HOUT"; fi ;;
	*) not_ok "$1" "stderr did not match '$2': $HERR (exit $RC)" ;;
	esac
}
wslist() { "$DECREE" --json workspace list | python3 -c 'import json,sys; print(" ".join(w["name"] for w in json.load(sys.stdin)["workspaces"]))' 2>&1; }

P=$SCRATCH/proj
mkdir -p "$P/sub" && cd "$P" || exit 1
printf 'alpha\nbeta\n' >a.txt
printf 'one\n' >sub/b.txt
R=$(realpath "$P")
WS=$R/.decree/store/workspaces
pl='"session_id":"s1","transcript_path":"/x.jsonl","cwd":"'"$P"'","hook_event_name":"WorktreeCreate"'
pre=$(tree_state "$P")

# ===== WorktreeCreate =======================================================================
hook WorktreeCreate "{$pl,\"name\":\"feature\"}"
answered "WorktreeCreate: the workspace's absolute path on stdout, one line, exit 0" "$WS/feature"
same "... a decree workspace named after the payload's name" "$(wslist)" "feature"
same "... holding the project's files" "$(tree_state "$WS/feature")" "$pre"
same "... the project untouched" "$(tree_state "$P")" "$pre"
hook WorktreeCreate "{$pl,\"name\":\"feature\"}"
answered "the same name again: the same workspace (claude --worktree NAME resumes it)" "$WS/feature"
same "... not a second one" "$(wslist)" "feature"
hook WorktreeCreate "{$pl,\"name\":\"feat/x y!\"}"
answered "a name decree does not take is made one (feat-x-y)" "$WS/feat-x-y"
hook WorktreeCreate "{$pl}"
answered "no name: decree picks ws-1" "$WS/ws-1"
(cd sub && printf '%s' "{\"session_id\":\"s1\",\"cwd\":\"$P/sub\",\"hook_event_name\":\"WorktreeCreate\",\"name\":\"fromsub\"}" |
	"$DECREE" hook claude-code WorktreeCreate >"$SCRATCH/.hout" 2>"$SCRATCH/.herr")
RC=$? HERR=$(cat "$SCRATCH/.herr") HOUT=$(cat "$SCRATCH/.hout")
answered "run from a subdirectory: the project's workspace" "$WS/fromsub"
(cd / && printf '%s' "{\"session_id\":\"s1\",\"cwd\":\"/\",\"name\":\"byenv\"}" |
	CLAUDE_PROJECT_DIR=$P "$DECREE" hook claude-code WorktreeCreate >"$SCRATCH/.hout" 2>"$SCRATCH/.herr")
RC=$? HERR=$(cat "$SCRATCH/.herr") HOUT=$(cat "$SCRATCH/.hout")
answered "CLAUDE_PROJECT_DIR names the project" "$WS/byenv"
same "... five workspaces" "$(wslist)" "byenv feat-x-y feature fromsub ws-1"

# failures: exit 1, the reason on stderr (Claude Code shows it), logged
(cd "$WS/feature" && printf '%s' "{\"session_id\":\"s1\",\"cwd\":\"$WS/feature\",\"name\":\"nested\"}" |
	"$DECREE" hook claude-code WorktreeCreate >"$SCRATCH/.hout" 2>"$SCRATCH/.herr")
RC=$? HERR=$(cat "$SCRATCH/.herr") HOUT=$(cat "$SCRATCH/.hout")
failed "inside a workspace: refused, exit 1" "decree: hook claude-code WorktreeCreate: cannot create the workspace: *is a workspace*"
grep -q "claude-code WorktreeCreate .*cannot create the workspace" .decree/store/hooks.log &&
	ok "... and logged in the store's hooks.log" || not_ok "... logged" "$(cat .decree/store/hooks.log 2>&1)"
hook WorktreeCreate 'not json'
failed "a payload that is not JSON: exit 1" "decree: hook claude-code WorktreeCreate: the payload is not a JSON object*"
DECREE_LOCK_TIMEOUT_MS=300 flock .decree/store/lock sh -c \
	"printf '%s' '{$pl,\"name\":\"locked\"}' | '$DECREE' hook claude-code WorktreeCreate >'$SCRATCH/.hout' 2>'$SCRATCH/.herr'"
RC=$? HERR=$(cat "$SCRATCH/.herr") HOUT=$(cat "$SCRATCH/.hout")
failed "a locked store: exit 1 after the lock wait" "decree: hook claude-code WorktreeCreate: *lock*"
same "... no workspace made" "$(wslist)" "byenv feat-x-y feature fromsub ws-1"
hook WorktreeCreate "{$pl,\"name\":\"cx\"}" codex
if [ "$RC" -eq 0 ] && [ -z "$HOUT" ]; then ok "codex has no WorktreeCreate: exit 0, nothing on stdout, as for any unknown event"; else
	not_ok "codex WorktreeCreate" "exit $RC; stdout: $HOUT"; fi

# ===== WorktreeRemove =======================================================================
echo "agent work" >"$WS/feature/work.txt"
rpl='"session_id":"s1","transcript_path":"/x.jsonl","cwd":"'"$P"'","hook_event_name":"WorktreeRemove"'
hook WorktreeRemove "{$rpl,\"worktree_path\":\"$WS/feature\"}"
silent "WorktreeRemove: exit 0, nothing on stdout"
same "... the workspace is discarded" "$(wslist)" "byenv feat-x-y fromsub ws-1"
check "... its directory gone" test ! -e "$WS/feature"
same "... the project untouched" "$(tree_state "$P")" "$pre"
t "decree undo brings it back" "$DECREE" -q undo
same "... with the agent's work" "$(cat "$WS/feature/work.txt" 2>&1)" "agent work"
(cd "$WS/ws-1" && printf '%s' "{\"session_id\":\"s1\",\"cwd\":\"$WS/ws-1\",\"worktree_path\":\"$WS/ws-1\"}" |
	CLAUDE_PROJECT_DIR=$WS/ws-1 "$DECREE" hook claude-code WorktreeRemove >"$SCRATCH/.hout" 2>"$SCRATCH/.herr")
RC=$? HERR=$(cat "$SCRATCH/.herr") HOUT=$(cat "$SCRATCH/.hout")
silent "run from inside the workspace: its project is found from the workspace"
same "... discarded" "$(wslist)" "byenv feat-x-y feature fromsub"
hook WorktreeRemove "{$rpl,\"worktree_path\":\"$P/sub\"}"
failed "a directory that is not a workspace: exit 1" "decree: hook claude-code WorktreeRemove: '$R/sub' is not a decree workspace of*"
check "... nothing removed" test -f "$P/sub/b.txt"
hook WorktreeRemove "{$rpl,\"worktree_path\":\"$WS/nosuch\"}"
failed "a path that does not exist: exit 1" "decree: hook claude-code WorktreeRemove: cannot resolve the worktree*"
hook WorktreeRemove "{$rpl}"
failed "no worktree_path: exit 1" "decree: hook claude-code WorktreeRemove: the payload has no absolute worktree_path"
same "the project never changed" "$(tree_state "$P")" "$pre"

done_testing
