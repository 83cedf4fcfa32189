/*
 * test_wal.c - the individually checksummed, salted record log.
 *
 * The properties recovery relies on, each checked exhaustively on a small
 * log: nothing is at the log's path before its plan is durable (and no
 * temp file is left whatever fails); every truncation keeps exactly the
 * whole records before the cut and says whether the plan is complete;
 * flipping any byte loses exactly the record it hits (the records after
 * it are still found, the plan is incomplete when the hit is in it);
 * records of another log (another salt) or out of their place never make
 * a plan; parsing changes nothing on disk, never fails on content, and
 * is bounded on hostile input.  Random logs print their seed;
 * DECREE_TEST_SEED=<n> replays.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "txn/wal.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include <dirent.h>
#include <ftw.h>
#include <time.h>

#define WAL_HDR	 40
#define REC_OVER 20 /* len, type, seq, checksum */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static uint64_t test_seed(void)
{
	return testutil_seed("test_wal");
}

typedef testutil_fixture fixture;

static int setup(void **state)
{
	return testutil_scratch_setup(state, "wal", "txn.wal");
}

static int teardown(void **state)
{
	return testutil_scratch_teardown(state);
}

/* One test record: type and payload. */
typedef struct {
	unsigned type;
	buf data;
} trec;

static void make_records(trec *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = i == 0 ? 0 : i == 1 ? 1 : (size_t)(rnd() % 200);
		v[i].type = i == 2 ? 0xffffffffu : (unsigned)(1 + rnd() % 5);
		buf_init(&v[i].data);
		for (size_t k = 0; k < len; k++)
			buf_putc(&v[i].data, (char)rnd());
	}
}

static void free_records(trec *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_release(&v[i].data);
}

/* Write a log: the first `nplan` records are the plan (first sync), the
 * rest follow in random batches; return its bytes. */
static void write_log(buf *out, const char *path, const trec *v, size_t n,
		      size_t nplan)
{
	wal *w;

	assert_int_equal(wal_create(&w, path), 0);
	for (size_t i = 0; i < n; i++) {
		if (i == nplan)
			assert_int_equal(wal_sync(w), 0);
		assert_int_equal(wal_append(w, v[i].type, v[i].data.ptr,
					    v[i].data.len),
				 0);
		if (i > nplan && rnd() % 3 == 0)
			assert_int_equal(wal_sync(w), 0);
	}
	assert_int_equal(wal_sync(w), 0);
	wal_close(w);
	buf_clear(out);
	assert_int_equal(fs_read_path(path, out), 0);
}

/* The records of `c` must be v[i] for each i in `want` (a bitmask). */
static void check_records(const wal_contents *c, const trec *v, size_t n,
			  uint64_t want)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(want & (1ull << i)))
			continue;
		if (k >= c->nrecs)
			fail_msg("record %zu missing (%zu found)", i, c->nrecs);
		assert_int_equal(c->recs[k].seq, i);
		assert_int_equal(c->recs[k].type, v[i].type);
		assert_int_equal(c->recs[k].len, v[i].data.len);
		if (v[i].data.len)
			assert_memory_equal(c->recs[k].data, v[i].data.ptr,
					    v[i].data.len);
		k++;
	}
	if (k != c->nrecs)
		fail_msg("%zu records found, %zu expected", c->nrecs, k);
}

/* End offsets of records in a log image, written as it is laid out. */
static void record_ends(size_t *ends, const trec *v, size_t n)
{
	size_t off = WAL_HDR;
	for (size_t i = 0; i < n; i++) {
		off += REC_OVER + v[i].data.len;
		ends[i] = off;
	}
}

/* Parse an exact-size copy so that ASan catches any overread. */
static void parse_copy(wal_contents *c, const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, data, len);
	assert_int_equal(wal_parse(c, copy, len), 0);
	/* the records point into the copy: check them before it goes */
	for (size_t i = 0; i < c->nrecs; i++)
		assert_true((const unsigned char *)c->recs[i].data >=
				    (const unsigned char *)copy &&
			    (const unsigned char *)c->recs[i].data +
					    c->recs[i].len <=
				    (const unsigned char *)copy + len);
	/* keep c usable: point it at the original bytes */
	for (size_t i = 0; i < c->nrecs; i++)
		c->recs[i].data =
			(const unsigned char *)data +
			(c->recs[i].data - (const unsigned char *)copy);
	free(copy);
}

static uint64_t all_but(size_t n, size_t hole)
{
	uint64_t m = n >= 64 ? ~0ull : (1ull << n) - 1;
	return hole < 64 ? m & ~(1ull << hole) : m;
}

/* Temp files of the log in the fixture's directory. */
static size_t temps_in(const fixture *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strstr(de->d_name, ".tmp-") != NULL;
	closedir(d);
	return n;
}

/* --- tests
 * ------------------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	fixture *f = *state;
	trec v[12];
	buf img = BUF_INIT, data = BUF_INIT;
	wal_contents c;
	size_t ends[12];

	rng_state = test_seed() ^ 0x1;
	make_records(v, 12);
	write_log(&img, f->path, v, 12, 9);
	record_ends(ends, v, 12);
	assert_int_equal(img.len, ends[11]);
	assert_memory_equal(img.ptr, "DECRWAL\0\2\0\0\0\11\0\0\0", 16);
	assert_int_equal(temps_in(f), 0);

	parse_copy(&c, img.ptr, img.len);
	check_records(&c, v, 12, all_but(12, 64));
	assert_true(c.header_ok);
	assert_true(c.plan_complete);
	assert_int_equal(c.nplan, 9);
	assert_int_equal(c.skipped, 0);
	assert_int_equal(c.other_version, 0);
	wal_contents_release(&c);

	assert_int_equal(wal_load(&data, &c, f->path), 0);
	check_records(&c, v, 12, all_but(12, 64));
	wal_contents_release(&c);

	/* a log with an empty plan */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	write_log(&img, f->path, v, 0, 0);
	assert_int_equal(img.len, WAL_HDR);
	parse_copy(&c, img.ptr, img.len);
	assert_int_equal(c.nrecs, 0);
	assert_true(c.plan_complete);
	wal_contents_release(&c);
	/* removing a log that is gone is fine */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(wal_remove(f->path), 0);

	free_records(v, 12);
	buf_release(&img);
	buf_release(&data);
}

/* Before its first sync a log is a temp file; closing it removes that. */
static void test_nothing_at_path_before_sync(void **state)
{
	fixture *f = *state;
	wal *w;
	buf img = BUF_INIT;
	char stale[PATH_MAX + 32];

	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "plan", 4), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(temps_in(f), 1);
	wal_close(w);
	assert_int_equal(access(f->path, F_OK), -1);
	assert_int_equal(temps_in(f), 0);

	/* appended after the last sync: not in the file */
	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "durable", 7), 0);
	assert_int_equal(wal_sync(w), 0);
	assert_int_equal(wal_synced_length(w), WAL_HDR + REC_OVER + 7);
	assert_int_equal(wal_append(w, 2, "pending", 7), 0);
	wal_close(w);
	assert_int_equal(fs_read_path(f->path, &img), 0);
	assert_int_equal(img.len, WAL_HDR + REC_OVER + 7);

	/* cut back after a sync */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "plan", 4), 0);
	assert_int_equal(wal_sync(w), 0);
	assert_int_equal(wal_append(w, 5, "", 0), 0);
	assert_int_equal(wal_sync(w), 0);
	assert_int_equal(wal_truncate(w, WAL_HDR + REC_OVER + 4), 0);
	wal_close(w);
	buf_clear(&img);
	assert_int_equal(fs_read_path(f->path, &img), 0);
	assert_int_equal(img.len, WAL_HDR + REC_OVER + 4);
	assert_int_equal(wal_remove(f->path), 0);

	/* a record longer than the limit is refused */
	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "", (64u << 20) + 1),
			 DECREE_EINVALID);
	wal_close(w);

	/* the temp of a process that died before its first sync */
	snprintf(stale, sizeof(stale), "%s/.txn.wal.tmp-0123456789ab", f->dir);
	assert_int_equal(fs_write_atomic(stale, "x", 1, 0644), 0);
	assert_int_equal(temps_in(f), 1);
	assert_int_equal(wal_remove_temps(f->path), 0);
	assert_int_equal(temps_in(f), 0);
	buf_release(&img);
}

static void test_every_truncation(void **state)
{
	fixture *f = *state;
	trec v[8];
	buf img = BUF_INIT;
	size_t ends[8];

	rng_state = test_seed() ^ 0x2;
	make_records(v, 8);
	write_log(&img, f->path, v, 8, 6);
	record_ends(ends, v, 8);
	for (size_t len = 0; len <= img.len; len++) {
		wal_contents c;
		size_t whole = 0;
		parse_copy(&c, img.ptr, len);
		while (whole < 8 && ends[whole] <= len)
			whole++;
		if (c.nrecs != whole)
			fail_msg("length %zu: %zu records, want %zu", len,
				 c.nrecs, whole);
		check_records(&c, v, 8, all_but(whole, 64));
		assert_true(c.header_ok == (len >= WAL_HDR));
		if (c.plan_complete != (len >= ends[5]))
			fail_msg("length %zu: plan_complete %d", len,
				 c.plan_complete);
		wal_contents_release(&c);
	}
	free_records(v, 8);
	buf_release(&img);
}

/* Any byte flipped loses exactly the record it hits. */
static void test_every_flip(void **state)
{
	fixture *f = *state;
	trec v[7];
	buf img = BUF_INIT;
	size_t ends[7];

	rng_state = test_seed() ^ 0x3;
	make_records(v, 7);
	write_log(&img, f->path, v, 7, 5);
	record_ends(ends, v, 7);
	for (size_t pos = 0; pos < img.len; pos++) {
		for (unsigned bit = 0; bit < 8; bit += 3) {
			wal_contents c;
			size_t owner = 0;
			img.ptr[pos] ^= (char)(1u << bit);
			parse_copy(&c, img.ptr, img.len);
			assert_int_equal(c.other_version, 0);
			if (pos < WAL_HDR) {
				/* a damaged header: the plan cannot be
				 * known; the salt's records survive it */
				assert_false(c.header_ok);
				assert_false(c.plan_complete);
				if (pos >= 16 && pos < 24)
					assert_int_equal(c.nrecs, 0);
				else
					check_records(&c, v, 7, all_but(7, 64));
			} else {
				while (ends[owner] <= pos)
					owner++;
				check_records(&c, v, 7, all_but(7, owner));
				assert_true(c.header_ok);
				if (c.plan_complete != (owner >= 5))
					fail_msg("flip at %zu (record %zu): "
						 "plan_complete %d",
						 pos, owner, c.plan_complete);
				assert_true(c.skipped > 0);
			}
			img.ptr[pos] ^= (char)(1u << bit);
			wal_contents_release(&c);
		}
	}
	/* a zeroed run over records 1-3: the end of 1, all of 2, and the
	 * start of 3 up to the low byte of its type, which is never 0 (its
	 * length alone may be 0 already: DECREE_TEST_SEED=18611889194883) */
	{
		wal_contents c;
		memset(img.ptr + ends[1] - 3, 0, ends[2] - ends[1] + 3 + 5);
		parse_copy(&c, img.ptr, img.len);
		check_records(&c, v, 7, all_but(7, 64) & ~(7ull << 1));
		wal_contents_release(&c);
	}
	free_records(v, 7);
	buf_release(&img);
}

/*
 * A flipped bit in a record's length that makes it point exactly at a
 * later genuine record: the records in between are intact and must all
 * be read (found by DECREE_TEST_SEED=133004047893446 in test_every_flip).
 * Record 0 has length 0; its length flipped to 64 points past records
 * 1-3 (21 + 22 + 21 bytes) at record 4.
 */
static void test_length_flip_skips_nothing(void **state)
{
	fixture *f = *state;
	static const size_t lens[5] = { 0, 1, 2, 1, 5 };
	trec v[5];
	buf img = BUF_INIT;
	wal_contents c;

	for (size_t i = 0; i < 5; i++) {
		v[i].type = 1 + (unsigned)i;
		buf_init(&v[i].data);
		for (size_t k = 0; k < lens[i]; k++)
			buf_putc(&v[i].data, (char)('a' + k));
	}
	assert_int_equal(REC_OVER + 1 + REC_OVER + 2 + REC_OVER + 1, 64);
	write_log(&img, f->path, v, 5, 5);
	img.ptr[WAL_HDR] ^= 64; /* record 0's length: 0 -> 64 */
	parse_copy(&c, img.ptr, img.len);
	check_records(&c, v, 5, all_but(5, 0));
	wal_contents_release(&c);
	free_records(v, 5);
	buf_release(&img);
}

/* Same records, another log: another salt; nothing carries over. */
static void test_other_salt(void **state)
{
	fixture *f = *state;
	trec v[4];
	buf a = BUF_INIT, b = BUF_INIT, mix = BUF_INIT;
	wal_contents c;
	size_t ends[4];

	rng_state = test_seed() ^ 0x4;
	make_records(v, 4);
	write_log(&a, f->path, v, 4, 4);
	assert_int_equal(wal_remove(f->path), 0);
	write_log(&b, f->path, v, 4, 4);
	record_ends(ends, v, 4);
	assert_int_equal(a.len, b.len);
	assert_memory_not_equal(a.ptr + 16, b.ptr + 16, 8); /* salts differ */

	/* header of a, records of b */
	buf_put(&mix, a.ptr, WAL_HDR);
	buf_put(&mix, b.ptr + WAL_HDR, b.len - WAL_HDR);
	parse_copy(&c, mix.ptr, mix.len);
	assert_int_equal(c.nrecs, 0);
	assert_false(c.plan_complete);
	assert_int_equal(c.skipped, mix.len - WAL_HDR);
	wal_contents_release(&c);

	/* a stale tail from another log after a's records */
	buf_clear(&mix);
	buf_put(&mix, a.ptr, a.len);
	buf_put(&mix, b.ptr + WAL_HDR, b.len - WAL_HDR);
	parse_copy(&c, mix.ptr, mix.len);
	check_records(&c, v, 4, all_but(4, 64));
	assert_true(c.plan_complete);
	wal_contents_release(&c);

	/* a's first two records, then b's last two */
	buf_clear(&mix);
	buf_put(&mix, a.ptr, ends[1]);
	buf_put(&mix, b.ptr + ends[1], b.len - ends[1]);
	parse_copy(&c, mix.ptr, mix.len);
	check_records(&c, v, 4, 3);
	assert_false(c.plan_complete);
	wal_contents_release(&c);

	/* a record out of its place is valid, but makes no plan */
	buf_clear(&mix);
	buf_put(&mix, a.ptr, WAL_HDR);
	buf_put(&mix, a.ptr + ends[0], ends[1] - ends[0]); /* record 1 */
	buf_put(&mix, a.ptr + WAL_HDR, ends[0] - WAL_HDR); /* record 0 */
	buf_put(&mix, a.ptr + ends[1], a.len - ends[1]);
	parse_copy(&c, mix.ptr, mix.len);
	assert_int_equal(c.nrecs, 4);
	assert_int_equal(c.recs[0].seq, 1);
	assert_false(c.plan_complete);
	wal_contents_release(&c);

	/* a log of another version is recognised, not read */
	{
		unsigned char v1[64];
		memset(v1, 0, sizeof(v1));
		memcpy(v1, "DECRWAL\0\1\0\0\0", 12);
		parse_copy(&c, v1, sizeof(v1));
		assert_int_equal(c.other_version, 1);
		assert_int_equal(c.nrecs, 0);
		wal_contents_release(&c);
	}
	free_records(v, 4);
	buf_release(&a);
	buf_release(&b);
	buf_release(&mix);
}

static void test_create_refuses_existing(void **state)
{
	fixture *f = *state;
	wal *w = (wal *)(uintptr_t)1;
	buf img = BUF_INIT;
	char link[PATH_MAX + 16];

	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 5, "first", 5), 0);
	assert_int_equal(wal_sync(w), 0);
	wal_close(w);
	w = (wal *)(uintptr_t)1;
	assert_int_equal(wal_create(&w, f->path), DECREE_EEXISTS);
	assert_null(w);
	assert_non_null(strstr(decree_error_last(), "txn.wal"));
	/* the existing log is untouched */
	assert_int_equal(fs_read_path(f->path, &img), 0);
	assert_int_equal(img.len, WAL_HDR + REC_OVER + 5);
	/* a dangling symlink in its place is not followed */
	snprintf(link, sizeof(link), "%s/link.wal", f->dir);
	assert_int_equal(symlink("nowhere.wal", link), 0);
	assert_int_equal(wal_create(&w, link), DECREE_EEXISTS);
	{
		char target[PATH_MAX + 16];
		snprintf(target, sizeof(target), "%s/nowhere.wal", f->dir);
		assert_int_equal(access(target, F_OK), -1);
	}
	/* a missing directory is a plain error */
	{
		char bad[PATH_MAX + 32];
		snprintf(bad, sizeof(bad), "%s/missing/txn.wal", f->dir);
		assert_int_equal(wal_create(&w, bad), DECREE_ERROR);
	}
	buf_release(&img);
}

/* Reading never changes the file: a log that cannot be read whole must
 * stay exactly as it is. */
static void test_load_changes_nothing(void **state)
{
	fixture *f = *state;
	trec v[5];
	buf img = BUF_INIT, data = BUF_INIT, after = BUF_INIT;
	size_t ends[5];
	wal_contents c;

	rng_state = test_seed() ^ 0x5;
	make_records(v, 5);
	write_log(&img, f->path, v, 5, 5);
	record_ends(ends, v, 5);
	assert_int_equal(truncate(f->path, (off_t)(ends[2] + 5)), 0);
	assert_int_equal(wal_load(&data, &c, f->path), 0);
	check_records(&c, v, 5, 7);
	assert_false(c.plan_complete);
	wal_contents_release(&c);
	assert_int_equal(fs_read_path(f->path, &after), 0);
	assert_int_equal(after.len, ends[2] + 5);
	assert_memory_equal(after.ptr, img.ptr, ends[2] + 5);

	/* a missing log */
	assert_int_equal(unlink(f->path), 0);
	buf_clear(&data);
	assert_int_equal(wal_load(&data, &c, f->path), DECREE_ENOTFOUND);

	free_records(v, 5);
	buf_release(&img);
	buf_release(&data);
	buf_release(&after);
}

/* Hostile images: every offset looks like the start of a huge record.
 * Parsing must stay bounded (a few seconds at worst, not hours). */
static void test_hostile_bounded(void **state)
{
	const size_t len = 1u << 20;
	unsigned char *p = malloc(len);
	wal_contents c;
	time_t t0 = time(NULL);

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < len; i += 4) {
		p[i] = 0;
		p[i + 1] = 0;
		p[i + 2] = 8; /* len 512 KiB at every 4th offset */
		p[i + 3] = 0;
	}
	memcpy(p, "DECRWAL\0\2\0\0\0", 12);
	assert_int_equal(wal_parse(&c, p, len), 0);
	assert_int_equal(c.nrecs, 0);
	assert_int_equal(c.skipped, len - WAL_HDR);
	wal_contents_release(&c);
	memset(p, 0, len);
	assert_int_equal(wal_parse(&c, p, len), 0);
	assert_int_equal(c.nrecs, 0);
	wal_contents_release(&c);
	assert_true(time(NULL) - t0 < 30);
	free(p);
}

/* A failing step of the first sync leaves nothing at the path and no
 * temp file (except a failing directory fsync: the log is there). */
static const char *fault_step;
static int fault_n, fault_calls;

static int fault_hook(const char *step)
{
	if (strcmp(step, fault_step))
		return 0;
	return ++fault_calls == fault_n ? EIO : 0;
}

static void test_sync_faults(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *step;
		int n;
		bool at_path;
	} cases[] = {
		{ "open", 1, false },
		{ "write", 1, false },
		{ "fsync", 1, false }, /* the log */
		{ "rename", 1, false },
		{ "fsync", 2, true }, /* its directory */
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		wal *w = NULL;
		int r;
		fault_step = cases[i].step;
		fault_n = cases[i].n;
		fault_calls = 0;
		fs_fault_hook = fault_hook;
		r = wal_create(&w, f->path);
		if (r == 0) {
			assert_int_equal(wal_append(w, 1, "x", 1), 0);
			r = wal_sync(w);
			wal_close(w);
		}
		fs_fault_hook = NULL;
		if (r >= 0)
			fail_msg("%s #%d: no failure", cases[i].step,
				 cases[i].n);
		assert_int_equal(access(f->path, F_OK) == 0, cases[i].at_path);
		assert_int_equal(temps_in(f), 0);
		assert_int_equal(wal_remove(f->path), 0);
	}
	/* a later wal_sync reports a failing write and fsync */
	{
		wal *w;
		assert_int_equal(wal_create(&w, f->path), 0);
		assert_int_equal(wal_append(w, 1, "x", 1), 0);
		assert_int_equal(wal_sync(w), 0);
		assert_int_equal(wal_append(w, 2, "y", 1), 0);
		fault_step = "write";
		fault_n = 1;
		fault_calls = 0;
		fs_fault_hook = fault_hook;
		assert_true(wal_sync(w) < 0);
		fault_step = "fsync";
		fault_calls = 0;
		assert_true(wal_sync(w) < 0);
		fs_fault_hook = NULL;
		wal_close(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_nothing_at_path_before_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_truncation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_every_flip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_length_flip_skips_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_salt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_refuses_existing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_changes_nothing,
						setup, teardown),
		cmocka_unit_test(test_hostile_bounded),
		cmocka_unit_test_setup_teardown(test_sync_faults, setup,
						teardown),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
