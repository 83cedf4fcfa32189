/*
 * fuzz_message.c - libFuzzer target for message files: YAML frontmatter +
 * markdown body (src/pipeline/message.c), and kebab_case().
 *
 *   make fuzz && build/fuzz/fuzz_message fuzz/corpus/message
 * `make check` replays fuzz/corpus/message through fuzz/replay.c.
 *
 * The input is a message file as it sits in .decree/inbox/ (anyone who can
 * write there, or a routine that queues a follow-up, writes it).  Beyond
 * "no crash, no leak, no undefined behaviour" the target checks what the
 * runner relies on when it rewrites a message it took in
 * (runner.c: parse, set its own fields, message_format, write back):
 *   - an error is DECREE_EINVALID (or -1, out of memory) with no fields;
 *   - a parse keeps the body byte for byte: it is the input after the
 *     frontmatter, or the whole input when there is none;
 *   - keys are unique and every key and value is a C string;
 *   - after message_set() of a field, message_format() gives a file that
 *     parses again to exactly the same fields, in the same order, and the
 *     same body (a message decree writes must stay readable by decree);
 *   - kebab_case() of any text gives [a-z0-9] words joined by single
 *     '-', within the bound.
 */
#include "util/common.h"
#include "pipeline/message.h"
#include "util/buf.h"
#include "util/error.h"

#include "common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kebab(const char *in, size_t max)
{
	char out[64];
	size_t n;

	kebab_case(out, sizeof(out), in, max);
	n = strlen(out);
	fuzz_check(n <= max && n < sizeof(out));
	fuzz_check(!n || (out[0] != '-' && out[n - 1] != '-'));
	for (size_t i = 0; i < n; i++) {
		char c = out[i];
		fuzz_check((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			   (c == '-' && out[i + 1] != '-'));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	message m, again;
	buf out = BUF_INIT, str = BUF_INIT;
	int r;

	r = message_parse(&m, text, size);
	if (r < 0) {
		fuzz_check(r == DECREE_EINVALID || r == DECREE_ERROR);
		fuzz_check(m.fm.n == 0 && m.body == NULL);
		decree_error_clear();
		goto kebab;
	}
	fuzz_check(m.body != NULL && m.body_len <= size);
	fuzz_check(!memcmp(m.body, text + size - m.body_len, m.body_len));
	fuzz_check(m.body[m.body_len] == '\0');
	if (m.body_len < size) /* a frontmatter was taken off the front */
		fuzz_check(size >= 7 && !memcmp(text, "---", 3));
	for (size_t i = 0; i < m.fm.n; i++) {
		fuzz_check(m.fm.v[i].key && m.fm.v[i].value);
		for (size_t j = 0; j < i; j++)
			fuzz_check(strcmp(m.fm.v[i].key, m.fm.v[j].key) != 0);
		fuzz_check(message_get(&m, m.fm.v[i].key) == m.fm.v[i].value);
	}

	/* what the runner does with a message it took in */
	fuzz_check(message_set(&m, "id", "2026112214320700-0") == 0);
	fuzz_check(message_format(&out, &m) == 0);
	r = message_parse(&again, out.ptr, out.len);
	fuzz_check(r == 0);
	fuzz_check(again.fm.n == m.fm.n);
	for (size_t i = 0; i < m.fm.n; i++) {
		fuzz_check(!strcmp(again.fm.v[i].key, m.fm.v[i].key));
		fuzz_check(!strcmp(again.fm.v[i].value, m.fm.v[i].value));
	}
	fuzz_check(again.body_len == m.body_len &&
		   !memcmp(again.body, m.body, m.body_len));
	message_release(&again);
	message_release(&m);

kebab:
	fuzz_check(buf_put(&str, text, size) == 0);
	check_kebab(str.ptr, 0);
	check_kebab(str.ptr, 1);
	check_kebab(str.ptr, 40);
	check_kebab(str.ptr, 1000);
	buf_release(&str);
	buf_release(&out);
	return 0;
}
