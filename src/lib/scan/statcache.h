/*
 * statcache.h - the persistent stat cache of one project root.
 *
 * Maps a path to (mode, size, mtime_ns, ctime_ns, inode, device) and the
 * object id of its content when last hashed.  A scan trusts the cached id
 * only if all stat fields match and the entry is not "racy": an entry whose
 * mtime falls in the same second as (or after) the moment the cache was
 * written is re-hashed, because a later write in that second could have
 * left mtime unchanged (git's racy-timestamp rule).  The cache is only an
 * accelerator: a damaged file is treated as empty.
 */
#ifndef DECREE_STATCACHE_H
#define DECREE_STATCACHE_H

#include "store/snap.h"

typedef struct statcache statcache;

/* Load the cache at `path`; a missing or damaged file gives an empty
 * cache.  Fails only on out-of-memory. */
int statcache_load(statcache **out, const char *path);
void statcache_free(statcache *c);

enum { STATCACHE_BASE = 1, STATCACHE_DELTA = 2 };

/* If `probe` (mode, size, stat fields set) matches a clean entry for
 * `path`, copy its id into *id and return where it was found
 * (STATCACHE_BASE or STATCACHE_DELTA); 0 on a miss.  Counts hits and
 * misses; safe to call from several threads at once. */
int statcache_lookup(statcache *c, const char *path, const snap_entry *probe,
		     oid *id);

/* True when `s` was scanned with this cache and every entry hit, so that
 * saving would write the same facts again (the save can be skipped). */
bool statcache_unchanged(const statcache *c, const snap *s);

/* Write the stat entries of a scanned snap atomically to `path` as a new
 * base (and remove the delta). */
int statcache_save(const char *path, const snap *s);

/* Save after a scan made with `c` (may be NULL): nothing when nothing
 * changed, a small delta when few entries changed (snap_entry.cached tells
 * which came from the base), a new base otherwise. */
int statcache_update(const char *path, const snap *s, const statcache *c);

#endif
