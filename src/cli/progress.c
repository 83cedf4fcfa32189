/*
 * progress.c - what a long command says while it works, and what it
 * noticed.
 *
 * The progress line: one line on stderr, rewritten in place with "\r"
 * (files, bytes, rate, and the time left once the totals are known), for
 * the calls that report progress through the store handle
 * (decree_store_set_progress).  Only when stderr is a terminal and neither
 * --json nor -q is given; it appears once the command has run for
 * DECREE_PROGRESS_DELAY_MS (default 500 ms, so quick commands never show
 * it; tests set 0), is redrawn at most 10 times a second, and is erased
 * before anything else is printed (cli_progress_clear) and when the call
 * returns (cli_progress_end).  The library calls the function as often as
 * once per file: what it costs here is one clock read.
 *
 * Notices (cli_notices): what the last call noticed (decree_notice_at),
 * one "decree: notice: ..." line each on stderr (not with -q), with the
 * command to type about it, and the same as objects of the document's
 * "notices" array with --json (docs/schema/README.md).
 */
#include "util/common.h"
#include "cli.h"
#include "util/json.h"
#include "util/size.h"

#include <sys/ioctl.h>
#include <time.h>

#define REDRAW_NS (100 * 1000000LL)

static struct {
	bool on;	  /* the command shows progress */
	bool shown;	  /* a line is on the screen */
	int64_t start_ns; /* when cli_progress_begin was called */
	int64_t delay_ns; /* nothing before start + delay */
	int64_t drawn_ns; /* the last draw */
	int64_t stage_ns; /* when the stage began */
	int stage;	  /* decree_progress_stage, 0: none yet */
	uint64_t files0;  /* files and bytes done when the stage began */
	uint64_t bytes0;  /* (the rate counts this stage only) */
	size_t len;	  /* columns of the line on the screen */
} pg;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* 12345678 -> "12,345,678" */
static const char *grouped(char out[32], uint64_t n)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRIu64, n), k = 0;

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			out[k++] = ',';
		out[k++] = digits[i];
	}
	out[k] = '\0';
	return out;
}

static const char *stage_name(int stage)
{
	switch (stage) {
	case DECREE_PROGRESS_SCAN:
		return "scanning";
	case DECREE_PROGRESS_CHECK:
		return "checking";
	case DECREE_PROGRESS_WRITE:
		return "writing";
	case DECREE_PROGRESS_VERIFY:
		return "verifying";
	default:
		return "working";
	}
}

static size_t columns(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		return ws.ws_col;
	return 80;
}

static void draw(const decree_progress *p, int64_t now)
{
	char a[32], b[32], sa[SIZE_TEXT_MAX], sb[SIZE_TEXT_MAX];
	double secs = (double)(now - pg.stage_ns) / 1e9;
	double rate = 0, frate = 0, left = -1;
	buf line = BUF_INIT;
	size_t width = columns() - 1, n;

	if (secs > 0.05) {
		rate = (double)(p->bytes - pg.bytes0) / secs;
		frate = (double)(p->files - pg.files0) / secs;
	}
	const char *unit = p->stage == DECREE_PROGRESS_VERIFY ? "objects"
							      : "files";

	buf_printf(&line, "%s: ", stage_name(p->stage));
	if (p->total_known && p->files_total)
		buf_printf(&line, "%s/%s %s", grouped(a, p->files),
			   grouped(b, p->files_total), unit);
	else
		buf_printf(&line, "%s %s", grouped(a, p->files_total), unit);
	if (p->bytes_total || p->bytes) {
		if (p->total_known)
			buf_printf(&line, ", %s/%s", size_format(sa, p->bytes),
				   size_format(sb, p->bytes_total));
		else
			buf_printf(&line, ", %s", size_format(sa, p->bytes));
	}
	if (rate >= 1)
		buf_printf(&line, ", %s/s", size_format(sa, (uint64_t)rate));
	if (p->total_known) {
		if (p->bytes_total > p->bytes && rate >= 1)
			left = (double)(p->bytes_total - p->bytes) / rate;
		else if (p->files_total > p->files && frate > 0)
			left = (double)(p->files_total - p->files) / frate;
	}
	if (left >= 0) {
		long l = (long)(left + 0.5);
		buf_printf(&line, ", %ld:%02ld left", l / 60, l % 60);
	}
	n = line.len < width ? line.len : width;
	fprintf(stderr, "\r%.*s", (int)n, line.ptr);
	if (pg.shown && pg.len > n)
		fprintf(stderr, "%*s", (int)(pg.len - n), "");
	fflush(stderr);
	pg.len = n;
	pg.shown = true;
	pg.drawn_ns = now;
	buf_release(&line);
}

static void on_progress(void *payload, const decree_progress *p)
{
	int64_t now = now_ns();
	bool new_stage = (int)p->stage != pg.stage;

	(void)payload;
	if (new_stage) {
		pg.stage = (int)p->stage;
		pg.stage_ns = now;
		pg.files0 = p->files;
		pg.bytes0 = p->bytes;
	}
	/* a new stage is shown at once, the rest 10 times a second */
	if (now - pg.start_ns < pg.delay_ns ||
	    (pg.shown && !new_stage && now - pg.drawn_ns < REDRAW_NS))
		return;
	draw(p, now);
}

void cli_progress_begin(const cli_ctx *ctx, decree_store *s)
{
	const char *d = getenv("DECREE_PROGRESS_DELAY_MS");
	const char *term = getenv("TERM");
	long ms = 500;

	memset(&pg, 0, sizeof(pg));
	if (ctx->json || ctx->quiet || !isatty(STDERR_FILENO) ||
	    (term && !strcmp(term, "dumb")))
		return;
	if (d && *d) {
		char *end;
		long v = strtol(d, &end, 10);
		if (!*end && v >= 0)
			ms = v;
	}
	pg.on = true;
	pg.start_ns = now_ns();
	pg.delay_ns = (int64_t)ms * 1000000LL;
	decree_store_set_progress(s, on_progress, NULL);
}

void cli_progress_clear(void)
{
	if (!pg.shown)
		return;
	fprintf(stderr, "\r%*s\r", (int)pg.len, "");
	fflush(stderr);
	pg.shown = false;
	pg.len = 0;
}

void cli_progress_end(decree_store *s)
{
	cli_progress_clear();
	if (pg.on && s)
		decree_store_set_progress(s, NULL, NULL);
	pg.on = false;
}

/* --- notices -------------------------------------------------------------- */

/* A root-relative path as the user would type it after "--": relative to
 * the current directory, or to the root with -C (cli_paths), quoted for
 * the shell when it needs it. */
static void typed_path(buf *out, const cli_ctx *ctx, const decree_store *s,
		       const char *path)
{
	const char *root = decree_store_root(s), *p;
	char cwd[PATH_MAX];
	buf rel = BUF_INIT;
	size_t rl = strlen(root);

	if (ctx->root_opt || !getcwd(cwd, sizeof(cwd)) || !strcmp(cwd, root) ||
	    strncmp(cwd, root, rl) || (rl > 1 && cwd[rl] != '/')) {
		buf_puts(&rel, path);
	} else {
		/* cwd is below the root: up to the common directory, then
		 * down to the path */
		const char *c = cwd + (rl > 1 ? rl + 1 : 1);
		size_t common = 0;
		for (size_t i = 0;; i++) {
			bool cend = !c[i] || c[i] == '/';
			bool pend = !path[i] || path[i] == '/';
			if (cend && pend)
				common = i;
			if (!c[i] || !path[i] || c[i] != path[i])
				break;
		}
		p = c + common;
		if (*p == '/')
			p++;
		for (; *p;) {
			buf_puts(&rel, "../");
			p = strchr(p, '/');
			p = p ? p + 1 : "";
		}
		p = path + common;
		if (common && *p == '/')
			p++;
		buf_puts(&rel, *p ? p : ".");
	}
	if (cli_needs_quote(rel.ptr)) {
		cli_quote(out, rel.ptr);
	} else if (rel.ptr[strspn(rel.ptr,
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
				  "klmnopqrstuvwxyz0123456789._/+-=,:@%")]) {
		buf_putc(out, '\'');
		for (p = rel.ptr; *p; p++)
			if (*p == '\'')
				buf_puts(out, "'\\''");
			else
				buf_putc(out, *p);
		buf_putc(out, '\'');
	} else {
		buf_puts(out, rel.ptr);
	}
	buf_release(&rel);
}

/* 's' with the bytes a terminal must not see escaped, as in errors. */
static void quoted(buf *b, const char *s)
{
	buf_putc(b, '\'');
	cli_sanitize(b, s);
	buf_putc(b, '\'');
}

/* The line of one notice (without "decree: notice: "), with what to
 * type about it.  Names are quoted for the terminal (cli_q). */
static void notice_line(buf *b, const cli_ctx *ctx, const decree_store *s,
			const decree_notice *n)
{
	char sa[SIZE_TEXT_MAX], sb[SIZE_TEXT_MAX];

	switch (n->kind) {
	case DECREE_NOTICE_MOSTLY_IGNORED:
		buf_printf(b,
			   "the checkpoint has %" PRIu64
			   " file%s: ignore rules "
			   "excluded %" PRIu64 " of the %" PRIu64
			   " entries the scan saw",
			   n->files, n->files == 1 ? "" : "s", n->count,
			   n->count + n->files);
		if (n->rule && n->rule_source) {
			buf_printf(b, " (%" PRIu64 " by '", n->rule_count);
			cli_sanitize(b, n->rule);
			if (!strcmp(n->rule_source, "built-in"))
				buf_puts(b, "', a built-in default)");
			else if (!strcmp(n->rule_source, "exclude"))
				buf_puts(b, "', an --exclude or config.yml "
					    "exclude pattern)");
			else
				buf_printf(b, "' in %s)",
					   cli_q(n->rule_source));
		}
		buf_printf(b,
			   "; 'decree checkpoint show %.12s' lists what it "
			   "holds",
			   n->checkpoint);
		break;
	case DECREE_NOTICE_EXISTING:
		buf_printf(b, "checkpoint %s:", cli_q(n->session));
		buf_printf(b,
			   "%s already exists (made %s, %.12s); returned it "
			   "unchanged, nothing was scanned",
			   cli_q(n->msg), n->created_at, n->checkpoint);
		break;
	case DECREE_NOTICE_TOO_LARGE:
		buf_printf(b,
			   "%" PRIu64
			   " file%s above the size limit (%s) %s not "
			   "stored, only %s path and size (the largest: ",
			   n->count, n->count == 1 ? "" : "s",
			   size_format(sa, n->limit),
			   n->count == 1 ? "was" : "were",
			   n->count == 1 ? "its" : "their");
		quoted(b, n->path);
		buf_printf(b,
			   ", %s); --max-file-size BYTES or "
			   "checkpoint.max_file_size in .decree/config.yml "
			   "raises the limit",
			   size_format(sb, n->size));
		break;
	case DECREE_NOTICE_EDITS_SAVED: {
		bool undo = n->label && !strcmp(n->label, "pre-undo");
		buf_printf(b, "%s replaced %zu file%s edited since the %s (",
			   undo ? "undo" : "redo", n->npaths,
			   n->npaths == 1 ? "" : "s",
			   undo ? "change it undid" : "undo");
		for (size_t i = 0; i < n->npaths && i < 3; i++) {
			if (i)
				buf_puts(b, ", ");
			quoted(b, n->paths[i]);
		}
		if (n->npaths > 3)
			buf_printf(b, " and %zu more", n->npaths - 3);
		buf_printf(b,
			   "); the edited versions are saved in checkpoint "
			   "%.12s (%s): 'decree checkpoint restore %.12s -- ",
			   n->checkpoint, undo ? "pre-undo" : "pre-redo",
			   n->checkpoint);
		if (n->npaths > 3) {
			buf_puts(b, "PATH...' brings them back ('decree "
				    "undo --json' names them all)");
			break;
		}
		for (size_t i = 0; i < n->npaths; i++) {
			if (i)
				buf_putc(b, ' ');
			typed_path(b, ctx, s, n->paths[i]);
		}
		buf_printf(b, "' brings %s back",
			   n->npaths == 1 ? "it" : "them");
		break;
	}
	default:
		cli_sanitize(b, n->message ? n->message : "");
	}
}

/* One notice as a JSON object: code, message and its own fields. */
static void notice_json(buf *j, const decree_notice *n, const char *line)
{
	json_kv_str(j, "code", decree_notice_kind_name(n->kind), false);
	json_kv_str(j, "message", line, true);
	if (n->checkpoint[0])
		json_kv_str(j, "checkpoint", n->checkpoint, true);
	switch (n->kind) {
	case DECREE_NOTICE_MOSTLY_IGNORED:
		buf_printf(j,
			   ",\"excluded\":%" PRIu64 ",\"file_count\":%" PRIu64,
			   n->count, n->files);
		if (n->rule && n->rule_source) {
			buf_puts(j, ",\"rule\":{");
			json_kv_path(j, "source", n->rule_source, false);
			json_kv_str(j, "pattern", n->rule, true);
			buf_printf(j, ",\"excluded\":%" PRIu64 "}",
				   n->rule_count);
		} else {
			buf_puts(j, ",\"rule\":null");
		}
		break;
	case DECREE_NOTICE_EXISTING:
		json_kv_str(j, "session", n->session, true);
		json_kv_str(j, "created_at", n->created_at, true);
		break;
	case DECREE_NOTICE_TOO_LARGE:
		buf_printf(j,
			   ",\"count\":%" PRIu64 ",\"limit\":%" PRIu64
			   ",\"largest\":{",
			   n->count, n->limit);
		json_kv_path(j, "path", n->path, false);
		buf_printf(j, ",\"size\":%" PRIu64 "}", n->size);
		break;
	case DECREE_NOTICE_EDITS_SAVED:
		buf_puts(j, ",\"paths\":[");
		for (size_t i = 0; i < n->npaths; i++) {
			if (i)
				buf_putc(j, ',');
			json_str(j, n->paths[i]);
		}
		buf_putc(j, ']');
		break;
	case DECREE_NOTICE_WORKSPACE:
		json_kv_str(j, "workspace", n->label, true);
		json_kv_path(j, "path", n->path, true);
		buf_printf(j, ",\"made\":%s", n->count ? "true" : "false");
		break;
	default:
		break;
	}
}

void cli_notices(const cli_ctx *ctx, const decree_store *s, buf *json)
{
	size_t n = decree_notice_count(s);

	if (json)
		buf_putc(json, '[');
	for (size_t i = 0; i < n; i++) {
		const decree_notice *no = decree_notice_at(s, i);
		buf line = BUF_INIT;
		notice_line(&line, ctx, s, no);
		/* (a workspace made again or discarded again is the summary
		 * of its undo or redo, on stdout) */
		if (!ctx->quiet && no->kind != DECREE_NOTICE_WORKSPACE) {
			cli_progress_clear();
			fprintf(stderr, "decree: notice: %s\n", line.ptr);
		}
		if (json) {
			buf_puts(json, i ? ",{" : "{");
			notice_json(json, no, line.ptr);
			buf_putc(json, '}');
		}
		buf_release(&line);
	}
	if (json)
		buf_putc(json, ']');
}
