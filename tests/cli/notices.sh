#!/bin/bash
# notices.sh - what decree tells about the surprises of issue 11, one
# "decree: notice: ..." line on stderr each (never on stdout, none with
# -q) and the same in the document's "notices" array with --json
# (docs/schema/README.md, "Notices"):
#   - ignore rules that leave a checkpoint nearly empty (mostly_ignored),
#     with the rule that excluded most, and no notice where they do not;
#   - create --message M for an existing (session, M) (existing);
#   - files above the size limit (too_large), with the largest and the
#     limit;
#   - undo/redo replacing files edited after the operation
#     (edits_saved): saved in the pre-undo capture, and the command the
#     notice gives brings them back.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

# py EXPR: evaluate a python expression over d (= the JSON in $OUT)
py() { printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>&1; }
# notice lines of the last command's stderr
notices() { printf '%s\n' "$ERR" | grep -c '^decree: notice: '; }
fresh() { rm -rf "$SCRATCH/p" && mkdir -p "$SCRATCH/p" && cd "$SCRATCH/p" || exit 1; }

# ===== mostly_ignored =========================================================
fresh
for i in $(seq 1 20); do mkdir d$i && echo x >d$i/f && echo y >t$i.txt; done
printf '*\n' >.gitignore
t "create with a .gitignore that ignores everything: exit 0" D checkpoint create
ID=$OUT
same "... stdout is only the id" "$(printf '%s' "$OUT" | grep -c '^[0-9a-f]\{64\}$')" 1
same "... one notice line" "$(notices)" 1
case "$ERR" in
"decree: notice: the checkpoint has 1 file: ignore rules excluded 40 of the 41 entries the scan saw (40 by '*' in .gitignore); 'decree checkpoint show ${ID:0:12}' lists what it holds")
	ok "... says how many were excluded, by which rule, and how to see what is left" ;;
*) not_ok "... says how many were excluded, by which rule" "$ERR" ;; esac
t "create --json" D --json checkpoint create
same "... the notice in the document" \
	"$(py '[(n["code"], n["excluded"], n["file_count"], n["rule"], n["checkpoint"] == d["id"], n["message"].startswith("the checkpoint has 1 file")) for n in d["notices"]]')" \
	"[('mostly_ignored', 40, 1, {'source': '.gitignore', 'pattern': '*', 'excluded': 40}, True, True)]"
t "create -q" D -q checkpoint create
same "... -q: no notice" "$ERR" ""

# the rule that excluded most, in a subdirectory's rules file
fresh
mkdir -p sub && printf 'keep\n' >sub/keep.txt
for i in $(seq 1 40); do echo x >sub/gen$i.o; done
echo x >top.log && echo y >other.log
printf '*.o\n' >sub/.gitignore && printf '*.log\n' >.gitignore
t "a tree of 3 files, 42 excluded by two rules" D --json checkpoint create
same "... names the rule that excluded most: *.o in sub/.gitignore" \
	"$(py '[(n["excluded"], n["file_count"], n["rule"]) for n in d["notices"]]')" \
	"[(42, 3, {'source': 'sub/.gitignore', 'pattern': '*.o', 'excluded': 40})]"
case "$ERR" in *"(40 by '*.o' in sub/.gitignore)"*) ok "... and so does the line" ;;
*) not_ok "... and so does the line" "$ERR" ;; esac
t "an --exclude pattern (it beats .gitignore) is named as one" D --json checkpoint create --exclude '*.o'
same "... source exclude" "$(py '[(n["rule"]["source"], n["rule"]["pattern"]) for n in d["notices"]]')" "[('exclude', '*.o')]"
case "$ERR" in *"(40 by '*.o', an --exclude or config.yml exclude pattern)"*) ok "... and the line says so" ;;
*) not_ok "... and the line says so" "$ERR" ;; esac

# not a notice: a directory counts once (node_modules), few exclusions, many files
fresh
mkdir -p node_modules/a src
for i in $(seq 1 50); do echo x >node_modules/a/m$i.js; done
echo 'int main;' >src/main.c && echo readme >README
t "node_modules (built-in default) beside two files: no notice" D checkpoint create
same "... stderr is empty" "$ERR" ""
for i in $(seq 1 9); do echo x >n$i.log; done
printf '*.log\n' >.gitignore
t "9 excluded files beside 3: no notice (fewer than 10)" D checkpoint create
same "... stderr is empty" "$ERR" ""
echo x >n10.log
t "10 excluded files beside 3 (77%): no notice (not 90%)" D checkpoint create
same "... stderr is empty" "$ERR" ""
fresh
for i in $(seq 1 101); do echo x >f$i.txt; done
mkdir logs && for i in $(seq 1 1000); do echo x >logs/l$i.log; done
printf 'logs/*\n' >.gitignore
t "102 files kept, 1000 excluded: no notice (not nearly empty)" D checkpoint create
same "... stderr is empty" "$ERR" ""

# ===== existing ===============================================================
fresh
echo a >a.txt
t "create -m turn-1" D checkpoint create --session chat -m turn-1
FIRST=$OUT
same "... the first create notices nothing" "$ERR" ""
echo b >a.txt
t "create -m turn-1 again" D checkpoint create --session chat -m turn-1
same "... returns the first id" "$OUT" "$FIRST"
case "$ERR" in
"decree: notice: checkpoint chat:turn-1 already exists (made "*"Z, ${FIRST:0:12}); returned it unchanged, nothing was scanned")
	ok "... and says so, with when it was made" ;;
*) not_ok "... and says so" "$ERR" ;; esac
t "create -m turn-1 --json" D --json checkpoint create --session chat -m turn-1
same "... created false and the notice" \
	"$(py '(d["created"], [(n["code"], n["checkpoint"] == d["id"], n["session"], n["created_at"][-1]) for n in d["notices"]])')" \
	"(False, [('existing', True, 'chat', 'Z')])"
t "create -m turn-1 -q" D -q checkpoint create --session chat -m turn-1
same "... -q: nothing on stderr" "$ERR" ""
t "another session, the same message: a new checkpoint, no notice" D checkpoint create --session other -m turn-1
same "... no notice" "$ERR" ""

# ===== too_large ==============================================================
fresh
echo small >small.txt
head -c 2000000 /dev/zero >big.bin
head -c 3000000 /dev/zero >bigger.bin
t "create --max-file-size 1M with two larger files" D checkpoint create --max-file-size 1M
case "$ERR" in
"decree: notice: 2 files above the size limit (1 MiB) were not stored, only their path and size (the largest: 'bigger.bin', 2.9 MiB); --max-file-size BYTES or checkpoint.max_file_size in .decree/config.yml raises the limit")
	ok "... says how many, the largest, the limit and how to change it" ;;
*) not_ok "... says how many, the largest, the limit" "$ERR" ;; esac
t "--json" D --json checkpoint create --max-file-size 1M
same "... count, limit, largest" \
	"$(py '[(n["code"], n["count"], n["limit"], n["largest"]) for n in d["notices"]]')" \
	"[('too_large', 2, 1048576, {'path': 'bigger.bin', 'size': 3000000})]"
mkdir -p .decree && printf 'checkpoint:\n  max_file_size: 2500000\n' >.decree/config.yml
t "the limit of config.yml" D --json checkpoint create
same "... one file above 2500000 bytes" \
	"$(py '[(n["count"], n["limit"], n["largest"]["path"]) for n in d["notices"]]')" "[(1, 2500000, 'bigger.bin')]"
rm -rf .decree/config.yml
t "without a file above the limit: no notice" D --json checkpoint create
same "... notices is empty" "$(py 'd["notices"]')" "[]"

# ===== edits_saved ============================================================
fresh
mkdir s && echo a >a.txt && echo c >s/c.txt && echo u >untouched.txt
A=$(D checkpoint create)
echo a2 >a.txt && echo c2 >s/c.txt && echo new >s/new.txt
t "restore A" D -q checkpoint restore "$A"
t "undo with no edits since" D --json undo
same "... no notice" "$(py 'd["notices"]')" "[]"
t "redo" D -q redo
echo 'user a' >a.txt && echo 'user c' >s/c.txt && echo 'user new' >s/new.txt
cd s
t "undo after editing two files the restore wrote and creating one it deleted (from s/)" D undo
case "$ERR" in
"decree: notice: undo replaced 3 files edited since the change it undid ('a.txt', 's/c.txt', 's/new.txt'); the edited versions are saved in checkpoint "????????????" (pre-undo): 'decree checkpoint restore "????????????" -- ../a.txt c.txt new.txt' brings them back")
	ok "... names the files, the capture, and the command (paths relative to s/)" ;;
*) not_ok "... names the files, the capture and the command" "$ERR" ;; esac
same "... the undo itself happened" "$(cat ../a.txt c.txt new.txt)" "a2
c2
new"
CMD=$(printf '%s\n' "$ERR" | sed -n "s/.*'decree \(checkpoint restore [0-9a-f]* -- [^']*\)' brings.*/\1/p")
# shellcheck disable=SC2086
t "the command of the notice" D $CMD
same "... brings the edits back" "$(cat ../a.txt c.txt new.txt)" "user a
user c
user new"
cd ..
same "... and nothing else" "$(cat untouched.txt)" "u"
fresh
echo a >a.txt
A=$(D checkpoint create)
echo a2 >a.txt
D -q checkpoint restore "$A"
echo 'user a' >a.txt
t "undo --json after an edit" D --json undo
same "... the notice in the document: the path and the capture" \
	"$(py '[(n["code"], n["paths"], n["checkpoint"] == d["pre_checkpoint"]) for n in d["notices"]]')" \
	"[('edits_saved', ['a.txt'], True)]"
echo 'user again' >a.txt
t "redo after an edit" D redo
case "$ERR" in "decree: notice: redo replaced 1 file edited since the undo ('a.txt'); the edited versions are saved in checkpoint "*" (pre-redo): 'decree checkpoint restore "*" -- a.txt' brings it back")
	ok "... redo says it too" ;;
*) not_ok "... redo says it too" "$ERR" ;; esac
echo 'user 3' >a.txt
t "undo -q after an edit" D -q undo
same "... -q: no notice" "$ERR" ""

done_testing
