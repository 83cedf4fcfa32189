/*
 * json.h - a tiny JSON *writer* into a buf.  Reading JSON uses jansson.
 * Strings are written byte-exact: valid UTF-8 passes through, control
 * characters are escaped, and bytes that are not valid UTF-8 are written as
 * \u00XX of the Latin-1 code point (lossy but always valid JSON; paths with
 * such bytes are rare and documented).
 */
#ifndef DECREE_JSON_H
#define DECREE_JSON_H

#include "buf.h"

int json_str(buf *b, const char *s);
int json_strn(buf *b, const char *s, size_t n);

#endif
