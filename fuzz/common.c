/*
 * fuzz/common.c - scratch directory, file writing and input splitting
 * for the fuzz targets (see common.h).
 */
#define _GNU_SOURCE
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCRATCH_PREFIX "decree-fuzz."

/* tmpfs where there is one (Linux), else TMPDIR or /tmp */
static const char *scratch_parent(void)
{
	struct stat st;
	const char *t = getenv("TMPDIR");

	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	return t && *t ? t : "/tmp";
}

static char scratch[PATH_MAX];

void fuzz_check_at(bool ok, const char *what, const char *file, int line)
{
	if (ok)
		return;
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

size_t fuzz_split(fuzz_part *parts, size_t max, const uint8_t *data,
		  size_t size)
{
	size_t n = 0;

	while (n + 1 < max) {
		const uint8_t *s =
			size ? memmem(data, size, FUZZ_SEP, FUZZ_SEP_LEN)
			     : NULL;
		if (!s)
			break;
		parts[n].ptr = data;
		parts[n].len = (size_t)(s - data);
		n++;
		size -= (size_t)(s - data) + FUZZ_SEP_LEN;
		data = s + FUZZ_SEP_LEN;
	}
	parts[n].ptr = data;
	parts[n].len = size;
	return n + 1;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	chmod(path, 0700); /* packs and records are 0444 */
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	if (scratch[0])
		rm_tree(scratch);
}

/* Directories of fuzzers that crashed (no atexit) and are gone. */
static void remove_stale(void)
{
	DIR *d = opendir(scratch_parent());
	struct dirent *de;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		long pid;
		char *end;
		if (strncmp(de->d_name, SCRATCH_PREFIX, strlen(SCRATCH_PREFIX)))
			continue;
		pid = strtol(de->d_name + strlen(SCRATCH_PREFIX), &end, 10);
		if (*end || pid <= 0 || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", scratch_parent(),
			 de->d_name);
		rm_tree(path);
	}
	closedir(d);
}

const char *fuzz_dir(void)
{
	if (!scratch[0]) {
		remove_stale();
		snprintf(scratch, sizeof(scratch), "%s/%s%ld", scratch_parent(),
			 SCRATCH_PREFIX, (long)getpid());
		rm_tree(scratch);
		if (mkdir(scratch, 0700) < 0) {
			perror(scratch);
			abort();
		}
		atexit(cleanup);
	}
	return scratch;
}

void fuzz_path(char *out, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", fuzz_dir(), rel);
}

void fuzz_mkdirs(const char *rel)
{
	char path[PATH_MAX];
	size_t base = strlen(fuzz_dir()) + 1;

	fuzz_path(path, rel);
	for (char *p = path + base;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			perror(path);
			abort();
		}
		*p = c;
		if (!c)
			break;
	}
}

void fuzz_empty_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char sub[PATH_MAX];

	if (!d) {
		perror(path);
		abort();
	}
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		rm_tree(sub);
	}
	closedir(d);
}

void fuzz_write(const char *path, const void *data, size_t len)
{
	int fd;

	chmod(path, 0600);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len) ||
	    close(fd) < 0) {
		perror(path);
		abort();
	}
}
