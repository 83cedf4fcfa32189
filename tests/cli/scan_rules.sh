#!/bin/bash
# scan_rules.sh - what a checkpoint captures (DESIGN "What is scanned") and
# that a restore never deletes what was not captured: .decree/ and every
# .git (directory or file, nested too) are skipped; built-in ignores;
# .gitignore (nested, negation, anchoring, **, dir-only, escapes);
# .decreeignore re-including with !; ignore rules for a restore come from
# the checkpoint (pre) state; files above max_file_size are recorded as
# skipped and never deleted; config exclude patterns.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
same() { # name got want
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -40)"; fi
}
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
mk() { for f in "$@"; do mkdir -p "$(dirname "$f")" && printf '%s\n' "$f" >"$f"; done; }
# paths recorded by `show --json REF` (files), one per line, sorted
files_of() { D --json checkpoint show "$1" | python3 -c 'import json,sys; print("\n".join(sorted(f["path"] for f in json.load(sys.stdin)["files"])))'; }
# a fingerprint of everything, including ignored files and .git, without .decree
all_state() { (cd "$1" && find . -path ./.decree -prune -o \( -type f -o -type l \) -print | LC_ALL=C sort |
	while IFS= read -r f; do
		if [ -L "$f" ]; then printf '%s -> %s\n' "$f" "$(readlink "$f")"
		else printf '%s %s\n' "$f" "$(sha256sum <"$f" | cut -c1-16)"; fi
	done); }

# ===== 1. what is captured ====================================================
P=$SCRATCH/p1
mkdir -p "$P" && cd "$P" || exit 1
mk .git/HEAD .git/objects/ab/cdef sub/code.c nested/deep/.git/HEAD nested/deep/x.c \
	.github/workflows/ci.yml .gitkeep .gitattributes sub/.decree/not-the-root.txt \
	node_modules/p/index.js sub/node_modules/j.js __pycache__/m.cpython.pyc .venv/bin/python \
	venv/lib/v.py .cache/c sub/.cache/d a.pyc sub/deep/b.pyc .DS_Store sub/.DS_Store \
	lib/node_modules.txt lib/venv.py \
	a.log keep.log anchored.txt sub/anchored.txt doc/c.tmp doc/a/b/c.tmp doc/a/ok.txt \
	'#hash.txt' '!bang.txt' x.secret keep.secret dist/d.js build/b.o sub/build \
	sub/local.txt local.txt sub/sub.log x.bak sub/deep/y.bak 'sp ace.txt' \
	gen/g.c a/b/gen/g.c file1.txt file12.txt a.cfg c.cfg logs/important.txt logs/x \
	mid/tmp.txt sub/mid/tmp.txt
printf 'gitdir: ../.git/modules/sub\n' >sub/.git # a .git FILE (submodule/worktree)
printf 'gitdir: x\n' >lib/.git
printf 'plain file named like a built-in dir\n' >lib/node_modules # not a directory: tracked
ln -s / rootlink     # symlinks are recorded, never followed
ln -s . selflink
ln -s loop2 loop1 && ln -s loop1 loop2
ln -s ../sub lib/sublink
cat >.gitignore <<'EOF'
# comment
*.log
!keep.log
build/
/anchored.txt
doc/**/*.tmp
\#hash.txt
\!bang.txt
*.secret
dist/
**/gen/
file?.txt
[ab].cfg
logs/
!logs/important.txt
mid/tmp.txt
EOF
printf 'local.txt\n!sub.log\n' >sub/.gitignore
printf '!dist/\n!keep.secret\n*.bak\n' >.decreeignore
mkdir -p .decree && printf 'decree: must not be captured\n' >.decree/notes.txt

t_match '[0-9a-f]*' "checkpoint of the rule tree (symlinks to / and loops do not hang)" timeout 30 "$DECREE" checkpoint create
X=$OUT
expected='c.cfg
rootlink
selflink
loop1
loop2
lib/sublink
file12.txt
sub/mid/tmp.txt
.decreeignore
.github/workflows/ci.yml
.gitattributes
.gitignore
.gitkeep
dist/d.js
doc/a/ok.txt
keep.log
keep.secret
lib/node_modules
lib/node_modules.txt
lib/venv.py
local.txt
nested/deep/x.c
sp ace.txt
sub/.decree/not-the-root.txt
sub/.gitignore
sub/anchored.txt
sub/build
sub/code.c
sub/sub.log'
expected=$(printf '%s\n' "$expected" | grep -v IGNORED | LC_ALL=C sort)
got=$(files_of "$X" | LC_ALL=C sort)
same "captured exactly the files the rules allow" "$got" "$expected"
for f in .git/HEAD sub/.git lib/.git nested/deep/.git/HEAD .decree/notes.txt; do
	case $'\n'"$got"$'\n' in *$'\n'"$f"$'\n'*) not_ok "not captured: $f" ;; *) ok "not captured: $f" ;; esac
done
for f in sub/code.c nested/deep/x.c lib/node_modules; do
	case $'\n'"$got"$'\n' in *$'\n'"$f"$'\n'*) ok "captured beside a .git: $f" ;; *) not_ok "captured beside a .git: $f" ;; esac
done
for f in node_modules/p/index.js sub/node_modules/j.js __pycache__/m.cpython.pyc .venv/bin/python venv/lib/v.py .cache/c sub/.cache/d a.pyc sub/deep/b.pyc .DS_Store sub/.DS_Store; do
	case $'\n'"$got"$'\n' in *$'\n'"$f"$'\n'*) not_ok "built-in ignore: $f" ;; *) ok "built-in ignore: $f" ;; esac
done
check "a checkpoint did not touch .git" test "$(cat .git/HEAD)" = .git/HEAD

# ===== 2. a restore never deletes ignored files nor touches .git ==========
printf 'changed\n' >>.git/HEAD
mk .git/new-object nested/deep/.git/new node_modules/q/new.js __pycache__/n.pyc .venv/new venv/new .cache/new \
	z.pyc .DS_Store new.log build/new.o doc/x/y/z.tmp zz.secret sub/local.txt y.bak
printf 'gitdir: elsewhere\n' >sub/.git
printf 'modified ignored\n' >>a.log
mk created.txt sub/created.c lib/created
IGNORED_BEFORE=$(all_state "$P" | grep -vE '^\./(created\.txt|sub/created\.c|lib/created) ')
t "restore (ignored and .git files present, changed and new)" D checkpoint restore -v "$X"
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|create|delete) ' | LC_ALL=C sort)
same "restore deletes only the three new tracked files" "$plan" "delete created.txt
delete lib/created
delete sub/created.c"
same "ignored files and .git kept byte-exact (new, changed and old)" "$(all_state "$P")" "$IGNORED_BEFORE"

# has_changes looks at the scanned part only
t_match '[0-9a-f]*' "checkpoint H" D checkpoint create --message H
H_ID=$OUT
printf 'ignored change\n' >>node_modules/p/index.js
printf 'ignored change\n' >>a.log
printf 'git change\n' >>.git/HEAD
mk node_modules/brand/new.js
_run D --json checkpoint list
hc=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["has_changes"] for c in json.load(sys.stdin)["checkpoints"] if c["message"] == "H"][0])')
same "has_changes stays false when only ignored files and .git change" "$hc" False
printf 'x\n' >>sub/code.c
_run D --json checkpoint list
hc=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print([c["has_changes"] for c in json.load(sys.stdin)["checkpoints"] if c["message"] == "H"][0])')
same "has_changes true once a tracked file changes" "$hc" True
# A directory that holds a new tracked file and an ignored file: the restore
# deletes the tracked file and keeps the directory with the ignored one.
mk gen2/tracked.txt gen2/ignored.log
t "restore H (new dir with a tracked and an ignored file)" D checkpoint restore "$H_ID"
check "gen2/tracked.txt deleted" test ! -e gen2/tracked.txt
check "gen2/ignored.log and its directory kept" test -f gen2/ignored.log
check "sub/code.c restored" test "$(cat sub/code.c)" = sub/code.c

# Special files (FIFO, socket) are not scanned and do not block a scan.
mkfifo fifo sub/fifo2
t_match '[0-9a-f]*' "create with FIFOs in the tree does not hang" timeout 20 "$DECREE" checkpoint create --message fifo
FIFO_ID=$OUT
case $'\n'"$(files_of "$FIFO_ID")"$'\n' in *fifo*) not_ok "FIFOs not captured as files" ;; *) ok "FIFOs not captured as files" ;; esac
mk after-fifo.txt
t "restore with FIFOs around" timeout 20 "$DECREE" checkpoint restore "$FIFO_ID"
check "FIFOs left alone by restore" test -p fifo -a -p sub/fifo2
check "after-fifo.txt deleted" test ! -e after-fifo.txt
rm -f fifo sub/fifo2

# ===== 3. rules come from the checkpoint (pre) state ========================
# At Y, *.log and build/ are ignored by .gitignore and *.bak by .decreeignore.
# Then the ignore rules are dropped and ignored files change / appear: a
# restore of Y must keep every file that Y's rules ignore.
t_match '[0-9a-f]*' "checkpoint Y" D checkpoint create --message Y
Y=$OUT
GITIGNORE_Y=$(sha256sum <.gitignore)
printf '!keep.log\n' >.gitignore # *.log, build/, *.secret ... no longer ignored
rm .decreeignore               # *.bak no longer ignored
printf 'more\n' >>a.log
mk b.log build/c.o w.bak sub/deep/w.bak
printf 'new tracked\n' >tracked-new.txt
t "dry-run restore Y with the rules removed" D checkpoint restore "$Y" --dry-run
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|create|delete) ' | LC_ALL=C sort)
same "plan: restore .gitignore, create .decreeignore, delete only tracked-new.txt" "$plan" "create .decreeignore
delete tracked-new.txt
restore .gitignore"
KEEP=$(all_state "$P" | grep -E '\.(log|bak|secret|o) |\.(tmp) ' )
t "restore Y" D checkpoint restore "$Y"
same "files ignored under Y's rules all kept, byte-exact" "$(all_state "$P" | grep -E '\.(log|bak|secret|o) |\.(tmp) ')" "$KEEP"
check ".gitignore is Y's again" test "$(sha256sum <.gitignore)" = "$GITIGNORE_Y"
check ".decreeignore re-created" test -f .decreeignore
check "tracked-new.txt deleted" test ! -e tracked-new.txt
check "b.log (created while not ignored) kept" test -f b.log
check "build/c.o kept" test -f build/c.o
check "w.bak kept" test -f w.bak

# The rules of a subdirectory, changed after the checkpoint both ways: a
# restore walks with the rules on disk first and must notice that they are
# not the checkpoint's (docs/scanning.md), then decide by the checkpoint's.
mkdir -p made deep
printf '*.gen\n' >made/.gitignore
mk made/kept.c made/old.gen deep/a.c
t_match '[0-9a-f]*' "checkpoint W (made/.gitignore ignores *.gen; deep/ has none)" D checkpoint create --message W
W=$OUT
rm made/.gitignore              # *.gen no longer ignored on disk
mk made/new.gen
printf '*.txt\n' >deep/.gitignore # a rules file W did not have
mk deep/new.txt
# a diff and a status compare with W the same way: they too walk with the
# rules on disk first, and walk again with W's when those differ
walks() { grep -c '^decree: perf: scan: walked' "$1"; }
t "diff W --name-status with the rules changed" env DECREE_TRACE_PERF=1 "$DECREE" checkpoint diff "$W" --name-status
same "diff: as W's rules see the tree (made/new.gen not new, deep/new.txt new)" "$OUT" "A	deep/.gitignore
A	deep/new.txt
D	made/.gitignore"
printf '%s\n' "$ERR" >"$SCRATCH/trace"
same "diff: walked again with W's rules" "$(walks "$SCRATCH/trace")" 2
t "diff W (text) with the rules changed" D checkpoint diff "$W"
same "diff text: the same three files" "$(printf '%s\n' "$OUT" | grep '^diff --git')" "diff --git a/deep/.gitignore b/deep/.gitignore
diff --git a/deep/new.txt b/deep/new.txt
diff --git a/made/.gitignore b/made/.gitignore"
t "status with the rules changed" D status
same "status: the same three changes" "$(printf '%s\n' "$OUT" | grep -E '^  [ADM] ')" "  A deep/.gitignore
  A deep/new.txt
  D made/.gitignore"
t "restore W with made/.gitignore removed and deep/.gitignore added" D checkpoint restore "$W"
t "diff W --name-status after the restore" env DECREE_TRACE_PERF=1 "$DECREE" checkpoint diff "$W" --name-status
same "diff after the restore: nothing" "$OUT" ""
printf '%s\n' "$ERR" >"$SCRATCH/trace"
same "diff with W's rules on disk: one walk" "$(walks "$SCRATCH/trace")" 1
check "made/.gitignore is back" test "$(cat made/.gitignore)" = "*.gen"
check "made/new.gen kept (ignored under W's rules)" test -f made/new.gen
check "made/old.gen kept" test -f made/old.gen
check "deep/.gitignore deleted (new under W's rules)" test ! -e deep/.gitignore
check "deep/new.txt deleted (not ignored under W's rules)" test ! -e deep/new.txt
check "deep/a.c kept" test -f deep/a.c
t "undo the restore of W" D undo
check "undo: deep/new.txt back" test -f deep/new.txt
check "undo: deep/.gitignore back" test "$(cat deep/.gitignore)" = "*.txt"
# A path restore while the rules on disk are not W's (so it walks twice):
# a file only W has must still be found as W's, one in neither refused
rm deep/a.c
t "restore W -- deep/a.c (deleted since W; rules not W's)" env DECREE_TRACE_PERF=1 "$DECREE" checkpoint restore "$W" -- deep/a.c
printf '%s\n' "$ERR" >"$SCRATCH/trace"
same "path restore: walked again with W's rules" "$(walks "$SCRATCH/trace")" 2
check "deep/a.c is back" test -f deep/a.c
check "deep/new.txt left alone (not among the paths)" test -f deep/new.txt
t_err "decree: path 'deep/none.c' is neither in the checkpoint nor in the working tree" \
	"restore W -- a path in neither: refused in one line" 1 D checkpoint restore "$W" -- deep/none.c
t "undo the path restore" D undo
check "undo: deep/a.c gone again" test ! -e deep/a.c
mk deep/a.c
# the same bytes on disk as in W, in another inode: the walk's rules hold
printf '*.gen\n' >made/.gitignore.new && mv made/.gitignore.new made/.gitignore
rm deep/.gitignore deep/new.txt
mk made/third.gen
t "restore W with W's rules on disk" D checkpoint restore -v "$W"
check "made/third.gen kept" test -f made/third.gen

# A file tracked at the checkpoint that a later .gitignore hides: whatever the
# restore does with it, `undo` must bring back its newer bytes (nothing is
# destroyed without being captured first).
printf 'v1\n' >notes.txt
t_match '[0-9a-f]*' "checkpoint Z (notes.txt tracked)" D checkpoint create --message Z
Z=$OUT
printf 'notes.txt\n' >>.gitignore
printf 'v2 - precious\n' >notes.txt
t "restore Z after notes.txt became ignored" D checkpoint restore "$Z"
t "undo" D undo
check "undo: notes.txt has its v2 bytes" test "$(cat notes.txt)" = "v2 - precious"
check "undo: .gitignore ignores notes.txt again" grep -qx notes.txt .gitignore

# ===== 4. max_file_size: skipped, recorded, never deleted ================
Q=$SCRATCH/p4
mkdir -p "$Q/.decree" && cd "$Q" || exit 1
cat >.decree/config.yml <<'EOF'
checkpoint:
  max_file_size: 1K
  exclude: ["*.tmp", "secret/", "/rootonly.txt"]
EOF
head -c 2000 /dev/zero | tr '\0' 'a' >big.bin
head -c 1024 /dev/zero | tr '\0' 'b' >limit.bin # exactly the limit: not above it
head -c 1025 /dev/zero | tr '\0' 'c' >over.bin
printf 'small\n' >small.txt
printf 'grows later\n' >grow.txt
mk x.tmp sub/y.tmp secret/key rootonly.txt sub/rootonly.txt
t_match '[0-9a-f]*' "checkpoint with max_file_size 1K" D checkpoint create
S=$OUT
t "show --json" D --json checkpoint show "$S"
sk=$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%s:%s" % (s["path"], s["size"], "reason" if isinstance(s.get("reason"), str) and s["reason"] else "NO-REASON") for s in sorted(d["skipped"], key=lambda s: s["path"])))')
same "skipped: big.bin and over.bin with size and reason" "$sk" "big.bin:2000:reason over.bin:1025:reason"
fl=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(" ".join(sorted(f["path"] for f in json.load(sys.stdin)["files"])))')
same "files: limit.bin (exactly 1K), small, grow, sub/rootonly; excludes applied" "$fl" "grow.txt limit.bin small.txt sub/rootonly.txt"
_run D --json checkpoint list
[ "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["checkpoints"][-1]["file_count"])')" = 4 ] &&
	ok "list file_count is 4" || not_ok "list file_count is 4" "$OUT"

head -c 3000 /dev/zero | tr '\0' 'z' >big.bin # changed, still too big
head -c 5000 /dev/zero | tr '\0' 'n' >big2.bin # new and too big
mk new.tmp secret/new rootonly.txt
printf 'x' >>rootonly.txt
head -c 2000 /dev/urandom >grow.txt # tracked file grew above the limit
GROW=$(sha256sum <grow.txt)
printf 'new tracked\n' >new.txt
KEEP=$(all_state "$Q" | grep -E ' ?\./(big\.bin|big2\.bin|new\.tmp|x\.tmp|sub/y\.tmp|secret/.*|rootonly\.txt) ')
t "restore with big and excluded files around" D checkpoint restore "$S"
same "too-big and excluded files are never deleted nor changed" "$(all_state "$Q" | grep -E ' ?\./(big\.bin|big2\.bin|new\.tmp|x\.tmp|sub/y\.tmp|secret/.*|rootonly\.txt) ')" "$KEEP"
check "new.txt (tracked, new) deleted" test ! -e new.txt
t "undo" D undo
check "undo: grow.txt has its 2000 grown bytes (captured before overwrite)" test "$(sha256sum <grow.txt)" = "$GROW"
check "undo: new.txt back" test -f new.txt
t "fsck" D fsck

# Two rules files the diff finds different from the checkpoint's, in
# directories whose names sort one way byte by byte and the other way in
# decree's path order ("a-b" < "a/b" by bytes, '/' first in path order):
# a/b/.gitignore removed, a-b/.gitignore made executable (it differs, by
# its mode, and its rules are O's).  Both must be found among what
# differs; the tree is then seen by O's rules.
R=$SCRATCH/p_order
mkdir -p "$R/a/b" "$R/a-b" && cd "$R" || exit 1
mk a/b/f.log a-b/g.log a/b/keep.c
printf '*.log\n' >a/b/.gitignore
printf '*.log\n' >a-b/.gitignore
D -q init >/dev/null || exit 1
t_match '[0-9a-f]*' "checkpoint O (*.log ignored in a/b and a-b)" D checkpoint create -m O
O=$OUT
rm a/b/.gitignore
chmod +x a-b/.gitignore
t "diff O --name-status with a/b's rules removed" D checkpoint diff "$O" --name-status
same "diff: the two rules files (a/b/f.log ignored under O's rules)" "$OUT" "D	a/b/.gitignore
M	a-b/.gitignore"
t "status with a/b's rules removed" D status
same "status: the same" "$(printf '%s\n' "$OUT" | grep -E '^  [ADM] ')" "  D a/b/.gitignore
  M a-b/.gitignore"

done_testing
