import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The compiled target (the tests' global set-up builds every app first): no TypeScript loader to start each time. */
const MAIN = fileURLToPath(new URL('../../dist/apps/demo-target/main.js', import.meta.url));

export interface EffectLog {
  readonly total: number;
  readonly requestsTotal: number;
  readonly byEndpoint: Record<string, number>;
  readonly requests: ReadonlyArray<{
    readonly method: string;
    readonly path: string;
    readonly endpoint: string | null;
    readonly idempotencyKey: string | null;
    /** SHA-256 (hex) of the Authorization header that arrived, `null` for none. */
    readonly authorizationSha256: string | null;
    readonly traceparent?: string;
    readonly effect: boolean;
    readonly status: number | null;
  }>;
}

/** The bundled demo target as its own process, driven only through its HTTP control surface. */
export interface DemoTargetProcess {
  readonly url: string;
  /** Its process id: for the benchmarks that read its CPU time or pin it to cores. */
  readonly pid: number;
  effects(): Promise<EffectLog>;
  control(action: 'hold' | 'hang' | 'reset' | 'release' | 'behave' | 'reset-state', body?: object): Promise<void>;
  stop(): Promise<void>;
}

export async function startDemoTargetProcess(): Promise<DemoTargetProcess> {
  // Its stderr through this process, not inherited: a target left running after a failed test must not hold the
  // test run's own output open.
  const child = spawn(process.execPath, [MAIN, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => {
      const match = /listening on (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]!);
      else reject(new Error(`demo target: ${line}`));
    });
    child.once('exit', (code) => reject(new Error(`demo target exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    async effects() {
      return (await (await fetch(`${url}/effects`)).json()) as EffectLog;
    },
    async control(action, body = {}) {
      const response = await fetch(`${url}/_control/${action}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`control ${action}: ${response.status} ${await response.text()}`);
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
