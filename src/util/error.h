/*
 * error.h - the thread-local last error.
 *
 * decree_error_set() records a message and returns the code so callers can
 * write `return decree_error_set(DECREE_ENOTFOUND, "...")`.  With
 * DECREE_ERR_OS the current errno's strerror is appended.  Code inside the
 * library reads and clears the slot with error_last(), error_last_code()
 * and error_clear(); the public decree_error_last() and friends
 * (ops/library.c) return the same.
 *
 * Each copy of util has its own slot: a program linked against
 * libdecree.so links util itself, and decree_error_last() reports what the
 * library set, not what the program's util did.
 */
#ifndef DECREE_ERROR_H
#define DECREE_ERROR_H

#include "decree/common.h"

enum decree_error_class {
	DECREE_ERR_NONE = 0,
	DECREE_ERR_OS = 1 << 0, /* append ": strerror(errno)" */
};

/* Set the last error; returns `code`.  `klass` is a decree_error_class. */
int decree_error_setf(int code, int klass, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The message of the last error of this thread, never NULL ("" if none). */
const char *error_last(void);
/* The code of the last error of this thread (DECREE_OK if none). */
int error_last_code(void);
/* Forget the last error of this thread (after swallowing it). */
void error_clear(void);

/*
 * The warning slot: a call that succeeded but could not finish something
 * the caller should know about (the change was made, but recording it in
 * the history failed) says so here, in one line, without failing.  `code`
 * is DECREE_EUNFINISHED when something is left for the next mutating call
 * to finish, 0 for a plain note.  The first warning since warning_clear()
 * stays; later ones are dropped (one line for the user, the one that came
 * first).  Public readers: decree_warning_last(), decree_warning_last_code()
 * and decree_warning_clear() (ops/library.c).
 */
void warning_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *warning_last(void);
int warning_last_code(void);
void warning_clear(void);

#define decree_error_set(code, ...) decree_error_setf((code), 0, __VA_ARGS__)
#define decree_error_os(...) \
	decree_error_setf(DECREE_ERROR, DECREE_ERR_OS, __VA_ARGS__)

/* Argument contracts: an invalid-argument error in release builds. */
#define DECREE_ASSERT_ARG(x)                                                  \
	do {                                                                  \
		if (!(x))                                                     \
			return decree_error_set(DECREE_EINVALID,              \
						"invalid argument '%s'", #x); \
	} while (0)

#endif
