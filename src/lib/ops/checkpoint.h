/*
 * checkpoint.h - what the other operations use of checkpoint.c: writing a
 * checkpoint of a scanned tree (restore's "pre-restore" capture, apply's
 * "exec-failed" capture, undo's "pre-undo").  Checkpoint records are in
 * store/record.h, scanning the working tree in scan/worktree.h.
 */
#ifndef DECREE_OPS_CHECKPOINT_H
#define DECREE_OPS_CHECKPOINT_H

#include "decree/checkpoint.h"
#include "store/odb.h"
#include "store/snap.h"

/* Write trees of `cur` through w, commit w, write the record.  Returns
 * the new id in id_out.  The caller holds the lock. */
int checkpoint_write(char id_out[DECREE_ID_HEXLEN + 1], decree_store *s,
		     odb_writer *w, const snap *cur, const char *session,
		     const char *message, const char *label);

#endif
