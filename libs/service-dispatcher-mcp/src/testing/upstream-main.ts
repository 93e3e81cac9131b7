// The test upstream as a process of its own (test support, docs/dispatchers.md, the MCP channel):
//   node --import tsx upstream-main.ts --stdio --dir <folder> [--era legacy]
//   node --import tsx upstream-main.ts --http --dir <folder> [--port <n>] [--token-env <NAME>] [--era legacy]
// Over HTTP it prints `listening on <url>` once it serves. The tests start it bundled into plain JavaScript
// (upstreamScript, in upstream-script.ts).
import { parseArgs } from 'node:util';
import { serveStdioUpstream, startHttpUpstream } from './upstream-server';

const { values } = parseArgs({
  options: {
    stdio: { type: 'boolean', default: false },
    http: { type: 'boolean', default: false },
    dir: { type: 'string' },
    port: { type: 'string', default: '0' },
    'token-env': { type: 'string' },
    era: { type: 'string', default: 'both' },
  },
});
const dir = values.dir;
const era = values.era === 'legacy' ? 'legacy' : 'both';
if (dir === undefined || values.stdio === values.http) {
  process.stderr.write('usage: upstream-main.ts (--stdio | --http [--port <n>] [--token-env <NAME>]) --dir <folder> [--era legacy]\n');
  process.exit(2);
}
if (values.stdio) await serveStdioUpstream({ dir, era });
else {
  const token = values['token-env'] === undefined ? undefined : process.env[values['token-env']];
  const upstream = await startHttpUpstream({ dir, era, port: Number(values.port), ...(token === undefined ? {} : { token }) });
  process.stdout.write(`listening on ${upstream.url}\n`);
  process.once('SIGTERM', () => void upstream.close().then(() => process.exit(0)));
}
