#!/usr/bin/env python3
"""Deterministic source-like trees for the decree benchmarks.

Generate a tree:
    gen-tree.py --seed N --files F --bytes TOTAL --out DIR

Mutate an existing tree (any tree: a generated one or the Linux source):
    gen-tree.py --out DIR --seed S --mutate K [--create C] [--journal FILE]
                [--pack FILE]
    gen-tree.py --out DIR --verify FILE
    gen-tree.py --out DIR --replay FILE

The same arguments always give the same bytes (Python 3 standard library
only; only random.Random with string seeds and integer draws are used, which
are stable across Python 3 versions).

Generated trees look like a small mixed-language project: C headers and
sources, Python, TypeScript, shell scripts (executable), Markdown, JSON and
YAML, in directories nested 1-5 deep, plus a few binary files (image-like,
mostly incompressible).  The text is built from a project vocabulary and
per-file local names, with indentation, comments, literals and numbers, so it
compresses roughly like real code (zlib -6 about 3-5x), not trivially.

--mutate K picks K regular files (not symlinks; .git and .decree are
skipped) with a seeded sample of the sorted path list and edits them in
place: text files get 1-3 generated lines inserted at a line boundary and
one line replaced; binary files get a run of bytes overwritten.  --create C
adds C new source files in seeded existing directories.  Applied to the same
tree state with the same seed, a mutation is byte-for-byte identical, which
is what lets bench/run.sh give decree and git exactly the same change.

--journal FILE records the sha256 of every file before it was modified and
the created paths; --verify FILE checks that the tree is back to that state
(modified files have their old bytes, created files are gone) and exits 1
listing the differences otherwise.

--pack FILE (with --mutate) also writes the new contents of the modified
files, in path order, to FILE: for each file a line "<size> <path>" and then
<size> bytes.  --replay FILE rewrites those files in place in the tree DIR
(same inode, as --mutate does) without listing or hashing anything: the
same change at a fraction of the cost, for a routine whose own time should
stay small and steady (bench/run.sh, pipeline group).
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys

# --------------------------------------------------------------------------
# vocabulary

WORDS = (
    "get set init buf len node list count size read write open close ctx "
    "state path name item value index cache hash key data entry flag mode "
    "lock free alloc parse emit table file dir walk scan store object tree "
    "diff patch apply check error status result config option param token "
    "line chunk block page map queue stack event handler callback stream "
    "reader writer client server request response user session time date "
    "limit offset range start end begin next prev head tail root parent "
    "child left right min max sum total flush sync commit revert restore "
    "track record field format encode decode header body footer width height "
    "color style layout render update delete insert remove find match filter "
    "sort merge split join copy move link unlink stat mtime inode device "
    "socket port addr host proto packet frame retry timeout delay backoff "
    "worker thread pool task job batch group owner perm access policy rule "
    "scope module plugin driver bus irq dma region slot ring desc vector "
    "matrix point rect shape mesh pixel sample rate gain level chan codec"
).split()

C_TYPES = ("int", "unsigned int", "size_t", "ssize_t", "uint32_t", "uint64_t",
           "int64_t", "bool", "char *", "const char *", "void *", "long",
           "uint8_t", "double", "u32", "u64")
C_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^")
C_CMP = ("==", "!=", "<", ">", "<=", ">=")
C_ERRS = ("EINVAL", "ENOMEM", "ENOENT", "EIO", "EAGAIN", "EBUSY", "EEXIST",
          "ENOSPC", "EPERM", "ERANGE")
PROSE = (
    "the of and to a in is it that for on with as this be by are not at from "
    "or we when if must should can will may each every only first last new "
    "old after before because so than then into over under all any no one "
    "two three caller callee value buffer pointer lock owner reference count "
    "already still never always again here there returns keeps holds frees "
    "checks walks reads writes stores updates"
).split()

EXT_WEIGHTS = ((".c", 30), (".h", 18), (".py", 14), (".ts", 10), (".md", 8),
               (".json", 4), (".yaml", 4), (".txt", 4), (".sh", 0))


def ident(rng, parts=None, style=None):
    n = parts or rng.choice((1, 2, 2, 2, 3))
    ws = [rng.choice(WORDS) for _ in range(n)]
    style = style or "snake"
    if style == "camel":
        return ws[0] + "".join(w.capitalize() for w in ws[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in ws)
    if style == "upper":
        return "_".join(ws).upper()
    return "_".join(ws)


def sentence(rng, lo=4, hi=14):
    n = rng.randint(lo, hi)
    return " ".join(rng.choice(PROSE) if rng.random() < 0.75
                    else rng.choice(WORDS) for _ in range(n))


def number(rng):
    r = rng.random()
    if r < 0.5:
        return str(rng.randint(0, 16))
    if r < 0.8:
        return str(rng.randint(0, 4096))
    return "0x%x" % rng.getrandbits(rng.choice((8, 16, 32)))


class Names:
    """Per-file local names: reused often, which is what makes code
    compress; plus the occasional fresh project-wide name."""

    def __init__(self, rng, style):
        self.rng = rng
        self.style = style
        self.vars = [ident(rng, style=style) for _ in range(rng.randint(6, 14))]
        self.funcs = [ident(rng, style=style) for _ in range(rng.randint(4, 10))]
        self.types = [ident(rng, 2, "pascal" if style != "snake" else "snake")
                      for _ in range(rng.randint(2, 5))]
        self.consts = [ident(rng, style="upper") for _ in range(rng.randint(3, 8))]

    def var(self):
        if self.rng.random() < 0.85:
            return self.rng.choice(self.vars)
        return ident(self.rng, style=self.style)

    def func(self):
        if self.rng.random() < 0.8:
            return self.rng.choice(self.funcs)
        return ident(self.rng, style=self.style)

    def typ(self):
        return self.rng.choice(self.types)

    def const(self):
        return self.rng.choice(self.consts)


# --------------------------------------------------------------------------
# per-language line generators.  Each returns a list of lines (no newline).

def c_expr(rng, nm):
    r = rng.random()
    if r < 0.3:
        return nm.var()
    if r < 0.5:
        return "%s %s %s" % (nm.var(), rng.choice(C_OPS), number(rng))
    if r < 0.7:
        return "%s->%s" % (nm.var(), nm.var())
    if r < 0.85:
        return "%s(%s)" % (nm.func(), ", ".join(nm.var() for _ in
                                                 range(rng.randint(0, 3))))
    return nm.const()


def c_stmt(rng, nm, ind):
    t = "\t" * ind
    r = rng.random()
    if r < 0.30:
        return [t + "%s = %s;" % (nm.var(), c_expr(rng, nm))]
    if r < 0.45:
        return [t + "%s(%s);" % (nm.func(), ", ".join(
            c_expr(rng, nm) for _ in range(rng.randint(1, 3))))]
    if r < 0.60 and ind < 4:
        body = []
        for _ in range(rng.randint(1, 3)):
            body += c_stmt(rng, nm, ind + 1)
        head = t + "if (%s %s %s) {" % (nm.var(), rng.choice(C_CMP),
                                        c_expr(rng, nm))
        if len(body) == 1 and rng.random() < 0.5:
            return [head[:-2], body[0]]
        return [head] + body + [t + "}"]
    if r < 0.68:
        return [t + "if (%s < 0)" % nm.var(),
                t + "\treturn -%s;" % rng.choice(C_ERRS)]
    if r < 0.74 and ind < 4:
        v = nm.var()
        body = []
        for _ in range(rng.randint(1, 3)):
            body += c_stmt(rng, nm, ind + 1)
        return [t + "for (%s = 0; %s < %s; %s++) {" % (v, v, c_expr(rng, nm), v)
                ] + body + [t + "}"]
    if r < 0.82:
        return [t + "/* %s */" % sentence(rng, 3, 9)]
    if r < 0.88:
        return [t + '%s("%s %%d\\n", %s);' % (
            rng.choice(("pr_debug", "pr_info", "printf", "log_warn")),
            sentence(rng, 2, 6), nm.var())]
    if r < 0.94:
        return [t + "%s %s = %s;" % (rng.choice(C_TYPES), nm.var(),
                                     c_expr(rng, nm))]
    return [t + "goto out;" if rng.random() < 0.5 else t + "break;"]


def c_function(rng, nm):
    ret = rng.choice(("static int", "int", "static void", "void",
                      "static inline bool", "size_t", "static struct %s *"
                      % nm.typ()))
    args = ", ".join("%s %s" % (rng.choice(C_TYPES), nm.var())
                     for _ in range(rng.randint(1, 4)))
    out = []
    if rng.random() < 0.6:
        out += ["/*", " * %s - %s" % (nm.func(), sentence(rng)),
                " * @%s: %s" % (nm.var(), sentence(rng, 3, 8)),
                " */"]
    out += ["%s %s(%s)" % (ret, nm.func(), args), "{"]
    for _ in range(rng.randint(1, 3)):
        out.append("\t%s %s;" % (rng.choice(C_TYPES), nm.var()))
    out.append("")
    for _ in range(rng.randint(3, 14)):
        out += c_stmt(rng, nm, 1)
    out += ["", "\treturn %s;" % rng.choice(("0", "ret", "err", nm.var())),
            "}", ""]
    return out


def c_header_block(rng, nm):
    r = rng.random()
    if r < 0.35:
        out = ["struct %s {" % nm.typ()]
        for _ in range(rng.randint(2, 9)):
            out.append("\t%s %s;%s" % (
                rng.choice(C_TYPES), nm.var(),
                ("\t/* %s */" % sentence(rng, 2, 6)) if rng.random() < 0.3
                else ""))
        return out + ["};", ""]
    if r < 0.55:
        return ["#define %s %s" % (nm.const(), number(rng))
                for _ in range(rng.randint(1, 5))] + [""]
    if r < 0.85:
        return ["%s %s(%s);" % (rng.choice(C_TYPES), nm.func(), ", ".join(
            "%s %s" % (rng.choice(C_TYPES), nm.var())
            for _ in range(rng.randint(1, 4))))]
    return ["/* %s */" % sentence(rng), ""]


def py_block(rng, nm):
    out = []
    if rng.random() < 0.3:
        out += ["class %s:" % nm.typ(),
                '    """%s."""' % sentence(rng).capitalize(), ""]
        ind = "    "
    else:
        ind = ""
    for _ in range(rng.randint(1, 3)):
        out.append("%sdef %s(%s):" % (ind, nm.func(), ", ".join(
            nm.var() for _ in range(rng.randint(0, 3)))))
        if rng.random() < 0.5:
            out.append('%s    """%s."""' % (ind, sentence(rng).capitalize()))
        for _ in range(rng.randint(2, 10)):
            r = rng.random()
            i2 = ind + "    "
            if r < 0.35:
                out.append("%s%s = %s(%s)" % (i2, nm.var(), nm.func(), nm.var()))
            elif r < 0.5:
                out += ["%sif %s %s %s:" % (i2, nm.var(), rng.choice(C_CMP),
                                            number(rng)),
                        "%s    return %s" % (i2, nm.var())]
            elif r < 0.6:
                out += ["%sfor %s in %s:" % (i2, nm.var(), nm.var()),
                        "%s    %s.append(%s)" % (i2, nm.var(), nm.var())]
            elif r < 0.7:
                out.append("%s# %s" % (i2, sentence(rng)))
            elif r < 0.8:
                out.append('%s%s["%s"] = %s' % (i2, nm.var(), nm.var(),
                                                number(rng)))
            else:
                out.append("%s%s = %s %s %s" % (i2, nm.var(), nm.var(),
                                                rng.choice(C_OPS[:4]),
                                                number(rng)))
        out += ["%s    return %s" % (ind, nm.var()), ""]
    return out


def ts_block(rng, nm):
    out = ["export function %s(%s): %s {" % (
        nm.func(), ", ".join("%s: %s" % (nm.var(), rng.choice(
            ("string", "number", "boolean", nm.typ())))
            for _ in range(rng.randint(0, 3))),
        rng.choice(("void", "number", "string", "Promise<void>", nm.typ())))]
    for _ in range(rng.randint(2, 10)):
        r = rng.random()
        if r < 0.35:
            out.append("  const %s = %s(%s);" % (nm.var(), nm.func(), nm.var()))
        elif r < 0.5:
            out += ["  if (%s %s %s) {" % (nm.var(), rng.choice(C_CMP),
                                          number(rng)),
                    "    return %s;" % nm.var(), "  }"]
        elif r < 0.6:
            out.append("  // %s" % sentence(rng))
        elif r < 0.75:
            out.append("  %s.%s = await %s.%s();" % (nm.var(), nm.var(),
                                                     nm.var(), nm.func()))
        else:
            out.append("  let %s = `%s ${%s}`;" % (nm.var(), sentence(rng, 2, 5),
                                                   nm.var()))
    return out + ["}", ""]


def md_block(rng, nm):
    r = rng.random()
    if r < 0.2:
        return ["#" * rng.randint(1, 3) + " " + sentence(rng, 2, 5).title(), ""]
    if r < 0.35:
        return ["- `%s`: %s" % (nm.func(), sentence(rng))
                for _ in range(rng.randint(2, 6))] + [""]
    if r < 0.45:
        return ["```", "%s --%s %s" % (nm.func(), nm.var(), number(rng)),
                "```", ""]
    lines, para = [], [sentence(rng).capitalize() + "." for _ in
                       range(rng.randint(2, 6))]
    text = " ".join(para)
    while len(text) > 72:
        cut = text.rfind(" ", 0, 72)
        cut = cut if cut > 0 else 72
        lines.append(text[:cut])
        text = text[cut + 1:]
    return lines + [text, ""]


def json_block(rng, nm):
    return ['  "%s": {' % nm.var()] + [
        '    "%s": %s,' % (nm.var(), rng.choice(
            (number(rng), '"%s"' % nm.func(), "true", "false", "null")))
        for _ in range(rng.randint(2, 8))] + ['    "%s": []' % nm.var(), "  },"]


def yaml_block(rng, nm):
    return ["%s:" % nm.var()] + [
        "  %s: %s" % (nm.var(), rng.choice(
            (number(rng), nm.func(), "true", "false",
             '"%s"' % sentence(rng, 2, 5))))
        for _ in range(rng.randint(2, 8))] + [""]


def sh_block(rng, nm):
    v = nm.var()
    return [
        "%s() {" % nm.func(),
        '\tlocal %s="$1"' % v,
        '\tif [ -z "$%s" ]; then' % v,
        '\t\techo "%s" >&2' % sentence(rng, 3, 8),
        "\t\treturn 1",
        "\tfi",
        '\t%s --%s "$%s" | %s' % (nm.func(), nm.var(), v,
                                   rng.choice(("sort -u", "wc -l", "head -n %s"
                                               % number(rng), "cat"))),
        "}",
        "",
    ]


def txt_block(rng, nm):
    return [sentence(rng, 6, 16) for _ in range(rng.randint(1, 5))] + [""]


def gen_text(rng, ext, size):
    """Text of about `size` bytes (exactly `size`, trimmed at a newline when
    possible and padded with a comment otherwise)."""
    style = "camel" if ext == ".ts" else "snake"
    nm = Names(rng, style)
    out, n = [], 0

    def add(lines):
        nonlocal n
        for ln in lines:
            out.append(ln)
            n += len(ln) + 1

    if ext in (".c", ".h"):
        add(["// SPDX-License-Identifier: GPL-2.0",
             "/*", " * %s" % sentence(rng).capitalize(), " */", ""])
        for _ in range(rng.randint(2, 6)):
            add(["#include <%s/%s.h>" % (rng.choice(WORDS), rng.choice(WORDS))])
        add([""])
        gen = c_header_block if ext == ".h" else (
            lambda r, m: c_function(r, m) if r.random() < 0.85
            else c_header_block(r, m))
    elif ext == ".py":
        add(['"""%s."""' % sentence(rng).capitalize(), "",
             "import os", "import sys", ""])
        gen = py_block
    elif ext == ".ts":
        add(["import { %s } from './%s';" % (nm.func(), nm.var()), ""])
        gen = ts_block
    elif ext == ".md":
        gen = md_block
    elif ext == ".json":
        add(["{"])
        gen = json_block
    elif ext == ".yaml":
        gen = yaml_block
    elif ext == ".sh":
        add(["#!/bin/sh", "# %s" % sentence(rng), "set -eu", ""])
        gen = sh_block
    else:
        gen = txt_block
    while n < size:
        add(gen(rng, nm))
    data = "\n".join(out) + "\n"
    if ext == ".json":
        data += '  "end": true\n}\n'
    b = data.encode("ascii")
    if len(b) > size:
        cut = b.rfind(b"\n", 0, size)
        b = b[:cut + 1] if cut > size // 2 else b[:size]
    if len(b) < size:
        pad = size - len(b)
        b += (b"#" * (pad - 1) + b"\n") if pad > 1 else b"\n"
    return b


def gen_binary(rng, size):
    """Image-like: a header, a palette-ish low-entropy region and a
    compressed-looking (random) payload.  Compresses only a little."""
    head = b"\x89BNC\r\n\x1a\n" + size.to_bytes(8, "little")
    low = bytes(rng.randrange(0, 4) * 40 for _ in range(min(size // 8, 4096)))
    rest = size - len(head) - len(low)
    payload = rng.getrandbits(8 * rest).to_bytes(rest, "little") if rest > 0 \
        else b""
    return (head + low + payload)[:size]


# --------------------------------------------------------------------------
# tree generation

def weighted(rng, pairs):
    total = sum(w for _, w in pairs)
    x = rng.random() * total
    for v, w in pairs:
        x -= w
        if x < 0:
            return v
    return pairs[-1][0]


def plan_sizes(rng, nfiles, total):
    raw = [math.exp(rng.gauss(0.0, 1.0)) for _ in range(nfiles)]
    s = sum(raw)
    sizes = [max(64, int(r / s * total)) for r in raw]
    diff = total - sum(sizes)
    # put the rounding difference on the largest file
    i = max(range(nfiles), key=lambda k: sizes[k])
    sizes[i] = max(64, sizes[i] + diff)
    return sizes


def generate(seed, nfiles, total, out):
    if os.path.exists(out) and os.listdir(out):
        sys.exit("gen-tree: '%s' exists and is not empty" % out)
    rng = random.Random("tree:%d:%d:%d" % (seed, nfiles, total))

    # directories: a random recursive tree, depth 1..5, ~12 files each
    ndirs = max(1, nfiles // 12)
    dirs = [("", 0)]
    used = {""}
    by_depth = {0: [""]}
    while len(dirs) < ndirs + 1:
        # depth of the new directory: mostly 2-3 levels, some 1, 4 and 5
        want = weighted(rng, ((1, 15), (2, 30), (3, 30), (4, 15), (5, 10)))
        while want - 1 not in by_depth:
            want -= 1
        parent, depth = rng.choice(by_depth[want - 1]), want - 1
        name = rng.choice(WORDS) + ("" if rng.random() < 0.7
                                    else "_" + rng.choice(WORDS))
        p = parent + "/" + name if parent else name
        if p in used:
            continue
        used.add(p)
        dirs.append((p, depth + 1))
        by_depth.setdefault(depth + 1, []).append(p)

    sizes = plan_sizes(rng, nfiles, total)
    nbin = max(1, round(nfiles * 0.01)) if nfiles >= 5 else 0
    nexe = max(1, round(nfiles * 0.02))
    kinds = ["bin"] * nbin + ["exe"] * nexe + ["text"] * (nfiles - nbin - nexe)
    rng.shuffle(kinds)
    # keep binaries modest: together at most ~5% of the bytes; the excess
    # goes to the largest text file
    cap = max(64, int(total * 0.05 / nbin)) if nbin else 0
    big = max((k for k in range(nfiles) if kinds[k] != "bin"),
              key=lambda k: sizes[k])
    for k in range(nfiles):
        if kinds[k] == "bin" and sizes[k] > cap:
            sizes[big] += sizes[k] - cap
            sizes[k] = cap

    names = set()
    written = 0
    for k in range(nfiles):
        frng = random.Random("file:%d:%d" % (seed, k))
        d = dirs[0][0] if k < min(3, nfiles) else frng.choice(dirs)[0]
        if kinds[k] == "exe":
            ext = ".sh" if frng.random() < 0.7 else ".py"
        elif kinds[k] == "bin":
            ext = frng.choice((".png", ".bin", ".dat"))
        else:
            ext = weighted(frng, EXT_WEIGHTS)
        while True:
            base = ident(frng, frng.choice((1, 1, 2)))
            rel = (d + "/" if d else "") + base + ext
            if rel not in names:
                break
        names.add(rel)
        if kinds[k] == "bin":
            data = gen_binary(frng, sizes[k])
        elif ext == ".py" and kinds[k] == "exe":
            data = b"#!/usr/bin/env python3\n" + gen_text(
                frng, ".py", max(1, sizes[k] - 23))
        else:
            data = gen_text(frng, ext, sizes[k])
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o755 if kinds[k] == "exe" else 0o644)
        written += len(data)
    print("gen-tree: %d files, %d bytes, %d dirs, %d executable, %d binary "
          "in %s" % (nfiles, written, len(dirs) - 1, nexe, nbin, out))


# --------------------------------------------------------------------------
# mutation

SKIP_DIRS = (".git", ".decree")


def list_files(root):
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, root)
        for fn in filenames:
            p = fn if rel == "." else rel + "/" + fn
            if os.path.isfile(os.path.join(root, p)) and \
                    not os.path.islink(os.path.join(root, p)):
                files.append(p)
    files.sort()
    return files


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def edit_file(rng, path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192] or not data:
        if not data:
            data = b"x\n"
        else:
            off = rng.randrange(0, len(data))
            n = min(64, len(data) - off)
            data = data[:off] + rng.getrandbits(8 * n).to_bytes(n, "little") \
                + data[off + n:]
    else:
        lines = data.split(b"\n")
        nm = Names(rng, "snake")
        new = []
        for _ in range(rng.randint(1, 3)):
            new += c_stmt(rng, nm, 1)
        pos = rng.randrange(0, len(lines))
        lines[pos:pos] = [ln.encode("ascii") for ln in new]
        j = rng.randrange(0, len(lines))
        lines[j] = ("\t/* %s */" % sentence(rng, 3, 8)).encode("ascii")
        data = b"\n".join(lines)
    write_in_place(path, data)


def write_in_place(path, data):
    # in place, same inode, as an editor or agent tool writing a file does
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()


def mutate(root, seed, nmod, ncreate, journal, pack=None):
    rng = random.Random("mutate:%d:%d:%d" % (seed, nmod, ncreate))
    files = list_files(root)
    if nmod > len(files):
        sys.exit("gen-tree: cannot modify %d of %d files" % (nmod, len(files)))
    chosen = rng.sample(files, nmod)
    rec = {"modified": {}, "created": []}
    for p in chosen:
        full = os.path.join(root, p)
        rec["modified"][p] = sha256_file(full)
        edit_file(rng, full)
    dirs = sorted({os.path.dirname(p) for p in files})
    for i in range(ncreate):
        d = rng.choice(dirs)
        ext = rng.choice((".c", ".h", ".py", ".md"))
        rel = (d + "/" if d else "") + "bench_new_%d_%d%s" % (seed, i, ext)
        full = os.path.join(root, rel)
        if os.path.lexists(full):
            sys.exit("gen-tree: '%s' already exists" % rel)
        with open(full, "wb") as f:
            f.write(gen_text(rng, ext, rng.randint(300, 6000)))
        rec["created"].append(rel)
    if journal:
        with open(journal, "w") as f:
            json.dump(rec, f, indent=1, sort_keys=True)
    if pack:
        with open(pack, "wb") as out:
            for p in sorted(rec["modified"]):
                with open(os.path.join(root, p), "rb") as f:
                    data = f.read()
                out.write(b"%d %s\n" % (len(data), p.encode()))
                out.write(data)
    return rec


def replay(root, pack):
    n = 0
    with open(pack, "rb") as f:
        while True:
            head = f.readline()
            if not head:
                break
            size, p = head.rstrip(b"\n").split(b" ", 1)
            data = f.read(int(size))
            if len(data) != int(size):
                sys.exit("gen-tree: '%s' is truncated" % pack)
            write_in_place(os.path.join(root.encode(), p), data)
            n += 1
    return n


def verify(root, journal):
    with open(journal) as f:
        rec = json.load(f)
    bad = []
    for p, h in sorted(rec["modified"].items()):
        full = os.path.join(root, p)
        if not os.path.isfile(full):
            bad.append("missing  " + p)
        elif sha256_file(full) != h:
            bad.append("differs  " + p)
    for p in rec["created"]:
        if os.path.lexists(os.path.join(root, p)):
            bad.append("present  " + p)
    if bad:
        sys.stderr.write("gen-tree: verify failed (%d):\n  %s\n" % (
            len(bad), "\n  ".join(bad[:20])))
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", type=int)
    ap.add_argument("--bytes", type=int)
    ap.add_argument("--out", required=True, help="tree to create or mutate")
    ap.add_argument("--mutate", type=int, default=0, metavar="K",
                    help="modify K existing files")
    ap.add_argument("--create", type=int, default=0, metavar="K",
                    help="create K new files")
    ap.add_argument("--journal", help="with --mutate/--create: record the "
                    "state before the change here")
    ap.add_argument("--verify", metavar="JOURNAL",
                    help="check that the tree is back to a journal's state")
    ap.add_argument("--pack", help="with --mutate: write the new contents "
                    "of the modified files here, for --replay")
    ap.add_argument("--replay", metavar="PACK",
                    help="rewrite the files of a --pack in place")
    a = ap.parse_args()
    if a.verify:
        return verify(a.out, a.verify)
    if a.replay:
        replay(a.out, a.replay)
        return 0
    if a.mutate or a.create:
        if a.files is not None or a.bytes is not None:
            ap.error("--files/--bytes do not combine with --mutate/--create")
        mutate(a.out, a.seed, a.mutate, a.create, a.journal, a.pack)
        return 0
    if not a.files or a.bytes is None or a.files < 1 or a.bytes < 64 * a.files:
        ap.error("generation needs --files F >= 1 and --bytes >= 64*F")
    generate(a.seed, a.files, a.bytes, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
