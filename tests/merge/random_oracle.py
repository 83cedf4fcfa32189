#!/usr/bin/env python3
"""random_oracle.py SEED COUNT TOOL DIR - random three-way merges, merge3-tool
against `git merge-file -p` (default and --diff3 style).

Each triple is a base of 0..60 lines drawn from a small vocabulary (so lines
repeat, some end in CR LF, blank and brace lines appear) and two sides made
from it by 0..8 random insertions, deletions and replacements; now and then a
file loses its final newline.  Exit status and stdout must be equal byte for
byte.  Prints one line per mismatch (with the three files, repr'd) and a last
line "checked N, mismatches M"; exit 1 on a mismatch.
"""
import os
import random
import subprocess
import sys

seed, count, tool, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
rng = random.Random(seed)
env = dict(os.environ, HOME=work, GIT_CONFIG_NOSYSTEM='1', GIT_CONFIG_GLOBAL='/dev/null')
paths = [os.path.join(work, n) for n in ('ours', 'base', 'theirs')]


def mutate(lines, vocab):
    out = list(lines)
    for _ in range(rng.randint(0, 8)):
        op, i = rng.randint(0, 2), rng.randint(0, len(out))
        if op == 0:
            out[i:i] = [rng.choice(vocab) for _ in range(rng.randint(1, 3))]
        elif op == 1 and out:
            del out[i:i + rng.randint(1, 3)]
        elif out:
            out[min(i, len(out) - 1)] = rng.choice(vocab)
    return out


def write(path, lines):
    data = ''.join(lines)
    if rng.random() < 0.1 and data.endswith('\n'):
        data = data[:-1]
    with open(path, 'w', newline='') as f:
        f.write(data)


bad = 0
for n in range(count):
    k = rng.randint(2, 12)
    vocab = [c + rng.choice(['\n', '\r\n']) for c in 'abcdefghijkl'[:k]]
    vocab += ['{\n', '}\r\n', '\n', ' \n']
    base = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
    ours, theirs = mutate(base, vocab), mutate(base, vocab)
    for p, lines in zip(paths, (ours, base, theirs)):
        write(p, lines)
    for style in ([], ['--diff3']):
        labels = ['-L', 'ours', '-L', 'base', '-L', 'theirs']
        g = subprocess.run(['git', 'merge-file', '-p'] + style + labels + paths,
                           capture_output=True, env=env)
        m = subprocess.run([tool] + style + labels + paths, capture_output=True)
        if g.returncode != m.returncode or g.stdout != m.stdout:
            bad += 1
            print('mismatch: seed %d case %d %s: git exit %d, merge3 exit %d'
                  % (seed, n, style or 'default', g.returncode, m.returncode))
            for p in paths:
                print('  %s: %r' % (os.path.basename(p), open(p, 'rb').read()))
            print('  git:    %r' % g.stdout)
            print('  merge3: %r' % m.stdout)
print('checked %d, mismatches %d' % (count, bad))
sys.exit(1 if bad else 0)
