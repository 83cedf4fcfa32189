/*
 * wal.h - a log of individually checksummed records that appears on disk
 * only once its first part, the plan, is complete and durable.
 *
 * File (docs/format.md): a 40-byte header
 *   "DECRWAL\0" (8), version u32 (2), nplan u32, salt u64, plan_len u64,
 *   sum u64 = the first 8 bytes (little endian) of SHA-256(bytes 0..31)
 * then records { u32 len, u32 type, u32 seq, payload[len], u64 sum },
 * where seq numbers the records from 0 and sum is the first 8 bytes of
 * SHA-256(salt || seq || type || len || payload).  The plan is the first
 * nplan records, plan_len bytes from the end of the header.
 *
 * A record is valid on its own: its salt ties it to this log (a stale
 * record of an earlier log fails the check), its seq to its place.  So
 * damage to one record does not hide the records after it; a reader
 * steps over a bad record by its length, or searches for the next valid
 * one when the length itself is bad.
 *
 * Writing: wal_create() opens a temp file next to `path`; the first
 * wal_sync() writes the header and the records appended so far (the
 * plan), fsyncs, renames the temp to `path` and fsyncs the directory.  So
 * `path` exists only with a complete, durable plan: a reader that cannot
 * read the whole plan of a log at `path` is looking at damage, never at
 * a torn write, and must not assume that nothing happened.  Later
 * wal_sync() calls append and fsync.
 */
#ifndef DECREE_WAL_H
#define DECREE_WAL_H

#include "util/buf.h"
#include <stdbool.h>
#include <stdint.h>

#define WAL_VERSION 2

typedef struct wal wal;

typedef struct {
	unsigned type;
	uint32_t seq;
	const unsigned char *data;
	size_t len;
} wal_record;

/* What a log image holds (wal_parse). */
typedef struct {
	/* non-zero: a log of another format version (version 1, or a
	 * header whose checksum holds with another version), which this
	 * code cannot read; nothing else is filled in */
	unsigned other_version;
	bool header_ok;	  /* magic, WAL_VERSION and the header checksum */
	uint32_t nplan;	  /* header_ok: records in the plan */
	wal_record *recs; /* every valid record, in file order (owned;
			     the data points into the image) */
	size_t nrecs;
	bool plan_complete; /* header_ok, and the plan's records are all
			       there: seq 0..nplan-1, back to back from the
			       header, ending at its plan_len */
	size_t skipped;	    /* bytes that are no valid record (a torn tail
			       included) */
} wal_contents;

/* Start a log for `path` (which must not exist): a temp file next to it;
 * nothing is at `path` before the first wal_sync. */
int wal_create(wal **out, const char *path);
/* Buffer a record; nothing is durable before wal_sync. */
int wal_append(wal *w, unsigned type, const void *data, size_t len);
/* Write the buffered records and fsync.  The first call writes the header
 * (the records so far are the plan) and puts the log at its path. */
int wal_sync(wal *w);
/* The length of the log as the last successful wal_sync left it. */
size_t wal_synced_length(const wal *w);
/* Cut the log back to `len` (a wal_synced_length after the first sync)
 * and fsync: records written by a wal_sync that failed (its write landed,
 * its fsync did not) must not be read as durable ones. */
int wal_truncate(wal *w, size_t len);
/* Close; a log that never reached its path leaves no temp file. */
void wal_close(wal *w);

/*
 * Parse a log image (pure: fuzzable).  Never fails on content: whatever
 * the bytes, *out says what is valid in them.  -1 only when out of memory.
 * out->recs points into `data`, valid while it lives.
 */
int wal_parse(wal_contents *out, const void *data, size_t len);
void wal_contents_release(wal_contents *c);

/* Read `path` into *data and parse it (nothing is changed on disk).
 * DECREE_ENOTFOUND when there is no log. */
int wal_load(buf *data, wal_contents *out, const char *path);

/* Remove the log and fsync its directory. */
int wal_remove(const char *path);

/* Remove the temp files of logs for `path` that never reached it (a
 * process died before its first wal_sync finished); the caller holds the
 * lock that makes it the only writer. */
int wal_remove_temps(const char *path);

#endif
