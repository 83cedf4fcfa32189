/*
 * color.c - color on the terminal: when (cli_color_init), which words
 * (cli_action_color), and diffs colored line by line (cli_diff_write).
 * docs/cli/output.md is the user's side of it.
 *
 * Color is decided once, before anything is written and before a pager
 * takes stdout over (pager.c): "auto" colors when stdout is a terminal,
 * NO_COLOR (https://no-color.org) is unset or empty and TERM is set and
 * not "dumb", as git decides; "always" colors anywhere, also into a pipe
 * or a file (the user asked: it wins over NO_COLOR); "never" does not.
 * --json output never has color: its bytes are data.  Error and warning
 * lines ("decree: ...") stay plain, so that what scripts and people grep
 * for is the same everywhere.
 *
 * The diff writer colors decree's diff format (docs/diff-format.md) as
 * git colors its own: header lines bold, "@@ -a,b +c,d @@" cyan, removed
 * lines red, added lines green, context and "\ No newline" lines plain.
 * Whether a line starting with '-' or '+' is a hunk line or a "---" /
 * "+++" header is decided by counting the lines the hunk header
 * announced, never by guessing from the text; the bytes written are the
 * input's, with escape sequences around lines, and a color never stays
 * open across a newline (less -R and a terminal show each line alone).
 * Diffs may be huge, with lines of any length: only the first bytes of
 * each line are held (enough to classify it), the rest streams through.
 */
#include "util/common.h"
#include "cli.h"

static bool color_on;

const char *const cli_color_whens[] = { "auto", "always", "never", NULL };

int cli_color_parse(const char *when)
{
	for (int i = 0; cli_color_whens[i]; i++)
		if (!strcmp(when, cli_color_whens[i]))
			return i; /* the order of CLI_COLOR_* */
	return -1;
}

void cli_color_init(int when, bool json)
{
	const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");

	if (json || when == CLI_COLOR_NEVER)
		color_on = false;
	else if (when == CLI_COLOR_ALWAYS)
		color_on = true;
	else
		color_on = isatty(STDOUT_FILENO) && !(no_color && *no_color) &&
			   term && *term && strcmp(term, "dumb");
}

bool cli_color_on(void)
{
	return color_on;
}

const char *cli_color(cli_color_name c)
{
	static const char *const seq[] = {
		[CLI_RESET] = "\033[m",	   [CLI_BOLD] = "\033[1m",
		[CLI_RED] = "\033[31m",	   [CLI_GREEN] = "\033[32m",
		[CLI_YELLOW] = "\033[33m", [CLI_CYAN] = "\033[36m",
	};
	return color_on ? seq[c] : "";
}

const char *cli_action_color(const char *action)
{
	if (!strcmp(action, "create"))
		return cli_color(CLI_GREEN);
	if (!strcmp(action, "delete") || !strcmp(action, "conflict"))
		return cli_color(CLI_RED);
	if (!strncmp(action, "skip", 4))
		return cli_color(CLI_CYAN);
	return cli_color(CLI_YELLOW); /* restore, modify, replace */
}

/* --- diffs ---------------------------------------------------------------- */

static bool starts(const char *s, size_t n, const char *word)
{
	size_t l = strlen(word);
	return n >= l && !memcmp(s, word, l);
}

/* The extended header lines of docs/diff-format.md 1.2-1.5 (and git's
 * rename/copy lines decree reads): bold. */
static bool is_header(const char *s, size_t n)
{
	static const char *const words[] = {
		"diff --git ",
		"index ",
		"old mode ",
		"new mode ",
		"new file mode ",
		"deleted file mode ",
		"rename from ",
		"rename to ",
		"copy from ",
		"copy to ",
		"similarity index ",
		"dissimilarity index ",
		"--- ",
		"+++ ",
		"GIT binary patch",
		"decree-base64 ",
		"Binary files ",
		NULL,
	};
	for (size_t i = 0; words[i]; i++)
		if (starts(s, n, words[i]))
			return true;
	return false;
}

/* "<start>[,<count>]" at *p; the count (1 when left out). */
static bool range(const char **p, const char *end, uint64_t *count)
{
	const char *s = *p;
	bool digits = false;

	while (s < end && *s >= '0' && *s <= '9')
		s++, digits = true;
	if (!digits)
		return false;
	*count = 1;
	if (s < end && *s == ',') {
		uint64_t c = 0;
		const char *d = ++s;
		while (s < end && *s >= '0' && *s <= '9' && c < UINT64_MAX / 10)
			c = c * 10 + (uint64_t)(*s++ - '0');
		if (s == d)
			return false;
		*count = c;
	}
	*p = s;
	return true;
}

/* "@@ -a[,b] +c[,d] @@": the counts, and the length of that part. */
static size_t hunk_header(const char *s, size_t n, uint64_t *old, uint64_t *new)
{
	const char *p = s + 4, *end = s + n;

	if (!starts(s, n, "@@ -") || !range(&p, end, old) ||
	    !starts(p, (size_t)(end - p), " +"))
		return 0;
	p += 2;
	if (!range(&p, end, new) || !starts(p, (size_t)(end - p), " @@"))
		return 0;
	return (size_t)(p + 3 - s);
}

static void put(const char *p, size_t n)
{
	if (n)
		fwrite(p, 1, n, stdout);
}

/* Classify the held start of a line and write it with its color. */
static void line_start(cli_diff_writer *w)
{
	const char *s = w->head, *color = NULL;
	size_t n = w->nhead, cut;
	uint64_t old, new;

	if (w->in_hunk && n && s[0] == '\\') {
		color = NULL; /* "\ No newline at end of file" */
	} else if (w->in_hunk && (w->old_left || w->new_left) && n &&
		   (s[0] == ' ' || s[0] == '-' || s[0] == '+')) {
		if (s[0] != '+' && w->old_left)
			w->old_left--;
		if (s[0] != '-' && w->new_left)
			w->new_left--;
		color = s[0] == '-'   ? cli_color(CLI_RED)
			: s[0] == '+' ? cli_color(CLI_GREEN)
				      : NULL;
	} else if ((cut = hunk_header(s, n, &old, &new)) != 0) {
		w->in_hunk = true;
		w->old_left = old;
		w->new_left = new;
		/* the range part cyan, anything after it (git's function
		 * context) plain */
		fputs(cli_color(CLI_CYAN), stdout);
		put(s, cut);
		fputs(cli_color(CLI_RESET), stdout);
		put(s + cut, n - cut);
		w->streaming = true;
		w->colored = false;
		return;
	} else {
		w->in_hunk = false;
		if (is_header(s, n))
			color = cli_color(CLI_BOLD);
	}
	/* an empty line (or a line end alone) gets no escape sequences */
	if (color && n && s[0] != '\n') {
		fputs(color, stdout);
		w->colored = true;
	} else {
		w->colored = false;
	}
	w->streaming = true;
	put(s, n);
}

void cli_diff_write(cli_diff_writer *w, const char *p, size_t n)
{
	const char *end = p + n;

	if (!color_on) {
		put(p, n);
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (!w->streaming) {
			/* hold the start of the line until it is whole or
			 * long enough to tell what it is */
			size_t room = sizeof(w->head) - w->nhead;
			size_t take = len < room ? len : room;
			memcpy(w->head + w->nhead, p, take);
			w->nhead += take;
			p += take;
			len -= take;
			if (!nl && w->nhead < sizeof(w->head))
				continue; /* the line goes on in the next piece
					   */
			line_start(w);
		}
		put(p, len);
		p += len;
		if (p < end) { /* at the '\n' */
			if (w->colored)
				fputs(cli_color(CLI_RESET), stdout);
			putchar('\n');
			p++;
			w->streaming = w->colored = false;
			w->nhead = 0;
		}
	}
}

void cli_diff_end(cli_diff_writer *w)
{
	if (!color_on)
		return;
	if (!w->streaming && w->nhead)
		line_start(w);
	if (w->colored)
		fputs(cli_color(CLI_RESET), stdout);
	w->streaming = w->colored = false;
	w->nhead = 0;
}

int cli_diff_cat(const char *path)
{
	cli_diff_writer w = CLI_DIFF_WRITER_INIT;
	FILE *f = fopen(path, "rb");
	char chunk[65536];
	size_t n;

	if (!f)
		return -1;
	while (!cli_output_closed() &&
	       (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cli_diff_write(&w, chunk, n);
	cli_diff_end(&w);
	fclose(f);
	return 0;
}
