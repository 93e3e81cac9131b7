import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, gatewayFolder, type GatewayFolder } from '../support/gateway-process';

const LAUNCHER = fileURLToPath(new URL('../../bin/oncegate.mjs', import.meta.url));

/** `oncegate serve <service>` until its summary has ended (it runs). */
async function serving(service: string, folder: GatewayFolder): Promise<ChildProcess> {
  const child = spawn(process.execPath, [LAUNCHER, 'serve', service, '--config', folder.configFile], { cwd: folder.dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`;
      if (line === '') resolve();
    });
    child.once('exit', (code) => reject(new Error(`oncegate serve ${service} exited with ${code} before it ran:\n${output}`)));
  });
  return child;
}

/** `oncegate serve <service>` that is expected to stop by itself: its exit code and what it wrote on stderr. */
function refusedStart(service: string, folder: GatewayFolder, env: NodeJS.ProcessEnv = {}): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [LAUNCHER, 'serve', service, '--config', folder.configFile], {
    cwd: folder.dir,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: run.status, stderr: run.stderr };
}

describe('two processes on one machine that want the same port', () => {
  const folders: GatewayFolder[] = [];
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    for (const folder of folders.splice(0)) folder.dispose();
  });

  it('given oncegate serve authorization on an operations port, when oncegate serve dispatcher-http starts with the same configuration, then it stops naming operations.port and ONCEGATE_OPS_PORT and the process that holds the port', async () => {
    const folder = await gatewayFolder('http://127.0.0.1:9');
    folders.push(folder);
    const port = await freePort();
    appendFileSync(folder.configFile, `operations: { host: 127.0.0.1, port: ${port} }\n`);
    const first = await serving('authorization', folder);
    children.push(first);

    const second = refusedStart('dispatcher-http', folder);

    expect(second.status).toBe(1);
    expect(second.stderr).toContain(
      `cannot listen on 127.0.0.1:${port} for the operations endpoint: the port is taken by process ${first.pid} (oncegate serve authorization) (EADDRINUSE); ` +
        'set operations.port or ONCEGATE_OPS_PORT to a port of its own for each process on this machine; nothing was started\n',
    );
    expect(second.stderr).not.toContain('listen.port');
    expect(second.stderr).not.toContain('ONCEGATE_PORT');
  });

  it('given another program on the MCP port, when oncegate serve gateway starts, then it stops naming listen.port and ONCEGATE_PORT and that program', async () => {
    const folder = await gatewayFolder('http://127.0.0.1:9');
    folders.push(folder);
    // A program that is no Oncegate: named by its program name alone, never by its arguments.
    const holder = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${folder.port}, '127.0.0.1', () => console.log('listening'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(holder);
    await new Promise<void>((resolve) => createInterface({ input: holder.stdout! }).once('line', () => resolve()));

    const refused = refusedStart('gateway', folder);

    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      `cannot listen on 127.0.0.1:${folder.port} for the MCP endpoint: the port is taken by process ${holder.pid} (node) (EADDRINUSE); ` +
        'set listen.port or ONCEGATE_PORT to a port of its own for each process on this machine; nothing was started\n',
    );
    expect(refused.stderr).not.toContain('operations.port');
  });
});
