/*
 * inbox.c - the pipeline's queue: inbox messages, chain ids, new messages,
 * and specs (docs/pipeline.md "Messages", "Specs").
 */
#include "util/common.h"
#include "pipeline/inbox.h"
#include "pipeline/message.h"
#include "pipeline/project.h"
#include "pipeline/routine.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#include <dirent.h>
#include <time.h>

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

/* "<16 digits>-<digits>.md": the chain and seq of a follow-up's name. */
static bool parse_name(const char *s, char chain[17], long *seq)
{
	size_t n = strlen(s);

	if (n < 3 || strcmp(s + n - 3, ".md"))
		return false;
	n -= 3;
	if (n < 18 || s[16] != '-' || !all_digits(s, 16) ||
	    !all_digits(s + 17, n - 17) || n - 17 > 9)
		return false;
	memcpy(chain, s, 16);
	chain[16] = '\0';
	*seq = strtol(s + 17, NULL, 10);
	return true;
}

/* The chain and seq a message's frontmatter carries. */
static bool frontmatter_id(const char *path, char chain[17], long *seq)
{
	message m;
	bool ok = false;

	if (message_load(&m, path) < 0) {
		decree_error_clear();
		return false;
	}
	{
		const char *c = message_get(&m, "chain");
		const char *q = message_get(&m, "seq");
		if (c && strlen(c) == 16 && all_digits(c, 16) && q &&
		    all_digits(q, strlen(q)) && strlen(q) < 10) {
			memcpy(chain, c, 17);
			*seq = strtol(q, NULL, 10);
			ok = true;
		}
	}
	message_release(&m);
	return ok;
}

void inbox_items_free(inbox_item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		decree_free(v[i].file);
	decree_free(v);
}

/* inbox_list of only the files changed (ctime) at or after `since` (0:
 * every file). */
static int list_since(inbox_item **out, size_t *nout, const char *dir,
		      time_t since)
{
	inbox_item *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	*out = NULL;
	*nout = 0;
	if (!d)
		return errno == ENOENT
			       ? 0
			       : decree_error_os("cannot read '%s'", dir);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX];
		struct stat st;
		inbox_item *it;
		if (de->d_name[0] == '.' || len < 4 ||
		    strcmp(de->d_name + len - 3, ".md"))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_ctim.tv_sec < since)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (GROW(v, cap, n + 1) < 0) {
			closedir(d);
			inbox_items_free(v, n);
			return -1;
		}
		it = &v[n++];
		memset(it, 0, sizeof(*it));
		if (!(it->file = decree_strdup(de->d_name))) {
			closedir(d);
			inbox_items_free(v, n);
			return -1;
		}
		it->has_id = frontmatter_id(path, it->chain, &it->seq) ||
			     parse_name(de->d_name, it->chain, &it->seq);
	}
	closedir(d);
	*out = v;
	*nout = n;
	return 0;
}

int inbox_list(inbox_item **out, size_t *nout, const char *dir)
{
	return list_since(out, nout, dir, 0);
}

/* --- chain ids ---------------------------------------------------------------
 */

static bool chain_in(const inbox_item *v, size_t n, const char *chain)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].has_id && !strcmp(v[i].chain, chain))
			return true;
	return false;
}

static bool chain_has_run(const decree_project *p, const char *chain)
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

static const char *const queue_dirs[] = { ".decree/inbox", ".decree/inbox/done",
					  ".decree/inbox/dead" };

/*
 * How far back a message in done/ or dead/ is read for its chain.  Those
 * two only grow (an agent's 500 runs a day are 500 messages in done/),
 * and reading each one's frontmatter made every `decree run` slower by
 * 16 us per message (36 ms with 2,000).  A new chain is this second's
 * local time, so a message can hold it only if it was written since
 * that time began: within the last second, or the last hour when a
 * daylight-saving change repeats it.  ctime is the kernel's clock at the
 * last write, which no one sets by hand.  A message whose file is older
 * than this bound is not listed; its chain has a run directory besides,
 * which chain_has_run sees.  (Only a chain written by hand for a time
 * still to come, two hours ahead, could be missed.)  inbox/ itself is
 * read whole: what waits there is the few messages not yet run.
 */
#define CHAIN_LOOKBACK_S (2 * 3600)

int inbox_new_chain(char out[17], const decree_project *p)
{
	inbox_item *v[3] = { NULL, NULL, NULL };
	size_t n[3] = { 0, 0, 0 };
	time_t since = time(NULL) - CHAIN_LOOKBACK_S;
	int r = 0;

	for (size_t i = 0; i < 3; i++) {
		char dir[PATH_MAX];
		project_path(dir, p, queue_dirs[i]);
		if ((r = list_since(&v[i], &n[i], dir, i ? since : 0)) < 0)
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
		inbox_items_free(v[i], n[i]);
	return r;
}

/* --- new messages
 * -------------------------------------------------------------- */

const char *inbox_request_field(const decree_run_request *rq, const char *key)
{
	const char *v = NULL;
	for (size_t i = 0; i < rq->nfields; i++) /* the last one wins */
		if (!strcmp(rq->fields[i].key, key))
			v = rq->fields[i].value;
	return v;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

/* The base of a new message's name: -m, else the spec's stem, else the
 * router's answer, else run-<chain>; kebab-cased to 50 bytes. */
static void name_base(char base[64], decree_project *p,
		      const decree_run_request *rq, const char *chain)
{
	const char *input = inbox_request_field(rq, "input_file");
	bool body = rq->body && *rq->body;

	base[0] = '\0';
	if (rq->name)
		kebab_case(base, 64, rq->name, 50);
	if (!*base && input && !body) {
		const char *b = strrchr(input, '/');
		char stem[PATH_MAX];
		size_t n;
		snprintf(stem, sizeof(stem), "%s", b ? b + 1 : input);
		n = strlen(stem);
		if (ends_with(stem, ".spec.md"))
			stem[n - 8] = '\0';
		else if (ends_with(stem, ".md"))
			stem[n - 3] = '\0';
		kebab_case(base, 64, stem, 50);
	}
	if (!*base && body && p->cfg->router) {
		buf q = BUF_INIT;
		char *ans = NULL;
		buf_puts(&q, "Summarize this task as a kebab-case name under 5 "
			     "words. Respond with ONLY the name.\n\n");
		buf_puts(&q, rq->body);
		if (router_ask(&ans, p->root, p->cfg->router, q.ptr) == 0)
			kebab_case(base, 64, ans, 50);
		decree_free(ans);
		buf_release(&q);
	}
	if (!*base)
		snprintf(base, 64, "run-%s", chain);
}

/* base, base-2, base-3 ...: the first name free in inbox, done and dead. */
static void name_free(char *out, size_t len, const decree_project *p,
		      const char *base)
{
	for (int k = 1;; k++) {
		bool taken = false;
		if (k == 1) {
			snprintf(out, len, "%s", base);
		} else {
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
			snprintf(probe, sizeof(probe), "%s/%s/%s.md", p->root,
				 queue_dirs[i], out);
			taken = exists(probe);
		}
		if (!taken)
			return;
	}
}

/* The text of the seq-0 message of a request. */
static int request_text(buf *out, const decree_run_request *rq,
			const char *chain)
{
	const char *input = inbox_request_field(rq, "input_file");
	char id[40];
	message m;
	buf body = BUF_INIT;
	int r = 0;

	memset(&m, 0, sizeof(m));
	snprintf(id, sizeof(id), "%s-0", chain);
	if (message_set(&m, "id", id) < 0 ||
	    message_set(&m, "chain", chain) < 0 ||
	    message_set(&m, "seq", "0") < 0 ||
	    message_set(&m, "type",
			input && ends_with(input, ".spec.md") ? "spec"
							      : "task") < 0)
		r = -1;
	for (size_t i = 0; i < rq->nfields && !r; i++)
		r = message_set(&m, rq->fields[i].key, rq->fields[i].value);
	/* the body, ending with a newline */
	if (!r && rq->body && *rq->body)
		r = buf_printf(&body, "%s%s", rq->body,
			       rq->body[strlen(rq->body) - 1] == '\n' ? ""
								      : "\n");
	if (!r) {
		m.body = buf_detach(&body, &m.body_len);
		r = m.body ? message_format(out, &m) : -1;
	}
	buf_release(&body);
	message_release(&m);
	return r;
}

int inbox_queue(char chain[17], char *file_out, decree_project *p,
		const decree_run_request *rq)
{
	char base[64], name[80], path[PATH_MAX + 100];
	buf text = BUF_INIT;
	int r, fd;

	if ((r = inbox_new_chain(chain, p)) < 0)
		return r;
	name_base(base, p, rq, chain);
	name_free(name, sizeof(name), p, base);
	if ((r = request_text(&text, rq, chain)) < 0) {
		buf_release(&text);
		return r;
	}
	snprintf(path, sizeof(path), "%s/.decree/inbox/%s.md", p->root, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0 || fs_write_all(fd, text.ptr, text.len) < 0 ||
	    fsync(fd) < 0) {
		r = decree_error_os("cannot write '%s'", path);
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
	} else if (fs_close(fd) < 0) {
		r = decree_error_os("cannot write '%s'", path);
		unlink(path);
	} else {
		snprintf(file_out, NAME_MAX + 1, "%s.md", name);
	}
	buf_release(&text);
	return r;
}

int inbox_move(const decree_project *p, const char *file, const char *to)
{
	char from[PATH_MAX], dst[PATH_MAX], dir[PATH_MAX], d[PATH_MAX + 8];

	project_path(dir, p, ".decree/inbox");
	snprintf(from, sizeof(from), "%s/%s", dir, file);
	snprintf(dst, sizeof(dst), "%s/%s/%s", dir, to, file);
	snprintf(d, sizeof(d), "%s/%s", dir, to);
	mkdir(d, 0755);
	if (rename(from, dst) < 0)
		return decree_error_os("cannot move '%s' to inbox/%s/", file,
				       to);
	return 0;
}

/* --- specs
 * ------------------------------------------------------------------------ */

bool spec_processed(const decree_project *p, const char *spec_name)
{
	char path[PATH_MAX];
	buf b = BUF_INIT;
	bool hit = false;

	project_path(path, p, "specs/processed-spec.md");
	if (fs_read_path(path, &b) < 0)
		decree_error_clear();
	for (char *line = b.ptr, *nl; *line && !hit; line = nl) {
		size_t n;
		if ((nl = strchr(line, '\n')))
			*nl++ = '\0';
		else
			nl = line + strlen(line);
		while (*line == ' ' || *line == '-' || *line == '*')
			line++;
		n = strlen(line);
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!strncmp(line, "specs/", 6))
			line += 6;
		hit = !strcmp(line, spec_name);
	}
	buf_release(&b);
	return hit;
}

int spec_mark_processed(const decree_project *p, const char *input_file)
{
	const char *base = strrchr(input_file, '/');
	char path[PATH_MAX];
	buf b = BUF_INIT;
	int r;

	base = base ? base + 1 : input_file;
	if (spec_processed(p, base))
		return 0;
	project_path(path, p, "specs/processed-spec.md");
	if ((r = fs_read_path(path, &b)) < 0 && r != DECREE_ENOTFOUND) {
		buf_release(&b);
		return r;
	}
	if (b.len && b.ptr[b.len - 1] != '\n')
		buf_putc(&b, '\n');
	if ((r = buf_printf(&b, "%s\n", base)) == 0)
		r = fs_write_atomic(path, b.ptr, b.len, 0644);
	buf_release(&b);
	return r;
}

bool spec_is_dead(const decree_project *p, const char *rel)
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
		message m;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (message_load(&m, path) == 0) {
			const char *in = message_get(&m, "input_file");
			hit = in && !strcmp(in, rel);
			message_release(&m);
		}
	}
	closedir(d);
	decree_error_clear();
	return hit;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void spec_list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		decree_free(v[i]);
	decree_free(v);
}

int spec_list(char ***out, size_t *nout, const decree_project *p)
{
	char dir[PATH_MAX];
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*nout = 0;
	project_path(dir, p, "specs");
	if (!(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !ends_with(de->d_name, ".spec.md"))
			continue;
		if (GROW(v, cap, n + 1) < 0 ||
		    !(v[n] = decree_strdup(de->d_name))) {
			closedir(d);
			spec_list_free(v, n);
			return -1;
		}
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(char *), cmp_str);
	*out = v;
	*nout = n;
	return 0;
}

/* --- status
 * ------------------------------------------------------------------------- */

static size_t count_md(const decree_project *p, const char *rel)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	project_path(dir, p, rel);
	if (!(d = opendir(dir)))
		return 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && ends_with(de->d_name, ".md") &&
		    de->d_type != DT_DIR)
			n++;
	closedir(d);
	return n;
}

int decree_pipeline_status_get(decree_pipeline_status *out, decree_project *p)
{
	char **specs;
	size_t n;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = spec_list(&specs, &n, p)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if (spec_processed(p, specs[i]))
			out->specs_processed++;
		else
			out->specs_pending++;
	}
	spec_list_free(specs, n);
	out->inbox_waiting = count_md(p, ".decree/inbox");
	out->inbox_done = count_md(p, ".decree/inbox/done");
	out->inbox_dead = count_md(p, ".decree/inbox/dead");
	return 0;
}

/* --- requests
 * ----------------------------------------------------------------------- */

static bool valid_key(const char *k)
{
	if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') ||
	      k[0] == '_'))
		return false;
	for (size_t i = 1; k[i]; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_' ||
		      k[i] == '-'))
			return false;
	return true;
}

int decree_run_request_check(const decree_run_request *rq)
{
	if (!rq || rq->version != DECREE_RUN_REQUEST_VERSION ||
	    (rq->nfields && !rq->fields))
		return decree_error_set(DECREE_EINVALID, "invalid run request");
	for (size_t i = 0; i < rq->nfields; i++) {
		const char *k = rq->fields[i].key, *v = rq->fields[i].value;
		if (!k || !v || !valid_key(k))
			return decree_error_set(
				DECREE_EINVALID,
				"'%s' is not a field name: letters, digits, "
				"'_' or '-', starting with a letter or '_'",
				k ? k : "(null)");
		if (!strcmp(k, "id") || !strcmp(k, "chain") ||
		    !strcmp(k, "seq"))
			return decree_error_set(DECREE_EINVALID,
						"'%s' is set by decree", k);
		if (!json_is_utf8(v, strlen(v)))
			return decree_error_set(
				DECREE_EINVALID,
				"the value of '%s' is not valid UTF-8 "
				"(frontmatter is YAML)",
				k);
	}
	return 0;
}
