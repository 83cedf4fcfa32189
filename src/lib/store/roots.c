/*
 * roots.c - the attachments of a store (roots/<key>/) and moving one to
 * another project root.
 *
 * Invariant: an attachment serves the root whose path hashes to its
 * directory's name; ROOT (or, during a move, ROOT.next) says which path
 * that is.  A move has one commit point, the rename(2) of the directory:
 *
 *   1. roots/<old>/ROOT.next = NEW        old attachment (ROOT.next does
 *                                         not hash to <old>: ignored)
 *   2. rename roots/<old> -> roots/<new>  new attachment (ROOT.next
 *      + fsync roots/                     hashes to <new>: it is the path)
 *   3. rename ROOT.next -> ROOT + fsync   new attachment, tidy
 *
 * A kill before 2 leaves the old attachment whole, after it the new one
 * whole; nothing in between exists.  A stray ROOT.next is tidied by the
 * next lock of either root (roots_finish) or by the next move.  Records
 * are not rewritten: a record's id is the hash of its bytes, and its
 * "root" field says where the checkpoint was made.
 */
#include "util/common.h"
#include "store/roots.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/sha256.h"

#include <dirent.h>

void roots_dir(char *out, const char *store_dir, const char *root)
{
	char hex[SHA256_HEXLEN + 1];
	oid key;

	sha256_buf(&key, root, strlen(root));
	oid_to_hex(hex, &key);
	snprintf(out, PATH_MAX, "%s/roots/%.*s", store_dir, ROOTS_KEYLEN, hex);
}

bool roots_key_matches(const char *name, const char *root)
{
	char hex[SHA256_HEXLEN + 1];
	oid key;

	sha256_buf(&key, root, strlen(root));
	oid_to_hex(hex, &key);
	return strlen(name) == ROOTS_KEYLEN &&
	       !strncmp(name, hex, ROOTS_KEYLEN);
}

/* The last component of a directory path. */
static const char *base_of(const char *dir)
{
	const char *s = strrchr(dir, '/');
	return s ? s + 1 : dir;
}

/* `file` of `rootdir` names the root that hashes to its key: into out. */
static bool names_key(buf *out, const char *rootdir, const char *file)
{
	char path[PATH_MAX + 16];

	buf_clear(out);
	snprintf(path, sizeof(path), "%s/%s", rootdir, file);
	if (fs_read_path(path, out) < 0) {
		error_clear();
		return false;
	}
	return out->len && out->ptr[0] == '/' && strlen(out->ptr) == out->len &&
	       roots_key_matches(base_of(rootdir), out->ptr);
}

int roots_path(buf *out, const char *rootdir)
{
	if (names_key(out, rootdir, "ROOT") ||
	    names_key(out, rootdir, "ROOT.next"))
		return 0;
	buf_clear(out);
	return decree_error_set(DECREE_ENOTFOUND,
				"'%s/ROOT' does not name the root of its key",
				rootdir);
}

/* `dir` holds a name that does not start with '.' (a record, a journal;
 * temp files start with '.').  A missing directory holds none. */
static int holds_any(bool *out, const char *dir)
{
	DIR *d;
	struct dirent *de;

	*out = false;
	if (!(d = opendir(dir))) {
		if (errno == ENOENT)
			return 0;
		if (errno == ENOTDIR) { /* not what decree makes: keep it */
			*out = true;
			return 0;
		}
		return decree_error_os("cannot open '%s'", dir);
	}
	while (!*out && (de = readdir(d)) != NULL)
		*out = de->d_name[0] != '.';
	closedir(d);
	return 0;
}

/* What an attachment may hold and still be unused: the caches, ROOT,
 * temp files of atomic writes, and the directories of records and agent
 * journals when they are empty.  Anything else (a record, the history, a
 * transaction log, an unfinished removal, a move in progress, a file
 * decree does not know) keeps it. */
int roots_in_use(bool *out, const char *rootdir)
{
	static const char *const caches[] = { "ROOT", "checkpoints.cache",
					      "statcache", "statcache.delta" };
	char path[PATH_MAX + 300];
	DIR *d;
	struct dirent *de;
	int r = 0;

	*out = true;
	if (!(d = opendir(rootdir))) {
		if (errno != ENOENT)
			return decree_error_os("cannot open '%s'", rootdir);
		*out = false;
		return 0;
	}
	*out = false;
	while (r == 0 && !*out && (de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		bool known = false;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (name[0] == '.' && strstr(name, ".tmp-"))
			continue; /* a temp file (fs_write_atomic_at) */
		for (size_t i = 0; i < sizeof(caches) / sizeof(*caches); i++)
			known |= !strcmp(name, caches[i]);
		if (known)
			continue;
		if (!strcmp(name, "checkpoints") || !strcmp(name, "journal")) {
			snprintf(path, sizeof(path), "%s/%s", rootdir, name);
			r = holds_any(out, path);
			continue;
		}
		*out = true;
	}
	closedir(d);
	return r;
}

/* Remove the files of `dir` whose names start with '.' (temp files) and
 * then `dir` itself, which fails when anything else is in it (a record or
 * a journal that appeared meanwhile: never deleted here). */
static int remove_empty_dir(const char *dir)
{
	DIR *d;
	struct dirent *de;

	if (!(d = opendir(dir)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot open '%s'", dir);
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX + 300];
		if (de->d_name[0] != '.' || !strcmp(de->d_name, ".") ||
		    !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) < 0 && errno != ENOENT) {
			closedir(d);
			return decree_error_os("cannot remove '%s'", path);
		}
	}
	closedir(d);
	if (rmdir(dir) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", dir);
	return 0;
}

int roots_remove_unused(const char *rootdir)
{
	char path[PATH_MAX + 300];
	DIR *d;
	struct dirent *de;
	bool used;
	int r = 0;

	if ((r = roots_in_use(&used, rootdir)) < 0)
		return r;
	if (used)
		return decree_error_set(DECREE_EEXISTS,
					"'%s' holds checkpoints or history",
					rootdir);
	/* the empty directories first: a record or journal written meanwhile
	 * (journals are appended without the store lock) stops it here */
	snprintf(path, sizeof(path), "%s/checkpoints", rootdir);
	if ((r = remove_empty_dir(path)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/journal", rootdir);
	if ((r = remove_empty_dir(path)) < 0)
		return r;
	/* then ROOT: a crash part-way leaves a directory that serves
	 * nobody, never a half-empty one that claims a root */
	snprintf(path, sizeof(path), "%s/ROOT", rootdir);
	if (unlink(path) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", path);
	if (!(d = opendir(rootdir)))
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot open '%s'", rootdir);
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", rootdir, de->d_name);
		if (unlink(path) < 0 && errno != ENOENT)
			r = decree_error_os("cannot remove '%s'", path);
	}
	closedir(d);
	if (r < 0)
		return r;
	if (rmdir(rootdir) < 0 && errno != ENOENT)
		return decree_error_os("cannot remove '%s'", rootdir);
	snprintf(path, sizeof(path), "%s", rootdir);
	*strrchr(path, '/') = '\0';
	return fs_fsync_dir_path(path);
}

int roots_move(const char *store_dir, const char *from_dir,
	       const char *new_root)
{
	char to[PATH_MAX], path[PATH_MAX + 16], dst[PATH_MAX + 16];
	int r;

	roots_dir(to, store_dir, new_root);
	snprintf(path, sizeof(path), "%s/ROOT.next", from_dir);
	if ((r = fs_write_atomic(path, new_root, strlen(new_root), 0644)) < 0)
		return r;
	if (rename(from_dir, to) < 0)
		return decree_error_os("cannot rename '%s' to '%s'", from_dir,
				       to);
	snprintf(path, sizeof(path), "%s/roots", store_dir);
	if ((r = fs_fsync_dir_path(path)) < 0)
		return r;
	/* committed: what follows only tidies (roots_finish does it too) */
	snprintf(path, sizeof(path), "%s/ROOT.next", to);
	snprintf(dst, sizeof(dst), "%s/ROOT", to);
	if (rename(path, dst) < 0)
		return decree_error_os("cannot rename '%s'", path);
	return fs_fsync_dir_path(to);
}

int roots_finish(const char *rootdir)
{
	char path[PATH_MAX + 16], dst[PATH_MAX + 16];
	struct stat st;
	buf b = BUF_INIT;
	bool ours;

	snprintf(path, sizeof(path), "%s/ROOT.next", rootdir);
	if (lstat(path, &st) < 0)
		return 0;
	ours = names_key(&b, rootdir, "ROOT.next");
	buf_release(&b);
	if (!ours) { /* a move that never reached its commit point */
		if (unlink(path) < 0 && errno != ENOENT)
			return decree_error_os("cannot remove '%s'", path);
		return 0;
	}
	snprintf(dst, sizeof(dst), "%s/ROOT", rootdir);
	if (rename(path, dst) < 0)
		return decree_error_os("cannot rename '%s'", path);
	return fs_fsync_dir_path(rootdir);
}
