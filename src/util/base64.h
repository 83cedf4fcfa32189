/*
 * base64.h - RFC 4648 base64 (standard alphabet, "=" padding).
 */
#ifndef DECREE_BASE64_H
#define DECREE_BASE64_H

#include "util/buf.h"
#include <stdbool.h>

/* Append the encoding of data to out (no line breaks). */
int base64_encode(buf *out, const void *data, size_t len);
/* Append the decoding of text to out; DECREE_EINVALID on bad input
 * (characters outside the alphabet, wrong padding or length). */
int base64_decode(buf *out, const char *text, size_t len);

/* True for the 64 alphabet characters (not '='). */
bool base64_is_char(char c);

#endif
