/*
 * oplog.c - persistence of the undo/redo history (see oplog.h).
 *
 * File layout (little endian), docs/format.md:
 *   "DOPL" u32 version(1) u32 n_undo u32 n_redo
 *   n_undo entries (oldest first), then n_redo entries (oldest first)
 *   sha256 of everything before (32 bytes)
 * Entry: u8 kind, id[16], i64 time_ns, u16 session_len, session,
 *   u16 what_len, what, u32 n, n x change
 * Change: u8 flags (1 has_old, 2 has_new), u32 old_mode, u64 old_size,
 *   old_id[32], u32 new_mode, u64 new_size, new_id[32], u16 path_len, path
 * The file is replaced atomically on every change.
 */
#include "util/common.h"
#include "store/oplog.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#define OPL_MAGIC   "DOPL"
#define OPL_VERSION 1

const char *oplog_kind_name(unsigned kind)
{
	switch (kind) {
	case OPLOG_RESTORE:
		return "restore";
	case OPLOG_APPLY:
		return "apply";
	case OPLOG_REVERT:
		return "revert";
	}
	return "operation";
}

void oplog_entry_release(oplog_entry *e)
{
	for (size_t i = 0; i < e->n; i++)
		decree_free(e->changes[i].path);
	decree_free(e->changes);
	decree_free(e->session);
	decree_free(e->what);
	memset(e, 0, sizeof(*e));
}

void oplog_release(oplog *l)
{
	for (size_t i = 0; i < l->nundo; i++)
		oplog_entry_release(&l->undo[i]);
	for (size_t i = 0; i < l->nredo; i++)
		oplog_entry_release(&l->redo[i]);
	decree_free(l->undo);
	decree_free(l->redo);
	memset(l, 0, sizeof(*l));
}

static int put_str16(buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > 0xffff)
		n = 0xffff;
	if (buf_put_u16(b, (unsigned)n) < 0)
		return -1;
	return buf_put(b, s ? s : "", n);
}

int txn_change_put_sides(buf *b, const txn_change *c)
{
	unsigned flags = (c->has_old ? 1u : 0u) | (c->has_new ? 2u : 0u);

	if (buf_put_u8(b, flags) < 0 || buf_put_u32(b, c->old_mode) < 0 ||
	    buf_put_u64(b, c->old_size) < 0 ||
	    buf_put(b, c->old_id.b, SHA256_LEN) < 0 ||
	    buf_put_u32(b, c->new_mode) < 0 || buf_put_u64(b, c->new_size) < 0)
		return -1;
	return buf_put(b, c->new_id.b, SHA256_LEN);
}

void txn_change_get_sides(txn_change *c, const unsigned char *p)
{
	c->has_old = p[0] & 1;
	c->has_new = (p[0] & 2) != 0;
	c->old_mode = get_u32le(p + 1);
	c->old_size = get_u64le(p + 5);
	memcpy(c->old_id.b, p + 13, SHA256_LEN);
	c->new_mode = get_u32le(p + 45);
	c->new_size = get_u64le(p + 49);
	memcpy(c->new_id.b, p + 57, SHA256_LEN);
}

int oplog_entry_encode(buf *b, const oplog_entry *e)
{
	if (buf_put_u8(b, e->kind) < 0 || buf_put(b, e->id, 16) < 0 ||
	    buf_put_u64(b, (uint64_t)e->time_ns) < 0 ||
	    put_str16(b, e->session) < 0 || put_str16(b, e->what) < 0 ||
	    buf_put_u32(b, (uint32_t)e->n) < 0)
		return -1;
	for (size_t i = 0; i < e->n; i++) {
		const txn_change *c = &e->changes[i];
		if (txn_change_put_sides(b, c) < 0 || put_str16(b, c->path) < 0)
			return -1;
	}
	return 0;
}

static int get_str16(char **out, const unsigned char **p,
		     const unsigned char *end, bool null_if_empty)
{
	size_t n;
	if (end - *p < 2)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated history record");
	n = get_u16le(*p);
	*p += 2;
	if ((size_t)(end - *p) < n)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated history record");
	if (n == 0 && null_if_empty) {
		*out = NULL;
		return 0;
	}
	if (memchr(*p, '\0', n))
		return decree_error_set(DECREE_ECORRUPT,
					"bad string in history record");
	if (!(*out = decree_strndup((const char *)*p, n)))
		return -1;
	*p += n;
	return 0;
}

int oplog_entry_decode(oplog_entry *e, const unsigned char **pp,
		       const unsigned char *end)
{
	const unsigned char *p = *pp;
	uint32_t n;
	int r;

	memset(e, 0, sizeof(*e));
	if (end - p < 1 + 16 + 8)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated history record");
	e->kind = p[0];
	memcpy(e->id, p + 1, 16);
	e->id[16] = '\0';
	e->time_ns = (int64_t)get_u64le(p + 17);
	p += 25;
	if ((r = get_str16(&e->session, &p, end, true)) < 0 ||
	    (r = get_str16(&e->what, &p, end, true)) < 0)
		goto fail;
	if (end - p < 4) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "truncated history record");
		goto fail;
	}
	n = get_u32le(p);
	p += 4;
	if (n > (size_t)(end - p) / (TXN_CHANGE_SIDES_LEN + 2)) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "bad history record size");
		goto fail;
	}
	if (n && !(e->changes = decree_calloc(n, sizeof(txn_change)))) {
		r = -1;
		goto fail;
	}
	for (uint32_t i = 0; i < n; i++) {
		txn_change *c = &e->changes[i];
		if (end - p < TXN_CHANGE_SIDES_LEN) {
			r = decree_error_set(DECREE_ECORRUPT,
					     "truncated history record");
			goto fail;
		}
		txn_change_get_sides(c, p);
		p += TXN_CHANGE_SIDES_LEN;
		e->n = i + 1;
		if ((r = get_str16(&c->path, &p, end, false)) < 0)
			goto fail;
		if (!fs_path_is_safe(c->path, true)) {
			r = decree_error_set(DECREE_ECORRUPT,
					     "unsafe path in history record");
			goto fail;
		}
	}
	*pp = p;
	return 0;
fail:
	oplog_entry_release(e);
	return r;
}

int oplog_entry_copy(oplog_entry *dst, const oplog_entry *src)
{
	buf b = BUF_INIT;
	const unsigned char *p;
	int r;

	if ((r = oplog_entry_encode(&b, src)) == 0) {
		p = (const unsigned char *)b.ptr;
		r = oplog_entry_decode(dst, &p, p + b.len);
	}
	buf_release(&b);
	return r;
}

int oplog_load(oplog *l, const char *path)
{
	buf data = BUF_INIT;
	const unsigned char *p, *end;
	uint32_t nu, nr;
	oid sum;
	int r;

	memset(l, 0, sizeof(*l));
	if ((r = fs_read_path(path, &data)) < 0) {
		buf_release(&data);
		if (r == DECREE_ENOTFOUND) {
			error_clear();
			return 0;
		}
		return r;
	}
	p = (const unsigned char *)data.ptr;
	end = p + data.len;
	if (data.len < 16 + SHA256_LEN || memcmp(p, OPL_MAGIC, 4) ||
	    get_u32le(p + 4) != OPL_VERSION) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "'%s' is not a decree history file", path);
		goto done;
	}
	sha256_buf(&sum, p, data.len - SHA256_LEN);
	if (memcmp(sum.b, end - SHA256_LEN, SHA256_LEN)) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "history file '%s' is damaged", path);
		goto done;
	}
	end -= SHA256_LEN;
	nu = get_u32le(p + 8);
	nr = get_u32le(p + 12);
	p += 16;
	if (nu > 100000 || nr > 100000) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "history file '%s' is damaged", path);
		goto done;
	}
	if ((nu && !(l->undo = decree_calloc(nu, sizeof(oplog_entry)))) ||
	    (nr && !(l->redo = decree_calloc(nr, sizeof(oplog_entry))))) {
		r = -1;
		goto done;
	}
	for (uint32_t i = 0; i < nu; i++, l->nundo++)
		if ((r = oplog_entry_decode(&l->undo[i], &p, end)) < 0)
			goto done;
	for (uint32_t i = 0; i < nr; i++, l->nredo++)
		if ((r = oplog_entry_decode(&l->redo[i], &p, end)) < 0)
			goto done;
	if (p != end)
		r = decree_error_set(DECREE_ECORRUPT,
				     "history file '%s' is damaged", path);
done:
	buf_release(&data);
	if (r < 0)
		oplog_release(l);
	return r;
}

int oplog_save(const oplog *l, const char *path)
{
	buf b = BUF_INIT;
	size_t first = l->nundo > OPLOG_MAX_UNDO ? l->nundo - OPLOG_MAX_UNDO
						 : 0;
	oid sum;
	int r = -1;

	if (buf_put(&b, OPL_MAGIC, 4) < 0 || buf_put_u32(&b, OPL_VERSION) < 0 ||
	    buf_put_u32(&b, (uint32_t)(l->nundo - first)) < 0 ||
	    buf_put_u32(&b, (uint32_t)l->nredo) < 0)
		goto done;
	for (size_t i = first; i < l->nundo; i++)
		if (oplog_entry_encode(&b, &l->undo[i]) < 0)
			goto done;
	for (size_t i = 0; i < l->nredo; i++)
		if (oplog_entry_encode(&b, &l->redo[i]) < 0)
			goto done;
	sha256_buf(&sum, b.ptr, b.len);
	if (buf_put(&b, sum.b, SHA256_LEN) < 0)
		goto done;
	r = fs_write_atomic(path, b.ptr, b.len, 0644);
done:
	buf_release(&b);
	return r;
}
