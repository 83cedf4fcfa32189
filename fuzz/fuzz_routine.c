/*
 * fuzz_routine.c - libFuzzer target for routine discovery
 * (src/pipeline/routine.c: routine_list_load -> scan_shell, scan_notebook,
 * rhs_default, drop_duplicates), which reads the summary and declared
 * parameters of every shell routine and notebook in .decree/routines/:
 * files that come with a project a user cloned.
 *
 *   make fuzz && build/fuzz/fuzz_routine fuzz/corpus/routine
 * `make check` replays fuzz/corpus/routine through fuzz/replay.c.
 *
 * The input is a shell routine, optionally followed by FUZZ_SEP and a
 * notebook (fuzz/common.h).  They are written as .decree/routines/a.sh,
 * b.ipynb and a.ipynb (a notebook with the shell routine's name) in a
 * project on tmpfs and listed with and without notebook support.  Beyond
 * "no crash, no leak, no undefined behaviour" the target checks the
 * contract of decree/pipeline.h and docs/pipeline.md:
 *   - the listing fails only with DECREE_EINVALID (a notebook that is not
 *     JSON) or -1; otherwise it is sorted by name, holds "a" (the shell
 *     routine: it wins over a.ipynb) and, with notebook support, "b";
 *   - a summary is NULL or a line with no leading blank or '#', not empty
 *     and with no trailing blank or CR (unless a NUL byte cut it short);
 *   - parameter names are identifiers ([A-Za-z_][A-Za-z0-9_]*), unique,
 *     none of the standard variables, each with a default that is a
 *     string (maybe empty) of bytes from the input;
 *   - decree_routine_list_find finds what decree_routine_list_at lists.
 */
#include "util/common.h"
#include "decree/pipeline.h"
#include "pipeline/routine.h"
#include "util/error.h"

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const standard[] = {
	"spec_file",   "message_file", "message_id",
	"message_dir", "chain",	       "seq",
};

static bool is_ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	      *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* size: of the input; nul: it holds a NUL byte (a C string stops there) */
static void check_routine(const decree_routine_info *ri, size_t size, bool nul)
{
	size_t n;

	fuzz_check(ri->name && ri->path);
	if (ri->summary) {
		n = strlen(ri->summary);
		fuzz_check(n <= size && (n > 0 || nul));
		if (n)
			fuzz_check(ri->summary[0] != ' ' &&
				   ri->summary[0] != '#');
		if (n && !nul) /* trimmed before a NUL could cut it */
			fuzz_check(ri->summary[n - 1] != ' ' &&
				   ri->summary[n - 1] != '\r');
	}
	fuzz_check(ri->nparams == 0 || ri->params != NULL);
	for (size_t i = 0; i < ri->nparams; i++) {
		const decree_routine_param *p = &ri->params[i];
		fuzz_check(p->name && p->def && is_ident(p->name));
		fuzz_check(strlen(p->name) <= size && strlen(p->def) <= size);
		for (size_t k = 0; k < ARRAY_SIZE(standard); k++)
			fuzz_check(strcmp(p->name, standard[k]) != 0);
		for (size_t j = 0; j < i; j++)
			fuzz_check(strcmp(p->name, ri->params[j].name) != 0);
	}
}

static void list(const char *root, bool notebooks, bool has_nb, size_t size,
		 bool nul)
{
	decree_routine_list *l = NULL;
	size_t n;
	int r = routine_list_load(&l, root, notebooks);

	if (r < 0) {
		fuzz_check(l == NULL);
		fuzz_check(r == DECREE_ERROR ||
			   (r == DECREE_EINVALID && notebooks && has_nb));
		decree_error_clear();
		return;
	}
	n = decree_routine_list_count(l);
	fuzz_check(n == (notebooks && has_nb ? 2u : 1u));
	for (size_t i = 0; i < n; i++) {
		const decree_routine_info *ri = decree_routine_list_at(l, i);
		check_routine(ri, size, nul);
		fuzz_check(!strcmp(ri->name, i ? "b" : "a"));
		fuzz_check(ri->notebook == (i == 1));
		fuzz_check(decree_routine_list_find(l, ri->name) == ri);
	}
	fuzz_check(decree_routine_list_at(l, n) == NULL);
	fuzz_check(decree_routine_list_find(l, "zz") == NULL);
	decree_routine_list_free(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char root[PATH_MAX], dir[PATH_MAX];
	char path[PATH_MAX + 16];
	fuzz_part parts[2];
	size_t n = fuzz_split(parts, 2, data, size);
	bool nul;

	if (!root[0]) {
		fuzz_mkdirs("proj/.decree/routines");
		fuzz_path(root, "proj");
		fuzz_path(dir, "proj/.decree/routines");
	}
	fuzz_empty_dir(dir);
	snprintf(path, sizeof(path), "%s/a.sh", dir);
	fuzz_write(path, parts[0].ptr, parts[0].len);
	if (n > 1) {
		snprintf(path, sizeof(path), "%s/b.ipynb", dir);
		fuzz_write(path, parts[1].ptr, parts[1].len);
		snprintf(path, sizeof(path), "%s/a.ipynb", dir);
		fuzz_write(path, parts[1].ptr, parts[1].len);
	}
	nul = memchr(data, '\0', size) != NULL;
	list(root, true, n > 1, size, nul);
	list(root, false, n > 1, size, nul);
	return 0;
}
