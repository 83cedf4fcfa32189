/*
 * checkpoint.c - create, list, resolve, show, compare, prune, drop and
 * delete checkpoints (decree/checkpoint.h).
 *
 * A checkpoint = stored objects (blobs + trees) + one record.  The record
 * is written last, atomically, after the pack holding every object it
 * needs is durable; so a crash leaves either no checkpoint or a complete
 * one (an orphan pack at worst, removed by gc).
 *
 * One checkpoint per (session, message): creating it again returns the
 * existing id, which makes "checkpoint before each user message" safe to
 * retry; with if_changed, a tree equal to the session's latest returns
 * that one too.
 *
 * A checkpoint made with scan rules of its own (excludes, a size limit)
 * keeps them in its record, and everything here that compares it with
 * the working tree scans with them (worktree_scan_view): what they left
 * out is never reported, nor deleted by a restore (restore.c does the
 * same).  The change counts against the session's previous checkpoint
 * are computed once, when the record is written, so listing reads no
 * blob.
 */
#include "util/common.h"
#include "ops/checkpoint.h"
#include "ops/diff.h"
#include "journal/journal.h"
#include "store/record.h"
#include "scan/worktree.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/repo.h"
#include "scan/scan.h"
#include "scan/statcache.h"
#include "store/tree.h"
#include "txn/txn.h"
#include "diff/unidiff.h"
#include "diff/xdiff.h"
#include "util/trace.h"
#include "util/size.h"

#include <pthread.h>

/* Merge packs under 8 MiB once there are more than 16 (one per checkpoint
 * otherwise; each costs an open and a lookup). */
#define REPACK_MAX_PACKS   16
#define REPACK_SMALL_BYTES (8u << 20)

/* --- scanning and writing ---------------------------------------------------
 */

int checkpoint_read_path(buf *out, int rootfd, const char *path, uint32_t mode)
{
	struct stat st;
	int fd, r;

	buf_clear(out);
	if (mode == MODE_LINK) {
		const char *base;
		char target[PATH_MAX + 1];
		ssize_t n;
		int dfd;
		if ((r = fs_open_parent(&dfd, &base, rootfd, path, false)) <
		    0) {
			if (r == DECREE_ENOTFOUND || r == DECREE_EINVALID) {
				error_clear();
				return DECREE_ENOTFOUND;
			}
			return r;
		}
		n = readlinkat(dfd, base, target, sizeof(target) - 1);
		close(dfd);
		if (n < 0)
			return errno == ENOENT || errno == EINVAL
				       ? DECREE_ENOTFOUND
				       : decree_error_os(
						 "cannot read link '%s'", path);
		return buf_put(out, target, (size_t)n);
	}
	fd = fs_open_beneath(rootfd, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
			       ? DECREE_ENOTFOUND
			       : decree_error_os("cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		r = decree_error_os("cannot stat '%s'", path);
	} else if (!S_ISREG(st.st_mode)) {
		r = DECREE_ENOTFOUND;
	} else {
		r = fs_read_fd(fd, out, path);
	}
	close(fd);
	return r;
}

/*
 * The stat cache vouched for the ids of the entries marked `cached`, so
 * their bytes were not read and the writer never saw them.  When the
 * store is not known intact (odb_all_trusted), each such id must have an
 * intact copy; one that has not (its copy is damaged or gone) is stored
 * again from the tree, or the checkpoint would name bytes it cannot give
 * back.
 */
static int store_uncached(decree_store *s, odb_writer *w, snap *cur)
{
	buf data = BUF_INIT;
	odb *db;
	int r;

	if ((r = repo_odb(&db, s, false)) < 0)
		return r;
	if (odb_all_trusted(db))
		return 0;
	for (size_t i = 0; i < cur->n; i++) {
		snap_entry *e = &cur->v[i];
		char hex[SHA256_HEXLEN + 1];
		oid now;
		if (!e->cached || !snap_entry_is_stored(e))
			continue;
		if ((r = odb_check(db, &e->id)) < 0)
			goto done;
		if (r > 0)
			continue;
		if (mode_is_file(e->mode) && e->size >= ODB_STREAM_MIN) {
			/* a big file: streamed (scan_capture_path), never
			 * read whole */
			snap_entry got;
			memset(&got, 0, sizeof(got));
			r = scan_capture_path(&got, s->rootfd, e->path, w);
			if (r == 0 && oid_cmp(&got.id, &e->id)) {
				e->id = got.id;
				e->size = got.size;
				e->cached = 0;
			}
			if (r == 0)
				continue;
			if (r != DECREE_ENOTFOUND)
				goto done;
			error_clear();
			oid_to_hex(hex, &e->id);
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s ('%s') is damaged or missing, and "
				"'%s' vanished before it could be stored again",
				hex, e->path, e->path);
			goto done;
		}
		r = checkpoint_read_path(&data, s->rootfd, e->path, e->mode);
		if (r == DECREE_ENOTFOUND) {
			oid_to_hex(hex, &e->id);
			r = decree_error_set(
				DECREE_ECORRUPT,
				"object %s ('%s') is damaged or missing, and "
				"'%s' vanished before it could be stored again",
				hex, e->path, e->path);
		}
		if (r < 0)
			goto done;
		sha256_buf(&now, data.ptr, data.len);
		if (oid_cmp(&now, &e->id)) { /* changed meanwhile: take it */
			e->id = now;
			e->size = data.len;
			e->cached = 0;
		}
		if ((r = odb_writer_add(w, ODB_BLOB, data.ptr, data.len, &now,
					NULL)) < 0)
			goto done;
	}
	r = 0;
done:
	buf_release(&data);
	return r;
}

/* --- what changed since the session's previous checkpoint ------------------
 * Counted once, when a checkpoint is made, and kept in its record: a
 * listing never reads a blob.  Lines come from the same line diff as
 * `checkpoint diff` (xdiff); a binary file (a NUL byte), a file too big
 * to diff or a skipped one counts as changed with 0 lines, as does a
 * change of mode alone.
 */

typedef struct {
	const snap_entry *a, *b;
} count_item;

typedef struct {
	odb *db;
	count_item *items;
	size_t n, cap;
	pthread_mutex_t mu; /* guards next, the sums and failed */
	size_t next;
	int64_t ins, del;
	bool failed;
} change_count;

/* Bytes to compare that make a counting thread worth starting. */
#define COUNT_THREAD_BYTES (256u << 10)

/* Lines of a buffer: '\n's, and a last line without one. */
static int64_t line_count(const buf *t)
{
	int64_t n = 0;
	for (const char *p = t->ptr, *end = t->ptr + t->len;
	     (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
		n++;
	return n + (t->len && t->ptr[t->len - 1] != '\n');
}

typedef struct {
	int64_t ins, del;
} line_sums;

static int add_edit(const xdiff_edit *e, void *payload)
{
	line_sums *l = payload;
	l->del += (int64_t)e->old_count;
	l->ins += (int64_t)e->new_count;
	return 0;
}

/* Are a changed path's bytes read to count its lines (not skipped, not
 * too big to diff, not a mode change)? */
static bool read_to_count(const count_item *it)
{
	return !((it->a && !diff_entry_readable(it->a)) ||
		 (it->b && !diff_entry_readable(it->b)) ||
		 (it->a && it->b && !oid_cmp(&it->a->id, &it->b->id)));
}

/* The lines one changed path adds and removes (into *l). */
static int count_item_lines(line_sums *l, odb *db, const count_item *it, buf *a,
			    buf *b)
{
	if (!read_to_count(it))
		return 0;
	buf_clear(a);
	buf_clear(b);
	if ((it->a && odb_read(a, NULL, db, &it->a->id) < 0) ||
	    (it->b && odb_read(b, NULL, db, &it->b->id) < 0))
		return -1;
	if (unidiff_is_binary(a->ptr, a->len) ||
	    unidiff_is_binary(b->ptr, b->len))
		return 0;
	if (!it->a || !it->b) {
		*(it->a ? &l->del : &l->ins) += line_count(it->a ? a : b);
		return 0;
	}
	return xdiff_diff(a->ptr, a->len, b->ptr, b->len, NULL, add_edit, l);
}

/* Runs on several threads: only the store's reads are shared (they are
 * thread-safe); errors stay in each thread's own slot. */
static void *count_worker(void *arg)
{
	change_count *c = arg;
	line_sums l = { 0, 0 };
	buf a = BUF_INIT, b = BUF_INIT;
	bool failed = false;

	for (;;) {
		const count_item *it;
		pthread_mutex_lock(&c->mu);
		it = !c->failed && c->next < c->n ? &c->items[c->next++] : NULL;
		pthread_mutex_unlock(&c->mu);
		if (!it)
			break;
		if (count_item_lines(&l, c->db, it, &a, &b) < 0) {
			failed = true;
			error_clear();
			break;
		}
	}
	pthread_mutex_lock(&c->mu);
	c->ins += l.ins;
	c->del += l.del;
	c->failed |= failed;
	pthread_mutex_unlock(&c->mu);
	buf_release(&a);
	buf_release(&b);
	return NULL;
}

static int collect_change(void *payload, const char *path, const snap_entry *a,
			  const snap_entry *b)
{
	change_count *c = payload;

	(void)path;
	if (GROW(c->items, c->cap, c->n + 1) < 0)
		return -1;
	c->items[c->n].a = a;
	c->items[c->n++].b = b;
	return 0;
}

/* Fill m's counts: `cur` (tree `root`, every object stored; the ids of
 * its directories in `ids`) against the newest checkpoint of m->session,
 * else the root's newest checkpoint; the root's first checkpoint counts
 * its files and leaves the lines unknown.  Only counts: a failure leaves
 * them unknown (-1) and clears the error.  Of the previous tree only the
 * directories that differ are read.  Changed blobs are read on one thread
 * per CPU (s->threads). */
static void count_changes(record_meta *m, decree_store *s, const snap *cur,
			  const oid *root, const tree_ids *ids)
{
	const char *session = m->session ? m->session : RECORD_DEFAULT_SESSION;
	change_count c;
	snap prev = SNAP_INIT; /* what differs of the previous tree */
	record *loaded = NULL;
	const record *v = m->known;
	size_t n = m->nknown, last = SIZE_MAX;
	pthread_t tids[16];
	unsigned nt, started = 0;
	uint64_t bytes = 0;
	long ncpu;
	oid prev_tree;
	int r = 0;

	memset(&c, 0, sizeof(c));
	m->files_changed = m->insertions = m->deletions = -1;
	if (!m->known_loaded) {
		if ((r = record_load_all(&loaded, &n, s)) < 0)
			goto done;
		v = loaded;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].session, session))
			last = i;
	/* a session's first checkpoint: against the root's newest one (a new
	 * agent session starts where the last one left the tree) */
	if (last == SIZE_MAX && n)
		last = n - 1;
	if (last != SIZE_MAX)
		prev_tree = v[last].tree;
	if (loaded)
		record_free_all(loaded, n);
	if (last == SIZE_MAX) {
		/* the root's first checkpoint: every file is new; their lines
		 * would mean reading the whole tree a second time, so they
		 * stay unknown */
		m->files_changed = (int64_t)cur->n;
		goto done;
	}
	if (!oid_cmp(&prev_tree, root)) {
		m->files_changed = m->insertions = m->deletions = 0;
		goto done;
	}
	if ((r = repo_odb(&c.db, s, false)) < 0 ||
	    (r = tree_diff_like(&prev, c.db, &prev_tree, cur, ids,
				collect_change, &c)) < 0)
		goto done;
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nt = s->threads ? s->threads : ncpu > 0 ? (unsigned)ncpu : 1;
	if (nt > ARRAY_SIZE(tids) + 1)
		nt = ARRAY_SIZE(tids) + 1;
	pthread_mutex_init(&c.mu, NULL);
	/* the blobs to read, in flight together when they are not in memory
	 * (the old ones often are not: a checkpoint made a while ago) */
	for (size_t i = 0; i < c.n; i++) {
		const count_item *it = &c.items[i];
		if (!read_to_count(it))
			continue;
		if (it->a)
			odb_prefetch(c.db, &it->a->id);
		if (it->b)
			odb_prefetch(c.db, &it->b->id);
	}
	/* a thread is worth its start only with some files to read: 32 of
	 * them, or 256 KiB to diff (a few big files) */
	for (size_t i = 0; i < c.n; i++)
		bytes += (c.items[i].a ? c.items[i].a->size : 0) +
			 (c.items[i].b ? c.items[i].b->size : 0);
	while (started + 1 < nt && started + 1 < c.n &&
	       ((started + 1) * 32 < c.n ||
		bytes / (started + 1) >= COUNT_THREAD_BYTES) &&
	       pthread_create(&tids[started], NULL, count_worker, &c) == 0)
		started++;
	count_worker(&c); /* this thread works too */
	for (unsigned t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	pthread_mutex_destroy(&c.mu);
	if (!c.failed) {
		m->files_changed = (int64_t)c.n;
		m->insertions = c.ins;
		m->deletions = c.del;
	}
done:
	if (r < 0)
		error_clear(); /* unknown counts; the checkpoint is fine */
	decree_free(c.items);
	snap_release(&prev);
}

void checkpoint_repack_small(decree_store *s)
{
	odb *db;

	if (repo_odb(&db, s, false) < 0 ||
	    odb_repack_small(db, REPACK_MAX_PACKS, REPACK_SMALL_BYTES) < 0)
		error_clear();
}

/* checkpoint_write_meta once the trees of `cur` are in w: `root` and
 * `ids` from tree_write_ids. */
static int write_built(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		       odb_writer *w, const snap *cur, record_meta *m,
		       const oid *root, const tree_ids *ids)
{
	int r;

	if ((r = odb_writer_commit(w)) < 0)
		return r;
	trace_phase("write: objects committed");
	count_changes(m, s, cur, root, ids);
	trace_phase("write: changes counted");
	return record_save(id_out, s, root, cur, m);
}

/* The trees the stat cache of the scan that made cur vouches for, or
 * NULL: none, or a store not known intact (with a pack not known intact,
 * a tree the cache names might not be readable below it). */
static const tree_ids *checkpoint_hints(odb *db, const statcache *cache)
{
	return cache && odb_all_trusted(db) ? statcache_tree_hints(cache)
					    : NULL;
}

/* Store the trees of cur in w, after the files the stat cache vouched
 * for whose stored copy is not intact (store_uncached).  The trees that
 * `cache` (the scan's, may be NULL) vouches for are taken as they are,
 * and it gets the ids built, for its next save (statcache_trees_built). */
static int build_trees(oid *root, tree_ids *ids, decree_store *s, odb_writer *w,
		       snap *cur, statcache *cache)
{
	const tree_ids *known = NULL;
	odb *db;
	int r;

	if (cache) {
		if ((r = repo_odb(&db, s, false)) < 0)
			return r;
		known = checkpoint_hints(db, cache);
	}
	if ((r = store_uncached(s, w, cur)) < 0 ||
	    (r = tree_write_known(root, w, cur, ids, known)) < 0)
		return r;
	trace_phase("write: trees built");
	if (cache)
		statcache_trees_built(cache, ids);
	return 0;
}

int checkpoint_write_meta(char id_out[DECREE_ID_HEXLEN + 1], oid *tree_out,
			  decree_store *s, odb_writer *w, snap *cur,
			  record_meta *m, statcache *cache)
{
	tree_ids ids = TREE_IDS_INIT;
	oid root;
	int r;

	if ((r = build_trees(&root, &ids, s, w, cur, cache)) < 0)
		goto done;
	if ((r = write_built(id_out, s, w, cur, m, &root, &ids)) == 0 &&
	    tree_out)
		*tree_out = root;
done:
	tree_ids_release(&ids);
	return r;
}

static void *pending_main(void *arg)
{
	checkpoint_pending *p = arg;

	count_changes(p->m, p->s, p->cur, &p->root, &p->ids);
	if ((p->r = record_save(p->id, p->s, &p->root, p->cur, p->m)) < 0) {
		snprintf(p->msg, sizeof(p->msg), "%s", error_last());
		error_clear(); /* (this thread's) */
	}
	return NULL;
}

int checkpoint_write_begin(checkpoint_pending *p, decree_store *s,
			   odb_writer *w, snap *cur, record_meta *m,
			   statcache *cache)
{
	int r;

	memset(p, 0, sizeof(*p));
	p->s = s;
	p->cur = cur;
	p->m = m;
	if ((r = build_trees(&p->root, &p->ids, s, w, cur, cache)) < 0 ||
	    (r = odb_writer_commit(w)) < 0) {
		tree_ids_release(&p->ids);
		return r;
	}
	trace_phase("write: objects committed");
	p->pending = true;
	p->running = pthread_create(&p->thread, NULL, pending_main, p) == 0;
	if (!p->running)
		pending_main(p);
	return 0;
}

int checkpoint_write_end(checkpoint_pending *p,
			 char id_out[DECREE_ID_HEXLEN + 1])
{
	if (!p->pending)
		return decree_error_set(DECREE_EINVALID,
					"no checkpoint is being written");
	if (p->running)
		pthread_join(p->thread, NULL);
	p->running = p->pending = false;
	tree_ids_release(&p->ids);
	if (p->r < 0)
		return decree_error_set(p->r, "%s", p->msg);
	memcpy(id_out, p->id, sizeof(p->id));
	return 0;
}

int checkpoint_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		     odb_writer *w, snap *cur, const char *session,
		     const char *message, const char *label)
{
	record_meta m = RECORD_META_INIT;

	m.session = session;
	m.message = message;
	m.label = label;
	return checkpoint_write_meta(id_out, NULL, s, w, cur, &m, NULL);
}

/* --- notices ----------------------------------------------------------------
 * What a create did that the user would not expect (decree/checkpoint.h):
 * a tree the ignore rules nearly emptied, files too large to store, an
 * existing checkpoint returned for its message.  Only information: one
 * that cannot be kept (out of memory) is dropped, never failing the call.
 */

/* A checkpoint "nearly empty" because of the ignore rules: at least
 * IGNORED_MIN entries excluded, 90% of those seen, at most FEW_FILES
 * kept.  (A directory counts once: node_modules/ of a project with a
 * dozen files is one entry, no notice.) */
#define IGNORED_MIN 10
#define FEW_FILES   100

static void add_notice(decree_store *s, const decree_notice *n)
{
	if (repo_notice_add(s, n) < 0)
		error_clear();
}

/* The rule that excluded most, as a phrase: "'*' in .gitignore". */
static void rule_phrase(buf *b, const repo_scan_info *st)
{
	buf q = BUF_INIT;

	buf_printf(&q, "'%s'", st->rule);
	if (!strcmp(st->rule_source, "built-in"))
		buf_printf(b, "the built-in default %s", q.ptr);
	else if (!strcmp(st->rule_source, "exclude"))
		buf_printf(b, "the exclude pattern %s", q.ptr);
	else
		buf_printf(b, "%s in %s", q.ptr, st->rule_source);
	buf_release(&q);
}

/* The notices of the scan `cur` of checkpoint `id` (made or returned),
 * scanned with size limit `limit`. */
static void scan_notices(decree_store *s, const snap *cur, uint64_t limit,
			 const char *id)
{
	const repo_scan_info *st = &s->last_scan;
	const snap_entry *big = NULL;
	uint64_t nbig = 0, seen = st->ignored + cur->n;
	char a[SIZE_TEXT_MAX], b[SIZE_TEXT_MAX];
	decree_notice n;
	buf msg = BUF_INIT;

	if (st->ignored >= IGNORED_MIN && st->ignored * 10 >= seen * 9 &&
	    cur->n <= FEW_FILES) {
		memset(&n, 0, sizeof(n));
		n.kind = DECREE_NOTICE_MOSTLY_IGNORED;
		n.count = st->ignored;
		n.files = cur->n;
		snprintf(n.checkpoint, sizeof(n.checkpoint), "%s", id);
		buf_printf(&msg,
			   "ignore rules excluded %" PRIu64 " of the %" PRIu64
			   " entries the scan saw (a directory counts once)",
			   st->ignored, seen);
		if (st->rule_count) {
			n.rule_source = st->rule_source;
			n.rule = st->rule;
			n.rule_count = st->rule_count;
			buf_printf(&msg, ", %" PRIu64 " of them by ",
				   st->rule_count);
			rule_phrase(&msg, st);
		}
		buf_printf(&msg, "; the checkpoint has %zu file%s", cur->n,
			   cur->n == 1 ? "" : "s");
		n.message = msg.ptr;
		add_notice(s, &n);
	}
	for (size_t i = 0; i < cur->n; i++) {
		const snap_entry *e = &cur->v[i];
		if (e->mode != MODE_SKIP)
			continue;
		nbig++;
		if (!big || e->size > big->size)
			big = e;
	}
	if (nbig) {
		memset(&n, 0, sizeof(n));
		n.kind = DECREE_NOTICE_TOO_LARGE;
		n.count = nbig;
		n.path = big->path;
		n.size = big->size;
		n.limit = limit;
		snprintf(n.checkpoint, sizeof(n.checkpoint), "%s", id);
		buf_clear(&msg);
		buf_printf(&msg,
			   "%" PRIu64 " file%s above the size limit of %s %s "
			   "not stored, only %s path and size (the largest: "
			   "'%s', %s)",
			   nbig, nbig == 1 ? "" : "s", size_format(a, limit),
			   nbig == 1 ? "was" : "were",
			   nbig == 1 ? "its" : "their", big->path,
			   size_format(b, big->size));
		n.message = msg.ptr;
		add_notice(s, &n);
	}
	buf_release(&msg);
}

/* create --message M found M's checkpoint: returned unchanged. */
static void existing_notice(decree_store *s, const record *rec)
{
	decree_notice n;
	buf msg = BUF_INIT;

	memset(&n, 0, sizeof(n));
	n.kind = DECREE_NOTICE_EXISTING;
	memcpy(n.checkpoint, rec->info.id, sizeof(n.checkpoint));
	memcpy(n.created_at, rec->info.created_at, sizeof(n.created_at));
	n.session = rec->session;
	n.msg = rec->message;
	buf_printf(&msg,
		   "checkpoint '%s:%s' already exists (made %s); returned it "
		   "unchanged",
		   rec->session, rec->message, rec->info.created_at);
	n.message = msg.ptr;
	add_notice(s, &n);
	buf_release(&msg);
}

size_t decree_notice_count(const decree_store *s)
{
	return s ? s->nnotices : 0;
}

const decree_notice *decree_notice_at(const decree_store *s, size_t i)
{
	return s && i < s->nnotices ? &s->notices[i].pub : NULL;
}

/* --- public API -------------------------------------------------------------
 */

/* The result for an existing checkpoint. */
static void found(decree_checkpoint_created *out, const record *rec)
{
	memcpy(out->id, rec->info.id, sizeof(out->id));
	memcpy(out->tree, rec->info.tree, sizeof(out->tree));
	out->created = false;
	out->files_changed = rec->info.files_changed;
	out->insertions = rec->info.insertions;
	out->deletions = rec->info.deletions;
}

int decree_checkpoint_create_ext(decree_checkpoint_created *out,
				 decree_store *s,
				 const decree_checkpoint_create_options *o)
{
	decree_checkpoint_create_options def =
		DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
	record_meta m = RECORD_META_INIT;
	worktree_view view = { 0 };
	bool if_changed = false;
	odb_writer *w = NULL;
	snap cur = SNAP_INIT;
	statcache *cache = NULL;
	record *v = NULL;
	size_t n = 0, latest = SIZE_MAX;
	uint64_t limit;
	tree_ids ids = TREE_IDS_INIT;
	worktree_saver saver = WORKTREE_SAVER_INIT;
	odb *db;
	oid root;
	int r;

	DECREE_ASSERT_ARG(out);
	DECREE_ASSERT_ARG(s);
	memset(out, 0, sizeof(*out));
	out->files_changed = out->insertions = out->deletions = -1;
	repo_notices_clear(s);
	if (!o)
		o = &def;
	if (o->version < 1 ||
	    o->version > DECREE_CHECKPOINT_CREATE_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid checkpoint options");
	if (o->version >= 2) { /* a version 1 struct ends before these */
		if_changed = o->if_changed;
		view.excludes = o->excludes;
		view.max_file_size = o->max_file_size;
	}
	m.session = o->session && *o->session ? o->session
					      : RECORD_DEFAULT_SESSION;
	m.message = o->message;
	m.label = o->label;
	m.excludes = view.excludes;
	m.max_file_size = view.max_file_size;
	if (strchr(m.session, ':') || strchr(m.session, '\n'))
		return decree_error_set(
			DECREE_EINVALID,
			"session name '%s' must not contain ':' or newlines",
			m.session);
	if ((r = record_check_patterns(view.excludes)) < 0)
		return r;
	trace_phase("create: start");
	if ((r = txn_lock(NULL, NULL, s)) < 0)
		return r;
	trace_phase("create: locked");
	if (o->message || if_changed) {
		if ((r = record_load_all(&v, &n, s)) < 0)
			goto done;
		/* the change counts use them too (the lock holds till then) */
		m.known = v;
		m.nknown = n;
		m.known_loaded = true;
	}
	trace_phase("create: records loaded");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i].session, m.session))
			continue;
		latest = i;
		if (o->message && v[i].message &&
		    !strcmp(v[i].message, o->message)) {
			found(out, &v[i]); /* one checkpoint per turn */
			existing_notice(s, &v[i]);
			goto done;
		}
	}
	if ((r = repo_odb(&db, s, false)) < 0 ||
	    (r = odb_writer_new(&w, db)) < 0)
		goto done;
	trace_phase("create: writer ready");
	if ((r = worktree_scan_view(&cur, s, w, &cache, NULL, false, &view)) <
	    0)
		goto done;
	trace_phase("create: scanned");
	limit = view.max_file_size ? view.max_file_size
		: s->max_file_size ? s->max_file_size
				   : SCAN_DEFAULT_MAX_SIZE;
	if ((r = build_trees(&root, &ids, s, w, &cur, cache)) < 0)
		goto done;
	if (if_changed && latest != SIZE_MAX) {
		/* when the tree is the latest's, its trees are all stored
		 * already (nothing was written) */
		if (!oid_cmp(&root, &v[latest].tree)) {
			/* what the scan stored: bytes whose stored copy was
			 * damaged, which the latest checkpoint names too */
			if ((r = odb_writer_commit(w)) < 0)
				goto done;
			found(out, &v[latest]);
			scan_notices(s, &cur, limit, out->id);
			/* only a cache: the next scan is cheaper */
			if (worktree_save_statcache(s, &cur, cache) < 0)
				error_clear();
			cache = NULL;
			goto done;
		}
	}
	/* Once the objects are durable, the stat cache (which names them)
	 * is saved on another thread while the record is written: the
	 * checkpoint never waits for a cache, which only costs speed. */
	if ((r = odb_writer_commit(w)) < 0)
		goto done;
	worktree_save_statcache_start(&saver, s, &cur, cache);
	cache = NULL;
	if ((r = write_built(out->id, s, w, &cur, &m, &root, &ids)) < 0)
		goto done;
	trace_phase("create: record written");
	out->created = true;
	oid_to_hex(out->tree, &root);
	scan_notices(s, &cur, limit, out->id);
	out->files_changed = m.files_changed;
	out->insertions = m.insertions;
	out->deletions = m.deletions;
	checkpoint_repack_small(s); /* the checkpoint is complete */
	trace_phase("create: repacked");
	worktree_save_statcache_wait(&saver); /* before cur changes */
	/* what was just scanned is that tree: keep it for the show or diff
	 * that often follows (the pipeline's manifest and diff) */
	for (size_t i = 0; i < cur.n; i++) {
		/* stat data is not part of a tree */
		snap_entry *e = &cur.v[i];
		e->mtime_ns = e->ctime_ns = 0;
		e->ino = e->dev = 0;
		e->cached = 0;
	}
	repo_tree_cache_put(s, &cur, &root);
done:
	worktree_save_statcache_wait(&saver);
	tree_ids_release(&ids);
	record_free_all(v, n);
	statcache_free(cache);
	odb_writer_free(w);
	snap_release(&cur);
	repo_unlock(s);
	return r;
}

int decree_checkpoint_create(char id_out[DECREE_ID_HEXLEN + 1], bool *created,
			     decree_store *s,
			     const decree_checkpoint_create_options *o)
{
	decree_checkpoint_created res;
	int r = decree_checkpoint_create_ext(&res, s, o);

	if (created)
		*created = r == 0 && res.created;
	if (r == 0)
		memcpy(id_out, res.id, DECREE_ID_HEXLEN + 1);
	return r;
}

struct decree_checkpoint_list {
	record *v;
	size_t n;
};

/* Tree ids of the working tree now (nothing stored), one per view the
 * newest checkpoints of the sessions were made with (usually one). */
typedef struct {
	worktree_view view;
	oid tree;
} now_tree;

static int worktree_tree(oid *out, now_tree **seen, size_t *nseen,
			 decree_store *s, const record *rec)
{
	worktree_view view;
	snap cur = SNAP_INIT;
	now_tree *v;
	int r;

	checkpoint_view(&view, rec);
	for (size_t i = 0; i < *nseen; i++)
		if (worktree_view_same(&(*seen)[i].view, &view)) {
			*out = (*seen)[i].tree;
			return 0;
		}
	if ((r = worktree_scan_view(&cur, s, NULL, NULL, NULL, false, &view)) ==
	    0)
		r = tree_write(out, NULL, &cur);
	snap_release(&cur);
	if (r < 0)
		return r;
	/* the views borrow from the list's records, which outlive this */
	if (!(v = decree_realloc(*seen, (*nseen + 1) * sizeof(*v))))
		return -1;
	*seen = v;
	v[*nseen].view = view;
	v[(*nseen)++].tree = *out;
	return 0;
}

int decree_checkpoint_list_get(decree_checkpoint_list **out, decree_store *s,
			       const char *session, unsigned flags)
{
	decree_checkpoint_list *l;
	now_tree *seen = NULL;
	size_t nseen = 0, k = 0;
	oid now;
	int r;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	if ((r = record_load_all(&l->v, &l->n, s)) < 0)
		goto fail;
	for (size_t i = 0; i < l->n; i++) {
		if (session && strcmp(l->v[i].session, session)) {
			record_release(&l->v[i]);
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
			/* the working tree as that checkpoint's rules see it */
			if ((r = worktree_tree(&now, &seen, &nseen, s,
					       &l->v[i])) < 0)
				goto fail;
			l->v[i].info.has_changes =
				oid_cmp(&l->v[i].tree, &now) != 0;
		}
	}
	decree_free(seen);
	*out = l;
	return 0;
fail:
	decree_free(seen);
	decree_checkpoint_list_free(l);
	return r;
}

size_t decree_checkpoint_damaged_count(const decree_store *s)
{
	return s ? s->ndamaged : 0;
}

const decree_damaged_record *decree_checkpoint_damaged_at(const decree_store *s,
							  size_t i)
{
	return s && i < s->ndamaged ? &s->damaged[i].pub : NULL;
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
	record_free_all(l->v, l->n);
	decree_free(l);
}

/* Captures are told by what they are written with (restore.c, apply.c):
 * no message and one of decree's own labels.  The record has no field of
 * its own for it: that would need a new record and cache version, and
 * records already written are captures too. */
bool decree_checkpoint_is_capture(const decree_checkpoint_info *c)
{
	static const char *const labels[] = {
		CAPTURE_PRE_RESTORE,
		CAPTURE_PRE_UNDO,
		CAPTURE_PRE_REDO,
		CAPTURE_EXEC_FAILED,
	};

	if (!c || c->message || !c->label)
		return false;
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		if (!strcmp(c->label, labels[i]))
			return true;
	return false;
}

int decree_checkpoint_resolve(char id_out[DECREE_ID_HEXLEN + 1],
			      decree_store *s, const char *ref)
{
	record rec;
	int r = record_resolve(&rec, s, ref);
	if (r == 0) {
		memcpy(id_out, rec.info.id, DECREE_ID_HEXLEN + 1);
		record_release(&rec);
	}
	return r;
}

/* --- show -------------------------------------------------------------------
 */

/* The tree is the handle's cached one, borrowed (no copy: a Linux-sized
 * tree took 9 ms to copy for each pipeline manifest). */
struct decree_snapshot {
	const snap *v;
	struct tree_cache *tc;
	record rec;
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
	if ((r = record_resolve(&sn->rec, s, ref)) < 0 ||
	    (r = repo_tree_borrow(&sn->tc, &tree, s, &sn->rec.tree)) < 0) {
		decree_snapshot_free(sn);
		return r;
	}
	sn->v = tree;
	if (info_out)
		*info_out = sn->rec.info;
	*out = sn;
	return 0;
}

size_t decree_snapshot_count(const decree_snapshot *sn)
{
	return sn ? sn->v->n : 0;
}

void decree_snapshot_at(decree_file_info *out, const decree_snapshot *sn,
			size_t i)
{
	const snap_entry *e = &sn->v->v[i];
	memset(out, 0, sizeof(*out));
	out->path = e->path;
	out->size = e->size;
	if (mode_is_file(e->mode)) {
		out->mode = e->mode & MODE_PERM;
	} else if (e->mode == MODE_LINK) {
		out->mode = 0120000;
	} else {
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
	repo_tree_unref(sn->tc);
	record_release(&sn->rec);
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
	record a, b;
	snap sa = SNAP_INIT, sb = SNAP_INIT;
	struct cmp_ctx c = { cb, payload };
	odb *db;
	int r;

	memset(&b, 0, sizeof(b));
	if ((r = record_resolve(&a, s, ref)) < 0)
		return r;
	if (ref2) {
		if ((r = repo_odb(&db, s, false)) == 0 &&
		    (r = tree_read(&sa, db, &a.tree)) == 0 &&
		    (r = record_resolve(&b, s, ref2)) == 0 &&
		    (r = tree_read(&sb, db, &b.tree)) == 0)
			r = snap_diff(&sa, &sb, cmp_one, &c);
	} else {
		/* the working tree as the checkpoint's rules see it (sa:
		 * what of its tree was read) */
		worktree_view view;
		checkpoint_view(&view, &a);
		r = worktree_diff_tree(&sa, &sb, s, &a.tree, &view, false,
				       cmp_one, &c);
	}
	snap_release(&sa);
	snap_release(&sb);
	record_release(&a);
	record_release(&b);
	return r;
}

/* --- prune and drop
 * -----------------------------------------------------------
 * Both remove all they remove at once (record_drop_commit): a failure
 * before that changes nothing and fails; after it the removal has happened
 * and the call succeeds, with a warning if deleting the files fails (the
 * next recovery finishes it).
 */

/* A damaged record the last listing noted that belongs to `session`
 * (NULL: every one, also those whose session cannot be read). */
static bool damaged_in(const repo_damaged_record *d, const char *session)
{
	return d->pub.damaged &&
	       (!session || (d->session && !strcmp(d->session, session)));
}

/* Add the damaged records of `session`: one that can never be restored
 * goes too. */
static int add_damaged(buf *ids, size_t *count, decree_store *s,
		       const char *session)
{
	for (size_t i = 0; i < s->ndamaged; i++) {
		const repo_damaged_record *d = &s->damaged[i];
		oid id;
		if (!damaged_in(d, session))
			continue;
		if (oid_from_hex(&id, d->pub.id) < 0 ||
		    buf_put(ids, id.b, SHA256_LEN) < 0)
			return -1;
		(*count)++;
	}
	return 0;
}

/* Commit the removal of the `count` records in `ids` (flags and the
 * journal of `journal_session` as record_drop_commit_journal), then
 * finish it: a failing finish is a warning, the removal has happened. */
static int commit_removal(decree_store *s, const buf *ids, size_t count,
			  unsigned flags, const char *journal_session)
{
	bool done;
	int r;

	if ((r = record_drop_commit_journal(s,
					    (const oid *)(const void *)ids->ptr,
					    count, flags, journal_session)) < 0)
		return r;
	if (record_drop_finish(&done, s) < 0) {
		warning_set(DECREE_EUNFINISHED,
			    "the checkpoints were removed, but deleting their "
			    "files failed (%s); the next decree command "
			    "finishes that",
			    error_last());
		error_clear();
	}
	return 0;
}

/* Remove the `count` records in `ids` (and with RECORD_DROP_ALL the
 * history, stat cache and agent journals; with `with_journal` the agent
 * journal of `session`): all or nothing.  The damaged records of
 * `session` among them are marked removed (for the caller's report). */
static int remove_records(decree_store *s, const buf *ids, size_t count,
			  unsigned flags, const char *session,
			  bool with_journal)
{
	int r;

	if ((r = commit_removal(s, ids, count, flags,
				with_journal ? session : NULL)) < 0)
		return r;
	for (size_t i = 0; i < s->ndamaged; i++)
		if (damaged_in(&s->damaged[i], session))
			s->damaged[i].pub.removed = true;
	return 0;
}

int decree_checkpoint_prune(size_t *removed, decree_store *s,
			    const char *session, long keep,
			    long older_than_days)
{
	record *v = NULL;
	size_t n = 0, count = 0;
	int64_t now = fs_now_ns();
	buf ids = BUF_INIT;
	int r;

	*removed = 0;
	if (keep <= 0 && older_than_days < 0)
		return decree_error_set(
			DECREE_EINVALID,
			"prune needs keep > 0 or older_than_days >= 0");
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock_recover(NULL, NULL, s, TXN_NO_ATTACH)) < 0)
		return r;
	if ((r = record_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		size_t newer = 0;
		bool last = true, drop = false;
		oid id;
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
		if ((r = oid_from_hex(&id, v[i].info.id)) < 0 ||
		    (r = buf_put(&ids, id.b, SHA256_LEN)) < 0)
			goto done;
		count++;
	}
	/* a damaged record can never be restored: pruning takes it too */
	if ((r = add_damaged(&ids, &count, s, session)) < 0)
		goto done;
	if (count &&
	    (r = remove_records(s, &ids, count, 0, session, false)) == 0)
		*removed = count;
done:
	buf_release(&ids);
	record_free_all(v, n);
	repo_unlock(s);
	return r;
}

/* Does `session` have an agent journal (decree/agent.h) here? */
static bool has_journal(decree_store *s, const char *session)
{
	char path[PATH_MAX];
	struct stat st;

	return journal_path(path, sizeof(path), s, session) == 0 &&
	       lstat(path, &st) == 0;
}

int decree_checkpoint_drop(size_t *removed, decree_store *s,
			   const char *session)
{
	record *v = NULL;
	size_t n = 0, count = 0;
	buf ids = BUF_INIT;
	bool with_journal = false;
	struct stat st;
	int r;

	*removed = 0;
	if (!repo_exists(s))
		return 0;
	if ((r = txn_lock_recover(NULL, NULL, s, TXN_NO_ATTACH)) < 0)
		return r;
	if (lstat(s->rootdir, &st) < 0) /* the store never saw this root */
		goto done;
	if ((r = record_load_all(&v, &n, s)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		oid id;
		if (session && strcmp(v[i].session, session))
			continue;
		if ((r = oid_from_hex(&id, v[i].info.id)) < 0 ||
		    (r = buf_put(&ids, id.b, SHA256_LEN)) < 0)
			goto done;
		count++;
	}
	if ((r = add_damaged(&ids, &count, s, session)) < 0)
		goto done;
	/* the session's agent journal goes with its checkpoints; for every
	 * session, the history, the stat cache and every journal go too */
	with_journal = session && has_journal(s, session);
	if ((count || with_journal || !session) &&
	    (r = remove_records(s, &ids, count, session ? 0 : RECORD_DROP_ALL,
				session, with_journal)) == 0)
		*removed = count;
done:
	buf_release(&ids);
	record_free_all(v, n);
	repo_unlock(s);
	return r;
}

int decree_checkpoint_delete(decree_store *s, const char *ref)
{
	record rec;
	buf ids = BUF_INIT;
	oid id;
	int r;

	DECREE_ASSERT_ARG(ref);
	memset(&rec, 0, sizeof(rec));
	if (!repo_exists(s))
		return decree_error_set(DECREE_ENOTFOUND,
					"no checkpoint matches '%s'", ref);
	/* under the lock and after recovery: nothing unfinished needs the
	 * record any more (what cannot be finished fails the lock) */
	if ((r = txn_lock_recover(NULL, NULL, s, TXN_NO_ATTACH)) < 0)
		return r;
	if ((r = record_resolve(&rec, s, ref)) < 0 ||
	    (r = oid_from_hex(&id, rec.info.id)) < 0 ||
	    (r = buf_put(&ids, id.b, SHA256_LEN)) < 0 ||
	    (r = commit_removal(s, &ids, 1, 0, NULL)) < 0)
		goto done;
done:
	buf_release(&ids);
	record_release(&rec);
	repo_unlock(s);
	return r;
}
