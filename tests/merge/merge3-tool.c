/*
 * merge3-tool.c - merge3() as a command, for the oracle suite
 * (tests/cli/merge_oracle.sh) to hold against `git merge-file -p`.
 *
 *   merge3-tool [--diff3] [--regions] [-L OURS [-L BASE [-L THEIRS]]]
 *               OURS_FILE BASE_FILE THEIRS_FILE
 *
 * Arguments in git merge-file's order.  The merge (with markers when it
 * conflicts) goes to stdout; the exit status is the number of conflicts
 * (at most 127), 255 on an error.  --regions prints one line per conflict
 * on stderr: "base S+N ours S+N theirs S+N" (0-based lines).
 */
#include "util/common.h"
#include "merge/merge3.h"
#include "util/buf.h"
#include "util/error.h"

static int slurp(const char *path, buf *b)
{
	FILE *f = fopen(path, "rb");
	char tmp[65536];
	size_t n;

	if (!f) {
		fprintf(stderr, "merge3-tool: cannot open '%s'\n", path);
		return -1;
	}
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		if (buf_put(b, tmp, n) < 0) {
			fclose(f);
			return -1;
		}
	if (ferror(f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	merge3_params p = MERGE3_PARAMS_INIT;
	merge3_result r = MERGE3_RESULT_INIT;
	buf in[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
	const char *labels[3] = {NULL, NULL, NULL};
	const char *files[3];
	size_t nlabels = 0, nfiles = 0, k;
	bool regions = false;
	int i, status;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--diff3")) {
			p.style = MERGE3_STYLE_DIFF3;
		} else if (!strcmp(argv[i], "--regions")) {
			regions = true;
		} else if (!strcmp(argv[i], "-L") && i + 1 < argc &&
			   nlabels < 3) {
			labels[nlabels++] = argv[++i];
		} else if (nfiles < 3) {
			files[nfiles++] = argv[i];
		} else {
			nfiles = 4;
			break;
		}
	}
	if (nfiles != 3) {
		fprintf(stderr, "usage: merge3-tool [--diff3] [--regions] "
				"[-L OURS -L BASE -L THEIRS] OURS BASE "
				"THEIRS\n");
		return 255;
	}
	p.ours_label = labels[0];
	p.base_label = labels[1];
	p.theirs_label = labels[2];
	for (k = 0; k < 3; k++)
		if (slurp(files[k], &in[k]) < 0)
			return 255;
	if (merge3(&r, in[1].ptr, in[1].len, in[0].ptr, in[0].len, in[2].ptr,
		   in[2].len, &p) < 0) {
		fprintf(stderr, "merge3-tool: %s\n", error_last());
		return 255;
	}
	if (fwrite(r.ptr, 1, r.len, stdout) != r.len || fflush(stdout))
		return 255;
	if (regions)
		for (k = 0; k < r.nconflicts; k++) {
			const merge3_conflict *c = &r.conflicts[k];

			fprintf(stderr,
				"base %zu+%zu ours %zu+%zu theirs %zu+%zu\n",
				c->base_start, c->base_count, c->ours_start,
				c->ours_count, c->theirs_start,
				c->theirs_count);
		}
	status = r.nconflicts > 127 ? 127 : (int)r.nconflicts;
	merge3_result_release(&r);
	for (k = 0; k < 3; k++)
		buf_release(&in[k]);
	return status;
}
