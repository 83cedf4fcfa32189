/*
 * root.c - which project and store this invocation works on.
 *
 * Root: -C DIR, else the nearest ancestor of the current directory that
 * holds .decree/, else the current directory.  Store: --store, else
 * DECREE_STORE, else config.yml's store:, else <root>/.decree/store.
 * DECREE_LOCK_TIMEOUT_MS and DECREE_THREADS tune the store handle.  The
 * environment is read here and nowhere else: the library reads none.
 */
#include "util/common.h"
#include "cli.h"

int cli_project_root(char *out, size_t len, const cli_ctx *ctx)
{
	char cwd[PATH_MAX];
	struct stat st;

	if (ctx->root_opt) {
		if (stat(ctx->root_opt, &st) < 0 && errno == ENOENT)
			return fail_code(DECREE_ENOTFOUND,
					 "cannot use '%s' as project root: it "
					 "does not exist (moved? see 'decree "
					 "projects')",
					 ctx->root_opt);
		if (stat(ctx->root_opt, &st) < 0 || !S_ISDIR(st.st_mode))
			return fail_code(DECREE_EINVALID,
					 "cannot use '%s' as project root: not "
					 "a directory",
					 ctx->root_opt);
		snprintf(out, len, "%s", ctx->root_opt);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return fail("cannot get the current directory: %s",
			    strerror(errno));
	if (decree_project_find_root(out, len, cwd) < 0)
		return lib_fail(-1);
	return 0;
}

/* The handle settings that come from options and the environment. */
static void handle_settings(const char **store, int *lock_timeout_ms,
			    unsigned *threads, const cli_ctx *ctx)
{
	const char *env = getenv("DECREE_STORE");
	const char *tmo = getenv("DECREE_LOCK_TIMEOUT_MS");
	const char *thr = getenv("DECREE_THREADS");

	*store = ctx->store_opt ? ctx->store_opt : env && *env ? env : NULL;
	if (tmo && *tmo)
		*lock_timeout_ms = (int)strtol(tmo, NULL, 10);
	if (thr && *thr) {
		long n = strtol(thr, NULL, 10);
		*threads = n > 0 && n <= 1024 ? (unsigned)n : 0;
	}
}

int open_store(decree_store **out, const cli_ctx *ctx)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	char root[PATH_MAX];
	decree_config *c;
	const char *store;
	int r;

	*out = NULL;
	if ((r = cli_project_root(root, sizeof(root), ctx)) != 0)
		return r;
	if (decree_config_load(&c, root) < 0)
		return lib_fail(-1);
	decree_config_store_options(&o, c, root);
	handle_settings(&store, &o.lock_timeout_ms, &o.threads, ctx);
	if (store)
		o.store_path = store;
	r = decree_store_open(out, &o);
	decree_config_free(c);
	return r < 0 ? lib_fail(r) : 0;
}

int open_store_any_root(decree_store **out, const cli_ctx *ctx)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	struct stat st;
	int r;

	*out = NULL;
	if (!ctx->root_opt || stat(ctx->root_opt, &st) == 0 || errno != ENOENT)
		return open_store(out, ctx);
	/* a root that is gone: no config to read; the store must be named
	 * (--store, DECREE_STORE), an in-tree one went with the root */
	o.root = ctx->root_opt;
	o.flags = DECREE_STORE_MISSING_ROOT;
	handle_settings(&o.store_path, &o.lock_timeout_ms, &o.threads, ctx);
	r = decree_store_open(out, &o);
	return r < 0 ? lib_fail(r) : 0;
}

static int open_project(decree_project **out, const cli_ctx *ctx, bool required)
{
	decree_project_options o = DECREE_PROJECT_OPTIONS_INIT;
	char root[PATH_MAX];
	int r;

	*out = NULL;
	if ((r = cli_project_root(root, sizeof(root), ctx)) != 0)
		return r;
	o.root = root;
	handle_settings(&o.store_path, &o.lock_timeout_ms, &o.threads, ctx);
	r = decree_project_open(out, &o);
	if (r == DECREE_ENOTFOUND && !required) {
		decree_error_clear();
		return 0;
	}
	if (r == DECREE_ENOTFOUND)
		return fail_code(r, "not a decree project (run decree init)");
	return r < 0 ? lib_fail(r) : 0;
}

int cli_open_project(decree_project **out, const cli_ctx *ctx)
{
	return open_project(out, ctx, true);
}

int cli_open_project_if_any(decree_project **out, const cli_ctx *ctx)
{
	return open_project(out, ctx, false);
}
