/*
 * replay.c - run a libFuzzer target over its corpus without libFuzzer.
 *
 * Linked with one fuzz/fuzz_<name>.c; `make check` runs it over
 * fuzz/corpus/<name>/ under ASan+UBSan, so every input that ever crashed a
 * parser stays a regression test.  Prints TAP, one line per input.
 * Usage: replay DIR...
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, n;
	uint8_t chunk[65536];

	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n > cap) {
			cap = (len + n) * 2;
			data = realloc(data, cap);
			if (!data) {
				fclose(f);
				return -1;
			}
		}
		memcpy(data + len, chunk, n);
		len += n;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data ? data : (const uint8_t *)"", len);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0, failed = 0;

	for (int a = 1; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		struct dirent *de;
		char **names = NULL;
		size_t nn = 0;

		if (!d) {
			printf("not ok %d - cannot open corpus %s\n", ++count,
			       argv[a]);
			failed++;
			continue;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			names = realloc(names, (nn + 1) * sizeof(*names));
			names[nn++] = strdup(de->d_name);
		}
		closedir(d);
		qsort(names, nn, sizeof(*names), name_cmp);
		for (size_t i = 0; i < nn; i++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[a],
				 names[i]);
			if (run_file(path) < 0) {
				printf("not ok %d - %s (unreadable)\n", ++count,
				       path);
				failed++;
			} else {
				printf("ok %d - %s\n", ++count, path);
			}
			free(names[i]);
		}
		free(names);
	}
	printf("1..%d\n", count);
	return failed ? 1 : 0;
}
