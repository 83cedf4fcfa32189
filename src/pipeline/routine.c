/*
 * routine.c - routines: discovery, declared parameters, running an
 * attempt; the router (docs/pipeline.md "Routines").
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
#include "pipeline/routine.h"
#include "pipeline/project.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"

#include <dirent.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

/* --- discovery ------------------------------------------------------------ */

static const char *const standard_vars[] = {
	"spec_file", "message_file", "message_id", "message_dir",
	"chain",     "seq",	     NULL,
};

static bool is_standard_var(const char *name)
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
			return decree_strndup(d, dn);
		}
		return decree_strdup("");
	}
	return decree_strndup(v, n);
}

static int add_param(decree_routine_info *r, const char *name, size_t nlen,
		     char *def)
{
	decree_routine_param *v = (decree_routine_param *)r->params;
	char *nm = decree_strndup(name, nlen);
	size_t cap = r->nparams;

	if (!nm || !def)
		goto fail;
	if (is_standard_var(nm))
		goto skip;
	for (size_t i = 0; i < r->nparams; i++)
		if (!strcmp(v[i].name, nm)) /* the first one wins */
			goto skip;
	if (GROW(v, cap, r->nparams + 1) < 0)
		goto fail;
	v[r->nparams].name = nm;
	v[r->nparams].def = def;
	r->params = v;
	r->nparams++;
	return 0;
skip:
	decree_free(nm);
	decree_free(def);
	return 0;
fail:
	decree_free(nm);
	decree_free(def);
	return -1;
}

static int scan_shell(decree_routine_info *r, const char *text, size_t len)
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
				if (sn && !(r->summary = decree_strndup(s, sn)))
					return -1;
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

#define AI_VAR "DECREE_AI_COMMAND"

/* Does a line of text[0..len) that is not a comment (first non-blank
 * byte '#') name DECREE_AI_COMMAND? */
static bool lines_name_ai(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *q = p;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		if (q < e && *q != '#' &&
		    memmem(q, (size_t)(e - q), AI_VAR, strlen(AI_VAR)))
			return true;
		p = e + 1;
	}
	return false;
}

/* The `name = value` lines of a notebook's parameters cell. */
static int notebook_params(decree_routine_info *r, const char *code)
{
	for (const char *p = code; p && *p;) {
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
				while (v < p + n && (*v == ' ' || *v == '\t'))
					v++;
				vn = (size_t)(p + n - v);
				hash = memchr(v, '#', vn);
				if (hash && (*v != '"' && *v != '\''))
					vn = (size_t)(hash - v);
				if (add_param(r, p, (size_t)(e - p),
					      rhs_default(v, vn)) < 0)
					return -1;
			}
		}
		p += n + (nl ? 1 : 0);
	}
	return 0;
}

/* A notebook: the parameters of the first cell tagged "parameters"; it
 * needs the AI when a code cell names DECREE_AI_COMMAND. */
static int scan_notebook(decree_routine_info *r, const char *text, size_t len)
{
	json_error_t jerr;
	json_t *nb = json_loadb(text, len, 0, &jerr), *cells;
	bool have_params = false;
	size_t i;
	int ret = 0;

	if (!nb)
		return decree_error_set(DECREE_EINVALID,
					"%s:%d: not a notebook: %s", r->path,
					jerr.line, jerr.text);
	cells = json_object_get(nb, "cells");
	for (i = 0; json_is_array(cells) && i < json_array_size(cells) && !ret;
	     i++) {
		json_t *c = json_array_get(cells, i);
		json_t *tags =
			json_object_get(json_object_get(c, "metadata"), "tags");
		json_t *src = json_object_get(c, "source");
		json_t *type = json_object_get(c, "cell_type");
		bool params = false;
		buf code = BUF_INIT;
		for (size_t k = 0;
		     json_is_array(tags) && k < json_array_size(tags); k++)
			if (json_is_string(json_array_get(tags, k)) &&
			    !strcmp(json_string_value(json_array_get(tags, k)),
				    "parameters"))
				params = true;
		if (json_is_string(src))
			buf_puts(&code, json_string_value(src));
		for (size_t k = 0;
		     json_is_array(src) && k < json_array_size(src); k++)
			if (json_is_string(json_array_get(src, k)))
				buf_puts(&code,
					 json_string_value(
						 json_array_get(src, k)));
		if (json_is_string(type) &&
		    !strcmp(json_string_value(type), "code") && code.len &&
		    lines_name_ai(code.ptr, code.len))
			r->needs_ai = true;
		if (params && !have_params) {
			have_params = true;
			ret = notebook_params(r, code.ptr);
		}
		buf_release(&code);
	}
	json_decref(nb);
	return ret;
}

static void routine_release(decree_routine_info *r)
{
	decree_free((char *)r->name);
	decree_free((char *)r->path);
	decree_free((char *)r->summary);
	for (size_t i = 0; i < r->nparams; i++) {
		decree_free((char *)r->params[i].name);
		decree_free((char *)r->params[i].def);
	}
	decree_free((decree_routine_param *)r->params);
}

void decree_routine_list_free(decree_routine_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		routine_release(&l->v[i]);
	decree_free(l->v);
	decree_free(l);
}

static int cmp_routine(const void *a, const void *b)
{
	return strcmp(((const decree_routine_info *)a)->name,
		      ((const decree_routine_info *)b)->name);
}

/* Read one routine file into *ri (name and path set). */
static int routine_scan(decree_routine_info *ri)
{
	buf text = BUF_INIT;
	int r;

	if ((r = fs_read_path(ri->path, &text)) == 0)
		r = ri->notebook ? scan_notebook(ri, text.ptr, text.len)
				 : scan_shell(ri, text.ptr, text.len);
	if (r == 0 && !ri->notebook)
		ri->needs_ai = lines_name_ai(text.ptr, text.len);
	buf_release(&text);
	return r;
}

/* A name with both forms: the shell routine wins, once (v sorted). */
static void drop_duplicates(decree_routine_list *l)
{
	for (size_t i = 1; i < l->n;) {
		size_t drop;
		if (strcmp(l->v[i].name, l->v[i - 1].name)) {
			i++;
			continue;
		}
		drop = l->v[i].notebook ? i : i - 1;
		routine_release(&l->v[drop]);
		memmove(&l->v[drop], &l->v[drop + 1],
			(l->n - drop - 1) * sizeof(*l->v));
		l->n--;
	}
}

int routine_list_load(decree_routine_list **out, const char *root,
		      bool notebooks)
{
	char dir[PATH_MAX];
	decree_routine_list *l;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	if (!(l = decree_calloc(1, sizeof(*l))))
		return -1;
	snprintf(dir, sizeof(dir), "%s/.decree/routines", root);
	if (!(d = opendir(dir))) {
		if (errno == ENOENT) {
			*out = l;
			return 0;
		}
		decree_free(l);
		return decree_error_os("cannot read '%s'", dir);
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool nb = len > 6 && !strcmp(de->d_name + len - 6, ".ipynb");
		bool sh = len > 3 && !strcmp(de->d_name + len - 3, ".sh");
		decree_routine_info *ri;
		char *path;
		if (de->d_name[0] == '.' || (!sh && !nb) || (nb && !notebooks))
			continue;
		if (GROW(l->v, cap, l->n + 1) < 0) {
			r = -1;
			break;
		}
		ri = &l->v[l->n++];
		memset(ri, 0, sizeof(*ri));
		ri->notebook = nb;
		ri->name = decree_strndup(de->d_name, len - (nb ? 6 : 3));
		if ((path = decree_malloc(strlen(dir) + len + 2)))
			snprintf(path, strlen(dir) + len + 2, "%s/%s", dir,
				 de->d_name);
		ri->path = path;
		if (!ri->name || !ri->path || (r = routine_scan(ri)) < 0) {
			r = r < 0 ? r : -1;
			break;
		}
	}
	closedir(d);
	if (r < 0) {
		decree_routine_list_free(l);
		return r;
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_routine);
	drop_duplicates(l);
	*out = l;
	return 0;
}

int decree_routine_list_get(decree_routine_list **out, decree_project *p)
{
	return routine_list_load(out, p->root, p->cfg->notebook_support);
}

size_t decree_routine_list_count(const decree_routine_list *l)
{
	return l->n;
}

const decree_routine_info *decree_routine_list_at(const decree_routine_list *l,
						  size_t i)
{
	return i < l->n ? &l->v[i] : NULL;
}

const decree_routine_info *
decree_routine_list_find(const decree_routine_list *l, const char *name)
{
	for (size_t i = 0; name && i < l->n; i++)
		if (!strcmp(l->v[i].name, name))
			return &l->v[i];
	return NULL;
}

/* --- the AI command --------------------------------------------------------
 */

bool routine_program_found(const char *prog, const char *root)
{
	const char *path = getenv("PATH");
	char probe[PATH_MAX];
	struct stat st;

	if (!*prog)
		return false;
	if (strchr(prog, '/')) {
		if (prog[0] == '/')
			snprintf(probe, sizeof(probe), "%s", prog);
		else
			snprintf(probe, sizeof(probe), "%s/%s", root, prog);
		return stat(probe, &st) == 0 && S_ISREG(st.st_mode) &&
		       access(probe, X_OK) == 0;
	}
	for (const char *p = path ? path : "/usr/bin:/bin";;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (!n)
			snprintf(probe, sizeof(probe), "%s/%s", root, prog);
		else if (p[0] == '/')
			snprintf(probe, sizeof(probe), "%.*s/%s", (int)n, p,
				 prog);
		else /* relative to where the routine runs */
			snprintf(probe, sizeof(probe), "%s/%.*s/%s", root,
				 (int)n, p, prog);
		if (stat(probe, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(probe, X_OK) == 0)
			return true;
		if (!c)
			return false;
		p = c + 1;
	}
}

/* A first word only a shell can judge: a keyword or a builtin. */
static bool shell_word(const char *w)
{
	static const char *const words[] = {
		"!",	    "[[",      "{",	 "case",  "coproc",  "for",
		"function", "if",      "select", "time",  "until",   "while",
		".",	    ":",       "[",	 "alias", "builtin", "cd",
		"command",  "declare", "echo",	 "eval",  "exec",    "export",
		"false",    "local",   "printf", "pwd",	  "read",    "set",
		"source",   "test",    "true",	 "type",  "typeset", "ulimit",
		"umask",    "unset",   NULL,
	};
	for (size_t i = 0; words[i]; i++)
		if (!strcmp(w, words[i]))
			return true;
	return false;
}

bool routine_command_found(char *prog, size_t len, const char *cmd,
			   const char *root)
{
	const char *p = cmd;

	prog[0] = '\0';
	for (;;) {
		const char *w, *e;
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			return false; /* only assignments, or nothing */
		w = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		if ((size_t)(p - w) >= len)
			return true; /* too long to judge */
		snprintf(prog, len, "%.*s", (int)(p - w), w);
		e = w;
		while (e < p && is_ident(*e))
			e++;
		if (e > w && is_ident_start(*w) && e < p && *e == '=')
			continue; /* NAME=value before the program */
		if (strpbrk(prog, "'\"\\$`(){}|;&<>*?[]~#") || shell_word(prog))
			return true;
		return routine_program_found(prog, root);
	}
}

/* --- running ----------------------------------------------------------------
 */

/* The environment of a child: the host's, with `set` applied in order (a
 * later entry wins); v[owned..] are ours.  Built before the spawn:
 * nothing may allocate in the child of a multi-threaded host. */
typedef struct {
	char **v;
	size_t owned;
} child_env;

static void env_release(child_env *e)
{
	for (size_t i = e->owned; e->v && e->v[i]; i++)
		decree_free(e->v[i]);
	decree_free(e->v);
	e->v = NULL;
}

static int env_build(child_env *e, const kvlist *set)
{
	size_t n = 0, k = 0;

	while (environ && environ[n])
		n++;
	if (!(e->v = decree_calloc(n + set->n + 1, sizeof(char *))))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t kl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;
		for (size_t j = 0; j < set->n && !replaced; j++)
			replaced = strlen(set->v[j].key) == kl &&
				   !memcmp(set->v[j].key, environ[i], kl);
		if (!replaced)
			e->v[k++] = environ[i];
	}
	e->owned = k;
	for (size_t j = 0; j < set->n; j++) {
		size_t len =
			strlen(set->v[j].key) + strlen(set->v[j].value) + 2;
		if (!(e->v[k] = decree_malloc(len))) {
			env_release(e);
			return -1;
		}
		snprintf(e->v[k++], len, "%s=%s", set->v[j].key,
			 set->v[j].value);
	}
	return 0;
}

/* Spawn argv[0] (PATH search) in root, in a session of its own (so every
 * descendant can be found and stopped: kill_session), stdin /dev/null,
 * stdout to out_fd and stderr to err_fd, default signal dispositions and
 * an empty signal mask. */
static int spawn(pid_t *pid, const char *root, char *const argv[],
		 char *const envp[], int out_fd, int err_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t all, none;
	int e;

	sigfillset(&all);
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	posix_spawn_file_actions_addchdir_np(&fa, root);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID |
					      POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setsigmask(&at, &none);
	e = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (e) {
		errno = e;
		return decree_error_os("cannot start '%s'", argv[0]);
	}
	return 0;
}

static bool cancelled(const volatile int *cancel)
{
	return cancel && *cancel;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Send sig to every live process of session sid (the spawned child is
 * its leader, so its process group is sid as well).  Returns whether any
 * live process was found. */
static bool signal_session(pid_t sid, int sig)
{
	struct dirent *de;
	bool any = false;
	DIR *d;

	kill(-sid, sig);
	if (!(d = opendir("/proc")))
		return false;
	while ((de = readdir(d))) {
		long pid = strtol(de->d_name, NULL, 10), ppid, pgrp, sess;
		char state;
		if (pid <= 0 ||
		    fs_proc_stat(pid, &state, &ppid, &pgrp, &sess) < 0 ||
		    sess != sid || state == 'Z' || state == 'X')
			continue;
		kill((pid_t)pid, sig);
		any = true;
	}
	closedir(d);
	return any;
}

/*
 * Kill whatever the child left running: background jobs and their
 * descendants, in any process group of its session.  Forks racing with
 * the kill are caught by the next round.  (A descendant that started a
 * session of its own with setsid() is out of reach: only a cgroup or a
 * subreaper could find it, and neither is the library's to set up.)
 */
static void kill_session(pid_t sid)
{
	for (int round = 0; round < 100 && signal_session(sid, SIGKILL);
	     round++) {
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * The log of a running attempt, read as it grows (docs/pipeline.md
 * "Watching a routine"): the routine writes to the log file as it always
 * does, and what it wrote since the last look is handed to the host.
 * Reading the file, not a pipe between the routine and its log, keeps
 * the log exactly what the routine wrote, cannot block the routine
 * whatever the host does with the bytes, and leaves the routine's stdout
 * and stderr the regular file they always were.
 */
typedef struct {
	int fd; /* the log, opened for reading; -1: nobody watches */
	off_t pos;
	void (*cb)(void *payload, const char *data, size_t len);
	void *payload;
} log_tail;

#define TAIL_CHUNK	 65536
#define TAIL_ROUND	 (4u << 20) /* bytes per look while it runs */
#define TAIL_INTERVAL_MS 50

/* Hand over what the log holds beyond t->pos, up to `limit` bytes.
 * Returns whether the limit stopped it (there may be more). */
static bool tail_pump(log_tail *t, off_t limit)
{
	char chunk[TAIL_CHUNK];
	off_t done = 0;
	ssize_t k;

	if (t->fd < 0)
		return false;
	while (done < limit) {
		size_t want = sizeof(chunk);
		if ((off_t)want > limit - done)
			want = (size_t)(limit - done);
		k = pread(t->fd, chunk, want, t->pos);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		t->pos += k;
		done += k;
		t->cb(t->payload, chunk, (size_t)k);
	}
	return true;
}

/* After the attempt, with every process of its session gone: the rest
 * of the log, up to its size now (a descendant that escaped with setsid
 * may still be writing: it cannot keep us here). */
static void tail_finish(log_tail *t)
{
	struct stat st;

	if (t->fd >= 0 && fstat(t->fd, &st) == 0 && st.st_size > t->pos)
		(void)tail_pump(t, st.st_size - t->pos);
}

/*
 * Wait for pid.  When *cancel becomes set, its session gets SIGTERM and,
 * 5 s later, SIGKILL.  A pidfd wakes the wait the moment the child
 * exits; the 100 ms timeout (50 ms while the log is watched, or a signal
 * to the host, which interrupts poll) lets the flag be seen.
 */
static int wait_child(int *ws, bool *interrupted, pid_t pid,
		      const volatile int *cancel, log_tail *tail)
{
	int pfd = -1;
	int64_t kill_at = 0;

#ifdef SYS_pidfd_open
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
	for (;;) {
		pid_t w = waitpid(pid, ws, WNOHANG);
		bool more;
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			int r = decree_error_os("cannot wait for the routine");
			if (pfd >= 0)
				close(pfd);
			kill_session(pid);
			return r;
		}
		if (!*interrupted && cancelled(cancel)) {
			*interrupted = true;
			signal_session(pid, SIGTERM);
			kill_at = now_ms() + 5000;
		} else if (kill_at && now_ms() >= kill_at) {
			signal_session(pid, SIGKILL);
			kill_at = 0;
		}
		more = tail_pump(tail, TAIL_ROUND);
		if (pfd >= 0) {
			struct pollfd p = { pfd, POLLIN, 0 };
			(void)poll(&p, 1,
				   more		   ? 0
				   : tail->fd >= 0 ? TAIL_INTERVAL_MS
						   : 100);
		} else if (!more) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
		}
	}
	if (pfd >= 0)
		close(pfd);
	kill_session(pid); /* nothing it started writes to the tree later */
	tail_finish(tail);
	return 0;
}

/* The environment an attempt adds: declared parameters the message sets
 * first, so nothing after them can be overridden by a message. */
static int attempt_env(kvlist *set, const routine_attempt *x,
		       const char *msgfile)
{
	char a[16];
	int r = 0;

	for (size_t i = 0; i < x->ri->nparams && !r; i++) {
		const char *v = message_get(x->m, x->ri->params[i].name);
		if (v)
			r = kvlist_set(set, x->ri->params[i].name, v);
	}
	snprintf(a, sizeof(a), "%d", x->attempt);
	if (r || kvlist_set(set, "spec_file", x->spec_file) ||
	    kvlist_set(set, "message_file", msgfile) ||
	    kvlist_set(set, "message_id", x->id) ||
	    kvlist_set(set, "message_dir", x->dir_rel) ||
	    kvlist_set(set, "chain", x->chain) ||
	    kvlist_set(set, "seq", x->seq) ||
	    kvlist_set(set, "DECREE_ATTEMPT", a) ||
	    (x->failure_context &&
	     kvlist_set(set, "DECREE_FAILURE_CONTEXT", x->failure_context)) ||
	    (x->ai && kvlist_set(set, "DECREE_AI_COMMAND", x->ai)))
		return -1;
	return 0;
}

/* papermill IN OUT -p k v ...: the standard variables, then the declared
 * parameters the message sets. */
static const char **notebook_argv(const routine_attempt *x, const char *msgfile,
				  const char *nbout)
{
	const char *std[][2] = {
		{ "spec_file", x->spec_file }, { "message_file", msgfile },
		{ "message_id", x->id },       { "message_dir", x->dir_rel },
		{ "chain", x->chain },	       { "seq", x->seq },
	};
	const char **argv = decree_calloc(
		3 * (ARRAY_SIZE(std) + x->ri->nparams) + 4, sizeof(char *));
	size_t a = 0;

	if (!argv)
		return NULL;
	argv[a++] = "papermill";
	argv[a++] = x->ri->path;
	argv[a++] = nbout;
	for (size_t i = 0; i < ARRAY_SIZE(std); i++) {
		argv[a++] = "-p";
		argv[a++] = std[i][0];
		argv[a++] = std[i][1];
	}
	for (size_t i = 0; i < x->ri->nparams; i++) {
		const char *v = message_get(x->m, x->ri->params[i].name);
		if (v) {
			argv[a++] = "-p";
			argv[a++] = x->ri->params[i].name;
			argv[a++] = v;
		}
	}
	return argv;
}

int routine_run(int *status, bool *interrupted, const routine_attempt *x,
		const char *log_path)
{
	char msgfile[PATH_MAX], nbout[PATH_MAX];
	kvlist set = KVLIST_INIT;
	child_env env = { NULL, 0 };
	const char *sh_argv[] = { "bash", x->ri->path, NULL };
	const char **argv = sh_argv;
	log_tail tail = { -1, 0, x->output, x->output_payload };
	pid_t pid;
	int logfd, ws, r;

	*interrupted = false;
	snprintf(msgfile, sizeof(msgfile), "%s/message.md", x->dir_rel);
	snprintf(nbout, sizeof(nbout), "%s/output.ipynb", x->dir_rel);
	if ((logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644)) < 0)
		return decree_error_os("cannot write '%s'", log_path);
	/* a description of its own: reading never moves the offset the
	 * routine writes at */
	if (x->output && (tail.fd = open(log_path, O_RDONLY | O_CLOEXEC)) < 0) {
		r = decree_error_os("cannot read '%s'", log_path);
		close(logfd);
		return r;
	}
	if (x->ri->notebook && !(argv = notebook_argv(x, msgfile, nbout)))
		r = -1;
	else if ((r = attempt_env(&set, x, msgfile)) == 0 &&
		 (r = env_build(&env, &set)) == 0 &&
		 (r = spawn(&pid, x->root, (char *const *)argv, env.v, logfd,
			    logfd)) == 0)
		r = wait_child(&ws, interrupted, pid, x->cancel, &tail);
	close(logfd);
	if (tail.fd >= 0)
		close(tail.fd);
	env_release(&env);
	kvlist_release(&set);
	if (argv != sh_argv)
		decree_free(argv);
	if (r < 0)
		return r;
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (cancelled(x->cancel))
		*interrupted = true;
	return 0;
}

/* --- the router
 * ----------------------------------------------------------------- */

static void shell_quote(buf *out, const char *s)
{
	buf_putc(out, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			buf_puts(out, "'\\''");
		else
			buf_putc(out, *s);
	}
	buf_putc(out, '\'');
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && strchr(" \n\t\r", **s))
		(*s)++;
	while (*e > *s && strchr(" \n\t\r", (*e)[-1]))
		(*e)--;
}

int router_ask(char **answer, const char *root, const char *tpl,
	       const char *prompt)
{
	buf cmd = BUF_INIT, got = BUF_INIT;
	const char *argv[] = { "/bin/sh", "-c", NULL, NULL };
	int fds[2], ws, r;
	pid_t pid;
	char chunk[4096];
	ssize_t k;

	*answer = NULL;
	for (const char *t = tpl; *t;) {
		const char *hit = strstr(t, "{prompt}");
		if (!hit) {
			buf_puts(&cmd, t);
			break;
		}
		buf_put(&cmd, t, (size_t)(hit - t));
		shell_quote(&cmd, prompt);
		t = hit + 8;
	}
	argv[2] = cmd.ptr;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		buf_release(&cmd);
		return -1;
	}
	r = spawn(&pid, root, (char *const *)argv, environ, fds[1], 2);
	close(fds[1]);
	buf_release(&cmd);
	if (r < 0) {
		close(fds[0]);
		decree_error_clear();
		return -1;
	}
	while ((k = read(fds[0], chunk, sizeof(chunk))) > 0 ||
	       (k < 0 && errno == EINTR))
		if (k > 0 && got.len < (1u << 20))
			buf_put(&got, chunk, (size_t)k);
	close(fds[0]);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	kill_session(pid);
	if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && got.len) {
		const char *s = got.ptr, *e = got.ptr + got.len;
		trim(&s, &e);
		*answer = decree_strndup(s, (size_t)(e - s));
	}
	buf_release(&got);
	return *answer ? 0 : -1;
}
