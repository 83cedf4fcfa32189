/*
 * error.c - thread-local error slot.  Messages are truncated to fit the
 * fixed slot; no allocation happens here so an out-of-memory error can be
 * reported reliably.  No public symbol is defined here (util is linked
 * into programs too): the public readers are in ops/library.c.
 */
#include "util/common.h"
#include "util/error.h"

static _Thread_local char err_msg[1024];
static _Thread_local int err_code;

int decree_error_setf(int code, int klass, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	if (klass & DECREE_ERR_OS) {
		n = strlen(err_msg);
		snprintf(err_msg + n, sizeof(err_msg) - n, ": %s",
			 strerror(saved));
	}
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
