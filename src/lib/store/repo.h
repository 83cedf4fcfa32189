/*
 * repo.h - internals of the decree_store handle, shared by every engine
 * folder above store/ (scan, txn, ops).
 *
 * src/lib/store holds what lives in a store and the handle to it: objects
 * (odb), tree objects (tree), flat snapshots (snap), checkpoint records
 * (record), the undo/redo history (oplog), the lock (lock) and the handle
 * (repo).  It uses src/util only.  Invariants:
 *  - an object is named by the SHA-256 of its bytes and re-hashed on
 *    every read; a mismatch is DECREE_ECORRUPT, never silently used;
 *    a writer skips an object only when an intact copy exists
 *    (odb_check: sealed packs, see odb.c), never because a damaged one
 *    does;
 *  - one damaged file blocks only what depends on it: a damaged record is
 *    skipped by listings (and noted on the handle), a pack whose index
 *    cannot be loaded hides only its own objects;
 *  - packs, tree objects and records are never modified, only written
 *    whole and renamed into place (a record after every object it names
 *    is durable) or deleted;
 *  - the history and the caches are replaced atomically (temp file,
 *    fsync, rename, directory fsync) and start with a magic and a version
 *    that readers check first;
 *  - caches (the record cache, the stat cache, the handle's tree cache)
 *    are only caches: the files they summarise are the truth.
 *
 * Store layout (docs/format.md):
 *   <store>/DECREE-STORE          magic + version
 *   <store>/lock                  flock + owner identity
 *   <store>/packs/                objects (odb.h)
 *   <store>/roots/<key>/ROOT      the absolute root path (ROOT.next
 *                                 during a move: roots.h)
 *   <store>/roots/<key>/checkpoints/<id>   checkpoint records (JSON)
 *   <store>/roots/<key>/statcache
 *   <store>/roots/<key>/oplog     undo/redo history
 *   <store>/roots/<key>/txn.wal   present only during a transaction
 * where <key> is the first 32 hex digits of SHA-256(absolute root path).
 */
#ifndef DECREE_REPO_H
#define DECREE_REPO_H

#include "decree/checkpoint.h"
#include "decree/store.h"
#include "store/lock.h"
#include "store/odb.h"
#include "store/snap.h"

/* A checkpoint record that the last listing could not read (record.c fills
 * the list, the handle owns it; decree_checkpoint_damaged_at shows it). */
typedef struct {
	decree_damaged_record pub; /* pub.problem points to `problem` */
	char *problem;
	char *session; /* the session the damaged bytes claim, or NULL */
} repo_damaged_record;

/* A notice of the last call that can notice (decree/checkpoint.h): the
 * handle owns its strings. */
typedef struct {
	decree_notice pub; /* its strings point into the fields below */
	char *message, *path, *rule_source, *rule, *session, *msg, *label;
	char **paths;
} repo_notice;

/* What the last scan of the working tree on this handle saw besides its
 * snapshot (scan.c fills it through worktree.c), for the notices. */
typedef struct {
	uint64_t ignored;    /* entries the ignore rules excluded (a directory
				once, nothing below it) */
	uint64_t rule_count; /* of them, excluded by the rule below */
	char rule_source[PATH_MAX]; /* "" when none */
	char rule[256];
} repo_scan_info;

/* <store>/DECREE-STORE holds exactly these bytes. */
#define REPO_MARKER	  "DECREE-STORE"
#define REPO_MARKER_MAGIC "decree-store 1\n"

struct decree_store {
	char *root; /* absolute, symlinks resolved */
	int rootfd; /* -1: the root does not exist (DECREE_STORE_MISSING_ROOT)
		     */
	char *dir;  /* absolute store directory */
	char *rootdir;	 /* <dir>/roots/<key>; while following a moved
			    in-tree store (follow_to set), the attachment
			    of the root it came from */
	char *follow_to; /* <dir>/roots/<key>: where repo_lock re-attaches
			    rootdir to (repo.c), or NULL */
	char *store_rel; /* the store's path below the root if inside it, else
			    NULL; never scanned, never written (repo.c) */
	odb *db;	 /* opened on first use */
	store_lock lock;
	int tree_lock_fd; /* flock on the root directory while locked, or -1 */
	uint64_t max_file_size;
	char **excludes;
	int lock_timeout_ms;
	unsigned threads;
	/* the flat snapshot of one tree, kept from the last checkpoint or
	 * tree read (repo_tree): trees are immutable, so it never goes stale */
	struct tree_cache *tree_cache;
	bool broken; /* sticky: recovery failed; repo_lock() refuses work */
	repo_damaged_record *damaged; /* records skipped by the last listing */
	size_t ndamaged;
	decree_progress_fn progress; /* decree_store_set_progress, or NULL */
	void *progress_payload;
	repo_notice *notices; /* of the last call that can notice */
	size_t nnotices;
	repo_scan_info last_scan;
};

/* Report progress through the handle's function, if there is one. */
static inline void repo_progress(const decree_store *s,
				 const decree_progress *p)
{
	if (s->progress)
		s->progress(s->progress_payload, p);
}

/* True when `path` (root-relative) is the store or below it: no scan sees
 * it and no transaction may write it. */
bool repo_path_in_store(const decree_store *s, const char *path);

/* Forget the damaged records of the last listing. */
void repo_damaged_clear(decree_store *s);

/* Forget the notices of the last call (a call that can notice starts
 * with it). */
void repo_notices_clear(decree_store *s);
/* Add a copy of *n (its strings and paths are copied). */
int repo_notice_add(decree_store *s, const decree_notice *n);

/* Create the store directories and marker if missing. */
int repo_ensure(decree_store *s);
/* True when the store exists on disk (marker present). */
bool repo_exists(decree_store *s);
/* The object database (opened lazily; refreshed when `refresh`). */
int repo_odb(odb **out, decree_store *s, bool refresh);
/* Take the store lock and the tree lock (nested calls only count).
 * Refused once the handle is broken.  Only locks: a mutation takes the
 * lock through txn_lock(), which also re-reads the pack list and recovers
 * an interrupted transaction. */
int repo_lock(decree_store *s);
/* repo_lock with flags.  REPO_LOCK_NO_ATTACH: do not create this root's
 * directory roots/<key>/ (gc, prune, drop, recover: what only reads or
 * removes must not register a root the store has never seen). */
#define REPO_LOCK_NO_ATTACH 1u
int repo_lock_flags(decree_store *s, unsigned flags);
void repo_unlock(decree_store *s);
/* The snapshot of tree `id`, from the handle's cache when it is that tree
 * (the last checkpoint created, or the last tree read), else read from the
 * store and cached.  The pointer lives until the next repo_tree() or
 * repo_tree_cache_put() on the handle. */
int repo_tree(const snap **out, decree_store *s, const oid *id);
/* The handle's cached snapshot of tree `id`, or NULL when it holds
 * another or none: nothing is read. */
const snap *repo_tree_cached(const decree_store *s, const oid *id);
/* repo_tree, and a reference on the cached snapshot that keeps *out
 * valid, whatever the handle does next (even freed), until
 * repo_tree_unref(*tc_out).  Read-only: the handle still uses it. */
int repo_tree_borrow(struct tree_cache **tc_out, const snap **out,
		     decree_store *s, const oid *id);
void repo_tree_unref(struct tree_cache *tc); /* NULL: nothing */
/* Hand a snapshot of tree `id` to the cache (moved: *sn is emptied). */
void repo_tree_cache_put(decree_store *s, snap *sn, const oid *id);
/* 0 when the root exists, else DECREE_ENOTFOUND naming it: for what needs
 * the tree (handles opened with DECREE_STORE_MISSING_ROOT). */
int repo_need_root(const decree_store *s);

/* The canonical absolute form of `p` (out: PATH_MAX): relative to the
 * current directory, the part that exists with symlinks resolved, the
 * rest with ".", ".." and "//" removed lexically. */
int repo_canonical(char *out, const char *p);

/* Remove the temp files of atomic writes (".<name>.tmp-<random>",
 * fs_write_atomic_at) that a killed process left in `dir`.  Only where no
 * writer can be live: under the store lock, or in a store being created.
 * Every temp is tried; -1 (a decree error naming the first) when one
 * could not be removed, which most callers may ignore: a temp costs only
 * space, and the next sweep tries it again. */
int repo_sweep_temps(const char *dir);

/* <rootdir>/<name> into out (PATH_MAX). */
void repo_file(char *out, const decree_store *s, const char *name);

#endif
