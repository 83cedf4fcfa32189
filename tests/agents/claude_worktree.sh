#!/bin/bash
# claude_worktree.sh - `claude --worktree` in a project without git, with
# decree answering Claude Code's WorktreeCreate hook (issue 12), driven
# offline by the scripted fake model (tests/agents/lib.sh).
#
# `decree hook install claude-code` installs WorktreeCreate and
# WorktreeRemove beside the checkpoint hooks.  One turn of `claude -p
# --worktree feature` (scenarios/worktree.json): Claude Code runs the
# WorktreeCreate hook (payload {"name": "feature", "cwd", ...}), works in
# the directory decree prints, a workspace under the store, and the
# project is untouched; decree's checkpoint hooks fire inside the
# workspace too (its .claude/settings.json is the project's), so the turn
# is journaled on the workspace's root; `decree workspace apply feature`
# brings the work into the project.  `claude -p` never removes a worktree
# (WorktreeRemove fires when an interactive session ends and the user
# removes it, or for background and subagent worktrees), so removal is
# checked with the payload Claude Code sends ({"worktree_path": ...}), as
# tests/cli/hook_worktree.sh does in more cases.
. "$(dirname "$0")/lib.sh"
agents_setup claude

P=$SCRATCH/wt-project
mkdir -p "$P" && cd "$P" || exit 1
seed "$SCENARIOS/worktree.json" "$P"
"$DECREE" -q hook install claude-code || { not_ok "decree hook install claude-code"; done_testing; exit 1; }
# every payload, WorktreeCreate's included, logged beside decree's hooks
# (hooklog prints nothing, so the path Claude Code takes is decree's)
python3 - "$AGENTS_SHARED" "$P" "$ART/wt-hooks.jsonl" <<'PY'
import shlex, sys
shared, project, log = sys.argv[1:]
sys.path.insert(0, shared)
import run_agent
cmd = "python3 %s %s {event}" % (shlex.quote(shared + "/hooklog.py"), shlex.quote(log))
run_agent.write_hooks("claude", project, cmd, run_agent.EVENTS["claude"] + ["WorktreeCreate"])
PY
cp .claude/settings.json "$ART/wt-settings.json"
pre=$(tree_state "$P")
WS=$(realpath "$P")/.decree/store/workspaces/feature

agent_turn "claude -p --worktree feature, in a project without git" "$P" "$SCRATCH/wt1" \
	"$SCENARIOS/worktree.json" "Please carry out the scripted change." --arg=--worktree --arg=feature
same "Claude Code ran WorktreeCreate with the name" "$(hv "$ART/wt-hooks.jsonl" WorktreeCreate name)" '["feature"]'
dj wt-list "decree workspace list --json" workspace list
after_dj same "... decree made the workspace 'feature'" "$(jx "$J" '[w["name"] for w in d["workspaces"]]')" '["feature"]'
same "the agent worked in the workspace" "$(cat "$WS/where.txt" 2>&1)" "$WS"
scenario_files "... its files are there" "$SCENARIOS/worktree.json" "$WS"
same "the project is untouched" "$(tree_state "$P")" "$pre"
same "decree's hooks ran in the workspace: the prompt event's cwd" "$(hv "$ART/wt-hooks.jsonl" UserPromptSubmit cwd)" "[\"$WS\"]"
(cd "$WS" && "$DECREE" --json rewind >"$ART/wt-rewind.json" 2>"$ART/wt-rewind.err")
same "... and journaled the turn on the workspace's root" "$(jx "$ART/wt-rewind.json" '[t["files"] for t in d["turns"]]')" \
	'[["agent-new.txt", "edit-me.txt", "where.txt"]]'
dj wt-status "decree hook status --json" hook status
after_dj same "... no hook error" "$(jx "$J" 'd["last_error"]')" "null"
t "decree workspace apply feature" "$DECREE" -q workspace apply feature
scenario_files "... the project has the agent's work" "$SCENARIOS/worktree.json" "$P"
sid=$(hv "$ART/wt-hooks.jsonl" WorktreeCreate session_id | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')
printf '{"session_id":"%s","transcript_path":"/x.jsonl","cwd":"%s","hook_event_name":"WorktreeRemove","worktree_path":"%s"}' \
	"$sid" "$P" "$WS" | CLAUDE_PROJECT_DIR=$P "$DECREE" hook claude-code WorktreeRemove >"$ART/wt-remove.out" 2>&1
same "WorktreeRemove (Claude Code's payload): exit 0, nothing printed" "$? $(cat "$ART/wt-remove.out")" "0 "
check "... the workspace is gone" test ! -e "$WS"
t "decree hook uninstall claude-code" "$DECREE" -q hook uninstall claude-code
# (decree's entries run "DECREE hook claude-code EVENT"; the harness's
# own logging hooks, kept, may have "decree" in their paths)
same "... removes decree's WorktreeCreate and WorktreeRemove entries" \
	"$(jx .claude/settings.json '[e for e in ("WorktreeCreate", "WorktreeRemove") if any(" hook claude-code " in h["command"] for g in d["hooks"].get(e, []) for h in g["hooks"])]')" "[]"
sanitizer_reports "no hook run left a sanitizer report"
done_testing
