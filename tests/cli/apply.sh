#!/bin/bash
# apply.sh - `decree apply` (DESIGN "Patches and transactions",
# docs/diff-format.md section 2): diffs from `diff -u`, `diff -ruN`,
# `git diff --no-index` and `git diff` (renames, modes, creations,
# deletions) reproduce the target tree byte for byte; any conflict writes
# nothing at all (contents, modes, inodes and mtimes unchanged); --check,
# already-applied files, -R, stdin, -p N, undo/redo, unsafe paths,
# malformed input; --exec rolls back everything the patch and the command
# did (restore / remove / sweep), leaves ignored files alone, captures an
# exec-failed checkpoint and moves the apply to the redo history; --json
# is one event object per stdout line.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C

# files, links and directories with type, mode, size, inode and mtime (ns):
# any write, even of identical bytes, or a leftover temp file shows
stamps() { (cd "$1" && find . -path ./.decree -prune -o -printf '%p %y %m %s %i %T@ %l\n' | LC_ALL=C sort); }
dirs() { (cd "$1" && find . -path ./.decree -prune -o -type d -print | LC_ALL=C sort); }
full_state() { tree_state "$1"; dirs "$1"; }
same_tree() { same "$1" "$(full_state "$2")" "$(full_state "$3")"; }
# fresh NAME SRC: $SCRATCH/w/NAME becomes a copy of SRC with a store (the
# first decree command creates .decree/, which would change the root's
# mtime); cd there
fresh() {
	W=$SCRATCH/w/$1
	rm -rf "$W" && mkdir -p "$SCRATCH/w" && cp -a "$2" "$W" && cd "$W" || exit 1
	D -q checkpoint create --message base >/dev/null 2>&1
}
nlines() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l; fi; }
# j PYTHON: evaluate over L = the JSON objects of $OUT, one per line (fails
# if a line is not a JSON object); prints the value or the error
j() {
	printf '%s\n' "$OUT" | python3 -c '
import json, sys
L = []
for n, line in enumerate(sys.stdin.read().splitlines(), 1):
    try:
        o = json.loads(line)
    except ValueError as e:
        print("line %d is not JSON: %r" % (n, line)); sys.exit(0)
    if not isinstance(o, dict):
        print("line %d is not an object" % n); sys.exit(0)
    L.append(o)
print(eval(sys.argv[1]))' "$1" 2>&1
}
umask 022
# the phases of an event stream (first appearance order), whether every
# staged path is staged before it is applied, whether committing comes after
# every applying event, and whether done is last and alone
PHASES='(sorted(set(o["phase"] for o in L), key=lambda p: min(i for i, o in enumerate(L) if o["phase"] == p)), all(min(i for i, o in enumerate(L) if o["phase"] == "staging" and o["path"] == s["path"]) < min(i for i, o in enumerate(L) if o["phase"] == "applying" and o["path"] == s["path"]) for s in L if s["phase"] == "staging"), max(i for i, o in enumerate(L) if o["phase"] == "applying") < [o["phase"] for o in L].index("committing"), [o["phase"] for o in L].index("done") == len(L) - 1)'

# ===== diff -u, diff -ruN, git diff --no-index =============================
F=$SCRATCH/fmt
mkdir -p "$F/old/sub" "$F/new/sub/new" && cd "$F" || exit 1
for i in $(seq 1 20); do printf 'line %s\n' "$i"; done >old/f.txt
sed -e 's/^line 3$/line three/' -e 's/^line 17$/line seventeen/' old/f.txt >new/f.txt
printf 'gone\n' >old/del.txt
printf 'one\r\ntwo\r\n' >old/crlf.txt && printf 'one\r\nTWO\r\n' >new/crlf.txt
printf 'a\nlast' >old/nonl.txt && printf 'a\nLAST' >new/nonl.txt
printf 'caf\xe9\n' >old/sub/s.txt && printf 'caf\xe9\n\xff\n' >new/sub/s.txt
printf 'created\n' >new/sub/new/n.txt
printf 'same\n' >old/same.txt && cp old/same.txt new/same.txt

diff -u old/f.txt new/f.txt >u.diff
cp -a "$F/old" "$F/exp-u" && cp "$F/new/f.txt" "$F/exp-u/f.txt"
fresh u1 "$F/old"
t "diff -u old/f.txt new/f.txt: default strips old/ and new/" D -q apply "$F/u.diff"
check "... f.txt is the new one byte for byte" cmp -s f.txt "$F/new/f.txt"
same_tree "... and nothing else changed" "$W" "$F/exp-u"
fresh u2 "$F/old"
t "... the same with -p1" D -q apply -p1 "$F/u.diff"
check "... f.txt is the new one" cmp -s f.txt "$F/new/f.txt"
fresh u3 "$F/old"
B3=$(stamps "$W")
t_err "conflict: *new/f.txt*" "... with -p0 it names new/f.txt, which does not exist: exit 1" 1 D apply -p0 "$F/u.diff"
same "... nothing written" "$(stamps "$W")" "$B3"

mkdir -p "$F/one" && cp "$F/old/f.txt" "$F/one/f.txt.orig" && cp "$F/new/f.txt" "$F/one/f.txt"
(cd "$F/one" && diff -u f.txt.orig f.txt) >"$F/u0.diff"
fresh u4 "$F/old"
t "diff -u f.txt.orig f.txt: patches f.txt (the +++ name)" D -q apply "$F/u0.diff"
check "... f.txt is the new one" cmp -s f.txt "$F/new/f.txt"
check "... no f.txt.orig appears" test ! -e f.txt.orig
fresh u5 "$F/old"
t "... the same with -p0" D -q apply -p0 "$F/u0.diff"
check "... f.txt is the new one" cmp -s f.txt "$F/new/f.txt"

cd "$F" && diff -ruN old new >r.diff
fresh r1 "$F/old"
t "diff -ruN old new (creation in a new dir, deletion, CRLF, no newline, non-UTF-8)" D -q apply "$F/r.diff"
same_tree "... the copy of old is new exactly" "$W" "$F/new"
t "... -R" D -q apply -R "$F/r.diff"
same_tree "... -R gives the old tree back exactly (sub/new removed again)" "$W" "$F/old"

cd "$F" && git diff --no-index old new >g.diff
fresh g1 "$F/old"
B=$(stamps "$W")
t_err "decree: *g.diff:*" "git diff --no-index old new without -p2: names differ, exit 1" 1 D apply "$F/g.diff"
same "... nothing written" "$(stamps "$W")" "$B"
t "... with -p2" D -q apply -p2 "$F/g.diff"
same_tree "... the copy of old is new exactly" "$W" "$F/new"

# ===== git diff from a repository: renames, mode changes, new/deleted files ==
R=$SCRATCH/repo
mkdir -p "$R" && cd "$R" || exit 1
git init -q .
G() { git -c user.name=t -c user.email=t@example.com "$@"; }
for i in $(seq 1 12); do printf 'line %s\n' "$i"; done >moved.txt
printf '#!/bin/sh\n' >run.sh
printf 'bye\n' >bye.txt
printf 'pure rename with mode change\n' >mode.txt
printf 'mode only\n' >chmod.txt
G add -A && G commit -qm one
mkdir -p "$SCRATCH/git-old" && git -c tar.umask=022 archive HEAD | tar -C "$SCRATCH/git-old" -xf -
git mv moved.txt renamed.txt && sed -i 's/^line 6$/LINE SIX/' renamed.txt
chmod 755 run.sh mode.txt chmod.txt && printf 'echo more\n' >>run.sh
git rm -q bye.txt
mkdir -p d/e && printf 'hi\n' >d/e/new.txt
git mv mode.txt mode2.txt
G add -A && G commit -qm two
git diff HEAD~1 HEAD >"$SCRATCH/git.diff"
mkdir -p "$SCRATCH/git-new" && git -c tar.umask=022 archive HEAD | tar -C "$SCRATCH/git-new" -xf -
check "the git diff has rename, mode and new/deleted headers" test "$(grep -cE '^(rename from|rename to|old mode|new mode|new file mode|deleted file mode|similarity index)' "$SCRATCH/git.diff")" -eq 14
fresh git1 "$SCRATCH/git-old"
t "git diff HEAD~1 HEAD" D -q apply "$SCRATCH/git.diff"
same_tree "... the old tree becomes the new one exactly (renames, modes, new dir)" "$W" "$SCRATCH/git-new"
check "... the rename sources are gone" test ! -e moved.txt -a ! -e mode.txt
t "... -R" D -q apply -R "$SCRATCH/git.diff"
same_tree "... back to the old tree exactly (d/e removed again)" "$W" "$SCRATCH/git-old"

# a binary change without its content is refused, nothing written; git's
# binary patch applies (tests/cli/apply_gitbinary.sh has the details)
cd "$R" || exit 1
printf 'x\0y' >blob.bin && G add -A && G commit -qm three
printf 'x\0z' >blob.bin && git diff --binary >"$SCRATCH/gitbin.diff" && git diff >"$SCRATCH/gitbin-nobinary.diff"
cp -a "$R" "$SCRATCH/git-bin" && git -C "$SCRATCH/git-bin" checkout -q -- blob.bin && rm -rf "$SCRATCH/git-bin/.git"
fresh gitbin "$SCRATCH/git-bin"
B=$(stamps "$W")
t_err "decree: *gitbin-nobinary.diff:*: binary change without content (\"Binary files ... differ\") cannot be applied" \
	"'Binary files ... differ': exit 1, one line" 1 D apply "$SCRATCH/gitbin-nobinary.diff"
same "... nothing written" "$(stamps "$W")" "$B"
t "git's GIT binary patch (git diff --binary) applies" D -q apply "$SCRATCH/gitbin.diff"
check "... blob.bin is the new one byte for byte" cmp -s blob.bin "$R/blob.bin"

# ===== conflicts: nothing at all is written ====================================
C=$SCRATCH/cf
mkdir -p "$C/old/dir" "$C/new/dir" && cd "$C" || exit 1
for i in $(seq 1 10); do printf 'l%s\n' "$i"; done >old/a.txt
sed 's/^l5$/L5/' old/a.txt >new/a.txt
printf 'b\n' >old/b.txt && printf 'b2\n' >new/b.txt
printf 'c\n' >new/c.txt
printf 'gone\n' >old/gone.txt
printf 'x\n' >old/dir/x.txt && printf 'x2\n' >new/dir/x.txt
printf 'keep\n' >old/keep.txt && cp old/keep.txt new/keep.txt
diff -ruN old new >p.diff
P=$C/p.diff

# conflict_case NAME SETUP: fresh copy of old, run SETUP in it, apply:
# exit 1, one conflict line naming PATH, one decree: line, no write
conflict_case() {
	local nm=$1 path=$2 setup=$3 st
	fresh "$nm" "$C/old"
	eval "$setup"
	touch -c -d '2001-02-03 04:05:06' a.txt b.txt dir/x.txt keep.txt 2>/dev/null
	st=$(stamps "$W")
	_run D apply "$P"
	local why=
	[ $RC -eq 1 ] || why="exit $RC, wanted 1"
	[ "$(nlines "$ERR")" -eq 2 ] || why="$why; stderr has $(nlines "$ERR") lines, wanted 2"
	case "$(printf '%s\n' "$ERR" | sed -n 1p)" in "conflict: "*"'$path'"*) ;; *) why="$why; line 1 is not a conflict on '$path'" ;; esac
	case "$(printf '%s\n' "$ERR" | sed -n 2p)" in "decree: 1 of 5 file(s) in $P do not apply ('$path'); nothing was written") ;; *) why="$why; line 2 is not the decree: summary" ;; esac
	[ -z "$OUT" ] || why="$why; stdout not empty"
	[ "$(stamps "$W")" = "$st" ] || why="$why; the tree changed: $(diff <(printf '%s\n' "$st") <(stamps "$W") | head -6)"
	if [ -z "$why" ]; then ok "conflict, $nm: exit 1, one conflict line, nothing written (mtimes too)"
	else not_ok "conflict, $nm: exit 1, one conflict line, nothing written (mtimes too)" "$why
stderr: $ERR"; fi
}
conflict_case context a.txt 'sed -i "s/^l5\$/X5/" a.txt'
check "... the conflict names patch line, hunk, file line and both texts" \
	test "$(printf '%s\n' "$ERR" | sed -n 1p)" = "conflict: $P:4: hunk #1 does not apply to 'a.txt' at line 5: expected \"l5\", found \"X5\""
conflict_case create-exists c.txt 'printf "other\n" >c.txt'
conflict_case delete-differs gone.txt 'printf "gone\nbut changed\n" >gone.txt'
conflict_case is-a-directory b.txt 'rm b.txt && mkdir b.txt && printf "in\n" >b.txt/in'
conflict_case modify-missing b.txt 'rm b.txt'
conflict_case parent-is-file dir/x.txt 'rm -r dir && printf "file\n" >dir'

fresh all "$C/old"
sed -i 's/^l5$/X5/' a.txt && printf 'other\n' >c.txt && printf 'changed\n' >gone.txt && rm b.txt && mkdir b.txt
touch -d '2001-02-03 04:05:06' a.txt dir/x.txt keep.txt
B=$(stamps "$W")
_run D apply "$P"
same "four conflicts at once: exit 1" "$RC" 1
same "... one conflict line per file, then one decree: line" "$(printf '%s\n' "$ERR" | cut -c1-9 | sed 's/^decree: .*/decree:/')" \
"conflict:
conflict:
conflict:
conflict:
decree:"
same "... the summary counts them" "$(printf '%s\n' "$ERR" | tail -1)" "decree: 4 of 5 file(s) in $P do not apply ('a.txt', 'b.txt', 'c.txt', 'gone.txt'); nothing was written"
same "... nothing written, not even dir/x.txt which applies" "$(stamps "$W")" "$B"
t_exit 1 "... --json: exit 1" D --json apply "$P"
same "... --json: a checking/conflict event per file with its detail, then done with ok false and the error" "$(j '"\n".join("%s %s %s %s" % (o["phase"], o["path"], o["action"], bool(o.get("detail"))) for o in L[:-1]) + "\n%s %s %s %s %s" % (L[-1]["phase"], L[-1]["ok"], L[-1]["conflicts"], L[-1]["error"]["code"], L[-1]["error"]["message"])')" \
"checking a.txt conflict True
checking b.txt conflict True
checking c.txt conflict True
checking gone.txt conflict True
done False 4 conflict 4 of 5 file(s) in $P do not apply ('a.txt', 'b.txt', 'c.txt', 'gone.txt'); nothing was written"
same "... still nothing written" "$(stamps "$W")" "$B"

# a hunk is found after unrelated lines were inserted above it (offset),
# but never with different content (no fuzz)
fresh offset "$C/old"
printf 'inserted 1\ninserted 2\n' | cat - a.txt >a.tmp && mv a.tmp a.txt
t "a hunk moved down by unrelated lines above it still applies" D -q apply "$P"
same "... at the right place" "$(cat a.txt)" "$(printf 'inserted 1\ninserted 2\n' && cat "$C/new/a.txt")"

# ===== --check ================================================================
fresh check "$C/old"
B=$(stamps "$W")
t_out "modify a.txt
modify b.txt
create c.txt
modify dir/x.txt
delete gone.txt
$P applies cleanly: would create 1, modify 3, delete 1; 0 already done" "--check lists the plan" D apply --check "$P"
same "... and writes nothing" "$(stamps "$W")" "$B"
t "--json --check" D --json apply --check "$P"
same "... --json --check: events with phase checking, then done with check true" "$(j '" ".join("%s:%s:%s" % (o["phase"], o["path"], o["action"]) for o in L[:-1]) + " | %s %s %s" % (L[-1]["phase"], L[-1]["check"], L[-1]["ok"])')" \
	"checking:a.txt:modify checking:b.txt:modify checking:c.txt:create checking:dir/x.txt:modify checking:gone.txt:delete | done True True"
same "... writes nothing" "$(stamps "$W")" "$B"
t_err "decree: *" "--check --exec: usage error, exit 2" 2 D apply --check --exec true "$P"
same "... writes nothing" "$(stamps "$W")" "$B"

# ===== already applied =========================================================
fresh skip "$C/old"
cp "$C/new/a.txt" a.txt && cp "$C/new/c.txt" c.txt && rm gone.txt
touch -d '2001-02-03 04:05:06' a.txt c.txt b.txt keep.txt
ST_A=$(stat -c '%i %Y.%y' a.txt) ST_C=$(stat -c '%i %Y.%y' c.txt) ST_K=$(stat -c '%i %Y.%y' keep.txt)
_run D apply -v "$P"
same "partly applied patch: exit 0" "$RC" 0
same "... created 0, modified 2 (b.txt, dir/x.txt), deleted 0, skipped 3" "$OUT" \
	"applied $P: created 0, modified 2, deleted 0, skipped 3; 'decree undo' reverts this"
check "... the skips are reported on stderr" test "$(printf '%s\n' "$ERR" | grep -c '^skip ')" -eq 3
same "... already-applied a.txt and c.txt not rewritten (inode, mtime)" "$(stat -c '%i %Y.%y' a.txt) $(stat -c '%i %Y.%y' c.txt) $(stat -c '%i %Y.%y' keep.txt)" "$ST_A $ST_C $ST_K"
same_tree "... the tree is the new one" "$W" "$C/new"
B=$(stamps "$W")
t_out "nothing to apply: every file is already as $P leaves it" "re-applying the whole patch: nothing to apply, exit 0" D apply "$P"
same "... nothing written" "$(stamps "$W")" "$B"
t "--json re-apply" D --json apply "$P"
same "... every file a staging/skip event, done ok with skipped 5" "$(j '" ".join("%s:%s" % (o["phase"], o["action"]) for o in L[:-1]) + " | %s %s %s" % (L[-1]["ok"], L[-1]["skipped"], L[-1]["modified"])')" \
	"staging:skip staging:skip staging:skip staging:skip staging:skip | True 5 0"

# a hunk at the start or the end of a file has less context on that side;
# applied a second time it must be recognised as applied (its reverse
# matches at exactly its lines), not applied again a line further
boundary() { # name old new
	local d=$SCRATCH/bd/$1
	mkdir -p "$d/old" "$d/new"
	printf "$2" >"$d/old/f" && printf "$3" >"$d/new/f"
	(cd "$d" && diff -ruN old new >p.diff)
	fresh "bd-$1" "$d/old"
	_run D -q apply "$d/p.diff"
	_run D apply "$d/p.diff"
	same "re-applying a patch that inserts at the $1 of a file: nothing to apply, not applied twice" \
		"$RC $OUT $(od -An -c f | tr -s ' ')" "0 nothing to apply: every file is already as $d/p.diff leaves it $(od -An -c "$d/new/f" | tr -s ' ')"
}
boundary start 'a\nb\n' 'a\na\nb\n'
boundary end 'a\nb\n' 'a\nb\nb\n'

# two diffs of the same file concatenated: the second applies to the
# result of the first
K=$SCRATCH/cat
mkdir -p "$K/a" "$K/b" "$K/c"
seq 1 9 >"$K/a/f" && sed 's/^2$/two/' "$K/a/f" >"$K/b/f" && sed 's/^8$/eight/' "$K/b/f" >"$K/c/f"
(cd "$K" && { diff -ruN a b; diff -ruN b c; } >both.diff)
fresh cat "$K/a"
t "two concatenated diffs of one file" D -q apply "$K/both.diff"
check "... give the result of both" cmp -s f "$K/c/f"
t "... -R takes both back" D -q apply -R "$K/both.diff"
check "... to the first version" cmp -s f "$K/a/f"
cd "$K" || exit 1
t "-C DIR: a relative PATCH is relative to the current directory" D -q -C "$SCRATCH/w/cat" apply both.diff
check "... applied in DIR" cmp -s "$SCRATCH/w/cat/f" "$K/c/f"

# ===== -R, stdin, -p N =============================================================
fresh rev "$C/new"
t "-R on the new tree" D -q apply -R "$P"
same_tree "... gives the old tree (gone.txt back, c.txt removed)" "$W" "$C/old"
t "--reverse (long form) again: nothing to apply" D apply --reverse "$P"
same "... says so" "$OUT" "nothing to apply: every file is already as $P leaves it"
fresh stdin "$C/old"
_run sh -c '"$DECREE" apply - <"$1"' sh "$P"
same "apply - reads stdin" "$RC $OUT" "0 applied <stdin>: created 1, modified 3, deleted 1, skipped 0; 'decree undo' reverts this"
same_tree "... the tree is the new one" "$W" "$C/new"
_run sh -c '"$DECREE" -q apply -R - <"$1"' sh "$P"
same "apply -R - from stdin: exit 0" "$RC" 0
same_tree "... the tree is the old one" "$W" "$C/old"
printf 'no diff in here\n' >"$SCRATCH/nodiff.txt"
_run sh -c '"$DECREE" apply - <"$1"' sh "$SCRATCH/nodiff.txt"
same "stdin without a diff: exit 1, one line naming <stdin>" "$RC|$ERR" "1|decree: <stdin>: no diff found"

# -pN: both names under the same top dir are not stripped by default
mkdir -p "$SCRATCH/pn/proj" && cp "$C/old/a.txt" "$SCRATCH/pn/proj/a.txt.orig" && cp "$C/new/a.txt" "$SCRATCH/pn/proj/a.txt"
(cd "$SCRATCH/pn" && diff -u proj/a.txt.orig proj/a.txt) >"$SCRATCH/pn.diff"
(cd "$SCRATCH/pn" && diff -u proj/a.txt.orig proj/a.txt | sed 's#proj/#x/y/proj/#') >"$SCRATCH/pn3.diff"
fresh pn "$C/old"
B=$(stamps "$W")
t_err "conflict: *proj/a.txt*" "diff -u proj/a.txt.orig proj/a.txt: default keeps proj/, which does not exist" 1 D apply "$SCRATCH/pn.diff"
same "... nothing written" "$(stamps "$W")" "$B"
t "... -p1 strips it" D -q apply -p1 "$SCRATCH/pn.diff"
check "... a.txt is the new one" cmp -s a.txt "$C/new/a.txt"
D -q undo 2>/dev/null
t "-p 3 (separate argument) strips x/y/proj/" D -q apply -p 3 "$SCRATCH/pn3.diff"
check "... a.txt is the new one" cmp -s a.txt "$C/new/a.txt"
D -q undo 2>/dev/null
B=$(stamps "$W")
t_err "decree: *cannot strip*" "-p 4: more components than the name has, exit 1" 1 D apply -p 4 "$SCRATCH/pn3.diff"
t_err "decree: *" "-p x: usage error, exit 2" 2 D apply -p x "$SCRATCH/pn3.diff"
t_err "decree: *" "-p -1: usage error, exit 2" 2 D apply -p -1 "$SCRATCH/pn3.diff"
t_err "decree: *" "no PATCH: usage error, exit 2" 2 D apply
t_err "decree: *" "two PATCHes: usage error, exit 2" 2 D apply "$P" "$P"
t_err "decree: *" "unknown option: exit 2" 2 D apply --bogus "$P"
t_err "decree: *nosuch.diff*" "missing patch file: exit 1" 1 D apply "$SCRATCH/nosuch.diff"
same "... nothing written by any of these" "$(stamps "$W")" "$B"

# ===== undo / redo with decree's own diff (binary, symlink, mode, CRLF) =========
U=$SCRATCH/undo
mkdir -p "$U/t" && cd "$U/t" || exit 1
printf 'bin\0ary' >b.bin
printf 'one\r\ntwo\r\n' >crlf.txt
printf 'plain\n' >m.sh
ln -s crlf.txt ln
printf 'gone\n' >del.txt
printf 'untouched\n' >keep.txt
D -q checkpoint create --message before >/dev/null || true
cp -a "$U/t" "$U/old" && rm -rf "$U/old/.decree"
printf 'bin\0ARY\xff' >b.bin && printf 'one\r\nTWO\r\n' >crlf.txt && chmod 755 m.sh && ln -sfn m.sh ln && rm del.txt
mkdir -p n/e/w && printf 'new\0bin' >n/e/w/x.bin && printf 'created\n' >n/e/w/c.txt
cp -a "$U/t" "$U/new" && rm -rf "$U/new/.decree"
D checkpoint diff default:before >"$U/own.diff"
check "decree's diff has a binary record" grep -q '^decree-base64 new' "$U/own.diff"
fresh undo "$U/old"
touch -d '2001-02-03 04:05:06' keep.txt
ST_K=$(stat -c '%i %Y.%y' keep.txt)
t "apply decree's own diff" D -q apply "$U/own.diff"
same_tree "... the tree is the new one" "$W" "$U/new"
t "undo" D -q undo
same_tree "... exact bytes, modes, links and directories of before" "$W" "$U/old"
same "... keep.txt was never touched" "$(stat -c '%i %Y.%y' keep.txt)" "$ST_K"
t "redo" D -q redo
same_tree "... the new tree again" "$W" "$U/new"
t "undo again" D -q undo
same_tree "... the old tree again" "$W" "$U/old"
t "a second apply after undo" D -q apply "$U/own.diff"
same_tree "... the new tree" "$W" "$U/new"
t "undo of the second apply" D -q undo
same_tree "... the old tree" "$W" "$U/old"

# ===== unsafe paths ================================================================
mkdir -p "$SCRATCH/outside" "$SCRATCH/safe"
printf 'a\n' >"$SCRATCH/safe/a.txt"
printf 'keep\n' >"$SCRATCH/safe/keep.txt"
# unsafe NAME DIFF-NAME-PAIR: a valid record for a.txt, then a creation of
# the unsafe path; exit 1, one decree: line, nothing written anywhere
unsafe() {
	local nm=$1 hdr=$2 plus=$3 st so why=
	fresh "unsafe-$nm" "$SCRATCH/safe"
	{ printf 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n'
	  printf 'diff --git %s\nnew file mode 100644\n--- /dev/null\n+++ %s\n@@ -0,0 +1 @@\n+evil\n' "$hdr" "$plus"; } >"$SCRATCH/unsafe.diff"
	st=$(stamps "$W") so=$(stamps "$SCRATCH/outside")
	_run D apply "$SCRATCH/unsafe.diff"
	[ $RC -eq 1 ] || why="exit $RC, wanted 1"
	[ "$(nlines "$ERR")" -eq 1 ] || why="$why; stderr has $(nlines "$ERR") lines"
	case "$ERR" in "decree: $SCRATCH/unsafe.diff:"*) ;; *) why="$why; no 'decree: PATCH:' line" ;; esac
	[ "$(stamps "$W")" = "$st" ] || why="$why; tree changed"
	[ "$(stamps "$SCRATCH/outside")" = "$so" ] || why="$why; outside changed"
	[ ! -e /etc/decree-evil ] || why="$why; /etc/decree-evil exists"
	if [ -z "$why" ]; then ok "unsafe path $nm: exit 1, nothing written"; else not_ok "unsafe path $nm: exit 1, nothing written" "$why; stderr: $ERR"; fi
}
unsafe dotdot 'a/../x b/../x' 'b/../x'
unsafe inner-dotdot 'a/sub/../../outside/x b/sub/../../outside/x' 'b/sub/../../outside/x'
unsafe .git 'a/.git/config b/.git/config' 'b/.git/config'
unsafe deep-.git 'a/sub/.git/hooks/post-checkout b/sub/.git/hooks/post-checkout' 'b/sub/.git/hooks/post-checkout'
unsafe .decree 'a/.decree/x b/.decree/x' 'b/.decree/x'
unsafe dot 'a/./x b/./x' 'b/./x'
# plain diffs too
fresh unsafe-plain "$SCRATCH/safe"
printf -- '--- /dev/null\n+++ /etc/decree-evil\n@@ -0,0 +1 @@\n+evil\n' >"$SCRATCH/abs.diff"
B=$(stamps "$W")
t_err "decree: *" "plain diff creating /etc/decree-evil: exit 1" 1 D apply "$SCRATCH/abs.diff"
check "... /etc/decree-evil not created" test ! -e /etc/decree-evil
printf 'diff --git a/a.txt b/../x\nsimilarity index 100%%\nrename from a.txt\nrename to ../x\n' >"$SCRATCH/ren.diff"
t_err "decree: *" "a rename to ../x: exit 1" 1 D apply "$SCRATCH/ren.diff"
same "... nothing written" "$(stamps "$W")" "$B"
check "... nothing outside" test ! -e "$SCRATCH/w/x" -a ! -e "$SCRATCH/x"
# through a symlink that is already there, or that the patch itself creates
fresh unsafe-link "$SCRATCH/safe"
ln -s "$SCRATCH/outside" out
B=$(stamps "$W") BO=$(stamps "$SCRATCH/outside")
printf 'diff --git a/out/evil b/out/evil\nnew file mode 100644\n--- /dev/null\n+++ b/out/evil\n@@ -0,0 +1 @@\n+evil\n' >"$SCRATCH/link1.diff"
t_err "conflict: *out/evil*" "creating out/evil through a symlink to outside: exit 1" 1 D apply "$SCRATCH/link1.diff"
{ printf 'diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+%s\n\\ No newline at end of file\n' "$SCRATCH/outside"
  printf 'diff --git a/l/evil b/l/evil\nnew file mode 100644\n--- /dev/null\n+++ b/l/evil\n@@ -0,0 +1 @@\n+evil\n'; } >"$SCRATCH/link2.diff"
BF=$(full_state "$W")
t_err "*decree: *" "a patch creating symlink l -> outside, then l/evil: exit 1" 1 D apply "$SCRATCH/link2.diff"
same "... nothing left in the tree" "$(full_state "$W")" "$BF"
same "... nothing written outside" "$(stamps "$SCRATCH/outside")" "$BO"

# ===== malformed patches =============================================================
fresh bad "$SCRATCH/safe"
B=$(stamps "$W")
printf 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n' >"$SCRATCH/trunc.diff"
t_err "decree: $SCRATCH/trunc.diff:[0-9]*: *" "truncated hunk: exit 1, one line naming patch and line" 1 D apply "$SCRATCH/trunc.diff"
same "... exactly one stderr line" "$(nlines "$ERR")" 1
printf 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n-a\n-b\n+A\n' >"$SCRATCH/long.diff"
t_err "decree: $SCRATCH/long.diff:[0-9]*: *" "more body lines than the counts: exit 1" 1 D apply "$SCRATCH/long.diff"
printf 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @\n-a\n+A\n' >"$SCRATCH/hdr.diff"
t_err "decree: $SCRATCH/hdr.diff:4: *" "malformed @@ line: exit 1, line 4" 1 D apply "$SCRATCH/hdr.diff"
printf 'diff --git a/k.txt b/k.txt\n--- a/k.txt\n+++ b/k.txt\n@@ -1 +1 @@\n-keep\n+KEEP\ndiff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-a\n+A\n' >"$SCRATCH/trunc2.diff"
t_err "decree: $SCRATCH/trunc2.diff:[0-9]*: *" "a valid record then a truncated one: exit 1" 1 D apply "$SCRATCH/trunc2.diff"
printf 'diff --git a/a.txt b/a.txt\nGIT binary patch\ndecree-base64 old 5\nYQo=\ndecree-base64 new 2\nQQo=\n\n' >"$SCRATCH/b64.diff"
t_err "decree: $SCRATCH/b64.diff:*" "base64 size mismatch: exit 1" 1 D apply "$SCRATCH/b64.diff"
t_err "decree: $SCRATCH/nodiff.txt: no diff found" "no diff at all: exit 1" 1 D apply "$SCRATCH/nodiff.txt"
same "... nothing written by any malformed patch" "$(stamps "$W")" "$B"

# ===== --exec ============================================================================
E=$SCRATCH/ex
mkdir -p "$E/old" "$E/new/sub/new" && cd "$E" || exit 1
printf 'a\n' >old/a.txt && printf 'a2\n' >new/a.txt
printf 'del\n' >old/del.txt
printf 'new\n' >new/sub/new/new.txt
for f in u.txt k.txt keep2.txt; do printf '%s\n' "$f" >old/$f && cp old/$f new/$f; done
printf 'ign.log\nbuild/\n' >old/.gitignore && cp old/.gitignore new/.gitignore
diff -ruN old new >p.diff
PE=$E/p.diff

fresh exec-true "$E/old"
_run D apply --exec true "$PE"
same "--exec true: exit 0, applied, command reported" "$RC $OUT" "0 applied $PE: created 1, modified 1, deleted 1, skipped 0; 'decree undo' reverts this
'true' succeeded"
same_tree "... the tree is the new one" "$W" "$E/new"
fresh exec-decree "$E/old"
t "--exec can run decree itself (the lock is released)" D -q apply --exec "\"$DECREE\" -q checkpoint create --message inside" "$PE"
_run D --json checkpoint list
same "... its checkpoint exists" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(sum(c["message"] == "inside" for c in json.load(sys.stdin)["checkpoints"]))' 2>&1)" 1

fresh exec-3 "$E/old"
touch -d '2001-02-03 04:05:06' keep2.txt u.txt
B=$(full_state "$W") ST_K=$(stat -c '%i %Y.%y' keep2.txt)
t_err "*decree: 'exit 3' failed (status 3)*" "--exec 'exit 3': exit 1" 1 D apply --exec 'exit 3' "$PE"
same "... the tree is exactly as before the apply" "$(full_state "$W")" "$B"
same "... an untouched file keeps inode and mtime" "$(stat -c '%i %Y.%y' keep2.txt)" "$ST_K"
fresh exec-kill "$E/old"
B=$(full_state "$W")
t_err "*status 143*" "--exec killed by SIGTERM: status 128+15, exit 1" 1 D apply --exec 'kill -TERM $$' "$PE"
same "... rolled back" "$(full_state "$W")" "$B"

# a command that creates, modifies and deletes files of its own
CMD='mkdir -p x/y/z && echo made >x/y/z/f && echo junk >top.txt && echo mod >u.txt && rm k.txt && echo also >a.txt && echo ig >ign.log && mkdir -p build && echo b >build/o && cp -a . ../snap && echo cmd-stdout; exit 3'
fresh exec-mess "$E/old"
touch -d '2001-02-03 04:05:06' keep2.txt
B=$(full_state "$W") ST_K=$(stat -c '%i %Y.%y' keep2.txt)
rm -rf "$SCRATCH/w/snap"
_run D apply -v --session sess --exec "$CMD" "$PE"
same "a failing command that made a mess: exit 1" "$RC" 1
same "... rolling_back lines: remove (patch-created), sweep (command-created), restore (changed or deleted)" \
	"$(printf '%s\n' "$ERR" | grep '^rolling_back ' | LC_ALL=C sort)" \
"rolling_back remove sub/new/new.txt
rolling_back restore a.txt
rolling_back restore del.txt
rolling_back restore k.txt
rolling_back restore u.txt
rolling_back sweep top.txt
rolling_back sweep x/y/z/f"
same "... the last stderr line is the decree: summary" "$(printf '%s\n' "$ERR" | tail -1)" \
	"decree: '$CMD' failed (status 3); rolled back: restored 4, removed 1, swept 2 file(s)"
same "... ignored files the command created are left alone" "$(cat ign.log build/o 2>&1)" "ig
b"
rm -rf ign.log build
same "... otherwise the tree is exactly as before (new dirs gone too)" "$(full_state "$W")" "$B"
same "... an untouched file keeps inode and mtime" "$(stat -c '%i %Y.%y' keep2.txt)" "$ST_K"
_run D --json checkpoint list --session sess
EXEC_CK=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)["checkpoints"] if c["label"] == "exec-failed"))' 2>&1)
check "... an exec-failed checkpoint exists in session sess" test -n "$EXEC_CK" -a "${#EXEC_CK}" -eq 64
_run D checkpoint list
check "... and shows in the plain list" test "$(printf '%s\n' "$OUT" | grep -c 'exec-failed')" -eq 1
t "redo after the failure re-applies the patch" D -q redo
same_tree "... the tree is the patched one" "$W" "$E/new"
t "undo" D -q undo
same "... back to before" "$(full_state "$W")" "$B"
rm -rf "$SCRATCH/w/snap/.decree" "$SCRATCH/w/snap/ign.log" "$SCRATCH/w/snap/build"
t "restore of the exec-failed checkpoint" D -q checkpoint restore "$EXEC_CK"
same "... gives the tree the command left" "$(tree_state "$W")" "$(tree_state "$SCRATCH/w/snap")"
t "undo the restore" D -q undo
same "... back to before" "$(full_state "$W")" "$B"

# a command that changes the shape of the tree: a file becomes a
# directory, a link becomes a file, a symlink to outside appears, a mode
# changes, and it deletes a file the patch created in a new directory
mkdir -p "$E/old2" "$E/new2/sub/new" "$SCRATCH/outside"
cp -a "$E/old/." "$E/old2/" && ln -s u.txt "$E/old2/lnk"
cp -a "$E/old2/." "$E/new2/" && printf 'a2\n' >"$E/new2/a.txt" && rm "$E/new2/del.txt" && printf 'new\n' >"$E/new2/sub/new/new.txt"
(cd "$E" && diff -ruN --no-dereference old2 new2 >p2.diff)
fresh exec-shape "$E/old2"
BT=$(tree_state "$W") BD=$(dirs "$W") BO=$(stamps "$SCRATCH/outside")
_run D apply --verbose --exec "rm u.txt && mkdir u.txt && echo x >u.txt/x && ln -s '$SCRATCH/outside' out && chmod 755 keep2.txt && rm sub/new/new.txt && rm lnk && echo notlink >lnk; exit 1" "$E/p2.diff"
same "a command that reshapes the tree: exit 1" "$RC" 1
same "... restore/sweep lines" "$(printf '%s\n' "$ERR" | grep '^rolling_back ' | LC_ALL=C sort)" \
"rolling_back restore a.txt
rolling_back restore del.txt
rolling_back restore keep2.txt
rolling_back restore lnk
rolling_back restore u.txt
rolling_back sweep out
rolling_back sweep u.txt/x"
same "... files, modes and links exactly as before" "$(tree_state "$W")" "$BT"
same "... no directory left behind (the patch's sub/new, the command's u.txt/)" "$(dirs "$W")" "$BD"
same "... nothing written outside" "$(stamps "$SCRATCH/outside")" "$BO"

fresh exec-json "$E/old"
B=$(full_state "$W")
_run D --json apply --exec 'echo hello-from-cmd; mkdir -p x/y && echo f >x/y/f && echo m >u.txt && rm k.txt; exit 1' "$PE"
same "--json, failing command: exit 1" "$RC" 1
same "... every stdout line is a JSON object with phase, path, action" "$(j 'all({"phase", "path", "action"} <= set(o) for o in L) and len(L)')" "$(nlines "$OUT")"
same "... rolling_back events with path and action" "$(j '"\n".join(sorted("%s %s" % (o["action"], o["path"]) for o in L if o["phase"] == "rolling_back"))')" \
"remove sub/new/new.txt
restore a.txt
restore del.txt
restore k.txt
restore u.txt
sweep x/y/f"
same "... phases: each file staged before applied, then committing, rolling_back, done" "$(j "$PHASES")" \
	"(['staging', 'applying', 'committing', 'rolling_back', 'done'], True, True, True)"
same "... the last line: done, ok false, the counts and the checkpoint" "$(j 'L[-1]["phase"], L[-1]["ok"], L[-1]["exec_status"], L[-1]["restored"], L[-1]["removed"], L[-1]["swept"], len(L[-1]["exec_checkpoint"] or "")')" \
	"('done', False, 1, 4, 1, 1, 64)"
check "... the command's stdout went to stderr, not stdout" test "$(printf '%s\n' "$ERR" | grep -cx 'hello-from-cmd')" -eq 1
same "... rolled back" "$(full_state "$W")" "$B"

# ===== --json without --exec ==========================================================
fresh json "$E/old"
t "--json apply" D --json apply "$PE"
same "... every line a JSON object" "$(j 'len(L)')" "$(nlines "$OUT")"
same "... phases: each file staged before applied, then committing, done" "$(j "$PHASES")" \
	"(['staging', 'applying', 'committing', 'done'], True, True, True)"
same "... applying events per file" "$(j '" ".join(sorted("%s:%s" % (o["action"], o["path"]) for o in L if o["phase"] == "applying"))')" \
	"create:sub/new/new.txt delete:del.txt modify:a.txt"
same "... done: ok, counts, no error" "$(j 'L[-1]["ok"], L[-1]["created"], L[-1]["modified"], L[-1]["deleted"], L[-1]["error"]')" \
	"(True, 1, 1, 1, None)"
same "... no progress text on stderr" "$ERR" ""
same_tree "... applied" "$W" "$E/new"
fresh json-exec "$E/old"
t "--json with a succeeding --exec that prints" D --json apply --exec 'echo out-line; echo err-line >&2' "$PE"
same "... stdout is only JSON" "$(j 'len(L)')" "$(nlines "$OUT")"
same "... the command's output is on stderr" "$(printf '%s\n' "$ERR" | grep -xE 'out-line|err-line')" "out-line
err-line"
same "... done: ok, exec_status 0" "$(j 'L[-1]["phase"], L[-1]["ok"], L[-1]["exec_status"]')" "('done', True, 0)"

done_testing
