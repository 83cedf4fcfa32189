/*
 * yaml.h - a tiny YAML *writer* of scalars into a buf, for frontmatter and
 * last-run.yml.  Reading YAML uses libyaml.
 *
 * A scalar is written plain when libyaml reads that back as the same
 * string, and double-quoted with escapes otherwise (control characters,
 * the C1 controls U+0080..U+009F, which libyaml refuses to read, U+2028,
 * U+2029 and U+FEFF, which YAML takes for line breaks or a byte-order
 * mark, and the non-characters U+FFFE, U+FFFF).  The string must be
 * valid UTF-8: YAML cannot carry other bytes.
 */
#ifndef DECREE_YAML_H
#define DECREE_YAML_H

#include "util/buf.h"

int yaml_scalar(buf *out, const char *s);

#endif
