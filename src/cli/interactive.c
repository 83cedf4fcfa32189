/*
 * interactive.c - the TTY form of `decree run`, and .decree/last-run.yml.
 *
 * The form asks, on the terminal the caller opened: the routine (a
 * selector: Up/Down or Ctrl-P/Ctrl-N, typed characters filter by
 * case-insensitive subsequence, Backspace edits the filter), the message
 * name, the input file, one value per custom parameter of the routine, and
 * the body.  Values of the last successful run (last-run.yml) are offered
 * as defaults: shown in brackets, Enter accepts, typing replaces,
 * Backspace on an empty line drops the offer (an input file then becomes
 * "none", a parameter goes back to the routine's default).  A parameter
 * left at the routine's default is not set at all, so the routine applies
 * it, and is not recalled.  An input file must exist (as the runner checks
 * it) before the body is asked for.  last-run.yml is written with
 * yaml_scalar() (util/yaml.h), with cli_write_atomic().
 *
 * Terminal invariants:
 *  - Everything is drawn on the tty fd with a few ANSI sequences (EL/ED,
 *    CUU/CUF).  The cursor always rests at the end of the active prompt
 *    line; only the lines from there down belong to us, so a redraw is
 *    "\r ESC[J" + the lines.  We never draw more lines than the terminal
 *    has rows, nor a line as wide as it (no auto-wrap), so relative cursor
 *    movement stays exact even when drawing scrolls the screen.
 *  - The caught signals (INT TERM HUP QUIT TSTP CONT WINCH) stay blocked
 *    except inside ppoll(), and their handlers only set flags; all the work
 *    (restoring the terminal, suspending, redrawing) happens in the loop.
 *    On exit the old handlers come back first, then the saved termios, and
 *    only then the old signal mask, so a signal that arrives meanwhile is
 *    handled by the old handler with the terminal already sane.  A fatal
 *    signal caught during the form is raised again after that restore.
 *  - Restoring uses TCSAFLUSH: pasted text we did not consume must not
 *    reach the shell as commands.
 * Text is handled as bytes; display widths count one column per UTF-8
 * code point (wide characters may make a line slightly longer than the
 * terminal) and control characters are drawn as '?'.
 */
#include "util/common.h"
#include "interactive.h"
#include "util/yaml.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <yaml.h>

/* Inside the form, CANCELLED (1) means the user cancelled and errors are
 * -1 after printing; interactive_request turns both into exit codes. */
#define FAIL(...) (fail(__VA_ARGS__), -1)

#define LAST_RUN       ".decree/last-run.yml"
#define ESC_TIMEOUT_MS 100 /* a lone Esc vs. the start of a key sequence */
#define MAX_LIST_ROWS  10
#define MAX_NAME_COLS  24
#define DEFAULT_ROWS   24
#define DEFAULT_COLS   80
#define CANCELLED      1
#define UNRUNNABLE     2 /* the routine picked cannot run: the library's error */

/* --- .decree/last-run.yml ----------------------------------------------------
 */

typedef decree_routine_info routine_info;
typedef decree_routine_param routine_param;

typedef struct {
	char *routine, *name, *input_file;
	kvlist custom;
} last_run;

static void last_run_release(last_run *lr)
{
	free(lr->routine);
	free(lr->name);
	free(lr->input_file);
	kvlist_release(&lr->custom);
	memset(lr, 0, sizeof(*lr));
}

static const char *node_str(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE
		       ? (const char *)n->data.scalar.value
		       : NULL;
}

static const char *last_custom(const last_run *lr, const char *key)
{
	return kvlist_get(&lr->custom, key);
}

/* The first value of a key wins. */
static int last_add_custom(last_run *lr, const char *k, const char *v)
{
	return last_custom(lr, k) ? 0 : kvlist_set(&lr->custom, k, v);
}

static void last_run_path(char *out, const decree_project *p)
{
	snprintf(out, PATH_MAX, "%s/" LAST_RUN, decree_project_root(p));
}

/*
 * The recall file is a convenience: a missing one is normal and a damaged
 * one is reported and ignored, never a reason to refuse the form.
 */
static void last_run_load(last_run *lr, const decree_project *p)
{
	char path[PATH_MAX];
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *top;
	bool oom = false;
	FILE *f;

	memset(lr, 0, sizeof(*lr));
	last_run_path(path, p);
	{
		/* never wait on a FIFO of that name: O_NONBLOCK, regular only
		 */
		struct stat st;
		int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT)
				cli_note("ignoring '%s': %s", path,
					 strerror(errno));
			return;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    !(f = fdopen(fd, "rb"))) {
			cli_note("ignoring '%s': not a regular file", path);
			close(fd);
			return;
		}
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		cli_note("ignoring '%s': line %lu: %s", path,
			 (unsigned long)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "invalid YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		return;
	}
	top = yaml_document_get_root_node(&doc);
	for (yaml_node_pair_t *kv = top && top->type == YAML_MAPPING_NODE
					    ? top->data.mapping.pairs.start
					    : NULL;
	     kv && kv < top->data.mapping.pairs.top && !oom; kv++) {
		const char *k = node_str(yaml_document_get_node(&doc, kv->key));
		yaml_node_t *vn = yaml_document_get_node(&doc, kv->value);
		const char *v = node_str(vn);
		char **dst = NULL;

		if (!k)
			continue;
		if (!strcmp(k, "routine"))
			dst = &lr->routine;
		else if (!strcmp(k, "message_name"))
			dst = &lr->name;
		else if (!strcmp(k, "input_file"))
			dst = &lr->input_file;
		if (dst && v && *v && !*dst) {
			oom = !(*dst = strdup(v));
			continue;
		}
		if (strcmp(k, "custom") || !vn || vn->type != YAML_MAPPING_NODE)
			continue;
		for (yaml_node_pair_t *c = vn->data.mapping.pairs.start;
		     c < vn->data.mapping.pairs.top && !oom; c++) {
			const char *ck =
				node_str(yaml_document_get_node(&doc, c->key));
			const char *cv = node_str(
				yaml_document_get_node(&doc, c->value));
			if (ck && cv && *ck)
				oom = last_add_custom(lr, ck, cv) < 0;
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	if (oom) /* recall is optional: go on without it */
		last_run_release(lr);
}

static bool is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(unsigned char c)
{
	return is_alpha(c) || (c >= '0' && c <= '9');
}

/*
 * The code point of the UTF-8 sequence at s (n bytes left), or -1 when it
 * is not a valid, shortest-form sequence; *len is its length (1 if
 * invalid).
 */
static long utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
	long cp;
	size_t k;

	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		k = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		k = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		k = 4;
		cp = s[0] & 0x07;
	} else {
		return -1;
	}
	if (k > n)
		return -1;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = k;
	return cp;
}

/*
 * Whether yaml_scalar() can write s so that libyaml reads it back: not
 * when it is not UTF-8, nor with characters YAML takes for line breaks or a
 * byte-order mark.  The form refuses such values (they would spoil the
 * message's frontmatter) and last-run.yml leaves them out.
 */
static bool yaml_safe(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), len;

	for (size_t i = 0; i < n; i += len) {
		long cp = utf8_decode(u + i, n - i, &len);
		if (cp < 0 || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
		    cp == 0x2029 || cp == 0xfeff)
			return false;
	}
	return true;
}

static bool is_custom_var(const char *key)
{
	static const char *const not_custom[] = {
		"routine", "input_file", "id", "chain", "seq", "type", NULL,
	};
	/* (the standard variables are never among a routine's parameters) */
	for (size_t i = 0; not_custom[i]; i++)
		if (!strcmp(key, not_custom[i]))
			return false;
	return true;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = { fd, POLLOUT, 0 };
			(void)poll(&pf, 1, -1);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int last_run_save(const decree_project *p, const run_request *rq)
{
	const char *routine = run_request_get(rq, "routine");
	const char *input = run_request_get(rq, "input_file");
	char path[PATH_MAX];
	bool custom = false;
	buf b = BUF_INIT;
	int e;

	if (routine && !yaml_safe(routine))
		routine = NULL;
	if (input && !yaml_safe(input))
		input = NULL;
	if (routine && (buf_puts(&b, "routine: ") < 0 ||
			yaml_scalar(&b, routine) < 0 || buf_putc(&b, '\n') < 0))
		goto oom;
	if (rq->name && yaml_safe(rq->name) &&
	    (buf_puts(&b, "message_name: ") < 0 ||
	     yaml_scalar(&b, rq->name) < 0 || buf_putc(&b, '\n') < 0))
		goto oom;
	if (input && (buf_puts(&b, "input_file: ") < 0 ||
		      yaml_scalar(&b, input) < 0 || buf_putc(&b, '\n') < 0))
		goto oom;
	for (size_t i = 0; i < rq->vars.n; i++) {
		const kv_pair *v = &rq->vars.v[i];
		if (!is_custom_var(v->key) || !yaml_safe(v->key) ||
		    !yaml_safe(v->value))
			continue;
		if (!custom && buf_puts(&b, "custom:\n") < 0)
			goto oom;
		custom = true;
		if (buf_puts(&b, "  ") < 0 || yaml_scalar(&b, v->key) < 0 ||
		    buf_puts(&b, ": ") < 0 || yaml_scalar(&b, v->value) < 0 ||
		    buf_putc(&b, '\n') < 0)
			goto oom;
	}

	last_run_path(path, p);
	e = cli_write_atomic(path, b.ptr, b.len);
	buf_release(&b);
	if (e != 0)
		return -1;
	return 0;
oom:
	buf_release(&b);
	return FAIL("out of memory");
}

/* --- the terminal ------------------------------------------------------------
 */

static const int caught_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT, SIGWINCH,
};
#define NSIGS ARRAY_SIZE(caught_signals)

static volatile sig_atomic_t got_fatal, got_tstp, got_cont, got_winch;

static void on_signal(int sig)
{
	if (sig == SIGTSTP)
		got_tstp = 1;
	else if (sig == SIGCONT)
		got_cont = 1;
	else if (sig == SIGWINCH)
		got_winch = 1;
	else if (!got_fatal)
		got_fatal = sig;
}

typedef struct {
	int fd;
	struct termios saved, raw;
	sigset_t oldmask;
	struct sigaction old[NSIGS];
	bool tstp_ignored;
	size_t rows, cols; /* never 0 */
	unsigned char in[4096];
	size_t ipos, ilen;
	buf out;
	bool oom;
} term;

static void query_size(term *t)
{
	struct winsize ws;

	t->rows = DEFAULT_ROWS;
	t->cols = DEFAULT_COLS;
	if (ioctl(t->fd, TIOCGWINSZ, &ws) == 0) {
		if (ws.ws_row)
			t->rows = ws.ws_row;
		if (ws.ws_col)
			t->cols = ws.ws_col;
	}
}

/* Columns a line may use: one less than the width, so none auto-wraps. */
static size_t width(const term *t)
{
	return t->cols > 1 ? t->cols - 1 : 1;
}

static int term_begin(term *t, int fd)
{
	struct sigaction sa;
	sigset_t block;

	memset(t, 0, sizeof(*t));
	buf_init(&t->out);
	t->fd = fd;
	got_fatal = got_tstp = got_cont = got_winch = 0;
	if (tcgetattr(fd, &t->saved) < 0)
		return FAIL("cannot use the terminal: %s", strerror(errno));
	sigemptyset(&block);
	for (size_t i = 0; i < NSIGS; i++)
		sigaddset(&block, caught_signals[i]);
	sigprocmask(SIG_BLOCK, &block, &t->oldmask);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_mask = block;
	for (size_t i = 0; i < NSIGS; i++) {
		sigaction(caught_signals[i], &sa, &t->old[i]);
		/* what the user chose to ignore stays ignored */
		if (t->old[i].sa_handler == SIG_IGN) {
			sigaction(caught_signals[i], &t->old[i], NULL);
			if (caught_signals[i] == SIGTSTP)
				t->tstp_ignored = true;
		}
	}
	t->raw = t->saved;
	t->raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
	t->raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR);
	t->raw.c_cc[VMIN] = 1;
	t->raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSADRAIN, &t->raw) < 0) {
		int e = errno;
		for (size_t i = 0; i < NSIGS; i++)
			sigaction(caught_signals[i], &t->old[i], NULL);
		tcsetattr(fd, TCSADRAIN, &t->saved);
		sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
		return FAIL("cannot use the terminal: %s", strerror(e));
	}
	query_size(t);
	return 0;
}

static void term_end(term *t)
{
	int sig = got_fatal;

	if (t->out.len) /* what was drawn last, or an error message */
		(void)write_all(t->fd, t->out.ptr, t->out.len);
	buf_release(&t->out);
	for (size_t i = 0; i < NSIGS; i++)
		sigaction(caught_signals[i], &t->old[i], NULL);
	tcsetattr(t->fd, TCSAFLUSH, &t->saved);
	sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
	if (sig) /* caught, not handled: let the old handler see it */
		raise(sig);
}

static void o_put(term *t, const char *s, size_t n)
{
	if (buf_put(&t->out, s, n) < 0)
		t->oom = true;
}

static void o_puts(term *t, const char *s)
{
	o_put(t, s, strlen(s));
}

static int o_flush(term *t)
{
	int r = 0;

	if (t->oom) {
		buf_clear(&t->out);
		t->oom = false;
		return FAIL("out of memory");
	}
	if (write_all(t->fd, t->out.ptr, t->out.len) < 0)
		r = FAIL("cannot write to the terminal: %s", strerror(errno));
	buf_clear(&t->out);
	return r;
}

/* Ctrl-Z or SIGTSTP: the terminal as the shell left it, stop, and back. */
static void suspend(term *t)
{
	struct sigaction dfl, ours;
	sigset_t tstp;

	o_puts(t, "\r\x1b[J");
	(void)o_flush(t);
	if (t->tstp_ignored)
		return;
	tcsetattr(t->fd, TCSADRAIN, &t->saved);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGTSTP, &dfl, &ours);
	sigemptyset(&tstp);
	sigaddset(&tstp, SIGTSTP);
	sigprocmask(SIG_UNBLOCK, &tstp, NULL);
	raise(SIGTSTP); /* stops here (unless orphaned: then it is dropped) */
	sigprocmask(SIG_BLOCK, &tstp, NULL);
	sigaction(SIGTSTP, &ours, NULL);
	tcsetattr(t->fd, TCSADRAIN, &t->raw);
	query_size(t);
}

enum {
	ST_DATA = 1,
	ST_TIMEOUT = 0,
	ST_EVENT = 2,
	ST_ERROR = -1,
};

/* Wait for input (timeout_ms < 0: forever) with the signals deliverable. */
static int fill(term *t, int timeout_ms)
{
	for (;;) {
		struct pollfd pf = { t->fd, POLLIN, 0 };
		struct timespec ts = { timeout_ms / 1000,
				       (long)(timeout_ms % 1000) * 1000000L };
		ssize_t n;
		int r;

		if (got_fatal || got_tstp || got_cont || got_winch)
			return ST_EVENT;
		r = ppoll(&pf, 1, timeout_ms < 0 ? NULL : &ts, &t->oldmask);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return FAIL("cannot read the terminal: %s",
				    strerror(errno));
		if (r == 0)
			return ST_TIMEOUT;
		n = read(t->fd, t->in, sizeof(t->in));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return FAIL("cannot read the terminal: %s",
				    strerror(errno));
		if (n == 0)
			return FAIL("cannot read the terminal: end of input");
		t->ipos = 0;
		t->ilen = (size_t)n;
		return ST_DATA;
	}
}

enum key {
	K_NONE,
	K_CHAR,
	K_ENTER,
	K_BS,
	K_UP,
	K_DOWN,
	K_PGUP,
	K_PGDN,
	K_HOME,
	K_END,
	K_KILL,
	K_WERASE,
	K_EOF,
	K_REDRAW,
	K_CANCEL,
	K_ERROR,
};

/* Handle what the signal handlers noted: K_CANCEL or K_REDRAW. */
static enum key events(term *t)
{
	if (got_fatal)
		return K_CANCEL;
	if (got_tstp) {
		got_tstp = 0;
		suspend(t);
	}
	if (got_cont) {
		got_cont = 0;
		tcsetattr(t->fd, TCSADRAIN, &t->raw);
		query_size(t);
	}
	if (got_winch) {
		got_winch = 0;
		query_size(t);
	}
	return K_REDRAW;
}

/* The next byte, ST_TIMEOUT, ST_EVENT or ST_ERROR (all negative here). */
static int next_byte(term *t, int timeout_ms)
{
	int r;

	if (t->ipos < t->ilen)
		return t->in[t->ipos++];
	r = fill(t, timeout_ms);
	if (r == ST_DATA)
		return t->in[t->ipos++];
	return r == ST_TIMEOUT ? -2 : r == ST_EVENT ? -3 : -1;
}

/* After ESC: a CSI/SS3 key, or a lone Esc (which cancels). */
static enum key escape_key(term *t)
{
	char param[16];
	size_t n = 0;
	int c = next_byte(t, ESC_TIMEOUT_MS);

	if (c == -1)
		return K_ERROR;
	if (c != '[' && c != 'O')
		return K_CANCEL; /* Esc alone, Esc Esc, Alt-<key> */
	for (;;) {
		int f = next_byte(t, ESC_TIMEOUT_MS);
		if (f == -1)
			return K_ERROR;
		if (f < 0)
			return K_NONE;
		if (f >= 0x40 && f <= 0x7e) {
			param[n] = '\0';
			switch (f) {
			case 'A':
				return K_UP;
			case 'B':
				return K_DOWN;
			case 'H':
				return K_HOME;
			case 'F':
				return K_END;
			case '~':
				if (!strcmp(param, "5"))
					return K_PGUP;
				if (!strcmp(param, "6"))
					return K_PGDN;
				if (!strcmp(param, "1") || !strcmp(param, "7"))
					return K_HOME;
				if (!strcmp(param, "4") || !strcmp(param, "8"))
					return K_END;
				return K_NONE;
			default:
				return K_NONE;
			}
		}
		if (n + 1 < sizeof(param))
			param[n++] = (char)f;
	}
}

/* Keys already read and waiting: no point in drawing before them. */
static bool pending(const term *t)
{
	return t->ipos < t->ilen;
}

static enum key read_key(term *t, char *ch)
{
	int c = next_byte(t, -1);

	if (c == -1)
		return K_ERROR;
	if (c < 0)
		return events(t);
	*ch = (char)c;
	switch (c) {
	case 0x03: /* Ctrl-C */
		return K_CANCEL;
	case 0x04: /* Ctrl-D */
		return K_EOF;
	case 0x08:
	case 0x7f:
		return K_BS;
	case '\r':
	case '\n':
		return K_ENTER;
	case 0x0e: /* Ctrl-N */
		return K_DOWN;
	case 0x10: /* Ctrl-P */
		return K_UP;
	case 0x15: /* Ctrl-U */
		return K_KILL;
	case 0x17: /* Ctrl-W */
		return K_WERASE;
	case 0x0c: /* Ctrl-L */
		return K_REDRAW;
	case 0x1a: /* Ctrl-Z: ISIG is off, so do what the tty would */
		suspend(t);
		return K_REDRAW;
	case 0x1b:
		return escape_key(t);
	case '\t':
		return K_CHAR;
	}
	return c < 0x20 ? K_NONE : K_CHAR;
}

/* --- text of one line: widths, truncation -----------------------------------
 */

/* Display columns of s[0..n): one per code point, one per invalid byte. */
static size_t cols_of(const char *s, size_t n)
{
	size_t cols = 0, len;

	for (size_t i = 0; i < n; i += len, cols++)
		(void)utf8_decode((const unsigned char *)s + i, n - i, &len);
	return cols;
}

/* Append at most `max` columns of s[0..n), controls drawn as '?'. */
static size_t put_cols(term *t, const char *s, size_t n, size_t max)
{
	size_t cols = 0, len;

	for (size_t i = 0; i < n && cols < max; i += len, cols++) {
		long cp =
			utf8_decode((const unsigned char *)s + i, n - i, &len);
		if (cp == '\t')
			o_puts(t, " ");
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
			o_puts(t, "?");
		else
			o_put(t, s + i, len);
	}
	return cols;
}

/* Append the last `max` columns of s[0..n). */
static size_t put_tail(term *t, const char *s, size_t n, size_t max)
{
	size_t total = cols_of(s, n), i = 0, len;

	for (; total > max; total--, i += len)
		(void)utf8_decode((const unsigned char *)s + i, n - i, &len);
	return put_cols(t, s + i, n - i, max);
}

static size_t put_str(term *t, const char *s, size_t max)
{
	return put_cols(t, s, strlen(s), max);
}

/* "label: value" as the record of an answered prompt. */
static int draw_final(term *t, const char *label, const char *value,
		      const char *suffix)
{
	size_t w = width(t), c = 0;

	o_puts(t, "\r\x1b[J");
	c += put_str(t, label, w - c);
	c += put_str(t, ": ", w - c);
	c += put_str(t, value, w - c);
	if (suffix)
		put_str(t, suffix, w - c);
	o_puts(t, "\r\n");
	return o_flush(t);
}

/* --- the line editor ---------------------------------------------------------
 */

typedef struct {
	const char *label;    /* "message name" */
	const char *note;     /* "(required)", or NULL */
	const char *def;      /* offered value Enter accepts, or NULL */
	const char *fallback; /* what Backspace on an empty line makes def */
	const char *sep;      /* ": " */
	bool eof_ok;	      /* Ctrl-D ends (the body), else cancels */
	bool allow_tab;
} line_prompt;

enum { LINE_ENTER = 0, LINE_EOF = 2 };

/* Draw the prompt line; returns the column the cursor is left at. */
static size_t draw_line(term *t, const line_prompt *lp, const char *text,
			size_t len)
{
	buf pre = BUF_INIT;
	size_t w = width(t), pw, tw, used;
	int r = 0;

	r |= buf_puts(&pre, lp->label);
	if (lp->note)
		r |= buf_printf(&pre, "%s(%s)", pre.len ? " " : "", lp->note);
	if (lp->def && *lp->def)
		r |= buf_printf(&pre, "%s[%s]", pre.len ? " " : "", lp->def);
	r |= buf_puts(&pre, lp->sep);
	if (r)
		t->oom = true;
	pw = cols_of(pre.ptr, pre.len);
	tw = cols_of(text, len);
	o_puts(t, "\r\x1b[J");
	if (pw + tw <= w) {
		used = put_cols(t, pre.ptr, pre.len, w);
		used += put_cols(t, text, len, w - used);
	} else if (!tw || pw + 6 <= w) {
		/* the prompt, then as much of the end of the text as fits */
		used = put_cols(t, pre.ptr, pre.len, w);
		if (tw && used < w) {
			o_puts(t, "<");
			used += 1 + put_tail(t, text, len, w - used - 1);
		}
	} else {
		/* too narrow for both: the end of the text alone */
		used = put_tail(t, text, len, w);
	}
	buf_release(&pre);
	return used;
}

/* Drop the last code point of the line (the last byte if not UTF-8). */
static void line_backspace(buf *line)
{
	size_t n = line->len, k = n, len;

	if (!n)
		return;
	while (k > 1 && n - k < 3 &&
	       ((unsigned char)line->ptr[k - 1] & 0xc0) == 0x80)
		k--;
	k--; /* the candidate lead byte */
	if (utf8_decode((const unsigned char *)line->ptr + k, n - k, &len) >=
		    0 &&
	    len == n - k)
		buf_truncate(line, k);
	else
		buf_truncate(line, n - 1);
}

static void line_werase(buf *line)
{
	size_t n = line->len;

	while (n && (line->ptr[n - 1] == ' ' || line->ptr[n - 1] == '\t'))
		n--;
	while (n && line->ptr[n - 1] != ' ' && line->ptr[n - 1] != '\t')
		n--;
	buf_truncate(line, n);
}

/*
 * Edit the line (it starts as *line).  Returns LINE_ENTER, LINE_EOF
 * (Ctrl-D with eof_ok), CANCELLED or -1; the text is in *line (empty when
 * the default was taken: see lp->def, which Backspace may have changed to
 * lp->fallback).
 */
static int read_line(term *t, line_prompt *lp, buf *line)
{
	for (;;) {
		enum key k;
		char ch = 0;

		if (!pending(t)) { /* a paste is drawn once, not per byte */
			draw_line(t, lp, line->ptr, line->len);
			if (o_flush(t) < 0)
				return -1;
		}
		k = read_key(t, &ch);
		switch (k) {
		case K_CHAR:
			if (ch == '\t' && !lp->allow_tab)
				break;
			if (buf_putc(line, ch) < 0)
				return FAIL("out of memory");
			break;
		case K_BS:
			if (line->len)
				line_backspace(line);
			else
				lp->def = lp->fallback;
			break;
		case K_KILL:
			buf_clear(line);
			break;
		case K_WERASE:
			line_werase(line);
			break;
		case K_ENTER:
			return LINE_ENTER;
		case K_EOF:
			if (lp->eof_ok)
				return LINE_EOF;
			if (!line->len)
				return CANCELLED;
			break;
		case K_CANCEL:
			return CANCELLED;
		case K_ERROR:
			return -1;
		default:
			break;
		}
	}
}

/* --- the routine selector ----------------------------------------------------
 */

typedef struct {
	const routine_info *rv;
	size_t rn;
	size_t *match; /* indices into rv of the routines the filter keeps */
	size_t nmatch;
	size_t sel; /* index into rv of the highlighted routine */
	size_t top; /* first visible position in match[] */
	size_t namew;
	buf filter;
} selector;

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* 0: no match; 1: subsequence; 2: substring; 3: prefix (ASCII case
 * folded). */
static int match_score(const char *name, const char *f, size_t fn)
{
	size_t i = 0, nl = strlen(name);

	if (!fn)
		return 1;
	for (size_t k = 0; k + fn <= nl; k++) {
		size_t j = 0;
		while (j < fn && lower(name[k + j]) == lower(f[j]))
			j++;
		if (j == fn)
			return k == 0 ? 3 : 2;
	}
	for (const char *c = name; *c && i < fn; c++)
		if (lower(*c) == lower(f[i]))
			i++;
	return i == fn ? 1 : 0;
}

/* Refilter; keep the highlight unless a better match appeared. */
static void sel_refilter(selector *s)
{
	int best = 0, cur = 0;
	size_t besti = 0;

	s->nmatch = 0;
	for (size_t i = 0; i < s->rn; i++) {
		int sc = match_score(s->rv[i].name, s->filter.ptr,
				     s->filter.len);
		if (!sc)
			continue;
		s->match[s->nmatch++] = i;
		if (sc > best) {
			best = sc;
			besti = i;
		}
		if (i == s->sel)
			cur = sc;
	}
	if (s->nmatch && cur < best)
		s->sel = besti;
	s->top = 0;
}

static size_t sel_pos(const selector *s)
{
	for (size_t k = 0; k < s->nmatch; k++)
		if (s->match[k] == s->sel)
			return k;
	return 0;
}

static size_t sel_rows(const term *t, const selector *s)
{
	size_t rows = t->rows > 1 ? t->rows - 1 : 0;

	if (rows > MAX_LIST_ROWS)
		rows = MAX_LIST_ROWS;
	if (rows > (s->nmatch ? s->nmatch : 1))
		rows = s->nmatch ? s->nmatch : 1;
	return rows;
}

static void sel_draw(term *t, selector *s)
{
	size_t w = width(t), nrows = sel_rows(t, s), pos = sel_pos(s), col;
	line_prompt lp = { "routine", NULL, NULL, NULL, ": ", false, false };
	char seq[32];

	if (s->nmatch && nrows) {
		if (pos < s->top)
			s->top = pos;
		if (pos >= s->top + nrows)
			s->top = pos - nrows + 1;
		if (s->top + nrows > s->nmatch)
			s->top = s->nmatch - nrows;
	}
	/* without room for a list, the highlighted routine is the default */
	lp.def = !nrows && s->nmatch ? s->rv[s->sel].name : NULL;
	col = draw_line(t, &lp, s->filter.ptr, s->filter.len);
	for (size_t k = s->top; k < s->top + nrows; k++) {
		const routine_info *r;
		size_t c, nc;

		o_puts(t, "\r\n");
		if (!s->nmatch) {
			put_str(t, "  (no match)", w);
			continue;
		}
		r = &s->rv[s->match[k]];
		c = put_str(t, r == &s->rv[s->sel] ? "> " : "  ", w);
		nc = put_str(t, r->name, w - c);
		c += nc;
		if (r->summary) {
			for (; nc < s->namew + 2 && c < w; nc++, c++)
				o_puts(t, " ");
			put_str(t, r->summary, w - c);
		}
	}
	if (nrows) {
		snprintf(seq, sizeof(seq), "\x1b[%zuA\r", nrows);
		o_puts(t, seq);
		if (col) {
			snprintf(seq, sizeof(seq), "\x1b[%zuC", col);
			o_puts(t, seq);
		}
	}
}

static void sel_move(selector *s, long delta, bool wrap)
{
	size_t pos = sel_pos(s);
	long np = (long)pos + delta, n = (long)s->nmatch;

	if (!n)
		return;
	if (wrap)
		np = ((np % n) + n) % n;
	else if (np < 0)
		np = 0;
	else if (np >= n)
		np = n - 1;
	s->sel = s->match[np];
}

/* Returns 0 with *chosen, CANCELLED or -1. */
static int select_routine(term *t, const routine_info *rv, size_t rn,
			  size_t initial, size_t *chosen)
{
	selector s;
	int r = -1;

	memset(&s, 0, sizeof(s));
	buf_init(&s.filter);
	s.rv = rv;
	s.rn = rn;
	s.sel = initial;
	if (!(s.match = calloc(rn, sizeof(*s.match))))
		return FAIL("out of memory");
	for (size_t i = 0; i < rn; i++) {
		size_t c = cols_of(rv[i].name, strlen(rv[i].name));
		if (c > s.namew)
			s.namew = c < MAX_NAME_COLS ? c : MAX_NAME_COLS;
	}
	sel_refilter(&s);
	for (;;) {
		size_t page = sel_rows(t, &s) ? sel_rows(t, &s) : 1;
		enum key k;
		char ch = 0;

		if (!pending(t)) {
			sel_draw(t, &s);
			if (o_flush(t) < 0)
				break;
		}
		k = read_key(t, &ch);
		if (k == K_ENTER && s.nmatch) {
			*chosen = s.sel;
			r = draw_final(t, "routine", rv[s.sel].name, NULL);
			break;
		}
		if (k == K_CANCEL || k == K_EOF) {
			o_puts(t, "\x1b[J"); /* the list; the prompt stays */
			(void)o_flush(t);
			r = CANCELLED;
			break;
		}
		if (k == K_ERROR)
			break;
		switch (k) {
		case K_UP:
			sel_move(&s, -1, true);
			break;
		case K_DOWN:
			sel_move(&s, 1, true);
			break;
		case K_PGUP:
			sel_move(&s, -(long)page, false);
			break;
		case K_PGDN:
			sel_move(&s, (long)page, false);
			break;
		case K_HOME:
			sel_move(&s, -(long)s.nmatch, false);
			break;
		case K_END:
			sel_move(&s, (long)s.nmatch, false);
			break;
		case K_CHAR:
			if (ch == '\t')
				break;
			if (buf_putc(&s.filter, ch) < 0) {
				r = FAIL("out of memory");
				goto out;
			}
			sel_refilter(&s);
			break;
		case K_BS:
			line_backspace(&s.filter);
			sel_refilter(&s);
			break;
		case K_KILL:
			buf_clear(&s.filter);
			sel_refilter(&s);
			break;
		case K_WERASE:
			line_werase(&s.filter);
			sel_refilter(&s);
			break;
		default:
			break;
		}
	}
out:
	free(s.match);
	buf_release(&s.filter);
	return r;
}

/* --- the form ----------------------------------------------------------------
 */

static bool has_alnum(const char *s)
{
	for (; s && *s; s++)
		if (is_alnum((unsigned char)*s))
			return true;
	return false;
}

static char *trimmed(const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return strndup(s, n);
}

static int ask_name(term *t, run_request *out, const last_run *lr, buf *line)
{
	line_prompt lp = { "message name", NULL,  lr->name, NULL,
			   ": ",	   false, false };
	const char *v;
	int r;

	buf_clear(line);
	for (;;) {
		if ((r = read_line(t, &lp, line)) != LINE_ENTER)
			return r;
		v = line->len ? line->ptr : lp.def;
		if (has_alnum(v))
			break;
		/* the file name is made of ASCII letters and digits */
		lp.note = v && *v ? "needs a letter or digit" : "required";
		buf_clear(line);
	}
	if (!(out->name = strdup(v)))
		return FAIL("out of memory");
	return draw_final(t, "message name", v, NULL);
}

/* Optional; it must exist (under the root, as the runner looks for it),
 * or the typed body would be lost to the runner's refusal. */
static int ask_input_file(term *t, run_request *out, const decree_project *p,
			  const last_run *lr, buf *line)
{
	line_prompt lp = { "input file", "optional", lr->input_file, NULL,
			   ": ",	 false,	     false };
	char path[PATH_MAX];
	struct stat st;
	char *v;
	int r;

	buf_clear(line);
	for (;;) {
		if ((r = read_line(t, &lp, line)) != LINE_ENTER)
			return r;
		v = line->len ? trimmed(line->ptr, line->len)
			      : strdup(lp.def ? lp.def : "");
		if (!v)
			return FAIL("out of memory");
		snprintf(path, sizeof(path), "%s/%s", decree_project_root(p),
			 v);
		if (!*v || (yaml_safe(v) && stat(path, &st) == 0))
			break;
		lp.note = yaml_safe(v) ? "not found; Backspace edits"
				       : "unusable characters";
		free(v);
		if (!line->len && lp.def) /* the offer, to edit */
			buf_puts(line, lp.def);
		lp.def = NULL;
	}
	if (*v && run_request_set(out, "input_file", v))
		r = -1;
	else
		r = draw_final(t, "input file", *v ? v : "(none)", NULL);
	free(v);
	return r;
}

static int ask_param(term *t, run_request *out, const routine_param *rp,
		     const last_run *lr, buf *line)
{
	const char *rdef = *rp->def ? rp->def : NULL;
	const char *prev = last_custom(lr, rp->name);
	line_prompt lp = { rp->name, NULL, NULL, rdef, ": ", false, false };
	int r;

	if (prev && !strcmp(prev, rp->def))
		prev = NULL; /* the same as not setting it */
	lp.def = prev ? prev : rdef;
	buf_clear(line);
	for (;;) {
		if ((r = read_line(t, &lp, line)) != LINE_ENTER)
			return r;
		if (!line->len || yaml_safe(line->ptr))
			break;
		lp.note = "unusable characters";
	}
	if (line->len) {
		if (run_request_set(out, rp->name, line->ptr))
			return -1;
		return draw_final(t, rp->name, line->ptr, NULL);
	}
	if (prev && lp.def == prev) {
		if (run_request_set(out, rp->name, prev))
			return -1;
		return draw_final(t, rp->name, prev, NULL);
	}
	/* unset: the routine's own default applies when it runs */
	return draw_final(t, rp->name, rdef ? rdef : "",
			  rdef ? " (default)" : "(default)");
}

static int ask_body(term *t, run_request *out, buf *line)
{
	bool required = !run_request_get(out, "input_file");
	line_prompt lp = { "", NULL, NULL, NULL, "> ", true, true };
	buf body = BUF_INIT;
	int r;

	o_puts(t, "\r\x1b[J");
	put_str(t,
		required
			? "message body (end with an empty line or Ctrl-D):"
			: "message body (optional; end with an empty line or Ctrl-D):",
		width(t));
	o_puts(t, "\r\n");
	if (o_flush(t) < 0)
		return -1;
	for (;;) {
		buf_clear(line);
		if ((r = read_line(t, &lp, line)) != LINE_ENTER &&
		    r != LINE_EOF)
			goto done;
		if (line->len) {
			lp.note = NULL; /* the record of the line, no note */
			draw_line(t, &lp, line->ptr, line->len);
			o_puts(t, "\r\n");
			if (o_flush(t) < 0) {
				r = -1;
				goto done;
			}
			if (buf_put(&body, line->ptr, line->len) < 0 ||
			    buf_putc(&body, '\n') < 0) {
				r = FAIL("out of memory");
				goto done;
			}
			if (r == LINE_ENTER)
				continue;
		}
		if (!body.len && required) {
			lp.note = "required";
			continue;
		}
		break;
	}
	o_puts(t, "\r\x1b[J");
	r = o_flush(t);
	if (!r && body.len)
		out->body = buf_detach(&body, NULL);
done:
	buf_release(&body);
	return r;
}

/* The routine called `name` in rv, or NULL. */
static const routine_info *routine_find(const routine_info *rv, size_t rn,
					const char *name)
{
	for (size_t i = 0; name && i < rn; i++)
		if (!strcmp(rv[i].name, name))
			return &rv[i];
	return NULL;
}

/* Can the routine picked run (decree_pipeline_check: the AI command)?
 * Told before any other question, so nothing is typed in vain. */
static int check_picked(decree_project *p, const char *routine)
{
	decree_run_request v = DECREE_RUN_REQUEST_INIT;
	decree_field f = { "routine", routine };

	v.fields = &f;
	v.nfields = 1;
	return decree_pipeline_check(p, &v) < 0 ? UNRUNNABLE : 0;
}

static int form(term *t, run_request *out, decree_project *p,
		const routine_info *rv, size_t rn, const last_run *lr)
{
	const routine_info *def = routine_find(rv, rn, lr->routine);
	const routine_info *r;
	buf line = BUF_INIT;
	size_t chosen;
	int rc;

	if (!def)
		def = routine_find(rv, rn,
				   decree_project_config(p)->default_routine);
	rc = select_routine(t, rv, rn, def ? (size_t)(def - rv) : 0, &chosen);
	if (rc)
		goto done;
	r = &rv[chosen];
	if ((rc = check_picked(p, r->name)) ||
	    (rc = run_request_set(out, "routine", r->name) ? -1 : 0) ||
	    (rc = ask_name(t, out, lr, &line)) ||
	    (rc = ask_input_file(t, out, p, lr, &line)))
		goto done;
	for (size_t i = 0; i < r->nparams; i++)
		if (is_custom_var(r->params[i].name) &&
		    (rc = ask_param(t, out, &r->params[i], lr, &line)))
			goto done;
	rc = ask_body(t, out, &line);
done:
	if (rc == CANCELLED) { /* leave the prompt on screen, end its line */
		o_puts(t, "\r\n");
		(void)o_flush(t);
	}
	buf_release(&line);
	return rc;
}

int interactive_request(run_request *out, decree_project *p, int tty_fd)
{
	decree_routine_list *l;
	routine_info *rv = NULL; /* shallow copies: the strings are l's */
	size_t rn;
	last_run lr;
	term t;
	int rc;

	if (decree_routine_list_get(&l, p) < 0)
		return lib_fail(-1);
	rn = decree_routine_list_count(l);
	if (!rn) {
		decree_routine_list_free(l);
		return fail("no routines in .decree/routines/ (add one, e.g. "
			    ".decree/routines/develop.sh)");
	}
	if (!(rv = calloc(rn, sizeof(*rv)))) {
		decree_routine_list_free(l);
		return fail("out of memory");
	}
	for (size_t i = 0; i < rn; i++)
		rv[i] = *decree_routine_list_at(l, i);
	last_run_load(&lr, p);
	if ((rc = term_begin(&t, tty_fd)) == 0) {
		rc = form(&t, out, p, rv, rn, &lr);
		if (got_fatal)
			rc = CANCELLED;
		term_end(&t);
	}
	last_run_release(&lr);
	free(rv);
	decree_routine_list_free(l);
	if (rc == UNRUNNABLE) /* the terminal is back: say why */
		lib_fail(DECREE_ERROR);
	if (rc) {
		run_request_release(out);
		return rc == CANCELLED ? EXIT_CANCELLED : EXIT_FAIL;
	}
	out->interactive = true;
	return 0;
}
