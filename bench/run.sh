#!/bin/sh
# bench/run.sh - decree against a shadow git repository, same trees, same run.
#
#   sh bench/run.sh path/to/decree [--quick] [--only NAME]... [--reps N]
#                   [--strict] [--keep]
#
# For each tree (tiny: 5 files / 50 KiB, small: 50 files / 500 KiB, gen10k:
# 10,000 generated files / 100 MiB, linux: the Linux 6.1 source) every
# operation is timed for decree and for the reference, alternating runs
# (decree, git, decree, git, ...) on the very same tree, and a table prints
# the medians, the ratio decree/git and the target.  docs/bench.md explains
# every case and how to read the table.
#
# The workspace group times `decree workspace create` against `git worktree
# add` (of a shadow repository of the same tree) and `cp -a`, on ext4 and on
# an XFS file system with reflink (a loop file, when root), on gen10k and the
# Linux tree, with the extra disk each uses (df before/after), and `decree
# workspace apply` of 10 changed files against a shadow-git checkpoint.
#
# Two small groups compare diff and apply with their usual tools: diff
# (`decree checkpoint diff` against `git diff --no-index` on a 1 MiB complete
# rewrite and on a 30 MiB file with 2,000 edited lines) and apply (`decree
# apply` of a 1,000-file patch against GNU `patch -p1`).  The pipeline
# group times `decree run` itself (docs/pipeline.md): with a no-op routine in
# a copy of the Linux tree, against the bare lstat walk of that tree, and
# with a routine that rewrites 7,000 files of a generated 20,000-file tree
# (decree run minus the routine alone, against the original Rust decree's
# 481 ms checkpoint + 379 ms diff).
#
# Three floors go with them, measured in the same runs: the durable writes
# of a first checkpoint (bench/durfloor.c: the files decree's store holds
# afterwards, each written as DESIGN.md has every store write made, with
# nothing computed) under the first checkpoint, the bare lstat walk
# (bench/lstatwalk.c, one thread, reading every directory) under each
# no-change checkpoint, and the stat floor (bench/statfloor.c: only the
# opens and fstatats a walk that trusts its listings makes, on as many
# threads as decree walks with: two per CPU), under the no-change checkpoints and, with the reading of the
# changed files, under the pipeline's create + diff.
#
# The reference is what agent tools do for checkpoints: a shadow git
# repository whose GIT_DIR lives outside the tree (default settings,
# gc.auto=0 so no gc runs during the measurements), a checkpoint being
# `git add -A && git commit -q --allow-empty -m x`.  decree gets a store
# outside the tree as well (--store DIR -C TREE), so both see the same files.
#
# --quick     skip the Linux tree (and the pipeline group's Linux part)
# --only NAME a tree (tiny small gen10k linux), a case (first nochange
#             change restore list) or a group (diff apply pipeline hooks
#             bindings, workspace); may be
#             repeated
# --reps N    repetitions per operation (default: 15 for the small trees, 5
#             for the large ones, 3 for a Linux first checkpoint; diff: 15
#             for 1 MiB, 7 for 30 MiB; apply: 11; pipeline: 7 generated,
#             5 Linux)
# --strict    exit 1 when a target is missed (default: report only)
# --keep      keep the work directories under build/bench/work/
#
# Everything is written under build/bench/: helper binaries, the cached
# trees (linux-6.1/, cache/), work/ (copies, stores, shadow repositories,
# log), report.txt (the tables) and results.tsv (machine readable).

set -u

usage() {
	echo "usage: bench/run.sh path/to/decree [--quick] [--only NAME]..." \
		"[--reps N] [--strict] [--keep]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
case $1 in -*) usage ;; esac
DECREE=$1
shift
QUICK=0 ONLY="" REPS="" STRICT=0 KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--only)
		[ $# -ge 2 ] || usage
		ONLY="$ONLY $2"
		shift
		;;
	--only=*) ONLY="$ONLY ${1#--only=}" ;;
	--reps)
		[ $# -ge 2 ] || usage
		REPS=$2
		shift
		;;
	--strict) STRICT=1 ;;
	--keep) KEEP=1 ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done
case $REPS in '' | *[!0-9]*) [ -z "$REPS" ] || usage ;; esac
[ -z "$REPS" ] || [ "$REPS" -ge 1 ] || usage
for n in $ONLY; do
	case $n in
	tiny | small | gen10k | linux | first | nochange | change | restore | list) ;;
	diff | apply | pipeline | hooks | bindings | workspace) ;;
	*)
		echo "run.sh: unknown --only '$n'" >&2
		usage
		;;
	esac
done

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BB=$ROOT/build/bench
case $DECREE in /*) ;; *) DECREE=$PWD/$DECREE ;; esac
if [ ! -x "$DECREE" ] || [ -d "$DECREE" ]; then
	echo "run.sh: '$DECREE' is not an executable (build it with make)" >&2
	exit 1
fi
for t in git python3 cc awk du sync; do
	command -v $t >/dev/null 2>&1 || {
		echo "run.sh: '$t' is required" >&2
		exit 1
	}
done

mkdir -p "$BB/work" "$BB/cache" || exit 1
LOG=$BB/work/bench.log
REPORT=$BB/report.txt
TSV=$BB/results.tsv
SUMMARY=$BB/work/summary.tmp
GEN="python3 $HERE/gen-tree.py"
: >"$LOG"
: >"$REPORT"
: >"$SUMMARY"
printf 'tree\toperation\tunit\tdecree_median\tgit_median\tratio\ttarget\tverdict\tdecree_min\tdecree_max\tgit_min\tgit_max\treps\n' >"$TSV"
T_START=$(date +%s)

# ---------------------------------------------------------------- helpers

say() { printf '%s\n' "$*" >&2; }     # progress (stderr)
out() { printf '%s\n' "$*" | tee -a "$REPORT"; }  # report (stdout + file)
die() {
	say "run.sh: $*"
	exit 1
}

for p in lstatwalk timecmd statfloor durfloor; do
	cc -O2 -std=c11 -Wall -Wextra -pthread -o "$BB/$p" "$HERE/$p.c" ||
		die "cannot build $HERE/$p.c"
done
# the restore's "without disk waits" row: an LD_PRELOAD library (nosync.c)
cc -O2 -std=c11 -Wall -Wextra -shared -fPIC -o "$BB/nosync.so" \
	"$HERE/nosync.c" || die "cannot build $HERE/nosync.c"
NOSYNC=$BB/nosync.so
WALK=$BB/lstatwalk
TIMECMD=$BB/timecmd
FLOOR=$BB/statfloor
DURFLOOR=$BB/durfloor
# decree's default: one walking thread per online CPU (the floor gets as
# many)
NCPU=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
# decree's default walk: two threads per CPU (scan_default_threads); the
# stat floor gets as many
NWALK=$((NCPU * 2))
[ "$NWALK" -le 64 ] || NWALK=64

# git as agent tools use it: default settings (no system config, a global
# config holding only an identity), gc.auto=0 set in each shadow repository
GITCFG=$BB/work/gitconfig
printf '[user]\n\tname = decree-bench\n\temail = bench@decree.invalid\n' >"$GITCFG"
GIT_CONFIG_NOSYSTEM=1
GIT_CONFIG_GLOBAL=$GITCFG
LC_ALL=C
export GIT_CONFIG_NOSYSTEM GIT_CONFIG_GLOBAL LC_ALL
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
	GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CEILING_DIRECTORIES DECREE_STORE \
	2>/dev/null
# `git diff --no-index` (the diff group) runs outside any repository: stop
# git's repository discovery below build/bench/, which lies inside the
# project's own checkout (every other git command gets --git-dir)
GIT_CEILING_DIRECTORIES=$BB
export GIT_CEILING_DIRECTORIES

selected_tree() {
	st_any=0 st_case=0 st_grp=0
	for n in $ONLY; do
		case $n in
		tiny | small | gen10k | linux)
			st_any=1
			[ "$n" = "$1" ] && return 0
			;;
		diff | apply | pipeline | hooks | bindings | workspace) st_grp=1 ;;
		*) st_case=1 ;;
		esac
	done
	# no tree named: all trees, unless only groups were named
	[ $st_any = 0 ] && { [ $st_case = 1 ] || [ $st_grp = 0 ]; }
}
# selected_group diff|apply|pipeline|hooks|bindings|workspace: with no --only, or
# when named
selected_group() {
	[ -z "$ONLY" ] && return 0
	for n in $ONLY; do
		[ "$n" = "$1" ] && return 0
	done
	return 1
}
selected_case() {
	sc_any=0
	for n in $ONLY; do
		case $n in
		first | nochange | change | restore | list)
			sc_any=1
			[ "$n" = "$1" ] && return 0
			;;
		esac
	done
	[ $sc_any = 0 ]
}

# tm RESULTFILE CMD... [--- CMD...]: time a whole-process command chain;
# appends "ns maxrss_kib status" to RESULTFILE
tm() {
	tm_res=$1
	shift
	"$TIMECMD" "$tm_res" "$@" >/dev/null 2>>"$LOG"
	tm_rc=$?
	if [ $tm_rc != 0 ]; then
		say "  FAILED (exit $tm_rc): $*  (see $LOG)"
		echo "FAILED (exit $tm_rc): $*" >>"$LOG"
	fi
	return $tm_rc
}

# restore_rep RESULT PRELOAD WHAT CMD...: in the restore case, the change
# of repetition i ($RM changed + $RC created, seed 500 + i, journal $J)
# made again and synced, CMD timed into RESULT (with LD_PRELOAD=PRELOAD
# unless empty: CMD only, not the sync before it), then the tree checked
# to be WHAT says
restore_rep() {
	rr_res=$1 rr_pre=$2 rr_what=$3
	shift 3
	$GEN --out "$T" --seed $((500 + i)) --mutate "$RM" \
		--create "$RC" --journal "$J" >>"$LOG" 2>&1 ||
		die "gen-tree --mutate failed"
	sync
	if [ -n "$rr_pre" ]; then
		LD_PRELOAD=$rr_pre tm "$rr_res" "$@"
	else
		tm "$rr_res" "$@"
	fi
	$GEN --out "$T" --verify "$J" >>"$LOG" 2>&1 ||
		problem "$NAME" "tree differs from $rr_what (rep $i, see $LOG)"
}

# tmo OUTFILE OKSTATUS RESULTFILE CMD...: like tm, but stdout goes to
# OUTFILE (opened by this shell before the clock starts) and exit status
# OKSTATUS counts as success too (0: none; git diff --no-index exits 1)
tmo() {
	tmo_out=$1 tmo_ok=$2
	shift 2
	if [ "$tmo_ok" != 0 ]; then
		"$TIMECMD" --ok "$tmo_ok" "$@" >"$tmo_out" 2>>"$LOG"
	else
		"$TIMECMD" "$@" >"$tmo_out" 2>>"$LOG"
	fi
	tm_rc=$?
	if [ $tm_rc != 0 ]; then
		say "  FAILED (exit $tm_rc): $*  (see $LOG)"
		echo "FAILED (exit $tm_rc): $*" >>"$LOG"
	fi
	return $tm_rc
}

# git on the shadow repository $GD with the work tree $T
G() { git --git-dir="$GD" --work-tree="$T" "$@"; }
git_init() {
	rm -rf "$GD"
	G init -q && G config gc.auto 0
}
# a checkpoint in the shadow repository, untimed
git_ckpt() { G add -A && G commit -q --allow-empty -m x; }
decree() { "$DECREE" --store "$S" -C "$T" "$@"; }

# stats FILE -> "median min max n" (ms) or "ERR"/"NA"
stats() {
	[ -s "$1" ] || {
		echo NA
		return
	}
	if ! awk '$3 != 0 { exit 1 }' "$1"; then
		echo ERR
		return
	fi
	sort -n -k1,1 "$1" | awk '{ a[NR] = $1 }
	END {
		m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		printf "%.4f %.4f %.4f %d\n", m / 1e6, a[1] / 1e6, a[NR] / 1e6, NR
	}'
}
# maxrss FILE -> largest max RSS in KiB
maxrss() { awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$1"; }

# target TREE CASE -> "KIND VALUE": ratio (decree/reference <= VALUE),
# abs (decree median <= VALUE, in the row's unit), lt (decree < VALUE),
# both (VALUE is ABS:RATIO: decree <= ABS and ratio <= RATIO), none
target() {
	case "$1:$2" in
	linux:first) echo "ratio 0.2" ;;
	linux:nochange) echo "ratio 0.5" ;;
	linux:walk) echo "ratio 1.2" ;;
	linux:change10) echo "ratio 0.5" ;;
	linux:change1000) echo "ratio 0.3" ;;
	linux:restore) echo "ratio 0.6" ;;
	linux:size) echo "ratio 0.6" ;;
	linux:rss) echo "lt 200" ;;
	small:first) echo "abs 5" ;;
	diff:rewrite | diff:rewritepure) echo "both 200:1.5" ;;
	diff:edit30 | diff:edit30pure) echo "ratio 1.5" ;;
	apply:apply) echo "ratio 2.0" ;;
	pipeline:linuxrun) echo "ratio 1.5" ;;
	pipeline:linuxover) echo "ratio 2.5" ;;
	pipeline:genover) echo "abs 172" ;;
	pipeline:gensum) echo "ratio 0.15" ;;
	hooks:filetool) echo "abs 5" ;;
	ws-xfs-*:create) echo "ratio 0.25" ;;
	ws-xfs-*:createcp) echo "ratio 0.1" ;;
	ws-ext4-*:createcp) echo "ratio 1.0" ;;
	ws-*:apply10) echo "ratio 0.5" ;;
	hooks:shellpost) echo "both 300:0.5" ;;
	small:nochange) echo "abs 2" ;;
	tiny:list | small:list | tiny:listjson | small:listjson) echo "abs 3" ;;
	*) echo "none 0" ;;
	esac
}

TABLE_FMT='%-40s %13s %13s %8s %12s %5s\n'
# table_head TITLE [REFERENCE-COLUMN-NAME]
table_head() {
	out ""
	out "== $1"
	# shellcheck disable=SC2059
	out "$(printf "$TABLE_FMT" operation "decree median" \
		"${2:-git median}" ratio target "ok?")"
	# shellcheck disable=SC2059
	out "$(printf "$TABLE_FMT" "----------------------------------------" \
		"-------------" "-------------" "--------" "------------" "-----")"
}

# row TREE CASE LABEL UNIT DSTATS GSTATS
#   UNIT ms: DSTATS/GSTATS are "median min max n" from stats(), or ERR/NA
#   UNIT MiB: DSTATS/GSTATS are a single number (MiB)
row() {
	r_tgt=${ROW_TARGET:-$(target "$1" "$2")}
	r_line=$(awk -v label="$3" -v unit="$4" -v d="$5" -v g="$6" \
		-v kind="${r_tgt% *}" -v tv="${r_tgt#* }" -v fmt="$TABLE_FMT" \
		-v tree="$1" -v tsv="$TSV" -v sum="$SUMMARY" -v case_="$2" '
	function show(v) {
		if (v == "ERR" || v == "NA") return v
		if (unit == "MiB" && v < 1) return sprintf("%.0f KiB", v * 1024)
		if (unit == "MiB") return sprintf("%.1f MiB", v)
		if (v >= 1000) return sprintf("%.2f s", v / 1000)
		if (v >= 100) return sprintf("%.0f ms", v)
		if (v >= 10) return sprintf("%.1f ms", v)
		return sprintf("%.2f ms", v)
	}
	BEGIN {
		nd = split(d, D, " "); ng = split(g, Gs, " ")
		dm = D[1]; gm = Gs[1]
		num = (dm != "ERR" && dm != "NA" && gm != "ERR" && gm != "NA")
		ratio = (num && gm > 0) ? sprintf("%.2f", dm / gm) : "-"
		if (kind == "both") {
			split(tv, TV, ":"); tabs = TV[1]; trat = TV[2]
			tgt = tabs unit " & " trat "x"
		}
		else if (kind == "ratio") tgt = "<= " tv "x"
		else if (kind == "abs") tgt = "<= " tv " " unit
		else if (kind == "lt") tgt = "< " tv " " unit
		else tgt = "-"
		if (dm == "ERR" || gm == "ERR") ok = "ERR"
		else if (dm == "NA" || gm == "NA") ok = (kind == "none") ? "-" : "n/a"
		else if (kind == "both")
			ok = (dm <= tabs + 0 && dm / gm <= trat + 0) ? "ok" : "MISS"
		else if (kind == "ratio") ok = (dm / gm <= tv + 0) ? "ok" : "MISS"
		else if (kind == "abs") ok = (dm <= tv + 0) ? "ok" : "MISS"
		else if (kind == "lt") ok = (dm < tv + 0) ? "ok" : "MISS"
		else ok = "-"
		printf fmt, label, show(dm), show(gm), ratio, tgt, ok
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			tree, label, unit, dm, gm, ratio, tgt, ok,
			(nd > 1 ? D[2] : dm), (nd > 1 ? D[3] : dm),
			(ng > 1 ? Gs[2] : gm), (ng > 1 ? Gs[3] : gm),
			(nd > 3 ? D[4] : 1) >> tsv
		if (ok != "-")
			printf "%s\t%s\t%s\t%s\t%s\t%s\n", ok, tree, label,
				show(dm), show(gm), tgt >> sum
	}')
	out "$r_line"
}

# a harness-level problem (verification, file set mismatch...)
problem() {
	out "   !! $1: $2"
	printf 'ERR\t%s\t%s\t-\t-\t-\n' "$1" "$2" >>"$SUMMARY"
}

# ---------------------------------------------------------------- trees

# gen_tree NAME SEED FILES BYTES -> prints the cached tree directory
gen_tree() {
	gt_dir=$BB/cache/gen-$2-$3-$4
	if [ ! -f "$gt_dir.ready" ] || [ ! -d "$gt_dir" ]; then
		rm -rf "$gt_dir" "$gt_dir.tmp" "$gt_dir.ready"
		say "[$1] generating $3 files / $4 bytes (seed $2)"
		$GEN --seed "$2" --files "$3" --bytes "$4" --out "$gt_dir.tmp" \
			>>"$LOG" || die "gen-tree failed"
		mv "$gt_dir.tmp" "$gt_dir" && : >"$gt_dir.ready"
	fi
	echo "$gt_dir"
}

apt_busy() {
	pgrep -x apt-get >/dev/null 2>&1 || pgrep -x apt >/dev/null 2>&1 ||
		pgrep -x dpkg >/dev/null 2>&1
}

# Unpack the Linux 6.1 source once into build/bench/linux-6.1 and make both
# tools see the same files.  Returns 1 (with a message) when unavailable.
LINUX_TAR=/usr/src/linux-source-6.1.tar.xz
LINUX=$BB/linux-6.1
prepare_linux() {
	if [ -f "$LINUX.ready" ] && [ -d "$LINUX" ]; then
		return 0
	fi
	if [ ! -f "$LINUX_TAR" ]; then
		pl_waited=0
		while apt_busy && [ $pl_waited -lt 1200 ]; do
			[ $pl_waited = 0 ] &&
				say "[linux] another apt/dpkg is running; waiting for it"
			sleep 10
			pl_waited=$((pl_waited + 10))
		done
	fi
	if [ ! -f "$LINUX_TAR" ]; then
		pl_sudo=""
		[ "$(id -u)" = 0 ] || pl_sudo="sudo -n"
		say "[linux] installing linux-source-6.1 (apt-get, log in $LOG)"
		DEBIAN_FRONTEND=noninteractive $pl_sudo apt-get install -y \
			linux-source-6.1 >>"$LOG" 2>&1 ||
			{
				$pl_sudo apt-get update -qq >>"$LOG" 2>&1 &&
					DEBIAN_FRONTEND=noninteractive $pl_sudo \
						apt-get install -y linux-source-6.1 \
						>>"$LOG" 2>&1
			}
	fi
	if [ ! -f "$LINUX_TAR" ]; then
		out ""
		out "== linux: SKIPPED - $LINUX_TAR is missing and" \
			"'apt-get install linux-source-6.1' failed (see $LOG)"
		printf 'ERR\tlinux\tLinux source unavailable, cases skipped\t-\t-\t-\n' \
			>>"$SUMMARY"
		return 1
	fi
	say "[linux] unpacking $LINUX_TAR into $LINUX (once)"
	rm -rf "$LINUX" "$LINUX.tmp" "$LINUX.ready"
	mkdir -p "$LINUX.tmp" &&
		tar -xJf "$LINUX_TAR" -C "$LINUX.tmp" --strip-components=1 ||
		die "cannot unpack $LINUX_TAR"
	# The Debian tarball's top-level .gitignore ends with "/*" and
	# "!/debian/" (Debian packaging ignores everything at the top level):
	# with it git would track almost nothing.  The other 300-odd .gitignore
	# files are the kernel's own build-output rules, which match a few
	# shipped files too.  The fair, simple choice: delete every .gitignore,
	# so that both tools see every file of the tarball.  Names in decree's
	# built-in exclude list would still differ; the 6.1 tarball has none,
	# but check and drop them as well.
	pl_n=$(find "$LINUX.tmp" -name .gitignore -type f | wc -l)
	find "$LINUX.tmp" -name .gitignore -type f -exec rm -f {} + ||
		die "cannot remove .gitignore files"
	pl_x=$(find "$LINUX.tmp" \( -name node_modules -o -name __pycache__ \
		-o -name .venv -o -name venv -o -name .cache -o -name '*.pyc' \
		-o -name .DS_Store -o -name .decree -o -name .decreeignore \
		-o -name .git \) -print | wc -l)
	find "$LINUX.tmp" \( -name node_modules -o -name __pycache__ \
		-o -name .venv -o -name venv -o -name .cache -o -name '*.pyc' \
		-o -name .DS_Store -o -name .decree -o -name .decreeignore \
		-o -name .git \) -prune -exec rm -rf {} + 2>/dev/null
	printf 'removed %s .gitignore files and %s default-excluded entries\n' \
		"$pl_n" "$pl_x" >"$LINUX.ready.tmp"
	mv "$LINUX.tmp" "$LINUX" && mv "$LINUX.ready.tmp" "$LINUX.ready" ||
		die "cannot finish $LINUX"
	say "[linux] $(cat "$LINUX.ready")"
}

# ---------------------------------------------------------------- one tree

# bench_tree NAME SRC_DIR REPS_FIRST REPS CHANGE_A CHANGE_B RESTORE_MOD
#            RESTORE_NEW LIST
bench_tree() {
	NAME=$1 SRC=$2 RF=$3 R=$4 CA=$5 CB=$6 RM=$7 RC=$8 LIST=$9
	if [ -n "$REPS" ]; then
		RF=$REPS R=$REPS
	fi
	W=$BB/work/$NAME
	T=$W/tree S=$W/store GD=$W/git RD=$W/res
	rm -rf "$W"
	mkdir -p "$RD" || die "cannot create $W"
	# a source tree someone ran decree in (a project's .decree) would
	# skew both tools' file sets: refuse it rather than measure it
	[ ! -e "$SRC/.decree" ] ||
		die "$SRC/.decree exists: the source tree was used as a project; remove it (and what that run wrote) or delete $SRC to unpack it again"
	say "[$NAME] copying the tree into $T"
	cp -a "$SRC" "$T" || die "cannot copy $SRC"
	# untimed warm-up: read every file once, so the page cache is warm
	# for both tools; then flush so no writeback runs during a timing
	"$WALK" --read "$T" >"$RD/tree.info" 2>>"$LOG" ||
		die "lstatwalk --read failed on $T"
	sync
	cd "$T" || die "cannot cd to $T"
	NFILES=$(awk '{ print $2 }' "$RD/tree.info")
	table_head "$NAME: $(awk '{ printf "%d files + %d symlinks in %d directories, %s", $2, $4, $6 - 1, ($8 < 1048576) ? sprintf("%.0f KiB", $8 / 1024) : sprintf("%.1f MiB", $8 / 1048576) }' "$RD/tree.info"), reps $R (first: $RF)"

	# --- first checkpoint: fresh store / GIT_DIR every repetition -----
	if selected_case first; then
		i=1
		while [ $i -le "$RF" ]; do
			say "[$NAME] first checkpoint $i/$RF"
			rm -rf "$S"
			sync
			tm "$RD/first.d" "$DECREE" --store "$S" -C "$T" \
				checkpoint create
			git_init >>"$LOG" 2>&1 || die "git init failed"
			sync
			tm "$RD/first.g" git --git-dir="$GD" --work-tree="$T" \
				add -A --- git --git-dir="$GD" --work-tree="$T" \
				commit -q --allow-empty -m x
			i=$((i + 1))
		done
		row "$NAME" first "first checkpoint" ms \
			"$(stats "$RD/first.d")" "$(stats "$RD/first.g")"
		sync
		# its floor: the durable writes of the files decree's store
		# now holds (those it writes without fsync, the caches, the
		# lock and the seal list, left out), durfloor.c
		if [ -d "$S" ]; then
			rm -rf "$W/durfloor"
			mkdir -p "$W/durfloor"
			# shellcheck disable=SC2046 # the sizes, one per word
			"$DURFLOOR" --reps "$RF" "$W/durfloor" "$RD/first.f" \
				$(find "$S" -type f ! -name lock \
					! -name 'statcache*' ! -name sealed \
					! -name checkpoints.cache -printf '%s\n') \
				2>>"$LOG" || echo "0 0 1" >>"$RD/first.f"
			row "$NAME" durfloor "  same, ref = its durable writes" \
				ms "$(stats "$RD/first.d")" "$(stats "$RD/first.f")"
		fi
		if [ -d "$S" ] && [ -d "$GD/objects" ]; then
			row "$NAME" size "store size after first (du)" MiB \
				"$(du -sk "$S" | awk '{ print $1 / 1024 }')" \
				"$(du -sk "$GD/objects" | awk '{ print $1 / 1024 }')"
		fi
		row "$NAME" rss "peak RSS, first checkpoint" MiB \
			"$(maxrss "$RD/first.d" | awk '{ print $1 / 1024 }')" \
			"$(maxrss "$RD/first.g" | awk '{ print $1 / 1024 }')"
	else
		rm -rf "$S"
		decree checkpoint create >/dev/null 2>>"$LOG"
		git_init >>"$LOG" 2>&1 && git_ckpt >>"$LOG" 2>&1 ||
			die "git checkpoint failed"
	fi

	# both tools must see exactly the same files
	if [ -e "$T/.decree" ]; then
		problem "$NAME" "decree created $T/.decree although --store is outside the tree"
	fi
	FC_GIT=$(G ls-files | wc -l)
	FC_DEC=$(decree --json checkpoint list 2>>"$LOG" | python3 -c '
import json, sys
try:
    c = json.load(sys.stdin)["checkpoints"]
    print(c[-1]["file_count"])
except Exception:
    print("?")')
	if [ "$FC_GIT" = "$FC_DEC" ]; then
		out "   file set: git ls-files $FC_GIT = decree file_count $FC_DEC"
	else
		problem "$NAME" "file sets differ: git ls-files $FC_GIT, decree file_count $FC_DEC"
	fi

	# --- checkpoint with no changes (+ the bare lstat walk) ------------
	if selected_case nochange; then
		i=1
		while [ $i -le "$R" ]; do
			say "[$NAME] no-change checkpoint $i/$R"
			sync
			tm "$RD/nc.d" "$DECREE" --store "$S" -C "$T" \
				checkpoint create
			sync
			tm "$RD/nc.g" git --git-dir="$GD" --work-tree="$T" \
				add -A --- git --git-dir="$GD" --work-tree="$T" \
				commit -q --allow-empty -m x
			sync
			tm "$RD/nc.w" "$WALK" "$T"
			"$FLOOR" --threads "$NWALK" "$T" "$RD/nc.f" 2>>"$LOG" ||
				echo "0 0 1" >>"$RD/nc.f"
			i=$((i + 1))
		done
		row "$NAME" nochange "checkpoint, no changes" ms \
			"$(stats "$RD/nc.d")" "$(stats "$RD/nc.g")"
		row "$NAME" walk "  same, ref = bare lstat walk" ms \
			"$(stats "$RD/nc.d")" "$(stats "$RD/nc.w")"
		row "$NAME" floor "  same, ref = stat floor, $NWALK threads" ms \
			"$(stats "$RD/nc.d")" "$(stats "$RD/nc.f")"
	fi

	# --- checkpoint after K files changed -------------------------------
	if selected_case change; then
		for K in $CA $CB; do
			[ "$K" -gt 0 ] || continue
			if [ "$K" -gt "$NFILES" ]; then
				continue
			fi
			i=1
			while [ $i -le "$R" ]; do
				say "[$NAME] checkpoint after $K changed $i/$R"
				$GEN --out "$T" --seed $((K * 100 + i)) --mutate "$K" \
					>>"$LOG" 2>&1 || die "gen-tree --mutate failed"
				sync
				tm "$RD/ch$K.d" "$DECREE" --store "$S" -C "$T" \
					checkpoint create
				sync
				tm "$RD/ch$K.g" git --git-dir="$GD" \
					--work-tree="$T" add -A --- git \
					--git-dir="$GD" --work-tree="$T" commit -q \
					--allow-empty -m x
				i=$((i + 1))
			done
			case $K in
			10 | 1000) tk=change$K ;;
			*) tk=change ;;
			esac
			row "$NAME" "$tk" "checkpoint after $K files changed" ms \
				"$(stats "$RD/ch$K.d")" "$(stats "$RD/ch$K.g")"
		done
	fi

	# --- restore: K changed + C created files back to a checkpoint ------
	if selected_case restore && [ "$RM" -le "$NFILES" ]; then
		BASE=$(decree checkpoint create 2>>"$LOG")
		git_ckpt >>"$LOG" 2>&1 || die "git checkpoint failed"
		if ! printf '%s\n' "$BASE" | grep -Eq '^[0-9a-f]{64}$'; then
			problem "$NAME" "checkpoint create printed '$BASE', not a 64-hex id; restore skipped"
		else
			i=1
			while [ $i -le "$R" ]; do
				say "[$NAME] restore $RM changed + $RC created $i/$R"
				J=$RD/journal.json
				restore_rep "$RD/rs.d" "" \
					"the checkpoint after decree restore" \
					"$DECREE" --store "$S" -C "$T" \
					checkpoint restore "$BASE"
				restore_rep "$RD/rs.g" "" "HEAD after git reset" \
					git --git-dir="$GD" --work-tree="$T" \
					clean -fdq --- git --git-dir="$GD" \
					--work-tree="$T" reset -q --hard
				# and once more for decree with its fsyncs
				# made free (nosync.c): what they cost
				restore_rep "$RD/rs.n" "$NOSYNC" \
					"the checkpoint after decree restore without fsync" \
					"$DECREE" --store "$S" -C "$T" \
					checkpoint restore "$BASE"
				i=$((i + 1))
			done
			row "$NAME" restore "restore $RM changed + $RC created" ms \
				"$(stats "$RD/rs.d")" "$(stats "$RD/rs.g")"
			row "$NAME" restore-nosync \
				"  same, decree without disk waits" ms \
				"$(stats "$RD/rs.n")" "$(stats "$RD/rs.g")"
		fi
	fi

	# --- list 100 checkpoints (fresh store and shadow repository) -------
	if selected_case list && [ "$LIST" = 1 ]; then
		say "[$NAME] making 100 checkpoints for list"
		S=$W/store-list GD=$W/git-list
		rm -rf "$S"
		git_init >>"$LOG" 2>&1 || die "git init failed"
		find "$T" -type f | sort >"$RD/files"
		i=1
		while [ $i -le 100 ]; do
			f=$(sed -n "$(((i - 1) % NFILES + 1))p" "$RD/files")
			printf '/* edit %d */\n' $i >>"$f"
			decree checkpoint create >/dev/null 2>>"$LOG" ||
				die "decree checkpoint create failed (see $LOG)"
			git_ckpt >>"$LOG" 2>&1 || die "git checkpoint failed"
			i=$((i + 1))
		done
		NL=$(decree --json checkpoint list 2>>"$LOG" | python3 -c '
import json, sys
try:
    print(len(json.load(sys.stdin)["checkpoints"]))
except Exception:
    print("?")')
		[ "$NL" = 100 ] ||
			problem "$NAME" "decree lists $NL checkpoints, expected 100"
		sync
		i=1
		while [ $i -le "$R" ]; do
			tm "$RD/ls.d" "$DECREE" --store "$S" -C "$T" \
				checkpoint list
			tm "$RD/ls.g" git --git-dir="$GD" --work-tree="$T" \
				log -n 100
			tm "$RD/lsj.d" "$DECREE" --store "$S" -C "$T" \
				--json checkpoint list
			i=$((i + 1))
		done
		row "$NAME" list "list 100 checkpoints (git log -n 100)" ms \
			"$(stats "$RD/ls.d")" "$(stats "$RD/ls.g")"
		row "$NAME" listjson "  same, decree --json" ms \
			"$(stats "$RD/lsj.d")" "$(stats "$RD/ls.g")"
	fi

	cd "$BB" || exit 1
	[ "$KEEP" = 1 ] || rm -rf "$W"
}

# ---------------------------------------------------------------- diff, apply

GENDIFF="python3 $HERE/gen-diff.py"

# gen_pair NAME GEN-DIFF-ARGS... -> prints a cached directory holding the
# files old and new (bench/gen-diff.py, deterministic)
gen_pair() {
	gp_dir=$BB/cache/diff-$1
	shift
	if [ ! -f "$gp_dir.ready" ] || [ ! -d "$gp_dir" ]; then
		rm -rf "$gp_dir" "$gp_dir.tmp" "$gp_dir.ready"
		say "[diff] generating $gp_dir"
		mkdir -p "$gp_dir.tmp" &&
			$GENDIFF "$@" "$gp_dir.tmp/old" "$gp_dir.tmp/new" \
				>>"$LOG" &&
			mv "$gp_dir.tmp" "$gp_dir" && : >"$gp_dir.ready" ||
			return 1
	fi
	echo "$gp_dir"
}

# hunks_lines FILE -> "HUNKS LINES": @@ headers and +/- lines of a diff
hunks_lines() {
	awk '/^@@ / { h++; next } /^(\+\+\+|---) / { next }
	/^[-+]/ { n++ } END { printf "%d %d\n", h, n }' "$1"
}

# diff_case CASE LABEL REPS CACHED_PAIR_DIR
#   rows CASE: `decree checkpoint diff REF` (REF = the old version, the new
#   one written over it in the working tree: scan + old blob from the store
#   + diff) and CASEpure: `decree checkpoint diff REF1 REF2` (both versions
#   checkpointed, in a second tree and store), both against
#   `git diff --no-index old new`, in one alternating loop
diff_case() {
	DC=$1 DL=$2 DR=$3 DD=$4
	[ -n "$REPS" ] && DR=$REPS
	W=$BB/work/diff/$DC
	RD=$W/res
	rm -rf "$W"
	mkdir -p "$RD" "$W/tree" "$W/tree2" || die "cannot create $W"
	cp "$DD/old" "$W/old" && cp "$DD/new" "$W/new" &&
		cp "$DD/old" "$W/tree/f.txt" && cp "$DD/old" "$W/tree2/f.txt" ||
		die "cannot copy $DD"
	# untimed: checkpoint the old version, write the new one over it in
	# place (as an editor does); tree2 gets a checkpoint of each version
	REF=$("$DECREE" --store "$W/store" -C "$W/tree" checkpoint create \
		2>>"$LOG")
	REFA=$("$DECREE" --store "$W/store2" -C "$W/tree2" checkpoint create \
		2>>"$LOG")
	cat "$W/new" >"$W/tree/f.txt" && cat "$W/new" >"$W/tree2/f.txt" ||
		die "cannot write $W/tree/f.txt"
	REFB=$("$DECREE" --store "$W/store2" -C "$W/tree2" checkpoint create \
		2>>"$LOG")
	for r in "$REF" "$REFA" "$REFB"; do
		if ! printf '%s\n' "$r" | grep -Eq '^[0-9a-f]{64}$'; then
			problem diff "checkpoint create printed '$r', not a 64-hex id; $DC skipped"
			return
		fi
	done
	# warm page cache for both, nothing left to write back
	cat "$W/old" "$W/new" "$W/tree/f.txt" >/dev/null
	sync
	cd "$W" || die "cannot cd to $W"
	i=1
	while [ $i -le "$DR" ]; do
		say "[diff] $DL $i/$DR"
		sync
		tmo "$RD/out.wt" 0 "$RD/wt.d" "$DECREE" --store "$W/store" \
			-C "$W/tree" checkpoint diff "$REF"
		sync
		tmo "$RD/out.g" 1 "$RD/g" git diff --no-index old new
		sync
		tmo "$RD/out.pure" 0 "$RD/pure.d" "$DECREE" \
			--store "$W/store2" -C "$W/tree2" checkpoint diff \
			"$REFA" "$REFB"
		i=$((i + 1))
	done
	# each tool's output (of the last repetition) must turn old into new
	row diff "$DC" "$DL, ckpt vs tree" ms \
		"$(stats "$RD/wt.d")" "$(stats "$RD/g")"
	row diff "${DC}pure" "  same, ckpt vs ckpt (pure diff)" ms \
		"$(stats "$RD/pure.d")" "$(stats "$RD/g")"
	row diff "${DC}rss" "  peak RSS, ckpt vs tree" MiB \
		"$(maxrss "$RD/wt.d" | awk '{ print $1 / 1024 }')" \
		"$(maxrss "$RD/g" | awk '{ print $1 / 1024 }')"
	dc_keep=$KEEP
	for o in wt pure g; do
		case $o in
		wt) dc_n="decree, ckpt vs tree" ;;
		pure) dc_n="decree, ckpt vs ckpt" ;;
		*) dc_n="git diff --no-index" ;;
		esac
		rm -f "$RD/check"
		if patch -s -o "$RD/check" "$W/old" <"$RD/out.$o" \
			>>"$LOG" 2>&1 && cmp -s "$RD/check" "$W/new"; then
			dc_v="old -> new"
		else
			dc_v="DOES NOT GIVE new"
			problem diff "$DL: patch(1) of the $dc_n output onto old does not give new (kept in $RD)"
			dc_keep=1
		fi
		out "   output of $dc_n: $(hunks_lines "$RD/out.$o" |
			awk '{ printf "%d hunks, %d +/- lines", $1, $2 }'), $(wc -c <"$RD/out.$o" |
			awk '{ printf "%.0f KiB", $1 / 1024 }'); patch -o: $dc_v"
	done
	cd "$BB" || exit 1
	[ "$dc_keep" = 1 ] || rm -rf "$W"
}

bench_diff() {
	d1=$(gen_pair rewrite-1-50000-1048576 rewrite --seed 1 --lines 50000 \
		--bytes 1048576) || die "gen-diff rewrite failed (see $LOG)"
	d2=$(gen_pair edit-1-31457280-2000 edit --seed 1 --bytes 31457280 \
		--edits 2000) || die "gen-diff edit failed (see $LOG)"
	table_head "diff: one file, decree checkpoint diff vs git diff --no-index old new"
	out "   1 MiB rewrite: $(wc -c <"$d1/old") -> $(wc -c <"$d1/new") bytes, 50000 lines each, no line in common"
	out "   30 MiB: $(wc -c <"$d2/old") bytes, $(wc -l <"$d2/old") lines, 2000 scattered lines replaced"
	diff_case rewrite "diff 1 MiB rewrite, 50k lines" 15 "$d1"
	diff_case edit30 "diff 30 MiB, 2000 lines edited" 7 "$d2"
	rmdir "$BB/work/diff" 2>/dev/null
}

# the apply group's data: a/ (1,000 text files of about 4 KiB), b/ (4 lines
# edited in each) and p.diff (diff -ruN a b)
gen_apply() {
	ga_dir=$BB/cache/apply-1-1000-4096000-4
	if [ ! -f "$ga_dir.ready" ] || [ ! -d "$ga_dir" ]; then
		rm -rf "$ga_dir" "$ga_dir.tmp" "$ga_dir.ready"
		say "[apply] generating $ga_dir"
		mkdir -p "$ga_dir.tmp" &&
			$GENDIFF tree --seed 1 --files 1000 --bytes 4096000 \
				--edits 4 "$ga_dir.tmp/a" "$ga_dir.tmp/b" \
				>>"$LOG" || return 1
		# fixed mtimes (gen-diff.py) + TZ: the same p.diff every time
		(cd "$ga_dir.tmp" && TZ=UTC0 diff -ruN a b >p.diff)
		[ $? = 1 ] || return 1
		mv "$ga_dir.tmp" "$ga_dir" && : >"$ga_dir.ready" || return 1
	fi
	echo "$ga_dir"
}

# apply of a 1,000-file patch: decree (store holding a checkpoint of the
# tree, made untimed) against GNU patch, each on a fresh copy of the tree
# every repetition; plus patch followed by syncfs (decree syncs, patch does
# not) and decree into a store that does not exist yet
bench_apply() {
	AR=11
	[ -n "$REPS" ] && AR=$REPS
	AD=$(gen_apply) || die "gen-diff tree failed (see $LOG)"
	W=$BB/work/apply
	RD=$W/res
	rm -rf "$W"
	mkdir -p "$RD" || die "cannot create $W"
	P=$W/p.diff
	cp "$AD/p.diff" "$P" || die "cannot copy $AD/p.diff"
	"$WALK" --read "$AD/a" >"$RD/tree.info" 2>>"$LOG" ||
		die "lstatwalk --read failed on $AD/a"
	"$WALK" --read "$AD/b" >/dev/null 2>>"$LOG"
	table_head "apply: decree apply vs GNU patch -p1 -s, $(awk '{ printf "%d files in %d directories, %.1f MiB", $2, $6 - 1, $8 / 1048576 }' "$RD/tree.info"), reps $AR" \
		"patch median"
	out "   patch: diff -ruN, $(grep -c '^diff ' "$P") files, $(hunks_lines "$P" | awk '{ printf "%d hunks, %d +/- lines", $1, $2 }'), $(wc -c <"$P" | awk '{ printf "%.0f KiB", $1 / 1024 }'); decree syncfs-es each phase, patch does not sync"
	cd "$W" || die "cannot cd to $W"
	# untimed, all before the first timing: four fresh copies per
	# repetition, and for decree's a store holding a checkpoint of it (as
	# in an agent session).  Nothing is deleted until the end: on ext4
	# without a journal, creating a file right after many deletions costs
	# much more (the inode allocator skips inodes freed in the last minute),
	# which would land on whichever tool runs next.
	i=1
	while [ $i -le "$AR" ]; do
		say "[apply] preparing copies $i/$AR"
		for c in td tp tn ts; do
			cp -a "$AD/a" "$W/$c.$i" || die "cannot copy $AD/a"
		done
		"$DECREE" --store "$W/sd.$i" -C "$W/td.$i" checkpoint create \
			>/dev/null 2>>"$LOG" || die "decree checkpoint create failed"
		i=$((i + 1))
	done
	ap_bad=0
	i=1
	while [ $i -le "$AR" ]; do
		say "[apply] $i/$AR"
		sync
		tm "$RD/ap.d" "$DECREE" -q --store "$W/sd.$i" -C "$W/td.$i" \
			apply "$P"
		sync
		tm "$RD/ap.p" patch -p1 -s -d "$W/tp.$i" -i "$P"
		sync
		tm "$RD/ap.n" "$DECREE" -q --store "$W/sn.$i" -C "$W/tn.$i" \
			apply "$P"
		sync
		tm "$RD/ap.s" patch -p1 -s -d "$W/ts.$i" -i "$P" --- \
			sync -f "$W/ts.$i"
		for c in td tp tn ts; do
			if ! diff -r -q "$AD/b" "$W/$c.$i" >>"$LOG" 2>&1; then
				problem apply "$W/$c.$i differs from the patched tree b/ (rep $i, see $LOG)"
				ap_bad=$((ap_bad + 1))
			fi
		done
		i=$((i + 1))
	done
	row apply apply "apply 1000-file patch" ms \
		"$(stats "$RD/ap.d")" "$(stats "$RD/ap.p")"
	row apply applysync "  same, ref = patch + sync -f" ms \
		"$(stats "$RD/ap.d")" "$(stats "$RD/ap.s")"
	row apply applynew "  same, decree into a new store" ms \
		"$(stats "$RD/ap.n")" "$(stats "$RD/ap.p")"
	row apply applyrss "  peak RSS" MiB \
		"$(maxrss "$RD/ap.d" | awk '{ print $1 / 1024 }')" \
		"$(maxrss "$RD/ap.p" | awk '{ print $1 / 1024 }')"
	[ $ap_bad = 0 ] &&
		out "   verified: every copy equals b/ after every repetition (diff -r)"
	cd "$BB" || exit 1
	[ "$KEEP" = 1 ] || [ $ap_bad != 0 ] || rm -rf "$W"
}

# ---------------------------------------------------------------- pipeline

# pair_op OP A B OUT: per repetition A OP B (OP + or -) of two result files
# written in the same loop (line i of each is repetition i), in tm's format:
# the larger max RSS, status 1 if either failed
pair_op() {
	paste -d ' ' "$2" "$3" | awk -v op="$1" '{
		v = (op == "+") ? $1 + $4 : $1 - $4
		printf "%.0f %d %d\n", v, ($2 > $5) ? $2 : $5, ($3 != 0 || $6 != 0)
	}' >"$4"
}

# const MS -> a stats() line for a fixed reference value
const() { echo "$1 $1 $1 1"; }

# pipeline_project DIR: `decree init` in DIR, the routines noop (exit 0) and
# change (rewrites the 7,000 files of $PACK in place: gen-tree.py --replay,
# run by the python3 executable itself, not through a wrapper such as a
# pyenv shim, which costs a few more processes; it appends its own start
# and end time to DIR.stamp, outside the tree), then one untimed
# `decree run` (stat cache and, in a new store, the blobs)
pipeline_project() {
	(cd "$1" && "$DECREE" -q init) >>"$LOG" 2>&1 ||
		die "decree init failed in $1 (see $LOG)"
	printf '#!/usr/bin/env bash\n# Do nothing.\nexit 0\n' \
		>"$1/.decree/routines/noop.sh"
	[ -z "$PACK" ] || cat >"$1/.decree/routines/change.sh" <<EOF
#!/usr/bin/env bash
# Rewrite 7000 files in place.
s=\$EPOCHREALTIME
$(python3 -c 'import sys; print(sys.executable)') $HERE/gen-tree.py --out . --replay $PACK || exit 1
echo "\$s \$EPOCHREALTIME" >>"\$PWD.stamp"
EOF
	pipeline_warm "$1"
}
# pipeline_warm DIR: the untimed first `decree run` in a project (or in a
# copy of one: the stat cache belongs to the root's path, and a copy's files
# have new inode numbers)
pipeline_warm() {
	(cd "$1" && "$DECREE" run -q -m warm -p x -v routine=noop \
		</dev/null) >>"$LOG" 2>&1 ||
		die "decree run failed in $1 (see $LOG)"
}
# last_run DIR -> the newest run directory of the project DIR
last_run() {
	find "$1/.decree/runs" -mindepth 1 -maxdepth 1 -type d | sort | tail -n 1
}
# warm_store DIR: read a project's store once (untimed page-cache warm-up)
warm_store() {
	find "$1/.decree/store" -type f -exec cat {} + >/dev/null 2>>"$LOG"
}

# Linux: `decree run` with a no-op routine in a copy of the Linux tree (the
# store in the tree, .decree/store, as `decree init` sets it up), alternating
# with the bare lstat walk of the same tree and with `bash noop.sh` alone
pipeline_linux() {
	PR=5
	[ -n "$REPS" ] && PR=$REPS
	T=$W/linux
	say "[pipeline] copying the Linux tree into $T"
	cp -a "$LINUX" "$T" || die "cannot copy $LINUX"
	PACK=""
	say "[pipeline] linux: decree init and a first decree run (untimed)"
	pipeline_project "$T"
	"$WALK" --read "$T" >"$RD/linux.info" 2>>"$LOG" ||
		die "lstatwalk --read failed on $T"
	warm_store "$T"
	sync
	cd "$T" || die "cannot cd to $T"
	table_head "pipeline, linux: decree run, no-op routine, $(awk '{ printf "%d files + %d symlinks, %.1f MiB", $2, $4, $8 / 1048576 }' "$RD/linux.info"), reps $PR" \
		"lstat walk"
	i=1
	while [ $i -le "$PR" ]; do
		say "[pipeline] linux: decree run $i/$PR"
		sync
		tm "$RD/lx.run" "$DECREE" run -q -m "bench-$i" -p x \
			-v routine=noop </dev/null
		sync
		tm "$RD/lx.walk" "$WALK" "$T"
		sync
		tm "$RD/lx.noop" bash .decree/routines/noop.sh </dev/null
		i=$((i + 1))
	done
	pair_op - "$RD/lx.run" "$RD/lx.noop" "$RD/lx.over"
	row pipeline linuxrun "decree run, no-op routine" ms \
		"$(stats "$RD/lx.run")" "$(stats "$RD/lx.walk")"
	row pipeline linuxover "  same minus bash noop.sh alone" ms \
		"$(stats "$RD/lx.over")" "$(stats "$RD/lx.walk")"
	row pipeline linuxrss "  peak RSS, decree run" MiB \
		"$(maxrss "$RD/lx.run" | awk '{ print $1 / 1024 }')" NA
	out "   bash noop.sh alone: $(stats "$RD/lx.noop" | awk '{ printf "%.2f ms", $1 }') median; store in the tree: $(du -sk .decree/store | awk '{ printf "%.0f MiB", $1 / 1024 }'), each run dir $(du -sk "$(last_run .)" | awk '{ printf "%.1f MiB", $1 / 1024 }')"
	pl_runs=$(find .decree/inbox/done -name '*.md' | wc -l)
	pl_done=$(cat .decree/runs/*/outcome.json | grep -c '"outcome":"done"')
	pl_diff=$(find .decree/runs -name changes.diff -size +0c | wc -l)
	FC_DEC=$("$DECREE" --json checkpoint list 2>>"$LOG" | python3 -c '
import json, sys
try:
    print(json.load(sys.stdin)["checkpoints"][-1]["file_count"])
except Exception:
    print("?")')
	FC_WALK=$(awk '{ print $2 + $4 }' "$RD/linux.info")
	if [ "$pl_runs" = $((PR + 1)) ] && [ "$pl_done" = "$pl_runs" ] &&
		[ "$pl_diff" = 0 ] && [ "$FC_DEC" = "$FC_WALK" ]; then
		out "   verified: $pl_runs runs done, every changes.diff empty; decree file_count $FC_DEC = lstat walk $FC_WALK"
	else
		PL_BAD=1
		problem pipeline "linux: $pl_runs messages done (expected $((PR + 1))), $pl_done outcome done, $pl_diff non-empty changes.diff, decree file_count $FC_DEC, lstat walk $FC_WALK"
	fi
	cd "$BB" || exit 1
}

# Generated tree: 20,000 files / 26 MiB; the routine rewrites 7,000 of them.
# Each repetition works on two fresh copies of one project: run.N gets the
# timed `decree run`, alone.N the pieces (`checkpoint create` on the
# unchanged tree, the routine alone, `checkpoint diff REF`).
pipeline_gen() {
	PR=7
	[ -n "$REPS" ] && PR=$REPS
	d=$(gen_tree pipeline 1 20000 27262976)
	P=$W/gen
	PACK=$W/change.pack
	say "[pipeline] gen20k: project, the change (7000 files) and its pack"
	cp -a "$d" "$P" || die "cannot copy $d"
	pipeline_project "$P"
	cp -a "$P" "$W/mutated" || die "cannot copy $P"
	$GEN --out "$W/mutated" --seed 7000 --mutate 7000 --pack "$PACK" \
		>>"$LOG" 2>&1 || die "gen-tree --mutate failed"
	# all copies first, nothing deleted until the end (see bench_apply)
	i=1
	while [ $i -le "$PR" ]; do
		say "[pipeline] gen20k: preparing copies $i/$PR"
		for c in run alone; do
			cp -a "$P" "$W/$c.$i" || die "cannot copy $P"
			pipeline_warm "$W/$c.$i"
		done
		i=$((i + 1))
	done
	# the same diff by git, measured here (the Rust times are not): a
	# copy of the tree committed to a shadow repository, then changed
	# as the routine changes it (untimed)
	say "[pipeline] gen20k: a shadow git repository of the tree, changed (untimed)"
	PGT=$W/gitref
	PGD=$W/gitref.git
	cp -a "$P" "$PGT" || die "cannot copy $P"
	{
		GIT_DIR=$PGD git init -q &&
			GIT_DIR=$PGD git config gc.auto 0 &&
			echo /.decree >>"$PGD/info/exclude" &&
			git --git-dir="$PGD" --work-tree="$PGT" add -A &&
			git --git-dir="$PGD" --work-tree="$PGT" commit -q -m base &&
			(cd "$PGT" && bash .decree/routines/change.sh </dev/null)
	} >>"$LOG" 2>&1 || die "the git reference repository failed (see $LOG)"
	# (the index's stat data, refreshed: 1 when files changed)
	git --git-dir="$PGD" --work-tree="$PGT" update-index -q --refresh \
		>>"$LOG" 2>&1 || true
	"$WALK" --read "$P" >"$RD/gen.info" 2>>"$LOG" ||
		die "lstatwalk --read failed on $P"
	table_head "pipeline, gen20k: routine changes 7000 of $(awk '{ printf "%d files, %.1f MiB", $2, $8 / 1048576 }' "$RD/gen.info"), reps $PR" \
		"reference"
	pg_bad=0
	i=1
	while [ $i -le "$PR" ]; do
		say "[pipeline] gen20k: $i/$PR"
		for c in run alone; do
			"$WALK" --read "$W/$c.$i" >/dev/null 2>>"$LOG"
			warm_store "$W/$c.$i"
		done
		cd "$W/run.$i" || die "cannot cd to $W/run.$i"
		sync
		tm "$RD/g.run" "$DECREE" run -q -m "bench-$i" -p x \
			-v routine=change </dev/null
		cd "$W/alone.$i" || die "cannot cd to $W/alone.$i"
		sync
		tmo "$RD/ref" 0 "$RD/g.ck" "$DECREE" checkpoint create
		REF=$(cat "$RD/ref")
		sync
		tm "$RD/g.alone" bash .decree/routines/change.sh </dev/null
		sync
		tmo "$RD/out.diff" 0 "$RD/g.diff" "$DECREE" checkpoint diff \
			"$REF"
		find "$PGT" -type f ! -path "$PGT/.decree/*" \
			-exec cat {} + >/dev/null 2>>"$LOG"
		find "$PGD/objects" -type f -exec cat {} + >/dev/null 2>>"$LOG"
		sync
		tmo "$RD/git.diff" 0 "$RD/g.gitdiff" git --git-dir="$PGD" \
			--work-tree="$PGT" diff --no-renames --no-color \
			--no-ext-diff HEAD
		if [ "$(grep -c '^diff --git ' "$RD/git.diff")" != 7000 ]; then
			problem pipeline "gen20k: git diff HEAD names $(grep -c '^diff --git ' "$RD/git.diff") files, not 7000 (rep $i)"
			pg_bad=$((pg_bad + 1))
		fi
		# both copies must hold the changed tree, and the run's
		# changes.diff must be what `checkpoint diff` printed
		for c in run alone; do
			if ! diff -r -q -x .decree "$W/mutated" "$W/$c.$i" \
				>>"$LOG" 2>&1; then
				problem pipeline "gen20k: $W/$c.$i differs from the changed tree (rep $i, see $LOG)"
				pg_bad=$((pg_bad + 1))
			fi
		done
		# the I/O floor of create + diff: the stat floor twice (the
		# checkpoint's walk and the diff's) and reading the changed
		# files, untimed listing first (statfloor.c)
		sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "$RD/out.diff" \
			>"$RD/g.list"
		: >"$RD/g.fs1"
		"$FLOOR" --threads "$NWALK" --reps 2 "$W/alone.$i" "$RD/g.fs1" \
			2>>"$LOG" || echo "0 0 1" >>"$RD/g.fs1"
		awk '{ n += $1; s = s || $3 } END { printf "%.0f 0 %d\n", n, s }' \
			"$RD/g.fs1" >>"$RD/g.fs"
		"$FLOOR" --threads "$NWALK" --read "$RD/g.list" "$W/alone.$i" \
			"$RD/g.fr" 2>>"$LOG" || echo "0 0 1" >>"$RD/g.fr"
		pg_cd=$(last_run "$W/run.$i")/changes.diff
		pg_n=$(grep -c '^diff --git ' "$RD/out.diff")
		if [ "$pg_n" != 7000 ] || ! cmp -s "$pg_cd" "$RD/out.diff"; then
			problem pipeline "gen20k: checkpoint diff names $pg_n files (expected 7000) or differs from $pg_cd (rep $i)"
			pg_bad=$((pg_bad + 1))
		fi
		i=$((i + 1))
	done
	pair_op - "$RD/g.run" "$RD/g.alone" "$RD/g.over"
	# the routine's own time inside each decree run, from its stamps
	: >"$RD/g.in"
	i=1
	while [ $i -le "$PR" ]; do
		awk 'END { if (NR) printf "%.0f 0 0\n", ($2 - $1) * 1e9
			else print "0 0 1" }' "$W/run.$i.stamp" >>"$RD/g.in" \
			2>>"$LOG" || echo "0 0 1" >>"$RD/g.in"
		i=$((i + 1))
	done
	pair_op - "$RD/g.run" "$RD/g.in" "$RD/g.inover"
	pair_op + "$RD/g.ck" "$RD/g.diff" "$RD/g.sum"
	pair_op + "$RD/g.fs" "$RD/g.fr" "$RD/g.floor"
	row pipeline genover "decree run minus routine (ref 860 ms)" ms \
		"$(stats "$RD/g.over")" "$(const 860)"
	row pipeline geninover "  same, routine timed inside the run" ms \
		"$(stats "$RD/g.inover")" "$(const 860)"
	row pipeline genrun "  decree run (ref: the routine alone)" ms \
		"$(stats "$RD/g.run")" "$(stats "$RD/g.alone")"
	row pipeline genckpt "  checkpoint create, unchanged (481 ms)" ms \
		"$(stats "$RD/g.ck")" "$(const 481)"
	row pipeline gendiff "  checkpoint diff, 7000 changed (379 ms)" ms \
		"$(stats "$RD/g.diff")" "$(const 379)"
	row pipeline gengitdiff "    same, ref = git diff HEAD" ms \
		"$(stats "$RD/g.diff")" "$(stats "$RD/g.gitdiff")"
	row pipeline gensum "  create + diff, per rep (860 ms)" ms \
		"$(stats "$RD/g.sum")" "$(const 860)"
	row pipeline genfloor "  I/O floor of create + diff (860 ms)" ms \
		"$(stats "$RD/g.floor")" "$(const 860)"
	out "   references: the original Rust decree, 481 ms checkpoint + 379 ms diff on this class of machine"
	[ $pg_bad = 0 ] &&
		out "   verified: every copy equals the changed tree (diff -r), every changes.diff = checkpoint diff output ($pg_n files), git diff HEAD names as many"
	PL_BAD=$((PL_BAD + pg_bad))
	cd "$BB" || exit 1
}

bench_pipeline() {
	W=$BB/work/pipeline
	RD=$W/res
	rm -rf "$W"
	mkdir -p "$RD" || die "cannot create $W"
	PL_BAD=0
	pipeline_gen
	if [ "$QUICK" = 1 ]; then
		out ""
		out "== pipeline, linux: skipped (--quick)"
	elif prepare_linux; then
		pipeline_linux
	fi
	[ "$KEEP" = 1 ] || [ "$PL_BAD" != 0 ] || rm -rf "$W"
}

# ---------------------------------------------------------------- hooks

# hook_payload FILE EVENT TOOL TOOL_ID TOOL_INPUT: a Claude Code payload
# in the shape the real agent sends (docs/agents.md) for the tree $T
hook_payload() {
	printf '{"hook_event_name":"%s","session_id":"bench-session","transcript_path":"/dev/null","cwd":"%s","prompt_id":"bench-turn-1","permission_mode":"default","prompt":"bench","tool_name":"%s","tool_input":%s,"tool_use_id":"%s"}' \
		"$2" "$T" "$3" "$5" "$4" >"$1"
}

# The hook calls an agent makes, on the Linux tree: a file tool's
# PostToolUse (one known path, no walk; target 5 ms), and the PreToolUse
# and PostToolUse around a shell command on the unchanged tree (the walk;
# target 0.3 s and half a shadow-git checkpoint of the same tree, taken in
# the same loop).  The tree is only read: the hooks write to the store.
hooks_linux() {
	HR=7
	[ -n "$REPS" ] && HR=$REPS
	T=$LINUX S=$W/store GD=$W/git
	say "[hooks] linux: the first turn (decree) and the first shadow-git commit (untimed)"
	hook_payload "$RD/prompt.json" UserPromptSubmit Prompt p '{}'
	"$DECREE" --store "$S" hook claude-code UserPromptSubmit \
		<"$RD/prompt.json" >>"$LOG" 2>&1
	git_init && git_ckpt >>"$LOG" 2>&1 || die "shadow git failed (see $LOG)"
	hook_payload "$RD/edit.json" PostToolUse Edit e1 \
		"{\"file_path\":\"$T/Makefile\",\"old_string\":\"a\",\"new_string\":\"a\",\"replace_all\":false}"
	table_head "hooks, linux: decree hook claude-code EVENT (payload on stdin), reps $HR" \
		"git / budget"
	i=1
	while [ $i -le "$HR" ]; do
		say "[hooks] linux: $i/$HR"
		hook_payload "$RD/pre.json" PreToolUse Bash "b$i" '{"command":"make -n"}'
		hook_payload "$RD/post.json" PostToolUse Bash "b$i" '{"command":"make -n"}'
		tm "$RD/edit.res" "$DECREE" --store "$S" hook claude-code \
			PostToolUse <"$RD/edit.json"
		tm "$RD/pre.res" "$DECREE" --store "$S" hook claude-code \
			PreToolUse <"$RD/pre.json"
		tm "$RD/post.res" "$DECREE" --store "$S" hook claude-code \
			PostToolUse <"$RD/post.json"
		tm "$RD/git.res" git --git-dir="$GD" --work-tree="$T" add -A \
			--- git --git-dir="$GD" --work-tree="$T" commit -q \
			--allow-empty -m x
		i=$((i + 1))
	done
	# the reference of a file tool's hook is its budget: 5 ms
	row hooks filetool "file tool (Edit), PostToolUse" ms \
		"$(stats "$RD/edit.res")" "$(const 5)"
	row hooks shellpre "shell command, PreToolUse" ms \
		"$(stats "$RD/pre.res")" "$(stats "$RD/git.res")"
	row hooks shellpost "shell command, PostToolUse (walk)" ms \
		"$(stats "$RD/post.res")" "$(stats "$RD/git.res")"
	pair_op + "$RD/pre.res" "$RD/post.res" "$RD/around.res"
	row hooks shellaround "  both hooks around the command" ms \
		"$(stats "$RD/around.res")" "$(stats "$RD/git.res")"
	row hooks shellrss "  peak RSS, PostToolUse" MiB \
		"$(maxrss "$RD/post.res" | awk '{ print $1 / 1024 }')" NA
	out "   reference: shadow git 'git add -A && git commit' of the same unchanged tree (file tool: its 5 ms budget)"
	# the hooks never fail their agent: check that they did their work
	hk_turns=$("$DECREE" --store "$S" -C "$T" rewind --json 2>>"$LOG" |
		python3 -c 'import json, sys; d = json.load(sys.stdin); print(len(d["turns"]), ",".join(d["turns"][0]["files"]))' 2>>"$LOG")
	hk_err=$(cat "$S/hooks.log" 2>/dev/null | wc -l)
	if [ "$hk_turns" = "1 Makefile" ] && [ "$hk_err" = 0 ]; then
		out "   verified: one turn, the journal names exactly Makefile, no hook error logged"
	else
		HK_BAD=1
		problem hooks "linux: turns/files '$hk_turns' (expected '1 Makefile'), $hk_err hook error(s) in $S/hooks.log"
	fi
}

# agent_script FILE TURN: the scripted model of one turn (write, edit,
# shell), in the format of ../shared/agents/README.md
agent_script() {
	printf '{"steps": [{"tool": "write", "path": "new-%s.txt", "content": "turn %s\\n"}, {"tool": "edit", "path": "edit-me.txt", "old": "beta", "new": "beta %s"}, {"tool": "shell", "command": "sed -i s/two/two%s/ shell-edit.txt && echo made > made-%s.txt"}, {"text": "done"}]}\n' \
		"$2" "$2" "$2" "$2" "$2" >"$1"
}

# A real agent session: Claude Code (offline, scripted fake model, see
# ../shared/agents/README.md) runs three turns with decree's hooks; each
# hook call is timed by wrapping the installed command in timecmd, and the
# sum is set against the agent's whole run time.  Skipped without the
# agents (the agents test suites install them).
hooks_agent() {
	AG=${DECREE_AGENTS_DIR:-$ROOT/../shared/agents}
	AP=${DECREE_AGENTS_PREFIX:-$HOME/.cache/decree-agents}
	if [ ! -f "$AG/run_agent.py" ] || [ ! -e "$AP/node_modules/.bin/claude" ]; then
		out ""
		out "== hooks, agent session: skipped (no $AG/run_agent.py or $AP/node_modules/.bin/claude; 'sh tests/run-all.sh agents' installs the agents)"
		return 0
	fi
	P=$W/agent-project AW=$W/agent-work
	rm -rf "$P" "$AW"
	mkdir -p "$P" || die "cannot create $P"
	printf 'alpha\nbeta\ngamma\n' >"$P/edit-me.txt"
	printf 'one\ntwo\n' >"$P/shell-edit.txt"
	(cd "$P" && "$DECREE" hook install claude-code) >>"$LOG" 2>&1 ||
		die "decree hook install failed (see $LOG)"
	# time every hook call: "decree hook ..." -> "timecmd RES decree hook ..."
	python3 -c '
import json, shlex, sys
path, timecmd, res = sys.argv[1:]
d = json.load(open(path))
for groups in d["hooks"].values():
    for g in groups:
        for h in g["hooks"]:
            h["command"] = "%s %s %s" % (shlex.quote(timecmd), shlex.quote(res), h["command"])
json.dump(d, open(path, "w"), indent=2)
' "$P/.claude/settings.json" "$TIMECMD" "$RD/agent-hooks.res" ||
		die "cannot wrap the hook commands"
	: >"$RD/agent-hooks.res"
	: >"$RD/agent-run.res"
	for turn in 1 2 3; do
		agent_script "$W/turn$turn.json" $turn
		cont=""
		[ $turn -gt 1 ] && cont=--continue
		say "[hooks] agent session: claude turn $turn/3"
		if ! tm "$RD/agent-run.res" python3 "$AG/run_agent.py" \
			--agent claude --project "$P" --script "$W/turn$turn.json" \
			--no-hooks --keep "$AW" $cont --npm-prefix "$AP"; then
			HK_BAD=1
			problem hooks "agent session: run_agent.py failed in turn $turn (see $LOG)"
			return 0
		fi
	done
	hk_calls=$(wc -l <"$RD/agent-hooks.res")
	hk_sum=$(awk '{ s += $1 } END { printf "%.1f", s / 1e6 }' "$RD/agent-hooks.res")
	hk_max=$(awk 'BEGIN { m = 0 } $1 > m { m = $1 } END { printf "%.1f", m / 1e6 }' "$RD/agent-hooks.res")
	ag_sum=$(awk '{ s += $1 } END { printf "%.0f", s / 1e6 }' "$RD/agent-run.res")
	out ""
	out "== hooks, agent session: Claude Code, 3 turns (write, edit, shell each), offline scripted model"
	out "   $hk_calls hook calls took $hk_sum ms in all (slowest $hk_max ms); the agent ran $ag_sum ms in all: hooks $(awk -v h="$hk_sum" -v a="$ag_sum" 'BEGIN { printf "%.1f%%", 100 * h / a }') of the agent's time"
	hk_turns=$("$DECREE" -C "$P" rewind --json 2>>"$LOG" |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)["turns"]))' 2>>"$LOG")
	if [ "$hk_turns" = 3 ]; then
		out "   verified: 3 turns recorded"
	else
		HK_BAD=1
		problem hooks "agent session: $hk_turns turns recorded, expected 3"
	fi
}

bench_hooks() {
	W=$BB/work/hooks
	RD=$W/res
	rm -rf "$W"
	mkdir -p "$RD" || die "cannot create $W"
	HK_BAD=0
	if [ "$QUICK" = 1 ]; then
		out ""
		out "== hooks, linux: skipped (--quick)"
	elif prepare_linux; then
		hooks_linux
	fi
	hooks_agent
	[ "$KEEP" = 1 ] || [ "$HK_BAD" != 0 ] || rm -rf "$W"
}

# ---------------------------------------------------------------- bindings

# The Python binding (bindings/python) on a generated 5,000-file tree:
# create on the unchanged tree and a list of 100 checkpoints in-process,
# against the C library alone (bench/libloop.c, linked to the libdecree.so
# beside the program) and through the program; and a Hermes-style cycle
# (checkpoint, edit 10 files, restore) with decree.hermes against the git
# command sequence of the Hermes agent's own manager (bench/bindings.py).
bench_bindings() {
	bb_lib=$(dirname "$DECREE")/libdecree.so
	if [ ! -f "$bb_lib" ]; then
		problem bindings "$bb_lib is missing (make all builds it)"
		return 0
	fi
	cc -O2 -std=c11 -Wall -Wextra -I"$ROOT/include" -o "$BB/libloop" \
		"$HERE/libloop.c" -L"$(dirname "$bb_lib")" -l:libdecree.so \
		-Wl,-rpath,"$(dirname "$bb_lib")" || die "cannot build libloop.c"
	bb_tree=$(gen_tree bindings 1 5000 52428800)
	bb_reps=9
	[ -n "$REPS" ] && bb_reps=$REPS
	out ""
	out "== bindings: Python (in-process) vs the C library vs the program; decree.hermes vs Hermes' git manager, 5,000 files / 50 MiB, reps $bb_reps"
	say "[bindings] running bench/bindings.py"
	bb_py=python3
	[ -x /usr/bin/python3 ] && bb_py=/usr/bin/python3
	if ! $bb_py "$HERE/bindings.py" --decree "$DECREE" --lib "$bb_lib" \
		--libloop "$BB/libloop" --tree "$bb_tree" --work "$BB/work/bindings" \
		--reps "$bb_reps" --summary "$SUMMARY" >"$BB/work/bindings.out" 2>>"$LOG"; then
		problem bindings "bench/bindings.py failed (see $LOG)"
		return 0
	fi
	while IFS= read -r l; do out "$l"; done <"$BB/work/bindings.out"
}

# ---------------------------------------------------------------- workspace

# An XFS file system with reflink on a loop file under build/bench/work
# (root only): xfs_up SIZE_GIB sets XFS_MNT; xfs_down undoes it.
XFS_IMG=$BB/work/xfs.img XFS_MNT=$BB/work/xfs XFS_LOOP=""
xfs_down() {
	if [ -n "$XFS_LOOP" ]; then
		cd "$BB" || :
		umount "$XFS_MNT" 2>>"$LOG" || umount -l "$XFS_MNT" 2>>"$LOG"
		losetup -d "$XFS_LOOP" 2>>"$LOG"
		XFS_LOOP=""
	fi
	rm -f "$XFS_IMG"
}
xfs_up() {
	[ "$(id -u)" = 0 ] || {
		xu_why="not root"
		return 1
	}
	for c in mkfs.xfs losetup mount; do
		command -v $c >/dev/null 2>&1 || {
			xu_why="no $c (scripts/deps.sh installs xfsprogs)"
			return 1
		}
	done
	rm -f "$XFS_IMG" && truncate -s "${1}G" "$XFS_IMG" &&
		mkfs.xfs -q -f -m reflink=1 "$XFS_IMG" >>"$LOG" 2>&1 || {
		xu_why="mkfs.xfs -m reflink=1 failed"
		rm -f "$XFS_IMG"
		return 1
	}
	XFS_LOOP=$(losetup -f --show "$XFS_IMG" 2>>"$LOG") || {
		xu_why="no loop device"
		XFS_LOOP=""
		rm -f "$XFS_IMG"
		return 1
	}
	mkdir -p "$XFS_MNT" && mount -t xfs "$XFS_LOOP" "$XFS_MNT" 2>>"$LOG" || {
		xu_why="cannot mount XFS"
		xfs_down
		return 1
	}
	trap 'xfs_down' EXIT
	trap 'exit 130' INT TERM HUP PIPE
}

# KiB used on the file system holding $1, after a sync
used_kib() {
	sync
	df -k --output=used "$1" | tail -1 | tr -d ' '
}

# same_files A B: A and B hold the same files and links (diff -r; .decree
# left out, and empty directories, which neither git nor decree keeps)
same_files() {
	diff -r -q --no-dereference -x .decree "$1" "$2" 2>&1 |
		while IFS= read -r sf_l; do
			case $sf_l in
			"Only in "*": "*)
				sf_p=${sf_l#Only in }
				sf_d=${sf_p%%: *}/${sf_p#*: }
				[ -d "$sf_d" ] && [ -z "$(ls -A "$sf_d")" ] && continue
				;;
			esac
			printf '%s\n' "$sf_l"
		done | tee -a "$LOG" | grep -q . && return 1
	return 0
}

# bench_ws FS BASE NAME SRC REPS: on the file system of BASE (a directory),
# a copy of SRC as the project (store and shadow GIT_DIR beside it, on the
# same file system); REPS times: decree workspace create, git worktree add,
# cp -a (and on XFS cp -a --reflink=never), each timed and its extra disk
# measured with df; then decree workspace apply of 10 changed files against
# a shadow-git checkpoint of the same change.
bench_ws() {
	WF=$1 NAME=ws-$1-$3
	W=$2/$NAME
	T=$W/tree S=$W/store GD=$W/git RD=$BB/work/res-$NAME
	rm -rf "$W" "$RD"
	mkdir -p "$W" "$RD" || die "cannot create $W"
	say "[$NAME] copying the tree into $T"
	cp -a --reflink=never "$4" "$T" || die "cannot copy $4"
	"$WALK" --read "$T" >"$RD/tree.info" 2>>"$LOG" ||
		die "lstatwalk --read failed on $T"
	say "[$NAME] a checkpoint and a shadow-git commit of it (untimed)"
	decree checkpoint create >/dev/null 2>>"$LOG" ||
		die "decree checkpoint create failed (see $LOG)"
	git_init >>"$LOG" 2>&1 && git_ckpt >>"$LOG" 2>&1 ||
		die "git checkpoint failed"
	TREE_KIB=$(du -sk "$T" | awk '{ print $1 }')
	WR=$5
	[ -n "$REPS" ] && WR=$REPS
	table_head "$NAME: $(awk '{ printf "%d files + %d symlinks, %.1f MiB", $2, $4, $8 / 1048576 }' "$RD/tree.info") on $(stat -f -c %T "$W"), reps $WR" \
		"ref median"
	i=1
	while [ $i -le "$WR" ]; do
		say "[$NAME] create $i/$WR"
		u0=$(used_kib "$W")
		tm "$RD/c.d" "$DECREE" -q --store "$S" -C "$T" workspace create "w$i"
		u1=$(used_kib "$W")
		echo $((u1 - u0)) >>"$RD/disk.d"
		tm "$RD/c.g" git --git-dir="$GD" worktree add -q --detach "$W/wt.$i"
		u2=$(used_kib "$W")
		echo $((u2 - u1)) >>"$RD/disk.g"
		tm "$RD/c.c" cp -a "$T" "$W/cp.$i"
		u3=$(used_kib "$W")
		echo $((u3 - u2)) >>"$RD/disk.c"
		# the copy made durable as decree makes its own: syncfs of
		# the file system (sync -f) before it counts as made
		tm "$RD/c.s" sh -c 'cp -a "$1" "$2" && sync -f "$2"' sh "$T" \
			"$W/cps.$i"
		used_kib "$W" >/dev/null
		if [ "$WF" = xfs ]; then
			tm "$RD/c.n" cp -a --reflink=never "$T" "$W/cpn.$i"
			u4=$(used_kib "$W")
			echo $((u4 - u3)) >>"$RD/disk.n"
		fi
		i=$((i + 1))
	done
	WSJ=$("$DECREE" --store "$S" -C "$T" --json workspace list 2>>"$LOG")
	WSP=$(printf '%s' "$WSJ" | python3 -c 'import json, sys
w = json.load(sys.stdin)["workspaces"][0]
print(w["path"])
print("mode %s, reflink_verified %s, cloned %d, copied %d, from the store %d" % (w["mode"], w["reflink_verified"], w["copy"]["cloned"], w["copy"]["copied"], w["copy"]["from_store"]))' 2>>"$LOG")
	out "   decree: $(printf '%s\n' "$WSP" | sed -n 2p); cp: $(cp --version | head -1) (--reflink=auto by default)"
	if same_files "$T" "$(printf '%s\n' "$WSP" | head -1)"; then
		out "   verified: workspace w1 = the tree (diff -r; empty directories aside)"
	else
		problem "$NAME" "workspace w1 differs from the tree (see $LOG)"
	fi
	row "$NAME" create "workspace create (ref: git worktree add)" ms \
		"$(stats "$RD/c.d")" "$(stats "$RD/c.g")"
	row "$NAME" createcp "  same, ref = cp -a" ms \
		"$(stats "$RD/c.d")" "$(stats "$RD/c.c")"
	row "$NAME" createcps "  same, ref = cp -a && sync -f (durable)" ms \
		"$(stats "$RD/c.d")" "$(stats "$RD/c.s")"
	[ "$WF" = xfs ] && row "$NAME" createcpn "  same, ref = cp -a --reflink=never" ms \
		"$(stats "$RD/c.d")" "$(stats "$RD/c.n")"
	# extra disk: medians in MiB; the target is 1% of the tree on XFS
	dmed() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] / 1024 }'; }
	if [ "$WF" = xfs ]; then
		disk_tgt="abs $(echo "$TREE_KIB" | awk '{ printf "%.1f", $1 / 1024 / 100 }')"
	else
		disk_tgt="none 0"
	fi
	ROW_TARGET=$disk_tgt
	row "$NAME" disk "extra disk, df (ref: git worktree)" MiB \
		"$(dmed "$RD/disk.d")" "$(dmed "$RD/disk.g")"
	ROW_TARGET="none 0"
	row "$NAME" diskcp "  same, ref = cp -a" MiB \
		"$(dmed "$RD/disk.d")" "$(dmed "$RD/disk.c")"
	[ "$WF" = xfs ] && row "$NAME" diskcpn \
		"  same, ref = cp -a --reflink=never" MiB \
		"$(dmed "$RD/disk.d")" "$(dmed "$RD/disk.n")"
	unset ROW_TARGET
	out "   tree: $(echo "$TREE_KIB" | awk '{ printf "%.1f MiB (du)", $1 / 1024 }')"

	# apply of 10 changed files vs a shadow-git checkpoint of the same change
	"$DECREE" -q --store "$S" -C "$T" workspace create wa >/dev/null 2>>"$LOG" ||
		die "decree workspace create wa failed (see $LOG)"
	WA=$("$DECREE" --store "$S" -C "$T" workspace path wa 2>>"$LOG")
	i=1
	while [ $i -le "$WR" ]; do
		say "[$NAME] apply 10 changed files $i/$WR"
		$GEN --out "$WA" --seed $((700 + i)) --mutate 10 >>"$LOG" 2>&1 ||
			die "gen-tree --mutate failed"
		sync
		tm "$RD/a.d" "$DECREE" -q --store "$S" -C "$T" workspace apply wa
		sync
		tm "$RD/a.g" git --git-dir="$GD" --work-tree="$T" add -A --- \
			git --git-dir="$GD" --work-tree="$T" commit -q --allow-empty -m x
		i=$((i + 1))
	done
	if same_files "$T" "$WA"; then
		out "   verified: after the applies the project = workspace wa (diff -r)"
	else
		problem "$NAME" "after the applies the project differs from workspace wa (see $LOG)"
	fi
	row "$NAME" apply10 "workspace apply, 10 files changed (ref: shadow-git checkpoint)" ms \
		"$(stats "$RD/a.d")" "$(stats "$RD/a.g")"
	cd "$BB" || exit 1
	if [ "$KEEP" != 1 ]; then
		git --git-dir="$GD" worktree prune >/dev/null 2>&1
		rm -rf "$W"
	fi
}

bench_workspace() {
	wsd=$(gen_tree gen10k 1 10000 104857600)
	wsl=""
	if [ "$QUICK" != 1 ] && prepare_linux; then
		wsl=$LINUX
	fi
	mkdir -p "$BB/work/ext4"
	bench_ws "$(stat -f -c %T "$BB/work" | sed 's/ext2\/ext3/ext4/')" "$BB/work/ext4" gen10k "$wsd" 5
	[ -z "$wsl" ] || bench_ws "$(stat -f -c %T "$BB/work" | sed 's/ext2\/ext3/ext4/')" "$BB/work/ext4" linux "$wsl" 3
	rmdir "$BB/work/ext4" 2>/dev/null
	# XFS: the tree, store, shadow repository, worktrees and full copies
	if xfs_up "$([ -n "$wsl" ] && echo 14 || echo 4)"; then
		bench_ws xfs "$XFS_MNT" gen10k "$wsd" 5
		[ -z "$wsl" ] || bench_ws xfs "$XFS_MNT" linux "$wsl" 3
		xfs_down
	else
		out ""
		out "== workspace on XFS reflink: SKIPPED - $xu_why"
	fi
}

# ---------------------------------------------------------------- main

out "decree benchmark  $(date -u +%Y-%m-%dT%H:%M:%SZ)"
out "decree: $DECREE ($("$DECREE" --version 2>/dev/null | head -n 1))"
out "reference: $(git --version), shadow GIT_DIR outside the tree, gc.auto=0"
out "host: $(uname -sr), $(nproc 2>/dev/null || echo '?') cores," \
	"fs $(stat -f -c %T "$BB" 2>/dev/null || echo '?')"
out "medians of alternating runs (decree, git, decree, git, ...);" \
	"ratio = decree / git"
# the floor of any whole-process time on this machine: fork+exec+exit
: >"$BB/work/true.res"
for i in 1 2 3 4 5 6 7 8 9 10 11; do
	"$TIMECMD" "$BB/work/true.res" true
done
out "process floor (timecmd true): $(stats "$BB/work/true.res" |
	awk '{ printf "%.2f ms", $1 }') median"

# the diff and apply groups first: they create many files, which on ext4
# without a journal is slow for a minute or more after the big deletions
# that finish every tree (see docs/bench.md)
if selected_group diff; then
	bench_diff
fi
if selected_group apply; then
	bench_apply
fi
# NAME SEED FILES BYTES   then bench_tree args:
# REPS_FIRST REPS CHANGE_A CHANGE_B RESTORE_MOD RESTORE_NEW LIST
if selected_tree tiny; then
	d=$(gen_tree tiny 1 5 51200)
	bench_tree tiny "$d" 15 15 2 0 2 2 1
fi
if selected_tree small; then
	d=$(gen_tree small 1 50 512000)
	bench_tree small "$d" 15 15 10 0 10 6 1
fi
if selected_tree gen10k; then
	d=$(gen_tree gen10k 1 10000 104857600)
	bench_tree gen10k "$d" 5 5 10 1000 10 6 0
fi
if selected_tree linux; then
	if [ "$QUICK" = 1 ]; then
		out ""
		out "== linux: skipped (--quick)"
	elif prepare_linux; then
		bench_tree linux "$LINUX" 3 5 10 1000 10 6 0
	fi
fi
# last: its copies are made after the trees' deletions (untimed), and its
# own deletions at the end slow down nothing
if selected_group pipeline; then
	bench_pipeline
fi
if selected_group hooks; then
	bench_hooks
fi
if selected_group bindings; then
	bench_bindings
fi
if selected_group workspace; then
	bench_workspace
fi

# ---------------------------------------------------------------- summary

n_ok=$(awk -F'\t' '$1 == "ok"' "$SUMMARY" | wc -l)
n_miss=$(awk -F'\t' '$1 == "MISS"' "$SUMMARY" | wc -l)
n_err=$(awk -F'\t' '$1 == "ERR" || $1 == "n/a"' "$SUMMARY" | wc -l)
out ""
out "== summary: $n_ok targets met, $n_miss missed, $n_err errors" \
	"($(($(date +%s) - T_START)) s)"
awk -F'\t' '$1 != "ok" {
	if ($4 == "-")
		printf "   %-4s %-7s %s\n", $1, $2, $3
	else
		printf "   %-4s %-7s %s: decree %s, reference %s, target %s\n",
			$1, $2, $3, $4, $5, $6 }' "$SUMMARY" | tee -a "$REPORT"
out "report: $REPORT   machine-readable: $TSV   log: $LOG"
rm -f "$SUMMARY"
if [ "$n_err" -gt 0 ]; then
	exit 1
fi
if [ "$STRICT" = 1 ] && [ "$n_miss" -gt 0 ]; then
	exit 1
fi
exit 0
