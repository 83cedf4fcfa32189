/*
 * pipeline/message.h - message files: YAML frontmatter + markdown body.
 *
 * Invariants: a parsed message keeps its frontmatter keys in file order
 * and its body byte for byte; message_format() of an unmodified parse of
 * a message whose frontmatter decree wrote gives back the same bytes.
 */
#ifndef DECREE_PIPELINE_MESSAGE_H
#define DECREE_PIPELINE_MESSAGE_H

#include "util/buf.h"
#include "util/kvlist.h"

#include <stdbool.h>

typedef struct {
	kvlist fm;  /* frontmatter fields, in file order */
	char *body; /* after the frontmatter, verbatim ("" if none) */
	size_t body_len;
} message;

/* Parse a message's text.  Frontmatter values must be scalars.
 * DECREE_EINVALID says why (no "decree:" prefix), -1 out of memory. */
int message_parse(message *m, const char *text, size_t len);
/* Read and parse the file at path: DECREE_ENOTFOUND, DECREE_EINVALID, -1. */
int message_load(message *m, const char *path);
void message_release(message *m);
const char *message_get(const message *m, const char *key);
/* Set (replace in place, or append) a key.  0 or -1. */
int message_set(message *m, const char *key, const char *value);
/* Frontmatter (if any field) + body. */
int message_format(buf *out, const message *m);

/* Lowercase ASCII kebab-case, at most `max` bytes; "" if nothing left. */
void kebab_case(char *out, size_t outlen, const char *in, size_t max);

#endif
