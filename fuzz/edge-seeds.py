#!/usr/bin/env python3
# fuzz/edge-seeds.py OUT - hand-made edge-case seeds for the file targets.
#
# Run after fuzz/seeds.sh OUT (the pack edge cases are mutations of the
# smallest real pack it wrote).  Writes OUT/<target>/edge-* in each
# target's input layout (fuzz/common.h: parts joined by FUZZ_SEP; for
# recover, records { u8 type, u16 len, payload }, see fuzz_recover.c),
# following docs/format.md, and OUT/recover/real-* from the transaction
# logs in fuzz/corpus/wal.  The committed corpora started from these.
import glob
import hashlib
import os
import struct
import sys

S = b"\n--8<--\n"
out = sys.argv[1]
def w(t, name, data):
    os.makedirs(f"{out}/{t}", exist_ok=True)
    open(f"{out}/{t}/{name}", "wb").write(data)
def fixsum(b):
    return b + hashlib.sha256(b).digest()

# ---- pack: mutate a small real pack ----
real = sorted(glob.glob(f"{out}/pack/real-*"), key=os.path.getsize)[0]
idx, pack = open(real, "rb").read().split(S, 1)
hdr, fan, ents, tail = idx[:24], idx[24:1048], idx[1048:-32], idx[-32:]
n = len(ents) // 64
def mk_idx(ents, count=None, fan=None, magic=b"DECRIDX\0", ver=1):
    count = len(ents)//64 if count is None else count
    if fan is None:
        f = [0]*256
        for i in range(len(ents)//64): f[ents[i*64]] += 1
        for i in range(1,256): f[i] += f[i-1]
        fan = b"".join(struct.pack("<I", x) for x in f)
    b = magic + struct.pack("<II", ver, 0) + struct.pack("<Q", count) + fan + ents
    return fixsum(b)
def ent(i): return bytearray(ents[i*64:(i+1)*64])
w("pack", "edge-empty-index", mk_idx(b"") + S + b"DECRPACK\x01\0\0\0\0\0\0\0")
w("pack", "edge-bad-magic", mk_idx(ents, magic=b"DECRIDX\x01") + S + pack)
w("pack", "edge-version-2", mk_idx(ents, ver=2) + S + pack)
w("pack", "edge-count-too-big", mk_idx(ents, count=n+1) + S + pack)
w("pack", "edge-truncated-index", idx[:1000] + S + pack)
badfan = bytearray(fan); badfan[0:4] = struct.pack("<I", 5)
w("pack", "edge-fanout-not-monotone", mk_idx(ents, fan=bytes(badfan)) + S + pack)
w("pack", "edge-missing-pack", mk_idx(ents))
w("pack", "edge-truncated-pack", mk_idx(ents) + S + pack[:len(pack)//2])
def with_ent(mut):
    e = [ent(i) for i in range(n)]
    mut(e[0])
    return mk_idx(b"".join(bytes(x) for x in e))
w("pack", "edge-offset-beyond-pack", with_ent(lambda e: e.__setitem__(slice(32,40), struct.pack("<Q", 1<<40))) + S + pack)
w("pack", "edge-huge-stored-len", with_ent(lambda e: e.__setitem__(slice(48,56), struct.pack("<Q", 1<<39))) + S + pack)
w("pack", "edge-huge-raw-len", with_ent(lambda e: e.__setitem__(slice(40,48), struct.pack("<Q", 1<<39))) + S + pack)
w("pack", "edge-unknown-compression", with_ent(lambda e: e.__setitem__(57, 7)) + S + pack)
w("pack", "edge-zstd-flag-on-raw", with_ent(lambda e: e.__setitem__(57, 1 - e[57])) + S + pack)
w("pack", "edge-duplicate-ids", mk_idx(ents + ents[:64]) + S + pack)
bp = bytearray(pack); bp[-1] ^= 0xff
w("pack", "edge-damaged-data", mk_idx(ents) + S + bytes(bp))
w("pack", "edge-same-pack-twice", idx + S + pack + S + idx + S + pack)

# ---- record ----
tree = "ab" * 32
def rec(**kw):
    import json
    d = {"version":1,"type":"checkpoint","root":"/abs/path","session":"chat","message":"msg-1","label":None,
         "created_at":"2026-11-22T00:58:38Z","created_ns":1795222718123456789,"tree":tree,"file_count":3,
         "total_bytes":1234,"skipped":[]}
    for k, v in kw.items():
        if v is KeyError: d.pop(k)
        else: d[k] = v
    return json.dumps(d, separators=(",",":")).encode() + b"\n"
recs = {
 "version-2": rec(version=2), "no-tree": rec(tree=KeyError), "short-tree": rec(tree="abc"),
 "tree-not-hex": rec(tree="zz"*32), "upper-tree": rec(tree="AB"*32), "no-session": rec(session=KeyError),
 "session-number": rec(session=5), "created-min": rec(created_ns=-(1<<63)), "created-max": rec(created_ns=(1<<63)-1),
 "created-string": rec(created_ns="1"), "counts-negative": rec(file_count=-1, total_bytes=-5),
 "skipped-object": rec(skipped={"a":1}), "message-null": rec(message=None, label="L"),
 "colon-session": rec(session="a:b", message="c:d"), "empty-session": rec(session=""),
}
for k, v in recs.items(): w("record", "edge-rec-" + k, S + v)
w("record", "edge-not-json", S + b"{\"version\":1,")
w("record", "edge-array", S + b"[1,2]")
w("record", "edge-dup-keys", S + b'{"version":1,"tree":"' + tree.encode() + b'","session":"a","session":"b","version":2}')
w("record", "edge-nul-escape", S + rec(message="a\u0000b"))
w("record", "edge-bad-utf8-escape", S + rec(message="\udc80"))
w("record", "edge-same-session-message", S + rec() + S + rec(created_ns=5))
# caches
def cache(entries, count=None):
    b = b"DCKC" + struct.pack("<II", 1, len(entries) if count is None else count)
    for e in entries: b += e
    return fixsum(b)
def centry(idhex, strs=(b"chat",b"m",None,b"/r"), ns=1, fc=1, tb=2, sk=0):
    b = bytes.fromhex(idhex) + bytes.fromhex(tree) + struct.pack("<qQQQ", ns, fc, tb, sk)
    for s in strs:
        if s is None: b += struct.pack("<H", 0xffff)
        else: b += struct.pack("<H", len(s)) + s
    return b
r1 = rec(); id1 = hashlib.sha256(r1).hexdigest()
w("record", "edge-cache-lies", cache([centry(id1, (b"liar", b"x", None, b"/"), ns=-5)]) + S + r1)
w("record", "edge-cache-stale-id", cache([centry("00"*32)]) + S + r1)
w("record", "edge-cache-no-session", cache([centry(id1, (None, None, None, None))]) + S + r1)
w("record", "edge-cache-count-huge", cache([centry(id1)], count=0xffffffff) + S + r1)
w("record", "edge-cache-nul-in-string", cache([centry(id1, (b"a\0b", b"", b"", b""))]) + S + r1)
w("record", "edge-cache-string-overrun", cache([centry(id1, (b"chat", b"m", None, None))[:-2] + struct.pack("<H", 0xfffe)]) + S + r1)
w("record", "edge-cache-bad-sum", cache([centry(id1)])[:-1] + b"\0" + S + r1)
w("record", "edge-cache-trailing", fixsum(cache([centry(id1)])[:-32] + b"x") + S + r1)
# version 2 records (scan rules) and caches (counts, rules)
recs2 = {
 "rules": rec(version=2, excludes=["big/", "!big/keep", "*.o"], max_file_size=2048,
              files_changed=3, insertions=10, deletions=2),
 "rules-v1": rec(excludes=["x/"]), "rules-empty": rec(version=2, excludes=[]),
 "rules-not-array": rec(version=2, excludes="big/"), "rules-not-strings": rec(version=2, excludes=["a", 5]),
 "rules-max-zero": rec(version=2, max_file_size=0), "rules-max-string": rec(version=2, max_file_size="2K"),
 "rules-max-null": rec(version=2, max_file_size=None), "counts-negative2": rec(files_changed=-1, insertions="x"),
 "version-3": rec(version=3),
}
for k, v in recs2.items(): w("record", "edge-rec-" + k, S + v)
def cache2(entries, count=None):
    b = b"DCKC" + struct.pack("<II", 2, len(entries) if count is None else count)
    for e in entries: b += e
    return fixsum(b)
def centry2(idhex, strs=(b"chat",b"m",None,b"/r"), ex=(b"big/",), ns=1, counts=(3, 10, 2), mx=2048, nex=None):
    b = bytes.fromhex(idhex) + bytes.fromhex(tree) + struct.pack("<qQQQqqqQ", ns, 1, 2, 0, *counts, mx)
    for s in strs:
        if s is None: b += struct.pack("<H", 0xffff)
        else: b += struct.pack("<H", len(s)) + s
    b += struct.pack("<H", len(ex) if nex is None else nex)
    for e in ex:
        if e is None: b += struct.pack("<H", 0xffff)
        else: b += struct.pack("<H", len(e)) + e
    return b
r2 = recs2["rules"]; id2 = hashlib.sha256(r2).hexdigest()
w("record", "edge-cache2-rules", cache2([centry2(id2), centry2(id1, ex=())]) + S + r2 + S + r1)
w("record", "edge-cache2-unknown-counts", cache2([centry2(id1, counts=(-1, -1, -1), mx=0, ex=())]) + S + r1)
w("record", "edge-cache2-exclude-none", cache2([centry2(id2, ex=(None,))]) + S + r2)
w("record", "edge-cache2-excludes-overrun", cache2([centry2(id2, ex=(b"a",), nex=0xfffe)]) + S + r2)
w("record", "edge-cache2-no-exclude-count", cache2([centry2(id2, ex=())[:-2]]) + S + r2)
# version 3: the config's excludes (records and cache)
recs3 = {
 "config": rec(version=3, config_excludes=["*.tmp", "!keep.tmp"]),
 "config-with-rules": rec(version=3, excludes=["big/"], max_file_size=2048, config_excludes=["data/"]),
 "config-empty-v1": rec(config_excludes=[]), "config-v1": rec(config_excludes=["x/"]),
 "config-not-array": rec(version=3, config_excludes="data/"),
 "config-not-strings": rec(version=3, config_excludes=["a", None]),
 "config-null": rec(config_excludes=None), "version-4": rec(version=4, config_excludes=[]),
}
for k, v in recs3.items(): w("record", "edge-rec-" + k, S + v)
def cache3(entries, count=None):
    b = b"DCKC" + struct.pack("<II", 3, len(entries) if count is None else count)
    for e in entries: b += e
    return fixsum(b)
def centry3(idhex, cfg=(b"*.tmp",), ncfg=None, **kw):
    b = centry2(idhex, **kw)
    if cfg is None: return b + struct.pack("<H", 0xffff)
    b += struct.pack("<H", len(cfg) if ncfg is None else ncfg)
    for e in cfg: b += struct.pack("<H", len(e)) + e
    return b
r3 = recs3["config"]; id3 = hashlib.sha256(r3).hexdigest()
w("record", "edge-cache3-config", cache3([centry3(id3, ex=()), centry3(id1, cfg=None, ex=()), centry3(id2, cfg=())]) + S + r3 + S + r1 + S + r2)
w("record", "edge-cache3-config-overrun", cache3([centry3(id3, ex=(), ncfg=0xfffe)]) + S + r3)
w("record", "edge-cache3-no-config-count", cache3([centry3(id3, ex=(), cfg=())[:-2]]) + S + r3)
w("record", "edge-cache3-unknown-excludes", cache3([centry2(id3, ex=(), nex=0xffff) + struct.pack("<H", 0)]) + S + r3)

# ---- statcache (format version 2, docs/format.md) ----
M64 = (1 << 64) - 1
def check64(b):
    k = 0x9e3779b97f4a7c15
    h = (0x2545f4914f6cdd1d ^ (len(b) * k)) & M64
    i = 0
    while i + 8 <= len(b):
        h = ((h ^ int.from_bytes(b[i:i+8], "little")) * k) & M64
        h ^= h >> 31
        i += 8
    while i < len(b):
        h = ((h ^ b[i]) * k) & M64
        h ^= h >> 31
        i += 1
    h ^= h >> 29
    h = (h * 0xbf58476d1ce4e5b9) & M64
    return h ^ (h >> 32)
def sc(recs, count=None, scan=2_000_000_000_000_000_000, magic=b"DSTC", version=2):
    h = magic + struct.pack("<IqQ", version, scan, len(recs) if count is None else count)
    return h + struct.pack("<Q", check64(h)) + b"".join(recs)
def scname(name, dtype=8, facts=True, mode=0o100644, size=5, mt=1_000_000_000_000_000_000, ct=1, ino=7, dev=9, oid=b"\x11"*32):
    return (name, dtype, facts, mode, size, mt, ct, ino, dev, oid)
# facts: True (kind 1, file facts), False (kind 0), or a kind number (2: a
# subdirectory in the record's tree); tree: the directory's tree id (flag 2)
def scdir(path, names, flags=1, dmt=1_000_000_000_000_000_000, dct=1_000_000_000_000_000_000, dino=3, ddev=9, n=None, seal=True, tree=None):
    ents = b""; blob = b""
    for (name, dtype, facts, mode, size, mt, ct, ino, dev, oid) in names:
        kind = facts if not isinstance(facts, bool) else (1 if facts else 0)
        ents += struct.pack("<IHBB", len(blob), len(name), dtype, kind)
        ents += struct.pack("<IQqqQQ", mode, size, mt, ct, ino, dev) + oid if kind == 1 else bytes(76)
        blob += name + b"\0"
    if tree is not None:
        flags |= 2
    body = struct.pack("<IHBB", len(names) if n is None else n, len(path), flags, 0)
    body += struct.pack("<qqQQ", dmt, dct, dino, ddev) + path + ents + blob + (tree or b"")
    rec = struct.pack("<I", 4 + len(body) + 8) + body
    return rec + struct.pack("<Q", check64(rec) if seal else 0)
w("statcache", "edge-empty", sc([]))
w("statcache", "edge-one", sc([scdir(b"", [scname(b"a"), scname(b"d", dtype=4, facts=False)]), scdir(b"d", [scname(b"f")])]))
w("statcache", "edge-dup-dirs", sc([scdir(b"", [scname(b"a", oid=b"\x01"*32)]), scdir(b"", [scname(b"a", oid=b"\x02"*32)])]))
w("statcache", "edge-racy", sc([scdir(b"", [scname(b"a", mt=2_000_000_000_500_000_000)], dct=1_999_999_999_500_000_000)]))
w("statcache", "edge-whole-seconds", sc([scdir(b"", [scname(b"a", mt=1_998_000_000_000_000_000), scname(b"b", mt=1_996_000_000_000_000_000)], dct=1_998_000_000_000_000_000)]))
w("statcache", "edge-negative-times", sc([scdir(b"", [scname(b"a", mt=-(1<<63), ct=-1)], dct=-(1<<63))], scan=-(1<<63)))
w("statcache", "edge-scan-max", sc([scdir(b"", [scname(b"a", mt=(1<<63)-1)], dct=(1<<63)-1)], scan=(1<<63)-1))
w("statcache", "edge-count-huge", sc([scdir(b"", [scname(b"a")])], count=1<<62))
w("statcache", "edge-count-short", sc([scdir(b"", [scname(b"a")]), scdir(b"d", [scname(b"b")])], count=1))
w("statcache", "edge-unsorted", sc([scdir(b"", [scname(b"b"), scname(b"a")])]))
w("statcache", "edge-slash-name", sc([scdir(b"", [scname(b"a/b")])]))
w("statcache", "edge-names-overrun", sc([scdir(b"", [scname(b"a")], n=1000)]))
w("statcache", "edge-unsealed", sc([scdir(b"", [scname(b"a")], seal=False), scdir(b"d", [scname(b"x")])]))
w("statcache", "edge-nul-path", sc([scdir(b"a\0b", [scname(b"x")]), scdir(b"", [scname(b"y")])]))
w("statcache", "edge-no-stat", sc([scdir(b"", [scname(b"a")], flags=0)]))
w("statcache", "edge-delta-overrides", sc([scdir(b"", [scname(b"a", oid=b"\x01"*32)])]) + S + sc([scdir(b"", [scname(b"a", oid=b"\x02"*32, ino=8)])]))
w("statcache", "edge-bad-delta", sc([scdir(b"", [scname(b"a")])]) + S + sc([scdir(b"", [scname(b"a")])])[:-3])
w("statcache", "edge-version-1", fixsum(b"DSTC" + struct.pack("<IqQ", 1, 0, 0)))
w("statcache", "edge-version-3", sc([], version=3))
w("statcache", "edge-tree", sc([scdir(b"", [scname(b"a"), scname(b"d", dtype=4, facts=2)], tree=b"\x33"*32), scdir(b"d", [scname(b"f")], tree=b"\x44"*32)]))
w("statcache", "edge-tree-short", sc([scdir(b"", [], tree=b"\x33"*4)]))
w("statcache", "edge-tree-flag-no-id", sc([scdir(b"", [scname(b"a")], flags=3)]))
w("statcache", "edge-kind-unknown", sc([scdir(b"", [scname(b"a", facts=7), scname(b"b", facts=2)])]))

# ---- oplog ----
def sum64(b):
    return hashlib.sha256(b).digest()[:8]
def opl(undo, redo, nu=None, nr=None):
    """A history file, version 2: each entry framed and summed."""
    b = b"DOPL" + struct.pack("<III", 2, len(undo) if nu is None else nu, len(redo) if nr is None else nr)
    b += sum64(b)
    for e in undo + redo: b += struct.pack("<I", len(e)) + e + sum64(e)
    return b
def opl1(undo, redo):
    """Version 1 (still read): no framing, one SHA-256 at the end."""
    b = b"DOPL" + struct.pack("<III", 1, len(undo), len(redo))
    for e in undo + redo: b += e
    return fixsum(b)
def side(has=3, om=0o100644, os_=4, nm=0o100755, ns=5):
    return struct.pack("<BIQ", has, om, os_) + b"\x22"*32 + struct.pack("<IQ", nm, ns) + b"\x33"*32
def opent(paths, kind=1, sess=b"chat", what=b"chat:msg-1", n=None, tid=b"0123456789abcdef", t=1):
    b = struct.pack("<B", kind) + tid + struct.pack("<q", t)
    b += struct.pack("<H", len(sess)) + sess + struct.pack("<H", len(what)) + what
    b += struct.pack("<I", len(paths) if n is None else n)
    for p in paths: b += side() + struct.pack("<H", len(p)) + p
    return b
w("oplog", "edge-empty", opl([], []))
w("oplog", "edge-one-each", opl([opent([b"a", b"d/b"])], [opent([b"c"], kind=2, sess=b"")]))
for name, p in [("dotdot", b"../x"), ("abs", b"/etc/passwd"), ("git", b"a/.git/config"), ("decree", b".decree/store/x"),
                ("empty", b""), ("dot", b"a/./b"), ("slash-end", b"a/"), ("nul", b"a\0b"), ("double-slash", b"a//b")]:
    w("oplog", "edge-path-" + name, opl([opent([b"ok", p])], []))
w("oplog", "edge-count-huge", opl([opent([b"a"], n=0xffffffff)], []))
w("oplog", "edge-too-many-entries", opl([], [], nu=100001))
w("oplog", "edge-101-undo", opl([opent([b"f%d" % i]) for i in range(101)], []))
w("oplog", "edge-kind-unknown", opl([opent([b"a"], kind=0xff, t=-1)], []))
w("oplog", "edge-trailing", opl([opent([b"a"])], []) + b"\0")
w("oplog", "edge-v1-one-each", opl1([opent([b"a", b"d/b"])], [opent([b"c"], kind=2, sess=b"")]))
w("oplog", "edge-v1-path-dotdot", opl1([opent([b"ok", b"../x"])], []))
w("oplog", "edge-version-3", (lambda h: h + sum64(h))(b"DOPL" + struct.pack("<III", 3, 0, 0)))
w("oplog", "edge-header-damaged", opl([opent([b"a"])], [])[:20] + b"\xff" * 4 + opl([opent([b"a"])], [])[24:])
w("oplog", "edge-middle-damaged", (lambda b: b[:60] + bytes([b[60] ^ 1]) + b[61:])(opl([opent([b"a"]), opent([b"b"])], [opent([b"c"])])))
w("oplog", "edge-cut", opl([opent([b"a"]), opent([b"b"])], [])[:-20])
w("oplog", "edge-nul-id", opl([opent([b"a"], tid=b"\0"*16)], []))

# ---- message ----
msgs = {
 "no-frontmatter": b"just a body\n", "unclosed": b"---\nid: 1\nbody without end\n",
 "crlf": b"---\r\nid: 1\r\nroutine: x\r\n---\r\nbody\r\n", "dots-end": b"---\nid: 1\n...\nbody\n",
 "empty-frontmatter": b"---\n---\nbody\n", "empty-fm-then-dashes": b"---\n---\n---\nx: 1\n---\n",
 "list-value": b"---\na: [1, 2]\n---\n", "map-value": b"---\na:\n  b: c\n---\n", "scalar-top": b"---\njust text\n---\nb",
 "anchors": b"---\na: &x v\nb: *x\n---\n", "dup-keys": b"---\na: 1\na: 2\nb: 3\n---\n",
 "quoted-escapes": b'---\na: "\\x01\\u0085\\u2028\\ufeff\\t\\"\\\\ \\0"\nb: \'it\'\'s\'\n---\n',
 "c1-control": b'---\na: "\\x80\\x9f"\n---\n', "nel-raw": b"---\na: x\xc2\x85y\n---\n",
 "bom": b"\xef\xbb\xbf---\na: 1\n---\n", "tab-indent": b"---\na:\tb\n---\n", "complex-key": b"---\n? [a]\n: b\n---\n",
 "null-value": b"---\na:\nb: ~\nc: null\n---\n", "block-scalar": b"---\na: |\n  line1\n  line2\nb: >\n  folded\n---\n",
 "tags": b"---\na: !!int 3\n!foo b: !!binary aGk=\n---\n", "directive": b"---\n%YAML 1.1\n---\na: 1\n---\n",
 "invalid-utf8": b"---\na: \xff\xfe\n---\n", "nul-in-body": b"---\na: 1\n---\nbo\0dy",
 "leading-trailing-space": b'---\n" a ": " b "\n---\n', "hash": b"---\na: b #c\nd: 'e #f'\n---\n",
 "colon-value": b"---\na: 'b: c'\nurl: http://x\n---\n", "empty-key": b'---\n"": v\n---\n',
 "dashes-only": b"---", "dashes-nl": b"---\n", "long-line": b"---\na: " + b"x"*3000 + b"\n---\n",
}
for k, v in msgs.items(): w("message", "edge-" + k, v)

# ---- config ----
cfgs = {
 "empty": b"", "comment": b"# nothing\n", "not-mapping": b"- a\n- b\n", "scalar": b"hello\n",
 "sizes": b"checkpoint:\n  max_file_size: 1GiB\n", "size-zero": b"checkpoint:\n  max_file_size: 0\n",
 "size-negative": b"checkpoint:\n  max_file_size: -1\n", "size-overflow": b"checkpoint:\n  max_file_size: 18446744073709551615K\n",
 "size-shift-wrap": b"checkpoint:\n  max_file_size: 17179869184G\n",
 "size-list": b"checkpoint:\n  max_file_size: [1]\n", "exclude-scalar": b"checkpoint:\n  exclude: '*.o'\n",
 "exclude-nested": b"checkpoint:\n  exclude: [[a]]\n", "exclude-many": b"checkpoint:\n  exclude: [a, 'b c', \"\\t\", '']\n",
 "store-abs": b"store: /tmp/x\n", "store-rel": b"checkpoint:\n  store: ../s\nstore: y\n", "store-empty": b"store: ''\n",
 "store-map": b"store: {a: b}\n", "retries": b"max_retries: 100\nmax_depth: 1000000\n", "retries-0": b"max_retries: 0\n",
 "retries-big": b"max_retries: 99999999999999999999\n", "depth-hex": b"max_depth: 0x10\n", "retries-space": b"max_retries: ' 5'\n",
 "bools": b"notebook_support: yes\n", "bool-bad": b"notebook_support: maybe\n", "bool-empty": b"notebook_support:\n",
 "commands": b"commands:\n  router: claude -p {prompt}\n  ai: ''\n", "commands-list": b"commands: [a]\n",
 "checkpoint-scalar": b"checkpoint: 5\n", "anchors": b"a: &x {store: /s}\ncheckpoint: *x\n",
 "default-routine": b"default_routine: ''\n", "default-routine-list": b"default_routine: [a]\n",
 "dup-keys": b"max_retries: 5\nmax_retries: 500\n", "multi-doc": b"a: 1\n---\nb: 2\n", "invalid": b"a: [\n",
 "tab": b"a:\n\tb: 1\n",
}
for k, v in cfgs.items(): w("config", "edge-" + k, v)

# ---- runs ----
old = hashlib.sha256(b"old\n").hexdigest()
good = ('{"files":{"a.txt":{"sha256":"%s","size":4,"mode":"644"}}}' % old).encode()
outc = b'{"id":"x","message":"m.md","routine":"r","outcome":"done","attempts":1,"started":1,"finished":2,"reason":null}'
runs = {
 "ok": outc + S + good, "ok-two-runs": outc + S + good + S + outc,
 "b-listed": outc + S + good.replace(b"}}}", b'},"b.txt":{"sha256":"x","mode":"644"}}}'),
 "wrong-mode": outc + S + good.replace(b'"644"', b'"755"'), "mode-number": outc + S + good.replace(b'"644"', b"644"),
 "files-array": outc + S + b'{"files":[]}', "not-object": outc + S + b"[]", "empty-manifest": outc + S,
 "no-manifest": outc, "dup-a": outc + S + good.replace(b"}}}", b'},"a.txt":{"sha256":"0","mode":"644"}}}'),
 "outcome-types": b'{"outcome":5,"attempts":"x","started":-9223372036854775808,"finished":1e300,"message":[1],"reason":{}}' + S + good,
 "outcome-unknown": b'{"outcome":"unfinished","attempts":99999999999}' + S + good,
 "outcome-not-json": b"{{" + S + good + S + b"\0",
 "nul-escape": b'{"message":"a\\u0000b"}' + S + good,
 "deep-nesting": b"[" * 2000 + S + good,
}
for k, v in runs.items(): w("runs", "edge-" + k, v)

# ---- recover ----
def rec(t, payload): return struct.pack("<BH", t, len(payload)) + payload
def sha(b): return hashlib.sha256(b).digest()
def path(p): return struct.pack("<H", len(p)) + p
def sides(has_old, om, os_, oid, has_new, nm, ns, nid):
    return struct.pack("<BIQ", (1 if has_old else 0) | (2 if has_new else 0), om, os_) + oid + struct.pack("<IQ", nm, ns) + nid
TX = b"0123456789abcdef"
def fileop(p, has_old=True, old=b"old\n", has_new=True, new=b"new\n", n=0, om=0o100644, nm=0o100644, tmp=None):
    t = tmp if tmp is not None else b".decree-tmp-" + TX + b"-%d" % n
    return rec(2, sides(has_old, om, len(old), sha(old) if has_old else b"\0"*32, has_new, nm, len(new), sha(new) if has_new else b"\0"*32) + path(p) + path(t))
def entry(paths, kind=1, tid=TX):
    b = struct.pack("<B", kind) + tid + struct.pack("<q", 1795629801000000000) + path(b"chat") + path(b"chat:msg-1") + struct.pack("<I", len(paths))
    for p in paths: b += sides(True, 0o100644, 4, sha(b"old\n"), True, 0o100644, 4, sha(b"new\n")) + path(p)
    return b
def begin(history=0, moved=b"0"*16, ent=None):
    return rec(1, TX + bytes([history]) + moved + bytes([1 if ent else 0]) + (ent or b""))
COMMIT = rec(5, b"")
def w(name, data):
    os.makedirs(f"{out}/recover", exist_ok=True)
    open(f"{out}/recover/{name}", "wb").write(data)
w("edge-rollback-modify", begin() + fileop(b"a.txt"))
w("edge-commit-modify-push", begin(1, ent=entry([b"a.txt"])) + fileop(b"a.txt") + COMMIT)
w("edge-rollback-create", begin() + fileop(b"d/c.txt", has_old=False, n=2) + rec(3, path(b"g")) + rec(3, path(b"g/h")))
w("edge-rollback-delete", begin() + fileop(b"d/b.txt", old=b"b\n", has_new=False))
w("edge-rollback-missing-object", begin() + fileop(b"a.txt", old=b"never stored\n", new=b"x\n"))
w("edge-rmdir-mkdir", begin() + rec(4, path(b"e")) + rec(4, path(b"x/y")) + rec(3, path(b"e/z")))
w("edge-through-symlink", begin() + fileop(b"f/victim", old=b"old\n", new=b"new\n") + rec(3, path(b"f/made")) + rec(4, path(b"f")))
w("edge-unsafe-paths", begin() + fileop(b"../outside/victim") + fileop(b".git/HEAD", n=1) + fileop(b".decree/keep", n=2))
w("edge-unsafe-tmp", begin() + fileop(b"a.txt", tmp=b"../../x") + COMMIT)
w("edge-tmp-not-decree", begin() + fileop(b"a.txt", tmp=b"a.txt"))
w("edge-undo-redo", begin(2, moved=TX) + fileop(b"a.txt") + COMMIT)
w("edge-redo", begin(3, moved=TX) + COMMIT)
w("edge-history-unknown", begin(9) + COMMIT)
w("edge-no-begin", fileop(b"a.txt") + COMMIT)
w("edge-unknown-type", begin() + rec(77, b"xyz"))
w("edge-begin-short", rec(1, b"0123"))
w("edge-entry-bad", begin(1, ent=entry([b"../up"])) + COMMIT)
w("edge-torn-tail", begin() + fileop(b"a.txt") + b"\x05\x00")
w("edge-exec-symlink-modes", begin() + fileop(b"a.txt", om=0o100755, nm=0o120000) + fileop(b"d/b.txt", old=b"b\n", om=0o040000, n=1))
w("edge-same-path-twice", begin() + fileop(b"a.txt") + fileop(b"a.txt", n=1, old=b"new\n", new=b"old\n"))
w("edge-empty", b"")
# the real logs of fuzz/corpus/wal, in this input format
for f in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "wal", "txn_*.wal")):
    d = open(f, "rb").read()
    o, b = 32, b""
    while o + 16 <= len(d):
        ln, ty = struct.unpack("<II", d[o:o+8])
        if o + 16 + ln > len(d): break
        b += rec(ty & 0xff, d[o+8:o+8+ln]); o += 16 + ln
    w("real-" + os.path.basename(f)[:-4], b)

# ---- routine ----
def wr(name, data):
    os.makedirs(f"{out}/routine", exist_ok=True)
    open(f"{out}/routine/{name}", "wb").write(data)
nb_cells = lambda src, tags='["parameters"]': ('{"cells":[{"cell_type":"code","metadata":{"tags":%s},"source":%s}]}' % (tags, src)).encode()
routines = {
 "params": b'#!/usr/bin/env bash\n# Review a branch.\ntarget_branch="${target_branch:-main}"\nreviewer=alice\nq=\'${q:=x}\'\nset -e\nlate=1\n',
 "crlf": b"#!/bin/sh\r\n# Summary with CR  \r\na=1\r\nb=\"two\"\r\n",
 "standard-vars": b"#!/bin/sh\nspec_file=x\nchain=${chain:-1}\nseq=2\nmine=3\nmine=4\n",
 "no-summary": b"#!/bin/sh\n\n\nx=${x:-}\n",
 "hash-summary": b"### ## #\n#   \n# real summary\n",
 "odd-defaults": b'a=${a:-"quoted"}\nb="${b:-}"\nc=${c}\nd=${d:-\'s\'}\ne="\nf=${f:\ng=\'\'\nh="${h:=}"\n',
 "not-ident": b"1a=2\n-x=1\na-b=1\n_ok=1\n",
 "only-shebang": b"#!",
 "empty": b"",
 "nul": b"#!/bin/sh\n# sum\0mary\na=\0b\n",
}
for k, v in routines.items(): wr("edge-" + k, v)
nbs = {
 "string-source": nb_cells('"a = 1\\nb = \\"x\\"  # c\\nspec_file = 1\\n"'),
 "no-tags": nb_cells('["a = 1"]', tags='[]'),
 "tags-not-array": nb_cells('["a = 1"]', tags='"parameters"'),
 "two-param-cells": b'{"cells":[{"metadata":{"tags":["parameters"]},"source":["a=1"]},{"metadata":{"tags":["parameters"]},"source":["b=2"]}]}',
 "cells-object": b'{"cells":{"a":1}}',
 "not-json": b'{"cells":[',
 "array-top": b'[1,2,3]',
 "source-mixed": nb_cells('["a = 1\\n", 5, null, "b=\\u0000\\n", "c = \'#x\' # y"]'),
 "empty": b"",
}
for k, v in nbs.items(): wr("edge-nb-" + k, b"#!/bin/sh\n# shell\nx=1\n" + S + v)
