#!/bin/bash
# scan_threads.sh - the parallel walk finds the same files whatever the
# number of threads, and the same files as git (the oracle:
# `git ls-files -co --exclude-standard`) on a tree of many directories with
# .gitignore files at every depth.  With several threads a directory's
# rules are often loaded by a thread that did not list its parent
# (scan.c's load_ignore answers from the ancestor's listing); that path
# must treat a FIFO, a directory or a symlink named .gitignore as no rules
# file, never block on the FIFO, and never read through a symlink.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

P=$SCRATCH/p
mkdir -p "$P" && cd "$P" || exit 1
# 6 x 6 x 4 directories, files in each, rules at each depth
for a in 0 1 2 3 4 5; do
	for b in 0 1 2 3 4 5; do
		for c in 0 1 2 3; do
			d=d$a/e$b/f$c
			mkdir -p "$d"
			for k in 0 1 2; do printf '%s/%s\n' "$d" $k >"$d/k$k.txt"; done
			printf 'x\n' >"$d/skip.tmp"
			printf 'y\n' >"$d/o$c.log"
		done
		printf 'f1/\n!keep.tmp\n' >"d$a/e$b/.gitignore"
	done
	printf '*.tmp\n' >"d$a/.gitignore"
done
printf '*.log\n!o2.log\n' >.gitignore
printf 'kept\n' >d0/e0/f0/keep.tmp
mkdir d2/e3/f2/.gitignore              # a directory: walked, not read
printf 'inside\n' >d2/e3/f2/.gitignore/inner.txt
printf '*\n' >"$SCRATCH/outside-rules"
ln -s "$SCRATCH/outside-rules" d3/e1/f0/.gitignore # a symlink: not followed

# git lists the tree before the FIFO exists (git would block reading a
# FIFO named .gitignore); for decree it is no rules file and no project
# file, so the lists must still agree
git init -q . && git add -A >/dev/null 2>&1
want=$(git ls-files -co --exclude-standard | LC_ALL=C sort)
rm -rf .git
mkfifo d1/e2/f3/.gitignore
"$DECREE" checkpoint create --message warm >/dev/null 2>&1 # the store, so every scan below is alike

for n in 1 2 4 8; do
	_run timeout 30 env DECREE_THREADS=$n "$DECREE" checkpoint create --message "t$n"
	if [ $RC -ne 0 ]; then not_ok "$n threads: checkpoint" "exit $RC: $ERR"; continue; fi
	_run "$DECREE" --json checkpoint show "default:t$n"
	got=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print("\n".join(sorted(f["path"] for f in json.load(sys.stdin)["files"])))' | LC_ALL=C sort)
	if [ "$got" = "$want" ]; then
		ok "$n threads: the files git lists, no more, no fewer"
	else
		not_ok "$n threads: the files git lists" "$(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | head -20)"
	fi
done
done_testing
