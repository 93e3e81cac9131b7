import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { gatewayFolder, type GatewayFolder } from '../support/gateway-process';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The services that are apps of their own (the gateway's is the oncegate command, apps/oncegate, whose `serve gateway` runs the front). */
const SERVICE_APPS = ['authorization', 'dispatcher-http', 'dispatcher-ssh', 'result-delivery', 'sealer', 'relay-kafka'] as const;

const main = (service: string) => join(ROOT, 'dist/apps', service, 'main.js');
const run = (service: string, args: readonly string[]) => spawnSync(process.execPath, [main(service), ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });

describe('each service as an app of its own (apps/<service>, built to dist/apps/<service>/main.js)', () => {
  const folders: GatewayFolder[] = [];
  afterAll(() => folders.forEach((folder) => folder.dispose()));

  it('given the apps folder, when read, then every service but the gateway has an app whose main imports only its own service library and the host', () => {
    const apps = readdirSync(join(ROOT, 'apps')).sort();
    expect(apps).toEqual(expect.arrayContaining([...SERVICE_APPS]));
    for (const service of SERVICE_APPS) {
      const source = readFileSync(join(ROOT, 'apps', service, 'src/main.ts'), 'utf8');
      const imports = new Set([...source.matchAll(/from '([^']+)'/g)].map((match) => match[1]));
      expect(imports, service).toEqual(new Set(['@oncegate/service-host', `@oncegate/service-${service}`]));
    }
  });

  it('given the built apps, when their bundles are read, then none carries the MCP front or another service', () => {
    const others = (service: string) => SERVICE_APPS.filter((other) => other !== service);
    const marks: Record<(typeof SERVICE_APPS)[number], RegExp> = {
      authorization: /\bAuthorizationController\b/,
      'dispatcher-http': /\bHttpChannelDriver\b/,
      'dispatcher-ssh': /\bSshChannelDriver\b/,
      'result-delivery': /\bResultDeliveryController\b/,
      sealer: /\bJournalSealer\b/,
      'relay-kafka': /\bEventRelay\b/,
    };
    for (const service of SERVICE_APPS) {
      const bundle = readFileSync(main(service), 'utf8');
      expect(bundle, service).toMatch(marks[service]);
      expect(bundle, service).not.toMatch(/\bMcpHttpFront\b/);
      for (const other of others(service)) expect(bundle, `${service} carries ${other}`).not.toMatch(marks[other]);
    }
  });

  it.each(SERVICE_APPS)('given %s, when asked for help, given a stray argument or a missing file, then it answers as the CLI would', (service) => {
    const help = run(service, ['--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`^Usage: ${service} \\[options\\]\n`));
    expect(help.stdout).toMatch(/\n {2}--config <file> {2,}the configuration file/);
    expect(help.stdout).toMatch(/\n {2}--ready-file <path> {2,}once serving, write/);

    const stray = run(service, ['extra']);
    expect(stray.status).toBe(2);
    expect(stray.stderr).toBe(`${service}: too many arguments. Expected 0 arguments but got 1.\nUsage: ${service} [options]\nRun '${service} --help' for its options.\n`);

    const unknownOption = run(service, ['--confg', 'x.yaml']);
    expect(unknownOption.status).toBe(2);
    expect(unknownOption.stderr).toMatch(new RegExp(`^${service}: unknown option '--confg' — did you mean '--config'\\?\n`));

    const missing = run(service, ['--config', '/nonexistent/oncegate.yaml']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('configuration file not found: /nonexistent/oncegate.yaml');
  });

  it('given a configuration with a mistake, when an app starts, then it names file, line and path and starts nothing', async () => {
    const folder = await gatewayFolder('http://127.0.0.1:9');
    folders.push(folder);
    const broken = join(folder.dir, 'broken.yaml');
    writeFileSync(broken, `${readFileSync(folder.configFile, 'utf8')}instance_lease: soon\n`);
    const started = run('authorization', ['--config', broken]);
    expect(started.status).toBe(1);
    expect(started.stderr).toMatch(new RegExp(`${broken.replaceAll('.', '\\.')}:\\d+:\\d+ instance_lease`));
  });

  it('given a data folder, when the authorization app runs and is sent SIGTERM, then it says it runs as an instance and stops cleanly', async () => {
    const folder = await gatewayFolder('http://127.0.0.1:9');
    folders.push(folder);
    const child = spawn(process.execPath, [main('authorization'), '--config', folder.configFile], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stderr.on('data', (chunk) => (output += String(chunk)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const lines = createInterface({ input: child.stdout });
    await new Promise<void>((resolve, reject) => {
      lines.on('line', (line) => {
        output += `${line}\n`;
        if (line === '') resolve();
      });
      child.once('exit', () => reject(new Error(`exited before it ran:\n${output}`)));
    });
    expect(output).toMatch(/Oncegate authorization is running \(instance \d+-[0-9a-f]{8}\)/);
    expect(output).toContain(`store:        sqlite ${join(folder.dataDir, 'events.db')}`);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('SIGTERM: stopping');
  });
});
