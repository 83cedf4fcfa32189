#!/bin/bash
# shared_lib.sh - the program as a client of libdecree.so.  decree-shared
# (make test-build) is the decree program linked against the shared library
# plus its own copy of util (libdecree_util.a): it must need libdecree.so.0,
# find it next to itself, take every public decree_* function from it and
# define none itself, and report the library's errors (the error slot it
# reads is the library's, not its own util's).  tests/run-all.sh also runs
# some CLI suites with it (cli-shared/*).
. "$(dirname "$0")/lib.sh"
SHARED=${DECREE_SHARED:-$(dirname "$DECREE")/decree-shared}
LIB=$(dirname "$SHARED")/libdecree.so

if [ ! -x "$SHARED" ] || [ ! -f "$LIB" ]; then
	not_ok "$SHARED and $LIB exist" "build them: make test-build"
	done_testing
	exit 1
fi
ok "$SHARED and $LIB exist"

dyn=$(readelf -d "$SHARED")
case "$dyn" in
*"(NEEDED)"*"Shared library: [libdecree.so.0]"*) ok "readelf -d: NEEDED libdecree.so.0" ;;
*) not_ok "readelf -d: NEEDED libdecree.so.0" "$(printf '%s\n' "$dyn" | grep NEEDED)" ;;
esac
case "$dyn" in
*"PATH)"*"[\$ORIGIN]"*) ok "readelf -d: the rpath is \$ORIGIN" ;;
*) not_ok "readelf -d: the rpath is \$ORIGIN" "$(printf '%s\n' "$dyn" | grep PATH)" ;;
esac
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
same "libdecree.so: SONAME libdecree.so.0" "$soname" libdecree.so.0
got=$(ldd "$SHARED" | awk '$1 == "libdecree.so.0" { print $3 }')
same "the loader finds the libdecree.so.0 next to the binary" \
	"$(realpath -e "$got" 2>&1)" "$(realpath "$LIB")"

# The public API comes from the library: the binary defines none of what
# libdecree.so exports (its decree_malloc & co. are util's, hidden in the
# library), and what it uses it takes as undefined dynamic symbols.
nm -D --defined-only "$LIB" | awk '{ print $3 }' | LC_ALL=C sort -u >"$SCRATCH/exported"
nm --defined-only "$SHARED" | awk '{ print $3 }' | LC_ALL=C sort -u >"$SCRATCH/defined"
nm -D -u "$SHARED" | awk '$2 ~ /^decree_/ { print $2 }' | LC_ALL=C sort -u >"$SCRATCH/imported"
same "the binary defines no symbol libdecree.so exports" \
	"$(LC_ALL=C comm -12 "$SCRATCH/exported" "$SCRATCH/defined")" ""
same "every decree_* the binary imports is exported by libdecree.so" \
	"$(LC_ALL=C comm -23 "$SCRATCH/imported" "$SCRATCH/exported")" ""
check "... and it imports some ($(wc -l <"$SCRATCH/imported"), decree_store_open among them)" \
	grep -qx decree_store_open "$SCRATCH/imported"
echo "# the binary's own decree_* (util): $(grep '^decree_' "$SCRATCH/defined" | tr '\n' ' ')"

t_out "$("$DECREE" --version)" "decree-shared --version" "$SHARED" --version

# Errors set inside the library reach the program through
# decree_error_last(): the same messages and exit codes as the static
# program, never the "operation failed" of an empty slot.
cd "$SCRATCH" && mkdir proj && cd proj && echo hello >a.txt
t "checkpoint create (decree-shared)" "$SHARED" checkpoint create -m one
id=$OUT
t "the static program shows that checkpoint" "$DECREE" checkpoint show "$id"
printf 'garbage\n@@ -1 +1 @@\n' >"$SCRATCH/bad.diff"
for args in "checkpoint show nosuch" "checkpoint show deadbeef" "apply $SCRATCH/bad.diff"; do
	_run "$DECREE" $args
	want_rc=$RC want_err=$ERR
	_run "$SHARED" $args
	if [ "$RC" = "$want_rc" ] && [ "$ERR" = "$want_err" ] && [ -n "$ERR" ] &&
		[ "${ERR#*operation failed}" = "$ERR" ]; then
		ok "decree-shared $args: exit $RC, $ERR"
	else
		not_ok "decree-shared $args: the static program's error" \
			"got exit $RC: $ERR; wanted exit $want_rc: $want_err"
	fi
done
done_testing
