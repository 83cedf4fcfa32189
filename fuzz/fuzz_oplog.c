/*
 * fuzz_oplog.c - libFuzzer target for the undo/redo history
 * (src/lib/store/oplog.c: oplog_load, oplog_entry_decode).
 *
 *   make fuzz && build/fuzz/fuzz_oplog fuzz/corpus/oplog
 * `make check` replays fuzz/corpus/oplog through fuzz/replay.c.
 *
 * The input is written as a history file (<scratch>/oplog) and loaded,
 * twice: as it is, and with its checksums made right (version 2: the
 * header sum and the sum of every entry its framing reaches; version 1:
 * the trailing SHA-256), so that mutations reach the entry parser.  Its
 * bytes after a version 2 header and an entry length (28 bytes) are also
 * decoded as one entry alone, as txn.c decodes the entry inside a BEGIN
 * record of the transaction log.  Undo and redo write the files named by
 * these entries, so beyond "no crash, no leak, no undefined behaviour"
 * the target checks:
 *   - oplog_load (gc, fsck) accepts only a history without damage, and a
 *     failure leaves an empty history;
 *   - oplog_load_all fails only for a history of another version; a
 *     damaged entry keeps its bytes and says why; every intact change
 *     path is one fs_path_is_safe(path, true) accepts (relative, no "..",
 *     not in .git or .decree), and every id is NUL-terminated;
 *   - saving what was loaded and loading it again gives the same entries
 *     (the newest 100 undo entries: oplog_save keeps no more), damaged
 *     ones byte for byte, and a second save the same bytes;
 *   - dropping the damaged entries leaves a history without damage;
 *   - entry encode/decode/copy round-trip, and a decoded entry consumes
 *     exactly the bytes its encoding takes.
 */
#include "util/common.h"
#include "store/oplog.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_entry(const oplog_entry *a, const oplog_entry *b)
{
	fuzz_check(a->kind == b->kind && !memcmp(a->id, b->id, 17) &&
		   a->time_ns == b->time_ns && a->n == b->n);
	fuzz_check(!a->session == !b->session &&
		   (!a->session || !strcmp(a->session, b->session)));
	fuzz_check(!a->what == !b->what &&
		   (!a->what || !strcmp(a->what, b->what)));
	for (size_t i = 0; i < a->n; i++) {
		const txn_change *x = &a->changes[i], *y = &b->changes[i];
		fuzz_check(!strcmp(x->path, y->path));
		fuzz_check(x->has_old == y->has_old &&
			   x->has_new == y->has_new &&
			   x->old_mode == y->old_mode &&
			   x->new_mode == y->new_mode &&
			   x->old_size == y->old_size &&
			   x->new_size == y->new_size &&
			   !oid_cmp(&x->old_id, &y->old_id) &&
			   !oid_cmp(&x->new_id, &y->new_id));
	}
}

/* What undo and redo rely on in one accepted entry. */
static void check_entry(const oplog_entry *e)
{
	buf enc = BUF_INIT;
	oplog_entry copy, dec;
	const unsigned char *p;

	fuzz_check(e->id[16] == '\0');
	fuzz_check(e->n == 0 || e->changes != NULL);
	for (size_t i = 0; i < e->n; i++) {
		fuzz_check(e->changes[i].path != NULL);
		fuzz_check(fs_path_is_safe(e->changes[i].path, true));
	}
	(void)oplog_kind_name(e->kind);
	fuzz_check(oplog_entry_copy(&copy, e) == 0);
	same_entry(e, &copy);
	oplog_entry_release(&copy);

	fuzz_check(oplog_entry_encode(&enc, e) == 0);
	p = (const unsigned char *)enc.ptr;
	fuzz_check(oplog_entry_decode(&dec, &p,
				      (const unsigned char *)enc.ptr +
					      enc.len) == 0);
	fuzz_check(p == (const unsigned char *)enc.ptr + enc.len);
	same_entry(e, &dec);
	oplog_entry_release(&dec);
	buf_release(&enc);
}

/* A damaged entry keeps its bytes; an intact one passes check_entry. */
static void check_loaded(const oplog *l)
{
	size_t damaged = 0;

	for (size_t i = 0; i < l->nundo + l->nredo; i++) {
		const oplog_entry *e = i < l->nundo ? &l->undo[i]
						    : &l->redo[i - l->nundo];
		if (e->damaged) {
			damaged++;
			fuzz_check(e->damage != NULL && !e->changes && !e->n);
			fuzz_check(!e->raw_len || e->raw != NULL);
		} else {
			check_entry(e);
		}
	}
	fuzz_check(damaged == l->ndamaged);
}

static void same_loaded(const oplog_entry *a, const oplog_entry *b)
{
	fuzz_check(a->damaged == b->damaged);
	if (a->damaged)
		fuzz_check(
			a->raw_len == b->raw_len && a->raw_sum == b->raw_sum &&
			(!a->raw_len || !memcmp(a->raw, b->raw, a->raw_len)));
	else
		same_entry(a, b);
}

static void load_file(const uint8_t *data, size_t size)
{
	static char path[PATH_MAX], again[PATH_MAX];
	oplog l = OPLOG_INIT, l2 = OPLOG_INIT;
	buf saved = BUF_INIT, resaved = BUF_INIT;
	int r;

	if (!path[0]) {
		fuzz_path(path, "oplog");
		fuzz_path(again, "oplog.saved");
	}
	fuzz_write(path, data, size);
	/* gc and fsck: any damage is an error naming the entry */
	r = oplog_load(&l, path);
	fuzz_check(r == 0 || r == DECREE_ECORRUPT || r == DECREE_ERROR);
	if (r == 0)
		fuzz_check(!l.ndamaged);
	else
		fuzz_check(!l.undo && !l.redo && !l.nundo && !l.nredo);
	oplog_release(&l);
	decree_error_clear();

	/* restore, apply, undo: damage is kept in its place */
	r = oplog_load_all(&l, path);
	if (r < 0) {
		/* only a history of another version (kept as it is) */
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		fuzz_check(!l.undo && !l.redo && !l.nundo && !l.nredo);
		decree_error_clear();
		return;
	}
	check_loaded(&l);
	/* saving (as a new entry is pushed) keeps every entry, damaged ones
	 * byte for byte; loading that again gives the same; a second save
	 * writes the same bytes */
	fuzz_check(oplog_save(&l, again) == 0);
	fuzz_check(fs_read_path(again, &saved) == 0);
	fuzz_check(oplog_load_all(&l2, again) == 0);
	check_loaded(&l2);
	fuzz_check(l2.nredo == l.nredo);
	fuzz_check(l2.nundo ==
		   (l.nundo > OPLOG_MAX_UNDO ? OPLOG_MAX_UNDO : l.nundo));
	fuzz_check(l2.ndamaged <= l.ndamaged);
	for (size_t i = 0; i < l2.nundo; i++)
		same_loaded(&l.undo[l.nundo - l2.nundo + i], &l2.undo[i]);
	for (size_t i = 0; i < l2.nredo; i++)
		same_loaded(&l.redo[i], &l2.redo[i]);
	fuzz_check(oplog_save(&l2, again) == 0);
	fuzz_check(fs_read_path(again, &resaved) == 0);
	fuzz_check(resaved.len == saved.len &&
		   !memcmp(resaved.ptr, saved.ptr, saved.len));
	/* the way out: dropping the damaged entries leaves the intact ones
	 * in order, and a history that loads without damage */
	{
		size_t before = l2.nundo + l2.nredo, nd = l2.ndamaged;
		fuzz_check(oplog_drop_damaged(&l2) == nd);
		fuzz_check(l2.nundo + l2.nredo == before - nd);
		fuzz_check(oplog_save(&l2, again) == 0);
		oplog_release(&l2);
		fuzz_check(oplog_load(&l2, again) == 0);
		fuzz_check(l2.nundo + l2.nredo == before - nd);
	}
	buf_release(&resaved);
	oplog_release(&l2);
	buf_release(&saved);
	oplog_release(&l);
}

static uint64_t sum64(const void *p, size_t len)
{
	oid out;

	sha256_buf(&out, p, len);
	return get_u64le(out.b);
}

/* The input with its checksums made right, so that mutations reach the
 * entry parser: a version 1 file's trailing SHA-256; a version 2 file's
 * header sum and the sum of every entry its framing reaches. */
static void fix_sums(buf *out, const uint8_t *data, size_t size)
{
	unsigned char *p;

	buf_clear(out);
	fuzz_check(buf_put(out, data, size) == 0);
	p = (unsigned char *)out->ptr;
	if (size >= 8 && get_u32le(p + 4) == 1) {
		oid sum;
		if (size < 8 + SHA256_LEN)
			return;
		sha256_buf(&sum, p, size - SHA256_LEN);
		memcpy(p + size - SHA256_LEN, sum.b, SHA256_LEN);
		return;
	}
	if (size < 24)
		return;
	put_u64le(p + 16, sum64(p, 16));
	for (size_t at = 24; size - at >= 4;) {
		uint32_t len = get_u32le(p + at);
		if (size - at - 4 < (uint64_t)len + 8)
			break;
		put_u64le(p + at + 4 + len, sum64(p + at + 4, len));
		at += 4 + (size_t)len + 8;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oplog_entry e;
	const unsigned char *p, *end = data + size;
	int r;

	load_file(data, size);
	{
		buf fixed = BUF_INIT;
		fix_sums(&fixed, data, size);
		if (fixed.len != size || memcmp(fixed.ptr, data, size))
			load_file((const uint8_t *)fixed.ptr, size);
		buf_release(&fixed);
	}

	/* one entry alone, as in a BEGIN record of the transaction log
	 * (after a version 2 header and an entry's length) */
	p = data + (size > 28 ? 28 : size);
	r = oplog_entry_decode(&e, &p, end);
	if (r == 0) {
		fuzz_check(p <= end);
		check_entry(&e);
		oplog_entry_release(&e);
	} else {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		fuzz_check(!e.changes && !e.session && !e.what && !e.n);
	}
	decree_error_clear();
	return 0;
}
