/*
 * library.c - the library-wide entry points of the public API
 * (decree/common.h): the version, the thread's last error and warning,
 * and temp-file cleanup on signals.
 *
 * Each is a thin wrapper over util: the error slot of error.c, the temp-file
 * registry of fs.c.  They are defined here, not in util, because util is
 * linked twice: into libdecree, hidden, and into every program that links
 * libdecree.so, which links the util objects it uses itself (see the
 * Makefile).  A public symbol in util would exist in both, and the
 * program's copy, reading the program's own error slot, would be the one
 * that answers instead of the library's.  tests/layers.sh keeps util free of
 * public symbols.
 */
#include "util/common.h"
#include "decree/common.h"
#include "util/error.h"
#include "util/fs.h"

const char *decree_version(void)
{
	return DECREE_VERSION_STRING;
}

const char *decree_error_name(int code)
{
	switch (code) {
	case DECREE_ENOTFOUND:
		return "not_found";
	case DECREE_EEXISTS:
		return "exists";
	case DECREE_ELOCKED:
		return "locked";
	case DECREE_ECONFLICT:
		return "conflict";
	case DECREE_ECORRUPT:
		return "corrupt";
	case DECREE_EAPPLY:
		return "apply";
	case DECREE_EINVALID:
		return "invalid";
	case DECREE_EAMBIGUOUS:
		return "ambiguous";
	case DECREE_EVERIFY:
		return "verify";
	case DECREE_EEXEC:
		return "exec";
	case DECREE_EUNFINISHED:
		return "unfinished";
	case DECREE_ECANCELLED:
		return "cancelled";
	case DECREE_ELOGDAMAGED:
		return "log_damaged";
	default:
		return "error";
	}
}

const char *decree_error_last(void)
{
	return error_last();
}

int decree_error_last_code(void)
{
	return error_last_code();
}

void decree_error_clear(void)
{
	error_clear();
}

const char *decree_warning_last(void)
{
	return warning_last();
}

int decree_warning_last_code(void)
{
	return warning_last_code();
}

void decree_warning_clear(void)
{
	warning_clear();
}

void decree_cleanup_on_signals(void)
{
	tempfile_install_handlers();
}
