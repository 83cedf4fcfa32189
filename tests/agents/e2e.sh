#!/bin/bash
# e2e.sh AGENT - decree's agent hooks, end to end, with a real agent CLI
# (AGENT: claude, codex or gemini) driven offline by a scripted fake model
# (shared/agents, tests/agents/lib.sh).  DESIGN "Agent integrations".
#
# 1. One turn (scenarios/turn.json) in a project with `decree hook install`:
#    the agent writes a new file, edits one, runs a shell command that edits
#    one and creates another.  One checkpoint for the turn (session = the
#    agent's session id, message = its turn id, label = the prompt's first
#    line); `rewind --json` names exactly the agent's four paths (not the
#    untouched file, not the ignored one).  The user then edits one of the
#    agent's files; `rewind 1 --agent-only` (dry run first: changes
#    nothing) brings the agent's other paths back to before the turn, keeps
#    the user's bytes and reports them as a skipped user edit, and leaves
#    untouched files alone (same inode and mtime); `undo` brings back the
#    tree as it was (the turn + the user's edit).
# 2. Two turns of one session (scenarios/session-1.json, then session-2.json
#    resumed with the agent's --continue): turn 1's shell command runs in
#    sub/ (`cd sub && ...`), and the journal names its paths relative to the
#    root; `rewind --json` lists both turns with their own files; `rewind 2
#    --agent-only` undoes turn 2 only (the tree is the one after turn 1);
#    `undo` brings turn 2's tree back.
# Throughout: no hook call logged an error and none left a sanitizer
# report; `hook status` shows the hooks installed, no last error, and the
# session with its turns; decree's JSON documents validate against
# docs/schema.
# Every hook payload the agent sends is logged by shared/agents/hooklog.py
# (registered beside decree's hooks) into $B/test-logs/agents-AGENT/, with
# the agent's output and decree's JSON documents.
. "$(dirname "$0")/lib.sh"
agents_setup "${1:?usage: e2e.sh claude|codex|gemini}"

# facts about checkpoints (list --json) and turns (rewind --json)
CK_FACTS='[[c["session"], c["label"]] for c in d["checkpoints"]]'
TURN_FACTS='[[t["turn"], t["message"], t["prompt"], t["checkpoint"]] for t in d["turns"]]'
RFC3339='all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", t["created_at"]) for t in d["turns"])'
# the plan of a restore: [[created], [restored], [deleted], [skipped user edits]] from "changes"
PLAN='[sorted(c["path"] for c in d["changes"] if c["action"] == a) for a in ("create", "restore", "delete")] + [sorted(d["skipped_user_edits"])]'
# the lists the contract names agree with "changes"
LISTS='[sorted(d["created"]), sorted(d["restored"]), sorted(d["deleted"])] == [sorted(c["path"] for c in d["changes"] if c["action"] == a) for a in ("create", "restore", "delete")]'

# decree_hooks_installed NAME DIR: the settings file names `decree hook
# AGENT EVENT` for the prompt, before-tool and after-tool events
decree_hooks_installed() {
	same "$1" "$(jx "$2/$SETTINGS" "[ev for ev in $(js "$PROMPT_EV" "$PRE_EV" "$POST_EV")
		if not any(re.search(r'\\bhook\\s+\\S+\\s+' + ev + r'\\b', h.get('command', ''))
		           for e in d.get('hooks', {}).get(ev, []) for h in e.get('hooks', []))]")" "[]"
}

# no_hook_errors NAME DIR WORK: no hook call logged an error (the hook log
# lives in the store, or in the agent's HOME when the store cannot be
# opened: src/hooks/hooks.h); shows the log's last lines otherwise
no_hook_errors() {
	local logs="" f
	for f in "$2/.decree/store/hooks.log" "$3/home/.local/state/decree/hooks.log"; do
		[ -s "$f" ] && logs="$logs$f:
$(tail -n 5 "$f")
"
	done
	if [ -z "$logs" ]; then ok "$1"; else not_ok "$1" "$logs"; fi
}

# hook_status_facts NAME TURNS: after dj ... hook status: for this agent's
# project scope [installed, disabled, every decree it names exists], then
# the last hook error, then the session with its number of turns
hook_status_facts() {
	after_dj same "$1" \
		"$(jx "$J" "([[h['installed'], h['disabled'], all(p['exists'] for p in h['programs'])]
			for h in d['hooks'] if h['agent'] == '$AGENT' and h['scope'] == 'project']
			+ [d['last_error']] + [[s['session'], s['agent'], s['turns']] for s in d['sessions'] or []])")" \
		"[[true, false, true], null, $(python3 -c 'import json, sys; print(json.dumps([sys.argv[1], sys.argv[2], int(sys.argv[3])]))' "$SID" "$AGENT" "$2")]"
}

# turn_messages NAME LOG CKFILE: the checkpoints' messages are the agent's
# turn ids (Gemini sends none: then there must be one per prompt event,
# and they must differ)
turn_messages() {
	if [ -n "$TURN_KEY" ]; then
		same "$1" "$(jx "$3" '[c["message"] for c in d["checkpoints"]]')" "$(hv "$2" "$PROMPT_EV" "$TURN_KEY")"
	else
		# one per prompt event, each a non-empty string, all different
		same "$1" "$(jx "$3" '[bool(c["message"]) for c in d["checkpoints"]] + [len({c["message"] for c in d["checkpoints"]})]')" \
			"$(hv "$2" "$PROMPT_EV" session_id | python3 -c 'import json, sys; n = len(json.load(sys.stdin)); print(json.dumps([True] * n + [n]))')"
	fi
}

# --- 1. one turn, a user edit, rewind --agent-only, undo ----------------------
P=$SCRATCH/p1 W=$SCRATCH/run1 LOG=$ART/p1-hooks.jsonl
SC=$SCENARIOS/turn.json
LABEL1="Turn one: write a file, edit one, run a shell command"
mkdir -p "$P"
seed "$SC" "$P"
cd "$P" || exit 1
t "decree hook install $AGENT" "$DECREE" hook install "$AGENT"
cp "$P/$SETTINGS" "$ART/p1-settings-by-decree.json" 2>/dev/null
decree_hooks_installed "the settings run decree hook $AGENT for $PROMPT_EV, $PRE_EV, $POST_EV" "$P"
register_hooklog "$P" "$LOG"
UNTOUCHED=(untouched.txt .gitignore build.log "$SETTINGS")
stat_state "$P" "${UNTOUCHED[@]}" >"$SCRATCH/p1.untouched"
agent_turn "$A runs turn 1 with decree's hooks" "$P" "$W" "$SC" "$LABEL1
The fake model follows tests/agents/scenarios/turn.json."
scenario_files "turn 1 left the files the script says" "$SC" "$P"
same "the agent fired one prompt event and 3 after-tool events at least" \
	"$(python3 -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print(len(a), len(b) >= 3)' \
		"$(hv "$LOG" "$PROMPT_EV" session_id)" "$(hv "$LOG" "$POST_EV" session_id)" 2>&1)" "1 True"
SID=$(hv "$LOG" "$PROMPT_EV" session_id | python3 -c 'import json,sys; l=json.load(sys.stdin); print(l[0] if l else "")')
echo "# session id: $SID"
no_hook_errors "no hook call logged an error" "$P" "$W"
sanitizer_reports "no sanitizer report from the hooks"
dj p1-hook-status "decree hook status --json" hook status
hook_status_facts "hook status: installed in the project, its decree exists, not disabled; no hook error; the session, 1 turn" 1
dj p1-checkpoints "checkpoint list --json" checkpoint list
after_dj same "one checkpoint, for turn 1: session = the agent's session id, label = the prompt's first line" \
	"$(jx "$J" "$CK_FACTS")" "[$(js "$SID" "$LABEL1")]"
turn_messages "its message is the agent's turn id" "$LOG" "$J"
CK1=$(jx "$J" 'd["checkpoints"][0]["id"]' | tr -d '"')
dj p1-rewind-list "rewind --json" rewind
after_dj same "rewind: the agent's session and the agent's name" "$(jx "$J" '[d["session"], d["agent"]]')" "$(js "$SID" "$AGENT")"
after_dj same "rewind: one turn: number, message, prompt, checkpoint" "$(jx "$J" "$TURN_FACTS")" \
	"$(jx "$ART/p1-checkpoints.json" '[[1, c["message"], c["label"], c["id"]] for c in d["checkpoints"]]')"
after_dj same "rewind: created_at is RFC 3339 UTC" "$(jx "$J" "$RFC3339")" "true"
after_dj same "rewind: the journal names exactly the agent's paths (write, edit, shell; not the untouched or ignored files)" \
	"$(jx "$J" '[t["files"] for t in d["turns"]]')" "$(jx "$SC" '[d["journal"]]')"

# the user edits a file the agent wrote
printf 'the user rewrote this\n' >"$P/agent-new.txt"
BEFORE_REWIND=$(tree_state "$P")
mapfile -t ALL_FILES < <(cd "$P" && find . -path ./.decree -prune -o -type f -print | LC_ALL=C sort)
stat_state "$P" "${ALL_FILES[@]}" >"$SCRATCH/p1.all"
WANT_PLAN='[[], ["edit-me.txt", "shell-edit.txt"], ["shell-made.txt"], ["agent-new.txt"]]'
dj p1-rewind-dry "rewind 1 --agent-only --dry-run --json" rewind 1 --agent-only --dry-run
after_dj same "dry run: dry_run is true" "$(jx "$J" 'd["dry_run"]')" "true"
after_dj same "dry run: the plan (create, restore, delete, skipped user edits)" "$(jx "$J" "$PLAN")" "$WANT_PLAN"
after_dj same "dry run: nothing in the tree changed (no file more or less; every file's bytes, mode, inode, mtime)" \
	"$(tree_state "$P"; stat_state "$P" "${ALL_FILES[@]}")" "$BEFORE_REWIND
$(cat "$SCRATCH/p1.all")"

dj p1-rewind "rewind 1 --agent-only --json" rewind 1 --agent-only
after_dj same "rewind: operation rewind, turn 1's checkpoint, not a dry run, a pre-rewind checkpoint" \
	"$(jx "$J" '[d["operation"], d["checkpoint"], d["dry_run"], bool(re.fullmatch("[0-9a-f]{64}", d["pre_checkpoint"] or ""))]')" \
	"$(python3 -c 'import json,sys; print(json.dumps(["rewind", sys.argv[1], False, True]))' "$CK1")"
after_dj same "rewind: restored the edited files, deleted the new one, skipped the user's edit" "$(jx "$J" "$PLAN")" "$WANT_PLAN"
after_dj same "rewind: created/restored/deleted list the paths of changes" "$(jx "$J" "$LISTS")" "true"
after_dj scenario_files "the agent's paths are back to before the turn; the user's file keeps the user's bytes" \
	<(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); e=dict(s["seed"]); e["agent-new.txt"]="the user rewrote this\n"; print(json.dumps({"expect": e, "absent": ["shell-made.txt"]}))' "$SC") "$P"
after_dj same "untouched and ignored files keep their inode and mtime" "$(stat_state "$P" "${UNTOUCHED[@]}")" "$(cat "$SCRATCH/p1.untouched")"
dj p1-undo "undo --json" undo
after_dj same "undo brings back the tree after the turn with the user's edit" "$(tree_state "$P")" "$BEFORE_REWIND"
after_dj same "untouched and ignored files still keep their inode and mtime" "$(stat_state "$P" "${UNTOUCHED[@]}")" "$(cat "$SCRATCH/p1.untouched")"
schemas_valid "decree's JSON documents validate against docs/schema" p1-hook-status=hook-status \
	p1-checkpoints=checkpoint-list p1-rewind-list=rewind p1-rewind-dry=checkpoint-restore \
	p1-rewind=checkpoint-restore p1-undo=checkpoint-restore

# --- 2. two turns of one session; the shell of turn 1 runs in sub/ ------------
P=$SCRATCH/p2 W=$SCRATCH/run2 LOG=$ART/p2-hooks.jsonl
S1=$SCENARIOS/session-1.json S2=$SCENARIOS/session-2.json
LABEL1="Session turn one: work in sub/" LABEL2="Session turn two: edit and clean up"
mkdir -p "$P"
seed "$S1" "$P"
cd "$P" || exit 1
t "decree hook install $AGENT (second project)" "$DECREE" hook install "$AGENT"
register_hooklog "$P" "$LOG"
agent_turn "$A runs turn 1 of a session (a shell command in sub/)" "$P" "$W" "$S1" "$LABEL1
The fake model follows tests/agents/scenarios/session-1.json."
scenario_files "turn 1 left the files the script says" "$S1" "$P"
AFTER_TURN1=$(tree_state "$P")
agent_turn "$A runs turn 2 of the same session (--continue)" "$P" "$W" "$S2" "$LABEL2
The fake model follows tests/agents/scenarios/session-2.json." --continue
scenario_files "turn 2 left the files the script says" "$S2" "$P"
SIDS=$(hv "$LOG" "$PROMPT_EV" session_id)
SID=$(python3 -c 'import json,sys; l=json.loads(sys.argv[1]); print(l[0] if l else "")' "$SIDS" 2>/dev/null)
same "the agent resumed its session (two prompt events, one session id)" "$SIDS" "$(js "$SID" "$SID")"
no_hook_errors "no hook call logged an error" "$P" "$W"
sanitizer_reports "no sanitizer report from the hooks"
dj p2-hook-status "decree hook status --json" hook status
hook_status_facts "hook status: no hook error; the session, 2 turns" 2
dj p2-checkpoints "checkpoint list --json" checkpoint list
after_dj same "two checkpoints, one per turn, in the agent's session, labelled with the prompts' first lines" \
	"$(jx "$J" "$CK_FACTS")" "[$(js "$SID" "$LABEL1"), $(js "$SID" "$LABEL2")]"
turn_messages "their messages are the agent's turn ids" "$LOG" "$J"
dj p2-rewind-list "rewind --json (two turns)" rewind
after_dj same "rewind: two turns numbered 1, 2 with the checkpoints' messages and ids" \
	"$(jx "$J" '[[t["turn"], t["message"], t["checkpoint"]] for t in d["turns"]]')" \
	"$(jx "$ART/p2-checkpoints.json" '[[i + 1, c["message"], c["id"]] for i, c in enumerate(d["checkpoints"])]')"
after_dj same "rewind: turn 1's files: the write in sub/ and the shell's from 'cd sub && ...', relative to the root" \
	"$(jx "$J" 'd["turns"][0]["files"]')" "$(jx "$S1" 'd["journal"]')"
after_dj same "rewind: turn 2's files" "$(jx "$J" 'd["turns"][1]["files"]')" "$(jx "$S2" 'd["journal"]')"
AFTER_TURN2=$(tree_state "$P")
stat_state "$P" sub/keep.txt >"$SCRATCH/p2.untouched"
dj p2-rewind "rewind 2 --agent-only --json" rewind 2 --agent-only
after_dj same "rewind 2: re-created, restored and deleted turn 2's paths only; no user edit" "$(jx "$J" "$PLAN")" \
	'[["sub/made.txt"], ["sub/new.txt", "top.txt"], ["sub/second.txt"], []]'
after_dj same "rewind 2: the tree is the one after turn 1" "$(tree_state "$P")" "$AFTER_TURN1"
after_dj same "rewind 2: the untouched file keeps its inode and mtime" "$(stat_state "$P" sub/keep.txt)" "$(cat "$SCRATCH/p2.untouched")"
dj p2-undo "undo --json" undo
after_dj same "undo brings back the tree after turn 2" "$(tree_state "$P")" "$AFTER_TURN2"
schemas_valid "decree's JSON documents validate against docs/schema" p2-hook-status=hook-status \
	p2-checkpoints=checkpoint-list p2-rewind-list=rewind p2-rewind=checkpoint-restore p2-undo=checkpoint-restore

echo "# $A agent runs:$AGENT_SECS"
cd / || true
done_testing
