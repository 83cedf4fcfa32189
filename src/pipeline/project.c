/*
 * project.c - finding a project root, `decree init`, and the
 * decree_project handle (decree/project.h).
 *
 * init writes each file with O_EXCL and never replaces anything, so it is
 * safe to run on a project that exists: it only adds what is missing.
 */
#include "util/common.h"
#include "pipeline/project.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

/* --- finding the root ----------------------------------------------------- */

int decree_project_find_root(char *out, size_t size, const char *start)
{
	char dir[PATH_MAX];
	struct stat st;

	if (strlen(start) >= sizeof(dir) || strlen(start) >= size)
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					start);
	snprintf(dir, sizeof(dir), "%s", start);
	for (;;) {
		char probe[PATH_MAX + 16];
		char *slash;
		snprintf(probe, sizeof(probe), "%s/.decree", dir);
		if (stat(probe, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(out, size, "%s", dir);
			return 0;
		}
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
	}
	snprintf(out, size, "%s", start);
	return 0;
}

/* --- init ------------------------------------------------------------------
 */

static const char config_yml[] =
	"# decree configuration (docs/config.md)\n"
	"commands:\n"
	"  # router: a command line; {prompt} is replaced by the shell-quoted prompt\n"
	"  # and its trimmed stdout is the answer.  Used to name messages (decree run\n"
	"  # without -m) and to pick a routine when a message names none.\n"
	"  # Example: router: claude -p {prompt}\n"
	"  router: \"\"\n"
	"  # ai: the command routines call (the example routine develop.sh gets it as\n"
	"  # $DECREE_AI_COMMAND); {prompt} as above.  A routine that uses it does not\n"
	"  # run while it is empty.  Example: ai: claude -p {prompt}\n"
	"  ai: \"\"\n"
	"# attempts that keep each other's changes before the clean-slate attempt\n"
	"max_retries: 3\n"
	"# follow-up depth: a message with seq >= max_depth is dead-lettered\n"
	"max_depth: 10\n"
	"# the routine of messages that name none (and the router does not pick)\n"
	"default_routine: develop\n"
	"# run .decree/routines/*.ipynb with papermill\n"
	"notebook_support: false\n"
	"# run each message's routine in a workspace (a copy under the store) and\n"
	"# apply its changes to the project only when it succeeds; a message's\n"
	"# workspace: frontmatter overrides this\n"
	"workspace: false\n"
	"checkpoint:\n"
	"  # files above this size are recorded but not stored\n"
	"  max_file_size: 50M\n"
	"  # extra ignore patterns (gitignore syntax)\n"
	"  exclude: []\n";

static const char gitignore[] = "inbox/\nruns/\nstore/\nlast-run.yml\n"
				"pipeline.lock\n";

static const char develop_sh[] =
	"#!/usr/bin/env bash\n"
	"# Develop: hand the message (and its spec) to the AI command of config.yml.\n"
	"#\n"
	"# decree runs this with bash in the project root and sets spec_file,\n"
	"# message_file, message_id, message_dir, chain, seq, DECREE_ATTEMPT,\n"
	"# DECREE_AI_COMMAND (commands.ai) and, for the clean-slate attempt,\n"
	"# DECREE_FAILURE_CONTEXT.  Custom parameters are leading lines like\n"
	"#   target_branch=\"${target_branch:-main}\"\n"
	"# (message frontmatter overrides the default).  Exit 0 = success.\n"
	"set -euo pipefail\n"
	"\n"
	"if [ -z \"${DECREE_AI_COMMAND:-}\" ]; then\n"
	"\techo \"develop: no AI command is configured.\" >&2\n"
	"\techo \"Set commands.ai in .decree/config.yml, e.g.:  ai: claude -p {prompt}\" >&2\n"
	"\texit 1\n"
	"fi\n"
	"prompt=$(cat \"$message_file\")\n"
	"if [ -n \"${spec_file:-}\" ] && [ -f \"$spec_file\" ]; then\n"
	"\tprompt=\"$prompt\n"
	"\n"
	"$(cat \"$spec_file\")\"\n"
	"fi\n"
	"if [ -n \"${DECREE_FAILURE_CONTEXT:-}\" ] && [ -f \"$DECREE_FAILURE_CONTEXT\" ]; then\n"
	"\tprompt=\"$prompt\n"
	"\n"
	"$(cat \"$DECREE_FAILURE_CONTEXT\")\"\n"
	"fi\n"
	"quoted=$(printf '%q' \"$prompt\")\n"
	"eval \"${DECREE_AI_COMMAND//\\{prompt\\}/$quoted}\"\n";

typedef struct {
	const char *root;
	decree_init_cb cb;
	void *payload;
	size_t made;
} init_ctx;

/* Create a file unless it exists. */
static int make_file(init_ctx *c, const char *rel, const char *text,
		     mode_t mode)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", c->root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return 0;
		return decree_error_os("cannot create '%s'", path);
	}
	if (fs_write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0) {
		int r = decree_error_os("cannot write '%s'", path);
		close(fd);
		unlink(path);
		return r;
	}
	if (fs_close(fd) < 0)
		return decree_error_os("cannot write '%s'", path);
	c->made++;
	if (c->cb)
		c->cb(c->payload, rel, false);
	return 0;
}

static int make_dir(init_ctx *c, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", c->root, rel);
	if (mkdir(path, 0755) == 0) {
		c->made++;
		if (c->cb)
			c->cb(c->payload, rel, true);
		return 0;
	}
	if (errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	if (errno == EEXIST)
		return decree_error_set(
			DECREE_EEXISTS,
			"cannot create '%s': a file is in the way", path);
	return decree_error_os("cannot create '%s'", path);
}

int decree_project_init(size_t *created, const char *root, decree_init_cb cb,
			void *payload)
{
	static const char *const dirs[] = {
		".decree",
		".decree/routines",
		".decree/inbox",
		".decree/inbox/done",
		".decree/inbox/dead",
		".decree/runs",
		"specs",
	};
	char abs[PATH_MAX];
	init_ctx c = { abs, cb, payload, 0 };
	int r = 0;

	if (created)
		*created = 0;
	if (!realpath(root, abs))
		return errno == ENOENT || errno == ENOTDIR
			       ? decree_error_set(
					 DECREE_EINVALID,
					 "cannot use '%s' as project root: %s",
					 root, strerror(errno))
			       : decree_error_os(
					 "cannot use '%s' as project root",
					 root);
	for (size_t i = 0; i < ARRAY_SIZE(dirs) && !r; i++)
		r = make_dir(&c, dirs[i]);
	if (!r)
		r = make_file(&c, ".decree/config.yml", config_yml, 0644);
	if (!r)
		r = make_file(&c, ".decree/.gitignore", gitignore, 0644);
	if (!r)
		r = make_file(&c, ".decree/routines/develop.sh", develop_sh,
			      0755);
	if (!r)
		r = make_file(&c, "specs/processed-spec.md", "", 0644);
	if (created)
		*created = c.made;
	return r;
}

/* --- the handle --------------------------------------------------------------
 */

void project_path(char *out, const decree_project *p, const char *rel)
{
	snprintf(out, PATH_MAX, "%s/%s", p->root, rel);
}

int decree_project_open(decree_project **out, const decree_project_options *o)
{
	decree_project *p;
	char probe[PATH_MAX + 32];
	struct stat st;
	int r;

	*out = NULL;
	if (!o || o->version != DECREE_PROJECT_OPTIONS_VERSION || !o->root)
		return decree_error_set(DECREE_EINVALID,
					"invalid project options");
	if (!(p = decree_calloc(1, sizeof(*p))))
		return -1;
	p->lock_timeout_ms = o->lock_timeout_ms;
	p->threads = o->threads;
	if (!realpath(o->root, p->root)) {
		r = decree_error_set(DECREE_EINVALID, "cannot resolve '%s': %s",
				     o->root, strerror(errno));
		goto fail;
	}
	snprintf(probe, sizeof(probe), "%s/.decree/inbox", p->root);
	if (stat(probe, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = decree_error_set(DECREE_ENOTFOUND,
				     "'%s' is not a decree project: it has no "
				     ".decree/inbox/",
				     p->root);
		goto fail;
	}
	if ((r = decree_config_load(&p->cfg, p->root)) < 0)
		goto fail;
	if (o->store_path && !(p->store_path = decree_strdup(o->store_path))) {
		r = -1;
		goto fail;
	}
	*out = p;
	return 0;
fail:
	decree_project_free(p);
	return r;
}

void decree_project_free(decree_project *p)
{
	if (!p)
		return;
	decree_store_free(p->store);
	decree_config_free(p->cfg);
	decree_free(p->store_path);
	decree_free(p);
}

const char *decree_project_root(const decree_project *p)
{
	return p->root;
}

const decree_config *decree_project_config(const decree_project *p)
{
	return p->cfg;
}

int decree_project_store(decree_store **out, decree_project *p)
{
	decree_store_options o = DECREE_STORE_OPTIONS_INIT;
	int r;

	if (!p->store) {
		decree_config_store_options(&o, p->cfg, p->root);
		if (p->store_path)
			o.store_path = p->store_path;
		o.lock_timeout_ms = p->lock_timeout_ms;
		o.threads = p->threads;
		if ((r = decree_store_open(&p->store, &o)) < 0)
			return r;
	}
	*out = p->store;
	return 0;
}
