#!/usr/bin/env python3
"""Deterministic file pairs and trees for the diff/apply benchmarks.

    gen-diff.py rewrite --seed S --lines N --bytes B OLD NEW
    gen-diff.py edit    --seed S --bytes B --edits K OLD NEW
    gen-diff.py tree    --seed S --files F --bytes B --edits K OLD NEW

rewrite: OLD is N short code-like lines of about B bytes in all; NEW has
    N lines as well, and no line of NEW occurs anywhere in OLD (nor twice
    in either file): a complete rewrite, every line different.
edit: OLD is one code-like C text of exactly B bytes (bench/gen-tree.py's
    generator); NEW is OLD with K lines, picked with a seeded sample
    scattered over the whole file, replaced by different lines.
tree: OLD is a directory of F text files (C, headers, Python, TypeScript,
    Markdown, text) of B/F bytes +-50% each (about B bytes in all), in
    about F/12 directories nested 1-3 deep; NEW is a copy where every file
    has K lines edited (K-1 replaced, one line inserted), at seeded
    scattered places.
    Every file and directory gets the same fixed mtime, so `diff -ruN OLD
    NEW` prints the same bytes on every run.

The same arguments always give the same bytes (Python 3 standard library
only; random.Random with string seeds and integer draws, as gen-tree.py).
OLD and NEW must not exist yet.
"""

import argparse
import importlib.util
import os
import random
import sys

sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
_spec = importlib.util.spec_from_file_location(
    "gentree", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "gen-tree.py"))
gt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gt)

FIXED_MTIME = 1700000000  # 2023-11-14, any fixed value will do


def fresh(path):
    if os.path.lexists(path):
        sys.exit("gen-diff: '%s' already exists" % path)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------
# rewrite: N unique short lines, none shared between the two files

def short_line(rng):
    """A short C-like line (about 20 characters on average)."""
    v = gt.ident(rng, rng.choice((1, 1, 2)))
    r = rng.random()
    if r < 0.25:
        return "\t%s = %s;" % (v, gt.number(rng))
    if r < 0.45:
        return "\t%s(%s);" % (gt.ident(rng, 1), v)
    if r < 0.60:
        return "\tif (%s %s %s)" % (v, rng.choice(gt.C_CMP), gt.number(rng))
    if r < 0.75:
        return "\t%s += %s;" % (v, gt.ident(rng, 1))
    if r < 0.85:
        return "\treturn %s;" % v
    return "\t/* %s */" % gt.sentence(rng, 1, 3)


def rewrite(seed, nlines, nbytes, old, new):
    rng = random.Random("rewrite:%d:%d:%d" % (seed, nlines, nbytes))
    seen = set()
    files = []
    for _ in (old, new):
        lines = []
        size = 0
        while len(lines) < nlines:
            ln = short_line(rng)
            # steer the average line length towards nbytes / nlines
            want = (nbytes - size) / (nlines - len(lines)) - 1
            if len(ln) > want + 10:
                continue
            while len(ln) < want - 6 or ln in seen:
                ln += " %s" % rng.choice(gt.WORDS)
            seen.add(ln)
            lines.append(ln)
            size += len(ln) + 1
        files.append(("\n".join(lines) + "\n").encode("ascii"))
    write(old, files[0])
    write(new, files[1])
    print("gen-diff: rewrite %d lines: %s %d bytes, %s %d bytes" % (
        nlines, old, len(files[0]), new, len(files[1])))


# --------------------------------------------------------------------------
# edit: K scattered lines of a code-like text replaced

def edit_lines(rng, lines, nedits, ninsert=0):
    """Replace nedits lines at scattered places (seeded) and insert ninsert
    new ones; returns the new list of lines."""
    nm = gt.Names(rng, "snake")
    out = list(lines)
    pos = sorted(rng.sample(range(len(lines)), nedits + ninsert))
    rng.shuffle(pos)
    ins = set(pos[:ninsert])
    for p in sorted(pos, reverse=True):
        while True:
            ln = gt.c_stmt(rng, nm, rng.randint(1, 2))[0]
            if ln != lines[p]:
                break
        if p in ins:
            out[p:p] = [ln]
        else:
            out[p] = ln
    return out


def edit(seed, nbytes, nedits, old, new):
    rng = random.Random("edit:%d:%d:%d" % (seed, nbytes, nedits))
    data = gt.gen_text(rng, ".c", nbytes)
    lines = data.decode("ascii").split("\n")
    if lines[-1] == "":
        lines.pop()
    if nedits > len(lines):
        sys.exit("gen-diff: cannot edit %d of %d lines" % (nedits, len(lines)))
    out = edit_lines(rng, lines, nedits)
    ndata = ("\n".join(out) + "\n").encode("ascii")
    write(old, data)
    write(new, ndata)
    print("gen-diff: edit %d of %d lines: %s %d bytes, %s %d bytes" % (
        nedits, len(lines), old, len(data), new, len(ndata)))


# --------------------------------------------------------------------------
# tree: F text files, K lines edited in each

TREE_EXT = ((".c", 35), (".h", 20), (".py", 15), (".ts", 12), (".md", 10),
            (".txt", 8))


def tree(seed, nfiles, nbytes, nedits, old, new):
    rng = random.Random("tree:%d:%d:%d:%d" % (seed, nfiles, nbytes, nedits))
    ndirs = max(1, nfiles // 12)
    dirs = [""]
    while len(dirs) < ndirs + 1:
        parent = rng.choice(dirs)
        if parent.count("/") >= 2:
            continue
        name = rng.choice(gt.WORDS) + ("" if rng.random() < 0.7
                                       else "_" + rng.choice(gt.WORDS))
        p = parent + "/" + name if parent else name
        if p not in dirs:
            dirs.append(p)
    avg = nbytes // nfiles
    sizes = [rng.randint(avg // 2, avg + avg // 2) for _ in range(nfiles)]
    names = set()
    total_old = total_new = 0
    for k in range(nfiles):
        frng = random.Random("tfile:%d:%d" % (seed, k))
        d = frng.choice(dirs)
        ext = gt.weighted(frng, TREE_EXT)
        while True:
            rel = (d + "/" if d else "") + gt.ident(
                frng, frng.choice((1, 2))) + ext
            if rel not in names:
                break
        names.add(rel)
        data = gt.gen_text(frng, ext, sizes[k])
        lines = data.decode("ascii").split("\n")
        if lines[-1] == "":
            lines.pop()
        nd = min(nedits, len(lines))
        out = edit_lines(frng, lines, max(0, nd - 1), 1 if nd else 0)
        ndata = ("\n".join(out) + "\n").encode("ascii")
        for root, blob in ((old, data), (new, ndata)):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write(path, blob)
        total_old += len(data)
        total_new += len(ndata)
    for root in (old, new):
        for dirpath, _, filenames in os.walk(root):
            for fn in filenames:
                os.utime(os.path.join(dirpath, fn),
                         (FIXED_MTIME, FIXED_MTIME))
        for dirpath, _, _ in os.walk(root, topdown=False):
            os.utime(dirpath, (FIXED_MTIME, FIXED_MTIME))
    print("gen-diff: tree %d files in %d dirs, %d lines edited each: "
          "%s %d bytes, %s %d bytes" % (nfiles, len(dirs) - 1, nedits, old,
                                        total_old, new, total_new))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("rewrite", "edit", "tree"))
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lines", type=int)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--edits", type=int)
    ap.add_argument("--files", type=int)
    a = ap.parse_args()
    fresh(a.old)
    fresh(a.new)
    if a.mode == "rewrite":
        if not a.lines or a.lines < 1 or a.bytes < 4 * a.lines:
            ap.error("rewrite needs --lines N >= 1 and --bytes >= 4*N")
        rewrite(a.seed, a.lines, a.bytes, a.old, a.new)
    elif a.mode == "edit":
        if a.edits is None or a.edits < 1 or a.bytes < 64:
            ap.error("edit needs --edits K >= 1 and --bytes >= 64")
        edit(a.seed, a.bytes, a.edits, a.old, a.new)
    else:
        if not a.files or a.edits is None or a.edits < 1 or \
                a.bytes < 256 * a.files:
            ap.error("tree needs --files F, --edits K >= 1, "
                     "--bytes >= 256*F")
        tree(a.seed, a.files, a.bytes, a.edits, a.old, a.new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
