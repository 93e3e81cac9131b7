import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, gatewayFolder } from '../support/gateway-process';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The demo's credential, stored in the vault by examples/demo-vault.sh: it must appear in no output. */
const CANARY = 'demo-credential-canary-3f9a61';

/** Nest's own start-up lines, which only a debug log shows. */
const NEST_START_LINES = /Starting Nest application|dependencies initialized|Nest microservice successfully started/;

interface Started {
  /** What the process wrote to stdout and stderr, both into one file, in order. */
  output(): string;
  readyFile: string;
  stop(): Promise<void>;
}

/**
 * What `npm start` runs after its build, on a data folder and port of the test's own (the demo target off: its port
 * is fixed): the demo vault, then `oncegate start` on the example configuration, its output written to a file.
 */
async function npmStart(dir: string, port: number, env: NodeJS.ProcessEnv = {}): Promise<Started> {
  const outFile = join(dir, `output-${port}.txt`);
  const readyFile = join(dir, 'ready.json');
  const out = openSync(outFile, 'w');
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    ONCEGATE_DATA_DIR: join(dir, 'data'),
    ONCEGATE_PORT: String(port),
    ONCEGATE_DEMO_TARGET: 'off',
    ONCEGATE_DEMO_CREDENTIAL: CANARY,
    READY_FILE: readyFile,
    ...env,
  };
  // Colour must stay out of a file without anyone asking.
  delete environment['NO_COLOR'];
  const child = spawn(
    'sh',
    ['-c', 'sh examples/demo-vault.sh && exec node bin/oncegate.mjs start --config examples/oncegate.yaml --ready-file "$READY_FILE"'],
    { cwd: ROOT, env: environment, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const output = () => readFileSync(outFile, 'utf8');
  const deadline = Date.now() + 60_000;
  while (!existsSync(readyFile)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the gateway did not become ready:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return {
    output,
    readyFile,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The JSON lines of an output (the log); the summary's lines are plain text. */
function logLines(output: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('npm start', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('given a first start on a new data folder, output to a file, when the gateway serves, then its first line is the summary with the time to ready, the log is JSON lines without colour or Nest start-up lines, the ready file names the URL, and the credential is nowhere', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-quiet-start-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const started = await npmStart(dir, port);
    cleanup.push(() => started.stop());
    const url = `http://127.0.0.1:${port}/mcp`;
    expect(JSON.parse(readFileSync(started.readyFile, 'utf8'))).toMatchObject({ ready: true, url, service: 'oncegate', readyMs: expect.any(Number) });
    await started.stop();

    const output = started.output();
    const [first] = output.split('\n');
    expect(first, output).toMatch(new RegExp(`^Oncegate is listening on ${url.replaceAll('.', '\\.')} \\(ready in \\d+(\\.\\d)? m?s\\)$`));
    expect(output).not.toContain('\x1b');
    expect(output).not.toMatch(NEST_START_LINES);
    expect(output).not.toContain(CANARY);
    expect(logLines(output)).toContainEqual(expect.objectContaining({ level: 'info', context: 'ready', ready: true, url }));
    // Stopped, it no longer says it is ready.
    expect(existsSync(started.readyFile)).toBe(false);
  });

  it('given ONCEGATE_LOG_LEVEL=debug, when the gateway starts, then Nest start-up lines are debug lines of the JSON log, still without colour or the credential', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-quiet-start-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const started = await npmStart(dir, await freePort(), { ONCEGATE_LOG_LEVEL: 'debug' });
    cleanup.push(() => started.stop());
    await started.stop();

    const output = started.output();
    expect(output).toMatch(NEST_START_LINES);
    const nestLines = logLines(output).filter((line) => NEST_START_LINES.test(String(line['msg'])));
    expect(nestLines.length).toBeGreaterThanOrEqual(4);
    for (const line of nestLines) expect(line).toMatchObject({ level: 'debug', service: 'oncegate' });
    expect(output).not.toContain('\x1b');
    expect(output).not.toContain(CANARY);
  });

  it('given a service app with --ready-file, when it serves and then stops, then its summary says when it was ready, the file says it serves without a URL, and the file is gone after the stop', { timeout: 60_000 }, async () => {
    const folder = await gatewayFolder('http://127.0.0.1:9');
    cleanup.push(() => folder.dispose());
    const readyFile = join(folder.dir, 'sealer-ready.json');
    const child = spawn(process.execPath, [join(ROOT, 'dist/apps/sealer/main.js'), '--config', folder.configFile, '--ready-file', readyFile], {
      cwd: folder.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += String(chunk)));
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    cleanup.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    const deadline = Date.now() + 45_000;
    while (!existsSync(readyFile)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the sealer did not become ready:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const ready = JSON.parse(readFileSync(readyFile, 'utf8')) as Record<string, unknown>;
    expect(ready).toMatchObject({ ready: true, service: 'sealer', pid: child.pid, readyMs: expect.any(Number) });
    expect(ready).not.toHaveProperty('url');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toMatch(/^Oncegate sealer is running \(instance \S+\), ready in \d+(\.\d)? m?s$/m);
    expect(existsSync(readyFile)).toBe(false);
  });

  it('given --ready-file in a folder that does not exist, when the gateway or a service app starts, then it is a usage error naming the folder and nothing starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-quiet-start-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const readyFile = join(dir, 'missing', 'ready.json');
    const env = { ...process.env, ONCEGATE_DATA_DIR: join(dir, 'data'), ONCEGATE_DEMO_TARGET: 'off' };
    const gateway = spawnSync(process.execPath, ['bin/oncegate.mjs', 'start', '--config', 'examples/oncegate.yaml', '--ready-file', readyFile], { cwd: ROOT, env, encoding: 'utf8' });
    const sealer = spawnSync(process.execPath, ['dist/apps/sealer/main.js', '--config', 'examples/oncegate.yaml', '--ready-file', readyFile], { cwd: ROOT, env, encoding: 'utf8' });
    for (const run of [gateway, sealer]) {
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toContain(`--ready-file ${readyFile}: the folder ${join(dir, 'missing')} does not exist`);
      expect(run.stdout).not.toMatch(/listening|running/);
    }
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });
});
