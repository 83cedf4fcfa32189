/*
 * lstatwalk - the floor for a checkpoint of an unchanged tree.
 *
 * DESIGN.md promises that a checkpoint of an unchanged tree costs "about one
 * directory walk with lstat".  This program is that walk and nothing more:
 * one thread, opendir/readdir on every directory (opened with openat from
 * its parent, so path lookups are as cheap as they can be) and one
 * fstatat(AT_SYMLINK_NOFOLLOW) per entry.  `.git` and `.decree` entries are
 * skipped (decree never scans them), as is any name given with --skip.
 *
 *   lstatwalk [--read] [--skip NAME]... DIR
 *
 * Prints "files N symlinks N dirs N bytes N" on stdout.  With --read it
 * also reads every regular file once (used by bench/run.sh as the untimed
 * warm-up that puts the whole tree into the page cache); it is not part of
 * any timed measurement in that mode.
 *
 * Built by bench/run.sh with `cc -O2`; deliberately standalone (no decree
 * headers) so it measures the kernel, not our code.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SKIP 32

struct walk {
	unsigned long long files, symlinks, dirs, bytes, errors;
	int do_read;
	const char *skip[MAX_SKIP];
	int nskip;
	char *rbuf;
};

static int is_skipped(const struct walk *w, const char *name)
{
	int i;

	for (i = 0; i < w->nskip; i++)
		if (!strcmp(name, w->skip[i]))
			return 1;
	return 0;
}

static void read_all(struct walk *w, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		w->errors++;
		return;
	}
	do
		n = read(fd, w->rbuf, 1 << 20);
	while (n > 0 || (n < 0 && errno == EINTR));
	if (n < 0)
		w->errors++;
	close(fd);
}

/* Takes ownership of fd. */
static void walk_dir(struct walk *w, int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	struct stat st;

	if (!d) {
		w->errors++;
		close(fd);
		return;
	}
	w->dirs++;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;

		if (name[0] == '.' &&
		    (!name[1] || (name[1] == '.' && !name[2])))
			continue;
		if (is_skipped(w, name))
			continue;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			w->errors++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);
			if (sub < 0) {
				w->errors++;
				continue;
			}
			walk_dir(w, sub);
		} else if (S_ISREG(st.st_mode)) {
			w->files++;
			w->bytes += (unsigned long long)st.st_size;
			if (w->do_read)
				read_all(w, dirfd(d), name);
		} else if (S_ISLNK(st.st_mode)) {
			w->symlinks++;
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	struct walk w;
	const char *root = NULL;
	int i, fd;

	memset(&w, 0, sizeof(w));
	w.skip[w.nskip++] = ".git";
	w.skip[w.nskip++] = ".decree";
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--read")) {
			w.do_read = 1;
		} else if (!strcmp(argv[i], "--skip") && i + 1 < argc) {
			if (w.nskip == MAX_SKIP) {
				fprintf(stderr, "lstatwalk: too many --skip\n");
				return 2;
			}
			w.skip[w.nskip++] = argv[++i];
		} else if (argv[i][0] == '-' || root) {
			fprintf(stderr, "usage: lstatwalk [--read] "
					"[--skip NAME]... DIR\n");
			return 2;
		} else {
			root = argv[i];
		}
	}
	if (!root) {
		fprintf(stderr,
			"usage: lstatwalk [--read] [--skip NAME]... DIR\n");
		return 2;
	}
	if (w.do_read && !(w.rbuf = malloc(1 << 20))) {
		perror("lstatwalk: malloc");
		return 1;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lstatwalk: cannot open '%s': %s\n", root,
			strerror(errno));
		return 1;
	}
	walk_dir(&w, fd);
	free(w.rbuf);
	printf("files %llu symlinks %llu dirs %llu bytes %llu\n", w.files,
	       w.symlinks, w.dirs, w.bytes);
	if (w.errors) {
		fprintf(stderr, "lstatwalk: %llu errors\n", w.errors);
		return 1;
	}
	return 0;
}
