/*
 * decree/decree.h - the umbrella header of libdecree.
 *
 * libdecree snapshots a directory tree into a content-addressed store,
 * compares and restores snapshots as crash-safe transactions, and keeps an
 * undo history; it diffs checkpoints and applies patches atomically.  See
 * decree/store.h, decree/checkpoint.h and decree/diff.h.
 */
#ifndef DECREE_DECREE_H
#define DECREE_DECREE_H

#include "common.h"
#include "store.h"
#include "checkpoint.h"
#include "diff.h"
#include "project.h"
#include "pipeline.h"

#endif
