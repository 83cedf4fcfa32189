/*
 * utc.h - times as records, logs and JSON show them: RFC 3339 in UTC,
 * "2026-11-28T16:55:02Z", to the second.
 */
#ifndef DECREE_UTC_H
#define DECREE_UTC_H

#include <stdint.h>

/* "YYYY-MM-DDTHH:MM:SSZ" and its NUL; a year beyond 9999 takes more */
#define UTC_TEXT_MAX 32

/* Unix seconds t as RFC 3339 UTC into out (UTC_TEXT_MAX bytes).  Done by
 * arithmetic (no gmtime_r, no strftime: listing thousands of records
 * formats thousands of times); years outside 0..9999 go to gmtime_r, and
 * a time it cannot place gives "". */
const char *utc_format(char out[UTC_TEXT_MAX], int64_t t);

/* The same for a time in nanoseconds (rounded down to the second). */
const char *utc_format_ns(char out[UTC_TEXT_MAX], int64_t ns);

#endif
