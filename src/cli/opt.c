/*
 * opt.c - what all commands share: option parsing, the "--" paths, error
 * reporting (the library's message, then what to type next:
 * lib_fail_hint), reading and atomically writing a file, and the names of
 * the restore and apply phases.  Helpers two commands need live here, not
 * in one of the commands, so that no cmd_*.c depends on another.
 *
 * Options may stand before or after positional arguments; "--" ends them.
 * Long options take their argument as "--name VALUE" or "--name=VALUE",
 * short ones as "-x VALUE" or "-xVALUE".
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"
#include "util/suggest.h"

#include <signal.h>

/* --- failures ---------------------------------------------------------------
 *
 * Every failure is one line "decree: <message>" on stderr.  With --json
 * it is also a document on stdout, {"error":{"code":"...","message":"..."}}
 * (docs/schema/error.schema.json): the code names the class of failure
 * (decree_error_name), the message is the stderr line without "decree: ".  One
 * failure document per run: a command that has printed or captured one
 * prints no second.  A document that reports its own failure (fsck's
 * report, run's, apply's "done" event) captures the object instead
 * (cli_error_capture) and carries it as its "error" member, so stdout
 * still holds exactly one document.
 */

static bool json_errors;   /* --json: failures also go to stdout */
static bool error_given;   /* the failure's object is out */
static buf *error_capture; /* where the next failure's object goes */

void cli_json_errors(bool on)
{
	json_errors = on;
}

void cli_error_capture(buf *b)
{
	error_capture = b;
}

/* "decree: " + the message with control bytes escaped (quote.c) + tail on
 * stderr; with --json and a code (a failure, not a note), the JSON too. */
static void report(const char *code, const char *msg, const char *tail)
{
	buf b = BUF_INIT, j = BUF_INIT;

	if (cli_sanitize(&b, msg) < 0)
		buf_puts(&b, "(message lost: out of memory)");
	fprintf(stderr, "decree: %s%s\n", b.ptr, tail);
	if (code && json_errors && !error_given) {
		error_given = true;
		buf_puts(&b, tail);
		buf_puts(&j, "{\"code\":");
		json_str(&j, code);
		buf_puts(&j, ",\"message\":");
		json_str(&j, b.ptr);
		buf_putc(&j, '}');
		if (error_capture)
			buf_put(error_capture, j.ptr, j.len);
		else
			printf("{\"error\":%s}\n", j.ptr);
	}
	buf_release(&b);
	buf_release(&j);
}

int usage_error(const cli_ctx *ctx, const char *fmt, ...)
{
	char see[128];
	buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (ctx && ctx->cmdname)
		snprintf(see, sizeof(see), " (see 'decree %s --help')",
			 ctx->cmdname);
	else
		snprintf(see, sizeof(see), " (see 'decree --help')");
	report("usage", b.ptr, see);
	buf_release(&b);
	return EXIT_USAGE;
}

static int vfail(const char *code, int status, const char *fmt, va_list ap)
{
	buf b = BUF_INIT;

	buf_vprintf(&b, fmt, ap);
	report(code, b.ptr, "");
	buf_release(&b);
	return status;
}

static char did[512];

void cli_did(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(did, sizeof(did), fmt, ap);
	va_end(ap);
}

const char *cli_did_text(void)
{
	return did;
}

int fail(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail("error", EXIT_FAIL, fmt, ap);
	va_end(ap);
	return r;
}

int fail_code(int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail(decree_error_name(code),
		  code == DECREE_ECANCELLED ? EXIT_CANCELLED : EXIT_FAIL, fmt,
		  ap);
	va_end(ap);
	return r;
}

int fail_usage(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail("usage", EXIT_USAGE, fmt, ap);
	va_end(ap);
	return r;
}

int fail_interrupted(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vfail("interrupted", EXIT_CANCELLED, fmt, ap);
	va_end(ap);
	return r;
}

void cli_note(const char *fmt, ...)
{
	buf b = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(&b, fmt, ap);
	va_end(ap);
	report(NULL, b.ptr, "");
	buf_release(&b);
}

int lib_fail_hint(int code, const char *hint)
{
	const char *msg = decree_error_last();
	char tail[256];

	if (code == DECREE_ERROR || code >= 0)
		code = decree_error_last_code();
	/* a log left behind (the error says so, or a warning of this
	 * command does: decree_warning_last_code) */
	if (!hint && (code == DECREE_EUNFINISHED ||
		      decree_warning_last_code() == DECREE_EUNFINISHED))
		hint = "run 'decree recover'";
	if (!hint && code == DECREE_ELOGDAMAGED)
		hint = "run 'decree recover --rollback' to roll back what it "
		       "still names";
	snprintf(tail, sizeof(tail), "%s%s", hint ? "; " : "",
		 hint ? hint : "");
	report(decree_error_name(code), *msg ? msg : "operation failed", tail);
	return EXIT_FAIL;
}

void lib_warn(void)
{
	buf b = BUF_INIT;

	if (!*decree_warning_last())
		return;
	buf_puts(&b, "warning: ");
	buf_puts(&b, decree_warning_last());
	report(NULL, b.ptr,
	       decree_warning_last_code() == DECREE_EUNFINISHED
		       ? "; 'decree recover' does it now"
		       : "");
	buf_release(&b);
}

/* --- interrupting a change of the tree ---------------------------------- */

/* Set by SIGINT, SIGTERM and SIGHUP while cli_cancel_catch is in force;
 * the library polls it between files (DECREE_ECANCELLED before the
 * commit).  sig_atomic_t is int here, which the library's flag type
 * needs. */
static volatile sig_atomic_t cancel_sig;
static struct sigaction saved_int, saved_term, saved_hup;
static bool catching;

/* The first signal asks for a clean stop.  A second one is the user
 * insisting (a long lock wait, a huge file being written): the handler
 * that was there before (decree_cleanup_on_signals: remove temp packs,
 * then die by the signal) takes over; the next command recovers the
 * tree from the log, as after a kill.  sigaction and raise are
 * async-signal-safe. */
static void on_cancel_signal(int sig)
{
	if (cancel_sig) {
		sigaction(sig,
			  sig == SIGINT	   ? &saved_int
			  : sig == SIGTERM ? &saved_term
					   : &saved_hup,
			  NULL);
		raise(sig);
		return;
	}
	cancel_sig = sig;
}

const volatile int *cli_cancel_catch(void)
{
	struct sigaction sa;

	_Static_assert(sizeof(sig_atomic_t) == sizeof(int),
		       "the library's cancel flag is an int");
	cancel_sig = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cancel_signal;
	sa.sa_flags = SA_RESTART; /* fs.c loops anyway; do not fail writes */
	sigemptyset(&sa.sa_mask);
	if (!catching) {
		sigaction(SIGINT, &sa, &saved_int);
		sigaction(SIGTERM, &sa, &saved_term);
		sigaction(SIGHUP, &sa, &saved_hup);
		catching = true;
	}
	return (const volatile int *)&cancel_sig;
}

int cli_cancel_release(void)
{
	if (catching) {
		sigaction(SIGINT, &saved_int, NULL);
		sigaction(SIGTERM, &saved_term, NULL);
		sigaction(SIGHUP, &saved_hup, NULL);
		catching = false;
	}
	return (int)cancel_sig;
}

int cli_cancel_report(int r, const char *verb)
{
	if (r == DECREE_ECANCELLED)
		return fail_interrupted(
			"interrupted; the %s was rolled back, nothing changed",
			verb);
	if (r == 0 && cancel_sig)
		cli_note("interrupted, but the %s was already committed; it "
			 "was completed",
			 verb);
	return EXIT_OK;
}

bool cli_cancelled(void)
{
	return cancel_sig != 0;
}

const char *fsck_hint(int code)
{
	return code == DECREE_ECORRUPT ? "run 'decree fsck'" : NULL;
}

int lib_fail(int code)
{
	return lib_fail_hint(code, NULL);
}

void close_store(decree_store *s)
{
	size_t n = decree_checkpoint_damaged_count(s);

	for (size_t i = 0; i < n; i++) {
		const decree_damaged_record *d =
			decree_checkpoint_damaged_at(s, i);
		fprintf(stderr, "decree: warning: %s; %s\n", d->problem,
			d->removed   ? "removed it"
			: d->damaged ? "skipped it (run 'decree fsck --repair' "
				       "to remove it)"
				     : "skipped it");
	}
	decree_store_free(s);
}

/* --- did you mean ----------------------------------------------------------
 *
 * An unknown command, subcommand, option or value is answered with the
 * known names nearest to it, on the one usage line: "unknown command
 * 'chekpoint'; did you mean 'checkpoint'?".  What near means is
 * util/suggest.h's rule, the pipeline's too; the nearest names are given,
 * at most three.
 */

size_t cli_suggest(buf *out, const char *word, const char *const *names,
		   const char *prefix)
{
	const char *pick[3];
	size_t n = 0, k;

	while (names && names[n])
		n++;
	k = suggest_nearest(pick, ARRAY_SIZE(pick), word, names, n);
	for (size_t i = 0; i < k; i++)
		buf_printf(out, "%s'%s%s'",
			   !i	       ? ""
			   : i + 1 < k ? ", "
				       : " or ",
			   prefix, pick[i]);
	return k;
}

int usage_unknown(const cli_ctx *ctx, const char *what, const char *typed,
		  size_t skip, const char *const *names, const char *prefix)
{
	buf m = BUF_INIT, s = BUF_INIT;

	if (cli_suggest(&s, typed + skip, names, prefix) == 0) {
		buf_release(&s);
		return usage_error(ctx, "unknown %s '%s'", what, typed);
	}
	buf_printf(&m, "unknown %s '%s'; did you mean %s?", what, typed, s.ptr);
	report("usage", m.ptr, "");
	buf_release(&m);
	buf_release(&s);
	return EXIT_USAGE;
}

/* The long global options (main.c), for suggestions in every command. */
const char *const cli_global_options[] = { "store",    "json",	  "quiet",
					   "help",     "version", "color",
					   "no-pager", NULL };

/* An unknown long option "--name" (n bytes of name, without "=value"):
 * the suggestions are the command's options, its repeatable ones and
 * the global ones. */
static int unknown_long(const cli_ctx *ctx, const char *name, size_t n,
			const opt_spec *specs, const opt_list *lists)
{
	const char *names[64];
	size_t k = 0;
	buf typed = BUF_INIT;
	int r;

	for (const opt_spec *s = specs; s && s->name && k < 40; s++)
		names[k++] = s->name;
	for (const opt_list *l = lists; l && l->name && k < 50; l++)
		names[k++] = l->name;
	for (size_t i = 0; cli_global_options[i]; i++)
		names[k++] = cli_global_options[i];
	names[k] = NULL;
	buf_printf(&typed, "--%.*s", (int)n, name);
	r = usage_unknown(ctx, "option", typed.ptr, 2, names, "--");
	buf_release(&typed);
	return r;
}

static const opt_spec *find_long(const opt_spec *s, const char *name, size_t n)
{
	for (; s && s->name; s++)
		if (strlen(s->name) == n && !strncmp(s->name, name, n))
			return s;
	return NULL;
}

static const opt_spec *find_short(const opt_spec *s, char c)
{
	for (; s && s->name; s++)
		if (s->shortopt == c)
			return s;
	return NULL;
}

static void seen(const opt_spec *s, const char *val)
{
	if (s->value)
		*s->value = val;
	if (s->flag)
		*s->flag = true;
	if (s->count)
		(*s->count)++;
}

static const opt_list *find_list(const opt_list *l, const char *name, size_t n)
{
	for (; l && l->name; l++)
		if (strlen(l->name) == n && !strncmp(l->name, name, n))
			return l;
	return NULL;
}

int opt_parse(cli_ctx *ctx, const opt_spec *specs)
{
	return opt_parse_lists(ctx, specs, NULL);
}

int opt_parse_lists(cli_ctx *ctx, const opt_spec *specs, const opt_list *lists)
{
	int out = 0;

	for (int i = 0; i < ctx->argc; i++) {
		char *a = ctx->argv[i];
		const opt_spec *s;
		if (a[0] != '-' || a[1] == '\0') {
			ctx->argv[out++] = a;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t n = eq ? (size_t)(eq - name) : strlen(name);
			const opt_list *l = find_list(lists, name, n);
			if (l) {
				if (!eq && i + 1 >= ctx->argc)
					return usage_error(
						ctx,
						"option '--%s' needs a value",
						l->name);
				l->values[(*l->n)++] = eq ? eq + 1
							  : ctx->argv[++i];
				continue;
			}
			if (!(s = find_long(specs, name, n)))
				return unknown_long(ctx, name, n, specs, lists);
			if (s->has_arg) {
				if (eq) {
					seen(s, eq + 1);
				} else if (i + 1 < ctx->argc) {
					seen(s, ctx->argv[++i]);
				} else {
					return usage_error(
						ctx,
						"option '--%s' needs a value",
						s->name);
				}
			} else if (eq) {
				return usage_error(
					ctx, "option '--%s' takes no value",
					s->name);
			} else {
				seen(s, NULL);
			}
			continue;
		}
		if (!(s = find_short(specs, a[1])) || (!s->has_arg && a[2])) {
			return usage_error(ctx, "unknown option '%s'", a);
		}
		if (s->has_arg) {
			if (a[2])
				seen(s, a + 2);
			else if (i + 1 < ctx->argc)
				seen(s, ctx->argv[++i]);
			else {
				return usage_error(ctx,
						   "option '-%c' needs a value",
						   a[1]);
			}
		} else {
			seen(s, NULL);
		}
	}
	ctx->argc = out;
	return 0;
}

/* Remove ".", ".." and repeated or trailing slashes of an absolute path,
 * in place, lexically (as git does for pathspecs). */
static void normalize_abs(char *p)
{
	const char *in = p;
	size_t n = 1; /* p[0] == '/' */

	while (*in) {
		const char *e;
		size_t cl;
		while (*in == '/')
			in++;
		if (!*in)
			break;
		e = strchr(in, '/');
		cl = e ? (size_t)(e - in) : strlen(in);
		if (cl == 2 && in[0] == '.' && in[1] == '.') {
			while (n > 1 && p[n - 1] != '/')
				n--;
			if (n > 1)
				n--;
		} else if (!(cl == 1 && in[0] == '.')) {
			if (n > 1)
				p[n++] = '/';
			memmove(p + n, in, cl);
			n += cl;
		}
		in += cl;
	}
	p[n] = '\0';
}

/* `full` below `root` (both absolute, normalized): its root-relative part
 * ("" for the root itself), or NULL when it is outside. */
static const char *below(const char *full, const char *root)
{
	size_t rl = strlen(root);

	if (rl == 1)
		return full + 1;
	if (strncmp(full, root, rl))
		return NULL;
	if (!full[rl])
		return full + rl;
	return full[rl] == '/' ? full + rl + 1 : NULL;
}

int cli_paths(char ***out, const cli_ctx *ctx, const decree_store *s)
{
	const char *root = decree_store_root(s);
	char base[PATH_MAX];
	char **paths;
	bool whole = false;

	*out = NULL;
	if (!ctx->rest_argc)
		return 0;
	/* Paths are relative to the current directory, as in git; -C makes
	 * the project root the current directory. */
	if (ctx->root_opt)
		snprintf(base, sizeof(base), "%s", root);
	else if (!getcwd(base, sizeof(base)))
		return fail("cannot get the current directory: %s",
			    strerror(errno));
	if (!(paths = calloc((size_t)ctx->rest_argc + 1, sizeof(char *))))
		return fail("out of memory");
	for (int i = 0; i < ctx->rest_argc; i++) {
		const char *arg = ctx->rest_argv[i], *rel;
		size_t n = strlen(base) + strlen(arg) + 2;
		char *full = malloc(n), real[PATH_MAX];

		if (!full) {
			cli_paths_free(paths);
			return fail("out of memory");
		}
		if (!*arg) {
			free(full);
			cli_paths_free(paths);
			return fail_code(DECREE_EINVALID,
					 "an empty path names no file");
		}
		snprintf(full, n, "%s/%s", arg[0] == '/' ? "" : base, arg);
		normalize_abs(full);
		rel = below(full, root);
		/* an absolute path may reach the root through a symlink */
		if (!rel && arg[0] == '/' && realpath(full, real) &&
		    (rel = below(real, root)))
			memmove(full, rel, strlen(rel) + 1), rel = full;
		if (!rel) {
			int r = fail_code(
				DECREE_EINVALID,
				"path '%s' is outside the project root '%s'",
				arg, root);
			free(full);
			cli_paths_free(paths);
			return r;
		}
		if (!*rel)
			whole = true;
		memmove(full, rel, strlen(rel) + 1);
		paths[i] = full;
	}
	if (whole) { /* "." at the root: everything */
		cli_paths_free(paths);
		paths = NULL;
	}
	*out = paths;
	return 0;
}

void cli_paths_free(char **paths)
{
	if (!paths)
		return;
	for (size_t i = 0; paths[i]; i++)
		free(paths[i]);
	free(paths);
}

int cli_read_file(buf *out, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char chunk[65536];
	size_t n;
	int e = 0;

	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_put(out, chunk, n) < 0) {
			e = ENOMEM;
			break;
		}
	if (!e && ferror(f))
		e = errno ? errno : EIO;
	if (f != stdin)
		fclose(f);
	errno = e;
	return e ? -1 : 0;
}

int cli_write_atomic(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX + 32], dir[PATH_MAX];
	const char *p = data, *step = NULL, *slash;
	int fd, e = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) <
	    0)
		return fail("cannot write '%s': %s", tmp, strerror(errno));
	while (len && !step) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			step = "write";
			e = w < 0 ? errno : EIO;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (!step && fsync(fd) < 0) {
		step = "fsync";
		e = errno;
	}
	if (close(fd) < 0 && !step) {
		step = "close";
		e = errno;
	}
	if (!step && rename(tmp, path) < 0) {
		step = "rename";
		e = errno;
	}
	if (step) {
		unlink(tmp);
		return fail("cannot write '%s': %s: %s", path, step,
			    strerror(e));
	}
	/* the rename itself is durable once the directory is synced */
	slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		int r = fsync(fd);
		e = errno;
		close(fd);
		if (r < 0 && e != EINVAL)
			return fail("cannot write '%s': fsync directory: %s",
				    path, strerror(e));
	}
	return 0;
}

/* A mode in --json, as in every document and in manifest.json: a file's
 * permission bits in octal ("644", "600"), "120000" for a symlink; NULL
 * when there is none (0). */
static const char *json_mode(char out[8], unsigned mode)
{
	if (!mode)
		return NULL;
	snprintf(out, 8, "%o", mode & 0177777u);
	return out;
}

int cli_diff_file_json(buf *b, const decree_diff_file *f, bool with_text)
{
	char m1[8], m2[8];
	int r = 0;

	r |= buf_putc(b, '{');
	r |= json_kv_path(b, "path", f->path, false);
	r |= buf_printf(b, ",\"status\":\"%c\"", f->status);
	r |= json_kv_str(b, "old_mode",
			 f->status != 'A' ? json_mode(m1, f->old_mode) : NULL,
			 true);
	r |= json_kv_str(b, "new_mode",
			 f->status != 'D' ? json_mode(m2, f->new_mode) : NULL,
			 true);
	r |= buf_printf(b,
			",\"binary\":%s,\"skipped\":%s,\"insertions\":%" PRIu64
			",\"deletions\":%" PRIu64,
			f->binary ? "true" : "false",
			f->skipped ? "true" : "false", f->added, f->removed);
	/* the text is NUL-free and NUL-terminated (diff.h); bytes that are
	 * not UTF-8 also go into an exact "diff_base64" */
	if (f->text && with_text)
		r |= json_kv_path(b, "diff", f->text, true);
	r |= buf_putc(b, '}');
	return r < 0 ? -1 : 0;
}

/* The group's help: its subcommands' usages, then `about`. */
static void group_help(FILE *f, const cli_sub *subs, const char *group,
		       const char *about)
{
	fprintf(f, "usage: decree %s COMMAND ...\n\n", group);
	for (const cli_sub *c = subs; c->name; c++)
		fprintf(f, "  decree %s\n", c->usage);
	fprintf(f, "\n%s", about);
}

int cli_subcommand(cli_ctx *ctx, const cli_sub *subs, const char *group,
		   const char *about)
{
	const char *names[32];
	size_t n = 0;

	if (ctx->argc < 1 || ctx->argv[0][0] == '-') {
		if (ctx->help) {
			group_help(stdout, subs, group, about);
			return EXIT_OK;
		}
		group_help(stderr, subs, group, about);
		return usage_error(ctx, "no %s command given", group);
	}
	for (const cli_sub *c = subs; c->name; c++) {
		if (n + 1 < ARRAY_SIZE(names))
			names[n++] = c->name;
		if (strcmp(ctx->argv[0], c->name))
			continue;
		if (ctx->help) {
			printf("usage: decree %s\n", c->usage);
			if (c->help)
				puts(c->help);
			return EXIT_OK;
		}
		ctx->argc--;
		ctx->argv++;
		ctx->cmdname = c->cmdname;
		return c->fn(ctx);
	}
	names[n] = NULL;
	{
		char what[64];
		snprintf(what, sizeof(what), "%s command", group);
		return usage_unknown(ctx, what, ctx->argv[0], 0, names, "");
	}
}
