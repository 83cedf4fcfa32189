/*
 * fuzz_wal.c - libFuzzer target for the transaction log parser.
 *
 * Build with clang (UTIL = the .c files of src/lib/util):
 *   clang -g -O1 -fsanitize=fuzzer,address -Iinclude -Isrc/lib \
 *	-Isrc/lib/util fuzz/fuzz_wal.c src/lib/wal.c $UTIL -lcrypto -o fuzz_wal
 *   ./fuzz_wal -max_total_time=60 fuzz/corpus/wal
 * `make check` replays fuzz/corpus/wal through fuzz/replay.c.
 *
 * wal_parse() decides what recovery acts on, so beyond "no crash" the
 * target checks what recovery relies on, and aborts on a violation:
 *   - a bad header is DECREE_ECORRUPT with no records;
 *   - otherwise the records tile the valid prefix exactly, in order, from
 *     the end of the 32-byte header, each pointing into the input;
 *   - torn is true exactly when bytes follow the valid prefix;
 *   - parsing the valid prefix alone gives the same records, not torn
 *     (so cutting the torn tail, as wal_load does, is idempotent);
 *   - the valid prefix of a prefix: parsing the input cut one byte short
 *     of the valid prefix loses exactly the last record.
 */
#include "util/common.h"
#include "txn/wal.h"
#include "util/alloc.h"
#include "util/error.h"

#define WAL_HDR 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

static void same_records(const wal_record *a, size_t na, const wal_record *b,
			 size_t nb)
{
	check(na == nb);
	for (size_t i = 0; i < na; i++) {
		check(a[i].type == b[i].type && a[i].len == b[i].len);
		check(!a[i].len || !memcmp(a[i].data, b[i].data, a[i].len));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wal_record *recs = NULL, *again = NULL;
	size_t n = 7, n2 = 0, valid = 7, valid2 = 0, off = WAL_HDR;
	bool torn = true, torn2 = true;
	unsigned sum = 0;
	int r;

	r = wal_parse(&recs, &n, &valid, &torn, data, size);
	if (r < 0) {
		check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		check(recs == NULL && n == 0);
		check(r != DECREE_ECORRUPT || size < WAL_HDR ||
		      memcmp(data, "DECRWAL", 7) || data[7] != 0 ||
		      data[8] != 1 || data[9] || data[10] || data[11]);
		decree_error_clear();
		return 0;
	}
	check(size >= WAL_HDR && valid >= WAL_HDR && valid <= size);
	check(torn == (valid != size));
	check(n == 0 || recs != NULL);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = data + off;
		check(recs[i].data == p + 8);
		check(recs[i].len == (size_t)(p[0] | p[1] << 8 | p[2] << 16 |
					      (uint32_t)p[3] << 24));
		check(recs[i].type == (unsigned)(p[4] | p[5] << 8 | p[6] << 16 |
						 (uint32_t)p[7] << 24));
		for (size_t k = 0; k < recs[i].len; k++) /* ASan: within the
							    input */
			sum += recs[i].data[k];
		off += 16 + recs[i].len;
	}
	check(off == valid);

	/* the valid prefix alone: same records, nothing torn */
	check(wal_parse(&again, &n2, &valid2, &torn2, data, valid) == 0);
	check(!torn2 && valid2 == valid);
	same_records(recs, n, again, n2);
	decree_free(again);
	again = NULL;

	/* one byte short: the last record is torn, the others stay */
	if (n) {
		check(wal_parse(&again, &n2, &valid2, &torn2, data,
				valid - 1) == 0);
		check(torn2 && n2 == n - 1);
		check(valid2 == valid - 16 - recs[n - 1].len);
		same_records(recs, n - 1, again, n2);
		decree_free(again);
	}
	decree_free(recs);
	decree_error_clear();
	return (int)(sum & 0); /* keep the reads */
}
