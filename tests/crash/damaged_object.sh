#!/bin/bash
# damaged_object.sh - a damaged object is never trusted (docs/format.md
# "Trusting stored objects"): a byte flipped in the compressed data of a
# blob (or a tree) inside a pack, then the next checkpoint of the same
# content stores it again (stat cache or not), so the new checkpoint
# restores; fsck still names the damaged copy; gc refuses to rewrite the
# damaged pack.
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

done_testing
