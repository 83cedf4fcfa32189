#!/bin/bash
# workspace_cache.sh - `workspace apply` saves the workspace's stat cache
# after its scan (docs/workspaces.md), and a saved cache never hides a
# change:
#   - the apply after one that saved the cache reads no directory
#     (getdents64 on its directories, counted with strace -y; skipped
#     without strace) where nothing
#     was created or removed since, and still carries an in-place edit;
#   - edits, creates, deletes and a same-size edit with its mtime put back,
#     made in the second of the apply that saved the cache or later, are
#     all carried by the next apply (the project then equals the
#     workspace);
#   - the merge sees only the paths the workspace changed: a file of the
#     project where the workspace made a directory (and the reverse) is
#     still refused, nothing written;
#   - the ids the cache keeps name stored objects: a file the apply merged
#     (its workspace bytes never stored) is read again by a checkpoint in
#     the workspace, which fsck then finds complete.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

P=$SCRATCH/p
mkdir -p "$P" && cd "$P" || exit 1
for d in a b c d e; do
	mkdir -p "$d/sub"
	for f in 1 2 3; do
		printf '%s %s\n' "$d" "$f" >"$d/f$f"
		printf 'sub %s %s\n' "$d" "$f" >"$d/sub/g$f"
	done
done
seq 1 20 >m.txt
t "checkpoint" D checkpoint create
t "workspace create w" D workspace create w
W=$OUT
WKEY=$(D --json projects | python3 -c 'import json,sys
for p in json.load(sys.stdin)["projects"]:
    if p["root"] == sys.argv[1]: print(p["key"])' "$W" 2>/dev/null)
WCACHE=$P/.decree/store/roots/$WKEY/statcache

# same_tree: the project equals the workspace (ignoring .decree)
same_tree() { diff -r -x .decree "$P" "$W" >/dev/null; }

# a second for the directories create made to settle (the racy rule)
sleep 1.1
echo "edit 1" >>"$W/a/f1"
t "apply an edit" D workspace apply w
check "... carried to the project" same_tree
check "... the workspace's stat cache was saved" test -s "$WCACHE"

sleep 1.1
printf 'A 2\n' >"$W/b/f2" # same inode: b/ is unchanged
if command -v strace >/dev/null 2>&1 &&
	strace -f -o /dev/null true >/dev/null 2>&1; then
	# (LeakSanitizer does not work under ptrace)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -y -e trace=getdents64 -o "$SCRATCH/trace" \
		"$DECREE" workspace apply w >/dev/null 2>"$SCRATCH/err"
	RC=$?
	same "apply with the saved cache: exit 0" "$RC" 0
	same "... reads no directory (every listing trusted)" \
		"$(grep -c "getdents64([0-9]*<$W[/>]" "$SCRATCH/trace")" 0
else
	echo "ok # SKIP no strace (or no ptrace): getdents64 not counted"
	_n=$((_n + 1))
	t "apply with the saved cache" D workspace apply w
fi
check "... the in-place edit is carried" same_tree

# changes in the second of the apply that saved the cache
printf 'A 3\n' >"$W/c/f3"
echo new >"$W/d/new"
rm "$W/e/f1"
t "apply changes made in the same second" D workspace apply w
check "... all carried (edit, create, delete)" same_tree

sleep 1.1
# a same-size edit with its mtime put back: only ctime and the listing
# data tell
cp -p "$W/a/sub/g1" "$SCRATCH/ref"
printf 'SUB a 1\n' >"$W/a/sub/g1"
touch -r "$SCRATCH/ref" "$W/a/sub/g1"
echo sub-new >"$W/b/sub/new"
rm "$W/c/sub/g2"
t "apply settled changes" D workspace apply w
check "... all carried (same-size edit with old mtime, create, delete)" same_tree
t "apply again: nothing to do" D workspace apply w
check "... still equal" same_tree

# the project has a file where the workspace made a directory, and the
# reverse: refused by the shape check, nothing written
echo file >x
mkdir "$W/x" && echo in >"$W/x/y"
PRE=$(tree_state "$P")
t_err "*conflict: a parent of 'x/y' is a file or a symlink*" \
	"project file x, workspace x/y: refused" 1 D workspace apply w
same "... nothing written" "$(tree_state "$P")" "$PRE"
rm x && mkdir x && echo q >x/z
rm -r "$W/x" && echo file >"$W/x"
PRE=$(tree_state "$P")
t_err "*conflict: 'x' is a directory*" \
	"project directory x, workspace file x: refused" 1 D workspace apply w
same "... nothing written" "$(tree_state "$P")" "$PRE"
rm -r x "$W/x"

# a merged file: the workspace's bytes are not stored by the apply
sleep 1.1
sed -i '1s/.*/project 1/' m.txt
sed -i '20s/.*/workspace 20/' "$W/m.txt"
sleep 1.1
t "apply a change merged with the project's" D workspace apply w
same "... merged" "$(sed -n '1p;20p' m.txt | tr '\n' ' ')" "project 1 workspace 20 "
t "a checkpoint in the workspace" D -C "$W" --json checkpoint create
CID=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
t "fsck" D fsck
same "... the store is complete (the cache named no unstored bytes)" "$OUT" "store ok"
t "the workspace's checkpoint" D -C "$W" --json checkpoint show "$CID"
same "... holds the workspace's m.txt" \
	"$(printf '%s' "$OUT" | python3 -c 'import json,sys
print([f["sha256"] for f in json.load(sys.stdin)["files"] if f["path"] == "m.txt"][0])')" \
	"$(sha256sum <"$W/m.txt" | cut -d' ' -f1)"

done_testing
