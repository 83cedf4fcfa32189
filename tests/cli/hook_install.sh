#!/bin/bash
# hook_install.sh - "decree hook install|uninstall|status" and the command
# the agents run (docs/cli/hook.md).  Installs into fresh projects and
# into settings files full of other settings and hooks; python3 checks
# that everything else is kept exactly (values and key order), that
# decree's entries have the shape each agent reads, that a second
# install changes no byte, and that uninstall gives back the original.
# Errors (bad JSON, "hooks" not an object, an unwritable directory) exit
# 1 and leave the file alone.  The hook command itself exits 0 and prints
# nothing on stdout, whatever it is given.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE CODEX_HOME CLAUDE_CONFIG_DIR GEMINI_CLI_HOME \
	CLAUDE_PROJECT_DIR GEMINI_PROJECT_DIR DECREE_HOOK_BUDGET
export HOME=$SCRATCH/home XDG_STATE_HOME=$SCRATCH/state
mkdir -p "$HOME"
umask 022
PROG=$(readlink -f "$DECREE")
FALLBACK_LOG=$XDG_STATE_HOME/decree/hooks.log

sha() { sha256sum <"$1" | cut -c1-64; }
same_file() { # NAME FILE SHA
	if [ -f "$2" ] && [ "$(sha "$2")" = "$3" ]; then ok "$1"; else not_ok "$1" "$2 changed"; fi
}
# py NAME SCRIPT ARGS...: ok if the python check exits 0 (its output is
# the reason otherwise)
py() {
	local name=$1 code=$2 why
	shift 2
	if why=$(python3 -c "$CHECK
$code" "$@" 2>&1); then ok "$name"; else not_ok "$name" "$why"; fi
}

# The checks: decree's entries (recognised as install.c does: the program
# named decree*, then "hook <agent>"), and the file without them.
CHECK='
import json, os, shlex, sys
AGENTS = {
  "claude-code": (("UserPromptSubmit", None), ("PreToolUse", "*"), ("PostToolUse", "*"),
                  ("WorktreeCreate", None), ("WorktreeRemove", None)),
  "codex": (("UserPromptSubmit", None), ("PreToolUse", "*"), ("PostToolUse", "*")),
  "gemini": (("BeforeAgent", None), ("BeforeTool", ".*"), ("AfterTool", ".*")),
}
NAMES = {"claude-code": ("claude-code", "claude"), "codex": ("codex",), "gemini": ("gemini", "gemini-cli")}
def load(p):
    with open(p) as f:
        return json.load(f)
def ours(agent, h):
    if not isinstance(h, dict) or not isinstance(h.get("command"), str):
        return False
    if h.get("type", "command") != "command":
        return False
    try:
        w = shlex.split(h["command"])
    except ValueError:
        return False
    while w and "=" in w[0] and not w[0].startswith("="):
        w = w[1:]
    return len(w) >= 3 and os.path.basename(w[0]).startswith("decree") and \
        w[1] == "hook" and w[2] in NAMES[agent]
def strip(agent, d):
    """the settings without decree entries, emptied groups and arrays"""
    d = json.loads(json.dumps(d))
    hooks = d.get("hooks")
    if not isinstance(hooks, dict):
        return d
    for ev in list(hooks):
        arr = hooks[ev]
        if not isinstance(arr, list):
            continue
        n = len(arr)
        for g in list(arr):
            hs = g.get("hooks") if isinstance(g, dict) else None
            if not isinstance(hs, list):
                continue
            m = len(hs)
            hs[:] = [h for h in hs if not ours(agent, h)]
            if m and not hs:
                arr.remove(g)
        if n and not arr:
            del hooks[ev]
    return d
def want(agent, ev, prog, store=None):
    cmd = "\x27%s\x27 hook %s %s" % (prog, agent, ev)
    if store:
        cmd += " --store \x27%s\x27" % store
    # (a worktree copies the project: 10 minutes for those)
    h = {"type": "command", "command": cmd,
         "timeout": 60000 if agent == "gemini" else 600 if ev.startswith("Worktree") else 60}
    if agent == "gemini":
        h["name"] = "decree"
    return h
def check_entries(agent, d, prog, store=None):
    """decree has exactly one entry per event, the right one, in a group
    with the right matcher; none elsewhere"""
    hooks = d["hooks"]
    evs = dict(AGENTS[agent])
    for ev, arr in hooks.items():
        found = [(g, h) for g in arr if isinstance(g, dict) for h in g.get("hooks", []) if ours(agent, h)]
        if ev not in evs:
            assert not found, "decree entry on %s" % ev
            continue
        assert len(found) == 1, "%s: %d decree entries" % (ev, len(found))
        g, h = found[0]
        assert h == want(agent, ev, prog, store), "%s: %r" % (ev, h)
        assert list(h) == list(want(agent, ev, prog, store)), "%s: key order %r" % (ev, list(h))
        if evs[ev] is None:
            assert "matcher" not in g, "%s has a matcher" % ev
        else:
            assert g.get("matcher") == evs[ev], "%s matcher %r" % (ev, g.get("matcher"))
    for ev in evs:
        assert ev in hooks, "no %s" % ev
def norm(d):
    """an empty event array means no hook: decree drops one it emptied
    (one the user left empty and decree never filled stays)"""
    d = json.loads(json.dumps(d))
    if isinstance(d.get("hooks"), dict):
        for ev in [e for e, v in d["hooks"].items() if v == []]:
            del d["hooks"][ev]
    return d
def same(a, b):
    """equal values and equal key order at every level"""
    return json.dumps(norm(a)) == json.dumps(norm(b))
'

# --- fresh projects ---------------------------------------------------------
F_claude=.claude/settings.json F_codex=.codex/hooks.json F_gemini=.gemini/settings.json
for agent in claude-code codex gemini; do
	P=$SCRATCH/fresh-$agent
	mkdir -p "$P" && cd "$P" || exit 1
	case $agent in claude-code) f=$F_claude ;; codex) f=$F_codex ;; gemini) f=$F_gemini ;; esac
	t_match "installed decree's $agent hooks in '$P/$f' (*)" \
		"$agent: install into a fresh project" "$DECREE" hook install "$agent"
	py "$agent: the file has decree's entries, the shape the agent reads, and nothing else" '
d = load(sys.argv[1]); check_entries(sys.argv[2], d, sys.argv[3])
assert list(d) == ["hooks"], list(d)
assert strip(sys.argv[2], d) == {"hooks": {}}, strip(sys.argv[2], d)' "$P/$f" "$agent" "$PROG"
	s1=$(sha "$P/$f")
	t_out "decree's $agent hooks are already installed in '$P/$f'" \
		"$agent: a second install says so" "$DECREE" hook install "$agent"
	same_file "$agent: ... and changes no byte" "$P/$f" "$s1"
	t "$agent: --json install" "$DECREE" hook install "$agent" --json
	py "$agent: --json: agent, scope, file, changed false, events" '
d = json.loads(sys.argv[1])
assert list(d) == ["agent", "scope", "file", "changed", "events"], d
assert d["agent"] == sys.argv[2] and d["scope"] == "project" and d["file"] == sys.argv[3], d
assert d["changed"] is False and d["events"] == [e for e, m in AGENTS[sys.argv[2]]], d' \
		"$OUT" "$agent" "$P/$f"
	[ "$(stat -c %a "$P/$f")" = 644 ] && ok "$agent: a new file gets 0666 less the umask" ||
		not_ok "$agent: new file mode" "$(stat -c %a "$P/$f")"
	t "$agent: uninstall" "$DECREE" hook uninstall "$agent" --json
	py "$agent: uninstall --json says what it removed" '
d = json.loads(sys.argv[1])
assert d["changed"] is True and d["events"] == [e for e, m in AGENTS[sys.argv[2]]], d' "$OUT" "$agent"
	py "$agent: a fresh install and uninstall leave {}" 'assert load(sys.argv[1]) == {}' "$P/$f"
	s2=$(sha "$P/$f")
	t_out "decree's $agent hooks are not installed in '$P/$f'" \
		"$agent: uninstall again says so" "$DECREE" hook uninstall "$agent"
	same_file "$agent: ... and changes no byte" "$P/$f" "$s2"
done
cd "$SCRATCH" || exit 1

t_exit 0 "the alias 'claude' installs claude-code's hooks" "$DECREE" -C "$SCRATCH/fresh-codex" hook install claude
py "... with the command naming claude-code" 'check_entries("claude-code", load(sys.argv[1]), sys.argv[2])' \
	"$SCRATCH/fresh-codex/.claude/settings.json" "$PROG"
P=$SCRATCH/nothing && mkdir -p "$P"
t_exit 0 "uninstall where nothing is installed" "$DECREE" -C "$P" hook uninstall gemini
[ ! -e "$P/.gemini" ] && ok "... creates nothing" || not_ok "... creates nothing" "$(ls -a "$P")"

# --- an existing file full of other settings and hooks -----------------------
P=$SCRATCH/busy
mkdir -p "$P/.claude" && cd "$P" || exit 1
cat >.claude/settings.json <<'EOF'
{
    "model": "opus",
    "permissions": {"allow": ["Bash(npm run test:*)", "Read"], "deny": [], "defaultMode": "acceptEdits"},
    "env": {"FOO": "bar", "PI": 3.14159, "ratio": 0.1, "tiny": 1.5e-7, "big": 1e300, "hundred": 100.0,
            "n": -42, "t": true, "f": false, "z": null, "uni": "h\u00e9llo \u2603 \ud83d\ude00", "slash": "a/b\\c\"q"},
    "hooks": {
        "PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "other-tool check --strict", "timeout": 5}]},
            {"matcher": "Bash", "hooks": [
                {"type": "command", "command": "lint-shell"},
                {"type": "command", "command": "'/old/place/decree' hook claude-code PreToolUse --store '/old/store'", "timeout": 30}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"},
                            {"type": "command", "command": "DECREE_X=1 /usr/local/bin/decree hook claude Stop"}]}],
        "PostToolUse": [],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "echo decree hook claude-code PostToolUse"}]}]
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "enabledPlugins": {}
}
EOF
chmod 640 .claude/settings.json
cp .claude/settings.json "$SCRATCH/busy-orig.json"
t_match "updated decree's claude-code hooks in '$P/.claude/settings.json' (UserPromptSubmit, PreToolUse, PostToolUse, WorktreeCreate, WorktreeRemove)" \
	"install into a busy file replaces the old decree's entry (it says updated)" "$DECREE" hook install claude-code
py "every other setting and hook is kept: values and key order" '
a, b = load(sys.argv[1]), load(sys.argv[2])
assert same(strip("claude-code", a), strip("claude-code", b)), json.dumps(strip("claude-code", a))
assert [k for k in a] == [k for k in b], list(a)' "$P/.claude/settings.json" "$SCRATCH/busy-orig.json"
py "decree's entries: one per event (the old path on matcher Bash and the old Stop entry are gone)" '
check_entries("claude-code", load(sys.argv[1]), sys.argv[2])' "$P/.claude/settings.json" "$PROG"
py "the other tool's hook on the same event and matcher is still there, first" '
d = load(sys.argv[1])["hooks"]["PreToolUse"]
assert d[0] == {"matcher": "*", "hooks": [{"type": "command", "command": "other-tool check --strict", "timeout": 5}]}, d[0]
assert d[1] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint-shell"}]}, d[1]' "$P/.claude/settings.json"
py "numbers come back as the same numbers, written as the user wrote them" '
raw = open(sys.argv[1]).read()
for s in ("3.14159", "0.1,", "1.5e-7", "1e300", "100.0", "-42"):
    assert s in raw, s' "$P/.claude/settings.json"
[ "$(stat -c %a "$P/.claude/settings.json")" = 640 ] && ok "the file keeps its mode (0640)" ||
	not_ok "the file keeps its mode" "$(stat -c %a "$P/.claude/settings.json")"
s1=$(sha "$P/.claude/settings.json")
t_match "*already installed*" "a second install" "$DECREE" hook install claude
same_file "... is byte-identical" "$P/.claude/settings.json" "$s1"
t "uninstall from the busy file" "$DECREE" hook uninstall claude-code
py "uninstall gives back the original without decree's entries (values and order)" '
a, b = load(sys.argv[1]), load(sys.argv[2])
assert same(a, strip("claude-code", b)), json.dumps(a)
assert "decree hook claude-code PostToolUse" in json.dumps(a)  # an echo is not decree
assert "/decree" not in json.dumps(a)' "$P/.claude/settings.json" "$SCRATCH/busy-orig.json"

# --store, and a reinstall that changes it
P=$SCRATCH/stores
mkdir -p "$P/sub" && cd "$P/sub" || exit 1
t "install with --store (relative)" "$DECREE" --store ../st hook install gemini -C "$P"
py "the command has --store with the absolute directory" '
check_entries("gemini", load(sys.argv[1]), sys.argv[2], sys.argv[3])' "$P/.gemini/settings.json" "$PROG" "$P/st"
t_match "updated decree's gemini hooks*" "a reinstall without --store replaces it" "$DECREE" -C "$P" hook install gemini
py "... one entry per event, without --store" 'check_entries("gemini", load(sys.argv[1]), sys.argv[2])' \
	"$P/.gemini/settings.json" "$PROG"
cd "$SCRATCH" || exit 1

# a settings file that is a symlink (dotfiles) is written through
P=$SCRATCH/linked
mkdir -p "$P/.claude" "$SCRATCH/dotfiles"
printf '{"theme": "dark"}\n' >"$SCRATCH/dotfiles/claude.json"
ln -s "$SCRATCH/dotfiles/claude.json" "$P/.claude/settings.json"
t "install through a symlinked settings file" "$DECREE" -C "$P" hook install claude
[ -L "$P/.claude/settings.json" ] && ok "... the symlink stays a symlink" || not_ok "... the symlink stays" ""
py "... and its target has decree's entries and the theme" '
d = load(sys.argv[1]); check_entries("claude-code", d, sys.argv[2]); assert d["theme"] == "dark"' \
	"$SCRATCH/dotfiles/claude.json" "$PROG"

# --- Gemini's hooksConfig -------------------------------------------------------
P=$SCRATCH/gem
mkdir -p "$P/.gemini"
printf '{"hooksConfig": {"enabled": false, "notifications": false}, "ui": {"theme": "x"}}\n' >"$P/.gemini/settings.json"
t_err "*set hooksConfig.enabled to true*" "gemini: hooksConfig.enabled false is turned on, with a note" 0 \
	"$DECREE" -C "$P" hook install gemini
py "... the rest of hooksConfig and the file is kept" '
d = load(sys.argv[1])
assert d["hooksConfig"] == {"enabled": True, "notifications": False}, d["hooksConfig"]
assert list(d) == ["hooksConfig", "ui", "hooks"], list(d)' "$P/.gemini/settings.json"
py "gemini: no hooksConfig is added where there was none" '
assert "hooksConfig" not in load(sys.argv[1])' "$SCRATCH/stores/.gemini/settings.json"
python3 -c '
import json, sys
p = sys.argv[1]; d = json.load(open(p)); d["hooksConfig"]["disabled"] = ["decree"]; json.dump(d, open(p, "w"))' \
	"$P/.gemini/settings.json"
t_err "*hooksConfig.disabled*names decree's hooks*" "gemini: hooksConfig.disabled naming decree is reported" 0 \
	"$DECREE" -C "$P" hook install gemini

P=$SCRATCH/killswitch && mkdir -p "$P/.claude"
printf '{"disableAllHooks": true}\n' >"$P/.claude/settings.json"
t_err "*\"disableAllHooks\": true in '$P/.claude/settings.json'*" \
	"claude-code: disableAllHooks is reported, not changed" 0 "$DECREE" -C "$P" hook install claude
py "... it stays true" 'assert load(sys.argv[1])["disableAllHooks"] is True' "$P/.claude/settings.json"
t_match "*claude-code  project  installed*; disabled by disableAllHooks*" "... status says the hooks are off" \
	"$DECREE" -C "$P" hook status

# --- --user ---------------------------------------------------------------------
P=$SCRATCH/userproj && mkdir -p "$P" && cd "$P" || exit 1
t_match "installed decree's claude-code hooks in '$HOME/.claude/settings.json'*" \
	"--user: claude-code goes to ~/.claude/settings.json" "$DECREE" hook install claude --user
t_match "installed decree's codex hooks in '$HOME/.codex/hooks.json'*" \
	"--user: codex goes to ~/.codex/hooks.json" "$DECREE" hook install codex --user
t_match "installed decree's codex hooks in '$SCRATCH/codexhome/hooks.json'*" \
	"--user: codex follows CODEX_HOME" env CODEX_HOME="$SCRATCH/codexhome" "$DECREE" hook install codex --user
t_match "installed decree's gemini hooks in '$HOME/.gemini/settings.json'*" \
	"--user: gemini goes to ~/.gemini/settings.json" "$DECREE" hook install gemini --user
t_match "installed decree's claude-code hooks in '$SCRATCH/cfg/settings.json'*" \
	"--user: claude-code follows CLAUDE_CONFIG_DIR" env CLAUDE_CONFIG_DIR="$SCRATCH/cfg" "$DECREE" hook install claude --user
t_match "installed decree's gemini hooks in '$SCRATCH/gh/.gemini/settings.json'*" \
	"--user: gemini follows GEMINI_CLI_HOME" env GEMINI_CLI_HOME="$SCRATCH/gh" "$DECREE" hook install gemini --user
t "--user --json" "$DECREE" hook install codex --user --json
py "... scope user" 'd = json.loads(sys.argv[1]); assert d["scope"] == "user" and not d["changed"], d' "$OUT"
t_err "*codex runs these hooks only once you trust them in codex*" \
	"--user codex: the note on hook trust (no project trust needed)" 0 "$DECREE" hook install codex --user
t_err "*codex runs these hooks only in a trusted project*" \
	"project codex: the note on project and hook trust" 0 "$DECREE" hook install codex
[ ! -e "$P/.claude" ] && ok "--user writes nothing into the project" || not_ok "--user writes nothing into the project" ""
t_err "*HOME*" "--user without HOME: an error" 1 env -u HOME "$DECREE" hook install claude --user
cd "$SCRATCH" || exit 1

# --- files decree refuses to edit ---------------------------------------------------
P=$SCRATCH/bad && mkdir -p "$P/.claude" "$P/.gemini" "$P/.codex"
bad() { # NAME CONTENT AGENT FILE STDERR-GLOB
	printf '%s' "$2" >"$P/$4"
	local s
	s=$(sha "$P/$4")
	t_err "$5" "$1: exit 1 naming the file" 1 "$DECREE" -C "$P" hook install "$3"
	same_file "$1: the file is unchanged" "$P/$4" "$s"
	t_err "$5" "$1: uninstall refuses too" 1 "$DECREE" -C "$P" hook uninstall "$3"
	same_file "$1: ... unchanged" "$P/$4" "$s"
}
bad "invalid JSON" '{"model": "opus",' claude-code .claude/settings.json \
	"*'$P/.claude/settings.json' is not valid JSON*"
bad "hooks not an object" '{"hooks": [{"x": 1}]}' codex .codex/hooks.json \
	"*'$P/.codex/hooks.json': \"hooks\" is not an object*"
bad "top level not an object" '["hooks"]' claude-code .claude/settings.json \
	"*'$P/.claude/settings.json' is not a JSON object*"
bad "comments (Gemini accepts them; decree would lose them)" $'// mine\n{"hooks": {}}' gemini .gemini/settings.json \
	"*'$P/.gemini/settings.json' is not valid JSON*comments are not supported*"
printf '{"hooks": {"PreToolUse": {"matcher": "*"}}}' >"$P/.claude/settings.json"
s=$(sha "$P/.claude/settings.json")
t_err "*'$P/.claude/settings.json': \"hooks\".\"PreToolUse\" is not an array*" \
	"an event that is not an array: exit 1" 1 "$DECREE" -C "$P" hook install claude-code
same_file "... the file is unchanged" "$P/.claude/settings.json" "$s"
printf '' >"$P/.claude/settings.json"
t "an empty settings file is taken as {}" "$DECREE" -C "$P" hook install claude-code
P=$SCRATCH/notdir && mkdir -p "$P" && printf 'x' >"$P/.claude"
t_err "*cannot install*'$P/.claude' is not a directory*" "a file where .claude/ should be: exit 1" 1 \
	"$DECREE" -C "$P" hook install claude
# unwritable directories: as root, without the capabilities that let
# root write anywhere
NOPRIV=()
[ "$(id -u)" = 0 ] && NOPRIV=(setpriv --bounding-set=-dac_override,-dac_read_search)
P=$SCRATCH/ro && mkdir -p "$P" && chmod 555 "$P"
t_err "*cannot install*'$P/.gemini*Permission denied*" "a read-only project: exit 1, a clean error" 1 \
	"${NOPRIV[@]}" "$DECREE" -C "$P" hook install gemini
[ ! -e "$P/.gemini" ] && ok "... nothing created" || not_ok "... nothing created" ""
P=$SCRATCH/ro2 && mkdir -p "$P/.gemini" && printf '{}' >"$P/.gemini/settings.json" && chmod 555 "$P/.gemini"
t_err "*cannot install*Permission denied*" "a read-only .gemini/: exit 1" 1 \
	"${NOPRIV[@]}" "$DECREE" -C "$P" hook install gemini
[ "$(cat "$P/.gemini/settings.json")" = '{}' ] && [ "$(ls -A "$P/.gemini")" = settings.json ] &&
	ok "... file unchanged, no temp file left" || not_ok "... file unchanged" "$(ls -A "$P/.gemini")"
chmod 755 "$SCRATCH/ro" "$P/.gemini"

# --- usage ------------------------------------------------------------------------------
t_err "*unknown agent 'cline'*" "install: unknown agent is a usage error" 2 "$DECREE" hook install cline
t_err "*usage: decree hook install AGENT*" "install: no agent" 2 "$DECREE" hook install
t_err "*unknown option '--global'*" "install: unknown option" 2 "$DECREE" hook install claude --global
t_err "*usage: decree hook status*" "status takes no argument" 2 "$DECREE" hook status claude
t_match "usage: decree hook install AGENT*hook log*" "--help" "$DECREE" hook --help
t_match "*hook *agents*" "decree --help lists hook" "$DECREE" --help

# --- status --------------------------------------------------------------------------------
P=$SCRATCH/stat && mkdir -p "$P" && cd "$P" || exit 1
export HOME=$SCRATCH/home2
mkdir -p "$HOME"
t "status in a project with nothing installed" "$DECREE" hook status --json
py "status --json: every agent and scope, nothing installed, no store, no error" '
d = json.loads(sys.argv[1]); P = sys.argv[2]; H = sys.argv[3]
assert d["root"] == P, d["root"]
assert d["store"] == {"path": P + "/.decree/store", "exists": False, "bytes": 0}, d["store"]
assert [(h["agent"], h["scope"]) for h in d["hooks"]] == [(a, s) for a in ("claude-code", "codex", "gemini") for s in ("project", "user")]
files = {("claude-code", "project"): P + "/.claude/settings.json", ("claude-code", "user"): H + "/.claude/settings.json",
         ("codex", "project"): P + "/.codex/hooks.json", ("codex", "user"): H + "/.codex/hooks.json",
         ("gemini", "project"): P + "/.gemini/settings.json", ("gemini", "user"): H + "/.gemini/settings.json"}
for h in d["hooks"]:
    assert h["file"] == files[(h["agent"], h["scope"])], h
    assert not h["exists"] and not h["installed"] and h["events"] == [] and h["error"] is None, h
assert d["last_error"] is None and "sessions" in d, d' "$OUT" "$P" "$HOME"
t_match "project: '$P'*not installed*" "status (text) before" "$DECREE" hook status
before=$OUT
"$DECREE" hook install claude >/dev/null 2>&1
"$DECREE" hook install gemini --user >/dev/null 2>&1
mkdir -p "$P/.codex" && printf '{"hooks": [' >"$P/.codex/hooks.json"
t "status after installing" "$DECREE" hook status --json
py "status --json after: claude project and gemini user installed, codex project an error" '
d = json.loads(sys.argv[1]); prog = sys.argv[2]
h = {(x["agent"], x["scope"]): x for x in d["hooks"]}
c = h[("claude-code", "project")]
assert c["installed"] and c["exists"] and c["events"] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "WorktreeCreate", "WorktreeRemove"], c
assert c["programs"] == [{"path": prog, "exists": True}] and not c["disabled"], c
g = h[("gemini", "user")]
assert g["installed"] and g["events"] == ["BeforeAgent", "BeforeTool", "AfterTool"], g
x = h[("codex", "project")]
assert not x["installed"] and "is not valid JSON" in x["error"], x
assert not h[("codex", "user")]["installed"]' "$OUT" "$PROG"
t_match "*claude-code  project  installed (UserPromptSubmit, PreToolUse, PostToolUse, WorktreeCreate, WorktreeRemove) in '$P/.claude/settings.json'*gemini       user     installed*" \
	"status (text) after" "$DECREE" hook status
[ "$before" != "$OUT" ] && ok "status changed with the installs" || not_ok "status changed" ""
rm "$P/.codex/hooks.json"

# a decree binary that is gone, and a partial install
python3 -c '
import json, sys
p = sys.argv[1]; d = json.load(open(p))
for ev in d["hooks"].values():
    for g in ev:
        for h in g["hooks"]:
            h["command"] = h["command"].replace(sys.argv[2], "/gone/decree")
del d["hooks"]["PostToolUse"]
json.dump(d, open(p, "w"))' "$P/.claude/settings.json" "$PROG"
t_match "*partly installed (UserPromptSubmit, PreToolUse, WorktreeCreate, WorktreeRemove)*its decree '/gone/decree' does not exist*" \
	"status: a partial install and a missing decree binary" "$DECREE" hook status
t_match "updated decree's claude-code hooks*" "install repairs it" "$DECREE" hook install claude

# the last hook error of this project, and the store's size
echo '{}' | "$DECREE" hook cline PreToolUse
t "status after a failed hook call" "$DECREE" hook status --json
py "status --json: last_error is this project's, from the fallback log" '
d = json.loads(sys.argv[1])
e = d["last_error"]
assert e["agent"] == "cline" and e["event"] == "PreToolUse" and e["message"] == "unknown agent \x27cline\x27", e
assert e["at"].endswith("Z") and e["at"][4] == "-", e' "$OUT"
t_match "*last hook error: *cline PreToolUse $P: unknown agent 'cline'*" "status (text): the last hook error" \
	"$DECREE" hook status
t "a checkpoint makes the store" "$DECREE" checkpoint create -m one
t "status with a store" "$DECREE" hook status --json
py "status --json: the store exists and its size is the bytes of its files" '
import os
d = json.loads(sys.argv[1])["store"]
total = 0
for dp, dn, fn in os.walk(d["path"]):
    for f in fn:
        p = os.path.join(dp, f)
        if os.path.isfile(p) and not os.path.islink(p):
            total += os.lstat(p).st_size
assert d["exists"] and d["bytes"] == total and total > 0, (d, total)' "$OUT"
echo '{}' | CLAUDE_PROJECT_DIR=$P "$DECREE" hook claude-code Nonsense
t_match "*last hook error: *claude-code Nonsense $P: claude-code has no event 'Nonsense'*" \
	"a hook error with a store goes to the store's log, and status shows it" "$DECREE" hook status
grep -q "claude-code Nonsense" "$P/.decree/store/hooks.log" && ok "... it is in <store>/hooks.log" ||
	not_ok "... it is in <store>/hooks.log" "$(ls "$P/.decree/store")"
cd "$SCRATCH" || exit 1

# --- the command the agents run ---------------------------------------------------------
P=$SCRATCH/run && mkdir -p "$P" && cd "$P" || exit 1
hook_ok() { # NAME STDIN-FILE ARGS...: exit 0, nothing on stdout
	local name=$1 in=$2
	shift 2
	"$DECREE" hook "$@" <"$in" >"$SCRATCH/.hout" 2>"$SCRATCH/.herr"
	local rc=$?
	if [ $rc -eq 0 ] && [ ! -s "$SCRATCH/.hout" ]; then ok "$name"; else
		not_ok "$name" "exit $rc; stdout: $(head -c 300 "$SCRATCH/.hout"); stderr: $(head -c 300 "$SCRATCH/.herr")"; fi
}
head -c 5000 /dev/urandom >"$SCRATCH/garbage"
printf '{"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": "%s", "tool_name": "Write", "tool_input": {"file_path": "%s/x"}}' "$P" "$P" >"$SCRATCH/payload"
: >"$SCRATCH/empty"
hook_ok "hook: garbage on stdin: exit 0, nothing on stdout" "$SCRATCH/garbage" claude-code PreToolUse
hook_ok "hook: a payload: exit 0, nothing on stdout" "$SCRATCH/payload" claude-code PreToolUse
hook_ok "hook: the prompt event: exit 0, nothing on stdout" "$SCRATCH/payload" claude-code UserPromptSubmit
hook_ok "hook: empty stdin" "$SCRATCH/empty" gemini AfterTool
hook_ok "hook: unknown agent: exit 0" "$SCRATCH/payload" cline PreToolUse
hook_ok "hook: unknown event: exit 0" "$SCRATCH/payload" codex AfterTool
hook_ok "hook: no arguments, not on a terminal: exit 0" "$SCRATCH/payload"
hook_ok "hook: too many arguments, not on a terminal: exit 0" "$SCRATCH/payload" codex PreToolUse extra
hook_ok "hook: --json and -q change nothing" "$SCRATCH/payload" codex PreToolUse --json -q
"$DECREE" hook codex PreToolUse <&- >"$SCRATCH/.hout" 2>&1
[ $? -eq 0 ] && [ ! -s "$SCRATCH/.hout" ] && ok "hook: closed stdin: exit 0, no output" ||
	not_ok "hook: closed stdin" "$(cat "$SCRATCH/.hout")"
"$DECREE" hook codex PreToolUse <"$SCRATCH/payload" >&- 2>"$SCRATCH/.herr"
[ $? -eq 0 ] && ok "hook: closed stdout: exit 0" || not_ok "hook: closed stdout" "$(cat "$SCRATCH/.herr")"
# the hooks above made a store in $P (their payloads were handled): from
# then on a hook logs to <store>/hooks.log, before to the fallback log
hooklogs() { cat "$FALLBACK_LOG" "$P/.decree/store/hooks.log" 2>/dev/null; }
head -c $((33 << 20)) /dev/zero >"$SCRATCH/huge"
hook_ok "hook: a payload over 32 MiB: exit 0" "$SCRATCH/huge" claude-code PostToolUse
hooklogs | grep -q "claude-code PostToolUse $P: payload over 32 MiB" && ok "... logged" ||
	not_ok "... logged" "$(hooklogs | tail -3)"
hooklogs | grep -q "cline PreToolUse $P: unknown agent 'cline'" &&
	hooklogs | grep -q "codex AfterTool $P: codex has no event 'AfterTool' decree handles" &&
	hooklogs | grep -q "codex PreToolUse $P: usage: decree hook AGENT EVENT" &&
	ok "hook: unknown agent, event and wrong arguments are in the hook log" ||
	not_ok "hook: errors logged" "$(hooklogs)"
rm -f "$SCRATCH/huge"

# a stdin that never ends: the alarm stops the hook within its budget
exec 3< <(sleep 20)
start=$(date +%s%N)
DECREE_HOOK_BUDGET=1 "$DECREE" hook codex PreToolUse <&3 >"$SCRATCH/.hout" 2>&1
rc=$? ms=$((($(date +%s%N) - start) / 1000000))
exec 3<&-
[ $rc -eq 0 ] && [ $ms -lt 5000 ] && [ ! -s "$SCRATCH/.hout" ] && ok "hook: a stdin that never ends: exit 0 after the budget (${ms} ms)" ||
	not_ok "hook: budget" "exit $rc after $ms ms: $(cat "$SCRATCH/.hout")"
hooklogs | grep -q "codex PreToolUse $P: did not finish within 1 s" && ok "... and one line in the hook log" ||
	not_ok "... logged" "$(hooklogs | tail -2)"

# on a terminal, a person gets the usage error
if script -qec true /dev/null >/dev/null 2>&1; then
	script -qec "'$DECREE' hook claude-code" /dev/null >"$SCRATCH/.tty" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -q "usage: decree hook AGENT EVENT" "$SCRATCH/.tty" &&
		ok "hook: wrong arguments on a terminal: usage error (exit 2)" ||
		not_ok "hook: on a terminal" "exit $rc: $(cat "$SCRATCH/.tty")"
else
	ok "hook: wrong arguments on a terminal # SKIP no script(1)"
fi

# --- which paths a hook journals (the cases fuzz/fuzz_hook.c found) -----------------------
P=$SCRATCH/paths && mkdir -p "$P/sub" && cd "$P" || exit 1
printf 'alpha\n' >a.txt
journaled() { # NAME AGENT SESSION PAYLOAD WANT: a turn, then the post-tool call; its files are WANT
	local name=$1 agent=$2 session=$3 payload=$4 want=$5
	printf '{"session_id":"%s","cwd":"%s","prompt":"go"}' "$session" "$P" |
		"$DECREE" hook "$agent" UserPromptSubmit >/dev/null 2>&1
	printf '%s' "$payload" | "$DECREE" hook "$agent" PostToolUse >/dev/null 2>&1
	_run "$DECREE" --json rewind --session "$session"
	py "$name" 'd = json.loads(sys.argv[1]); assert d["turns"][-1]["files"] == sys.argv[2].split(), (d["turns"][-1], sys.argv[2])' \
		"$OUT" "$want"
}
long=$(printf 'x%.0s' $(seq 300))
printf 'alpha\nbeta\n' >a.txt
journaled "a name past NAME_MAX does not cost the other paths of the call their record" codex paths-1 \
	'{"session_id":"paths-1","cwd":"'"$P"'","tool_name":"apply_patch","tool_input":{"command":"*** Update File: '"$long"'\n*** Update File: a.txt\n"}}' \
	"a.txt $long"
ln -s a.txt file-link
journaled "a path through a file (or a symlink to one) names nothing: not journaled" claude-code paths-2 \
	'{"session_id":"paths-2","cwd":"'"$P"'","tool_name":"Write","tool_input":{"file_path":"file-link/x"}}' ""
journaled "... nor through a file named as it is" claude-code paths-2 \
	'{"session_id":"paths-2","cwd":"'"$P"'","tool_name":"Write","tool_input":{"file_path":"'"$P"'/a.txt/x"}}' ""
far=$(printf 'sub/../%.0s' $(seq 1400))
journaled "a path past 8 KiB is journaled whole (not cut short into another name)" claude-code paths-3 \
	'{"session_id":"paths-3","cwd":"'"$P"'","tool_name":"Edit","tool_input":{"file_path":"'"$P/${far}a.txt"'"}}' "a.txt"
# an agent directory past PATH_MAX whose first 4095 bytes name sub/, not sub/deep/
mkdir -p sub/deep
dir=$P/sub
while [ $(( ${#dir} + 15 )) -lt 4095 ]; do dir=$dir/.; done
[ $(( (4095 - 8 - ${#dir}) % 2 )) -eq 1 ] && dir=$dir/
while [ ${#dir} -lt $((4095 - 8)) ]; do dir=$dir/.; done
dir=$dir/deep/../deep
printf '{"session_id":"paths-4","cwd":"%s","prompt":"go"}' "$P" | "$DECREE" hook claude-code UserPromptSubmit
printf '{"session_id":"paths-4","tool_name":"Write","tool_input":{"file_path":"c.txt"}}' |
	CLAUDE_PROJECT_DIR=$dir "$DECREE" hook claude-code PostToolUse
_run "$DECREE" --json rewind --session paths-4
py "an agent directory past PATH_MAX is not cut short into another one: nothing journaled" \
	'd = json.loads(sys.argv[1]); assert d["turns"][-1]["files"] == [], d["turns"][-1]' "$OUT"
hooklogs | grep -q "claude-code PostToolUse .*: the agent's directory is longer than 4095 bytes" &&
	ok "... and the hook log says why" || not_ok "... and the hook log says why" "$(hooklogs | tail -2)"

done_testing
