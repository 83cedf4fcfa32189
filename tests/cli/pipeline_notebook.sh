#!/bin/bash
# pipeline_notebook.sh - notebook routines (seed 002 "Message Processing",
# DESIGN "Routines"): with notebook_support: true, .decree/routines/X.ipynb
# runs as `papermill IN <run-dir>/output.ipynb -p spec_file … -p
# message_file … -p message_id … -p message_dir … -p chain … -p seq …` plus
# -p NAME VALUE for each declared parameter the message sets; stderr to
# papermill.log.  A fake papermill on PATH records its argv.  Without
# papermill: a clear error that dead-letters the message.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

outcome() { python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["outcome"], o["attempts"])' "$1/outcome.json" 2>&1; }

BIN=$SCRATCH/bin
mkdir -p "$BIN"
cat >"$BIN/papermill" <<'EOF'
#!/bin/bash
# fake papermill: argv one per line, the output notebook, a change, stderr
n=$(ls "$PM_DIR"/argv.* 2>/dev/null | wc -l)
printf '%s\n' "$@" >"$PM_DIR/argv.$((n + 1))"
pwd >"$PM_DIR/cwd.$((n + 1))"
cp "$1" "$2"
echo "papermill says hello on stderr" >&2
echo "papermill stdout line"
echo "notebook ran" >nb-out.txt
[ -f "$PM_DIR/fail" ] && { echo "Executing failed" >&2; exit 1; }
exit 0
EOF
chmod +x "$BIN/papermill"
export PM_DIR=$SCRATCH/pm
mkdir -p "$PM_DIR"
SYSPATH=$PATH

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
printf 'max_retries: 1\nnotebook_support: true\n' >.decree/config.yml
cat >.decree/routines/nb.ipynb <<'EOF'
{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# A notebook routine\n"]},
  {"cell_type": "code", "execution_count": null, "metadata": {"tags": ["parameters"]}, "outputs": [],
   "source": ["spec_file = \"\"\n", "message_file = \"\"\n", "target = \"staging\"\n", "level = 1\n"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["print(target)\n"]}
 ],
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
 "nbformat": 4, "nbformat_minor": 5
}
EOF
printf 'before\n' >base.txt
pre=$(tree_state "$P")

# ===== a notebook run ========================================================================
export PATH=$BIN:$SYSPATH
t "run a notebook routine with a custom parameter" D run -m nb1 -p "hello notebook" -v routine=nb -v target=prod
M=.decree/inbox/done/nb1.md
check "... done" test -f "$M"
id=$(fm "$M" id)
c=$(fm "$M" chain)
R=.decree/runs/$id
in=$(sed -n 1p "$PM_DIR/argv.1")
case "$in" in *.decree/routines/nb.ipynb) ok "... papermill's input is the routine" ;; *) not_ok "... papermill's input is the routine" "$in" ;; esac
same "... then <run-dir>/output.ipynb and the standard parameters, then the custom one" "$(sed 1d "$PM_DIR/argv.1")" \
	"$(printf '%s\n' "$R/output.ipynb" -p spec_file "" -p message_file "$R/message.md" -p message_id "$id" -p message_dir "$R" -p chain "$c" -p seq 0 -p target prod)"
same "... run in the project root" "$(cat "$PM_DIR/cwd.1")" "$P"
check "... output.ipynb in the run directory" cmp -s "$R/output.ipynb" .decree/routines/nb.ipynb
check "... papermill.log holds its stderr" grep -q 'papermill says hello on stderr' "$R/papermill.log"
check "... no routine.log for a notebook" test ! -e "$R/routine.log"
check "... changes.diff records its change" grep -q '^+++ b/nb-out.txt' "$R/changes.diff"
same "... outcome" "$(outcome "$R")" "done 1"
t "decree log of a notebook run" D log "$id"
case "$OUT" in *"papermill says hello on stderr"*) ok "... shows papermill.log" ;; *) not_ok "... shows papermill.log" "$OUT" ;; esac
rm -f nb-out.txt

t "a declared parameter the message does not set" D run -m nb2 -p x -v routine=nb
c=$(fm .decree/inbox/done/nb2.md chain)
if grep -qx -e target -e level "$PM_DIR/argv.2"; then not_ok "... is not passed (the notebook's default applies)" "$(cat "$PM_DIR/argv.2")"; else ok "... is not passed (the notebook's default applies)"; fi
same "... the six standard parameters are" "$(grep -c '^-p$' "$PM_DIR/argv.2")" 6
rm -f nb-out.txt

printf '# spec\n' >specs/01-nb.spec.md
t "a spec message with a notebook routine" D run -v input_file=specs/01-nb.spec.md -v routine=nb -v level=3 -v undeclared=zzz
same "... spec_file and the declared custom parameter level (undeclared keys are not parameters)" \
	"$(sed -n '/^spec_file$/{n;p}' "$PM_DIR/argv.3") $(sed -n '/^level$/{n;p}' "$PM_DIR/argv.3") $(grep -c '^undeclared$' "$PM_DIR/argv.3")" "specs/01-nb.spec.md 3 0"
rm -f nb-out.txt

# a failing papermill: retries, papermill-2.log
pre=$(tree_state "$P")
touch "$PM_DIR/fail"
t_exit 1 "papermill failing every time: dead-lettered, exit 1" D run -m nbfail -p x -v routine=nb
R=.decree/runs/$(fm .decree/inbox/dead/nbfail.md id)
check "... papermill.log and papermill-2.log" test -f "$R/papermill.log" -a -f "$R/papermill-2.log"
check "... failure-context.md quotes papermill's error" grep -q 'Executing failed' "$R/failure-context.md"
same "... the tree is reverted" "$(tree_state "$P")" "$pre"
rm -f "$PM_DIR/fail"

# ===== without papermill =====================================================================
mkdir -p "$SCRATCH/nopm"
for tool in bash sh cat sed grep ls env rm mkdir cp date sleep; do
	p=$(command -v "$tool") && ln -sf "$p" "$SCRATCH/nopm/$tool"
done
n=$(ls "$PM_DIR" | wc -l)
PATH=$SCRATCH/nopm t_err "decree: routine 'nb' is a notebook, and papermill is not installed (pip install papermill ipykernel)" \
	"no papermill on PATH: refused before anything is queued, exit 1" 1 "$DECREE" run -m nopm -p x -v routine=nb
check "... nothing queued" test ! -e .decree/inbox/nopm.md -a ! -e .decree/inbox/dead/nopm.md
same "... nothing ran" "$(ls "$PM_DIR" | wc -l)" "$n"
same "... the tree is untouched" "$(tree_state "$P")" "$pre"
# a message already waiting for the notebook: process says so, runs nothing
printf -- '---\nroutine: nb\n---\nwaiting\n' >.decree/inbox/nb-waits.md
PATH=$SCRATCH/nopm t_err "decree: cannot process the queue (nothing was run): for .decree/inbox/nb-waits.md, routine 'nb' is a notebook, and papermill is not installed*" \
	"... process with a message for it waiting: refused, exit 1" 1 "$DECREE" process
check "... the message still waits" test -f .decree/inbox/nb-waits.md
# a follow-up (known only while a chain runs) is dead-lettered at once
rm .decree/inbox/nb-waits.md
printf -- '---\nroutine: nb\n---\na follow-up\n' >"$SCRATCH/fu.md"
cat >.decree/routines/leader.sh <<'EOF'
#!/bin/bash
cp "$FOLLOWUP" ".decree/inbox/$chain-1.md"
EOF
FOLLOWUP=$SCRATCH/fu.md PATH=$SCRATCH/nopm t_exit 1 "... a follow-up for it, written by a routine: dead-lettered at once, exit 1" "$DECREE" run -m leader -p x -v routine=leader
fu=$(ls .decree/inbox/dead | grep -e '-1\.md$' | head -1)
check "... dead-letter.md: papermill is not installed" grep -q 'papermill is not installed' ".decree/runs/${fu%.md}/dead-letter.md"
check "... without an attempt (no log)" test ! -e ".decree/runs/${fu%.md}/papermill.log"
same "... nothing ran" "$(ls "$PM_DIR" | wc -l)" "$n"
rm .decree/routines/leader.sh

# ===== notebook_support off / a shell routine of the same name wins =========================
printf 'max_retries: 1\nnotebook_support: false\n' >.decree/config.yml
t_err "decree: unknown routine 'nb': .decree/routines/nb.ipynb is a notebook, and notebook_support is off in .decree/config.yml" \
	"notebook_support false: a .ipynb routine is not found, and decree says why (exit 2)" 2 D run -m off -p x -v routine=nb
check "... nothing queued" test ! -e .decree/inbox/off.md -a ! -e .decree/inbox/dead/off.md
printf 'max_retries: 1\nnotebook_support: true\n' >.decree/config.yml
printf '#!/bin/bash\necho shell >shell-won.txt\n' >.decree/routines/nb.sh
n=$(ls "$PM_DIR" | grep -c argv)
t "nb.sh and nb.ipynb: the shell routine wins" D run -m both -p x -v routine=nb
check "... nb.sh ran" test -f shell-won.txt
same "... papermill did not" "$(ls "$PM_DIR" | grep -c argv)" "$n"

done_testing
