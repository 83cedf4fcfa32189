/*
 * fuzz_recover.c - libFuzzer target for the payloads of the transaction
 * log and the recovery that acts on them (src/lib/txn/txn.c: txn_lock ->
 * txn_recover -> decode_log, decode_begin, decode_file, rollback,
 * finish_committed, apply_history; txn_log_objects, which gc reads).
 *
 *   make fuzz && build/fuzz/fuzz_recover fuzz/corpus/recover
 * `make check` replays fuzz/corpus/recover through fuzz/replay.c.
 *
 * fuzz_wal covers the log's framing; a mutated log almost never passes its
 * checksum chain, so here the input is a list of records, each
 * { u8 type, u16 length (little endian), payload }, and the target writes
 * them as a valid txn.wal (docs/format.md, "Transaction log") with the
 * checksums computed; bytes left over that do not make a whole record are
 * appended as they are (a torn tail).  Before each input a fixed tree is
 * put back in a project root on tmpfs:
 *   a.txt ("new\n"), d/b.txt, d/.decree-tmp-0123456789abcdef-1 (a temp
 *   file a transaction left), e/ (empty), f (a symlink to a directory
 *   outside the root), .git/HEAD, .decree/keep
 * and the store (outside the root) holds the blobs "old\n" and "new\n"
 * and no history.  Then the store lock is taken, which recovers.  Beyond
 * "no crash, no leak, no undefined behaviour" the target checks what a
 * hostile or damaged log must never achieve, and what recovery promises:
 *   - nothing outside the root changes (a file beside it, and the
 *     directory the symlink points to), nor .git/HEAD nor .decree/keep;
 *   - recovery either succeeds and removes the log, or fails with a
 *     documented code (ECORRUPT, ENOTFOUND, EINVALID, EVERIFY, or -1) and
 *     leaves it; failing with ECORRUPT makes the handle refuse work;
 *   - recovery is idempotent: a second attempt, on a reopened handle,
 *     ends the same way, and after a success finds no log;
 *   - txn_log_objects reads the same log without failing on it.
 */
#include "util/common.h"
#include "txn/txn.h"
#include "store/odb.h"
#include "store/repo.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

#include "common.h"

#include <dirent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SALT 0x0123456789abcdefull

static decree_store *store;
static char root[PATH_MAX], sdir[PATH_MAX], outside[PATH_MAX];
static char walpath[PATH_MAX], oplogpath[PATH_MAX];

static void open_store(void)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;

	o.root = root;
	o.store_path = sdir;
	o.lock_timeout_ms = 0;
	o.threads = 1;
	fuzz_check(decree_store_open(&store, &o) == 0);
}

static void setup(void)
{
	odb_writer *w;
	odb *db;
	char path[PATH_MAX];

	fuzz_mkdirs("root");
	fuzz_mkdirs("store");
	fuzz_mkdirs("outside");
	fuzz_path(path, "root");
	fuzz_check(realpath(path, root) != NULL);
	fuzz_path(sdir, "store");
	fuzz_path(outside, "outside");
	open_store();
	fuzz_check(repo_ensure(store) == 0);
	fuzz_check(repo_odb(&db, store, false) == 0);
	fuzz_check(odb_writer_new(&w, db) == 0);
	fuzz_check(odb_writer_add(w, ODB_BLOB, "old\n", 4, NULL, NULL) == 0);
	fuzz_check(odb_writer_add(w, ODB_BLOB, "new\n", 4, NULL, NULL) == 0);
	fuzz_check(odb_writer_commit(w) == 0);
	odb_writer_free(w);
	repo_file(walpath, store, "txn.wal");
	repo_file(oplogpath, store, "oplog");
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fuzz_write(path, text, strlen(text));
}

static bool same_file(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	bool same;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	same = fs_read_path(path, &b) == 0 && b.len == strlen(text) &&
	       !memcmp(b.ptr, text, b.len);
	buf_release(&b);
	decree_error_clear();
	return same;
}

/* Only outside/victim, as it was. */
static void check_outside(void)
{
	DIR *d = opendir(outside);
	struct dirent *de;
	size_t n = 0;

	fuzz_check(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	fuzz_check(n == 1 && same_file(outside, "victim", "keep out\n"));
	fuzz_check(same_file(root, ".git/HEAD", "ref: refs/heads/main\n"));
	fuzz_check(same_file(root, ".decree/keep", "mine\n"));
}

static void reset_tree(void)
{
	char path[PATH_MAX];

	fuzz_empty_dir(root);
	fuzz_empty_dir(outside);
	put(outside, "victim", "keep out\n");
	fuzz_mkdirs("root/d");
	fuzz_mkdirs("root/e");
	fuzz_mkdirs("root/.git");
	fuzz_mkdirs("root/.decree");
	put(root, "a.txt", "new\n");
	put(root, "d/b.txt", "b\n");
	put(root, "d/.decree-tmp-0123456789abcdef-1", "temp\n");
	put(root, ".git/HEAD", "ref: refs/heads/main\n");
	put(root, ".decree/keep", "mine\n");
	snprintf(path, sizeof(path), "%s/f", root);
	fuzz_check(symlink(outside, path) == 0);
	unlink(walpath);
	unlink(oplogpath);
}

/* The input's records as a valid log, checksums and all. */
static void build_log(buf *log, const uint8_t *data, size_t size)
{
	uint64_t prev = SALT;
	size_t off = 0;

	fuzz_check(buf_put(log, "DECRWAL\0", 8) == 0 &&
		   buf_put_u32(log, 1) == 0 && buf_put_u32(log, 0) == 0 &&
		   buf_put_u64(log, SALT) == 0 && buf_put_u64(log, 0) == 0);
	while (size - off >= 3) {
		unsigned type = data[off];
		size_t len = data[off + 1] | (size_t)data[off + 2] << 8;
		buf h = BUF_INIT;
		oid sum;
		if (size - off - 3 < len)
			break;
		fuzz_check(buf_put_u64(&h, prev) == 0 &&
			   buf_put_u64(&h, SALT) == 0 &&
			   buf_put_u32(&h, type) == 0 &&
			   buf_put_u32(&h, (uint32_t)len) == 0 &&
			   buf_put(&h, data + off + 3, len) == 0);
		sha256_buf(&sum, h.ptr, h.len);
		buf_release(&h);
		prev = get_u64le(sum.b);
		fuzz_check(buf_put_u32(log, (uint32_t)len) == 0 &&
			   buf_put_u32(log, type) == 0 &&
			   buf_put(log, data + off + 3, len) == 0 &&
			   buf_put_u64(log, prev) == 0);
		off += 3 + len;
	}
	fuzz_check(buf_put(log, data + off, size - off) == 0); /* torn tail */
}

static int count_id(void *payload, const oid *id)
{
	(void)id;
	(*(size_t *)payload)++;
	return 0;
}

/* Take the lock (recovering), as every mutation does. */
static int recover(bool *recovered)
{
	size_t left = 0;
	int r = txn_lock(recovered, &left, store);

	if (r == 0) {
		repo_unlock(store);
	} else {
		fuzz_check(r == DECREE_ECORRUPT || r == DECREE_ENOTFOUND ||
			   r == DECREE_EINVALID || r == DECREE_EVERIFY ||
			   r == DECREE_ELOGDAMAGED || r == DECREE_EUNFINISHED ||
			   r == DECREE_ERROR);
		fuzz_check(r != DECREE_ECORRUPT ||
			   txn_lock(NULL, NULL, store) == DECREE_ERROR);
		decree_error_clear();
		/* a refused handle is reopened, as a new command would */
		decree_store_free(store);
		open_store();
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf log = BUF_INIT;
	struct stat st;
	bool present = false, recovered = false;
	size_t nids = 0;
	int r, r2;

	if (!store)
		setup();
	reset_tree();
	build_log(&log, data, size);
	fuzz_write(walpath, log.ptr, log.len);

	r = txn_log_objects(&present, walpath, count_id, &nids);
	fuzz_check(present && (r == 0 || r == DECREE_ECORRUPT));
	decree_error_clear();

	r = recover(&recovered);
	check_outside();
	if (r == 0)
		fuzz_check(stat(walpath, &st) < 0 && errno == ENOENT);
	else
		fuzz_check(stat(walpath, &st) == 0);

	r2 = recover(&recovered);
	check_outside();
	fuzz_check(r2 == r);
	if (r == 0)
		fuzz_check(!recovered);
	buf_release(&log);
	return 0;
}
