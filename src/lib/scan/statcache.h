/*
 * statcache.h - the persistent stat cache of one project root.
 *
 * The cache is organised by directory.  For each directory the last scan
 * read, it holds the directory's own stat data and its whole listing
 * (every name with its d_type, ignored ones too), and for each regular
 * file or symlink of it the stat data (mode, size, mtime_ns, ctime_ns,
 * inode, device) and the object id of its content when last hashed.
 *
 * Two things are trusted from it, each only when nothing could have
 * changed unseen:
 *
 *   - a file's id, when all its stat fields match;
 *   - a directory's listing, when the directory's stat data match (a name
 *     created, removed or renamed in it changes its mtime and ctime), so
 *     the walk reads no directory entries (no getdents) for it.
 *
 * Both follow a racy-timestamp rule, stricter than git's: a fact is
 * trusted only if the file's mtime (the directory's ctime) is more than a
 * second older than the start of the scan that recorded it.  Then any
 * later change, even within the same clock tick as the scan's stat, gives
 * it a newer time.  The cache is only an accelerator: a damaged record is
 * treated as absent.
 *
 * A record written after a checkpoint also holds the id of the
 * directory's tree object and which of its subdirectories that tree
 * listed.  When a walk finds a directory clean, every file in it a cache
 * hit, the same subdirectories in the tree and each of those reusable in
 * turn, the recorded id is the directory's tree id now, and the
 * checkpoint does not build that tree again (statcache_tree_hints).
 */
#ifndef DECREE_STATCACHE_H
#define DECREE_STATCACHE_H

#include "store/snap.h"
#include "store/tree.h"

#include <sys/stat.h>

typedef struct statcache statcache;

/* Load the cache at `path` (and its delta, `path`.delta); missing or
 * damaged files give an empty cache.  The moment of the load is the start
 * of the scan that follows (the racy rule).  Fails only on out-of-memory.
 */
int statcache_load(statcache **out, const char *path);
void statcache_free(statcache *c);

enum { STATCACHE_BASE = 1, STATCACHE_DELTA = 2 };

/* One name of a directory listing: the walk's listing entries and the
 * cache's use this one type.  idx: the snap index of its entry once
 * stitched (STATCACHE_NO_ENTRY when it has none). */
typedef struct {
	const char *name;
	uint16_t len;	    /* strlen(name) */
	unsigned char type; /* d_type */
	bool sub;	    /* a subdirectory with entries in the snap */
	uint32_t idx;
} statcache_name;
#define STATCACHE_NO_ENTRY UINT32_MAX

/*
 * The record of one directory, opened by a walk.  Lookups of its names
 * must come in strcmp order (a listing's order): they advance a cursor,
 * so a directory costs one pass over its record.  Not shared between
 * threads (each walk job has its own).
 */
typedef struct {
	const void *t;		  /* the table holding it (internal) */
	const unsigned char *rec; /* NULL: the cache knows no such directory */
	uint32_t n;		  /* its names */
	uint32_t pos;		  /* the lookup cursor */
	int src;		  /* STATCACHE_BASE or STATCACHE_DELTA */
	bool listing;		  /* its names are the directory's now */
	uint32_t facts;		  /* names with file facts */
	uint32_t hits, misses;	  /* lookups made */
	uint32_t subs;		  /* names marked "subdirectory in the tree" */
	uint32_t sub_hits;	  /* ... that statcache_dir_sub found */
	bool tree_known;	  /* the record holds the tree id below */
	oid tree;
} statcache_dir;

/* Open the record of directory `path` ("" = the root) whose lstat data
 * are *st (NULL: unknown, the listing is not trusted). */
void statcache_dir_open(statcache *c, statcache_dir *d, const char *path,
			size_t len, const struct stat *st);

/*
 * After a walk looked up every name of directory d (stat data *st, or
 * NULL; its listing `names`): is the record still right, so that the
 * next save need not write it?  Yes when every fact hit, the stat data and
 * names are the recorded ones, and the listing was trusted or could not
 * be yet (changed within a tick of this scan's start: writing it again
 * would not make it trusted).
 */
bool statcache_dir_clean(const statcache *c, const statcache_dir *d,
			 const struct stat *st, const statcache_name *names,
			 size_t n);

/* Name i of an open record (NUL-terminated, inside the cache). */
statcache_name statcache_dir_name(const statcache_dir *d, uint32_t i);

/* If `probe` (mode, size, stat fields set) matches the clean record of
 * `name` in d, copy its id into *id and return d->src; 0 on a miss. */
int statcache_dir_lookup(statcache_dir *d, const char *name,
			 const snap_entry *probe, oid *id);

/* Is `name` (an included subdirectory; same order rule as lookups)
 * marked in d's record as a subdirectory its tree listed? */
bool statcache_dir_sub(statcache_dir *d, const char *name);

/* The same for one path, without a walk (workspace copies): slower. */
int statcache_lookup(statcache *c, const char *path, const snap_entry *probe,
		     oid *id);

/*
 * What a scan saw of one directory, handed to the cache for the next save
 * (statcache_note_dir takes ownership of path, names and blocks, also on
 * failure).  clean: its record was opened from table `src`, its listing
 * trusted, and every fact of it hit, so it need not be written again.
 */
typedef struct {
	char *path;
	bool stat_ok; /* the directory's stat data below are known */
	int64_t mtime_ns, ctime_ns;
	uint64_t ino, dev;
	statcache_name *names; /* strcmp order; idx filled */
	size_t n;
	char *names_block; /* owned storage of the names, or NULL */
	int src;
	bool clean;
	/* its place in statcache_tree_hints (SIZE_MAX: no entries below it,
	 * no tree), and whether its record says the same of the tree (a
	 * tree id exactly when it has a place, the same subdirectories
	 * marked) with id tree_old */
	size_t slot;
	bool tree_same;
	oid tree_old;
} statcache_note;
int statcache_note_dir(statcache *c, statcache_note *n);

/*
 * The directories of the snap the scan stitched, in tree_write_ids'
 * order (only those with entries below them), each `known` with the id
 * its record vouches for.  The scan hands them over (ownership too);
 * statcache_tree_hints gives them to the checkpoint's tree builder, and
 * statcache_trees_built takes the ids it built for the next save, which
 * then records every directory's tree id.  Without statcache_trees_built
 * a save records none (and keeps those of records it does not rewrite:
 * they are used only when everything below them is vouched for too).
 */
void statcache_set_hints(statcache *c, tree_ids *hints);
const tree_ids *statcache_tree_hints(const statcache *c);
void statcache_trees_built(statcache *c, const tree_ids *ids);

/* The check of a record and of the header (docs/format.md). */
uint64_t statcache_check64(const void *data, size_t n);

/* fsck: NULL when `data` is a sound cache file (version 2, or an older
 * decree's version 1, which is ignored), else what is wrong. */
const char *statcache_verify(const void *data, size_t len);

/* True when the last scan with `c` produced `s` and every directory was
 * clean, so that saving would write the same facts again. */
bool statcache_unchanged(const statcache *c, const snap *s);

/* Write the stat data of snap s atomically to `path` as a new base (and
 * remove the delta); directory listings are not known (not trusted). */
int statcache_save(const char *path, const snap *s);

/* Save after a scan made with `c` (may be NULL) whose result is s: nothing
 * when nothing changed, the changed directories as a small delta when
 * they are few, a new base otherwise.  The facts written are s's. */
int statcache_update(const char *path, const snap *s, statcache *c);

#endif
