#!/bin/bash
# store_damage.sh - damage every kind of store file the store engine owns
# (a checkpoint record, the record cache, a pack, a pack index, the
# DECREE-STORE marker) at its header, middle and end: bit flips, truncation,
# zeroed pages.  After each damage every command either works or fails with
# exit 1 and a "decree:" line naming the damaged file (or the pack, object
# or record it holds); a failed restore leaves the tree as it was; a
# checkpoint created on a damaged store restores; nothing hangs or crashes;
# fsck finds the damage, and after fsck --repair the store is clean and
# every checkpoint left restores.  (DESIGN "Damage is contained".)
# One "# outcome" line per damage summarises what each command did.
. "$DECREE_TOP/tests/crash/lib.sh"

T=${DECREE_DAMAGE_TIMEOUT:-60}
B=$SCRATCH/base
mkdir -p "$B/src/deep" "$B/docs"
$PY3 -c 'import random
random.seed(7)
with open("'"$B"'/src/deep/big.txt", "w") as f:
    for i in range(800):
        f.write("line %d %s\n" % (i, " ".join(random.choice(["a", "bb", "ccc"]) for _ in range(9))))'
for i in $(seq 1 8); do printf 'source %d\n' "$i" >"$B/src/s$i.c"; done
printf 'doc\n' >"$B/docs/readme"
ln -s ../docs/readme "$B/src/link"
"$DECREE" -C "$B" checkpoint create --session s --message A >/dev/null
echo 'changed' >"$B/src/s1.c"
printf 'more %.0s' $(seq 1 300) >"$B/docs/more.txt"
"$DECREE" -C "$B" checkpoint create --session s --message B >/dev/null
echo 'edited' >"$B/src/s2.c"
"$DECREE" -C "$B" checkpoint create --session t --message C >/dev/null
"$DECREE" -C "$B" checkpoint list >/dev/null # writes the record cache
echo 'now' >"$B/src/s3.c"
ST=$B/.decree/store
RD=$(echo "$ST"/roots/*)
RECB=$(grep -l '"message":"B"' "$RD"/checkpoints/*)
# the pack holding A's objects (the largest) and its index
PACK=$(ls -S "$ST"/packs/pack-*.pack | head -1)
IDX=${PACK%.pack}.idx
cp -a "$B" "$SCRATCH/base.orig"
fresh() { rm -rf "$B" && cp -a "$SCRATCH/base.orig" "$B"; }

# damage FILE KIND ARG: flip OFF | trunc LEN | zero OFF (a 4 KiB page)
damage() {
	chmod u+w "$1"
	$PY3 - "$@" <<'PY'
import os, sys
path, kind, arg = sys.argv[1], sys.argv[2], int(sys.argv[3])
size = os.path.getsize(path)
if kind == "trunc":
    os.truncate(path, max(0, min(arg, size)))
else:
    d = bytearray(open(path, "rb").read())
    off = max(0, min(arg, size - 1))
    if kind == "flip":
        d[off] ^= 0xFF
    else:
        off -= off % 4096
        d[off:off + 4096] = bytes(len(d[off:off + 4096]))
    open(path, "wb").write(d)
PY
}

# the files, what an error about each must name, and the damages
SZ_REC=$(stat -c %s "$RECB")
SZ_CACHE=$(stat -c %s "$RD/checkpoints.cache")
SZ_PACK=$(stat -c %s "$PACK")
SZ_IDX=$(stat -c %s "$IDX")
PNAME=$(basename "$PACK" .pack)
cases=(
	"record|$RECB|$(basename "$RECB")|flip 0|flip $((SZ_REC / 2))|trunc $((SZ_REC / 2))|zero 0"
	"cache|$RD/checkpoints.cache|checkpoints.cache|flip 0|flip 5|flip $((SZ_CACHE - 1))|trunc $((SZ_CACHE / 2))"
	"pack|$PACK|$PNAME|flip 0|flip 8|flip 72|flip $((SZ_PACK / 2))|flip $((SZ_PACK - 1))|trunc 0|trunc $((SZ_PACK / 2))|zero $((SZ_PACK / 2))"
	"index|$IDX|$PNAME|flip 0|flip 8|flip 100|flip $((24 + 1024))|flip $((SZ_IDX - 1))|trunc 0|trunc $((SZ_IDX / 2))"
	"marker|$ST/DECREE-STORE|DECREE-STORE|flip 0|flip 13|trunc 7"
)

# run NAME cmd...: under a timeout; sets RC/OUT/ERR; checks the contract
hangs=0
run() {
	local name=$1
	shift
	_run timeout "$T" "$@"
	if [ "$RC" -eq 124 ]; then
		not_ok "$what: $name hangs"
		hangs=$((hangs + 1))
		return 1
	fi
	if grep -q 'Sanitizer\|runtime error' <<<"$ERR" || [ "$RC" -gt 1 ]; then
		not_ok "$what: $name exits 0 or 1, no crash" "exit $RC: $ERR"
		return 1
	fi
	if [ "$RC" -eq 1 ]; then
		# (fsck lists the problems on stdout)
		case "$ERR" in *"decree: "*) ;; *) false ;; esac &&
			case "$OUT$ERR" in *"$ident"* | *"$ident2"*) ;; *) false ;; esac || {
			not_ok "$what: $name fails naming the damaged file" "$OUT $ERR"
			return 1
		}
	fi
	return 0
}

for c in "${cases[@]}"; do
	IFS='|' read -r kind file ident damages <<<"$c"
	IFS='|' read -r -a dl <<<"$damages"
	for d in "${dl[@]}"; do
		fresh
		what="$kind $d"
		# a record or pack also shows up as the object ids it holds
		ident2=$ident
		[ "$kind" = record ] && ident2=${ident:0:12}
		damage "$file" $d
		summary=""
		bad=0
		# first, before a command rewrites a cache
		run fsck "$DECREE" -C "$B" fsck || bad=1
		summary="$summary fsck=$RC"
		if [ "$RC" -ne 1 ]; then
			not_ok "$what: fsck finds the damage" "exit $RC: $OUT"
			bad=1
		fi
		case "$OUT$ERR" in *"$ident"* | *"$ident2"*) ;;
		*) not_ok "$what: fsck names the damaged file" "$OUT $ERR"; bad=1 ;; esac
		run list "$DECREE" -C "$B" checkpoint list || bad=1
		summary="$summary list=$RC"
		run show "$DECREE" -C "$B" checkpoint show s:A || bad=1
		summary="$summary show=$RC"
		run diff "$DECREE" -C "$B" checkpoint diff s:A t:C || bad=1
		summary="$summary diff=$RC"
		before=$(fast_state "$B")
		if run restore "$DECREE" -C "$B" checkpoint restore s:A; then
			if [ "$RC" -eq 0 ]; then
				_run timeout "$T" "$DECREE" -C "$B" checkpoint restore s:A --dry-run
				case "$OUT" in *"nothing to restore"* | *"would create 0, restore 0, delete 0"*) ;;
				*) not_ok "$what: restore exits 0 and reaches A" "$OUT $ERR"; bad=1 ;; esac
				_run timeout "$T" "$DECREE" -C "$B" undo
			elif [ "$(fast_state "$B")" != "$before" ]; then
				not_ok "$what: a failed restore leaves the tree as it was"
				bad=1
			fi
		else
			bad=1
		fi
		summary="$summary restore=$RC"
		[ "$(fast_state "$B")" = "$before" ] || { not_ok "$what: the tree is back as it was"; bad=1; }
		if run create "$DECREE" -C "$B" checkpoint create --session u --message new; then
			if [ "$RC" -eq 0 ]; then
				cp "$B/src/deep/big.txt" "$SCRATCH/big.save"
				echo scribble >"$B/src/deep/big.txt"
				_run timeout "$T" "$DECREE" -C "$B" checkpoint restore u:new
				if [ "$RC" -ne 0 ] || ! cmp -s "$B/src/deep/big.txt" "$SCRATCH/big.save"; then
					not_ok "$what: a checkpoint created on the damaged store restores" "exit $RC: $ERR"
					bad=1
				fi
				cp "$SCRATCH/big.save" "$B/src/deep/big.txt"
			fi
		else
			bad=1
		fi
		summary="$summary create=$RC"
		run gc-dry "$DECREE" -C "$B" gc --dry-run || bad=1
		summary="$summary gc=$RC"
		if [ "$kind" != marker ]; then
			run repair "$DECREE" -C "$B" fsck --repair || bad=1
			summary="$summary repair=$RC"
			_run timeout "$T" "$DECREE" -C "$B" fsck
			if [ "$RC" -ne 0 ]; then
				not_ok "$what: fsck is clean after fsck --repair" "$OUT $ERR"
				bad=1
			fi
			for id in $("$DECREE" -C "$B" --json checkpoint list 2>/dev/null | $PY3 -c 'import json, sys
print(" ".join(c["id"] for c in json.load(sys.stdin)["checkpoints"]))'); do
				_run timeout "$T" "$DECREE" -C "$B" checkpoint restore "$id" --dry-run
				[ "$RC" -eq 0 ] || { not_ok "$what: checkpoint ${id:0:12} restores after the repair" "$ERR"; bad=1; }
			done
		fi
		[ "$(fast_state "$B")" = "$before" ] || { not_ok "$what: fsck and repair leave the tree alone"; bad=1; }
		[ $bad = 0 ] && ok "$what: every command works or fails naming it"
		echo "# outcome $what:$summary"
	done
done
[ $hangs = 0 ] && ok "no command hung"
done_testing
