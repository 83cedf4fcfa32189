#!/bin/bash
# cli_basics.sh - what a command-line user expects of every command
# (docs/cli/decree.md): "decree help [COMMAND [SUB]]"; did-you-mean for
# unknown commands, subcommands, options and values, one line, exit 2,
# in --json error documents too; -q keeps the data a command was asked
# for (the id create prints, lists, diffs, dry-run plans) and drops
# chatter; color on a terminal (--color=auto|always|never, NO_COLOR,
# TERM=dumb, never with --json or into a pipe); and the pager for long
# output (DECREE_PAGER, PAGER, less with LESS=FRX, --no-pager), which
# decree waits for, whose early quit is no failure, and which Ctrl-C and
# SIGTERM cannot turn into a broken terminal.  The terminal is a real
# pty (script(1) from util-linux); pagers are shell commands that record
# what they read.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE DECREE_PAGER PAGER NO_COLOR LESS LV
export TERM=xterm

ESC=$(printf '\033')
strip() { sed "s/$ESC\\[[0-9;]*m//g"; }
has_esc() { case "$1" in *"$ESC["*) return 0 ;; *) return 1 ;; esac; }
# on_tty CMD...: run CMD with stdout and stderr on a pty; $OUT is what
# the terminal showed (CRs of the tty's newline translation removed)
on_tty() {
	local q="" a
	for a in "$@"; do q="$q $(printf '%q' "$a")"; done
	script -qec "$q" /dev/null </dev/null >"$SCRATCH/.tty" 2>&1
	RC=$?
	OUT=$(tr -d '\r' <"$SCRATCH/.tty")
}
one_line() { [ "$(printf '%s\n' "$1" | wc -l)" -eq 1 ]; }

if ! script -qec true /dev/null </dev/null >/dev/null 2>&1; then
	echo "ok 1 # SKIP script(1) cannot open a pty here"
	echo "1..1"
	exit 0
fi

P=$SCRATCH/p
mkdir -p "$P" && cd "$P" || exit 1

# ===== help ================================================================
_run D --help
HELP=$OUT
t_out "$HELP" "decree help = decree --help" D help
t_out "$HELP" "decree -h = decree --help" D -h
cmds=$(printf '%s\n' "$HELP" | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[ "$(printf '%s\n' "$cmds" | wc -l)" -ge 18 ] && ok "the help lists the commands" || not_ok "the help lists the commands" "$cmds"
bad=""
for c in $cmds; do
	[ "$c" = help ] && continue
	_run D "$c" --help
	want=$OUT wrc=$RC
	_run D help "$c"
	if [ "$RC" -ne 0 ] || [ "$wrc" -ne 0 ] || [ "$OUT" != "$want" ] || [ -z "$OUT" ] || [ -n "$ERR" ]; then
		bad="$bad $c"
	fi
done
[ -z "$bad" ] && ok "decree help CMD = decree CMD --help, exit 0, for every command" || not_ok "decree help CMD = decree CMD --help" "differs:$bad"
bad=""
for cs in "checkpoint create" "checkpoint list" "checkpoint show" "checkpoint diff" \
	"checkpoint restore" "checkpoint prune" "checkpoint drop" "checkpoint delete" \
	"projects move" "hook install" "hook uninstall" "hook status"; do
	_run D $cs --help
	want=$OUT
	_run D help $cs
	[ "$RC" -eq 0 ] && [ "$OUT" = "$want" ] && [ -n "$OUT" ] || bad="$bad '$cs'"
done
[ -z "$bad" ] && ok "decree help CMD SUB = decree CMD SUB --help" || not_ok "decree help CMD SUB" "$bad"
_run D help checkpoint create
case "$OUT" in "usage: decree checkpoint create"*"--if-changed"*) ok "help checkpoint create is create's help" ;; *) not_ok "help checkpoint create" "$OUT" ;; esac
t_err "decree: unknown command 'nosuch' (see 'decree --help')" "help nosuch: unknown command, exit 2" 2 D help nosuch
[ -z "$OUT" ] && ok "... nothing on stdout" || not_ok "... nothing on stdout" "$OUT"
t_err "decree: unknown command 'chekpoint'; did you mean 'checkpoint'?" "help chekpoint: did you mean" 2 D help chekpoint
t_err "decree: unknown checkpoint command 'resore'; did you mean 'restore'?" "help checkpoint resore: did you mean" 2 D help checkpoint resore
t_err "decree: usage: decree help*'rollback' has no subcommands*" "help rollback 3: exit 2" 2 D help rollback 3
t_err "decree: usage: decree help*" "help checkpoint create x: exit 2" 2 D help checkpoint create x

# ===== did you mean =========================================================
t_err "decree: unknown command 'chekpoint'; did you mean 'checkpoint'?" "unknown command: the nearest one, exit 2" 2 D chekpoint
one_line "$ERR" && ok "... one line" || not_ok "... one line" "$ERR"
[ -z "$OUT" ] && ok "... nothing on stdout" || not_ok "... nothing on stdout" "$OUT"
t_err "decree: unknown command 'check'; did you mean 'checkpoint'?" "a beginning of a command is near it" 2 D check
t_err "decree: unknown command 'rndo'; did you mean 'undo' or 'redo'?" "two as near: both" 2 D rndo
t_err "decree: unknown command 'frobnicate' (see 'decree --help')" "nothing near: no guess" 2 D frobnicate
t_err "decree: unknown checkpoint command 'resore'; did you mean 'restore'?" "unknown subcommand" 2 D checkpoint resore x
t_err "decree: unknown checkpoint command 'lsit'; did you mean 'list'?" "a swap of two letters is one edit" 2 D checkpoint lsit
t_err "decree: unknown projects command 'mvoe'; did you mean 'move'?" "projects: unknown subcommand" 2 D projects mvoe a b
on_tty "$DECREE" hook instal claude
case "$OUT" in "decree: unknown hook command or agent 'instal'; did you mean 'install'?") [ $RC -eq 2 ] && ok "hook on a terminal: did you mean" || not_ok "hook instal" "exit $RC" ;; *) not_ok "hook on a terminal: did you mean" "$OUT" ;; esac
t_err "decree: unknown option '--sesion'; did you mean '--session'?" "unknown option of a command" 2 D checkpoint list --sesion x
t_err "decree: unknown option '--dryrun'; did you mean '--dry-run'?" "... restore --dryrun" 2 D checkpoint restore x --dryrun
t_err "decree: unknown option '--exclud'; did you mean '--exclude'?" "... a repeatable option (create --exclude)" 2 D checkpoint create --exclud=x
t_err "decree: unknown option '--chek'; did you mean '--check'?" "... apply --chek" 2 D apply --chek p.diff
t_err "decree: unknown option '--jsno'; did you mean '--json'?" "... a global option is suggested too" 2 D checkpoint list --jsno
t_err "decree: unknown option '--jsn'; did you mean '--json'?" "an unknown global option before the command" 2 D --jsn checkpoint list
t_err "decree: unknown option '--dryrun' (see 'decree checkpoint create --help')" "an option of another command is not suggested" 2 D checkpoint create --dryrun
t_err "decree: unknown option '--bogus' (see 'decree gc --help')" "nothing near" 2 D gc --bogus
t_err "decree: unknown --color value 'alway'; did you mean 'always'?" "--color=WHEN: did you mean" 2 D --color=alway checkpoint list
_run D --json chekpoint
[ "$OUT" = '{"error":{"code":"usage","message":"unknown command '"'chekpoint'"'; did you mean '"'checkpoint'"'?"}}' ] && [ $RC -eq 2 ] &&
	ok "--json: the suggestion is in the error document" || not_ok "--json error document" "exit $RC: $OUT"
_run D --json checkpoint list --sesion x
[ "$OUT" = '{"error":{"code":"usage","message":"unknown option '"'--sesion'"'; did you mean '"'--session'"'?"}}' ] && [ $RC -eq 2 ] &&
	ok "--json: ... for an option too" || not_ok "--json error document (option)" "exit $RC: $OUT"
[ ! -e "$P/.decree" ] && ok "usage errors changed nothing on disk" || not_ok "usage errors changed nothing" "$(ls -A "$P")"

# ===== -q ====================================================================
printf 'a\nb\nc\n' >f.txt
printf 'keep\n' >k.txt
id=$(D -q checkpoint create --message one)
case "$id" in [0-9a-f]*) [ ${#id} -eq 64 ] && ok "id=\$(decree -q checkpoint create): the id" || not_ok "-q create: the id" "$id" ;; *) not_ok "-q create: the id" "'$id'" ;; esac
t_out "$id" "-q create --message again: the same id" D -q checkpoint create --message one
t_out "$id" "-q create --if-changed on an unchanged tree: that id" D -q checkpoint create --if-changed
[ -z "$ERR" ] && ok "... nothing on stderr" || not_ok "... nothing on stderr" "$ERR"
_run D -q checkpoint list
case "$OUT" in "${id:0:12}"*) ok "-q checkpoint list: the list" ;; *) not_ok "-q list" "$OUT" ;; esac
_run D -q checkpoint show "$id"
case "$OUT" in "checkpoint $id"*f.txt*) ok "-q checkpoint show: the files" ;; *) not_ok "-q show" "$OUT" ;; esac
_run D -q rollback
case "$OUT" in "   1  "*"${id:0:12}"*one) ok "-q rollback: the numbered list" ;; *) not_ok "-q rollback" "$OUT" ;; esac
printf 'a\nB\nc\n' >f.txt
printf 'new\n' >n.txt
D checkpoint diff "$id" >"$SCRATCH/plain.diff"
_run D -q checkpoint diff "$id"
[ "$OUT" = "$(cat "$SCRATCH/plain.diff")" ] && [ -n "$OUT" ] && ok "-q checkpoint diff: the diff" || not_ok "-q diff" "$OUT"
t_out "$(printf 'restore f.txt\ndelete n.txt')" "-q restore --dry-run: the plan, no summary" D -q checkpoint restore "$id" --dry-run
_run D checkpoint restore "$id" --dry-run
case "$OUT" in *"dry run: would create 0, restore 1, delete 1 file(s)") ok "... (without -q the summary follows)" ;; *) not_ok "restore --dry-run summary" "$OUT" ;; esac
t_out "$(printf 'restore f.txt\ndelete n.txt')" "-q rollback 1 --dry-run: the plan, no summary" D -q rollback 1 --dry-run
D checkpoint diff "$id" >"$SCRATCH/back.diff"
t_out "" "-q restore: nothing (progress and summary are chatter)" D -q checkpoint restore "$id"
[ -z "$ERR" ] && ok "... nothing on stderr either" || not_ok "-q restore stderr" "$ERR"
t_out "$(printf 'modify f.txt\ncreate n.txt')" "-q apply --check: the list it asks for" D -q apply --check "$SCRATCH/back.diff"
t_out "" "-q apply: nothing" D -q apply "$SCRATCH/back.diff"
[ -z "$ERR" ] && ok "... nothing on stderr (no progress lines)" || not_ok "-q apply stderr" "$ERR"
t_out "$(printf 'restore f.txt\ndelete n.txt')" "-q undo --dry-run: the plan" D -q undo --dry-run
t_out "" "-q undo: nothing" D -q undo
t_err "decree: *" "-q keeps errors" 1 D -q checkpoint show ffffffff

# ===== color =================================================================
cat >f.txt <<'EOF'
a
-- not a header
b
EOF
id2=$(D -q checkpoint create)
long=$(printf '%0300d' 0)
cat >f.txt <<EOF
a
++ not a header either
b
$long
EOF
_run D --color=always checkpoint diff "$id2"
COL=$OUT
t_out "$(D checkpoint diff "$id2")" "a pipe has no color (auto)" D checkpoint diff "$id2"
has_esc "$OUT" && not_ok "no escape sequences into a pipe" || ok "no escape sequences into a pipe"
[ "$(printf '%s' "$COL" | strip)" = "$OUT" ] && ok "--color=always: the same bytes, with color around lines" || not_ok "--color=always bytes" "$COL"
want="${ESC}[1mdiff --git a/f.txt b/f.txt${ESC}[m
${ESC}[1mindex "
case "$COL" in "$want"*) ok "file header lines bold" ;; *) not_ok "file header bold" "$COL" ;; esac
for l in "${ESC}[1m--- a/f.txt${ESC}[m" "${ESC}[1m+++ b/f.txt${ESC}[m" "${ESC}[36m@@ -1,3 +1,4 @@${ESC}[m" \
	" a" "${ESC}[31m--- not a header${ESC}[m" "${ESC}[32m+++ not a header either${ESC}[m" "${ESC}[32m+$long${ESC}[m"; do
	if printf '%s\n' "$COL" | grep -qxF -- "$l"; then ok "colored line: $(printf '%s' "$l" | strip | cut -c1-30)"; else not_ok "colored line $(printf '%s' "$l" | strip | cut -c1-30)" "$COL"; fi
done
_run D --color=always --json checkpoint diff "$id2"
has_esc "$OUT" && not_ok "--json never has color" "$OUT" || ok "--json never has color, even with --color=always"
_run D --color=always checkpoint diff "$id2" --stat
case "$OUT" in " f.txt | 3 ${ESC}[32m++${ESC}[31m-${ESC}[m"*) ok "--stat: the graph colored" ;; *) not_ok "--stat colored" "$OUT" ;; esac
_run D --color=always checkpoint restore "$id2" --dry-run
case "$OUT" in "${ESC}[33mrestore${ESC}[m f.txt"*) ok "restore plan: the action colored, the error prefix plain" ;; *) not_ok "plan colored" "$OUT" ;; esac
_run D --color=always checkpoint show nosuchref
case "$ERR" in "decree: "*) has_esc "$ERR" && not_ok "error lines plain" "$ERR" || ok "error lines stay plain" ;; *) not_ok "error line" "$ERR" ;; esac
t_err "decree: unknown --color value 'sometimes' (see 'decree --help')" "--color=sometimes: usage error" 2 D --color=sometimes checkpoint list

# auto on a terminal (PAGER=cat: no pager)
export PAGER=cat
on_tty "$DECREE" checkpoint diff "$id2"
[ "$OUT" = "$COL" ] && ok "auto on a terminal: colored as --color=always" || not_ok "auto on a tty" "$OUT"
on_tty env NO_COLOR=1 "$DECREE" checkpoint diff "$id2"
has_esc "$OUT" && not_ok "NO_COLOR=1: no color" "$OUT" || ok "NO_COLOR=1: no color on a terminal"
on_tty env NO_COLOR= "$DECREE" checkpoint diff "$id2"
has_esc "$OUT" && ok "NO_COLOR empty: color" || not_ok "NO_COLOR empty: color" "$OUT"
on_tty env NO_COLOR=1 "$DECREE" --color=always checkpoint diff "$id2"
has_esc "$OUT" && ok "--color=always wins over NO_COLOR" || not_ok "--color=always over NO_COLOR" "$OUT"
on_tty env TERM=dumb "$DECREE" checkpoint diff "$id2"
has_esc "$OUT" && not_ok "TERM=dumb: no color" "$OUT" || ok "TERM=dumb: no color"
on_tty "$DECREE" --color=never checkpoint diff "$id2"
has_esc "$OUT" && not_ok "--color=never" "$OUT" || ok "--color=never: no color on a terminal"
on_tty "$DECREE" --no-pager checkpoint diff "$id2" --color
has_esc "$OUT" && ok "--color alone is always (also after the command)" || not_ok "--color alone" "$OUT"

# ===== pager =================================================================
REC=$SCRATCH/rec
rm -f "$REC"
on_tty env PAGER="cat >'$REC'; echo \"LESS=\$LESS LV=\$LV\" >'$REC.env'" "$DECREE" checkpoint diff "$id2"
[ "$(cat "$REC" 2>/dev/null)" = "$COL" ] && ok "on a terminal the diff goes to \$PAGER (colored)" || not_ok "PAGER got the diff" "$(cat "$REC" 2>&1)"
[ $RC -eq 0 ] && [ -z "$OUT" ] && ok "... exit 0, nothing else on the terminal" || not_ok "... exit/terminal" "exit $RC: $OUT"
[ "$(cat "$REC.env")" = "LESS=FRX LV=-c" ] && ok "... with LESS=FRX and LV=-c when unset" || not_ok "LESS/LV" "$(cat "$REC.env")"
on_tty env LESS=-S PAGER="echo \"LESS=\$LESS\" >'$REC.env'; cat >/dev/null" "$DECREE" checkpoint diff "$id2"
[ "$(cat "$REC.env")" = "LESS=-S" ] && ok "... a LESS of the user's is kept" || not_ok "LESS kept" "$(cat "$REC.env")"
rm -f "$REC" "$REC.2"
on_tty env PAGER="cat >'$REC'" DECREE_PAGER="cat >'$REC.2'" "$DECREE" checkpoint diff "$id2"
[ ! -e "$REC" ] && [ -s "$REC.2" ] && ok "DECREE_PAGER wins over PAGER" || not_ok "DECREE_PAGER" "$(ls "$SCRATCH")"
rm -f "$REC"
on_tty env PAGER="cat >'$REC'" DECREE_PAGER= "$DECREE" checkpoint diff "$id2"
[ ! -e "$REC" ] && [ "$OUT" = "$COL" ] && ok "DECREE_PAGER empty: no pager" || not_ok "DECREE_PAGER empty" "$OUT"
for pg in "" cat " cat"; do
	on_tty env PAGER="$pg" "$DECREE" checkpoint diff "$id2"
	[ "$OUT" = "$COL" ] && ok "PAGER='$pg': no pager" || not_ok "PAGER='$pg'" "$OUT"
done
on_tty env PAGER="cat >'$REC'" "$DECREE" --no-pager checkpoint diff "$id2"
[ ! -e "$REC" ] && [ "$OUT" = "$COL" ] && ok "--no-pager: straight to the terminal" || not_ok "--no-pager" "$OUT"
on_tty env PAGER="cat >'$REC'" "$DECREE" --json checkpoint diff "$id2"
[ ! -e "$REC" ] && ok "--json: no pager" || not_ok "--json: no pager" "$(cat "$REC")"
PAGER="cat >'$REC'" D checkpoint diff "$id2" >/dev/null
[ ! -e "$REC" ] && ok "stdout not a terminal: no pager" || not_ok "not a tty: no pager" "$(cat "$REC")"
on_tty env PAGER="cat >'$REC'" "$DECREE" checkpoint diff nosuchref
[ ! -e "$REC" ] && [ $RC -eq 1 ] && case "$OUT" in "decree: "*) true ;; *) false ;; esac &&
	ok "a failure before any output: plain error on the terminal, no pager" || not_ok "error before output" "exit $RC: $OUT"
on_tty env PAGER="cat >'$REC'" "$DECREE" checkpoint diff "$id2" "$id2"
[ ! -e "$REC" ] && [ $RC -eq 0 ] && [ -z "$OUT" ] && ok "no differences: no pager" || not_ok "empty diff: no pager" "exit $RC: $OUT"
on_tty env PAGER="cat >'$REC'" "$DECREE" checkpoint show "$id2"
case "$(cat "$REC" 2>/dev/null)" in *"checkpoint $id2"*f.txt*) ok "checkpoint show pages" ;; *) not_ok "show pages" "$OUT" ;; esac
rm -f "$REC"
on_tty env PAGER=nosuch-pager-xyz "$DECREE" checkpoint diff "$id2"
case "$OUT" in *"decree: cannot run the pager 'nosuch-pager-xyz' (exit 127)"*) [ $RC -eq 1 ] && ok "a pager that cannot run: exit 1, said so" || not_ok "bad pager exit" "$RC" ;; *) not_ok "bad pager" "$OUT" ;; esac

# a diff far larger than a pipe holds (the writer blocks on the pager)
B=$SCRATCH/big
mkdir -p "$B" && cd "$B" || exit 1
for i in $(seq 1 150); do seq 1 300 >"f$i"; done
bid=$(D -q checkpoint create)
for i in $(seq 1 150); do seq 1 3 300 >"f$i"; done
D --color=always checkpoint diff "$bid" >"$SCRATCH/big.diff"
[ "$(wc -c <"$SCRATCH/big.diff")" -gt 200000 ] && ok "the big diff is > 200 KB" || not_ok "big diff size" "$(wc -c <"$SCRATCH/big.diff")"
on_tty sh -c "PAGER=\"head -c 1000 >'$REC'\" '$DECREE' checkpoint diff $bid 2>'$SCRATCH/err'; echo \"exit \$?\""
[ "$OUT" = "exit 0" ] && ok "the user quits the pager early: decree exits 0" || not_ok "early quit: exit 0" "$OUT"
[ ! -s "$SCRATCH/err" ] && ok "... and says nothing (no 'cannot write output')" || not_ok "early quit stderr" "$(cat "$SCRATCH/err")"
[ "$(wc -c <"$REC")" -eq 1000 ] && ok "... the pager read what it read" || not_ok "early quit rec" "$(wc -c <"$REC")"
on_tty sh -c "PAGER=\"head -c 1000 >'$REC'\" '$DECREE' diff 2>'$SCRATCH/err'; echo \"exit \$?\""
[ "$OUT" = "exit 0" ] && [ "$(wc -c <"$REC")" -eq 1000 ] && ok "decree diff (the changes since the last checkpoint): quitting early is exit 0 too" || not_ok "decree diff early quit" "$OUT"
# Ctrl-C: the terminal sends SIGINT to the whole foreground group, decree
# and its pager; the pager (like less) stays, and so does decree (the
# shell around them, as an interactive one, is not killed by it)
on_tty sh -c "trap true INT; PAGER=\"trap '' INT; sleep 0.5; kill -INT 0; sleep 0.3; cat >'$REC'\" '$DECREE' checkpoint diff $bid; echo \"exit \$?\""
[ "$OUT" = "exit 0" ] && ok "Ctrl-C while the pager runs: decree keeps going, exit 0 after the pager quits" || not_ok "Ctrl-C: exit 0" "$OUT"
cmp -s "$REC" "$SCRATCH/big.diff" && ok "... the pager got the whole diff" || not_ok "Ctrl-C: whole diff" "$(wc -c <"$REC")"
# SIGTERM: decree closes the pipe, waits for the pager, then dies by it
rm -f "$SCRATCH/order"
on_tty sh -c "PAGER=\"head -c 100 >/dev/null; kill -TERM \\\$PPID; sleep 0.5; echo pager-done >>'$SCRATCH/order'\" '$DECREE' checkpoint diff $bid; echo \"decree-exit \$?\" >>'$SCRATCH/order'"
[ "$(cat "$SCRATCH/order")" = "$(printf 'pager-done\ndecree-exit 143')" ] &&
	ok "SIGTERM: decree ends after its pager, by the signal" || not_ok "SIGTERM order" "$(cat "$SCRATCH/order")"
# the signal dispositions come back after the pager (a restore in the same
# process is not an issue: one command per run), and Ctrl-C without a
# pager still interrupts: covered by tests/cli/interrupt.sh

# decree diff and decree log of a pipeline run page and color too
R=$SCRATCH/run
mkdir -p "$R" && cd "$R" && D -q init || exit 1
printf 'one\ntwo\n' >t.txt
printf 'sed -i s/two/TWO/ t.txt\necho routine-ran\n' >.decree/routines/edit.sh
D -q run -m x -p go -v routine=edit >/dev/null 2>&1
_run D --color=always diff
case "$OUT" in "${ESC}[1mdiff --git a/t.txt b/t.txt${ESC}[m"*"${ESC}[31m-two${ESC}[m"*"${ESC}[32m+TWO${ESC}[m"*) ok "decree diff: colored" ;; *) not_ok "decree diff colored" "$OUT" ;; esac
[ "$(printf '%s' "$OUT" | strip)" = "$(D diff)" ] && ok "... the same bytes as without color" || not_ok "decree diff bytes" "$OUT"
rm -f "$REC"
on_tty env PAGER="cat >'$REC'" "$DECREE" diff
[ "$(cat "$REC" 2>/dev/null)" = "$(D --color=always diff)" ] && ok "decree diff pages" || not_ok "decree diff pages" "$OUT"
rm -f "$REC"
runid=$(D --json log | sed -n 's/.*"kind":"run","ref":"[^"]*","id":"\([^"]*\)".*/\1/p')
on_tty env PAGER="cat >'$REC'" "$DECREE" log
case "$(cat "$REC" 2>/dev/null)" in *" run "*"$runid"*" done "*) [ -n "$runid" ] && ok "decree log (the timeline) pages" || not_ok "run id" "$(D --json log)" ;; *) not_ok "decree log pages" "$OUT" ;; esac
rm -f "$REC"
on_tty env PAGER="cat >'$REC'" "$DECREE" log "$runid"
case "$(cat "$REC" 2>/dev/null)" in *"== run $runid: done =="*routine-ran*) ok "decree log ID (the run's logs) pages" ;; *) not_ok "decree log ID pages" "$OUT" ;; esac

done_testing
