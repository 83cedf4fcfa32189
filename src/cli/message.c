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
 * back as the same string and double-quoted ones otherwise.
 */
#include "util/common.h"
#include "pipeline.h"

#include <yaml.h>

void message_release(message *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->fields[i].key);
		free(m->fields[i].value);
	}
	free(m->fields);
	free(m->body);
	memset(m, 0, sizeof(*m));
}

const char *message_get(const message *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->fields[i].key, key))
			return m->fields[i].value;
	return NULL;
}

int fm_set(fm_field **v, size_t *n, size_t *cap, const char *key,
	   const char *value)
{
	char *val = strdup(value);
	if (!val)
		return -1;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].key, key)) {
			free((*v)[i].value);
			(*v)[i].value = val;
			return 0;
		}
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 8;
		fm_field *nf = realloc(*v, nc * sizeof(*nf));
		if (!nf) {
			free(val);
			return -1;
		}
		*v = nf;
		*cap = nc;
	}
	if (!((*v)[*n].key = strdup(key))) {
		free(val);
		return -1;
	}
	(*v)[(*n)++].value = val;
	return 0;
}

int message_set(message *m, const char *key, const char *value)
{
	return fm_set(&m->fields, &m->n, &m->cap, key, value);
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

static int set_err(char **err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int set_err(char **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) < 0)
		*err = NULL;
	va_end(ap);
	return -1;
}

int message_parse(message *m, const char *text, size_t len, char **err)
{
	size_t ys = 0, yl = 0, end;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *top;
	int r = 0;

	memset(m, 0, sizeof(*m));
	*err = NULL;
	end = frontmatter_end(text, len, &ys, &yl);
	if (!(m->body = malloc(len - end + 1)))
		return set_err(err, "out of memory");
	memcpy(m->body, text + end, len - end);
	m->body[len - end] = '\0';
	m->body_len = len - end;
	if (!end)
		return 0;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text + ys,
				     yl);
	if (!yaml_parser_load(&parser, &doc)) {
		r = set_err(err, "frontmatter line %lu: %s",
			    (unsigned long)parser.problem_mark.line + 2,
			    parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		message_release(m);
		return r;
	}
	top = yaml_document_get_root_node(&doc);
	if (top && top->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *pr = top->data.mapping.pairs.start;
		     pr < top->data.mapping.pairs.top && !r; pr++) {
			yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
			yaml_node_t *v =
				yaml_document_get_node(&doc, pr->value);
			if (!k || k->type != YAML_SCALAR_NODE || !v ||
			    v->type != YAML_SCALAR_NODE) {
				r = set_err(
					err,
					"frontmatter line %lu: values must be "
					"plain strings, not lists or mappings",
					(unsigned long)(v ? v->start_mark.line
							  : 0) +
						2);
				break;
			}
			if (message_set(m, (const char *)k->data.scalar.value,
					(const char *)v->data.scalar.value) < 0)
				r = set_err(err, "out of memory");
		}
	} else if (top && !(top->type == YAML_SCALAR_NODE &&
			    !top->data.scalar.length)) {
		r = set_err(err,
			    "the frontmatter must be a mapping (key: value)");
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r)
		message_release(m);
	return r;
}

/* U+0085, U+2028, U+2029 and U+FEFF: valid UTF-8 that YAML treats as line
 * breaks or a byte order mark; written as \u escapes.  Returns the
 * escape, or NULL. */
static const char *yaml_special(const unsigned char *p)
{
	if (p[0] == 0xc2 && p[1] == 0x85)
		return "\\u0085";
	if (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xa8)
		return "\\u2028";
	if (p[0] == 0xe2 && p[1] == 0x80 && p[2] == 0xa9)
		return "\\u2029";
	if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		return "\\ufeff";
	return NULL;
}

static bool plain_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || s[0] == ' ' || s[n - 1] == ' ' ||
	    strchr("-?:,[]{}#&*!|>'\"%@`~", s[0]))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\' ||
		    (c >= 0x80 && yaml_special((const unsigned char *)s + i)))
			return false;
		if (c == ':' && (s[i + 1] == ' ' || !s[i + 1]))
			return false;
		if (c == '#' && i && s[i - 1] == ' ')
			return false;
	}
	return true;
}

int yaml_scalar(buf *out, const char *s)
{
	if (plain_ok(s))
		return buf_puts(out, s);
	buf_putc(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			buf_puts(out, "\\\"");
			break;
		case '\\':
			buf_puts(out, "\\\\");
			break;
		case '\n':
			buf_puts(out, "\\n");
			break;
		case '\t':
			buf_puts(out, "\\t");
			break;
		case '\r':
			buf_puts(out, "\\r");
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				buf_printf(out, "\\x%02x", *p);
			} else if (*p >= 0x80 && yaml_special(p)) {
				buf_puts(out, yaml_special(p));
				p += *p == 0xc2 ? 1 : 2;
			} else {
				buf_putc(out, (char)*p);
			}
		}
	}
	return buf_putc(out, '"');
}

int message_format(buf *out, const message *m)
{
	if (m->n) {
		buf_puts(out, "---\n");
		for (size_t i = 0; i < m->n; i++) {
			yaml_scalar(out, m->fields[i].key);
			buf_puts(out, ": ");
			yaml_scalar(out, m->fields[i].value);
			buf_putc(out, '\n');
		}
		buf_puts(out, "---\n");
	}
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
