/*
 * log.c - the hook log (hooks.h).
 *
 * A hook must never fail or hold up its agent, so what goes wrong in one
 * is written here instead of to the agent: one line per failed call,
 *   <RFC 3339 UTC> <agent> <event> <root>: <message>
 * appended with O_APPEND under an flock (hooks of parallel tool calls run
 * at once).  The log of a store is <store>/hooks.log; when the store
 * cannot be opened the line goes to $XDG_STATE_HOME/decree/hooks.log
 * (default ~/.local/state/decree/hooks.log).  A log over 1 MiB keeps its
 * newer half (rewritten atomically).  The message has its control bytes
 * replaced by '?', so one failure is one line.
 */
#include "util/common.h"
#include "hooks.h"
#include "util/fs.h"
#include "util/utc.h"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>

#define LOG_NAME "hooks.log"
#define LOG_MAX	 (1u << 20)

int hook_log_fallback_path(char *out, size_t len)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	int n;

	if (xdg && *xdg == '/')
		n = snprintf(out, len, "%s/decree/" LOG_NAME, xdg);
	else if (home && *home == '/')
		n = snprintf(out, len, "%s/.local/state/decree/" LOG_NAME,
			     home);
	else
		return -1;
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int log_path(char *out, size_t len, const char *store_dir)
{
	int n;

	if (!store_dir)
		return hook_log_fallback_path(out, len);
	n = snprintf(out, len, "%s/" LOG_NAME, store_dir);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Keep the newer half of an oversized log (whole lines). */
static void trim(int fd, const char *path)
{
	buf b = BUF_INIT;
	const char *cut;

	if (fs_read_fd(fd, &b, path) == 0 && b.len > LOG_MAX &&
	    (cut = memchr(b.ptr + b.len / 2, '\n', b.len - b.len / 2)) != NULL)
		(void)fs_write_atomic(path, cut + 1,
				      b.len - (size_t)(cut + 1 - b.ptr), 0600);
	buf_release(&b);
}

int hook_log_write(const char *store_dir, const char *agent, const char *event,
		   const char *root, const char *msg)
{
	char path[PATH_MAX], when[UTC_TEXT_MAX];
	struct timespec ts;
	struct stat st;
	buf line = BUF_INIT;
	int fd, r = -1;

	if (log_path(path, sizeof(path), store_dir) < 0)
		return -1;
	if (!store_dir) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		if (fs_mkdirs(dir, 0700) < 0)
			return -1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	utc_format(when, ts.tv_sec);
	buf_printf(&line, "%s %s %s %s: ", when, agent ? agent : "-",
		   event ? event : "-", root ? root : "-");
	for (const char *p = msg ? msg : "failed"; *p; p++)
		buf_putc(&line,
			 (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
	buf_putc(&line, '\n');
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		goto done;
	if (flock(fd, LOCK_EX) == 0 &&
	    fs_write_all(fd, line.ptr, line.len) == 0)
		r = 0;
	if (r == 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > LOG_MAX) {
		int rd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (rd >= 0) {
			trim(rd, path);
			close(rd);
		}
	}
	close(fd);
done:
	buf_release(&line);
	return r;
}

/* The newest line of the log at `path` about `root` (" <root>: "). */
static int last_in(buf *out, const char *path, const char *root, char stamp[32])
{
	buf b = BUF_INIT, needle = BUF_INIT;
	int r = 1;

	buf_printf(&needle, " %s: ", root);
	if (fs_read_path(path, &b) < 0) {
		buf_release(&needle);
		return 1; /* no log: nothing failed */
	}
	for (size_t end = b.len; end > 0 && r == 1;) {
		size_t start = end - 1;
		while (start > 0 && b.ptr[start - 1] != '\n')
			start--;
		if (end - start > 20) {
			char *nl = memchr(b.ptr + start, '\n', end - start);
			size_t len = nl ? (size_t)(nl - (b.ptr + start))
					: end - start;
			char *line = b.ptr + start;
			/* "<time> <agent> <event> <root>: msg" */
			char save = line[len];
			line[len] = '\0';
			if (strstr(line, needle.ptr) &&
			    memcmp(line, stamp, 20) > 0) {
				buf_clear(out);
				buf_puts(out, line);
				memcpy(stamp, line, 20);
				r = 0;
			}
			line[len] = save;
		}
		end = start;
	}
	buf_release(&b);
	buf_release(&needle);
	return r;
}

int hook_log_last(buf *out, const char *store_dir, const char *root)
{
	char path[PATH_MAX], stamp[32] = "";
	int found = 1;

	if (store_dir && log_path(path, sizeof(path), store_dir) == 0 &&
	    last_in(out, path, root, stamp) == 0)
		found = 0;
	if (hook_log_fallback_path(path, sizeof(path)) == 0 &&
	    last_in(out, path, root, stamp) == 0)
		found = 0;
	return found;
}
