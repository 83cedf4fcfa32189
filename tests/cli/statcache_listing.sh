#!/bin/bash
# statcache_listing.sh - a warm stat cache never makes a scan stale.
#
# The stat cache (docs/scanning.md, docs/format.md) lets `checkpoint
# create` skip reading files whose stat data did not change, and a cache
# that also keeps directory listings would skip reading directories too.
# A stale entry means a checkpoint that silently misses a new file, keeps
# a deleted one or keeps old bytes.  The oracle of every check: what decree
# records with the warm cache of the project's own store is exactly what
# is on disk (a Python walk hashing every file, with the ignore rules the
# scenario set up) and has the tree id of a checkpoint made into a fresh
# store (no cache at all).
#
# Every scenario starts from a small tree, makes two checkpoints (the
# second one with the cache the first wrote), changes the tree and checks:
# `decree status` (exactly the changed paths), the new checkpoint (exit 0,
# nothing on stderr, exactly the files on disk; in the "sleep after"
# timing also the tree id of a fresh store's), a restore of the checkpoint
# before the change (its files back) and one more checkpoint after that
# restore (exactly the files on disk).
# Each scenario runs in three timings:
#   same second   both checkpoints and the change in one second (git's
#                 racy timestamps: changed in the second the cache was
#                 written), the new checkpoint at once
#   sleep before  1.1 s between the checkpoints and the change, the new
#                 checkpoint at once (changed since the cache, but within
#                 the second before the scan)
#   sleep after   the change at once, then 1.1 s before the new checkpoint:
#                 nothing is recent any more, so only the stat data the
#                 cache compares (mtime, ctime, inode, size) can reveal it
# The sleeps are shared: the scenarios are set up, warmed up and changed
# in phases, two workers at a time.  Beside them, a seeded random run:
# 2,000 files in 50 directories, 20 rounds of creates, deletes, edits,
# renames, mtime restores (DECREE_TEST_SEED replays, STATCACHE_SCENARIOS
# picks scenarios).  Writing helpers refuse paths outside $SCRATCH.
#
# What no black-box test can show: a cache without the racy rule fails
# only when a directory changes twice within one tick of the file system's
# clock, around the moment the scan reads it.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

PY=$SCRATCH/oracle.py
cat >"$PY" <<'EOF'
# The oracle: what is on disk, as lines "MODE SHA256 SIZE PATH" sorted by
# path bytes ("120000" and the target string's hash for a symlink; "S -
# SIZE PATH" for a file above a size limit), and helpers of the suite.
import hashlib, json, os, random, re, stat, sys

def walk(root, rel, out):
    d = os.path.join(root, rel) if rel else root
    for name in os.listdir(d):
        p = rel + '/' + name if rel else name
        if name == '.git' or (not rel and name == '.decree'):
            continue
        full = os.path.join(d, name)
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            t = os.fsencode(os.readlink(full))
            out.append(('120000', hashlib.sha256(t).hexdigest(), len(t), p))
        elif stat.S_ISDIR(st.st_mode):
            walk(root, p, out)
        elif stat.S_ISREG(st.st_mode):
            with open(full, 'rb') as f:
                data = f.read()
            out.append(('%o' % (st.st_mode & 0o777),
                        hashlib.sha256(data).hexdigest(), len(data), p))

def tree(root):
    out = []
    walk(root, '', out)
    return out

def key(e):
    return e[3].encode('utf-8', 'surrogateescape')

def view(entries, drop, maxsize):
    rx = re.compile(drop) if drop else None
    out = []
    for e in entries:
        if rx and rx.search(e[3]):
            continue
        if maxsize and e[0] not in ('120000', 'S') and e[2] > int(maxsize):
            e = ('S', '-', e[2], e[3])
        out.append(e)
    return sorted(out, key=key)

def fmt(entries):
    return ''.join('%s %s %d %s\n' % e for e in entries)

def load(path):
    out = []
    with open(path) as f:
        for line in f:
            m, h, s, p = line.rstrip('\n').split(' ', 3)
            out.append((m, h, int(s), p))
    return out

def save(path, entries):
    with open(path, 'w') as f:
        f.write(fmt(entries))

def show(doc):
    d = json.loads(doc)
    out = [(f['mode'], f['sha256'], f['size'], f['path']) for f in d['files']]
    out += [('S', '-', s['size'], s['path']) for s in d['skipped']]
    return sorted(out, key=key)

def namestatus(a, b):
    da = {e[3]: e for e in a}
    db = {e[3]: e for e in b}
    lines = []
    for p in set(da) | set(db):
        if p not in db:
            lines.append('D\t' + p)
        elif p not in da:
            lines.append('A\t' + p)
        elif da[p][:3] != db[p][:3]:
            lines.append('M\t' + p)
    return ''.join(l + '\n' for l in sorted(lines))

env = os.environ.get

def expect(vd, root):
    # after the change: what the checkpoint must hold, what diff must name
    pre = load(vd + '/pre_all')
    post = tree(root)
    save(vd + '/exp_c3', view(post, env('DROP_POST'), env('MAX_POST')))
    with open(vd + '/exp_ns', 'w') as f:
        f.write(namestatus(view(pre, env('DROP_PRE'), env('MAX_PRE')),
                           view(post, env('DROP_DIFF'), env('MAX_DIFF'))))

def after(vd, root):
    # after restoring the checkpoint before the change
    pre = load(vd + '/pre_all')
    now = tree(root)
    with open(vd + '/c3show.json') as f:
        save(vd + '/got_c3', show(f.read()))
    save(vd + '/got_restore', view(now, env('RESTORE_DROP'), env('MAX_PRE')))
    save(vd + '/exp_restore', view(pre, env('RESTORE_EXPECT_DROP'), env('MAX_PRE')))
    c4 = view(now, env('C4_DROP'), env('MAX_PRE'))
    save(vd + '/exp_c4', c4)
    c2 = view(pre, env('DROP_PRE'), env('MAX_PRE'))
    with open(vd + '/c4_is_c2', 'w') as f:
        f.write('1' if c4 == c2 else '0')

def damage(mode, files):
    # in place: the same inode, other bytes
    for path in files:
        with open(path, 'rb') as f:
            data = bytearray(f.read())
        if mode == 'truncate':
            data = data[:len(data) // 2]
        elif mode == 'zero':
            data = bytearray(len(data))
        elif mode == 'flip-middle':
            data[len(data) // 2] ^= 0xff
        elif mode == 'flip-header':
            data[min(12, len(data) - 1)] ^= 0xff
        with open(path, 'r+b') as f:
            f.seek(0)
            f.write(data)
            f.truncate(len(data))

# --- the random run: 2,000 files in 50 directories ---------------------------
def rand_setup(root, seed):
    rng = random.Random(seed)
    dirs = []
    for i in range(10):
        dirs.append('t%d' % i)
        dirs += ['t%d/s%d' % (i, j) for j in range(4)]
    for d in dirs:
        os.makedirs(os.path.join(root, d))
    for n in range(2000):
        with open(os.path.join(root, dirs[n % 50], 'f%04d' % n), 'wb') as f:
            f.write(rng.randbytes(rng.randint(0, 300)))
    with open(os.path.join(root, '.gitignore'), 'w') as f:
        f.write('*.log\n')

def rand_round(root, seed, rnd):
    rng = random.Random(seed * 1000003 + rnd)
    files, links, dirs = [], [], []
    for dp, dn, fn in os.walk(root):
        rel = os.path.relpath(dp, root)
        if rel == '.decree' or rel.startswith('.decree/'):
            continue
        if rel != '.':
            dirs.append(dp)
        for n in fn:
            p = os.path.join(dp, n)
            if n == '.gitignore' and rel == '.':
                continue
            (links if os.path.islink(p) else files).append(p)
        for n in dn:
            if os.path.islink(os.path.join(dp, n)):
                links.append(os.path.join(dp, n))
    ops = ['create', 'create', 'delete', 'edit', 'samesize', 'add_keep_dirtime',
           'del_keep_dirtime', 'rename_in', 'rename_across', 'mkdir', 'rmtree',
           'mvdir', 'chmod', 'log', 'symlink', 'unsymlink']
    done = []
    def alive(p):
        return os.path.lexists(p)
    def pick(lst):
        for _ in range(50):
            p = rng.choice(lst) if lst else None
            if p and alive(p):
                return p
        return None
    def keep_time(path, fn):
        st = os.lstat(path)
        fn()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    for k in range(rng.randint(1, 15)):
        op = rng.choice(ops)
        new = 'n%d_%d' % (rnd, k)
        f, d = pick(files), pick(dirs)
        if op == 'create' and d:
            with open(os.path.join(d, new), 'wb') as o:
                o.write(rng.randbytes(rng.randint(0, 300)))
        elif op == 'delete' and f:
            os.unlink(f)
        elif op == 'edit' and f:
            with open(f, 'ab') as o:
                o.write(rng.randbytes(rng.randint(1, 50)))
        elif op == 'samesize' and f and os.path.getsize(f) > 0:
            def rewrite():
                with open(f, 'r+b') as o:
                    b = bytearray(o.read())
                    b[rng.randrange(len(b))] ^= 0x5a
                    o.seek(0)
                    o.write(b)
            keep_time(f, rewrite)
        elif op == 'add_keep_dirtime' and d:
            keep_time(d, lambda: open(os.path.join(d, new), 'wb').write(b'kept time\n'))
        elif op == 'del_keep_dirtime' and f:
            keep_time(os.path.dirname(f), lambda: os.unlink(f))
        elif op == 'rename_in' and f:
            g = os.path.join(os.path.dirname(f), new)
            if rng.random() < 0.5:
                keep_time(os.path.dirname(f), lambda: os.rename(f, g))
            else:
                os.rename(f, g)
        elif op == 'rename_across' and f and d:
            os.rename(f, os.path.join(d, new))
        elif op == 'mkdir' and d and d.count('/') - root.count('/') < 5:
            nd = os.path.join(d, 'd' + new)
            os.mkdir(nd)
            for i in range(rng.randint(0, 4)):
                with open(os.path.join(nd, 'g%d' % i), 'wb') as o:
                    o.write(rng.randbytes(rng.randint(0, 100)))
            dirs.append(nd)
        elif op == 'rmtree' and d and len([x for x in dirs if alive(x)]) > 30:
            import shutil
            shutil.rmtree(d)
        elif op == 'mvdir' and d:
            t = pick(dirs)
            if t and not (t + '/').startswith(d + '/'):
                os.rename(d, os.path.join(t, 'm' + new))
        elif op == 'chmod' and f:
            os.chmod(f, 0o755 if os.stat(f).st_mode & 0o100 == 0 else 0o644)
        elif op == 'log' and d:
            with open(os.path.join(d, new + '.log'), 'w') as o:
                o.write('ignored\n')
        elif op == 'symlink' and f:
            os.unlink(f)
            os.symlink('target-' + new, f)
        elif op == 'unsymlink':
            l = pick(links)
            if l:
                os.unlink(l)
                with open(l, 'w') as o:
                    o.write('was a link\n')
        else:
            continue
        done.append(op)
    print(' '.join(done))

def jailed(path):
    # what this script writes or changes must lie in the test's scratch
    # directory (ORACLE_JAIL), whatever the caller's working directory
    jail = os.path.realpath(os.environ['ORACLE_JAIL'])
    real = os.path.realpath(path)
    if not os.path.isabs(path) or not real.startswith(jail + '/'):
        raise ValueError('refusing to change %r: not an absolute path in %r' % (path, jail))
    return path

def run(argv):
    cmd, a = argv[0], argv[1:]
    written = {'tree': a[1:2], 'show': a[1:2], 'ns': a[2:3], 'expect': a[:1],
               'after': a[:1], 'damage': a[1:], 'rand-setup': a[:1],
               'rand-round': a[:1] + a[3:4]}
    for path in written.get(cmd, []):
        jailed(path)
    if cmd == 'tree':  # DIR OUT [DROP [MAX]]
        save(a[1], view(tree(a[0]), *(a[2:4] + ['', ''])[:2]))
    elif cmd == 'show':  # JSONFILE OUT
        with open(a[0]) as f:
            save(a[1], show(f.read()))
    elif cmd == 'ns':  # A B OUT
        with open(a[2], 'w') as f:
            f.write(namestatus(load(a[0]), load(a[1])))
    elif cmd == 'expect':
        expect(a[0], a[1])
    elif cmd == 'after':
        after(a[0], a[1])
    elif cmd == 'damage':
        damage(a[0], a[1:])
    elif cmd == 'rand-setup':
        rand_setup(a[0], int(a[1]))
    elif cmd == 'rand-round':  # DIR SEED ROUND OPSFILE
        sys.stdout = open(a[3], 'w')
        try:
            rand_round(a[0], int(a[1]), int(a[2]))
        finally:
            sys.stdout.close()
            sys.stdout = sys.__stdout__
    else:
        raise ValueError('unknown command ' + cmd)

if sys.argv[1] == 'serve':
    # one command a line, fields split by tabs, "@NAME=VALUE" fields set
    # the environment; answers "ok" or "error: ..." on a line
    for line in sys.stdin:
        fields = line.rstrip('\n').split('\t')
        for f in fields:
            if f.startswith('@'):
                k, v = f[1:].split('=', 1)
                os.environ[k] = v
        try:
            run([f for f in fields if not f.startswith('@')])
            print('ok', flush=True)
        except Exception as e:
            print('error: %r' % e, flush=True)
else:
    run(sys.argv[1:])
EOF
# the interpreter itself, not a wrapper (a pyenv shim costs 0.2 s a call)
PYTHON=$(python3 -c 'import sys; print(sys.executable)')
py() { "$PYTHON" "$PY" "$@"; }
# pyc CMD ARG...: the same, by the worker's oracle process (no start-up
# cost each time); the scenario's DROP_* and MAX_* go with each command
pyc() {
	local IFS=$'\t' reply v line
	line="$*"
	for v in DROP_PRE DROP_POST DROP_DIFF RESTORE_DROP RESTORE_EXPECT_DROP C4_DROP MAX_PRE MAX_POST MAX_DIFF; do
		line="$line"$'\t'"@$v=${!v-}"
	done
	printf '%s\n' "$line" >&"${PYS[1]}"
	read -r reply <&"${PYS[0]}"
	[ "$reply" = ok ] || { echo "# oracle: $* -> $reply"; return 1; }
}
start_oracle() { coproc PYS { cd "$SCRATCH" && exec "$PYTHON" "$PY" serve; }; }
export ORACLE_JAIL=$SCRATCH
BASE_ASAN=${ASAN_OPTIONS:-}

# Each worker runs commands with its own capture files (lib.sh's _run
# writes to $SCRATCH/.out, which two workers would share).
RUNDIR=$SCRATCH
_run() {
	"$@" >"$RUNDIR/.out" 2>"$RUNDIR/.err"
	RC=$?
	OUT=$(<"$RUNDIR/.out")
	ERR=$(<"$RUNDIR/.err")
}
# decree as the scenario runs it: maybe as another user, maybe with a store
# outside the project
dc() { $RUNAS "$DECREE" ${STORE_OPT:+--store "$STORE_OPT"} "$@"; }
USER_RUN="setpriv --reuid=65534 --regid=65534 --clear-groups"

# --- the tree every scenario starts from ---------------------------------------
base_tree() {
	mkdir -p a/b/c/d a/empty s k
	printf 'top\n' >top.txt
	printf 'xxxx\n' >a/x
	printf 'zzzz\n' >a/z
	printf 'yyyy\n' >a/b/y
	printf '\000\001\002bin\377' >a/b/bin.dat
	printf 'deep\n' >a/b/c/d/e.txt
	printf 'eff\n' >a/b/c/f.txt
	printf 'one\n' >s/one
	printf 'two\n' >s/two
	printf 'k1\n' >k/k1
	printf 'k2\n' >k/k2
	printf '#!/bin/sh\n' >k/run.sh && chmod 755 k/run.sh
	ln -s a/x lnk
	ln -s s dlnk
}
# stat data kept aside (touch -r), to give a path its old mtime back
stamp_name() { printf '%s/stamps/%s' "$VD" "$(printf '%s' "$1" | tr /. %_)"; }
stamp_save() {
	local f
	f=$(stamp_name "$1")
	: >"$f" && touch -h -r "$1" "$f"
}
stamp_restore() { touch -h -r "$(stamp_name "$1")" "$1"; }

# --- scenarios: mut_X changes the tree (run in the project, set -e);
# pre_X adds to the base tree; par_X sets what the oracle must apply:
#   DROP_PRE/DROP_POST  regex of paths the rules exclude before/after
#   DROP_DIFF           ... as `diff` against the checkpoint before sees them
#   RESTORE_DROP        ... after restoring that checkpoint (its rules);
#   RESTORE_EXPECT_DROP ... applied to the tree before (default the same)
#   C4_DROP             ... for the checkpoint made after that restore
#   MAX_PRE/MAX_POST    size limits; CREATE_OPTS/CREATE_OPTS3 options of the
#                       warm-up checkpoints / of the one after the change
SCENARIOS=""
scen() { SCENARIOS="$SCENARIOS $1"; }

scen create_file
mut_create_file() { printf 'new\n' >a/b/new.txt; }
scen create_in_empty_dir
mut_create_in_empty_dir() { printf 'n\n' >a/empty/n; }
scen delete_file
mut_delete_file() { rm a/b/y; }
scen rename_in_dir
mut_rename_in_dir() { mv a/b/y a/b/y2; }
scen rename_across_dirs
mut_rename_across_dirs() { mv a/b/y s/y; }
scen rename_over_file
mut_rename_over_file() { mv a/x a/z; }
scen rename_dir
mut_rename_dir() { mv a/b a/bb; }
scen dir_becomes_file
mut_dir_becomes_file() { rm -r s && printf 's is a file\n' >s; }
scen file_becomes_dir
mut_file_becomes_dir() { rm a/x && mkdir a/x && printf 'in\n' >a/x/in; }
scen file_becomes_symlink
mut_file_becomes_symlink() { rm a/x && ln -s b/y a/x; }
scen symlink_becomes_file
mut_symlink_becomes_file() { rm lnk && printf 'lnk\n' >lnk; }
scen dir_becomes_symlink
mut_dir_becomes_symlink() { rm -r s && ln -s k s; }
scen symlink_becomes_dir
mut_symlink_becomes_dir() { rm dlnk && mkdir dlnk && printf 'd\n' >dlnk/d; }
scen deep_dir_created
mut_deep_dir_created() { mkdir -p a/b/c/d/g/h/i && printf 'deep\n' >a/b/c/d/g/h/i/deep.txt; }
scen deep_dir_removed
mut_deep_dir_removed() { rm -r a/b/c/d; }
scen dir_recreated_same_mtime # the new directory may get the old inode number
mut_dir_recreated_same_mtime() {
	stamp_save k && stamp_save k/k1
	rm -r k && mkdir k && printf 'K1\n' >k/k1 && printf 'k3\n' >k/k3
	stamp_restore k/k1 && stamp_restore k
}
scen add_then_dir_mtime_restored_touch_r
mut_add_then_dir_mtime_restored_touch_r() { stamp_save a/b && printf 'new\n' >a/b/new && stamp_restore a/b; }
scen remove_then_dir_mtime_restored_touch_d
mut_remove_then_dir_mtime_restored_touch_d() {
	m=$(stat -c %.9Y a/b) && rm a/b/y && touch -d "@$m" a/b
	[ "$(stat -c %.9Y a/b)" = "$m" ]
}
scen rename_then_dir_mtime_restored
mut_rename_then_dir_mtime_restored() { stamp_save a/b && mv a/b/y a/b/w && stamp_restore a/b; }
scen same_size_edit_file_mtime_restored
mut_same_size_edit_file_mtime_restored() { stamp_save a/x && printf 'XxXx\n' >a/x && stamp_restore a/x; }
scen file_recreated_same_size_mtime # the new file may get the old inode number
mut_file_recreated_same_size_mtime() {
	stamp_save a/b && stamp_save a/b/y
	rm a/b/y && printf 'YYYY\n' >a/b/y && stamp_restore a/b/y && stamp_restore a/b
}
scen file_chmod
mut_file_chmod() { chmod 700 a/b/y; }
scen dir_stat_only_changes # touched and chmodded, no content change
mut_dir_stat_only_changes() { touch a a/b s && chmod 700 a/b/c; }
scen files_swapped_dir_mtime_restored
mut_files_swapped_dir_mtime_restored() { stamp_save a && mv a/x a/t && mv a/z a/x && mv a/t a/z && stamp_restore a; }
scen dirs_swapped_root_mtime_restored
mut_dirs_swapped_root_mtime_restored() { stamp_save . && mv s t && mv k s && mv t k && stamp_restore .; }
scen hard_link_added
mut_hard_link_added() { ln top.txt a/b/hard; }

# ignore rules
scen gitignore_ignores_new_file
mut_gitignore_ignores_new_file() { printf 'n\n' >a/b/new.log && printf '*.log\n' >a/.gitignore; }
par_gitignore_ignores_new_file() { DROP_POST='^a/.*\.log$'; }
scen gitignore_unignores
pre_gitignore_unignores() { printf '*.log\n' >a/.gitignore && printf 'old\n' >a/b/old.log; }
mut_gitignore_unignores() { printf 'n\n' >a/b/new.log && rm a/.gitignore; }
par_gitignore_unignores() { DROP_PRE='^a/.*\.log$' DROP_POST=; }
scen gitignore_added_deep
mut_gitignore_added_deep() { printf 'e*\n' >a/b/c/d/.gitignore; }
par_gitignore_added_deep() { DROP_POST='^a/b/c/d/e[^/]*$'; }
scen gitignore_ignores_dir
mut_gitignore_ignores_dir() { printf 'b/\n' >a/.gitignore; }
par_gitignore_ignores_dir() { DROP_POST='^a/b/'; }
scen gitignore_same_size_edit_mtime_restored
pre_gitignore_same_size_edit_mtime_restored() {
	printf '*.log\n' >a/.gitignore && printf 'l\n' >a/b/old.log && printf 't\n' >a/b/old.tmp
}
mut_gitignore_same_size_edit_mtime_restored() { stamp_save a/.gitignore && printf '*.tmp\n' >a/.gitignore && stamp_restore a/.gitignore; }
par_gitignore_same_size_edit_mtime_restored() { DROP_PRE='^a/.*\.log$' DROP_POST='^a/.*\.tmp$'; }
scen decreeignore_reincludes
pre_decreeignore_reincludes() { printf '*.log\n' >.gitignore && printf 'old\n' >a/b/old.log; }
mut_decreeignore_reincludes() { printf 'n\n' >a/b/new.log && printf '!*.log\n' >.decreeignore; }
par_decreeignore_reincludes() { DROP_PRE='\.log$' DROP_POST=; }
scen decreeignore_ignores_dir
mut_decreeignore_ignores_dir() { printf 'k/\n' >.decreeignore; }
par_decreeignore_ignores_dir() { DROP_POST='^k/'; }
scen builtin_ignored_name
mut_builtin_ignored_name() { mv a/b a/node_modules; }
par_builtin_ignored_name() { DROP_PRE='^a/node_modules/' DROP_POST='^a/node_modules/'; }
scen builtin_ignored_name_left
pre_builtin_ignored_name_left() { mkdir a/node_modules && printf 'm\n' >a/node_modules/m.js; }
mut_builtin_ignored_name_left() { mv a/node_modules a/nm; }
par_builtin_ignored_name_left() { DROP_PRE='^a/node_modules/' DROP_POST='^a/node_modules/'; }
# config.yml excludes: no directory of the tree changes.  A checkpoint
# records the config's excludes it was made with, and diff and restore
# against it see the tree through those, not through today's config: a
# file excluded back then is neither reported nor deleted after the
# exclude is dropped, and one excluded only today is compared as before
# (the checkpoint after the restore, c4, uses today's config again).
scen config_exclude_added
mut_config_exclude_added() {
	printf 'n\n' >a/b/new.txt
	printf 'checkpoint:\n  exclude:\n    - "*.txt"\n' >.decree/config.yml
}
par_config_exclude_added() { DROP_POST='\.txt$' C4_DROP='\.txt$'; }
scen config_exclude_removed
pre_config_exclude_removed() {
	mkdir -p .decree && printf 'checkpoint:\n  exclude:\n    - "*.tmp"\n' >.decree/config.yml
	printf 'old\n' >a/b/old.tmp
}
mut_config_exclude_removed() { printf 'n\n' >a/b/new.tmp && rm .decree/config.yml; }
par_config_exclude_removed() { DROP_PRE='\.tmp$' C4_DROP=; }
# --exclude and --max-file-size of one create, not of the next
scen create_exclude_then_none
mut_create_exclude_then_none() { printf 'n\n' >a/b/new.txt && printf 'n\n' >a/b/new.dat && rm a/b/c/f.txt; }
par_create_exclude_then_none() { CREATE_OPTS='--exclude=*.txt' DROP_PRE='\.txt$'; }
scen create_none_then_exclude
mut_create_none_then_exclude() { printf 'n\n' >a/b/new.txt && printf 'n\n' >a/b/new.dat; }
par_create_none_then_exclude() { CREATE_OPTS3='--exclude=*.txt' DROP_POST='\.txt$'; }
scen create_size_limit_then_none
pre_create_size_limit_then_none() { head -c 200 /dev/zero | tr '\0' b >a/big.bin; }
mut_create_size_limit_then_none() { printf 'new\n' >a/b/new && rm a/b/y; }
par_create_size_limit_then_none() { CREATE_OPTS='--max-file-size=100' MAX_PRE=100; }
scen create_none_then_size_limit
pre_create_none_then_size_limit() { head -c 200 /dev/zero | tr '\0' b >a/big.bin; }
mut_create_none_then_size_limit() { printf 'new\n' >a/b/new && head -c 150 /dev/zero >a/b/grow; }
par_create_none_then_size_limit() { CREATE_OPTS3='--max-file-size=100' MAX_POST=100; }
# The rules take a whole subdirectory (a/b/c/d) out of the tree or back
# in while no directory changes: a/b/c stays clean, but the tree id its
# record keeps (docs/format.md) is no longer a/b/c's tree.
scen config_exclude_subdir_only
mut_config_exclude_subdir_only() { printf 'checkpoint:\n  exclude:\n    - "a/b/c/d/"\n' >.decree/config.yml; }
par_config_exclude_subdir_only() { DROP_POST='^a/b/c/d/' C4_DROP='^a/b/c/d/'; }
scen config_exclude_subdir_removed
pre_config_exclude_subdir_removed() { mkdir -p .decree && printf 'checkpoint:\n  exclude:\n    - "a/b/c/d/"\n' >.decree/config.yml; }
mut_config_exclude_subdir_removed() { rm .decree/config.yml; }
par_config_exclude_subdir_removed() { DROP_PRE='^a/b/c/d/' C4_DROP=; }
scen create_exclude_subdir_then_none
mut_create_exclude_subdir_then_none() { :; }
par_create_exclude_subdir_then_none() { CREATE_OPTS='--exclude=a/b/c/d/' DROP_PRE='^a/b/c/d/'; }
scen create_none_then_exclude_subdir
mut_create_none_then_exclude_subdir() { :; }
par_create_none_then_exclude_subdir() { CREATE_OPTS3='--exclude=a/b/c/d/' DROP_POST='^a/b/c/d/'; }
scen gitignore_ignores_subdir_only
pre_gitignore_ignores_subdir_only() { printf '*.log\n' >.gitignore; }
mut_gitignore_ignores_subdir_only() { printf 'd/\n' >>.gitignore; }
# (status and diff see the tree through the checkpoint's own ignore files)
par_gitignore_ignores_subdir_only() { DROP_POST='^a/b/c/d/'; }

# unreadable directories: as root the scan still reads them; as another
# user every create fails, with or without a cache, until they are back
if [ "$(id -u)" = 0 ]; then
	scen unreadable_dir_as_root
	mut_unreadable_dir_as_root() { stamp_save a/b && printf 'new\n' >a/b/new && stamp_restore a/b && chmod 000 a/b; }
	if $USER_RUN true 2>/dev/null; then
		scen unreadable_dir_as_user
		par_unreadable_dir_as_user() { RUNAS=$USER_RUN; }
	fi
else
	scen unreadable_dir_as_user
fi
mut_unreadable_dir_as_user() {
	stamp_save a/b && printf 'new\n' >a/b/new && chown --reference=a/b a/b/new && stamp_restore a/b && chmod 000 a/b
}
precheck_unreadable_dir_as_user() {
	local m label=$1
	for m in 000 311 644; do # nothing, no listing, no lookups
		chmod $m a/b
		_run dc checkpoint create
		local warm="exit $RC: $ERR"
		cold_store
		STORE_OPT=$COLD _run dc checkpoint create
		same "$label: chmod $m a/b: create with the warm cache fails as one with no cache does" "$warm" "exit $RC: $ERR"
		case $RC in 0) not_ok "$label: chmod $m a/b: the create should fail as another user" ;; esac
	done
	chmod 755 a/b
	_run dc checkpoint list
	same "$label: no checkpoint was made while a/b was unreadable" "$(printf '%s\n' "$OUT" | grep -c .)" 2
}

# the project moved or copied (inode numbers change with a copy, mtimes not)
scen project_moved
mut_project_moved() {
	stamp_save a/b && cd .. && mv p p2 && echo "$VD/p2" >"$VD/pdir" && cd p2
	printf 'new\n' >a/b/new && stamp_restore a/b
}
scen project_copied
mut_project_copied() {
	stamp_save a/b && printf 'new\n' >a/b/new && rm a/b/y && stamp_restore a/b
	cd .. && cp -a p p2 && echo "$VD/p2" >"$VD/pdir"
}
scen project_copied_then_changed
mut_project_copied_then_changed() {
	cd .. && cp -a p p2 && echo "$VD/p2" >"$VD/pdir" && cd p2
	printf 'new\n' >a/b/new && touch -r ../p/a/b a/b
	printf 'XxXx\n' >a/x && touch -r ../p/a/x a/x
}
scen project_moved_outside_store
par_project_moved_outside_store() { STORE_OPT=$VD/store; }
mut_project_moved_outside_store() {
	stamp_save a/b && cd .. && mv p p2 && dc -q projects move p p2 && echo "$VD/p2" >"$VD/pdir" && cd p2
	printf 'new\n' >a/b/new && stamp_restore a/b
}
scen project_copied_outside_store
par_project_copied_outside_store() { STORE_OPT=$VD/store; }
mut_project_copied_outside_store() {
	stamp_save a/b && printf 'new\n' >a/b/new && rm a/b/y && stamp_restore a/b
	cd .. && cp -a p p2 && rm -rf p && dc -q projects move p p2 && echo "$VD/p2" >"$VD/pdir"
}

# a damaged cache (every roots/<key>/statcache* file) is ignored
damage_mut() {
	stamp_save a/b && stamp_save a/b/c
	printf 'new\n' >a/b/new && rm a/b/c/f.txt && stamp_restore a/b && stamp_restore a/b/c
}
damage_post() { # in the worker's shell: its oracle process damages the files
	local f n=0
	for f in "$P"/.decree/store/roots/*/statcache*; do
		[ -f "$f" ] && n=$((n + 1)) && pyc damage "$1" "$f"
	done
	[ $n -gt 0 ] || { echo "no stat cache file in .decree/store/roots/*/"; return 1; }
}
for d in truncate zero flip-middle flip-header; do
	n=statcache_damaged_${d//-/_}
	scen "$n"
	eval "mut_$n() { damage_mut; }; postmut_$n() { damage_post $d; }"
done

# --- running one scenario -------------------------------------------------------
params() {
	SCEN=$1
	DROP_PRE= DROP_POST= MAX_PRE= MAX_POST= CREATE_OPTS= CREATE_OPTS3= RUNAS= STORE_OPT=
	unset DROP_DIFF RESTORE_DROP RESTORE_EXPECT_DROP C4_DROP MAX_DIFF
	if declare -F "par_$SCEN" >/dev/null; then "par_$SCEN"; fi
	: "${DROP_DIFF=$DROP_PRE}" "${RESTORE_DROP=$DROP_PRE}" "${C4_DROP=$RESTORE_DROP}" "${MAX_DIFF=$MAX_PRE}"
	: "${RESTORE_EXPECT_DROP=$RESTORE_DROP}"
}
# variant V = SCENARIO.TIMING, in $SCRATCH/v/V
enter() {
	V=$1 VD=$SCRATCH/v/$1
	params "${V%.*}"
	TIMING=${V##*.}
	case $TIMING in same) tl="same second" ;; before) tl="sleep before the change" ;; after) tl="sleep after the change" ;; esac
	LABEL="$SCEN ($tl)"
	# LeakSanitizer doubles the cost of a decree call (it stops the world
	# at exit): the "sleep after" runs of every scenario and the random
	# run keep it, the two other timings (the same code paths) do not
	case $TIMING in after) export ASAN_OPTIONS=$BASE_ASAN ;; *) export ASAN_OPTIONS=$BASE_ASAN${BASE_ASAN:+:}detect_leaks=0 ;; esac
	P=$(<"$VD/pdir")
	cd "$P" || { not_ok "$LABEL: no project directory $P"; return 1; }
}
NCOLD=0
cold_store() { # a fresh store: no cache at all
	NCOLD=$((NCOLD + 1))
	COLD=$VD/cold.$BASHPID.$NCOLD
	mkdir "$COLD" && { [ -z "$RUNAS" ] || chown 65534:65534 "$COLD"; }
}
ids() { # the id and tree of a create --json
	ID= TREE=
	[[ $1 =~ \"id\":\"([0-9a-f]+)\" ]] && ID=${BASH_REMATCH[1]}
	[[ $1 =~ \"tree\":\"([0-9a-f]+)\" ]] && TREE=${BASH_REMATCH[1]}
}

make_tree() { # the scenario's tree in $VD/p: a copy of the base tree, and its own part
	local s=${V%.*}
	mkdir -p "$VD/stamps" && echo "$VD/p" >"$VD/pdir" && cp -a "$SCRATCH/base" "$VD/p" &&
		(cd "$VD/p" && if declare -F "pre_$s" >/dev/null; then "pre_$s"; fi) ||
		not_ok "$s: setting up the tree failed"
	case $s in *as_user) [ "$(id -u)" = 0 ] && chown -R 65534:65534 "$VD/p" ;; esac
}
ph_setup() { local V=$1 VD=$SCRATCH/v/$1; make_tree; }
# two checkpoints: the first writes the cache, the second uses it
warm_up1() {
	_run dc checkpoint create $CREATE_OPTS
	[ $RC -eq 0 ] || { not_ok "$LABEL: warm-up checkpoint 1" "exit $RC: $ERR"; return 1; }
}
warm_up2() {
	_run dc --json checkpoint create $CREATE_OPTS
	[ $RC -eq 0 ] || { not_ok "$LABEL: warm-up checkpoint 2" "exit $RC: $ERR"; return 1; }
	ids "$OUT"
	echo "$ID" >"$VD/c2" && echo "$TREE" >"$VD/tree2"
}
mutate() {
	(set -e; "mut_$SCEN") >"$RUNDIR/.mut" 2>&1 || { not_ok "$LABEL: the change itself failed" "$(<"$RUNDIR/.mut")"; return 1; }
	P=$(<"$VD/pdir") && cd "$P" || return 1
	if declare -F "postmut_$SCEN" >/dev/null; then
		"postmut_$SCEN" >"$RUNDIR/.mut" 2>&1 || { not_ok "$LABEL: the change itself failed" "$(<"$RUNDIR/.mut")"; return 1; }
	fi
	return 0
}
ph_warm() { # sleep before / after: warm up (and for "after", change) now
	enter "$1" || return
	pyc tree "$P" "$VD/pre_all"
	warm_up1 && warm_up2 || return
	[ "$TIMING" = after ] && mutate
}
ph_same() { # both checkpoints (the cache written) and the change in one second
	local try s0 f
	enter "$1" || return
	for try in 1 2 3 4; do
		pyc tree "$P" "$VD/pre_all"
		# start early in a second (two creates and the change take well under 0.4 s;
		# on a busy machine, at the very start of one), but not in its
		# first 20 ms: file times come from a coarse clock that lags
		while :; do
			f=${EPOCHREALTIME#*.}
			[ "$f" -ge 20000 ] && [ "$f" -le $((try == 1 ? 400000 : 100000)) ] && break
			sleep 0.01
		done
		s0=${EPOCHREALTIME%.*}
		warm_up1 && warm_up2 || return
		mutate || return
		[ "$s0" = "${EPOCHREALTIME%.*}" ] && break
		echo "# $LABEL: the checkpoint and the change fell in two seconds; again"
		[ $try = 4 ] && { not_ok "$LABEL: could not make the change in the second of the checkpoint (4 tries)"; return; }
		cd "$VD" && rm -rf "$VD/p" "$VD/p2" "$VD/store" "$VD"/cold.* && make_tree &&
			cd "$VD/p" && P=$VD/p && sleep 1.1
	done
	check_variant
}
ph_check() {
	enter "$1" || return
	[ -s "$VD/c2" ] || return # the warm-up failed (and said so)
	if [ "$TIMING" = before ]; then mutate || return; fi
	check_variant
}

check_variant() {
	local c2 t3 got
	c2=$(<"$VD/c2")
	if declare -F "precheck_$SCEN" >/dev/null; then "precheck_$SCEN" "$LABEL"; fi
	pyc expect "$VD" "$P"
	# status against the checkpoint before the change: exactly the changes
	_run dc status
	got=$(printf '%s\n' "$OUT" | sed -n 's/^  \([AMD]\) /\1\t/p' | LC_ALL=C sort)
	same "$LABEL: status names exactly the changed paths" "$got" "$(LC_ALL=C sort "$VD/exp_ns")"

	_run dc --json checkpoint create $CREATE_OPTS3
	ids "$OUT"
	t3=$TREE
	# nothing on stderr but the notice of files above a size limit
	ERR=$(printf '%s\n' "$ERR" | grep -v '^decree: notice: .* above the size limit')
	if [ $RC -eq 0 ] && [ -n "$ID" ] && [ -z "$ERR" ]; then ok "$LABEL: checkpoint create with the warm cache: exit 0, nothing on stderr"
	else not_ok "$LABEL: checkpoint create with the warm cache: exit 0, nothing on stderr" "exit $RC: $OUT $ERR"; fi
	dc --json checkpoint show "$ID" >"$VD/c3show.json" 2>"$RUNDIR/.err"
	if [ "$TIMING" = after ]; then # (the oracle above is the same in all timings)
		cold_store
		STORE_OPT=$COLD _run dc --json checkpoint create $CREATE_OPTS3
		ids "$OUT"
		same "$LABEL: the tree id is that of a scan with no stat cache (fresh store)" "$t3" "$TREE"
	fi

	_run dc checkpoint restore "$c2"
	if [ $RC -eq 0 ]; then ok "$LABEL: restore of the checkpoint before the change"; else not_ok "$LABEL: restore of the checkpoint before the change" "exit $RC: $ERR"; fi
	pyc after "$VD" "$P"
	same "$LABEL: the checkpoint holds exactly the files on disk (paths, modes, sha256, sizes)" "$(<"$VD/got_c3")" "$(<"$VD/exp_c3")"
	same "$LABEL: the restore gave the files of the checkpoint before the change back" "$(<"$VD/got_restore")" "$(<"$VD/exp_restore")"
	_run dc --json checkpoint create $CREATE_OPTS
	ids "$OUT"
	if [ "$(<"$VD/c4_is_c2")" = 1 ]; then
		same "$LABEL: a checkpoint after the restore has the tree id of the one before the change" "$TREE" "$(<"$VD/tree2")"
	else
		dc --json checkpoint show "$ID" >"$VD/c4show.json" 2>"$RUNDIR/.err"
		pyc show "$VD/c4show.json" "$VD/got_c4"
		same "$LABEL: a checkpoint after the restore holds exactly the files on disk" "$(<"$VD/got_c4")" "$(<"$VD/exp_c4")"
	fi
	# done with it: its files go now, in this worker, not all at the end
	cd "$SCRATCH" && [ "${DECREE_TEST_PRESERVE:-0}" = 1 ] || rm -rf "$VD"
}

# --- the random run ----------------------------------------------------------------
SEED=${DECREE_TEST_SEED:-$((EPOCHSECONDS ^ $$))}
random_run() {
	local R=$SCRATCH/rand r back what
	VD=$R RUNAS= STORE_OPT= DROP_PRE= DROP_POST=
	start_oracle
	mkdir -p "$R" && py rand-setup "$R/p" "$SEED" && cd "$R/p" || { not_ok "random run: setup"; return; }
	_run dc checkpoint create
	sleep 1.1
	_run dc --json checkpoint create
	[ $RC -eq 0 ] || { not_ok "random run: warm-up" "$ERR"; return; }
	pyc tree "$R/p" "$R/view.0" '\.log$'
	local prev=0
	for r in $(seq 1 20); do
		pyc rand-round "$R/p" "$SEED" "$r" "$R/ops"
		what="random round $r (DECREE_TEST_SEED=$SEED; $(<"$R/ops"))"
		# every third round, the changes are a second old when the scan looks
		[ $((r % 3)) = 0 ] && sleep 1.1
		pyc tree "$R/p" "$R/view.$r" '\.log$'
		pyc ns "$R/view.$prev" "$R/view.$r" "$R/ns"
		_run dc diff --name-status
		same "$what: diff --name-status names exactly the changed paths" "$(printf '%s\n' "$OUT" | LC_ALL=C sort)" "$(LC_ALL=C sort "$R/ns")"
		_run dc --json checkpoint create
		ids "$OUT"
		echo "$ID $TREE" >"$R/ck.$r"
		[ $RC -eq 0 ] && [ -z "$ERR" ] || not_ok "$what: create exits 0 and says nothing" "exit $RC: $ERR"
		dc --json checkpoint show "$ID" >"$R/show.json"
		pyc show "$R/show.json" "$R/got"
		same "$what: the checkpoint holds exactly the files on disk" "$(<"$R/got")" "$(<"$R/view.$r")"
		if [ $((r % 5)) = 0 ]; then
			cold_store
			STORE_OPT=$COLD _run dc --json checkpoint create
			local t=$TREE
			ids "$OUT"
			same "$what: the tree id is that of a scan with no stat cache" "$TREE" "$t"
		fi
		prev=$r
		if [ $((r % 10)) = 0 ]; then # back to an earlier round, and on from there
			back=$((r - 6))
			read -r ID TREE <"$R/ck.$back"
			_run dc checkpoint restore "$ID"
			[ $RC -eq 0 ] || not_ok "random round $r: restore round $back" "exit $RC: $ERR"
			pyc tree "$R/p" "$R/now" '\.log$'
			same "random round $r (seed $SEED): restore of round $back gives its files back" "$(<"$R/now")" "$(<"$R/view.$back")"
			local t=$TREE
			_run dc --json checkpoint create
			ids "$OUT"
			same "random round $r (seed $SEED): a checkpoint after that restore has round $back's tree id" "$TREE" "$t"
			prev=$back
		fi
	done
}

# --- run -----------------------------------------------------------------------------
# replay a worker's TAP lines under this script's numbering
replay() {
	local line last=
	while IFS= read -r line; do
		last=$line
		case $line in
		"# worker finished") ;;
		"ok "*) ok "${line#ok * - }" ;;
		"not ok "*) not_ok "${line#not ok * - }" ;;
		"#"*) printf '%s\n' "$line" ;;
		*) printf '#   %s\n' "$line" ;;
		esac
	done <"$1"
	[ "$last" = "# worker finished" ] || not_ok "a worker ($1) died before its end"
}
# par FUNC VARIANT...: FUNC on each, in two workers
par() {
	local func=$1 w pids=
	shift
	for w in 0 1; do
		(
			RUNDIR=$SCRATCH/w$w
			mkdir -p "$RUNDIR"
			start_oracle
			j=0
			for v in "$@"; do
				[ $((j % 2)) = $w ] && "$func" "$v"
				j=$((j + 1))
			done
			echo "# worker finished"
		) >"$SCRATCH/tap.$w" 2>&1 &
		pids="$pids $!"
	done
	wait $pids
	for w in 0 1; do
		replay "$SCRATCH/tap.$w"
	done
}

echo "# random run: DECREE_TEST_SEED=$SEED"
start=$EPOCHREALTIME
(RUNDIR=$SCRATCH/wr && mkdir -p "$RUNDIR" && random_run; echo "# worker finished") >"$SCRATCH/tap.random" 2>&1 &
RANDOM_PID=$!

[ "$(id -u)" = 0 ] && chmod 711 "$SCRATCH" # the user scenarios' decree runs as nobody
ALL= SAME= LATER=
# STATCACHE_SCENARIOS="a b": only those scenarios (when debugging one)
for s in ${STATCACHE_SCENARIOS:-$SCENARIOS}; do
	ALL="$ALL $s.same $s.before $s.after"
	SAME="$SAME $s.same"
	LATER="$LATER $s.before $s.after"
done
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
phase() { echo "# $(since "$start") s: $*"; }
mkdir -p "$SCRATCH/base" "$SCRATCH/v" && (cd "$SCRATCH/base" && base_tree && mkdir .decree) || not_ok "the base tree"
par ph_setup $ALL
phase "setup: done"
sleep 1.1 # every tree is a second old: the cache trusts it
par ph_warm $LATER
warmed=$EPOCHREALTIME
phase "warm: done"
par ph_same $SAME
phase "same: done"
# at least 1.1 s between the warm-ups (and "after" changes) and what follows
sleep "$(awk -v a="$warmed" -v b="$EPOCHREALTIME" 'BEGIN { d = 1.1 - (b - a); print (d > 0 ? d : 0) }')"
par ph_check $LATER
phase "check: done"

wait $RANDOM_PID
replay "$SCRATCH/tap.random"
echo "# $(since "$start") s in all"
done_testing
