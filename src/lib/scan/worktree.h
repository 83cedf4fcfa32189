/*
 * worktree.h - scanning the project root of a store the way every
 * operation must see it: the store's size limit and extra excludes, the
 * store directory skipped when it lies inside the tree, and the stat cache
 * of the root (<rootdir>/statcache) deciding what is hashed again.
 */
#ifndef DECREE_WORKTREE_H
#define DECREE_WORKTREE_H

#include "decree/store.h"
#include "scan/ignore.h"
#include "store/odb.h"
#include "store/snap.h"
#include "util/arena.h"
#include "util/buf.h"

#include <pthread.h>

struct statcache;

/* Scan the working tree with the stat cache; with w, contents are stored.
 * With cache_out the loaded cache is handed to the caller (for
 * worktree_save_statcache), else freed.  With `rules`, the ignore files
 * are those of that snapshot instead of the ones on disk: the tree as the
 * snapshot's rules see it (what a restore to it or a diff against it
 * must cover).  lazy_hash: see scan_opts. */
int worktree_scan(snap *out, decree_store *s, odb_writer *w,
		  struct statcache **cache_out, const snap *rules,
		  bool lazy_hash);

/*
 * The scan rules of a checkpoint (its record's, record.h; or create's
 * options): the config's excludes it was made with, then its own
 * excludes after them (so where both speak, the checkpoint's decide, as
 * a command line beats a config file), and a size limit that replaces
 * the store's.  Scanning for a comparison with a checkpoint with its
 * view makes the working tree look the way the checkpoint's own scan
 * did: a restore never deletes what its rules left out, even after the
 * config's excludes changed.  A record written before decree kept the
 * config's excludes (config_known false) is compared with the store's
 * excludes of today, as it always was.
 */
typedef struct {
	const char *const *excludes; /* NULL-terminated, or NULL: none */
	uint64_t max_file_size;	     /* 0: the store's */
	/* config_known: the config's excludes are `config` (NULL: none),
	 * not the store's of today */
	const char *const *config;
	bool config_known;
} worktree_view;

/* The config's excludes a scan with `view` starts from: the view's when
 * it knows them, else the store's (NULL-terminated, or NULL: none). */
const char *const *worktree_view_config(const worktree_view *view,
					const decree_store *s);

/* worktree_scan with a checkpoint's view (NULL: the store's rules). */
int worktree_scan_view(snap *out, decree_store *s, odb_writer *w,
		       struct statcache **cache_out, const snap *rules,
		       bool lazy_hash, const worktree_view *view);

/*
 * Scanning with the rules files on disk, to check them against a
 * snapshot's afterwards.  A comparison with a checkpoint must scan the
 * tree the way the checkpoint's ignore rules see it; reading the
 * checkpoint's whole tree before the walk, to get those rules, costs a
 * store read per directory, while after the walk, with the walk's tree
 * ids, only the directories that differ are read.  So the walk uses the
 * rules files on disk and notes each one it looked for (worktree_seen);
 * the caller then asks worktree_seen_match whether each is as the
 * checkpoint holds it (the same bytes, or absent from both).  When all
 * are, the walk decided every path as the checkpoint's rules decide it
 * (in each directory it entered it asked for both rules files of that
 * directory and of each one above it); otherwise the caller walks again
 * with the checkpoint's rules.
 */
typedef struct {
	char *path; /* "dir/name" */
	bool found;
	oid id; /* of its bytes, when found */
} worktree_seen_file;

typedef struct {
	pthread_mutex_t mu; /* the walk notes from several threads */
	worktree_seen_file *v;
	size_t n, cap;
	arena paths;	 /* v's paths */
	bool unreadable; /* a rules file could not be read */
} worktree_seen;

void worktree_seen_init(worktree_seen *ws);
void worktree_seen_release(worktree_seen *ws);

/* worktree_scan_view with the rules files on disk (no `rules`), every
 * one the walk looked for noted in `seen` (scan_opts.ignore_seen). */
int worktree_scan_seen(snap *out, decree_store *s, odb_writer *w,
		       struct statcache **cache_out, const worktree_view *view,
		       bool lazy_hash, worktree_seen *seen);

/* The snapshot's entry at `path`, or NULL when it has none. */
typedef const snap_entry *(*worktree_lookup_fn)(void *payload,
						const char *path);

/* Was every rules file the walk looked for as the snapshot that `lookup`
 * answers for holds it, read as worktree_rules_load reads it (an entry
 * skipped as too large, or a symlink, is no rules file)?  False too when
 * one could not be read. */
bool worktree_seen_match(const worktree_seen *ws, worktree_lookup_fn lookup,
			 void *payload);

/* The excludes a scan with `view` uses (the config's, then view's),
 * NULL-terminated into *out, or NULL when there are none: free the array
 * with decree_free (the strings are borrowed). */
int worktree_excludes(const char ***out, const decree_store *s,
		      const worktree_view *view);

/* The same view (equal excludes, in order, size limit and config's
 * excludes)?  NULL is the view with no rules and the store's config. */
bool worktree_view_same(const worktree_view *a, const worktree_view *b);

/* An ignore_load_fn reading .gitignore/.decreeignore from a snapshot,
 * set up by worktree_rules_init: it indexes the snapshot's rules files,
 * so that a lookup (a scan asks twice per directory) searches those, not
 * the whole snapshot. */
typedef struct {
	odb *db;
	snap files; /* s's rules files, in its order (their paths are s's:
		       s must outlive it) */
} worktree_rules;
int worktree_rules_init(worktree_rules *r, const snap *s, odb *db);
void worktree_rules_release(worktree_rules *r);
int worktree_rules_load(void *payload, const char *dir, const char *name,
			buf *out, bool *found);
/* The rules file at `path` ("dir/.gitignore") as worktree_rules_load reads
 * it: its entry, or NULL when the snapshot has none there that is read as
 * one (skipped as too large, or a symlink). */
const snap_entry *worktree_rules_file(const worktree_rules *r,
				      const char *path);

/*
 * A tree (a checkpoint's) against the working tree as that tree's rules
 * and `view` see it: what differs, path by path.  Only the tree's
 * directories whose ids differ from the walk's are read from the store
 * (tree_diff_like), the walk using the rules files on disk (worktree_seen);
 * when one of them is not the tree's, the tree is read whole and walked
 * again with its rules.  A tree the handle holds (repo_tree_cached) is
 * walked with its rules at once.
 */
typedef struct {
	const char *path;
	const snap_entry *a, *b; /* the tree's, the walk's (NULL: none) */
} worktree_change;

typedef struct {
	snap walk; /* the working tree */
	snap keep; /* the tree's entries in the directories read */
	/* what differs, in path order (path_cmp's); the entries live in
	 * walk, keep or the handle's cached tree (until the next repo_tree on
	 * the handle) */
	worktree_change *v;
	size_t n, cap;
	worktree_change *rules; /* of those, the rules files (in that order) */
	size_t nrules, rulescap;
	worktree_rules walk_rules; /* the walk's rules files */
	odb *db;
} worktree_cmp;

/* Compare (see above).  With w the walk's new contents are stored; with
 * cache_out the walk's stat cache is handed over (for its save, or a
 * checkpoint's hints); lazy_hash: see scan_opts.  Release c whatever the
 * result. */
int worktree_compare(worktree_cmp *c, decree_store *s, odb_writer *w,
		     struct statcache **cache_out, const oid *tree,
		     const worktree_view *view, bool lazy_hash);
void worktree_cmp_release(worktree_cmp *c);
/* The tree's entry at `path` (NULL: none): the one noted as different,
 * else the walk's, which is the same. */
const snap_entry *worktree_cmp_tree_entry(const worktree_cmp *c,
					  const char *path);
/* An ignore_load_fn (payload: the worktree_cmp) reading the tree's rules
 * files, as worktree_rules_load reads a snapshot's. */
int worktree_cmp_rules_load(void *payload, const char *dir, const char *name,
			    buf *out, bool *found);

/* worktree_compare, fn called for each difference (a from the tree, b from
 * the walk); the entries fn gets live in *keep, *walk (emptied first; the
 * caller releases both) or the handle's cached tree, until the next
 * repo_tree on the handle.  fn's non-zero result stops and is returned. */
int worktree_diff_tree(snap *keep, snap *walk, decree_store *s, const oid *tree,
		       const worktree_view *view, bool lazy_hash,
		       snap_diff_fn fn, void *payload);

/* Save the stat cache from a scan made with `cache` unless nothing changed.
 * Frees the cache. */
int worktree_save_statcache(decree_store *s, const snap *cur,
			    struct statcache *cache);

/*
 * worktree_save_statcache on another thread: start it once what the cache
 * may name is durable (the objects of cur), and wait before cur changes or
 * goes.  Runs at once when no thread can be started.  The wait returns 0,
 * or the save's error code with its message in sv->msg (the error slot is
 * left alone: only a cache, the caller decides whether to say so).  A
 * saver that was never started waits for nothing.
 */
typedef struct {
	char path[PATH_MAX];
	const snap *cur;
	struct statcache *cache;
	pthread_t thread;
	bool running;
	int r; /* the save's result, and its message */
	char msg[512];
} worktree_saver;
void worktree_save_statcache_start(worktree_saver *sv, decree_store *s,
				   const snap *cur, struct statcache *cache);
#define WORKTREE_SAVER_INIT                     \
	{                                       \
		{ 0 }, NULL, NULL, 0, false, 0, \
		{                               \
			0                       \
		}                               \
	}
int worktree_save_statcache_wait(worktree_saver *sv);

#endif
