/*
 * json.h - a tiny JSON *writer* into a buf.  Reading JSON uses jansson.
 * Valid UTF-8 passes through, control characters are escaped, and each
 * byte that is not valid UTF-8 is written as U+FFFD, so the output is
 * always valid JSON.  Where exact bytes matter (paths), json_kv_path adds
 * a "<key>_base64" member holding the exact bytes whenever the string is
 * not valid UTF-8.
 */
#ifndef DECREE_JSON_H
#define DECREE_JSON_H

#include "util/buf.h"
#include <stdbool.h>

int json_str(buf *b, const char *s);
int json_strn(buf *b, const char *s, size_t n);
bool json_is_utf8(const char *s, size_t n);
/* ["," if comma] "key":"value", or "key":null when value is NULL */
int json_kv_str(buf *b, const char *key, const char *value, bool comma);
/* ["," if comma] "key":"value"[,"key_base64":"..."]; NULL value: null */
int json_kv_path(buf *b, const char *key, const char *value, bool comma);
/* The same for n bytes that may hold NUL bytes (written as \u0000). */
int json_kv_bytes(buf *b, const char *key, const char *value, size_t n,
		  bool comma);

#endif
