/*
 * txn.c - crash-safe working-tree transactions (see txn.h).
 *
 * State diagram (what is durable in each state, and who moves it on):
 *
 *   IDLE        no txn.wal.  All contents of both states are in the store
 *     |         and the old ones read back intact (check_contents); every
 *     |         path is as the caller captured it (check_unchanged).
 *     | log_all: BEGIN + one FILE/MKDIR/RMDIR record per step of the plan
 *     v          (make_plan) into a temp file; wal_sync fsyncs it, renames
 *     |          it to txn.wal and fsyncs the directory
 *   LOGGED      txn.wal names every path, its old and new state and the
 *     |         temp name it will use.  Worktree untouched.  (Before the
 *     |         rename a crash leaves only the temp: still IDLE.)
 *     | stage_all: temp files written next to their targets; syncfs
 *     v
 *   STAGED      temps durable; targets untouched (crash: rollback deletes
 *     |         temps, nothing else to do)
 *     | apply_all: unlink deleted files, rmdir emptied dirs, mkdir new
 *     v          dirs, stage the rest, rename temps over targets; syncfs;
 *     |          verify_new re-hashes every path
 *   APPLIED     every target is new
 *     | commit: write COMMIT, fsync the log
 *     v
 *   COMMITTED   the change has happened, whatever fails from here on
 *     | finish_committed: leftover temps removed, history (oplog) updated
 *     v                   from the BEGIN record, the log unlinked and its
 *     |                   directory fsynced
 *   IDLE
 *
 * Cancellation (txn_spec.cancel, set by the host's signal handler) is
 * polled before each file of stage_all and apply_all and before commit:
 * a cancel there is a failure like any other (rolled back, temps removed,
 * the log removed; DECREE_ECANCELLED).  After COMMIT it is not looked at:
 * the bookkeeping left is short and the change has happened.
 *
 * A failure once the log exists and before COMMIT is durable goes to
 * abort_run: rollback() puts every path back and the log is removed
 * (IDLE); if that fails too, the log stays, the handle refuses further
 * work and txn_run returns DECREE_EUNFINISHED.  A COMMIT whose sync
 * failed is cut off the log before that (commit()).
 * A failure after COMMIT is not a failure of txn_run: the change has
 * happened.  It returns 0 with a warning (warning_set), and the log stays
 * until the history is recorded, so that the next recovery finishes the
 * bookkeeping.
 *
 * Recovery (txn_recover, run by txn_lock() before every mutation):
 * a log without a valid COMMIT is rolled back: temps removed, created files
 * removed, created directories removed, removed directories re-created,
 * every old file whose bytes or mode differ written back from the store
 * (temp + rename).  A log with COMMIT is rolled forward: the history update
 * is applied if missing and temps are removed.  Both are idempotent, so a
 * crash during recovery is recovered by the next run.  Bytes after the
 * plan that are no valid COMMIT (a torn write) mean "not committed".  A
 * plan that cannot be read whole is damage (txn.wal exists only with a
 * complete plan): see txn_recover.  Before the log, txn_lock also removes
 * what killed store writers left (pack and store-file temps) and finishes
 * an interrupted prune or drop (record_drop_finish): those hold the same
 * lock, so under it each is a leftover.
 *
 * Durability: each step fsyncs what it wrote (the temps) and the
 * directories whose entries it changed (see "durability" below); a plan
 * of more than SYNC_EACH_MAX paths uses one syncfs(2) per step instead.
 */
#include "util/common.h"
#include "txn/txn.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/repo.h"
#include "store/record.h"
#include "scan/scan.h"
#include "store/snap.h"
#include "util/strset.h"
#include "util/trace.h"
#include "txn/wal.h"

#include <dirent.h>
#include <pthread.h>

enum {
	REC_BEGIN = 1,
	REC_FILE = 2,
	REC_MKDIR = 3,
	REC_RMDIR = 4,
	REC_COMMIT = 5
};

typedef struct {
	txn_change c; /* path owned when decoded from a log */
	char tmp[64];
	bool staged;
} fileop;

/* What a step of the plan has written and must make durable (see
 * "durability" below). */
enum { SYNC_EACH_MAX = 128, SYNC_FDS_MAX = 64, RELEASE_MAX = 128 };

typedef struct {
	bool whole; /* many paths: one syncfs per step */
	int fds[SYNC_FDS_MAX];
	const char *names[SYNC_FDS_MAX];
	size_t nfds;
	strset dirs; /* relative paths, "" for the root */
} durable;

/* The files apply_all deletes or replaces, held open until its renames
 * are durable (see "releasing replaced files" below). */
typedef struct {
	int fds[RELEASE_MAX];
	size_t n;
	pthread_t thread;
	bool running;
} releaser;

typedef struct {
	char txid[17];
	unsigned history;
	char moved_id[17];
	oplog_entry entry; /* PUSH only */
	bool has_entry;
	fileop *files;
	size_t nfiles;
	char **mkdirs; /* shallow first */
	size_t nmk;
	char **rmdirs; /* deep first */
	size_t nrm;
	bool committed;
	decree_progress meter; /* txn_run's progress (with s->progress) */
	durable dur;
	releaser rel;
	/* the history as check_history read it (has_hist), for the update
	 * after COMMIT: under the tree lock nothing else writes it.  It is
	 * updated and written ahead (write_history_ahead, before anything can
	 * commit): the new file waits in hist_file's temp (hist_pending, unless
	 * there was nothing to write) until COMMIT. */
	oplog hist;
	bool has_hist, hist_pending;
	fs_pending hist_file;
} plan;

static void durable_release(durable *d);
static int durable_file(durable *d, int fd, const char *path);
static int durable_entry(durable *d, const char *path);
static void release_wait(releaser *rl);

static void plan_release(plan *p, bool own_paths)
{
	if (own_paths)
		for (size_t i = 0; i < p->nfiles; i++)
			decree_free(p->files[i].c.path);
	decree_free(p->files);
	for (size_t i = 0; i < p->nmk; i++)
		decree_free(p->mkdirs[i]);
	for (size_t i = 0; i < p->nrm; i++)
		decree_free(p->rmdirs[i]);
	decree_free(p->mkdirs);
	decree_free(p->rmdirs);
	if (p->has_entry)
		oplog_entry_release(&p->entry);
	oplog_release(&p->hist);
	if (p->hist_pending)
		fs_pending_abort(&p->hist_file);
	durable_release(&p->dur);
	release_wait(&p->rel);
	memset(p, 0, sizeof(*p));
}

static void progress(const txn_spec *sp, decree_phase ph, const char *path,
		     const char *act)
{
	if (sp && sp->progress)
		sp->progress(sp->payload, ph, path, act);
}

/* The handle's progress function sees a stage start (meter_start), each
 * file done (meter_step) and the end (meter_end). */
static void meter_start(decree_store *s, decree_progress *m,
			decree_progress_stage stage, uint64_t files,
			uint64_t bytes)
{
	memset(m, 0, sizeof(*m));
	m->stage = stage;
	m->files_total = files;
	m->bytes_total = bytes;
	m->total_known = true;
	repo_progress(s, m);
}

static void meter_step(decree_store *s, decree_progress *m, uint64_t bytes)
{
	m->files++;
	m->bytes += bytes;
	repo_progress(s, m);
}

/* DECREE_ECANCELLED once the host asked to stop (before COMMIT only). */
static int cancelled(const txn_spec *sp)
{
	if (sp && sp->cancel && *sp->cancel)
		return decree_error_set(DECREE_ECANCELLED, "interrupted");
	return 0;
}

static const char *change_action(const txn_change *c)
{
	return !c->has_new ? "delete" : c->has_old ? "modify" : "create";
}

/* --- path state ----------------------------------------------------------- */

int txn_path_matches(bool *same, decree_store *s, const char *path, bool has,
		     uint32_t mode, const oid *id)
{
	struct stat st;
	bool exists;
	oid got;
	int r;

	*same = false;
	if ((r = fs_lstat_beneath(&exists, &st, s->rootfd, path)) < 0)
		return r;
	if (!has) {
		/* "no file here": a directory may stand at the path (the
		 * planner removes it if it empties, or reports a conflict), or
		 * a FIFO, socket or device, which holds no bytes to keep and
		 * which the rename of the new file replaces */
		*same = !exists ||
			(!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode));
		return 0;
	}
	if (!exists)
		return 0;
	if (mode == MODE_LINK) {
		char target[PATH_MAX + 1];
		const char *base;
		int dfd;
		ssize_t n;
		if (!S_ISLNK(st.st_mode))
			return 0;
		if ((r = fs_open_parent(&dfd, &base, s->rootfd, path, false)) <
		    0)
			return r;
		n = readlinkat(dfd, base, target, sizeof(target) - 1);
		close(dfd);
		if (n < 0)
			return decree_error_os("cannot read link '%s'", path);
		sha256_buf(&got, target, (size_t)n);
	} else {
		int fd;
		if (!S_ISREG(st.st_mode) || mode_of_file(st.st_mode) != mode)
			return 0;
		if ((fd = fs_open_beneath(s->rootfd, path,
					  O_RDONLY | O_NONBLOCK)) < 0)
			return decree_error_os("cannot open '%s'", path);
		r = sha256_fd(&got, NULL, fd, path);
		close(fd);
		if (r < 0)
			return r;
	}
	*same = !oid_cmp(&got, id);
	return 0;
}

/* Write object `id` as `name` in dirfd (must not exist), with `mode`;
 * `dur` makes it durable (durable_file, durable_entry). */
static int write_object_at(decree_store *s, int dirfd, const char *name,
			   uint32_t mode, const oid *id,
			   const char *path_for_errors, durable *dur)
{
	buf data = BUF_INIT;
	uint64_t size = 0;
	odb *db;
	int fd = -1, r;

	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_size(&size, db, id)) < 0)
		goto done;
	if (mode != MODE_LINK && size >= ODB_STREAM_MIN) {
		/* a big file: streamed, sparse where it is zero */
		fd = openat(dirfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd < 0) {
			r = decree_error_os("cannot create '%s'",
					    path_for_errors);
			goto done;
		}
		if ((r = odb_read_to_fd(db, id, fd, path_for_errors)) < 0)
			goto done;
		goto written;
	}
	if ((r = odb_read(&data, NULL, db, id)) < 0)
		goto done;
	if (mode == MODE_LINK) {
		if (fs_fault_hook && fs_fault_hook("write")) {
			r = decree_error_set(
				DECREE_ERROR,
				"cannot create link '%s': injected fault",
				path_for_errors);
			goto done;
		}
		if (symlinkat(data.ptr, dirfd, name) < 0)
			r = decree_error_os("cannot create link '%s'",
					    path_for_errors);
		else
			r = durable_entry(dur, path_for_errors);
		goto done;
	}
	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = decree_error_os("cannot create '%s'", path_for_errors);
		goto done;
	}
	if (fs_write_all(fd, data.ptr, data.len) < 0) {
		r = decree_error_os("cannot write '%s'", path_for_errors);
		goto done;
	}
written:
	if (fchmod(fd, mode & MODE_PERM) < 0) {
		r = decree_error_os("cannot chmod '%s'", path_for_errors);
		goto done;
	}
	/* closed, or held open for its fsync (closed on failure too) */
	r = durable_file(dur, fd, path_for_errors);
	fd = -1;
done:
	if (fd >= 0)
		close(fd);
	if (r < 0)
		unlinkat(dirfd, name, 0);
	buf_release(&data);
	return r;
}

static int sync_tree(decree_store *s)
{
	if ((fs_fault_hook && fs_fault_hook("fsync")) || syncfs(s->rootfd) < 0)
		return decree_error_os("cannot sync '%s'", s->root);
	return 0;
}

/* --- durability --------------------------------------------------------
 *
 * A step is made durable by fsync-ing the files it wrote and the
 * directories whose entries it changed, not by syncfs: syncfs also waits
 * for every other writer's dirty data on the file system (with 1 GB that
 * someone else wrote and nobody synced, a restore of 16 files waited 2.4 s
 * in syncfs; fsync-ing the 16 temps and their directories took 5 ms).
 * Each temp's writeback is started as soon as it is written
 * (sync_file_range), so that its fsync mostly waits with the others.
 * Up to SYNC_FDS_MAX temps stay open for that, then they are synced.
 * A plan of more than SYNC_EACH_MAX paths uses one syncfs per step
 * instead (`whole`): a fsync per path would cost more than that flush.
 */

static void durable_init(durable *d, const plan *p)
{
	d->whole = p->nfiles + p->nmk + p->nrm > SYNC_EACH_MAX;
}

/* fsync and close the files held; the first error is returned, every fd
 * is closed either way. */
static int durable_sync_files(durable *d)
{
	int r = 0;

	for (size_t i = 0; i < d->nfds; i++) {
		if (r == 0)
			r = fs_fsync(d->fds[i], d->names[i]);
		if (fs_close(d->fds[i]) < 0 && r == 0)
			r = decree_error_os("cannot close '%s'", d->names[i]);
	}
	d->nfds = 0;
	return r;
}

/* Take over fd, a file just written for `path` (the name for errors, kept
 * by the plan): closed now in a whole-tree step, else synced later. */
static int durable_file(durable *d, int fd, const char *path)
{
	if (d->whole) {
		if (fs_close(fd) < 0)
			return decree_error_os("cannot close '%s'", path);
		return 0;
	}
#ifdef SYNC_FILE_RANGE_WRITE
	(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
	d->fds[d->nfds] = fd;
	d->names[d->nfds++] = path;
	return d->nfds == SYNC_FDS_MAX ? durable_sync_files(d) : 0;
}

/* The entry of `path` in its directory changed (created, renamed into,
 * removed). */
static int durable_entry(durable *d, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (d->whole)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0,
		 path);
	return strset_put(&d->dirs, dir, 1);
}

/* Everything noted so far is durable once this returns 0. */
static int durable_flush(durable *d, decree_store *s)
{
	int r;

	if (d->whole)
		return sync_tree(s);
	if ((r = durable_sync_files(d)) < 0)
		return r;
	for (size_t i = 0; i < d->dirs.cap; i++) {
		const char *rel = d->dirs.keys[i];
		int fd;
		if (!rel)
			continue;
		if (!*rel) {
			if ((r = fs_fsync(s->rootfd, s->root)) < 0)
				return r;
			continue;
		}
		/* no directory there any more: the plan removed it (or put a
		 * file or link in its place), and its parent, noted as well,
		 * holds that */
		if ((fd = fs_open_beneath(s->rootfd, rel,
					  O_RDONLY | O_DIRECTORY)) < 0) {
			if (errno == ENOENT || errno == ENOTDIR ||
			    errno == ELOOP)
				continue;
			return decree_error_os("cannot open directory '%s'",
					       rel);
		}
		r = fs_fsync(fd, rel);
		close(fd);
		if (r < 0)
			return r;
	}
	strset_release(&d->dirs);
	return 0;
}

static void durable_release(durable *d)
{
	for (size_t i = 0; i < d->nfds; i++)
		close(d->fds[i]);
	d->nfds = 0;
	strset_release(&d->dirs);
}

/* --- releasing replaced files --------------------------------------------
 *
 * Deleting a file, or renaming over it, frees its inode and its blocks.
 * On a file system mounted with `discard` that can wait for the device
 * (ext4 without a journal discards there and then): 0.2-0.3 ms per file
 * on the bench machine, half of apply_all's time on a restore of 16
 * files.  So apply_all holds each file it is about to delete or replace
 * (an O_PATH descriptor: no read permission needed, no device opened),
 * the unlink or rename then only drops a name, and the descriptors are
 * closed on a thread once the renames are durable: the blocks are freed
 * while the transaction commits and updates the history (measured on a
 * gen10k restore: apply_all 6.9 -> 3.6 ms, commit and history 0.4 and
 * 0.9 ms slower, 2 ms in all).  The transaction waits for that thread
 * before it returns (plan_release).
 * Holding is only an optimisation: a file that cannot be held is freed
 * as before.
 */

static void release_hold(releaser *rl, decree_store *s, const char *path)
{
	struct stat st;
	int fd;

	if (rl->running || rl->n == RELEASE_MAX)
		return;
	if ((fd = fs_open_beneath(s->rootfd, path, O_PATH)) < 0)
		return;
	/* only a file whose last name goes has blocks to free here */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
	    !st.st_blocks) {
		close(fd);
		return;
	}
	rl->fds[rl->n++] = fd;
}

static void *release_main(void *arg)
{
	releaser *rl = arg;

	for (size_t i = 0; i < rl->n; i++)
		close(rl->fds[i]);
	return NULL;
}

/* Free what was held, on a thread when one can be started. */
static void release_start(releaser *rl)
{
	if (!rl->n || rl->running)
		return;
	rl->running = pthread_create(&rl->thread, NULL, release_main, rl) == 0;
	if (!rl->running) {
		release_main(rl);
		rl->n = 0;
	}
}

static void release_wait(releaser *rl)
{
	if (rl->running)
		pthread_join(rl->thread, NULL);
	else
		release_main(rl);
	rl->running = false;
	rl->n = 0;
}

/* --- log records -----------------------------------------------------------
 */

static int put_path(buf *b, const char *p)
{
	size_t n = strlen(p);
	if (n > 0xffff)
		return decree_error_set(DECREE_EINVALID, "path too long");
	if (buf_put_u16(b, (unsigned)n) < 0)
		return -1;
	return buf_put(b, p, n);
}

static int get_path(char **out, const unsigned char **p,
		    const unsigned char *end)
{
	size_t n;
	if (end - *p < 2)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated log record");
	n = get_u16le(*p);
	*p += 2;
	if ((size_t)(end - *p) < n || memchr(*p, '\0', n))
		return decree_error_set(DECREE_ECORRUPT, "bad log record");
	if (!(*out = decree_strndup((const char *)*p, n)))
		return -1;
	*p += n;
	return 0;
}

static int encode_file(buf *b, const fileop *f)
{
	if (txn_change_put_sides(b, &f->c) < 0 || put_path(b, f->c.path) < 0)
		return -1;
	return put_path(b, f->tmp);
}

/* The sides of the change a FILE record holds (encode_file). */
static int decode_file_sides(txn_change *c, const wal_record *rec)
{
	if (rec->len < TXN_CHANGE_SIDES_LEN)
		return -1;
	txn_change_get_sides(c, rec->data);
	return 0;
}

static int decode_file(fileop *f, const wal_record *rec)
{
	const unsigned char *p = rec->data, *end = p + rec->len;
	txn_change *c = &f->c;
	char *tmp = NULL;
	int r;

	memset(f, 0, sizeof(*f));
	if (decode_file_sides(c, rec) < 0)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated log record");
	p += TXN_CHANGE_SIDES_LEN;
	if ((r = get_path(&c->path, &p, end)) < 0)
		return r;
	if ((r = get_path(&tmp, &p, end)) < 0)
		goto fail;
	if (strlen(tmp) >= sizeof(f->tmp) || strchr(tmp, '/') ||
	    strncmp(tmp, ".decree-tmp-", 12) ||
	    !fs_path_is_safe(c->path, true)) {
		decree_free(tmp);
		r = decree_error_set(DECREE_ECORRUPT, "bad path in log record");
		goto fail;
	}
	snprintf(f->tmp, sizeof(f->tmp), "%s", tmp);
	decree_free(tmp);
	return 0;
fail:
	/* the caller counts only decoded records: the path is ours to free */
	decree_free(c->path);
	c->path = NULL;
	return r;
}

static int encode_begin(buf *b, const plan *p)
{
	if (buf_put(b, p->txid, 16) < 0 || buf_put_u8(b, p->history) < 0 ||
	    buf_put(b, p->moved_id, 16) < 0 || buf_put_u8(b, p->has_entry) < 0)
		return -1;
	return p->has_entry ? oplog_entry_encode(b, &p->entry) : 0;
}

static int decode_begin(plan *p, const wal_record *rec)
{
	const unsigned char *d = rec->data, *end = d + rec->len;
	int r;

	if (rec->len < 34)
		return decree_error_set(DECREE_ECORRUPT,
					"truncated log record");
	memcpy(p->txid, d, 16);
	p->history = d[16];
	memcpy(p->moved_id, d + 17, 16);
	d += 34;
	if (rec->data[33]) {
		if ((r = oplog_entry_decode(&p->entry, &d, end)) < 0)
			return r;
		p->has_entry = true;
	}
	return 0;
}

/*
 * The plan a log's valid records describe (owning its paths), in their
 * order.  A record that checks out but does not decode (a writer bug, or
 * a hostile file) is counted in *bad, like an unreadable one: it leaves
 * the plan incomplete.  *has_begin: the BEGIN record is among them.
 * Fails only when out of memory.
 */
static int decode_log(plan *p, size_t *bad, bool *has_begin,
		      const wal_contents *c)
{
	size_t cf = 0, cm = 0, cr = 0;
	int r;

	memset(p, 0, sizeof(*p));
	*bad = 0;
	*has_begin = false;
	for (size_t i = 0; i < c->nrecs; i++) {
		const wal_record *rec = &c->recs[i];
		const unsigned char *d = rec->data;
		char *path;
		r = 0;
		switch (rec->type) {
		case REC_BEGIN:
			if (*has_begin || rec->seq != 0) {
				r = DECREE_ECORRUPT;
				break;
			}
			if ((r = decode_begin(p, rec)) == 0)
				*has_begin = true;
			break;
		case REC_FILE:
			if ((r = GROW(p->files, cf, p->nfiles + 1)) < 0)
				return r;
			if ((r = decode_file(&p->files[p->nfiles], rec)) == 0)
				p->nfiles++;
			else
				decree_free(p->files[p->nfiles].c.path);
			break;
		case REC_MKDIR:
		case REC_RMDIR:
			if ((r = get_path(&path, &d, d + rec->len)) < 0)
				break;
			if (!fs_path_is_safe(path, true)) {
				decree_free(path);
				r = DECREE_ECORRUPT;
				break;
			}
			if (rec->type == REC_MKDIR) {
				if ((r = GROW(p->mkdirs, cm, p->nmk + 1)) < 0) {
					decree_free(path);
					return r;
				}
				p->mkdirs[p->nmk++] = path;
			} else {
				if ((r = GROW(p->rmdirs, cr, p->nrm + 1)) < 0) {
					decree_free(path);
					return r;
				}
				p->rmdirs[p->nrm++] = path;
			}
			break;
		case REC_COMMIT:
			/* after the plan (any, when the header is gone) */
			if (!c->header_ok || rec->seq >= c->nplan)
				p->committed = true;
			else
				r = DECREE_ECORRUPT;
			break;
		default:
			r = DECREE_ECORRUPT;
		}
		if (r == DECREE_ERROR)
			return r; /* out of memory (bad bytes: ECORRUPT) */
		if (r < 0) {
			error_clear();
			(*bad)++;
		}
	}
	return 0;
}

/* --- planning --------------------------------------------------------------
 */

static size_t depth_of(const char *p)
{
	size_t d = 0;
	for (; *p; p++)
		d += *p == '/';
	return d;
}

static int cmp_deep_first(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t dx = depth_of(x), dy = depth_of(y);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x, y);
}

static int push_str(char ***v, size_t *n, size_t *cap, const char *s)
{
	char *d = decree_strdup(s);
	if (!d || GROW(*v, *cap, *n + 1) < 0) {
		decree_free(d);
		return -1;
	}
	(*v)[(*n)++] = d;
	return 0;
}

/* Ancestors of `path`, shallow first, into a reusable buffer list. */
static int each_ancestor(const char *path, int (*fn)(void *, const char *),
			 void *payload)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	int r;

	if (n >= sizeof(tmp))
		return decree_error_set(DECREE_EINVALID, "path too long");
	memcpy(tmp, path, n + 1);
	for (size_t i = 0; i < n; i++) {
		if (tmp[i] != '/')
			continue;
		tmp[i] = '\0';
		r = fn(payload, tmp);
		tmp[i] = '/';
		if (r)
			return r;
	}
	return 0;
}

typedef struct {
	decree_store *s;
	plan *p;
	strset dirs;	/* 1 exists, 2 planned mkdir */
	strset dels;	/* paths deleted */
	strset newdirs; /* ancestors of new paths */
	strset rmset;	/* planned rmdirs */
	size_t mkcap, rmcap;
	const char *cur;
} planner;

static int plan_mkdir_one(void *payload, const char *dir)
{
	planner *pl = payload;
	int fd, r, state;

	if (strset_put(&pl->newdirs, dir, 1) < 0)
		return -1;
	if (strset_get(&pl->dirs, dir, &state))
		return 0;
	{
		/* below a directory we create, everything is created too */
		const char *slash = strrchr(dir, '/');
		if (slash) {
			char parent[PATH_MAX];
			snprintf(parent, sizeof(parent), "%.*s",
				 (int)(slash - dir), dir);
			if (strset_get(&pl->dirs, parent, &state) &&
			    state == 2) {
				if (strset_put(&pl->dirs, dir, 2) < 0)
					return -1;
				return push_str(&pl->p->mkdirs, &pl->p->nmk,
						&pl->mkcap, dir);
			}
		}
	}
	r = fs_open_dir(&fd, pl->s->rootfd, dir);
	if (r == 0) {
		close(fd);
		return strset_put(&pl->dirs, dir, 1);
	}
	if (r == DECREE_ENOTFOUND ||
	    (r == DECREE_EINVALID && strset_has(&pl->dels, dir))) {
		error_clear();
		if (strset_put(&pl->dirs, dir, 2) < 0)
			return -1;
		return push_str(&pl->p->mkdirs, &pl->p->nmk, &pl->mkcap, dir);
	}
	if (r == DECREE_EINVALID)
		return decree_error_set(
			DECREE_ECONFLICT,
			"cannot create '%s': '%s' is in the way", pl->cur, dir);
	return r;
}

static int add_candidate(void *payload, const char *dir)
{
	strset *cands = payload;
	return strset_put(cands, dir, 0);
}

/* Can directory `dir` be removed once the planned deletions happened? */
static int dir_becomes_empty(bool *empty, planner *pl, const char *dir)
{
	DIR *d;
	struct dirent *de;
	int fd, r;
	buf child = BUF_INIT;

	*empty = false;
	if (strset_has(&pl->newdirs, dir))
		return 0;
	r = fs_open_dir(&fd, pl->s->rootfd, dir);
	if (r < 0) {
		error_clear();
		return 0;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return decree_error_os("cannot read directory '%s'", dir);
	}
	rewinddir(d); /* fd may be a dup of the root fd, sharing its offset */
	*empty = true;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		buf_clear(&child);
		if (buf_printf(&child, "%s/%s", dir, de->d_name) < 0) {
			r = -1;
			break;
		}
		if (!strset_has(&pl->dels, child.ptr) &&
		    !strset_has(&pl->rmset, child.ptr)) {
			*empty = false;
			break;
		}
	}
	closedir(d);
	buf_release(&child);
	return r < 0 ? r : 0;
}

static int make_plan(plan *p, decree_store *s, const txn_spec *sp)
{
	planner pl;
	strset cands = STRSET_INIT;
	char **cv = NULL;
	size_t ncv = 0, cvcap = 0;
	int r = 0;

	memset(&pl, 0, sizeof(pl));
	pl.s = s;
	pl.p = p;
	if (!(p->files = decree_calloc(sp->n ? sp->n : 1, sizeof(fileop))))
		return -1;
	p->nfiles = sp->n;
	for (size_t i = 0; i < sp->n; i++) {
		const txn_change *c = &sp->changes[i];
		if (!fs_path_is_safe(c->path, true)) {
			r = DECREE_EINVALID;
			goto done;
		}
		if (repo_path_in_store(s, c->path)) { /* never part of the tree
						       */
			r = decree_error_set(DECREE_EINVALID,
					     "path '%s' is inside the store",
					     c->path);
			goto done;
		}
		p->files[i].c = *c;
		snprintf(p->files[i].tmp, sizeof(p->files[i].tmp),
			 ".decree-tmp-%s-%zu", p->txid, i);
		if (c->has_old && !c->has_new &&
		    (r = strset_put(&pl.dels, c->path, 1)) < 0)
			goto done;
	}
	/* Directories to create, shallow first (ancestors come in order). */
	for (size_t i = 0; i < sp->n; i++) {
		if (!sp->changes[i].has_new)
			continue;
		pl.cur = sp->changes[i].path;
		if ((r = each_ancestor(pl.cur, plan_mkdir_one, &pl)) < 0)
			goto done;
	}
	/* Directories that deletions leave empty, deepest first. */
	for (size_t i = 0; i < sp->n; i++) {
		const txn_change *c = &sp->changes[i];
		struct stat st;
		bool exists;
		if (c->has_old && !c->has_new) {
			if ((r = each_ancestor(c->path, add_candidate,
					       &cands)) < 0)
				goto done;
		} else if (c->has_new) {
			/* a new file where a directory stands now */
			if ((r = fs_lstat_beneath(&exists, &st, s->rootfd,
						  c->path)) < 0)
				goto done;
			if (exists && S_ISDIR(st.st_mode) &&
			    (r = strset_put(&cands, c->path, 0)) < 0)
				goto done;
		}
	}
	for (size_t i = 0; i < cands.cap; i++)
		if (cands.keys && cands.keys[i] &&
		    (r = push_str(&cv, &ncv, &cvcap, cands.keys[i])) < 0)
			goto done;
	if (ncv > 1)
		qsort(cv, ncv, sizeof(*cv), cmp_deep_first);
	for (size_t i = 0; i < ncv; i++) {
		bool empty;
		if ((r = dir_becomes_empty(&empty, &pl, cv[i])) < 0)
			goto done;
		if (!empty)
			continue;
		if ((r = strset_put(&pl.rmset, cv[i], 1)) < 0 ||
		    (r = push_str(&p->rmdirs, &p->nrm, &pl.rmcap, cv[i])) < 0)
			goto done;
	}
	for (size_t i = 0; i < sp->n; i++) {
		const txn_change *c = &sp->changes[i];
		struct stat st;
		bool exists;
		if (!c->has_new || strset_has(&pl.rmset, c->path))
			continue;
		if ((r = fs_lstat_beneath(&exists, &st, s->rootfd, c->path)) <
		    0)
			goto done;
		if (exists && S_ISDIR(st.st_mode)) {
			r = decree_error_set(
				DECREE_ECONFLICT,
				"cannot write '%s': a non-empty directory is in the way",
				c->path);
			goto done;
		}
	}
done:
	for (size_t i = 0; i < ncv; i++)
		decree_free(cv[i]);
	decree_free(cv);
	strset_release(&cands);
	strset_release(&pl.dirs);
	strset_release(&pl.dels);
	strset_release(&pl.newdirs);
	strset_release(&pl.rmset);
	return r;
}

/* --- execution ------------------------------------------------------------ */

static bool parent_ready(const plan *p, const char *path)
{
	/* staged early only if no directory on the way is created or removed */
	size_t n = strlen(path);
	for (size_t i = 0; i < p->nmk; i++) {
		size_t m = strlen(p->mkdirs[i]);
		if (m < n && !strncmp(path, p->mkdirs[i], m) && path[m] == '/')
			return false;
	}
	for (size_t i = 0; i < p->nrm; i++) {
		size_t m = strlen(p->rmdirs[i]);
		if (m < n && !strncmp(path, p->rmdirs[i], m) && path[m] == '/')
			return false;
	}
	return true;
}

static int stage_one(decree_store *s, fileop *f, durable *dur)
{
	const char *base;
	int dfd, r;

	if ((r = fs_open_parent(&dfd, &base, s->rootfd, f->c.path, false)) < 0)
		return r;
	r = write_object_at(s, dfd, f->tmp, f->c.new_mode, &f->c.new_id,
			    f->c.path, dur);
	close(dfd);
	if (r == 0)
		f->staged = true;
	return r;
}

static int unlink_beneath(decree_store *s, const char *path, const char *name,
			  int flags)
{
	const char *base;
	int dfd, r;

	/* A missing parent means nothing to remove; a parent that is not a
	 * directory (replaced by someone, maybe by a symlink out of the tree)
	 * is an error: what we meant to remove may sit in the real one. */
	r = fs_open_parent(&dfd, &base, s->rootfd, path, false);
	if (r == DECREE_ENOTFOUND) {
		error_clear();
		return 0;
	}
	if (r < 0)
		return r;
	if ((fs_fault_hook && fs_fault_hook("unlink")) ||
	    (unlinkat(dfd, name ? name : base, flags) < 0 && errno != ENOENT)) {
		r = decree_error_os("cannot remove '%s'", path);
	}
	close(dfd);
	return r;
}

static int rename_one(decree_store *s, fileop *f)
{
	const char *base;
	int dfd, r;

	if ((r = fs_open_parent(&dfd, &base, s->rootfd, f->c.path, false)) < 0)
		return r;
	if ((fs_fault_hook && fs_fault_hook("rename")) ||
	    renameat(dfd, f->tmp, dfd, base) < 0)
		r = decree_error_os("cannot rename into '%s'", f->c.path);
	close(dfd);
	return r;
}

static int mkdir_beneath(decree_store *s, const char *path)
{
	const char *base;
	int dfd, r;

	if ((r = fs_open_parent(&dfd, &base, s->rootfd, path, false)) < 0)
		return r;
	if ((fs_fault_hook && fs_fault_hook("mkdir")) ||
	    (mkdirat(dfd, base, 0755) < 0 && errno != EEXIST))
		r = decree_error_os("cannot create directory '%s'", path);
	close(dfd);
	return r;
}

enum { AT_OLD, AT_NEW, FOREIGN };

/* Where does a path stand: in its old state, its new state, or neither
 * (someone changed it after the transaction was interrupted)? */
static int classify(int *where, decree_store *s, const txn_change *c)
{
	bool same;
	int r;

	if ((r = txn_path_matches(&same, s, c->path, c->has_old, c->old_mode,
				  &c->old_id)) < 0)
		return r;
	if (same) {
		*where = AT_OLD;
		return 0;
	}
	if ((r = txn_path_matches(&same, s, c->path, c->has_new, c->new_mode,
				  &c->new_id)) < 0)
		return r;
	*where = same ? AT_NEW : FOREIGN;
	return 0;
}

/* The first error of a best-effort sequence, with its message (later
 * steps may set or clear the thread's error slot). */
typedef struct {
	int code;
	char msg[1024];
} first_error;

static void note_error(first_error *fe, int r)
{
	if (r < 0 && !fe->code) {
		fe->code = r;
		snprintf(fe->msg, sizeof(fe->msg), "%s", error_last());
	}
}

/*
 * A path's parent chain is "not a directory" (DECREE_EINVALID from the
 * rooted walk).  If some ancestor is itself a path of this transaction,
 * that is the transaction's own doing (a file replaced a directory or the
 * other way round) and nothing can be below it.  Otherwise someone replaced
 * a directory, perhaps by a symlink out of the tree: an error that keeps
 * the log, so recovery completes once the directory is put back.
 */
static bool blocked_by_own_change(const strset *paths, const char *path)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(tmp))
		return false;
	memcpy(tmp, path, n + 1);
	for (size_t i = 0; i < n; i++) {
		if (tmp[i] != '/')
			continue;
		tmp[i] = '\0';
		if (strset_has(paths, tmp))
			return true;
		tmp[i] = '/';
	}
	return false;
}

static int tolerate(int r, const strset *paths, const char *path)
{
	if (r == DECREE_ENOTFOUND ||
	    (r == DECREE_EINVALID && blocked_by_own_change(paths, path))) {
		error_clear();
		return 0;
	}
	return r;
}

/*
 * Roll a (possibly partially applied) plan back to the old state.  A path
 * that is in neither its old nor its new state was changed by someone else
 * after the interruption: it is left exactly as it is (and counted in
 * *foreign), because overwriting it would destroy bytes decree never
 * captured.
 */
static int rollback(decree_store *s, plan *p, const txn_spec *sp,
		    size_t *foreign)
{
	unsigned char *todo = NULL;
	strset paths = STRSET_INIT;
	first_error fe = { 0, "" };
	/* one syncfs at the end: a rollback is rare and may touch any path */
	durable whole = { .whole = true };
	int r;

	*foreign = 0;
	if (p->nfiles && !(todo = decree_calloc(p->nfiles, 1)))
		return -1;
	for (size_t i = 0; i < p->nfiles; i++)
		if (strset_put(&paths, p->files[i].c.path, 1) < 0) {
			decree_free(todo);
			strset_release(&paths);
			return -1;
		}
	for (size_t i = 0; i < p->nfiles; i++) { /* temps */
		r = unlink_beneath(s, p->files[i].c.path, p->files[i].tmp, 0);
		note_error(&fe, tolerate(r, &paths, p->files[i].c.path));
	}
	for (size_t i = 0; i < p->nfiles; i++) {
		const txn_change *c = &p->files[i].c;
		int where;
		if ((r = classify(&where, s, c)) < 0) {
			note_error(&fe, r);
			continue;
		}
		if (where == FOREIGN) {
			(*foreign)++;
			progress(sp, DECREE_PHASE_ROLLING_BACK, c->path,
				 "skip");
			continue;
		}
		if (where == AT_OLD)
			continue;
		if (c->has_old) {
			todo[i] = 1; /* written back below, after the
					directories */
			continue;
		}
		progress(sp, DECREE_PHASE_ROLLING_BACK, c->path, "remove");
		note_error(&fe, tolerate(unlink_beneath(s, c->path, NULL, 0),
					 &paths, c->path));
	}
	for (size_t i = p->nmk; i-- > 0;) { /* created directories, deep first
					     */
		const char *base;
		int dfd;
		if (fs_open_parent(&dfd, &base, s->rootfd, p->mkdirs[i],
				   false) < 0) {
			error_clear();
			continue;
		}
		unlinkat(dfd, base, AT_REMOVEDIR); /* only if empty */
		close(dfd);
	}
	for (size_t i = p->nrm; i-- > 0;) /* removed directories, shallow first
					   */
		note_error(&fe, tolerate(mkdir_beneath(s, p->rmdirs[i]), &paths,
					 p->rmdirs[i]));
	for (size_t i = 0; i < p->nfiles; i++) { /* old contents */
		fileop *f = &p->files[i];
		const txn_change *c = &f->c;
		const char *base;
		char rtmp[80];
		int dfd;
		if (!todo[i])
			continue;
		progress(sp, DECREE_PHASE_ROLLING_BACK, c->path, "restore");
		if ((r = fs_open_parent(&dfd, &base, s->rootfd, c->path,
					true)) < 0) {
			if (tolerate(r, &paths, c->path) == 0)
				(*foreign)++; /* below a path someone else
						 changed */
			else
				note_error(&fe, r);
			continue;
		}
		snprintf(rtmp, sizeof(rtmp), "%s-r", f->tmp);
		unlinkat(dfd, rtmp, 0);
		r = write_object_at(s, dfd, rtmp, c->old_mode, &c->old_id,
				    c->path, &whole);
		if (r == 0) {
			struct stat st;
			/* a directory created for the new state may stand here
			 */
			if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode))
				unlinkat(dfd, base, AT_REMOVEDIR);
			if ((fs_fault_hook && fs_fault_hook("rename")) ||
			    renameat(dfd, rtmp, dfd, base) < 0) {
				r = decree_error_os("cannot restore '%s'",
						    c->path);
				unlinkat(dfd, rtmp, 0);
			}
		}
		close(dfd);
		note_error(&fe, r);
	}
	note_error(&fe, durable_flush(&whole, s));
	decree_free(todo);
	strset_release(&paths);
	if (fe.code)
		return decree_error_set(fe.code, "%s", fe.msg);
	return 0;
}

static int verify_new(decree_store *s, plan *p)
{
	buf bad = BUF_INIT;
	size_t nbad = 0;
	uint64_t bytes = 0;
	int r = 0;

	for (size_t i = 0; s->progress && i < p->nfiles; i++)
		bytes += p->files[i].c.has_new ? p->files[i].c.new_size : 0;
	meter_start(s, &p->meter, DECREE_PROGRESS_CHECK, p->nfiles, bytes);
	for (size_t i = 0; i < p->nfiles; i++) {
		const txn_change *c = &p->files[i].c;
		bool same;
		if ((r = txn_path_matches(&same, s, c->path, c->has_new,
					  c->new_mode, &c->new_id)) < 0)
			goto done;
		meter_step(s, &p->meter, c->has_new ? c->new_size : 0);
		if (!same) {
			if (nbad++ < 20)
				buf_printf(&bad, "%s'%s'", nbad > 1 ? ", " : "",
					   c->path);
		}
	}
	if (nbad)
		r = decree_error_set(
			DECREE_EVERIFY,
			"verification failed for %zu path(s): %s%s", nbad,
			bad.ptr, nbad > 20 ? ", ..." : "");
done:
	buf_release(&bad);
	return r;
}

/* The history update of p made in p->hist: 0 done, 1 nothing to do (the
 * entry is there already), <0 out of memory. */
static int update_hist(plan *p)
{
	if (p->history == TXN_HISTORY_PUSH)
		return oplog_push(&p->hist, &p->entry);
	return oplog_move(&p->hist, p->history == TXN_HISTORY_UNDO,
			  p->moved_id);
}

/*
 * LOGGED: the history as it will be after COMMIT, updated from the one
 * check_history read and written to a temp file next to it, whose
 * writeback starts now; apply_history syncs it and renames it into place
 * after COMMIT.  Encoding and writing 200 KB then no longer wait between
 * COMMIT and the end, and the temp's fsync finds it mostly on the disk.
 * A failure here fails the transaction with nothing changed (the tree is
 * not touched yet); a temp left by a crash is swept by the recovery that
 * the log sends the next command to.
 */
static int write_history_ahead(decree_store *s, plan *p)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	int r;

	if (!p->has_hist)
		return 0;
	if ((r = update_hist(p)) != 0)
		return r > 0 ? 0 : r; /* already done: nothing to write */
	repo_file(path, s, "oplog");
	if ((r = oplog_encode(&b, &p->hist)) == 0 &&
	    (r = fs_pending_create(&p->hist_file, path, 0644)) == 0) {
		p->hist_pending = true;
		if (fs_write_all(p->hist_file.fd, b.ptr, b.len) < 0)
			r = decree_error_os("cannot write '%s'", path);
#ifdef SYNC_FILE_RANGE_WRITE
		else
			(void)sync_file_range(p->hist_file.fd, 0, 0,
					      SYNC_FILE_RANGE_WRITE);
#endif
	}
	buf_release(&b);
	return r;
}

/* Apply the history update a committed transaction carries (idempotent):
 * the file written ahead (has_hist: run_steps wrote it before COMMIT), or
 * (a recovery) read and updated now. */
static int apply_history(decree_store *s, plan *p)
{
	char path[PATH_MAX];

	if (p->history == TXN_HISTORY_NONE)
		return 0;
	if (p->has_hist) {
		if (!p->hist_pending)
			return 0; /* nothing to write */
		p->hist_pending = false;
		return fs_pending_publish_synced(&p->hist_file);
	}
	repo_file(path, s, "oplog");
	return oplog_update(path,
			    p->history == TXN_HISTORY_PUSH ? &p->entry : NULL,
			    p->history == TXN_HISTORY_UNDO, p->moved_id);
}

/*
 * Remove a log whose work is done.  If it is gone but its directory could
 * not be fsynced, a power loss may bring it back: harmless, as recovering
 * it again finds everything done.  That is a warning, not a failure.
 */
static int remove_log(const char *walpath)
{
	struct stat st;
	int r;

	if ((r = wal_remove(walpath)) == 0 || lstat(walpath, &st) == 0)
		return r;
	warning_set(0, "the transaction log '%s' was removed, but %s", walpath,
		    error_last());
	error_clear();
	return 0;
}

/*
 * COMMITTED -> IDLE: the bookkeeping of a committed transaction, each step
 * tried even when an earlier one failed.  The log is removed only when
 * every step before succeeded, so that the next recovery does again what
 * failed (every step is idempotent).  Returns the first failure.
 */
static int finish_committed(decree_store *s, plan *p, const char *walpath,
			    bool temps_gone)
{
	first_error fe = { 0, "" };
	int r;

	/* temps are gone after a complete apply (temps_gone: this process
	 * renamed every one); a crash may leave some */
	for (size_t i = 0; !temps_gone && i < p->nfiles; i++) {
		if (!p->files[i].c.has_new)
			continue; /* never staged */
		r = unlink_beneath(s, p->files[i].c.path, p->files[i].tmp, 0);
		if (r == DECREE_EINVALID)
			error_clear(); /* not a directory: no temp of ours */
		else
			note_error(&fe, r);
	}
	note_error(&fe, apply_history(s, p));
	if (!fe.code)
		note_error(&fe, remove_log(walpath));
	if (fe.code)
		return decree_error_set(fe.code, "%s", fe.msg);
	return 0;
}

/* --- running a transaction: the steps of the state diagram ---------------
 */

/* A fresh transaction id, and the history update the BEGIN record carries. */
static int init_plan(plan *p, const txn_spec *sp)
{
	unsigned char rnd[8];
	int r;

	if ((r = fs_random(rnd, sizeof(rnd))) < 0)
		return r;
	for (int i = 0; i < 8; i++)
		snprintf(p->txid + 2 * i, 3, "%02x", rnd[i]);
	p->history = sp->history;
	if (sp->moved_id)
		snprintf(p->moved_id, sizeof(p->moved_id), "%s", sp->moved_id);
	if (sp->history == TXN_HISTORY_PUSH && sp->entry) {
		if ((r = oplog_entry_copy(&p->entry, sp->entry)) < 0)
			return r;
		p->has_entry = true;
		memcpy(p->entry.id, p->txid, 17);
		if (sp->pushed_id)
			memcpy(sp->pushed_id, p->txid, 17);
	}
	return 0;
}

/*
 * Everything both states need must be in the store already, and the
 * copies of the bytes we are about to destroy must be intact: the capture
 * skips objects the index already lists, so a damaged old copy would
 * otherwise be the only one left.
 */
static int check_contents(decree_store *s, odb *db, const txn_spec *sp)
{
	decree_progress m;
	uint64_t bytes = 0;
	int r;

	/* what this check and the staging read, in flight together when it
	 * is not in memory (a restore to a checkpoint made a while ago) */
	for (size_t i = 0; i < sp->n; i++) {
		if (sp->changes[i].has_old)
			odb_prefetch(db, &sp->changes[i].old_id);
		if (sp->changes[i].has_new)
			odb_prefetch(db, &sp->changes[i].new_id);
	}
	for (size_t i = 0; s->progress && i < sp->n; i++)
		bytes += sp->changes[i].has_old ? sp->changes[i].old_size : 0;
	meter_start(s, &m, DECREE_PROGRESS_CHECK, sp->n, bytes);
	for (size_t i = 0; i < sp->n; i++) {
		const txn_change *c = &sp->changes[i];
		if ((c->has_new && !odb_has(db, &c->new_id)) ||
		    (c->has_old && !odb_has(db, &c->old_id))) {
			/* missing from a damaged store: odb says which part */
			char msg[900];
			uint64_t size;
			odb_size(&size, db,
				 c->has_new && !odb_has(db, &c->new_id)
					 ? &c->new_id
					 : &c->old_id);
			snprintf(msg, sizeof(msg), "%s", error_last());
			return decree_error_set(DECREE_ECORRUPT,
						"%s, needed for '%s'", msg,
						c->path);
		}
		if (c->has_old) {
			buf tmp = BUF_INIT;
			uint64_t size = 0;
			if ((r = odb_size(&size, db, &c->old_id)) == 0)
				r = size >= ODB_STREAM_MIN
					    ? odb_read_to_fd(db, &c->old_id, -1,
							     NULL)
					    : odb_read(&tmp, NULL, db,
						       &c->old_id);
			buf_release(&tmp);
			if (r < 0) {
				char msg[900];
				snprintf(msg, sizeof(msg), "%s", error_last());
				return decree_error_set(
					r,
					"cannot keep a copy of '%s': %s; nothing was "
					"written",
					c->path, msg);
			}
		}
		meter_step(s, &m, c->has_old ? c->old_size : 0);
	}
	return 0;
}

/*
 * The history update the transaction ends with must be possible before
 * anything is written: the history file can be read, and an undo or redo
 * moves an intact entry that is on top of its stack.  (Damaged entries
 * elsewhere do not matter: they are kept as they are.)  The history read
 * is kept in p: write_history_ahead updates and writes it, without
 * reading and parsing the file a second time.
 */
static int check_history(plan *p, decree_store *s, const txn_spec *sp)
{
	char path[PATH_MAX];
	oplog l = OPLOG_INIT;
	const oplog_entry *top = NULL;
	int r;

	if (sp->history == TXN_HISTORY_NONE)
		return 0;
	repo_file(path, s, "oplog");
	if ((r = oplog_load_for_update(&l, path)) < 0)
		return r;
	if (sp->history == TXN_HISTORY_UNDO && l.nundo)
		top = &l.undo[l.nundo - 1];
	if (sp->history == TXN_HISTORY_REDO && l.nredo)
		top = &l.redo[l.nredo - 1];
	if (sp->history != TXN_HISTORY_PUSH &&
	    (!top || top->damaged || !sp->moved_id ||
	     strncmp(top->id, sp->moved_id, 16)))
		r = decree_error_set(DECREE_ECONFLICT,
				     "the history changed while decree was "
				     "running; nothing was written");
	if (r == 0) {
		p->hist = l; /* the update after COMMIT starts from it */
		p->has_hist = true;
	} else {
		oplog_release(&l);
	}
	return r;
}

/* The tree must still be in the state the caller captured. */
static int check_unchanged(decree_store *s, const plan *p)
{
	int r;

	for (size_t i = 0; i < p->nfiles; i++) {
		const txn_change *c = &p->files[i].c;
		bool same;
		if ((r = txn_path_matches(&same, s, c->path, c->has_old,
					  c->old_mode, &c->old_id)) < 0)
			return r;
		if (!same)
			return decree_error_set(
				DECREE_ECONFLICT,
				"'%s' changed while decree was running; nothing was written",
				c->path);
	}
	return 0;
}

/* IDLE -> LOGGED: BEGIN, one FILE/MKDIR/RMDIR record per step, synced. */
static int log_all(wal *w, const plan *p)
{
	buf rec = BUF_INIT;
	int r;

	if ((r = encode_begin(&rec, p)) < 0 ||
	    (r = wal_append(w, REC_BEGIN, rec.ptr, rec.len)) < 0)
		goto done;
	for (size_t i = 0; i < p->nfiles; i++) {
		buf_clear(&rec);
		if ((r = encode_file(&rec, &p->files[i])) < 0 ||
		    (r = wal_append(w, REC_FILE, rec.ptr, rec.len)) < 0)
			goto done;
	}
	for (size_t i = 0; i < p->nmk; i++) {
		buf_clear(&rec);
		if ((r = put_path(&rec, p->mkdirs[i])) < 0 ||
		    (r = wal_append(w, REC_MKDIR, rec.ptr, rec.len)) < 0)
			goto done;
	}
	for (size_t i = 0; i < p->nrm; i++) {
		buf_clear(&rec);
		if ((r = put_path(&rec, p->rmdirs[i])) < 0 ||
		    (r = wal_append(w, REC_RMDIR, rec.ptr, rec.len)) < 0)
			goto done;
	}
	r = wal_sync(w);
done:
	buf_release(&rec);
	return r;
}

/* LOGGED -> STAGED: temps next to the targets whose directories stay as
 * they are, made durable. */
static int stage_all(decree_store *s, plan *p, const txn_spec *sp)
{
	uint64_t bytes = 0;
	int r;

	durable_init(&p->dur, p);
	for (size_t i = 0; s->progress && i < p->nfiles; i++)
		bytes += p->files[i].c.has_new ? p->files[i].c.new_size : 0;
	meter_start(s, &p->meter, DECREE_PROGRESS_WRITE, p->nfiles, bytes);
	for (size_t i = 0; i < p->nfiles; i++) {
		fileop *f = &p->files[i];
		if (!f->c.has_new || !parent_ready(p, f->c.path))
			continue;
		if ((r = cancelled(sp)) < 0)
			return r;
		progress(sp, DECREE_PHASE_STAGING, f->c.path,
			 change_action(&f->c));
		if ((r = stage_one(s, f, &p->dur)) < 0)
			return r;
		meter_step(s, &p->meter, f->c.new_size);
	}
	return durable_flush(&p->dur, s);
}

/* STAGED -> APPLIED: unlink deleted files, remove emptied directories,
 * create new ones, stage the temps that needed them (durable before any
 * rename), rename every temp over its target; make the directories
 * durable; then re-hash every path. */
static int apply_all(decree_store *s, plan *p, const txn_spec *sp)
{
	size_t late = 0;
	int r;

	for (size_t i = 0; i < p->nfiles; i++) {
		fileop *f = &p->files[i];
		if (f->c.has_new)
			continue;
		if ((r = cancelled(sp)) < 0)
			return r;
		progress(sp, DECREE_PHASE_APPLYING, f->c.path, "delete");
		release_hold(&p->rel, s, f->c.path);
		if ((r = unlink_beneath(s, f->c.path, NULL, 0)) < 0 ||
		    (r = durable_entry(&p->dur, f->c.path)) < 0)
			return r;
		meter_step(s, &p->meter, 0);
	}
	for (size_t i = 0; i < p->nrm; i++)
		if ((r = unlink_beneath(s, p->rmdirs[i], NULL, AT_REMOVEDIR)) <
			    0 ||
		    (r = durable_entry(&p->dur, p->rmdirs[i])) < 0)
			return r;
	for (size_t i = 0; i < p->nmk; i++)
		if ((r = mkdir_beneath(s, p->mkdirs[i])) < 0 ||
		    (r = durable_entry(&p->dur, p->mkdirs[i])) < 0)
			return r;
	for (size_t i = 0; i < p->nfiles; i++) {
		fileop *f = &p->files[i];
		if (!f->c.has_new || f->staged)
			continue;
		if ((r = cancelled(sp)) < 0)
			return r;
		progress(sp, DECREE_PHASE_STAGING, f->c.path,
			 change_action(&f->c));
		if ((r = stage_one(s, f, &p->dur)) < 0)
			return r;
		meter_step(s, &p->meter, f->c.new_size);
		late++;
	}
	/* temps staged here (in directories made just now) are durable,
	 * with those directories, before a rename may reach the disk */
	if (late && (r = durable_flush(&p->dur, s)) < 0)
		return r;
	for (size_t i = 0; i < p->nfiles; i++) {
		fileop *f = &p->files[i];
		if (!f->c.has_new)
			continue;
		if ((r = cancelled(sp)) < 0)
			return r;
		progress(sp, DECREE_PHASE_APPLYING, f->c.path,
			 change_action(&f->c));
		if (f->c.has_old)
			release_hold(&p->rel, s, f->c.path);
		if ((r = rename_one(s, f)) < 0 ||
		    (r = durable_entry(&p->dur, f->c.path)) < 0)
			return r;
	}
	if ((r = durable_flush(&p->dur, s)) < 0 || (r = verify_new(s, p)) < 0)
		return r;
	/* after the directories' syncs, whose flushes the freeing would
	 * otherwise hold up */
	release_start(&p->rel);
	return cancelled(sp); /* the last chance before COMMIT */
}

/*
 * APPLIED -> COMMITTED: the COMMIT record, synced.  If that fails, the
 * record may still have reached the file (its write landed, its fsync did
 * not): it is cut off again before anything is rolled back, or a later
 * recovery would roll a half rolled-back tree "forward".  *undecided: the
 * cut failed too, and the log may say either.
 */
static int commit(bool *undecided, wal *w, const txn_spec *sp)
{
	size_t len = wal_synced_length(w);
	char msg[1024];
	int r;

	*undecided = false;
	progress(sp, DECREE_PHASE_COMMITTING, NULL, NULL);
	if ((r = wal_append(w, REC_COMMIT, "", 0)) == 0 &&
	    (r = wal_sync(w)) == 0)
		return 0;
	snprintf(msg, sizeof(msg), "%s", error_last());
	if (wal_truncate(w, len) < 0)
		*undecided = true;
	return decree_error_set(r, "%s", msg);
}

/*
 * A step before COMMIT failed with r: roll back, remove the log, and say
 * what is left.  If the rollback fails too, the log stays for recovery and
 * the handle refuses further work.
 */
static int abort_run(decree_store *s, plan *p, const txn_spec *sp,
		     const char *walpath, int r)
{
	char msg[1024], why[1024];
	size_t foreign;
	int rr;

	snprintf(msg, sizeof(msg), "%s", error_last());
	rr = rollback(s, p, sp, &foreign);
	if (rr < 0) {
		snprintf(why, sizeof(why), "%s", error_last());
		s->broken = true;
		return decree_error_set(DECREE_EUNFINISHED,
					"%s; rolling back failed too (%s)", msg,
					why);
	}
	/* Rolled back: a log left behind only makes the next command roll
	 * back again, which finds every path as it was. */
	why[0] = '\0';
	if (wal_remove(walpath) < 0) {
		snprintf(why, sizeof(why),
			 " (its log stays until the next decree command: %s)",
			 error_last());
		/* for the caller: something is left to finish */
		warning_set(DECREE_EUNFINISHED,
			    "the transaction log '%s' stays (%s); the next "
			    "decree command removes it",
			    walpath, error_last());
	}
	if (foreign)
		return decree_error_set(
			r,
			"%s; rolled back, except %zu path(s) changed meanwhile by "
			"someone else, left as they are%s",
			msg, foreign, why);
	return decree_error_set(r, "%s; nothing was changed%s", msg, why);
}

/* LOGGED log -> COMMITTED, each step's end timed (DECREE_TRACE_PERF);
 * *undecided as commit() says. */
static int run_steps(bool *undecided, decree_store *s, plan *p, wal *w,
		     const txn_spec *sp)
{
	int r;

	*undecided = false;
	if ((r = log_all(w, p)) < 0 || (r = write_history_ahead(s, p)) < 0)
		return r;
	trace_phase("txn: logged");
	if ((r = stage_all(s, p, sp)) < 0)
		return r;
	trace_phase("txn: staged");
	if ((r = apply_all(s, p, sp)) < 0)
		return r;
	trace_phase("txn: applied");
	if (sp->before_commit &&
	    (r = sp->before_commit(sp->before_commit_arg)) < 0)
		return r;
	trace_phase("txn: ready to commit");
	return commit(undecided, w, sp);
}

int txn_run(decree_store *s, const txn_spec *sp)
{
	char walpath[PATH_MAX];
	plan p;
	wal *w = NULL;
	odb *db;
	bool undecided = false;
	int r;

	memset(&p, 0, sizeof(p));
	if (sp->committed)
		*sp->committed = false;
	repo_file(walpath, s, "txn.wal");
	if ((r = repo_odb(&db, s, false)) < 0)
		return r;
	if ((r = init_plan(&p, sp)) < 0 ||
	    (r = check_contents(s, db, sp)) < 0 ||
	    (r = check_history(&p, s, sp)) < 0 ||
	    (r = make_plan(&p, s, sp)) < 0 ||
	    (r = check_unchanged(s, &p)) < 0 || (r = cancelled(sp)) < 0)
		goto done;
	trace_phase("txn: checked");
	if ((r = wal_create(&w, walpath)) < 0)
		goto done;
	if ((r = run_steps(&undecided, s, &p, w, sp)) < 0) {
		wal_close(w);
		w = NULL;
		if (undecided) {
			/* Every path is new, and the log may or may not say
			 * COMMIT: the next recovery decides, either way to a
			 * whole state. */
			char msg[1024];
			snprintf(msg, sizeof(msg), "%s", error_last());
			s->broken = true;
			r = decree_error_set(
				DECREE_EUNFINISHED,
				"%s; the change is made but may not be recorded as made: the next recovery keeps it or rolls it back",
				msg);
		} else {
			r = abort_run(s, &p, sp, walpath, r);
		}
		goto done;
	}
	wal_close(w);
	w = NULL;
	p.committed = true;
	if (sp->committed)
		*sp->committed = true;
	trace_phase("txn: committed");
	/* COMMITTED -> IDLE.  The change has happened: a failure from here
	 * on is a warning, and the log stays for the next recovery to finish
	 * the bookkeeping (DESIGN.md: the exit status tells the truth). */
	if (finish_committed(s, &p, walpath, true) < 0) {
		warning_set(DECREE_EUNFINISHED,
			    "the change was made, but recording it failed "
			    "(%s); the next decree command finishes that",
			    error_last());
		error_clear();
	}
	trace_phase("txn: history updated, log removed");
	r = 0;
	progress(sp, DECREE_PHASE_DONE, NULL, NULL);
done:
	wal_close(w);
	plan_release(&p, false);
	return r;
}

int txn_plan_check(decree_store *s, const txn_spec *sp)
{
	plan p;
	int r;

	memset(&p, 0, sizeof(p));
	r = make_plan(&p, s, sp);
	plan_release(&p, false);
	return r;
}

/* --- capture ---------------------------------------------------------------
 */

int txn_capture_old(txn_change *t, decree_store *s, odb_writer *w,
		    bool *present)
{
	snap_entry e;
	struct stat st;
	const char *base;
	int dfd, r;

	*present = false;
	memset(&e, 0, sizeof(e));
	r = fs_open_parent(&dfd, &base, s->rootfd, t->path, false);
	if (r == DECREE_ENOTFOUND || r == DECREE_EINVALID) {
		error_clear();
		return 0;
	}
	if (r < 0)
		return r;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		close(dfd);
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot stat '%s'", t->path);
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX + 1];
		ssize_t n = readlinkat(dfd, base, target, sizeof(target) - 1);
		close(dfd);
		if (n < 0)
			return decree_error_os("cannot read link '%s'",
					       t->path);
		e.mode = MODE_LINK;
		e.size = (uint64_t)n;
		if (w && (r = odb_writer_add(w, ODB_BLOB, target, (size_t)n,
					     NULL, &e.id)) < 0)
			return r;
		if (!w)
			sha256_buf(&e.id, target, (size_t)n);
	} else if (S_ISREG(st.st_mode)) {
		close(dfd);
		if (w) {
			if ((r = scan_capture_path(&e, s->rootfd, t->path, w)) <
			    0)
				return r;
		} else {
			e.mode = mode_of_file(st.st_mode);
			e.size = (uint64_t)st.st_size;
		}
	} else {
		close(dfd);
		return 0; /* a directory: the transaction planner decides */
	}
	t->has_old = true;
	t->old_mode = e.mode;
	t->old_size = e.size;
	t->old_id = e.id;
	*present = true;
	return 0;
}

/* --- recovery ----------------------------------------------------------- */

/* ".decree-tmp-<16 hex>-<n>" or "...-r": a temp file of a transaction
 * (make_plan names them, rollback adds "-r"). */
static bool is_txn_temp(const char *name)
{
	const char *p = name + 12;

	if (strncmp(name, ".decree-tmp-", 12))
		return false;
	for (int i = 0; i < 16; i++, p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	if (*p++ != '-' || *p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return !*p || !strcmp(p, "-r");
}

/*
 * Remove every transaction temp file below the root, wherever it is: a
 * damaged log may no longer name them all.  Under the tree lock no
 * transaction is running, so each one is a leftover (scans never show
 * them).  Directories are visited one at a time from the root (no symlink
 * followed, .git, the root's .decree and a store inside the tree
 * skipped); *removed counts.
 */
static int sweep_tree_temps(decree_store *s, size_t *removed)
{
	char **queue = NULL;
	size_t nq = 0, cap = 0;
	first_error fe = { 0, "" };
	int r = 0;

	*removed = 0;
	if (push_str(&queue, &nq, &cap, "") < 0)
		return -1;
	while (nq) {
		char *dir = queue[--nq];
		struct dirent *de;
		DIR *d;
		int fd;
		if ((r = fs_open_dir(&fd, s->rootfd, dir)) < 0 ||
		    !(d = fdopendir(fd))) {
			if (r == 0) {
				r = decree_error_os("cannot read '%s'", dir);
				close(fd);
			}
			if (r == DECREE_ENOTFOUND || r == DECREE_EINVALID)
				error_clear(); /* gone, or not a directory now
						*/
			else
				note_error(&fe, r);
			decree_free(dir);
			continue;
		}
		rewinddir(d); /* fd may be a dup of the root fd */
		while ((de = readdir(d)) != NULL) {
			struct stat st;
			char child[PATH_MAX];
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, "..") ||
			    !strcmp(de->d_name, ".git") ||
			    (!*dir && !strcmp(de->d_name, ".decree")))
				continue;
			if (snprintf(child, sizeof(child), "%s%s%s", dir,
				     *dir ? "/" : "",
				     de->d_name) >= (int)sizeof(child))
				continue;
			if (fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (is_txn_temp(de->d_name) && !S_ISDIR(st.st_mode)) {
				if ((fs_fault_hook &&
				     fs_fault_hook("unlink")) ||
				    (unlinkat(dirfd(d), de->d_name, 0) < 0 &&
				     errno != ENOENT))
					note_error(&fe,
						   decree_error_os(
							   "cannot remove '%s'",
							   child));
				else
					(*removed)++;
				continue;
			}
			if (S_ISDIR(st.st_mode) &&
			    !(s->store_rel && !strcmp(child, s->store_rel)) &&
			    push_str(&queue, &nq, &cap, child) < 0) {
				note_error(&fe, -1);
				break;
			}
		}
		closedir(d);
		decree_free(dir);
	}
	for (size_t i = 0; i < nq; i++)
		decree_free(queue[i]);
	decree_free(queue);
	if (fe.code)
		return decree_error_set(fe.code, "%s", fe.msg);
	return 0;
}

/*
 * The root's store files (history, stat cache, checkpoint records and
 * their cache) are written under the lock we hold: a temp file of one is
 * what a killed writer left, and recovery leaves none behind.  (A reader
 * that saves a cache without the lock and loses its temp here only loses
 * the cache.)  The root's directory is small and a lockless reader may
 * leave a cache's temp there, so it is always swept; the records'
 * directory grows with every checkpoint and only lock holders write
 * there, so it is read only when the last owner died holding the lock
 * (`all`: decree recover, which sweeps everything).
 */
static int sweep_root_temps(decree_store *s, bool all)
{
	char dir[PATH_MAX];
	int r = repo_sweep_temps(s->rootdir);

	if (!all && !s->lock.unclean)
		return r;
	repo_file(dir, s, "checkpoints");
	if (repo_sweep_temps(dir) < 0 && r == 0)
		r = -1;
	return r;
}

/*
 * What is wrong with a log whose plan cannot be read whole, for messages:
 * "its header is unreadable" or "<k> of the <n> records of its plan are
 * unreadable".
 */
static void damage_of(char *out, size_t len, const wal_contents *c,
		      size_t intact)
{
	if (!c->header_ok)
		snprintf(out, len, "its header is unreadable");
	else
		snprintf(out, len,
			 "%zu of the %u records of its plan are unreadable",
			 c->nplan > intact ? c->nplan - intact : (size_t)1,
			 c->nplan);
}

/* Plan records (seq < nplan) that decoded: the plan minus what is lost. */
static size_t plan_records_read(const wal_contents *c, size_t bad)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		n += !c->header_ok || c->recs[i].seq < c->nplan;
	return n > bad ? n - bad : 0;
}

/*
 * Finish (committed) or roll back (not committed) an interrupted
 * transaction; the caller holds the lock.
 *
 * The log is at its path only if its plan was complete and durable
 * (wal.h), so a plan that cannot be read whole is damage: the tree may be
 * partly changed, at paths the lost records named.  Then:
 *  - if a COMMIT record is readable, every rename had happened: only the
 *    bookkeeping is left, done from what is readable (the history update
 *    needs the BEGIN record; without it the change stays unrecorded, and
 *    a warning says so);
 *  - otherwise nothing is done and the log stays (DECREE_ELOGDAMAGED),
 *    unless the caller decided to roll back what the readable records
 *    name (TXN_ROLLBACK_DAMAGED): that, then every transaction temp file
 *    in the tree is removed, and a warning says how much was lost.
 */
static int unfinished_if_logged(decree_store *s, int r);

static int txn_recover(bool *recovered, size_t *left_alone, decree_store *s,
		       unsigned flags)
{
	char walpath[PATH_MAX], what[160];
	buf data = BUF_INIT;
	wal_contents c;
	size_t bad = 0, foreign = 0, swept = 0;
	bool has_begin = false, present = false;
	plan p;
	int r;

	*recovered = false;
	*left_alone = 0;
	memset(&p, 0, sizeof(p));
	memset(&c, 0, sizeof(c));
	repo_file(walpath, s, "txn.wal");
	/* a log that never reached its path: nothing was touched */
	if (wal_remove_temps(walpath) < 0)
		error_clear(); /* only store space; gc removes it */
	/* A temp left behind costs only space, and the next sweep tries it
	 * again; but a log to finish comes with the history written ahead
	 * for it (write_history_ahead), and a recovery that succeeds leaves
	 * no temp: one it cannot remove fails it, with the log kept. */
	if (sweep_root_temps(s, flags & TXN_SWEEP_ALL) < 0) {
		struct stat st;
		if (lstat(walpath, &st) == 0)
			return unfinished_if_logged(s, DECREE_ERROR);
		error_clear();
	}
	/* an unfinished prune or drop (no transaction log goes with it) */
	if ((r = record_drop_finish(recovered, s)) < 0) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		return decree_error_set(DECREE_EUNFINISHED,
					"cannot finish removing checkpoints "
					"(%s); it stays for the next attempt",
					msg);
	}
	r = wal_load(&data, &c, walpath);
	if (r == DECREE_ENOTFOUND) {
		error_clear();
		r = 0;
		goto done;
	}
	if (r < 0)
		goto done;
	present = true;
	if ((r = repo_need_root(s)) < 0) /* its tree is elsewhere */
		goto done;
	if (c.other_version) {
		r = decree_error_set(
			DECREE_ECORRUPT,
			"transaction log '%s' has version %u, which this decree "
			"cannot read; nothing was done",
			walpath, c.other_version);
		goto done;
	}
	if ((r = decode_log(&p, &bad, &has_begin, &c)) < 0)
		goto done;
	if (!has_begin)
		p.history = TXN_HISTORY_NONE;
	*recovered = true;
	if (p.committed) {
		if ((r = finish_committed(s, &p, walpath, false)) == 0 &&
		    (!c.plan_complete || bad) && !has_begin)
			warning_set(0,
				    "the transaction log '%s' was damaged: its "
				    "change was made, but it could not be "
				    "recorded for undo",
				    walpath);
		goto done;
	}
	if (c.plan_complete && !bad && has_begin) {
		if ((r = rollback(s, &p, NULL, &foreign)) == 0)
			r = remove_log(walpath);
		*left_alone = foreign;
		goto done;
	}
	damage_of(what, sizeof(what), &c, plan_records_read(&c, bad));
	if (!(flags & TXN_ROLLBACK_DAMAGED)) {
		*recovered = false;
		r = decree_error_set(
			DECREE_ELOGDAMAGED,
			"the transaction log '%s' is damaged (%s): the change it "
			"records may be partly made, at paths it no longer "
			"names; nothing was done",
			walpath, what);
		goto done;
	}
	if ((r = rollback(s, &p, NULL, &foreign)) < 0 ||
	    (r = sweep_tree_temps(s, &swept)) < 0 ||
	    (r = remove_log(walpath)) < 0)
		goto done;
	*left_alone = foreign;
	warning_set(0,
		    "rolled back the %zu path(s) the damaged transaction log "
		    "still named (%s: paths only those named are left as they "
		    "are)",
		    p.nfiles, what);
done:
	/* A recovery that failed half-way (an I/O error, say) leaves its log
	 * for the next attempt, which starts over: say so with the code. */
	if (r < 0 && present && r != DECREE_ELOGDAMAGED &&
	    r != DECREE_ELOCKED && !c.other_version) {
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", error_last());
		r = decree_error_set(
			DECREE_EUNFINISHED,
			"cannot finish the interrupted transaction "
			"(%s); its log stays for the next attempt",
			msg);
	}
	plan_release(&p, true);
	wal_contents_release(&c);
	buf_release(&data);
	return r;
}

/* A failure before recovery could start (the lock, the store) while an
 * interrupted transaction's log waits: that log is still to be finished,
 * and the caller is told so by the code (a busy lock stays itself). */
static int unfinished_if_logged(decree_store *s, int r)
{
	char walpath[PATH_MAX], msg[1024];
	struct stat st;

	repo_file(walpath, s, "txn.wal");
	if (r == DECREE_ELOCKED || s->broken || lstat(walpath, &st) < 0)
		return r; /* busy, or a handle to reopen, or no log */
	snprintf(msg, sizeof(msg), "%s", error_last());
	return decree_error_set(DECREE_EUNFINISHED,
				"%s; an interrupted transaction waits to be "
				"finished",
				msg);
}

int txn_lock_recover(bool *recovered, size_t *left_alone, decree_store *s,
		     unsigned flags)
{
	bool rec = false;
	size_t left = 0;
	odb *db;
	int r;

	if (recovered)
		*recovered = false;
	if (left_alone)
		*left_alone = 0;
	if ((r = repo_lock_flags(s, flags & TXN_NO_ATTACH ? REPO_LOCK_NO_ATTACH
							  : 0)) < 0)
		return unfinished_if_logged(s, r);
	if (s->lock.depth > 1)
		return 0; /* the outer lock did this */
	/* Another process may have added packs since we looked. */
	if ((r = repo_odb(&db, s, true)) < 0) {
		r = unfinished_if_logged(s, r);
	} else {
		/* what a killed pack writer left (it held this lock) */
		if (s->lock.unclean || (flags & TXN_SWEEP_ALL))
			odb_sweep_temps(db);
		r = txn_recover(&rec, &left, s, flags);
	}
	if (r < 0) {
		/* a damaged store or log: refuse work until reopened (a
		 * damaged log is read again by every call instead, so that
		 * the rollback the user decides on can run) */
		if (r != DECREE_ELOCKED)
			s->broken = r == DECREE_ECORRUPT || s->broken;
		repo_unlock(s);
		return r;
	}
	if (recovered)
		*recovered = rec;
	if (left_alone)
		*left_alone = left;
	return 0;
}

int txn_lock(bool *recovered, size_t *left_alone, decree_store *s)
{
	return txn_lock_recover(recovered, left_alone, s, 0);
}

int txn_log_objects(bool *present, const char *path,
		    int (*fn)(void *payload, const oid *id), void *payload)
{
	buf data = BUF_INIT;
	wal_contents c;
	plan p;
	size_t bad = 0;
	bool has_begin = false;
	int r;

	*present = false;
	memset(&c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
	if ((r = wal_load(&data, &c, path)) < 0) {
		if (r == DECREE_ENOTFOUND) {
			error_clear();
			r = 0;
		}
		goto done;
	}
	*present = true;
	if (c.other_version) {
		r = decree_error_set(DECREE_ECORRUPT,
				     "transaction log '%s' has version %u, "
				     "which this decree cannot read",
				     path, c.other_version);
		goto done;
	}
	for (size_t i = 0; r == 0 && i < c.nrecs; i++) {
		txn_change ch;
		if (c.recs[i].type != REC_FILE ||
		    decode_file_sides(&ch, &c.recs[i]))
			continue;
		if (ch.has_old)
			r = fn(payload, &ch.old_id);
		if (r == 0 && ch.has_new)
			r = fn(payload, &ch.new_id);
	}
	if (r < 0)
		goto done;
	if ((r = decode_log(&p, &bad, &has_begin, &c)) < 0)
		goto done;
	if (!p.committed && (!c.plan_complete || bad || !has_begin)) {
		char what[160];
		damage_of(what, sizeof(what), &c, plan_records_read(&c, bad));
		r = decree_error_set(DECREE_ELOGDAMAGED,
				     "the transaction log '%s' is damaged (%s)",
				     path, what);
	}
done:
	plan_release(&p, true);
	wal_contents_release(&c);
	buf_release(&data);
	return r;
}
