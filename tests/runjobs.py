#!/usr/bin/env python3
"""Run test jobs in parallel; used by `make test`, `make e2e` and `make sim-test`.

    python3 tests/runjobs.py [-j N] [--logdir DIR] [--timeout S] [--title T] NAME=COMMAND ...

Each COMMAND runs with `bash -c` from the current directory, with stdout and stderr
together in DIR/NAME.log (NAME with '/' replaced by '_'), so a test's output stays in
one piece. When a job ends the runner prints `PASS NAME (12.3 s)` or `FAIL NAME
(exit 1, 12.3 s)` followed by the last --tail lines of its log (the whole log with
--tail 0); at the end a summary with every failure and the wall time. The exit status
is 0 only when every job passed.

Jobs start longest first, by the durations of the previous run (DIR/times.json), else
by tests/jobtimes.json (durations of a whole `make test`, kept in the repository, so a
clean clone, as CI's, does not start its longest jobs last); jobs in neither start first
in the order given. -j defaults to $NW_TEST_JOBS
or 5: the end-to-end tests mostly wait on timers and sockets, so on 2 cores 5 at a
time keep the CPU busy (4 left it 19 % idle) without starving any of them. A job still running after
--timeout seconds is killed (its whole process group) and counts as failed.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('-j', '--jobs', type=int, default=int(os.environ.get('NW_TEST_JOBS') or 5))
    ap.add_argument('--logdir', default='build/test-logs')
    ap.add_argument('--timeout', type=float, default=600.0)
    ap.add_argument('--tail', type=int, default=80, help='log lines shown for a failure (0: all)')
    ap.add_argument('--title', default='tests')
    ap.add_argument('--seed-times', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'jobtimes.json'),
                    help='durations of jobs DIR/times.json does not have (default tests/jobtimes.json)')
    ap.add_argument('jobs_', nargs='*', metavar='NAME=COMMAND')
    args = ap.parse_args(argv)

    jobs = []
    for spec in args.jobs_:
        name, sep, cmd = spec.partition('=')
        if not sep or not name or not cmd:
            ap.error('job %r: expected NAME=COMMAND' % spec)
        jobs.append((name, cmd))
    if not jobs:
        print('%s: no jobs' % args.title)
        return 0
    os.makedirs(args.logdir, exist_ok=True)
    times_path = os.path.join(args.logdir, 'times.json')
    try:
        with open(times_path) as f:
            prev = json.load(f)
    except (OSError, ValueError):
        prev = {}
    try:
        with open(args.seed_times) as f:
            seed = json.load(f)
    except (OSError, ValueError):
        seed = {}
    known = dict(seed, **prev)
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i][0] in known, -known.get(jobs[i][0], 0), i))
    queue = [jobs[i] for i in order]

    lock = threading.Lock()
    results = {}          # name -> (rc, seconds, logpath)
    t_start = time.time()
    width = max(len(n) for n, _ in jobs)

    def logpath(name):
        return os.path.join(args.logdir, name.replace('/', '_') + '.log')

    def report(name, rc, secs, path):
        with lock:
            if rc == 0:
                print('PASS %-*s (%.1f s)' % (width, name, secs), flush=True)
                return
            why = 'timed out after %.0f s' % args.timeout if rc is None else 'exit %d' % rc
            print('FAIL %-*s (%s, %.1f s; log: %s)' % (width, name, why, secs, path), flush=True)
            try:
                with open(path, errors='replace') as f:
                    lines = f.readlines()
            except OSError as e:
                lines = ['(no log: %s)\n' % e]
            if args.tail and len(lines) > args.tail:
                print('   ... (%d lines before; whole log in %s)' % (len(lines) - args.tail, path))
                lines = lines[-args.tail:]
            for line in lines:
                sys.stdout.write('   | ' + line if line.endswith('\n') else '   | ' + line + '\n')
            print('FAIL %s: end of log' % name, flush=True)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                name, cmd = queue.pop(0)
            path = logpath(name)
            t0 = time.time()
            with open(path, 'w') as out:
                p = subprocess.Popen(['bash', '-c', cmd], stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
                try:
                    rc = p.wait(args.timeout)
                except subprocess.TimeoutExpired:
                    rc = None
                # a job's leftover children (a simulator, a server) never outlive it
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                if rc is None:
                    p.wait()
            secs = time.time() - t0
            with lock:
                results[name] = (rc, secs, path)
            report(name, rc, secs, path)

    print('== %s: %d jobs, %d at a time (logs in %s)' % (args.title, len(jobs), args.jobs, args.logdir),
          flush=True)
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, args.jobs))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        print('%s: interrupted' % args.title)
        return 130

    prev.update({n: round(r[1], 1) for n, r in results.items()})
    try:
        with open(times_path + '.tmp', 'w') as f:
            json.dump(prev, f, indent=1, sort_keys=True)
        os.replace(times_path + '.tmp', times_path)
    except OSError:
        pass
    failed = [n for n, _ in jobs if results.get(n, (1,))[0] != 0]
    wall = time.time() - t_start
    busy = sum(r[1] for r in results.values())
    print('%s: %d passed, %d failed in %.1f s wall (%.1f s of test time)'
          % (args.title, len(jobs) - len(failed), len(failed), wall, busy))
    for n in failed:
        print('  failed: %s (log: %s)' % (n, results.get(n, (None, 0, logpath(n)))[2]))
    return 0 if not failed else 1


if __name__ == '__main__':
    sys.exit(main())
