#!/bin/bash
# kill_apply.sh - crash and fault coverage of `decree apply PATCH [--exec CMD]`
# (DESIGN.md "Guarantees", "Patches and transactions"; docs/cli/apply.md).
#
# 1. SIGKILL an apply of a multi-file patch (modify, create, delete, mode
#    changes, a new nested directory, the files of a deleted directory,
#    symlinks created/retargeted/deleted, file <-> symlink, a file that
#    becomes a directory and the reverse, binary content
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
# 4. SIGKILL `decree recover` while it rolls back an apply that was killed
#    in the middle of its renames: the next recover reaches exactly pre.
# 5. ENOSPC/EIO in the rollback of a failed --exec: exit 1, one `decree:`
#    line, then (after `decree recover` if decree asked for it) exactly pre
#    or exactly the tree the command left, never a mix.
# 6. The command leaves a process holding the tree lock: decree cannot roll
#    back and must say that the command failed.
#
# The killed process is the non-sanitized build (LeakSanitizer cannot run
# under ptrace; DECREE_KILLED); recovery and fsck run $DECREE, the follow-up
# undo/redo/apply the fast build.  Budget: KILL_BUDGET (default 4) points
# per syscall kind and scenario; KILL_SLOTS parallel trees (default 3).
. "$DECREE_TOP/tests/crash/lib.sh"
need_strace
pick_killed_binary
BUDGET=${KILL_BUDGET:-4}
[ "$BUDGET" -ge 2 ] 2>/dev/null || BUDGET=2 # pick_points needs 2

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
	printf 'a file that becomes a directory\n' >wasfile
	mkdir -p wasdir/x && printf 'in a directory that becomes a file\n' >wasdir/x/y.txt
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
	rm wasfile && mkdir -p wasfile/z && printf 'a directory now\n' >wasfile/z/f.txt
	rm -r wasdir && printf 'a file now\n' >wasdir
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
	renameat | unlinkat | write) b=$((BUDGET + 2)) ;;
	mkdirat | symlinkat) b=$((BUDGET * 2)) ;; # few: all (type changes)
	fchmod | mkdir | rename | unlink) b=$(((BUDGET + 1) / 2)) ;;
	esac
	[ "$b" -ge 2 ] || b=2
	{
		pick_points "$m" "$b"
		# the middle of the transaction: temps renamed over their targets,
		# files and directories of the tree deleted, directories created
		case $sc in
		renameat) pick_calls "$SCRATCH/apply.trace" renameat '"[.]decree-tmp-' 3 ;;
		unlinkat) pick_calls "$SCRATCH/apply.trace" unlinkat '"[^.][^"]*", 0[)] += 0$' 3
			pick_calls "$SCRATCH/apply.trace" unlinkat 'AT_REMOVEDIR[)] += 0$' 2 ;;
		mkdirat) pick_calls "$SCRATCH/apply.trace" mkdirat . 3 ;;
		esac
	} | sort -n | uniq | while read -r n; do echo "apply:$sc $n $m"; done >>"$SCRATCH/points"
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
# A line of another pid that is only an exit or a signal ("+++ exited with 0
# +++") is one of decree's own threads ending, not the command.
rollback_calls() { # log syscall [regex]
	awk -v sc="$2" -v re="${3:-.}" 'NR == 1 { main = $1 }
		$1 != main && $2 != "+++" && $2 != "---" { child = 1 }
		$1 == main { s = $2; sub(/\(.*/, "", s)
			if (s == sc) { n++; if (child && $0 ~ re) print n } }' "$1"
}
sample() { # budget: sample the numbers on stdin (pick_points over their ranks)
	local all k
	all=$(cat)
	k=$(echo "$all" | grep -c .)
	[ "$k" -gt 0 ] || return 0
	for i in $(pick_points "$k" "$1"); do echo "$all" | sed -n "${i}p"; done
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
	write) ;;
	*) b=$(((BUDGET + 1) / 2)) ;; # openat fchmod mkdir rename unlink ...
	esac
	[ "$b" -ge 2 ] || b=2
	{
		sample "$b" <"$SCRATCH/rb.$sc"
		# the middle of the rollback transaction (as for the apply)
		case $sc in
		renameat) rollback_calls "$SCRATCH/exec.trace" renameat '"[.]decree-tmp-' | sample 3 ;;
		unlinkat) rollback_calls "$SCRATCH/exec.trace" unlinkat '"[^.][^"]*", 0[)] += 0$' | sample 3
			rollback_calls "$SCRATCH/exec.trace" unlinkat 'AT_REMOVEDIR[)] += 0$' | sample 2 ;;
		mkdirat) rollback_calls "$SCRATCH/exec.trace" mkdirat | sample 3 ;;
		esac
	} | sort -n | uniq | while read -r n; do
		[ "$n" -gt "$cm" ] || continue # would hit the command, not decree
		echo "rb:$sc $n $m"
	done >>"$SCRATCH/rbpoints"
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
addf() { # sc errno list-of-n
	local sc=$1 e=$2 m n
	shift 2
	m=$(count_calls "$F" "$sc")
	for n in "$@"; do echo "io:$sc:$e $n $m" >>"$SCRATCH/fpoints"; done
}
middle() { awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
# writes to stdout/stderr are left alone (progress and summary lines)
WRE='^[0-9]+ +write[(]([03-9]|[0-9][0-9]+),'
addf write ENOSPC $(pick_calls "$F" write "$WRE" $((BUDGET + 1)))
addf openat ENOSPC $(pick_calls "$F" openat 'O_CREAT' $((BUDGET + 1)))
addf fsync EIO $(pick_calls "$F" fsync . $((BUDGET * 2)))
addf syncfs EIO $(calls_in "$F" syncfs)
addf fdatasync EIO $(pick_calls "$F" fdatasync . "$BUDGET")
addf renameat EIO $(pick_calls "$F" renameat . $((BUDGET + 2)))
addf rename EIO $(pick_calls "$F" rename . "$BUDGET")
addf unlinkat EIO $(pick_calls "$F" unlinkat '= 0$' "$BUDGET")
addf mkdirat ENOSPC $(pick_calls "$F" mkdirat . "$BUDGET")
addf symlinkat ENOSPC $(pick_calls "$F" symlinkat . "$BUDGET")
addf fchmod EIO $(pick_calls "$F" fchmod . 2)
# the disk stays full (or keeps failing) from some point on, rollback included
addf write ENOSPC "$(calls_in "$F" write "$WRE" | middle)+"
addf openat ENOSPC "$(calls_in "$F" openat 'O_CREAT' | middle)+"
addf renameat EIO "$(calls_in "$F" renameat | middle)+"
addf fsync EIO "$(calls_in "$F" fsync | middle)+"

# check_point SLOTDIR io:SYSCALL:ERRNO N M IDX
check_io_error() {
	local d=$1 sc e n=$3 m=$4 w=$1/w why="" st state rc err persistent=no
	sc=${2#io:} e=${sc#*:} sc=${sc%%:*}
	local what="$e at $sc #$n/$m"
	case $n in *+) persistent=yes ;; esac
	reset "$d"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" apply "$PATCH"
	rc=$RC err=$ERR
	fault_messages "$rc" "$err" "$sc" $persistent yes
	fault_wal "$d" "$w" "$err" "$sc" $persistent
	st=$(full_state "$w")
	state=$(state_name "$st")
	case $rc:$state in
	1:pre) what="$what: exit 1, unchanged" ;;
	0:post) what="$what: tolerated, applied" ;;
	1:post) why="$why; exit 1 ($(echo "$err" | grep '^decree: ' | tail -1)) but the patch WAS applied" ;;
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

# --- 4. kills of the recovery of an interrupted apply ------------------------
# The apply killed in the middle of its renames over the targets (files of
# the patch half old, half new, the deleted directory gone, the new one
# there), then `decree recover` killed at its own steps: the next `decree
# recover` must still roll back to exactly pre (recovery is idempotent).
MIDREN=$(pick_calls "$SCRATCH/apply.trace" renameat '"[.]decree-tmp-' 3 | sed -n 2p)
make_mid() { # slotdir: $1/mid = a tree whose apply was killed mid-apply
	reset "$1"
	kill_at renameat "${MIDREN:-0}" "$KILLED" -C "$1/w" apply "$PATCH"
	[ "$RC" -eq 137 ] && [ -n "$(wal_in "$1/w")" ] || return 1
	rm -rf "$1/mid" && cp -a "$1/w" "$1/mid"
}
if make_mid "$SCRATCH/s0"; then
	st=$(full_state "$W0")
	if [ "$(state_name "$st")" = other ]; then
		ok "apply killed mid-apply (renameat #$MIDREN) leaves a mixed tree and a log"
	else
		not_ok "apply killed mid-apply (renameat #$MIDREN) leaves a mixed tree and a log" \
			"the tree is already $(state_name "$st")"
	fi
else
	not_ok "apply killed mid-apply (renameat #${MIDREN:-?}) leaves a log to recover" "exit $RC"
fi
trace_log "$SCRATCH/recover.trace" "$KILLED" -C "$W0" recover
st=$(full_state "$W0")
if [ "$RC" -eq 0 ] && [ "$st" = "$FP_PRE" ]; then
	ok "recovery from mid-apply rolls back to the pre state"
else
	not_ok "recovery from mid-apply rolls back to the pre state" "exit $RC
$(show_diff "$FP_PRE" "$st")"
fi
: >"$SCRATCH/recpoints"
for sc in renameat unlinkat write openat mkdirat symlinkat fchmod fsync syncfs; do
	m=$(count_calls "$SCRATCH/recover.trace" "$sc")
	[ "$m" -gt 0 ] || continue
	b=$(((BUDGET + 1) / 2))
	case $sc in renameat | unlinkat | mkdirat) b=$BUDGET ;; esac
	[ "$b" -ge 2 ] || b=2
	for n in $(pick_points "$m" "$b"); do echo "rec:$sc $n $m" >>"$SCRATCH/recpoints"; done
done

# check_point SLOTDIR rec:SYSCALL N M IDX
check_recover_kill() {
	local d=$1 sc=${2#*:} n=$3 m=$4 w=$1/w why="" st
	if [ ! -d "$d/mid" ] && ! make_mid "$d"; then
		echo "FAIL|recover killed at $sc #$n/$m|could not interrupt the apply (exit $RC)"
		return
	fi
	rm -rf "$w" && cp -a "$d/mid" "$w"
	kill_at "$sc" "$n" "$KILLED" -C "$w" recover
	[ "$RC" -eq 137 ] || why="$why; recover not killed at $sc #$n (exit $RC)"
	"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
		why="$why; second recover failed: $(tail -3 "$d/rec.out")"
	st=$(full_state "$w")
	[ "$st" = "$FP_PRE" ] || why="$why; the tree is not pre after the second recover:
$(show_diff "$FP_PRE" "$st")"
	check_clean "$d" "$w"
	[ -n "$why" ] || check_history "$d" "$w" pre
	if [ -z "$why" ]; then echo "PASS|recover of an interrupted apply killed at $sc #$n/$m, recovered again"
	else echo "FAIL|recover of an interrupted apply killed at $sc #$n/$m|${why#; }"; fi
}

# --- 5. I/O errors in the rollback of a failed --exec -----------------------------
# The command failed; the rollback transaction meets ENOSPC/EIO.  decree
# must exit 1 with one `decree:` line; a log may stay only if decree said
# to run `decree recover`.  After that the tree is exactly pre (the rollback
# happened) or exactly the tree the command left (it did not); no temps,
# fsck clean, and the history matches the tree.
E=$SCRATCH/exec.trace
: >"$SCRATCH/rbfpoints"
addrb() { # sc errno regex budget
	local sc=$1 e=$2 re=$3 b=$4 cm m n
	cm=$(child_max "$E" "$sc")
	m=$(count_calls "$E" "$sc")
	for n in $(rollback_calls "$E" "$sc" "$re" | sample "$b"); do
		[ "$n" -gt "$cm" ] || continue
		echo "rbio:$sc:$e $n $m"
	done >>"$SCRATCH/rbfpoints"
}
half=$(((BUDGET + 1) / 2))
[ "$half" -ge 2 ] || half=2
addrb write ENOSPC "$WRE" "$half"
addrb openat ENOSPC O_CREAT "$half"
addrb fsync EIO . "$BUDGET"
addrb syncfs EIO . 2
addrb renameat EIO . "$half"
addrb renameat EIO '"[.]decree-tmp-' 3
addrb unlinkat EIO '= 0$' "$half"
addrb mkdirat ENOSPC . 2
addrb symlinkat ENOSPC . 2
addrb fchmod EIO . 2
mid_rb() { rollback_calls "$E" "$1" "$2" | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
n=$(mid_rb write "$WRE") && [ -n "$n" ] && echo "rbio:write:ENOSPC $n+ $(count_calls "$E" write)" >>"$SCRATCH/rbfpoints"
n=$(mid_rb renameat '"[.]decree-tmp-') && [ -n "$n" ] && echo "rbio:renameat:EIO $n+ $(count_calls "$E" renameat)" >>"$SCRATCH/rbfpoints"

# check_point SLOTDIR rbio:SYSCALL:ERRNO N M IDX
check_rollback_io() {
	local d=$1 sc e n=$3 m=$4 w=$1/w why="" st state rc err persistent=no ndecree next
	sc=${2#rbio:} e=${sc#*:} sc=${sc%%:*}
	local what="$e at $sc #$n/$m in the rollback"
	case $n in *+) persistent=yes ;; esac
	reset "$d"
	fail_at "$sc" "$e" "$n" "$KILLED" -C "$w" apply "$PATCH" --exec "$CMD"
	rc=$RC err=$ERR
	[ "$rc" -eq 1 ] || why="$why; exit $rc, wanted 1 (the command failed)"
	if ! { [ $persistent = yes ] && [ "$sc" = write ]; }; then
		ndecree=$(echo "$err" | grep -c '^decree: ')
		[ "$ndecree" = 1 ] || why="$why; $ndecree 'decree:' lines, wanted 1: $(echo "$err" | grep -v '^\(staging\|applying\|rolling_back\|skip\) ' | head -4)"
	fi
	if [ -n "$(wal_in "$w")" ]; then
		case "$err" in
		*"decree recover"* | *"the next decree command"*) ;;
		*) [ $persistent = yes ] && [ "$sc" = write ] ||
			why="$why; a txn.wal was left behind without telling to run 'decree recover' ($(echo "$err" | tail -1))" ;;
		esac
		"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
			why="$why; recover failed: $(tail -2 "$d/rec.out")"
		what="$what, log left, recovered"
	fi
	st=$(full_state "$w")
	state=$(state_name "$st")
	case $state in
	pre) next=redo ;;
	post+swept) next=undo
		# the message must say that the command failed (and so that the
		# tree is not what the apply left): docs/cli/apply.md
		case "$err" in
		*"'$CMD' failed"*) ;;
		*) [ $persistent = yes ] && [ "$sc" = write ] ||
			why="$why; the rollback did not happen and the message does not say that '$CMD' failed: $(echo "$err" | grep '^decree: ')" ;;
		esac ;;
	*) next=none
		why="$why; the tree is neither the tree the command left nor pre:
$(show_diff "$FP_POSTX" "$st")
-- vs pre:
$(show_diff "$FP_PRE" "$st")" ;;
	esac
	local stemps
	stemps=$(find "$w/.decree" -name '*tmp*' 2>/dev/null)
	[ -z "$stemps" ] || why="$why; store temp files left: $(echo "$stemps" | head -3)"
	check_clean "$d" "$w"
	if [ -z "$why" ] && [ $next = redo ]; then
		if ! "$KILLED" -C "$w" redo >"$d/h.out" 2>&1 || [ "$(full_state "$w")" != "$FP_POST" ]; then
			why="$why; redo after the rollback did not reach post: $(tail -2 "$d/h.out")"
		fi
	elif [ -z "$why" ] && [ $next = undo ]; then
		if ! "$KILLED" -C "$w" undo >"$d/h.out" 2>&1 || [ "$(full_state "$w")" != "$FP_PRE_S" ]; then
			why="$why; undo after the failed rollback did not reach pre (plus the command's file): $(tail -2 "$d/h.out")"
		fi
	fi
	what="$what: $state, then $next"
	if [ -z "$why" ]; then echo "PASS|$what"; else echo "FAIL|$what|${why#; }"; fi
}

check_point() {
	case $2 in
	rbio:*) check_rollback_io "$@" ;;
	rec:*) check_recover_kill "$@" ;;
	apply:*) check_apply_kill "$@" ;;
	rb:*) check_rollback_kill "$@" ;;
	io:*) check_io_error "$@" ;;
	*) echo "FAIL|point $2|harness: unknown kind" ;;
	esac
}

# --- 6. the lock cannot be taken back for the rollback ------------------------
# The command leaves a process behind that holds the project's tree lock
# (an flock on the root directory, docs/transactions.md) beyond decree's
# lock timeout.  decree cannot roll back; then it must say so: exit 1 and
# one `decree:` line that names the failed command (as "'CMD' failed
# (status N) and rolling back failed: ..." does), and the tree is exactly
# the one the command left.  (The same happens when opening the store's
# lock file fails: ENOSPC at the first openat(O_CREAT) of the rollback.)
if command -v flock >/dev/null 2>&1; then
	w=$W0
	reset "$SCRATCH/s0"
	rm -f "$SCRATCH/holder.pid"
	LCMD="touch swept; flock . sh -c 'echo \$\$ >$SCRATCH/holder.pid; exec sleep 60' >/dev/null 2>&1 &
i=0; while [ ! -s $SCRATCH/holder.pid ] && [ \$i -lt 200 ]; do sleep 0.05; i=\$((i + 1)); done; exit 1"
	DECREE_LOCK_TIMEOUT_MS=300 t_exit 1 "lock held by the command's child: the apply --exec exits 1" \
		"$DECREE" -C "$w" apply "$PATCH" --exec "$LCMD"
	lerr=$(echo "$ERR" | grep '^decree: ')
	holder=$(cat "$SCRATCH/holder.pid" 2>/dev/null)
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	# (flock exits when its child does: the lock is free again)
	for _ in $(seq 1 40); do flock -n "$w" true 2>/dev/null && break; sleep 0.05; done
	if [ "$(echo "$lerr" | grep -c .)" = 1 ]; then ok "... with one decree: line"
	else not_ok "... with one decree: line" "$ERR"; fi
	case "$lerr" in
	*"failed (status 1)"*) ok "... which says that the command failed ($lerr)" ;;
	*) not_ok "... which says that the command failed (and that nothing was rolled back)" \
		"got: $lerr" ;;
	esac
	st=$(full_state "$w")
	case $(state_name "$st") in
	pre | post+swept) ok "... the tree is exactly $(state_name "$st")" ;;
	*) not_ok "... the tree is exactly pre or the tree the command left" "$(show_diff "$FP_POSTX" "$st")" ;;
	esac
	if [ -z "$(wal_in "$w")" ] && [ -z "$(temps_in "$w")" ] && "$DECREE" -C "$w" fsck >/dev/null 2>&1; then
		ok "... no log, no temps, fsck clean"
	else
		not_ok "... no log, no temps, fsck clean" "$(wal_in "$w"; temps_in "$w")"
	fi
else
	ok "# SKIP the lock held by the command: no flock(1)"
fi

# All lists in one parallel run (one round of slots).
cat "$SCRATCH/points" "$SCRATCH/rbpoints" "$SCRATCH/fpoints" "$SCRATCH/recpoints" \
	"$SCRATCH/rbfpoints" >"$SCRATCH/all"
start=$(date +%s)
run_points "$SCRATCH/all" "$SCRATCH/res"
echo "# kill points: $(wc -l <"$SCRATCH/points") in apply, $(wc -l <"$SCRATCH/rbpoints")" \
	"in the --exec rollback, $(wc -l <"$SCRATCH/recpoints") in the recovery of an apply;" \
	"I/O error points: $(wc -l <"$SCRATCH/fpoints") in apply," \
	"$(wc -l <"$SCRATCH/rbfpoints") in the rollback" \
	"($(($(date +%s) - start))s)"
done_testing
