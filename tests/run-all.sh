#!/bin/sh
# Run every test suite and print one summary line the CI runner reads:
#   N passed, N failed
# Suites: the layering check of the built objects (tests/layers.sh),
# cmocka unit tests ($B/tests/test_*), black-box CLI scripts
# (tests/cli/*.sh), some of them again with the program linked against
# libdecree.so (cli-shared/*, DECREE=$B/decree-shared), the Python
# binding's pytest suite (python/pytest, tests/python.sh), and crash/fault
# scripts (tests/crash/*.sh), the sampled torture run
# (tests/torture/*.sh), the language packages (tests/bindings/*.sh: the
# Node package, suite bindings/node) and the end-to-end runs of the real agent CLIs
# with decree's hooks (tests/agents/e2e.sh, suites agents/AGENT); the
# scripts speak TAP ("ok N - ...",
# "not ok N - ...").  Logs go to $B/test-logs/.
# Usage: B=build/san sh tests/run-all.sh [suite-name-filter]
set -u
B=${B:-build}
filter=${1:-}
top=$(cd "$(dirname "$0")/.." && pwd)
export DECREE="$top/$B/decree" DECREE_TOP="$top" DECREE_BUILD="$top/$B"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
logs="$top/$B/test-logs"
mkdir -p "$logs"
passed=0 failed=0 failed_suites=""

count_cmocka() { # log -> "pass fail"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	echo "${p:-0} ${f:-0}"
}

count_pytest() { # its closing line: "N failed, N passed, N error in Ns"
	grep -E '^(=+ )?[0-9]+ (passed|failed|errors?|skipped|deselected)' "$1" |
		tail -1 | tr -d ',=' | awk '{
		for (i = 2; i <= NF; i++) {
			if ($i == "passed") p = $(i - 1)
			if ($i == "failed") f = $(i - 1)
			if ($i == "error" || $i == "errors") e = $(i - 1)
		}
	} END { print p + 0, f + e }'
}

count_tap() {
	p=$(grep -c '^ok ' "$1")
	f=$(grep -c '^not ok ' "$1")
	echo "$p $f"
}

run_suite() { # name kind command...
	name=$1 kind=$2
	shift 2
	case "$name" in *"$filter"*) ;; *) return ;; esac
	log="$logs/$(echo "$name" | tr / _).log"
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	case $kind in
	cmocka) set -- $(count_cmocka "$log") ;;
	pytest) set -- $(count_pytest "$log") ;;
	*) set -- $(count_tap "$log") ;;
	esac
	p=$1 f=$2
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # crashed or exited badly
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi # ran nothing: a failure
	passed=$((passed + p))
	failed=$((failed + f))
	end=$(date +%s)
	if [ "$f" -ne 0 ]; then
		failed_suites="$failed_suites $name"
		printf '%-28s FAIL  %4d passed %4d failed  (%ss)  log: %s\n' "$name" "$p" "$f" $((end - start)) "$log"
		grep -E '^not ok|FAILED|ERROR|runtime error|Sanitizer' "$log" | head -20 | sed 's/^/    /'
	else
		printf '%-28s ok    %4d passed             (%ss)\n' "$name" "$p" $((end - start))
	fi
}

run_suite lint/layers tap bash "$top/tests/layers.sh"
for t in "$top/$B"/tests/test_*; do
	[ -x "$t" ] || continue
	run_suite "unit/$(basename "$t")" cmocka "$t"
done
for t in "$top/$B"/fuzz/*-replay; do
	[ -x "$t" ] || continue
	n=$(basename "$t" -replay)
	run_suite "fuzz/${n#fuzz_}" tap "$t" "$top/fuzz/corpus/${n#fuzz_}"
done
for t in "$top"/tests/cli/*.sh "$top"/tests/crash/*.sh; do
	[ -f "$t" ] || continue
	case "$(basename "$t")" in lib.sh) continue ;; esac
	run_suite "$(basename "$(dirname "$t")")/$(basename "$t" .sh)" tap bash "$t"
	case "$t" in */cli/lifecycle.sh | */cli/apply.sh | */cli/refs_and_errors.sh | */cli/embed.sh)
		# the shared library must serve the whole program: store,
		# checkpoints, restore, apply, the error messages and what an
		# embedding app calls (create_ext, delete)
		run_suite "cli-shared/$(basename "$t" .sh)" tap \
			env DECREE="$top/$B/decree-shared" bash "$t" ;;
	esac
done

# The language packages over libdecree.  Python (bindings/python): its
# pytest suite against this build's libdecree.so.
run_suite "python/pytest" pytest sh "$top/tests/python.sh"
# Node and the others (tests/bindings/*.sh): each is
# installed as a user installs it (npm install bindings/node builds
# build/libdecree.a without sanitizers and links it into the addon), then
# runs its own tests; one TAP line per test.
for t in "$top"/tests/bindings/*.sh; do
	[ -f "$t" ] || continue
	run_suite "bindings/$(basename "$t" .sh)" tap bash "$t"
done

# Decree's hooks in the real Claude Code, Codex and Gemini CLIs, driven
# offline by scripted fake models (tests/agents/lib.sh; each suite skips
# when the agents cannot be installed).  One after another: each agent
# run takes a few seconds of both cores.
for a in claude codex gemini; do
	run_suite "agents/$a" tap bash "$top/tests/agents/e2e.sh" "$a"
done
# claude --worktree answered with a decree workspace
run_suite "agents/claude-worktree" tap bash "$top/tests/agents/claude_worktree.sh"

# The sampled fault-injection run of every mutating command (a few points
# per syscall kind, random ones: the seed is in the log); `make torture`
# runs all of them.
for t in "$top"/tests/torture/*.sh; do
	[ -f "$t" ] || continue
	run_suite "torture/$(basename "$t" .sh)" tap \
		env TORTURE_BUDGET="${TORTURE_BUDGET:-2}" TORTURE_FAULTS="${TORTURE_FAULTS:-rotate}" bash "$t"
done

echo
[ -n "$failed_suites" ] && echo "failed suites:$failed_suites"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
