/*
 * test_oplog.c - the undo/redo history file and its entry codec.
 *
 * Entries are encoded and decoded at random (seeded) and compared field
 * by field; the file is damaged at every byte and truncated at every
 * length: oplog_load must refuse it with DECREE_ECORRUPT (never a crash,
 * never a leak), and oplog_load_all must contain the damage: the entry
 * hit is flagged damaged, every other entry reads as it was, a save
 * writes the damaged bytes back as they were (still damaged), and
 * dropping the damaged entries leaves exactly the intact ones.  Paths
 * that would let a damaged or hostile history write outside the root
 * ("..", absolute, ".git/x", empty components) are refused on decode even
 * when the checksum is right.  Version 1 files are still read.  A history
 * read for an update (only the tops decoded, the rest kept as bytes) gives
 * after a push or a move exactly what the full reading gives, damage
 * included.
 * Random tests print their seed; DECREE_TEST_SEED=<n> replays.
 */
#include "util/common.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include "store/oplog.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/snap.h"

#include <ftw.h>
#include <time.h>

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return testutil_rnd(&rng_state);
}

static uint64_t test_seed(void)
{
	return testutil_seed("test_oplog");
}

/* A new inode each time: truncating in place makes ext4 flush on close. */
static void write_raw(const char *path, const void *data, size_t len)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fs_write_all(fd, data, len), 0);
	close(fd);
}

typedef testutil_fixture fixture;

static int setup(void **state)
{
	return testutil_scratch_setup(state, "oplog", "oplog");
}

static int teardown(void **state)
{
	return testutil_scratch_teardown(state);
}

/* --- random entries
 * ------------------------------------------------------------------ */

static char *rnd_str(size_t maxlen, bool path)
{
	static const char *const comps[] = {
		"a",	    "src",	"x.c",	"...",	      ".hidden",
		"dir name", "\xc3\xa9", "gitx", ".gitignore", "b"
	};
	buf b = BUF_INIT;
	size_t n = 1 + rnd() % 4;

	if (path) {
		for (size_t i = 0; i < n; i++) {
			if (i)
				buf_putc(&b, '/');
			buf_puts(&b, comps[rnd() % ARRAY_SIZE(comps)]);
		}
	} else {
		size_t len = rnd() % (maxlen + 1);
		for (size_t i = 0; i < len; i++)
			buf_putc(&b, (char)(' ' + rnd() % 95));
	}
	return buf_detach(&b, NULL);
}

static void rnd_entry(oplog_entry *e)
{
	static const uint32_t modes[] = { MODE_FILE, MODE_EXEC, MODE_LINK, 0,
					  0777 };

	memset(e, 0, sizeof(*e));
	e->kind = (unsigned)(1 + rnd() % 3);
	for (int i = 0; i < 16; i++)
		e->id[i] = "0123456789abcdef"[rnd() % 16];
	e->id[16] = '\0';
	e->time_ns = (int64_t)rnd();
	e->session = rnd() % 3 ? rnd_str(40, false) : NULL;
	e->what = rnd() % 4 ? rnd_str(80, false) : NULL;
	/* "" has no NULL form distinct from absent: it reads back as NULL */
	if (e->session && !*e->session) {
		free(e->session);
		e->session = NULL;
	}
	if (e->what && !*e->what) {
		free(e->what);
		e->what = NULL;
	}
	e->n = (size_t)(rnd() % 6);
	e->changes = calloc(e->n ? e->n : 1, sizeof(txn_change));
	for (size_t i = 0; i < e->n; i++) {
		txn_change *c = &e->changes[i];
		c->path = rnd_str(0, true);
		c->has_old = rnd() % 2;
		c->has_new = !c->has_old || rnd() % 2;
		c->old_mode = modes[rnd() % ARRAY_SIZE(modes)];
		c->new_mode = modes[rnd() % ARRAY_SIZE(modes)];
		c->old_size = rnd();
		c->new_size = rnd() % 1000;
		for (int k = 0; k < SHA256_LEN; k++) {
			c->old_id.b[k] = (unsigned char)rnd();
			c->new_id.b[k] = (unsigned char)rnd();
		}
	}
}

/* Entries built here use malloc'ed strings; free them likewise. */
static void free_entry(oplog_entry *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->changes[i].path);
	free(e->changes);
	free(e->session);
	free(e->what);
	memset(e, 0, sizeof(*e));
}

static void str_eq(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void assert_entry_equal(const oplog_entry *a, const oplog_entry *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_string_equal(a->id, b->id);
	assert_int_equal(a->time_ns, b->time_ns);
	str_eq(a->session, b->session);
	str_eq(a->what, b->what);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		const txn_change *x = &a->changes[i], *y = &b->changes[i];
		assert_string_equal(x->path, y->path);
		assert_int_equal(x->has_old, y->has_old);
		assert_int_equal(x->has_new, y->has_new);
		assert_int_equal(x->old_mode, y->old_mode);
		assert_int_equal(x->new_mode, y->new_mode);
		assert_int_equal(x->old_size, y->old_size);
		assert_int_equal(x->new_size, y->new_size);
		assert_memory_equal(x->old_id.b, y->old_id.b, SHA256_LEN);
		assert_memory_equal(x->new_id.b, y->new_id.b, SHA256_LEN);
	}
}

/* --- codec
 * --------------------------------------------------------------------------------
 */

static void test_entry_roundtrip(void **state)
{
	UNUSED(state);
	rng_state = test_seed() ^ 0x10;
	for (int iter = 0; iter < 300; iter++) {
		oplog_entry e, d, copy;
		buf b = BUF_INIT;
		const unsigned char *p, *end;
		rnd_entry(&e);
		assert_int_equal(oplog_entry_encode(&b, &e), 0);
		/* with trailing bytes after it: decode stops at its end */
		buf_puts(&b, "TRAILER");
		p = (const unsigned char *)b.ptr;
		end = p + b.len;
		assert_int_equal(oplog_entry_decode(&d, &p, end), 0);
		assert_int_equal(end - p, 7);
		assert_memory_equal(p, "TRAILER", 7);
		assert_entry_equal(&e, &d);
		assert_int_equal(oplog_entry_copy(&copy, &d), 0);
		assert_entry_equal(&e, &copy);
		oplog_entry_release(&d);
		oplog_entry_release(&copy);
		assert_null(copy.changes);
		free_entry(&e);
		buf_release(&b);
	}
	assert_string_equal(oplog_kind_name(OPLOG_RESTORE), "restore");
	assert_string_equal(oplog_kind_name(OPLOG_APPLY), "apply");
	assert_string_equal(oplog_kind_name(OPLOG_REVERT), "revert");
	assert_string_equal(oplog_kind_name(99), "operation");
}

/* Every truncation of an encoded entry is refused, without leaks. */
static void test_entry_truncated(void **state)
{
	oplog_entry e, d;
	buf b = BUF_INIT;

	UNUSED(state);
	rng_state = test_seed() ^ 0x11;
	memset(&e, 0, sizeof(e));
	do {
		free_entry(&e);
		rnd_entry(&e);
	} while (e.n < 2 || !e.session || !e.what);
	assert_int_equal(oplog_entry_encode(&b, &e), 0);
	for (size_t len = 0; len < b.len; len++) {
		unsigned char *copy = malloc(len ? len : 1);
		const unsigned char *p = copy;
		int r;
		assert_non_null(copy);
		memcpy(copy, b.ptr, len);
		r = oplog_entry_decode(&d, &p, copy + len);
		free(copy);
		if (r != DECREE_ECORRUPT)
			fail_msg("truncated to %zu of %zu: decode returned %d",
				 len, b.len, r);
		assert_null(d.changes);
		assert_null(d.session);
	}
	free_entry(&e);
	buf_release(&b);
}

/* Encode one entry with a given change path (bytes, may hold NUL). */
static void encode_with_path(buf *b, const char *path, size_t plen)
{
	txn_change c;
	oplog_entry e;
	char ph[] = "placeholder";
	char *p = malloc(plen + 1);

	assert_non_null(p);
	memcpy(p, path, plen);
	p[plen] = '\0';
	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	c.path = ph;
	c.has_new = true;
	c.new_mode = MODE_FILE;
	e.kind = OPLOG_RESTORE;
	memcpy(e.id, "0123456789abcdef", 17);
	e.changes = &c;
	e.n = 1;
	buf_clear(b);
	assert_int_equal(oplog_entry_encode(b, &e), 0);
	/* replace the trailing placeholder path by the raw bytes */
	buf_truncate(b, b->len - 2 - strlen("placeholder"));
	buf_put_u16(b, (unsigned)plen);
	buf_put(b, p, plen);
	free(p);
}

static void test_unsafe_paths(void **state)
{
	static const struct {
		const char *path;
		size_t len; /* 0: strlen */
		bool ok;
	} cases[] = {
		{ "a", 0, true },
		{ "a/b/c", 0, true },
		{ "...", 0, true },
		{ ".gitignore", 0, true },
		{ "a/.gitx/b", 0, true },
		{ "..", 0, false },
		{ "../x", 0, false },
		{ "a/../../x", 0, false },
		{ "a/..", 0, false },
		{ ".", 0, false },
		{ "./a", 0, false },
		{ "/etc/passwd", 0, false },
		{ "/", 0, false },
		{ "", 0, false },
		{ "a//b", 0, false },
		{ "a/", 0, false },
		{ ".git/x", 0, false },
		{ ".git", 0, false },
		{ "sub/.git/config", 0, false },
		{ ".decree/store/x", 0, false },
		{ "a/.decree", 0, true }, /* only the root .decree is decree's
					   */
		{ "a\0b", 3, false },
	};
	buf b = BUF_INIT;

	UNUSED(state);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t len = cases[i].len ? cases[i].len
					  : strlen(cases[i].path);
		oplog_entry d;
		const unsigned char *p;
		int r;
		encode_with_path(&b, cases[i].path, len);
		p = (const unsigned char *)b.ptr;
		r = oplog_entry_decode(&d, &p, p + b.len);
		if (cases[i].ok) {
			if (r != 0)
				fail_msg("'%s' refused: %s", cases[i].path,
					 decree_error_last());
			assert_int_equal(d.n, 1);
			assert_string_equal(d.changes[0].path, cases[i].path);
			oplog_entry_release(&d);
		} else {
			if (r != DECREE_ECORRUPT)
				fail_msg("'%s' (case %zu): decode returned %d",
					 cases[i].path, i, r);
			assert_null(d.changes);
		}
	}
	buf_release(&b);
}

/* A change count that cannot fit the remaining bytes. */
static void test_bad_counts(void **state)
{
	oplog_entry e, d;
	txn_change c;
	buf b = BUF_INIT;
	const unsigned char *p;
	size_t count_off;
	char file[] = "file", sess[] = "s", what[] = "w";

	UNUSED(state);
	memset(&e, 0, sizeof(e));
	memset(&c, 0, sizeof(c));
	c.path = file;
	c.has_new = true;
	e.kind = OPLOG_APPLY;
	memcpy(e.id, "fedcba9876543210", 17);
	e.session = sess;
	e.what = what;
	e.changes = &c;
	e.n = 1;
	assert_int_equal(oplog_entry_encode(&b, &e), 0);
	count_off = 1 + 16 + 8 + 2 + 1 + 2 + 1;
	assert_int_equal(get_u32le((unsigned char *)b.ptr + count_off), 1);
	{
		static const uint32_t counts[] = { 2, 1000, 0x7fffffff,
						   0xffffffff };
		for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
			put_u32le((unsigned char *)b.ptr + count_off,
				  counts[i]);
			p = (const unsigned char *)b.ptr;
			assert_int_equal(oplog_entry_decode(&d, &p, p + b.len),
					 DECREE_ECORRUPT);
		}
	}
	/* NUL inside the session string */
	put_u32le((unsigned char *)b.ptr + count_off, 1);
	b.ptr[1 + 16 + 8 + 2] = '\0';
	p = (const unsigned char *)b.ptr;
	assert_int_equal(oplog_entry_decode(&d, &p, p + b.len),
			 DECREE_ECORRUPT);
	buf_release(&b);
}

/* --- the file
 * ---------------------------------------------------------------------------
 */

static void fill_log(oplog *l, size_t nundo, size_t nredo)
{
	memset(l, 0, sizeof(*l));
	l->undo = calloc(nundo ? nundo : 1, sizeof(oplog_entry));
	l->redo = calloc(nredo ? nredo : 1, sizeof(oplog_entry));
	for (size_t i = 0; i < nundo; i++)
		rnd_entry(&l->undo[i]);
	for (size_t i = 0; i < nredo; i++)
		rnd_entry(&l->redo[i]);
	l->nundo = nundo;
	l->nredo = nredo;
}

static void free_log(oplog *l)
{
	for (size_t i = 0; i < l->nundo; i++)
		free_entry(&l->undo[i]);
	for (size_t i = 0; i < l->nredo; i++)
		free_entry(&l->redo[i]);
	free(l->undo);
	free(l->redo);
}

static void test_file_roundtrip(void **state)
{
	fixture *f = *state;
	oplog l, back = OPLOG_INIT;

	rng_state = test_seed() ^ 0x12;
	/* missing file: empty history, no error left behind */
	assert_int_equal(oplog_load(&back, f->path), 0);
	assert_int_equal(back.nundo, 0);
	assert_int_equal(back.nredo, 0);
	assert_string_equal(decree_error_last(), "");
	oplog_release(&back);

	fill_log(&l, 7, 3);
	assert_int_equal(oplog_save(&l, f->path), 0);
	assert_int_equal(oplog_load(&back, f->path), 0);
	assert_int_equal(back.nundo, 7);
	assert_int_equal(back.nredo, 3);
	for (size_t i = 0; i < 7; i++)
		assert_entry_equal(&l.undo[i], &back.undo[i]);
	for (size_t i = 0; i < 3; i++)
		assert_entry_equal(&l.redo[i], &back.redo[i]);
	oplog_release(&back);
	free_log(&l);

	/* empty history */
	fill_log(&l, 0, 0);
	assert_int_equal(oplog_save(&l, f->path), 0);
	assert_int_equal(oplog_load(&back, f->path), 0);
	assert_int_equal(back.nundo + back.nredo, 0);
	oplog_release(&back);
	free_log(&l);

	/* more than OPLOG_MAX_UNDO: the oldest are dropped */
	fill_log(&l, OPLOG_MAX_UNDO + 5, 1);
	assert_int_equal(oplog_save(&l, f->path), 0);
	assert_int_equal(oplog_load(&back, f->path), 0);
	assert_int_equal(back.nundo, OPLOG_MAX_UNDO);
	for (size_t i = 0; i < OPLOG_MAX_UNDO; i++)
		assert_entry_equal(&l.undo[i + 5], &back.undo[i]);
	assert_int_equal(back.nredo, 1);
	oplog_release(&back);
	free_log(&l);
}

static void test_file_damage(void **state)
{
	fixture *f = *state;
	oplog l, back;
	buf good = BUF_INIT, bad = BUF_INIT;

	rng_state = test_seed() ^ 0x13;
	fill_log(&l, 2, 1);
	assert_int_equal(oplog_save(&l, f->path), 0);
	free_log(&l);
	assert_int_equal(fs_read_path(f->path, &good), 0);
	for (size_t pos = 0; pos < good.len; pos++) {
		int r;
		buf_clear(&bad);
		buf_put(&bad, good.ptr, good.len);
		bad.ptr[pos] ^= 0x04;
		write_raw(f->path, bad.ptr, bad.len);
		r = oplog_load(&back, f->path);
		if (r != DECREE_ECORRUPT)
			fail_msg("byte %zu flipped: oplog_load returned %d",
				 pos, r);
		assert_int_equal(back.nundo + back.nredo, 0);
		assert_null(back.undo);
	}
	for (size_t len = 0; len < good.len; len++) {
		write_raw(f->path, good.ptr, len);
		if (oplog_load(&back, f->path) != DECREE_ECORRUPT)
			fail_msg("truncated to %zu: not refused", len);
		assert_null(back.undo);
	}
	/* well checksummed, but an unsafe path inside: still refused */
	{
		oplog_entry e;
		txn_change c;
		oplog one;
		char outside[] = "../outside";
		memset(&e, 0, sizeof(e));
		memset(&c, 0, sizeof(c));
		c.path = outside;
		c.has_new = true;
		e.kind = OPLOG_RESTORE;
		memcpy(e.id, "0123456789abcdef", 17);
		e.changes = &c;
		e.n = 1;
		memset(&one, 0, sizeof(one));
		one.undo = &e;
		one.nundo = 1;
		assert_int_equal(oplog_save(&one, f->path), 0);
		assert_int_equal(oplog_load(&back, f->path), DECREE_ECORRUPT);
		assert_null(back.undo);
	}
	/* counts beyond what the file holds, checksum fixed */
	{
		static const uint32_t counts[][2] = {
			{ 3, 1 }, { 2, 2 }, { 100001, 0 }, { 1, 1 }
		};
		for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
			oid sum;
			buf_clear(&bad);
			buf_put(&bad, good.ptr, good.len);
			put_u32le((unsigned char *)bad.ptr + 8, counts[i][0]);
			put_u32le((unsigned char *)bad.ptr + 12, counts[i][1]);
			sha256_buf(&sum, bad.ptr, 16); /* the header's sum */
			memcpy(bad.ptr + 16, sum.b, 8);
			write_raw(f->path, bad.ptr, bad.len);
			if (oplog_load(&back, f->path) != DECREE_ECORRUPT)
				fail_msg("counts %u/%u accepted", counts[i][0],
					 counts[i][1]);
		}
	}
	buf_release(&good);
	buf_release(&bad);
}

/* Entry i of `l` (undo first, then redo). */
static const oplog_entry *nth(const oplog *l, size_t i)
{
	return i < l->nundo ? &l->undo[i] : &l->redo[i - l->nundo];
}

/* Byte ranges of the entries of a version 2 file (len .. sum). */
static size_t entry_ends(size_t *ends, const buf *file, size_t n)
{
	size_t off = 24;
	for (size_t i = 0; i < n; i++) {
		off += 4 + get_u32le((const unsigned char *)file->ptr + off) +
		       8;
		ends[i] = off;
	}
	return off;
}

/* oplog_load_all on damaged bytes: the damage is one entry; the others
 * read as they were; a save keeps the damaged bytes; dropping them
 * leaves the intact entries in order. */
static void check_contained(const fixture *f, const oplog *orig, const buf *bad,
			    size_t hit, const char *what)
{
	oplog back, again;
	buf saved = BUF_INIT;
	size_t n = orig->nundo + orig->nredo, intact = 0;

	write_raw(f->path, bad->ptr, bad->len);
	if (oplog_load_all(&back, f->path) != 0)
		fail_msg("%s: oplog_load_all failed: %s", what,
			 decree_error_last());
	if (!back.ndamaged)
		fail_msg("%s: no damaged entry", what);
	if (oplog_load(&again, f->path) != DECREE_ECORRUPT)
		fail_msg("%s: oplog_load accepted it", what);
	/* the entries before the hit are read as they were */
	for (size_t i = 0; i < hit && i < back.nundo + back.nredo; i++) {
		if (nth(&back, i)->damaged)
			fail_msg("%s: entry %zu (before the damage) is damaged",
				 what, i);
		assert_entry_equal(nth(orig, i), nth(&back, i));
	}
	/* every intact entry is one of the originals, in order */
	for (size_t i = 0, k = 0; i < back.nundo + back.nredo; i++) {
		const oplog_entry *e = nth(&back, i);
		if (e->damaged)
			continue;
		while (k < n && strcmp(nth(orig, k)->id, e->id))
			k++;
		if (k == n)
			fail_msg("%s: entry %zu is not an original", what, i);
		assert_entry_equal(nth(orig, k), e);
		intact++;
	}
	/* saved and read again: the same, the damage included */
	assert_int_equal(oplog_save(&back, f->path), 0);
	assert_int_equal(fs_read_path(f->path, &saved), 0);
	assert_int_equal(oplog_load_all(&again, f->path), 0);
	assert_int_equal(again.nundo, back.nundo);
	assert_int_equal(again.nredo, back.nredo);
	assert_int_equal(again.ndamaged, back.ndamaged);
	for (size_t i = 0; i < again.nundo + again.nredo; i++) {
		assert_int_equal(nth(&again, i)->damaged,
				 nth(&back, i)->damaged);
		if (nth(&again, i)->damaged)
			assert_int_equal(nth(&again, i)->raw_len,
					 nth(&back, i)->raw_len);
		else
			assert_entry_equal(nth(&back, i), nth(&again, i));
	}
	oplog_release(&again);
	/* dropped: only the intact ones, and oplog_load is happy again */
	assert_int_equal(oplog_drop_damaged(&back),
			 back.nundo + back.nredo ? back.ndamaged : 0);
	assert_int_equal(back.nundo + back.nredo, intact);
	assert_int_equal(oplog_save(&back, f->path), 0);
	assert_int_equal(oplog_load(&again, f->path), 0);
	assert_int_equal(again.nundo + again.nredo, intact);
	oplog_release(&again);
	oplog_release(&back);
	buf_release(&saved);
}

static void test_damage_contained(void **state)
{
	fixture *f = *state;
	oplog l;
	buf good = BUF_INIT, bad = BUF_INIT;
	size_t ends[4], total;

	rng_state = test_seed() ^ 0x14;
	fill_log(&l, 3, 1);
	assert_int_equal(oplog_save(&l, f->path), 0);
	assert_int_equal(fs_read_path(f->path, &good), 0);
	total = entry_ends(ends, &good, 4);
	assert_int_equal(total, good.len);
	for (size_t pos = 0; pos < good.len; pos++) {
		char what[64];
		size_t hit = 0;
		buf_clear(&bad);
		buf_put(&bad, good.ptr, good.len);
		bad.ptr[pos] ^= 0x04;
		while (hit < 4 && pos >= 24 && ends[hit] <= pos)
			hit++;
		snprintf(what, sizeof(what), "byte %zu flipped", pos);
		check_contained(f, &l, &bad, pos < 24 ? 0 : hit, what);
	}
	for (size_t len = 0; len < good.len; len++) {
		char what[64];
		size_t hit = 0;
		while (hit < 4 && ends[hit] <= len)
			hit++;
		snprintf(what, sizeof(what), "cut to %zu bytes", len);
		check_contained(f, &l, &(buf){ .ptr = good.ptr, .len = len },
				len < 24 ? 0 : hit, what);
	}
	free_log(&l);
	buf_release(&good);
	buf_release(&bad);
}

/* oplog_load_for_update: the tops read, the rest kept as bytes; a push or
 * a move then saved gives what the same operation on oplog_load_all's
 * reading gives; damage anywhere is kept as oplog_load_all keeps it. */
static void same_history(const oplog *a, const oplog *b)
{
	assert_int_equal(a->nundo, b->nundo);
	assert_int_equal(a->nredo, b->nredo);
	assert_int_equal(a->ndamaged, b->ndamaged);
	for (size_t i = 0; i < a->nundo + a->nredo; i++) {
		assert_int_equal(nth(a, i)->damaged, nth(b, i)->damaged);
		if (nth(a, i)->damaged)
			assert_memory_equal(nth(a, i)->raw, nth(b, i)->raw,
					    nth(a, i)->raw_len);
		else
			assert_entry_equal(nth(a, i), nth(b, i));
	}
}

/* Read f->path both ways, apply op (0 push e, 1 undo move, 2 redo move)
 * to each, save each, and compare what oplog_load_all reads back. */
static void update_both_ways(const fixture *f, int op, const oplog_entry *e)
{
	char path2[PATH_MAX];
	oplog full, lazy, a, b;
	buf bytes = BUF_INIT;
	int rf, rl;

	snprintf(path2, sizeof(path2), "%s.full", f->path);
	assert_int_equal(fs_read_path(f->path, &bytes), 0);
	write_raw(path2, bytes.ptr, bytes.len);
	assert_int_equal(oplog_load_all(&full, path2), 0);
	assert_int_equal(oplog_load_for_update(&lazy, f->path), 0);
	/* the tops are read */
	if (lazy.nundo)
		assert_false(lazy.undo[lazy.nundo - 1].opaque);
	if (lazy.nredo)
		assert_false(lazy.redo[lazy.nredo - 1].opaque);
	if (op == 0) {
		rf = oplog_push(&full, e);
		rl = oplog_push(&lazy, e);
	} else {
		const oplog_entry *t =
			op == 1 ? (full.nundo ? &full.undo[full.nundo - 1]
					      : NULL)
				: (full.nredo ? &full.redo[full.nredo - 1]
					      : NULL);
		char id[17] = "0000000000000000";
		if (t && !t->damaged)
			memcpy(id, t->id, 17);
		rf = oplog_move(&full, op == 1, id);
		rl = oplog_move(&lazy, op == 1, id);
	}
	assert_int_equal(rf, rl);
	assert_int_equal(oplog_save(&full, path2), 0);
	assert_int_equal(oplog_save(&lazy, f->path), 0);
	assert_int_equal(oplog_load_all(&a, path2), 0);
	assert_int_equal(oplog_load_all(&b, f->path), 0);
	same_history(&a, &b);
	oplog_release(&a);
	oplog_release(&b);
	oplog_release(&full);
	oplog_release(&lazy);
	unlink(path2);
	buf_release(&bytes);
}

static void test_load_for_update(void **state)
{
	fixture *f = *state;
	oplog l, back;
	oplog_entry e;
	buf good = BUF_INIT, bad = BUF_INIT;

	rng_state = test_seed() ^ 0x16;
	rnd_entry(&e);
	fill_log(&l, 7, 3);
	assert_int_equal(oplog_save(&l, f->path), 0);
	/* read back untouched: only the tops read, the bytes the same */
	assert_int_equal(oplog_load_for_update(&back, f->path), 0);
	assert_int_equal(back.nundo, 7);
	assert_int_equal(back.nredo, 3);
	for (size_t i = 0; i < 10; i++)
		assert_int_equal(nth(&back, i)->opaque, i != 6 && i != 9);
	assert_entry_equal(&l.undo[6], &back.undo[6]);
	assert_entry_equal(&l.redo[2], &back.redo[2]);
	assert_int_equal(fs_read_path(f->path, &good), 0);
	assert_int_equal(oplog_save(&back, f->path), 0);
	assert_int_equal(fs_read_path(f->path, &bad), 0);
	assert_int_equal(bad.len, good.len);
	assert_memory_equal(bad.ptr, good.ptr, good.len);
	oplog_release(&back);
	for (int op = 0; op < 3; op++) {
		write_raw(f->path, good.ptr, good.len);
		update_both_ways(f, op, &e);
	}
	/* damaged at every byte, cut at every length: the same outcome */
	for (size_t pos = 0; pos < good.len; pos += 3) {
		buf_clear(&bad);
		buf_put(&bad, good.ptr, good.len);
		bad.ptr[pos] ^= 0x10;
		write_raw(f->path, bad.ptr, bad.len);
		update_both_ways(f, (int)(pos % 3), &e);
	}
	for (size_t len = 0; len < good.len; len += 5) {
		write_raw(f->path, good.ptr, len);
		update_both_ways(f, (int)(len % 3), &e);
	}
	free_entry(&e);
	free_log(&l);
	buf_release(&good);
	buf_release(&bad);
}

/* Version 1 files (one checksum over the file) are still read. */
static void test_version1(void **state)
{
	fixture *f = *state;
	oplog l, back;
	buf v1 = BUF_INIT;
	oid sum;

	rng_state = test_seed() ^ 0x15;
	fill_log(&l, 2, 1);
	buf_put(&v1, "DOPL", 4);
	buf_put_u32(&v1, 1);
	buf_put_u32(&v1, 2);
	buf_put_u32(&v1, 1);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(oplog_entry_encode(&v1, nth(&l, i)), 0);
	sha256_buf(&sum, v1.ptr, v1.len);
	buf_put(&v1, sum.b, SHA256_LEN);
	write_raw(f->path, v1.ptr, v1.len);
	assert_int_equal(oplog_load(&back, f->path), 0);
	assert_int_equal(back.nundo, 2);
	assert_int_equal(back.nredo, 1);
	for (size_t i = 0; i < 3; i++)
		assert_entry_equal(nth(&l, i), nth(&back, i));
	oplog_release(&back);
	/* damaged: the whole file is one damaged entry */
	v1.ptr[v1.len / 2] ^= 0x01;
	write_raw(f->path, v1.ptr, v1.len);
	assert_int_equal(oplog_load_all(&back, f->path), 0);
	assert_int_equal(back.nundo, 1);
	assert_int_equal(back.nredo, 0);
	assert_true(back.undo[0].damaged);
	assert_int_equal(back.undo[0].raw_len, v1.len);
	oplog_release(&back);
	/* a version this code does not know (its header valid) is refused,
	 * never rewritten */
	{
		unsigned char hdr[24];
		memcpy(hdr, "DOPL", 4);
		put_u32le(hdr + 4, 7);
		put_u32le(hdr + 8, 0);
		put_u32le(hdr + 12, 0);
		sha256_buf(&sum, hdr, 16);
		memcpy(hdr + 16, sum.b, 8);
		write_raw(f->path, hdr, sizeof(hdr));
		assert_int_equal(oplog_load_all(&back, f->path),
				 DECREE_ECORRUPT);
		assert_non_null(strstr(decree_error_last(), "version 7"));
	}
	free_log(&l);
	buf_release(&v1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_roundtrip),
		cmocka_unit_test(test_entry_truncated),
		cmocka_unit_test(test_unsafe_paths),
		cmocka_unit_test(test_bad_counts),
		cmocka_unit_test_setup_teardown(test_file_roundtrip, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_file_damage, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_damage_contained, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_version1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_for_update, setup,
						teardown),
	};

	test_seed();
	if (getenv("DECREE_TEST_FILTER")) /* e.g. "test_gc*" */
		cmocka_set_test_filter(getenv("DECREE_TEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
