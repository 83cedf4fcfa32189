#!/bin/bash
# docs_commands.sh - every command the documentation shows runs.
# tests/docs/blocks.py reads each fenced block of README.md and
# docs/**/*.md: ```sh blocks run as scripts and ```console transcripts
# command by command (their output compared with the doc's), each in a
# sandbox of its own (a sample project in $HOME/app, decree on PATH, a
# fake `claude` that runs the installed hooks); usage synopses are
# checked against the commands' --help; a block that cannot run says so
# with a `<!-- docs-test: skip REASON -->` annotation, and a `decree`
# command in a block that is neither run nor annotated fails the suite.
# docs/testing.md ("Commands in the documentation") tells writers how to
# annotate.  The demo `make demo` runs (scripts/demo.sh) runs here too.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
top=${DECREE_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
decree=$(cd "$(dirname "$DECREE")" && pwd)/$(basename "$DECREE")

/usr/bin/python3 "$top/tests/docs/blocks.py" "$top" "$SCRATCH" "$decree" >"$SCRATCH/blocks.tap"
rc=$?
# renumber blocks.py's TAP into this script's
while IFS= read -r line; do
	case "$line" in
	"ok "*" # SKIP "*) _n=$((_n + 1)); echo "ok $_n ${line#ok * }" ;;
	"ok "*) ok "${line#ok * - }" ;;
	"not ok "*) not_ok "${line#not ok * - }" ;;
	1..*) ;;
	*) echo "$line" ;;
	esac
done <"$SCRATCH/blocks.tap"
[ "$rc" -eq 0 ] || [ "$_failed" -gt 0 ] || not_ok "tests/docs/blocks.py exited $rc"

# `make demo`: the README's first command, minus the package installation
# and the build this suite already has
t "scripts/demo.sh runs to the end" env -u DECREE_STORE HOME="$SCRATCH/demo-home" sh "$top/scripts/demo.sh" "$decree"
[ "$RC" -eq 0 ] || printf '%s\n' "$OUT" "$ERR" | tail -20 | sed 's/^/#   /'
done_testing
