import { Writable } from 'node:stream';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, REDACTED, type LoggerOptions } from './logger';

const CANARY = 'log-canary-5e0c19a7';

/** A logger writing into memory; `lines()` parses its JSON lines, `text()` is what a reader of the stream sees. */
function capture(options: Omit<LoggerOptions, 'destination'> = {}) {
  let written = '';
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      written += String(chunk);
      done();
    },
  });
  const logger = createLogger({ env: {}, ...options, destination });
  return {
    logger,
    text: () => written,
    lines: () =>
      written
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('the process logger', () => {
  afterEach(() => Logger.overrideLogger(new ConsoleLogger()));

  it("given it is Nest's logger, when code logs through new Logger(context), then each call is one JSON line with its level, context, service and message", () => {
    const out = capture({ service: 'dispatcher-http' });
    Logger.overrideLogger(out.logger);
    new Logger('vault').warn('no vault in this data folder');
    new Logger('callers').log('restored session s1', { executionId: 'ex_1' });
    expect(out.lines()).toEqual([
      expect.objectContaining({ level: 'warn', service: 'dispatcher-http', context: 'vault', msg: 'no vault in this data folder', pid: process.pid }),
      expect.objectContaining({ level: 'info', context: 'callers', msg: 'restored session s1', executionId: 'ex_1' }),
    ]);
    expect(out.lines()[0]!['time']).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("given the default level, when Nest logs its start-up lines, then they are written at debug only", () => {
    const quiet = capture();
    const verbose = capture({ level: 'debug' });
    for (const out of [quiet, verbose]) {
      out.logger.log('Starting Nest application...', 'NestFactory');
      out.logger.log('EventStoreModule dependencies initialized', 'InstanceLoader');
      out.logger.log('Nest microservice successfully started', 'NestMicroservice');
      out.logger.log('Mapped {/x, GET} route', 'RouterExplorer');
    }
    expect(quiet.text()).toBe('');
    expect(verbose.lines().map((line) => [line['level'], line['context']])).toEqual([
      ['debug', 'NestFactory'],
      ['debug', 'InstanceLoader'],
      ['debug', 'NestMicroservice'],
      ['debug', 'RouterExplorer'],
    ]);
  });

  it('given a level, when lines of every level are logged, then only those up to it are written; Nest can set the levels too', () => {
    const out = capture({ level: 'warn' });
    out.logger.verbose('v', 'c');
    out.logger.debug('d', 'c');
    out.logger.log('l', 'c');
    out.logger.warn('w', 'c');
    out.logger.error('e', undefined, 'c');
    out.logger.setLogLevels(['error', 'warn', 'log', 'debug', 'verbose']);
    out.logger.verbose('v2', 'c');
    out.logger.setLogLevels([]);
    out.logger.error('silenced', undefined, 'c');
    expect(out.lines().map((line) => `${line['level']} ${line['msg']}`)).toEqual(['warn w', 'error e', 'trace v2']);
  });

  it('given debug and trace off, when they are asked for, then nothing of the message is read; at debug it is written', () => {
    const out = capture({ level: 'log' });
    let read = 0;
    const message = new (class Message {
      toString(): string {
        return `read ${(read += 1)}`;
      }
    })();
    out.logger.debug(message, 'c');
    out.logger.verbose(message, 'c');
    expect(read).toBe(0);
    out.logger.setLogLevels(['error', 'warn', 'log', 'debug']);
    out.logger.debug(message, 'c');
    out.logger.verbose(message, 'c');
    expect(read).toBe(1);
    expect(out.lines().map((line) => `${line['level']} ${line['msg']}`)).toEqual(['debug read 1']);
  });

  it('given an error with its stack, when it is logged, then the stack is a field of the line and the context stays the context', () => {
    const out = capture();
    const error = new Error('the store went away');
    out.logger.error(error, 'sealer');
    Logger.overrideLogger(out.logger);
    new Logger('dispatcher-http').error('a handler failed', error.stack);
    const [fromInstance, fromError] = out.lines().reverse();
    expect(fromInstance).toMatchObject({ level: 'error', context: 'dispatcher-http', msg: 'a handler failed' });
    expect(fromInstance!['stack']).toContain('the store went away');
    expect(fromError).toMatchObject({ level: 'error', context: 'sealer', msg: 'the store went away', err: { type: 'Error', message: 'the store went away' } });
  });

  it('given fields that hold secrets, when they are logged, then their values are replaced and the secret is nowhere in the output', () => {
    const out = capture();
    out.logger.log('calling the target', { headers: { authorization: `Bearer ${CANARY}`, accept: 'application/json' }, token: CANARY }, 'dispatcher-http');
    out.logger.warn('store unreachable', { store: { password: CANARY, host: 'db' }, credential: CANARY }, 'store');
    expect(out.text()).not.toContain(CANARY);
    const [call, store] = out.lines();
    expect(call).toMatchObject({ headers: { authorization: REDACTED, accept: 'application/json' }, token: REDACTED });
    expect(store).toMatchObject({ store: { password: REDACTED, host: 'db' }, credential: REDACTED });
  });

  it('given readable lines, when NO_COLOR is set, then they carry no escape code; without it they are coloured', async () => {
    const plain = capture({ pretty: true, env: { NO_COLOR: '1' } });
    const coloured = capture({ pretty: true, color: true });
    for (const out of [plain, coloured]) out.logger.warn('tools need a credential', { token: CANARY }, 'vault');
    await new Promise((resolve) => setImmediate(resolve));
    expect(plain.text()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN: \[vault\] tools need a credential/);
    expect(plain.text()).not.toContain('\x1b');
    expect(plain.text()).toContain(`"token":"${REDACTED}"`);
    expect(plain.text() + coloured.text()).not.toContain(CANARY);
    expect(coloured.text()).toContain('\x1b[');
  });

  it('given a destination that is not a terminal, when nothing says otherwise, then lines are JSON', () => {
    const out = capture();
    out.logger.log('hello', 'c');
    expect(out.lines()).toHaveLength(1);
  });
});
