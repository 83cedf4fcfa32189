/*
 * oidset.h - an open-addressing hash set of object ids, with an optional
 * 64-bit value per id (oidset_put/oidset_get).  Ids are already uniformly
 * distributed, so their first 8 bytes are the hash.
 */
#ifndef DECREE_OIDSET_H
#define DECREE_OIDSET_H

#include "util/sha256.h"

typedef struct {
	oid *keys;
	uint64_t *vals;
	unsigned char *used;
	size_t cap; /* power of two or 0 */
	size_t count;
} oidset;

#define OIDSET_INIT                    \
	{                              \
		NULL, NULL, NULL, 0, 0 \
	}

/* Insert; *added (may be NULL) tells whether it was new.  0 or -1 (OOM). */
int oidset_add(oidset *s, const oid *id, bool *added);
int oidset_put(oidset *s, const oid *id, uint64_t val);
bool oidset_has(const oidset *s, const oid *id);
bool oidset_get(const oidset *s, const oid *id, uint64_t *val);
void oidset_release(oidset *s);

#endif
