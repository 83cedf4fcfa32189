/*
 * scan.h - walk a project root into a snapshot.
 *
 * src/lib/scan reads the working tree: the walk (scan), the ignore rules
 * (ignore), the stat cache (statcache) and the store's view of its root
 * (worktree).  It uses src/util and store/ and never writes to the tree;
 * into the store it writes file contents (through a caller's odb_writer)
 * and the stat cache.
 *
 * The walk is rooted at an open directory fd and never follows a symlink:
 * directories are opened with openat(O_NOFOLLOW|O_DIRECTORY), file contents
 * with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS).  Recorded: regular
 * files (mode 644 or 755 from the owner-exec bit), symlinks (content = the
 * link target) and files above the size limit (MODE_SKIP).  Skipped without
 * descending: ".decree" at the root, every ".git", ignored paths (ignore.h).
 * File contents are hashed (and with a writer, stored) on a thread pool;
 * the stat cache avoids reading unchanged files at all.
 */
#ifndef DECREE_SCAN_H
#define DECREE_SCAN_H

#include "decree/store.h"
#include "scan/ignore.h"
#include "store/odb.h"
#include "store/repo.h"
#include "store/snap.h"
#include "scan/statcache.h"

#define SCAN_DEFAULT_MAX_SIZE (50ull * 1024 * 1024)

typedef struct {
	uint64_t max_file_size;	     /* 0: SCAN_DEFAULT_MAX_SIZE */
	const char *const *excludes; /* extra patterns (config), or NULL */
	unsigned threads;	     /* 0: scan_default_threads */
	odb_writer *store;	     /* store contents of hashed files */
	statcache *cache;	     /* may be NULL; counts hits */
	const char *skip_dir;	     /* a directory never scanned (the store
					when it lives inside the root), or NULL */
	/* where .gitignore/.decreeignore contents come from; NULL: the files
	 * on disk.  Called from several threads at once. */
	ignore_load_fn ignore_load;
	void *ignore_payload;
	/* (may be NULL; only with ignore_load NULL) told of every rules file
	 * the walk looked for on disk: what it read, or found false.  Called
	 * from several threads at once, maybe more than once per file; an
	 * error it returns stops the walk. */
	ignore_seen_fn ignore_seen;
	void *ignore_seen_payload;
	/* Do not read files the stat cache cannot vouch for: their entries
	 * get unhashed = 1 and no id (for a diff, which reads them anyway).
	 * Not with `store`. */
	bool lazy_hash;
	/* (may be NULL) filled with what the scan saw besides the snapshot:
	 * how many entries the ignore rules excluded, and which rule
	 * excluded most */
	repo_scan_info *stats;
	/* (may be NULL) DECREE_PROGRESS_SCAN reports, on the calling thread
	 * (it works through the queue too, and wakes every 100 ms while the
	 * others do) */
	decree_progress_fn progress;
	void *progress_payload;
} scan_opts;

/* The walk's threads when none are asked for: two per online CPU (at
 * most SCAN_MAX_DEFAULT_THREADS).  A walk is short and made of system
 * calls; with one thread per CPU the scheduler often keeps both on one
 * CPU for the whole walk (docs/scanning.md, measured). */
#define SCAN_MAX_DEFAULT_THREADS 64
unsigned scan_default_threads(long ncpu);

/* Scan the tree below rootfd into `out` (sorted, canonical order). */
int scan_tree(snap *out, int rootfd, const scan_opts *o);

/* Read and store one file below rootfd (used to capture ignored files
 * before they are overwritten).  Fills mode/size/id of *e. */
int scan_capture_path(snap_entry *e, int rootfd, const char *path,
		      odb_writer *store);

#endif
