/*
 * ckpt.h - writing a checkpoint (checkpoint.c); checkpoint records are in
 * store/record.h, scanning the working tree in scan/worktree.h.
 */
#ifndef DECREE_CKPT_H
#define DECREE_CKPT_H

#include "decree/checkpoint.h"
#include "store/odb.h"
#include "store/record.h"
#include "store/snap.h"

/* Write trees of `cur` through w, commit w, write the record.  Returns
 * the new id in id_out.  The caller holds the lock. */
int ckpt_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
	       odb_writer *w, const snap *cur, const char *session,
	       const char *message, const char *label);

#endif
