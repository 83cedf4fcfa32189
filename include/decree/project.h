/*
 * decree/project.h - a project: its root, .decree/config.yml, `decree init`.
 *
 * Overview: a project root is any directory decree works on.  Checkpoints
 * need nothing in it (decree/store.h); the optional .decree/config.yml
 * says where the store lives and what a scan leaves out (docs/config.md).
 * A root becomes a *pipeline* project when decree_project_init() has made
 * .decree/inbox/ and the rest of the pipeline's layout (docs/pipeline.md);
 * decree_project_open() binds a handle to such a root for the functions
 * of decree/pipeline.h.
 *
 * Calling sequence:
 *     decree_project_options o = DECREE_PROJECT_OPTIONS_INIT;
 *     o.root = "/path/to/project";
 *     decree_project *p;
 *     if (decree_project_open(&p, &o) < 0) { puts(decree_error_last()); ... }
 *     ... decree_pipeline_process(&res, p, NULL) ...
 *     decree_project_free(p);
 *
 * Ownership: handles and configurations returned through **out belong to
 * the caller (free them with their _free function; NULL is fine).  Strings
 * reached through them are borrowed and live as long as the handle.
 *
 * Errors: 0 or a negative decree_error_code; decree_error_last() has the
 * one-line message.
 */
#ifndef DECREE_PROJECT_H
#define DECREE_PROJECT_H

#include "common.h"
#include "store.h"

DECREE_BEGIN_DECL

/** .decree/config.yml (docs/config.md); unset keys hold their default. */
typedef struct {
	const char *store; /**< absolute store directory, NULL: the default */
	uint64_t max_file_size;	     /**< 0: the store's default (50 MiB) */
	const char *const *excludes; /**< extra ignore patterns,
					NULL-terminated (never NULL) */
	const char *router;	     /**< commands.router, NULL if unset */
	const char *ai;		     /**< commands.ai, NULL if unset */
	long max_retries;	     /**< 3 */
	long max_depth;		     /**< 10 */
	const char *default_routine; /**< "develop" */
	bool notebook_support;	     /**< false */
	/** Run each message's routine in a workspace and apply it to the
	 *  project on success (docs/pipeline.md "Workspaces"); a message's
	 *  `workspace:` frontmatter overrides it.  false. */
	bool workspace;
} decree_config;

/**
 * Read <root>/.decree/config.yml; a missing file gives the defaults.
 * @return 0; DECREE_EINVALID (not YAML, or a key of the wrong type: the
 *         message names the file and line); -1.
 */
DECREE_API int decree_config_load(decree_config **out, const char *root);
DECREE_API void decree_config_free(decree_config *c);

/**
 * Fill the fields of store options that the configuration decides: root,
 * store_path, max_file_size, excludes (pointers borrowed from c and root).
 * Other fields are left as they are.
 */
DECREE_API void decree_config_store_options(decree_store_options *o,
					    const decree_config *c,
					    const char *root);

/**
 * The project root for a directory: its nearest ancestor (itself
 * included) holding .decree/, else the directory itself.
 * @return 0; DECREE_EINVALID (out too small); -1.
 */
DECREE_API int decree_project_find_root(char *out, size_t size,
					const char *start);

/** Called by decree_project_init for each file or directory it created
 * (path relative to the root). */
typedef void (*decree_init_cb)(void *payload, const char *path, bool is_dir);

/**
 * Make `root` a pipeline project: .decree/config.yml (documented
 * defaults), .decree/.gitignore, .decree/routines/develop.sh (an example
 * routine), .decree/inbox/{,done/,dead/}, .decree/runs/ and
 * specs/processed-spec.md.  Existing files are never overwritten, so a
 * second call creates nothing.  *created (may be NULL) counts what was made.
 * @return 0; DECREE_EINVALID (root is not a directory); DECREE_EEXISTS (a
 *         file stands where a directory belongs); -1.
 */
DECREE_API int decree_project_init(size_t *created, const char *root,
				   decree_init_cb cb, void *payload);

typedef struct decree_project decree_project;

#define DECREE_PROJECT_OPTIONS_VERSION 1
typedef struct {
	unsigned version;
	const char *root;	/**< the project root (required) */
	const char *store_path; /**< NULL: config.yml's store, else the
				   default */
	int lock_timeout_ms;	/**< store lock wait, <0: default */
	unsigned threads;	/**< hashing threads, 0: all cores */
} decree_project_options;
#define DECREE_PROJECT_OPTIONS_INIT                               \
	{                                                         \
		DECREE_PROJECT_OPTIONS_VERSION, NULL, NULL, -1, 0 \
	}

/**
 * Open the pipeline project at opts->root (configuration read once, the
 * store opened on first use).
 * @return 0; DECREE_ENOTFOUND (the root holds no .decree/inbox/: not a
 *         pipeline project); DECREE_EINVALID (bad root or config.yml); -1.
 */
DECREE_API int decree_project_open(decree_project **out,
				   const decree_project_options *opts);
DECREE_API void decree_project_free(decree_project *p);

/** The absolute root (symlinks resolved) and the configuration. */
DECREE_API const char *decree_project_root(const decree_project *p);
DECREE_API const decree_config *decree_project_config(const decree_project *p);

/** The project's store, opened on first call with the configuration
 * (borrowed: it lives as long as p). */
DECREE_API int decree_project_store(decree_store **out, decree_project *p);

DECREE_END_DECL

#endif
