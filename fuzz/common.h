/*
 * fuzz/common.h - helpers shared by the fuzz targets (fuzz/common.c).
 *
 * Parsers that read files get them in a scratch directory on tmpfs
 * (/dev/shm/decree-fuzz.<pid>, else under TMPDIR or /tmp), made once per
 * process and removed at exit, so that a run costs no disk I/O and fsync
 * is free.  Inputs that hold
 * several files are split at FUZZ_SEP: "idx\n--8<--\npack" is two parts.
 * Nothing here may make a run depend on an earlier one: each target
 * rewrites every file it reads before each input.
 */
#ifndef DECREE_FUZZ_COMMON_H
#define DECREE_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_SEP     "\n--8<--\n"
#define FUZZ_SEP_LEN 8

typedef struct {
	const uint8_t *ptr;
	size_t len;
} fuzz_part;

/* Split data at FUZZ_SEP into at most `max` parts (the last part keeps any
 * further separators); returns the number of parts (>= 1). */
size_t fuzz_split(fuzz_part *parts, size_t max, const uint8_t *data,
		  size_t size);

/* The scratch directory of this process (created on first use; aborts if
 * it cannot be), and a path below it. */
const char *fuzz_dir(void);
/* snprintf into out (PATH_MAX) of fuzz_dir() + "/" + rel. */
void fuzz_path(char *out, const char *rel);

/* mkdir -p below fuzz_dir(); remove everything inside dir (not dir);
 * write a whole file (replacing it).  Each aborts on failure: a harness
 * that cannot set up its files would test nothing. */
void fuzz_mkdirs(const char *rel);
void fuzz_empty_dir(const char *path);
void fuzz_write(const char *path, const void *data, size_t len);

/* abort() unless ok, naming the check: libFuzzer reports a crash. */
#define fuzz_check(ok) fuzz_check_at((ok), #ok, __FILE__, __LINE__)
void fuzz_check_at(bool ok, const char *what, const char *file, int line);

#endif
