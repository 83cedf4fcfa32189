/*
 * scan.c - the directory walk and the hashing thread pool.
 *
 * The walking thread reads each directory, sorts its names (strcmp) and
 * descends depth-first, which yields entries directly in canonical order
 * (snap.h).  For each regular file it asks the stat cache; a miss becomes a
 * job for the pool, which opens the file beneath the root, hashes it with
 * SHA-256 and, when a writer is given, stores it.  Results are copied into
 * the snapshot after the pool drains, so workers never touch the growing
 * entry array.  A file that disappears between readdir and open is dropped
 * from the snapshot (it no longer exists); a file that grows past the size
 * limit while being read is recorded as skipped.
 */
#include "common.h"
#include "scan.h"
#include "alloc.h"
#include "error.h"
#include "fs.h"
#include "ignore.h"

#include <dirent.h>
#include <pthread.h>

typedef struct job {
	struct job *next;
	size_t idx;   /* entry index in the snapshot */
	char *path;
	oid id;
	uint64_t size;
	int err;      /* decree error code, 0 ok */
	char errmsg[256];
	bool vanished, too_big;
	struct stat st;
} job;

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	job *head, *tail;
	bool closing;
	pthread_t *threads;
	unsigned nthreads, want;
	int rootfd;
	uint64_t max_size;
	odb_writer *store;
} pool;

typedef struct dent {
	char *name;
	unsigned char type;
} dent;

typedef struct {
	const scan_opts *o;
	int rootfd;
	snap *out;
	ignore_matcher *ign;
	buf path;
	const char *cur_dir; /* directory whose fd is cur_fd */
	int cur_fd;
	const struct dent *cur_ents; /* its sorted listing */
	size_t cur_n;
	pool pool;
	job **jobs;
	size_t njobs, jobcap;
	uint64_t max_size;
} walker;

/* --- the pool ----------------------------------------------------------- */

/* `data` is the worker's buffer, reused from job to job: allocating a
 * fresh one per file costs a page fault per 4 KiB on large files. */
static void run_job(pool *p, job *j, buf *data_buf)
{
	int fd = fs_open_beneath(p->rootfd, j->path, O_RDONLY);
	buf data = *data_buf;
	int r;

	buf_clear(&data);

	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
			j->vanished = true;
			return; /* data untouched */
		}
		j->err = decree_error_os("cannot open '%s'", j->path);
		goto fail;
	}
	if (fstat(fd, &j->st) < 0) {
		j->err = decree_error_os("cannot stat '%s'", j->path);
		close(fd);
		goto fail;
	}
	if (!S_ISREG(j->st.st_mode)) {
		j->vanished = true;
		close(fd);
		return;
	}
	if ((uint64_t)j->st.st_size > p->max_size) {
		j->too_big = true;
		j->size = (uint64_t)j->st.st_size;
		close(fd);
		return;
	}
	r = fs_read_fd(fd, &data, j->path);
	close(fd);
	*data_buf = data; /* may have grown */
	if (r < 0) {
		j->err = r;
		goto fail;
	}
	if (data.len > p->max_size) {
		j->too_big = true;
		j->size = data.len;
		*data_buf = data;
		return;
	}
	j->size = data.len;
	sha256_buf(&j->id, data.ptr, data.len);
	if (p->store && (r = odb_writer_add(p->store, ODB_BLOB, data.ptr, data.len,
					    &j->id, NULL)) < 0) {
		j->err = r;
		*data_buf = data;
		goto fail;
	}
	*data_buf = data;
	return;
fail:
	snprintf(j->errmsg, sizeof(j->errmsg), "%s", decree_error_last());
}

static void *worker_main(void *arg)
{
	pool *p = arg;
	buf data = BUF_INIT;

	for (;;) {
		job *j;
		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->closing)
			pthread_cond_wait(&p->cv, &p->mu);
		j = p->head;
		if (j) {
			p->head = j->next;
			if (!p->head)
				p->tail = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!j) {
			buf_release(&data);
			return NULL;
		}
		run_job(p, j, &data);
	}
}

static int pool_push(pool *p, job *j)
{
	if (p->nthreads < p->want) {
		/* Start workers lazily: a no-change scan starts none. */
		if (!p->threads && !(p->threads = decree_calloc(p->want, sizeof(pthread_t))))
			return -1;
		while (p->nthreads < p->want) {
			if (pthread_create(&p->threads[p->nthreads], NULL, worker_main, p))
				break;
			p->nthreads++;
		}
		if (!p->nthreads) { /* no threads at all: do it inline */
			buf data = BUF_INIT;
			run_job(p, j, &data);
			buf_release(&data);
			return 0;
		}
	}
	pthread_mutex_lock(&p->mu);
	j->next = NULL;
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

static void pool_finish(pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->closing = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
	decree_free(p->threads);
	p->threads = NULL;
}

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const dent *)a)->name, ((const dent *)b)->name);
}

/* --- ignore loader -------------------------------------------------------- */

static int load_ignore(void *payload, const char *dir, const char *name,
		       buf *out, bool *found)
{
	walker *w = payload;
	int dfd = -1, fd, r;
	bool own = false;

	*found = false;
	if (w->cur_dir && !strcmp(dir, w->cur_dir)) {
		/* The listing tells whether the file exists: no failed open
		 * per directory (two per directory add up on large trees). */
		dent key = { (char *)name, 0 };
		if (!bsearch(&key, w->cur_ents, w->cur_n, sizeof(dent), dent_cmp))
			return 0;
		dfd = w->cur_fd;
	} else {
		if ((r = fs_open_dir(&dfd, w->rootfd, dir)) < 0) {
			decree_error_clear();
			return 0;
		}
		own = true;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (own)
		close(dfd);
	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
			return 0;
		return decree_error_os("cannot open '%s%s%s'", dir, *dir ? "/" : "", name);
	}
	r = fs_read_fd(fd, out, name);
	close(fd);
	if (r == 0)
		*found = true;
	return r;
}

/* --- the walk ------------------------------------------------------------- */


/* Read the sorted listing of the directory open as `fd`; fd stays open
 * (the DIR uses a private dup only when fd is the caller's root). */
static int read_dir(dent **out, size_t *n_out, DIR *d, const char *rel)
{
	struct dirent *de;
	dent *v = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*n_out = 0;
	while ((errno = 0, de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
			continue;
		if (GROW(v, cap, n + 1) < 0 || !(v[n].name = decree_strdup(nm))) {
			for (size_t i = 0; i < n; i++)
				decree_free(v[i].name);
			decree_free(v);
			return -1;
		}
		v[n++].type = de->d_type;
	}
	if (errno) {
		int r = decree_error_os("cannot read directory '%s'", *rel ? rel : ".");
		for (size_t i = 0; i < n; i++)
			decree_free(v[i].name);
		decree_free(v);
		return r;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), dent_cmp);
	*out = v;
	*n_out = n;
	return 0;
}

static int add_link(walker *w, int dfd, const char *name, const struct stat *st)
{
	char target[PATH_MAX + 1];
	ssize_t n;
	snap_entry *e;
	oid id;
	int r;

	if (!(e = snap_add(w->out, w->path.ptr, w->path.len)))
		return -1;
	e->mode = MODE_LINK;
	e->size = (uint64_t)st->st_size; /* the target's length */
	e->mtime_ns = st_mtime_ns(st);
	e->ctime_ns = st_ctime_ns(st);
	e->ino = st->st_ino;
	e->dev = st->st_dev;
	if (w->o->cache && statcache_lookup(w->o->cache, e->path, e, &id)) {
		e->id = id;
		return 0;
	}
	n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n < 0) {
		if (errno == ENOENT || errno == EINVAL) {
			w->out->n--; /* vanished or replaced meanwhile */
			return 0;
		}
		return decree_error_os("cannot read link '%s'", w->path.ptr);
	}
	e->size = (uint64_t)n;
	sha256_buf(&e->id, target, (size_t)n);
	if (w->o->store &&
	    (r = odb_writer_add(w->o->store, ODB_BLOB, target, (size_t)n, &e->id, NULL)) < 0)
		return r;
	return 0;
}

static int add_file(walker *w, const struct stat *st)
{
	snap_entry *e;
	job *j;
	oid id;

	if (!(e = snap_add(w->out, w->path.ptr, w->path.len)))
		return -1;
	e->mode = (st->st_mode & S_IXUSR) ? MODE_EXEC : MODE_FILE;
	e->size = (uint64_t)st->st_size;
	e->mtime_ns = st_mtime_ns(st);
	e->ctime_ns = st_ctime_ns(st);
	e->ino = st->st_ino;
	e->dev = st->st_dev;
	if ((uint64_t)st->st_size > w->max_size) {
		e->mode = MODE_SKIP;
		e->mtime_ns = 0; /* never cached */
		return 0;
	}
	if (w->o->cache && statcache_lookup(w->o->cache, e->path, e, &id)) {
		e->id = id;
		return 0;
	}
	if (!(j = decree_calloc(1, sizeof(*j))) || !(j->path = decree_strdup(e->path))) {
		decree_free(j);
		return -1;
	}
	j->idx = w->out->n - 1;
	if (GROW(w->jobs, w->jobcap, w->njobs + 1) < 0) {
		decree_free(j->path);
		decree_free(j);
		return -1;
	}
	w->jobs[w->njobs++] = j;
	return pool_push(&w->pool, j);
}

static int walk_dir(walker *w, DIR *d, int depth)
{
	int dfd = dirfd(d);
	dent *ents = NULL;
	size_t n = 0, plen = w->path.len;
	char *dirpath = NULL;
	int r;

	if (depth > 4096)
		return decree_error_set(DECREE_EINVALID, "directory tree too deep at '%s'",
					w->path.ptr);
	if ((r = read_dir(&ents, &n, d, w->path.ptr)) < 0)
		return r;
	if (!(dirpath = decree_strndup(w->path.ptr, plen ? plen - 1 : 0))) {
		r = -1;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name = ents[i].name;
		struct stat st;
		bool ignored = false, is_dir;

		if (!strcmp(name, ".git") || (depth == 0 && !strcmp(name, ".decree")) ||
		    !strncmp(name, ".decree-tmp-", 12))
			continue; /* the last: temps of a transaction (txn.c) */
		buf_truncate(&w->path, plen);
		if ((r = buf_puts(&w->path, name)) < 0)
			goto done;
		if (w->o->skip_dir && !strcmp(w->path.ptr, w->o->skip_dir))
			continue;
		if (ents[i].type == DT_DIR) {
			is_dir = true; /* no stat needed: the walk opens it anyway */
		} else {
			if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno == ENOENT)
					continue;
				r = decree_error_os("cannot stat '%s'", w->path.ptr);
				goto done;
			}
			is_dir = S_ISDIR(st.st_mode);
			if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
				continue; /* fifos, sockets, devices are not project files */
		}
		w->cur_dir = dirpath;
		w->cur_fd = dfd;
		w->cur_ents = ents;
		w->cur_n = n;
		if ((r = ignore_matcher_check(w->ign, w->path.ptr, w->path.len, is_dir,
					      &ignored)) < 0)
			goto done;
		if (ignored)
			continue;
		if (is_dir) {
			int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			DIR *sd;
			if (sub < 0) {
				if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
					continue;
				r = decree_error_os("cannot open directory '%s'", w->path.ptr);
				goto done;
			}
			if (!(sd = fdopendir(sub))) {
				r = decree_error_os("cannot read directory '%s'", w->path.ptr);
				close(sub);
				goto done;
			}
			if ((r = buf_putc(&w->path, '/')) == 0)
				r = walk_dir(w, sd, depth + 1);
			closedir(sd);
			if (r < 0)
				goto done;
		} else if (S_ISLNK(st.st_mode)) {
			if ((r = add_link(w, dfd, name, &st)) < 0)
				goto done;
		} else if ((r = add_file(w, &st)) < 0) {
			goto done;
		}
	}
	r = 0;
done:
	buf_truncate(&w->path, plen);
	w->cur_dir = NULL;
	w->cur_ents = NULL;
	w->cur_n = 0;
	for (size_t i = 0; i < n; i++)
		decree_free(ents[i].name);
	decree_free(ents);
	decree_free(dirpath);
	return r;
}

static bool is_sorted(const snap *s)
{
	for (size_t i = 1; i < s->n; i++)
		if (path_cmp(s->v[i - 1].path, s->v[i].path) >= 0)
			return false;
	return true;
}

/* Copy pool results into the snapshot; drop vanished entries. */
static int collect(walker *w)
{
	snap *s = w->out;
	size_t k = 0;
	int r = 0;

	for (size_t i = 0; i < w->njobs; i++) {
		job *j = w->jobs[i];
		snap_entry *e = &s->v[j->idx];
		if (j->err && r == 0) {
			r = decree_error_set(j->err, "%s", j->errmsg);
		} else if (j->vanished) {
			e->path = NULL; /* marker: removed below */
		} else if (j->too_big) {
			e->mode = MODE_SKIP;
			e->size = j->size;
			e->mtime_ns = 0;
		} else {
			e->id = j->id;
			e->size = j->size;
			e->mode = (j->st.st_mode & S_IXUSR) ? MODE_EXEC : MODE_FILE;
			e->mtime_ns = st_mtime_ns(&j->st);
			e->ctime_ns = st_ctime_ns(&j->st);
			e->ino = j->st.st_ino;
			e->dev = j->st.st_dev;
		}
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].path)
			s->v[k++] = s->v[i];
	s->n = k;
	return r;
}

int scan_tree(snap *out, int rootfd, const scan_opts *o)
{
	walker w;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int r;

	memset(&w, 0, sizeof(w));
	w.o = o;
	w.rootfd = rootfd;
	w.out = out;
	w.max_size = o->max_file_size ? o->max_file_size : SCAN_DEFAULT_MAX_SIZE;
	buf_init(&w.path);
	pthread_mutex_init(&w.pool.mu, NULL);
	pthread_cond_init(&w.pool.cv, NULL);
	w.pool.want = o->threads ? o->threads : (unsigned)(ncpu > 0 ? ncpu : 1);
	w.pool.rootfd = rootfd;
	w.pool.max_size = w.max_size;
	w.pool.store = o->store;
	if ((r = ignore_matcher_new(&w.ign, load_ignore, &w, o->excludes)) < 0)
		goto done;
	{
		/* The root fd is the caller's: read it through a private dup,
		 * rewound because a dup shares the directory offset. */
		int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			r = decree_error_os("cannot read the project root");
			if (fd >= 0)
				close(fd);
			goto done;
		}
		rewinddir(d);
		r = walk_dir(&w, d, 0);
		closedir(d);
	}
	pool_finish(&w.pool);
	if (r == 0)
		r = collect(&w);
	/* The walk emits canonical order already (checked in O(n)). */
	if (r == 0 && !is_sorted(out))
		snap_sort(out);
done:
	pool_finish(&w.pool);
	for (size_t i = 0; i < w.njobs; i++) {
		decree_free(w.jobs[i]->path);
		decree_free(w.jobs[i]);
	}
	decree_free(w.jobs);
	ignore_matcher_free(w.ign);
	buf_release(&w.path);
	pthread_mutex_destroy(&w.pool.mu);
	pthread_cond_destroy(&w.pool.cv);
	return r;
}

int scan_capture_path(snap_entry *e, int rootfd, const char *path, odb_writer *store)
{
	int fd = fs_open_beneath(rootfd, path, O_RDONLY);
	struct stat st;
	buf data = BUF_INIT;
	int r;

	if (fd < 0)
		return errno == ENOENT ? DECREE_ENOTFOUND
				       : decree_error_os("cannot open '%s'", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return decree_error_set(DECREE_EINVALID, "'%s' is not a regular file", path);
	}
	r = fs_read_fd(fd, &data, path);
	close(fd);
	if (r == 0) {
		e->mode = (st.st_mode & S_IXUSR) ? MODE_EXEC : MODE_FILE;
		e->size = data.len;
		r = odb_writer_add(store, ODB_BLOB, data.ptr, data.len, NULL, &e->id);
	}
	buf_release(&data);
	return r;
}
