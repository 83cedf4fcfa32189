/*
 * decree/decree.h - the umbrella header of libdecree.
 *
 * libdecree snapshots a directory tree into a content-addressed store,
 * compares and restores snapshots as crash-safe transactions, and keeps an
 * undo history; it diffs checkpoints and applies patches atomically.  One
 * header per part, each named after the source file that implements it:
 *   decree/common.h      error codes, the last error, export macros
 *   decree/store.h       opening a store for a project root
 *   decree/checkpoint.h  create, list, resolve, show, compare, prune, drop
 *   decree/restore.h     restore, undo, redo; transaction phases
 *   decree/agent.h       agent sessions: turns, the agent-write journal,
 *                        rewind
 *   decree/diff.h        diffs of checkpoints and the working tree
 *   decree/apply.h       applying a unified diff as one transaction
 *   decree/maint.h       recover, gc, fsck
 *   decree/project.h     a project root, config.yml, init
 *   decree/pipeline.h    routines, run, process, runs, revert
 */
#ifndef DECREE_DECREE_H
#define DECREE_DECREE_H

#include "common.h"
#include "store.h"
#include "checkpoint.h"
#include "restore.h"
#include "workspace.h"
#include "agent.h"
#include "diff.h"
#include "apply.h"
#include "maint.h"
#include "projects.h"
#include "project.h"
#include "pipeline.h"

#endif
