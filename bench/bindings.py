#!/usr/bin/env python3
"""The bindings group of bench/run.sh: the Python binding against the C
library alone and against the program, and decree.hermes against the
Hermes agent's own git-based checkpoint manager, on a 5,000-file tree.

    bindings.py --decree BUILD/decree --lib BUILD/libdecree.so
                --libloop BIN --tree DIR --work DIR [--reps N]
                [--summary FILE]

Prints the table; with --summary appends one line per target in the
format of run.sh's summary (verdict, group, case, decree, reference,
target).

The Hermes reference (class HermesGit below) is not Hermes' code: it runs
the same git commands, in the same order and with the same environment,
that tools/checkpoint_manager.py of NousResearch/hermes-agent runs for
ensure_checkpoint() and restore() (read from its public source):

- a checkpoint: count the files of the tree with a recursive Python glob
  (its guard against trees over 50,000 files), touch the project's JSON
  metadata, then with a per-project index file: rev-parse the project ref,
  read-tree it into the index, `add -A`, `ls-files --cached -z` and a stat
  of each path for the file-size cap, rev-parse again, `diff-index
  --cached --quiet` (no commit when unchanged), write-tree, commit-tree
  with the previous tip as parent, update-ref; then its count and size
  budgets: a rev-list count of the ref and a recursive size walk of the
  store (its pruner lives in another file; this is its documented work);
- a full restore: `cat-file -t` of the hash, a "pre-rollback" checkpoint
  as above (without pruning), `checkout HASH -- .` with the project index,
  `log --format=%s -1 HASH` for the reason, then the budgets again.

Every git command runs as a subprocess with captured output, GIT_DIR,
GIT_WORK_TREE, GIT_INDEX_FILE and the global/system config disabled, as
there.  Both sides are timed in the same loop, alternating.
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))


def median_ms(xs):
    return statistics.median(xs) / 1e6


class HermesGit:
    """The git command sequence of Hermes' checkpoint manager (see the
    module docstring); one shared bare store, one ref per project."""

    def __init__(self, store: Path, root: Path, max_snapshots=50, max_file_mb=10):
        self.store, self.root = store, root
        self.max_snapshots, self.cap = max_snapshots, max_file_mb << 20
        h = hashlib.sha256(str(root).encode()).hexdigest()[:16]
        self.ref = "refs/hermes/" + h
        self.index = store / "indexes" / h
        self.meta = store / "projects" / (h + ".json")
        self.env = dict(os.environ)
        for k in ("GIT_NAMESPACE", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE"):
            self.env.pop(k, None)
        self.env.update(GIT_DIR=str(store), GIT_WORK_TREE=str(root),
                        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_SYSTEM=os.devnull,
                        GIT_CONFIG_NOSYSTEM="1")
        if not (store / "HEAD").exists():
            e = {k: v for k, v in self.env.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
            subprocess.run(["git", "init", "-q", "--bare", str(store)], env=e, check=True)
            for kv in (("user.email", "h@local"), ("user.name", "H"), ("commit.gpgsign", "false"),
                       ("gc.auto", "0")):
                self.git("config", *kv)
            (store / "info").mkdir(exist_ok=True)
            (store / "info" / "exclude").write_text("node_modules/\n__pycache__/\n*.log\n")
            (store / "indexes").mkdir(exist_ok=True)
            (store / "projects").mkdir(exist_ok=True)

    def git(self, *args, index=False, ok=(0,)):
        env = self.env
        if index:
            env = dict(env, GIT_INDEX_FILE=str(self.index))
        r = subprocess.run(["git", *args], env=env, cwd=str(self.root), capture_output=True,
                           text="-z" not in args, stdin=subprocess.DEVNULL)
        if r.returncode not in ok:
            raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr))
        out = r.stdout
        return r.returncode, out.strip() if isinstance(out, str) else out

    def take(self, reason, prune=True):
        n = 0
        for _ in self.root.rglob("*"):
            n += 1
            if n > 50000:
                return False
        now = time.time()
        self.meta.write_text(json.dumps({"workdir": str(self.root), "last_touch": now}))
        if self.index.exists():
            rc, tip = self.git("rev-parse", "--verify", self.ref + "^{commit}", ok=(0, 128))
            if rc == 0 and tip:
                self.git("read-tree", tip, index=True)
        self.git("add", "-A", index=True)
        _, names = self.git("ls-files", "--cached", "-z", index=True)
        for p in filter(None, names.split(b"\0")):
            try:
                os.stat(self.root / os.fsdecode(p)).st_size > self.cap
            except OSError:
                pass
        rc, tip = self.git("rev-parse", "--verify", self.ref + "^{commit}", ok=(0, 128))
        has = rc == 0 and bool(tip)
        if has and self.git("diff-index", "--cached", "--quiet", tip, index=True, ok=(0, 1))[0] == 0:
            return False
        _, tree = self.git("write-tree", index=True)
        args = ["commit-tree", tree] + (["-p", tip] if has else []) + ["-m", reason, "--no-gpg-sign"]
        _, new = self.git(*args, index=True)
        self.git("update-ref", self.ref, new, *([tip] if has else []))
        if prune:
            self.budgets()
        return True

    def budgets(self):
        self.git("rev-list", "--count", self.ref)
        total = 0
        for p in self.store.rglob("*"):
            if p.is_file():
                total += p.stat().st_size
        return total

    def tip(self):
        return self.git("rev-parse", self.ref)[1]

    def restore(self, h):
        self.git("cat-file", "-t", h)
        self.take("pre-rollback snapshot (restoring to %s)" % h[:8], prune=False)
        self.git("checkout", h, "--", ".", index=True)
        self.git("log", "--format=%s", "-1", h)
        self.budgets()
        return {"success": True}


def edit_files(root: Path, files, rnd):
    for p in files:
        with open(root / p, "a") as f:
            f.write("// edit %d\n" % rnd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decree", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--libloop", required=True)
    ap.add_argument("--tree", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--summary")
    a = ap.parse_args()
    os.environ["DECREE_LIBRARY"] = a.lib
    import decree
    from decree import hermes

    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows = []

    def row(label, d, ref, target=None, refname=""):
        ratio = d / ref if ref else float("nan")
        verdict = "-"
        if target is not None:
            kind, v = target
            verdict = "ok" if (ratio <= v if kind == "le" else 1 / ratio >= v) else "MISS"
            tgt = ("<= %.1fx" % v) if kind == "le" else (">= %gx faster" % v)
        else:
            tgt = "-"
        rows.append((label, d, ref, ratio, tgt, verdict, refname))

    # --- Python vs the C library vs the program, same tree, same store
    tree = work / "tree"
    shutil.copytree(a.tree, tree, symlinks=True)
    store = work / "store"
    decree_cli = [a.decree, "--store", str(store), "-C", str(tree)]
    subprocess.run(decree_cli + ["checkpoint", "create", "--session", "bench"], check=True,
                   capture_output=True)
    R = a.reps
    py_c, lib_c, cli_c = [], [], []
    s = decree.Store(tree, store, use_config=False)
    for rnd in range(R):
        # one C run of 1 call is dominated by its start: run it with R
        # calls once per round and keep the round's median
        out = subprocess.run([a.libloop, str(tree), str(store), "3", "create"], check=True,
                             capture_output=True, text=True).stdout.split()
        lib_c.append(statistics.median(int(x) for x in out))
        t = []
        for _ in range(3):
            t0 = time.perf_counter_ns()
            s.create("bench")
            t.append(time.perf_counter_ns() - t0)
        py_c.append(statistics.median(t))
        t0 = time.perf_counter_ns()
        subprocess.run(decree_cli + ["checkpoint", "create", "--session", "bench"], check=True,
                       capture_output=True)
        cli_c.append(time.perf_counter_ns() - t0)
    s.close()
    row("create, unchanged 5k-file tree: Python", median_ms(py_c), median_ms(lib_c), ("le", 1.1), "C library")
    row("  the same through the CLI (process)", median_ms(cli_c), median_ms(lib_c), None, "C library")

    # --- list of 100 checkpoints
    store2 = work / "store-list"
    s = decree.Store(tree, store2, use_config=False)
    for i in range(100):
        s.create("s%d" % (i % 4), label="checkpoint %d" % i)
    py_l, lib_l, cli_l = [], [], []
    for rnd in range(R):
        out = subprocess.run([a.libloop, str(tree), str(store2), "5", "list"], check=True,
                             capture_output=True, text=True).stdout.split()
        lib_l.append(statistics.median(int(x) for x in out))
        t = []
        for _ in range(5):
            t0 = time.perf_counter_ns()
            lst = s.list()
            t.append(time.perf_counter_ns() - t0)
        assert len(lst) == 100
        py_l.append(statistics.median(t))
        t0 = time.perf_counter_ns()
        subprocess.run([a.decree, "--json", "--store", str(store2), "-C", str(tree), "checkpoint", "list"],
                       check=True, capture_output=True)
        cli_l.append(time.perf_counter_ns() - t0)
    s.close()
    row("list 100 checkpoints: Python", median_ms(py_l), median_ms(lib_l), ("le", 1.1), "C library")
    row("  the same through the CLI --json (process)", median_ms(cli_l), median_ms(lib_l), None, "C library")

    # --- a Hermes-style cycle: checkpoint, edit 10 files, restore
    files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*.c") if p.is_file())[:10]
    if len(files) < 10:
        files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())[:10]
    t_dec = work / "t-decree"
    t_git = work / "t-git"
    shutil.copytree(a.tree, t_dec, symlinks=True)
    shutil.copytree(a.tree, t_git, symlinks=True)
    hermes.CHECKPOINT_BASE = work / "hermes-base"
    mgr = hermes.CheckpointManager(enabled=True, max_snapshots=50, max_total_size_mb=500)
    ref = HermesGit(work / "hermes-git" / "store", t_git.resolve())
    mgr.ensure_checkpoint(str(t_dec), "first")  # first checkpoints: untimed
    ref.take("first")
    d_cyc, g_cyc = [], []
    for rnd in range(max(5, R // 2)):
        # the user's change between turns, so that each turn checkpoints
        for root in (t_dec, t_git):
            with open(root / files[-1], "a") as f:
                f.write("// user %d\n" % rnd)
        mgr.new_turn()
        t0 = time.perf_counter_ns()
        assert mgr.ensure_checkpoint(str(t_dec), "turn %d" % rnd)
        edit_files(t_dec, files, rnd)
        h = mgr.list_checkpoints(str(t_dec))[0]["hash"]
        r = mgr.restore(str(t_dec), h)
        d_cyc.append(time.perf_counter_ns() - t0)
        assert r["success"], r
        t0 = time.perf_counter_ns()
        assert ref.take("turn %d" % rnd)
        edit_files(t_git, files, rnd)
        ref.restore(ref.tip())
        g_cyc.append(time.perf_counter_ns() - t0)
    mgr.close()
    # both trees must be back where they were, and equal
    for root in (t_dec, t_git):
        for p in files[:-1]:
            if b"// edit" in (root / p).read_bytes():
                print("bindings.py: %s not restored in %s" % (p, root), file=sys.stderr)
                return 1
    row("Hermes cycle (checkpoint, edit 10, restore)", median_ms(d_cyc), median_ms(g_cyc),
        ("ge", 10), "Hermes git")

    fmt = "%-46s %12s %12s %8s %14s %5s"
    print(fmt % ("operation", "decree", "reference", "ratio", "target", "ok?"))
    for label, d, r_, ratio, tgt, verdict, refname in rows:
        print(fmt % (label, "%.2f ms" % d, "%.2f ms" % r_, "%.2f" % ratio, tgt, verdict))
    print("   reference: the C library alone (bench/libloop.c, in-process) for the first four rows;")
    print("   the Hermes agent's git command sequence (bench/bindings.py HermesGit) for the cycle")
    if a.summary:
        with open(a.summary, "a") as f:
            for label, d, r_, ratio, tgt, verdict, refname in rows:
                if verdict != "-":
                    f.write("%s\tbindings\t%s\t%.2f ms\t%.2f ms\t%s\n" % (verdict, label.strip(), d, r_, tgt))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
