/*
 * size.h - sizes as people write them: "52428800", "512K", "50M", "1G"
 * (also "50MB", "50MiB"; K, M and G are powers of 1024).  Shared by
 * config.yml's max_file_size and `checkpoint create --max-file-size`.
 */
#ifndef DECREE_SIZE_H
#define DECREE_SIZE_H

#include <stdint.h>

/* Parse a positive size into *out.  0, or -1 (nothing set, no error
 * message: the caller names the setting) for anything else: empty, zero,
 * negative, an unknown suffix, trailing bytes, or more than 2^64-1. */
int size_parse(uint64_t *out, const char *s);

/* n for people, into out (at least SIZE_TEXT_MAX bytes): "312 bytes",
 * "50 MiB", "1.2 GiB" (one decimal below 10 units, powers of 1024). */
#define SIZE_TEXT_MAX 24
const char *size_format(char *out, uint64_t n);

#endif
