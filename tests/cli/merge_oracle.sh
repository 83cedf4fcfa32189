#!/bin/bash
# merge_oracle.sh - decree's three-way text merge (src/lib/merge/merge3.c,
# driven through $DECREE_BUILD/tests/merge3-tool) held against
# `git merge-file -p` (the contract: docs/merge.md) and `diff3 -m`.
#
#   1. every fixture tests/merge/cases/NAME/{base,ours,theirs}: the same
#      exit status (number of conflicts) and the same bytes as git, in the
#      default and the diff3 style (labels given, so markers compare too);
#   2. the same fixtures against GNU `diff3 -m`: the same clean/conflict
#      status and, when clean, the same bytes - except the cases named
#      identical-*, where both sides make the same change:
#      git (and decree) merge them cleanly, diff3 -m reports a conflict,
#      and the suite checks that it still does (the documented difference);
#   3. a randomized differential run (tests/merge/random_oracle.py): a few
#      hundred random triples; MERGE_ORACLE_SEED=<n> replays one seed.
# git and diff3 are test oracles only; the product never runs them.
. "$(dirname "$0")/lib.sh"
top=${DECREE_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
tool=${DECREE_BUILD:-$top/build}/tests/merge3-tool
cases=$top/tests/merge/cases
export HOME=$SCRATCH GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null

if [ ! -x "$tool" ]; then
	not_ok "merge3-tool is built" "no $tool (make test-build)"
	done_testing
	exit 1
fi
ncases=$(ls "$cases" | wc -l)
if [ "$ncases" -ge 40 ]; then ok "at least 40 fixture cases ($ncases)"; else not_ok "at least 40 fixture cases" "$ncases"; fi

L="-L ours -L base -L theirs"
for d in "$cases"/*/; do
	n=$(basename "$d")
	for style in "" --diff3; do
		# shellcheck disable=SC2086
		git merge-file -p $style $L "$d/ours" "$d/base" "$d/theirs" >"$SCRATCH/git" 2>"$SCRATCH/git.err"
		g=$?
		# shellcheck disable=SC2086
		"$tool" $style $L "$d/ours" "$d/base" "$d/theirs" >"$SCRATCH/m3" 2>"$SCRATCH/m3.err"
		m=$?
		if [ "$g" -eq "$m" ] && cmp -s "$SCRATCH/git" "$SCRATCH/m3"; then
			ok "$n${style:+ $style}: git merge-file status $g, same bytes"
		else
			not_ok "$n${style:+ $style}: like git merge-file" \
				"git exit $g, merge3 exit $m; $(diff "$SCRATCH/git" "$SCRATCH/m3" | head -20 | tr '\n' '|') $(cat "$SCRATCH/m3.err")"
		fi
	done
	diff3 -m "$d/ours" "$d/base" "$d/theirs" >"$SCRATCH/d3" 2>/dev/null
	d3=$?
	"$tool" "$d/ours" "$d/base" "$d/theirs" >"$SCRATCH/m3" 2>/dev/null
	m=$?
	case $n in
	identical-*)
		if [ "$d3" -eq 1 ] && [ "$m" -eq 0 ]; then
			ok "$n: diff3 -m conflicts on the same change, merge3 is clean"
		else
			not_ok "$n: diff3 -m conflicts on the same change, merge3 is clean" "diff3 exit $d3, merge3 exit $m"
		fi ;;
	*)
		if [ "$d3" -eq 0 ] && [ "$m" -eq 0 ]; then
			if cmp -s "$SCRATCH/d3" "$SCRATCH/m3"; then ok "$n: diff3 -m clean, same bytes"
			else not_ok "$n: diff3 -m clean, same bytes" "$(diff "$SCRATCH/d3" "$SCRATCH/m3" | head -10 | tr '\n' '|')"; fi
		elif [ "$d3" -eq 1 ] && [ "$m" -gt 0 ]; then
			ok "$n: diff3 -m and merge3 both conflict"
		else
			not_ok "$n: same status as diff3 -m" "diff3 exit $d3, merge3 exit $m"
		fi ;;
	esac
done

# The tool itself must be able to fail: a clean merge it would get wrong.
printf 'a\nb\n' >"$SCRATCH/b"; printf 'A\nb\n' >"$SCRATCH/o"; printf 'a\nB\n' >"$SCRATCH/t"
t_exit 1 "adjacent edits conflict (exit 1)" "$tool" "$SCRATCH/o" "$SCRATCH/b" "$SCRATCH/t"
t_exit 255 "a missing input is an error (exit 255)" "$tool" "$SCRATCH/o" "$SCRATCH/nope" "$SCRATCH/t"

seed=${MERGE_ORACLE_SEED:-$(( $(date +%s) ^ $$ ))}
count=${MERGE_ORACLE_COUNT:-300}
mkdir -p "$SCRATCH/rand"
echo "# random differential: MERGE_ORACLE_SEED=$seed ($count triples)"
if python3 "$top/tests/merge/random_oracle.py" "$seed" "$count" "$tool" "$SCRATCH/rand" >"$SCRATCH/rand.log" 2>&1; then
	ok "random differential vs git merge-file: $(tail -1 "$SCRATCH/rand.log") (seed $seed)"
else
	sed 's/^/# /' "$SCRATCH/rand.log" | head -40
	not_ok "random differential vs git merge-file (seed $seed)" "$(tail -1 "$SCRATCH/rand.log")"
fi
done_testing
