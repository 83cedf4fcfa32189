#!/bin/sh
# fuzz/run.sh SECONDS TARGET... - run libFuzzer targets one after the other.
#
# Each target runs for SECONDS on a scratch copy of fuzz/corpus/<target>
# (build/fuzz/work/<target>/; the committed corpus is never written), with
# one process at nice 19, its dictionary fuzz/<target>.dict when there is one,
# and -print_final_stats=1.  Crash, leak and timeout inputs land in
# build/fuzz/artifacts/<target>/.  The log is build/fuzz/logs/<target>.log;
# one line per target goes to stdout:
#   target seconds execs exec/s cov ft crashes
# The exit status is 1 when any target found a crash.
set -u
secs=${1:?usage: fuzz/run.sh SECONDS TARGET...}
shift
top=$(cd "$(dirname "$0")/.." && pwd)
fb=$top/build/fuzz
status=0
printf '%-10s %7s %11s %7s %6s %7s %s\n' target seconds execs exec/s cov ft crashes
for t in "$@"; do
	bin=$fb/fuzz_$t
	[ -x "$bin" ] || { echo "fuzz/run.sh: no $bin (make fuzz)" >&2; exit 2; }
	work=$fb/work/$t art=$fb/artifacts/$t log=$fb/logs/$t.log
	rm -rf "$work"
	mkdir -p "$work" "$art" "$fb/logs"
	cp "$top/fuzz/corpus/$t"/* "$work"/ 2>/dev/null
	dict=
	[ -f "$top/fuzz/$t.dict" ] && dict=-dict=$top/fuzz/$t.dict
	start=$(date +%s)
	nice -n 19 "$bin" -max_total_time="$secs" \
		-print_final_stats=1 -artifact_prefix="$art/" $dict \
		"$work" >"$log" 2>&1
	rc=$?
	end=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	crashes=$(ls "$art" | wc -l)
	[ "$rc" -ne 0 ] && status=1
	printf '%-10s %7s %11s %7s %6s %7s %s\n' "$t" $((end - start)) \
		"${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
done
exit $status
