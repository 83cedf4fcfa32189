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
 *   - it never fails on content (only out of memory);
 *   - a log of another version is recognised and nothing else is read;
 *   - the records lie inside the input, in file order, without overlap,
 *     from the end of the 40-byte header, and each one's checksum holds
 *     with the header's salt (recomputed here);
 *   - the bytes that are no record are counted exactly (skipped);
 *   - a complete plan has a valid header and its records 0..nplan-1
 *     back to back from the header;
 *   - parsing is deterministic, and parsing the records alone, cut just
 *     after the last one, finds the same records.
 */
#include "util/common.h"
#include "txn/wal.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/sha256.h"

#define WAL_HDR	 40
#define REC_OVER 20

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

static void same_records(const wal_contents *a, const wal_contents *b)
{
	check(a->nrecs == b->nrecs);
	for (size_t i = 0; i < a->nrecs; i++) {
		check(a->recs[i].type == b->recs[i].type &&
		      a->recs[i].seq == b->recs[i].seq &&
		      a->recs[i].len == b->recs[i].len);
		check(!a->recs[i].len ||
		      !memcmp(a->recs[i].data, b->recs[i].data,
			      a->recs[i].len));
	}
}

static uint64_t record_sum(const uint8_t *salt, const uint8_t *rec, size_t len)
{
	unsigned char hdr[20];
	sha256_ctx *c = sha256_new();
	oid out;

	check(c != NULL);
	memcpy(hdr, salt, 8);
	memcpy(hdr + 8, rec + 8, 4);  /* seq */
	memcpy(hdr + 12, rec + 4, 4); /* type */
	memcpy(hdr + 16, rec, 4);     /* len */
	sha256_update(c, hdr, sizeof(hdr));
	sha256_update(c, rec + 12, len);
	sha256_final(c, &out);
	sha256_free(c);
	return get_u64le(out.b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wal_contents c, again;
	size_t off = WAL_HDR, used = 0, end = 0;
	unsigned sum = 0;

	if (wal_parse(&c, data, size) < 0) {
		check(decree_error_last_code() == DECREE_ERROR);
		decree_error_clear();
		return 0;
	}
	if (c.other_version) {
		check(size >= 12 && !memcmp(data, "DECRWAL\0", 8));
		check(c.other_version != 2 && c.nrecs == 0 && !c.header_ok);
		wal_contents_release(&c);
		return 0;
	}
	check(!c.plan_complete || c.header_ok);
	check(!c.header_ok || size >= WAL_HDR);
	check(c.nrecs == 0 || (c.recs != NULL && size >= WAL_HDR + REC_OVER));
	for (size_t i = 0; i < c.nrecs; i++) {
		const uint8_t *p = c.recs[i].data - 12;
		check(p >= data + off); /* in order, no overlap */
		check(c.recs[i].data + c.recs[i].len + 8 <= data + size);
		check(c.recs[i].len == get_u32le(p));
		check(c.recs[i].type == get_u32le(p + 4));
		check(c.recs[i].seq == get_u32le(p + 8));
		check(get_u64le(p + 12 + c.recs[i].len) ==
		      record_sum(data + 16, p, c.recs[i].len));
		for (size_t k = 0; k < c.recs[i].len; k++) /* ASan: within
							      the input */
			sum += c.recs[i].data[k];
		off = (size_t)(p - data) + REC_OVER + c.recs[i].len;
		used += REC_OVER + c.recs[i].len;
		end = off;
	}
	check(c.skipped == (size > WAL_HDR ? size - WAL_HDR - used : 0));
	if (c.plan_complete) {
		size_t at = WAL_HDR;
		check(c.nrecs >= c.nplan);
		for (size_t i = 0; i < c.nplan; i++) {
			check(c.recs[i].seq == i &&
			      c.recs[i].data == data + at + 12);
			at += REC_OVER + c.recs[i].len;
		}
	}

	/* deterministic */
	check(wal_parse(&again, data, size) == 0);
	same_records(&c, &again);
	check(again.plan_complete == c.plan_complete &&
	      again.skipped == c.skipped);
	wal_contents_release(&again);

	/* cut right after the last record: the same records (the search
	 * budget only grows with the input, and less is searched) */
	if (c.nrecs && c.skipped == 0) {
		check(end == size);
	} else if (c.nrecs && end < size) {
		check(wal_parse(&again, data, end) == 0);
		if (again.nrecs == c.nrecs)
			same_records(&c, &again);
		wal_contents_release(&again);
	}
	wal_contents_release(&c);
	decree_error_clear();
	return (int)(sum & 0); /* keep the reads */
}
