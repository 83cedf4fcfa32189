#!/bin/bash
# exactness.sh - restore reproduces bytes, modes, symlinks and tree shape
# exactly (DESIGN "Exactness"), never follows a symlink while doing so, and
# writes only what differs ("Minimal writes": untouched files keep inode
# and mtime).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

D() { "$DECREE" "$@"; }
same() { # name got want
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "$(diff <(printf '%s\n' "$3") <(printf '%s\n' "$2") | head -40)"; fi
}
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi; }
# directories (without .decree) - tree_state covers only files and links
dir_state() { (cd "$1" && find . -path ./.decree -prune -o -type d -print | LC_ALL=C sort); }
# inode + mtime of the given paths (lstat)
stamps() { (cd "$P" && for f in "$@"; do printf '%s %s\n' "$f" "$(stat -c '%i %Y %a' -- "$f" 2>&1)"; done); }
full_state() { tree_state "$P"; dir_state "$P"; }

P=$SCRATCH/proj
OUTSIDE=$SCRATCH/outside
mkdir -p "$P" "$OUTSIDE/dir"
printf 'outside file, must never change\n' >"$OUTSIDE/victim.txt"
printf 'outside dir file\n' >"$OUTSIDE/dir/keep.txt"
printf 'outside file with a hard link into the tree later\n' >"$OUTSIDE/hard.txt"
OUTSIDE_STATE=$(tree_state "$OUTSIDE")
cd "$P" || exit 1

# ---- state X ------------------------------------------------------------
umask 022
printf '#!/bin/sh\necho hi\n' >exec.sh && chmod 0755 exec.sh
printf 'plain\n' >plain.txt && chmod 0644 plain.txt
printf 'mode flips\n' >modeflip.sh && chmod 0644 modeflip.sh
printf 'was exec\n' >wasexec.sh && chmod 0755 wasexec.sh
: >empty.txt
printf 'no final newline' >nonl.txt
printf 'line one\r\nline two\r\n\r\n' >crlf.txt
printf 'caf\xe9 \xff\xfe\x80 latin-1 and junk\n' >latin1.txt
printf '\x00\x01\x02\x00binary\x00\xff\n\x00' >nul.bin # 14 bytes
head -c 70000 /dev/urandom >random.bin
mkdir -p sub a/b/c/d
printf 'target\n' >sub/target.txt
ln -s sub/target.txt link_rel
ln -s ../exec.sh sub/link_up
ln -s does/not/exist link_dangling
ln -s /etc/passwd link_abs
ln -s sub link_dir
printf 'a file, will become a symlink\n' >f2l
ln -s plain.txt l2f
ln -s plain.txt retarget
printf 'deep\n' >a/b/c/d/e.txt
printf 'will be replaced by a link to an outside file\n' >victim.txt
printf 'dash\n' >./-dash.txt
printf 'lead\n' >' lead space'
printf 'back\n' >'back\slash'
printf 'tab\n' >$'t\tab'
head -c 3000000 /dev/urandom >large.bin
printf 'v1 of h\n' >h.txt
printf 'keep me 1\n' >keep1.txt
mkdir -p keepdir && printf 'keep me 2\n' >keepdir/keep2.txt && printf 'keep me 3\n' >a/keep3.txt
touch -h -d '2001-02-03 04:05:06' keep1.txt keepdir/keep2.txt a/keep3.txt exec.sh plain.txt nonl.txt link_rel

LARGE_SUM=$(sha256sum <large.bin)
t_match '[0-9a-f]*' "checkpoint X" D checkpoint create --message X
X=$OUT
STATE_X=$(full_state)
_run D --json checkpoint show "$X"
modes=$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%s" % (f["path"], f["mode"]) for f in d["files"] if f["path"] in ("exec.sh", "plain.txt", "link_rel", "link_dangling", "empty.txt")))')
same "show --json modes: 755 exec, 644 plain, 120000 links" "$modes" "empty.txt:644 exec.sh:755 link_dangling:120000 link_rel:120000 plain.txt:644"
szs=$(printf '%s' "$OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s:%s:%s" % (f["path"], f["size"], f["sha256"][:8]) for f in d["files"] if f["path"] in ("empty.txt", "nul.bin", "link_rel")))')
same "show --json size and sha256 (link: of its target string)" "$szs" "empty.txt:0:$(sha256sum </dev/null | cut -c1-8) link_rel:14:$(printf 'sub/target.txt' | sha256sum | cut -c1-8) nul.bin:14:$(sha256sum <nul.bin | cut -c1-8)"

# ---- mutate into state Y --------------------------------------------------
printf 'changed\n' >>exec.sh # content change, keep 0755
chmod 0755 modeflip.sh       # mode-only change
chmod 0644 wasexec.sh
printf 'x' >empty.txt
printf 'no final newline!' >nonl.txt
printf 'line one\nline two\n' >crlf.txt
printf 'utf-8 now: caf\xc3\xa9\n' >latin1.txt
printf '\x00\x00' >nul.bin
head -c 1000 /dev/urandom >>random.bin
rm link_rel && ln -s sub/other.txt link_rel
rm link_dangling && printf 'now a file\n' >link_dangling
rm retarget && ln -s exec.sh retarget
rm f2l && ln -s ../outside f2l
rm l2f && printf 'was a link\n' >l2f
rm -r a/b
mkdir -p new/deep/er/est && printf 'new\n' >new/deep/er/est/x.txt && printf 'new2\n' >new/y.txt
rm victim.txt && ln -s "$OUTSIDE/victim.txt" victim.txt
printf 'created\n' >created.txt
rm ./-dash.txt
printf 'lead2\n' >' lead space'
mv 'back\slash' 'back\slash2'
printf 'XXXX' | dd of=large.bin bs=1 seek=1500000 conv=notrunc status=none
rm h.txt && ln "$OUTSIDE/hard.txt" h.txt # h.txt now shares an inode with an outside file
BEFORE_Y_STAMPS=$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)
t_match '[0-9a-f]*' "checkpoint Y of the mutated tree" D checkpoint create --message Y
Y=$OUT
STATE_Y=$(full_state)
same "checkpoint create changed no stamp" "$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)" "$BEFORE_Y_STAMPS"

# ---- restore X --------------------------------------------------------------
STAMPS=$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)
t "restore X" D checkpoint restore "$X"
same "tree (files, links, modes, hashes) equals X" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -E '^[FL] ')"
same "directory set equals X (new dirs removed, deleted dirs re-created)" "$(dir_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -vE '^[FL] ')"
check "exec.sh is 0755" test "$(stat -c %a exec.sh)" = 755
check "modeflip.sh is back to 0644" test "$(stat -c %a modeflip.sh)" = 644
check "wasexec.sh is back to 0755" test "$(stat -c %a wasexec.sh)" = 755
check "empty.txt is empty" test -f empty.txt -a ! -s empty.txt
check "nonl.txt has no final newline" test "$(tail -c 1 nonl.txt | od -An -c | tr -d ' ')" = "e"
check "crlf.txt keeps CRLF" cmp -s crlf.txt <(printf 'line one\r\nline two\r\n\r\n')
check "latin1.txt keeps non-UTF-8 bytes" cmp -s latin1.txt <(printf 'caf\xe9 \xff\xfe\x80 latin-1 and junk\n')
check "nul.bin keeps NUL bytes" cmp -s nul.bin <(printf '\x00\x01\x02\x00binary\x00\xff\n\x00')
check "link_rel is a symlink to sub/target.txt" test -L link_rel -a "$(readlink link_rel)" = sub/target.txt
check "sub/link_up is a relative symlink ../exec.sh" test -L sub/link_up -a "$(readlink sub/link_up)" = ../exec.sh
check "link_dangling is a dangling symlink again (file -> link)" test -L link_dangling -a "$(readlink link_dangling)" = does/not/exist -a ! -e link_dangling
check "link_abs is a link to /etc/passwd, not a copy" test -L link_abs -a "$(readlink link_abs)" = /etc/passwd
check "link_dir is a link to sub" test -L link_dir -a "$(readlink link_dir)" = sub
check "retarget points to plain.txt again" test "$(readlink retarget)" = plain.txt
check "f2l is a regular file again (link -> file)" test -f f2l -a ! -L f2l
check "l2f is a symlink again (file -> link)" test -L l2f -a "$(readlink l2f)" = plain.txt
check "a/b/c/d/e.txt re-created in deep directories" test -f a/b/c/d/e.txt
check "new/ removed entirely" test ! -e new
check "victim.txt is a regular file again" test -f victim.txt -a ! -L victim.txt
check "name with a leading dash re-created" test -f ./-dash.txt
check "name with a leading space restored" test "$(cat ' lead space')" = lead
check "name with a backslash re-created, renamed copy deleted" test -f 'back\slash' -a ! -e 'back\slash2'
check "3 MB file restored byte-exact" test "$(sha256sum <large.bin)" = "$LARGE_SUM"
check "h.txt (was a hard link to an outside file) restored" test "$(cat h.txt)" = "v1 of h"
check "h.txt no longer shares the outside file's inode" test "$(stat -c %i h.txt)" != "$(stat -c %i "$OUTSIDE/hard.txt")"
same "nothing outside the tree was written through a symlink or hard link" "$(tree_state "$OUTSIDE")" "$OUTSIDE_STATE"
same "untouched files keep inode and mtime" "$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)" "$STAMPS"
left=$(find . -path ./.decree -prune -o -print | grep -iE 'tmp|\.decree-|~$|\.new$|\.old$' || true)
same "no temp files left in the tree" "$left" ""

# ---- emptied directories -------------------------------------------------------
# emptydir/ existed only in Y (no files): restore is about files, but a
# directory created since X that holds no scanned file is not a tracked thing;
# only directories that restore emptied must go (new/ above).

# ---- restore Y (the reverse direction) ----------------------------------------
STAMPS=$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)
t "restore Y" D checkpoint restore "$Y"
same "tree (files, links, modes, hashes) equals Y" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_Y" | grep -E '^[FL] ')"
check "victim.txt is the link to the outside file again" test -L victim.txt -a "$(readlink victim.txt)" = "$OUTSIDE/victim.txt"
check "a/b removed (emptied by restore)" test ! -e a/b
same "outside files untouched after restore Y" "$(tree_state "$OUTSIDE")" "$OUTSIDE_STATE"
same "untouched files keep inode and mtime (restore Y)" "$(stamps keep1.txt keepdir/keep2.txt a/keep3.txt plain.txt)" "$STAMPS"

# ---- restoring through symlinks must not escape ---------------------------------
# victim.txt -> $OUTSIDE/victim.txt now.  Restoring X by path must replace
# the link, never write through it.
t "restore X -- victim.txt (now a link to an outside file)" D checkpoint restore "$X" -- victim.txt
check "victim.txt is a regular file after per-path restore" test -f victim.txt -a ! -L victim.txt
same "outside untouched after per-path restore through a link" "$(tree_state "$OUTSIDE")" "$OUTSIDE_STATE"
check "files beside the restored path keep Y's state (created.txt still there)" test -f created.txt

# ---- a name with a newline (kept out of the main tree: tree_state is line-based)
NL=$SCRATCH/nl
mkdir -p "$NL" && printf 'newline in name\n' >"$NL/"$'new\nline.txt' && printf 'other\n' >"$NL/"$'x\n'
t_match '[0-9a-f]*' "checkpoint with names containing newlines" D -C "$NL" checkpoint create
NLX=$OUT
printf 'changed\n' >"$NL/"$'new\nline.txt' && rm "$NL/"$'x\n' && printf 'y\n' >"$NL/"$'y\n\n'
t "restore over names containing newlines" D -C "$NL" checkpoint restore "$NLX"
check "new<LF>line.txt restored" test "$(cat "$NL/"$'new\nline.txt')" = "newline in name"
check "x<LF> re-created" test -f "$NL/"$'x\n'
check "y<LF><LF> deleted" test ! -e "$NL/"$'y\n\n'
check "exactly two entries left" test "$(find "$NL" -path "$NL/.decree" -prune -o -type f -print0 | tr -cd '\0' | wc -c)" = 2

# ---- file <-> directory <-> symlink replacement -------------------------------
# Each case in its own project so one failure does not mask another:
#   shape S1 -> checkpoint 1 -> change to shape S2 -> checkpoint 2 ->
#   restore 1 (must equal S1) -> restore 2 (must equal S2) -> undo (S1).
# A failed restore must leave the tree as it was.
shape_case() { # name setup1 setup2  (shell snippets run inside the project)
	local cname=$1 q=$SCRATCH/shape.$RANDOM$RANDOM s1 s2 before c1 c2 ok1=0
	mkdir -p "$q" && printf 'bystander\n' >"$q/bystander.txt"
	(cd "$q" && eval "$2")
	_run D -C "$q" checkpoint create; c1=$OUT
	s1=$(tree_state "$q")
	(cd "$q" && eval "$3")
	_run D -C "$q" checkpoint create; c2=$OUT
	s2=$(tree_state "$q")
	before=$s2
	t "$cname: restore the first shape" D -C "$q" checkpoint restore "$c1"
	if [ $RC -eq 0 ]; then same "$cname: tree equals the first shape" "$(tree_state "$q")" "$s1"; before=$s1; ok1=1
	else same "$cname: failed restore changed nothing" "$(tree_state "$q")" "$s2"; fi
	same "$cname: outside untouched" "$(tree_state "$OUTSIDE")" "$OUTSIDE_STATE"
	t "$cname: restore the second shape" D -C "$q" checkpoint restore "$c2"
	if [ $RC -eq 0 ]; then same "$cname: tree equals the second shape" "$(tree_state "$q")" "$s2"
	else same "$cname: failed restore changed nothing" "$(tree_state "$q")" "$before"; fi
	if [ $ok1 = 1 ] && [ $RC -eq 0 ]; then
		t "$cname: undo" D -C "$q" undo
		same "$cname: undo gives the first shape" "$(tree_state "$q")" "$s1"
	fi
}
shape_case "file->dir" "printf 'f\\n' >node" "rm node && mkdir -p node/deeper && printf 'n1\\n' >node/n1 && printf 'n2\\n' >node/deeper/n2"
shape_case "dir->file" "mkdir -p tree/inner && printf 't1\\n' >tree/t1 && printf 't2\\n' >tree/inner/t2" "rm -r tree && printf 'now a file\\n' >tree"
shape_case "dir->symlink to outside dir" "mkdir dirv && printf 'dv\\n' >dirv/f.txt" "rm -r dirv && ln -s '$OUTSIDE/dir' dirv"
shape_case "dir->dangling symlink" "mkdir dl && printf 'dl\\n' >dl/f.txt" "rm -r dl && ln -s nowhere dl"
shape_case "file->symlink to outside file" "printf 'v\\n' >v.txt" "rm v.txt && ln -s '$OUTSIDE/victim.txt' v.txt"
shape_case "deep tree created / emptied" "mkdir -p a && printf 'a\\n' >a/x" "mkdir -p a/b/c/d/e && printf 'deep\\n' >a/b/c/d/e/f.txt && rm a/x"

# ---- minimal writes ---------------------------------------------------------------
t "restore X" D checkpoint restore "$X"
same "tree equals X again" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -E '^[FL] ')"
# Make every file old, then change exactly one file and one mode.
find . -path ./.decree -prune -o -exec touch -h -d '2002-03-04 05:06:07' {} +
ALL=$(cd "$P" && find . -path ./.decree -prune -o \( -type f -o -type l \) -print | LC_ALL=C sort | sed 's|^\./||')
printf 'edited\n' >plain.txt
chmod 0755 nonl.txt
touch -d '2002-03-04 05:06:07' plain.txt
OTHERS=$(printf '%s\n' "$ALL" | grep -vxE 'plain.txt|nonl.txt')
ST=$(stamps $OTHERS)
t "restore X after one content change and one mode change" D checkpoint restore -v "$X"
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|create|delete) ' | LC_ALL=C sort)
same "restore reports exactly the two changed paths" "$plan" "restore nonl.txt
restore plain.txt"
same "every other file keeps inode and mtime" "$(stamps $OTHERS)" "$ST"
check "plain.txt content restored" test "$(cat plain.txt)" = plain
check "nonl.txt mode restored to 0644" test "$(stat -c %a nonl.txt)" = 644
same "tree equals X" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -E '^[FL] ')"

ST=$(stamps $ALL)
t "restore X when the tree already equals X" D checkpoint restore "$X"
same "no-op restore touches no file (inode and mtime)" "$(stamps $ALL)" "$ST"
plan=$(printf '%s\n' "$OUT" | grep -E '^(restore|create|delete) ')
same "no-op restore reports no changes" "$plan" ""

# ---- undo of a restore is exact too -----------------------------------------------------
t "restore Y" D checkpoint restore "$Y"
t "undo" D undo
same "undo gives X's tree back exactly" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -E '^[FL] ')"
t "redo" D redo
same "redo gives Y's tree exactly" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_Y" | grep -E '^[FL] ')"

# ---- umask does not leak into restored modes ------------------------------------------------
t "restore X under umask 077" bash -c "umask 077; exec '$DECREE' checkpoint restore '$X'"
check "plain.txt is 0644 under umask 077" test "$(stat -c %a plain.txt)" = 644
check "exec.sh is 0755 under umask 077" test "$(stat -c %a exec.sh)" = 755
same "tree equals X under umask 077" "$(tree_state "$P")" "$(printf '%s\n' "$STATE_X" | grep -E '^[FL] ')"
t "fsck" D fsck

# ---- the stat cache a restore leaves ------------------------------------
# The restore's capture hands its tree ids to the stat cache it saves; the
# next scan trusts a directory's id only when nothing below it changed
# since that scan, and the restore itself changes some.  After a restore,
# and after edits below directories it touched and ones it did not, a
# checkpoint must have the tree id of a store with no cache at all.
tree_of() { # STORE: the tree of a new checkpoint of $Q in STORE
	id=$(D --store "$1" -C "$Q" checkpoint create -q) || return 1
	D --store "$1" -C "$Q" checkpoint list --json |
		python3 -c 'import json,sys; i=sys.argv[1]; print([c["tree"] for c in json.load(sys.stdin)["checkpoints"] if c["id"]==i][0])' "$id"
}
Q=$SCRATCH/treeids
S=$SCRATCH/treeids-store
mkdir -p "$Q/a/b/c" "$Q/d/e" "$Q/f"
for x in a/1 a/b/2 a/b/c/3 d/4 d/e/5 f/6 7; do printf '%s\n' "$x" >"$Q/$x"; done
base=$(D --store "$S" -C "$Q" checkpoint create -q)
printf 'edited\n' >"$Q/a/b/c/3" && printf 'new\n' >"$Q/d/e/new" && rm "$Q/f/6"
check "restore with edits in a/b/c, d/e and f" D --store "$S" -C "$Q" -q checkpoint restore "$base"
same "... a checkpoint right after it: the tree of a cold store" "$(tree_of "$S")" "$(tree_of "$SCRATCH/cold-1")"
n=2
for edit in "a/b/c/3" "d/e/5" "a/1" "f/6" "7"; do
	printf 'again %s\n' "$edit" >>"$Q/$edit"
	same "... then an edit of $edit: the tree of a cold store" "$(tree_of "$S")" "$(tree_of "$SCRATCH/cold-$n")"
	n=$((n + 1))
done
check "... and a restore back to the first checkpoint" D --store "$S" -C "$Q" -q checkpoint restore "$base"
mkdir "$Q/a/b/c/new-dir" && printf 'x\n' >"$Q/a/b/c/new-dir/x"
same "... then a new directory deep in a/b/c: the tree of a cold store" "$(tree_of "$S")" "$(tree_of "$SCRATCH/cold-$n")"
check "fsck of that store" D --store "$S" fsck

done_testing
