import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { vaultStream } from '@oncegate/domain';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { DEFAULT_KDF, DEVELOPMENT_KDF, VaultFile } from '@oncegate/vault';
import { runCliHere } from '../testing/cli-in-process';

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const LAUNCHER = join(ROOT, 'bin/oncegate.mjs');
const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the CLI tests' };
/** Values that must never appear anywhere but in the request they are sent with. */
const FROM_STDIN = 'stdin-canary-0b7e4a91';
const FROM_ENV = 'env-canary-5c2f8d13';
const FROM_FILE = 'file-canary-9a6e1f40';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

// The two tests that follow an operator through the commands run the CLI as a process, up to a dozen times each, one
// after another: longer than most tests. The refusals run the CLI's entry in this process (`here`).
describe('oncegate vault (real processes, a temporary data folder)', { timeout: 90_000 }, () => {
  let dir: string;
  let configFile: string;
  const outputs: string[] = [];

  /** `oncegate <args> --config <file>` with `env` added and `input` on standard input. */
  function oncegate(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<Run> {
    const child = spawn(process.execPath, [LAUNCHER, ...args, '--config', configFile], {
      cwd: dir,
      env: { ...process.env, ONCEGATE_MASTER_KEY: undefined, ONCEGATE_MASTER_KEY_FILE: undefined, ...options.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    child.stdin.end(options.input ?? '');
    return new Promise((resolve) =>
      child.once('close', (code) => {
        outputs.push(stdout, stderr);
        resolve({ code, stdout, stderr });
      }),
    );
  }

  /**
   * The same command run in this process through the CLI's entry, with the same environment, input and output
   * (runCliHere): for the refusals, whose subject is what the command checks and says, not the process around it.
   */
  async function here(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<Run> {
    const run = await runCliHere([...args, '--config', configFile], {
      env: { ONCEGATE_MASTER_KEY: undefined, ONCEGATE_MASTER_KEY_FILE: undefined, ...options.env },
      input: options.input ?? '',
    });
    outputs.push(run.stdout, run.stderr);
    return run;
  }

  async function vaultEvents(): Promise<{ type: string; data: Record<string, unknown> }[]> {
    const store = openSqliteEventStore({ file: join(dir, 'data', 'events.db') });
    try {
      return (await store.readStream(vaultStream())).map((event) => ({ type: event.type, data: event.data as Record<string, unknown> }));
    } finally {
      await store.close();
    }
  }

  /** The key derivation the vault's data key is wrapped with. */
  function vaultKdf(): unknown {
    const file = VaultFile.open(join(dir, 'data'));
    try {
      return file.keyRecord()?.kdf;
    } finally {
      file.close();
    }
  }

  function filesUnder(path: string): string[] {
    return readdirSync(path).flatMap((name) => {
      const full = join(path, name);
      return statSync(full).isDirectory() ? filesUnder(full) : [full];
    });
  }

  function newFolder(): void {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-vault-cli-'));
    configFile = join(dir, 'oncegate.yaml');
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\ncontracts: ${join(ROOT, 'examples/tools.yaml')}\n`);
    outputs.length = 0;
  }

  /** A data folder with an initialised vault (under MASTER), made once and copied where a test needs one. */
  let initialised: string;
  beforeAll(async () => {
    newFolder();
    expect((await here(['vault', 'init'], { env: MASTER })).code).toBe(0);
    initialised = dir;
  });
  afterAll(() => rmSync(initialised, { recursive: true, force: true }));
  const withInitialisedVault = () => cpSync(join(initialised, 'data'), join(dir, 'data'), { recursive: true });

  beforeEach(newFolder);
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('given a new data folder, when an operator inits, sets from stdin, env and file, locks, unlocks and removes, then each step is journalled and status shows it', async () => {
    const init = await oncegate(['vault', 'init'], { env: MASTER });
    expect(init).toMatchObject({ code: 0, stdout: expect.stringContaining('initialised the vault') });

    const stdin = await oncegate(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', '127.0.0.1:8790/config'], { env: MASTER, input: `${FROM_STDIN}\n` });
    expect(stdin).toMatchObject({ code: 0, stdout: "stored 'demo-writer' version 1: bearer, bound to 127.0.0.1:8790/config, approval none\n" });
    const env = await oncegate(
      ['vault', 'set', 'billing', '--kind', 'basic', '--username', 'bob', '--bind', 'billing.example.com', '--bind', 'Billing.example.com:8443/v2', '--approval', 'per_use', '--from-env', 'BILLING_PASSWORD'],
      { env: { ...MASTER, BILLING_PASSWORD: FROM_ENV } },
    );
    expect(env.code).toBe(0);
    const valueFile = join(dir, 'api-key.txt');
    writeFileSync(valueFile, `${FROM_FILE}\n`);
    const file = await oncegate(['vault', 'set', 'search-api', '--kind', 'header', '--header', 'X-Api-Key', '--bind', 'search.example.com', '--from-file', valueFile, '--by', 'operator:alice'], { env: MASTER });
    expect(file.code).toBe(0);

    const json = await oncegate(['vault', 'status', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      initialized: true,
      locked: false,
      by: 'operator:cli',
      credentials: [
        { ref: 'billing', kind: 'basic', bindings: ['billing.example.com', 'billing.example.com:8443/v2'], approval: 'per_use', version: 1 },
        { ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790/config'], approval: 'none', version: 1 },
        { ref: 'search-api', kind: 'header', header: 'X-Api-Key', bindings: ['search.example.com'], approval: 'none', version: 1, by: 'operator:alice' },
      ],
    });

    expect((await oncegate(['vault', 'lock', '--reason', 'incident 42', '--by', 'operator:bob'])).code).toBe(0);
    const locked = await oncegate(['vault', 'status']);
    expect(locked.stdout).toMatch(/: locked since \S+ by operator:bob \(incident 42\)/);
    expect((await oncegate(['vault', 'unlock'], { env: MASTER })).stdout).toBe('the vault is unlocked (by operator:cli)\n');
    expect((await oncegate(['vault', 'rm', 'billing'])).stdout).toBe("removed 'billing' (version 1)\n");
    const status = await oncegate(['vault', 'status']);
    expect(status.stdout).toMatch(/: unlocked since/);
    expect(status.stdout).toContain('demo-writer\tbearer\tbound to 127.0.0.1:8790/config\tapproval none\tversion 1');
    expect(status.stdout).not.toContain('billing');

    expect((await vaultEvents()).map((event) => event.type)).toEqual([
      'VaultInitialized',
      'CredentialStored',
      'CredentialStored',
      'CredentialStored',
      'VaultLocked',
      'VaultUnlocked',
      'CredentialRemoved',
    ]);
    expect(statSync(join(dir, 'data', 'vault.db')).mode & 0o777).toBe(0o600);
    expect(vaultKdf()).toEqual(DEFAULT_KDF);
  });

  it('given values set through the CLI, when every byte of the data folder and every output is read, then no value appears', async () => {
    withInitialisedVault();
    await oncegate(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', '127.0.0.1:8790'], { env: MASTER, input: FROM_STDIN });
    await oncegate(['vault', 'set', 'billing', '--kind', 'basic', '--username', 'bob', '--bind', 'billing.example.com', '--from-env', 'PW'], { env: { ...MASTER, PW: FROM_ENV } });
    const valueFile = join(dir, 'value.txt');
    writeFileSync(valueFile, FROM_FILE);
    await oncegate(['vault', 'set', 'search-api', '--kind', 'header', '--header', 'X-Api-Key', '--bind', 'search.example.com', '--from-file', valueFile], { env: MASTER });
    rmSync(valueFile);
    // Refused attempts print nothing of the value either.
    await oncegate(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', 'https://x'], { env: MASTER, input: FROM_STDIN });
    await oncegate(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', 'x'], { env: { ONCEGATE_MASTER_KEY: 'wrong' }, input: FROM_STDIN });
    await oncegate(['vault', 'status']);
    const json = await oncegate(['vault', 'status', '--json']);
    expect(JSON.parse(json.stdout).credentials).toHaveLength(3);

    const files = filesUnder(join(dir, 'data'));
    expect(files).toEqual(expect.arrayContaining([join(dir, 'data', 'vault.db'), join(dir, 'data', 'events.db')]));
    for (const canary of [FROM_STDIN, FROM_ENV, FROM_FILE]) {
      for (const path of files) expect(readFileSync(path).includes(Buffer.from(canary)), `${canary} in ${path}`).toBe(false);
      for (const output of outputs) expect(output).not.toContain(canary);
    }
    expect(JSON.stringify(await vaultEvents())).not.toMatch(/canary/);
  });

  it.each([
    [['--kind', 'bearer'], /bind the credential to at least one host/],
    [['--kind', 'token', '--bind', 'api.example.com'], /option '--kind <kind>' argument 'token' is invalid\. Allowed choices are bearer, basic, header, ssh_key, password\./],
    [['--bind', 'api.example.com'], /required option '--kind <kind>' not specified/],
    [['--kind', 'bearer', '--bind', 'https://api.example.com'], /is not a binding: leave out the scheme/],
    [['--kind', 'bearer', '--bind', 'api.example.com:99999'], /port 99999 is out of range/],
    [['--kind', 'ssh_key', '--bind', 'host.example.com/srv'], /without a path/],
    [['--kind', 'basic', '--bind', 'api.example.com'], /needs --username/],
    [['--kind', 'bearer', '--bind', 'api.example.com', '--header', 'X-Key'], /--header does not apply to a bearer credential/],
    [['--kind', 'bearer', '--bind', 'api.example.com', '--approval', 'sometimes'], /argument 'sometimes' is invalid\. Allowed choices are none, per_use\./],
    [['--kind', 'bearer', '--bind', 'api.example.com', '--value', FROM_STDIN], /never taken from the command line/],
    [['--kind', 'bearer', '--bind', 'api.example.com', `--value=${FROM_STDIN}`], /never taken from the command line/],
    [['--kind', 'bearer', '--bind', 'api.example.com', `--valeu=${FROM_STDIN}`], /unknown option '--valeu=…'/],
    [[FROM_STDIN, '--kind', 'bearer', '--bind', 'api.example.com'], /too many arguments for 'set'\. Expected 1 argument but got 2\./],
    [['--kind', 'bearer', '--bind', 'api.example.com', '--from-env', FROM_STDIN], /--from-env takes the name of an environment variable/],
    [['--kind', 'bearer', '--bind', 'api.example.com', '--from-env', 'A', '--from-file', 'b'], /option '--from-env <VARIABLE>' cannot be used with option '--from-file <path>'/],
  ])('given vault set %j, when run, then it is refused with a clear message and nothing is appended', async (args, message) => {
    withInitialisedVault();
    const before = await vaultEvents();
    const result = await here(['vault', 'set', 'demo-writer', ...args], { env: MASTER, input: FROM_STDIN });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toContain(FROM_STDIN);
    expect(await vaultEvents()).toEqual(before);
  });

  it.each<[string, { input: string; args?: string[]; env?: NodeJS.ProcessEnv }, RegExp]>([
    ['an empty value', { input: '\n' }, /the value is empty; nothing was stored/],
    ['an unset variable', { input: '', args: ['--from-env', 'NOT_SET_ANYWHERE'] }, /the environment variable NOT_SET_ANYWHERE is not set/],
    ['a missing file', { input: '', args: ['--from-file', '/nonexistent/value'] }, /cannot read the file --from-file names: ENOENT/],
    ['a wrong master key', { input: FROM_STDIN, env: { ONCEGATE_MASTER_KEY: 'wrong' } }, /the master key does not open this vault; nothing was changed/],
  ])('given %s, when vault set runs, then it exits 1 saying why and nothing is appended', async (_what, options, message) => {
    withInitialisedVault();
    const before = await vaultEvents();
    const result = await here(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', 'api.example.com', ...(options.args ?? [])], {
      env: options.env ?? MASTER,
      input: options.input,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(await vaultEvents()).toEqual(before);
  });

  it('given a vault, when init runs again or unlock runs with another master key, then each is refused and nothing is appended', async () => {
    withInitialisedVault();
    await here(['vault', 'lock']);
    const before = await vaultEvents();
    const again = await here(['vault', 'init', '--dev'], { env: MASTER });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/a vault already exists/);
    const unlock = await here(['vault', 'unlock'], { env: { ONCEGATE_MASTER_KEY: 'wrong' } });
    expect(unlock.code).toBe(1);
    expect(unlock.stderr).toBe('the master key does not open this vault; nothing was changed\n');
    const noKey = await here(['vault', 'unlock']);
    expect(noKey.stderr).toMatch(/no master key in this process: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE/);
    expect(await vaultEvents()).toEqual(before);
  });

  it('given no master key, when vault init --dev runs, then it uses the development master key file and later commands find it', async () => {
    const init = await here(['vault', 'init', '--dev']);
    expect(init.code).toBe(0);
    expect(init.stderr).toMatch(/development master key .*master\.dev\.key; do not use it in production/);
    expect(existsSync(join(dir, 'data', 'keys', 'master.dev.key'))).toBe(true);
    // 256 random bits beside the vault: not stretched as an operator's master key is.
    expect(vaultKdf()).toEqual(DEVELOPMENT_KDF);
    const set = await here(['vault', 'set', 'demo-writer', '--kind', 'bearer', '--bind', '127.0.0.1:8790'], { input: FROM_STDIN });
    expect(set.code).toBe(0);
    expect((await here(['vault', 'rm', 'nobody'])).stderr).toBe("there is no credential 'nobody' in the vault; nothing was changed\n");
  });

  it('given a configuration that still has a credentials section, when any command loads it, then it points to the vault with file and line', async () => {
    writeFileSync(configFile, `data_dir: ${join(dir, 'data')}\ncredentials:\n  demo-writer: { env: TOKEN, scheme: Bearer }\n`);
    const result = await here(['vault', 'status']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${configFile}:2:1 credentials: credentials live in the vault now: oncegate vault set <ref>`);
  });
});
