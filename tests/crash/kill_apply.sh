#!/bin/bash
# kill_apply.sh - crash and fault coverage of `decree apply PATCH [--exec CMD]`
# (DESIGN.md "Guarantees", "Patches and transactions"; docs/cli/apply.md).
#
# 1. SIGKILL an apply of a multi-file patch (modify, create, delete, mode
#    changes, a new nested directory, the files of a deleted directory,
#    symlinks created/retargeted/deleted, file <-> symlink, binary content
#    with NUL bytes, CRLF, empty, no final newline) at sampled steps of
#    every kind of mutating syscall, then run the next decree command
#    (`decree recover`, or every 4th time the next `decree apply` of another
#    patch) and check: the whole tree (files, modes, links, directories) is
#    EXACTLY the pre-apply or the post-apply state; no .decree-tmp-* and no
#    txn.wal; fsck exits 0; the history matches the tree (post: `decree
#    undo` brings pre back exactly; pre: nothing to undo, and applying the
#    patch again reaches post).
# 2. SIGKILL during the rollback of `--exec 'touch swept; exit 1'` (the
#    steps decree itself makes after the command exited): after recovery the
#    tree is exactly the post-apply tree the command left (rollback not
#    committed: `decree undo` then reverts the patch) or the pre-apply tree
#    (rollback committed: `decree redo` re-applies the patch) - never a mix.
# 3. ENOSPC/EIO injected into an apply (write, openat(O_CREAT), mkdirat,
#    symlinkat, fsync, syncfs, renameat, unlinkat, fchmod; once or from
#    then on): exit 1 with exactly one `decree:` line, the tree exactly pre,
#    no temps (tree or store), fsck clean, and the apply works once the
#    error is gone.  A failure after the COMMIT may leave the patch applied
#    if decree says so (or exits 0); then `decree undo` must work.
#
# The killed process is the non-sanitized build (LeakSanitizer cannot run
# under ptrace; DECREE_KILLED); recovery and fsck run $DECREE, the follow-up
# undo/redo/apply the fast build.  Budget: KILL_BUDGET (default 4) points
# per syscall kind and scenario; KILL_SLOTS parallel trees (default 3).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${KILL_BUDGET:-4}

# --- the trees -------------------------------------------------------------
make_pre() { # dir
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p keep sub gone/inner/deeper
	for i in $(seq 1 5); do printf 'keep %d\n' "$i" >keep/k$i.txt; done
	for i in $(seq 1 12); do printf 'line 1\nmod %d\nline 3\n' "$i" >sub/m$i.txt; done
	for i in $(seq 1 4); do printf 'gone %d\n' "$i" >gone/inner/g$i.txt; done
	printf 'deepest\n' >gone/inner/deeper/d.txt
	printf '#!/bin/sh\necho hi\n' >run.sh && chmod 755 run.sh
	printf 'plain\n' >flip.sh && chmod 644 flip.sh
	printf '#!/bin/sh\nold\n' >both.sh && chmod 644 both.sh
	ln -s keep/k1.txt link
	ln -s nowhere oldlink
	printf 'a file that becomes a symlink\n' >tolink
	ln -s keep/k3.txt tofile
	printf 'a\r\nb\r\n' >crlf.txt
	printf 'no newline' >nonl.txt
	: >empty.txt
	printf '\000\001\377\376binary\000\n' >bin.dat
	printf '\000gone binary' >oldbin.dat
	printf 'deleted\n' >del.txt
	cd - >/dev/null
}
make_change() { # dir: pre -> post
	cd "$1" || return 1
	for i in $(seq 1 12); do printf 'line 1\nchanged %d\nline 3\n' "$i" >sub/m$i.txt; done
	rm -r gone
	mkdir -p fresh/dir/deep
	for i in $(seq 1 6); do printf 'fresh %d\n' "$i" >fresh/dir/f$i.txt; done
	printf 'deep new\n' >fresh/dir/deep/n.txt
	printf '#!/bin/sh\nnew exec\n' >fresh/x.sh && chmod 755 fresh/x.sh
	chmod 644 run.sh
	chmod 755 flip.sh
	printf '#!/bin/sh\nnew\n' >both.sh && chmod 755 both.sh
	rm link oldlink && ln -s keep/k2.txt link && ln -s sub newlink
	rm tolink && ln -s keep/k4.txt tolink
	rm tofile && printf 'a symlink that became a file\n' >tofile
	printf 'x\r\ny' >crlf.txt
	printf 'with newline now\n' >nonl.txt
	printf 'not empty any more\n' >empty.txt
	: >newempty.txt
	printf '\377\000binary2\000' >bin.dat
	printf '\000\000new\001binary' >newbin.dat
	rm oldbin.dat del.txt
	cd - >/dev/null
}

# the whole state: files (mode, sha256), links, and directories
full_state() {
	{
		fast_state "$1"
		(cd "$1" && find . -path ./.decree -prune -o -name .git -prune -o \
			-type d ! -name . -print | sed 's/^/D /')
	} | LC_ALL=C sort
}

PATCH=$SCRATCH/change.diff  # pre -> post (decree checkpoint diff)
PATCH2=$SCRATCH/next.diff   # creates zz-next.txt (diff -ruN)
CMD='touch swept; exit 1'
T=$SCRATCH/tmpl
make_pre_state() {
	make_pre "$T" || return 1
	"$DECREE" -C "$T" checkpoint create --message PRE >/dev/null || return 1
	full_state "$T" >"$SCRATCH/st_pre"
	make_change "$T" || return 1
	full_state "$T" >"$SCRATCH/st_post"
	"$DECREE" -C "$T" checkpoint diff default:PRE >"$PATCH"
	[ $? -le 1 ] || return 1
	mkdir -p "$SCRATCH/n0" "$SCRATCH/n1"
	printf 'next patch\n' >"$SCRATCH/n1/zz-next.txt"
	(cd "$SCRATCH" && diff -ruN n0 n1 >"$PATCH2")
	[ $? -le 1 ] || return 1
}
setup_slot() { # k -> $SCRATCH/s$k/{w,p}: p is the pre tree, store made
	local d=$SCRATCH/s$1
	mkdir -p "$d"
	make_pre "$d/w" || return 1
	"$DECREE" -C "$d/w" checkpoint create --message base >/dev/null || return 1
	cp -a "$d/w" "$d/p"
}
if ! make_pre_state >"$SCRATCH/setup.log" 2>&1; then
	not_ok "make the patch" "$(cat "$SCRATCH/setup.log")"
	done_testing
	exit 1
fi
for k in $(seq 0 $((SLOTS - 1))); do
	if ! setup_slot "$k" >"$SCRATCH/setup.log" 2>&1; then
		not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
		done_testing
		exit 1
	fi
done
FP_PRE=$(cat "$SCRATCH/st_pre")
FP_POST=$(cat "$SCRATCH/st_post")
if [ "$(full_state "$SCRATCH/s0/p")" = "$FP_PRE" ]; then ok "set up: slot trees are the pre state"
else not_ok "set up: slot trees are the pre state"; fi
nrec=$(grep -c '^diff --git ' "$PATCH")
nbin=$(grep -c '^decree-base64 ' "$PATCH")
ndiff=$(diff <(echo "$FP_PRE") <(echo "$FP_POST") | grep -c '^[<>]')
if [ "$nrec" -ge 40 ] && [ "$nbin" -ge 3 ] && grep -q '^new file mode 120000' "$PATCH" &&
	grep -q '^deleted file mode 120000' "$PATCH" && grep -q '^old mode 100755' "$PATCH"; then
	ok "the patch has $nrec records ($nbin binary sections, symlinks, mode changes); $ndiff state lines differ"
else
	not_ok "the patch has >= 40 records with binary, symlink and mode records" "$nrec records, $nbin binary"
fi
with_line() { printf '%s\n%s\n' "$1" "$2" | LC_ALL=C sort; }
NEXT_LINE="F ./zz-next.txt 644 $(printf 'next patch\n' | sha256sum | cut -c1-64)"
SWEPT_LINE="F ./swept $(printf '%o' $((0666 & ~$(umask)))) $(sha256sum </dev/null | cut -c1-64)"
FP_PRE_N=$(with_line "$FP_PRE" "$NEXT_LINE")
FP_POST_N=$(with_line "$FP_POST" "$NEXT_LINE")
FP_POSTX=$(with_line "$FP_POST" "$SWEPT_LINE")   # what the command left
FP_PRE_S=$(with_line "$FP_PRE" "$SWEPT_LINE")    # undo of the apply only

W0=$SCRATCH/s0/w
reset() { rm -rf "$1/w" && cp -a "$1/p" "$1/w"; }
state_name() { # state -> pre|post|...
	case "$1" in
	"$FP_PRE") echo pre ;;
	"$FP_POST") echo post ;;
	"$FP_POSTX") echo post+swept ;;
	"$FP_PRE_N") echo pre+next ;;
	"$FP_POST_N") echo post+next ;;
	"$FP_PRE_S") echo pre+swept ;;
	*) echo other ;;
	esac
}
show_diff() { # want got
	diff <(echo "$1") <(echo "$2") | head -8
}

# --- uninterrupted runs (traced, on reset copies: the step counts) ----------
reset "$SCRATCH/s0"
trace_log "$SCRATCH/apply.trace" "$KILLED" -C "$W0" apply "$PATCH"
st=$(full_state "$W0")
if [ "$RC" -eq 0 ] && [ "$st" = "$FP_POST" ]; then
	ok "an uninterrupted apply (traced) reaches the post state"
else
	not_ok "an uninterrupted apply (traced) reaches the post state" \
		"exit $RC: $(tail -3 "$SCRATCH/.kerr")
$(show_diff "$FP_POST" "$st")"
fi
t "... decree undo after it" "$DECREE" -C "$W0" undo
st=$(full_state "$W0")
if [ "$st" = "$FP_PRE" ]; then ok "... undo brings the pre state back exactly"
else not_ok "... undo brings the pre state back exactly" "$(show_diff "$FP_PRE" "$st")"; fi
t "... decree redo" "$DECREE" -C "$W0" redo
st=$(full_state "$W0")
if [ "$st" = "$FP_POST" ]; then ok "... redo reaches the post state"
else not_ok "... redo reaches the post state" "$(show_diff "$FP_POST" "$st")"; fi
t "... fsck" "$DECREE" -C "$W0" fsck

reset "$SCRATCH/s0"
t_exit 1 "an uninterrupted apply --exec '$CMD' (failing) exits 1" \
	"$DECREE" -C "$W0" apply "$PATCH" --exec "$CMD"
if [ "$(echo "$ERR" | grep -c '^decree: ')" = 1 ] && echo "$ERR" | grep -q "^decree: '$CMD' failed (status 1); rolled back: .*swept 1 file"; then
	ok "... with one decree: line: rolled back, swept 1 file"
else
	not_ok "... with one decree: line: rolled back, swept 1 file" "$(echo "$ERR" | grep -v '^\(staging\|applying\|rolling_back\) ')"
fi
st=$(full_state "$W0")
if [ "$st" = "$FP_PRE" ]; then ok "... the tree is the pre state"
else not_ok "... the tree is the pre state" "$(show_diff "$FP_PRE" "$st")"; fi
t "... redo re-applies the patch" "$DECREE" -C "$W0" redo
st=$(full_state "$W0")
if [ "$st" = "$FP_POST" ]; then ok "... reaching the post state without the command's file"
else not_ok "... reaching the post state without the command's file" "$(show_diff "$FP_POST" "$st")"; fi

reset "$SCRATCH/s0"
trace_log "$SCRATCH/exec.trace" "$KILLED" -C "$W0" apply "$PATCH" --exec "$CMD"
st=$(full_state "$W0")
if [ "$RC" -eq 1 ] && [ "$st" = "$FP_PRE" ]; then
	ok "an uninterrupted failing apply --exec (traced) rolls back to pre"
else
	not_ok "an uninterrupted failing apply --exec (traced) rolls back to pre" \
		"exit $RC: $(tail -2 "$SCRATCH/.kerr")
$(show_diff "$FP_PRE" "$st")"
fi
reset "$SCRATCH/s0"

# --- 1. kills of the apply -----------------------------------------------------
KINDS="renameat rename renameat2 unlinkat unlink rmdir write pwrite64 fsync fdatasync
syncfs openat mkdirat mkdir symlinkat symlink fchmod ftruncate"
: >"$SCRATCH/points"
for sc in $KINDS; do
	m=$(count_calls "$SCRATCH/apply.trace" "$sc")
	[ "$m" -gt 0 ] || continue
	b=$BUDGET
	case $sc in
	fsync | syncfs | fdatasync) b=$((BUDGET * 2)) ;; # phase boundaries
	renameat | unlinkat | write | openat) b=$((BUDGET + 2)) ;;
	fchmod | mkdir | rename | unlink) b=$(((BUDGET + 1) / 2)) ;;
	esac
	for n in $(pick_points "$m" "$b"); do echo "apply:$sc $n $m" >>"$SCRATCH/points"; done
	case $sc in renameat | unlinkat) echo "apply:$sc $((m + 1)) $m" >>"$SCRATCH/points" ;; esac
done

# The history after recovery must match the tree.  pre: nothing to undo (the
# slot trees have no history), applying again reaches post.  post: undo
# reaches pre.
check_history() { # d w state -> appends to why
	local d=$1 w=$2 state=$3 st
	case $state in
	post)
		if ! "$KILLED" -C "$w" undo >"$d/h.out" 2>&1; then
			why="$why; undo after a committed apply failed: $(tail -2 "$d/h.out")"
		elif st=$(full_state "$w") && [ "$st" != "$FP_PRE" ]; then
			why="$why; undo after a committed apply did not bring back pre:
$(show_diff "$FP_PRE" "$st")"
		fi
		;;
	pre)
		if "$KILLED" -C "$w" undo >"$d/h.out" 2>&1; then
			why="$why; a rolled-back apply left something to undo (undo succeeded: $(tail -1 "$d/h.out"))"
		fi
		st=$(full_state "$w")
		if [ "$st" != "$FP_PRE" ]; then
			why="$why; 'decree undo' after a rolled-back apply changed the tree"
		elif ! "$KILLED" -C "$w" apply "$PATCH" >"$d/h.out" 2>&1; then
			why="$why; applying again after the rollback failed: $(tail -2 "$d/h.out")"
		elif st=$(full_state "$w") && [ "$st" != "$FP_POST" ]; then
			why="$why; applying again after the rollback did not reach post:
$(show_diff "$FP_POST" "$st")"
		fi
		;;
	esac
}

check_clean() { # d w -> appends to why
	local tmps
	tmps=$(temps_in "$2")
	[ -z "$tmps" ] || why="$why; temp files left: $(echo "$tmps" | head -3)"
	[ -z "$(wal_in "$2")" ] || why="$why; txn.wal left after recovery"
	"$DECREE" -C "$2" fsck >"$1/fsck.out" 2>&1 || why="$why; fsck failed: $(tail -3 "$1/fsck.out")"
}

# check_point SLOTDIR apply:SYSCALL N M IDX
check_apply_kill() {
	local d=$1 sc=${2#*:} n=$3 m=$4 idx=$5 w=$1/w why="" st state what rec had_wal=no
	reset "$d"
	kill_at "$sc" "$n" "$KILLED" -C "$w" apply "$PATCH"
	if [ "$n" -gt "$m" ]; then
		[ "$RC" -eq 0 ] || why="$why; run past the last $sc (#$n) exited $RC, wanted 0"
		what="no kill ($sc #$n > $m)"
	else
		[ "$RC" -eq 137 ] || why="$why; not killed at $sc #$n (exit $RC: $(tail -1 "$SCRATCH/.kerr"))"
		what="apply killed at $sc #$n/$m"
	fi
	[ -n "$(wal_in "$w")" ] && had_wal=yes
	if [ $((idx % 4)) -eq 3 ]; then
		# the next command is another apply: it must recover first, then
		# apply its own patch on top of exactly pre or post
		rec="apply next.diff"
		"$DECREE" -C "$w" apply "$PATCH2" >"$d/rec.out" 2>&1 ||
			why="$why; 'decree apply next.diff' failed: $(tail -3 "$d/rec.out")"
		st=$(full_state "$w")
		state=$(state_name "$st")
		case $state in
		pre+next | post+next)
			if ! "$KILLED" -C "$w" undo >"$d/u.out" 2>&1; then
				why="$why; undo of next.diff failed: $(tail -2 "$d/u.out")"
			fi
			;;
		*) why="$why; after 'decree apply next.diff' the tree is neither pre nor post (plus zz-next.txt):
$(show_diff "$FP_PRE_N" "$st")
-- vs post+next:
$(show_diff "$FP_POST_N" "$st")" ;;
		esac
	else
		rec="recover"
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; 'decree recover' failed: $(tail -3 "$d/rec.out")"
	fi
	st=$(full_state "$w")
	state=$(state_name "$st")
	case $state in
	pre | post) ;;
	*) why="$why; the tree is neither exactly pre nor exactly post:
$(show_diff "$FP_PRE" "$st")
-- vs post:
$(show_diff "$FP_POST" "$st")" ;;
	esac
	check_clean "$d" "$w"
	check_history "$d" "$w" "$state"
	what="$what (log: $had_wal, $rec -> $state)"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

# --- 2. kills of the rollback after a failed --exec ------------------------------
# The invocation numbers (per syscall, in decree's own process: the first pid
# of the log) of calls made after the command started (its first logged call).
rollback_calls() { # log syscall
	awk -v sc="$2" 'NR == 1 { main = $1 }
		$1 != main { child = 1 }
		$1 == main { s = $2; sub(/\(.*/, "", s); if (s == sc) { n++; if (child) print n } }' "$1"
}
# The most calls of a kind made by the command's processes (their when=
# counters are their own: a kill point must lie beyond them).
child_max() { # log syscall
	awk -v sc="$2" 'NR == 1 { main = $1 }
		$1 != main { s = $2; sub(/\(.*/, "", s); if (s == sc) c[$1]++ }
		END { m = 0; for (p in c) if (c[p] > m) m = c[p]; print m }' "$1"
}
: >"$SCRATCH/rbpoints"
if ! awk 'NR == 1 { main = $1 } $1 != main { f = 1 } END { exit !f }' "$SCRATCH/exec.trace"; then
	not_ok "the trace of apply --exec shows the command's processes" "$(head -3 "$SCRATCH/exec.trace")"
fi
for sc in $KINDS; do
	rollback_calls "$SCRATCH/exec.trace" "$sc" >"$SCRATCH/rb.$sc"
	k=$(wc -l <"$SCRATCH/rb.$sc")
	[ "$k" -gt 0 ] || continue
	cm=$(child_max "$SCRATCH/exec.trace" "$sc")
	m=$(count_calls "$SCRATCH/exec.trace" "$sc")
	b=$BUDGET
	case $sc in
	fsync | syncfs | fdatasync | renameat | unlinkat) b=$((BUDGET + 2)) ;;
	fchmod | mkdir | rename | unlink) b=$(((BUDGET + 1) / 2)) ;;
	esac
	for i in $(pick_points "$k" "$b"); do
		n=$(sed -n "${i}p" "$SCRATCH/rb.$sc")
		[ "$n" -gt "$cm" ] || continue # would hit the command, not decree
		echo "rb:$sc $n $m" >>"$SCRATCH/rbpoints"
	done
done

# check_point SLOTDIR rb:SYSCALL N M IDX
check_rollback_kill() {
	local d=$1 sc=${2#*:} n=$3 m=$4 w=$1/w why="" st state next
	reset "$d"
	kill_at "$sc" "$n" "$KILLED" -C "$w" apply "$PATCH" --exec "$CMD"
	[ "$RC" -eq 137 ] || why="$why; not killed at $sc #$n (exit $RC: $(tail -1 "$SCRATCH/.kerr"))"
	"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
		why="$why; 'decree recover' failed: $(tail -3 "$d/rec.out")"
	st=$(full_state "$w")
	state=$(state_name "$st")
	case $state in
	post+swept) # rollback not committed: the apply is on the undo history
		next=undo
		if ! "$KILLED" -C "$w" undo >"$d/h.out" 2>&1; then
			why="$why; undo after an uncommitted rollback failed: $(tail -2 "$d/h.out")"
		elif st=$(full_state "$w") && [ "$st" != "$FP_PRE_S" ]; then
			why="$why; undo after an uncommitted rollback: not pre plus the command's file:
$(show_diff "$FP_PRE_S" "$st")"
		fi ;;
	pre) # rollback committed: the apply moved to the redo history
		next=redo
		if ! "$KILLED" -C "$w" redo >"$d/h.out" 2>&1; then
			why="$why; redo after a committed rollback failed: $(tail -2 "$d/h.out")"
		elif st=$(full_state "$w") && [ "$st" != "$FP_POST" ]; then
			why="$why; redo after a committed rollback did not reach post:
$(show_diff "$FP_POST" "$st")"
		fi ;;
	*) next=none
		why="$why; the tree is neither the post-apply tree the command left nor pre:
$(show_diff "$FP_POSTX" "$st")
-- vs pre:
$(show_diff "$FP_PRE" "$st")" ;;
	esac
	check_clean "$d" "$w"
	local what="rollback killed at $sc #$n/$m (recover -> $state, then $next)"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

# --- 3. I/O errors -------------------------------------------------------------
F=$SCRATCH/apply.trace
: >"$SCRATCH/fpoints"
sample() { # budget: sample the numbers on stdin (pick_points over their ranks)
	local all k
	all=$(cat)
	k=$(echo "$all" | grep -c .)
	[ "$k" -gt 0 ] || return 0
	for i in $(pick_points "$k" "$1"); do echo "$all" | sed -n "${i}p"; done
}
addf() { # sc errno list-of-n
	local sc=$1 e=$2 m n
	shift 2
	m=$(count_calls "$F" "$sc")
	for n in "$@"; do echo "io:$sc:$e $n $m" >>"$SCRATCH/fpoints"; done
}
middle() { awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
# writes to stdout/stderr are left alone (progress and summary lines)
WRE='^[0-9]+ +write[(]([03-9]|[0-9][0-9]+),'
addf write ENOSPC $(calls_in "$F" write "$WRE" | sample $((BUDGET + 2)))
addf openat ENOSPC $(calls_in "$F" openat 'O_CREAT' | sample $((BUDGET + 2)))
addf fsync EIO $(calls_in "$F" fsync | sample $((BUDGET * 2)))
addf syncfs EIO $(calls_in "$F" syncfs)
addf fdatasync EIO $(calls_in "$F" fdatasync | sample "$BUDGET")
addf renameat EIO $(calls_in "$F" renameat | sample $((BUDGET + 2)))
addf rename EIO $(calls_in "$F" rename | sample "$BUDGET")
addf unlinkat EIO $(calls_in "$F" unlinkat '= 0$' | sample "$BUDGET")
addf mkdirat ENOSPC $(calls_in "$F" mkdirat | sample "$BUDGET")
addf symlinkat ENOSPC $(calls_in "$F" symlinkat | sample "$BUDGET")
addf fchmod EIO $(calls_in "$F" fchmod | sample 2)
# the disk stays full (or keeps failing) from some point on, rollback included
addf write ENOSPC "$(calls_in "$F" write "$WRE" | middle)+"
addf openat ENOSPC "$(calls_in "$F" openat 'O_CREAT' | middle)+"
addf renameat EIO "$(calls_in "$F" renameat | middle)+"
addf fsync EIO "$(calls_in "$F" fsync | middle)+"

# check_point SLOTDIR io:SYSCALL:ERRNO N M IDX
check_io_error() {
	local d=$1 sc e n=$3 m=$4 w=$1/w why="" st state rc err persistent=no ndecree
	sc=${2#io:} e=${sc#*:} sc=${sc%%:*}
	local what="$e at $sc #$n/$m"
	case $n in *+) persistent=yes ;; esac
	reset "$d"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" apply "$PATCH"
	rc=$RC err=$ERR
	# With writes failing for good, stderr is dead too: no message to check.
	if [ "$rc" -ne 0 ] && ! { [ $persistent = yes ] && [ "$sc" = write ]; }; then
		ndecree=$(echo "$err" | grep -c '^decree: ')
		[ "$ndecree" = 1 ] || why="$why; exit $rc with $ndecree 'decree:' lines, wanted 1: $(echo "$err" | grep -v '^\(staging\|applying\|skip\) ' | head -4)"
		if [ "$(echo "$err" | grep -o 'rolling back failed too' | wc -l)" -gt 1 ]; then
			why="$why; garbled error message: $(echo "$err" | grep 'decree:')"
		fi
	fi
	if [ -n "$(wal_in "$w")" ]; then
		# allowed only if decree said so; `decree recover` must finish the job
		case "$err" in
		*"decree recover"*) ;;
		*) [ $persistent = yes ] && [ "$sc" = write ] ||
			why="$why; a txn.wal was left behind without telling to run 'decree recover' ($(echo "$err" | tail -1))" ;;
		esac
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; recover failed: $(tail -2 "$d/rec.out")"
		what="$what, log left, recovered"
	fi
	st=$(full_state "$w")
	state=$(state_name "$st")
	case $rc:$state in
	1:pre) what="$what: exit 1, unchanged" ;;
	0:post) what="$what: tolerated, applied" ;;
	1:post)
		case "$err" in
		*"was applied"*) what="$what: exit 1, applied (said so)" ;;
		*) why="$why; exit 1 ($(echo "$err" | grep '^decree: ' | tail -1)) but the patch WAS applied" ;;
		esac ;;
	*) why="$why; exit $rc, tree $state: $(echo "$err" | grep '^decree: ' | tail -2)
$(show_diff "$FP_PRE" "$st")" ;;
	esac
	local stemps
	stemps=$(find "$w/.decree" -name '*tmp*' 2>/dev/null)
	[ -z "$stemps" ] || why="$why; store temp files left: $(echo "$stemps" | head -3)"
	check_clean "$d" "$w"
	# the history matches the tree, and the apply works once the disk is fine
	if [ -z "$why" ] && [ "$state" = pre ]; then
		check_history "$d" "$w" pre
	elif [ -z "$why" ] && [ "$state" = post ]; then
		check_history "$d" "$w" post
	fi
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

check_point() {
	case $2 in
	apply:*) check_apply_kill "$@" ;;
	rb:*) check_rollback_kill "$@" ;;
	io:*) check_io_error "$@" ;;
	*) echo "FAIL|point $2|harness: unknown kind" ;;
	esac
}

# All three lists in one parallel run (one round of slots).
cat "$SCRATCH/points" "$SCRATCH/rbpoints" "$SCRATCH/fpoints" >"$SCRATCH/all"
start=$(date +%s)
run_points "$SCRATCH/all" "$SCRATCH/res"
echo "# kill points: $(wc -l <"$SCRATCH/points") in apply, $(wc -l <"$SCRATCH/rbpoints")" \
	"in the --exec rollback; I/O error points: $(wc -l <"$SCRATCH/fpoints")" \
	"($(($(date +%s) - start))s)"
done_testing
