/*
 * runner.c - processing messages (docs/pipeline.md).
 *
 * One message:
 *   parse -> normalize (id, chain, seq, type, routine; the inbox file is
 *   rewritten only if something was missing) -> run directory
 *   .decree/runs/<id>/ with message.md -> engine checkpoint (session
 *   "decree", message = id) -> manifest.json -> attempts:
 *     1..max_retries      keep each other's changes; a failed attempt k
 *                         leaves changes-<k>.diff and routine[-k].log
 *     all failed          revert to the checkpoint, failure-context.md,
 *                         one clean-slate attempt (max_retries + 1)
 *     success             changes.diff (net change), message to done/,
 *                         spec name appended to specs/processed-spec.md
 *     still failing       revert, message to dead/ (with dead-letter.md),
 *                         follow-ups it left in the inbox go with it
 *   then outcome.json.  A chain is processed depth-first: after a message,
 *   the inbox message of the same chain with the lowest seq comes next.
 *
 * Ctrl-C / SIGTERM while a routine runs: its process group gets SIGTERM
 * (SIGKILL after 5 s), the partial work is diffed, the tree reverted, the
 * message stays in the inbox, and processing stops (exit 130).
 *
 * The whole run holds .decree/pipeline.lock (flock): two pipelines never
 * work on one tree at once.
 */
#include "util/common.h"
#include "pipeline.h"
#include "util/json.h"

#include <dirent.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>

#define SESSION "decree"

typedef struct {
	project *p;
	decree_store *s;
	routine_info *routines;
	size_t nroutines;
	int lockfd;
	size_t ndone, ndead;
	buf json; /* --json: the runs processed */
	size_t njson;
} runner;

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void say(const runner *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const runner *r, const char *fmt, ...)
{
	va_list ap;
	if (r->p->ctx->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* --- small file helpers
 * -------------------------------------------------------
 */

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* "<16 digits>-<digits>" (optionally followed by `suffix`): the chain and
 * seq of a run id or follow-up file name. */
static bool parse_id(const char *s, const char *suffix, char chain[17],
		     long *seq)
{
	size_t n = strlen(s), sl = suffix ? strlen(suffix) : 0;
	const char *dash;

	if (n < sl || (sl && strcmp(s + n - sl, suffix)))
		return false;
	n -= sl;
	if (n < 18 || s[16] != '-' || !all_digits(s, 16) ||
	    !all_digits(s + 17, n - 17) || n - 17 > 9)
		return false;
	dash = s + 16;
	memcpy(chain, s, 16);
	chain[16] = '\0';
	*seq = strtol(dash + 1, NULL, 10);
	return true;
}

/* --- inbox
 * ----------------------------------------------------------------------
 */

typedef struct {
	char *file; /* name in the inbox directory */
	char chain[17];
	long seq;
	bool has_id;
} inbox_item;

static void items_free(inbox_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].file);
	free(v);
}

/* The .md files of an inbox directory with the chain/seq they carry. */
static int list_dir_messages(inbox_item **out, size_t *nout, const char *dir)
{
	inbox_item *v = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	*out = NULL;
	*nout = 0;
	if (!d)
		return errno == ENOENT ? 0
				       : fail("cannot read '%s': %s", dir,
					      strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX];
		struct stat st;
		inbox_item *it, *nv;
		buf text = BUF_INIT;
		message m;
		char *err;
		if (de->d_name[0] == '.' || len < 4 ||
		    strcmp(de->d_name + len - 3, ".md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
			closedir(d);
			items_free(v, n);
			return fail("out of memory");
		}
		v = nv;
		it = &v[n++];
		memset(it, 0, sizeof(*it));
		it->file = strdup(de->d_name);
		if (cli_read_file(&text, path) == 0 &&
		    message_parse(&m, text.ptr ? text.ptr : "", text.len,
				  &err) == 0) {
			const char *c = message_get(&m, "chain");
			const char *q = message_get(&m, "seq");
			if (c && strlen(c) == 16 && all_digits(c, 16) && q &&
			    all_digits(q, strlen(q)) && strlen(q) < 10) {
				memcpy(it->chain, c, 17);
				it->seq = strtol(q, NULL, 10);
				it->has_id = true;
			}
			message_release(&m);
		} else {
			free(err);
		}
		buf_release(&text);
		if (!it->has_id)
			it->has_id = parse_id(de->d_name, ".md", it->chain,
					      &it->seq);
	}
	closedir(d);
	*out = v;
	*nout = n;
	return 0;
}

/* --- chain ids
 * -------------------------------------------------------------------
 */

static bool chain_in(const inbox_item *v, size_t n, const char *chain)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].has_id && !strcmp(v[i].chain, chain))
			return true;
	return false;
}

static bool chain_has_run(const project *p, const char *chain)
{
	char dir[PATH_MAX];
	struct dirent *de;
	bool hit = false;
	DIR *d;

	project_path(dir, p, ".decree/runs");
	if (!(d = opendir(dir)))
		return false;
	while (!hit && (de = readdir(d)))
		hit = !strncmp(de->d_name, chain, 16) && de->d_name[16] == '-';
	closedir(d);
	return hit;
}

/* A new chain id: local time YYYYMMDDHHmmss + a 2-digit counter unique
 * among the chains of runs/, inbox/, done/ and dead/. */
static int new_chain(char out[17], const project *p)
{
	static const char *const dirs[] = { ".decree/inbox",
					    ".decree/inbox/done",
					    ".decree/inbox/dead" };
	inbox_item *v[3] = { NULL, NULL, NULL };
	size_t n[3] = { 0, 0, 0 };
	int r = 0;

	for (size_t i = 0; i < 3; i++) {
		char dir[PATH_MAX];
		project_path(dir, p, dirs[i]);
		if ((r = list_dir_messages(&v[i], &n[i], dir)) != 0)
			goto done;
	}
	for (;;) {
		time_t now = time(NULL);
		struct tm tm;
		char stamp[15];
		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
		for (int c = 0; c < 100; c++) {
			snprintf(out, 17, "%s%02d", stamp, c);
			if (!chain_in(v[0], n[0], out) &&
			    !chain_in(v[1], n[1], out) &&
			    !chain_in(v[2], n[2], out) &&
			    !chain_has_run(p, out))
				goto done;
		}
		sleep(1); /* 100 chains this second already */
	}
done:
	for (size_t i = 0; i < 3; i++)
		items_free(v[i], n[i]);
	return r;
}

/* --- commands: router, routines
 * ----------------------------------------------------
 */

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

/* Run commands.router with the prompt; its trimmed stdout in *answer
 * (malloc'ed).  Returns 0, or -1 if there is no router or it failed. */
static int ask_router(char **answer, const runner *r, const char *prompt)
{
	const char *tpl = r->p->cfg.router;
	buf cmd = BUF_INIT, got = BUF_INIT;
	int fds[2], ws;
	pid_t pid;
	char chunk[4096];
	ssize_t k;

	*answer = NULL;
	if (!tpl)
		return -1;
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
	if (pipe2(fds, O_CLOEXEC) < 0) {
		buf_release(&cmd);
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(fds[1], 1);
		if (chdir(r->p->root) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd.ptr, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	buf_release(&cmd);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	while ((k = read(fds[0], chunk, sizeof(chunk))) > 0 ||
	       (k < 0 && errno == EINTR))
		if (k > 0 && got.len < (1u << 20))
			buf_put(&got, chunk, (size_t)k);
	close(fds[0]);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !got.len) {
		buf_release(&got);
		return -1;
	}
	{
		char *s = got.ptr, *e = got.ptr + got.len;
		while (s < e &&
		       (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\n' ||
				 e[-1] == '\t' || e[-1] == '\r'))
			e--;
		*answer = strndup(s, (size_t)(e - s));
	}
	buf_release(&got);
	return *answer ? 0 : -1;
}

static bool on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char probe[PATH_MAX];

	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		snprintf(probe, sizeof(probe), "%.*s/%s", (int)n, n ? p : ".",
			 prog);
		if (access(probe, X_OK) == 0)
			return true;
		p += n + (c ? 1 : 0);
	}
	return false;
}

typedef struct {
	const char *id, *dir_rel, *chain, *seq, *spec_file;
	const message *m;
	const routine_info *ri;
	int attempt;
	const char *failure_context; /* rel path or NULL */
} exec_spec;

/* Run one attempt; *status: exit code or 128+signal; *interrupted when a
 * signal to decree stopped it.  Output goes to log_path. */
static int run_routine(int *status, bool *interrupted, const runner *r,
		       const exec_spec *x, const char *log_path)
{
	const project *p = r->p;
	char msgfile[PATH_MAX], nbout[PATH_MAX];
	pid_t pid;
	int logfd, ws;

	*interrupted = false;
	snprintf(msgfile, sizeof(msgfile), "%s/message.md", x->dir_rel);
	snprintf(nbout, sizeof(nbout), "%s/output.ipynb", x->dir_rel);
	if ((logfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			  0644)) < 0)
		return fail("cannot write '%s': %s", log_path, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(logfd);
		return fail("cannot start routine: %s", strerror(errno));
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGINT, &dfl, NULL);
		sigaction(SIGTERM, &dfl, NULL);
		sigaction(SIGHUP, &dfl, NULL);
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		if (chdir(p->root) < 0)
			_exit(126);
		/* the parameters the routine declares, where the message sets
		 * them (absent ones keep the routine's default); first, so that
		 * nothing below can be overridden by a message */
		for (size_t i = 0; i < x->ri->nparams; i++) {
			const char *v =
				message_get(x->m, x->ri->params[i].name);
			if (v)
				setenv(x->ri->params[i].name, v, 1);
		}
		setenv("spec_file", x->spec_file, 1);
		setenv("message_file", msgfile, 1);
		setenv("message_id", x->id, 1);
		setenv("message_dir", x->dir_rel, 1);
		setenv("chain", x->chain, 1);
		setenv("seq", x->seq, 1);
		{
			char a[16];
			snprintf(a, sizeof(a), "%d", x->attempt);
			setenv("DECREE_ATTEMPT", a, 1);
		}
		if (x->failure_context)
			setenv("DECREE_FAILURE_CONTEXT", x->failure_context, 1);
		if (p->cfg.ai)
			setenv("DECREE_AI_COMMAND", p->cfg.ai, 1);
		if (!x->ri->notebook) {
			execlp("bash", "bash", x->ri->path, (char *)NULL);
			_exit(127);
		}
		{
			/* papermill IN OUT -p k v ... */
			const char **argv =
				calloc(2 * (6 + x->m->n) + 8, sizeof(char *));
			size_t a = 0;
			if (!argv)
				_exit(126);
			argv[a++] = "papermill";
			argv[a++] = x->ri->path;
			argv[a++] = nbout;
#define PARAM(k, v)               \
	do {                      \
		argv[a++] = "-p"; \
		argv[a++] = (k);  \
		argv[a++] = (v);  \
	} while (0)
			PARAM("spec_file", x->spec_file);
			PARAM("message_file", msgfile);
			PARAM("message_id", x->id);
			PARAM("message_dir", x->dir_rel);
			PARAM("chain", x->chain);
			PARAM("seq", x->seq);
			for (size_t i = 0; i < x->ri->nparams; i++) {
				const char *v = message_get(
					x->m, x->ri->params[i].name);
				if (v)
					PARAM(x->ri->params[i].name, v);
			}
#undef PARAM
			argv[a] = NULL;
			execvp("papermill", (char *const *)argv);
			_exit(127);
		}
	}
	close(logfd);
	setpgid(pid, pid); /* also here: no race with the child's exec */
	for (;;) {
		pid_t w = waitpid(pid, &ws, 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return fail("cannot wait for the routine: %s",
				    strerror(errno));
		if (got_signal && !*interrupted) {
			*interrupted = true;
			kill(-pid, SIGTERM);
			for (int i = 0; i < 100; i++) { /* 5 s */
				struct timespec ts = { 0, 50000000 };
				if (waitpid(pid, &ws, WNOHANG) == pid)
					goto reaped;
				nanosleep(&ts, NULL);
			}
			kill(-pid, SIGKILL);
		}
	}
reaped:
	if (*interrupted)
		kill(-pid, SIGKILL); /* whatever it left running */
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (got_signal)
		*interrupted = true;
	return 0;
}

/* --- diffs, manifest, revert
 * ---------------------------------------------------------
 */

static int diff_to_file(void *payload, const decree_diff_file *f)
{
	if (f->text)
		return buf_put(payload, f->text, f->len) < 0 ? -1 : 0;
	return 0;
}

/* Write the diff from checkpoint `ck` to the working tree into `path`. */
static int write_diff(const runner *r, const char *ck, const char *path,
		      size_t *nfiles)
{
	buf text = BUF_INIT;
	int ret;

	if (decree_checkpoint_diff(r->s, ck, NULL, NULL, diff_to_file, &text) <
	    0) {
		buf_release(&text);
		return lib_fail(-1);
	}
	if (nfiles) {
		*nfiles = 0;
		for (size_t i = 0; i + 11 <= text.len; i++)
			if ((i == 0 || text.ptr[i - 1] == '\n') &&
			    !memcmp(text.ptr + i, "diff --git ", 11))
				(*nfiles)++;
	}
	ret = cli_write_atomic(path, text.ptr, text.len);
	buf_release(&text);
	return ret;
}

static int count_diff(void *payload, const char *path, char status)
{
	buf *b = payload;
	(void)status;
	if (b->len < 400)
		buf_printf(b, "%s'%s'", b->len ? ", " : "", path);
	return 0;
}

/* Put the tree back to checkpoint `ck` and verify every path against it:
 * any difference afterwards is a hard error naming the paths. */
static int revert_to(const runner *r, const char *ck)
{
	decree_restore_result res;
	buf left = BUF_INIT;
	int ret = 0;

	if (decree_checkpoint_restore(&res, r->s, ck, NULL) < 0)
		return lib_fail(-1);
	if (decree_checkpoint_compare(r->s, ck, NULL, count_diff, &left) < 0)
		ret = lib_fail(-1);
	else if (left.len)
		ret = fail("revert verification failed: %s differ(s) from the "
			   "manifest",
			   left.ptr);
	buf_release(&left);
	return ret;
}

static int write_manifest(const runner *r, const char *ck, const char *path)
{
	decree_snapshot *sn;
	buf b = BUF_INIT;
	size_t n;
	int ret;

	if (decree_checkpoint_show(&sn, NULL, r->s, ck) < 0)
		return lib_fail(-1);
	n = decree_snapshot_count(sn);
	/* ~140 bytes an entry; plain appends (buf_printf per entry costs a
	 * third of a Linux-sized manifest) */
	buf_grow(&b, n * 140 + 64);
	buf_puts(&b, "{\"files\":{");
	for (size_t i = 0, k = 0; i < n; i++) {
		decree_file_info fi;
		char num[24];
		int len;
		decree_snapshot_at(&fi, sn, i);
		if (!fi.mode)
			continue; /* above the size limit: not stored */
		if (k++)
			buf_putc(&b, ',');
		json_str(&b, fi.path);
		buf_puts(&b, ":{\"sha256\":\"");
		buf_put(&b, fi.sha256, 64);
		len = snprintf(num, sizeof(num), "%" PRIu64, fi.size);
		buf_puts(&b, "\",\"size\":");
		buf_put(&b, num, (size_t)len);
		buf_puts(&b, fi.mode == 0755	  ? ",\"mode\":\"755\"}"
			     : fi.mode == 0120000 ? ",\"mode\":\"120000\"}"
						  : ",\"mode\":\"644\"}");
	}
	buf_puts(&b, "}}\n");
	decree_snapshot_free(sn);
	ret = cli_write_atomic(path, b.ptr, b.len);
	buf_release(&b);
	return ret;
}

/* The last `max` bytes of a log, for failure-context.md. */
static void tail_of(buf *out, const char *path, size_t max)
{
	buf all = BUF_INIT;
	if (cli_read_file(&all, path) == 0 && all.len) {
		size_t from = all.len > max ? all.len - max : 0;
		while (from && from < all.len && all.ptr[from - 1] != '\n')
			from++;
		buf_put(out, all.ptr + from, all.len - from);
		if (all.ptr[all.len - 1] != '\n')
			buf_putc(out, '\n');
	} else {
		buf_puts(out, "(no output)\n");
	}
	buf_release(&all);
}

/* --- processed specs
 * -------------------------------------------------------------------
 */

bool spec_processed(const project *p, const char *spec_name)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	bool hit = false;

	project_path(path, p, "specs/processed-spec.md");
	if (cli_read_file(&b, path) == 0 && b.len) {
		buf_putc(&b, '\0');
		for (char *line = b.ptr, *nl; line && *line && !hit;
		     line = nl) {
			nl = strchr(line, '\n');
			if (nl)
				*nl++ = '\0';
			while (*line == ' ' || *line == '-' || *line == '*')
				line++;
			size_t n = strlen(line);
			while (n && (line[n - 1] == ' ' || line[n - 1] == '\r'))
				line[--n] = '\0';
			if (!strncmp(line, "specs/", 6))
				line += 6;
			hit = !strcmp(line, spec_name);
		}
	}
	buf_release(&b);
	return hit;
}

static int mark_spec_processed(const project *p, const char *input_file)
{
	const char *base = strrchr(input_file, '/');
	char path[PATH_MAX];
	buf b = BUF_INIT;
	int ret;

	base = base ? base + 1 : input_file;
	if (spec_processed(p, base))
		return 0;
	project_path(path, p, "specs/processed-spec.md");
	if (cli_read_file(&b, path) < 0 && errno != ENOENT) {
		buf_release(&b);
		return fail("cannot read '%s': %s", path, strerror(errno));
	}
	if (b.len && b.ptr[b.len - 1] != '\n')
		buf_putc(&b, '\n');
	buf_printf(&b, "%s\n", base);
	ret = cli_write_atomic(path, b.ptr, b.len);
	buf_release(&b);
	return ret;
}

/* --- one message
 * ------------------------------------------------------------------------
 */

enum outcome { OUT_DONE, OUT_DEAD, OUT_INTERRUPTED };

static const char *outcome_name(enum outcome o)
{
	return o == OUT_DONE ? "done" : o == OUT_DEAD ? "dead" : "interrupted";
}

static int write_outcome(const char *dir, const char *id, const char *file,
			 const char *routine, enum outcome o, int attempts,
			 const char *reason, int64_t started)
{
	char path[PATH_MAX + 16];
	buf b = BUF_INIT;
	int ret;

	buf_puts(&b, "{");
	json_kv_str(&b, "id", id, false);
	json_kv_path(&b, "message", file, true);
	json_kv_str(&b, "routine", routine, true);
	json_kv_str(&b, "outcome", outcome_name(o), true);
	buf_printf(&b,
		   ",\"attempts\":%d,\"started\":%" PRId64
		   ",\"finished\":%" PRId64,
		   attempts, started, (int64_t)time(NULL));
	json_kv_str(&b, "reason", reason, true);
	buf_puts(&b, "}\n");
	snprintf(path, sizeof(path), "%s/outcome.json", dir);
	ret = cli_write_atomic(path, b.ptr, b.len);
	buf_release(&b);
	return ret;
}

static int move_message(const project *p, const char *file, const char *to)
{
	char from[PATH_MAX], dst[PATH_MAX], dir[PATH_MAX];

	project_path(dir, p, ".decree/inbox");
	snprintf(from, sizeof(from), "%s/%s", dir, file);
	snprintf(dst, sizeof(dst), "%s/%s/%s", dir, to, file);
	{
		char d[PATH_MAX + 8];
		snprintf(d, sizeof(d), "%s/%s", dir, to);
		mkdir(d, 0755);
	}
	if (rename(from, dst) < 0)
		return fail("cannot move '%s' to inbox/%s/: %s", file, to,
			    strerror(errno));
	return 0;
}

/* Dead-letter a message: note in its run directory, file to dead/. */
static int dead_letter(runner *r, const char *file, const char *rundir,
		       const char *why)
{
	char path[PATH_MAX + 32];
	buf note = BUF_INIT;
	int ret;

	if (rundir) {
		snprintf(path, sizeof(path), "%s/dead-letter.md", rundir);
		buf_printf(
			&note,
			"# Dead-lettered\n\n%s\n\nMove `.decree/inbox/dead/%s` "
			"back to `.decree/inbox/` to process it again.\n",
			why, file);
		cli_write_atomic(path, note.ptr, note.len);
		buf_release(&note);
	}
	ret = move_message(r->p, file, "dead");
	if (ret == 0) {
		r->ndead++;
		say(r, "dead-lettered %s: %s", file, why);
	}
	return ret;
}

/* A fresh run directory: an old one (a re-queued message) is moved aside. */
static int make_run_dir(char *out, const project *p, const char *id)
{
	char aside[PATH_MAX + 32];

	snprintf(out, PATH_MAX, "%s/.decree/runs/%s", p->root, id);
	if (exists(out)) {
		for (int k = 1;; k++) {
			snprintf(aside, sizeof(aside), "%s.old-%d", out, k);
			if (!exists(aside))
				break;
		}
		if (rename(out, aside) < 0)
			return fail("cannot move '%s' aside: %s", out,
				    strerror(errno));
	}
	{
		char runs[PATH_MAX];
		project_path(runs, p, ".decree/runs");
		mkdir(runs, 0755);
	}
	if (mkdir(out, 0755) < 0)
		return fail("cannot create '%s': %s", out, strerror(errno));
	return 0;
}

static int pick_routine(char **out, runner *r, const message *m)
{
	const char *v = message_get(m, "routine");
	const char *input = message_get(m, "input_file");

	*out = NULL;
	if (v && *v)
		return (*out = strdup(v)) ? 0 : -1;
	if (input && *input) { /* the spec's own frontmatter */
		char path[PATH_MAX];
		buf text = BUF_INIT;
		message sm;
		char *err;
		snprintf(path, sizeof(path), "%s/%s", r->p->root, input);
		if (cli_read_file(&text, path) == 0 &&
		    message_parse(&sm, text.ptr ? text.ptr : "", text.len,
				  &err) == 0) {
			const char *sr = message_get(&sm, "routine");
			if (sr && *sr)
				*out = strdup(sr);
			message_release(&sm);
		} else if (text.len) {
			free(err);
		}
		buf_release(&text);
		if (*out)
			return 0;
	}
	if (r->p->cfg.router && r->nroutines) {
		buf q = BUF_INIT;
		char *ans = NULL;
		buf_puts(&q, "Choose the routine for this task from: ");
		for (size_t i = 0; i < r->nroutines; i++)
			buf_printf(&q, "%s%s", i ? ", " : "",
				   r->routines[i].name);
		buf_puts(&q, ". Respond with ONLY the routine name.\n\n");
		buf_put(&q, m->body, m->body_len);
		if (ask_router(&ans, r, q.ptr) == 0) {
			char k[64];
			kebab_case(k, sizeof(k), ans, 50);
			if (routine_find(r->routines, r->nroutines, k))
				*out = strdup(k);
		}
		free(ans);
		buf_release(&q);
		if (*out)
			return 0;
	}
	return (*out = strdup(r->p->cfg.default_routine)) ? 0 : -1;
}

/* Fill the standard fields; *changed when the file must be rewritten. */
static int normalize(runner *r, message *out, const message *in,
		     const inbox_item *it, bool *changed)
{
	static const char *const std[] = { "id", "chain", "seq", "type",
					   "routine" };
	char chain[17], seqs[24], id[48], *routine = NULL;
	const char *input = message_get(in, "input_file");
	const char *type = message_get(in, "type");
	int ret = 0;

	memset(out, 0, sizeof(*out));
	*changed = false;
	if (it->has_id) {
		memcpy(chain, it->chain, 17);
		snprintf(seqs, sizeof(seqs), "%ld", it->seq);
	} else {
		if ((ret = new_chain(chain, r->p)) != 0)
			return ret;
		snprintf(seqs, sizeof(seqs), "0");
	}
	snprintf(id, sizeof(id), "%s-%s", chain, seqs);
	if (pick_routine(&routine, r, in) < 0)
		return fail("out of memory");
	if (!type || !*type)
		type = input && strlen(input) > 8 &&
				       !strcmp(input + strlen(input) - 8,
					       ".spec.md")
			       ? "spec"
			       : "task";
	{
		const char *vals[] = { id, chain, seqs, type, routine };
		for (size_t i = 0; i < 5; i++) {
			const char *have = message_get(in, std[i]);
			if (!have || strcmp(have, vals[i]))
				*changed = true;
			if (message_set(out, std[i], vals[i]) < 0)
				ret = fail("out of memory");
		}
	}
	for (size_t i = 0; i < in->n && !ret; i++) {
		bool is_std = false;
		for (size_t k = 0; k < 5; k++)
			is_std |= !strcmp(in->fields[i].key, std[k]);
		if (!is_std && message_set(out, in->fields[i].key,
					   in->fields[i].value) < 0)
			ret = fail("out of memory");
	}
	free(routine);
	if (!(out->body = malloc(in->body_len + 1)))
		return fail("out of memory");
	memcpy(out->body, in->body, in->body_len + 1);
	out->body_len = in->body_len;
	return ret; /* a complete message (*changed false) keeps its bytes */
}

/* Dead-letter the follow-ups of `chain` after seq `after` left in the
 * inbox by a message that was dead-lettered. */
static void dead_letter_followups(runner *r, const char *chain, long after,
				  const char *id)
{
	char dir[PATH_MAX];
	inbox_item *v;
	size_t n;

	project_path(dir, r->p, ".decree/inbox");
	if (list_dir_messages(&v, &n, dir) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char why[160];
		if (!v[i].has_id || strcmp(v[i].chain, chain) ||
		    v[i].seq <= after)
			continue;
		snprintf(why, sizeof(why),
			 "follow-up of %s, which was dead-lettered", id);
		dead_letter(r, v[i].file, NULL, why);
	}
	items_free(v, n);
}

/* Returns 0 (processed: done or dead), 130 (interrupted), or another exit
 * code on a hard error. */
static int process_message(runner *r, const inbox_item *it, char chain_out[17])
{
	project *p = r->p;
	char path[PATH_MAX], rundir[PATH_MAX], rel[PATH_MAX], file[PATH_MAX];
	char ck[DECREE_ID_HEXLEN + 1], why[512], seqs[24];
	const char *id, *routine_name, *input;
	const routine_info *ri;
	buf text = BUF_INIT, ctx_md = BUF_INIT;
	message in, m;
	char *err = NULL;
	bool changed = false, ok = false, interrupted = false;
	int64_t started = (int64_t)time(NULL);
	int ret = 0, attempts = 0, max = (int)p->cfg.max_retries;
	enum outcome out = OUT_DEAD;

	memset(&m, 0, sizeof(m));
	snprintf(file, sizeof(file), "%s", it->file);
	snprintf(path, sizeof(path), "%s/.decree/inbox/%s", p->root, file);
	if (cli_read_file(&text, path) < 0) {
		buf_release(&text);
		return fail("cannot read '%s': %s", path, strerror(errno));
	}
	if (message_parse(&in, text.ptr ? text.ptr : "", text.len, &err) != 0) {
		snprintf(why, sizeof(why), "cannot parse the message: %s",
			 err ? err : "out of memory");
		free(err);
		buf_release(&text);
		return dead_letter(r, file, NULL, why);
	}
	if ((ret = normalize(r, &m, &in, it, &changed)) != 0)
		goto done;
	if (changed) {
		buf nb = BUF_INIT;
		message_format(&nb, &m);
		ret = cli_write_atomic(path, nb.ptr, nb.len);
		buf_release(&nb);
		if (ret)
			goto done;
	}
	id = message_get(&m, "id");
	snprintf(chain_out, 17, "%s", message_get(&m, "chain"));
	routine_name = message_get(&m, "routine");
	input = message_get(&m, "input_file");
	snprintf(seqs, sizeof(seqs), "%s", message_get(&m, "seq"));
	if ((ret = make_run_dir(rundir, p, id)) != 0)
		goto done;
	snprintf(rel, sizeof(rel), ".decree/runs/%s", id);
	{
		buf mb = BUF_INIT;
		char mp[PATH_MAX + 16];
		if (changed)
			message_format(&mb, &m);
		else
			buf_put(&mb, text.ptr, text.len);
		snprintf(mp, sizeof(mp), "%s/message.md", rundir);
		ret = cli_write_atomic(mp, mb.ptr, mb.len);
		buf_release(&mb);
		if (ret)
			goto done;
	}
	if (strtol(seqs, NULL, 10) >= p->cfg.max_depth) {
		snprintf(why, sizeof(why),
			 "MaxDepthExceeded: seq %s is not below max_depth %ld "
			 "(.decree/config.yml)",
			 seqs, p->cfg.max_depth);
		write_outcome(rundir, id, file, routine_name, OUT_DEAD, 0, why,
			      started);
		ret = dead_letter(r, file, rundir, why);
		goto done;
	}
	if (!(ri = routine_find(r->routines, r->nroutines, routine_name))) {
		snprintf(
			why, sizeof(why),
			"RoutineNotFound: no routine '%s' in .decree/routines/",
			routine_name);
		write_outcome(rundir, id, file, routine_name, OUT_DEAD, 0, why,
			      started);
		ret = dead_letter(r, file, rundir, why);
		goto done;
	}
	if (ri->notebook && !on_path("papermill")) {
		snprintf(why, sizeof(why),
			 "routine '%s' is a notebook, and papermill is not "
			 "installed (pip install papermill ipykernel)",
			 routine_name);
		write_outcome(rundir, id, file, routine_name, OUT_DEAD, 0, why,
			      started);
		ret = dead_letter(r, file, rundir, why);
		goto done;
	}
	/* the checkpoint: one per run id (a re-queued message gets "id.N") */
	{
		decree_checkpoint_create_options co =
			DECREE_CHECKPOINT_CREATE_OPTIONS_INIT;
		char msg[80], probe[120], tmp[DECREE_ID_HEXLEN + 1];
		snprintf(msg, sizeof(msg), "%s", id);
		for (int k = 2;; k++) {
			snprintf(probe, sizeof(probe), SESSION ":%s", msg);
			if (decree_checkpoint_resolve(tmp, r->s, probe) < 0)
				break;
			snprintf(msg, sizeof(msg), "%s.%d", id, k);
		}
		decree_error_clear();
		co.session = SESSION;
		co.message = msg;
		co.label = file;
		if (decree_checkpoint_create(ck, NULL, r->s, &co) < 0) {
			ret = lib_fail(-1);
			goto done;
		}
	}
	{
		char mp[PATH_MAX + 16];
		snprintf(mp, sizeof(mp), "%s/manifest.json", rundir);
		if ((ret = write_manifest(r, ck, mp)) != 0)
			goto done;
	}
	say(r, "processing %s (%s) with routine %s", id, file, routine_name);
	for (int k = 1; k <= max + 1 && !ok; k++) {
		exec_spec x;
		char logp[PATH_MAX + 32], diffp[PATH_MAX + 32],
			fc[PATH_MAX + 32];
		int status = 0;
		bool clean = k == max + 1;
		memset(&x, 0, sizeof(x));
		x.id = id;
		x.dir_rel = rel;
		x.chain = message_get(&m, "chain");
		x.seq = seqs;
		x.spec_file = input ? input : "";
		x.m = &m;
		x.ri = ri;
		x.attempt = k;
		if (clean) {
			/* every attempt failed: clean slate + context */
			if ((ret = revert_to(r, ck)) != 0)
				goto done;
			snprintf(fc, sizeof(fc), "%s/failure-context.md",
				 rundir);
			if ((ret = cli_write_atomic(fc, ctx_md.ptr,
						    ctx_md.len)) != 0)
				goto done;
			snprintf(fc, sizeof(fc), "%s/failure-context.md", rel);
			x.failure_context = fc;
			say(r,
			    "  %d attempt(s) failed: tree reverted, clean-slate "
			    "attempt with %s",
			    max, fc);
		}
		/* routine.log, routine-2.log, ... (papermill*.log) */
		if (k == 1)
			snprintf(logp, sizeof(logp), "%s/%s.log", rundir,
				 ri->notebook ? "papermill" : "routine");
		else
			snprintf(logp, sizeof(logp), "%s/%s-%d.log", rundir,
				 ri->notebook ? "papermill" : "routine", k);
		attempts = k;
		if (got_signal)
			interrupted = true; /* before the routine even started
					     */
		else if ((ret = run_routine(&status, &interrupted, r, &x,
					    logp)) != 0)
			goto done;
		if (interrupted) {
			snprintf(diffp, sizeof(diffp), "%s/changes-%d.diff",
				 rundir, k);
			write_diff(r, ck, diffp, NULL);
			if ((ret = revert_to(r, ck)) != 0)
				goto done;
			out = OUT_INTERRUPTED;
			write_outcome(rundir, id, file, routine_name, out, k,
				      "interrupted by a signal; the message "
				      "stays in the inbox",
				      started);
			say(r,
			    "  interrupted: partial work in %s/changes-%d.diff, "
			    "tree reverted; %s stays in the inbox",
			    rel, k, file);
			ret = 130;
			goto done;
		}
		if (status == 0) {
			size_t nf = 0;
			snprintf(diffp, sizeof(diffp), "%s/changes.diff",
				 rundir);
			if ((ret = write_diff(r, ck, diffp, &nf)) != 0)
				goto done;
			ok = true;
			say(r,
			    "  attempt %d succeeded: %zu file(s) changed "
			    "(%s/changes.diff)",
			    k, nf, rel);
			break;
		}
		snprintf(diffp, sizeof(diffp), "%s/changes-%d.diff", rundir, k);
		if ((ret = write_diff(r, ck, diffp, NULL)) != 0)
			goto done;
		say(r, "  attempt %d%s failed with status %d (log: %s)", k,
		    clean ? " (clean slate)" : "", status,
		    logp + strlen(p->root) + 1);
		buf_printf(
			&ctx_md,
			"%s## Attempt %d: exit status %d\n\nLog tail (`%s`):\n\n```\n",
			ctx_md.len
				? "\n"
				: "# Failure context\n\nEvery attempt so far failed; the tree was reverted to the state before the first one.\n\n",
			k, status, logp + strlen(p->root) + 1);
		tail_of(&ctx_md, logp, 4000);
		buf_puts(&ctx_md, "```\n");
	}
	if (ok) {
		out = OUT_DONE;
		if (!strcmp(message_get(&m, "type"), "spec") && input &&
		    (ret = mark_spec_processed(p, input)) != 0)
			goto done;
		if ((ret = move_message(p, file, "done")) != 0)
			goto done;
		r->ndone++;
		write_outcome(rundir, id, file, routine_name, out, attempts,
			      NULL, started);
	} else {
		if ((ret = revert_to(r, ck)) != 0)
			goto done;
		snprintf(
			why, sizeof(why),
			"routine '%s' failed %d time(s), the last with a clean "
			"slate; the tree was reverted (logs and diffs in %s)",
			routine_name, attempts, rel);
		write_outcome(rundir, id, file, routine_name, OUT_DEAD,
			      attempts, why, started);
		if ((ret = dead_letter(r, file, rundir, why)) != 0)
			goto done;
		dead_letter_followups(r, message_get(&m, "chain"),
				      strtol(seqs, NULL, 10), id);
	}
done:
	if (r->p->ctx->json && m.n) {
		buf *b = &r->json;
		buf_puts(b, r->njson++ ? ",{" : "{");
		json_kv_str(b, "id", message_get(&m, "id"), false);
		json_kv_path(b, "message", file, true);
		json_kv_str(b, "routine", message_get(&m, "routine"), true);
		json_kv_str(b, "outcome",
			    ret && ret != 130 ? "error" : outcome_name(out),
			    true);
		buf_printf(b, ",\"attempts\":%d}", attempts);
	}
	buf_release(&ctx_md);
	buf_release(&text);
	message_release(&in);
	message_release(&m);
	return ret;
}

/* --- the loop
 * ------------------------------------------------------------------------------
 */

/* Process every inbox message of `chain`, lowest seq first, again after
 * each message (follow-ups appear).  chain NULL: the oldest chain waiting
 * (messages without an id count as chains of their own). */
static int process_chain(runner *r, const char *chain, bool *any)
{
	char dir[PATH_MAX];
	project_path(dir, r->p, ".decree/inbox");
	*any = false;
	for (;;) {
		inbox_item *v;
		size_t n, best = SIZE_MAX;
		int ret;
		if ((ret = list_dir_messages(&v, &n, dir)) != 0)
			return ret;
		for (size_t i = 0; i < n; i++) {
			const inbox_item *a = &v[i];
			if (chain && (!a->has_id || strcmp(a->chain, chain)))
				continue;
			if (best == SIZE_MAX) {
				best = i;
				continue;
			}
			const inbox_item *b = &v[best];
			int c = a->has_id != b->has_id ? (a->has_id ? -1 : 1)
				: a->has_id ? strcmp(a->chain, b->chain)
					    : strcmp(a->file, b->file);
			if (c < 0 ||
			    (c == 0 && (a->seq < b->seq ||
					(a->seq == b->seq &&
					 strcmp(a->file, b->file) < 0))))
				best = i;
		}
		if (best == SIZE_MAX) {
			items_free(v, n);
			return 0;
		}
		*any = true;
		{
			char c[17] = "";
			bool more;
			ret = process_message(r, &v[best], c);
			items_free(v, n);
			if (ret || got_signal)
				return ret ? ret : 130;
			/* stay on this chain for the follow-ups */
			if (!chain)
				return c[0] ? process_chain(r, c, &more) : 0;
		}
	}
}

static int drain_inbox(runner *r)
{
	for (;;) {
		bool any;
		int ret = process_chain(r, NULL, &any);
		if (ret || !any)
			return ret;
	}
}

static int runner_open(runner *r, project *p)
{
	char path[PATH_MAX];
	struct sigaction sa;
	int ret;

	memset(r, 0, sizeof(*r));
	r->p = p;
	r->lockfd = -1;
	project_path(path, p, ".decree/pipeline.lock");
	if ((r->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return fail("cannot open '%s': %s", path, strerror(errno));
	if (flock(r->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return fail("cannot lock '%s': %s", path,
				    strerror(errno));
		say(r, "waiting for another decree run in this project...");
		if (flock(r->lockfd, LOCK_EX) < 0)
			return fail("cannot lock '%s': %s", path,
				    strerror(errno));
	}
	if ((ret = open_store(&r->s, p->ctx)) != 0)
		return ret;
	if ((ret = routines_list(&r->routines, &r->nroutines, p)) != 0)
		return ret;
	got_signal = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	return 0;
}

static int runner_close(runner *r, int ret)
{
	if (r->p->ctx->json)
		printf("{\"runs\":[%s],\"done\":%zu,\"dead\":%zu,\"interrupted\":%s}\n",
		       r->json.ptr ? r->json.ptr : "", r->ndone, r->ndead,
		       ret == 130 ? "true" : "false");
	buf_release(&r->json);
	routines_free(r->routines, r->nroutines);
	decree_store_free(r->s);
	if (r->lockfd >= 0)
		close(r->lockfd);
	if (ret == 0 && r->ndead)
		ret = EXIT_FAIL;
	return ret;
}

/* Name a new message: -m, else the spec's stem, else the router, else
 * run-<chain>; kebab-case, 50 bytes, -2, -3 ... against inbox, done, dead. */
static int name_message(char *out, size_t len, runner *r, const run_request *rq,
			const char *chain)
{
	const char *input = run_request_get(rq, "input_file");
	char base[64] = "";
	static const char *const dirs[] = { ".decree/inbox",
					    ".decree/inbox/done",
					    ".decree/inbox/dead" };

	if (rq->name)
		kebab_case(base, sizeof(base), rq->name, 50);
	if (!*base && input && (!rq->body || !*rq->body)) {
		const char *b = strrchr(input, '/');
		char stem[PATH_MAX];
		size_t n;
		snprintf(stem, sizeof(stem), "%s", b ? b + 1 : input);
		n = strlen(stem);
		if (n > 8 && !strcmp(stem + n - 8, ".spec.md"))
			stem[n - 8] = '\0';
		else if (n > 3 && !strcmp(stem + n - 3, ".md"))
			stem[n - 3] = '\0';
		kebab_case(base, sizeof(base), stem, 50);
	}
	if (!*base && rq->body && *rq->body && r->p->cfg.router) {
		buf q = BUF_INIT;
		char *ans = NULL;
		buf_puts(&q, "Summarize this task as a kebab-case name under 5 "
			     "words. Respond with ONLY the name.\n\n");
		buf_puts(&q, rq->body);
		if (ask_router(&ans, r, q.ptr) == 0)
			kebab_case(base, sizeof(base), ans, 50);
		free(ans);
		buf_release(&q);
	}
	if (!*base)
		snprintf(base, sizeof(base), "run-%s", chain);
	for (int k = 1;; k++) {
		bool taken = false;
		if (k == 1)
			snprintf(out, len, "%s", base);
		else {
			char sfx[16];
			int sl = snprintf(sfx, sizeof(sfx), "-%d", k);
			size_t keep = strlen(base);
			if (keep + (size_t)sl > 50)
				keep = 50 - (size_t)sl;
			while (keep && base[keep - 1] == '-')
				keep--;
			snprintf(out, len, "%.*s%s", (int)keep, base, sfx);
		}
		for (size_t i = 0; i < 3 && !taken; i++) {
			char probe[PATH_MAX + 80];
			snprintf(probe, sizeof(probe), "%s/%s/%s.md",
				 r->p->root, dirs[i], out);
			taken = exists(probe);
		}
		if (!taken)
			return 0;
	}
}

/* Write the seq-0 message of a request into the inbox as a new chain. */
static int queue_message(char chain[17], runner *r, const run_request *rq)
{
	const char *input = run_request_get(rq, "input_file");
	char name[80], path[PATH_MAX + 100], id[40];
	message m;
	buf text = BUF_INIT;
	int ret, fd;

	memset(&m, 0, sizeof(m));
	if ((ret = new_chain(chain, r->p)) != 0 ||
	    (ret = name_message(name, sizeof(name), r, rq, chain)) != 0)
		return ret;
	snprintf(id, sizeof(id), "%s-0", chain);
	if (message_set(&m, "id", id) < 0 ||
	    message_set(&m, "chain", chain) < 0 ||
	    message_set(&m, "seq", "0") < 0 ||
	    message_set(&m, "type",
			input && strlen(input) > 8 &&
					!strcmp(input + strlen(input) - 8,
						".spec.md")
				? "spec"
				: "task") < 0)
		ret = fail("out of memory");
	for (size_t i = 0; i < rq->nvars && !ret; i++)
		if (message_set(&m, rq->vars[i].key, rq->vars[i].value) < 0)
			ret = fail("out of memory");
	/* the body, ending with a newline */
	if (!ret && rq->body && *rq->body)
		buf_printf(&text, "%s%s", rq->body,
			   rq->body[strlen(rq->body) - 1] == '\n' ? "" : "\n");
	m.body = buf_detach(&text, &m.body_len);
	if (!m.body && !(m.body = strdup("")))
		ret = fail("out of memory");
	if (!ret)
		message_format(&text, &m);
	message_release(&m);
	if (ret) {
		buf_release(&text);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/.decree/inbox/%s.md", r->p->root,
		 name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text.ptr, text.len) != (ssize_t)text.len ||
	    fsync(fd) < 0) {
		ret = fail("cannot write '%s': %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
	} else {
		close(fd);
		say(r, "queued .decree/inbox/%s.md", name);
	}
	buf_release(&text);
	return ret;
}

int pipeline_run(project *p, const run_request *rq)
{
	runner r;
	char chain[17];
	const char *input = run_request_get(rq, "input_file");
	bool any;
	int ret;

	if ((ret = runner_open(&r, p)) != 0)
		return runner_close(&r, ret);
	if (input) {
		char ip[PATH_MAX + 8];
		project_path(ip, p, input);
		if (!exists(ip)) {
			ret = fail("input file '%s' does not exist", input);
			return runner_close(&r, ret);
		}
	}
	if ((ret = queue_message(chain, &r, rq)) != 0)
		return runner_close(&r, ret);
	ret = process_chain(&r, chain, &any);
	if (ret == 0 && !got_signal)
		ret = drain_inbox(&r);
	return runner_close(&r, ret);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is there a dead-lettered message for this spec? */
static bool spec_is_dead(const project *p, const char *rel)
{
	char dir[PATH_MAX];
	struct dirent *de;
	bool hit = false;
	DIR *d;

	project_path(dir, p, ".decree/inbox/dead");
	if (!(d = opendir(dir)))
		return false;
	while (!hit && (de = readdir(d))) {
		char path[PATH_MAX + 300];
		buf t = BUF_INIT;
		message m;
		char *err;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (cli_read_file(&t, path) == 0 &&
		    message_parse(&m, t.ptr ? t.ptr : "", t.len, &err) == 0) {
			const char *in = message_get(&m, "input_file");
			hit = in && !strcmp(in, rel);
			message_release(&m);
		}
		buf_release(&t);
	}
	closedir(d);
	return hit;
}

int pipeline_process(project *p)
{
	runner r;
	char dir[PATH_MAX];
	char **specs = NULL;
	size_t nspecs = 0;
	struct dirent *de;
	DIR *d;
	int ret;

	if ((ret = runner_open(&r, p)) != 0)
		return runner_close(&r, ret);
	if ((ret = drain_inbox(&r)) != 0)
		return runner_close(&r, ret);
	project_path(dir, p, "specs");
	if ((d = opendir(dir))) {
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);
			char **nv;
			if (de->d_name[0] == '.' || n <= 8 ||
			    strcmp(de->d_name + n - 8, ".spec.md"))
				continue;
			if (!(nv = realloc(specs,
					   (nspecs + 1) * sizeof(char *))))
				break;
			specs = nv;
			specs[nspecs++] = strdup(de->d_name);
		}
		closedir(d);
	}
	if (nspecs > 1)
		qsort(specs, nspecs, sizeof(char *), cmp_str);
	for (size_t i = 0; i < nspecs && !ret && !got_signal; i++) {
		run_request rq;
		char rel[PATH_MAX];
		if (!specs[i] || spec_processed(p, specs[i]))
			continue;
		snprintf(rel, sizeof(rel), "specs/%s", specs[i]);
		if (spec_is_dead(p, rel)) {
			say(&r,
			    "skipping %s: dead-lettered earlier (move its message "
			    "back to .decree/inbox/ to retry)",
			    rel);
			continue;
		}
		memset(&rq, 0, sizeof(rq));
		if (run_request_set(&rq, "input_file", rel) != 0) {
			ret = EXIT_FAIL;
			break;
		}
		{
			char chain[17];
			bool any;
			if ((ret = queue_message(chain, &r, &rq)) == 0)
				ret = process_chain(&r, chain, &any);
		}
		run_request_release(&rq);
	}
	for (size_t i = 0; i < nspecs; i++)
		free(specs[i]);
	free(specs);
	if (!ret && got_signal)
		ret = 130;
	return runner_close(&r, ret);
}
