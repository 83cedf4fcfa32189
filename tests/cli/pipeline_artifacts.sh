#!/bin/bash
# pipeline_artifacts.sh - the run directory and the checkpoint of every run
# (seed 000 "Self-Contained Checkpoints", DESIGN "Processing one message"):
# manifest.json saved before the routine starts (spec format, hashes equal
# to sha256sum, ignored files left out), changes.diff (human-readable
# unified diff for new/modified/deleted files that GNU patch -p1 and
# git apply accept: pre-run tree + diff = post-run tree), a failed run's
# partial work diffed and the tree reverted (new files deleted, deleted
# ones restored from the diff), gitignored files never reverted, no git.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

has() { # name file fixed-string
	if grep -qF -- "$3" "$2" 2>/dev/null; then ok "$1"; else not_ok "$1" "'$3' not in $2: $(head -c 2000 "$2" 2>/dev/null)"; fi
}
hasnt() {
	if grep -qF -- "$3" "$2" 2>/dev/null; then not_ok "$1" "'$3' is in $2"; else ok "$1"; fi
}
# state without ignored paths (build/, *.log)
vis_state() { tree_state "$1" | grep -v -e ' ./build/' -e '\.log ' ; }
# manifest_vs_tree DIR MANIFEST: compare a manifest with sha256sum/stat of the tracked files
manifest_vs_tree() {
	python3 - "$1" "$2" <<'EOF'
import json, sys, os, hashlib, stat
root, man = sys.argv[1], json.load(open(sys.argv[2]))
assert set(man) == {"files"}, "top-level keys: %s" % list(man)
bad = []
want = {}
for dp, dns, fns in os.walk(root):
    rel = os.path.relpath(dp, root)
    if rel == ".":
        dns[:] = [d for d in dns if d not in (".decree", ".git", "build")]
    for f in fns:
        p = os.path.normpath(os.path.join(rel, f))
        if p.endswith(".log"):
            continue
        want[p] = os.path.join(dp, f)
got = man["files"]
for p in sorted(set(want) | set(got)):
    if p not in got: bad.append("missing from manifest: " + p); continue
    if p not in want: bad.append("in manifest, not a tracked file: " + p); continue
    e = got[p]
    if set(e) != {"sha256", "size", "mode"}: bad.append("%s: keys %s" % (p, sorted(e)))
    data = open(want[p], "rb").read()
    if e["sha256"] != hashlib.sha256(data).hexdigest(): bad.append(p + ": sha256")
    if e["size"] != len(data): bad.append(p + ": size")
    if e["mode"] != "%o" % stat.S_IMODE(os.lstat(want[p]).st_mode): bad.append("%s: mode %s" % (p, e["mode"]))
print("\n".join(bad))
EOF
}

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\n' >.decree/config.yml
# the project: no .git; .gitignore ignores build/ and *.log
printf 'build/\n*.log\n' >.gitignore
printf 'line one\nline two\nline three\n' >modify.txt
printf 'to be deleted\nwith two lines\n' >delete.txt
printf 'no final newline' >nonl.txt
printf '#!/bin/sh\necho tool\n' >tool.sh
mkdir -p sub/deeper build
printf 'nested\n' >sub/deeper/nested.txt
printf 'object\n' >build/out.o
printf 'debug\n' >debug.log
: >empty.txt
# names the manifest must escape (JSON), or take as they are (UTF-8)
printf 'q\n' >'quote"d.txt'
printf 'b\n' >'back\slash.txt'
printf 't\n' >"$(printf 'tab\there.txt')"
printf 'u\n' >"$(printf 'caf\303\251.txt')"
cat >.decree/routines/work.sh <<'EOF'
#!/bin/bash
# Change the tree in every way; fail when asked to.
fail="${fail:-no}"
set -e
# what the routine sees before it changes anything
if [ -f "$message_dir/manifest.json" ]; then cp "$message_dir/manifest.json" "$message_dir/manifest-seen-by-routine.json"; fi
sed -i 's/line two/line 2, changed/' modify.txt
rm delete.txt
printf 'still none, but changed' >nonl.txt
chmod 755 tool.sh
mkdir -p new/dir
printf 'brand new\n' >new/dir/file.txt
printf 'x\n' >>sub/deeper/nested.txt
printf 'more\n' >>empty.txt
printf 'object, rebuilt\n' >build/out.o
printf 'fresh log\n' >fresh.log
echo "routine output for $message_id"
[ "$fail" = no ]
EOF
cp -a "$P" "$SCRATCH/pre" # the tree before the run
pre_state=$(vis_state "$P")

# ===== a successful run ==================================================================
t "run the work routine" D run -m work -p "change everything" -v routine=work
id=$(fm .decree/inbox/done/work.md id)
R=.decree/runs/$id
for f in message.md manifest.json routine.log changes.diff outcome.json; do
	check "run dir holds $f" test -f "$R/$f"
done
check "no changes-<k>.diff, no failure-context.md for a first-attempt success" test ! -e "$R/changes-1.diff" -a ! -e "$R/failure-context.md"
check "manifest.json was saved before the routine started" test -f "$R/manifest-seen-by-routine.json"
check "... and is the one the routine saw" cmp -s "$R/manifest.json" "$R/manifest-seen-by-routine.json"
check "manifest.json is valid JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$R/manifest.json"
same "manifest.json: every tracked file of the pre-run tree with sha256sum, size and mode; ignored ones excluded" \
	"$(manifest_vs_tree "$SCRATCH/pre" "$R/manifest.json")" ""
bad=
while IFS= read -r -d '' rec; do # "SHA PATH\0": any name (tab, backslash)
	sha=${rec%% *} path=${rec#* }
	[ "$(sha256sum <"$SCRATCH/pre/$path" | cut -c1-64)" = "$sha" ] || bad="$bad $path"
done < <(python3 -c 'import json,sys; [print(e["sha256"], p, end="\0") for p, e in json.load(open(sys.argv[1]))["files"].items()]' "$R/manifest.json")
same "manifest.json: every sha256 equals sha256sum of the pre-run file" "$bad" ""
hasnt "manifest.json leaves out build/ (gitignored)" "$R/manifest.json" '"build/out.o"'
hasnt "manifest.json leaves out *.log (gitignored)" "$R/manifest.json" 'debug.log'
hasnt "manifest.json leaves out .decree/" "$R/manifest.json" '.decree/'
has "manifest.json records .gitignore itself" "$R/manifest.json" '".gitignore"'
has "manifest.json entry for tool.sh: sha256, size, mode 644, exactly" "$R/manifest.json" '"tool.sh":{"sha256":"'"$(sha256sum <"$SCRATCH/pre/tool.sh" | cut -c1-64)"'","size":'"$(stat -c %s "$SCRATCH/pre/tool.sh")"',"mode":"644"}'
has "routine.log captured stdout" "$R/routine.log" "routine output for $id"

# changes.diff: human-readable unified diff
CD=$R/changes.diff
check "changes.diff is text (grep -I)" grep -qI . "$CD"
has "changes.diff: diff --git header for a modified file" "$CD" 'diff --git a/modify.txt b/modify.txt'
has "... --- a/ line" "$CD" '--- a/modify.txt'
has "... +++ b/ line" "$CD" '+++ b/modify.txt'
check "... @@ hunk headers" grep -q '^@@ -[0-9,]* +[0-9,]* @@' "$CD"
has "... the removed line" "$CD" '-line two'
has "... the added line" "$CD" '+line 2, changed'
has "... context lines" "$CD" ' line one'
has "... new file from /dev/null" "$CD" "$(printf -- '--- /dev/null\n+++ b/new/dir/file.txt')"
has "... new file mode" "$CD" 'new file mode 100644'
has "... new file content in full" "$CD" '+brand new'
has "... deleted file to /dev/null" "$CD" "$(printf -- '--- a/delete.txt\n+++ /dev/null')"
has "... deleted file mode" "$CD" 'deleted file mode 100644'
has "... deleted file content in full" "$CD" '-with two lines'
has "... \\ No newline at end of file" "$CD" '\ No newline at end of file'
has "... mode change old mode" "$CD" 'old mode 100644'
has "... mode change new mode" "$CD" 'new mode 100755'
has "... the empty file that got content" "$CD" '+++ b/empty.txt'
hasnt "... nothing about gitignored build/" "$CD" 'build/out.o'
hasnt "... nothing about gitignored *.log" "$CD" 'fresh.log'
hasnt "... nothing about .decree/" "$CD" '.decree'
same "diff --git blocks: one per changed file" "$(grep -c '^diff --git ' "$CD")" 7
post_state=$(vis_state "$P")

# GNU patch -p1 on a copy of the pre-run tree gives the post-run tree
cp -a "$SCRATCH/pre" "$SCRATCH/patched"
t "GNU patch -p1 accepts changes.diff" patch -p1 -s -d "$SCRATCH/patched" -i "$P/$CD"
same "... pre-run tree + changes.diff = post-run tree (content and modes)" "$(vis_state "$SCRATCH/patched")" "$post_state"
t "patch -p1 -R takes it back" patch -p1 -R -s -d "$SCRATCH/patched" -i "$P/$CD"
same "... to the pre-run tree" "$(vis_state "$SCRATCH/patched")" "$pre_state"
if command -v git >/dev/null; then
	cp -a "$SCRATCH/pre" "$SCRATCH/gitapplied"
	t "git apply accepts changes.diff" git -C "$SCRATCH/gitapplied" apply "$P/$CD"
	same "... same post-run tree" "$(vis_state "$SCRATCH/gitapplied")" "$post_state"
fi
same "the outcome: done, 1 attempt" "$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["outcome"], o["attempts"], o["id"], o["message"], o["routine"])' "$R/outcome.json")" \
	"done 1 $id work.md work"

# ===== a failing run: partial work diffed, tree reverted ==============================
# put the pre-run tree back (by hand: this is not what is tested here)
cd "$P" && find . -mindepth 1 -maxdepth 1 ! -name .decree -exec rm -rf {} + &&
	(cd "$SCRATCH/pre" && tar cf - --exclude=./.decree .) | tar xf -
pre_state=$(vis_state "$P")
printf 'user log\n' >user.log # ignored, exists before
t_exit 1 "a routine that always fails (max_retries 1): dead-lettered, exit 1" D run -m broken -p x -v routine=work -v fail=yes
id=$(fm .decree/inbox/dead/broken.md id)
R=.decree/runs/$id
check "changes-1.diff captures the partial work of attempt 1" grep -q '^+brand new' "$R/changes-1.diff"
check "changes-2.diff captures the clean-slate attempt's partial work" grep -q '^+brand new' "$R/changes-2.diff"
check "... which also records the deletion" grep -q '^deleted file mode' "$R/changes-2.diff"
check "no changes.diff (no net change of a failed run)" test ! -e "$R/changes.diff"
same "the tree is reverted to the manifest (content and modes)" "$(vis_state "$P")" "$pre_state"
check "... files the routine added are deleted" test ! -e new/dir/file.txt
check "... files it deleted are restored" test -f delete.txt
same "... with their content" "$(cat delete.txt)" "$(printf 'to be deleted\nwith two lines')"
same "... a file without final newline restored exactly" "$(od -c nonl.txt)" "$(od -c "$SCRATCH/pre/nonl.txt")"
same "... the mode restored" "$(stat -c %a tool.sh)" 644
same "... the empty file is empty again" "$(stat -c %s empty.txt)" 0
same "reverted files match manifest.json (sha256sum)" "$(manifest_vs_tree "$P" "$R/manifest.json")" ""
same "gitignored files are not reverted: build/out.o keeps the routine's bytes" "$(cat build/out.o)" "object, rebuilt"
check "... an ignored file the routine created is not deleted" test -f fresh.log
same "... an ignored file from before is untouched" "$(cat user.log)" "user log"
check "dead-letter.md says why" grep -qi 'fail' "$R/dead-letter.md"
rm -f fresh.log user.log

# The routine that deletes a file then dies from a signal: also a failure, also reverted.
cat >.decree/routines/killer.sh <<'EOF'
#!/bin/bash
rm -f modify.txt
printf 'half' >half-written.txt
kill -9 $$
EOF
pre_state=$(vis_state "$P")
t_exit 1 "a routine killed by SIGKILL counts as failure" D run -m killer -p x -v routine=killer
same "... the tree is reverted" "$(vis_state "$P")" "$pre_state"
id=$(fm .decree/inbox/dead/killer.md id)
check "... failure-context.md records the status (137)" grep -q 137 ".decree/runs/$id/failure-context.md"

# ===== binary files and symlinks ===========================================================
printf 'bin\0ary\1\2\3' >blob.bin
ln -s modify.txt link-to-modify
pre_state=$(vis_state "$P")
cat >.decree/routines/bin.sh <<'EOF'
#!/bin/bash
fail="${fail:-no}"
head -c 3000 /dev/urandom >blob.bin
printf 'new\0binary' >new.bin
rm link-to-modify
ln -s tool.sh link-to-modify
ln -s nonl.txt new-link
[ "$fail" = no ]
EOF
t "a routine that changes binary files and symlinks" D run -m binary -p x -v routine=bin
id=$(fm .decree/inbox/done/binary.md id)
check "... changes.diff stays text (binary content encoded)" grep -qI . ".decree/runs/$id/changes.diff"
check "... and mentions blob.bin" grep -q 'blob.bin' ".decree/runs/$id/changes.diff"
check "... manifest.json records the symlink with mode 120000" grep -q '"link-to-modify":{"sha256":"[0-9a-f]*","size":[0-9]*,"mode":"120000"}' ".decree/runs/$id/manifest.json"
post_state=$(vis_state "$P")
t "decree revert of that run" D revert "$id"
same "... restores binary files and symlinks exactly" "$(vis_state "$P")" "$pre_state"
t "decree undo" D undo
same "... brings the run's binary changes back" "$(vis_state "$P")" "$post_state"
t "decree revert again" D revert "$id"
pre_state=$(vis_state "$P")
t_exit 1 "the same routine failing" D run -m binary-fail -p x -v routine=bin -v fail=yes
same "... binary files and symlinks reverted exactly" "$(vis_state "$P")" "$pre_state"

# ===== with and without .git: identical =================================================
mk() { # dir [git]
	mkdir -p "$1" && cd "$1" && D -q init && printf 'max_retries: 1\n' >.decree/config.yml
	printf 'a\nb\nc\n' >file.txt
	mkdir -p lib && printf 'x\n' >lib/x.txt
	if [ "${2:-}" = git ]; then
		mkdir -p .git/objects lib/.git && printf 'ref: refs/heads/main\n' >.git/HEAD && printf 'nested\n' >lib/.git/HEAD
	fi
	cat >.decree/routines/edit.sh <<'EOF'
#!/bin/bash
sed -i 's/b/B/' file.txt
printf 'y\n' >lib/y.txt
EOF
}
mk "$SCRATCH/nogit"
t "no .git/: run" D run -m e -p x -v routine=edit
A=$(ls -d "$SCRATCH"/nogit/.decree/runs/*-0)
check "... no .git was created" test ! -e "$SCRATCH/nogit/.git"
mk "$SCRATCH/withgit" git
t "with .git/ (and a nested one): run" D run -m e -p x -v routine=edit
B=$(ls -d "$SCRATCH"/withgit/.decree/runs/*-0)
check "... the same manifest.json" cmp -s "$A/manifest.json" "$B/manifest.json"
check "... the same changes.diff" cmp -s "$A/changes.diff" "$B/changes.diff"
same "... .git/ untouched" "$(cat "$SCRATCH/withgit/.git/HEAD") $(ls "$SCRATCH/withgit/.git" | tr '\n' ' ')" "ref: refs/heads/main HEAD objects "

# ===== .decreeignore =========================================================================
cd "$SCRATCH/nogit" || exit 1
printf 'secret/\n' >.decreeignore
mkdir -p secret && printf 'k\n' >secret/key
cat >.decree/routines/sec.sh <<'EOF'
#!/bin/bash
printf 'k2\n' >secret/key
printf 'z\n' >z.txt
exit 1
EOF
t_exit 1 "with .decreeignore: failing run" D run -m sec -p x -v routine=sec
id=$(fm .decree/inbox/dead/sec.md id)
hasnt "... the ignored path is not in manifest.json" ".decree/runs/$id/manifest.json" 'secret/key'
same "... and not reverted" "$(cat secret/key)" k2
check "... the tracked file is reverted" test ! -e z.txt

# ===== a routine that edits .gitignore: the pre-run rules decide ==========================
P=$SCRATCH/ign
mkdir -p "$P/build" && cd "$P" && D -q init && printf 'max_retries: 1\n' >.decree/config.yml || exit 1
printf 'build/\n*.log\n' >.gitignore
printf 'line one\n' >modify.txt
printf 'object\n' >build/out.o
printf 'debug\n' >debug.log
cat >.decree/routines/ign.sh <<'EOF2'
#!/bin/bash
fail="${fail:-no}"
printf '*.txt\n' >.gitignore      # now ignores *.txt, un-ignores build/ and *.log
printf 'changed while ignored?\n' >>modify.txt
printf 'new txt\n' >added.txt
[ "$fail" = no ]
EOF2
pre_state=$(vis_state "$P")
t_exit 1 "a failing routine that rewrites .gitignore" D run -m ign-fail -p x -v routine=ign -v fail=yes
check "... dead-lettered (the revert succeeded)" test -f .decree/inbox/dead/ign-fail.md
same "... the revert uses the pre-run rules: .gitignore, modify.txt restored, added.txt deleted" "$(vis_state "$P")" "$pre_state"
check "... files ignored before (build/, *.log) are not deleted" test -f build/out.o -a -f debug.log
# (if the revert above failed, the message is still in the inbox: put the
# tree back by hand and set it aside so the next case starts clean)
if [ -f .decree/inbox/ign-fail.md ]; then
	mv .decree/inbox/ign-fail.md .decree/inbox/dead/
	printf 'build/\n*.log\n' >.gitignore && printf 'line one\n' >modify.txt && rm -f added.txt
fi
t "the same routine succeeding" D run -m ign-ok -p x -v routine=ign
id=$(fm .decree/inbox/done/ign-ok.md id)
check "... changes.diff has the new .txt file (pre-run rules)" grep -q '^+++ b/added.txt' ".decree/runs/$id/changes.diff"
check "... and the change to modify.txt" grep -q '^+changed while ignored?' ".decree/runs/$id/changes.diff"
if grep -q 'build/out.o' ".decree/runs/$id/changes.diff"; then not_ok "... not the files ignored before"; else ok "... not the files ignored before"; fi
t "decree revert of it" D -q revert "$id"
same "... back to the pre-run tree" "$(vis_state "$P")" "$pre_state"

done_testing
