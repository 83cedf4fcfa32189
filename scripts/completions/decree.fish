# fish completion for decree.
#
# Installed by `make install` as
# $(PREFIX)/share/fish/vendor_completions.d/decree.fish; fish reads that
# directory for PREFIX /usr, and for another prefix when $XDG_DATA_DIRS
# names PREFIX/share (else copy it to ~/.config/fish/completions/).
#
# Completes commands, subcommands (also after `help`), each command's
# options, directories, --color=WHEN, PATCH files, agents, checkpoint REFs
# and sessions (from `decree --json checkpoint list`), rollback's numbers
# (from `decree --json log`; both only where a store already exists:
# completing never creates one), workspace names (from `decree --json
# workspace list`, likewise), run ids (.decree/runs/) and routine= names
# (.decree/routines/).  The lists here are checked against the program's
# --help texts and option tables by tests/cli/completion.sh.

# The words of the command line before the cursor, without the global
# options and their values: "decree checkpoint show ..." -> checkpoint show ...
function __decree_args
    set -l w (commandline -opc)
    set -e w[1]
    set -l out
    set -l skip 0
    for a in $w
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $a
            case -C --store
                set skip 1
            case '-C?*' '--store=*' --json -q --quiet -h --help --version --color '--color=*' --no-pager
            case '*'
                set -a out $a
        end
    end
    test (count $out) -gt 0; and printf '%s\n' $out
end

# __decree_is PATH...: the command (and subcommand) is PATH
function __decree_is
    set -l a (__decree_args)
    test (count $a) -ge (count $argv); or return 1
    for i in (seq (count $argv))
        test "$a[$i]" = "$argv[$i]"; or return 1
    end
end

# __decree_needs_command: no command yet
function __decree_needs_command
    set -l a (__decree_args)
    test (count $a) -eq 0
end

# __decree_needs_sub CMD: CMD given, no subcommand yet (only options after it)
function __decree_needs_sub
    set -l a (__decree_args)
    test "$a[1]" = $argv[1]; or return 1
    for x in $a[2..-1]
        string match -q -- '-*' $x; or return 1
    end
end

# __decree_npos PATH...: the number of positional words after PATH
# (options and the values of the options that take one left out)
function __decree_npos
    set -l a (__decree_args)
    set -l n 0
    set -l skip 0
    for x in $a[(math (count $argv) + 1)..-1]
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $x
            case -s --session -m --message -l --label --exclude --max-file-size -U --unified --keep --older-than --exec -p --strip -v --var --prompt --from
                set skip 1
            case '-*'
            case '*'
                set n (math $n + 1)
        end
    end
    echo $n
end

# the option value of -C / --store on the command line
function __decree_global
    set -l w (commandline -opc)
    for i in (seq (count $w))
        switch $w[$i]
            case $argv[1]
                set -l j (math $i + 1)
                test $j -le (count $w); and echo $w[$j]
            case "$argv[1]=*"
                string replace -- "$argv[1]=" '' $w[$i]
            case "$argv[1]?*"
                test $argv[1] = -C; and string replace -- -C '' $w[$i]
        end
    end
end

function __decree_root
    set -l c (__decree_global -C)[-1]
    if test -n "$c"
        test -d "$c"; and echo $c
        return
    end
    set -l d $PWD
    while true
        if test -d "$d/.decree"
            echo $d
            return
        end
        test "$d" = /; and return
        set d (path dirname $d)
    end
end

# __decree_query ARGS...: `decree --json ARGS...` on the line's project
# and store, when the store exists already
function __decree_query
    set -l root (__decree_root)
    set -l c (__decree_global -C)[-1]
    set -l s (__decree_global --store)[-1]
    set -l prog (commandline -opc)[1]
    if test -z "$s"; and test -z "$DECREE_STORE"
        test -n "$root"; or return
        test -d "$root/.decree/store"; or test -f "$root/.decree/config.yml"; or return
    end
    set -l args --json
    test -n "$c"; and set -a args -C $c
    test -n "$s"; and set -a args --store $s
    $prog $args $argv 2>/dev/null
end

function __decree_list
    __decree_query checkpoint list
end

# rollback's numbers as `decree log` shows them, with their kind and id:
# 1, 2, ... checkpoints and runs, u1, u2, ... captures.  They number all
# sessions; with --session S (S's own numbers) none are offered.
function __decree_rollback_refs
    contains -- -s (__decree_args); or contains -- --session (__decree_args); or string match -q -- '--session=*' (__decree_args); and return
    __decree_query log | tr '{' '\n' | sed -n 's/^"kind":"\([a-z]*\)","ref":"\(u\{0,1\}[0-9][0-9]*\)","id":"\([^"]*\)".*/\2\t\1 \3/p' |
        sed 's/\([0-9a-f]\{12\}\)[0-9a-f]\{52\}$/\1/'
end

# the commands and their summaries (decree --help)
function __decree_commands
    printf '%s\t%s\n' \
        checkpoint 'create, list, show, diff, restore, prune, drop checkpoints' \
        apply 'apply a unified diff as one undoable transaction' \
        rollback 'list checkpoints newest first, or restore number N' \
        rewind 'the turns of an agent session; restore to before turn N' \
        undo 'undo the last restore, apply, revert or workspace discard' \
        redo 'redo what undo undid' \
        recover 'finish or roll back an interrupted transaction' \
        gc 'delete objects no checkpoint or history needs' \
        fsck 'verify every object and record of the store' \
        projects 'the project roots a store serves' \
        hook 'hooks for coding agents: install, uninstall, status' \
        init 'make this directory a decree project' \
        run 'queue a message and process it with a routine' \
        process 'process the inbox and every unprocessed spec' \
        status "what changed since the last checkpoint; the pipeline's state" \
        log "checkpoints and runs, newest first; a run's logs" \
        diff 'the changes since the last checkpoint, or of a run' \
        revert "reverse a run's changes, verified" \
        workspace 'isolated copies of the project: create, diff, apply, discard' \
        help "this help, or a command's"
end

# __decree_subs CMD: CMD's subcommands and their summaries
function __decree_subs
    switch $argv[1]
        case checkpoint
            printf '%s\t%s\n' \
                create 'snapshot the project' \
                list 'list checkpoints' \
                show "show a checkpoint's files" \
                diff 'diff against the tree or another checkpoint' \
                restore 'make the tree exactly a checkpoint' \
                prune 'delete old checkpoint records' \
                drop "delete a session's records, or all" \
                delete 'delete one checkpoint record'
        case hook
            printf '%s\t%s\n' \
                install "merge decree's hooks into an agent's settings" \
                uninstall "remove decree's hooks" \
                status 'what is installed, the last hook error'
        case projects
            printf '%s\t%s\n' move 're-attach a moved project'
        case workspace
            printf '%s\t%s\n' \
                create 'copy the project into a new workspace' \
                list 'the workspaces of this project' \
                path "print a workspace's directory" \
                diff "a workspace's changes since its base" \
                conflicts 'what an apply would refuse' \
                apply 'merge a workspace into the project, undoably' \
                discard 'remove a workspace, undoably'
    end
end

function __decree_refs
    __decree_list | tr '{' '\n' | sed -n 's/^"id":"\([0-9a-f]\{12\}\)[0-9a-f]*","session":"\([^"\\\\]*\)","message":\(null\|"\([^"\\\\]*\)"\).*/\1\n\2:\4/p' | sed '/:$/d; /[^A-Za-z0-9._:@+,-]/d'
end

function __decree_sessions
    __decree_list | grep -o '"session":"[^"\\\\]*"' | sed 's/^"session":"//; s/"$//' | sort -u
end

function __decree_workspaces
    __decree_query workspace list | grep -o '"name":"[^"\\\\]*"' | sed 's/^"name":"//; s/"$//'
end

function __decree_runs
    set -l root (__decree_root)
    test -n "$root"; and test -d $root/.decree/runs; or return
    for d in $root/.decree/runs/*/
        path basename $d
    end
end

function __decree_vars
    set -l root (__decree_root)
    if test -n "$root"; and test -d $root/.decree/routines
        for f in $root/.decree/routines/*.sh $root/.decree/routines/*.ipynb
            echo routine=(path change-extension '' (path basename $f))
        end
    end
    echo input_file=
end

complete -c decree -f

# global options
complete -c decree -s C -r -a '(__fish_complete_directories)' -d 'project root'
complete -c decree -l store -r -a '(__fish_complete_directories)' -d 'store directory'
complete -c decree -l json -d 'machine-readable output on stdout'
complete -c decree -s q -l quiet -d 'no progress, summaries or notes'
# --color alone means always; a value only after '=' (--color=WHEN)
complete -c decree -l color -d 'color (--color=auto|always|never)'
complete -c decree -n 'string match -q -- "--color=*" (commandline -ct)' -a '--color=auto --color=always --color=never'
complete -c decree -l no-pager -d 'never run a pager'
complete -c decree -s h -l help -d 'show the help'
complete -c decree -l version -d 'print the version'

# commands, subcommands, help
complete -c decree -n __decree_needs_command -a '(__decree_commands)'
complete -c decree -n '__decree_needs_sub checkpoint' -a '(__decree_subs checkpoint)'
complete -c decree -n '__decree_is help; and test (__decree_npos help) -eq 0' -a '(__decree_commands)'
complete -c decree -n '__decree_is help; and test (__decree_npos help) -eq 1' -a '(__decree_subs (__decree_args)[2])'

# checkpoint
complete -c decree -n '__decree_is checkpoint create' -s s -l session -x -a '(__decree_sessions)' -d session
complete -c decree -n '__decree_is checkpoint create' -s m -l message -x -d 'message id within the session'
complete -c decree -n '__decree_is checkpoint create' -s l -l label -x -d label
complete -c decree -n '__decree_is checkpoint create' -l if-changed -d "nothing new when the tree equals the session's latest"
complete -c decree -n '__decree_is checkpoint create' -l exclude -x -d 'an ignore pattern (gitignore syntax), repeatable'
complete -c decree -n '__decree_is checkpoint create' -l max-file-size -x -d 'store no file above this size (K, M, G)'
complete -c decree -n '__decree_is checkpoint list' -s s -l session -x -a '(__decree_sessions)' -d 'only this session'
complete -c decree -n '__decree_is checkpoint show; and test (__decree_npos checkpoint show) -eq 0' -a '(__decree_refs)' -d checkpoint
complete -c decree -n '__decree_is checkpoint delete; and test (__decree_npos checkpoint delete) -eq 0' -a '(__decree_refs)' -d checkpoint
complete -c decree -n '__decree_is checkpoint diff; and test (__decree_npos checkpoint diff) -lt 2' -a '(__decree_refs)' -d checkpoint
complete -c decree -n '__decree_is checkpoint diff' -l stat -d 'per-file counts'
complete -c decree -n '__decree_is checkpoint diff' -l name-status -d 'per-file status'
complete -c decree -n '__decree_is checkpoint diff' -s U -l unified -x -d 'lines of context'
complete -c decree -n '__decree_is checkpoint restore; and test (__decree_npos checkpoint restore) -eq 0' -a '(__decree_refs)' -d checkpoint
complete -c decree -n '__decree_is checkpoint restore' -s n -l dry-run -d 'print the plan, change nothing'
complete -c decree -n '__decree_is checkpoint restore' -l agent-only -d 'revert only the paths the agent changed'
complete -c decree -n '__decree_is checkpoint restore' -s v -l verbose -d 'one line per path as well as the summary'
complete -c decree -n '__decree_is checkpoint prune' -s s -l session -x -a '(__decree_sessions)' -d 'only this session'
complete -c decree -n '__decree_is checkpoint prune' -l keep -x -d 'keep the newest N'
complete -c decree -n '__decree_is checkpoint prune' -l older-than -x -d 'delete those older than DAYS'
complete -c decree -n '__decree_is checkpoint drop' -s s -l session -x -a '(__decree_sessions)' -d 'drop this session'
complete -c decree -n '__decree_is checkpoint drop' -l all -d 'drop every record and the undo history'

# apply
complete -c decree -n '__decree_is apply; and test (__decree_npos apply) -eq 0' -F -d 'patch file'
complete -c decree -n '__decree_is apply' -l check -d 'only check and list what would change'
complete -c decree -n '__decree_is apply' -s R -l reverse -d 'apply the patch backwards'
complete -c decree -n '__decree_is apply' -l exec -x -a '(__fish_complete_command)' -d 'run CMD after; roll back if it fails'
complete -c decree -n '__decree_is apply' -s p -l strip -x -d 'strip N leading path components'
complete -c decree -n '__decree_is apply' -s s -l session -x -a '(__decree_sessions)' -d 'session of the safety checkpoint'
complete -c decree -n '__decree_is apply' -s v -l verbose -d 'one stderr line per file and step'

# rollback, rewind, undo, redo, recover, gc, fsck
complete -c decree -n '__decree_is rollback' -s s -l session -x -a '(__decree_sessions)' -d 'only this session'
complete -c decree -n '__decree_is rollback' -s n -l dry-run -d 'print the plan, change nothing'
complete -c decree -n '__decree_is rollback' -s v -l verbose -d 'one line per path as well as the summary'
complete -c decree -n '__decree_is rollback; and test (__decree_npos rollback) -eq 0' -a '(__decree_rollback_refs)'
complete -c decree -n '__decree_is rewind' -s s -l session -x -a '(__decree_sessions)' -d 'the agent session'
complete -c decree -n '__decree_is rewind' -s n -l dry-run -d 'print the plan, change nothing'
complete -c decree -n '__decree_is rewind' -l agent-only -d 'revert only the paths the agent changed'
complete -c decree -n '__decree_is rewind' -s v -l verbose -d 'one line per path as well as the summary'
complete -c decree -n '__decree_is undo; or __decree_is redo' -s n -l dry-run -d 'print the plan, change nothing'
complete -c decree -n '__decree_is undo; or __decree_is redo' -l drop-damaged -d 'drop the damaged history entries'
complete -c decree -n '__decree_is undo; or __decree_is redo' -s v -l verbose -d 'one line per path as well as the summary'
complete -c decree -n '__decree_is recover' -l rollback -d 'roll back every path the damaged log names'
complete -c decree -n '__decree_is gc' -s n -l dry-run -d 'print what would be deleted'
complete -c decree -n '__decree_is fsck' -l repair -d 'repair what can be repaired, say what is lost'

# projects, hook
complete -c decree -n '__decree_needs_sub projects' -a '(__decree_subs projects)'
complete -c decree -n '__decree_is projects move; and test (__decree_npos projects move) -lt 2' -a '(__fish_complete_directories)'
complete -c decree -n '__decree_needs_sub hook' -a '(__decree_subs hook)'
complete -c decree -n '__decree_is hook install; or __decree_is hook uninstall' -l user -d "the user's settings"
complete -c decree -n '__decree_is hook install; and test (__decree_npos hook install) -eq 0' -a 'claude-code claude codex gemini' -d agent
complete -c decree -n '__decree_is hook uninstall; and test (__decree_npos hook uninstall) -eq 0' -a 'claude-code claude codex gemini' -d agent

# the pipeline
complete -c decree -n '__decree_is run' -s m -l message -x -d 'message name'
complete -c decree -n '__decree_is run' -s p -l prompt -x -d 'message body'
complete -c decree -n '__decree_is run' -s v -l var -x -a '(__decree_vars)' -d 'a frontmatter field KEY=VALUE'
complete -c decree -n '__decree_is run; or __decree_is process' -l stream -d "show the routine's output while it runs"
complete -c decree -n '__decree_is run; or __decree_is process' -l no-stream -d 'do not show it (the logs have it)'
complete -c decree -n '__decree_is log; and test (__decree_npos log) -eq 0' -a '(__decree_runs)' -d run
complete -c decree -n '__decree_is diff; and test (__decree_npos diff) -eq 0' -a '(__decree_runs)' -d run
complete -c decree -n '__decree_is diff; and test (__decree_npos diff) -eq 0' -a '(__decree_refs)' -d checkpoint
complete -c decree -n '__decree_is diff' -l stat -d 'per-file counts'
complete -c decree -n '__decree_is diff' -l name-status -d 'per-file status'
complete -c decree -n '__decree_is revert; and test (__decree_npos revert) -eq 0' -a '(__decree_runs)' -d run

# workspace
complete -c decree -n '__decree_needs_sub workspace' -a '(__decree_subs workspace)'
complete -c decree -n '__decree_is workspace create' -l from -x -a '(__decree_refs)' -d 'base the workspace on this checkpoint'
complete -c decree -n '__decree_is workspace create' -l no-reflink -d 'always copy the bytes'
for sub in path diff conflicts apply discard
    complete -c decree -n "__decree_is workspace $sub; and test (__decree_npos workspace $sub) -eq 0" -a '(__decree_workspaces)' -d workspace
end
complete -c decree -n '__decree_is workspace diff' -l stat -d 'per-file counts'
complete -c decree -n '__decree_is workspace diff' -l name-status -d 'per-file status'
complete -c decree -n '__decree_is workspace apply' -l check -d 'only check and list what would change'
complete -c decree -n '__decree_is workspace apply' -l exec -x -a '(__fish_complete_command)' -d 'run CMD after; roll back if it fails'
complete -c decree -n '__decree_is workspace apply' -s s -l session -x -a '(__decree_sessions)' -d 'session of the safety checkpoint'
complete -c decree -n '__decree_is workspace apply' -s v -l verbose -d 'one stderr line per file and step'

# after "--": paths
function __decree_after_dashdash
    contains -- -- (commandline -opc)
end
complete -c decree -n __decree_after_dashdash -F
