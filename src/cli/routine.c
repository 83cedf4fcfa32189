/*
 * routine.c - routines: discovery, declared parameters (docs/routines.md).
 *
 * A shell routine declares its custom parameters in leading assignment
 * lines (after the shebang and comments):
 *
 *	#!/usr/bin/env bash
 *	# Review a branch.                    <- summary (first comment)
 *	target_branch="${target_branch:-main}" <- parameter, default "main"
 *	reviewer=alice                         <- parameter, default "alice"
 *	set -e                                 <- first other line ends them
 *
 * (A plain `reviewer=alice` is listed too, but bash overwrites the value
 * the message passed when it runs that line: docs/pipeline.md.)
 *
 * The standard variables (spec_file, message_file, message_id, message_dir,
 * chain, seq) are not custom parameters even when assigned there.  A
 * notebook declares them in the code cell tagged "parameters" (papermill's
 * convention), one `name = value` per line.
 */
#include "util/common.h"
#include "pipeline.h"

#include <dirent.h>
#include <jansson.h>

static const char *const standard_vars[] = {
	"spec_file", "message_file", "message_id", "message_dir",
	"chain",     "seq",	     NULL,
};

bool routine_is_standard_var(const char *name)
{
	for (size_t i = 0; standard_vars[i]; i++)
		if (!strcmp(name, standard_vars[i]))
			return true;
	return false;
}

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* The default of a right-hand side: ${x:-D} / "${x:-D}" / 'v' / "v" / v */
static char *rhs_default(const char *v, size_t n)
{
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
		n--;
	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	if (n >= 4 && v[0] == '$' && v[1] == '{' && v[n - 1] == '}') {
		const char *sep = memchr(v, ':', n);
		if (sep && sep + 1 < v + n &&
		    (sep[1] == '-' || sep[1] == '=')) {
			const char *d = sep + 2;
			size_t dn = (size_t)(v + n - 1 - d);
			if (dn >= 2 && (d[0] == '"' || d[0] == '\'') &&
			    d[dn - 1] == d[0]) {
				d++;
				dn -= 2;
			}
			return strndup(d, dn);
		}
		return strdup("");
	}
	return strndup(v, n);
}

static int add_param(routine_info *r, const char *name, size_t nlen, char *def)
{
	routine_param *np;
	char *nm = strndup(name, nlen);

	if (!nm || !def)
		goto oom;
	if (routine_is_standard_var(nm)) {
		free(nm);
		free(def);
		return 0;
	}
	for (size_t i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].name, nm)) { /* first one wins */
			free(nm);
			free(def);
			return 0;
		}
	np = realloc(r->params, (r->nparams + 1) * sizeof(*np));
	if (!np)
		goto oom;
	r->params = np;
	r->params[r->nparams].name = nm;
	r->params[r->nparams].def = def;
	r->nparams++;
	return 0;
oom:
	free(nm);
	free(def);
	fail("out of memory");
	return -1;
}

static int scan_shell(routine_info *r, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	bool first = true;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *q = p;
		while (q < p + n && (*q == ' ' || *q == '\t'))
			q++;
		if (first && n >= 2 && p[0] == '#' && p[1] == '!') {
			/* shebang */
		} else if (q == p + n || *q == '\r') {
			/* blank */
		} else if (*q == '#') {
			if (!r->summary && !r->nparams) {
				const char *s = q + 1;
				size_t sn = (size_t)(p + n - s);
				while (sn && (*s == ' ' || *s == '#')) {
					s++;
					sn--;
				}
				while (sn &&
				       (s[sn - 1] == '\r' || s[sn - 1] == ' '))
					sn--;
				if (sn && !(r->summary = strndup(s, sn)))
					return fail("out of memory");
			}
		} else if (is_ident_start(*q)) {
			const char *e = q;
			while (e < p + n && is_ident(*e))
				e++;
			if (e >= p + n || *e != '=')
				break;
			if (add_param(r, q, (size_t)(e - q),
				      rhs_default(e + 1,
						  (size_t)(p + n - e - 1))) < 0)
				return -1;
		} else {
			break;
		}
		first = false;
		p += n + 1;
	}
	return 0;
}

static int scan_notebook(routine_info *r, const char *text, size_t len)
{
	json_error_t jerr;
	json_t *nb = json_loadb(text, len, 0, &jerr), *cells;
	size_t i;
	int ret = 0;

	if (!nb)
		return fail("%s:%d: not a notebook: %s", r->path, jerr.line,
			    jerr.text);
	cells = json_object_get(nb, "cells");
	for (i = 0; json_is_array(cells) && i < json_array_size(cells); i++) {
		json_t *c = json_array_get(cells, i);
		json_t *tags =
			json_object_get(json_object_get(c, "metadata"), "tags");
		json_t *src = json_object_get(c, "source");
		bool params = false;
		buf code = BUF_INIT;
		for (size_t k = 0;
		     json_is_array(tags) && k < json_array_size(tags); k++)
			if (json_is_string(json_array_get(tags, k)) &&
			    !strcmp(json_string_value(json_array_get(tags, k)),
				    "parameters"))
				params = true;
		if (!params)
			continue;
		if (json_is_string(src))
			buf_puts(&code, json_string_value(src));
		for (size_t k = 0;
		     json_is_array(src) && k < json_array_size(src); k++)
			if (json_is_string(json_array_get(src, k)))
				buf_puts(&code,
					 json_string_value(
						 json_array_get(src, k)));
		/* name = value lines */
		for (const char *p = code.ptr; p && *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			const char *e = p;
			while (e < p + n && is_ident(*e))
				e++;
			if (e > p && is_ident_start(*p)) {
				const char *v = e;
				while (v < p + n && (*v == ' ' || *v == '\t'))
					v++;
				if (v < p + n && *v == '=') {
					const char *hash;
					size_t vn;
					v++;
					while (v < p + n &&
					       (*v == ' ' || *v == '\t'))
						v++;
					vn = (size_t)(p + n - v);
					hash = memchr(v, '#', vn);
					if (hash && (*v != '"' && *v != '\''))
						vn = (size_t)(hash - v);
					if (add_param(r, p, (size_t)(e - p),
						      rhs_default(v, vn)) < 0) {
						ret = -1;
						break;
					}
				}
			}
			p += n + (nl ? 1 : 0);
		}
		buf_release(&code);
		break;
	}
	json_decref(nb);
	return ret;
}

static void routine_release(routine_info *r)
{
	free(r->name);
	free(r->path);
	free(r->summary);
	for (size_t i = 0; i < r->nparams; i++) {
		free(r->params[i].name);
		free(r->params[i].def);
	}
	free(r->params);
}

void routines_free(routine_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		routine_release(&v[i]);
	free(v);
}

static int cmp_routine(const void *a, const void *b)
{
	return strcmp(((const routine_info *)a)->name,
		      ((const routine_info *)b)->name);
}

int routines_list(routine_info **out, size_t *nout, const project *p)
{
	char dir[PATH_MAX];
	routine_info *v = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	*nout = 0;
	project_path(dir, p, ".decree/routines");
	if (!(d = opendir(dir)))
		return errno == ENOENT ? 0
				       : fail("cannot read '%s': %s", dir,
					      strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool nb = len > 6 && !strcmp(de->d_name + len - 6, ".ipynb");
		bool sh = len > 3 && !strcmp(de->d_name + len - 3, ".sh");
		routine_info *ri, *nv;
		buf text = BUF_INIT;
		if (de->d_name[0] == '.' || (!sh && !nb) ||
		    (nb && !p->cfg.notebook_support))
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
			r = fail("out of memory");
			break;
		}
		v = nv;
		ri = &v[n++];
		memset(ri, 0, sizeof(*ri));
		ri->notebook = nb;
		ri->name = strndup(de->d_name, len - (nb ? 6 : 3));
		if (!ri->name ||
		    asprintf(&ri->path, "%s/%s", dir, de->d_name) < 0) {
			ri->path = NULL;
			r = fail("out of memory");
			break;
		}
		if (cli_read_file(&text, ri->path) < 0)
			r = fail("cannot read '%s': %s", ri->path,
				 strerror(errno));
		if (r == 0)
			r = nb ? scan_notebook(ri, text.ptr ? text.ptr : "",
					       text.len)
			       : scan_shell(ri, text.ptr ? text.ptr : "",
					    text.len);
		buf_release(&text);
		if (r)
			break;
	}
	closedir(d);
	if (r) {
		routines_free(v, n);
		return -1;
	}
	/* a name with both forms: the shell routine wins, once */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_routine);
	for (size_t i = 1; i < n;) {
		if (strcmp(v[i].name, v[i - 1].name)) {
			i++;
			continue;
		}
		size_t drop = v[i].notebook ? i : i - 1;
		routine_release(&v[drop]);
		memmove(&v[drop], &v[drop + 1], (n - drop - 1) * sizeof(*v));
		n--;
	}
	*out = v;
	*nout = n;
	return 0;
}

const routine_info *routine_find(const routine_info *v, size_t n,
				 const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/* --- run requests
 * -------------------------------------------------------------
 */

int run_request_set(run_request *rq, const char *key, const char *value)
{
	if (fm_set(&rq->vars, &rq->nvars, &rq->cap, key, value) < 0)
		return fail("out of memory");
	return 0;
}

const char *run_request_get(const run_request *rq, const char *key)
{
	for (size_t i = 0; i < rq->nvars; i++)
		if (!strcmp(rq->vars[i].key, key))
			return rq->vars[i].value;
	return NULL;
}

void run_request_release(run_request *rq)
{
	for (size_t i = 0; i < rq->nvars; i++) {
		free(rq->vars[i].key);
		free(rq->vars[i].value);
	}
	free(rq->vars);
	free(rq->name);
	free(rq->body);
	memset(rq, 0, sizeof(*rq));
}
