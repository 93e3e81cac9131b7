import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GatewayConfigError, loadGatewayConfig } from '@oncegate/host-config';
import { serveServices, type RunningService, type ServiceDefinition } from '@oncegate/service-host';
import type { ChannelDriver } from './channel-definition';
import { defineChannel, hostingOf } from './define-channel';

/** What each channel was handed when it opened, in order. */
const opened: Array<{ channel: string; options: Readonly<Record<string, unknown>> }> = [];

const idle: ChannelDriver = { send: async () => ({ kind: 'not_sent', reason: 'this channel sends nothing' }) };

/** A channel with options: a greeting it needs, retries with a default, TLS settings for every tool. */
const probeKit = defineChannel({
  name: 'probe',
  options: {
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['greeting'],
      properties: {
        greeting: { type: 'string' },
        retries: { type: 'integer', minimum: 0, default: 3 },
        tls: { type: 'object', additionalProperties: false, properties: { ca_file: { type: 'string' } } },
      },
    },
  },
  open(context) {
    opened.push({ channel: 'probe', options: context.options });
    return idle;
  },
});

/** A channel that declares no options. */
const plainKit = defineChannel({
  name: 'plain',
  open(context) {
    opened.push({ channel: 'plain', options: context.options });
    return idle;
  },
});

const TOOLS = `version: 1
tools:
  - name: probe_call
    description: A call of the probe channel.
    class: read_only
    channel: probe
    target: probe/nothing
    correlation_window: 10m
    input_schema: { type: object, additionalProperties: false }
    plugin: { anything: 1 }
`;

/**
 * A channel's options as a process hosting it reads them: from a real oncegate.yaml, checked against the schema the
 * channel publishes before its dispatcher opens, the channel's own service run as `oncegate serve` runs it.
 */
describe("a channel's options (channels.<name> in oncegate.yaml)", () => {
  let dir: string;
  let running: RunningService | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-channel-options-'));
    writeFileSync(join(dir, 'tools.yaml'), TOOLS);
    opened.length = 0;
  });
  afterEach(async () => {
    await running?.close();
    running = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  /** The configuration file's lines: the data folder and contracts, then `lines`; the file's path and its text. */
  const configFile = (lines: readonly string[]) => {
    const file = join(dir, 'oncegate.yaml');
    const text = [`data_dir: ${join(dir, 'data')}`, `contracts: ${join(dir, 'tools.yaml')}`, 'dev_token: true', ...lines, ''].join('\n');
    writeFileSync(file, text);
    return file;
  };

  const serve = async (service: ServiceDefinition, lines: readonly string[]) => {
    const file = configFile(lines);
    running = await serveServices([service], loadGatewayConfig({ file, cwd: dir, env: {} }), { env: {} });
    return running;
  };

  /** The lines of the configuration error a start failed with. */
  const refusal = async (service: ServiceDefinition, lines: readonly string[]): Promise<string[]> => {
    const error = await serve(service, lines).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(GatewayConfigError);
    return (error as GatewayConfigError).message.split('\n').slice(1);
  };

  it('given an entry for the channel, when its process starts, then the channel opens with its entry, the defaults of its schema filled in', async () => {
    await serve(hostingOf(probeKit).service, ['channels:', '  probe:', '    greeting: hello', '    tls: { ca_file: /etc/probe-ca.pem }']);

    expect(opened).toEqual([{ channel: 'probe', options: { greeting: 'hello', retries: 3, tls: { ca_file: '/etc/probe-ca.pem' } } }]);
  });

  it('given a misspelt field, a wrong type and a missing field, then the process refuses to start naming each at its line and column, the misspelling with the nearest field', async () => {
    const file = join(dir, 'oncegate.yaml');
    const lines = await refusal(hostingOf(probeKit).service, ['channels:', '  probe:', '    retrys: 5', '    tls: { ca_file: 7 }']);

    // A misspelling first, as in the rest of the file's check (it often explains the rest); a missing field at its mapping.
    expect(lines).toEqual([
      `${file}:6:5 channels.probe.retrys: unknown field 'retrys'; did you mean 'retries'?`,
      `${file}:6:5 channels.probe.greeting: missing required field 'greeting'`,
      `${file}:7:21 channels.probe.tls.ca_file: must be a string, got the number 7`,
    ]);
    expect(opened).toEqual([]);
  });

  it('given the mistake found where the dispatcher opens (a process hosting several channels, as oncegate start does), then it refuses to start the same way', async () => {
    const file = join(dir, 'oncegate.yaml');
    const lines = await refusal({ ...hostingOf(probeKit).service, check: undefined }, ['channels:', '  probe: { greeting: hello, retries: -1 }']);

    expect(lines).toEqual([`${file}:5:38 channels.probe.retries: must be at least 0, got -1`]);
    expect(opened).toEqual([]);
  });

  it('given an entry for a channel that declares no options, then its process refuses to start', async () => {
    const file = join(dir, 'oncegate.yaml');
    const lines = await refusal(hostingOf(plainKit).service, ['channels:', '  plain: { mode: fast }']);

    expect(lines).toEqual([`${file}:5:3 channels.plain: channel plain takes no options; remove the entry`]);
  });

  it('given an entry for a channel this process does not host, then it is left alone: another process may host it', async () => {
    await serve(hostingOf(plainKit).service, ['channels:', '  probe: { greeting: hello }', '  sql: { anything: [at, all] }']);
    await running!.close();
    running = undefined;
    await serve(hostingOf(probeKit).service, ['channels:', '  probe: { greeting: hello }', '  plain: { mode: fast }']);

    expect(opened).toEqual([
      { channel: 'plain', options: {} },
      { channel: 'probe', options: { greeting: 'hello', retries: 3 } },
    ]);
  });
});
