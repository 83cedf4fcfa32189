#!/bin/bash
# diff.sh - `decree checkpoint diff` (DESIGN "Patches and transactions",
# docs/diff-format.md): the records it writes for every kind of change
# (content, mode, creation, deletion, empty files, symlinks, CRLF, missing
# final newline, non-UTF-8 bytes, binary content, quoted names), checked
# against real bytes and against two independent oracles: GNU `patch -p1`
# and `git apply` must turn a copy of the old tree into the new one (and
# back with -R) for text changes; `decree apply` must do it for everything,
# binary records included.  A seeded random property test does the same on
# generated trees.  Then --stat, --name-status, --json, -- PATH, -U and
# errors.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C

# same_tree NAME DIR WANT_DIR: identical files, modes and links
same_tree() { same "$1" "$(tree_state "$2")" "$(tree_state "$3")"; }
# same_shape: the same, and the same directories (decree removes the
# directories it empties and creates the ones it needs)
dirs() { (cd "$1" && find . -path ./.decree -prune -o -name .git -prune -o -type d -print | LC_ALL=C sort); }
same_shape() { same "$1" "$(tree_state "$2"; dirs "$2")" "$(tree_state "$3"; dirs "$3")"; }
# rec FILE PATH: the record(s) of the diff in FILE whose header is exactly
# "diff --git a/PATH b/PATH" (PATH as written, i.e. already quoted if needed)
rec() {
	H="diff --git $2" awk 'index($0, "diff --git ") == 1 { on = ($0 == ENVIRON["H"]) } on' "$1"
}
# hdr PATH: the diff --git name pair for a path that needs no quoting
hdr() { printf 'a/%s b/%s' "$1" "$1"; }
blob7() { git hash-object --no-filters "$1" | cut -c1-7; }
linkblob7() { printf '%s' "$(readlink "$1")" | git hash-object --stdin | cut -c1-7; }
# dstatus FILE CMD...: run CMD with stdout to FILE; $RC, $ERR as after _run
dto() { local f=$1; shift; "$@" >"$f" 2>"$SCRATCH/.err"; RC=$?; ERR=$(cat "$SCRATCH/.err"); }

S=$SCRATCH/store
T=$SCRATCH/tree
mkdir -p "$T/sub" && cd "$T" || exit 1
umask 022

# ===== state A ==============================================================
for i in 1 2 3 4 5 6 7 8 9 10; do printf 'line %s\n' "$i"; done >mod.txt
printf '#!/bin/sh\necho hi\n' >exec.sh
printf 'both\n' >both.sh
printf 'gone\n' >del.txt
printf 'one\r\ntwo\r\nthree\r\n' >crlf.txt
printf 'first\nlast' >nonl.txt
printf 'x' >addnl.txt
: >empty_del
printf 'caf\xe9\n' >latin.txt
ln -s mod.txt link
printf 'a\n' >'my file'
printf 't\n' >$'t\tab'
printf 'n\n' >$'n\xe9e'
printf 'deep\n' >sub/deep.txt
printf 'never changes\n' >keep.txt
printf 'bin\0ary\n' >blob.bin
printf 'old\0bin' >oldbin.bin
printf 'text for now\n' >tobin.txt
printf 'a file, later a link\n' >f2l
ln -s keep.txt l2f
printf 'a file, later a directory\n' >shape
mkdir -p sub2 && printf 'a directory, later a file\n' >sub2/x.txt
t_match '[0-9a-f]*' "checkpoint A" D --store "$S" checkpoint create --message A
A=$OUT
cp -a "$T" "$SCRATCH/A"

# ===== state B: every text change =============================================
sed -i 's/^line 5$/line five/' mod.txt
chmod 755 exec.sh                        # mode only: header-only record
printf 'both changed\n' >both.sh && chmod 755 both.sh
rm del.txt empty_del
printf 'one\r\nTWO\r\nthree\r\n' >crlf.txt
printf 'first\nLAST' >nonl.txt
printf 'x\n' >addnl.txt
printf 'caf\xe9\n\xff\xfe bytes\n' >latin.txt
ln -sfn sub/deep.txt link                # symlink retarget
printf 'a\nb\n' >'my file'
printf 't\nu\n' >$'t\tab'
printf 'N\n' >$'n\xe9e'
mkdir -p sub/new && printf 'created\n' >sub/new/created.txt
printf 'brand new\n' >new.txt
: >empty_new
ln -s mod.txt newlink
cp -a "$T" "$SCRATCH/B"

# diff against the working tree before B is a checkpoint
dto "$SCRATCH/A-work.diff" D --store "$S" checkpoint diff "$A"
check "diff A (vs working tree) exits 0" test "$RC" -eq 0
same "... and prints nothing on stderr" "$ERR" ""
t_match '[0-9a-f]*' "checkpoint B" D --store "$S" checkpoint create --message B
B=$OUT
dto "$SCRATCH/AB.diff" D --store "$S" checkpoint diff "$A" "$B"
check "diff A B exits 0" test "$RC" -eq 0
check "diff A B is byte-identical to diff A vs the working tree at B" cmp -s "$SCRATCH/A-work.diff" "$SCRATCH/AB.diff"
dto "$SCRATCH/AB2.diff" D --store "$S" checkpoint diff default:A default:B
check "SESSION:MESSAGE refs give the same diff" cmp -s "$SCRATCH/AB2.diff" "$SCRATCH/AB.diff"
AB=$SCRATCH/AB.diff

same "records in path order, unchanged files have none, quoted names" \
	"$(grep '^diff --git ' "$AB")" \
	'diff --git a/addnl.txt b/addnl.txt
diff --git a/both.sh b/both.sh
diff --git a/crlf.txt b/crlf.txt
diff --git a/del.txt b/del.txt
diff --git a/empty_del b/empty_del
diff --git a/empty_new b/empty_new
diff --git a/exec.sh b/exec.sh
diff --git a/latin.txt b/latin.txt
diff --git a/link b/link
diff --git a/mod.txt b/mod.txt
diff --git "a/my file" "b/my file"
diff --git a/new.txt b/new.txt
diff --git a/newlink b/newlink
diff --git a/nonl.txt b/nonl.txt
diff --git "a/n\351e" "b/n\351e"
diff --git a/sub/new/created.txt b/sub/new/created.txt
diff --git "a/t\tab" "b/t\tab"'

same "modified file: exact record with git blob names" "$(rec "$AB" "$(hdr mod.txt)")" \
"diff --git a/mod.txt b/mod.txt
index $(blob7 "$SCRATCH/A/mod.txt")..$(blob7 "$SCRATCH/B/mod.txt") 100644
--- a/mod.txt
+++ b/mod.txt
@@ -2,7 +2,7 @@
 line 2
 line 3
 line 4
-line 5
+line five
 line 6
 line 7
 line 8"
same "mode-only change: header-only record" "$(rec "$AB" "$(hdr exec.sh)")" \
"diff --git a/exec.sh b/exec.sh
old mode 100644
new mode 100755"
same "mode + content change: mode lines, index without mode" "$(rec "$AB" "$(hdr both.sh)" | head -4)" \
"diff --git a/both.sh b/both.sh
old mode 100644
new mode 100755
index $(blob7 "$SCRATCH/A/both.sh")..$(blob7 "$SCRATCH/B/both.sh")"
same "deleted file" "$(rec "$AB" "$(hdr del.txt)")" \
"diff --git a/del.txt b/del.txt
deleted file mode 100644
index $(blob7 "$SCRATCH/A/del.txt")..0000000
--- a/del.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone"
same "deleted empty file: header-only, e69de29" "$(rec "$AB" "$(hdr empty_del)")" \
"diff --git a/empty_del b/empty_del
deleted file mode 100644
index e69de29..0000000"
same "created empty file: header-only" "$(rec "$AB" "$(hdr empty_new)")" \
"diff --git a/empty_new b/empty_new
new file mode 100644
index 0000000..e69de29"
same "created file in a new nested dir" "$(rec "$AB" "$(hdr sub/new/created.txt)")" \
"diff --git a/sub/new/created.txt b/sub/new/created.txt
new file mode 100644
index 0000000..$(blob7 "$SCRATCH/B/sub/new/created.txt")
--- /dev/null
+++ b/sub/new/created.txt
@@ -0,0 +1 @@
+created"
same "symlink retarget: 120000, targets without newline" "$(rec "$AB" "$(hdr link)")" \
"diff --git a/link b/link
index $(linkblob7 "$SCRATCH/A/link")..$(linkblob7 "$SCRATCH/B/link") 120000
--- a/link
+++ b/link
@@ -1 +1 @@
-mod.txt
\\ No newline at end of file
+sub/deep.txt
\\ No newline at end of file"
same "created symlink" "$(rec "$AB" "$(hdr newlink)")" \
"diff --git a/newlink b/newlink
new file mode 120000
index 0000000..$(linkblob7 "$SCRATCH/B/newlink")
--- /dev/null
+++ b/newlink
@@ -0,0 +1 @@
+mod.txt
\\ No newline at end of file"
same "CRLF lines keep their CR" "$(rec "$AB" "$(hdr crlf.txt)" | tail -n +6 | od -An -c | tr -s ' ')" \
	"$(printf ' one\r\n-two\r\n+TWO\r\n three\r\n' | od -An -c | tr -s ' ')"
same "no final newline on both sides: two markers" "$(rec "$AB" "$(hdr nonl.txt)" | tail -n +5)" \
"@@ -1,2 +1,2 @@
 first
-last
\\ No newline at end of file
+LAST
\\ No newline at end of file"
same "final newline added: marker after the old line only" "$(rec "$AB" "$(hdr addnl.txt)" | tail -n +5)" \
"@@ -1 +1 @@
-x
\\ No newline at end of file
+x"
same "non-UTF-8 content bytes pass through unchanged" "$(rec "$AB" "$(hdr latin.txt)" | tail -n +5 | od -An -tx1 | tr -s ' ')" \
	"$(printf '@@ -1 +1,2 @@\n caf\xe9\n+\xff\xfe bytes\n' | od -An -tx1 | tr -s ' ')"
same "name with a space: quoted on diff --git, TAB after ---/+++" "$(rec "$AB" '"a/my file" "b/my file"' | sed -n '3,4p' | od -An -c | tr -s ' ')" \
	"$(printf -- '--- a/my file\t\n+++ b/my file\t\n' | od -An -c | tr -s ' ')"
same "name with a TAB: C-quoted like git" "$(rec "$AB" '"a/t\tab" "b/t\tab"' | sed -n '3,4p')" \
'--- "a/t\tab"
+++ "b/t\tab"'
same "non-UTF-8 name: octal escape" "$(rec "$AB" '"a/n\351e" "b/n\351e"' | sed -n '3,4p')" \
'--- "a/n\351e"
+++ "b/n\351e"'
check "no record for unchanged keep.txt, sub/deep.txt, binaries" \
	test -z "$(grep -E '^diff --git a/(keep.txt|sub/deep.txt|blob.bin|oldbin.bin)' "$AB")"

# --json with non-UTF-8 names and contents: valid UTF-8 JSON; a name that
# is not UTF-8 has an exact path_base64; the record texts stay exact too
# (in "diff", or in a base64 copy when they are not UTF-8)
D --store "$S" --json checkpoint diff "$A" "$B" >"$SCRATCH/AB.json" 2>"$SCRATCH/.err"
same "--json of A..B: one valid UTF-8 JSON document, exit 0" "$?|$(python3 -c '
import json, sys
json.loads(open(sys.argv[1], "rb").read().decode("utf-8")); print("ok")' "$SCRATCH/AB.json" 2>&1 | tail -1)" "0|ok"
same "... the non-UTF-8 name has an exact path_base64" "$(python3 -c '
import base64, json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
print([base64.b64decode(f["path_base64"]) for f in d["files"] if "path_base64" in f])' "$SCRATCH/AB.json" 2>&1)" "[b'n\\xe9e']"
same "... the record texts concatenated are the text diff, byte for byte (latin.txt has bytes >= 0x80)" "$(python3 -c '
import base64, json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
out = b"".join(base64.b64decode(f["diff_base64"]) if "diff_base64" in f else f["diff"].encode("utf-8") for f in d["files"])
sys.stdout.buffer.write(out)' "$SCRATCH/AB.json" | sha256sum)" "$(sha256sum <"$AB")"

# ===== oracles: GNU patch and git apply on the text-only diff A..B ==========
rm -rf "$SCRATCH/w" && cp -a "$SCRATCH/A" "$SCRATCH/w"
(cd "$SCRATCH/w" && patch -p1 -s -f <"$AB") >"$SCRATCH/.o" 2>&1
check "GNU patch -p1 applies diff A..B (exit 0)" test $? -eq 0
same_tree "GNU patch -p1: copy of A becomes B exactly" "$SCRATCH/w" "$SCRATCH/B"
(cd "$SCRATCH/w" && patch -p1 -R -s -f <"$AB") >"$SCRATCH/.o" 2>&1
check "GNU patch -p1 -R exits 0" test $? -eq 0
same_tree "GNU patch -p1 -R: B becomes A exactly" "$SCRATCH/w" "$SCRATCH/A"

rm -rf "$SCRATCH/g" && cp -a "$SCRATCH/A" "$SCRATCH/g" && git init -q "$SCRATCH/g"
(cd "$SCRATCH/g" && git apply "$AB") >"$SCRATCH/.o" 2>&1
check "git apply accepts diff A..B" test $? -eq 0
same_tree "git apply: copy of A becomes B exactly" "$SCRATCH/g" "$SCRATCH/B"
(cd "$SCRATCH/g" && git apply -R "$AB") >"$SCRATCH/.o" 2>&1
check "git apply -R accepts it" test $? -eq 0
same_tree "git apply -R: B becomes A exactly" "$SCRATCH/g" "$SCRATCH/A"

# ===== decree apply of its own diff A..B =====================================
rm -rf "$SCRATCH/d" && cp -a "$SCRATCH/A" "$SCRATCH/d"
t "decree apply diff A..B on a copy of A" D --store "$SCRATCH/store-d" -C "$SCRATCH/d" apply "$AB"
same_shape "... copy of A becomes B exactly" "$SCRATCH/d" "$SCRATCH/B"
t "decree apply -R" D --store "$SCRATCH/store-d" -C "$SCRATCH/d" apply -R "$AB"
same_shape "... back to A exactly (sub/new removed again)" "$SCRATCH/d" "$SCRATCH/A"

# ===== state C: binary content and type changes ================================
printf 'bin\0ARY\xff\n' >blob.bin
rm oldbin.bin
head -c 200 /dev/urandom >newbin.bin && printf '\0' >>newbin.bin   # several base64 lines
printf 'text\0now binary' >tobin.txt
rm f2l && ln -s keep.txt f2l
rm l2f && printf 'a link, now a file\n' >l2f
rm shape && mkdir shape && printf 'inside\n' >shape/inner.txt   # file -> directory
rm -r sub2 && printf 'now a file\n' >sub2                        # directory -> file
cp -a "$T" "$SCRATCH/C"
t_match '[0-9a-f]*' "checkpoint C" D --store "$S" checkpoint create --message C
C=$OUT
dto "$SCRATCH/BC.diff" D --store "$S" checkpoint diff "$B" "$C"
BC=$SCRATCH/BC.diff
dto "$SCRATCH/AC.diff" D --store "$S" checkpoint diff "$A" "$C"
AC=$SCRATCH/AC.diff
same "binary change: decree-base64 record with both sides" "$(rec "$BC" "$(hdr blob.bin)")" \
"diff --git a/blob.bin b/blob.bin
index $(blob7 "$SCRATCH/B/blob.bin")..$(blob7 "$SCRATCH/C/blob.bin") 100644
GIT binary patch
decree-base64 old 8
$(base64 -w 76 <"$SCRATCH/B/blob.bin")
decree-base64 new 9
$(base64 -w 76 <"$SCRATCH/C/blob.bin")"
same "binary record ends with one empty line" "$(rec "$BC" "$(hdr blob.bin)" | tail -c 3 | od -An -c | tr -d ' ')" "$(base64 <"$SCRATCH/C/blob.bin" | tail -c 2 | head -c 1)\\n\\n"
same "created binary: only a new section, 76-column base64 lines" "$(rec "$BC" "$(hdr newbin.bin)")" \
"diff --git a/newbin.bin b/newbin.bin
new file mode 100644
index 0000000..$(blob7 "$SCRATCH/C/newbin.bin")
GIT binary patch
decree-base64 new 201
$(base64 -w 76 <"$SCRATCH/C/newbin.bin")"
same "deleted binary: only an old section" "$(rec "$BC" "$(hdr oldbin.bin)")" \
"diff --git a/oldbin.bin b/oldbin.bin
deleted file mode 100644
index $(blob7 "$SCRATCH/B/oldbin.bin")..0000000
GIT binary patch
decree-base64 old 7
$(base64 <"$SCRATCH/B/oldbin.bin")"
check "text file turned binary gets a base64 record" grep -qx "decree-base64 new $(stat -c %s "$SCRATCH/C/tobin.txt")" "$BC"
same "file -> symlink: a deletion, then a creation of the same path" \
	"$(rec "$BC" "$(hdr f2l)" | grep -E '^(diff|new|deleted)')" \
"diff --git a/f2l b/f2l
deleted file mode 100644
diff --git a/f2l b/f2l
new file mode 120000"
same "symlink -> file: the same, modes swapped" \
	"$(rec "$BC" "$(hdr l2f)" | grep -E '^(diff|new|deleted)')" \
"diff --git a/l2f b/l2f
deleted file mode 120000
diff --git a/l2f b/l2f
new file mode 100644"
same "file -> directory and directory -> file: deletions and creations" \
	"$(grep -E '^diff --git a/(shape|sub2)' "$BC")" \
"diff --git a/shape b/shape
diff --git a/shape/inner.txt b/shape/inner.txt
diff --git a/sub2 b/sub2
diff --git a/sub2/x.txt b/sub2/x.txt"

rm -rf "$SCRATCH/d" && cp -a "$SCRATCH/A" "$SCRATCH/d"
t "decree apply diff A..C (binary records, type and shape changes) on a copy of A" D --store "$SCRATCH/store-d" -C "$SCRATCH/d" -q apply "$AC"
same_shape "... copy of A becomes C exactly" "$SCRATCH/d" "$SCRATCH/C"
t "decree apply -R diff A..C" D --store "$SCRATCH/store-d" -C "$SCRATCH/d" -q apply -R "$AC"
same_shape "... back to A exactly (sub/new removed again)" "$SCRATCH/d" "$SCRATCH/A"
rm -rf "$SCRATCH/d" && cp -a "$SCRATCH/B" "$SCRATCH/d"
t "decree apply diff B..C on a copy of B" D --store "$SCRATCH/store-d2" -C "$SCRATCH/d" -q apply "$BC"
same_shape "... copy of B becomes C exactly" "$SCRATCH/d" "$SCRATCH/C"

# what the other tools do with the binary record (docs/diff-format.md 1.5)
rm -rf "$SCRATCH/g" && cp -a "$SCRATCH/B" "$SCRATCH/g" && git init -q "$SCRATCH/g"
(cd "$SCRATCH/g" && git apply "$BC") >"$SCRATCH/.o" 2>&1
gitrc=$?
check "git apply rejects a diff with a decree-base64 record" test "$gitrc" -ne 0
check "... with 'unrecognized binary patch'" grep -q 'unrecognized binary patch' "$SCRATCH/.o"
same_tree "... and writes nothing (text records of the same diff neither)" "$SCRATCH/g" "$SCRATCH/B"

# ===== seeded random property test ===========================================
cat >"$SCRATCH/gen.py" <<'EOF'
# gen.py new|edit SEED DIR: a small random tree, or random edits of one
import os, random, sys
what, seed, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(seed * 2 + (what == "edit"))
VOC = [b"alpha", b"beta", b"gamma", b"delta", b"{", b"}", b"", b"\tret 0;", b"caf\xe9"]
NAMES = ["a.txt", "b.txt", "c", "sub/d.txt", "sub/e f.txt", "z/y/x.txt", "bin.dat", "w\tt", "lnk"]

def lines(n):
    out = []
    for _ in range(n):
        eol = b"\r\n" if rng.random() < 0.15 else b"\n"
        out.append(rng.choice(VOC) + eol)
    return out

def render(ls, binary=False):
    data = b"".join(ls)
    if ls and rng.random() < 0.25:
        data = data.rstrip(b"\n").rstrip(b"\r")    # no final newline
    if binary:
        data = data[: len(data) // 2] + b"\0" + data[len(data) // 2 :]
    return data

def write(rel, data, mode):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p) or root, exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)

def link(rel, target):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p) or root, exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    os.symlink(target, p)

def new_file(rel):
    if rel == "lnk" or rng.random() < 0.08:
        link(rel, rng.choice(NAMES[:4]))
    else:
        write(rel, render(lines(rng.randint(0, 30)), binary=(rel == "bin.dat" or rng.random() < 0.1)),
              0o755 if rng.random() < 0.2 else 0o644)

if what == "new":
    for rel in rng.sample(NAMES, rng.randint(2, 6)):
        new_file(rel)
    sys.exit(0)

changed = False
for rel in NAMES:
    p = os.path.join(root, rel)
    if not os.path.lexists(p):
        if rng.random() < 0.25:
            new_file(rel); changed = True
        continue
    r = rng.random()
    if r < 0.3:
        continue
    changed = True
    if os.path.islink(p):
        if r < 0.6: link(rel, rng.choice(NAMES[:5]) + "x")
        elif r < 0.8: os.unlink(p)
        else: write(rel, render(lines(3)), 0o644)
        continue
    if r < 0.4:
        os.unlink(p)
    elif r < 0.47:
        os.chmod(p, 0o644 if os.stat(p).st_mode & 0o100 else 0o755)
    elif r < 0.5:
        link(rel, "a.txt")
    else:
        data = open(p, "rb").read()
        ls = data.splitlines(True)
        for _ in range(rng.randint(1, 5)):
            k = rng.randint(0, len(ls))
            op = rng.random()
            if op < 0.4 and ls and k < len(ls): ls[k] = rng.choice(VOC) + b"\n"
            elif op < 0.7: ls[k:k] = lines(rng.randint(1, 3))
            elif ls and k < len(ls): del ls[k : k + rng.randint(1, 3)]
        if ls and rng.random() < 0.2:    # toggle the final newline
            ls[-1] = ls[-1].rstrip(b"\r\n") if ls[-1].endswith(b"\n") else ls[-1] + b"\n"
        nd = b"".join(ls)
        if rng.random() < 0.06:
            nd += b"\0"
        write(rel, nd, os.stat(p).st_mode & 0o777)
if not changed:
    with open(os.path.join(root, "a.txt"), "ab") as f:
        f.write(b"appended\n")
EOF
PR=$SCRATCH/prop
mkdir -p "$PR"
for seed in $(seq 1001 1030); do
	r=$PR/$seed
	mkdir -p "$r/t"
	why=
	python3 "$SCRATCH/gen.py" new "$seed" "$r/t" || why="gen failed"
	id=$(D --store "$PR/store" -C "$r/t" checkpoint create 2>&1) || why="$why; create: $id"
	cp -a "$r/t" "$r/old"
	python3 "$SCRATCH/gen.py" edit "$seed" "$r/t" || why="$why; edit failed"
	D --store "$PR/store" -C "$r/t" checkpoint diff "$id" >"$r/p.diff" 2>"$r/err" || why="$why; diff: $(cat "$r/err")"
	cp -a "$r/old" "$r/w"
	if ! D --store "$PR/store-w" -C "$r/w" -q apply "$r/p.diff" 2>"$r/err"; then why="$why; apply: $(cat "$r/err")"
	elif [ "$(tree_state "$r/w")" != "$(tree_state "$r/t")" ]; then why="$why; apply: $(diff <(tree_state "$r/t") <(tree_state "$r/w") | head -6)"
	elif ! D --store "$PR/store-w" -C "$r/w" -q apply -R "$r/p.diff" 2>"$r/err"; then why="$why; apply -R: $(cat "$r/err")"
	elif [ "$(tree_state "$r/w")" != "$(tree_state "$r/old")" ]; then why="$why; apply -R: $(diff <(tree_state "$r/old") <(tree_state "$r/w") | head -6)"
	fi
	# text-only diffs: GNU patch must agree (forwards; -R has a documented
	# limitation with type changes)
	if [ -z "$why" ] && ! grep -q '^GIT binary patch$' "$r/p.diff"; then
		cp -a "$r/old" "$r/gp"
		if ! (cd "$r/gp" && patch -p1 -s -f <"$r/p.diff") >"$r/err" 2>&1; then why="patch -p1: $(head -3 "$r/err")"
		elif [ "$(tree_state "$r/gp")" != "$(tree_state "$r/t")" ]; then why="patch -p1: $(diff <(tree_state "$r/t") <(tree_state "$r/gp") | head -6)"
		fi
	fi
	if [ -z "$why" ]; then ok "random tree, seed $seed: diff, apply, apply -R reproduce both trees"
	else not_ok "random tree, seed $seed: diff, apply, apply -R reproduce both trees" "$why (kept: DECREE_TEST_PRESERVE=1, $r)"; fi
	[ "${DECREE_TEST_PRESERVE:-0}" = 1 ] || rm -rf "$r"
done

# ===== --stat, --name-status, --json, paths, -U ==============================
P=$SCRATCH/small
mkdir -p "$P/sub" && cd "$P" || exit 1
printf '1\n2\n3\n' >a.txt
printf 'b\n' >b.txt
printf 'c\0' >c.bin
printf 's\n' >sub/s.txt
printf 'q\n' >'q"uote.txt'
for i in $(seq 1 20); do printf 'L%s\n' "$i"; done >long.txt
t_match '[0-9a-f]*' "small: checkpoint" D --store "$S" checkpoint create --message small
SM=$OUT
t_out "" "diff of an unchanged tree is empty" D --store "$S" checkpoint diff "$SM"
printf '1\nX\n3\n' >a.txt
rm b.txt
printf 'c\0d' >c.bin
printf 'd1\nd2\n' >d.txt
printf 's2\n' >>sub/s.txt
sed -i 's/^L10$/TEN/' long.txt
printf 'Q\n' >'q"uote.txt'

# a name with '"' is C-quoted, as git diff --stat/--name-status quote it
t_out " a.txt         | 2 +-
 b.txt         | 1 -
 c.bin         | Bin
 d.txt         | 2 ++
 long.txt      | 2 +-
 \"q\\\"uote.txt\" | 2 +-
 sub/s.txt     | 1 +
 7 files changed, 6 insertions(+), 4 deletions(-)" "--stat: one row per file and the summary line" D --store "$S" checkpoint diff "$SM" --stat
t_out " a.txt | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)" "--stat -- a.txt: singular summary" D --store "$S" checkpoint diff "$SM" --stat -- a.txt
t_out "$(printf 'M\ta.txt\nD\tb.txt\nM\tc.bin\nA\td.txt\nM\tlong.txt\nM\t"q\\"uote.txt"\nM\tsub/s.txt')" \
	"--name-status: A/D/M lines in path order" D --store "$S" checkpoint diff "$SM" --name-status

t "--json" D --store "$S" --json checkpoint diff "$SM"
printf '%s\n' "$OUT" >"$SCRATCH/d.json"
check "--json is valid JSON (python3 -m json.tool)" python3 -m json.tool "$SCRATCH/d.json" /dev/null
same "--json: per-file status, insertions, deletions, binary; totals" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["files"]:
    print(f["path"], f["status"], f["insertions"], f["deletions"], f["binary"], f["old_mode"], f["new_mode"])
print("total", d["files_changed"], d["insertions"], d["deletions"])' "$SCRATCH/d.json" 2>&1)" \
'a.txt M 1 1 False 644 644
b.txt D 0 1 False 644 None
c.bin M 0 0 True 644 644
d.txt A 2 0 False None 644
long.txt M 1 1 False 644 644
q"uote.txt M 1 1 False 644 644
sub/s.txt M 1 0 False 644 644
total 7 6 4'
dto "$SCRATCH/small.diff" D --store "$S" checkpoint diff "$SM"
same "--json: the \"diff\" texts concatenated are the text diff" "$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.stdout.write("".join(f["diff"] for f in d["files"]))' "$SCRATCH/d.json" | sha256sum)" "$(sha256sum <"$SCRATCH/small.diff")"
t "--json --stat" D --store "$S" --json checkpoint diff "$SM" --stat
same "--json --stat: no \"diff\" keys, same counts" "$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(any("diff" in f for f in d["files"]), len(d["files"]), d["insertions"], d["deletions"])' 2>&1)" "False 7 6 4"
t "--json --name-status" D --store "$S" --json checkpoint diff "$SM" --name-status
same "--json --name-status: statuses, no \"diff\" keys" "$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(any("diff" in f for f in d["files"]), "".join(f["status"] for f in d["files"]))' 2>&1)" "False MDMAMMM"

same "-- sub: only paths under sub" "$(D --store "$S" checkpoint diff "$SM" -- sub | grep '^diff --git')" "diff --git a/sub/s.txt b/sub/s.txt"
same "-- ./sub/ is the same filter" "$(D --store "$S" checkpoint diff "$SM" -- ./sub/ | grep '^diff --git')" "diff --git a/sub/s.txt b/sub/s.txt"
same "-- a.txt d.txt: two records" "$(D --store "$S" checkpoint diff "$SM" -- a.txt d.txt | grep '^diff --git')" \
"diff --git a/a.txt b/a.txt
diff --git a/d.txt b/d.txt"
t_out "" "-- a path that did not change: empty diff" D --store "$S" checkpoint diff "$SM" -- nothing/here

t_out "@@ -10 +10 @@
-L10
+TEN" "-U 0: no context lines" sh -c '"$DECREE" --store "$1" checkpoint diff "$2" -U 0 -- long.txt | tail -n +5' sh "$S" "$SM"
t_out "@@ -9,3 +9,3 @@
 L9
-L10
+TEN
 L11" "-U 1: one line of context" sh -c '"$DECREE" --store "$1" checkpoint diff "$2" -U 1 -- long.txt | tail -n +5' sh "$S" "$SM"
t_out "@@ -7,7 +7,7 @@" "default context is 3 lines" sh -c '"$DECREE" --store "$1" checkpoint diff "$2" -- long.txt | sed -n 5p' sh "$S" "$SM"
# -U 0 output still applies with decree apply
dto "$SCRATCH/u0.diff" D --store "$S" checkpoint diff "$SM" -U 0
cp -a "$P" "$SCRATCH/small-new"
D --store "$S" -C "$P" -q checkpoint restore "$SM" 2>/dev/null
check "restore of the small checkpoint brought b.txt back" test -f b.txt
t "decree apply of a -U 0 diff" D --store "$S" -C "$P" -q apply "$SCRATCH/u0.diff"
same_tree "... gives the new tree exactly" "$P" "$SCRATCH/small-new"

# ===== many records, several threads ==========================================
# Records are formatted on several threads, at most 1,024 ahead of the one
# being written (diff.c's DIFF_AHEAD): 2,500 changed files cross that
# window twice.  The output must be the same bytes whatever the number of
# threads, in path order, and a reader that stops early stops decree with
# one error line.
M=$SCRATCH/many
mkdir -p "$M" && cd "$M" || exit 1
for d in 0 1 2 3 4; do
	mkdir "d$d"
	for k in $(seq 0 499); do printf 'one\ntwo %s %s\nthree\n' $d $k >"d$d/f$k"; done
done
MS=$SCRATCH/many-store
MR=$(D --store "$MS" -q checkpoint create -m many)
for d in 0 1 2 3 4; do
	for k in $(seq 0 499); do printf 'one\nTWO %s %s\nthree\n' $d $k >"d$d/f$k"; done
done
DECREE_THREADS=1 dto "$SCRATCH/many1.diff" D --store "$MS" checkpoint diff "$MR"
same "2,500 records on one thread" "$(grep -c '^diff --git ' "$SCRATCH/many1.diff")" 2500
same "... in path order" "$(grep '^diff --git ' "$SCRATCH/many1.diff")" \
	"$(grep '^diff --git ' "$SCRATCH/many1.diff" | LC_ALL=C sort)"
for n in 2 3 8; do
	DECREE_THREADS=$n dto "$SCRATCH/many$n.diff" D --store "$MS" checkpoint diff "$MR"
	check "... the same bytes on $n threads" cmp -s "$SCRATCH/many1.diff" "$SCRATCH/many$n.diff"
done
DECREE_THREADS=2 dto "$SCRATCH/many.json" D --store "$MS" --json checkpoint diff "$MR"
DECREE_THREADS=1 dto "$SCRATCH/many1.json" D --store "$MS" --json checkpoint diff "$MR"
check "... --json the same on 1 and 2 threads" cmp -s "$SCRATCH/many1.json" "$SCRATCH/many.json"
DECREE_THREADS=2 "$DECREE" --store "$MS" checkpoint diff "$MR" 2>"$SCRATCH/many.err" | head -n 1 >"$SCRATCH/many.head"
same "a reader that stops after one line: decree ends by SIGPIPE (141), as git does" "${PIPESTATUS[0]}" 141
same "... it got the first record's first line" "$(cat "$SCRATCH/many.head")" "diff --git a/d0/f0 b/d0/f0"
same "... nothing on stderr" "$(cat "$SCRATCH/many.err")" ""
cd "$P" || exit 1

# ===== errors ===================================================================
t_err "decree: *" "unknown ref: exit 1" 1 D --store "$S" checkpoint diff deadbeefdeadbeef
same "... exactly one stderr line" "$(printf '%s\n' "$ERR" | wc -l)" 1
same "... nothing on stdout" "$OUT" ""
t_err "decree: *" "unknown second ref: exit 1" 1 D --store "$S" checkpoint diff "$SM" nosuch:message
same "... exactly one stderr line" "$(printf '%s\n' "$ERR" | wc -l)" 1
t_err "decree: *" "unknown ref with --json: exit 1" 1 D --store "$S" --json checkpoint diff nosuch:message
same "... no partial JSON on stdout: only the error document" "$OUT" \
	"{\"error\":{\"code\":\"not_found\",\"message\":\"${ERR#decree: }\"}}"
t_err "*usage*" "no ref: usage error, exit 2" 2 D --store "$S" checkpoint diff
t_err "decree: *" "three refs: exit 2" 2 D --store "$S" checkpoint diff "$SM" "$SM" "$SM"
t_err "decree: *" "--stat with --name-status: exit 2" 2 D --store "$S" checkpoint diff "$SM" --stat --name-status
t_err "decree: *" "-U x: exit 2" 2 D --store "$S" checkpoint diff "$SM" -U x
t_err "decree: *" "-U -1: exit 2" 2 D --store "$S" checkpoint diff "$SM" -U -1
t_err "decree: *" "unknown option: exit 2" 2 D --store "$S" checkpoint diff "$SM" --bogus

done_testing
