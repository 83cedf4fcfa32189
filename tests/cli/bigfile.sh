#!/bin/bash
# bigfile.sh - a file far larger than memory should allow is hashed,
# stored and restored in bounded memory (streamed, docs/format.md "Big
# objects"), and a sparse file comes back byte-exact and still sparse.
# The file is sparse, so it costs no disk: 512 MiB apparent size, a few
# MiB of data.  Peak RSS is measured with /usr/bin/time (GNU time, %M).
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

P=$SCRATCH/proj
mkdir -p "$P/.decree" && cd "$P" || exit 1
printf 'checkpoint:\n  max_file_size: 4G\n' >.decree/config.yml
SIZE=$((512 << 20))
LIMIT_KIB=$((100 << 10)) # peak RSS allowed: 100 MiB, a fifth of the file

truncate -s $SIZE big.bin
printf 'head of the file' | dd of=big.bin conv=notrunc status=none
head -c 3000000 /dev/urandom | dd of=big.bin bs=1M seek=300 conv=notrunc status=none
printf 'middle' | dd of=big.bin bs=1 seek=100000000 conv=notrunc status=none
printf 'small\n' >small.txt
sum_x=$(sha256sum <big.bin)

# rss NAME CMD...: run with GNU time; ok if exit 0 and peak RSS < limit
rss() {
	local name=$1
	shift
	if [ ! -x /usr/bin/time ]; then
		t "$name" "$@"
		ok "# SKIP no /usr/bin/time to measure RSS"
		return
	fi
	/usr/bin/time -f '%M' -o "$SCRATCH/rss" "$@" >"$SCRATCH/.out" 2>"$SCRATCH/.err"
	RC=$?
	OUT=$(cat "$SCRATCH/.out")
	kib=$(tail -1 "$SCRATCH/rss")
	if [ $RC -eq 0 ]; then ok "$name"; else not_ok "$name" "exit $RC: $(cat "$SCRATCH/.err")"; fi
	if [ "$kib" -lt $LIMIT_KIB ]; then ok "... peak RSS $kib KiB"; else not_ok "... peak RSS $kib KiB" "limit $LIMIT_KIB KiB"; fi
}
sparse() { # file: ok if it occupies less than 64 MiB on disk
	local blocks
	blocks=$(stat -c %b "$1")
	if [ $((blocks * 512)) -lt $((64 << 20)) ]; then ok "$1 is still sparse ($((blocks / 2)) KiB on disk)"
	else not_ok "$1 is still sparse" "$((blocks / 2)) KiB on disk"; fi
}

rss "checkpoint create X (512 MiB sparse file)" "$DECREE" checkpoint create -m X
X=$OUT
t_match '*"path":"big.bin",*"size":536870912,"mode":"644"}*' "X stores big.bin whole" \
	D checkpoint show "$X" --json

# modify: new bytes inside, and the file grows (a hole at its end)
printf 'CHANGED' | dd of=big.bin bs=1 seek=20 conv=notrunc status=none
truncate -s $((SIZE + (64 << 20))) big.bin
sum_y=$(sha256sum <big.bin)
t "diff X vs tree" D checkpoint diff "$X"
same "... says binary files differ (not read into memory)" "$OUT" \
	"$(printf 'diff --git a/big.bin b/big.bin\nBinary files a/big.bin and b/big.bin differ')"
printf '%s\n' "$OUT" >"$SCRATCH/big.diff"
t_err "*binary change without content*" "... which apply refuses cleanly" 1 D apply -R "$SCRATCH/big.diff"

rss "restore X" "$DECREE" checkpoint restore "$X"
same "big.bin is byte-exact" "$(sha256sum <big.bin)" "$sum_x"
same "... with its size" "$(stat -c %s big.bin)" "$SIZE"
sparse big.bin

rss "undo" "$DECREE" undo
same "undo gives the changed bytes back" "$(sha256sum <big.bin)" "$sum_y"
sparse big.bin
rss "redo" "$DECREE" redo
same "redo gives X back" "$(sha256sum <big.bin)" "$sum_x"
rss "fsck re-hashes everything" "$DECREE" fsck

done_testing
