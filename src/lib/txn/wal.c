/*
 * wal.c - checksummed, salted record log (see wal.h for the format).
 *
 * Writers: wal_create() makes the file with O_EXCL, so two transactions can
 * never share a log; records are buffered and made durable together by
 * wal_sync().  Readers: wal_parse() is pure (fuzzable); wal_load() also
 * truncates a torn tail so the file on disk matches what was acted on.
 */
#include "util/common.h"
#include "txn/wal.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/sha256.h"

#define WAL_MAGIC      "DECRWAL\0"
#define WAL_VERSION    1
#define WAL_HDR	       32
#define WAL_MAX_RECORD (64u << 20)

struct wal {
	int fd;
	char *path;
	uint64_t salt;
	uint64_t prev;
	buf pending;
	size_t synced; /* file length after the last successful wal_sync */
};

static uint64_t chain_sum(uint64_t prev, uint64_t salt, unsigned type,
			  const void *data, size_t len)
{
	unsigned char hdr[24];
	sha256_ctx *c;
	oid out;

	put_u64le(hdr, prev);
	put_u64le(hdr + 8, salt);
	put_u32le(hdr + 16, type);
	put_u32le(hdr + 20, (uint32_t)len);
	c = sha256_new();
	if (!c) { /* fall back to the one-shot interface */
		buf tmp = BUF_INIT;
		uint64_t v = 0;
		if (buf_put(&tmp, hdr, sizeof(hdr)) == 0 &&
		    buf_put(&tmp, data, len) == 0) {
			sha256_buf(&out, tmp.ptr, tmp.len);
			v = get_u64le(out.b);
		}
		buf_release(&tmp);
		return v;
	}
	sha256_update(c, hdr, sizeof(hdr));
	sha256_update(c, data, len);
	sha256_final(c, &out);
	sha256_free(c);
	return get_u64le(out.b);
}

int wal_create(wal **out, const char *path)
{
	unsigned char hdr[WAL_HDR];
	wal *w;
	char dir[PATH_MAX];
	const char *slash;
	int r;

	*out = NULL;
	if (!(w = decree_calloc(1, sizeof(*w))))
		return -1;
	buf_init(&w->pending);
	w->fd = -1;
	if (!(w->path = decree_strdup(path))) {
		decree_free(w);
		return -1;
	}
	if ((r = fs_random(&w->salt, sizeof(w->salt))) < 0)
		goto fail;
	w->prev = w->salt;
	w->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		     0644);
	if (w->fd < 0) {
		r = errno == EEXIST
			    ? decree_error_set(
				      DECREE_EEXISTS,
				      "a transaction log already exists at '%s'",
				      path)
			    : decree_error_os("cannot create '%s'", path);
		goto fail;
	}
	memcpy(hdr, WAL_MAGIC, 8);
	put_u32le(hdr + 8, WAL_VERSION);
	put_u32le(hdr + 12, 0);
	put_u64le(hdr + 16, w->salt);
	put_u64le(hdr + 24, 0);
	if (fs_write_all(w->fd, hdr, sizeof(hdr)) < 0) {
		r = decree_error_os("cannot write '%s'", path);
		goto fail_unlink;
	}
	if ((r = fs_fsync(w->fd, path)) < 0)
		goto fail_unlink;
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	if ((r = fs_fsync_dir_path(dir)) < 0)
		goto fail_unlink;
	w->synced = WAL_HDR;
	*out = w;
	return 0;
fail_unlink:
	close(w->fd);
	w->fd = -1;
	unlink(path);
fail:
	if (w->fd >= 0)
		close(w->fd);
	decree_free(w->path);
	decree_free(w);
	return r;
}

int wal_append(wal *w, unsigned type, const void *data, size_t len)
{
	uint64_t sum;

	if (len > WAL_MAX_RECORD)
		return decree_error_set(DECREE_EINVALID,
					"log record too large");
	sum = chain_sum(w->prev, w->salt, type, data, len);
	if (buf_put_u32(&w->pending, (uint32_t)len) < 0 ||
	    buf_put_u32(&w->pending, type) < 0 ||
	    buf_put(&w->pending, data, len) < 0 ||
	    buf_put_u64(&w->pending, sum) < 0)
		return -1;
	w->prev = sum;
	return 0;
}

int wal_sync(wal *w)
{
	size_t len = w->synced + w->pending.len;
	int r;

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
	buf_release(&w->pending);
	decree_free(w->path);
	decree_free(w);
}

int wal_parse(wal_record **recs_out, size_t *nrecs, size_t *valid_len,
	      bool *torn, const void *data, size_t len)
{
	const unsigned char *p = data;
	wal_record *recs = NULL;
	size_t n = 0, cap = 0, off = WAL_HDR;
	uint64_t salt, prev;

	*recs_out = NULL;
	*nrecs = 0;
	*valid_len = 0;
	*torn = false;
	if (len < WAL_HDR || memcmp(p, WAL_MAGIC, 8))
		return decree_error_set(DECREE_ECORRUPT,
					"not a decree transaction log");
	if (get_u32le(p + 8) != WAL_VERSION)
		return decree_error_set(
			DECREE_ECORRUPT,
			"transaction log version %u is not supported",
			get_u32le(p + 8));
	salt = prev = get_u64le(p + 16);
	while (len - off >= 16) {
		uint32_t rlen = get_u32le(p + off);
		unsigned type = get_u32le(p + off + 4);
		uint64_t sum;
		if (rlen > WAL_MAX_RECORD || len - off - 16 < rlen)
			break;
		sum = chain_sum(prev, salt, type, p + off + 8, rlen);
		if (get_u64le(p + off + 8 + rlen) != sum)
			break;
		if (GROW(recs, cap, n + 1) < 0) {
			decree_free(recs);
			return -1;
		}
		recs[n].type = type;
		recs[n].data = p + off + 8;
		recs[n].len = rlen;
		n++;
		prev = sum;
		off += 16 + rlen;
	}
	*recs_out = recs;
	*nrecs = n;
	*valid_len = off;
	*torn = off != len;
	return 0;
}

int wal_load(buf *data, wal_record **recs, size_t *nrecs, const char *path)
{
	size_t valid;
	bool torn;
	int r;

	if ((r = fs_read_path(path, data)) < 0)
		return r;
	if ((r = wal_parse(recs, nrecs, &valid, &torn, data->ptr, data->len)) <
	    0)
		return r;
	if (torn) {
		int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return decree_error_os("cannot open '%s'", path);
		if (ftruncate(fd, (off_t)valid) < 0) {
			r = decree_error_os("cannot cut torn tail of '%s'",
					    path);
			close(fd);
			return r;
		}
		r = fs_fsync(fd, path);
		close(fd);
	}
	return r;
}

int wal_remove(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (unlink(path) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", path);
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	return fs_fsync_dir_path(dir);
}
