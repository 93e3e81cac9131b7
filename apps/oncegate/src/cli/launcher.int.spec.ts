import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');

function runLauncher(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [LAUNCHER, ...args], { cwd, env }, (error, stdout, stderr) => {
      done({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('bin/oncegate.mjs', () => {
  it('given the examples, when the real launcher checks them from another directory, then it exits 0 with the summary', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'oncegate-cli-'));
    try {
      const result = await runLauncher(['contracts', 'check', join(ROOT, 'examples/tools.yaml')], elsewhere);
      expect(result.stderr).toBe('');
      expect(result.stdout).toBe(
        `${join(ROOT, 'examples/tools.yaml')}: 9 tools OK (read_only 2, idempotent_write 2, conditional_write 1, irreversible 3, remote_command 1), ` +
          `3 from ${join(ROOT, 'examples/upstream-desk.yaml')}\n`,
      );
      expect(result.code).toBe(0);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('given the typo fixture, when the real launcher checks it, then it exits 1 and prints the issues', async () => {
    const result = await runLauncher(['contracts', 'check', 'libs/contracts/fixtures/typos.yaml'], ROOT);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      "libs/contracts/fixtures/typos.yaml:16:5 tools[0].corelation_window: unknown field 'corelation_window' — did you mean 'correlation_window'?\n",
    );
    expect(result.stderr).toBe('15 problems in 1 file\n');
  });

  it('given an unknown command, when the real launcher runs, then it exits 2', async () => {
    const result = await runLauncher(['frobnicate'], ROOT);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^oncegate: unknown command 'frobnicate'/);
  });

  it("given a command, when the real launcher runs it, then the built CLI loads that command's code and no other command's", async () => {
    const folder = await mkdtemp(join(tmpdir(), 'oncegate-launcher-'));
    try {
      // Node's module hooks see every module file the process loads.
      const probe = join(folder, 'probe.mjs');
      await writeFile(
        probe,
        "import { registerHooks } from 'node:module';\n" +
          'const loaded = [];\n' +
          'registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });\n' +
          "process.on('exit', () => process.stderr.write(`loaded ${JSON.stringify(loaded)}\\n`));\n",
      );
      const commandFiles = async (args: string[]): Promise<string[]> => {
        const result = await runLauncher(args, ROOT, { ...process.env, NODE_OPTIONS: `--import ${probe}` });
        expect(result.code, result.stderr).toBe(0);
        const line = result.stderr.split('\n').find((text) => text.startsWith('loaded '));
        const urls = JSON.parse(line!.slice('loaded '.length)) as string[];
        const built = urls.filter((url) => url.includes('/dist/apps/oncegate/')).map((url) => url.slice(url.lastIndexOf('/') + 1));
        expect(built).toContain('main.js');
        // A command module's chunk is named after its source file: <name>-commands-<hash>.js, contracts-check-<hash>.js.
        return built.filter((file) => /^[a-z-]+-(commands|check)-[A-Z0-9]+\.js$/.test(file)).map((file) => file.replace(/-[A-Z0-9]+\.js$/, ''));
      };
      expect(await commandFiles(['vault', '--help'])).toEqual(['vault-commands']);
      expect(await commandFiles(['contracts', 'check', 'examples/tools.yaml'])).toEqual(['contracts-check']);
      const all = await commandFiles(['--help']);
      expect(all).toEqual(expect.arrayContaining(['vault-commands', 'contracts-check', 'gateway-commands', 'analyst-commands', 'upstream-commands']));
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  describe('the heap flags of the serving commands', () => {
    /** Every Node image the launcher runs in (before and after it runs itself again) prints its pid and execArgv. */
    async function images(args: string[], nodeOptions = ''): Promise<{ pid: number; execArgv: string[] }[]> {
      const folder = await mkdtemp(join(tmpdir(), 'oncegate-launcher-'));
      try {
        const probe = join(folder, 'probe.cjs');
        await writeFile(probe, 'process.stderr.write(`image ${JSON.stringify({ pid: process.pid, execArgv: process.execArgv })}\\n`);\n');
        const result = await runLauncher(args, ROOT, { ...process.env, NODE_OPTIONS: `--require ${probe} ${nodeOptions}`.trim() });
        expect(result.code).toBe(0);
        return result.stderr
          .split('\n')
          .filter((line) => line.startsWith('image '))
          .map((line) => JSON.parse(line.slice('image '.length)) as { pid: number; execArgv: string[] });
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
    }

    it('given start, when launched, then it runs itself again in the same process with a bounded young generation and heap growth', async () => {
      const seen = await images(['start', '--help']);
      expect(seen).toHaveLength(2);
      expect(seen[1]!.pid).toBe(seen[0]!.pid);
      expect(seen[0]!.execArgv).toEqual([]);
      expect(seen[1]!.execArgv).toEqual(['--max-semi-space-size=16', '--heap-growing-percent=60']);
    });

    it('given start with the operator\'s own semi-space size in NODE_OPTIONS, when launched, then that one is kept and only the other flag added', async () => {
      const seen = await images(['start', '--help'], '--max-semi-space-size=32');
      expect(seen.map((image) => image.execArgv)).toEqual([[], ['--heap-growing-percent=60']]);
    });

    it('given serve, when launched, then each service process runs with the heap flags too', async () => {
      const seen = await images(['serve', '--help']);
      expect(seen.map((image) => image.execArgv)).toEqual([[], ['--max-semi-space-size=16', '--heap-growing-percent=60']]);
      expect(new Set(seen.map((image) => image.pid)).size).toBe(1);
    });

    it('given stdio, when launched, then its one process serves with the heap flags too', async () => {
      const seen = await images(['stdio', '--help']);
      expect(seen.map((image) => image.execArgv)).toEqual([[], ['--max-semi-space-size=16', '--heap-growing-percent=60']]);
      expect(new Set(seen.map((image) => image.pid)).size).toBe(1);
    });

    it('given an execve that fails, when start is launched, then it says so in a line and runs as it is', async () => {
      const folder = await mkdtemp(join(tmpdir(), 'oncegate-launcher-'));
      try {
        const refuse = join(folder, 'refuse.cjs');
        await writeFile(refuse, "process.execve = () => { throw new Error('execve refused here'); };\n");
        const result = await runLauncher(['start', '--help'], ROOT, { ...process.env, NODE_OPTIONS: `--require ${refuse}` });
        expect(result.code).toBe(0);
        expect(result.stderr).toBe(
          "oncegate: serving with V8's default heap sizes (could not start with --max-semi-space-size=16 --heap-growing-percent=60: execve refused here)\n",
        );
        expect(result.stdout).toMatch(/^Usage: oncegate start/);
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
    });

    it('given a command that ends when its work is done, when launched, then it runs once, with V8\'s defaults', async () => {
      const seen = await images(['contracts', 'check', 'examples/tools.yaml']);
      expect(seen.map((image) => image.execArgv)).toEqual([[]]);
    });
  });
});
