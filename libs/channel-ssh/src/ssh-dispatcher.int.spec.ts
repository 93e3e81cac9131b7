import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ToolContract } from '@oncegate/contracts';
// eslint-disable-next-line @nx/enforce-module-boundaries -- integration tests run the shared real-sshd harness
import { startSshd, type SshdHandle } from '../../../test/support/sshd';
import { sshFingerprint } from './host-key';
import { SshDispatcher } from './ssh-dispatcher';
import type { MarkerProbe, SshAttemptResult, SshCredential } from './ssh-attempt';
import { sshTool } from './test-tools';

const EXECUTION = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';

let sshd: SshdHandle;
let credential: SshCredential;
let markers: string;

beforeAll(async () => {
  sshd = await startSshd();
  credential = { privateKey: sshd.clientPrivateKey };
  markers = join(sshd.workDir, 'markers');
});

afterAll(async () => {
  await sshd?.stop();
});

interface ToolOptions {
  readonly argv: readonly string[];
  readonly properties?: Record<string, unknown>;
  readonly class?: 'remote_command' | 'read_only';
  readonly cwd?: string;
  readonly hostKey?: string;
  readonly port?: number;
  readonly limits?: string;
  readonly startedWait?: string;
}

/** A tool on the test sshd; YAML values written as JSON, which YAML reads as they are. */
function tool(options: ToolOptions): ToolContract {
  const operationClass = options.class ?? 'remote_command';
  const ssh = {
    host: '127.0.0.1',
    port: options.port ?? sshd.port,
    user: sshd.user,
    host_key: options.hostKey ?? sshd.hostKey,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    argv: options.argv,
  };
  return sshTool(`
class: ${operationClass}
input_schema: ${JSON.stringify({ type: 'object', properties: options.properties ?? {} })}
ssh: ${JSON.stringify(ssh)}
${operationClass === 'remote_command' ? `marker: ${JSON.stringify({ directory: markers, written_before_work: true, started_wait: options.startedWait ?? '0' })}` : ''}
limits: ${options.limits ?? '{ connect_timeout: 2s, response_timeout: 10s }'}
`);
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');
const markerFile = (id: string, name: string) => join(markers, `${id}.${name}`);
const readMarker = (id: string, name: string) => readFileSync(markerFile(id, name), 'utf8');

async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('SshDispatcher against a real sshd', () => {
  let dispatcher: SshDispatcher;
  let executionCounter = 0;
  let execution: string;
  const cleanups: (() => Promise<void>)[] = [];

  beforeEach(() => {
    dispatcher = new SshDispatcher({ probeIntervalMs: 50 });
    execution = `${EXECUTION}_${++executionCounter}`;
  });

  afterEach(async () => {
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
    await dispatcher.close();
  });

  /** Contract paths avoid the execution id: the contract parser takes long mixed-case runs for tokens. */
  const effectFile = () => join(sshd.workDir, `effect-${executionCounter}`);
  const run = (contract: ToolContract, args: Record<string, unknown> = {}, attempt = 1) =>
    dispatcher.run({ executionId: execution, attempt, tool: contract, arguments: args, credential });

  describe('given a remote command that finishes', () => {
    it('when it exits 0, then the attempt succeeded with its output, and started and done markers are on the host', async () => {
      const result = await run(tool({ argv: ['/bin/sh', '-c', 'echo hello; echo warn >&2'] }));

      expect(result).toMatchObject({ kind: 'exited', outcome: 'succeeded', exitCode: 0, truncated: false });
      if (result.kind !== 'exited') return;
      expect(text(result.stdout)).toBe('hello\n');
      expect(text(result.stderr)).toBe('warn\n');
      expect(readMarker(execution, 'started')).toBe('attempt=1\n');
      expect(readMarker(execution, 'done')).toBe('exit_status=0\nattempt=1\n');
      expect(existsSync(markerFile(execution, '1.stdout'))).toBe(false);
    });

    it('when it exits 3, then the attempt failed with exit code 3, and the done marker records 3 and the attempt number', async () => {
      const result = await run(tool({ argv: ['/bin/sh', '-c', 'echo broken >&2; exit 3'] }), {}, 2);

      expect(result).toMatchObject({ kind: 'exited', outcome: 'failed', exitCode: 3 });
      expect(result.kind === 'exited' && text(result.stderr)).toBe('broken\n');
      expect(readMarker(execution, 'done')).toBe('exit_status=3\nattempt=2\n');
    });

    it('when the contract names a working directory, then the command runs there', async () => {
      const cwd = join(sshd.workDir, 'app dir');
      mkdirSync(cwd, { recursive: true });

      const result = await run(tool({ argv: ['/bin/pwd'], cwd }));

      expect(result.kind === 'exited' && text(result.stdout)).toBe(`${cwd}\n`);
    });

    it('when the working directory does not exist, then the attempt failed and the done marker holds the same status', async () => {
      const effect = effectFile();

      const result = await run(tool({ argv: ['/usr/bin/touch', effect], cwd: '/nonexistent/dir' }));

      expect(result).toMatchObject({ kind: 'exited', outcome: 'failed' });
      const exitCode = result.kind === 'exited' ? result.exitCode : undefined;
      expect(readMarker(execution, 'done')).toBe(`exit_status=${exitCode}\nattempt=1\n`);
      expect(existsSync(effect)).toBe(false);
    });

    it('when a read-only SSH tool (no marker) runs, then it succeeds and leaves no marker', async () => {
      const result = await run(tool({ class: 'read_only', argv: ['/bin/echo', 'status ok'] }));

      expect(result.kind === 'exited' && text(result.stdout)).toBe('status ok\n');
      expect(existsSync(markerFile(execution, 'started'))).toBe(false);
    });

    it('when it prints more than limits.response_bytes, then the first bytes come back, truncated, with the exit status', async () => {
      const result = await run(
        tool({ argv: ['/bin/sh', '-c', 'head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2; exit 7'], limits: '{ response_bytes: 1KiB }' }),
      );

      expect(result).toMatchObject({ kind: 'exited', exitCode: 7, truncated: true });
      expect(result.kind === 'exited' && [result.stdout.length, result.stderr.length]).toEqual([1024, 1024]);
    });
  });

  describe('given hostile argument values', () => {
    const hostile = [
      '; rm -rf /',
      '$(id)',
      '`id`',
      'first line\nsecond line\n',
      `single ' and double " quotes`,
      "'",
      '"',
      '-n',
      '--help',
      'héllo wörld 日本語 🚀',
      '  leading and trailing spaces  ',
      '*',
      '~',
      '~root',
      '',
      '\\',
      '$HOME ${PATH}',
      'a && b || c | d > e < f',
      '\t\r',
      '%s %d %%',
      '!!',
      '# not a comment',
    ];
    const properties = Object.fromEntries(hostile.map((_, index) => [`v${index}`, { type: 'string' }]));
    const args = Object.fromEntries(hostile.map((value, index) => [`v${index}`, value]));
    const argv = ['/usr/bin/printf', '%s\\0', ...hostile.map((_, index) => `{{args.v${index}}}`), '{{execution.id}}'];
    const expected = Buffer.concat([...hostile, '<execution>'].map((value) => Buffer.from(`${value}\0`, 'utf8')));

    it.each(['remote_command', 'read_only'] as const)(
      'when a %s tool prints its argv NUL-separated on the host, then every value arrived byte for byte as one argument',
      async (operationClass) => {
        const result = await run(tool({ class: operationClass, argv, properties }), args);

        expect(result).toMatchObject({ kind: 'exited', exitCode: 0 });
        if (result.kind !== 'exited') return;
        const received = Buffer.from(expected.toString('utf8').replace('<execution>', execution), 'utf8');
        expect(Buffer.from(result.stdout).equals(received)).toBe(true);
      },
    );

    it('when a script on the host writes each argument with its byte length to a file, then the lengths and bytes match', async () => {
      const script = join(sshd.workDir, 'record-args.sh');
      const record = join(sshd.workDir, `args-${executionCounter}`);
      writeFileSync(script, `out=$1; shift; for a in "$@"; do printf '%s:%s\\0' "$(printf %s "$a" | wc -c)" "$a"; done > "$out"\n`);

      const result = await run(tool({ argv: ['/bin/sh', script, record, ...argv.slice(2, -1)], properties }), args);

      expect(result).toMatchObject({ kind: 'exited', exitCode: 0 });
      const entries = readFileSync(record).toString('utf8').split('\0').slice(0, -1);
      expect(entries).toEqual(hostile.map((value) => `${Buffer.byteLength(value)}:${value}`));
    });
  });

  describe('given nothing runs', () => {
    it('when the host presents another key than the pinned one, then denied naming the seen fingerprint, and nothing ran', async () => {
      const effect = effectFile();
      const seen = sshFingerprint(Buffer.from(sshd.hostKey.split(' ')[1]!, 'base64'));

      const result = await run(tool({ argv: ['/usr/bin/touch', effect], hostKey: sshd.otherHostKey }));

      expect(result).toMatchObject({ kind: 'denied' });
      expect(result.kind === 'denied' && result.reason).toContain(`ssh-ed25519 key ${seen}`);
      expect(existsSync(effect)).toBe(false);
      expect(existsSync(markerFile(execution, 'started'))).toBe(false);
    });

    it('when the contract pins a key type the host does not have, then denied, and nothing ran', async () => {
      const effect = effectFile();
      const dir = join(sshd.workDir, `ecdsa-${executionCounter}`);
      mkdirSync(dir);
      execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-N', '', '-f', join(dir, 'key')]);
      const ecdsa = readFileSync(join(dir, 'key.pub'), 'utf8').split(' ').slice(0, 2).join(' ');

      const result = await run(tool({ argv: ['/usr/bin/touch', effect], hostKey: ecdsa }));

      expect(result).toMatchObject({ kind: 'denied' });
      expect(result.kind === 'denied' && result.reason).toContain('offers no ecdsa-sha2-nistp256 host key');
      expect(existsSync(effect)).toBe(false);
    });

    it('when the fingerprint in a denial is compared with ssh-keygen, then it is the same text', () => {
      const keygen = execFileSync('ssh-keygen', ['-l', '-f', '-'], { input: `${sshd.hostKey}\n`, encoding: 'utf8' }).split(' ')[1];

      expect(sshFingerprint(Buffer.from(sshd.hostKey.split(' ')[1]!, 'base64'))).toBe(keygen);
    });

    it('when the host does not accept the key, then not_sent for authentication, and nothing ran', async () => {
      const effect = effectFile();
      const stranger = strangerKey();

      const result = await dispatcher.run({ executionId: execution, attempt: 1, tool: tool({ argv: ['/usr/bin/touch', effect] }), arguments: {}, credential: { privateKey: stranger } });

      expect(result).toMatchObject({ kind: 'not_sent' });
      expect(result.kind === 'not_sent' && result.reason).toContain('authentication');
      expect(existsSync(effect)).toBe(false);
    });

    it('when nothing listens on the port, then not_sent: connection refused', async () => {
      const port = await closedPort();

      const result = await run(tool({ argv: ['/bin/true'], port }));

      expect(result).toMatchObject({ kind: 'not_sent' });
      expect(result.kind === 'not_sent' && result.reason).toContain('connection refused');
    });

    it('when the host accepts TCP but never speaks SSH, then not_sent after limits.connect_timeout', async () => {
      const silent = await silentServer();
      cleanups.push(silent.close);
      const started = Date.now();

      const result = await run(tool({ argv: ['/bin/true'], port: silent.port, limits: '{ connect_timeout: 500ms }' }));

      expect(result).toMatchObject({ kind: 'not_sent' });
      expect(result.kind === 'not_sent' && result.reason).toContain('connect timeout');
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it('when an argument holds a NUL byte, then not_sent (render error) and nothing ran', async () => {
      const effect = effectFile();

      const result = await run(tool({ argv: ['/usr/bin/touch', effect, '{{args.name}}'], properties: { name: { type: 'string' } } }), { name: 'a\0b' });

      expect(result).toMatchObject({ kind: 'not_sent' });
      expect(result.kind === 'not_sent' && result.reason).toContain('argv[2]');
      expect(existsSync(effect)).toBe(false);
      expect(existsSync(markerFile(execution, 'started'))).toBe(false);
    });

    it('when the dispatcher is closed, then not_sent', async () => {
      await dispatcher.close();

      expect(await run(tool({ argv: ['/bin/true'] }))).toEqual({ kind: 'not_sent', reason: 'the SSH dispatcher is closed' });
    });
  });

  describe('given the outcome is lost after the exec request was sent', () => {
    it('when the SSH connection is killed mid-command, then unknown ssh_connection_dropped, the command keeps running on the host, and a later probe returns the marker’s outcome', async () => {
      const effect = effectFile();
      // Prints after the connection is gone: a command on the SSH pipe would die of SIGPIPE right there.
      const contract = tool({ argv: ['/bin/sh', '-c', `echo before; sleep 2; echo after; echo after >&2; echo done > ${effect}; exit 5`] });

      const pending = run(contract);
      await eventually(() => (existsSync(markerFile(execution, 'started')) ? true : undefined));
      await sshd.killConnections();
      const result = await pending;

      expect(result).toMatchObject({ kind: 'unknown', reason: 'ssh_connection_dropped' });
      expect(await dispatcher.probeMarker({ executionId: execution, tool: contract, credential })).toEqual({ kind: 'started', attempt: 1 });
      const probe = await eventually(async () => {
        const answer = await dispatcher.probeMarker({ executionId: execution, tool: contract, credential });
        return answer.kind === 'completed' ? answer : undefined;
      });
      expect(probe).toEqual({ kind: 'completed', exitStatus: 5, attempt: 1, keptOutput: [markerFile(execution, '1.stdout'), markerFile(execution, '1.stderr')] });
      expect(readFileSync(effect, 'utf8')).toBe('done\n');
      // The output stays on the host for whoever reviews the execution.
      expect(readFileSync(markerFile(execution, '1.stdout'), 'utf8')).toBe('before\nafter\n');
      expect(readFileSync(markerFile(execution, '1.stderr'), 'utf8')).toBe('after\n');
    });

    it('when the command outlasts limits.response_timeout, then unknown timeout_after_send, and the command is not killed', async () => {
      const effect = effectFile();
      const contract = tool({ argv: ['/bin/sh', '-c', `sleep 2; echo finished > ${effect}`], limits: '{ response_timeout: 300ms }' });
      const started = Date.now();

      const result = await run(contract);

      expect(result).toMatchObject({ kind: 'unknown', reason: 'timeout_after_send' });
      // Well before the command's 2 s: the dispatcher did not wait for it.
      expect(Date.now() - started).toBeLessThan(1_800);
      const probe = await eventually(async () => {
        const answer = await dispatcher.probeMarker({ executionId: execution, tool: contract, credential });
        return answer.kind === 'completed' ? answer : undefined;
      });
      expect(probe).toMatchObject({ kind: 'completed', exitStatus: 0, attempt: 1 });
      expect(readFileSync(effect, 'utf8')).toBe('finished\n');
    });
  });

  describe('given two attempts of one execution reach the host', () => {
    let slow: SshdHandle;

    beforeAll(async () => {
      slow = await startSshd({ delayableExec: true });
    });

    afterAll(async () => {
      await slow?.stop();
    });

    const effects = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

    it('when attempt 1 starts only after the probe said absent and attempt 2 ran, then attempt 1 refuses: one effect, and the markers say attempt 2', async () => {
      const effect = effectFile();
      const contract = tool({ port: slow.port, hostKey: slow.hostKey, argv: ['/bin/sh', '-c', `echo ran >> ${effect}`], startedWait: '300ms' });
      const slowCredential = { privateKey: slow.clientPrivateKey };
      const runOnSlow = (attempt: number) => dispatcher.run({ executionId: execution, attempt, tool: contract, arguments: {}, credential: slowCredential });
      await slow.delayNextExec(2_000);

      const first = runOnSlow(1);
      await slow.whenExecDelayed();
      await slow.killConnections();
      expect(await first).toMatchObject({ kind: 'unknown', reason: 'ssh_connection_dropped' });
      expect(await dispatcher.probeMarker({ executionId: execution, tool: contract, credential: slowCredential })).toMatchObject({ kind: 'absent' });
      expect(await runOnSlow(2)).toMatchObject({ kind: 'exited', exitCode: 0 });
      await slow.whenDelayedExecReleased();
      await eventually(() => (existsSync(markerFile(execution, '1.refused')) || effects(effect) > 1 ? true : undefined));

      expect(effects(effect)).toBe(1);
      expect(readMarker(execution, 'started')).toBe('attempt=2\n');
      expect(readMarker(execution, 'done')).toBe('exit_status=0\nattempt=2\n');
      expect(readMarker(execution, '1.refused')).toBe('claimed_by=2\n');
    });

    it('when attempt 2 reaches the host while attempt 1 runs, then attempt 2 is refused as claimed by attempt 1, and the command ran once', async () => {
      const effect = effectFile();
      const contract = tool({ argv: ['/bin/sh', '-c', `sleep 1; echo ran >> ${effect}`] });

      const first = run(contract, {}, 1);
      await eventually(() => (existsSync(markerFile(execution, 'started')) ? true : undefined));
      const second = await run(contract, {}, 2);

      expect(second).toMatchObject({ kind: 'claimed', claimedBy: 1 });
      expect(await first).toMatchObject({ kind: 'exited', exitCode: 0 });
      expect(effects(effect)).toBe(1);
      expect(readMarker(execution, 'done')).toBe('exit_status=0\nattempt=1\n');
    });
  });

  describe('given a marker probe', () => {
    it('when no marker exists, then absent after waiting marker.started_wait', async () => {
      const started = Date.now();

      const probe = await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'], startedWait: '400ms' }), credential });

      expect(probe).toMatchObject({ kind: 'absent' });
      expect(probe.kind === 'absent' && probe.waitedMs).toBeGreaterThanOrEqual(400);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    });

    it('when the marker appears while the probe waits, then it reports it', async () => {
      const contract = tool({ argv: ['/bin/true'], startedWait: '5s' });
      setTimeout(() => {
        mkdirSync(markers, { recursive: true });
        writeFileSync(markerFile(execution, 'started'), 'attempt=4\n');
      }, 300);

      expect(await dispatcher.probeMarker({ executionId: execution, tool: contract, credential })).toEqual({ kind: 'started', attempt: 4 });
    });

    it('when the command is still running, then started', async () => {
      const contract = tool({ argv: ['/bin/sleep', '2'] });
      const pending = run(contract);
      await eventually(() => (existsSync(markerFile(execution, 'started')) ? true : undefined));

      expect(await dispatcher.probeMarker({ executionId: execution, tool: contract, credential })).toEqual({ kind: 'started', attempt: 1 });
      expect(await pending).toMatchObject({ kind: 'exited', exitCode: 0 });
      expect(await dispatcher.probeMarker({ executionId: execution, tool: contract, credential })).toEqual({ kind: 'completed', exitStatus: 0, attempt: 1, keptOutput: [] });
    });

    it('when the host key is not the pinned one, then denied', async () => {
      const probe = await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'], hostKey: sshd.otherHostKey }), credential });

      expect(probe).toMatchObject({ kind: 'denied' });
    });

    it('when the host is unreachable, then not_sent', async () => {
      const probe = await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'], port: await closedPort() }), credential });

      expect(probe).toMatchObject({ kind: 'not_sent' });
    });

    it('when the tool has no marker, then not_sent', async () => {
      const probe = await dispatcher.probeMarker({ executionId: execution, tool: tool({ class: 'read_only', argv: ['/bin/true'] }), credential });

      expect(probe).toMatchObject({ kind: 'not_sent' });
      expect(probe.kind === 'not_sent' && probe.reason).toContain('no marker');
    });
  });

  describe('given a credential canary', () => {
    const PATIENT = '{ connect_timeout: 20s, response_timeout: 20s }';
    it('when attempts and probes end in every outcome, then no result contains the key or its passphrase', async () => {
      const passphrase = 'canary-passphrase-7f3a9c1e5b';
      const encrypted = encryptedCopy(sshd.clientPrivateKey, passphrase);
      const canary: SshCredential = { privateKey: encrypted, passphrase };
      const garbage: SshCredential = { privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\ncanaryKeyMaterial0123456789\n-----END OPENSSH PRIVATE KEY-----\n`, passphrase };
      const attempt = (contract: ToolContract, cred: SshCredential, args: Record<string, unknown> = {}) =>
        dispatcher.run({ executionId: `${execution}_${Math.random().toString(16).slice(2)}`, attempt: 1, tool: contract, arguments: args, credential: cred });
      const echoing = tool({ argv: ['/bin/echo', '{{args.x}}'], properties: { x: { type: 'string' } } });

      const results: (SshAttemptResult | MarkerProbe)[] = [
        // The encrypted key's bcrypt derivation runs before the handshake: on a loaded machine it alone can pass 2 s.
        await attempt(tool({ argv: ['/bin/echo', 'ok'], limits: PATIENT }), canary),
        await attempt(tool({ argv: ['/bin/sh', '-c', 'exit 9'], limits: PATIENT }), canary),
        await attempt(tool({ argv: ['/bin/true'], hostKey: sshd.otherHostKey }), canary),
        await attempt(tool({ argv: ['/bin/true'], port: await closedPort() }), canary),
        await attempt(tool({ argv: ['/bin/sleep', '1'], limits: '{ response_timeout: 200ms }' }), canary),
        await attempt(echoing, canary, { x: 'a\0b' }),
        await attempt(tool({ argv: ['/bin/true'] }), garbage),
        await attempt(tool({ argv: ['/bin/true'] }), { privateKey: encrypted, passphrase: 'wrong-passphrase-canary' }),
        await attempt(tool({ argv: ['/bin/true'] }), { privateKey: strangerKey(), passphrase }),
        await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'] }), credential: canary }),
        await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'], hostKey: sshd.otherHostKey }), credential: canary }),
        await dispatcher.probeMarker({ executionId: execution, tool: tool({ argv: ['/bin/true'] }), credential: garbage }),
      ];

      expect(results.map((result) => result.kind)).toEqual([
        'exited',
        'exited',
        'denied',
        'not_sent',
        'unknown',
        'not_sent',
        'not_sent',
        'not_sent',
        'not_sent',
        'absent',
        'denied',
        'not_sent',
      ]);
      const serialised = JSON.stringify(results);
      expect(serialised).not.toContain(passphrase);
      expect(serialised).not.toContain('wrong-passphrase-canary');
      expect(serialised).not.toContain('canaryKeyMaterial');
      for (const line of [...encrypted.split('\n'), ...sshd.clientPrivateKey.split('\n')].filter((l) => l.length > 20)) {
        expect(serialised).not.toContain(line);
      }
    });
  });
});

/** A valid ed25519 key the test sshd does not authorize. */
function strangerKey(): string {
  const dir = join(sshd.workDir, `stranger-${Math.random().toString(16).slice(2)}`);
  mkdirSync(dir);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'key')]);
  return readFileSync(join(dir, 'key'), 'utf8');
}

/** The same key, encrypted with `passphrase` (so the sshd still accepts it). */
function encryptedCopy(privateKey: string, passphrase: string): string {
  const dir = join(sshd.workDir, `encrypted-${Math.random().toString(16).slice(2)}`);
  mkdirSync(dir);
  const file = join(dir, 'key');
  writeFileSync(file, privateKey, { mode: 0o600 });
  execFileSync('ssh-keygen', ['-q', '-p', '-P', '', '-N', passphrase, '-f', file]);
  return readFileSync(file, 'utf8');
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** Accepts TCP connections and never says a word: the SSH banner never comes. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
