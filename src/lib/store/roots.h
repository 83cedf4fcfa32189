/*
 * roots.h - the attachments of a store: one directory roots/<key>/ per
 * project root it serves (records, caches, history, transaction log).
 *
 * The directory's name is the truth: roots/<key>/ serves the root whose
 * absolute path hashes to <key> (repo.h).  Its ROOT file names that path
 * for humans and for `decree projects`; during a move, ROOT.next names the
 * new path.  The path an attachment serves is whichever of ROOT and
 * ROOT.next hashes to the directory's key (roots_path), so every state a
 * move passes through is either wholly the old attachment or wholly the
 * new one (roots_move, docs/projects.md).
 */
#ifndef DECREE_ROOTS_H
#define DECREE_ROOTS_H

#include "util/buf.h"

#include <stdbool.h>

/* Hex digits of the key: the first 32 of SHA-256(root path). */
#define ROOTS_KEYLEN 32

/* <store_dir>/roots/<key of root> into out (PATH_MAX). */
void roots_dir(char *out, const char *store_dir, const char *root);

/* True when `root` hashes to the key `name` (a roots/ entry name). */
bool roots_key_matches(const char *name, const char *root);

/* The root path attachment `rootdir` serves (ROOT, or ROOT.next during a
 * move: the one that hashes to the directory's key).  DECREE_ENOTFOUND:
 * neither does (or neither exists). */
int roots_path(buf *out, const char *rootdir);

/* True when the attachment holds something that is not a cache: a
 * checkpoint record, an undo/redo history, an agent journal, a
 * transaction log, an unfinished removal or move, or any file decree
 * does not know (ROOT, the caches, temp files and empty checkpoints/ and
 * journal/ directories are all an unused attachment holds). */
int roots_in_use(bool *out, const char *rootdir);

/* Remove an attachment that holds only caches (roots_in_use false);
 * DECREE_EEXISTS when it does not.  The caller holds the store lock.  A
 * crash part-way leaves a directory with fewer caches (without ROOT it
 * serves nobody: the next gc removes it). */
int roots_remove_unused(const char *rootdir);

/*
 * Re-attach the attachment `from_dir` to `new_root`: afterwards it is
 * roots/<key of new_root>/ with ROOT = new_root.  The caller holds the
 * store lock and has checked that the target does not exist.  Steps:
 * ROOT.next = new_root (atomic write), rename of the directory (the
 * commit point) + fsync of roots/, rename of ROOT.next onto ROOT + fsync.
 */
int roots_move(const char *store_dir, const char *from_dir,
	       const char *new_root);

/* Finish a move interrupted after its commit point: when `rootdir` holds
 * a ROOT.next that hashes to its key, rename it onto ROOT.  A ROOT.next
 * that does not (a move interrupted before its commit point) is
 * removed. */
int roots_finish(const char *rootdir);

#endif
