/*
 * error.c - thread-local error slot.  No allocation happens here, so an
 * out-of-memory error can be reported reliably.  No public symbol is
 * defined here (util is linked into programs too): the public readers are
 * in ops/library.c.
 *
 * A message longer than the slot loses its middle, not its end: the end
 * holds the reason ("...: File name too long", "... is not in the
 * checkpoint"), and what makes a message long is a path.  So the longest
 * quoted part ('...') is shortened in its middle to "...", and only when
 * no quoted part is long enough, the middle of the whole message.  The
 * message is first formatted into a larger scratch buffer; beyond that
 * (16 KiB) it is cut at the end as before.
 */
#include "util/common.h"
#include "util/error.h"

#define ERR_SLOT    1024
#define ERR_SCRATCH 16384

static _Thread_local char err_msg[ERR_SLOT];
static _Thread_local char err_scratch[ERR_SCRATCH];
static _Thread_local int err_code;
static _Thread_local char warn_msg[1024];
static _Thread_local int warn_code;

/* Copy src (len >= cap) into dst (cap bytes) with its middle elided. */
static void fit(char *dst, size_t cap, const char *src, size_t len)
{
	static const char dots[] = "...";
	size_t cut = len - (cap - 1) + (sizeof(dots) - 1); /* bytes to drop */
	const char *span = src, *p = src, *end = src + len;
	size_t span_len = len, best = 0, head, tail;

	while ((p = memchr(p, '\'', (size_t)(end - p))) != NULL) {
		const char *q = memchr(p + 1, '\'', (size_t)(end - p - 1));
		if (!q)
			break;
		if ((size_t)(q - p - 1) > best) {
			best = (size_t)(q - p - 1);
			if (best >= cut + 16) { /* keeps some of each end */
				span = p + 1;
				span_len = best;
			}
		}
		p = q + 1;
	}
	/* keep span's head and tail, drop `cut` bytes between them */
	head = (size_t)(span - src) + (span_len - cut) / 2;
	tail = len - head - cut;
	memcpy(dst, src, head);
	memcpy(dst + head, dots, sizeof(dots) - 1);
	memcpy(dst + head + sizeof(dots) - 1, end - tail, tail);
	dst[head + sizeof(dots) - 1 + tail] = '\0';
}

int decree_error_setf(int code, int klass, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(err_scratch, sizeof(err_scratch), fmt, ap);
	va_end(ap);
	n = w < 0			      ? 0
	    : (size_t)w < sizeof(err_scratch) ? (size_t)w
					      : sizeof(err_scratch) - 1;
	err_scratch[n] = '\0';
	if (klass & DECREE_ERR_OS) {
		/* the reason survives even a message cut at ERR_SCRATCH */
		char reason[256];
		size_t rn = (size_t)snprintf(reason, sizeof(reason), ": %s",
					     strerror(saved));
		if (rn >= sizeof(reason))
			rn = sizeof(reason) - 1;
		if (n + rn >= sizeof(err_scratch))
			n = sizeof(err_scratch) - 1 - rn;
		memcpy(err_scratch + n, reason, rn + 1);
		n += rn;
	}
	if (n < sizeof(err_msg))
		memcpy(err_msg, err_scratch, n + 1);
	else
		fit(err_msg, sizeof(err_msg), err_scratch, n);
	err_code = code;
	errno = saved;
	return code;
}

const char *error_last(void)
{
	return err_msg;
}

int error_last_code(void)
{
	return err_code;
}

void error_clear(void)
{
	err_msg[0] = '\0';
	err_code = 0;
}

void warning_set(int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (warn_msg[0])
		return; /* the first one stays */
	va_start(ap, fmt);
	vsnprintf(warn_msg, sizeof(warn_msg), fmt, ap);
	va_end(ap);
	warn_code = code;
	errno = saved;
}

const char *warning_last(void)
{
	return warn_msg;
}

int warning_last_code(void)
{
	return warn_code;
}

void warning_clear(void)
{
	warn_msg[0] = '\0';
	warn_code = 0;
}
