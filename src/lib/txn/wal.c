/*
 * wal.c - individually checksummed, salted record log (see wal.h for the
 * format and why the log appears at its path only with a complete plan).
 *
 * Writers: wal_create() makes a temp file ".<name>.tmp-<random>" next to
 * the log with O_EXCL; the first wal_sync() writes header and plan in one
 * go, fsyncs, renames the temp over nothing (the path must not exist: the
 * caller holds the lock and has recovered any earlier log) and fsyncs the
 * directory.  Readers: wal_parse() is pure (fuzzable) and never trusts a
 * length it has not checked; wal_load() changes nothing on disk, because
 * a log that cannot be read whole must be kept as it is.
 *
 * Finding records after damage: a record whose checksum fails is stepped
 * over by its length when a valid record follows there; otherwise every
 * later offset is tried.  A try costs one SHA-256 of the candidate's
 * bytes, so the search is bounded (SEARCH_BUDGET): a hostile image cannot
 * make parsing quadratic.
 */
#include "util/common.h"
#include "txn/wal.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/sha256.h"

#include <dirent.h>

#define WAL_MAGIC      "DECRWAL\0"
#define WAL_HDR	       40
#define WAL_REC_HDR    12
#define WAL_REC_OVER   20 /* header + checksum */
#define WAL_MAX_RECORD (64u << 20)
#define WAL_MAX_SEQ    (1u << 28)

struct wal {
	int fd;
	char *path;
	char tmp[PATH_MAX];
	uint64_t salt;
	uint32_t seq;
	sha256_ctx *sha;
	buf pending;
	bool at_path; /* the first wal_sync renamed the temp to path */
	size_t synced;
};

static uint64_t sum64(const void *data, size_t len)
{
	oid out;

	sha256_buf(&out, data, len);
	return get_u64le(out.b);
}

static uint64_t record_sum(sha256_ctx *c, uint64_t salt, uint32_t seq,
			   unsigned type, const void *data, size_t len)
{
	unsigned char hdr[20];
	oid out;

	put_u64le(hdr, salt);
	put_u32le(hdr + 8, seq);
	put_u32le(hdr + 12, type);
	put_u32le(hdr + 16, (uint32_t)len);
	sha256_update(c, hdr, sizeof(hdr));
	sha256_update(c, data, len);
	sha256_final(c, &out);
	return get_u64le(out.b);
}

static void split_path(char *dir, size_t dirlen, const char **base,
		       const char *path)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, dirlen, "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	*base = slash ? slash + 1 : path;
}

int wal_create(wal **out, const char *path)
{
	char dir[PATH_MAX];
	const char *base;
	unsigned char rnd[6];
	struct stat st;
	wal *w;
	int r;

	*out = NULL;
	if (lstat(path, &st) == 0)
		return decree_error_set(
			DECREE_EEXISTS,
			"a transaction log already exists at '%s'", path);
	if (!(w = decree_calloc(1, sizeof(*w))))
		return -1;
	buf_init(&w->pending);
	w->fd = -1;
	if (!(w->path = decree_strdup(path))) {
		decree_free(w);
		return -1;
	}
	if (!(w->sha = sha256_new())) {
		r = -1;
		goto fail;
	}
	if ((r = fs_random(&w->salt, sizeof(w->salt))) < 0 ||
	    (r = fs_random(rnd, sizeof(rnd))) < 0)
		goto fail;
	split_path(dir, sizeof(dir), &base, path);
	snprintf(w->tmp, sizeof(w->tmp), "%s/.%s.tmp-%02x%02x%02x%02x%02x%02x",
		 dir, base, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	w->fd = (fs_fault_hook && fs_fault_hook("open"))
			? -1
			: open(w->tmp,
			       O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
				       O_NOFOLLOW,
			       0644);
	if (w->fd < 0) {
		r = decree_error_os("cannot create '%s'", w->tmp);
		goto fail;
	}
	*out = w;
	return 0;
fail:
	sha256_free(w->sha);
	decree_free(w->path);
	decree_free(w);
	return r;
}

int wal_append(wal *w, unsigned type, const void *data, size_t len)
{
	uint64_t sum;

	if (len > WAL_MAX_RECORD || w->seq >= WAL_MAX_SEQ)
		return decree_error_set(DECREE_EINVALID,
					"log record too large");
	sum = record_sum(w->sha, w->salt, w->seq, type, data, len);
	if (buf_put_u32(&w->pending, (uint32_t)len) < 0 ||
	    buf_put_u32(&w->pending, type) < 0 ||
	    buf_put_u32(&w->pending, w->seq) < 0 ||
	    buf_put(&w->pending, data, len) < 0 ||
	    buf_put_u64(&w->pending, sum) < 0)
		return -1;
	w->seq++;
	return 0;
}

/* Header + plan into the temp, fsync, rename to the path, fsync the
 * directory.  On failure the temp is gone and nothing is at the path
 * (unless only the directory fsync failed: then the log is there). */
static int first_sync(wal *w)
{
	unsigned char hdr[WAL_HDR];
	char dir[PATH_MAX];
	const char *base;
	int r;

	memcpy(hdr, WAL_MAGIC, 8);
	put_u32le(hdr + 8, WAL_VERSION);
	put_u32le(hdr + 12, w->seq);
	put_u64le(hdr + 16, w->salt);
	put_u64le(hdr + 24, (uint64_t)w->pending.len);
	put_u64le(hdr + 32, sum64(hdr, 32));
	if (fs_write_all(w->fd, hdr, sizeof(hdr)) < 0 ||
	    fs_write_all(w->fd, w->pending.ptr, w->pending.len) < 0) {
		r = decree_error_os("cannot write '%s'", w->tmp);
		goto fail;
	}
	if ((r = fs_fsync(w->fd, w->tmp)) < 0)
		goto fail;
	if ((fs_fault_hook && fs_fault_hook("rename")) ||
	    rename(w->tmp, w->path) < 0) {
		r = decree_error_os("cannot rename '%s' to '%s'", w->tmp,
				    w->path);
		goto fail;
	}
	w->at_path = true;
	w->synced = WAL_HDR + w->pending.len;
	buf_clear(&w->pending);
	split_path(dir, sizeof(dir), &base, w->path);
	return fs_fsync_dir_path(dir);
fail:
	unlink(w->tmp);
	return r;
}

int wal_sync(wal *w)
{
	size_t len = w->synced + w->pending.len;
	int r;

	if (!w->at_path)
		return first_sync(w);
	if (w->pending.len) {
		if (fs_write_all(w->fd, w->pending.ptr, w->pending.len) < 0)
			return decree_error_os("cannot write '%s'", w->path);
		buf_clear(&w->pending);
	}
	if ((r = fs_fsync(w->fd, w->path)) < 0)
		return r;
	w->synced = len;
	return 0;
}

size_t wal_synced_length(const wal *w)
{
	return w->synced;
}

int wal_truncate(wal *w, size_t len)
{
	buf_clear(&w->pending);
	if ((fs_fault_hook && fs_fault_hook("truncate")) ||
	    ftruncate(w->fd, (off_t)len) < 0 ||
	    lseek(w->fd, (off_t)len, SEEK_SET) < 0)
		return decree_error_os("cannot cut '%s' back", w->path);
	return fs_fsync(w->fd, w->path);
}

void wal_close(wal *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (!w->at_path)
		unlink(w->tmp);
	buf_release(&w->pending);
	sha256_free(w->sha);
	decree_free(w->path);
	decree_free(w);
}

/* --- reading ---------------------------------------------------------------
 */

typedef struct {
	sha256_ctx *sha;
	const unsigned char *p;
	size_t len;
	uint64_t salt;
	uint32_t max_seq;
	size_t hashed, budget; /* bytes hashed while searching */
} reader;

/* Is there a valid record at off?  Fills *rec and *next. */
static bool record_at(reader *rd, size_t off, wal_record *rec, size_t *next)
{
	uint32_t len, seq;
	unsigned type;

	if (off > rd->len || rd->len - off < WAL_REC_OVER)
		return false;
	len = get_u32le(rd->p + off);
	type = get_u32le(rd->p + off + 4);
	seq = get_u32le(rd->p + off + 8);
	if (len > WAL_MAX_RECORD || len > rd->len - off - WAL_REC_OVER ||
	    seq > rd->max_seq)
		return false;
	rd->hashed += WAL_REC_OVER + len;
	if (get_u64le(rd->p + off + WAL_REC_HDR + len) !=
	    record_sum(rd->sha, rd->salt, seq, type, rd->p + off + WAL_REC_HDR,
		       len))
		return false;
	rec->type = type;
	rec->seq = seq;
	rec->data = rd->p + off + WAL_REC_HDR;
	rec->len = len;
	*next = off + WAL_REC_OVER + len;
	return true;
}

int wal_parse(wal_contents *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	reader rd;
	wal_record *recs = NULL, rec;
	size_t n = 0, cap = 0, off, next;
	uint64_t plan_len = 0;

	memset(out, 0, sizeof(*out));
	if (len >= 12 && !memcmp(p, WAL_MAGIC, 8)) {
		unsigned v = get_u32le(p + 8);
		bool sum_ok = len >= WAL_HDR &&
			      get_u64le(p + 32) == sum64(p, 32);
		if (v == WAL_VERSION && sum_ok) {
			out->header_ok = true;
			out->nplan = get_u32le(p + 12);
			plan_len = get_u64le(p + 24);
		} else if (v == 1 || (v != WAL_VERSION && sum_ok)) {
			/* a log of another format: nothing to read here */
			out->other_version = v;
			return 0;
		}
	}
	memset(&rd, 0, sizeof(rd));
	if (!(rd.sha = sha256_new()))
		return -1;
	rd.p = p;
	rd.len = len;
	/* Without a valid header its salt is still worth a try: a record
	 * that checks out with it is genuine. */
	rd.salt = len >= 24 ? get_u64le(p + 16) : 0;
	rd.max_seq = WAL_MAX_SEQ;
	rd.budget = 64 * len + 65536;
	off = WAL_HDR;
	while (off < len) {
		if (record_at(&rd, off, &rec, &next)) {
			if (GROW(recs, cap, n + 1) < 0) {
				decree_free(recs);
				sha256_free(rd.sha);
				return -1;
			}
			recs[n++] = rec;
			off = next;
			continue;
		}
		/* damage (or a torn tail): step over it by its length if the
		 * record that follows there is valid and the very next one
		 * (its seq one more than the damaged record says), else
		 * search.  A damaged length may point at a later genuine
		 * record: stepping there would lose the intact ones between. */
		if (len - off >= WAL_REC_OVER) {
			uint32_t l = get_u32le(p + off);
			uint32_t seq = get_u32le(p + off + 8);
			if (l <= len - off - WAL_REC_OVER &&
			    record_at(&rd, off + WAL_REC_OVER + l, &rec,
				      &next) &&
			    rec.seq == seq + 1) {
				off += WAL_REC_OVER + l;
				continue;
			}
		}
		for (;;) {
			if (++off >= len)
				break;
			if (rd.hashed >= rd.budget) { /* give up searching */
				off = len;
				break;
			}
			if (record_at(&rd, off, &rec, &next))
				break;
		}
	}
	sha256_free(rd.sha);
	out->recs = recs;
	out->nrecs = n;
	if (len > WAL_HDR) {
		out->skipped = len - WAL_HDR;
		for (size_t i = 0; i < n; i++)
			out->skipped -= WAL_REC_OVER + recs[i].len;
	}
	if (out->header_ok) {
		/* the plan: the first nplan records, back to back */
		size_t end = WAL_HDR;
		bool ok = n >= out->nplan;
		for (size_t i = 0; ok && i < out->nplan; i++) {
			ok = recs[i].seq == i &&
			     recs[i].data == p + end + WAL_REC_HDR;
			end += WAL_REC_OVER + recs[i].len;
		}
		out->plan_complete = ok && end == WAL_HDR + plan_len;
	}
	return 0;
}

void wal_contents_release(wal_contents *c)
{
	decree_free(c->recs);
	memset(c, 0, sizeof(*c));
}

int wal_load(buf *data, wal_contents *out, const char *path)
{
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = fs_read_path(path, data)) < 0)
		return r;
	return wal_parse(out, data->ptr, data->len);
}

int wal_remove(const char *path)
{
	char dir[PATH_MAX];
	const char *base;

	if ((fs_fault_hook && fs_fault_hook("unlink")) ||
	    (unlink(path) < 0 && errno != ENOENT))
		return decree_error_os("cannot remove '%s'", path);
	split_path(dir, sizeof(dir), &base, path);
	return fs_fsync_dir_path(dir);
}

int wal_remove_temps(const char *path)
{
	char dir[PATH_MAX], prefix[PATH_MAX];
	const char *base;
	struct dirent *de;
	DIR *d;
	int r = 0;

	split_path(dir, sizeof(dir), &base, path);
	snprintf(prefix, sizeof(prefix), ".%s.tmp-", base);
	if (!(d = opendir(dir)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot read '%s'", dir);
	while ((de = readdir(d)) != NULL) {
		char file[PATH_MAX * 2];
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		if (unlink(file) < 0 && errno != ENOENT && r == 0)
			r = decree_error_os("cannot remove '%s'", file);
	}
	closedir(d);
	return r;
}
