/*
 * checkpoint.c - create, list, resolve, show, compare, prune and drop
 * checkpoints (decree/checkpoint.h).
 *
 * A checkpoint = stored objects (blobs + trees) + one record.  The record
 * is written last, atomically, after the pack holding every object it
 * needs is durable; so a crash leaves either no checkpoint or a complete
 * one (an orphan pack at worst, removed by gc).
 *
 * One checkpoint per (session, message): creating it again returns the
 * existing id, which makes "checkpoint before each user message" safe to
 * retry.
 */
#include "util/common.h"
#include "ops/ckpt.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/oidset.h"
#include "store/repo.h"
#include "scan/scan.h"
#include "scan/statcache.h"
#include "store/tree.h"

#include <dirent.h>
#include <jansson.h>
#include <time.h>

#define DEFAULT_SESSION "default"

/* Merge packs under 8 MiB once there are more than 16 (one per checkpoint
 * otherwise; each costs an open and a lookup). */
#define REPACK_MAX_PACKS   16
#define REPACK_SMALL_BYTES (8u << 20)

/* --- records ----------------------------------------------------------------
 */

void ckpt_rec_release(ckpt_rec *r)
{
	decree_free(r->session);
	decree_free(r->message);
	decree_free(r->label);
	decree_free(r->root);
	memset(r, 0, sizeof(*r));
}

void ckpt_free_all(ckpt_rec *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ckpt_rec_release(&v[i]);
	decree_free(v);
}

static void format_time(char *out, size_t len, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static char *json_dup(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? decree_strdup(json_string_value(v)) : NULL;
}

int ckpt_load_file(ckpt_rec *out, const char *path, const char *id)
{
	buf data = BUF_INIT;
	json_t *o = NULL, *v;
	json_error_t jerr;
	oid sum;
	char hex[SHA256_HEXLEN + 1];
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = fs_read_path(path, &data)) < 0)
		goto done;
	sha256_buf(&sum, data.ptr, data.len);
	oid_to_hex(hex, &sum);
	if (strcmp(hex, id)) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "checkpoint record %s is damaged", id);
		goto done;
	}
	if (!(o = json_loadb(data.ptr, data.len, 0, &jerr)) ||
	    !json_is_object(o) ||
	    json_integer_value(json_object_get(o, "version")) != 1 ||
	    !json_is_string(json_object_get(o, "tree")) ||
	    !json_is_string(json_object_get(o, "session"))) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"checkpoint record %s is not a version 1 record", id);
		goto done;
	}
	if ((r = oid_from_hex(&out->tree,
			      json_string_value(json_object_get(o, "tree")))) <
	    0) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "checkpoint record %s has a bad tree id",
				     id);
		goto done;
	}
	out->session = json_dup(o, "session");
	out->message = json_dup(o, "message");
	out->label = json_dup(o, "label");
	out->root = json_dup(o, "root");
	snprintf(out->info.id, sizeof(out->info.id), "%s", id);
	oid_to_hex(out->info.tree, &out->tree);
	out->info.session = out->session;
	out->info.message = out->message;
	out->info.label = out->label;
	out->info.created_ns =
		json_integer_value(json_object_get(o, "created_ns"));
	format_time(out->info.created_at, sizeof(out->info.created_at),
		    out->info.created_ns);
	out->info.file_count =
		(uint64_t)json_integer_value(json_object_get(o, "file_count"));
	out->info.total_bytes =
		(uint64_t)json_integer_value(json_object_get(o, "total_bytes"));
	v = json_object_get(o, "skipped");
	out->info.skipped_count = json_is_array(v) ? json_array_size(v) : 0;
	r = 0;
done:
	if (r < 0)
		ckpt_rec_release(out);
	json_decref(o);
	buf_release(&data);
	return r;
}

static int rec_cmp(const void *a, const void *b)
{
	const ckpt_rec *x = a, *y = b;
	if (x->info.created_ns != y->info.created_ns)
		return x->info.created_ns < y->info.created_ns ? -1 : 1;
	return strcmp(x->info.id, y->info.id);
}

/*
 * The record cache: <rootdir>/checkpoints.cache holds the parsed fields of
 * every record, so that listing 100 checkpoints reads one file instead of
 * opening and parsing 100.  It is only a cache: the directory listing is
 * the truth (records are immutable and named by their hash, so an entry
 * whose id is listed is valid; ids no longer listed are dropped), a
 * damaged cache is ignored, and it is rewritten when it differs.
 *
 * Layout (little endian): "DCKC" u32 version(1) u32 count, then per record
 * id[32] tree[32] i64 created_ns u64 file_count u64 total_bytes
 * u64 skipped_count and four strings (session, message, label, root), each
 * u16 length (0xffff = none) + bytes; then SHA-256 of everything before.
 */
#define CACHE_MAGIC "DCKC"
#define NO_STRING   0xffffu

static int cache_put_str(buf *b, const char *str)
{
	size_t n = str ? strlen(str) : 0;
	if (!str)
		return buf_put_u16(b, NO_STRING);
	if (n >= NO_STRING)
		return decree_error_set(DECREE_EINVALID,
					"string too long for the cache");
	if (buf_put_u16(b, (unsigned)n) < 0)
		return -1;
	return buf_put(b, str, n);
}

static int cache_get_str(char **out, const unsigned char **p,
			 const unsigned char *end)
{
	size_t n;
	*out = NULL;
	if (end - *p < 2)
		return -1;
	n = get_u16le(*p);
	*p += 2;
	if (n == NO_STRING)
		return 0;
	if ((size_t)(end - *p) < n || memchr(*p, '\0', n))
		return -1;
	if (!(*out = decree_strndup((const char *)*p, n)))
		return -2;
	*p += n;
	return 0;
}

static void cache_save(decree_store *s, const ckpt_rec *v, size_t n)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	oid sum;

	if (buf_put(&b, CACHE_MAGIC, 4) < 0 || buf_put_u32(&b, 1) < 0 ||
	    buf_put_u32(&b, (uint32_t)n) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		oid id;
		if (oid_from_hex(&id, v[i].info.id) < 0 ||
		    buf_put(&b, id.b, SHA256_LEN) < 0 ||
		    buf_put(&b, v[i].tree.b, SHA256_LEN) < 0 ||
		    buf_put_u64(&b, (uint64_t)v[i].info.created_ns) < 0 ||
		    buf_put_u64(&b, v[i].info.file_count) < 0 ||
		    buf_put_u64(&b, v[i].info.total_bytes) < 0 ||
		    buf_put_u64(&b, v[i].info.skipped_count) < 0 ||
		    cache_put_str(&b, v[i].session) < 0 ||
		    cache_put_str(&b, v[i].message) < 0 ||
		    cache_put_str(&b, v[i].label) < 0 ||
		    cache_put_str(&b, v[i].root) < 0)
			goto done;
	}
	sha256_buf(&sum, b.ptr, b.len);
	if (buf_put(&b, sum.b, SHA256_LEN) < 0)
		goto done;
	repo_file(path, s, "checkpoints.cache");
	fs_write_atomic(path, b.ptr, b.len, 0644);
done:
	/* a cache that cannot be written (read-only store) costs only speed */
	decree_error_clear();
	buf_release(&b);
}

/* Parse the cache into recs (fields owned), indexed by id in `ids`. */
static int cache_load(ckpt_rec **recs, size_t *nrecs, oidset *ids,
		      decree_store *s)
{
	char path[PATH_MAX];
	buf data = BUF_INIT;
	const unsigned char *p, *end;
	ckpt_rec *v = NULL;
	uint32_t count;
	size_t n = 0;
	oid sum;
	int r = 0;

	*recs = NULL;
	*nrecs = 0;
	repo_file(path, s, "checkpoints.cache");
	if (fs_read_path(path, &data) < 0)
		goto ignore;
	p = (const unsigned char *)data.ptr;
	if (data.len < 12 + SHA256_LEN || memcmp(p, CACHE_MAGIC, 4) ||
	    get_u32le(p + 4) != 1)
		goto ignore;
	end = p + data.len - SHA256_LEN;
	sha256_buf(&sum, p, data.len - SHA256_LEN);
	if (memcmp(sum.b, end, SHA256_LEN))
		goto ignore;
	count = get_u32le(p + 8);
	p += 12;
	if (count > data.len / 104 ||
	    !(v = decree_calloc(count ? count : 1, sizeof(*v)))) {
		r = count > data.len / 104 ? 0 : -1;
		goto ignore;
	}
	for (; n < count; n++) {
		ckpt_rec *c = &v[n];
		oid id;
		int sr;
		if (end - p < 96)
			goto ignore;
		memcpy(id.b, p, SHA256_LEN);
		memcpy(c->tree.b, p + 32, SHA256_LEN);
		c->info.created_ns = (int64_t)get_u64le(p + 64);
		c->info.file_count = get_u64le(p + 72);
		c->info.total_bytes = get_u64le(p + 80);
		c->info.skipped_count = get_u64le(p + 88);
		p += 96;
		if ((sr = cache_get_str(&c->session, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->message, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->label, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->root, &p, end)) < 0 ||
		    !c->session) {
			if (sr == -2)
				r = -1;
			n++; /* release this one too */
			goto ignore;
		}
		oid_to_hex(c->info.id, &id);
		oid_to_hex(c->info.tree, &c->tree);
		c->info.session = c->session;
		c->info.message = c->message;
		c->info.label = c->label;
		format_time(c->info.created_at, sizeof(c->info.created_at),
			    c->info.created_ns);
		if ((r = oidset_put(ids, &id, n)) < 0) {
			n++;
			goto ignore;
		}
	}
	if (p != end)
		goto ignore;
	buf_release(&data);
	*recs = v;
	*nrecs = n;
	return 0;
ignore:
	ckpt_free_all(v, n);
	oidset_release(ids);
	buf_release(&data);
	decree_error_clear();
	return r;
}

int ckpt_load_all(ckpt_rec **out, size_t *n_out, decree_store *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 80];
	ckpt_rec *v = NULL, *cached = NULL;
	size_t n = 0, cap = 0, ncached = 0;
	oidset ids = OIDSET_INIT;
	bool dirty = false;
	DIR *d;
	struct dirent *de;
	int r = 0;

	*out = NULL;
	*n_out = 0;
	repo_file(dir, s, "checkpoints");
	if (!(d = opendir(dir))) {
		if (errno == ENOENT)
			return 0;
		return decree_error_os("cannot open '%s'", dir);
	}
	if ((r = cache_load(&cached, &ncached, &ids, s)) < 0) {
		closedir(d);
		return r;
	}
	while ((de = readdir(d)) != NULL) {
		uint64_t at;
		oid id;
		if (strlen(de->d_name) != SHA256_HEXLEN ||
		    oid_from_hex(&id, de->d_name) < 0) {
			decree_error_clear();
			continue;
		}
		if ((r = GROW(v, cap, n + 1)) < 0)
			break;
		if (oidset_get(&ids, &id, &at) && at < ncached &&
		    cached[at].session) {
			v[n++] = cached[at]; /* moved: the cache copy is cleared
					      */
			memset(&cached[at], 0, sizeof(cached[at]));
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = ckpt_load_file(&v[n], path, de->d_name);
		if (r == DECREE_ENOTFOUND) { /* pruned meanwhile */
			decree_error_clear();
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		n++;
		dirty = true;
	}
	closedir(d);
	/* cached records no longer listed (pruned, dropped) make it stale */
	for (size_t i = 0; i < ncached; i++)
		dirty |= cached[i].session != NULL;
	ckpt_free_all(cached, ncached);
	oidset_release(&ids);
	if (r < 0) {
		ckpt_free_all(v, n);
		return r;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), rec_cmp);
	if (dirty)
		cache_save(s, v, n);
	*out = v;
	*n_out = n;
	return 0;
}

int ckpt_resolve(ckpt_rec *out, decree_store *s, const char *ref)
{
	ckpt_rec *v;
	size_t n, found = SIZE_MAX, nmatch = 0;
	const char *colon = strchr(ref, ':');
	buf cands = BUF_INIT;
	int r;

	memset(out, 0, sizeof(*out));
	if (!colon && !is_hex_prefix(ref, 4))
		return decree_error_set(
			DECREE_EINVALID,
			"invalid checkpoint reference '%s' (use an id, a prefix of "
			"4+ hex digits, or SESSION:MESSAGE)",
			ref);
	if ((r = ckpt_load_all(&v, &n, s)) < 0)
		return r;
	for (size_t i = n; i-- > 0;) {
		bool match;
		if (colon) {
			size_t sl = (size_t)(colon - ref);
			match = strlen(v[i].session) == sl &&
				!strncmp(v[i].session, ref, sl) &&
				v[i].message &&
				!strcmp(v[i].message, colon + 1);
		} else {
			char lower[SHA256_HEXLEN + 1];
			size_t k;
			for (k = 0; ref[k] && k < SHA256_HEXLEN; k++)
				lower[k] = (char)(ref[k] >= 'A' && ref[k] <= 'F'
							  ? ref[k] + 32
							  : ref[k]);
			lower[k] = '\0';
			match = !strncmp(v[i].info.id, lower, k);
		}
		if (!match)
			continue;
		if (nmatch++ == 0)
			found = i;
		if (nmatch <= 10)
			buf_printf(&cands, "\n  %.12s %s %s", v[i].info.id,
				   v[i].info.created_at, v[i].session);
	}
	if (nmatch == 0) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "no checkpoint matches '%s'", ref);
	} else if (nmatch > 1 && !colon) {
		r = decree_error_set(
			DECREE_EAMBIGUOUS,
			"checkpoint reference '%s' is ambiguous; candidates:%s",
			ref, cands.ptr);
	} else {
		/* the list may come from the record cache: whatever acts on a
		 * checkpoint reads and verifies the record itself */
		char path[PATH_MAX + 80];
		repo_file(path, s, "checkpoints");
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
			 "/%s", v[found].info.id);
		r = ckpt_load_file(out, path, v[found].info.id);
	}
	ckpt_free_all(v, n);
	buf_release(&cands);
	return r;
}

/* --- scanning and writing ---------------------------------------------------
 */

int ckpt_rules_load(void *payload, const char *dir, const char *name, buf *out,
		    bool *found)
{
	const ckpt_rules *l = payload;
	char path[PATH_MAX];
	const snap_entry *e;

	*found = false;
	snprintf(path, sizeof(path), "%s%s%s", dir, *dir ? "/" : "", name);
	e = snap_find(l->s, path);
	if (!e || e->mode == MODE_SKIP || e->mode == MODE_LINK)
		return 0;
	*found = true;
	return odb_read(out, NULL, l->db, &e->id);
}

int ckpt_scan(snap *out, decree_store *s, odb_writer *w, statcache **cache_out,
	      const snap *rules, bool lazy_hash)
{
	char path[PATH_MAX];
	statcache *cache = NULL;
	ckpt_rules cr;
	scan_opts o;
	int r;

	if (cache_out)
		*cache_out = NULL;
	memset(&o, 0, sizeof(o));
	repo_file(path, s, "statcache");
	if ((r = statcache_load(&cache, path)) < 0)
		return r;
	o.max_file_size = s->max_file_size;
	o.excludes = (const char *const *)s->excludes;
	o.threads = s->threads;
	o.store = w;
	o.cache = cache;
	o.skip_dir = s->store_rel;
	o.lazy_hash = lazy_hash;
	if (rules) {
		cr.s = rules;
		if ((r = repo_odb(&cr.db, s, false)) < 0) {
			statcache_free(cache);
			return r;
		}
		o.ignore_load = ckpt_rules_load;
		o.ignore_payload = &cr;
	}
	r = scan_tree(out, s->rootfd, &o);
	if (r == 0 && cache_out)
		*cache_out = cache;
	else
		statcache_free(cache);
	return r;
}

int ckpt_save_statcache(decree_store *s, const snap *cur, statcache *cache)
{
	char path[PATH_MAX];
	int r;

	repo_file(path, s, "statcache");
	r = statcache_update(path, cur, cache);
	statcache_free(cache);
	return r;
}

int ckpt_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
	       odb_writer *w, const snap *cur, const char *session,
	       const char *message, const char *label)
{
	char hex[SHA256_HEXLEN + 1], path[PATH_MAX + 80], created[40];
	buf rec = BUF_INIT;
	uint64_t files, bytes;
	int64_t now = fs_now_ns();
	oid root, id;
	bool first = true;
	int r;

	if ((r = tree_write(&root, w, cur)) < 0 ||
	    (r = odb_writer_commit(w)) < 0)
		goto done;
	snap_totals(cur, &files, &bytes);
	oid_to_hex(hex, &root);
	format_time(created, sizeof(created), now);
	if (buf_puts(&rec, "{\"version\":1,\"type\":\"checkpoint\"") < 0 ||
	    json_kv_str(&rec, "root", s->root, true) < 0 ||
	    json_kv_str(&rec, "session", session ? session : DEFAULT_SESSION,
			true) < 0 ||
	    json_kv_str(&rec, "message", message, true) < 0 ||
	    json_kv_str(&rec, "label", label, true) < 0 ||
	    buf_printf(&rec,
		       ",\"created_at\":\"%s\",\"created_ns\":%" PRId64
		       ",\"tree\":\"%s\",\"file_count\":%" PRIu64
		       ",\"total_bytes\":%" PRIu64 ",\"skipped\":[",
		       created, now, hex, files, bytes) < 0) {
		r = -1;
		goto done;
	}
	for (size_t i = 0; i < cur->n; i++) {
		const snap_entry *e = &cur->v[i];
		if (e->mode != MODE_SKIP)
			continue;
		if (buf_puts(&rec, first ? "{\"path\":" : ",{\"path\":") < 0 ||
		    json_str(&rec, e->path) < 0 ||
		    buf_printf(&rec,
			       ",\"size\":%" PRIu64
			       ",\"reason\":\"too large\"}",
			       e->size) < 0) {
			r = -1;
			goto done;
		}
		first = false;
	}
	if (buf_puts(&rec, "]}\n") < 0) {
		r = -1;
		goto done;
	}
	sha256_buf(&id, rec.ptr, rec.len);
	oid_to_hex(id_out, &id);
	repo_file(path, s, "checkpoints");
	if ((r = fs_mkdirs(path, 0755)) < 0)
		goto done;
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s",
		 id_out);
	if ((r = fs_write_atomic(path, rec.ptr, rec.len, 0444)) < 0)
		unlink(path); /* failed after the rename (directory fsync): undo
				 it */
done:
	buf_release(&rec);
	return r;
}

/* --- public API -------------------------------------------------------------
 */

int decree_checkpoint_create(char id_out[DECREE_ID_HEXLEN + 1], bool *created,
			     decree_store *s,
			     const decree_checkpoint_create_options *o)
{
	decree_checkpoint_create_options def =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	const char *session;
	odb_writer *w = NULL;
	snap cur = SNAP_INIT;
	statcache *cache = NULL;
	odb *db;
	int r;

	if (created)
		*created = false;
	if (!o)
		o = &def;
	if (o->version != DECREE_CHECKPOINT_CREATE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid checkpoint options");
	session = o->session && *o->session ? o->session : DEFAULT_SESSION;
	if (strchr(session, ':') || strchr(session, '\n'))
		return decree_error_set(
			DECREE_EINVALID,
			"session name '%s' must not contain ':' or newlines",
			session);
	if ((r = repo_lock(s)) < 0)
		return r;
	if (o->message) {
		ckpt_rec *v;
		size_t n;
		if ((r = ckpt_load_all(&v, &n, s)) < 0)
			goto done;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(v[i].session, session) && v[i].message &&
			    !strcmp(v[i].message, o->message)) {
				memcpy(id_out, v[i].info.id,
				       DECREE_ID_HEXLEN + 1);
				ckpt_free_all(v, n);
				goto done;
			}
		}
		ckpt_free_all(v, n);
	}
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0)
		goto done;
	if ((r = ckpt_scan(&cur, s, w, &cache, NULL, false)) < 0)
		goto done;
	if ((r = ckpt_write(id_out, s, w, &cur, session, o->message,
			    o->label)) < 0)
		goto done;
	if (created)
		*created = true;
	/* The checkpoint is complete; a stale cache or a missed repack only
	 * costs speed. */
	if (ckpt_save_statcache(s, &cur, cache) < 0)
		decree_error_clear();
	cache = NULL;
	if (odb_repack_small(db, REPACK_MAX_PACKS, REPACK_SMALL_BYTES) < 0)
		decree_error_clear();
	{
		/* what was just scanned is that tree: keep it for the show or
		 * diff that often follows (the pipeline's manifest and diff) */
		ckpt_rec rec;
		if (ckpt_resolve(&rec, s, id_out) == 0) {
			for (size_t i = 0; i < cur.n; i++) {
				/* stat data is not part of a tree */
				snap_entry *e = &cur.v[i];
				e->mtime_ns = e->ctime_ns = 0;
				e->ino = e->dev = 0;
				e->cached = 0;
			}
			repo_tree_cache_put(s, &cur, &rec.tree);
			ckpt_rec_release(&rec);
		} else {
			decree_error_clear();
		}
	}
done:
	statcache_free(cache);
	odb_writer_free(w);
	snap_release(&cur);
	repo_unlock(s);
	return r;
}

struct decree_checkpoint_list {
	ckpt_rec *v;
	size_t n;
};

/* Tree id of the working tree now (nothing stored). */
static int worktree_tree(oid *out, decree_store *s)
{
	snap cur = SNAP_INIT;
	int r = ckpt_scan(&cur, s, NULL, NULL, NULL, false);
	if (r == 0)
		r = tree_write(out, NULL, &cur);
	snap_release(&cur);
	return r;
}

int decree_checkpoint_list_get(decree_checkpoint_list **out, decree_store *s,
			       const char *session, unsigned flags)
{
	decree_checkpoint_list *l;
	oid now;
	bool have_now = false;
	size_t k = 0;
	int r;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	if ((r = ckpt_load_all(&l->v, &l->n, s)) < 0)
		goto fail;
	for (size_t i = 0; i < l->n; i++) {
		if (session && strcmp(l->v[i].session, session)) {
			ckpt_rec_release(&l->v[i]);
			continue;
		}
		l->v[k++] = l->v[i];
	}
	l->n = k;
	if (flags & DECREE_LIST_HAS_CHANGES) {
		for (size_t i = 0; i < l->n; i++) {
			size_t j;
			for (j = i + 1; j < l->n; j++)
				if (!strcmp(l->v[j].session, l->v[i].session))
					break;
			if (j < l->n) {
				l->v[i].info.has_changes =
					oid_cmp(&l->v[i].tree, &l->v[j].tree) !=
					0;
				continue;
			}
			if (!have_now) {
				if ((r = worktree_tree(&now, s)) < 0)
					goto fail;
				have_now = true;
			}
			l->v[i].info.has_changes =
				oid_cmp(&l->v[i].tree, &now) != 0;
		}
	}
	*out = l;
	return 0;
fail:
	decree_checkpoint_list_free(l);
	return r;
}

size_t decree_checkpoint_list_count(const decree_checkpoint_list *l)
{
	return l ? l->n : 0;
}

const decree_checkpoint_info *
decree_checkpoint_list_at(const decree_checkpoint_list *l, size_t i)
{
	return l && i < l->n ? &l->v[i].info : NULL;
}

void decree_checkpoint_list_free(decree_checkpoint_list *l)
{
	if (!l)
		return;
	ckpt_free_all(l->v, l->n);
	decree_free(l);
}

int decree_checkpoint_resolve(char id_out[DECREE_ID_HEXLEN + 1],
			      decree_store *s, const char *ref)
{
	ckpt_rec rec;
	int r = ckpt_resolve(&rec, s, ref);
	if (r == 0) {
		memcpy(id_out, rec.info.id, DECREE_ID_HEXLEN + 1);
		ckpt_rec_release(&rec);
	}
	return r;
}

/* --- show -------------------------------------------------------------------
 */

struct decree_snapshot {
	snap s;
	ckpt_rec rec;
};

int decree_checkpoint_show(decree_snapshot **out,
			   decree_checkpoint_info *info_out, decree_store *s,
			   const char *ref)
{
	decree_snapshot *sn;
	const snap *tree;
	int r;

	*out = NULL;
	if (!(sn = decree_calloc(1, sizeof(*sn))))
		return -1;
	if ((r = ckpt_resolve(&sn->rec, s, ref)) < 0 ||
	    (r = repo_tree(&tree, s, &sn->rec.tree)) < 0 ||
	    (r = snap_copy(&sn->s, tree)) < 0) {
		decree_snapshot_free(sn);
		return r;
	}
	if (info_out)
		*info_out = sn->rec.info;
	*out = sn;
	return 0;
}

size_t decree_snapshot_count(const decree_snapshot *sn)
{
	return sn ? sn->s.n : 0;
}

void decree_snapshot_at(decree_file_info *out, const decree_snapshot *sn,
			size_t i)
{
	const snap_entry *e = &sn->s.v[i];
	memset(out, 0, sizeof(*out));
	out->path = e->path;
	out->size = e->size;
	switch (e->mode) {
	case MODE_FILE:
		out->mode = 0644;
		break;
	case MODE_EXEC:
		out->mode = 0755;
		break;
	case MODE_LINK:
		out->mode = 0120000;
		break;
	default:
		out->mode = 0;
		out->skip_reason = "too large";
	}
	if (e->mode != MODE_SKIP)
		oid_to_hex(out->sha256, &e->id);
}

void decree_snapshot_free(decree_snapshot *sn)
{
	if (!sn)
		return;
	snap_release(&sn->s);
	ckpt_rec_release(&sn->rec);
	decree_free(sn);
}

/* --- compare ----------------------------------------------------------------
 */

struct cmp_ctx {
	decree_change_cb cb;
	void *payload;
};

static int cmp_one(void *payload, const char *path, const snap_entry *a,
		   const snap_entry *b)
{
	struct cmp_ctx *c = payload;
	char st = !a ? 'A' : !b ? 'D' : 'M';
	return c->cb(c->payload, path, st);
}

int decree_checkpoint_compare(decree_store *s, const char *ref,
			      const char *ref2, decree_change_cb cb,
			      void *payload)
{
	ckpt_rec a, b;
	snap sa = SNAP_INIT, sb = SNAP_INIT;
	struct cmp_ctx c = { cb, payload };
	odb *db;
	int r;

	memset(&b, 0, sizeof(b));
	if ((r = ckpt_resolve(&a, s, ref)) < 0)
		return r;
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = tree_read(&sa, db, &a.tree)) < 0)
		goto done;
	if (ref2) {
		if ((r = ckpt_resolve(&b, s, ref2)) < 0 ||
		    (r = tree_read(&sb, db, &b.tree)) < 0)
			goto done;
	} else if ((r = ckpt_scan(&sb, s, NULL, NULL, &sa, false)) < 0) {
		goto done;
	}
	r = snap_diff(&sa, &sb, cmp_one, &c);
done:
	snap_release(&sa);
	snap_release(&sb);
	ckpt_rec_release(&a);
	ckpt_rec_release(&b);
	return r;
}

/* --- prune and drop
 * ----------------------------------------------------------- */

int ckpt_remove(decree_store *s, const char *id)
{
	char path[PATH_MAX + 80];
	repo_file(path, s, "checkpoints");
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", id);
	if (unlink(path) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove checkpoint %s", id);
	return 0;
}

int decree_checkpoint_prune(size_t *removed, decree_store *s,
			    const char *session, long keep,
			    long older_than_days)
{
	ckpt_rec *v = NULL;
	size_t n = 0;
	int64_t now = fs_now_ns();
	char dir[PATH_MAX];
	int r;

	*removed = 0;
	if (keep <= 0 && older_than_days < 0)
		return decree_error_set(
			DECREE_EINVALID,
			"prune needs --keep N or --older-than DAYS");
	if (!repo_exists(s))
		return 0;
	if ((r = repo_lock(s)) < 0)
		return r;
	if ((r = ckpt_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		size_t newer = 0;
		bool last = true, drop = false;
		if (session && strcmp(v[i].session, session))
			continue;
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(v[j].session, v[i].session)) {
				newer++;
				last = false;
			}
		if (last)
			continue; /* never the newest of a session */
		if (keep > 0 && newer >= (size_t)keep)
			drop = true;
		if (older_than_days >= 0 &&
		    now - v[i].info.created_ns >
			    (int64_t)older_than_days * 86400 * 1000000000LL)
			drop = true;
		if (!drop)
			continue;
		if ((r = ckpt_remove(s, v[i].info.id)) < 0)
			goto done;
		(*removed)++;
	}
	repo_file(dir, s, "checkpoints");
	if (*removed)
		r = fs_fsync_dir_path(dir);
done:
	ckpt_free_all(v, n);
	repo_unlock(s);
	return r;
}

int decree_checkpoint_drop(size_t *removed, decree_store *s,
			   const char *session)
{
	ckpt_rec *v = NULL;
	size_t n = 0;
	char path[PATH_MAX];
	int r;

	*removed = 0;
	if (!repo_exists(s))
		return 0;
	if ((r = repo_lock(s)) < 0)
		return r;
	if ((r = ckpt_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		if (session && strcmp(v[i].session, session))
			continue;
		if ((r = ckpt_remove(s, v[i].info.id)) < 0)
			goto done;
		(*removed)++;
	}
	if (!session) {
		repo_file(path, s, "oplog");
		if (unlink(path) < 0 && errno != ENOENT) {
			r = decree_error_os("cannot remove '%s'", path);
			goto done;
		}
		repo_file(path, s, "statcache");
		unlink(path);
		repo_file(path, s, "statcache.delta");
		unlink(path);
	}
	repo_file(path, s, "checkpoints");
	r = fs_fsync_dir_path(path);
	if (r == DECREE_ERROR && errno == ENOENT) {
		decree_error_clear();
		r = 0;
	}
done:
	ckpt_free_all(v, n);
	repo_unlock(s);
	return r;
}
