import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { pino, stdSerializers, type DestinationStream, type Level, type Logger as Pino } from 'pino';
import type PinoPretty from 'pino-pretty';

/**
 * The one logger of every Oncegate process: pino, writing JSON lines, or readable lines on a terminal. It is Nest's
 * `LoggerService`, installed as Nest's logger (`Logger.overrideLogger`), so every `new Logger('context')` of the code
 * base and Nest's own lines go through it.
 */

/** Nest's level names (the configuration's `log_level`) as pino's. */
const PINO_LEVEL: { readonly [L in LogLevel]: Level } = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

/** Nest's levels from the most severe: a list of levels (Nest's `setLogLevels`) means everything up to its least severe. */
const SEVERITY: readonly LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];

/**
 * Nest's own start-up lines (a module initialised, a microservice started, a route mapped), which it logs at `log`:
 * they say nothing an operator acts on, so they are debug lines here.
 */
const NEST_START_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'NestMicroservice', 'NestApplication', 'RoutesResolver', 'RouterExplorer']);

/**
 * Fields that hold a secret wherever a logged object carries them (an object given to a log call is a record's fields):
 * their values are replaced before the line is written. A message's text is the caller's to keep clean.
 */
export const REDACTED_PATHS: readonly string[] = [
  'authorization',
  'cookie',
  'password',
  'passphrase',
  'secret',
  'token',
  'credential',
  'privateKey',
  'apiKey',
  'storeUrl',
  'headers.authorization',
  'headers.cookie',
  'headers["proxy-authorization"]',
  'headers["x-api-key"]',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.passphrase',
  '*.secret',
  '*.token',
  '*.credential',
  '*.privateKey',
  '*.apiKey',
  '*.headers.authorization',
  '*.headers.cookie',
];

export const REDACTED = '[redacted]';

export interface LoggerOptions {
  /** The least severe level written; default `log`. */
  readonly level?: LogLevel;
  /** Which process writes (`oncegate` for `oncegate start`, else the service), a field of every line. */
  readonly service?: string;
  /** Where lines go; default stderr (stdout carries the summary, and the protocol under `oncegate stdio`). */
  readonly destination?: NodeJS.WritableStream & { readonly isTTY?: boolean };
  /** Readable lines instead of JSON; default: when the destination is a terminal. */
  readonly pretty?: boolean;
  /** Colours in readable lines; default: unless `NO_COLOR` is set (https://no-color.org). */
  readonly color?: boolean;
  readonly env?: NodeJS.ProcessEnv;
}

/** The least severe of `levels` (Nest's way of setting levels), or `silent` for none. */
function thresholdOf(levels: readonly LogLevel[]): Level | 'silent' {
  const least = SEVERITY.filter((level) => levels.includes(level)).at(-1);
  return least === undefined ? 'silent' : PINO_LEVEL[least];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** A stack as Nest passes it to `error` (`new Logger(ctx).error(message, error.stack)`). */
function isStack(value: unknown): value is string {
  return typeof value === 'string' && /\n\s+at /.test(value);
}

/** One log call's record: its fields and its message, from Nest's calling convention. */
function recordOf(message: unknown, params: readonly unknown[], withStack: boolean): { fields: Record<string, unknown>; msg: string | undefined } {
  const fields: Record<string, unknown> = {};
  const rest = [...params];
  // Nest's convention: a trailing string is the context (a `new Logger(context)` appends it to every call).
  if (rest.length > 0 && typeof rest.at(-1) === 'string' && !isStack(rest.at(-1))) fields['context'] = rest.pop();
  const texts: string[] = [];
  const take = (value: unknown): void => {
    if (value === undefined) return;
    if (value instanceof Error) fields['err'] = value;
    else if (isPlainObject(value)) Object.assign(fields, value);
    else if (withStack && isStack(value)) fields['stack'] = value;
    else texts.push(typeof value === 'string' ? value : String(value));
  };
  let msg: string | undefined;
  if (message instanceof Error) {
    fields['err'] = message;
    msg = message.message;
  } else if (isPlainObject(message)) Object.assign(fields, message);
  else if (message !== undefined) msg = typeof message === 'string' ? message : String(message);
  for (const param of rest) take(param);
  if (texts.length > 0) msg = [msg, ...texts].filter((text) => text !== undefined).join(' ');
  return { fields, msg };
}

export class OncegateLogger implements LoggerService {
  constructor(private readonly pino: Pino) {}

  log(message: unknown, ...params: unknown[]): void {
    const { fields, msg } = recordOf(message, params, false);
    const level = typeof fields['context'] === 'string' && NEST_START_CONTEXTS.has(fields['context']) ? 'debug' : 'info';
    this.write(level, fields, msg);
  }

  error(message: unknown, ...params: unknown[]): void {
    const { fields, msg } = recordOf(message, params, true);
    this.write('error', fields, msg);
  }

  warn(message: unknown, ...params: unknown[]): void {
    const { fields, msg } = recordOf(message, params, false);
    this.write('warn', fields, msg);
  }

  // A level that is off costs no record: debug lines are asked for on every call (authorization's verdicts).
  debug(message: unknown, ...params: unknown[]): void {
    if (!this.pino.isLevelEnabled('debug')) return;
    const { fields, msg } = recordOf(message, params, false);
    this.write('debug', fields, msg);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    if (!this.pino.isLevelEnabled('trace')) return;
    const { fields, msg } = recordOf(message, params, false);
    this.write('trace', fields, msg);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    const { fields, msg } = recordOf(message, params, true);
    this.write('fatal', fields, msg);
  }

  /** Nest's `setLogLevels` (`app.useLogger([...])`): everything up to the least severe level named. */
  setLogLevels(levels: LogLevel[]): void {
    this.pino.level = thresholdOf(levels);
  }

  isLevelEnabled(level: LogLevel): boolean {
    return this.pino.isLevelEnabled(PINO_LEVEL[level]);
  }

  private write(level: Level, fields: Record<string, unknown>, msg: string | undefined): void {
    if (!this.pino.isLevelEnabled(level)) return;
    if (msg === undefined) this.pino[level](fields);
    else this.pino[level](fields, msg);
  }
}

/** Whether a terminal's lines may be coloured: not when `NO_COLOR` is set to anything (https://no-color.org). */
export function colorAllowed(env: NodeJS.ProcessEnv): boolean {
  return (env['NO_COLOR'] ?? '') === '';
}

/** pino-pretty, loaded only for a terminal: a service whose lines go to a collector does not pay for it at start. */
function readableLines(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}

/**
 * The process's logger. On a terminal, lines are readable (`[12:00:01.234] WARN [vault]: …`, coloured unless
 * `NO_COLOR`); anywhere else (a file, a pipe, a log collector), one JSON object a line with `level`, `time`,
 * `pid`, `hostname`, `service`, `context` and `msg`.
 */
export function createLogger(options: LoggerOptions = {}): OncegateLogger {
  const env = options.env ?? process.env;
  const out = options.destination ?? process.stderr;
  const pretty = options.pretty ?? out.isTTY === true;
  const settings = {
    level: PINO_LEVEL[options.level ?? 'log'],
    base: { pid: process.pid, hostname: hostname(), service: options.service ?? 'oncegate' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Labels ("warn") rather than numbers: a line can be read and searched as it is.
    formatters: { level: (label: string) => ({ level: label }) },
    serializers: { err: stdSerializers.err },
    redact: { paths: [...REDACTED_PATHS], censor: REDACTED },
  };
  // Written synchronously: the lines of a process that stops are all out, in order with the summary on stdout.
  const destination: DestinationStream = pretty
    ? readableLines()({
        destination: out,
        sync: true,
        colorize: options.color ?? colorAllowed(env),
        translateTime: 'HH:MM:ss.l',
        ignore: 'pid,hostname,service,context',
        messageFormat: '{if context}[{context}] {end}{msg}',
        singleLine: true,
      })
    : out === process.stderr || out === process.stdout
      ? pino.destination({ fd: out === process.stderr ? 2 : 1, sync: true })
      : (out as DestinationStream);
  return new OncegateLogger(pino(settings, destination));
}
