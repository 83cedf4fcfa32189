/*
 * config.c - project root discovery and .decree/config.yml (libyaml).
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
 * Unknown keys are ignored.  A file that is not valid YAML, or a key with
 * a value of the wrong type, is an error naming the file and line.
 */
#include "util/common.h"
#include "pipeline.h"

#include <yaml.h>

void config_release(config *c)
{
	free(c->store);
	for (size_t i = 0; i < c->nexcludes; i++)
		free(c->excludes[i]);
	free(c->excludes);
	free(c->router);
	free(c->ai);
	free(c->default_routine);
	memset(c, 0, sizeof(*c));
}

static const char *scalar(yaml_document_t *d, yaml_node_t *n)
{
	(void)d;
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
		const char *k = scalar(d, yaml_document_get_node(d, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

static int parse_size(uint64_t *out, const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || v == 0)
		return -1;
	*out = v;
	return 0;
}

static int bad(const char *file, yaml_node_t *n, const char *what)
{
	return fail("%s:%lu: %s", file,
		    n ? (unsigned long)n->start_mark.line + 1 : 0UL, what);
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
	v = scalar(doc, n);
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

static int get_str(char **out, yaml_document_t *doc, yaml_node_t *map,
		   const char *key, const char *path)
{
	yaml_node_t *n = map_get(doc, map, key);
	const char *v;

	if (!n)
		return 0;
	if (!(v = scalar(doc, n))) {
		char what[160];
		snprintf(what, sizeof(what), "'%s' must be a string", key);
		return bad(path, n, what);
	}
	free(*out);
	*out = NULL;
	if (*v && !(*out = strdup(v)))
		return fail("out of memory");
	return 0;
}

int config_load(config *c, const char *root)
{
	char path[PATH_MAX];
	FILE *f;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *top, *cp, *n;
	int r = 0;

	memset(c, 0, sizeof(*c));
	c->max_retries = 3;
	c->max_depth = 10;
	if (!(c->default_routine = strdup("develop")))
		return fail("out of memory");
	snprintf(path, sizeof(path), "%s/.decree/config.yml", root);
	if (!(f = fopen(path, "rb")))
		return 0;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		r = fail("%s:%lu: %s", path,
			 (unsigned long)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		config_release(c);
		return r;
	}
	top = yaml_document_get_root_node(&doc);
	if (top && top->type != YAML_MAPPING_NODE &&
	    !(top->type == YAML_SCALAR_NODE && !top->data.scalar.length)) {
		r = bad(path, top, "the configuration must be a mapping");
		goto done;
	}
	cp = map_get(&doc, top, "checkpoint");
	if (cp && cp->type != YAML_MAPPING_NODE &&
	    !(cp->type == YAML_SCALAR_NODE && !cp->data.scalar.length)) {
		r = bad(path, cp, "'checkpoint' must be a mapping");
		goto done;
	}
	if ((n = map_get(&doc, cp, "store")) ||
	    (n = map_get(&doc, top, "store"))) {
		const char *v = scalar(&doc, n);
		if (!v || !*v) {
			r = bad(path, n, "'store' must be a directory path");
			goto done;
		}
		if (v[0] == '/') {
			c->store = strdup(v);
		} else {
			size_t len = strlen(root) + strlen(v) + 2;
			if ((c->store = malloc(len)))
				snprintf(c->store, len, "%s/%s", root, v);
		}
	}
	if ((n = map_get(&doc, cp, "max_file_size"))) {
		const char *v = scalar(&doc, n);
		if (!v || parse_size(&c->max_file_size, v) < 0) {
			r = bad(path, n,
				"'max_file_size' must be a positive size like 52428800 or 50M");
			goto done;
		}
	}
	if ((n = map_get(&doc, cp, "exclude"))) {
		if (n->type != YAML_SEQUENCE_NODE) {
			r = bad(path, n,
				"'exclude' must be a list of patterns");
			goto done;
		}
		size_t cnt = (size_t)(n->data.sequence.items.top -
				      n->data.sequence.items.start);
		c->excludes = calloc(cnt + 1, sizeof(char *));
		for (size_t i = 0; c->excludes && i < cnt; i++) {
			yaml_node_t *it = yaml_document_get_node(
				&doc, n->data.sequence.items.start[i]);
			const char *v = scalar(&doc, it);
			if (!v) {
				r = bad(path, it,
					"'exclude' entries must be strings");
				goto done;
			}
			c->excludes[c->nexcludes++] = strdup(v);
		}
	}
	{
		yaml_node_t *cmds = map_get(&doc, top, "commands");
		const char *nb;
		if (cmds && cmds->type != YAML_MAPPING_NODE &&
		    !(cmds->type == YAML_SCALAR_NODE &&
		      !cmds->data.scalar.length)) {
			r = bad(path, cmds, "'commands' must be a mapping");
			goto done;
		}
		if ((r = get_str(&c->router, &doc, cmds, "router", path)) ||
		    (r = get_str(&c->ai, &doc, cmds, "ai", path)) ||
		    (r = get_str(&c->default_routine, &doc, top,
				 "default_routine", path)) ||
		    (r = get_long(&c->max_retries, &doc, top, "max_retries", 1,
				  100, path)) ||
		    (r = get_long(&c->max_depth, &doc, top, "max_depth", 1,
				  1000000, path)))
			goto done;
		if (!c->default_routine &&
		    !(c->default_routine = strdup("develop"))) {
			r = fail("out of memory");
			goto done;
		}
		if ((n = map_get(&doc, top, "notebook_support"))) {
			nb = scalar(&doc, n);
			if (nb && (!strcmp(nb, "true") || !strcmp(nb, "yes")))
				c->notebook_support = true;
			else if (nb && (!strcmp(nb, "false") ||
					!strcmp(nb, "no") || !*nb))
				c->notebook_support = false;
			else {
				r = bad(path, n,
					"'notebook_support' must be true or false");
				goto done;
			}
		}
	}
done:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	if (r)
		config_release(c);
	return r;
}

/* The nearest ancestor of the current directory holding .decree/. */
static int find_root(char *out, size_t len)
{
	char cwd[PATH_MAX];
	struct stat st;

	if (!getcwd(cwd, sizeof(cwd)))
		return fail("cannot get the current directory: %s",
			    strerror(errno));
	snprintf(out, len, "%s", cwd);
	for (;;) {
		char probe[PATH_MAX + 16];
		char *slash;
		snprintf(probe, sizeof(probe), "%s/.decree", out);
		if (stat(probe, &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
		slash = strrchr(out, '/');
		if (!slash || slash == out)
			break;
		*slash = '\0';
	}
	snprintf(out, len, "%s", cwd);
	return 0;
}

int project_root(char *out, size_t len, const cli_ctx *ctx)
{
	struct stat st;

	if (!ctx->root_opt)
		return find_root(out, len);
	if (stat(ctx->root_opt, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail("cannot use '%s' as project root: not a directory",
			    ctx->root_opt);
	snprintf(out, len, "%s", ctx->root_opt);
	return 0;
}

int open_store(decree_store **out, const cli_ctx *ctx)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	char root[PATH_MAX];
	config c;
	const char *env = getenv("DECREE_STORE");
	const char *tmo = getenv("DECREE_LOCK_TIMEOUT_MS"), *thr;
	int r;

	*out = NULL;
	if ((r = project_root(root, sizeof(root), ctx)) != 0)
		return r;
	if ((r = config_load(&c, root)) != 0)
		return r;
	o.root = root;
	o.store_path = ctx->store_opt ? ctx->store_opt
		       : env && *env  ? env
				      : c.store;
	o.max_file_size = c.max_file_size;
	o.excludes = (const char *const *)c.excludes;
	if (tmo && *tmo)
		o.lock_timeout_ms = (int)strtol(tmo, NULL, 10);
	if ((thr = getenv("DECREE_THREADS")) && *thr) {
		long n = strtol(thr, NULL, 10);
		o.threads = n > 0 && n <= 1024 ? (unsigned)n : 0;
	}
	r = decree_store_open(out, &o);
	config_release(&c);
	return r < 0 ? lib_fail(r) : 0;
}

/* --- projects ---------------------------------------------------------------
 */

void project_path(char *out, const project *p, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", p->root, rel);
}

int project_open(project *p, const cli_ctx *ctx)
{
	char root[PATH_MAX], probe[PATH_MAX + 32];
	struct stat st;
	int r;

	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	if ((r = project_root(root, sizeof(root), ctx)) != 0)
		return r;
	if (!realpath(root, p->root))
		return fail("cannot resolve '%s': %s", root, strerror(errno));
	snprintf(probe, sizeof(probe), "%s/.decree/inbox", p->root);
	if (stat(probe, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail("not a decree project (run decree init)");
	return config_load(&p->cfg, p->root);
}

void project_release(project *p)
{
	config_release(&p->cfg);
}
