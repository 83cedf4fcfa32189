/*
 * durfloor - the durable writes a first checkpoint cannot avoid.
 *
 * DESIGN.md has every store write made as temp file, write, fsync, rename
 * and fsync of the directory.  A first checkpoint writes a few files that
 * way (the store's marker, the root's, the pack and its index, the record:
 * bench/run.sh passes their sizes, taken from decree's own store).  This
 * program makes exactly those writes, in one fresh directory per
 * repetition, and nothing else: no tree is read, hashed or compressed, no
 * directory is made inside it, and it never fsyncs a directory more than
 * once per file.  So its time is a lower bound, on this disk, for any
 * first checkpoint that keeps DESIGN.md's promise.
 *
 *   durfloor [--reps R] DIR RESULTFILE SIZE...
 *
 * Appends one line per repetition to RESULTFILE in timecmd's format
 * ("NANOSECONDS 0 STATUS"; STATUS 1 when a call failed), which
 * bench/run.sh's stats() reads; DIR/rep.N are removed again.  Standalone
 * (no decree headers), built by bench/run.sh with `cc -O2`.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 64

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One durable write of `len` bytes as dirfd/name. */
static int durable(int dirfd, const char *name, const char *data, size_t len)
{
	char tmp[64];
	int fd;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		close(fd);
		return -1;
	}
	if (close(fd) < 0 || renameat(dirfd, tmp, dirfd, name) < 0)
		return -1;
	return fsync(dirfd);
}

static int one_rep(const char *dir, int rep, const size_t *sizes, int n,
		   const char *data, int64_t *ns)
{
	char path[4096], name[32];
	int dfd, bad = 0;
	int64_t t0;

	snprintf(path, sizeof(path), "%s/rep.%d", dir, rep);
	if (mkdir(path, 0755) < 0 ||
	    (dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	t0 = now_ns();
	for (int i = 0; i < n && !bad; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		bad = durable(dfd, name, data, sizes[i]) < 0;
	}
	*ns = now_ns() - t0;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		unlinkat(dfd, name, 0);
	}
	close(dfd);
	rmdir(path);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	size_t sizes[MAX_FILES], most = 1;
	int reps = 1, n = 0, a = 1;
	char *data;
	FILE *out;

	if (argc > 2 && !strcmp(argv[1], "--reps")) {
		reps = atoi(argv[2]);
		a = 3;
	}
	if (argc - a < 3 || reps < 1 || argc - a - 2 > MAX_FILES) {
		fprintf(stderr,
			"usage: durfloor [--reps R] DIR RESULTFILE SIZE...\n");
		return 2;
	}
	for (int i = a + 2; i < argc; i++) {
		char *end;
		unsigned long long v = strtoull(argv[i], &end, 10);
		if (*end || end == argv[i]) {
			fprintf(stderr, "durfloor: bad size '%s'\n", argv[i]);
			return 2;
		}
		sizes[n++] = (size_t)v;
		if (v > most)
			most = (size_t)v;
	}
	if (!(data = malloc(most)))
		return 1;
	for (size_t i = 0; i < most; i++) /* not all zeros, not compressible */
		data[i] = (char)(i * 2654435761u >> 13);
	if (!(out = fopen(argv[a + 1], "a"))) {
		perror(argv[a + 1]);
		return 1;
	}
	for (int r = 0; r < reps; r++) {
		int64_t ns = 0;
		int bad = one_rep(argv[a], r, sizes, n, data, &ns) < 0;
		if (bad)
			perror("durfloor");
		fprintf(out, "%lld 0 %d\n", (long long)ns, bad);
	}
	fclose(out);
	free(data);
	return 0;
}
