/*
 * test_ignore.c - ignore rules against git, the reference implementation.
 *
 * Each case of the table is a few ignore files plus paths, each path with
 * the answer we expect ("x " ignored, ". " kept; a trailing "/" makes it a
 * directory).  A case that uses only .gitignore files is an oracle case:
 * the files and paths are created in a fresh `git init` tree and
 * `git check-ignore --no-index --stdin -z` must agree both with
 * ignore_matcher_excluded() and with the written expectation (a
 * disagreement with the table is reported separately, so a wrong table
 * never hides a wrong matcher).  Cases with .decreeignore files, extra
 * patterns, built-ins or the rules-file exemption have no oracle and use
 * the written expectation alone.  git missing makes the oracle tests fail.
 *
 * A randomized differential test does the same with generated patterns and
 * trees; it prints its seed and takes DECREE_IGNORE_SEED to replay one.
 * Git runs with an empty template, no system or global config and an empty
 * XDG dir so that no user ignore file leaks in.
 */
#include "util/common.h"
#include "scan/ignore.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/error.h"

#include <ftw.h>
#include <setjmp.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "testutil.h"

/* --- the table ----------------------------------------------------------- */

struct tfile {
	const char *path; /* "sub/.gitignore" */
	const char *text;
	size_t len; /* 0: strlen(text) */
};

struct tcase {
	const char *name;
	int line;
	struct tfile files[5];
	const char *extra[5];
	const char *paths[20];
};

#define CASE(nm)   .name = nm, .line = __LINE__
#define FILES(...) .files = { __VA_ARGS__ }
#define EXTRA(...) .extra = { __VA_ARGS__ }
#define PATHS(...) .paths = { __VA_ARGS__ }
#define GI(text)                      \
	{                             \
		".gitignore", text, 0 \
	}
#define GIAT(dir, text)                    \
	{                                  \
		dir "/.gitignore", text, 0 \
	}
#define GIL(text)                                    \
	{                                            \
		".gitignore", text, sizeof(text) - 1 \
	}
#define DI(text)                         \
	{                                \
		".decreeignore", text, 0 \
	}
#define DIAT(dir, text)                       \
	{                                     \
		dir "/.decreeignore", text, 0 \
	}

static const struct tcase cases[] = {
	/* literal names, suffixes, basic globs */
	{ CASE("basename literal at any depth"), FILES(GI("foo\n")),
	  PATHS("x foo", "x a/foo", "x a/b/foo/", ". foobar", ". afoo",
		". foo.c", ". a/foo.c") },
	{ CASE("suffix glob"), FILES(GI("*.o\n")),
	  PATHS("x a.o", "x d/b.o", "x .o", ". a.oo", ". a.o.c", "x dir.o/",
		"x dir.o/x.c") },
	{ CASE("case sensitive"), FILES(GI("Foo\n*.TXT\n")),
	  PATHS("x Foo", ". foo", ". FOO", "x a.TXT", ". a.txt") },
	{ CASE("star matches empty"), FILES(GI("foo*\n")),
	  PATHS("x foo", "x foobar", ". fo", ". afoo") },
	{ CASE("several stars"), FILES(GI("a*b*c\n")),
	  PATHS("x abc", "x aXbYc", "x abbc", "x abcbc", ". acb", ". abcd") },
	{ CASE("question mark"), FILES(GI("a?c\n")),
	  PATHS("x abc", "x a.c", ". ac", ". abbc", ". a/c") },
	{ CASE("dot files"), FILES(GI(".*\n!.keep\n")),
	  PATHS("x .hidden", ". .keep", ". visible", "x d/.x") },
	{ CASE("directory matched by a file-like pattern"), FILES(GI("*.d\n")),
	  PATHS("x x.d/", "x x.d/y", ". y.dd") },
	{ CASE("dir name pattern hides contents"), FILES(GI("logs\n")),
	  PATHS("x logs/", "x logs/a.txt", "x d/logs/x", ". logsx/") },
	{ CASE("double star alone"), FILES(GI("**\n")),
	  PATHS("x a", "x d/", "x d/e") },
	{ CASE("lone star"), FILES(GI("*\n")),
	  PATHS("x a", "x d/", "x d/e/f") },

	/* negation */
	{ CASE("negation re-includes"), FILES(GI("*.log\n!keep.log\n")),
	  PATHS("x a.log", ". keep.log", "x d/a.log", ". d/keep.log") },
	{ CASE("last match wins"), FILES(GI("!keep.log\n*.log\n")),
	  PATHS("x keep.log", "x a.log") },
	{ CASE("negation alone is a no-op"), FILES(GI("!foo\n")),
	  PATHS(". foo", ". bar") },
	{ CASE("excluded parent: no re-include"),
	  FILES(GI("build/\n!build/keep.txt\n")),
	  PATHS("x build/", "x build/keep.txt", "x build/other") },
	{ CASE("dir/* then re-include"),
	  FILES(GI("build/*\n!build/keep.txt\n")),
	  PATHS(". build/", ". build/keep.txt", "x build/other", "x build/sub/",
		"x build/sub/keep.txt") },
	{ CASE("whitelist one subtree"),
	  FILES(GI("/*\n!/src/\n/src/*\n!/src/main.c\n")),
	  PATHS("x a.txt", ". src/", "x src/x.c", ". src/main.c", "x other/",
		"x other/main.c") },
	{ CASE("ignore all but dirs and .c"), FILES(GI("*\n!*/\n!*.c\n")),
	  PATHS(". src/", ". src/a.c", "x src/a.h", "x top.txt", ". top.c",
		". src/deep/", "x src/deep/x") },
	{ CASE("dir-only negation keeps files out"),
	  FILES(GI("foo*\n!foo*/\n")),
	  PATHS(". foodir/", "x foofile", ". foodir/x", "x foodir/foox") },
	{ CASE("negation then dir pattern"), FILES(GI("!a/\na/\n")),
	  PATHS("x a/", "x a/b") },
	{ CASE("negation anchored"), FILES(GI("*.c\n!/main.c\n")),
	  PATHS(". main.c", "x sub/main.c", "x x.c") },
	{ CASE("negated wildcard dir keeps subtree"),
	  FILES(GI("out*\n!out1/\n")),
	  PATHS(". out1/", ". out1/a", "x out2/", "x out2/a", "x outfile") },

	/* anchoring */
	{ CASE("leading slash anchors"), FILES(GI("/foo\n")),
	  PATHS("x foo/", "x foo/x", ". a/foo", ". a/foo2/") },
	{ CASE("leading slash, file"), FILES(GI("/foo.txt\n")),
	  PATHS("x foo.txt", ". a/foo.txt") },
	{ CASE("middle slash anchors"), FILES(GI("a/b\n")),
	  PATHS("x a/b", ". x/a/b", ". a/c/b", ". b") },
	{ CASE("middle slash, directory"), FILES(GI("a/b\n")),
	  PATHS("x a/b/", "x a/b/c") },
	{ CASE("leading slash star"), FILES(GI("/*.c\n")),
	  PATHS("x a.c", ". d/a.c") },
	{ CASE("star does not cross slash"), FILES(GI("a/*.c\n")),
	  PATHS("x a/x.c", ". a/b/x.c", ". b/a/x.c") },
	{ CASE("star before slash"), FILES(GI("*/foo\n")),
	  PATHS("x a/foo", ". a/b/foo", ". foo") },
	{ CASE("star segment between"), FILES(GI("a/*/c\n")),
	  PATHS("x a/b/c", ". a/c", ". a/b/d/c", "x a/bb/c/") },
	{ CASE("escaped slash still anchors"), FILES(GI("a\\/b\n")),
	  PATHS("x a/b", ". x/a/b") },
	{ CASE("dot slash never matches"), FILES(GI("./foo\n")),
	  PATHS(". foo", ". a/foo") },
	{ CASE("slash-only lines ignored"), FILES(GI("/\n!\n!/\n//\nfoo\n")),
	  PATHS("x foo", ". bar", ". d/") },

	/* trailing slash: directories only */
	{ CASE("trailing slash is dir only"), FILES(GI("foo/\n")),
	  PATHS("x a/foo/", ". b/foo", ". foo.txt", "x a/foo/x") },
	{ CASE("trailing slash anchored"), FILES(GI("/a/b/\n")),
	  PATHS("x a/b/", "x a/b/c", ". x/a/b/", ". a/c/b/") },
	{ CASE("dir-only with star"), FILES(GI("cache*/\n")),
	  PATHS("x cache1/", ". cachefile", "x d/cache2/", "x d/cache2/f") },
	{ CASE("double trailing slash"), FILES(GI("foo//\nbar\n")),
	  PATHS(". foo/", "x bar") },

	/* "**" */
	{ CASE("leading **/"), FILES(GI("**/foo\n")),
	  PATHS("x foo", "x a/foo", "x a/b/foo", ". afoo", ". a/foox") },
	{ CASE("leading **/ then more"), FILES(GI("**/a/b\n")),
	  PATHS("x a/b", "x x/a/b", "x x/y/a/b", ". a/x/b", ". xa/b") },
	{ CASE("anchored **/"), FILES(GI("/**/foo\n")),
	  PATHS("x foo", "x a/foo", "x a/b/foo", ". a/foob") },
	{ CASE("trailing /**"), FILES(GI("a/**\n")),
	  PATHS(". a/", "x a/x", "x a/b/c", ". b/a/x") },
	{ CASE("middle /**/"), FILES(GI("a/**/b\n")),
	  PATHS("x a/b", "x a/x/b", "x a/x/y/b", ". a/xb", ". x/a/b",
		". a/x/bc") },
	{ CASE("several **"), FILES(GI("a/**/b/**/c\n")),
	  PATHS("x a/b/c", "x a/x/b/y/c", "x a/b/b/c", ". a/c", ". a/b/x",
		"x a/x/y/b/c", ". a/b/cx") },
	{ CASE("**/ then star"), FILES(GI("**/*.txt\n")),
	  PATHS("x a.txt", "x d/e/f.txt", ". a.txtx") },
	{ CASE("three stars between slashes"), FILES(GI("a/***/b\n")),
	  PATHS("x a/b", "x a/x/y/b", ". a/xb") },
	{ CASE("** inside a name is a star"), FILES(GI("a**b\n")),
	  PATHS("x ab", "x axxb", "x d/axb", ". a/b") },
	{ CASE("** after a name, in a path"), FILES(GI("d/x**y\n")),
	  PATHS("x d/xy", "x d/xzzy", ". d/x/y", ". d/x/z/y") },
	{ CASE("**/ as dir-only"), FILES(GI("**/build/\n")),
	  PATHS("x build/", "x a/build/", ". b/build", ". buildx/") },
	{ CASE("/**/ at end, dir-only"), FILES(GI("a/**/\n")),
	  PATHS(". a/", ". a/f", "x a/d/", "x a/d/f") },
	{ CASE("**/ under a subdirectory file"), FILES(GIAT("s", "**/tmp\n")),
	  PATHS("x s/tmp", "x s/a/b/tmp", ". tmp", ". a/tmp") },
	{ CASE("**\\/ needs one dir"), FILES(GI("**\\/b\n")),
	  PATHS(". b", "x a/b", "x a/c/b") },
	{ CASE("glued ** after literal head"), FILES(GI("x/a**/b\n")),
	  PATHS("x x/a/b", "x x/ab", "x x/az/q/b", "x x/a/q/b", ". x/az/q/c",
		". x/b") },
	{ CASE("glued ** at end"), FILES(GI("x/foo**\n")),
	  PATHS("x x/foo", "x x/foox", ". x/fo", ". y/foo") },

	{ CASE("**/ alone is every directory"), FILES(GI("**/\n")),
	  PATHS("x d/", "x d/e", ". f") },
	{ CASE("/** anchored is everything"), FILES(GI("/**\n!keep\n")),
	  PATHS("x a", "x d/", ". keep", "x d/keep") },
	{ CASE("consecutive **"), FILES(GI("a/**/**/b\n**/**/c\n")),
	  PATHS("x a/b", "x a/x/b", "x a/x/y/b", "x c", "x p/q/c", ". a/bx") },
	{ CASE("**/x/** inside"), FILES(GI("**/lib/**\n")),
	  PATHS(". lib/", "x lib/a", "x q/lib/a/b", ". q/lib/", ". liba/b") },
	{ CASE("*/ is every directory"), FILES(GI("*/\n")),
	  PATHS("x d/", "x d/e/", ". f", "x d/f") },
	{ CASE("dir/* hides grandchildren"), FILES(GI("foo/*\n")),
	  PATHS(". foo/", "x foo/bar/", "x foo/bar/baz", "x foo/f") },
	{ CASE("glued ** before escaped slash"), FILES(GI("x/foo**\\/bar\n")),
	  PATHS(". x/foobar", "x x/foo/bar", "x x/fooq/bar", "x x/foo/a/bar",
		". x/fo/bar") },
	{ CASE("glued ** before a glob"), FILES(GI("x/a**/*.c\n")),
	  PATHS("x x/ab.c", "x x/a/b.c", "x x/az/q/b.c", ". x/a/b.h") },
	{ CASE("? and * mixed in a path"), FILES(GI("s?c/*/t*\n")),
	  PATHS("x src/a/test", "x sxc/b/t", ". src/a/b/test", ". sc/a/t") },

	/* bracket expressions */
	{ CASE("range"), FILES(GI("file[0-9].txt\n")),
	  PATHS("x file1.txt", ". filea.txt", ". file10.txt") },
	{ CASE("negated class !"), FILES(GI("[!a]*\n")),
	  PATHS(". abc", "x bcd", "x Abc", ". a/", "x a/bz") },
	{ CASE("negated class ^"), FILES(GI("x[^0-9]\n")),
	  PATHS("x xa", ". x1", ". x") },
	{ CASE("] first in class"), FILES(GI("[]a]\n")),
	  PATHS("x ]", "x a", ". b") },
	{ CASE("] first after !"), FILES(GI("[!]]x\n")),
	  PATHS("x ax", ". ]x") },
	{ CASE("dash at the edges"), FILES(GI("[-a]\n[b-]\n")),
	  PATHS("x -", "x a", "x b", ". c") },
	{ CASE("posix classes"),
	  FILES(GI("[[:digit:]]*\n[[:upper:]][[:lower:]]\n")),
	  PATHS("x 1abc", ". abc", "x Ab", ". AB", ". aB") },
	{ CASE("posix space, punct, xdigit"),
	  FILES(GI("a[[:space:]]b\nc[[:punct:]]\nh[[:xdigit:]]\n")),
	  PATHS("x a b", ". ab", "x c!", ". ca", "x hF", ". hg") },
	{ CASE("posix space is git's set"), FILES(GI("a[[:space:]]b\n")),
	  PATHS(". a\vb", ". a\fb", "x a\tb", "x a\rb", "x a b") },
	{ CASE("posix classes are ASCII only"),
	  FILES(GI("p[[:print:]]\nq[![:alpha:]]\nr[[:cntrl:]]\n")),
	  PATHS(". p\x85", "x p~", "x q\x85", ". qa", "x r\x01", "x r\x7f",
		". r\x85") },
	{ CASE("high bytes in ranges"), FILES(GI("h[\x80-\xff]\n")),
	  PATHS("x h\xc3", ". hz") },
	{ CASE("posix alnum and negation"), FILES(GI("z[![:alnum:]]\n")),
	  PATHS("x z-", ". z1", ". zz") },
	{ CASE("unknown posix class never matches"),
	  FILES(GI("[[:foo:]]\n*.x\n")), PATHS(". f", ". o", "x a.x") },
	{ CASE("[: without :] is plain"), FILES(GI("x[[:alpha]\n")),
	  PATHS("x xa", "x x[", "x x:", "x xh", ". xb") },
	{ CASE("[: then ] at once"), FILES(GI("y[[:]\n")),
	  PATHS("x y[", "x y:", ". ya") },
	{ CASE("[: fallback before a range"), FILES(GI("z[[:-B]\n")),
	  PATHS("x z[", "x z:", "x zA", "x z;", ". z9", ". zC") },
	{ CASE("unterminated bracket never matches"), FILES(GI("a[b\n")),
	  PATHS(". a[b", ". ab") },
	{ CASE("escaped ] in class"), FILES(GI("[\\]x]\n")),
	  PATHS("x ]", "x x", ". a") },
	{ CASE("range with escaped end"), FILES(GI("[a-\\c]\n")),
	  PATHS("x b", "x c", ". d") },
	{ CASE("reversed range keeps its first char"),
	  FILES(GI("[z-a]x\n*.y\n")), PATHS(". ax", "x zx", ". mx", "x q.y") },
	{ CASE("class never matches slash"), FILES(GI("d/a[!x]b\n")),
	  PATHS("x d/ayb", ". d/axb", ". d/a/b") },
	{ CASE("range then dash"), FILES(GI("[a-c-e]\n")),
	  PATHS("x b", "x -", "x e", ". d") },

	/* escapes */
	{ CASE("escaped bracket"), FILES(GI("a\\[b\n")),
	  PATHS("x a[b", ". ab") },
	{ CASE("escaped star"), FILES(GI("a\\*\n")), PATHS("x a*", ". ab") },
	{ CASE("escaped question"), FILES(GI("a\\?\n")),
	  PATHS("x a?", ". ab") },
	{ CASE("escaped hash"), FILES(GI("\\#foo\n#bar\n")),
	  PATHS("x #foo", ". #bar", ". bar", ". foo") },
	{ CASE("escaped bang"), FILES(GI("\\!important\n")),
	  PATHS("x !important", ". important") },
	{ CASE("escaped ordinary char"), FILES(GI("\\a\\b\n")),
	  PATHS("x ab", ". \\a\\b") },
	{ CASE("trailing backslash never matches"), FILES(GI("foo\\\n")),
	  PATHS(". foo", ". foo\\") },
	{ CASE("escaped backslash"), FILES(GI("a\\\\b\n")),
	  PATHS("x a\\b", ". ab") },

	/* whitespace, comments, line ends */
	{ CASE("trailing spaces trimmed"), FILES(GI("foo   \n")),
	  PATHS("x foo", ". foo ", ". foo   ") },
	{ CASE("escaped trailing space kept"), FILES(GI("foo\\ \n")),
	  PATHS("x foo ", ". foo") },
	{ CASE("escaped space then spaces"), FILES(GI("foo\\  \n")),
	  PATHS("x foo ", ". foo  ", ". foo") },
	{ CASE("inner spaces kept"), FILES(GI("a b\n")),
	  PATHS("x a b", ". a", ". b") },
	{ CASE("leading spaces kept"), FILES(GI("  lead\n")),
	  PATHS("x   lead", ". lead") },
	{ CASE("tab is not trimmed"), FILES(GI("abc\t\n")),
	  PATHS(". abc", "x abc\t") },
	{ CASE("CRLF line ends"), FILES(GI("abc\r\ndef\r\n")),
	  PATHS("x abc", "x def") },
	{ CASE("blank lines and comments"),
	  FILES(GI("\n# comment\n\n  \nfoo\n")),
	  PATHS("x foo", ". # comment", ". comment") },
	{ CASE("comment only at column 0"), FILES(GI(" #foo\n")),
	  PATHS("x  #foo", ". #foo") },
	{ CASE("no final newline"), FILES(GI("foo\nbar")),
	  PATHS("x foo", "x bar", ". baz") },
	{ CASE("NUL byte ends the line"), FILES(GIL("foo\0bar\nbaz\n")),
	  PATHS("x foo", ". bar", ". foobar", "x baz") },
	{ CASE("UTF-8 byte order mark skipped"),
	  FILES(GI("\xef\xbb\xbf"
		   "foo\n")),
	  PATHS("x foo") },
	{ CASE("space before negation is literal"), FILES(GI("*.a\n !x.a\n")),
	  PATHS("x x.a", "x  !x.a") },

	/* nested .gitignore files */
	{ CASE("nested file re-includes"),
	  FILES(GI("*.txt\n"), GIAT("sub", "!keep.txt\n")),
	  PATHS("x a.txt", "x sub/a.txt", ". sub/keep.txt", "x keep.txt",
		". sub/deep/keep.txt") },
	{ CASE("nested file ignores what root keeps"),
	  FILES(GI("!special.c\n"), GIAT("sub", "*.c\n")),
	  PATHS("x sub/special.c", ". special.c") },
	{ CASE("nested file cannot reopen excluded dir"),
	  FILES(GI("build/\n"), GIAT("build", "!*\n")),
	  PATHS("x build/", "x build/a") },
	{ CASE("wildcard-excluded parent"),
	  FILES(GI("sub*/\n"), GIAT("sub1", "!*\n")),
	  PATHS("x sub1/", "x sub1/a", ". other/a") },
	{ CASE("nested anchored pattern"), FILES(GIAT("sub", "/foo\n")),
	  PATHS("x sub/foo", ". foo", ". sub/x/foo") },
	{ CASE("nested middle slash"), FILES(GIAT("sub", "a/b\n")),
	  PATHS("x sub/a/b", ". a/b", ". sub/x/a/b") },
	{ CASE("nested file only below itself"), FILES(GIAT("sub", "*.o\n")),
	  PATHS("x sub/a.o", "x sub/deep/b.o", ". a.o", ". other/a.o") },
	{ CASE("three levels"),
	  FILES(GI("*.log\n"), GIAT("a", "!*.log\n"),
		GIAT("a/b", "debug.log\n")),
	  PATHS("x x.log", ". a/x.log", "x a/b/debug.log", ". a/b/info.log",
		". a/debug.log") },
	{ CASE("nested dir-only re-include"),
	  FILES(GI("tmp/\n"), GIAT("keep", "!tmp/\n")),
	  PATHS("x tmp/", ". keep/tmp/", ". keep/tmp/x", ". keep/x/tmp/") },
	{ CASE("deep file excludes dir"),
	  FILES(GI("!data/\n"), GIAT("a", "data\n")),
	  PATHS(". data/", "x a/data/", "x a/data/f", ". b/data/") },
	{ CASE("nested leading **"), FILES(GIAT("a", "**/x/y\n")),
	  PATHS("x a/x/y", "x a/q/x/y", ". x/y", ". b/x/y") },
	{ CASE("nested trailing **"), FILES(GIAT("a", "b/**\n")),
	  PATHS(". a/b/", "x a/b/c", ". b/c", ". a/c/b/d") },
};

/* Cases without an oracle: decree's own sources and rules. */
static const struct tcase hand_cases[] = {
	{ CASE("decreeignore re-includes over gitignore"),
	  FILES(GI("*.log\n"), DI("!keep.log\n")),
	  PATHS("x a.log", ". keep.log", ". d/keep.log") },
	{ CASE("decreeignore ignores"), FILES(DI("secret/\n")),
	  PATHS("x secret/", "x secret/x", ". a", ". secret") },
	{ CASE("root decreeignore beats deeper gitignore"),
	  FILES(DI("!*.log\n"), GIAT("sub", "*.log\n")),
	  PATHS(". sub/a.log", ". a.log") },
	{ CASE("deeper decreeignore beats shallower"),
	  FILES(DI("*.tmp\n"), DIAT("sub", "!*.tmp\n")),
	  PATHS("x a.tmp", ". sub/a.tmp", "x other/a.tmp") },
	{ CASE("builtins"),
	  PATHS("x node_modules/", "x a/node_modules/", "x __pycache__/",
		"x .venv/", "x venv/", "x a/b/venv/", "x .cache/", "x a.pyc",
		"x d/b.pyc", "x .DS_Store", "x d/.DS_Store", ". node_modules",
		". venv", ". cache/", ". x.pyo", "x node_modules/x/y",
		". venv2/") },
	{ CASE("gitignore re-includes builtin"),
	  FILES(GI("!node_modules/\n!*.pyc\n")),
	  PATHS(". node_modules/", ". node_modules/x", ". a.pyc",
		"x __pycache__/") },
	{ CASE("decreeignore re-includes builtin"), FILES(DI("!.venv/\n")),
	  PATHS(". .venv/", ". .venv/bin", "x venv/") },
	{ CASE("extra patterns"), EXTRA("*.bak", "!keep.bak"),
	  PATHS("x a.bak", ". keep.bak", "x d/c.bak", ". bak") },
	{ CASE("extra beats gitignore"), FILES(GI("!*.bak\n")), EXTRA("*.bak"),
	  PATHS("x a.bak", "x d/a.bak") },
	{ CASE("extra beats deep gitignore"), FILES(GIAT("d", "!*.bak\n")),
	  EXTRA("*.bak"), PATHS("x d/a.bak") },
	{ CASE("decreeignore beats extra"), FILES(DI("!a.bak\n")),
	  EXTRA("*.bak"), PATHS(". a.bak", "x b.bak") },
	{ CASE("nested decreeignore beats extra"),
	  FILES(DIAT("sub", "!*.bak\n")), EXTRA("*.bak"),
	  PATHS(". sub/a.bak", "x a.bak") },
	{ CASE("extra anchored at root"), EXTRA("/top.txt", "a/b"),
	  PATHS("x top.txt", ". d/top.txt", "x a/b", ". d/a/b") },
	{ CASE("extra comments and blanks"), EXTRA("#x", "", "y"),
	  PATHS(". #x", "x y") },
	{ CASE("rules files always tracked"), FILES(DI(".*\n"), GI("*\n!*/\n")),
	  PATHS(". .gitignore", ". .decreeignore", ". sub/.gitignore",
		"x .hidden", "x file", ". sub/", ". sub/.decreeignore") },
	{ CASE("rules file in excluded dir is hidden"), FILES(DI("build/\n")),
	  PATHS("x build/.gitignore", "x build/.decreeignore", "x build/") },
	{ CASE("directory named .gitignore is not exempt"),
	  FILES(DI(".gitignore/\n")),
	  PATHS("x .gitignore/", "x d/.gitignore/") },
	{ CASE("decreeignore dir beats gitignore negation"),
	  FILES(GI("!build/\n"), DI("build/\n")),
	  PATHS("x build/", "x build/x") },
	{ CASE("decreeignore cannot reopen gitignored dir"),
	  FILES(GI("out/\n"), DI("!out/keep\n")),
	  PATHS("x out/", "x out/keep") },
	{ CASE("decreeignore reopens gitignored dir"),
	  FILES(GI("out/\n"), DI("!out/\n")), PATHS(". out/", ". out/x") },
	{ CASE("gitignore in decreeignored dir unused"),
	  FILES(DI("vendor/\n"), GIAT("vendor", "!*\n")),
	  PATHS("x vendor/", "x vendor/a") },
};

/* --- reporting ------------------------------------------------------------ */

static int failures;	   /* of the running test */
static int total_failures; /* keeps the oracle trees for a look */

static void put_escaped(FILE *f, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			fputs("\\n", f);
		else if (c == '\\')
			fputs("\\\\", f);
		else if (c < 32 || c >= 127)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static size_t tfile_len(const struct tfile *f)
{
	return f->len ? f->len : strlen(f->text);
}

static void report(const char *file, int line, const struct tcase *c,
		   const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void report(const char *file, int line, const struct tcase *c,
		   const char *path, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	failures++;
	total_failures++;
	fprintf(stderr, "%s:%d: case \"%s\" path \"", file, line, c->name);
	put_escaped(stderr, path, strlen(path));
	fputs("\": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	for (i = 0; i < ARRAY_SIZE(c->files) && c->files[i].path; i++) {
		fprintf(stderr, "    %s: \"", c->files[i].path);
		put_escaped(stderr, c->files[i].text, tfile_len(&c->files[i]));
		fputs("\"\n", stderr);
	}
	for (i = 0; i < ARRAY_SIZE(c->extra) && c->extra[i]; i++)
		fprintf(stderr, "    extra: \"%s\"\n", c->extra[i]);
}

#define REPORT(c, path, ...) report(__FILE__, (c)->line, c, path, __VA_ARGS__)

/* --- running our matcher ------------------------------------------------- */

struct query {
	char path[256];
	size_t len;
	bool is_dir;
	bool expect; /* from the table */
	bool ours;
	bool git;
};

static bool parse_query(struct query *q, const char *spec)
{
	size_t n = strlen(spec);

	if (n < 3 || (spec[0] != 'x' && spec[0] != '.') || spec[1] != ' ' ||
	    n - 2 >= sizeof(q->path))
		return false;
	q->expect = spec[0] == 'x';
	memcpy(q->path, spec + 2, n - 2);
	q->len = n - 2;
	q->is_dir = q->path[q->len - 1] == '/';
	if (q->is_dir)
		q->len--;
	q->path[q->len] = '\0';
	return q->len > 0;
}

/* Loader over an array of files; counts its calls. */
struct mem_files {
	const struct tfile *files;
	size_t n;
	unsigned calls;
	const char *fail_dir; /* return an error for this directory */
};

static int mem_load(void *payload, const char *dir, const char *name, buf *out,
		    bool *found)
{
	struct mem_files *mf = payload;
	size_t i, dlen = strlen(dir), nlen = strlen(name);

	mf->calls++;
	*found = false;
	if (mf->fail_dir && !strcmp(mf->fail_dir, dir))
		return decree_error_set(DECREE_ERROR, "cannot read '%s'", dir);
	for (i = 0; i < mf->n && mf->files[i].path; i++) {
		const char *p = mf->files[i].path;
		size_t plen = strlen(p);

		if (dlen ? plen == dlen + 1 + nlen && !memcmp(p, dir, dlen) &&
				    p[dlen] == '/' &&
				    !memcmp(p + dlen + 1, name, nlen)
			 : !strcmp(p, name)) {
			*found = true;
			return buf_put(out, mf->files[i].text,
				       tfile_len(&mf->files[i]));
		}
	}
	return 0;
}

/* Is the path ignored by the walker's logic: some ancestor or itself
 * rejected by ignore_matcher_check()? */
static int walk_excluded(ignore_matcher *m, const char *path, size_t len,
			 bool is_dir, bool *ignored)
{
	size_t i;
	int r;

	for (i = 0; i < len; i++) {
		if (path[i] != '/')
			continue;
		if ((r = ignore_matcher_check(m, path, i, true, ignored)) < 0 ||
		    *ignored)
			return r;
	}
	return ignore_matcher_check(m, path, len, is_dir, ignored);
}

/* Fill q->ours for every query of a case, checking that excluded(), the
 * walker-style check() and a second matcher run in reverse agree. */
static void run_ours(const struct tcase *c, struct query *qs, size_t nq)
{
	struct mem_files mf = { c->files, ARRAY_SIZE(c->files), 0, NULL };
	const char *const *extra = c->extra[0] ? c->extra : NULL;
	ignore_matcher *m = NULL, *m2 = NULL;
	size_t i;

	assert_int_equal(ignore_matcher_new(&m, mem_load, &mf, extra), 0);
	assert_int_equal(ignore_matcher_new(&m2, mem_load, &mf, extra), 0);
	for (i = 0; i < nq; i++) {
		struct query *q = &qs[i];
		bool walk = false;

		if (ignore_matcher_excluded(m, q->path, q->len, q->is_dir,
					    &q->ours) < 0) {
			REPORT(c, q->path, "error: %s", decree_error_last());
			continue;
		}
		if (walk_excluded(m, q->path, q->len, q->is_dir, &walk) < 0 ||
		    walk != q->ours)
			REPORT(c, q->path, "check() says %d, excluded() %d",
			       walk, q->ours);
	}
	for (i = nq; i-- > 0;) {
		bool again = false;

		if (ignore_matcher_excluded(m2, qs[i].path, qs[i].len,
					    qs[i].is_dir, &again) < 0 ||
		    again != qs[i].ours)
			REPORT(c, qs[i].path, "answer depends on query order");
	}
	ignore_matcher_free(m);
	ignore_matcher_free(m2);
}

static size_t load_queries(const struct tcase *c, struct query *qs)
{
	size_t n = 0;

	for (; n < ARRAY_SIZE(c->paths) && c->paths[n]; n++) {
		if (!parse_query(&qs[n], c->paths[n])) {
			REPORT(c, c->paths[n], "bad path spec in table");
			return 0;
		}
	}
	return n;
}

/* --- the git oracle ------------------------------------------------------ */

static char oracle_root[PATH_MAX];
static unsigned oracle_seq;

static void rm_tree(const char *dir)
{
	testutil_rm_rf(dir);
}

static int oracle_setup(void **state)
{
	char sub[PATH_MAX + 16];

	UNUSED(state);
	if (testutil_mkdtemp(oracle_root, sizeof(oracle_root), "ignore") < 0)
		return -1;
	snprintf(sub, sizeof(sub), "%s/tmpl", oracle_root);
	mkdir(sub, 0755);
	setenv("GIT_TEMPLATE_DIR", sub, 1);
	snprintf(sub, sizeof(sub), "%s/xdg", oracle_root);
	mkdir(sub, 0755);
	setenv("XDG_CONFIG_HOME", sub, 1);
	setenv("HOME", oracle_root, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	unsetenv("GIT_COMMON_DIR");
	unsetenv("GIT_LITERAL_PATHSPECS");
	unsetenv("GIT_GLOB_PATHSPECS");
	unsetenv("GIT_ICASE_PATHSPECS");
	return 0;
}

static int oracle_teardown(void **state)
{
	UNUSED(state);
	if (oracle_root[0] && !total_failures)
		rm_tree(oracle_root);
	else if (oracle_root[0])
		fprintf(stderr, "oracle trees kept in %s\n", oracle_root);
	return 0;
}

/* Run git in `dir` with stdin from `in` (or /dev/null); stdout into `out`.
 * Returns the exit status, 127 when git cannot be run, -1 on our error. */
static int run_git(const char *dir, const char *const *argv, const char *in,
		   buf *out)
{
	int pfd[2], status;
	pid_t pid;
	char chunk[4096];
	ssize_t got;

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(in ? in : "/dev/null", O_RDONLY);

		if (fd < 0 || dup2(fd, 0) < 0 || dup2(pfd[1], 1) < 0 ||
		    chdir(dir) < 0)
			_exit(126);
		close(pfd[0]);
		execvp("git", (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	while ((got = read(pfd[0], chunk, sizeof(chunk))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 || buf_put(out, chunk, (size_t)got) < 0)
			break;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool mkdirs(const char *root, const char *rel, size_t len)
{
	char p[PATH_MAX];
	size_t rl = strlen(root), i;

	if (rl + 1 + len >= sizeof(p))
		return false;
	memcpy(p, root, rl);
	p[rl] = '/';
	for (i = 0; i <= len; i++) {
		if (i == len || rel[i] == '/') {
			p[rl + 1 + i] = '\0';
			if (i && mkdir(p, 0755) < 0 && errno != EEXIST)
				return false;
		}
		if (i < len)
			p[rl + 1 + i] = rel[i];
	}
	return true;
}

static bool write_file(const char *root, const char *rel, const char *data,
		       size_t len, bool keep_existing)
{
	char p[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	int fd;
	bool ok;

	if (slash && !mkdirs(root, rel, (size_t)(slash - rel)))
		return false;
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	fd = open(p, O_WRONLY | O_CREAT | (keep_existing ? 0 : O_TRUNC), 0644);
	if (fd < 0)
		return false;
	ok = write(fd, data, len) == (ssize_t)len;
	return close(fd) == 0 && ok;
}

/* A fresh repository holding `files` and the query paths; *dir_out is
 * its path.  Returns false (after reporting) on any failure. */
static bool oracle_tree(char *dir_out, size_t dsize, const struct tcase *c,
			const struct tfile *files, size_t nfiles,
			const struct query *qs, size_t nq)
{
	static const char *const init[] = { "git", "init", "-q", NULL };
	buf out = BUF_INIT;
	size_t i;
	int st;

	snprintf(dir_out, dsize, "%s/c%u", oracle_root, oracle_seq++);
	if (mkdir(dir_out, 0755) < 0) {
		REPORT(c, "", "cannot create %s", dir_out);
		return false;
	}
	st = run_git(dir_out, init, NULL, &out);
	buf_release(&out);
	if (st != 0) {
		REPORT(c, "", "git init failed (status %d)%s", st,
		       st == 127 ? ": git is not installed, the oracle"
				   " cases cannot run"
				 : "");
		return false;
	}
	for (i = 0; i < nfiles && files[i].path; i++) {
		if (!write_file(dir_out, files[i].path, files[i].text,
				tfile_len(&files[i]), false)) {
			REPORT(c, files[i].path, "cannot write ignore file");
			return false;
		}
	}
	for (i = 0; i < nq; i++) {
		bool ok = qs[i].is_dir ? mkdirs(dir_out, qs[i].path, qs[i].len)
				       : write_file(dir_out, qs[i].path, "", 0,
						    true);
		if (!ok) {
			REPORT(c, qs[i].path,
			       "cannot create (file/dir clash in the case?)");
			return false;
		}
	}
	return true;
}

/* Ask git about every query; fills q->git. */
static bool oracle_ask(const char *dir, const struct tcase *c, struct query *qs,
		       size_t nq)
{
	static const char *const argv[] = { "git",	  "check-ignore",
					    "--no-index", "--stdin",
					    "-z",	  NULL };
	char in[PATH_MAX + 32];
	buf input = BUF_INIT, out = BUF_INIT;
	size_t i, at;
	int st;
	bool ok = true;

	for (i = 0; i < nq; i++) {
		qs[i].git = false;
		if (buf_put(&input, qs[i].path, qs[i].len + 1) < 0)
			ok = false;
	}
	snprintf(in, sizeof(in), "%s/.git/decree-queries", dir);
	if (!ok || !write_file(dir, ".git/decree-queries", input.ptr, input.len,
			       false)) {
		REPORT(c, "", "cannot write the query file");
		buf_release(&input);
		return false;
	}
	buf_release(&input);
	st = run_git(dir, argv, in, &out);
	if (st != 0 && st != 1) {
		REPORT(c, "", "git check-ignore failed (status %d)%s", st,
		       st == 127 ? ": git is not installed, the oracle"
				   " cases cannot run"
				 : "");
		buf_release(&out);
		return false;
	}
	for (at = 0; at < out.len;) {
		size_t n = strlen(out.ptr + at);
		bool known = false;

		for (i = 0; i < nq; i++) {
			if (qs[i].len == n &&
			    !memcmp(qs[i].path, out.ptr + at, n)) {
				qs[i].git = true;
				known = true;
			}
		}
		if (!known)
			REPORT(c, out.ptr + at, "git answered an unknown path");
		at += n + 1;
	}
	buf_release(&out);
	return true;
}

static bool is_oracle_case(const struct tcase *c)
{
	size_t i;

	if (c->extra[0])
		return false;
	for (i = 0; i < ARRAY_SIZE(c->files) && c->files[i].path; i++) {
		const char *s = strrchr(c->files[i].path, '/');

		if (strcmp(s ? s + 1 : c->files[i].path, ".gitignore"))
			return false;
	}
	return true;
}

/* Oracle cases must not touch the two things git does not know about. */
static bool oracle_safe_path(const struct tcase *c, const struct query *q,
			     const ignore_list *builtins)
{
	const char *bn = strrchr(q->path, '/');
	size_t i;

	bn = bn ? bn + 1 : q->path;
	if (q->path[0] == ':') {
		/* git check-ignore reads a leading ':' as pathspec magic */
		REPORT(c, q->path, "path starting with ':' in an oracle case");
		return false;
	}
	if (!strcmp(bn, ".gitignore") || !strcmp(bn, ".decreeignore")) {
		REPORT(c, q->path, "rules file in an oracle case");
		return false;
	}
	for (i = 0; i <= q->len; i++) {
		if (i < q->len && q->path[i] != '/')
			continue;
		if (ignore_list_match(builtins, q->path, i,
				      i < q->len || q->is_dir) != IGNORE_NONE) {
			REPORT(c, q->path,
			       "built-in pattern in an oracle case");
			return false;
		}
	}
	return true;
}

static void check_case(const struct tcase *c, bool oracle,
		       const ignore_list *builtins)
{
	struct query qs[ARRAY_SIZE(c->paths)];
	char dir[PATH_MAX];
	size_t nq = load_queries(c, qs), i;

	if (!nq)
		return;
	run_ours(c, qs, nq);
	if (!oracle) {
		for (i = 0; i < nq; i++)
			if (qs[i].ours != qs[i].expect)
				REPORT(c, qs[i].path,
				       "expected %s, matcher says %s",
				       qs[i].expect ? "ignored" : "kept",
				       qs[i].ours ? "ignored" : "kept");
		return;
	}
	for (i = 0; i < nq; i++)
		if (!oracle_safe_path(c, &qs[i], builtins))
			return;
	if (!oracle_tree(dir, sizeof(dir), c, c->files, ARRAY_SIZE(c->files),
			 qs, nq) ||
	    !oracle_ask(dir, c, qs, nq))
		return;
	for (i = 0; i < nq; i++) {
		if (qs[i].ours != qs[i].git)
			REPORT(c, qs[i].path, "git says %s, matcher says %s",
			       qs[i].git ? "ignored" : "kept",
			       qs[i].ours ? "ignored" : "kept");
		if (qs[i].expect != qs[i].git)
			REPORT(c, qs[i].path,
			       "table expects %s but git says %s (fix the "
			       "table)",
			       qs[i].expect ? "ignored" : "kept",
			       qs[i].git ? "ignored" : "kept");
	}
}

static void test_oracle_cases(void **state)
{
	ignore_list *builtins = NULL;
	buf text = BUF_INIT;
	size_t i, n = 0;

	UNUSED(state);
	for (i = 0; ignore_builtin_patterns[i]; i++) {
		assert_int_equal(buf_puts(&text, ignore_builtin_patterns[i]),
				 0);
		assert_int_equal(buf_putc(&text, '\n'), 0);
	}
	assert_int_equal(ignore_list_parse(&builtins, "", text.ptr, text.len),
			 0);
	buf_release(&text);
	failures = 0;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (!is_oracle_case(&cases[i])) {
			REPORT(&cases[i], "",
			       "not an oracle case: move it "
			       "to hand_cases");
			continue;
		}
		check_case(&cases[i], true, builtins);
		n++;
	}
	ignore_list_free(builtins);
	printf("oracle cases: %zu\n", n);
	assert_int_equal(failures, 0);
}

static void test_hand_cases(void **state)
{
	size_t i;

	UNUSED(state);
	failures = 0;
	for (i = 0; i < ARRAY_SIZE(hand_cases); i++) {
		check_case(&hand_cases[i], false, NULL);
	}
	printf("hand cases: %zu\n", ARRAY_SIZE(hand_cases));
	assert_int_equal(failures, 0);
}

/* --- randomized differential test against git ---------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static void gen_pattern_file(buf *b)
{
	static const char *const pieces[] = {
		"a",	"b",	 "c",	 "ab",		"*",	"*",
		"**",	"?",	 "/",	 "/",		"/",	"[ab]",
		"[!a]", "[a-c]", "[^b]", "\\*",		"\\",	"!",
		" ",	"[",	 "]",	 "[[:alpha:]]", "[]a]", "x",
		"#",	"**/",	 "/**",	 ".",		"\\/",	"[/]",
		"***",	"[[:",	 ":]",	 "-",		"\\ ",	"[a-",
	};
	uint32_t lines = rnd(4) ? 1 + rnd(3) : 4 + rnd(12), l, k, np;

	for (l = 0; l < lines; l++) {
		np = 1 + rnd(5);
		for (k = 0; k < np; k++)
			buf_puts(b, pieces[rnd(ARRAY_SIZE(pieces))]);
		buf_puts(b, rnd(8) ? "\n" : "\r\n");
	}
}

struct rtree {
	struct query *qs;
	size_t n, cap;
};

static void gen_tree(struct rtree *t, const char *prefix, unsigned depth)
{
	static const char *const names[] = {
		"a",   "b",  "c",    "ab", "ba",  "abc", "x",
		"a b", "a*", "[a]",  "!a", "#a",  "a.c", "b ",
		"bx",  "?",  "a\\b", "-",  "a-b",
	};
	uint32_t kids = 1 + rnd(3), k;
	bool used[ARRAY_SIZE(names)] = { false };

	for (k = 0; k < kids; k++) {
		uint32_t pick = rnd(ARRAY_SIZE(names));
		struct query *q;
		int len;

		if (used[pick])
			continue;
		used[pick] = true;
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 256;
			t->qs = realloc(t->qs, t->cap * sizeof(*t->qs));
			assert_non_null(t->qs);
		}
		q = &t->qs[t->n++];
		memset(q, 0, sizeof(*q));
		len = snprintf(q->path, sizeof(q->path), "%s/%s", prefix,
			       names[pick]);
		q->len = (size_t)len;
		q->is_dir = depth < 3 && rnd(2);
		if (q->is_dir) {
			char sub[256];

			memcpy(sub, q->path, q->len + 1);
			gen_tree(t, sub, depth + 1);
		}
	}
}

static void test_random_differential(void **state)
{
	enum { ROOTS = 400 };
	struct tcase rc = { .name = "random", .line = __LINE__ };
	struct tfile *files = calloc(2 * ROOTS + 1, sizeof(*files));
	char(*fpaths)[280] = calloc(2 * ROOTS, sizeof(*fpaths));
	buf *texts = calloc(2 * ROOTS, sizeof(*texts));
	struct rtree t = { NULL, 0, 0 };
	struct mem_files mf;
	ignore_matcher *m = NULL;
	const char *seed_env = getenv("DECREE_IGNORE_SEED");
	unsigned long seed;
	char dir[PATH_MAX];
	size_t nf = 0, i, bad = 0;

	UNUSED(state);
	assert_non_null(files);
	assert_non_null(fpaths);
	assert_non_null(texts);
	seed = seed_env ? strtoul(seed_env, NULL, 0)
			: (unsigned long)time(NULL) ^ (unsigned long)getpid();
	printf("random differential: DECREE_IGNORE_SEED=%lu\n", seed);
	rng_state = (uint64_t)seed * 2654435761u + 1;
	failures = 0;
	for (i = 0; i < ROOTS; i++) {
		char root[32];
		size_t first = t.n, k;

		snprintf(root, sizeof(root), "r%zu", i);
		gen_tree(&t, root, 0);
		buf_init(&texts[nf]);
		gen_pattern_file(&texts[nf]);
		snprintf(fpaths[nf], sizeof(fpaths[nf]), "%s/.gitignore", root);
		files[nf] = (struct tfile){ fpaths[nf], texts[nf].ptr,
					    texts[nf].len };
		nf++;
		for (k = first; k < t.n && rnd(2); k++) {
			if (!t.qs[k].is_dir)
				continue;
			buf_init(&texts[nf]);
			gen_pattern_file(&texts[nf]);
			snprintf(fpaths[nf], sizeof(fpaths[nf]),
				 "%s/.gitignore", t.qs[k].path);
			files[nf] = (struct tfile){ fpaths[nf], texts[nf].ptr,
						    texts[nf].len };
			nf++;
			break;
		}
	}
	/* Empty pattern files have len 0 and would be taken for strlen. */
	for (i = 0; i < nf; i++)
		if (!files[i].len)
			files[i].text = "";
	if (oracle_tree(dir, sizeof(dir), &rc, files, nf, t.qs, t.n) &&
	    oracle_ask(dir, &rc, t.qs, t.n)) {
		mf = (struct mem_files){ files, nf, 0, NULL };
		assert_int_equal(ignore_matcher_new(&m, mem_load, &mf, NULL),
				 0);
		for (i = 0; i < t.n; i++) {
			struct query *q = &t.qs[i];
			size_t f;

			assert_int_equal(
				ignore_matcher_excluded(m, q->path, q->len,
							q->is_dir, &q->ours),
				0);
			if (q->ours == q->git)
				continue;
			if (++bad > 15)
				continue;
			failures++;
			total_failures++;
			fprintf(stderr, "%s:%d: random path \"", __FILE__,
				rc.line);
			put_escaped(stderr, q->path, q->len);
			fprintf(stderr, "%s\": git says %s, matcher says %s\n",
				q->is_dir ? "/" : "",
				q->git ? "ignored" : "kept",
				q->ours ? "ignored" : "kept");
			for (f = 0; f < nf; f++) {
				size_t fl = strlen(files[f].path) - 11;

				if (strncmp(files[f].path, q->path, fl) ||
				    q->path[fl] != '/')
					continue;
				fprintf(stderr, "    %s: \"", files[f].path);
				put_escaped(stderr, files[f].text,
					    files[f].len);
				fputs("\"\n", stderr);
			}
		}
		ignore_matcher_free(m);
	}
	printf("random differential: %zu paths, %zu ignore files, %zu "
	       "mismatches\n",
	       t.n, nf, bad);
	for (i = 0; i < nf; i++)
		buf_release(&texts[i]);
	free(texts);
	free(fpaths);
	free(files);
	free(t.qs);
	assert_int_equal(failures + (int)bad, 0);
}

/* --- API details --------------------------------------------------------- */

static void test_list_api(void **state)
{
	static const char text[] = "*.o\n!keep.o\n/top\n";
	ignore_list *l = NULL;

	UNUSED(state);
	assert_int_equal(
		ignore_list_parse(&l, "sub/dir", text, sizeof(text) - 1), 0);
	assert_int_equal(ignore_list_match(l, "sub/dir/a.o", 11, false),
			 IGNORE_IGNORE);
	assert_int_equal(ignore_list_match(l, "sub/dir/x/keep.o", 16, false),
			 IGNORE_WHITELIST);
	assert_int_equal(ignore_list_match(l, "sub/dir/a.c", 11, false),
			 IGNORE_NONE);
	/* outside the base, or the base itself */
	assert_int_equal(ignore_list_match(l, "sub/a.o", 7, false),
			 IGNORE_NONE);
	assert_int_equal(ignore_list_match(l, "sub/dirx/a.o", 12, false),
			 IGNORE_NONE);
	assert_int_equal(ignore_list_match(l, "sub/dir", 7, true), IGNORE_NONE);
	assert_int_equal(ignore_list_match(l, "sub/dir/top", 11, false),
			 IGNORE_IGNORE);
	assert_int_equal(ignore_list_match(l, "sub/dir/x/top", 13, false),
			 IGNORE_NONE);
	/* the length bounds the path */
	assert_int_equal(ignore_list_match(l, "sub/dir/a.oXX", 11, false),
			 IGNORE_IGNORE);
	ignore_list_free(l);

	assert_int_equal(ignore_list_parse(&l, "", NULL, 0), 0);
	assert_int_equal(ignore_list_match(l, "a", 1, false), IGNORE_NONE);
	ignore_list_free(l);
	ignore_list_free(NULL);
	ignore_matcher_free(NULL);
}

static void test_builtin_list(void **state)
{
	static const char *const want[] = {
		"node_modules/", "__pycache__/", ".venv/",    "venv/",
		".cache/",	 "*.pyc",	 ".DS_Store",
	};
	size_t i;

	UNUSED(state);
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		assert_non_null(ignore_builtin_patterns[i]);
		assert_string_equal(ignore_builtin_patterns[i], want[i]);
	}
	assert_null(ignore_builtin_patterns[ARRAY_SIZE(want)]);
}

static void test_bad_paths(void **state)
{
	ignore_matcher *m = NULL;
	bool ign = true;

	UNUSED(state);
	assert_int_equal(ignore_matcher_new(&m, NULL, NULL, NULL), 0);
	assert_int_equal(ignore_matcher_check(m, "/a", 2, false, &ign),
			 DECREE_EINVALID);
	assert_int_equal(ignore_matcher_check(m, "a/", 2, false, &ign),
			 DECREE_EINVALID);
	assert_int_equal(ignore_matcher_check(m, "a//b", 4, false, &ign),
			 DECREE_EINVALID);
	assert_int_equal(ignore_matcher_excluded(m, "a//b/c", 6, false, &ign),
			 DECREE_EINVALID);
	assert_int_equal(ignore_matcher_check(m, "", 0, true, &ign), 0);
	assert_false(ign);
	/* NULL loader: built-ins only */
	assert_int_equal(ignore_matcher_check(m, "x/venv", 6, true, &ign), 0);
	assert_true(ign);
	assert_int_equal(ignore_matcher_check(m, "x/venv", 6, false, &ign), 0);
	assert_false(ign);
	ignore_matcher_free(m);
}

/* Each directory is loaded once (two loader calls), a missing file is
 * remembered, and excluded() does not read files of excluded dirs. */
static void test_lazy_loading(void **state)
{
	static const struct tfile files[] = {
		GI("skip/\n"),
		GIAT("a", "*.o\n"),
		{ NULL, NULL, 0 },
	};
	struct mem_files mf = { files, ARRAY_SIZE(files), 0, NULL };
	ignore_matcher *m = NULL;
	bool ign;
	int i;

	UNUSED(state);
	assert_int_equal(ignore_matcher_new(&m, mem_load, &mf, NULL), 0);
	assert_int_equal(mf.calls, 0);
	for (i = 0; i < 50; i++) {
		assert_int_equal(
			ignore_matcher_check(m, "a/b/x.o", 7, false, &ign), 0);
		assert_true(ign);
		assert_int_equal(
			ignore_matcher_check(m, "c/y.c", 5, false, &ign), 0);
		assert_false(ign);
	}
	assert_int_equal(mf.calls, 2 * 4); /* "", a, a/b, c */
	assert_int_equal(
		ignore_matcher_excluded(m, "skip/x/y/z", 10, false, &ign), 0);
	assert_true(ign);
	assert_int_equal(mf.calls, 2 * 4);
	ignore_matcher_free(m);
}

static void test_loader_error(void **state)
{
	static const struct tfile files[] = { GI("*.o\n"), { NULL, NULL, 0 } };
	struct mem_files mf = { files, ARRAY_SIZE(files), 0, "bad" };
	ignore_matcher *m = NULL;
	bool ign;

	UNUSED(state);
	assert_int_equal(ignore_matcher_new(&m, mem_load, &mf, NULL), 0);
	assert_int_equal(ignore_matcher_check(m, "bad/x.c", 7, false, &ign),
			 DECREE_ERROR);
	assert_string_equal(decree_error_last(), "cannot read 'bad'");
	/* not cached as "no file": the next call asks again */
	assert_int_equal(ignore_matcher_check(m, "bad/x.c", 7, false, &ign),
			 DECREE_ERROR);
	mf.fail_dir = NULL;
	assert_int_equal(ignore_matcher_check(m, "bad/x.o", 7, false, &ign), 0);
	assert_true(ign);
	ignore_matcher_free(m);
}

/* Every allocation of a small scenario fails in turn: a clean error and
 * no leak (ASan checks the latter). */
static int alloc_scenario(void)
{
	static const struct tfile files[] = {
		GI("*.o\n!k.o\n[a-c]x/\na/**/b\nx/y**/z\n"),
		GIAT("d", "e\n"),
		DI("!q.o\n"),
		{ NULL, NULL, 0 },
	};
	static const char *const extra[] = { "*.bak", NULL };
	struct mem_files mf = { files, ARRAY_SIZE(files), 0, NULL };
	static const char *const paths[] = {
		"a.o",	 "d/e", "d/f/g/h", "bx/c",
		"a/q/b", "q.o", "x/yy/z",  "z.bak",
	};
	ignore_matcher *m = NULL;
	ignore_list *l = NULL;
	size_t i;
	bool ign;
	int r;

	if ((r = ignore_matcher_new(&m, mem_load, &mf, extra)) < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		if ((r = ignore_matcher_excluded(m, paths[i], strlen(paths[i]),
						 false, &ign)) < 0)
			goto done;
	}
	r = ignore_list_parse(&l, "", files[0].text, strlen(files[0].text));
	ignore_list_free(l);
done:
	ignore_matcher_free(m);
	return r;
}

static void test_alloc_failures(void **state)
{
	unsigned long before, total, k;

	UNUSED(state);
	before = alloc_count();
	assert_int_equal(alloc_scenario(), 0);
	total = alloc_count() - before;
	assert_true(total > 10);
	for (k = 1; k <= total; k++) {
		int r;

		alloc_fail_at(k);
		r = alloc_scenario();
		alloc_fail_at(0);
		if (r != -1)
			fprintf(stderr, "allocation %lu of %lu: got %d\n", k,
				total, r);
		assert_int_equal(r, -1);
		assert_string_equal(decree_error_last(), "out of memory");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_list),
		cmocka_unit_test(test_list_api),
		cmocka_unit_test(test_bad_paths),
		cmocka_unit_test(test_lazy_loading),
		cmocka_unit_test(test_loader_error),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_hand_cases),
		cmocka_unit_test(test_oracle_cases),
		cmocka_unit_test(test_random_differential),
	};

	return cmocka_run_group_tests(tests, oracle_setup, oracle_teardown);
}
