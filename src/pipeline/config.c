/*
 * config.c - .decree/config.yml (libyaml), decree/project.h.
 *
 * Keys (docs/config.md):
 *   store: DIR                      store location (relative to the root)
 *   checkpoint:
 *     max_file_size: 50M            bytes, or with K/M/G suffix
 *     exclude: [PATTERN, ...]       extra ignore patterns
 *     store: DIR                    same as the top-level key
 *   commands:
 *     router: CMD                   {prompt} -> shell-quoted prompt
 *     ai: CMD                       for routines (DECREE_AI_COMMAND)
 *   max_retries: 3
 *   max_depth: 10
 *   default_routine: develop
 *   notebook_support: false
 *   workspace: false                run routines in a workspace
 * Unknown keys are ignored.  A file that is not valid YAML, or a key with
 * a value of the wrong type, is an error naming the file and line.  A
 * missing file is the defaults.
 *
 * The public decree_config is the first member of a private struct that
 * owns its strings, so one decree_config_free releases everything.
 */
#include "util/common.h"
#include "decree/project.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/size.h"

#include <yaml.h>

typedef struct {
	decree_config pub; /* first: the public view */
	char *store, *router, *ai, *default_routine;
	char **excludes; /* NULL-terminated */
	size_t nexcludes;
} config_data;

void decree_config_free(decree_config *c)
{
	config_data *d = (config_data *)c;

	if (!d)
		return;
	decree_free(d->store);
	for (size_t i = 0; i < d->nexcludes; i++)
		decree_free(d->excludes[i]);
	decree_free(d->excludes);
	decree_free(d->router);
	decree_free(d->ai);
	decree_free(d->default_routine);
	decree_free(d);
}

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE
		       ? (const char *)n->data.scalar.value
		       : NULL;
}

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map,
			    const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(d, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

/* A mapping, or an empty value (a key with nothing under it). */
static bool mapping_or_empty(const yaml_node_t *n)
{
	return !n || n->type == YAML_MAPPING_NODE ||
	       (n->type == YAML_SCALAR_NODE && !n->data.scalar.length);
}

static int bad(const char *file, const yaml_node_t *n, const char *what)
{
	return decree_error_set(DECREE_EINVALID, "%s:%lu: %s", file,
				n ? (unsigned long)n->start_mark.line + 1 : 0UL,
				what);
}

static int get_long(long *out, yaml_document_t *doc, yaml_node_t *top,
		    const char *key, long min, long max, const char *path)
{
	yaml_node_t *n = map_get(doc, top, key);
	const char *v;
	char *end;
	long x;

	if (!n)
		return 0;
	v = scalar(n);
	errno = 0;
	x = v ? strtol(v, &end, 10) : 0;
	if (!v || !*v || *end || errno || x < min || x > max) {
		char what[160];
		snprintf(what, sizeof(what),
			 "'%s' must be a number from %ld to %ld", key, min,
			 max);
		return bad(path, n, what);
	}
	*out = x;
	return 0;
}

/* A string key; an empty value leaves *out as it is. */
static int get_str(char **out, yaml_document_t *doc, yaml_node_t *map,
		   const char *key, const char *path)
{
	yaml_node_t *n = map_get(doc, map, key);
	const char *v;
	char *copy;

	if (!n)
		return 0;
	if (!(v = scalar(n))) {
		char what[160];
		snprintf(what, sizeof(what), "'%s' must be a string", key);
		return bad(path, n, what);
	}
	if (!*v)
		return 0;
	if (!(copy = decree_strdup(v)))
		return -1;
	decree_free(*out);
	*out = copy;
	return 0;
}

static int get_store(config_data *c, yaml_document_t *doc, yaml_node_t *top,
		     yaml_node_t *cp, const char *root, const char *path)
{
	yaml_node_t *n = map_get(doc, cp, "store");
	const char *v;

	if (!n && !(n = map_get(doc, top, "store")))
		return 0;
	v = scalar(n);
	if (!v || !*v)
		return bad(path, n, "'store' must be a directory path");
	if (v[0] == '/') {
		c->store = decree_strdup(v);
	} else {
		size_t len = strlen(root) + strlen(v) + 2;
		if ((c->store = decree_malloc(len)))
			snprintf(c->store, len, "%s/%s", root, v);
	}
	return c->store ? 0 : -1;
}

static int get_excludes(config_data *c, yaml_document_t *doc, yaml_node_t *cp,
			const char *path)
{
	yaml_node_t *n = map_get(doc, cp, "exclude");
	size_t cnt;

	if (!n)
		return 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return bad(path, n, "'exclude' must be a list of patterns");
	cnt = (size_t)(n->data.sequence.items.top -
		       n->data.sequence.items.start);
	decree_free(c->excludes);
	if (!(c->excludes = decree_calloc(cnt + 1, sizeof(char *))))
		return -1;
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *it = yaml_document_get_node(
			doc, n->data.sequence.items.start[i]);
		const char *v = scalar(it);
		if (!v)
			return bad(path, it,
				   "'exclude' entries must be strings");
		if (!(c->excludes[c->nexcludes] = decree_strdup(v)))
			return -1;
		c->nexcludes++;
	}
	return 0;
}

static int get_bool(bool *out, yaml_document_t *doc, yaml_node_t *top,
		    const char *key, const char *path)
{
	yaml_node_t *n = map_get(doc, top, key);
	const char *v;

	if (!n)
		return 0;
	v = scalar(n);
	if (v && (!strcmp(v, "true") || !strcmp(v, "yes")))
		*out = true;
	else if (v && (!strcmp(v, "false") || !strcmp(v, "no") || !*v))
		*out = false;
	else {
		char what[160];
		snprintf(what, sizeof(what), "'%s' must be true or false", key);
		return bad(path, n, what);
	}
	return 0;
}

static int read_document(config_data *c, yaml_document_t *doc, const char *root,
			 const char *path)
{
	yaml_node_t *top = yaml_document_get_root_node(doc), *cp, *cmds;
	int r;

	if (!mapping_or_empty(top))
		return bad(path, top, "the configuration must be a mapping");
	cp = map_get(doc, top, "checkpoint");
	if (!mapping_or_empty(cp))
		return bad(path, cp, "'checkpoint' must be a mapping");
	cmds = map_get(doc, top, "commands");
	if (!mapping_or_empty(cmds))
		return bad(path, cmds, "'commands' must be a mapping");
	if ((r = get_store(c, doc, top, cp, root, path)) < 0)
		return r;
	{
		yaml_node_t *n = map_get(doc, cp, "max_file_size");
		const char *v = scalar(n);
		if (n && (!v || size_parse(&c->pub.max_file_size, v) < 0))
			return bad(
				path, n,
				"'max_file_size' must be a positive size like 52428800 or 50M");
	}
	if ((r = get_excludes(c, doc, cp, path)) < 0 ||
	    (r = get_str(&c->router, doc, cmds, "router", path)) < 0 ||
	    (r = get_str(&c->ai, doc, cmds, "ai", path)) < 0 ||
	    (r = get_str(&c->default_routine, doc, top, "default_routine",
			 path)) < 0 ||
	    (r = get_long(&c->pub.max_retries, doc, top, "max_retries", 1, 100,
			  path)) < 0 ||
	    (r = get_long(&c->pub.max_depth, doc, top, "max_depth", 1, 1000000,
			  path)) < 0 ||
	    (r = get_bool(&c->pub.notebook_support, doc, top,
			  "notebook_support", path)) < 0 ||
	    (r = get_bool(&c->pub.workspace, doc, top, "workspace", path)) < 0)
		return r;
	return 0;
}

static int load_file(config_data *c, const char *root)
{
	char path[PATH_MAX];
	yaml_parser_t parser;
	yaml_document_t doc;
	buf text = BUF_INIT;
	int r;

	snprintf(path, sizeof(path), "%s/.decree/config.yml", root);
	/* fs_read_path never opens a FIFO or device (it would block) */
	if ((r = fs_read_path(path, &text)) < 0) {
		buf_release(&text);
		if (r == DECREE_ENOTFOUND) {
			error_clear();
			return 0;
		}
		return r;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text.ptr,
				     text.len);
	if (!yaml_parser_load(&parser, &doc)) {
		r = decree_error_set(
			DECREE_EINVALID, "%s:%lu: %s", path,
			(unsigned long)parser.problem_mark.line + 1,
			parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		buf_release(&text);
		return r;
	}
	r = read_document(c, &doc, root, path);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	buf_release(&text);
	return r;
}

int decree_config_load(decree_config **out, const char *root)
{
	static const char *const none[] = { NULL };
	config_data *c;
	int r;

	*out = NULL;
	if (!(c = decree_calloc(1, sizeof(*c))))
		return -1;
	c->pub.max_retries = 3;
	c->pub.max_depth = 10;
	if ((r = load_file(c, root)) < 0 ||
	    (!c->default_routine &&
	     !(c->default_routine = decree_strdup("develop")))) {
		decree_config_free(&c->pub);
		return r < 0 ? r : -1;
	}
	c->pub.store = c->store;
	c->pub.router = c->router;
	c->pub.ai = c->ai;
	c->pub.default_routine = c->default_routine;
	c->pub.excludes = c->excludes ? (const char *const *)c->excludes : none;
	*out = &c->pub;
	return 0;
}

void decree_config_store_options(decree_store_options *o,
				 const decree_config *c, const char *root)
{
	o->root = root;
	o->store_path = c->store;
	o->max_file_size = c->max_file_size;
	o->excludes = c->excludes;
}
