/*
 * decree/common.h - export macros, error codes and the error API.
 *
 * Errors: every fallible function returns an int, 0 on success and a
 * negative decree_error_code on failure.  The human-readable reason is kept
 * in a thread-local slot read with decree_error_last(); it stays valid until
 * the next failing call on the same thread.
 */
#ifndef DECREE_PUBLIC_COMMON_H
#define DECREE_PUBLIC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define DECREE_BEGIN_DECL extern "C" {
#define DECREE_END_DECL	  }
#else
#define DECREE_BEGIN_DECL
#define DECREE_END_DECL
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define DECREE_API __attribute__((visibility("default")))
#else
#define DECREE_API
#endif

DECREE_BEGIN_DECL

#define DECREE_VERSION_STRING "0.1.0"

/** Return codes.  Each function documents which of these it can return. */
typedef enum {
	DECREE_OK = 0,
	DECREE_ERROR = -1,	 /**< generic failure (I/O, memory, ...) */
	DECREE_ENOTFOUND = -3,	 /**< checkpoint, object or path not found */
	DECREE_EEXISTS = -4,	 /**< something that must not exist does */
	DECREE_ELOCKED = -5,	 /**< the store is locked by a live process */
	DECREE_ECONFLICT = -6,	 /**< a patch or restore conflicts */
	DECREE_ECORRUPT = -7,	 /**< damaged object, record or log */
	DECREE_EAPPLY = -8,	 /**< a patch does not apply */
	DECREE_EINVALID = -9,	 /**< bad input: argument, path, format */
	DECREE_EAMBIGUOUS = -10, /**< a reference matches several objects */
	DECREE_EVERIFY = -11,	 /**< written bytes do not hash as expected */
	DECREE_EEXEC = -12,	 /**< a command decree ran failed */
	/** A transaction could not be completed nor rolled back: its log
	 * stays, and decree_recover (or the next mutating call) finishes
	 * the job.  The message says whether the change was applied. */
	DECREE_EUNFINISHED = -13,
	DECREE_ECANCELLED = -14, /**< the caller's cancel flag stopped it */
	/** An interrupted transaction's log is damaged: the tree may be
	 * partly changed at paths the log no longer names.  Nothing is
	 * changed until the caller decides: decree_recover_ext with
	 * rollback (decree/maint.h) rolls back what the log still names. */
	DECREE_ELOGDAMAGED = -15,
} decree_error_code;

/** The message of the last error on this thread, never NULL ("" if none). */
DECREE_API const char *decree_error_last(void);

/** The code of the last error on this thread (DECREE_OK if none). */
DECREE_API int decree_error_last_code(void);

/** Forget the last error of this thread. */
DECREE_API void decree_error_clear(void);

/** A stable lowercase name for a decree_error_code ("not_found",
 * "conflict", ...; "error" for DECREE_ERROR and unknown codes): the
 * "code" of `decree --json` failures and of the bindings' errors. */
DECREE_API const char *decree_error_name(int code);

/**
 * Warnings: a call that succeeded (returned 0) but could not finish
 * something its caller should know about leaves one line here, and the
 * return value stays 0.  Example: a restore whose change is made (its
 * transaction committed) but whose undo entry could not be written, the
 * disk being full; the next mutating call on the store writes it (a call
 * that finds such unfinished bookkeeping finishes it first).
 *
 * The slot is per thread and keeps the first warning since the last
 * decree_warning_clear(); calls never clear it.  To tell which call
 * warned, clear it before the call.
 * @return the warning, never NULL ("" if none)
 */
DECREE_API const char *decree_warning_last(void);

/** The kind of the warning: DECREE_EUNFINISHED when something is left
 * for the next mutating call (or decree_recover, decree/maint.h) to
 * finish, 0 for a note that asks for nothing (or when there is none). */
DECREE_API int decree_warning_last_code(void);

/** Forget the warning of this thread. */
DECREE_API void decree_warning_clear(void);

/**
 * For programs, not for libraries that embed decree: remove decree's temp
 * files (a pack being written, say) at exit and on SIGINT, SIGTERM and
 * SIGHUP, then let the signal take its default action.  Installs signal
 * handlers, so the embedding application decides whether to call it.
 */
DECREE_API void decree_cleanup_on_signals(void);

/** The library version, DECREE_VERSION_STRING of the built library. */
DECREE_API const char *decree_version(void);

DECREE_END_DECL

#endif
