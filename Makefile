# decree - build, test, bench.
#
#   make              release-ish build (-O2 -g) in build/
#   make check        deps + sanitizer build (ASan+UBSan) in build/san + all tests
#   make test-build   also builds $(B)/decree-shared, the program linked
#                     against libdecree.so (tests only; $(B)/decree is the
#                     program: static, see CLI_LIBS)
#   make demo         deps + build + make install (sudo unless root or
#                     PREFIX is writable) + scripted demo of the installed
#                     decree
#   make bench        deps + build + benchmarks against a shadow git repository
#   make torture      every mutating command under ENOSPC/EIO/SIGKILL at each
#                     write, fsync, rename, unlink, mkdir (tests/torture/),
#                     then 100 rounds of tests/crash/concurrency_mix.sh
#   make install      PREFIX (default /usr/local), DESTDIR, and BINDIR,
#                     LIBDIR, ... below: the program, libdecree.a, libdecree.so,
#                     headers, decree.pc, the man page, the docs, bash, zsh
#                     and fish completions (docs/install.md)
#   make uninstall    removes exactly what install installed
#   make layers       the layering rules (tests/layers.sh: includes, symbol
#                     uses between folders, cycles) on the objects of $(B);
#                     make check runs it too, as the suite lint/layers
#   make format / format-check / hdr-check / lint
#
# Warnings are errors everywhere.

PREFIX  ?= /usr/local
B       ?= build
CC      ?= cc
VERSION := 0.1.0
# The soname's number: libdecree.so.0 (the file is libdecree.so.$(VERSION)).
SOVERSION := 0

# Where make install puts things (GNU names; each may be overridden).
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/decree
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# The directories the dynamic loader searches by itself (or through
# ld.so.conf and its cache, which install refreshes with ldconfig).  For
# any other LIBDIR, decree.pc adds -Wl,-rpath,${libdir} to its Libs, so a
# program built with `pkg-config --libs decree` finds libdecree.so.0
# without LD_LIBRARY_PATH.  PC_RPATH= leaves it out.
MULTIARCH   := $(shell $(CC) -print-multiarch 2>/dev/null)
SYSLIBDIRS  := /lib /usr/lib /lib64 /usr/lib64 /usr/local/lib \
               $(if $(MULTIARCH),/lib/$(MULTIARCH) /usr/lib/$(MULTIARCH))
PC_RPATH    ?= $(if $(filter $(SYSLIBDIRS),$(LIBDIR)),,-Wl,-rpath,$${libdir})

WARN    := -std=c11 -Wall -Wextra -Werror -pedantic -Wstrict-prototypes \
           -Wmissing-prototypes -Wold-style-definition -Wvla -Wwrite-strings \
           -Wpointer-arith -Wformat=2 -Wshadow -fno-common \
           -Wno-format-truncation # paths are bounded by PATH_MAX checks, not by this heuristic
OPT     ?= -O2 -g
ifeq ($(SANITIZE),1)
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined -DDECREE_TESTING
LDSAN   := -fsanitize=address,undefined
else
OPT     += -D_FORTIFY_SOURCE=2
endif
# Every file sees the public headers and src/util ("util/buf.h"); the
# engine's own folders ("store/odb.h") are visible only to the engine, its
# unit tests and fuzzers: the pipeline and the program cannot include them.
CPPFLAGS := -Iinclude -Isrc
ENGINE_CPPFLAGS := -Isrc/lib
CFLAGS  += $(WARN) $(OPT) -fPIC -fvisibility=hidden -pthread
LIBS    := -lcrypto -lzstd -lz -ljansson -lyaml -lpthread
# The program links its dependencies statically: a dynamic libcrypto alone
# costs ~1 ms of relocation at every start, and several commands are
# budgeted at a few milliseconds.  The shared library links them dynamically.
ifeq ($(SANITIZE),1)
CLI_LIBS := $(LIBS)
else
CLI_LIBS := -Wl,-Bstatic -lcrypto -lzstd -lz -ljansson -lyaml -Wl,-Bdynamic -lpthread
endif
LDFLAGS += $(LDSAN) -pthread

LIB_SRC := $(sort $(wildcard src/util/*.c src/lib/*/*.c src/pipeline/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c src/hooks/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
UTIL_OBJ := $(filter $(B)/src/util/%,$(LIB_OBJ))
CLI_OBJ := $(CLI_SRC:%.c=$(B)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
CRASH_SRC := $(sort $(wildcard tests/crash/*.c))
CRASH_BIN := $(CRASH_SRC:tests/crash/%.c=$(B)/tests/%)
HDRS    := $(sort $(wildcard include/decree/*.h))
FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_SRC:fuzz/%.c=$(B)/fuzz/%-replay)

all: $(B)/decree $(B)/libdecree.a $(B)/libdecree.so $(B)/decree.pc

ENGINE_DIRS := store scan txn diff merge journal ops
$(foreach d,$(ENGINE_DIRS),$(B)/src/lib/$(d)/%.o): CPPFLAGS += $(ENGINE_CPPFLAGS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(B)/libdecree.a: $(LIB_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/libdecree.so: $(LIB_OBJ)
	@echo "  LD      $@"
	@$(CC) -shared -Wl,-soname,libdecree.so.0 $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/decree: $(CLI_OBJ) $(B)/libdecree.a
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libdecree.a $(CLI_LIBS)

# util is a layer both the library and its programs link (libgit2's
# src/util): libdecree.so keeps its copy hidden, so a program linked
# against it links the util objects it uses from this archive.  util
# defines no public symbol (tests/layers.sh), so nothing in a program's
# copy shadows the library's.
$(B)/libdecree_util.a: $(UTIL_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/libdecree.so.0: $(B)/libdecree.so
	@ln -sf libdecree.so $@

# The same program as a client of the shared library: the public API from
# libdecree.so.0 (NEEDED, found next to the binary through the rpath),
# util from libdecree_util.a.  Not installed: it only proves that the
# program needs nothing hidden (tests/cli/shared_lib.sh, and the
# cli-shared/ suites of tests/run-all.sh run CLI suites with it).
$(B)/decree-shared: $(CLI_OBJ) $(B)/libdecree_util.a $(B)/libdecree.so.0
	@echo "  LD      $@"
	@$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libdecree_util.a \
		-Wl,--as-needed -L$(B) -ldecree -Wl,-rpath,'$$ORIGIN' $(LIBS)

# decree.pc for the install paths: $(call write_pc,FILE).  libdir and
# includedir are relative to ${prefix} when under it (pkg-config
# --define-prefix can relocate them).
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
write_pc = printf 'prefix=%s\nlibdir=%s\nincludedir=%s\n\nName: decree\nDescription: reviewable, reversible changes to a directory tree\nVersion: %s\nLibs: -L$${libdir} -ldecree%s\nLibs.private: %s\nCflags: -I$${includedir}\n' \
	'$(PREFIX)' '$(call pc_dir,$(LIBDIR))' '$(call pc_dir,$(INCLUDEDIR))' \
	'$(VERSION)' '$(if $(PC_RPATH), $(PC_RPATH))' '$(LIBS)' > $(1)

$(B)/decree.pc: Makefile
	@mkdir -p $(B)
	@$(call write_pc,$@)

$(B)/tests/test_%: tests/unit/test_%.c $(B)/libdecree.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(CFLAGS) -DDECREE_TESTING -o $@ $< $(B)/libdecree.a -lcmocka $(LIBS) $(LDFLAGS)

$(B)/tests/%: tests/crash/%.c $(B)/libdecree.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/libdecree.a $(LIBS) $(LDFLAGS)

# merge3() as a command for tests/cli/merge_oracle.sh (git merge-file's
# arguments and exit status; not installed).
$(B)/tests/merge3-tool: tests/merge/merge3-tool.c $(B)/libdecree.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(CFLAGS) -o $@ $< $(B)/libdecree.a $(LIBS) $(LDFLAGS)

# Corpus replay drivers (plain compiler, no libFuzzer) for make check.
$(B)/fuzz/%-replay: fuzz/%.c fuzz/replay.c fuzz/common.c fuzz/common.h $(B)/libdecree.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -o $@ $< fuzz/replay.c fuzz/common.c $(FUZZ_EXTRA) $(B)/libdecree.a $(LIBS) $(LDFLAGS)

# libFuzzer builds (clang): make fuzz, then build/fuzz/fuzz_X fuzz/corpus/X.
# The library is compiled once with coverage instrumentation
# (fuzzer-no-link) and ASan+UBSan into build/fuzz/libdecree.a; each target
# links it.  docs/fuzzing.md says how to run them.
FUZZ_B    := build/fuzz
FUZZ_CC   := clang
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := $(WARN) -Wno-unknown-warning-option -Wno-format-nonliteral -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN) -pthread
FUZZ_OBJ  := $(LIB_SRC:%.c=$(FUZZ_B)/obj/%.o)
FUZZ_BIN  := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_B)/%)
FUZZ_SECONDS ?= 60

$(FUZZ_B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  FUZZCC  $<"
	@$(FUZZ_CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_B)/libdecree.a: $(FUZZ_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(FUZZ_B)/fuzz_%: fuzz/fuzz_%.c fuzz/common.c fuzz/common.h $(FUZZ_B)/libdecree.a
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(CPPFLAGS) $(ENGINE_CPPFLAGS) $(FUZZ_CFLAGS) \
		-Wno-missing-prototypes -fsanitize=fuzzer -o $@ $< \
		fuzz/common.c $(FUZZ_EXTRA) $(FUZZ_B)/libdecree.a $(LIBS)

# fuzz_hook drives src/hooks, which the program links, not libdecree.a:
# its builds link the hooks objects too.
HOOKS_OBJ := $(filter $(B)/src/hooks/%,$(CLI_OBJ))
FUZZ_HOOKS_OBJ := $(filter src/hooks/%,$(CLI_SRC))
FUZZ_HOOKS_OBJ := $(FUZZ_HOOKS_OBJ:%.c=$(FUZZ_B)/obj/%.o)
$(B)/fuzz/fuzz_hook-replay: $(HOOKS_OBJ)
$(B)/fuzz/fuzz_hook-replay: FUZZ_EXTRA := $(HOOKS_OBJ)
$(FUZZ_B)/fuzz_hook: $(FUZZ_HOOKS_OBJ)
$(FUZZ_B)/fuzz_hook: FUZZ_EXTRA := $(FUZZ_HOOKS_OBJ)

fuzz: $(FUZZ_BIN)

# Every target for FUZZ_SECONDS (default 60) on a scratch copy of its
# corpus (the committed corpus is not touched), one after the other, at
# nice 19; the final stats of each run go to build/fuzz/logs/<target>.log
# and one summary line per target to stdout.  FUZZ_TARGETS picks some.
FUZZ_TARGETS ?= $(FUZZ_SRC:fuzz/fuzz_%.c=%)
fuzz-run: fuzz
	@sh fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

deps:
	@sh scripts/deps.sh

# The test entry point of the README and CI.
check: deps
	$(MAKE) --no-print-directory format-check
	$(MAKE) --no-print-directory B=build/san SANITIZE=1 test-build
	$(MAKE) --no-print-directory hdr-check
	@B=build/san sh tests/run-all.sh

test-build: all $(B)/decree-shared $(UNIT_BIN) $(CRASH_BIN) $(FUZZ_REPLAY) \
	$(B)/tests/merge3-tool

test: test-build
	@B=$(B) sh tests/run-all.sh

# The architecture: tests/layers.sh holds the table of which folder may use
# which and checks it on the sources and on the built objects.
layers: all
	@B=$(B) bash tests/layers.sh

# Each public header must compile alone.
hdr-check:
	@mkdir -p $(B)/hdr
	@for h in $(HDRS); do \
		printf '#include "%s"\n' "$${h#include/}" > $(B)/hdr/t.c; \
		$(CC) -Iinclude -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only $(B)/hdr/t.c || exit 1; \
	done; echo "hdr-check: $(words $(HDRS)) headers ok"

# The quick start's first command: after it, `decree`, `man decree`,
# `pkg-config decree` and the shell completions work (PREFIX/bin is on
# root's and users' PATH for the default /usr/local).  The install runs
# through sudo unless root or the install directory is writable.
demo: deps all
	@d='$(DESTDIR)$(PREFIX)'; while [ ! -e "$$d" ]; do d=$$(dirname "$$d"); done; \
	if [ "$$(id -u)" -eq 0 ] || [ -w "$$d" ]; then \
		echo "demo: make install PREFIX=$(PREFIX)"; \
		$(MAKE) --no-print-directory install >/dev/null; \
	else \
		echo "demo: sudo make install PREFIX=$(PREFIX)"; \
		sudo env MAKEFLAGS="$$MAKEFLAGS" $(MAKE) --no-print-directory install >/dev/null; \
	fi
	@sh scripts/demo.sh $(DESTDIR)$(BINDIR)/decree
	@echo; echo "decree is installed: $(DESTDIR)$(BINDIR)/decree (man decree; docs in $(DESTDIR)$(DOCDIR)); 'make uninstall PREFIX=$(PREFIX)' removes it"
	@case ":$$PATH:" in *':$(DESTDIR)$(BINDIR):'*) ;; \
	*) echo "note: $(DESTDIR)$(BINDIR) is not on your PATH: add it, or run it by its full name" ;; esac

# Every mutating command under ENOSPC/EIO/SIGKILL at every write, fsync,
# rename, unlink and mkdir (tests/torture/torture.sh), and so is decree
# workspace create/apply/discard (tests/crash/kill_workspace.sh).
# TORTURE_BUDGET=N samples N points per syscall kind instead.  Then 100 rounds of mixed
# writers racing on one tree (tests/crash/concurrency_mix.sh,
# CONCURRENCY_ROUNDS).  make check runs a sample of both.
torture: deps all
	@DECREE=$(CURDIR)/$(B)/decree DECREE_TOP=$(CURDIR) DECREE_BUILD=$(CURDIR)/$(B) \
		TORTURE_BUDGET=$${TORTURE_BUDGET:-100000} TORTURE_FAULTS=$${TORTURE_FAULTS:-all} \
		bash tests/torture/torture.sh
	@DECREE=$(CURDIR)/$(B)/decree DECREE_TOP=$(CURDIR) DECREE_BUILD=$(CURDIR)/$(B) \
		KILL_BUDGET=$${TORTURE_BUDGET:-100000} WS_FAULTS=$${TORTURE_FAULTS:-all} \
		bash tests/crash/kill_workspace.sh
	@DECREE=$(CURDIR)/$(B)/decree DECREE_TOP=$(CURDIR) DECREE_BUILD=$(CURDIR)/$(B) \
		CONCURRENCY_ROUNDS=$${CONCURRENCY_ROUNDS:-100} \
		bash tests/crash/concurrency_mix.sh

bench: deps all
	@sh bench/run.sh $(B)/decree

# What make install puts under DOCDIR (the man page points there): the
# README and docs/ without its top level (docs/cli/x.md -> DOCDIR/cli/x.md).
DOC_SRC := README.md $(sort $(wildcard docs/*.md docs/cli/*.md docs/schema/*))
DOC_DST := $(patsubst docs/%,%,$(DOC_SRC))
# The program needs no rpath: it links libdecree.a and its dependencies
# statically (CLI_LIBS; only libc is dynamic).  The shared library's own
# clients find it through ldconfig (system LIBDIR) or decree.pc's rpath.
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/decree $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DOCDIR)/cli $(DESTDIR)$(DOCDIR)/schema \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 755 $(B)/decree $(DESTDIR)$(BINDIR)/decree
	install -m 644 $(B)/libdecree.a $(DESTDIR)$(LIBDIR)/libdecree.a
	install -m 755 $(B)/libdecree.so $(DESTDIR)$(LIBDIR)/libdecree.so.$(VERSION)
	ln -sf libdecree.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libdecree.so.$(SOVERSION)
	ln -sf libdecree.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libdecree.so
	install -m 644 $(HDRS) $(DESTDIR)$(INCLUDEDIR)/decree/
	$(call write_pc,$(DESTDIR)$(LIBDIR)/pkgconfig/decree.pc)
	sed -e 's|/usr/local/share/doc/decree|$(DOCDIR)|g' \
		-e 's|/usr/local/share/bash-completion/completions|$(BASHCOMPDIR)|g' \
		-e 's|/usr/local/share/zsh/site-functions|$(ZSHCOMPDIR)|g' \
		-e 's|/usr/local/share/fish/vendor_completions.d|$(FISHCOMPDIR)|g' \
		docs/decree.1 > $(DESTDIR)$(MANDIR)/man1/decree.1
	@set -e; for f in $(DOC_SRC); do \
		d=$${f#docs/}; install -m 644 $$f $(DESTDIR)$(DOCDIR)/$$d; done
	install -m 644 scripts/completions/decree.bash $(DESTDIR)$(BASHCOMPDIR)/decree
	install -m 644 scripts/completions/_decree $(DESTDIR)$(ZSHCOMPDIR)/_decree
	install -m 644 scripts/completions/decree.fish $(DESTDIR)$(FISHCOMPDIR)/decree.fish
	@if [ -z '$(DESTDIR)' ] && [ -n '$(filter $(SYSLIBDIRS),$(LIBDIR))' ] && \
		[ "$$(id -u)" -eq 0 ]; then echo ldconfig; ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/decree $(DESTDIR)$(LIBDIR)/libdecree.a \
		$(DESTDIR)$(LIBDIR)/libdecree.so.$(VERSION) \
		$(DESTDIR)$(LIBDIR)/libdecree.so.$(SOVERSION) \
		$(DESTDIR)$(LIBDIR)/libdecree.so \
		$(DESTDIR)$(LIBDIR)/pkgconfig/decree.pc \
		$(DESTDIR)$(MANDIR)/man1/decree.1 \
		$(HDRS:include/decree/%=$(DESTDIR)$(INCLUDEDIR)/decree/%) \
		$(DOC_DST:%=$(DESTDIR)$(DOCDIR)/%) \
		$(DESTDIR)$(BASHCOMPDIR)/decree $(DESTDIR)$(ZSHCOMPDIR)/_decree \
		$(DESTDIR)$(FISHCOMPDIR)/decree.fish
	@for d in $(DESTDIR)$(INCLUDEDIR)/decree $(DESTDIR)$(DOCDIR)/cli \
		$(DESTDIR)$(DOCDIR)/schema $(DESTDIR)$(DOCDIR); do \
		[ ! -d "$$d" ] || rmdir "$$d" || true; done
	@if [ -z '$(DESTDIR)' ] && [ -n '$(filter $(SYSLIBDIRS),$(LIBDIR))' ] && \
		[ "$$(id -u)" -eq 0 ]; then echo ldconfig; ldconfig; fi

FMT_FILES = $(shell find src include tests/unit tests/crash fuzz bench -name "*.[ch]") $(wildcard bindings/node/src/*.cc)
format:
	clang-format -i $(FMT_FILES)
format-check:
	@clang-format --dry-run -Werror $(FMT_FILES) && echo "format-check: $(words $(FMT_FILES)) files ok"

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance $(CPPFLAGS) $(ENGINE_CPPFLAGS) src

clean:
	rm -rf build

.PHONY: all deps fuzz fuzz-run check test test-build layers hdr-check demo torture bench install uninstall format format-check lint clean
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d) $(FUZZ_HOOKS_OBJ:.o=.d)
