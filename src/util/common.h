/*
 * common.h - included first by every .c file of libdecree and the CLI.
 *
 * It fixes the feature-test macros before any system header is seen, pulls
 * in the system headers nearly every file needs, and poisons the C library
 * functions we never want to see (banned.h).  Nothing project-specific that
 * could create an include cycle lives here.
 *
 * src/util holds the leaf helpers (alloc, buf, error, fs, json, sha256,
 * base64, oidset, strset).  They include no header of src/lib and call
 * nothing there, never print or exit, and report a failure as a negative
 * decree_error_code with its message in the thread's last error (error.h).
 */
#ifndef DECREE_COMMON_H
#define DECREE_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_NOFOLLOW, fstatat, pipe2, st_mtim, renameat */
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#ifdef DECREE_TESTING
#define DECREE_TESTABLE
#else
#define DECREE_TESTABLE static
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UNUSED(x)     ((void)(x))

#include "util/banned.h"

#endif
