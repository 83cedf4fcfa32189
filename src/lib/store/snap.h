/*
 * snap.h - a snapshot as a flat list of entries in canonical order.
 *
 * Canonical order compares paths byte by byte with '/' sorting before every
 * other byte, so that the contents of a directory directly follow each
 * other and the order equals a depth-first walk with children sorted by
 * strcmp.  Trees (tree.h) are the stored form; snaps are the working form
 * used to compare, plan restores and write the stat cache.
 */
#ifndef DECREE_SNAP_H
#define DECREE_SNAP_H

#include "util/arena.h"
#include "util/sha256.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A regular file's mode is MODE_REG | its permission bits (all of 0777:
 * a 0600 secret stays 0600).  MODE_FILE and MODE_EXEC are the two modes a
 * version 1 tree could hold, and the default for a new file. */
#define MODE_REG  0100000u
#define MODE_PERM 0777u
#define MODE_FILE 0100644u
#define MODE_EXEC 0100755u
#define MODE_LINK 0120000u
#define MODE_DIR  0040000u
#define MODE_SKIP 0u /* recorded but not stored: above the size limit */

static inline bool mode_is_file(uint32_t m)
{
	return (m & ~MODE_PERM) == MODE_REG;
}

/* The mode recorded for a regular file of lstat mode `st_mode`. */
static inline uint32_t mode_of_file(unsigned st_mode)
{
	return MODE_REG | (st_mode & MODE_PERM);
}

typedef struct {
	char *path; /* owned by the snap's arena */
	uint32_t mode;
	uint64_t size;
	oid id;
	/* stat data, only filled by a scan (stat cache) */
	int64_t mtime_ns, ctime_ns;
	uint64_t ino, dev;
	uint8_t cached;	  /* scan: where the stat cache vouched for id
			     (statcache.h) */
	uint8_t unhashed; /* scan_opts.lazy_hash: id unknown (zero); compares
			     unequal to everything */
} snap_entry;

typedef struct {
	snap_entry *v;
	size_t n, cap;
	arena paths; /* every entry's path */
} snap;

#define SNAP_INIT                      \
	{                              \
		NULL, 0, 0, ARENA_INIT \
	}

struct stat;
/* Set e's stat data (mtime, ctime, inode, device: what the stat cache
 * compares) from *st. */
void snap_entry_set_stat(snap_entry *e, const struct stat *st);

/* Append an entry; the path is copied.  Returns the new entry or NULL. */
snap_entry *snap_add(snap *s, const char *path, size_t len);
/* Append a copy of *e whose path the snap already owns (in s->paths,
 * e.g. adopted with arena_adopt).  0 or -1. */
int snap_push(snap *s, const snap_entry *e);
/* Room for n more entries.  0 or -1. */
int snap_reserve(snap *s, size_t n);
void snap_sort(snap *s);
void snap_release(snap *s);
/* Binary search (the snap must be sorted). */
snap_entry *snap_find(const snap *s, const char *path);
int path_cmp(const char *a, const char *b);

static inline bool snap_entry_is_stored(const snap_entry *e)
{
	return e->mode != MODE_SKIP;
}

/* Same content and mode (skipped entries compare by size only). */
bool snap_entry_same(const snap_entry *a, const snap_entry *b);

/*
 * Walk two sorted snaps in step and call fn for every path whose entry
 * differs (a or b NULL when absent on that side).  A non-zero return of fn
 * stops the walk and is returned.
 */
typedef int (*snap_diff_fn)(void *payload, const char *path,
			    const snap_entry *a, const snap_entry *b);
int snap_diff(const snap *a, const snap *b, snap_diff_fn fn, void *payload);

/* snap_diff where the ranges skip[0..nskip) of b ([start, end) indexes,
 * in order) are known to be the same as in a, which lacks them: they are
 * passed over unread. */
int snap_diff_skip(const snap *a, const snap *b, const size_t (*skip)[2],
		   size_t nskip, snap_diff_fn fn, void *payload);

/* Is `p` one of `paths` or below one of them?  paths NULL-terminated;
 * NULL selects everything. */
bool snap_path_selected(const char *const *paths, const char *p);

/* Deep copy of src into an empty dst.  0 or -1. */
int snap_copy(snap *dst, const snap *src);

/* Totals over stored entries. */
void snap_totals(const snap *s, uint64_t *files, uint64_t *bytes);

#endif
