/*
 * diff.c - decree_checkpoint_diff (decree/diff.h).
 *
 * Both sides become snaps: a checkpoint through its stored tree, the
 * working tree through a scan with the stat cache (nothing is stored).
 * The paths that differ come in canonical order (snap_diff, or against
 * the working tree worktree_diff_tree, which reads only the checkpoint's
 * directories that differ from the walk's); for each, the contents come
 * from the store (checkpoint side) or from the disk
 * (working tree side, read below the root without following symlinks),
 * and unidiff formats the record.  Line counts are taken from the
 * formatted record, so they are exactly what the text shows.  Records are
 * formatted on one thread per CPU (DECREE_THREADS), at most DIFF_AHEAD
 * records ahead of the callback, which the calling thread runs in path
 * order as records are done (it formats records too while the next one
 * to hand over is still being formatted).
 *
 * decree_patch_files reads a patch instead: patch_parse, then one
 * decree_diff_file per file patch, its text cut from the patch between
 * the record's first line and the next record's.
 */
#include "util/common.h"
#include "decree/diff.h"
#include "util/alloc.h"
#include "ops/checkpoint.h"
#include "ops/diff.h"
#include "store/record.h"
#include "scan/worktree.h"
#include "util/error.h"
#include "util/fs.h"
#include "store/repo.h"
#include "store/tree.h"
#include "diff/unidiff.h"
#include "diff/patch.h"

#include <pthread.h>

/* One changed path; formatted by a worker, emitted in order. */
typedef struct {
	const char *path;
	const snap_entry *a, *b;
	decree_diff_file f;
	buf text;
	int err;
	char *errmsg;
	bool done; /* formatted (under diff_ctx.mu) */
} diff_item;

typedef struct {
	decree_store *s;
	odb *db;
	bool worktree; /* side b is the working tree */
	const decree_diff_options *o;
	decree_diff_cb cb;
	void *payload;
	diff_item *items;
	size_t n, cap;
	/* the formatting: items [emitted, next) are claimed, the callback
	 * has had those before `emitted`; a worker waits on `ahead` while
	 * DIFF_AHEAD items are claimed and not handed over, the calling
	 * thread on `ready` for item `emitted` */
	pthread_mutex_t mu;
	pthread_cond_t ahead, ready;
	size_t next, emitted;
	bool stop;
} diff_ctx;

/* Records formatted and not yet handed to the callback, at most: bounds
 * the memory a long diff holds. */
enum { DIFF_AHEAD = 1024 };

static unsigned public_mode(uint32_t mode)
{
	return mode_is_file(mode) ? mode & MODE_PERM : 0120000;
}

/* The directory of the last working-tree symlink read, kept open
 * (readlinkat needs it; files are opened by their whole path). */
typedef struct {
	char dir[PATH_MAX];
	int fd; /* -1: none */
} dir_cache;

/* A formatting thread's buffers and directory, reused from record to
 * record. */
typedef struct {
	buf old, new;
	dir_cache dc;
} diff_worker;

static void diff_worker_init(diff_worker *dw)
{
	buf_init(&dw->old);
	buf_init(&dw->new);
	dw->dc.dir[0] = '\0';
	dw->dc.fd = -1;
}

static void diff_worker_release(diff_worker *dw)
{
	buf_release(&dw->old);
	buf_release(&dw->new);
	if (dw->dc.fd >= 0)
		close(dw->dc.fd);
}

static int cached_parent(int *dfd, const char **base, decree_store *s,
			 const char *path, dir_cache *dc)
{
	const char *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) : 0;
	int r;

	*base = slash ? slash + 1 : path;
	if (dc->fd >= 0 && !strncmp(dc->dir, path, dl) && dc->dir[dl] == '\0') {
		*dfd = dc->fd;
		return 0;
	}
	if (dc->fd >= 0)
		close(dc->fd);
	dc->fd = -1;
	if (dl >= sizeof(dc->dir))
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					path);
	memcpy(dc->dir, path, dl);
	dc->dir[dl] = '\0';
	if (!dl) {
		if ((r = fs_open_dir(&dc->fd, s->rootfd, "")) < 0) {
			dc->fd = -1;
			return r;
		}
	} else if ((dc->fd = fs_open_beneath(s->rootfd, dc->dir,
					     O_RDONLY | O_DIRECTORY)) < 0) {
		return decree_error_os("cannot open '%s'", dc->dir);
	}
	*dfd = dc->fd;
	return 0;
}

/* Open a working-tree file by its whole path in one openat2 below the
 * root, no symlink followed: records in path order change directory often
 * (a subdirectory's files sort between its parent's), and the threads
 * take records in turn, so a kept-open directory served few of them. */
static int open_worktree_file(decree_store *s, const snap_entry *e)
{
	return fs_open_beneath(s->rootfd, e->path,
			       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

/* Read the working-tree content of `e` (a symlink's target for links),
 * never following a symlink on the way. */
static int read_worktree(buf *out, decree_store *s, const snap_entry *e,
			 dir_cache *dc)
{
	const char *base;
	int dfd = -1, fd, r;

	if (e->mode == MODE_LINK) {
		char target[PATH_MAX + 1];
		ssize_t n;
		if ((r = cached_parent(&dfd, &base, s, e->path, dc)) < 0)
			return r;
		n = readlinkat(dfd, base, target, sizeof(target) - 1);
		if (n < 0)
			return decree_error_os("cannot read link '%s'",
					       e->path);
		return buf_put(out, target, (size_t)n);
	}
	/* the scan saw a regular file; whatever took its place since is
	 * neither waited for (O_NONBLOCK: a FIFO) nor read */
	if ((fd = open_worktree_file(s, e)) < 0)
		return decree_error_os("cannot open '%s'", e->path);
	{
		struct stat st;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return decree_error_set(DECREE_ECONFLICT,
						"'%s' changed while decree was "
						"reading it",
						e->path);
		}
		r = fs_read_sized(fd, out, e->path, (size_t)st.st_size);
	}
	close(fd);
	return r;
}

/* SHA-256 of a worktree file, streamed (a big file the scan left
 * unhashed). */
static int hash_worktree(oid *out, decree_store *s, const snap_entry *e)
{
	int fd, r;

	if ((fd = open_worktree_file(s, e)) < 0)
		return decree_error_os("cannot open '%s'", e->path);
	r = sha256_fd(out, NULL, fd, e->path);
	close(fd);
	return r;
}

static int load_side(diff_ctx *c, buf *out, const snap_entry *e, bool disk,
		     dir_cache *dc)
{
	buf_clear(out);
	if (!e)
		return 0;
	if (disk)
		return read_worktree(out, c->s, e, dc);
	return odb_read(out, NULL, c->db, &e->id);
}

/* Count the '+' and '-' lines inside the hunks of formatted records. */
static void count_lines(const buf *t, uint64_t *added, uint64_t *removed)
{
	const char *p = t->ptr, *end = t->ptr + t->len;
	bool in_hunk = false;

	*added = *removed = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (n >= 11 && !memcmp(p, "diff --git ", 11))
			in_hunk = false;
		else if (n >= 2 && p[0] == '@' && p[1] == '@')
			in_hunk = true;
		else if (in_hunk && p[0] == '+')
			(*added)++;
		else if (in_hunk && p[0] == '-')
			(*removed)++;
		p += n + 1;
	}
}

static int collect(void *payload, const char *path, const snap_entry *a,
		   const snap_entry *b)
{
	diff_ctx *c = payload;
	diff_item *it;

	if (!snap_path_selected(c->o->paths, path))
		return 0;
	if (GROW(c->items, c->cap, c->n + 1) < 0)
		return DECREE_ERROR;
	it = &c->items[c->n++];
	memset(it, 0, sizeof(*it));
	it->path = path;
	it->a = a;
	it->b = b;
	return 0;
}

/* Fill it->f and it->text.  Runs on worker threads: nothing shared but
 * the store handle, whose reads are thread-safe. */
static int format_item(diff_ctx *c, diff_item *it, buf *old, buf *new,
		       dir_cache *dc)
{
	const snap_entry *a = it->a, *b = it->b;
	decree_diff_file *f = &it->f;
	unidiff_file u = UNIDIFF_FILE_INIT;
	unidiff_options uo = UNIDIFF_OPTIONS_INIT;
	int r;

	f->path = it->path;
	f->status = !a ? 'A' : !b ? 'D' : 'M';
	f->old_mode = a ? public_mode(a->mode) : 0;
	f->new_mode = b ? public_mode(b->mode) : 0;
	f->skipped = (a && !snap_entry_is_stored(a)) ||
		     (b && !snap_entry_is_stored(b));
	if (c->o->no_text || f->skipped)
		return 0;
	if ((a && a->size >= UNIDIFF_MAX_CONTENT) ||
	    (b && b->size >= UNIDIFF_MAX_CONTENT)) {
		/* never read whole into memory: a header, and "Binary files
		 * differ" when the bytes do (ids: a worktree entry was
		 * hashed by the scan) */
		oid bid = b ? b->id : (oid){ { 0 } };
		if (b && b->unhashed && c->worktree &&
		    (r = hash_worktree(&bid, c->s, b)) < 0)
			return r;
		u.old_path = u.new_path = it->path;
		u.old_exists = a != NULL;
		u.new_exists = b != NULL;
		u.old_mode = a ? a->mode : 0;
		u.new_mode = b ? b->mode : 0;
		if (!a || !b || oid_cmp(&a->id, &bid))
			uo.flags |= UNIDIFF_TOO_BIG;
		f->binary = true;
		return unidiff_format(&it->text, &u, &uo);
	}
	if ((r = load_side(c, old, a, false, dc)) < 0 ||
	    (r = load_side(c, new, b, c->worktree, dc)) < 0)
		return r;
	u.old_path = u.new_path = it->path;
	u.old_exists = a != NULL;
	u.new_exists = b != NULL;
	u.old_mode = a ? a->mode : 0;
	u.new_mode = b ? b->mode : 0;
	u.old_data = old->ptr;
	u.old_len = old->len;
	u.new_data = new->ptr;
	u.new_len = new->len;
	uo.context = c->o->context;
	if ((r = unidiff_format(&it->text, &u, &uo)) < 0)
		return r;
	f->binary = unidiff_is_binary(old->ptr, old->len) ||
		    unidiff_is_binary(new->ptr, new->len);
	if (!f->binary)
		count_lines(&it->text, &f->added, &f->removed);
	return 0;
}

static void format_one(diff_ctx *c, diff_item *it, diff_worker *dw)
{
	if ((it->err = format_item(c, it, &dw->old, &dw->new, &dw->dc)) < 0)
		it->errmsg = decree_strdup(error_last());
}

/* Item `it` is formatted: mark it, and wake the calling thread when it is
 * the one it waits for.  Called with c->mu held. */
static void mark_done(diff_ctx *c, diff_item *it)
{
	it->done = true;
	if (it == &c->items[c->emitted])
		pthread_cond_signal(&c->ready);
}

static void *worker(void *arg)
{
	diff_ctx *c = arg;
	diff_worker dw;

	diff_worker_init(&dw);
	pthread_mutex_lock(&c->mu);
	for (;;) {
		diff_item *it;
		while (!c->stop && c->next < c->n &&
		       c->next - c->emitted >= DIFF_AHEAD)
			pthread_cond_wait(&c->ahead, &c->mu);
		if (c->stop || c->next >= c->n)
			break;
		it = &c->items[c->next++];
		pthread_mutex_unlock(&c->mu);
		format_one(c, it, &dw);
		pthread_mutex_lock(&c->mu);
		mark_done(c, it);
	}
	pthread_mutex_unlock(&c->mu);
	diff_worker_release(&dw);
	return NULL;
}

/* Start reading in the stored sides of item i that formatting will read
 * (odb_prefetch): a diff against a checkpoint made a while ago then waits
 * for the disk once per window of records, not once per record. */
static void prefetch_item(diff_ctx *c, size_t i)
{
	const diff_item *it;

	if (i >= c->n || c->o->no_text)
		return;
	it = &c->items[i];
	if (it->a && diff_entry_readable(it->a))
		odb_prefetch(c->db, &it->a->id);
	if (it->b && !c->worktree && diff_entry_readable(it->b))
		odb_prefetch(c->db, &it->b->id);
}

/* Hand formatted item `it` to the callback (or report its error); its
 * text is released either way. */
static int emit(diff_ctx *c, diff_item *it)
{
	int r = 0;

	if (it->err < 0) {
		r = decree_error_set(it->err, "%s",
				     it->errmsg ? it->errmsg : "out of memory");
	} else if (it->f.status &&
		   (c->o->no_text || it->f.skipped || it->text.len)) {
		/* (no text: same bytes after all, a racing edit) */
		it->f.text = it->text.len ? it->text.ptr : NULL;
		it->f.len = it->text.len;
		r = c->cb(c->payload, &it->f);
	}
	buf_release(&it->text);
	decree_free(it->errmsg);
	it->errmsg = NULL;
	return r;
}

/* Format the items on up to `nthreads` threads, this one included, and
 * hand each to the callback in path order as soon as it and those before
 * it are done.  The first error (in path order) or a non-zero callback
 * result stops it. */
static int run_items(diff_ctx *c, unsigned nthreads)
{
	pthread_t tids[16];
	unsigned started = 0;
	diff_worker dw;
	int r = 0;

	diff_worker_init(&dw);
	for (size_t i = 0; i < DIFF_AHEAD; i++)
		prefetch_item(c, i);
	if (nthreads > ARRAY_SIZE(tids) + 1)
		nthreads = ARRAY_SIZE(tids) + 1;
	while (started + 1 < nthreads && started + 1 < c->n &&
	       pthread_create(&tids[started], NULL, worker, c) == 0)
		started++;
	pthread_mutex_lock(&c->mu);
	while (c->emitted < c->n && !r) {
		diff_item *it = &c->items[c->emitted];
		if (!it->done && c->next < c->n &&
		    c->next - c->emitted < DIFF_AHEAD) {
			/* work while the next one to hand over is formatted */
			diff_item *mine = &c->items[c->next++];
			pthread_mutex_unlock(&c->mu);
			format_one(c, mine, &dw);
			pthread_mutex_lock(&c->mu);
			mark_done(c, mine);
			continue;
		}
		if (!it->done) {
			pthread_cond_wait(&c->ready, &c->mu);
			continue;
		}
		c->emitted++;
		pthread_cond_broadcast(&c->ahead);
		pthread_mutex_unlock(&c->mu);
		/* the window moved on by one record */
		prefetch_item(c, c->emitted + DIFF_AHEAD - 1);
		r = emit(c, it);
		pthread_mutex_lock(&c->mu);
	}
	c->stop = true;
	pthread_cond_broadcast(&c->ahead);
	pthread_mutex_unlock(&c->mu);
	for (unsigned t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	diff_worker_release(&dw);
	return r;
}

static int check_diff_options(const decree_diff_options *o)
{
	if (o->version != DECREE_DIFF_OPTIONS_VERSION)
		return decree_error_set(DECREE_EINVALID,
					"invalid diff options");
	for (size_t i = 0; o->paths && o->paths[i]; i++)
		if (!fs_path_is_safe(o->paths[i], false))
			return DECREE_EINVALID;
	return 0;
}

/* Tree ta against tree tb, or (tb NULL) against the working tree scanned
 * with ta's rules and `view`. */
static int diff_trees(decree_store *s, const oid *ta, const oid *tb,
		      const worktree_view *view, const decree_diff_options *o,
		      decree_diff_cb cb, void *payload)
{
	const snap *sa;
	snap sb = SNAP_INIT, keep = SNAP_INIT;
	diff_ctx c;
	int r;

	memset(&c, 0, sizeof(c));
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.ahead, NULL);
	pthread_cond_init(&c.ready, NULL);
	c.s = s;
	c.o = o;
	c.cb = cb;
	c.payload = payload;
	c.worktree = tb == NULL;
	if ((r = repo_odb(&c.db, s, false)) < 0)
		goto done;
	if (tb) {
		if ((r = repo_tree(&sa, s, ta)) == 0 &&
		    (r = tree_read(&sb, c.db, tb)) == 0)
			r = snap_diff(sa, &sb, collect, &c);
	} else {
		/* the working tree as the checkpoint's rules see it (lazy:
		 * changed files are read once, by the diff itself) */
		r = worktree_diff_tree(&keep, &sb, s, ta, view, !o->no_text,
				       collect, &c);
	}
	if (r == 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned nt = s->threads ? s->threads
			      : ncpu > 0 ? (unsigned)ncpu
					 : 1;
		if (o->no_text)
			nt = 1; /* nothing to read */
		r = run_items(&c, nt);
	}
done:
	for (size_t i = 0; i < c.n; i++) {
		buf_release(&c.items[i].text);
		decree_free(c.items[i].errmsg);
	}
	decree_free(c.items);
	pthread_cond_destroy(&c.ahead);
	pthread_cond_destroy(&c.ready);
	pthread_mutex_destroy(&c.mu);
	snap_release(&sb);
	snap_release(&keep);
	return r;
}

int decree_checkpoint_diff(decree_store *s, const char *ref, const char *ref2,
			   const decree_diff_options *o, decree_diff_cb cb,
			   void *payload)
{
	decree_diff_options def = DECREE_DIFF_OPTIONS_INIT;
	worktree_view view;
	record a, b;
	int r;

	DECREE_ASSERT_ARG(s);
	DECREE_ASSERT_ARG(ref);
	DECREE_ASSERT_ARG(cb);
	if (!o)
		o = &def;
	if ((r = check_diff_options(o)) < 0)
		return r;
	memset(&b, 0, sizeof(b));
	if ((r = record_resolve(&a, s, ref)) < 0)
		return r;
	checkpoint_view(&view, &a);
	if (!ref2 || (r = record_resolve(&b, s, ref2)) == 0)
		r = diff_trees(s, &a.tree, ref2 ? &b.tree : NULL, &view, o, cb,
			       payload);
	record_release(&a);
	record_release(&b);
	return r;
}

int diff_tree_worktree(decree_store *s, const oid *tree,
		       const worktree_view *view, const decree_diff_options *o,
		       decree_diff_cb cb, void *payload)
{
	decree_diff_options def = DECREE_DIFF_OPTIONS_INIT;
	int r;

	if (!o)
		o = &def;
	if ((r = check_diff_options(o)) < 0)
		return r;
	return diff_trees(s, tree, NULL, view, o, cb, payload);
}

/* --- the records of a patch ---------------------------------------------- */

/* A patch mode (0100000 | permission bits, 0120000) as decree_diff_file
 * gives it: a file's permission bits, or 0120000 for a symlink. */
static unsigned file_mode(uint32_t m)
{
	return (m & 0170000) == 0120000 ? 0120000u : (unsigned)(m & 07777);
}

/* Move *off (the start of line *line, 1-based) to the start of `lineno`,
 * or to len when the text has fewer lines. */
static void seek_line(size_t *off, size_t *line, const char *text, size_t len,
		      size_t lineno)
{
	while (*line < lineno && *off < len) {
		const char *nl = memchr(text + *off, '\n', len - *off);
		*off = nl ? (size_t)(nl - text) + 1 : len;
		(*line)++;
	}
}

int decree_patch_files(const char *name, const char *text, size_t len,
		       int strip, decree_diff_cb cb, void *payload)
{
	patch_parse_options po = PATCH_PARSE_OPTIONS_INIT;
	patch_set *ps;
	buf rec = BUF_INIT;
	size_t off = 0, line = 1;
	int r;

	DECREE_ASSERT_ARG(text || !len);
	DECREE_ASSERT_ARG(cb);
	if (!len)
		return 0; /* an empty diff: no records (a run that changed
			     nothing) */
	po.strip = strip;
	if ((r = patch_parse(&ps, name ? name : "<patch>", text ? text : "",
			     len, &po)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < ps->nfiles; i++) {
		const patch_file *fp = &ps->files[i];
		decree_diff_file f;
		size_t start, end = len, eline = line;

		memset(&f, 0, sizeof(f));
		f.path = fp->new_exists ? fp->new_path : fp->old_path;
		f.status = !fp->old_exists   ? 'A'
			   : !fp->new_exists ? 'D'
			   : fp->is_rename   ? 'R'
			   : fp->is_copy     ? 'C'
					     : 'M';
		f.old_mode = fp->old_exists ? file_mode(fp->old_mode) : 0;
		f.new_mode = fp->new_exists ? file_mode(fp->new_mode) : 0;
		f.binary = fp->is_binary;
		for (size_t k = 0; k < fp->nlines; k++) {
			if (fp->lines[k].op == '+')
				f.added++;
			else if (fp->lines[k].op == '-')
				f.removed++;
		}
		/* the record: from its first line to the next record's */
		seek_line(&off, &line, text, len, fp->lineno);
		start = off;
		if (i + 1 < ps->nfiles) {
			end = off;
			eline = line;
			seek_line(&end, &eline, text, len,
				  ps->files[i + 1].lineno);
		}
		buf_clear(&rec);
		if (!memchr(text + start, '\0', end - start)) {
			if (buf_put(&rec, text + start, end - start) < 0) {
				r = -1;
				break;
			}
			f.text = rec.ptr;
			f.len = rec.len;
		}
		r = cb(payload, &f);
	}
	buf_release(&rec);
	patch_set_free(ps);
	return r;
}
