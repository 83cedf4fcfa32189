#!/bin/bash
# damaged_object.sh - a damaged object is never trusted, and fsck --repair
# puts back what a working tree still holds (docs/format.md "Trusting stored
# objects", docs/cli/maintenance.md).
#
#  - a byte flipped in the compressed data of a blob (or a tree) inside a
#    pack: the next checkpoint of the same content stores it again (stat
#    cache or not), so the new checkpoint restores;
#  - fsck names the damaged object; fsck --repair stores it again from the
#    working tree (where the checkpoint puts it, or anywhere else in the
#    tree), after which restore works; when no file holds the bytes any
#    more, the checkpoints needing them are removed and the report says
#    exactly which paths are lost;
#  - a damaged magic or version in every kind of store file makes fsck
#    fail naming the file.
. "$DECREE_TOP/tests/crash/lib.sh"

# pack_flip PACK HEX: flip one byte in the middle of the stored data of
# object HEX; exit 1 if PACK does not hold it
pack_flip() {
	$PY3 - "$1" "$2" <<'PY'
import struct, sys
path, want = sys.argv[1], bytes.fromhex(sys.argv[2])
data = bytearray(open(path, "rb").read())
off = 16
while off + 56 <= len(data):
    oid = bytes(data[off:off + 32])
    comp = data[off + 33]
    raw, stored = struct.unpack_from("<QQ", data, off + 40)
    if oid == want:
        data[off + 56 + stored // 2] ^= 0x5A
        open(path, "r+b").write(data)
        print("compressed" if comp == 1 else "stored")
        sys.exit(0)
    off += 56 + stored
sys.exit(1)
PY
}
flip_object() { # store hex -> "compressed"/"stored"; 1 if in no pack
	local p
	for p in "$1"/packs/pack-*.pack; do
		chmod u+w "$p"
		pack_flip "$p" "$2" && return 0
	done
	return 1
}
sha() { sha256sum <"$1" | cut -c1-64; }
# text that zstd compresses (so the flip lands in compressed data)
textfile() { $PY3 -c 'import random, sys
random.seed(sys.argv[1])
for i in range(600):
    print("line %d: %s" % (i, " ".join(random.choice(["alpha", "beta", "gamma", "delta", "epsilon"]) for _ in range(8))))' "$1"; }

B=$SCRATCH/base
mkdir -p "$B/src/deep"
textfile victim >"$B/src/deep/victim.txt"
for i in $(seq 1 20); do printf 'file %d\n' "$i" >"$B/src/f$i.c"; done
"$DECREE" -C "$B" checkpoint create --message A >/dev/null
VICTIM=$(sha "$B/src/deep/victim.txt")
cp "$B/src/deep/victim.txt" "$SCRATCH/victim.txt"
echo 'other' >"$B/src/f1.c"
"$DECREE" -C "$B" checkpoint create --message B >/dev/null
cp -a "$B" "$SCRATCH/base.orig"
fresh() { rm -rf "$B" && cp -a "$SCRATCH/base.orig" "$B"; }
ST=$B/.decree/store
RD() { echo "$ST"/roots/*; }

# --- checkpoint create does not trust a damaged copy ----------------------------
for cache in statcache nocache; do
	fresh
	[ $cache = nocache ] && rm -f "$(RD)"/statcache*
	how=$(flip_object "$ST" "$VICTIM") && ok "$cache: flipped a byte in the $how data of ${VICTIM:0:12}" ||
		not_ok "$cache: flipped a byte in ${VICTIM:0:12}" "not in any pack"
	t "$cache: checkpoint create of the same content succeeds" \
		"$DECREE" -C "$B" checkpoint create --message C
	echo 'scribble' >"$B/src/deep/victim.txt"
	_run "$DECREE" -C "$B" checkpoint restore default:C
	if [ "$RC" -eq 0 ] && [ "$(sha "$B/src/deep/victim.txt")" = "$VICTIM" ]; then
		ok "$cache: ... and the new checkpoint restores the file"
	else
		not_ok "$cache: ... and the new checkpoint restores the file" "exit $RC: $ERR"
	fi
	# the old checkpoint reads the copy stored again
	echo 'scribble' >"$B/src/deep/victim.txt"
	t "$cache: ... so does the old one (A)" "$DECREE" -C "$B" checkpoint restore default:A
	_run "$DECREE" -C "$B" fsck
	case "$RC:$OUT" in 1:*"$VICTIM"*) ok "$cache: fsck still names the damaged copy" ;;
	*) not_ok "$cache: fsck still names the damaged copy" "exit $RC: $OUT $ERR" ;; esac
	t "$cache: fsck --repair" "$DECREE" -C "$B" fsck --repair
	t "$cache: ... fsck is clean" "$DECREE" -C "$B" fsck
done

# a damaged tree object: the next checkpoint of that directory stores it again
fresh
TREE=$($PY3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["tree"])' "$(grep -l '"message":"B"' "$(RD)"/checkpoints/*)")
flip_object "$ST" "$TREE" >/dev/null && ok "flipped a byte in root tree ${TREE:0:12}" ||
	not_ok "flipped a byte in root tree ${TREE:0:12}"
t "damaged tree: checkpoint create of the same tree succeeds" \
	"$DECREE" -C "$B" checkpoint create --message C
echo 'scribble' >"$B/src/f2.c"
t "... and the new checkpoint restores" "$DECREE" -C "$B" checkpoint restore default:C
[ "$(cat "$B/src/f2.c")" = "file 2" ] && ok "... to its content" || not_ok "... to its content"

# gc never rewrites a damaged pack (nor carries the damage into a new one)
fresh
flip_object "$ST" "$VICTIM" >/dev/null
"$DECREE" -C "$B" checkpoint drop --session default >/dev/null
before=$(ls "$ST/packs")
t_err "*decree: *damaged*nothing was deleted*" "gc with a damaged pack: exit 1, nothing deleted" 1 \
	"$DECREE" -C "$B" gc
[ "$(ls "$ST/packs")" = "$before" ] && ok "... the packs are as they were" ||
	not_ok "... the packs are as they were"

# --- fsck --repair ------------------------------------------------------------------
# the bytes are where the checkpoint put them
fresh
flip_object "$ST" "$VICTIM" >/dev/null
echo 'edited' >"$B/src/f3.c"
_run "$DECREE" -C "$B" fsck
case "$RC:$OUT" in 1:*"$VICTIM"*) ok "fsck names the damaged object" ;;
*) not_ok "fsck names the damaged object" "exit $RC: $OUT $ERR" ;; esac
before=$(fast_state "$B")
_run "$DECREE" -C "$B" fsck --repair
if [ "$RC" -eq 0 ] && case "$OUT" in *"repaired: $VICTIM: stored again from '$B/src/deep/victim.txt'"*) true ;; *) false ;; esac; then
	ok "fsck --repair stores it again from the working tree, naming the file"
else
	not_ok "fsck --repair stores it again from the working tree, naming the file" "exit $RC: $OUT $ERR"
fi
[ "$(fast_state "$B")" = "$before" ] && ok "... the working tree is untouched" ||
	not_ok "... the working tree is untouched"
t "... fsck is clean" "$DECREE" -C "$B" fsck
echo 'scribble' >"$B/src/deep/victim.txt"
t "... restore of A works" "$DECREE" -C "$B" checkpoint restore default:A
[ "$(sha "$B/src/deep/victim.txt")" = "$VICTIM" ] && ok "... and brings the bytes back" ||
	not_ok "... and brings the bytes back"

# the bytes moved elsewhere in the tree
fresh
flip_object "$ST" "$VICTIM" >/dev/null
mv "$B/src/deep/victim.txt" "$B/moved.txt"
_run "$DECREE" -C "$B" fsck --repair
case "$RC:$OUT" in 0:*"stored again from '$B/moved.txt'"*) ok "fsck --repair finds the bytes in a moved file" ;;
*) not_ok "fsck --repair finds the bytes in a moved file" "exit $RC: $OUT $ERR" ;; esac
t "... restore of A works" "$DECREE" -C "$B" checkpoint restore default:A
[ "$(sha "$B/src/deep/victim.txt")" = "$VICTIM" ] && ok "... and brings the bytes back" ||
	not_ok "... and brings the bytes back"

# the bytes are gone: what needs them is beyond saving
fresh
flip_object "$ST" "$VICTIM" >/dev/null
echo 'gone' >"$B/src/deep/victim.txt"
AID=$("$DECREE" -C "$B" checkpoint show default:A --json | $PY3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
_run "$DECREE" -C "$B" --json fsck --repair
if [ "$RC" -eq 0 ] && $PY3 -c 'import json, sys
d = json.loads(sys.argv[1]); aid, v = sys.argv[2], sys.argv[3]
lost = [l for l in d["lost"] if aid in l["object"]]
assert d["ok"] is True, d
assert len(d["lost"]) == 2, d["lost"]  # A and B both need it
assert lost and "src/deep/victim.txt" in lost[0]["detail"] and v[:12] in lost[0]["detail"], d
assert any(v in p["object"] for p in d["problems"]), d' "$OUT" "$AID" "$VICTIM"; then
	ok "fsck --repair removes the checkpoints needing it, naming the lost path and object"
else
	not_ok "fsck --repair removes the checkpoints needing it, naming the lost path and object" "exit $RC: $OUT $ERR"
fi
t "... fsck is clean" "$DECREE" -C "$B" fsck
t "... a new checkpoint and its restore work" "$DECREE" -C "$B" checkpoint create --message D
t "... restore of it" "$DECREE" -C "$B" checkpoint restore default:D

# a damaged index: its objects are invisible, the rest works; repair
# rewrites the pack from its data
fresh
IDX=$(ls "$ST"/packs/pack-*.idx | head -1)
chmod u+w "$IDX"
printf 'XXXX' | dd of="$IDX" bs=1 seek=0 conv=notrunc 2>/dev/null
_run "$DECREE" -C "$B" fsck
case "$RC:$OUT" in 1:*"$(basename "$IDX")"*) ok "damaged index: fsck names it" ;;
*) not_ok "damaged index: fsck names it" "exit $RC: $OUT $ERR" ;; esac
t "damaged index: checkpoint list works" "$DECREE" -C "$B" checkpoint list
_run "$DECREE" -C "$B" fsck --repair
case "$RC:$OUT" in 0:*"repaired: "*"$(basename "$IDX" .idx).pack"*) ok "damaged index: fsck --repair rewrites the pack" ;;
*) not_ok "damaged index: fsck --repair rewrites the pack" "exit $RC: $OUT $ERR" ;; esac
t "... fsck is clean" "$DECREE" -C "$B" fsck
t "... every checkpoint restores (A)" "$DECREE" -C "$B" checkpoint restore default:A
t "... (B)" "$DECREE" -C "$B" checkpoint restore default:B

# --- every header is checked ---------------------------------------------------------
# the stat cache delta, the history and a transaction log exist too
fresh
sleep 1.1
"$DECREE" -C "$B" checkpoint create >/dev/null
sleep 1.1
echo 'delta' >"$B/src/f4.c"
"$DECREE" -C "$B" checkpoint create >/dev/null
"$DECREE" -C "$B" checkpoint restore default:A >/dev/null
cp -a "$B" "$SCRATCH/headers.orig"
R=$(RD)
[ -e "$R/statcache.delta" ] && [ -e "$R/oplog" ] && [ -e "$ST/packs/sealed" ] &&
	ok "headers: every file kind exists" || not_ok "headers: every file kind exists" "$(ls "$R" "$ST/packs")"
# name offset bytes: overwrite BYTES at OFFSET of the file
for spec in \
	"packs/$(basename "$(ls "$ST"/packs/pack-*.pack | head -1)") 0 XXXX" \
	"packs/$(basename "$(ls "$ST"/packs/pack-*.pack | head -1)") 8 \x07" \
	"packs/$(basename "$(ls "$ST"/packs/pack-*.idx | head -1)") 0 XXXX" \
	"packs/$(basename "$(ls "$ST"/packs/pack-*.idx | head -1)") 8 \x07" \
	"packs/sealed 0 XXXX" "packs/sealed 8 \x07" \
	"DECREE-STORE 0 X" "DECREE-STORE 13 7" \
	"roots/${R##*/}/checkpoints/$(ls "$R/checkpoints" | head -1) 11 7" \
	"roots/${R##*/}/checkpoints.cache 0 XXXX" "roots/${R##*/}/checkpoints.cache 4 \x07" \
	"roots/${R##*/}/statcache 0 XXXX" "roots/${R##*/}/statcache 4 \x07" \
	"roots/${R##*/}/statcache.delta 0 XXXX" "roots/${R##*/}/statcache.delta 4 \x07" \
	"roots/${R##*/}/oplog 0 XXXX" "roots/${R##*/}/oplog 4 \x07" \
	"roots/${R##*/}/txn.wal 0 XXXX" "roots/${R##*/}/txn.wal 8 \x07"; do
	set -- $spec
	rm -rf "$B" && cp -a "$SCRATCH/headers.orig" "$B"
	f=$ST/$1
	if [ "${1##*/}" = txn.wal ]; then # a log as a crash leaves it
		printf 'DECRWAL\0\1\0\0\0\0\0\0\0' >"$f"
		head -c 16 /dev/urandom >>"$f"
	fi
	chmod u+w "$f"
	printf "$3" | dd of="$f" bs=1 seek="$2" conv=notrunc 2>/dev/null
	_run "$DECREE" -C "$B" fsck
	case "$RC:$OUT$ERR" in 1:*"${1##*/}"*) ok "header of ${1##*/} damaged at $2: fsck exits 1 naming it" ;;
	*) not_ok "header of ${1##*/} damaged at $2: fsck exits 1 naming it" "exit $RC: $OUT $ERR" ;; esac
done
done_testing
