# tests/agents/lib.sh - helpers of the end-to-end tests of decree's agent
# hooks with the real agent CLIs (tests/agents/e2e.sh, docs/testing.md).
#
# The agents (Claude Code, Codex CLI, Gemini CLI, pinned npm versions) run
# offline against the scripted fake model servers of shared/agents (its
# README): run_agent.py starts a fake server, runs one agent turn in a
# project with a private HOME, and the agent fires the hooks the project's
# settings name, here the ones `decree hook install` wrote.
#
# Source it from a test script after setting nothing; it sources
# tests/cli/lib.sh (ok, not_ok, same, check, tree_state, $SCRATCH, ...) and
# adds:
#
#   agents_setup NAME     NAME: claude, codex or gemini.  Skips the whole
#                         script (one "ok 1 # SKIP reason", exit 0) when
#                         node/npm or shared/agents is missing, or the
#                         agents are not installed and the npm registry
#                         cannot be reached; installs them otherwise.
#                         DECREE_AGENTS_REQUIRED=1 (default under CI=true) turns a skip into a
#                         failure.  Sets AGENT (decree's name), PROMPT_EV,
#                         PRE_EV, POST_EV, TURN_KEY, SETTINGS, ART.
#   seed SCENARIO DIR     write the scenario's "seed" files into DIR
#   register_hooklog DIR LOG   add shared/agents/hooklog.py for every event
#                         of the agent to DIR's hook settings (beside
#                         decree's entries), appending each payload to LOG
#   agent_turn NAME DIR WORK SCENARIO PROMPT [--continue]
#                         one agent turn in DIR with the hooks it has
#                         (run_agent.py --no-hooks), decree's build first in
#                         PATH; ok NAME if the agent exited 0 and went
#                         through the whole script; sets SECS
#   scenario_files NAME SCENARIO DIR   ok if DIR holds the scenario's
#                         "expect" files and none of its "absent" ones
#   dj FILE NAME ARGS...  run "$DECREE --json ARGS" in the current dir; its
#                         stdout is kept as $ART/FILE.json (path in $J); ok
#                         NAME if it exited 0
#   after_dj FUNC NAME ARGS...   FUNC NAME ARGS (same, scenario_files...)
#                         if the last dj succeeded, else not ok NAME: a
#                         check of what a failed command did proves nothing
#   jx FILE EXPR          the value of a Python expression over the JSON
#                         document d of FILE (re imported), as JSON; on any
#                         error "ERROR ..." (so the comparison fails)
#   schemas_valid NAME FILE=SCHEMA...   ok NAME if each $ART/FILE.json
#                         validates against docs/schema/SCHEMA.schema.json
#   js ARGS...            the arguments as a JSON list of strings
#   hv LOG EVENT FIELD    JSON list of the payloads' FIELD for every EVENT
#                         in a hook log (hooklog.py)
#   stat_state DIR FILE...   "path inode mtime" of each file
#   sanitizer_reports NAME    ok NAME if no hook run left a sanitizer
#                         report (log_path files in $ART)
set -u
: "${DECREE_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
. "$DECREE_TOP/tests/cli/lib.sh"
unset DECREE_STORE
export PYTHONDONTWRITEBYTECODE=1 # shared/agents is read-only in CI

AGENTS_SHARED=${DECREE_AGENTS_SHARED:-$DECREE_TOP/../shared/agents}
AGENTS_PREFIX=${DECREE_AGENTS_PREFIX:-$HOME/.cache/decree-agents}
SCENARIOS=$DECREE_TOP/tests/agents/scenarios

# CI (CI=true, as .ci/run runs) reaches the npm registry: there the agent
# suites must run, never skip
[ "${CI:-}" = true ] && : "${DECREE_AGENTS_REQUIRED:=1}"
skip_all() {
	if [ "${DECREE_AGENTS_REQUIRED:-0}" = 1 ]; then
		echo "not ok 1 - the agent tests are required (CI=true or DECREE_AGENTS_REQUIRED=1) but: $1"
		echo "1..1"
		exit 1
	fi
	echo "ok 1 # SKIP $1"
	echo "1..1"
	exit 0
}

# The pinned versions are the ones install.sh installs: "CLAUDE=x CODEX=y
# GEMINI=z".  Installed = each package.json says so and each CLI exists
# (running the CLIs to ask takes ~10 s: Gemini's --version is slow), and
# claude runs (its native binary is linked by a postinstall step).
agents_installed() {
	python3 - "$AGENTS_SHARED/install.sh" "$AGENTS_PREFIX" <<'EOF'
import json, os, re, sys
pins = dict(re.findall(r"\b(CLAUDE|CODEX|GEMINI)=(\S+)", open(sys.argv[1]).read()))
pkgs = {"CLAUDE": ("@anthropic-ai/claude-code", "claude"), "CODEX": ("@openai/codex", "codex"),
        "GEMINI": ("@google/gemini-cli", "gemini")}
nm = os.path.join(sys.argv[2], "node_modules")
for k, (pkg, exe) in pkgs.items():
    try:
        v = json.load(open(os.path.join(nm, pkg, "package.json")))["version"]
    except (OSError, ValueError, KeyError):
        sys.exit(1)
    if k not in pins or v != pins[k] or not os.access(os.path.join(nm, ".bin", exe), os.X_OK):
        sys.exit(1)
EOF
	[ $? -eq 0 ] && "$AGENTS_PREFIX/node_modules/.bin/claude" --version >/dev/null 2>&1
}

agents_setup() {
	A=$1
	case $A in
	claude) AGENT=claude-code PROMPT_EV=UserPromptSubmit PRE_EV=PreToolUse POST_EV=PostToolUse
		TURN_KEY=prompt_id SETTINGS=.claude/settings.json ;;
	codex) AGENT=codex PROMPT_EV=UserPromptSubmit PRE_EV=PreToolUse POST_EV=PostToolUse
		TURN_KEY=turn_id SETTINGS=.codex/hooks.json ;;
	gemini) AGENT=gemini PROMPT_EV=BeforeAgent PRE_EV=BeforeTool POST_EV=AfterTool
		TURN_KEY= SETTINGS=.gemini/settings.json ;; # Gemini's payloads have no turn id
	*) echo "agents_setup: unknown agent '$A'" >&2; exit 2 ;;
	esac
	ART=${DECREE_BUILD:-$(dirname "$DECREE")}/test-logs/agents-$A
	rm -rf "$ART"
	mkdir -p "$ART"
	echo "# artifacts (hook payload logs, agent output, decree's JSON): $ART"

	for c in python3 node npm; do
		command -v "$c" >/dev/null 2>&1 ||
			skip_all "$c is not installed (scripts/deps.sh installs nodejs npm)"
	done
	# Gemini CLI needs node >= 20, Codex >= 16; Claude Code is a native binary
	local need=16 major
	[ "$A" = gemini ] && need=20
	major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
	[ "${major:-0}" -ge $need ] 2>/dev/null ||
		skip_all "$A needs node >= $need, this is node $(node --version 2>&1)"
	[ -f "$AGENTS_SHARED/run_agent.py" ] && [ -f "$AGENTS_SHARED/install.sh" ] ||
		skip_all "no agent harness at $AGENTS_SHARED (shared/agents beside the repository; DECREE_AGENTS_SHARED)"
	if ! agents_installed; then
		if ! timeout 40 npm ping --fetch-retries=0 --fetch-timeout=20000 >"$ART/npm-ping.log" 2>&1; then
			skip_all "the agents are not installed in $AGENTS_PREFIX and the npm registry is unreachable (npm ping: $(grep -m 1 -E 'error (code|network|request)' "$ART/npm-ping.log" || tail -n 1 "$ART/npm-ping.log"))"
		fi
		mkdir -p "$AGENTS_PREFIX"
		# one installer at a time per prefix (parallel runs, other checkouts)
		if command -v flock >/dev/null 2>&1; then
			flock "$AGENTS_PREFIX/.install-lock" sh "$AGENTS_SHARED/install.sh" "$AGENTS_PREFIX" \
				>"$ART/install.log" 2>&1
		else
			sh "$AGENTS_SHARED/install.sh" "$AGENTS_PREFIX" >"$ART/install.log" 2>&1
		fi
		rc=$?
		if [ $rc -ne 0 ] || ! agents_installed; then
			not_ok "install the agents into $AGENTS_PREFIX" "install.sh exited $rc: $(tail -n 5 "$ART/install.log")"
			done_testing
			exit 1
		fi
		ok "install the agents into $AGENTS_PREFIX"
	fi
	# decree's own build comes first in the PATH the agent and its hooks see
	mkdir -p "$SCRATCH/bin"
	ln -sf "$DECREE" "$SCRATCH/bin/decree"
	# a sanitizer report inside a hook would go to the agent, which hides
	# it: send it to a file instead (sanitizer_reports checks there are none)
	HOOK_ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:log_path=$ART/sanitizer"
	HOOK_UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}:log_path=$ART/sanitizer"
	AGENT_SECS=""
}

seed() {
	python3 - "$1" "$2" <<'EOF'
import json, os, sys
for rel, text in json.load(open(sys.argv[1])).get("seed", {}).items():
    p = os.path.join(sys.argv[2], rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
EOF
}

# run_agent.py's own code writes the entries (merged into the file decree
# wrote), so the log sees exactly the events run_agent registers.
register_hooklog() {
	python3 - "$AGENTS_SHARED" "$A" "$1" "$2" <<'EOF'
import shlex, sys
shared, agent, project, log = sys.argv[1:]
sys.path.insert(0, shared)
import run_agent
cmd = "python3 %s %s {event}" % (shlex.quote(shared + "/hooklog.py"), shlex.quote(log))
run_agent.write_hooks(agent, project, cmd, run_agent.EVENTS[agent])
EOF
}

agent_turn() {
	local name=$1 dir=$2 work=$3 scenario=$4 prompt=$5 start rc
	shift 5
	start=$(date +%s.%N)
	PATH="$SCRATCH/bin:$PATH" ASAN_OPTIONS=$HOOK_ASAN_OPTIONS UBSAN_OPTIONS=$HOOK_UBSAN_OPTIONS \
		python3 "$AGENTS_SHARED/run_agent.py" --agent "$A" --project "$dir" --script "$scenario" \
		--no-hooks --keep "$work" --npm-prefix "$AGENTS_PREFIX" --timeout 100 \
		--prompt "$prompt" "$@" >"$work.log" 2>&1
	rc=$?
	SECS=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	AGENT_SECS="$AGENT_SECS ${SECS}s"
	# what the agent and the fake server said, for the artifacts
	local base
	base=$ART/$(basename "$work")-$(basename "$scenario" .json)
	for f in agent.out agent.err server.log; do
		[ -f "$work/$f" ] && cp "$work/$f" "$base.$f"
	done
	cp "$work.log" "$base.run_agent.log"
	if [ $rc -eq 0 ]; then
		ok "$name (${SECS}s)"
	else
		not_ok "$name (${SECS}s)" "run_agent.py exited $rc: $(tail -c 800 "$work.log")"
	fi
	return $rc
}

scenario_files() {
	local why
	why=$(python3 - "$2" "$3" <<'EOF'
import json, os, sys
sc = json.load(open(sys.argv[1]))
errs = []
for rel, want in sc.get("expect", {}).items():
    try:
        got = open(os.path.join(sys.argv[2], rel)).read()
    except OSError:
        got = None
    if got != want:
        errs.append("%s is %r, want %r" % (rel, got, want))
for rel in sc.get("absent", []):
    if os.path.lexists(os.path.join(sys.argv[2], rel)):
        errs.append("%s should not exist" % rel)
print("\n".join(errs))
EOF
)
	if [ -z "$why" ]; then ok "$1"; else not_ok "$1" "$why"; fi
}

dj() {
	local file=$ART/$1.json name=$2
	shift 2
	"$DECREE" --json "$@" >"$file" 2>"$ART/$1.err"
	RC=$?
	J=$file DJ_RC=$RC
	if [ $RC -eq 0 ]; then
		ok "$name"
	else
		not_ok "$name" "decree $* exited $RC: $(head -c 600 "$ART/$1.err") $(head -c 400 "$file")"
	fi
}

after_dj() {
	local f=$1
	shift
	if [ "${DJ_RC:-1}" -eq 0 ]; then "$f" "$@"; else not_ok "$1" "not checked: the decree command before it failed"; fi
}

jx() {
	python3 - "$1" "$2" <<'EOF' 2>&1
import json, re, sys
try:
    with open(sys.argv[1]) as f:
        d = json.load(f)
    print(json.dumps(eval(sys.argv[2], {"d": d, "re": re}), sort_keys=True))
except Exception as e:
    print("ERROR %s: %s" % (type(e).__name__, str(e)[:300]))
EOF
}

schemas_valid() {
	local name=$1 why
	shift
	# Debian's python3-jsonschema (scripts/deps.sh), as tests/cli/json_schema.sh
	why=$(/usr/bin/python3 - "$ART" "$DECREE_TOP/docs/schema" "$@" <<'EOF' 2>&1
import json, sys
try:
    from jsonschema import Draft202012Validator
except ImportError:
    print("python3-jsonschema is not installed under /usr/bin/python3 (scripts/deps.sh)")
    sys.exit()
art, schemas = sys.argv[1:3]
for pair in sys.argv[3:]:
    f, s = pair.split("=")
    try:
        with open("%s/%s.json" % (art, f)) as fd:
            doc = json.load(fd)
        with open("%s/%s.schema.json" % (schemas, s)) as fd:
            v = Draft202012Validator(json.load(fd))
        for e in v.iter_errors(doc):
            print("%s.json (%s): %s at %s" % (f, s, e.message[:300], list(e.absolute_path)))
    except (OSError, ValueError) as e:
        print("%s.json (%s): %s" % (f, s, e))
EOF
)
	if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}

js() {
	python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"
}

hv() {
	python3 - "$1" "$2" "$3" <<'EOF' 2>&1
import json, sys
log, event, field = sys.argv[1:]
try:
    recs = [json.loads(l) for l in open(log) if l.strip()]
except (OSError, ValueError) as e:
    recs = []
print(json.dumps([r["stdin"].get(field) if isinstance(r["stdin"], dict) else None
                  for r in recs if r["event"] == event]))
EOF
}

stat_state() {
	local dir=$1 f
	shift
	for f in "$@"; do
		printf '%s %s\n' "$f" "$(stat -c '%i %y' "$dir/$f" 2>&1)"
	done
}

sanitizer_reports() {
	local reports
	reports=$(ls "$ART"/sanitizer.* 2>/dev/null)
	if [ -z "$reports" ]; then
		ok "$1"
	else
		not_ok "$1" "$(for r in $reports; do echo "== $r"; head -n 30 "$r"; done)"
	fi
}
