import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, textOf } from '../support/scenario';
import { startSshd, type SshdHandle } from '../support/sshd';

/** A remote command on a real sshd: the marker on the host decides what a lost connection means. */
describe('gateway end to end: remote commands over SSH, decided by the durable marker', () => {
  let sshd: SshdHandle | undefined;
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;
  let unavailable: string | undefined;

  const countFile = () => join(sshd!.workDir, 'migrations.log');
  const markers = () => join(sshd!.workDir, 'markers');

  beforeEach(async () => {
    try {
      sshd = await startSshd();
    } catch (error) {
      unavailable = (error as Error).message;
      return;
    }
    target = await startDemoTargetProcess();
    const started = sshd;
    const keyFile = join(started.workDir, 'client.key');
    writeFileSync(keyFile, sshd.clientPrivateKey, { mode: 0o600 });
    const tool = (name: string, hostKey: string, script: string) => `
  - name: ${name}
    description: Run a migration step on the host.
    class: remote_command
    channel: ssh
    target: test/db-migrations
    credential_ref: deploy-key
    input_schema:
      type: object
      properties:
        step: { type: string, pattern: "^[a-z0-9-]+$" }
      required: [step]
      additionalProperties: false
    ssh:
      host: 127.0.0.1
      port: ${started.port}
      user: ${started.user}
      host_key: ${hostKey}
      argv: [/bin/sh, ${script}, "{{args.step}}"]
    marker:
      directory: ${markers()}
      written_before_work: true
      started_wait: 15s
    correlation_window: 1h
    limits: { connect_timeout: 3s, response_timeout: 20s }
`;
    // The command is a script on the host; the argument arrives as its own argv element, never in a shell string.
    const script = join(sshd.workDir, 'migrate.sh');
    writeFileSync(script, `sleep 2\nprintf '%s\\n' "$1" >> ${countFile()}\necho "migrated $1"\n`);
    const contracts = join(sshd.workDir, 'tools.yaml');
    writeFileSync(
      contracts,
      `version: 1\ntools:${tool('run_migration', sshd.hostKey, script)}${tool('run_on_impostor', sshd.otherHostKey, script)}`,
    );
    folder = await gatewayFolder(target.url, { contracts }, [{ ref: 'deploy-key', kind: 'ssh_key', bind: [`127.0.0.1:${started.port}`], fromFile: keyFile }]);
    gateway = await startGatewayProcess(folder);
  });

  afterEach(async () => {
    await gateway?.stop();
    await target?.stop();
    await sshd?.stop();
    folder?.dispose();
  });

  it('given the SSH connection is killed mid-command while the command keeps running, when the agent retries, then it is not run again and the marker gives the outcome', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const first = client.callTool({ name: 'run_migration', arguments: { step: 'add-index' } });
    await eventually(() => (existsSync(markers()) && readFileSyncSafe(markers()).some((name) => name.endsWith('.started')) ? true : undefined), 10_000, 'the started marker');
    await sshd!.killConnections();
    const answered = await first;
    const id = executionOf(answered).id;
    expect(['outcome_unknown', 'completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(answered).state);

    await eventually(async () => ((await executionEvents(folder.dataDir, id)).includes('OutcomeObserved') ? true : undefined), 20_000, 'the marker outcome');
    const retry = await client.callTool({ name: 'run_migration', arguments: { step: 'add-index' } });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id, attached: true, attempts: 1 });
    expect(retry.isError).toBe(false);
    expect(readFileSync(countFile(), 'utf8')).toBe('add-index\n');
    const events = await executionEvents(folder.dataDir, id);
    expect(events).toEqual(expect.arrayContaining(['Dispatched', 'OutcomeUnknown', 'MarkerProbed', 'OutcomeObserved']));
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
  });

  it('given a remote command that completes, when called, then the exit status and output come back', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'run_migration', arguments: { step: 'create-table' } });
    await client.close();
    expect(result.isError).toBe(false);
    expect(executionOf(result).state).toMatch(/completed|delivered/);
    expect(textOf(result)).toContain('migrated create-table');
    expect(readFileSync(countFile(), 'utf8')).toBe('create-table\n');
  });

  it('given a host whose key does not match the pinned one, when called, then it is denied and nothing runs', async (context) => {
    if (unavailable) context.skip(unavailable);
    const { client } = await connectClient(gateway.url, gateway.devToken);
    const result = await client.callTool({ name: 'run_on_impostor', arguments: { step: 'anything' } });
    await client.close();
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/denied, nothing was run/);
    expect(textOf(result)).toMatch(/SHA256:/);
    expect(existsSync(countFile())).toBe(false);
  });
});

function readFileSyncSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
