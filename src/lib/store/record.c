/*
 * record.c - checkpoint records: reading, listing through the record
 * cache, resolving references, writing and removing (see record.h).
 */
#include "util/common.h"
#include "store/record.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/oidset.h"
#include "util/utc.h"
#include "store/repo.h"

#include <dirent.h>
#include <jansson.h>
#include <time.h>

static void free_strv(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		decree_free(v[i]);
	decree_free(v);
}

void record_release(record *r)
{
	decree_free(r->session);
	decree_free(r->message);
	decree_free(r->label);
	decree_free(r->root);
	free_strv(r->excludes);
	free_strv(r->config_excludes);
	memset(r, 0, sizeof(*r));
}

void record_free_all(record *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		record_release(&v[i]);
	decree_free(v);
}

static char *json_dup(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? decree_strdup(json_string_value(v)) : NULL;
}

/* Records are small; anything bigger is not one (and is not read whole). */
#define RECORD_MAX_BYTES (64u << 20)

/*
 * Read the bytes of the record file at `path`.  Never blocks on a FIFO
 * and never follows a symlink.  DECREE_ECORRUPT: it is not a regular file
 * of sane size (not a record); DECREE_ENOTFOUND: gone; -1 with *os set:
 * the system refused (permissions, I/O error); -1 otherwise: out of
 * memory.
 */
static int read_record_bytes(buf *out, const char *path, const char *id,
			     bool *os)
{
	struct stat st;
	int fd, r;

	*os = false;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return decree_error_set(DECREE_ENOTFOUND,
						"checkpoint record %s is gone",
						id);
		if (errno == ELOOP)
			return decree_error_set(
				DECREE_ECORRUPT,
				"checkpoint record %s is a symbolic link", id);
		*os = true;
		return decree_error_os("cannot open checkpoint record %s", id);
	}
	if (fstat(fd, &st) < 0) {
		*os = true;
		r = decree_error_os("cannot stat checkpoint record %s", id);
	} else if (!S_ISREG(st.st_mode)) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "checkpoint record %s is not a file", id);
	} else if ((uint64_t)st.st_size > RECORD_MAX_BYTES) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "checkpoint record %s is too large", id);
	} else {
		r = fs_read_fd(fd, out, path);
		*os = r < 0 && strcmp(error_last(), "out of memory");
	}
	close(fd);
	return r;
}

/* A count a record may hold (files_changed, ...), written only when known
 * (>= 0): an absent one reads as -1. */
static int put_count(buf *b, const char *key, int64_t v)
{
	return v < 0 ? 0 : buf_printf(b, ",\"%s\":%" PRId64, key, v);
}

/* A count a record may hold (files_changed, ...): -1 when absent. */
static int64_t json_count(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) >= 0
		       ? (int64_t)json_integer_value(v)
		       : -1;
}

/* An array of exclude patterns at `key` into *out (NULL when empty);
 * *present says whether the key is there.  Malformed: the record is
 * damaged (using it without them could make a restore delete what they
 * protect). */
static int load_patterns(char ***out, bool *present, json_t *o, const char *key,
			 const char *id)
{
	json_t *ex = json_object_get(o, key);
	size_t n;

	*present = ex && !json_is_null(ex);
	if (!*present)
		return 0;
	if (!json_is_array(ex))
		goto bad;
	n = json_array_size(ex);
	for (size_t i = 0; i < n; i++)
		if (!json_is_string(json_array_get(ex, i)))
			goto bad;
	if (!n)
		return 0;
	if (!(*out = decree_calloc(n + 1, sizeof(char *))))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((*out)[i] = decree_strdup(
			      json_string_value(json_array_get(ex, i)))))
			return -1;
	return 0;
bad:
	return decree_error_set(DECREE_ECORRUPT,
				"checkpoint record %s has bad %s", id, key);
}

/*
 * The scan rules a record carries ("excludes", "max_file_size",
 * "config_excludes").  Read whatever the version says: a record that
 * names rules is honoured.  Rules that are there but malformed make the
 * record damaged.
 */
static int load_rules(record *out, json_t *o, const char *id)
{
	json_t *mx = json_object_get(o, "max_file_size");
	bool present;
	int r;

	if (mx && !json_is_null(mx)) {
		if (!json_is_integer(mx) || json_integer_value(mx) <= 0)
			return decree_error_set(
				DECREE_ECORRUPT,
				"checkpoint record %s has a bad max_file_size",
				id);
		out->max_file_size = (uint64_t)json_integer_value(mx);
	}
	if ((r = load_patterns(&out->excludes, &present, o, "excludes", id)) <
	    0)
		return r;
	return load_patterns(&out->config_excludes, &out->config_known, o,
			     "config_excludes", id);
}

/* Parse and verify record bytes; *os as for read_record_bytes. */
static int load_record(record *out, const char *path, const char *id, bool *os)
{
	buf data = BUF_INIT;
	json_t *o = NULL, *v;
	json_error_t jerr;
	oid sum;
	char hex[SHA256_HEXLEN + 1];
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = read_record_bytes(&data, path, id, os)) < 0)
		goto done;
	sha256_buf(&sum, data.ptr, data.len);
	oid_to_hex(hex, &sum);
	if (strcmp(hex, id)) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"checkpoint record %s is damaged (its bytes hash to %.12s)",
			id, hex);
		goto done;
	}
	if (!(o = json_loadb(data.ptr, data.len, 0, &jerr)) ||
	    !json_is_object(o) ||
	    json_integer_value(json_object_get(o, "version")) < 1 ||
	    json_integer_value(json_object_get(o, "version")) > 3 ||
	    !json_is_string(json_object_get(o, "tree")) ||
	    !json_is_string(json_object_get(o, "session"))) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"checkpoint record %s is not a version 1, 2 or 3 "
			"record",
			id);
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
	if (!(out->session = json_dup(o, "session"))) {
		r = -1;
		goto done;
	}
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
	utc_format_ns(out->info.created_at, out->info.created_ns);
	out->info.file_count =
		(uint64_t)json_integer_value(json_object_get(o, "file_count"));
	out->info.total_bytes =
		(uint64_t)json_integer_value(json_object_get(o, "total_bytes"));
	v = json_object_get(o, "skipped");
	out->info.skipped_count = json_is_array(v) ? json_array_size(v) : 0;
	out->info.files_changed = json_count(o, "files_changed");
	out->info.insertions = json_count(o, "insertions");
	out->info.deletions = json_count(o, "deletions");
	if ((r = load_rules(out, o, id)) < 0)
		goto done;
	r = 0;
done:
	if (r < 0)
		record_release(out);
	json_decref(o);
	buf_release(&data);
	return r;
}

int record_load_file(record *out, const char *path, const char *id)
{
	bool os;
	return load_record(out, path, id, &os);
}

/* The session a damaged record's bytes claim, when they still parse as
 * JSON (NULL otherwise): prune and drop of that session delete it. */
static char *claimed_session(const char *path)
{
	buf data = BUF_INIT;
	json_t *o;
	json_error_t jerr;
	char *session = NULL;
	bool os;

	if (read_record_bytes(&data, path, "", &os) == 0 &&
	    (o = json_loadb(data.ptr, data.len, 0, &jerr)) != NULL) {
		session = json_dup(o, "session");
		json_decref(o);
	}
	buf_release(&data);
	error_clear();
	return session;
}

/* Remember a record that cannot be read (the error slot says why). */
static int note_damaged(decree_store *s, const char *path, const char *id,
			bool removable)
{
	repo_damaged_record *d, *v;

	if (!(v = decree_realloc(s->damaged, (s->ndamaged + 1) * sizeof(*v))))
		return -1;
	s->damaged = v;
	d = &v[s->ndamaged];
	memset(d, 0, sizeof(*d));
	snprintf(d->pub.id, sizeof(d->pub.id), "%s", id);
	d->pub.damaged = removable;
	if (!(d->problem = decree_strdup(error_last())))
		return -1;
	d->pub.problem = d->problem;
	s->ndamaged++;
	error_clear();
	if (removable)
		d->session = claimed_session(path);
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const record *x = a, *y = b;
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
 * Layout (little endian): "DCKC" u32 version(2) u32 count, then per record
 * id[32] tree[32] i64 created_ns u64 file_count u64 total_bytes
 * u64 skipped_count i64 files_changed i64 insertions i64 deletions (-1:
 * unknown) u64 max_file_size (0: none), four strings (session, message,
 * label, root), each u16 length (0xffff = none) + bytes, then u16 count of
 * excludes and that many strings, then u16 count of config excludes
 * (0xffff: not recorded) and that many strings; then SHA-256 of
 * everything before.  A cache of another version (version 1 lacks the
 * counts and rules, version 2 the config excludes) is ignored and
 * written again.
 */
#define CACHE_MAGIC   "DCKC"
#define CACHE_VERSION 3
/* how many records may be read one by one (or listed in vain) before the
 * cache is rewritten: a few small reads cost less than writing it all */
#define CACHE_SLACK 16
#define NO_STRING   0xffffu
/* the fixed part of an entry, and the least an entry takes */
#define CACHE_FIXED 128
#define CACHE_MIN   (CACHE_FIXED + 4 * 2 + 2 + 2)

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

/* A list of patterns: u16 count (0xffff: `known` false), the strings. */
static int cache_put_strv(buf *b, char *const *v, bool known)
{
	size_t n = 0;

	if (!known)
		return buf_put_u16(b, NO_STRING);
	while (v && v[n])
		n++;
	if (n >= NO_STRING)
		return decree_error_set(DECREE_EINVALID,
					"too many excludes for the cache");
	if (buf_put_u16(b, (unsigned)n) < 0)
		return -1;
	for (size_t k = 0; k < n; k++)
		if (cache_put_str(b, v[k]) < 0)
			return -1;
	return 0;
}

/* cache_put_strv's list into *out (NULL when empty): -1 malformed, -2
 * out of memory. */
static int cache_get_strv(char ***out, bool *known, const unsigned char **p,
			  const unsigned char *end)
{
	size_t n;
	int sr;

	*out = NULL;
	if (end - *p < 2)
		return -1;
	n = get_u16le(*p);
	*p += 2;
	*known = n != NO_STRING;
	if (!*known || !n)
		return 0;
	if (!(*out = decree_calloc(n + 1, sizeof(char *))))
		return -2;
	for (size_t k = 0; k < n; k++)
		if ((sr = cache_get_str(&(*out)[k], p, end)) < 0 || !(*out)[k])
			return sr < 0 ? sr : -1;
	return 0;
}

static void cache_save(decree_store *s, const record *v, size_t n)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	oid sum;

	if (buf_put(&b, CACHE_MAGIC, 4) < 0 ||
	    buf_put_u32(&b, CACHE_VERSION) < 0 ||
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
		    buf_put_u64(&b, (uint64_t)v[i].info.files_changed) < 0 ||
		    buf_put_u64(&b, (uint64_t)v[i].info.insertions) < 0 ||
		    buf_put_u64(&b, (uint64_t)v[i].info.deletions) < 0 ||
		    buf_put_u64(&b, v[i].max_file_size) < 0 ||
		    cache_put_str(&b, v[i].session) < 0 ||
		    cache_put_str(&b, v[i].message) < 0 ||
		    cache_put_str(&b, v[i].label) < 0 ||
		    cache_put_str(&b, v[i].root) < 0 ||
		    cache_put_strv(&b, v[i].excludes, true) < 0 ||
		    cache_put_strv(&b, v[i].config_excludes,
				   v[i].config_known) < 0)
			goto done;
	}
	sha256_buf(&sum, b.ptr, b.len);
	if (buf_put(&b, sum.b, SHA256_LEN) < 0)
		goto done;
	repo_file(path, s, "checkpoints.cache");
	/* no fsync: a cache lost or torn by a crash is detected (its
	 * checksum, the listing) and costs only speed */
	fs_write_cache(path, b.ptr, b.len);
done:
	/* a cache that cannot be written (read-only store) costs only speed */
	error_clear();
	buf_release(&b);
}

/* Parse the cache into recs (fields owned), indexed by id in `ids`. */
static int cache_load(record **recs, size_t *nrecs, oidset *ids,
		      decree_store *s)
{
	char path[PATH_MAX];
	buf data = BUF_INIT;
	const unsigned char *p, *end;
	record *v = NULL;
	uint32_t count;
	size_t n = 0;
	oid sum;
	int r = 0;

	*recs = NULL;
	*nrecs = 0;
	repo_file(path, s, "checkpoints.cache");
	{
		bool os;
		if (read_record_bytes(&data, path, "cache", &os) < 0)
			goto ignore;
	}
	p = (const unsigned char *)data.ptr;
	if (data.len < 12 + SHA256_LEN || memcmp(p, CACHE_MAGIC, 4) ||
	    get_u32le(p + 4) != CACHE_VERSION)
		goto ignore;
	end = p + data.len - SHA256_LEN;
	sha256_buf(&sum, p, data.len - SHA256_LEN);
	if (memcmp(sum.b, end, SHA256_LEN))
		goto ignore;
	count = get_u32le(p + 8);
	p += 12;
	if (count > data.len / CACHE_MIN ||
	    !(v = decree_calloc(count ? count : 1, sizeof(*v)))) {
		r = count > data.len / CACHE_MIN ? 0 : -1;
		goto ignore;
	}
	for (; n < count; n++) {
		record *c = &v[n];
		bool known;
		oid id;
		int sr = 0;
		if (end - p < CACHE_FIXED)
			goto ignore;
		memcpy(id.b, p, SHA256_LEN);
		memcpy(c->tree.b, p + 32, SHA256_LEN);
		c->info.created_ns = (int64_t)get_u64le(p + 64);
		c->info.file_count = get_u64le(p + 72);
		c->info.total_bytes = get_u64le(p + 80);
		c->info.skipped_count = get_u64le(p + 88);
		c->info.files_changed = (int64_t)get_u64le(p + 96);
		c->info.insertions = (int64_t)get_u64le(p + 104);
		c->info.deletions = (int64_t)get_u64le(p + 112);
		c->max_file_size = get_u64le(p + 120);
		p += CACHE_FIXED;
		if ((sr = cache_get_str(&c->session, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->message, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->label, &p, end)) < 0 ||
		    (sr = cache_get_str(&c->root, &p, end)) < 0 ||
		    !c->session ||
		    (sr = cache_get_strv(&c->excludes, &known, &p, end)) < 0 ||
		    !known ||
		    (sr = cache_get_strv(&c->config_excludes, &c->config_known,
					 &p, end)) < 0) {
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
		utc_format_ns(c->info.created_at, c->info.created_ns);
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
	record_free_all(v, n);
	oidset_release(ids);
	buf_release(&data);
	error_clear();
	return r;
}

int record_load_all(record **out, size_t *n_out, decree_store *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 80];
	record *v = NULL, *cached = NULL;
	size_t n = 0, cap = 0, ncached = 0;
	oidset ids = OIDSET_INIT, gone = OIDSET_INIT;
	size_t uncached = 0, stale = 0; /* records the cache lacks / has too
					   many */
	unsigned char *listed = NULL;	/* of each cached record: listed? */
	size_t nlisted = 0;
	DIR *d;
	struct dirent *de;
	bool os;
	int r = 0;

	*out = NULL;
	*n_out = 0;
	repo_damaged_clear(s);
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
	/* records an unfinished prune or drop removes are gone already */
	r = record_drop_pending(&gone, s);
	if (r == DECREE_ENOTFOUND || r == DECREE_ECORRUPT) {
		error_clear(); /* none, or lost: every record stays */
		r = 0;
	} else if (r < 0) {
		closedir(d);
		record_free_all(cached, ncached);
		oidset_release(&ids);
		oidset_release(&gone);
		return r;
	}
	if (ncached && !(listed = decree_calloc(ncached, 1))) {
		r = -1;
		goto listed_fail;
	}
	while ((de = readdir(d)) != NULL) {
		uint64_t at;
		oid id;
		if (strlen(de->d_name) != SHA256_HEXLEN ||
		    oid_from_hex(&id, de->d_name) < 0) {
			error_clear();
			continue;
		}
		if (oidset_has(&gone, &id))
			continue;
		if (oidset_get(&ids, &id, &at) && at < ncached &&
		    cached[at].session) {
			nlisted += !listed[at];
			listed[at] = 1; /* taken below, in the cache's order */
			continue;
		}
		if ((r = GROW(v, cap, n + 1)) < 0)
			break;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = load_record(&v[n], path, de->d_name, &os);
		if (r == DECREE_ENOTFOUND) { /* pruned meanwhile */
			error_clear();
			r = 0;
			continue;
		}
		/* one record that cannot be read blocks only itself: skip it
		 * and keep it for the caller to report */
		if (r == DECREE_ECORRUPT || (r < 0 && os))
			r = note_damaged(s, path, de->d_name,
					 r == DECREE_ECORRUPT);
		else if (r == 0) {
			n++;
			uncached++;
		}
		if (r < 0)
			break;
	}
	/* The cache's records first, in its order (sorted when it was
	 * written), then those read one by one (mostly the newest): sorted
	 * already, as a rule, so that the sort below is one pass. */
	if (r == 0 && nlisted && (r = GROW(v, cap, n + nlisted)) == 0) {
		memmove(v + nlisted, v, n * sizeof(*v));
		for (size_t i = 0, k = 0; i < ncached; i++) {
			if (!listed[i])
				continue;
			v[k++] = cached[i]; /* moved: the cache copy cleared */
			memset(&cached[i], 0, sizeof(cached[i]));
		}
		n += nlisted;
	}
listed_fail:
	closedir(d);
	decree_free(listed);
	/* cached records no longer listed (pruned, dropped) make it stale */
	stale = ncached - nlisted;
	record_free_all(cached, ncached);
	oidset_release(&ids);
	oidset_release(&gone);
	if (r < 0) {
		record_free_all(v, n);
		return r;
	}
	for (size_t i = 1; i < n; i++) {
		if (rec_cmp(&v[i - 1], &v[i]) > 0) {
			qsort(v, n, sizeof(*v), rec_cmp);
			break;
		}
	}
	/* Rewriting the cache writes every record again: not for every new
	 * record (each checkpoint adds one), only when there is none (or it
	 * was damaged) or once a few records are read one by one, or a few
	 * listed there are gone (pruned, dropped). */
	if (uncached + stale >= CACHE_SLACK || (uncached && !ncached))
		cache_save(s, v, n);
	*out = v;
	*n_out = n;
	return 0;
}

/*
 * A whole id (what resolving a prefix gives, so what most commands are
 * handed) names its file: no listing needed, unless an unfinished prune
 * or drop removes it.  0 when that file is a record; anything else (gone,
 * damaged, being dropped) leaves the answer, and its wording, to the
 * listing.
 */
static int record_by_id(record *out, decree_store *s, const char *id)
{
	char path[PATH_MAX + 80];
	oidset gone = OIDSET_INIT;
	oid key;
	int r;

	if (oid_from_hex(&key, id) < 0) {
		error_clear();
		return -1;
	}
	r = record_drop_pending(&gone, s);
	if (r == DECREE_ENOTFOUND || r == DECREE_ECORRUPT)
		r = 0; /* none pending (or lost: every record stays) */
	if (r == 0 && !oidset_has(&gone, &key)) {
		repo_file(path, s, "checkpoints");
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
			 "/%s", id);
		r = record_load_file(out, path, id);
	} else if (r == 0) {
		r = -1;
	}
	oidset_release(&gone);
	if (r < 0) {
		record_release(out);
		error_clear();
	}
	return r;
}

/*
 * The one record whose id starts with the k hex digits of `prefix`,
 * found in the listing of checkpoints/ alone (the file names are the
 * ids), into id.  true: exactly one name matches; false: none, several,
 * or no listing, which record_resolve's full reading then says in its
 * own words.  A short id (what users and agents type) then costs a
 * listing and one record, not every record: a `restore --dry-run` with
 * a 12-digit prefix reached its scan after 0.9-1.2 ms instead of
 * 3.3-7.1 ms on a store of 781 checkpoints.
 */
static bool unique_listed(char id[SHA256_HEXLEN + 1], decree_store *s,
			  const char *prefix, size_t k)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	repo_file(dir, s, "checkpoints");
	if (!(d = opendir(dir)))
		return false;
	while (n < 2 && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, k) ||
		    !is_hex_prefix(de->d_name, SHA256_HEXLEN))
			continue;
		if (n++ == 0)
			memcpy(id, de->d_name, SHA256_HEXLEN + 1);
	}
	closedir(d);
	return n == 1;
}

int record_resolve(record *out, decree_store *s, const char *ref)
{
	char one[SHA256_HEXLEN + 1];
	record *v;
	size_t n, found = SIZE_MAX, nmatch = 0;
	const char *colon = strchr(ref, ':');
	const repo_damaged_record *damaged = NULL;
	char lower[SHA256_HEXLEN + 1];
	size_t k;
	buf cands = BUF_INIT;
	int r;

	memset(out, 0, sizeof(*out));
	if (!colon && !is_hex_prefix(ref, 4))
		return decree_error_set(
			DECREE_EINVALID,
			"invalid checkpoint reference '%s' (use an id, a prefix of "
			"4+ hex digits, or SESSION:MESSAGE)",
			ref);
	for (k = 0; !colon && ref[k] && k < SHA256_HEXLEN; k++)
		lower[k] = (char)(ref[k] >= 'A' && ref[k] <= 'F' ? ref[k] + 32
								 : ref[k]);
	lower[k] = '\0';
	if (!colon && k == SHA256_HEXLEN && !ref[k] &&
	    record_by_id(out, s, lower) == 0)
		return 0;
	if (!colon && k < SHA256_HEXLEN && !ref[k] &&
	    unique_listed(one, s, lower, k) && record_by_id(out, s, one) == 0)
		return 0;
	if ((r = record_load_all(&v, &n, s)) < 0)
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
	/* a damaged record still owns its id: naming it says so */
	for (size_t i = 0; !colon && i < s->ndamaged; i++) {
		const repo_damaged_record *d = &s->damaged[i];
		if (strncmp(d->pub.id, lower, k))
			continue;
		if (nmatch++ == 0)
			damaged = d;
		if (nmatch <= 10)
			buf_printf(&cands, "\n  %.12s (damaged)", d->pub.id);
	}
	if (damaged && nmatch == 1) {
		r = decree_error_set(DECREE_ECORRUPT, "%s", damaged->problem);
	} else if (nmatch == 0) {
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
		r = record_load_file(out, path, v[found].info.id);
	}
	record_free_all(v, n);
	buf_release(&cands);
	return r;
}

int record_check_patterns(const char *const *v)
{
	for (size_t i = 0; v && v[i]; i++) {
		size_t n = strlen(v[i]);
		if (memchr(v[i], '\n', n) || memchr(v[i], '\r', n) ||
		    !json_is_utf8(v[i], n))
			return decree_error_set(DECREE_EINVALID,
						"exclude pattern '%s' must be "
						"one line of UTF-8 text",
						v[i]);
	}
	return 0;
}

/* ,"KEY":[...] (written even when empty: `always`) */
static int put_patterns(buf *rec, const char *key, const char *const *v,
			bool always)
{
	if (!always && !(v && v[0]))
		return 0;
	if (buf_printf(rec, ",\"%s\":[", key) < 0)
		return -1;
	for (size_t i = 0; v && v[i]; i++)
		if ((i && buf_putc(rec, ',') < 0) || json_str(rec, v[i]) < 0)
			return -1;
	return buf_putc(rec, ']');
}

/* ,"excludes":[...],"max_file_size":N,"config_excludes":[...]: the rules
 * of the record (config: the config's excludes the scan used) */
static int put_rules(buf *rec, const record_meta *m, const char *const *config)
{
	if (put_patterns(rec, "excludes", m->excludes, false) < 0 ||
	    (m->max_file_size && buf_printf(rec, ",\"max_file_size\":%" PRIu64,
					    m->max_file_size) < 0))
		return -1;
	return put_patterns(rec, "config_excludes", config, true);
}

int record_save(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		const oid *tree, const snap *cur, const record_meta *m)
{
	char hex[SHA256_HEXLEN + 1], path[PATH_MAX + 80], created[40];
	buf rec = BUF_INIT;
	uint64_t files, bytes;
	int64_t now = fs_now_ns();
	const char *const *config =
		m->config_known ? m->config : (const char *const *)s->excludes;
	int version = config && config[0]				    ? 3
		      : (m->excludes && m->excludes[0]) || m->max_file_size ? 2
									    : 1;
	oid id;
	bool first = true;
	int r;

	/* a pattern JSON would not carry exactly is never recorded */
	if ((r = record_check_patterns(m->excludes)) < 0 ||
	    (r = record_check_patterns(config)) < 0)
		return r;
	snap_totals(cur, &files, &bytes);
	oid_to_hex(hex, tree);
	utc_format_ns(created, now);
	if (buf_printf(&rec, "{\"version\":%d,\"type\":\"checkpoint\"",
		       version) < 0 ||
	    json_kv_str(&rec, "root", s->root, true) < 0 ||
	    json_kv_str(&rec, "session",
			m->session ? m->session : RECORD_DEFAULT_SESSION,
			true) < 0 ||
	    json_kv_str(&rec, "message", m->message, true) < 0 ||
	    json_kv_str(&rec, "label", m->label, true) < 0 ||
	    buf_printf(&rec,
		       ",\"created_at\":\"%s\",\"created_ns\":%" PRId64
		       ",\"tree\":\"%s\",\"file_count\":%" PRIu64
		       ",\"total_bytes\":%" PRIu64,
		       created, now, hex, files, bytes) < 0 ||
	    put_count(&rec, "files_changed", m->files_changed) < 0 ||
	    put_count(&rec, "insertions", m->insertions) < 0 ||
	    put_count(&rec, "deletions", m->deletions) < 0 ||
	    put_rules(&rec, m, config) < 0 ||
	    buf_puts(&rec, ",\"skipped\":[") < 0) {
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

int record_remove(decree_store *s, const char *id)
{
	char path[PATH_MAX + 80];
	repo_file(path, s, "checkpoints");
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", id);
	if (unlink(path) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove checkpoint %s", id);
	return 0;
}

/*
 * Removing checkpoints (prune, drop) is all or nothing.  The ids to remove
 * are first written to <rootdir>/checkpoints.drop, the intent, atomically
 * (temp + fsync + rename + directory fsync): that rename is the commit
 * point.  Before it nothing is visible; from it on the removal has
 * happened: record_load_all no longer lists those records, and
 * record_drop_finish deletes their files (for a drop of every session also
 * the history and the stat cache), syncs the directories and removes the
 * intent.  A finish that fails or is killed is done again by the next
 * recovery (txn_lock); every step is idempotent.
 *
 * Layout (little endian): "DCKD" u32 version u32 flags u32 count, then
 * count record ids (32 bytes each), then (version 2, flag
 * DROP_JOURNAL) the 16 bytes of a session's journal key, then SHA-256 of
 * everything before.  A list without a journal to delete is version 1.
 */
#define DROP_MAGIC "DCKD"
#define DROP_NAME  "checkpoints.drop"
/* flags beyond RECORD_DROP_ALL: also delete journal/<key> */
#define DROP_JOURNAL   2u
#define JOURNAL_KEYLEN 16

/* Read the intent: DECREE_ENOTFOUND if there is none, DECREE_ECORRUPT if
 * it cannot be read as one; ids (owned), flags and the journal key (with
 * DROP_JOURNAL) otherwise. */
static int drop_read_path(oid **ids, size_t *n, uint32_t *flags,
			  unsigned char journal[JOURNAL_KEYLEN],
			  const char *path)
{
	buf data = BUF_INIT;
	const unsigned char *p;
	uint32_t count, version;
	size_t body, tail;
	oid sum;
	bool os;
	int r;

	*ids = NULL;
	*n = 0;
	*flags = 0;
	if ((r = read_record_bytes(&data, path, "drop", &os)) < 0) {
		if (r == DECREE_ENOTFOUND)
			return r;
		if (os)
			goto done;
		goto damaged;
	}
	p = (const unsigned char *)data.ptr;
	if (data.len < 16 + SHA256_LEN || memcmp(p, DROP_MAGIC, 4))
		goto damaged;
	version = get_u32le(p + 4);
	*flags = get_u32le(p + 8);
	if (version != 1 && version != 2)
		goto damaged;
	tail = version == 2 && (*flags & DROP_JOURNAL) ? JOURNAL_KEYLEN : 0;
	if (version == 1)
		*flags &= ~DROP_JOURNAL;
	sha256_buf(&sum, p, data.len - SHA256_LEN);
	count = get_u32le(p + 12);
	body = data.len - 16 - SHA256_LEN;
	if (memcmp(sum.b, p + data.len - SHA256_LEN, SHA256_LEN) ||
	    body < tail || (body - tail) / SHA256_LEN != count ||
	    (body - tail) % SHA256_LEN)
		goto damaged;
	if (tail)
		memcpy(journal, p + 16 + (size_t)count * SHA256_LEN, tail);
	if (!(*ids = decree_calloc(count ? count : 1, sizeof(oid)))) {
		r = -1;
		goto done;
	}
	for (uint32_t i = 0; i < count; i++)
		memcpy((*ids)[i].b, p + 16 + (size_t)i * SHA256_LEN,
		       SHA256_LEN);
	*n = count;
	r = 0;
	goto done;
damaged:
	r = decree_error_set(DECREE_ECORRUPT,
			     "'%s' is not an intact list of checkpoints to "
			     "remove",
			     path);
done:
	buf_release(&data);
	return r;
}

static int drop_read(oid **ids, size_t *n, uint32_t *flags,
		     unsigned char journal[JOURNAL_KEYLEN], decree_store *s)
{
	char path[PATH_MAX];

	repo_file(path, s, DROP_NAME);
	return drop_read_path(ids, n, flags, journal, path);
}

int record_drop_check(const char *rootdir)
{
	char path[PATH_MAX];
	unsigned char journal[JOURNAL_KEYLEN];
	oid *ids;
	size_t n;
	uint32_t flags;
	int r;

	snprintf(path, sizeof(path), "%s/%s", rootdir, DROP_NAME);
	r = drop_read_path(&ids, &n, &flags, journal, path);
	decree_free(ids);
	return r;
}

int record_drop_pending(oidset *gone, decree_store *s)
{
	unsigned char journal[JOURNAL_KEYLEN];
	oid *ids;
	size_t n;
	uint32_t flags;
	int r;

	if ((r = drop_read(&ids, &n, &flags, journal, s)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = oidset_add(gone, &ids[i], NULL);
	decree_free(ids);
	return r;
}

void record_journal_key(char out[33], const char *session)
{
	char hex[SHA256_HEXLEN + 1];
	oid key;

	sha256_buf(&key, session, strlen(session));
	oid_to_hex(hex, &key);
	snprintf(out, 33, "%.32s", hex);
}

int record_drop_commit(decree_store *s, const oid *ids, size_t n,
		       unsigned flags)
{
	return record_drop_commit_journal(s, ids, n, flags, NULL);
}

int record_drop_commit_journal(decree_store *s, const oid *ids, size_t n,
			       unsigned flags, const char *session)
{
	char path[PATH_MAX], msg[1024];
	buf b = BUF_INIT;
	struct stat st;
	oid sum;
	int r = -1;

	flags &= RECORD_DROP_ALL;
	if (session && !(flags & RECORD_DROP_ALL))
		flags |= DROP_JOURNAL;
	if (n > UINT32_MAX)
		return decree_error_set(DECREE_EINVALID,
					"too many checkpoints to remove");
	if (buf_put(&b, DROP_MAGIC, 4) < 0 ||
	    buf_put_u32(&b, flags & DROP_JOURNAL ? 2 : 1) < 0 ||
	    buf_put_u32(&b, flags) < 0 || buf_put_u32(&b, (uint32_t)n) < 0)
		goto done;
	for (size_t i = 0; i < n; i++)
		if (buf_put(&b, ids[i].b, SHA256_LEN) < 0)
			goto done;
	if (flags & DROP_JOURNAL) {
		oid key;
		sha256_buf(&key, session, strlen(session));
		if (buf_put(&b, key.b, JOURNAL_KEYLEN) < 0)
			goto done;
	}
	sha256_buf(&sum, b.ptr, b.len);
	if (buf_put(&b, sum.b, SHA256_LEN) < 0)
		goto done;
	repo_file(path, s, DROP_NAME);
	if ((r = fs_write_atomic(path, b.ptr, b.len, 0644)) == 0 ||
	    lstat(path, &st) < 0)
		goto done;
	/* Renamed, but the directory sync failed: the intent may not be
	 * durable, so the removal has not happened; take it back. */
	snprintf(msg, sizeof(msg), "%s", error_last());
	if (unlink(path) == 0) {
		/* (best effort: the sync just failed once already) */
		if (fs_fsync_dir_path(s->rootdir) < 0)
			error_clear();
		r = decree_error_set(r, "%s", msg);
		goto done;
	}
	/* It stays visible: the removal has happened after all. */
	error_clear();
	warning_set(DECREE_EUNFINISHED,
		    "the checkpoints were removed, but the list of them may "
		    "not be on disk yet (%s)",
		    msg);
	r = 0;
done:
	buf_release(&b);
	return r;
}

/* unlink `path`; a file already gone is fine */
static int drop_file(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", path);
	return 0;
}

/* fsync a directory; one that is gone holds nothing to sync */
static int sync_dir(const char *dir)
{
	struct stat st;
	int r = fs_fsync_dir_path(dir);

	if (r < 0 && lstat(dir, &st) < 0 && errno == ENOENT) {
		error_clear();
		r = 0;
	}
	return r;
}

int record_drop_finish(bool *done, decree_store *s)
{
	char dir[PATH_MAX], path[PATH_MAX + 80];
	unsigned char journal[JOURNAL_KEYLEN];
	oid *ids = NULL;
	size_t n;
	uint32_t flags;
	int r;

	*done = false;
	repo_file(path, s, DROP_NAME);
	r = drop_read(&ids, &n, &flags, journal, s);
	if (r == DECREE_ENOTFOUND) {
		error_clear();
		return 0;
	}
	if (r == DECREE_ECORRUPT) {
		/* which records it named is lost: they stay */
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		error_clear();
		if ((r = drop_file(path)) < 0)
			return r;
		*done = true;
		warning_set(0,
			    "%s: the interrupted removal of checkpoints is "
			    "abandoned, the checkpoints it named are kept",
			    msg);
		return 0;
	}
	if (r < 0)
		return r;
	repo_file(dir, s, "checkpoints");
	for (size_t i = 0; r == 0 && i < n; i++) {
		char hex[SHA256_HEXLEN + 1];
		oid_to_hex(hex, &ids[i]);
		snprintf(path, sizeof(path), "%s/%s", dir, hex);
		r = drop_file(path);
	}
	decree_free(ids);
	if (r < 0)
		return r;
	if (flags & RECORD_DROP_ALL) {
		static const char *const names[] = { "oplog", "statcache",
						     "statcache.delta" };
		for (size_t i = 0; i < 3; i++) {
			repo_file(path, s, names[i]);
			if ((r = drop_file(path)) < 0)
				return r;
		}
		/* every agent journal (decree/agent.h) */
		repo_file(path, s, "journal");
		if ((r = fs_remove_path(path)) < 0)
			return r;
	}
	if (flags & DROP_JOURNAL) {
		char hex[SHA256_HEXLEN + 1];
		oid key;
		memset(&key, 0, sizeof(key));
		memcpy(key.b, journal, JOURNAL_KEYLEN);
		oid_to_hex(hex, &key);
		repo_file(dir, s, "journal");
		snprintf(path, sizeof(path), "%s/%.32s", dir, hex);
		if ((r = drop_file(path)) < 0 || (r = sync_dir(dir)) < 0)
			return r;
		repo_file(dir, s, "checkpoints");
	}
	/* the deletions are durable before the intent goes */
	if ((n && (r = sync_dir(dir)) < 0) ||
	    (flags & RECORD_DROP_ALL && (r = sync_dir(s->rootdir)) < 0))
		return r;
	repo_file(path, s, DROP_NAME);
	if ((r = drop_file(path)) < 0)
		return r;
	*done = true;
	return 0;
}
