# Kill points are syscall counts, which must not vary between runs: the
# scan runs on one thread here (DECREE_THREADS=1), so the order of system
# calls is the same every time.
export DECREE_THREADS=1

# tests/crash/lib.sh - helpers shared by the crash/fault scripts of tests/crash
# (run-all.sh skips files named lib.sh).  Source it from a test script:
#
#   . "$DECREE_TOP/tests/crash/lib.sh"
#
# It sources tests/cli/lib.sh (t, t_exit, t_err, ok, not_ok, tree_state,
# $SCRATCH, $OUT/$ERR/$RC ...) and adds:
#
#   need_strace             skip the script (one "ok # SKIP") without strace
#   pick_killed_binary      sets KILLED, the decree binary to run under
#                           strace: the non-sanitized build/decree when
#                           $DECREE is the ASan build (LeakSanitizer does not
#                           work under ptrace) when it is up to date with
#                           the sources, else the ASan build; override:
#                           DECREE_KILLED.  Both binaries are copied to
#                           $SCRATCH first (other people's rebuilds).
#   fast_state DIR          same output as tree_state, in one python3 process
#   temps_in DIR            every .decree-tmp-* below DIR (store included)
#   wal_in DIR              every txn.wal below DIR/.decree/store/roots
#   trace_log LOG cmd...    run cmd under strace -f, logging $TRACE_SET
#   count_calls LOG SC      max invocations of SC per tracee in such a log
#                           (the unit strace's when= counts in)
#   calls_in LOG SC [RE]    the invocation numbers of SC whose line matches RE
#   pick_points M BUDGET    1..M if M <= BUDGET, else the first 3, the last
#                           3 and evenly spaced points in between (sorted)
#   kill_at SC N cmd...     run cmd under strace, SIGKILL at invocation N of
#                           syscall SC (-e inject=SC:signal=SIGKILL:when=N);
#                           sets $RC (137 = killed)
#   fail_at SC ERRNO N cmd...   the same, the call fails with ERRNO instead
#                           (N+ = from then on); sets $RC, $OUT, $ERR
#   run_points LIST PREFIX  run check_point (defined by the script) for each
#                           kill point of LIST on $SLOTS trees in parallel
#   PY3                     a fast-starting python3
#   damage_bytes F HOW N    cut, flip, zero or junk F at N (the damage suites)
#   restore_slots NA NB NG NN   $SLOTS projects at checkpoint X, changed (the
#                           restore trees of damaged_log and recover_faults)
#
# Scratch space: tmpfs (/dev/shm) when usable, because every kill point
# resets a whole tree and fsync on disk costs more than the test itself.
# SIGKILL consistency does not depend on the file system's durability.
# Note: strace's signal injection does not work with --seccomp-bpf (strace
# 6.1), so every traced run stops at every syscall: ~0.2 s per restore.
set -u
: "${DECREE:?DECREE must point to the decree binary}"
: "${DECREE_TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
	[ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $4}')" -gt 65536 ] 2>/dev/null; then
	export TMPDIR=/dev/shm
fi
. "$DECREE_TOP/tests/cli/lib.sh"

# LeakSanitizer cannot run under ptrace (and a killed process leaks by
# definition): traced commands run with detect_leaks=0.
TRACED_ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"

need_strace() {
	# (run-all.sh counts a script that passes nothing as failed: one ok)
	if ! command -v strace >/dev/null 2>&1; then
		echo "ok 1 # SKIP strace is not installed (scripts/deps.sh installs it)"
		echo "1..1"
		exit 0
	fi
	# ptrace may be forbidden in some containers
	if ! strace -f -o /dev/null true >/dev/null 2>&1; then
		echo "ok 1 # SKIP strace cannot trace here (ptrace not permitted)"
		echo "1..1"
		exit 0
	fi
}

pick_killed_binary() {
	KILLED=${DECREE_KILLED:-}
	if [ -z "$KILLED" ]; then
		KILLED=$DECREE
		case "${DECREE_BUILD:-}" in
		*/san | */san/)
			# only when up to date with the sources ('make -q';
			# B= and SANITIZE= on the command line, since the
			# environment may say build/san): a stale binary
			# would test old code, and building it here would
			# race the other suites
			if [ -x "$DECREE_TOP/build/decree" ] &&
				make -q -C "$DECREE_TOP" B=build SANITIZE= \
					build/decree >/dev/null 2>&1; then
				KILLED=$DECREE_TOP/build/decree
			fi
			;;
		esac
	fi
	# Private copies: a rebuild of the tree (make by someone else) must not
	# pull the binaries away in the middle of a run.
	if cp "$KILLED" "$SCRATCH/decree-killed" 2>/dev/null && [ -x "$SCRATCH/decree-killed" ]; then
		KILLED=$SCRATCH/decree-killed
	fi
	if cp "$DECREE" "$SCRATCH/decree-checked" 2>/dev/null && [ -x "$SCRATCH/decree-checked" ]; then
		DECREE=$SCRATCH/decree-checked
	fi
}

# python3 without site initialisation: ~10x faster to start (pyenv shims...)
if [ -x /usr/bin/python3 ]; then PY3="/usr/bin/python3 -S -E"; else PY3="python3 -E"; fi
fast_state() {
	$PY3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
out = []
def walk(rel):
    full = os.path.join(root, rel) if rel else root
    for e in os.scandir(full):
        p = (rel + "/" + e.name) if rel else e.name
        if p == ".decree" or e.name == ".git":
            continue
        st = os.lstat(os.path.join(root, p))
        if stat.S_ISLNK(st.st_mode):
            out.append((b"./" + os.fsencode(p), "L ./%s -> %s" % (p, os.readlink(os.path.join(root, p)))))
        elif stat.S_ISDIR(st.st_mode):
            walk(p)
        elif stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            with open(os.path.join(root, p), "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            out.append((b"./" + os.fsencode(p), "F ./%s %o %s" % (p, st.st_mode & 0o7777, h.hexdigest())))
walk("")
out.sort(key=lambda t: t[0])
sys.stdout.write("".join(line + "\n" for _, line in out))
PY
}

temps_in() { find "$1" -name '.decree-tmp-*' 2>/dev/null; }
wal_in() { find "$1/.decree/store/roots" -name txn.wal 2>/dev/null; }

# kill_at SYSCALLS N cmd...
kill_at() {
	local sc=$1 n=$2
	shift 2
	(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -o /dev/null -e trace="$sc" \
		-e inject="$sc":signal=SIGKILL:when="$n" \
		"$@" >"$SCRATCH/.kout" 2>"$SCRATCH/.kerr"; exit $?) 2>/dev/null
	RC=$?
}

# fail_at SYSCALLS ERRNO N cmd...
fail_at() {
	local sc=$1 e=$2 n=$3
	shift 3
	(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -o /dev/null -e trace="$sc" \
		-e inject="$sc":error="$e":when="$n" \
		"$@" >"$SCRATCH/.kout" 2>"$SCRATCH/.kerr"; exit $?) 2>/dev/null
	RC=$?
	OUT=$(cat "$SCRATCH/.kout")
	ERR=$(cat "$SCRATCH/.kerr")
}

# count_calls LOG SYSCALL: the largest number of SYSCALL invocations made by
# one tracee (strace counts when= per syscall and per tracee).
count_calls() {
	awk -v sc="$2" '{ s = $2; sub(/\(.*/, "", s); if (s == sc) c[$1]++ }
		END { m = 0; for (p in c) if (c[p] > m) m = c[p]; print m }' "$1"
}

pick_points() {
	local m=$1 budget=$2
	if [ "$m" -le "$budget" ]; then
		seq 1 "$m"
		return
	fi
	if [ "$budget" -lt 6 ]; then # evenly spaced, first and last included
		local i
		for i in $(seq 0 $((budget - 1))); do
			echo $((1 + (m - 1) * i / (budget - 1)))
		done | uniq
		return
	fi
	{
		seq 1 3
		seq $((m - 2)) "$m"
		local inner=$((budget - 6)) i
		for i in $(seq 1 "$inner"); do
			echo $((3 + (m - 6) * i / (inner + 1)))
		done
	} | sort -n | uniq
}

# trace_log LOG cmd...: run cmd under strace -f, logging the calls that
# mutate the file system (and openat), to count kill points.
TRACE_SET=renameat,rename,renameat2,unlinkat,unlink,rmdir,write,pwrite64,fsync,fdatasync,syncfs,openat,mkdirat,mkdir,symlinkat,symlink,fchmod,ftruncate
trace_log() {
	local log=$1
	shift
	(ASAN_OPTIONS=$TRACED_ASAN_OPTIONS strace -f -o "$log" -e trace="$TRACE_SET" \
		"$@" >"$SCRATCH/.kout" 2>"$SCRATCH/.kerr"; exit $?) 2>/dev/null
	RC=$?
}

# run_points LIST PREFIX: LIST has one "syscall n m" line per kill point.
# The caller defines check_point SLOTDIR SYSCALL N M INDEX, which prints one
# line "PASS|description" or "FAIL|description|why".  Points are dealt out to
# $SLOTS workers ($SCRATCH/s0 .. s<SLOTS-1>, each with its own tree: a store
# is keyed by the root's path, so a tree cannot be copied between slots),
# which run in parallel (strace is latency-bound); results print in order.
SLOTS=${KILL_SLOTS:-3}
run_points() { # file with "syscall n m" lines; prefix for result files
	local list=$1 pre=$2 k
	for k in $(seq 0 $((SLOTS - 1))); do
		(
			SCRATCH=$SCRATCH/s$k # kill_at's output files
			i=0
			while read -r sc n m; do
				if [ $((i % SLOTS)) -eq "$k" ]; then
					check_point "$SCRATCH" "$sc" "$n" "$m" "$i" >"$pre.$i" 2>&1
				fi
				i=$((i + 1))
			done <"$list"
		) &
	done
	wait
	local i=0 line
	while read -r _; do
		line=$(cat "$pre.$i")
		case "$line" in
		PASS\|*) ok "${line#PASS|}" ;;
		FAIL\|*) rest=${line#FAIL|}; not_ok "${rest%%|*}" "${rest#*|}" ;;
		*) not_ok "kill point $i" "harness: $line" ;;
		esac
		i=$((i + 1))
	done <"$list"
}

# calls_in LOG SYSCALL [REGEX]: the invocation numbers (strace's when= unit:
# per syscall, per tracee) of SYSCALL in LOG whose line matches REGEX.
calls_in() {
	awk -v sc="$2" -v re="${3:-.}" '{ s = $2; sub(/\(.*/, "", s)
		if (s == sc) { n[$1]++; if ($0 ~ re) print n[$1] } }' "$1"
}

# pick_calls LOG SYSCALL REGEX BUDGET: the invocation numbers (strace's when=
# unit) of the calls of SYSCALL whose line matches REGEX, sampled with
# pick_points over their ranks (e.g. the renames of temps over their targets
# in the middle of a transaction, not the store's renames around it).
pick_calls() {
	local all k i
	all=$(calls_in "$1" "$2" "$3")
	k=$(printf '%s\n' "$all" | grep -c .)
	[ "$k" -gt 0 ] || return 0
	for i in $(pick_points "$k" "$4"); do printf '%s\n' "$all" | sed -n "${i}p"; done
}

# Shared checks of a fault point (enospc.sh, kill_apply.sh).  They append
# to the caller's $why (and $what): bash functions see the caller's locals.
#
# fault_messages RC ERR SYSCALL PERSISTENT EXACT: a failing command says
# why in a "decree:" line (exactly one when EXACT=yes), never with a
# doubled "rolling back failed too".  With writes failing for good, stderr
# is dead too: nothing to check then.
fault_messages() {
	local rc=$1 err=$2 sc=$3 persistent=$4 exact=$5 n
	[ "$rc" -ne 0 ] || return 0
	[ "$persistent" = yes ] && [ "$sc" = write ] && return 0
	n=$(echo "$err" | grep -c '^decree: ')
	if [ "$exact" = yes ]; then
		[ "$n" = 1 ] || why="$why; exit $rc with $n 'decree:' lines, wanted 1: $(echo "$err" | grep -v '^\(staging\|applying\|skip\) ' | head -4)"
	else
		case "$err" in
		*"decree: "*) ;;
		*) why="$why; exit $rc without a 'decree:' message: $err" ;;
		esac
	fi
	if [ "$(echo "$err" | grep -o 'rolling back failed too' | wc -l)" -gt 1 ]; then
		why="$why; garbled error message: $(echo "$err" | grep 'decree:')"
	fi
}

# fault_wal SLOTDIR TREE ERR SYSCALL PERSISTENT: a txn.wal left behind is
# allowed only if decree said so ('decree recover', or that the next decree
# command finishes the job); 'decree recover' must then finish the job.
fault_wal() {
	local d=$1 w=$2 err=$3 sc=$4 persistent=$5
	[ -n "$(wal_in "$w")" ] || return 0
	case "$err" in
	*"decree recover"* | *"the next decree command"*) ;;
	*) [ "$persistent" = yes ] && [ "$sc" = write ] ||
		why="$why; a txn.wal was left behind without telling to run 'decree recover' ($(echo "$err" | tail -1))" ;;
	esac
	"$DECREE" -C "$w" recover >"$d/rec.out" 2>&1 ||
		why="$why; recover failed: $(tail -2 "$d/rec.out")"
	what="$what, log left, recovered"
}

# --- the restore trees of damaged_log.sh and recover_faults.sh --------------
# restore_slots NA NB NGONE NNEW: SLOTS copies of one project ($SCRATCH/s<k>/w,
# and its pristine copy .../p) holding checkpoint X of a tree of NA + NB
# files, NGONE in a directory the change deletes, an executable and a
# symlink, then changed: every a/ file, every other b/ file, the directory
# deleted, NNEW files created, the mode and the link changed.  Restoring X
# undoes all of it.  Sets FP_X and FP_PRE (fast_state of X and of the
# changed tree); on failure reports one not_ok and exits.
restore_x_tree() { # dir na nb ngone
	mkdir -p "$1" && cd "$1" || return 1
	mkdir -p a b/c gone/deep
	for i in $(seq 1 "$2"); do printf 'a %d\n' "$i" >a/f$i.txt; done
	for i in $(seq 1 "$3"); do printf 'b %d\n' "$i" >b/c/g$i.txt; done
	for i in $(seq 1 "$4"); do printf 'gone %d\n' "$i" >gone/deep/x$i.txt; done
	printf '#!/bin/sh\n' >run.sh && chmod 755 run.sh
	ln -s a/f1.txt link
	cd - >/dev/null
}
restore_change_tree() { # dir na nb nnew
	cd "$1" || return 1
	for i in $(seq 1 "$2"); do printf 'changed a %d\n' "$i" >a/f$i.txt; done
	for i in $(seq 1 "$3" | awk 'NR % 2'); do printf 'changed b %d\n' "$i" >b/c/g$i.txt; done
	rm -r gone
	mkdir -p new/deeper
	for i in $(seq 1 "$4"); do printf 'new %d\n' "$i" >new/deeper/n$i.txt; done
	chmod 644 run.sh
	rm link && ln -s b link
	cd - >/dev/null
}
restore_slots() { # na nb ngone nnew
	local k d
	for k in $(seq 0 $((SLOTS - 1))); do
		d=$SCRATCH/s$k
		if ! {
			mkdir -p "$d" &&
				restore_x_tree "$d/w" "$1" "$2" "$3" &&
				"$DECREE" -C "$d/w" checkpoint create --message X >/dev/null &&
				{ [ "$k" != 0 ] || fast_state "$d/w" >"$SCRATCH/fp_x"; } &&
				restore_change_tree "$d/w" "$1" "$2" "$4" &&
				{ [ "$k" != 0 ] || fast_state "$d/w" >"$SCRATCH/fp_pre"; } &&
				cp -a "$d/w" "$d/p"
		} >"$SCRATCH/setup.log" 2>&1; then
			not_ok "set up the trees (slot $k)" "$(cat "$SCRATCH/setup.log")"
			done_testing
			exit 1
		fi
	done
	FP_X=$(cat "$SCRATCH/fp_x") FP_PRE=$(cat "$SCRATCH/fp_pre")
}

# damage_bytes FILE HOW N: cut FILE to N bytes, flip a bit of byte N, zero
# the 4 KiB page at N, or (junk) append 300 bytes of garbage.
damage_bytes() { # file how n
	$PY3 - "$@" <<'PY'
import sys
p, how, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = bytearray(open(p, "rb").read())
if how == "cut":
    d = d[:min(n, len(d))]
elif how == "flip":
    if n < len(d): d[n] ^= 0x10
elif how == "zero":
    for i in range(n, min(n + 4096, len(d))): d[i] = 0
elif how == "junk":
    d += bytes((i * 37 + 11) & 0xff for i in range(300))
open(p, "wb").write(d)
PY
}
