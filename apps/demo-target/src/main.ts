import { parseArgs } from 'node:util';
import { startDemoTarget } from './demo-target';

// Runs the demo target standalone: `node --import tsx apps/demo-target/src/main.ts [--port 8790] [--host 127.0.0.1]
// [--exit-with-stdin]`. With --exit-with-stdin it stops when its standard input ends: the gateway that started it keeps
// a pipe open to it, which its end closes however it ends (a kill -9 included), so no target outlives its gateway.
const { values } = parseArgs({
  options: { port: { type: 'string' }, host: { type: 'string' }, 'exit-with-stdin': { type: 'boolean' } },
  strict: true,
});
const port = values.port === undefined ? undefined : Number(values.port);
if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65_535)) {
  process.stderr.write(`--port must be a port number, got '${values.port}'\n`);
  process.exit(2);
}

const target = await startDemoTarget({ ...(port === undefined ? {} : { port }), ...(values.host === undefined ? {} : { host: values.host }) }).catch(
  (error: NodeJS.ErrnoException) => {
    // One line, no stack: whoever started the target says what to change.
    if (error.code !== 'EADDRINUSE' && error.code !== 'EACCES') throw error;
    const { address, port: taken } = error as NodeJS.ErrnoException & { address?: string; port?: number };
    process.stderr.write(`demo target: cannot listen on ${address}:${taken}: ${error.code === 'EADDRINUSE' ? 'the port is taken' : 'not allowed'}\n`);
    process.exit(1);
  },
);
process.stdout.write(`demo target listening on ${target.url}  (effects: ${target.url}/effects)\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void target.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
if (values['exit-with-stdin'] === true) {
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  process.stdin.resume();
}
