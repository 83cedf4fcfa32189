#!/bin/bash
# pipeline_run.sh - the forms of `decree run` (seed 002 "decree run",
# DESIGN "The pipeline"): -p, -m -p, -v (routine, input_file, custom
# variables), piped stdin, a spec without body; message names (-m
# kebab-cased and cut to 50, the router via commands.router, the spec's
# stem, run-<chain>; collision suffixes against inbox/, done/, dead/);
# routine selection (message, spec frontmatter, router, default_routine;
# RoutineNotFound); custom variables and their defaults; normalization of
# hand-written messages (a complete one stays byte-identical); no prompt
# without a terminal; usage errors.
. "$(dirname "$0")/lib.sh"
unset DECREE_STORE

# fm FILE KEY: a frontmatter value; fmblock FILE: the frontmatter lines; body FILE
fmblock() { sed -n '1{/^---$/!q};1d;/^---$/q;p' "$1"; }
# the value a routine recorded: rec ID NAME
rec() { cat ".decree/runs/$1/$2" 2>/dev/null; }
idof() { fm "$1" id; }
# the message in done/ with the newest chain
newest() { for f in .decree/inbox/done/*.md; do printf '%s %s\n' "$(fm "$f" chain)" "${f##*/}"; done | sort | tail -1 | cut -d' ' -f2; }

BIN=$SCRATCH/bin
mkdir -p "$BIN"
# A fake router: logs each prompt (its one argument) and answers from files.
cat >"$BIN/router" <<'EOF'
#!/bin/bash
n=$(ls "$ROUTER_DIR"/prompt.* 2>/dev/null | wc -l)
printf '%s' "$1" >"$ROUTER_DIR/prompt.$((n + 1))"
printf '%s' "$#" >"$ROUTER_DIR/argc.$((n + 1))"
case "$1" in
Summarize*) f=name ;;
Choose*) f=routine ;;
*) f=other ;;
esac
[ -f "$ROUTER_DIR/fail" ] && exit 3
[ -f "$ROUTER_DIR/$f" ] && cat "$ROUTER_DIR/$f"
exit 0
EOF
chmod +x "$BIN/router"
export ROUTER_DIR=$SCRATCH/router
mkdir -p "$ROUTER_DIR"
router_reset() { rm -f "$ROUTER_DIR"/*; }
router_prompts() { cat "$ROUTER_DIR"/prompt.* 2>/dev/null; }

P=$SCRATCH/proj
mkdir -p "$P" && cd "$P" && D -q init || exit 1
cfg() { # the config of this project: router on/off, default routine
	{
		echo "commands:"
		[ "${ROUTER:-on}" = on ] && echo "  router: $BIN/router {prompt}"
		echo "max_retries: 1"
		echo "default_routine: ${DEFAULT_ROUTINE:-rec}"
	} >.decree/config.yml
}
cfg
# rec: records its environment and the inbox file as it sees it
cat >.decree/routines/rec.sh <<'EOF'
#!/bin/bash
# Record what the routine sees.
target_branch="${target_branch:-develop}"
reviewer="${reviewer:-nobody}"
set -e
for v in spec_file message_file message_id message_dir chain seq target_branch reviewer DECREE_ATTEMPT; do
	printf '%s' "${!v-<unset>}" >"$message_dir/$v"
done
cat .decree/inbox/*.md >"$message_dir/inbox-during" 2>/dev/null || true
echo "$message_id" >>rec-order.txt
EOF
cat >.decree/routines/review.sh <<'EOF'
#!/bin/bash
# A review routine.
target_branch="${target_branch:-main}"
reviewer="${reviewer:-alice}"
printf '%s' "$target_branch" >"$message_dir/target_branch"
printf '%s' "$reviewer" >"$message_dir/reviewer"
printf 'review' >"$message_dir/which"
EOF
cat >.decree/routines/specr.sh <<'EOF'
#!/bin/bash
printf 'specr' >"$message_dir/which"
EOF
echo base >base.txt

# ===== -m NAME -p PROMPT ===================================================================
router_reset
t "run -m fix-types -p 'fix the auth types'" D run -m fix-types -p "fix the auth types"
M=.decree/inbox/done/fix-types.md
check "... a message named fix-types.md, processed (in done/)" test -f "$M"
same "... type: task" "$(fm "$M" type)" task
same "... the prompt is the body" "$(body "$M")" "fix the auth types"
id=$(idof "$M")
chain=$(fm "$M" chain)
case "$chain" in [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]) ok "... chain is 16 digits" ;; *) not_ok "... chain is 16 digits" "$chain" ;; esac
same "... id is <chain>-0, seq 0" "$id $(fm "$M" seq)" "$chain-0 0"
same "... frontmatter: id chain seq type routine, in order" "$(fmblock "$M")" \
	"$(printf 'id: %s\nchain: %s\nseq: 0\ntype: task\nroutine: rec' "$chain-0" "$chain")"
check "... run directory .decree/runs/<chain>-0/" test -d ".decree/runs/$chain-0"
same "... the routine got message_id, chain, seq" "$(rec "$id" message_id) $(rec "$id" chain) $(rec "$id" seq)" "$id $chain 0"
same "... message_file and message_dir" "$(rec "$id" message_file) $(rec "$id" message_dir)" \
	".decree/runs/$id/message.md .decree/runs/$id"
same "... spec_file is empty for a task" "$(rec "$id" spec_file)" ""
same "... message.md in the run directory equals the message" "$(cat ".decree/runs/$id/message.md")" "$(cat "$M")"
same "... -m skips the router for the name" "$(router_prompts | grep -c Summarize)" 0

# ===== -p without -m: the router names it ================================================
router_reset
printf 'Fix Auth Type Errors\n' >"$ROUTER_DIR/name"
t "run -p 'fix the auth type errors' (router answers 'Fix Auth Type Errors')" D run -p "fix the auth type errors"
check "... message named fix-auth-type-errors.md" test -f .decree/inbox/done/fix-auth-type-errors.md
same "... the router got exactly one argument" "$(cat "$ROUTER_DIR/argc.1")" 1
case "$(cat "$ROUTER_DIR/prompt.1")" in
"Summarize this task as a kebab-case name under 5 words. Respond with ONLY the name."*"fix the auth type errors"*) ok "... the router's prompt: the instruction and the body" ;;
*) not_ok "... the router's prompt: the instruction and the body" "$(cat "$ROUTER_DIR/prompt.1")" ;;
esac
t "the same prompt again" D run -p "fix the auth type errors"
check "... collides with done/: fix-auth-type-errors-2.md" test -f .decree/inbox/done/fix-auth-type-errors-2.md
printf 'parked\n' >.decree/inbox/dead/fix-auth-type-errors-3.md
t "and again, with -3 taken in dead/" D run -p "fix the auth type errors"
check "... skips dead/'s name: fix-auth-type-errors-4.md" test -f .decree/inbox/done/fix-auth-type-errors-4.md
same "... the dead one is untouched" "$(cat .decree/inbox/dead/fix-auth-type-errors-3.md)" parked
rm .decree/inbox/dead/fix-auth-type-errors-3.md
# a name taken by a message waiting in the inbox
printf -- '---\nroutine: rec\n---\nwaiting one\n' >.decree/inbox/queued-name.md
printf 'queued name\n' >"$ROUTER_DIR/name"
t "a name taken in inbox/" D run -p "the new one"
same "... gets -2; the waiting message keeps its name" "$(body .decree/inbox/done/queued-name-2.md)|$(body .decree/inbox/done/queued-name.md)" "the new one|waiting one"
# the router's answer is kebab-cased and cut to 50 bytes
printf '  "Refactor: The   Whole__Thing!!" \n' >"$ROUTER_DIR/name"
t "router answer with punctuation" D run -p "refactor"
check "... kebab-cased: refactor-the-whole-thing.md" test -f .decree/inbox/done/refactor-the-whole-thing.md
printf 'a-very-long-name-that-goes-on-and-on-and-on-well-past-fifty-characters\n' >"$ROUTER_DIR/name"
t "a long router answer" D run -p "long"
n=$(cd .decree/inbox/done && ls | grep '^a-very-long')
same "... cut to 50 bytes" "${#n}" 53 # 50 + ".md"
same "... a prefix of the answer" "$n" "$(printf 'a-very-long-name-that-goes-on-and-on-and-on-well-past' | cut -c1-50).md"
t "the long one again" D run -p "long"
n2=$(cd .decree/inbox/done && ls | grep '^a-very-long' | grep -- '-2\.md$')
check "... the collision name ends in -2 and still fits in 50 bytes" test -n "$n2" -a "${#n2}" -le 53

# router failures fall back to run-<chain>
router_reset
touch "$ROUTER_DIR/fail"
t "router fails (exit 3)" D run -p "anything"
f=$(newest)
same "... name is run-<chain>" "$f" "run-$(fm ".decree/inbox/done/$f" chain).md"
router_reset
printf '  \n' >"$ROUTER_DIR/name"
t "router answers blanks" D run -p "anything"
f=$(newest)
same "... name is run-<chain>" "$f" "run-$(fm ".decree/inbox/done/$f" chain).md"
ROUTER=off cfg
t "no router configured" D run -p "anything at all"
f=$(newest)
same "... name is run-<chain>" "$f" "run-$(fm ".decree/inbox/done/$f" chain).md"
same "... body kept" "$(body ".decree/inbox/done/$f")" "anything at all"
ROUTER=on cfg

# the prompt reaches the router shell-quoted: no injection
router_reset
printf 'quoting\n' >"$ROUTER_DIR/name"
evil='it'"'"'s "quoted" $(touch INJECTED) `touch INJECTED2` ; touch INJECTED3 \ done'
t "a prompt full of shell syntax" D run -p "$evil"
check "... nothing was executed" test ! -e INJECTED -a ! -e INJECTED2 -a ! -e INJECTED3
case "$(cat "$ROUTER_DIR/prompt.1")" in *"$evil"*) ok "... the router got it verbatim" ;; *) not_ok "... the router got it verbatim" "$(cat "$ROUTER_DIR/prompt.1")" ;; esac
same "... as one argument" "$(cat "$ROUTER_DIR/argc.1")" 1
same "... and it is the body, verbatim" "$(body .decree/inbox/done/quoting.md)" "$evil"

# ===== -m kebab-case and 50 bytes ===========================================================
t "run -m 'Hello,  World!! __ Foo'" D run -m 'Hello,  World!! __ Foo' -p x
check "... hello-world-foo.md" test -f .decree/inbox/done/hello-world-foo.md
long='Implement The Entire Authentication Subsystem From Scratch Today Please'
t "run -m with a 70-character name" D run -m "$long" -p x
same "... cut to 50 bytes of kebab-case" "$(cd .decree/inbox/done && ls | grep '^implement-the')" \
	"$(printf 'implement-the-entire-authentication-subsystem-from-scratch' | cut -c1-50 | sed 's/-$//').md"
t "run -m fix-types again" D run -m fix-types -p "second"
same "... fix-types-2.md" "$(body .decree/inbox/done/fix-types-2.md)" second

# ===== -v routine, custom variables =======================================================
router_reset
printf 'rec\n' >"$ROUTER_DIR/routine"
t "run -p fix -v routine=review" D run -m v1 -p fix -v routine=review
same "... routine: review in the frontmatter" "$(fm .decree/inbox/done/v1.md routine)" review
same "... the review routine ran" "$(rec "$(idof .decree/inbox/done/v1.md)" which)" review
same "... the router was not asked for a routine" "$(router_prompts | grep -c '^Choose')" 0

t "run -p review -v routine=review -v target_branch=main -v reviewer=bob" \
	D run -m pr-review -p "Review the current branch" -v routine=review -v target_branch=feature -v reviewer=bob
M=.decree/inbox/done/pr-review.md
c=$(fm "$M" chain)
same "... every -v pair in the frontmatter, after the standard keys" "$(cat "$M")" "$(printf -- '---\nid: %s-0\nchain: %s\nseq: 0\ntype: task\nroutine: review\ntarget_branch: feature\nreviewer: bob\n---\nReview the current branch' "$c" "$c")"
same "... passed to the routine (frontmatter overrides the declared defaults)" "$(rec "$c-0" target_branch) $(rec "$c-0" reviewer)" "feature bob"

t "a routine's declared parameter not given" D run -m defaults -p x -v routine=review </dev/null
id=$(idof .decree/inbox/done/defaults.md)
same "... keeps the routine's defaults" "$(rec "$id" target_branch) $(rec "$id" reviewer)" "main alice"
same "... silently (no prompt on stderr or stdout)" "$(printf '%s\n%s' "$OUT" "$ERR" | grep -ci 'target_branch')" 0
same "... and the message gets no such key" "$(fm .decree/inbox/done/defaults.md target_branch)" ""

t "-vKEY=VALUE and --var=KEY=VALUE forms" D run -m forms -p x -vroutine=rec --var=target_branch=x1
id=$(idof .decree/inbox/done/forms.md)
same "... both taken" "$(rec "$id" target_branch)" x1
t "a value with '=' and spaces" D run -m eqval -p x -v routine=rec -v 'target_branch=a=b c'
same "... kept whole" "$(rec "$(idof .decree/inbox/done/eqval.md)" target_branch)" "a=b c"
t "a custom key the routine does not declare" D run -m extra -p x -v routine=rec -v ticket=ABC-1
same "... is in the frontmatter" "$(fm .decree/inbox/done/extra.md ticket)" ABC-1

# values that need YAML quoting, standard variables, hostile names
t "a -v value that needs YAML quoting" D run -m yamlq -p x -v routine=rec -v 'target_branch=a: b # c' -v 'reviewer="quoted" '"'"'single'"'"
id=$(idof .decree/inbox/done/yamlq.md)
same "... reaches the routine unchanged" "$(rec "$id" target_branch)|$(rec "$id" reviewer)" "a: b # c|\"quoted\" 'single'"
check "... the frontmatter line is quoted YAML" grep -q '^target_branch: ["'"'"']a: b # c["'"'"']$' .decree/inbox/done/yamlq.md
t "-v message_dir=/tmp/evil -v message_file=evil.md" D run -m stdvars -p x -v routine=rec -v message_dir=/tmp/evil -v message_file=evil.md
id=$(idof .decree/inbox/done/stdvars.md)
same "... the routine still gets decree's message_dir and message_file" "$(rec "$id" message_dir) $(rec "$id" message_file)" ".decree/runs/$id .decree/runs/$id/message.md"
mkdir -p .decree/evil && printf '#!/bin/bash\ntouch "$OLDPWD/EVIL-RAN" EVIL-RAN\n' >.decree/evil.sh
t_err "decree: unknown routine '../evil'; *" "-v routine=../evil (a path): not a routine, refused (exit 2)" 2 D run -m traversal -p x -v routine=../evil
check "... it did not run" test ! -e EVIL-RAN
check "... nothing queued" test ! -e .decree/inbox/traversal.md -a ! -e .decree/inbox/dead/traversal.md -a ! -e .decree/inbox/done/traversal.md
rm -rf .decree/evil .decree/evil.sh
t "-m ../../escape" D run -m ../../escape -p x -v routine=rec
check "... the message stays in the inbox tree: escape.md" test -f .decree/inbox/done/escape.md -a ! -e "$SCRATCH/escape.md" -a ! -e .decree/escape.md
ROUTER=off cfg
t "-m '!!!' (nothing left after kebab-casing)" D run -m '!!!' -p x -v routine=rec
f=$(newest)
same "... falls back to run-<chain>" "$f" "run-$(fm ".decree/inbox/done/$f" chain).md"
ROUTER=on cfg
body3=$(printf -- '---\nroutine: evil\nfoo: bar\n---\nbody after a fake frontmatter')
t "a body that starts with a frontmatter-like block" D run -m fakefm -p "$body3" -v routine=rec
same "... stays the body" "$(body .decree/inbox/done/fakefm.md)" "$body3"
same "... its keys are not frontmatter" "$(fm .decree/inbox/done/fakefm.md foo)|$(fm .decree/inbox/done/fakefm.md routine)" "|rec"

# only the routine's declared custom variables reach its environment
# (DESIGN: "plus the custom variables the routine declares")
t "-v PATH=/nonexistent (not declared by the routine)" D run -m pathvar -p x -v routine=rec -v PATH=/nonexistent
check "... the routine still ran (its PATH was not replaced)" test -f .decree/inbox/done/pathvar.md
printf 'touch BASH_ENV_RAN\n' >"$SCRATCH/hook.sh"
t "-v BASH_ENV=hook.sh (not declared)" D run -m bashenv -p x -v routine=rec -v "BASH_ENV=$SCRATCH/hook.sh"
check "... is not sourced by the routine's bash" test ! -e BASH_ENV_RAN
rm -f BASH_ENV_RAN
t "-v DECREE_ATTEMPT=9" D run -m attvar -p x -v routine=rec -v DECREE_ATTEMPT=9
same "... the routine sees decree's DECREE_ATTEMPT (1)" "$(rec "$(idof .decree/inbox/done/attvar.md)" DECREE_ATTEMPT)" 1
cat >.decree/routines/undecl.sh <<'EOF2'
#!/bin/bash
declared="${declared:-d}"
printf '%s|%s' "$declared" "${undeclared_key-<unset>}" >"$message_dir/vars"
EOF2
t "-v declared=x -v undeclared_key=y" D run -m undecl -p x -v routine=undecl -v declared=x -v undeclared_key=y
same "... the declared one is exported, the undeclared one is not" "$(rec "$(idof .decree/inbox/done/undecl.md)" vars)" "x|<unset>"
same "... both stay in the frontmatter" "$(fm .decree/inbox/done/undecl.md declared)|$(fm .decree/inbox/done/undecl.md undeclared_key)" "x|y"

# from a sub-directory, and with -C
printf '#!/bin/bash\npwd >"$message_dir/pwd"\n' >.decree/routines/pwdr.sh
mkdir -p deep/er && cd deep/er || exit 1
t "run from a sub-directory of the project" D run -m from-sub -p x -v routine=pwdr
cd "$P" || exit 1
check "... the message is in the project's inbox" test -f .decree/inbox/done/from-sub.md
same "... the routine ran in the project root" "$(rec "$(idof .decree/inbox/done/from-sub.md)" pwd)" "$P"
cd "$SCRATCH" || exit 1
t "run -C PROJECT from outside" D -C "$P" run -m via-c -p x -v routine=pwdr
cd "$P" || exit 1
same "... ran in the project root" "$(rec "$(idof .decree/inbox/done/via-c.md)" pwd)" "$P"
# ===== piped stdin ==========================================================================
t "piped stdin is the body" D run -m piped -v routine=rec <<<"$(printf 'task from stdin\n\nsecond paragraph')"
same "... body" "$(body .decree/inbox/done/piped.md)" "$(printf 'task from stdin\n\nsecond paragraph')"
router_reset
printf 'From Stdin\n' >"$ROUTER_DIR/name"
t "piped stdin without -m: the router names it" D run -v routine=rec <<<"name me from stdin"
check "... from-stdin.md" test -f .decree/inbox/done/from-stdin.md
case "$(cat "$ROUTER_DIR/prompt.1")" in *"name me from stdin"*) ok "... the router saw the piped body" ;; *) not_ok "... the router saw the piped body" "$(router_prompts)" ;; esac
t "-p wins over stdin" D run -m pwins -p "from -p" -v routine=rec <<<"from stdin"
same "... body" "$(body .decree/inbox/done/pwins.md)" "from -p"

# ===== a spec: -v input_file without body ====================================================
mkdir -p specs
printf '# Add auth\n' >specs/01-add-auth.spec.md
router_reset
t "run -v input_file=specs/01-add-auth.spec.md" D run -v input_file=specs/01-add-auth.spec.md
M=.decree/inbox/done/01-add-auth.md
check "... named after the spec's stem: 01-add-auth.md" test -f "$M"
same "... type: spec, input_file set" "$(fm "$M" type) $(fm "$M" input_file)" "spec specs/01-add-auth.spec.md"
same "... no body" "$(body "$M")" ""
id=$(idof "$M")
case "$id" in *-0) ok "... id <chain>-0" ;; *) not_ok "... id <chain>-0" "$id" ;; esac
for f in message.md manifest.json routine.log changes.diff outcome.json; do
	check "... .decree/runs/<chain>-0/$f" test -f ".decree/runs/$id/$f"
done
same "... spec_file is the input file" "$(rec "$id" spec_file)" specs/01-add-auth.spec.md
check "... the spec is appended to processed-spec.md" grep -qx '01-add-auth.spec.md' specs/processed-spec.md
same "... no router call for the name" "$(router_prompts | grep -c '^Summarize')" 0
t "the same spec again" D run -v input_file=specs/01-add-auth.spec.md
check "... 01-add-auth-2.md" test -f .decree/inbox/done/01-add-auth-2.md
same "... processed-spec.md lists it once" "$(grep -c '01-add-auth.spec.md' specs/processed-spec.md)" 1
t "-m with input_file" D run -m named-spec -v input_file=specs/01-add-auth.spec.md
same "... -m names it; type spec" "$(fm .decree/inbox/done/named-spec.md type)" spec
printf -- '---\nroutine: specr\n---\n# Two\n' >specs/02-two.spec.md
t "a spec whose frontmatter names a routine" D run -v input_file=specs/02-two.spec.md
M=.decree/inbox/done/02-two.md
same "... routine from the spec's frontmatter" "$(fm "$M" routine)" specr
same "... and it ran" "$(rec "$(idof "$M")" which)" specr
t "-v routine beats the spec's frontmatter" D run -m two-b -v input_file=specs/02-two.spec.md -v routine=rec
same "... routine: rec" "$(fm .decree/inbox/done/two-b.md routine)" rec
printf 'notes\n' >specs/notes.md
t "an input_file that is not a .spec.md" D run -m notes -v input_file=specs/notes.md -p "see notes"
same "... type: task" "$(fm .decree/inbox/done/notes.md type)" task
t_err "decree: *" "an input_file that does not exist fails, exit 1" 1 D run -m ghost -v input_file=specs/ghost.spec.md
check "... nothing queued" test ! -e .decree/inbox/ghost.md -a ! -e .decree/inbox/done/ghost.md -a ! -e .decree/inbox/dead/ghost.md

# ===== routine selection: router, default_routine, RoutineNotFound =========================
router_reset
printf 'review\n' >"$ROUTER_DIR/routine"
t "no routine given: the router picks 'review'" D run -m picked -p "please review"
same "... routine: review" "$(fm .decree/inbox/done/picked.md routine)" review
case "$(grep -l '^Choose' "$ROUTER_DIR"/prompt.* | head -1 | xargs cat)" in
*rec*review*specr*"please review"*) ok "... the router was offered the routines and the body" ;;
*) not_ok "... the router was offered the routines and the body" "$(router_prompts)" ;;
esac
router_reset
printf 'no-such-routine\n' >"$ROUTER_DIR/routine"
t "the router names a routine that does not exist" D run -m picked2 -p "x"
same "... default_routine instead" "$(fm .decree/inbox/done/picked2.md routine)" rec
ROUTER=off DEFAULT_ROUTINE=review cfg
t "no router: default_routine (review)" D run -m dflt -p "x"
same "... routine: review" "$(fm .decree/inbox/done/dflt.md routine)" review
ROUTER=on cfg
# an unknown routine is refused before anything is queued (issue 11):
# exit 2, one line, the closest routine or the list of them
runs0=$(ls .decree/runs | wc -l)
inbox0=$(find .decree/inbox | LC_ALL=C sort)
t_err "decree: unknown routine 'nope'; the routines are: develop, pwdr, rec, review, specr, undecl" "-v routine=nope: refused, exit 2, the routines listed" 2 D run -m nope -p x -v routine=nope
same "... one line on stderr" "$(printf '%s\n' "$ERR" | wc -l)" 1
same "... nothing queued, no run directory" "$(find .decree/inbox | LC_ALL=C sort) $(ls .decree/runs | wc -l)" "$inbox0 $runs0"
t_err "decree: unknown routine 'revew'; did you mean 'review'?" "-v routine=revew: did you mean 'review'?" 2 D run -m typo -p x -v routine=revew
same "... exactly that line" "$ERR" "decree: unknown routine 'revew'; did you mean 'review'?"
t_err "decree: unknown routine 'Rec'; did you mean 'rec'?" "-v routine=Rec: names are exact, the suggestion ignores case" 2 D run -m typo -p x -v routine=Rec
printf -- '---\nroutine: reviw\n---\n# a spec naming a misspelt routine\n' >specs/09-typo.spec.md
t_err "decree: unknown routine 'reviw' (the routine: of specs/09-typo.spec.md); did you mean 'review'?" \
	"a spec whose frontmatter names an unknown routine: refused, exit 2" 2 D run -v input_file=specs/09-typo.spec.md
rm specs/09-typo.spec.md
ROUTER=off DEFAULT_ROUTINE=revieww cfg
t_err "decree: unknown routine 'revieww' (default_routine in .decree/config.yml); did you mean 'review'?" \
	"default_routine names an unknown routine: refused, exit 2" 2 D run -m dflt2 -p x
ROUTER=on DEFAULT_ROUTINE=revieww cfg
router_reset
t_err "decree: unknown routine 'revieww' (default_routine in .decree/config.yml); *" \
	"... also with a router (default_routine is its fallback)" 2 D run -m dflt2 -p x
same "... the router was not asked" "$(router_prompts | grep -c .)" 0
ROUTER=on cfg
t "... -v routine=rec runs all the same" D run -m dflt3 -p x -v routine=rec
same "... nothing queued by the refusals" "$(ls .decree/inbox/done | grep -c -e '^typo' -e '^nope' -e '^dflt2' -e '^09-typo')" 0
same "... --json: the error document, code usage" "$(D --json run -m nope -p x -v routine=nope)" \
	'{"error":{"code":"usage","message":"unknown routine '"'"'nope'"'"'; the routines are: develop, pwdr, rec, review, specr, undecl"}}'

# ===== normalization of hand-written inbox messages ========================================
ROUTER=off cfg
printf 'Just a body, no frontmatter.\n' >.decree/inbox/handmade.md
printf -- '---\nticket: T-7\nroutine: rec\n---\nwith a custom key\n' >.decree/inbox/partial.md
t "decree process picks up hand-written messages" D process
M=.decree/inbox/done/handmade.md
c=$(fm "$M" chain)
same "... a body-only message gets id, chain, seq, type, routine" "$(fmblock "$M")" \
	"$(printf 'id: %s-0\nchain: %s\nseq: 0\ntype: task\nroutine: rec' "$c" "$c")"
same "... its body is kept" "$(body "$M")" "Just a body, no frontmatter."
case "$(rec "$c-0" inbox-during)" in "---"*"id: $c-0"*"Just a body"*) ok "... the inbox file was rewritten before the routine ran" ;;
*) not_ok "... the inbox file was rewritten before the routine ran" "$(rec "$c-0" inbox-during)" ;; esac
M=.decree/inbox/done/partial.md
c=$(fm "$M" chain)
same "... custom keys kept after the standard ones" "$(fmblock "$M")" \
	"$(printf 'id: %s-0\nchain: %s\nseq: 0\ntype: task\nroutine: rec\nticket: T-7' "$c" "$c")"
# a complete message stays byte-identical
cat >"$SCRATCH/complete.md" <<'EOF'
---
id: 2020010203040500-0
chain: 2020010203040500
seq: 0
type: task
routine: rec
ticket: T-8
---
A complete message.

With two paragraphs and trailing spaces   
EOF
cp "$SCRATCH/complete.md" .decree/inbox/complete.md
t "process a complete message" D process
check "... it stays byte-identical (done/ copy)" cmp -s "$SCRATCH/complete.md" .decree/inbox/done/complete.md
check "... message.md in its run dir too" cmp -s "$SCRATCH/complete.md" .decree/runs/2020010203040500-0/message.md
case "$(rec 2020010203040500-0 inbox-during)" in "$(cat "$SCRATCH/complete.md")"*) ok "... not rewritten before the run either" ;;
*) not_ok "... not rewritten before the run either" "$(rec 2020010203040500-0 inbox-during)" ;; esac
# a follow-up file without frontmatter: chain and seq from its name
printf 'follow-up body\n' >.decree/inbox/2020010203040500-1.md
t "process a follow-up without frontmatter" D process
M=.decree/inbox/done/2020010203040500-1.md
same "... chain and seq from the file name" "$(fm "$M" id) $(fm "$M" chain) $(fm "$M" seq)" "2020010203040500-1 2020010203040500 1"
check "... run directory <chain>-1" test -f .decree/runs/2020010203040500-1/routine.log
# input_file in a hand-written message makes it a spec
printf -- '---\ninput_file: specs/02-two.spec.md\n---\n' >.decree/inbox/hand-spec.md
t "process a hand-written message with input_file" D process
same "... type: spec, routine from the spec frontmatter" "$(fm .decree/inbox/done/hand-spec.md type) $(fm .decree/inbox/done/hand-spec.md routine)" "spec specr"
printf -- '---\nroutine: [oops\n---\nbad yaml\n' >.decree/inbox/broken.md
t_exit 1 "a message with broken frontmatter: dead-lettered (exit 1)" D process
check "... in inbox/dead/" test -f .decree/inbox/dead/broken.md
same "... left as it was" "$(cat .decree/inbox/dead/broken.md)" "$(printf -- '---\nroutine: [oops\n---\nbad yaml')"

# ===== never a prompt without a terminal =====================================================
# (and no empty message either: a message needs a task, issue 11)
DEFAULT_ROUTINE=rec ROUTER=off cfg
n0=$(ls .decree/inbox/done | wc -l)
t_err "decree: the message is empty: *" "run with no flags, stdin /dev/null, no controlling terminal: no prompt, the empty message refused (exit 2)" 2 \
	timeout 60 setsid -w "$DECREE" run </dev/null
same "... nothing queued" "$(ls .decree/inbox/done | wc -l) $(ls .decree/inbox | grep -c '\.md$')" "$n0 0"
t_err "decree: the message is empty: *" "run -v routine=rec only, stdin a blank line, no terminal: refused (exit 2)" 2 \
	timeout 60 setsid -w "$DECREE" run -v routine=rec <<<""
for blank in "empty" "space" "white space and newlines"; do
	case $blank in empty) b= ;; space) b=" " ;; *) b=$(printf ' \t\n \r\n.') b=${b%.} ;; esac
	t_err "decree: the message is empty: give the task with -p PROMPT or on stdin, or a spec with -v input_file=FILE*" \
		"run -p with $blank: refused (exit 2)" 2 D run -m blank -p "$b" -v routine=rec
done
printf ' \n\t\n' >"$SCRATCH/blank.txt"
t_err "decree: the message is empty: *" "a blank body on stdin is refused (exit 2)" 2 D run -m blank -v routine=rec <"$SCRATCH/blank.txt"
same "... nothing queued by the blank ones" "$(find .decree/inbox -name 'blank*' | wc -l)" 0
t "a blank prompt with an input file is a spec message: fine" D run -m blank-spec -p " " -v input_file=specs/02-two.spec.md -v routine=rec
check "... processed" test -f .decree/inbox/done/blank-spec.md

# ===== usage errors ==========================================================================
for bad in "-v noequals" "-v =x" "-v 1a=x" "-v id=x" "-v chain=x" "-v seq=3" "-m" "-p" "-v" "extra-arg"; do
	# shellcheck disable=SC2086
	t_err "decree: *" "run $bad: usage error, exit 2" 2 D run -p x $bad
done
same "... nothing queued by usage errors" "$(ls .decree/inbox | grep -c '\.md$')" 0
t_err "decree: *" "process takes no arguments" 2 D process extra
t_err "decree: *" "status takes no arguments" 2 D status extra
t "run --help" D run --help
case "$OUT" in *-m*-p*-v*) ok "... documents -m -p -v" ;; *) not_ok "... documents -m -p -v" "$OUT" ;; esac

t "-q: quiet" D -q run -m quiet -p x -v routine=rec
same "... nothing on stderr or stdout" "$OUT$ERR" ""

# ===== --json ================================================================================
t "run --json" D --json run -m json1 -p x -v routine=rec
same "... one JSON document: runs, done, dead, interrupted" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["runs"][0]; print(len(d["runs"]), r["message"], r["routine"], r["outcome"], r["attempts"], d["done"], d["dead"], d["interrupted"])')" \
	"1 json1.md rec done 1 1 0 False"

done_testing
