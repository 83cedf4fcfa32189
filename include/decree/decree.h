/*
 * decree/decree.h - the umbrella header of libdecree.
 *
 * libdecree snapshots a directory tree into a content-addressed store,
 * compares and restores snapshots as crash-safe transactions, and keeps an
 * undo history.  See decree/store.h and decree/checkpoint.h.
 */
#ifndef DECREE_DECREE_H
#define DECREE_DECREE_H

#include "common.h"
#include "store.h"
#include "checkpoint.h"

#endif
