/*
 * install.c - decree's entries in an agent's hook settings file (hooks.h).
 *
 * The file belongs to the user and the agent: decree edits only its own
 * entries and keeps everything else as the agent reads it.  It is parsed
 * with jansson and written back with the keys in their order and a
 * 2-space indent (reals with the fewest digits that read back as the same
 * number), so other settings keep their meaning, not necessarily their
 * bytes; a file is rewritten only when decree's entries change, so an
 * install over an installed file leaves it byte-identical.
 *
 * Shape (all three agents; Gemini's timeout is in milliseconds and its
 * entries carry "name": "decree", the name /hooks lists and disables):
 *   {"hooks": {"<Event>": [{"matcher": "*", "hooks": [{"type": "command",
 *     "command": "'/abs/decree' hook <agent> <Event>", "timeout": 60}]}]}}
 * (600 for Claude Code's WorktreeCreate and WorktreeRemove: agents.c).
 * The prompt event gets no matcher.  decree's entry is recognised by its
 * command (hook_command_is_decree), not by its bytes, so an entry naming
 * another decree binary or store is replaced in place, never duplicated,
 * and entries left on events decree no longer installs are removed.
 *
 * What decree leaves empty goes with it: a matcher group whose only hook
 * was decree's, an event array whose only group was, and "hooks" itself
 * when uninstall empties it.  Gemini's hooksConfig.enabled is added by
 * nobody: it defaults to true; install turns an explicit false into true
 * (the user asked for decree's hooks to run), and a hooksConfig.disabled
 * naming decree's hooks is reported (hooks_off), not edited, as is
 * Claude Code's "disableAllHooks": true.
 *
 * Writes: temp file in the same directory, fsync, rename, fsync of the
 * directory (fs_write_atomic), with the old file's permission bits (a new
 * one gets 0666 less the umask); a symlink is written through, so a
 * settings file kept in a dotfiles repository stays there.
 */
#include "util/common.h"
#include "hooks.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#include <jansson.h>

/* --- small lists ------------------------------------------------------- */

static void list_free(char **l)
{
	if (!l)
		return;
	for (size_t i = 0; l[i]; i++)
		decree_free(l[i]);
	decree_free(l);
}

void hook_file_release(hook_file *f)
{
	list_free(f->events);
	list_free(f->programs);
	f->events = f->programs = NULL;
}

static bool list_has(char **l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

/* Append a copy of s unless it is there; an empty list is allocated. */
static int list_add(char ***l, const char *s)
{
	size_t n = 0;
	char **nl;

	while (*l && (*l)[n])
		n++;
	if (s && list_has(*l, s))
		return 0;
	if (!(nl = decree_realloc(*l, (n + 2) * sizeof(*nl))))
		return -1;
	*l = nl;
	nl[n] = NULL;
	if (s && !(nl[n] = decree_strdup(s)))
		return -1;
	nl[n + (s ? 1 : 0)] = NULL;
	return 0;
}

/* --- paths and commands -------------------------------------------------- */

static int join(char *out, size_t len, const char *dir, const char *rel)
{
	int n = snprintf(out, len, "%s/%s", dir, rel);

	if (n < 0 || (size_t)n >= len)
		return decree_error_set(DECREE_EINVALID,
					"path too long: '%s/%s'", dir, rel);
	return 0;
}

int hook_settings_path(char *out, size_t len, const hook_agent *a, bool user,
		       const char *root)
{
	const char *env = user && a->user_env ? getenv(a->user_env) : NULL;
	const char *home = getenv("HOME");
	char cwd[PATH_MAX], dir[PATH_MAX];

	if (!user)
		return join(out, len, root, a->project_file);
	if (env && *env) {
		if (*env == '/')
			return join(out, len, env, a->user_env_rel);
		/* a relative $CODEX_HOME: the agent resolves it against its
		 * working directory; ours is the best guess there is */
		if (!getcwd(cwd, sizeof(cwd)))
			return decree_error_os("cannot get the current "
					       "directory");
		if (join(dir, sizeof(dir), cwd, env) < 0)
			return -1;
		return join(out, len, dir, a->user_env_rel);
	}
	if (!home || *home != '/')
		return decree_error_set(DECREE_EINVALID,
					"cannot find %s's user settings: HOME "
					"is not set to an absolute path",
					a->name);
	return join(out, len, home, a->user_home_rel);
}

/* Append s in single quotes (a ' becomes '\''). */
static int sh_quote(buf *out, const char *s)
{
	int r = buf_putc(out, '\'');

	for (; *s && r == 0; s++)
		r = *s == '\'' ? buf_puts(out, "'\\''") : buf_putc(out, *s);
	return r < 0 ? r : buf_putc(out, '\'');
}

int hook_command(buf *out, const hook_agent *a, const char *event,
		 const char *program, const char *store)
{
	if (sh_quote(out, program) < 0 ||
	    buf_printf(out, " hook %s %s", a->name, event) < 0)
		return -1;
	if (store &&
	    (buf_puts(out, " --store ") < 0 || sh_quote(out, store) < 0))
		return -1;
	return 0;
}

/*
 * The first `max` words of a shell command line, as sh would split them:
 * blanks separate words, '...' quotes everything, "..." everything but
 * \$ \` \" \\ and \newline, a backslash outside quotes the next
 * character.  Splitting stops at an unquoted operator (; & | < > ( ) or
 * a newline), where the first command ends.  Words go to `out`, each
 * NUL-terminated, their offsets to off[].  Returns the word count, or -1
 * (out of memory).
 */
static int sh_words(buf *out, size_t *off, int max, const char *s)
{
	int n = 0;

	while (n < max) {
		bool word = false;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || strchr(";&|<>()\n", *s))
			break;
		off[n] = out->len;
		while (*s && !strchr(" \t;&|<>()\n", *s)) {
			word = true;
			if (*s == '\'') {
				const char *e = strchr(s + 1, '\'');
				size_t k = e ? (size_t)(e - s - 1)
					     : strlen(s + 1);
				if (buf_put(out, s + 1, k) < 0)
					return -1;
				s += k + 1 + (e ? 1 : 0);
			} else if (*s == '"') {
				for (s++; *s && *s != '"'; s++) {
					if (*s == '\\' && s[1] &&
					    strchr("$`\"\\\n", s[1]))
						s++;
					if (buf_putc(out, *s) < 0)
						return -1;
				}
				if (*s)
					s++;
			} else {
				if (*s == '\\' && s[1])
					s++;
				if (buf_putc(out, *s++) < 0)
					return -1;
			}
		}
		if (!word)
			break;
		if (buf_putc(out, '\0') < 0)
			return -1;
		n++;
	}
	return n;
}

/* NAME=value: an assignment sh makes before running the program. */
static bool is_assignment(const char *w)
{
	const char *eq = strchr(w, '=');

	if (!eq || eq == w || (*w >= '0' && *w <= '9'))
		return false;
	for (const char *p = w; p < eq; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

int hook_command_is_decree(const hook_agent *a, const char *command,
			   char **program, char **event)
{
	buf w = BUF_INIT;
	size_t off[12];
	int n = sh_words(&w, off, (int)ARRAY_SIZE(off), command), i = 0, r = 0;
	const char *prog, *base, *agent;

	if (n < 0)
		return -1;
	while (i < n && is_assignment(w.ptr + off[i]))
		i++;
	if (n - i < 3)
		goto done;
	prog = w.ptr + off[i];
	base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	agent = w.ptr + off[i + 2];
	if (strncmp(base, "decree", 6) || strcmp(w.ptr + off[i + 1], "hook") ||
	    (strcmp(agent, a->name) && (!a->alias || strcmp(agent, a->alias))))
		goto done;
	r = 1;
	if (program && !(*program = decree_strdup(prog)))
		r = -1;
	if (event && r == 1 &&
	    !(*event = decree_strdup(n - i > 3 ? w.ptr + off[i + 3] : ""))) {
		if (program) {
			decree_free(*program);
			*program = NULL;
		}
		r = -1;
	}
done:
	buf_release(&w);
	return r;
}

/* --- reading and writing the file ------------------------------------------
 */

/* The file to read and write: `path`, or what it links to. */
static int resolve(char *real, size_t len, const char *path, bool *exists,
		   struct stat *st)
{
	char tmp[PATH_MAX];

	*exists = false;
	if (lstat(path, st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return decree_error_os("cannot read '%s'", path);
		snprintf(real, len, "%s", path);
		return 0;
	}
	if (S_ISLNK(st->st_mode)) {
		if (!realpath(path, tmp))
			return decree_error_os("cannot follow the symlink '%s'",
					       path);
		if (stat(tmp, st) < 0)
			return decree_error_os("cannot read '%s'", tmp);
		snprintf(real, len, "%s", tmp);
	} else {
		snprintf(real, len, "%s", path);
	}
	if (!S_ISREG(st->st_mode))
		return decree_error_set(DECREE_EINVALID,
					"cannot edit '%s': not a regular file",
					path);
	*exists = true;
	return 0;
}

/* Parse the settings file: *out the top-level object (a new empty one
 * for a missing or blank file). */
static int load(json_t **out, const char *path, const char *real, bool exists)
{
	buf b = BUF_INIT;
	json_error_t je;
	json_t *j;
	size_t i = 0;
	int r;

	*out = NULL;
	if (exists && (r = fs_read_path(real, &b)) < 0) {
		buf_release(&b);
		return r;
	}
	while (i < b.len && strchr(" \t\r\n", b.ptr[i]))
		i++;
	if (i == b.len) {
		buf_release(&b);
		return (*out = json_object())
			       ? 0
			       : decree_error_set(-1, "out of memory");
	}
	j = json_loadb(b.ptr, b.len, JSON_ALLOW_NUL, &je);
	buf_release(&b);
	if (!j) /* Gemini reads comments; decree would lose them */
		return decree_error_set(
			DECREE_EINVALID,
			"'%s' is not valid JSON: line %d column %d: %s%s", path,
			je.line, je.column, je.text,
			strstr(je.text, "near '/")
				? " (comments are not supported)"
				: "");
	if (!json_is_object(j)) {
		json_decref(j);
		return decree_error_set(DECREE_EINVALID,
					"'%s' is not a JSON object", path);
	}
	*out = j;
	return 0;
}

/* Significant digits a real needs to read back as itself, and to print
 * without an exponent when it is an integer below 1e17. */
static int real_digits(double v)
{
	char s[64];
	int p = 1;

	for (; p < 17; p++) {
		snprintf(s, sizeof(s), "%.*g", p, v);
		if (strtod(s, NULL) == v)
			break;
	}
	if ((v < 0 ? -v : v) >= 1 && (v < 0 ? -v : v) < 1e17) {
		int whole = snprintf(s, sizeof(s), "%.0f", v < 0 ? -v : v);
		if (whole > p)
			p = whole;
	}
	return p;
}

static int max_digits(json_t *j)
{
	int p = 1, q;

	if (json_is_real(j))
		return real_digits(json_real_value(j));
	for (void *it = json_object_iter(j); it;
	     it = json_object_iter_next(j, it))
		if ((q = max_digits(json_object_iter_value(it))) > p)
			p = q;
	for (size_t i = 0; i < json_array_size(j); i++)
		if ((q = max_digits(json_array_get(j, i))) > p)
			p = q;
	return p;
}

static int save(json_t *root, const char *path, const char *real, bool exists,
		const struct stat *st)
{
	char dir[PATH_MAX], *slash;
	size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER |
		       JSON_REAL_PRECISION(max_digits(root));
	char *text = json_dumps(root, flags);
	mode_t mode, mask;
	int r;

	if (!text)
		return decree_error_set(-1, "cannot write '%s': out of memory",
					path);
	snprintf(dir, sizeof(dir), "%s", real);
	if (!exists && (slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		if (fs_mkdirs(dir, 0777) < 0) {
			free(text);
			return decree_error_set(-1, "cannot write '%s': %s",
						path, error_last());
		}
	}
	/* the file keeps its permission bits exactly, whatever the umask;
	 * a new one gets what the umask allows */
	mask = umask(0);
	mode = exists ? st->st_mode & 07777 : 0666 & ~mask;
	{
		size_t n = strlen(text);
		text[n] = '\n'; /* json_dumps's NUL: the file ends in one */
		r = fs_write_atomic(real, text, n + 1, mode);
	}
	umask(mask);
	free(text);
	if (r < 0)
		return decree_error_set(r, "cannot write '%s': %s", path,
					error_last());
	return 0;
}

/* --- the edit ------------------------------------------------------------- */

typedef struct {
	const hook_agent *a;
	const char *path;
	json_t *root, *hooks; /* hooks: NULL when absent */
	bool changed;
	hook_file *out;
} edit;

static int oom(void)
{
	return decree_error_set(-1, "out of memory");
}

/* h is one of decree's hooks for the agent: 1, 0, -1. */
static int is_ours(const edit *e, json_t *h, char **program, char **event)
{
	json_t *cmd = json_object_get(h, "command");

	json_t *type = json_object_get(h, "type");

	if (!json_is_object(h) || !json_is_string(cmd))
		return 0;
	if (type && (!json_is_string(type) ||
		     strcmp(json_string_value(type), "command")))
		return 0;
	switch (hook_command_is_decree(e->a, json_string_value(cmd), program,
				       event)) {
	case 1:
		return 1;
	case 0:
		return 0;
	default:
		return oom();
	}
}

/* Note decree's hooks found in an event's array (inspect). */
static int note(edit *e, const char *event, json_t *arr)
{
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *hs = json_object_get(json_array_get(arr, i), "hooks");
		for (size_t j = 0; j < json_array_size(hs); j++) {
			char *prog = NULL;
			int r = is_ours(e, json_array_get(hs, j), &prog, NULL);
			if (r <= 0) {
				if (r < 0)
					return r;
				continue;
			}
			if (list_add(&e->out->events, event) < 0 ||
			    list_add(&e->out->programs, prog) < 0)
				r = oom();
			decree_free(prog);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/*
 * Remove decree's hooks from an event's array, except `keep` (NULL:
 * none), and the groups that leaves empty.  *removed: how many.
 */
static int strip(edit *e, json_t *arr, json_t *keep, size_t *removed)
{
	*removed = 0;
	for (size_t i = json_array_size(arr); i-- > 0;) {
		json_t *g = json_array_get(arr, i);
		json_t *hs = json_object_get(g, "hooks");
		size_t before = json_array_size(hs);
		if (!json_is_object(g) || !json_is_array(hs))
			continue;
		for (size_t j = before; j-- > 0;) {
			json_t *h = json_array_get(hs, j);
			int r;
			if (h == keep)
				continue;
			if ((r = is_ours(e, h, NULL, NULL)) < 0)
				return r;
			if (r && json_array_remove(hs, j) < 0)
				return oom();
			*removed += (size_t)r;
		}
		if (before && !json_array_size(hs) &&
		    json_array_remove(arr, i) < 0)
			return oom();
	}
	if (*removed)
		e->changed = true;
	return 0;
}

/* Does group g have the matcher decree installs (none: no matcher)? */
static bool matcher_is(json_t *g, const char *matcher)
{
	json_t *m = json_object_get(g, "matcher");

	if (!matcher)
		return !m;
	return json_is_string(m) && !strcmp(json_string_value(m), matcher);
}

static json_t *our_hook(const edit *e, const hook_event *ev,
			const char *command)
{
	const hook_agent *a = e->a;
	json_t *h = json_object();

	if (!h || json_object_set_new(h, "type", json_string("command")) < 0 ||
	    json_object_set_new(h, "command", json_string(command)) < 0 ||
	    json_object_set_new(h, "timeout",
				json_integer(hook_event_timeout(a, ev))) < 0 ||
	    (a->timeout_ms &&
	     json_object_set_new(h, "name", json_string("decree")) < 0)) {
		json_decref(h);
		return NULL;
	}
	return h;
}

/* Put decree's hook for event ev into place. */
static int install_event(edit *e, const hook_event *ev, const char *program,
			 const char *store)
{
	json_t *arr = json_object_get(e->hooks, ev->event), *want, *keep = NULL;
	json_t *keep_hooks = NULL, *g, *h, *hs;
	buf cmd = BUF_INIT;
	size_t i, j, removed;
	int r = 0;

	if (arr && !json_is_array(arr))
		return decree_error_set(
			DECREE_EINVALID,
			"'%s': \"hooks\".\"%s\" is not an array", e->path,
			ev->event);
	if (hook_command(&cmd, e->a, ev->event, program, store) < 0)
		return oom();
	want = our_hook(e, ev, cmd.ptr);
	buf_release(&cmd);
	if (!want)
		return oom();
	if (!arr) {
		if (json_object_set_new(e->hooks, ev->event,
					arr = json_array()) < 0) {
			json_decref(want);
			return oom();
		}
		e->changed = true;
	}
	/* the first of decree's hooks in a group with the right matcher
	 * stays where it is (rewritten if it differs) */
	for (i = 0; i < json_array_size(arr) && !keep; i++) {
		g = json_array_get(arr, i);
		if (!json_is_object(g) || !matcher_is(g, ev->matcher))
			continue;
		hs = json_object_get(g, "hooks");
		for (j = 0; j < json_array_size(hs) && !keep; j++) {
			h = json_array_get(hs, j);
			if ((r = is_ours(e, h, NULL, NULL)) < 0)
				goto done;
			if (r) {
				keep = h;
				keep_hooks = hs;
			}
		}
	}
	if ((r = strip(e, arr, keep, &removed)) < 0)
		goto done;
	if (keep && !json_equal(keep, want)) {
		/* strip may have moved it in its array */
		for (j = 0; json_array_get(keep_hooks, j) != keep; j++)
			;
		if (json_array_set(keep_hooks, j, want) < 0) {
			r = oom();
			goto done;
		}
		e->changed = true;
	} else if (!keep) {
		g = json_object();
		if (!g ||
		    (ev->matcher &&
		     json_object_set_new(g, "matcher",
					 json_string(ev->matcher)) < 0) ||
		    json_object_set_new(g, "hooks", json_array()) < 0 ||
		    json_array_append(json_object_get(g, "hooks"), want) < 0 ||
		    json_array_append_new(arr, g) < 0) {
			r = oom();
			goto done;
		}
		e->changed = true;
	}
	r = list_add(&e->out->events, ev->event) < 0 ||
			    list_add(&e->out->programs, program) < 0
		    ? oom()
		    : 0;
done:
	json_decref(want);
	return r;
}

/* Remove decree's hooks from every event (with `install`: every event
 * decree does not install); an event array left empty goes.  Events
 * removed from are noted when `note_removed`. */
static int strip_events(edit *e, bool install, bool note_removed)
{
	size_t removed;
	int r;

	for (void *it = json_object_iter(e->hooks), *next; it; it = next) {
		const char *k = json_object_iter_key(it);
		json_t *arr = json_object_iter_value(it);
		size_t before = json_array_size(arr);
		next = json_object_iter_next(e->hooks, it);
		if (!json_is_array(arr) ||
		    (install && hook_event_find(e->a, k)))
			continue;
		if ((r = strip(e, arr, NULL, &removed)) < 0)
			return r;
		if (removed && note_removed && list_add(&e->out->events, k) < 0)
			return oom();
		if (before && !json_array_size(arr) &&
		    json_object_del(e->hooks, k) < 0)
			return oom();
	}
	return 0;
}

/* The switches that stop decree's hooks.  Gemini: hooksConfig.enabled
 * false stops every hook (install turns it on), decree listed in
 * hooksConfig.disabled stops decree's.  Claude Code: "disableAllHooks":
 * true, its kill switch, is the user's to flip. */
static void hook_switches(edit *e, bool install)
{
	json_t *hc = json_object_get(e->root, "hooksConfig");
	json_t *en = json_object_get(hc, "enabled");
	json_t *off = json_object_get(hc, "disabled");

	if (!strcmp(e->a->name, "claude-code") &&
	    json_is_true(json_object_get(e->root, "disableAllHooks")))
		e->out->hooks_off = true;
	if (!e->a->timeout_ms || !json_is_object(hc))
		return;
	if (json_is_false(en)) {
		if (install &&
		    json_object_set_new(hc, "enabled", json_true()) == 0) {
			e->out->enabled_hooks = e->changed = true;
		} else {
			e->out->hooks_off = true;
		}
	}
	for (size_t i = 0; i < json_array_size(off); i++) {
		const char *v = json_string_value(json_array_get(off, i));
		if (v && (!strcmp(v, "decree") ||
			  hook_command_is_decree(e->a, v, NULL, NULL) == 1))
			e->out->hooks_off = true;
	}
}

enum verb { INSPECT, INSTALL, UNINSTALL };

static int run(hook_file *out, const hook_agent *a, const char *path,
	       enum verb verb, const char *program, const char *store)
{
	char real[PATH_MAX];
	struct stat st;
	edit e = { a, path, NULL, NULL, false, out };
	int r;

	memset(out, 0, sizeof(*out));
	if (snprintf(out->path, sizeof(out->path), "%s", path) >=
	    (int)sizeof(out->path))
		return decree_error_set(DECREE_EINVALID, "path too long: '%s'",
					path);
	if (list_add(&out->events, NULL) < 0 ||
	    list_add(&out->programs, NULL) < 0) {
		r = oom();
		goto done;
	}
	if ((r = resolve(real, sizeof(real), path, &out->exists, &st)) < 0)
		goto done;
	if (!out->exists && verb != INSTALL)
		goto done;
	if ((r = load(&e.root, path, real, out->exists)) < 0)
		goto done;
	e.hooks = json_object_get(e.root, "hooks");
	if (e.hooks && !json_is_object(e.hooks)) {
		r = decree_error_set(DECREE_EINVALID,
				     "'%s': \"hooks\" is not an object", path);
		goto done;
	}
	if (verb == INSPECT) {
		for (void *it = json_object_iter(e.hooks); it;
		     it = json_object_iter_next(e.hooks, it))
			if ((r = note(&e, json_object_iter_key(it),
				      json_object_iter_value(it))) < 0)
				goto done;
		hook_switches(&e, false);
		goto done;
	}
	if (!e.hooks) {
		if (verb == UNINSTALL)
			goto done;
		if (json_object_set_new(e.root, "hooks",
					e.hooks = json_object()) < 0) {
			r = oom();
			goto done;
		}
		e.changed = true;
	}
	if (verb == INSTALL) {
		/* every event first checked, so an error writes nothing */
		for (const hook_event *ev = a->events; ev->event; ev++) {
			json_t *arr = json_object_get(e.hooks, ev->event);
			if (arr && !json_is_array(arr)) {
				r = decree_error_set(
					DECREE_EINVALID,
					"'%s': \"hooks\".\"%s\" is not an "
					"array",
					path, ev->event);
				goto done;
			}
		}
		for (const hook_event *ev = a->events; ev->event; ev++)
			if ((r = install_event(&e, ev, program, store)) < 0)
				goto done;
		if ((r = strip_events(&e, true, false)) < 0)
			goto done;
	} else {
		if ((r = strip_events(&e, false, true)) < 0)
			goto done;
		if (e.changed && !json_object_size(e.hooks) &&
		    json_object_del(e.root, "hooks") < 0) {
			r = oom();
			goto done;
		}
	}
	hook_switches(&e, verb == INSTALL);
	if (e.changed && (r = save(e.root, path, real, out->exists, &st)) < 0)
		goto done;
	out->changed = e.changed;
done:
	json_decref(e.root);
	if (r < 0)
		hook_file_release(out);
	return r;
}

int hook_install(hook_file *out, const hook_agent *a, const char *path,
		 const char *program, const char *store)
{
	return run(out, a, path, INSTALL, program, store);
}

int hook_uninstall(hook_file *out, const hook_agent *a, const char *path)
{
	return run(out, a, path, UNINSTALL, NULL, NULL);
}

int hook_inspect(hook_file *out, const hook_agent *a, const char *path)
{
	return run(out, a, path, INSPECT, NULL, NULL);
}
