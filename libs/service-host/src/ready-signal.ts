import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Option } from '@commander-js/extra-typings';
import { Logger } from '@nestjs/common';
import { UsageError } from '@oncegate/host-cli';

/**
 * How a script or a test learns that a process serves, without reading its summary: `--ready-file <path>` is written
 * (atomically: a reader sees no file or the whole record) once it serves, and removed when it stops; the log has
 * the same record as its `ready` line.
 */

/** `--ready-file <path>`, which `oncegate start`, `oncegate serve` and every service's own app take. */
export function readyFileOption() {
  return new Option(
    '--ready-file <path>',
    'once serving, write {"ready":true,"url":…,"pid":…,"readyMs":…} to <path> (atomically; removed at stop); the log\'s "ready" line carries the same',
  );
}

/** What the ready file and the ready line say. */
export interface ReadyRecord {
  readonly ready: true;
  readonly service: string;
  readonly pid: number;
  /** The MCP endpoint (a process with a front). */
  readonly url?: string;
  /** The operations listener, when configured. */
  readonly operations?: string;
  /** Milliseconds from the process's start to serving. */
  readonly readyMs: number;
}

/** Milliseconds since this process started (Node's time origin). */
export function sinceProcessStart(): number {
  return Math.round(performance.now());
}

/** "412 ms", "2.3 s". */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Checked before anything starts: a folder that does not exist is a mistake on the command line, not a failure once
 * the process serves. A ready file left by an earlier run would say "ready" before this one serves: it goes first.
 */
export function prepareReadyFile(path: string | undefined): void {
  if (path === undefined) return;
  const folder = dirname(resolve(path));
  if (!existsSync(folder)) throw new UsageError(`--ready-file ${path}: the folder ${folder} does not exist`);
  clearReadyFile(path);
}

/** At stop: the process no longer serves. */
export function clearReadyFile(path: string | undefined): void {
  if (path !== undefined) rmSync(path, { force: true });
}

/** Tells that the process serves: the `ready` log line, then the ready file when one was asked for. */
export function announceReady(record: Omit<ReadyRecord, 'ready' | 'pid'>, readyFile: string | undefined): ReadyRecord {
  const ready: ReadyRecord = { ready: true, pid: process.pid, ...record };
  // The log line's own fields already name the process and its pid.
  const { service: _service, pid: _pid, ...fields } = ready;
  const log = new Logger('ready');
  log.log(`ready in ${formatDuration(ready.readyMs)}`, fields);
  if (readyFile !== undefined) {
    // Written beside the target and renamed over it: a reader polling the path never reads half a record.
    const partial = `${readyFile}.${process.pid}.partial`;
    try {
      writeFileSync(partial, `${JSON.stringify(ready)}\n`);
      renameSync(partial, readyFile);
    } catch (error) {
      // The process serves all the same; whoever waits for the file is told why it will not come.
      log.error(`cannot write the ready file ${readyFile}: ${(error as Error).message}`);
    }
  }
  return ready;
}
