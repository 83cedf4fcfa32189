/*
 * ckpt.h - scanning the working tree with the stat cache, and writing a
 * checkpoint (checkpoint.c); checkpoint records are in store/record.h.
 */
#ifndef DECREE_CKPT_H
#define DECREE_CKPT_H

#include "decree/checkpoint.h"
#include "store/odb.h"
#include "store/record.h"
#include "store/snap.h"

/* Scan the working tree with the stat cache; with w, contents are stored.
 * With cache_out the loaded cache is handed to the caller (for
 * ckpt_save_statcache), else freed.  With `rules`, the ignore files are
 * those of that snapshot instead of the ones on disk: the tree as the
 * snapshot's rules see it (what a restore to it or a diff against it
 * must cover).  lazy_hash: see scan_opts. */
struct statcache;
int ckpt_scan(snap *out, decree_store *s, odb_writer *w,
	      struct statcache **cache_out, const snap *rules, bool lazy_hash);

/* An ignore_load_fn reading .gitignore/.decreeignore from a snapshot. */
typedef struct {
	const snap *s;
	odb *db;
} ckpt_rules;
int ckpt_rules_load(void *payload, const char *dir, const char *name, buf *out,
		    bool *found);

/* Write trees of `cur` through w, commit w, write the record.  Returns
 * the new id in id_out.  The caller holds the lock. */
int ckpt_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
	       odb_writer *w, const snap *cur, const char *session,
	       const char *message, const char *label);

/* Save the stat cache from a scan made with `cache` unless nothing changed.
 * Frees the cache. */
int ckpt_save_statcache(decree_store *s, const snap *cur,
			struct statcache *cache);

#endif
