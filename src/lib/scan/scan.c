/*
 * scan.c - the parallel directory walk and content hashing.
 *
 * A walk of a large tree is dominated by lstat and readdir system calls,
 * and a first checkpoint by hashing and compressing; both run on one pool
 * of threads (two per online CPU: scan_default_threads) sharing one queue
 * of two kinds of jobs:
 *
 *   DIR   list one directory (opened beneath the root with no symlink on
 *         the way): its names from the stat cache when the cache vouches
 *         for its listing (statcache.h), else read and sorted; lstat
 *         them, apply the ignore rules, ask the stat cache; queue a DIR
 *         job per subdirectory and a HASH job per file the cache does not
 *         vouch for;
 *   HASH  read one file, SHA-256 it and, with a writer, store it.
 *
 * Each directory's result is an array of entries sized once, so jobs write
 * into stable memory; no job touches another's entries.  When the queue is
 * empty and no job runs, the results are stitched together depth-first in
 * name order, which is exactly canonical order (snap.h); the entries'
 * paths, kept in per-thread arenas, become the snapshot's without a copy,
 * and with a stat cache each directory's listing is handed to it for the
 * next save.  The ignore
 * matcher is not thread-safe: each thread has its own (rules load lazily,
 * so each reads only what it needs).
 *
 * A file that disappears between readdir and open is dropped from the
 * snapshot (it no longer exists); a file that grows past the size limit
 * while being read is recorded as skipped.  The first error stops the
 * walk and is reported.
 *
 * Besides the snapshot a scan counts what the ignore rules excluded (each
 * thread in its own worker, summed at the end) and, with a progress
 * function, files and bytes found and done (relaxed atomics, only then);
 * the calling thread, worker 0, reports them between its jobs.
 */
#include "util/common.h"
#include "scan/scan.h"
#include "util/alloc.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/fs.h"
#include "scan/ignore.h"

#include <dirent.h>
#include <pthread.h>
#include <time.h>

typedef struct dirres dirres;

/* One entry of a directory's result. */
typedef struct {
	snap_entry e; /* e.path is the full path (in a worker's arena) */
	size_t plen;  /* its length */
	dirres *sub;  /* subdirectory result, or NULL */
	bool dropped; /* ignored, vanished or not a project file */
	bool marked;  /* sub: the stat cache's record marks it as in the
			 directory's tree */
} rentry;

/* A directory's result: its entries, one per name of its listing (same
 * index), and with a stat cache what the cache needs to know of it. */
struct dirres {
	rentry *v;
	size_t n;
	char *path;	       /* owned */
	statcache_name *names; /* the listing (owned array) */
	char *names_block;     /* their storage, or NULL: the cache's */
	struct stat st;	       /* the directory's */
	bool stat_ok, clean;
	bool listed; /* listed with a stat cache: a note is due */
	int src;
	/* its record's tree: the id, and whether every subdirectory the
	 * record marks is one the walk found (and took) */
	bool tree_known, marks_found;
	oid tree_old;
	/* the directory above (NULL: the root), and the rules files its
	 * listing may hold (RULES_*), set before any subdirectory is queued */
	const dirres *parent;
	unsigned char rules;
};

/* dirres.rules: whether the listing was read (RULES_LISTED), and which
 * rules files it holds as a regular file or as a name of unknown type:
 * RULES_FILE << k for ignore_rules_files[k] */
enum { RULES_LISTED = 1, RULES_FILE = 2 };

enum { JOB_DIR = 1, JOB_HASH = 2 };

typedef struct job {
	struct job *next;
	int kind;
	char *path;  /* DIR: the directory ("" = root) */
	dirres *dir; /* DIR: where results go */
	int depth;
	rentry *ent; /* HASH: the entry to fill */
} job;

typedef struct walker walker;

typedef statcache_name dent;

/* How many entries one rule excluded (per worker; up to TALLY_MAX rules,
 * the most common ones being met early in practice). */
#define TALLY_MAX 16
typedef struct {
	const void *key; /* ignore_matcher_last_rule */
	uint64_t n;
	char *source, *pattern;
} rule_tally;

typedef struct {
	walker *w;
	ignore_matcher *ign;
	uint64_t ignored;
	rule_tally tally[TALLY_MAX];
	size_t ntally;
	/* the directory being listed (the loader's shortcut): its path,
	 * result, descriptor and sorted listing */
	const char *cur_dir;
	const dirres *cur_res;
	int cur_fd;
	const dent *cur_ents;
	size_t cur_n;
	statcache_dir scd; /* its stat cache record */
	arena paths;	   /* the full paths of its entries */
	size_t recorded;   /* entries it recorded (the snap's size, about) */
	buf data;	   /* reused read buffer */
} worker;

struct walker {
	const scan_opts *o;
	int rootfd;
	uint64_t max_size;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	job *head;
	size_t queued; /* jobs in the queue */
	size_t active; /* jobs queued or running */
	worker *wks;   /* one per thread; wks[0] is the calling thread */
	pthread_t *tids;
	unsigned nthreads, started; /* started: extra threads running */
	bool failed;
	int err;
	char errmsg[1024];
	/* progress (only with o->progress; relaxed atomics): files found
	 * and hash jobs queued and done, their bytes, directories still to
	 * read */
	uint64_t p_found, p_queued, p_hashed, p_bytes_total, p_bytes;
	uint64_t p_dirs;
	decree_progress reported; /* the last report (worker 0 only) */
};

static void padd(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

static uint64_t pget(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* Worker 0 (the calling thread) tells the caller how far the scan is.
 * The counters are read one by one while other threads move them, so
 * what is reported is kept consistent: never done beyond found, never
 * less than the last report. */
static void report_progress(walker *w, bool final)
{
	decree_progress *p = &w->reported;
	uint64_t found, queued, hashed, pending, v;

	if (!w->o->progress)
		return;
	p->stage = DECREE_PROGRESS_SCAN;
	hashed = pget(&w->p_hashed);
	queued = pget(&w->p_queued);
	found = pget(&w->p_found);
	pending = queued > hashed ? queued - hashed : 0;
	if (found > p->files_total)
		p->files_total = found;
	v = p->files_total > pending ? p->files_total - pending : 0;
	if (v > p->files)
		p->files = v;
	if ((v = pget(&w->p_bytes)) > p->bytes)
		p->bytes = v;
	if ((v = pget(&w->p_bytes_total)) > p->bytes_total)
		p->bytes_total = v;
	if (p->bytes > p->bytes_total)
		p->bytes_total = p->bytes;
	p->total_known = final || pget(&w->p_dirs) == 0;
	if (final) { /* every thread is joined: the counts are exact */
		p->files = p->files_total = found;
		p->bytes = p->bytes_total = pget(&w->p_bytes);
	}
	w->o->progress(w->o->progress_payload, p);
}

/* --- queue ---------------------------------------------------------------- */

static void fail_walk(walker *w, int r)
{
	pthread_mutex_lock(&w->mu);
	if (!w->failed) {
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		w->err = r;
		snprintf(w->errmsg, sizeof(w->errmsg), "%s", error_last());
	}
	pthread_mutex_unlock(&w->mu);
}

static void *worker_main(void *arg);

static int push(walker *w, job *j)
{
	pthread_mutex_lock(&w->mu);
	j->next = w->head; /* LIFO: depth-first, few directories open at once */
	w->head = j;
	w->queued++;
	w->active++;
	/* Threads start when there is work waiting for them: a small tree
	 * is scanned without creating any. */
	if (w->queued > 1 && w->started + 1 < w->nthreads) {
		unsigned k = w->started + 1;
		if (pthread_create(&w->tids[k], NULL, worker_main,
				   &w->wks[k]) == 0)
			w->started = k;
	}
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static int push_new(walker *w, int kind, char *path, dirres *dir, int depth,
		    rentry *ent)
{
	job *j = decree_calloc(1, sizeof(*j));
	if (!j)
		return -1;
	if (w->o->progress && kind == JOB_DIR)
		padd(&w->p_dirs, 1);
	j->kind = kind;
	j->path = path;
	j->dir = dir;
	j->depth = depth;
	j->ent = ent;
	return push(w, j);
}

/* --- hashing -------------------------------------------------------------- */

static int hash_one(worker *wk, rentry *re);

static int run_hash(worker *wk, rentry *re)
{
	int r = hash_one(wk, re);
	walker *w = wk->w;

	if (w->o->progress) {
		padd(&w->p_bytes, re->dropped ? 0 : re->e.size);
		padd(&w->p_hashed, 1);
	}
	return r;
}

static int hash_one(worker *wk, rentry *re)
{
	walker *w = wk->w;
	snap_entry *e = &re->e;
	/* O_NONBLOCK: a FIFO put in the file's place since the lstat must
	 * not block the open; the fstat below drops it */
	int fd = fs_open_beneath(w->rootfd, e->path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	int r;

	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
			re->dropped = true; /* vanished or replaced meanwhile */
			return 0;
		}
		return decree_error_os("cannot open '%s'", e->path);
	}
	if (fstat(fd, &st) < 0) {
		r = decree_error_os("cannot stat '%s'", e->path);
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		re->dropped = true;
		close(fd);
		return 0;
	}
	/* the stat data describe the bytes we read, for the cache */
	e->mode = mode_of_file(st.st_mode);
	snap_entry_set_stat(e, &st);
	if ((uint64_t)st.st_size > w->max_size) {
		close(fd);
		goto too_big;
	}
	if ((uint64_t)st.st_size >= ODB_STREAM_MIN) {
		/* a big file is never held in memory: hash it, then (if the
		 * store lacks it) stream it into the pack */
		uint64_t size;
		r = sha256_fd(&e->id, &size, fd, e->path);
		if (r == 0 && size > w->max_size) {
			close(fd);
			st.st_size = (off_t)size;
			goto too_big;
		}
		e->size = size;
		if (r == 0 && w->o->store) {
			if (lseek(fd, 0, SEEK_SET) < 0)
				r = decree_error_os("cannot seek in '%s'",
						    e->path);
			else
				r = odb_writer_add_fd(w->o->store, ODB_BLOB, fd,
						      size, &e->id, &e->id,
						      e->path);
		}
		close(fd);
		return r;
	}
	buf_clear(&wk->data);
	r = fs_read_fd(fd, &wk->data, e->path);
	close(fd);
	if (r < 0)
		return r;
	if (wk->data.len > w->max_size) {
		st.st_size = (off_t)wk->data.len;
		goto too_big;
	}
	e->size = wk->data.len;
	sha256_buf(&e->id, wk->data.ptr, wk->data.len);
	if (w->o->store)
		return odb_writer_add(w->o->store, ODB_BLOB, wk->data.ptr,
				      wk->data.len, &e->id, NULL);
	return 0;
too_big:
	e->mode = MODE_SKIP;
	e->size = (uint64_t)st.st_size;
	e->mtime_ns = 0; /* never cached */
	return 0;
}

/* --- ignore loader ----------------------------------------------------------
 */

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

/* Does a sorted listing hold `name` as a regular file, or as a name of
 * unknown type? */
static bool listing_may_hold(const dent *v, size_t n, const char *name)
{
	dent key = { name, 0, 0, false, 0 };
	const dent *hit = n ? bsearch(&key, v, n, sizeof(dent), dent_cmp)
			    : NULL; /* (an empty listing has no array) */

	return hit && (hit->type == DT_REG || hit->type == DT_UNKNOWN);
}

/* dirres.rules of a directory listed as (v, n) */
static unsigned char listing_rules(const dent *v, size_t n)
{
	unsigned char rules = RULES_LISTED;

	for (int k = 0; k < IGNORE_RULES_FILES; k++)
		if (listing_may_hold(v, n, ignore_rules_files[k]))
			rules |= (unsigned char)(RULES_FILE << k);
	return rules;
}

/*
 * May directory `dir` hold rules file `name` (one of ignore_rules_files,
 * the only names the matcher asks for)?  When `dir` is
 * an ancestor of the worker's current directory its listing was read
 * before the current directory was queued, by whichever thread, and
 * answers without a system call; false only when it has no such file.
 */
static bool ancestor_may_hold(const worker *wk, const char *dir,
			      const char *name)
{
	const char *cur = wk->cur_dir;
	const dirres *d = wk->cur_res;
	size_t len = strlen(dir);

	if (!cur || !d || !*cur ||
	    (len && (strncmp(cur, dir, len) || cur[len] != '/')))
		return true; /* not an ancestor: no listing at hand */
	/* one level up per slash below `dir`, and one more for the root */
	for (const char *p = cur + len; *p && d; p++)
		if (*p == '/')
			d = d->parent;
	if (!len && d)
		d = d->parent;
	if (!d || !(d->rules & RULES_LISTED))
		return true;
	for (int k = 0; k < IGNORE_RULES_FILES; k++)
		if (!strcmp(name, ignore_rules_files[k]))
			return d->rules & (RULES_FILE << k);
	return true; /* (not a name the listing was asked about) */
}

/* *b = "dir/name" ("name" in the root, dir ""). */
static int join_path(buf *b, const char *dir, const char *name)
{
	int r;

	buf_clear(b);
	if ((r = buf_puts(b, dir)) < 0 || (*dir && (r = buf_putc(b, '/')) < 0))
		return r;
	return buf_puts(b, name);
}

/*
 * The ignore loader of a scan: `name` in directory `dir`, if it is a
 * regular file.  A directory named .gitignore is no rules file (the walk
 * still descends into it); a FIFO, socket or device of that name is never
 * opened for reading (a FIFO would block the scan until a writer came).
 */
static int load_ignore(void *payload, const char *dir, const char *name,
		       buf *out, bool *found)
{
	worker *wk = payload;
	struct stat st;
	int fd, r;

	*found = false;
	if (wk->cur_dir && !strcmp(dir, wk->cur_dir)) {
		/* The listing tells whether the file exists: no failed open
		 * per directory (two per directory add up on large trees). */
		if (!listing_may_hold(wk->cur_ents, wk->cur_n, name))
			return 0;
		fd = openat(wk->cur_fd, name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	} else if (!ancestor_may_hold(wk, dir, name)) {
		return 0; /* so does an ancestor's, read by any thread */
	} else {
		/* no listing at hand (the matcher asks for ancestors only, so
		 * a walk does not come here): one openat2 beneath the root,
		 * no walk component by component */
		buf p = BUF_INIT;
		if ((r = join_path(&p, dir, name)) < 0) {
			buf_release(&p);
			return r;
		}
		/* a stat first (the usual answer: no such file, in one
		 * call), so that no device or FIFO is ever opened; the open
		 * then stays beneath the root with no symlink on the way */
		if (fstatat(wk->w->rootfd, p.ptr, &st, AT_SYMLINK_NOFOLLOW) <
		    0) {
			r = errno;
			buf_release(&p);
			if (r == ENOENT || r == ENOTDIR || r == ELOOP ||
			    r == ENAMETOOLONG)
				return 0;
			errno = r;
			return decree_error_os("cannot stat '%s%s%s'", dir,
					       *dir ? "/" : "", name);
		}
		if (!S_ISREG(st.st_mode)) {
			buf_release(&p);
			return 0;
		}
		fd = fs_open_beneath(wk->w->rootfd, p.ptr,
				     O_RDONLY | O_NONBLOCK);
		buf_release(&p);
	}
	if (fd < 0) {
		/* gone, a symlink, or below a symlink or a file: no rules */
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR ||
		    errno == EXDEV)
			return 0;
		return decree_error_os("cannot open '%s%s%s'", dir,
				       *dir ? "/" : "", name);
	}
	/* O_NONBLOCK: a FIFO of that name never blocks the open; anything
	 * but a regular file is no rules file (a directory named .gitignore
	 * is walked, not read) */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	r = fs_read_fd(fd, out, name);
	close(fd);
	if (r == 0)
		*found = true;
	return r;
}

/* --- one directory -----------------------------------------------------------
 */

/* A directory's listing: its names (without "." and ".."), sorted, in one
 * block of memory. */
typedef struct {
	dent *v;
	size_t n;
	char *names; /* every name, NUL-terminated, back to back */
} listing;

static void listing_release(listing *l)
{
	decree_free(l->v);
	decree_free(l->names);
	memset(l, 0, sizeof(*l));
}

/*
 * List directory fd with getdents64 directly: no DIR stream, so none of
 * the fcntl and lseek calls fdopendir and rewinddir make (three system
 * calls per directory, a tenth of a no-change walk's).  Names are copied
 * into one block, and the dent array points into it once it stops
 * moving.
 */
static int read_dir(listing *out, int fd, const char *rel)
{
	char raw[32768];
	size_t n = 0, cap = 0, nlen = 0, ncap = 0;
	dent *v = NULL;
	char *names = NULL;
	ssize_t got;
	int r = 0;

	memset(out, 0, sizeof(*out));
	while ((got = getdents64(fd, raw, sizeof(raw))) > 0) {
		for (ssize_t off = 0; off < got;) {
			const struct dirent64 *de =
				(const struct dirent64 *)(raw + off);
			const char *nm = de->d_name;
			size_t len = strlen(nm) + 1; /* at most NAME_MAX + 1 */
			off += de->d_reclen;
			if (nm[0] == '.' &&
			    (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			if (GROW(v, cap, n + 1) < 0 ||
			    GROW(names, ncap, nlen + len) < 0) {
				r = -1;
				goto fail;
			}
			memcpy(names + nlen, nm, len);
			/* an offset until the block stops moving */
			v[n].name = (const char *)(uintptr_t)nlen;
			v[n].idx = STATCACHE_NO_ENTRY;
			v[n].len = (uint16_t)(len - 1);
			v[n].sub = false;
			v[n++].type = de->d_type;
			nlen += len;
		}
	}
	if (got < 0) {
		r = decree_error_os("cannot read directory '%s'",
				    *rel ? rel : ".");
		goto fail;
	}
	for (size_t i = 0; i < n; i++)
		v[i].name = names + (uintptr_t)v[i].name;
	if (n > 1)
		qsort(v, n, sizeof(*v), dent_cmp);
	out->v = v;
	out->n = n;
	out->names = names;
	return 0;
fail:
	decree_free(v);
	decree_free(names);
	return r;
}

/* The listing of a directory the stat cache vouches for: its names,
 * pointing into the cache. */
static int cached_listing(listing *l, const statcache_dir *d)
{
	memset(l, 0, sizeof(*l));
	if (!d->n)
		return 0;
	if (!(l->v = decree_calloc(d->n, sizeof(dent))))
		return -1;
	for (uint32_t i = 0; i < d->n; i++)
		l->v[i] = statcache_dir_name(d, i);
	l->n = d->n;
	return 0;
}

/* Open directory j->path beneath the root (no symlink on the way) and
 * list it: from the stat cache when it vouches for the listing (wk->scd
 * is its record), else with getdents.  *fd -1 and 0: it vanished or was
 * replaced meanwhile. */
static int open_listing(int *fd, listing *l, worker *wk, const job *j,
			dirres *res)
{
	walker *w = wk->w;
	bool root = !j->path[0];
	int r;

	memset(l, 0, sizeof(*l));
	memset(&wk->scd, 0, sizeof(wk->scd));
	*fd = -1;
	if (j->depth > 4096)
		return decree_error_set(DECREE_EINVALID,
					"directory tree too deep at '%s'",
					j->path);
	/* the root: a descriptor of its own, whose offset no one shares */
	*fd = root ? openat(w->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		   : fs_open_beneath(w->rootfd, j->path,
				     O_RDONLY | O_DIRECTORY);
	if (*fd < 0) {
		if (!root &&
		    (errno == ENOENT || errno == ELOOP || errno == ENOTDIR))
			return 0; /* nothing below it */
		return decree_error_os("cannot open directory '%s'",
				       root ? "." : j->path);
	}
	if (w->o->cache) {
		/* the stat data first: a name added while the listing is read
		 * leaves the recorded data older than the directory */
		res->stat_ok = fstat(*fd, &res->st) == 0;
		statcache_dir_open(w->o->cache, &wk->scd, j->path,
				   strlen(j->path),
				   res->stat_ok ? &res->st : NULL);
		if (wk->scd.listing)
			return cached_listing(l, &wk->scd);
	}
	if ((r = read_dir(l, *fd, j->path)) < 0) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

/* A symlink entry: its target hashed (and stored), unless the stat cache
 * vouches for it. */
static int scan_link(worker *wk, rentry *re, int dfd, const char *name)
{
	const scan_opts *o = wk->w->o;
	snap_entry *e = &re->e;
	char target[PATH_MAX + 1];
	ssize_t tn;

	e->mode = MODE_LINK;
	if (o->cache && (e->cached = (uint8_t)statcache_dir_lookup(
				 &wk->scd, name, e, &e->id)))
		return 0;
	tn = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (tn < 0) {
		if (errno == ENOENT || errno == EINVAL) {
			re->dropped = true; /* vanished or replaced */
			return 0;
		}
		return decree_error_os("cannot read link '%s'", e->path);
	}
	e->size = (uint64_t)tn;
	sha256_buf(&e->id, target, (size_t)tn);
	if (o->store)
		return odb_writer_add(o->store, ODB_BLOB, target, (size_t)tn,
				      &e->id, NULL);
	return 0;
}

/* A regular file entry: skipped above the size limit, taken from the
 * stat cache, left unhashed (lazy_hash), or queued for hashing. */
static int scan_file(worker *wk, rentry *re, const char *name,
		     const struct stat *st)
{
	walker *w = wk->w;
	const scan_opts *o = w->o;
	snap_entry *e = &re->e;

	e->mode = mode_of_file(st->st_mode);
	if ((uint64_t)st->st_size > w->max_size) {
		e->mode = MODE_SKIP;
		e->mtime_ns = 0; /* never cached */
		return 0;
	}
	if (o->cache && (e->cached = (uint8_t)statcache_dir_lookup(
				 &wk->scd, name, e, &e->id)))
		return 0;
	if (o->lazy_hash && !o->store) {
		e->unhashed = 1;
		return 0;
	}
	if (o->progress) {
		padd(&w->p_queued, 1);
		padd(&w->p_bytes_total, (uint64_t)st->st_size);
	}
	return push_new(w, JOB_HASH, NULL, NULL, 0, re);
}

/* load_ignore, and what it found told to the scan's ignore_seen. */
static int load_ignore_seen(void *payload, const char *dir, const char *name,
			    buf *out, bool *found)
{
	const worker *wk = payload;
	const scan_opts *o = wk->w->o;
	int r;

	if ((r = load_ignore(payload, dir, name, out, found)) < 0) {
		/* unreadable (EACCES, say): said as such, and the walk goes on
		 * without it, for the caller to judge */
		error_clear();
		*found = false;
		return o->ignore_seen(o->ignore_seen_payload, dir, name, NULL,
				      false);
	}
	return o->ignore_seen(o->ignore_seen_payload, dir, name, out, *found);
}

/* An entry the ignore rules excluded: counted, with the rule that did. */
static int tally_ignored(worker *wk)
{
	const void *key = ignore_matcher_last_rule(wk->ign, NULL, NULL);
	rule_tally *t;
	buf source = BUF_INIT;
	const char *pattern;

	wk->ignored++;
	for (size_t i = 0; i < wk->ntally; i++)
		if (wk->tally[i].key == key) {
			wk->tally[i].n++;
			return 0;
		}
	if (!key || wk->ntally == TALLY_MAX)
		return 0;
	t = &wk->tally[wk->ntally];
	ignore_matcher_last_rule(wk->ign, &source, &pattern);
	if (!source.len || !(t->source = decree_strdup(source.ptr)) ||
	    !(t->pattern = decree_strdup(pattern))) {
		decree_free(t->source);
		t->source = NULL;
		buf_release(&source);
		error_clear(); /* only a count: it stays out */
		return 0;
	}
	buf_release(&source);
	t->key = key;
	t->n = 1;
	wk->ntally++;
	return 0;
}

/* One name of directory j->path (open at dfd): skipped, queued as a
 * subdirectory, or recorded.  path: scratch for its full path, holding
 * the directory's prefix ("dir/", or "" in the root) in its first
 * `prefix` bytes. */
static int scan_entry(worker *wk, const job *j, int dfd, const dent *de,
		      rentry *re, buf *path, size_t prefix)
{
	walker *w = wk->w;
	const scan_opts *o = w->o;
	snap_entry *e = &re->e;
	const char *name = de->name;
	struct stat st;
	bool ignored = false, is_dir;
	int r;

	re->dropped = true;
	if (!strcmp(name, ".git") ||
	    (j->depth == 0 && !strcmp(name, ".decree")) ||
	    !strncmp(name, ".decree-tmp-", 12))
		return 0; /* the last: temps of a transaction (txn.c) */
	path->len = prefix;
	if ((r = buf_put(path, name, de->len)) < 0)
		return r;
	if (o->skip_dir && !strcmp(path->ptr, o->skip_dir))
		return 0;
	if (de->type == DT_DIR) {
		is_dir = true; /* no stat needed: its job opens it */
	} else {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT
				       ? 0
				       : decree_error_os("cannot stat '%s'",
							 path->ptr);
		is_dir = S_ISDIR(st.st_mode);
		if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			return 0; /* fifos, sockets, devices are not project
				     files */
	}
	if ((r = ignore_matcher_check(wk->ign, path->ptr, path->len, is_dir,
				      &ignored)) < 0)
		return r;
	if (ignored)
		return tally_ignored(wk);
	if (!(e->path = arena_strndup(&wk->paths, path->ptr, path->len)))
		return -1;
	re->plen = path->len;
	wk->recorded++;
	re->dropped = false;
	if (is_dir) {
		char *sub = decree_strdup(e->path);
		re->marked = o->cache && statcache_dir_sub(&wk->scd, name);
		if (!sub || !(re->sub = decree_calloc(1, sizeof(dirres)))) {
			r = -1;
		} else {
			re->sub->parent = j->dir;
			r = push_new(w, JOB_DIR, sub, re->sub, j->depth + 1,
				     NULL);
		}
		if (r < 0)
			decree_free(sub);
		return r;
	}
	snap_entry_set_stat(e, &st);
	e->size = (uint64_t)st.st_size; /* a symlink's: its target's length */
	if (o->progress)
		padd(&w->p_found, 1);
	return S_ISLNK(st.st_mode) ? scan_link(wk, re, dfd, name)
				   : scan_file(wk, re, name, &st);
}

static int run_dir(worker *wk, job *j)
{
	walker *w = wk->w;
	dirres *res = j->dir;
	statcache_dir *scd = &wk->scd;
	listing l;
	buf path = BUF_INIT;
	int fd = -1, r;

	if ((r = open_listing(&fd, &l, wk, j, res)) < 0 || fd < 0)
		goto done;
	if (l.n && !(res->v = decree_calloc(l.n, sizeof(rentry)))) {
		r = -1;
		goto done;
	}
	res->n = l.n;
	res->rules = listing_rules(l.v, l.n); /* before any subdirectory */
	wk->cur_dir = j->path;
	wk->cur_res = res;
	wk->cur_fd = fd;
	wk->cur_ents = l.v;
	wk->cur_n = l.n;
	if (*j->path &&
	    (buf_puts(&path, j->path) < 0 || buf_putc(&path, '/') < 0))
		r = -1;
	for (size_t i = 0, prefix = path.len;
	     i < l.n && r == 0 &&
	     !__atomic_load_n(&w->failed, __ATOMIC_RELAXED);
	     i++)
		r = scan_entry(wk, j, fd, &l.v[i], &res->v[i], &path, prefix);
	if (r == 0 && w->o->cache) {
		/* the listing goes to the stat cache's next save */
		res->listed = true;
		res->names = l.v;
		res->names_block = l.names;
		memset(&l, 0, sizeof(l));
		res->src = scd->src;
		res->clean = statcache_dir_clean(w->o->cache, scd,
						 res->stat_ok ? &res->st : NULL,
						 res->names, res->n);
		res->tree_known = scd->tree_known;
		res->tree_old = scd->tree;
		res->marks_found = scd->sub_hits == scd->subs;
	}
done:
	res->path = j->path; /* the directory's, for the stat cache */
	j->path = NULL;
	wk->cur_dir = NULL;
	wk->cur_res = NULL;
	wk->cur_ents = NULL;
	wk->cur_n = 0;
	listing_release(&l);
	buf_release(&path);
	if (fd >= 0)
		close(fd);
	return r;
}

/* --- threads
 * ------------------------------------------------------------------ */

static void *worker_main(void *arg)
{
	worker *wk = arg;
	walker *w = wk->w;
	bool reporter = wk == &w->wks[0] && w->o->progress;

	for (;;) {
		job *j;
		int r;
		pthread_mutex_lock(&w->mu);
		while (!w->head && w->active) {
			struct timespec until;
			if (!reporter) {
				pthread_cond_wait(&w->cv, &w->mu);
				continue;
			}
			/* the others work: say how far they are now and then */
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 100 * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			if (pthread_cond_timedwait(&w->cv, &w->mu, &until) ==
			    ETIMEDOUT) {
				pthread_mutex_unlock(&w->mu);
				report_progress(w, false);
				pthread_mutex_lock(&w->mu);
			}
		}
		j = w->head;
		if (j) {
			w->head = j->next;
			w->queued--;
		}
		pthread_mutex_unlock(&w->mu);
		if (!j)
			return NULL; /* nothing queued, nothing running: done */
		r = 0;
		if (!__atomic_load_n(&w->failed, __ATOMIC_RELAXED))
			r = j->kind == JOB_DIR ? run_dir(wk, j)
					       : run_hash(wk, j->ent);
		if (r < 0)
			fail_walk(w, r);
		if (w->o->progress && j->kind == JOB_DIR)
			__atomic_fetch_sub(&w->p_dirs, 1, __ATOMIC_RELAXED);
		decree_free(j->path);
		decree_free(j);
		if (reporter)
			report_progress(w, false);
		pthread_mutex_lock(&w->mu);
		if (--w->active == 0)
			pthread_cond_broadcast(&w->cv); /* wake the idle to exit
							 */
		pthread_mutex_unlock(&w->mu);
	}
}

/* What stitch found of a directory: entries below it, and a tree id the
 * stat cache vouches for (statcache.h). */
typedef struct {
	bool nonempty, reusable;
} stitched;

/*
 * Depth-first, name order: canonical order (the paths already belong to
 * the snap).  With a stat cache, hands each directory's listing to it,
 * each name with the snap index of its entry, and lists the directories
 * with entries in `hints` (tree_write_known's order), each known when its
 * recorded tree id is its tree now: the directory clean (the same names,
 * every file a cache hit, none skipped), its record marking exactly the
 * subdirectories with entries, and each of those reusable in turn.
 */
static int stitch(snap *out, dirres *d, statcache *cache, tree_ids *hints,
		  stitched *res)
{
	size_t first = out->n, slot = SIZE_MAX;
	bool reusable = d->clean && d->tree_known;
	bool same = d->marks_found; /* the record marks this tree's subdirs */

	if (hints) {
		if (GROW(hints->v, hints->cap, hints->n + 1) < 0)
			return -1;
		slot = hints->n++;
		memset(&hints->v[slot], 0, sizeof(hints->v[slot]));
		hints->v[slot].first = first;
		hints->v[slot].plen = d->path && *d->path ? strlen(d->path) + 1
							  : 0;
	}
	for (size_t i = 0; i < d->n; i++) {
		rentry *re = &d->v[i];
		if (re->dropped)
			continue;
		if (re->sub) {
			stitched sr;
			int r = stitch(out, re->sub, cache, hints, &sr);
			if (r < 0)
				return r;
			if (d->names)
				d->names[i].sub = sr.nonempty;
			same = same && re->marked == sr.nonempty;
			reusable = reusable && (!sr.nonempty || sr.reusable);
			continue;
		}
		if (snap_push(out, &re->e) < 0) /* its path: adopted */
			return -1;
		if (d->names && out->n <= STATCACHE_NO_ENTRY)
			d->names[i].idx = (uint32_t)(out->n - 1);
		reusable = reusable && re->e.cached && re->e.mode != MODE_SKIP;
	}
	res->nonempty = out->n > first;
	res->reusable = res->nonempty && reusable && same;
	if (hints && !res->nonempty) {
		hints->n = slot; /* no tree: the builder never meets it */
		slot = SIZE_MAX;
	} else if (hints) {
		hints->v[slot].end = out->n;
		hints->v[slot].known = res->reusable;
		hints->v[slot].id = d->tree_old;
	}
	if (cache && d->listed && d->path) {
		statcache_note n;
		memset(&n, 0, sizeof(n));
		n.path = d->path;
		n.stat_ok = d->stat_ok;
		n.mtime_ns = st_mtime_ns(&d->st);
		n.ctime_ns = st_ctime_ns(&d->st);
		n.ino = d->st.st_ino;
		n.dev = d->st.st_dev;
		n.names = d->names;
		n.n = d->n;
		n.names_block = d->names_block;
		n.src = d->src;
		n.clean = d->clean;
		n.slot = slot;
		n.tree_same = same && d->tree_known == (slot != SIZE_MAX);
		n.tree_old = d->tree_old;
		d->path = NULL;
		d->names = NULL;
		d->names_block = NULL;
		return statcache_note_dir(cache, &n);
	}
	return 0;
}

static void dirres_free(dirres *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		dirres_free(d->v[i].sub);
		decree_free(d->v[i].sub);
	}
	decree_free(d->v);
	decree_free(d->path);
	decree_free(d->names);
	decree_free(d->names_block);
}

/* The workers' counts of ignored entries, and the rule that excluded
 * most (the same rule counted by several workers is summed). */
static void sum_stats(repo_scan_info *st, const worker *wks, unsigned n)
{
	memset(st, 0, sizeof(*st));
	for (unsigned i = 0; i < n; i++)
		st->ignored += wks[i].ignored;
	for (unsigned i = 0; i < n; i++) {
		for (size_t k = 0; k < wks[i].ntally; k++) {
			const rule_tally *t = &wks[i].tally[k];
			uint64_t sum = 0;
			for (unsigned j = 0; j < n; j++)
				for (size_t m = 0; m < wks[j].ntally; m++)
					if (!strcmp(wks[j].tally[m].source,
						    t->source) &&
					    !strcmp(wks[j].tally[m].pattern,
						    t->pattern))
						sum += wks[j].tally[m].n;
			if (sum <= st->rule_count)
				continue;
			st->rule_count = sum;
			snprintf(st->rule_source, sizeof(st->rule_source), "%s",
				 t->source);
			snprintf(st->rule, sizeof(st->rule), "%s", t->pattern);
		}
	}
}

unsigned scan_default_threads(long ncpu)
{
	if (ncpu < 1)
		ncpu = 1;
	return (unsigned)(ncpu > SCAN_MAX_DEFAULT_THREADS / 2
				  ? SCAN_MAX_DEFAULT_THREADS
				  : 2 * ncpu);
}

int scan_tree(snap *out, int rootfd, const scan_opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nthreads = o->threads ? o->threads
				       : scan_default_threads(ncpu);
	walker w;
	worker *wks = NULL;
	pthread_t *tids = NULL;
	dirres root;
	unsigned started = 0;
	int r = 0;

	memset(&w, 0, sizeof(w));
	memset(&root, 0, sizeof(root));
	w.o = o;
	w.rootfd = rootfd;
	w.max_size = o->max_file_size ? o->max_file_size
				      : SCAN_DEFAULT_MAX_SIZE;
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	if (!(wks = decree_calloc(nthreads, sizeof(worker))) ||
	    !(tids = decree_calloc(nthreads, sizeof(pthread_t)))) {
		r = -1;
		goto done;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		wks[i].w = &w;
		buf_init(&wks[i].data);
		ignore_load_fn load = o->ignore_load   ? o->ignore_load
				      : o->ignore_seen ? load_ignore_seen
						       : load_ignore;
		if ((r = ignore_matcher_new(&wks[i].ign, load,
					    o->ignore_load ? o->ignore_payload
							   : &wks[i],
					    o->excludes)) < 0)
			goto done;
	}
	w.wks = wks;
	w.tids = tids;
	w.nthreads = nthreads;
	{
		char *rootpath = decree_strdup("");
		if (!rootpath ||
		    (r = push_new(&w, JOB_DIR, rootpath, &root, 0, NULL)) < 0) {
			decree_free(rootpath);
			r = -1;
			goto done;
		}
	}
	report_progress(&w, false);
	/* thread 0 is this one; push() starts the others as work appears */
	worker_main(&wks[0]);
	pthread_mutex_lock(&w.mu);
	started = w.started; /* no push can happen any more */
	pthread_mutex_unlock(&w.mu);
	for (unsigned i = 1; i <= started; i++)
		pthread_join(tids[i], NULL);
	if (w.failed) {
		r = decree_error_set(w.err, "%s", w.errmsg);
		goto done;
	}
	report_progress(&w, true);
	if (o->stats)
		sum_stats(o->stats, wks, nthreads);
	{
		/* the entries' paths become the snap's: no copy */
		size_t n = 0;
		for (unsigned i = 0; i < nthreads; i++) {
			n += wks[i].recorded;
			arena_adopt(&out->paths, &wks[i].paths);
		}
		if ((r = snap_reserve(out, n)) < 0)
			goto done;
	}
	{
		tree_ids hints = TREE_IDS_INIT;
		stitched sr;
		r = stitch(out, &root, o->cache, o->cache ? &hints : NULL, &sr);
		if (r == 0 && o->cache)
			statcache_set_hints(o->cache, &hints);
		tree_ids_release(&hints);
	}
done:
	/* on early failure, drain what was queued */
	while (w.head) {
		job *j = w.head;
		w.head = j->next;
		decree_free(j->path);
		decree_free(j);
	}
	dirres_free(&root);
	for (unsigned i = 0; wks && i < nthreads; i++) {
		ignore_matcher_free(wks[i].ign);
		buf_release(&wks[i].data);
		arena_release(&wks[i].paths);
		for (size_t k = 0; k < wks[i].ntally; k++) {
			decree_free(wks[i].tally[k].source);
			decree_free(wks[i].tally[k].pattern);
		}
	}
	decree_free(wks);
	decree_free(tids);
	pthread_mutex_destroy(&w.mu);
	pthread_cond_destroy(&w.cv);
	return r;
}

int scan_capture_path(snap_entry *e, int rootfd, const char *path,
		      odb_writer *store)
{
	int fd = fs_open_beneath(rootfd, path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	buf data = BUF_INIT;
	int r;

	if (fd < 0)
		return errno == ENOENT
			       ? DECREE_ENOTFOUND
			       : decree_error_os("cannot open '%s'", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return decree_error_set(DECREE_EINVALID,
					"'%s' is not a regular file", path);
	}
	if ((uint64_t)st.st_size >= ODB_STREAM_MIN) {
		uint64_t size;
		e->mode = mode_of_file(st.st_mode);
		if ((r = sha256_fd(&e->id, &size, fd, path)) == 0) {
			e->size = size;
			r = lseek(fd, 0, SEEK_SET) < 0
				    ? decree_error_os("cannot seek in '%s'",
						      path)
				    : odb_writer_add_fd(store, ODB_BLOB, fd,
							size, &e->id, &e->id,
							path);
		}
		close(fd);
		return r;
	}
	r = fs_read_fd(fd, &data, path);
	close(fd);
	if (r == 0) {
		e->mode = mode_of_file(st.st_mode);
		e->size = data.len;
		r = odb_writer_add(store, ODB_BLOB, data.ptr, data.len, NULL,
				   &e->id);
	}
	buf_release(&data);
	return r;
}
