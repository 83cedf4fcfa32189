/*
 * ignore.h - gitignore-compatible path matching for the scanner.
 *
 * Precedence, lowest to highest (a higher source that matches a path wins):
 *   1. built-in defaults (ignore_builtin_patterns, one documented list);
 *   2. .gitignore files, at every level; a deeper file beats a shallower
 *      one; within one file the last matching line wins;
 *   3. .decreeignore files, same syntax and the same depth rule; they may
 *      re-include with "!".
 * Each level answers NONE / IGNORE / WHITELIST; the answer of the highest
 * source that is not NONE decides.  A path is ignored when the decision is
 * IGNORE.  Exclusion of a directory hides everything below it (the walker
 * does not descend), exactly as git does.
 *
 * Syntax is git's (gitignore(5)): blank lines and "#" comments, trailing
 * unescaped spaces trimmed, "\" escapes, "!" negation, a "/" at the start
 * or in the middle anchors the pattern to the file's directory, a trailing
 * "/" matches directories only, "*", "?", "[...]" classes (with "!" or "^"
 * negation and ranges), and "**" in its three forms ("**" + "/x", "x/" +
 * "**", "a/" + "**" + "/b").
 *
 * Usage: a matcher is created with a loader callback that returns the
 * content of an ignore file of a directory (from the disk during a walk,
 * from a snapshot's blobs when rules of an earlier state are needed).
 * Directories are loaded lazily and cached.  The matcher is not thread-safe.
 */
#ifndef DECREE_IGNORE_H
#define DECREE_IGNORE_H

#include "util/buf.h"
#include <stdbool.h>
#include <stddef.h>

typedef enum {
	IGNORE_NONE = 0,
	IGNORE_IGNORE = 1,
	IGNORE_WHITELIST = 2,
} ignore_result;

/* The built-in default patterns, NULL-terminated.  Documented in
 * docs/scanning.md; keep both in sync. */
extern const char *const ignore_builtin_patterns[];

/* The names of the rules files a directory may hold, the ones the loader
 * is asked for: ".gitignore", ".decreeignore". */
#define IGNORE_RULES_FILES 2
extern const char *const ignore_rules_files[IGNORE_RULES_FILES];

/*
 * Loader: put the content of `dir`/`name` (dir "" = root, no trailing
 * slash; name one of ignore_rules_files) into `out` and set *found.
 * Return 0, or a negative decree error code to abort.
 */
typedef int (*ignore_load_fn)(void *payload, const char *dir, const char *name,
			      buf *out, bool *found);

/* Told what a loader found for `dir`/`name`: its content, or found false;
 * content NULL when it could not be read (scan_opts.ignore_seen).  Return
 * 0, or a negative decree error code. */
typedef int (*ignore_seen_fn)(void *payload, const char *dir, const char *name,
			      const buf *content, bool found);

typedef struct ignore_matcher ignore_matcher;

/* extra_patterns: optional NULL-terminated list of additional patterns
 * (from config), applied with .decreeignore precedence at the root but
 * below any .decreeignore file. */
/* Is this base name (blen bytes) one of the rules files, .gitignore or
 * .decreeignore? */
bool ignore_is_rules_file(const char *bn, size_t blen);

int ignore_matcher_new(ignore_matcher **out, ignore_load_fn load, void *payload,
		       const char *const *extra_patterns);
void ignore_matcher_free(ignore_matcher *m);

/*
 * Decide `path` (relative to the root, no leading or trailing slash) given
 * the rules of all its ancestor directories; does NOT look at whether an
 * ancestor itself is excluded (the walker already did).  *ignored is set.
 */
int ignore_matcher_check(ignore_matcher *m, const char *path, size_t len,
			 bool is_dir, bool *ignored);

/*
 * Like ignore_matcher_check, but also true when any ancestor directory of
 * `path` is ignored: the answer for a random-access lookup.
 */
int ignore_matcher_excluded(ignore_matcher *m, const char *path, size_t len,
			    bool is_dir, bool *ignored);

/*
 * The rule that decided the last ignore_matcher_check or _excluded on m
 * (whatever its answer), or NULL when no rule spoke.  The pointer names
 * the rule: the same rule of the same matcher gives the same pointer (a
 * key for counting; it lives as long as m).  With `source`, its source
 * is put there: the rules file's path ("sub/.gitignore"), "exclude" (the
 * extra patterns) or "built-in"; with `pattern`, the line as written.
 */
const void *ignore_matcher_last_rule(const ignore_matcher *m, buf *source,
				     const char **pattern);

/* Lower level, for tests and fuzzing: one parsed file. */
typedef struct ignore_list ignore_list;
int ignore_list_parse(ignore_list **out, const char *base, const char *data,
		      size_t len);
void ignore_list_free(ignore_list *l);
/* Last matching pattern wins; `path` relative to the root. */
ignore_result ignore_list_match(const ignore_list *l, const char *path,
				size_t len, bool is_dir);

#endif
