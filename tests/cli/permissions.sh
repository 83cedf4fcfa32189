#!/bin/bash
# permissions.sh - every permission bit (all of 0777) survives checkpoint,
# restore, undo/redo, diff/apply and a pipeline revert (DESIGN "Exactness":
# a 0600 secret stays 0600).  A mode-only change is a change (the stat
# cache does not hide it), restored modes do not depend on the umask, and
# a diff carries the bits (docs/diff-format.md "Modes").
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

state() { tree_state "$P"; }
modes() { (cd "$P" && stat -c '%a %n' -- "$@"); }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" || exit 1
umask 022
for m in 600 640 700 444 755 644 751 604; do
	printf 'file with mode %s\n' "$m" >"f$m"
	chmod "$m" "f$m"
done
mkdir -p secret && printf 'token\n' >secret/key && chmod 600 secret/key
X_STATE=$(state)

t "checkpoint X" D checkpoint create -m X
X=$OUT
t "show --json" D checkpoint show "$X" --json
got=$(printf '%s' "$OUT" | python3 -c '
import json, sys
print(" ".join("%s:%s" % (f["path"], f["mode"]) for f in json.load(sys.stdin)["files"]))')
same "show --json records every permission bit" "$got" \
	"f444:444 f600:600 f604:604 f640:640 f644:644 f700:700 f751:751 f755:755 secret/key:600"

# change content and modes: everything becomes 0644 or 0666
for m in 600 640 700 444 755 751; do chmod 644 "f$m"; printf 'more\n' >>"f$m"; done
chmod 666 f644 secret/key
chmod 000 f604
Y_STATE=$(state)
t "checkpoint Y" D checkpoint create -m Y
Y=$OUT

t "restore X" D checkpoint restore "$X"
same "restore X gives every mode back" "$(state)" "$X_STATE"
t "undo" D undo
same "undo gives Y back (0644, 0666, 0000)" "$(state)" "$Y_STATE"
t "redo" D redo
same "redo gives X back" "$(state)" "$X_STATE"

# ---- restored modes are not the umask's ------------------------------------
t "restore Y" D checkpoint restore "$Y"
t "restore X under umask 077" bash -c "umask 077; exec '$DECREE' checkpoint restore '$X'"
same "modes exact under umask 077" "$(state)" "$X_STATE"
t "restore Y under umask 000" bash -c "umask 000; exec '$DECREE' checkpoint restore '$Y'"
same "modes exact under umask 000" "$(state)" "$Y_STATE"
t "restore X" D checkpoint restore "$X"

# ---- a mode-only change is a change ----------------------------------------
# make the stat cache trust every file (mtimes well before the cache)
find . -path ./.decree -prune -o -type f -exec touch -d '2020-01-01' {} +
t "checkpoint Z (stat cache written)" D checkpoint create -m Z
Z=$OUT
chmod 644 secret/key
t "checkpoint W after chmod 600 -> 644 alone" D checkpoint create -m W
W=$OUT
t_match '*"path":"secret/key","sha256":"*","size":6,"mode":"644"}*' \
	"W records 644 (the stat cache did not hide the chmod)" \
	D checkpoint show "$W" --json
t_out "M	secret/key" "diff Z W names the mode-only change" \
	D checkpoint diff "$Z" "$W" --name-status
t_out "M	secret/key" "diff --name-status names the mode-only change" \
	D checkpoint diff "$Z" --name-status
t "diff Z vs tree" D checkpoint diff "$Z"
same "diff shows the bits as old/new mode lines" "$OUT" \
	"$(printf 'diff --git a/secret/key b/secret/key\nold mode 100600\nnew mode 100644')"
t "restore Z" D checkpoint restore "$Z"
same "restore puts 0600 back (content unchanged)" "$(modes secret/key)" "600 secret/key"

# ---- diff and apply carry the bits -----------------------------------------
D checkpoint restore -q "$Y" >/dev/null 2>&1
t "diff X Y" D checkpoint diff "$X" "$Y"
printf '%s\n' "$OUT" >"$SCRATCH/xy.diff"
t "restore X" D checkpoint restore "$X"
t "decree apply of the X..Y diff" D apply "$SCRATCH/xy.diff"
same "apply gives Y, modes included" "$(state)" "$Y_STATE"
t "decree apply -R" D apply -R "$SCRATCH/xy.diff"
same "apply -R gives X, modes included" "$(state)" "$X_STATE"
# GNU patch honours the full bits of git mode lines
rm -rf "$SCRATCH/copy" && cp -a "$P" "$SCRATCH/copy" && rm -rf "$SCRATCH/copy/.decree"
t "GNU patch -p1 applies it" bash -c "cd '$SCRATCH/copy' && patch -s -p1 <'$SCRATCH/xy.diff'"
same "GNU patch gives Y, modes included" "$(tree_state "$SCRATCH/copy")" "$Y_STATE"

# a content-only git diff (index line says 100644) keeps a 0600 file 0600
printf 'token\n' >"$SCRATCH/a" && printf 'token2\n' >"$SCRATCH/b"
cat >"$SCRATCH/content.diff" <<'EOF'
diff --git a/secret/key b/secret/key
index 6f4b2e9..b1b9d9c 100644
--- a/secret/key
+++ b/secret/key
@@ -1 +1 @@
-token
+token2
EOF
t "apply a content-only git diff to the 0600 file" D apply "$SCRATCH/content.diff"
same "the secret stays 0600" "$(modes secret/key)" "600 secret/key"
t "undo" D undo

# ---- pipeline: manifest.json and revert ------------------------------------
Q=$SCRATCH/pipe
mkdir -p "$Q" && cd "$Q" && D -q init || exit 1
printf 'max_retries: 1\n' >.decree/config.yml
printf 'token\n' >key && chmod 600 key
printf 'shared\n' >group && chmod 640 group
cat >.decree/routines/perm.sh <<'EOF'
#!/bin/bash
chmod 644 key
printf 'changed\n' >>group
chmod 666 group
exit 1
EOF
pre=$(tree_state "$Q")
t_exit 1 "a failing routine that chmods files" D run -m perm -p x -v routine=perm
id=$(ls .decree/runs | head -1)
check "manifest.json records 640 and 600" grep -q '"group":{[^}]*"mode":"640"},"key":{"sha256":"[0-9a-f]*","size":6,"mode":"600"}' ".decree/runs/$id/manifest.json"
same "the failed run is reverted with its modes" "$(tree_state "$Q")" "$pre"

t "fsck" D fsck
done_testing
