/*
 * wal.h - an append-only log of checksummed records.
 *
 * File: a 32-byte header ("DECRWAL\0", u32 version, u32 0, u64 salt,
 * u64 0) then records { u32 len, u32 type, payload[len], u64 sum }, where
 * sum is the first 8 bytes (little endian) of
 * SHA-256(prev_sum || salt || type || len || payload) and prev_sum of the
 * first record is the salt.  The chain makes a record valid only in its
 * place in this log: a stale record from an earlier log with another salt,
 * or a torn write, fails the check.  Reading stops at the first invalid
 * record; everything from there on is the torn tail and is cut.
 */
#ifndef DECREE_WAL_H
#define DECREE_WAL_H

#include "util/buf.h"
#include <stdbool.h>

typedef struct wal wal;

typedef struct {
	unsigned type;
	const unsigned char *data;
	size_t len;
} wal_record;

/* Create a new log at `path` (must not exist); header written + fsynced,
 * directory fsynced. */
int wal_create(wal **out, const char *path);
/* Buffer a record; nothing is durable before wal_sync. */
int wal_append(wal *w, unsigned type, const void *data, size_t len);
/* Write buffered records and fsync. */
int wal_sync(wal *w);
/* The length of the log as the last successful wal_sync left it. */
size_t wal_synced_length(const wal *w);
/* Cut the log back to `len` (a wal_synced_length) and fsync: records
 * written by a wal_sync that failed (its write landed, its fsync did not)
 * must not be read as durable ones. */
int wal_truncate(wal *w, size_t len);
void wal_close(wal *w);

/*
 * Parse a log image.  *recs points into `data` (valid while it lives);
 * *valid_len is the length of the valid prefix (header + good records);
 * *torn tells whether bytes follow it.  DECREE_ECORRUPT only when the
 * header itself is bad.
 */
int wal_parse(wal_record **recs, size_t *nrecs, size_t *valid_len, bool *torn,
	      const void *data, size_t len);

/* Read `path`, parse it, and cut a torn tail off the file (fsynced). */
int wal_load(buf *data, wal_record **recs, size_t *nrecs, const char *path);

/* Remove the log and fsync its directory. */
int wal_remove(const char *path);

#endif
