import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MARKER_CLAIMED_ELSEWHERE, MARKER_PROBE_SCRIPT, MARKER_SETUP_FAILED, MARKER_WRAPPER_SCRIPT, parseClaimRefusal, parseProbeOutput } from './marker-scripts';

// The scripts run here under the local /bin/sh exactly as sshd would start them; the SSH part is in
// ssh-dispatcher.int.spec.ts.

const ID = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';

let work: string;
let markers: string;

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'oncegate-marker-'));
  markers = join(work, 'markers');
});

afterEach(() => rmSync(work, { recursive: true, force: true }));

function wrapper(args: { dir?: string; id?: string; attempt?: string; cwd?: string }, ...argv: string[]) {
  const result = spawnSync('/bin/sh', ['-c', MARKER_WRAPPER_SCRIPT, 'oncegate-marker', args.dir ?? markers, args.id ?? ID, args.attempt ?? '1', args.cwd ?? '', ...argv], {
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function probe(dir = markers, id = ID) {
  const result = spawnSync('/bin/sh', ['-c', MARKER_PROBE_SCRIPT, 'oncegate-probe', dir, id], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const marker = (name: string) => readFileSync(join(markers, `${ID}.${name}`), 'utf8');

describe('marker wrapper', () => {
  it('given a command, then it writes started, runs it, writes done with the status, relays its output and exits with its status', () => {
    const run = wrapper({ attempt: '3' }, '/bin/sh', '-c', 'echo out; echo err >&2; exit 4');

    expect(run).toEqual({ status: 4, stdout: 'out\n', stderr: 'err\n' });
    expect(marker('started')).toBe('attempt=3\n');
    expect(marker('done')).toBe('exit_status=4\nattempt=3\n');
    expect(readdirSync(markers).sort()).toEqual([`${ID}.claim`, `${ID}.done`, `${ID}.started`]);
  });

  it('given the started marker already exists when the command runs, then it was written before the work', () => {
    const run = wrapper({}, '/bin/cat', join(markers, `${ID}.started`));

    expect(run.stdout).toBe('attempt=1\n');
  });

  it('given a working directory, then the command runs there', () => {
    expect(wrapper({ cwd: work }, '/bin/pwd').stdout).toBe(`${work}\n`);
  });

  it('given a working directory that does not exist, then the cd status is the exit status and the done marker records it', () => {
    const run = wrapper({ cwd: join(work, 'missing') }, '/bin/touch', join(work, 'effect'));

    expect(run.status).not.toBe(0);
    expect(marker('done')).toBe(`exit_status=${run.status}\nattempt=1\n`);
    expect(existsSync(join(work, 'effect'))).toBe(false);
  });

  it('given a program that does not exist, then 127 is recorded', () => {
    expect(wrapper({}, '/nonexistent/program').status).toBe(127);
    expect(marker('done')).toBe('exit_status=127\nattempt=1\n');
  });

  it('given a marker directory that cannot be created, then it exits 125 before running anything', () => {
    writeFileSync(join(work, 'file'), '');

    const run = wrapper({ dir: join(work, 'file', 'markers') }, '/bin/touch', join(work, 'effect'));

    expect(run.status).toBe(MARKER_SETUP_FAILED);
    expect(run.stderr).toContain('oncegate-marker: cannot create the marker directory');
    expect(existsSync(join(work, 'effect'))).toBe(false);
  });

  it.each(['', '.hidden', 'a/b'])('given the execution id %j, then it exits 125 without writing anything', (id) => {
    expect(wrapper({ id }, '/bin/touch', join(work, 'effect')).status).toBe(MARKER_SETUP_FAILED);
    expect(existsSync(join(work, 'effect'))).toBe(false);
  });

  it('given an earlier attempt claimed the execution, then a later one refuses with 124, runs nothing and leaves the markers as they were', () => {
    wrapper({ attempt: '2' }, '/bin/sh', '-c', 'exit 3');

    const late = wrapper({ attempt: '1' }, '/bin/touch', join(work, 'effect'));

    expect(late).toEqual({
      status: MARKER_CLAIMED_ELSEWHERE,
      stdout: '',
      stderr: 'oncegate-marker: refused: another attempt claimed this execution (claimed_by=2); nothing was run\n',
    });
    expect(parseClaimRefusal(late.status!, late.stderr)).toEqual({ claimedBy: 2 });
    expect(existsSync(join(work, 'effect'))).toBe(false);
    expect(marker('started')).toBe('attempt=2\n');
    expect(marker('done')).toBe('exit_status=3\nattempt=2\n');
    expect(marker('1.refused')).toBe('claimed_by=2\n');
  });

  it('given a started marker left by a wrapper without claims, then a new attempt refuses', () => {
    mkdirSync(markers);
    writeFileSync(join(markers, `${ID}.started`), 'attempt=1\n');

    expect(wrapper({ attempt: '2' }, '/bin/touch', join(work, 'effect')).status).toBe(MARKER_CLAIMED_ELSEWHERE);
    expect(existsSync(join(work, 'effect'))).toBe(false);
  });

  it('given the started marker cannot be written, then the claim is given back and it exits 125', () => {
    mkdirSync(markers);
    // A directory where the output file should be: the output files cannot be created.
    mkdirSync(join(markers, `${ID}.1.stdout`));

    expect(wrapper({}, '/bin/touch', join(work, 'effect')).status).toBe(MARKER_SETUP_FAILED);
    expect(existsSync(join(markers, `${ID}.claim`))).toBe(false);
    expect(existsSync(join(work, 'effect'))).toBe(false);
  });

  it('given a command, then it runs in a session of its own, with SIGHUP ignored and stdin from /dev/null', () => {
    const run = wrapper({}, '/bin/sh', '-c', 'cut -d" " -f1,6 /proc/$$/stat; grep SigIgn /proc/$$/status; readlink /proc/$$/fd/0');
    const [stat = '', sigIgn = '', stdin = ''] = run.stdout.trim().split('\n');
    const [pid, session] = stat.split(' ');

    expect(session).toBe(pid);
    expect(BigInt(`0x${sigIgn.split(/\s+/)[1]}`) & 1n).toBe(1n);
    expect(stdin).toBe('/dev/null');
  });
});

describe('marker probe', () => {
  it('given no marker directory, then absent', () => {
    expect(probe()).toEqual({ status: 0, stdout: 'absent\n', stderr: '' });
  });

  it('given only a started marker, then started with its attempt', () => {
    mkdirSync(markers);
    writeFileSync(join(markers, `${ID}.started`), 'attempt=2\n');

    expect(probe().stdout).toBe('started\nattempt=2\n');
  });

  it('given a done marker, then completed with its status', () => {
    wrapper({}, '/bin/false');

    expect(probe().stdout).toBe('completed\nexit_status=1\nattempt=1\n');
  });

  it('given a done marker whose output files are still on the host, then it says they are kept', () => {
    wrapper({ attempt: '2' }, '/bin/true');
    writeFileSync(join(markers, `${ID}.2.stdout`), 'lost on the way\n');
    writeFileSync(join(markers, `${ID}.2.stderr`), 'warning\n');

    expect(probe()).toEqual({ status: 0, stdout: 'completed\nexit_status=0\nattempt=2\nstdout_kept=yes\nstderr_kept=yes\n', stderr: '' });
  });

  it('given a done marker whose kept output file is empty, then that file is not named: it holds nothing to read', () => {
    wrapper({ attempt: '2' }, '/bin/true');
    writeFileSync(join(markers, `${ID}.2.stdout`), 'lost on the way\n');
    writeFileSync(join(markers, `${ID}.2.stderr`), '');

    expect(probe()).toEqual({ status: 0, stdout: 'completed\nexit_status=0\nattempt=2\nstdout_kept=yes\n', stderr: '' });
  });

  it('given only a claim (an attempt between its claim and its started marker), then started, never absent', () => {
    mkdirSync(join(markers, `${ID}.claim`), { recursive: true });

    expect(probe().stdout).toBe('started\n');
  });

  it('given a file where the directory should be, then it fails rather than say absent', () => {
    writeFileSync(markers, '');

    expect(probe()).toMatchObject({ status: MARKER_SETUP_FAILED, stderr: 'oncegate-probe: cannot search the marker directory\n' });
  });
});

describe('parseProbeOutput', () => {
  it.each([
    ['completed\nexit_status=0\nattempt=1\n', { state: 'completed', exitStatus: 0, attempt: 1, kept: { stdout: false, stderr: false } }],
    ['completed\nexit_status=137\n', { state: 'completed', exitStatus: 137, attempt: null, kept: { stdout: false, stderr: false } }],
    ['completed\nexit_status=0\nattempt=2\nstdout_kept=yes\n', { state: 'completed', exitStatus: 0, attempt: 2, kept: { stdout: true, stderr: false } }],
    ['started\nattempt=2\n', { state: 'started', attempt: 2 }],
    ['started\n', { state: 'started', attempt: null }],
    ['absent\n', { state: 'absent' }],
  ])('given %j, then %j', (text, expected) => {
    expect(parseProbeOutput(text)).toEqual(expected);
  });

  it.each(['', 'completed\n', 'completed\nexit_status=x\n', 'absent\nnoise\n', 'Last login: yesterday\nabsent\n'])(
    'given %j, then it is not the probe’s answer',
    (text) => {
      expect(parseProbeOutput(text)).toBeUndefined();
    },
  );
});
