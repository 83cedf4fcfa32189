/*
 * fuzz_oplog.c - libFuzzer target for the undo/redo history
 * (src/lib/store/oplog.c: oplog_load, oplog_entry_decode).
 *
 *   make fuzz && build/fuzz/fuzz_oplog fuzz/corpus/oplog
 * `make check` replays fuzz/corpus/oplog through fuzz/replay.c.
 *
 * The input is written as a history file (<scratch>/oplog) and loaded,
 * twice: as it is, and with its last 32 bytes replaced by the SHA-256 of
 * the bytes before them (so that mutations reach the entry parser instead
 * of stopping at the checksum).  Its bytes after the 16-byte file header
 * are also decoded as one entry
 * alone, as txn.c decodes the entry inside a BEGIN record of the
 * transaction log, where no file checksum guards it.  Undo and redo write
 * the files named by these entries, so beyond "no crash, no leak, no
 * undefined behaviour" the target checks:
 *   - a damaged file is DECREE_ECORRUPT (or -1) and leaves an empty
 *     history;
 *   - every accepted change path is one fs_path_is_safe(path, true)
 *     accepts (relative, no "..", not in .git or .decree), and every id is
 *     NUL-terminated;
 *   - saving an accepted history and loading it again gives the same
 *     entries (the newest 100 undo entries: oplog_save keeps no more), a
 *     second save the same bytes, and with at most 100 undo entries the
 *     bytes of the input, but for unknown bits of a change's flags byte,
 *     which the reader ignores and the writer drops; entry
 *     encode/decode/copy round-trip;
 *   - a decoded entry consumes exactly the bytes its encoding takes.
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
	r = oplog_load(&l, path);
	if (r < 0) {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ERROR);
		fuzz_check(!l.undo && !l.redo && !l.nundo && !l.nredo);
		decree_error_clear();
		return;
	}
	for (size_t i = 0; i < l.nundo; i++)
		check_entry(&l.undo[i]);
	for (size_t i = 0; i < l.nredo; i++)
		check_entry(&l.redo[i]);
	/* what undo would write back reads the same; a second save
	 * writes the same bytes (the first may drop unknown flag bits) */
	fuzz_check(oplog_save(&l, again) == 0);
	fuzz_check(fs_read_path(again, &saved) == 0);
	fuzz_check(oplog_load(&l2, again) == 0);
	fuzz_check(l2.nredo == l.nredo);
	fuzz_check(l2.nundo ==
		   (l.nundo > OPLOG_MAX_UNDO ? OPLOG_MAX_UNDO : l.nundo));
	for (size_t i = 0; i < l2.nundo; i++)
		same_entry(&l.undo[l.nundo - l2.nundo + i], &l2.undo[i]);
	for (size_t i = 0; i < l2.nredo; i++)
		same_entry(&l.redo[i], &l2.redo[i]);
	fuzz_check(oplog_save(&l2, again) == 0);
	fuzz_check(fs_read_path(again, &resaved) == 0);
	fuzz_check(resaved.len == saved.len &&
		   !memcmp(resaved.ptr, saved.ptr, saved.len));
	if (l.nundo <= OPLOG_MAX_UNDO) {
		/* the same bytes, but for unknown bits of change flags */
		fuzz_check(saved.len == size);
		for (size_t i = 0; i + SHA256_LEN < size; i++)
			fuzz_check((unsigned char)saved.ptr[i] == data[i] ||
				   (unsigned char)saved.ptr[i] ==
					   (data[i] & 3));
	}
	buf_release(&resaved);
	oplog_release(&l2);
	buf_release(&saved);
	oplog_release(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	oplog_entry e;
	const unsigned char *p, *end = data + size;
	int r;

	load_file(data, size);
	if (size >= 16 + SHA256_LEN) {
		buf fixed = BUF_INIT;
		oid sum;
		fuzz_check(buf_put(&fixed, data, size) == 0);
		sha256_buf(&sum, fixed.ptr, size - SHA256_LEN);
		memcpy(fixed.ptr + size - SHA256_LEN, sum.b, SHA256_LEN);
		load_file((const uint8_t *)fixed.ptr, size);
		buf_release(&fixed);
	}

	/* one entry alone, as in a BEGIN record of the transaction log */
	p = data + (size > 16 ? 16 : size);
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
