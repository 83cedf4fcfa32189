/*
 * message.c - message files: YAML frontmatter + markdown body
 * (docs/pipeline.md "Messages").
 *
 *	---
 *	id: 2026112214320700-0
 *	routine: develop
 *	target_branch: main
 *	---
 *	Body text, kept byte for byte.
 *
 * The frontmatter is read with libyaml and must be a mapping of scalars;
 * the keys keep their order.  Writing uses plain scalars when they read
 * back as the same string and double-quoted ones otherwise (util/yaml.h).
 */
#include "util/common.h"
#include "pipeline/message.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/yaml.h"

#include <yaml.h>

void message_release(message *m)
{
	kvlist_release(&m->fm);
	decree_free(m->body);
	m->body = NULL;
	m->body_len = 0;
}

const char *message_get(const message *m, const char *key)
{
	return kvlist_get(&m->fm, key);
}

int message_set(message *m, const char *key, const char *value)
{
	return kvlist_set(&m->fm, key, value);
}

/* Where the frontmatter ends: the byte after its closing line, with
 * *yaml_len the length of the YAML between.  0 if there is none. */
static size_t frontmatter_end(const char *t, size_t len, size_t *yaml_start,
			      size_t *yaml_len)
{
	size_t p;

	if (len >= 4 && !memcmp(t, "---\n", 4))
		p = 4;
	else if (len >= 5 && !memcmp(t, "---\r\n", 5))
		p = 5;
	else
		return 0;
	*yaml_start = p;
	while (p < len) {
		const char *nl = memchr(t + p, '\n', len - p);
		size_t n = nl ? (size_t)(nl - (t + p)) : len - p;
		size_t k = n && t[p + n - 1] == '\r' ? n - 1 : n;
		if (k == 3 &&
		    (!memcmp(t + p, "---", 3) || !memcmp(t + p, "...", 3))) {
			*yaml_len = p - *yaml_start;
			return p + n + (nl ? 1 : 0);
		}
		p += n + (nl ? 1 : 0);
	}
	return 0; /* never closed: no frontmatter, all body */
}

/* The fields of a frontmatter mapping into m. */
static int read_fields(message *m, yaml_document_t *doc)
{
	yaml_node_t *top = yaml_document_get_root_node(doc);

	if (top && top->type != YAML_MAPPING_NODE)
		return top->type == YAML_SCALAR_NODE && !top->data.scalar.length
			       ? 0
			       : decree_error_set(DECREE_EINVALID,
						  "the frontmatter must be a "
						  "mapping (key: value)");
	for (yaml_node_pair_t *pr = top ? top->data.mapping.pairs.start : NULL;
	     top && pr < top->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(doc, pr->value);
		if (!k || k->type != YAML_SCALAR_NODE || !v ||
		    v->type != YAML_SCALAR_NODE)
			return decree_error_set(
				DECREE_EINVALID,
				"frontmatter line %lu: values must be plain "
				"strings, not lists or mappings",
				(unsigned long)(v ? v->start_mark.line : 0) +
					2);
		if (message_set(m, (const char *)k->data.scalar.value,
				(const char *)v->data.scalar.value) < 0)
			return -1;
	}
	return 0;
}

int message_parse(message *m, const char *text, size_t len)
{
	size_t ys = 0, yl = 0, end;
	yaml_parser_t parser;
	yaml_document_t doc;
	int r;

	memset(m, 0, sizeof(*m));
	end = frontmatter_end(text, len, &ys, &yl);
	if (!(m->body = decree_malloc(len - end + 1)))
		return -1;
	memcpy(m->body, text + end, len - end);
	m->body[len - end] = '\0';
	m->body_len = len - end;
	if (!end)
		return 0;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text + ys,
				     yl);
	if (!yaml_parser_load(&parser, &doc)) {
		r = decree_error_set(
			DECREE_EINVALID, "frontmatter line %lu: %s",
			(unsigned long)parser.problem_mark.line + 2,
			parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		message_release(m);
		return r;
	}
	r = read_fields(m, &doc);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r)
		message_release(m);
	return r;
}

int message_load(message *m, const char *path)
{
	buf text = BUF_INIT;
	int r;

	memset(m, 0, sizeof(*m));
	if ((r = fs_read_path(path, &text)) == 0)
		r = message_parse(m, text.ptr, text.len);
	buf_release(&text);
	return r;
}

/* libyaml takes a key in "key: value" (an implicit key) only if it is at
 * most 1024 characters long; a longer one is written as an explicit key,
 * "? key" then ": value" on the next line.  Bytes are counted: at least
 * as many as characters. */
#define YAML_IMPLICIT_KEY_MAX 1024

int message_format(buf *out, const message *m)
{
	buf key = BUF_INIT;

	if (m->fm.n) {
		buf_puts(out, "---\n");
		for (size_t i = 0; i < m->fm.n; i++) {
			buf_clear(&key);
			yaml_scalar(&key, m->fm.v[i].key);
			if (key.len > YAML_IMPLICIT_KEY_MAX)
				buf_puts(out, "? ");
			buf_put(out, key.ptr, key.len);
			buf_puts(out, key.len > YAML_IMPLICIT_KEY_MAX ? "\n: "
								      : ": ");
			yaml_scalar(out, m->fm.v[i].value);
			buf_putc(out, '\n');
		}
		buf_puts(out, "---\n");
	}
	buf_release(&key);
	return buf_put(out, m->body, m->body_len);
}

void kebab_case(char *out, size_t outlen, const char *in, size_t max)
{
	size_t n = 0;
	bool dash = false;

	if (max > outlen - 1)
		max = outlen - 1;
	for (const unsigned char *p = (const unsigned char *)in; *p && n < max;
	     p++) {
		unsigned char c = *p;
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && n && n + 1 < max)
				out[n++] = '-';
			else if (dash && n)
				break;
			dash = false;
			out[n++] = (char)c;
		} else {
			dash = true;
		}
	}
	while (n && out[n - 1] == '-')
		n--;
	out[n] = '\0';
}
