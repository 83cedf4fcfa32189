/*
 * oplog.c - persistence of the undo/redo history (see oplog.h).
 *
 * File layout (little endian), docs/format.md, version 2:
 *   "DOPL" u32 version(2) u32 n_undo u32 n_redo
 *   u64 header sum (first 8 bytes of SHA-256 of the 16 bytes before)
 *   n_undo entries (oldest first), then n_redo entries (oldest first),
 *   each: u32 len, entry[len], u64 sum (first 8 bytes of SHA-256(entry))
 * Entry: u8 kind, id[16], i64 time_ns, u16 session_len, session,
 *   u16 what_len, what, u32 n, n x change
 * Change: u8 flags (1 has_old, 2 has_new), u32 old_mode, u64 old_size,
 *   old_id[32], u32 new_mode, u64 new_size, new_id[32], u16 path_len, path
 * Version 1 (read only): the same header without its sum, the entries
 * without framing, one SHA-256 of the whole file at the end.
 * The file is replaced atomically on every change.
 */
#include "util/common.h"
#include "store/oplog.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#define OPL_MAGIC   "DOPL"
#define OPL_VERSION 2
#define OPL_HDR	    24
#define OPL_MAX	    100000 /* entries per stack a reader accepts */

const char *oplog_kind_name(unsigned kind)
{
	switch (kind) {
	case OPLOG_RESTORE:
		return "restore";
	case OPLOG_APPLY:
		return "apply";
	case OPLOG_REVERT:
		return "revert";
	case OPLOG_WORKSPACE:
		return "workspace discard";
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
	decree_free(e->raw);
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

/* The first 8 bytes of SHA-256(p[0..len)), as the file stores sums. */
static uint64_t sum64(const void *p, size_t len)
{
	oid out;

	sha256_buf(&out, p, len);
	return get_u64le(out.b);
}

/* Append an entry to one of the stacks (the array has room: counts come
 * from the header, capped). */
static int push_entry(oplog_entry **v, size_t *n, size_t *cap, oplog_entry *e)
{
	if (GROW(*v, *cap, *n + 1) < 0)
		return -1;
	(*v)[(*n)++] = *e;
	memset(e, 0, sizeof(*e));
	return 0;
}

/* An entry kept as its `len` bytes, written back with `sum`. */
static int raw_entry(oplog_entry *e, const unsigned char *p, size_t len,
		     uint64_t sum)
{
	memset(e, 0, sizeof(*e));
	e->raw_sum = sum;
	e->raw_len = len;
	if (len && !(e->raw = decree_malloc(len)))
		return -1;
	if (len)
		memcpy(e->raw, p, len);
	return 0;
}

/* A damaged entry holding `len` bytes, written back with `sum`. */
static int damaged_entry(oplog_entry *e, const unsigned char *p, size_t len,
			 uint64_t sum, const char *why)
{
	int r = raw_entry(e, p, len, sum);

	e->damaged = true;
	e->damage = why;
	return r;
}

/* Bytes that cannot be framed: one damaged entry, with a sum that cannot
 * match, so that it stays damaged after a save. */
static int blob_entry(oplog_entry *e, const unsigned char *p, size_t len,
		      const char *why)
{
	return damaged_entry(e, p, len, sum64(p, len) ^ 1, why);
}

/* Version 1: one checksum over the file; damage anywhere is damage of the
 * whole file (one damaged entry). */
static int load_v1(oplog *l, const unsigned char *p, size_t len, size_t *ucap,
		   size_t *rcap)
{
	const unsigned char *end = p + len, *q;
	oplog_entry e;
	uint32_t nu, nr;
	oid sum;
	int r = 0;

	if (len < 16 + SHA256_LEN)
		goto damaged;
	sha256_buf(&sum, p, len - SHA256_LEN);
	if (memcmp(sum.b, end - SHA256_LEN, SHA256_LEN))
		goto damaged;
	end -= SHA256_LEN;
	nu = get_u32le(p + 8);
	nr = get_u32le(p + 12);
	if (nu > OPL_MAX || nr > OPL_MAX)
		goto damaged;
	q = p + 16;
	for (uint32_t i = 0; i < nu + nr; i++) {
		if ((r = oplog_entry_decode(&e, &q, end)) < 0) {
			if (r != DECREE_ECORRUPT)
				return r;
			error_clear();
			oplog_release(l);
			memset(l, 0, sizeof(*l));
			*ucap = *rcap = 0;
			goto damaged;
		}
		if ((i < nu ? push_entry(&l->undo, &l->nundo, ucap, &e)
			    : push_entry(&l->redo, &l->nredo, rcap, &e)) < 0) {
			oplog_entry_release(&e);
			return -1;
		}
	}
	if (q == end)
		return 0;
	oplog_release(l);
	memset(l, 0, sizeof(*l));
	*ucap = *rcap = 0;
damaged:
	if (blob_entry(&e, p, len, "the history file is damaged") < 0 ||
	    push_entry(&l->undo, &l->nundo, ucap, &e) < 0) {
		oplog_entry_release(&e);
		return -1;
	}
	return 0;
}

static int load_v2(oplog *l, const unsigned char *p, size_t len, size_t *ucap,
		   size_t *rcap, bool tops_only)
{
	uint32_t nu = get_u32le(p + 8), nr = get_u32le(p + 12);
	size_t off = OPL_HDR;
	oplog_entry e;

	for (uint64_t i = 0; i < (uint64_t)nu + nr; i++) {
		bool undo = i < nu;
		uint32_t n;
		const unsigned char *q, *payload;
		int r;
		if (len - off < 12 ||
		    (n = get_u32le(p + off)) > len - off - 12) {
			/* the framing is lost: the rest is one damaged
			 * entry, in the place of the first one it holds */
			r = blob_entry(&e, p + off, len - off,
				       "the history file is cut or damaged "
				       "here");
			if (r == 0)
				r = undo ? push_entry(&l->undo, &l->nundo, ucap,
						      &e)
					 : push_entry(&l->redo, &l->nredo, rcap,
						      &e);
			if (r < 0) {
				oplog_entry_release(&e);
				return -1;
			}
			return 0;
		}
		payload = p + off + 4;
		q = payload;
		if (tops_only && i + 1 != nu && i + 1 != (uint64_t)nu + nr) {
			/* not a top: neither decoded nor checked */
			r = raw_entry(&e, payload, n, get_u64le(payload + n));
			e.opaque = true;
		} else if (get_u64le(payload + n) != sum64(payload, n)) {
			r = damaged_entry(&e, payload, n,
					  get_u64le(payload + n),
					  "its checksum does not match");
		} else if ((r = oplog_entry_decode(&e, &q, payload + n)) < 0 ||
			   q != payload + n) {
			if (r == 0)
				oplog_entry_release(&e);
			else if (r != DECREE_ECORRUPT)
				return r;
			error_clear();
			r = damaged_entry(&e, payload, n,
					  get_u64le(payload + n),
					  "it cannot be read");
		}
		if (r == 0)
			r = undo ? push_entry(&l->undo, &l->nundo, ucap, &e)
				 : push_entry(&l->redo, &l->nredo, rcap, &e);
		if (r < 0) {
			oplog_entry_release(&e);
			return -1;
		}
		off += 12 + n;
	}
	if (off == len)
		return 0;
	/* bytes after the last entry: nothing oplog_save writes; kept as a
	 * damaged entry on top of the redo history (a new change clears
	 * that) */
	if (blob_entry(&e, p + off, len - off,
		       "bytes follow the last entry of the history file") < 0 ||
	    push_entry(&l->redo, &l->nredo, rcap, &e) < 0) {
		oplog_entry_release(&e);
		return -1;
	}
	return 0;
}

static int load(oplog *l, const char *path, bool tops_only)
{
	buf data = BUF_INIT;
	const unsigned char *p;
	size_t ucap = 0, rcap = 0;
	oplog_entry e;
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
	if (data.len >= 8 && !memcmp(p, OPL_MAGIC, 4) &&
	    get_u32le(p + 4) == 1) {
		r = load_v1(l, p, data.len, &ucap, &rcap);
	} else if (data.len >= OPL_HDR && !memcmp(p, OPL_MAGIC, 4) &&
		   get_u64le(p + 16) == sum64(p, 16) &&
		   get_u32le(p + 4) != OPL_VERSION) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"history file '%s' has version %u, which this decree "
			"cannot read",
			path, get_u32le(p + 4));
	} else if (data.len >= OPL_HDR && !memcmp(p, OPL_MAGIC, 4) &&
		   get_u64le(p + 16) == sum64(p, 16) &&
		   get_u32le(p + 8) <= OPL_MAX &&
		   get_u32le(p + 12) <= OPL_MAX) {
		r = load_v2(l, p, data.len, &ucap, &rcap, tops_only);
	} else {
		/* no readable header (or an empty file, which oplog_save
		 * never writes): all of it is one damaged entry */
		r = blob_entry(&e, p, data.len,
			       "the history file's header is damaged");
		if (r == 0 &&
		    (r = push_entry(&l->undo, &l->nundo, &ucap, &e)) < 0)
			oplog_entry_release(&e);
	}
	buf_release(&data);
	if (r < 0) {
		oplog_release(l);
		return r;
	}
	for (size_t i = 0; i < l->nundo; i++)
		l->ndamaged += l->undo[i].damaged;
	for (size_t i = 0; i < l->nredo; i++)
		l->ndamaged += l->redo[i].damaged;
	return 0;
}

int oplog_load_all(oplog *l, const char *path)
{
	return load(l, path, false);
}

int oplog_load_for_update(oplog *l, const char *path)
{
	return load(l, path, true);
}

int oplog_load(oplog *l, const char *path)
{
	int r;

	if ((r = oplog_load_all(l, path)) < 0 || !l->ndamaged)
		return r;
	for (size_t i = 0; i < l->nundo + l->nredo; i++) {
		bool undo = i < l->nundo;
		const oplog_entry *e = undo ? &l->undo[i]
					    : &l->redo[i - l->nundo];
		if (!e->damaged)
			continue;
		r = decree_error_set(
			DECREE_ECORRUPT,
			"history file '%s' is damaged: entry %zu of the %s "
			"history (%s)",
			path, undo ? i + 1 : i - l->nundo + 1,
			undo ? "undo" : "redo", e->damage);
		break;
	}
	oplog_release(l);
	return r;
}

static int save_entry(buf *b, const oplog_entry *e)
{
	size_t at = b->len;

	if (e->damaged || e->opaque) { /* as it was (damaged: still so) */
		if (e->raw_len > UINT32_MAX)
			return decree_error_set(
				DECREE_EINVALID,
				"damaged history entry too large");
		if (buf_put_u32(b, (uint32_t)e->raw_len) < 0 ||
		    buf_put(b, e->raw, e->raw_len) < 0 ||
		    buf_put_u64(b, e->raw_sum) < 0)
			return -1;
		return 0;
	}
	if (buf_put_u32(b, 0) < 0 || oplog_entry_encode(b, e) < 0)
		return -1;
	if (b->len - at - 4 > UINT32_MAX)
		return decree_error_set(DECREE_EINVALID,
					"history entry too large");
	put_u32le((unsigned char *)b->ptr + at, (uint32_t)(b->len - at - 4));
	return buf_put_u64(b, sum64(b->ptr + at + 4, b->len - at - 4));
}

int oplog_encode(buf *b, const oplog *l)
{
	size_t first = l->nundo > OPLOG_MAX_UNDO ? l->nundo - OPLOG_MAX_UNDO
						 : 0;
	size_t at = b->len;
	int r;

	if (buf_put(b, OPL_MAGIC, 4) < 0 || buf_put_u32(b, OPL_VERSION) < 0 ||
	    buf_put_u32(b, (uint32_t)(l->nundo - first)) < 0 ||
	    buf_put_u32(b, (uint32_t)l->nredo) < 0 ||
	    buf_put_u64(b, sum64(b->ptr + at, 16)) < 0)
		return -1;
	for (size_t i = first; i < l->nundo; i++)
		if ((r = save_entry(b, &l->undo[i])) < 0)
			return r;
	for (size_t i = 0; i < l->nredo; i++)
		if ((r = save_entry(b, &l->redo[i])) < 0)
			return r;
	return 0;
}

int oplog_save(const oplog *l, const char *path)
{
	buf b = BUF_INIT;
	int r;

	if ((r = oplog_encode(&b, l)) == 0)
		r = fs_write_atomic(path, b.ptr, b.len, 0644);
	buf_release(&b);
	return r;
}

size_t oplog_drop_damaged(oplog *l)
{
	size_t dropped = 0, k;

	for (int pass = 0; pass < 2; pass++) {
		oplog_entry *v = pass ? l->redo : l->undo;
		size_t *n = pass ? &l->nredo : &l->nundo;
		for (size_t i = k = 0; i < *n; i++) {
			if (v[i].damaged) {
				oplog_entry_release(&v[i]);
				dropped++;
			} else {
				v[k++] = v[i];
			}
		}
		*n = k;
	}
	l->ndamaged = 0;
	return dropped;
}

int oplog_push(oplog *l, const oplog_entry *e)
{
	size_t cap = l->nundo;

	if (l->nundo && !l->undo[l->nundo - 1].damaged &&
	    !strcmp(l->undo[l->nundo - 1].id, e->id))
		return 1; /* already done */
	for (size_t i = 0; i < l->nredo; i++)
		oplog_entry_release(&l->redo[i]);
	l->nredo = 0;
	if (GROW(l->undo, cap, l->nundo + 1) < 0 ||
	    oplog_entry_copy(&l->undo[l->nundo], e) < 0)
		return DECREE_ERROR;
	l->nundo++;
	return 0;
}

int oplog_move(oplog *l, bool undo, const char *id)
{
	oplog_entry **from = undo ? &l->undo : &l->redo;
	size_t *nfrom = undo ? &l->nundo : &l->nredo;
	oplog_entry **to = undo ? &l->redo : &l->undo;
	size_t *nto = undo ? &l->nredo : &l->nundo;
	size_t cap = *nto;

	if (!*nfrom || (*from)[*nfrom - 1].damaged ||
	    strncmp((*from)[*nfrom - 1].id, id, 16))
		return 1; /* already moved */
	if (GROW(*to, cap, *nto + 1) < 0)
		return DECREE_ERROR;
	(*to)[(*nto)++] = (*from)[--*nfrom];
	return 0;
}

int oplog_update(const char *path, const oplog_entry *e, bool undo,
		 const char *id)
{
	oplog l = OPLOG_INIT;
	int r;

	/* damaged entries stay as they are: a push or a move needs none
	 * of them, and only the tops */
	if ((r = oplog_load_for_update(&l, path)) < 0)
		return r;
	r = e ? oplog_push(&l, e) : oplog_move(&l, undo, id);
	if (r == 0)
		r = oplog_save(&l, path);
	else if (r > 0)
		r = 0; /* already done */
	oplog_release(&l);
	return r;
}
