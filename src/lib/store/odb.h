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
 * Trust: odb_check() says whether an intact copy exists without reading
 * sealed packs; writers dedup only against intact copies.
 *
 * Formats are documented byte by byte in docs/format.md.
 */
#ifndef DECREE_ODB_H
#define DECREE_ODB_H

#include "decree/store.h"
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

/* Is some copy of the object listed (not verified)? */
bool odb_has(odb *db, const oid *id);

/*
 * Does an intact copy of the object exist?  A copy in a sealed pack is
 * intact without reading it; the first question about a pack that is not
 * sealed verifies that pack in full (see odb.c).  1 yes, 0 no (missing or
 * every copy damaged), or an error (I/O, memory).  Thread-safe.
 */
int odb_check(odb *db, const oid *id);

/* True when every pack is sealed or verified intact, none is broken and
 * none vanished: then every listed object is intact (odb_check says 1). */
bool odb_all_trusted(odb *db);

/* Write packs/sealed if this handle verified a pack intact.  Caller holds
 * the store lock.  Never fails (it is only a record of work done). */
void odb_seal(odb *db);

/* Number of packs whose index cannot be loaded (their objects are
 * invisible; odb_verify names them). */
size_t odb_broken_count(const odb *db);

/* Read and verify an object (every copy until one verifies); `type_out`
 * may be NULL.  ENOTFOUND/ECORRUPT. */
int odb_read(buf *out, int *type_out, odb *db, const oid *id);

/* Read and verify an object into fd (from its offset; the caller gives a
 * fresh file) in bounded memory, leaving holes for zero blocks, the file
 * cut to the object's size; fd -1 only verifies.  Every copy is tried
 * until one verifies.  ENOTFOUND/ECORRUPT. */
int odb_read_to_fd(odb *db, const oid *id, int fd, const char *name);

/* Size of an object without reading it.  ENOTFOUND. */
int odb_size(uint64_t *size_out, odb *db, const oid *id);

/*
 * Advise the kernel that the object (its newest copy) will be read soon
 * (posix_fadvise WILLNEED starts reading it in).  A reader of many objects
 * calls it for all of them first: when the pack's pages are not in memory
 * the disk then reads them together instead of one wait per object.  Only
 * advice, and only for objects below ODB_STREAM_MIN: an unknown id or a
 * refusal changes nothing.  Thread-safe.
 */
void odb_prefetch(odb *db, const oid *id);

int odb_writer_new(odb_writer **out, odb *db);
/* Add an object; `id` is its SHA-256 if already known (else computed and
 * returned through id_out, which may be NULL).  Thread-safe. */
int odb_writer_add(odb_writer *w, int type, const void *data, size_t len,
		   const oid *id, oid *id_out);
/* odb_check in the store w writes to (what w has added but not
 * committed does not count). */
int odb_writer_check(odb_writer *w, const oid *id);
/* Objects of this size or more are streamed (odb_writer_add_fd,
 * odb_read_to_fd): never held in memory whole. */
#define ODB_STREAM_MIN ((uint64_t)8 << 20)
/* Add `size` bytes of fd (from its current offset) in bounded memory.
 * `known`: their SHA-256 from a first pass; nothing is written when an
 * intact copy exists.  *id_out: the id of the bytes read (differs from
 * known if the file changed since).  A failure here fails the writer.
 * Thread-safe (holds the writer for the duration). */
int odb_writer_add_fd(odb_writer *w, int type, int fd, uint64_t size,
		      const oid *known, oid *id_out, const char *name);
/* Make the pack durable and visible (no-op when nothing was added). */
int odb_writer_commit(odb_writer *w);
/* Drop everything written so far; always safe, also after commit. */
void odb_writer_free(odb_writer *w);
/* From now on, add only objects in `only` (borrowed; NULL: all). */
void odb_writer_restrict(odb_writer *w, const oidset *only);

/* Iteration over every stored object (fsck, gc). */
typedef int (*odb_foreach_fn)(void *payload, const oid *id, int type,
			      uint64_t raw_len, const char *pack_name);
int odb_foreach(odb *db, odb_foreach_fn fn, void *payload);

/* Verify everything (fsck): every pack's header, index checksum and
 * order, every copy of every object re-hashed (seals are not trusted);
 * report each problem via `fn` (payload, what: a file path or an object
 * id, message), packs whose index cannot be loaded included.  Returns the
 * number of damaged packs, or an error (I/O, memory). */
typedef void (*odb_damage_fn)(void *payload, const char *what, const char *msg);
int odb_verify(odb *db, odb_damage_fn fn, void *payload);
/* The same, reporting DECREE_PROGRESS_VERIFY (objects verified, pack by
 * pack) to `progress` (may be NULL). */
int odb_verify_progress(odb *db, odb_damage_fn fn, void *payload,
			decree_progress_fn progress, void *progress_payload);

/*
 * fsck --repair: rewrite every damaged pack, every pack whose index cannot
 * be loaded and every .pack whose .idx is missing into one new pack that
 * holds each copy that still verifies (found through the index, or by
 * walking the pack) and is not intact elsewhere; then delete them.  Each
 * rewritten pack is reported via `fn`.  Caller holds the store lock.
 * Returns the number of packs rewritten, or an error.
 */
int odb_salvage(odb *db, odb_damage_fn fn, void *payload);

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
 * Remove the temp files a killed writer left in the pack directory (a
 * pack, an index or packs/sealed being written).  Only under the store
 * lock, where no writer is live: recovery (txn_lock) calls it.  A .pack
 * without its .idx is left for gc or fsck --repair (it may be salvaged).
 */
void odb_sweep_temps(odb *db);

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
