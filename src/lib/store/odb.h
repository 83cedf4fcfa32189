/*
 * odb.h - the content-addressed object database.
 *
 * Objects are named by the SHA-256 of their raw bytes and live in pack
 * files under <store>/packs/: "pack-<name>.pack" holds the (optionally zstd
 * compressed) bytes, "pack-<name>.idx" a sorted index.  A pack becomes
 * visible only when its .idx has been renamed into place, so readers never
 * see a half-written pack.  Packs are immutable; gc rewrites them.
 *
 * Writing: an odb_writer collects new objects of one operation into one
 * pack.  odb_writer_add() may be called from several threads at once.
 * Objects already in the store (or already added) are not written again.
 * Reading: odb_read() decompresses and re-verifies the hash every time.
 *
 * Formats are documented byte by byte in docs/format.md.
 */
#ifndef DECREE_ODB_H
#define DECREE_ODB_H

#include "util/buf.h"
#include "util/oidset.h"
#include "util/sha256.h"

enum odb_type {
	ODB_BLOB = 1,
	ODB_TREE = 2,
};

typedef struct odb odb;
typedef struct odb_writer odb_writer;

/* Open the object database in `packdir` (created if missing). */
int odb_open(odb **out, const char *packdir);
void odb_free(odb *db);

/* Re-read the pack directory (after another process or gc changed it). */
int odb_refresh(odb *db);

bool odb_has(odb *db, const oid *id);

/* Read and verify an object; `type_out` may be NULL.  ENOTFOUND/ECORRUPT. */
int odb_read(buf *out, int *type_out, odb *db, const oid *id);

/* Size of an object without reading it.  ENOTFOUND. */
int odb_size(uint64_t *size_out, odb *db, const oid *id);

int odb_writer_new(odb_writer **out, odb *db);
/* Add an object; `id` is its SHA-256 if already known (else computed and
 * returned through id_out, which may be NULL).  Thread-safe. */
int odb_writer_add(odb_writer *w, int type, const void *data, size_t len,
		   const oid *id, oid *id_out);
/* Make the pack durable and visible (no-op when nothing was added). */
int odb_writer_commit(odb_writer *w);
/* Drop everything written so far; always safe, also after commit. */
void odb_writer_free(odb_writer *w);

/* Iteration over every stored object (fsck, gc). */
typedef int (*odb_foreach_fn)(void *payload, const oid *id, int type,
			      uint64_t raw_len, const char *pack_name);
int odb_foreach(odb *db, odb_foreach_fn fn, void *payload);

/* Verify the checksum of every index; report damaged packs via `fn`
 * (payload, pack name, message).  Returns the number of damaged packs. */
typedef void (*odb_damage_fn)(void *payload, const char *what, const char *msg);
int odb_verify_indexes(odb *db, odb_damage_fn fn, void *payload);

/*
 * Garbage collection: rewrite the store so that it holds exactly the
 * objects in `keep`.  Packs containing no dead object are left alone;
 * others are rewritten into one new pack and then deleted.  Orphan files
 * (.pack without .idx, temp files) are removed.  With dry_run nothing is
 * changed.  Reports dead objects and bytes (stored size) freed.
 */
int odb_gc(odb *db, const oidset *keep, bool dry_run, uint64_t *objects_freed,
	   uint64_t *bytes_freed);

/*
 * Keep lookups cheap: when more than max_packs packs exist, merge every
 * pack smaller than small_bytes into one (objects are copied as stored).
 * Called after writes, under the store lock.
 */
int odb_repack_small(odb *db, size_t max_packs, uint64_t small_bytes);

/* Number of packs currently visible (for tests and repack decisions). */
size_t odb_pack_count(odb *db);

/* Compression level used for new objects (default 1; DECREE_ZSTD_LEVEL
 * overrides). */
extern int odb_zstd_level;

#endif
