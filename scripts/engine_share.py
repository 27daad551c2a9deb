#!/usr/bin/env python3
"""Share of a MariaDB server's CPU samples spent in its storage engine.

Usage: engine_share.py PERF_DATA [--plugin ha_tidesdb.so]
       engine_share.py --script FILE [--plugin ha_tidesdb.so]

Reads `perf script` of a `perf record --call-graph dwarf` of the server
(--script: that text already written to FILE, '-' for stdin). A
sample is the engine's when its stack passes through the handler interface
(a handler:: method, or the commit/rollback/prepare entry points that call
into the engine), or when it is on a background thread (no client
connection frame: flush, compaction, purge, page cleaner). That rule needs
no engine symbols, so it measures InnoDB (whose internals Debian's server
binary does not name) and a plugin alike. With --plugin it also counts the
foreground samples with a frame in that shared object, a cross-check of the
rule for our own engine.

Prints one line of key=value pairs: samples, engine, engine_pct, background,
and with --plugin plugin_fg.
"""
import re
import subprocess
import sys

BOUNDARY = re.compile(r'^(handler::|ha_commit_trans$|ha_rollback_trans$|ha_commit_one_phase$|'
                      r'commit_one_phase_2$|ha_prepare$)')
CONNECTION = {'do_command', 'handle_one_connection', 'do_handle_one_connection'}
FRAME = re.compile(r'^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$')


def main():
    args = sys.argv[1:]
    plugin = None
    if '--plugin' in args:
        i = args.index('--plugin')
        plugin = args[i + 1]
        del args[i:i + 2]
    script = args[:1] == ['--script']
    if script:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    if script:
        p = None
        lines = sys.stdin if args[0] == '-' else open(args[0], errors='replace')
    else:
        p = subprocess.Popen(['perf', 'script', '-i', args[0], '-F', 'comm,tid,ip,sym,dso'],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors='replace')
        lines = p.stdout
    n = {'samples': 0, 'engine': 0, 'background': 0, 'plugin_fg': 0}
    frames = []

    def sample():
        if not frames:
            return
        n['samples'] += 1
        fg = any(sym in CONNECTION for sym, _ in frames)
        if not fg:
            n['background'] += 1
        if not fg or any(BOUNDARY.match(sym) for sym, _ in frames):
            n['engine'] += 1
        if fg and plugin and any(plugin in dso for _, dso in frames):
            n['plugin_fg'] += 1

    for line in lines:
        if line[:1] in (' ', '\t') and line.strip():
            m = FRAME.match(line)
            if m:
                frames.append((re.sub(r'\+0x[0-9a-f]+$', '', m.group(1)), m.group(2)))
        else:  # a sample header or the blank line after a stack
            sample()
            frames = []
    sample()
    if (p and p.wait() != 0) or n['samples'] == 0:
        sys.exit(f'engine_share: no samples read from {args[0]}')
    out = [f"samples={n['samples']}", f"engine={n['engine']}",
           f"engine_pct={100.0 * n['engine'] / n['samples']:.1f}", f"background={n['background']}"]
    if plugin:
        out.append(f"plugin_fg={n['plugin_fg']}")
    print(' '.join(out))


if __name__ == '__main__':
    main()
