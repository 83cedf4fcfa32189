/*
 * test_wal.c - the checksummed, salted record log.
 *
 * The properties recovery relies on, each checked exhaustively on a small
 * log: every truncation parses to a valid prefix of whole records with
 * torn=true; flipping any byte of a record invalidates that record and
 * all later ones (never an earlier one); records spliced from another log
 * (another salt) never validate; wal_create never reuses a file; wal_load
 * cuts the torn tail on disk so that the file matches what was acted on.
 * Random logs print their seed; DECREE_TEST_SEED=<n> replays.
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

#define WAL_HDR 32

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

/* Write a log of the records, syncing in random batches; return its bytes. */
static void write_log(buf *out, const char *path, const trec *v, size_t n)
{
	wal *w;

	assert_int_equal(wal_create(&w, path), 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(wal_append(w, v[i].type, v[i].data.ptr,
					    v[i].data.len),
				 0);
		if (rnd() % 3 == 0)
			assert_int_equal(wal_sync(w), 0);
	}
	assert_int_equal(wal_sync(w), 0);
	wal_close(w);
	buf_clear(out);
	assert_int_equal(fs_read_path(path, out), 0);
}

/* Records parsed from `data` must equal v[0..n). */
static void check_records(const wal_record *recs, size_t nrecs, const trec *v,
			  size_t n)
{
	assert_int_equal(nrecs, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(recs[i].type, v[i].type);
		assert_int_equal(recs[i].len, v[i].data.len);
		if (v[i].data.len)
			assert_memory_equal(recs[i].data, v[i].data.ptr,
					    v[i].data.len);
	}
}

/* End offsets of records in a log image, written as it is laid out. */
static void record_ends(size_t *ends, const trec *v, size_t n)
{
	size_t off = WAL_HDR;
	for (size_t i = 0; i < n; i++) {
		off += 4 + 4 + v[i].data.len + 8;
		ends[i] = off;
	}
}

/* Parse an exact-size copy so that ASan catches any overread. */
static int parse_copy(wal_record **recs, size_t *nrecs, size_t *valid,
		      bool *torn, const void *data, size_t len, void **copy_out)
{
	void *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, data, len);
	*copy_out = copy;
	return wal_parse(recs, nrecs, valid, torn, copy, len);
}

/* --- tests
 * ------------------------------------------------------------------------ */

static void test_roundtrip(void **state)
{
	fixture *f = *state;
	trec v[12];
	buf img = BUF_INIT, data = BUF_INIT;
	wal_record *recs;
	size_t nrecs, valid, ends[12];
	bool torn;

	rng_state = test_seed() ^ 0x1;
	make_records(v, 12);
	write_log(&img, f->path, v, 12);
	record_ends(ends, v, 12);
	assert_int_equal(img.len, ends[11]);
	assert_memory_equal(img.ptr, "DECRWAL\0\1\0\0\0\0\0\0\0", 16);

	assert_int_equal(
		wal_parse(&recs, &nrecs, &valid, &torn, img.ptr, img.len), 0);
	check_records(recs, nrecs, v, 12);
	assert_int_equal(valid, img.len);
	assert_false(torn);
	decree_free(recs);

	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path), 0);
	check_records(recs, nrecs, v, 12);
	decree_free(recs);

	/* a header-only log */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(access(f->path, F_OK), -1);
	write_log(&img, f->path, v, 0);
	assert_int_equal(img.len, WAL_HDR);
	assert_int_equal(
		wal_parse(&recs, &nrecs, &valid, &torn, img.ptr, img.len), 0);
	assert_int_equal(nrecs, 0);
	assert_int_equal(valid, WAL_HDR);
	assert_false(torn);
	decree_free(recs);
	/* removing a log that is gone is fine */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(wal_remove(f->path), 0);

	free_records(v, 12);
	buf_release(&img);
	buf_release(&data);
}

/* Records appended but never synced are not in the file. */
static void test_unsynced_not_durable(void **state)
{
	fixture *f = *state;
	wal *w;
	buf img = BUF_INIT;

	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "durable", 7), 0);
	assert_int_equal(wal_sync(w), 0);
	assert_int_equal(wal_append(w, 2, "pending", 7), 0);
	wal_close(w);
	assert_int_equal(fs_read_path(f->path, &img), 0);
	assert_int_equal(img.len, WAL_HDR + 16 + 7);
	/* a record longer than the limit is refused */
	assert_int_equal(wal_remove(f->path), 0);
	assert_int_equal(wal_create(&w, f->path), 0);
	assert_int_equal(wal_append(w, 1, "", (64u << 20) + 1),
			 DECREE_EINVALID);
	wal_close(w);
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
	write_log(&img, f->path, v, 8);
	record_ends(ends, v, 8);
	for (size_t len = 0; len <= img.len; len++) {
		wal_record *recs;
		size_t nrecs, valid, whole = 0;
		bool torn;
		void *copy;
		int r = parse_copy(&recs, &nrecs, &valid, &torn, img.ptr, len,
				   &copy);
		if (len < WAL_HDR) {
			assert_int_equal(r, DECREE_ECORRUPT);
			free(copy);
			continue;
		}
		assert_int_equal(r, 0);
		while (whole < 8 && ends[whole] <= len)
			whole++;
		if (nrecs != whole)
			fail_msg("length %zu: %zu records, want %zu", len,
				 nrecs, whole);
		check_records(recs, nrecs, v, whole);
		assert_int_equal(valid, whole ? ends[whole - 1] : WAL_HDR);
		assert_true(torn == (len != valid));
		decree_free(recs);
		free(copy);
	}
	free_records(v, 8);
	buf_release(&img);
}

static void test_every_flip(void **state)
{
	fixture *f = *state;
	trec v[6];
	buf img = BUF_INIT;
	size_t ends[6];

	rng_state = test_seed() ^ 0x3;
	make_records(v, 6);
	write_log(&img, f->path, v, 6);
	record_ends(ends, v, 6);
	for (size_t pos = 0; pos < img.len; pos++) {
		for (unsigned bit = 0; bit < 8; bit += 3) {
			wal_record *recs;
			size_t nrecs, valid, owner = 0;
			bool torn;
			void *copy;
			int r;
			img.ptr[pos] ^= (char)(1u << bit);
			r = parse_copy(&recs, &nrecs, &valid, &torn, img.ptr,
				       img.len, &copy);
			img.ptr[pos] ^= (char)(1u << bit);
			if (pos < 12) { /* magic and version */
				assert_int_equal(r, DECREE_ECORRUPT);
				free(copy);
				continue;
			}
			assert_int_equal(r, 0);
			if (pos < WAL_HDR) {
				/* the salt seeds the chain: every record dies;
				 * the reserved words are not covered */
				if (pos >= 16 && pos < 24)
					assert_int_equal(nrecs, 0);
				else
					assert_int_equal(nrecs, 6);
			} else {
				while (ends[owner] <= pos)
					owner++;
				if (nrecs != owner)
					fail_msg(
						"flip at %zu (record %zu): %zu records valid",
						pos, owner, nrecs);
				check_records(recs, nrecs, v, owner);
				assert_true(torn);
				assert_int_equal(valid, owner ? ends[owner - 1]
							      : WAL_HDR);
			}
			decree_free(recs);
			free(copy);
		}
	}
	free_records(v, 6);
	buf_release(&img);
}

/* Same records, another log: another salt; nothing carries over. */
static void test_other_salt(void **state)
{
	fixture *f = *state;
	trec v[4];
	buf a = BUF_INIT, b = BUF_INIT, mix = BUF_INIT;
	wal_record *recs;
	size_t nrecs, valid;
	bool torn;

	rng_state = test_seed() ^ 0x4;
	make_records(v, 4);
	write_log(&a, f->path, v, 4);
	assert_int_equal(wal_remove(f->path), 0);
	write_log(&b, f->path, v, 4);
	assert_int_equal(a.len, b.len);
	assert_memory_not_equal(a.ptr + 16, b.ptr + 16, 8); /* salts differ */

	/* header of a, records of b */
	buf_put(&mix, a.ptr, WAL_HDR);
	buf_put(&mix, b.ptr + WAL_HDR, b.len - WAL_HDR);
	assert_int_equal(
		wal_parse(&recs, &nrecs, &valid, &torn, mix.ptr, mix.len), 0);
	assert_int_equal(nrecs, 0);
	assert_true(torn);
	assert_int_equal(valid, WAL_HDR);
	decree_free(recs);

	/* a stale tail from another log after a's valid records */
	buf_clear(&mix);
	buf_put(&mix, a.ptr, a.len);
	buf_put(&mix, b.ptr + WAL_HDR, b.len - WAL_HDR);
	assert_int_equal(
		wal_parse(&recs, &nrecs, &valid, &torn, mix.ptr, mix.len), 0);
	check_records(recs, nrecs, v, 4);
	assert_int_equal(valid, a.len);
	assert_true(torn);
	decree_free(recs);

	/* a's first two records, then b's last two (same bytes, wrong chain) */
	{
		size_t ends[4];
		record_ends(ends, v, 4);
		buf_clear(&mix);
		buf_put(&mix, a.ptr, ends[1]);
		buf_put(&mix, b.ptr + ends[1], b.len - ends[1]);
		assert_int_equal(wal_parse(&recs, &nrecs, &valid, &torn,
					   mix.ptr, mix.len),
				 0);
		assert_int_equal(nrecs, 2);
		assert_true(torn);
		decree_free(recs);
	}
	/* a record moved out of its place within one log fails too */
	{
		size_t ends[4];
		record_ends(ends, v, 4);
		buf_clear(&mix);
		buf_put(&mix, a.ptr, WAL_HDR);
		buf_put(&mix, a.ptr + ends[0], ends[1] - ends[0]); /* record 1
								      first */
		assert_int_equal(wal_parse(&recs, &nrecs, &valid, &torn,
					   mix.ptr, mix.len),
				 0);
		assert_int_equal(nrecs, 0);
		decree_free(recs);
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
	assert_int_equal(img.len, WAL_HDR + 16 + 5);
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

static void test_load_cuts_tail(void **state)
{
	fixture *f = *state;
	trec v[5];
	buf img = BUF_INIT, data = BUF_INIT, after = BUF_INIT;
	size_t ends[5];
	wal_record *recs;
	size_t nrecs;
	struct stat st;

	rng_state = test_seed() ^ 0x5;
	make_records(v, 5);
	write_log(&img, f->path, v, 5);
	record_ends(ends, v, 5);

	/* torn in the middle of record 3 */
	assert_int_equal(truncate(f->path, (off_t)(ends[2] + 5)), 0);
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path), 0);
	check_records(recs, nrecs, v, 3);
	decree_free(recs);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, ends[2]);
	assert_int_equal(fs_read_path(f->path, &after), 0);
	assert_memory_equal(after.ptr, img.ptr, ends[2]);

	/* loading again changes nothing */
	buf_clear(&data);
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path), 0);
	assert_int_equal(nrecs, 3);
	decree_free(recs);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, ends[2]);

	/* garbage appended after whole records */
	{
		int fd = open(f->path, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		static const char junk[] = "\x10\0\0\0garbage-garbage-garbage";
		assert_int_equal(fs_write_all(fd, junk, sizeof(junk) - 1), 0);
		close(fd);
	}
	buf_clear(&data);
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path), 0);
	assert_int_equal(nrecs, 3);
	decree_free(recs);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, ends[2]);

	/* a damaged middle record cuts everything after it */
	assert_int_equal(wal_remove(f->path), 0);
	write_log(&img, f->path, v, 5);
	{
		int fd = open(f->path, O_RDWR);
		unsigned char c;
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &c, 1, (off_t)ends[0] + 9), 1);
		c ^= 0x40;
		assert_int_equal(pwrite(fd, &c, 1, (off_t)ends[0] + 9), 1);
		close(fd);
	}
	buf_clear(&data);
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path), 0);
	check_records(recs, nrecs, v, 1);
	decree_free(recs);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, ends[0]);

	/* a bad header is an error and the file is left alone */
	{
		int fd = open(f->path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "X", 1, 0), 1);
		close(fd);
	}
	buf_clear(&data);
	recs = NULL;
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path),
			 DECREE_ECORRUPT);
	decree_free(recs);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, ends[0]);

	/* a missing log */
	assert_int_equal(unlink(f->path), 0);
	buf_clear(&data);
	assert_int_equal(wal_load(&data, &recs, &nrecs, f->path),
			 DECREE_ENOTFOUND);

	free_records(v, 5);
	buf_release(&img);
	buf_release(&data);
	buf_release(&after);
}

/* A failing write or fsync during wal_create leaves no file behind. */
static const char *fault_step;
static int fault_n, fault_calls;

static int fault_hook(const char *step)
{
	if (strcmp(step, fault_step))
		return 0;
	return ++fault_calls == fault_n ? EIO : 0;
}

static void test_create_faults(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *step;
		int n;
		bool create_fails;
	} cases[] = {
		{ "write", 1, true },
		{ "fsync", 1, true }, /* the log */
		{ "fsync", 2, true }, /* its directory */
		{ "fsync", 3, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		wal *w = NULL;
		int r;
		fault_step = cases[i].step;
		fault_n = cases[i].n;
		fault_calls = 0;
		fs_fault_hook = fault_hook;
		r = wal_create(&w, f->path);
		fs_fault_hook = NULL;
		if (cases[i].create_fails) {
			if (r >= 0)
				fail_msg("%s #%d: wal_create succeeded",
					 cases[i].step, cases[i].n);
			assert_null(w);
			assert_int_equal(access(f->path, F_OK), -1);
		} else {
			assert_int_equal(r, 0);
			wal_close(w);
			assert_int_equal(wal_remove(f->path), 0);
		}
	}
	/* wal_sync reports a failing write and fsync */
	{
		wal *w;
		assert_int_equal(wal_create(&w, f->path), 0);
		assert_int_equal(wal_append(w, 1, "x", 1), 0);
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
		cmocka_unit_test_setup_teardown(test_unsynced_not_durable,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_truncation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_every_flip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_other_salt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_refuses_existing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_cuts_tail, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_faults, setup,
						teardown),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
