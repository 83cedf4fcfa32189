#!/usr/bin/env python3
"""mkcases.py - writes the fixtures cases/NAME/{base,ours,theirs} of
tests/cli/merge_oracle.sh (run in tests/merge; the files are committed).
Cases named identical-* make the same change on both sides."""
import os
L=lambda *xs: ''.join(x+'\n' for x in xs)
long=[f'line {i}' for i in range(1,201)]
def rep(lst,i,v): l=list(lst); l[i]=v; return l
cases = {
 'edit-different-hunks': (L(*'abcdefghij'), L('A',*'bcdefghi','J'), L(*'abcd','E',*'fghij')),
 'edit-same-hunk': (L(*'abcde'), L('a','b','X','d','e'), L('a','b','Y','d','e')),
 'edit-adjacent-lines': (L(*'abcde'), L('a','B','c','d','e'), L('a','b','C','d','e')),
 'edit-one-line-apart': (L(*'abcde'), L('a','B','c','d','e'), L('a','b','c','D','e')),
 'identical-edits': (L(*'abcde'), L('a','X','c','d','e'), L('a','X','c','d','e')),
 'identical-and-separate': (L(*'abcdefgh'), L('a','X',*'cdefgh'), L('a','X',*'cdef','Y','h')),
 'insert-same-point': (L(*'abc'), L('a','x','b','c'), L('a','y','b','c')),
 'identical-insert-same-point': (L(*'abc'), L('a','x','b','c'), L('a','x','b','c')),
 'insert-at-start-both': (L(*'abc'), L('x',*'abc'), L('y',*'abc')),
 'insert-start-and-end': (L(*'abc'), L('x',*'abc'), L(*'abc','y')),
 'insert-at-end-both': (L(*'abc'), L(*'abc','x'), L(*'abc','y')),
 'insert-next-to-edit': (L(*'abcd'), L('a','b','x','c','d'), L('a','b','C','d')),
 'delete-all-ours': (L(*'abc'), '', L(*'abc')),
 'delete-all-vs-edit': (L(*'abc'), '', L('a','B','c')),
 'identical-delete-all': (L(*'abc'), '', ''),
 'delete-separate': (L(*'abcdefg'), L(*'acdefg'), L(*'abcdeg')),
 'delete-adjacent': (L(*'abcdefg'), L(*'acdefg'), L(*'abdefg')),
 'empty-base-both-add': ('', L('a','b'), L('a','c')),
 'identical-add-empty-base': ('', L('a','b'), L('a','b')),
 'empty-base-one-add': ('', '', L('a','b')),
 'all-empty': ('', '', ''),
 'crlf-separate': ('a\r\nb\r\nc\r\nd\r\ne\r\n', 'A\r\nb\r\nc\r\nd\r\ne\r\n', 'a\r\nb\r\nc\r\nd\r\nE\r\n'),
 'crlf-conflict': ('a\r\nb\r\nc\r\n', 'a\r\nX\r\nc\r\n', 'a\r\nY\r\nc\r\n'),
 'crlf-vs-lf-line': (L(*'abc'), 'a\r\nb\nc\n', L('a','b','C')),
 'crlf-to-lf-whole': ('a\r\nb\r\nc\r\n', L(*'abc'), 'a\r\nb\r\nC\r\n'),
 'no-eol-base-ours-edit-top': ('a\nb\nc\nd\ne', 'A\nb\nc\nd\ne', 'a\nb\nc\nd\nE'),
 'no-eol-both-append': ('a\nb', 'a\nb\nc', 'a\nb\nd'),
 'no-eol-added-one-side': (L(*'abcde'), 'a\nb\nc\nd\ne', L('A',*'bcde')),
 'no-eol-removed-one-side': ('a\nb\nc\nd\ne', L(*'abcde'), 'A\nb\nc\nd\ne'),
 'no-eol-conflict': ('a\nb\nc', 'a\nb\nX', 'a\nb\nY'),
 'identical-no-eol': ('a\nb\nc\n', 'a\nb\nc', 'a\nb\nc'),
 'whitespace-only-change': (L('a','b c','d','e','f'), L('a','b  c','d','e','f'), L('a','b c','d','e','F')),
 'whitespace-conflict': (L('a','b','c'), L('a','b ','c'), L('a','\tb','c')),
 'identical-trailing-space': (L('a','b','c'), L('a','b ','c'), L('a','b ','c')),
 'blank-lines': (L('a','','','b','','c'), L('a','','b','','c'), L('a','','','b','','','c')),
 'long-file-far-edits': (L(*long), L(*rep(long,3,'ours')), L(*rep(long,190,'theirs'))),
 'long-file-many-edits': (L(*long), L(*[('O'+x if i%20==0 else x) for i,x in enumerate(long)]), L(*[('T'+x if i%20==10 else x) for i,x in enumerate(long)])),
 'long-file-conflict': (L(*long), L(*rep(long,100,'ours')), L(*rep(long,100,'theirs'))),
 'repeated-lines-insert': (L('x','x','x','x'), L('x','x','y','x','x'), L('x','x','x','x','z')),
 'repeated-lines-delete': (L('x','y','x','y','x','y'), L('x','y','x','y'), L('y','x','y','x','y')),
 'repeated-braces': (L('{','a','}','{','b','}'), L('{','a','}','{','B','}'), L('{','A','}','{','b','}')),
 'zealous-split': (L(*'abcdefg'), L('a','X','c','d','e','Y','g'), L('a','P','c','d','e','Q','g')),
 'zealous-join-close': (L(*'abcdefg'), L('a','X','c','d','Y','f','g'), L('a','P','c','d','Q','f','g')),
 'zealous-join-nonalnum': (L('a','b','{','}','(',')','c','d'), L('a','X','{','}','(',')','Y','d'), L('a','P','{','}','(',')','Q','d')),
 'conflict-common-tail': (L(*'abc'), L('a','X','Z','c'), L('a','Y','Z','c')),
 'swap-lines': (L(*'abcd'), L('b','a','c','d'), L('a','b','d','c')),
 'move-vs-edit': (L(*'abcdef'), L(*'bcdefa'), L('a','b','C','d','e','f')),
 'utf8-and-latin1': (L('caf\u00e9','b','c'), L('caf\u00e9!','b','c'), L('caf\u00e9','b','\u00e7a')),
 'one-side-unchanged': (L(*'abc'), L(*'abc'), L('x','y')),
 'ours-deletes-theirs-edits-elsewhere': (L(*'abcdefgh'), L(*'abgh'), L(*'abcdef','G','h')),
}
os.makedirs('cases',exist_ok=True)
for name,(b,o,t) in cases.items():
    d=os.path.join('cases',name); os.makedirs(d,exist_ok=True)
    for fn,txt in (('base',b),('ours',o),('theirs',t)):
        with open(os.path.join(d,fn),'wb') as f: f.write(txt.encode('utf-8') if 'latin' not in name else txt.encode('utf-8'))
print(len(cases))
