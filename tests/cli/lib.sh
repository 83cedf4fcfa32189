# tests/cli/lib.sh - helpers for black-box TAP tests of the decree program.
# Source it from a test script; it creates a scratch directory ($SCRATCH),
# removed at exit unless DECREE_TEST_PRESERVE=1.
#
#   t "name" cmd...            run cmd; ok if exit 0
#   t_exit N "name" cmd...     ok if exit status is N
#   t_out "expected" "name" cmd...    ok if stdout equals expected exactly
#   t_match 'glob' "name" cmd...      ok if stdout matches the shell glob
#   t_err 'glob' "name" N cmd...      ok if exit N and stderr matches glob
#   ok "name" / not_ok "name" "why"   raw results
#   done_testing                      print the plan; exit 1 if any failed
# After each t*, $OUT and $ERR hold the command's stdout and stderr, $RC its status.
set -u
: "${DECREE:?DECREE must point to the decree binary}"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/decree-test.XXXXXX")
if [ "${DECREE_TEST_PRESERVE:-0}" = 1 ]; then
	echo "# scratch kept in $SCRATCH"
else
	trap 'rm -rf "$SCRATCH"' EXIT
fi
_n=0
_failed=0
OUT= ERR= RC=0

ok() { _n=$((_n + 1)); echo "ok $_n - $1"; }
not_ok() {
	_n=$((_n + 1)); _failed=$((_failed + 1))
	echo "not ok $_n - $1"
	[ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/#   /'
	return 0
}
_run() {
	"$@" >"$SCRATCH/.out" 2>"$SCRATCH/.err"
	RC=$?
	OUT=$(cat "$SCRATCH/.out")
	ERR=$(cat "$SCRATCH/.err")
}
t() { name=$1; shift; _run "$@"; if [ $RC -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $RC; stderr: $ERR"; fi; }
t_exit() { want=$1 name=$2; shift 2; _run "$@"; if [ $RC -eq "$want" ]; then ok "$name"; else not_ok "$name" "exit $RC, wanted $want; stderr: $ERR"; fi; }
t_out() { want=$1 name=$2; shift 2; _run "$@"; if [ $RC -eq 0 ] && [ "$OUT" = "$want" ]; then ok "$name"; else not_ok "$name" "exit $RC; got: $OUT; wanted: $want; stderr: $ERR"; fi; }
t_match() { pat=$1 name=$2; shift 2; _run "$@"
	case "$OUT" in $pat) if [ $RC -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $RC; stderr: $ERR"; fi ;;
	*) not_ok "$name" "stdout did not match '$pat': $OUT" ;; esac; }
t_err() { pat=$1 name=$2 want=$3; shift 3; _run "$@"
	case "$ERR" in $pat) if [ $RC -eq "$want" ]; then ok "$name"; else not_ok "$name" "exit $RC, wanted $want; stderr: $ERR"; fi ;;
	*) not_ok "$name" "stderr did not match '$pat': $ERR (exit $RC)" ;; esac; }
done_testing() { echo "1..$_n"; [ $_failed -eq 0 ]; }

# A fingerprint of a tree (paths, modes, link targets, content hashes),
# ignoring .decree and .git, for before/after comparisons.
tree_state() {
	(cd "$1" && find . -path ./.decree -prune -o -name .git -prune -o \( -type f -o -type l \) -print |
		LC_ALL=C sort | while IFS= read -r f; do
			if [ -L "$f" ]; then printf 'L %s -> %s\n' "$f" "$(readlink "$f")"
			else printf 'F %s %s %s\n' "$f" "$(stat -c %a "$f")" "$(sha256sum <"$f" | cut -c1-64)"; fi
		done)
}

# --- helpers of the pipeline scripts (tests/cli/pipeline_*.sh) ----------------
D() { "$DECREE" "$@"; }
# same NAME GOT WANT: ok if equal, else the diff
same() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -40)"; fi
}
# check NAME CMD...: ok if CMD succeeds
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
# fm FILE KEY: a frontmatter value of a message file
fm() { sed -n '1{/^---$/!q};1d;/^---$/q;p' "$1" | sed -n "s/^$2: //p"; }
# body FILE: a message file without its frontmatter
body() { awk 'NR==1 && $0=="---" {f=1; next} f && $0=="---" {f=0; next} !f {print}' "$1"; }
