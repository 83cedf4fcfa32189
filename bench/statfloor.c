/*
 * statfloor - the system calls a walk cannot avoid, on N threads.
 *
 * A checkpoint of an unchanged tree whose stat cache vouches for every
 * directory listing (docs/scanning.md) makes, per directory, one open
 * beneath the root and, per entry, one fstatat.  This program makes exactly
 * those calls and nothing else, on N threads taking directories from one
 * shared counter.  The listing is read first and not timed, so the time is
 * the floor for such a walk on this machine: what the kernel charges,
 * with no ignore rules, no cache lookups and no snapshot to build.  lstatwalk
 * is the other reference: one thread that also reads every directory.
 *
 * With --read LIST it times instead opening, fstat-ing and reading whole
 * every file LIST names (one path per line, relative to DIR): the floor
 * for reading the files a diff has to show.
 *
 *   statfloor [--threads N] [--reps R] [--read LIST] DIR RESULTFILE
 *
 * Appends one line per repetition to RESULTFILE in timecmd's format
 * ("NANOSECONDS 0 STATUS"; STATUS 1 when a call failed), which
 * bench/run.sh's stats() reads.  `.git` and `.decree` are skipped, as
 * lstatwalk skips them.  Standalone (no decree headers), built by
 * bench/run.sh with `cc -O2 -pthread`.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

/* One directory: its path relative to the root ("." for the root) and
 * its names. */
struct dir {
	char *path;
	char **names;
	size_t n;
};

static struct dir *dirs;
static size_t ndirs;
static char **files; /* --read: the paths to read */
static size_t nfiles;
static int rootfd;
static size_t next_job; /* the shared counter (atomic) */
static int failed;	/* a call failed (atomic) */

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n))) {
		perror("statfloor: realloc");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		perror("statfloor: strdup");
		exit(1);
	}
	return p;
}

static int skipped(const char *name)
{
	return (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))) ||
	       !strcmp(name, ".git") || !strcmp(name, ".decree");
}

/* List every directory below the root (untimed), iteratively. */
static void list_tree(void)
{
	size_t cap = 64, done = 0;

	dirs = xrealloc(NULL, cap * sizeof(*dirs));
	dirs[ndirs++] = (struct dir){ xstrdup("."), NULL, 0 };
	while (done < ndirs) {
		struct dir *d = &dirs[done];
		size_t ncap = 0;
		int fd =
			openat(rootfd, d->path,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *de;
		char **names = NULL;
		size_t n = 0;

		if (!dp) {
			fprintf(stderr, "statfloor: cannot open '%s': %s\n",
				d->path, strerror(errno));
			exit(1);
		}
		while ((de = readdir(dp)) != NULL) {
			if (skipped(de->d_name))
				continue;
			if (n == ncap)
				names = xrealloc(names,
						 (ncap = ncap ? 2 * ncap : 16) *
							 sizeof(char *));
			names[n++] = xstrdup(de->d_name);
			if (de->d_type == DT_DIR) {
				size_t len = strlen(d->path) +
					     strlen(de->d_name) + 2;
				char *sub = xrealloc(NULL, len);
				if (!strcmp(d->path, "."))
					snprintf(sub, len, "%s", de->d_name);
				else
					snprintf(sub, len, "%s/%s", d->path,
						 de->d_name);
				if (ndirs == cap)
					dirs = xrealloc(dirs,
							(cap *= 2) *
								sizeof(*dirs));
				d = &dirs[done]; /* (dirs may have moved) */
				dirs[ndirs++] = (struct dir){ sub, NULL, 0 };
			}
		}
		closedir(dp);
		d->names = names;
		d->n = n;
		done++;
	}
}

static void read_list(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[4096];
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "statfloor: cannot open '%s': %s\n", file,
			strerror(errno));
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		if (nfiles == cap)
			files = xrealloc(files, (cap = cap ? 2 * cap : 1024) *
							sizeof(char *));
		files[nfiles++] = xstrdup(line);
	}
	fclose(f);
}

static void fail(void)
{
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

static void *stat_worker(void *arg)
{
	size_t i;

	(void)arg;
	while ((i = __atomic_fetch_add(&next_job, 1, __ATOMIC_RELAXED)) <
	       ndirs) {
		const struct dir *d = &dirs[i];
		int fd =
			openat(rootfd, d->path,
			       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;

		if (fd < 0) {
			fail();
			continue;
		}
		for (size_t k = 0; k < d->n; k++)
			if (fstatat(fd, d->names[k], &st, AT_SYMLINK_NOFOLLOW) <
			    0)
				fail();
		close(fd);
	}
	return NULL;
}

static void *read_worker(void *arg)
{
	static __thread char buf[1 << 16];
	size_t i;

	(void)arg;
	while ((i = __atomic_fetch_add(&next_job, 1, __ATOMIC_RELAXED)) <
	       nfiles) {
		int fd = openat(rootfd, files[i],
				O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		ssize_t got;

		if (fd < 0 || fstat(fd, &st) < 0) {
			fail();
			if (fd >= 0)
				close(fd);
			continue;
		}
		do
			got = read(fd, buf, sizeof(buf));
		while (got > 0 || (got < 0 && errno == EINTR));
		if (got < 0)
			fail();
		close(fd);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: statfloor [--threads N] [--reps R] "
			"[--read LIST] DIR RESULTFILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *list = NULL, *root = NULL, *result = NULL;
	long nthreads = 1, reps = 1;
	void *(*work)(void *);
	FILE *out;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--read") && i + 1 < argc)
			list = argv[++i];
		else if (argv[i][0] == '-')
			usage();
		else if (!root)
			root = argv[i];
		else if (!result)
			result = argv[i];
		else
			usage();
	}
	if (!result || nthreads < 1 || nthreads > MAX_THREADS || reps < 1)
		usage();
	if ((rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "statfloor: cannot open '%s': %s\n", root,
			strerror(errno));
		return 1;
	}
	if (list)
		read_list(list);
	else
		list_tree();
	work = list ? read_worker : stat_worker;
	if (!(out = fopen(result, "a"))) {
		fprintf(stderr, "statfloor: cannot open '%s': %s\n", result,
			strerror(errno));
		return 1;
	}
	for (long r = 0; r < reps; r++) {
		pthread_t tids[MAX_THREADS];
		long started = 0;
		struct timespec a, b;

		next_job = 0;
		failed = 0;
		clock_gettime(CLOCK_MONOTONIC, &a);
		while (started + 1 < nthreads &&
		       pthread_create(&tids[started], NULL, work, NULL) == 0)
			started++;
		work(NULL);
		for (long t = 0; t < started; t++)
			pthread_join(tids[t], NULL);
		clock_gettime(CLOCK_MONOTONIC, &b);
		fprintf(out, "%lld 0 %d\n",
			(long long)(b.tv_sec - a.tv_sec) * 1000000000LL +
				(b.tv_nsec - a.tv_nsec),
			failed);
	}
	return fclose(out) == 0 ? 0 : 1;
}
